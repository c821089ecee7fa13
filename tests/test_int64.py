"""8-byte integers: int64 / uint64 in the Ascend 950 level-2 count form (ReduceSum.md /
ReduceMax.md / ReduceMin.md 数据类型 id10: "int64_t、uint64_t仅支持tensor前n个数据计算接口";
docs/SEMANTICS.md §N "8-byte integers").

Expected values come from Python integers (sums modulo 2^64, ``max`` / ``min`` and
``list.index`` for the first extreme) and from the scalar oracle, which shares no code with
the JAX path. Every call uses counts in 65..128 (one compiled table height, 4 rows of 32).
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ascend_ref as ar
from ascend_ref import oracle
from ascend_ref.case import Case, run_oracle
from ascend_ref.constraints import Code
from ascend_ref.fuzz import compare
from ascend_ref.fuzz.generate import fill_ub

CHIP = "ascend950"
B64 = ("int64", "uint64")
DST, SRC, TMP = 4096, 0, 4160          # dst 16-byte aligned (the [value, index] slot)
SENTINEL = 0x5A


def T(addr, dtype, size):
    return ar.Tensor(addr, dtype, size)


def ub_with(values, dtype):
    ub = np.full(8192, SENTINEL, np.uint8)
    raw = np.asarray(values, dtype).view(np.uint8)
    ub[:raw.size] = raw
    return ub


def run(impl, api, ub, dtype, n, *extra, chip=CHIP):
    """``api``'s count form on ``impl`` (``"jax"`` / ``"oracle"``): the UB after the call,
    or the error code."""
    args = (T(DST, dtype, 2), T(SRC, dtype, 128), T(TMP, dtype, 4), n) + extra
    if impl == "oracle":
        try:
            return np.asarray(getattr(oracle, api)(np.asarray(ub), *args, chip=chip).ub)
        except oracle.OracleError as e:
            return e.code
    try:
        return np.asarray(getattr(ar.ascendc, api)(ub, *args, chip=chip))
    except ar.ConstraintError as e:
        return e.code


def wrap(v, dtype):
    """A Python int as the dtype's value modulo 2^64."""
    v %= 2**64
    return v - 2**64 if dtype == "int64" and v >= 2**63 else v


def adversarial(dtype, n, seed):
    """Extremes, carries across the 32-bit boundary and ties, mixed with random words."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    pool = [info.min, info.max, info.min + 1, info.max - 1, 0, 1, 2**32 - 1, 2**32,
            2**32 + 1, 2**31, (1 << 63) - 2**32 if info.min < 0 else 2**63]
    if info.min < 0:
        pool += [-1, -(2**32), -(2**32) + 1]
    pick = rng.integers(0, len(pool) + 1, n)
    rand = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return [int(rand[k]) if p == len(pool) else pool[p] for k, p in enumerate(pick)]


# ------------------------------------------------------------------ hand examples ---------

@pytest.mark.parametrize("dtype", B64)
def test_store_and_load_round_trip(dtype):
    x = np.array([np.iinfo(dtype).min, np.iinfo(dtype).max, 2**32, 7], dtype)
    with pytest.raises(ar.ConstraintError) as e:          # numpy's default int: by name only
        ar.store(ar.new_ub(size=64), 8, x)
    assert e.value.code == Code.BAD_ARGUMENT and f"dtype='{dtype}'" in str(e.value)
    ub = ar.store(ar.new_ub(size=64), 8, x, dtype=dtype)
    assert ar.load(ub, 8, dtype, 4).tolist() == x.tolist()
    ub = ar.store(ub, 40, [1, 2**32 + 3], dtype=dtype + "_t")        # alias, converted
    assert ar.load(ub, 40, dtype, 2).tolist() == [1, 2**32 + 3]
    assert T(0, dtype + "_t", 4).dtype == dtype and T(0, dtype, 4).nbytes == 32


@pytest.mark.parametrize("impl", ["jax", "oracle"])
@pytest.mark.parametrize("dtype, values, want", [
    ("uint64", [2**32 - 1, 1] + [0] * 98, 2**32),                     # carry into hi
    ("uint64", [2**64 - 1, 1] + [0] * 98, 0),                         # wraps at 2^64
    ("uint64", [2**64 - 1] * 100, 2**64 - 100),
    ("int64", [2**63 - 1, 1] + [0] * 98, -(2**63)),                   # INT64_MAX + 1 wraps
    ("int64", [-(2**63), -1] + [0] * 98, 2**63 - 1),
    ("int64", [-(2**32)] * 3 + [2**32 - 1] * 3 + [0] * 94, -3),      # borrow across words
])
def test_sum_by_hand(impl, dtype, values, want):
    got = run(impl, "reduce_sum", ub_with(values, dtype), dtype, len(values))
    assert got[DST:DST + 8].view(dtype)[0] == want
    assert (got[DST + 8:DST + 16] == SENTINEL).all()                  # only dst[0] written


@pytest.mark.parametrize("impl", ["jax", "oracle"])
def test_extremes_compare_hi_then_lo_by_signedness(impl):
    """int64: hi word signed (-1 = 0xFFFF_FFFF_FFFF_FFFF is below 0); uint64 unsigned (2^63
    above 2^63 - 1); equal hi words compare on lo; ties give the smallest index, stored as a
    uint32 followed by 4 zero bytes (dav_3510 ReduceB64IndexTemplate)."""
    vals = [5, 2**32 + 1, -1, 2**32 + 7, 2**32 + 7, 0, -(2**32) - 1, -(2**32) - 1] + [3] * 92
    ub = ub_with(vals, "int64")
    got = run(impl, "reduce_max", ub, "int64", 100, True)
    assert got[DST:DST + 16].view("int64").tolist() == [2**32 + 7, 3]
    got = run(impl, "reduce_min", ub, "int64", 100, True)
    assert got[DST:DST + 16].view("int64").tolist() == [-(2**32) - 1, 6]
    assert got[DST + 12:DST + 16].tolist() == [0, 0, 0, 0]
    uvals = [2**63 - 1, 2**63, 2**63, 0xFFFFFFFF, 2**32] + [1] * 95
    ub = ub_with(uvals, "uint64")
    got = run(impl, "reduce_max", ub, "uint64", 100, True)
    assert got[DST:DST + 16].view("uint64").tolist() == [2**63, 1]
    got = run(impl, "reduce_min", ub, "uint64", 100, False)
    assert got[DST:DST + 8].view("uint64").tolist() == [1]
    assert (got[DST + 8:DST + 16] == SENTINEL).all()                  # no index: one word


def test_sharedtmpbuffer_any_size_untouched():
    """方式三 (ReduceSum, "int64_t、uint64_t采用方式三") and 950's "无需使用sharedTmpBuffer"
    (ReduceMax / ReduceMin): a 1-element buffer is accepted and keeps its bytes."""
    ub = ub_with(list(range(100)), "uint64")
    for api, extra in (("reduce_sum", ()), ("reduce_max", (True,)), ("reduce_min", (True,))):
        out, info = getattr(ar.ascendc, api)(ub, T(DST, "uint64", 2), T(SRC, "uint64", 128),
                                             T(TMP, "uint64", 1), 100, *extra, chip=CHIP,
                                             return_info=True)
        out = np.asarray(out)
        assert (out[TMP:TMP + 8] == SENTINEL).all() and not np.asarray(info.undefined).any()
    assert int(np.asarray(out)[DST:DST + 16].view("uint64")[0]) == 0


@pytest.mark.parametrize("impl", ["jax", "oracle"])
def test_saturating_alternative(impl):
    """The audit's counterfactual ``int64_sum_overflow = "saturate"``: every add clamped, in
    dav_3510's order (element k into accumulator k % 64, then a tree of the 64). [MAX, 63
    zeros, 1, MIN, MIN, 0 ...]: element 64 (the 1) meets MAX in accumulator 0; modulo 2^64
    (the default) the same data gives its Python-int sum wrapped."""
    vals = [2**63 - 1] + [0] * 63 + [1, -(2**63), -(2**63)] + [0] * 33
    if impl == "jax":
        prof = ar.chip(CHIP)
        alt = dataclasses.replace(prof, id="ascend950~sat",
                                  facts={**prof.facts, "int64_sum_overflow": "saturate"})
    else:
        prof = oracle._products.PRODUCTS[CHIP]
        alt = dataclasses.replace(prof, id="ascend950~sat", int64_sum_overflow="saturate")
    ub = ub_with(vals, "int64")
    got = run(impl, "reduce_sum", ub, "int64", 100, chip=alt)
    # accumulators: acc0 = clamp(MAX + 1) = MAX, acc1 = MIN, acc2 = MIN; tree of 64 lanes:
    # (acc0 + acc1) = -1, (acc2 + 0) = MIN, then -1 + MIN clamps to MIN
    assert got[DST:DST + 8].view("int64")[0] == -(2**63)
    got = run(impl, "reduce_sum", ub, "int64", 100)
    assert got[DST:DST + 8].view("int64")[0] == wrap(sum(vals), "int64")


# ------------------------------------------------------------------ rejections ------------

@pytest.mark.parametrize("impl", ["jax", "oracle"])
def test_rejections(impl):
    ub = ub_with([1] * 100, "int64")
    # a product whose page lists half / float only
    assert run(impl, "reduce_sum", ub, "int64", 100, chip="atlas_a2") == Code.DTYPE_UNSUPPORTED
    # dst 16-byte aligned for [value, index]; 8 without index
    args = (T(DST + 8, "int64", 2), T(SRC, "int64", 128), T(TMP, "int64", 4), 100)
    if impl == "jax":
        with pytest.raises(ar.ConstraintError) as e:
            ar.ascendc.reduce_max(ub, *args, True, chip=CHIP)
        assert e.value.code == Code.ALIGN and "16 bytes" in str(e.value)
        ar.ascendc.reduce_max(ub, *args, False, chip=CHIP)
        with pytest.raises(ar.ConstraintError) as e:             # integers never saturate
            ar.ascendc.reduce_sum(ub, *args, chip=CHIP, saturate=True)
        assert e.value.code == Code.SATURATE_DTYPE
        with pytest.raises(ar.ConstraintError) as e:             # dst of another type
            ar.ascendc.reduce_sum(ub, T(DST, "uint64", 2), *args[1:], chip=CHIP)
        assert e.value.code == Code.DTYPE_MISMATCH
    else:
        with pytest.raises(oracle.OracleError) as o:
            oracle.reduce_max(ub, *args, True, chip=CHIP)
        assert o.value.code == Code.ALIGN
    # count past the UB: 253952 / 8 elements
    big = ar.chip(CHIP).ub_bytes // 8
    assert run(impl, "reduce_min", ub, "int64", big + 1) == Code.REPEAT_RANGE


def test_count_limit_message_names_the_8_byte_range():
    ub = ar.new_ub(CHIP)
    n = ar.chip(CHIP).ub_bytes // 8
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.reduce_min(ub, T(DST, "int64", 2), T(SRC, "int64", 128), T(TMP, "int64", 4),
                              n + 1, chip=CHIP)          # test_rejections' compiled kernel
    low = 1 if ar.chip(CHIP).zero_repeat == "error" else 0     # count 0: the zero rule
    assert e.value.code == Code.REPEAT_RANGE and f"[{low}, {n}]" in str(e.value)


# ------------------------------------------------------------------ differential ----------

@pytest.mark.parametrize("dtype", B64)
def test_differential_against_the_oracle(dtype):
    """Adversarial data (extremes, 32-bit carries, ties), counts 65..128, every API, with
    and without calIndex: the JAX path and the oracle write the same bytes."""
    for seed, n in enumerate((65, 96, 97, 127, 128)):
        ub = ub_with(adversarial(dtype, 128, seed), dtype)
        vals = ub[:n * 8].view(dtype).tolist()
        for api, extra in (("reduce_sum", ()), ("reduce_max", (True,)),
                           ("reduce_min", (False,))):
            j, o = run("jax", api, ub, dtype, n, *extra), run("oracle", api, ub, dtype, n, *extra)
            assert np.array_equal(j, o), (api, seed, n)
        got = run("jax", "reduce_sum", ub, dtype, n)
        assert got[DST:DST + 8].view(dtype)[0] == wrap(sum(vals), dtype)
        got = run("jax", "reduce_max", ub, dtype, n, True)
        assert got[DST:DST + 16].view(dtype).tolist() == [max(vals), vals.index(max(vals))]


def test_run_cases_and_fuzz_values_agree_with_the_oracle():
    """The batched path (:func:`ascend_ref.run_cases`) over fuzz-drawn UBs (fill_ub: extremes,
    carries, ties) gives the oracle's outcome."""
    cases = []
    for k, (api, dt, opt) in enumerate([("reduce_sum_count", "int64", None),
                                        ("reduce_sum_count", "uint64", None),
                                        ("reduce_max_count", "uint64", True),
                                        ("reduce_min_count", "int64", True)]):
        for j, kind in enumerate(("specials", "saturating", "ties")):
            cases.append(Case(api, CHIP, dt, opt, 32, {"repeat": 70 + 20 * j},
                              {"dst": (DST, 2), "src": (SRC, 128), "work_tensor": (TMP, 4)},
                              fill_ub(8192, dt, kind, 10 * k + j)))
    for c, got in zip(cases, ar.run_cases(cases)):
        assert compare.diff(got, run_oracle(c)) is None, (c.api, c.dtype, c.params)


def test_run_batch_count_form_agrees_with_the_oracle():
    """:func:`ascend_ref.run_batch` takes the count form (no stride parameter: the source is
    gathered) for 8-byte types: per-case counts, each row as the oracle computes it."""
    ubs = np.stack([ub_with(adversarial("uint64", 128, 40 + b), "uint64") for b in range(4)])
    counts = np.array([65, 90, 127, 128])
    for api, kw in (("reduce_sum_count", {}), ("reduce_max_count", {"cal_index": True})):
        out, st = ar.run_batch(api, ubs, chip=CHIP, dtype="uint64", mask=32,
                               dst=(DST, 2), src=(SRC, 128), work_tensor=(TMP, 4),
                               repeat=counts, **kw)
        assert st.tolist() == [0] * 4
        for b, n in enumerate(counts):
            want = run("oracle", api.replace("_count", ""), ubs[b], "uint64", int(n),
                       *((True,) if kw else ()))
            assert np.array_equal(out[b], want), (api, b)

@pytest.mark.parametrize("stacked", [False, True])
def test_dumps_round_trip_and_catch_a_flipped_hi_word(tmp_path, stacked):
    """Dumps (format version 1 and the stacked version 2) of 8-byte cases verify; a flipped
    bit in a result's hi word (bytes 4..7 of dst[0]) is reported."""
    from ascend_ref.verify import dumps_from_cases, verify

    cases = [Case(api, CHIP, dt, opt, 32, {"repeat": 100},
                  {"dst": (DST, 2), "src": (SRC, 128), "work_tensor": (TMP, 4)},
                  fill_ub(8192, dt, "specials", k))
             for k, (api, dt, opt) in enumerate([("reduce_sum_count", "int64", None),
                                                 ("reduce_max_count", "uint64", True),
                                                 ("reduce_min_count", "int64", False)])]
    outs = ar.run_cases(cases)
    dumps_from_cases(cases, tmp_path / "good", outcomes=outs, per_file=3, stacked=stacked)
    r = verify(tmp_path / "good", progress=False)
    assert r.ok and r.cases == 3 and r.agreed == 3
    bad = [dataclasses.replace(o, ub=o.ub.copy()) for o in outs]
    bad[1].ub[DST + 6] ^= 0x10
    from ascend_ref.verify import write_dumps

    (tmp_path / "bad").mkdir()
    write_dumps(tmp_path / "bad" / "d.npz", cases, [o.ub for o in bad], stacked=stacked)
    r = verify(tmp_path / "bad", progress=False)
    assert not r.ok and r.cases == 3 and r.agreed == 2


def test_audit_settles_int64_sum_overflow(tmp_path):
    """``verify --audit``: a dump whose sum wraps confirms ``int64_sum_overflow = "wrap"``;
    one that holds the clamped sum (the counterfactual's bytes) refutes it."""
    from ascend_ref.verify import verify, write_dump

    vals = [2**63 - 1] * 3 + [0] * 97              # wraps: 3 MAX = MAX - 2 (mod 2^64)
    c = Case("reduce_sum_count", CHIP, "int64", None, 32, {"repeat": 100},
             {"dst": (DST, 2), "src": (SRC, 128), "work_tensor": (TMP, 4)},
             ub_with(vals, "int64"))
    (out,) = ar.run_cases([c])
    assert out.ub[DST:DST + 8].view("int64")[0] == wrap(sum(vals), "int64")
    write_dump(tmp_path / "wrap.npz", c, ub_after=out.ub)
    r = verify(tmp_path, audit=True, progress=False)
    row = {(x.chip, x.assumption): x for x in r.audit.sorted_rows()}[(CHIP, "int64_sum_overflow")]
    assert r.ok and row.exercised >= 1 and row.verdict == "confirmed", row
    clamped = out.ub.copy()
    clamped[DST:DST + 8] = np.array([2**63 - 1], "int64").view(np.uint8)
    (tmp_path / "wrap.npz").unlink()
    write_dump(tmp_path / "sat.npz", c, ub_after=clamped)
    r = verify(tmp_path, audit=True, progress=False)
    row = {(x.chip, x.assumption): x for x in r.audit.sorted_rows()}[(CHIP, "int64_sum_overflow")]
    assert not r.ok and row.verdict.startswith("REFUTED") and row.alternative == 1, row


def test_explain_shows_8_byte_results_exactly():
    """explain: 64-bit values given as Python ints stay exact (no float64 on the way), the
    result words are shown as one 8-byte field each (value, then index 8 bytes later)."""
    from ascend_ref.explain import access_map, make_case

    low = -(2**63) + 1                      # 63 significant bits: no float64 holds it
    c = make_case("reduce_min_count", chip=CHIP, dtype="int64", repeat=3, option=True,
                  data=[2**62 + 1, low, low])
    text = access_map(c).text()
    dst = c.tensors["dst"][0]
    assert f"value={low} @{dst}, index=1 @{dst + 8}" in text


def test_explain_and_the_fuzzer_give_8_byte_counts_their_whole_source():
    """The count form reads count elements of 8 bytes: explain's default source and the
    campaign's valid draws hold them (both sized it at 4 bytes an element: the call was
    TENSOR_BOUNDS, and valid-tagged fuzz cases tested the bounds check, not the sums). The
    top of the count range a valid draw reaches is what fits this UB with dst and the work
    tensor (the static top, 262144 / 8, was drawn: REPEAT_RANGE or UB_BOUNDS)."""
    from ascend_ref.explain import access_map, make_case
    from ascend_ref.fuzz.generate import RngDraw, draw_case

    counts = [i.name for i in ar.registry.all() if i.kernel.count_form]
    assert len(counts) == 3
    for api in counts:
        for dtype in ("int64", "uint64"):
            for n in (1, 100, 4000):
                c = make_case(api, chip=CHIP, dtype=dtype, repeat=n)
                assert c.tensors["src"][1] >= n and access_map(c).error is None, (api, n)
                assert run_oracle(c).code is None, (api, dtype, n)
    drawn, tops = 0, []
    for k in range(300):
        c = draw_case(RngDraw(11, k), apis=counts, chips=[CHIP], max_ub=1 << 16)
        if c.dtype in ("int64", "uint64") and c.tags["validity"] == "valid":
            drawn += 1
            tops += [c] if c.tags["repeat_class"] == "max" else []
            assert c.tensors["src"][1] >= c.params["repeat"], c.describe()
            assert run_oracle(c).code is None, c.describe()
    assert drawn >= 20, drawn
    assert any(c.params["repeat"] > 30000 for c in tops), [c.describe() for c in tops]


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.data())
def test_hypothesis_differential_wide_counts(data):
    """Counts 1..4096 (up to 128 rows), both dtypes and every API, values drawn from the
    extremes / 32-bit carry edges or at random, on both overflow choices: the JAX path and
    the oracle write the same bytes."""
    dtype = data.draw(st.sampled_from(B64))
    info = np.iinfo(dtype)
    n = data.draw(st.integers(1, 4096))
    edges = st.sampled_from([info.min, info.max, 0, 1, 2**32 - 1, 2**32, info.max - 1])
    vals = data.draw(st.lists(st.one_of(edges, st.integers(int(info.min), int(info.max))),
                              min_size=n, max_size=n))
    api, extra = data.draw(st.sampled_from([("reduce_sum", ()), ("reduce_max", (True,)),
                                            ("reduce_max", (False,)), ("reduce_min", (True,))]))
    sat = data.draw(st.booleans()) and api == "reduce_sum"
    ub = np.zeros(65536, np.uint8)
    ub[:n * 8] = np.array(vals, dtype).view(np.uint8)
    args = (T(40960, dtype, 2), T(0, dtype, n), T(41024, dtype, 4), n) + extra
    if sat:
        pj, po = ar.chip(CHIP), oracle._products.PRODUCTS[CHIP]
        cj = dataclasses.replace(pj, id="ascend950~sat",
                                 facts={**pj.facts, "int64_sum_overflow": "saturate"})
        co = dataclasses.replace(po, id="ascend950~sat", int64_sum_overflow="saturate")
    else:
        cj = co = CHIP
    j = np.asarray(getattr(ar.ascendc, api)(ub, *args, chip=cj))
    o = np.asarray(getattr(oracle, api)(ub, *args, chip=co).ub)
    assert np.array_equal(j, o)
    if api == "reduce_sum" and not sat:
        assert j[40960:40968].view(dtype)[0] == wrap(sum(vals), dtype)
