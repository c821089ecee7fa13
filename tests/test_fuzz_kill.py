"""A real campaign process killed with SIGKILL resumes with no lost and no duplicated results:
the final database equals the one of an uninterrupted run, row for row, and coverage counts
every case exactly once. The oracle worker process exits on its own when its parent dies."""

import io
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from ascend_ref.cli import main as cli_main
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.runner import run_campaign

CAMPAIGN = """
[campaign]
name = "killme"
seed = 77
cases = 500
apis = ["whole_reduce_sum", "whole_reduce_min"]
products = ["atlas_a2"]
dtypes = ["float16"]
static_configs = 2
chunk = 10
invalid_rate = 0.1
workers = 1

[distributions.repeat]
one = 1
small = 1

[distributions.mask_mode]
count = 1
"""


def _count(db):
    if not os.path.exists(db):
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def _dump(db):
    con = sqlite3.connect(db)
    cases = con.execute("SELECT case_id, api, chip, dtype, option, expected, actual, verdict, "
                        "signature, bins FROM cases ORDER BY case_id").fetchall()
    cov = con.execute("SELECT bin, value, hits FROM coverage ORDER BY bin, value").fetchall()
    mism = con.execute("SELECT case_id, signature FROM mismatches ORDER BY case_id").fetchall()
    con.close()
    return cases, cov, mism


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_sigkill_mid_campaign_then_resume_equals_uninterrupted_run(tmp_path, capsys):
    toml = tmp_path / "killme.toml"
    toml.write_text(textwrap.dedent(CAMPAIGN))
    killed_db = str(tmp_path / "killed.sqlite")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "ascend_ref", "fuzz", str(toml), "--db",
                             killed_db, "--quiet"], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 900                 # a hang guard, not a speed check
        while _count(killed_db) < 30:
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.time() < deadline, "the campaign made no progress"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)            # the campaign process itself, mid-run
        proc.wait(timeout=30)
        at_kill = _count(killed_db)
        assert 0 < at_kill < 500, f"not killed mid-run ({at_kill} cases)"
        t = time.time() + 300                        # its oracle worker notices and exits
        while _group_alive(proc.pid) and time.time() < t:
            time.sleep(0.1)
        assert not _group_alive(proc.pid), "a worker outlived its campaign"
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)      # only the group this test started
        proc.stdout.close()

    # resume with the same command (in this process), then an uninterrupted reference run
    assert cli_main(["fuzz", str(toml), "--db", killed_db, "--quiet"]) == 0
    capsys.readouterr()
    out = io.StringIO()
    camp = Campaign.load(toml)
    camp.workers = 0
    summary = run_campaign(camp, killed_db, out=out, quiet=False)  # nothing left to do
    assert summary["ran"] == 0 and "500 of 500 cases already" in out.getvalue()
    ref_db = str(tmp_path / "reference.sqlite")
    run_campaign(camp, ref_db, quiet=True, out=io.StringIO())

    k_cases, k_cov, k_mism = _dump(killed_db)
    r_cases, r_cov, r_mism = _dump(ref_db)
    assert len(k_cases) == 500 == len({c[0] for c in k_cases})
    assert k_cases == r_cases                        # nothing lost, nothing duplicated
    assert k_cov == r_cov
    assert k_mism == r_mism
    assert sum(h for b, _, h in k_cov if b == "api") == 500
    con = sqlite3.connect(killed_db)
    runs = con.execute("SELECT finished IS NULL, cases_run FROM runs ORDER BY run_id").fetchall()
    assert runs[0][0] == 1 and runs[1][0] == 0       # the killed run never finished
    assert runs[0][1] == at_kill                     # what was committed before the kill
    assert runs[0][1] + runs[1][1] == 500            # each case ran (was committed) once


@pytest.mark.parametrize("budget", [0.0])
def test_shrinking_left_over_continues_on_the_next_run(tmp_path, budget):
    toml = tmp_path / "pd.toml"
    toml.write_text(textwrap.dedent("""
        [campaign]
        name = "pd2"
        seed = 2
        cases = 6
        apis = ["whole_reduce_max"]
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
    """))
    camp = Campaign.load(toml)
    camp.shrink.budget_s = budget
    db = str(tmp_path / "r.sqlite")
    out = io.StringIO()
    run_campaign(camp, db, quiet=True, out=out)
    assert "not shrunk yet" in out.getvalue()
    camp.shrink.budget_s = float("inf")     # bounded by max_evaluations, not by the clock
    out = io.StringIO()
    run_campaign(camp, db, quiet=True, out=out)
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM mismatches WHERE shrunk IS NULL").fetchone()[0] == 0
    assert con.execute("SELECT COUNT(*) FROM mismatches").fetchone()[0] == 6
    assert con.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 6
