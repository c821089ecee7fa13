"""How close ``ascend-ref verify`` can come to run_batch on dump files of layout "regions"
(issue 11's target: verify per case >= 0.5x run_batch per case on the same cases).

A version-1 dump file is a zip archive with a member per case and field (``c{i}.meta`` and
each region's bytes before and after the call). Whatever else a verifier of such a file
does, it has to check each member's CRC-32 against the archive's directory (the zip
integrity check: a damaged dump must not pass as the device's result) and inflate the
members the writer deflated: one C call a member at least, on every byte. This script
writes bench.py's cases as bench.py does (1000 cases a file, deflated where it pays, the
reference's results as the device's) and times, in turns (the best of 9 rounds each):

* ``batch``   -- run_batch on the cases (bench.py's baseline);
* ``members`` -- that check alone, as cheap as this package does it: a small member whose
  entry and stored bytes repeat an earlier one's is checked once
  (:func:`ascend_ref.verify.members.repeats`: the ``meta`` of cases that share every
  field); every other stored member's CRC-32 (:func:`ascend_ref.verify.members._crcs`:
  libdeflate for long members, zlib for short ones, long runs split between two threads);
  every other deflated member inflated into one buffer
  (:func:`ascend_ref.verify.members.inflate_into`) and its CRC-32 taken; the archives
  already open and their directories read;
* ``open``    -- opening the files (:func:`ascend_ref.verify.format.open_dump`: the
  directory read, the format fields checked), for reference;
* ``verify``  -- ``ascend_ref.verify.verify`` itself.

It prints the bound ``batch / (batch + members)``: the best ratio a verifier of these files
could reach if reading, checking and comparing the cases and running the kernels cost
nothing beyond run_batch -- and the ratio verify reaches now.

Usage: ``python bench/verify_floor.py [API [DTYPE [R]]]`` (default whole_reduce_min
float16 255). Not a test: nothing here asserts a timing.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402

import ascend_ref as ar  # noqa: E402
from ascend_ref.verify import dumps_from_cases, verify  # noqa: E402
from ascend_ref.verify.format import open_dump  # noqa: E402
from ascend_ref.verify.members import _crcs, data_starts, inflate_into, repeats  # noqa: E402


def member_check(path: str, keep: list) -> Callable[[], int]:
    """A function that checks every member of the dump file ``path`` as the zip format asks
    (CRC-32 of the stored or inflated bytes against the directory's; a repeat once) and
    returns how many members it checked; it asserts that each one passes. The file stays
    open (``keep``)."""
    f = open_dump(path)
    keep.append(f)
    raw = f._raw()
    raw8 = np.frombuffer(raw, np.uint8)
    e = f._zdir.cols
    off, method, _, csize, usize, crc = e.T
    start = data_starts(raw8, off)
    assert ((method == 0) | (method == 8)).all(), "a member neither stored nor deflated"

    def check() -> int:
        mv = memoryview(raw)
        try:
            lead = repeats(mv, e, start, np.ones(len(e), bool)) == np.arange(len(e))
            stored, packed = np.flatnonzero(lead & (method == 0)), \
                np.flatnonzero(lead & (method == 8))
            ok = _crcs(raw, raw8, start[stored], usize[stored]) == crc[stored]
            joined, j8, at, good = inflate_into(mv, raw8, start[packed], csize[packed],
                                                usize[packed])
        finally:
            mv.release()
        ok_packed = good & (_crcs(joined, j8, at, usize[packed]) == crc[packed])
        assert ok.all() and ok_packed.all(), f"{path}: a member fails its CRC-32"
        return int(lead.sum())

    return check


def pieces(api: str, dtype: str, r: int, chip: str = "atlas_a2", rounds: int = 9) -> dict:
    """Seconds of each piece (the best of ``rounds`` rounds in turns) for bench.py's cases
    of ``api``, and ``checked_per_case``: members checked a case."""
    ubs, kw, cases = bench.one_call(api, dtype, r, chip)
    out, status = ar.run_batch(api, ubs, **kw)
    assert (status == 0).all()
    outcomes = ar.run_cases(cases)
    d = tempfile.mkdtemp(prefix="ascend_ref_verify_floor_")
    keep: List = []
    try:
        paths = dumps_from_cases(cases, d, per_file=1000, regions="tensors",
                                 outcomes=outcomes)
        rep = verify(d, progress=False)
        assert rep.ok and rep.cases == len(cases), rep.format()
        checks = [member_check(p, keep) for p in paths]
        members = sum(c() for c in checks)

        def opened() -> None:
            for p in paths:
                open_dump(p).close()

        t = bench._in_turns({"batch": lambda: ar.run_batch(api, ubs, **kw),
                             "members": lambda: [c() for c in checks],
                             "open": opened,
                             "verify": lambda: verify(d, progress=False)}, rounds=rounds)
    finally:
        for f in keep:
            f.close()
        shutil.rmtree(d, ignore_errors=True)
    t["checked_per_case"] = members / len(cases)
    return t


def main(argv: list) -> None:
    api = argv[0] if argv else "whole_reduce_min"
    dtype = argv[1] if len(argv) > 1 else "float16"
    r = int(argv[2]) if len(argv) > 2 else 255
    t = pieces(api, dtype, r)
    print(f"{api} {dtype} R={r}, {bench.CASES[r]} cases, {t['checked_per_case']:.1f} "
          f"members checked a case, ms: " + ", ".join(f"{k} {t[k] * 1e3:.3f}" for k in
                                               ("batch", "members", "open", "verify")))
    print(f"bound: run_batch / (run_batch + members) = "
          f"{t['batch'] / (t['batch'] + t['members']):.3f}; "
          f"verify now {t['batch'] / t['verify']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
