"""A complete call as data, and its outcome on the JAX path or the scalar oracle.

:class:`Case` is the currency shared by fuzz campaigns, dump verification, golden files and
the batch engine: API, product, dtype, option, mask, parameters, tensors and the UB bytes
before the call. :class:`Outcome` is an error code, or the UB after the call with its
``written`` / ``undefined`` byte masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from .constraints import Code, ConstraintError

if TYPE_CHECKING:
    from types import ModuleType

    from .chips import ChipProfile
    from .engine import Prepared
    from .registry import Instruction


class _JaxApi:
    """The JAX implementation as :meth:`Case.call`'s ``impl``: its ``ascendc`` and ``tik``
    are :mod:`ascend_ref.ascendc` and :mod:`ascend_ref.tik` (imported on first use), so the
    library's own modules need not import the package facade ``ascend_ref``."""

    @property
    def ascendc(self) -> Any:
        from . import ascendc

        return ascendc

    @property
    def tik(self) -> Any:
        from . import tik

        return tik


#: ``case.call(JAX)`` runs the case on the JAX path (like ``case.call(ascend_ref)``)
JAX = _JaxApi()


def _same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` hold the same values: arrays bit for bit (dtype and shape included),
    dicts, lists and tuples item by item, anything else by ``==`` (a dataclass's generated
    ``__eq__`` compared the fields as tuples: numpy's 'truth value of an array is ambiguous'
    for two equal cases)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) or hasattr(a, "__jax_array__") \
            or type(a).__module__.startswith("jax"):
        try:
            x, y = np.asarray(a), np.asarray(b)
        except (TypeError, ValueError):
            return False
        return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _fields_equal(x: Any, y: Any) -> bool:
    import dataclasses

    return all(_same(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x))


@dataclass(eq=False)
class Case:
    """One call. ``tensors`` maps operand → ``(addr, size)``; ``dtype`` is the source's
    (every operand's but a dst the products pair with another type:
    :meth:`ascend_ref.registry.Instruction.tensor_dtype`)."""

    api: str
    chip: Union[str, ChipProfile]       # a product id, or a profile (the audit's variants)
    dtype: str
    option: Any
    mask: Any
    params: dict
    tensors: dict
    ub: np.ndarray
    saturate: Optional[bool] = None
    tags: dict = field(default_factory=dict)

    def call(self, impl: Union[ModuleType, _JaxApi], **extra: Any) -> Any:
        """Run the case on ``impl``: ``ascend_ref`` (JAX) or ``ascend_ref.oracle``; ``extra``
        keywords (``return_info=True``) go to the API function."""
        from .ub import Tensor

        ins = self.instruction
        args, kw = ins.call_args(self, lambda k: Tensor(self.tensors[k][0],
                                                         ins.tensor_dtype(k, self.dtype),
                                                         self.tensors[k][1]))
        return ins.public(impl)(_own(self.ub), *args, **{**kw, "chip": self.chip, **extra})

    @property
    def instruction(self) -> Instruction:
        """The registered instruction of ``api`` (:mod:`ascend_ref.registry`)."""
        from . import registry

        return registry.lookup(self.api, api="Case")

    def prepare(self, *, info: bool = True, path: Optional[str] = None) -> Prepared:
        """The checked call for the engine, not run (the direct path; raises
        :class:`ConstraintError` as the call would)."""
        return self.instruction.prepare_case(self, info=info, path=path)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Case):
            return NotImplemented
        return _fields_equal(self, other)

    __hash__ = None  # type: ignore[assignment]     # mutable fields: not hashable (as before)

    def __repr__(self) -> str:
        """Every field but the UB's bytes, which print as their count: a 256 KiB UB (or a
        few hundred bytes of zeros) says nothing in a terminal or a notebook; ``case.ub``
        shows them."""
        import dataclasses

        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "ub":
                ub = np.asarray(v)
                parts.append(f"ub=<{ub.dtype}[{', '.join(map(str, ub.shape))}]>")
            elif f.name != "tags" or v:
                parts.append(f"{f.name}={v!r}")
        return f"Case({', '.join(parts)})"

    def describe(self) -> str:
        p = ", ".join(f"{k}={v}" for k, v in self.params.items())
        t = ", ".join(f"{k}@{a}[{s}]" for k, (a, s) in self.tensors.items())
        opt = f" {self.option}" if self.option not in (None, "") else ""
        sat = "" if self.saturate is None else f" saturate={self.saturate}"
        mask = [hex(w) for w in self.mask] if isinstance(self.mask, (list, tuple)) else self.mask
        return (f"{self.api}<{self.dtype}>{opt} on {self.chip}: mask={mask}, {p}; {t}; "
                f"ub {self.ub.size} B{sat}")


@dataclass(eq=False)
class Outcome:
    """What one call did: ``code`` -- the :class:`~ascend_ref.constraints.Code` of the
    constraint it broke, or None when it ran; then ``ub`` -- the UB after it (``uint8``),
    ``written`` / ``undefined`` -- ``bool`` byte masks of the UB: the bytes it wrote, the
    bytes whose value the documentation leaves open (:func:`ascend_ref.fuzz.diff` compares
    two outcomes). The arrays of :func:`run_jax` are read-only (views of the JAX results),
    and so are the masks of :func:`ascend_ref.batch.run_cases` (rows of tables it hands out
    again once every outcome of a call is dropped): ``.copy()`` one to change it.

    ``spr``: the reduce special registers after the call, when asked for (``run_jax(...,
    spr=True)`` / ``run_cases(..., spr=True)``: an :class:`ascend_ref.spr.ReduceSpr`;
    ``run_oracle(..., spr=True)``: an ``ascend_ref.oracle.spr.OracleSpr``), for a case whose
    instruction sets one; None otherwise."""

    code: Optional[Code]
    ub: Optional[np.ndarray] = None
    written: Optional[np.ndarray] = None
    undefined: Optional[np.ndarray] = None
    spr: Any = None

    def __repr__(self) -> str:
        if self.code is None:
            return "Outcome(ok)"
        name = getattr(self.code, "name", None)
        if name is None:                      # Outcome(14) / Outcome("UB_BOUNDS") by hand
            try:
                name = Code(self.code).name if not isinstance(self.code, str) \
                    else Code[self.code].name
            except (ValueError, KeyError, TypeError):
                name = repr(self.code)
        return f"Outcome({name})"

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Outcome):
            return NotImplemented
        return _fields_equal(self, other)

    __hash__ = None  # type: ignore[assignment]


def as_cases(cases: Any, api: str) -> list:
    """``cases`` as a list of :class:`Case`; BAD_ARGUMENT naming the first thing that is not
    one (or ``cases`` itself when it is not iterable)."""
    if isinstance(cases, (Case, str, bytes)) or not hasattr(cases, "__iter__"):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="cases",
                              value=type(cases).__name__, allowed="an iterable of Case")
    out = list(cases)
    if set(map(type, out)) <= {Case}:        # the common case, at C speed
        return out
    for k, c in enumerate(out):
        if not isinstance(c, Case):
            raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=f"cases[{k}]",
                                  value=type(c).__name__, allowed="a Case")
    return out


def _one_case(case: Any, api: str) -> None:
    if not isinstance(case, Case):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="case",
                              value=type(case).__name__, allowed="a Case")


def _own(ub: Any) -> Any:
    """A copy of a case's UB for a call (anything that is no array as it is: the function's
    own check names it, BAD_ARGUMENT ``ub``, in its order of checks)."""
    return ub.copy() if hasattr(ub, "shape") and hasattr(ub, "copy") else ub


def run_jax(case: Case, chip: Optional[str] = None, spr: bool = False) -> Outcome:
    """The JAX path's outcome (``spr``: with the registers of a setter, see :class:`Outcome`)."""
    _one_case(case, "run_jax")
    c = case if chip is None else _on(case, chip)
    try:
        ub, info = c.call(JAX, return_info=True)
    except ConstraintError as e:
        from .spr import fresh

        return Outcome(e.code, spr=fresh() if spr and c.instruction.spr is not None else None)
    return Outcome(None, np.asarray(ub), np.asarray(info.written), np.asarray(info.undefined),
                   info.spr if spr and c.instruction.spr is not None else None)


def run_oracle(case: Case, chip: Optional[str] = None, spr: bool = False) -> Outcome:
    """The oracle's outcome (``spr``: with the registers of a setter, from the oracle's own
    register model ``ascend_ref.oracle.spr``, run from its fresh state)."""
    from . import oracle

    _one_case(case, "run_oracle")
    c = case if chip is None else _on(case, chip)
    product = oracle_chip(c.chip)
    if product is not c.chip:
        c = _on(c, product)
    try:                          # a case that names no instruction: the code run_jax gives
        ins = c.instruction       # it (a ConstraintError there too); one that lacks an
    except ConstraintError as e:  # argument fails in call_args (Instruction.check_case)
        return Outcome(e.code)
    setter = getattr(oracle.spr, ins.name, None) if spr and ins.spr is not None else None
    if setter is None:
        try:
            r = c.call(oracle)
        except oracle.OracleError as e:
            return Outcome(Code(e.code))
        except ConstraintError as e:   # the arguments: missing, or an unknown tensor dtype
            return Outcome(e.code)
        return Outcome(None, r.ub, r.written, r.undefined)
    from .ub import Tensor

    try:
        args, kw = ins.call_args(c, lambda k: Tensor(c.tensors[k][0],
                                                     ins.tensor_dtype(k, c.dtype),
                                                     c.tensors[k][1]))
    except ConstraintError as e:
        return Outcome(e.code, spr=oracle.spr.OracleSpr())
    try:
        r, state = setter(oracle.spr.OracleSpr(), _own(c.ub), *args, **{**kw, "chip": c.chip})
    except oracle.OracleError as e:
        return Outcome(Code(e.code), spr=oracle.spr.OracleSpr())
    return Outcome(None, r.ub, r.written, r.undefined, state)


def oracle_chip(chip: Any) -> Any:
    """The product argument the scalar oracle gets for a case's ``chip``: the id, where the
    oracle has its own row of the product (its table, :mod:`ascend_ref.oracle._products`);
    for a profile file of a product it has no row for (a user's
    ``$ASCEND_REF_CONFIGS/chips/my_chip.toml``), that loaded profile, which the oracle takes
    as a row. A campaign on such a product so compares the two implementations under the
    user's facts (each case was CHIP_UNKNOWN on the oracle's side); an id no profile has
    stays the oracle's CHIP_UNKNOWN."""
    from .chips import chip as load
    from .oracle._products import PRODUCTS

    if not isinstance(chip, str) or chip in PRODUCTS:
        return chip
    try:
        return load(chip)
    except ConstraintError:
        return chip


def _on(case: Case, chip: Any) -> Case:
    import copy

    c = copy.copy(case)
    c.chip = chip
    return c
