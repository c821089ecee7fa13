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
WholeReduceSum                [tree sum]           s
============================  ===================  =================================

The index is the lane within the repeat (0…L−1), stored as raw integer bits in a slot of
the value's width (read a half slot back with ``.view(np.uint16)``). Min/max: first NaN
wins, −0 < +0, the smallest lane among equals. Sum: pairwise tree over all L lanes, masked
lanes +0, every add rounded (saturating half if ``saturate``).

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

import jax.numpy as jnp

from .. import numerics
from ..constraints import Code
from ..engine import Effects, call, gate
from ..enums import ReduceOrder, parse_enum
from ._slots import instruction, params, slot_write

#: Slot layout per order: the words of one result slot, in memory order.
SLOTS = {
    ReduceOrder.ORDER_VALUE_INDEX: ("value", "index"),
    ReduceOrder.ORDER_INDEX_VALUE: ("index", "value"),
    ReduceOrder.ORDER_ONLY_VALUE: ("value",),
    ReduceOrder.ORDER_ONLY_INDEX: ("index32",),
}


def _slot_words(order: ReduceOrder, size: int) -> tuple:
    """Slot words of ``size`` bytes; a uint32 index in a 16-bit slot is two words [lo, hi]."""
    words = []
    for f in SLOTS[order]:
        words += ["index", "zero"] if f == "index32" and size == 2 else [f]
    return tuple(w if w != "index32" else "index" for w in words)


def _minmax(kind: str):
    def effects(spec, p, bits, active):
        order = ReduceOrder(spec.option)
        value, index, _ = numerics.extreme(bits, active, kind, spec.dtype, spec.path)
        value = numerics.nan_result(value, spec.dtype, spec.chip)
        ut = value.dtype
        parts = {"value": value, "index": index.astype(ut), "zero": jnp.zeros_like(value)}
        words = jnp.stack([parts[w] for w in _slot_words(order, spec.size)], axis=-1)
        runs, undefined = gate(spec, p)
        return Effects([slot_write(spec, p, words, runs)], undefined)

    return effects


def _sum_effects(spec, p, bits, active):
    (total,), ok = numerics.guarded_sums(
        lambda s: (numerics.tree_sum(s.enter(bits, active), s.add),),
        spec.dtype, spec.chip, p["saturate"], spec.path)
    runs, undefined = gate(spec, p)
    return Effects([slot_write(spec, p, total[:, None], runs)], undefined, {"exact_ok": ok})


_WR_MIN = instruction("whole_reduce_min", _minmax("min"),
                      lambda spec: len(_slot_words(ReduceOrder(spec.option), spec.size)))
_WR_MAX = instruction("whole_reduce_max", _minmax("max"),
                      lambda spec: len(_slot_words(ReduceOrder(spec.option), spec.size)))
_WR_SUM = instruction("whole_reduce_sum", _sum_effects, lambda spec: 1, saturating=True)


def _run_minmax(ins, ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                src_rep_stride, order, chip, return_info):
    from ..chips import chip as get_chip
    from ..constraints import ConstraintError

    prof = get_chip(chip)
    order = parse_enum(ReduceOrder, order, api=ins.api, param="order",
                       code=Code.ORDER_UNSUPPORTED, chip=prof)
    types_ok = getattr(src, "dtype", None) in prof.dtypes(ins.api) and \
        getattr(dst, "dtype", None) == src.dtype  # else call() reports the lower code
    if types_ok and order.name not in prof.orders:
        raise ConstraintError(Code.ORDER_UNSUPPORTED, api=ins.api, param="order",
                              value=order.name, allowed=f"one of {list(prof.orders)}",
                              chip=prof.id)
    return call(ins, ub, {"dst": dst, "src": src}, mask,
                params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                chip=prof, option=order.value, return_info=return_info)


def whole_reduce_min(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, order=ReduceOrder.ORDER_VALUE_INDEX, *, chip,
                     return_info=False):
    """WholeReduceMin: per repeat, the minimum of the active lanes and its lane index.

    ``ub`` → new ``ub`` (pure). ``return_info=True`` → ``(ub, CallInfo)`` with byte masks
    ``written`` / ``undefined``. Raises :class:`ascend_ref.ConstraintError` on a bad call.
    """
    return _run_minmax(_WR_MIN, ub, dst, src, mask, repeat_time, dst_rep_stride,
                       src_blk_stride, src_rep_stride, order, chip, return_info)


def whole_reduce_max(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, order=ReduceOrder.ORDER_VALUE_INDEX, *, chip,
                     return_info=False):
    """WholeReduceMax: per repeat, the maximum of the active lanes and its lane index."""
    return _run_minmax(_WR_MAX, ub, dst, src, mask, repeat_time, dst_rep_stride,
                       src_blk_stride, src_rep_stride, order, chip, return_info)


def whole_reduce_sum(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, *, chip, saturate=None, return_info=False):
    """WholeReduceSum: per repeat, the pairwise-tree sum of all lanes (masked lanes +0).

    ``saturate`` (half only) defaults to the product profile's ``saturate_default``.
    """
    return call(_WR_SUM, ub, {"dst": dst, "src": src}, mask,
                params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                chip=chip, saturate=saturate, return_info=return_info)
