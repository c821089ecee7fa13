"""Issue 12: every documented TIK (product, API, dtype) row, the per-product vec_reduce_add
orders against numbers derived by hand from the page text, and the work_tensor bytes the
documentation and Huawei's TIK code disagree on (reported undefined)."""

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Tensor as T
from ascend_ref.case import run_jax, run_oracle
from ascend_ref.fuzz.compare import diff
from ascend_ref.fuzz.generate import RngDraw, draw_case

TIK = ("vec_reduce_min", "vec_reduce_max", "vec_reduce_add")

#: the documented rows (CANN 7.0–8.5 TIK pages atlastikapi_07_0088/0089/0090, seeds 002/003)
DOCUMENTED = {
    "atlas_200_300_500_inference": {"vec_reduce_min": {"float16"}, "vec_reduce_max": {"float16"},
                                    "vec_reduce_add": {"float16", "float32"}},
    "atlas_training": {"vec_reduce_min": {"float16"}, "vec_reduce_max": {"float16"},
                       "vec_reduce_add": {"float16", "float32"}},
    "atlas_inference_aicore": {"vec_reduce_min": {"float16", "float32"},
                               "vec_reduce_max": {"float16", "float32"},
                               "vec_reduce_add": {"float16", "float32"}},
    "atlas_inference_vector_core": {"vec_reduce_min": {"float16", "float32", "int16"},
                                    "vec_reduce_max": {"float16", "float32", "int16"},
                                    "vec_reduce_add": {"float16", "float32"}},
    "atlas_a2": {"vec_reduce_min": {"float16", "float32"}, "vec_reduce_max": {"float16", "float32"},
                 "vec_reduce_add": {"float16", "float32"}},
    "atlas_a3": {"vec_reduce_min": {"float16", "float32"}, "vec_reduce_max": {"float16", "float32"}},
    "atlas_200i_500_a2": {"vec_reduce_min": {"float16", "float32"},
                          "vec_reduce_max": {"float16", "float32"},
                          "vec_reduce_add": {"float16", "float32"}},
}
ROWS = [(c, a, d) for c, apis in DOCUMENTED.items() for a, ds in apis.items() for d in sorted(ds)]


def test_profiles_list_exactly_the_documented_rows():
    for c in ar.chips():
        prof = ar.chip(c)
        for a in TIK:
            assert set(prof.dtypes(a)) == DOCUMENTED.get(c, {}).get(a, set()), (c, a)


@pytest.mark.parametrize("chip,api,dtype", ROWS)
def test_documented_row_runs_and_matches_the_oracle(chip, api, dtype):
    """Differential row: random valid calls of this (product, API, dtype) agree bit for bit
    (bytes, written and undefined masks) between the JAX path and the scalar oracle."""
    ran = 0
    for i in range(400):
        case = draw_case(RngDraw(1200 + ROWS.index((chip, api, dtype)), i), apis=[api],
                         chips=[chip], tik_max_repeat=300)
        if case.dtype != dtype:
            continue
        a, b = run_jax(case), run_oracle(case)
        d = diff(a, b)
        assert d is None, f"{case.describe()}: {d}"
        ran += a.code is None
        if ran == 2:
            break
    assert ran == 2


def _single_lane(chip, values, dtype="float16"):
    """vec_reduce_add over repeats whose only active lane (mask = 1) holds ``values[r]``."""
    x = np.zeros((len(values), 128 if dtype == "float16" else 64), dtype)
    x[:, 0] = values
    n = x.size * x.itemsize
    ub = np.zeros(n + 4096 + 64, np.uint8)
    ub[:n] = x.view(np.uint8).ravel()
    R = len(values)
    args = (ub, 1, T(n, dtype, 16), T(0, dtype, x.size), T(n + 64, dtype, R), R, 8)
    j = np.asarray(ar.tik.vec_reduce_add(*args, chip=chip))
    o = ar.oracle.vec_reduce_add(*args, chip=chip)
    np.testing.assert_array_equal(j[n:n + 2], o.ub[n:n + 2])
    return float(j[n:n + x.itemsize].view(dtype)[0])


# Half precision facts used below: in [2048, 4096) the spacing of float16 is 2, so 2048 + 1 =
# 2049 lies half-way between 2048 and 2050 and rounds to even: 2048 (significand ...0000).
# 2050 + 1 = 2051 lies half-way between 2050 (...0001, odd) and 2052 (...0010): 2052.
# With mask = 1 each repeat's tree sum is its lane-0 value (adding +0 changes nothing).

def test_a2_order_worked_example():
    """Atlas A2 TIK page: "每255个范围内的repeat结果按照顺序相加" (the repeat results in order,
    255 at a time). Values 2048, 1, 1, 1:
    A2: ((2048 + 1) + 1) + 1 = (2048 + 1) + 1 = 2048 + 1 = 2048.
    Seed 003's tree (Atlas training): (2048 + 1) + (1 + 1) = 2048 + 2 = 2050."""
    v = [2048, 1, 1, 1]
    assert _single_lane("atlas_a2", v) == 2048.0
    assert _single_lane("atlas_training", v) == 2050.0


def test_a2_order_two_groups_worked_example():
    """R = 257: group A = repeats 0…254 in order = 2048 (2048 + 1 rounds back to 2048 each
    time), group B = repeats 255, 256 = 1 + 1 = 2; "最后将多个255个repeat结果之和两两相加":
    A + B = 2048 + 2 = 2050. (Continuing one running sum would give 2048.)"""
    v = [2048] + [1] * 256
    assert _single_lane("atlas_a2", v) == 2050.0


def test_200i_500_a2_order_worked_example():
    """Atlas 200I/500 A2 TIK page: A = repeat01 + repeat03 + … and B = repeat02 + repeat04 + …
    element-wise in order, C = the last repeat when repeat_times is odd, D = A + B + C, then
    the lanes of D added pairwise. Values 2048, 1, 0, 1, 1 (R = 5, pairs (0,1), (2,3)):
    A = 2048 + 0 = 2048, B = 1 + 1 = 2, C = 1; D = (2048 + 2) + 1 = 2050 + 1 = 2052; the
    tree over D's lanes adds zeros only: 2052.
    Tree order: ((2048 + 1) + (0 + 1)) + ((1 + 0) + 0) = (2048 + 1) + 1 = 2048.
    A2 order: (((2048 + 1) + 0) + 1) + 1 = 2048."""
    v = [2048, 1, 0, 1, 1]
    assert _single_lane("atlas_200i_500_a2", v) == 2052.0
    assert _single_lane("atlas_training", v) == 2048.0
    assert _single_lane("atlas_a2", v) == 2048.0


def test_200i_500_a2_two_lanes_worked_example():
    """Element-wise accumulation before the lane tree. mask = 2 (lanes 0, 1), R = 3:
    repeat 0 = (2048, 1), repeat 1 = (0, 1), repeat 2 = (0, 0).
    200I/500 A2: A = (2048, 1), B = (0, 1), C = (0, 0): D = (2048, 2) → 2048 + 2 = 2050.
    Tree order: repeat sums 2048 + 1 = 2048, 0 + 1 = 1, 0: (2048 + 1) + (0 + 0) = 2048."""
    x = np.zeros((3, 128), np.float16)
    x[0, :2] = [2048, 1]
    x[1, :2] = [0, 1]
    ub = np.zeros(768 + 4096, np.uint8)
    ub[:768] = x.view(np.uint8).ravel()
    out = {}
    for chip in ("atlas_200i_500_a2", "atlas_training"):
        args = (ub, 2, T(768, "half", 16), T(0, "half", 384), T(832, "half", 16), 3, 8)
        j = np.asarray(ar.tik.vec_reduce_add(*args, chip=chip))
        o = ar.oracle.vec_reduce_add(*args, chip=chip)
        np.testing.assert_array_equal(j[768:770], o.ub[768:770])
        out[chip] = float(j[768:770].view(np.float16)[0])
    assert out == {"atlas_200i_500_a2": 2050.0, "atlas_training": 2048.0}


def test_orders_are_profile_data():
    assert ar.chip("atlas_a2").add_order == "group255"
    assert ar.chip("atlas_200i_500_a2").add_order == "odd_even"
    assert ar.chip("atlas_training").add_order == "tree"
    for c in ("atlas_a2", "atlas_200i_500_a2"):
        assert f"add_order_{'group_combine' if c == 'atlas_a2' else 'odd_even'}" in \
            ar.chip(c).assumed


# ------------------------------------------------------------------ finding 6 -------------

def _info(api, chip, ub, mask, dst, src, work, r, rs, *extra):
    out, info = getattr(ar.tik, api)(ub, mask, dst, src, work, r, rs, *extra, chip=chip,
                                     return_info=True)
    o = getattr(ar.oracle, api)(ub, mask, dst, src, work, r, rs, *extra, chip=chip)
    np.testing.assert_array_equal(np.asarray(info.undefined), o.undefined)
    np.testing.assert_array_equal(np.asarray(info.written), o.written)
    return np.asarray(out), np.asarray(info.written), np.asarray(info.undefined)


def test_seed003_work0_is_undefined_not_34():
    """Seed 003 example 2 shows work = [34, 34, 36, 68, 68, 86]; Huawei's TIK code sums the
    stage-1 results in place (work[0] = 326). work[0] is reported undefined, never written;
    work[1:6] (both sources agree) are written; dst[0] = 326."""
    x = np.repeat(np.array([1, 2, 3], np.float16), 128)
    ub = np.zeros(2048, np.uint8)
    ub[:768] = x.view(np.uint8)
    out, w, u = _info("vec_reduce_add", "atlas_training", ub, 34, T(768, "half", 64),
                      T(0, "half", 384), T(896, "half", 64), 6, 3)
    assert u[896:898].all() and not w[896:898].any()
    assert w[898:908].all() and not u[898:908].any()
    assert out[898:908].view(np.float16).tolist() == [34, 36, 68, 68, 86]
    assert out[768:770].view(np.float16)[0] == 326


def test_vec_reduce_add_r1_work_untouched_is_undefined():
    """R = 1: TIK writes dst directly and leaves work_tensor alone; the documentation's stage
    1 would put the sum in work[0]: undefined."""
    ub = np.zeros(2048, np.uint8)
    ub[:256] = np.ones(128, np.float16).view(np.uint8)
    out, w, u = _info("vec_reduce_add", "atlas_inference_aicore", ub, 128, T(512, "half", 16),
                      T(0, "half", 128), T(544, "half", 16), 1, 8)
    assert u[544:576].all() and not w[544:576].any()
    assert out[512:514].view(np.float16)[0] == 128


@pytest.mark.parametrize("api", ["vec_reduce_min", "vec_reduce_max"])
def test_minmax_without_index_front_of_work_is_undefined(api):
    """Without cal_index TIK runs stage 2 in place from work[0] (R = 2 leaves work[1] = 0,
    not the first stage's lane): work[0 : 2*ceil(2R/L)] is undefined; with cal_index the
    later stages start after the stage-1 pairs, which stay written."""
    ub = np.zeros(4096, np.uint8)
    ub[:512] = np.arange(256, dtype=np.float16).view(np.uint8)
    args = (ub, 128, T(1024, "half", 16), T(0, "half", 256), T(1056, "half", 64), 2, 8)
    _, w, u = _info(api, "atlas_training", *args, False)
    assert u[1056:1060].all() and not w[1056:1060].any()        # 2*ceil(4/128) = 2 elements
    assert w[1060:1064].all()                                   # repeat 1's pair
    _, w, u = _info(api, "atlas_training", *args, True)
    assert w[1056:1064].all() and not u[1056:1064].any()


def test_float32_and_int16_index_width():
    """float32: the index is stored as uint32 bits, cal_index allows 4095 repeats; int16:
    255 repeats (TIK pages / source docstring)."""
    x = np.zeros(64 * 3, np.float32)
    x[64 * 2 + 5] = -7
    ub = np.zeros(4096, np.uint8)
    ub[:768] = x.view(np.uint8)
    out, w, u = _info("vec_reduce_min", "atlas_a2", ub, 64, T(1024, "float", 8),
                      T(0, "float", 192), T(1056, "float", 64), 3, 8, True)
    assert out[1024:1028].view(np.float32)[0] == -7
    assert out[1028:1032].view(np.uint32)[0] == 2 * 64 + 5
    for m in (ar.tik, ar.oracle):
        with pytest.raises((ar.ConstraintError, ar.oracle.OracleError)) as e:
            m.vec_reduce_max(np.zeros(4096, np.uint8), 128, T(1024, "int16", 16),
                             T(0, "int16", 512), T(1056, "int16", 64), 256, 0, True,
                             chip="atlas_inference_vector_core")
        assert e.value.code == ar.Code.REPEAT_RANGE
    # float32 with cal_index: 4095 repeats run (every repeat reads the same 64 lanes: srs 0),
    # 4096 are REPEAT_RANGE, on both implementations
    ub = np.zeros(1 << 17, np.uint8)
    ub[:256] = np.arange(64, 0, -1, dtype=np.float32).view(np.uint8)     # minimum 1 at lane 63
    args = (64, T(1024, "float", 8), T(0, "float", 64), T(2048, "float", 30000))
    for m in (ar.tik, ar.oracle):
        got = m.vec_reduce_min(ub, *args, 4095, 0, True, chip="atlas_a2")
        got = np.asarray(getattr(got, "ub", got))
        assert got[1024:1028].view(np.float32)[0] == 1 and \
            got[1028:1032].view(np.uint32)[0] == 63, m.__name__
        with pytest.raises((ar.ConstraintError, ar.oracle.OracleError)) as e:
            m.vec_reduce_min(ub, *args, 4096, 0, True, chip="atlas_a2")
        assert e.value.code == ar.Code.REPEAT_RANGE, m.__name__


def test_add_order_choose_computes_only_a_constant_products_order():
    """Product.add_order_choose: with a constant profile only that product's order is
    computed (one branch, its value); with a traced profile every order is, and the where
    chain picks each product's value."""
    import jax
    import jax.numpy as jnp

    from ascend_ref.chips import ADD_ORDERS
    from ascend_ref.engine import Product

    class P:
        def __init__(self, order):
            self.chip = type("C", (), {"add_order": order})()

    def branches(ran):
        return [(o, (lambda o=o: ran.append(o) or jnp.float32(ADD_ORDERS.index(o) + 10)))
                for o in ADD_ORDERS]

    for k, order in enumerate(ADD_ORDERS):
        ran: list = []
        got = Product(P(np.int32(k))).add_order_choose(branches(ran))
        assert ran == [order] and float(got) == k + 10
    ran = []
    f = jax.jit(lambda a: Product(P(a)).add_order_choose(branches(ran)))
    assert [float(f(np.int32(k))) for k in range(len(ADD_ORDERS))] == [10.0, 11.0, 12.0]
    assert sorted(ran) == sorted(ADD_ORDERS)             # traced: all three, once
