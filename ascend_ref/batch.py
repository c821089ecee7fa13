"""Many calls at once.

:func:`run_cases` runs a list of :class:`~ascend_ref.case.Case` s and returns one
:class:`~ascend_ref.case.Outcome` each (never raises on data: a bad case gets its code).
"""

from __future__ import annotations

from typing import Iterable, List

from .case import Case, Outcome, run_jax


def run_cases(cases: Iterable[Case]) -> List[Outcome]:
    """Outcomes of ``cases`` on the JAX path, in order."""
    return [run_jax(c) for c in cases]
