"""The scalar oracle against the seeds' worked examples (expected values derived by hand
from the seed text, not from the oracle), plus one test per error code it can raise.

numpy only; the operands are a small stand-in with ``.addr / .dtype / .size`` (the oracle's
documented duck type), plus one test with the real ``ascend_ref.ub.Tensor``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from ascend_ref.constraints import Code
from ascend_ref import oracle as O

U64 = (1 << 64) - 1


@dataclass(frozen=True)
class T:
    addr: int
    dtype: str
    size: int


def ub_with(nbytes, *stores):
    """A zero UB of ``nbytes`` with ``(addr, array)`` stored little-endian."""
    ub = np.zeros(nbytes, dtype=np.uint8)
    for addr, arr in stores:
        b = np.ascontiguousarray(arr).view(np.uint8)
        ub[addr:addr + b.size] = b
    return ub


def load(ub, addr, dtype, count):
    return ub[addr:addr + count * np.dtype(dtype).itemsize].view(dtype)


def h(x):
    """Bits of a float16 value."""
    return int(np.array(x, np.float16).view(np.uint16))


def code_of(fn, *args, **kw):
    with pytest.raises(O.OracleError) as ei:
        fn(*args, **kw)
    assert isinstance(ei.value.code, Code)
    return ei.value.code


# ============================================================ seed 000: WholeReduceMin

def seed000_src():
    src = np.empty(512, np.float16)
    src[0:128] = 10
    src[52] = 1            # seed: repeat 0 minimum at lane 52
    src[128:256] = 20
    src[128 + 100] = 2     # seed: repeat 1 minimum at lane 100
    # repeat 2 is elided ("...") in the seed; our own data: all 15 with 7 at lanes 0 and 127
    # (a tie: the lowest lane index, 0, must win).
    src[256:384] = 15
    src[256 + 0] = 7
    src[256 + 127] = 7
    src[384:512] = 30
    src[384 + 19] = 3      # seed: last repeat minimum at lane 19
    return src


SRC0, DST0 = 0, 1024


def run000(order, mask=128, chip="atlas_a2"):
    ub = ub_with(2048, (SRC0, seed000_src()))
    res = O.whole_reduce_min(ub, T(DST0, "float16", 16), T(SRC0, "float16", 512), mask, 4, 1, 1,
                             8, order, chip=chip)
    return ub, res


@pytest.mark.parametrize("mask", [128, [U64, U64]])
def test_seed000_value_index(mask):
    ub, res = run000("ORDER_VALUE_INDEX", mask)
    bits = load(res.ub, DST0, np.uint16, 16)
    assert list(bits[:8]) == [h(1), 52, h(2), 100, h(7), 0, h(3), 19]
    assert list(bits[8:]) == [0] * 8
    halves = bits.view(np.float16)
    # the seed prints index 52 in a half slot as 3.09944e-06 (bits 52 = 52 * 2^-24)
    assert halves[1] == np.float16(52 * 2.0 ** -24)
    assert abs(float(halves[1]) - 3.09944e-06) < 1e-10
    assert abs(float(halves[3]) - 5.96046e-06) < 1e-10
    assert abs(float(halves[7]) - 1.13249e-06) < 1e-10
    assert res.written.sum() == 16 and res.written[DST0:DST0 + 16].all()
    assert not res.undefined.any()
    np.testing.assert_array_equal(np.delete(res.ub, np.s_[DST0:DST0 + 16]),
                                  np.delete(ub, np.s_[DST0:DST0 + 16]))
    assert (ub[DST0:DST0 + 32] == 0).all()       # the input is not mutated


def test_seed000_index_value():
    _, res = run000("ORDER_INDEX_VALUE")
    assert list(load(res.ub, DST0, np.uint16, 8)) == [52, h(1), 100, h(2), 0, h(7), 19, h(3)]


def test_seed000_only_value():
    _, res = run000("ORDER_ONLY_VALUE")
    vals = load(res.ub, DST0, np.float16, 16)
    assert list(vals[:4]) == [1, 2, 7, 3] and list(vals[4:]) == [0] * 12
    assert res.written.sum() == 8


def test_seed000_only_index():
    _, res = run000("ORDER_ONLY_INDEX")
    assert list(load(res.ub, DST0, np.uint32, 4)) == [52, 100, 0, 19]
    # the seed's view as halves: [3.09944e-06 0 5.96046e-06 0 ... 1.13249e-06 0]
    assert list(load(res.ub, DST0, np.uint16, 8)) == [52, 0, 100, 0, 0, 0, 19, 0]


def test_seed000_enum_order_and_real_tensor():
    from enum import Enum

    class ReduceOrder(Enum):
        ORDER_INDEX_VALUE = 1

    _, res = run000(ReduceOrder.ORDER_INDEX_VALUE)
    assert list(load(res.ub, DST0, np.uint16, 2)) == [52, h(1)]
    Tensor = pytest.importorskip("ascend_ref.ub").Tensor
    ub = ub_with(2048, (SRC0, seed000_src()))
    res = O.whole_reduce_min(ub, Tensor(DST0, "half", 16), Tensor(SRC0, "half", 512), 128, 4, 1,
                             1, 8, chip="atlas_a2")
    assert list(load(res.ub, DST0, np.uint16, 2)) == [h(1), 52]


def test_whole_reduce_max_and_strides():
    # max of repeat 0 with srcBlkStride 2 (reads blocks 0,2,..,14); dstRepStride 2 leaves gaps
    src = np.arange(512, dtype=np.float16) * np.float16(0.5)
    ub = ub_with(4096, (0, src))
    res = O.whole_reduce_max(ub, T(2048, "float16", 16), T(0, "float16", 512), 128, 2, 2, 2, 1,
                             chip="atlas_a2")
    # repeat r reads element 16*r + 32*b + e (r*srcRepStride*16 elements, blocks 2 apart):
    # the maximum is lane 127 = block 7 pos 15 → element 16r + 224 + 15
    bits = load(res.ub, 2048, np.uint16, 8)
    assert list(bits) == [h((239) * 0.5), 127, 0, 0, h((255) * 0.5), 127, 0, 0]


def test_integer_types_on_950():
    src = np.zeros(128, np.int16)
    src[:4] = [-5, 3, 3, -7]
    ub = ub_with(1024, (0, src))
    res = O.whole_reduce_max(ub, T(512, "int16", 2), T(0, "int16", 128), 4, 1, 1, 1, 8,
                             chip="ascend950")
    assert list(load(res.ub, 512, np.int16, 2)) == [3, 1]       # tie 3/3 → lane 1
    src32 = np.zeros(64, np.int32)
    src32[:4] = [-5, 3, 3, -7]
    ub = ub_with(1024, (0, src32))
    res = O.whole_reduce_min(ub, T(512, "int32", 2), T(0, "int32", 64), 4, 1, 1, 1, 8,
                             chip="ascend950")
    assert list(load(res.ub, 512, np.int32, 2)) == [-7, 3]
    src32 = np.zeros(64, np.uint32)
    src32[:3] = [5, 0xFFFFFFFF, 7]
    ub = ub_with(1024, (0, src32))
    res = O.whole_reduce_max(ub, T(512, "uint32", 1), T(0, "uint32", 64), 3, 1, 1, 1, 8,
                             "ORDER_ONLY_INDEX", chip="ascend950")
    assert list(load(res.ub, 512, np.uint32, 1)) == [1]


def test_minmax_nan_and_signed_zero():
    src = np.zeros(128, np.uint16)
    src[:4] = [h(5), 0x7D00, h(1), 0x7E00]            # NaNs at lanes 1 and 3
    ub = ub_with(1024, (0, src))
    for fn in (O.whole_reduce_min, O.whole_reduce_max):
        res = fn(ub, T(512, "float16", 2), T(0, "float16", 128), 4, 1, 1, 1, 8, chip="atlas_a2")
        assert list(load(res.ub, 512, np.uint16, 2)) == [0x7D00, 1]   # first NaN, exact bits
    src[:4] = [0x0000, 0x8000, 0x0000, 0x8000]         # +0, -0, +0, -0
    ub = ub_with(1024, (0, src))
    res = O.whole_reduce_min(ub, T(512, "float16", 2), T(0, "float16", 128), 4, 1, 1, 1, 8,
                             chip="atlas_a2")
    assert list(load(res.ub, 512, np.uint16, 2)) == [0x8000, 1]
    res = O.whole_reduce_max(ub, T(512, "float16", 2), T(0, "float16", 128), 4, 1, 1, 1, 8,
                             chip="atlas_a2")
    assert list(load(res.ub, 512, np.uint16, 2)) == [0x0000, 0]


def test_zero_mask_rules():
    ub = ub_with(2048, (SRC0, seed000_src()))
    args = (T(DST0, "float16", 16), T(SRC0, "float16", 512))
    res = O.whole_reduce_min(ub, *args, 0, 4, 1, 1, 8, chip="atlas_a2")            # NOP
    assert (res.ub == ub).all() and not res.written.any() and not res.undefined.any()
    res = O.whole_reduce_min(ub, *args, [0, 0], 4, 1, 1, 8, chip="ascend950")      # undefined
    assert (res.ub == ub).all() and not res.written.any()
    assert res.undefined.sum() == 32 and res.undefined[DST0:DST0 + 32].all()
    res = O.whole_reduce_min(ub, *args, 128, 0, 1, 1, 8, chip="atlas_training")   # repeat 0: NOP
    assert (res.ub == ub).all() and not res.written.any() and not res.undefined.any()


def test_reads_precede_writes_when_dst_is_src():
    # dst inside the bytes that repeat 0 reads: repeat 0 writes bytes 0-1, repeat 1 writes
    # bytes 2-3; only the same or an earlier repeat reads them (allowed), and every read sees
    # the UB as it was when the call started.
    src = np.concatenate([np.ones(128, np.float16), np.full(128, 2, np.float16)])
    ub = ub_with(1024, (0, src))
    res = O.whole_reduce_sum(ub, T(0, "float16", 256), T(0, "float16", 256), 128, 2, 1, 1, 8,
                             chip="atlas_a2")
    assert list(load(res.ub, 0, np.float16, 3)) == [128, 256, 1]


# ============================================================ seed 001: ReduceDataBlock

def rdb(src, rtype, mask, chip="atlas_a2", dtype="float16", pre=None, **kw):
    n = 256 // np.dtype(dtype).itemsize
    stores = [(0, src)] + ([(512, pre)] if pre is not None else [])
    ub = ub_with(1024, *stores)
    res = O.reduce_data_block(ub, T(512, dtype, 8), T(0, dtype, n), mask, 1, 1, 1, 8,
                              reduce_type=rtype, chip=chip, **kw)
    return res, load(res.ub, 512, dtype, 8)


@pytest.mark.parametrize("mask", [128, [U64, U64]])
def test_seed001_max(mask):
    src = np.ones(128, np.float16)
    src[10] = 2            # seed: block 0 → 2
    src[29] = 3            # seed: block 1 → 3
    for b in range(2, 7):  # blocks 2-6 elided in the seed; ours: 10 + b at position 2b
        src[16 * b + 2 * b] = 10 + b
    src[112 + 3] = 4       # seed: block 7 → 4
    res, out = rdb(src, "MAX", mask)
    assert list(out) == [2, 3, 12, 13, 14, 15, 16, 4]
    assert res.written.sum() == 16


def test_seed001_min():
    src = np.full(128, 10, np.float16)
    src[11] = 2
    src[29] = -3
    for b in range(2, 7):  # elided; ours: -10 - b at position 15 - b
        src[16 * b + 15 - b] = -10 - b
    src[112 + 9] = 4
    _, out = rdb(src, "MIN", [U64, U64])
    assert list(out) == [2, -3, -12, -13, -14, -15, -16, 4]


def test_seed001_sum():
    src = np.empty(128, np.float16)
    src[0:16] = 1
    src[16:32] = 2
    for b in range(2, 7):  # elided; ours: 0.5*b everywhere → 16 * 0.5 * b = 8b
        src[16 * b:16 * b + 16] = 0.5 * b
    src[112:128] = 3
    _, out = rdb(src, "SUM", [U64, U64])
    assert list(out) == [16, 32, 16, 24, 32, 40, 48, 48]


def test_seed001_block_fill_per_product():
    # seed: float, MAX, mask = 32 → only the first 4 DataBlocks; the other four return -inf
    src = np.arange(64, dtype=np.float32)
    pre = np.full(8, 99, np.float32)
    for chip in ("atlas_200i_500_a2", "ascend950"):
        res, out = rdb(src, "MAX", 32, chip, "float32", pre)
        assert list(out) == [7, 15, 23, 31] + [-np.inf] * 4
        assert res.written.sum() == 32
    res, out = rdb(src, "MAX", 32, "atlas_a2", "float32", pre)        # A2/A3: kept
    assert list(out) == [7, 15, 23, 31, 99, 99, 99, 99]
    assert res.written.sum() == 16 and not res.undefined.any()
    res, out = rdb(src, "MAX", 32, "atlas_inference_aicore", "float32", pre)   # undefined
    assert list(out[:4]) == [7, 15, 23, 31]
    assert res.undefined.sum() == 16 and res.undefined[512 + 16:512 + 32].all()
    # half on 200I/500 A2: MAX → -65504, MIN → 65504, SUM → 0
    src = np.ones(128, np.float16)
    pre = np.full(8, 99, np.float16)
    for rtype, fill in (("MAX", -65504), ("MIN", 65504), ("SUM", 0)):
        _, out = rdb(src, rtype, 64, "atlas_200i_500_a2", "float16", pre)
        first = 16 if rtype == "SUM" else 1
        assert list(out) == [first] * 4 + [fill] * 4


# ============================================================ seed 002: vec_reduce_min

SEED002 = """
6.344 1.954 -3.246 9.555 9.29 -6.95 7.586 5.67 3.2 -3.234 0.4087 -5.777 -7.156 -4.71 -1.587
4.023 2.242 3.72 3.064 6.21 -1.627 -5.69 1.263 -0.577 0.1646 1.894 -9.945 -7.18 3.72 1.8955
-9.53 -0.0693 -4.836 9.13 1.122 4.766 -7.957 -5.07 -6.93 9.47 2.912 5.938 -2.617 -9.97 3.99
2.805 1.9375 9.04 0.03117 0.6147 -2.37 -6.297 -4.715 -5.89 3.137 -0.976 5.79 0.02997 -2.07
-9.17 -1.8 3.498 -9.266 4.562 7.023 -8.78 -1.974 7.508 -2.205 2.162 -2.775 4.1 6.633 -8.1
3.334 -4.52 6.26 -5.516 -7.223 -8.586 5. -3.787 3.836 -1.833 -1.063 -6.188 -8.36 -5.91 6.812
6.137 -7.746 9.2 -5.492 2.799 -7.613 9.695 -4.074 3.188 7.145 -7.477 -7.01 6.137 -4.77 8.42
4.336 9.836 -6.86 3.363 1.32 -4.36 2.629 -3.09 9.53 -9.24 8.99 3.355 9.77 1.465 2.826 9.82
8.94 1.122 9.516 -2.146 -4.566 -4.414 -1.057 -7.97 0.4263 0.171 -4.254 1.046 -3.191 9.36
3.287 -0.6216 -4.957 -3.605 -9.35 -6.863 1.472 5.06 -9.75 -9.54 -3.707 6.92 5.88 -4.855 -8.21
2.697 8.17 7.836 6.008 -4.402 -1.721 6.39 -3.992 -5.33 6.56 -9.305 0.7114 -5.58 8.93 -1.598
-8.164 -5.805 0.4302 -8.766 -9.414 8.81 4.6 -9.83 6.5 7.38 -0.9526 8.04 5.008 4.863 -8.36
0.4224 8.68 -8.484 -0.9536 8.164 0.8613 -4.027 -4.848 -2.875 6.67 -7.75 -6.133 0.08655 -9.96
7.266 6.082 5.883 -8.32 -8.87 -8.945 4.363 -1.022 -8.57 6.66 -2.553 0.0873 8.89 -4.336 5.01
8.24 -2.953 3.93 9.695 6.227 8.625 -7.926 9.51 6.27 -3.28 0.911 -7.938 -7.48 -9.94 7.57 -9.62
3.654 -5.867 4.45 4.492 -3.129 4.523 1.69 3.947 0.9663 -9.766 9.48 -4.652 -1.876 -2.516 2.34
7.16 5.223 5.473 1.373 1.489 1.538 -0.3293 -8.61 1.894 -2.56 -2.379 8.48 -4.81 -0.877 -7.85
-2.148 1.938
"""


def seed002(work_size, chip="atlas_training", fn=None, **kw):
    src = np.array([float(x) for x in SEED002.split()], dtype=np.float16)
    assert src.size == 256
    ub = ub_with(1024, (0, src))
    fn = fn or O.vec_reduce_min
    res = fn(ub, 128, T(512, "float16", 16), T(0, "float16", 256),
             T(576, "float16", work_size), 2, 8, chip=chip, **kw)
    return ub, res


@pytest.mark.parametrize("chip", ["atlas_training", "atlas_200_300_500_inference"])
def test_seed002_vec_reduce_min(chip):
    _, res = seed002(18, chip, cal_index=True)
    dst = load(res.ub, 512, np.uint16, 16)
    assert dst[0] == h(-9.97)              # the seed's minimum, at flat position 43
    assert dst[1] == 43                    # index as uint16 bits, printed as 2.56e-06
    assert abs(float(dst[1:2].view(np.float16)[0]) - 2.56e-06) < 5e-9
    assert list(dst[2:]) == [0] * 14
    # stage 1: repeat 0 → (-9.97, 43); repeat 1 → (-9.96 at flat 192, lane 64)
    assert list(load(res.ub, 576, np.uint16, 4)) == [h(-9.97), 43, h(-9.96), 64]
    assert res.written[576:576 + 8].all() and res.written[512:516].all()
    assert res.written.sum() == 12
    assert res.undefined.sum() == 36 - 8 and res.undefined[576 + 8:576 + 36].all()


def test_seed002_work_size():
    assert O.cascade_need(2, 16, 128) == 18 and O.cascade_need(65, 16, 128) == 162
    assert code_of(seed002, 17, cal_index=True) == Code.WORK_SIZE
    # without cal_index the need is 2R = 4
    _, res = seed002(4, cal_index=False)
    dst = load(res.ub, 512, np.uint16, 2)
    assert list(dst) == [h(-9.97), 0]     # dst[1] untouched without cal_index
    assert code_of(seed002, 3) == Code.WORK_SIZE


def test_vec_reduce_max_seed002_data():
    _, res = seed002(18, fn=O.vec_reduce_max, cal_index=True)
    # maxima: repeat 0: 9.836 at flat 105; repeat 1: 9.695 (flat 211) — the overall 9.836
    assert list(load(res.ub, 512, np.uint16, 2)) == [h(9.836), 105]


# ============================================================ seed 003: vec_reduce_add

def test_seed003_example1():
    ub = ub_with(1024, (0, np.ones(256, np.float16)))
    res = O.vec_reduce_add(ub, 128, T(512, "float16", 32), T(0, "float16", 256),
                           T(576, "float16", 32), 2, 8, chip="atlas_200_300_500_inference")
    dst = load(res.ub, 512, np.float16, 32)
    assert dst[0] == 256 and list(dst[1:]) == [0] * 31
    assert list(load(res.ub, 576, np.float16, 2)) == [128, 128]
    # work[0] (seed 003: the stage-1 sum; TIK's code: the final sum) and work[2:] undefined
    assert res.undefined.sum() == 62 and res.undefined[576:578].all()
    assert res.undefined[580:640].all() and not res.undefined[578:580].any()


@pytest.mark.parametrize("chip", ["atlas_200_300_500_inference", "atlas_training",
                                  "atlas_inference_aicore", "atlas_inference_vector_core"])
def test_seed003_example2(chip):
    src = np.concatenate([np.full(128, v, np.float16) for v in (1, 2, 3)])
    ub = ub_with(2048, (0, src))
    res = O.vec_reduce_add(ub, 34, T(768, "float16", 64), T(0, "float16", 384),
                           T(1024, "float16", 64), 6, 3, chip=chip)
    assert list(load(res.ub, 1024, np.float16, 6)) == [34, 34, 36, 68, 68, 86]
    assert load(res.ub, 768, np.float16, 1)[0] == 326


def test_seed003_saturation():
    # [60000, 60000, -30000, 100]: 60000+60000 → 65504 (saturated), -30000+100 = -29900 →
    # -29904 in half, 65504-29904 = 35600 → tie between 35584 and 35616 → even: 35584
    src = np.zeros(128, np.float16)
    src[:4] = [60000, 60000, -30000, 100]
    ub = ub_with(1024, (0, src))
    args = (ub, 4, T(512, "float16", 16), T(0, "float16", 128), T(544, "float16", 16), 1, 8)
    res = O.vec_reduce_add(*args, chip="atlas_training", saturate=True)
    assert load(res.ub, 512, np.float16, 1)[0] == 35584
    res = O.vec_reduce_add(*args, chip="atlas_training")       # default: saturating (only mode)
    assert load(res.ub, 512, np.float16, 1)[0] == 35584
    res = O.vec_reduce_add(*args, chip="atlas_inference_aicore")    # default: not saturating
    assert load(res.ub, 512, np.float16, 1)[0] == np.inf
    # the same through WholeReduceSum and ReduceDataBlock<SUM> (Ascend C)
    res = O.whole_reduce_sum(ub, T(512, "float16", 1), T(0, "float16", 128), 4, 1, 1, 1, 8,
                             chip="atlas_a2", saturate=True)
    assert load(res.ub, 512, np.float16, 1)[0] == 35584
    res = O.whole_reduce_sum(ub, T(512, "float16", 1), T(0, "float16", 128), 4, 1, 1, 1, 8,
                             chip="atlas_a2", saturate=False)
    assert load(res.ub, 512, np.float16, 1)[0] == np.inf
    res = O.reduce_data_block(ub, T(512, "float16", 8), T(0, "float16", 128), 4, 1, 1, 1, 8,
                              reduce_type="SUM", chip="atlas_a2", saturate=True)
    assert load(res.ub, 512, np.float16, 1)[0] == 35584


def test_vec_reduce_add_many_repeats():
    # R = 130 > 128 lanes: stage 2 in two chunks, stage 3 sums them; whole work undefined
    ub = ub_with(32768 + 1024, (0, np.ones(128 * 130, np.float16)))
    res = O.vec_reduce_add(ub, 128, T(33280, "float16", 16), T(0, "float16", 128 * 130),
                           T(33280 + 32, "float16", 130), 130, 8, chip="atlas_training")
    assert load(res.ub, 33280, np.float16, 1)[0] == 128 * 130
    assert res.undefined[33312:33312 + 260].all() and res.undefined.sum() == 260
    assert list(load(res.ub, 33312, np.float16, 3)) == [128, 128, 128]


# ============================================================ add numerics (hand-derived)

def sum2(a_bits, b_bits, dtype="float16", chip="atlas_a2", **kw):
    ut = np.uint16 if dtype == "float16" else np.uint32
    n = 256 // np.dtype(dtype).itemsize
    src = np.zeros(n, ut)
    src[:2] = [a_bits, b_bits]
    ub = ub_with(1024, (0, src))
    res = O.whole_reduce_sum(ub, T(512, dtype, 1), T(0, dtype, n), 2, 1, 1, 1, 8, chip=chip, **kw)
    return int(load(res.ub, 512, ut, 1)[0])


def test_add_rules():
    assert sum2(h(2048), h(3)) == h(2052)          # 2051 ties to even 2052
    assert sum2(h(2048), h(1)) == h(2048)          # 2049 ties to even 2048
    assert sum2(h(1), 0x7C01) == 0x7E01            # NaN operand b quieted
    assert sum2(0x7D05, 0xFC00) == 0x7F05          # NaN operand a wins, quieted
    assert sum2(0x7C00, 0xFC00) == 0xFE00          # inf - inf → default NaN
    assert sum2(0x7C00, 0xFC00, saturate=True) == 0x0000
    assert sum2(0x8000, 0x8000) == 0x0000          # (-0)+(-0) = -0, then + (+0) lanes = +0
    assert sum2(0x0001, 0x0001, "float32") == 0x00000002   # float32 subnormals kept
    assert sum2(0x807FFFFF, 0x00000001, "float32") == 0x807FFFFE
    assert sum2(0x7F7FFFFF, 0x7F7FFFFF, "float32") == 0x7F800000


def test_negative_zero_sum():
    src = np.full(128, 0x8000, np.uint16)          # all lanes -0, all taking part
    ub = ub_with(1024, (0, src))
    res = O.whole_reduce_sum(ub, T(512, "float16", 1), T(0, "float16", 128), 128, 1, 1, 1, 8,
                             chip="atlas_a2")
    assert load(res.ub, 512, np.uint16, 1)[0] == 0x8000
    res = O.whole_reduce_sum(ub, T(512, "float16", 1), T(0, "float16", 128), 127, 1, 1, 1, 8,
                             chip="atlas_a2")      # lane 127 is +0
    assert load(res.ub, 512, np.uint16, 1)[0] == 0x0000


# ============================================================ error codes

def wrm(chip="atlas_a2", dst=T(1024, "float16", 16), src=T(0, "float16", 512), mask=128,
        repeat=4, drs=1, sbs=1, srs=8, order="ORDER_VALUE_INDEX", ub=None):
    ub = np.zeros(2048, np.uint8) if ub is None else ub
    return O.whole_reduce_min(ub, dst, src, mask, repeat, drs, sbs, srs, order, chip=chip)


def vra(chip="atlas_training", mask=128, dst=T(512, "float16", 16), src=T(0, "float16", 256),
        work=T(544, "float16", 16), repeat=2, srs=8, ub=None, **kw):
    ub = np.zeros(1024, np.uint8) if ub is None else ub
    return O.vec_reduce_add(ub, mask, dst, src, work, repeat, srs, chip=chip, **kw)


def vrm(chip="atlas_training", mask=128, dst=T(512, "float16", 16), src=T(0, "float16", 256),
        work=T(544, "float16", 18), repeat=2, srs=8, cal_index=True, ub=None):
    ub = np.zeros(1024, np.uint8) if ub is None else ub
    return O.vec_reduce_min(ub, mask, dst, src, work, repeat, srs, cal_index, chip=chip)


def test_valid_baselines():
    wrm()
    vra()
    vrm()


def test_chip_unknown():
    assert code_of(wrm, chip="nope") == Code.CHIP_UNKNOWN


def test_api_unsupported():
    assert code_of(wrm, chip="atlas_inference_vector_core") == Code.API_UNSUPPORTED
    assert code_of(vrm, chip="kirin_x90") == Code.API_UNSUPPORTED
    assert code_of(vra, chip="ascend950") == Code.API_UNSUPPORTED


def test_dtype_unsupported():
    assert code_of(wrm, dst=T(1024, "int16", 16), src=T(0, "int16", 512)) == Code.DTYPE_UNSUPPORTED
    assert code_of(wrm, chip="atlas_training", dst=T(1024, "float32", 8),
                   src=T(0, "float32", 256)) == Code.DTYPE_UNSUPPORTED
    assert code_of(vrm, dst=T(512, "float32", 16), src=T(0, "float32", 128),
                   work=T(576, "float32", 18)) == Code.DTYPE_UNSUPPORTED


def test_dtype_mismatch():
    assert code_of(wrm, dst=T(1024, "float32", 8)) == Code.DTYPE_MISMATCH
    assert code_of(vra, work=T(544, "float32", 16), chip="atlas_training") == Code.DTYPE_MISMATCH


def test_order_unsupported():
    assert code_of(wrm, chip="atlas_training", order="ORDER_ONLY_INDEX") == Code.ORDER_UNSUPPORTED
    assert code_of(wrm, chip="atlas_200i_500_a2", order="ORDER_INDEX_VALUE") == Code.ORDER_UNSUPPORTED


def test_reduce_type():
    ub = np.zeros(1024, np.uint8)
    assert code_of(O.reduce_data_block, ub, T(512, "float16", 8), T(0, "float16", 128), 128, 1,
                   1, 1, 8, reduce_type="AVG", chip="atlas_a2") == Code.REDUCE_TYPE


def test_mask_range():
    assert code_of(wrm, mask=129) == Code.MASK_RANGE
    assert code_of(wrm, mask=-1) == Code.MASK_RANGE
    assert code_of(wrm, mask=65, dst=T(1024, "float32", 8), src=T(0, "float32", 256)) == Code.MASK_RANGE
    assert code_of(vra, mask=129) == Code.MASK_RANGE


def test_mask_bits():
    f32 = dict(dst=T(1024, "float32", 8), src=T(0, "float32", 256))
    assert code_of(wrm, mask=[U64]) == Code.MASK_BITS                 # 16-bit needs 2 words
    assert code_of(wrm, mask=[U64, U64, 0]) == Code.MASK_BITS
    assert code_of(wrm, mask=[1 << 64, 0]) == Code.MASK_BITS
    assert code_of(wrm, mask=[1, 1], **f32) == Code.MASK_BITS         # 32-bit: second word 0
    wrm(mask=[1, 0], **f32)
    wrm(mask=[1], **f32)
    f32t = dict(dst=T(512, "float32", 8), src=T(0, "float32", 64), work=T(544, "float32", 8))
    assert code_of(vra, mask=[1, 1], repeat=1, **f32t) == Code.MASK_BITS   # TIK: mask_h ≠ 0
    vra(mask=[0, 1], repeat=1, **f32t)


def test_tik_mask_word_order():
    # TIK bit mode is [mask_h, mask_l]: [1, 0] selects lane 64 only
    src = np.arange(128, dtype=np.float16)
    ub = ub_with(1024, (0, src))
    res = O.vec_reduce_add(ub, [1, 0], T(512, "float16", 16), T(0, "float16", 128),
                           T(544, "float16", 16), 1, 8, chip="atlas_training")
    assert load(res.ub, 512, np.float16, 1)[0] == 64
    res = O.whole_reduce_sum(ub, T(512, "float16", 1), T(0, "float16", 128), [1, 0], 1, 1, 1, 8,
                             chip="atlas_a2")                          # Ascend C: lane 0
    assert load(res.ub, 512, np.float16, 1)[0] == 0
    res = O.whole_reduce_sum(ub, T(512, "float16", 1), T(0, "float16", 128), [0, 1], 1, 1, 1, 8,
                             chip="atlas_a2")                          # Ascend C: lane 64
    assert load(res.ub, 512, np.float16, 1)[0] == 64


def test_mask_zero():
    assert code_of(wrm, chip="atlas_training", mask=0) == Code.MASK_ZERO
    assert code_of(wrm, chip="atlas_training", mask=[0, 0]) == Code.MASK_ZERO
    assert code_of(vra, mask=0) == Code.MASK_ZERO


def test_repeat_range():
    assert code_of(wrm, repeat=256) == Code.REPEAT_RANGE
    assert code_of(wrm, repeat=-1) == Code.REPEAT_RANGE
    assert code_of(vra, repeat=0) == Code.REPEAT_RANGE
    assert code_of(vra, repeat=4096) == Code.REPEAT_RANGE
    assert code_of(vrm, repeat=512) == Code.REPEAT_RANGE


def test_stride_range():
    assert code_of(wrm, srs=65536) == Code.STRIDE_RANGE
    assert code_of(wrm, sbs=-1) == Code.STRIDE_RANGE
    assert code_of(vra, srs=65536) == Code.STRIDE_RANGE


def test_dst_stride_zero():
    assert code_of(wrm, chip="atlas_training", drs=0) == Code.DST_STRIDE_ZERO
    res = wrm(drs=0, ub=ub_with(2048, (0, seed000_src())))   # allowed on A2: last repeat wins
    assert list(load(res.ub, 1024, np.uint16, 2)) == [h(3), 19]


def test_align():
    assert code_of(wrm, src=T(16, "float16", 512)) == Code.ALIGN
    assert code_of(wrm, dst=T(1026, "float16", 16)) == Code.ALIGN     # VALUE_INDEX half: 4 B
    wrm(dst=T(1026, "float16", 15), order="ORDER_ONLY_VALUE")         # ONLY_VALUE half: 2 B
    ub = np.zeros(1024, np.uint8)
    assert code_of(O.reduce_data_block, ub, T(520, "float16", 8), T(0, "float16", 128), 128, 1,
                   1, 1, 8, reduce_type="SUM", chip="atlas_a2") == Code.ALIGN
    assert code_of(vra, dst=T(528, "float16", 8)) == Code.ALIGN


def test_ub_bounds():
    assert code_of(wrm, dst=T(2040, "float16", 16)) == Code.UB_BOUNDS   # leaves the ub array
    big = np.zeros(300000, np.uint8)                                     # A2 UB is 196608 bytes
    assert code_of(wrm, ub=big, dst=T(196600, "float16", 16)) == Code.UB_BOUNDS


def test_tensor_bounds():
    assert code_of(wrm, src=T(0, "float16", 500)) == Code.TENSOR_BOUNDS  # reads 512 elements
    assert code_of(wrm, dst=T(1024, "float16", 7)) == Code.TENSOR_BOUNDS  # writes 8 elements
    wrm(src=T(0, "float16", 500), mask=116)   # masked-out lanes are not accesses
    assert code_of(vra, src=T(0, "float16", 200)) == Code.TENSOR_BOUNDS
    assert code_of(vrm, dst=T(512, "float16", 1)) == Code.TENSOR_BOUNDS   # cal_index writes 2


def test_overlap():
    # repeat 0 writes bytes 256..259, which repeat 1 (src + 256) reads
    ub = np.zeros(2048, np.uint8)
    assert code_of(O.whole_reduce_sum, ub, T(256, "float16", 4), T(0, "float16", 512), 128, 2,
                   1, 1, 8, chip="atlas_a2") == Code.OVERLAP
    # writing into bytes only the same or an earlier repeat reads is allowed
    O.whole_reduce_sum(ub, T(0, "float16", 4), T(0, "float16", 512), 128, 2, 1, 1, 8,
                       chip="atlas_a2")
    assert code_of(vra, work=T(500, "float16", 16)) == Code.ALIGN       # 13 beats 16
    assert code_of(vra, work=T(512, "float16", 16)) == Code.OVERLAP      # work overlaps dst
    # vec_reduce_min/max forbid only dst / work_tensor (seed 002): dst over src runs
    assert code_of(vrm, dst=T(544, "float16", 16)) == Code.OVERLAP       # dst overlaps work
    assert code_of(vra, dst=T(0, "float16", 16)) == Code.OVERLAP         # add: dst over src
    vrm(dst=T(0, "float16", 16))


def test_work_size():
    assert code_of(vra, work=T(544, "float16", 1)) == Code.WORK_SIZE
    assert code_of(vrm, work=T(544, "float16", 17)) == Code.WORK_SIZE


def test_index_overflow():
    # repeat 1 starts at element 4096*16 = 65536: its minimum's index is above 65535
    src = np.ones(65536 + 128, np.float16)
    src[65536 + 5] = -1
    ub = ub_with(262144, (0, src))
    args = (ub, 128, T(131584, "float16", 16), T(0, "float16", 65536 + 128),
            T(131616, "float16", 18), 2, 4096)
    assert code_of(O.vec_reduce_min, *args, True, chip="atlas_training") == Code.INDEX_OVERFLOW
    res = O.vec_reduce_min(*args, False, chip="atlas_training")   # no index: no overflow
    assert load(res.ub, 131584, np.float16, 1)[0] == -1


def test_saturate_dtype():
    f32 = dict(dst=T(512, "float32", 8), src=T(0, "float32", 128), work=T(544, "float32", 8),
               mask=64)
    assert code_of(vra, saturate=True, **f32) == Code.SATURATE_DTYPE
    vra(saturate=False, **f32)
    ub = np.zeros(1024, np.uint8)
    assert code_of(O.whole_reduce_sum, ub, T(512, "float32", 1), T(0, "float32", 64), 64, 1, 1,
                   1, 8, chip="atlas_a2", saturate=True) == Code.SATURATE_DTYPE


def test_bad_argument():
    assert code_of(wrm, mask="abc") == Code.BAD_ARGUMENT
    assert code_of(wrm, repeat=1.5) == Code.BAD_ARGUMENT
    assert code_of(wrm, order=3) == Code.BAD_ARGUMENT
    assert code_of(wrm, ub=np.zeros(2048, np.int32)) == Code.BAD_ARGUMENT
    assert code_of(vra, saturate="yes") == Code.BAD_ARGUMENT
    assert code_of(vrm, cal_index="yes") == Code.BAD_ARGUMENT


def test_lowest_code_wins():
    assert code_of(wrm, mask=129, repeat=256, src=T(16, "float16", 512)) == Code.MASK_RANGE
    assert code_of(wrm, repeat=256, src=T(16, "float16", 512)) == Code.REPEAT_RANGE
    assert code_of(wrm, chip="atlas_training", drs=0, order="ORDER_ONLY_INDEX") == Code.ORDER_UNSUPPORTED
    # BAD_ARGUMENT has the highest number (20): a lower code wins over it
    assert code_of(vra, saturate="yes", srs=70000) == Code.STRIDE_RANGE
    assert code_of(vrm, dst=T(544, "float16", 16), work=T(544, "float16", 3)) == Code.OVERLAP
