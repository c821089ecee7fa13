"""Unit tests of :mod:`ascend_ref.addressing`: every table against a direct loop over SPEC §1.1.

    addr(r, i) = base + r*repStride*32 + (i // epb)*blkStride*32 + (i % epb)*s

The loops below restate the formula (and the write-slot and read-after-write rules of the
module's docstrings) element by element in Python integers; the module computes whole tables
with jnp, with every numeric argument traced.
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ascend_ref import addressing

R_MAX = 8


def ref_addr(base: int, rep: int, blk: int, r: int, i: int, s: int) -> int:
    epb = 32 // s
    return base + r * rep * 32 + (i // epb) * blk * 32 + (i % epb) * s


@functools.partial(jax.jit, static_argnames=("r_max", "size"))
def _read_table(base, rep, blk, *, r_max: int, size: int):
    return addressing.read_table(base, rep, blk, r_max=r_max, size=size)


_strides = st.one_of(st.sampled_from([0, 1, 2, 7, 8, 9, 16]), st.integers(0, 65535))


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 1 << 18), _strides, _strides, st.sampled_from([2, 4]))
def test_read_table_is_the_spec_formula(base, rep, blk, s):
    got = np.asarray(_read_table(base, rep, blk, r_max=R_MAX, size=s))
    lanes = 256 // s
    chex.assert_shape(got, (R_MAX, lanes))
    want = np.array([[ref_addr(base, rep, blk, r, i, s) for i in range(lanes)]
                     for r in range(R_MAX)])
    np.testing.assert_array_equal(got, want)


def test_seed_004_half_example():
    # half, blkStride 2, repStride 8: lanes 0..15 of block 0 at 0, 2, ..., block 1 at 64
    t = np.asarray(addressing.read_table(0, 8, 2, r_max=2, size=2))
    assert t[0, :3].tolist() == [0, 2, 4]
    assert t[0, 16] == 64 and t[0, 127] == 7 * 64 + 15 * 2
    assert t[1, 0] == 256


def test_zero_strides_reread():
    t = np.asarray(addressing.read_table(96, 0, 1, r_max=4, size=4))
    assert all((t[r] == t[0]).all() for r in range(4))          # repStride 0: same 8 blocks
    b = np.asarray(addressing.read_table(96, 8, 0, r_max=2, size=4))
    epb = 8
    for blk in range(8):                                         # blkStride 0: one block 8x
        np.testing.assert_array_equal(b[:, blk * epb:(blk + 1) * epb], b[:, :epb])
    assert b[0, :epb].tolist() == [96 + 4 * e for e in range(epb)]


@pytest.mark.parametrize("rep, overlap", [(1, True), (4, True), (7, True), (8, False), (9, False)])
def test_rep_stride_below_8_overlaps_above_8_leaves_gaps(rep, overlap):
    t = np.asarray(addressing.read_table(0, rep, 1, r_max=2, size=2))
    r0, r1 = set(t[0].tolist()), set(t[1].tolist())
    assert bool(r0 & r1) == overlap
    gap = int(t[1].min()) - (int(t[0].max()) + 2)   # bytes between the repeats (< 0: overlap)
    assert gap == (rep - 8) * 32


def test_block_table_and_lane_offsets():
    bt = np.asarray(addressing.block_table(64, 9, 3, r_max=3))
    chex.assert_shape(bt, (3, 8))
    assert bt.tolist() == [[64 + r * 9 * 32 + b * 3 * 32 for b in range(8)] for r in range(3)]
    for s in (2, 4):
        lanes = 256 // s
        off = np.asarray(addressing.lane_offsets(5, s, lanes))
        assert off.tolist() == [ref_addr(0, 0, 5, 0, i, s) for i in range(lanes)]


def test_repeat_valid():
    assert np.asarray(addressing.repeat_valid(3, 5)).tolist() == [True, True, True, False, False]
    assert not np.asarray(addressing.repeat_valid(0, 4)).any()
    assert np.asarray(jax.jit(lambda r: addressing.repeat_valid(r, 4))(2)).tolist() == \
        [True, True, False, False]


def test_block_offsets_clamp_instead_of_wrapping_int32():
    clamp = (1 << 22) * 32                                 # 2**22 DataBlocks, as documented
    assert int(addressing.blocks_bytes(4095, 65535)) == clamp   # 4095*65535*32 > 2**31
    assert int(addressing.blocks_bytes(255, 65535)) == clamp
    assert int(addressing.blocks_bytes(3, 7)) == 3 * 7 * 32
    t = np.asarray(addressing.read_table(0, 65535, 65535, r_max=4096, size=4))
    assert (t >= 0).all()                                  # far out of bounds, never negative
    assert t[7, 0] == 7 * 65535 * 32                       # below the clamp: the formula
    assert t[4095, 0] == clamp and t[4095, 63] == clamp + 7 * 65535 * 32 + 7 * 4


# ------------------------------------------------------------------ write tables ----------

def ref_write(base: int, step: int, repeat: int, r_max: int, fields: int, size: int):
    addr = [[base + r * step + f * size for f in range(fields)] for r in range(r_max)]
    issued = [[r < repeat] * fields for r in range(r_max)]
    # zero step: every repeat writes the same slot, the last repeat's write survives
    final = [[r < repeat and (step != 0 or r == repeat - 1)] * fields for r in range(r_max)]
    return addr, issued, final


@pytest.mark.parametrize("base, step, repeat, fields, size", [
    (0, 4, 3, 2, 2), (512, 0, 5, 1, 4), (96, 32, 8, 2, 4), (2, 2, 0, 1, 2), (1000, 64, 1, 8, 2)])
def test_write_table(base, step, repeat, fields, size):
    addr, issued, final = addressing.write_table(base, step, repeat, r_max=R_MAX,
                                                 fields=fields, size=size)
    chex.assert_equal_shape([addr, issued, final])
    want = ref_write(base, step, repeat, R_MAX, fields, size)
    assert np.asarray(addr).tolist() == want[0]
    assert np.asarray(issued).tolist() == want[1]
    assert np.asarray(final).tolist() == want[2]


# ------------------------------------------------------------------ read after write ------

def ref_read_after_write(waddr, wvalid, wrep, base, rep, blk, lane_mask, repeat, s) -> bool:
    """A word written by repeat r is read by an active lane of a repeat r' with r < r' < repeat."""
    for a, v, w in zip(np.ravel(waddr), np.ravel(wvalid), np.ravel(wrep)):
        if not v:
            continue
        for r2 in range(int(w) + 1, repeat):
            for i, on in enumerate(lane_mask):
                if on and ref_addr(base, rep, blk, r2, i, s) == int(a):
                    return True
    return False


@functools.partial(jax.jit, static_argnames=("size",))
def _raw(waddr, wvalid, wrep, base, rep, blk, lane_mask, repeat, *, size):
    return addressing.read_after_write(waddr, wvalid, wrep, base, rep, blk, lane_mask, repeat,
                                       size=size)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([2, 4]), st.integers(0, 40), st.sampled_from([0, 1, 2, 4, 8, 9]),
       st.sampled_from([0, 1, 2]), st.integers(-8, 400), st.sampled_from([0, 1, 2, 8, 32, 128]),
       st.integers(0, R_MAX), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_read_after_write_matches_a_brute_force_search(s, src_blocks, rep, blk, dst_words,
                                                       dst_step_words, repeat, fields, seed):
    lanes = 256 // s
    base = src_blocks * 32                 # dst near the source: conflicts are common
    waddr, wvalid, _ = addressing.write_table(base + dst_words * s, dst_step_words * s, repeat,
                                              r_max=R_MAX, fields=fields, size=s)
    waddr = jnp.pad(waddr, ((0, 0), (0, 8 - fields)))           # one shape for every draw
    wvalid = jnp.pad(wvalid, ((0, 0), (0, 8 - fields)))
    wrep = jnp.broadcast_to(jnp.arange(R_MAX)[:, None], waddr.shape)
    lane_mask = np.random.default_rng(seed).random(lanes) < 0.7
    got = bool(_raw(waddr, wvalid, wrep, base, rep, blk, jnp.asarray(lane_mask), repeat,
                    size=s))
    want = ref_read_after_write(np.asarray(waddr), np.asarray(wvalid), np.asarray(wrep), base,
                                rep, blk, lane_mask, repeat, s)
    assert got == want


def test_read_after_write_examples():
    s, lanes = 2, 128
    full = jnp.ones(lanes, bool)
    # dst = the first element of repeat 1's source, written by repeat 0: a conflict
    w = jnp.array([[256]]), jnp.array([[True]]), jnp.array([[0]])
    assert bool(addressing.read_after_write(*w, 0, 8, 1, full, 2, size=s))
    # the same word written by the last repeat: nothing reads it afterwards
    w_last = jnp.array([[256]]), jnp.array([[True]]), jnp.array([[1]])
    assert not bool(addressing.read_after_write(*w_last, 0, 8, 1, full, 2, size=s))
    # the lane that would read it is masked off
    masked = full.at[0].set(False)
    assert not bool(addressing.read_after_write(*w, 0, 8, 1, masked, 2, size=s))
    # repStride 0: every repeat re-reads repeat 0's source, so a write into it conflicts
    w0 = jnp.array([[6]]), jnp.array([[True]]), jnp.array([[0]])
    assert bool(addressing.read_after_write(*w0, 0, 0, 1, full, 3, size=s))
    # an invalid (not issued) write never conflicts
    wi = jnp.array([[256]]), jnp.array([[False]]), jnp.array([[0]])
    assert not bool(addressing.read_after_write(*wi, 0, 8, 1, full, 2, size=s))
