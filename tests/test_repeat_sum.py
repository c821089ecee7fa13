"""Ascend 950 integer ReduceRepeat<SUM> (dst type != src type) and RepeatReduceSum (issue 14
items 3 and 6; docs/SEMANTICS.md §M).

Expected values come from the pages (ReduceRepeat.md's (dst, src) pair table and worked
examples, RepeatReduceSum.md's example) or are computed here with Python integers from the
rules of §M (a sum of the active lanes read as integers of the source type, stored modulo
2**32 in the dst type); the hypothesis tests compare the JAX path with the independent
oracle on adversarial data (extremes, wrap-around, masked lanes holding extremes).
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ascend_ref as ar
from ascend_ref import oracle
from ascend_ref.case import Case, run_jax, run_oracle
from ascend_ref.constraints import Code
from conftest import call_ascendc as call
from ascend_ref.fuzz.compare import diff

IMPLS = ["oracle", "jax"]
SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
#: ReduceRepeat.md id18 (Ascend 950): SUM (dst T, src U)
PAIRS = {"int16": "int32", "uint16": "uint32", "int32": "int32", "uint32": "uint32",
         "float16": "float16", "float32": "float32"}
INTS = ["int16", "uint16", "int32", "uint32"]
FULL = [2**64 - 1, 2**64 - 1]
SENTINEL = 0x5A
APIS = ["whole_reduce_sum", "repeat_reduce_sum"]


def T(addr, dtype, size):
    return ar.Tensor(addr, dtype, size)


def args_of(api, dst, src, mask, repeat, drs=1, sbs=1, srs=8, dbs=0):
    """The public positional arguments of ``api`` (RepeatReduceSum: repeat before mask,
    dstBlkStride, srcBlkStride, dstRepStride, srcRepStride)."""
    if api == "repeat_reduce_sum":
        return (dst, src, repeat, mask, dbs, sbs, drs, srs)
    return (dst, src, mask, repeat, drs, sbs, srs)


def ub_with(values, dtype, nbytes=8192):
    ub = np.full(nbytes, SENTINEL, np.uint8)
    raw = np.asarray(values, dtype).view(np.uint8)
    ub[:raw.size] = raw
    return ub


def expected_sum(values, dtype, lanes):
    """Python-integer sum of ``values[lanes]`` (the source read as ``dtype`` integers)
    stored modulo 2**32 in the paired dst type."""
    total = sum(int(v) for v in np.asarray(values, dtype)[list(lanes)])
    return np.array([total % 2**32], np.uint32).view(PAIRS[dtype])[0]


# ------------------------------------------------------------------ products and dtypes ---

@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("src", INTS)
def test_950_sums_integers_into_the_paired_dst_type(impl, api, src):
    """ReduceRepeat.md id18: int32 <- int16 / int32, uint32 <- uint16 / uint32; each repeat's
    sum at ``dst + r * dstRepStride * sizeof(dst)`` (4 bytes)."""
    s = np.dtype(src).itemsize
    L = 256 // s
    rng = np.random.default_rng(3)
    info = np.iinfo(src)
    x = rng.integers(info.min, info.max, 3 * L, endpoint=True).astype(src)
    out = call(impl, api, ub_with(x, src), *args_of(api, T(4096, PAIRS[src], 16),
                                                    T(0, src, 3 * L), L, 3, drs=2),
               chip="ascend950")
    ub, written, _ = out
    got = ub[4096:4096 + 24].view(PAIRS[src])
    for r in range(3):
        assert got[2 * r] == expected_sum(x[r * L:(r + 1) * L], src, range(L))
        assert ub[4096 + 8 * r + 4:4096 + 8 * r + 8].tolist() == [SENTINEL] * 4   # the gap
    assert written.sum() == 12


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("api", APIS)
def test_int32_wraps_modulo_2_32(impl, api):
    """64 lanes of INT32_MAX: 64 * (2**31 - 1) = 2**37 - 64, modulo 2**32 -> -64 (the
    assumed ``int_sum_overflow = "wrap"``); uint32: 64 * 0xFFFFFFFF -> 2**32 - 64."""
    for dtype, v, want in (("int32", 2**31 - 1, -64), ("uint32", 2**32 - 1, 2**32 - 64),
                           ("int32", -2**31, 0)):
        x = np.full(64, v, dtype)
        ub, _, _ = call(impl, api, ub_with(x, dtype), *args_of(api, T(4096, dtype, 8),
                                                               T(0, dtype, 64), 64, 1),
                        chip="ascend950")
        assert int(ub[4096:4100].view(dtype)[0]) == want


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("api", APIS)
def test_int16_cannot_overflow_int32(impl, api):
    """128 lanes of -32768 sum to -4194304 exactly (the lanes widen to int32); uint16
    128 * 65535 = 8388480."""
    for src, v, want in (("int16", -32768, -4194304), ("uint16", 65535, 8388480)):
        ub, _, _ = call(impl, api, ub_with(np.full(128, v, src), src),
                        *args_of(api, T(4096, PAIRS[src], 8), T(0, src, 128), FULL
                                 if api == "whole_reduce_sum" else 128, 1),
                        chip="ascend950")
        assert int(ub[4096:4100].view(PAIRS[src])[0]) == want


@pytest.mark.parametrize("impl", IMPLS)
def test_masked_lanes_count_as_zero(impl):
    """Reg Reduce.md: "不参与计算的元素，被当作0"; extremes in the masked lanes do not leak."""
    x = np.full(128, -32768, np.int16)
    x[::3] = 7
    mask = [int("".join("1" if i % 3 == 0 else "0" for i in range(64))[::-1], 2),
            int("".join("1" if (64 + i) % 3 == 0 else "0" for i in range(64))[::-1], 2)]
    ub, _, _ = call(impl, "whole_reduce_sum", ub_with(x, "int16"), T(4096, "int32", 8),
                    T(0, "int16", 128), mask, 1, 1, 1, 8, chip="ascend950")
    assert int(ub[4096:4100].view(np.int32)[0]) == 7 * 43


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("dst, src, code", [
    ("int16", "int16", Code.DTYPE_MISMATCH),        # int16 sums into int32 only
    ("uint32", "int16", Code.DTYPE_MISMATCH),
    ("int32", "uint16", Code.DTYPE_MISMATCH),
    ("uint32", "int32", Code.DTYPE_MISMATCH),
    ("float32", "int32", Code.DTYPE_MISMATCH),
    ("int32", "float32", Code.DTYPE_MISMATCH),
])
def test_950_rejects_every_other_pair(impl, api, dst, src, code):
    ub = np.zeros(8192, np.uint8)
    got = call(impl, api, ub, *args_of(api, T(4096, dst, 16), T(0, src, 128), 1, 1),
               chip="ascend950")
    assert got == code


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("chip", ["atlas_a2", "atlas_a3", "atlas_inference_aicore", "kirin_x90",
                                  "atlas_training"])
def test_integer_sums_exist_on_950_only(impl, api, chip):
    """ReduceRepeat.md 数据类型: the other products sum half / float (training half)."""
    if api == "repeat_reduce_sum" and chip == "kirin_x90":
        pytest.skip("no RepeatReduceSum on Kirin (API_UNSUPPORTED, tested below)")
    ub = np.zeros(8192, np.uint8)
    for dst, src in (("int32", "int16"), ("int32", "int32"), ("int16", "int16")):
        got = call(impl, api, ub, *args_of(api, T(4096, dst, 16), T(0, src, 128), 1, 1),
                   chip=chip)
        assert got == Code.DTYPE_UNSUPPORTED, (dst, src)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("api", APIS)
def test_integer_dst_alignment_and_unit_are_4_bytes(impl, api):
    """The dst unit / alignment of an int32 / uint32 sum is sizeof(dst) = 4 (ReduceRepeat.md
    table 3 lists half / float only; the implementation checks sizeof(dst type): assumed
    extension, SEMANTICS §M)."""
    x = np.arange(256, dtype=np.int16)
    ub = ub_with(x, "int16")
    assert call(impl, api, ub, *args_of(api, T(4098, "int32", 8), T(0, "int16", 256), 128, 2),
                chip="ascend950") == Code.ALIGN
    ok = call(impl, api, ub, *args_of(api, T(4100, "int32", 8), T(0, "int16", 256), 128, 2),
              chip="ascend950")
    assert ok[0][4100:4108].view(np.int32).tolist() == [sum(range(128)), sum(range(128, 256))]
    # the dst extent is counted in dst elements: 1 int32 holds one repeat only
    assert call(impl, api, ub, *args_of(api, T(4096, "int32", 1), T(0, "int16", 256), 128, 2),
                chip="ascend950") == Code.TENSOR_BOUNDS


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("api", APIS)
def test_saturate_is_for_half_only(impl, api):
    ub = np.zeros(8192, np.uint8)
    for src in INTS:
        got = call(impl, api, ub, *args_of(api, T(4096, PAIRS[src], 16), T(0, src, 128), 1, 1),
                   chip="ascend950", saturate=True)
        assert got == Code.SATURATE_DTYPE, src


@pytest.mark.parametrize("impl", IMPLS)
def test_a_wide_dst_word_read_by_a_later_repeat_is_an_overlap(impl):
    """Repeat 0 writes an int32 over bytes [64, 68) = int16 lanes 32 and 33 of the source;
    repeat 1 (srcRepStride 0: the same lanes) reads only lane 33 (bit 33): still OVERLAP."""
    x = np.arange(128, dtype=np.int16)
    ub = ub_with(x, "int16")
    mask = [1 << 33, 0]
    got = call(impl, "whole_reduce_sum", ub, T(64, "int32", 2), T(0, "int16", 128), mask, 2,
               1, 1, 0, chip="ascend950")
    assert got == Code.OVERLAP
    # one repeat: it reads lane 33 and writes over it (in place): every read happens before
    # the write (SEMANTICS §E), no error
    got = call(impl, "whole_reduce_sum", ub, T(64, "int32", 2), T(0, "int16", 128), mask, 1,
               1, 1, 0, chip="ascend950")
    assert got[0][64:68].view(np.int32)[0] == 33


def test_grad_rejects_integer_sums_with_a_named_error():
    import ascend_ref.grad as g

    with pytest.raises(ar.ConstraintError) as e:
        g.whole_reduce_sum(np.arange(128, dtype=np.int16), 128, 1, 1, 8, chip="ascend950")
    assert e.value.code == Code.DTYPE_UNSUPPORTED
    assert "integer" in str(e.value)


# ------------------------------------------------------------------ RepeatReduceSum -------

#: RepeatReduceSum.md (3825d1c98^): 950, A3, A2, AI Core, training; not 200I/500 A2, not the
#: Vector Core; Kirin and Atlas 200/300/500 inference not listed
RRS_PRODUCTS = {"ascend950": ("float16", "float32") + tuple(INTS),
                "atlas_a3": ("float16", "float32"), "atlas_a2": ("float16", "float32"),
                "atlas_inference_aicore": ("float16", "float32"),
                "atlas_training": ("float16",)}
RRS_NONE = ["atlas_200i_500_a2", "atlas_inference_vector_core", "kirin_x90", "kirin_9030",
            "atlas_200_300_500_inference"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("chip", sorted(RRS_PRODUCTS))
def test_repeat_reduce_sum_page_example(impl, chip):
    """RepeatReduceSum.md: ``RepeatReduceSum<half>(dst, src, 4, 128, 0, 1, 1, 8)`` over
    repeats of ones, twos, (elided), threes -> ``[128 256 ... 384]``. The page prints 64
    ones and 64 twos before the elision, which would make repeat 0 sum to 192: the printed
    input is abbreviated; the output fixes each repeat's 128 lanes (SEMANTICS §M). Repeat 2
    is elided: any value (here 5) gives 640."""
    x = np.repeat(np.array([1, 2, 5, 3], np.float16), 128)
    ub, _, _ = call(impl, "repeat_reduce_sum", ub_with(x, "float16"), T(4096, "half", 16),
                    T(0, "half", 512), 4, 128, 0, 1, 1, 8, chip=chip)
    got = ub[4096:4104].view(np.float16).tolist()
    assert got[0] == 128 and got[1] == 256 and got[3] == 384 and got[2] == 640


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("chip", RRS_NONE)
def test_repeat_reduce_sum_products_without_it(impl, chip):
    got = call(impl, "repeat_reduce_sum", np.zeros(4096, np.uint8), T(1024, "half", 16),
               T(0, "half", 128), 1, 128, 0, 1, 1, 8, chip=chip)
    assert got == Code.API_UNSUPPORTED


@pytest.mark.parametrize("impl", IMPLS)
def test_repeat_reduce_sum_training_is_half_only(impl):
    """ReduceRepeat.md (current) lists Atlas training half only; RepeatReduceSum.md said
    half / float: the newer page wins (SEMANTICS §M contradiction)."""
    got = call(impl, "repeat_reduce_sum", np.zeros(4096, np.uint8), T(1024, "float", 16),
               T(0, "float", 64), 1, 64, 0, 1, 1, 8, chip="atlas_training")
    assert got == Code.DTYPE_UNSUPPORTED
    got = call(impl, "repeat_reduce_sum", np.zeros(4096, np.uint8), T(1024, "half", 16),
               T(0, "half", 256), 2, 128, 0, 1, 0, 8, chip="atlas_training")
    assert got == Code.DST_STRIDE_ZERO                  # "Atlas 训练系列产品不支持配置0"


@pytest.mark.parametrize("impl", IMPLS)
def test_repeat_reduce_sum_has_no_bit_mode(impl):
    """"和WholeReduceSum接口相比，不支持mask逐bit模式": the API takes ``const int32_t mask``."""
    got = call(impl, "repeat_reduce_sum", np.zeros(4096, np.uint8), T(1024, "half", 16),
               T(0, "half", 128), 1, FULL, 0, 1, 1, 8, chip="atlas_a2")
    assert got == Code.BAD_ARGUMENT
    for m, code in ((129, Code.MASK_RANGE), (0, None)):      # A2: mask 0 is a NOP
        got = call(impl, "repeat_reduce_sum", np.zeros(4096, np.uint8), T(1024, "half", 16),
                   T(0, "half", 128), 1, m, 0, 1, 1, 8, chip="atlas_a2")
        assert (got if isinstance(got, Code) else None) == code


@pytest.mark.parametrize("impl", IMPLS)
def test_dst_blk_stride_has_no_effect(impl):
    """"dstBlkStride：此参数无效，可以配置任意值" (and the implementation drops it)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1024).astype(np.float16)
    ub = ub_with(x, "float16")
    outs = [call(impl, "repeat_reduce_sum", ub, T(4096, "half", 64), T(0, "half", 1024), 5, 77,
                 dbs, 2, 3, 6, chip="ascend950") for dbs in (0, 1, 7, 65535, 2**40)]
    for o in outs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(o, outs[0]))
    same = call(impl, "whole_reduce_sum", ub, T(4096, "half", 64), T(0, "half", 1024), 77, 5,
                3, 2, 6, chip="ascend950")
    assert all(np.array_equal(a, b) for a, b in zip(same, outs[0]))
    assert call(impl, "repeat_reduce_sum", ub, T(4096, "half", 64), T(0, "half", 1024), 5, 77,
                "x", 2, 3, 6, chip="ascend950") == Code.BAD_ARGUMENT


# ------------------------------------------------------------------ differential ----------

_EXTREMES = {"int16": [-32768, 32767, -1, 0, 1], "uint16": [0, 65535, 1, 32768],
             "int32": [-2**31, 2**31 - 1, -1, 0, 1], "uint32": [0, 2**32 - 1, 1, 2**31]}


def _int_case(data, api, dtype, chip="ascend950"):
    s = np.dtype(dtype).itemsize
    L = 256 // s
    R = data.draw(st.integers(0, 6), "repeat")
    srs = data.draw(st.sampled_from([0, 1, 8, 9, 16]), "src_rep_stride")
    sbs = data.draw(st.sampled_from([0, 1, 2]), "src_blk_stride")
    drs = data.draw(st.sampled_from([0, 1, 3]), "dst_rep_stride")
    if api == "repeat_reduce_sum" or data.draw(st.booleans(), "count mode"):
        mask = data.draw(st.sampled_from([L, 1, L - 1, data.draw(st.integers(1, L))]), "mask")
    else:
        words = [data.draw(st.integers(0, 2**64 - 1)) for _ in range(L // 64)]
        mask = words if L == 128 else [words[0]]
    src_bytes = max(R - 1, 0) * srs * 32 + 7 * sbs * 32 + 32
    src_bytes = (src_bytes + 31) // 32 * 32
    dsz = np.dtype(PAIRS[dtype]).itemsize
    dst_addr = src_bytes + 32 * data.draw(st.integers(0, 2))
    dst_n = (max(R - 1, 0) * drs + 1)
    if data.draw(st.booleans(), "in place"):
        dst_addr = 32 * data.draw(st.integers(0, 3))
    ubn = max(dst_addr + dst_n * dsz, src_bytes) + 64
    ubn = (ubn + 63) // 64 * 64
    pool = _EXTREMES[dtype]
    kind = data.draw(st.sampled_from(["extremes", "random", "max"]), "data")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), "seed"))
    info = np.iinfo(dtype)
    n = ubn // s
    if kind == "extremes":
        vals = rng.choice(np.array(pool, dtype=np.int64), n)
    elif kind == "max":
        vals = np.full(n, info.max if data.draw(st.booleans()) else info.min, np.int64)
    else:
        vals = rng.integers(info.min, info.max, n, endpoint=True)
    ub = vals.astype(dtype).view(np.uint8).copy()
    params = {"repeat": R, "dst_rep_stride": drs, "src_blk_stride": sbs, "src_rep_stride": srs}
    return Case(api, chip, dtype, None, mask, params,
                {"dst": (dst_addr, dst_n), "src": (0, src_bytes // s)}, ub)


def _agree(case):
    a, b = run_jax(case), run_oracle(case)
    d = diff(a, b)
    assert d is None, f"{case.describe()}: {d} (jax {a}, oracle {b})"
    return a


@settings(max_examples=50, **SETTINGS)
@given(st.data())
def test_integer_sums_match_the_oracle(data):
    api = data.draw(st.sampled_from(APIS), "api")
    dtype = data.draw(st.sampled_from(INTS), "dtype")
    _agree(_int_case(data, api, dtype))


@settings(max_examples=25, **SETTINGS)
@given(st.data())
def test_the_saturating_alternative_matches_the_oracle(data):
    """The audit's counterfactual ``int_sum_overflow = "saturate"`` (each tree add clamped)
    agrees between the two implementations too."""
    prof = ar.chip("ascend950")
    alt = dataclasses.replace(prof, id="ascend950~int_sum_overflow=saturate",
                              facts={**prof.facts, "int_sum_overflow": "saturate"})
    case = _int_case(data, "whole_reduce_sum", data.draw(st.sampled_from(["int32", "uint32"])))
    case.chip = alt
    _agree(case)


@pytest.mark.parametrize("impl", IMPLS)
def test_saturating_alternative_by_hand(impl):
    """[MAX, MAX, MIN, MIN, 0 ...]: (MAX+MAX clamps to MAX) + (MIN+MIN clamps to MIN) = -1,
    while modulo 2**32 the sum is 2*MAX + 2*MIN = -2."""
    prof = ar.chip("ascend950") if impl == "jax" else oracle._products.PRODUCTS["ascend950"]
    alt = dataclasses.replace(prof, id="ascend950~sat",
                              **({"facts": {**prof.facts, "int_sum_overflow": "saturate"}}
                                 if impl == "jax" else {"int_sum_overflow": "saturate"}))
    x = np.zeros(64, np.int32)
    x[:4] = [2**31 - 1, 2**31 - 1, -2**31, -2**31]
    for chip, want in ((alt, -1), ("ascend950", -2)):
        ub, _, _ = call(impl, "whole_reduce_sum", ub_with(x, "int32"), T(4096, "int32", 8),
                        T(0, "int32", 64), 64, 1, 1, 1, 8, chip=chip)
        assert int(ub[4096:4100].view(np.int32)[0]) == want
