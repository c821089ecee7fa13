"""Many calls at once: one compiled, vmapped kernel per static configuration.

Two entry points:

* :func:`run_batch` — arrays in, arrays out. Every numeric parameter (tensor addresses and
  sizes, mask, repeat, strides, saturate, window base) is an array with a leading batch
  axis; the static configuration (API, product, dtype, order / reduce type / cal_index, mask
  mode, table height) picks one compiled kernel, reused for every batch of the same shape.
  Inside, the product's behaviour and the mask mode are traced data
  (:func:`ascend_ref.engine.product_params`).
  Returns ``(ubs, status)``: int32 status per case (0 ok, else a
  :class:`~ascend_ref.constraints.Code`; :func:`ascend_ref.explain` names it). It never
  raises on data and an invalid case leaves its UB unchanged.
* :func:`run_cases` — a list of :class:`~ascend_ref.case.Case` in, one
  :class:`~ascend_ref.case.Outcome` each, grouped by static configuration behind the scenes:
  API, dtype, option and a table height (:data:`TABLE_HEIGHTS`); every product and both mask
  modes share one kernel, and batches have fixed sizes (:data:`BATCH_SIZES`), so a whole
  campaign compiles one or two executables per configuration.

**Compact windows.** A case needs only the bytes it touches, so ``ubs`` may hold per-case
*windows* instead of whole UBs: row ``b`` holds real UB bytes
``[ub_base[b], ub_base[b] + W)`` and every tensor address is relative to the window
(``real = ub_base + addr``). ``ub_base`` must be a multiple of 32 (alignment rules then read
the same on window and real addresses); accesses must stay inside the window and, at their
real addresses, inside the product's UB. 10^5 cases of 4 KiB windows take 400 MB.

**Devices.** With ``devices`` (default: all local devices) the batch axis is sharded over a
1-D mesh with ``jax.sharding``; results are the same bits as on one device. For several
hosts, start every process with ``jax.distributed.initialize()`` and pass
``devices=jax.devices()`` (the global list): each host feeds its addressable shard
(``jax.make_array_from_process_local_data``) and reads back its own rows.

>>> import numpy as np, ascend_ref as ar
>>> ubs = np.zeros((4, 1024), np.uint8)
>>> ubs[:, :256] = np.arange(127, -1, -1).astype(np.float16).view(np.uint8)
>>> out, status = ar.run_batch("whole_reduce_min", ubs, chip="atlas_a2", dtype="float16",
...     dst=(512, 8), src=(0, 128), mask=np.array([128, 64, 1, 0]), repeat=1,
...     dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8)
>>> status.tolist()                      # case 3 has mask 0: a NOP on A2, not an error
[0, 0, 0, 0]
>>> out[:3, 512:514].copy().view(np.float16)[:, 0].tolist()
[0.0, 64.0, 127.0]
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import functools
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Sequence, Tuple, Union)

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from . import batch_args, engine, registry, scale
from . import batch_prep, heap
from .ub import dtype_name
from .case import Case, Outcome, as_cases
from .argtypes import ChipLike
from .constraints import Code, ConstraintError
from .params import Params

#: run_batch's result: ``(ubs, status)``, or ``(ubs, status, undefined)`` with
#: ``return_undefined=True`` (numpy arrays with the batch axis first)
BatchResult = Tuple[np.ndarray, ...]
#: what the row-wise kernels and run_batch's kernels return: per-write tables, the status, the
#: registers (or None) and the undefined tables, as arrays with a case axis
KernelOut = Tuple[Any, ...]

heap.tune()          # the kernels' buffers stay in the heap between calls (ascend_ref.heap)

#: traces of the batched kernels, by static configuration (tests count recompiles with it)
TRACES: collections.Counter = collections.Counter()
#: ``(api, spec, ub bucket, batch size)`` of every :func:`run_cases` batch run in this
#: process: the executables it needed (the campaign report counts them)
EXECUTABLES: set = set()

#: repeat-table heights :func:`run_cases` compiles: up to 16 repeats, up to 256, then the
#: API's maximum (two heights for the Ascend C APIs, three for TIK). A taller table costs
#: rows of work per case (a 256-row table runs a 1-repeat case 16 times slower than a 16-row
#: one); each extra height costs a compile (about 1-3 s of CPU each). Campaigns pass
#: ``heights=()`` (one height per API). A full chunk that shares its source strides but
#: whose windows are too short for its table's span runs at its own largest repeat count
#: instead (:func:`_rows_static_src`).
TABLE_HEIGHTS = (16, 256)
#: batch sizes :func:`run_cases` runs: groups of at least ``BATCH_SIZES[-1]`` cases in chunks
#: of that size, the rest in chunks of the first (padded): at most two executables per
#: configuration, whatever the group sizes of the calls; a short table runs bigger chunks
#: (:func:`_big_batch`: a third size), so the fixed cost of a call is spread over more cases
BATCH_SIZES = (8, 64)
#: bytes of UB windows one :func:`run_cases` chunk may hold (bounds a big chunk)
_CHUNK_WINDOW_BYTES = 1 << 24


def _big_batch(r_max: int, width: int, shared: bool = False) -> int:
    """The largest chunk :func:`run_cases` runs for a table of ``r_max`` rows and windows of
    ``width`` bytes: :func:`_chunk`'s size (source bytes per chunk near 2 MiB; ``shared``,
    a group whose cases share every parameter, so its chunks run on :func:`run_batch`'s
    kernel: near 8 MiB, ``_CASES_SHARED_CHUNK_BYTES``), at least ``BATCH_SIZES[-1]``, its
    windows at most 16 MiB."""
    big = max(BATCH_SIZES[-1],
              _chunk(1 << 30, r_max, _CASES_SHARED_CHUNK_BYTES if shared else None))
    while big > BATCH_SIZES[-1] and big * width > _CHUNK_WINDOW_BYTES:
        big //= 2
    return big


def _batches(n: int, big: Optional[int] = None) -> list:
    """``[(start, stop, size)]``: chunks of the group's ``n`` cases and their padded sizes
    (``big``: a larger first size, see :func:`_big_batch`; a remainder of at least half of
    it runs as one padded chunk of that size)."""
    small, mid = BATCH_SIZES[0], BATCH_SIZES[-1]
    out, start = [], 0
    if big is not None and big > mid:
        while n - start >= big // 2:
            out.append((start, min(start + big, n), big))
            start += big
    while n - start >= mid:
        out.append((start, start + mid, mid))
        start += mid
    while start < n:
        out.append((start, min(start + small, n), small))
        start += small
    return out


@functools.lru_cache(maxsize=None)
def _vmapped(ins: engine.Instruction, spec: engine.Spec) -> Callable[[Any, Any], KernelOut]:
    """The row-wise kernel of one static configuration (jitted per device set by
    :func:`ascend_ref.scale.run_rows`)."""
    def run(ubs: jax.Array, ps: Any) -> KernelOut:
        TRACES[(ins.api, spec)] += 1
        writes, status, _, _, undefined = engine.batched(ins, spec, ubs, ps)
        return writes, status, None, None, undefined   # the host reads back nothing more

    return run


@functools.lru_cache(maxsize=None)
def _vmapped_spr(ins: engine.Instruction,
                 spec: engine.Spec) -> Callable[[Any, Any], KernelOut]:
    """:func:`_vmapped` that also returns the reduce special registers after each case, run
    from the fresh state (``spec.spr``: the kernel computes the instruction's declared
    :class:`~ascend_ref.spr.Sets`)."""
    from . import spr as sprs

    def run(ubs: jax.Array, ps: Any) -> KernelOut:
        TRACES[(ins.api, spec)] += 1
        writes, status, diag, _, undefined = engine.batched(ins, spec, ubs, ps)
        state = jax.vmap(lambda w, ok: sprs.after(sprs.fresh(), w, spec.dtype, ok))(
            diag.spr, status == 0)
        return writes, status, state, None, undefined

    return run


def _heights(api: str, heights: Any) -> Tuple[int, ...]:
    """``heights`` as a tuple of ints (any order; a height below 1 holds no case), else a
    BAD_ARGUMENT error naming it (a string or floats were a TypeError deep in the grouping)."""
    try:
        hs = tuple(heights)
    except TypeError:
        hs = None
    if isinstance(heights, (str, bytes)) or hs is None or \
            not all(batch_args.is_int(h) for h in hs):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="heights", value=heights,
                              allowed="a sequence of ints (repeat-table heights, e.g. "
                                      f"{TABLE_HEIGHTS}; () for one table per API)")
    return tuple(int(h) for h in hs)


def _prepare_case(case: Case) -> engine.Prepared:
    return case.prepare(info=True)


def run_cases(cases: Iterable[Case], *, heights: Sequence[int] = TABLE_HEIGHTS,
              spr: bool = False) -> List[Outcome]:
    """Outcomes of ``cases`` on the JAX path, in order (same as ``run_jax`` case by case).

    ``heights``: the repeat-table heights to compile below each API's maximum
    (:data:`TABLE_HEIGHTS`); ``()`` compiles one kernel per (API, dtype, option) — what a
    campaign does, where compiles cost more than taller tables (a campaign also runs whole
    UBs, not compact windows: window widths vary per chunk and would multiply the kernels).

    The cases of each static configuration run as one batch sharded over the local devices
    (:func:`ascend_ref.scale.run_rows`; :func:`ascend_ref.scale.use_devices` picks others):
    the same bits on any number of devices.

    Preparation is vectorised (:mod:`ascend_ref.batch_prep`): cases that share a static
    configuration and whose arguments are plain ints, lists and numpy UBs are checked once
    per group and gathered into arrays; any other case goes through the per-case
    :meth:`~ascend_ref.registry.Instruction.prepare_case` (the exact fallback). Each case
    runs on a compact window of its UB (the bytes its declared geometry can touch) where
    that is exact, and the kernel returns only the words it writes. Cases of one call over
    many data whose UBs are consecutive rows of one 64-byte-aligned array
    (``ubs = batch_prep.aligned_zeros((B, n))``, ``[Case(..., ubs[k]) for k in
    range(B)]``), are read in place, as :func:`run_batch` reads an aligned input; the UBs
    are never written. The outcomes' ``written`` / ``undefined`` masks are read-only rows of
    tables the next call reuses once every outcome of this one is dropped (as
    :func:`ascend_ref.case.run_jax`'s arrays are read-only); each ``ub`` is the outcome's own.

    ``spr``: also compute the reduce special registers (:mod:`ascend_ref.spr`) each case
    leaves, run from the fresh state: the outcome of a case whose instruction sets a
    register carries them as ``outcome.spr`` (a :class:`~ascend_ref.spr.ReduceSpr`; the
    ``info.spr`` of ``case.call(ar, return_info=True)``); other outcomes keep ``spr`` None.
    Only the setters' kernels change (they compute the update); asked for or not, the
    bytes are the same.

    Example: WholeReduceMin half over one repeat of 128 twos, with a full mask and with
    129 lanes (past a half repeat's 128): the first writes ``[value, index]`` = ``[2.0,
    0]`` (the smallest lane among equals) into dst's four bytes, the second is refused.

    >>> import numpy as np, ascend_ref as ar
    >>> from ascend_ref.case import Case
    >>> ub = np.zeros(512, np.uint8)
    >>> ub[:256] = np.full(128, 2, np.float16).view(np.uint8)
    >>> p = {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    >>> t = {"src": (0, 128), "dst": (256, 2)}
    >>> outs = ar.run_cases([Case("whole_reduce_min", "atlas_a2", "float16",
    ...                           "ORDER_VALUE_INDEX", m, p, t, ub) for m in (128, 129)])
    >>> outs
    [Outcome(ok), Outcome(MASK_RANGE)]
    >>> o = outs[0]
    >>> float(o.ub[256:258].view(np.float16)[0]), int(o.ub[258:260].view(np.uint16)[0])
    (2.0, 0)
    >>> np.flatnonzero(o.written).tolist()
    [256, 257, 258, 259]
    """
    heights = _heights("run_cases", heights)
    spr = batch_args.flag("run_cases", "spr", spr)       # "no" was taken as True
    cases = as_cases(cases, "run_cases")
    outcomes: List[Optional[Outcome]] = [None] * len(cases)
    parts = batch_prep.prepare(cases, outcomes, heights)
    sink = batch_prep.Sink(parts, outcomes)
    states: Optional[dict] = {} if spr else None
    _run_parts(parts, cases, sink, states)
    sink.finish()
    if states:
        from . import spr as sprs

        for k, st in states.items():
            o = outcomes[k]
            if o is not None:
                o.spr = sprs.fresh() if o.code is not None else st
    return outcomes  # type: ignore[return-value]


def run_columns(api: str, chip: ChipLike, dtype: str, option: Any,
                mask: ArrayLike, params: dict, tensors: dict, ubs: ArrayLike,
                saturate: Union[bool, np.ndarray, None] = None, *,
                heights: Sequence[int] = TABLE_HEIGHTS) -> batch_prep.Stacked:
    """:func:`run_cases` for cases given as columns, outcomes as arrays.

    Case ``k`` is ``Case(api, chip, dtype, option, mask[k], {name: params[name][k]},
    {t: (addr[k], size[k]) for t, (addr, size) in tensors.items()}, ubs[k], saturate[k])``
    and gets the outcome :func:`run_cases` gives it (same bits, same codes), without a Case
    or an Outcome object per case. ``ubs`` ``uint8[B, N]`` (one UB size); parameters,
    addresses and sizes an int (every case) or an integer ``[B]`` array; ``mask`` ``[B]``
    ints (a count each) or ``[B, W]`` integer words (what a case's mask list holds, in the
    API's word order); ``saturate`` None, a bool or ``bool[B]``. A column of another shape
    or type is a BAD_ARGUMENT error naming it. Returns a :class:`~ascend_ref.batch_prep.Stacked`
    (``code``, ``ub``, ``written``, ``undefined``; ``.outcome(k)``).

    >>> import numpy as np, ascend_ref as ar
    >>> ubs = np.zeros((3, 1024), np.uint8)
    >>> ubs[:, :256] = np.arange(128, dtype=np.float16).view(np.uint8)
    >>> got = ar.run_columns("whole_reduce_sum", "atlas_a2", "float16", None,
    ...     np.array([128, 4, 0]), {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1,
    ...     "src_rep_stride": 8}, {"dst": (512, 16), "src": (0, 128)}, ubs)
    >>> got.code.tolist(), got.ub[:, 512:514].copy().view(np.float16)[:, 0].tolist()
    ([0, 0, 0], [8128.0, 6.0, 0.0])
    """
    heights = _heights("run_columns", heights)
    ubs = np.asarray(ubs)
    if ubs.ndim != 2 or ubs.dtype != np.uint8:
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_columns", param="ubs",
                              value=f"{ubs.dtype} {ubs.shape}", allowed="uint8[B, N]")
    if not isinstance(params, dict) or not isinstance(tensors, dict):
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_columns",
                              param="params" if not isinstance(params, dict) else "tensors",
                              value=type(params if not isinstance(params, dict) else
                                         tensors).__name__, allowed="a dict")
    out = batch_prep.Stacked.start(ubs)
    parts = batch_prep.prepare_columns(api, chip, dtype, option, mask, params, tensors, ubs,
                                       saturate, out, heights)
    _run_parts(parts, None, out)
    return out


def _run_parts(parts: Sequence[batch_prep.Rows], cases: Optional[Sequence[Case]], outcomes: Any,
               states: Optional[dict] = None) -> None:
    """Run prepared rows grouped by static configuration; fill ``outcomes`` (and, given
    ``states``, ``states[case number]`` with the registers of the cases of setters)."""
    groups = collections.defaultdict(list)
    for part in parts:
        groups[(part.ins, part.spec)].append(part)
    pending: Optional[Callable[[], None]] = None
    calls = 0
    for (ins, spec), same in groups.items():
        if pending is not None:       # before caches may be dropped: nothing in flight
            pending()
            pending = None
        engine.release_if_needed()
        width = engine.ub_bucket(max(int(p.length.max()) for p in same))
        rows = batch_prep.Rows.concat(same)
        if states is not None and ins.spr is not None:
            spec = dataclasses.replace(spec, spr=True)
        shared = _shares_call(rows) and not spec.spr
        big = _big_batch(spec.r_max, width, shared)
        if shared and big > BATCH_SIZES[-1]:   # full chunks only: they read UBs in place
            big = max(BATCH_SIZES[-1], min(big, 1 << (len(rows).bit_length() - 1)))
        for start, stop, b in _batches(len(rows), big):
            # pipelined: this chunk's kernel runs (asynchronously) while the previous one's
            # results are read back and merged and, for the next, the UBs are copied
            done = _run_group(ins, spec, width, rows.take(start, stop), b, cases, outcomes,
                              states, calls % 2)
            calls += 1
            if pending is not None:
                pending()
                pending = None
            if PIPELINE_CASES:
                pending = done
            else:
                done()
    if pending is not None:
        pending()


#: False: run_cases finishes each chunk before it starts the next (A/B measurements, tests)
PIPELINE_CASES = True


def _shares_call(rows: batch_prep.Rows) -> bool:
    """Whether every case of ``rows`` has the same run_batch columns but its window's base
    and length (then its full chunks run on :func:`run_batch`'s kernel, :func:`_one_call`,
    whose buffers are compact: the source is read in place and only the writes come back).
    A/B in one process, R = 255, 256 cases, best/median ms, chunks of 64 -> 128:
    WholeReduceMin half 16.1/17.3 -> 13.6/15.6, WholeReduceSum float 13.9/16.6 -> 13.0/13.8,
    ReduceDataBlock SUM half 21.6/26.1 -> 19.1/23.7, ReduceDataBlock MAX float
    32.0/36.0 -> 28.2/32.1."""
    q = rows.q
    if not SHARED_ROWS or q is None or rows.call is None or len(rows) == 0:
        return False
    return all(bool(np.all(v == v[:1])) for k, v in q.items() if k not in ("ub_base", "ub_len"))


def _rows_static_src(spec: engine.Spec, rows: batch_prep.Rows, width: int,
                     b: int) -> Optional[Tuple[tuple, int]]:
    """``((src_rep_stride, src_blk_stride), table height)`` when a full chunk's cases (at
    least ``BATCH_SIZES[-1]``) all share them and each source span fits the window (then
    the kernel slices instead of gathering, as :func:`run_batch` does); else None. Small or
    mixed chunks keep the gathering kernel, so a campaign's random strides compile nothing
    more.

    The height is the repeat count every case of the chunk shares, below ``spec``'s
    (:func:`_one_height`: one call over many data, as run_batch compiles it for a
    ``max_repeat``, pinned at a full mask); else ``spec``'s, or, where that table's span
    leaves a window, the chunk's largest repeat count when the span over that many repeats
    fits (every case's repeats are inside the table, so the bits are the same): windows
    sized for R = 17 .. 254 slice instead of gathering 256 rows."""
    p = rows.p
    if (not STATIC_ROWS or b < BATCH_SIZES[-1] or len(rows) < b or spec.path == "general"
            or spec.static_src is not None or p.src is None or p.src_rep_stride is None
            or width % spec.size):
        return None
    rep = np.asarray(p.src_rep_stride)
    blk = np.asarray(p.src_blk_stride) if p.src_blk_stride is not None else np.ones_like(rep)
    addr = np.asarray(p.src.addr)
    one = _one_height(spec, rows) if EXACT_HEIGHT else None
    if one is not None:
        got = _shared_strides(rep, blk, addr, one, width)
        # at most ONE_HEIGHTS such tables per static configuration (spec but its height)
        if got is not None and _admitted(_ONE_HEIGHTS, (dataclasses.replace(spec, r_max=0),
                                                        rows.call, width), one, ONE_HEIGHTS):
            return got, one
    got = _shared_strides(rep, blk, addr, spec.rows, width)
    if got is not None:
        return got, spec.r_max
    h = _exact_height(spec, rows) if EXACT_HEIGHT and not spec.count_form else None
    if h is None:
        return None
    got = _shared_strides(rep, blk, addr, h, width)
    return None if got is None else (got, h)


def _exact_height(spec: engine.Spec, rows: batch_prep.Rows) -> Optional[int]:
    """The chunk's largest repeat count (the count form's: its largest count of elements)
    when it is below ``spec``'s table height, else None: what run_batch compiles for a
    ``max_repeat``; every case's repeats are inside it, so the bits are the same. run_cases
    on 256 float count-form cases of 16320 elements: ~20 ms on the 65536-element table,
    ~10 ms at their count."""
    repeat = np.asarray(rows.p.repeat)          # None (no repeat argument): an object array
    if repeat.dtype.kind not in "iu" or repeat.size == 0:
        return None
    h = int(repeat.max())
    return h if 1 <= h < spec.r_max else None


def _one_height(spec: engine.Spec, rows: batch_prep.Rows) -> Optional[int]:
    """The repeat count every case of the chunk shares, when it is below ``spec``'s table
    height (not the count form); else None. :func:`_rows_static_src` compiles a table for
    at most :data:`ONE_HEIGHTS` such counts per static configuration in a process.

    One call over many data (a call's dumps, golden data, the benchmark) then runs run_batch's
    table for a ``max_repeat`` of that count, and, its repeat equal to the table height, the
    pinned kernel (:func:`_pinned_src`) where run_batch runs it: before, a window with room
    past the source (a work tensor after it: vec_reduce_*, ReduceSum / Max / Min) took the
    coarse 256-row table at R = 255, unpinned: ReduceSum float's 128-case chunk took
    0.95-0.98 ms (1.8 ms of CPU) there and takes 0.50-0.53 ms (0.93-0.95 ms) on the pinned
    255-row table (best of 30 calls, two processes each). The cap keeps a sweep over repeat
    counts to a few compiles more, as the pinned addresses are kept."""
    h = None if spec.count_form else _exact_height(spec, rows)      # the largest count
    return None if h is None or (np.asarray(rows.p.repeat) != h).any() else h


def _admitted(seen_by: Dict[tuple, set], key: tuple, value: int, cap: int) -> bool:
    """Whether ``value`` is, or now becomes, one of at most ``cap`` values kept for ``key``
    in ``seen_by`` (the pinned source addresses, the one-repeat tables: a few compiles more
    per static configuration in a process, however many a sweep asks for)."""
    seen = seen_by[key]
    if value not in seen:
        if len(seen) >= cap:
            return False
        seen.add(value)
    return True


#: repeat counts per static configuration that :func:`_one_height` compiles a table for
ONE_HEIGHTS = 4
_ONE_HEIGHTS: Dict[tuple, set] = collections.defaultdict(set)


#: False: run_cases' static-stride chunks keep their coarse table height, and gather when
#: its span leaves the window (A/B measurements, tests)
EXACT_HEIGHT = True


#: False: run_cases never takes the static-stride kernel (A/B measurements, tests)
STATIC_ROWS = True


def _run_group(ins: engine.Instruction, spec: engine.Spec, width: int, rows: batch_prep.Rows,
               b: int, cases: Optional[Sequence[Case]], outcomes: Any,
               states: Optional[dict] = None, slot: int = 0) -> Callable[[], None]:
    """Start one chunk's kernel; returns what finishes it (reads the results back and
    fills ``outcomes`` and ``states``). ``slot``: the window buffer it may fill
    (:meth:`~ascend_ref.batch_prep.Rows.windows`); consecutive chunks take turns, so a
    chunk's windows are not refilled while its kernel may still read them."""
    got = _rows_static_src(spec, rows, width, b)
    static, height = got if got is not None else (None, spec.r_max)
    # a full chunk of one count-form call whose table leaves the window (no static source)
    # runs on run_batch's kernel too, which gathers its source with the shared tables made
    # once a chunk: reduce_sum_count float, 256 cases of 16320 elements, 210 ms on the
    # row-wise kernel, 20 ms on run_batch's (small or mixed chunks, a campaign's, keep the
    # row-wise kernel and compile nothing more)
    counted = spec.count_form and b >= BATCH_SIZES[-1] and len(rows) >= b
    one = _one_call(spec, rows, b) if static is not None or counted else None
    sink = outcomes if isinstance(outcomes, batch_prep.Sink) else None
    # the cases' own rows, read in place while the stack copies them (after the dispatch)
    direct = sink.sources_in_place(rows, b) if sink is not None and one is not None else None
    ubs = direct[0] if direct is not None else None
    if ubs is None and sink is not None:
        ubs = sink.rows_of(rows, b)
    if ubs is not None and ubs.shape[1] != width:
        # the UBs at their own width: only for one call's chunk on run_batch's kernel (what
        # it compiles per row width anyway), whose source table fits that width too, or
        # which gathers its source (the count form: no static table; the kernel reads the
        # window's length from the cases' ``ub_len``, as run_batch reads any row width).
        # Read in place: reduce_sum_count float, 64 cases a chunk, 0.35 ms of window copies
        # before each dispatch went
        exact = _rows_static_src(spec, rows, ubs.shape[1], b) if one is not None else None
        if exact is not None:
            (static, height), width = exact, ubs.shape[1]
        elif one is not None and static is None:
            width = ubs.shape[1]
        else:
            ubs, direct = None, None
    if static is not None:
        spec = dataclasses.replace(spec, static_src=static, r_max=height)
    elif one is not None and EXACT_HEIGHT:
        spec = dataclasses.replace(spec, r_max=_exact_height(spec, rows) or spec.r_max)
    if ubs is None:
        ubs = rows.windows(width, b, reuse=True, slot=slot)
    if static is not None:                      # words: no byte assembly
        ubs = _src_words(ubs, ins, spec.dtype, spec.option)
    if one is not None:
        columns, qrows, shared = one
        assert rows.call is not None and rows.q is not None   # what _one_call needs to answer
        chip, option, mode = rows.call
        pinned = None if static is None else _pinned_src(
            (ins.api, chip, spec.dtype, option, mode, spec.r_max, spec.path, static, columns),
            rows.q, mode, spec.dtype, spec.r_max, b)
        fn = _array_fn(ins.api, chip, spec.dtype, option, mode, spec.r_max, ins.saturating,
                       spec.path, spec.static_src, columns, True, pinned)
        EXECUTABLES.add((ins.api, spec, width, ("shared", b, pinned)))
        scale.CALLS[1] += 1
        running = _jitted(fn)(ubs, qrows, shared)          # dispatched: runs asynchronously
        if direct is not None:                              # the stack while it runs
            assert sink is not None
            sink.fill(*direct[1])

        def done() -> None:
            writes, status, undefined = scale.to_host(running)
            batch_prep.outcomes(rows, cases, writes, np.asarray(status), undefined, outcomes)
        return done
    EXECUTABLES.add((ins.api, spec, width, b))
    ps = rows.params(b)
    fn = _vmapped_spr(ins, spec) if spec.spr else _vmapped(ins, spec)
    writes, status, state, _, undefined = scale.run_rows(fn, ubs, ps)   # synchronous

    def merged() -> None:
        batch_prep.outcomes(rows, cases, writes, np.asarray(status), undefined, outcomes)
        if spec.spr and states is not None:
            leaves, tree = jax.tree_util.tree_flatten(state)
            for j, k in enumerate(rows.idx.tolist()):
                states[k] = jax.tree_util.tree_unflatten(tree,
                                                         [np.asarray(x[j]) for x in leaves])
    return merged


#: False: run_cases never runs a chunk on run_batch's kernel (A/B measurements, tests)
SHARED_ROWS = True


def _one_call(spec: engine.Spec, rows: batch_prep.Rows, b: int) -> Optional[tuple]:
    """``(columns, rows, shared)`` (:func:`_pack`) of a chunk whose cases differ only in
    their UBs -- every run_batch column but the window's base and length the same in every
    case: one call over many data (golden data, a call's dumps) -- to run on
    :func:`run_batch`'s kernel, where the values the cases share enter unbatched (masks,
    tables and extents are computed once per chunk, not once per case), on the one default
    device; None (the row-wise kernel) otherwise."""
    q = rows.q
    if not SHARED_ROWS or q is None or rows.call is None or spec.spr or len(rows) == 0:
        return None
    devs = scale.default_devices()
    if len(devs) != 1 or devs[0] != jax.devices()[0]:
        return None
    m = len(rows)
    if m < b:
        q = scale.pad_rows(q, b)
    columns, qrows, shared = _pack(q, b, share=True)
    if any(not sh for key, _, sh in columns if key not in ("ub_base", "ub_len")):
        return None
    return columns, qrows, shared


# ------------------------------------------------------------------ array API ---------------

@functools.lru_cache(maxsize=None)
def _array_fn(api: str, chip: str, dtype: str, option: Any, mask_mode: str,
              max_repeat: Optional[int], has_saturate: bool,
              path: str = "fast", static_src: Optional[tuple] = None,
              columns: tuple = (), info: bool = False,
              pinned_src: Optional[int] = None) -> Callable[..., KernelOut]:
    """The kernel of one static configuration: ``run(ubs, rows, shared)``.

    ``columns``: ``((key, words, shared), ...)`` — how the int32 parameter matrix ``rows``
    (``[B, K]``: one row per case) and vector ``shared`` (the values every case of the batch
    shares, found on the host) hold the parameters. Shared values enter the vmapped kernel
    unbatched, so everything that depends only on them (write tables, extents, masks) is
    computed once per batch instead of once per case (a shared mask and repeat: the blocked
    min / max trees, ``Spec.shared_lanes``). ``ubs`` may be a view of the rows as
    the element type (then the source slices need no byte assembly). ``info``: also return
    the undefined-byte tables (:func:`ascend_ref.engine.compact_undefined`).
    ``pinned_src``: every case reads its source at this byte address with every lane of every
    repeat enabled (:func:`_pinned_src`): ``Spec.src_at`` and ``Spec.all_active``."""
    ins = registry.lookup(api)
    shared = {key for key, _, sh in columns if sh}
    shared_lanes = "mask" in shared and "repeat" in shared

    def one(q: Dict[str, Any]) -> Tuple[Any, ...]:
        mask = q["mask"] if mask_mode == "count" else q["mask"].astype(jnp.uint32)
        case = Case(api, chip, dtype, option, mask, {k: q[k] for k in ins.params},
                    {t: (q[f"{t}.addr"], q[f"{t}.size"]) for t in ins.operands},
                    np.zeros((1,), np.uint8), q["saturate"] if has_saturate else None)
        prep = ins.prepare_case(case, info=False, path=path)
        spec = prep.spec
        if max_repeat is not None:
            spec = dataclasses.replace(spec, r_max=int(max_repeat))
        spec = dataclasses.replace(spec, compact=True, static_src=static_src, info=info,
                                   shared_lanes=BLOCKED and shared_lanes,
                                   src_at=pinned_src, all_active=pinned_src is not None)
        return prep.ins, spec, prep.p.replace(ub_base=q["ub_base"])

    def unpack(vec: jax.Array, shared: bool) -> dict:
        out, at = {}, 0
        for key, words, sh in columns:
            if sh != shared:
                continue
            v = vec[at:at + words] if key == "mask" and mask_mode == "bits" else vec[at]
            at += words
            if key == "mask" and mask_mode == "bits":
                v = jax.lax.bitcast_convert_type(v, jnp.uint32)
            elif key == "saturate":
                v = v != 0
            out[key] = v
        return out

    def run(ubs: jax.Array, rows: jax.Array, shared: jax.Array) -> KernelOut:
        TRACES[("run_batch", api, chip, dtype, option, mask_mode, max_repeat)] += 1
        common = unpack(shared, True)
        width = np.int32(ubs.shape[1] * ubs.dtype.itemsize)       # the row's bytes

        def prep(row: jax.Array) -> Params:
            q = {**common, **unpack(row, False)}
            # run_cases' windows bring their own length (the rules' UB bound), else the row
            return one(q)[2].replace(ub_len=q.get("ub_len", width))

        kernel, spec, _ = one({**common, **unpack(rows[0], False)})
        writes, status, _, _, undefined = engine.batched(kernel, spec, ubs, rows, prep=prep)
        return (writes, status, undefined) if info else (writes, status)

    return run


def _src_words(xs: np.ndarray, kernel: engine.Instruction, dtype: str,
               option: Any) -> np.ndarray:
    """Rows ``xs`` (uint8) for a static-stride kernel, viewed as words so that it slices its
    source with no byte assembly: the element type (8-byte elements as (lo, hi) uint32: no
    x64), or uint32 where the instruction takes a 2-byte source as words of two lanes
    (:attr:`ascend_ref.engine.Instruction.pair_src`; :func:`ascend_ref.engine.kernel` then
    sets ``Spec.pair_src``). Rows whose width is no multiple of the word stay bytes.

    >>> rows = np.zeros((2, 64), np.uint8)
    >>> kernel = registry.lookup("reduce_data_block").kernel
    >>> [_src_words(rows, kernel, "float16", o).dtype.name for o in ("SUM", "MAX")]
    ['uint32', 'uint16']
    >>> _src_words(rows[:, :62], kernel, "float16", "SUM").dtype.name
    'uint16'
    """
    size = engine.itemsize(dtype)
    unit = 4 if size == 2 and kernel.pair_src(dtype, option) and xs.shape[1] % 4 == 0 \
        else min(size, 4)
    return xs.view(f"uint{8 * unit}") if xs.shape[1] % unit == 0 else xs


@functools.lru_cache(maxsize=None)
def _jitted(fn: Callable) -> Callable:
    """``jax.jit(fn)``, one wrapper per kernel, kept (``fn``: a stable object, e.g. from
    :func:`_array_fn`'s cache). A fresh wrapper's first call takes JAX's slow dispatch path:
    ~110-130 us against ~23-33 us for a call of the same wrapper again (measured with
    run_batch's 64-case chunk shapes). After :func:`ascend_ref.engine.release`
    (``jax.clear_caches``) a kept wrapper compiles again on its next call."""
    return jax.jit(fn)


@functools.lru_cache(maxsize=None)
def _unshared(fn: Callable) -> Callable:
    """``fn`` with nothing shared (rows sharded over several devices carry every value);
    one stable object per kernel, so :func:`ascend_ref.scale.run_rows` compiles it once."""
    empty = np.zeros((0,), np.int32)
    return lambda ubs, rows: fn(ubs, rows, empty)


def _pack(q: dict, b: int, share: bool) -> tuple:
    """``(columns, rows, shared)``: the parameters as one int32 ``[B, K]`` matrix and one
    int32 vector of the values every case shares (``share``; else empty)."""
    columns: list = []
    cols: List[np.ndarray] = []
    common: List[np.ndarray] = []
    for key in sorted(q):
        v = np.asarray(q[key])
        v = v.view(np.int32) if v.dtype == np.uint32 else v.astype(np.int32, copy=False)
        v = v.reshape(b, -1)
        # a scalar given for every case (stride 0) is shared without comparing B values
        same = share and b > 0 and key != "ub_base" and \
            bool(np.all(batch_args.uniform(v) == v[:1]))
        columns.append((key, v.shape[1], same))
        (common if same else cols).append(v[0] if same else v)
    rows = np.concatenate(cols, axis=1) if cols else np.zeros((b, 0), np.int32)
    shared = np.concatenate(common) if common else np.zeros((0,), np.int32)
    return tuple(columns), np.ascontiguousarray(rows), shared


def _max_table(api: str, option: Any, max_repeat: Optional[int], dtype: str) -> int:
    """The repeat-table height a batch compiles (the API's range unless ``max_repeat``)."""
    if max_repeat is not None:
        return int(max_repeat)
    return registry.lookup(api).repeat_range(option, dtype)[1]


def _static_src(api: str, option: Any, max_repeat: Optional[int], q: dict, width: int,
                dtype: str) -> Optional[tuple]:
    """``(src_rep_stride, src_blk_stride)`` when every case shares them and its whole
    source span fits its row (then the kernel slices instead of gathering), else None."""
    if "src_rep_stride" not in q:        # the count form: no stride parameter (gathered)
        return None
    rep = q["src_rep_stride"]
    blk = q["src_blk_stride"] if "src_blk_stride" in q else np.ones_like(rep)
    return _shared_strides(rep, blk, q["src.addr"], _max_table(api, option, max_repeat, dtype),
                           width)


#: how many source addresses one static configuration compiles a pinned kernel for in a
#: process (:func:`_pinned_src`); batches at further addresses run the kernel that takes the
#: address as a value (the same bits), so a sweep over addresses compiles at most this many
#: more kernels
PINNED_ADDRESSES = 4
#: False: no pinned kernels (A/B measurements, tests)
PINNED = True
_PINNED: Dict[tuple, set] = collections.defaultdict(set)


def _pinned_src(key: tuple, q: dict, mask_mode: str, dtype: str, r_max: int,
                b: int) -> Optional[int]:
    """The source byte address to compile into a static-stride kernel (``Spec.src_at``, with
    ``Spec.all_active``), or None.

    Where every case of a batch of at least ``BATCH_SIZES[-1]`` shares its source address,
    enables every lane (a count of the ``dtype``'s lanes, or bit words all ones, which enable
    every lane in either word order) and repeats ``r_max`` times -- the common layout of a
    kernel's dumps and of the benchmark -- the source is a static slice that XLA fuses into
    the tree reading it, the sum trees skip their masking and the 16-bit min / max trees take
    a constant one (:attr:`ascend_ref.numerics.Exact.all_active`): ReduceDataBlock SUM
    float's kernel took 0.32-0.44 ms per 64 cases at R = 255 against 0.49-0.55
    (2026-12-06). Only :data:`PINNED_ADDRESSES` addresses per configuration (``key``) are
    pinned in a process.

    >>> q = {"src.addr": np.zeros(64, np.int32), "repeat": np.full(64, 255, np.int32),
    ...      "mask": np.full(64, 64, np.int32)}
    >>> _pinned_src(("doctest",), q, "count", "float32", 255, 64)
    0
    >>> _pinned_src(("doctest",), dict(q, repeat=np.full(64, 16, np.int32)), "count",
    ...             "float32", 255, 64) is None
    True
    """
    # (neither caller takes counter mode: run_batch has no special registers, and run_cases
    # sends counter-mode calls to the row-wise kernel)
    if not PINNED or b < BATCH_SIZES[-1] or any(k not in q for k in ("src.addr", "repeat")):
        return None
    addr, rep, mask = (batch_args.uniform(q[k]) for k in ("src.addr", "repeat", "mask"))
    a0 = int(addr.reshape(-1)[0])
    if (addr != a0).any() or (rep != r_max).any():
        return None
    lanes = 256 // np.dtype(dtype).itemsize                  # Spec.lanes
    full = (mask == lanes) if mask_mode == "count" else (mask.view(np.uint32) == 0xFFFFFFFF)
    if not full.all():
        return None
    return a0 if _admitted(_PINNED, key, a0, PINNED_ADDRESSES) else None


def _shared_strides(rep: np.ndarray, blk: np.ndarray, addr: np.ndarray, rows: int,
                    width: int) -> Optional[tuple]:
    """``(rep, blk)`` when every case has the same source strides (each in [0, 65535]) and
    its source span over ``rows`` repeats starts at ``addr`` inside its ``width``-byte row,
    else None (:func:`_static_src`, :func:`_rows_static_src`)."""
    rep, blk, addr = (batch_args.uniform(a) for a in (rep, blk, addr))
    if rep.size == 0 or (rep != rep[0]).any() or (blk != blk[0]).any():
        return None
    r0, b0 = int(rep[0]), int(blk[0])
    if not (0 <= r0 <= 65535 and 0 <= b0 <= 65535):
        return None
    span = engine.static_span(rows, r0, b0)
    if span > width or (addr < 0).any() or (addr > width - span).any():
        return None
    return r0, b0


#: a run_cases chunk's source bytes (cases x repeats x 256 B) stay near this, so per-call
#: buffers stay below glibc's mmap threshold instead of being mapped and faulted in again on
#: every call
_CHUNK_BYTES = 1 << 21
#: the same for a run_batch chunk: larger, because a call's fixed costs (dispatch, one
#: device_get per output, the merge's per-call work) outweigh the page faults there
#: (measured A/B in one process, R = 255, 256 cases, before the pipelined loop: 2 MiB ->
#: 8 MiB took WholeReduceMin half from 4.2 to 3.5 ms, WholeReduceSum float from 3.3 to
#: 2.3 ms, loaded). With the pipelined loop 4 MiB: the copy of an unaligned input's first
#: chunk, which no kernel overlaps, is half as long (A/B in one process, 256 cases at
#: R = 255, best of 9 in turns, each call after 48 MB read to evict the caches; input 16
#: bytes off a 64-byte boundary, 8 -> 4 MiB: WholeReduceMin half 3.95 -> 3.41 ms,
#: WholeReduceSum half 5.58 -> 5.09, ReduceDataBlock SUM float 5.54 -> 4.56,
#: vec_reduce_add float 3.48 -> 3.54; aligned, read in place: 2.72 -> 2.99, 5.01 -> 4.95,
#: 4.58 -> 4.50, 2.78 -> 3.13, i.e. within the VM's noise)
_BATCH_CHUNK_BYTES = 1 << 22
#: the source bytes of a run_cases chunk that runs on run_batch's kernel (:func:`_big_batch`)
_CASES_SHARED_CHUNK_BYTES = 1 << 23


def _chunk(b: int, r_max: int, nbytes: Optional[int] = None) -> int:
    nbytes = _CHUNK_BYTES if nbytes is None else nbytes
    c = max(32, min(4096, nbytes // (256 * max(r_max, 1))))
    c = 1 << (c.bit_length() - 1)
    return b if b <= c else c


def _dense_store(out: np.ndarray, start: int, addr: np.ndarray, bits: np.ndarray,
                 valid: np.ndarray) -> bool:
    """Store a write table as one 2-D slice when it is one (:func:`batch_prep._dense_span`:
    the same words of every row valid, and every row's valid words at the same consecutive
    addresses; the common case, e.g. ``dst_rep_stride`` 1 with a fixed dst). Returns False
    (nothing stored) otherwise."""
    n = addr.shape[0]
    span = batch_prep._dense_span(addr, valid, bits.dtype.itemsize, out.shape[1]) if n else None
    if span is None:
        return False
    lo, hi, cols = span
    out[start:start + n, lo:hi].view(bits.dtype)[...] = bits.reshape(n, -1)[:, cols]
    return True


def _merge(out: np.ndarray, start: int, writes: Iterable[Tuple[Any, Any, Any]]) -> None:
    """Write the words a kernel chunk produced into ``out`` rows ``start...`` (host side):
    one flat-index store per write table (``final`` words do not repeat an address, so the
    order of the stores does not matter); no boolean gathers when every word is written."""
    width = out.shape[1]
    for addr, bits, valid in writes:
        addr, bits, valid = np.asarray(addr), np.asarray(bits), np.asarray(valid)
        n = min(addr.shape[0], out.shape[0] - start)
        addr, bits, valid = addr[:n], bits[:n], valid[:n]
        size = bits.dtype.itemsize
        if _dense_store(out, start, addr, bits, valid):
            continue
        rows = np.arange(start, start + n, dtype=np.int64).reshape((n,) + (1,) * (addr.ndim - 1))
        if not valid.all():
            rows = np.broadcast_to(rows, addr.shape)[valid]
            addr, bits = addr[valid], bits[valid]
        if width % size == 0 and not np.any(addr & (size - 1)):
            flat = rows * (width // size) + (addr >> (size.bit_length() - 1))
            out.view(bits.dtype).reshape(-1)[flat.reshape(-1)] = bits.reshape(-1)
        else:
            flat = np.broadcast_to(rows * width + addr, addr.shape).reshape(-1)
            v = bits.reshape(-1)
            for k in range(size):
                out.reshape(-1)[flat + k] = (v >> (8 * k)).astype(np.uint8)


def run_batch(api: str, ubs: ArrayLike, *, chip: ChipLike, dtype: str,
              mask: ArrayLike, order: Any = None, reduce_type: Any = None,
              cal_index: bool = False, saturate: Any = None, ub_base: ArrayLike = 0,
              max_repeat: Optional[int] = None, devices: Optional[Sequence] = None,
              mask_mode: Optional[str] = None, return_undefined: bool = False,
              **params: Any) -> BatchResult:
    """Run ``api`` on every row of ``ubs`` (``uint8[B, W]``) with per-case parameters.

    ``dst`` / ``src`` / ``work_tensor`` are ``(addr, size)`` pairs of ints or ``[B]`` arrays
    (elements of ``dtype``); ``mask`` is ``[B]`` ints (continuous) or ``[B, 4]`` uint32 lane
    words (``mask_mode="count"`` / ``"bits"`` says which; default: 2-D is bits, else counts);
    ``repeat``, strides, ``saturate`` and ``ub_base`` are scalars or ``[B]`` arrays.
    Integer parameters must be integers that fit int32 and ``saturate`` / ``cal_index`` bools:
    anything else is a BAD_ARGUMENT error naming the parameter (:mod:`ascend_ref.batch_args`).
    ``max_repeat`` (static) shortens the compiled repeat table (cases above it get
    ``REPEAT_RANGE``). Returns numpy ``(ubs, status)``; the caller's ``ubs`` (numpy or JAX,
    on one device or sharded over several) is never modified, donated or deleted (unless the
    caller asks for exactly that with :func:`overwrite_input`).

    Fast path: the kernel reads the rows in place (no copy on CPU; an input not aligned to
    64 bytes is first copied into the result and read there), returns only the words each
    case writes, and the host merges them into one copy of ``ubs``, made chunk by chunk
    while the kernels run; batches run in chunks whose buffers stay small; when every case
    shares its source strides the kernel slices the source instead of gathering it.

    ``return_undefined``: return ``(ubs, status, undefined)``, ``undefined`` a bool ``[B, W]``
    mask of the bytes whose value after the call the documentation does not define (as
    :func:`run_cases`' outcomes mark them, within each row); ``ascend-ref verify`` compares
    stacked dumps with it.

    Example: WholeReduceSum half over three UBs of 128 ones, twos and threes, one repeat,
    a mask per case (128, 64 and 129 lanes: 129 is past a half repeat's 128): the sums
    128·1 and 64·2, and a status code for the third case, whose row is left as it was.

    >>> import numpy as np, ascend_ref as ar
    >>> ubs = np.zeros((3, 512), np.uint8)
    >>> for k in range(3):
    ...     ubs[k, :256] = np.full(128, k + 1, np.float16).view(np.uint8)
    >>> out, status = ar.run_batch("whole_reduce_sum", ubs, chip="atlas_a2", dtype="float16",
    ...                            mask=np.array([128, 64, 129]), repeat_time=1,
    ...                            dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8,
    ...                            src=(0, 128), dst=(256, 16))
    >>> out[:2, 256:258].view(np.float16)[:, 0].tolist(), [ar.Code(int(c)).name for c in status]
    ([128.0, 128.0], ['OK', 'OK', 'MASK_RANGE'])
    >>> bool((out[2] == ubs[2]).all())
    True
    """
    ins = registry.lookup(api, api="run_batch")
    return_undefined = batch_args.flag("run_batch", "return_undefined", return_undefined)
    dtype = dtype_name(dtype, "run_batch")
    option: Any = None
    given = {"order": order, "reduce_type": reduce_type, "cal_index": cal_index}
    foreign = {k: v for k, v in given.items() if (ins.option is None or k != ins.option.key)
               and v is not None and not (k == "cal_index" and
                                          isinstance(v, (bool, np.bool_)) and not v)}
    if not ins.saturating and saturate is not None:
        foreign["saturate"] = saturate
    if foreign:          # what the public function would refuse as an unexpected keyword
        k = sorted(foreign)[0]
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_batch", param=k, value=foreign[k],
                              allowed=f"a parameter of {api}: {k} is not one (leave it out)")
    if ins.option is not None:
        raw = given[ins.option.key] if ins.option.key in given else params.pop(ins.option.key,
                                                                                None)
        if isinstance(ins.option, registry.FlagOption):      # as the public function takes it
            option = ins.option.parse(ins.option.default if raw is None else raw, api=api,
                                      chip=chip)
        else:
            option = ins.option.parse(raw if raw or ins.option.default is None
                                      else ins.option.default, api=api, chip=chip)
    ubs = np.asarray(ubs)
    if ubs.ndim != 2 or ubs.dtype != np.uint8:
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_batch", param="ubs",
                              value=f"{ubs.dtype} {ubs.shape}", allowed="uint8[B, W]")
    b = ubs.shape[0]
    mask_mode, qmask = batch_args.mask_param(api, mask, b, mask_mode)
    q = {"mask": qmask}
    for t in ins.operands:
        if t not in params:
            raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=t, value="missing",
                                  allowed=f"an (addr, size) pair: pass {t}=(addr, size)")
        addr, size = batch_args.pair(api, t, params.pop(t))
        q[f"{t}.addr"] = batch_args.int_param(api, f"{t}.addr", addr, b)
        q[f"{t}.size"] = batch_args.int_param(api, f"{t}.size", size, b)
    for k in ins.params:
        key = k if k in params else {"repeat": ins.repeat_param}.get(k, k)
        if key not in params:
            raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=key, value="missing",
                                  allowed=f"an int or a [B] int array: pass {key}=...")
        q[k] = batch_args.int_param(api, key, params.pop(key), b)
    if params:
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_batch", param=sorted(params)[0],
                              value=params[sorted(params)[0]], allowed="a parameter of " + api)
    if max_repeat is not None and not (batch_args.is_int(max_repeat)
                                       and 1 <= max_repeat <= 2**31 - 1):
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_batch", param="max_repeat",
                              value=max_repeat, allowed="None or an int in [1, 2**31 - 1]")
    base = batch_args.int_param(api, "ub_base", ub_base, b)
    base1 = batch_args.uniform(base)
    if (base1 % 32).any() or (base1 < 0).any():
        raise ConstraintError(Code.BAD_ARGUMENT, api="run_batch", param="ub_base",
                              value=base1[(base1 % 32 != 0) | (base1 < 0)][0],
                              allowed="a non-negative multiple of 32")
    q["ub_base"] = base
    has_sat = ins.saturating
    if has_sat:
        from .chips import chip as get_chip

        default = get_chip(chip).saturate_default and dtype == "float16"
        q["saturate"] = batch_args.flag(api, "saturate",
                                        default if saturate is None else saturate, b)
    q = {k: np.asarray(v, np.uint32 if k == "mask" and mask_mode == "bits" else
                       (bool if k == "saturate" else np.int32)) for k, v in q.items()}
    no_bytes = ubs.shape[1] == 0 and b > 0
    if no_bytes:
        # a UB of no bytes: the kernels need a row to read, so they read 32 zero bytes whose
        # length the rules are told is 0 (each case gets the code the public function
        # raises, UB_BOUNDS unless a rule before it fails); the result keeps no column
        q["ub_len"] = np.zeros(b, np.int32)
        ubs = batch_prep.aligned_zeros((b, 32))
    path = engine._PATH.get()
    devs = scale.checked_devices(devices, "run_batch")
    # a host-side choice; processes of one SPMD call might choose differently: not there
    static = None if path == "general" or scale._is_global(devs) else \
        _static_src(api, option, max_repeat, q, ubs.shape[1], dtype)
    one_device = len(devs) == 1
    # the result starts as a copy of the input, chunk by chunk (see below); the kernel reads
    # its rows (in place on CPU) before the chunk's words are merged into them
    # (or, under overwrite_input(), is ubs itself when the kernel can read it in place);
    # aligned, so the CPU backend reads its slices without a copy
    inplace = PIPELINE and _OVERWRITE.get() and _writable_in_place(ubs)
    # an aligned input is read in place by the kernels, so each chunk's rows are copied into
    # the result while its kernel runs (not before it is dispatched); any other input is
    # copied first and the kernels read the copy (the CPU backend would copy it again)
    direct = PIPELINE and READ_INPUT and not inplace and _aligned(ubs)
    if inplace:
        out = ubs
    else:
        out = batch_prep.result_empty((ubs.shape[0], ubs.shape[1]))
        if not PIPELINE:
            np.copyto(out, ubs)
    status = np.zeros(b, np.int32)
    undef = batch_prep.sparse_zeros(ubs.shape) if return_undefined else None
    touched = UndefinedSpans.empty(b, ubs.shape[1]) if undef is not None else None
    held = _UNDEFINED_ROWS.get()
    if held is not None and touched is not None:
        held.append(touched)
    if b == 0:
        return (out, status, undef) if undef is not None else (out, status)
    columns, rows, shared = _pack(q, b, share=one_device)
    chip_id = chip if isinstance(chip, str) else chip.id
    table = _max_table(api, option, max_repeat, dtype)
    pinned = None if static is None or not one_device else _pinned_src(
        (api, chip_id, dtype, option, mask_mode, max_repeat, path, static, columns),
        q, mask_mode, dtype, table, b)
    fn = _array_fn(api, chip_id, dtype, option, mask_mode, max_repeat, has_sat, path, static,
                   columns, bool(return_undefined), pinned)
    engine.release_if_needed()
    # one device: chunks of equal shape (one compile); several: one sharded call (SPMD)
    c = _chunk(b, table, _BATCH_CHUNK_BYTES) if one_device else b

    def finish(start: int, stop: int, res: Any) -> None:
        res = scale.to_host(res)
        writes, st = res[0], res[1]
        status[start:stop] = np.asarray(st)[:stop - start]
        _merge(out, start, writes)
        if undef is not None:
            assert touched is not None            # made with undef, above
            _mark_undefined(undef, start, res[2], touched)

    # pipelined: chunk k's kernel is dispatched (it runs asynchronously) before chunk k - 1
    # is read back and merged, and chunk k + 1's rows are copied while it runs; an input the
    # kernels read in place has up to AHEAD_CHUNKS kernels dispatched before the oldest
    # one's rows are copied and merged (the copies never delay a dispatch)
    pending: Optional[tuple] = None
    ahead: List[tuple] = []
    fill = _FILL.get()
    if fill is not None and not (FILL_CHUNKS and inplace and one_device):
        fill(0, b)                                # all rows before any kernel reads one
        fill = None
    for start in range(0, b, c):
        stop = min(start + c, b)
        if fill is not None:                      # while the previous chunk's kernel runs
            fill(start, stop)
        if PIPELINE and not inplace and not direct:
            np.copyto(out[start:stop], ubs[start:stop])
        xs, qs = (ubs if direct else out)[start:stop], rows[start:stop]
        if stop - start < c:                      # same shape as every chunk: no recompile
            xs, qs = scale.pad_rows((xs, qs), c)
        if static is not None:                    # words: no byte assembly
            xs = _src_words(xs, ins.kernel, dtype, option)
        if one_device:
            scale.CALLS[1] += 1
            args = (xs, qs, shared)
            if devs[0] != jax.devices()[0]:      # numpy arguments go to the default device
                args = tuple(jax.device_put(a, devs[0]) for a in args)
            res = _jitted(fn)(*args)
        else:
            res = scale.run_rows(_unshared(fn), xs, qs, devices=devs)
        if direct and AHEAD_CHUNKS > 0:
            ahead.append((start, stop, res))
            if len(ahead) > AHEAD_CHUNKS:         # the oldest: its rows, then its words
                s0, s1, r0 = ahead.pop(0)
                np.copyto(out[s0:s1], ubs[s0:s1])
                finish(s0, s1, r0)
            continue
        if direct:                                # while the kernel reads the input
            np.copyto(out[start:stop], ubs[start:stop])
        if not PIPELINE:
            finish(start, stop, res)
            continue
        if pending is not None:
            finish(*pending)
        pending = (start, stop, res)
    for s0, s1, _ in ahead:                       # while the last kernels run
        np.copyto(out[s0:s1], ubs[s0:s1])
    for item in ahead:
        finish(*item)
    if pending is not None:
        finish(*pending)
    if no_bytes:
        out = out[:, :0]
        undef = None if undef is None else undef[:, :0]
    return (out, status, undef) if undef is not None else (out, status)


_OVERWRITE: contextvars.ContextVar = contextvars.ContextVar("ascend_ref_overwrite", default=False)


@contextlib.contextmanager
def overwrite_input() -> Iterator[None]:
    """Within this block, :func:`run_batch` may return its input array itself, updated, as
    its result (no copy of the batch), where the input is a writable, C-contiguous,
    64-byte-aligned numpy ``uint8`` array (e.g. :func:`ascend_ref.batch_prep.aligned_zeros`);
    any other input is copied as always. For callers that built the input only for this
    call (``ascend-ref verify``'s windows); each chunk's kernel reads its rows before its
    words are stored into them, and no chunk reads another's rows."""
    token = _OVERWRITE.set(True)
    try:
        yield
    finally:
        _OVERWRITE.reset(token)


_FILL: contextvars.ContextVar = contextvars.ContextVar("ascend_ref_fill", default=None)


@contextlib.contextmanager
def fill_rows(fill: Callable[[int, int], None]) -> Iterator[None]:
    """Within this block, :func:`run_batch` calls ``fill(start, stop)`` to write rows
    ``[start, stop)`` of its input before anything reads them: chunk by chunk, each chunk
    while the previous chunk's kernel runs, when the call runs in place
    (:func:`overwrite_input`) on one device; otherwise once, ``fill(0, B)``, before anything
    else. For a caller that assembles the input only for this call (``ascend-ref verify``
    builds each case's window from a dump's region bytes): the copying overlaps the kernels.

    >>> import numpy as np
    >>> from ascend_ref import batch_prep
    >>> ubs, seen = batch_prep.aligned_zeros((2, 4096)), []
    >>> def fill(start, stop):
    ...     seen.append((start, stop)); ubs[start:stop, :2] = (0, 60)   # 1.0 in float16
    >>> with overwrite_input(), fill_rows(fill):
    ...     out, status = run_batch("whole_reduce_sum", ubs, chip="atlas_a2", dtype="float16",
    ...                             mask=128, dst=(2048, 16), src=(0, 128), repeat=1,
    ...                             dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8)
    >>> seen[0][0], out[:, 2048:2050].tolist()
    (0, [[0, 60], [0, 60]])
    """
    token = _FILL.set(fill)
    try:
        yield
    finally:
        _FILL.reset(token)


_UNDEFINED_ROWS: contextvars.ContextVar = contextvars.ContextVar("ascend_ref_undefined_rows",
                                                                default=None)


@contextlib.contextmanager
def undefined_rows() -> Iterator[List["UndefinedSpans"]]:
    """Within this block, every :func:`run_batch` call with ``return_undefined=True``
    appends to the yielded list an :class:`UndefinedSpans`: which rows of its ``undefined``
    mask hold any undefined byte, and the columns that hold them. A caller then reads only
    those rows and columns of the mask: the mask is mostly never written
    (:func:`ascend_ref.batch_prep.sparse_zeros`), and reading a never-written page of it
    costs a page fault (``verify``: 2.8 ms to scan 256 rows of 65 KiB).

    >>> import numpy as np
    >>> with undefined_rows() as rows:     # the work tensor's bytes are undefined after it
    ...     _, _, und = run_batch("vec_reduce_add", np.zeros((2, 4096), np.uint8),
    ...                           chip="atlas_training", dtype="float16", mask=[128, 1],
    ...                           dst=(2048, 16), src=(0, 1024), work_tensor=(2304, 256),
    ...                           repeat=[2, 1], src_rep_stride=8, return_undefined=True)
    >>> rows[0].rows.tolist() == und.any(axis=1).tolist()
    True
    >>> rows[0]
    UndefinedSpans(2 rows, 2 with a mark, columns [2304, 2816))
    """
    held: List[UndefinedSpans] = []
    token = _UNDEFINED_ROWS.set(held)
    try:
        yield held
    finally:
        _UNDEFINED_ROWS.reset(token)


def _aligned(ubs: np.ndarray) -> bool:
    """C-contiguous from a 64-byte boundary: the CPU backend reads such rows in place."""
    return bool(ubs.flags.c_contiguous and ubs.ctypes.data % 64 == 0)


def _writable_in_place(ubs: np.ndarray) -> bool:
    return bool(_aligned(ubs) and ubs.flags.writeable)


#: False: run_batch copies the whole input first and runs its chunks one after the other
#: (A/B measurements, tests)
PIPELINE = True
#: False: run_batch's kernels never read an aligned input in place (they read the copy;
#: A/B measurements, tests)
READ_INPUT = True
#: how many chunks' kernels run_batch dispatches ahead of the copies and merges when the
#: kernels read an aligned input in place (0: chunk k + 1 is dispatched after chunk k's rows
#: are copied: each copy delayed the next dispatch, ~0.2 ms a chunk of 64 cases at R = 255).
#: A/B 0 against 4 in one process, 256 cases at R = 255 (four chunks), best of 11-25 in
#: turns, 28 pairs over WholeReduceMin/Max/Sum, ReduceDataBlock, vec_reduce_* half and
#: float: 4 faster in 19 pairs, slower in 5 (by up to 10 %), median time x 0.95 (e.g.
#: WholeReduceMin half 2.53 -> 2.33 ms, vec_reduce_add half 4.65 -> 3.69 ms)
AHEAD_CHUNKS = 4
#: False: run_batch asks a :func:`fill_rows` callback for all rows at once, before any
#: kernel (A/B measurements, tests)
FILL_CHUNKS = True
#: False: run_batch never takes the blocked min / max trees (A/B measurements, tests)
BLOCKED = True


@dataclasses.dataclass
class UndefinedSpans:
    """Where a :func:`run_batch` result's ``undefined`` mask holds marks, per row: every
    mark of row ``k`` lies in the columns ``[lo[k], hi[k])`` (``lo`` = the row width and
    ``hi`` = 0 in a row without one); :attr:`rows` says which rows hold any."""

    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def empty(cls, b: int, width: int) -> "UndefinedSpans":
        return cls(np.full(b, width, np.int64), np.zeros(b, np.int64))

    @property
    def rows(self) -> np.ndarray:
        """bool ``[B]``: the rows that hold a mark."""
        return self.lo < self.hi

    def add(self, start: int, lo: np.ndarray, hi: np.ndarray, keep: np.ndarray) -> None:
        """Record marks ``[lo, hi)`` where ``keep`` (each ``[n, k]``) in rows ``start...``."""
        n = keep.shape[0]
        if not n or not keep.size:
            return
        first = np.where(keep, lo, np.iinfo(np.int64).max).min(axis=1)   # the most: no mark
        last = np.where(keep, hi, 0).max(axis=1)
        self.lo[start:start + n] = np.minimum(self.lo[start:start + n], first)
        self.hi[start:start + n] = np.maximum(self.hi[start:start + n], last)

    def __getitem__(self, rows: Any) -> "UndefinedSpans":
        return UndefinedSpans(self.lo[rows], self.hi[rows])

    def overlapping(self, lo: int, hi: int) -> np.ndarray:
        """Rows that may hold a mark in the columns ``[lo, hi)``."""
        return (self.lo < hi) & (self.hi > lo) & self.rows

    def __repr__(self) -> str:
        rows = self.rows
        n = int(rows.sum())
        cols = f", columns [{int(self.lo[rows].min())}, {int(self.hi.max())})" if n else ""
        return f"UndefinedSpans({rows.size} rows, {n} with a mark{cols})"


def _mark_undefined(out: np.ndarray, start: int, tables: Any,
                    touched: UndefinedSpans) -> None:
    """Mark a chunk's undefined bytes (:func:`ascend_ref.engine.compact_undefined` tables, row
    addresses) in ``out`` rows ``start...``, positions outside the row dropped; ``touched``
    records, per row of ``out``, where the marks went."""
    b, width = out.shape
    regions, words = tables
    for lo, nbytes, when in regions:
        lo, nbytes, when = np.asarray(lo), np.asarray(nbytes), np.asarray(when)
        n = min(lo.shape[0], b - start)
        lo = lo[:n].astype(np.int64).reshape(n, -1)
        hi = lo + nbytes[:n].astype(np.int64).reshape(n, -1)
        when = np.broadcast_to(when[:n].reshape(n, -1), lo.shape)
        rows = np.broadcast_to(np.arange(n).reshape(n, 1), lo.shape)
        lo, hi = np.clip(lo, 0, width), np.clip(hi, 0, width)
        some = when & (hi > lo)
        batch_prep.mark_spans(out, rows[some] + start, lo[some], hi[some])
        touched.add(start, lo, hi, some)
    for size, addr, when in batch_prep.word_tables(words):
        addr, when = np.asarray(addr), np.asarray(when)
        n = min(addr.shape[0], b - start)
        if not when[:n].any():           # nothing undefined: no int64 address table
            continue
        addr, when = batch_prep.word_bytes(addr[:n], when[:n], size)
        rows = np.broadcast_to(np.arange(start, start + n).reshape((n,) + (1,) * (addr.ndim - 1)),
                               addr.shape)
        keep = when & (addr >= 0) & (addr < width)
        out[rows[keep], addr[keep]] = True
        touched.add(start, addr.reshape(n, -1), addr.reshape(n, -1) + 1, keep.reshape(n, -1))
