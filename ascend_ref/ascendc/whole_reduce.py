"""WholeReduceMin / WholeReduceMax / WholeReduceSum (ReduceRepeat) — seed 000, SPEC §4.1–4.2.

Each repeat reduces the lanes it reads (128 half / 64 float; ``mask`` chooses which take part)
to one result slot at ``dst + r * dst_rep_stride * slot``:

============================  ===================  =================================
order                         slot (memory order)  slot = dst unit = dst alignment
============================  ===================  =================================
ORDER_VALUE_INDEX (default)   [value, index]       2·s  (4 B half, 8 B float)
ORDER_INDEX_VALUE             [index, value]       2·s
ORDER_ONLY_VALUE              [value]              s
ORDER_ONLY_INDEX              [index as uint32]    4 B
WholeReduceSum                [tree sum]           sizeof(dst): s, or 4 B for the
                                                   Ascend 950 int16 / uint16 sums
============================  ===================  =================================

The index is the lane within the repeat (0…L−1), stored as raw integer bits in a slot of
the value's width (read a half slot back with ``.view(np.uint16)``). Min/max: first NaN
wins, −0 < +0, the smallest lane among equals. Sum: pairwise tree over all L lanes, masked
lanes +0, every add rounded (saturating half if ``saturate``); Ascend 950 also sums integers
(int16 -> int32, uint16 -> uint32, int32, uint32: the products' ``[dst_dtypes]`` pairs;
modulo 2^32, docs/SEMANTICS.md §M).

Example (seed 000): 512 halves, repeat 0 all 10 except 1 at lane 52.

>>> import numpy as np, ascend_ref as ar
>>> x = np.full(512, 10, np.float16); x[52] = 1
>>> ub = ar.store(ar.new_ub("atlas_a2"), 0, x)
>>> ub = ar.ascendc.whole_reduce_min(ub, ar.Tensor(1024, "half", 8), ar.Tensor(0, "half", 512),
...                                  128, 4, 1, 1, 8, chip="atlas_a2")
>>> out = ar.load(ub, 1024, "float16", 2)
>>> float(out[0]), int(out.view(np.uint16)[1]), float(out[1])
(1.0, 52, 3.0994415283203125e-06)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Tuple, Union

import jax.numpy as jnp
from jax import lax

from .. import numerics, registry
from ..argtypes import CallResult, ChipLike, IntLike, MaskLike, SaturateLike, UBLike
from ..constraints import Code, ConstraintError, HostCheck
from ..engine import Effects, gate, option_value
from ..enums import ReduceOrder
from ..spr import ReduceSpr
from ..ub import Tensor, itemsize
from . import _spr_hooks as sprs
from ._slots import counter_undefined, declare, instruction, params, slot_write

if TYPE_CHECKING:
    import jax

    from ..engine import Spec
    from ..params import Params
    from ..engine import EffectsFn

#: Slot layout per order: the words of one result slot, in memory order.
SLOTS = {
    ReduceOrder.ORDER_VALUE_INDEX: ("value", "index"),
    ReduceOrder.ORDER_INDEX_VALUE: ("index", "value"),
    ReduceOrder.ORDER_ONLY_VALUE: ("value",),
    ReduceOrder.ORDER_ONLY_INDEX: ("index32",),
}


def _slot_words(order: ReduceOrder, size: int) -> Tuple[str, ...]:
    """Slot words of ``size`` bytes; a uint32 index in a 16-bit slot is two words [lo, hi]."""
    return tuple(f.name for f in minmax_layout(size, order).dst)


def minmax_layout(dtype: Union[int, str], order: Union[str, ReduceOrder]) -> registry.Layout:
    """The result slot of WholeReduceMin / Max for ``order`` (table above): value and index
    words of the element size; ORDER_ONLY_INDEX holds a uint32 index (two words ``[index,
    zero]`` for a 16-bit type)."""
    s = dtype if isinstance(dtype, int) else itemsize(dtype)
    words = []
    for f in SLOTS[ReduceOrder(order)]:
        words += [("index", "index"), ("zero", "index")] if f == "index32" and s == 2 else \
            [("index", "index")] if f == "index32" else [(f, f)]
    return registry.Layout(registry.fields(*words, nbytes=s), per_repeat=True)


def sum_layout_of(api: str) -> Callable[[str, Any], registry.Layout]:
    """The result slot of a ReduceRepeat<SUM> API: one word of dst's type -- the source's,
    or the type the products pair with it (:func:`ascend_ref.registry.dst_dtype`: on Ascend
    950 an int16 / uint16 source sums into int32 / uint32, a 4-byte slot, the dst unit and
    alignment, ``sizeof`` of the dst type as the implementation checks it)."""
    def layout(dtype: Any, option: Any = None) -> registry.Layout:
        size = itemsize(registry.dst_dtype(api, str(dtype)))
        return registry.Layout(registry.fields(("sum", "value"), nbytes=size), per_repeat=True)

    return layout


sum_layout = sum_layout_of("whole_reduce_sum")

#: Ascend 950 ReduceRepeat<SUM> over int32 / uint32 lanes: 64 lanes can leave 32 bits; no
#: page says what happens (16-bit lanes widen to 32 bits and cannot overflow)
INT_OVERFLOW = registry.ProfileField(
    "int_sum_overflow", ("wrap", "saturate"),
    "ReduceRepeat<SUM> of int32 / uint32 lanes whose sum leaves 32 bits: modulo 2^32, or "
    "clamped to the type's range at every add of the tree")


def _sat_add(signed: bool) -> numerics.Add2:
    """A two's-complement add clamped to int32 (``signed``) or uint32, on uint32 words."""
    def add2(a: jax.Array, b: jax.Array) -> jax.Array:
        r = a + b                                                       # modulo 2^32
        if not signed:
            return jnp.where(r < a, jnp.uint32(0xFFFFFFFF), r)
        sa, sb, sr = (lax.bitcast_convert_type(v, jnp.int32) for v in (a, b, r))
        over = ((sa ^ sr) & (sb ^ sr)) < 0
        clamp = jnp.where(sa < 0, jnp.uint32(0x80000000), jnp.uint32(0x7FFFFFFF))
        return jnp.where(over, clamp, r)

    return add2


def int_sums(spec: Spec, p: Params, bits: jax.Array, active: jax.Array) -> jax.Array:
    """Integer ReduceRepeat<SUM> of each repeat (uint32 words of the dst type): int16 lanes
    sign-extended, uint16 zero-extended to 32 bits (``Reg::ReduceSum<int32, int16>``), masked
    lanes 0 (Reg Reduce.md: "不参与计算的元素，被当作0"), the sum modulo 2^32 -- the same in
    any order -- or, where the profile's ``int_sum_overflow`` is ``"saturate"``, the binary
    tree of clamped adds (ReduceRepeat.md: "二叉树累加")."""
    if spec.dtype == "int16":
        v = lax.bitcast_convert_type(lax.bitcast_convert_type(bits, jnp.int16).astype(jnp.int32),
                                     jnp.uint32)
    else:
        v = bits.astype(jnp.uint32)
    v = jnp.where(active, v, jnp.uint32(0))
    total = jnp.sum(v, axis=-1, dtype=jnp.uint32)
    if itemsize(spec.dtype) == 4:             # only 32-bit lanes can overflow
        clamped = numerics.tree_sum(v, _sat_add(spec.dtype == "int32"))
        total = jnp.where(INT_OVERFLOW.holds(p, "saturate"), clamped, total)
    return total


#: the orders as the kernel parameter ``p.option`` indexes them: the order is data, so one
#: compiled kernel serves all four slot layouts
ORDERS = tuple(o.value for o in SLOTS)


def _minmax(kind: str) -> EffectsFn:
    def effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                arith: numerics.Exact) -> Effects:
        value, index, _ = arith.extreme(bits, active, kind)
        value = arith.nan_result(value)
        parts = {"value": value, "index": arith.word(index), "zero": jnp.zeros_like(value)}
        names = [_slot_words(ReduceOrder(o), spec.size) for o in ORDERS]
        # a slot of up to two words: word f of the call's order, where that order has one
        words = jnp.stack([
            option_value(p, [parts[n[f]] if f < len(n) else parts["zero"] for n in names])
            for f in range(2)], axis=-1)
        nf = option_value(p, [len(n) for n in names])
        keep = jnp.broadcast_to(jnp.arange(2) < nf, words.shape)
        runs, undefined = gate(spec, p)
        undefined += counter_undefined(spec, p)
        return Effects([slot_write(spec, p, words, runs, keep, slot_words=nf)], undefined)

    return effects


def _sum_effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                 arith: numerics.Exact) -> Effects:
    if not numerics.is_float(spec.dtype):    # Ascend 950 integer sums (exact, no arithmetic)
        total, ok = int_sums(spec, p, bits, active), jnp.bool_(True)
    else:
        (total,), ok = arith.sums(lambda s: (numerics.row_tree(s, bits, active),))
    runs, undefined = gate(spec, p)
    undefined += counter_undefined(spec, p)
    return Effects([slot_write(spec, p, total[:, None], runs)], undefined, {"exact_ok": ok})


def _order_on_product(ins: registry.Instruction, prof: Any, tensors: Mapping[str, Any],
                      order: str) -> None:
    """ORDER_UNSUPPORTED: the product lists the orders it has (checked after the dtypes:
    a bad dtype reports its own, lower, code)."""
    src, dst = tensors.get("src"), tensors.get("dst")
    types_ok = getattr(src, "dtype", None) in prof.dtypes(ins.name) and \
        getattr(dst, "dtype", None) == getattr(src, "dtype", None)
    if types_ok and order not in prof.orders:
        raise ConstraintError(Code.ORDER_UNSUPPORTED, api=ins.name, param="order",
                              value=order, allowed=f"one of {list(prof.orders)}",
                              chip=prof.id)


#: ORDER_UNSUPPORTED on a product without the order (its profile's ``orders``)
ORDER_ON_PRODUCT = HostCheck(Code.ORDER_UNSUPPORTED, "order",
                             "order is one the product lists (its profile's orders; checked "
                             "once the dtypes are supported)", _order_on_product)

_WR_MIN = declare(instruction("whole_reduce_min", _minmax("min"), minmax_layout,
                              traced_options=ORDERS, spr=sprs.whole_reduce_sets("min")),
                  kind=lambda o: "min", layout=minmax_layout, option=registry.ORDER,
                  checks=(ORDER_ON_PRODUCT,), profile_fields=sprs.MAXMIN_FIELDS, summary="WholeReduceMin (ReduceRepeat<MIN>)")
_WR_MAX = declare(instruction("whole_reduce_max", _minmax("max"), minmax_layout,
                              traced_options=ORDERS, spr=sprs.whole_reduce_sets("max")),
                  kind=lambda o: "max", layout=minmax_layout, option=registry.ORDER,
                  checks=(ORDER_ON_PRODUCT,), profile_fields=sprs.MAXMIN_FIELDS, summary="WholeReduceMax (ReduceRepeat<MAX>)")
_WR_SUM = declare(instruction("whole_reduce_sum", _sum_effects, sum_layout, saturating=True),
                  kind=lambda o: "sum", layout=sum_layout, profile_fields=(INT_OVERFLOW,),
                  summary="WholeReduceSum (ReduceRepeat<SUM>)")


def whole_reduce_min(ub: UBLike, dst: Tensor, src: Tensor, mask: MaskLike, repeat_time: IntLike,
                     dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike,
                     order: Union[str, ReduceOrder] = ReduceOrder.ORDER_VALUE_INDEX, *,
                     chip: ChipLike, return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult:
    """WholeReduceMin: per repeat, the minimum of the active lanes and its lane index.

    ``ub`` → new ``ub`` (pure). ``return_info=True`` → ``(ub, CallInfo)`` with byte masks
    ``written`` / ``undefined``. Raises :class:`ascend_ref.ConstraintError` on a bad call.
    """
    return _WR_MIN.run(ub, {"dst": dst, "src": src}, mask,
                       params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                       chip=chip, option=order, return_info=return_info, spr=spr)


def whole_reduce_max(ub: UBLike, dst: Tensor, src: Tensor, mask: MaskLike, repeat_time: IntLike,
                     dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike,
                     order: Union[str, ReduceOrder] = ReduceOrder.ORDER_VALUE_INDEX, *,
                     chip: ChipLike, return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult:
    """WholeReduceMax: per repeat, the maximum of the active lanes and its lane index."""
    return _WR_MAX.run(ub, {"dst": dst, "src": src}, mask,
                       params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                       chip=chip, option=order, return_info=return_info, spr=spr)


def whole_reduce_sum(ub: UBLike, dst: Tensor, src: Tensor, mask: MaskLike, repeat_time: IntLike,
                     dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike, *,
                     chip: ChipLike, saturate: SaturateLike = None,
                     return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult:
    """WholeReduceSum: per repeat, the pairwise-tree sum of all lanes (masked lanes +0).

    ``saturate`` (half only) defaults to the product profile's ``saturate_default``.
    """
    return _WR_SUM.run(ub, {"dst": dst, "src": src}, mask,
                       params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                       chip=chip, saturate=saturate, return_info=return_info, spr=spr)
