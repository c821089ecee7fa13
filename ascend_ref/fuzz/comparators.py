"""Comparators: run a list of cases on two sides and return (expected, actual) outcomes.

The JAX side always goes through :func:`ascend_ref.batch.run_cases` (batched). The other
side is the scalar oracle, the JAX path on another product, or an external command.
A side that crashes on a case (a Python exception) yields a :class:`Crash` outcome, which
never agrees with anything: a crash is a finding, not an abort (:class:`Crash` and
:class:`Skip` live in :mod:`ascend_ref.fuzz.compare`; the oracle side's batch entry point,
:func:`~ascend_ref.fuzz.worker.oracle_many`, lives with the worker processes).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..case import Case, Outcome, run_jax, run_oracle
from . import exchange
from .compare import Crash, Skip, safe as _safe, spr_diff
from .worker import Workers, oracle_many
from .signature import signature as bit_signature

if TYPE_CHECKING:
    from .campaign import Campaign


def run_jax_batch(cases: Sequence[Case], spr: bool = False, path: str = "fast") -> List[Outcome]:
    """JAX outcomes of ``cases`` (in order) through :func:`ascend_ref.batch.run_cases`: one
    table height per (API, dtype, option) and fixed batch sizes, so a whole campaign (and its
    shrinking) compiles about one executable per (API, dtype, option), whatever the mix of
    products, mask modes, orders and repeat counts; a batch that raises is rerun case by
    case. ``spr``: the setters' outcomes carry their registers (``run_cases(spr=True)``).
    ``path``: the JAX algorithms (:func:`ascend_ref.engine.use_path`; the campaign's
    ``[compare] path``)."""
    from ..engine import use_path

    with use_path(path):
        return _run_cases_safe(list(cases), spr)


def _run_cases_safe(cases: Sequence[Case], spr: bool = False) -> List[Outcome]:
    from ..batch import run_cases

    try:
        return list(run_cases(list(cases), heights=(), spr=spr))
    except Exception:  # noqa: BLE001 - isolate the case that breaks the batch
        out = []
        for c in cases:
            try:
                out.append(run_jax(c, spr=spr))
            except Exception as e:  # noqa: BLE001
                out.append(Crash("jax", e))
        return out


def compare(case: Case, expected: Outcome, actual: Outcome) -> Tuple[str, Optional[str]]:
    """``(verdict, signature)``: verdict ``pass`` / ``mismatch`` / ``skip``."""
    for o, who in ((expected, "expected"), (actual, "actual")):
        if isinstance(o, Crash):
            return "mismatch", f"crash ({who}: {o.error.split(':')[0]})"
        if isinstance(o, Skip):
            if o.verdict == "skip":
                return "skip", None
            return "mismatch", f"device {o.verdict} result"
    sig = bit_signature(case, expected, actual)
    if sig is None and expected.code is None and actual.code is None:
        sig = spr_diff(case, expected, actual)      # the registers, where both carry them
    return ("pass", None) if sig is None else ("mismatch", sig)


class Comparator(abc.ABC):
    """Base: ``run(cases, progress)`` → ``(expected, actual)`` lists of outcomes."""

    expected_label = "expected"
    actual_label = "actual"
    #: the JAX side's algorithms (the campaign's ``[compare] path``; :func:`make` sets it)
    path = "fast"

    @abc.abstractmethod
    def run(self, cases: Sequence[Case], progress: Callable[[int], None] = lambda n: None
            ) -> Tuple[List[Outcome], List[Outcome]]:
        """Both sides' outcomes for ``cases``; call ``progress(n)`` as cases finish."""

    def close(self) -> None:
        pass


class OracleComparator(Comparator):
    """Expected: the scalar oracle; actual: the JAX path. With ``workers`` > 0 the oracle runs
    in that many worker processes while the JAX side runs (and compiles) in this one. Both
    sides carry the reduce special registers of the cases whose instruction sets one, on a
    product that can read it (each side's own model, compared through each side's own
    getters)."""

    expected_label, actual_label = "oracle", "jax"

    def __init__(self, workers: int = 0) -> None:
        self.workers = int(workers)
        self.pool: Optional[Workers] = None

    def _executor(self) -> Workers:
        if self.pool is None:
            self.pool = Workers(self.workers)
        return self.pool

    def run(self, cases: Sequence[Case], progress: Callable[[int], None] = lambda n: None
            ) -> Tuple[List[Outcome], List[Outcome]]:
        if self.workers <= 0 or len(cases) < 8:
            actual = run_jax_batch(cases, spr=True, path=self.path)
            expected = []
            for c in cases:
                expected.append(_safe(_oracle_spr, "oracle", c))
                progress(1)
            return expected, actual
        ex = self._executor()
        step = max(4, min(32, len(cases) // (4 * self.workers) or 4))
        futs = [ex.submit(cases[i:i + step]) for i in range(0, len(cases), step)]
        actual = run_jax_batch(cases, spr=True, path=self.path)
        expected = []
        for f in futs:
            part = f.result()
            expected += part
            progress(len(part))
        return expected, actual

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def _oracle_spr(c: Case) -> Outcome:
    from .compare import observable

    return run_oracle(c, spr=observable(c))


class ProductComparator(Comparator):
    def __init__(self, product: str) -> None:
        self.product = product
        self.expected_label, self.actual_label = "jax@case product", f"jax@{product}"

    def run(self, cases: Sequence[Case], progress: Callable[[int], None] = lambda n: None
            ) -> Tuple[List[Outcome], List[Outcome]]:
        expected = run_jax_batch(cases, path=self.path)
        other = [dataclasses.replace(c, chip=self.product, tags=dict(c.tags)) for c in cases]
        actual = run_jax_batch(other, path=self.path)
        progress(len(cases))
        return expected, actual


class CommandComparator(Comparator):
    expected_label, actual_label = "jax", "device"

    def __init__(self, command: str, timeout_s: float = 600.0,
                 keep_dirs: bool = False) -> None:
        self.command, self.timeout_s, self.keep = command, timeout_s, keep_dirs

    def run(self, cases: Sequence[Case], progress: Callable[[int], None] = lambda n: None
            ) -> Tuple[List[Outcome], List[Outcome]]:
        expected = run_jax_batch(cases, path=self.path)
        names = exchange.names_for(c.tags.get("case_id", f"x{i:07d}") if "case_id" in c.tags
                                   else f"x{i:07d}" for i, c in enumerate(cases))
        if len(set(names)) != len(names):
            names = [f"x{i:07d}" for i in range(len(cases))]
        with exchange.ExchangeDir(keep=self.keep) as folder:
            exchange.write_exchange(folder, cases, names,
                                    [not isinstance(e, Crash) and e.code is None for e in expected])
            exchange.run_command(self.command, folder, self.timeout_s)
            actual = []
            for n, e in zip(names, expected):
                verdict, out, note = exchange.read_result(folder / "results" / f"{n}.npz", e)
                actual.append(out if verdict == "ok" else Skip(verdict, note))
        progress(len(cases))
        return expected, actual


def make(camp: Campaign) -> Comparator:
    k = camp.compare.kind
    c: Comparator
    if k == "oracle":
        c = OracleComparator(camp.workers)
    elif k == "product":        # product / command: set for their kind (Campaign.from_dict)
        c = ProductComparator(camp.compare.product)  # type: ignore[arg-type]
    else:
        c = CommandComparator(camp.compare.command,  # type: ignore[arg-type]
                              camp.compare.timeout_s)
    c.path = camp.compare.path
    return c


def evaluate(comparator: Comparator, cases: Sequence[Case]) -> List[Optional[str]]:
    """Signature of each case under ``comparator`` (None: agree; ``"skip"`` for skipped)."""
    if not cases:
        return []
    exp, act = comparator.run(cases)
    out = []
    for c, e, a in zip(cases, exp, act):
        v, s = compare(c, e, a)
        out.append("skip" if v == "skip" else s)
    return out


__all__ = ["Comparator", "OracleComparator", "ProductComparator", "CommandComparator", "Crash",
           "Skip", "compare", "evaluate", "make", "oracle_many", "run_jax_batch"]
_ = np
