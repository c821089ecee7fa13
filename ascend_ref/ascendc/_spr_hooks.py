"""Which Ascend C calls set the reduce special registers, and with what (:mod:`ascend_ref.spr`;
SEMANTICS §P): the profile fields and the :class:`~ascend_ref.spr.Sets` hooks the instruction
files declare (``whole_reduce.py``, ``reduce.py``, ``reduce_data_block.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax.numpy as jnp

from ..engine import gate
from ..registry import ProfileField
from ..spr import MAX_MIN, SUM, TYPES, MaxMinWrite, Sets, SumWrite

if TYPE_CHECKING:
    import jax

    from .. import numerics
    from ..engine import Effects, Spec
    from ..params import Params


SPR_SUM = ProfileField(
    "spr_sum", ("unsupported", "acc_val", "software"),
    "GetReduceRepeatSumSpr / GetAccVal: not on this product; the hardware ACC_VAL register "
    "(A2/A3: one register, written by the count-form ReduceSum's vcadd); or one software "
    "global per type set by the half / float count-form ReduceSum (Ascend 950)", state_only=True)
SPR_MAXMIN = ProfileField(
    "spr_maxmin", ("unsupported", "value_index", "value"),
    "GetReduceRepeatMaxMinSpr / GetReduceMaxMinCount: not on this product; the (value, "
    "index) form (A2/A3); the value-only form (inference-series AI Core)", state_only=True)
SPR_MAXMIN_INDEX = ProfileField(
    "spr_maxmin_index", ("flat", "lane"),
    "the max/min register's index after ReduceRepeat<MAX|MIN> over several repeats (not "
    "documented): the winner's element offset from src (r * L + lane, contiguous case), or "
    "its lane within the winning repeat", state_only=True)
SPR_UNWRITTEN = ProfileField(
    "spr_unwritten", ("undefined", "zero"),
    "reading a reduce special register that no call has written (not documented): undefined, "
    "or zero bits", state_only=True)
SPR_SUM_OTHER = ProfileField(
    "spr_sum_other_type", ("undefined", "kept"),
    "the sum register read with the other T than its last writer's (not documented): a "
    "write of one type leaves the other type's reading undefined (one register: A2/A3 "
    "ACC_VAL), or leaves it as it was (one slot per type: the Ascend 950 globals)", state_only=True)
SPR_VCG = ProfileField(
    "spr_vcg_clobber", ("unchanged", "undefined"),
    "ReduceDataBlock MAX / MIN (vcgmax / vcgmin) and the max/min register (not documented): "
    "left as it was, or left undefined", state_only=True)

#: the fields each kind of setter declares (so every profile that lists it sets them)
MAXMIN_FIELDS = (SPR_MAXMIN, SPR_MAXMIN_INDEX, SPR_UNWRITTEN)
SUM_FIELDS = (SPR_SUM, SPR_SUM_OTHER, SPR_UNWRITTEN)
VCG_FIELDS = (SPR_VCG,)
FIELDS = (SPR_SUM, SPR_MAXMIN, SPR_MAXMIN_INDEX, SPR_UNWRITTEN, SPR_SUM_OTHER, SPR_VCG)



def _runs(spec: Spec, p: Params) -> jax.Array:
    return gate(spec, p)[0]


def counter_mode(p: Params) -> jax.Array:
    """The call runs in counter mask mode (SetMaskCount, ``Params.mask_counter``): the
    max/min register is then not readable ("不支持获取归约接口使用Mask Counter模式时的结果")."""
    return jnp.asarray(p.mask_counter, bool)


def whole_reduce_sets(kind: str) -> Sets:
    """ReduceRepeat<MAX|MIN>: the extreme over every repeat (first NaN, -0 < +0, ties to the
    first repeat, then the smallest lane: SEMANTICS §D) and its index (``spr_maxmin_index``:
    ``r * L + lane`` or the lane), defined in the contiguous case only."""
    def update(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
               arith: numerics.Exact, eff: Effects) -> MaxMinWrite:
        value_r, lane_r, live = arith.extreme(bits, active, kind)
        value, r_win, _ = arith.extreme(value_r, live, kind)
        value = arith.nan_result(value)
        lane = lane_r[r_win].astype(jnp.int32)
        flat = r_win.astype(jnp.int32) * spec.lanes + lane
        index = jnp.where(SPR_MAXMIN_INDEX.holds(p, "flat"), flat, lane)
        ok = (p.src_rep_stride == 8) & (p.src_blk_stride == 1) & ~counter_mode(p)
        return MaxMinWrite(_runs(spec, p), jnp.asarray(value).astype(jnp.uint32),
                           index.astype(jnp.uint32), ok, ok)

    return Sets(MAX_MIN, f"the max/min register: the {kind} over all repeats and its index "
                         f"(contiguous case: src_rep_stride 8, src_blk_stride 1, normal mask "
                         f"mode; otherwise undefined)", update)


def level2_sets(kind: str) -> Sets:
    """Level-2 ReduceMax / ReduceMin: the register holds the exact result (dst[0]) and an
    index that is not accurate (undefined), in the contiguous case (srcRepStride 8)."""
    def update(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
               arith: numerics.Exact, eff: Effects) -> MaxMinWrite:
        value = eff.writes[0].bits[0]
        # the count form ("tensor前n个数据", no srcRepStride) is contiguous by construction
        contiguous = jnp.bool_(True) if p.src_rep_stride is None else p.src_rep_stride == 8
        ok = contiguous & ~counter_mode(p)
        return MaxMinWrite(_runs(spec, p), jnp.asarray(value).astype(jnp.uint32),
                           jnp.uint32(0), ok, jnp.bool_(False))

    return Sets(MAX_MIN, f"the max/min register: the {kind} (exact; its index undefined: "
                         f"\"此时获取的索引不准确\"), contiguous case src_rep_stride 8", update)


def count_sum_sets() -> Sets:
    """The count form of ReduceSum (half / float): the sum register holds its result dst[0]
    (A2/A3 ACC_VAL, written by the mode-1 vcadd; 950 the per-type global)."""
    def update(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
               arith: numerics.Exact, eff: Effects) -> SumWrite:
        value = eff.diag.get("sum", eff.writes[0].bits[0])
        return SumWrite(_runs(spec, p) & (spec.dtype in TYPES),
                        jnp.asarray(value).astype(jnp.uint32), jnp.bool_(True),
                        SPR_SUM_OTHER.holds(p, "kept"))

    return Sets(SUM, "the sum register: the result dst[0] (half / float)", update)


def vcg_sets() -> Sets:
    """ReduceDataBlock MAX / MIN: the max/min register left undefined where the profile's
    ``spr_vcg_clobber`` is ``"undefined"`` (assumed), unchanged otherwise; SUM leaves it."""
    def update(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
               arith: numerics.Exact, eff: Effects) -> MaxMinWrite:
        kind = str(spec.option).upper()
        hit = _runs(spec, p) & SPR_VCG.holds(p, "undefined") & (kind in ("MAX", "MIN"))
        return MaxMinWrite(hit, jnp.uint32(0), jnp.uint32(0), jnp.bool_(False), jnp.bool_(False))

    return Sets(MAX_MIN, "MAX / MIN: the max/min register undefined or unchanged (profile field "
                         "spr_vcg_clobber; not documented)", update)
