"""TIK vec_reduce_min / vec_reduce_max (float16) — seed 002, SPEC §5.1.

Stage 1: each repeat reduces its active lanes to ``(value_r, lane_r)`` (first NaN wins,
−0 < +0, smallest lane among equals), written to ``work_tensor[2r], [2r+1]`` (the lane as
uint16 bits). Result: the first repeat holding the overall extreme — ``dst[0]`` = value;
with ``cal_index``, ``dst[1]`` = uint16 bits of the **source offset**
``r * src_rep_stride * 16 + lane_r`` (above 65535: ``INDEX_OVERFLOW``).

work_tensor need: ``2 * repeat_times`` without index; with index the cascade of seed 002
(``R=2 → 18``, ``R=65 → 162``) for a concrete count, seed 002's four-term formula when the
count is traced (unknown at build time, as for a TIK Scalar). ``work_tensor[2R:]`` is
undefined after the call.

Example (seed 002): 256 halves, min −9.97 at offset 43.

>>> import numpy as np, ascend_ref as ar
>>> x = np.zeros(256, np.float16); x[43] = -9.97
>>> ub = ar.store(ar.new_ub("atlas_training"), 0, x)
>>> dst, src, work = ar.Tensor(512, "half", 16), ar.Tensor(0, "half", 256), ar.Tensor(544, "half", 18)
>>> ub = ar.tik.vec_reduce_min(ub, 128, dst, src, work, 2, 8, cal_index=True, chip="atlas_training")
>>> out = ar.load(ub, 512, "float16", 2)
>>> float(out[0]), int(out.view(np.uint16)[1])
(-9.96875, 43)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import numerics
from ..constraints import Code, Rule
from ..engine import Effects, Region, call
from ._common import MAX_REPEAT, ceil_div, element_write, instruction, params, stage1_write

MAX_REPEAT_INDEX = 511
INDEX_LIMIT = 65535


def cascade_need(r):
    """Exact work_tensor elements for ``cal_index`` and a known repeat count (SPEC §5.1)."""
    n, need, done = 2 * r, 0, r < 0
    for _ in range(4):                       # R <= 511 finishes in two stages
        start, out = ceil_div(n, 16) * 16, ceil_div(n, 128) * 2
        need = need + jnp.where(done, 0, start)
        done = done | (out == 2)
        n = out
    return need + 2


def formula_need(r):
    """Seed 002's four-term bound, for a repeat count unknown at build time."""
    it1 = 2 * r
    it2_start, it2_out = ceil_div(it1, 16) * 16, ceil_div(it1, 128) * 2
    it3_start, it3_out = ceil_div(it2_out, 16) * 16, ceil_div(it2_out, 128) * 2
    it4_start, it4_out = ceil_div(it3_out, 16) * 16, ceil_div(it3_out, 128) * 2
    return it2_start + it3_start + it4_start + it4_out


def work_need(spec, r):
    if spec.option != "index":
        return 2 * r
    return formula_need(r) if spec.traced_repeat else cascade_need(r)


def _rules(spec):
    out = [Rule(Code.WORK_SIZE, "work_tensor.size",
                lambda p: p["work_tensor.size"] >= work_need(spec, p["repeat"]),
                lambda p: int(p["work_tensor.size"]),
                lambda p: f">= {int(work_need(spec, p['repeat']))} elements for repeat_times "
                          f"{int(p['repeat'])}" + (" (cal_index)" if spec.option else ""))]
    if spec.option == "index":
        out.append(Rule(Code.INDEX_OVERFLOW, "src_rep_stride",
                        lambda p: p["index"] <= INDEX_LIMIT,
                        lambda p: int(p["src_rep_stride"]),
                        lambda p: f"a stride whose result index fits in 16 bits (the winning "
                                  f"lane's source offset is {int(p['index'])} > 65535)"))
    return out


def _effects(kind):
    def effects(spec, p, bits, active):
        value_r, lane_r, _ = numerics.select_extreme(bits, active, kind, spec.dtype)
        stage1 = jnp.stack([value_r, lane_r.astype(value_r.dtype)], axis=-1)
        live = jnp.arange(spec.r_max) < p["repeat"]
        value, r_best, _ = numerics.select_extreme(value_r, live, kind, spec.dtype)
        index = r_best * p["src_rep_stride"] * 16 + lane_r[r_best]
        words = [value] + ([index.astype(value.dtype)] if spec.option == "index" else [])
        work_end = p["work_tensor.addr"] + p["work_tensor.size"] * spec.size
        scratch = p["work_tensor.addr"] + 2 * p["repeat"] * spec.size
        return Effects(
            [stage1_write(spec, p, stage1),
             element_write("dst", spec, p, jnp.stack(words), jnp.bool_(True))],
            [Region(scratch, work_end - scratch, jnp.bool_(True))],
            {"index": index})

    return effects


def _repeat_range(spec):
    return (1, MAX_REPEAT_INDEX if spec.option == "index" else MAX_REPEAT)


_MIN = instruction("vec_reduce_min", _effects("min"), _repeat_range, _rules)
_MAX = instruction("vec_reduce_max", _effects("max"), _repeat_range, _rules)


def _run(ins, ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride, cal_index, chip,
         return_info):
    if isinstance(cal_index, (int, np.bool_)) and cal_index in (0, 1):
        cal_index = bool(cal_index)
    else:
        from ..constraints import ConstraintError

        raise ConstraintError(Code.BAD_ARGUMENT, api=ins.api, param="cal_index",
                              value=cal_index, allowed="True / False")
    return call(ins, ub, {"dst": dst, "src": src, "work_tensor": work_tensor}, mask,
                params(repeat_times, src_rep_stride), chip=chip,
                option="index" if cal_index else "", return_info=return_info)


def vec_reduce_min(ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                   cal_index=False, *, chip, return_info=False):
    """TIK vec_reduce_min: the minimum over all repeats (and its source offset)."""
    return _run(_MIN, ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                cal_index, chip, return_info)


def vec_reduce_max(ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                   cal_index=False, *, chip, return_info=False):
    """TIK vec_reduce_max: the maximum over all repeats (and its source offset)."""
    return _run(_MAX, ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                cal_index, chip, return_info)
