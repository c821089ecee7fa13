"""bench/device_check.py: its comparison can fail, and (slow) the whole check runs CPU vs CPU."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref.case import Outcome
from ascend_ref.constraints import Code

_PATH = Path(__file__).resolve().parent.parent / "bench" / "device_check.py"


def _module():
    spec = importlib.util.spec_from_file_location("device_check", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_differ_counts_every_differing_byte_and_code():
    dc = _module()
    ub = np.arange(64, dtype=np.uint8)
    w = np.zeros(64, bool)
    w[8:12] = True
    a = Outcome(None, ub, w, np.zeros(64, bool))
    assert dc.differ(a, Outcome(None, ub.copy(), w.copy(), np.zeros(64, bool))) == 0
    ub2 = ub.copy()
    ub2[[3, 9]] ^= 1
    assert dc.differ(a, Outcome(None, ub2, w, np.zeros(64, bool))) == 2
    w2 = w.copy()
    w2[20] = True
    assert dc.differ(a, Outcome(None, ub, w2, np.zeros(64, bool))) == 1
    assert dc.differ(a, Outcome(Code.MASK_RANGE)) == 1
    assert dc.differ(Outcome(Code.MASK_RANGE), Outcome(Code.MASK_RANGE)) == 0


def test_corpus_covers_every_api_product_dtype_and_adversarial_data():
    dc = _module()
    cases, combos = dc.corpus(0, 0)
    # "every": what the products declare, enumerated here apart from the corpus' campaign
    from ascend_ref import registry

    every = {(api, c, d) for api in registry.names() for c in ar.chips()
             for d in ar.chip(c).dtypes(api)}
    assert set(combos) == every and len(every) > 100, sorted(every ^ set(combos))[:5]
    assert set(combos) <= {(c.api, c.chip, c.dtype) for c in cases}  # (+ broken-dtype calls)
    kinds = {c.tags.get("data") for c in cases}
    assert {"specials", "subnormal", "ties", "saturating", "signed_zeros"} <= kinds, kinds


@pytest.mark.slow
def test_device_check_quick_runs_cpu_against_cpu(tmp_path):
    dc = _module()
    out = tmp_path / "dc.json"
    assert dc.main(["--quick", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["differences"] == 0 and r["corpus"]["cases"] >= 2 * r["combinations"]


def test_throughput_rows_run_the_bench_configurations_on_both_devices():
    """check_throughput reads bench.py's rows (a renamed bench table once broke it, seen only
    by the slow run): its first and last rows, a few cases each, CPU against CPU."""
    import jax

    dc = _module()
    import bench

    rows = bench.configs()
    assert len(rows) > len(bench.ISSUE_CONFIGS)
    pick = [rows[0], rows[-1]]
    cpu = jax.devices("cpu")[0]
    got = dc.check_throughput(4, 0, cpu, cpu, repeats=2, configs=pick)
    assert [(r["api"], r["chip"], r["dtype"]) for r in got] == [p[:3] for p in pick]
    assert all(r["differing_bytes"] == 0 and r["batch"] == 4 and 0 <= r["ok"] <= 4
               for r in got), got
    assert any(r["ok"] > 0 for r in got), got
