"""Repeat / block-stride / rep-stride addressing as gather tables (SPEC §1.1, seed 004).

Lane ``i`` of repeat ``r`` reads the element at byte::

    addr(r, i) = base + r*rep_stride*32 + (i // epb)*blk_stride*32 + (i % epb)*s

Tables have a static shape ``(r_max, L)``; every numeric argument may be traced, so one
compiled kernel serves every repeat count, stride and address. Block offsets are clamped at
2**22 DataBlocks (far past any UB) so that int32 never wraps: a clamped address is out of
bounds and the bounds rules reject it.

>>> import numpy as np
>>> from ascend_ref.addressing import read_table
>>> t = np.asarray(read_table(0, 8, 2, r_max=2, size=2))   # half, blkStride 2, repStride 8
>>> t[0, :2].tolist(), t[0, 16].tolist(), t[1, 0].tolist()
([0, 2], 64, 256)
"""

from __future__ import annotations

from typing import Optional, Tuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

BLOCK = 32
_CLAMP_BLOCKS = 1 << 22


def _blocks(count: ArrayLike, stride: ArrayLike) -> jax.Array:
    """``count * stride`` DataBlocks as bytes, clamped (both non-negative, int32-safe)."""
    count = jnp.asarray(count, jnp.int32)
    stride = jnp.asarray(stride, jnp.int32)
    return jnp.minimum(count * stride, _CLAMP_BLOCKS) * BLOCK


def blocks_bytes(count: ArrayLike, stride: ArrayLike) -> jax.Array:
    """``count * stride`` DataBlocks as bytes, clamped exactly as the tables clamp them."""
    return _blocks(count, stride)


def block_table(base: ArrayLike, rep_stride: ArrayLike, blk_stride: ArrayLike, *,
                r_max: int) -> jax.Array:
    """Byte address of DataBlock b of repeat r, shape ``(r_max, 8)`` (``read_table`` at the
    first lane of each block)."""
    return read_table(base, rep_stride, blk_stride, r_max=r_max, size=4)[:, ::8]


def lane_offsets(blk_stride: ArrayLike, size: int, lanes: int) -> jax.Array:
    """Byte offset of each lane within a repeat: ``(i // epb)*blk_stride*32 + (i % epb)*s``."""
    epb = BLOCK // size
    i = jnp.arange(lanes, dtype=jnp.int32)
    return _blocks(i // epb, blk_stride) + (i % epb) * size


def read_table(base: ArrayLike, rep_stride: ArrayLike, blk_stride: ArrayLike, *, r_max: int,
               size: int) -> jax.Array:
    """Byte address of lane i in repeat r, shape ``(r_max, 256 // size)``."""
    r = jnp.arange(r_max, dtype=jnp.int32)
    lanes = 256 // size
    return (jnp.asarray(base, jnp.int32) + _blocks(r, rep_stride)[:, None]
            + lane_offsets(blk_stride, size, lanes)[None, :])


def repeat_valid(repeat: ArrayLike, r_max: int) -> jax.Array:
    """``r < repeat`` for each of the ``r_max`` table rows."""
    return jnp.arange(r_max, dtype=jnp.int32) < jnp.asarray(repeat, jnp.int32)


def source_table(base: ArrayLike, rep_stride: ArrayLike, blk_stride: ArrayLike,
                 lane_mask: ArrayLike, repeat: ArrayLike, *, r_max: int,
                 size: int) -> Tuple[jax.Array, jax.Array]:
    """The source gather of a call: ``(reads, active)``, both ``(r_max, 256 // size)``.

    ``reads[r, i]``: the byte lane ``i`` of repeat ``r`` reads (:func:`read_table`);
    ``active[r, i]``: it takes part (``r < repeat`` and ``lane_mask[i]``, the lanes the mask
    enables). The one table the kernel's value path (``engine.source_elements``), explain,
    the audit and the fuzz generator (``registry.Instruction.source_reads``) read; every
    argument may be traced."""
    reads = read_table(base, rep_stride, blk_stride, r_max=r_max, size=size)
    active = repeat_valid(repeat, r_max)[:, None] & jnp.asarray(lane_mask, bool)[None, :]
    return reads, active


def write_table(base: ArrayLike, rep_stride_bytes: ArrayLike, repeat: ArrayLike, *, r_max: int,
                fields: int, size: int) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """Byte address of field f of repeat r's result slot, shape ``(r_max, fields)``.

    Slot r starts at ``base + r*rep_stride_bytes``; field f at ``+ f*size``. Returns
    ``(addr, issued, final)``: ``issued`` — the repeat exists (r < repeat); ``final`` — its
    bytes survive. When the slots of all repeats coincide (a zero destination stride) every
    repeat writes but the last repeat's write wins, so only its row is final.
    """
    r = jnp.arange(r_max, dtype=jnp.int32)
    step = jnp.asarray(rep_stride_bytes, jnp.int32)
    start = jnp.asarray(base, jnp.int32) + jnp.minimum(r * step, _CLAMP_BLOCKS * BLOCK)
    addr = start[:, None] + jnp.arange(fields, dtype=jnp.int32)[None, :] * size
    repeat = jnp.asarray(repeat, jnp.int32)
    issued = r < repeat
    final = issued & ((step != 0) | (r == repeat - 1))
    shape = addr.shape
    return addr, jnp.broadcast_to(issued[:, None], shape), jnp.broadcast_to(final[:, None], shape)


def read_after_write(write_addr: jax.Array, write_valid: jax.Array, write_repeat: jax.Array,
                     base: ArrayLike, rep_stride: ArrayLike, blk_stride: ArrayLike,
                     lane_mask: jax.Array, repeat: ArrayLike, *, size: int,
                     active: Optional[jax.Array] = None) -> jax.Array:
    """True when a word written by repeat r is read by an active lane of a later repeat.

    ``write_addr`` holds ``size``-aligned word addresses (any shape, same as ``write_valid``
    and ``write_repeat``). Reads are ``size``-aligned too, so a conflict is an exact address
    match: ``write = lane_base(i) + r'*rep_stride*32`` with ``r < r' < repeat``.
    ``active`` (optional, ``(r_max, L)``): the lanes each repeat takes part with, where they
    differ per repeat (counter mode); ``lane_mask`` is then their union.
    """
    lanes = lane_mask.shape[0]
    lane_base = jnp.asarray(base, jnp.int32) + lane_offsets(blk_stride, size, lanes)
    d = write_addr.reshape(-1)[:, None] - lane_base[None, :]
    step = _blocks(1, rep_stride)
    w_rep = write_repeat.reshape(-1)[:, None]
    # the only candidate repeat; rounding a float32 quotient is exact for a true multiple
    # (|d| < 2**28, quotient < 2**13) and far cheaper than integer division; the exact
    # integer test below rejects every non-multiple
    # with a repeat stride of 0 every repeat reads the same bytes: the first later repeat
    # (w_rep + 1) is the candidate, it takes the most lanes (counter mode: only the last
    # repeat can be partial; normal mode: all alike). Not the last repeat: in counter mode
    # its lanes may be fewer than a repeat before it reads.
    quot = jnp.round(d.astype(jnp.float32) / jnp.maximum(step, 1).astype(jnp.float32))
    r_read = jnp.where(step > 0, quot.astype(jnp.int32), w_rep + 1)
    hit = (d >= 0) & (d == r_read * step) & (r_read > w_rep) & (r_read < repeat)
    hit &= write_valid.reshape(-1)[:, None] & lane_mask[None, :]
    if active is not None:      # per-repeat lanes (counter mode): the reading repeat's own
        rows = jnp.clip(r_read, 0, active.shape[0] - 1)
        hit &= active[rows, jnp.arange(lanes, dtype=jnp.int32)[None, :]]
    return jnp.any(hit)
