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
        v, i = getattr(g, f"vec_reduce_{kind}")(jnp.asarray(x), [0, 2**64 - 1], 5, 6, True,
                                                chip=chip)
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
    fv = lambda x: getattr(g, f"vec_reduce_{kind}")(x, 128, 5, 8, True,  # noqa: E731
                                                   chip="atlas_training")[0]
    gv = np.asarray(jax.grad(fv)(xh))
    _, off = getattr(g, f"vec_reduce_{kind}")(xh, 128, 5, 8, cal_index=True, chip="atlas_training")
    assert np.flatnonzero(gv).tolist() == [int(off)] and gv[int(off)] == 1


@pytest.mark.parametrize("kind", ["min", "max"])
def test_a_default_nan_result_passes_no_gradient(kind):
    """A NaN among the lanes: A2 copies the first NaN lane's bits (that lane gets the
    gradient); the 950 writes its default NaN (minmax_nan = "default"), a constant: no lane
    does, though both name lane 5 as the index (docs/explore.md)."""
    v = np.ones(64, np.float32)
    v[0], v[5], v[9] = -3.0, np.nan, np.nan
    v.view(np.uint32)[5] = 0x7FC00123                    # a payload the 950 does not keep
    f = getattr(g, f"whole_reduce_{kind}")
    for chip, grad5, bits in (("atlas_a2", 1.0, 0x7FC00123), ("ascend950", 0.0, None)):
        val, idx = f(jnp.asarray(v), 64, 1, 1, 8, chip=chip)
        assert int(idx[0]) == 5
        got = int(np.asarray(val).view(np.uint32)[0])
        assert got == (ar.chip(chip).default_nan("float32") if bits is None else bits)
        grad = np.asarray(jax.grad(lambda x: f(x, 64, 1, 1, 8, chip=chip)[0].sum())(
            jnp.asarray(v)))
        assert np.flatnonzero(grad).tolist() == ([5] if grad5 else []) and grad[5] == grad5
    w = v.copy()
    w[5] = w[9] = 2.0                                     # no NaN: the 950's selected lane
    grad = np.asarray(jax.grad(lambda x: f(x, 64, 1, 1, 8, chip="ascend950")[0].sum())(
        jnp.asarray(w)))
    assert np.flatnonzero(grad).tolist() == [0 if kind == "min" else 5]


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


def api_code(fn, *args, **kw):
    """The code the bit-exact API raises for a call (None: it runs)."""
    try:
        fn(*args, **kw)
    except ConstraintError as e:
        return e.code.name
    return None


def test_errors_are_the_apis():
    """Each bad call raises the code the API raises for the same call (src at 0, dst after)."""
    x = jnp.zeros(300, jnp.float16)
    ub = ar.new_ub("atlas_a2")
    src, dst = Tensor(0, "half", 300), Tensor(1024, "half", 64)
    cases = [  # (grad args, API args after (ub, dst, src), chip)
        ((x, 128, 3, 1, 8), (128, 3, 1, 1, 8), "atlas_a2"),
        ((x, 129, 1, 1, 8), (129, 1, 1, 1, 8), "atlas_a2"),
        ((x, 128, 1, 1, 70000), (128, 1, 1, 1, 70000), "atlas_a2"),
        ((x, 0, 1, 1, 8), (0, 1, 1, 1, 8), "atlas_training"),
        ((x, 128, 256, 1, 0), (128, 256, 1, 1, 0), "atlas_a2"),
    ]
    for gargs, aargs, chip in cases:
        want = api_code(ar.ascendc.whole_reduce_sum, ar.new_ub(chip), dst, src, *aargs, chip=chip)
        assert want is not None
        with pytest.raises(ConstraintError) as e:
            g.whole_reduce_sum(*gargs, chip=chip)
        assert e.value.code.name == want, (gargs, chip)
    assert [api_code(ar.ascendc.whole_reduce_sum, ub, dst, src, *c[1], chip=c[2])
            for c in cases] == ["TENSOR_BOUNDS", "MASK_RANGE", "STRIDE_RANGE", "MASK_ZERO",
                                "REPEAT_RANGE"]
    # a zero mask is a NOP on Atlas A2 (no error in the API): nothing written, NaN here
    assert api_code(ar.ascendc.whole_reduce_sum, ub, dst, src, 0, 1, 1, 1, 8,
                    chip="atlas_a2") is None
    assert np.isnan(np.asarray(g.whole_reduce_sum(x, 0, 1, 1, 8, chip="atlas_a2"))).all()
    with pytest.raises(ConstraintError) as e:
        g.whole_reduce_sum(jnp.zeros(64, jnp.float32), 64, 1, 1, 8, chip="atlas_a2",
                           saturate=True)
    assert e.value.code.name == "SATURATE_DTYPE"
    with pytest.raises(ConstraintError) as e:
        g.vec_reduce_min(jnp.zeros(64, jnp.float32), 64, 1, 8, chip="atlas_training")
    assert e.value.code.name == "DTYPE_UNSUPPORTED"
    with pytest.raises(ConstraintError) as e:
        g.whole_reduce_min(x, 128, 1, 1, 8, "ORDER_INDEX_VALUE", chip="atlas_training")
    assert e.value.code.name == api_code(
        ar.ascendc.whole_reduce_min, ar.new_ub("atlas_training"), Tensor(1024, "half", 64),
        src, 128, 1, 1, 1, 8, "ORDER_INDEX_VALUE", chip="atlas_training") == "ORDER_UNSUPPORTED"


def _tik_api(kind, x, mask, r, rep, chip, cal_index=True):
    """TIK min/max through the API: src at 0, dst and work after it; dst words."""
    n = x.size
    d = -(-n * 2 // 512) * 512
    ub = ar.store(ar.new_ub(chip), 0, x)
    ub = getattr(ar.tik, f"vec_reduce_{kind}")(
        ub, mask, Tensor(d, "half", 16), Tensor(0, "half", n), Tensor(d + 512, "half", 4096),
        r, rep, cal_index, chip=chip)
    return np.asarray(ub)[d:d + 4].view(np.float16)


@pytest.mark.parametrize("kind", ["min", "max"])
def test_tik_cal_index_rules(kind):
    """With cal_index the half repeat range is [1, 511] and an index past 65535 is
    INDEX_OVERFLOW, exactly as the API says -- eager, under jax.grad, and as a status under
    jit (the results are then not written: NaN, index -1)."""
    chip, f = "atlas_training", getattr(g, f"vec_reduce_{kind}")
    x = np.zeros(512 * 128, np.float16)
    x[300 * 128 + 77] = -5 if kind == "min" else 5       # the one winner: index 38477
    for r, want in ((511, None), (512, "REPEAT_RANGE"), (4095, "REPEAT_RANGE")):
        code = api_code(_tik_api, kind, x, 128, r, 8, chip)
        assert code == want
        if want is None:
            v, i = f(jnp.asarray(x), 128, r, 8, True, chip=chip)
            out = _tik_api(kind, x, 128, r, 8, chip)
            assert bits(np.asarray(v)) == bits(out[0]) and int(i) == int(bits(out[1])) == 38477
            assert float(v) == x[38477]
        else:
            with pytest.raises(ConstraintError) as e:
                f(jnp.asarray(x), 128, r, 8, True, chip=chip)
            assert e.value.code.name == want
    assert f(jnp.asarray(x), 128, 4095, 0, chip=chip).shape == ()     # no index: [1, 4095]
    # the winner in repeat 2 of a 2100-block stride: offset 2*2100*16 + 5 = 67205 > 65535
    y = np.ones(2 * 2100 * 16 + 128, np.float16)
    y[2 * 2100 * 16 + 5] = -3 if kind == "min" else 3
    assert api_code(_tik_api, kind, y, 128, 3, 2100, chip) == "INDEX_OVERFLOW"
    with pytest.raises(ConstraintError) as e:
        f(jnp.asarray(y), 128, 3, 2100, True, chip=chip)
    assert e.value.code.name == "INDEX_OVERFLOW"
    with pytest.raises(ConstraintError) as e:
        jax.grad(lambda y: f(y, 128, 3, 2100, True, chip=chip)[0])(jnp.asarray(y))
    assert e.value.code.name == "INDEX_OVERFLOW"
    (v, i), st = jax.jit(lambda y: f(y, 128, 3, 2100, True, chip=chip, return_info=True))(
        jnp.asarray(y))
    assert int(st) == int(ar.Code.INDEX_OVERFLOW) and np.isnan(float(v)) and int(i) == -1
    (v, i), st = jax.jit(lambda y: f(y, 128, 2, 2100, True, chip=chip, return_info=True))(
        jnp.asarray(y))                   # two repeats of ones: the first lane wins
    assert int(st) == 0 and int(i) == 0 and float(v) == 1


# ------------------------------------------------------------------ the worked use ---------

def test_ulp16_is_numpys_half_spacing_of_the_rounded_value():
    """``grad.ulp16(v)``: the spacing of float16 at ``|v|`` rounded to half -- numpy's
    ``np.spacing`` of that half, on every finite half and on floats that are not halves
    (rounded first: a backend must not skip that rounding)."""
    h = np.arange(0x7C00, dtype=np.uint16).view(np.float16)          # every finite half >= 0
    rng = np.random.default_rng(5)
    f = (rng.standard_normal(4000) * 10.0 ** rng.integers(-8, 5, 4000)).astype(np.float32)
    f = np.concatenate([h.astype(np.float32), -h.astype(np.float32), f[np.abs(f) < 65504]])
    with np.errstate(over="ignore"):               # 65504: the next half is inf
        want = np.spacing(np.abs(f).astype(np.float16)).astype(np.float32)
    got = np.asarray(jax.jit(g.ulp16)(jnp.asarray(f)))
    np.testing.assert_array_equal(got, want)


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


# ------------------------------------------------------------------ every instruction --------

from ascend_ref import registry  # noqa: E402

SPECIALS = {
    np.float16: [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE11, 0x7BFF, 0xFBFF, 0x0001,
                 0x8001, 0x03FF, 0x3C00],
    np.float32: [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
                 0xFFC12345, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x807FFFFF, 0x00800000,
                 0x3F800000],
}


def adversarial(n, dtype, mode, seed):
    """``"big"``: magnitudes up to the type's max (adds overflow / saturate), signed zeros
    and subnormals; ``"special"``: ordinary values with 8 % NaN payloads, infinities,
    subnormals, ±0 and ±max."""
    rng = np.random.default_rng(seed)
    top = float(np.finfo(dtype).max)
    ut = np.uint16 if dtype == np.float16 else np.uint32
    if mode == "big":
        x = (rng.uniform(-1, 1, n) * top * rng.choice([1.0, 0.5, 2.0**-8], n)).astype(dtype)
        sp = [b for b in SPECIALS[dtype] if not np.isnan(np.array(b, ut).view(dtype))
              and not np.isinf(np.array(b, ut).view(dtype))]
    else:
        x = (rng.standard_normal(n) * 8).astype(dtype)
        sp = SPECIALS[dtype]
    pick = rng.random(n) < 0.08
    x[pick] = np.array(rng.choice(sp, int(pick.sum())), ut).view(dtype)
    return x


def _api_words(ins, call, x, mask, params, option, chip, saturate, tensor):
    """The bit-exact API on the same call: the words of ``tensor`` and which were written."""
    ub = ar.store(ar.new_ub(chip), 0, x)
    args = []
    for name in ins.signature:
        if name in ins.operands:
            args.append(call.tensors[name])
        elif name == "mask":
            args.append(mask)
        elif ins.option is not None and name == ins.option.key:
            args.append(option)
        elif name in ins.ignored:                     # the value the tools pass (stride_unit 0)
            args.append(ins.ignored[name])
        else:
            args.append(params.get(name, 1))          # dst_rep_stride: slot r at row r
    kw = {"chip": chip, "return_info": True}
    if ins.option is not None and not ins.option.positional:
        kw[ins.option.key] = option
    if ins.saturating:
        kw["saturate"] = saturate
    ub, info = ins.public(ar)(ub, *args, **kw)
    t, s = call.tensors[tensor], x.itemsize
    raw = np.asarray(ub)[t.addr:t.addr + t.size * s].view(f"uint{8 * s}")
    span = slice(t.addr, t.addr + t.size * s)
    written = np.asarray(info.written)[span].reshape(-1, s).all(1)
    undefined = np.asarray(info.undefined)[span].reshape(-1, s).any(1)
    return raw, written, undefined


def _compare(ins, chip, dtype, option, saturate, mask, params, x):
    fn = g.function(ins.name)
    pub = {k: n for n, k in fn.names.items()}
    kw = {pub[k]: v for k, v in params.items() if k in pub}
    if ins.option is not None:
        kw[ins.option.key] = option
    if ins.saturating:
        kw["saturate"] = saturate
    call = fn.prepare(jnp.asarray(x), mask, chip=chip, **kw)
    for tensor in ("dst",) + (("work_tensor",) if ins.work_need is not None else ()):
        f = fn if tensor == "dst" else g.function(ins.name, tensor)
        got = f(jnp.asarray(x), mask, chip=chip, **kw)
        raw, written, undef = _api_words(ins, call, x, mask, params, option, chip, saturate,
                                         tensor)
        fields = call.layout.dst if tensor == "dst" else call.layout.work
        k = len(fields)
        n = k if (tensor == "dst" and not call.layout.per_repeat) else call.rows * k
        raw, written = raw[:n].reshape(-1, k), written[:n].reshape(-1, k)
        # words the API writes but leaves undefined: grad returns the reference's word
        blank = ~written & ~undef[:n].reshape(-1, k)
        got = got if isinstance(got, tuple) else (got,)
        vals = [j for j, fl in enumerate(fields) if fl.role == "value"]
        idx = [j for j, fl in enumerate(fields) if fl.role == "index"]
        what = (ins.name, tensor, chip, dtype.__name__, option, saturate, mask, params)
        if vals:
            v = bits(np.asarray(got[0])).reshape(-1, len(vals))
            w = written[:, vals]
            np.testing.assert_array_equal(v[w], raw[:, vals][w], err_msg=str(what))
            assert np.isnan(np.asarray(got[0]).reshape(-1, len(vals))[blank[:, vals]]).all(), \
                what
        if idx:
            i = np.asarray(got[-1]).reshape(-1)
            w = written[:, idx[0]]
            np.testing.assert_array_equal(i[w], raw[w, idx[0]].astype(np.int64),
                                          err_msg=str(what))
            assert (i[blank[:, idx[0]]] == -1).all(), what


#: products whose rules differ where these instructions look: block fill keep / fill /
#: undefined, the 950's default-NaN min/max; the vec_reduce_add orders group255 / odd_even /
#: tree, saturation-only (every option on the first, the default on the others)
CHIPS = {"ascendc": ["atlas_a2", "atlas_200i_500_a2", "ascend950"],
         "tik": ["atlas_a2", "atlas_200i_500_a2", "atlas_training"]}


#: the TIK vc* run their Ascend C twins' effects (checked above), only the TIK mask word order
#: and ranges are theirs: the default run checks vcmax, the slow run the other six
SLOW_FORWARD = ("vcadd", "vcmin", "vcgadd", "vcgmax", "vcgmin", "vcpadd")


@pytest.mark.parametrize("products", ["first", pytest.param("others", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", [pytest.param(i.name, marks=pytest.mark.slow)
                                  if i.name in SLOW_FORWARD else i.name for i in registry.all()])
def test_forward_is_the_api_on_adversarial_data(name, products):
    """Every registered instruction, option, product above, dtype and saturate mode: the
    words grad returns are the words the API writes, bit for bit, on data with NaN payloads,
    infinities, subnormals, ±0 and sums that overflow / saturate; unwritten words are NaN.
    The default run checks the first product of the family (every option), the slow run the
    others (the default option)."""
    ins = registry.lookup(name)
    checked = 0
    for c, chip in enumerate(CHIPS[ins.family]):
        if (c == 0) != (products == "first"):
            continue
        prof = ar.chip(chip)
        for dtype in (np.float16, np.float32):
            dt = np.dtype(dtype).name
            if dt not in prof.dtypes(name):
                continue
            lanes = 256 // np.dtype(dtype).itemsize
            if ins.family == "tik" and not ins.has_blk_stride:     # vec_reduce_*
                sets = [(lanes, dict(repeat=5, src_rep_stride=8)),
                        ([0, 2**64 - 1] if lanes == 128 else [0, 0xFFFF0000FFFF],
                         dict(repeat=300, src_rep_stride=8))]
            else:
                sets = [(lanes, dict(repeat=3, src_blk_stride=1, src_rep_stride=8)),
                        ([0x5555555555555555, 0xF0F0] if lanes == 128 else [0xFF0000FF],
                         dict(repeat=2, src_blk_stride=2, src_rep_stride=16))]
                if ins.word_order == "tik":           # TIK vc*: [mask_h, mask_l]
                    sets[1] = ([0xF0F0, 0x5555555555555555] if lanes == 128
                               else [0, 0xFF0000FF], sets[1][1])
            # an API with a continuous mask only (RepeatReduceSum): a partial count instead
            sets = [(m if isinstance(m, int) or "bits" in ins.mask_modes else lanes // 2 + 3, q)
                    for m, q in sets]
            sats = [None]
            if ins.saturating and dtype == np.float16:
                sats = [True] if prof.saturate_only else [True, False]
            options = ins.options(prof) if c == 0 else [ins.canonical_option(None)]
            for o, option in enumerate(options):
                for sat in sats:
                    for k, (mask, params) in enumerate(sets):
                        if products == "first" and (k + o + (dtype == np.float32)) % 2:
                            continue              # the default run: half of the sets
                        mode = "big" if sat or k % 2 else "special"
                        x = adversarial(300 * lanes + 64, dtype, mode, seed=k)
                        _compare(ins, chip, dtype, option, sat, mask, params, x)
                        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("chip", ["atlas_a2", "atlas_200i_500_a2", "atlas_training"])
def test_vec_reduce_add_orders(chip):
    """vec_reduce_add in each product's order (group255, odd_even, tree): forward bits equal
    the API for repeat counts around the group and chunk sizes; the gradient of the result is
    1 on every element an active lane of a repeat reads."""
    order = ar.chip(chip).add_order
    for dtype in (np.float16, np.float32):
        lanes = 256 // np.dtype(dtype).itemsize
        x = adversarial(600 * lanes, dtype, "special", seed=3)
        x[~np.isfinite(x)] = 1
        mask = lanes - 5
        for r in (3, 300):
            want = _api_words(registry.lookup("vec_reduce_add"),
                              g.function("vec_reduce_add").prepare(jnp.asarray(x), mask, r, 8,
                                                                   chip=chip),
                              x, mask, {"repeat": r, "src_rep_stride": 8}, None, chip, None,
                              "dst")[0][0]
            got = g.vec_reduce_add(jnp.asarray(x), mask, r, 8, chip=chip)
            assert bits(np.asarray(got)) == want, (chip, order, dtype, r)
        y = jnp.asarray(RNG.uniform(0.5, 2, 300 * lanes).astype(dtype))
        gr = np.asarray(jax.grad(lambda y: g.vec_reduce_add(y, mask, 300, 8, chip=chip)
                                 .astype(jnp.float32))(y))
        want = np.zeros(300 * lanes)
        want.reshape(300, lanes)[:, :mask] = 1
        np.testing.assert_array_equal(gr, want)


def test_vmap_over_parameter_sets():
    """One grad function vmapped over repeat counts, strides and masks (traced parameters):
    each set's forward values are the API's, its gradient the set's read count; a set that
    breaks a rule returns its status and no values."""
    chip = "atlas_a2"
    x = ordinary(4096, np.float32)
    reps = jnp.array([1, 3, 7, 5])
    blks = jnp.array([1, 2, 0, 1])
    strides = jnp.array([8, 16, 3, 70000])          # the last: STRIDE_RANGE
    masks = jnp.array([64, 17, 40, 64])
    w = jnp.arange(1.0, 9.0)

    def loss(x, r, blk, rep, m):
        out, st = g.whole_reduce_sum(x, m, r, blk, rep, chip=chip, max_repeat=8,
                                     return_info=True)
        return jnp.sum(jnp.where(jnp.arange(8) < r, out, 0) * w), (out, st)

    grads, (outs, sts) = jax.vmap(jax.grad(loss, has_aux=True), in_axes=(None, 0, 0, 0, 0))(
        jnp.asarray(x), reps, blks, strides, masks)
    for k in range(4):
        r, blk, rep, m = (int(a[k]) for a in (reps, blks, strides, masks))
        if k == 3:
            assert int(sts[k]) == int(ar.Code.STRIDE_RANGE)
            assert np.isnan(np.asarray(outs[k])).all() and not np.asarray(grads[k]).any()
            continue
        assert int(sts[k]) == 0
        want = run_api(ar.ascendc.whole_reduce_sum, x, r, m, r, 1, blk, rep, chip=chip)
        np.testing.assert_array_equal(bits(np.asarray(outs[k])[:r]), bits(want))
        assert np.isnan(np.asarray(outs[k])[r:]).all()
        p = g.plan("whole_reduce_sum", jnp.asarray(x), m, r, blk, rep, chip=chip)
        cnt = np.zeros(x.size)
        np.add.at(cnt, p.index[p.active], np.repeat(np.asarray(w[:r]), p.lanes).reshape(
            r, p.lanes)[p.active])
        np.testing.assert_array_equal(np.asarray(grads[k]), cnt)
    # TIK min with cal_index over repeat counts, one past the half range (511)
    xh = jnp.asarray(ordinary(600 * 128, np.float16))
    vals, idx, sts = jax.vmap(lambda r: (lambda o: (o[0][0], o[0][1], o[1]))(
        g.vec_reduce_min(xh, 128, r, 1, True, chip="atlas_training", return_info=True)))(
        jnp.array([3, 511, 512]))
    for k, r in enumerate((3, 511)):
        out = _tik_api("min", np.asarray(xh), 128, r, 1, "atlas_training")
        assert bits(np.asarray(vals[k])) == bits(out[0]) and int(idx[k]) == int(bits(out[1]))
    assert int(sts[2]) == int(ar.Code.REPEAT_RANGE) and int(idx[2]) == -1


def test_an_empty_or_missing_source_is_a_constraint_error():
    """src of no element was an IndexError from jnp.take, src=None a ValueError from
    jnp.asarray; now TENSOR_BOUNDS (the call reads bytes the tensor does not have) and
    BAD_ARGUMENT. Zero repeats read nothing: an empty result, as the API leaves dst."""
    empty = jnp.ones(0, jnp.float16)
    for fn in (lambda s: g.whole_reduce_sum(s, 128, 1, 1, 8, chip="atlas_a2"),
               lambda s: g.vec_reduce_add(s, 128, 1, 8, chip="atlas_a2")):
        with pytest.raises(ConstraintError) as e:
            fn(empty)
        assert e.value.code == ar.Code.TENSOR_BOUNDS and "bytes [0, 0)" in str(e.value)
        with pytest.raises(ConstraintError) as e:
            fn(None)
        assert e.value.code == ar.Code.BAD_ARGUMENT
    assert g.whole_reduce_sum(empty, 128, 0, 1, 8, chip="atlas_a2").shape == (0,)
