"""Fuzz campaigns: TOML loading, deterministic replay, coverage model, SQLite store,
shrinking, the exchange format and a small end-to-end campaign through the CLI."""

import io
import json
import sqlite3
import textwrap

import numpy as np
import pytest

from ascend_ref.case import Case, Outcome
from ascend_ref.cli import main as cli_main
from ascend_ref.fuzz import comparators, coverage, exchange
from ascend_ref.fuzz.campaign import Campaign, campaigns_dir
from ascend_ref.fuzz.generate import (Distributions, RngDraw, draw_campaign_case, draw_case,
                                      repeat_buckets, template_universe)
from ascend_ref.fuzz.shrink import relayout, shrink
from ascend_ref.fuzz.store import Store

SMALL = """
[campaign]
name = "small"
seed = 5
cases = 60
apis = ["whole_reduce_sum", "whole_reduce_max"]
products = ["atlas_a2"]
dtypes = ["float16"]
static_configs = 3
chunk = 25
invalid_rate = 0.2
workers = 0

[distributions.repeat]
one = 1
small = 1
"""


def write(tmp_path, text, name="c.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


# ---------------------------------------------------------------------- campaign files -----

@pytest.mark.parametrize("name", ["default", "a2_vs_950", "device", "tie_rule"])
def test_shipped_campaigns_load(name):
    c = Campaign.load(name)
    assert c.name == name and c.cases > 0 and c.pool()
    assert (campaigns_dir() / f"{name}.toml").exists()


def test_default_campaign_covers_every_api_and_product():
    c = Campaign.load("default")
    assert c.compare.kind == "oracle"
    facets = set().union(*(t.facets() for t in c.pool()))
    import ascend_ref as ar
    from ascend_ref.chips import API_NAMES

    assert {("api", a) for a in API_NAMES} <= facets
    products = {f[2] for f in facets if f[0] == "product"}
    assert products == set(ar.chips())
    # every (API, product / dtype / option / mask mode / repeat class) facet of the universe
    universe = set().union(*(t.facets() for t, _ in c.universe()))
    assert universe <= facets


@pytest.mark.parametrize("bad, msg", [
    ('[campaign]\nname="x"\nfoo=1', "unknown [campaign] key"),
    ('[campaign]\nname="x"\napis=["nope"]', "unknown ['nope']"),
    ('[campaign]\nname="x"\n[distributions.stride]\nwobbly=1', "unknown value 'wobbly'"),
    ('[campaign]\nname="x"\n[distributions.nope]\na=1', "unknown distribution table"),
    ('[campaign]\nname="x"\n[compare]\nkind="magic"', "kind = 'magic'"),
    ('[campaign]\nname="x"\n[compare]\nkind="product"\nproduct="x"', "product = 'x'"),
    ('[campaign]\nname="x"\ninvalid_rate=2', "invalid_rate"),
    ('[campaign]\nseed=1', "needs a name"),
])
def test_bad_campaign_files_are_rejected_with_a_reason(tmp_path, bad, msg):
    with pytest.raises(ValueError, match=msg.replace("[", r"\[").replace("(", r"\(")):
        Campaign.load(write(tmp_path, bad))


def test_stored_config_gives_back_the_same_campaign(tmp_path):
    a = Campaign.load(write(tmp_path, SMALL))
    a.seed, a.static_configs = 99, 2                 # CLI / API overrides
    b = Campaign.from_dict(json.loads(json.dumps(a.to_dict())))
    assert a.id == b.id and b.static_configs == 2
    assert b.case(4).describe() == a.case(4).describe()


def test_identity_ignores_case_count_but_not_seed(tmp_path):
    a = Campaign.load(write(tmp_path, SMALL))
    b = Campaign.load(write(tmp_path, SMALL.replace("cases = 60", "cases = 9000"), "b.toml"))
    c = Campaign.load(write(tmp_path, SMALL.replace("seed = 5", "seed = 6"), "c2.toml"))
    assert a.id == b.id != c.id


# ---------------------------------------------------------------------- generation ---------

def test_case_replays_exactly_from_seed_and_id(tmp_path):
    a = Campaign.load(write(tmp_path, SMALL))
    b = Campaign.load(write(tmp_path, SMALL, "again.toml"))
    for i in (0, 7, 59, 12345):
        x, y = a.case(i), b.case(i)
        assert x.describe() == y.describe() and x.tags == y.tags
        assert np.array_equal(x.ub, y.ub)
    assert a.case(1).describe() != a.case(2).describe() or \
        not np.array_equal(a.case(1).ub, a.case(2).ub)


def test_every_template_runs_at_both_ends_first():
    c = Campaign.load("default")
    k = len(c.pool())
    seen = {}
    for i in range(2 * k):
        case = c.case(i)
        seen.setdefault(case.tags["template"], set()).add(case.tags["repeat_class"])
    assert len(seen) == k
    assert any("max" in v for v in seen.values()) and any("zero" in v for v in seen.values())


def test_repeat_buckets_match_the_engine_table_heights():
    assert repeat_buckets(0, 255) == [(0, 16), (17, 255)]
    assert repeat_buckets(1, 4095) == [(1, 16), (17, 256), (257, 4095)]
    assert repeat_buckets(1, 511)[-1] == (257, 511)


def test_distributions_drive_the_draw():
    dist = Distributions({"stride": {"zero": 1}, "data": {"ties": 1},
                          "mask_mode": {"count": 1}, "mask_count": {"one": 1}},
                         invalid_rate=0.0, offset_rate=0.0)
    uni = template_universe(["whole_reduce_min"], ["atlas_a2"], ["float16"], 8192, dist)
    for i in range(30):
        t = uni[i % len(uni)][0]
        c = draw_campaign_case(RngDraw(3, i), t, dist)
        assert c.mask == 1 and c.tags["data"] == "ties" and c.tags["validity"] == "valid"
        assert c.tensors["src"][0] == 0 and c.ub.size == 8192
        if c.params["repeat"] > 1:
            assert c.params["src_rep_stride"] == 0


def test_legacy_draw_case_keywords_still_work():
    c = draw_case(RngDraw(1, 0), apis=["vec_reduce_add"], chips=["atlas_training"],
                  invalid_rate=0.0, max_ub=1 << 16, tik_max_repeat=20, special_rate=0.5)
    assert c.api == "vec_reduce_add" and c.params["repeat"] <= 20


# ---------------------------------------------------------------------- coverage -----------

def test_coverage_model_and_table(tmp_path):
    camp = Campaign.load(write(tmp_path, SMALL))
    m = coverage.model(camp)
    assert m["api"] == {"whole_reduce_sum", "whole_reduce_max"}
    assert m["product"] == {"atlas_a2"} and "valid" in m["validity"]
    bins = coverage.case_bins(camp.case(0), "ok")
    assert set(bins) <= set(coverage.GROUPS) and bins["outcome"] == "ok"
    hits = {"api": {"whole_reduce_sum": 3}}
    text = coverage.table(hits, m)
    assert "MISSING whole_reduce_max" in text and "api" in text


# ---------------------------------------------------------------------- store -------------

def _row(i, verdict="pass"):
    return {"case_id": i, "api": "a", "chip": "c", "dtype": "d", "option": None,
            "expected": "ok", "actual": "ok", "verdict": verdict, "signature": None,
            "bins": {"api": "a", "data": "ties"}}


def test_store_never_duplicates_a_case_or_its_coverage(tmp_path):
    camp = Campaign.load(write(tmp_path, SMALL))
    st = Store(tmp_path / "r.sqlite")
    st.register(camp)
    run = st.start_run(camp.id, 1)
    assert st.commit_chunk(camp.id, run, [_row(0), _row(1)], 0.1) == 2
    assert st.commit_chunk(camp.id, run, [_row(1), _row(2)], 0.2) == 1   # 1 is already there
    assert st.done_ids(camp.id) == {0, 1, 2}
    assert st.coverage(camp.id) == {"api": {"a": 3}, "data": {"ties": 3}}
    # a failing chunk (its second row has no fields) leaves nothing behind, not even its
    # first, good row: which commits by itself afterwards
    with pytest.raises(KeyError):
        st.commit_chunk(camp.id, run, [_row(3), {"case_id": 4}], 0.3)
    assert st.done_ids(camp.id) == {0, 1, 2}
    assert st.coverage(camp.id)["api"]["a"] == 3
    assert st.commit_chunk(camp.id, run, [_row(3)], 0.4) == 1
    assert st.done_ids(camp.id) == {0, 1, 2, 3} and st.coverage(camp.id)["api"]["a"] == 4


# ---------------------------------------------------------------------- shrink ------------

def _sum_case(repeat=40):
    rng = np.random.default_rng(0)
    n = (repeat - 1) * 128 + 128
    ub = np.zeros(65536, np.uint8)
    ub[:2 * n] = rng.integers(1, 255, 2 * n, dtype=np.uint8)
    return Case("whole_reduce_sum", "atlas_a2", "float16", None, [2**64 - 1, 2**64 - 1],
                {"repeat": repeat, "dst_rep_stride": 1, "src_blk_stride": 1,
                 "src_rep_stride": 8}, {"src": (0, n), "dst": (2 * n + 64, 2 * repeat)}, ub)


def test_shrinker_reaches_a_minimal_case_with_a_fake_comparator():
    """'Mismatch' iff some active source element of some repeat is exactly 1.0 (0x3c00)."""
    case = _sum_case()
    words = case.ub.view(np.uint16)
    words[17 * 128 + 37] = 0x3C00                    # repeat 17, lane 37

    def evaluate(cands):
        out = []
        for c in cands:
            w = c.ub.view(np.uint16)
            a, n = c.tensors["src"]
            r = c.params["repeat"]
            m = c.mask
            bits = (1 << m) - 1 if isinstance(m, int) else m[0] | m[1] << 64
            rs = c.params["src_rep_stride"] * 16
            hit = any(w[a // 2 + k * rs + i] == 0x3C00 for k in range(r) for i in range(128)
                      if bits >> i & 1 and a // 2 + k * rs + i < a // 2 + n)
            out.append("1 ulp" if hit else None)
        return out

    res = shrink(case, "1 ulp", evaluate)
    c = res.case
    assert c.params["repeat"] == 1
    w = c.ub.view(np.uint16)
    assert int((w != 0).sum()) == 1 and 0x3C00 in w
    assert c.mask == 38                              # the first 38 lanes reach lane 37
    assert c.ub.size == 4096 and res.steps > 3


def test_relayout_keeps_the_read_bytes():
    case = _sum_case(3)
    case.tensors = {"src": (1024, case.tensors["src"][1]), "dst": (8192, 6)}
    case.ub = np.roll(case.ub, 1024)
    r = relayout(case, cut=True)
    assert r.tensors["src"][0] == 0 and r.ub.size == 4096
    n = r.tensors["src"][1] * 2
    assert np.array_equal(r.ub[:n], case.ub[1024:1024 + n])


# ---------------------------------------------------------------------- exchange -----------

def test_case_and_result_files_round_trip(tmp_path):
    c = Campaign.load("default").case(3)
    c2 = exchange.case_from_bytes(exchange.case_to_bytes(c))
    assert c2.describe() == c.describe() and np.array_equal(c2.ub, c.ub)
    ub = np.arange(64, dtype=np.uint8)
    exp = Outcome(None, ub, np.zeros(64, bool), np.zeros(64, bool))
    exchange.save_result(tmp_path / "r.npz", "ok", ub)
    v, o, _ = exchange.read_result(tmp_path / "r.npz", exp)
    assert v == "ok" and np.array_equal(o.ub, ub)
    exchange.save_result(tmp_path / "e.npz", "MASK_RANGE")
    assert exchange.read_result(tmp_path / "e.npz", exp)[1].code.name == "MASK_RANGE"
    assert exchange.read_result(tmp_path / "missing.npz", exp)[0] == "missing"


def test_a_crashing_side_is_a_mismatch_not_an_abort():
    case = _sum_case(2)
    v, sig = comparators.compare(case, comparators.Crash("oracle", ZeroDivisionError("x")),
                                 Outcome(None))
    assert v == "mismatch" and sig.startswith("crash")


# ---------------------------------------------------------------------- end to end ---------

def test_small_campaign_end_to_end_and_replay(tmp_path, capsys):
    path = write(tmp_path, SMALL)
    db = str(tmp_path / "r.sqlite")
    assert cli_main(["fuzz", str(path), "--db", db, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "cases: 60 of 60 done — 60 pass, 0 mismatch" in out
    assert "coverage bin" in out and "mismatches: none" in out
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 60
    assert con.execute("SELECT SUM(hits) FROM coverage WHERE bin='api'").fetchone()[0] == 60
    src = con.execute("SELECT source FROM campaigns").fetchone()[0]
    assert "static_configs = 3" in src
    # a finished campaign is not re-run; a larger case count extends it
    assert cli_main(["fuzz", str(path), "--db", db, "--quiet", "--cases", "70"]) == 0
    assert "cases: 70 of 70 done" in capsys.readouterr().out
    # deterministic replay of any case id, readable explanation
    assert cli_main(["fuzz", "--db", db, "--replay", "small:12"]) == 0
    out = capsys.readouterr().out
    assert "replay small:12" in out and "agree bit for bit" in out
    assert "ar.ascendc.whole_reduce_" in out
    # the stored report
    assert cli_main(["fuzz", str(path), "--db", db, "--report"]) == 0
    assert "cases: 70 of 70" in capsys.readouterr().out
    assert json.loads(con.execute("SELECT bins FROM cases WHERE case_id=3").fetchone()[0])
    # a lower --cases runs nothing; the report says what is stored (it said "70 of 10 done")
    assert cli_main(["fuzz", str(path), "--db", db, "--cases", "10"]) == 0
    out = capsys.readouterr().out
    assert "cases: 70 done (more than the 10 asked for: an earlier run asked for more)" in out
    # a bare case id needs a results file to find its campaign in (it said "no campaign  in
    # the results file"); a named one draws the case without one
    assert cli_main(["fuzz", "--db", str(tmp_path / "none.sqlite"), "--replay", "12"]) == 2
    err = capsys.readouterr().err
    assert "--replay 12: no results file" in err and "NAME:12" in err


def test_replay_names_one_campaign_when_a_name_is_run_twice(tmp_path, capsys):
    """The same campaign name run with two seeds leaves two campaigns in one results file:
    ``--replay NAME:ID`` takes the one run last, ``--replay CAMPAIGN-ID:ID`` the one it
    names, and a report's replay command names its own campaign (by id once the name is
    shared), so the command it prints re-runs the case it reported."""
    from ascend_ref.fuzz.runner import replay_ref

    path = write(tmp_path, SMALL)
    db = str(tmp_path / "r.sqlite")
    first = Campaign.load(path)
    assert cli_main(["fuzz", str(path), "--db", db, "--quiet", "--cases", "4"]) == 0
    assert replay_ref(first, 3, db, Store(db)).endswith("--replay small:3")
    assert cli_main(["fuzz", str(path), "--db", db, "--quiet", "--cases", "4",
                     "--seed", "6"]) == 0
    capsys.readouterr()
    assert replay_ref(first, 3, db, Store(db)).endswith(f"--replay {first.id}:3")
    assert cli_main(["fuzz", "--db", db, "--replay", "small:3"]) == 0
    assert "case drawn from seed 6, case id 3" in capsys.readouterr().out
    assert cli_main(["fuzz", "--db", db, "--replay", f"{first.id}:3"]) == 0
    assert "case drawn from seed 5, case id 3" in capsys.readouterr().out
    # with the campaign file, its id is accepted as the name too
    assert cli_main(["fuzz", "--db", db, "--replay", f"{first.id}:3", str(path)]) == 0
    assert "case drawn from seed 5, case id 3" in capsys.readouterr().out


def test_product_comparator_finds_documented_differences(tmp_path, monkeypatch):
    camp = Campaign.load(write(tmp_path, """
        [campaign]
        name = "pd"
        seed = 1
        cases = 24
        apis = ["whole_reduce_sum"]
        products = ["atlas_a2"]
        dtypes = ["float16"]
        static_configs = 1
        invalid_rate = 0.0
        workers = 0
        [distributions.repeat]
        zero = 1
        [compare]
        kind = "product"
        product = "ascend950"
        [shrink]
        budget_s = inf             # no clock: shrinking is bounded by evaluations only
        max_evaluations = 400
    """))
    import time as _time

    from ascend_ref.fuzz.runner import run_campaign

    # a slow machine, simulated: every clock reading is an hour later than the one before
    # (a wall-clock budget would run out at once; the test must not depend on it)
    clock = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(_time, "time", lambda: float(next(clock)))
    s = run_campaign(camp, str(tmp_path / "pd.sqlite"), quiet=True, out=io.StringIO())
    monkeypatch.undo()
    assert s["mismatch"] == s["total"] == 24           # repeat 0: NOP on A2, undefined on 950
    st = Store(tmp_path / "pd.sqlite")
    sigs = {m["signature"] for m in st.mismatches(camp.id)}
    assert sigs == {"undefined mask"}
    assert all(m["shrunk"] for m in st.mismatches(camp.id))


def test_whole_slot_missing_uses_real_written_masks_when_the_side_has_them():
    from ascend_ref.case import run_oracle
    from ascend_ref.fuzz.signature import signature

    case = _sum_case(2)
    case.saturate = True                      # no NaN: random halves sum to some finite value
    e = run_oracle(case)
    lo = int(np.flatnonzero(e.written)[0])
    assert not np.array_equal(e.ub[lo:lo + 2], case.ub[lo:lo + 2])
    dev = e.ub.copy()
    dev[lo:lo + 2] = case.ub[lo:lo + 2]       # the slot of repeat 0 left as it was
    # a device (borrowed masks): an unchanged slot is a missing slot
    assert signature(case, e, Outcome(None, dev, e.written, e.undefined)) == "whole slot missing"
    # a side with its own masks that did not write it
    w = e.written.copy()
    w[lo:lo + 2] = False
    assert signature(case, e, Outcome(None, dev, w, e.undefined)) == "whole slot missing"
    # a side that wrote a value equal to the old bytes: a wrong value, not a missing slot
    assert signature(case, e, Outcome(None, dev, e.written.copy(), e.undefined)) != \
        "whole slot missing"


def test_draw_case_is_the_campaign_flow_over_a_whole_space_template(monkeypatch):
    """One generator: draw_case draws a one-product template and hands it to the campaign's
    own drawing function; its illegal cases are BREAKERS rules."""
    from ascend_ref.fuzz import generate

    seen = []
    real = generate.draw_campaign_case

    def spy(d, t, dist, *a, **kw):
        seen.append((t, dist))
        return real(d, t, dist, *a, **kw)

    monkeypatch.setattr(generate, "draw_campaign_case", spy)
    rules = {b.name for b in generate.BREAKERS.values()}
    for i in range(12):
        c = draw_case(RngDraw(4, i), invalid_rate=0.5, tik_max_repeat=40)
        t, dist = seen[-1]
        assert (t.api, t.chips, t.dtype) == (c.api, (c.chip,), c.dtype) or \
            c.tags["validity"] in ("dtype", "api_unsupported", "mask_mode")
        assert dist.invalid_rate == 0.5
        assert c.tags["validity"] == "valid" or c.tags["validity"] in rules
        assert c.tags.get("broken", "valid") == c.tags["validity"]
    assert len(seen) == 12
