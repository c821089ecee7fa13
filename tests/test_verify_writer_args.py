"""The dump writers record a case exactly or refuse it (docs/arguments.md, "Dump writers").

``dumps_from_cases`` is a perfect device: whatever it writes, ``verify`` must agree with. A
case field forced through ``int()`` / ``bool()`` (``saturate="yes"`` as true, ``repeat=1.7``
as 1) recorded a malformed case as a different, valid one, and some values were written only
for the reader to refuse them. ``write_dumps`` checks its path, ``ub_afters``, ``errors`` and
``sprs`` before anything is written and leaves no ``.part`` file behind.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from ascend_ref.case import Case, run_jax
from ascend_ref.constraints import Code, ConstraintError
from ascend_ref.verify import dumps_from_cases, open_dump, verify, write_dump, write_dumps
from ascend_ref.verify import format as fmt

SUM_PARAMS = {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}


def _f32() -> Case:
    ub = np.zeros(1024, np.uint8)
    ub[:256] = np.random.default_rng(3).uniform(-4, 4, 64).astype(np.float32).view(np.uint8)
    return Case("whole_reduce_sum", "atlas_a2", "float32", None, 64, dict(SUM_PARAMS),
                {"src": (0, 64), "dst": (512, 8)}, ub)


def _f16(api: str = "whole_reduce_sum", option=None) -> Case:
    ub = np.zeros(1024, np.uint8)
    ub[:256] = np.random.default_rng(4).uniform(-4, 4, 128).astype(np.float16).view(np.uint8)
    return Case(api, "atlas_a2", "float16", option, 128, dict(SUM_PARAMS),
                {"src": (0, 128), "dst": (512, 16)}, ub)


def _tik(option=False) -> Case:
    ub = np.zeros(1024, np.uint8)
    ub[:256] = np.random.default_rng(5).uniform(-4, 4, 128).astype(np.float16).view(np.uint8)
    return Case("vec_reduce_min", "atlas_a2", "float16", option, 128,
                {"repeat": 1, "src_rep_stride": 8},
                {"src": (0, 128), "dst": (512, 16), "work_tensor": (544, 16)}, ub)


def _with(case: Case, **kw) -> Case:
    return dataclasses.replace(case, **kw)


def _param(case: Case, name: str, v) -> Case:
    return _with(case, params={**case.params, name: v})


def _tensor(case: Case, name: str, v) -> Case:
    return _with(case, tensors={**case.tensors, name: v})


# every one was written as another, valid case (verify: 'error ok vs BAD_ARGUMENT') or as a
# meta its own reader refuses; (case, the field named in the refusal)
MALFORMED = {
    "saturate_yes": (lambda: _with(_f16(), saturate="yes"), "saturate"),
    "saturate_2": (lambda: _with(_f16(), saturate=2), "saturate"),
    "repeat_float": (lambda: _param(_f32(), "repeat", 1.7), "params.repeat"),
    "repeat_bool": (lambda: _param(_f32(), "repeat", True), "params.repeat"),
    "repeat_past_int32": (lambda: _param(_f32(), "repeat", np.array(2**32 + 1)),
                          "params.repeat"),
    "mask_float": (lambda: _with(_f32(), mask=64.9), "mask"),
    "mask_bool": (lambda: _with(_f32(), mask=True), "mask"),
    "mask_three_words": (lambda: _with(_f16(), mask=[1, 2, 3]), "mask"),
    "mask_float_word": (lambda: _with(_f16(), mask=[1.5, 0]), "mask[0]"),
    "dst_float_addr": (lambda: _tensor(_f32(), "dst", (256.5, 16)), "tensors.dst[0]"),
    "ub_float": (lambda: _with(_f32(), ub=_f32().ub.astype(np.float32)), "ub"),
    "ub_list": (lambda: _with(_f32(), ub=list(_f32().ub)), "ub"),
    "option_on_api_without_one": (lambda: _with(_f32(), option="SUM"), "option"),
    "option_none_where_required": (lambda: _f16("whole_reduce_min", None), "option"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_dumps_from_cases_refuses_a_case_it_cannot_record(tmp_path, name):
    make, field = MALFORMED[name]
    bad = make()
    out = tmp_path / "d"
    with pytest.raises(ConstraintError) as e:       # a good case first, one file a case
        dumps_from_cases([_f32(), bad], out, per_file=1)
    assert e.value.code is Code.BAD_ARGUMENT and e.value.param == f"cases[1].{field}"
    assert not out.exists() or os.listdir(out) == []          # nothing written, no part


@pytest.mark.parametrize("stacked", [False, True])
@pytest.mark.parametrize("name", ["saturate_yes", "repeat_float", "mask_bool", "ub_list",
                                  "option_on_api_without_one"])
def test_write_dumps_refuses_a_case_it_cannot_record(tmp_path, name, stacked):
    make, field = MALFORMED[name]
    bad = make()
    p = tmp_path / "x.npz"
    with pytest.raises(ConstraintError) as e:
        write_dumps(p, [_f32(), bad], errors=[None, "BAD_ARGUMENT"],
                    ub_afters=[_f32().ub, None], stacked=stacked)
    assert e.value.code is Code.BAD_ARGUMENT and e.value.param == f"cases[1].{field}"
    assert os.listdir(tmp_path) == []


def _lane_words(case: Case, words) -> Case:
    return _with(case, mask=np.array(words, np.uint32))


@pytest.mark.parametrize("stacked", [False, True])
def test_a_lane_word_mask_is_recorded_as_its_two_words(tmp_path, stacked):
    """run_jax takes a uint32[4] array of lane words (lanes 0-31 first); the dump holds the
    same lanes as two 64-bit words in the API's order (TIK: [mask_h, mask_l])."""
    w = [0x000000FF, 0x00000001, 0x00010000, 0x80000000]
    lo, hi = w[0] | w[1] << 32, w[2] | w[3] << 32
    cases = [_lane_words(_f16(), w), _lane_words(_tik(), w),
             _lane_words(_f32(), [0xF0F0F0F0, 0, 0, 0]),
             _lane_words(_f32(), [1, 0, 1, 0])]        # lanes past 64 of a float: MASK_BITS
    codes = [run_jax(c).code for c in cases]
    assert codes == [None, None, None, Code.MASK_BITS]
    paths = dumps_from_cases(cases, tmp_path, per_file=4, stacked=stacked)
    r = verify(tmp_path, progress=False)
    assert r.ok and r.cases == r.agreed == 4 and r.device_errors == 1, r.format()
    with open_dump(paths[0]) as f:
        masks = [f.case(i).case.mask for i in range(4)]
    assert masks == [[lo, hi], [hi, lo], [0xF0F0F0F0, 0], [1, 1]]


def test_valid_spellings_are_recorded_as_the_reference_reads_them(tmp_path):
    """An option, switch or word the reference takes in another spelling (a numpy int, a
    0-d array, a short enum name) is recorded as its canonical value, and verify agrees."""
    cases = [_tik(np.int64(1)),                              # cal_index: was a TypeError
             _f16("whole_reduce_min", "value_index"),
             _with(_f16(), saturate=np.array(1)),
             _with(_f16(), mask=[np.uint64(2**64 - 1), np.array(2**63)])]
    p, = dumps_from_cases(cases, tmp_path, per_file=4)
    with np.load(p) as z:
        metas = [json.loads(str(z[f"c{i}.meta"])) for i in range(4)]
    assert [m["option"] for m in metas[:2]] == [True, "ORDER_VALUE_INDEX"]
    assert metas[2]["saturate"] is True and metas[3]["mask"] == [2**64 - 1, 2**63]
    r = verify(tmp_path, progress=False)
    assert r.ok and r.cases == 4, r.format()


@pytest.mark.parametrize("kw, name", [
    ({"errors": [0]}, r"errors\[0\] = 0"),
    ({"errors": ["OK"]}, r"errors\[0\] = 'OK'"),
    ({"errors": [Code.OK]}, r"errors\[0\]"),
    ({"sprs": [5]}, r"sprs\[0\] = 5"),
    ({"sprs": [{"before": "fresh"}]}, r"sprs\[0\] = .*expected None or an object"),
    ({"sprs": [{"after": {}, "later": {}}]}, r"sprs\[0\] = .*expected None or an object"),
    ({"sprs": [{"after": {}, "before": np.int64(1)}]}, r"sprs\[0\].*not JSON"),
    ({"errors": 5}, "errors = 5"),
    ({"ub_afters": 5}, "ub_afters = 5"),
    ({"sprs": 5}, "sprs = 5"),
    ({"errors": "MASK_RANGE"}, "errors = 'MASK_RANGE'"),
])
def test_errors_ub_afters_and_sprs_are_checked_before_writing(tmp_path, kw, name):
    kw = {"ub_afters": [_f32().ub], **kw}
    with pytest.raises(ValueError, match=name):
        write_dumps(tmp_path / "x.npz", [_f32()], **kw)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("after, why", [
    (np.full(512, 300, np.int16), "int16"),            # 1024 bytes: values were wrapped
    (np.full(1024, 300, np.int16), "int16"),           # (to 44, written silently)
    (np.zeros(1024, np.float64), "float64"),           # was truncated
    (np.zeros((32, 32), np.uint8), r"shape \(32, 32\)"),
    (np.zeros(1000, np.uint8), r"shape \(1000,\)"),
    ([300] * 1024, "int64"),
])
def test_ub_after_must_be_the_uint8_bytes_of_the_ub(tmp_path, after, why):
    with pytest.raises(ValueError, match=rf"ub_afters\[0\] = .*{why}.*1-D uint8 array of 1024"):
        write_dump(tmp_path / "x.npz", _f32(), ub_after=after)
    assert os.listdir(tmp_path) == []


def test_path_is_checked_and_no_part_file_is_left(tmp_path):
    c = _f32()
    for path in (None, 5, "", b"x.npz"):
        with pytest.raises(ValueError, match="path = "):
            write_dump(path, c, ub_after=c.ub)
    with pytest.raises(ValueError, match="is a directory"):
        write_dump(tmp_path, c, ub_after=c.ub)
    with pytest.raises(ValueError, match="does not exist"):
        write_dump(tmp_path / "no" / "x.npz", c, ub_after=c.ub)
    assert os.listdir(tmp_path) == [] and not os.path.exists(f"{tmp_path}.part")


def test_a_failed_write_leaves_no_part_file(tmp_path, monkeypatch):
    c = _f32()

    def broken(fh, arrays, compress):
        fh.write(b"PK")
        raise OSError("disk full")

    monkeypatch.setattr(fmt, "_savez", broken)
    with pytest.raises(OSError, match="disk full"):
        write_dump(tmp_path / "x.npz", c, ub_after=c.ub)
    assert os.listdir(tmp_path) == []


def test_write_dumps_records_an_integer_out_of_range_as_given(tmp_path):
    """write_dumps records what the device's call held (the reader reports a value past its
    range as that case's bad input, naming it); the stacked layout's int64 columns refuse
    one past int64 (was an OverflowError from numpy); dumps_from_cases refuses both."""
    c = _param(_f32(), "src_rep_stride", -1)
    (tmp_path / "v1").mkdir()
    write_dumps(tmp_path / "v1" / "x.npz", [_f32(), c], [_f32().ub, _f32().ub])
    r = verify(tmp_path / "v1", progress=False)
    assert r.cases == 1 and [(b.case, b.field) for b in r.bad] == [
        (1, "meta.params.src_rep_stride")]
    huge = _param(_f32(), "repeat", 2**70)
    with pytest.raises(ConstraintError) as e:
        write_dumps(tmp_path / "s.npz", [huge], [huge.ub], stacked=True)
    assert e.value.code is Code.BAD_ARGUMENT and e.value.param == "cases[0].params.repeat"
    for bad in (c, huge):
        with pytest.raises(ConstraintError, match=r"cases\[0\]\.params\."):
            dumps_from_cases([bad], tmp_path / "d")
    assert sorted(os.listdir(tmp_path)) == ["v1"]
