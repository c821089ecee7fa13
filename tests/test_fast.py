"""Fast paths against the general path against the scalar oracle, on adversarial data.

The fast kernels (issue 11) compute min/max by one halving tree over packed order keys, sums
in float32 with an output guard, read extents and the read-after-write rule in closed form,
and source bits by 32-byte block slices. Every one of them must give the bits of the general
path (``engine.use_path("general")``: the reference algorithms) — which the oracle checks in
turn — including when a guard fails and the exact fallback takes over.
"""

from __future__ import annotations

import gc
import zlib
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import engine, numerics
from ascend_ref.batch import run_cases
from ascend_ref.case import run_jax, run_oracle
from ascend_ref.fuzz.compare import diff
from ascend_ref.fuzz.generate import RngDraw, draw_case
from conftest import spans_recorded, undefined_spans

F16 = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFD55, 0x0001, 0x8001,
                0x03FF, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x3C01], np.uint16)
F32 = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                0x7F800001, 0xFFA5A5A5, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF,
                0x00800000, 0x0C000000, 0x8C000000, 0x0BFFFFFF, 0x8BFFFFFF, 0x0C000001,
                0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF], np.uint32)


def adversarial_bits(rng, shape, dtype):
    """Random bits mixed with specials; row 0 all ties, row 1 all NaN (payloads of both signs),
    row 2 signed zeros, row 3 subnormals of both signs, row 4 one value and its negation."""
    w = np.dtype(dtype).itemsize
    ut = np.dtype(f"uint{8 * w}")
    x = rng.integers(0, 2 ** (8 * w), size=shape, dtype=np.uint64).astype(ut)
    if dtype.startswith("float"):
        pool = F16 if w == 2 else F32
        pick = rng.random(shape) < 0.5
        x[pick] = pool[rng.integers(0, len(pool), shape)][pick]
        sign = ut.type(1 << (8 * w - 1))
        nan_lo = 0x7C01 if w == 2 else 0x7F800001
        x[1] = (rng.integers(nan_lo, int(sign) - 1, shape[1:], dtype=np.uint64).astype(ut)
                | np.where(rng.random(shape[1:]) < 0.5, sign, 0).astype(ut))
        x[2] = np.where(rng.random(shape[1:]) < 0.5, sign, 0).astype(ut)
        sub = (1 << (10 if w == 2 else 23)) - 1
        x[3] = (x[3] & ut.type(sub)) | (x[3] & sign)
        x[4] = np.where(np.arange(shape[1]) % 2 == 1, x[4, 0] ^ sign, x[4, 0])
    x[0] = x[0, 0]
    return x


@pytest.mark.parametrize("blocked", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int16", "uint16", "int32", "uint32"])
def test_minmax_tree_equals_general_path(dtype, blocked):
    rng = np.random.default_rng(11)

    @jax.jit            # one compile a width: min and max, general and tree (float16: 3.4 -> 2.2 s)
    def both(b, a):
        return {k: (numerics.select_extreme(b, a, k, dtype),
                    numerics.select_extreme_tree(b, a, k, dtype, blocked)) for k in ("min", "max")}

    for n in (8, 16, 64, 128, 255, 511):
        bits = jnp.asarray(adversarial_bits(rng, (24, n), dtype))
        active = rng.random((24, n)) < 0.6
        active[5] = False                      # no active lane
        active[6] = False
        active[6, n - 1] = True                # only the last lane
        for kind, (want, got) in both(bits, jnp.asarray(active)).items():
            for a, b in zip(want, got):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=f"{kind} {n}")
        # the NaN row: the first active NaN wins, with its payload
        v, i, _ = got
        first = int(np.flatnonzero(active[1])[0])
        assert dtype[0] != "f" or int(i[1]) == first and int(v[1]) == int(bits[1, first])


def _profile(dtype_nan16=0x7E00, dtype_nan32=0x7FC00000, ftz=False):
    return SimpleNamespace(fp32_ftz=ftz, default_nan=lambda d: dtype_nan16 if d == "float16"
                           else dtype_nan32)


def _tiny_cancellations(rng, rows):
    """float32 rows whose partial sums come close to (or into) the subnormal range."""
    t = np.float32(2.0 ** -103)
    k = rng.integers(-2**20, 2**20, (rows, 64)).astype(np.float32) * np.float32(2.0 ** -126)
    x = np.where(rng.random((rows, 64)) < 0.5, k + t, -(k + t)).astype(np.float32)
    x[0] = [2 * t, -(2 * t - np.float32(2.0 ** -126))] * 32   # every pair sums to 2**-126
    x[1, ::2], x[1, 1::2] = np.float32(2.0 ** -102), -np.float32(2.0 ** -102)
    return x.view(np.uint32)


@pytest.mark.parametrize("dtype,saturate,ftz", [("float16", False, False), ("float16", True, False),
                                                ("float32", False, False),
                                                ("float32", False, True)])
def test_fast_sums_equal_the_exact_adder(dtype, saturate, ftz):
    rng = np.random.default_rng(5)
    prof = _profile(ftz=ftz)
    lanes = 128 if dtype == "float16" else 64
    rows = [adversarial_bits(rng, (64, lanes), dtype)]
    scale = [1e-6, 1.0, 500.0, 3e4] if dtype == "float16" else [1e-36, 1e-30, 1.0, 1e37]
    normal = rng.standard_normal((64, lanes)) * rng.choice(scale, (64, 1))
    with np.errstate(over="ignore"):     # half rows at 3e4 may round to inf: wanted
        rows.append(normal.astype(dtype).view(f"uint{8 * np.dtype(dtype).itemsize}"))
    if dtype == "float32":
        rows.append(_tiny_cancellations(rng, 16))
    bits = jnp.asarray(np.concatenate(rows))

    def compute(s):
        return (numerics.tree_sum(s.enter(bits), s.add),)

    @jax.jit
    def run():
        exact, _ = numerics.guarded_sums(compute, dtype, prof, saturate, "general")
        fast, _ = numerics.guarded_sums(compute, dtype, prof, saturate, "fast")
        batch, ok = numerics.guarded_sums(compute, dtype, prof, saturate, "batch")
        s = numerics.Summation(dtype, prof, saturate, True)
        finite = jnp.isfinite(numerics.tree_sum(s.enter(bits), s.add))
        return exact[0], fast[0], batch[0], ok, finite

    exact, fast, batch, ok, finite = map(np.asarray, run())
    np.testing.assert_array_equal(fast, exact)              # with the local fallback: always
    np.testing.assert_array_equal(batch[finite], exact[finite])  # guard holds → same bits
    assert finite.any() and not finite.all() and not ok     # both sides of the guard were hit


def test_fast_float_sums_keep_results_next_to_the_subnormal_range():
    """Inputs >= 2**-103 that cancel to 2**-126 (the smallest normal) stay on the fast tree."""
    x = _tiny_cancellations(np.random.default_rng(2), 4)[:2]
    prof = _profile()
    s = numerics.Summation("float32", prof, False, True)
    vals = jax.jit(lambda b: numerics.tree_sum(s.enter(b), s.add))(jnp.asarray(x))
    assert bool(jnp.all(jnp.isfinite(vals)))
    e = numerics.Summation("float32", prof, False, False)
    exact = jax.jit(lambda b: numerics.tree_sum(e.enter(b), e.add))(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(s.leave(vals)), np.asarray(exact))
    assert np.asarray(exact).view(np.float32)[0] == np.float32(2.0 ** -126) * 32


@pytest.mark.parametrize("api", ["reduce_sum", "reduce_sum_count"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_level2_sums_run_on_the_guarded_fast_tree(api, dtype):
    """The level-2 ReduceSum (both forms) sums on the fast tree: on the ``"batch"`` path its
    guard holds for finite sums (no rerun) and fails for a sum that overflows or meets a NaN
    (the batch reruns on the exact adder), and each result is the general path's."""
    from ascend_ref.case import Case

    s = np.dtype(dtype).itemsize
    lanes, r = 256 // s, 20
    ins = ar.registry.lookup(api)
    params = {"repeat": r * lanes} if ins.kernel.count_form else {"repeat": r,
                                                                   "src_rep_stride": 8}
    need = ins.work_elements(params["repeat"], None, dtype)
    src = r * 256
    rng = np.random.default_rng(3)
    datas = {"finite": rng.standard_normal(src // s),
             "overflow": np.full(src // s, 60000.0 if s == 2 else 3e38),
             "nan": np.where(np.arange(src // s) == 77, np.nan, 1.0)}
    for name, data in datas.items():
        ub = np.zeros(src + 64 + -(-need * s // 64) * 64, np.uint8)
        ub[:src] = data.astype(dtype).view(np.uint8)
        case = Case(api, "atlas_a2", dtype, None, lanes, params,
                    {"src": (0, src // s), "dst": (src, 32 // s), "work_tensor": (src + 64, need)},
                    ub, False if ins.saturating and s == 2 else None)
        got = {}
        for path in ("batch", "general"):
            prep = case.prepare(info=True, path=path)
            out, status, diag, _, _ = engine.kernel(prep.ins, prep.spec, engine.pad_ub(prep.ub),
                                                    prep.p)
            assert int(status) == 0, (api, dtype, name)
            got[path] = (np.asarray(out)[src:src + s], bool(diag.need_exact))
        assert got["batch"][1] == (name != "finite"), (api, dtype, name)
        if name == "finite":                   # a result the guard passes is the exact one
            np.testing.assert_array_equal(got["batch"][0], got["general"][0])


# ------------------------------------------------------------------ whole calls -------------

APIS = ["whole_reduce_min", "whole_reduce_max", "whole_reduce_sum", "reduce_data_block",
        "vec_reduce_min", "vec_reduce_max", "vec_reduce_add", "reduce_sum", "reduce_sum_count"]
CHIPS = ["atlas_a2", "ascend950", "atlas_training"]   # keep / fill+undefined rules; TIK


def _inject(case, rng):
    """Make the data harder: whole repeats of one value (ties), of NaNs, of ±0."""
    s = np.dtype(case.dtype).itemsize
    ub = case.ub.view(f"uint{8 * s}").copy()
    src_addr, src_size = case.tensors["src"]
    lo, n = src_addr // s, min(src_size, ub.size - src_addr // s)
    lanes = 256 // s
    for start in range(lo, lo + n, lanes):
        seg = ub[start:min(start + lanes, lo + n)]
        roll = rng.random()
        if roll < 0.15:
            seg[:] = seg[0]
        elif roll < 0.3 and case.dtype.startswith("float"):
            nan = F16[[4, 5, 6, 7]] if s == 2 else F32[[4, 5, 6, 7]]
            seg[:] = nan[rng.integers(0, 4, seg.size)]
        elif roll < 0.4:
            # ±0 for floats, 0 / the sign bit for integers: both as the row's own type
            # (two Python ints were int64 to numpy, and 1 << 63 overflows it: numpy 2.5)
            seg[:] = np.where(rng.random(seg.size) < 0.5, ub.dtype.type(0),
                              ub.dtype.type(1 << (8 * s - 1)))
    case.ub = ub.view(np.uint8)
    return case


def _cases(api, count, seed):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        c = draw_case(RngDraw(seed, k), apis=[api], chips=CHIPS, invalid_rate=0.15,
                      max_ub=1 << 13, tik_max_repeat=300)
        out.append(_inject(c, rng))
    return out


def _agree(api, count, seed):
    cases = _cases(api, count, seed)
    seen = []
    with engine.use_path("general"):
        general = run_cases(cases)
    batch = run_cases(cases)                        # fast kernels + batch-level fallback
    for k, c in enumerate(cases):
        assert diff(general[k], batch[k]) is None, (c.describe(), diff(general[k], batch[k]))
        if general[k].code is None:                 # the general path stays bit-exact
            np.testing.assert_array_equal(general[k].ub, batch[k].ub)
            np.testing.assert_array_equal(general[k].written, batch[k].written)
            np.testing.assert_array_equal(general[k].undefined, batch[k].undefined)
        oracle = run_oracle(c)
        if diff(oracle, general[k]) is None:        # the oracle checks the general path...
            assert diff(oracle, batch[k]) is None, (c.describe(), diff(oracle, batch[k]))
        else:                                       # ...and must itself agree with it
            seen.append(c.describe())
    assert not seen, f"general path vs oracle: {len(seen)} case(s) differ, e.g. {seen[0]}"
    for c in cases[:1]:                             # the public (traced-fast) path too
        assert diff(run_jax(c), general[cases.index(c)]) is None, c.describe()


@pytest.mark.parametrize("api", APIS)
def test_fast_batch_general_and_oracle_agree(api):
    _agree(api, 8, seed=APIS.index(api) + 100)


@pytest.mark.slow
@pytest.mark.parametrize("api", APIS)
def test_fast_batch_general_and_oracle_agree_campaign(api):
    _agree(api, 80, seed=APIS.index(api) + 1000)


def _vmapped_sum(ubs, saturate):
    def one(ub):
        return ar.ascendc.whole_reduce_sum(ub, ar.Tensor(512, "half", 16), ar.Tensor(0, "half", 256),
                                           128, 2, 1, 1, 8, chip="atlas_a2", saturate=saturate)
    return jax.jit(jax.vmap(one))(ubs)


def test_guard_failure_under_user_vmap_and_in_a_batch_falls_back_exactly():
    rng = np.random.default_rng(9)
    ubs = np.zeros((6, 1024), np.uint8)
    for b in range(6):
        ubs[b, :512] = (rng.standard_normal(256) * 8).astype(np.float16).view(np.uint8)
    big = np.full(128, 60000, np.float16).view(np.uint8)
    ubs[2, :256] = big                                    # saturates: guard fails
    ubs[4, 256:258] = np.array([0x7D55], np.uint16).view(np.uint8)   # NaN payload
    wants = {}
    for sat in (True, False):
        got = np.asarray(_vmapped_sum(jnp.asarray(ubs), sat))
        with engine.use_path("general"):
            want = wants[sat] = np.asarray(_vmapped_sum(jnp.asarray(ubs), sat))
        np.testing.assert_array_equal(got, want)
        out, status = ar.run_batch("whole_reduce_sum", ubs.copy(), chip="atlas_a2",
                                   dtype="half", mask=128, repeat=2, dst_rep_stride=1,
                                   src_blk_stride=1, src_rep_stride=8, dst=(512, 16),
                                   src=(0, 256), saturate=sat)
        assert (status == 0).all()
        np.testing.assert_array_equal(out, want)
    assert wants[True][2, 512:514].view(np.float16)[0] == 65504
    assert np.isinf(wants[False][2, 512:514].view(np.float16)[0])
    assert np.isnan(wants[False][4, 514:516].view(np.float16)[0])


def test_closed_form_overlap_check_matches_the_table():
    """Read-after-write: in place, dst ahead of src, zero strides, masks; fast == general."""
    rng = np.random.default_rng(4)
    b = 64
    ubs = np.zeros((b, 4096), np.uint8)
    prm = dict(repeat=rng.integers(1, 12, b), dst_rep_stride=rng.integers(0, 4, b),
               src_blk_stride=rng.integers(0, 3, b), src_rep_stride=rng.integers(0, 10, b),
               mask=rng.integers(1, 129, b),
               src=(np.zeros(b, int), np.full(b, 2048)),
               dst=(rng.integers(0, 64, b) * 32, np.full(b, 256)))
    for api in ("whole_reduce_max", "reduce_data_block"):
        kw = dict(reduce_type="SUM") if api == "reduce_data_block" else {}
        out, status = ar.run_batch(api, ubs.copy(), chip="atlas_a2", dtype="half", **prm, **kw)
        with engine.use_path("general"):
            want, wstatus = ar.run_batch(api, ubs.copy(), chip="atlas_a2", dtype="half", **prm,
                                         **kw)
        np.testing.assert_array_equal(status, wstatus)
        np.testing.assert_array_equal(out, want)
        assert {0, int(ar.Code.OVERLAP)} <= set(status.tolist())


# ------------------------------------------------------------- run_batch kernels -----------

BATCH_CONFIGS = [  # (api, chip, dtype, option): every API, both widths, every option kind
    ("whole_reduce_min", "atlas_a2", "float16", "ORDER_VALUE_INDEX"),
    ("whole_reduce_max", "atlas_a2", "float32", "ORDER_INDEX_VALUE"),
    ("whole_reduce_min", "ascend950", "float32", "ORDER_ONLY_INDEX"),
    ("whole_reduce_sum", "atlas_a2", "float16", None),
    ("whole_reduce_sum", "atlas_a2", "float32", None),
    ("reduce_data_block", "atlas_a2", "float16", "SUM"),
    ("reduce_data_block", "ascend950", "float32", "MAX"),
    ("reduce_data_block", "atlas_a2", "float16", "MIN"),
    ("vec_reduce_min", "atlas_training", "float16", True),
    ("vec_reduce_max", "atlas_training", "float16", False),
    ("vec_reduce_add", "atlas_training", "float16", None),
    ("vec_reduce_add", "atlas_training", "float32", None),
]
_R = 6                     # compiled table height (max_repeat): small, every path the same


def _batch_layout(api, dtype, option, r=_R):
    from ascend_ref import registry

    s = np.dtype(dtype).itemsize
    src_bytes = 4096                          # room for every stride drawn below
    if api.startswith("vec_"):
        need = int(registry.lookup(api).work_need(r, option, dtype))
        work = -(-need * s // 32) * 32
        return dict(src=(0, src_bytes // s), dst=(src_bytes, 32 // s),
                    work_tensor=(src_bytes + 32, work // s)), src_bytes + 32 + work
    return dict(src=(0, src_bytes // s), dst=(src_bytes, 1024 // s)), src_bytes + 1024


def _batch_kwargs(api, option, tensors, per_case, rng, b, lanes):
    kw = dict(max_repeat=_R, **tensors)
    if per_case:
        kw["repeat"] = rng.integers(0 if not api.startswith("vec_") else 1, _R + 1, b)
        kw["src_rep_stride"] = rng.integers(0, 13, b)       # 0: every repeat reads one block
        kw["mask"] = rng.integers(1, lanes + 1, b)
        kw["mask"][:3] = [lanes, 1, lanes // 2 + 3]
    else:
        kw.update(repeat=_R, src_rep_stride=8, mask=lanes)
    if not api.startswith("vec_"):
        if per_case:
            kw["src_blk_stride"] = rng.integers(0, 3, b)   # 0: the 8 blocks coincide
            kw["dst_rep_stride"] = rng.integers(0, 3, b)
            src_addr, src_size = tensors["src"]
            # dst inside the source's reads for some cases (read-after-write), else after it
            dst_addr = np.where(rng.random(b) < 0.3, rng.integers(0, 16, b) * 32,
                                tensors["dst"][0])
            kw["dst"] = (dst_addr, np.full(b, tensors["dst"][1]))
        else:
            kw.update(src_blk_stride=1, dst_rep_stride=1)
    if api.startswith("whole_reduce_m"):
        kw["order"] = option
    elif api == "reduce_data_block":
        kw["reduce_type"] = option
    elif api in ("vec_reduce_min", "vec_reduce_max"):
        kw["cal_index"] = option
    return kw


def _batch_data(rng, b, width, dtype, benign):
    s = np.dtype(dtype).itemsize
    if benign:          # sums stay finite: the fast trees' guard holds, no fallback
        x = (rng.standard_normal((b, width // s)) * 4).astype(dtype)
        return x.view(np.uint8)
    x = adversarial_bits(rng, (b, width // s), dtype)
    lanes = 256 // s
    big = np.array(60000 if s == 2 else 3e38, dtype).view(x.dtype)
    x[5, :lanes] = big                                   # saturating / overflowing sums
    x[6, lanes:2 * lanes] = x[6, lanes]                  # a repeat of ties
    return x.view(np.uint8)


@pytest.mark.parametrize("api,chip,dtype,option", BATCH_CONFIGS)
def test_run_batch_fast_kernels_equal_the_general_path(api, chip, dtype, option):
    """run_batch's kernels (shared parameters unbatched, static strides as word slices,
    packed-key trees, guarded sums with the batch fallback) against the general path, on
    adversarial and on benign data, with shared and with per-case parameters (zero and
    overlapping strides, masked lanes, read-after-write dst); a few rows against the oracle."""
    from ascend_ref.case import Case

    rng = np.random.default_rng(BATCH_CONFIGS.index((api, chip, dtype, option)) + 7)
    b, lanes = 12, 256 // np.dtype(dtype).itemsize
    tensors, width = _batch_layout(api, dtype, option)
    for per_case in (False, True):
        for benign in (False, True):
            ubs = _batch_data(rng, b, width, dtype, benign)
            kw = _batch_kwargs(api, option, tensors, per_case, rng, b, lanes)
            out, status = ar.run_batch(api, ubs, chip=chip, dtype=dtype, **kw)
            with engine.use_path("general"):
                want, wstatus = ar.run_batch(api, ubs, chip=chip, dtype=dtype, **kw)
            np.testing.assert_array_equal(status, wstatus, err_msg=f"{per_case} {benign}")
            np.testing.assert_array_equal(out, want, err_msg=f"{per_case} {benign}")
            assert per_case or (status == 0).all()
            if per_case:
                continue
            params = ({"repeat": _R, "src_rep_stride": 8} if api.startswith("vec_") else
                      {"repeat": _R, "dst_rep_stride": 1, "src_blk_stride": 1,
                       "src_rep_stride": 8})
            for k in range(3):
                o = run_oracle(Case(api, chip, dtype, option, lanes, params, dict(tensors),
                                    ubs[k].copy()))
                assert o.code is None
                keep = ~np.asarray(o.undefined, bool)
                np.testing.assert_array_equal(out[k][keep], np.asarray(o.ub)[keep])


#: the sums (whose trees the pinned kernels unmask) and one min / max by default; the
#: other configurations with ``-m slow``
PINNED_CONFIGS = [BATCH_CONFIGS[k] for k in (0, 3, 4, 5, 10, 11)] + \
    [("reduce_data_block", "atlas_a2", "float32", "SUM")]


@pytest.mark.parametrize("api,chip,dtype,option", PINNED_CONFIGS + [
    pytest.param(*c, marks=pytest.mark.slow) for c in BATCH_CONFIGS if c not in PINNED_CONFIGS])
def test_pinned_kernels_equal_the_general_path(monkeypatch, pins, api, chip, dtype, option):
    """A batch of 64 cases that share their source address, a full mask and a repeat equal
    to the table height runs a kernel with the address compiled in and unmasked sum trees
    (``batch._pinned_src``): the bits of the general path and of the unpinned kernel, on
    adversarial data (the sum guard fails there: the batch fallback) and on benign data;
    the same through run_cases' one-call chunks; only ``PINNED_ADDRESSES`` addresses a
    configuration are pinned, the others run unpinned."""
    from ascend_ref import batch
    from ascend_ref.case import Case

    monkeypatch.setattr(batch, "_PINNED", __import__("collections").defaultdict(set))
    monkeypatch.setattr(batch, "PINNED_ADDRESSES", 2)
    rng = np.random.default_rng(zlib.crc32(f"{api} {chip} {dtype} {option}".encode()))
    b, lanes, s = 64, 256 // np.dtype(dtype).itemsize, np.dtype(dtype).itemsize
    tensors, width = _batch_layout(api, dtype, option)
    kw = _batch_kwargs(api, option, tensors, False, rng, b, lanes)
    for n, (addr, benign) in enumerate([(96, False), (96, True), (0, False), (512, True)]):
        rows = 100 if n == 1 else b           # and the address as a [B] array
        ubs = _batch_data(rng, rows, width, dtype, benign)
        kw["src"] = (np.full(rows, addr) if n == 1 else addr, tensors["src"][1] - addr // s)
        pins.clear()
        out, status = ar.run_batch(api, ubs, chip=chip, dtype=dtype, **kw)
        assert pins == [None if n == 3 else addr], pins          # the third address: none
        monkeypatch.setattr(batch, "PINNED", False)
        plain, pstatus = ar.run_batch(api, ubs, chip=chip, dtype=dtype, **kw)
        monkeypatch.setattr(batch, "PINNED", True)
        with engine.use_path("general"):
            want, wstatus = ar.run_batch(api, ubs, chip=chip, dtype=dtype, **kw)
        assert (status == 0).all()
        for got, st in ((out, status), (plain, pstatus)):
            np.testing.assert_array_equal(st, wstatus, err_msg=f"{addr} {benign}")
            np.testing.assert_array_equal(got, want, err_msg=f"{addr} {benign}")
    # run_cases: one call's cases run on run_batch's kernel, pinned where the repeat is
    # the height of the table run_cases compiles (16 here; the source span fills 4096 bytes)
    tens, width = _batch_layout(api, dtype, option, 16)
    params = {k: 16 if k == "repeat" else kw[k] for k in
              ("repeat", "dst_rep_stride", "src_blk_stride", "src_rep_stride") if k in kw}
    ubs = _batch_data(rng, b, width, dtype, False)
    cases = [Case(api, chip, dtype, option, lanes, params, tens, ubs[k]) for k in range(b)]
    pins.clear()
    got = run_cases(cases)
    assert 0 in pins
    monkeypatch.setattr(batch, "PINNED", False)
    plain = run_cases(cases)
    with engine.use_path("general"):
        want = run_cases(cases)
    for k in range(b):
        assert got[k].code is None and want[k].code is None and plain[k].code is None
        np.testing.assert_array_equal(np.asarray(got[k].undefined), np.asarray(want[k].undefined))
        for o in (got[k], plain[k]):
            np.testing.assert_array_equal(np.asarray(o.ub), np.asarray(want[k].ub))


def test_block_stride_zero_read_extent_is_the_highest_lane_offset():
    """With src_blk_stride 0 the 8 blocks coincide: the last active lane need not be the
    highest read. A source sized to end at the highest read is in bounds; one element
    less is a TENSOR_BOUNDS error — on the fast closed form as on the general table."""
    b = 4
    ubs = np.zeros((b, 2048), np.uint8)
    # lanes 15 (block 0, offset 30) and 16 (block 1, offset 0): the last lane reads lowest
    words = np.zeros((b, 4), np.uint32)
    words[:, 0] = (1 << 15) | (1 << 16)
    kw = dict(chip="atlas_a2", dtype="half", mask=words, mask_mode="bits", repeat=1,
              dst_rep_stride=1, src_blk_stride=0, src_rep_stride=8, dst=(1024, 16),
              order="ORDER_VALUE_INDEX")
    for size, code in ((16, 0), (15, int(ar.Code.TENSOR_BOUNDS))):
        out, status = ar.run_batch("whole_reduce_min", ubs, src=(0, size), **kw)
        with engine.use_path("general"):
            want, wstatus = ar.run_batch("whole_reduce_min", ubs, src=(0, size), **kw)
        assert wstatus.tolist() == [code] * b
        np.testing.assert_array_equal(status, wstatus)
        np.testing.assert_array_equal(out, want)


def _merge_reference(out, start, writes):
    """run_batch's merge written out word by word (the independent reference)."""
    out = out.copy()
    for addr, bits, valid in writes:
        for idx in zip(*np.nonzero(valid)):
            row = start + idx[0]
            if row >= out.shape[0]:
                continue
            a, v = int(addr[idx]), int(bits[idx])
            for k in range(bits.dtype.itemsize):
                out[row, a + k] = (v >> (8 * k)) & 0xFF
    return out


@pytest.mark.parametrize("width,word,aligned", [(96, np.uint16, True), (96, np.uint32, True),
                                                (98, np.uint32, True), (96, np.uint32, False)])
def test_run_batch_merge_writes_the_words_of_every_written_slot(width, word, aligned):
    """The host merge (flat-index stores; byte stores for a row width that is not a whole
    number of words or an unaligned address) writes exactly the valid words, in rows
    ``start...``, and drops the padded rows past the batch."""
    from ascend_ref.batch import _merge

    rng = np.random.default_rng(3)
    out = rng.integers(0, 256, (5, width), dtype=np.uint8)
    s = np.dtype(word).itemsize
    c = 4                                            # a padded chunk: rows 3 and 4 of it fall off
    slots = rng.permutation((width - 8) // s)[:6].reshape(3, 2)
    addr = np.broadcast_to(slots * s + (0 if aligned else 1), (c, 3, 2)).astype(np.int32)
    bits = rng.integers(0, 2 ** (8 * s), (c, 3, 2), dtype=np.uint64).astype(word)
    for valid in (np.ones((c, 3, 2), bool), rng.random((c, 3, 2)) < 0.5):
        writes = [(addr, bits, valid), (addr[:, :1] + 0, bits[:, :1] ^ word(1),
                                        valid[:, :1] & ~valid[:, 1:2])]
        got = out.copy()
        _merge(got, 2, writes)
        np.testing.assert_array_equal(got, _merge_reference(out, 2, writes))


@pytest.mark.parametrize("word", [np.uint16, np.uint32])
def test_run_batch_merge_dense_slots_as_one_slice_and_near_misses(word):
    """A write table whose rows all hold the same consecutive addresses is stored as one 2-D
    slice (batch._dense_store); a table that only nearly is (one row's base shifted, a gap
    between two words, an invalid word, a run past the row's end) goes the flat-index way.
    Every layout writes what the word-by-word reference writes."""
    from ascend_ref.batch import _dense_store, _merge

    rng = np.random.default_rng(5)
    s = np.dtype(word).itemsize
    out = rng.integers(0, 256, (6, 128), dtype=np.uint8)
    c, k = 5, 12                                     # a padded chunk from row 2: 4 rows land
    dense = np.broadcast_to(16 + s * np.arange(k), (c, k)).astype(np.int32).reshape(c, 3, 4)
    bits = rng.integers(0, 2 ** (8 * s), (c, 3, 4), dtype=np.uint64).astype(word)
    full = np.ones((c, 3, 4), bool)
    shifted = dense.copy()
    shifted[3] += s
    gap = dense.copy()
    gap[:, 2] += s
    hole = full.copy()
    hole[1, 0, 2] = False
    tail = (dense + (128 - 16 - s * k) + s).astype(np.int32)      # the last word leaves the row
    clipped = tail - s
    cases = [(dense, full, True), (shifted, full, False), (gap, full, False),
             (dense, hole, False), (clipped, full, True)]
    for addr, valid, one_slice in cases:
        assert _dense_store(out.copy(), 2, addr[:4], bits[:4], valid[:4]) is one_slice
        got = out.copy()
        _merge(got, 2, [(addr, bits, valid)])
        np.testing.assert_array_equal(got, _merge_reference(out, 2, [(addr, bits, valid)]))
    assert _dense_store(out.copy(), 2, tail[:4], bits[:4], full[:4]) is False


def test_all_finite_bits_guard_reads_every_element():
    """The sums' output guard (a reduce-window, not fused with the tree) says True exactly
    when no element has an all-ones exponent, for any shape, under vmap as well."""
    rng = np.random.default_rng(4)
    for dtype, expo in (("float16", 0x7C00), ("float32", 0x7F800000)):
        ut = np.dtype(f"uint{8 * np.dtype(dtype).itemsize}")
        for shape in ((), (1,), (7,), (3, 5), (2, 255, 8)):
            x = (rng.standard_normal(shape) * 8).astype(dtype).view(ut).reshape(shape)
            assert bool(numerics._all_finite_bits(jnp.asarray(x), expo))
            for special in (expo, expo | 1, expo | (1 << (8 * ut.itemsize - 1))):
                y = x.copy().reshape(-1)
                y[rng.integers(0, y.size)] = special
                assert not bool(numerics._all_finite_bits(jnp.asarray(y.reshape(shape)), expo))
        rows = (rng.standard_normal((6, 40)) * 8).astype(dtype).view(ut)
        rows[[1, 4], [3, 39]] = expo
        got = jax.vmap(lambda r: numerics._all_finite_bits(r, expo))(jnp.asarray(rows))
        assert np.asarray(got).tolist() == [True, False, True, True, False, True]


def test_run_batch_in_padded_chunks_equals_one_call_and_the_general_path(monkeypatch):
    """A batch longer than the chunk runs as equal-shape chunks (the last one padded); a
    guard failure in one chunk sends only that chunk to the exact fallback. Same bits as one
    unchunked call and as the general path."""
    from ascend_ref import batch

    rng = np.random.default_rng(9)
    api, dtype = "whole_reduce_sum", "float16"
    tensors, width = _batch_layout(api, dtype, None)
    ubs = _batch_data(rng, 40, width, dtype, benign=True)
    bad = _batch_data(rng, 8, width, dtype, benign=False)
    ubs[33:41] = bad[:7]                       # non-finite sums in the second chunk only
    kw = _batch_kwargs(api, None, tensors, True, rng, 40, 128)
    whole = ar.run_batch(api, ubs, chip="atlas_a2", dtype=dtype, **kw)
    monkeypatch.setattr(batch, "_BATCH_CHUNK_BYTES", 1)    # chunks of 32 cases: 32 + 8 padded
    assert batch._chunk(40, _R, batch._BATCH_CHUNK_BYTES) == 32
    chunked = ar.run_batch(api, ubs, chip="atlas_a2", dtype=dtype, **kw)
    with engine.use_path("general"):
        want = ar.run_batch(api, ubs, chip="atlas_a2", dtype=dtype, **kw)
    for got in (whole, chunked):
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("api,chip,dtype,option", [BATCH_CONFIGS[0], BATCH_CONFIGS[-2]])
def test_run_batch_pipelined_chunks_equal_the_serial_loop(monkeypatch, api, chip, dtype, option):
    """The pipelined loop (chunk k dispatched before chunk k - 1 is merged; an input aligned
    to 64 bytes read in place by the kernels and copied into the result while they run, up
    to AHEAD_CHUNKS kernels dispatched before the oldest chunk is copied and merged -- all
    four chunks, two of them, none --, any other input copied just before its kernel)
    against the serial one (the whole input copied first) and the general path: four
    chunks, the last padded, a guard failure in one, per-case parameters, the
    undefined-byte masks; the caller's array unchanged."""
    from ascend_ref import batch, batch_prep

    rng = np.random.default_rng(53)
    b, lanes = 100, 256 // np.dtype(dtype).itemsize
    tensors, width = _batch_layout(api, dtype, option)
    data = _batch_data(rng, b, width, dtype, benign=True)
    data[40:47] = _batch_data(rng, 7, width, dtype, benign=False)  # the second chunk falls back
    aligned = batch_prep.aligned_zeros(data.shape)
    aligned[...] = data
    # the same bytes 16 bytes past a 64-byte boundary: copied before the kernels read them
    unaligned = batch_prep.aligned_zeros((1, data.size + 16))[0, 16:].reshape(data.shape)
    unaligned[...] = data
    assert batch._aligned(aligned) and not batch._aligned(unaligned)
    monkeypatch.setattr(batch, "_BATCH_CHUNK_BYTES", 1)          # chunks of 32 cases
    assert batch._chunk(b, _R, batch._BATCH_CHUNK_BYTES) == 32
    for per_case in (False, True):
        kw = _batch_kwargs(api, option, tensors, per_case, rng, b, lanes)
        got = {}
        for key, pipe, ahead, ubs in (("aligned", True, 4, aligned),
                                      ("aligned, two ahead", True, 2, aligned),
                                      ("aligned, none ahead", True, 0, aligned),
                                      ("unaligned", True, 4, unaligned),
                                      ("serial", False, 4, aligned)):
            monkeypatch.setattr(batch, "PIPELINE", pipe)
            monkeypatch.setattr(batch, "AHEAD_CHUNKS", ahead)
            with batch.undefined_rows() as marked:
                got[key] = ar.run_batch(api, ubs, chip=chip, dtype=dtype,
                                        return_undefined=True, **kw)
            # the rows and columns each chunk marked, at the chunk's rows
            assert spans_recorded(marked[0]) == undefined_spans(got[key][2])
            assert got[key][0] is not ubs
            np.testing.assert_array_equal(ubs, data)
        with engine.use_path("general"):
            want = ar.run_batch(api, data, chip=chip, dtype=dtype, return_undefined=True, **kw)
        for key in got:
            for a, w in zip(got[key], want):
                np.testing.assert_array_equal(a, w, err_msg=f"{key} {per_case}")


@pytest.mark.parametrize("chunks", [True, False])
def test_fill_rows_feeds_each_chunk_before_its_kernel(monkeypatch, chunks):
    """run_batch under overwrite_input() and fill_rows(): the callback writes each chunk's
    rows (the last padded chunk's real rows only) before that chunk's kernel reads them --
    chunk by chunk (FILL_CHUNKS) or all at once --, and the result equals run_batch on the
    filled array; an input not run in place (unaligned) is filled whole, once, first."""
    from ascend_ref import batch, batch_prep

    api, chip, dtype, option = BATCH_CONFIGS[0]
    rng = np.random.default_rng(57)
    b, lanes = 70, 256 // np.dtype(dtype).itemsize
    tensors, width = _batch_layout(api, dtype, option)
    data = _batch_data(rng, b, width, dtype, benign=True)
    data[33:40] = _batch_data(rng, 7, width, dtype, benign=False)  # the second chunk falls back
    kw = _batch_kwargs(api, option, tensors, True, rng, b, lanes)
    with engine.use_path("general"):
        want = ar.run_batch(api, data, chip=chip, dtype=dtype, return_undefined=True, **kw)
    monkeypatch.setattr(batch, "_BATCH_CHUNK_BYTES", 1)          # chunks of 32 cases
    monkeypatch.setattr(batch, "FILL_CHUNKS", chunks)
    for aligned in (True, False):
        buf = batch_prep.aligned_zeros((1, data.size + 64))[0]
        ubs = (buf[:data.size] if aligned else buf[16:16 + data.size]).reshape(data.shape)
        ubs[...] = 0xFF                                 # garbage until filled
        calls = []

        def fill(start, stop):
            calls.append((start, stop))
            ubs[start:stop] = data[start:stop]

        with batch.overwrite_input(), batch.fill_rows(fill):
            got = ar.run_batch(api, ubs, chip=chip, dtype=dtype, return_undefined=True, **kw)
        for a, w in zip(got, want):
            np.testing.assert_array_equal(a, w, err_msg=f"aligned={aligned}")
        assert (got[0] is ubs) == aligned
        assert calls == ([(0, 32), (32, 64), (64, 70)] if aligned and chunks else [(0, 70)])


# ------------------------------------------------ sums: short lane trees (engineer `sums`) -----
#
# numerics.lane_tree: the fast tree of ReduceDataBlock SUM. Half: the first level adds the two
# halves of each uint32 pair word (native float16 adds); float: no masking at all when every
# lane is active (a lax.cond on all(active); a select under a batched mask). Both must give
# the exact tree's bits wherever the guard passes, and the guarded paths must give them
# everywhere.

def _lane_rows(rng, dtype, n):
    """Adversarial rows (specials, NaN payloads of both signs, ±0, subnormals), normal rows
    at several scales (half: sums that overflow / saturate), float rows cancelling next to
    the subnormal range."""
    rows = [adversarial_bits(rng, (24, n), dtype)]
    scale = [1e-6, 1.0, 500.0, 3e4] if dtype == "float16" else [1e-36, 1e-30, 1.0, 1e37]
    normal = rng.standard_normal((24, n)) * rng.choice(scale, (24, 1))
    with np.errstate(over="ignore"):     # half rows at 3e4 may round to inf: wanted
        rows.append(normal.astype(dtype).view(f"uint{8 * np.dtype(dtype).itemsize}"))
    if dtype == "float32":
        rows.append(_tiny_cancellations(rng, 4)[:, :n] if n <= 64 else
                    np.tile(_tiny_cancellations(rng, 4), (1, n // 64)))
    else:
        big = np.full((2, n), 0x7A00, np.uint16)                  # 49152: pairs overflow
        big[1, ::2] = 0xFA00                                      # ±49152: cancel to +0
        rows.append(big)
    return np.concatenate(rows)


def _lane_masks(rng, rows, n):
    """All active, random, none active, only the last lane, a lone first lane."""
    act = rng.random((rows, n)) < 0.6
    act[:3] = True
    act[3] = False
    act[4] = False
    act[4, n - 1] = True
    act[5] = False
    act[5, 0] = True
    return act


def _tree_paths(tree, dtype, prof, saturate, leave=False):
    """A jitted ``run(bits, act) -> (exact, guarded, batch, ok, new, old)`` for a fast tree
    ``tree(summation, bits, act)``: the general path's exact tree; the guarded "fast" and
    "batch" paths of ``tree`` (and the batch guard ``ok``); ``tree`` and the plain
    ``tree_sum`` on the fast arithmetic, as its values or (``leave``) as bits."""
    fast = numerics.Summation(dtype, prof, saturate, True)
    out = fast.leave if leave else (lambda v: v)

    @jax.jit
    def run(bits, act):
        exact, _ = numerics.guarded_sums(
            lambda s: (numerics.tree_sum(s.enter(bits, act), s.add),), dtype, prof,
            saturate, "general")
        guarded, _ = numerics.guarded_sums(lambda s: (tree(s, bits, act),), dtype, prof,
                                           saturate, "fast")
        batch, ok = numerics.guarded_sums(lambda s: (tree(s, bits, act),), dtype, prof,
                                          saturate, "batch")
        new = tree(fast, bits, act)
        old = numerics.tree_sum(fast.enter(bits, act), fast.add)
        return exact[0], guarded[0], batch[0], ok, out(new), out(old)

    return run


@pytest.mark.parametrize("dtype,saturate", [("float16", False), ("float16", True),
                                            ("float32", False)])
def test_lane_tree_equals_the_exact_tree(dtype, saturate):
    rng = np.random.default_rng(23)
    prof = _profile()
    for n in ((2, 16) if dtype == "float16" else (2, 8)):
        bits = jnp.asarray(_lane_rows(rng, dtype, n))
        act = _lane_masks(rng, bits.shape[0], n)
        full = np.ones_like(act)
        fast = numerics.Summation(dtype, prof, saturate, True)
        run = _tree_paths(numerics.lane_tree, dtype, prof, saturate)

        for mask in (act, full):                     # partial; all active (the cond)
            exact, guarded, batch, ok, new, old = map(np.asarray, run(bits, jnp.asarray(mask)))
            finite = np.isfinite(old)
            np.testing.assert_array_equal(guarded, exact, err_msg=f"{n}")
            np.testing.assert_array_equal(np.isfinite(new), finite, err_msg=f"{n}")
            np.testing.assert_array_equal(new[finite], old[finite], err_msg=f"{n}")
            np.testing.assert_array_equal(batch[finite], exact[finite], err_msg=f"{n}")
            assert bool(ok) == bool(finite.all()) and not finite.all() and finite.any()
            if dtype == "float32":                   # same float32 ops: every bit the same
                # but a NaN's payload: which operand's payload an add keeps depends on how
                # XLA orders and vectorises it (seen on an Intel Xeon host); a NaN never
                # leaves the fast tree (the guard sends its case to the exact adder)
                num = ~np.isnan(old)
                np.testing.assert_array_equal(np.isnan(new), ~num)
                np.testing.assert_array_equal(new[num].view(np.uint32), old[num].view(np.uint32))
        # under vmap: a batched mask (the cond becomes a select) and an unbatched one
        one = jax.jit(jax.vmap(lambda b, a: numerics.lane_tree(fast, b, a), in_axes=(0, 0)))
        shared = jax.jit(jax.vmap(lambda b, a: numerics.lane_tree(fast, b, a), in_axes=(0, None)))
        for got, mask in ((one(bits, jnp.asarray(act)), act),
                          (shared(bits, jnp.asarray(full[0])), full),
                          (shared(bits, jnp.asarray(act[6])), np.broadcast_to(act[6], act.shape))):
            want = np.asarray(jax.jit(lambda b, a: numerics.tree_sum(fast.enter(b, a), fast.add))(
                bits, jnp.asarray(mask)))
            got = np.asarray(got)
            finite = np.isfinite(want)
            np.testing.assert_array_equal(np.isfinite(got), finite)
            np.testing.assert_array_equal(got[finite], want[finite])


@pytest.mark.parametrize("saturate", [False, True])
def test_lane_tree_takes_half_lanes_as_pair_words(saturate):
    """``lane_tree(..., pairs=True)`` over half lanes two to a uint32 word (the rows a
    ReduceDataBlock SUM half kernel reads, ``Spec.pair_src``) gives the bits of the tree
    over the lanes themselves: on the fast arithmetic (masked, full, every lane known
    active) and on the exact adder (which unpacks the words), under a batched mask too."""
    rng = np.random.default_rng(29)
    prof = _profile()
    lanes = _lane_rows(rng, "float16", 16)
    words = jnp.asarray(np.ascontiguousarray(lanes).view(np.uint32))
    bits = jnp.asarray(lanes)
    act = _lane_masks(rng, bits.shape[0], 16)
    for fast, all_active in ((True, False), (True, True), (False, False)):
        s = numerics.Summation("float16", prof, saturate, fast, all_active)
        for mask in ((np.ones_like(act),) if all_active else (act, np.ones_like(act), None)):
            m = None if mask is None else jnp.asarray(mask)
            want = jax.jit(lambda b, a: s.leave(numerics.lane_tree(s, b, a)))(bits, m)
            got = jax.jit(lambda w, a: s.leave(numerics.lane_tree(s, w, a, pairs=True)))(
                words, m)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want),
                                          err_msg=f"fast={fast} all_active={all_active}")
    s = numerics.Summation("float16", prof, saturate, True)
    one = jax.jit(jax.vmap(lambda w, a: s.leave(numerics.lane_tree(s, w, a, pairs=True))))
    ref = jax.jit(jax.vmap(lambda b, a: s.leave(numerics.lane_tree(s, b, a))))
    np.testing.assert_array_equal(np.asarray(one(words[:, None], jnp.asarray(act)[:, None])),
                                  np.asarray(ref(bits[:, None], jnp.asarray(act)[:, None])))


@pytest.mark.parametrize("api", ["reduce_data_block", "vcgadd"])
def test_block_sums_from_pair_words_equal_the_general_path(monkeypatch, api):
    """ReduceDataBlock SUM / TIK vcgadd half read dense sources as uint32 words of two lanes
    (``Spec.pair_src``): with every kind of shared stride (back to back, zero, overlapping,
    gapped), pinned (64 cases, full mask) and unpinned (partial and bit-mode masks),
    adversarial and benign data, the same bits and codes as the general path; the kernels
    did read words (spied), and ReduceDataBlock MAX did not."""
    from ascend_ref import batch

    seen = []
    dense = engine._dense_src

    def spy(spec, ub, p):
        seen.append((spec.option, spec.pair_src, ub.dtype.itemsize))
        return dense(spec, ub, p)

    monkeypatch.setattr(engine, "_dense_src", spy)
    rng = np.random.default_rng(37)
    dtype, lanes, r = "float16", 128, _R
    opt = dict(reduce_type="SUM") if api == "reduce_data_block" else {}
    for rep, blk in ((8, 1), (0, 0), (3, 1), (20, 2), (1, 0)):
        span = engine.static_span(r, rep, blk)
        src = 64
        tensors = dict(src=(src, span // 2), dst=(src + span + 32, 8 * r))
        width = src + span + 32 + 16 * r + 64
        engine.release()                     # every kernel below traced (and spied) afresh
        seen.clear()
        for b, m in ((batch.BATCH_SIZES[-1], dict(mask=lanes)), (9, dict(mask=lanes - 37)),
                     (9, dict(mask=np.tile(np.array([0xF0F0FFFF, 0, 0x1, 0x80000000],
                                                    np.uint32), (9, 1)), mask_mode="bits"))):
            for benign in (False, True):
                ubs = _batch_data(rng, b, width, dtype, benign)
                kw = dict(tensors, max_repeat=r, repeat=r, src_rep_stride=rep,
                          src_blk_stride=blk, dst_rep_stride=1, **opt, **m)
                out, status = ar.run_batch(api, ubs, chip="atlas_a2", dtype=dtype, **kw)
                with engine.use_path("general"):
                    want, wstatus = ar.run_batch(api, ubs, chip="atlas_a2", dtype=dtype, **kw)
                np.testing.assert_array_equal(status, wstatus, err_msg=f"{rep} {blk} {m}")
                np.testing.assert_array_equal(out, want, err_msg=f"{rep} {blk} {m}")
                assert (status == 0).all()
        # the kernels (pinned, unpinned count, bit mode; the batch fallback's exact adder)
        # took words (the general path gathers)
        assert len(seen) >= 3 and all(pair and unit == 4 for _, pair, unit in seen), seen
    if api == "reduce_data_block":
        seen.clear()
        ar.run_batch(api, ubs, chip="atlas_a2", dtype=dtype, **dict(kw, reduce_type="MAX"))
        assert seen and not any(pair or unit == 4 for _, pair, unit in seen), seen


RDB_SUMS = [("atlas_a2", "float16"), ("atlas_a2", "float32"), ("ascend950", "float16"),
            ("ascend950", "float32")]


@pytest.mark.parametrize("chip,dtype", [pytest.param(*c, marks=[] if c in RDB_SUMS[1:3] else
                                                     [pytest.mark.slow]) for c in RDB_SUMS])
def test_run_batch_block_sums_equal_the_general_path_and_the_oracle(chip, dtype):
    """ReduceDataBlock SUM through run_batch (static strides, shared or per-case parameters)
    on adversarial data, saturating and overflowing sums, with full masks (the unmasked
    tree), partial masks whose blocks have no active lane (keep / fill rules), bit-mode masks
    with empty blocks in the middle, and per-case masks and repeats: the general path's bits
    and status, and the oracle's bytes on a few rows."""
    from ascend_ref.case import Case

    rng = np.random.default_rng(RDB_SUMS.index((chip, dtype)) + 31)
    s = np.dtype(dtype).itemsize
    b, lanes, epb = 10, 256 // s, 32 // s
    tensors, width = _batch_layout("reduce_data_block", dtype, "SUM")
    words = np.zeros((b, 4), np.uint32)               # blocks 1, 4 and 7 have no lane
    live = np.zeros(lanes, bool)
    for blk in (0, 2, 3, 5, 6):
        live[blk * epb:(blk + 1) * epb] = rng.random(epb) < 0.7
        live[blk * epb] = True
    for k in range(lanes):
        if live[k]:
            words[:, (k // 64) * 2 + (k % 64) // 32] |= np.uint32(1 << (k % 32))
    masks = [dict(mask=lanes), dict(mask=epb + 3), dict(mask=words, mask_mode="bits"),
             dict(mask=rng.integers(1, lanes + 1, b))]
    runs = [(sat, m, benign) for sat in ((False, True) if dtype == "float16" else (False,))
            for m in masks for benign in (False, True)]
    for sat, m, benign in runs:
        # benign batches stay on the fast trees (guard holds); adversarial ones fail it
        ubs = _batch_data(rng, b, width, dtype, benign=benign)
        x = ubs.view(f"uint{8 * s}")
        if not benign:
            big = np.array(60000 if s == 2 else 3e38, dtype).view(x.dtype)
            x[7, :4 * lanes] = big                   # every block of 4 repeats overflows
            x[8] = _batch_data(rng, 1, width, dtype, benign=True).view(x.dtype)[0]
        kw = dict(tensors, max_repeat=_R, repeat=_R, src_rep_stride=8, src_blk_stride=1,
                  dst_rep_stride=1, reduce_type="SUM", saturate=sat, **m)
        if "mask_mode" not in m and np.ndim(m["mask"]):
            kw["repeat"] = rng.integers(0, _R + 1, b)   # per-case repeats too
        out, status = ar.run_batch("reduce_data_block", ubs, chip=chip, dtype=dtype, **kw)
        with engine.use_path("general"):
            want, wstatus = ar.run_batch("reduce_data_block", ubs, chip=chip, dtype=dtype,
                                         **kw)
        np.testing.assert_array_equal(status, wstatus, err_msg=f"{m} {sat}")
        np.testing.assert_array_equal(out, want, err_msg=f"{m} {sat}")
        assert (status == 0).all()
        if np.ndim(m["mask"]) == 0:
            for k in (0, 7, 8):
                params = {"repeat": _R, "dst_rep_stride": 1, "src_blk_stride": 1,
                          "src_rep_stride": 8}
                o = run_oracle(Case("reduce_data_block", chip, dtype, "SUM", m["mask"],
                                    params, dict(tensors), ubs[k].copy(), sat))
                assert o.code is None
                keep = ~np.asarray(o.undefined, bool)
                np.testing.assert_array_equal(out[k][keep], np.asarray(o.ub)[keep])


# ------------------------------------------------------ min/max trees (minmax) ---------------
#
# The 16-bit and float32 trees fold the lanes in blocks of ``numerics._FOLD_WIDTH`` before a
# halving tree: a lane's block travels in the packed key (its first lane), its place in the
# block is added after the fold; float32 folds rows of at most 8 lanes in two blocks. These
# check the bits against the general path where that bookkeeping could go wrong: every row
# width up to two blocks and a ragged one, the first lane among equal keys (and the first
# NaN) sitting in a later block at a smaller place, and in a block of its own.

def _first_lane_rows(rng, n, dtype, kind, w=numerics._FOLD_WIDTH):
    """Rows whose extreme (or first NaN) appears twice: once at a lane in block 0, place
    p1 and once at block 1, place p0 < p1 (and the reverse), plus NaN rows of both signs
    (blocks of ``w`` lanes)."""
    x = adversarial_bits(rng, (16, n), dtype)
    ut = x.dtype.type
    if dtype.startswith("float"):         # -inf / +inf: the best non-NaN value
        best = (0xFC00 if kind == "min" else 0x7C00) if dtype == "float16" else \
            (0xFF800000 if kind == "min" else 0x7F800000)
    elif dtype.startswith("int"):         # the type's least / greatest
        best = (1 << (8 * x.itemsize - 1)) - (kind == "max")
    else:
        best = 0 if kind == "min" else (1 << (8 * x.itemsize)) - 1
    nan = {"float16": (0x7D01, 0xFE37), "float32": (0x7F900001, 0xFFC0ABCD)}.get(dtype)
    for row, (a, b) in enumerate([(3, w + 1), (w + 1, 3), (0, w), (w - 1, 2 * w - 1)]):
        if max(a, b) < n:
            x[6 + row, a] = x[6 + row, b] = ut(best)
            if nan:
                x[10 + row, b], x[10 + row, a] = ut(nan[0]), ut(nan[1])
    return x


@pytest.mark.parametrize("blocked", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int16", "uint16"])
def test_minmax_tree_blocks_first_lane_equals_general_path(dtype, blocked):
    rng = np.random.default_rng(23)
    w = numerics._BLOCK_WIDTH if blocked else numerics._FOLD_WIDTH

    def one_kind(bits, active, kind):
        # under vmap: the mask batched (run_cases) and shared by the batch (run_batch)
        shared = [(numerics.select_extreme(bits, jnp.broadcast_to(active[k], bits.shape), kind,
                                           dtype),
                   jax.vmap(lambda x, a: numerics.select_extreme_tree(x, a, kind, dtype, blocked),
                            in_axes=(0, None))(bits, active[k])) for k in (7, 14)]
        return [(numerics.select_extreme(bits, active, kind, dtype),
                 numerics.select_extreme_tree(bits, active, kind, dtype, blocked))] + shared

    run = jax.jit(lambda data: {kind: one_kind(*data[kind], kind) for kind in data})

    for n in (3, 4, 8, 9, 16, 17, 33):                  # one compile a width
        data = {}
        for kind in ("min", "max"):
            bits = _first_lane_rows(rng, n, dtype, kind, w)
            active = rng.random(bits.shape) < 0.7
            active[6:14] = True                         # the planted rows: every lane
            active[14] = np.arange(n) < max(n // 2, 1)  # a count mask
            active[15] = False                          # nothing active
            active[0, :] = np.arange(n) == n - 1        # only the last lane
            data[kind] = (jnp.asarray(bits), jnp.asarray(active))
        for kind, results in run(data).items():
            for what, (want, got) in zip(("", " shared 7", " shared 14"), results):
                for a, b in zip(want, got):
                    np.testing.assert_array_equal(np.asarray(a), np.asarray(b),
                                                  err_msg=f"{dtype} {kind} n={n}{what}")


@pytest.mark.parametrize("blocked", [False, True])
def test_half_value_only_tree_equals_general_path(blocked):
    """:func:`numerics.half_extreme_value` (ReduceDataBlock MIN / MAX half: no index) gives
    select_extreme's value and flag: adversarial rows, rows whose best value or first NaN
    sits in two blocks, every float16 bit pattern (shuffled into rows of 16, and each
    against -0, +0 and a NaN), masks per row, shared by a vmapped batch, and none."""
    rng = np.random.default_rng(31)

    def check(bits, active, what):
        for kind in ("min", "max"):
            want = numerics.select_extreme(jnp.asarray(bits), jnp.asarray(active), kind,
                                           "float16")
            got = jax.jit(numerics.half_extreme_value, static_argnums=(2, 3))(
                jnp.asarray(bits), jnp.asarray(active), kind, blocked)
            np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]),
                                          err_msg=f"{kind} {what}")
            np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[2]),
                                          err_msg=f"{kind} {what}")
        shared = jax.jit(jax.vmap(lambda x, a: numerics.half_extreme_value(x, a, "min", blocked),
                                  in_axes=(0, None)))(jnp.asarray(bits), jnp.asarray(active[7]))
        want = numerics.select_extreme(jnp.asarray(bits),
                                       jnp.broadcast_to(jnp.asarray(active[7]), bits.shape),
                                       "min", "float16")
        np.testing.assert_array_equal(np.asarray(shared[0]), np.asarray(want[0]), err_msg=what)

    for n in (1, 3, 8, 16, 17, 128, 255):
        bits = np.concatenate([adversarial_bits(rng, (24, n), "float16"),
                               _first_lane_rows(rng, n, "float16", "min", 8),
                               _first_lane_rows(rng, n, "float16", "max", 8)])
        active = rng.random(bits.shape) < 0.6
        active[5] = False
        active[6:14] = active[22:30] = active[38:46] = True     # the planted rows
        active[0] = np.arange(n) == n - 1
        check(bits, active, f"n={n}")
    every = rng.permutation(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16))
    rows = every.reshape(-1, 16)
    check(rows, np.ones(rows.shape, bool), "every pattern")
    for other in (0x8000, 0x0000, 0x7E01):
        pairs = np.stack([every, np.full_like(every, other)], -1)
        check(pairs, rng.random(pairs.shape) < 0.9, f"every pattern against {other:#06x}")


@pytest.mark.parametrize("blocked", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_minmax_tree_block_shapes_of_reduce_data_block_equal_general_path(dtype, blocked):
    """ReduceDataBlock's shape: ``(repeats, 8 blocks, lanes)`` with a mask shared by the
    blocks (16 half lanes: one fold of two blocks; 8 float lanes: two blocks of four)."""
    rng = np.random.default_rng(29)
    lanes = 32 // np.dtype(dtype).itemsize
    bits = adversarial_bits(rng, (12, 8 * lanes), dtype).reshape(12, 8, lanes)
    bits[7] = bits[1]                                   # all-NaN repeat, payloads both signs
    active = np.broadcast_to(rng.random((12, 1, lanes)) < 0.6, bits.shape).copy()
    active[3] = False
    for kind in ("min", "max"):
        want = numerics.select_extreme(jnp.asarray(bits), jnp.asarray(active), kind, dtype)
        got = jax.jit(numerics.select_extreme_tree, static_argnums=(2, 3, 4))(
            jnp.asarray(bits), jnp.asarray(active), kind, dtype, blocked)
        for a, b in zip(want, got):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=kind)


# ------------------------------------------------ sums: long row trees (engineer `sums`) -----
#
# numerics.row_tree: the long rows of WholeReduceSum and vec_reduce_add's stage 1, on native
# float16 adds for half (no f32 -> f16 -> f32 round trip a compiler could remove). The same
# bits as the exact tree wherever the guard passes (signed zeros included), and the guarded
# paths the exact tree's everywhere.

@pytest.mark.parametrize("dtype,saturate", [("float16", False), ("float16", True),
                                            ("float32", False)])
def test_row_tree_equals_the_tree(dtype, saturate):
    rng = np.random.default_rng(47)
    prof = _profile()
    ut = np.uint16 if dtype == "float16" else np.uint32
    sign = 0x8000 if dtype == "float16" else 0x80000000
    for n in ((4, 128) if dtype == "float16" else (4, 64)):
        rows = _lane_rows(rng, dtype, n)
        bits = jnp.asarray(np.concatenate([rows, np.full((1, n), sign, ut)]))      # -0s
        for act in (_lane_masks(rng, bits.shape[0], n), np.ones(bits.shape, bool)):
            run = _tree_paths(numerics.row_tree, dtype, prof, saturate, leave=True)

            exact, guarded, batch, ok, new, old = map(np.asarray, run(bits, jnp.asarray(act)))
            expo = 0x7C00 if dtype == "float16" else 0x7F800000
            finite = (old & expo) != expo
            np.testing.assert_array_equal(guarded, exact, err_msg=f"{n}")
            np.testing.assert_array_equal((new & expo) != expo, finite, err_msg=f"{n}")
            np.testing.assert_array_equal(new[finite], old[finite], err_msg=f"{n}")
            np.testing.assert_array_equal(batch[finite], exact[finite], err_msg=f"{n}")
            assert bool(ok) == bool(finite.all()) and finite.any()
            if act.all():                  # the -0 row sums to -0, rows of +0 and -0 to +0
                assert new[-1] == sign and np.any(finite & (new == 0))
        # vmapped: a batched mask and one mask shared by the batch
        fast = numerics.Summation(dtype, prof, saturate, True)
        act = _lane_masks(rng, bits.shape[0], n)
        one = jax.jit(jax.vmap(lambda b, a: numerics.row_tree(fast, b, a), in_axes=(0, 0)))
        shared = jax.jit(jax.vmap(lambda b, a: numerics.row_tree(fast, b, a), in_axes=(0, None)))
        for got, mask in ((one(bits, jnp.asarray(act)), act),
                          (shared(bits, jnp.asarray(act[6])), np.broadcast_to(act[6], act.shape))):
            want = np.asarray(jax.jit(lambda b, a: fast.leave(numerics.tree_sum(
                fast.enter(b, a), fast.add)))(bits, jnp.asarray(mask)))
            got = np.asarray(jax.jit(fast.leave)(got))
            finite = (want & expo) != expo
            np.testing.assert_array_equal((got & expo) != expo, finite)
            np.testing.assert_array_equal(got[finite], want[finite])
    # the exact summation keeps the plain tree
    exact = numerics.Summation(dtype, prof, saturate, False)
    x = jnp.asarray(_lane_rows(rng, dtype, 8))
    np.testing.assert_array_equal(np.asarray(numerics.row_tree(exact, x)),
                                  np.asarray(numerics.tree_sum(exact.enter(x), exact.add)))


def test_fast_half_tree_rounds_every_add():
    """Each add of the fast half tree is rounded to half, on every backend that runs it: a
    row 1, 2**-11, 2**-11, 0, ... sums to 1 (1 + 2**-11 is a tie, rounded to even, at the
    first and the second level), where one rounding of the float32 sum (excess precision:
    what XLA's SimplifyFPConversions would leave of f32 -> f16 -> f32 round trips) gives
    1 + 2**-10. The exact adder of the general path agrees."""
    prof = _profile()
    row = np.zeros((2, 128), np.float16)
    row[:, 0], row[:, 1], row[:, 2] = 1.0, 2.0 ** -11, 2.0 ** -11
    row[1] = row[1, ::-1]                        # the same three values in the last lanes
    bits = jnp.asarray(row.view(np.uint16))
    assert np.float16(row[0].astype(np.float32).sum()) == np.float16(1 + 2.0 ** -10)
    fast = numerics.Summation("float16", prof, False, True)
    exact = numerics.Summation("float16", prof, False, False)
    got = np.asarray(jax.jit(lambda b: fast.leave(numerics.row_tree(fast, b)))(bits))
    want = np.asarray(jax.jit(lambda b: numerics.row_tree(exact, b))(bits))
    np.testing.assert_array_equal(got, [0x3C00, 0x3C00])
    np.testing.assert_array_equal(want, got)


@pytest.mark.parametrize("dtype", ["float16",       # the stage-1 row tree (float: -m slow)
                                   pytest.param("float32", marks=pytest.mark.slow)])
def test_run_batch_vec_reduce_add_tall_tables_equal_the_general_path_and_the_oracle(dtype):
    """vec_reduce_add through run_batch with R up to 130 (the second-level tree over more
    than L stage-1 sums) on adversarial and benign data, shared and per-case repeats and
    masks, against the general path and, on a few rows, the oracle."""
    from ascend_ref import registry
    from ascend_ref.case import Case

    rng = np.random.default_rng(43)
    s = np.dtype(dtype).itemsize
    b, lanes, r = 8, 256 // s, 130
    src = r * 256
    need = int(registry.lookup("vec_reduce_add").work_need(r, None, dtype))
    work = -(-need * s // 32) * 32
    tensors = dict(src=(0, src // s), dst=(src, 32 // s), work_tensor=(src + 32, work // s))
    width = src + 32 + work
    for per_case in (False, True):
        for benign in (False, True):
            ubs = _batch_data(rng, b, width, dtype, benign)
            if not benign:
                ubs.view(f"uint{8 * s}")[7] = ubs.view(f"uint{8 * s}")[2]   # all ±0
            kw = dict(tensors, max_repeat=r, src_rep_stride=8, repeat=r, mask=lanes)
            if per_case:
                kw.update(repeat=rng.integers(1, r + 1, b), mask=rng.integers(1, lanes + 1, b))
                kw["repeat"][:3] = [r, 129, 128]
            out, status = ar.run_batch("vec_reduce_add", ubs, chip="atlas_training",
                                       dtype=dtype, **kw)
            with engine.use_path("general"):
                want, wstatus = ar.run_batch("vec_reduce_add", ubs, chip="atlas_training",
                                             dtype=dtype, **kw)
            np.testing.assert_array_equal(status, wstatus, err_msg=f"{per_case} {benign}")
            np.testing.assert_array_equal(out, want, err_msg=f"{per_case} {benign}")
            assert (status == 0).all()
            if per_case:
                continue
            for k in (0, 2, 7):
                o = run_oracle(Case("vec_reduce_add", "atlas_training", dtype, None, lanes,
                                    {"repeat": r, "src_rep_stride": 8}, dict(tensors),
                                    ubs[k].copy()))
                assert o.code is None
                keep = ~np.asarray(o.undefined, bool)
                np.testing.assert_array_equal(out[k][keep], np.asarray(o.ub)[keep])


def test_run_batch_takes_the_blocked_trees_only_for_shared_lanes(monkeypatch):
    """run_batch with a mask and repeat every case shares traces the blocked min / max trees
    (``Spec.shared_lanes``), with per-case masks the plain ones, run_cases the plain ones;
    the bits are the general path's in every case (adversarial data)."""
    from ascend_ref import batch

    calls = []
    real = numerics._fold_blocks
    monkeypatch.setattr(numerics, "_fold_blocks", lambda *a, **k: calls.append(1) or real(*a, **k))
    rng = np.random.default_rng(47)
    api, chip, dtype, option = "whole_reduce_max", "atlas_a2", "float16", "ORDER_INDEX_VALUE"
    b, lanes = 9, 128
    tensors, width = _batch_layout(api, dtype, option)
    ubs = _batch_data(rng, b, width, dtype, benign=False)
    base = dict(tensors, max_repeat=_R, repeat=_R, src_rep_stride=8, src_blk_stride=1,
                dst_rep_stride=1, order=option)
    for mask, blocked in ((lanes, True), (rng.integers(1, lanes + 1, b), False)):
        batch._array_fn.cache_clear()
        calls.clear()
        out, status = ar.run_batch(api, ubs, chip=chip, dtype=dtype, mask=mask, **base)
        assert bool(calls) == blocked
        with engine.use_path("general"):
            want, wstatus = ar.run_batch(api, ubs, chip=chip, dtype=dtype, mask=mask, **base)
        np.testing.assert_array_equal(status, wstatus)
        np.testing.assert_array_equal(out, want)


# ------------------------------------------ result buffers: recycled, or the input itself -----

def test_run_batch_recycles_a_result_only_once_the_caller_dropped_it(monkeypatch):
    """batch_prep.result_empty hands a result's memory out again only when nothing refers to
    it any more: a held result, a held row view of one, or a JAX array made from one never
    changes; a dropped one's memory is reused. Every result equals the general path's."""
    from ascend_ref import batch_prep

    if not batch_prep._REFCOUNTS:
        pytest.skip("sys.getrefcount does not count holders here: recycling is off")
    monkeypatch.setattr(batch_prep, "RECYCLE", True)
    monkeypatch.setattr(batch_prep, "_RECYCLE_MIN", 0)        # small test batches recycle too
    monkeypatch.setattr(batch_prep, "_RECYCLE_KEEP", 16)      # none leaves the list here
    rng = np.random.default_rng(71)
    api, chip, dtype, option = BATCH_CONFIGS[0]
    b, lanes = 40, 256 // np.dtype(dtype).itemsize
    tensors, width = _batch_layout(api, dtype, option)
    kw = _batch_kwargs(api, option, tensors, True, rng, b, lanes)
    inputs = [_batch_data(rng, b, width, dtype, benign=k % 2 == 0) for k in range(6)]
    with engine.use_path("general"):
        want = [ar.run_batch(api, u, chip=chip, dtype=dtype, **kw)[0] for u in inputs]

    def run(k):
        out, status = ar.run_batch(api, inputs[k], chip=chip, dtype=dtype, **kw)
        np.testing.assert_array_equal(out, want[k], err_msg=str(k))
        return out

    held = run(0)                          # held whole
    row = run(1)[7]                        # only a row view of the result is held
    as_jax = jnp.asarray(run(2))           # a JAX array made from it (no copy on CPU)
    addr = run(3).ctypes.data              # dropped at once
    # the dropped result's memory comes back once JAX releases the kernel's input views of
    # it (the rows it read in place): usually by the second call after, under load the third
    # (seen in 4 of 60 loaded runs; the list kept only 4 buffers then and this read 2 calls);
    # up to 12 calls, each after a collection (the list keeps 16, so it cannot have left)
    reused: list = []
    while addr not in reused and len(reused) < 12:
        gc.collect()
        reused.append(run(4 + len(reused) % 2).ctypes.data)
    assert addr in reused
    np.testing.assert_array_equal(held, want[0])
    np.testing.assert_array_equal(row, want[1][7])
    np.testing.assert_array_equal(np.asarray(as_jax), want[2])
    for other in (held, row.base if row.base is not None else row):   # row: its buffer
        assert other.ctypes.data not in reused


@pytest.mark.parametrize("api,chip,dtype,option", [BATCH_CONFIGS[0], BATCH_CONFIGS[-2]])
def test_run_batch_overwrite_input_writes_the_result_over_an_aligned_input(monkeypatch, api,
                                                                           chip, dtype, option):
    """Under batch.overwrite_input() the result is the input array itself when it is
    writable, contiguous and 64-byte aligned (four chunks, the last padded, one falling
    back, per-case parameters), with the bits of an ordinary call; any other input (a
    misaligned or a read-only one) is copied and left unchanged, as always."""
    from ascend_ref import batch, batch_prep

    rng = np.random.default_rng(59)
    b, lanes = 100, 256 // np.dtype(dtype).itemsize
    tensors, width = _batch_layout(api, dtype, option)
    data = _batch_data(rng, b, width, dtype, benign=True)
    data[40:47] = _batch_data(rng, 7, width, dtype, benign=False)
    kw = _batch_kwargs(api, option, tensors, True, rng, b, lanes)
    monkeypatch.setattr(batch, "_BATCH_CHUNK_BYTES", 1)          # chunks of 32 cases
    want = ar.run_batch(api, data, chip=chip, dtype=dtype, return_undefined=True, **kw)
    aligned = batch_prep.aligned_zeros(data.shape)
    aligned[...] = data
    with batch.overwrite_input():
        got = ar.run_batch(api, aligned, chip=chip, dtype=dtype, return_undefined=True, **kw)
    assert got[0] is aligned
    for a, w in zip(got, want):
        np.testing.assert_array_equal(a, w)
    shifted = np.zeros(data.size + 1, np.uint8)[1:].reshape(data.shape)   # not aligned
    shifted[...] = data
    frozen = aligned.copy()
    frozen[...] = data
    frozen.flags.writeable = False
    for other in (shifted, frozen):
        with batch.overwrite_input():
            got = ar.run_batch(api, other, chip=chip, dtype=dtype, return_undefined=True, **kw)
        assert got[0] is not other and not np.shares_memory(got[0], other)
        np.testing.assert_array_equal(other, data)
        for a, w in zip(got, want):
            np.testing.assert_array_equal(a, w)
    got = ar.run_batch(api, aligned, chip=chip, dtype=dtype, **kw)     # outside: a copy
    assert not np.shares_memory(got[0], aligned)


def test_run_cases_outcomes_keep_their_bytes_while_later_calls_recycle(monkeypatch):
    """run_cases' outcome stack comes from batch_prep.result_empty: an outcome still held
    keeps its bytes through later calls on other data, and each call's outcomes equal those
    of a call with recycling off."""
    from ascend_ref import batch_prep

    monkeypatch.setattr(batch_prep, "_RECYCLE_MIN", 0)
    rng = np.random.default_rng(73)
    api, chip, dtype, option = BATCH_CONFIGS[3]
    b, lanes = 24, 256 // np.dtype(dtype).itemsize
    tensors, width = _batch_layout(api, dtype, option)
    from ascend_ref.case import Case

    params = dict(repeat=_R, dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8)
    runs = []
    for k in range(4):
        ubs = _batch_data(rng, b, width, dtype, benign=k % 2 == 0)
        cases = [Case(api, chip, dtype, option, lanes, params, dict(tensors), ubs[j].copy())
                 for j in range(b)]
        monkeypatch.setattr(batch_prep, "RECYCLE", False)
        want = [o.ub.copy() for o in run_cases(cases)]
        monkeypatch.setattr(batch_prep, "RECYCLE", True)
        runs.append((run_cases(cases), want))
        if k == 1:
            del runs[0]                  # the first call's outcomes dropped: reusable
    for got, want in runs:
        for o, w in zip(got, want):
            np.testing.assert_array_equal(o.ub, w)


@pytest.mark.slow
def test_pinned_kernels_of_every_instruction_equal_the_general_path(monkeypatch):
    """Every registered instruction (bench/bench.py's rows: each at its default option,
    float16 and float32) on 64 cases of one full-mask call at its table height, adversarial
    data: the pinned kernel, the unpinned one and the general path give the same bits."""
    import importlib.util
    from pathlib import Path

    from ascend_ref import batch

    spec = importlib.util.spec_from_file_location(
        "ascend_ref_bench", Path(__file__).resolve().parents[1] / "bench" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(batch, "_PINNED", __import__("collections").defaultdict(set))
    rng = np.random.default_rng(5)
    pinned = set()
    for api, chip, dtype, option in bench.configs():
        r, b = 16, 64
        tensors, window = bench.layout(api, dtype, r, option)
        kw = bench.batch_kwargs(api, chip, dtype, option, r, tensors)
        ubs = _batch_data(rng, b, window, dtype, False)
        before = sum(len(v) for v in batch._PINNED.values())
        out, status = ar.run_batch(api, ubs, **kw)
        if sum(len(v) for v in batch._PINNED.values()) > before:
            pinned.add(api)
        monkeypatch.setattr(batch, "PINNED", False)
        plain, pstatus = ar.run_batch(api, ubs, **kw)
        monkeypatch.setattr(batch, "PINNED", True)
        with engine.use_path("general"):
            want, wstatus = ar.run_batch(api, ubs, **kw)
        for got, st in ((out, status), (plain, pstatus)):
            np.testing.assert_array_equal(st, wstatus, err_msg=f"{api} {dtype}")
            np.testing.assert_array_equal(got, want, err_msg=f"{api} {dtype}")
    assert {"whole_reduce_sum", "reduce_data_block", "vec_reduce_add"} <= pinned


def test_verify_of_one_calls_dumps_runs_pinned_and_finds_a_flipped_bit(tmp_path, monkeypatch):
    """``ascend-ref verify`` on the dumps of one call (64 cases, full mask, repeat at the
    table height) runs the pinned kernel (regions and stacked layouts) and still reports
    the one case whose device bytes differ by one bit, and no other."""
    import collections
    import dataclasses

    from ascend_ref import batch
    from ascend_ref.case import Case
    from ascend_ref.verify import dumps_from_cases, verify

    api, chip, dtype, option = "reduce_data_block", "atlas_a2", "float32", "SUM"
    rng = np.random.default_rng(17)
    tens, width = _batch_layout(api, dtype, option, 16)
    params = {"repeat": 16, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    ubs = _batch_data(rng, 64, width, dtype, True)
    cases = [Case(api, chip, dtype, option, 64, params, tens, ubs[k]) for k in range(64)]
    outs = list(run_cases(cases))
    ub = np.array(outs[7].ub, copy=True)
    ub[tens["dst"][0] + 2] ^= 0x10                     # one bit of case 7's first result
    outs[7] = dataclasses.replace(outs[7], ub=ub)
    for stacked in (False, True):
        d = tmp_path / str(stacked)
        dumps_from_cases(cases, d, per_file=64, regions="tensors", stacked=stacked,
                         outcomes=outs)
        monkeypatch.setattr(batch, "_PINNED", collections.defaultdict(set))
        rep = verify(d, progress=False)
        assert sum(len(v) for v in batch._PINNED.values()) == 1, stacked
        assert (rep.agreed, rep.mismatched) == (63, 1), rep
