"""Run one :class:`~ascend_ref.fuzz.generate.Case` on two implementations and compare.

An outcome is either an error code or the UB after the call with its ``written`` and
``undefined`` byte masks. Two outcomes agree when both raise the same code, or both succeed
with identical UB bytes outside the bytes either side calls undefined, and identical masks.
Two more outcome kinds come from the fuzz sides: :class:`Crash` (a side raised something
other than a constraint error) and :class:`Skip` (the device under test gave no answer).
"""

from __future__ import annotations

import traceback
from typing import Callable, Optional

import numpy as np

from ..case import Case, Outcome, run_jax, run_oracle  # noqa: F401  (re-exported)


class Crash(Outcome):
    """A side raised something other than a constraint error."""

    def __init__(self, side: str, exc: BaseException):
        super().__init__(None)
        self.side = side
        self.error = f"{type(exc).__name__}: {exc}"
        self.trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-2000:]

    def __repr__(self) -> str:
        return f"Crash({self.side}: {self.error})"


class Skip(Outcome):
    """The device under test did not run the case (or gave no usable answer)."""

    def __init__(self, verdict: str, note: str):
        super().__init__(None)
        self.verdict, self.note = verdict, note

    def __repr__(self) -> str:
        return f"Skip({self.verdict}: {self.note})"


def safe(fn: Callable[[Case], Outcome], side: str, c: Case) -> Outcome:
    """``fn(c)``, or a :class:`Crash` of ``side`` if it raises."""
    try:
        return fn(c)
    except Exception as e:  # noqa: BLE001
        return Crash(side, e)


def diff(a: Outcome, b: Outcome) -> Optional[str]:
    """None when the outcomes agree, else a one-line reason."""
    if a.code or b.code:
        if a.code == b.code:
            return None
        return f"error {a.code and a.code.name} vs {b.code and b.code.name}"
    # both ran: they carry the UB and its byte masks
    assert a.ub is not None and a.written is not None and a.undefined is not None
    assert b.ub is not None and b.written is not None and b.undefined is not None
    undefined = a.undefined | b.undefined
    bad = np.flatnonzero((a.ub != b.ub) & ~undefined)
    if bad.size:
        k = int(bad[0])
        return f"{bad.size} byte(s) differ, first at {k}: {a.ub[k]:#04x} vs {b.ub[k]:#04x}"
    if not np.array_equal(a.undefined, b.undefined):
        return f"undefined masks differ at {int(np.flatnonzero(a.undefined != b.undefined)[0])}"
    if not np.array_equal(a.written, b.written):
        return f"written masks differ at {int(np.flatnonzero(a.written != b.written)[0])}"
    return None
