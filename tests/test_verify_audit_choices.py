"""Issue 12 finding 10: every open choice of docs/SEMANTICS.md §J is a named assumption that
``verify --audit`` confirms from dumps that agree with the reference and refutes from dumps
that disagree on the bytes the choice decides."""

import numpy as np
import pytest

from ascend_ref.batch import run_cases
from ascend_ref.case import Case
from ascend_ref.constraints import Code
from ascend_ref.verify import verify, write_dump

UB = 1 << 15


def case(api, chip, dtype, option, mask, repeat, values, *, rs=8, drs=1, src=0, dst=16384,
         work=20480, work_n=None):
    s = np.dtype(dtype).itemsize
    ub = np.zeros(UB, np.uint8)
    v = np.asarray(values, dtype).view(np.uint8)
    ub[src:src + v.size] = v
    n_src = max(v.size // s, 1)
    if api.startswith("vec_"):
        return Case(api, chip, dtype, option, mask, {"repeat": repeat, "src_rep_stride": rs},
                    {"src": (src, n_src), "dst": (dst, 32 // s),
                     "work_tensor": (work, work_n or 4096 // s)}, ub)
    return Case(api, chip, dtype, option, mask,
                {"repeat": repeat, "dst_rep_stride": drs, "src_blk_stride": 1,
                 "src_rep_stride": rs}, {"src": (src, n_src), "dst": (dst, 1024 // s)}, ub)


def rng_half(n, seed=0):
    return np.random.default_rng(seed).uniform(-4, 4, n).astype(np.float16)


def nan_pair():
    x = rng_half(128)
    x[2] = np.frombuffer(np.uint16(0x7E01).tobytes(), np.float16)[0]
    x[9] = np.frombuffer(np.uint16(0xFE07).tobytes(), np.float16)[0]
    return x


def min_at(n, i, v=-9.0, seed=1):
    x = rng_half(n, seed)
    x[i] = v
    return x


#: assumption -> (case, byte offset inside dst to corrupt for the disagreeing dump)
CHOICES = {
    "dst_rep_stride_zero_last_wins":
        (case("whole_reduce_sum", "atlas_a2", "float16", None, 128, 3, rng_half(384), drs=0), 0),
    "partial_overlap_in_repeat":
        (case("whole_reduce_sum", "atlas_a2", "float16", None, 128, 1, rng_half(128), dst=0), 0),
    "overlap_reads_first":
        (case("vec_reduce_min", "atlas_a2", "float16", True, 128, 2, min_at(256, 200),
              dst=64), 0),
    "tik_index_formula":
        (case("vec_reduce_min", "atlas_a2", "float16", True, 128, 2, min_at(512, 256 + 7),
              rs=16), 2),
    "add_chunking":
        (case("vec_reduce_add", "atlas_inference_aicore", "float16", None, 128, 130,
              rng_half(128), rs=0), 0),
    "add_order_group_combine":
        (case("vec_reduce_add", "atlas_a2", "float16", None, 128, 300, rng_half(128), rs=0), 0),
    "add_order_odd_even":
        (case("vec_reduce_add", "atlas_200i_500_a2", "float16", None, 128, 3, rng_half(384)), 0),
    "nan_add_operand":
        (case("whole_reduce_sum", "atlas_a2", "float16", None, 128, 1, nan_pair()), 0),
    "minmax_nan":
        (case("whole_reduce_max", "ascend950", "float16", "ORDER_VALUE_INDEX", 128, 1,
              nan_pair()), 0),
}


def _rows(report):
    return {(r.chip, r.assumption): r for r in report.audit.sorted_rows()}


@pytest.fixture(scope="module")
def outs():
    cs = [c for c, _ in CHOICES.values()]
    o = run_cases(cs)
    assert all(x.code is None for x in o), [x.code for x in o]
    return o


def test_dumps_that_agree_confirm_each_choice(tmp_path, outs):
    for i, (name, (c, _)) in enumerate(CHOICES.items()):
        write_dump(tmp_path / f"{i}.npz", c, ub_after=outs[i].ub)
    r = verify(tmp_path, audit=True, progress=False)
    assert r.ok
    got = _rows(r)
    for name, (c, _) in CHOICES.items():
        row = got[(c.chip, name)]
        assert row.exercised >= 1 and row.verdict == "confirmed", (name, row)


def test_dumps_that_disagree_refute_each_choice(tmp_path, outs):
    for i, (name, (c, off)) in enumerate(CHOICES.items()):
        after = outs[i].ub.copy()
        a = c.tensors["dst"][0] + off
        after[a] ^= 0x01                     # the decided byte differs on the "device"
        write_dump(tmp_path / f"{i}.npz", c, ub_after=after)
    r = verify(tmp_path, audit=True, progress=False)
    assert not r.ok
    got = _rows(r)
    for name, (c, _) in CHOICES.items():
        row = got[(c.chip, name)]
        assert row.verdict.startswith("REFUTED"), (name, row)
    assert "REFUTED" in r.format()


def test_error_choices_tik_align_and_index_overflow(tmp_path):
    """tik_align: work_tensor at a 16-byte address is ALIGN by the general rule; a device that
    rejects it confirms, one that runs it refutes. index_overflow_limit likewise."""
    x = min_at(256, 100)
    mis = case("vec_reduce_min", "atlas_a2", "float16", False, 128, 2, x, work=20496)
    big = np.ones(65536 + 128, np.float16)
    big[65536 + 5] = -1
    ub_len = UB
    ovf = case("vec_reduce_min", "atlas_a2", "float16", True, 128, 2, big[:0], rs=4096)
    ovf.ub = np.zeros(140000, np.uint8)
    ovf.ub[:big.nbytes] = big.view(np.uint8)
    ovf.tensors = {"src": (0, big.size), "dst": (132000 // 32 * 32, 16),
                   "work_tensor": (132160, 64)}
    o = run_cases([mis, ovf])
    assert [x.code for x in o] == [Code.ALIGN, Code.INDEX_OVERFLOW]
    d1 = tmp_path / "agree"
    d1.mkdir()
    write_dump(d1 / "a.npz", mis, error=Code.ALIGN)
    write_dump(d1 / "b.npz", ovf, error=Code.INDEX_OVERFLOW)
    got = _rows(verify(d1, audit=True, progress=False))
    assert got[("atlas_a2", "tik_align")].verdict == "confirmed"
    assert got[("atlas_a2", "index_overflow_limit")].verdict == "confirmed"
    d2 = tmp_path / "disagree"
    d2.mkdir()
    write_dump(d2 / "a.npz", mis, ub_after=mis.ub)
    write_dump(d2 / "b.npz", ovf, ub_after=ovf.ub)
    got = _rows(verify(d2, audit=True, progress=False))
    assert got[("atlas_a2", "tik_align")].verdict.startswith("REFUTED")
    assert got[("atlas_a2", "index_overflow_limit")].verdict.startswith("REFUTED")
    assert ub_len == UB


def test_observed_work_contents_and_kirin_fill(tmp_path):
    """Undefined bytes are observed, not checked: vec_reduce_add's work[0] (finding 6);
    Kirin's 950-like block fill is a checked assumption (finding 8)."""
    add = case("vec_reduce_add", "atlas_training", "float16", None, 128, 2, rng_half(256))
    kf = case("reduce_data_block", "kirin_x90", "float16", "MAX", 16, 1, rng_half(128))
    o = run_cases([add, kf])
    after = o[0].ub.copy()
    w = add.tensors["work_tensor"][0]
    after[w:w + 2] = o[0].ub[16384:16386]             # the device: the final sum in work[0]
    write_dump(tmp_path / "a.npz", add, ub_after=after)
    write_dump(tmp_path / "k.npz", kf, ub_after=o[1].ub)
    r = verify(tmp_path, audit=True, progress=False)
    assert r.ok                                       # undefined bytes are not compared
    got = _rows(r)
    row = got[("atlas_training", "tik_add_work_contents (undefined)")]
    assert row.verdict == "observed" and len(row.observed) == 1
    assert got[("kirin_x90", "block_fill")].verdict == "confirmed"
