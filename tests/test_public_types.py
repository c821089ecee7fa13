"""The public functions' annotations are complete and resolve at run time.

mypy (``.ci/run``, ``disallow_untyped_defs`` in pyproject.toml) checks that every function
is annotated; this checks what mypy cannot: that the names those annotations use exist when
the program runs, so ``typing.get_type_hints`` -- what IDEs, ``help()`` readers, pydantic-
style validators and documentation tools call -- resolves every public signature (an alias
kept under ``if TYPE_CHECKING:`` is a NameError there), and that the Ascend C and TIK
families annotate their arguments with the one set of names in ``ascend_ref.argtypes``.
"""

from __future__ import annotations

import inspect
import typing

import pytest

import ascend_ref as ar
from ascend_ref import argtypes, explain, golden, grad, registry, verify
from ascend_ref import fuzz

MODULES = [ar, ar.ascendc, ar.tik, grad, verify, fuzz, golden, explain]


def _public_functions():
    out = []
    for m in MODULES:
        for name in getattr(m, "__all__", [n for n in dir(m) if not n.startswith("_")]):
            f = getattr(m, name, None)
            if inspect.isfunction(f):
                out.append((f"{m.__name__}.{name}", f))
    return out


PUBLIC = _public_functions()


def test_the_public_surface_is_found():
    names = {n for n, _ in PUBLIC}
    # one of each kind: the facade, both instruction families, the tools
    for want in ("ascend_ref.run_batch", "ascend_ref.ascendc.whole_reduce_min",
                 "ascend_ref.tik.vec_reduce_add", "ascend_ref.verify.verify",
                 "ascend_ref.explain.make_case"):
        assert want in names
    assert len(PUBLIC) >= 60


@pytest.mark.parametrize("name,fn", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_every_public_function_is_annotated_and_its_hints_resolve(name, fn):
    hints = typing.get_type_hints(fn)          # a NameError if a name is type-checking only
    sig = inspect.signature(fn)
    missing = [p for p in sig.parameters.values()
               if p.name not in hints and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert not missing, f"{name}: parameters without an annotation: {missing}"
    assert "return" in hints, f"{name}: no return annotation"


def test_instruction_functions_share_the_argument_types():
    """Every registered instruction's public function (both families) takes ``ub`` as
    :data:`argtypes.UBLike` and ``chip`` as :data:`argtypes.ChipLike`, and its ``mask`` (where
    it has one of the general form) as :data:`argtypes.MaskLike`."""
    seen = 0
    for ins in registry.all():
        fn = ins.public(ar)
        hints = typing.get_type_hints(fn)
        assert hints["ub"] == argtypes.UBLike, ins.name
        assert hints["chip"] == argtypes.ChipLike, ins.name
        assert hints["return"] == argtypes.CallResult, ins.name
        if "mask" in hints and ins.name not in ("repeat_reduce_sum",):   # RRS: no bit mode
            assert hints["mask"] in (argtypes.MaskLike, typing.Optional[argtypes.MaskLike]), \
                (ins.name, hints["mask"])
        seen += 1
    assert seen == len(registry.all()) > 20
