"""A tiny example "device under test" for the external-command comparator.

``python -m ascend_ref.fuzz.example_dut DIR`` reads every case of an exchange directory
(``DIR/manifest.json``, ``DIR/cases/<name>.npz``), runs it on the scalar oracle and writes
``DIR/results/<name>.npz`` — exactly what a real device harness does with the hardware
instead of the oracle (see ``docs/fuzz.md``, "External command"). Options make it misbehave,
to see how a campaign reports a faulty device:

``--corrupt N``  flip the lowest bit of the first written byte of every N-th case;
``--skip-invalid``  answer ``skip`` for cases the reference rejects (what a device that
cannot check constraints would do).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

import numpy as np

from ..case import run_oracle
from .exchange import read_exchange_cases, save_result


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ascend_ref.fuzz.example_dut",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="exchange directory written by ascend-ref fuzz")
    ap.add_argument("--corrupt", type=int, default=0, metavar="N",
                    help="flip one result bit in every N-th case (a faulty device)")
    ap.add_argument("--skip-invalid", action="store_true",
                    help="answer 'skip' for cases the reference calls invalid")
    a = ap.parse_args(argv)
    from pathlib import Path

    folder = Path(a.dir)
    for k, (name, case, meta) in enumerate(read_exchange_cases(folder)):
        out = folder / "results" / f"{name}.npz"
        if a.skip_invalid and meta.get("reference_valid") is False:
            save_result(out, "skip")
            continue
        o = run_oracle(case)
        if o.code is not None:
            save_result(out, o.code.name)
            continue
        assert o.ub is not None and o.written is not None     # a call that ran
        ub = o.ub.copy()
        if a.corrupt and k % a.corrupt == 0 and o.written.any():
            i = int(np.flatnonzero(o.written)[0])
            ub[i] ^= 1
        save_result(out, "ok", ub)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
