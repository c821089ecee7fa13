"""Level-2 ReduceMax / ReduceMin / ReduceSum, high-dimensional form (issue 14 item 1;
SEMANTICS §N).

Expected values come from the asc-devkit pages (their worked examples, the six
sharedTmpBuffer size examples) or are derived by hand here from the rules the pages state
(smallest index among equal extremes, index = offset from src, the 65535 index limit); each
test runs on the JAX path and the scalar oracle.
"""

import pathlib
import re
import zlib

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import oracle
from ascend_ref.ascendc.reduce import tmp_need
from ascend_ref.constraints import Code
from conftest import Out, call_ascendc as call

IMPLS = ["oracle", "jax"]
F16, F32 = "float16", "float32"
#: ReduceMax.md / ReduceMin.md 产品支持情况 / 数据类型 (int64/uint64: count form only)
SUPPORTED = {"ascend950": (F16, F32, "int16", "uint16", "int32", "uint32"),
             "atlas_a3": (F16, F32), "atlas_a2": (F16, F32), "atlas_200i_500_a2": (F16, F32),
             "atlas_inference_aicore": (F16, F32), "atlas_training": (F16,),
             "kirin_x90": (F16, F32), "kirin_9030": (F16, F32)}
UNSUPPORTED = ["atlas_inference_vector_core", "atlas_200_300_500_inference"]
FULL = [2**64 - 1, 2**64 - 1]
SENTINEL = 0x5A
APIS = ["reduce_max", "reduce_min", "reduce_sum"]


def T(addr, dtype, size):
    return ar.Tensor(addr, dtype, size)


def make_ub(values, dtype, nbytes=1 << 15):
    ub = np.full(nbytes, SENTINEL, np.uint8)
    raw = np.asarray(values, dtype).view(np.uint8)
    ub[:raw.size] = raw
    return ub


def _page_data(section):
    """The 512 inputs of a worked example, as the page prints them (docs/research/
    reduction_family.md Appendix A copies them verbatim from ReduceMax.md / ReduceMin.md at
    3825d1c98^; the current pages elide the middle rows)."""
    text = (pathlib.Path(__file__).parents[1] / "docs" / "research" /
            "reduction_family.md").read_text()
    body = text[text.index(f"### {section}"):]
    block = re.search(r"```text\n(.*?)```", body, re.S).group(1)
    return np.array([float(v) for v in block.split()], np.float16)


# ------------------------------------------------------------------ the pages' examples ----

@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("chip", sorted(SUPPORTED))
@pytest.mark.parametrize("mask", [128, FULL], ids=["continuous", "bits"])
@pytest.mark.parametrize("name, section, value, index", [
    ("reduce_max", "A.2", "0.9985", 114),        # ReduceMax.md: [0.9985, 6.8e-06] -> 114
    ("reduce_min", "A.4", "0.01034", 353),       # ReduceMin.md: [0.01034, 2.104e-05] -> 353
])
def test_page_example_high_dimensional(impl, chip, mask, name, section, value, index):
    """ReduceMax/Min(dst, src, tmp, 128, 4, 8, true) over the page's 512 halves."""
    x = _page_data(section)
    assert x.size == 512
    tmp_n = 32                       # the page's example 4: 16 + 16 = 32 elements (64 bytes)
    out = call(impl, name, make_ub(x, F16), T(2048, F16, 16), T(0, F16, 512),
               T(2080, F16, tmp_n), mask, 4, 8, True, chip=chip)
    got = out.load(2048, F16, 2)
    assert "%.4g" % float(got[0]) == value
    assert int(got.view(np.uint16)[1]) == index
    assert "%.4g" % float(got[1]) == {114: "6.795e-06", 353: "2.104e-05"}[index]


@pytest.mark.parametrize("repeat, cal_index, dtype, need", [
    (65, True, F16, 176),      # example 1: 144 + 16 + 16 (352 bytes)
    (255, True, F16, 544),     # example 2: 512 + 16 + 16 (1088 bytes)
    (511, True, F16, 1056),    # example 3 (count 65408: firstMaxRepeat = 511)
    (4, True, F16, 32),        # example 4: 16 + 16 (64 bytes)
    (511, False, F16, 1024),   # example 5 (count 65408, no index: 2048 bytes)
    (130, True, F32, 288),     # example 6: 264 + 16 + 8 (1152 bytes)
])
def test_page_tmp_size_examples(repeat, cal_index, dtype, need):
    """ReduceMax.md 调用示例 'sharedTmpBuffer空间计算示例一 .. 六'."""
    assert tmp_need(repeat, cal_index, dtype) == need
    assert int(tmp_need(np.int32(repeat), cal_index, dtype)) == need     # traced form


def test_tmp_size_of_a_host_value_never_wraps():
    """Every host form of a repeat count (int, numpy scalar, 0-d array) is sized in Python
    ints: for 2**31 - 1 half repeats the formula gives 2**32 (2r rounded up to 16) + 2**26
    (2 * ceil(2r / 128)) + 2**20 (2 * ceil(2**26 / 128)); an int32 stand-in wrapped (a 0-d
    array gave 0, numpy 2.5 warned of an overflow)."""
    want = 2**32 + 2**26 + 2**20
    for r in (2**31 - 1, np.int32(2**31 - 1), np.array(2**31 - 1, np.int32),
              np.array(2**31 - 1, np.int64), np.array(2**31 - 1, np.uint32)):
        got = tmp_need(r, True, F16)
        assert type(got) is int and got == want, (type(r), got)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("repeat, cal_index, dtype, lanes", [
    (65, True, F16, 128), (255, True, F16, 128), (4, True, F16, 128), (130, True, F32, 64)])
def test_tmp_size_is_required_exactly(impl, repeat, cal_index, dtype, lanes):
    """The page's size is enough and one element less is WORK_SIZE (A2: tmp used); on 950 any
    size, even 0, is accepted and the buffer is not touched."""
    need = tmp_need(repeat, cal_index, dtype)
    x = np.random.default_rng(repeat).uniform(-9, 9, repeat * lanes).astype(dtype)
    ub = make_ub(x, dtype, nbytes=1 << 17)
    src = T(0, dtype, x.size)
    d = T(x.nbytes, dtype, 16)
    w = x.nbytes + 64
    ok = call(impl, "reduce_max", ub, d, src, T(w, dtype, need), lanes, repeat, 8, cal_index,
              chip="atlas_a2")
    assert isinstance(ok, Out)
    assert ok.undefined[w:w + need * np.dtype(dtype).itemsize].all()
    assert call(impl, "reduce_max", ub, d, src, T(w, dtype, need - 1), lanes, repeat, 8,
                cal_index, chip="atlas_a2") == Code.WORK_SIZE
    o950 = call(impl, "reduce_max", ub, d, src, T(w, dtype, 0), lanes, repeat, 8, cal_index,
                chip="ascend950")
    assert isinstance(o950, Out) and not o950.undefined.any()
    assert (o950.ub[w:] == ub[w:]).all()
    assert o950.load(d.addr, dtype, 1)[0] == x.max()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("mask", [128, FULL], ids=["continuous", "bits"])
def test_page_call_8320_halves(impl, mask):
    """The page's calls ReduceMax(dst, src, tmp, mask, 65, 8, true) on 8320 halves (no data
    is printed: the answer is numpy's argmax, ties made impossible)."""
    rng = np.random.default_rng(8320)
    x = rng.permutation(8320).astype(np.float32)
    x = (x / 8320 * 2000 - 1000).astype(np.float16)
    top = int(np.argmax(x))
    x[top] = 2000                                     # one unique maximum
    ub = make_ub(x, F16, nbytes=1 << 16)
    out = call(impl, "reduce_max", ub, T(16640, F16, 16), T(0, F16, 8320),
               T(16672, F16, 176), mask, 65, 8, True, chip="atlas_a2")
    got = out.load(16640, F16, 2)
    assert float(got[0]) == 2000 and int(got.view(np.uint16)[1]) == top


# ------------------------------------------------------------------ the rules by hand ------

@pytest.mark.parametrize("impl", IMPLS)
def test_smallest_index_among_equal_extremes(impl):
    """'如果存在多个最大值，该指令会将最小索引写入目的操作数': the same maximum in repeats 0 and
    2 -> the smaller index; with overlapping repeats (srcRepStride 1 = 16 halves) and a bit
    mask, repeat 1 reaches the maximum at offset 20 (its lane 4), repeat 0 only at offset 100
    (lane 20 is masked there... lanes 4 of every repeat are masked off below): index 20."""
    x = np.zeros(1024, np.float16)
    x[300] = 7
    x[40] = 7
    out = call(impl, "reduce_max", make_ub(x, F16), T(4096, F16, 16), T(0, F16, 1024),
               T(4128, F16, 64), 128, 8, 8, True, chip="atlas_a2")
    assert int(out.load(4096, F16, 2).view(np.uint16)[1]) == 40
    # overlap: repeat r reads offsets 16r .. 16r + 127; lanes 0-19 masked off
    y = np.zeros(512, np.float16)
    y[22] = 5                    # repeat 0 lane 22 (active)
    y[20] = 5                    # repeat 0 lane 20 (active); repeat 1 does not reach it
    y[36] = 5                    # repeat 1 lane 20, repeat 0 lane 36
    mask = [~((1 << 20) - 1) & (2**64 - 1), 2**64 - 1]
    out = call(impl, "reduce_max", make_ub(y, F16), T(4096, F16, 16), T(0, F16, 512),
               T(4128, F16, 64), mask, 3, 1, True, chip="ascend950")
    assert int(out.load(4096, F16, 2).view(np.uint16)[1]) == 20
    # lanes 0-21 masked: repeat 0's first 5 is offset 22, repeat 1 reaches offset 36 at lane
    # 20 (masked) and 22 (offset 38, a zero); repeat 1 lane 4 would be offset 20 (masked)
    mask = [~((1 << 22) - 1) & (2**64 - 1), 2**64 - 1]
    out = call(impl, "reduce_max", make_ub(y, F16), T(4096, F16, 16), T(0, F16, 512),
               T(4128, F16, 64), mask, 3, 1, True, chip="ascend950")
    assert int(out.load(4096, F16, 2).view(np.uint16)[1]) == 22


@pytest.mark.parametrize("impl", IMPLS)
def test_index_is_the_offset_from_src_for_any_stride(impl):
    """srcRepStride 16 (every other repeat slot skipped): the winner in repeat 2 lane 5 is
    element 2*16*16 + 5 = 517 of src."""
    x = np.zeros(2048, np.float32)
    x[2 * 16 * 8 + 5] = 3.5                # float: epb 8 -> offset 2*16*8 + 5 = 261
    out = call(impl, "reduce_max", make_ub(x, F32), T(8192, F32, 8), T(0, F32, 2048),
               T(8224, F32, 64), 64, 4, 16, True, chip="atlas_a2")
    got = out.load(8192, F32, 2)
    assert float(got[0]) == 3.5 and int(got.view(np.uint32)[1]) == 261
    h = np.zeros(4096, np.float16)
    h[2 * 16 * 16 + 5] = -3
    out = call(impl, "reduce_min", make_ub(h, F16), T(8192, F16, 16), T(0, F16, 4096),
               T(8224, F16, 64), 128, 4, 16, True, chip="atlas_a2")
    got = out.load(8192, F16, 2)
    assert float(got[0]) == -3 and int(got.view(np.uint16)[1]) == 517


@pytest.mark.parametrize("impl", IMPLS)
def test_index_limit_65535(impl):
    """'当输入类型是half的时候，只支持获取最大不超过65535的索引值': a winner at offset 65536 is
    INDEX_OVERFLOW with cal_index, fine without it (and for float)."""
    n = 65536 + 128
    x = np.zeros(n, np.float16)
    x[65536] = 1
    ub = make_ub(x, F16, nbytes=n * 2 + 4096)
    args = (T(n * 2, F16, 16), T(0, F16, n), T(n * 2 + 32, F16, 8))
    # repeat 0 and repeat 1 at 65536 elements apart: srcRepStride 4096 blocks
    assert call(impl, "reduce_max", ub, *args, 128, 2, 4096, True, chip="ascend950") \
        == Code.INDEX_OVERFLOW
    out = call(impl, "reduce_max", ub, *args, 128, 2, 4096, False, chip="ascend950")
    assert float(out.load(n * 2, F16, 1)[0]) == 1
    x[65535] = 1                      # repeat 0 never reaches 65535: still the later one
    x[65536] = 0
    x[127] = 1
    out = call(impl, "reduce_max", make_ub(x, F16, nbytes=n * 2 + 4096), *args, 128, 2, 4096,
               True, chip="ascend950")
    assert int(out.load(n * 2, F16, 2).view(np.uint16)[1]) == 127


@pytest.mark.parametrize("impl", IMPLS)
def test_nan_zero_signs_and_integers(impl):
    """SEMANTICS §D rules: -0 < +0; NaN wins (its own bits, A2; the default NaN, 950);
    integer orders on 950."""
    x = np.zeros(256, np.float16)
    x[:] = 0.0
    x[7] = -0.0
    out = call(impl, "reduce_min", make_ub(x, F16), T(2048, F16, 16), T(0, F16, 256),
               T(2080, F16, 64), 128, 2, 8, True, chip="atlas_a2")
    got = out.load(2048, F16, 2).view(np.uint16)
    assert got.tolist() == [0x8000, 7]
    h = np.ones(256, np.float16).view(np.uint16)
    h[130], h[200] = 0x7C01, 0x7E00
    for chip, want in (("atlas_a2", 0x7C01), ("ascend950", 0xFE00)):
        out = call(impl, "reduce_max", make_ub(h, np.uint16), T(2048, F16, 16),
                   T(0, F16, 256), T(2080, F16, 64), 128, 2, 8, True, chip=chip)
        assert out.load(2048, F16, 2).view(np.uint16).tolist() == [want, 130]
    for dtype in ("int16", "uint16", "int32", "uint32"):
        info = np.iinfo(dtype)
        lanes = 256 // np.dtype(dtype).itemsize
        v = np.zeros(2 * lanes, dtype)
        v[lanes + 3] = info.max
        v[5] = info.min
        w = 2048 + 32
        mx = call(impl, "reduce_max", make_ub(v, dtype), T(2048, dtype, 16), T(0, dtype, v.size),
                  T(w, dtype, 64), lanes, 2, 8, True, chip="ascend950")
        mn = call(impl, "reduce_min", make_ub(v, dtype), T(2048, dtype, 16), T(0, dtype, v.size),
                  T(w, dtype, 64), lanes, 2, 8, True, chip="ascend950")
        ut = f"uint{8 * np.dtype(dtype).itemsize}"
        assert mx.load(2048, dtype, 2)[0] == info.max
        assert int(mx.load(2048, dtype, 2).view(ut)[1]) == lanes + 3
        want_min = (info.min, 5) if info.min < 0 else (0, 0)
        got = mn.load(2048, dtype, 2)
        assert (got[0], int(got.view(ut)[1])) == want_min


@pytest.mark.parametrize("impl", IMPLS)
def test_tmp_contents_and_overlaps(impl):
    """The tmp buffer is undefined afterwards where the product uses it; dst may overlap it
    (the result words are defined), and it may be src itself (ReduceMax.md note)."""
    x = np.arange(512, dtype=np.float16)
    ub = make_ub(x, F16)
    # dst inside tmp
    out = call(impl, "reduce_max", ub, T(2048 + 64, F16, 2), T(0, F16, 512),
               T(2048, F16, 64), 128, 4, 8, True, chip="atlas_a2")
    assert out.load(2048 + 64, F16, 2).view(np.uint16).tolist() == [int(np.float16(511).view(
        np.uint16)), 511]
    assert out.written[2048 + 64:2048 + 68].all() and not out.undefined[2048 + 64:2048 + 68].any()
    assert out.undefined[2048:2048 + 64].all() and out.undefined[2048 + 68:2048 + 128].all()
    assert out.undefined.sum() == 128 - 4
    # tmp is src
    out = call(impl, "reduce_min", ub, T(2048, F16, 2), T(0, F16, 512), T(0, F16, 512),
               128, 4, 8, True, chip="atlas_training")
    assert out.load(2048, F16, 2).view(np.uint16).tolist() == [0, 0]
    assert out.undefined[:1024].all()
    # no index: only dst[0] is written
    out = call(impl, "reduce_max", ub, T(2048, F16, 16), T(0, F16, 512), T(4096, F16, 16),
               128, 4, 8, False, chip="ascend950")
    assert out.written.sum() == 2 and (out.ub[2050:2080] == SENTINEL).all()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("chip, undefined", [("atlas_a2", False), ("atlas_a3", False),
                                             ("ascend950", True), ("kirin_x90", True)])
def test_zero_repeat(impl, chip, undefined):
    """repeatTime 0: a NOP on A2/A3 (the page), 'NOP not guaranteed' on 950 (dst undefined;
    950 does not use tmp); Kirin: the 950 rule (assumed, SEMANTICS §I) with tmp used."""
    ub = make_ub(np.ones(128, np.float16), F16)
    out = call(impl, "reduce_max", ub, T(1024, F16, 16), T(0, F16, 128), T(1056, F16, 16),
               128, 0, 8, True, chip=chip)
    assert (out.ub == ub).all() and not out.written.any()
    tmp_used = chip != "ascend950"
    assert out.undefined.sum() == ((32 + (32 if tmp_used else 0)) if undefined else 0)


def _good(dtype=F16, chip="atlas_a2"):
    return dict(args=[T(2048, dtype, 16), T(0, dtype, 512), T(2080, dtype, 64), 128 if dtype
                      == F16 else 64, 2, 8, True], kw=dict(chip=chip))


def _set(i, v):
    def f(c):
        c["args"][i] = v
    return f


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("change, code", [
    (lambda c: c["kw"].update(chip="atlas_inference_vector_core"), Code.API_UNSUPPORTED),
    (lambda c: c["kw"].update(chip="atlas_200_300_500_inference"), Code.API_UNSUPPORTED),
    (lambda c: c["kw"].update(chip="atlas_training") or c.update(args=[
        T(2048, F32, 16), T(0, F32, 512), T(2080, F32, 64), 64, 2, 8, True]),
     Code.DTYPE_UNSUPPORTED),
    (lambda c: c.update(args=[T(2048, "int16", 16), T(0, "int16", 512), T(2080, "int16", 64),
                              128, 2, 8, True]), Code.DTYPE_UNSUPPORTED),       # A2: half/float
    (_set(0, T(2048, F32, 16)), Code.DTYPE_MISMATCH),
    (_set(2, T(2080, F32, 64)), Code.DTYPE_MISMATCH),
    (_set(3, 129), Code.MASK_RANGE),
    (_set(3, [1, 2, 3]), Code.MASK_BITS),
    (lambda c: c["kw"].update(chip="atlas_training") or _set(3, 0)(c), Code.MASK_ZERO),
    (_set(4, 4097), Code.REPEAT_RANGE),
    (_set(4, -1), Code.REPEAT_RANGE),
    (_set(5, 65536), Code.STRIDE_RANGE),
    (_set(0, T(2050, F16, 16)), Code.ALIGN),          # [value, index]: 4 bytes
    (_set(1, T(16, F16, 496)), Code.ALIGN),
    (_set(2, T(2096, F16, 64)), Code.ALIGN),
    (_set(2, T(2080, F16, 1 << 20)), Code.UB_BOUNDS),
    (_set(1, T(0, F16, 255)), Code.TENSOR_BOUNDS),
    (_set(0, T(2048, F16, 1)), Code.TENSOR_BOUNDS),   # calIndex writes 2 elements
    (_set(2, T(2080, F16, 31)), Code.WORK_SIZE),      # 2 repeats with index: 16 + 16
    (_set(6, 2), Code.BAD_ARGUMENT),
    (lambda c: c.update(args=c["args"][:3] + [128, 4]), Code.BAD_ARGUMENT),   # no srcRepStride
])
def test_constraints(impl, change, code):
    c = _good()
    change(c)
    ub = make_ub(np.ones(512, np.float16), F16, nbytes=1 << 14)
    assert call(impl, "reduce_max", ub, *c["args"], **c["kw"]) == code


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_64_bit_types_are_rejected(dtype):
    """ReduceMax.md: int64_t / uint64_t only in the count form on 950 ("仅支持tensor前n个数据
    计算接口"), so the high-dimensional form rejects them: DTYPE_UNSUPPORTED on both sides
    (the count form: tests/test_int64.py)."""
    from collections import namedtuple

    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.reduce_max(ar.new_ub("ascend950"), T(4096, dtype, 16), T(0, dtype, 512),
                              T(4224, dtype, 64), 32, 2, 8, True, chip="ascend950")
    assert e.value.code == Code.DTYPE_UNSUPPORTED
    Raw = namedtuple("Raw", "addr dtype size")
    ub = np.zeros(8192, np.uint8)
    assert call("oracle", "reduce_max", ub, Raw(4096, dtype, 16), Raw(0, dtype, 512),
                Raw(4224, dtype, 64), 32, 2, 8, True, chip="ascend950") == Code.DTYPE_UNSUPPORTED


@pytest.mark.parametrize("impl", IMPLS)
def test_limits_are_valid(impl):
    """repeatTime 4096 (half) / 1024 (float) with stride 0; dst 2-byte aligned without index;
    the float repeat limit."""
    ub = make_ub(np.arange(128, dtype=np.float16), F16, nbytes=1 << 16)
    out = call(impl, "reduce_max", ub, T(2050, F16, 1), T(0, F16, 128), T(4096, F16, 8192),
               128, 4096, 0, False, chip="atlas_a2")
    assert float(out.load(2050, F16, 1)[0]) == 127
    ub = make_ub(np.arange(64, dtype=np.float32), F32, nbytes=1 << 16)
    assert call(impl, "reduce_max", ub, T(2048, F32, 8), T(0, F32, 64), T(4096, F32, 4096),
                64, 1025, 0, True, chip="atlas_a2") == Code.REPEAT_RANGE
    out = call(impl, "reduce_max", ub, T(2048, F32, 8), T(0, F32, 64), T(4096, F32, 4096),
               64, 1024, 0, True, chip="atlas_a2")
    assert out.load(2048, F32, 2).view(np.uint32)[1] == 63


# ------------------------------------------------------------------ JAX vs the oracle -------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ascend_ref.case import run_jax, run_oracle  # noqa: E402
from ascend_ref.fuzz.compare import diff  # noqa: E402
from ascend_ref.fuzz.generate import HypothesisDraw, draw_case  # noqa: E402

SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@settings(max_examples=30, **SETTINGS)
@given(st.data())
def test_shared_generator_valid_and_invalid_calls_match_the_oracle(data):
    """The shared generator (adversarial data: ties, specials, subnormals, NaN payloads,
    signed zeros) over every product, dtype, mask, stride regime and rule breaker."""
    case = draw_case(HypothesisDraw(data), apis=APIS, max_ub=1 << 16,
                     invalid_rate=data.draw(st.sampled_from([0.0, 1.0])))
    a, b = run_jax(case), run_oracle(case)
    d = diff(a, b)
    assert d is None, f"{case.describe()}: {d} (jax {a}, oracle {b})"


@pytest.mark.parametrize("chip", sorted(SUPPORTED))
def test_the_default_campaign_covers_it_on_every_product(chip):
    from ascend_ref.fuzz.campaign import Campaign

    c = Campaign.load("default")
    for api in APIS:
        assert api in c.apis
        mine = [t for t in c.pool() if t.api == api]
        sums = api == "reduce_sum"
        want = {d for d in SUPPORTED[chip] if d in (F16, F32)} if sums else set(SUPPORTED[chip])
        assert {t.dtype for t in mine if chip in t.chips} == want
        assert {t.mask_mode for t in mine} == {"count", "bits", "counter"}   # §R
        assert {t.option for t in mine} == ({None} if sums else {False, True})


def test_golden_kernel(tmp_path):
    """configs/kernels/reduce_max_index_half.toml: the maximum and its index, by numpy."""
    from ascend_ref.golden import generate

    g = generate("reduce_max_index_half", tmp_path)
    x = np.fromfile(tmp_path / "input" / "input_x.bin", np.float16)
    golden = np.fromfile(tmp_path / "output" / "golden.bin", np.float16)
    assert golden[0] == x.max()
    assert int(golden.view(np.uint16)[1]) == int(np.flatnonzero(x == x.max())[0])
    assert g.golden.shape == golden.shape


def test_dump_round_trip(tmp_path):
    """verify: an agreeing dump passes; a wrong index is a mismatch."""
    from ascend_ref.case import Case
    from ascend_ref.verify import verify, write_dump

    x = np.random.default_rng(1).uniform(-5, 5, 1024).astype(np.float16)
    ub = np.zeros(1 << 13, np.uint8)
    ub[:2048] = x.view(np.uint8)
    c = Case("reduce_max", "atlas_a2", F16, True, 128, {"repeat": 8, "src_rep_stride": 8},
             {"src": (0, 1024), "dst": (4096, 16), "work_tensor": (4128, 64)}, ub)
    o = run_jax(c)
    (tmp_path / "ok").mkdir()
    (tmp_path / "bad").mkdir()
    write_dump(tmp_path / "ok" / "0.npz", c, ub_after=o.ub)
    bad = o.ub.copy()
    bad[4098] ^= 1
    write_dump(tmp_path / "bad" / "0.npz", c, ub_after=bad)
    assert verify(tmp_path / "ok", progress=False).ok
    r = verify(tmp_path / "bad", progress=False)
    assert not r.ok and "reduce_max" in r.format()


# ------------------------------------------------------------------ ReduceSum ---------------

@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("chip", sorted(SUPPORTED))
@pytest.mark.parametrize("mask", [128, FULL], ids=["continuous", "bits"])
def test_sum_page_example(impl, chip, mask):
    """ReduceSum.md: ReduceSum(dst, src, tmp, mask, 65, 8) over 8320 ones -> [8320, 0, ...]
    (dst of 16 elements, zeroed)."""
    ub = make_ub(np.ones(8320, np.float16), F16, nbytes=1 << 16)
    ub[16640:16672] = 0
    out = call(impl, "reduce_sum", ub, T(16640, F16, 16), T(0, F16, 8320),
               T(16672, F16, 80), mask, 65, 8, chip=chip)
    assert out.load(16640, F16, 16).tolist() == [8320] + [0] * 15


@pytest.mark.parametrize("impl", IMPLS)
def test_sum_tree_across_repeats(impl):
    """方式二 (every product's high-dimensional form): repeat sums 2048, 1, 1, 1 -> tree
    (2048 + 1) + (1 + 1) = 2048 + 2 = 2050 in half (sequential would give 2048); one repeat of
    -0s is its own sum -0, two give (-0 + -0) + (+0 pad) = +0."""
    x = np.zeros(512, np.float16)
    x[0], x[128], x[256], x[384] = 2048, 1, 1, 1
    for chip in ("atlas_a2", "ascend950", "atlas_200i_500_a2"):
        out = call(impl, "reduce_sum", make_ub(x, F16), T(2048, F16, 16), T(0, F16, 512),
                   T(2080, F16, 16), 128, 4, 8, chip=chip)
        assert float(out.load(2048, F16, 1)[0]) == 2050
    z = np.full(256, -0.0, np.float16)
    for r, want in ((1, 0x8000), (2, 0x0000)):
        out = call(impl, "reduce_sum", make_ub(z, F16), T(2048, F16, 16), T(0, F16, 256),
                   T(2080, F16, 16), 128, r, 8, chip="atlas_a2")
        assert int(out.load(2048, F16, 1).view(np.uint16)[0]) == want


@pytest.mark.parametrize("impl", IMPLS)
def test_sum_saturation_and_tmp(impl):
    """60000 + 60000: inf without saturation, 65504 with it (SEMANTICS §D); the tmp buffer's
    方式二 size is required (DivCeil(R, epb) * epb) and undefined afterwards on every product."""
    x = np.zeros(256, np.float16)
    x[0], x[128] = 60000, 60000
    ub = make_ub(x, F16)
    args = (T(2048, F16, 16), T(0, F16, 256), T(2080, F16, 16), 128, 2, 8)
    assert float(call(impl, "reduce_sum", ub, *args, chip="atlas_a2",
                      saturate=False).load(2048, F16, 1)[0]) == np.inf
    out = call(impl, "reduce_sum", ub, *args, chip="ascend950", saturate=True)
    assert float(out.load(2048, F16, 1)[0]) == 65504
    assert out.undefined[2080:2112].all() and out.undefined.sum() == 32
    assert call(impl, "reduce_sum", ub, *args, chip="atlas_training", saturate=False) \
        == Code.SATURATE_DTYPE                       # training: saturation mode only
    assert call(impl, "reduce_sum", ub, T(2048, F16, 16), T(0, F16, 256), T(2080, F16, 15),
                128, 2, 8, chip="ascend950") == Code.WORK_SIZE        # 2 repeats: 16
    y = np.zeros(17 * 64, np.float32)
    ub = make_ub(y, F32, nbytes=1 << 14)
    base = (T(8192, F32, 8), T(0, F32, y.size))
    assert call(impl, "reduce_sum", ub, *base, T(8224, F32, 23), 64, 17, 8,
                chip="atlas_a2") == Code.WORK_SIZE                    # 17 repeats: 24
    assert isinstance(call(impl, "reduce_sum", ub, *base, T(8224, F32, 24), 64, 17, 8,
                           chip="atlas_a2"), Out)
    assert call(impl, "reduce_sum", ub, *base, T(8224, F32, 24), 64, 17, 8, chip="atlas_a2",
                saturate=True) == Code.SATURATE_DTYPE
    assert call(impl, "reduce_sum", ub, T(8194, F32, 8), T(0, F32, y.size), T(8224, F32, 24),
                64, 17, 8, chip="atlas_a2") == Code.ALIGN              # float dst: 4 B
    assert call(impl, "reduce_sum", ub, *base, T(8224, F32, 24), 64, 17,
                chip="atlas_a2") == Code.BAD_ARGUMENT                 # no srcRepStride
    assert call(impl, "reduce_sum", ub, *base, T(8224, F32, 24), 64, 17, 8,
                chip="atlas_inference_vector_core") == Code.API_UNSUPPORTED


@pytest.mark.parametrize("repeat, dtype, need", [(65, F16, 80), (1, F16, 16), (17, F32, 24),
                                                 (255, F32, 256)])
def test_sum_tmp_size_formula(repeat, dtype, need):
    """ReduceSum.md 方式二: iter1AlignEnd = DivCeil(firstMaxRepeat, elementsPerBlock) * epb."""
    from ascend_ref.ascendc.reduce import sum_tmp_need

    assert sum_tmp_need(repeat, None, dtype) == need


# ------------------------------------------------------------------ the count form ---------
# ReduceSum.md / ReduceMax.md / ReduceMin.md "tensor前n个数据计算" (ascendc/reduce_count.py)

@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("chip", ["atlas_a2", "ascend950", "atlas_training", "kirin_x90"])
def test_count_form_page_examples(impl, chip):
    """ReduceSum.md: count 288, src all ones -> [288, 0, ...]; ReduceMax.md (A.3): count 288,
    calIndex -> [0.999, 1.38e-05] = index 232; ReduceMin.md (A.5): -> [0.00393, 4.3e-06] =
    index 72 (the positional call ``(dst, src, tmp, 288, True)`` is the count form)."""
    ub = make_ub(np.ones(288, np.float16), F16)
    out = call(impl, "reduce_sum", ub, T(2048, F16, 16), T(0, F16, 288), T(2080, F16, 16), 288,
               chip=chip)
    assert out.load(2048, F16, 1)[0] == 288
    for name, section, value, index, printed in [
            ("reduce_max", "A.3", "0.999", 232, "1.383e-05"),
            ("reduce_min", "A.5", "0.00393", 72, "4.292e-06")]:
        x = _page_data(section)
        assert x.size == 288
        out = call(impl, name, make_ub(x, F16), T(2048, F16, 16), T(0, F16, 288),
                   T(2080, F16, 32), 288, True, chip=chip)
        got = out.load(2048, F16, 2)
        assert "%.3g" % float(got[0]) == value
        assert int(got.view(np.uint16)[1]) == index
        assert "%.4g" % float(got[1]) == printed


@pytest.mark.parametrize("impl", ["jax", pytest.param("oracle", marks=pytest.mark.slow)])
@pytest.mark.parametrize("cal_index, need", [(True, 1056), (False, 1024)])
def test_count_form_tmp_size_rows_3_and_5(impl, cal_index, need):
    """ReduceMax.md sharedTmpBuffer空间计算示例三 / 五: count 65408 half (firstMaxRepeat =
    65408 / 128 = 511): 1024 + 16 + 16 = 1056 elements with index, 1024 without; need - 1
    is WORK_SIZE (A2 uses the buffer), need is accepted."""
    from ascend_ref.ascendc.reduce_count import minmax_need

    assert minmax_need(65408, cal_index, F16) == need
    x = np.random.default_rng(65408).uniform(-1, 1, 65408).astype(np.float16)
    ub = make_ub(x, F16, nbytes=196608)
    d, w = x.nbytes, x.nbytes + 64
    args = (T(d, F16, 16), T(0, F16, x.size))
    ok = call(impl, "reduce_max", ub, *args, T(w, F16, need), 65408, cal_index, chip="atlas_a2")
    assert isinstance(ok, Out) and ok.undefined[w:w + 2 * need].all()
    assert ok.load(d, F16, 1)[0] == x.max()
    if cal_index:
        assert int(ok.load(d, F16, 2).view(np.uint16)[1]) == int(np.argmax(x))
    assert call(impl, "reduce_max", ub, *args, T(w, F16, need - 1), 65408, cal_index,
                chip="atlas_a2") == Code.WORK_SIZE


@pytest.mark.parametrize("impl", IMPLS)
def test_count_form_buffer_per_mode(impl):
    """方式一 (A2, ReduceSum count form): any size, not touched; 方式二 (AI Core): the page's
    size (count 300 half: firstMaxRepeat 2 -> 16 elements), undefined afterwards; 950 方式三
    (256 < 300 * 2 <= 1024 bytes): any size, not touched; 950 count 600 (方式二): the size."""
    x = np.arange(700, dtype=np.float16) % 7
    ub = make_ub(x, F16, nbytes=1 << 14)
    args = (T(4096, F16, 16), T(0, F16, 700))
    for chip, n, used in [("atlas_a2", 300, False), ("atlas_inference_aicore", 300, True),
                          ("ascend950", 300, False), ("ascend950", 600, True)]:
        need = 16 if n == 300 else 16     # max(n // 128, 1) = 2 / 4 -> one block of 16
        tmp0 = call(impl, "reduce_sum", ub, *args, T(4160, F16, 0), n, chip=chip)
        if used:
            assert tmp0 == Code.WORK_SIZE, chip
            out = call(impl, "reduce_sum", ub, *args, T(4160, F16, need), count=n, chip=chip)
            assert out.undefined[4160:4160 + 2 * need].all()
        else:
            out = tmp0
            assert isinstance(out, Out) and not out.undefined.any(), chip
            assert (out.ub[4160:] == ub[4160:]).all()
        assert out.load(4096, F16, 1)[0] == x[:n].astype(np.float64).sum()   # exact here


def _adversarial(rng, n, dtype):
    """NaN payloads, ±0, ties, subnormals, half sums that saturate."""
    x = rng.standard_normal(n).astype(dtype)
    info = np.finfo(dtype)
    k = rng.integers(0, 6)
    if k == 0:
        x[rng.integers(0, n, 3)] = -0.0
        x[rng.integers(0, n, 3)] = 0.0
    elif k == 1:
        v = x.view(np.uint16 if dtype == F16 else np.uint32)
        v[rng.integers(0, n)] = 0x7C01 if dtype == F16 else 0x7F800001      # sNaN payload
        v[rng.integers(0, n)] = 0xFE00 if dtype == F16 else 0xFFC00000
    elif k == 2:
        x[:] = x[rng.integers(0, n)]                                        # all ties
    elif k == 3:
        x = (rng.integers(-5, 5, n) * info.smallest_subnormal).astype(dtype)
    elif k == 4:
        x = rng.choice([info.max, -info.max, info.max / 2], n).astype(dtype)
    else:
        x = np.abs(x)
        x[-1] = x.max()                                                     # tie at the end
    return x


COUNTS = {F16: [1, 127, 128, 129, 255, 256, 257, 384, 385, 512, 513, 4096 + 3],
          F32: [1, 63, 64, 65, 128, 129, 192, 193, 256, 257, 4096, 4097]}


@pytest.mark.slow
@pytest.mark.parametrize("chip", ["atlas_a2", "ascend950", "atlas_inference_aicore"])
@pytest.mark.parametrize("dtype", [F16, F32])
def test_count_form_differential_seeded(chip, dtype):
    """JAX path vs oracle: counts around L, 2L, 3L, 4L (950's 方式三 limits) and a long tail,
    adversarial data, the three APIs (half sums with and without saturation)."""
    rng = np.random.default_rng(zlib.crc32(f"{chip}/{dtype}".encode()))   # the same every run
    for n in COUNTS[dtype]:
        x = _adversarial(rng, n, dtype)
        ub = make_ub(x, dtype, nbytes=1 << 16)
        base = -(-x.nbytes // 64) * 64
        args = (T(base, dtype, 16), T(0, dtype, n), T(base + 64, dtype, 1024))
        for name, extra, kw in [("reduce_sum", (n,), {}), ("reduce_max", (n, True), {}),
                                ("reduce_min", (n, False), {})] + (
                [("reduce_sum", (n,), {"saturate": True})] if dtype == F16 else []):
            o, j = (call(impl, name, ub, *args, *extra, chip=chip, **kw) for impl in IMPLS)
            if not isinstance(o, Out):
                assert o == j, (name, n)
                continue
            assert (o.undefined == j.undefined).all() and (o.written == j.written).all()
            assert (o.ub[~o.undefined] == j.ub[~o.undefined]).all(), (name, n, chip)


def test_the_repeat_top_says_it_is_the_references_own():
    """The page lets repeatTime reach INT32_MAX; the reference stops at L*L/4 (assumed
    reduce_l2_max_repeat), and its REPEAT_RANGE message says so (it read as the page's)."""
    ub = make_ub(np.ones(128, np.float16), F16, nbytes=65536)
    args = (T(32768, F16, 16), T(0, F16, 128), T(33792, F16, 8192))
    for api in ("reduce_max", "reduce_sum"):
        with pytest.raises(ar.ConstraintError) as e:
            getattr(ar.ascendc, api)(ub, *args, 128, 4097, 0, chip="atlas_a2")
        msg = str(e.value)
        assert e.value.code == Code.REPEAT_RANGE and "allowed: [0, 4096] (" in msg, msg
        assert "reduce_l2_max_repeat" in msg and "INT32_MAX" in msg, msg


def test_index_overflow_says_where_the_winner_is_and_what_to_do():
    """INDEX_OVERFLOW comes from the data (the first extreme past 65535), not a bad stride or
    count: the message gives the winner's offset and the ways out (both forms, A2 half)."""
    x = np.zeros(71040, np.float16)
    x[70000] = 1
    ub = make_ub(x, F16, nbytes=196608)
    args = (T(150016, F16, 16), T(0, F16, 71040), T(151552, F16, 20000))
    for call_args in ((128, 555, 8, True), (71040, True)):
        with pytest.raises(ar.ConstraintError) as e:
            ar.ascendc.reduce_max(ub, *args, *call_args, chip="atlas_a2")
        msg = str(e.value)
        assert e.value.code == Code.INDEX_OVERFLOW and "is 70000 > 65535" in msg, msg
        assert "cal_index=False" in msg and "split the call" in msg, msg


@pytest.mark.slow
def test_count_form_index_overflow_and_ties():
    """A 2-byte result index above 65535 is INDEX_OVERFLOW (count 65537, the maximum last);
    among equal extremes the smallest flat position wins (A2, 950)."""
    x = np.zeros(65537, np.float16)
    x[-1] = 1
    ub = make_ub(x, F16, nbytes=1 << 18)
    args = (T(131136, F16, 16), T(0, F16, x.size), T(131200, F16, 2048))
    for impl in IMPLS:
        assert call(impl, "reduce_max", ub, *args, count=65537, cal_index=True,
                    chip="ascend950") == Code.INDEX_OVERFLOW
        out = call(impl, "reduce_max", ub, *args, 65537, False, chip="ascend950")
        assert out.load(131136, F16, 1)[0] == 1
        ties = call(impl, "reduce_min", ub, *args, 300, True, chip="atlas_a2")
        assert int(ties.load(131136, F16, 2).view(np.uint16)[1]) == 0


def test_count_form_dispatch_rule():
    """``count=`` or one numeric argument is the count form (a bool after it: calIndex); the
    high-dimensional form needs all three; both at once is BAD_ARGUMENT."""
    ub = make_ub(np.arange(256, dtype=np.float16), F16, nbytes=1 << 13)
    d, s, w = T(1024, F16, 16), T(0, F16, 256), T(1056, F16, 64)
    a = call("jax", "reduce_max", ub, d, s, w, 200, True, chip="atlas_a2")
    b = call("jax", "reduce_max", ub, d, s, w, count=200, cal_index=True, chip="atlas_a2")
    assert (a.ub == b.ub).all() and int(a.load(1024, F16, 2).view(np.uint16)[1]) == 199
    for impl in IMPLS:
        assert call(impl, "reduce_max", ub, d, s, w, 128, 1, chip="atlas_a2") == \
            Code.BAD_ARGUMENT
    assert call("jax", "reduce_sum", ub, d, s, w, 128, 1, 8, count=3,
                chip="atlas_a2") == Code.BAD_ARGUMENT
    assert call("jax", "reduce_sum", ub, d, s, w, 0, chip="atlas_a2").written.sum() == 0
    assert call("jax", "reduce_sum", ub, d, s, w, 98305, chip="atlas_a2") == Code.REPEAT_RANGE
    assert call("jax", "reduce_sum", ub, d, T(0, F16, 199), w, 200,
                chip="atlas_a2") == Code.TENSOR_BOUNDS


@pytest.mark.parametrize("dtype", [F16, F32])
def test_950_sum_of_exactly_256_bytes_is_method_three(dtype):
    """RSUM: "Counter模式且数据量在256~1024字节之间采用方式三" -- both ends in, as dav_3510
    dispatches (count <= L: one ReduceSumCount into dst, no buffer): a count of exactly L
    (256 bytes) takes any sharedTmpBuffer and leaves it untouched, in the count form and in
    the high-dimensional form's counter mode (it asked for the 方式二 size, 16 / 8 elements);
    one element less is 方式二 again (the page's "否则采用方式二"). The bits: one tree of the
    L lanes either way, numpy's sum of small integers here."""
    L = 256 // np.dtype(dtype).itemsize
    x = np.arange(L + 1, dtype=dtype) % 7
    ub = make_ub(x, dtype, nbytes=1 << 13)
    tmp = T(4096, dtype, 1)
    for impl in IMPLS:
        for count_args in ((L,), (ar.CounterMask(L), 1, 8)):
            out = call(impl, "reduce_sum", ub, T(2048, dtype, 16), T(0, dtype, L + 1), tmp,
                       *count_args, chip="ascend950")
            assert not isinstance(out, Code), (impl, count_args, out)
            assert float(out.load(2048, dtype, 1)[0]) == float(x[:L].sum())
            assert not out.undefined[4096:4096 + 32].any(), (impl, count_args)
        assert call(impl, "reduce_sum", ub, T(2048, dtype, 16), T(0, dtype, L + 1), tmp, L - 1,
                    chip="ascend950") == Code.WORK_SIZE


def test_count_form_top_is_the_products_ub_in_one_rule():
    """The count's top is the product's UB / sizeof(T) (``engine.Instruction.repeat_cap``),
    checked by the instruction's one REPEAT_RANGE rule, per case under run_batch: 98305
    halves are past A2's 192 KiB and within the 950's 248 KiB."""
    ins = ar.registry.lookup("reduce_sum_count")
    ranges = [c for c in ins.rules(None, "float16") if c.code == Code.REPEAT_RANGE]
    assert len(ranges) == 1 and "UB bytes / sizeof(T)" in ranges[0].doc
    n = 98305
    for chip, width, want in (("atlas_a2", 196608, "REPEAT_RANGE"), ("ascend950", 253952, "OK")):
        counts = np.array([n, 1000])
        _, status = ar.run_batch("reduce_sum_count", np.zeros((2, width), np.uint8), chip=chip,
                                 dtype="float16", mask=np.array([128, 128]), src=(0, counts),
                                 dst=(width - 2048, 16), work_tensor=(width - 1984, 960),
                                 count=counts)
        assert [Code(int(c)).name for c in status] == [want, "OK"], chip
        ub = np.zeros(width, np.uint8)
        args = (T(width - 2048, F16, 16), T(0, F16, n), T(width - 1984, F16, 960), n)
        for impl in IMPLS:
            got = call(impl, "reduce_sum", ub, *args, chip=chip)
            assert (got == Code.REPEAT_RANGE) == (want == "REPEAT_RANGE"), (impl, chip)


@pytest.mark.parametrize("chip", ["atlas_a2", "ascend950", "kirin_x90"])
def test_count_form_differential_quick(chip):
    """The default run's share of the seeded differential: one count per mode boundary."""
    rng = np.random.default_rng(7)
    for n in (129, 300, 513):
        x = _adversarial(rng, n, F16)
        ub = make_ub(x, F16, nbytes=1 << 13)
        args = (T(1088, F16, 16), T(0, F16, n), T(1152, F16, 64))
        for name, extra in [("reduce_sum", (n,)), ("reduce_max", (n, True))]:
            o, j = (call(impl, name, ub, *args, *extra, chip=chip) for impl in IMPLS)
            assert (o.undefined == j.undefined).all() and (o.written == j.written).all()
            assert (o.ub[~o.undefined] == j.ub[~o.undefined]).all(), (name, n, chip)


def _count_cases():
    from ascend_ref.case import Case

    rng = np.random.default_rng(14)
    out = []
    for api, chip, dtype, option, n in [
            ("reduce_sum_count", "atlas_a2", F16, None, 300),          # 方式一
            ("reduce_sum_count", "ascend950", F32, None, 200),         # 方式三
            ("reduce_sum_count", "atlas_inference_aicore", F16, None, 129),   # 方式二
            ("reduce_max_count", "atlas_a2", F16, True, 290),
            ("reduce_min_count", "ascend950", F32, False, 65)]:
        s = np.dtype(dtype).itemsize
        ub = np.zeros(4096, np.uint8)
        x = rng.uniform(-4, 4, 2048 // s).astype(dtype)
        ub[:2048] = x.view(np.uint8)
        out.append(Case(api, chip, dtype, option, 256 // s, {"repeat": n},
                        {"src": (0, n), "dst": (2048, 32 // s), "work_tensor": (2112, 64)},
                        ub))
    return out


def test_count_form_dumps_round_trip_through_verify(tmp_path):
    """Count-form cases as a device's dumps (the reference's own results) verify as agreeing,
    through the library and the CLI; a corrupted result byte is a mismatch."""
    from ascend_ref.batch import run_cases
    from ascend_ref.cli import main as cli_main
    from ascend_ref.verify import dumps_from_cases, verify

    cases = _count_cases()
    outs = run_cases(cases)
    assert all(o.code is None for o in outs)
    for c, o in zip(cases, outs):          # the batch path agrees with the oracle
        r = c.call(oracle)
        assert (r.ub[~r.undefined] == o.ub[~r.undefined]).all(), c.describe()
    dumps_from_cases(cases, tmp_path / "d", outcomes=outs)
    r = verify(tmp_path / "d", progress=False)
    assert r.ok and r.cases == len(cases) and r.agreed == len(cases)
    assert cli_main(["verify", str(tmp_path / "d")]) == 0
    # the audit reads the count form's sources too (it raised KeyError 'src_rep_stride'):
    # a float32 count-form call with a subnormal source reruns fp32_ftz flipped
    sub = cases[1]
    sub.ub[:800] = np.full(200, 1e-40, np.float32).view(np.uint8)   # flushed: 0, kept: ~2e-38
    dumps_from_cases([sub], tmp_path / "a", outcomes=run_cases([sub]))
    a = verify([tmp_path / "d", tmp_path / "a"], audit=True, progress=False)
    assert a.ok and a.agreed == len(cases) + 1
    ftz = [row for row in a.audit.sorted_rows() if row.chip == "ascend950" and row.assumption == "fp32_ftz"]
    assert ftz and ftz[0].exercised >= 1
    outs[0].ub[2048] ^= 1                  # the sum's low byte
    dumps_from_cases(cases[:1], tmp_path / "bad", outcomes=outs[:1])
    assert not verify(tmp_path / "bad", progress=False).ok


def test_count_form_explain_lists_its_rules():
    """``explain reduce_sum --rules`` is the high-dimensional form's list; the count form's own
    list (its count range, 方式二 size, index limit) is ``explain reduce_sum_count --rules``."""
    from ascend_ref import registry

    rules = {(c.code, c.param) for c in registry.lookup("reduce_sum_count").rules()}
    assert (Code.REPEAT_RANGE, "count") in rules and (Code.WORK_SIZE, "work_tensor.size") in rules
    assert not any(c.code in (Code.MASK_RANGE, Code.STRIDE_RANGE) for c in
                   registry.lookup("reduce_sum_count").rules())
    mx = {(c.code, c.param) for c in registry.lookup("reduce_max_count").rules(True)}
    assert (Code.INDEX_OVERFLOW, "count") in mx


def test_count_form_sum_sets_the_sum_register():
    """GetReduceRepeatSumSpr reads the count-form ReduceSum's result (A2 ACC_VAL, 950 the
    per-type global); the high-dimensional form leaves the register as it was."""
    ub = make_ub(np.ones(288, np.float16), F16)
    args = (T(2048, F16, 16), T(0, F16, 288), T(2080, F16, 16))
    for chip in ("atlas_a2", "ascend950"):
        _, info = ar.ascendc.reduce_sum(ub, *args, 288, chip=chip, return_info=True)
        assert float(ar.ascendc.get_reduce_repeat_sum_spr(info.spr, F16, chip=chip)) == 288
        _, again = ar.ascendc.reduce_sum(ub, *args, 128, 2, 8, chip=chip, return_info=True,
                                         spr=info.spr)
        assert float(ar.ascendc.get_reduce_repeat_sum_spr(again.spr, F16, chip=chip)) == 288


@pytest.mark.parametrize("impl", IMPLS)
def test_count_form_tree_tail_orders_differ_on_kirin(impl):
    """方式二 with a tail (ReduceSum.md: Kirin "采用方式二"; the page does not say where the
    tail goes): count 385 half = 3 full repeats + 1, sums 2048, 0, 1 and tail 1, each repeat
    exact. "leaf" (Kirin's profiles, assumed: dav_l300 / dav_l311 ReduceSumCounterMode, one tree
    over every repeat sum): (2048 + 0) + (1 + 1) = 2050. "step" (the other tree products, and
    the audit's counterfactual on Kirin): tree(2048, 0, 1) = 2049 -> 2048 (ties to even), then
    2048 + 1 -> 2048."""
    import dataclasses

    from ascend_ref.chips import chip as get_chip

    h = np.float16
    step = (h(2048) + h(0)) + (h(1) + h(0))
    step = step + h(1)
    leaf = (h(2048) + h(0)) + (h(1) + h(1))
    assert (float(step), float(leaf)) == (2048.0, 2050.0)
    x = np.zeros(385, np.float16)
    x[0], x[256], x[384] = 2048, 1, 1
    ub = make_ub(x, F16, nbytes=2048)
    args = (T(1024, F16, 16), T(0, F16, 385), T(1056, F16, 16), 385)
    base = get_chip("kirin_x90")
    assert base.reduce_sum_count_mode == "tree" and base.reduce_sum_tree_tail == "leaf"
    alt = dataclasses.replace(base, id="kirin_x90~reduce_sum_tree_tail=step",
                              facts={**base.facts, "reduce_sum_tree_tail": "step"})
    for chip, want in (("kirin_x90", leaf), ("kirin_9030", leaf), (alt, step),
                       ("atlas_training", step)):
        out = call(impl, "reduce_sum", ub, *args, chip=chip)
        assert out.load(1024, F16, 1)[0] == want, chip


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(chip=st.sampled_from(["atlas_a2", "ascend950", "atlas_training", "kirin_9030"]),
       dtype=st.sampled_from([F16, F32]), n=st.integers(0, 1100), seed=st.integers(0, 2**16),
       api=st.sampled_from(["reduce_sum", "reduce_max", "reduce_min"]),
       flag=st.booleans())
def test_count_form_differential_hypothesis(chip, dtype, n, seed, api, flag):
    """JAX path vs oracle over drawn counts (0 included), products, dtypes and adversarial
    data; ``flag``: calIndex (max / min) or saturate (half sums)."""
    if chip == "atlas_training" and dtype == F32:
        dtype = F16
    x = _adversarial(np.random.default_rng(seed), max(n, 1), dtype)
    ub = make_ub(x, dtype, nbytes=1 << 13)
    base = -(-x.nbytes // 64) * 64
    args = (T(base, dtype, 16), T(0, dtype, max(n, 1)), T(base + 64, dtype, 256))
    if api == "reduce_sum":
        extra, kw = (n,), ({"saturate": True} if flag and dtype == F16 else {})
    else:
        extra, kw = (n, flag), {}
    o, j = (call(impl, api, ub, *args, *extra, chip=chip, **kw) for impl in IMPLS)
    if not isinstance(o, Out):
        assert o == j
        return
    assert (o.undefined == j.undefined).all() and (o.written == j.written).all()
    assert (o.ub[~o.undefined] == j.ub[~o.undefined]).all()


def test_a_mask_without_its_repeat_arguments_is_named_as_such():
    """A bit-mask list (or a CounterMask) with no repeat_time / src_rep_stride is the
    high-dimensional form missing its repeats: BAD_ARGUMENT naming repeat_time (it was taken
    as the count form's count: 'reduce_max_count: count = [...]')."""
    ub = make_ub(np.ones(512, np.float16), F16, nbytes=1 << 13)
    args = (T(2048, F16, 16), T(0, F16, 512), T(4096, F16, 64))
    m = 2**64 - 1
    for api, rest in (("reduce_max", ([m, m], True)), ("reduce_sum", ([m, m],)),
                      ("reduce_min", (ar.CounterMask(300),))):
        with pytest.raises(ar.ConstraintError) as e:
            getattr(ar.ascendc, api)(ub, *args, *rest, chip="atlas_a2")
        assert (e.value.code, e.value.api, e.value.param) == \
            (Code.BAD_ARGUMENT, api, "repeat_time"), str(e.value)
        assert "is a mask; the count form takes one int count" in str(e.value)
    assert call("jax", "reduce_max", ub, *args, 300, True, chip="atlas_a2").load(
        2048, F16, 1)[0] == 1                                   # a count and calIndex: fine


def test_a_type_only_the_count_form_has_points_to_it():
    """950 int64 / uint64 are on the count form only ("仅支持tensor前n个数据计算"): the
    high-dimensional call's DTYPE_UNSUPPORTED says so and shows the count-form call; a product
    without them in either form gets the plain error."""
    ub = ar.new_ub("ascend950")
    args = (T(2048, "int64", 16), T(0, "int64", 128), T(4096, "int64", 64))
    for api in ("reduce_max", "reduce_sum"):
        with pytest.raises(ar.ConstraintError) as e:
            getattr(ar.ascendc, api)(ub, *args, 32, 1, 8, chip="ascend950")
        assert e.value.code == Code.DTYPE_UNSUPPORTED, str(e.value)
        assert "count form only on ascend950" in str(e.value)
        assert f"{api}(ub, dst, src, tmp, count" in str(e.value)
        getattr(ar.ascendc, api)(ub, *args, 32, chip="ascend950")          # the count form
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.reduce_max(ar.new_ub("atlas_a2"), *args, 32, 1, 8, chip="atlas_a2")
    assert e.value.code == Code.DTYPE_UNSUPPORTED and "count form" not in str(e.value)
