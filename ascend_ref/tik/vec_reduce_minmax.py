"""TIK vec_reduce_min / vec_reduce_max — seed 002, SPEC §5.1, CANN 7.0–8.5 TIK pages.

dtypes per product (profiles): float16 everywhere; float32 on Atlas inference AI Core /
Vector Core, A2, A3, 200I/500 A2; int16 on the Vector Core. With cal_index the repeat range
is [1, 255] (int16), [1, 511] (float16), [1, 4095] (float32) and the index is stored as the
uint16 / uint32 bits of the element width.

Stage 1: each repeat reduces its active lanes to ``(value_r, lane_r)`` (first NaN wins,
−0 < +0, smallest lane among equals), written to ``work_tensor[2r], [2r+1]`` (the lane as
uint16 bits). Result: the first repeat holding the overall extreme — ``dst[0]`` = value;
with ``cal_index``, ``dst[1]`` = uint16 bits of the **source offset**
``r * src_rep_stride * (32 / size) + lane_r`` (above 65535 for 16-bit types:
``INDEX_OVERFLOW``).

work_tensor need: ``2 * repeat_times`` without index; with index the cascade of seed 002
(``R=2 → 18``, ``R=65 → 162``), evaluated on the repeat count even when it is traced, so
eager, jit and batched calls agree. ``work_tensor[2R:]`` is undefined after the call.

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

from typing import Any, List, Optional, Tuple, Union

import jax
import jax.numpy as jnp

from ..argtypes import CallResult, ChipLike, FlagLike, IntLike, MaskLike, UBLike
from .. import numerics, registry
from ..constraints import Code, Rule
from ..engine import Effects, EffectsFn, Region, Spec, gate
from ..params import Params
from ..spr import ReduceSpr
from ..ub import Tensor, itemsize
from ._common import (GENERAL_ALIGN, MAX_REPEAT, ceil_div, declare, element_write, instruction,
                      params, stage1_write)

#: repeat_times upper bound with cal_index, per dtype (TIK source docstring and CANN pages:
#: "int16 ... [1, 255]; float16 ... [1, 511]; float32 ... [1, 4095]")
MAX_REPEAT_INDEX = {"int16": 255, "float16": 511, "float32": 4095}
INDEX_LIMIT = 65535


def index_limit(size: int) -> int:
    """Largest index dst[1] can hold: it is stored as uint16 / uint32 bits (SEMANTICS §F;
    the threshold is assumption ``index_overflow_limit``: seed 002 reasons with 65504)."""
    return (1 << (8 * size)) - 1


def cascade_need(r: Union[int, jax.Array], epb: int = 16, lanes: int = 128) -> jax.Array:
    """Exact work_tensor elements for ``cal_index`` (SPEC §5.1, seed 002's cascade stopped at
    the stage that outputs one pair): from n = 2R add ceil(n/epb)*epb per stage until a stage
    outputs 2 elements, then + 2. ``r`` may be traced: the loop is unrolled over the at most
    four stages a count in [1, 4095] can need, so eager, jit and batched calls agree."""
    need: Any = 0
    n, done = 2 * r, r < 0
    for _ in range(4):                       # 4095 float32 repeats finish in four stages
        start, out = ceil_div(n, epb) * epb, ceil_div(n, lanes) * 2
        need = need + jnp.where(done, 0, start)
        done = done | (out == 2)
        n = out
    return need + 2


def formula_need(r: Union[int, jax.Array], epb: int = 16,
                 lanes: int = 128) -> Union[int, jax.Array]:
    """Seed 002's four-term bound (what TIK itself asks when repeat_times is a TIK Scalar).
    Not used for checking: a traced JAX repeat count is a concrete number on the device, so
    the exact :func:`cascade_need` applies (docs/SEMANTICS.md §F)."""
    it1 = 2 * r
    it2_start, it2_out = ceil_div(it1, epb) * epb, ceil_div(it1, lanes) * 2
    it3_start, it3_out = ceil_div(it2_out, epb) * epb, ceil_div(it2_out, lanes) * 2
    it4_start, it4_out = ceil_div(it3_out, epb) * epb, ceil_div(it3_out, lanes) * 2
    return it2_start + it3_start + it4_start + it4_out


def need(r: Any, cal_index: Any, dtype: str) -> Any:
    """work_tensor elements for ``r`` repeats (``r`` may be traced): ``2R`` without index,
    the cascade with it."""
    if cal_index is not True:
        return 2 * r
    s = itemsize(dtype)
    return cascade_need(r, 32 // s, 256 // s)


def work_need(spec: Spec, r: Union[int, jax.Array]) -> Union[int, jax.Array]:
    return need(r, spec.option == "index", spec.dtype)


def _index(p: Params) -> jax.Array:
    """The winning lane's source offset, as the effects report it (``Effects.diag``)."""
    return p.diagnostics.values["index"]


def _rules(spec: Spec) -> List[Rule]:
    out = [Rule(Code.WORK_SIZE, "work_tensor.size",
                lambda p: p.tensor("work_tensor").size >= work_need(spec, p.repeat),
                lambda p: int(p.tensor("work_tensor").size),
                lambda p: f">= {int(work_need(spec, p.repeat))} elements for repeat_times "
                          f"{int(p.repeat)}" + (" (cal_index)" if spec.option else ""),
                doc="work_tensor.size >= " + ("the cal_index cascade need" if spec.option
                                              else "2 * repeat_times") + " elements")]
    if spec.option == "index":
        out.append(Rule(Code.INDEX_OVERFLOW, "src_rep_stride",
                        lambda p: _index(p) <= min(index_limit(spec.size), 2**31 - 1),
                        lambda p: int(p.src_rep_stride),
                        lambda p: f"a stride whose result index fits in {8 * spec.size} bits "
                                  f"(the winning lane's source offset is {int(_index(p))} > "
                                  f"{index_limit(spec.size)})",
                        doc=f"cal_index: the result index fits in {8 * spec.size} bits"))
    return out


def _effects(kind: str
             ) -> EffectsFn:
    def effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                arith: numerics.Exact) -> Effects:
        value_r, lane_r, _ = arith.extreme(bits, active, kind)
        stage1 = jnp.stack([value_r, arith.word(lane_r)], axis=-1)
        live = jnp.arange(spec.r_max) < p.repeat
        value, r_best, _ = arith.extreme(value_r, live, kind)
        index = r_best * p.src_rep_stride * (32 // spec.size) + lane_r[r_best]
        words = [value] + ([arith.word(index)] if spec.option == "index" else [])
        work_end = p.tensor("work_tensor").addr + p.tensor("work_tensor").size * spec.size
        scratch = p.tensor("work_tensor").addr + 2 * p.repeat * spec.size
        # a zero mask is a NOP where the product's rule allows it (SEMANTICS §C): no write,
        # no scratch
        runs, undefined = gate(spec, p)
        undefined.append(Region(scratch, work_end - scratch, runs))
        if spec.option != "index":
            # issue 12 finding 6: without cal_index Huawei's TIK code runs the later stages in
            # place from work[0] (R >= 2), overwriting the first 2*ceil(2R/L) stage-1 entries
            # the documentation describes: undefined
            front = 2 * ((2 * p.repeat + spec.lanes - 1) // spec.lanes) * spec.size
            undefined.append(Region(p.tensor("work_tensor").addr, front, (p.repeat >= 2) & runs))
        return Effects(
            [stage1_write(spec, p, stage1, runs),
             element_write("dst", spec, p, jnp.stack(words), runs)],
            undefined, {"index": index})

    return effects


def repeat_range(cal_index: Any, dtype: str) -> tuple:
    """[1, 4095]; with cal_index [1, 255] int16, [1, 511] float16, [1, 4095] float32."""
    return (1, MAX_REPEAT_INDEX.get(dtype, 511) if cal_index is True else MAX_REPEAT)


def _repeat_range(spec: Spec) -> Tuple[int, int]:
    return repeat_range(spec.option == "index", spec.dtype)


def layout(dtype: Any, cal_index: Any) -> registry.Layout:
    """dst[0] = value (dst[1] = the index bits with cal_index); work_tensor[2r], [2r+1] =
    repeat r's (value, lane)."""
    s = itemsize(dtype)
    dst = (("value", "value"),) + ((("index", "index"),) if cal_index is True else ())
    return registry.Layout(registry.fields(*dst, nbytes=s), per_repeat=False,
                           work=registry.fields(("value", "value"), ("lane", "index"), nbytes=s))


#: seed 002 and the CANN 5.0–8.5 pages: "dst: 起始地址要求4Byte对齐"; src: "请见通用约束"
#: (32 B); work_tensor: not stated (general constraints, assumed ``tik_align``).
ALIGN = {"dst": 4, "src": GENERAL_ALIGN, "work_tensor": GENERAL_ALIGN}
#: seed 002: "Address overlapping between dst and work_tensor is not allowed" (only this pair)
DISJOINT = (("dst", "work_tensor"),)

def _declare(name: str, kind: str) -> registry.Instruction:
    return declare(instruction(name, _effects(kind), _repeat_range, _rules, align=ALIGN,
                               disjoint=DISJOINT),
                   kind=lambda o: kind, layout=layout, repeat_range=repeat_range,
                   work_need=need, option=registry.CAL_INDEX,
                   assumptions={"index_overflow_limit": Code.INDEX_OVERFLOW},
                   codes=(Code.INDEX_OVERFLOW,),
                   summary=f"TIK vec_reduce_{kind}")


_MIN = _declare("vec_reduce_min", "min")
_MAX = _declare("vec_reduce_max", "max")


def _run(ins: registry.Instruction, ub: UBLike, mask: MaskLike, dst: Tensor, src: Tensor,
         work_tensor: Tensor, repeat_times: IntLike, src_rep_stride: IntLike,
         cal_index: FlagLike, chip: ChipLike, return_info: bool,
         spr: Optional[ReduceSpr] = None) -> CallResult:
    return ins.run(ub, {"dst": dst, "src": src, "work_tensor": work_tensor}, mask,
                   params(repeat_times, src_rep_stride), chip=chip, option=cal_index,
                   return_info=return_info, spr=spr)


def vec_reduce_min(ub: UBLike, mask: MaskLike, dst: Tensor, src: Tensor, work_tensor: Tensor,
                   repeat_times: IntLike, src_rep_stride: IntLike, cal_index: FlagLike = False,
                   *, chip: ChipLike, return_info: bool = False,
                   spr: Optional[ReduceSpr] = None
                   ) -> CallResult:
    """TIK vec_reduce_min: the minimum over all repeats (and its source offset)."""
    return _run(_MIN, ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                cal_index, chip, return_info, spr)


def vec_reduce_max(ub: UBLike, mask: MaskLike, dst: Tensor, src: Tensor, work_tensor: Tensor,
                   repeat_times: IntLike, src_rep_stride: IntLike, cal_index: FlagLike = False,
                   *, chip: ChipLike, return_info: bool = False,
                   spr: Optional[ReduceSpr] = None
                   ) -> CallResult:
    """TIK vec_reduce_max: the maximum over all repeats (and its source offset)."""
    return _run(_MAX, ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                cal_index, chip, return_info, spr)
