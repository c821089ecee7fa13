"""The mutation harness (``bench/mutation.py``).

Fast: every curated mutant's original snippet occurs exactly once in the current tree. If you
rewrite code a mutant edits, this fails: update the mutant's snippet (keep the same bug).

Slow: the whole harness — each mutant applied to a copy of the repository, the default
campaign run on it, and the test suite on each mutant the campaign leaves alive; the
campaign alone kills at least 95 % and the campaign plus the tests kill every mutant.
"""

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import mutation  # noqa: E402


def test_every_mutant_snippet_occurs_exactly_once():
    assert mutation.check_anchors(ROOT) == []


def test_mutants_cover_every_area():
    areas = Counter(m.area for m in mutation.MUTANTS)
    assert len(mutation.MUTANTS) >= 20
    assert set(areas) >= {"numerics", "addressing", "masks", "constraints", "slots", "products",
                          "tik"}
    ids = {m.id for m in mutation.MUTANTS}
    assert {"work_add_short", "fill_200i_min_half"} <= ids      # the two survivors of issue 16


def test_a_mutant_is_applied_to_a_copy_only(tmp_path):
    m = next(x for x in mutation.MUTANTS if x.id == "repeat_max_256")
    before = (ROOT / m.file).read_text()
    copy = mutation.make_copy(m, tmp_path / "repo")
    assert m.new in (copy / m.file).read_text() and m.old not in (copy / m.file).read_text()
    assert (ROOT / m.file).read_text() == before
    assert not list(copy.rglob("__pycache__"))
    # no virtual environment (the README's .venv, CI's .venv-ci: ~0.9 GB each) nor build
    # output; what the runs in the copy read is there
    assert not list(copy.rglob("pyvenv.cfg")) and not (copy / ".mypy_cache").exists()
    for need in ("ascend_ref/__init__.py", "configs", "tests/conftest.py", "README.md",
                 "pyproject.toml", "notebooks"):
        assert (copy / need).exists(), need


def test_only_flags_this_jaxlib_knows_reach_the_copies():
    """XLA aborts a process on an unknown XLA_FLAGS entry (jaxlib 0.12.1 no longer knows
    --xla_cpu_use_fusion_emitters, and the whole harness crashed there): unknown flags drop
    out, known ones stay."""
    known = "--xla_backend_optimization_level=0"
    assert mutation.fast_xla_flags(f"{known} --xla_ascend_ref_no_such_flag=1") == known
    assert set(mutation.fast_xla_flags().split()) <= set(mutation.FAST_XLA.split())
    assert known in mutation._env(ROOT, ROOT / "cache")["XLA_FLAGS"]


@pytest.mark.slow
def test_mutation_score(tmp_path):
    # the test suite only for mutants the campaign leaves alive: all the assertions need
    # (run for every mutant, each run of the suite takes a quarter of an hour on 2 cores)
    rows = mutation.run(mutation.MUTANTS, tmp_path / "cache", log=lambda s: None,
                        tests_if_survived=True)
    s = mutation.score(rows)
    (tmp_path / "report.json").write_text(json.dumps(rows))
    assert s["campaign_pct"] >= 95.0, mutation.report(rows)
    assert s["campaign_or_tests"] == s["mutants"], mutation.report(rows)
