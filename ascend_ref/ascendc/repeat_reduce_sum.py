"""RepeatReduceSum (deprecated) — ReduceRepeat<SUM> with a continuous mask, SEMANTICS §M.

The page of the deprecated name (asc-devkit ``docs/api/.../归约计算/RepeatReduceSum.md`` at
3825d1c98^, the last generation that had it): "每个repeat内所有数据求和。和WholeReduceSum接口相比，
不支持mask逐bit模式" -- WholeReduceSum without the bit mode --, with the documented argument
order ``(dst, src, repeatTime, mask, dstBlkStride, srcBlkStride, dstRepStride,
srcRepStride)`` and ``dstBlkStride`` "此参数无效，可以配置任意值" (no effect). The current
interface change list (``docs/zh/api/附录/接口变更说明.md``) maps RepeatReduceSum to
ReduceRepeat ("调整mask与repeatTime的参数顺序", "删除无效参数dstBlkStride"), and the
implementation (``kernel_operator_vec_reduce_intf_impl.h``) calls
``ReduceRepeatCommon<ReduceType::SUM>`` with ``(mask, repeatTime, dstRepStride,
srcBlkStride, srcRepStride)``, dropping ``dstBlkStride``. So each repeat is one tree sum of
its lanes (masked lanes +0) into one dst word at ``dst + r * dstRepStride * sizeof(dst)``,
exactly the WholeReduceSum effect (the same kernel effects run here), on the products and
dtypes of the RepeatReduceSum page (Atlas 200I/500 A2 and the Kirin products have none) and
with Ascend 950's (dst, src) pairs: int16 -> int32, uint16 -> uint32.

``mask`` is an int in [1, L] (the continuous mode; a bit-mode list is BAD_ARGUMENT: the API
takes ``const int32_t mask``); ``dst_blk_stride`` must be an int and changes nothing.

Example (RepeatReduceSum.md): half, repeat 4, mask 128, strides 0 / 1 / 1 / 8; repeats of
ones, twos, (anything), threes give ``[128, 256, ..., 384]``.

>>> import numpy as np, ascend_ref as ar
>>> x = np.repeat(np.array([1, 2, 7, 3], np.float16), 128)
>>> ub = ar.store(ar.new_ub("atlas_a2"), 0, x)
>>> ub = ar.ascendc.repeat_reduce_sum(ub, ar.Tensor(1024, "half", 16), ar.Tensor(0, "half", 512),
...                                   4, 128, 0, 1, 1, 8, chip="atlas_a2")
>>> ar.load(ub, 1024, "float16", 4).tolist()
[128.0, 256.0, 896.0, 384.0]
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from ..argtypes import CallResult, ChipLike, IntLike, SaturateLike, UBLike
from ..constraints import Code, ConstraintError
from ..mask import CounterMask
from ..spr import ReduceSpr
from ..ub import Tensor
from ._slots import declare, instruction, params
from .whole_reduce import INT_OVERFLOW, _sum_effects, sum_layout_of

API = "repeat_reduce_sum"
layout = sum_layout_of(API)
_KERNEL = instruction(API, _sum_effects, layout, saturating=True, mask_modes=("count", "counter"))
_RRS = declare(_KERNEL, kind=lambda o: "sum", layout=layout, profile_fields=(INT_OVERFLOW,),
               signature=("dst", "src", "repeat", "mask", "dst_blk_stride", "src_blk_stride",
                          "dst_rep_stride", "src_rep_stride"),
               ignored={"dst_blk_stride": 0},
               summary="RepeatReduceSum (deprecated): ReduceRepeat<SUM>, continuous mask")


def repeat_reduce_sum(ub: UBLike, dst: Tensor, src: Tensor, repeat_time: IntLike,
                      mask: Union[IntLike, CounterMask], dst_blk_stride: IntLike,
                      src_blk_stride: IntLike, dst_rep_stride: IntLike, src_rep_stride: IntLike, *,
                      chip: ChipLike, saturate: SaturateLike = None,
                      return_info: bool = False,
                      spr: Optional[ReduceSpr] = None) -> CallResult:
    """RepeatReduceSum: per repeat, the pairwise-tree sum of the first ``mask`` lanes.

    The deprecated API's own argument order (repeat before mask, ``dst_blk_stride`` before
    ``src_blk_stride``, ``dst_rep_stride`` before ``src_rep_stride``). ``dst_blk_stride``: any
    int, no effect ("此参数无效"). ``saturate`` (half only) defaults to the profile.
    """
    if isinstance(dst_blk_stride, (bool, np.bool_)) or not isinstance(
            dst_blk_stride, (int, np.integer)) and not (
            hasattr(dst_blk_stride, "dtype") and np.ndim(dst_blk_stride) == 0
            and np.issubdtype(dst_blk_stride.dtype, np.integer)):
        raise ConstraintError(Code.BAD_ARGUMENT, api=API, param="dst_blk_stride",
                              value=dst_blk_stride, allowed="an int (any value: the parameter "
                                                            "has no effect)")
    return _RRS.run(ub, {"dst": dst, "src": src}, mask,
                    params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                    chip=chip, saturate=saturate, return_info=return_info, spr=spr)
