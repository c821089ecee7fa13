"""Issue 12: fidelity to the current documentation (TIK alignment and overlap per API page,
work size under jit, messages). Every behaviour is checked on the JAX path and the oracle."""

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Code, Tensor as T
from ascend_ref.oracle import OracleError

H = "half"


def _ub(n=8192, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-100, 100, n // 2).astype(np.float16)
    return x.view(np.uint8).copy()


def _both(api, *args, chip="atlas_training", **kw):
    """Run on the JAX path and on the oracle: ``(jax_ub, oracle_result)`` or both errors."""
    ub = args[0]
    try:
        j = np.asarray(getattr(ar.tik, api)(*args, chip=chip, **kw))
        jerr = None
    except ar.ConstraintError as e:
        j, jerr = None, e
    try:
        o = getattr(ar.oracle, api)(*args, chip=chip, **kw)
        oerr = None
    except OracleError as e:
        o, oerr = None, e
    assert (jerr is None) == (oerr is None), (jerr, oerr)
    if jerr is not None:
        assert jerr.code == oerr.code, (jerr, oerr)
        return jerr, oerr
    keep = ~o.undefined
    np.testing.assert_array_equal(j[keep], o.ub[keep])
    assert ub is not None
    return j, o


# ------------------------------------------------------------------ finding 3: alignment ---

@pytest.mark.parametrize("api", ["vec_reduce_min", "vec_reduce_max"])
def test_minmax_dst_needs_only_4_bytes(api):
    """vec_reduce_max/min pages (seed 002 era CANN 5.0 up to 8.5): "dst 起始地址要求4Byte对齐".
    dst.addr = 1028 is documented-valid; 1026 is not."""
    ub = _ub()
    j, o = _both(api, ub, 128, T(4100, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8, True)
    assert o.written[4100:4104].all()
    err, _ = _both(api, ub, 128, T(4098, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8, True)
    assert err.code == Code.ALIGN and err.param == "dst.addr" and "4 bytes" in str(err)


@pytest.mark.parametrize("which", ["src", "work_tensor"])
def test_minmax_src_and_work_keep_the_general_32_byte_rule(which):
    ub = _ub()
    t = {"dst": T(4096, H, 16), "src": T(0, H, 256), "work_tensor": T(4160, H, 64)}
    t[which] = T(t[which].addr + 4, H, t[which].size)
    err, oerr = _both("vec_reduce_min", ub, 128, t["dst"], t["src"], t["work_tensor"], 2, 8, True)
    assert err.code == oerr.code == Code.ALIGN and err.param == f"{which}.addr"


def test_vec_reduce_add_dst_follows_the_general_rule():
    """vec_reduce_add's page sends every operand to the general constraints (32 B)."""
    ub = _ub()
    err, _ = _both("vec_reduce_add", ub, 128, T(4100, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8)
    assert err.code == Code.ALIGN and err.param == "dst.addr"


# ------------------------------------------------------------------ finding 4: overlap -----

def test_minmax_forbids_only_dst_work_overlap():
    """Seed 002: only dst / work_tensor may not overlap. src / dst and src / work_tensor
    overlaps run, every read before any write (the result is computed from the UB as it was
    when the call started; SEMANTICS §A, assumed)."""
    ub = _ub()
    # dst inside src (read-before-write: dst is written from the original src values)
    j, o = _both("vec_reduce_min", ub, 128, T(32, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8,
                 True)
    src = ub[:512].view(np.float16)
    assert j[32:34].view(np.float16)[0] == src.min()
    assert j[34:36].view(np.uint16)[0] == int(np.argmin(src))
    # work inside src
    j, o = _both("vec_reduce_max", ub, 128, T(4096, H, 16), T(0, H, 256), T(256, H, 64), 2, 8,
                 True)
    assert j[4096:4098].view(np.float16)[0] == src.max()
    # dst / work_tensor overlap: forbidden
    err, _ = _both("vec_reduce_min", ub, 128, T(4160, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8,
                   True)
    assert err.code == Code.OVERLAP and err.param == "dst/work_tensor"


@pytest.mark.parametrize("pair", [("dst", "src"), ("src", "work_tensor"), ("dst", "work_tensor")])
def test_vec_reduce_add_forbids_all_three_pairs(pair):
    ub = _ub()
    t = {"dst": T(4096, H, 16), "src": T(0, H, 256), "work_tensor": T(4160, H, 64)}
    a, b = pair
    t[a] = T(t[b].addr, H, t[a].size)
    err, _ = _both("vec_reduce_add", ub, 128, t["dst"], t["src"], t["work_tensor"], 2, 8)
    assert err.code == Code.OVERLAP


# ------------------------------------------------------------------ finding 11: messages ---

def test_eager_repeat_range_message_has_no_batch_note():
    ub = _ub()
    for r in (-1, 4096, 600):
        with pytest.raises(ar.ConstraintError) as e:
            ar.tik.vec_reduce_min(ub, 128, T(4096, H, 16), T(0, H, 256), T(4160, H, 64), r, 0,
                                  r == 600, chip="atlas_training")
        assert e.value.code == Code.REPEAT_RANGE
        assert "compiled" not in str(e.value) and "batch" not in str(e.value), str(e.value)
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.whole_reduce_sum(ub, T(4096, H, 8), T(0, H, 256), 128, 300, 1, 1, 8,
                                    chip="atlas_a2")
    assert "compiled" not in str(e.value) and "[0, 255]" in str(e.value)


def test_zero_bit_mask_message_shows_the_words():
    ub = _ub()
    with pytest.raises(ar.ConstraintError) as e:
        ar.tik.vec_reduce_add(ub, [0, 0], T(4096, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8,
                              chip="atlas_training")
    assert e.value.code == Code.MASK_ZERO
    assert "mask = 0 " not in str(e.value) and "0x0" in str(e.value), str(e.value)
    with pytest.raises(ar.ConstraintError) as e:
        ar.tik.vec_reduce_add(ub, 0, T(4096, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8,
                              chip="atlas_training")
    assert "mask = 0 " in str(e.value)


def test_api_unsupported_message_reads_sensibly():
    ub = _ub()
    with pytest.raises(ar.ConstraintError) as e:
        ar.tik.vec_reduce_add(ub, 128, T(4096, H, 16), T(0, H, 256), T(4160, H, 64), 2, 8,
                              chip="ascend950")
    msg = str(e.value)
    assert e.value.code == Code.API_UNSUPPORTED
    assert "'ascend950' is not allowed on ascend950" not in msg
    assert "chip = 'ascend950' is not allowed" in msg and "vec_reduce_add" in msg


def test_reduce_data_block_max_min_saturate_has_no_effect():
    """Saturation acts on the result of an add; ReduceDataBlock MAX / MIN performs none (the
    result is one of the inputs), so ``saturate`` is accepted there and changes nothing
    (SEMANTICS §D). Checked with inputs at ±inf and 65504 on both implementations."""
    x = np.array([np.inf, -np.inf, 65504, -65504, np.nan, 1, 2, 3] * 16, np.float16)
    ub = np.zeros(1024, np.uint8)
    ub[:256] = x.view(np.uint8)
    for rt in ("MAX", "MIN"):
        outs = []
        for sat in (False, True):
            args = (ub, T(512, H, 8), T(0, H, 128), 128, 1, 1, 1, 8)
            j = np.asarray(ar.ascendc.reduce_data_block(*args, reduce_type=rt, chip="atlas_a2",
                                                        saturate=sat))
            o = ar.oracle.reduce_data_block(*args, reduce_type=rt, chip="atlas_a2", saturate=sat)
            np.testing.assert_array_equal(j, o.ub)
            outs.append(j)
        np.testing.assert_array_equal(outs[0], outs[1])


# ------------------------------------------------------------------ findings 8 and 9 -------

def test_950_min_max_nan_is_the_types_nan_with_the_first_nan_index():
    """950 Reg Reduce page: "如果输入数据存在nan,将该数据类型的nan写入dstReg,将第一个nan的索引保存"
    — the value is the profile's default NaN, the index the first NaN lane; A2 keeps the
    lane's own bits (its pages say nothing else)."""
    x = np.ones(128, np.float16)
    x[5] = np.frombuffer(np.uint16(0x7E01).tobytes(), np.float16)[0]
    x[9] = np.frombuffer(np.uint16(0x7C07).tobytes(), np.float16)[0]
    ub = np.zeros(1024, np.uint8)
    ub[:256] = x.view(np.uint8)
    for chip, want in (("ascend950", ar.chip("ascend950").default_nan_f16), ("atlas_a2", 0x7E01)):
        args = (ub, T(512, H, 16), T(0, H, 128), 128, 1, 1, 1, 8)
        j = np.asarray(ar.ascendc.whole_reduce_max(*args, chip=chip))
        o = ar.oracle.whole_reduce_max(*args, chip=chip)
        np.testing.assert_array_equal(j, o.ub)
        assert j[512:516].view(np.uint16).tolist() == [want, 5], chip
    assert {"minmax_nan", "minmax_rules"} <= set(ar.chip("ascend950").assumed)


@pytest.mark.parametrize("chip", ["kirin_x90", "kirin_9030"])
def test_kirin_fill_and_zero_mask_follow_950(chip):
    """Kirin X90 / 9030 run the 950 Reg implementation (asc-devkit dav_l300 / dav_l311):
    empty blocks get 950's fill (MAX: -inf), mask 0 leaves dst undefined; all assumed."""
    ub = np.zeros(1024, np.uint8)
    ub[:256] = np.arange(128, dtype=np.float16).view(np.uint8)
    args = (ub, T(512, H, 8), T(0, H, 128), 16, 1, 1, 1, 8)
    j = np.asarray(ar.ascendc.reduce_data_block(*args, reduce_type="MAX", chip=chip))
    o = ar.oracle.reduce_data_block(*args, reduce_type="MAX", chip=chip)
    np.testing.assert_array_equal(j, o.ub)
    got = j[512:528].view(np.float16)
    assert got[0] == 15 and np.all(np.isneginf(got[1:]))
    _, info = ar.ascendc.reduce_data_block(ub, T(512, H, 8), T(0, H, 128), 0, 1, 1, 1, 8,
                                           reduce_type="MAX", chip=chip, return_info=True)
    o = ar.oracle.reduce_data_block(ub, T(512, H, 8), T(0, H, 128), 0, 1, 1, 1, 8,
                                    reduce_type="MAX", chip=chip)
    assert np.asarray(info.undefined)[512:528].all() and o.undefined[512:528].all()
    assert {"block_fill", "zero_mask", "minmax_nan"} <= set(ar.chip(chip).assumed)
