"""Run one :class:`~ascend_ref.fuzz.generate.Case` on two implementations and compare.

An outcome is either an error code or the UB after the call with its ``written`` and
``undefined`` byte masks. Two outcomes agree when both raise the same code, or both succeed
with identical UB bytes outside the bytes either side calls undefined, and identical masks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import oracle
from ..constraints import Code, ConstraintError


@dataclass
class Outcome:
    code: Optional[Code]
    ub: Optional[np.ndarray] = None
    written: Optional[np.ndarray] = None
    undefined: Optional[np.ndarray] = None

    def __repr__(self) -> str:
        return f"Outcome({self.code.name})" if self.code else "Outcome(ok)"


def run_jax(case, chip: Optional[str] = None) -> Outcome:
    import ascend_ref as ar

    c = case if chip is None else _on(case, chip)
    try:
        ub, info = _with_info(c, ar)
    except ConstraintError as e:
        return Outcome(e.code)
    return Outcome(None, np.asarray(ub), np.asarray(info.written), np.asarray(info.undefined))


def run_oracle(case, chip: Optional[str] = None) -> Outcome:
    c = case if chip is None else _on(case, chip)
    try:
        r = c.call(oracle)
    except oracle.OracleError as e:
        return Outcome(Code(e.code))
    return Outcome(None, r.ub, r.written, r.undefined)


def _on(case, chip: str):
    import copy

    c = copy.copy(case)
    c.chip = chip
    return c


def _with_info(case, ar):
    import functools

    class _Impl:  # the public modules with return_info=True
        pass

    impl = _Impl()
    for mod in ("ascendc", "tik"):
        m = getattr(ar, mod)
        sub = _Impl()
        for name in dir(m):
            if not name.startswith("_") and callable(getattr(m, name)):
                setattr(sub, name, functools.partial(getattr(m, name), return_info=True))
        setattr(impl, mod, sub)
    return case.call(impl)


def diff(a: Outcome, b: Outcome) -> Optional[str]:
    """None when the outcomes agree, else a one-line reason."""
    if a.code or b.code:
        if a.code == b.code:
            return None
        return f"error {a.code and a.code.name} vs {b.code and b.code.name}"
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
