"""The reduce special registers as explicit state (issue 14 item 2; SEMANTICS §P).

Expected values: the pages' examples (GetReduceRepeatMaxMinSpr(ISASI).md 调用示例 1 and 2,
GetReduceRepeatSumSpr(ISASI).md 调用示例, the reduce_computation sample's scenario 5; the
pages give no data, so the data here is seeded and the expected extreme is numpy's), the
pages' product lists (written out below from 产品支持情况), rules the pages state (contiguous
case only, T = the writer's type, the level-2 index "不准确"), and the scalar oracle
(``ascend_ref.oracle.spr``, its own loops) in the differential tests.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ascend_ref as ar
from ascend_ref import oracle
from ascend_ref.constraints import Code

A2, AIC = "atlas_a2", "atlas_inference_aicore"
T = ar.Tensor
GET_MM = ar.ascendc.get_reduce_repeat_max_min_spr
GET_SUM = ar.ascendc.get_reduce_repeat_sum_spr

#: GetReduceRepeatSumSpr(ISASI).md / GetReduceRepeatMaxMinSpr(ISASI).md 产品支持情况 (current
#: pages; Kirin is not listed on either)
SUM_PRODUCTS = {"ascend950", "atlas_a3", "atlas_a2"}
MM_FORMS = {"atlas_a3": True, "atlas_a2": True, "atlas_inference_aicore": False}


def code_of(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ar.ConstraintError as e:
        return e.code
    return None


def ub_with(x, chip=A2):
    return ar.store(ar.new_ub(chip, size=16384), 0, x)     # one small UB shape: few compiles


def wr_max(ub, dtype, mask, repeat, blk=1, rep=8, spr=None, chip=A2, kind="max"):
    fn = ar.ascendc.whole_reduce_max if kind == "max" else ar.ascendc.whole_reduce_min
    n = 256 // np.dtype(dtype).itemsize
    return fn(ub, T(8192, dtype, 2 * 64), T(0, dtype, 4096 // np.dtype(dtype).itemsize),
              mask, repeat, 1, blk, rep, chip=chip, return_info=True, spr=spr), n


# ------------------------------------------------------------------ the pages' examples ------

def test_page_example_reduce_repeat_max_then_getter():
    """调用示例 1: ReduceRepeat<MAX>(dst, src, 64, 1, 1, 1, 8) (float), then the getter: the
    maximum of the 64 lanes and its index (A2/A3), the value alone (AI Core)."""
    x = np.random.default_rng(1).permutation(np.linspace(-3, 5, 64)).astype(np.float32)
    for chip, with_index in ((A2, True), ("atlas_a3", True), (AIC, False)):
        (ub, info), _ = wr_max(ub_with(x, chip), "float32", 64, 1, chip=chip)
        got = GET_MM(info.spr, "float", chip=chip, with_index=with_index)
        if with_index:
            assert float(got[0]) == x.max() and int(got[1]) == int(np.argmax(x))
            assert got[1].dtype == jnp.uint32
        else:
            assert float(got) == x.max()
        # the documented reduce_repeat name sets it too
        ub2, info2 = ar.ascendc.reduce_repeat(ub_with(x, chip), T(8192, "float", 2),
                                              T(0, "float", 64), 64, 1, 1, 1, 8,
                                              reduce_type="MAX", chip=chip, return_info=True)
        got2 = GET_MM(info2.spr, "float", chip=chip, with_index=with_index)
        assert float(got2[0] if with_index else got2) == x.max()


def test_page_example_reduce_max_then_getter():
    """调用示例 2: ReduceMax(dst, src, work, 64, 1, 8, true) (float): the getter gives the exact
    maximum; its index is not accurate ("此时获取的索引不准确") -> undefined."""
    x = np.random.default_rng(2).permutation(np.linspace(-1, 2, 64)).astype(np.float32)
    for chip in (A2, AIC):
        ub = ub_with(x, chip)
        ub, info = ar.ascendc.reduce_max(ub, T(8192, "float", 8), T(0, "float", 64),
                                         T(4096, "float", 64), 64, 1, 8, True, chip=chip,
                                         return_info=True)
        if chip == A2:
            (v, _), read = GET_MM(info.spr, "float", chip=chip, return_info=True)
            assert float(v) == x.max() and bool(read.value_defined)
            assert not bool(read.index_defined)
            assert code_of(GET_MM, info.spr, "float", chip=chip) == Code.SPR_UNDEFINED
        else:
            assert float(GET_MM(info.spr, "float", chip=chip, with_index=False)) == x.max()


def test_page_example_reduce_sum_count_then_getter():
    """GetReduceRepeatSumSpr(ISASI).md 调用示例: ``ReduceSum(dst, src, work, 128)`` (float), then
    ``GetReduceRepeatSumSpr<float>()`` "返回前128个数的和" (no data on the page: small integers,
    whose float sum is exact in any order, so the expected sum is numpy's)."""
    x = np.random.default_rng(6).integers(-50, 50, 128).astype(np.float32)
    for chip in ("ascend950", "atlas_a3", A2):
        ub, info = ar.ascendc.reduce_sum(ub_with(x, chip), T(8192, "float", 8), T(0, "float", 128),
                                         T(4096, "float", 64), 128, chip=chip, return_info=True)
        assert float(GET_SUM(info.spr, "float", chip=chip)) == float(x.sum())
        assert float(ar.ascendc.get_acc_val(info.spr, "float", chip=chip)) == float(x.sum())
        # the high-dimensional form does not write it ("仅支持tensor前n个数据连续计算接口使用"):
        # a call over other lanes (mask 32: lanes 0-31 and 64-95), whose own sum differs
        ub, info = ar.ascendc.reduce_sum(ub, T(8192, "float", 8), T(0, "float", 128),
                                         T(4096, "float", 64), 32, 2, 8, chip=chip,
                                         return_info=True, spr=info.spr)
        other = float(x[:32].sum() + x[64:96].sum())
        assert float(ar.load(ub, 8192, "float32", 1)[0]) == other != float(x.sum())
        assert float(GET_SUM(info.spr, "float", chip=chip)) == float(x.sum())


def test_sample_reduce_sum_count_half_then_getter():
    """The reduce_computation sample, scenario 5 (asc-devkit examples/.../reduce_computation):
    ``ReduceSum<half>(dst, src, tmp, 288)`` over ones, then ``GetReduceRepeatSumSpr<half>()``
    (stored at dst[1]); ReduceSum.md's own example gives dst[0] = 288."""
    for chip in ("ascend950", A2):
        ub, info = ar.ascendc.reduce_sum(ub_with(np.ones(288, np.float16), chip),
                                         T(8192, "half", 16), T(0, "half", 288),
                                         T(4096, "half", 32), 288, chip=chip, return_info=True)
        assert float(GET_SUM(info.spr, "half", chip=chip)) == 288.0


def test_one_register_or_one_slot_per_type():
    """Reading the sum register with the other T (not documented): A2/A3 one register (the
    other type's reading undefined), 950 one global per type (``spr_sum_other_type``)."""
    xf = np.arange(64, dtype=np.float32)
    for chip, kept in (("ascend950", True), (A2, False)):
        ub = ub_with(xf, chip)
        ub, info = ar.ascendc.reduce_sum(ub, T(8192, "float", 8), T(0, "float", 64),
                                         T(4096, "float", 64), 64, chip=chip, return_info=True)
        ub = ar.store(ub, 0, np.ones(128, np.float16))
        ub, info = ar.ascendc.reduce_sum(ub, T(8192, "half", 16), T(0, "half", 128),
                                         T(4096, "half", 64), 128, chip=chip, return_info=True,
                                         spr=info.spr)
        assert float(GET_SUM(info.spr, "half", chip=chip)) == 128.0
        if kept:
            assert float(GET_SUM(info.spr, "float", chip=chip)) == float(xf.sum())
        else:
            assert code_of(GET_SUM, info.spr, "float", chip=chip) == Code.SPR_UNDEFINED


def test_reduce_max_count_form_sets_the_value():
    x = np.random.default_rng(8).permutation(np.linspace(-4, 4, 300)).astype(np.float16)
    ub, info = ar.ascendc.reduce_max(ub_with(x), T(8192, "half", 16), T(0, "half", 300),
                                     T(4096, "half", 64), 300, True, chip=A2, return_info=True)
    (v, _), read = GET_MM(info.spr, "half", chip=A2, return_info=True)
    assert float(v) == float(x.max()) and not bool(read.index_defined)


# ------------------------------------------------------------------ products and arguments ---

def test_products_and_forms_follow_the_pages():
    state = ar.ReduceSpr()
    for c in ar.chips():
        s = code_of(GET_SUM, state, "float", chip=c)
        assert (s == Code.API_UNSUPPORTED) == (c not in SUM_PRODUCTS), c
        for with_index in (True, False):
            m = code_of(GET_MM, state, "half", chip=c, with_index=with_index)
            ok = MM_FORMS.get(c) is with_index
            assert (m == Code.API_UNSUPPORTED) == (not ok), (c, with_index)
            if ok:
                assert m == Code.SPR_UNDEFINED          # nothing written yet
    for name in ("get_acc_val", "get_reduce_max_min_count"):   # the old names
        assert code_of(getattr(ar.ascendc, name), state, "half", chip="ascend950") == \
            (Code.SPR_UNDEFINED if name == "get_acc_val" else Code.API_UNSUPPORTED)


def test_each_getter_names_itself_and_has_no_internal_keyword():
    """The four getters' signatures are the public ones (an ``api=`` keyword of the
    implementation was in two of them), and each error names the getter called."""
    import inspect
    state = ar.ReduceSpr()
    for name in ("get_reduce_repeat_sum_spr", "get_acc_val", "get_reduce_repeat_max_min_spr",
                 "get_reduce_max_min_count"):
        fn = getattr(ar.ascendc, name)
        assert "api" not in inspect.signature(fn).parameters, name
        with pytest.raises(ar.ConstraintError) as e:
            fn(state, "half", chip="atlas_training")       # no getter there
        assert (e.value.code, e.value.api) == (Code.API_UNSUPPORTED, name)


def test_type_rules():
    x = np.arange(128, dtype=np.float16)
    (ub, info), _ = wr_max(ub_with(x), "float16", 128, 1)
    assert code_of(GET_MM, info.spr, "int16", chip=A2) == Code.DTYPE_UNSUPPORTED
    assert code_of(GET_SUM, info.spr, "int32", chip=A2) == Code.DTYPE_UNSUPPORTED
    # "操作数数据类型T，需要与所使用的归约接口目的操作数数据类型一致"
    assert code_of(GET_MM, info.spr, "float", chip=A2) == Code.DTYPE_MISMATCH
    v, i = GET_MM(info.spr, "half", chip=A2)
    assert float(v) == 127.0 and int(i) == 127 and i.dtype == jnp.uint16
    assert code_of(ar.ascendc.whole_reduce_max, ub, T(8192, "half", 2), T(0, "half", 128), 128,
                   1, 1, 1, 8, chip=A2, spr="state") == Code.BAD_ARGUMENT
    assert code_of(GET_MM, {}, "half", chip=A2) == Code.BAD_ARGUMENT
    with pytest.raises(ar.ConstraintError, match="with_index"):
        GET_MM(info.spr, "half", chip=A2, with_index=False)


def test_only_the_contiguous_case_is_defined():
    """"仅支持...连续计算场景，即...srcRepStride=8、srcBlkStride=1"."""
    x = np.random.default_rng(3).standard_normal(2048).astype(np.float16)
    for blk, rep in ((1, 16), (2, 8), (1, 0)):
        (ub, info), _ = wr_max(ub_with(x), "float16", 128, 2, blk=blk, rep=rep)
        (_, _), read = GET_MM(info.spr, "half", chip=A2, return_info=True)
        assert not bool(read.value_defined) and not bool(read.index_defined)
        assert code_of(GET_MM, info.spr, "half", chip=A2) == Code.SPR_UNDEFINED
    ub = ub_with(x)
    ub, info = ar.ascendc.reduce_max(ub, T(8192, "half", 16), T(0, "half", 1024),
                                     T(6144, "half", 128), 128, 2, 16, True, chip=A2,
                                     return_info=True)
    (_, _), read = GET_MM(info.spr, "half", chip=A2, return_info=True)
    assert not bool(read.value_defined)


def test_counter_mode_leaves_it_undefined():
    """"不支持获取归约接口使用Mask Counter模式时的结果"."""
    x = np.arange(512, dtype=np.float16)
    (ub, info), _ = wr_max(ub_with(x), "float16", ar.CounterMask(130), 1)
    (v, _), read = GET_MM(info.spr, "half", chip=A2, return_info=True)
    assert not bool(read.value_defined) and not bool(read.index_defined)
    _, st = oracle.spr.whole_reduce_max(oracle.spr.OracleSpr(), np.asarray(ub_with(x)),
                                        T(8192, "half", 128), T(0, "half", 2048),
                                        ar.CounterMask(130), 1, 1, 1, 8, chip=A2)
    assert st.maxmin == ("float16", oracle.spr.UNDEF, oracle.spr.UNDEF)


def test_multi_repeat_index_and_ties():
    """The extreme over all repeats ("所有repeat内的最值") at element offset r*L + lane (the
    assumed ``spr_maxmin_index = "flat"``); equal extremes: the first (SEMANTICS §D)."""
    x = np.zeros(512, np.float16)
    x[2 * 128 + 5] = 7
    x[3 * 128 + 1] = 7                      # a tie in a later repeat
    (ub, info), _ = wr_max(ub_with(x), "float16", 128, 4)
    v, i = GET_MM(info.spr, "half", chip=A2)
    assert float(v) == 7 and int(i) == 2 * 128 + 5
    (ub, info), _ = wr_max(ub_with(-x), "float16", 128, 4, kind="min")
    v, i = GET_MM(info.spr, "half", chip=A2)
    assert float(v) == -7 and int(i) == 2 * 128 + 5


def test_a_later_call_that_does_not_set_it_leaves_it():
    x = np.random.default_rng(4).permutation(np.arange(256)).astype(np.float32)
    ub = ub_with(x)
    (ub, info), _ = wr_max(ub, "float32", 64, 4)
    before = GET_MM(info.spr, "float", chip=A2)
    s = info.spr
    ub, info = ar.ascendc.whole_reduce_sum(ub, T(8192, "float", 8), T(0, "float", 256), 64, 4,
                                           1, 1, 8, chip=A2, return_info=True, spr=s)
    ub, info = ar.ascendc.reduce_data_block(ub, T(8192, "float", 64), T(0, "float", 256), 64, 4,
                                            1, 1, 8, reduce_type="MAX", chip=A2,
                                            return_info=True, spr=info.spr)
    ub, info = ar.ascendc.pair_reduce_sum(ub, T(8192, "float", 128), T(0, "float", 256), 4, 64,
                                          1, 1, 8, chip=A2, return_info=True, spr=info.spr)
    ub, info = ar.ascendc.reduce_sum(ub, T(8192, "float", 8), T(0, "float", 256),
                                     T(4096, "float", 64), 64, 4, 8, chip=A2, return_info=True,
                                     spr=info.spr)
    after = GET_MM(info.spr, "float", chip=A2)
    assert [float(before[0]), int(before[1])] == [float(after[0]), int(after[1])] == [255.0, int(np.argmax(x))]
    # a failing call changes nothing: it raises; a NOP (repeat 0) leaves the state as it was
    (ub, info), _ = wr_max(ub, "float32", 64, 0, spr=info.spr)
    assert int(GET_MM(info.spr, "float", chip=A2)[1]) == int(np.argmax(x))
    (ub, info), _ = wr_max(ub, "float32", 64, 1, spr=info.spr, kind="min")
    assert float(GET_MM(info.spr, "float", chip=A2)[0]) == x[:64].min()


def test_repr():
    assert repr(ar.ReduceSpr()) == "ReduceSpr(sum=unwritten, max_min=unwritten)"
    (ub, info), _ = wr_max(ub_with(np.arange(64, dtype=np.float32)), "float32", 64, 1)
    assert repr(info.spr) == "ReduceSpr(sum=unwritten, max_min={float32: value 63.0 " \
                             "(0x427c0000), index 63})"


# ------------------------------------------------------------------ jit and vmap -------------

def test_jit_and_vmap_carry_the_state():
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((3, 256)).astype(np.float32)
    ubs = jnp.stack([ub_with(x) for x in xs])
    dst, src = T(8192, "float", 8), T(0, "float", 256)

    def step(ub, spr, rep):
        ub, info = ar.ascendc.whole_reduce_max(ub, dst, src, 64, 4, 1, 1, rep, chip=A2,
                                               return_info=True, spr=spr)
        return GET_MM(info.spr, "float", chip=A2, return_info=True), info.spr

    (v, i), read = jax.jit(step)(ubs[0], ar.ReduceSpr(), 8)[0]
    assert float(v) == xs[0].max() and int(i) == int(np.argmax(xs[0])) and bool(read.index_defined)
    ((v, i), read), states = jax.vmap(step, in_axes=(0, None, 0))(
        ubs, ar.ReduceSpr(), jnp.array([8, 0, 8], jnp.int32))
    # case 1 reads with srcRepStride 0: not the contiguous case, the register is undefined
    assert np.array_equal(np.asarray(v)[[0, 2]], xs.max(axis=1)[[0, 2]])
    assert np.asarray(read.value_defined).tolist() == [True, False, True]
    assert repr(jax.tree_util.tree_map(np.asarray, states)) == "ReduceSpr(<batch of (3,)>)"
    # a batch of states goes back in (a later call of each case)
    ((v2, _), _), _ = jax.vmap(step, in_axes=(0, 0, None))(ubs, states, 8)
    assert np.array_equal(np.asarray(v2), xs.max(axis=1))


# ------------------------------------------------------------------ against the oracle -------

def _jax(state, name, ub, *args, **kw):
    try:
        new, info = getattr(ar.ascendc, name)(ub, *args, return_info=True, spr=state, **kw)
    except ar.ConstraintError as e:
        return e.code, state
    return np.asarray(new), info.spr


def _oracle(state, name, ub, *args, **kw):
    fn = getattr(oracle.spr, name, None)
    try:
        if fn is None:
            r, state = oracle.spr.passthrough(state, getattr(oracle, name), np.asarray(ub), *args,
                                              **kw)
        else:
            r, state = fn(state, np.asarray(ub), *args, **kw)
    except oracle.OracleError as e:
        return e.code, state
    return r.ub, state


def _read_jax(state, dtype, chip):
    out = []
    for fn in (GET_MM, GET_SUM):
        try:
            got = fn(state, dtype, chip=chip)
        except ar.ConstraintError as e:
            out.append(e.code)
            continue
        v, i = got if isinstance(got, tuple) else (got, None)
        bits = int(np.asarray(v).view(np.uint16 if dtype == "float16" else np.uint32))
        out.append((bits, int(i)) if i is not None else bits)
    return out


def _read_oracle(state, dtype, chip):
    out = []
    for fn in (oracle.spr.get_reduce_repeat_max_min_spr, oracle.spr.get_reduce_repeat_sum_spr):
        try:
            out.append(fn(state, dtype, chip=chip))
        except oracle.OracleError as e:
            out.append(e.code)
    return out


def _data(rng, dtype, n, special):
    x = rng.choice(np.array([-2, -1, -0.0, 0.0, 1, 3], dtype), n)      # many ties
    if special == "nan":
        x[rng.integers(n, size=2)] = np.nan
    elif special == "inf":
        x[rng.integers(n)] = -np.inf
    return x


CALLS = ("whole_reduce_max", "whole_reduce_min", "reduce_max", "reduce_min",
         "reduce_data_block", "whole_reduce_sum", "reduce_sum")


def _chain(seed, dtype, chip=A2, n_calls=3):
    rng = np.random.default_rng(seed)
    s = np.dtype(dtype).itemsize
    L = 256 // s
    ub = ub_with(_data(rng, dtype, 4096 // s, rng.choice(["", "nan", "inf"])), chip)
    js, os_ = ar.ReduceSpr(), oracle.spr.OracleSpr()
    for _ in range(n_calls):
        name = str(rng.choice(CALLS))
        repeat = int(rng.choice([1, 2, 4]))
        u = rng.random()
        mask = int(rng.choice([L, L // 2, 3])) if u < .6 else \
            ar.CounterMask(int(rng.choice([0, 3, L + 5]))) if u < .75 else \
            [int(rng.integers(1, 2**63)), int(rng.integers(0, 2**63))][:2 if s == 2 else 1]
        rep = int(rng.choice([8, 8, 16, 0]))
        blk = int(rng.choice([1, 1, 2]))
        src, work = T(0, dtype, 4096 // s), T(12288, dtype, 2048 // s)
        if name.startswith("whole"):
            args = (T(8192, dtype, 2048 // s), src, mask, repeat, 1, blk, rep)
            kw = {}
        elif name == "reduce_data_block":
            args = (T(8192, dtype, 2048 // s), src, mask, repeat, 1, blk, rep)
            kw = {"reduce_type": str(rng.choice(["MAX", "MIN", "SUM"]))}
        elif rng.random() < .5 or isinstance(mask, ar.CounterMask):   # level 2, high-dim
            args = (T(8192, dtype, 16), src, work, mask, repeat, rep) + \
                ((bool(rng.random() < .5),) if name != "reduce_sum" else ())
            kw = {}
        else:                                                  # level 2, count form
            count = int(rng.choice([1, L - 1, L, 3 * L + 7, 9 * L]))
            args = (T(8192, dtype, 16), src, work, count) + \
                ((bool(rng.random() < .5),) if name != "reduce_sum" else ())
            kw = {}
        ju, js = _jax(js, name, ub, *args, chip=chip, **kw)
        ou, os_ = _oracle(os_, name, ub, *args, chip=chip, **kw)
        assert (isinstance(ju, Code), ju if isinstance(ju, Code) else None) == \
            (isinstance(ou, Code), ou if isinstance(ou, Code) else None), (name, args, ju, ou)
        if not isinstance(ju, Code):
            ub = ju
        assert _read_jax(js, dtype, chip) == _read_oracle(os_, dtype, chip), (name, args, kw)
        other = "float32" if dtype == "float16" else "float16"
        assert _read_jax(js, other, chip) == _read_oracle(os_, other, chip)


@pytest.mark.parametrize("seed", [0, 1] + [pytest.param(k, marks=pytest.mark.slow)
                                           for k in range(2, 24)])
def test_seeded_chains_match_the_oracle(seed):
    _chain(seed, ("float16", "float32")[seed % 2])


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**32 - 1), st.sampled_from(["float16", "float32"]))
def test_hypothesis_chains_match_the_oracle(seed, dtype):
    _chain(seed, dtype, n_calls=2)


def test_explain_names_the_register_a_call_sets():
    text = ar.explain.access_map(ar.explain.make_case("whole_reduce_max")).text()
    assert "registers: sets the max/min register: the max over all repeats" in text
    text = ar.explain.access_map(ar.explain.make_case("whole_reduce_sum")).text()
    assert "registers: passes the reduce special registers through" in text
    # a rejected call writes no register (the line said "sets ..." for a TENSOR_BOUNDS call)
    bad = ar.explain.access_map(ar.explain.make_case("whole_reduce_max", src=(0, 16)))
    assert bad.error and "registers: none written (the call is rejected)" in bad.text()
    with pytest.raises(ValueError) as e:                      # and no "no rounding tree" twice
        ar.explain.rounding_tree(ar.explain.make_case("whole_reduce_max"))
    assert str(e.value).startswith("whole_reduce_max ORDER_VALUE_INDEX does not add: min/max")
