"""A planted bug — the min/max tie rule changed so that the *largest* lane index wins among
equal values, in a copy of ``numerics.select_extreme`` (numerics.py itself is untouched) —
is found by the ``tie_rule`` campaign, every mismatch is shrunk to a minimal case, and the
mismatches are grouped as "index differs"; ``--replay`` reproduces one with an explanation."""

import io
import sqlite3

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref.numerics as numerics
from ascend_ref.cli import main as cli_main
from ascend_ref.fuzz import exchange
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.runner import run_campaign


def last_index_wins(bits, active, kind, dtype):
    """select_extreme with the planted bug: ties go to the largest index."""
    n = numerics
    key = n.order_key(bits, dtype)
    want_min = kind == "min"
    if n.is_float(dtype):
        key = jnp.where(n.is_nan(bits), n._INT_MIN if want_min else n._INT_MAX, key)
    far = n._INT_MAX if want_min else n._INT_MIN
    masked = jnp.where(active, key, far)
    best = (jnp.min if want_min else jnp.max)(masked, axis=-1, keepdims=True)
    pos = jnp.arange(bits.shape[-1], dtype=jnp.int32)
    index = jnp.maximum(jnp.max(jnp.where(active & (key == best), pos, -1), axis=-1), 0)
    value = jnp.take_along_axis(bits, index[..., None], axis=-1)[..., 0]
    return value, index, jnp.any(active, axis=-1)


@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setattr(numerics, "select_extreme", last_index_wins)
    jax.clear_caches()                  # kernels traced with the right rule are dropped
    yield
    monkeypatch.undo()
    jax.clear_caches()


@pytest.mark.slow   # a whole planted campaign + shrink (~45 s idle); the default run keeps the clean-campaign half
def test_planted_tie_rule_bug_is_found_shrunk_and_grouped(planted, tmp_path, capsys):
    camp = Campaign.load("tie_rule")
    camp.cases, camp.static_configs, camp.workers = 60, 6, 0     # the file's 240 x 10: ~1 min
    # the bug is planted in the general algorithm; the fast key tree (select_extreme_tree)
    # would bypass it, so the campaign runs the general path (``fuzz --path general``)
    camp.compare.path = "general"
    camp.shrink.budget_s = float("inf")     # bounded by max_evaluations, not by the clock
    db = str(tmp_path / "planted.sqlite")
    s = run_campaign(camp, db, quiet=True, out=io.StringIO())
    assert s["mismatch"] >= 15, s

    con = sqlite3.connect(db)
    groups = dict(con.execute("SELECT signature, COUNT(*) FROM mismatches GROUP BY signature"))
    assert max(groups, key=groups.get) == "index differs", groups
    # ties with NaNs also change which NaN payload wins; a later repeat winning can push a TIK
    # source offset past 65535: every group is a consequence of the index rule
    assert all("index differs" in g or "INDEX_OVERFLOW" in g or "nan payload" in g
               for g in groups), groups
    assert con.execute("SELECT COUNT(*) FROM mismatches WHERE shrunk IS NULL").fetchone()[0] == 0

    # the shrunk cases are minimal: one repeat, two equal lanes, zero data
    rows = con.execute("SELECT case_id, shrunk FROM mismatches WHERE signature='index differs'")
    small = []
    for cid, blob in rows:
        c = exchange.case_from_bytes(blob)
        assert c.params["repeat"] <= 2 and c.ub.size <= 4096, c.describe()
        small.append((int((c.ub != 0).sum()), cid, c))
    nz, cid, c = min(small, key=lambda t: t[:2])
    assert c.params["repeat"] == 1 and c.mask == 2 and nz == 0, c.describe()

    assert cli_main(["fuzz", "--db", db, "--replay", f"tie_rule:{cid}"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH — signature: index differs" in out
    assert "mask: 2 (continuous: lanes 0..1)" in out
    assert "src: all" in out and "+0" in out
    assert "expected 0x0000 (0)  actual 0x0001 (1)" in out     # lane 0 vs lane 1
    assert "reproduce in Python" in out


def test_without_the_bug_the_same_campaign_is_clean(tmp_path):
    camp = Campaign.load("tie_rule")
    camp.cases, camp.static_configs, camp.workers = 40, 6, 0
    s = run_campaign(camp, str(tmp_path / "clean.sqlite"), quiet=True, out=io.StringIO())
    assert s["mismatch"] == 0 and s["pass"] == 40
    _ = np


#: path -> the edits that plant "the largest lane wins among equal values": in the general
#: path's select_extreme; in the fast path's 16-bit tree (the tie_rule campaign draws float16
#: calls), lanes packed mirrored below the key and unpacked the same way
PLANTS = {
    "general": [("index = jnp.min(jnp.where(active & (key == best), pos, n), axis=-1)",
                 "index = jnp.maximum(jnp.max(jnp.where(active & (key == best), pos, -1), "
                 "axis=-1), 0)")],
    "fast": [("return key * (1 << lb) + lane if sign > 0 else lane - key * (1 << lb)",
              "top = (1 << lb) - 1\n    return key * (1 << lb) + (top - lane) if sign > 0 "
              "else (top - lane) - key * (1 << lb)"),
             ("index = best & ((1 << lb) - 1)",
              "index = ((1 << lb) - 1) - (best & ((1 << lb) - 1))")],
}


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(PLANTS))
def test_planted_bug_in_a_copy_of_the_code_is_found_by_the_shipped_campaign(tmp_path, path):
    """What a reviewer does: copy the package, change the tie rule in numerics.py, run the
    shipped ``tie_rule`` campaign as a new user would, from the command line: on the path
    whose algorithm was changed (``--path general`` for select_extreme; the default for the
    fast float32 tree)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    copy = tmp_path / "copy"
    shutil.copytree(root / "ascend_ref", copy / "ascend_ref",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "configs", copy / "configs")
    src = (copy / "ascend_ref" / "numerics.py").read_text()
    for rule, bug in PLANTS[path]:
        assert src.count(rule) == 1, "numerics.py changed: update the planted edit (same bug)"
        src = src.replace(rule, bug)
    (copy / "ascend_ref" / "numerics.py").write_text(src)
    env = dict(__import__("os").environ, PYTHONPATH=str(copy))
    db = tmp_path / "bug.sqlite"
    # shrinking bounded by [shrink] max_evaluations, not by the file's 60 s of wall clock
    flags = ["--shrink-budget", "inf"] + ([] if path == "fast" else ["--path", path])
    r = subprocess.run([sys.executable, "-m", "ascend_ref", "fuzz", "tie_rule", "--db", str(db)]
                       + flags, cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "index differs" in r.stdout and "--replay tie_rule:" in r.stdout
    con = sqlite3.connect(db)
    groups = dict(con.execute("SELECT signature, COUNT(*) FROM mismatches GROUP BY signature"))
    assert max(groups, key=groups.get) == "index differs", groups
    assert con.execute("SELECT COUNT(*) FROM mismatches WHERE shrunk IS NULL").fetchone()[0] == 0
