"""Campaign runs under stress: a missing device command, early kills, a dying parent, two
runs of one campaign on one store (issue 13 F4, F5, F6)."""

import io
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ascend_ref.case import Case
from ascend_ref.cli import main as cli_main
from ascend_ref.fuzz import comparators, runner, worker
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.store import CampaignBusy, Store

TINY = """
[campaign]
name = "tiny"
seed = 4
cases = CASES
apis = ["whole_reduce_sum"]
products = ["atlas_a2"]
dtypes = ["float32"]
static_configs = 1
chunk = 250
invalid_rate = 0.0
workers = 0
[distributions.repeat]
one = 1
EXTRA
"""


def _toml(tmp_path, cases=2, extra=""):
    p = tmp_path / "tiny.toml"
    p.write_text(textwrap.dedent(TINY).replace("CASES", str(cases)).replace("EXTRA", extra))
    return p


def test_missing_device_command_is_an_error_line_and_exit_2(tmp_path, capsys):
    p = _toml(tmp_path, extra='[compare]\nkind = "command"\n'
                              'command = "ascend-ref-no-such-device-xyz {dir}"')
    rc = cli_main(["fuzz", str(p), "--db", str(tmp_path / "r.sqlite"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "command not found" in err and "ascend-ref-no-such-device-xyz" in err


class _Fake(comparators.Comparator):
    """Both sides reject every case with the same code: fast, no JAX, no oracle."""

    expected_label, actual_label = "a", "b"

    def __init__(self, fail_on_call=None):
        self.calls, self.fail_on_call = 0, fail_on_call

    def run(self, cases, progress=lambda n: None):
        from ascend_ref.case import Outcome
        from ascend_ref.constraints import Code

        self.calls += 1
        if self.calls == self.fail_on_call:
            raise KeyboardInterrupt                    # a kill in the middle of the run
        progress(len(cases))
        out = [Outcome(Code.MASK_RANGE) for _ in cases]
        return out, list(out)


def test_commits_start_small(tmp_path, monkeypatch):
    sizes = []
    real = Store.commit_chunk
    monkeypatch.setattr(Store, "commit_chunk",
                        lambda self, c, r, rows, s: sizes.append(len(rows)) or real(self, c, r,
                                                                                    rows, s))
    monkeypatch.setattr(comparators, "make", lambda camp: _Fake())
    camp = Campaign.load(_toml(tmp_path, cases=600))
    runner.run_campaign(camp, str(tmp_path / "r.sqlite"), quiet=True, out=io.StringIO())
    assert sizes == [8, 16, 32, 64, 128, 250, 102] and sum(sizes) == 600
    assert runner.chunk_ids(list(range(5)), 250) == [[0, 1, 2, 3, 4]]
    assert runner.chunk_ids(list(range(7)), 2) == [[0, 1], [2, 3], [4, 5], [6]]


def test_a_run_killed_early_keeps_its_first_results(tmp_path, monkeypatch):
    monkeypatch.setattr(comparators, "make", lambda camp: _Fake(fail_on_call=3))
    camp = Campaign.load(_toml(tmp_path, cases=600))
    db = tmp_path / "r.sqlite"
    with pytest.raises(KeyboardInterrupt):
        runner.run_campaign(camp, str(db), quiet=True, out=io.StringIO())
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 8 + 16
    con.close()


def test_worker_exits_quietly_when_its_parent_is_gone():
    ub = np.zeros(1024, np.uint8)
    case = Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
                {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"src": (0, 64), "dst": (512, 8)}, ub)
    p = subprocess.Popen([sys.executable, "-m", "ascend_ref.fuzz.worker"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                                   # nobody will read the answer
    worker._send(p.stdin, [case])
    p.stdin.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_second_run_of_a_campaign_on_one_store_is_refused(tmp_path, capsys):
    p = _toml(tmp_path)
    db = tmp_path / "r.sqlite"
    camp = Campaign.load(p)
    holder = Store(db)
    holder.register(camp)                               # a run in progress
    rc = cli_main(["fuzz", str(p), "--db", str(db), "--quiet", "--fresh"])
    err = capsys.readouterr().err
    assert rc == 2 and "being run by another process" in err and "Traceback" not in err
    holder.close()
    st = Store(db)
    st.register(camp)                                   # free again once the run has ended
    st.close()


def test_claim_is_per_process_and_released_when_the_holder_dies(tmp_path):
    db = tmp_path / "r.sqlite"
    Store(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from ascend_ref.fuzz.store import Store; "
                               f"s = Store({str(db)!r}); s.claim('c-1'); print('held', flush=True); "
                               "sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    st = Store(db)
    with pytest.raises(CampaignBusy):
        st.claim("c-1")
    st.claim("c-2")                                     # another campaign runs concurrently
    holder.kill()                                       # SIGKILL: the lock goes with it
    holder.wait(timeout=60)
    st.claim("c-1")
    st.close()
