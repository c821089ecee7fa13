"""PairReduceSum / ReducePairElem<ReduceType::SUM> — asc-devkit ReducePairElem.md, SEMANTICS §L.

Each repeat reads its L lanes (128 half / 64 float; ``src_blk_stride`` in DataBlocks,
``src_rep_stride`` in DataBlocks) and adds adjacent pairs: output ``j`` is
``lane[2j] + lane[2j+1]``, one add rounded to the type (saturating half if ``saturate``).
The L/2 outputs of repeat ``r`` fill the 128-byte slot at ``dst + r * dst_rep_stride * 128``
(the unit is 128 bytes for half and float); dst and src are 32-byte aligned.

Masked lanes, per product (profile fields this instruction declares):

* ``pair_masked_pair`` — both lanes of a pair masked: ``"keep"`` (Atlas A2 / A3, inference AI
  Core; Atlas training assumed): that dst element is not written; ``"zero"`` (Ascend 950,
  Atlas 200I/500 A2): written as 0, so every repeat writes its whole slot.
* ``pair_masked_lane`` — one lane masked: ``"add_zero"`` (assumed everywhere; the 950
  register page counts a masked element as 0): the active lane + (+0), the same add as any
  pair; ``"passthrough"``: the active lane's bits unchanged (what ``verify --audit`` reruns
  with).

The older name ``PairReduceSum(dst, src, repeatTime, mask, ...)`` puts the repeat count before
the mask; ``ReducePairElem<SUM>(dst, src, mask, repeatTime, ...)`` after it.

Example (ReducePairElem.md), under both names: mask 128 and one repeat, in each one's order.

>>> import numpy as np, ascend_ref as ar
>>> x = np.zeros(128, np.float16); x[:16] = [1, 1, 1, -1, 2, 2, -1, 2, 3, 3, 3, -1, 4, 4, -2, 4]
>>> dst, src = ar.Tensor(256, "half", 64), ar.Tensor(0, "half", 128)
>>> ub = ar.ascendc.reduce_pair_elem(ar.store(ar.new_ub("atlas_a2"), 0, x), dst, src,
...                                  128, 1, 1, 1, 8, chip="atlas_a2")     # mask, repeat
>>> ar.load(ub, 256, "float16", 8).tolist()
[2.0, 0.0, 4.0, 1.0, 6.0, 2.0, 8.0, 2.0]
>>> old = ar.ascendc.pair_reduce_sum(ar.store(ar.new_ub("atlas_a2"), 0, x), dst, src,
...                                  1, 128, 1, 1, 8, chip="atlas_a2")     # repeat, mask
>>> bool((np.asarray(old) == np.asarray(ub)).all())
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, Union

import jax.numpy as jnp

from .. import numerics, registry
from ..argtypes import CallResult, ChipLike, IntLike, MaskLike, SaturateLike, UBLike
from ..constraints import Code, ConstraintError, HostCheck
from ..engine import Effects, Instruction as Kernel, Spec, gate
from ..enums import ReduceType, parse_enum
from ..params import Params
from ..spr import ReduceSpr
from ..ub import Tensor, itemsize
from ._slots import COUNTER_FIELDS, PARAMS, counter_undefined, params, repeat_range, slot_write

if TYPE_CHECKING:
    import jax

SLOT_BYTES = registry.REPEAT_BYTES // 2      # one repeat's L/2 sums; dstRepStride's unit
MASKED_PAIR = registry.ProfileField(
    "pair_masked_pair", ("keep", "zero"),
    "PairReduceSum: a pair whose two lanes are masked -- its dst element kept or written 0")
MASKED_LANE = registry.ProfileField(
    "pair_masked_lane", ("add_zero", "passthrough"),
    "PairReduceSum: a pair with one lane masked -- the active lane + (+0), or its bits")


def layout(dtype: Any, option: Any = None) -> registry.Layout:
    """L/2 pair sums per repeat: a 128-byte slot of ``s``-byte words, pair j at ``+ j·s``."""
    s = itemsize(dtype)
    return registry.Layout(
        registry.fields(*[(f"p{j}", "value") for j in range(SLOT_BYTES // s)], nbytes=s),
        per_repeat=True)


def _effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
             arith: numerics.Exact) -> Effects:
    def pair_sums(s: numerics.Summation) -> Tuple[jax.Array]:   # (or the arithmetic)
        x = s.enter(bits, active)                 # masked lanes: +0
        return (s.add(x[:, 0::2], x[:, 1::2]),)

    (sums,), ok = arith.sums(pair_sums)
    # each repeat's own lanes (the same mask for every repeat, but for counter mode's last)
    even, odd = active[:, 0::2], active[:, 1::2]
    # the product's rules are data (one kernel for every product): both choices computed
    alone = jnp.where(even, bits[:, 0::2], bits[:, 1::2])
    sums = jnp.where(MASKED_LANE.holds(p, "passthrough") & (even ^ odd), alone, sums)
    has_lane = even | odd
    zero = MASKED_PAIR.holds(p, "zero")
    words = jnp.where(has_lane, sums, jnp.zeros_like(sums))
    runs, undefined = gate(spec, p)
    undefined += counter_undefined(spec, p)
    # "keep": an empty pair is not written at all (not an access either); "zero": written 0
    return Effects([slot_write(spec, p, words, runs, keep=has_lane | zero)], undefined,
                   {"exact_ok": ok})


_KERNEL = Kernel(
    api="pair_reduce_sum", operands=("dst", "src"), repeat_param="repeat_time",
    repeat_range=lambda spec: repeat_range(),
    strides=("dst_rep_stride", "src_blk_stride", "src_rep_stride"),
    align=lambda spec: {"src": registry.BLOCK, "dst": registry.BLOCK},   # "需要32字节对齐"
    effects=_effects, saturating=True, mask_modes=("count", "bits", "counter"))

def _sum_only(reduce_type: Any, chip: Any) -> None:
    code, value = Code.REDUCE_TYPE, reduce_type
    try:
        rt: Any = parse_enum(ReduceType, reduce_type, api="reduce_pair_elem",
                             param="reduce_type", code=Code.REDUCE_TYPE, chip=chip)
        value = rt.value
    except ConstraintError as e:         # no ReduceType (BAD_ARGUMENT for a non-string)
        code, rt = e.code, None
    if rt is not ReduceType.SUM:
        raise ConstraintError(code, api="reduce_pair_elem", param="reduce_type", value=value,
                              allowed="SUM (ReducePairElem supports only ReduceType::SUM)",
                              chip=getattr(chip, "id", chip))


#: ReducePairElem<reduceType>: "当前仅支持求和操作" (the alias checks its own argument)
SUM_ONLY = HostCheck(Code.REDUCE_TYPE, "reduce_type",
                     "reduce_pair_elem: reduce_type is SUM (the only ReduceType it supports)",
                     _sum_only)

_PRS = registry.register(registry.Instruction(
    name="pair_reduce_sum", family="ascendc", kernel=_KERNEL,
    signature=("dst", "src", "repeat", "mask") + PARAMS[1:], params=PARAMS,
    kind=lambda option: "sum", layout=layout, repeat_range=repeat_range,
    aliases=("reduce_pair_elem",),
    profile_rules=(MASKED_PAIR.name, MASKED_LANE.name) + tuple(f.name for f in COUNTER_FIELDS),
    profile_fields=(MASKED_PAIR, MASKED_LANE) + COUNTER_FIELDS, alias_checks=(SUM_ONLY,),
    summary="PairReduceSum (ReducePairElem<SUM>): adjacent pairs summed per repeat"))


def pair_reduce_sum(ub: UBLike, dst: Tensor, src: Tensor, repeat_time: IntLike, mask: MaskLike,
                    dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike, *,
                    chip: ChipLike, saturate: SaturateLike = None,
                    return_info: bool = False,
                    spr: Optional[ReduceSpr] = None) -> CallResult:
    """PairReduceSum: per repeat, ``lane[2j] + lane[2j+1]`` into its 128-byte dst slot.

    Ascend C argument order (repeat before mask). ``saturate`` (half only) defaults to the
    profile. ``ub`` → new ``ub``; ``return_info=True`` → ``(ub, CallInfo)``.
    """
    return _PRS.run(ub, {"dst": dst, "src": src}, mask,
                    params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                    chip=chip, saturate=saturate, return_info=return_info, spr=spr)


def reduce_pair_elem(ub: UBLike, dst: Tensor, src: Tensor, mask: MaskLike, repeat_time: IntLike,
                     dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike, *,
                     chip: ChipLike, reduce_type: Union[str, ReduceType] = "SUM",
                     saturate: SaturateLike = None, return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReducePairElem<reduceType> (the newer name, CANN 9.1.0), in its documented order: mask
    before repeat. ``reduce_type``: only ``"SUM"`` / ``ReduceType.SUM`` ("当前仅支持求和操作")."""
    SUM_ONLY(reduce_type, chip)
    try:
        return pair_reduce_sum(ub, dst, src, repeat_time, mask, dst_rep_stride, src_blk_stride,
                               src_rep_stride, chip=chip, saturate=saturate,
                               return_info=return_info, spr=spr)
    except ConstraintError as e:            # named as the caller called it
        raise e.renamed({}, api="reduce_pair_elem") from None
