"""``verify --audit``: every assumed profile field is exercised, confirmed, or refuted."""

import copy
import dataclasses

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref.batch import run_cases
from ascend_ref.case import Case
from ascend_ref.cli import main as cli_main
from ascend_ref.verify import dumps_from_cases, verify, write_dump

from test_verify import mk

KIRIN_UB = ar.chip("kirin_x90").ub_bytes


def minmax_case():
    """WholeReduceMin<half> VALUE_INDEX, 4 repeats: NaN in r0, ±0 at the extreme in r1, a tie
    in r2, nothing special in r3."""
    x = np.random.default_rng(9).uniform(1, 4, 512).astype(np.float16)
    x[3] = np.nan
    x[128:256] = 0.0
    x[128 + 5] = -0.0
    x[256 + 7] = x[256 + 90] = -3.0
    return mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 4, x)


def saturating_case():
    y = np.full(1024, 40000, np.float16)          # pairs overflow half
    return mk("whole_reduce_sum", "float16", None, 128, 2, y)


def default_nan_case():
    y = np.ones(1024, np.float16)
    y[0], y[1] = np.inf, -np.inf                  # inf - inf -> the default NaN
    return mk("whole_reduce_sum", "float16", None, 128, 1, y, sat=False)


def subnormal_case():
    z = np.zeros(512, np.float32)
    z[:64] = np.float32(3e-39)
    z[1] = np.float32(-1.1e-38)
    return mk("whole_reduce_sum", "float32", None, 64, 1, z)


@pytest.fixture(scope="module")
def a2_cases():
    cases = [minmax_case(), saturating_case(), default_nan_case(), subnormal_case()]
    return cases, run_cases(cases)


def rows(report):
    return {(r.chip, r.assumption): r for r in report.audit.sorted_rows()}


def test_device_agreeing_confirms_every_exercised_assumption(tmp_path, a2_cases):
    cases, outs = a2_cases
    dumps_from_cases(cases, tmp_path, outcomes=outs)
    r = verify(tmp_path, audit=True, progress=False)
    assert r.ok
    got = rows(r)
    for name in ("minmax_rules (nan)", "minmax_rules (signed zero)", "minmax_rules (ties)",
                 "saturate_default", "default_nan_f16", "fp32_ftz"):
        row = got[("atlas_a2", name)]
        assert row.exercised >= 1 and row.disagreed == 0 and row.verdict == "confirmed", name
    assert got[("atlas_a2", "default_nan_f32")].verdict == "not exercised"
    # the minmax case exercises each rule exactly once (one repeat each)
    assert got[("atlas_a2", "minmax_rules (ties)")].exercised == 1
    text = r.format()
    assert "assumption audit" in text and "confirmed" in text
    # every row's counts in their columns (a long name pushed them right), every row
    # described in the JSON (counter_max_repeat and eight others had no "what")
    table = text.splitlines()[1:]
    table = [t for t in table if t.startswith("  atlas_a2") or t.startswith("  product")]
    assert len(table) > 20 and any("tik_add_work_contents (undefined)" in t for t in table)
    assert len({t.index(" verdict") if "verdict" in t else
                max(t.index(v) for v in ("not exercised", "confirmed", "observed", "REFUTED")
                    if v in t) - 1 for t in table}) == 1
    assert all(row["what"] for row in r.audit.to_json()), \
        [row["assumption"] for row in r.audit.to_json() if not row["what"]]


def _alt_profile(case, **changes):
    prof = ar.chip(case.chip)
    c = copy.copy(case)
    c.chip = dataclasses.replace(prof, id=prof.id + "~test", **changes)
    return c


def test_device_following_the_alternative_refutes(tmp_path, a2_cases):
    cases, outs = a2_cases
    mm, sat, dn, sub = cases
    # saturation: the device saturates by default
    s_alt = copy.copy(sat)
    s_alt.saturate = True
    # default NaN: the device produces the positive quiet NaN
    d_alt = _alt_profile(dn, default_nan_f16=0x7E00)
    # fp32: the device flushes subnormals
    f_alt = _alt_profile(sub, fp32_ftz=True)
    alt_outs = run_cases([s_alt, d_alt, f_alt])
    # min/max: the device ignores NaN in repeat 0 (writes the smallest number instead)
    mm_after = outs[0].ub.copy()
    x = mm.ub[:256].view(np.float16)
    v = np.nanmin(x)
    mm_after[2048:2052] = np.array([v, np.float16(0)], np.float16).view(np.uint8)
    mm_after[2050:2052] = np.array([int(np.nanargmin(x))], np.uint16).view(np.uint8)
    for i, (c, after) in enumerate([(mm, mm_after), (sat, alt_outs[0].ub),
                                    (dn, alt_outs[1].ub), (sub, alt_outs[2].ub)]):
        write_dump(tmp_path / f"d{i}.npz", c, ub_after=after)
    r = verify(tmp_path, audit=True, progress=False)
    assert not r.ok and r.mismatched == 4
    got = rows(r)
    assert got[("atlas_a2", "saturate_default")].alternative == 1
    assert got[("atlas_a2", "default_nan_f16")].alternative == 1
    assert "0x7e00" in " ".join(got[("atlas_a2", "default_nan_f16")].observed)
    assert got[("atlas_a2", "fp32_ftz")].alternative == 1
    nan_row = got[("atlas_a2", "minmax_rules (nan)")]
    assert nan_row.other == 1 and nan_row.verdict.startswith("REFUTED")
    # the other min/max rules were exercised by the same case and the device agreed there
    assert got[("atlas_a2", "minmax_rules (ties)")].verdict == "confirmed"
    text = r.format()
    assert "REFUTED" in text and "device follows the alternative in 1" in text
    assert "repro: ascend-ref verify" in text


def kirin(api, option, mask, repeat, values, *, at=0, dtype="float16"):
    """A kirin_x90 call in a full-size UB, src at ``at`` (dst 2 KiB above it)."""
    s = np.dtype(dtype).itemsize
    ub = np.zeros(KIRIN_UB, np.uint8)
    v = np.asarray(values, dtype).view(np.uint8)
    ub[at:at + v.size] = v
    ub[at + 2048:at + 3072] = 0x11                   # dst before: not zero
    return Case(api, "kirin_x90", dtype, option, mask,
                {"repeat": repeat, "dst_rep_stride": 1, "src_blk_stride": 1,
                 "src_rep_stride": 8}, {"src": (at, 2048 // s), "dst": (at + 2048, 1024 // s)},
                ub)


def test_kirin_ub_size_zero_repeat_and_block_fill(tmp_path, capsys):
    x = np.random.default_rng(3).uniform(-2, 2, 1024)
    top = KIRIN_UB - 4096                            # above every smaller documented UB
    cases = [kirin("whole_reduce_sum", None, 128, 2, x, at=top),
             kirin("whole_reduce_sum", None, 128, 0, x),
             kirin("reduce_data_block", "SUM", 16, 2, x)]   # blocks 1..7 have no active lane
    outs = run_cases(cases)
    assert all(o.code is None for o in outs)
    after = outs[2].ub.copy()                        # the device fills empty blocks as 950
    dumps_from_cases(cases[:2], tmp_path, outcomes=outs[:2])
    write_dump(tmp_path / "fill.npz", cases[2], ub_after=after)
    r = verify(tmp_path, audit=True, progress=False)
    assert r.ok and r.undefined_bytes > 0            # repeat 0: dst undefined (950-like)
    got = rows(r)
    assert got[("kirin_x90", "ub_bytes")].verdict == "confirmed"
    zr = got[("kirin_x90", "zero_repeat (undefined)")]
    assert zr.verdict == "observed" and list(zr.observed) == ["dst kept"]
    assert got[("kirin_x90", "block_fill")].verdict == "confirmed"   # issue 12 finding 8
    # a device with a larger UB than assumed: a call beyond it ran
    big = kirin("whole_reduce_sum", None, 128, 1, x, at=top)
    ub = np.zeros(KIRIN_UB + 8192, np.uint8)
    ub[:KIRIN_UB] = big.ub
    big.ub = ub
    big.tensors = {"src": (KIRIN_UB, 1024), "dst": (KIRIN_UB + 2048, 512)}
    after = ub.copy()
    after[KIRIN_UB + 2048:KIRIN_UB + 2050] = np.array([1.0], np.float16).view(np.uint8)
    write_dump(tmp_path / "big.npz", big, ub_after=after)
    rc = cli_main(["verify", str(tmp_path), "--audit", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "error UB_BOUNDS vs ok" in out
    assert "ub_bytes" in out and "REFUTED (1 of 2)" in out


def test_counter_mode_repeat_parameter_is_not_a_zero_repeat(tmp_path):
    """A counter-mode call ignores repeat_time (SEMANTICS §Q): a dump with repeat 0 and a count
    of 128 is a one-repeat call, not a zero-repeat one; a count of 0 is a zero mask."""
    x = np.random.default_rng(5).uniform(-2, 2, 1024)
    ran = kirin("whole_reduce_sum", None, ar.CounterMask(128), 0, x)
    empty = kirin("whole_reduce_sum", None, ar.CounterMask(0), 1, x)
    outs = run_cases([ran, empty])
    assert [o.code for o in outs] == [None, None]
    assert outs[0].written.any()                     # the count ran one repeat
    dumps_from_cases([ran, empty], tmp_path, outcomes=outs)
    got = rows(verify(tmp_path, audit=True, progress=False))
    for name in ("zero_repeat (undefined)", "zero_repeat"):
        row = got.get(("kirin_x90", name))
        assert row is None or row.exercised == 0, row
    zm = got[("kirin_x90", "zero_mask (undefined)")]
    assert zm.exercised == 1 and list(zm.observed) == ["dst kept"]
