"""Campaign values and fuzz arguments are validated (exit 2, file and key named, no
traceback); replay snippets never load a file that was not written (issue 13 F2, F3)."""

import textwrap

import numpy as np
import pytest

from ascend_ref.case import Case
from ascend_ref.cli import main as cli_main
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.replay import python_snippet

BASE = """
[campaign]
name = "v"
apis = ["whole_reduce_sum"]
products = ["atlas_a2"]
{extra}
"""


def _load(tmp_path, extra):
    p = tmp_path / "c.toml"
    text = BASE.format(extra=extra)
    if extra.startswith("name = "):                  # the campaign's own name, replaced
        text = BASE.format(extra="").replace('name = "v"', extra)
    p.write_text(textwrap.dedent(text))
    return p, (lambda: Campaign.load(p))


@pytest.mark.parametrize("line, key", [
    ("cases = -5", "cases"), ('cases = "many"', "cases"), ("cases = 1.5", "cases"),
    ("static_configs = -3", "static_configs"), ("seed = 1.5", "seed"), ("seed = -1", "seed"),
    ("chunk = 0", "chunk"), ("chunk = true", "chunk"), ("cost_balance = -1.0", "cost_balance"),
    ('invalid_rate = "x"', "invalid_rate"), ("invalid_rate = 2.0", "invalid_rate"),
    ('name = 3', "name"),
    ("[shrink]\nbudget_s = -1", "budget_s"), ('[shrink]\nmax_evaluations = 0', "max_evaluations"),
    ('[shrink]\nenabled = "yes"', "enabled"), ("[compare]\ntimeout_s = 0", "timeout_s"),
])
def test_bad_campaign_values_name_file_and_key(tmp_path, capsys, line, key):
    p, load = _load(tmp_path, line)
    with pytest.raises(ValueError) as e:
        load()
    # "<file>: [table] key = value: must be ..." (the key after the path: the tmp path holds
    # the test's name, and so "name")
    msg = str(e.value)
    assert msg.startswith(f"{p}: [") and f"] {key} = " in msg, msg
    assert cli_main(["fuzz", str(p), "--db", str(tmp_path / "r.sqlite"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"] {key} = " in err and "Traceback" not in err, err
    assert not (tmp_path / "r.sqlite").exists()


def test_good_values_still_load(tmp_path):
    p, load = _load(tmp_path, "cases = 0\nseed = 7\nchunk = 1\nstatic_configs = 0\n"
                              "[shrink]\nbudget_s = inf\nmax_evaluations = 5")
    c = load()
    assert (c.cases, c.seed, c.chunk, c.static_configs) == (0, 7, 1, 0)
    assert c.shrink.budget_s == float("inf") and c.shrink.max_evaluations == 5


@pytest.mark.parametrize("args", [["--cases", "-1"], ["--cases", "x"], ["--seed", "-3"],
                                  ["--workers", "-1"], ["--shrink-budget", "-2"]])
def test_bad_cli_values_exit_2(tmp_path, capsys, args):
    with pytest.raises(SystemExit) as e:
        cli_main(["fuzz", "tie_rule", "--db", str(tmp_path / "r.sqlite"), *args])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {args[0]}:" in err and "Traceback" not in err, err   # not its usage line


@pytest.mark.parametrize("args, text", [
    # each flag was ignored in that mode: --original / --save even ran the whole campaign
    (["--original"], "--original is for --replay, not a run"),
    (["--save", "x.npz"], "--save is for --replay, not a run"),
    (["--detail"], "--detail is for --report, not a run"),
    (["--report", "--fresh"], "--fresh is for a run, not --report"),
    (["--replay", "3", "--seed", "5"], "--seed is for a run or --report, not --replay"),
    (["--list", "--seed", "1"], "--seed is for a run or --report, not --list"),
    (["--replay", "3", "--fresh"], "--fresh is for a run, not --replay"),
    (["--list", "--report"], "--list and --report cannot go together"),
])
def test_a_flag_of_another_mode_exits_2(tmp_path, capsys, args, text):
    db = tmp_path / "r.sqlite"
    assert cli_main(["fuzz", "tie_rule", "--db", str(db), "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err
    assert not db.exists()                       # refused before anything was opened


def test_flags_of_the_mode_still_work(tmp_path, capsys):
    db = str(tmp_path / "r.sqlite")
    assert cli_main(["fuzz", "tie_rule", "--db", db, "--quiet", "--cases", "3",
                     "--no-shrink", "--workers", "0"]) == 0
    assert cli_main(["fuzz", "tie_rule", "--db", db, "--report", "--detail",
                     "--cases", "3", "--no-shrink"]) == 0      # a tuning flag is harmless
    assert "tie_rule" in capsys.readouterr().out


@pytest.mark.parametrize("ref, what", [("abc", "integer case id"), ("nosuch:3", "no campaign"),
                                       ("x:-1", ">= 0")])
def test_bad_replay_reference_exits_2(tmp_path, capsys, ref, what):
    assert cli_main(["fuzz", "--db", str(tmp_path / "r.sqlite"), "--replay", ref]) == 2
    err = capsys.readouterr().err
    assert what in err and "Traceback" not in err


def _many_nonzero_case():
    ub = np.zeros(1024, np.uint8)
    ub[:256] = np.arange(1, 65, dtype=np.float32).view(np.uint8)
    ub[600:] = 7                                     # more than 64 non-zero words
    return Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
                {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"src": (0, 64), "dst": (512, 8)}, ub)


def test_replay_snippet_loads_only_a_saved_file(tmp_path):
    from ascend_ref.fuzz import exchange

    case = _many_nonzero_case()
    text = "\n".join(python_snippet(case))
    assert "repro.npz" not in text and "--save FILE.npz" in text
    saved = tmp_path / "case.npz"
    exchange.save_case(case, saved)
    lines = python_snippet(case, str(saved))
    ns = {}
    exec("\n".join(lines), ns)                       # the snippet runs as printed
    import ascend_ref as ar

    want = ar.oracle.whole_reduce_sum(case.ub, ar.Tensor(512, "float32", 8),
                                      ar.Tensor(0, "float32", 64), 64, 1, 1, 1, 8,
                                      chip="atlas_a2")
    assert np.array_equal(np.asarray(ns["ub"]), np.asarray(want.ub))   # the saved UB was used


def test_replay_snippet_of_a_counter_mask_case_runs_as_printed():
    """The snippet names the counter mask as ``ar.CounterMask(n)`` (a bare ``CounterMask``
    was a NameError after the snippet's ``import ... ascend_ref as ar``)."""
    import ascend_ref as ar

    ub = np.zeros(1024, np.uint8)
    x = np.zeros(128, np.float32)
    x[[0, 63, 64, 99, 100]] = [1, 2, 4, 8, 16]          # lane 100 is past the count
    ub[:512] = x.view(np.uint8)
    case = Case("whole_reduce_sum", "atlas_a2", "float32", None, ar.CounterMask(100),
                {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"src": (0, 128), "dst": (512, 8)}, ub)
    lines = python_snippet(case)
    assert any("ar.CounterMask(100)" in line for line in lines), lines
    ns = {}
    exec("\n".join(lines), ns)
    # counter mode, 64 float lanes a repeat: repeat 0 adds elements 0-63, repeat 1 64-99
    got = np.asarray(ns["ub"])[512:520].view(np.float32)
    assert got.tolist() == [3, 12], got


def test_coverage_table_never_cuts_a_name():
    from ascend_ref.fuzz.coverage import GROUPS, table

    g = GROUPS[0]
    names = [f"src_rep_stride_regime_{k}" for k in range(12)]
    for hits, mdl in (({g: {n: 3 for n in names}}, {}),              # values with hits
                      ({g: {}}, {g: names})):                           # missing values
        line = table(hits, mdl, width=100).splitlines()[1]
        body = line[38:]                                  # after the fixed-width head
        assert "(+" in body and "more)" in body and len(line) <= 100
        for tok in body.replace("MISSING ", "").replace(",", " ").split():
            tok = tok.split("(")[0]
            assert tok in names or tok in ("...", "") or tok.startswith("(+") or \
                tok == "more)", tok
        full = table(hits, mdl, width=100, detail=True)
        assert all(n in full for n in names)


def test_campaign_path_that_is_a_directory_or_binary(tmp_path, capsys):
    d = tmp_path / "camp.toml"
    d.mkdir()
    b = tmp_path / "bin.toml"
    b.write_bytes(b"\xff\xfe\x00garbage")
    for p in (d, b):
        assert cli_main(["fuzz", str(p), "--db", str(tmp_path / "r.sqlite")]) == 2
        err = capsys.readouterr().err
        assert str(p) in err and "Traceback" not in err


@pytest.mark.parametrize("kw, text", [
    (dict(chunk=0), "chunk = 0"),                 # looped for ever
    (dict(cases=-1), "cases = -1"),               # ran nothing without a word
    (dict(apis=["nope"]), "apis: unknown ['nope']"),   # a ValueError from numpy's choice
    (dict(apis=[]), "no API / product / dtype combination"),
    (dict(products=["nope"]), "products: unknown"),
    (dict(workers=-1), "workers = -1"),
    (dict(ub_bytes=7), "ub_bytes = 7"),
    (dict(cases="x"), "cases = 'x'"),
])
def test_a_campaign_made_in_python_is_checked_as_its_file_would_be(tmp_path, kw, text):
    from ascend_ref.fuzz import run_campaign

    db = tmp_path / "r.sqlite"
    with pytest.raises(ValueError, match="campaign 't'") as e:
        run_campaign(Campaign(name="t", **kw), str(db), quiet=True)
    assert text in str(e.value)
    assert not db.exists()
    with pytest.raises(ValueError, match="expected a Campaign"):
        run_campaign(None, str(db))


def test_python_campaign_and_replay_references_are_checked(tmp_path):
    """Campaign.load(3) was a TypeError from Path(); replay(None, ...) an AttributeError
    (no rpartition), replay(ref, None) a TypeError."""
    from ascend_ref.fuzz.replay import replay

    with pytest.raises(ValueError, match="campaign 3: expected a name"):
        Campaign.load(3)
    with pytest.raises(ValueError, match="replay: ref = None"):
        replay(None, str(tmp_path / "r.sqlite"))
    with pytest.raises(ValueError, match="replay: db = None"):
        replay("tie_rule:1", None)
    assert not (tmp_path / "r.sqlite").exists()


def test_no_default_campaign_is_named_default(tmp_path, monkeypatch):
    """$ASCEND_REF_CONFIGS with chips/ only: the default campaign's error said "no campaign
    None"."""
    from ascend_ref.fuzz.campaign import Campaign

    (tmp_path / "chips").mkdir()
    monkeypatch.setenv("ASCEND_REF_CONFIGS", str(tmp_path))
    with pytest.raises(FileNotFoundError) as e:
        Campaign.load()
    assert str(e.value).startswith("no campaign default: ") and str(tmp_path) in str(e.value)
