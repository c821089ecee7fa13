"""Host side of :func:`ascend_ref.batch.run_cases`: vectorised preparation and compact windows.

:func:`prepare` turns a list of :class:`~ascend_ref.case.Case` into :class:`Rows` -- stacked
kernel parameters (one leading case axis), the UB window of every case and the cases they
came from -- grouped by static configuration:

* **Plain cases** (``chip`` a product id or profile, ``dtype`` text, a hashable option,
  ``saturate`` None or a bool, a 1-D ``uint8`` numpy UB, tensors exactly the instruction's
  operands, non-negative int addresses / sizes, int parameters, and a mask that
  :func:`ascend_ref.mask.parse` accepts as an int or a list of int words) are grouped by
  (instruction, product, dtype, option, saturate, mask mode). Every host-side check whose
  outcome can only depend on the group runs once, on the group's first case, through the
  per-case path (:meth:`~ascend_ref.registry.Instruction.prepare_case`): if it raises, every
  case of the group gets that code, exactly as each would alone. The per-case values
  (parameters, tensor addresses and sizes, mask words) are gathered into numpy arrays in one
  pass, with the same int32 stand-ins as :func:`ascend_ref.engine.int32_stand_in`.
* **Any other case** goes through the per-case path (the exact fallback): whatever it
  raises, its code; else its own parameters. Counter-mode cases (a
  :class:`~ascend_ref.mask.CounterMask`: the count decides the repeat count) always do.

**Compact windows.** A case whose every access its declared geometry allows (the source
footprint of its repeat count and strides, the result slots, the work-tensor need) and
whose every declared tensor lie inside its UB, with the repeat count and the strides in
range, runs on the bytes ``[base, end)`` only: ``base`` the lowest tensor address rounded
down to 1024 bytes (alignment rules read the same: every alignment unit divides 1024, as
:func:`~ascend_ref.engine.int32_stand_in` assumes), ``end`` the highest declared tensor end;
the kernel sees window addresses (``ub_base`` = ``base``, ``ub_len`` = ``end - base``), so
every rule decides as on the whole UB and no address computation overflows. Any other case
runs on its whole UB (``base`` 0), as before.

:func:`outcomes` merges the words a compact kernel returns into copies of the cases' UBs,
with the ``written`` / ``undefined`` byte masks the full kernel would give.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import functools
import itertools
import math
import mmap
import operator
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np

from . import engine, mask as masks, registry, scale
from .batch_args import is_int
from .case import Case, Outcome
from .constraints import Code, ConstraintError

#: window starts are multiples of this (every alignment unit divides it)
WINDOW_ALIGN = 1024
#: larger ints take the per-case path (no int64 overflow in the window arithmetic)
_PLAIN = 2**40
_U64 = (1 << 64) - 1
_UINT8 = np.dtype(np.uint8)
_ITEMSIZE = {"float16": 2, "half": 2, "fp16": 2, "int16": 2, "uint16": 2, "int16_t": 2,
             "uint16_t": 2, "float32": 4, "float": 4, "fp32": 4, "int32": 4, "uint32": 4,
             "int32_t": 4, "uint32_t": 4}


@dataclasses.dataclass
class Rows:
    """Cases of one static configuration, ready for the kernel: ``idx`` (positions in the
    caller's list), ``ubs`` (each case's UB, numpy), ``base`` / ``length`` (the window, real
    UB bytes ``[base, base + length)``) and ``p`` (the kernel parameters, every leaf with a
    leading case axis)."""

    ins: Any
    spec: engine.Spec
    idx: np.ndarray
    ubs: List[np.ndarray]
    base: np.ndarray
    length: np.ndarray
    p: Any
    #: the cases as :func:`ascend_ref.batch.run_batch` columns (``"{tensor}.addr"`` window
    #: addresses, ``"{tensor}.size"``, the parameters, ``"mask"``, ``"ub_base"``, ``"ub_len"``,
    #: ``"saturate"``; int32 / uint32 / bool, a leading case axis) and ``call`` = ``(product
    #: id, option, mask mode)``, for a group of plain cases; None where the per-case path
    #: prepared them (then only :attr:`p` exists)
    q: Optional[Dict[str, np.ndarray]] = None
    call: Optional[tuple] = None

    def __len__(self) -> int:
        return int(self.idx.size)

    @staticmethod
    def concat(parts: Sequence["Rows"]) -> "Rows":
        if len(parts) == 1:
            return parts[0]
        p = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *[r.p for r in parts])
        one_call = all(r.q is not None and r.call == parts[0].call and
                       r.q.keys() == parts[0].q.keys() for r in parts)   # type: ignore[union-attr]
        q = {k: np.concatenate([r.q[k] for r in parts])                 # type: ignore[index]
             for k in parts[0].q} if one_call and parts[0].q is not None else None
        return Rows(parts[0].ins, parts[0].spec, np.concatenate([r.idx for r in parts]),
                    [u for r in parts for u in r.ubs],
                    np.concatenate([r.base for r in parts]),
                    np.concatenate([r.length for r in parts]), p, q,
                    parts[0].call if q is not None else None)

    def take(self, start: int, stop: int) -> "Rows":
        return Rows(self.ins, self.spec, self.idx[start:stop], self.ubs[start:stop],
                    self.base[start:stop], self.length[start:stop],
                    jax.tree_util.tree_map(lambda x: x[start:stop], self.p),
                    None if self.q is None else {k: v[start:stop] for k, v in self.q.items()},
                    self.call)

    def windows(self, width: int, b: int, reuse: bool = False, slot: int = 0) -> np.ndarray:
        """``uint8[b, width]``: each case's window from byte 0, zeros after, rows past the
        cases copies of the first (a fixed batch shape); 64-byte aligned.

        ``reuse``: fill this thread's buffer ``slot`` of that shape (kept from the last
        call; only bytes that may be non-zero are cleared), so no fresh pages are faulted in
        per call: the array is valid until the next ``reuse`` call of the same shape and
        slot on the thread."""
        if reuse:
            out, dirty = _buffer(b, width, slot)
        else:
            out, dirty = aligned_zeros((b, width)), np.zeros(b, np.int64)
        m = len(self)
        ends = dirty.tolist()
        for j, (ub, a, n) in enumerate(zip(self.ubs, self.base.tolist(), self.length.tolist())):
            part = ub[a:a + n]
            k = part.size
            out[j, :k] = part
            if ends[j] > k:
                out[j, k:ends[j]] = 0
            ends[j] = k
        k0 = ends[0] if m else 0
        for j in range(m, b):
            out[j, :k0] = out[0, :k0]
            if ends[j] > k0:
                out[j, k0:ends[j]] = 0
            ends[j] = k0
        dirty[:] = ends
        return out

    def params(self, b: int) -> Any:
        m = len(self)
        if m == b:
            return self.p
        return scale.pad_rows(self.p, b)


_BUFFERS = threading.local()
#: window buffers kept per thread (the most recently used shapes and slots)
_KEEP = 4


def _buffer(b: int, width: int, slot: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    """This thread's reusable ``uint8[b, width]`` window buffer ``slot`` and, per row, the
    end of the bytes that may be non-zero (zeros past it)."""
    cache = getattr(_BUFFERS, "cache", None)
    if cache is None:
        cache = _BUFFERS.cache = collections.OrderedDict()
    key = (b, width, slot)
    got = cache.pop(key, None)
    if got is None:
        got = (aligned_zeros((b, width)), np.zeros(b, np.int64))
    cache[key] = got
    while len(cache) > _KEEP:
        cache.popitem(last=False)
    return got


def _aligned_part(buf: np.ndarray, shape: Tuple[int, int], align: int) -> np.ndarray:
    """The ``uint8[shape]`` view of ``buf`` (at least ``align`` bytes longer) that starts
    at its first ``align``-byte boundary."""
    n = int(shape[0]) * int(shape[1])
    off = (-buf.ctypes.data) % align
    return buf[off:off + n].reshape(shape)


def _aligned_empty(shape: Tuple[int, int], align: int = 64) -> np.ndarray:
    """Uninitialised ``uint8`` of ``shape`` starting at an ``align``-byte boundary."""
    return _aligned_part(np.empty(int(shape[0]) * int(shape[1]) + align, np.uint8), shape,
                         align)


#: large result buffers are recycled by :func:`result_empty` (False: never; A/B, tests)
RECYCLE = True
#: recycled: buffers of at least _RECYCLE_MIN and at most _RECYCLE_MAX bytes, the last
#: _RECYCLE_KEEP of them and no more than _RECYCLE_TOTAL bytes in all (smaller ones come
#: from malloc's free lists without faults). Four: a verify group holds its before and
#: after columns, its windows (run_batch's result, in place) and the next call's result
_RECYCLE_MIN, _RECYCLE_MAX, _RECYCLE_KEEP, _RECYCLE_TOTAL = 1 << 20, 1 << 28, 4, 1 << 29
_RECYCLED: List[np.ndarray] = []
_RECYCLE_LOCK = threading.Lock()


def _refcount_works() -> bool:
    """Whether ``sys.getrefcount`` counts references as :func:`result_empty` needs (one per
    holder; not so where counts are deferred or immortal)."""
    held = [np.empty(8, np.uint8)]
    free = sys.getrefcount(held[0]) == 2
    view = held[0][2:]
    used = sys.getrefcount(held[0]) == 3
    del view
    return free and used and sys.getrefcount(held[0]) == 2


_REFCOUNTS = _refcount_works()


def result_empty(shape: Tuple[int, int], align: int = 64, zero: bool = False) -> np.ndarray:
    """An ``align``-byte aligned ``uint8[shape]`` (uninitialised, or zeros when ``zero``) for
    a result the caller fills: :func:`ascend_ref.batch.run_batch`'s output, ``verify``'s
    windows.

    Fresh memory from the OS costs a page fault and a zero fill per page on its first write
    (on a young VM, writing a fresh 17 MB took 10 ms against 1.3 ms into reused memory). So
    the owning arrays of the last few results are kept, and one is handed out again once
    nothing else refers to it: every numpy view (and every JAX array made from one without a
    copy) holds its owner, so an owner that only this list refers to is one whose earlier
    result the caller has dropped entirely. A result the caller still holds never changes.

    >>> a = result_empty((4, 1 << 18)); p = a.ctypes.data; del a
    >>> result_empty((4, 1 << 18)).ctypes.data == p or not RECYCLE or not _REFCOUNTS
    True
    """
    need = int(shape[0]) * int(shape[1]) + align
    if not (RECYCLE and _REFCOUNTS and _RECYCLE_MIN <= need <= _RECYCLE_MAX):
        return (aligned_zeros if zero else _aligned_empty)(shape, align)
    buf = None
    with _RECYCLE_LOCK:
        for k in range(len(_RECYCLED)):
            # referred to by the list and by getrefcount's argument only: free
            if _RECYCLED[k].nbytes == need and sys.getrefcount(_RECYCLED[k]) == 2:
                buf = _RECYCLED.pop(k)
                break
        if buf is None:
            buf = np.empty(need, np.uint8)
        _RECYCLED.append(buf)
        del _RECYCLED[:-_RECYCLE_KEEP]
        while len(_RECYCLED) > 1 and sum(a.nbytes for a in _RECYCLED) > _RECYCLE_TOTAL:
            del _RECYCLED[0]                 # the oldest goes first, never the one handed out
    out = _aligned_part(buf, shape, align)
    if zero:
        out.fill(0)
    return out


def column_of(parts: Sequence[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)`` of 1-D ``uint8`` arrays, written into a
    :func:`result_empty` buffer (a large column reuses dropped memory instead of faulting in
    fresh pages: ``verify`` stacks a file's region bytes this way).

    >>> column_of([np.arange(3, dtype=np.uint8), np.arange(2, dtype=np.uint8)]).tolist()
    [0, 1, 2, 0, 1]
    """
    n = sum(int(p.size) for p in parts)
    out = result_empty((1, n))[0]
    if parts:
        np.concatenate(parts, out=out)
    return out


def aligned_zeros(shape: Tuple[int, int], align: int = 64) -> np.ndarray:
    """``uint8`` zeros starting at an ``align``-byte boundary: the CPU backend reads such an
    array in place (``np.zeros`` of a large array is 16-byte aligned and gets copied).

    >>> a = aligned_zeros((4, 1000))
    >>> a.shape, a.ctypes.data % 64, int(a.sum())
    ((4, 1000), 0, 0)
    """
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2
            and all(is_int(d) and d >= 0 for d in shape)):
        raise ValueError(f"aligned_zeros: shape = {shape!r}: expected (B, N), two ints >= 0")
    if not is_int(align) or align < 1:
        raise ValueError(f"aligned_zeros: align = {align!r}: expected an int >= 1 (bytes)")
    return _aligned_part(np.zeros(int(shape[0]) * int(shape[1]) + align, np.uint8), shape,
                         align)


#: large byte masks come from :func:`sparse_zeros`' anonymous mappings (False: ``np.zeros``;
#: A/B, tests); at least this many bytes (smaller ones come from malloc without faults)
SPARSE_MMAP, _SPARSE_MIN = True, 1 << 22
#: private (copy-on-write after a fork, plain anonymous memory), not the default shared
#: mapping; Windows has no flags (its anonymous mappings are private to the process)
_PRIVATE: Dict[str, Any] = {"flags": mmap.MAP_PRIVATE} if hasattr(mmap, "MAP_PRIVATE") else {}


def sparse_zeros(shape: Tuple[int, ...]) -> np.ndarray:
    """``bool`` zeros of ``shape`` for a table that is mostly never written: the
    ``written`` / ``undefined`` byte masks of a batch's outcomes (a result touches a few
    hundred bytes of each case's UB).

    A large one is an anonymous memory mapping: its pages are the OS's zero page until
    written, then faulted in 4 KiB at a time, only where written, and given back when the
    last view goes. ``np.zeros`` of the same size either clears every byte (malloc's
    reused memory) or, fresh from the OS, is marked for 2 MiB pages (numpy advises huge
    pages above 4 MiB), so that one written byte a row zero-fills the whole table; on the
    development VM such a fault sometimes stalled for tens of milliseconds (measured: 256
    rows of 65,792 bytes, two tables, one 512-byte run set a row, best of 12 calls holding
    the last two results: ``np.zeros`` 1.3--2 ms with calls of 17--44 ms; shared mappings
    0.8--1.2 ms, private ones 0.5--0.8 ms, with one call of 5 ms in 24). Smaller tables,
    and any platform where the mapping fails, get ``np.zeros``.

    >>> t = sparse_zeros((256, 1 << 16)); t[:, 100] = True
    >>> int(t.sum()), t.dtype.name, t.flags.writeable
    (256, 'bool', True)
    """
    n = math.prod(int(d) for d in shape)
    if SPARSE_MMAP and n >= _SPARSE_MIN:
        try:
            return np.frombuffer(mmap.mmap(-1, n, **_PRIVATE), np.bool_).reshape(shape)
        except (OSError, ValueError):   # no anonymous mapping here (or none left): plain zeros
            pass
    return np.zeros(shape, bool)


def written_zeros(shape: Tuple[int, int]) -> np.ndarray:
    """``bool`` zeros of ``shape`` for a batch's ``written`` byte masks, where every case
    writes a few bytes of its row: rows narrower than :data:`_WRITTEN_DENSE` bytes come from
    :func:`result_empty`'s recycled memory, cleared (a pass over the whole table), wider
    ones from :func:`sparse_zeros` (a page fault for every page written, ~one a row).

    Clearing costs the table's bytes, the faults ~1.5 us a row: run_cases, WholeReduceMin
    half, best of 9 in turns, mapped / cleared ms: R = 16 (1024 rows of 4,160 bytes)
    7.3 / 5.5, R = 255 (256 rows of 66,304 bytes) 4.7 / 4.6.

    >>> w = written_zeros((1024, 4160)); w[:, 7] = True
    >>> int(w.sum()), w.dtype.name
    (1024, 'bool')
    """
    n = int(shape[0]) * int(shape[1])
    # cleared only in memory that is not fresh: a table past the recycled sizes would be
    # faulted in whole
    if WRITTEN_DENSE and int(shape[1]) < _WRITTEN_DENSE and n + 64 <= _RECYCLE_MAX:
        return result_empty(shape, zero=True).view(np.bool_)
    return sparse_zeros(shape)


#: False: every ``written`` table comes from :func:`sparse_zeros` (A/B measurements, tests);
#: rows narrower than this many bytes are cleared instead (:func:`written_zeros`)
WRITTEN_DENSE, _WRITTEN_DENSE = True, 1 << 15

#: False: run_cases' ``written`` / ``undefined`` tables are never handed out again (A/B
#: measurements, tests)
MASK_POOL = True
#: run_cases' mask tables handed out before (:func:`pooled_mask`): ``(owner, marks, shape)``
#: -- the flat ``bool`` owner of the table, the boxes marked in it since it was cleared and
#: the shape they were marked in (a table goes out again for any shape of its size)
_MASK_POOL: List[Tuple[np.ndarray, List[Tuple[int, int, int, int]], Tuple[int, int]]] = []


def pooled_mask(shape: Tuple[int, int]) -> Tuple[np.ndarray, Optional[list]]:
    """``(table, marks)``: ``bool`` zeros of ``shape`` for run_cases' ``written`` or
    ``undefined`` masks and the list its one writer (:func:`_merge`) appends every box
    ``(row0, row1, col0, col1)`` it marks to; ``marks`` None: a table of
    :func:`written_zeros`, not pooled.

    A table whose outcomes were all dropped is handed out again after clearing only its
    marked boxes (a result marks a few hundred bytes a row): a fresh table costs a page
    fault for every row it marks (256 rows of 66,304 bytes: ~0.35 ms), clearing the same
    table in full ~1 ms. The outcomes' mask rows are read-only views (:meth:`Sink.finish`),
    so nothing but the merge marks a pooled table. A table whose marks cover more than half
    of it is not reused (a scattered chunk marks its bounding box).

    >>> t, marks = pooled_mask((256, 1 << 16)); t[:, 8:16] = True; marks.append((0, 256, 8, 16))
    >>> del t; t2, _ = pooled_mask((256, 1 << 16)); bool(t2.any())
    False
    """
    need = int(shape[0]) * int(shape[1])
    if not (MASK_POOL and RECYCLE and _REFCOUNTS and _RECYCLE_MIN <= need <= _RECYCLE_MAX):
        return written_zeros(shape), None
    with _RECYCLE_LOCK:
        got = None
        for k in range(len(_MASK_POOL)):
            # referred to by its pool entry and by getrefcount's argument only: dropped
            if _MASK_POOL[k][0].size == need and sys.getrefcount(_MASK_POOL[k][0]) == 2:
                got = _MASK_POOL.pop(k)
                break
        if got is not None and sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in got[1]) * 2 > need:
            got = None                                     # marked over half: a fresh one
        if got is not None:
            owner, marks, marked_in = got
            old = owner.reshape(marked_in)                 # the boxes' own coordinates
            for r0, r1, c0, c1 in marks:
                old[r0:r1, c0:c1] = False
            marks.clear()
        else:                  # its own owner (the rows' views refer to it: their refcount)
            owner, marks = sparse_zeros((need,)), []
            while isinstance(owner.base, np.ndarray):      # the array views refer to
                owner = owner.base
        table = owner.reshape(shape)
        _MASK_POOL.append((owner, marks, (int(shape[0]), int(shape[1]))))
        del _MASK_POOL[:-_RECYCLE_KEEP]
        while len(_MASK_POOL) > 1 and sum(e[0].nbytes for e in _MASK_POOL) > _RECYCLE_TOTAL:
            del _MASK_POOL[0]
    return table, marks


# ------------------------------------------------------------------ preparation ------------

def _stack(p: Any, m: int) -> Any:
    """Every leaf of one case's parameters, repeated for ``m`` cases (numpy)."""
    return jax.tree_util.tree_map(lambda x: np.repeat(np.asarray(x)[None], m, axis=0), p)


def _override(p: Any, values: Dict[str, np.ndarray]) -> Any:
    """``p`` (stacked) with the named per-case values (``"repeat"``, ``"src.addr"``, ``"mask"``,
    ``"ub_len"``, ...) replaced."""
    if isinstance(p, dict):
        return {**p, **values}
    values = dict(values)                                  # a typed parameter tree
    mask = values.pop("mask")
    return p.overridden(values).replace(mask=mask)


def _plain_int(v: Any) -> bool:
    return bool((type(v) is int or isinstance(v, np.integer)) and -_PLAIN <= v < _PLAIN)


def _mask_words(mask: Any, lanes: int, word_order: str) -> Optional[Tuple[str, tuple]]:
    """``(mode, uint32 words)`` for a mask :func:`ascend_ref.mask.parse` accepts without
    raising and reads as an int or a list of words; None for anything else."""
    if type(mask) is int or isinstance(mask, np.integer):
        m = int(mask)
        return ("count", (m, 0, 0, 0)) if 0 <= m < 2**31 else None
    if not isinstance(mask, (list, tuple)):
        return None
    if not all(type(w) is int or isinstance(w, np.integer) for w in mask):
        return None
    words = [int(w) for w in mask]
    if word_order == "tik":
        if len(words) != 2:
            return None
        words = masks.low_first(words, word_order)       # the one home of the TIK swap
    elif len(words) not in ((2,) if lanes == 128 else (1, 2)):
        return None
    if not all(0 <= w <= _U64 for w in words):
        return None
    words = (words + [0])[:2]
    return "bits", (words[0] & 0xFFFFFFFF, words[0] >> 32, words[1] & 0xFFFFFFFF,
                    words[1] >> 32)


_STATIC: Dict[Tuple[str, str], tuple] = {}


def _static(api: str, dtype: str) -> Optional[tuple]:
    """``(ins, element size, operands, params, word order)`` of a plain case's API and dtype
    text (looked up once, not per case), or None (the per-case path)."""
    got = _STATIC.get((api, dtype))
    if got is None:
        ins = registry.get(api)
        size = _ITEMSIZE.get(dtype)
        if ins is None or size is None:
            return None
        got = _STATIC[(api, dtype)] = (ins, size, ins.operands, tuple(ins.params),
                                       ins.word_order)
    return got


_INTS, _TUPLES, _PAIRS = {int}, {tuple}, {2}


def _getter(keys: Sequence[str]) -> Any:
    """``d -> tuple(d[k] for k in keys)`` in C (:func:`operator.itemgetter`; one key gives a
    1-tuple too)."""
    if len(keys) == 1:
        one = operator.itemgetter(keys[0])
        return lambda d: (one(d),)
    return operator.itemgetter(*keys) if keys else (lambda d: ())


@functools.lru_cache(maxsize=None)
def _getters(operands: Tuple[str, ...], names: Tuple[str, ...]) -> Tuple[Any, Any]:
    """The item getters of an instruction's operands and parameters (made once each)."""
    return _getter(operands), _getter(names)


def _case_values(tensors: Any, operands: Sequence[str], params: Any,
                 names: Sequence[str]) -> Optional[List[int]]:
    """A plain case's ints -- ``addr, size`` of every operand (non-negative), then every
    parameter -- each below ``_PLAIN`` in size; None when one is missing, not an integer
    (Python or numpy; not a bool) or too large (the per-case path decides then).

    The common case (every pair a tuple of two Python ints, every parameter a Python int)
    is read and checked by C loops (item getters, ``map``, ``min`` / ``max``: ~2.5 us a
    case against ~3.5 us with list comprehensions, measured); anything else takes the
    value-by-value loop below, which decides every case alone."""
    of_tensors, of_params = _getters(tuple(operands), tuple(names))  # tuples already: no copy
    try:
        pairs = of_tensors(tensors)
        pv = of_params(params)
    except (KeyError, TypeError):
        return None
    if _TUPLES.issuperset(map(type, pairs)) and _PAIRS.issuperset(map(len, pairs)):
        tv = list(itertools.chain.from_iterable(pairs))
        if _INTS.issuperset(map(type, tv)) and _INTS.issuperset(map(type, pv)) and \
                (not tv or (min(tv) >= 0 and max(tv) < _PLAIN)) and \
                (not pv or (min(pv) >= -_PLAIN and max(pv) < _PLAIN)):
            tv.extend(pv)
            return tv
    vals: List[int] = []
    try:
        for pr in pairs:
            a, n = pr
            if not ((type(a) is int or isinstance(a, np.integer)) and
                    (type(n) is int or isinstance(n, np.integer)) and
                    0 <= a < _PLAIN and 0 <= n < _PLAIN):
                return None
            vals.append(int(a))
            vals.append(int(n))
        for v in pv:
            if not ((type(v) is int or isinstance(v, np.integer)) and -_PLAIN <= v < _PLAIN):
                return None
            vals.append(int(v))
    except (TypeError, ValueError):
        return None
    return vals


def _group_key(case: Case) -> Optional[tuple]:
    """The host group of a plain case and its per-case values, or None (per-case path)."""
    api, dtype = case.api, case.dtype
    st = _static(api, dtype) if type(api) is str and type(dtype) is str else None
    ub = case.ub
    if st is None or type(ub) is not np.ndarray or ub.ndim != 1 or \
            (ub.dtype is not _UINT8 and ub.dtype != _UINT8):
        return None
    ins, size, operands, names, word_order = st
    sat = case.saturate
    if sat is not None and type(sat) is not bool:
        return None
    tensors = case.tensors
    if not isinstance(tensors, dict) or len(tensors) != len(operands) or \
            not isinstance(case.params, dict) or len(case.params) != len(names):
        return None                       # the per-case path names what is missing or extra
    vals = _case_values(tensors, operands, case.params, names)
    if vals is None:
        return None
    try:
        hash(case.option)
    except TypeError:
        return None
    # the count form has no mask: every lane (engine.prepare does the same)
    mask = _mask_words(256 // size if ins.kernel.count_form else case.mask, 256 // size,
                       word_order)
    if mask is None:
        return None
    chip = case.chip if isinstance(case.chip, str) else ("profile", id(case.chip))
    key = (api, chip, dtype, type(case.option), case.option, sat, mask[0])
    return key, (vals, mask[1])


_HEAD = operator.attrgetter("api", "chip", "dtype", "option", "saturate")
_OF = {name: operator.attrgetter(name) for name in ("ub", "tensors", "params", "mask")}
_NDIM, _DTYPE = operator.attrgetter("ndim"), operator.attrgetter("dtype")
_STRIDES = operator.attrgetter("strides")
#: a writable array's first byte as a ctypes object (its address: ``ctypes.addressof``)
_FROM_BUFFER: Any = ctypes.c_char.from_buffer


def _one_type(values: Sequence[Any], *types: type) -> Optional[type]:
    """The one type of every value when it is one of ``types``, else None."""
    got = set(map(type, values))
    return got.pop() if len(got) == 1 and got <= set(types) else None


def _plain_ints(values: List[Any], lo: int, hi: int) -> Optional[np.ndarray]:
    """``values`` (Python ints, no bools) as int64 when every one is in ``[lo, hi)``; else
    None."""
    if values and not _INTS.issuperset(map(type, values)):
        return None
    try:
        a = np.array(values, np.int64) if values else np.zeros(0, np.int64)
    except OverflowError:                   # past 64 bits: outside any plain range
        return None
    return a if not a.size or (int(a.min()) >= lo and int(a.max()) < hi) else None


def _bulk_masks(given: List[Any], lanes: int, word_order: str,
                count_form: bool) -> Optional[Tuple[str, np.ndarray]]:
    """:func:`_mask_words` of every mask of a group at once: ``(mode, uint32[m, 4])`` when
    every mask is a Python int (a count) or every one a list / tuple of Python ints of one
    length; None when :func:`_mask_words` might answer otherwise for one of them."""
    m = len(given)
    words = np.zeros((m, 4), np.uint32)
    if count_form:
        words[:, 0] = lanes
        return "count", words
    kind = _one_type(given, int, list, tuple)
    if kind is int:
        a = _plain_ints(given, 0, 2**31)
        if a is None:
            return None
        words[:, 0] = a
        return "count", words
    if kind is None:
        return None
    lens = set(map(len, given))
    if len(lens) != 1:
        return None
    n = lens.pop()
    if n not in ((2,) if word_order == "tik" or lanes == 128 else (1, 2)):
        return None
    flat = list(itertools.chain.from_iterable(given))
    if not _INTS.issuperset(map(type, flat)):
        return None
    try:
        w = np.array(flat, np.uint64).reshape(m, n)      # a negative word or one past 64 bits
    except (OverflowError, ValueError):                # raises: the per-case path decides
        return None
    w = masks.low_first_rows(w, word_order)
    for j in range(n):
        words[:, 2 * j] = (w[:, j] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        words[:, 2 * j + 1] = (w[:, j] >> np.uint64(32)).astype(np.uint32)
    return "bits", words


def _bulk_group(cases: Sequence[Case], heads: Sequence[tuple]) -> Optional[Tuple[
        tuple, np.ndarray, np.ndarray]]:
    """``(key, values int64[m, k], mask words uint32[m, 4])`` of cases whose ``heads``
    (api, chip, dtype, option, saturate) are equal, checked as columns: what
    :func:`_group_key` gives every one of them (one key, its values row by row) when each
    column holds one type and every value is plain; None when one might not be (then each
    case is keyed alone)."""
    api, chip, dtype, option, sat = heads[0]
    if type(api) is not str or type(dtype) is not str:
        return None
    st = _static(api, dtype)
    if st is None or (sat is not None and type(sat) is not bool):
        return None
    ins, size, operands, names, word_order = st
    # equal heads of other types (True == 1, a str subclass): each case alone
    if len(heads) > 1 and any(len(set(map(type, col))) != 1 for col in zip(*heads)):
        return None
    m = len(cases)
    ubs = list(map(_OF["ub"], cases))
    if _one_type(ubs, np.ndarray) is None or set(map(_NDIM, ubs)) != {1} or \
            set(map(_DTYPE, ubs)) != {_UINT8}:
        return None
    tensors = list(map(_OF["tensors"], cases))
    if _one_type(tensors, dict) is None or set(map(len, tensors)) != {len(operands)}:
        return None
    params = list(map(_OF["params"], cases))
    if _one_type(params, dict) is None or set(map(len, params)) != {len(names)}:
        return None
    of_tensors, of_params = _getters(tuple(operands), tuple(names))
    try:
        pairs = list(itertools.chain.from_iterable(map(of_tensors, tensors)))
        pv = list(itertools.chain.from_iterable(map(of_params, params)))
    except (KeyError, TypeError):
        return None
    if pairs and (_one_type(pairs, tuple) is None or set(map(len, pairs)) != {2}):
        return None
    tv = _plain_ints(list(itertools.chain.from_iterable(pairs)), 0, _PLAIN)
    pa = _plain_ints(pv, -_PLAIN, _PLAIN)
    if tv is None or pa is None:
        return None
    masks = _bulk_masks(list(map(_OF["mask"], cases)), 256 // size, word_order,
                        ins.kernel.count_form)
    if masks is None:
        return None
    vals = np.concatenate([tv.reshape(m, -1), pa.reshape(m, -1)], axis=1)
    key = (api, chip if isinstance(chip, str) else ("profile", id(chip)), dtype,
           type(option), option, sat, masks[0])
    return key, vals, masks[1]


def group_keys(cases: Sequence[Case]) -> Tuple[List[int], Dict[tuple, Tuple[np.ndarray,
                                                                            np.ndarray,
                                                                            np.ndarray]]]:
    """:func:`_group_key` of every case, grouped: ``(lone, groups)`` -- the positions of
    the cases it gives None (ascending), and per key (in the order of each key's first
    case) ``(positions, values, mask words)`` of its cases, ascending, the values and words
    row by row those :func:`_group_key` gives.

    The cases are split by their head (api, chip, dtype, option, saturate) and each head's
    cases checked column by column in C loops (:func:`_bulk_group`; 1024 cases of one call:
    ~1.5 us a case against ~3.6 us one by one); a head whose columns do not pass keys its
    cases one by one.

    >>> from ascend_ref.case import Case
    >>> c = Case("whole_reduce_sum", "atlas_a2", "float32", None, 64, {"repeat": 1,
    ...     "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
    ...     {"dst": (256, 8), "src": (0, 64)}, np.zeros(512, np.uint8))
    >>> lone, groups = group_keys([c, c, dataclasses.replace(c, mask=-1)])
    >>> lone, [g[0].tolist() for g in groups.values()]
    ([2], [[0, 1]])
    """
    heads = list(map(_HEAD, cases))
    try:
        ids: Dict[tuple, int] = {}
        of = [ids.setdefault(h, len(ids)) for h in heads]
    except TypeError:                  # an unhashable head: each case alone
        ids, of = {}, []
    parts: Dict[tuple, List[Tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    first: Dict[tuple, int] = {}
    singles: List[int] = []
    if ids:
        which = np.asarray(of, np.int64)
        order = np.argsort(which, kind="stable")
        cuts = np.flatnonzero(np.diff(which[order])) + 1
        for ks in np.split(order, cuts):
            kl = ks.tolist()
            got = _bulk_group([cases[k] for k in kl], [heads[k] for k in kl])
            if got is None:
                singles.extend(ks.tolist())
                continue
            key, vals, words = got
            parts.setdefault(key, []).append((ks, vals, words))
            first[key] = min(first.get(key, len(cases)), int(ks[0]))
    else:
        singles = list(range(len(cases)))
    lone, one = _keys_one_by_one(cases, sorted(singles))
    for key, got_one in one.items():
        parts.setdefault(key, []).append(got_one)
        first[key] = min(first.get(key, len(cases)), int(got_one[0][0]))
    groups = {}
    for key in sorted(parts, key=first.__getitem__):
        got_parts = parts[key]
        if len(got_parts) == 1:
            ks, vals, words = got_parts[0]
        else:
            ks = np.concatenate([g[0] for g in got_parts])
            pick = np.argsort(ks, kind="stable")
            ks = ks[pick]
            vals = np.concatenate([g[1] for g in got_parts])[pick]
            words = np.concatenate([g[2] for g in got_parts])[pick]
        groups[key] = (ks, vals, words)
    return lone, groups


def _int32(v: np.ndarray) -> np.ndarray:
    """int64 values as the int32 the kernel sees (:func:`ascend_ref.engine.int32_stand_in`)."""
    out = (v < -(2**31)) | (v >= 2**31)
    if not out.any():
        return v.astype(np.int32)
    stand = np.where(v > 0, 2**30, -(2**30)) + v % 1024
    return np.where(out, stand, v).astype(np.int32)


def coarse_r_max(spec: engine.Spec, hi: int, heights: Sequence[int]) -> int:
    """The table height of a case (``heights``, then the API's maximum ``hi``)."""
    for h in heights:
        if spec.r_max <= h:
            return min(h, hi)
    return hi


def _table_height(spec: engine.Spec, repeat: np.ndarray, hi: int,
                  heights: Sequence[int]) -> np.ndarray:
    """Per case, the table height :func:`coarse_r_max` gives the per-case
    :func:`ascend_ref.engine.prepare` bucket of its repeat count."""
    r = np.clip(_int32(repeat).astype(np.int64), 0, hi)
    out = np.empty(r.shape, np.int64)
    for v in np.unique(r).tolist():
        bucket = min(hi, 1 << (max(int(v), 1) - 1).bit_length())
        out[r == v] = coarse_r_max(dataclasses.replace(spec, r_max=bucket), hi, heights)
    return out


def _windows(ins: registry.Instruction, option: Any, dtype: str, cols: Dict[str, np.ndarray],
             n: np.ndarray, hi: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(base, length)`` of every case's window (the whole UB where a window is not exact)."""
    return compact_windows(ins, option, dtype, cols, n, hi)[:2]


def compact_windows(ins: registry.Instruction, option: Any, dtype: str,
                    cols: Dict[str, np.ndarray], n: np.ndarray,
                    hi: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(base, length, exact)``: :func:`_windows` and, per case, whether its window is the
    compact one (every access its geometry allows inside it; False: the whole UB)."""
    s = np.dtype(dtype).itemsize
    ops = ins.operands
    addr = np.stack([cols[f"{t}.addr"] for t in ops])
    # each operand's own element size (dst may be wider: Ascend 950 int16 -> int32 sums)
    isz = np.array([[np.dtype(ins.tensor_dtype(t, dtype)).itemsize] for t in ops], np.int64)
    end = addr + np.stack([cols[f"{t}.size"] for t in ops]) * isz
    rep = cols["repeat"]
    ok = (end <= n[None, :]).all(axis=0) & (rep >= 0) & (rep <= hi)
    for k in ins.kernel.strides:
        ok &= (cols[k] >= 0) & (cols[k] <= engine.U16_MAX)
    r1 = np.maximum(rep, 1) - 1
    blk = cols["src_blk_stride"] if ins.has_blk_stride and "src_blk_stride" in cols else 1
    fixed = registry.BLOCK * (7 * blk + 1) if ins.has_blk_stride else registry.REPEAT_BYTES
    if ins.kernel.count_form:          # the first count elements (no stride)
        reach = [cols["src.addr"] + np.maximum(rep, 0) * s]
    else:
        reach = [cols["src.addr"] + r1 * cols["src_rep_stride"] * registry.BLOCK + fixed]
    if "dst" in ops:
        lay = ins.layout(dtype, option)
        if lay.per_repeat:
            stride = cols.get("dst_rep_stride", 1)
            reach.append(cols["dst.addr"] + lay.slot_bytes * (r1 * stride + 1))
        else:
            reach.append(cols["dst.addr"] + lay.slot_bytes)
    if "work_tensor" in ops and ins.work_need is not None:
        r = np.clip(rep, 0, hi)
        need = np.zeros(r.shape, np.int64)
        for v in np.unique(r[ok]).tolist():
            need[r == v] = ins.work_elements(int(v), option, dtype)
        reach.append(cols["work_tensor.addr"] + need * s)
    reach_end = np.stack(reach).max(axis=0)
    ok &= reach_end <= n
    base = np.where(ok, addr.min(axis=0) // WINDOW_ALIGN * WINDOW_ALIGN, 0)
    top = np.minimum(np.maximum(end.max(axis=0), reach_end), n)
    length = np.where(ok, top - base, n)
    return base.astype(np.int64), length.astype(np.int64), ok


def _finish_spec(prep: Any, heights: Sequence[int], r_max: Optional[int] = None) -> engine.Spec:
    hi = prep.ins.repeat_range(prep.spec)[1]
    spec = prep.spec
    if r_max is None:
        r_max = coarse_r_max(spec, hi, heights)
    return dataclasses.replace(spec, r_max=int(r_max), info=True, compact=True)


#: the UB a group's first case is prepared with (:func:`group_prepare`), made on first use
_NO_UB: List[Any] = []


def group_prepare(rep: Case) -> Any:
    """The host checks and parameters of a group's first case ``rep``, as
    ``rep.prepare(info=True)`` gives them but for its UB: an empty one stands in (the UB's
    length and bytes enter per case, :func:`group_rows`; converting a 66 KB UB to a device
    array took ~0.1 ms of a 256-case run_cases call). ``rep.ub`` passed the group's checks
    (a 1-D ``uint8`` array)."""
    if not _NO_UB:
        _NO_UB.append(jax.numpy.zeros(0, np.uint8))
    return rep.instruction.prepare_case(rep, info=True, ub=_NO_UB[0])


def _group(cases: List[Case], ks: np.ndarray, vals: np.ndarray, masks: np.ndarray,
           outcomes: Any, heights: Sequence[int]) -> List[Rows]:
    """Rows of one host group (plain cases sharing instruction, product, dtype, option,
    saturate and mask mode; their values and mask words as :func:`group_keys` gives them);
    fills ``outcomes`` when a group-level check fails."""
    kl = ks.tolist()
    rep = cases[kl[0]]
    try:
        prep = group_prepare(rep)
    except ConstraintError as e:
        for k in kl:
            outcomes[k] = Outcome(e.code)
        return []
    ins = registry.lookup(rep.api)
    names = [f"{t}.{x}" for t in ins.operands for x in ("addr", "size")] + list(ins.params)
    cols = {name: vals[:, j] for j, name in enumerate(names)}
    ubs = [cases[k].ub for k in kl]
    n = np.fromiter(map(len, ubs), np.int64, len(kl))
    return group_rows(prep, rep, cols, masks, n, ks, heights, ubs)


def group_rows(prep: Any, rep: Case, cols: Dict[str, np.ndarray], masks: np.ndarray,
               n: np.ndarray, idx: np.ndarray, heights: Sequence[int],
               ubs: List[np.ndarray]) -> List[Rows]:
    """Rows of one host group from columns (the columnar entry point: :func:`_group` for
    run_cases' grouped cases and :func:`prepare_columns` for ``run_columns`` call it): ``prep`` -- the group's first case ``rep``
    prepared; ``cols`` -- int64 per-case values by name (``"{tensor}.addr"``,
    ``"{tensor}.size"``, every parameter); ``masks`` -- uint32[m, 4] words as
    :func:`_mask_words` gives them; ``n`` -- the UB sizes; ``idx`` -- the cases' positions;
    ``ubs`` -- the UBs (may be empty: a caller that builds the windows itself)."""
    ins = registry.lookup(rep.api)
    m = idx.size
    option = ins.canonical_option(rep.option) if ins.option is not None else None
    dtype = prep.spec.dtype
    hi = prep.ins.repeat_range(prep.spec)[1]
    if heights:
        base, length = _windows(ins, option, dtype, cols, n, hi)
    else:       # a campaign: whole UBs, so the compiled UB width stays one per template size
        base, length = np.zeros(m, np.int64), n
    values = {name: _int32(c - base if name.endswith(".addr") else c)   # window addresses
              for name, c in cols.items()}
    values["mask"] = masks
    values["ub_len"] = length.astype(np.int32)
    values["ub_base"] = base.astype(np.int32)
    p = _override(_stack(prep.p, m), values)
    q, call = _batch_columns(ins, prep, rep, values, m)
    heights_of = _table_height(prep.spec, cols["repeat"], hi, heights)
    out = []
    for h in np.unique(heights_of).tolist():
        sel = np.flatnonzero(heights_of == h)
        whole = sel.size == m
        out.append(Rows(prep.ins, _finish_spec(prep, heights, h),
                        idx if whole else idx[sel],
                        ubs if whole or not ubs else [ubs[j] for j in sel.tolist()],
                        base if whole else base[sel], length if whole else length[sel],
                        p if whole else jax.tree_util.tree_map(lambda x: x[sel], p),
                        q if whole or q is None else {k: v[sel] for k, v in q.items()}, call))
    return out


def _batch_columns(ins: registry.Instruction, prep: Any, rep: Case,
                   values: Dict[str, np.ndarray], m: int) -> Tuple[Optional[Dict[str, np.ndarray]], Optional[tuple]]:
    """A host group's cases as :func:`ascend_ref.batch.run_batch` columns and its call
    (:attr:`Rows.q`, :attr:`Rows.call`), or ``(None, None)`` where run_batch's kernel does
    not take them (a profile object instead of a product id, counter mode, the
    special-register state). The count form (no mask: every lane of its first count
    elements) goes as a continuous mask of every lane, as :func:`ascend_ref.batch.run_batch`
    takes it."""
    pp = prep.p
    if not isinstance(rep.chip, str) or bool(np.asarray(pp.mask_counter)) or prep.spec.spr:
        return None, None
    mode = "count" if ins.kernel.count_form or bool(np.asarray(pp.mask_count)) else "bits"
    q = dict(values)
    q["mask"] = values["mask"][:, 0].astype(np.int32) if mode == "count" else values["mask"]
    if ins.saturating:
        if pp.saturate is None:
            return None, None
        q["saturate"] = np.full(m, bool(np.asarray(pp.saturate)))
    return q, (rep.chip, rep.option, mode)


def prepare(cases: List[Case], outcomes: list, heights: Sequence[int]) -> List[Rows]:
    """Rows of every case that reaches the kernel; the others get their outcome (a host
    error code) in ``outcomes``."""
    out: List[Rows] = []
    lone, groups = group_keys(cases) if BULK_KEYS else _keys_one_by_one(cases)
    for k in lone:
        out.extend(_one(cases[k], k, outcomes, heights))
    for ks, vals, words in groups.values():
        out.extend(_group(cases, ks, vals, words, outcomes, heights))
    return out


def _keys_one_by_one(cases: Sequence[Case], positions: Optional[Sequence[int]] = None
                     ) -> Tuple[List[int], Dict[tuple, Tuple[np.ndarray, np.ndarray,
                                                             np.ndarray]]]:
    """:func:`group_keys` case by case (:func:`_group_key` each): of every case, or of the
    cases at ``positions`` (ascending; the heads :func:`group_keys` could not check as
    columns). Alone: A/B measurements, tests."""
    lone: List[int] = []
    acc: Dict[tuple, Tuple[List[int], List[List[int]], List[tuple]]] = {}
    for k in range(len(cases)) if positions is None else positions:
        got = _group_key(cases[k])
        if got is None:
            lone.append(k)
            continue
        g = acc.setdefault(got[0], ([], [], []))
        g[0].append(k)
        g[1].append(got[1][0])
        g[2].append(got[1][1])
    return lone, {key: (np.asarray(ks, np.int64), np.array(vs, np.int64).reshape(len(ks), -1),
                        np.array(ws, np.uint32).reshape(len(ks), 4))
                  for key, (ks, vs, ws) in acc.items()}


#: False: prepare keys its cases one by one (:func:`_keys_one_by_one`; A/B, tests)
BULK_KEYS = True


def _column(api: str, name: str, v: Any, b: int) -> np.ndarray:
    """An integer column (a scalar for every case, or ``[B]``) as a numpy array of ``b``."""
    a = np.asarray(v)
    if a.dtype.kind not in "iu" or a.ndim > 1 or (a.ndim == 1 and a.shape[0] != b):
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_columns", param=name,
                              value=f"{a.dtype} {a.shape}", allowed=f"an int or int[{b}]")
    return np.broadcast_to(a, (b,))


def _fits(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``lo <= a < hi`` per element, exact for every integer dtype (uint64 included)."""
    if a.dtype.kind == "u":
        return a < np.uint64(hi) if lo <= 0 else (a >= np.uint64(lo)) & (a < np.uint64(hi))
    return (a >= lo) & (a < hi)


def prepare_columns(api: str, chip: Any, dtype: str, option: Any, mask: Any,
                    params: Dict[str, Any], tensors: Dict[str, Tuple[Any, Any]],
                    ubs: np.ndarray, saturate: Any, into: Any,
                    heights: Sequence[int]) -> List[Rows]:
    """:func:`prepare` for cases given as columns: case ``k`` is ``Case(api, chip, dtype,
    option, mask[k], {name: params[name][k]}, {t: (addr[k], size[k])}, ubs[k],
    saturate[k])`` -- the same outcome as that case in :func:`prepare`, without building it.

    ``ubs`` ``uint8[B, N]``; every parameter, address and size an int or an integer ``[B]``
    array; ``mask`` ``[B]`` ints (a count per case) or ``[B, W]`` integer words (the words a
    case's list would hold, in the API's word order); ``saturate`` None, a bool or ``bool[B]``.
    Rows whose values a plain case could not hold (past the plain range, negative addresses,
    a mask :func:`ascend_ref.mask.parse` would reject) take the per-case path, as cases."""
    b = ubs.shape[0]
    st = _static(api, dtype) if type(api) is str and type(dtype) is str else None
    if st is not None and (set(tensors) != set(st[2]) or set(st[3]) != set(params)):
        st = None                              # as a case: the per-case path says what is wrong
    ops: Tuple[str, ...] = ()
    names: Tuple[str, ...] = ()
    size, word_order = 0, "ascendc"
    if st is not None:
        _, size, ops, names, word_order = st
    cols, plain = [], np.ones(b, bool)
    for t in ops:
        try:
            addr, n = tensors[t]
        except (TypeError, ValueError):
            raise ConstraintError(Code.BAD_ARGUMENT, api="run_columns", param=t,
                                  value=type(tensors[t]).__name__,
                                  allowed="an (addr, size) pair of ints or int columns") from None
        for label, v in ((f"{t}.addr", addr), (f"{t}.size", n)):
            c = _column(api, label, v, b)
            plain &= _fits(c, 0, _PLAIN)
            cols.append(c)
    for pname in names:
        c = _column(api, pname, params[pname], b)
        plain &= _fits(c, -_PLAIN, _PLAIN)
        cols.append(c)
    m = np.asarray(mask)
    if m.dtype.kind not in "iu" or m.ndim not in (0, 1, 2) or (m.ndim and m.shape[0] != b):
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_columns", param="mask",
                              value=f"{m.dtype} {m.shape}", allowed=f"int[{b}] or int[{b}, W]")
    m = np.broadcast_to(m, (b,) + m.shape[1:]) if m.ndim < 2 else m
    sat = np.asarray(saturate) if saturate is not None else None
    if sat is not None and (sat.dtype != bool or sat.ndim > 1 or (sat.ndim and sat.size != b)):
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_columns", param="saturate",
                              value=f"{sat.dtype} {sat.shape}", allowed=f"None, a bool or bool[{b}]")
    sats = None if sat is None else np.broadcast_to(sat, (b,))

    def item(v: Any, k: int) -> Any:
        a = np.asarray(v)
        return int(a[k]) if a.ndim == 1 and a.dtype.kind in "iu" else \
            (int(a) if a.ndim == 0 and a.dtype.kind in "iu" else v)

    def case(k: int) -> Case:
        """Case ``k`` as a :class:`~ascend_ref.case.Case` (the per-case path's input)."""
        mk = int(m[k]) if m.ndim == 1 else [int(w) for w in m[k]]
        return Case(api, chip, dtype, option, mk, {name: item(v, k) for name, v in params.items()},
                    {t: (item(a, k), item(n, k)) for t, (a, n) in tensors.items()},
                    ubs[k], None if sats is None else bool(sats[k]))

    out: List[Rows] = []
    if b == 0:
        return out
    try:
        hash(option)
    except TypeError:
        st = None
    if st is None:
        for k in range(b):
            out.extend(_one(case(k), k, into, heights))
        return out
    # the mask words of every distinct mask (the same function as a case's)
    words = np.zeros((b, 4), np.uint32)
    # the count form has no mask: every lane, whatever the column holds (as _group_key)
    mw = np.full(b, 256 // size, np.int64) if st[0].kernel.count_form else m
    uniq, inv = np.unique(mw.reshape(b, -1), axis=0, return_inverse=True)
    for u, row in enumerate(uniq):
        got = _mask_words(int(row[0]) if mw.ndim == 1 else [int(w) for w in row],
                          256 // size, word_order)
        sel = inv.reshape(-1) == u
        if got is None:
            plain &= ~sel
        else:
            words[sel] = got[1]
    vals = np.zeros((b, len(cols)), np.int64)
    for j, c in enumerate(cols):
        vals[:, j] = np.where(plain, c, 0)
    rows = list(ubs)
    for k in np.flatnonzero(~plain).tolist():
        out.extend(_one(case(k), k, into, heights))
    keys = [None] if sats is None else [False, True]
    for key in keys:
        sel = plain if key is None else plain & (sats == key)
        ks = np.flatnonzero(sel)
        if not ks.size:
            continue
        rep = case(int(ks[0]))
        try:
            prep = group_prepare(rep)
        except ConstraintError as e:          # a group-level check: every case of the group
            for k in ks.tolist():
                into[k] = Outcome(e.code)
            continue
        ins = registry.lookup(rep.api)
        names_all = [f"{t}.{x}" for t in ins.operands for x in ("addr", "size")] + \
            list(ins.params)
        cols_of = {name: vals[ks, j] for j, name in enumerate(names_all)}
        out.extend(group_rows(prep, rep, cols_of, words[ks],
                              np.full(ks.size, ubs.shape[1], np.int64), ks.astype(np.int64),
                              heights, [rows[k] for k in ks.tolist()]))
    return out


def _one(case: Case, k: int, outcomes: list, heights: Sequence[int]) -> List[Rows]:
    """The per-case path (exact fallback): its own preparation, the whole UB."""
    try:
        prep = case.prepare(info=True)
    except ConstraintError as e:
        outcomes[k] = Outcome(e.code)
        return []
    ub = np.asarray(prep.ub)
    p = jax.tree_util.tree_map(lambda x: np.asarray(x)[None], prep.p)
    return [Rows(prep.ins, _finish_spec(prep, heights), np.array([k], np.int64), [ub],
                 np.zeros(1, np.int64), np.array([ub.size], np.int64), p)]


# ------------------------------------------------------------------ outcomes ---------------

def _scatter_words(out: np.ndarray, rows: np.ndarray, addr: np.ndarray, bits: np.ndarray) -> None:
    """Write ``bits`` (little-endian words) at bytes ``addr`` of rows ``rows`` of ``out``."""
    _scatter_flat(out, rows.astype(np.int64) * out.shape[1] + addr, bits)


def _scatter_flat(out: np.ndarray, flat: np.ndarray, bits: np.ndarray) -> None:
    """Write ``bits`` (little-endian words) at the flat byte positions ``flat`` of the
    ``uint8[B, N]`` ``out`` (row ``flat // N``, byte ``flat % N``): C-contiguous, or rows of
    contiguous bytes further apart (:class:`Sink`'s padded stacks)."""
    size = bits.dtype.itemsize
    if not out.flags.c_contiguous:      # a reshape would copy: store by (row, byte)
        r, c = np.divmod(flat, out.shape[1])
        for k in range(size):
            out[r, c + k] = (bits >> (8 * k)).astype(np.uint8)
    elif out.size % size == 0 and not np.any(flat % size):
        out.reshape(-1).view(bits.dtype)[flat // size] = bits
    else:
        o = out.reshape(-1)
        for k in range(size):
            o[flat + k] = (bits >> (8 * k)).astype(np.uint8)


@dataclasses.dataclass
class Stacked:
    """Outcomes of a batch of cases as arrays (the columnar counterpart of a list of
    :class:`~ascend_ref.case.Outcome`): ``code`` ``int32[B]`` (0 ok, else a
    :class:`~ascend_ref.constraints.Code`), ``ub`` ``uint8[B, N]`` (the UB after the call;
    the UB before it where ``code != 0``), ``written`` / ``undefined`` ``bool[B, N]`` (all
    False where ``code != 0``). :meth:`outcome` gives case ``k`` as an Outcome."""

    code: np.ndarray
    ub: np.ndarray
    written: np.ndarray
    undefined: np.ndarray
    #: the boxes marked in ``written`` / ``undefined`` when they are pooled tables
    #: (:func:`pooled_mask`)
    marks: Optional[list] = None
    undefined_marks: Optional[list] = None

    @staticmethod
    def start(ubs: np.ndarray) -> "Stacked":
        """Every case ok so far, on a copy of ``ubs``."""
        return Stacked.holding(np.array(ubs, np.uint8, copy=True, order="C"))

    @staticmethod
    def holding(ub: np.ndarray, pooled: bool = False) -> "Stacked":
        """Every case ok so far, on ``ub`` itself (``uint8[B, N]``, the UBs before the
        call), with nothing written or undefined yet (:func:`written_zeros`,
        :func:`sparse_zeros`; ``pooled``: :func:`pooled_mask` tables, whose rows the
        owner hands out read-only)."""
        if not pooled:
            return Stacked(np.zeros(ub.shape[0], np.int32), ub, written_zeros(ub.shape),
                           sparse_zeros(ub.shape))
        (written, marks), (undefined, umarks) = pooled_mask(ub.shape), pooled_mask(ub.shape)
        return Stacked(np.zeros(ub.shape[0], np.int32), ub, written, undefined, marks, umarks)

    def __len__(self) -> int:
        return int(self.code.size)

    def __setitem__(self, k: int, outcome: Outcome) -> None:     # a host or kernel error
        if outcome.code is None:
            raise ValueError("Stacked: only error outcomes are set case by case")
        self.code[k] = int(outcome.code)

    def outcome(self, k: int) -> Outcome:
        c = int(self.code[k])
        if c:
            return Outcome(Code(c))
        return Outcome(None, self.ub[k], self.written[k], self.undefined[k])


#: False: run_cases copies every chunk's windows (:meth:`Rows.windows`) instead of reading
#: the outcome stack in place (:meth:`Sink.rows_of`; A/B measurements, tests)
IN_PLACE = True
#: False: run_cases never reads the cases' own UBs in place (:meth:`Sink.sources_in_place`;
#: A/B measurements, tests)
READ_SOURCES = True
#: False: the merge stores every write table word by word (no 2-D slice; A/B, tests)
DENSE_MERGE = True


class Sink:
    """Where :func:`ascend_ref.batch.run_cases` collects its outcomes: one :class:`Stacked`
    per UB size holding every case of that size (one large allocation each, so the results
    are not faulted in page by page chunk after chunk), errors straight into ``outcomes``;
    :meth:`finish` gives every other case its :class:`~ascend_ref.case.Outcome` (views of
    its row: an outcome keeps its size's arrays alive)."""

    def __init__(self, parts: Sequence[Rows], outcomes: list):
        self.outcomes = outcomes
        by: Dict[int, List[Tuple[int, np.ndarray]]] = collections.defaultdict(list)
        for part in parts:
            for k, ub in zip(part.idx.tolist(), part.ubs):
                by[int(ub.size)].append((k, ub))
        self.stacks: Dict[int, Stacked] = {}
        #: per UB size, the stack's storage: rows padded to a multiple of 64 bytes (zeros)
        self.padded: Dict[int, np.ndarray] = {}
        #: per UB size, the cases' UBs by stack row, and which rows hold them yet: a row is
        #: copied when its chunk first needs it (:meth:`fill`), so the copies of one chunk
        #: run while the kernel of the one before it does
        self.sources: Dict[int, List[np.ndarray]] = {}
        self.filled: Dict[int, np.ndarray] = {}
        self.rowpos = np.full(len(outcomes), -1, np.int64)
        self.ubsize = [0] * len(outcomes)
        self.ks: List[int] = []
        for n, items in by.items():
            ks = [k for k, _ in items]
            # rows 64-byte aligned (a chunk may read its rows in place: :meth:`rows_of`),
            # padded to 64 bytes but not to the compiled width: half-touched rows cost
            # twice the page faults; recycled once the caller dropped every outcome of an
            # earlier call
            width = -(-n // 64) * 64
            padded = result_empty((len(items), width))
            padded[:, n:] = 0
            self.stacks[n] = Stacked.holding(padded[:, :n], pooled=True)
            self.padded[n] = padded
            self.sources[n] = [u for _, u in items]
            self.filled[n] = np.zeros(len(items), bool)
            self.rowpos[ks] = np.arange(len(items))
            self.ks.extend(ks)
            for k in ks:
                self.ubsize[k] = n

    def __setitem__(self, k: int, outcome: Outcome) -> None:
        self.outcomes[k] = outcome

    def fill(self, n: int, js: np.ndarray) -> None:
        """Copy the UBs of stack ``n``'s rows ``js`` into them, where not done yet."""
        done = self.filled[n]
        todo = js[~done[js]]
        if todo.size:
            ub, src = self.stacks[n].ub, self.sources[n]
            for j in todo.tolist():
                ub[j] = src[j]
            done[todo] = True

    def rows_of(self, rows: Rows, b: int) -> Optional[np.ndarray]:
        """The kernel's ``uint8[b, w]`` input for ``rows`` as a view of the stack's storage
        (no copy; ``w``: the UBs' ``n`` bytes padded to a multiple of 64, so the rows are
        64-byte aligned: read in place on CPU), or None: when the chunk is full (``b``
        cases), every case's window starts at its UB's byte 0, every UB has the same ``n``
        bytes, and the cases sit in consecutive stack rows. The rows hold the UBs before
        the call until :func:`outcomes` merges the chunk's results into them (after the
        kernel ran). Bytes past a window's length hold the UB's own bytes (and the padding
        zeros) instead of :meth:`Rows.windows`' zeros; the kernel never reads them (the
        bounds rules use the window's length, ``p.ub_len``)."""
        got = self.stack_rows(rows, b) if IN_PLACE else None
        if got is None:
            return None
        n, pos = got
        self.fill(n, pos)
        j0 = int(pos[0])
        return self.padded[n][j0:j0 + b]

    def sources_in_place(self, rows: Rows, b: int) -> Optional[Tuple[np.ndarray, Tuple[
            int, np.ndarray]]]:
        """The kernel's ``uint8[b, n]`` input for ``rows`` read straight from the cases' own
        UBs, with the chunk's :meth:`stack_rows`, or None: when :meth:`rows_of` would take
        the chunk and the UBs are consecutive rows of one C-contiguous array
        (``[Case(..., ubs[k]) for k in ...]``), 64-byte aligned. The kernel then reads them
        in place (no copy on the CPU backend) while the caller copies them into those stack
        rows (``fill(*stack_rows)``, after the dispatch), as
        :func:`ascend_ref.batch.run_batch` reads an aligned input."""
        if not READ_SOURCES or not IN_PLACE or len(rows) != b or b == 0:
            return None
        at = self.stack_rows(rows, b)
        view = consecutive_rows(rows.ubs) if at is not None else None
        return None if view is None or at is None else (view, at)

    def stack_rows(self, rows: Rows, b: int) -> Optional[Tuple[int, np.ndarray]]:
        """``(n, stack rows)`` of a full chunk whose windows start at byte 0 of UBs of one
        size ``n`` that sit in consecutive stack rows; else None (:meth:`rows_of`)."""
        m = len(rows)
        if m != b or m == 0:
            return None
        n = rows.ubs[0].size
        if n not in self.stacks or np.any(rows.base != 0) or \
                any(u.size != n for u in rows.ubs):
            return None
        pos = self.rowpos[rows.idx]
        j0 = int(pos[0])
        if j0 < 0 or np.any(pos != np.arange(j0, j0 + m)):
            return None
        return n, pos

    def finish(self) -> None:
        out, pos = self.outcomes, self.rowpos
        todo = np.fromiter((k for k in self.ks if out[k] is None), np.int64)
        sizes = np.asarray(self.ubsize, np.int64)[todo]
        for n in np.unique(sizes).tolist():
            ks = todo[sizes == n]
            rs = pos[ks]
            self.fill(n, rs)                     # merged rows are filled; this keeps it exact
            st = self.stacks[n]
            for table, marks in ((st.written, st.marks), (st.undefined, st.undefined_marks)):
                if marks is not None:           # a pooled table: only the merge marks it
                    table.flags.writeable = False
            # the rows' views made by C loops (list() of a 2-D array)
            views = [list(a) for a in (st.ub, st.written, st.undefined)]
            for k, r in zip(ks.tolist(), rs.tolist()):
                out[k] = Outcome(None, views[0][r], views[1][r], views[2][r])


def consecutive_rows(ubs: Sequence[np.ndarray]) -> Optional[np.ndarray]:
    """``uint8[len(ubs), n]``: the 1-D ``uint8`` arrays ``ubs`` as one array, without a copy,
    when they are consecutive rows of one C-contiguous array (same owner, same size ``n``, each
    starting ``n`` bytes after the one before) whose first byte is 64-byte aligned (the CPU
    backend reads such a block in place, whatever ``n``: only its start is aligned, as
    :func:`ascend_ref.batch.run_batch` reads ``uint8[B, n]``); else None. Read-only.

    >>> a = aligned_zeros((3, 96)); a[1] = 7
    >>> consecutive_rows([a[0], a[1], a[2]])[1, :2].tolist(), consecutive_rows([a[0], a[2]])
    ([7, 7], None)
    >>> consecutive_rows([a[1], a[2]])          # starts 96 bytes in: not aligned
    """
    if not ubs or _one_type(ubs, np.ndarray) is None:
        return None
    u0 = ubs[0]
    n, owner, m = u0.size, u0.base, len(ubs)
    if owner is None or n == 0 or set(map(_NDIM, ubs)) != {1} or \
            set(map(_DTYPE, ubs)) != {_UINT8} or set(map(_STRIDES, ubs)) != {(1,)} or \
            set(map(len, ubs)) != {n} or not all(u.base is owner for u in ubs):
        return None
    try:        # the data pointers: ~0.25 us a row through ctypes, ~1 us by ndarray.ctypes
        at = np.fromiter(map(ctypes.addressof, map(_FROM_BUFFER, ubs)),
                         np.int64, m)
    except (TypeError, ValueError):                   # read-only: no writable buffer
        at = np.fromiter((u.ctypes.data for u in ubs), np.int64, m)
    p0 = int(at[0])
    if p0 % 64 or np.any(at != p0 + n * np.arange(m, dtype=np.int64)):
        return None
    # every row lies inside ``owner`` (each is a view of it), so the span of all of them does
    return np.lib.stride_tricks.as_strided(u0, shape=(m, n), strides=(n, 1), writeable=False)


def outcomes(rows: Rows, cases: Optional[Sequence[Case]], writes: Any, status: np.ndarray,
             undefined: Any, into: Any) -> None:
    """Fill ``into`` (a :class:`Sink`, or a :class:`Stacked` whose ``ub`` rows already hold
    the cases' UBs) with the outcome of every case of ``rows`` (kernel results of a batch
    whose first ``len(rows)`` rows are these cases)."""
    m = len(rows)
    status = status[:m]
    idx = rows.idx.tolist()
    for j in np.flatnonzero(status != 0).tolist():
        into[idx[j]] = Outcome(Code(int(status[j])))
    good = np.flatnonzero(status == 0)
    if not good.size:
        return
    regions, words = undefined
    if isinstance(into, Stacked):
        _merge(rows, good, into, rows.idx[good], writes, regions, words)
        return
    sizes = np.fromiter((u.size for u in rows.ubs), np.int64, m)
    for n in np.unique(sizes[good]).tolist():
        sel = good[sizes[good] == n]
        at = into.rowpos[rows.idx[sel]]
        into.fill(int(n), at)
        _merge(rows, sel, into.stacks[int(n)], at, writes, regions, words)


def _dense_span(a: np.ndarray, valid: np.ndarray, size: int, n: int,
                offset: int = 0) -> Optional[Tuple[int, int, Any]]:
    """``(lo, hi, cols)`` when a write table (byte addresses ``a + offset``, one row per
    case) stores one run of consecutive ``size``-byte words at the same bytes ``[lo, hi)`` of
    every row, inside ``[0, n)`` and aligned to ``size``: the same words of every row valid
    (``cols`` selects them from a row of the table: ``slice(None)`` when all are, a slice
    when they are one run of columns, else an index array), and the valid words of each row,
    in order, at ``lo, lo + size, ...`` (then a 2-D slice stores it); else None.

    Every row is then the same run, so row 0 is checked against the run and every row
    against row 0: no temporary wider than a bool per word (an ``int64`` difference table
    of a chunk is larger than malloc's mmap threshold, and faulted in on every call).
    Partly valid tables are the value-only slots of an index-writing layout (every other
    word) and work tensors one word short of their table (vec_reduce_*).

    >>> a = np.array([[[64], [68], [68], [72]]] * 2)        # a value-only pair table
    >>> _dense_span(a, np.array([[[1], [0], [1], [0]]] * 2, bool), 4, 128)
    (64, 72, array([0, 2]))
    """
    m = a.shape[0]
    if a.size == 0:
        return None
    a, v = a.reshape(m, -1), valid.reshape(m, -1)
    v0 = v[0]
    cols: Any = slice(None)
    row = a[0]
    every = bool(v0.all())
    if (m > 1 and not (v.all() if every else (v == v0).all())) or not v0.any():
        return None
    if not every:
        idx = np.flatnonzero(v0)
        c0, c1 = int(idx[0]), int(idx[-1]) + 1
        cols = slice(c0, c1) if c1 - c0 == idx.size else idx
        row = row[cols]
    first = int(row[0])
    lo = first + offset
    hi = lo + row.size * size
    if lo < 0 or hi > n or lo % size:
        return None
    if not np.array_equal(row, np.arange(first, first + row.size * size, size)):
        return None
    if m > 1:
        same = a == a[0]
        if not (same.all() if every else (same | ~v0).all()):
            return None
    return lo, hi, cols


def mark_spans(out: np.ndarray, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Set ``out[rows[i], lo[i]:hi[i]]`` (spans already inside the row; empty ones
    skipped): one 2-D store when every span is the same bytes, else one slice each (a memset
    each, no pass over the whole rows). Returns whether anything was marked.

    >>> out = np.zeros((3, 8), bool)
    >>> mark_spans(out, np.array([0, 2]), np.array([2, 2]), np.array([5, 5])), int(out.sum())
    (True, 6)
    """
    keep = hi > lo
    if not keep.any():
        return False
    rows, lo, hi = rows[keep], lo[keep], hi[keep]
    l0, h0 = int(lo[0]), int(hi[0])
    if (lo == l0).all() and (hi == h0).all():
        out[rows, l0:h0] = True
        return True
    for j, a, z in zip(rows.tolist(), lo.tolist(), hi.tolist()):
        out[j, a:z] = True
    return True


def word_tables(words: Any) -> List[Tuple[int, Any, Any]]:
    """``(size, addr, when)`` of every undefined-word table of a compact kernel's
    :func:`ascend_ref.engine.compact_undefined` ``words`` (``{size: ((addr, when), ...)}``)."""
    return [(int(size), addr, when) for size, tables in words.items() for addr, when in tables]


def word_bytes(addr: np.ndarray, when: np.ndarray, size: int) -> Tuple[np.ndarray, np.ndarray]:
    """An undefined-word table as bytes: ``int64`` byte addresses ``addr + 0 .. size - 1``
    (a new last axis) and ``when`` for each.

    >>> a, w = word_bytes(np.array([[8, 12]]), np.array([[True, False]]), 2)
    >>> a.tolist(), w.tolist()
    ([[[8, 9], [12, 13]]], [[[True, True], [False, False]]])
    """
    a = addr.astype(np.int64)[..., None] + np.arange(size, dtype=np.int64)
    return a, np.broadcast_to(np.asarray(when)[..., None], a.shape)


def _rows(x: Any, sel: np.ndarray, full: bool) -> np.ndarray:
    """Rows ``sel`` of a kernel output: a view of its first rows when ``full`` (``sel`` is
    ``0 .. len(sel) - 1``), else a gathered copy."""
    x = np.asarray(x)
    return x[:sel.size] if full else x[sel]


def _box(flat: np.ndarray, n: int, size: int) -> Tuple[int, int, int, int]:
    """The box ``(row0, row1, col0, col1)`` of a ``[*, n]`` table that holds the
    ``size``-byte words at flat byte positions ``flat`` (a scattered chunk's marks,
    :func:`pooled_mask`; each word inside its row).

    >>> _box(np.array([10, 37]), 16, 2)
    (0, 3, 5, 12)
    """
    r, c = np.divmod(flat, n)
    return int(r.min()), int(r.max()) + 1, int(c.min()), min(int(c.max()) + size, n)


def _merge(rows: Rows, sel: np.ndarray, into: Stacked, at: np.ndarray, writes: Any,
           regions: Any, words: Any) -> None:
    """Merge the kernel results of the cases ``sel`` (rows of the batch) into rows ``at`` of
    ``into`` (whose ``ub`` rows hold the cases' UBs before the call).

    Positions are flat byte indices into ``into``'s ``[*, n]`` arrays."""
    m = sel.size
    full = m > 0 and int(sel[-1]) == m - 1         # sel is ascending: every row 0 .. m - 1
    out, undef, written = into.ub, into.undefined, into.written
    n = out.shape[1]
    uf, wf = undef.reshape(-1), written.reshape(-1)
    base = rows.base[sel]
    any_undef = False
    for start, nbytes, when in regions:
        start, nbytes, when = (_rows(x, sel, full) for x in (start, nbytes, when))
        on = np.flatnonzero(when)
        if not on.size:
            continue
        lo = np.maximum(base[on] + start[on], 0)
        hi = np.minimum(base[on] + start[on] + nbytes[on], n)
        if mark_spans(undef, at[on], lo, hi):
            any_undef = True
            if into.undefined_marks is not None:
                into.undefined_marks.append((int(at[on].min()), int(at[on].max()) + 1,
                                             int(lo.min()), int(hi.max())))
    row0 = at * n
    for size, addr, when in word_tables(words):
        addr, when = _rows(addr, sel, full), _rows(when, sel, full)
        if not when.any():           # the common case: no undefined word (no int64 table)
            continue
        addr, when = word_bytes(addr, when, size)
        shape = (m,) + (1,) * (addr.ndim - 1)
        a = addr + base.reshape(shape)
        keep = when & (a >= 0) & (a < n)
        if keep.any():
            flat_u = (a + row0.reshape(shape))[keep]
            uf[flat_u] = True
            any_undef = True
            if into.undefined_marks is not None:
                into.undefined_marks.append(_box(flat_u, n, 1))
    marked = []
    at0 = int(at[0]) if m else 0
    rows_run = m > 0 and bool(np.all(at == np.arange(at0, at0 + m)))
    one_base = m > 0 and bool(np.all(base == base[0]))
    for addr, bits, valid in writes:
        addr, bits, valid = _rows(addr, sel, full), _rows(bits, sel, full), _rows(valid, sel, full)
        if not valid.any():   # a table no case writes (vec_reduce_add float's work tensor
            continue          # at R = 255: undefined, not written): nothing to store or mark
        size = bits.dtype.itemsize
        shape = (m,) + (1,) * (addr.ndim - 1)
        span = _dense_span(addr, valid, size, n, int(base[0])) \
            if rows_run and one_base and DENSE_MERGE else None
        if span is not None:          # one 2-D slice: every case writes the same run of words
            lo, hi, cols = span
            out[at0:at0 + m, lo:hi].view(bits.dtype)[...] = bits.reshape(m, -1)[:, cols]
            w = written[at0:at0 + m, lo:hi]
            w[...] = True
            if into.marks is not None:
                into.marks.append((at0, at0 + m, lo, hi))
            if any_undef:
                w &= ~undef[at0:at0 + m, lo:hi]
            continue
        a = addr.astype(np.int64) + base.reshape(shape)
        keep = valid & (a >= 0) & (a + size <= n)      # never false for a case that passed
        flat = (a + row0.reshape(shape))[keep]
        _scatter_flat(out, flat, bits[keep])
        for k in range(size):
            wf[flat + k] = True
        marked.append((flat, size))
        if into.marks is not None and flat.size:
            into.marks.append(_box(flat, n, size))
    if any_undef:       # the full kernel: written &= ~undefined (only where something was written)
        for flat, size in marked:
            for k in range(size):
                wf[flat + k] &= ~uf[flat + k]
