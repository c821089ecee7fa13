"""ascend_ref.grad: forward values equal the bit-exact API; gradients match finite differences.

Finite differences are taken where the rounded function is locally linear: float32 data with
steps far above its ulps (sums), margins larger than the step (min/max), and half data with
steps that are whole multiples of the ulps involved (saturation).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
import ascend_ref.explain as explain
import ascend_ref.grad as g
from ascend_ref import ConstraintError, Tensor

RNG = np.random.default_rng(11)


def ordinary(n, dtype, lo=-8.0, hi=8.0, zeros=True):
    """Finite normal values, a few signed zeros (half), no subnormals."""
    x = RNG.uniform(lo, hi, n).astype(dtype)
    tiny = np.finfo(dtype).tiny
    x[np.abs(x) < tiny] = 1
    if zeros and dtype == np.float16:
        x[RNG.integers(0, n, 6)] = 0.0
        x[RNG.integers(0, n, 6)] = -0.0
    return x


def run_api(fn, x, dst_elems, *args, **kw):
    """Call a public Ascend C function with src at 0; return the dst elements."""
    s = x.itemsize
    dst_addr = -(-x.nbytes // 32) * 32
    ub = ar.store(ar.new_ub("atlas_a2", size=dst_addr + dst_elems * s + 64), 0, x)
    dt = "float16" if s == 2 else "float32"
    ub = fn(ub, Tensor(dst_addr, dt, dst_elems), Tensor(0, dt, x.size), *args, **kw)
    return np.asarray(ub)[dst_addr:dst_addr + dst_elems * s].view(x.dtype)


def bits(a):
    a = np.asarray(a)
    return a.view(f"uint{8 * a.itemsize}")


# ------------------------------------------------------------------ forward == API ---------

PARAMS = [  # mask, repeat, blk, rep
    (128, 3, 1, 8), ([0x5555555555555555, 0xF0F0], 2, 2, 16), (77, 4, 0, 3),
    ([2**64 - 1, 1 << 63], 3, 3, 5),
]
PARAMS32 = [(64, 3, 1, 8), ([0x5555555555555555], 2, 2, 16), (37, 4, 0, 3), (5, 2, 1, 0)]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_whole_reduce_forward_matches_api(dtype):
    for mask, r, blk, rep in (PARAMS if dtype == np.float16 else PARAMS32):
        x = ordinary(4096, dtype)
        got = g.whole_reduce_sum(jnp.asarray(x), mask, r, blk, rep, chip="atlas_a2")
        want = run_api(ar.ascendc.whole_reduce_sum, x, r, mask, r, 1, blk, rep, chip="atlas_a2")
        np.testing.assert_array_equal(bits(got), bits(want))
        for kind in ("min", "max"):
            v, i = getattr(g, f"whole_reduce_{kind}")(jnp.asarray(x), mask, r, blk, rep,
                                                     chip="atlas_a2")
            out = run_api(getattr(ar.ascendc, f"whole_reduce_{kind}"), x, 2 * r, mask, r, 1,
                          blk, rep, chip="atlas_a2")
            np.testing.assert_array_equal(bits(v), bits(out[0::2]))
            np.testing.assert_array_equal(np.asarray(i), bits(out[1::2]))


def test_saturating_sums_match_api():
    x = ordinary(2048, np.float16, -65504, 65504, zeros=False)
    for sat in (True, False):
        got = g.whole_reduce_sum(jnp.asarray(x), 128, 4, 1, 8, chip="atlas_a2", saturate=sat)
        want = run_api(ar.ascendc.whole_reduce_sum, x, 4, 128, 4, 1, 1, 8, chip="atlas_a2",
                       saturate=sat)
        np.testing.assert_array_equal(bits(got), bits(want))
        got = g.reduce_data_block(jnp.asarray(x), 128, 2, 1, 8, reduce_type="SUM",
                                  chip="atlas_a2", saturate=sat)
        want = run_api(ar.ascendc.reduce_data_block, x, 16, 128, 2, 1, 1, 8, reduce_type="SUM",
                       chip="atlas_a2", saturate=sat)
        np.testing.assert_array_equal(bits(got).reshape(-1), bits(want))


@pytest.mark.parametrize("rt", ["SUM", "MAX", "MIN"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_reduce_data_block_forward_matches_api(rt, dtype):
    mask = [0xFFFF00000000FFFF, 0x00FF] if dtype == np.float16 else [0xFF0000FF]
    x = ordinary(4096, dtype)
    got = np.asarray(g.reduce_data_block(jnp.asarray(x), mask, 3, 2, 9, reduce_type=rt,
                                         chip="atlas_a2"))
    want = run_api(ar.ascendc.reduce_data_block, x, 24, mask, 3, 1, 2, 9, reduce_type=rt,
                   chip="atlas_a2").reshape(3, 8)
    live = np.asarray(explain.access_map(explain.make_case(
        "reduce_data_block", chip="atlas_a2", dtype=x.dtype.name, mask=mask, repeat=3,
        src_blk_stride=2, src_rep_stride=9, option=rt)).active[0]).reshape(8, -1).any(1)
    np.testing.assert_array_equal(bits(got)[:, live], bits(want)[:, live])
    assert np.isnan(got[:, ~live]).all()            # A2 keeps those: no value (NaN here)


def test_tik_forward_matches_api():
    chip = "atlas_training"
    for dtype in (np.float16, np.float32):
        x = ordinary(8192, dtype)
        s = x.itemsize
        for mask, r, rep in ((34, 6, 3), ([0, 2**64 - 1], 70, 1), (64, 3, 8)):
            if r > 256 // s and dtype == np.float16:
                continue
            if isinstance(mask, list) and dtype == np.float32:
                mask = [0, 0xFFFF0000FFFF]
            ub = ar.store(ar.new_ub(chip), 0, x)
            dt = "float16" if s == 2 else "float32"
            work = Tensor(x.nbytes + 64, dt, 512)
            ub = ar.tik.vec_reduce_add(ub, mask, Tensor(x.nbytes, dt, 16), Tensor(0, dt, x.size),
                                       work, r, rep, chip=chip)
            want = np.asarray(ub)[x.nbytes:x.nbytes + s].view(dtype)[0]
            got = g.vec_reduce_add(jnp.asarray(x), mask, r, rep, chip=chip)
            assert bits(np.asarray(got)) == bits(np.asarray(want)), (dtype, mask, r, rep)
    x = ordinary(4096, np.float16)
    for kind in ("min", "max"):
        ub = ar.store(ar.new_ub(chip), 0, x)
        ub = getattr(ar.tik, f"vec_reduce_{kind}")(
            ub, [0, 2**64 - 1], Tensor(8192, "float16", 16), Tensor(0, "float16", 4096),
            Tensor(8224, "float16", 64), 5, 6, cal_index=True, chip=chip)
        out = np.asarray(ub)[8192:8196].view(np.float16)
        v, i = getattr(g, f"vec_reduce_{kind}")(jnp.asarray(x), [0, 2**64 - 1], 5, 6, chip=chip)
        assert bits(np.asarray(v)) == bits(out[0]) and int(i) == int(bits(out[1]))


# ------------------------------------------------------------------ gradients ---------------

def fd_directional(f, x, v, h):
    return (float(f(x + h * v)) - float(f(x - h * v))) / (2 * h)


def test_sum_gradient_is_the_read_count():
    """d(Σ results)/d src[j] = how many active lanes read element j (blkStride 0 reads a
    block 8 times) — the access map's read count."""
    x = jnp.asarray(ordinary(1024, np.float32))
    mask, r, blk, rep = [0x00FF00FF00FF00FF], 3, 0, 3
    grad = jax.grad(lambda x: g.whole_reduce_sum(x, mask, r, blk, rep, chip="atlas_a2").sum())(x)
    c = explain.make_case("whole_reduce_sum", chip="atlas_a2", dtype="float32", mask=mask,
                          repeat=r, src_blk_stride=blk, src_rep_stride=rep)
    cnt = explain.access_map(c).read_count
    np.testing.assert_array_equal(np.asarray(grad)[:cnt.size], cnt)
    assert not np.asarray(grad)[cnt.size:].any()
    assert cnt.max() == 4          # 4 active blocks, all at the same 32 bytes (block stride 0)


@pytest.mark.parametrize("which", ["whole_sum", "block_sum", "block_max", "vec_add"])
def test_sums_against_finite_differences(which):
    x = jnp.asarray(RNG.uniform(0.5, 2.0, 8192).astype(np.float32))
    fns = {
        "whole_sum": lambda x: jnp.sum(g.whole_reduce_sum(
            x, [0xF0F0F0F0F0F0F0F0], 4, 2, 11, chip="atlas_a2") * jnp.arange(1.0, 5.0)),
        "block_sum": lambda x: jnp.sum(g.reduce_data_block(
            x, 64, 3, 1, 8, reduce_type="SUM", chip="atlas_a2") ** 2),
        "block_max": lambda x: jnp.sum(g.reduce_data_block(
            x, 64, 3, 1, 5, reduce_type="MAX", chip="atlas_a2") * jnp.arange(24.0).reshape(3, 8)),
        "vec_add": lambda x: g.vec_reduce_add(x, 64, 70, 8, chip="atlas_training"),
    }
    f = fns[which]
    if which == "block_max":           # distinct values 1/4 apart: exact steps, no ties
        x = jnp.asarray(RNG.permutation(8192).astype(np.float32) / 4)
    grad = np.asarray(jax.grad(f)(x))
    for k in range(3):
        v = jnp.asarray(RNG.standard_normal(x.shape[0]).astype(np.float32))
        if which == "block_max":
            v = jnp.asarray(RNG.integers(-2, 3, x.shape[0]).astype(np.float32))
        fd = fd_directional(f, x, v, 1e-2 if which != "block_max" else 1 / 32)
        an = float(np.dot(grad, np.asarray(v)))
        assert abs(fd - an) <= 2e-3 * max(1.0, abs(an)), (which, fd, an)


@pytest.mark.parametrize("kind", ["min", "max"])
def test_minmax_gradient_goes_to_the_selected_lane(kind):
    x = np.arange(1024, dtype=np.float32)
    RNG.shuffle(x)
    x = jnp.asarray(x)                                   # distinct values: margins of 1
    f = lambda x: jnp.sum(getattr(g, f"whole_reduce_{kind}")(  # noqa: E731
        x, [0x5555555555555555], 3, 2, 12, chip="atlas_a2")[0])
    grad = np.asarray(jax.grad(f)(x))
    _, idx = getattr(g, f"whole_reduce_{kind}")(x, [0x5555555555555555], 3, 2, 12,
                                                chip="atlas_a2")
    p = g.plan(f"whole_reduce_{kind}", x, [0x5555555555555555], 3, 2, 12, chip="atlas_a2")
    chosen = p.index[np.arange(3), np.asarray(idx)]
    want = np.zeros_like(grad)
    np.add.at(want, chosen, 1)          # repeats overlap: one element may win twice
    np.testing.assert_array_equal(grad, want)
    for j in list(chosen) + [int(p.index[0, 2]), 1000]:
        e = jnp.zeros_like(x).at[j].set(1.0)
        assert fd_directional(f, x, e, 0.25) == grad[j]
    # TIK min/max (half): gradient to the winning lane of the winning repeat
    xh = jnp.asarray(np.asarray(x)[:640].astype(np.float16))
    fv = lambda x: getattr(g, f"vec_reduce_{kind}")(x, 128, 5, 8, chip="atlas_training")[0]  # noqa: E731
    gv = np.asarray(jax.grad(fv)(xh))
    _, off = getattr(g, f"vec_reduce_{kind}")(xh, 128, 5, 8, chip="atlas_training")
    assert np.flatnonzero(gv).tolist() == [int(off)] and gv[int(off)] == 1


def test_saturation_clips_the_gradient():
    """Seed 003: [60000, 60000, -30000, 100], saturating half. 60000+60000 saturates, so lanes 0
    and 1 get no gradient; finite differences (steps of whole ulps) agree."""
    x = jnp.asarray(np.pad(np.array([60000, 60000, -30000, 100], np.float16), (0, 124)))
    f = lambda x: g.whole_reduce_sum(x, 4, 1, 1, 8, chip="atlas_a2", saturate=True)[0]  # noqa: E731
    assert float(f(x)) == 35584.0
    grad = np.asarray(jax.grad(f)(x))
    assert grad[:4].tolist() == [0, 0, 1, 1] and not grad[4:].any()
    for j in range(4):
        e = jnp.zeros_like(x).at[j].set(1)
        assert fd_directional(f, x, e, 256.0) == grad[j]
    # without saturation the same add overflows to inf and passes the gradient on
    fn = lambda x: g.whole_reduce_sum(x, 4, 1, 1, 8, chip="atlas_a2", saturate=False)[0]  # noqa: E731
    assert np.isinf(float(fn(x))) and np.asarray(jax.grad(fn)(x))[:4].tolist() == [1, 1, 1, 1]
    # saturation inside the TIK stage-2 tree clips the gradient of the whole repeat
    y = np.full(512, -100, np.float16)             # repeats 1-3: -12800 each
    y[:128] = 600                                  # repeat 0 sums to 76800 -> 65504
    ft = lambda y: g.vec_reduce_add(y, 128, 4, 8, chip="atlas_training", saturate=True)  # noqa: E731
    gt = np.asarray(jax.grad(ft)(jnp.asarray(y)))
    assert not gt[:128].any() and (gt[128:] == 1).all()


def test_grad_under_jit_equals_eager():
    x = jnp.asarray(ordinary(2048, np.float16))
    f = lambda x: jnp.sum(g.whole_reduce_sum(x, 100, 3, 2, 9, chip="atlas_a2").astype(jnp.float32))  # noqa: E731
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.grad(f))(x)), np.asarray(jax.grad(f)(x)))
    np.testing.assert_array_equal(bits(jax.jit(f)(x)), bits(f(x)))


def test_errors():
    x = jnp.zeros(300, jnp.float16)
    with pytest.raises(ConstraintError) as e:
        g.whole_reduce_sum(x, 128, 3, 1, 8, chip="atlas_a2")
    assert e.value.code.name == "TENSOR_BOUNDS"
    with pytest.raises(ConstraintError) as e:
        g.whole_reduce_sum(x, 0, 1, 1, 8, chip="atlas_a2")
    assert e.value.code.name == "MASK_ZERO"
    with pytest.raises(ConstraintError) as e:
        g.whole_reduce_sum(jnp.zeros(64, jnp.float32), 64, 1, 1, 8, chip="atlas_a2",
                           saturate=True)
    assert e.value.code.name == "SATURATE_DTYPE"
    with pytest.raises(ConstraintError) as e:
        g.vec_reduce_min(jnp.zeros(64, jnp.float32), 64, 1, 8, chip="atlas_training")
    assert e.value.code.name == "DTYPE_UNSUPPORTED"
    with pytest.raises(ConstraintError) as e:
        g.whole_reduce_sum(x, 129, 1, 1, 8, chip="atlas_a2")
    assert e.value.code.name == "MASK_RANGE"


# ------------------------------------------------------------------ the worked use ---------

def test_lattice_surrogate_equals_gap_in_binade():
    xs = RNG.uniform(0.5, 1.0, (20, 128)).astype(np.float16)
    sur = jax.jit(jax.vmap(g.lattice_surrogate))(jnp.asarray(xs, jnp.float32))
    for x, s in zip(xs, np.asarray(sur)):
        assert abs(float(s) - g.tree_gap(x)) < 1e-7


def test_gap_bound_small_trees_by_brute_force():
    # 4 leaves from the first 16 halves of [0.5, 1): every combination
    grid = (0.5 + np.arange(16) * 2.0**-11).astype(np.float16)
    xs = np.stack(np.meshgrid(grid, grid, grid, grid, indexing="ij"), -1).reshape(-1, 4)
    t = np.asarray(jax.vmap(g.tree_sum)(jnp.asarray(xs)), np.float64)
    gaps = t - xs.astype(np.float64).sum(1)
    assert gaps.max() == g.in_binade_gap_bound(4) == 3 * 2.0**-11
    assert g.in_binade_gap_bound(128) == 313 * 2.0**-11


def test_searches_are_deterministic_and_beat_random_sampling():
    a = g.search_tree_gap(128, steps=80, batch=32, seed=1)
    b = g.search_tree_gap(128, steps=80, batch=32, seed=1)
    assert a.score == b.score and np.array_equal(a.x, b.x)
    assert abs(g.tree_gap(a.x) - a.score) < 1e-12 and a.score <= g.in_binade_gap_bound(128)
    r = g.random_search(128, evaluations=int(a.evaluations[-1]), seed=1)
    assert a.score > r.score
    assert a.x.dtype == np.float16 and ((a.x >= 0.5) & (a.x <= 1)).all()
