"""External-command comparator: the example device (the oracle behind the documented file
exchange) agrees with the JAX reference; a faulty device is caught and grouped."""

import io
import sqlite3
import textwrap

import numpy as np

from ascend_ref.fuzz import example_dut, exchange
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.runner import run_campaign

DEVICE = """
[campaign]
name = "dut"
seed = 3
cases = 30
apis = ["whole_reduce_max", "vec_reduce_add"]
products = ["atlas_training"]
static_configs = 3
chunk = 30
invalid_rate = 0.2
workers = 0
[distributions.repeat]
one = 1
small = 1
[compare]
kind = "command"
command = "{python} -m ascend_ref.fuzz.example_dut {dir} EXTRA"
timeout_s = 300
"""


def _camp(tmp_path, extra=""):
    p = tmp_path / "dut.toml"
    p.write_text(textwrap.dedent(DEVICE).replace("EXTRA", extra))
    return Campaign.load(p)


def test_example_device_agrees_with_the_reference(tmp_path):
    s = run_campaign(_camp(tmp_path), str(tmp_path / "d.sqlite"), quiet=True, out=io.StringIO())
    assert s["pass"] == 30 and s["mismatch"] == 0


def test_faulty_device_is_caught_and_grouped(tmp_path):
    camp = _camp(tmp_path, "--corrupt 1")   # every case that writes is corrupted
    camp.shrink.enabled = False
    out = io.StringIO()
    s = run_campaign(camp, str(tmp_path / "f.sqlite"), quiet=True, out=out)
    assert s["mismatch"] >= 3 and s["mismatch"] + s["pass"] == 30
    con = sqlite3.connect(str(tmp_path / "f.sqlite"))
    sigs = {r[0] for r in con.execute("SELECT signature FROM mismatches")}
    assert sigs and all(x for x in sigs)
    assert "mismatches:" in out.getvalue() and "--replay dut:" in out.getvalue()


def test_example_device_reads_and_answers_the_exchange_format(tmp_path):
    camp = Campaign.load("default")
    cases = [camp.case(i) for i in range(6)]
    names = exchange.names_for(range(6))
    exchange.write_exchange(tmp_path, cases, names)
    assert example_dut.main([str(tmp_path), "--skip-invalid"]) == 0
    back = exchange.read_exchange_cases(tmp_path)
    assert [n for n, _, _ in back] == names
    for n, c, _ in back:
        with np.load(tmp_path / "results" / f"{n}.npz") as z:
            st = str(z["status"])
            assert st == "ok" or st == "skip" or st.isupper()
            if st == "ok":
                assert z["ub"].size == c.ub.size
