"""Bit-exact numerics on raw element bits (SPEC §3, docs/SEMANTICS.md §D).

Values travel as unsigned bits (uint16 / uint32) so that nothing the backend does to floats
(XLA CPU flushes float32 subnormals, folds ``x + 0``, reorders reductions) can change them:

* :func:`add` — one IEEE add, rounded to the element type, with the NaN, signed-zero and
  saturation rules; float32 keeps subnormals on any backend.
* :func:`tree_sum` — the strict pairwise tree ``(v0+v1)+(v2+v3)…`` rounding at every level.
* :func:`order_key` / :func:`select_extreme` — min/max on monotone integer keys: first NaN
  wins, −0 < +0, ties go to the smallest index.

>>> import numpy as np, jax.numpy as jnp
>>> from ascend_ref.numerics import add
>>> h = lambda *v: jnp.asarray(np.array(v, np.float16).view(np.uint16))
>>> bits = add(h(60000.0), h(60000.0), "float16", saturate=True, default_nan=0xFE00)
>>> np.asarray(bits).view(np.float16).tolist()
[65504.0]
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Protocol, Sequence, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

#: raw element bits (uint16 / uint32), a JAX or numpy array
Bits = Union[jax.Array, "np.ndarray[Any, Any]"]
#: an element type as its name or a numpy dtype (anything whose ``str()`` is the name)
DType = Union[str, "np.dtype[Any]"]
#: a two-operand add over arrays (bits or, on the fast path, float32 values)
Add2 = Callable[[jax.Array, jax.Array], jax.Array]


class Profile(Protocol):
    """What the numerics' adds read of a product (a :class:`~ascend_ref.chips.ChipProfile`,
    or a call's :class:`ascend_ref.engine.Product`, whose values may be traced)."""

    @property
    def fp32_ftz(self) -> ArrayLike: ...

    def default_nan(self, dtype: str) -> ArrayLike: ...


class MinMaxNan(Protocol):
    """What :func:`nan_result` reads of a product: ``minmax_nan`` is the profile's rule
    (``"payload"`` / ``"default"``) or, for a call's :class:`ascend_ref.engine.Product`,
    whether it is ``"default"`` (a bool, maybe traced)."""

    @property
    def minmax_nan(self) -> Union[str, ArrayLike]: ...

    def default_nan(self, dtype: str) -> ArrayLike: ...

_INT_MIN = -(2**31)
_INT_MAX = 2**31 - 1

# per width: (float type, bits type, sign bit, exponent mask, quiet bit)
_FMT = {
    2: (jnp.float16, jnp.uint16, 0x8000, 0x7C00, 0x0200),
    4: (jnp.float32, jnp.uint32, 0x80000000, 0x7F800000, 0x00400000),
}
_F32_TINY = 0x21800000      # bits of 2**-60: below it both operands take the scaled path
_F16_MAX = 0x7BFF           # 65504


def _width(bits: Bits) -> int:
    return jnp.dtype(bits.dtype).itemsize


def is_nan(bits: Bits) -> Bits:
    _, ut, sign, expo, _ = _FMT[_width(bits)]
    return (bits & ut(~sign & (2 ** (8 * _width(bits)) - 1))) > ut(expo)


def is_float(dtype: DType) -> bool:
    return str(dtype).startswith("float")


def _plain_add(a: Bits, b: Bits) -> jax.Array:
    ft, ut = _FMT[_width(a)][:2]
    return lax.bitcast_convert_type(
        lax.bitcast_convert_type(a, ft) + lax.bitcast_convert_type(b, ft), ut)


def _f32_scale_up(x: Bits) -> jax.Array:
    """|x| < 2**-60 as a float32 times 2**64, built without letting the FPU see a subnormal."""
    sign = x & jnp.uint32(0x80000000)
    expo = (x >> 23) & 0xFF
    mant = x & jnp.uint32(0x7FFFFF)
    sub = lax.bitcast_convert_type(mant.astype(jnp.float32) * jnp.float32(2.0**-85), jnp.uint32)
    mag = jnp.where(expo == 0, sub, (x & jnp.uint32(0x7FFFFFFF)) + jnp.uint32(64 << 23))
    return lax.bitcast_convert_type(mag | sign, jnp.float32)


def _f32_add_exact(a: Bits, b: Bits) -> jax.Array:
    """IEEE binary32 add keeping subnormals even where the backend flushes them (SPEC §9).

    If either operand is ≥ 2**-60 in magnitude the hardware add is already exact: a subnormal
    partner is below half an ulp, and a cancelling partner leaves a multiple of 2**-84. When
    both are tiny, both are scaled by 2**64 (exactly, from their bits), added, and the sum is
    scaled back with integer arithmetic; a subnormal result is then exact (a multiple of
    2**-149 below 2**-126 fits in 23 bits), so no second rounding happens.
    """
    tiny = ((a & 0x7FFFFFFF) < _F32_TINY) & ((b & 0x7FFFFFFF) < _F32_TINY)
    s = _f32_scale_up(a) + _f32_scale_up(b)
    sb = lax.bitcast_convert_type(s, jnp.uint32)
    normal = ((sb >> 23) & 0xFF) > 64
    back_normal = sb - jnp.uint32(64 << 23)
    back_sub = (sb & jnp.uint32(0x80000000)) | (jnp.abs(s) * jnp.float32(2.0**85)).astype(jnp.uint32)
    return jnp.where(tiny, jnp.where(normal, back_normal, back_sub), _plain_add(a, b))


def _flush(x: Bits) -> jax.Array:
    """Subnormal → zero of the same sign (for a profile with ``fp32_ftz = true``)."""
    return jnp.where((x & 0x7F800000) == 0, x & jnp.uint32(0x80000000), x)


def add(a: Bits, b: Bits, dtype: DType, *, saturate: ArrayLike, default_nan: ArrayLike,
        ftz: ArrayLike = False) -> jax.Array:
    """``a + b`` on raw bits of ``dtype`` (float16 / float32), every rule of SEMANTICS §D.

    ``saturate`` may be traced (half only: NaN → +0, ±inf → ±65504 after the add);
    ``default_nan`` is the profile's NaN for inf − inf (may be traced); ``ftz`` flushes
    float32 subnormals (a bool, or a traced bool: both adds are computed and one is chosen).
    """
    w = _width(a)
    ft, ut, sign, expo, quiet = _FMT[w]
    if w == 2:
        r = _plain_add(a, b)
    elif isinstance(ftz, (bool, np.bool_)):
        if ftz:
            a, b = _flush(a), _flush(b)
            r = _flush(_plain_add(a, b))
        else:
            r = _f32_add_exact(a, b)
    else:
        fa, fb = _flush(a), _flush(b)
        r = jnp.where(ftz, _flush(_plain_add(fa, fb)), _f32_add_exact(a, b))
        a, b = jnp.where(ftz, fa, a), jnp.where(ftz, fb, b)
    zero = ut(0)
    mag = ut(~sign & (2 ** (8 * w) - 1))
    both_zero = ((a & mag) == zero) & ((b & mag) == zero)
    r = jnp.where(both_zero, a & b, r)                      # -0 only if both are -0
    r = jnp.where(is_nan(a), a | ut(quiet),
                  jnp.where(is_nan(b), b | ut(quiet),
                            jnp.where(is_nan(r), ut(default_nan), r)))
    if w == 2:
        r = saturated(r, saturate)
    return r


def saturated(r: Bits, saturate: ArrayLike) -> jax.Array:
    """Half saturation of an add's result (bits): NaN → +0, ±inf → ±65504 where ``saturate``
    (may be traced); a 32-bit result is returned as it is."""
    r = jnp.asarray(r)
    if _width(r) != 2:
        return r
    ut, sign, expo = _FMT[2][1], _FMT[2][2], _FMT[2][3]
    mag = ut(~sign & 0xFFFF)
    sat = jnp.where(is_nan(r), ut(0),
                    jnp.where((r & mag) == ut(expo), (r & ut(sign)) | ut(_F16_MAX), r))
    return jnp.where(jnp.asarray(saturate, bool), sat, r)


def tree_sum(x: jax.Array, add2: Add2) -> jax.Array:
    """Pairwise tree over the last axis (length a power of two): ``(v0+v1)+(v2+v3)…``."""
    n = x.shape[-1]
    if n & (n - 1):
        raise ValueError(f"tree_sum needs a power-of-two length, got {n}")
    while x.shape[-1] > 1:
        x = add2(x[..., 0::2], x[..., 1::2])
    return x[..., 0]


def padded_tree_sum(x: jax.Array, lanes: int, add2: Add2, zero: ArrayLike) -> jax.Array:
    """Tree-sum ``x`` (last axis) in chunks of ``lanes`` values, zero-padded: one sum per chunk."""
    n = x.shape[-1]
    pad = (-n) % lanes
    if pad:
        x = jnp.concatenate([x, jnp.broadcast_to(zero, x.shape[:-1] + (pad,)).astype(x.dtype)], -1)
    return tree_sum(x.reshape(x.shape[:-1] + (-1, lanes)), add2)


def order_key(bits: Bits, dtype: DType) -> jax.Array:
    """Monotone int32 key: a < b as values ⇔ key(a) < key(b); −0 sorts below +0."""
    bits = jnp.asarray(bits)
    dtype = str(dtype)
    if dtype == "float16":
        x = bits.astype(jnp.int32)
        return jnp.where(x >= 0x8000, -1 - (x & 0x7FFF), x)
    if dtype == "float32":
        x = lax.bitcast_convert_type(bits, jnp.int32)
        return jnp.where(x < 0, -1 - (x & 0x7FFFFFFF), x)
    if dtype == "int16":
        return lax.bitcast_convert_type(bits, jnp.int16).astype(jnp.int32)
    if dtype == "uint16":
        return bits.astype(jnp.int32)
    if dtype == "int32":
        return lax.bitcast_convert_type(bits, jnp.int32)
    if dtype == "uint32":
        return lax.bitcast_convert_type(bits ^ jnp.uint32(0x80000000), jnp.int32)
    raise ValueError(f"no order key for {dtype}")


def select_extreme(bits: Bits, active: ArrayLike, kind: str,
                   dtype: DType) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """Min or max over the last axis by SEMANTICS §D: ``(value_bits, index, any_active)``.

    Among active elements: the first NaN if there is one (floats), else the smallest (largest)
    value with −0 < +0, and the smallest index among equals.
    """
    key = order_key(bits, dtype)
    want_min = kind == "min"
    if is_float(dtype):
        key = jnp.where(is_nan(bits), _INT_MIN if want_min else _INT_MAX, key)
    far = _INT_MAX if want_min else _INT_MIN
    masked = jnp.where(active, key, far)
    best = (jnp.min if want_min else jnp.max)(masked, axis=-1, keepdims=True)
    n = bits.shape[-1]
    pos = jnp.arange(n, dtype=jnp.int32)
    index = jnp.min(jnp.where(active & (key == best), pos, n), axis=-1)
    index = jnp.minimum(index, n - 1)
    value = jnp.take_along_axis(bits, index[..., None], axis=-1)[..., 0]
    return value, index, jnp.any(active, axis=-1)


def nan_result(value: jax.Array, dtype: DType, chip: MinMaxNan) -> jax.Array:
    """A min/max result under the profile's ``minmax_nan`` rule: ``"payload"`` keeps the
    winning NaN lane's own bits; ``"default"`` (Ascend 950 Reg Reduce page: "将该数据类型的nan
    写入") replaces any NaN result by the profile's default NaN of the dtype.

    ``chip``: a profile, or the call's :class:`ascend_ref.engine.Product` (its rule and
    default NaN may be traced)."""
    if not is_float(dtype):
        return value
    rule = chip.minmax_nan
    default = np.bool_(rule == "default") if isinstance(rule, str) else rule
    nan = jnp.asarray(chip.default_nan(str(dtype))).astype(value.dtype)
    return jnp.where(default & is_nan(value), nan, value)


def adder(dtype: DType, chip: Profile, saturate: ArrayLike) -> Add2:
    """The two-operand add of ``dtype`` under ``chip``'s profile, for :func:`tree_sum`.

    ``chip``: a profile, or the call's :class:`ascend_ref.engine.Product` whose values may
    be traced."""
    nan = chip.default_nan(str(dtype))
    ftz = chip.fp32_ftz

    def add2(a: jax.Array, b: jax.Array) -> jax.Array:
        return add(a, b, dtype, saturate=saturate, default_nan=nan, ftz=ftz)

    return add2


__all__ = ["add", "tree_sum", "padded_tree_sum", "order_key", "select_extreme", "adder",
           "is_nan", "is_float"]


# ------------------------------------------------------------ fast trees (issue 11) -------
#
# The functions above are the *general path*: every add through :func:`add`, min/max through
# :func:`select_extreme`. The ones below compute the same bits faster; the engine's fast path
# uses them, and tests/test_fast.py proves them equal to the general path and the oracle on
# adversarial data.

_SENT = 70000          # beyond every 16-bit key, also after mirroring (|key| <= 65536)


def _halving(x: jax.Array, op: Add2) -> jax.Array:
    while x.shape[-1] > 1:
        h = x.shape[-1] // 2
        x = op(x[..., :h], x[..., h:])
    return x[..., 0]


def _pad_pow2(x: jax.Array, fill: ArrayLike) -> jax.Array:
    n = x.shape[-1]
    m = 1 << max(n - 1, 0).bit_length()
    if m == n:
        return x
    pad = jnp.broadcast_to(jnp.asarray(fill, x.dtype), x.shape[:-1] + (m - n,))
    return jnp.concatenate([x, pad], -1)


#: lanes left after the first step of a tree (see :func:`_fold_min`)
_FOLD_WIDTH = 16
#: the same for the blocked trees (``blocked=True``: one 256-bit vector of int32)
_BLOCK_WIDTH = 8


def _packed_key16(bits: jax.Array, active: jax.Array, kind: str, dtype: str,
                  lane: jax.Array, lb: int) -> jax.Array:
    """``key << lb | lane`` of 16-bit elements: the order key (mirrored for max: ``-key``),
    every NaN ``-_SENT`` (it wins), inactive lanes ``_SENT``.

    The mirror costs no operation of its own: max packs ``lane - key * (1 << lb)`` (the
    sentinels given as their mirror images), the ops of min's ``key * (1 << lb) + lane``.
    With ``~key`` (one more op) or ``key * -(1 << lb) + lane`` (a negative factor) in the
    fused first step, LLVM vectorised the blocked step of ReduceMaxCount half across the
    blocks instead of along the lanes: 8-13 ms per 256 cases of 255 repeats against
    ReduceMinCount's 3.5, whose HLO differed by that op only; this form: 3.4-3.7 ms
    (measured, one process each, best of 7)."""
    if dtype == "float16":                      # order_key's value, without a select
        sx = lax.bitcast_convert_type(bits, jnp.int16).astype(jnp.int32)
        key = sx ^ ((sx >> 15) & 0x7FFF)
    else:
        key = order_key(bits, dtype)
    sign = 1 if kind == "min" else -1           # |key| <= 65535: -key is a mirror
    if is_float(dtype):
        key = jnp.where(is_nan(bits), -_SENT * sign, key)
    key = jnp.where(active, key, _SENT * sign)
    return key * (1 << lb) + lane if sign > 0 else lane - key * (1 << lb)


def _fold_min(x: jax.Array) -> jax.Array:
    """Minimum over the last axis (a power of two): a reduction over a major axis down to
    ``_FOLD_WIDTH`` lanes, then a halving tree. XLA:CPU fuses the key computation into that
    first reduction and vectorises it along the lanes (one pass over the input, no int32 key
    table stored); fused into a halving tree instead, it computes one scalar per row (~4x
    slower, measured), and a key table costs a pass of its own."""
    m = x.shape[-1]
    w = min(_FOLD_WIDTH, m)
    if w < m:
        x = jnp.min(x.reshape(x.shape[:-1] + (m // w, w)), axis=-2)
    return _halving(x, jnp.minimum)


def _blocks(x: jax.Array, w: int) -> jax.Array:
    """``[..., m]`` as ``[..., m // w, w]``: lane ``l`` at block ``l // w``, place ``l % w``."""
    return x.reshape(x.shape[:-1] + (x.shape[-1] // w, w))


def _block_base(m: int, w: int) -> jax.Array:
    """``[m // w, w]`` int32: the first lane of each lane's block (``l - l % w``). The packed
    keys of the blocked first step carry it; the place within the block is added after that
    step, where it is the same for every block: a lane iota over the blocked shape costs the
    first step (the tree's one pass over the input) twice its time at ``w = 8`` on XLA:CPU,
    and far more when it is the ``[..., m]`` iota reshaped (measured)."""
    return lax.broadcasted_iota(jnp.int32, (m // w, w), 0) * w


def _fold_blocks(x: jax.Array, place: bool = False) -> jax.Array:
    """Minimum over the last two axes of blocked values ``[..., m // w, w]``: a reduction over
    the blocks (a major axis) down to ``w`` lanes, then a halving tree (``place``: the place
    within the block, 0 ... w-1, added to each value between the two: see
    :func:`_block_base`). The halving tree after the first step runs one scalar per row, so
    fewer lanes there cost less: ``w = 8`` took a 128-case WholeReduceMin half tree from 0.65
    to 0.51 ms against ``w = 16``, one core, in one process -- with an active mask shared by
    the batch; with per-case masks (run_cases) the same code ran 2-3x slower than
    :func:`_fold_min`, so the engine asks for it only where the mask is shared
    (``Spec.shared_lanes``)."""
    x = jnp.min(x, axis=-2)
    if place:
        x = x + jnp.arange(x.shape[-1], dtype=x.dtype)
    return _halving(x, jnp.minimum)


def _packed_min16(bits: Bits, active: ArrayLike, kind: str, dtype: str,
                  lb: int, blocked: bool = False) -> jax.Array:
    """The smallest packed key ``key << lb | lane`` over the last axis (padded to a power of
    two with inactive lanes)."""
    act = _pad_pow2(jnp.broadcast_to(active, bits.shape), False)
    bits = _pad_pow2(jnp.asarray(bits), 0)
    m = bits.shape[-1]
    if not blocked:
        lane = jnp.arange(m, dtype=jnp.int32)
        return _fold_min(_packed_key16(bits, act, kind, dtype, lane, lb))
    w = min(_BLOCK_WIDTH, m)
    # inactive lanes: _SENT << lb (above every active key whatever the place added later)
    key = _packed_key16(_blocks(bits, w), jnp.ones((), bool), kind, dtype,
                        _block_base(m, w), lb)
    return _fold_blocks(jnp.where(_blocks(act, w), key, _SENT << lb), place=True)


def _float32_extreme(bits: Bits, active: ArrayLike, kind: str,
                     blocked: bool = False) -> Tuple[jax.Array, jax.Array]:
    """float32 min / max over the last axis as ``(index, found)`` in two passes: the
    smallest key (every NaN ``INT_MIN``, inactive lanes ``INT_MAX``: no float32 key is
    either, so no lane needs packing), then the first lane holding it. ``blocked``: the
    folds of :func:`_fold_blocks` (rows of at most 8 lanes in two blocks: ReduceDataBlock MAX
    float 6.0 -> 2.3 ms per 128 cases of 255 repeats, measured last session)."""
    n = bits.shape[-1]
    act = _pad_pow2(jnp.broadcast_to(active, bits.shape), False)
    bits = _pad_pow2(jnp.asarray(bits), 0)
    m = bits.shape[-1]
    if not blocked:
        x = lax.bitcast_convert_type(bits, jnp.int32)
        key = x ^ ((x >> 31) & _INT_MAX)               # order_key's value, without a select
        if kind != "min":
            key = ~key
        key = jnp.where(act, jnp.where(is_nan(bits), _INT_MIN, key), _INT_MAX)
        best = _fold_min(key)
        index = _fold_min(jnp.where(key == best[..., None], jnp.arange(m, dtype=jnp.int32), m))
        return jnp.minimum(index, n - 1), best != _INT_MAX
    w = min(_BLOCK_WIDTH, max(m // 2, 1))

    def keys() -> jax.Array:
        x = lax.bitcast_convert_type(_blocks(bits, w), jnp.int32)
        key = x ^ ((x >> 31) & _INT_MAX)               # order_key's value, without a select
        if kind != "min":
            key = ~key
        return jnp.where(_blocks(act, w), jnp.where(is_nan(_blocks(bits, w)), _INT_MIN, key),
                         _INT_MAX)

    best = _fold_blocks(keys())
    index = _fold_blocks(jnp.where(keys() == best[..., None, None], _block_base(m, w), m),
                         place=True)
    return jnp.minimum(index, n - 1), best != _INT_MAX


def select_extreme_tree(bits: Bits, active: ArrayLike, kind: str, dtype: DType,
                        blocked: bool = False) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """:func:`select_extreme` by one halving tree of elementwise minima (same three results).

    Each element gets a monotone key (mirrored for max), every NaN the smallest key (it wins),
    inactive lanes the largest. 16-bit types pack ``key << k | lane`` into one int32, so the
    smallest lane among equal keys falls out of a plain minimum; float32 takes the minimum
    key, then the first lane holding it; 32-bit integers carry ``(inactive, key, lane)`` and
    compare lexicographically. No active lane: index ``n - 1`` as in the general path.
    ``blocked`` (static): the 16-bit and float32 trees fold in blocks of ``_BLOCK_WIDTH``
    lanes (:func:`_fold_blocks`; faster where ``active`` is the same for a whole vmapped
    batch, slower where it is batched); the same results either way.
    """
    dtype = str(dtype)
    n = bits.shape[-1]
    lb = max(n - 1, 1).bit_length()
    if _width(bits) == 2 and lb <= 14:
        best = _packed_min16(bits, active, kind, dtype, lb, blocked)
        index = best & ((1 << lb) - 1)
        found = (best >> lb) != _SENT
    elif dtype == "float32":
        index, found = _float32_extreme(bits, active, kind, blocked)
    else:
        key = order_key(bits, dtype)
        if kind != "min":
            key = ~key                                 # mirrored: max becomes min, no overflow
        nan = is_nan(bits) if is_float(dtype) else None
        lane = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), key.shape)
        active = jnp.broadcast_to(active, key.shape)
        k = key if nan is None else jnp.where(nan, _INT_MIN, key)
        idle = _pad_pow2((~active).astype(jnp.int32), 1)
        k, ln = _pad_pow2(k, _INT_MAX), _pad_pow2(lane, n)

        def pick(a: Sequence[jax.Array],
                 b: Sequence[jax.Array]) -> Tuple[jax.Array, jax.Array, jax.Array]:
            ia, ka, la = a
            ib, kb, lb_ = b
            right = (ib < ia) | ((ib == ia) & ((kb < ka) | ((kb == ka) & (lb_ < la))))
            return (jnp.where(right, ib, ia), jnp.where(right, kb, ka), jnp.where(right, lb_, la))

        x = (idle, k, ln)
        while x[0].shape[-1] > 1:
            h = x[0].shape[-1] // 2
            x = pick(tuple(v[..., :h] for v in x), tuple(v[..., h:] for v in x))
        found = x[0][..., 0] == 0
        index = x[2][..., 0]
    index = jnp.where(found, index, n - 1)
    value = jnp.take_along_axis(bits, index[..., None], axis=-1)[..., 0]
    return value, index, found


#: int16 keys of :func:`half_extreme_value`: a finite or infinite half's key lies in
#: [-31745, 31744] (mirrored for max: [-31744, 31745]); a NaN in lane ``l`` is
#: ``_NAN16 + l`` below all of them, an inactive lane ``_IDLE16`` above
_NAN16, _IDLE16 = -(2**15), 2**15 - 1
_NAN16_TOP = -31746               # the largest NaN key: lanes 0 ... 1022


def half_extreme_value(bits: Bits, active: ArrayLike, kind: str,
                       blocked: bool = False) -> Tuple[jax.Array, jax.Array]:
    """float16 min / max over the last axis, the value only: ``(value, any_active)``, the
    value and flag :func:`select_extreme` gives (the first NaN lane's bits where a NaN is
    active; ``bits[n - 1]`` where no lane is).

    One halving tree of int16 minima (twice the lanes of a vector of the packed int32 keys
    :func:`select_extreme_tree` needs for the index): the order key (mirrored for max), a
    NaN in lane ``l`` ``_NAN16 + l`` (the first NaN lane wins and is read back from the
    key), inactive lanes ``_IDLE16``. Equal non-NaN keys are equal bits (the key is a
    bijection, -0 below +0), so the value is the key's inverse -- the same xor -- but for a
    NaN, whose bits come from its lane. ``blocked``: the first step reduces blocks of 8 lanes
    over a major axis (the form :func:`_fold_blocks` uses), else :func:`_fold_min`'s.
    ReduceDataBlock MIN half (its one caller: an instruction without an index), 64 cases
    of 255 repeats, the tree alone: 0.35 ms against 0.52-0.65 for the packed tree (measured
    in turns on a loaded 2-core VM, 2026-12-07).

    >>> import numpy as np
    >>> x = np.array([[0x3C00, 0x8000, 0x0000, 0xBC00],      # 1, -0, +0, -1
    ...               [0x3C00, 0x7E01, 0xFE02, 0x0000]], np.uint16)   # a NaN of each sign
    >>> v, found = half_extreme_value(x, np.ones(4, bool), "min")
    >>> [hex(int(b)) for b in v], [hex(int(b)) for b in half_extreme_value(x, True, "max")[0]]
    (['0xbc00', '0x7e01'], ['0x3c00', '0x7e01'])
    >>> [hex(int(b)) for b in half_extreme_value(x[:, :3], [True, True, False], "max")[0]]
    ['0x3c00', '0x7e01']
    """
    bits = jnp.asarray(bits)
    n = bits.shape[-1]
    if n > _NAN16_TOP - _NAN16 + 1:
        raise ValueError(f"half_extreme_value: {n} lanes > {_NAN16_TOP - _NAN16 + 1}")
    act = _pad_pow2(jnp.broadcast_to(jnp.asarray(active, bool), bits.shape), False)
    padded = _pad_pow2(bits, 0)
    m = padded.shape[-1]
    sx = lax.bitcast_convert_type(padded, jnp.int16)
    key = sx ^ ((sx >> 15) & jnp.int16(0x7FFF))             # order_key's, in 16 bits
    if kind != "min":
        key = -key
    lane = jnp.arange(m, dtype=jnp.int16)
    key = jnp.where(is_nan(padded), jnp.int16(_NAN16) + lane, key)
    key = jnp.where(act, key, jnp.int16(_IDLE16))
    if blocked:
        if m > _BLOCK_WIDTH:
            key = jnp.min(_blocks(key, _BLOCK_WIDTH), axis=-2)
        best = _halving(key, jnp.minimum)
    else:
        best = _fold_min(key)
    nan = best <= _NAN16_TOP
    at = jnp.clip(best.astype(jnp.int32) - _NAN16, 0, n - 1)
    first_nan = jnp.take_along_axis(bits, at[..., None], axis=-1)[..., 0]
    k = best if kind == "min" else -best
    value = lax.bitcast_convert_type(k ^ ((k >> 15) & jnp.int16(0x7FFF)), jnp.uint16)
    found = best != _IDLE16
    value = jnp.where(nan, first_nan, jnp.where(found, value, bits[..., n - 1]))
    return value, found


_TINY_F32 = 0x0C000000     # bits of 2**-103: below it a non-zero float32 leaves the fast tree


class Summation:
    """One tree-sum arithmetic: values ``enter`` a domain, are added, and ``leave`` as bits.

    ``fast=False`` — the general path: the domain is the raw bits, :func:`add` every rule.
    ``fast=True``  — half: the domain is float16 and every add a native half add (IEEE
    binary16, rounded to nearest even: the device's rounding of one add); float: float32
    adds, with non-zero inputs below 2**-103 replaced by NaN so that every partial sum is a
    multiple of 2**-126 (no subnormal ever reaches the FPU, so a flush-to-zero backend cannot
    change anything). Correct exactly when every result is finite (then no NaN, infinity,
    overflow or saturation happened): :meth:`ok`.

    Why native half adds, not float32 adds rounded with ``astype(float16).astype(float32)``
    (the form before; the same bits, since 24 ≥ 2·11 + 2): XLA's GPU compiler runs
    ``SimplifyFPConversions`` when ``xla_allow_excess_precision`` is on (the default), which
    deletes exactly such ``f32 -> f16 -> f32`` round trips, so on a GPU the tree would have
    summed in float32. A float16 add's result is a float16 (XLA:CPU lowers it to LLVM's
    ``fadd half``: a native instruction where the CPU has one, else a float add rounded per
    operation; GPUs add halves natively). It is also faster on XLA:CPU: run_batch's kernel
    of WholeReduceSum half (R = 255, 64 cases) 0.29-0.42 ms against 0.50-0.60.
    """

    def __init__(self, dtype: DType, chip: Profile, saturate: ArrayLike, fast: bool,
                 all_active: bool = False):
        self.dtype, self.fast = str(dtype), fast
        #: the caller knows every lane is active: :func:`lane_tree` / :func:`row_tree` skip
        #: the mask they are given (the same bits)
        self.all_active = all_active
        self.half = itemsize_of(self.dtype) == 2
        self._exact = adder(self.dtype, chip, saturate)

    def enter(self, bits: jax.Array, active: Optional[ArrayLike] = None) -> jax.Array:
        ut = jnp.uint16 if self.half else jnp.uint32
        if active is not None:
            bits = jnp.where(active, bits, ut(0))
        if not self.fast:
            return bits
        if self.half:
            return lax.bitcast_convert_type(bits, jnp.float16)
        mag = bits & jnp.uint32(0x7FFFFFFF)
        tiny = (mag != 0) & (mag < _TINY_F32)
        return jnp.where(tiny, jnp.float32(jnp.nan), lax.bitcast_convert_type(bits, jnp.float32))

    @property
    def zero(self) -> jax.Array:
        if self.fast:
            return jnp.float16(0.0) if self.half else jnp.float32(0.0)
        return (jnp.uint16 if self.half else jnp.uint32)(0)

    def add(self, a: jax.Array, b: jax.Array) -> jax.Array:
        if not self.fast:
            return self._exact(a, b)
        return a + b

    def leave(self, v: jax.Array) -> jax.Array:
        if not self.fast:
            return v
        if self.half:
            return lax.bitcast_convert_type(v, jnp.uint16)
        return lax.bitcast_convert_type(v, jnp.uint32)

    def ok(self, *values: jax.Array) -> jax.Array:
        """True when the fast results equal the general path's (every value finite)."""
        if not self.fast:
            return jnp.bool_(True)
        return functools.reduce(jnp.logical_and, [jnp.all(jnp.isfinite(v)) for v in values])

    def ok_bits(self, *bits: jax.Array) -> jax.Array:
        """:meth:`ok` read from the results' bits (after :meth:`leave`): the exponent is not
        all ones. Same answer (a fast half value is a half; a float one is its own bits),
        on the results every path returns."""
        if not self.fast:
            return jnp.bool_(True)
        expo = 0x7C00 if self.half else 0x7F800000
        return functools.reduce(jnp.logical_and, [_all_finite_bits(b, expo) for b in bits])


def lane_tree(s: "SummationLike", bits: jax.Array,
              active: Optional[ArrayLike] = None, pairs: bool = False) -> jax.Array:
    """``tree_sum(s.enter(bits, active), s.add)``: the strict pairwise tree over the last axis
    (a power of two) of ``bits`` entered into the summation ``s`` (masked lanes +0), for the
    short trees of ReduceDataBlock SUM (8 / 16 lanes a block).

    On the fast arithmetic (:class:`Summation` ``fast=True``) the same bits come out of code
    XLA:CPU runs faster (A/B measured on run_batch's kernel, R = 255, 128 cases a chunk):

    * half: the first level reads each pair of adjacent lanes as one uint32 word and adds
      its two halves, so the pairs it adds are contiguous loads; ``x[..., 0::2] + x[...,
      1::2]`` (a stride-2 read of the minor axis) made XLA store the entered values as a
      float32 table and add them one scalar at a time (~2.8x the kernel; measured on the
      float32 domain of the time). A half add is commutative, so which half of the word is
      which lane does not matter; masked lanes are +0 bits either way. (The float branch
      below, a cond, made this one slower.) On the native float16 domain, 64 cases: the
      plain tree measured the same as this one where every lane is active (0.49-0.60 ms)
      and slower under a traced mask (0.72-0.79 against 0.50-0.76 ms).
    * float: no masking at all when every lane is active (the common full mask): a
      ``lax.cond`` on ``all(active)``. XLA does not vectorise a fused loop that reads an
      operand broadcast over the batch (the mask, from traced parameters): the masked tree
      ran ~6x slower than the unmasked one, and the cond's operand (the source slice)
      becomes a plain buffer the tree reads linearly (~2.4x the kernel). With parameters
      every case of a run_batch shares the predicate is one value and one branch runs;
      with per-case masks (a batched predicate) both run and a select picks. Where the host
      knows every lane is active (:attr:`Summation.all_active`, with the source address
      compiled in: run_batch's pinned kernels) there is no cond at all: the tree reads a
      static slice of the row, fused (ReduceDataBlock SUM float: 0.32-0.44 ms a 64-case
      chunk at R = 255, against 0.49-0.55 through the cond).

    ``pairs``: ``bits`` are 16-bit lanes two to a uint32 word (the low half the even lane:
    the UB's byte order), ``(..., n // 2)`` (:attr:`ascend_ref.engine.Spec.pair_src`), for
    the half fast tree, which then takes its first level straight from the words. Made in
    the kernel from uint16 rows, those words are a bitcast of lane pairs that XLA:CPU runs
    as a reduction over an axis of 2; from uint32 rows, A/B in alternating processes
    (ReduceDataBlock SUM half, R = 255, best of 30): run_cases' 128-case chunk kernel
    0.56-0.69 ms against 0.91-1.04, run_batch of 256 cases 2.19-2.40 ms against
    3.02-3.35. Every other summation unpacks the words into lanes first.

    The long rows of WholeReduceSum and vec_reduce_add (64 / 128 lanes) take
    :func:`row_tree`: the plain tree of the entered values (this cond was not tried there).
    Every other summation (the exact one, :mod:`ascend_ref.grad`'s) takes :func:`tree_sum`."""
    fast_half = isinstance(s, Summation) and s.fast and s.half
    if pairs and not fast_half:
        bits = lax.bitcast_convert_type(bits, jnp.uint16).reshape(bits.shape[:-1] + (-1,))
        pairs = False
    n = bits.shape[-1] * (2 if pairs else 1)
    if not (isinstance(s, Summation) and s.fast and n >= 1 and n & (n - 1) == 0):
        return tree_sum(s.enter(bits, active), s.add)
    fast: Summation = s

    def tree(act: Optional[jax.Array]) -> jax.Array:
        if pairs:
            return tree_sum(_half_pair_sums(fast, bits, act, words=True), fast.add)
        if not (fast.half and n >= 2 and bits.dtype == jnp.uint16):
            return tree_sum(fast.enter(bits, act), fast.add)
        return tree_sum(_half_pair_sums(fast, bits, act), fast.add)

    if active is None or fast.all_active:
        return tree(None)
    act = jnp.broadcast_to(jnp.asarray(active, bool), bits.shape[:-1] + (n,))
    if fast.half:
        return tree(act)
    return lax.cond(jnp.all(act), lambda: tree(None), lambda: tree(act))


def _half_pair_sums(s: Summation, bits: jax.Array, act: Optional[jax.Array],
                    words: bool = False) -> jax.Array:
    """The first level of the tree over ``bits`` (uint16 half lanes, an even count, or with
    ``words`` those lanes two to a uint32 word; masked lanes +0): each pair of adjacent
    lanes read as one uint32 word, its two halves added in ``s``'s fast arithmetic. A half
    add is commutative, so which half is which lane does not matter. ``x[..., 0::2] +
    x[..., 1::2]`` is a stride-2 read of the minor axis that XLA:CPU runs one scalar at a
    time; the words made here from uint16 lanes are a bitcast it lowers to a stored
    reduction over an axis of 2 (faster than that, slower than words the kernel is given:
    :func:`lane_tree`'s ``pairs``)."""
    if words:
        w = bits
        if act is not None:               # lane 2k is the word's low half, 2k + 1 its high
            w = w & (jnp.where(act[..., 0::2], jnp.uint32(0xFFFF), jnp.uint32(0))
                     | jnp.where(act[..., 1::2], jnp.uint32(0xFFFF0000), jnp.uint32(0)))
    else:
        n = bits.shape[-1]
        x = bits if act is None else bits & jnp.where(act, jnp.uint16(0xFFFF), jnp.uint16(0))
        w = lax.bitcast_convert_type(x.reshape(x.shape[:-1] + (n // 2, 2)), jnp.uint32)
    lo = s.enter((w & jnp.uint32(0xFFFF)).astype(jnp.uint16))
    hi = s.enter((w >> 16).astype(jnp.uint16))
    return s.add(lo, hi)


def row_tree(s: "SummationLike", bits: jax.Array,
             active: Optional[ArrayLike] = None) -> jax.Array:
    """``tree_sum(s.enter(bits, active), s.add)`` for the long rows of one repeat (128 half /
    64 float lanes: WholeReduceSum, vec_reduce_add's stage 1), with no mask at all where the
    caller knows every lane is active (:attr:`Summation.all_active`).

    On the fast half arithmetic (native float16 adds, :class:`Summation`) the plain tree is
    the fastest form measured: XLA:CPU fuses the source slice with the first three levels
    and stores 16 sums a row. A/B on run_batch's kernel (R = 255, 64 cases, best of 30,
    alternating processes), this tree against the earlier float32-domain forms (a first
    level from uint32 pair words, the last level a stored ``reduce_window``): WholeReduceSum
    half 0.29-0.42 ms against 0.50-0.60, vec_reduce_add half 0.29-0.41 against 0.46-0.61,
    pinned or not; a stored last level in float16 measured the same as the plain tree."""
    if isinstance(s, Summation) and s.all_active:
        active = None
    return tree_sum(s.enter(bits, active), s.add)


class SummationLike(Protocol):
    """What :func:`lane_tree` reads of a summation (:class:`Summation`, or
    :class:`ascend_ref.grad.Differentiable`'s protocol)."""

    def enter(self, bits: jax.Array, active: Optional[ArrayLike] = None) -> jax.Array: ...

    def add(self, a: jax.Array, b: jax.Array) -> jax.Array: ...


def _all_finite_bits(bits: jax.Array, expo: int) -> jax.Array:
    """No element of ``bits`` has its exponent field ``expo`` all ones (a scalar bool).

    A ``reduce_window`` over the whole array, not ``jnp.all`` of an elementwise test: XLA
    (CPU) fuses a cheap elementwise producer into every consumer, so an elementwise test
    here recomputed the whole fast tree a second time (measured: the guard doubled
    ReduceDataBlock SUM's kernel time); a reduce-window is not fused with its operand, so
    the tree's bits are computed once and both the results and this guard read them. The
    same op runs on every backend."""
    bits = jnp.asarray(bits)
    if bits.ndim == 0 or bits.size == 0:
        return jnp.all((bits & expo) != expo)
    e = np.asarray(expo, bits.dtype)

    def worst(a: jax.Array, b: jax.Array) -> jax.Array:
        bad = ((a & e) == e) | ((b & e) == e)
        return lax.select(bad, jnp.full(a.shape, e, a.dtype), jnp.zeros(a.shape, a.dtype))

    r = lax.reduce_window(bits, np.zeros((), bits.dtype), worst, bits.shape,
                          (1,) * bits.ndim, "VALID")
    return (r.reshape(()) & e) != e


def itemsize_of(dtype: DType) -> int:
    return jnp.dtype(str(dtype)).itemsize


def guarded_sums(compute: Callable[[Summation], Sequence[jax.Array]], dtype: DType,
                 chip: Profile, saturate: ArrayLike, path: str,
                 all_active: bool = False) -> Tuple[Tuple[jax.Array, ...], jax.Array]:
    """Run ``compute(summation) -> tuple of domain values`` on the path's arithmetic.

    Returns ``(bits tuple, exact_ok)``. ``path``: ``"general"`` / ``"fallback"`` — the exact
    adder; ``"batch"`` — the fast tree, ``exact_ok`` False when its guard fails (the caller
    reruns the batch on the fallback path); ``"fast"`` — the fast tree and, when the guard
    fails, the exact adder chosen by ``lax.cond`` (under a user's ``vmap`` both run).
    ``all_active``: every lane the trees are given takes part (:attr:`Exact.all_active`).
    """
    if path in ("general", "fallback"):
        s = Summation(dtype, chip, saturate, False)
        return tuple(compute(s)), jnp.bool_(True)
    s = Summation(dtype, chip, saturate, True, all_active)
    fast = tuple(s.leave(v) for v in compute(s))
    ok = s.ok_bits(*fast)
    if path == "batch":
        return fast, ok
    e = Summation(dtype, chip, saturate, False)
    return lax.cond(ok, lambda: fast, lambda: tuple(compute(e))), jnp.bool_(True)


def extreme(bits: Bits, active: ArrayLike, kind: str, dtype: DType,
            path: str, blocked: bool = False) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """Min/max on the path's algorithm (the tree everywhere but the general path;
    ``blocked``: see :func:`select_extreme_tree`)."""
    if path == "general":
        return select_extreme(bits, active, kind, dtype)
    return select_extreme_tree(bits, active, kind, dtype, blocked)


class ExactProfile(Profile, MinMaxNan, Protocol):
    """What :class:`Exact` reads of a product (the call's :class:`ascend_ref.engine.Product`)."""


class Exact:
    """The bit-exact arithmetic: what the engine hands every instruction's effects.

    An instruction's effects compute only through an arithmetic (``effects(spec, p, x, active,
    arith)``), so the same declaration runs over another one: :mod:`ascend_ref.grad` passes
    typed float values with derivatives whose forward bits are these. Here values are the raw
    element bits (uint16 / uint32) and every operation is one of the functions above, on the
    algorithms of ``path`` (:func:`guarded_sums`, :func:`extreme`). The engine builds it as
    ``arithmetic(dtype, Product(p), saturate, path)`` for each call.
    """

    #: min / max by the blocked trees (:func:`select_extreme_tree`); the engine sets it
    #: where every case of a batch shares its active lanes (``Spec.shared_lanes``)
    blocked: bool = False
    #: every lane of every repeat takes part in every case (the engine sets it from
    #: ``Spec.all_active``): the fast sum trees read the source unmasked, the 16-bit min /
    #: max trees take a constant mask
    all_active: bool = False

    def __init__(self, dtype: DType, chip: ExactProfile, saturate: ArrayLike = False,
                 path: str = "general"):
        self.dtype, self.chip, self.saturate, self.path = str(dtype), chip, saturate, path
        self.bits_type = jnp.uint16 if itemsize_of(self.dtype) == 2 else jnp.uint32

    @property
    def zero(self) -> jax.Array:
        """+0 (a masked lane's value, the pad of a tree)."""
        return jnp.zeros((), self.bits_type)

    def add(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """One add of the type, every rule of SEMANTICS §D (saturating if the call does)."""
        return adder(self.dtype, self.chip, self.saturate)(a, b)

    def sums(self, compute: Callable[[Summation], Sequence[jax.Array]]
             ) -> Tuple[Tuple[jax.Array, ...], jax.Array]:
        """``compute(summation)`` -> tree sums: ``(results, exact_ok)`` (:func:`guarded_sums`)."""
        return guarded_sums(compute, self.dtype, self.chip, self.saturate, self.path,
                            self.all_active)

    def extreme(self, x: jax.Array, active: ArrayLike,
                kind: str) -> Tuple[jax.Array, jax.Array, jax.Array]:
        """Min / max over the last axis: ``(value, index, any_active)`` (:func:`extreme`)."""
        return extreme(x, self._lanes(x, active), kind, self.dtype, self.path, self.blocked)

    def _lanes(self, x: jax.Array, active: ArrayLike) -> ArrayLike:
        """``active``, or where every lane is active (Spec.all_active) on a fast 16-bit tree a
        constant mask XLA folds away from the keys: ReduceDataBlock MIN half's kernel
        0.48-0.56 ms per 64 cases at R = 255 against 0.62-0.70 (2026-12-06, packed keys).
        Not for float32, whose tree was slower with it (ReduceDataBlock MAX float 1.03-1.09
        against 0.75-0.81 ms)."""
        if self.all_active and self.path != "general" and itemsize_of(self.dtype) == 2:
            return np.ones(jnp.shape(x)[-1:], bool)
        return active

    def extreme_value(self, x: jax.Array, active: ArrayLike,
                      kind: str) -> Tuple[jax.Array, jax.Array]:
        """:meth:`extreme`'s ``(value, any_active)`` for an instruction that writes no index:
        float16 off the general path by :func:`half_extreme_value` (the same bits)."""
        if self.dtype == "float16" and self.path != "general":
            return half_extreme_value(x, self._lanes(x, active), kind, self.blocked)
        value, _, found = self.extreme(x, active, kind)
        return value, found

    def nan_result(self, value: jax.Array) -> jax.Array:
        """A min / max result under the profile's NaN rule (:func:`nan_result`)."""
        return nan_result(value, self.dtype, self.chip)

    def word(self, n: jax.Array) -> jax.Array:
        """An integer (an index) stored in a word of the element width, as its raw bits."""
        return jnp.asarray(n).astype(self.bits_type)

    def const(self, bits: ArrayLike) -> jax.Array:
        """A constant given by its raw bits (a fill value; may be traced)."""
        return jnp.asarray(bits).astype(self.bits_type)


def value_text(bits: int, dtype: str) -> str:
    """An element's value in decimal, so that two different values never print alike: a
    float32 by the shortest digits that read back as its bits (numpy's ``unique`` digits), a
    half as the double it equals (65504, not numpy's shortest half digits "6.55e+04"), both
    positional from 1e-4 up to 1e16, else scientific; an integer type exactly.

    >>> value_text(0x406BACD4, "float32"), value_text(0x406BACD6, "float32")
    ('3.6824236', '3.682424')
    >>> value_text(0x7BFF, "float16"), value_text(0x0001, "float16"), value_text(0x8000, "float16")
    ('65504', '5.960464477539063e-08', '-0')
    >>> value_text(0x00000001, "float32"), value_text(0xFF800000, "float32")
    ('1e-45', '-inf')

    A NaN shows its sign and payload (the mantissa bits), which two NaNs may differ in:

    >>> value_text(0x7E00, "float16"), value_text(0xFFC00001, "float32")
    ('nan(payload 0x200)', '-nan(payload 0x400001)')
    """
    s = np.dtype(dtype).itemsize
    x: Any = np.array(int(bits), f"uint{8 * s}").view(dtype)[()]
    if np.dtype(dtype).kind != "f":
        return str(int(x))
    if np.isnan(x):
        man = np.finfo(dtype).nmant
        sign = "-" if int(bits) >> (8 * s - 1) & 1 else ""
        return f"{sign}nan(payload {int(bits) & ((1 << man) - 1):#x})"
    if s < 4:
        x = float(x)                  # the same value, as a double
    v = abs(float(x))
    if np.isfinite(v) and v != 0 and not 1e-4 <= v < 1e16:
        return np.format_float_scientific(x, unique=True, trim="-")
    return np.format_float_positional(x, unique=True, trim="-")


def word_text(bits: int, dtype: str) -> str:
    """An element's bits in hex at its width, then its value (:func:`value_text`).

    >>> word_text(0x3C00, "float16"), word_text(0xFFFFFFFF, "int32")
    ('0x3c00 (1)', '0xffffffff (-1)')
    """
    return f"{int(bits):#0{2 + 2 * np.dtype(dtype).itemsize}x} ({value_text(bits, dtype)})"


__all__ += ["value_text", "word_text", "select_extreme_tree", "half_extreme_value", "Summation",
            "guarded_sums", "lane_tree", "row_tree", "extreme", "saturated", "Exact",
            "ExactProfile"]
