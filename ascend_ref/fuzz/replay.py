"""``ascend-ref fuzz --replay [NAME:]ID``: re-run one case on both sides and explain it.

A mismatch replays its shrunk (minimal) case unless ``--original`` is given; any other case
id is re-drawn from (seed, case id). The explanation names the case, the comparator, the
bit signature, every differing element (tensor, element, role, expected and actual bits and
values), the non-zero source data, and a Python snippet that reproduces the call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, TextIO, Tuple

import numpy as np

from .. import mask as masks
from ..case import Case, Outcome
from ..cli_args import is_path
from ..numerics import word_text
from . import comparators, exchange
from .campaign import Campaign
from .signature import _roles

if TYPE_CHECKING:
    from .store import Store

MAX_ROWS = 24


# ---------------------------------------------------------------------- places ------------

def where(case: Case, addr: int) -> str:
    """``"dst[3] (repeat 1, index)"``: the tensor element holding byte ``addr``."""
    s = np.dtype(case.dtype).itemsize
    for name, (a, n) in sorted(case.tensors.items(), key=lambda kv: kv[0] != "dst"):
        if a <= addr < a + n * s:
            k = (addr - a) // s
            role = _roles(case, addr)
            extra = ""
            lay = case.instruction.layout(case.dtype, case.option)
            if name == "dst" and lay.per_repeat:
                unit = lay.slot_bytes
                drs = int(case.params.get("dst_rep_stride", 1))
                if unit and drs:
                    extra = f"repeat {(addr - a) // (drs * unit)}, "
                elif unit:
                    extra = "every repeat (dst_rep_stride 0), "
            elif name == "work_tensor" and lay.entry_bytes:
                pair = lay.entry_bytes // s
                extra = f"stage-1 result of repeat {k // pair}, "
            return f"{name}[{k}] ({extra}{role})"
    return f"byte {addr} (outside every tensor)"


def mask_text(case: Case) -> str:
    m = case.mask
    if isinstance(m, masks.CounterMask):
        L = masks.lanes_per_repeat(case.dtype)
        n = int(m.count)
        r = masks.counter_repeats(n, L)
        return (f"{m!r} (counter mode: {r} repeats, the last on {n - (r - 1) * L} lanes; "
                f"repeat_time ignored)") if n > 0 else f"{m!r} (counter mode: no element)"
    if isinstance(m, int):
        return f"{m} (continuous: lanes 0..{m - 1})" if m > 0 else "0"
    words = masks.low_first(list(m), case.instruction.word_order)
    bits = 0
    for i, w in enumerate(words[:2]):
        bits |= int(w) << (64 * i)
    lanes = [i for i in range(128) if bits >> i & 1]
    shown = _ranges(lanes)
    return f"{[hex(w) for w in m]} (bit mode: lanes {shown})"


def _ranges(xs: List[int]) -> str:
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ", ".join(out) or "none"


def _words(ub: np.ndarray, s: int) -> np.ndarray:
    n = ub.size // s * s
    return ub[:n].view(f"uint{8 * s}")


def source_text(case: Case) -> List[str]:
    s = np.dtype(case.dtype).itemsize
    a, n = case.tensors.get("src", (0, 0))
    if a % s:
        return [f"src at byte {a} (misaligned)"]
    w = _words(case.ub, s)[a // s: a // s + n]
    nz = np.flatnonzero(w)
    if not nz.size:
        return [f"src: all {n} elements are +0"]
    lines = [f"src: {n} elements, {nz.size} non-zero (the rest +0):"]
    for i in nz[:MAX_ROWS]:
        lines.append(f"    src[{int(i)}] = {word_text(int(w[i]), case.dtype)}")
    if nz.size > MAX_ROWS:
        lines.append(f"    ... {nz.size - MAX_ROWS} more")
    return lines


def diff_rows(case: Case, e: Outcome, a: Outcome) -> List[str]:
    s = np.dtype(case.dtype).itemsize
    # both ran: they carry the UB and its byte masks
    assert e.ub is not None and e.written is not None and e.undefined is not None
    assert a.ub is not None and a.written is not None and a.undefined is not None
    und = e.undefined | a.undefined
    bad = np.flatnonzero((e.ub != a.ub) & ~und)
    words = sorted({int(b) // s * s for b in bad})
    rows = []
    for lo in words[:MAX_ROWS]:
        ev = int(e.ub[lo:lo + s].view(f"uint{8 * s}")[0])
        av = int(a.ub[lo:lo + s].view(f"uint{8 * s}")[0])
        bv = int(case.ub[lo:lo + s].view(f"uint{8 * s}")[0])
        dt = case.dtype if _roles(case, lo) == "value" else f"uint{8 * s}"
        rows.append(f"    {where(case, lo):<40} expected {word_text(ev, dt)}  actual "
                    f"{word_text(av, dt)}  (before {bv:#0{2 + 2 * s}x})")
    if len(words) > MAX_ROWS:
        rows.append(f"    ... {len(words) - MAX_ROWS} more element(s)")
    if not words:
        for name, m1, m2 in (("undefined", e.undefined, a.undefined),
                             ("written", e.written, a.written)):
            d = np.flatnonzero(m1 != m2)
            if d.size:
                rows.append(f"    {name} masks differ at {d.size} byte(s), first "
                            f"{where(case, int(d[0]))}: expected {bool(m1[d[0]])}, "
                            f"actual {bool(m2[d[0]])}")
    return rows


def python_snippet(case: Case, saved: Optional[str] = None) -> List[str]:
    """Python lines that rerun ``case``; a UB with many non-zero words is loaded from
    ``saved`` (the ``--save`` file), else the lines say to write it with ``--save``."""
    s = np.dtype(case.dtype).itemsize
    w = _words(case.ub, s)
    nz = np.flatnonzero(w)
    lines = ["import numpy as np, ascend_ref as ar",
             f"ub = np.zeros({case.ub.size}, np.uint8)"]
    if nz.size and nz.size <= 64:
        lines.append(f"ub.view(np.uint{8 * s})[{[int(i) for i in nz]}] = "
                     f"{[hex(int(w[i])) for i in nz]}".replace("'", ""))
    elif nz.size and saved:
        lines[1] = f"ub = np.load({str(saved)!r})['ub']   # written by --save"
    elif nz.size:
        lines[1:2] = [f"# the UB holds {nz.size} non-zero words: replay with --save FILE.npz "
                      f"to write it, then", "ub = np.load('FILE.npz')['ub']"]
    ins = case.instruction
    t = {k: f"ar.Tensor({a}, {ins.tensor_dtype(k, case.dtype)!r}, {n})"
         for k, (a, n) in case.tensors.items()}
    # a counter mask as the snippet's name for it (its repr alone is a NameError there)
    mask = case.mask if isinstance(case.mask, int) else f"ar.{case.mask!r}" \
        if isinstance(case.mask, masks.CounterMask) else \
        "[" + ", ".join(hex(x) for x in case.mask) + "]"
    args, kws = ins.call_args(case, lambda k: t[k])
    opt = ins.option.key if ins.option is not None else None
    text = [a if k in ins.operands else str(mask) if k == "mask" else
            f"{k}={getattr(a, 'value', a)!r}" if k == opt and isinstance(a, bool) else
            repr(getattr(a, "value", a)) for k, a in zip(ins.signature, args)]
    kw = ", ".join([f"{k}={getattr(v, 'value', v)!r}" for k, v in kws.items()
                    if k != "saturate"] + [f"chip={case.chip!r}"] +
                   [f"saturate={case.saturate}" for k in kws if k == "saturate"])
    call = f"ar.{ins.family}.{case.api}(ub, {', '.join(text)}, {kw})"
    lines.append(f"ub, info = {call[:-1]}, return_info=True)")
    lines.append(f"# the scalar oracle takes the same arguments: ar.oracle.{case.api}(ub, ...)")
    return lines


def explain(case: Case, expected: Outcome, actual: Outcome,
            labels: Tuple[str, str] = ("expected", "actual"), title: str = "",
            saved: Optional[str] = None) -> str:
    verdict, sig = comparators.compare(case, expected, actual)
    lines = [title] if title else []
    lines.append(f"case: {case.describe()}")
    if case.tags.get("validity") not in (None, "valid"):
        lines.append(f"  drawn to break a rule: {case.tags['validity']}")
    lines.append(f"mask: {mask_text(case)}")
    lines += source_text(case)
    lines.append(f"{labels[0]} (expected): {_outcome_text(expected)}")
    lines.append(f"{labels[1]} (actual): {_outcome_text(actual)}")
    if verdict == "pass":
        lines.append("verdict: the two sides agree bit for bit")
    elif verdict == "skip":
        lines.append("verdict: skipped by the device")
    else:
        lines.append(f"verdict: MISMATCH — signature: {sig}")
        if not isinstance(expected, (comparators.Crash, comparators.Skip)) and \
                not isinstance(actual, (comparators.Crash, comparators.Skip)) and \
                expected.code is None and actual.code is None:
            lines.append("differing elements:")
            lines += diff_rows(case, expected, actual)
        for o in (expected, actual):
            if isinstance(o, comparators.Crash):
                lines.append(o.trace)
    lines.append("reproduce in Python:")
    lines += ["    " + x for x in python_snippet(case, saved)]
    return "\n".join(lines)


def _outcome_text(o: Outcome) -> str:
    if isinstance(o, (comparators.Crash, comparators.Skip)):
        return repr(o)
    if o.code is not None:
        return f"error {o.code.name}"
    assert o.written is not None and o.undefined is not None
    return f"ok, wrote {int(o.written.sum())} byte(s), {int(o.undefined.sum())} undefined"


# ---------------------------------------------------------------------- resolve -----------

def resolve(store: Optional[Store], ref: str, camp_arg: Optional[str],
            db: Optional[str] = None) -> Tuple[Campaign, int]:
    """``(Campaign, case_id)`` for ``--replay [NAME:]ID``: NAME is a campaign id of the
    results file (``tie_rule-0bd1145a9a``: that campaign) or a campaign name (its most
    recently run campaign of that name); no NAME: the most recently run campaign (``db``:
    the results file's path, named when there is none)."""
    name, _, num = ref.rpartition(":")
    try:
        case_id = int(num)
    except ValueError:
        raise ValueError(f"--replay {ref!r}: expected ID or NAME:ID (an integer case id)") \
            from None
    if case_id < 0:
        raise ValueError(f"--replay {ref!r}: the case id must be >= 0")
    if camp_arg:
        camp = Campaign.load(camp_arg)
        if name and name not in (camp.name, camp.id):
            raise ValueError(f"--replay {ref}: the campaign file is {camp.name!r}")
        return camp, case_id
    if store is None and not name:
        raise ValueError(f"--replay {ref}: no results file {db} to find its campaign in; give "
                         f"the campaign too (NAME:{ref}, or the campaign file)")
    by_id = store.campaign_row(name) if store and name else None
    rows = [by_id] if by_id else store.find_campaigns(name or None) if store else []
    if not rows:
        if name:
            try:
                return Campaign.load(name), case_id
            except FileNotFoundError:
                pass
        raise ValueError(f"--replay {ref}: no campaign{' named ' + name if name else ''} "
                         f"in the results file; give the campaign file too")
    row = rows[0]
    camp = Campaign.from_dict(json.loads(row["config"]), source=row["source"],
                              where=row["path"] or row["name"])
    camp.path = row["path"]
    if camp.id != row["id"]:
        raise ValueError(f"campaign {row['name']}: stored results are for {row['id']}, this "
                         f"package draws {camp.id} from the stored campaign (package changed?)")
    return camp, case_id


def replay(ref: str, db: str, camp_arg: Optional[str] = None, *, original: bool = False,
           save: Optional[str] = None, out: Optional[TextIO] = None) -> int:
    import sys

    from .store import Store

    if not isinstance(ref, (str, int)) or isinstance(ref, bool):
        raise ValueError(f"replay: ref = {ref!r}: expected ID or NAME:ID (e.g. 'default:17')")
    if not is_path(db):
        raise ValueError(f"replay: db = {db!r}: expected the results file (str or os.PathLike)")
    out = out or sys.stdout
    store = Store(db) if Path(db).exists() else None
    camp, cid = resolve(store, str(ref), camp_arg, db)
    m = store.mismatch(camp.id, cid) if store else None
    if m and m["shrunk"] is not None and not original:
        case = exchange.case_from_bytes(m["shrunk"])
        title = (f"replay {camp.name}:{cid} — minimal case, shrunk in {m['shrink_steps']} steps "
                 f"({m['shrink_evals']} evaluations) from:\n  {m['description']}\n"
                 f"  (original signature: {m['signature']}; --original replays it)")
    else:
        case = camp.case(cid)
        title = f"replay {camp.name}:{cid} — case drawn from seed {camp.seed}, case id {cid}"
        if m:
            title += f" (recorded mismatch: {m['signature']})"
    cmp = comparators.make(camp)
    exp, act = cmp.run([case])
    if save:
        try:
            exchange.save_case(case, save)
        except OSError as e:
            raise ValueError(f"--save {save}: cannot write: {e.strerror or e}") from None
    print(explain(case, exp[0], act[0], (cmp.expected_label, cmp.actual_label), title,
                  saved=save), file=out)
    if save:
        print(f"case saved to {save}", file=out)
    verdict, _ = comparators.compare(case, exp[0], act[0])
    return 1 if verdict == "mismatch" else 0
