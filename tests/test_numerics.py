"""Unit tests of :mod:`ascend_ref.numerics` against independently derived expectations.

The references here share no code with the module: one add is the exact rational sum
(:class:`fractions.Fraction`) rounded once to the element type — for float16 through
Python's correctly rounded ``float(Fraction)`` (the exact sum of two halves fits a double, so
the double → half conversion is the only rounding), for float32 by an explicit
round-to-nearest-even on the rational (a double would round twice) — and the NaN, signed-zero
and saturation rules are those of SPEC §3 / docs/SEMANTICS.md §D, written out by hand.
"""

from __future__ import annotations

import functools
import types
from fractions import Fraction
from typing import List, Optional, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ascend_ref import numerics

F16_QUIET, F32_QUIET = 0x0200, 0x00400000
F16_DEFAULT_NAN, F32_DEFAULT_NAN = 0xFE00, 0xFFC00000   # SEMANTICS §D (half / float)
F16_MAX_BITS = 0x7BFF                                     # 65504


def _profile(ftz: bool = False, minmax_nan: str = "payload"):
    """The three things the numerics read of a profile (numerics.Profile)."""
    return types.SimpleNamespace(
        fp32_ftz=ftz, minmax_nan=minmax_nan,
        default_nan=lambda dt: F16_DEFAULT_NAN if np.dtype(dt).itemsize == 2 else F32_DEFAULT_NAN)


# ------------------------------------------------------------------ references -------------

def _is_nan_bits(b: int, width: int) -> bool:
    if width == 2:
        return (b & 0x7C00) == 0x7C00 and (b & 0x03FF) != 0
    return (b & 0x7F800000) == 0x7F800000 and (b & 0x007FFFFF) != 0


def _round_half_even(q: Fraction) -> int:
    n, r = divmod(q.numerator, q.denominator)
    twice = 2 * r
    if twice > q.denominator or (twice == q.denominator and n % 2 == 1):
        n += 1
    return n


def _round_f32(q: Fraction) -> float:
    """``q`` (non-zero) rounded to the nearest float32, ties to even; ±inf on overflow."""
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()   # 2**e <= a < 2**(e+2)
    if Fraction(2) ** e > a:
        e -= 1
    if Fraction(2) ** (e + 1) <= a:
        e += 1
    ulp = Fraction(2) ** (max(e, -126) - 23)
    v = _round_half_even(a / ulp) * ulp
    if v >= Fraction(2) ** 128:
        return sign * float("inf")
    return sign * float(v)               # exact: at most 24 significant bits


def ref_add(a: int, b: int, dtype: str, *, saturate: bool = False, ftz: bool = False) -> int:
    """One add on raw bits by SPEC §3 / SEMANTICS §D, from the exact sum."""
    w = np.dtype(dtype).itemsize
    ut = np.uint16 if w == 2 else np.uint32
    ft = np.float16 if w == 2 else np.float32
    sign = 0x8000 if w == 2 else 0x80000000
    quiet = F16_QUIET if w == 2 else F32_QUIET
    if w == 4 and ftz:                        # subnormal inputs read as zero of their sign
        a = a & sign if (a & 0x7F800000) == 0 else a
        b = b & sign if (b & 0x7F800000) == 0 else b
    if _is_nan_bits(a, w):
        r = a | quiet
    elif _is_nan_bits(b, w):
        r = b | quiet
    else:
        x, y = (float(np.array(v, ut).view(ft)) for v in (a, b))
        if np.isinf(x) or np.isinf(y):
            if np.isinf(x) and np.isinf(y) and x != y:
                r = F16_DEFAULT_NAN if w == 2 else F32_DEFAULT_NAN
            else:
                r = int(np.array(x if np.isinf(x) else y, ft).view(ut))
        else:
            q = Fraction(x) + Fraction(y)
            if q == 0:                        # -0 only when both are -0
                r = sign if (a == sign and b == sign) else 0
            elif w == 2:
                with np.errstate(over="ignore"):       # beyond 65520 rounds to inf
                    r = int(np.array(float(q), np.float16).view(np.uint16))
            else:
                r = int(np.array(_round_f32(q), np.float32).view(np.uint32))
                if ftz and (r & 0x7F800000) == 0:
                    r &= sign
    if w == 2 and saturate:
        if _is_nan_bits(r, 2):
            r = 0
        elif (r & 0x7FFF) == 0x7C00:
            r = (r & sign) | F16_MAX_BITS
    return r


def ref_tree(bits: Sequence[int], dtype: str, **kw) -> int:
    level = list(bits)
    while len(level) > 1:
        level = [ref_add(level[i], level[i + 1], dtype, **kw) for i in range(0, len(level), 2)]
    return level[0]


@functools.lru_cache(maxsize=None)
def _tree_fn(dtype: str, saturate: bool, ftz: bool = False):
    """``numerics.tree_sum`` with the profile's adder, compiled once per configuration."""
    add2 = numerics.adder(dtype, _profile(ftz), saturate)
    return jax.jit(lambda x: numerics.tree_sum(x, add2))


def _h(*values: float) -> np.ndarray:
    return np.array(values, np.float16).view(np.uint16)


@functools.partial(jax.jit, static_argnames=("dtype", "ftz"))
def _jit_add(a, b, saturate, *, dtype: str, ftz: bool):
    nan = F16_DEFAULT_NAN if np.dtype(dtype).itemsize == 2 else F32_DEFAULT_NAN
    return numerics.add(a, b, dtype, saturate=saturate, default_nan=nan, ftz=ftz)


def _add(a, b, dtype: str, *, saturate=False, ftz=False) -> np.ndarray:
    """``numerics.add`` compiled (``saturate`` traced, as the kernels pass it)."""
    return np.asarray(_jit_add(jnp.asarray(a), jnp.asarray(b), jnp.asarray(saturate, bool),
                               dtype=dtype, ftz=ftz))


# ------------------------------------------------------------------ float16 adds / trees ----

ALL_F16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


@pytest.mark.parametrize("saturate", [False, True])
def test_float16_add_matches_the_exact_sum_rounded_once(saturate):
    rng = np.random.default_rng(1)
    a = rng.choice(ALL_F16, 4000)
    b = rng.choice(ALL_F16, 4000)
    # plus every special against a few values, and exact cancellations
    spec = _h(0.0, -0.0, np.inf, -np.inf, 65504, -65504, 6e-8, -6e-8, 1.0, -1.0)
    spec = np.concatenate([spec, np.array([0x7E00, 0x7C01, 0xFD55], np.uint16)])
    a = np.concatenate([a, np.repeat(spec, spec.size), a[:500]])
    b = np.concatenate([b, np.tile(spec, spec.size), a[:500] ^ 0x8000])
    got = _add(a, b, "float16", saturate=saturate)
    want = np.array([ref_add(int(x), int(y), "float16", saturate=saturate)
                     for x, y in zip(a, b)], np.uint16)
    chex.assert_shape(got, a.shape)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(a[i]), hex(b[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-65504, 65504, width=16), min_size=128, max_size=128),
       st.booleans())
def test_float16_tree_sum_equals_rounding_at_every_level(values, saturate):
    bits = _h(*values)
    got = int(_tree_fn("float16", saturate)(jnp.asarray(bits)))
    assert got == ref_tree([int(v) for v in bits], "float16", saturate=saturate)


def test_seed_003_example_is_35584_under_saturation():
    bits = _h(60000.0, 60000.0, -30000.0, 100.0)
    add2 = numerics.adder("float16", _profile(), True)
    got = int(numerics.tree_sum(jnp.asarray(bits), add2))
    # SPEC §3: 60000 + 60000 saturates to 65504, -30000 + 100 = -29900 rounds to -29904,
    # 65504 - 29904 = 35600 is a tie between 35584 and 35616 -> even 35584
    assert got == ref_tree([int(v) for v in bits], "float16", saturate=True)
    assert float(np.array(got, np.uint16).view(np.float16)) == 35584.0
    # without saturation the first add overflows and the sum stays +inf
    plain = int(numerics.tree_sum(jnp.asarray(bits), numerics.adder("float16", _profile(), False)))
    assert plain == 0x7C00


def test_tree_sum_order_is_pairwise_not_sequential():
    # in half the ulp at 2048 is 2: left to right every 2048 + 1 is a tie back to 2048; the
    # tree is ((2048+1)+(1+1)) + ((1+1)+(1+1)) = (2048 + 2) + 4 = 2054
    bits = _h(2048.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    add2 = numerics.adder("float16", _profile(), False)
    got = float(np.array(int(numerics.tree_sum(jnp.asarray(bits), add2)), np.uint16)
                .view(np.float16))
    seq = np.float16(2048.0)
    for _ in range(7):
        seq = np.float16(seq + np.float16(1.0))
    assert seq == 2048.0 and got == 2054.0
    assert int(numerics.tree_sum(jnp.asarray(bits), add2)) == ref_tree(
        [int(v) for v in bits], "float16")


def test_tree_sum_needs_a_power_of_two_and_padding_adds_plus_zero():
    add2 = numerics.adder("float16", _profile(), False)
    with pytest.raises(ValueError, match="power-of-two"):
        numerics.tree_sum(jnp.zeros(6, jnp.uint16), add2)
    x = jnp.asarray(_h(-0.0, -0.0, -0.0))       # padded with +0: -0 + +0 = +0
    out = numerics.padded_tree_sum(x[None], 4, add2, jnp.uint16(0))
    chex.assert_shape(out, (1, 1))
    assert int(out[0, 0]) == 0x0000
    y = jnp.asarray(_h(*range(1, 11)))          # 10 values in chunks of 4: 10, 26, 19
    sums = np.asarray(numerics.padded_tree_sum(y, 4, add2, jnp.uint16(0))).view(np.float16)
    assert sums.tolist() == [10.0, 26.0, 19.0]


# ------------------------------------------------------------------ special values ---------

@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_nan_and_signed_zero_rules(dtype):
    w = np.dtype(dtype).itemsize
    ut = np.uint16 if w == 2 else np.uint32
    ft = np.float16 if w == 2 else np.float32
    b = lambda v: int(np.array(v, ft).view(ut))     # noqa: E731
    sign = 0x8000 if w == 2 else 0x80000000
    quiet = F16_QUIET if w == 2 else F32_QUIET
    dn = F16_DEFAULT_NAN if w == 2 else F32_DEFAULT_NAN
    snan_a = (0x7C01 if w == 2 else 0x7F800001) | sign    # signalling NaNs, distinct payloads
    snan_b = 0x7C02 if w == 2 else 0x7F800002
    cases = [
        ((b(0.0), b(0.0)), 0), ((b(-0.0), b(-0.0)), sign), ((b(0.0), b(-0.0)), 0),
        ((b(-0.0), b(0.0)), 0), ((b(3.0), b(-3.0)), 0), ((b(-3.0), b(3.0)), 0),
        ((snan_a, b(1.0)), snan_a | quiet),          # a NaN: a, quieted
        ((b(1.0), snan_b), snan_b | quiet),          # else b NaN: b, quieted
        ((snan_a, snan_b), snan_a | quiet),          # both: a wins (the lower-index operand)
        ((b(np.inf), b(-np.inf)), dn), ((b(-np.inf), b(np.inf)), dn),
        ((b(np.inf), b(np.inf)), b(np.inf)), ((b(-np.inf), b(5.0)), b(-np.inf)),
    ]
    a = np.array([c[0][0] for c in cases], ut)
    bb = np.array([c[0][1] for c in cases], ut)
    got = _add(a, bb, dtype)
    want = np.array([c[1] for c in cases], ut)
    assert got.tolist() == want.tolist()
    assert want.tolist() == [ref_add(int(x), int(y), dtype) for x, y in zip(a, bb)]


def test_float16_saturation_clamps_overflow_and_zeroes_nan():
    a = _h(60000.0, -60000.0, np.inf, 1.0, 1.0)
    b = _h(60000.0, -60000.0, -np.inf, 2.0, np.inf)
    got = _add(a, b, "float16", saturate=True)
    assert got.tolist() == [0x7BFF, 0xFBFF, 0x0000, _h(3.0)[0], 0x7BFF]
    off = _add(a, b, "float16", saturate=False)
    assert off.tolist() == [0x7C00, 0xFC00, F16_DEFAULT_NAN, _h(3.0)[0], 0x7C00]
    # the flag may be traced: a 0-d boolean array gives the same bits
    assert _add(a, b, "float16", saturate=jnp.bool_(True)).tolist() == got.tolist()


def test_saturate_has_no_effect_on_float32():
    a = np.array([0x7F7FFFFF, 0x7F800000], np.uint32)       # max float, +inf
    got = _add(a, a, "float32", saturate=True)
    assert got.tolist() == [0x7F800000, 0x7F800000]


# ------------------------------------------------------------------ float32 subnormals -----

_f32_bits = st.one_of(
    st.integers(0, 0x007FFFFF),                   # subnormal / zero
    st.integers(0x00800000, 0x01FFFFFF),          # smallest normals
    st.integers(0x1F000000, 0x22000000),          # around the 2**-60 scaled-path threshold
    st.integers(0, 0x7F7FFFFF))                   # any finite
_signed_f32 = st.tuples(_f32_bits, st.booleans()).map(lambda t: t[0] | (0x80000000 * t[1]))


def _pad64(pairs):
    """Operand arrays of one fixed length (one compiled add for every example)."""
    a = np.zeros(64, np.uint32)
    b = np.zeros(64, np.uint32)
    a[:len(pairs)] = [p[0] for p in pairs]
    b[:len(pairs)] = [p[1] for p in pairs]
    return a, b


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_signed_f32, _signed_f32), min_size=1, max_size=64))
def test_float32_add_keeps_subnormals_like_the_exact_sum(pairs):
    a, b = _pad64(pairs)
    got = _add(a, b, "float32")
    want = [ref_add(int(x), int(y), "float32") for x, y in zip(a, b)]
    assert got.tolist() == want


def test_float32_subnormal_examples():
    tiny = 0x00000001                              # 2**-149
    cases = {
        (tiny, tiny): 0x00000002,                  # 2**-148, exact
        (0x00400000, 0x00400000): 0x00800000,      # two halves of the smallest normal
        (0x00800000, 0x80000001): 0x007FFFFF,      # normal - tiny: back to a subnormal
        (0x3F800000, tiny): 0x3F800000,            # 1 + 2**-149 rounds to 1
        (tiny, 0x80000001): 0x00000000,            # x + (-x) = +0
    }
    a = np.array([k[0] for k in cases], np.uint32)
    b = np.array([k[1] for k in cases], np.uint32)
    assert _add(a, b, "float32").tolist() == list(cases.values())
    assert [ref_add(int(x), int(y), "float32") for x, y in zip(a, b)] == list(cases.values())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_signed_f32, _signed_f32), min_size=1, max_size=32))
def test_float32_ftz_profile_flushes_inputs_and_results(pairs):
    a, b = _pad64(pairs)
    got = _add(a, b, "float32", ftz=True)
    assert got.tolist() == [ref_add(int(x), int(y), "float32", ftz=True) for x, y in zip(a, b)]
    assert not np.any(((got & 0x7F800000) == 0) & ((got & 0x007FFFFF) != 0))   # no subnormal


def test_adder_reads_the_profile():
    tiny = jnp.asarray(np.array([0x00000001], np.uint32))
    keep = numerics.adder("float32", _profile(ftz=False), False)
    flush = numerics.adder("float32", _profile(ftz=True), False)
    assert int(keep(tiny, tiny)[0]) == 0x00000002
    assert int(flush(tiny, tiny)[0]) == 0x00000000
    inf = jnp.asarray(np.array([0x7F800000], np.uint32))
    assert int(keep(inf, inf ^ jnp.uint32(0x80000000))[0]) == F32_DEFAULT_NAN


# ------------------------------------------------------------------ order keys / min, max --

def _value_order(bits: np.ndarray, dtype: str) -> List[tuple]:
    """Sort key from the value alone: (value, -0 before +0)."""
    vals = bits.view(dtype).astype(np.float64 if dtype.startswith("float") else np.int64)
    return [(float(v), 0 if (dtype.startswith("float") and v == 0 and np.signbit(v)) else 1)
            for v in vals]


def test_float16_order_key_is_monotone_over_every_non_nan_pattern():
    bits = ALL_F16[~np.isnan(ALL_F16.view(np.float16))]
    keys = np.asarray(numerics.order_key(jnp.asarray(bits), "float16")).astype(np.int64)
    chex.assert_type(np.asarray(numerics.order_key(jnp.asarray(bits), "float16")), np.int32)
    order = sorted(range(bits.size), key=lambda i: _value_order(bits[i:i + 1], "float16")[0])
    k = keys[order]
    assert np.all(np.diff(k) > 0)                # strictly increasing: one key per value
    neg0, pos0 = keys[bits == 0x8000][0], keys[bits == 0x0000][0]
    assert neg0 < pos0


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint16", "int32", "uint32"])
def test_order_key_is_monotone(dtype):
    rng = np.random.default_rng(7)
    w = np.dtype(dtype).itemsize
    ut = np.uint16 if w == 2 else np.uint32
    bits = rng.integers(0, 1 << (8 * w), 3000, dtype=np.uint64).astype(ut)
    extra = [0, 1 << (8 * w - 1), (1 << (8 * w)) - 1, (1 << (8 * w - 1)) - 1]
    bits = np.unique(np.concatenate([bits, np.array(extra, ut)]))
    if dtype == "float32":
        bits = bits[~np.isnan(bits.view(np.float32))]
    keys = np.asarray(numerics.order_key(jnp.asarray(bits), dtype)).astype(np.int64)
    vk = _value_order(bits, dtype)
    for i, j in zip(*np.triu_indices(60, 1)):
        assert (vk[i] < vk[j]) == (keys[i] < keys[j])
        assert (vk[i] == vk[j]) == (keys[i] == keys[j])
    order = sorted(range(bits.size), key=lambda i: vk[i])
    assert np.all(np.diff(keys[order]) > 0)


def ref_extreme(bits: np.ndarray, active: np.ndarray, kind: str, dtype: str):
    """SPEC §3: the first active NaN wins; else the min (max) value, -0 < +0, smallest index."""
    vals = bits.view(dtype)
    idx = [i for i in range(bits.size) if active[i]]
    if not idx:
        return None
    if dtype.startswith("float"):
        nans = [i for i in idx if np.isnan(vals[i])]
        if nans:
            return nans[0]
    vk = _value_order(bits, dtype)
    best: Optional[int] = None
    for i in idx:
        if best is None or (vk[i] < vk[best] if kind == "min" else vk[i] > vk[best]):
            best = i
    return best


_h16 = st.sampled_from([0x0000, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0x7C01,
                        0xFE00, 0x0001, 0x8001, 0x4000, 0x4000, 0x3C00])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_h16, st.booleans()), min_size=1, max_size=64),
       st.sampled_from(["min", "max"]), st.sampled_from(["general", "fast"]))
def test_select_extreme_follows_the_nan_zero_and_tie_rules(lanes, kind, path):
    bits = np.zeros(64, np.uint16)              # one length: inactive lanes pad the rest
    active = np.zeros(64, bool)
    bits[:len(lanes)] = [x for x, _ in lanes]
    active[:len(lanes)] = [a for _, a in lanes]
    value, index, found = numerics.extreme(jnp.asarray(bits), jnp.asarray(active), kind,
                                           "float16", path)
    want = ref_extreme(bits, active, kind, "float16")
    assert bool(found) == (want is not None)
    if want is not None:
        assert int(index) == want
        assert int(value) == int(bits[want])     # the lane's own bits (a NaN keeps its payload)


def test_select_extreme_examples():
    b = _h(1.0, -0.0, 0.0, -0.0, 1.0)
    act = np.ones(5, bool)
    v, i, _ = numerics.select_extreme(jnp.asarray(b), jnp.asarray(act), "min", "float16")
    assert (int(v), int(i)) == (0x8000, 1)         # -0 < +0, first of the equal -0s
    v, i, _ = numerics.select_extreme(jnp.asarray(b), jnp.asarray(act), "max", "float16")
    assert (int(v), int(i)) == (0x3C00, 0)         # tie between lanes 0 and 4: lane 0
    b2 = np.array([0x3C00, 0x7E01, 0x7C00, 0xFE02], np.uint16)
    for kind in ("min", "max"):
        v, i, _ = numerics.select_extreme(jnp.asarray(b2), jnp.ones(4, bool), kind, "float16")
        assert (int(v), int(i)) == (0x7E01, 1)     # the first NaN, for min and max alike
    v, i, found = numerics.select_extreme(jnp.asarray(b2), jnp.array([1, 0, 1, 0], bool), "max",
                                          "float16")
    assert (int(v), int(i), bool(found)) == (0x7C00, 2, True)   # inactive NaN lanes ignored


def test_nan_result_under_the_default_nan_profile():
    v = jnp.asarray(np.array([0x7E01, 0x3C00], np.uint16))
    keep = numerics.nan_result(v, "float16", _profile(minmax_nan="payload"))
    dflt = numerics.nan_result(v, "float16", _profile(minmax_nan="default"))
    assert np.asarray(keep).tolist() == [0x7E01, 0x3C00]
    assert np.asarray(dflt).tolist() == [F16_DEFAULT_NAN, 0x3C00]
    ints = jnp.asarray(np.array([0x7E01], np.uint16))
    assert int(numerics.nan_result(ints, "int16", _profile(minmax_nan="default"))[0]) == 0x7E01


def test_guarded_sums_fast_path_equals_the_reference_also_when_it_overflows():
    # one row that stays finite (the fast float32 tree is exact there) and one that overflows
    # (the guard fails and the exact adder gives the bits)
    rows = np.stack([_h(*np.linspace(-3, 5, 128)), _h(*([60000.0] * 4 + [1.0] * 124))])
    want = [ref_tree([int(v) for v in r], "float16") for r in rows]

    def run(path, x):
        return jax.jit(lambda x: numerics.guarded_sums(
            lambda s: (numerics.tree_sum(s.enter(x), s.add),),
            "float16", _profile(), False, path))(jnp.asarray(x))

    for path in ("fast", "general"):          # the fallback inside: always exact
        (sums,), _ = run(path, rows)
        assert np.asarray(sums).tolist() == want, path
    # "batch" reports its guard: it holds for the finite row alone and fails with the
    # overflowing one (the caller then reruns the batch exactly)
    (sums,), ok = run("batch", rows[:1])
    assert bool(ok) and np.asarray(sums).tolist() == want[:1]
    (_,), ok = run("batch", rows)
    assert not bool(ok)


def test_value_text_reads_back_as_the_same_bits():
    """verify --explain / --audit print values by numerics.value_text: every finite float32
    and half reads back as its own bits (it printed 7 digits: 0x406bacd4 and 0x406bacd6 both
    as 3.682424), -0 keeps its sign, and integers are exact."""
    rng = np.random.default_rng(5)
    words = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64),
                            [0x406BACD4, 0x406BACD6, 1, 0x007FFFFF, 0x7F7FFFFF, 0x80000000]])
    for w in words.astype(np.uint32):
        if not np.isfinite(w.view(np.float32)):
            continue
        back = np.float32(numerics.value_text(int(w), "float32")).view(np.uint32)
        assert back == w, hex(int(w))
    halves = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    for h in halves[np.isfinite(halves.view(np.float16))]:
        assert np.float16(float(numerics.value_text(int(h), "float16"))).view(np.uint16) == h
    assert numerics.value_text(0xFFFFFFFF, "int32") == "-1"
    assert numerics.value_text(2**64 - 1, "uint64") == str(2**64 - 1)


def test_value_text_tells_every_nan_apart():
    """A NaN prints its sign and payload (verify --explain, --audit and fuzz replay all print
    words by numerics.word_text; replay had its own formatter, verify printed every NaN as
    "nan"): the 2 * 1023 half NaNs give 2046 different texts, each naming its mantissa."""
    halves = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    nans = halves[np.isnan(halves.view(np.float16))]
    texts = [numerics.value_text(int(h), "float16") for h in nans]
    assert len(nans) == 2046 and len(set(texts)) == 2046
    for h, t in zip(nans.tolist(), texts):
        assert t == ("-" if h & 0x8000 else "") + f"nan(payload {h & 0x3FF:#x})"
    assert numerics.word_text(0x7FC00000, "float32") == "0x7fc00000 (nan(payload 0x400000))"
