"""TIK vcadd / vcmax / vcmin / vcgadd / vcgmax / vcgmin / vcpadd (issue 14 item 5; SEMANTICS §T).

Expected values are written out by hand from the rules (tree sums of small integers, the
lane of a planted extreme, pair sums) or come from the independent scalar oracle; each
differential test runs both implementations on the same arguments. Shapes are fixed (one
compiled kernel per API and dtype) to keep the file cheap.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ascend_ref as ar
from ascend_ref import oracle
from ascend_ref.constraints import Code

F16, F32 = "float16", "float32"
APIS = ("vcadd", "vcmax", "vcmin", "vcgadd", "vcgmax", "vcgmin", "vcpadd")
FULL = [2**64 - 1, 2**64 - 1]
SENTINEL = 0x5A
SRC, DST, NBYTES = 0, 2048, 4096


def ub_with(values, dtype):
    ub = np.full(NBYTES, SENTINEL, np.uint8)
    raw = np.asarray(values, dtype).view(np.uint8)
    ub[SRC:SRC + raw.size] = raw
    return ub


def run(impl, api, ub, dtype, mask, repeat=2, drs=1, sbs=1, srs=8, *extra, chip="atlas_a2",
        dst_addr=DST, **kw):
    """``(ub bytes, written mask)`` or the error Code."""
    s = np.dtype(dtype).itemsize
    dst = ar.Tensor(dst_addr, dtype, (NBYTES - dst_addr) // s)
    src = ar.Tensor(SRC, dtype, DST // s)
    args = (np.asarray(ub, np.uint8), mask, dst, src, repeat, drs, sbs, srs) + extra
    if impl == "oracle":
        try:
            r = getattr(oracle, api)(*args, chip=chip, **kw)
        except oracle.OracleError as e:
            return e.code
        return np.asarray(r.ub), np.asarray(r.written), np.asarray(r.undefined)
    try:
        new, info = getattr(ar.tik, api)(*args, chip=chip, return_info=True, **kw)
    except ar.ConstraintError as e:
        return e.code
    return np.asarray(new), np.asarray(info.written), np.asarray(info.undefined)


def same(a, b):
    if isinstance(a, Code) or isinstance(b, Code):
        assert a == b
        return
    (ua, wa, da), (ub_, wb, db) = a, b
    np.testing.assert_array_equal(wa, wb)
    np.testing.assert_array_equal(da, db)
    keep = ~da
    np.testing.assert_array_equal(ua[keep], ub_[keep])


def dst_view(out, dtype, n):
    return out[0][DST:DST + n * np.dtype(dtype).itemsize].view(dtype)


# ------------------------------------------------------------------ values by hand -----------

def test_vcadd_tree_sums_by_hand():
    x = np.zeros(256, F16)
    x[:128] = 1                                   # repeat 0: 128 ones
    x[128:128 + 64] = 2                           # repeat 1: 64 twos in lanes 0-63
    out = run("jax", "vcadd", ub_with(x, F16), F16, 128)
    assert dst_view(out, F16, 2).tolist() == [128.0, 128.0]
    # TIK word order: [mask_h, mask_l]; mask_l = lanes 0-63 only
    out = run("jax", "vcadd", ub_with(x, F16), F16, [0, 2**64 - 1])
    assert dst_view(out, F16, 2).tolist() == [64.0, 128.0]


@pytest.mark.parametrize("index_low", [False, True])
def test_vcmax_vcmin_slots_by_hand(index_low):
    x = np.zeros(256, F16)
    x[5], x[128 + 77] = 3, 9                      # maxima at lane 5, lane 77
    x[9], x[128 + 100] = -4, -1                   # minima at lane 9, lane 100
    for api, want in (("vcmax", [(3.0, 5), (9.0, 77)]), ("vcmin", [(-4.0, 9), (-1.0, 100)])):
        out = run("jax", api, ub_with(x, F16), F16, 128, 2, 1, 1, 8, 0, index_low)
        words = dst_view(out, F16, 4)
        vi, ii = (1, 0) if index_low else (0, 1)
        got = [(float(words[2 * r + vi]), int(words.view(np.uint16)[2 * r + ii]))
               for r in range(2)]
        assert got == want, (api, index_low)


def test_run_batch_takes_the_flag_options_default():
    """run_batch without ``index_low`` (vcmax / vcmin) or ``cal_index`` (vec_reduce_min) is
    the public default, False: index_low was None and a BAD_ARGUMENT."""
    x = np.zeros(256, F16)
    x[5], x[9], x[128 + 77], x[128 + 100] = 3, -4, 9, -1
    ubs = np.stack([ub_with(x, F16)] * 2)
    kw = dict(chip="atlas_training", dtype=F16, mask=np.array([128, 128]), repeat_times=2,
              dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8, src=(SRC, 256),
              dst=(DST, 16))
    for api in ("vcmax", "vcmin"):
        out, status = ar.run_batch(api, ubs, **kw)
        given, _ = ar.run_batch(api, ubs, index_low=False, **kw)
        eager = np.asarray(getattr(ar.tik, api)(ubs[0], 128, ar.Tensor(DST, F16, 16),
                                                ar.Tensor(SRC, F16, 256), 2, 1, 1, 8,
                                                chip="atlas_training"))
        assert status.tolist() == [0, 0]
        np.testing.assert_array_equal(out, given)
        np.testing.assert_array_equal(out[0], eager)
    kw = dict(chip="atlas_training", dtype=F16, mask=np.array([128, 128]), repeat_times=2,
              src_rep_stride=8, src=(SRC, 256), dst=(DST, 16), work_tensor=(DST + 64, 64))
    out, status = ar.run_batch("vec_reduce_min", ubs, **kw)
    given, _ = ar.run_batch("vec_reduce_min", ubs, cal_index=False, **kw)
    assert status.tolist() == [0, 0] and np.array_equal(out, given)
    assert float(out[0, DST:DST + 2].view(np.float16)[0]) == -4.0


def test_vcg_block_results_by_hand():
    x = np.arange(256, dtype=F16) % 16            # every block 0..15
    x[16 * 3 + 7] = 100                           # repeat 0, block 3
    out = run("jax", "vcgadd", ub_with(x, F16), F16, 128)
    want = [120.0] * 16
    want[3] = 120.0 - 7 + 100
    assert dst_view(out, F16, 16).tolist() == want
    out = run("jax", "vcgmax", ub_with(x, F16), F16, 128)
    assert dst_view(out, F16, 16).tolist() == [15.0] * 3 + [100.0] + [15.0] * 12
    out = run("jax", "vcgmin", ub_with(x, F16), F16, 128)
    assert dst_view(out, F16, 16).tolist() == [0.0] * 16


def test_vcpadd_pairs_by_hand():
    x = np.zeros(256, F32)
    x[:8] = [1, 2, 3, 4, -1, 1, 0.5, 0.25]
    out = run("jax", "vcpadd", ub_with(x, F32), F32, 64)
    assert dst_view(out, F32, 4).tolist() == [3.0, 7.0, 0.0, 0.75]
    # repeat 1's 32 sums start 128 bytes after repeat 0's (dst_rep_stride 1 = 128 B)
    assert dst_view(out, F32, 64)[32:].tolist() == [0.0] * 32


# ------------------------------------------------------------------ differential -------------

def adversarial(dtype, kind, rng):
    s = np.dtype(dtype).itemsize
    n = DST // s
    bits = np.uint16 if s == 2 else np.uint32
    if kind == "random":
        return rng.integers(0, np.iinfo(bits).max, n, dtype=np.uint64).astype(bits).view(dtype)
    if kind == "specials":
        vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0,
                         np.finfo(dtype).max, -np.finfo(dtype).max, np.finfo(dtype).tiny],
                        dtype)
        out = rng.choice(vals, n).astype(dtype)
        out.view(bits)[rng.integers(0, n, 8)] = bits(0x7E01 if s == 2 else 0x7FC00123)
        return out
    if kind == "ties":
        return rng.choice(np.array([-2.0, -0.0, 0.0, 3.0], dtype), n).astype(dtype)
    big = np.finfo(dtype).max / 4                 # saturating sums
    return np.full(n, big, dtype)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("dtype", [F16, F32])
def test_differential_adversarial(api, dtype):
    rng = np.random.default_rng(APIS.index(api) * 2 + (dtype == F32))
    for kind in ("random", "specials", "ties", "saturating"):
        ub = ub_with(adversarial(dtype, kind, rng), dtype)
        for chip, mask in (("atlas_a2", [0, 2**64 - 1]), ("atlas_200i_500_a2", 17),
                           ("atlas_training", [3, 5])):
            extra = (0, True) if api in ("vcmax", "vcmin") and kind == "ties" else ()
            a = run("jax", api, ub, dtype, mask, 2, 1, 1, 8, *extra, chip=chip)
            b = run("oracle", api, ub, dtype, mask, 2, 1, 1, 8, *extra, chip=chip)
            same(a, b)


def test_index_low_ignored_counterfactual():
    """``tik_index_low = "ignored"`` (the audit's alternative): index_low=True writes
    [value, index]; the oracle reads the same alternative profile."""
    prof = ar.chip("atlas_a2")
    alt = dataclasses.replace(prof, id="atlas_a2~ignored",
                              facts={**prof.facts, "tik_index_low": "ignored"})
    x = np.zeros(256, F32)
    x[10] = 5
    ub = ub_with(x, F32)
    a = run("jax", "vcmax", ub, F32, 64, 1, 1, 1, 8, 0, True, chip=alt)
    b = run("oracle", "vcmax", ub, F32, 64, 1, 1, 1, 8, 0, True, chip=alt)
    same(a, b)
    assert float(dst_view(a, F32, 1)[0]) == 5.0


# ------------------------------------------------------------------ rejections ---------------

#: rejected before any kernel runs (cheap for every API)
HOST_CASES = [
    ((128, 2, 1, 1, 8, 1), {}, Code.STRIDE_RANGE),          # stride_unit 1: no meaning
    ((128, 2, 1, 1, 8, True), {}, Code.BAD_ARGUMENT),
    ((128, 2, 1, 1, 8, np.array(True)), {}, Code.BAD_ARGUMENT),
    ((128, 2, 1, 1, 8, np.array(1)), {}, Code.STRIDE_RANGE),   # a 0-d int is its int
    ((ar.CounterMask(128), 2, 1, 1, 8), {}, Code.MASK_MODE),
    ((128, 2, 1, 1, 8), {"chip": "ascend950"}, Code.API_UNSUPPORTED),
]
#: the kernel's rules (a compile per API: every API under slow, two in the default run)
TRACED_CASES = [
    ((128, 0, 1, 1, 8), {}, Code.REPEAT_RANGE),            # an immediate 0
    ((128, 256, 1, 1, 8), {}, Code.REPEAT_RANGE),
    ((128, 2, 1, 1, 70000), {}, Code.STRIDE_RANGE),
    ((129, 2, 1, 1, 8), {}, Code.MASK_RANGE),
    ((128, 2, 0, 1, 8), {"chip": "atlas_training"}, Code.DST_STRIDE_ZERO),
    ((128, 2, 1, 1, 8), {"dst_addr": DST + 4}, Code.ALIGN),   # TIK general rule: 32 B
]


@pytest.mark.parametrize("api", APIS)
def test_host_rejections(api):
    check_rejections(api, HOST_CASES)


@pytest.mark.parametrize("api", [pytest.param(a, marks=() if a in ("vcadd", "vcgmax")
                                              else pytest.mark.slow) for a in APIS])
def test_traced_rejections(api):
    check_rejections(api, TRACED_CASES)


def check_rejections(api, cases):
    ub = ub_with(np.ones(256, F16), F16)
    for args, kw, code in cases:
        mask, rest = args[0], args[1:]
        for impl in ("jax", "oracle"):
            assert run(impl, api, ub, F16, mask, *rest, **kw) == code, (impl, args, kw)


def test_error_message_names_api_param_value_range_product():
    ub = ub_with(np.ones(256, F16), F16)
    with pytest.raises(ar.ConstraintError) as e:
        ar.tik.vcgmax(ub, 128, ar.Tensor(DST, F16, 64), ar.Tensor(0, F16, 256), 2, 1, 1, 8, 2,
                      chip="atlas_inference_aicore")
    msg = str(e.value)
    for part in ("vcgmax", "stride_unit", "2", "0", "atlas_inference_aicore"):
        assert part in msg
    with pytest.raises(ar.ConstraintError) as e:
        ar.tik.vcadd(ub, 128, ar.Tensor(DST, "int16", 64), ar.Tensor(0, "int16", 256), 1, 1, 1,
                     8, chip="atlas_a2")
    assert e.value.code == Code.DTYPE_UNSUPPORTED and "vcadd" in str(e.value)


@pytest.mark.parametrize("api", ["vcmax", "vec_reduce_add"])
def test_mask_errors_print_the_words_as_tik_writes_them(api):
    """A TIK bit mask in an error reads as the caller wrote it, [mask_h, mask_l]: the words
    [1, 5] (mask_h = 1) of a float, whose mask_h must be 0, print as [0x1, 0x5], not
    swapped into Ascend C's lanes-0-63-first order; likewise an all-zero mask's MASK_ZERO."""
    ub = ub_with(np.ones(64, F32), F32)
    dst, src = ar.Tensor(DST, F32, 64), ar.Tensor(0, F32, 512)
    rest = (ar.Tensor(3072, F32, 64), 1, 8) if api == "vec_reduce_add" else (1, 1, 1, 8)
    with pytest.raises(ar.ConstraintError) as e:
        getattr(ar.tik, api)(ub, [1, 5], dst, src, *rest, chip="atlas_a2")
    assert e.value.code == Code.MASK_BITS
    assert e.value.value == "[0x1, 0x5] (mask_h: lanes 64-127, mask_l: lanes 0-63)", str(e.value)
    with pytest.raises(ar.ConstraintError) as e:
        getattr(ar.tik, api)(ub, [0, 0], dst, src, *rest, chip="atlas_training")
    assert e.value.code == Code.MASK_ZERO and e.value.value.startswith("[0x0, 0x0] (mask_h"), \
        str(e.value)


def test_registry_declares_the_assumptions():
    for api in APIS:
        ins = ar.registry.lookup(api)
        assert ins.family == "tik" and ins.word_order == "tik"
        assert ins.assumptions["tik_vc_dtypes"] == Code.DTYPE_UNSUPPORTED
        for chip_id in ar.chips():
            prof = ar.chip(chip_id)
            if prof.dtypes(api):
                assert "tik_vc_dtypes" in prof.assumed and "tik_align" in prof.assumed


# ------------------------------------------------------------------ hypothesis ---------------

@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(api=st.sampled_from(APIS), dtype=st.sampled_from([F16, F32]),
       seed=st.integers(0, 2**31), repeat=st.just(2), drs=st.integers(1, 2),
       sbs=st.integers(0, 2), srs=st.integers(0, 9),
       mask=st.one_of(st.integers(1, 64), st.lists(st.integers(0, 2**64 - 1), min_size=2,
                                                   max_size=2)),
       chip=st.sampled_from(["atlas_a2", "atlas_200i_500_a2", "atlas_inference_vector_core",
                             "atlas_training"]))
def test_hypothesis_matches_oracle(api, dtype, seed, repeat, drs, sbs, srs, mask, chip):
    rng = np.random.default_rng(seed)
    kind = ("random", "specials", "ties")[seed % 3]
    ub = ub_with(adversarial(dtype, kind, rng), dtype)
    same(run("jax", api, ub, dtype, mask, repeat, drs, sbs, srs, chip=chip),
         run("oracle", api, ub, dtype, mask, repeat, drs, sbs, srs, chip=chip))


# ------------------------------------------------------------------ verify dumps -------------

def vc_cases():
    """One valid case per API (vcmax / vcmin with index_low=True), an int16 vcadd the
    reference rejects (DTYPE_UNSUPPORTED: the assumed dtype list) -- the fixed shapes above."""
    from ascend_ref.case import Case

    rng = np.random.default_rng(5)
    out = []
    for k, api in enumerate(APIS):
        dtype = (F16, F32)[k % 2]
        s = np.dtype(dtype).itemsize
        ub = ub_with(adversarial(dtype, "ties", rng), dtype)
        out.append(Case(api, "atlas_a2", dtype, True if api in ("vcmax", "vcmin") else None,
                        [2**63 + 5, 2**64 - 1] if s == 2 else [0, 2**63 + 5],
                        {"repeat": 2, "dst_rep_stride": 1,
                                                 "src_blk_stride": 1, "src_rep_stride": 8},
                        {"dst": (DST, (NBYTES - DST) // s), "src": (SRC, DST // s)}, ub,
                        None, {}))
    bad = dataclasses.replace(out[0], dtype="int16")
    return out, bad


@pytest.mark.parametrize("stacked", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_verify_dumps_round_trip_and_catch_a_flipped_word(tmp_path, stacked):
    from ascend_ref.verify import dumps_from_cases, verify

    cases, bad = vc_cases()
    dumps_from_cases(cases + [bad], tmp_path / "ok", stacked=stacked)
    r = verify(tmp_path / "ok", progress=False)
    assert r.ok and r.cases == len(cases) + 1 and r.device_errors == 1, r.format()
    # a "device" whose vcmax wrote the index where the value goes: a mismatch
    vcmax = cases[APIS.index("vcmax")]
    (new,), = [run("jax", "vcmax", vcmax.ub, vcmax.dtype, vcmax.mask, 2, 1, 1, 8, 0, True)[:1]]
    flipped = new.copy()
    w = np.dtype(vcmax.dtype).itemsize                      # slot [index, value] -> [value, index]
    flipped[DST:DST + 2 * w] = np.concatenate([new[DST + w:DST + 2 * w], new[DST:DST + w]])
    assert (flipped != new).any()
    from ascend_ref.verify import write_dump

    (tmp_path / "bad").mkdir()
    write_dump(tmp_path / "bad" / "a.npz", vcmax, ub_after=flipped)
    r = verify(tmp_path / "bad", progress=False)
    assert not r.ok and r.mismatched == 1


def test_audit_settles_index_low_and_the_dtype_list(tmp_path):
    """``verify --audit``: dumps of the reference itself confirm ``tik_index_low`` (the
    counterfactual "ignored" writes other bytes for an index_low=True call) and
    ``tik_vc_dtypes`` (the "device" rejected the int16 call too); a device that ran the int16
    call refutes the dtype list."""
    from ascend_ref.verify import dumps_from_cases, verify, write_dump

    cases, bad = vc_cases()
    dumps_from_cases(cases + [bad], tmp_path / "ok")
    rows = {(r.chip, r.assumption): r
            for r in verify(tmp_path / "ok", audit=True, progress=False).audit.sorted_rows()}
    assert rows[("atlas_a2", "tik_index_low")].verdict == "confirmed"
    assert rows[("atlas_a2", "tik_vc_dtypes")].verdict == "confirmed"
    (tmp_path / "ran").mkdir()
    write_dump(tmp_path / "ran" / "a.npz", bad, ub_after=bad.ub)
    rows = {(r.chip, r.assumption): r
            for r in verify(tmp_path / "ran", audit=True, progress=False).audit.sorted_rows()}
    assert rows[("atlas_a2", "tik_vc_dtypes")].verdict.startswith("REFUTED")


@pytest.mark.parametrize("compare", ["signed", "unsigned"])
def test_int16_vcmax_vcmin_on_the_vector_core(compare):
    """int16 (the Vector Core's TIK vec_reduce_max/min pages): signed by default; the audit's
    alternative ``tik_vc_int16_compare = "unsigned"`` reads the bits as uint16 (the TIK
    source's reinterpret_cast), worked out by hand: -5 is 0xFFFB, the largest uint16 here."""
    prof = ar.chip("atlas_inference_vector_core")
    chip = prof if compare == "signed" else dataclasses.replace(
        prof, id="vc~unsigned", facts={**prof.facts, "tik_vc_int16_compare": "unsigned"})
    x = np.zeros(256, np.int16)
    x[3], x[7] = -5, 3                              # repeat 0
    x[128 + 1], x[128 + 2] = 0x7FFF, -32768         # repeat 1
    ub = ub_with(x, np.int16)
    want = {("vcmax", "signed"): [(3, 7), (0x7FFF, 1)],
            ("vcmax", "unsigned"): [(-5, 3), (-32768, 2)],
            ("vcmin", "signed"): [(-5, 3), (-32768, 2)],
            ("vcmin", "unsigned"): [(0, 0), (0, 0)]}
    for api in ("vcmax", "vcmin"):
        for index_low in (False, True):
            a = run("jax", api, ub, "int16", 128, 2, 1, 1, 8, 0, index_low, chip=chip)
            same(a, run("oracle", api, ub, "int16", 128, 2, 1, 1, 8, 0, index_low, chip=chip))
            w = dst_view(a, "int16", 4)
            vi, ii = (1, 0) if index_low else (0, 1)
            got = [(int(w[2 * r + vi]), int(w.view(np.uint16)[2 * r + ii])) for r in range(2)]
            assert got == want[(api, compare)], (api, compare, index_low)
