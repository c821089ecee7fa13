"""Shrink a mismatching case to a minimal one that keeps the same bit signature.

Deterministic passes, each proposing a batch of simpler candidates (evaluated together, so
the JAX side runs batched and a device command runs once per batch); a candidate is accepted
when its signature equals the original's:

1. **layout** — tensors packed from address 0, exact sizes, the rest of the UB zero;
2. **repeat** — keep one repeat (the first or the last), else the first or second half;
3. **strides** — src_rep_stride 8, src_blk_stride 1, dst_rep_stride 1 (contiguous);
4. **mask** — fewer lanes (count: smallest count; bits: clear groups of lanes; then a count);
5. **data** — zero groups of elements (delta debugging), then replace the rest by simple
   values (1, -1, 2, 0.5, a canonical NaN, +-inf, -0);
6. **cut** — the UB cut to a power of two (at least 4 KiB).

Passes 2–5 repeat until nothing changes. The UB keeps its length until the last step, so the
JAX side reuses compiled shapes across candidates and across mismatches. ``max_evals`` and ``deadline`` bound the work;
the best case so far is returned either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from .. import mask as masks
from ..batch_args import flag, is_int
from ..case import Case
from ..constraints import Code, ConstraintError

_SIMPLE = {
    2: [0x3C00, 0xBC00, 0x4000, 0x3800, 0x7E00, 0x7C00, 0xFC00, 0x8000],
    4: [0x3F800000, 0xBF800000, 0x40000000, 0x3F000000, 0x7FC00000, 0x7F800000, 0xFF800000,
        0x80000000],
}
_SIMPLE_INT = {2: [1, 0xFFFF, 2], 4: [1, 0xFFFFFFFF, 2]}
_MAX_EXTENT = 262144
CUT_MIN = 4096


@dataclass
class Result:
    case: Case
    signature: str
    steps: int = 0
    evals: int = 0
    seconds: float = 0.0
    log: List[str] = field(default_factory=list)


def clone(c: Case, **kw: Any) -> Case:
    d = dict(api=c.api, chip=c.chip, dtype=c.dtype, option=c.option,
             mask=c.mask if isinstance(c.mask, (int, masks.CounterMask)) else list(c.mask),
             params=dict(c.params),
             tensors=dict(c.tensors), ub=c.ub.copy(), saturate=c.saturate, tags=dict(c.tags))
    d.update(kw)
    return Case(**d)


def _size(c: Case) -> int:
    return np.dtype(c.dtype).itemsize


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def needs(c: Case) -> Optional[dict]:
    """Bytes each tensor needs for the case's parameters (None if they are out of range)."""
    p, s = c.params, _size(c)
    r = max(int(p["repeat"]), 1)
    rs = int(p["src_rep_stride"])
    ins = c.instruction
    try:
        lay = ins.layout(c.dtype, getattr(c.option, "value", c.option))
    except (KeyError, ValueError):
        return None
    out = {"src": ins.src_footprint(r, rs, p.get("src_blk_stride"), c.dtype)}
    if lay.per_repeat:                      # one slot per repeat (a TIK dst is fixed)
        out["dst"] = lay.dst_bytes(r, int(p["dst_rep_stride"]))
    if ins.work_need is not None:
        out["work_tensor"] = ins.work_elements(r, c.option, c.dtype) * s
    if any(v > _MAX_EXTENT or v < 0 for v in out.values()):
        return None
    return {k: _round_up(v, 32) // s for k, v in out.items()}


def relayout(c: Case, exact: bool = True, cut: bool = False,
             separate: bool = False) -> Optional[Case]:
    """Tensors packed from address 0 in address order (an overlapping tensor keeps its offset
    to the one it overlaps; each keeps its address modulo 32), bytes copied, everything else
    zero. The UB keeps its length (compiled shapes are reused) unless ``cut``: then it is cut
    to a power of two, at least :data:`CUT_MIN` bytes. ``separate``: no tensor overlaps."""
    s = _size(c)
    need = needs(c) if exact else {}
    if need is None:
        return None
    order = sorted(c.tensors, key=lambda k: (c.tensors[k][0], k))
    new: dict = {}
    moved: dict = {}
    end = 0
    placed: list = []
    for k in order:
        a, n = c.tensors[k]
        if a < 0 or n < 0:
            return None
        n2 = need[k] if exact and k in need and n >= need[k] else n
        host = None if separate else next(
            (h for h in placed if c.tensors[h][0] <= a < c.tensors[h][0] + c.tensors[h][1] * s),
            None)
        if host is not None:
            a2 = new[host][0] + (a - c.tensors[host][0])
        else:
            a2 = _round_up(end, 32) + a % 32
        new[k] = (a2, n2)
        moved[k] = (a, a2, min(n, n2) * s)
        end = max(end, a2 + n2 * s)
        placed.append(k)
    size = max(CUT_MIN, 1 << max(end + 32 - 1, 1).bit_length()) if cut else c.ub.size
    if cut and size >= c.ub.size:
        return None
    if end > size:
        return None
    ub = np.zeros(size, np.uint8)
    for k in order:                       # hosts first, so overlapping tensors keep their bytes
        a, a2, nb = moved[k]
        nb = max(0, min(nb, c.ub.size - a, size - a2))
        if nb:
            ub[a2:a2 + nb] = c.ub[a:a + nb]
    return clone(c, tensors=new, ub=ub)


def _rebase(c: Case, h: int) -> Optional[Case]:
    """Drop the first ``h`` repeats: src (and dst) start where repeat ``h`` started."""
    p, s = c.params, _size(c)
    shift = h * int(p["src_rep_stride"]) * 32
    a, n = c.tensors["src"]
    if shift % s or shift // s > n:
        return None
    t = dict(c.tensors)
    t["src"] = (a + shift, n - shift // s)
    lay = c.instruction.layout(c.dtype, getattr(c.option, "value", c.option))
    if lay.per_repeat:
        slot = lay.slot_bytes
        da, dn = t["dst"]
        dshift = h * int(p["dst_rep_stride"]) * slot
        if dshift % s or dshift // s > dn:
            return None
        t["dst"] = (da + dshift, dn - dshift // s)
    q = dict(p, repeat=int(p["repeat"]) - h)
    return clone(c, params=q, tensors=t)


def _mask_lanes(c: Case) -> Optional[List[int]]:
    if isinstance(c.mask, (int, masks.CounterMask)):
        return None
    w = list(c.mask)
    order = c.instruction.word_order
    if order == "tik" and len(w) != 2:
        return None
    w = masks.low_first(w, order)
    if len(w) > 2:
        return None
    bits = w[0] | ((w[1] if len(w) > 1 else 0) << 64)
    return [i for i in range(128) if bits >> i & 1]


def _mask_from_lanes(c: Case, lanes: Sequence[int]) -> List[int]:
    bits = 0
    for i in lanes:
        bits |= 1 << i
    lo, hi = bits & (2**64 - 1), bits >> 64
    if c.instruction.word_order == "tik":
        return masks.low_first([lo, hi], "tik")
    return [lo, hi] if len(c.mask) == 2 else [lo]


def _shown(v: Any) -> str:
    """A short description of what ``evaluate`` returned."""
    if isinstance(v, (list, tuple)):
        kinds = sorted({type(x).__name__ for x in v})
        return f"a {type(v).__name__} of {len(v)}" + (f" ({', '.join(kinds)})" if v else "")
    return type(v).__name__


class Shrinker:
    def __init__(self, evaluate: Callable[[List[Case]], List[Optional[str]]], signature: str, *,
                 max_evals: int = 3000, deadline: Optional[float] = None,
                 cut_ub: bool = True) -> None:
        def bad(name: str, value: Any, allowed: str) -> ConstraintError:
            return ConstraintError(Code.BAD_ARGUMENT, api="shrink", param=name, value=value,
                                   allowed=allowed)

        if not callable(evaluate):
            raise bad("evaluate", type(evaluate).__name__,
                      "a function: list of cases -> list of signatures (str or None)")
        if not isinstance(signature, str):
            raise bad("signature", signature, "a str (the mismatch's bit signature)")
        if not is_int(max_evals) or max_evals < 1:
            raise bad("max_evals", max_evals, "an int >= 1")
        if deadline is not None and (isinstance(deadline, (bool, np.bool_)) or
                                     not isinstance(deadline, (int, float, np.number))
                                     or deadline != deadline):
            raise bad("deadline", deadline, "None or a time.time() value (a number)")
        cut_ub = flag("shrink", "cut_ub", cut_ub)
        self.evaluate_batch, self.sig, self.cut_ub = evaluate, signature, cut_ub
        self.max_evals, self.deadline = int(max_evals), deadline
        self.evals = self.steps = 0
        self.log: List[str] = []

    def out_of_budget(self) -> bool:
        return self.evals >= self.max_evals or (self.deadline is not None and
                                                time.time() > self.deadline)

    def keeps(self, cands: Sequence[Optional[Case]]) -> List[bool]:
        live = [(i, c) for i, c in enumerate(cands) if c is not None]
        ok = [False] * len(cands)
        if not live or self.out_of_budget():
            return ok
        room = self.max_evals - self.evals
        live = live[:max(room, 1)]
        sigs = self.evaluate_batch([c for _, c in live])
        if not isinstance(sigs, (list, tuple)) or len(sigs) != len(live) or \
                not all(s is None or isinstance(s, str) for s in sigs):
            # [] or a wrong type matched nothing: every candidate rejected, the budget spent
            raise ConstraintError(Code.BAD_ARGUMENT, api="shrink", param="evaluate",
                                  value=f"returned {_shown(sigs)}",
                                  allowed=f"a list of {len(live)} signature(s) (str or None), "
                                  f"one per candidate case")
        self.evals += len(live)
        for (i, _), s in zip(live, sigs):
            ok[i] = s == self.sig
        return ok

    def first(self, cur: Case, cands: Sequence[Optional[Case]], what: str) -> Case:
        for c, k in zip(cands, self.keeps(cands)):
            if k and c is not None:
                self.steps += 1
                self.log.append(what)
                return c
        return cur

    # ------------------------------------------------------------------ passes ------------
    def layout(self, c: Case, cut: bool = False) -> Case:
        cands = [relayout(c, True, cut, separate=True), relayout(c, True, cut),
                 relayout(c, False, cut)]
        cands = [x for x in cands if x is not None and not (
            x.tensors == c.tensors and np.array_equal(x.ub, c.ub))]
        return self.first(c, cands, "cut UB" if cut else "layout") if cands else c

    def repeat(self, c: Case) -> Case:
        while not self.out_of_budget():
            r = int(c.params["repeat"])
            ins = c.instruction
            hi = max(ins.repeat_range(o, c.dtype)[1] for o in ins.options())
            if r <= 1 or r > hi:
                return c
            h = r // 2
            # one repeat first (one compiled shape), halves only if neither single one keeps it
            nxt = self.first(c, [clone(c, params=dict(c.params, repeat=1)), _rebase(c, r - 1)],
                             f"repeat {r} -> 1")
            if nxt is c:
                nxt = self.first(c, [clone(c, params=dict(c.params, repeat=r - h)),
                                     _rebase(c, r - h)], f"repeat {r} -> {r - h}")
            if nxt is c:
                return c
            c = self.layout(nxt)
        return c

    def strides(self, c: Case) -> Case:
        want = {"src_rep_stride": 8, "src_blk_stride": 1, "dst_rep_stride": 1}
        for k, v in want.items():
            if k in c.params and int(c.params[k]) != v and not self.out_of_budget():
                cand = clone(c, params=dict(c.params, **{k: v}))
                c = self.first(c, [relayout(cand, True), cand], f"{k} -> {v}")
        return c

    def mask(self, c: Case) -> Case:
        if isinstance(c.mask, masks.CounterMask):       # counter mode: fewer elements
            n = int(c.mask.count)
            L = masks.lanes_per_repeat(c.dtype)
            counts = sorted({x for x in (1, 2, L, L + 1, n // 2, n - 1) if 1 <= x < n})
            c = self.first(c, [clone(c, mask=masks.CounterMask(x)) for x in counts],
                           f"counter mask {n} -> fewer elements")
            n = int(c.mask.count)
            if 1 <= n <= L and "repeat" in c.params:      # one repeat: the same call in
                c = self.first(c, [clone(c, mask=n, params=dict(c.params, repeat=1))],
                               "counter mask -> continuous mask")   # normal mode
            if isinstance(c.mask, int):
                return self.mask(c)
            return c
        if isinstance(c.mask, int):
            m = c.mask
            if m <= 1:
                return c
            counts = sorted({x for x in (1, 2, 4, 8, 16, 32, 64, m // 2, m - 1) if 1 <= x < m})
            return self.first(c, [clone(c, mask=x) for x in counts], f"mask {m} -> fewer lanes")
        lanes = _mask_lanes(c)
        if lanes is None:
            return c
        g = max(1, len(lanes) // 2)
        while g >= 1 and len(lanes) > 1 and not self.out_of_budget():
            groups = [lanes[i:i + g] for i in range(0, len(lanes), g)]
            cands = [clone(c, mask=_mask_from_lanes(c, [x for x in lanes if x not in grp]))
                     for grp in groups if len(grp) < len(lanes)]
            ok = self.keeps(cands)
            drop = [x for grp, k in zip(groups, ok) if k for x in grp]
            if len(drop) == len(lanes):              # never an empty mask (a different rule)
                drop = groups[ok.index(True)]
            if drop:
                both = clone(c, mask=_mask_from_lanes(c, [x for x in lanes if x not in drop]))
                if sum(ok) > 1 and self.keeps([both])[0]:
                    c = both
                else:
                    c = cands[ok.index(True)]
                self.steps += 1
                self.log.append("mask: fewer lanes")
                lanes = _mask_lanes(c)
                assert lanes is not None              # still a bit mask of the same form
            else:
                g //= 2
        lanes = _mask_lanes(c)
        if lanes:
            c = self.first(c, [clone(c, mask=max(lanes) + 1)], "mask -> count mode")
        return c

    def data(self, c: Case) -> Case:
        s = _size(c)
        if c.ub.size % s:
            return c
        bt = np.dtype(f"uint{8 * s}")
        words = c.ub.view(bt)
        nz = np.flatnonzero(words)
        g = max(1, len(nz) // 2)
        while len(nz) and not self.out_of_budget():
            groups = [nz[i:i + g] for i in range(0, len(nz), g)]
            kept = self.words_kept(c, bt, [(grp, 0) for grp in groups])
            if kept is not None:
                c = kept
                self.steps += 1
                self.log.append("data: zeroed elements")
                nz = np.flatnonzero(c.ub.view(bt))
                g = min(g, max(1, len(nz) // 2))
            elif g == 1:
                break
            else:
                g = max(1, g // 2)
        return self.simplify(c)

    def words_kept(self, c: Case, bt: np.dtype, edits: Sequence[tuple]) -> Optional[Case]:
        """Each edit ``(words, value)`` (an index or index array into ``c.ub`` viewed as
        ``bt``) alone; where some keep the failure, all those together, or the first of them
        alone when the combination loses it. None when no edit keeps it."""
        def edited(chosen: Sequence[tuple]) -> Case:
            ub = c.ub.copy()
            for at, value in chosen:
                ub.view(bt)[at] = value
            return clone(c, ub=ub)

        cands = [edited([e]) for e in edits]
        ok = self.keeps(cands)
        if not any(ok):
            return None
        both = edited([e for e, k in zip(edits, ok) if k])
        return both if sum(ok) == 1 or self.keeps([both])[0] else cands[ok.index(True)]

    def simplify(self, c: Case) -> Case:
        s = _size(c)
        if c.ub.size % s or s not in _SIMPLE:
            return c
        bt = np.dtype(f"uint{8 * s}")
        simple = _SIMPLE[s] if c.dtype.startswith("float") else _SIMPLE_INT[s]
        rank = {v: i for i, v in enumerate(simple)}
        for k, v in enumerate(simple):
            if self.out_of_budget():
                break
            words = c.ub.view(bt)
            idx = [int(i) for i in np.flatnonzero(words) if rank.get(int(words[i]), 99) > k]
            if not idx:
                continue
            kept = self.words_kept(c, bt, [(i, v) for i in idx[:256]])
            if kept is not None:
                c = kept
                self.steps += 1
                self.log.append(f"data: simple value {v:#x}")
        return c

    def run(self, c: Case) -> Case:
        c = self.layout(c)
        for _ in range(4):
            before = self.steps
            c = self.repeat(c)
            c = self.strides(c)
            c = self.mask(c)
            if c.saturate is not None:
                c = self.first(c, [clone(c, saturate=None)], "saturate -> default")
            c = self.data(c)
            if self.steps == before or self.out_of_budget():
                break
        return self.layout(c, cut=True) if self.cut_ub else c


def shrink(case: Case, signature: str, evaluate: Callable[[List[Case]], List[Optional[str]]],
           *, max_evals: int = 3000, deadline: Optional[float] = None,
           cut_ub: bool = True) -> Result:
    """Smallest case found whose signature under ``evaluate`` is still ``signature``
    (``evaluate(cases)``: a list of one signature, str or None, per case — anything else is
    BAD_ARGUMENT at its first call; ``cut_ub``: finish by cutting the UB to a power of two,
    one more compiled shape)."""
    if not isinstance(case, Case):
        raise ConstraintError(Code.BAD_ARGUMENT, api="shrink", param="case",
                              value=type(case).__name__, allowed="an ascend_ref Case")
    t0 = time.time()
    sh = Shrinker(evaluate, signature, max_evals=max_evals, deadline=deadline, cut_ub=cut_ub)
    out = sh.run(clone(case))
    out.tags = {k: v for k, v in case.tags.items() if k in ("case_id", "template")}
    out.tags["shrunk"] = True
    return Result(out, signature, sh.steps, sh.evals, time.time() - t0, sh.log)


__all__ = ["shrink", "relayout", "needs", "clone", "Result", "Shrinker"]
