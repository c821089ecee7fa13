"""ReduceDataBlock<SUM|MAX|MIN> (BlockReduceSum/Max/Min) — seed 001, SPEC §4.3.

Each repeat reads 8 DataBlocks (``src_blk_stride`` apart) and reduces each block's
``epb`` lanes (16 half / 8 float) to one value: SUM by the pairwise tree, MAX/MIN by the
min/max rules (no index). The 8 results of repeat r go to
``dst + r * dst_rep_stride * 8·s`` (16 B half / 32 B float, also dst's alignment), block b
at ``+ b·s``.

A block with no active lane follows the product's ``block_fill``: ``keep`` (A2/A3: not
written), ``fill`` (200I/500 A2, 950: the profile's fill value), ``undefined`` (others).

Example (seed 001, MAX): block maxima of 128 halves.

>>> import numpy as np, ascend_ref as ar
>>> x = np.ones(128, np.float16); x[10] = 2; x[29] = 3; x[115] = 4
>>> ub = ar.store(ar.new_ub("atlas_a2"), 0, x)
>>> ub = ar.ascendc.reduce_data_block(ub, ar.Tensor(256, "half", 8), ar.Tensor(0, "half", 128),
...                                   128, 1, 1, 1, 8, reduce_type="MAX", chip="atlas_a2")
>>> ar.load(ub, 256, "float16", 8).tolist()
[2.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 4.0]
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from typing import TYPE_CHECKING, Any, Optional, Union

from .. import numerics, registry
from ..argtypes import CallResult, ChipLike, IntLike, MaskLike, SaturateLike, UBLike
from ..constraints import ConstraintError
from ..engine import Effects, Product, UndefinedWords, gate
from ..enums import ReduceType
from ..spr import ReduceSpr
from ..ub import Tensor, itemsize
from . import _spr_hooks as sprs
from ._slots import counter_undefined, declare, instruction, params, slot_write

if TYPE_CHECKING:
    from typing import Protocol

    import jax

    from ..engine import Spec
    from ..params import Params

    class BlockReduce(Protocol):
        """What :func:`block_reduce` makes: ``block_reduce_sum / max / min`` (repeat before
        mask)."""

        def __call__(self, ub: UBLike, dst: Tensor, src: Tensor, repeat_time: IntLike,
                     mask: MaskLike, dst_rep_stride: IntLike, src_blk_stride: IntLike,
                     src_rep_stride: IntLike, *, chip: ChipLike,
                     saturate: SaturateLike = None, return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult: ...

BLOCKS = 8


def layout(dtype: Any, option: Any = None) -> registry.Layout:
    """8 block results per repeat (slot 8·s: 16 B half, 32 B float), block b at ``+ b·s``."""
    return registry.Layout(
        registry.fields(*[(f"b{b}", "value") for b in range(BLOCKS)], nbytes=itemsize(dtype)),
        per_repeat=True)


def _effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
             arith: numerics.Exact) -> Effects:
    rt = ReduceType(spec.option)
    blocks = bits.reshape(spec.r_max, BLOCKS, -1)      # under pair_src: words of 2 lanes
    live = active.reshape(spec.r_max, BLOCKS, -1)
    diag = {}
    if rt is ReduceType.SUM:
        (value,), diag["exact_ok"] = arith.sums(
            lambda s: (numerics.lane_tree(s, blocks, live, pairs=spec.pair_src),))
    else:
        value, _ = arith.extreme_value(blocks, live, rt.value.lower())
        value = arith.nan_result(value)
    # each repeat's own lanes (the same mask for every repeat, but for counter mode's last)
    has_lane = jnp.any(live, -1)
    runs, undefined = gate(spec, p)
    undefined += counter_undefined(spec, p)
    chip = Product(p)
    fill, keep = chip.block_fill_is("fill"), chip.block_fill_is("keep")
    # "fill": an empty block's result is the profile's fill value
    value = jnp.where(fill & ~has_lane, arith.const(chip.fill()), value)
    # "keep": no write at all (not an access either); "undefined": the hardware writes
    # something there, so bounds and overlap apply to it, but its value is undefined
    write = slot_write(spec, p, value, runs, keep=has_lane | ~keep)
    undefined.append(UndefinedWords(write.addr, spec.size,
                                    write.final & ~has_lane & chip.block_fill_is("undefined")))
    return Effects([dataclasses.replace(write, final=write.final & (has_lane | fill))],
                   undefined, diag)


def pair_src(dtype: Any, option: Any) -> bool:
    """SUM over half lanes reads a dense source as words of two lanes (``Spec.pair_src``):
    the first level of each block's tree adds a word's two halves."""
    return ReduceType(option) is ReduceType.SUM and itemsize(dtype) == 2


_RDB = declare(instruction("reduce_data_block", _effects, layout, saturating=True,
                           spr=sprs.vcg_sets(), pair_src=pair_src),
               kind=lambda rt: str(getattr(rt, "value", rt)).lower(), layout=layout, option=registry.REDUCE_TYPE,
               aliases=("block_reduce_sum", "block_reduce_max", "block_reduce_min"),
               profile_rules=("block_fill",), profile_fields=sprs.VCG_FIELDS,
               summary="ReduceDataBlock<SUM|MAX|MIN> (BlockReduceSum / Max / Min)")


def reduce_data_block(ub: UBLike, dst: Tensor, src: Tensor, mask: MaskLike, repeat_time: IntLike,
                      dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike, *,
                      reduce_type: Union[str, ReduceType], chip: ChipLike,
                      saturate: SaturateLike = None, return_info: bool = False,
                      spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReduceDataBlock: per DataBlock of each repeat, SUM / MAX / MIN of its active lanes.

    ``reduce_type``: ``"SUM"``, ``"MAX"``, ``"MIN"`` or an :class:`ascend_ref.ReduceType`.
    ``saturate`` (half SUM only) defaults to the profile. ``ub`` → new ``ub``;
    ``return_info=True`` → ``(ub, CallInfo)``.
    """
    return _RDB.run(ub, {"dst": dst, "src": src}, mask,
                    params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride),
                    chip=chip, option=reduce_type, saturate=saturate, return_info=return_info, spr=spr)


def block_reduce(reduce_type: str) -> BlockReduce:
    """The older names BlockReduceSum / BlockReduceMax / BlockReduceMin, in *their*
    documented argument order: ``(dst, src, repeat, mask, dstRepStride, srcBlkStride,
    srcRepStride)`` — repeat before mask, unlike ReduceDataBlock / WholeReduce* (CANN 8.0
    Ascend C API reference, BlockReduceSum / Max / Min prototypes)."""

    def fn(ub: UBLike, dst: Tensor, src: Tensor, repeat_time: IntLike, mask: MaskLike,
           dst_rep_stride: IntLike, src_blk_stride: IntLike, src_rep_stride: IntLike, *,
           chip: ChipLike, saturate: SaturateLike = None, return_info: bool = False,
           spr: Optional[ReduceSpr] = None) -> CallResult:
        try:
            return reduce_data_block(ub, dst, src, mask, repeat_time, dst_rep_stride,
                                     src_blk_stride, src_rep_stride, reduce_type=reduce_type,
                                     chip=chip, saturate=saturate, return_info=return_info,
                                     spr=spr)
        except ConstraintError as e:        # named as the caller called it
            raise e.renamed({}, api=fn.__name__) from None

    fn.__name__ = f"block_reduce_{reduce_type.lower()}"
    fn.__doc__ = (f"BlockReduce{reduce_type.title()}(ub, dst, src, repeat_time, mask, "
                  f"dst_rep_stride, src_blk_stride, src_rep_stride, *, chip) = "
                  f"ReduceDataBlock<{reduce_type}> (note: repeat before mask, as documented).")
    return fn


block_reduce_sum = block_reduce("SUM")
block_reduce_max = block_reduce("MAX")
block_reduce_min = block_reduce("MIN")
