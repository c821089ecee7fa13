"""The seeds' worked examples, bit for bit, through the public API (SPEC §8).

Expected values are read off the seed documents (numbers in the text), not computed by the
package. Where a seed elides data ("..."), the test fills it and says so.
"""

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Tensor


def seed000_input():
    """Seed 000: 512 halves in 4 repeats. The seed shows repeat 0 (10s, 1 at lane 52), repeat 1
    (20s, 2 at lane 100) and the last repeat (30s, 3 at lane 19); repeat 2 is elided ("..."),
    so we fill it with 25s and 2.5 at lane 7."""
    x = np.empty(512, np.float16)
    x[0:128], x[52] = 10, 1
    x[128:256], x[128 + 100] = 20, 2
    x[256:384], x[256 + 7] = 25, 2.5
    x[384:512], x[384 + 19] = 30, 3
    return x


ORDERS_000 = ["ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE", "ORDER_ONLY_VALUE", "ORDER_ONLY_INDEX"]


@pytest.mark.parametrize("chip", ["atlas_a2", "atlas_a3", "ascend950"])
@pytest.mark.parametrize("bitmode", [False, True])
@pytest.mark.parametrize("order", ORDERS_000)
def test_seed000_whole_reduce_min_all_orders(chip, bitmode, order):
    mask = [2**64 - 1, 2**64 - 1] if bitmode else 128
    ub = ar.store(ar.new_ub(chip), 0, seed000_input())
    dst = Tensor(2048, "half", 16)
    ub = ar.ascendc.whole_reduce_min(ub, dst, Tensor(0, "half", 512), mask, 4, 1, 1, 8, order,
                                     chip=chip)
    out = ar.load(ub, 2048, "float16", 16)
    bits = out.view(np.uint16)
    mins, idx = [1, 2, 2.5, 3], [52, 100, 7, 19]
    if order == "ORDER_VALUE_INDEX":       # seed: [1 3.09944e-06 2 5.96046e-06 ... 3 1.13249e-06]
        assert out[0::2][:4].tolist() == mins
        assert bits[1::2][:4].tolist() == idx
        assert np.isclose(float(out[1]), 3.09944e-06, rtol=1e-5)
        assert np.isclose(float(out[3]), 5.96046e-06, rtol=1e-5)
        assert np.isclose(float(out[7]), 1.13249e-06, rtol=1e-5)
    elif order == "ORDER_INDEX_VALUE":     # seed: [3.09944e-06 1 5.96046e-06 2 ... 1.13249e-06 3]
        assert out[1::2][:4].tolist() == mins
        assert bits[0::2][:4].tolist() == idx
    elif order == "ORDER_ONLY_VALUE":      # seed: [1 2 ... 3 0 0 0 ...]
        assert out[:4].tolist() == mins and not bits[4:].any()
    else:                                   # seed: [3.09944e-06 0 5.96046e-06 0 ... 1.13249e-06 0]
        assert out.view(np.uint32)[:4].tolist() == idx and not bits[8:].any()


def test_seed000_other_product_orders():
    ub = ar.store(ar.new_ub("atlas_inference_aicore"), 0, seed000_input())
    ub = ar.ascendc.whole_reduce_min(ub, Tensor(2048, "half", 8), Tensor(0, "half", 512), 128,
                                     4, 1, 1, 8, ar.ReduceOrder.ORDER_INDEX_VALUE,
                                     chip="atlas_inference_aicore")
    assert ar.load(ub, 2048, "uint16", 8)[0::2].tolist() == [52, 100, 7, 19]


def test_seed000_index_reinterpretation_with_ml_dtypes():
    """Index 52 in a half slot is 52 * 2**-24 = 3.0994e-06; ml_dtypes/numpy view gives 52 back."""
    import ml_dtypes  # noqa: F401  (float16 is numpy's; ml_dtypes supplies finfo / other types)

    ub = ar.store(ar.new_ub("atlas_a2"), 0, seed000_input())
    ub = ar.ascendc.whole_reduce_min(ub, Tensor(2048, "half", 8), Tensor(0, "half", 512), 128, 4,
                                     1, 1, 8, chip="atlas_a2")
    slot = ar.load(ub, 2048, "float16", 2)
    assert float(slot[1]) == 52 * 2.0**-24
    assert int(slot.view(np.uint16)[1]) == 0x0034


def _rdb(values, reduce_type, chip="atlas_a2", dtype="half"):
    n = 256 // np.dtype(np.float16 if dtype == "half" else np.float32).itemsize
    ub = ar.store(ar.new_ub(chip), 0, np.asarray(values, np.float16 if dtype == "half" else np.float32))
    ub = ar.ascendc.reduce_data_block(ub, Tensor(512, dtype, 8), Tensor(0, dtype, n), n, 1, 1,
                                      1, 8, reduce_type=reduce_type, chip=chip)
    return ar.load(ub, 512, "float16" if dtype == "half" else "float32", 8).tolist()


def test_seed001_max():
    """Seed 001 MAX: 2 in block 0, 3 in block 1, ..., 4 in block 7; middle blocks elided (1s)."""
    x = np.ones(128, np.float16)
    x[10], x[29], x[115] = 2, 3, 4
    assert _rdb(x, "MAX") == [2, 3, 1, 1, 1, 1, 1, 4]


def test_seed001_min():
    """Seed 001 MIN: [2, -3, ..., 4]; middle blocks elided (10s, so their min is 10)."""
    x = np.full(128, 10, np.float16)
    x[11], x[29], x[121] = 2, -3, 4
    assert _rdb(x, ar.ReduceType.MIN) == [2, -3, 10, 10, 10, 10, 10, 4]


def test_seed001_sum():
    """Seed 001 SUM: blocks of 1s, 2s, ..., 3s → [16, 32, ..., 48]; middle blocks elided (1s)."""
    x = np.ones(128, np.float16)
    x[16:32], x[112:128] = 2, 3
    assert _rdb(x, "SUM") == [16, 32, 16, 16, 16, 16, 16, 48]


def test_seed001_masked_blocks_per_product():
    """Seed 001: float MAX with mask 32 computes blocks 0-3 only; the last four are kept (A2),
    −inf (950, 200I/500 A2 float) — here for half: 950 −inf, 200I/500 A2 −65504."""
    x = np.arange(128, dtype=np.float16)
    def run(chip):
        ub = ar.store(ar.new_ub(chip), 0, x)
        ub = ar.store(ub, 512, np.full(8, 7, np.float16))
        ub = ar.ascendc.reduce_data_block(ub, Tensor(512, "half", 8), Tensor(0, "half", 128), 64,
                                          1, 1, 1, 8, reduce_type="MAX", chip=chip)
        return ar.load(ub, 512, "float16", 8).tolist()
    head = [15, 31, 47, 63]
    assert run("atlas_a2") == head + [7] * 4
    assert run("ascend950") == head + [-np.inf] * 4
    assert run("atlas_200i_500_a2") == head + [-65504] * 4


def test_seed001_float_mask32_fill_minus_inf():
    """Seed 001's own sentence: float, MAX, mask=32 → the last four blocks return -inf (950)."""
    x = np.arange(64, dtype=np.float32)
    ub = ar.store(ar.new_ub("ascend950"), 0, x)
    ub = ar.ascendc.reduce_data_block(ub, Tensor(256, "float", 8), Tensor(0, "float", 64), 32, 1,
                                      1, 1, 8, reduce_type="MAX", chip="ascend950")
    assert ar.load(ub, 256, "float32", 8).tolist() == [7, 15, 23, 31] + [-np.inf] * 4


@pytest.mark.parametrize("chip", ["atlas_training", "atlas_200_300_500_inference"])
def test_seed002_vec_reduce_min(chip):
    """Seed 002: 256 halves (the seed's data), repeat 2, stride 8, cal_index → [-9.97, 2.56e-06]."""
    x = np.array(SEED002, np.float16)
    ub = ar.store(ar.new_ub(chip), 0, x)
    ub = ar.store(ub, 512, np.zeros(16, np.float16))
    dst, work = Tensor(512, "half", 16), Tensor(544, "half", 18)
    ub = ar.tik.vec_reduce_min(ub, 128, dst, Tensor(0, "half", 256), work, 2, 8, cal_index=True,
                               chip=chip)
    out = ar.load(ub, 512, "float16", 16)
    assert float(out[0]) == float(np.float16(-9.97))
    assert int(out.view(np.uint16)[1]) == 43 and np.isclose(float(out[1]), 2.56e-06, rtol=1e-2)
    assert not out.view(np.uint16)[2:].any()
    with pytest.raises(ar.ConstraintError) as e:   # 17 elements is one short of the cascade need
        ar.tik.vec_reduce_min(ub, 128, dst, Tensor(0, "half", 256), Tensor(544, "half", 17), 2,
                              8, cal_index=True, chip=chip)
    assert e.value.code == ar.Code.WORK_SIZE


def test_seed003_example1():
    ub = ar.store(ar.new_ub("atlas_training"), 0, np.ones(256, np.float16))
    ub = ar.tik.vec_reduce_add(ub, 128, Tensor(512, "half", 32), Tensor(0, "half", 256),
                               Tensor(576, "half", 32), 2, 8, chip="atlas_training")
    assert ar.load(ub, 512, "float16", 32).tolist() == [256] + [0] * 31


@pytest.mark.parametrize("chip", ["atlas_training", "atlas_inference_aicore",
                                  "atlas_inference_vector_core", "atlas_200_300_500_inference"])
def test_seed003_example2(chip):
    x = np.repeat(np.array([1, 2, 3], np.float16), 128)
    ub = ar.store(ar.new_ub(chip), 0, x)
    dst, work = Tensor(768, "half", 64), Tensor(896, "half", 64)
    ub = ar.tik.vec_reduce_add(ub, 34, dst, Tensor(0, "half", 384), work, 6, 3, chip=chip)
    assert ar.load(ub, 896, "float16", 6).tolist() == [34, 34, 36, 68, 68, 86]
    assert ar.load(ub, 768, "float16", 64).tolist() == [326] + [0] * 63


def test_spec3_saturation_example():
    """[60000, 60000, -30000, 100]: saturating, every add rounded to half: 65504 + (-29904)
    = 35600, a tie between 35584 and 35616 → even → 35584 (SPEC §3; the seed's 35604 is
    exact arithmetic). Non-saturating: 60000 + 60000 = inf, so the sum is inf."""
    x = np.zeros(128, np.float16)
    x[:4] = [60000, 60000, -30000, 100]
    for saturate, want in [(True, 35584.0), (False, np.inf)]:
        # Atlas training has only the saturation mode (issue 12): the TIK rows run on the
        # Atlas inference AI Core, which has both
        ub = ar.store(ar.new_ub("atlas_inference_aicore"), 0, x)
        ub = ar.tik.vec_reduce_add(ub, 4, Tensor(512, "half", 16), Tensor(0, "half", 128),
                                   Tensor(544, "half", 16), 1, 8, chip="atlas_inference_aicore",
                                   saturate=saturate)
        assert float(ar.load(ub, 512, "float16", 1)[0]) == want
        ub = ar.store(ar.new_ub("atlas_a2"), 0, x)
        ub = ar.ascendc.whole_reduce_sum(ub, Tensor(512, "half", 16), Tensor(0, "half", 128), 4,
                                         1, 1, 1, 8, chip="atlas_a2", saturate=saturate)
        assert float(ar.load(ub, 512, "float16", 1)[0]) == want


SEED002 = [
    6.344, 1.954, -3.246, 9.555, 9.29, -6.95, 7.586, 5.67, 3.2, -3.234, 0.4087, -5.777, -7.156,
    -4.71, -1.587, 4.023, 2.242, 3.72, 3.064, 6.21, -1.627, -5.69, 1.263, -0.577, 0.1646, 1.894,
    -9.945, -7.18, 3.72, 1.8955, -9.53, -0.0693, -4.836, 9.13, 1.122, 4.766, -7.957, -5.07,
    -6.93, 9.47, 2.912, 5.938, -2.617, -9.97, 3.99, 2.805, 1.9375, 9.04, 0.03117, 0.6147, -2.37,
    -6.297, -4.715, -5.89, 3.137, -0.976, 5.79, 0.02997, -2.07, -9.17, -1.8, 3.498, -9.266,
    4.562, 7.023, -8.78, -1.974, 7.508, -2.205, 2.162, -2.775, 4.1, 6.633, -8.1, 3.334, -4.52,
    6.26, -5.516, -7.223, -8.586, 5., -3.787, 3.836, -1.833, -1.063, -6.188, -8.36, -5.91,
    6.812, 6.137, -7.746, 9.2, -5.492, 2.799, -7.613, 9.695, -4.074, 3.188, 7.145, -7.477, -7.01,
    6.137, -4.77, 8.42, 4.336, 9.836, -6.86, 3.363, 1.32, -4.36, 2.629, -3.09, 9.53, -9.24, 8.99,
    3.355, 9.77, 1.465, 2.826, 9.82, 8.94, 1.122, 9.516, -2.146, -4.566, -4.414, -1.057, -7.97,
    0.4263, 0.171, -4.254, 1.046, -3.191, 9.36, 3.287, -0.6216, -4.957, -3.605, -9.35, -6.863,
    1.472, 5.06, -9.75, -9.54, -3.707, 6.92, 5.88, -4.855, -8.21, 2.697, 8.17, 7.836, 6.008,
    -4.402, -1.721, 6.39, -3.992, -5.33, 6.56, -9.305, 0.7114, -5.58, 8.93, -1.598, -8.164,
    -5.805, 0.4302, -8.766, -9.414, 8.81, 4.6, -9.83, 6.5, 7.38, -0.9526, 8.04, 5.008, 4.863,
    -8.36, 0.4224, 8.68, -8.484, -0.9536, 8.164, 0.8613, -4.027, -4.848, -2.875, 6.67, -7.75,
    -6.133, 0.08655, -9.96, 7.266, 6.082, 5.883, -8.32, -8.87, -8.945, 4.363, -1.022, -8.57,
    6.66, -2.553, 0.0873, 8.89, -4.336, 5.01, 8.24, -2.953, 3.93, 9.695, 6.227, 8.625, -7.926,
    9.51, 6.27, -3.28, 0.911, -7.938, -7.48, -9.94, 7.57, -9.62, 3.654, -5.867, 4.45, 4.492,
    -3.129, 4.523, 1.69, 3.947, 0.9663, -9.766, 9.48, -4.652, -1.876, -2.516, 2.34, 7.16, 5.223,
    5.473, 1.373, 1.489, 1.538, -0.3293, -8.61, 1.894, -2.56, -2.379, 8.48, -4.81, -0.877, -7.85,
    -2.148, 1.938,
]
assert len(SEED002) == 256


def test_atlas_training_has_only_the_saturation_mode():
    """TF adapter set_device_sat_mode (CANN 7.0–9.0): "针对Atlas 训练系列产品,默认值为饱和模式,
    且仅支持饱和模式". Half sums saturate by default; asking for the other mode is refused;
    float32 is unaffected (seed 001: float supports only the non-saturating mode)."""
    x = np.zeros(128, np.float16)
    x[:4] = [60000, 60000, -30000, 100]
    ub = ar.store(ar.new_ub("atlas_training"), 0, x)
    args = (ub, 4, Tensor(512, "half", 16), Tensor(0, "half", 128), Tensor(544, "half", 16), 1, 8)
    out = ar.tik.vec_reduce_add(*args, chip="atlas_training")
    assert float(ar.load(out, 512, "float16", 1)[0]) == 35584.0
    for m in (ar.tik, ar.oracle):
        with pytest.raises((ar.ConstraintError, ar.oracle.OracleError)) as e:
            m.vec_reduce_add(*args, chip="atlas_training", saturate=False)
        assert e.value.code == ar.Code.SATURATE_DTYPE
    f = np.zeros(64, np.float32)
    f[:2] = [3e38, 3e38]
    ub = ar.store(ar.new_ub("atlas_training"), 0, f)
    out = ar.tik.vec_reduce_add(ub, 2, Tensor(512, "float", 8), Tensor(0, "float", 64),
                                Tensor(544, "float", 8), 1, 8, chip="atlas_training")
    assert float(ar.load(out, 512, "float32", 1)[0]) == np.inf
