"""The one place where an instruction runs: check, gather, compute, bounds, scatter.

An instruction module (``ascendc/*.py``, ``tik/*.py``) declares an :class:`Instruction`: its
operands, parameter ranges, alignment, overlap rule and an ``effects`` function that turns
the gathered source bits into :class:`Write` s and undefined :class:`Region` s. This module
does everything else, identically for every instruction:

1. ``prepare`` — structural checks in Python (product, dtype, order, argument types), the
   parameters as int32 scalars (traced or not), a static :class:`Spec` for ``jax.jit``. The
   product's behaviour (:func:`product_params`) and the mask mode are parameters too, so
   one compiled kernel serves every product and both mask modes.
2. ``kernel`` (jit-compiled, every numeric parameter traced) — the gather table, the source
   bits, the instruction's effects, every constraint rule as an int32 status, and the
   scatter, applied only when the status is 0.
3. ``finish`` — eager calls turn a non-zero status into a :class:`ConstraintError` naming
   the parameter, the value, the allowed range and the product.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, Sequence,
                    Tuple, Type, Union)

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from . import addressing, mask as masks, numerics
from .batch_args import held_int, is_int
from .chips import ADD_ORDERS, FILL_RULES, ZERO_RULES, ChipProfile, chip as get_chip
from .constraints import (HOST, Code, Constraint, ConstraintError, Rule, first_failure, in_range,
                          status_of)
from .params import ARGS, OPERANDS, ChipFacts, Diag, Extent, Operand, Params
from .ub import Tensor, as_ub, element_view, itemsize, mark, scatter_bytes, to_bytes, words_of

if TYPE_CHECKING:
    from .registry import ProfileField

U16_MAX = 65535
_BIG = 2**31 - 1
BLOCK = 32


@dataclass(frozen=True)
class Spec:
    """Static part of one call (a jit cache key): everything that changes shapes or code.

    The product and the mask mode are not part of it: they travel in the parameters
    (:class:`~ascend_ref.params.Params` ``.chip``, ``.mask_count``; :class:`Product`), like a
    WholeReduceMin/Max order (``.option``)."""

    api: str
    dtype: str
    r_max: int
    option: str = ""
    traced_repeat: bool = False
    info: bool = False
    #: ``"fast"`` (trees, closed-form checks, local exact fallbacks), ``"batch"`` (the same
    #: without fallbacks: ``Diag.need_exact`` asks the caller to rerun on ``"fallback"``),
    #: ``"fallback"`` (exact adder, exact read-after-write table) or ``"general"`` (the
    #: reference algorithms everywhere: element gather, tables, :func:`numerics.add`).
    path: str = "fast"
    #: ``(src_rep_stride, src_blk_stride)`` known on the host for every case of a batch whose
    #: whole ``r_max``-row source span lies inside each UB row: dense slices, no gather.
    static_src: Optional[tuple] = None
    #: return the words each write produces (``(addr, bits, valid)`` per write) instead of
    #: the updated UB; the caller merges them into its copy on the host.
    compact: bool = False
    #: dst's dtype where it differs from the source's (Ascend 950 ReduceRepeat<SUM>: int16
    #: -> int32, the products' ``[dst_dtypes]`` pair tables); ``""``: dst has ``dtype``
    dst_dtype: str = ""
    #: evaluate the instruction's declared effect on the reduce special registers
    #: (``Instruction.spr``: the caller asked for the state, ``return_info=True``)
    spr: bool = False
    #: the count form (level-2 ReduceSum / Max / Min "the first count elements"): ``r_max``
    #: counts elements, the tables hold :attr:`rows` rows (:attr:`Instruction.count_form`)
    count_form: bool = False
    #: every case of a vmapped batch has the same mask and repeat (run_batch's shared
    #: parameters): min / max take the blocked trees, faster there and slower under
    #: per-case masks (:func:`ascend_ref.numerics.select_extreme_tree`); same bits
    shared_lanes: bool = False
    #: the host saw every lane of every repeat enabled in every case of the batch (a shared
    #: mask that enables all ``lanes``, in a normal mask mode, and a shared repeat equal to
    #: ``r_max``): the fast sum trees skip their masking (:attr:`numerics.Exact.all_active`;
    #: the same bits, since a masked lane's +0 is then never chosen)
    all_active: bool = False
    #: with :attr:`static_src`: the source address (bytes) every case of the batch shares, so
    #: the source is a static slice of the row, which XLA fuses into the tree that reads it
    #: (a dynamic slice is stored first, or read one element at a time)
    src_at: Optional[int] = None
    #: with :attr:`static_src`: the host passed the rows as uint32 words and a 2-byte source
    #: arrives as ``(r_max, L // 2)`` words, each two adjacent lanes (the low half the even
    #: lane), for an instruction that declares it takes them (:attr:`Instruction.pair_src`)
    pair_src: bool = False

    @property
    def rows(self) -> int:
        """Rows of the source tables: ``r_max``, or ``ceil(r_max / L)`` in the count form."""
        return -(-self.r_max // self.lanes) if self.count_form else self.r_max

    @property
    def size(self) -> int:
        """Bytes per source element (the lanes' width)."""
        return itemsize(self.dtype)

    def tsize(self, tensor: str) -> int:
        """Bytes per element of operand ``tensor`` (dst may be wider than the source)."""
        return itemsize(self.dst_dtype) if tensor == "dst" and self.dst_dtype else self.size

    @property
    def lanes(self) -> int:
        return 256 // self.size


@dataclass(frozen=True)
class Write:
    """Words an instruction writes: byte address, bits and validity, all the same shape.

    ``issued`` — the hardware writes the word (bounds and overlap are checked for these);
    ``final`` — the word survives in the result UB (a later repeat's write wins otherwise).
    ``repeat`` — the repeat that issues each word (Ascend C read-after-write rule).
    """

    tensor: str
    addr: Any
    bits: Any
    size: int
    issued: Any
    final: Any
    repeat: Any = None


@dataclass(frozen=True)
class Region:
    """Bytes ``[start, start + nbytes)`` left undefined when ``when`` holds."""

    start: Any
    nbytes: Any
    when: Any


@dataclass(frozen=True)
class UndefinedWords:
    """Words of ``size`` bytes at ``addr`` (any shape) left undefined where ``when``."""

    addr: Any
    size: int
    when: Any


@dataclass
class Effects:
    """What an instruction does: its writes, undefined bytes, and values its rules read."""

    writes: list
    undefined: list = field(default_factory=list)
    diag: dict = field(default_factory=dict)


#: an instruction's effects (:attr:`Instruction.effects`): ``(spec, p, bits, active, arith)
#: -> Effects``
EffectsFn = Callable[[Spec, Params, jax.Array, jax.Array, numerics.Exact], Effects]
#: what :func:`kernel` (and :func:`batched`) returns: ``(ub, status, diag, written,
#: undefined)`` -- ``ub`` and ``undefined`` as per-write tables in the compact form
KernelResult = Tuple[Union[jax.Array, tuple], jax.Array, Diag, Optional[jax.Array],
                     Union[jax.Array, tuple, None]]


#: :func:`product_params` per profile object (a profile is frozen: same object, same facts)
_FACTS: Dict[int, Tuple[ChipProfile, Dict[tuple, ChipFacts]]] = {}


def product_params(prof: ChipProfile, dtype: str, option: str = "",
                   fields: Sequence[ProfileField] = ()) -> ChipFacts:
    """A product's behaviour (:class:`~ascend_ref.chips.Behaviour`) as kernel parameters.

    Numbers, not compiled code: under ``jit`` / ``vmap`` / a batch they are traced like every
    other parameter, so one kernel serves every product. Rules are indices into
    :data:`~ascend_ref.chips.ZERO_RULES`, :data:`~ascend_ref.chips.FILL_RULES` and
    :data:`~ascend_ref.chips.ADD_ORDERS`; the default NaN and the empty-block fill are the
    bits for this call's ``dtype`` (and ReduceDataBlock ``option``). ``fields``: the calling
    instruction's :class:`~ascend_ref.registry.ProfileField` s, each in
    :attr:`ChipFacts.fields` as the index of the product's value in the field's ``choices``
    (read with ``ProfileField.holds(p, value)``)."""
    entry = _FACTS.get(id(prof))
    if entry is None or entry[0] is not prof:
        entry = (prof, {})
        _FACTS[id(prof)] = entry
    key = (dtype, str(option), tuple(fields))
    out = entry[1].get(key)
    if out is None:
        out = entry[1][key] = _product_params(prof, dtype, option, fields)
    return out


def _product_params(prof: ChipProfile, dtype: str, option: Any,
                    fields: Sequence[ProfileField]) -> ChipFacts:
    fills = prof.block_fill_values.get(str(option), {}) if prof.block_fill == "fill" else {}
    facts = {f.name: np.int32(list(f.choices).index(prof.facts.get(f.name, f.choices[0])))
             for f in fields}
    return ChipFacts(
        zero_mask=np.int32(ZERO_RULES.index(prof.zero_mask)),
        zero_repeat=np.int32(ZERO_RULES.index(prof.zero_repeat)),
        dst_rep_stride_zero=np.bool_(prof.dst_rep_stride_zero),
        block_fill=np.int32(FILL_RULES.index(prof.block_fill)),
        fill=np.uint32(fills.get(dtype, 0)),
        fp32_ftz=np.bool_(prof.fp32_ftz),
        default_nan=np.uint32(prof.default_nan(dtype)),
        saturate_only=np.bool_(prof.saturate_only),
        add_order=np.int32(ADD_ORDERS.index(prof.add_order)),
        minmax_nan_default=np.bool_(prof.minmax_nan == "default"),
        fields=facts)


#: a product flag as :class:`Product` reads it: a numpy bool on the host (a concrete call's
#: rules), a numpy array inside the host checks, a traced array in the kernel
Flag = Union[jax.Array, np.ndarray, np.bool_]
#: a product bit pattern (the default NaN, an empty block's fill), read the same three ways
Bits32 = Union[jax.Array, np.ndarray, np.uint32]


class Product:
    """The product behaviour one call reads from its parameters (:class:`Params` ``.chip``,
    :func:`product_params`): bools and bit patterns, concrete or traced."""

    def __init__(self, p: Params) -> None:
        self.c = p.chip

    @staticmethod
    def _is(value: Any, rules: tuple, rule: str) -> Flag:
        return value == rules.index(rule)

    def zero_mask_is(self, rule: str) -> Flag:
        """``zero_mask`` rule is ``rule`` (``"nop"`` / ``"undefined"`` / ``"error"``)."""
        return self._is(self.c.zero_mask, ZERO_RULES, rule)

    def zero_repeat_is(self, rule: str) -> Flag:
        return self._is(self.c.zero_repeat, ZERO_RULES, rule)

    def block_fill_is(self, rule: str) -> Flag:
        """ReduceDataBlock empty-block rule is ``rule`` (``"keep"`` / ``"fill"`` / ``"undefined"``)."""
        return self._is(self.c.block_fill, FILL_RULES, rule)

    def add_order_is(self, order: str) -> Flag:
        return self._is(self.c.add_order, ADD_ORDERS, order)

    def add_order_choose(self, branches: Sequence[Tuple[str, Callable[[], Any]]]) -> Any:
        """The value of the branch ``(order, thunk)`` whose ``add_order`` this is: a
        ``jnp.where`` chain over the branches (the last where none of the others is),
        computing only those whose test is not concretely False. A kernel compiled for one
        product (run_batch, run_cases' one-call chunks: the profile is a constant) then
        holds one order instead of all three (vec_reduce_add: the in-order scans of the
        others); a traced profile (one kernel for every product) keeps them all."""
        live = []
        for order, thunk in branches:
            test = self.add_order_is(order)
            if isinstance(test, jax.core.Tracer) or bool(np.asarray(test)):
                live.append((test, thunk))
        if not live:                      # no branch for this order: the where chain
            live = [(self.add_order_is(o), t) for o, t in branches]
        out = live[-1][1]()
        for test, thunk in reversed(live[:-1]):
            out = jnp.where(test, thunk(), out)
        return out

    @property
    def dst_rep_stride_zero(self) -> Flag:
        return self.c.dst_rep_stride_zero

    @property
    def saturate_only(self) -> Flag:
        return self.c.saturate_only

    @property
    def fp32_ftz(self) -> Flag:
        return self.c.fp32_ftz

    @property
    def minmax_nan(self) -> Flag:
        """True where min/max NaN results become the default NaN (the profile's
        ``minmax_nan = "default"``; :func:`ascend_ref.numerics.nan_result`)."""
        return self.c.minmax_nan_default

    def default_nan(self, dtype: str) -> Bits32:
        """The default NaN of this call's dtype (``dtype`` is that dtype: one value is passed)."""
        return self.c.default_nan

    def fill(self) -> Bits32:
        """Bits of an empty ReduceDataBlock block result for this call (rule ``"fill"``)."""
        return self.c.fill


def option_value(p: Params, values: Sequence) -> Any:
    """``values[k]`` for the call's traced option ``k = p.option`` (one value per entry of
    the instruction's ``traced_options``; arrays of one shape, or numbers)."""
    out = values[-1]
    for k in range(len(values) - 2, -1, -1):
        out = jnp.where(p.option == k, values[k], out)
    return out


def mask_lanes(p: Params, lanes: int) -> jax.Array:
    """Which of ``lanes`` lanes a repeat reads, in either normal mask mode
    (``p.mask_count``); in counter mode (``p.mask_counter``) the lanes of repeat 0, the
    widest (later repeats take a prefix of them: :func:`repeat_lanes`)."""
    normal = masks.lane_bits(p.mask_count, p.mask, lanes)
    counter = masks.counter_active(masks.counter_count(p.mask, lanes), 1, lanes)[0]
    return jnp.where(p.mask_counter, counter, normal)


def repeat_lanes(p: Params, lanes: int, r_max: int) -> jax.Array:
    """Boolean ``(r_max, lanes)``: the lanes each repeat takes part with (``r <
    p.repeat``), in every mask mode: the same mask for every repeat in normal mode; in
    counter mode the first ``min(L, n - r*L)`` lanes of repeat ``r``."""
    normal = addressing.repeat_valid(p.repeat, r_max)[:, None] & \
        masks.lane_bits(p.mask_count, p.mask, lanes)[None, :]
    counter = masks.counter_active(masks.counter_count(p.mask, r_max * lanes), r_max, lanes)
    return jnp.where(p.mask_counter, counter & addressing.repeat_valid(p.repeat, r_max)[:, None],
                     normal)


def gate(spec: Spec, p: Params, dst: str = "dst") -> Tuple[jax.Array, list]:
    """Zero mask / zero repeat (SEMANTICS §C): ``(runs, [undefined dst extent])``.

    ``runs`` is False for a NOP; on a product whose rule is ``"undefined"`` the whole declared
    extent of ``dst`` is reported undefined.
    """
    chip = Product(p)
    zero_mask = masks.is_zero(p.mask_count, p.mask)
    # counter mode: the repeat count derives from the count (0 only for count 0, the mask's
    # rule); repeat_time is ignored
    zero_rep = (p.repeat == 0) & ~jnp.asarray(p.mask_counter)
    undefined = (zero_mask & chip.zero_mask_is("undefined")) | \
        (zero_rep & chip.zero_repeat_is("undefined"))
    region = Region(p.tensor(dst).addr, p.tensor(dst).size * spec.tsize(dst), undefined)
    return ~(zero_mask | zero_rep), [region]


def no_pair_src(dtype: str, option: str) -> bool:
    """:attr:`Instruction.pair_src` of an instruction whose effects take source elements
    (every instruction but those that declare otherwise)."""
    return False


@dataclass(frozen=True, eq=False)
class Instruction:
    """Declarative description of one instruction (one per public function).

    ``effects(spec, p, bits, active, arith)`` receives the source bits ``(r_max, L)`` gathered
    from the read table (``(r_max, L // 2)`` words of lane pairs under :attr:`Spec.pair_src`
    where it declares :attr:`pair_src`), which of them take part and the arithmetic to
    compute in (:func:`arithmetic`: :class:`ascend_ref.numerics.Exact` in the kernels;
    :mod:`ascend_ref.grad` passes a differentiable one); it returns :class:`Effects`.
    """

    api: str
    operands: tuple                       # tensor parameters, e.g. ("dst", "src")
    repeat_param: str                     # public name of the repeat count
    repeat_range: Callable[[Spec], tuple]  # (lo, hi) for a spec
    strides: tuple                        # stride parameters, each in [0, 65535]
    align: Callable[[Spec], dict]          # operand -> byte alignment (an int or a function of p)
    effects: EffectsFn
    overlap: str = "repeat"                # "repeat" (Ascend C) | "disjoint" (TIK)
    word_order: str = "ascendc"
    blk_stride: bool = True                # has a source block stride parameter
    saturating: bool = False               # takes a saturate flag
    sized_by_rule: tuple = ()              # operands whose extent a size rule checks instead
    disjoint_pairs: tuple = ()             # "disjoint": pairs that may not overlap (() = all)
    extra_rules: Callable[[Spec], list] = lambda spec: []
    #: option values that are data, not compiled in: ``p.option`` is the index of the
    #: call's option here and ``Spec.option`` is ``""`` (:func:`option_value` reads it)
    traced_options: tuple = ()
    #: the documented dst alignment is the result slot (the per-repeat slot reductions): the
    #: fuzz alignment breaker aims there, from the layout, not from the ``align`` rule
    dst_align_slot: bool = False
    #: the mask modes the API takes (``"count"``: continuous, ``"bits"``: bit mode); another
    #: mode is BAD_ARGUMENT (RepeatReduceSum takes an ``int32_t mask`` only)
    mask_modes: tuple = ("count", "bits")
    #: the call's effect on a reduce special register (:class:`ascend_ref.spr.Sets`; None:
    #: it passes the registers through): the instruction file declares it
    spr: Any = None
    #: the count form ("the first ``count`` elements of src", level-2 ReduceSum / Max / Min):
    #: the repeat parameter (``p.repeat``) counts elements; element ``k`` is lane ``k % L``
    #: of row ``k // L`` (srcRepStride 8, no mask: every lane of the first ``count``
    #: elements takes part, the last row partly); the tables hold ``ceil(r_max / L)`` rows
    count_form: bool = False
    #: the static option (``Spec.option``) of a kernel whose public API has none: a TIK
    #: vcgmax is ReduceDataBlock's effects with ``"MAX"`` compiled in (its fill values too)
    fixed_option: str = ""
    #: ``(dtype, option) -> bool``: its effects take a dense 2-byte source as words of two
    #: adjacent lanes (:attr:`Spec.pair_src`; ReduceDataBlock SUM half: the first level of
    #: its block trees adds each word's two halves, :func:`ascend_ref.numerics.lane_tree`)
    pair_src: Callable[[str, str], bool] = no_pair_src
    #: the product's own top of the repeat parameter inside :attr:`repeat_range` (``None``:
    #: the static range alone): ``(top(spec, p), why)``, checked by the one REPEAT_RANGE
    #: rule, whose message gives ``[low, min(hi, top)]`` and ``why`` (the count form: UB
    #: bytes / sizeof(T) of the call's product)
    repeat_cap: Optional[Tuple[Callable[[Spec, Params], Any], str]] = None

    def __hash__(self) -> int:
        return id(self)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.operands) - set(OPERANDS))
        if unknown:
            raise ValueError(f"{self.api}: operands {unknown} have no field in "
                             f"ascend_ref.params.Params (add one there)")


# ---------------------------------------------------------------- rules -------------------

def _ub_limit(spec: Spec, p: Params) -> Any:
    """Bytes addressable in this UB array: its length, and the product's UB past ``ub_base``
    (a compact window starting at real UB address ``ub_base``)."""
    return jnp.minimum(p.ub_len, p.chip_ub - p.ub_base)


def _inside_ub(spec: Spec, p: Params, addr: Any, size: Any, isz: int) -> Any:
    """``0 <= addr`` and ``addr + size * itemsize <= limit``, computed without int32
    overflow: the byte end is never formed; the room left after ``addr`` (at most the UB
    size) is divided by the item size instead, exactly as the oracle's unbounded integers
    decide it (a 2**31 - 1 element tensor is outside the UB, not a wrapped small extent)."""
    lim = _ub_limit(spec, p)
    room = lim - jnp.minimum(jnp.maximum(addr, 0), lim)          # in [0, lim]: no overflow
    return (addr >= 0) & (size >= 0) & (addr <= lim) & (size <= room // isz)


def rules(ins: Instruction, spec: Spec) -> list:
    """Every traced constraint of one call, as :class:`Rule` s over its :class:`Params` ``p``
    (the kernel's measurements in ``p.diag``), by code (the call's whole list, host checks
    included: :meth:`ascend_ref.registry.Instruction.rules`)."""
    lo0, hi = ins.repeat_range(spec)

    def low(p: Params) -> Union[jax.Array, np.ndarray, np.integer, int]:
        # repeat 0 is outside the range where it is an error
        return Product(p).zero_repeat_is("error").astype(np.int32) if lo0 == 0 else lo0

    cap = ins.repeat_cap

    def top_of(p: Params, hi: int) -> int:
        # the product's own top (Instruction.repeat_cap) within the static range
        return hi if cap is None else min(hi, int(cap[0](spec, p)))

    def capped(p: Params) -> Any:
        return True if cap is None else p.repeat <= cap[0](spec, p)

    out = [] if ins.count_form else \
        list(masks.rules(None, spec.dtype, lambda p: Product(p).zero_mask_is("error"),
                         ins.word_order))
    top = min(hi, spec.r_max)          # a batch may compile a shorter table than the range
    if "counter" in ins.mask_modes:
        lanes = spec.lanes
        out.append(Rule(
            Code.MASK_RANGE, "mask",
            lambda p, top=top: ~p.mask_counter | ((p.mask[1] == 0)
                                                   & (p.mask[0] <= np.uint32(lanes * top))),
            lambda p: f"CounterMask({int(p.mask[0]) | int(p.mask[1]) << 32})",
            lambda p, top=top: f"a count in [{int(Product(p).zero_mask_is('error'))}, "
                               f"{lanes * hi}] (counter mode: ceil(count / "
                               f"{lanes}) repeats within {ins.repeat_param}'s range [1, {hi}]"
                               + (f"; this batch was compiled for at most {top} repeats"
                                  if top < hi else "") + ")",
            hint="Split the call, or use a normal-mode mask with repeat_time",
            doc=f"counter mode: count <= {lanes * hi} (ceil(count / {lanes}) repeats within "
                f"the repeat range, assumed: counter_max_repeat)"))
    out.append(Rule(Code.REPEAT_RANGE, ins.repeat_param,
                    lambda p, top=top: p.mask_counter | (in_range(p.repeat, low(p), top)
                                                          & capped(p)),
                    lambda p: int(p.repeat),
                    lambda p, hi=hi, top=top: f"[{int(low(p))}, {top_of(p, hi)}]" + (
                        "" if cap is None else f" ({cap[1]})") + (
                        f" (this batch was compiled for at most {top})"
                        if top < hi and int(low(p)) <= int(p.repeat) <= top_of(p, hi)
                        else ""),
                    doc=f"{ins.repeat_param} in [{lo0}, {hi}]" + (
                        " (0: a NOP or undefined where the product allows it)"
                        if lo0 == 0 else "") + (
                        "" if cap is None else f", at most {cap[1]}") + (
                        "; ignored in counter mode (no range: 该值不生效)"
                        if "counter" in ins.mask_modes else "")))
    for s in ins.strides:
        out.append(Rule(Code.STRIDE_RANGE, s, lambda p, s=s: in_range(p.arg(s), 0, U16_MAX),
                        lambda p, s=s: int(p.arg(s)), lambda p: "[0, 65535]",
                        doc=f"{s} in [0, 65535]"))
    if "dst_rep_stride" in ins.strides:
        out.append(Rule(Code.DST_STRIDE_ZERO, "dst_rep_stride",
                        lambda p: (p.dst_rep_stride != 0) | Product(p).dst_rep_stride_zero,
                        lambda p: int(p.dst_rep_stride), lambda p: "[1, 65535]",
                        doc="dst_rep_stride != 0 (0 only on a product with "
                            "dst_rep_stride_zero)"))
    for t, a in ins.align(spec).items():
        unit = a if callable(a) else (lambda p, a=a: a)       # bytes; may read p (traced)
        out.append(Rule(Code.ALIGN, f"{t}.addr",
                        lambda p, t=t, u=unit: p.tensor(t).addr % u(p) == 0,
                        lambda p, t=t: int(p.tensor(t).addr),
                        lambda p, u=unit: f"a multiple of {int(u(p))} bytes",
                        doc=f"{t} start address a multiple of "
                            + ("its result slot (by option)" if callable(a) else f"{a} bytes")))
    for t in ins.operands:
        isz = spec.tsize(t)
        out.append(Rule(
            Code.UB_BOUNDS, t,
            lambda p, t=t, isz=isz: _inside_ub(spec, p, p.tensor(t).addr, p.tensor(t).size, isz),
            lambda p, t=t, isz=isz: f"bytes [{int(p.tensor(t).addr)}, "
                                    f"{int(p.tensor(t).addr) + int(p.tensor(t).size) * isz})",
            lambda p: f"inside the UB: [0, {int(_ub_limit(spec, p))})",
            doc=f"{t}'s declared extent inside the UB"))
        if t in ins.sized_by_rule:
            continue
        out.append(Rule(
            Code.TENSOR_BOUNDS, t,
            lambda p, t=t, isz=isz: (p.diagnostics.extent(t).lo >= p.tensor(t).addr)
            & (p.diagnostics.extent(t).hi <= p.tensor(t).addr + p.tensor(t).size * isz),
            lambda p, t=t: f"access to bytes [{int(p.diagnostics.extent(t).lo)}, "
                           f"{int(p.diagnostics.extent(t).hi)})",
            lambda p, t=t, isz=isz: f"the declared extent of {t}: bytes "
                                    f"[{int(p.tensor(t).addr)}, "
                                    f"{int(p.tensor(t).addr) + int(p.tensor(t).size) * isz})",
            hint=f"Enlarge the tensor or reduce {ins.repeat_param}" if ins.count_form else
                 "Enlarge the tensor or reduce repeat / strides / mask",
            doc=f"every access to {t} inside its declared extent"))
    if ins.overlap == "repeat":
        out.append(Rule(Code.OVERLAP, "dst", lambda p: ~p.diagnostics.raw_conflict,
                        lambda p: "a result slot that a later repeat reads as source",
                        lambda p: "the dst of repeat N is never read by a later repeat "
                                  "(separate dst from src, or use in-place order)",
                        doc="the dst of repeat N is not read as src by a later repeat"))
    else:
        names = ins.operands
        pairs = ins.disjoint_pairs or tuple((a, b) for i, a in enumerate(names)
                                            for b in names[i + 1:])
        what = ("src, dst and work_tensor may not overlap at all" if len(pairs) == 3 else
                " and ".join(f"{a} / {b}" for a, b in pairs) + " may not overlap "
                "(the API's documented rule)")
        for a, b in pairs:
            out.append(Rule(
                Code.OVERLAP, f"{a}/{b}",
                lambda p, a=a, b=b: (p.tensor(a).addr + p.tensor(a).size * spec.tsize(a)
                                     <= p.tensor(b).addr)
                | (p.tensor(b).addr + p.tensor(b).size * spec.tsize(b) <= p.tensor(a).addr),
                lambda p, a=a, b=b: f"{a} at {int(p.tensor(a).addr)}, "
                                    f"{b} at {int(p.tensor(b).addr)}",
                lambda p, what=what: what, doc=f"{a} and {b} do not overlap"))
    if not ins.count_form:
        out.append(Rule(Code.MASK_BITS, "mask", lambda p: judged(p, "mask"),
                        lambda p: "a [4] array with a word below 0 (or above 2**32 - 1)",
                        lambda p: "a [4] array of lane words, each in [0, 2**32 - 1]",
                        doc="a traced [4] lane-word array: each word in [0, 2**32 - 1] "
                            "(judged in the kernel; a concrete one before it runs)"))
    if ins.saturating:
        out.append(Rule(Code.BAD_ARGUMENT, "saturate", lambda p: judged(p, "saturate"),
                        lambda p: "an integer array holding neither 0 nor 1",
                        lambda p: "True / False (or None for the product default)",
                        doc="a traced integer saturate holds 0 or 1 (judged in the kernel; a "
                            "concrete one before it runs)"))
    if ins.saturating and spec.dtype != "float16":      # float32, and the integer sums
        out.append(Rule(Code.SATURATE_DTYPE, "saturate", lambda p: ~p.saturate,
                        lambda p: True, lambda p: f"False for {spec.dtype} (half only)",
                        doc=f"saturate False for {spec.dtype} (half only)"))
    if ins.saturating and spec.dtype == "float16":
        out.append(Rule(Code.SATURATE_DTYPE, "saturate",
                        lambda p: p.saturate | ~Product(p).saturate_only,
                        lambda p: False, lambda p: "True or None: this product has only the "
                                                   "saturation mode",
                        doc="saturate True (or None) on a product with saturate_only"))
    # by code: the documentation's order (codes are numbered in it, docs/SEMANTICS.md §H),
    # and the lowest failing code is the first failing rule (stable: ties keep their order)
    return sorted(out + list(ins.extra_rules(spec)), key=lambda r: int(r.code))


# ---------------------------------------------------------------- kernel ------------------

def _extent(addr: ArrayLike, valid: ArrayLike, size: int) -> Tuple[jax.Array, jax.Array]:
    lo = jnp.min(jnp.where(valid, addr, _BIG))
    hi = jnp.max(jnp.where(valid, addr + size, 0))
    return jnp.where(jnp.any(valid), lo, _BIG), jnp.where(jnp.any(valid), hi, 0)


#: Compiled executables since the last release. XLA CPU maps ~100 memory regions per
#: executable and Linux allows 65530 per process, so a long campaign that compiles many
#: static configurations would crash; past this many compiles the caches are dropped.
COMPILE_LIMIT = 250
_compiles = [0]


def note_compile() -> None:
    """Count one trace (called from inside traced kernels: runs once per compile)."""
    _compiles[0] += 1


def release_if_needed() -> None:
    """Drop JAX's compilation caches when too many executables are alive (see above)."""
    if _compiles[0] >= COMPILE_LIMIT:
        release()


def release() -> None:
    """Drop JAX's compilation caches now and start the count of :data:`COMPILE_LIMIT`
    again (``bench/bench.py`` does it before each row, so that no row's timed calls
    recompile what a release inside them dropped)."""
    _compiles[0] = 0
    jax.clear_caches()


def _lanes(ins: Instruction, spec: Spec,
           p: Params) -> Tuple[ArrayLike, jax.Array, jax.Array]:
    """``(blk, lane_mask, active)``: the source block stride (1 where the instruction has
    none), the ``(L,)`` lanes the mask enables and the ``(r_max, L)`` lanes that take part."""
    blk = p.src_blk_stride if ins.blk_stride else 1
    lane_mask = mask_lanes(p, spec.lanes)
    if ins.count_form:
        return blk, lane_mask, count_active(spec, p.repeat)
    active = repeat_lanes(p, spec.lanes, spec.r_max)
    return blk, lane_mask, active


def count_active(spec: Spec, count: ArrayLike) -> jax.Array:
    """The count form's ``(rows, L)`` lanes that take part: element ``r * L + i < count``."""
    flat = jnp.arange(spec.rows, dtype=jnp.int32)[:, None] * spec.lanes \
        + jnp.arange(spec.lanes, dtype=jnp.int32)[None, :]
    return flat < jnp.asarray(count, jnp.int32)


def _gather_src(ins: Instruction, spec: Spec, ub: jax.Array, p: Params,
                blk: ArrayLike) -> jax.Array:
    """Source bits ``(r_max, L)``: an element gather (general path, odd UB lengths) or, on
    the fast paths, one 32-byte slice per DataBlock (same bits for every in-range read).
    8-byte elements: ``(r_max, L, 2)`` uint32, the (lo, hi) words (no uint64 in a kernel)."""
    s, n = spec.size, ub.shape[0]
    align = ins.align(spec).get("src", 1)
    align = 1 if callable(align) else align
    if spec.static_src is not None and spec.path != "general":
        return _dense_src(spec, ub, p)
    if spec.path == "general" or n % BLOCK or align % BLOCK or n < BLOCK:
        reads = addressing.read_table(p.tensor("src").addr, p.src_rep_stride, blk,
                                      r_max=spec.rows, size=s)
        view = element_view(ub, s)
        return view[jnp.clip(reads // s, 0, view.shape[0] - 1)]
    starts = addressing.block_table(p.tensor("src").addr, p.src_rep_stride, blk, r_max=spec.rows)
    blocks = jax.lax.gather(
        ub, starts.reshape(-1, 1),
        jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(),
                                       start_index_map=(0,)),
        slice_sizes=(BLOCK,), mode=jax.lax.GatherScatterMode.CLIP)
    words = words_of(blocks.reshape(-1, BLOCK // s, s), s)
    return words.reshape((spec.rows, spec.lanes) + words.shape[2:])


def static_span(r_max: int, rep: int, blk: int) -> int:
    """Bytes from the first source block to the end of the last one (static strides)."""
    return (r_max - 1) * rep * BLOCK + 7 * blk * BLOCK + BLOCK


def _dense_src(spec: Spec, ub: jax.Array, p: Params) -> jax.Array:
    """Source bits when both source strides are static: one dynamic slice of the span
    (inside the row: the host checked it), then static reshapes / block picks; with
    :attr:`Spec.pair_src`, ``(r_max, L // 2)`` words of two lanes each."""
    assert spec.static_src is not None       # only called for static source strides
    rep, blk = spec.static_src
    s, r_max = spec.size, spec.rows
    span = static_span(r_max, rep, blk)
    # a row of words (the host viewed the UB as the element type: no byte assembly here);
    # a misaligned src.addr is an ALIGN error whose reads do not matter
    unit = ub.dtype.itemsize
    if spec.src_at is not None:          # the host pinned the address (every case shares it)
        sl = ub[spec.src_at // unit:spec.src_at // unit + span // unit]
    else:
        sl = jax.lax.dynamic_slice(ub, (p.tensor("src").addr // unit,), (span // unit,))
    if blk == 1 and rep == 8:           # the common layout: repeats back to back
        raw = sl.reshape(r_max, 256 // unit)
    else:
        idx = (np.arange(r_max)[:, None] * rep + np.arange(8)[None, :] * blk).reshape(-1)
        raw = sl.reshape(-1, BLOCK // unit)[idx]
    if spec.pair_src:                   # words of two lanes, as the instruction asked
        assert unit == 4 and s == 2, (unit, s)
        return raw.reshape(r_max, spec.lanes // 2)
    if unit == s:
        return raw.reshape(r_max, spec.lanes)
    words = words_of(raw.reshape(r_max, spec.lanes, s // unit), s)    # 8 bytes: (lo, hi)
    return words.reshape((r_max, spec.lanes) + words.shape[2:])


def _read_extent(spec: Spec, p: Params, blk: ArrayLike, lane_mask: jax.Array,
                 active: jax.Array) -> Tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``[lo, hi)`` of the active reads in closed form: the lowest active lane offset in
    repeat 0 and the highest in the last repeat (repeats grow with the repeat stride; lane
    offsets grow with the lane only for a block stride >= 1 — with block stride 0 the
    blocks coincide and a later lane may sit lower, so the offsets' min / max are taken).
    Also returns those two offsets."""
    s, lanes = spec.size, spec.lanes
    offs = addressing.lane_offsets(blk, s, lanes)
    first = jnp.min(jnp.where(lane_mask, offs, _BIG))
    last = jnp.max(jnp.where(lane_mask, offs, 0))
    nrep = jnp.minimum(p.repeat, spec.r_max)
    live = jnp.any(lane_mask) & (nrep > 0)
    lo = p.tensor("src").addr + first
    hi = p.tensor("src").addr + addressing.blocks_bytes(nrep - 1, p.src_rep_stride) + last + s
    # counter mode: the last repeat may take fewer lanes than the others; the highest read
    # is the last repeat's highest lane or the one before's widest (strides >= 0)
    tail = active[jnp.clip(nrep - 1, 0, spec.r_max - 1)]
    last_tail = jnp.max(jnp.where(tail, offs, 0))
    hi_counter = p.tensor("src").addr + jnp.maximum(
        addressing.blocks_bytes(nrep - 1, p.src_rep_stride) + last_tail,
        jnp.where(nrep >= 2, addressing.blocks_bytes(nrep - 2, p.src_rep_stride) + last, 0)) + s
    hi = jnp.where(p.mask_counter, hi_counter, hi)
    if spec.count_form:                  # the first ``count`` elements, back to back
        hi = p.tensor("src").addr + nrep * s
    return (jnp.where(live, lo, _BIG), jnp.where(live, hi, 0), jnp.where(live, first, 0),
            last)


def _raw_candidate(w: "Write", p: Params, blk: ArrayLike, lane_mask: jax.Array,
                   off_first: jax.Array, off_last: jax.Array) -> jax.Array:
    """Necessary condition for a read-after-write conflict of ``w`` (cheap, per written word):
    a later repeat's active reads reach the word's address."""
    step = addressing.blocks_bytes(1, p.src_rep_stride)
    d_first = w.addr - (p.tensor("src").addr + off_first)
    d_last = w.addr - (p.tensor("src").addr + off_last)
    # some repeat r' with w.repeat < r' < repeat reads between its first and last active
    # lane: (w.repeat + 1) * step <= d_first and d_last <= (repeat - 1) * step. No division
    # (integer division is not vectorised on CPU). Products stay below 2**31 where it
    # matters: for a repeat outside [0, 255] or a stride outside [0, 65535] a rule with a
    # lower code than OVERLAP fails, whatever this says (status_of keeps the lowest code).
    nrep = jnp.clip(p.repeat, 0, 256)
    later = ((w.repeat + 1) * step <= d_first) & (d_last <= (nrep - 1) * step)
    return jnp.any(w.issued & later & (w.repeat + 1 <= p.repeat - 1)) & jnp.any(lane_mask)


@functools.partial(jax.jit, static_argnums=(0, 1))
def kernel(ins: Instruction, spec: Spec, ub: jax.Array, p: Params) -> KernelResult:
    """Run one call on ``ub``. Returns ``(ub, status, diag, written, undefined)``.

    On the ``"batch"`` path ``diag.need_exact`` (:class:`~ascend_ref.params.Diag`) says the results may differ from the
    general path (a sum guard failed or a read-after-write check needs the exact table):
    rerun such a batch with ``path="fallback"`` (:func:`batched` does).
    """
    note_compile()
    if spec.static_src is not None and ub.dtype.itemsize > spec.size:
        # rows as words of two lanes, for an instruction that takes them (batch._src_words)
        assert ins.pair_src(spec.dtype, spec.option), (ins.api, spec.dtype, spec.option)
        spec = dataclasses.replace(spec, pair_src=True)
    n = ub.shape[0]
    blk, lane_mask, active = _lanes(ins, spec, p)
    bits = _gather_src(ins, spec, ub, p, blk)
    eff, status, diag = _evaluate(ins, spec, p, bits, active, lane_mask, blk,
                                  arithmetic(numerics.Exact, spec, p))
    ok = status == 0
    if spec.compact:
        # with ``info``: the undefined bytes as compact tables too (:func:`compact_undefined`)
        return (tuple((w.addr, w.bits, w.final & ok) for w in eff.writes), status, diag,
                None, compact_undefined(eff.undefined, ok) if spec.info else None)

    out = ub
    written = jnp.zeros((n,), bool) if spec.info else None
    for w in eff.writes:
        byte_addr = w.addr[..., None] + jnp.arange(w.size, dtype=jnp.int32)
        valid = jnp.broadcast_to((w.final & ok)[..., None], byte_addr.shape)
        out = scatter_bytes(out, byte_addr, to_bytes(w.bits, w.size), valid)
        if spec.info:
            assert written is not None
            written = written | mark(n, byte_addr, valid)
    undefined = None
    if spec.info:
        pos = jnp.arange(n, dtype=jnp.int32)
        undefined = jnp.zeros((n,), bool)
        for r in eff.undefined:
            if isinstance(r, UndefinedWords):
                byte_addr = r.addr[..., None] + jnp.arange(r.size, dtype=jnp.int32)
                when = jnp.broadcast_to((r.when & ok)[..., None], byte_addr.shape)
                undefined |= mark(n, byte_addr, when)
            else:
                undefined |= (pos >= r.start) & (pos < r.start + r.nbytes) & r.when & ok
        assert written is not None
        written &= ~undefined
    return out, status, diag, written, undefined


def compact_undefined(undefined: Sequence[Union[Region, UndefinedWords]], ok: jax.Array) -> tuple:
    """A compact kernel's undefined bytes: ``(regions, words)`` with ``regions`` a tuple of
    ``(start, nbytes, when)`` (:class:`Region`) and ``words`` a dict ``{size: ((addr,
    when), ...)}`` (:class:`UndefinedWords` of ``size``-byte words: one entry per word, the
    host expands the bytes of those it marks: a byte table was 4 x the int32 addresses of
    float words for the kernel to write out), ``when`` already and-ed with the call's
    ``ok``; the host turns them into the byte mask the full kernel returns (positions
    outside the UB dropped)."""
    regions: list = []
    words: Dict[int, list] = {}
    for r in undefined:
        if isinstance(r, UndefinedWords):
            words.setdefault(int(r.size), []).append(
                (jnp.asarray(r.addr, jnp.int32), jnp.broadcast_to(r.when & ok, jnp.shape(r.addr))))
        else:
            regions.append((jnp.asarray(r.start, jnp.int32), jnp.asarray(r.nbytes, jnp.int32),
                            jnp.asarray(r.when & ok, bool)))
    return tuple(regions), {size: tuple(t) for size, t in words.items()}


def arithmetic(cls: Type[numerics.Exact], spec: Spec, p: Params) -> numerics.Exact:
    """The arithmetic ``cls`` (:class:`ascend_ref.numerics.Exact` or a subclass) of one call:
    its dtype, product behaviour, saturate flag and path."""
    arith = cls(spec.dtype, Product(p), False if p.saturate is None else p.saturate, spec.path)
    arith.blocked = spec.shared_lanes
    arith.all_active = spec.all_active
    return arith


def _evaluate(ins: Instruction, spec: Spec, p: Params, x: jax.Array, active: jax.Array,
              lane_mask: jax.Array, blk: ArrayLike,
              arith: numerics.Exact) -> Tuple[Effects, jax.Array, Diag]:
    """The instruction's effects over the gathered source ``x`` in arithmetic ``arith``, the
    values its rules read and the call's status: ``(Effects, status, Diag)``."""
    s = spec.size
    eff = ins.effects(spec, p, x, active, arith)

    values = dict(eff.diag)
    need_exact = ~values.pop("exact_ok", jnp.bool_(True))
    src = p.tensor("src")
    if spec.path == "general":
        reads = addressing.read_table(src.addr, p.src_rep_stride, blk, r_max=spec.rows, size=s)
        extents = {"src": Extent(*_extent(reads, active, s))}
    else:
        lo, hi, off_first, off_last = _read_extent(spec, p, blk, lane_mask, active)
        extents = {"src": Extent(lo, hi)}
    for t in ins.operands:
        if t == "src" or t in ins.sized_by_rule:
            continue
        ws = [w for w in eff.writes if w.tensor == t]
        los, his = zip(*[_extent(w.addr, w.issued, w.size) for w in ws]) if ws else ((_BIG,), (0,))
        extents[t] = Extent(jnp.min(jnp.stack(los)), jnp.max(jnp.stack(his)))
    raw_conflict = None
    if ins.overlap == "repeat":
        checked = [_narrowed(w, s) for w in eff.writes if w.repeat is not None]

        def table() -> jax.Array:
            return jnp.any(jnp.stack([
                addressing.read_after_write(w.addr, w.issued, w.repeat, src.addr,
                                            p.src_rep_stride, blk, lane_mask, p.repeat,
                                            size=s, active=active)
                for w in checked] or [jnp.bool_(False)]))

        if spec.path in ("general", "fallback"):
            raw_conflict = table()
        else:
            cand = jnp.any(jnp.stack([_raw_candidate(w, p, blk, lane_mask, off_first, off_last)
                                      for w in checked] or [jnp.bool_(False)]))
            if spec.path == "batch":
                raw_conflict = jnp.bool_(False)
                need_exact = need_exact | cand
            else:
                raw_conflict = jax.lax.cond(cand, table, lambda: jnp.bool_(False))
    spr_write = ins.spr.update(spec, p, x, active, arith, eff) \
        if spec.spr and ins.spr is not None else None
    diag = Diag(need_exact=need_exact, src=extents.get("src"), dst=extents.get("dst"),
                work_tensor=extents.get("work_tensor"), raw_conflict=raw_conflict,
                values=values, spr=spr_write)
    status = status_of(rules(ins, spec), p.with_diag(diag))
    return eff, status, diag


def source_reads(ins: Instruction, spec: Spec,
                 p: Params) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """``(reads, lane_mask, active)`` of a prepared call: the byte each lane of each repeat
    reads ``(r_max, L)``, the lanes the mask enables ``(L,)`` and the lanes that take part
    ``(r_max, L)`` -- :func:`ascend_ref.addressing.source_table` over the call's parameters."""
    blk, lane_mask, active = _lanes(ins, spec, p)
    reads, _ = addressing.source_table(p.tensor("src").addr, p.src_rep_stride, blk,
                                       lane_mask, p.repeat, r_max=spec.rows, size=spec.size)
    return reads, lane_mask, active


def _narrowed(w: Write, s: int) -> Write:
    """``w`` as words of the source width ``s`` (the read-after-write tables match whole
    source words): a 4-byte int32 sum over int16 lanes covers two 2-byte lane addresses."""
    k = w.size // s
    if k <= 1:
        return w
    def split(x: Any) -> Any:
        return jnp.broadcast_to(jnp.asarray(x)[..., None], jnp.shape(w.addr) + (k,))
    addr = w.addr[..., None] + jnp.arange(k, dtype=jnp.int32) * s
    return Write(w.tensor, addr, split(w.bits), s, split(w.issued), split(w.final),
                 None if w.repeat is None else split(w.repeat))


def source_elements(ins: Instruction, spec: Spec, p: Params) -> Tuple[jax.Array, jax.Array]:
    """``(index, active)``, both ``(r_max, L)``: the source element (counted from ``src``'s
    first element) each lane of each repeat reads, and which lanes take part."""
    reads, _, active = source_reads(ins, spec, p)
    return (reads - p.tensor("src").addr) // spec.size, active


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _evaluate_values(ins: Instruction, spec: Spec, cls: Type[numerics.Exact], src: jax.Array,
                     p: Params) -> Tuple[Dict[str, list], jax.Array, Diag]:
    note_compile()
    blk, lane_mask, _ = _lanes(ins, spec, p)
    index, active = source_elements(ins, spec, p)
    if src.shape[0] == 0:              # no element to read: the bounds rules say so (status)
        src = jnp.zeros((1,), src.dtype)
    x = jnp.take(src, jnp.clip(index, 0, src.shape[0] - 1), axis=0)
    eff, status, diag = _evaluate(ins, spec, p, x, active, lane_mask, blk,
                                  arithmetic(cls, spec, p))
    ok = status == 0
    writes: dict = {}
    for w in eff.writes:
        if w.size != spec.tsize(w.tensor):
            raise ConstraintError(Code.DTYPE_UNSUPPORTED, api=ins.api, param=f"{w.tensor}.dtype",
                                  value=f"{w.size}-byte words",
                                  allowed=f"{spec.tsize(w.tensor)}-byte words: evaluate / grad "
                                  "compute in the tensor's own element type (call the public "
                                  "function for a widening integer sum)")
        writes.setdefault(w.tensor, []).append((w.addr, w.bits, w.final & ok))
    return writes, status, diag


def evaluate(prep: "Prepared", src: jax.Array, cls: Type[numerics.Exact]
             ) -> Tuple[Dict[str, list], jax.Array, Diag]:
    """Run a prepared call over a typed source array in the arithmetic ``cls``.

    ``src`` holds the source tensor's elements from its first (``src[k]`` is the element at
    byte ``src.addr + k * itemsize``); ``cls`` is :class:`ascend_ref.numerics.Exact` (then
    ``src`` holds raw bits) or a subclass over other values (:class:`ascend_ref.grad.
    Differentiable`). The same gather table, effects and rules as :func:`kernel`, no UB:
    returns ``(writes, status, diag)`` with ``writes[tensor]`` a list of ``(byte addr, words,
    written)`` (words in the arithmetic's domain; nothing is written when ``status`` is not
    0). A concrete call that breaks a rule raises its :class:`ConstraintError`.
    """
    if _is_concrete(src):
        release_if_needed()
    writes, status, diag = _evaluate_values(prep.ins, prep.spec, cls, src, prep.p)
    check(prep, status, diag)
    return writes, status, diag


def batched(ins: Instruction, spec: Spec, ubs: jax.Array, ps: Any,
            prep: Optional[Callable[[Any], Params]] = None) -> KernelResult:
    """The kernel over a batch (leading axis of ``ubs`` and every ``ps`` leaf), bit-equal to
    the general path: the fast kernel first and, only if some case needs it, the whole batch
    again on the exact fallback (a batch-level ``lax.cond``: one branch runs, also on GPU).

    ``prep``: when given, ``ps`` holds per-case inputs and ``prep(row)`` builds a case's
    parameters inside the vmapped kernel, so values it closes over (parameters every case
    shares) stay unbatched and what depends only on them is computed once per batch."""
    def run(path: str) -> KernelResult:
        sp = dataclasses.replace(spec, path=path)
        if prep is None:
            return jax.vmap(functools.partial(kernel, ins, sp))(ubs, ps)
        return jax.vmap(lambda ub, q: kernel(ins, sp, ub, prep(q)))(ubs, ps)

    if spec.path in ("general", "fallback"):
        return run(spec.path)
    fast = run("batch")
    return jax.lax.cond(jnp.any(fast[2].need_exact), lambda: run("fallback"), lambda: fast)


# ---------------------------------------------------------------- front end ---------------

@dataclass(frozen=True)
class CallInfo:
    """What a call did: ``status`` (0 ok), byte masks ``written`` and ``undefined``, and
    ``spr``, the reduce special registers after the call (:class:`ascend_ref.ReduceSpr`).

    ``undefined`` marks bytes whose value after the call the documentation does not define
    (left unchanged by the reference); compare only ``~undefined`` bytes with a device.
    """

    status: Any
    written: Any
    undefined: Any
    spr: Any = None

    def ranges(self, which: str = "undefined") -> list:
        """``[(start, end), ...]`` byte ranges of ``written`` or ``undefined`` (concrete only)."""
        m = np.asarray(getattr(self, which), bool)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], m.view(np.int8), [0]])))
        return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]

    def __repr__(self) -> str:
        try:
            from .constraints import explain
            st = explain(int(self.status))
            return f"CallInfo(status={st!r}, written={self.ranges('written')}, " \
                   f"undefined={self.ranges('undefined')})"
        except Exception:  # traced
            return "CallInfo(<traced>)"


def _is_concrete(x: object) -> bool:
    return not isinstance(x, jax.core.Tracer)


def int32_stand_in(v: int) -> int:
    """An int32 that every rule judges like ``v``, for ``v`` outside int32.

    It keeps the sign and the residue modulo 1024 (so alignment rules read the same) and is
    at least 2**30 in magnitude (so it is outside every range, the UB and every tensor, like
    ``v``). The error message shows ``v`` itself (see :func:`call`).
    """
    return (2**30 if v > 0 else -(2**30)) + v % 1024


def public_name(ins: Instruction, param: str) -> str:
    """The public function's name for numeric parameter ``param``: the repeat count is
    ``repeat_time`` (Ascend C) / ``repeat_times`` (TIK), the strides keep theirs."""
    return ins.repeat_param if param == "repeat" else param


def _int_param(api: str, name: str, v: object, given: Optional[dict] = None,
               label: Optional[str] = None) -> Union[np.int32, jax.Array]:
    """An int parameter (Python int or integer scalar array, maybe traced) as int32.

    A concrete value outside int32 becomes :func:`int32_stand_in` (recorded in ``given`` to
    report the value given), so the rules pick the code the oracle picks. ``label``: the
    public function's name for it in an error (``repeat_time`` for ``repeat``)."""
    # concrete: judged as the int it holds (an int64 2**32 + 2 is not a repeat of 2)
    v = held_int(v)
    if isinstance(v, (bool, np.bool_)):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=label or name, value=v,
                              allowed="an int")
    if isinstance(v, (int, np.integer)):
        if not -(2**31) <= int(v) < 2**31:
            if given is not None:
                given[name] = int(v)
            return np.int32(int32_stand_in(int(v)))
        return np.int32(v)
    if isinstance(v, jax.core.Tracer) and np.ndim(v) == 0 and \
            jnp.issubdtype(v.dtype, jnp.integer):
        return traced_int32(v)
    raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=label or name, value=v,
                          allowed="an int (or an integer scalar array under jit / vmap)")


def traced_int32(v: jax.Array) -> jax.Array:
    """A traced integer as int32, a value outside int32 (of a uint32 or a 64-bit type)
    replaced by its :func:`int32_stand_in`, as a concrete one is: never wrapped (an int64
    2**32 + 2 is not 2, a uint32 2**31 not negative)."""
    dt = np.dtype(v.dtype)
    if dt.itemsize < 4 or dt == np.int32:
        return v.astype(jnp.int32)
    big = v > np.array(2**31 - 1, dt)
    res = (v % np.array(1024, dt)).astype(jnp.int32)          # the residue, as the stand-in
    out = jnp.where(big, jnp.int32(2**30) + res, v.astype(jnp.int32))
    if np.issubdtype(dt, np.signedinteger) and dt.itemsize > 4:
        out = jnp.where(v < np.array(-(2**31), dt), jnp.int32(-(2**30)) + res, out)
    return out


def _bool_param(api: str, name: str, v: object, faults: dict) -> Union[np.bool_, jax.Array]:
    """A bool parameter (``saturate``): a bool, an int 0 / 1, or a bool or integer scalar
    array (a concrete one holding 0 / 1; a traced one under jit / vmap); anything else
    (``0.5``, ``np.array(5)``, ``"yes"``) is BAD_ARGUMENT, never truthiness. A traced
    integer array is judged when the kernel runs: ``faults[name]`` says it is not 0 / 1 (the
    call's BAD_ARGUMENT status)."""
    if isinstance(v, (bool, np.bool_)) or (is_int(v) and v in (0, 1)):
        return np.bool_(v)
    if isinstance(v, (jax.Array, np.ndarray)) and np.ndim(v) == 0 and \
            (v.dtype == bool or jnp.issubdtype(v.dtype, jnp.integer)):
        if isinstance(v, jax.core.Tracer):
            if v.dtype != bool:
                faults[name] = (v != 0) & (v != 1)
            return v.astype(bool)
        if int(v) in (0, 1):
            return np.bool_(int(v))
    raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=name, value=v,
                          allowed="True / False (or None for the product default)")


def ub_bucket(n: int) -> int:
    """Compiled UB length for a UB of ``n`` bytes: the next power of two (at least 1 KiB).

    Kernels are compiled per UB shape; bucketing keeps the number of executables small when
    UBs of many sizes pass through one process (campaigns, dump verification). Bytes past
    ``n`` are never accessed: the bounds rules use the true length ``p.ub_len``.
    """
    return max(1024, 1 << (int(n) - 1).bit_length())


def pad_ub(ub: jax.Array) -> jax.Array:
    n = ub.shape[-1]
    nb = ub_bucket(n)
    if nb == n:
        return ub
    pad = [(0, 0)] * (ub.ndim - 1) + [(0, nb - n)]
    return jnp.pad(ub, pad)


def _bucket(repeat: Union[int, np.integer, np.ndarray], hi: int) -> int:
    """Static table height for a concrete repeat count: the next power of two, capped."""
    r = max(int(repeat), 1)
    return min(hi, 1 << (r - 1).bit_length())


@dataclass(frozen=True)
class Prepared:
    """A checked call ready for the kernel: static ``spec``, parameters ``p``, the UB."""

    ins: Instruction
    spec: Spec
    p: Params
    ub: Any
    chip_id: str
    given: dict = field(default_factory=dict)   # parameters outside int32: the value given


_PATH: contextvars.ContextVar = contextvars.ContextVar("ascend_ref_path", default="fast")


@contextlib.contextmanager
def use_path(path: str) -> Iterator[None]:
    """Inside this block calls (and :func:`ascend_ref.run_cases`) compile on ``path``:
    ``"general"`` runs the reference algorithms only (what the fast paths are tested
    against); ``"fast"`` is the default."""
    if path not in ("fast", "general", "fallback"):
        raise ValueError(f"path must be 'fast', 'general' or 'fallback', got {path!r}")
    token = _PATH.set(path)
    try:
        yield
    finally:
        _PATH.reset(token)


def run_prepared(prep: Prepared, return_info: bool = False,
                 spr: Any = None) -> Union[jax.Array, Tuple[jax.Array, CallInfo]]:
    """Run a prepared call (:meth:`ascend_ref.registry.Instruction.run`, the body of every
    public instruction function); a concrete call that breaks a rule raises its
    ConstraintError. ``spr``: the reduce special registers before the call
    (:class:`ascend_ref.ReduceSpr`; None: fresh); ``info.spr`` is the state after it."""
    from . import spr as sprs

    out, status, diag, written, undefined = execute(prep)
    check(prep, status, diag)
    if return_info:
        state = sprs.after(sprs.checked(spr, prep.ins.api), diag.spr, prep.spec.dtype,
                           status == 0)
        return out, CallInfo(status, written, undefined, state)
    return out


def check(prep: Prepared, status: jax.Array, diag: Diag) -> None:
    """Raise the call's :class:`ConstraintError` when everything is concrete and the status
    says a rule failed (a traced call keeps its status)."""
    concrete = all(_is_concrete(v) for v in jax.tree_util.tree_leaves(prep.p))
    if concrete and _is_concrete(status) and int(status) != 0:
        _raise_if(prep.ins, prep.spec, prep.p, data=diag, status=int(status),
                  chip_id=prep.chip_id, given=prep.given)


def execute(prep: Prepared) -> Tuple[jax.Array, jax.Array, Diag, Optional[jax.Array],
                                     Optional[jax.Array]]:
    """Run a prepared call (UB padded to its compile bucket and cut back)."""
    if _is_concrete(prep.ub):
        release_if_needed()
    n = prep.ub.shape[-1]
    padded = pad_ub(prep.ub)
    out, status, diag, written, undefined = kernel(prep.ins, prep.spec, padded, prep.p)
    if padded is not prep.ub:
        out = out[..., :n]
        written = None if written is None else written[..., :n]
        undefined = None if undefined is None else undefined[..., :n]
    return out, status, diag, written, undefined


def host_constraints(ins: Instruction, params: Sequence[str]) -> list:
    """The structural checks :func:`prepare` makes in Python, in the order it makes them (the
    first that fails raises, before the kernel): :class:`~ascend_ref.constraints.Constraint`
    s. ``params``: the call's numeric parameter names (``"repeat"`` first)."""
    def host(code: Code, param: str, doc: str) -> Constraint:
        return Constraint(HOST, code, param, doc)

    ops = ins.operands
    out = [host(Code.BAD_ARGUMENT, "ub", "ub is a 1-D uint8 array")]
    out += [host(Code.BAD_ARGUMENT, t, f"{t} is an ascend_ref.Tensor") for t in ops]
    out.append(host(Code.API_UNSUPPORTED, "chip", f"the product has {ins.api} (a row under "
                                                  f"[apis] in its profile)"))
    out += [host(Code.DTYPE_UNSUPPORTED, f"{t}.dtype", f"{t}'s dtype is one the product lists "
                                                        f"for {ins.api}") for t in ops]
    out += [host(Code.DTYPE_MISMATCH, f"{t}.dtype", f"{t}'s dtype is src's") for t in ops
            if t != "src"]
    words = "[mask_h, mask_l]" if ins.word_order == "tik" else \
        "[lanes 0-63, lanes 64-127] (one word for a 32-bit type)"
    if not ins.count_form:            # the count form has no mask parameter
        out += [host(Code.BAD_ARGUMENT, "mask", "mask is an int (continuous), a list of ints "
                                                "(bit mode) or uint32[4] lane words"),
                host(Code.MASK_RANGE, "mask", "a continuous mask is in [0, 2**31)"),
                host(Code.MASK_BITS, "mask", f"bit mode: the words {words}, each in [0, 2**64)")]
        if "counter" in ins.mask_modes:
            out += [host(Code.MASK_RANGE, "mask", "counter mode: CounterMask(count), count in "
                                                  "[0, 2**64) (the low 64 bits)"),
                    host(Code.MASK_MODE, "mask", f"counter mode only on a product with "
                                                 f"SetMaskCount (its profile's "
                                                 f"{masks.COUNTER_FACT} = \"supported\")")]
        else:
            out.append(host(Code.MASK_MODE, "mask", f"no counter mode: {ins.api}'s page does "
                                                    f"not document SetMaskCount / isSetMask"))
    out += [host(Code.BAD_ARGUMENT, public_name(ins, k), f"{public_name(ins, k)} is an int")
            for k in params]
    for t in ops:
        out += [host(Code.BAD_ARGUMENT, f"{t}.addr", f"{t}.addr is an int"),
                host(Code.BAD_ARGUMENT, f"{t}.size", f"{t}.size is an int")]
    if ins.saturating:
        out.append(host(Code.BAD_ARGUMENT, "saturate", "saturate is True, False or None"))
    return out


def prepare(ins: Instruction, ub: object, tensors: dict, mask: object, params: dict, *,
            chip: Union[str, ChipProfile], option: str = "", saturate: object = None,
            info: bool = False, repeat_hi: Optional[int] = None, ub_base: object = 0,
            fields: Sequence[ProfileField] = (), spr: bool = False,
            faults: Optional[dict] = None) -> Prepared:
    """Structural checks in Python and the kernel's parameters (raises ConstraintError).
    ``fields``: the instruction's declared profile fields (:func:`product_params`);
    ``faults``: traced arguments outside the kernel's parameters that the caller could not
    judge, by name (a traced bool each, True: outside what the argument takes), judged by
    the instruction's rules that read them (:func:`judged`)."""
    api = ins.api
    prof = get_chip(chip, api=api)
    ub = as_ub(ub, api)
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=name, value=t,
                                  allowed="an ascend_ref.Tensor(addr, dtype, size)")
    dtype = tensors["src"].dtype
    supported = prof.dtypes(api)
    if not supported:
        raise ConstraintError(Code.API_UNSUPPORTED, api=api, param="chip", value=prof.id,
                              allowed=f"a product with {api}: {_products_with(api)}",
                              chip=prof.id)
    # the documented (dst, src) pairs (``[dst_dtypes]``): dst may take a paired type
    dst_types = list(supported) + [d for d in prof.dst_dtypes.get(api, {}).values()
                                   if d not in supported]
    for name, t in tensors.items():
        allowed = dst_types if name == "dst" else list(supported)
        if t.dtype not in allowed:
            raise ConstraintError(Code.DTYPE_UNSUPPORTED, api=api, param=f"{name}.dtype",
                                  value=t.dtype, allowed=f"one of {allowed}",
                                  chip=prof.id)
    dst_dtype = prof.dst_dtype(api, dtype)
    for name, t in tensors.items():
        want = dst_dtype if name == "dst" else dtype
        if t.dtype != want:
            article = "an" if dtype[0] in "aeiou" else "a"        # an int16, a float16
            why = "the dtype of src" if want == dtype else \
                f"the dst type {api} pairs with {article} {dtype} src on this product"
            raise ConstraintError(Code.DTYPE_MISMATCH, api=api, param=f"{name}.dtype",
                                  value=t.dtype, allowed=f"{want} ({why})", chip=prof.id)
    if ins.count_form:          # no mask parameter: every lane of the first count elements
        mask, params = 256 // itemsize(dtype), {**params, "src_rep_stride": 8}
    no_bits = ConstraintError(Code.BAD_ARGUMENT, api=api, param="mask", value=mask,
                              allowed="an int: the continuous mode only (this API has no bit "
                                      "mode)", chip=prof.id)
    if "bits" not in ins.mask_modes and (isinstance(mask, (list, tuple)) or (
            isinstance(mask, (np.ndarray, jax.Array)) and mask.ndim >= 1)):
        raise no_bits        # any bit-mode form, before its words are judged (as the oracle)
    m = masks.parse(mask, dtype, api=api, chip=prof.id, word_order=ins.word_order)
    if m.mode == "counter" and "counter" not in ins.mask_modes:
        raise ConstraintError(Code.MASK_MODE, api=api, param="mask", value=mask,
                              allowed=f"a normal-mode mask: {api}'s page does not document the "
                                      f"counter mode (SetMaskCount / isSetMask)",
                              chip=prof.id, hint="Pass the per-repeat mask and repeat count")
    if m.mode == "counter" and prof.facts.get(masks.COUNTER_FACT) != "supported":
        raise ConstraintError(Code.MASK_MODE, api=api, param="mask", value=mask,
                              allowed=f"a normal-mode mask on {prof.id} (SetMaskCount.md: "
                                      f"not supported); counter mode on "
                                      f"{_products_counter()}", chip=prof.id,
                              hint="Pass mask = L and repeat_time = ceil(count / L) with a "
                                   "second call for the partial last repeat")
    if m.mode not in ins.mask_modes:
        raise no_bits

    given: dict = {}
    args: dict = {}
    extra: dict = {}
    for k, v in params.items():
        (args if k in ARGS else extra)[k] = _int_param(api, k, v, given, public_name(ins, k))
    operands = {name: Operand(_int_param(api, f"{name}.addr", t.addr, given),
                              _int_param(api, f"{name}.size", t.size, given))
                for name, t in tensors.items()}
    option = option or ins.fixed_option
    chip_facts = product_params(prof, dtype, option, fields)
    option_index = None
    if ins.traced_options:              # the option is data: one compiled kernel for all
        option_index = np.int32(ins.traced_options.index(option))
        option = ""
    sat = None
    faults = dict(faults or {})            # traced arguments the caller judged (stride_unit)
    if m.fault is not None:
        faults["mask"] = m.fault
    if ins.saturating:
        default = prof.saturate_default and dtype == "float16"   # half only
        sat = _bool_param(api, "saturate", default if saturate is None else saturate, faults)
    repeat = args.pop("repeat")
    lo, hi = ins.repeat_range(Spec(api, dtype, 1, option))
    hi = repeat_hi or hi
    if m.mode == "counter":
        given.pop("repeat", None)            # ignored: no message reports it
        # the repeat count derives from the count (repeat_time is ignored: "该值不生效"); a
        # count past the repeat range is the MASK_RANGE rule's (count clipped here only so
        # that the table stays within range)
        lanes = 256 // itemsize(dtype)
        if isinstance(m.value, np.ndarray):
            n = min(int(m.value[0]) | int(m.value[1]) << 32, lanes * hi + 1)
            repeat = np.int32(min(masks.counter_repeats(n, lanes), hi))
        else:
            repeat = jnp.minimum(masks.counter_repeats(masks.counter_count(m.value, lanes * hi),
                                                       lanes), hi).astype(jnp.int32)
    traced_repeat = not _is_concrete(repeat)
    r_max = hi if traced_repeat else _bucket(np.clip(repeat, 0, hi), hi)
    spec = Spec(api, dtype, r_max, option, traced_repeat, info, _PATH.get(),
                dst_dtype="" if dst_dtype == dtype else dst_dtype,
                spr=bool(spr and ins.spr is not None), count_form=ins.count_form)
    p = Params(repeat=repeat, mask=m.value, mask_count=np.bool_(m.mode == "count"),
               mask_counter=np.bool_(m.mode == "counter"),
               chip=chip_facts, ub_len=np.int32(ub.shape[-1]),
               ub_base=_int_param(api, "ub_base", ub_base), chip_ub=np.int32(prof.ub_bytes),
               src=operands.get("src"), dst=operands.get("dst"),
               work_tensor=operands.get("work_tensor"),
               dst_rep_stride=args.get("dst_rep_stride"),
               src_blk_stride=args.get("src_blk_stride"),
               src_rep_stride=args.get("src_rep_stride"),
               option=option_index, saturate=sat, extra=extra, faults=faults)
    return Prepared(ins, spec, p, ub, prof.id, given)


def _raise_if(ins: Instruction, spec: Spec, p: Params, data: Diag, status: int,
              chip_id: str, given: Optional[dict] = None) -> None:
    """Evaluate the rules on the concrete values (and kernel diagnostics); raise the first.

    ``given``: parameters outside int32 (the kernel saw stand-ins); the message shows them."""
    vals = jax.tree_util.tree_map(np.asarray, p.with_diag(data))
    bad = first_failure(rules(ins, spec), vals)
    if bad is None and status:
        raise ConstraintError(Code(status), api=ins.api, param="?", value="?",
                              allowed="see ascend_ref.constraints.explain", chip=chip_id)
    if bad is not None:
        value = bad.value(vals)
        if given:
            try:
                value = bad.value(vals.overridden(given))   # Python ints: exact, no wrap
            except Exception:                            # noqa: BLE001 - keep the stand-in
                pass
        raise ConstraintError(bad.code, api=ins.api, param=bad.param, value=value,
                              allowed=bad.allowed(vals), chip=chip_id, hint=bad.hint)


def judged(p: Params, name: str) -> Flag:
    """The traced-argument rule of ``name``: holds unless ``p.faults[name]`` says its value
    is outside what it takes (True where the argument was concrete: judged before)."""
    fault = p.faults.get(name)
    return np.bool_(True) if fault is None else ~fault


def _products_counter() -> list:
    from .chips import chips

    return [c for c in chips() if get_chip(c).facts.get(masks.COUNTER_FACT) == "supported"]


def _products_with(api: str) -> list:
    from .chips import chips

    return [c for c in chips() if get_chip(c).dtypes(api)]


jax.tree_util.register_pytree_node(
    CallInfo, lambda c: ((c.status, c.written, c.undefined, c.spr), None),
    lambda _, ch: CallInfo(*ch))
