"""Batched engine: same bits as eager calls, per-case status, no recompiles, windows, devices."""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Tensor
from ascend_ref.case import Case
from ascend_ref.batch import TRACES
from ascend_ref.case import run_jax
from ascend_ref.fuzz.compare import diff
from ascend_ref.fuzz.generate import RngDraw, draw_case

RNG = np.random.default_rng(3)


def _random_params(b, w):
    """Fresh WholeReduceMin half parameter sets inside a w-byte UB (some invalid)."""
    repeat = RNG.integers(0, 12, b)
    rs = RNG.integers(0, 12, b)
    bs = RNG.integers(0, 3, b)
    mask = RNG.integers(0, 140, b)            # > 128: MASK_RANGE; 0: NOP on A2
    src = RNG.integers(0, 4, b) * 32
    return dict(mask=mask, repeat=repeat, dst_rep_stride=np.ones(b, int), src_blk_stride=bs,
                src_rep_stride=rs, src=(src, (w // 2 - 2048 - src // 2)), dst=(w - 2048, 512))


def _ubs(b, w, dtype=np.float16):
    x = RNG.standard_normal((b, w // np.dtype(dtype).itemsize)).astype(dtype)
    return x.view(np.uint8)


def test_run_batch_matches_eager_calls_and_reports_status():
    b, w = 24, 8192
    ubs, prm = _ubs(b, w), _random_params(b, w)
    out, status = ar.run_batch("whole_reduce_min", ubs.copy(), chip="atlas_a2", dtype="half",
                               order="ORDER_INDEX_VALUE", **prm)
    assert {0, int(ar.Code.MASK_RANGE)} <= set(status.tolist())
    for k in range(b):
        args = (Tensor(w - 2048, "half", 512), Tensor(int(prm["src"][0][k]), "half",
                                                        int(prm["src"][1][k])),
                int(prm["mask"][k]), int(prm["repeat"][k]), 1, int(prm["src_blk_stride"][k]),
                int(prm["src_rep_stride"][k]), "ORDER_INDEX_VALUE")
        try:
            want = np.asarray(ar.ascendc.whole_reduce_min(ubs[k], *args, chip="atlas_a2"))
            assert status[k] == 0
        except ar.ConstraintError as e:
            assert status[k] == int(e.code)
            want = ubs[k]                      # an invalid case leaves its UB unchanged
        np.testing.assert_array_equal(out[k], want)


def test_no_recompilation_across_batches(monkeypatch):
    from ascend_ref import engine

    monkeypatch.setattr(engine, "COMPILE_LIMIT", 10**9)   # no cache release mid-test
    b, w = 32, 8192
    kw = dict(chip="atlas_a2", dtype="half", order="ORDER_VALUE_INDEX")
    ar.run_batch("whole_reduce_max", _ubs(b, w), **kw, **_random_params(b, w))
    before = sum(v for k, v in TRACES.items() if "whole_reduce_max" in k)
    for _ in range(6):
        ar.run_batch("whole_reduce_max", _ubs(b, w), **kw, **_random_params(b, w))
    after = sum(v for k, v in TRACES.items() if "whole_reduce_max" in k)
    assert before >= 1 and after == before


def test_windows_map_to_real_ub_addresses():
    """A 1 KiB window at real address 4096 gives the same bytes as the whole UB."""
    full = np.zeros(ar.chip("atlas_a2").ub_bytes, np.uint8)
    x = RNG.standard_normal(256).astype(np.float32)
    full[4096:5120] = x.view(np.uint8)
    want = np.asarray(ar.ascendc.whole_reduce_sum(full, Tensor(4096 + 512, "float", 8),
                                                  Tensor(4096, "float", 128), 64, 2, 1, 1, 8,
                                                  chip="atlas_a2"))
    out, status = ar.run_batch("whole_reduce_sum", full[None, 4096:5120].copy(), chip="atlas_a2",
                               dtype="float", mask=64, repeat=2, dst_rep_stride=1,
                               src_blk_stride=1, src_rep_stride=8, dst=(512, 8), src=(0, 128),
                               ub_base=4096)
    assert status.tolist() == [0]
    np.testing.assert_array_equal(out[0], want[4096:5120])
    # near the end of the product's UB the window base counts: this access is outside it
    _, status = ar.run_batch("whole_reduce_sum", full[None, 4096:5120].copy(), chip="atlas_a2",
                             dtype="float", mask=64, repeat=2, dst_rep_stride=1, src_blk_stride=1,
                             src_rep_stride=8, dst=(512, 8), src=(0, 128), ub_base=196608 - 512)
    assert status.tolist() == [int(ar.Code.UB_BOUNDS)]


def test_run_batch_tik_bit_masks_match_eager():
    b, w = 8, 4096
    ubs = _ubs(b, w)
    words = RNG.integers(0, 2**32, (b, 4), dtype=np.uint64).astype(np.uint32)
    words[0] = 0                                          # all-zero mask: MASK_ZERO on training
    reps = RNG.integers(1, 6, b)
    out, status = ar.run_batch("vec_reduce_max", ubs.copy(), chip="atlas_training", dtype="half",
                               mask=words, cal_index=True, repeat=reps, src_rep_stride=8,
                               src=(0, 1024), dst=(2048, 16), work_tensor=(2112, 64))
    assert status[0] == int(ar.Code.MASK_ZERO)
    np.testing.assert_array_equal(out[0], ubs[0])
    for k in range(1, b):
        mh = int(words[k, 2]) | int(words[k, 3]) << 32     # TIK order: [mask_h, mask_l]
        ml = int(words[k, 0]) | int(words[k, 1]) << 32
        want = ar.tik.vec_reduce_max(ubs[k], [mh, ml], Tensor(2048, "half", 16),
                                     Tensor(0, "half", 1024), Tensor(2112, "half", 64),
                                     int(reps[k]), 8, cal_index=True, chip="atlas_training")
        assert status[k] == 0
        np.testing.assert_array_equal(out[k], np.asarray(want))


@pytest.mark.parametrize("n", [pytest.param(8, id="8-cases"),
                               pytest.param(40, id="40-cases", marks=pytest.mark.slow)])
def test_run_cases_matches_case_by_case(n):
    """run_cases (grouped, vectorised preparation) against each case's own eager call, on
    drawn cases of every API (a quarter invalid). Each eager call compiles its own shape, so
    the default run takes 8 cases and the slow run 40."""
    cases = [draw_case(RngDraw(8, i), invalid_rate=0.25, tik_max_repeat=300) for i in range(n)]
    for case, got in zip(cases, ar.run_cases(cases)):
        want = run_jax(case)
        assert diff(got, want) is None, case.describe()


def test_sharding_over_four_cpu_devices_gives_the_same_bits(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, jax, ascend_ref as ar
        from ascend_ref import scale
        assert len(jax.devices()) == 4
        rng = np.random.default_rng(0)
        ubs = rng.standard_normal((10, 2048)).astype(np.float16).view(np.uint8)
        kw = dict(chip="ascend950", dtype="half", reduce_type="SUM", mask=rng.integers(0, 129, 10),
                  repeat=rng.integers(0, 8, 10), dst_rep_stride=1, src_blk_stride=1,
                  src_rep_stride=rng.integers(0, 9, 10), src=(0, 1024), dst=(3072, 512))
        a, sa = ar.run_batch("reduce_data_block", ubs.copy(), **kw)
        assert scale.CALLS[4] > 0 and scale.CALLS[1] == 0, scale.CALLS   # 10 rows over 4
        b, sb = ar.run_batch("reduce_data_block", ubs.copy(), devices=jax.devices()[:1], **kw)
        assert scale.CALLS[1] > 0, scale.CALLS
        assert (a == b).all() and (sa == sb).all(), "sharded and single-device results differ"
        print("SAME", int((sa == 0).sum()))
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "SAME" in r.stdout


def test_one_kernel_serves_every_product_mask_mode_and_order(monkeypatch):
    """Product behaviour, mask mode and whole-reduce order are traced data: cases of every
    behaviour group, both mask modes and several orders run on one executable, with the
    oracle's bits."""
    from ascend_ref import batch, engine
    from ascend_ref.case import run_oracle
    from ascend_ref.fuzz.generate import behaviour_group

    monkeypatch.setattr(engine, "COMPILE_LIMIT", 10**9)
    monkeypatch.setattr(batch, "EXECUTABLES", set())
    cases, i = [], 0
    while len(cases) < 40:
        c = draw_case(RngDraw(31, i), apis=["whole_reduce_min"], invalid_rate=0.2, max_ub=1 << 14)
        i += 1
        if c.dtype == "float16":
            cases.append(c)
    groups = {behaviour_group(c.chip) for c in cases}
    modes = {isinstance(c.mask, int) for c in cases}
    orders = {str(c.option) for c in cases}
    assert len(groups) >= 3 and modes == {True, False} and len(orders) >= 3
    n = engine.ub_bucket(max(c.ub.size for c in cases))
    for c in cases:                                  # one UB length: one compile bucket
        c.ub = np.concatenate([c.ub, np.zeros(n - c.ub.size, np.uint8)])
    got = ar.run_cases(cases, heights=())
    kernels = {k for k in batch.EXECUTABLES if k[0] == "whole_reduce_min"}
    assert len(kernels) == 1, kernels
    for c, g in zip(cases, got):
        assert diff(run_oracle(c), g) is None, c.describe()


def _special_bits(rng, n, dtype):
    """Random element bits of ``dtype`` with NaN payloads of both signs, ±inf, ±0,
    subnormals and ties mixed in."""
    ut = np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint32
    x = rng.standard_normal(n).astype(dtype).view(ut)
    expo = 0x7C00 if ut == np.uint16 else 0x7F800000
    sign = 0x8000 if ut == np.uint16 else 0x80000000
    pick = rng.random(n)
    specials = np.array([expo | 1, expo | sign | 7, expo, expo | sign, 0, sign, 1, sign | 3,
                         x[0]], ut)
    x = np.where(pick < 0.2, specials[rng.integers(0, specials.size, n)], x)
    return x.view(np.uint8)


@pytest.mark.parametrize("api,dtype,option,chip,strides", [
    ("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", "atlas_a2", (8, 1)),
    ("whole_reduce_max", "float32", "ORDER_INDEX_VALUE", "atlas_a2", (0, 0)),
    ("whole_reduce_sum", "float16", None, "atlas_200i_500_a2", (3, 2)),
    ("reduce_data_block", "float32", "MAX", "atlas_a2", (1, 4)),
    ("vec_reduce_max", "float16", True, "atlas_training", (8, None)),
])
def test_run_cases_static_stride_chunks_equal_the_gathering_kernel(api, dtype, option, chip,
                                                                 strides, monkeypatch):
    """A full chunk of cases that share their source strides runs the slicing kernel
    (batch._rows_static_src, as run_batch does); on adversarial data -- special values,
    random lane masks and counts (some out of range), repeat 0, dst over the source, zero,
    overlapping and gapped strides -- every outcome (code, bytes, written, undefined) is the
    gathering kernel's. A chunk with one case whose source span (the table's 16 repeats)
    leaves its window keeps gathering."""
    from ascend_ref import batch

    rng = np.random.default_rng(11)
    ins = ar.registry.lookup(api)
    s, n, w = np.dtype(dtype).itemsize, 64, 8192
    lanes = 256 // s
    rep, blk = strides

    def cases(far: bool):
        out = []
        for k in range(n):
            ub = _special_bits(rng, w // s, dtype)
            params = {"repeat": int(rng.integers(0, 17)), "dst_rep_stride": 1,
                      "src_rep_stride": rep, "src_blk_stride": blk}
            params = {p: params[p] for p in ins.params}
            src = int(rng.integers(0, 4)) * 32
            dst = int(rng.choice([4096, src + 64]))             # sometimes over the source
            size = (w - 2048 - src) // s
            if far and k == 5:         # dst far below src: the span leaves this window
                src, dst, size = w - 1024, 0, 64
            tensors = {"src": (src, size), "dst": (dst, 512 // s)}
            if "work_tensor" in ins.operands:
                tensors["work_tensor"] = (6144, 1024 // s)
            mask = (int(rng.integers(0, lanes + 8)) if rng.random() < 0.5 else
                    [int(v) for v in rng.integers(0, 2**63, 2)])
            out.append(Case(api, chip, dtype, option, mask, params, tensors, ub))
        return out

    for far in ((False, True) if rep else (False,)):      # strides 0: a 32-byte span fits
        cs = cases(far)
        batch.EXECUTABLES.clear()
        monkeypatch.setattr(batch, "STATIC_ROWS", True)
        got = ar.run_cases(cs)
        static = {spec.static_src for (_, spec, _, _) in batch.EXECUTABLES}
        assert static == ({None} if far else {(rep, 1 if blk is None else blk)})
        monkeypatch.setattr(batch, "STATIC_ROWS", False)
        want = ar.run_cases(cs)
        assert {o.code for o in want} != {None}                # some cases are errors
        assert any(o.code is None for o in want)
        for c, a, b in zip(cs, got, want):
            assert diff(a, b) is None, c.describe()


def _replicas(case, n, rng, ub_size=None):
    """``n`` copies of ``case`` (same call) over fresh adversarial UB bytes (NaN payloads
    of both signs, ±inf, ±0, subnormals, ties; ``ub_size``: another UB length)."""
    import copy

    size = case.ub.size if ub_size is None else ub_size
    s = np.dtype(case.dtype).itemsize if case.dtype in ("float16", "float32") else 2
    dt = {2: "float16", 4: "float32"}[min(s, 4)]
    out = []
    for k in range(n):
        c = copy.copy(case)
        c.tensors = dict(case.tensors)
        c.params = dict(case.params)
        bits = _special_bits(rng, size // np.dtype(dt).itemsize, dt)
        if k % 7 == 3:                       # an all-tie / all-NaN UB now and then
            bits = np.repeat(bits[:np.dtype(dt).itemsize], size // np.dtype(dt).itemsize)
        c.ub = np.ascontiguousarray(bits[:size])
        out.append(c)
    return out


@pytest.mark.parametrize("api,dtype,option", [("whole_reduce_min", "float16", "ORDER_VALUE_INDEX"),
                                              ("reduce_data_block", "float32", "SUM")])
def test_run_cases_exact_table_height_equals_the_gathering_kernel(api, dtype, option,
                                                                  monkeypatch):
    """Windows sized for R = 40, whose 256-row table would leave them: a full chunk that
    shares its source strides slices at the chunk's own height (batch._rows_static_src:
    the largest repeat count) instead of gathering 256 rows -- one call over many data (one
    repeat count: run_batch's kernel) and a chunk whose repeat counts run 17 .. 40 (the
    row-wise kernel) -- and every outcome equals the gathering kernel's and, for a sample,
    the oracle's; a chunk with one repeat count past the range keeps the coarse table."""
    from ascend_ref import batch
    from ascend_ref.case import run_oracle

    rng = np.random.default_rng(40)
    s, r = np.dtype(dtype).itemsize, 40
    slot = ar.registry.lookup(api).slot_bytes(dtype, "ORDER_VALUE_INDEX")
    out_bytes = -(-slot * r // 64) * 64                    # every repeat's result, no more
    n = r * 256 + out_bytes
    params = {"repeat": r, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    base = Case(api, "atlas_a2", dtype, option, 256 // s, params,
                {"src": (0, r * 256 // s), "dst": (r * 256, out_bytes // s)},
                np.zeros(n, np.uint8))
    one_call = _replicas(base, 64, rng)
    mixed = _replicas(base, 64, rng)
    for k, c in enumerate(mixed):       # 17 .. 40 (one table bucket), 40 the largest
        c.params["repeat"] = 17 + k % (r - 16)
    past = _replicas(base, 64, rng)
    past[5].params["repeat"] = 300                          # REPEAT_RANGE: no exact height
    for cases, height in ((one_call, r), (mixed, r), (past, None)):
        batch.EXECUTABLES.clear()
        monkeypatch.setattr(batch, "EXACT_HEIGHT", True)
        got = ar.run_cases(cases)
        heights = {k[1].r_max for k in batch.EXECUTABLES if k[1].static_src is not None}
        assert heights == ({height} if height else set()), batch.EXECUTABLES
        monkeypatch.setattr(batch, "EXACT_HEIGHT", False)
        want = ar.run_cases(cases)
        codes = {o.code for o in got}
        assert codes == ({None} if height else {None, ar.Code.REPEAT_RANGE}), codes
        for k, (a, b) in enumerate(zip(got, want)):
            assert diff(a, b) is None, (k, cases[k].describe())
        for k in (0, 3, 10, 63):
            assert diff(run_oracle(cases[k]), got[k]) is None, cases[k].describe()


@pytest.mark.parametrize("api,dtype,option", [("vec_reduce_add", "float32", None),
                                              ("vec_reduce_max", "float16", True)])
def test_run_cases_one_repeat_count_takes_its_own_table_pinned(api, dtype, option,
                                                               monkeypatch, pins):
    """One call over many data at R = 12 in windows with room past the source (a work
    tensor after it) for the coarse 16-row table: its full chunk runs the 12-row table and,
    the repeat equal to that height, the pinned kernel (batch._one_height), as run_batch
    does; at most ONE_HEIGHTS repeat counts a configuration, then the coarse table again.
    Every outcome equals the coarse table's (EXACT_HEIGHT off) and, for a sample, the
    oracle's."""
    from ascend_ref import batch
    from ascend_ref.case import run_oracle

    monkeypatch.setattr(batch, "_ONE_HEIGHTS", __import__("collections").defaultdict(set))
    monkeypatch.setattr(batch, "ONE_HEIGHTS", 1)
    rng = np.random.default_rng(42)
    s, r = np.dtype(dtype).itemsize, 12
    n = 16 * 256 + 1024                     # the 16-row table's source span fits
    base = Case(api, "atlas_a2", dtype, option, 256 // s, {"repeat": r, "src_rep_stride": 8},
                {"src": (0, r * 256 // s), "dst": (r * 256, 32 // s),
                 "work_tensor": (r * 256 + 32, 512 // s)}, np.zeros(n, np.uint8))
    one_call = _replicas(base, 64, rng)
    other = _replicas(base, 64, rng)
    for c in other:
        c.params["repeat"] = r - 1
    for cases, height, pinned in ((one_call, r, 0), (other, 16, None), (one_call, r, 0)):
        batch.EXECUTABLES.clear()
        pins.clear()
        monkeypatch.setattr(batch, "EXACT_HEIGHT", True)
        got = ar.run_cases(cases)
        heights = {k[1].r_max for k in batch.EXECUTABLES if k[1].static_src is not None}
        assert heights == {height} and pins == [pinned], (heights, pins)
        monkeypatch.setattr(batch, "EXACT_HEIGHT", False)
        want = ar.run_cases(cases)
        for k, (a, b) in enumerate(zip(got, want)):
            assert a.code is None and diff(a, b) is None, (k, cases[k].describe())
        for k in (0, 3, 63):
            assert diff(run_oracle(cases[k]), got[k]) is None, cases[k].describe()


@pytest.mark.parametrize("api,dtype,option", [("reduce_sum_count", "float32", None),
                                              ("reduce_max_count", "float16", True)])
def test_run_cases_count_form_chunks_run_on_run_batch_kernel_at_their_count(api, dtype, option,
                                                                           monkeypatch):
    """The level-2 count form (no stride: its source is gathered): a full chunk of one call
    over many data runs on run_batch's kernel at the chunk's own count (batch._exact_height)
    instead of the row-wise kernel on the coarse table; a chunk whose counts differ keeps the
    row-wise kernel; a lone case (a campaign's) compiles nothing new. Every outcome equals
    the row-wise kernel's on the coarse table and, for a sample, the oracle's."""
    from ascend_ref import batch
    from ascend_ref.case import run_oracle

    rng = np.random.default_rng(41)
    s = np.dtype(dtype).itemsize
    # 4 full rows and 44 elements: above the 256-element table, so the coarse table is the
    # API's whole range, whose source span leaves the window
    count = 4 * (256 // s) + 44
    need = ar.registry.lookup(api).work_elements(count, option, dtype)
    n = 2048 + 64 + -(-need * s // 64) * 64
    base = Case(api, "atlas_a2", dtype, option, 256 // s, {"repeat": count},
                {"src": (0, 2048 // s), "dst": (2048, 64 // s), "work_tensor": (2112, need)},
                np.zeros(n, np.uint8))
    one_call = _replicas(base, 64, rng)
    mixed = _replicas(base, 64, rng)
    for k, c in enumerate(mixed):
        c.params["repeat"] = count - k % 9
    import copy

    from ascend_ref import batch_prep

    # a full chunk of one call reads its UBs at their own width, though the gathering
    # kernel has no static table to fit: the stack's rows, or over rows of one aligned
    # array the cases' rows in place; no window copies
    rows = batch_prep.aligned_zeros((64, n))
    for k, c in enumerate(one_call):
        rows[k] = c.ub
    in_place = [copy.copy(c) for c in one_call]
    for k, c in enumerate(in_place):
        c.ub = rows[k]
    copies: list = []
    real_windows = batch_prep.Rows.windows

    def windows(self, *args, **kw):
        copies.append(len(self))
        return real_windows(self, *args, **kw)

    monkeypatch.setattr(batch_prep.Rows, "windows", windows)
    direct: list = []
    real_direct = batch_prep.Sink.sources_in_place

    def sources_in_place(self, *args):
        got = real_direct(self, *args)
        direct.append(got is not None)
        return got

    monkeypatch.setattr(batch_prep.Sink, "sources_in_place", sources_in_place)
    for cases, heights in ((one_call, {("shared", count)}), (mixed, set()),
                           (one_call[:1], set()), (in_place, {("shared", count)})):
        batch.EXECUTABLES.clear()
        copies.clear()
        direct.clear()
        got = ar.run_cases(cases)
        assert any(direct) == (cases is in_place), direct
        assert {(k[3][0], k[1].r_max) for k in batch.EXECUTABLES
                if isinstance(k[3], tuple)} == heights, batch.EXECUTABLES
        assert (copies == []) == (cases is one_call or cases is in_place), copies
        monkeypatch.setattr(batch, "SHARED_ROWS", False)
        batch.EXECUTABLES.clear()
        want = ar.run_cases(cases)
        monkeypatch.setattr(batch, "SHARED_ROWS", True)
        assert batch.EXECUTABLES and all(isinstance(k[3], int) for k in batch.EXECUTABLES)
        assert {o.code for o in got} == {None}
        for k, (a, b) in enumerate(zip(got, want)):
            assert diff(a, b) is None, (k, cases[k].describe())
            np.testing.assert_array_equal(a.ub, b.ub)
            np.testing.assert_array_equal(a.written, b.written)
            np.testing.assert_array_equal(a.undefined, b.undefined)
        for k in sorted({0, min(3, len(cases) - 1), len(cases) - 1}):
            assert diff(run_oracle(cases[k]), got[k]) is None, cases[k].describe()


#: the APIs of the default run (the others: -m slow): an Ascend C whole reduce, a block
#: reduce, a TIK-style vc* reduce and a count-form level-2 reduce
_ONE_CALL_QUICK = ("whole_reduce_min", "reduce_data_block", "vcgmax", "reduce_min_count")


@pytest.mark.parametrize("api", [pytest.param(a, marks=() if a in _ONE_CALL_QUICK else
                                              pytest.mark.slow)
                                 for a in sorted(ar.registry.names())])
def test_run_cases_chunks_of_one_call_run_on_run_batch_kernel(api, monkeypatch):
    """Chunks of cases that differ only in their UB bytes (one call over many data: golden
    data, verify of one call's dumps) run on run_batch's kernel with the shared values
    unbatched (batch._one_call), read the outcome stack in place when their windows start
    at byte 0 (Sink.rows_of; whole UBs of a power-of-two size with ``heights=()``), merge
    dense write tables as 2-D slices and run pipelined (a chunk's kernel while the one before
    it is merged): for calls drawn over the whole parameter space of every API
    (valid and invalid, products, options, masks, strides; one draw with source strides
    whose table fits the window), every outcome (code, bytes, written, undefined) is the
    row-wise kernel's, word by word, and a sample is the oracle's."""
    from ascend_ref import batch, batch_prep, engine
    from ascend_ref.case import run_oracle

    rng = np.random.default_rng(sum(map(ord, api)))
    seen: list = []
    orig = batch_prep.Sink.rows_of

    def rows_of(self, rows, b):
        got = orig(self, rows, b)
        seen.append(got is not None)
        return got

    def fast(on: bool) -> None:
        monkeypatch.setattr(batch, "SHARED_ROWS", on)
        monkeypatch.setattr(batch, "PIPELINE_CASES", on)
        monkeypatch.setattr(batch_prep, "IN_PLACE", on)
        monkeypatch.setattr(batch_prep, "DENSE_MERGE", on)

    monkeypatch.setattr(batch_prep.Sink, "rows_of", rows_of)
    shared = plain = 0
    for i in range(3):
        case = draw_case(RngDraw(77, i * 31 + len(api)), apis=[api], invalid_rate=0.3,
                         max_ub=1 << 13)
        if i == 2:                   # source strides whose 16-row table fits any window
            for k, v in (("src_rep_stride", i % 2), ("src_blk_stride", 1)):
                if k in case.params:
                    case.params[k] = v
            if "repeat" in case.params:
                case.params["repeat"] = min(int(case.params["repeat"]), 16)
        cases = _replicas(case, 70, rng, engine.ub_bucket(case.ub.size) if i == 0 else None)
        for heights in (batch.TABLE_HEIGHTS, ()) if i == 0 else (batch.TABLE_HEIGHTS,):
            batch.EXECUTABLES.clear()
            fast(True)
            got = ar.run_cases(cases, heights=heights)
            if i == 2 and heights:
                shared += sum(1 for k in batch.EXECUTABLES if isinstance(k[3], tuple))
                plain += any(r.q is not None for r in batch_prep.prepare(
                    cases[:1], [None], heights))
            fast(False)
            want = ar.run_cases(cases, heights=heights)
            for c, a, b in zip(cases, got, want):
                assert diff(a, b) is None, c.describe()
            for k in (0, 5, 69):
                assert diff(run_oracle(cases[k]), got[k]) is None, cases[k].describe()
    assert any(seen), "no chunk read its UBs in place"
    if plain:
        assert shared >= 1, "no chunk took run_batch's kernel"


@pytest.mark.parametrize("api,dtype,option", [("whole_reduce_min", "float16", "ORDER_VALUE_INDEX"),
                                              ("whole_reduce_sum", "float32", None)])
def test_run_cases_one_call_reads_exact_ubs_in_place(api, dtype, option, monkeypatch):
    """UBs that are exactly their windows (src at byte 0, dst at the end, a size that is a
    multiple of 64 but no compiled width): a full chunk of one call runs run_batch's kernel
    on the outcome stack's own rows at the UBs' width (no window copy); the outcomes are the
    row-wise kernel's over copied windows and the oracle's."""
    from ascend_ref import batch, batch_prep, engine
    from ascend_ref.case import run_oracle

    rng = np.random.default_rng(5)
    s, r = np.dtype(dtype).itemsize, 16
    n = r * 256 + 64 * 3                       # 4288 bytes: 64-aligned rows, not a bucket
    assert n % 64 == 0 and engine.ub_bucket(n) != n
    tensors = {"src": (0, r * 256 // s), "dst": (r * 256, 64 * 3 // s)}
    params = {"repeat": r, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    base = Case(api, "atlas_a2", dtype, option, 256 // s, params, tensors, np.zeros(n, np.uint8))
    cases = _replicas(base, 64, rng)
    batch.EXECUTABLES.clear()
    got = ar.run_cases(cases)
    widths = {k[2] for k in batch.EXECUTABLES if isinstance(k[3], tuple)}
    assert widths == {n}, batch.EXECUTABLES
    monkeypatch.setattr(batch, "SHARED_ROWS", False)
    monkeypatch.setattr(batch_prep, "IN_PLACE", False)
    want = ar.run_cases(cases)
    assert {o.code for o in got} == {None}
    for c, a, b in zip(cases, got, want):
        assert diff(a, b) is None, c.describe()
    for k in (0, 3, 63):                       # 3: an all-tie / all-NaN UB
        assert diff(run_oracle(cases[k]), got[k]) is None


def test_run_cases_one_call_groups_take_run_batch_sized_chunks(monkeypatch):
    """A group whose cases share every parameter (batch._shares_call) runs in chunks as
    large as run_batch's (128 cases at R = 255 instead of 64), the last one padded; the
    outcomes are the row-wise kernel's in chunks of 64 and, for a sample, the oracle's. One
    case with another repeat count makes the group mixed: chunks of 64 again."""
    from ascend_ref import batch, batch_prep
    from ascend_ref.case import run_oracle

    rng = np.random.default_rng(29)
    api, dtype, r = "whole_reduce_sum", "float32", 255
    n = r * 256 + 1024
    tensors = {"src": (0, r * 64), "dst": (r * 256, 256)}
    params = {"repeat": r, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    base = Case(api, "atlas_a2", dtype, None, 64, params, tensors, np.zeros(n, np.uint8))
    cases = _replicas(base, 150, rng)
    assert batch._shares_call(batch_prep.Rows.concat(batch_prep.prepare(cases, [None] * 150,
                                                                        batch.TABLE_HEIGHTS)))
    batch.EXECUTABLES.clear()
    got = ar.run_cases(cases)
    sizes = sorted({k[3][1] for k in batch.EXECUTABLES if isinstance(k[3], tuple)})
    assert sizes == [128], batch.EXECUTABLES        # 150 = 128 + 22: two chunks of 128
    monkeypatch.setattr(batch, "SHARED_ROWS", False)
    batch.EXECUTABLES.clear()
    want = ar.run_cases(cases)
    assert {k[3] for k in batch.EXECUTABLES} <= {64, 8}, batch.EXECUTABLES
    assert {o.code for o in got} == {None}
    for c, a, b in zip(cases, got, want):
        assert diff(a, b) is None, c.describe()
    for k in (0, 3, 149):                       # 3: an all-tie / all-NaN UB
        assert diff(run_oracle(cases[k]), got[k]) is None
    monkeypatch.setattr(batch, "SHARED_ROWS", True)
    cases[7].params = dict(params, repeat=r - 1)
    batch.EXECUTABLES.clear()
    mixed = ar.run_cases(cases)
    assert not any(isinstance(k[3], tuple) and k[3][1] == 128 for k in batch.EXECUTABLES)
    for k in (0, 7, 100):
        assert diff(run_oracle(cases[k]), mixed[k]) is None


def test_release_restarts_the_compile_count(monkeypatch):
    """engine.release_if_needed drops the caches only once COMPILE_LIMIT compiles were
    counted (then the count starts again); engine.release drops them at once; a kernel
    compiled again after a release gives the same bits."""
    from ascend_ref import engine

    ubs = np.zeros((2, 1024), np.uint8)
    ubs[:, :256] = np.arange(128, dtype=np.float16).view(np.uint8)
    kw = dict(chip="atlas_a2", dtype="float16", mask=128, repeat=1, dst_rep_stride=1,
              src_blk_stride=1, src_rep_stride=8, dst=(512, 16), src=(0, 128))
    before, _ = ar.run_batch("whole_reduce_sum", ubs, **kw)
    dropped = []
    monkeypatch.setattr(jax, "clear_caches", lambda: dropped.append(True))
    monkeypatch.setattr(engine, "COMPILE_LIMIT", 3)
    monkeypatch.setattr(engine, "_compiles", [2])
    engine.release_if_needed()
    assert engine._compiles == [2] and not dropped
    engine.note_compile()
    engine.release_if_needed()
    assert engine._compiles == [0] and dropped == [True]
    engine._compiles[0] = 1
    engine.release()
    assert engine._compiles == [0] and dropped == [True, True]
    monkeypatch.undo()
    engine.release()                       # the real caches: the kernel compiles again
    after, _ = ar.run_batch("whole_reduce_sum", ubs, **kw)
    np.testing.assert_array_equal(after, before)
    assert after[0, 512:514].copy().view(np.float16)[0] == 8128.0


def test_run_batch_keeps_one_jit_wrapper_per_kernel():
    """run_batch calls each kernel through one kept jax.jit wrapper (batch._jitted's cache:
    a fresh wrapper's call takes JAX's slow dispatch path); after engine.release the kept
    wrapper traces and compiles again and gives the same bits."""
    from ascend_ref import batch, engine

    ubs = np.zeros((3, 1024), np.uint8)
    ubs[:, :256] = np.arange(128, dtype=np.float16).view(np.uint8)
    kw = dict(chip="atlas_a2", dtype="float16", mask=128, repeat=1, dst_rep_stride=1,
              src_blk_stride=1, src_rep_stride=8, dst=(512, 16), src=(0, 128))
    batch._jitted.cache_clear()
    first, _ = ar.run_batch("whole_reduce_sum", ubs, **kw)
    one = batch._jitted.cache_info()
    again, _ = ar.run_batch("whole_reduce_sum", ubs, **kw)
    two = batch._jitted.cache_info()
    assert one.currsize == two.currsize >= 1 and two.hits > one.hits
    engine.release()                               # compile count 0, JAX's caches dropped
    after, _ = ar.run_batch("whole_reduce_sum", ubs, **kw)
    assert engine._compiles[0] >= 1 and batch._jitted.cache_info().currsize == two.currsize
    for x in (again, after):
        np.testing.assert_array_equal(x, first)
    assert first[0, 512:514].copy().view(np.float16)[0] == 8128.0     # 0 + 1 + ... + 127
