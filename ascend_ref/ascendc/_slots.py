"""What every Ascend C reduction shares: per-repeat result slots at ``dst + r*dstRepStride*slot``.

A reduction produces, for each repeat, a *slot* of whole words of the element size ``s``
(VALUE_INDEX: ``[value, index]``; ReduceDataBlock: 8 block results; ...). The slot size is
also the unit of ``dst_rep_stride`` and the alignment of ``dst`` (SPEC §4 tables).
"""

from __future__ import annotations

from typing import Callable

import jax.numpy as jnp

from .. import addressing
from ..engine import Instruction, Spec, Write

MAX_REPEAT = 255


def slot_write(spec: Spec, p: dict, words, runs, keep=None) -> Write:
    """The dst write of per-repeat slots. ``words``: ``(r_max, fields)`` bits; ``keep`` masks
    fields that are not written at all (same shape)."""
    fields = words.shape[-1]
    addr, issued, final = addressing.write_table(
        p["dst.addr"], p["dst_rep_stride"] * (fields * spec.size), p["repeat"],
        r_max=spec.r_max, fields=fields, size=spec.size)
    issued = issued & runs if keep is None else issued & runs & keep
    final = final & issued
    rep = jnp.broadcast_to(jnp.arange(spec.r_max, dtype=jnp.int32)[:, None], addr.shape)
    return Write("dst", addr, words, spec.size, issued, final, rep)


def instruction(api: str, effects: Callable, slot_fields: Callable[[Spec], int], *,
                saturating: bool = False) -> Instruction:
    """An Ascend C reduction over ``(dst, src)`` with the shared parameter set and rules."""
    return Instruction(
        api=api, operands=("dst", "src"), repeat_param="repeat_time",
        repeat_range=lambda spec: (0, MAX_REPEAT),
        strides=("dst_rep_stride", "src_blk_stride", "src_rep_stride"),
        align=lambda spec: {"src": 32, "dst": slot_fields(spec) * spec.size},
        effects=effects, saturating=saturating)


def params(repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride) -> dict:
    return {"repeat": repeat_time, "dst_rep_stride": dst_rep_stride,
            "src_blk_stride": src_blk_stride, "src_rep_stride": src_rep_stride}
