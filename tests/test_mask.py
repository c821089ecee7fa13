"""Unit tests of :mod:`ascend_ref.mask` against SPEC §1.2, restated lane by lane.

* continuous mode ``m``: lanes ``i < m``; 16-bit types ``m`` in [1, 128], 32-bit in [1, 64];
* bit mode: lane ``i`` takes part iff its bit is 1, LSB first; Ascend C ``mask[0]`` = lanes
  0-63, ``mask[1]`` = lanes 64-127; TIK ``[mask_h, mask_l]`` (high word first);
* inside jit the words travel as four uint32 (lanes 0-31 first).
"""

from __future__ import annotations

import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ascend_ref import mask as masks
from ascend_ref.constraints import Code, ConstraintError, first_failure

U64 = (1 << 64) - 1


def ref_lanes_bits(lo: int, hi: int, lanes: int) -> list:
    """Lane i takes part iff bit i of the 128-bit value ``hi:lo`` is set."""
    v = lo | (hi << 64)
    return [bool((v >> i) & 1) for i in range(lanes)]


def ref_words(lo: int, hi: int) -> list:
    return [lo & 0xFFFFFFFF, lo >> 32, hi & 0xFFFFFFFF, hi >> 32]


def _parse(m, dtype="float16", order="ascendc"):
    return masks.parse(m, dtype, api="t", chip="c", word_order=order)


def _args(words):
    """What a mask rule of a known mode reads: the mask words (``Params.mask``)."""
    return types.SimpleNamespace(mask=words)


def test_lanes_per_repeat():
    assert [masks.lanes_per_repeat(d) for d in ("float16", "half", "int16", "uint16")] == [128] * 4
    assert [masks.lanes_per_repeat(d) for d in ("float32", "float", "int32", "uint32")] == [64] * 4


@pytest.mark.parametrize("dtype, m", [("float16", 1), ("float16", 77), ("float16", 128),
                                      ("float32", 64), ("float32", 3)])
def test_continuous_mode(dtype, m):
    p = _parse(m, dtype)
    lanes = masks.lanes_per_repeat(dtype)
    assert p.mode == "count"
    assert np.asarray(p.value).tolist() == [m, 0, 0, 0]
    got = np.asarray(masks.lane_bits(p.mode, p.value, lanes))
    chex.assert_shape(got, (lanes,))
    assert got.tolist() == [i < m for i in range(lanes)]
    words = np.asarray(masks.to_words(p.mode, p.value, lanes)).tolist()
    low = (1 << m) - 1
    assert words == ref_words(low & U64, low >> 64)


_word = st.one_of(st.integers(0, U64), st.sampled_from([0, 1, 1 << 63, U64, 0xFFFFFFFF,
                                                         1 << 32]))


@settings(max_examples=80, deadline=None)
@given(_word, _word)
def test_bit_mode_ascendc_and_tik_word_orders(lo, hi):
    a = _parse([lo, hi])                       # Ascend C: lanes 0-63 first
    t = _parse([hi, lo], order="tik")          # TIK: [mask_h, mask_l]
    for p in (a, t):
        assert p.mode == "bits"
        assert np.asarray(p.value).tolist() == ref_words(lo, hi)      # four uint32, lo first
        assert np.asarray(masks.lane_bits(p.mode, p.value, 128)).tolist() == \
            ref_lanes_bits(lo, hi, 128)
    assert bool(masks.is_zero(a.mode, a.value)) == (lo == 0 and hi == 0)


def test_bit_mode_examples():
    # Ascend C [8, 0]: lane 3 only; TIK [0, 8]: the same lane (mask_l is the second word)
    for p in (_parse([8, 0]), _parse([0, 8], order="tik")):
        bits = np.asarray(masks.lane_bits(p.mode, p.value, 128))
        assert np.flatnonzero(bits).tolist() == [3]
    p = _parse([0, 1 << 63])                   # the last lane of a half repeat
    assert np.flatnonzero(np.asarray(masks.lane_bits(p.mode, p.value, 128))).tolist() == [127]
    p = _parse([(1 << 32) | 1, 0])             # a 64-bit word split into two uint32
    assert np.asarray(p.value).tolist() == [1, 1, 0, 0]
    assert np.flatnonzero(np.asarray(masks.lane_bits(p.mode, p.value, 128))).tolist() == [0, 32]


def test_32_bit_types_take_one_word_or_two_with_the_second_zero():
    one = _parse([0xF0], "float32")
    two = _parse([0xF0, 0], "float32")
    assert np.asarray(one.value).tolist() == np.asarray(two.value).tolist() == [0xF0, 0, 0, 0]
    assert np.flatnonzero(np.asarray(masks.lane_bits(one.mode, one.value, 64))).tolist() == \
        [4, 5, 6, 7]
    # a lane past 64 is structurally a two-word mask; the rule rejects it
    hi = _parse([1, 1], "float32")
    r = first_failure(masks.rules(hi.mode, "float32", "ok"), _args(hi.value))
    assert r is not None and r.code == Code.MASK_BITS
    assert first_failure(masks.rules(one.mode, "float32", "ok"), _args(one.value)) is None
    # to_words drops lanes past the dtype's lane count
    assert np.asarray(masks.to_words(hi.mode, hi.value, 64)).tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("m, dtype, order, code", [
    ([1], "float16", "ascendc", Code.MASK_BITS),          # half needs two words
    ([1, 2, 3], "float16", "ascendc", Code.MASK_BITS),
    ([1, 2, 3], "float32", "ascendc", Code.MASK_BITS),
    ([1], "float16", "tik", Code.MASK_BITS),              # TIK: exactly [mask_h, mask_l]
    ([1, 1 << 64], "float16", "ascendc", Code.MASK_BITS),  # a word beyond 64 bits
    ([-1, 0], "float16", "ascendc", Code.MASK_BITS),
    (-1, "float16", "ascendc", Code.MASK_RANGE),
    (1 << 31, "float16", "ascendc", Code.MASK_RANGE),
    (True, "float16", "ascendc", Code.BAD_ARGUMENT),      # a bool is not a lane count
    (64.0, "float16", "ascendc", Code.BAD_ARGUMENT),
    ("128", "float16", "ascendc", Code.BAD_ARGUMENT),
    ([1.0, 0], "float16", "ascendc", Code.BAD_ARGUMENT),
    (np.float32(3.0), "float16", "ascendc", Code.BAD_ARGUMENT),
    (np.array(64.7), "float16", "ascendc", Code.BAD_ARGUMENT),
])
def test_structural_faults_raise_with_their_code(m, dtype, order, code):
    with pytest.raises(ConstraintError) as e:
        _parse(m, dtype, order)
    assert e.value.code == code and e.value.param == "mask"


def test_numpy_and_jax_inputs():
    p = _parse(np.int64(5))
    assert (p.mode, np.asarray(p.value).tolist()) == ("count", [5, 0, 0, 0])
    p = _parse(np.array(5, np.int32))                # a concrete 0-d integer array
    assert (p.mode, np.asarray(p.value).tolist()) == ("count", [5, 0, 0, 0])
    p = _parse(np.array([3, 1 << 40], np.uint64))    # 64-bit words as an array, like a list
    assert np.asarray(p.value).tolist() == ref_words(3, 1 << 40)
    lane_words = np.array([1, 2, 3, 4], np.uint32)  # already four uint32 lane words
    p = _parse(jnp.asarray(lane_words))
    assert (p.mode, np.asarray(p.value).tolist()) == ("bits", [1, 2, 3, 4])


def test_a_traced_count_stays_traced_and_selects_the_same_lanes():
    def lanes_of(m):
        p = _parse(m)
        assert p.mode == "count"
        return masks.lane_bits(p.mode, p.value, 128)

    got = np.asarray(jax.jit(lanes_of)(jnp.int32(9)))
    assert got.tolist() == [i < 9 for i in range(128)]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_range_rules(dtype):
    lanes = masks.lanes_per_repeat(dtype)

    def code(mode, value, zero_rule):
        r = first_failure(masks.rules(mode, dtype, zero_rule), _args(np.asarray(value,
                                                                               np.uint32)))
        return None if r is None else r.code

    for m in (1, lanes // 2, lanes):
        assert code("count", [m, 0, 0, 0], "error") is None
    assert code("count", [lanes + 1, 0, 0, 0], "ok") == Code.MASK_RANGE
    # mask 0: a NOP where the product allows it, else MASK_ZERO (both modes)
    assert code("count", [0, 0, 0, 0], "ok") is None
    assert code("count", [0, 0, 0, 0], "error") == Code.MASK_ZERO
    assert code("bits", [0, 0, 0, 0], "ok") is None
    assert code("bits", [0, 0, 0, 0], "error") == Code.MASK_ZERO
    assert code("bits", [0, 0, 0, 1 << 31], "error") == (Code.MASK_BITS if lanes == 64 else None)
    # the rules also evaluate on traced values (a batch of masks inside jit)
    rules = masks.rules("count", dtype, "error")
    ok = jax.jit(lambda v: jnp.stack([jnp.asarray(r.ok(_args(v)), bool) for r in rules]))
    assert np.asarray(ok(jnp.asarray([lanes + 1, 0, 0, 0], jnp.uint32))).tolist() == [False, True]
    assert np.asarray(ok(jnp.asarray([0, 0, 0, 0], jnp.uint32))).tolist() == [True, False]


def test_is_zero_and_to_words_in_both_modes():
    assert bool(masks.is_zero("count", np.array([0, 7, 7, 7], np.uint32)))   # word 0 only
    assert not bool(masks.is_zero("count", np.array([1, 0, 0, 0], np.uint32)))
    assert bool(masks.is_zero("bits", np.zeros(4, np.uint32)))
    assert not bool(masks.is_zero("bits", np.array([0, 0, 0, 1], np.uint32)))
    w = masks.to_words("bits", np.array([0xFFFFFFFF, 0, 0, 0x80000000], np.uint32), 128)
    assert np.asarray(w).tolist() == [0xFFFFFFFF, 0, 0, 0x80000000]
    chex.assert_type(w, np.uint32)
