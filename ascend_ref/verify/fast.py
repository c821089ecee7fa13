"""Vectorised verification of stacked dump files (format version 2, :mod:`.stacked`), and of
version-1 files of layout "regions" read as stacked groups (:mod:`.regions`).

A stacked file holds its cases as columns. :func:`check_stacked` verifies them as whole
batches: the columns are validated with array operations, the kernel parameters come from
:func:`ascend_ref.batch_prep.compact_windows` (the compact windows
:func:`ascend_ref.batch.run_cases` uses), each case's UB window is assembled from the region
bytes, each group runs as one :func:`ascend_ref.batch.run_batch` call (its fast kernels;
``return_undefined=True``), and the device's bytes are compared with the reference's for the
whole group at once (byte-exact, the reference's
undefined bytes masked, only the recorded ``after`` regions compared).

Only agreement is decided here. Every case the vectorised path cannot decide exactly -- a
row the array checks do not pass (the version-1 validation then reports it), a device error
that is not the reference's code, a reference error, a mismatch, an ``after`` region outside
the case's window, a case whose declared geometry reaches outside its UB (no compact window:
the kernel would see the row's length, not the case's), a group whose shared check fails,
a case that carries reduce special registers (``spr``: their reference state comes from the
direct path), any exception -- is handed
back and verified by the per-case path (:meth:`ascend_ref.verify.run.Verifier.check`), which
gives its verdict, signature and report entry. So the report of a stacked file is the
report of the same cases verified one at a time.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .. import batch_prep, engine
from ..chips import chip as get_chip
from ..constraints import Code, ConstraintError
from .format import DumpError, DumpFile
from .parallel import SPLIT_MIN, both
from .stacked import Group

if TYPE_CHECKING:
    from ..batch import UndefinedSpans
    from .run import Verifier

_I32 = 2**31 - 1
#: cases decided here (``"vectorised"``) and handed to the per-case path (``"per_case"``)
#: in this process (tests check that the batches decide what they should)
STATS: collections.Counter = collections.Counter()


def check_stacked(v: "Verifier", f: DumpFile, mine: np.ndarray) -> List[int]:
    """Verify the cases ``mine`` (bool per case number) of the stacked file ``f`` -- or of
    the version-1 file ``f``, its cases of layout "regions" stacked first
    (:func:`ascend_ref.verify.regions.stack_regions`) --; returns the case numbers left for
    the per-case path (sorted)."""
    rest: List[int] = []
    if f.stacked is not None:
        pieces: Iterable[List[Group]] = [f.stacked.groups]
    else:
        from .regions import stack_regions, stackable

        if not stackable(f):                  # a small or other file: every case as it is
            return np.flatnonzero(mine).tolist()
        pieces = stack_regions(f, np.flatnonzero(mine).tolist(), rest)
    for groups in pieces:
        for g in groups:
            rows = np.flatnonzero(mine[g.case])
            if not rows.size:
                continue
            regs = g.has_spr()[rows]            # registers: compared by the per-case path
            if regs.any():
                rest.extend(g.case[rows[regs]].tolist())
                rows = rows[~regs]
                if not rows.size:
                    continue
            try:
                slow = _group(v, f, g, rows)
            except Exception:                                          # noqa: BLE001
                slow = rows                                       # exact: the per-case path
            rest.extend(g.case[slow].tolist())
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


def _mask_words(rep_mask: Any, g: Group, rows: np.ndarray, lanes: int, word_order: str
                ) -> Optional[np.ndarray]:
    """``uint32[m, 4]`` mask words of ``rows`` as :func:`batch_prep._mask_words` gives each,
    or None when the group's form is not one it takes."""
    first = batch_prep._mask_words(rep_mask, lanes, word_order)
    if first is None:
        return None
    m = rows.size
    w = g.mask[rows]
    if g.mask_words == 0:
        out: np.ndarray = np.zeros((m, 4), np.uint32)
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


def _group(v: "Verifier", f: DumpFile, g: Group, rows: np.ndarray) -> np.ndarray:
    """Verify ``rows`` of group ``g`` as one batch; returns the rows left for the per-case
    path. Counts go to ``v.report`` only once nothing can fail any more."""
    from ..batch import fill_rows, overwrite_input, run_batch, undefined_rows

    d0 = None
    for r in rows[:4].tolist():          # the shared fields, by the version-1 rules
        try:
            d0 = f.case(int(g.case[r]))
            break
        except DumpError:
            continue
    if d0 is None:
        return rows
    case = d0.case
    ins = case.instruction
    prof = get_chip(case.chip)
    s = np.dtype(case.dtype).itemsize
    names = list(g.tensors)
    outs = [names.index(k) for k in names if k != "src"]
    ok = _valid_rows(f, g, rows, s, prof.ub_bytes, outs)
    masks = _mask_words(case.mask, g, rows, 256 // s, ins.word_order)
    if masks is None:
        return rows
    try:
        prep = case.prepare(info=True)
    except ConstraintError as e:             # a group-level rule: every case gets its code
        cand = ok & (g.error[rows] != 0)
        done = _device_errors(v, g, rows, np.full(rows.size, int(e.code)), cand)
        return rows[~done]
    t = g.tensor_cols[rows]
    pj = g.param_cols[rows]
    cols = {}
    for k in ins.operands:
        cols[f"{k}.addr"] = t[:, names.index(k), 0]
        cols[f"{k}.size"] = t[:, names.index(k), 1]
    for k in ins.params:
        cols[k] = pj[:, g.params.index(k)]
    n = g.ub_bytes[rows].astype(np.int64)
    hi = prep.ins.repeat_range(prep.spec)[1]
    option = ins.canonical_option(case.option) if ins.option is not None else None
    base, length, compact = batch_prep.compact_windows(ins, option, prep.spec.dtype, cols, n, hi)
    ok &= compact                           # a whole-UB case: its own UB length decides
    sel = np.flatnonzero(ok)
    if not sel.size:
        return rows
    grow = rows[sel]
    base, length = base[sel], length[sel]
    # rows as wide as the longest window, rounded up to an eighth of its power-of-two bucket
    # (at most 8 compiled widths per octave; rows are copied and read whole)
    top = int(length.max())
    step = max(1024, engine.ub_bucket(top) // 8)
    width = -(-top // step) * step
    m = sel.size
    # the batch padded to one of four sizes per octave (copies of the first row, results
    # dropped): groups of many sizes share a few compiled shapes, for at most a quarter more
    # rows of work
    big = _bucket(m)
    wins = batch_prep.result_empty((big, width))   # run_batch's result, in place

    def fill(start: int, stop: int) -> None:  # run_batch asks chunk by chunk (fill_rows)
        # (here: a second thread copying half of each chunk competed with the kernels for
        # the other core, 10.3 -> 11.3 ms for 256 cases of 66 KB)
        lo, hi = min(start, m), min(stop, m)
        if hi > lo:
            _windows(base[lo:hi], length[lo:hi], g, grow[lo:hi], "before", wins[lo:hi],
                     np.ones(hi - lo, bool), fresh=True)
        if stop > m:                             # the padding: copies of the first row
            wins[max(start, m):stop] = wins[0]

    def pad(a: np.ndarray) -> np.ndarray:
        return a if big == m else np.concatenate([a, np.repeat(a[:1], big - m, axis=0)])

    rep_max = int(cols["repeat"][sel].max())
    # the repeat table: the next power of two (a few compiles per configuration at most;
    # a taller table costs rows of work per case)
    height = min(hi, 1 << (max(rep_max, 1) - 1).bit_length())
    kw: Dict[str, Any] = {k: pad(cols[k][sel]) for k in ins.params}
    for k in ins.operands:
        kw[k] = (pad(cols[f"{k}.addr"][sel] - base), pad(cols[f"{k}.size"][sel]))
    if ins.option is not None:
        kw[ins.option.key] = case.option
    mode = "count" if g.mask_words == 0 else "bits"
    mask = pad(masks[sel, 0].astype(np.int64) if mode == "count" else masks[sel])
    with overwrite_input(), fill_rows(fill), undefined_rows() as marked:
        out, status, undef = run_batch(
            case.api, wins, chip=prof.id, dtype=case.dtype, mask=mask, mask_mode=mode,
            saturate=case.saturate if ins.saturating else None,   # as the per-case path
            ub_base=int(base[0]) if (base == base[0]).all() else pad(base),
            max_repeat=height, return_undefined=True, **kw)
    out, status, undef, touched = out[:m], status[:m], undef[:m], marked[0][:m]
    err = g.error[grow]
    ran = (status == 0) & (err == 0)
    differ, und, fits = _compare(out, undef, touched, base, length, g, grow, ran)
    agree = ran & fits & ~differ
    decided = _device_errors(v, g, grow, status, err != 0)
    rep = v.report
    n_agree = int(agree.sum())
    rep.cases += n_agree
    rep.agreed += n_agree
    rep.undefined_bytes += int(und[agree].sum())
    rep.cases_with_undefined += int(np.count_nonzero(und[agree]))
    left = np.ones(rows.size, bool)
    left[sel[agree | decided]] = False
    return rows[left]


def _bucket(m: int) -> int:
    """The padded batch size of ``m`` rows: 8 at least, else the smallest ``k * 2**j`` with
    ``k`` in 4..8 that holds them."""
    if m <= 8:
        return 8
    j = m.bit_length() - 3
    return -(-m // (1 << j)) << j


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


def _compare(out: np.ndarray, undef: np.ndarray, touched: "UndefinedSpans", base: np.ndarray,
             length: np.ndarray, g: Group, grow: np.ndarray, ran: np.ndarray
             ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(differ, undefined, fits)`` per row: a recorded after byte differs from the
    reference's where it is defined; the number of recorded bytes the reference leaves
    undefined; every after region lies inside the row's window (else the row is not
    decided here). Rows where ``ran`` is false are not compared. ``undef`` is read only in
    the rows and columns ``touched`` says hold an undefined byte
    (:func:`ascend_ref.batch.undefined_rows`)."""
    m = grow.size
    differ = np.zeros(m, bool)
    und = np.zeros(m, np.int64)
    fits = np.ones(m, bool)
    reg = g.region_cols[grow]
    for j, name in enumerate(g.regions):
        flat, at = g.after[name], g.after_at[j, grow]
        col, nb = reg[:, j, 0] - base, reg[:, j, 1]
        inside = (col >= 0) & (col + nb <= length)
        fits &= inside | (nb == 0)
        use = ran & inside & (nb > 0)
        if use.all() and (nb == nb[0]).all() and (col == col[0]).all() and m and \
                int(at.min()) >= 0 and int(at.max()) + int(nb[0]) <= flat.size:
            k, c0 = int(nb[0]), int(col[0])                   # one block comparison
            ref = out[:, c0:c0 + k]
            u = undef[:, c0:c0 + k]
            # raw rows first (where they lie: a stacked column's rows are one block, a
            # version-1 archive's members anywhere); bytes only in rows that differ
            # somewhere
            block = _row_blocks(flat, at, k)
            if block is not None and len(block) == 1:
                neq = _rows_differ(block[0][2], ref)
            else:
                neq = _rows_differ_at(flat, at, ref)
            # a row differs only where some raw byte does; undefined bytes are counted in
            # the rows that hold any
            look = np.flatnonzero(neq)
            if look.size:
                dev = np.stack([flat[a:a + k] for a in at[look].tolist()])
                differ[look] |= ((dev != ref[look]) & ~u[look]).any(axis=1)
            held = np.flatnonzero(touched.overlapping(c0, c0 + k))
            if held.size:
                und[held] += _count_true(u if held.size == m else u[held])
            continue
        for r in np.flatnonzero(use).tolist():
            c0, k, a0 = int(col[r]), int(nb[r]), int(at[r])
            ne = flat[a0:a0 + k] != out[r, c0:c0 + k]
            if touched.lo[r] < touched.hi[r]:          # the row holds a mark
                u = undef[r, c0:c0 + k]
                ne &= ~u
                und[r] += int(np.count_nonzero(u))
            differ[r] |= bool(ne.any())
    return differ, und, fits


#: rows at least this long are compared with the C library's ``memcmp``; shorter ones with
#: numpy's comparison of the whole block, one call (512 rows, the device's rows unaligned,
#: ms numpy / memcmp: 4 KiB 0.16 / 0.29, 8 KiB 0.32 / 0.47, 16 KiB 0.77 / 0.71, 32 KiB
#: 2.3 / 0.79)
MEMCMP_MIN = 16384
_MEMCMP: List[Any] = []


def _memcmp() -> Any:
    """The C library's ``memcmp`` through ctypes (which releases the GIL), or None."""
    if not _MEMCMP:
        import ctypes
        import sys

        try:
            lib = ctypes.cdll.msvcrt if sys.platform == "win32" else ctypes.CDLL(None)
            f = lib.memcmp
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        except (OSError, AttributeError):
            f = None
        _MEMCMP.append(f)
    return _MEMCMP[0]


def _rows_differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bool ``[m]``: row ``r`` of the ``uint8[m, k]`` arrays ``a`` and ``b`` differs in some
    byte. Long rows go to ``memcmp`` row by row (the device's rows start wherever the
    archive member puts them, so numpy's 8-byte comparison took its unaligned loop: 2.6 ms
    for 256 rows of 65 KB, ``memcmp`` 1.1 ms, and 0.87 ms with the second half of the rows
    in the worker thread, :func:`.parallel.both`, as for any block of at least
    :data:`.parallel.SPLIT_MIN` bytes); short ones to numpy, 8 bytes at a time.

    >>> a = np.zeros((3, 20000), np.uint8); b = a.copy(); b[1, 19999] = 1
    >>> _rows_differ(a, b).tolist(), _rows_differ(a[:, :17], b[:, :17]).tolist()
    ([False, True, False], [False, False, False])
    """
    m, k = a.shape
    cmp = _memcmp() if k >= MEMCMP_MIN and a.strides[1] == 1 and b.strides[1] == 1 else None
    if cmp is not None:
        pa, sa = a.ctypes.data, a.strides[0]
        return _memcmp_rows(cmp, [pa + r * sa for r in range(m)], b, k)
    w = k // 8 * 8
    neq = np.zeros(m, bool)
    if w and a.strides[1] == 1 and b.strides[1] == 1:
        neq |= (a[:, :w].view(np.uint64) != b[:, :w].view(np.uint64)).any(axis=1)
    else:
        w = 0
    if w < k:
        neq |= (a[:, w:] != b[:, w:]).any(axis=1)
    return neq


def _memcmp_rows(cmp: Any, pa: List[int], b: np.ndarray, k: int) -> np.ndarray:
    """bool ``[m]``: the ``k`` bytes at address ``pa[r]`` differ from row ``r`` of ``b``
    (``memcmp``; the second half of the rows in the worker thread for a large block)."""
    m = len(pa)
    pb, sb = b.ctypes.data, b.strides[0]

    def rows(lo: int, hi: int) -> List[bool]:
        return [cmp(pa[r], pb + r * sb, k) != 0 for r in range(lo, hi)]

    if m * k < SPLIT_MIN or m < 2:
        return np.array(rows(0, m), bool)
    half = m // 2
    first, second = both(lambda: rows(0, half), lambda: rows(half, m))
    return np.array(first + second, bool)


def _rows_differ_at(flat: np.ndarray, at: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`_rows_differ` of the rows ``flat[at[r]:at[r] + k]``, wherever they lie in
    ``flat`` (the members of a version-1 archive), against ``b`` (``uint8[m, k]``): long
    rows compared where they are, short ones gathered first.

    >>> flat = np.arange(40, dtype=np.uint8); b = np.stack([flat[3:8], flat[20:25]])
    >>> b[1, 4] = 0
    >>> _rows_differ_at(flat, np.array([3, 20]), b).tolist()
    [False, True]
    """
    m, k = b.shape
    cmp = _memcmp() if k >= MEMCMP_MIN and b.strides[1] == 1 and flat.strides == (1,) else None
    if cmp is None:
        return _rows_differ(np.stack([flat[a:a + k] for a in at.tolist()]) if m else b, b)
    base = flat.ctypes.data
    return _memcmp_rows(cmp, [base + a for a in at.tolist()], b, k)


def _count_true(b: np.ndarray) -> np.ndarray:
    """``np.count_nonzero(b, axis=1)`` of a bool ``[n, k]`` array, eight bytes at a time
    where its rows are contiguous: a bool is one byte 0 or 1, so the bits set in a row's
    uint64 words are its true bytes (256 rows of 3000 bytes: 0.32 ms with numpy's count
    along the axis, 0.14 ms this way)."""
    n, k = b.shape
    w = k // 8 * 8
    popcount = getattr(np, "bitwise_count", None)
    if not w or popcount is None or b.strides[1] != 1:
        return np.count_nonzero(b, axis=1).astype(np.int64)
    c = popcount(b[:, :w].view(np.uint64)).sum(axis=1, dtype=np.int64)
    if w < k:
        c += np.count_nonzero(b[:, w:], axis=1)
    return c


def _row_blocks(flat: np.ndarray, at: np.ndarray, k: int
                ) -> Optional[List[Tuple[int, int, np.ndarray]]]:
    """Rows ``flat[at[r]:at[r] + k]`` as a few ``(lo, hi, uint8[hi - lo, k])`` views, one
    per run of rows at a constant distance (a stacked column's rows are one run; the
    members of a version-1 archive, e.g. ``c9`` then ``c10``, a run per name length), or
    None when they split into many runs (then row by row)."""
    m = at.size
    if not m or int(at.min()) < 0 or int(at.max()) + k > flat.size:
        return None
    step = np.diff(at)
    cut = np.flatnonzero(step[1:] != step[:-1]) + 1 if m > 2 else np.zeros(0, np.int64)
    if cut.size > max(4, m // 32):
        return None
    out: List[Tuple[int, int, np.ndarray]] = []
    cuts, ci, lo = cut.tolist(), 0, 0
    while lo < m:                         # rows lo..c share the step at[lo + 1] - at[lo],
        while ci < len(cuts) and cuts[ci] <= lo:        # c the first cut after lo
            ci += 1
        hi = cuts[ci] + 1 if ci < len(cuts) else m
        a = int(at[lo])
        if hi - lo == 1:
            out.append((lo, hi, flat[a:a + k][None]))
        else:
            st = int(at[lo + 1]) - a
            if st < 0:
                return None
            out.append((lo, hi, np.lib.stride_tricks.as_strided(
                flat[a:], (hi - lo, k), (st, 1), writeable=False)))
        lo = hi
    return out


def _windows(base: np.ndarray, length: np.ndarray, g: Group, grow: np.ndarray, side: str,
             into: np.ndarray, sel: np.ndarray, fresh: bool = False) -> np.ndarray:
    """Write region bytes (``side`` "before" / "after") of the group rows ``grow`` where
    ``sel`` into their windows ``into`` (``uint8[m, width]``: real UB bytes from ``base``,
    ``length`` of them); returns bool ``[m]``: every region byte lies inside its window.
    ``fresh``: ``into`` holds garbage; every byte no region writes is zeroed (only the columns
    no block copy covers, when every region is one block copy: a region spans most of a
    window, and clearing it first would write it twice)."""
    m = grow.size
    inside = np.ones(m, bool)
    reg = g.region_cols[grow]
    plans = []
    for j, name in enumerate(g.regions):
        flat = (g.before if side == "before" else g.after)[name]
        at = (g.before_at if side == "before" else g.after_at)[j, grow]
        a, nb = reg[:, j, 0], reg[:, j, 1]
        col = a - base
        within = (col >= 0) & (col + nb <= length)
        inside &= within | (nb == 0)
        block = None
        if m and sel.all() and (nb == nb[0]).all() and (col == col[0]).all() and within.all():
            block = _row_blocks(flat, at, int(nb[0]))
        plans.append((flat, at, col, nb, block))
    if fresh:
        if all(p[4] is not None for p in plans):
            gap = np.ones(into.shape[1] + 2, np.int8)       # 1: no block writes the column
            gap[0] = gap[-1] = 0                              # (guards at either end)
            for _, _, col, nb, _ in plans:
                gap[1 + int(col[0]):1 + int(col[0]) + int(nb[0])] = 0
            step = np.diff(gap)                               # runs of 1: [start, end)
            for lo, hi in zip(np.flatnonzero(step == 1).tolist(),
                              np.flatnonzero(step == -1).tolist()):
                into[:, lo:hi] = 0
        else:
            into.fill(0)
    for flat, at, col, nb, block in plans:
        if block is not None:
            k, c0 = int(nb[0]), int(col[0])     # a block copy a run of rows
            for lo, hi, rows in block:
                into[lo:hi, c0:c0 + k] = rows
            continue
        rows = np.flatnonzero(sel)             # row by row: the spans clipped as columns
        lo = np.maximum(col[rows], 0)
        hi = np.minimum(col[rows] + nb[rows], length[rows])
        src = at[rows] + lo - col[rows]
        for r, a, z, s in zip(rows.tolist(), lo.tolist(), hi.tolist(), src.tolist()):
            if z > a:
                into[r, a:z] = flat[s:s + z - a]
    return inside


__all__ = ["check_stacked"]
