"""Many members of one version-1 archive read at once (the regions reader's input).

A version-1 file of layout ``"regions"`` holds one archive member per case and field: a
file of 1000 cases is some 5000 members. Read one by one (:func:`.format._read_member`),
each costs ~14 us of Python -- local header, CRC-32 call, ``.npy`` header, array -- far more
than the bytes. :func:`read_members` does the same reads as columns: the local headers and
``.npy`` headers of all members (deflated ones once inflated, each into its place in one
buffer) are checked with numpy in one pass each (a header text repeats from member to
member: each distinct one is parsed once), every member's CRC-32 is still checked, one C
call a member straight on the archive's mapped bytes, and a small member whose stored bytes
repeat (the ``meta`` of cases that share everything) is read and checked once.

What it gives is exactly what ``DumpFile._get(key, view=True)`` gives where the one-by-one
reader reads the member (a read-only view of a stored member's bytes, a read-only array of
a deflated one), and None for anything else -- a member that is missing, encrypted, short,
of another ``.npy`` version, with a bad CRC or a bad deflate stream, a deflated one over
:data:`INFLATE_MAX` bytes, ...: the caller then asks ``_get``, whose errors are the per-case
path's.

>>> import numpy as np, tempfile, os
>>> from ascend_ref.verify.format import open_dump
>>> p = os.path.join(tempfile.mkdtemp(), "m.npz")
>>> np.savez(p, format="ascend_ref.dump", version=1, count=1, **{"c0.x": np.arange(3, dtype=np.uint8)})
>>> with open_dump(p) as f:
...     got = read_members(f, ["c0.x", "c0.y"])
...     print(got[0].tolist(), got[1])
[0, 1, 2] None
"""

from __future__ import annotations

import mmap
import zlib
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .format import _codec, _le16, _npy_header
from .parallel import SPLIT_MIN, both

if TYPE_CHECKING:
    from .format import DumpFile

#: a stored member at least this long has its CRC-32 taken by libdeflate (when the system has
#: it) through its address: ~0.5 us a call against zlib's ~0.3 us, but 12 GB/s against 4
#: (measured here: 4 KiB 0.98 against 1.27 us, 512 bytes 0.55 against 0.41)
LIBDEFLATE_MIN = 2048
#: members of at most this many stored bytes are read once per distinct byte string
SMALL = 1024
#: deflated members of at most this many bytes are inflated here, into one buffer a block
#: of members (a longer one is left to the one-by-one reader, into its own buffer): the
#: buffer of a block of 512 cases stays near :data:`.regions.CHUNK_BYTES` at worst
INFLATE_MAX = 1 << 16
_MAGIC = np.frombuffer(b"\x93NUMPY\x01\x00", np.uint8)
_LOCAL = np.frombuffer(b"PK\x03\x04", np.uint8)


def read_members(f: "DumpFile", keys: Sequence[str],
                 at: Optional[np.ndarray] = None) -> List[Optional[np.ndarray]]:
    """Members ``keys`` of the version-1 file ``f`` (names without ``.npy``), in order: each
    as ``f._get(key, view=True)`` reads it, or None where this reader does not take it.
    ``at`` (int64, one per key, -1 on entry): where a member given as a view of the
    archive's bytes starts there (its array data, as an offset in ``f._raw()``)."""
    out: List[Optional[np.ndarray]] = [None] * len(keys)
    zdir, raw = f._zdir, f._raw()
    if zdir is None or raw is None or not keys or f.stacked is not None:
        return out
    row = zdir.rows([k + ".npy" for k in keys])
    have = np.flatnonzero(row >= 0)
    if not have.size:
        return out
    where = have                              # key position of each member found
    e = zdir.cols[row[have]]
    off, method, flags, csize, usize, crc = e.T
    raw8 = np.frombuffer(raw, np.uint8)
    n = raw8.size
    ok = ((method == 0) | (method == 8)) & (flags & 1 == 0) & (off >= 0) & (off + 30 <= n)
    lh = np.where(ok, off, 0)                 # the local headers
    ok &= (raw8[lh[:, None] + np.arange(4)] == _LOCAL).all(1)
    start = data_starts(raw8, lh)
    ok &= start + csize <= n
    mv = memoryview(raw)
    try:
        first = repeats(mv, e, start, ok)
        lead = ok & (first == np.arange(len(where)))
        stored = np.flatnonzero(lead & (method == 0) & (csize == usize))
        if stored.size:
            _columns(raw, raw8, stored, start[stored], usize[stored], crc[stored], where, out,
                     at)
        packed = np.flatnonzero(lead & (method == 8) & (usize <= INFLATE_MAX))
        if packed.size:
            _inflated(mv, raw8, packed, start, csize, usize, crc, where, out)
    finally:
        mv.release()
    copy = np.flatnonzero(ok & ~lead)          # repeats: the first one's array
    dst, src = where[copy], where[first[copy]]
    for d, c in zip(dst.tolist(), src.tolist()):
        out[d] = out[c]
    if at is not None:
        at[dst] = at[src]
    return out


def data_starts(raw8: np.ndarray, header: np.ndarray) -> np.ndarray:
    """int64: where each member's stored bytes start, from its local header's offset
    ``header`` in the archive's bytes ``raw8`` (30 bytes, then the name and extra field)."""
    return header + 30 + _le16(raw8, header + 26) + _le16(raw8, header + 28)


def repeats(mv: memoryview, e: np.ndarray, start: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """int64: for each member (directory entry ``e[k]``: offset, method, flags, csize,
    usize, crc; its bytes at ``start[k]`` of ``mv``) the first one among those where ``ok``
    with the same entry fields and the same stored bytes, at most :data:`SMALL` of them (the
    same bytes read the same: read and check the first, share it), else itself.

    >>> e = np.array([[0, 0, 0, 2, 2, 7]] * 3 + [[0, 8, 0, 2, 2, 7]])   # the last: deflated
    >>> start = np.array([0, 2, 4, 0])
    >>> for buf in (b"abab" + b"ax", bytearray(b"abab" + b"ax")):
    ...     print(repeats(memoryview(buf), e, start, np.ones(4, bool)).tolist())
    [0, 0, 2, 3]
    [0, 0, 2, 3]
    """
    first = np.arange(len(e))
    csize, crc = e[:, 3], e[:, 5]
    seen: Dict[Tuple[int, bytes], int] = {}
    small = np.flatnonzero(ok & (csize <= SMALL))
    if small.size > 1:                    # only a CRC that repeats can be a repeat
        _, inv, cnt = np.unique(crc[small], return_inverse=True, return_counts=True)
        small = small[cnt[inv.reshape(-1)] > 1]
    if not small.size:
        return first
    # one int per distinct entry (fields sorted, runs numbered) and plain lists: a numpy
    # row and scalars a member cost ~2 us, this ~0.3 (mmap slices are bytes already)
    f = e[small, 1:]
    order = np.lexsort(f.T[::-1])
    runs = np.ones(len(order), np.int64)
    runs[1:] = (f[order[1:]] != f[order[:-1]]).any(axis=1)
    entry = np.empty(len(order), np.int64)
    entry[order] = np.cumsum(runs)
    at, size = start[small].tolist(), csize[small].tolist()
    rows, put = zip(entry.tolist(), at, size, small.tolist()), seen.setdefault
    obj = mv.obj
    if isinstance(obj, (bytes, mmap.mmap)):
        got = [put((k, obj[a:a + n]), p) for k, a, n, p in rows]
    else:
        got = [put((k, bytes(mv[a:a + n])), p) for k, a, n, p in rows]
    first[small] = got
    return first


def _inflated(mv: memoryview, raw8: np.ndarray, idx: np.ndarray, start: np.ndarray,
              csize: np.ndarray, usize: np.ndarray, crc: np.ndarray, where: np.ndarray,
              out: list) -> None:
    """Deflated members, each inflated into its place in one buffer (:func:`inflate_into`)
    and then checked as stored members are."""
    joined, j8, at, good = inflate_into(mv, raw8, start[idx], csize[idx], usize[idx])
    keep = np.flatnonzero(good)
    j8.flags.writeable = False            # as the one-by-one reader gives a view's bytes
    if keep.size:
        _columns(joined, j8, idx[keep], at[keep], usize[idx][keep], crc[idx[keep]], where,
                 out)


def inflate_into(mv: memoryview, raw8: np.ndarray, start: np.ndarray, csize: np.ndarray,
                 size: np.ndarray) -> Tuple[bytearray, np.ndarray, np.ndarray, np.ndarray]:
    """``(joined, joined8, at, good)``: the raw deflate streams ``mv[start[k]:start[k] +
    csize[k]]`` inflated back to back into one buffer (``joined``; ``joined8`` its uint8
    view), stream ``k`` at ``at[k]``; ``good[k]``: it inflated to exactly ``size[k]`` bytes.
    libdeflate when the system has it, else zlib: the same bytes (inflating is exact)."""
    at = np.cumsum(size) - size
    joined = bytearray(int(size.sum()))
    j8 = np.frombuffer(joined, np.uint8)
    good = np.zeros(len(size), bool)
    codec = _codec()
    rows = zip(start.tolist(), csize.tolist(), at.tolist(), size.tolist())
    if codec.lib is not None:
        import ctypes

        fn, d = codec.lib.libdeflate_deflate_decompress, codec.decompressor()
        got = ctypes.c_size_t(0)
        ref = ctypes.byref(got)
        src, dst = raw8.ctypes.data, j8.ctypes.data
        for k, (s, c, a, u) in enumerate(rows):
            good[k] = fn(d, src + s, c, dst + a, u, ref) == 0 and got.value == u
    else:
        for k, (s, c, a, u) in enumerate(rows):
            try:
                b = zlib.decompress(mv[s:s + c], -15)
            except zlib.error:
                continue
            if len(b) == u:
                joined[a:a + u] = b
                good[k] = True
    return joined, j8, at, good


def _columns(buf: Any, buf8: np.ndarray, idx: np.ndarray, s: np.ndarray, size: np.ndarray,
             crc: np.ndarray, where: np.ndarray, out: list,
             at: Optional[np.ndarray] = None) -> None:
    """The members ``idx`` whose ``.npy`` bytes lie at ``s`` (``size`` long) in ``buf``:
    their headers checked as columns, each distinct header text parsed once, a CRC-32 a
    member; each good one becomes a read-only array on ``buf`` (``at``: where its data
    starts there)."""
    good = size >= 10
    hs = np.where(good, s, 0)
    good &= (buf8[hs[:, None] + np.arange(8)] == _MAGIC).all(1)
    hl = _le16(buf8, hs + 8)
    good &= 10 + hl <= size
    data = s + 10 + hl
    kind = np.full(len(s), -1, np.int64)          # which distinct header text
    kinds: List[Tuple[np.dtype, Tuple[int, ...], bool, int]] = []
    for h in np.unique(hl[good]).tolist():
        rows = np.flatnonzero(good & (hl == h))
        texts = buf8[s[rows, None] + 10 + np.arange(h)]
        while rows.size:                  # one pass per distinct text (a file has a few)
            same = (texts == texts[0]).all(1)
            parsed = _npy_header(texts[0].tobytes())
            if parsed is not None:
                kind[rows[same]] = len(kinds)
                kinds.append(parsed)
            rows, texts = rows[~same], texts[~same]
    if not kinds:
        return
    nbytes = np.array([count * dt.itemsize for dt, _, _, count in kinds], np.int64)
    good &= kind >= 0
    good &= s + size - data == nbytes[np.maximum(kind, 0)]
    sel = np.flatnonzero(good)
    good[sel] = _crcs(buf, buf8, s[sel], size[sel]) == crc[sel]
    for k, (dt, shape, fortran, _) in enumerate(kinds):
        rows = np.flatnonzero(good & (kind == k))
        if not rows.size:
            continue
        d, e = data[rows].tolist(), (s[rows] + size[rows]).tolist()
        arrs = [buf8[a:b] for a, b in zip(d, e)]
        if dt != np.uint8 or len(shape) != 1 or fortran:
            arrs = [a.view(dt) for a in arrs] if dt != np.uint8 else arrs
            arrs = [a.reshape(shape[::-1]).T if fortran else a.reshape(shape) for a in arrs]
        keys = where[idx[rows]]
        for r, a in zip(keys.tolist(), arrs):
            out[r] = a
        if at is not None:
            at[keys] = data[rows]


def _crcs(buf: Any, buf8: np.ndarray, s: np.ndarray, size: np.ndarray) -> np.ndarray:
    """int64: the CRC-32 of ``buf[s[r]:s[r] + size[r]]`` for each ``r``: libdeflate through
    the address for long members, zlib for short ones, a member of :data:`SPLIT_MIN` bytes or
    more in halves on two cores; many long members split between two cores (the calls
    release the GIL)."""
    got = np.zeros(len(s), np.int64)
    codec = _codec()
    lib = codec.lib
    big = (size >= LIBDEFLATE_MIN) & (size < SPLIT_MIN) if lib is not None else \
        np.zeros(len(s), bool)
    huge = size >= SPLIT_MIN
    rest = ~big & ~huge
    mv = memoryview(buf)
    try:
        z = zlib.crc32
        r = np.flatnonzero(rest)
        got[r] = [z(mv[a:a + n]) for a, n in zip(s[r].tolist(), size[r].tolist())]
        for h in np.flatnonzero(huge).tolist():
            got[h] = codec.crc32(mv[int(s[h]):int(s[h] + size[h])])
    finally:
        mv.release()
    r = np.flatnonzero(big)
    if r.size:
        f, base = lib.libdeflate_crc32, buf8.ctypes.data
        addr, n = (s[r] + base).tolist(), size[r].tolist()

        def part(lo: int, hi: int) -> List[int]:
            return [f(0, addr[k], n[k]) for k in range(lo, hi)]

        if int(size[r].sum()) >= SPLIT_MIN and r.size >= 2:
            half = r.size // 2
            a, b = both(lambda: part(0, half), lambda: part(half, r.size))
            got[r] = a + b
        else:
            got[r] = part(0, r.size)
    return got


__all__ = ["read_members", "data_starts", "repeats", "inflate_into", "LIBDEFLATE_MIN", "SMALL",
           "INFLATE_MAX"]
