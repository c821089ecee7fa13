"""The reduce special registers in verify dumps (docs/verify.md §1c): round trip in both
layouts, a planted register mismatch, the ``before`` state, bad register readings, and dumps
without registers. Expected register values come from numpy (the data), not the reference."""

import json
import os

import numpy as np
import pytest

from ascend_ref.case import Case
from ascend_ref.verify import dumps_from_cases, explain, open_dump, verify, write_dumps

A2, A950, AICORE = "atlas_a2", "ascend950", "atlas_inference_aicore"
PARAMS = {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}


def _f32(v):
    return int(np.float32(v).view(np.uint32))


def max_case(chip=A2, src_rep_stride=8):
    x = np.arange(64, dtype=np.float32)
    x[17] = 99.0
    ub = np.zeros(1024, np.uint8)
    ub[:256] = x.view(np.uint8)
    return Case("whole_reduce_max", chip, "float32", "ORDER_VALUE_INDEX", 64,
                dict(PARAMS, src_rep_stride=src_rep_stride), {"src": (0, 64), "dst": (512, 2)},
                ub)


def sum_count_case(chip):
    x = np.arange(16, dtype=np.float32)                 # sum 120, exact in float
    ub = np.zeros(1024, np.uint8)
    ub[:64] = x.view(np.uint8)
    return Case("reduce_sum_count", chip, "float32", None, 64, {"repeat": 16},
                {"src": (0, 16), "dst": (256, 8), "work_tensor": (512, 64)}, ub)


def _with_spr(path, case, spr, regions=None, stacked=False):
    from ascend_ref.batch import run_cases

    out = run_cases([case])[0]
    assert out.code is None
    write_dumps(path, [case], [out.ub], sprs=[spr], regions=regions, stacked=stacked)


@pytest.mark.parametrize("stacked", [False, True])
def test_round_trip_and_verify(tmp_path, stacked):
    c = max_case()
    paths = dumps_from_cases([c, c], tmp_path, per_file=2, spr=True, stacked=stacked,
                             regions="tensors" if stacked else None)
    with open_dump(paths[0]) as f:
        d = f.case(1)
    assert d.spr.after["max_min.value"] == _f32(99.0)
    assert d.spr.after["max_min.index"] == 17
    assert d.meta["spr"]["before"] == "fresh"
    r = verify(tmp_path, progress=False)
    assert r.ok and r.agreed == 2 and r.spr_cases == 2
    # A2 reads both sum slots; nothing wrote them and spr_unwritten is undefined: skipped
    assert r.undefined_registers == 4 and r.cases_with_undefined_registers == 2
    assert "undefined register readings skipped: 4" in r.format()


@pytest.mark.parametrize("stacked", [False, True])
def test_planted_register_mismatch(tmp_path, stacked):
    p = os.path.join(tmp_path, "bad.npz")
    _with_spr(p, max_case(), {"before": "fresh",
                              "after": {"max_min": {"dtype": "float", "value": _f32(99.0),
                                                    "index": 16}}}, stacked=stacked)
    r = verify(tmp_path, progress=False)
    assert not r.ok and r.mismatched == 1 and list(r.groups) == ["spr max_min.index"]
    text, sig = explain(p, 0)
    assert sig == "spr max_min.index" and "max_min.index  reference 0x11" in text


def test_non_contiguous_register_is_skipped(tmp_path):
    p = os.path.join(tmp_path, "nc.npz")            # srcRepStride 16: the register undefined
    _with_spr(p, max_case(src_rep_stride=16),
              {"after": {"max_min": {"dtype": "float", "value": 1, "index": 2}}})
    r = verify(tmp_path, progress=False)
    assert r.ok and r.undefined_registers == 2


@pytest.mark.parametrize("chip,half_kept", [(A2, False), (A950, True)])
def test_before_state_and_the_other_sum_slot(tmp_path, chip, half_kept):
    """A float count-form ReduceSum after a half one: A2 (one register) leaves the half
    reading undefined, 950 (one global per type) keeps it (spr_sum_other_type)."""
    for k, half in enumerate((0x3C00, 0x3C01)):
        _with_spr(os.path.join(tmp_path, f"s{k}.npz"), sum_count_case(chip),
                  {"before": {"sum": {"half": 0x3C00}},
                   "after": {"sum": {"half": half, "float": _f32(120.0)}}})
    r = verify(tmp_path, progress=False)
    assert r.spr_cases == 2
    assert r.mismatched == (1 if half_kept else 0)
    assert r.undefined_registers == (0 if half_kept else 2)


def test_unknown_before_skips_what_the_call_does_not_write(tmp_path):
    _with_spr(os.path.join(tmp_path, "u.npz"), sum_count_case(A2),
              {"after": {"sum": {"float": _f32(120.0)},
                         "max_min": {"dtype": "float", "value": 5, "index": 5}}})
    r = verify(tmp_path, progress=False)
    assert r.ok and r.undefined_registers == 2


@pytest.mark.parametrize("chip,after,field", [
    (AICORE, {"sum": {"float": 1}}, "meta.spr.after.sum"),
    (AICORE, {"max_min": {"dtype": "float", "value": 1, "index": 0}}, "meta.spr.after.max_min.index"),
    (A2, {"max_min": {"value": 1}}, "meta.spr.after.max_min.dtype"),
    (A2, {"sum": {"int32": 1}}, "meta.spr.after.sum.int32"),
    (A2, {"acc": 1}, "meta.spr.after.acc"),
])
def test_bad_register_readings_are_bad_input(tmp_path, chip, after, field):
    p = os.path.join(tmp_path, "b.npz")
    _with_spr(p, max_case(chip), {"after": after})
    r = verify(tmp_path, progress=False)
    assert not r.ok and len(r.bad) == 1 and r.bad[0].field == field, r.bad


def test_dumps_without_registers_are_unchanged(tmp_path):
    dumps_from_cases([max_case()], tmp_path)
    with open_dump(os.path.join(tmp_path, "dump_000000.npz")) as f:
        d = f.case(0)
        assert d.spr is None and "spr" not in json.loads(str(f._get("c0.meta")))
    r = verify(tmp_path, progress=False)
    assert r.ok and r.spr_cases == 0 and "register" not in r.format()


# ------------------------------------------------------------------ the audit -------------

def two_repeat_max(chip=A2):
    """The max in repeat 1, lane 5: flat index 69 (spr_maxmin_index "flat") or 5 ("lane")."""
    x = np.arange(128, dtype=np.float32) % 50
    x[64 + 5] = 99.0
    ub = np.zeros(1024, np.uint8)
    ub[:512] = x.view(np.uint8)
    return Case("whole_reduce_max", chip, "float32", "ORDER_VALUE_INDEX", 64,
                dict(PARAMS, repeat=2), {"src": (0, 128), "dst": (512, 4)}, ub)


def _audit_row(report, chip, name):
    return next(r for r in report.audit.sorted_rows() if (r.chip, r.assumption) == (chip, name))


@pytest.mark.parametrize("index,verdict", [(69, "confirmed"), (5, "REFUTED")])
def test_audit_settles_spr_maxmin_index(tmp_path, index, verdict):
    _with_spr(os.path.join(tmp_path, "a.npz"), two_repeat_max(),
              {"before": "fresh", "after": {"sum": {"half": 0},
                                            "max_min": {"dtype": "float", "value": _f32(99.0),
                                                        "index": index}}})
    r = verify(tmp_path, progress=False, audit=True)
    row = _audit_row(r, A2, "spr_maxmin_index")
    assert row.exercised == 1 and row.verdict.startswith(verdict)
    if index == 5:
        assert row.alternative == 1 and row.observed == {"max_min.index 0x5": 1}
    # the unwritten sum register: observed, the device read zero bits (spr_unwritten "zero")
    obs = _audit_row(r, A2, "spr_unwritten")
    assert obs.kind == "observe" and obs.observed == {"as spr_unwritten = 'zero'": 1}


def test_audit_spr_sum_other_type_on_950(tmp_path):
    """950 assumes "kept": a device that keeps the half reading agrees; one that does not
    matches neither choice's defined bits."""
    for k, half in enumerate((0x3C00, 0x1234)):
        _with_spr(os.path.join(tmp_path, f"s{k}.npz"), sum_count_case(A950),
                  {"before": {"sum": {"half": 0x3C00}},
                   "after": {"sum": {"half": half, "float": _f32(120.0)}}})
    r = verify(tmp_path, progress=False, audit=True)
    row = _audit_row(r, A950, "spr_sum_other_type")
    assert (row.exercised, row.agreed, row.other) == (2, 1, 1)


def test_golden_dumps_record_the_registers(tmp_path):
    """A kernel that reads the max/min register: its dump records it, equal to the oracle's
    own register model on the same call."""
    from ascend_ref.case import run_oracle
    from ascend_ref.golden import generate

    g = generate("whole_reduce_max_spr_float", tmp_path, dumps=True)
    p = next(f for f in g.files if f.endswith(".npz"))
    with open_dump(p) as f:
        d = f.case(0)
    dtype, value, index = run_oracle(d.case, spr=True).spr.maxmin
    assert (dtype, d.spr.after["max_min.value"], d.spr.after["max_min.index"]) == \
        ("float32", value, index)
    r = verify(p, progress=False)
    assert r.ok and r.spr_cases == 1
