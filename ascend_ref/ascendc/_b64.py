"""8-byte integers (int64 / uint64) in the level-2 count form — Ascend 950 ReduceSum.md /
ReduceMax.md / ReduceMin.md 数据类型 ("int64_t、uint64_t仅支持tensor前n个数据计算接口"),
docs/SEMANTICS.md §N "8-byte integers".

JAX runs with x64 disabled (SPEC §9), so a 64-bit element travels as two uint32 words
``(lo, hi)``: the engine gathers ``(rows, L, 2)`` (``ub.element_view``), L = 256 / 8 = 32
lanes a repeat, and these effects write each 8-byte result as two 4-byte words.

* ReduceSum (950: "int64_t、uint64_t采用方式三" — vector adds merge the repeats into one, then
  one tree): modulo 2^64, where every order gives the same bits (profile field
  ``int64_sum_overflow = "wrap"``, assumed: no page says what a sum past 64 bits gives).
  The audit's counterfactual ``"saturate"`` clamps every add to the type's range in the
  implementation's order (dav_3510 ``ReduceB64SumImpl``: 64 accumulator lanes, element
  ``k`` added to lane ``k % 64`` in order, then one tree of the 64 lanes). sharedTmpBuffer:
  方式三 — any size, not touched.
* ReduceMax / ReduceMin: (hi, lo) compared signed (int64: hi as int32) or unsigned; with
  calIndex the index of the first extreme as a uint32 with 4 zero bytes after it (dav_3510
  ``ReduceB64IndexTemplate``: "b64 type, index is uint32_t", "pad 0 to b64 bytes"): the
  8-byte word ``dst[1]`` reads back as the index. Indices stay below 2^32 inside any UB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import registry
from ..engine import Effects, Region, Write, gate

if TYPE_CHECKING:
    import numpy.typing as npt
    from jax.typing import ArrayLike

    from ..engine import Spec
    from ..params import Params

Pair = Tuple[jax.Array, jax.Array]

OVERFLOW = registry.ProfileField(
    "int64_sum_overflow", ("wrap", "saturate"),
    "ReduceSum count form, int64 / uint64: a sum past 64 bits wraps modulo 2^64, or every add "
    "(the implementation's order: 64 lanes in sequence, then a tree) clamps to the type's "
    "range (not documented)")

#: dav_3510 ReduceB64SumImpl: ``oneRepSize = 2 * VecLen / sizeof(T)`` accumulator lanes
IMPL_LANES = 64


def _u32(x: ArrayLike) -> jax.Array:
    return jnp.asarray(x, jnp.uint32)


def add_wrap(a: Pair, b: Pair) -> Pair:
    """``a + b`` modulo 2^64 on (lo, hi) words."""
    lo = a[0] + b[0]
    return lo, a[1] + b[1] + (lo < a[0]).astype(jnp.uint32)


def add_clamped(signed: bool) -> Callable[[Pair, Pair], Pair]:
    """The add of int64 (``signed``) or uint64 clamped to the type's range."""
    def add2(a: Pair, b: Pair) -> Pair:
        lo, hi = add_wrap(a, b)
        if not signed:
            over = (hi < a[1]) | ((hi == a[1]) & (lo < a[0]))          # the sum < a: a carry out
            return jnp.where(over, _u32(0xFFFFFFFF), lo), jnp.where(over, _u32(0xFFFFFFFF), hi)
        sa, sb, sr = (lax.bitcast_convert_type(v, jnp.int32) for v in (a[1], b[1], hi))
        over = ((sa ^ sr) & (sb ^ sr)) < 0                              # same signs in, other out
        neg = sa < 0
        return (jnp.where(over, jnp.where(neg, _u32(0), _u32(0xFFFFFFFF)), lo),
                jnp.where(over, jnp.where(neg, _u32(0x80000000), _u32(0x7FFFFFFF)), hi))

    return add2


def _tree(lo: jax.Array, hi: jax.Array, add2: Callable[[Pair, Pair], Pair]) -> Pair:
    """The adjacent-pair tree over the last axis (zero-padded to a power of two)."""
    n = lo.shape[-1]
    m = 1 << max(n - 1, 0).bit_length()
    if m != n:
        pad = jnp.zeros(lo.shape[:-1] + (m - n,), jnp.uint32)
        lo, hi = jnp.concatenate([lo, pad], -1), jnp.concatenate([hi, pad], -1)
    while lo.shape[-1] > 1:
        lo, hi = add2((lo[..., 0::2], hi[..., 0::2]), (lo[..., 1::2], hi[..., 1::2]))
    return lo[..., 0], hi[..., 0]


def _flat(bits: jax.Array, active: jax.Array) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """``(lo, hi, active)`` over the flat element order ``r * L + i`` (inactive words 0)."""
    act = active.reshape(-1)
    lo = jnp.where(act, bits[..., 0].reshape(-1), _u32(0))
    hi = jnp.where(act, bits[..., 1].reshape(-1), _u32(0))
    return lo, hi, act


def sum_wrap(bits: jax.Array, active: jax.Array) -> Pair:
    """The sum modulo 2^64 of the active elements (any order gives these bits)."""
    lo, hi, _ = _flat(bits, active)
    return _tree(lo, hi, add_wrap)


def sum_clamped(bits: jax.Array, active: jax.Array, signed: bool) -> Pair:
    """Every add clamped, in dav_3510's order: lane ``j`` of 64 accumulates elements ``j,
    j + 64, ...`` one after the other (from 0; lanes past count keep their value), then one
    tree of the 64 lanes."""
    lo, hi, act = _flat(bits, active)
    pad = (-lo.shape[0]) % IMPL_LANES
    if pad:
        z = jnp.zeros((pad,), jnp.uint32)
        lo, hi = jnp.concatenate([lo, z]), jnp.concatenate([hi, z])
        act = jnp.concatenate([act, jnp.zeros((pad,), bool)])
    lo, hi, act = (v.reshape(-1, IMPL_LANES) for v in (lo, hi, act))
    add2 = add_clamped(signed)

    def step(acc: Pair, row: Tuple[jax.Array, jax.Array, jax.Array]) -> Tuple[Pair, None]:
        rl, rh, ra = row
        nl, nh = add2(acc, (rl, rh))
        return (jnp.where(ra, nl, acc[0]), jnp.where(ra, nh, acc[1])), None

    zero = jnp.zeros((IMPL_LANES,), jnp.uint32)
    (al, ah), _ = lax.scan(step, (zero, zero), (lo, hi, act))
    return _tree(al, ah, add2)


def keys(bits: jax.Array, signed: bool, kind: str) -> Pair:
    """Unsigned (hi, lo) keys whose lexicographic minimum is the min (``kind`` "min") or the
    max of the values: int64 flips hi's sign bit; max takes the complement."""
    hi = bits[..., 1] ^ _u32(0x80000000) if signed else bits[..., 1]
    lo = bits[..., 0]
    if kind != "min":
        hi, lo = ~hi, ~lo
    return hi, lo


def first_extreme(bits: jax.Array, active: jax.Array, kind: str, signed: bool) -> jax.Array:
    """Over the last element axis (``bits`` ``(..., n, 2)``, ``active`` ``(..., n)``): the
    smallest position holding the min / max of the active elements (``n - 1`` if none)."""
    khi, klo = keys(bits, signed, kind)
    top = _u32(0xFFFFFFFF)
    best_hi = jnp.min(jnp.where(active, khi, top), axis=-1, keepdims=True)
    on_hi = active & (khi == best_hi)
    best_lo = jnp.min(jnp.where(on_hi, klo, top), axis=-1, keepdims=True)
    hit = on_hi & (klo == best_lo)
    n = active.shape[-1]
    index = jnp.min(jnp.where(hit, jnp.arange(n, dtype=jnp.int32), n), axis=-1)
    return jnp.minimum(index, n - 1)


def extreme(bits: jax.Array, active: jax.Array, kind: str,
            signed: bool) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """``(lo, hi, index)``: the min / max of the active elements (flat order ``r * L + i``)
    and the smallest index holding it ("如果存在多个最大值，该指令会将最小索引写入目的操作数")."""
    flat = bits.reshape(-1, 2)
    index = first_extreme(flat, active.reshape(-1), kind, signed)
    return flat[index, 0], flat[index, 1], index


def _result(spec: Spec, p: Params, words: List[jax.Array], used: jax.Array,
            diag: Dict[str, jax.Array]) -> Effects:
    """The dst words (4 bytes each: 8-byte results as (lo, hi)) and sharedTmpBuffer
    undefined where ``used`` (but for the dst words)."""
    runs, undefined = gate(spec, p)
    _, tmp_gated = gate(spec, p, "work_tensor")
    n = len(words)
    addr = p.tensor("dst").addr + jnp.arange(n, dtype=jnp.int32) * 4
    valid = jnp.broadcast_to(runs, (n,))
    write = Write("dst", addr, jnp.stack([_u32(w) for w in words]), 4, valid, valid)
    s = spec.size
    t0 = p.tensor("work_tensor").addr
    t1 = t0 + p.tensor("work_tensor").size * s
    d0, d1 = p.tensor("dst").addr, p.tensor("dst").addr + n * 4
    head_end = jnp.minimum(t1, d0)
    tail = jnp.maximum(t0, d1)
    undefined += [Region(t0, head_end - t0, runs & used), Region(tail, t1 - tail, runs & used)]
    undefined += [Region(r.start, r.nbytes, r.when & used) for r in tmp_gated]
    return Effects([write], undefined, diag)


def sum_effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                used: jax.Array) -> Effects:
    """ReduceSum, count form, int64 / uint64: dst[0] the sum (module docstring)."""
    lo, hi = sum_wrap(bits, active)
    clo, chi = sum_clamped(bits, active, spec.dtype == "int64")
    sat = OVERFLOW.holds(p, "saturate")
    return _result(spec, p, [jnp.where(sat, clo, lo), jnp.where(sat, chi, hi)], used, {})


def minmax_effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array, kind: str,
                   used: jax.Array) -> Effects:
    """ReduceMax / ReduceMin, count form, int64 / uint64: dst[0] the extreme; with
    calIndex dst[1] = its index (uint32, then 4 zero bytes)."""
    lo, hi, index = extreme(bits, active, kind, spec.dtype == "int64")
    words = [lo, hi]
    if spec.option == "index":
        words += [index.astype(jnp.uint32), _u32(0)]
    runs = p.repeat > 0
    return _result(spec, p, words, used, {"index": jnp.where(runs, index, 0)})


def to_pairs(values: npt.ArrayLike) -> np.ndarray:
    """Host helper: int64 / uint64 values as ``(n, 2)`` uint32 (lo, hi) words."""
    v = np.ascontiguousarray(np.asarray(values)).reshape(-1)
    return v.view(np.uint32).reshape(-1, 2)
