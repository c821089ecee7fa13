"""The differentiable path: the reductions over a typed float source, ``jax.grad``-able.

The bit-exact API works on a ``uint8`` UB and raw bits, which has no derivative. Here the
source is a typed array ``src`` (float16 or float32: the elements of the source tensor, from
its first element) and each function returns the results as arrays. The semantics are the
same and come from the same code: lanes are gathered with
:func:`ascend_ref.addressing.read_table` (element indices), masked with
:func:`ascend_ref.mask.lane_bits`, summed by :func:`ascend_ref.numerics.tree_sum` in exactly the
hardware's pairwise order with one float add per node, rounded to the operand type, and
min/max pick the lane :func:`ascend_ref.numerics.select_extreme` picks.

**Forward values** equal the bit-exact API on ordinary data (finite, no float32 subnormals:
XLA on CPU flushes those in float arithmetic; NaN payloads are not modelled).

**Gradients**

* sums — through the tree: every add passes its cotangent to both operands (rounding is
  treated as the identity, the derivative of the exact sum), so ``d result / d src[j]`` is
  the number of active lanes that read element ``j`` (a block stride of 0 reads an element
  8 times: gradient 8); masked lanes get 0;
* min / max — to the selected lane only (the first NaN / smallest index among equals, as the
  hardware chooses);
* saturation (half, ``saturate=True``) — an add whose result was clipped to ±65504 (or a NaN
  set to 0) is a constant: it passes no gradient (:func:`saturating_add`, a ``custom_jvp``).

>>> import numpy as np, jax, jax.numpy as jnp
>>> import ascend_ref.grad as g
>>> x = jnp.asarray(np.array([60000, 60000, -30000, 100], np.float16))
>>> f = lambda x: g.whole_reduce_sum(jnp.pad(x, (0, 124)), 4, 1, 1, 8, chip="atlas_a2",
...                                  saturate=True)[0]
>>> float(f(x)), jax.grad(f)(x).tolist()
(35584.0, [0.0, 0.0, 1.0, 1.0])
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import addressing, mask as masks, numerics
from .chips import chip as get_chip
from .constraints import Code, ConstraintError
from .ub import dtype_name, itemsize

F16_MAX = 65504.0
_FLOATS = ("float16", "float32")


# ------------------------------------------------------------------ adds ---------------------

def plain_add(a, b):
    """One add in the operand type (float16 adds are exact IEEE on every backend)."""
    return a + b


def _saturate(r):
    r = jnp.where(jnp.isnan(r), jnp.zeros_like(r), r)
    big = jnp.asarray(F16_MAX, r.dtype)
    return jnp.clip(r, -big, big)


@jax.custom_jvp
def saturating_add(a, b):
    """Half add with saturation: ±inf → ±65504, NaN → +0; a clipped result has no gradient."""
    return _saturate(a + b)


@saturating_add.defjvp
def _saturating_add_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    raw = a + b
    clipped = ~jnp.isfinite(raw)
    return _saturate(raw), jnp.where(clipped, jnp.zeros_like(raw), da + db)


def tree_sum(values, *, saturate: bool = False):
    """The hardware's pairwise tree over the last axis (a power of two), rounded per add."""
    return numerics.tree_sum(values, saturating_add if saturate else plain_add)


# ------------------------------------------------------------------ the gather ---------------

@dataclass(frozen=True)
class Plan:
    """Which source elements a call reads: ``index[r, i]`` (elements from ``src[0]``) and
    ``active[r, i]`` (numpy; ``r < repeat``, lane ``i`` of ``L``)."""

    dtype: str
    index: np.ndarray
    active: np.ndarray

    @property
    def lanes(self) -> int:
        return self.index.shape[1]

    @property
    def epb(self) -> int:
        return 32 // itemsize(self.dtype)

    def read_count(self, n: int) -> np.ndarray:
        """How many active lanes read each of ``n`` source elements (= the gradient of a
        plain sum of every result)."""
        cnt = np.zeros(n, int)
        np.add.at(cnt, self.index[self.active], 1)
        return cnt


def _static_int(api: str, name: str, v, lo: int, hi: int, code: Code) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=name, value=v,
                              allowed="a Python int (the differentiable path takes static "
                                      "parameters; only the data is traced)")
    if not lo <= int(v) <= hi:
        raise ConstraintError(code, api=api, param=name, value=int(v), allowed=f"[{lo}, {hi}]")
    return int(v)


def plan(api: str, src, mask, repeat: int, src_blk_stride: int, src_rep_stride: int, *,
         chip, word_order: str = "ascendc", max_repeat: int = 255) -> Plan:
    """Check a call's parameters and build its :class:`Plan` from the kernels' tables."""
    prof = get_chip(chip)
    dtype = dtype_name(src.dtype)
    if dtype not in _FLOATS:
        raise ConstraintError(Code.DTYPE_UNSUPPORTED, api=api, param="src.dtype", value=dtype,
                              allowed="float16 or float32 (the differentiable path)")
    if not prof.dtypes(api):
        raise ConstraintError(Code.API_UNSUPPORTED, api=api, param="chip", value=prof.id,
                              allowed=f"a product with {api}", chip=prof.id)
    if dtype not in prof.dtypes(api):
        raise ConstraintError(Code.DTYPE_UNSUPPORTED, api=api, param="src.dtype", value=dtype,
                              allowed=f"one of {list(prof.dtypes(api))}", chip=prof.id)
    s = itemsize(dtype)
    lanes = 256 // s
    m = masks.parse(mask, dtype, api=api, chip=prof.id, word_order=word_order)
    with jax.ensure_compile_time_eval():         # concrete tables, also inside jit / grad
        bits = np.asarray(masks.lane_bits(m.mode, m.value, lanes))
    if m.mode == "count" and not 0 <= int(m.value[0]) <= lanes:
        raise ConstraintError(Code.MASK_RANGE, api=api, param="mask", value=int(m.value[0]),
                              allowed=f"[1, {lanes}] (continuous mode)", chip=prof.id)
    if m.mode == "bits" and lanes == 64 and (int(m.value[2]) | int(m.value[3])):
        raise ConstraintError(Code.MASK_BITS, api=api, param="mask", value=mask,
                              allowed="lanes 0-63 only for a 32-bit type", chip=prof.id)
    repeat = _static_int(api, "repeat", repeat, 0, max_repeat, Code.REPEAT_RANGE)
    blk = _static_int(api, "src_blk_stride", src_blk_stride, 0, 65535, Code.STRIDE_RANGE)
    rep = _static_int(api, "src_rep_stride", src_rep_stride, 0, 65535, Code.STRIDE_RANGE)
    if repeat == 0 or not bits.any():
        raise ConstraintError(Code.MASK_ZERO if repeat else Code.REPEAT_RANGE, api=api,
                              param="mask" if repeat else "repeat", value=0,
                              allowed="at least one active lane in at least one repeat (a NOP "
                                      "has no result to differentiate)", chip=prof.id)
    with jax.ensure_compile_time_eval():
        table = np.asarray(addressing.read_table(0, rep, blk, r_max=repeat, size=s)) // s
    active = np.broadcast_to(bits, table.shape).copy()
    n = int(np.shape(src)[0])
    hi = int(table[active].max()) + 1
    if hi > n:
        raise ConstraintError(Code.TENSOR_BOUNDS, api=api, param="src",
                              value=f"reads element {hi - 1}",
                              allowed=f"the {n} elements of src",
                              hint="Enlarge src or reduce repeat / strides / mask")
    return Plan(dtype, table, active)


def _masked(src, index, active):
    v = jnp.take(src, index)
    return lax.optimization_barrier(jnp.where(active, v, jnp.zeros_like(v)))


def gather(src, p: Plan):
    """The lanes of every repeat, ``(repeat, L)``; masked lanes are +0 (kept opaque to the
    compiler so that ``x + 0`` is never folded: −0 + +0 must stay +0)."""
    return _masked(jnp.asarray(src), jnp.asarray(p.index), jnp.asarray(p.active))


def _select(v, active, kind: str):
    """``(value, index)`` over the last axis: the hardware's lane, gradient only to it."""
    dtype = jnp.dtype(v.dtype).name
    ut = jnp.uint16 if itemsize(dtype) == 2 else jnp.uint32
    bits = lax.bitcast_convert_type(lax.stop_gradient(v), ut)
    _, index, _ = numerics.select_extreme(bits, active, kind, dtype)
    value = jnp.take_along_axis(v, index[..., None], axis=-1)[..., 0]
    return value, index


# The kernels: jit-compiled once per shape and static option; the plan's tables are arguments.

@functools.partial(jax.jit, static_argnames=("saturate", "block"))
def _sum_kernel(src, index, active, *, saturate: bool, block: int):
    v = _masked(src, index, active)
    if block:
        v = v.reshape(v.shape[0], -1, block)
    return tree_sum(v, saturate=saturate)


@functools.partial(jax.jit, static_argnames=("kind", "block"))
def _select_kernel(src, index, active, *, kind: str, block: int):
    v = jnp.take(src, index)
    if block:
        v, active = v.reshape(v.shape[0], -1, block), active.reshape(v.shape[0], -1, block)
    return _select(v, active, kind)


@functools.partial(jax.jit, static_argnames=("saturate", "lanes", "stage1_only"))
def _vec_add_kernel(src, index, active, *, saturate: bool, lanes: int, stage1_only: bool):
    add = saturating_add if saturate else plain_add
    stage1 = tree_sum(_masked(src, index, active), saturate=saturate)
    if stage1_only:
        return stage1
    zero = jnp.zeros((), stage1.dtype)
    chunks = numerics.padded_tree_sum(stage1, lanes, add, zero)
    if stage1.shape[0] > lanes:
        return numerics.padded_tree_sum(chunks, lanes, add, zero)[0]
    return chunks[0]


@functools.partial(jax.jit, static_argnames=("kind", "repeat_elems"))
def _vec_select_kernel(src, index, active, *, kind: str, repeat_elems: int):
    value_r, lane_r = _select(jnp.take(src, index), active, kind)
    value, r_best = _select(value_r, jnp.ones(value_r.shape, bool), kind)
    return value, r_best * repeat_elems + lane_r[r_best]


def _saturate_flag(prof, dtype: str, saturate: Optional[bool], api: str) -> bool:
    if saturate is None:
        return bool(prof.saturate_default) and itemsize(dtype) == 2
    if saturate is False and prof.saturate_only and itemsize(dtype) == 2:
        raise ConstraintError(Code.SATURATE_DTYPE, api=api, param="saturate", value=False,
                              allowed="True or None: this product has only the saturation mode",
                              chip=prof.id)
    if saturate and itemsize(dtype) != 2:
        raise ConstraintError(Code.SATURATE_DTYPE, api=api, param="saturate", value=True,
                              allowed="False for float32 (half only)", chip=prof.id)
    return bool(saturate)


def _args(src, p: Plan):
    return jnp.asarray(src), jnp.asarray(p.index), jnp.asarray(p.active)


# ------------------------------------------------------------------ Ascend C -----------------

def whole_reduce_sum(src, mask, repeat_time: int, src_blk_stride: int, src_rep_stride: int, *,
                     chip, saturate: Optional[bool] = None):
    """WholeReduceSum: one tree sum per repeat, shape ``(repeat_time,)``."""
    p = plan("whole_reduce_sum", src, mask, repeat_time, src_blk_stride, src_rep_stride,
             chip=chip)
    sat = _saturate_flag(get_chip(chip), p.dtype, saturate, "whole_reduce_sum")
    return _sum_kernel(*_args(src, p), saturate=sat, block=0)


def _whole_minmax(kind):
    api = f"whole_reduce_{kind}"

    def fn(src, mask, repeat_time: int, src_blk_stride: int, src_rep_stride: int, *, chip):
        p = plan(api, src, mask, repeat_time, src_blk_stride, src_rep_stride, chip=chip)
        return _select_kernel(*_args(src, p), kind=kind, block=0)

    fn.__name__ = api
    fn.__doc__ = (f"WholeReduce{kind.title()}: per repeat ``(value, lane index)``, shapes "
                  f"``(repeat_time,)``; the gradient goes to the selected lane.")
    return fn


whole_reduce_min = _whole_minmax("min")
whole_reduce_max = _whole_minmax("max")


def reduce_data_block(src, mask, repeat_time: int, src_blk_stride: int, src_rep_stride: int, *,
                      reduce_type: str, chip, saturate: Optional[bool] = None):
    """ReduceDataBlock: per repeat and DataBlock one value, shape ``(repeat_time, 8)``.

    A block without an active lane holds the product's fill value where the profile fills
    (``block_fill = "fill"``), else NaN (the hardware writes nothing there, or something
    undefined) — mask those out before summing a loss.
    """
    api = "reduce_data_block"
    rt = str(getattr(reduce_type, "value", reduce_type)).upper()
    if rt not in ("SUM", "MAX", "MIN"):
        raise ConstraintError(Code.REDUCE_TYPE, api=api, param="reduce_type", value=reduce_type,
                              allowed="SUM, MAX or MIN")
    prof = get_chip(chip)
    p = plan(api, src, mask, repeat_time, src_blk_stride, src_rep_stride, chip=prof)
    R, epb = p.index.shape[0], p.epb
    if rt == "SUM":
        sat = _saturate_flag(prof, p.dtype, saturate, api)
        value = _sum_kernel(*_args(src, p), saturate=sat, block=epb)
    else:
        value, _ = _select_kernel(*_args(src, p), kind=rt.lower(), block=epb)
    has_lane = jnp.asarray(p.active.reshape(R, 8, epb).any(-1))
    if prof.block_fill == "fill":
        ut = np.dtype(f"uint{8 * itemsize(p.dtype)}")
        fill: Any = np.array(prof.fill_bits(rt, p.dtype), ut).view(p.dtype)[()]
    else:
        fill = np.nan
    return jnp.where(has_lane, value, jnp.asarray(fill, value.dtype))


# ------------------------------------------------------------------ TIK ----------------------

def vec_reduce_add(src, mask, repeat_times: int, src_rep_stride: int, *, chip,
                   saturate: Optional[bool] = None):
    """TIK vec_reduce_add: the scalar result (stage 1 per repeat, then the stage-2 / stage-3
    trees over the stage-1 sums in chunks of L, zero-padded). ``mask`` is ``[mask_h, mask_l]``
    in bit mode."""
    api = "vec_reduce_add"
    prof = get_chip(chip)
    p = plan(api, src, mask, repeat_times, 1, src_rep_stride, chip=prof, word_order="tik",
             max_repeat=4095)
    sat = _saturate_flag(prof, p.dtype, saturate, api)
    if prof.add_order != "tree" and repeat_times > 1:
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="chip", value=prof.id,
                              allowed=f"a product whose vec_reduce_add order is 'tree' (this "
                                      f"one combines repeats in the {prof.add_order!r} order, "
                                      f"which the differentiable view does not model; use "
                                      f"vec_reduce_add_stage1)")
    return _vec_add_kernel(*_args(src, p), saturate=sat, lanes=p.lanes, stage1_only=False)


def vec_reduce_add_stage1(src, mask, repeat_times: int, src_rep_stride: int, *, chip,
                          saturate: Optional[bool] = None):
    """The per-repeat sums vec_reduce_add leaves in ``work_tensor[0:R]``."""
    prof = get_chip(chip)
    p = plan("vec_reduce_add", src, mask, repeat_times, 1, src_rep_stride, chip=prof,
             word_order="tik", max_repeat=4095)
    sat = _saturate_flag(prof, p.dtype, saturate, "vec_reduce_add")
    return _vec_add_kernel(*_args(src, p), saturate=sat, lanes=p.lanes, stage1_only=True)


def _vec_minmax(kind):
    api = f"vec_reduce_{kind}"

    def fn(src, mask, repeat_times: int, src_rep_stride: int, *, chip):
        p = plan(api, src, mask, repeat_times, 1, src_rep_stride, chip=chip, word_order="tik",
                 max_repeat=4095)
        return _vec_select_kernel(*_args(src, p), kind=kind,
                                  repeat_elems=src_rep_stride * p.epb)

    fn.__name__ = api
    fn.__doc__ = (f"TIK vec_reduce_{kind}: ``(value, source offset)`` of the overall "
                  f"{kind}imum (first repeat among equals); the gradient goes to that lane.")
    return fn


vec_reduce_min = _vec_minmax("min")
vec_reduce_max = _vec_minmax("max")


# ------------------------------------------------------------------ worked use ---------------
# Searching for inputs whose half tree sum is far from the exact sum (notebook 05).

def exact_sum(x) -> float:
    """The exact sum of ``x`` (float16 / float32 values), correctly rounded to float64."""
    return math.fsum(np.asarray(x, np.float64).reshape(-1).tolist())


_tree_jit = jax.jit(tree_sum, static_argnames=("saturate",))


def tree_gap(x, *, saturate: bool = False) -> float:
    """``tree_sum(x) − exact sum`` for one vector ``x`` (its dtype decides the rounding)."""
    x = jnp.asarray(x)
    return float(_tree_jit(x, saturate=saturate)) - exact_sum(np.asarray(x))


def ulp16(v):
    """Spacing of float16 at ``|v|`` (as float32, no gradient): one rounding step of a half."""
    a = jnp.abs(lax.stop_gradient(jnp.asarray(v))).astype(jnp.float16)
    nxt = jnp.nextafter(a, jnp.asarray(np.inf, jnp.float16))
    return nxt.astype(jnp.float32) - a.astype(jnp.float32)


def lattice_surrogate(x):
    """A smooth model of ``tree_gap`` for a float16 vector ``x`` (given as float32).

    The gap of the tree is the sum of every add's rounding error ``round(s) − s``. Each is
    replaced by ``−(u/2)·sin(π s/u)`` (``u`` the ulp of the add's result): whenever ``s`` lies
    on the half-ulp lattice — always, when every partial sum stays in its binade — this is the
    exact error of round-half-to-even (0 on the lattice, ``+u/2`` at a tie that rounds up to
    even, ``−u/2`` at one that rounds down), so the surrogate *equals* the gap there, and it is
    differentiable. The tree itself is the half tree (rounded values forward,
    straight-through gradients).
    """
    total = jnp.zeros((), jnp.float32)
    v = jnp.asarray(x, jnp.float32)
    while v.shape[-1] > 1:
        s = v[..., 0::2] + v[..., 1::2]
        r = s.astype(jnp.float16).astype(jnp.float32)
        u = ulp16(r)
        t = s / u                                    # exact: s is a multiple of u/2 here
        t = t - 2 * lax.stop_gradient(jnp.floor(t / 2))    # period 2: keep sin accurate
        total = total + jnp.sum(-(u / 2) * jnp.sin(jnp.pi * t))
        v = s + lax.stop_gradient(r - s)             # forward: rounded; backward: identity
    return total


@dataclass
class SearchResult:
    """Outcome of a search: the best input, its score and the best score after each step."""

    x: Optional[np.ndarray]      # float16, the best input (None: no evaluation ran)
    score: float                 # its objective (gap, or error in ulps)
    history: np.ndarray          # best score so far, per step
    evaluations: np.ndarray      # exact evaluations used, per step (cumulative)


@jax.jit
def _tree_batch(xs):
    return jax.vmap(lambda v: tree_sum(v))(xs)


def _gaps(xs: np.ndarray) -> np.ndarray:
    """Exact gaps of a batch of float16 vectors (the tree vmapped in JAX, exact sums by fsum)."""
    t = np.asarray(_tree_batch(jnp.asarray(xs)), np.float64)
    return np.array([ti - exact_sum(xi) for ti, xi in zip(t, xs)])


_surrogate_grad = jax.jit(jax.grad(lattice_surrogate))


def search_tree_gap(n: int = 128, *, steps: int = 100, batch: int = 32, lo: float = 0.5,
                    hi: float = 1.0, seed: int = 0, guide: str = "gradient") -> SearchResult:
    """Local search over ``x ∈ [lo, hi]^n`` (float16) maximising ``tree_sum(x) − exact``.

    Each step proposes ``batch`` moves of 1–3 coordinates by one or two half ulps, evaluates
    the exact gap of all of them at once (the tree ``jax.vmap`` -ed) and keeps the best if it
    is no worse. ``guide="gradient"``: half of the moves follow the sign of the gradient of
    :func:`lattice_surrogate` (each coordinate's predicted direction), the rest are random;
    ``guide="random"``: all random. Deterministic for a given ``seed``.
    """
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo, hi, n).astype(np.float16)
    cur = float(_gaps(x[None])[0])
    best, best_x = cur, x
    hist, evals, used = [], [], 1
    for _ in range(steps):
        u = np.asarray(ulp16(x.astype(np.float32)))
        g = np.asarray(_surrogate_grad(jnp.asarray(x, jnp.float32))) if guide == "gradient" \
            else None
        cand = np.repeat(x[None].astype(np.float32), batch, 0)
        for b in range(batch):
            m = int(rng.integers(1, 4))
            idx = rng.choice(n, m, replace=False)
            if g is not None and b < batch // 2:
                d = np.sign(g[idx])
                d[d == 0] = rng.choice([-1.0, 1.0], int((d == 0).sum()))
                k = np.ones(m)
            else:
                d, k = rng.choice([-1.0, 1.0], m), rng.choice([1.0, 2.0], m)
            cand[b, idx] += d * k * u[idx]
        cand = np.clip(cand, lo, hi).astype(np.float16)
        gaps = _gaps(cand)
        used += batch
        j = int(np.argmax(gaps))
        if gaps[j] >= cur:
            x, cur = cand[j], float(gaps[j])
            if cur > best:
                best, best_x = cur, x
        hist.append(best)
        evals.append(used)
    return SearchResult(best_x, best, np.array(hist), np.array(evals))


def random_search(n: int = 128, *, evaluations: int = 3200, lo: float = 0.5, hi: float = 1.0,
                  seed: int = 0, chunk: int = 256) -> SearchResult:
    """The baseline: the best gap among ``evaluations`` uniformly random inputs."""
    rng = np.random.default_rng(seed)
    best, best_x, hist, evals, used = -np.inf, None, [], [], 0
    while used < evaluations:
        m = min(chunk, evaluations - used)
        xs = rng.uniform(lo, hi, (m, n)).astype(np.float16)
        gaps = _gaps(xs)
        j = int(np.argmax(gaps))
        if gaps[j] > best:
            best, best_x = float(gaps[j]), xs[j]
        used += m
        hist.append(best)
        evals.append(used)
    return SearchResult(best_x, best, np.array(hist), np.array(evals))


def in_binade_gap_bound(n: int = 128) -> float:
    """The largest ``tree_sum(x) − exact`` over ``x ∈ [0.5, 1)^n`` in float16.

    With every leaf in [0.5, 1) each partial sum of level ℓ stays in [2^(ℓ−1), 2^ℓ), so every
    add's exact sum lies on its half-ulp lattice: its error is 0 or ±u/2, +u/2 only at a tie
    that rounds up to even. A tie needs exactly one odd child, and an odd result is never a
    tie's (ties round to even): each tying add needs a child that did not tie. Taking ties
    from the top (each worth twice a tie one level down) gives the bound; the local search
    reaches it.
    """
    levels = int(math.log2(n))
    total, free = 0.0, 1
    for lvl in range(levels, 0, -1):
        nodes = n >> lvl
        ties = min(nodes, free)
        total += ties * 2.0 ** (lvl - 12)
        free = 2 * nodes - ties            # children (level lvl-1) not forced to be non-ties
    return total


__all__ = ["whole_reduce_sum", "whole_reduce_min", "whole_reduce_max", "reduce_data_block",
           "vec_reduce_add", "vec_reduce_add_stage1", "vec_reduce_min", "vec_reduce_max",
           "plan", "Plan", "gather", "tree_sum", "saturating_add", "plain_add", "exact_sum",
           "tree_gap", "ulp16", "lattice_surrogate", "search_tree_gap", "random_search",
           "in_binade_gap_bound", "SearchResult"]
