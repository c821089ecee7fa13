"""Run a campaign: draw cases in chunks, run both sides, commit, shrink, report.

:func:`run_campaign` is what ``ascend-ref fuzz CAMPAIGN`` does. Each chunk of case ids is
drawn from (seed, case id), run on the JAX side in one :func:`ascend_ref.batch.run_cases`
call and on the comparator's side, judged by bit signature and committed in one SQLite
transaction (:mod:`ascend_ref.fuzz.store`). Then every mismatch not yet shrunk is shrunk
(:mod:`ascend_ref.fuzz.shrink`) within the campaign's time budget, and the report is printed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from ..provenance import describe, software
from . import comparators, coverage, exchange
from .campaign import Campaign
from .compare import diff, spr_detail
from .shrink import shrink
from .store import Store, StoreError

if TYPE_CHECKING:
    from ..case import Case, Outcome

DEFAULT_DB = "ascend-ref-fuzz.sqlite"


def _code(o: Outcome) -> str:
    if isinstance(o, comparators.Crash):
        return "crash"
    if isinstance(o, comparators.Skip):
        return o.verdict
    return "ok" if o.code is None else o.code.name


def _detail(e: Outcome, a: Outcome, case: Optional[Case] = None) -> str:
    for o in (e, a):
        if isinstance(o, comparators.Crash):
            return f"{o.side} crashed: {o.error}\n{o.trace}"
        if isinstance(o, comparators.Skip):
            return f"device: {o.note}"
    try:
        return diff(e, a) or (spr_detail(case, e, a) if case is not None else "")
    except Exception as ex:  # noqa: BLE001
        return f"(diff failed: {ex})"


class _Progress:
    """tqdm on a terminal; a line per chunk on stderr otherwise; nothing with ``quiet``."""

    def __init__(self, total: int, initial: int, quiet: bool, desc: str) -> None:
        self.bar = None
        self.quiet, self.total, self.n, self.desc = quiet, total, initial, desc
        self.t0, self.start = time.time(), initial
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, unit=" cases", desc=desc,
                            dynamic_ncols=True, smoothing=0.1)

    def update(self, k: int) -> None:
        self.n += k
        if self.bar is not None:
            self.bar.update(k)

    def chunk_done(self, mismatches: Optional[int] = None) -> None:
        if self.bar is not None:
            if mismatches is not None:
                self.bar.set_postfix(mismatches=mismatches, refresh=False)
        elif not self.quiet:
            dt = max(time.time() - self.t0, 1e-9)
            tail = "" if mismatches is None else f", {mismatches} mismatch(es)"
            print(f"  {self.desc} {self.n}/{self.total} cases, {(self.n - self.start) / dt:.1f} "
                  f"cases/s{tail}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


FIRST_CHUNK = 8


def chunk_ids(todo: list, chunk: int) -> list:
    """Case ids in commit units: 8, 16, 32, ... up to ``chunk``, then ``chunk`` each.

    The first units are small so that a run killed early (the first chunk compiles most
    kernels) still keeps its first results; later units are large for throughput."""
    out, k, size = [], 0, min(FIRST_CHUNK, max(chunk, 1))
    while k < len(todo):
        out.append(todo[k:k + size])
        k += size
        size = min(size * 2, chunk)
    return out


def checked(camp: Any) -> None:
    """The checks of a campaign file, on a :class:`Campaign` made in Python (or changed
    after loading): a ValueError naming the key (``chunk = 0`` looped for ever, ``cases =
    -1`` ran nothing without a word, an unknown API failed deep in the pool draw)."""
    if not isinstance(camp, Campaign):
        raise ValueError(f"campaign: {type(camp).__name__}: expected a Campaign "
                         f"(Campaign.load(name or path), or Campaign(name=..., ...))")
    try:
        Campaign.from_dict(camp.to_dict(), where=f"campaign {camp.name!r}")
    except (TypeError, AttributeError) as e:        # a field of a type no file could hold
        raise ValueError(f"campaign {camp.name!r}: {e}") from None


def run_campaign(camp: Campaign, db: Optional[str] = None, *, fresh: bool = False,
                 quiet: bool = False, do_shrink: Optional[bool] = None,
                 out: Optional[TextIO] = None, distributed: Optional[bool] = None) -> dict:
    """Run (or resume) ``camp``; print the report on ``out``; return its summary dict.

    Multi-process (``distributed``; default: when :func:`ascend_ref.scale.init_distributed`
    joined several processes): process 0 owns the results store; every chunk of case ids is
    split between the processes (:func:`ascend_ref.scale.my_share`), each runs its share and
    the judged rows are gathered to process 0, which commits the whole chunk in one
    transaction — one store, every case id exactly once. Process 0 then shrinks and prints
    the report; the other processes return the same counts. See ``docs/scale.md``.
    """
    from .. import scale

    checked(camp)
    out = out or sys.stdout
    db = db or camp.db or DEFAULT_DB
    multi = scale.process_count() > 1 if distributed is None else distributed
    me, nproc = (scale.process_index(), scale.process_count()) if multi else (0, 1)
    lead = me == 0
    store = None
    camp.pool()
    failed = None
    if lead:
        try:
            store = Store(db)
            store.register(camp)
            if fresh:
                store.reset(camp.id)
            done = store.done_ids(camp.id)
            todo = [i for i in range(camp.cases) if i not in done]
            start = (len(done & set(range(camp.cases))), store.counts(camp.id)["mismatch"])
        except Exception as e:          # the other processes stop too, with the same error
            if nproc == 1:
                raise
            failed = e
    if nproc > 1:
        msg = scale.broadcast_object((todo, start) if lead and failed is None else
                                     (None, f"{type(failed).__name__}: {failed}") if lead
                                     else None)
        if failed is not None:
            raise failed
        if msg[0] is None:
            raise StoreError(f"process 0 could not open the results file: {msg[1]}")
        todo, start = msg
    say = (lambda *a: None) if quiet or not lead else \
        (lambda *a: print(*a, file=out, flush=True))
    say(f"{camp.summary()}" + (f" — {nproc} processes" if nproc > 1 else ""))
    if start[0]:
        say(f"resuming: {start[0]} of {camp.cases} cases already in "
            f"{db}" + ("" if todo else " — complete (--fresh runs it again; --cases N or "
                                         "--seed S draws new cases)"))
    cmp = comparators.make(camp)
    run_id = store.start_run(camp.id, os.getpid(), software(backend=True)) \
        if store is not None else None
    t0 = time.time()
    mism = start[1]
    prog = _Progress(camp.cases, camp.cases - len(todo), quiet or not lead, camp.name)
    ran = 0
    from .. import batch

    kernels_before = set(batch.EXECUTABLES)
    try:
        for ids in chunk_ids(todo, camp.chunk * nproc):
            mine = ids[me::nproc]
            rows = _judge(camp, cmp, mine, prog.update)
            if nproc > 1:
                rows = sorted((r for part in scale.allgather_objects(rows) for r in part),
                              key=lambda r: r["case_id"])
                prog.update(len(rows) - len(mine))
            if lead:
                assert store is not None and run_id is not None     # opened by process 0
                ran += store.commit_chunk(camp.id, run_id, rows, time.time() - t0)
            mism += sum(r["verdict"] == "mismatch" for r in rows)
            prog.chunk_done(mism)
    finally:
        prog.close()
    run_seconds = time.time() - t0
    if not lead:
        cmp.close()
        return {"campaign": camp.id, "db": db, "ran": 0, "seconds": run_seconds,
                "total_seconds": time.time() - t0, "mismatch": mism, "process": me}
    assert store is not None and run_id is not None
    shrink_note = ""
    if (camp.shrink.enabled if do_shrink is None else do_shrink):
        shrink_note = shrink_pending(camp, store, cmp, quiet=quiet)
    store.finish_run(run_id, time.time() - t0)
    cmp.close()
    summary = {"campaign": camp.id, "db": db, "ran": ran, "seconds": run_seconds,
               "total_seconds": time.time() - t0,
               "kernels": len(batch.EXECUTABLES - kernels_before), **store.counts(camp.id)}
    print(report(camp, store, session=summary, note=shrink_note), file=out, flush=True)
    store.close()
    return summary


def _judge(camp: Campaign, cmp: comparators.Comparator, ids: Sequence[int],
           progress: Callable[[int], None]) -> list:
    """Draw, run and judge the cases ``ids``: one store row each."""
    cases = [camp.case(i) for i in ids]
    if not cases:
        return []
    exp, act = cmp.run(cases, progress=progress)
    rows = []
    for i, c, e, a in zip(ids, cases, exp, act):
        verdict, sig = comparators.compare(c, e, a)
        row = {"case_id": i, "api": c.api, "chip": c.chip, "dtype": c.dtype,
               "option": None if c.option is None else str(c.option),
               "expected": _code(e), "actual": _code(a), "verdict": verdict,
               "signature": sig, "bins": {**coverage.case_bins(c, _code(e)),
                                          **_spr_bins(c, e)}}
        if verdict == "mismatch":
            meta = exchange.case_meta(c)
            row["mismatch"] = {"signature": sig, "description": c.describe(),
                               "detail": _detail(e, a, c), "original": json.dumps(meta)}
        rows.append(row)
    return rows


def _spr_bins(c: Case, e: Outcome) -> dict:
    """The register bins (:func:`~ascend_ref.fuzz.coverage.spr_bins`) of an outcome that
    carries registers (a crash or skip carries none)."""
    if isinstance(e, (comparators.Crash, comparators.Skip)):
        return {}
    return coverage.spr_bins(c, e)


def shrink_pending(camp: Campaign, store: Store, cmp: Optional[comparators.Comparator] = None,
                   *, quiet: bool = False, budget_s: Optional[float] = None) -> str:
    """Shrink every mismatch of ``camp`` not shrunk yet, within the time budget."""
    pending = store.pending_shrinks(camp.id)
    if not pending:
        return ""
    # one mismatch of each signature first, then of each (signature, API), then the rest:
    # if the budget runs out, every group still has a minimal repro
    info = {m["case_id"]: (m["signature"], m["description"].split("<")[0])
            for m in store.mismatches(camp.id)}
    seen_sig, seen_api = set(), set()
    rank = {}
    for cid in pending:
        sig, api = info.get(cid, ("", ""))
        rank[cid] = 0 if sig not in seen_sig else (1 if (sig, api) not in seen_api else 2)
        seen_sig.add(sig)
        seen_api.add((sig, api))
    pending.sort(key=lambda cid: (rank[cid], cid))
    cmp = cmp or comparators.make(camp)
    budget = camp.shrink.budget_s if budget_s is None else budget_s
    # budget 0: shrink nothing in this run; inf: no clock at all, only max_evaluations bounds
    # the work (what tests use: their outcome must not depend on the machine's speed)
    deadline = None if budget == float("inf") else time.time() + budget
    prog = _Progress(len(pending), 0, quiet, "shrunk")

    def evaluate(cases: List[Case]) -> List[Optional[str]]:
        return comparators.evaluate(cmp, cases)

    done = 0
    try:
        for cid in pending:
            if budget <= 0 or (deadline is not None and time.time() > deadline):
                break
            m = store.mismatch(camp.id, cid)
            assert m is not None                # pending ids are stored mismatches
            case = camp.case(cid)
            res = shrink(case, m["signature"], evaluate, max_evals=camp.shrink.max_evaluations,
                         deadline=deadline, cut_ub=camp.shrink.cut_ub)
            store.save_shrunk(camp.id, cid, exchange.case_to_bytes(res.case),
                              res.case.describe(), res.steps, res.evals, res.seconds)
            done += 1
            prog.update(1)
            if done % 10 == 0:
                prog.chunk_done()
    finally:
        prog.close()
    left = len(pending) - done
    if left:
        return (f"shrink budget ({budget:.0f} s) spent: {left} mismatch(es) not shrunk yet; "
                f"run the campaign again to continue")
    return ""


# ---------------------------------------------------------------------- report ------------

def replay_ref(camp: Campaign, case_id: int, db: str, store: Optional[Store] = None) -> str:
    """The command that replays case ``case_id`` of ``camp``: ``--replay NAME:ID`` when the
    results file holds no other campaign of that name (a name replays its most recently run
    campaign), else ``--replay CAMPAIGN-ID:ID``, which names this one alone (the same name
    run with another ``--seed`` or ``--path``, or from an edited file)."""
    extra = "" if db == DEFAULT_DB else f" --db {db}"
    others = store is not None and any(r["id"] != camp.id
                                       for r in store.find_campaigns(camp.name))
    return f"ascend-ref fuzz{extra} --replay {camp.id if others else camp.name}:{case_id}"


def _software_lines(runs: List[Tuple[Optional[Dict[str, str]], int, int]]) -> List[str]:
    """The report's account of what computed the results: one line where every run recorded
    the same software, else a line for each (a campaign resumed after an upgrade holds
    verdicts of two references: a mismatch may belong to one of them only)."""
    def one(sw: Optional[Dict[str, str]]) -> str:
        return "not recorded (a run before runs recorded it)" if sw is None else describe(sw)

    if not runs:
        return []
    if len(runs) == 1:
        return [f"software: {one(runs[0][0])}"]
    out = [f"software: {len(runs)} different across the runs (each stored its own cases):"]
    out += [f"  {one(sw)}: {n} run(s), {k} case(s)" for sw, n, k in runs]
    return out


def report(camp: Campaign, store: Store, session: Optional[dict] = None, note: str = "",
           detail: bool = False) -> str:
    c = store.counts(camp.id)
    row = store.campaign_row(camp.id)
    target = row["cases"] if row else camp.cases
    lines = ["", f"== campaign {camp.name} ({camp.id}) — {camp.compare.describe()} =="]
    done = f"{c['total']} of {target} done" if c["total"] <= target else \
        f"{c['total']} done (more than the {target} asked for: an earlier run asked for more)"
    lines.append(f"cases: {done} — {c['pass']} pass, "
                 f"{c['mismatch']} mismatch, {c['skip']} skipped")
    lines += _software_lines(store.run_software(camp.id))
    if session:
        rate = session["ran"] / session["seconds"] if session["seconds"] > 0 else 0.0
        lines.append(f"this run: {session['ran']} cases in {session['seconds']:.1f} s "
                     f"({rate:.1f} cases/s, JAX compilation included; "
                     f"{len(camp.pool())} case templates on "
                     f"{session.get('kernels', '?')} compiled kernels), "
                     f"total {session['total_seconds']:.1f} s")
    lines.append("")
    lines.append(coverage.table(store.coverage(camp.id), coverage.model(camp), detail=detail))
    lines.append("")
    ms = store.mismatches(camp.id)
    if not ms:
        lines.append("mismatches: none")
    else:
        groups = defaultdict(list)
        for m in ms:
            groups[m["signature"]].append(m)
        lines.append(f"mismatches: {len(ms)} in {len(groups)} group(s) by bit signature")
        lines.append(f"  {'signature':<40}{'cases':>6}{'shrunk':>7}  APIs / smallest repro")
        db = store.path
        for sig, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            apis = Counter(m["description"].split("<")[0] for m in items)
            shrunk = [m for m in items if m["shrunk"]]
            best = min(shrunk or items, key=lambda m: (m["shrunk_size"] or 1 << 40, m["case_id"]))
            lines.append(f"  {sig:<40}{len(items):>6}{len(shrunk):>7}  "
                         + ", ".join(f"{a}({n})" for a, n in apis.most_common(4)))
            lines.append(f"  {'':<53}{replay_ref(camp, best['case_id'], db, store)}")
            if best["shrunk"]:
                lines.append(f"  {'':<53}{best['shrunk_description']}")   # never cut
    if note:
        lines.append(note)
    lines.append(f"results: {store.path} (campaign id {camp.id})")
    return "\n".join(lines)
