"""The parameters of one call, as typed pytrees: what the kernel, its rules and the tools read.

:func:`ascend_ref.engine.prepare` checks a call's arguments and builds one :class:`Params`:
the repeat count, the stride arguments, each operand's byte address and element count
(:class:`Operand`), the mask words and mode, the traced option index, the saturate flag, the
UB window (length, base, the product's UB size) and the product's behaviour as numbers
(:class:`ChipFacts`). The kernel adds what it measures (:class:`Diag`: the bytes each operand
is accessed at, the read-after-write verdict, ...) before it evaluates the rules, so a rule is
one function of one :class:`Params`.

Every class here is a frozen dataclass registered with :func:`jax.tree_util.register_dataclass`:
a leaf may be a concrete numpy scalar (an eager call), a traced value (``jit``, ``grad``) or an
array with a leading batch axis (``run_batch`` / ``run_cases`` stack the cases and ``vmap``
over them). A field that an instruction does not have is ``None`` (an empty subtree), so one
instruction's parameters always have one tree structure.

>>> import numpy as np, jax
>>> from ascend_ref.params import Operand
>>> t = Operand(np.int32(64), np.int32(128))
>>> jax.tree_util.tree_map(lambda x: int(x) * 2, t)
Operand(addr=128, size=256)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

import jax

#: operand names a call can have (the :class:`Params` / :class:`Diag` fields of that name)
OPERANDS: Tuple[str, ...] = ("dst", "src", "work_tensor")
#: numeric arguments with a field of their own; any other argument of an instruction goes in
#: :attr:`Params.extra`
ARGS: Tuple[str, ...] = ("repeat", "dst_rep_stride", "src_blk_stride", "src_rep_stride")


def _pytree(cls: Any) -> Any:
    """Register a dataclass as a pytree: every field is data (a leaf or a subtree)."""
    return jax.tree_util.register_dataclass(
        cls, data_fields=[f.name for f in dataclasses.fields(cls)], meta_fields=[])


@_pytree
@dataclass(frozen=True)
class Operand:
    """One tensor argument: start byte ``addr`` and ``size`` in elements (int32 each)."""

    addr: Any
    size: Any


@_pytree
@dataclass(frozen=True)
class ChipFacts:
    """A product's behaviour as numbers (:func:`ascend_ref.engine.product_params`).

    Rules are indices into :data:`~ascend_ref.chips.ZERO_RULES` (``zero_mask``,
    ``zero_repeat``), :data:`~ascend_ref.chips.FILL_RULES` (``block_fill``) and
    :data:`~ascend_ref.chips.ADD_ORDERS` (``add_order``); ``fill`` and ``default_nan`` are
    bits of the call's dtype; the others are bools. ``fields``: the calling instruction's
    :class:`~ascend_ref.registry.ProfileField` s by name, each the index of the product's
    value in the field's ``choices`` (read with ``ProfileField.holds``).
    """

    zero_mask: Any
    zero_repeat: Any
    dst_rep_stride_zero: Any
    block_fill: Any
    fill: Any
    fp32_ftz: Any
    default_nan: Any
    saturate_only: Any
    add_order: Any
    minmax_nan_default: Any
    fields: Dict[str, Any] = field(default_factory=dict)


@_pytree
@dataclass(frozen=True)
class Extent:
    """Bytes ``[lo, hi)`` a call accesses in one operand (``lo = 2**31 - 1``, ``hi = 0``
    when it accesses none)."""

    lo: Any
    hi: Any


@_pytree
@dataclass(frozen=True)
class Diag:
    """What the kernel measures and the rules read (also returned by the kernel).

    ``dst`` / ``src`` / ``work_tensor``: the :class:`Extent` each operand is accessed at
    (None for an operand the call does not have, or one whose extent a size rule checks
    instead); ``raw_conflict``: a result slot is read by a later repeat (Ascend C overlap
    rule; None where the rule is "disjoint"); ``need_exact``: on the ``"batch"`` path, the
    case must be rerun on the exact fallback; ``values``: what the instruction's effects
    report for its own rules (TIK vec_reduce_min / max: ``"index"``); ``spr``: what the call
    writes to a reduce special register (:class:`ascend_ref.spr.MaxMinWrite` /
    :class:`~ascend_ref.spr.SumWrite`; None unless the caller asked for the state).
    """

    need_exact: Any
    dst: Optional[Extent] = None
    src: Optional[Extent] = None
    work_tensor: Optional[Extent] = None
    raw_conflict: Any = None
    values: Dict[str, Any] = field(default_factory=dict)
    spr: Any = None

    def extent(self, tensor: str) -> Extent:
        """The access extent of operand ``tensor``."""
        e = getattr(self, tensor) if tensor in OPERANDS else None
        if e is None:
            raise KeyError(f"no access extent for {tensor!r}")
        assert isinstance(e, Extent)
        return e


@_pytree
@dataclass(frozen=True)
class Params:
    """One call's kernel parameters (see the module docstring).

    ``repeat`` and the stride fields are int32 (None where the instruction has no such
    argument); ``dst`` / ``src`` / ``work_tensor`` the operands (None where absent); ``mask``
    the ``uint32[4]`` mask value and ``mask_count`` the mode (True: continuous, False: bit
    mode; :mod:`ascend_ref.mask`); ``mask_counter`` True in counter mode (``SetMaskCount``,
    :class:`ascend_ref.mask.CounterMask`: ``mask`` words 0-1 hold the element count,
    ``mask_count`` is False and ``repeat`` is the repeat count derived from it); ``option`` the index of the call's option in the
    instruction's ``traced_options`` (None: the option is compiled in); ``saturate`` a bool
    (None where the instruction takes no flag); ``ub_len`` the UB array's length, ``ub_base``
    the real UB address of its byte 0 (compact windows), ``chip_ub`` the product's UB bytes;
    ``chip`` the product (:class:`ChipFacts`); ``extra`` numeric arguments of one instruction
    beyond :data:`ARGS`, by name; ``diag`` what the kernel measured (set inside the kernel,
    before the rules run; None on the host); ``faults`` the traced arguments whose values are
    judged when the kernel runs (a concrete one is judged before), by name (``"mask"``: a
    ``[4]`` lane-word array of a signed or 64-bit type; ``"saturate"``: an integer array;
    ``"stride_unit"``: TIK ``vc*``'s, from the public function), each a bool, True where
    the value is outside what the argument takes (:func:`ascend_ref.engine.judged`).
    """

    repeat: Any
    mask: Any
    mask_count: Any
    chip: ChipFacts
    ub_len: Any
    ub_base: Any
    chip_ub: Any
    mask_counter: Any = False
    src: Optional[Operand] = None
    dst: Optional[Operand] = None
    work_tensor: Optional[Operand] = None
    dst_rep_stride: Any = None
    src_blk_stride: Any = None
    src_rep_stride: Any = None
    option: Any = None
    saturate: Any = None
    extra: Dict[str, Any] = field(default_factory=dict)
    diag: Optional[Diag] = None
    faults: Dict[str, Any] = field(default_factory=dict)

    def tensor(self, name: str) -> Operand:
        """The operand called ``name`` (``"dst"``, ``"src"``, ``"work_tensor"``)."""
        t = getattr(self, name) if name in OPERANDS else None
        if t is None:
            raise KeyError(f"the call has no operand {name!r}")
        assert isinstance(t, Operand)
        return t

    def arg(self, name: str) -> Any:
        """The numeric argument called ``name`` (a :data:`ARGS` field or :attr:`extra`)."""
        if name in ARGS:
            v = getattr(self, name)
            if v is None:
                raise KeyError(f"the call has no argument {name!r}")
            return v
        return self.extra[name]

    @property
    def diagnostics(self) -> Diag:
        """:attr:`diag`, which the rules that read kernel measurements need."""
        if self.diag is None:
            raise ValueError("the kernel's measurements are not attached (Params.diag)")
        return self.diag

    def with_diag(self, diag: Diag) -> "Params":
        return dataclasses.replace(self, diag=diag)

    def replace(self, **changes: Any) -> "Params":
        return dataclasses.replace(self, **changes)

    def overridden(self, values: Mapping[str, Any]) -> "Params":
        """A copy with the named values replaced (``"repeat"``, ``"src.addr"``,
        ``"dst.size"``, ``"ub_base"``, an :attr:`extra` name): the values a caller gave
        where the kernel saw int32 stand-ins (error messages)."""
        fields: Dict[str, Any] = {}
        parts: Dict[str, Dict[str, Any]] = {}
        extra: Dict[str, Any] = {}
        for key, v in values.items():
            if "." in key:
                t, part = key.split(".", 1)
                parts.setdefault(t, {})[part] = v
            elif key in ARGS or key in ("ub_base", "ub_len", "chip_ub"):
                fields[key] = v
            else:
                extra[key] = v
        for t, changed in parts.items():          # one replace per tensor, one for the tree
            fields[t] = dataclasses.replace(self.tensor(t), **changed)
        if extra:
            fields["extra"] = {**self.extra, **extra}
        return dataclasses.replace(self, **fields) if fields else self

