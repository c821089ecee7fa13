"""How close run_cases can come to run_batch on one call over many data (issue 11's target:
run_cases per case >= 0.7x run_batch per case on the same cases).

A run_cases that did nothing but what its API makes unavoidable -- run run_batch on the
cases' rows, key the Case objects (``batch_prep.group_keys``: which cases share a static
configuration), mark each case's ``written`` byte row (in a table of the pool run_cases
hands out again, ``batch_prep.pooled_mask``: the last call's marks cleared, then this
call's set), make one Outcome per case --
would take the sum of these pieces. This script times each of them, run_batch and
run_cases in turns (the best of 9 rounds each) on bench.py's cases (full mask, strides
1 / 1 / 8, standard-normal data) and prints the bound: ``run_batch / (run_batch + keys +
written + outcomes)``, the best ratio any run_cases with this Outcome can reach.

Usage: ``python bench/run_cases_floor.py [API [DTYPE [R]]]`` (default whole_reduce_min
float16 255). Not a test: nothing here asserts a timing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402

import ascend_ref as ar  # noqa: E402
from ascend_ref import batch_prep  # noqa: E402
from ascend_ref.case import Outcome  # noqa: E402


def pieces(api: str, dtype: str, r: int, chip: str = "atlas_a2", rounds: int = 9) -> dict:
    """Seconds of each piece (the best of ``rounds`` rounds in turns) for bench.py's cases
    of ``api``."""
    ubs, kw, cases = bench.one_call(api, dtype, r, chip)
    b = len(cases)
    out, status = ar.run_batch(api, ubs, **kw)
    assert (status == 0).all()
    got = ar.run_cases(cases)
    assert all(np.array_equal(o.ub, out[k]) for k, o in enumerate(got))
    # the bytes every case writes, from run_cases' own masks (one span, the same in each row)
    cols = np.flatnonzero(got[0].written)
    lo, hi = int(cols[0]), int(cols[-1]) + 1

    def written() -> None:              # a pooled table: the last marks cleared, these set
        w, marks = batch_prep.pooled_mask(ubs.shape)
        w[:, lo:hi] = True
        if marks is not None:
            marks.append((0, len(w), lo, hi))

    rows, blank = list(out), list(np.zeros((b, 1), bool))

    def outcomes() -> None:
        [Outcome(None, rows[k], blank[k], blank[k]) for k in range(b)]

    return bench._in_turns({"batch": lambda: ar.run_batch(api, ubs, **kw),
                            "cases": lambda: ar.run_cases(cases),
                            "keys": lambda: batch_prep.group_keys(cases),
                            "written": written, "outcomes": outcomes}, rounds=rounds)


def main(argv: list) -> None:
    api = argv[0] if argv else "whole_reduce_min"
    dtype = argv[1] if len(argv) > 1 else "float16"
    r = int(argv[2]) if len(argv) > 2 else 255
    t = pieces(api, dtype, r)
    floor = t["batch"] + t["keys"] + t["written"] + t["outcomes"]
    print(f"{api} {dtype} R={r}, {bench.CASES[r]} cases, ms: "
          + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in t.items()))
    print(f"bound: run_batch / (run_batch + keys + written + outcomes) = "
          f"{t['batch'] / floor:.3f}; run_cases now {t['batch'] / t['cases']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
