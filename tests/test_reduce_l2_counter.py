"""Counter mask mode for the level-2 high-dimensional ReduceSum / ReduceMax / ReduceMin --
issue 14 item 4, docs/SEMANTICS.md §R.

The rule (掩码/概述.md table 3, 接口内设置Mask.md "高维切分：连续计算"): with ``ar.CounterMask(n)``
as ``mask`` the call runs ``R = ceil(n / L)`` repeats at the caller's srcRepStride, repeat
``k`` over its first ``min(L, n - k*L)`` lanes, ``repeat_time`` ignored. ReduceSum is 方式二
over those repeats, on Ascend 950 方式三 for ``L < n <= 4L`` (ReduceSum.md: "Counter模式且数据量在
256~1024字节之间采用方式三；否则采用方式二"); ReduceMax / ReduceMin's index is the element offset
(A2 family) or the position ``r*L + lane`` (950, Kirin: ``reduce_l2_counter_index``, assumed).

Expected values come from the oracle (its own loops, ``ascend_ref/oracle/_api.py``), from
counting by hand (ones, one planted maximum), and from the count form (a separate
declaration: the count form *is* the counter-mode call at srcRepStride 8 on 950).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import oracle, registry
from ascend_ref.batch import run_cases
from ascend_ref.case import Case, Outcome, run_oracle
from ascend_ref.chips import chip as get_chip
from ascend_ref.constraints import Code, ConstraintError
from ascend_ref.oracle._products import PRODUCTS
from test_counter_mask import adversarial as _adversarial

F16, F32 = "float16", "float32"
SUPPORTED = ["ascend950", "atlas_a2", "atlas_a3", "atlas_200i_500_a2", "atlas_inference_aicore",
             "kirin_x90", "kirin_9030"]
SRC, DST, TMP, UB = 0, 65536, 66560, 98304


def lanes(dtype):
    return 256 // np.dtype(dtype).itemsize


def adversarial(dtype, n, rng):
    """NaN, +-0, +-inf, subnormals, ties and large values among normal data (one in ten)."""
    return _adversarial(dtype, n, rng, rate=0.1)


def make_case(api, chip, dtype, n, *, srs=8, repeat=1, cal_index=False, seed=0, data=None,
              tmp=None):
    rng = np.random.default_rng(seed)
    s = np.dtype(dtype).itemsize
    ub = np.zeros(UB, np.uint8)
    x = adversarial(dtype, (DST - SRC) // s, rng) if data is None else data
    ub[SRC:SRC + x.nbytes] = x.view(np.uint8)
    ub[DST:] = rng.integers(0, 256, UB - DST, dtype=np.uint8)      # dst / tmp start as garbage
    option = None if api == "reduce_sum" else bool(cal_index)
    work = (UB - TMP) // s if tmp is None else tmp
    return Case(api, chip, dtype, option, ar.CounterMask(n),
                {"repeat": repeat, "src_rep_stride": srs},
                {"dst": (DST, 16), "src": (SRC, (DST - SRC) // s), "work_tensor": (TMP, work)},
                ub)


def same(a: Outcome, b: Outcome) -> None:
    assert a.code == b.code, (a, b)
    if a.code is not None:
        return
    assert (a.undefined == b.undefined).all(), np.flatnonzero(a.undefined != b.undefined)[:8]
    keep = ~a.undefined
    assert (a.ub[keep] == b.ub[keep]).all(), np.flatnonzero((a.ub != b.ub) & keep)[:8]
    assert (a.written == b.written).all()


def tensors(dtype, n_src=None):
    s = np.dtype(dtype).itemsize
    name = "half" if dtype == F16 else "float"
    return (ar.Tensor(DST, name, 16), ar.Tensor(SRC, name, n_src or (DST - SRC) // s),
            ar.Tensor(TMP, name, (UB - TMP) // s))


def ub_of(chip, x):
    return ar.store(ar.new_ub(chip), 0, x)


# ------------------------------------------------------------------ counted by hand ----------

ONES = ((300, 8, 1000), (500, 16, 0), (400, 8, 1))


@pytest.mark.parametrize("chip,calls", [("ascend950", ONES), ("atlas_a2", ONES),
                                        ("kirin_x90", ONES[:1]), ("atlas_200i_500_a2", ONES[:1])]
                         + [pytest.param(c, ((100, 8, 1), (200, 16, 0), (513, 8, 7), (2000, 8, 1))
                                         + ONES, marks=pytest.mark.slow) for c in SUPPORTED])
def test_ones_sum_to_the_count(chip, calls):
    """n ones sum to n on every path (one repeat, 方式三's three ranges, 方式二 past 4L), at
    srcRepStride 8 and 16 (the gaps hold 1000, never read), whatever repeat_time says."""
    dst, src, tmp = tensors(F16, 8192)
    for n, srs, rt in calls:
        # a repeat reads 128 halves every srs blocks (16 halves a block): the rest is a gap
        x = np.where(np.arange(8192) % (16 * srs) < 128, 1, 1000).astype(np.float16)
        ub = ub_of(chip, x)
        out = ar.ascendc.reduce_sum(ub, dst, src, tmp, ar.CounterMask(n), rt, srs, chip=chip)
        assert float(ar.load(out, DST, "float16", 1)[0]) == n, (n, srs)


@pytest.mark.parametrize("chip,index", [("atlas_a2", 530), ("atlas_inference_aicore", 530),
                                        ("ascend950", 274), ("kirin_x90", 274)])
def test_max_index_offset_or_position(chip, index):
    """One maximum at element 530 = repeat 2, lane 18 at srcRepStride 16 (256 halves a
    repeat): its offset from src is 530, its position among the counted elements 2*128 + 18
    = 274 (the product's reduce_l2_counter_index)."""
    x = np.full(4096, 0.5, np.float16)
    x[530] = 2.0
    x[700] = 4.0                      # repeat 2, lane 188: not read (lanes 0..127 only)
    dst, src, tmp = tensors(F16, 4096)
    out = ar.ascendc.reduce_max(ub_of(chip, x), dst, src, tmp, ar.CounterMask(1000), 1, 16, True,
                                chip=chip)
    r = ar.load(out, DST, "float16", 2)
    assert float(r[0]) == 2.0 and int(r.view(np.uint16)[1]) == index
    res = oracle.reduce_max(np.asarray(ub_of(chip, x)), dst, src, tmp, ar.CounterMask(1000), 1,
                            16, True, chip=chip)
    assert bytes(res.ub[DST:DST + 4]) == bytes(np.asarray(out)[DST:DST + 4])


def test_partial_last_repeat_takes_only_its_lanes():
    """n = 2L + 5: the third repeat reads lanes 0..4; a minimum at lane 5 is not seen."""
    x = np.full(4096, 1.0, np.float32)
    x[2 * 64 + 5] = -7.0
    x[2 * 64 + 4] = -3.0
    dst, src, tmp = tensors(F32, 4096)
    for chip in ("atlas_a2", "ascend950"):
        out = ar.ascendc.reduce_min(ub_of(chip, x), dst, src, tmp, ar.CounterMask(2 * 64 + 5),
                                    1, 8, True, chip=chip)
        v = ar.load(out, DST, "float32", 2)
        assert float(v[0]) == -3.0 and int(v.view(np.uint32)[1]) == 2 * 64 + 4


# ------------------------------------------------------------------ the count form ------------

@pytest.mark.slow        # both JAX paths share reduce.merge_sum: the oracle tests are the
def test_950_counter_equals_the_count_form():      # independent ones in the default run
    """On Ascend 950 the count form runs in counter mode (ReduceSum.md id30; dav_3510 calls
    the same DispatchReduceSumCounterMode with srcRepStride 8): the high-dimensional call with
    CounterMask(n) and srcRepStride 8 gives the count form's bits (a separate declaration,
    ascendc/reduce_count.py), adversarial data, every range of n (one repeat, 方式三 x3,
    方式二); ReduceMax with its index too."""
    check_count_form_equivalence((L16 + 1, 3 * L16 + 1, 4 * L16 + 1), ("reduce_sum",))


L16 = 128


@pytest.mark.slow
def test_950_counter_equals_the_count_form_everywhere():
    L = L16
    check_count_form_equivalence((L - 3, L + 1, 2 * L + 9, 3 * L + 1, 4 * L, 4 * L + 1,
                                  7 * L + 3), ("reduce_sum", "reduce_max"))


def check_count_form_equivalence(counts, apis):
    L = L16
    pairs = []
    for k, n in enumerate(counts):
        for api in apis:
            hi = make_case(api, "ascend950", F16, n, cal_index=True, seed=k)
            count = dataclasses.replace(hi, api=f"{api}_count", mask=L, params={"repeat": n})
            pairs.append((hi, count))
    got = run_cases([c for pair in pairs for c in pair])
    for k, (hi, _) in enumerate(pairs):
        a, b = got[2 * k], got[2 * k + 1]
        w = 4 if hi.api == "reduce_max" else 2
        assert a.code is None and b.code is None
        assert bytes(a.ub[DST:DST + w]) == bytes(b.ub[DST:DST + w]), (hi.api, hi.mask)


def test_counter_dumps_round_trip_through_verify(tmp_path):
    """Counter-mode cases as a device's dumps (the reference's own results, mask
    {"counter": n}) verify as agreeing; a flipped result byte is a mismatch."""
    from ascend_ref.verify import dumps_from_cases, verify

    cases = [make_case("reduce_sum", "ascend950", F16, 300, srs=16),
             make_case("reduce_max", "atlas_a2", F32, 150, srs=3, cal_index=True)]
    outs = run_cases(cases)
    assert all(o.code is None for o in outs)
    dumps_from_cases(cases, tmp_path / "d", outcomes=outs)
    r = verify(tmp_path / "d", progress=False)
    assert r.ok and r.cases == 2 and r.agreed == 2
    outs[0].ub[DST] ^= 1
    dumps_from_cases(cases[:1], tmp_path / "bad", outcomes=outs[:1])
    assert not verify(tmp_path / "bad", progress=False).ok


# ------------------------------------------------------------------ differential: oracle -----

COUNTS = {F16: (1, 127, 129, 256, 300, 385, 512, 513, 1100), F32: (1, 65, 128, 150, 256, 257, 700)}
STRIDES = (8, 3, 0, 16, 9)


def seeded(api, dtype, chips, cal_index=False):
    out = []
    for chip in chips:
        if dtype not in get_chip(chip).dtypes(api):
            continue
        for n in COUNTS[dtype]:
            k = len(out)
            out.append(make_case(api, chip, dtype, n, srs=STRIDES[k % len(STRIDES)],
                                 repeat=(k * 37) % 5, cal_index=cal_index, seed=k))
    return out


@pytest.mark.parametrize("api,dtype,ci", [("reduce_sum", F16, False), ("reduce_sum", F32, False),
                                          ("reduce_max", F16, True), ("reduce_min", F32, False)])
def test_counter_matches_oracle_seeded(api, dtype, ci):
    cases = seeded(api, dtype, SUPPORTED, ci)
    assert len(cases) >= 30
    for got, c in zip(run_cases(cases), cases):
        same(got, run_oracle(c))


@pytest.mark.slow
@pytest.mark.parametrize("api,dtype,ci", [("reduce_max", F32, True), ("reduce_max", F16, False),
                                          ("reduce_min", F16, True), ("reduce_min", F32, True)])
def test_counter_matches_oracle_seeded_more(api, dtype, ci):
    cases = seeded(api, dtype, SUPPORTED, ci)
    for got, c in zip(run_cases(cases), cases):
        same(got, run_oracle(c))


def test_the_alternative_choices_match_the_oracle():
    """The audit's counterfactuals: reduce_l2_counter "undefined" (dst and buffer undefined),
    the other index rule, Kirin with 950's 方式三 -- the JAX path and the oracle agree on each."""
    cases = []
    for chip, field, value, api, ci in (
            ("atlas_a2", "reduce_l2_counter", "undefined", "reduce_max", True),
            ("atlas_a2", "reduce_l2_counter", "undefined", "reduce_sum", False),
            ("atlas_a2", "reduce_l2_counter_index", "position", "reduce_max", True),
            ("ascend950", "reduce_l2_counter_index", "offset", "reduce_max", True),
            ("kirin_x90", "reduce_sum_counter_mode", "merge", "reduce_sum", False)):
        prof = get_chip(chip)
        alt = dataclasses.replace(prof, id=f"{chip}~{field}={value}",
                                  facts={**prof.facts, field: value})
        orc = dataclasses.replace(PRODUCTS[chip], **{field: value})
        for n, srs in ((300, 16), (129, 3), (500, 8)):
            c = make_case(api, chip, F16, n, srs=srs, cal_index=ci, seed=n)
            cases.append((dataclasses.replace(c, chip=alt), dataclasses.replace(c, chip=orc)))
    got = run_cases([j for j, _ in cases])
    for out, (_, oc) in zip(got, cases):
        same(out, run_oracle(oc))


# ------------------------------------------------------------------ rules --------------------

def test_rejections_name_api_parameter_and_product():
    x = np.ones(4096, np.float16)
    dst, src, tmp = tensors(F16, 4096)
    # Atlas training has ReduceSum but no SetMaskCount: MASK_MODE, on both paths
    with pytest.raises(ConstraintError) as e:
        ar.ascendc.reduce_sum(ub_of("atlas_training", x), dst, src, tmp, ar.CounterMask(300), 1, 8,
                              chip="atlas_training")
    assert e.value.code == Code.MASK_MODE
    msg = str(e.value)
    assert "reduce_sum" in msg and "mask" in msg and "atlas_training" in msg
    with pytest.raises(oracle.OracleError) as o:
        oracle.reduce_sum(np.asarray(ub_of("atlas_training", x)), dst, src, tmp,
                          ar.CounterMask(300), 1, 8, chip="atlas_training")
    assert o.value.code == Code.MASK_MODE
    # ... also with saturate=False, which training (saturate_only) rejects by a later, traced
    # rule: the oracle had reported SATURATE_DTYPE (the default campaign's case 1306)
    with pytest.raises(ConstraintError) as e:
        ar.ascendc.reduce_sum(ub_of("atlas_training", x), dst, src, tmp, ar.CounterMask(300), 1, 8,
                              chip="atlas_training", saturate=False)
    assert e.value.code == Code.MASK_MODE
    with pytest.raises(oracle.OracleError) as o:
        oracle.reduce_sum(np.asarray(ub_of("atlas_training", x)), dst, src, tmp,
                          ar.CounterMask(300), 1, 8, chip="atlas_training", saturate=False)
    assert o.value.code == Code.MASK_MODE
    # repeat_time is ignored but is an int32_t: BAD_ARGUMENT otherwise
    with pytest.raises(ConstraintError) as e:
        ar.ascendc.reduce_max(ub_of("atlas_a2", x), dst, src, tmp, ar.CounterMask(300), "1", 8,
                              chip="atlas_a2")
    assert e.value.code == Code.BAD_ARGUMENT


@pytest.mark.slow
def test_count_range_is_the_repeat_range():
    """ceil(n / L) repeats within the model's repeatTime range [.., L*L/4] (4096 half): L*4096
    elements at srcRepStride 0 work; one more is MASK_RANGE on both paths, never a clamp."""
    L = lanes(F16)
    top = L * L // 4
    ok = make_case("reduce_sum", "atlas_a2", F16, L * top, srs=0)
    bad = make_case("reduce_sum", "atlas_a2", F16, L * top + 1, srs=0)
    a, b = run_cases([ok, bad])
    same(a, run_oracle(ok))
    assert a.code is None
    assert b.code == run_oracle(bad).code == Code.MASK_RANGE


def test_zero_count_follows_the_zero_mask_rule():
    """CounterMask(0): A2 a NOP, 950 dst undefined (and ReduceSum's sharedTmpBuffer, as after
    any 方式二 call there; ReduceMax leaves it untouched), 200I/500 A2 MASK_ZERO."""
    cases = [make_case(api, chip, F16, 0, cal_index=True) for chip in
             ("atlas_a2", "ascend950", "atlas_200i_500_a2") for api in ("reduce_sum", "reduce_max")]
    got = run_cases(cases)
    for out, c in zip(got, cases):
        same(out, run_oracle(c))
    assert [o.code for o in got] == [None, None, None, None, Code.MASK_ZERO, Code.MASK_ZERO]
    assert not got[0].undefined.any() and (got[0].ub == cases[0].ub).all()
    dst, work = list(range(DST, DST + 32)), list(range(TMP, UB))   # 32 bytes, the rest
    assert np.flatnonzero(got[2].undefined).tolist() == dst + work      # 950 ReduceSum
    assert np.flatnonzero(got[3].undefined).tolist() == dst             # 950 ReduceMax


def test_tmp_size_counts_the_derived_repeats():
    """sharedTmpBuffer (方式二): DivCeil(firstMaxRepeat, epb) * epb with firstMaxRepeat = the
    repeats counter mode derives (the caller's repeatTime is ignored): n = 17 * 128 half is
    17 repeats -> 32 elements; 31 is WORK_SIZE. ReduceMax (calIndex): the page's formula with
    17 first-round repeats (48 + 16 = 64 elements). On 950 方式三 (L < n <= 4L) the buffer is unused: any size."""
    L = lanes(F16)
    cases = [make_case("reduce_sum", "atlas_a2", F16, 17 * L, tmp=32),
             make_case("reduce_sum", "atlas_a2", F16, 17 * L, tmp=31, repeat=100),
             make_case("reduce_max", "atlas_a2", F16, 17 * L, tmp=64, cal_index=True),
             make_case("reduce_max", "atlas_a2", F16, 17 * L, tmp=63, cal_index=True),
             make_case("reduce_sum", "ascend950", F16, 3 * L, tmp=0),
             make_case("reduce_sum", "ascend950", F16, 4 * L + 1, tmp=15),
             make_case("reduce_max", "ascend950", F16, 17 * L, tmp=0, cal_index=True)]
    got = run_cases(cases)
    assert [o.code for o in got] == [None, Code.WORK_SIZE, None, Code.WORK_SIZE, None,
                                     Code.WORK_SIZE, None]
    for out, c in zip(got, cases):
        same(out, run_oracle(c))
    # the buffer is undefined afterwards where used, untouched on 950's 方式三 path
    assert got[0].undefined[TMP:TMP + 64].all()
    assert not got[4].undefined[TMP:].any()


def test_index_limit_per_product():
    """A maximum in the 8th repeat at srcRepStride 600: its offset 7*9600 + 3 = 67203 passes
    65535 (INDEX_OVERFLOW on A2, "offset"); its position 7*128 + 3 = 899 does not (950)."""
    x = np.zeros(70000, np.float16)
    x[7 * 9600 + 3] = 1.0
    s = 2
    ub = np.zeros(196608, np.uint8)
    ub[:x.nbytes] = x.view(np.uint8)
    cases = []
    for chip in ("atlas_a2", "ascend950"):
        cases.append(Case("reduce_max", chip, F16, True, ar.CounterMask(8 * 128),
                          {"repeat": 1, "src_rep_stride": 600},
                          {"dst": (140032, 16), "src": (0, 70000),
                           "work_tensor": (140288, 2048)}, ub[:196608 // s * s].copy()))
    got = run_cases(cases)
    assert got[0].code == run_oracle(cases[0]).code == Code.INDEX_OVERFLOW
    same(got[1], run_oracle(cases[1]))
    assert got[1].ub[140032:140036].view(np.uint16).tolist() == [0x3C00, 899]


# ------------------------------------------------------------------ registers, tools ---------

def test_max_register_undefined_after_counter_mode():
    """GetReduceRepeatMaxMinSpr.md: "不支持获取归约接口使用Mask Counter模式时的结果"."""
    x = np.arange(512).astype(np.float16)
    dst, src, tmp = tensors(F16, 512)
    ub = ub_of("atlas_a2", x)
    _, info = ar.ascendc.reduce_max(ub, dst, src, tmp, ar.CounterMask(300), 1, 8, True,
                                    chip="atlas_a2", return_info=True)
    _, read = ar.ascendc.get_reduce_repeat_max_min_spr(info.spr, "half", chip="atlas_a2",
                                               return_info=True)
    assert not bool(read.value_defined)
    _, ospr = oracle.spr.reduce_max(oracle.spr.OracleSpr(), np.asarray(ub), dst, src, tmp,
                                    ar.CounterMask(300), 1, 8, True, chip="atlas_a2")
    assert ospr.maxmin[1] == oracle.spr.UNDEF


def test_declared_rules_and_explain():
    rules = [r.code for r in registry.lookup("reduce_sum").rules(None, F16)]
    assert Code.MASK_MODE in rules and Code.MASK_RANGE in rules
    ins = registry.lookup("reduce_max")
    assert "counter" in ins.kernel.mask_modes
    names = {f.name for f in ins.profile_fields}
    assert {"counter_mode", "reduce_l2_counter", "reduce_l2_counter_index"} <= names
    assert "reduce_sum_counter_mode" in {f.name for f in registry.lookup("reduce_sum").profile_fields}


def test_grad_counts_the_counted_elements():
    """ascend_ref.grad in counter mode: sized by the derived repeats; d sum / d x = 1 on the n
    counted elements (the last repeat's lanes past the count and the stride gaps: 0); the max
    passes its gradient to the winner, whose index is the product's (A2: offset)."""
    import jax
    import jax.numpy as jnp

    import ascend_ref.grad as g

    x = jnp.asarray(np.linspace(-1, 1, 1024).astype(np.float32))
    gsum = jax.grad(lambda v: g.reduce_sum(v, ar.CounterMask(150), 1, 16, chip="atlas_a2"))(x)
    want = np.zeros(1024, np.float32)
    for r, k in ((0, 64), (1, 64), (2, 22)):             # 150 = 64 + 64 + 22, 128 a repeat
        want[r * 128:r * 128 + k] = 1
    assert (np.asarray(gsum) == want).all()
    value, index = g.reduce_max(x, ar.CounterMask(150), 1, 16, True, chip="atlas_a2")
    assert int(index) == 2 * 128 + 21 and float(value) == float(x[2 * 128 + 21])


@pytest.mark.slow
def test_counter_matches_oracle_hypothesis():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from([("reduce_sum", False), ("reduce_max", True), ("reduce_min", False)]),
           st.sampled_from(SUPPORTED), st.sampled_from([F16, F32]), st.integers(0, 9 * 64),
           st.sampled_from(STRIDES), st.integers(0, 2**16))
    def check(api_ci, chip, dtype, n, srs, seed):
        api, ci = api_ci
        c = make_case(api, chip, dtype, n, srs=srs, cal_index=ci, seed=seed, repeat=seed % 7)
        same(run_cases([c], heights=())[0], run_oracle(c))

    check()


def test_messages_speak_of_the_counters_repeats_and_the_count():
    """In counter mode the caller's repeatTime is ignored: a too-small buffer names the
    repeats the count makes (it said 'for repeatTime 5' to a call that passed 99); the count
    form's TENSOR_BOUNDS says to reduce the count (it said 'repeat / strides / mask')."""
    ub = ar.new_ub("atlas_a2")
    d, s, w = ar.Tensor(2048, F16, 16), ar.Tensor(0, F16, 1000), ar.Tensor(4096, F16, 1)
    for api in ("reduce_max", "reduce_sum"):
        with pytest.raises(ar.ConstraintError) as e:
            getattr(ar.ascendc, api)(ub, d, s, w, ar.CounterMask(600), 99, 8, chip="atlas_a2")
        msg = str(e.value)
        assert e.value.code == Code.WORK_SIZE and "ceil(600 / 128) = 5 repeats" in msg, msg
        assert "repeatTime 5" not in msg and "repeatTime is ignored" in msg, msg
        with pytest.raises(ar.ConstraintError) as e:              # normal mode: as before
            getattr(ar.ascendc, api)(ub, d, s, w, 128, 5, 8, chip="atlas_a2")
        assert "for repeatTime 5 " in str(e.value), str(e.value)
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.reduce_sum(ub, d, ar.Tensor(0, F16, 199), ar.Tensor(4096, F16, 64), 200,
                              chip="atlas_a2")
    assert e.value.code == Code.TENSOR_BOUNDS and str(e.value).endswith(
        "Enlarge the tensor or reduce count"), str(e.value)
