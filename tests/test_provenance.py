"""What computed a result is recorded with it: ``ascend-ref --version``, the verify report's
``software``, each fuzz run's ``software`` (and an older results file gains the column)."""

import importlib.metadata
import json
import platform
import sqlite3
import textwrap

import jax
import jaxlib.version
import ml_dtypes
import numpy as np
import pytest

import ascend_ref
from ascend_ref.cli import main as cli_main
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.runner import report
from ascend_ref.fuzz import store as store_module
from ascend_ref.fuzz.store import SCHEMA, Store, StoreError
from ascend_ref.provenance import describe, software
from ascend_ref.verify import verify

SMALL = """
[campaign]
name = "small"
seed = 5
cases = 4
apis = ["whole_reduce_sum"]
products = ["atlas_a2"]
dtypes = ["float16"]
workers = 0
"""


def _campaign(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(textwrap.dedent(SMALL))
    return Campaign.load(p)


def _row(i):
    return {"case_id": i, "api": "a", "chip": "c", "dtype": "d", "option": None,
            "expected": "ok", "actual": "ok", "verdict": "pass", "signature": None,
            "bins": {"api": "a"}}


def test_software_names_the_imported_versions():
    sw = software(backend=True)
    assert sw == {"ascend_ref": ascend_ref.__version__, "jax": jax.__version__,
                  "jaxlib": jaxlib.version.__version__, "numpy": np.__version__,
                  "ml_dtypes": ml_dtypes.__version__, "python": platform.python_version(),
                  "backend": jax.default_backend()}
    assert "backend" not in software()


def test_the_package_version_is_the_installed_distributions():
    assert ascend_ref.__version__ == importlib.metadata.version("ascend_ref")


def test_describe_orders_the_names_and_keeps_unknown_ones():
    sw = {"python": "3.12.1", "numpy": "2.0", "future_lib": "9", "ascend_ref": "1.2",
          "backend": "gpu"}
    assert describe(sw) == "ascend_ref 1.2, numpy 2.0, Python 3.12.1, future_lib 9 (gpu)"


def test_cli_version_prints_the_versions_and_exits_0(capsys):
    assert cli_main(["--version"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == describe(software())
    assert f"jax {jax.__version__}" in out and f"ascend_ref {ascend_ref.__version__}" in out


def test_verify_report_json_records_the_software(tmp_path):
    rep = verify([tmp_path], progress=False)          # no dump: a report all the same
    got = json.loads(json.dumps(rep.to_json()))
    assert got["software"] == software(backend=True)
    assert rep.format().splitlines()[1] == f"  reference: {describe(software(backend=True))}"


def test_each_fuzz_run_records_its_software_and_the_report_shows_it(tmp_path):
    camp = _campaign(tmp_path)
    st = Store(tmp_path / "r.sqlite")
    st.register(camp)
    a = {"ascend_ref": "0.1.0", "jax": "0.10.2", "backend": "cpu"}
    b = {"ascend_ref": "0.2.0", "jax": "0.11.0", "backend": "gpu"}
    r1 = st.start_run(camp.id, 1, a)
    st.commit_chunk(camp.id, r1, [_row(0), _row(1), _row(2)], 0.1)
    assert st.run_software(camp.id) == [(a, 1, 3)]
    assert "software: ascend_ref 0.1.0, jax 0.10.2 (cpu)" in report(camp, st).splitlines()
    r2 = st.start_run(camp.id, 2, b)
    st.commit_chunk(camp.id, r2, [_row(3)], 0.1)
    st.start_run(camp.id, 3, a)                       # a run that stored nothing new
    assert st.run_software(camp.id) == [(a, 2, 3), (b, 1, 1)]
    lines = report(camp, st).splitlines()
    i = lines.index("software: 2 different across the runs (each stored its own cases):")
    assert lines[i + 1:i + 3] == ["  ascend_ref 0.1.0, jax 0.10.2 (cpu): 2 run(s), 3 case(s)",
                                  "  ascend_ref 0.2.0, jax 0.11.0 (gpu): 1 run(s), 1 case(s)"]
    st.close()


def _old_schema():
    """SCHEMA as it was before runs recorded their software."""
    old = SCHEMA.replace("pid         INTEGER,", "pid         INTEGER")
    old = "\n".join(ln for ln in old.splitlines() if not ln.lstrip().startswith(("software",
                                                                                "-- NULL")))
    assert "software" not in old and old != SCHEMA
    return old


def test_a_results_file_from_before_the_column_gains_it_and_keeps_its_runs(tmp_path):
    old = _old_schema()
    camp = _campaign(tmp_path)
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(old)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("INSERT INTO runs (campaign, started, pid) VALUES (?, 0, 7)", (camp.id,))
    db.commit()
    db.close()
    st = Store(path)
    st.register(camp)
    assert st.run_software(camp.id) == [(None, 1, 0)]
    st.commit_chunk(camp.id, st.start_run(camp.id, 8, {"ascend_ref": "0.1.0"}), [_row(0)], 0.1)
    assert st.run_software(camp.id) == [({"ascend_ref": "0.1.0"}, 1, 1), (None, 1, 0)]
    assert "  not recorded (a run before runs recorded it): 1 run(s), 0 case(s)" in \
        report(camp, st).splitlines()
    st.close()
    cols = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(runs)")]
    assert cols[-1] == "software"


def test_a_file_locked_by_an_older_run_is_used_without_the_column(tmp_path, monkeypatch):
    camp = _campaign(tmp_path)
    path = tmp_path / "old.sqlite"
    other = sqlite3.connect(path, isolation_level=None)      # an older version's campaign run
    other.execute("PRAGMA journal_mode=WAL")
    other.executescript(_old_schema())
    other.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    other.execute("BEGIN IMMEDIATE")                          # ... in the middle of a chunk
    monkeypatch.setattr(store_module, "_opened",
                        lambda p: sqlite3.connect(p, timeout=0.2, isolation_level=None))
    st = Store(path)                                          # reads; cannot add the column
    assert st.run_software(camp.id) == []
    other.execute("COMMIT")
    st.register(camp)
    st.commit_chunk(camp.id, st.start_run(camp.id, 9, software()), [_row(0)], 0.1)
    assert st.run_software(camp.id) == [(None, 1, 1)]         # recorded without it
    st.close()
    st = Store(path)                                          # the next open adds it
    st.start_run(camp.id, 10, {"ascend_ref": "0.1.0"})
    assert sorted(st.run_software(camp.id), key=str) == sorted(
        [(None, 1, 1), ({"ascend_ref": "0.1.0"}, 1, 0)], key=str)
    st.close()
    other.close()


def test_a_newer_versions_file_is_refused_unaltered(tmp_path):
    path = tmp_path / "newer.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_old_schema())
    db.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version 2"):
        Store(path)
    cols = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(runs)")]
    assert "software" not in cols and cols[-1] == "pid"


def test_golden_writes_a_manifest_of_the_kernel_the_software_and_each_file(tmp_path, capsys):
    import hashlib

    from ascend_ref.golden import find_kernel, generate

    g = generate("whole_reduce_max_half", tmp_path / "g", dumps=True)
    assert g.manifest == str(tmp_path / "g" / "golden.json") and g.manifest not in g.files
    m = json.loads((tmp_path / "g" / "golden.json").read_text())
    kernel_file = find_kernel("whole_reduce_max_half")
    assert m["kernel"] == {"name": "whole_reduce_max_half", "file": str(kernel_file),
                           "sha256": hashlib.sha256(kernel_file.read_bytes()).hexdigest()}
    assert m["software"] == software(backend=True)
    written = sorted(p.relative_to(tmp_path / "g").as_posix()
                     for p in (tmp_path / "g").rglob("*") if p.is_file())
    assert sorted(m["files"]) == [f for f in written if f != "golden.json"] == [
        "dumps/whole_reduce_max_half.npz", "input/input_x.bin", "output/golden.bin"]
    for name, digest in m["files"].items():
        assert hashlib.sha256((tmp_path / "g" / name).read_bytes()).hexdigest() == digest
    assert cli_main(["golden", "whole_reduce_max_half", "--out", str(tmp_path / "c")]) == 0
    assert f"wrote {tmp_path / 'c' / 'golden.json'}" in capsys.readouterr().out
