"""Ascend C vector reductions (SPEC §4): one short file per instruction family."""

from __future__ import annotations

from typing import Optional, Union

from ..argtypes import CallResult, ChipLike, IntLike, MaskLike, SaturateLike, UBLike
from ..enums import ReduceOrder, ReduceType, parse_enum
from ..constraints import Code, ConstraintError
from ..docstrings import with_family_example
from .reduce_data_block import (block_reduce_max, block_reduce_min, block_reduce_sum,
                                reduce_data_block)
from .pair_reduce_sum import pair_reduce_sum, reduce_pair_elem
from .repeat_reduce_sum import repeat_reduce_sum
from .reduce_count import (reduce_max, reduce_max_count, reduce_min, reduce_min_count,
                           reduce_sum, reduce_sum_count)
from .whole_reduce import whole_reduce_max, whole_reduce_min, whole_reduce_sum
from ..spr import (ReduceSpr, get_acc_val, get_reduce_max_min_count,
                   get_reduce_repeat_max_min_spr, get_reduce_repeat_sum_spr)
from ..ub import Tensor


def reduce_repeat(ub: UBLike, dst: Tensor, src: Tensor, mask: MaskLike, repeat_time: IntLike,
                  dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike,
                  order: Union[str, ReduceOrder, None] = None, *,
                  reduce_type: Union[str, ReduceType], chip: ChipLike,
                  saturate: SaturateLike = None, return_info: bool = False,
                  spr: Optional[ReduceSpr] = None) -> CallResult:
    """The newer CANN name: ReduceRepeat<MIN|MAX|SUM> = WholeReduceMin / Max / Sum
    (``order``: MIN / MAX only, default ORDER_VALUE_INDEX; ``saturate``: SUM only -- the
    other's parameter given is BAD_ARGUMENT, as WholeReduceSum / Min / Max have none)."""
    rt = parse_enum(ReduceType, reduce_type, api="reduce_repeat", param="reduce_type",
                    code=Code.REDUCE_TYPE, chip=chip)
    name, extra = ("order", order) if rt is ReduceType.SUM else ("saturate", saturate)
    if extra is not None:
        raise ConstraintError(Code.BAD_ARGUMENT, api="reduce_repeat", param=name, value=extra,
                              allowed=f"None: ReduceRepeat<{rt.name}> has no {name} "
                                      f"(leave it out)")
    if rt is ReduceType.SUM:
        return whole_reduce_sum(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                                src_rep_stride, chip=chip, saturate=saturate,
                                return_info=return_info, spr=spr)
    fn = whole_reduce_min if rt is ReduceType.MIN else whole_reduce_max
    return fn(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride,
              "ORDER_VALUE_INDEX" if order is None else order, chip=chip,
              return_info=return_info, spr=spr)


__all__ = ["whole_reduce_min", "whole_reduce_max", "whole_reduce_sum", "reduce_data_block",
           "reduce_repeat", "block_reduce_sum", "block_reduce_max", "block_reduce_min",
           "pair_reduce_sum", "reduce_pair_elem", "repeat_reduce_sum", "reduce_max", "reduce_min",
           "reduce_sum", "reduce_sum_count", "reduce_max_count", "reduce_min_count",
           "get_reduce_repeat_sum_spr", "get_acc_val",
           "get_reduce_repeat_max_min_spr", "get_reduce_max_min_count"]

with_family_example(reduce_repeat, whole_reduce_min.__module__)      # WholeReduce's new name
for _name in __all__:                 # help() shows each function's family example
    with_family_example(globals()[_name])
