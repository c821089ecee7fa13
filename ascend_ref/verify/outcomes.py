"""What both the verifier (:mod:`ascend_ref.verify.run`) and the audit
(:mod:`ascend_ref.verify.audit`) need of one chunk of dump cases: the reference's outcomes, the
device side as an :class:`~ascend_ref.case.Outcome`, and the repro command of one case.

It sits below both, so the audit does not reach into the verifier (nor the verifier into the
audit beyond creating an :class:`~ascend_ref.verify.audit.Auditor`).
"""

from __future__ import annotations

import shlex
from typing import List, Union

import numpy as np

from ..case import Case, Outcome
from .format import DumpCase


def repro_command(file: str, index: int) -> str:
    """The command that re-verifies one case and explains the difference."""
    return f"ascend-ref verify {shlex.quote(str(file))} --case {index} --explain"


def run_reference(cases: List[Case]) -> List[Union[Outcome, Exception]]:
    """The reference outcomes of ``cases`` in order (one batch through
    :func:`ascend_ref.batch.run_cases`); if the batch fails, case by case, a case that still
    raises giving its exception in its place."""
    from ..batch import run_cases
    from ..case import run_jax

    try:
        return list(run_cases(cases))
    except Exception:            # isolate the case that breaks the batch
        out: List[Union[Outcome, Exception]] = []
        for c in cases:
            try:
                out.append(run_jax(c))
            except Exception as e:                                    # noqa: BLE001
                out.append(e)
        return out


def device_outcome(d: DumpCase, ref: Outcome) -> Outcome:
    """The device side as an :class:`Outcome` (written/undefined taken from the reference)."""
    if d.error is not None:
        return Outcome(d.error)
    assert d.after is not None               # a validated dump has one or the other
    if ref.code is not None:
        return Outcome(None, d.after, np.zeros(d.after.size, bool), np.zeros(d.after.size, bool))
    dev = d.after
    if d.compared is not None:           # bytes not recorded: take the reference's
        assert ref.ub is not None
        dev = np.where(d.compared, d.after, ref.ub)
    return Outcome(None, dev, ref.written, ref.undefined)


__all__ = ["run_reference", "device_outcome", "repro_command"]
