"""Counter mask mode (SetMaskCount; ``ar.CounterMask``) -- issue 14 item 4, SEMANTICS §Q.

The rule under test (掩码/概述.md table 2 and 3, 接口内设置Mask.md / 接口外设置Mask.md,
SetVectorMask.md): the mask is the element count ``n`` of the whole call, ``repeat_time`` is
ignored, ``R = ceil(n / L)`` repeats run, repeat ``k`` takes the first ``min(L, n - k*L)``
lanes and writes its normal-mode slot. Expected values come from the oracle (its own loop
over repeats, ``ascend_ref/oracle/_api.py``) and from the equivalent *normal-mode* calls
(R - 1 full repeats with mask L, then one repeat with the remainder, at the moved src / dst):
both are derived without the counter-mode code of the JAX path.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ascend_ref as ar
from ascend_ref import oracle, registry
from ascend_ref.batch import run_cases
from ascend_ref.case import Case, Outcome, run_jax, run_oracle
from ascend_ref.constraints import Code

F16, F32 = "float16", "float32"
SUPPORTED = ["ascend950", "atlas_a2", "atlas_a3", "atlas_200i_500_a2", "atlas_inference_aicore",
             "kirin_x90", "kirin_9030"]
#: (api, option) pairs: every per-repeat Ascend C reduction
APIS = [("whole_reduce_min", "ORDER_VALUE_INDEX"), ("whole_reduce_max", "ORDER_INDEX_VALUE"),
        ("whole_reduce_min", "ORDER_ONLY_INDEX"), ("whole_reduce_max", "ORDER_ONLY_VALUE"),
        ("whole_reduce_sum", None), ("reduce_data_block", "SUM"), ("reduce_data_block", "MAX"),
        ("reduce_data_block", "MIN"), ("pair_reduce_sum", None), ("repeat_reduce_sum", None)]
SRC, DST, UB = 0, 40960, 49152


def adversarial(dtype, n, rng, rate=0.15):
    """Values that stress the reductions: NaN, +-0, +-inf, subnormals, ties, large sums (a
    ``rate`` share of them among normal data)."""
    if dtype == F16:
        pool = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 6e-8, -6e-8, 65504, -65504, 1, 1,
                         -1, 0.5, 3], np.float16)
    else:
        pool = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3e38, -3e38, 1, 1,
                         -1, 0.5, 3], np.float32)
    x = rng.standard_normal(n).astype(dtype)
    pick = rng.random(n) < rate
    x[pick] = rng.choice(pool, pick.sum())
    return x


def make_case(api, option, chip, dtype, n, *, repeat=1, drs=1, sbs=1, srs=8, seed=0,
              data=None, dst_size=None):
    rng = np.random.default_rng(seed)
    ub = np.zeros(UB, np.uint8)
    s = np.dtype(dtype).itemsize
    x = adversarial(dtype, (DST - SRC) // s, rng) if data is None else data
    ub[SRC:SRC + x.nbytes] = x.view(np.uint8)
    ub[DST:] = rng.integers(0, 256, UB - DST, dtype=np.uint8)      # dst starts as garbage
    ins = registry.get(api)
    dsize = dst_size if dst_size is not None else \
        (UB - DST) // np.dtype(ins.tensor_dtype("dst", dtype)).itemsize
    return Case(api, chip, dtype, option, ar.CounterMask(n),
                {"repeat": repeat, "dst_rep_stride": drs, "src_blk_stride": sbs,
                 "src_rep_stride": srs},
                {"dst": (DST, dsize), "src": (SRC, (DST - SRC) // s)}, ub)


def jax_all(cases):
    """The JAX outcomes of ``cases`` through run_cases with one table height (the API's
    repeat range): one compiled kernel per (API, dtype, option) serves every product, both
    normal mask modes and the counter mode (the mode is data), so these tests compile
    little. ``test_run_cases_agrees_with_single_calls`` ties it to the eager calls."""
    return run_cases(list(cases), heights=())


def same(a: Outcome, b: Outcome) -> None:
    assert a.code == b.code, (a, b)
    if a.code is not None:
        return
    assert (a.undefined == b.undefined).all()
    keep = ~a.undefined
    assert (a.ub[keep] == b.ub[keep]).all(), np.flatnonzero((a.ub != b.ub) & keep)[:8]
    assert (a.written == b.written).all()


def lanes(dtype):
    return 256 // np.dtype(dtype).itemsize


# ------------------------------------------------------------------ the worked example -------

def test_docstring_example_two_repeats():
    """Ones: 130 halves = a full repeat (128) and a partial one (2) -- counted by hand."""
    ub = ar.store(ar.new_ub("atlas_a2"), 0, np.ones(256, np.float16))
    out = ar.ascendc.whole_reduce_sum(ub, ar.Tensor(1024, "half", 4), ar.Tensor(0, "half", 256),
                                      ar.CounterMask(130), 1, 1, 1, 8, chip="atlas_a2")
    assert ar.load(out, 1024, "float16", 3).tolist() == [128.0, 2.0, 0.0]
    assert repr(ar.CounterMask(130)) == "CounterMask(130)"


# ------------------------------------------------------------------ differential: oracle -----

COUNTS = {F16: (1, 127, 128, 129, 384, 389), F32: (1, 63, 64, 65, 192, 197)}


def seeded_cases(api, option, dtype, chips):
    """Counts 1, L-1, L, L+1, 3L, 3L+5 on ``chips``, adversarial data, src strides that
    overlap and leave gaps, dst strides 1, 0, 3."""
    out = []
    for chip in chips:
        if dtype not in ar.chip(chip).dtypes(api):
            continue
        for n in COUNTS[dtype]:
            k = len(out)
            drs, sbs, srs = [(1, 1, 8), (0, 2, 3), (3, 0, 16)][k % 3]
            out.append(make_case(api, option, chip, dtype, n, drs=drs, sbs=sbs, srs=srs,
                                 seed=k, repeat=k % 4))
    return out


@pytest.mark.parametrize("api,option", APIS)
def test_counter_matches_oracle_seeded(api, option):
    """Half on every supporting product (float: the hypothesis test, the equivalence test and
    the slow test on every product) -- one compiled kernel per API in the default run."""
    cases = seeded_cases(api, option, F16, SUPPORTED)
    assert cases
    for got, c in zip(jax_all(cases), cases):
        same(got, run_oracle(c))


@pytest.mark.slow
@pytest.mark.parametrize("api,option", APIS)
def test_counter_matches_oracle_every_product_float(api, option):
    cases = seeded_cases(api, option, F32, SUPPORTED)
    for got, c in zip(jax_all(cases), cases):
        same(got, run_oracle(c))


@pytest.mark.parametrize("api,option", [("whole_reduce_max", "ORDER_VALUE_INDEX"),
                                        ("reduce_data_block", "SUM")])
def test_the_largest_count(api, option):
    """255 full repeats (the repeat range) work; one element more is MASK_RANGE, not a clamp."""
    L = lanes(F16)
    c = make_case(api, option, "atlas_a2", F16, 255 * L, srs=0)
    big = make_case(api, option, "atlas_a2", F16, 255 * L + 1, srs=0)
    out, err = jax_all([c, big])
    same(out, run_oracle(c))
    assert out.code is None
    assert err.code == run_oracle(big).code == Code.MASK_RANGE


@pytest.mark.slow
@pytest.mark.parametrize("api,option", APIS)
def test_the_largest_count_everywhere(api, option):
    for chip in SUPPORTED:
        for dtype in ar.chip(chip).dtypes(api)[:2]:
            if not dtype.startswith("float"):
                continue
            c = make_case(api, option, chip, dtype, 255 * lanes(dtype) - 3, srs=0, seed=3,
                          drs=0 if api == "pair_reduce_sum" else 1)
            same(jax_all([c])[0], run_oracle(c))


def integer_cases(dtypes, apis):
    out = []
    for dtype in dtypes:
        rng = np.random.default_rng(5)
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (DST - SRC) // np.dtype(dtype).itemsize,
                         dtype=dtype, endpoint=True)
        for api in apis:
            for n in (1, lanes(dtype) + 1, 3 * lanes(dtype) - 1):
                out.append(make_case(api, "ORDER_VALUE_INDEX" if "max" in api else None,
                                     "ascend950", dtype, n, data=x))
    return out


def test_950_integer_sums():
    """Ascend 950 ReduceRepeat<SUM> int16 -> int32 in counter mode (more: the slow test)."""
    cases = integer_cases(["int16"], ["whole_reduce_sum"])
    for got, c in zip(jax_all(cases), cases):
        same(got, run_oracle(c))


@pytest.mark.slow
def test_950_integer_types():
    cases = integer_cases(["int16", "uint16", "int32", "uint32"],
                          ["whole_reduce_sum", "repeat_reduce_sum", "whole_reduce_max"])
    for got, c in zip(jax_all(cases), cases):
        same(got, run_oracle(c))


# ------------------------------------------------------------------ hypothesis ---------------

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@settings(max_examples=15, **SETTINGS)
@given(st.sampled_from(APIS), st.sampled_from(SUPPORTED), st.sampled_from([F16, F32]),
       st.integers(0, 5 * 128), st.integers(0, 3), st.integers(0, 2), st.integers(0, 12),
       st.integers(0, 2**16))
def test_counter_matches_oracle_hypothesis(api_opt, chip, dtype, n, drs, sbs, srs, seed):
    api, option = api_opt
    if dtype not in ar.chip(chip).dtypes(api):
        dtype = F16
    c = make_case(api, option, chip, dtype, n, drs=drs, sbs=sbs, srs=srs, seed=seed,
                  repeat=seed % 300)
    same(jax_all([c])[0], run_oracle(c))


# ------------------------------------------------------------------ normal-mode equivalence --

def normal_calls(c: Case) -> Outcome:
    """The same call as normal-mode calls (JAX path): R - 1 full repeats with mask L, then the
    last repeat with mask n - (R-1)*L, its src and dst moved by R - 1 repeats."""
    L = lanes(c.dtype)
    n = c.mask.count
    R = -(-n // L)
    ins = registry.get(c.api)
    lay = ins.layout(c.dtype, c.option)
    ub = c.ub.copy()
    p = c.params
    if R > 1:
        full = Case(c.api, c.chip, c.dtype, c.option, L, {**p, "repeat": R - 1}, c.tensors, ub)
        out = jax_all([full])[0]
        assert out.code is None
        ub = out.ub
    src_shift = (R - 1) * p["src_rep_stride"] * 32
    dst_shift = (R - 1) * p["dst_rep_stride"] * lay.slot_bytes
    (da, dn), (sa, sn) = c.tensors["dst"], c.tensors["src"]
    dsz = np.dtype(ins.tensor_dtype("dst", c.dtype)).itemsize
    s = np.dtype(c.dtype).itemsize
    last = Case(c.api, c.chip, c.dtype, c.option, n - (R - 1) * L, {**p, "repeat": 1},
                {"dst": (da + dst_shift, dn - dst_shift // dsz),
                 "src": (sa + src_shift, sn - src_shift // s)}, ub)
    return jax_all([last])[0]


@pytest.mark.parametrize("api,option", APIS)
def test_counter_equals_normal_mode_calls(api, option):
    """Disjoint dst slots (dst_rep_stride 1) and src repeats: the counter call writes what the
    normal-mode calls write (the docs' rule, 接口内设置Mask.md: the count decides the
    repeats; the last one takes the remainder)."""
    for chip, dtype in (("atlas_a2", F16), ("ascend950", F16), ("atlas_a2", F32)):
        if api == "reduce_data_block" and dtype == F32 or \
                api.startswith("whole_reduce_m") and dtype == F32 and "ONLY" in option:
            continue                                       # fewer kernels in the default run
        for n in (5, lanes(dtype), 2 * lanes(dtype) + 7):
            c = make_case(api, option, chip, dtype, n, repeat=9, seed=n)
            a, b = jax_all([c])[0], normal_calls(c)
            assert a.code is None and b.code is None
            keep = ~(a.undefined | b.undefined)
            assert (a.ub[keep] == b.ub[keep]).all()


# ------------------------------------------------------------------ repeat_time, jit, vmap ---

def test_repeat_time_is_ignored():
    """"repeatTime传入固定值即可，建议统一设置为1，该值不生效": any int gives the same result;
    a non-int is still BAD_ARGUMENT (the parameter is an int32_t)."""
    cases = [make_case("whole_reduce_sum", None, "atlas_a2", F16, 300, repeat=r)
             for r in (1, 0, 7, 255, 256, -4, 2**40)]
    outs = jax_all(cases)
    for o in outs:
        same(o, outs[0])
    same(run_jax(cases[-1]), outs[0])
    c = make_case("whole_reduce_sum", None, "atlas_a2", F16, 300, repeat=1.5)
    assert run_jax(c).code == run_oracle(c).code == Code.BAD_ARGUMENT


def _sum_call(ub, n, repeat=1):
    return ar.ascendc.whole_reduce_sum(ub, ar.Tensor(DST, "half", 256), ar.Tensor(0, "half", 4096),
                                       ar.CounterMask(n), repeat, 1, 1, 8, chip="atlas_a2",
                                       return_info=True)


def test_traced_count_under_jit_and_vmap():
    c = make_case("whole_reduce_sum", None, "atlas_a2", F16, 1)
    ub = jnp.asarray(c.ub)
    f = jax.jit(_sum_call)
    cases = []
    for n in (0, 1, 129, 1000, 4096):            # 4096: the whole src tensor
        out, info = f(ub, jnp.int32(n))
        assert int(info.status) == 0
        cases.append((out, make_case("whole_reduce_sum", None, "atlas_a2", F16, n,
                                     dst_size=256)))
    for (out, c), ref in zip(cases, jax_all([c for _, c in cases])):
        assert (np.asarray(out) == ref.ub).all()
    # beyond the repeat range: the status says MASK_RANGE (a traced call never raises)
    for n in (128 * 255 + 1, 2**31 - 1, -1):
        _, info = f(ub, jnp.int32(n))
        assert int(info.status) == Code.MASK_RANGE
    ns = jnp.array([3, 128, 500, 128 * 255 + 1], jnp.int32)
    outs, infos = jax.vmap(_sum_call, in_axes=(None, 0))(ub, ns)
    assert np.asarray(infos.status).tolist() == [0, 0, 0, int(Code.MASK_RANGE)]
    for k in range(3):
        assert (np.asarray(outs[k]) == np.asarray(f(ub, ns[k])[0])).all()


def test_counter_mask_is_a_pytree():
    leaves, tree = jax.tree_util.tree_flatten(ar.CounterMask(5))
    assert leaves == [5] and jax.tree_util.tree_unflatten(tree, [7]) == ar.CounterMask(7)
    out = jax.jit(lambda ub, m: ar.ascendc.whole_reduce_sum(
        ub, ar.Tensor(DST, "half", 64), ar.Tensor(0, "half", 4096), m, 1, 1, 1, 8,
        chip="atlas_a2"))(jnp.asarray(make_case("whole_reduce_sum", None, "atlas_a2", F16, 1).ub),
                          ar.CounterMask(jnp.int32(130)))
    assert out.shape == (UB,)


# ------------------------------------------------------------------ products and errors -----

@pytest.mark.parametrize("chip", ["atlas_training", "atlas_inference_vector_core"])
def test_products_without_set_mask_count(chip):
    """SetMaskCount.md 产品支持情况: 不支持 -> MASK_MODE naming the product and a way out."""
    api = "whole_reduce_sum" if ar.chip(chip).dtypes("whole_reduce_sum") else "whole_reduce_max"
    c = make_case(api, "ORDER_VALUE_INDEX" if "max" in api else None, chip, F16, 5)
    want = Code.MASK_MODE if ar.chip(chip).dtypes(api) else Code.API_UNSUPPORTED
    assert run_jax(c).code == run_oracle(c).code == want
    if want == Code.MASK_MODE:
        with pytest.raises(ar.ConstraintError) as e:
            c.call(ar)
        assert chip in str(e.value) and "SetMaskCount" in str(e.value)


def test_apis_whose_pages_do_not_document_it():
    """TIK (no counter mode in its pages): MASK_MODE; the level-2 ReduceSum takes it
    (SEMANTICS §R) but not on Atlas training, which has no SetMaskCount."""
    ub = ar.new_ub("atlas_a2")
    t = ar.Tensor
    calls = [
        lambda impl: impl.tik.vec_reduce_add(ub, ar.CounterMask(5), t(4096, F16, 16),
                                             t(0, F16, 1024), t(8192, F16, 64), 1, 8,
                                             chip="atlas_a2"),
        lambda impl: impl.tik.vec_reduce_max(ub, ar.CounterMask(5), t(4096, F16, 16),
                                             t(0, F16, 1024), t(8192, F16, 64), 1, 8,
                                             chip="atlas_a2"),
        lambda impl: impl.ascendc.reduce_sum(ub, t(4096, F16, 16), t(0, F16, 1024),
                                             t(8192, F16, 1024), ar.CounterMask(5), 1, 8,
                                             chip="atlas_training"),
    ]
    for call in calls:
        with pytest.raises(ar.ConstraintError) as e:
            call(ar)
        assert e.value.code == Code.MASK_MODE
    assert oracle  # the oracle is checked through the flat namespace below
    for fn, args in [(oracle.vec_reduce_add, (ub, ar.CounterMask(5), t(4096, F16, 16),
                                              t(0, F16, 1024), t(8192, F16, 64), 1, 8)),
                     (oracle.reduce_sum, (ub, t(4096, F16, 16), t(0, F16, 1024),
                                          t(8192, F16, 1024), ar.CounterMask(5), 1, 8))]:
        with pytest.raises(oracle.OracleError) as e:
            fn(*args, chip="atlas_a2" if fn is oracle.vec_reduce_add else "atlas_training")
        assert e.value.code == Code.MASK_MODE


@pytest.mark.parametrize("chip", SUPPORTED)
def test_count_zero_follows_the_products_zero_mask_rule(chip):
    """SetVectorMask.md: on A2 / A3 a 0 mask is a NOP; Ascend 950 "NOP not guaranteed"
    (undefined dst, SEMANTICS §C); elsewhere 0 is outside the documented range."""
    c = make_case("whole_reduce_sum", None, chip, F16, 0, repeat=5)
    a, b = jax_all([c])[0], run_oracle(c)
    same(a, b)
    rule = ar.chip(chip).zero_mask
    if rule == "error":
        assert a.code == Code.MASK_ZERO
    else:
        assert a.code is None and (a.ub == c.ub).all() and not a.written.any()
        assert a.undefined.any() == (rule == "undefined")


def test_dst_rep_stride_zero():
    """All repeats into one slot: the last repeat wins (A2, assumed as in normal mode); on
    Ascend 950 the dst is undefined (its emulation moves src by the ignored repeatTime)."""
    x = (np.arange((DST - SRC) // 2) % 7).astype(np.float16)     # small ints: exact sums
    a2 = make_case("pair_reduce_sum", None, "atlas_a2", F16, 300, drs=0, data=x)
    c950 = make_case("pair_reduce_sum", None, "ascend950", F16, 300, drs=0)
    out, out950 = jax_all([a2, c950])
    same(out, run_oracle(a2))
    assert out.written.any() and not out.undefined.any()
    # by hand: 300 = 128 + 128 + 44 lanes; the last repeat (lanes 256-299) sums 22 pairs
    # into the slot's first 22 halves, over what repeats 0 and 1 wrote there
    got = out.ub[DST:DST + 44].view(np.float16)
    assert got.tolist() == (x[256:300:2] + x[257:300:2]).tolist()
    assert got.tolist() != (x[128:172:2] + x[129:172:2]).tolist()  # not repeat 1's
    out = out950
    same(out, run_oracle(c950))
    dst = slice(DST, DST + c950.tensors["dst"][1] * 2)
    assert out.undefined[dst].all()


def test_count_structure_errors():
    c = make_case("whole_reduce_sum", None, "atlas_a2", F16, 5)
    for bad, code in [(-1, Code.MASK_RANGE), (2**64, Code.MASK_RANGE), (1.5, Code.BAD_ARGUMENT),
                      (2**64 - 1, Code.MASK_RANGE)]:
        c.mask = ar.CounterMask(bad)
        assert run_jax(c).code == run_oracle(c).code == code, bad


def test_bounds_and_overlap_follow_the_partial_last_repeat():
    """The source extent ends at the last repeat's last lane: a src tensor of exactly n
    elements is enough; one element less is TENSOR_BOUNDS. A dst slot read only by lanes the
    partial last repeat does not take is no overlap."""
    cases, codes = [], []
    for n in (129, 200):
        for size, code in ((n, None), (n - 1, Code.TENSOR_BOUNDS)):
            c = make_case("whole_reduce_sum", None, "atlas_a2", F16, n)
            c.tensors["src"] = (SRC, size)
            cases.append(c)
            codes.append(code)
    # repeat 0 writes its sum at element 200 of src; repeat 1 reads elements 128..n-1
    for n, code in [(128 + 72, None), (128 + 73, Code.OVERLAP)]:
        c = make_case("whole_reduce_sum", None, "atlas_a2", F16, n)
        c.tensors["dst"] = (SRC + 400, 2)
        cases.append(c)
        codes.append(code)
    for got, c, code in zip(jax_all(cases), cases, codes):
        same(got, run_oracle(c))
        assert got.code == code


def _stride_zero_overlap_cases():
    """src_rep_stride 0: every repeat reads the same lanes, the last (partial) one fewer.
    n = 3L + 1: repeats 0..2 take all L lanes, repeat 3 only lane 0. dst at src element 32:
    repeat 0's result is read by repeats 1 and 2 (lane 32) but not by repeat 3 (OVERLAP);
    dst at element L: no repeat reads it (no overlap)."""
    out = []
    for api, option in APIS:
        for elem, code in ((32, Code.OVERLAP), (lanes(F16), None)):
            c = make_case(api, option, "ascend950", F16, 3 * lanes(F16) + 1, srs=0)
            c.tensors["dst"] = (SRC + 2 * elem, 1024)
            out.append((c, code))
    return out


def test_overlap_with_src_rep_stride_zero_counts_every_later_repeat():
    """Found by the default campaign (whole_reduce_min int32 ORDER_ONLY_INDEX on ascend950,
    CounterMask(449), src_rep_stride 0): the JAX read-after-write table looked only at the
    last repeat when the repeat stride is 0 -- right in normal mode, where all repeats take
    the same lanes, but in counter mode the last repeat may take fewer lanes than the ones
    before it, so a dst slot read by repeat 1 went unnoticed (ok instead of OVERLAP)."""
    pairs = _stride_zero_overlap_cases()
    cases = [c for c, _ in pairs]
    for got, (c, code) in zip(jax_all(cases), pairs):
        assert run_oracle(c).code == code, c.describe()
        assert got.code == code, c.describe()
    # the single-call fast path (lax.cond on the cheap candidate) and the general path
    c, code = pairs[0]
    assert run_jax(c).code == code
    with ar.engine.use_path("general"):
        assert run_jax(c).code == code
    # the reported case itself: int32, 449 = 7 * 64 + 1, dst at src element 1
    x = np.random.default_rng(1).integers(-2**31, 2**31, (DST - SRC) // 4, dtype=np.int32)
    c = make_case("whole_reduce_min", "ORDER_ONLY_INDEX", "ascend950", "int32", 449, srs=0,
                  data=x)
    c.tensors["dst"] = (SRC + 4, 16)
    assert run_oracle(c).code == run_jax(c).code == Code.OVERLAP


# ------------------------------------------------------------------ run_cases ---------------

def test_run_cases_agrees_with_single_calls():
    """Counter-mode cases take run_cases' per-case preparation (batch_prep's exact fallback)
    and may share a kernel with vectorised normal-mode cases: both agree with single calls."""
    cases = []
    for k, n in enumerate((129, 0, 128 * 255 + 1)):
        cases.append(make_case("whole_reduce_max", "ORDER_VALUE_INDEX", "atlas_a2", F16, n,
                               seed=k))
        normal = make_case("whole_reduce_max", "ORDER_VALUE_INDEX", "atlas_a2", F16, 1, seed=k)
        normal.mask = 100 + k
        normal.params["repeat"] = 2
        cases.append(normal)
    for got, c in zip(run_cases(cases), cases):
        same(got, run_jax(c))


# ------------------------------------------------------------------ dumps and fuzz ----------

def _small_counter_cases():
    out = []
    for k, (api, opt) in enumerate([("whole_reduce_max", "ORDER_VALUE_INDEX"),
                                    ("pair_reduce_sum", None), ("reduce_data_block", "MIN")]):
        c = make_case(api, opt, "atlas_a2", F16, 129 + 50 * k, seed=k)
        c.ub = c.ub[:UB].copy()
        out.append(c)
    return out


@pytest.mark.parametrize("stacked", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_dump_round_trip(tmp_path, stacked):
    """The dump format carries the counter mode ({"counter": n}; stacked: mask_words -1);
    verify reruns the reference on it and agrees; a device that wrote other bytes is caught."""
    from ascend_ref.verify import dumps_from_cases, open_dump, verify

    cases = _small_counter_cases()
    outs = jax_all(cases)
    paths = dumps_from_cases(cases, tmp_path / "d", per_file=3, outcomes=outs, stacked=stacked)
    with open_dump(paths[0]) as f:
        back = [f.case(i).case for i in range(f.count)]
    assert [b.mask for b in back] == [c.mask for c in cases]
    r = verify(paths, progress=False)
    assert r.ok and r.cases == 3 and r.agreed == 3
    # the same bytes under a normal-mode mask of the first repeat's lanes: not what ran
    bad = [Case(c.api, c.chip, c.dtype, c.option, 128, c.params, c.tensors, c.ub) for c in cases]
    paths = dumps_from_cases(bad, tmp_path / "b", per_file=3, outcomes=outs, stacked=stacked)
    assert not verify(paths, progress=False).ok


@pytest.mark.slow          # the default run: tests/test_fuzz_cover.py enumerates the combinations
def test_campaign_draws_counter_mode_cases():
    """The generator's mask-mode dimension: counter templates exist only for the APIs and
    products that have the mode, their cases carry a CounterMask whose repeats are the case's
    repeat, and the coverage bins name them per API (the combination bins)."""
    from ascend_ref.fuzz import coverage
    from ascend_ref.fuzz.campaign import Campaign
    from ascend_ref.fuzz.generate import breakable_rules

    camp = Campaign.load("default")
    uni = [t for t, _ in camp.universe()]
    counter = [t for t in uni if t.mask_mode == "counter"]
    apis = {t.api for t in counter}
    assert apis == {a for a in registry.names() if "counter" in registry.get(a).mask_modes}
    assert apis >= {"whole_reduce_min", "whole_reduce_sum", "reduce_data_block",
                    "pair_reduce_sum", "repeat_reduce_sum"}
    assert all(ar.chip(c).facts["counter_mode"] == "supported" for t in counter for c in t.chips)
    combos = coverage.model(camp)["combination"]
    assert {t.combo for t in counter} <= combos
    assert any("mask_mode" in breakable_rules(t) for t in counter)
    pool = camp.pool()
    ids = [i for i, (k, *_) in enumerate(camp.plan()) if pool[k].mask_mode == "counter"]
    got = [camp.case(i) for i in ids[::max(1, len(ids) // 40)]]
    assert got and all(isinstance(c.mask, ar.CounterMask) for c in got)
    assert {c.tags["mask"] for c in got} >= {"counter:full", "counter:one", "counter:partial"}
    for c in got:
        L = lanes(c.dtype)
        if c.tags.get("validity") == "valid":
            assert -(-c.mask.count // L) == c.params["repeat"]
    outs = jax_all(got)
    for o, c in zip(outs, got):
        same(o, run_oracle(c))


def test_replay_text_names_the_counter_mode():
    from ascend_ref.fuzz.replay import mask_text

    c = make_case("whole_reduce_sum", None, "atlas_a2", F16, 300)
    assert mask_text(c).startswith("CounterMask(300) (counter mode: 3 repeats, the last on 44")


def test_explain_shows_the_counter_mode():
    from ascend_ref import explain

    c = explain.make_case("whole_reduce_max", chip="atlas_a2", mask=ar.CounterMask(130),
                          repeat=1)
    m = explain.access_map(c)
    text = m.text()
    assert "counter mask 130 (SetMaskCount: 2 repeat(s) of 128 lanes, the last on 2" in text
    assert m.active.sum() == 130 and m.active[1].sum() == 2 and m.error is None
