"""One test per constraint code: the JAX path raises ConstraintError with that code and a
message naming API, parameter, value, allowed range and product; the oracle agrees."""

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Code, Tensor as T, explain
from ascend_ref.oracle import OracleError

H = "half"


def wr(chip="atlas_a2", dst=T(4096, H, 64), src=T(0, H, 512), mask=128, r=4, drs=1, bs=1, rs=8,
       order="ORDER_VALUE_INDEX", dtype=None):
    if dtype:
        dst, src = T(dst.addr, dtype, dst.size), T(src.addr, dtype, src.size)
    return lambda m: m.whole_reduce_min(np.zeros(8192, np.uint8), dst, src, mask, r, drs, bs, rs,
                                        order, chip=chip)


def tik(api="vec_reduce_min", chip="atlas_training", mask=128, dst=T(4096, H, 16),
        src=T(0, H, 512), work=T(4160, H, 64), r=2, rs=8, cal_index=True):
    def run(m):
        args = (np.zeros(8192, np.uint8), mask, dst, src, work, r, rs)
        return getattr(m, api)(*args, chip=chip) if api == "vec_reduce_add" else \
            getattr(m, api)(*args, cal_index, chip=chip)
    return run


def big_index(m):
    ub = np.zeros(140000, np.uint8)
    ub[131072:131074] = np.array([-1], np.float16).view(np.uint8)    # repeat 1 lane 0 wins
    return m.vec_reduce_min(ub, 128, T(132000 // 32 * 32, H, 16), T(0, H, 65664),
                            T(132160, H, 64), 2, 4096, True, chip="atlas_training")


def spr_unwritten(m):
    """GetReduceRepeatMaxMinSpr before any reduction wrote the register."""
    if m is ar.oracle:
        return m.spr.get_reduce_repeat_max_min_spr(m.spr.OracleSpr(), H, chip="atlas_a2")
    return m.get_reduce_repeat_max_min_spr(ar.ReduceSpr(), H, chip="atlas_a2")


CASES = {
    Code.CHIP_UNKNOWN: wr(chip="atlas_z9"),
    Code.API_UNSUPPORTED: wr(chip="atlas_inference_vector_core"),
    Code.DTYPE_UNSUPPORTED: wr(dtype="int16"),
    Code.DTYPE_MISMATCH: wr(dst=T(4096, "float", 64)),
    Code.ORDER_UNSUPPORTED: wr(chip="atlas_training", order="ORDER_ONLY_VALUE"),
    Code.REDUCE_TYPE: lambda m: m.reduce_data_block(np.zeros(8192, np.uint8), T(4096, H, 64),
                                                    T(0, H, 512), 128, 1, 1, 1, 8,
                                                    reduce_type="MEAN", chip="atlas_a2"),
    Code.MASK_RANGE: wr(mask=129),
    Code.MASK_BITS: wr(mask=[1, 2, 3]),
    Code.MASK_ZERO: wr(chip="atlas_training", mask=0),
    Code.REPEAT_RANGE: wr(r=256),
    Code.STRIDE_RANGE: wr(rs=65536),
    Code.DST_STRIDE_ZERO: wr(chip="atlas_training", drs=0),
    Code.ALIGN: wr(dst=T(4098, H, 64)),
    Code.UB_BOUNDS: wr(dst=T(8192, H, 64)),
    Code.TENSOR_BOUNDS: wr(src=T(0, H, 500)),
    Code.OVERLAP: wr(dst=T(512, H, 64), rs=1, r=20),
    Code.WORK_SIZE: tik(work=T(4160, H, 17)),
    Code.INDEX_OVERFLOW: big_index,
    Code.SATURATE_DTYPE: lambda m: m.whole_reduce_sum(np.zeros(8192, np.uint8), T(4096, "float", 8),
                                                      T(0, "float", 256), 64, 1, 1, 1, 8,
                                                      chip="atlas_a2", saturate=True),
    Code.BAD_ARGUMENT: wr(mask=1.5),
    Code.SPR_UNDEFINED: spr_unwritten,
    Code.MASK_MODE: wr(chip="atlas_training", mask=ar.CounterMask(256), r=1),  # no SetMaskCount
}


def test_every_code_has_a_case():
    assert set(CASES) == set(Code) - {Code.OK}


@pytest.mark.parametrize("code", sorted(CASES), ids=lambda c: c.name)
def test_code(code):
    call = CASES[code]
    mod = ar.tik if call.__name__ in ("run", "big_index") else ar.ascendc
    with pytest.raises(ar.ConstraintError) as e:
        call(mod)
    assert e.value.code == code, str(e.value)
    msg = str(e.value)
    assert msg.startswith(f"[{code.name}]") and "allowed" in msg
    if code not in (Code.CHIP_UNKNOWN, Code.BAD_ARGUMENT):
        assert e.value.chip and e.value.chip in msg and e.value.param in msg
    assert isinstance(e.value, ValueError)
    if code is not Code.CHIP_UNKNOWN:
        with pytest.raises(OracleError) as o:
            call(ar.oracle)
        assert o.value.code == code


def test_valid_neighbours_do_not_raise():
    """The same calls with the faulty parameter fixed run (so each test isolates one rule)."""
    wr()(ar.ascendc)
    tik()(ar.tik)
    tik(work=T(4160, H, 18))(ar.tik)
    wr(dst=T(512, H, 64), rs=8, r=1)(ar.ascendc)   # in place, one repeat: allowed


def test_explain_takes_a_code_its_name_or_an_integral_number():
    want = ar.explain(int(Code.UB_BOUNDS))
    assert want.startswith("UB_BOUNDS: ")
    for same in (Code.UB_BOUNDS, "UB_BOUNDS", "ub_bounds", np.int32(14), np.array(14), 14.0):
        assert ar.explain(same) == want, repr(same)
    assert ar.explain(0).startswith("OK: ")
    for bad in (14.5, True, np.bool_(False), 9999, -1, "x", None, [14], float("nan")):
        with pytest.raises(ar.ConstraintError) as e:      # was: a wrong code or a ValueError
            ar.explain(bad)
        assert e.value.code == Code.BAD_ARGUMENT and e.value.param == "code", repr(bad)
        assert f"[0, {int(max(Code))}]" in str(e.value)


@pytest.mark.parametrize("chip, allowed", [
    ("atlas_training", "['ORDER_VALUE_INDEX']"),
    ("atlas_a2", "['ORDER_VALUE_INDEX', 'ORDER_INDEX_VALUE', 'ORDER_ONLY_VALUE', "
                 "'ORDER_ONLY_INDEX']")])
def test_an_order_of_no_name_names_the_product_and_its_orders(chip, allowed):
    """order="foo": the message named no product and listed all four orders, three of which
    atlas_training refuses; the public function, run_batch and make_case say the same."""
    want = f"order = 'foo' is not allowed on {chip}; allowed: one of {allowed}"
    calls = [lambda: wr(chip=chip, order="foo")(ar.ascendc),
             lambda: ar.run_batch("whole_reduce_min", np.zeros((2, 8192), np.uint8), chip=chip,
                                  dtype=H, mask=128, order="foo", repeat_time=1,
                                  dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8,
                                  src=(0, 512), dst=(4096, 64)),
             lambda: explain.make_case("whole_reduce_min", chip=chip, option="foo")]
    for call in calls:
        with pytest.raises(ar.ConstraintError) as e:
            call()
        assert e.value.code == Code.ORDER_UNSUPPORTED and want in str(e.value), str(e.value)
    with pytest.raises(OracleError) as o:
        wr(chip=chip, order="foo")(ar.oracle)
    assert o.value.code == Code.ORDER_UNSUPPORTED
