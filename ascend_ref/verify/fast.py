"""Vectorised verification of stacked dump files (format version 2, :mod:`.stacked`).

A stacked file holds its cases as columns. :func:`check_stacked` verifies them as whole
batches: the columns are validated with array operations, the kernel parameters come from
:func:`ascend_ref.batch_prep.group_rows` (the columnar entry point of the preparation
:func:`ascend_ref.batch.run_cases` uses), each case's UB window is assembled from the region
bytes, the kernels run in the chunks ``run_cases`` would run, and the device's bytes are
compared with the reference's for the whole chunk at once (byte-exact, the reference's
undefined bytes masked, only the recorded ``after`` regions compared).

Only agreement is decided here. Every case the vectorised path cannot decide exactly -- a
row the array checks do not pass (the version-1 validation then reports it), a device error
that is not the reference's code, a reference error, a mismatch, an undefined region or a
write the window does not hold, a group whose shared check fails, any exception -- is handed
back and verified by the per-case path (:meth:`ascend_ref.verify.run.Verifier.check`), which
gives its verdict, signature and report entry. So the report of a stacked file is the
report of the same cases verified one at a time.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Dict, List, Tuple

import numpy as np

from .. import batch, batch_prep, engine, scale
from ..chips import chip as get_chip
from ..constraints import Code, ConstraintError
from .format import DumpError, DumpFile
from .stacked import Group

if TYPE_CHECKING:
    from .run import Verifier

_I32 = 2**31 - 1
#: cases decided here (``"vectorised"``) and handed to the per-case path (``"per_case"``)
#: in this process (tests check that the batches decide what they should)
STATS: collections.Counter = collections.Counter()


def check_stacked(v: "Verifier", f: DumpFile, mine: np.ndarray) -> List[int]:
    """Verify the cases ``mine`` (bool per case number) of the stacked file ``f``; returns
    the case numbers left for the per-case path (sorted)."""
    assert f.stacked is not None
    rest: List[int] = []
    parts: Dict[tuple, List[Tuple[Any, Group, np.ndarray]]] = {}
    for g in f.stacked.groups:
        rows = np.flatnonzero(mine[g.case])
        if not rows.size:
            continue
        try:
            fast, slow = _prepare_group(f, g, rows, parts, v)
        except Exception:                                          # noqa: BLE001
            fast, slow = np.zeros(0, np.int64), rows          # exact: the per-case path
        rest.extend(g.case[slow].tolist())
    for (ins, spec), items in parts.items():
        try:
            rest.extend(_run(v, ins, spec, items))
        except Exception:                                          # noqa: BLE001
            for _, g, rows in items:
                rest.extend(g.case[rows].tolist())
    STATS["vectorised"] += int(mine.sum()) - len(rest)
    STATS["per_case"] += len(rest)
    return sorted(rest)


def _valid_rows(f: DumpFile, g: Group, rows: np.ndarray, itemsize: int, ub_max: int,
                outs: List[int]) -> np.ndarray:
    """Which of ``rows`` pass every per-case check of the version-1 validation, by array
    operations (a sufficient condition: a row that fails is checked case by case)."""
    p, t, reg = g.param_cols[rows], g.tensor_cols[rows], g.region_cols[rows]
    ok = ((p >= 0) & (p <= _I32)).all(axis=1)
    ok &= ((t >= 0) & (t <= _I32)).all(axis=(1, 2))
    ok &= ((reg >= 0) & (reg <= _I32)).all(axis=(1, 2))
    if g.mask_words == 0:
        ok &= g.mask[rows, 0] <= np.uint64(_I32)
    size = g.ub_bytes[rows]
    a, nb = reg[:, :, 0], reg[:, :, 1]
    end = a + nb
    ok &= (size >= 1) & (size <= ub_max) & (end.max(axis=1) <= size)
    nr = a.shape[1]
    for j in range(nr):                  # regions pairwise disjoint: nothing to disagree on
        for k in range(j + 1, nr):
            ok &= (end[:, j] <= a[:, k]) | (end[:, k] <= a[:, j]) | (nb[:, j] == 0) | \
                (nb[:, k] == 0)
    ta, tend = t[:, :, 0], t[:, :, 0] + t[:, :, 1] * itemsize

    def covered(k: int) -> np.ndarray:   # inside one region, or empty, or past the UB
        inside = ((a <= ta[:, k:k + 1]) & (tend[:, k:k + 1] <= end)).any(axis=1)
        return inside | (t[:, k, 1] == 0) | (tend[:, k] > size)

    err = g.error[rows]
    has = g.has_after[rows]
    ok &= has | (err != 0)
    for k in range(t.shape[1]):
        ok &= covered(k)
        if k in outs:
            ok &= covered(k) | ~has
    if g.errors and not all(n in Code.__members__ and n != "OK" for n in g.errors):
        ok &= err == 0
    if g.extra is not None:
        for j, r in enumerate(rows.tolist()):
            x = g.extra[r]
            if set(x) - {"tags", "source"} or not isinstance(x.get("tags") or {}, dict):
                ok[j] = False
    return ok


def _mask_words(rep_mask: Any, g: Group, rows: np.ndarray, lanes: int, word_order: str):
    """``uint32[m, 4]`` mask words of ``rows`` as :func:`batch_prep._mask_words` gives each,
    or None when the group's form is not one it takes."""
    first = batch_prep._mask_words(rep_mask, lanes, word_order)
    if first is None:
        return None
    m = rows.size
    w = g.mask[rows]
    if g.mask_words == 0:
        out = np.zeros((m, 4), np.uint32)
        out[:, 0] = w[:, 0].astype(np.uint32)
    else:
        if word_order == "tik":
            w = w[:, ::-1]
        w = np.concatenate([w, np.zeros((m, 2 - w.shape[1]), np.uint64)], axis=1)
        lo, hi = np.uint64(0xFFFFFFFF), np.uint64(32)
        out = np.stack([w[:, 0] & lo, w[:, 0] >> hi, w[:, 1] & lo, w[:, 1] >> hi],
                       axis=1).astype(np.uint32)
    if tuple(out[0].tolist()) != tuple(first[1]):             # the same reading as the batch
        return None
    return out


def _prepare_group(f: DumpFile, g: Group, rows: np.ndarray, parts: dict, v: "Verifier"):
    """Split ``rows`` (of group ``g``) into the rows that go to the kernels (added to
    ``parts``) and the rows left for the per-case path; ``(fast, slow)``."""
    from ..batch import TABLE_HEIGHTS

    none = np.zeros(0, np.int64)
    try:
        d0 = f.case(int(g.case[rows[0]]))     # the shared fields, by the version-1 rules
    except DumpError:
        return none, rows
    case = d0.case
    ins = case.instruction
    prof = get_chip(case.chip)
    s = np.dtype(case.dtype).itemsize
    names = list(g.tensors)
    outs = [names.index(k) for k in names if k != "src"]
    ok = _valid_rows(f, g, rows, s, prof.ub_bytes, outs)
    fast, slow = rows[ok], rows[~ok]
    if not fast.size:
        return none, slow
    if fast[0] != rows[0]:                   # the prepared case must be a valid row
        d0 = f.case(int(g.case[fast[0]]))
        case = d0.case
    masks = _mask_words(case.mask, g, fast, 256 // s, ins.word_order)
    if masks is None:
        return none, rows
    try:
        prep = case.prepare(info=True)
    except ConstraintError as e:             # a group-level rule: every case gets its code
        done = _device_errors(v, g, fast, np.full(fast.size, int(e.code)), g.error[fast] != 0)
        return none, np.sort(np.concatenate([slow, fast[~done]]))
    t = g.tensor_cols[fast]
    cols = {}
    for k in ins.operands:
        j = names.index(k)
        cols[f"{k}.addr"] = t[:, j, 0]
        cols[f"{k}.size"] = t[:, j, 1]
    pj = g.param_cols[fast]
    for k in ins.params:
        cols[k] = pj[:, g.params.index(k)]
    n = g.ub_bytes[fast].astype(np.int64)
    for r in batch_prep.group_rows(prep, case, cols, masks, n, np.arange(fast.size),
                                   TABLE_HEIGHTS, []):
        parts.setdefault((r.ins, r.spec), []).append((r, g, fast[r.idx]))
    return fast, slow


def _device_errors(v: "Verifier", g: Group, rows: np.ndarray, status: np.ndarray,
                   cand: np.ndarray) -> np.ndarray:
    """Count the rows where the device reported the reference's own code (agreement, as the
    per-case path counts it); returns which rows were decided."""
    rep = v.report
    done = cand & (status != 0)
    idx = np.flatnonzero(done)
    for j in idx.tolist():
        k = int(g.error[rows[j]])
        name = g.errors[k - 1] if k else None
        if name is None or name not in Code.__members__ or Code[name] != Code(int(status[j])):
            done[j] = False
    n = int(done.sum())
    rep.cases += n
    rep.agreed += n
    rep.device_errors += n
    return done


def _windows(rows: Any, g: Group, grow: np.ndarray, side: str, into: np.ndarray,
             sel: np.ndarray) -> np.ndarray:
    """Write region bytes (``side`` "before" / "after") of the group rows ``grow`` where
    ``sel`` into their windows ``into`` (``uint8[m, width]``, the rows' window bases in
    ``rows.base``); returns bool ``[m]``: every region byte lies inside its window."""
    base, length = rows.base, rows.length
    m = grow.size
    inside = np.ones(m, bool)
    reg = g.region_cols[grow]
    for j, name in enumerate(g.regions):
        flat = (g.before if side == "before" else g.after)[name]
        at = (g.before_at if side == "before" else g.after_at)[j, grow]
        a, nb = reg[:, j, 0], reg[:, j, 1]
        col = a - base
        within = (col >= 0) & (col + nb <= length)
        inside &= within | (nb == 0)
        if m and sel.all() and (nb == nb[0]).all() and (col == col[0]).all() and \
                within.all() and (at == at[0] + nb[0] * np.arange(m)).all():
            k, c0 = int(nb[0]), int(col[0])     # one block copy
            into[:, c0:c0 + k] = flat[int(at[0]):int(at[0]) + k * m].reshape(m, k)
            continue
        for r in np.flatnonzero(sel).tolist():
            lo, hi = max(int(col[r]), 0), min(int(col[r] + nb[r]), int(length[r]))
            if hi > lo:
                src = int(at[r]) + lo - int(col[r])
                into[r, lo:hi] = flat[src:src + hi - lo]
    return inside


def _run(v: "Verifier", ins: Any, spec: Any, items: list) -> List[int]:
    """Run the kernels of one static configuration and compare; returns the case numbers
    left for the per-case path."""
    engine.release_if_needed()
    width = engine.ub_bucket(max(int(r.length.max()) for r, _, _ in items))
    rest: List[int] = []
    for rows_all, g, grow_all in items:
        big = batch._big_batch(spec.r_max, width)
        for start, stop, b in batch._batches(len(rows_all), big):
            rows, grow = rows_all.take(start, stop), grow_all[start:stop]
            rest.extend(_chunk(v, ins, spec, width, rows, g, grow, b))
    return rest


def _chunk(v: "Verifier", ins: Any, spec: Any, width: int, rows: Any, g: Group,
           grow: np.ndarray, b: int) -> List[int]:
    m = len(rows)
    ubs = np.zeros((b, width), np.uint8)
    _windows(rows, g, grow, "before", ubs[:m], np.ones(m, bool))
    if m < b:
        ubs[m:] = ubs[0]
    batch.EXECUTABLES.add((ins.api, spec, width, b))
    writes, status, _, _, undefined = scale.run_rows(batch._vmapped(ins, spec), ubs,
                                                      rows.params(b))
    status = np.asarray(status)[:m]
    err = g.error[grow]
    decided = _device_errors(v, g, grow, status, err != 0)
    ran = (status == 0) & (err == 0)
    ref = ubs[:m].copy()
    after = ubs[:m].copy()
    fits = _windows(rows, g, grow, "after", after, g.has_after[grow])   # in the window?
    compared = np.zeros((m, width), bool)
    length = rows.length
    for j in range(len(g.regions)):
        a, nb = g.region_cols[grow, j, 0] - rows.base, g.region_cols[grow, j, 1]
        for r in np.flatnonzero(ran & (nb > 0)).tolist():
            compared[r, int(a[r]):int(a[r] + nb[r])] = True
    local = np.arange(m)
    exact = fits.copy()                                   # the window holds every fact
    for addr, bits, valid in writes:
        addr, bits, valid = np.asarray(addr)[:m], np.asarray(bits)[:m], np.asarray(valid)[:m]
        shape = (m,) + (1,) * (addr.ndim - 1)
        rr = np.broadcast_to(local.reshape(shape), addr.shape)[valid]
        aa = addr.astype(np.int64)[valid]
        size = bits.dtype.itemsize
        out = (aa < 0) | (aa + size > length[rr])
        exact[rr[out]] = False
        keep = ~out
        batch_prep._scatter_words(ref, rr[keep], aa[keep], bits[valid][keep])
    undef = np.zeros((m, width), bool)
    regions, words = undefined
    n_ub = g.ub_bytes[grow]
    for start, nbytes, when in regions:
        start, nbytes = np.asarray(start)[:m].astype(np.int64), np.asarray(nbytes)[:m]
        for r in np.flatnonzero(np.asarray(when)[:m]).tolist():
            lo = max(int(rows.base[r] + start[r]), 0)
            hi = min(int(rows.base[r] + start[r] + nbytes[r]), int(n_ub[r]))
            if hi <= lo:
                continue
            if lo < rows.base[r] or hi > rows.base[r] + length[r]:
                exact[r] = False              # undefined bytes the window does not hold
                continue
            undef[r, lo - int(rows.base[r]):hi - int(rows.base[r])] = True
    for addr, when in words:
        addr, when = np.asarray(addr)[:m], np.asarray(when)[:m]
        shape = (m,) + (1,) * (addr.ndim - 1)
        rr = np.broadcast_to(local.reshape(shape), addr.shape)[when]
        aa = addr.astype(np.int64)[when]
        real = aa + rows.base[rr]
        keep = (real >= 0) & (real < n_ub[rr])
        out = keep & ((aa < 0) | (aa >= length[rr]))
        exact[rr[out]] = False
        ok = keep & ~out
        undef[rr[ok], aa[ok]] = True
    differ = ((after != ref) & compared & ~undef).any(axis=1)
    agree = ran & exact & ~differ
    und = np.count_nonzero(undef & compared, axis=1)
    rep = v.report
    n_agree = int(agree.sum())
    rep.cases += n_agree
    rep.agreed += n_agree
    rep.undefined_bytes += int(und[agree].sum())
    rep.cases_with_undefined += int(np.count_nonzero(und[agree]))
    left = ~(agree | decided)
    return g.case[grow[left]].tolist()


__all__ = ["check_stacked"]
