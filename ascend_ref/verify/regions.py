"""Version-1 files of layout ``"regions"`` read as stacked groups (the vectorised verifier).

A version-1 file holds one ``c{i}.meta`` and one member per region and side for each case.
:func:`stack_regions` reads the cases of such a file (the ones this process verifies) and
turns them into the :class:`~ascend_ref.verify.stacked.Group` columns a stacked file holds
(format version 2, docs/verify.md §1b), so :func:`ascend_ref.verify.fast.check_stacked`
runs them as whole batches and compares whole batches. The members of a block of cases are
read at once (:func:`.members.read_members`); a region whose members are all stored is not
copied into a column: the group's column is the archive's own bytes, with each row's offset.

Only what is plainly well-formed is stacked: a case whose ``meta`` is not of layout
``"regions"``, has a field of another JSON type than the stacked columns can hold (a
non-integer parameter, a mask word that is not an integer or ``"0x..."`` text, an unknown
field, ...), records reduce special registers, or whose region members are missing, not
``uint8[nbytes]``, unreadable, or recorded after the call for some regions only, is left to
the per-case path, which reports it exactly as before. Everything the batches then cannot
decide goes back to the per-case path too (:mod:`ascend_ref.verify.fast`), so the report is
the one the cases give verified one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..batch_prep import column_of
from ..chips import chip as get_chip
from ..constraints import Code
from .format import _META_KEYS, DumpFile
from .members import read_members
from .meta import DumpError
from .stacked import Group

_I32 = 2**31 - 1
_U64 = 2**64 - 1
#: a file with fewer cases goes case by case (the per-case path batches several small files
#: into one reference batch; one batch per small file would be slower)
MIN_CASES = 16
#: region bytes (before and after) stacked at a time: the batches of a large file run in
#: pieces of about this size, so memory stays bounded
CHUNK_BYTES = 1 << 27
#: cases whose members are read at a time (:func:`.members.read_members`)
BLOCK = 512
_CODES = frozenset(k for k in Code.__members__ if k != "OK")


def _pair(x: Any) -> bool:
    """``[a, n]``: two integers in [0, 2^31)."""
    return (type(x) is list and len(x) == 2 and type(x[0]) is int and type(x[1]) is int
            and 0 <= x[0] <= _I32 and 0 <= x[1] <= _I32)


def _word(w: Any) -> Optional[int]:
    """A bit-mode mask word as version 1 reads it (an int, or decimal / ``0x`` text), None
    when it is not one the columns hold."""
    if type(w) is str:
        try:
            w = int(w, 0)
        except ValueError:
            return None
    if type(w) is not int or not 0 <= w <= _U64:
        return None
    return w


@dataclass
class _Rows:
    """The rows of one group being collected."""

    key: tuple
    flat: Optional[np.ndarray] = None     # the archive's bytes (read-only)
    case: List[int] = field(default_factory=list)
    params: List[list] = field(default_factory=list)
    tensors: List[list] = field(default_factory=list)
    mask: List[list] = field(default_factory=list)
    ub_bytes: List[int] = field(default_factory=list)
    regions: List[list] = field(default_factory=list)
    error: List[Optional[str]] = field(default_factory=list)
    #: each region's bytes, a list a region (after: only the cases that recorded it)
    before: List[List[np.ndarray]] = field(default_factory=list)
    after: List[List[np.ndarray]] = field(default_factory=list)
    has: List[bool] = field(default_factory=list)         # the case recorded after
    extra: List[dict] = field(default_factory=list)
    #: where each region's bytes start in ``flat`` (-1: not a view of it), before and after,
    #: case by case, region by region
    before_in: List[int] = field(default_factory=list)
    after_in: List[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        regions = len(self.key[-1])
        self.before = [[] for _ in range(regions)]
        self.after = [[] for _ in range(regions)]

    def add(self, i: int, vals: tuple, before: List[np.ndarray],
            after: Optional[List[np.ndarray]], where: List[int]) -> None:
        """Case ``i`` (``vals``: its meta row's values), its regions' bytes and where
        they lie (before and after for each region in turn)."""
        self._fields([i], vals, after is not None, where)
        for j, b in enumerate(before):
            self.before[j].append(b)
            if after is not None:
                self.after[j].append(after[j])

    def add_run(self, cases: Sequence[int], vals: tuple, read: List[Any],
                where: List[int]) -> None:
        """:meth:`add` of the cases ``cases``, which share one meta row (``vals``) and
        recorded every region before and after: ``read`` / ``where`` hold their members
        case by case (before and after for each region in turn)."""
        self._fields(cases, vals, True, where)
        m = 2 * len(self.before)
        for j in range(m // 2):
            self.before[j].extend(read[2 * j::m])
            self.after[j].extend(read[2 * j + 1::m])

    def _fields(self, cases: Sequence[int], vals: tuple, has: bool,
                where: List[int]) -> None:
        """The cases' fields from their one meta row, whether they recorded after, and
        where their members lie."""
        pv, tv, mw, ub, rv, err, extra, _ = vals
        k = len(cases)
        self.case.extend(cases)
        self.params.extend([pv] * k)
        self.tensors.extend([tv] * k)
        self.mask.extend([mw] * k)
        self.ub_bytes.extend([ub] * k)
        self.regions.extend([rv] * k)
        self.error.extend([err] * k)
        self.extra.extend([extra] * k)
        self.has.extend([has] * k)
        self.before_in.extend(where[0::2])
        self.after_in.extend(where[1::2])

    def group(self, number: int) -> Group:
        api, chip, dtype, _, option, saturate, words, pnames, tnames, rnames = self.key
        m = len(self.case)
        errs = sorted({e for e in self.error if e is not None})
        size = np.array(self.ub_bytes, np.int64)
        if (size < 0).any():                    # meta.ub_bytes absent: the product's
            try:
                size[size < 0] = get_chip(chip).ub_bytes
            except Exception:                   # noqa: BLE001 - an unknown product: the
                size[size < 0] = 0              # rows fail the array checks, go case by case
        reg = np.array(self.regions, np.int64).reshape(m, len(rnames), 2)
        has = np.array(self.has, bool)
        nb = reg[:, :, 1]
        before: Dict[str, np.ndarray] = {}
        after: Dict[str, np.ndarray] = {}
        b_at = np.zeros((len(rnames), m), np.int64)
        a_at = np.zeros((len(rnames), m), np.int64)
        b_in = np.array(self.before_in, np.int64).reshape(m, len(rnames))
        a_in = np.array(self.after_in, np.int64).reshape(m, len(rnames))
        for j, name in enumerate(rnames):
            sizes = np.where(has, nb[:, j], 0)
            # the archive's bytes themselves where every row's region is a stored member
            # (no copy: the kernels' windows and the comparison read them in place); else
            # a column in recycled memory (the columns of the file's previous group, once
            # dropped): a fresh 17 MB column costs its page faults, more than the copy
            if self.flat is not None and (b_in[:, j] >= 0).all():
                before[name], b_at[j] = self.flat, b_in[:, j]
            else:
                before[name] = column_of(self.before[j])
                b_at[j] = np.cumsum(nb[:, j]) - nb[:, j]
            if self.flat is not None and (a_in[has, j] >= 0).all():
                after[name], a_at[j] = self.flat, np.where(has, a_in[:, j], 0)
            else:
                after[name] = column_of(self.after[j])
                a_at[j] = np.cumsum(sizes) - sizes
        gm = {"api": api, "chip": chip, "dtype": dtype, "option": option,
              "saturate": saturate, "mask_words": words, "params": list(pnames),
              "tensors": list(tnames), "regions": list(rnames), "errors": errs}
        return Group(number, gm, api, chip, dtype, option, saturate, words, list(pnames),
                     list(tnames), list(rnames), errs, np.array(self.case, np.int64),
                     np.array(self.params, np.int64).reshape(m, len(pnames)),
                     np.array(self.tensors, np.int64).reshape(m, len(tnames), 2),
                     np.array(self.mask, np.uint64).reshape(m, max(words, 1)), size, reg,
                     np.array([0 if e is None else errs.index(e) + 1 for e in self.error],
                              np.int32), has, before, after, b_at, a_at,
                     self.extra if any(self.extra) else None)


def _meta_row(meta: dict) -> Optional[Tuple[tuple, tuple]]:
    """``(key, values)`` of a case's ``meta`` for its group, or None when it is not
    stacked (the region members are read after)."""
    if meta.get("layout") != "regions" or not _META_KEYS.issuperset(meta) \
            or meta.get("spr") is not None:
        return None
    api, chip, dtype = meta.get("api"), meta.get("chip"), meta.get("dtype")
    option, saturate = meta.get("option"), meta.get("saturate")
    if type(api) is not str or type(chip) is not str or type(dtype) is not str \
            or (option is not None and type(option) not in (str, bool)) \
            or (saturate is not None and type(saturate) is not bool):
        return None
    mask = meta.get("mask")
    if type(mask) is int:
        if not 0 <= mask <= _U64:
            return None
        words, mw = 0, [mask]
    elif type(mask) is list:
        words = len(mask)
        read = [_word(w) for w in mask]
        if not 1 <= words <= 2 or None in read:
            return None
        mw = [w for w in read if w is not None]
    elif type(mask) is dict:
        n = mask.get("counter")
        if set(mask) != {"counter"} or type(n) is not int or not 0 <= n <= _U64:
            return None
        words, mw = -1, [n]
    else:
        return None
    params, tensors, regions = meta.get("params"), meta.get("tensors"), meta.get("regions")
    if type(params) is not dict or type(tensors) is not dict or type(regions) is not dict \
            or not regions:
        return None
    pv = list(params.values())
    if not all(type(x) is int and 0 <= x <= _I32 for x in pv):
        return None
    tv = list(tensors.values())
    rv = list(regions.values())
    if not all(_pair(x) for x in tv) or not all(_pair(x) for x in rv):
        return None
    ub_bytes = meta.get("ub_bytes", -1)
    if type(ub_bytes) is not int or not -1 <= ub_bytes <= _I32:
        return None
    error = meta.get("error")
    if error is not None and (type(error) is not str or error not in _CODES):
        return None
    tags = meta.get("tags") or {}
    if type(tags) is not dict:
        return None
    key = (api, chip, dtype, type(option).__name__, option, saturate, words, tuple(params),
           tuple(tensors), tuple(regions))
    extra = {k: meta[k] for k in ("tags", "source") if k in meta}
    names = [(name, n) for name, (_, n) in regions.items()]
    return key, (pv, tv, mw, ub_bytes, rv, error, extra, names)


def _members(f: DumpFile, i: int, names: list, keys: List[str],
             read: List[Optional[np.ndarray]]
             ) -> Optional[Tuple[List[np.ndarray], Optional[List[np.ndarray]]]]:
    """The before and after bytes of case ``i``'s regions (after: None when not recorded),
    or None when they are not all well-formed. ``keys``: the member names, before and after
    for each region in turn; ``read``: what :func:`.members.read_members` gave for them (a
    None is read one by one here, with that reader's errors)."""
    have = f.keys
    before, after = [], []
    for j, (_, n) in enumerate(names):
        kb, ka = keys[2 * j], keys[2 * j + 1]
        if kb not in have:
            return None
        b = read[2 * j]
        if b is None:
            b = f._get(kb, i, view=True)
        if b.dtype != np.uint8 or b.shape != (n,):
            return None
        before.append(b)
        if ka in have:
            a = read[2 * j + 1]
            if a is None:
                a = f._get(ka, i, view=True)
            if a.dtype != np.uint8 or a.shape != (n,):
                return None
            after.append(a)
    if after and len(after) != len(before):       # some regions only: case by case
        return None
    return before, after or None


_U8 = np.dtype(np.uint8)


def _plain(seg: List[Optional[np.ndarray]], names: list) -> List[bool]:
    """For each case in ``seg`` (their members in turn: before and after for each region of
    ``names``): every member was read and is a ``uint8`` array of its region's size."""
    m = 2 * len(names)
    ok = [True] * (len(seg) // m)
    for j, (_, n) in enumerate(names):
        shape = (n,)
        for side in (2 * j, 2 * j + 1):
            ok = [o and a is not None and a.dtype is _U8 and a.shape == shape
                  for o, a in zip(ok, seg[side::m])]
    return ok


def stack_regions(f: DumpFile, todo: Sequence[int],
                  rest: List[int]) -> Iterator[List[Group]]:
    """The cases ``todo`` of the version-1 file ``f`` as stacked groups, in pieces of about
    :data:`CHUNK_BYTES` region bytes; the case numbers not stacked are appended to ``rest``
    (for the per-case path)."""
    acc: Dict[tuple, _Rows] = {}
    held = 0
    seen: Dict[tuple, Any] = {}              # meta members repeat from case to case
    raw = f._raw()
    flat = None if raw is None else np.frombuffer(raw, np.uint8)

    def rows_of(key: tuple) -> _Rows:              # the group being collected for key
        g = acc.get(key)
        if g is None:
            g = acc[key] = _Rows(key, flat)
        return g

    for b0 in range(0, len(todo), BLOCK):
        block = todo[b0:b0 + BLOCK]
        rows = []
        last: Any = None                        # the meta array read last, and its row
        row: Any = None
        for i, a in zip(block, read_members(f, [f"c{i}.meta" for i in block])):
            if a is not None and a is last:     # a repeat the reader shares: the same row
                rows.append(row)
                continue
            try:
                if a is None:
                    a = f._get(f"c{i}.meta", i)
                k = (a.dtype.str, a.shape, a.tobytes())
                if k in seen:
                    row = seen[k]
                else:
                    if len(seen) > 4096:
                        seen.clear()
                    row = seen[k] = _meta_row(f._parse_meta(a, i))
                last = a
            except DumpError:                   # the per-case path reports it
                row, last = None, None
            rows.append(row)
        keys = [f"c{i}.{side}.{name}" for i, row in zip(block, rows) if row is not None
                for name, _ in row[1][7] for side in ("before", "after")]
        where = np.full(len(keys), -1, np.int64)
        read = read_members(f, keys, where)
        where_l = where.tolist()
        at, c, n_block = 0, 0, len(block)
        while c < n_block:
            row = rows[c]
            if row is None:
                rest.append(block[c])
                c += 1
                continue
            key, vals = row
            names = vals[7]
            m = 2 * len(names)
            each = 2 * sum(n for _, n in names)                 # region bytes a case
            # a run of cases with this very meta row, up to the piece's end: the cases whose
            # members are all plain uint8[n] arrays added as columns, run by run (no
            # per-case checks), every other one by itself
            j = c + 1
            while j < n_block and rows[j] is row:
                j += 1
            if held < CHUNK_BYTES and each:
                j = min(j, c + max(1, -(-(CHUNK_BYTES - held) // each)))
            plain = _plain(read[at:at + (j - c) * m], names)
            p = 0
            while p < len(plain):
                q = p + 1
                if plain[p]:                            # a run of plain cases: as columns
                    while q < len(plain) and plain[q]:
                        q += 1
                    rows_of(key).add_run(block[c + p:c + q], vals, read[at:at + (q - p) * m],
                                         where_l[at:at + (q - p) * m])
                    held += each * (q - p)
                else:                                   # this case by itself
                    i = block[c + p]
                    try:
                        got = _members(f, i, names, keys[at:at + m], read[at:at + m])
                    except DumpError:                   # the per-case path reports it
                        got = None
                    if got is None:
                        rest.append(i)
                    else:
                        rows_of(key).add(i, vals, got[0], got[1], where_l[at:at + m])
                        held += each
                at += (q - p) * m
                p = q
            c = j
            if held >= CHUNK_BYTES:
                yield [r.group(n) for n, r in enumerate(acc.values())]
                acc, held = {}, 0
    if acc:
        yield [r.group(n) for n, r in enumerate(acc.values())]


def stackable(f: DumpFile) -> bool:
    """Whether :func:`stack_regions` is worth trying on ``f``: version 1 with at least
    :data:`MIN_CASES` cases."""
    return f.stacked is None and f.version == 1 and f.count >= MIN_CASES


__all__ = ["stack_regions", "stackable", "MIN_CASES", "CHUNK_BYTES"]
