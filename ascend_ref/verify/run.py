"""Streaming verification of dump files against the reference.

:func:`verify` walks any number of dump files (directories are searched for ``*.npz``),
reads the cases one at a time, runs them through :func:`ascend_ref.batch.run_cases` in
chunks of ``batch_size`` and compares the bytes the reference defines; undefined bytes are
skipped and counted. Nothing but the current chunk and the summary is held in memory, so
the input may be far larger than memory. Mismatches are grouped by bit signature
(:func:`ascend_ref.fuzz.signature.signature`), each group with a repro command; bad files
and bad cases are all reported, and the good cases are still verified.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Callable, Dict, Iterable, Iterator, List, Literal, Optional,
                    Sequence, Set, Tuple, Union)

import numpy as np

from .. import registry
from ..numerics import value_text
from ..case import JAX, Case, Outcome
from ..chips import chip as get_chip
from ..constraints import Code, ConstraintError
from ..provenance import describe, software
from .format import (DumpCase, DumpError, PathLike, iter_dump_cases,
                     iter_paths, open_dump)
from .outcomes import device_outcome, repro_command, run_reference

if TYPE_CHECKING:                      # the verifier creates an Auditor only on request
    from .audit import Auditor
    from .format import DumpFile

DEFAULT_BATCH = 256


# ------------------------------------------------------------------ report -----------------

@dataclass
class Group:
    """Mismatches with one bit signature (as the fuzzer groups them), over APIs and products."""

    signature: str
    count: int = 0
    apis: Counter = field(default_factory=Counter)
    chips: Counter = field(default_factory=Counter)
    dtypes: Counter = field(default_factory=Counter)
    examples: List[Tuple[str, int, str]] = field(default_factory=list)   # (file, index, call)
    best: Optional[Tuple[tuple, str, int, str]] = None   # smallest case: (size, file, index, call)

    def add(self, d: DumpCase, max_examples: int) -> None:
        c = d.case
        self.count += 1
        self.apis[c.api] += 1
        self.chips[c.chip] += 1
        self.dtypes[c.dtype] += 1
        if len(self.examples) < max_examples:
            self.examples.append((d.file, d.index, c.describe()))
        size = (int(c.params.get("repeat", 0)), int(c.ub.size), d.file, d.index)
        if self.best is None or size < self.best[0]:
            self.best = (size, d.file, d.index, c.describe())

    @property
    def repro(self) -> str:
        """Repro command of the smallest case of the group."""
        assert self.best is not None                 # a group holds at least one case
        return repro_command(self.best[1], self.best[2])


@dataclass
class Report:
    """Totals of a verification run; ``ok`` is False on any mismatch or bad input."""

    files: int = 0
    cases: int = 0
    agreed: int = 0
    mismatched: int = 0
    device_errors: int = 0          # cases the device rejected with the reference's code
    undefined_bytes: int = 0
    cases_with_undefined: int = 0
    #: reduce special registers (docs/verify.md §1c): cases whose dump records them, the
    #: recorded readings the reference leaves undefined (skipped) and the cases with some
    spr_cases: int = 0
    undefined_registers: int = 0
    cases_with_undefined_registers: int = 0
    bad: List[DumpError] = field(default_factory=list)
    bad_files: int = 0
    groups: dict = field(default_factory=dict)
    audit: Optional[Auditor] = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.mismatched == 0 and not self.bad and self.cases > 0

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def sorted_groups(self) -> List[Group]:
        return sorted(self.groups.values(), key=lambda g: (-g.count, g.signature))

    def format(self, *, examples: int = 1) -> str:
        lines = [f"verified {self.cases} case(s) from {self.files} file(s) in "
                 f"{self.seconds:.1f} s: {self.agreed} agree, {self.mismatched} mismatch "
                 f"({len(self.groups)} group(s)), {len(self.bad)} bad "
                 f"(in {self.bad_files} file(s))",
                 f"  reference: {describe(software(backend=True))}"]
        if self.device_errors:
            lines.append(f"  {self.device_errors} case(s) rejected by the device with the "
                         f"reference's constraint code (counted as agreeing)")
        lines.append(f"  undefined bytes skipped: {self.undefined_bytes} "
                     f"(in {self.cases_with_undefined} case(s))")
        if self.spr_cases:
            lines.append(f"  reduce special registers compared in {self.spr_cases} case(s); "
                         f"undefined register readings skipped: {self.undefined_registers} "
                         f"(in {self.cases_with_undefined_registers} case(s))")
        if self.groups:
            lines.append("")
            lines.append(f"mismatches: {self.mismatched} in {len(self.groups)} group(s) by bit "
                         f"signature")
            lines.append(f"  {'signature':<40}{'cases':>6}  APIs / products / dtypes")
            for g in self.sorted_groups():
                assert g.best is not None
                what = "; ".join(", ".join(f"{k}({n})" for k, n in cnt.most_common(4))
                                 for cnt in (g.apis, g.chips, g.dtypes))
                lines.append(f"  {g.signature:<40}{g.count:>6}  {what}")
                lines.append(f"  {'':<48}repro: {g.repro}")
                lines.append(f"  {'':<48}{g.best[3]}")
                for f, i, desc in g.examples[:examples]:
                    if (f, i) != (g.best[1], g.best[2]):
                        lines.append(f"  {'':<48}also {f} case {i}")
        if self.bad:
            lines.append("")
            lines.append(f"bad input ({len(self.bad)}):")
            for e in sorted(self.bad, key=lambda e: (e.file, -1 if e.case is None else e.case)):
                lines.append(f"  {e}")
        if self.audit is not None:
            lines.append("")
            lines.append(self.audit.format())
        if self.cases == 0 and not self.bad:
            lines.append("no dump case found")
        lines.append("")
        lines.append("RESULT: " + ("OK" if self.ok else "FAILED"))
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "ok": self.ok, "files": self.files, "cases": self.cases, "agreed": self.agreed,
            "mismatched": self.mismatched, "device_errors": self.device_errors,
            "undefined_bytes": self.undefined_bytes,
            "cases_with_undefined": self.cases_with_undefined,
            "spr_cases": self.spr_cases, "undefined_registers": self.undefined_registers,
            "cases_with_undefined_registers": self.cases_with_undefined_registers,
            "groups": [{"signature": g.signature, "count": g.count, "apis": dict(g.apis),
                        "chips": dict(g.chips), "dtypes": dict(g.dtypes), "repro": g.repro,
                        "examples": [{"file": f, "case": i, "call": d} for f, i, d in g.examples]}
                       for g in self.sorted_groups()],
            "bad": [{"file": e.file, "case": e.case, "field": e.field, "reason": e.reason}
                    for e in self.bad],
            "audit": None if self.audit is None else self.audit.to_json(),
            "software": software(backend=True),     # what computed the reference's side
        }


# ------------------------------------------------------------------ the reference side ----

def _field_of(param: str) -> str:
    """The dump field a reference constraint parameter lives in."""
    if param == "repeat" or param in {i.repeat_param for i in registry.all()}:
        return "meta.params.repeat"
    if param in {k for i in registry.all() for k in i.params}:
        return f"meta.params.{param}"
    head = param.split(".")[0].split("/")[0]
    if head in ("dst", "src", "work_tensor"):
        return f"meta.tensors.{head}"
    if param in {i.option.key for i in registry.all() if i.option is not None}:
        return "meta.option"
    if param in ("mask", "saturate", "chip", "dtype"):
        return f"meta.{param}"
    return f"meta ({param})"


def constraint_error(case: Case) -> Optional[ConstraintError]:
    """The reference's error for ``case`` (with the parameter named), or None if it runs."""
    try:
        case.call(JAX, return_info=True)
    except ConstraintError as e:
        return e
    return None


def beyond_assumed_ub(d: DumpCase, ref: Outcome) -> bool:
    """The device ran a call the reference rejects only because the product's UB size, an
    *assumed* value, is too small: evidence against ``ub_bytes`` (a mismatch, not bad input)."""
    if ref.code != Code.UB_BOUNDS or d.after is None:
        return False
    prof = get_chip(d.case.chip)
    if "ub_bytes" not in prof.assumed:
        return False
    s = np.dtype(d.case.dtype).itemsize
    end = max(a + n * s for a, n in d.case.tensors.values())
    return prof.ub_bytes < end <= d.case.ub.size


def _assumed_errors() -> dict:
    """Reference errors that rest on an *assumed* rule (profile assumption -> (code, APIs)),
    from each instruction's declared ``assumptions``: a device that ran such a call is
    evidence against the assumption (a mismatch the audit counts), not bad input
    (docs/SEMANTICS.md §J)."""
    out: dict = {}
    for ins in registry.all():
        for name, code in (ins.assumptions or {}).items():
            out.setdefault(name, (code, []))[1].append(ins.name)
    return {k: (c, tuple(apis)) for k, (c, apis) in out.items()}


def assumed_error(d: DumpCase, ref: Outcome) -> bool:
    """The device ran a call the reference rejects only by an assumed rule."""
    if ref.code is None or d.after is None:
        return False
    prof = get_chip(d.case.chip)
    return any(name in prof.assumed and ref.code == code and d.case.api in apis
               for name, (code, apis) in _assumed_errors().items())


# ------------------------------------------------------------------ verification ----------

def _agrees(d: DumpCase, ref: Outcome) -> bool:
    """Both ran and the device's bytes equal the reference's wherever the dump recorded them
    and the reference defines them (:func:`~ascend_ref.fuzz.signature.signature` None)."""
    after, ub, und = d.after, ref.ub, ref.undefined
    if after is None or ub is None or und is None or after.shape != ub.shape:
        return False
    differ = after != ub
    if d.compared is not None:
        differ &= d.compared
    differ &= ~und
    return not differ.any()


class Verifier:
    """Accumulates a :class:`Report` chunk by chunk (see :func:`verify`)."""

    def __init__(self, *, audit: bool = False, max_examples: int = 3,
                 on_case: Optional[Callable] = None) -> None:
        from ..batch_args import flag, is_int

        audit = flag("Verifier", "audit", audit)
        if not is_int(max_examples) or max_examples < 0:
            raise ValueError(f"max_examples = {max_examples!r}: must be an integer >= 0")
        if on_case is not None and not callable(on_case):
            raise ValueError(f"on_case = {on_case!r}: must be None or a function "
                             f"on_case(dump_case, signature, error)")
        self.report = Report()
        self.max_examples = max_examples
        self.on_case = on_case
        self._bad_files: Set[str] = set()
        self.auditor: Optional[Auditor] = None
        if audit:
            from .audit import Auditor

            self.auditor = Auditor()
            self.report.audit = self.auditor

    def bad(self, e: DumpError) -> None:
        self.report.bad.append(e)
        self._bad_files.add(e.file)
        self.report.bad_files = len(self._bad_files)
        if self.on_case:
            self.on_case(None, None, e)

    def check(self, items: Sequence[DumpCase]) -> None:
        """Verify one chunk of cases."""
        if not items:
            return
        outs = run_reference([d.case for d in items])
        audit_items = []
        for d, ref in zip(items, outs):
            if isinstance(ref, Exception):
                self.bad(DumpError(d.file, "(reference)", f"the reference failed on this case: "
                                                          f"{type(ref).__name__}: {ref}", d.index))
                continue
            sig = self._compare(d, ref)
            if sig is False:
                continue
            if self.auditor is not None:
                audit_items.append((d, ref, sig))
        if self.auditor is not None and audit_items:
            self.auditor.add(audit_items)

    def _compare(self, d: DumpCase, ref: Outcome) -> Union[str, None, Literal[False]]:
        """Count one case; returns its signature (None: agrees) or False (bad case)."""
        rep = self.report
        spr_sig = self._registers(d, ref)
        if ref.code is None and d.error is None and spr_sig is None and _agrees(d, ref):
            # both ran and every recorded, defined byte matches: what signature() would
            # call agreement (the device borrows the reference's masks), in one pass
            assert ref.undefined is not None
            und = ref.undefined if d.compared is None else (ref.undefined & d.compared)
            n = int(np.count_nonzero(und))
            if n:
                rep.undefined_bytes += n
                rep.cases_with_undefined += 1
            rep.cases += 1
            rep.agreed += 1
            if self.on_case:
                self.on_case(d, None, None)
            return None
        if ref.code is not None and d.error is None and not beyond_assumed_ub(d, ref) \
                and not assumed_error(d, ref):
            e = constraint_error(d.case)
            if e is None:
                e = ConstraintError(ref.code, api=d.case.api, param="?", value="?",
                                    allowed="see ascend_ref.explain",
                                    chip=get_chip(d.case.chip).id)
            self.bad(DumpError(d.file, _field_of(e.param), f"outside the documented range, the "
                                                           f"reference rejects the call: {e}",
                               d.index))
            return False
        rep.cases += 1
        dev = device_outcome(d, ref)
        from ..fuzz.signature import signature

        sig = signature(d.case, ref, dev)
        if spr_sig is not None:
            sig = spr_sig if sig is None else f"{sig} + {spr_sig}"
        if ref.code is None and dev.code is None:
            assert ref.undefined is not None
            und = ref.undefined if d.compared is None else (ref.undefined & d.compared)
            n = int(und.sum())
            if n:
                rep.undefined_bytes += n
                rep.cases_with_undefined += 1
        if sig is None:
            rep.agreed += 1
            if d.error is not None:
                rep.device_errors += 1
        else:
            rep.mismatched += 1
            g = rep.groups.get(sig)
            if g is None:
                g = rep.groups[sig] = Group(sig)
            g.add(d, self.max_examples)
        if self.on_case:
            self.on_case(d, sig, None)
        return sig

    def _registers(self, d: DumpCase, ref: Outcome) -> Optional[str]:
        """Compare the case's reduce special registers, when its dump records them and both
        sides ran: count what was compared and skipped; the register signature (None:
        agree)."""
        if d.spr is None or ref.code is not None or d.error is not None:
            return None
        from .registers import compare, signature as spr_signature

        v = compare(d.case, d.spr)
        d.spr_verdict = v
        if v is None:
            return None
        rep = self.report
        rep.spr_cases += 1
        if v.skipped:
            rep.undefined_registers += len(v.skipped)
            rep.cases_with_undefined_registers += 1
        return spr_signature(v)

    def finish(self, files: int, seconds: float) -> Report:
        self.report.files = files
        self.report.seconds = seconds
        return self.report


def _chunks(it: Iterable[Union[DumpCase, DumpError]], n: int
            ) -> Iterator[List[Union[DumpCase, DumpError]]]:
    buf = []
    for x in it:
        buf.append(x)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf


def verify(paths: Union[PathLike, Iterable[PathLike]], *, batch_size: int = DEFAULT_BATCH,
           audit: bool = False, progress: Optional[bool] = None, max_examples: int = 3,
           on_case: Optional[Callable] = None, distributed: Optional[bool] = None,
           vectorised: bool = True) -> Report:
    """Verify every dump under ``paths`` against the reference; returns a :class:`Report`.

    ``paths`` — files and/or directories (searched recursively for ``*.npz`` in any letter
    case, following symbolic links, see :func:`~ascend_ref.verify.format.iter_paths`); a
    single path is accepted too. Every path that cannot be read (unlistable directory, link
    loop, FIFO, ...) is reported as bad input and fails the run. ``batch_size`` — cases per reference batch (memory is about
    ``batch_size`` × 5 × UB size). ``audit`` — also audit the profile assumptions
    (:mod:`ascend_ref.verify.audit`). ``progress`` — tqdm bar over files (default: when
    stderr is a terminal). ``on_case(dump_case, signature, error)`` is called per case.
    ``distributed`` (default: when :func:`ascend_ref.scale.init_distributed` joined several
    processes) — every process verifies its share of the cases and gets the one merged
    report, equal to a single process's (``docs/scale.md``); ``on_case`` sees only the
    process's own cases. ``vectorised`` -- verify stacked files (format version 2), and version-1
    files of layout "regions" with at least :data:`ascend_ref.verify.regions.MIN_CASES` cases,
    as whole batches (:mod:`ascend_ref.verify.fast`; the same report as case by case, which
    ``vectorised=False``, ``audit`` and ``on_case`` take).
    """
    from ..batch_args import flag, is_int

    # flags are bools or 0 / 1, never read by truthiness ("no" is no False)
    audit = flag("verify", "audit", audit)
    vectorised = flag("verify", "vectorised", vectorised)
    progress = None if progress is None else flag("verify", "progress", progress)
    distributed = None if distributed is None else flag("verify", "distributed", distributed)
    if not is_int(batch_size) or batch_size < 1:
        raise ValueError(f"batch_size = {batch_size!r}: must be a positive integer")
    if not is_int(max_examples) or max_examples < 0:
        raise ValueError(f"max_examples = {max_examples!r}: must be an integer >= 0")
    if on_case is not None and not callable(on_case):
        raise ValueError(f"on_case = {on_case!r}: must be None or a function "
                         f"on_case(dump_case, signature, error)")
    from .. import scale

    found = list(iter_paths(paths))
    multi = scale.process_count() > 1 if distributed is None else distributed
    share = (scale.process_index(), scale.process_count()) if multi else (0, 1)
    t0 = time.time()
    v = Verifier(audit=audit, max_examples=max_examples, on_case=on_case)
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=len(found), unit="file", desc="verify", file=sys.stderr)
    on_file = (lambda p: bar.update(1)) if bar is not None else None
    fast = None
    if vectorised and not audit and on_case is None:
        from .fast import check_stacked

        def fast(f: DumpFile, mine: np.ndarray) -> List[int]:
            return check_stacked(v, f, mine)
    try:
        for chunk in _chunks(iter_dump_cases(found, on_file=on_file, share=share,
                                             stacked=fast), batch_size):
            good = []
            for x in chunk:
                if isinstance(x, DumpError):
                    v.bad(x)
                else:
                    good.append(x)
            v.check(good)
            if bar is not None:
                bar.set_postfix(cases=v.report.cases, mismatch=v.report.mismatched,
                                bad=len(v.report.bad), refresh=False)
    finally:
        if bar is not None:
            bar.close()
    parts = [(v.report, v._bad_files)]
    if share[1] > 1:
        parts = scale.allgather_objects(parts[0])
    return merge_reports(parts, found, len(found), time.time() - t0, max_examples)


def merge_reports(parts: Sequence[Tuple[Report, set]], paths: Sequence[Union[str, DumpError]],
                  files: int,
                  seconds: float, max_examples: int) -> Report:
    """One report from the reports of disjoint shares of the cases (and their bad-file sets),
    in a canonical order: equal to the report of one process over all of them."""
    pos: Dict[str, int] = {}
    for i, p in enumerate(paths):
        pos.setdefault(str(p.file if isinstance(p, DumpError) else p), i)
    far = len(pos)

    def at(file: str, index: Optional[int]) -> Tuple[int, int]:
        return (pos.get(str(file), far), -1 if index is None else index)

    def canon(counter: Counter) -> Counter:
        return Counter(dict(sorted(counter.items())))

    out = Report()
    bad_files = set()
    for rep, bf in parts:
        bad_files |= bf
        for k in ("cases", "agreed", "mismatched", "device_errors", "undefined_bytes",
                  "cases_with_undefined", "spr_cases", "undefined_registers",
                  "cases_with_undefined_registers"):
            setattr(out, k, getattr(out, k) + getattr(rep, k))
        out.bad.extend(rep.bad)
        for sig, g in rep.groups.items():
            h = out.groups.setdefault(sig, Group(sig))
            h.count += g.count
            for k in ("apis", "chips", "dtypes"):
                getattr(h, k).update(getattr(g, k))
            h.examples.extend(g.examples)
            if g.best is not None and (h.best is None or g.best < h.best):
                h.best = g.best
        if rep.audit is not None:
            if out.audit is None:
                out.audit = type(rep.audit)(rep.audit.max_examples)
            a = out.audit
            a._seen_chips |= rep.audit._seen_chips
            for key, r in rep.audit.rows.items():
                row = a.row(r.chip, r.assumption, r.kind)
                for k in ("exercised", "agreed", "alternative", "other"):
                    setattr(row, k, getattr(row, k) + getattr(r, k))
                row.observed.update(r.observed)
                row.examples.extend(r.examples)
    out.bad.sort(key=lambda e: at(e.file, e.case))          # stable: a case's errors in order
    for g in out.groups.values():
        g.apis, g.chips, g.dtypes = canon(g.apis), canon(g.chips), canon(g.dtypes)
        g.examples = sorted(g.examples, key=lambda x: at(x[0], x[1]))[:max_examples]
    if out.audit is not None:
        out.audit.rows = dict(sorted(out.audit.rows.items()))
        for r in out.audit.rows.values():
            r.observed = canon(r.observed)
            r.examples = sorted(r.examples, key=lambda x: at(x[0], x[1]))[:out.audit.max_examples]
    out.bad_files = len(bad_files)
    out.files = files
    out.seconds = seconds
    return out


# ------------------------------------------------------------------ one case, explained ---

def _decode(bits: int, dtype: str, role: str = "value") -> str:
    if role == "index":
        return f"index {bits}"
    return value_text(bits, dtype)


def _locate(case: Case, addr: int) -> str:
    s = np.dtype(case.dtype).itemsize
    for name, (a, n) in case.tensors.items():
        if a <= addr < a + n * s:
            return f"{name}[{(addr - a) // s}]"
    return "outside every tensor"


def _ranges(m: np.ndarray) -> List[Tuple[int, int]]:
    edges = np.flatnonzero(np.diff(np.concatenate([[0], m.astype(np.int8), [0]])))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


def explain(path: PathLike, index: int, *, max_words: int = 32) -> Tuple[str, Optional[str]]:
    """Verify one case and explain it: ``(text, signature)``; raises :class:`DumpError`.

    ``index`` is a case number (a non-negative int, numpy ints too; not a bool) and
    ``max_words`` the most differing elements listed (an int >= 0); anything else is a
    BAD_ARGUMENT :class:`~ascend_ref.constraints.ConstraintError` naming it, before the file
    is read (a case number past the file's cases stays a :class:`DumpError`).
    """
    from ..batch_args import is_int
    from ..fuzz.signature import _roles, classify_values, signature

    if not is_int(index) or index < 0:
        raise ConstraintError(Code.BAD_ARGUMENT, api="explain", param="index", value=index,
                              allowed="a case number: an int >= 0 (not a bool)")
    if not is_int(max_words) or max_words < 0:
        raise ConstraintError(Code.BAD_ARGUMENT, api="explain", param="max_words",
                              value=max_words, allowed="an int >= 0 (not a bool)")
    index, max_words = int(index), int(max_words)
    with open_dump(path) as f:
        d = f.case(index)
    c = d.case
    ref = run_reference([c])[0]
    if isinstance(ref, Exception):
        raise DumpError(d.file, "(reference)", f"the reference failed: {ref}", index)
    lines = [f"{d.where}", f"  call:      {c.describe()}"]
    if d.meta.get("source"):
        lines.append(f"  source:    {d.meta['source']}")
    layout = "whole UB" if d.compared is None else \
        "regions " + ", ".join(f"{k}@{a}+{n}" for k, (a, n) in d.meta["regions"].items())
    lines.append(f"  recorded:  {layout}" + (f"; device error {d.error.name}" if d.error else ""))
    if ref.code is not None:
        err = constraint_error(c)
        lines.append(f"  reference: rejects the call: {err if err else ref.code.name}")
    else:
        assert ref.written is not None and ref.undefined is not None
        lines.append(f"  reference: writes {_ranges(ref.written)}; undefined {_ranges(ref.undefined)}")
    if ref.code is not None and d.error is None and not beyond_assumed_ub(d, ref):
        lines.append("  => bad case: outside the documented range (nothing to compare)")
        return "\n".join(lines), "bad"
    dev = device_outcome(d, ref)
    sig = signature(c, ref, dev)
    if d.spr is not None and ref.code is None and dev.code is None:
        from .registers import compare, signature as spr_signature

        v = compare(c, d.spr)
        if v is not None:
            ssig = spr_signature(v)
            if ssig is not None:
                sig = ssig if sig is None else f"{sig} + {ssig}"
            for k in sorted(v.reference, key=list(d.spr.after).index):
                bits, defined = v.reference[k]
                mark = "skipped (undefined)" if not defined else \
                    "MISMATCH" if k in v.differ else "agree"
                lines.append(f"  register:  {k:<14} reference {bits:#x}"
                             f"{'' if defined else ' (undefined)'}  device "
                             f"{d.spr.after[k]:#x}  [{mark}]")
    if ref.code is not None or dev.code is not None:
        lines.append(f"  => {'agree' if sig is None else sig}")
        return "\n".join(lines), sig
    # both ran: they carry the UB and its byte masks
    assert ref.ub is not None and ref.written is not None and ref.undefined is not None
    assert dev.ub is not None
    s = np.dtype(c.dtype).itemsize
    und = ref.undefined if d.compared is None else ref.undefined & d.compared
    if und.any():
        lines.append(f"  skipped:   {int(und.sum())} undefined byte(s) {_ranges(und)}")
    differ = (ref.ub != dev.ub) & ~ref.undefined
    words = np.unique(np.flatnonzero(differ) // s)
    if sig is None:
        lines.append("  => agree: every defined byte matches"
                     + (" and every defined register reading" if d.spr is not None else ""))
        return "\n".join(lines), None
    lines.append(f"  => MISMATCH ({sig}): {words.size} element(s) differ")
    bt = f"uint{8 * s}"
    for w in words[:max_words]:
        lo = int(w) * s
        e = int(ref.ub[lo:lo + s].view(bt)[0])
        a = int(dev.ub[lo:lo + s].view(bt)[0])
        b = int(c.ub[lo:lo + s].view(bt)[0])
        role = _roles(c, lo) if ref.written[lo] else "not written by the reference"
        if not ref.written[lo]:
            kind = "extra write"
        elif a == b and e != b:
            kind = "slot not written"
        elif role == "index":
            kind = "index differs"
        else:
            kind = classify_values(e, a, c.dtype)
        w = 2 + 2 * s
        lines.append(f"     byte {lo:#07x} {_locate(c, lo):<14} reference {e:#0{w}x} "
                     f"({_decode(e, c.dtype, role)})  device {a:#0{w}x} "
                     f"({_decode(a, c.dtype, role)})  before {b:#0{w}x}  [{kind}]")
    if words.size > max_words:
        lines.append(f"     ... {words.size - max_words} more")
    lines.append("  python:    from ascend_ref.verify import open_dump; import ascend_ref as ar; "
                 f"c = open_dump({str(d.file)!r}).case({index}).case; "
                 "ub, info = c.call(ar, return_info=True)")
    return "\n".join(lines), sig


__all__ = ["verify", "Verifier", "Report", "Group", "explain", "repro_command",
           "device_outcome", "constraint_error", "DEFAULT_BATCH"]
