"""Run one :class:`~ascend_ref.fuzz.generate.Case` on two implementations and compare.

An outcome is either an error code or the UB after the call with its ``written`` and
``undefined`` byte masks. Two outcomes agree when both raise the same code, or both succeed
with identical UB bytes outside the bytes either side calls undefined, and identical masks.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..case import Outcome, run_jax, run_oracle  # noqa: F401  (re-exported)


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
