"""Look at a call: which UB bytes it reads and writes, and how a sum was rounded.

Two views, computed from the tables and functions the kernels themselves use (the read table
of :mod:`ascend_ref.addressing`, the lane bits of :mod:`ascend_ref.mask`, each instruction's
``effects`` and :func:`ascend_ref.numerics.add`), never from a second address formula:

* :func:`access_map` — for every repeat and lane, the byte it reads (masked lanes kept and
  marked), every word the call writes (per repeat and field), the bytes the call leaves
  undefined, words read more than once and words both read and written.
* :func:`rounding_tree` — the pairwise tree of one sum replayed add by add on raw bits: each
  node's inputs, exact sum, rounded value, and whether a tie, an overflow or saturation
  decided it.

Both print as text (``str(...)``; the command ``ascend-ref explain ...`` lives in
:mod:`ascend_ref.explain_cli`); :mod:`ascend_ref.viz` draws
them with matplotlib. A call is described by a :class:`~ascend_ref.case.Case`;
:func:`make_case` builds one with tensors placed and data filled.

>>> from ascend_ref import explain
>>> c = explain.make_case("whole_reduce_min", chip="atlas_a2", mask=[0x5555555555555555, 0],
...                       repeat=2, src_blk_stride=2, src_rep_stride=16)
>>> m = explain.access_map(c)
>>> m.reads[0, :3].tolist(), m.active[0, :3].tolist(), m.reads[0, 16].item()
([0, 2, 4], [True, False, True], 64)
>>> t = explain.rounding_tree([60000.0, 60000.0, -30000.0, 100.0], saturate=True)
>>> float(t.result), t.root.saturated, t.root.tie
(35584.0, False, True)

The module is also callable for backward compatibility: ``ascend_ref.explain(code)`` names a
batched status code (:func:`ascend_ref.constraints.explain`).
"""

from __future__ import annotations

import functools
import sys
import types
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from . import addressing, mask as masks, numerics
from . import registry
from .argtypes import ChipLike
from .batch_args import flag, is_int
from .case import JAX, Case
from .chips import ChipProfile, chip as get_chip
from .constraints import Code, ConstraintError
from .constraints import explain as explain_code
from .engine import Instruction, Spec, arithmetic, source_reads
from .params import Params
from .enums import ReduceOrder, ReduceType
from .ub import _converted, dtype_name, itemsize


BLOCK = 32
REPEAT_BYTES = 256



# ------------------------------------------------------------------ building a call ---------

def _count_arg(api: str, name: str, v: Any, low: int = 0) -> int:
    """``v``, an int >= ``low`` (a count of rows, repeats, levels); BAD_ARGUMENT naming
    ``api`` / ``name`` otherwise (None or "x" were TypeErrors from a comparison)."""
    if not is_int(v) or v < low:
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=name, value=v,
                              allowed=f"an int >= {low}")
    return int(v)


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def _default_chip(api: str) -> str:
    from .chips import chips

    for c in ("atlas_a2", "atlas_training", *chips()):
        if get_chip(c).dtypes(api):
            return c
    raise ValueError(f"no product supports {api}")


def _make_case_args(ins: registry.Instruction, given: dict, chip: str) -> None:
    """BAD_ARGUMENT for an argument of :func:`make_case` that cannot make a call of ``ins``:
    an option or saturation mode it does not have, an unknown data kind, a count that is no
    int, a tensor that is no ``(addr, size)`` pair of ints."""
    from .fuzz.generate import DATA_KINDS

    def bad(param: str, allowed: str) -> ConstraintError:
        return ConstraintError(Code.BAD_ARGUMENT, api="make_case", param=param,
                               value=given[param], allowed=allowed)

    if given["option"] is not None and ins.option is None:
        raise bad("option", f"None: {ins.name} takes no option")
    if given["option"] is not None:            # ORDER_UNSUPPORTED etc., as the call says
        ins.canonical_option(given["option"], chip=chip)
    if given["saturate"] is not None and not ins.saturating:
        raise bad("saturate", f"None: {ins.name} has no saturation mode")
    if isinstance(given["data"], str) and given["data"] not in DATA_KINDS:
        raise bad("data", f"values, a callable, None (random) or a data kind of {DATA_KINDS}")
    for k in ("repeat", "src_blk_stride", "src_rep_stride", "dst_rep_stride", "seed"):
        if not is_int(given[k]) or (k == "seed" and given[k] < 0):
            raise bad(k, "an int >= 0" if k == "seed" else "an int")
    if given["work_tensor"] is not None and "work_tensor" not in ins.operands:
        raise bad("work_tensor", f"None: {ins.name} has no work tensor")
    for k in ("src", "dst", "work_tensor"):
        t = given[k]
        if t is not None and not (isinstance(t, (tuple, list)) and len(t) == 2
                                  and all(is_int(v) for v in t)):
            raise bad(k, "None (placed for you) or (addr, size_in_elements), two ints")


def _profile(chip: Any, api: str) -> Any:
    """The profile of ``chip`` (a product id or a profile); CHIP_UNKNOWN naming ``api``
    for anything else (``[]`` or ``""`` is no product, not the default one)."""
    try:
        return get_chip(chip)
    except ConstraintError as e:
        raise ConstraintError(Code.CHIP_UNKNOWN, api=api, param="chip", value=chip,
                              allowed=e.allowed) from None


def _data_values(values: Any, dtype: str) -> np.ndarray:
    """``make_case``'s ``data`` values as ``dtype`` by :func:`ascend_ref.ub.store`'s rule
    (whole numbers in range for an integer type, no finite value becoming an infinity);
    BAD_ARGUMENT naming ``data`` otherwise (1e10 as int16 was 0, 70000. as half inf).
    Python ints of an 8-byte type are taken exactly (numpy would read them as float64)."""
    if np.dtype(dtype).itemsize == 8 and isinstance(values, (list, tuple)) and values \
            and all(is_int(v) for v in values):
        info = np.iinfo(dtype)
        out = [int(v) for v in values if not info.min <= v <= info.max]
        if out:
            raise ConstraintError(Code.BAD_ARGUMENT, api="make_case", param="data",
                                  value=out[0], allowed=f"numbers {dtype} holds (each in "
                                                        f"[{info.min}, {info.max}])")
        return np.array([int(v) for v in values], dtype)
    try:
        return _converted(values, dtype)
    except ConstraintError as e:
        raise ConstraintError(Code.BAD_ARGUMENT, api="make_case", param="data", value=e.value,
                              allowed=e.allowed) from None


def make_case(api: str, *, chip: Optional[str] = None, dtype: str = "float16",
              mask: Any = None, repeat: int = 1, src_blk_stride: int = 1,
              src_rep_stride: int = 8, dst_rep_stride: int = 1, option: Any = None,
              saturate: Optional[bool] = None, data: Optional[ArrayLike] = None, seed: int = 0,
              src: Optional[tuple] = None,
              dst: Optional[tuple] = None, work_tensor: Optional[tuple] = None) -> Case:
    """A complete call with tensors placed and the source filled, ready to look at.

    ``mask`` defaults to every lane. ``option``: the order (WholeReduceMin/Max), the reduce
    type (ReduceDataBlock, default ``"SUM"``) or ``cal_index`` (TIK min/max). ``data``: source
    element values (array-like, zero-padded / cut to the source size), a callable ``n ->
    array``, one of the fuzz data kinds (``"ties"``, ``"specials"``, ``"saturating"``, ...) or
    ``None`` for random normal values (``seed``); given values must be numbers ``dtype``
    holds (:func:`ascend_ref.store`'s ``dtype=`` rule, else BAD_ARGUMENT). ``src`` / ``dst`` /
    ``work_tensor``: ``(addr, size_in_elements)`` to place a tensor yourself (a work tensor
    only where the API has one); by default src is at 0 and just covers what the call reads,
    dst and work_tensor follow. ``chip``: a product id (None: the first that has the API).

    Example: two repeats of WholeReduceMin over the values 256, 255, ..., 1 (each repeat's
    smallest is its last lane, 127: 129, then 1):

    >>> import numpy as np
    >>> from ascend_ref import explain
    >>> case = explain.make_case("whole_reduce_min", repeat=2,
    ...                          data=lambda n: np.arange(n, 0, -1))
    >>> case.tensors                   # (address, elements): src covers both repeats' reads
    {'src': (0, 256), 'dst': (512, 16)}
    >>> case
    Case(api='whole_reduce_min', chip='atlas_a2', dtype='float16',
         option='ORDER_VALUE_INDEX', mask=128, params={'repeat': 2, 'dst_rep_stride': 1,
         'src_blk_stride': 1, 'src_rep_stride': 8}, tensors={'src': (0, 256),
         'dst': (512, 16)}, ub=<uint8[576]>, saturate=None,
         tags={'made_by': 'explain.make_case'})
    """
    from .fuzz.generate import fill_ub

    ins = registry.lookup(api, api="make_case")
    if chip is None:
        chip = _default_chip(api)
    else:                          # [] or "" was the default product: CHIP_UNKNOWN
        _profile(chip, "make_case")
    _make_case_args(ins, dict(repeat=repeat, src_blk_stride=src_blk_stride,
                              src_rep_stride=src_rep_stride, dst_rep_stride=dst_rep_stride,
                              option=option, saturate=saturate, data=data, seed=seed, src=src,
                              dst=dst, work_tensor=work_tensor), chip)
    dtype = dtype_name(dtype)
    s = itemsize(dtype)
    lanes = REPEAT_BYTES // s
    if mask is None:
        mask = lanes
    if option is None and ins.option is not None:
        option = ins.option.example()
    if isinstance(option, (ReduceOrder, ReduceType)):
        option = option.value
    given = {"repeat": repeat, "dst_rep_stride": dst_rep_stride,
             "src_blk_stride": src_blk_stride, "src_rep_stride": src_rep_stride}
    params = {k: given[k] for k in ins.params}
    # counter mode (a CounterMask): the count decides the repeats the tensors must hold
    geo = masks.counter_repeats(int(mask.count), lanes) if isinstance(mask, masks.CounterMask) \
        else repeat
    if src is None:         # every byte a call with any mask may read
        foot = ins.src_footprint(geo, src_rep_stride, src_blk_stride, dtype)
        src = (0, _round_up(max(0, foot), BLOCK) // s)   # a negative stride: the call says so
    cursor = _round_up(src[0] + src[1] * s, BLOCK)
    tensors = {"src": tuple(src)}
    if dst is None:
        nbytes = max(0, ins.dst_extent(geo, dtype, option, dst_rep_stride))
        ds = itemsize(ins.tensor_dtype("dst", dtype))     # dst may be wider (950 int sums)
        dst = (cursor, _round_up(nbytes, BLOCK) // ds)
    tensors["dst"] = tuple(dst)
    cursor = max(cursor, _round_up(dst[0] + dst[1] * itemsize(ins.tensor_dtype("dst", dtype)),
                                   BLOCK))
    if "work_tensor" in ins.operands:
        if work_tensor is None:
            need = ins.work_elements(max(repeat, 1), option, dtype)
            work_tensor = (cursor, _round_up(need * s, BLOCK) // s)
        tensors["work_tensor"] = tuple(work_tensor)
        cursor = max(cursor, _round_up(work_tensor[0] + work_tensor[1] * s, BLOCK))
    # a call reaching past the product's UB is UB_BOUNDS whatever the array's length (the
    # rules judge against the smaller of the two), so the array stops there (a repeat of
    # 2**40 asked for 260 TiB), and a negative extent gives the smallest array
    nbytes = max(64, min(_round_up(cursor, 64), _round_up(get_chip(chip).ub_bytes, 64)))
    n_src = max(0, min(src[1], (nbytes - src[0]) // s)) if 0 <= src[0] < nbytes else 0
    if isinstance(data, str):
        ub = fill_ub(nbytes, dtype, data, seed)
    else:
        ub = np.zeros(nbytes, np.uint8)
        if data is None:
            vals = np.random.default_rng(seed).standard_normal(n_src) * 4
            if not dtype.startswith("float"):
                vals = np.round(vals * 100)
        else:               # numbers the dtype holds, as store(dtype=) takes them
            vals = _data_values(data(n_src) if callable(data) else data, dtype)
        buf = np.zeros(n_src, dtype)
        buf[:min(n_src, vals.size)] = vals.reshape(-1)[:n_src].astype(dtype)
        ub[src[0]:src[0] + n_src * s] = buf.view(np.uint8)
    return Case(api, chip, dtype, option, mask, params, tensors, ub, saturate,
                {"made_by": "explain.make_case"})


# ------------------------------------------------------------------ the instruction's plan --

def _fields(case: Case, tensor: str, k: int) -> list:
    """Names of the words a write of ``tensor`` holds per row (the declared layout; at most
    ``k``: a kernel may compile more words than a slot of this call's option holds)."""
    ins = case.instruction
    lay = ins.layout(case.dtype, ins.canonical_option(case.option))
    names = [f.name for f in (lay.work if tensor == "work_tensor" else lay.dst)] or ["value"]
    return names[:k]


@dataclass
class WriteTable:
    """Words one write of the call puts in a tensor: ``addr`` ``(rows, fields)``.

    ``per_repeat`` — row r is repeat r's slot (else one row of final results); ``issued`` —
    the hardware writes the word; ``final`` — it survives in the UB after the call.
    """

    tensor: str
    fields: list
    addr: np.ndarray
    bits: np.ndarray
    issued: np.ndarray
    final: np.ndarray
    per_repeat: bool


@dataclass
class AccessMap:
    """Every byte one call touches (see :func:`access_map`). Arrays are numpy.

    ``reads[r, i]`` — byte address lane ``i`` of repeat ``r`` reads (``r < max(repeat, 1)``);
    ``active[r, i]`` — the lane takes part (mask bit and ``r < repeat``); ``bits[r, i]`` —
    the element there (0 where outside the UB); ``writes`` — :class:`WriteTable` s;
    ``written`` / ``undefined`` — the byte masks of the real call (``None`` if it was
    rejected: ``error`` holds the message). ``repeat`` — the repeats the call runs (the
    level-2 count form: ``ceil(count / L)``, the last one partly active).
    """

    case: Case
    dtype: str
    size: int
    lanes: int
    epb: int
    repeat: int
    mask_words: np.ndarray          # uint32[4] lane words (lanes 0-31 first)
    reads: np.ndarray
    active: np.ndarray
    bits: np.ndarray
    writes: list
    tensors: dict                   # name -> (addr, nbytes)
    ub_after: Optional[np.ndarray]
    written: Optional[np.ndarray]
    undefined: Optional[np.ndarray]
    error: Optional[str]
    winners: Optional[np.ndarray] = None   # min/max: winning lane per repeat
    overall: Optional[tuple] = None         # TIK min/max: (repeat, lane) of the result
    notes: list = field(default_factory=list)

    # -------- per-word summaries (word = one element of ``size`` bytes) --------

    def window(self) -> tuple:
        """``[lo, hi)`` bytes worth showing: every tensor and every access, 256-B lines."""
        los = [a for a, _ in self.tensors.values()] + [int(self.reads.min())]
        his = [a + n for a, n in self.tensors.values()] + [int(self.reads.max()) + self.size]
        for w in self.writes:
            los.append(int(w.addr.min()))
            his.append(int(w.addr.max()) + self.size)
        # nothing past the UB and a few lines is worth a cell: a tensor or stride of 2**40
        # bytes (an error the call reports) would ask for terabytes of them
        end = _round_up(max(int(self.case.ub.size), 1), REPEAT_BYTES) + 4 * REPEAT_BYTES
        lo = min(max(min(los), 0) // REPEAT_BYTES * REPEAT_BYTES, end - REPEAT_BYTES)
        hi = max(min(_round_up(max(his), REPEAT_BYTES), end), lo + REPEAT_BYTES)
        return lo, hi

    def cells(self) -> dict:
        """Per word of the window (``size`` bytes each), numpy arrays:

        ``addr`` byte address; ``reads`` how many active lanes read it; ``reader`` the first
        repeat that reads it (−1 none); ``lane`` the first lane reading it; ``masked`` covered
        by an inactive lane only; ``writer`` the repeat whose word survives (−1 none, −2 a
        final result that belongs to no single repeat); ``field`` index into :attr:`field_names`
        (−1 none); ``written`` / ``undefined`` from the real call; ``tensor`` index into
        ``list(tensors)`` (−1 none); ``outside`` an access outside its tensor or the UB.
        """
        lo, hi = self.window()
        s = self.size
        n = (hi - lo) // s
        out = {"addr": lo + np.arange(n) * s, "reads": np.zeros(n, int),
               "reader": np.full(n, -1), "lane": np.full(n, -1), "masked": np.zeros(n, bool),
               "writer": np.full(n, -1), "field": np.full(n, -1),
               "written": np.zeros(n, bool), "undefined": np.zeros(n, bool),
               "tensor": np.full(n, -1), "outside": np.zeros(n, bool)}
        names = list(self.tensors)
        for k, (a, nb) in enumerate(self.tensors.values()):
            sel = (out["addr"] >= a) & (out["addr"] < a + nb)
            out["tensor"][sel & (out["tensor"] < 0)] = k
        issued = np.arange(self.reads.shape[0])[:, None] < max(self.repeat, 0)
        word = (self.reads - lo) // s
        ok = (word >= 0) & (word < n)
        r_idx, l_idx = np.nonzero(self.active & ok)
        np.add.at(out["reads"], word[r_idx, l_idx], 1)
        first = np.full(n, np.iinfo(np.int64).max)
        order = r_idx * self.lanes + l_idx
        np.minimum.at(first, word[r_idx, l_idx], order)
        has = first < np.iinfo(np.int64).max
        out["reader"][has] = first[has] // self.lanes
        out["lane"][has] = first[has] % self.lanes
        m_r, m_l = np.nonzero(~self.active & issued & ok)
        out["masked"][word[m_r, m_l]] = True
        out["masked"] &= out["reads"] == 0
        src_lo, src_n = self.tensors.get("src", (0, 0))
        bad = self.active & ((self.reads < src_lo) | (self.reads + s > src_lo + src_n))
        out["outside"][word[bad & ok]] = True
        self.field_names: List[str] = []
        for w in self.writes:
            base = len(self.field_names)
            self.field_names += w.fields
            rows, cols = w.addr.shape
            for r in range(rows):
                for f in range(cols):
                    if not w.issued[r, f]:
                        continue
                    k = (int(w.addr[r, f]) - lo) // s
                    if 0 <= k < n and w.final[r, f]:
                        out["writer"][k] = r if w.per_repeat else -2
                        out["field"][k] = base + f
                    t_lo, t_n = self.tensors.get(w.tensor, (0, 0))
                    if 0 <= k < n and not (t_lo <= w.addr[r, f] < t_lo + t_n):
                        out["outside"][k] = True
        if self.written is not None and self.undefined is not None:
            wb = self.written[lo:hi]
            ub = self.undefined[lo:hi]
            wb = np.pad(wb, (0, hi - lo - wb.size))
            ub = np.pad(ub, (0, hi - lo - ub.size))
            out["written"] = wb.reshape(-1, s).any(1)
            out["undefined"] = ub.reshape(-1, s).any(1)
        else:
            out["written"] = out["writer"] != -1
        out["tensor_names"] = names
        return out

    @property
    def read_count(self) -> np.ndarray:
        """How often each source element (index from the source tensor's start) is read by an
        active lane — the gradient of a plain sum with respect to that element."""
        a, nb = self.tensors["src"]
        cnt = np.zeros(nb // self.size, int)
        idx = (self.reads[self.active] - a) // self.size
        idx = idx[(idx >= 0) & (idx < cnt.size)]
        np.add.at(cnt, idx, 1)
        return cnt

    def value(self, bits: int) -> Any:
        return _as_value(bits, self.dtype)

    # -------- text --------

    def describe(self) -> str:
        c = self.case
        return _describe_call(c, self.mask_words, self.lanes)

    def __repr__(self) -> str:
        """One line: the call, its active lanes and written words, ok or the rule it broke
        (``print(amap)`` or a notebook cell shows the whole map)."""
        words = sum(int((w.issued & w.final).sum()) for w in self.writes)
        status = "ok" if self.error is None else f"error={self.error!r}"
        call = " · ".join(line.strip() for line in self.describe().splitlines())
        return (f"<AccessMap {call}: {int(self.active.sum())} active lanes, "
                f"{words} words written, {status}>")

    def text(self, *, max_repeats: int = 4, ub_rows: int = 48) -> str:
        """The map for a terminal: per repeat and block, the bytes read and the active lanes;
        the words written; then the UB, one character per element."""
        max_repeats = _count_arg("AccessMap.text", "max_repeats", max_repeats)
        ub_rows = _count_arg("AccessMap.text", "ub_rows", ub_rows)
        out = [self.describe()]
        out.append("  tensors: " + "  ".join(f"{k} @{a} [{nb} B]" for k, (a, nb)
                                             in self.tensors.items()))
        out.append("  status: " + ("ok" if self.error is None else f"REJECTED — {self.error}"))
        spr = self.case.instruction.spr
        out.append("  registers: " + ("none written (the call is rejected)"
                                      if self.error is not None and spr is not None else
                                      f"sets {spr.doc}" if spr is not None else
                                      "passes the reduce special registers through"))
        out += [f"  note: {n}" for n in self.notes]
        out.append("")
        out.append(f"Lanes -> bytes (block = {self.epb} lanes of {self.size} B; "
                   f"'#' active lane, '.' masked lane)")
        nrep = min(max(self.repeat, 0), self.reads.shape[0])   # a rejected repeat past the
        if self.repeat > nrep:                                  # range: the rows that exist
            given = self.case.params.get("repeat", self.repeat)   # not int32's stand-in
            out.append(f"  (repeat {given} is past the table: {nrep} repeats listed)")
        shown = list(range(min(nrep, max_repeats)))
        if nrep > max_repeats:
            shown.append(nrep - 1)
        for r in shown:
            if r == nrep - 1 and r > max_repeats:
                out.append(f"  ... {nrep - max_repeats - 1} more repeats ...")
            start = int(self.reads[r, 0])
            out.append(f"  repeat {r}  (starts at byte {start})")
            for b in range(self.lanes // self.epb):
                sl = slice(b * self.epb, (b + 1) * self.epb)
                a = int(self.reads[r, sl][0])
                act = "".join("#" if x else "." for x in self.active[r, sl])
                out.append(f"    block {b}  bytes [{a:>6}, {a + BLOCK:>6})  lanes "
                           f"{b * self.epb:>3}-{(b + 1) * self.epb - 1:<3}  {act}")
            out += ["    " + x for x in self._result_lines(r)]
        if c_final := self._final_lines():
            out += c_final
        out.append("")
        out += self.ub_text(max_rows=ub_rows)
        return "\n".join(out)

    def _result_lines(self, r: int) -> list:
        lines = []
        if self.winners is not None and r < self.winners.size and self.active[r].any():
            lane = int(self.winners[r])
            kind = "min" if self.case.api.endswith("min") else "max"
            lines.append(f"-> {kind} = {str(self.value(self.bits[r, lane]))} at lane {lane} "
                         f"(block {lane // self.epb}, byte {int(self.reads[r, lane])})")
        for w in self.writes:
            if not w.per_repeat or r >= w.addr.shape[0] or not w.issued[r].any():
                continue
            addrs = w.addr[r][w.issued[r]]
            wdt = self.case.instruction.tensor_dtype(w.tensor, self.dtype)   # dst may be wider
            where = f"{w.tensor} bytes [{int(addrs.min())}, {int(addrs.max()) + itemsize(wdt)})"
            later = "" if w.final[r][w.issued[r]].all() or self.error else \
                "  (overwritten by a later repeat)"
            verb = "would write" if self.error else "writes"   # a rejected call writes nothing
            if len(w.fields) > 2:
                vals = [_word_text(n, int(b), wdt) if i else "-" for n, b, i in
                        zip(w.fields, w.bits[r], w.issued[r])]
                lines.append(f"{verb} {where}: [{', '.join(vals)}]{later}"
                             + ("  ('-': no active lane in its group, not written)"
                                if not w.issued[r].all() else ""))
            else:
                parts = [f"{n}={_word_text(n, int(b), wdt)}" for n, b, i in
                         zip(w.fields, w.bits[r], w.issued[r]) if i]
                lines.append(f"{verb} {where}: " + ", ".join(parts) + later)
        return lines

    def _final_lines(self) -> list:
        lines = []
        for w in self.writes:
            if w.per_repeat:
                continue
            parts = [f"{name}={_word_text(name, int(w.bits[0, f]), self.dtype)} "
                     f"@{int(w.addr[0, f])}" for f, name in enumerate(w.fields)]
            lines.append(f"  result -> {w.tensor}: " + ", ".join(parts))
        if self.overall is not None:
            r, lane = self.overall
            lines.append(f"  winner: repeat {r}, lane {lane} (byte {int(self.reads[r, lane])})")
        return lines

    def ub_text(self, *, max_rows: int = 48) -> list:
        """The UB as text: one character per element, 128 bytes (4 DataBlocks) per row."""
        max_rows = _count_arg("AccessMap.ub_text", "max_rows", max_rows)
        cells = self.cells()
        s = self.size
        per_row = 128 // s
        chars = np.full(cells["addr"].size, ".", dtype="<U1")
        in_tensor = cells["tensor"] >= 0
        chars[in_tensor] = ","
        chars[cells["masked"]] = "-"
        rd = cells["reads"] > 0
        rep = cells["reader"]
        chars[rd] = [_rep_char(int(x)) for x in rep[rd]]
        chars[cells["reads"] > 1] = "*"
        wr = cells["written"]
        chars[wr] = "W"
        chars[wr & rd] = "X"
        chars[cells["undefined"]] = "?"
        chars[cells["outside"]] = "!"
        rows = chars.reshape(-1, per_row)
        addrs = cells["addr"].reshape(-1, per_row)[:, 0]
        busy = np.array([any(ch not in ".," for ch in row) for row in rows])
        out = [f"UB map ({s}-byte elements; 4 DataBlocks per row)"]
        hdr = " ".join(f"{b * 32:<{self.epb}}" for b in range(4))
        out.append(f"  {'byte':>7}  {hdr}")
        last = -1
        n_rows = 0
        for k, row in enumerate(rows):
            if not busy[k] and not _near(busy, k):
                continue
            if last >= 0 and k > last + 1:
                out.append(f"  {'':>7}  ... {k - last - 1} row(s) untouched ...")
            if n_rows >= max_rows:
                out.append(f"  {'':>7}  ... (cut at {max_rows} rows)")
                break
            body = " ".join("".join(row[b * self.epb:(b + 1) * self.epb]) for b in range(4))
            out.append(f"  {int(addrs[k]):>7}  {body}")
            last = k
            n_rows += 1
        out.append("  legend: 0-9a-z read by that repeat (active lane) · '*' read more than "
                   "once · '-' masked lane · 'W' written · 'X' read then written · "
                   "'?' undefined after the call · '!' outside its tensor · ',' declared, "
                   "untouched · '.' not declared")
        return out

    def __str__(self) -> str:
        return self.text()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython
        p.text(self.text())


def _near(busy: np.ndarray, k: int) -> bool:
    """Keep one untouched row between busy rows (shows a gap) but not long empty runs."""
    return 0 < k < busy.size - 1 and busy[k - 1] and busy[k + 1]


def _rep_char(r: int) -> str:
    return "0123456789abcdefghijklmnopqrstuvwxyz"[r] if r < 36 else "#"


def _as_value(bits: int, dtype: str) -> Any:          # a numpy scalar of ``dtype``
    """The element ``bits`` of ``dtype`` as a numpy scalar (prints at its own precision)."""
    dtype = dtype_name(dtype)
    ut = np.dtype(f"uint{8 * itemsize(dtype)}")
    return np.array(int(bits), ut).view(dtype)[()]


def _word_text(name: str, bits: int, dtype: str) -> str:
    if name in ("index", "lane", "zero"):
        return str(bits)
    return str(_as_value(bits, dtype))


def _mask_text(mask: Any, lanes: int, words: np.ndarray, tik: bool = False) -> str:
    if isinstance(mask, masks.CounterMask):
        c = int(mask.count)
        r = masks.counter_repeats(c, lanes)
        last = c - (r - 1) * lanes if r else 0
        return (f"counter mask {c} (SetMaskCount: {r} repeat(s) of {lanes} lanes, the last "
                f"on {last}; repeat_time ignored)")
    n = int(np.unpackbits(np.asarray(words, np.uint32).view(np.uint8)).sum())
    if isinstance(mask, (int, np.integer)):
        m = int(mask)
        which = "no lane" if m <= 0 else "lane 0" if m == 1 else f"lanes 0-{m - 1}"
        return f"mask {m} (continuous: {which})"
    order = " [mask_h, mask_l]" if tik else ""
    return f"mask bits{order} {[hex(int(w)) for w in mask]} ({n} of {lanes} lanes)"


def _describe_call(c: Case, words: np.ndarray, lanes: int) -> str:
    opt = "" if c.option in (None, "") else f" {getattr(c.option, 'value', c.option)}"
    if isinstance(c.instruction.option, registry.FlagOption):
        opt = f" {c.instruction.option.key}" if c.option is True else ""
    p = " · ".join(f"{k} {v}" for k, v in c.params.items())
    sat = "" if c.saturate is None else f" · saturate={c.saturate}"
    mask = _mask_text(c.mask, lanes, words, c.instruction.word_order == 'tik')
    if c.instruction.kernel.count_form:   # no mask: the first count elements, L a repeat
        n = int(c.params["repeat"])
        k, tail = -(-max(n, 0) // lanes), n % lanes
        mask = f"count {n} (the first {n} elements: {k} repeat{'s' * (k != 1)} of {lanes} " \
               f"lanes{f', the last {tail}' if tail and k > 1 else ''}; no mask)"
        p = " · ".join(f"{k} {v}" for k, v in c.params.items() if k != "repeat")
    return f"{c.api}<{c.dtype}>{opt} on {c.chip}\n  {mask}" + (f" · {p}" if p else "") + sat


#: (instruction, spec) -> the tensor of each write, recorded while tracing :func:`_trace`
_WRITE_TENSORS: dict = {}


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _trace(ins: Instruction, spec: Spec, kind: str, p: Params, bits: jax.Array,
           active: jax.Array
           ) -> Tuple[list, Optional[jax.Array], Optional[jax.Array]]:
    """The instruction's effects (its writes) and, for min/max, the winning lane per repeat
    and the winning repeat — compiled once per (instruction, spec)."""
    eff = ins.effects(spec, p, bits, active, arithmetic(numerics.Exact, spec, p))
    _WRITE_TENSORS[(ins, spec)] = [w.tensor for w in eff.writes]
    writes = [(w.addr, w.bits, w.issued, w.final) for w in eff.writes]
    if not kind:
        return writes, None, None
    if spec.size == 8:                      # int64 / uint64: (lo, hi) words
        from .ascendc import _b64

        signed = spec.dtype == "int64"
        idx = _b64.first_extreme(bits, active, kind, signed)
        vals = jnp.take_along_axis(bits, idx[:, None, None], axis=1)[:, 0]
        live = addressing.repeat_valid(p.repeat, bits.shape[0])
        return writes, idx, _b64.first_extreme(vals, live, kind, signed)
    _, idx, _ = numerics.select_extreme(bits, active, kind, spec.dtype)
    vals = jnp.take_along_axis(bits, idx[:, None], axis=-1)[:, 0]
    live = addressing.repeat_valid(p.repeat, bits.shape[0])
    _, best_r, _ = numerics.select_extreme(vals, live, kind, spec.dtype)
    return writes, idx, best_r


def access_map(case: Union[Case, str]) -> AccessMap:
    """The access map of ``case`` (see :class:`AccessMap`), from the kernels' own tables;
    an API name stands for :func:`make_case`'s default call of it (``access_map("vcadd")``).

    The reads and active lanes are the shared source gather
    (:func:`ascend_ref.engine.source_reads`: :func:`ascend_ref.addressing.source_table` over
    the call's checked parameters), the written words the instruction's ``effects`` (the
    function the jit kernel runs), and ``written`` / ``undefined`` the byte masks of the real
    call (``return_info=True``). A call that breaks a rule the kernel checks (the ``traced``
    lines of :func:`constraints`: ranges, strides, alignment, bounds, overlap, work size,
    saturation) is still mapped; ``error`` says which rule. One that fails a host-stage check
    (the ``host`` lines: an unknown product, an API or dtype the product lacks, a mask that
    is no mask of the call -- ``MASK_BITS``, a negative or 65-bit mask or count, counter mode
    where the product has none (``MASK_MODE``) -- or an argument of the wrong type) has no
    checked parameters to map: that :class:`~ascend_ref.constraints.ConstraintError` is
    raised.

    Example (the call of :func:`make_case`'s example): repeat 1 starts 8 blocks (256 bytes)
    after repeat 0, each lane reads one half (2 bytes), every source element is read once,
    and each repeat writes its minimum and that lane's index (ORDER_VALUE_INDEX):

    >>> import numpy as np
    >>> import ascend_ref as ar
    >>> from ascend_ref import explain
    >>> amap = explain.access_map(explain.make_case("whole_reduce_min", repeat=2,
    ...                                             data=lambda n: np.arange(n, 0, -1)))
    >>> amap
    <AccessMap whole_reduce_min<float16> ORDER_VALUE_INDEX on atlas_a2 · mask 128
     (continuous: lanes 0-127) · repeat 2 · dst_rep_stride 1 · src_blk_stride 1 ·
     src_rep_stride 8: 256 active lanes, 4 words written, ok>
    >>> amap.reads[1, :3].tolist(), amap.winners.tolist(), set(amap.read_count.tolist())
    ([256, 258, 260], [127, 127], {1})
    >>> ar.load(amap.ub_after, 512, "float16", 4)[0::2].tolist()     # the two minima
    [129.0, 1.0]
    >>> ar.load(amap.ub_after, 512, "uint16", 4)[1::2].tolist()      # and their lanes
    [127, 127]
    """
    if isinstance(case, str):
        case = make_case(case)
    elif not isinstance(case, Case):            # was an AttributeError (no .prepare)
        raise ConstraintError(Code.BAD_ARGUMENT, api="access_map", param="case",
                              value=type(case).__name__,
                              allowed="a Case (explain.make_case(api, ...)) or an API name")
    prep = case.prepare(info=False)        # the call's own checked parameters, not run
    ins, spec, p = prep.ins, prep.spec, prep.p
    prof = get_chip(case.chip)
    dtype, s, lanes = spec.dtype, spec.size, spec.lanes
    repeat = int(p.repeat)
    if ins.count_form:                     # a count of elements: ceil(count / L) repeats
        repeat = -(-max(repeat, 0) // lanes)
    rows = max(repeat, 1)                  # the table has spec.r_max rows (a compile bucket)
    ub = np.asarray(case.ub, np.uint8)
    reads, lane_mask, active = source_reads(ins, spec, p)      # the shared source gather
    reads_np = np.asarray(reads)
    view = ub[: ub.size // s * s].view(f"uint{8 * s}")
    inside = (reads_np >= 0) & (reads_np + s <= ub.size)
    bits = np.where(inside, view[np.clip(reads_np // s, 0, max(view.size - 1, 0))], 0)
    bits = bits.astype(view.dtype)
    decl = case.instruction
    option = decl.canonical_option(case.option)
    lay = decl.layout(case.dtype, option)
    kind = decl.kind(option) if decl.kind(option) in ("min", "max") and lay.groups == 1 else ""
    # 8-byte elements travel as (lo, hi) uint32 words (no uint64 in a kernel)
    kbits = np.ascontiguousarray(bits).view(np.uint32).reshape(bits.shape + (2,)) \
        if s == 8 else bits
    traced, winners, best_r = _trace(ins, spec, kind, p, jnp.asarray(kbits), active)
    reads_np, bits = reads_np[:rows], bits[:rows]
    act = np.asarray(active)[:rows]

    writes = []
    for tensor, (addr, wbits, issued, final) in zip(_WRITE_TENSORS[(ins, spec)], traced):
        addr = np.asarray(addr)
        if s == 8:                    # 8-byte results are written as (lo, hi) 4-byte words
            w64 = np.asarray(wbits).astype(np.uint64)
            wbits = w64[..., 0::2] | (w64[..., 1::2] << np.uint64(32))
            addr, issued, final = (np.asarray(v)[..., 0::2] for v in (addr, issued, final))
        per_repeat = addr.ndim == 2
        if not per_repeat:
            addr = addr[None, :]
        shape = addr.shape
        fields = _fields(case, tensor, shape[1])
        # rows of the call's repeats; a slot may use fewer words than the kernel compiles
        cut = (slice(0, rows) if per_repeat else slice(None), slice(0, len(fields)))
        writes.append(WriteTable(
            tensor, fields, addr[cut],
            np.broadcast_to(np.asarray(wbits), shape)[cut].copy(),
            np.broadcast_to(np.asarray(issued), shape)[cut].copy(),
            np.broadcast_to(np.asarray(final), shape)[cut].copy(), per_repeat))

    error = written = undefined = ub_after = None
    try:
        out, info = case.call(JAX, return_info=True)
        ub_after = np.asarray(out)
        written, undefined = np.asarray(info.written), np.asarray(info.undefined)
    except ConstraintError as e:
        error = str(e)
        for w in writes:       # nothing of a rejected call reaches the UB
            w.final[:] = False

    overall = None
    if kind:
        winners = np.asarray(winners)[:rows]
        if not lay.per_repeat and repeat > 0 and act.any():      # TIK: one overall result
            overall = (int(best_r), int(winners[int(best_r)]))
    else:
        winners = None
    notes = []
    if bool(np.asarray(p.mask_counter)):
        notes.append(f"counter mode: {repeat} repeat(s) from the count (repeat_time "
                     f"{case.params.get('repeat')} ignored), the last repeat on "
                     f"{int(act[-1].sum()) if repeat else 0} lane(s)")
        facts = [f"{f.name} = {prof.fact(f.name)!r}" for f in case.instruction.profile_fields
                 if "counter" in f.name and f.name in prof.facts and f.name != "counter_mode"]
        if facts:                  # the product's counter-mode rules (SEMANTICS §Q, §R)
            notes.append(f"counter mode on {prof.id}: " + ", ".join(facts))
    if repeat == 0 or not np.asarray(lane_mask).any():
        notes.append(f"zero repeat / zero mask: the product's rule is "
                     f"{prof.zero_mask if repeat else prof.zero_repeat!r}")
    return AccessMap(case, dtype, s, lanes, BLOCK // s, repeat, np.asarray(p.mask),
                     reads_np, act, bits, writes,
                     {k: (int(a), int(n) * s) for k, (a, n) in case.tensors.items()},
                     ub_after, written, undefined, error, winners, overall, notes)


# ------------------------------------------------------------------ rounding trees ----------

@dataclass
class Node:
    """One value of a sum tree. Leaves have ``level`` 0; node ``(l, k)`` adds children
    ``(l-1, 2k)`` and ``(l-1, 2k+1)`` and covers leaves ``[lo, hi)``.

    ``exact`` — the exact sum of the two (already rounded) inputs, ``None`` if one is not
    finite; ``ieee`` — the plain IEEE result bits (before saturation); ``bits`` — the stored
    result. Flags: ``inexact`` (rounding changed the value), ``tie`` (the exact sum lay half way
    between two neighbours: round-to-even decided), ``overflow`` (finite inputs, infinite IEEE
    result), ``saturated`` (saturation replaced inf / NaN), ``nan``.

    In an integer tree (:attr:`RoundingTree.integer`) values are Python ints of the sum type,
    ``ieee`` is the exact sum wrapped modulo 2^bits, ``overflow`` says the exact sum left the
    type, ``saturated`` that it was clamped instead, ``inexact`` that either changed it.
    """

    level: int
    index: int
    lo: int
    hi: int
    bits: int
    value: float
    label: str = ""
    active: bool = True
    a: Optional[float] = None
    b: Optional[float] = None
    exact: Optional[Fraction] = None
    ieee: Optional[int] = None
    inexact: bool = False
    tie: bool = False
    overflow: bool = False
    saturated: bool = False
    nan: bool = False

    @property
    def error(self) -> Optional[float]:
        """``rounded − exact`` of this add (0 for leaves; ``None`` if not finite)."""
        if self.level == 0:
            return 0.0
        if self.exact is None or not _finite(self.value):
            return None
        return float(Fraction(self.value) - self.exact)

    def events(self) -> list:
        ev = []
        for event in ("nan", "overflow", "saturated", "tie"):
            if getattr(self, event):
                ev.append(event)
        if self.inexact and not (self.tie or self.overflow or self.saturated):
            ev.append("rounded")
        return ev


@dataclass
class RoundingTree:
    """A replayed sum tree (:func:`rounding_tree`): ``levels[0]`` leaves … ``levels[-1]`` root."""

    dtype: str
    saturate: bool
    levels: list
    title: str = ""

    @property
    def root(self) -> Node:
        return self.levels[-1][0]

    @property
    def integer(self) -> bool:
        """An integer sum: exact adds, each wrapped modulo 2^bits of :attr:`dtype` (the sum
        type) or, with :attr:`saturate`, clamped to its range."""
        return np.dtype(self.dtype).kind in "iu"

    @property
    def result(self) -> np.ndarray:
        return np.array(self.root.bits, f"uint{8 * itemsize(self.dtype)}").view(self.dtype)

    @property
    def leaves(self) -> list:
        return self.levels[0]

    @property
    def exact_sum(self) -> Optional[Fraction]:
        """The exact sum of the leaves (``None`` if a leaf is inf / NaN)."""
        vals = [n.value for n in self.leaves]
        if self.integer:
            return Fraction(sum(int(v) for v in vals))
        if not all(np.isfinite(vals)):
            return None
        return sum((Fraction(v) for v in vals), Fraction(0))

    @property
    def error(self) -> Optional[float]:
        """Tree result − exact sum of the leaves (``None`` if either is not finite)."""
        e = self.exact_sum
        if self.integer:
            return None if e is None else float(Fraction(int(self.result)) - e)
        if e is None or not np.isfinite(float(self.result)):
            return None
        return float(Fraction(float(self.result)) - e)

    def ulp(self, value: float) -> float:
        """Spacing of ``dtype`` at ``value`` (the ulp a rounding error is measured in; 1 for
        an integer sum)."""
        if self.integer:
            return 1.0
        ft = np.dtype(self.dtype).type
        v = abs(ft(value))
        if not np.isfinite(v):
            return float("nan")
        return float(np.nextafter(v, ft(np.inf)) - v)

    def __repr__(self) -> str:
        """One line: dtype, leaves, the result (value and bits), the exact sum (``print(tree)``
        or a notebook cell shows the tree)."""
        bits = 8 * itemsize(self.dtype)
        exact = self.exact_sum
        title = f"{self.title!r}, " if self.title else ""
        return (f"<RoundingTree {title}{self.dtype}, {len(self.leaves)} leaves, result "
                f"{_fmt(self.result[()])} (0x{self.root.bits:0{bits // 4}X}), "
                + (f"exact sum {_fmt_frac(exact)}, " if exact is not None else "")
                + f"saturate={self.saturate}>")

    def nodes(self) -> Iterator[Node]:
        for lvl in self.levels[1:]:
            yield from lvl

    def summary(self) -> list:
        """Per level: adds, inexact, ties, overflows, saturations, NaNs, sum of errors."""
        rows = []
        for lvl, nodes in enumerate(self.levels[1:], start=1):
            errs = [n.error for n in nodes if n.error is not None]
            rows.append({"level": lvl, "adds": len(nodes),
                         "inexact": sum(n.inexact for n in nodes),
                         "ties": sum(n.tie for n in nodes),
                         "overflow": sum(n.overflow for n in nodes),
                         "saturated": sum(n.saturated for n in nodes),
                         "nan": sum(n.nan for n in nodes), "error": float(sum(errs))})
        return rows

    def text(self, *, depth: int = 4, full: bool = False) -> str:
        """The tree as indented text. Subtrees below ``depth`` levels from the root collapse
        to one line (unless they hold an overflow, a saturation or a NaN), and so do subtrees
        whose adds were all exact; ``full=True`` prints every add."""
        depth = _count_arg("RoundingTree.text", "depth", depth)
        full = flag("RoundingTree.text", "full", full)
        exact = self.exact_sum
        bits = 8 * itemsize(self.dtype)
        mode = (f" · adds clamped to {self.dtype}" if self.saturate else
                f" · adds modulo 2^{bits}") if self.integer else \
            f" · saturate={'on' if self.saturate else 'off'}"
        out = [self.title or f"rounding tree <{self.dtype}>",
               f"  result {_fmt(self.result[()])} (0x{self.root.bits:0{bits // 4}X})"
               + (f" · exact sum {_fmt_frac(exact)} · error {_fmt(self.error)}"
                  f" ({self.error / self.ulp(float(self.result)):+.3g} ulp of the result)"
                  if exact is not None and self.error is not None else "") + mode,
               "  level  adds  inexact  ties  overflow  saturated  nan   sum of errors"]
        for row in self.summary():
            out.append(f"  {row['level']:>5}  {row['adds']:>4}  {row['inexact']:>7}  "
                       f"{row['ties']:>4}  {row['overflow']:>8}  {row['saturated']:>9}  "
                       f"{row['nan']:>3}   {_fmt(row['error'])}")
        out.append("")
        top = len(self.levels) - 1
        self._node_text(top, 0, "", "", out, top - (top if full else depth))
        return "\n".join(out)

    def _node_text(self, lvl: int, k: int, prefix: str, child_prefix: str, out: List[str],
                   stop: int) -> None:
        n = self.levels[lvl][k]
        if lvl == 0:
            tag = "" if n.active else "  (masked: +0)"
            out.append(f"{prefix}{_fmt(n.value)}  [{n.label}]{tag}")
            return
        sub = [m for L in range(1, lvl + 1) for m in
               self.levels[L][k << (lvl - L):(k + 1) << (lvl - L)]]
        quiet = not any(m.events() for m in sub)
        rare = any(m.overflow or m.saturated or m.nan for m in sub)
        if (lvl <= stop and not rare) or (quiet and lvl > 1):
            stats = _sub_stats(sub)
            out.append(f"{prefix}{_fmt(n.value)}  [{self.leaves[n.lo].label} .. "
                       f"{self.leaves[n.hi - 1].label}: {stats}]")
            return
        out.append(prefix + _node_line(n, self.dtype if self.integer else ""))
        for j, last in ((2 * k, False), (2 * k + 1, True)):
            self._node_text(lvl - 1, j, child_prefix + ("└─ " if last else "├─ "),
                            child_prefix + ("   " if last else "│  "), out, stop)

    def __str__(self) -> str:
        return self.text()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())


def constraints(api: str, option: Any = None, dtype: str = "float16") -> str:
    """A call's constraint list as text, one line per constraint, in the order the call
    checks them (:meth:`ascend_ref.registry.Instruction.rules`): host-stage checks first
    (the first that fails raises), then the kernel's traced rules by code (the lowest
    failing code is reported).

    >>> print(constraints("vec_reduce_add", dtype="float32").splitlines()[-2])
    traced  SATURATE_DTYPE     saturate            saturate False for float32 (half only)
    """
    ins = registry.lookup(api, api="explain")
    option = ins.canonical_option(option)
    head = f"{ins.name} ({dtype}" + (f", {ins.option.key}={ins.option_label(option)}"
                                     if ins.option is not None else "") + ")"
    lines = [head] + [str(c) for c in ins.rules(option, dtype)]
    for name in registry.where(lambda i: i.overload_of == ins.name):   # its other overload
        other = registry.lookup(name)
        opt = other.canonical_option(option if other.option is not None else None)
        lines += ["", f"{other.name} ({dtype}" + (
            f", {other.option.key}={other.option_label(opt)}" if other.option is not None
            else "") + f"): the other overload of {ins.name} ({other.summary})"]
        lines += [str(c) for c in other.rules(opt, dtype)]
    return "\n".join(lines)


def _sub_stats(sub: list) -> str:
    n = len(sub)
    parts = [f"{n} add{'s' if n > 1 else ''}"]
    for event in ("inexact", "tie", "overflow", "saturated", "nan"):
        c = sum(getattr(m, event) for m in sub)
        if c:
            parts.append(f"{c} {event}" + ("s" if event == "tie" and c > 1 else ""))
    if len(parts) == 1:
        parts.append("all exact")
    return ", ".join(parts)


def _node_line(n: Node, integer: str = "") -> str:
    """One add as text; ``integer``: the sum type of an integer tree (else "")."""
    ex = "" if n.exact is None else f"exact {_fmt_frac(n.exact)}"
    ev = n.events()
    how = []
    if integer and n.overflow:
        how.append(f"overflow -> clamped to {integer}" if n.saturated else
                   f"overflow -> wrapped modulo 2^{8 * itemsize(integer)}")
    elif n.overflow:
        how.append("overflow" + (" -> saturated to ±65504" if n.saturated else " -> inf"))
    elif n.saturated:
        how.append("NaN -> saturated to 0")
    if n.tie:
        how.append("tie -> even")
    elif "rounded" in ev and not (n.overflow or n.saturated):
        how.append(f"rounded, error {_fmt(n.error)}")
    if n.nan and not n.saturated:
        how.append("NaN")
    tail = f"  [{ex}{'; ' if ex and how else ''}{'; '.join(how)}]" if ex or how else ""
    return f"{_fmt(n.value)} = {_fmt(n.a)} + {_fmt(n.b)}{tail}"


def _finite(v: Any) -> bool:
    """A finite value (an integer tree's Python ints always are)."""
    return isinstance(v, int) or bool(np.isfinite(v))


def _fmt(v: Any) -> str:
    if v is None:
        return "?"
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))             # exactly, past float's 2**53 too
    v = float(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v)) if not (v == 0 and np.signbit(v)) else "-0"
    r = repr(v)                 # a half / float value prints exactly when short enough
    return r if len(r) <= 16 else f"{v:.10g}"


def _fmt_frac(f: Optional[Fraction]) -> str:
    if f is None:
        return "?"
    if f.denominator == 1:
        return str(f.numerator)
    return f"{float(f):.10g}"


def _tie(exact: Fraction, rounded: float, dtype: str) -> bool:
    """The exact value lay exactly half way between ``rounded`` and its other neighbour."""
    ft = np.dtype(dtype).type
    r = ft(rounded)
    if not np.isfinite(r) or Fraction(float(r)) == exact:
        return False
    toward = ft(np.inf) if exact > Fraction(float(r)) else ft(-np.inf)
    with np.errstate(over="ignore"):
        other = np.nextafter(r, toward)
    if not np.isfinite(other):        # past the largest finite value: the "neighbour" is 2^(emax+1)
        other_f = Fraction(float(r)) + (Fraction(float(r)) - Fraction(float(np.nextafter(r, -toward))))
    else:
        other_f = Fraction(float(other))
    return abs(exact - Fraction(float(r))) == abs(other_f - exact)


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _replay_levels(bits: jax.Array, dtype: str, saturate: bool, nan: int,
                   ftz: bool) -> List[Tuple[jax.Array, jax.Array]]:
    """Every level of the tree with :func:`ascend_ref.numerics.add`: the stored results and
    the plain IEEE results (before saturation), compiled once per size and flags."""
    out = []
    cur = bits
    while cur.shape[0] > 1:
        a, b = cur[0::2], cur[1::2]
        r = numerics.add(a, b, dtype, saturate=saturate, default_nan=nan, ftz=ftz)
        ieee = numerics.add(a, b, dtype, saturate=False, default_nan=nan, ftz=ftz)
        out.append((r, ieee))
        cur = r
    return out


def _bad(api: str, param: str, value: Any, allowed: str) -> ConstraintError:
    return ConstraintError(Code.BAD_ARGUMENT, api=api, param=param, value=value,
                           allowed=allowed)


def _leaf_args(api: str, n: int, labels: Any, active: Any) -> tuple:
    """``labels`` (``n`` of them, or None) as strs and ``active`` (None, a bool or ``n``
    bools / 0-1 ints) as a bool array; BAD_ARGUMENT otherwise (a short list was an
    IndexError)."""
    if labels is None:
        names = [f"lane {i}" for i in range(n)]
    elif isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__") \
            or len(labels) != n:
        raise _bad(api, "labels", labels if isinstance(labels, (str, bytes, list, tuple))
                   and len(labels) <= 8 else type(labels).__name__,
                   f"None or {n} labels, one per leaf")
    else:
        names = [str(x) for x in labels]
    act = np.ones(n, bool) if active is None else np.asarray(flag(api, "active", active, n))
    return names, act


def _pow2_leaves(api: str, param: str, n: int) -> None:
    """A sum tree has a power-of-two number of leaves: else BAD_ARGUMENT naming ``api``."""
    if n == 0 or n & (n - 1):         # a ConstraintError is a ValueError, as this was
        raise _bad(api, param, f"{n} leaves",
                   "a power-of-two number of leaves (1, 2, 4, ...): pad the sum with zeros")


def replay(leaf_bits: ArrayLike, dtype: str, *, saturate: bool = False,
           chip: ChipLike = "atlas_a2", labels: Optional[Sequence[str]] = None,
           active: Optional[ArrayLike] = None, title: str = "") -> RoundingTree:
    """Replay the pairwise tree over ``leaf_bits`` (raw bits, power-of-two length) with
    :func:`ascend_ref.numerics.add` — the kernels' add — recording every node.

    An integer ``dtype`` gives an integer tree: int16 / uint16 leaves widen to int32 /
    uint32 (as the Ascend 950 integer sums do), every add is exact and its result wraps
    modulo 2^bits of the sum type, or with ``saturate=True`` is clamped to its range (the
    profile field ``int_sum_overflow = "saturate"``). ``labels`` / ``active``: one per leaf.

    Example: the half leaves 2048, 1, 1, 0 (bits 0x6800, 0x3C00, 0x3C00, 0). Halves are 2
    apart in [2048, 4096), so 2048 + 1 = 2049 is a tie and rounds to the even 2048, at the
    first level and again at the root: the tree gives 2048 where the exact sum is 2050.

    >>> import numpy as np
    >>> from ascend_ref import explain
    >>> tree = explain.replay(np.array([0x6800, 0x3C00, 0x3C00, 0], np.uint16), "float16")
    >>> tree
    <RoundingTree float16, 4 leaves, result 2048 (0x6800), exact sum 2050, saturate=False>
    >>> tree.root.tie, tree.error
    (True, -2.0)
    """
    dtype = dtype_name(dtype, "replay")
    sat = flag("replay", "saturate", saturate)
    prof = _profile(chip, "replay")
    if not isinstance(title, str):
        raise _bad("replay", "title", title, "a str")
    s = itemsize(dtype)
    ut = np.dtype(f"uint{8 * s}")
    try:                                 # raw bits: whole numbers the bits type holds
        bits = _converted(leaf_bits, ut.name).reshape(-1)
    except ConstraintError as e:
        raise _bad("replay", "leaf_bits", e.value, e.allowed) from None
    n = bits.size
    _pow2_leaves("replay", "leaf_bits", n)
    names, act = _leaf_args("replay", n, labels, active)
    if np.dtype(dtype).kind in "iu":
        ints = [int(v) for v in bits.view(dtype)]
        return _int_tree(ints, _INT_SUM.get(dtype, dtype), sat, names, act, title)
    nan = prof.default_nan(dtype)
    ftz = bool(prof.fp32_ftz)
    vals = bits.view(dtype)
    levels = [[Node(0, i, i, i + 1, int(bits[i]), float(vals[i]), names[i], bool(act[i]))
               for i in range(n)]]
    cur: np.ndarray = bits
    lvl = 0
    replayed = _replay_levels(jnp.asarray(bits), dtype, sat, nan, ftz)
    for r, ieee in replayed:
        r, ieee = np.asarray(r), np.asarray(ieee)
        lvl += 1
        a, b = cur[0::2], cur[1::2]
        av, bv, rv = a.view(dtype), b.view(dtype), r.view(dtype)
        iv = ieee.view(dtype)
        nodes = []
        width = 1 << lvl
        for k in range(r.size):
            x, y, z = float(av[k]), float(bv[k]), float(rv[k])
            finite = np.isfinite(x) and np.isfinite(y)
            ex = Fraction(x) + Fraction(y) if finite else None
            node = Node(lvl, k, k * width, (k + 1) * width, int(r[k]), z, a=x, b=y, exact=ex,
                        ieee=int(ieee[k]))
            node.nan = bool(np.isnan(iv[k]))
            node.overflow = finite and bool(np.isinf(iv[k]))
            node.saturated = bool(int(r[k]) != int(ieee[k]))
            if ex is not None and np.isfinite(iv[k]):
                node.inexact = Fraction(float(iv[k])) != ex
                node.tie = node.inexact and _tie(ex, float(iv[k]), dtype)
            elif node.overflow:
                node.inexact = True
            nodes.append(node)
        levels.append(nodes)
        cur = r
    return RoundingTree(dtype, sat, levels, title)


#: the sum type of 16-bit integer lanes (Ascend 950 ReduceRepeat<SUM>: [dst_dtypes])
_INT_SUM = {"int16": "int32", "uint16": "uint32"}


def _int_tree(values: List[int], dtype: str, clamp: bool, labels: List[str],
              active: np.ndarray, title: str) -> RoundingTree:
    """The pairwise tree of the integers ``values`` in the sum type ``dtype``: every add
    exact, then wrapped modulo 2^bits (``ieee``) or, ``clamp``, clamped to the type's range
    (:func:`ascend_ref.ascendc.whole_reduce.int_sums`: the sum modulo 2^32 is the same in any
    order; the clamped sum is this binary tree)."""
    info = np.iinfo(dtype)
    mod = 1 << info.bits

    def wrapped(x: int) -> int:
        x %= mod
        return x - mod if x > info.max else x

    levels = [[Node(0, i, i, i + 1, v % mod, v, labels[i], bool(active[i]))
               for i, v in enumerate(values)]]
    cur = list(values)
    lvl = 0
    while len(cur) > 1:
        lvl += 1
        width = 1 << lvl
        nodes = []
        for k in range(len(cur) // 2):
            x, y = cur[2 * k], cur[2 * k + 1]
            ex = x + y
            w = wrapped(ex)
            z = min(max(ex, int(info.min)), int(info.max)) if clamp else w
            node = Node(lvl, k, k * width, (k + 1) * width, z % mod, z, a=x, b=y,
                        exact=Fraction(ex), ieee=w % mod)
            node.overflow = not info.min <= ex <= info.max
            node.saturated = z != w
            node.inexact = z != ex
            nodes.append(node)
        levels.append(nodes)
        cur = [int(m.value) for m in nodes]
    return RoundingTree(dtype, clamp, levels, title)


def _int_overflow_rule(prof: Any, src: str, dst: str) -> bool:
    """The product clamps integer sums (its ``int_sum_overflow`` / ``int64_sum_overflow``
    is ``"saturate"``; only 32- and 64-bit lanes can overflow): else they wrap."""
    if itemsize(src) < 4:
        return False
    name = "int64_sum_overflow" if itemsize(dst) == 8 else "int_sum_overflow"
    try:
        return prof.fact(name) == "saturate"
    except KeyError:
        return False


def rounding_tree(source: Any, *, repeat: int = 0, block: Optional[int] = None, stage: int = 1,
                  chunk: int = 0, dtype: Optional[str] = None, saturate: Optional[bool] = None,
                  chip: Optional[str] = None) -> RoundingTree:
    """The rounding tree of one sum.

    ``source`` is a :class:`~ascend_ref.case.Case` (or an :class:`AccessMap`) of a summing call
    — ``whole_reduce_sum`` (tree of ``repeat``), ``reduce_data_block`` SUM (``repeat``,
    ``block``), ``vec_reduce_add`` (``stage=1``: the tree of ``repeat``; ``stage=2``: the tree
    over the stage-1 sums, ``chunk`` k of L; ``stage=3``: over the chunk sums) — or plain leaf
    values (a power-of-two count of numbers ``dtype`` holds, default float16, as
    ``store(dtype=)`` takes them; ``saturate`` a switch, default off; ``chip`` a product id,
    default atlas_a2). ``dtype`` / ``saturate`` / ``chip`` are for leaf values only: a call's
    own decide (BAD_ARGUMENT if given with one).

    A call the instruction rejects (``access_map(case).error``) writes no sum: ValueError
    carrying its error. An integer sum (Ascend 950) is a tree of exact integer adds in the
    dst type (int16 / uint16 lanes widened to 32 bits), wrapped modulo 2^bits or clamped as
    the product's ``int_sum_overflow`` says; its root is the word the call writes.

    Example: the same four leaves as :func:`replay`'s, as values, then as the first four lanes
    of a WholeReduceSum call (mask 4: the other 124 lanes add +0):

    >>> from ascend_ref import explain
    >>> explain.rounding_tree([2048, 1, 1, 0])
    <RoundingTree float16, 4 leaves, result 2048 (0x6800), exact sum 2050, saturate=False>
    >>> case = explain.make_case("whole_reduce_sum", mask=4, data=[2048, 1, 1, 0])
    >>> explain.rounding_tree(case).result.item()
    2048.0
    """
    if stage not in (1, 2, 3) or not is_int(stage):
        raise ValueError(f"stage {stage!r}: 1, 2 or 3")
    for name, v in (("repeat", repeat), ("chunk", chunk), ("block", block)):
        if not (is_int(v) or (name == "block" and v is None)):
            raise ValueError(f"{name} {v!r}: expected an int")
    if isinstance(source, AccessMap):
        source = source.case
    if not isinstance(source, Case):
        if source is None or isinstance(source, (str, bytes, dict)):
            raise ValueError(f"source {source!r}: expected a Case, an AccessMap or the leaf "
                             f"values of a sum")
        dt = dtype_name("float16" if dtype is None else dtype, "rounding_tree")
        sat = False if saturate is None else flag("rounding_tree", "saturate", saturate)
        prof = _profile("atlas_a2" if chip is None else chip, "rounding_tree")
        try:
            vals = _converted(source, dt).reshape(-1)
        except ConstraintError as e:     # an object, an Outcome: a TypeError from float()
            raise _bad("rounding_tree", "source", e.value,
                       f"a Case, an AccessMap or leaf values: {e.allowed}") from None
        _pow2_leaves("rounding_tree", "source", vals.size)
        return replay(vals.view(f"uint{8 * vals.itemsize}"), dt, saturate=sat, chip=prof)
    for key, given in (("dtype", dtype), ("saturate", saturate), ("chip", chip)):
        if given is not None:
            raise _bad("rounding_tree", key, given, f"None with a Case or AccessMap: the "
                       f"call's own {key} decides (make_case(..., {key}=...))")
    case = source
    decl = case.instruction
    option = decl.canonical_option(case.option)
    lay = decl.layout(case.dtype, option)
    if not decl.sums(option):
        opt = f" {case.option}" if case.option not in (None, "") else ""
        raise ValueError(f"{case.api}{opt} does not add: min/max select a lane (see "
                         f"access_map(case).winners)")
    prof = get_chip(case.chip)
    dt = dtype_name(case.dtype)
    integer = np.dtype(dt).kind in "iu"
    amap = access_map(case)        # a host-stage error raises here (see access_map)
    if amap.error is not None:     # the tree of a call that runs no add was "result 31.78"
        raise ValueError(f"{case.api} rejects this call, so it writes no sum to replay: "
                         f"{amap.error}")
    sat = (prof.saturate_default and case.dtype == "float16") if case.saturate is None \
        else bool(case.saturate)
    L = amap.lanes
    R = amap.repeat
    name = f"{case.api}<{dt}> on {case.chip}"
    if stage == 1:
        nrep = min(max(R, 1), amap.reads.shape[0])   # the rows the table holds
        if not 0 <= repeat < nrep:
            raise ValueError(f"repeat {repeat} outside [0, {nrep})")
        lanes: np.ndarray = np.arange(L)
        if lay.groups > 1:                   # one sum per group of L / groups lanes
            width = L // lay.groups          # (ReduceDataBlock: a DataBlock; a pair: 2)
            b = 0 if block is None else block
            if not 0 <= b < lay.groups:
                raise ValueError(f"block {b} outside [0, {lay.groups})")
            lanes = lanes[b * width:(b + 1) * width]
            what = "block" if width == amap.epb else "result"
            name += f", repeat {repeat}, {what} {b} (lanes {lanes[0]}-{lanes[-1]})"
        else:
            if block is not None:
                raise ValueError(f"block {block}: {case.api} adds one sum per repeat (block "
                                 f"picks a group of a per-group sum, e.g. ReduceDataBlock's)")
            name += f", repeat {repeat}"
        act = amap.active[repeat, lanes]
        leaf = np.where(act, amap.bits[repeat, lanes], 0)
        labels = [f"lane {i} @{int(amap.reads[repeat, i])}" for i in lanes]
        if integer:                          # exact adds in the dst type (950: widened)
            wide = dtype_name(decl.tensor_dtype("dst", dt))
            if wide != dt:
                name += f" ({dt} lanes summed as {wide})"
            ints = [int(v) for v in leaf.astype(amap.bits.dtype).view(dt)]
            return _int_tree(ints, wide, _int_overflow_rule(prof, dt, wide), labels, act,
                             name)
        return replay(leaf, dt, saturate=sat, chip=prof, labels=labels, active=act, title=name)
    if "add_order" not in decl.profile_rules:
        raise ValueError(f"stage 2 / 3 trees exist for "
                         f"{', '.join(registry.where(lambda i: 'add_order' in i.profile_rules))} "
                         f"only")
    if prof.add_order != "tree":
        raise ValueError(f"{case.chip} combines the repeat results in the {prof.add_order!r} "
                         f"order (docs/SEMANTICS.md §F), not by stage 2 / 3 trees")
    if integer:
        raise ValueError(f"stage {stage}: {case.api}<{dt}> has no stage 2 / 3 float tree")
    stage1 = _stage1_bits(amap, sat, prof)
    pad = (-stage1.size) % L
    s1 = np.concatenate([stage1, np.zeros(pad, stage1.dtype)])
    labels = [f"repeat {r}" if r < R else "pad +0" for r in range(s1.size)]
    if stage == 2:
        if not 0 <= chunk < s1.size // L:
            raise ValueError(f"chunk {chunk} outside [0, {s1.size // L}) (stage-1 sums in "
                             f"chunks of {L})")
        sl = slice(chunk * L, (chunk + 1) * L)
        return replay(s1[sl], dt, saturate=sat, chip=prof, labels=labels[sl],
                      active=np.arange(s1.size)[sl] < R,
                      title=name + f", stage 2 (chunk {chunk}: stage-1 sums "
                                   f"{chunk * L}..{(chunk + 1) * L - 1})")
    chunks = [replay(s1[k * L:(k + 1) * L], dt, saturate=sat, chip=prof).root.bits
              for k in range(s1.size // L)]
    c = np.array(chunks + [0] * ((-len(chunks)) % L), stage1.dtype)
    return replay(c, dt, saturate=sat, chip=prof,
                  labels=[f"chunk {k}" if k < len(chunks) else "pad +0" for k in range(c.size)],
                  active=np.arange(c.size) < len(chunks), title=name + ", stage 3 (chunk sums)")


def _stage1_bits(amap: AccessMap, sat: bool, prof: ChipProfile) -> np.ndarray:
    add = numerics.adder(amap.dtype, prof, sat)
    leaves = np.where(amap.active, amap.bits, 0).astype(amap.bits.dtype)
    return np.asarray(numerics.tree_sum(jnp.asarray(leaves), add))[:amap.repeat]


# ------------------------------------------------------------------ callable module ---------

class _CallableModule(types.ModuleType):
    """``ascend_ref.explain`` was a function naming a status code before this module existed
    (``ascend_ref.explain(3)``); importing the module replaces that attribute of the package,
    so the module answers the same call."""

    def __call__(self, code: Union[int, str, Code]) -> str:
        return explain_code(code)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["make_case", "access_map", "AccessMap", "WriteTable", "rounding_tree", "replay",
           "RoundingTree", "Node", "explain_code", "constraints"]
