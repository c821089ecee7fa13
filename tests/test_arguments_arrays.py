"""Arguments given as numpy scalars and arrays, switches, malformed cases and store's
conversions: each judged as docs/arguments.md says -- never wrapped, truncated, dropped or
taken by truthiness (found by an adversarial sweep of the public API, 2026-12-05)."""

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Tensor
from ascend_ref.case import Case, run_jax, run_oracle

A2 = "atlas_a2"
P = {"repeat": 2, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}


def _ub():
    x = np.arange(512, dtype=np.float16)[::-1].copy()
    return ar.store(ar.new_ub(A2), 0, x)


def _wrm(ub, **kw):
    args = dict(dst=Tensor(1024, "half", 16), src=Tensor(0, "half", 512), mask=128, repeat=2,
                dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8)
    args.update(kw)
    return ar.ascendc.whole_reduce_min(ub, args["dst"], args["src"], args["mask"],
                                       args["repeat"], args["dst_rep_stride"],
                                       args["src_blk_stride"], args["src_rep_stride"], chip=A2)


def _raises(fn):
    with pytest.raises(ar.ConstraintError) as e:
        fn()
    return e.value


@pytest.mark.parametrize("value, shown", [(np.array(2**32 + 2), "4294967298"),
                                          (np.array(2**32 - 1, np.uint32), "4294967295"),
                                          (np.array(-(2**40)), "-1099511627776")])
def test_a_0d_repeat_array_is_judged_as_its_int(value, shown):
    e = _raises(lambda: _wrm(_ub(), repeat=value))
    assert e.code == ar.Code.REPEAT_RANGE and f"repeat_time = {shown}" in str(e)
    # inside int32 it is the repeat it holds
    assert np.array_equal(np.asarray(_wrm(_ub(), repeat=np.array(2))),
                          np.asarray(_wrm(_ub(), repeat=2)))


def test_a_0d_address_array_past_int32_is_out_of_the_ub():
    e = _raises(lambda: _wrm(_ub(), dst=Tensor(np.array(2**32 + 1024), "half", 16)))
    assert e.code == ar.Code.UB_BOUNDS and "4294968320" in str(e)


def test_a_0d_count_past_int32_is_not_wrapped():
    ub = ar.store(ar.new_ub(A2), 0, np.ones(1024, np.float16))
    call = lambda n: ar.ascendc.reduce_sum(ub, Tensor(4096, "half", 16),  # noqa: E731
                                           Tensor(0, "half", 1024), Tensor(8192, "half", 1024),
                                           n, chip=A2)
    e = _raises(lambda: call(np.array(2**32 + 288)))
    assert "4294967584" in str(e)
    assert ar.load(call(np.array(288)), 4096, "float16", 1).tolist() == [288.0]


def test_the_same_case_with_a_0d_array_gets_the_oracles_code():
    params = dict(P, repeat=np.array(2**32 + 2))
    case = Case("whole_reduce_min", A2, "float16", "ORDER_VALUE_INDEX", 128, params,
                {"dst": (1024, 16), "src": (0, 512)}, np.zeros(4096, np.uint8))
    want = run_oracle(case).code
    assert want == ar.Code.REPEAT_RANGE
    assert run_jax(case).code == want and ar.run_cases([case])[0].code == want


@pytest.mark.parametrize("words", [[-1, 0, 0, 0], [2**33, 0, 0, 0], [0, 0, 0, 2**32]])
def test_lane_word_arrays_out_of_uint32_are_mask_bits(words):
    e = _raises(lambda: _wrm(_ub(), mask=np.array(words, np.int64)))
    assert e.code == ar.Code.MASK_BITS and "2**32 - 1" in str(e)


def test_lane_word_arrays_inside_uint32_are_lane_words():
    as_int64 = _wrm(_ub(), mask=np.array([0xFFFFFFFF, 0, 0, 0], np.int64))
    as_uint32 = _wrm(_ub(), mask=np.array([0xFFFFFFFF, 0, 0, 0], np.uint32))
    as_list = _wrm(_ub(), mask=[0xFFFFFFFF, 0])
    assert np.array_equal(np.asarray(as_int64), np.asarray(as_uint32))
    assert np.array_equal(np.asarray(as_int64), np.asarray(as_list))


def _wrs(saturate):
    ub = ar.store(ar.new_ub(A2), 0, np.full(256, 60000, np.float16))
    return ar.ascendc.whole_reduce_sum(ub, Tensor(1024, "half", 16), Tensor(0, "half", 256),
                                       128, 2, 1, 1, 8, chip=A2, saturate=saturate)


@pytest.mark.parametrize("bad", [np.array(0.5), np.array(5), np.array(-1), "yes", 2, 0.0])
def test_saturate_is_a_bool_or_0_or_1_never_truthiness(bad):
    e = _raises(lambda: _wrs(bad))
    assert e.code == ar.Code.BAD_ARGUMENT and "saturate" in str(e)


@pytest.mark.parametrize("flag, same", [(np.array(1), True), (np.array(True), True),
                                        (np.int64(0), False), (1, True)])
def test_saturate_as_an_integer_or_array_0_or_1(flag, same):
    got = ar.load(_wrs(flag), 1024, "uint16", 2)
    want = ar.load(_wrs(same), 1024, "uint16", 2)
    assert np.array_equal(got, want)
    assert not np.array_equal(ar.load(_wrs(True), 1024, "uint16", 2),
                              ar.load(_wrs(False), 1024, "uint16", 2))   # the flag matters


@pytest.mark.parametrize("bad", ["no", np.array(1), None, 0.0, 2])
def test_run_cases_spr_is_a_switch(bad):
    """``spr="no"`` carried the registers (truthiness); 0 / 1 and bools are switches."""
    case = Case("whole_reduce_max", A2, "float32", "ORDER_VALUE_INDEX", 64, {   # sets a register
        "repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
        {"dst": (1024, 8), "src": (0, 64)}, np.zeros(2048, np.uint8))
    e = _raises(lambda: ar.run_cases([case], spr=bad))
    assert e.code == ar.Code.BAD_ARGUMENT and "spr" in str(e)
    assert ar.run_cases([case], spr=0)[0].spr is None
    assert ar.run_cases([case], spr=1)[0].spr is not None


@pytest.mark.parametrize("bad", ["no", np.array(1), None, 0.0])
def test_return_info_is_a_switch(bad):
    dst, src = Tensor(1024, "half", 16), Tensor(0, "half", 512)
    e = _raises(lambda: ar.ascendc.whole_reduce_min(_ub(), dst, src, 128, 2, 1, 1, 8, chip=A2,
                                                    return_info=bad))
    assert e.code == ar.Code.BAD_ARGUMENT and "return_info" in str(e)
    ub, info = ar.ascendc.whole_reduce_min(_ub(), dst, src, 128, 2, 1, 1, 8, chip=A2,
                                           return_info=1)
    assert info.status == 0
    _, info = ar.ascendc.whole_reduce_sum(_ub(), dst, src, 128, 2, 1, 1, 8, chip=A2,
                                          return_info=True)
    for getter in (lambda: ar.ascendc.get_reduce_repeat_sum_spr(info.spr, "half", chip=A2,
                                                               return_info=bad),
                   lambda: ar.ascendc.get_reduce_repeat_max_min_spr(info.spr, "half", chip=A2,
                                                                   return_info=bad)):
        e = _raises(getter)
        assert e.code == ar.Code.BAD_ARGUMENT and "return_info" in str(e)


@pytest.mark.parametrize("bad", ["yes", np.array(1)])
def test_run_batch_return_undefined_is_a_switch(bad):
    ubs = np.zeros((2, 4096), np.uint8)
    e = _raises(lambda: ar.run_batch("whole_reduce_min", ubs, chip=A2, dtype="float16",
                                     mask=128, dst=(2048, 16), src=(0, 512), **P,
                                     return_undefined=bad))
    assert e.code == ar.Code.BAD_ARGUMENT and "return_undefined" in str(e)


_ZEROS = object()


def _case(tensors=None, params=None, ub=_ZEROS):
    return Case("whole_reduce_min", A2, "float16", "ORDER_VALUE_INDEX", 128,
                dict(P) if params is None else params,
                tensors or {"dst": (2048, 16), "src": (0, 512)},
                np.zeros(4096, np.uint8) if ub is _ZEROS else ub)


@pytest.mark.parametrize("case, named", [
    (_case(tensors={"dst": (2048, 16), "src": (0, 512), "work_tensor": (3000, 16)}),
     "work_tensor"),
    (_case(params=dict(P, foo=1)), "foo"),
    (_case(ub=None), "ub"),
    (_case(ub=np.zeros(4096, np.float32)), "ub"),
    (_case(ub=[0] * 4096), "ub"),
])
def test_a_malformed_case_is_bad_argument_on_every_path(case, named):
    e = _raises(lambda: case.call(ar))
    assert e.code == ar.Code.BAD_ARGUMENT and named in str(e)
    assert run_jax(case).code == ar.Code.BAD_ARGUMENT
    assert run_oracle(case).code == ar.Code.BAD_ARGUMENT
    # beside a good case in one batch: that case's outcome, the good one runs
    got = ar.run_cases([_case(), case, _case()])
    assert [o.code for o in got] == [None, ar.Code.BAD_ARGUMENT, None]
    assert np.array_equal(got[0].ub, run_jax(_case()).ub)


def test_run_columns_with_an_extra_parameter_is_bad_argument_for_every_row():
    ubs = np.zeros((2, 4096), np.uint8)
    got = ar.run_columns("whole_reduce_min", A2, "float16", "ORDER_VALUE_INDEX",
                         np.array([128, 128]), dict(P, foo=1),
                         {"dst": (2048, 16), "src": (0, 512)}, ubs)
    assert got.code.tolist() == [int(ar.Code.BAD_ARGUMENT)] * 2


def test_store_writes_a_big_endian_array_by_value():
    for x in (np.array([1.5, -2.0], ">f2"), np.array([1.5, 3.25], ">f4"),
              np.array([-3, 7], ">i4"), np.array([513], ">u2")):
        got = ar.load(ar.store(ar.new_ub(size=64), 0, x), 0, x.dtype.newbyteorder("="),
                      x.size)
        assert got.tolist() == x.tolist()
        assert ar.load(ar.store(ar.new_ub(size=64), 0, x, dtype=x.dtype.name), 0,
                       x.dtype.name, x.size).tolist() == x.tolist()


@pytest.mark.parametrize("values, dtype", [([1.5], "int16"), (["7"], "int16"),
                                           ([70000.0], "half"), ([1e6], "float16"),
                                           ([-1], "uint16"), ([2**31], "int32"),
                                           ([True], "int16"), ([float("nan")], "int32"),
                                           ([1e39], "float32"),
                                           ([[1], [2, 3]], "half")])  # ragged: a ValueError
def test_store_rejects_a_value_the_type_cannot_hold(values, dtype):
    e = _raises(lambda: ar.store(ar.new_ub(size=64), 0, values, dtype=dtype))
    assert e.code == ar.Code.BAD_ARGUMENT and "store" in str(e)


@pytest.mark.parametrize("values, dtype, want", [
    ([3.0, -2.0], "int16", [3, -2]), ([0.1], "float32", [np.float32(0.1)]),
    ([float("nan"), float("-inf")], "half", [float("nan"), float("-inf")]),
    ([65504.0, 1e-9], "half", [65504.0, 0.0]), ([2**64 - 1], "uint64", [2**64 - 1]),
    ([-(2**63)], "int64", [-(2**63)]), (np.array([1, 2], np.int8), "float16", [1.0, 2.0])])
def test_store_converts_what_the_type_holds(values, dtype, want):
    got = ar.load(ar.store(ar.new_ub(size=64), 0, values, dtype=dtype), 0, dtype, len(want))
    np.testing.assert_array_equal(got, np.array(want, dtype=got.dtype))


@pytest.mark.parametrize("size", [2**40, 2**31, 0, -8, True, np.uint64(2**64 - 1), 64.0])
def test_new_ub_size_is_an_int32_byte_count(size):
    e = _raises(lambda: ar.new_ub(A2, size=size))
    assert e.code == ar.Code.BAD_ARGUMENT and "size" in str(e) and "2**31 - 1" in str(e)
    assert ar.new_ub(A2, size=np.int64(64)).shape == (64,)


@pytest.mark.parametrize("api, option", [
    ("whole_reduce_min", "order_only_value"), ("whole_reduce_min", "VALUE_INDEX"),
    ("whole_reduce_min", "ReduceOrder.ORDER_ONLY_INDEX"), ("reduce_data_block", "sum"),
    ("reduce_data_block", "ReduceType.MAX"), ("whole_reduce_min", "bogus"),
    ("whole_reduce_min", ar.ReduceType.SUM)])
def test_the_oracle_reads_an_option_as_the_public_functions_do(api, option):
    """The functions take a member, its name in any case, with its ``Enum.`` prefix or an
    order without ``ORDER_``; the oracle said ORDER_UNSUPPORTED / REDUCE_TYPE to the same
    spellings."""
    case = Case(api, A2, "float16", option, 128, dict(P), {"dst": (2048, 16), "src": (0, 512)},
                np.arange(4096, dtype=np.uint8))
    a, b = run_jax(case), run_oracle(case)
    assert a.code == b.code
    if a.code is None:
        assert np.array_equal(a.ub, b.ub) and np.array_equal(a.written, b.written)


def test_load_and_store_errors_name_their_own_function_and_parameter():
    ub = ar.new_ub(size=64)
    for fn, api in ((lambda: ar.load(ub, 0, "int8", 1), "load"),
                    (lambda: ar.store(ub, 0, [1], dtype="int8"), "store")):
        e = _raises(fn)
        assert e.code == ar.Code.DTYPE_UNSUPPORTED and f"{api}: dtype" in str(e)
    # more than the whole UB: the count (or the values), never a negative address range
    e = _raises(lambda: ar.load(ub, 0, "half", 2**70))
    assert e.code == ar.Code.UB_BOUNDS and f"count = {2**70}" in str(e) \
        and "at most 32 elements" in str(e) and "-" not in str(e).split("allowed")[1]
    e = _raises(lambda: ar.store(ub, 0, np.zeros(40, np.float16)))
    assert e.code == ar.Code.UB_BOUNDS and "values = '80 bytes'" in str(e)
    e = _raises(lambda: ar.load(ub, 62, "half", 2))
    assert e.code == ar.Code.UB_BOUNDS and "addr = 62" in str(e) and "[0, 60]" in str(e)


def test_a_negative_address_is_ub_bounds_in_run_batch_as_under_jit():
    import jax
    import jax.numpy as jnp

    ubs = np.zeros((2, 4096), np.uint8)
    _, status = ar.run_batch("whole_reduce_min", ubs, chip=A2, dtype="float16", mask=128,
                             dst=(-32, 16), src=(0, 512), **P)
    assert status.tolist() == [int(ar.Code.UB_BOUNDS)] * 2
    ub = ar.new_ub(A2)
    traced = jax.jit(lambda a: ar.ascendc.whole_reduce_min(
        ub, Tensor(a, "half", 16), Tensor(0, "half", 512), 128, 2, 1, 1, 8, chip=A2,
        return_info=True)[1].status)
    assert int(traced(jnp.int32(-32))) == int(ar.Code.UB_BOUNDS)
    assert _raises(lambda: Tensor(-32, "half", 16)).code == ar.Code.BAD_ARGUMENT


def test_a_cases_saturate_on_an_api_without_one_is_ignored_as_documented():
    """By design (a dump's meta may give ``saturate`` to every case): the same outcome."""
    import dataclasses

    plain = _case()
    with_flag = dataclasses.replace(plain, saturate=True)
    for run in (run_jax, run_oracle, lambda c: ar.run_cases([c])[0]):
        a, b = run(plain), run(with_flag)
        assert a.code is None and b.code is None and np.array_equal(a.ub, b.ub)


@pytest.mark.parametrize("value, want", [(np.int64(1), True), (np.uint8(0), False),
                                         (np.array(1), True), (1, True), (np.bool_(False), False),
                                         (2, None), ("yes", None), (np.array(True), None),
                                         (1.0, None), (np.array(2), None)])
def test_cal_index_takes_what_the_oracles_cal_index_takes(value, want):
    """The JAX path refused ``np.int64(1)`` and ``np.array(1)`` that the oracle takes as True
    (a differential campaign would have seen two codes for one case)."""
    ubs = np.zeros((1, 4096), np.uint8)
    ubs[0, :1024] = np.linspace(-3, 3, 512).astype(np.float16).view(np.uint8)
    for api, chip, mask in (("vec_reduce_min", "atlas_training", 128),
                            ("reduce_max", A2, 128)):
        params = {"repeat": 4, "src_rep_stride": 8}
        case = Case(api, chip, "float16", value, mask, params,
                    {"dst": (2048, 16), "src": (0, 512), "work_tensor": (3072, 512)}, ubs[0])
        a, b = run_jax(case), run_oracle(case)
        assert a.code == b.code, (api, value)
        if want is None:
            assert a.code == ar.Code.BAD_ARGUMENT, (api, value)
            continue
        assert a.code is None and np.array_equal(a.ub, b.ub), (api, value)
        same = run_jax(Case(api, chip, "float16", want, mask, params, case.tensors, ubs[0]))
        assert np.array_equal(a.ub, same.ub) and np.array_equal(a.written, same.written)
        assert a.written[2050:2052].all() == want         # the index slot written or not


def test_a_count_forms_int_cal_index_in_repeats_place_gets_a_hint():
    ub = ar.store(ar.new_ub(A2), 0, np.ones(288, np.float16))
    call = lambda *a: ar.ascendc.reduce_max(ub, Tensor(4096, "half", 16),  # noqa: E731
                                            Tensor(0, "half", 288),
                                            Tensor(8192, "half", 512), 288, *a, chip=A2)
    e = _raises(lambda: call(1))
    assert e.code == ar.Code.BAD_ARGUMENT and "src_rep_stride" in str(e) \
        and "reduce_max(ub, dst, src, tmp, 288, True)" in str(e)
    assert ar.load(call(True), 4096, "float16", 2).tolist()[0] == 1.0


def test_load_and_store_take_a_0d_integer_address_as_tensor_does():
    ub = ar.store(ar.new_ub(size=256), np.array(32), np.array([1.5, -2], np.float16))
    assert ar.load(ub, np.int64(32), "float16", np.array(2)).tolist() == [1.5, -2.0]
    assert ar.load(ub, np.array(32, np.uint16), "half", 2).tolist() == [1.5, -2.0]
    e = _raises(lambda: ar.load(ub, np.array(2**40), "half", 2))
    assert e.code == ar.Code.UB_BOUNDS and str(2**40) in str(e)         # not wrapped
    for bad in (np.array(32.0), np.array([32]), np.array(True)):
        assert _raises(lambda: ar.load(ub, bad, "half", 2)).code == ar.Code.BAD_ARGUMENT
        assert _raises(lambda: ar.store(ub, bad, np.ones(2, np.float16))).code == \
            ar.Code.BAD_ARGUMENT
    assert _raises(lambda: ar.load(ub, 0, "half", np.array(-1))).code == ar.Code.BAD_ARGUMENT


def test_run_batch_shows_a_short_list_as_given_not_as_numpys_float_reading():
    ubs = np.zeros((2, 4096), np.uint8)
    for mask, shown in (([2**64 - 1, 0], str(2**64 - 1)), ([1.5, 2], "[1.5, 2]")):
        with pytest.raises(ar.ConstraintError) as e:
            ar.run_batch("whole_reduce_min", ubs, chip=A2, dtype="float16", mask=mask,
                         dst=(1024, 16), src=(0, 512), order="ORDER_VALUE_INDEX", **P)
        assert e.value.code == ar.Code.BAD_ARGUMENT and shown in str(e.value) \
            and "float64" not in str(e.value)
