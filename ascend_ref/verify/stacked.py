"""The stacked dump layout (format version 2): a file's cases as columns, not members.

A version-1 dump holds one archive member per case and field (``c{i}.meta``,
``c{i}.before.src``, ...): reading 1000 cases means thousands of small members, each
decompressed and parsed on its own. A **stacked** dump holds the same facts with one member
per column: the cases are split into *groups* that share everything static (API, product,
dtype, option, saturate, mask form, the names of the parameters, tensors and regions), and
each group stores its per-case values as arrays with a leading case axis and the bytes of
each region as one flat array (offsets from the byte counts). ``docs/verify.md`` §1b is the
specification.

Keys (``g`` = group number, ``m`` = its cases, ``P`` / ``T`` / ``R`` = its parameter, tensor
and region counts)::

    format  "ascend_ref.dump"    version 2    layout "stacked"    count N    groups G
    g{g}.meta          JSON: api, chip, dtype, option, saturate, mask_words (0: an int
                       mask; 1 or 2: bit-mode words; -1: a counter-mode count,
                       ``{"counter": n}``; other word counts are stored and reported per
                       case, as version 1 does), params [names], tensors [names],
                       regions [names], errors [code names]
    g{g}.case          int64[m]        the case numbers (0..N-1) of the group's rows
    g{g}.params        int64[m, P]
    g{g}.tensors       int64[m, T, 2]  byte address, size in elements
    g{g}.mask          uint64[m, max(1, mask_words)]
    g{g}.ub_bytes      int64[m]        the size of the UB to rebuild
    g{g}.regions       int64[m, R, 2]  byte address, byte count
    g{g}.error         int32[m]        0: ran; k: rejected with errors[k - 1]
    g{g}.has_after     bool[m]         the after bytes are recorded
    g{g}.before.{name} uint8[...]      region ``name`` of every row, row after row
    g{g}.after.{name}  uint8[...]      the same for the rows with has_after
    g{g}.extra         (optional) JSON list of m objects {"tags": ..., "source": ...,
                       "spr": ...} (``spr``: the registers, docs/verify.md §1c)

The reader (:class:`Stacked`) turns row ``r`` of a group back into the version-1 ``meta`` and
region bytes of its case, so :meth:`DumpFile.case` validates a stacked case with exactly the
version-1 rules (the exact fallback of the vectorised verifier in
:mod:`ascend_ref.verify.fast`).

>>> import numpy as np, tempfile, os
>>> from ascend_ref.case import Case
>>> from ascend_ref.verify import open_dump, write_dumps
>>> c = Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
...          {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
...          {"src": (0, 64), "dst": (256, 8)}, np.arange(512, dtype=np.int32).astype(np.uint8))
>>> p = os.path.join(tempfile.mkdtemp(), "stacked.npz")
>>> write_dumps(p, [c, c], [c.ub, c.ub], regions="tensors", stacked=True)
>>> with open_dump(p) as f:
...     f.version, f.count, f.stacked.groups[0].regions, f.stacked.groups[0].region_cols.shape
(2, 2, ['src', 'dst'], (2, 2, 2))
>>> with open_dump(p) as f:
...     d = f.case(1)
>>> d.case.tensors["dst"], bool((d.after[256:288] == c.ub[256:288]).all())
((256, 8), True)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..case import Case
from .meta import DumpError, Regions, case_meta, tensor_regions

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from .format import DumpFile

VERSION = 2
LAYOUT = "stacked"
_GROUP_KEYS = {"api", "chip", "dtype", "option", "saturate", "mask_words", "params", "tensors",
               "regions", "errors"}


# ------------------------------------------------------------------ writing -----------------

def stacked_arrays(cases: Sequence[Case], ub_afters: Sequence, regions: Regions,
                   errors: Sequence, sprs: Optional[Sequence] = None) -> dict:
    """The archive members of ``cases`` in the stacked layout (see :func:`write_dumps`;
    ``regions`` None stores each whole UB as one region ``"ub"``; ``sprs[i]`` case ``i``'s
    ``meta.spr``, kept in the group's ``extra``)."""
    groups: Dict[tuple, List[tuple]] = {}
    regs = list(sprs) if sprs is not None else [None] * len(cases)
    for i, (case, after, err, spr) in enumerate(zip(cases, ub_afters, errors, regs)):
        ub = np.ascontiguousarray(case.ub, np.uint8)
        if ub.ndim != 1:
            raise ValueError(f"case {i}: the UB must be a 1-D uint8 array")
        reg = (tensor_regions(case) if regions == "tensors" else
               {"ub": (0, ub.size)} if regions is None else dict(regions))
        if not reg:
            raise ValueError(f"case {i}: no region to store")
        aft = None if after is None else np.ascontiguousarray(np.asarray(after), np.uint8)
        if aft is not None and aft.shape != ub.shape:
            raise ValueError(f"ub_after has {aft.size} bytes, the case's UB has {ub.size}")
        if err is None and aft is None:
            raise ValueError("ub_after is required unless error= says the device rejected "
                             "the call")
        for name, (a, n) in reg.items():
            if a < 0 or n < 0 or a + n > ub.size:
                raise ValueError(f"case {i}: region {name} [{a}, {a + n}) is outside its "
                                 f"{ub.size}-byte UB")
        meta = case_meta(case, layout="regions", regions=reg, error=err, spr=spr)
        mask = meta["mask"]
        key = (meta["api"], meta["chip"], meta["dtype"], json.dumps(meta["option"]),
               meta["saturate"], len(mask) if isinstance(mask, list) else
               -1 if isinstance(mask, dict) else 0,
               tuple(meta["params"]), tuple(meta["tensors"]), tuple(meta["regions"]))
        groups.setdefault(key, []).append((i, meta, ub, aft))
    out: Dict[str, Any] = {"layout": np.array(LAYOUT), "groups": np.array(len(groups))}
    for g, (key, rows) in enumerate(groups.items()):
        first = rows[0][1]
        words = key[5]
        names = {"params": list(first["params"]), "tensors": list(first["tensors"]),
                 "regions": list(first["regions"])}
        errs = sorted({m["error"] for _, m, _, _ in rows if "error" in m})
        gm = {"api": first["api"], "chip": first["chip"], "dtype": first["dtype"],
              "option": first["option"], "saturate": first["saturate"], "mask_words": words,
              **names, "errors": errs}
        pre = f"g{g}."
        out[pre + "meta"] = np.array(json.dumps(gm))
        out[pre + "case"] = np.array([i for i, _, _, _ in rows], np.int64)
        out[pre + "params"] = np.array([[m["params"][k] for k in names["params"]]
                                        for _, m, _, _ in rows], np.int64).reshape(
                                            len(rows), len(names["params"]))
        out[pre + "tensors"] = np.array([[m["tensors"][k] for k in names["tensors"]]
                                         for _, m, _, _ in rows], np.int64).reshape(
                                             len(rows), len(names["tensors"]), 2)
        try:
            out[pre + "mask"] = np.array([m["mask"] if words > 0 else [m["mask"]["counter"]]
                                          if words < 0 else [m["mask"]]
                                          for _, m, _, _ in rows], np.uint64).reshape(
                                              len(rows), max(words, 1))
        except OverflowError:
            raise ValueError(f"a mask of group {g} does not fit uint64 words (the stacked "
                             f"layout stores them so; write such a case in version 1)") from None
        out[pre + "ub_bytes"] = np.array([ub.size for _, _, ub, _ in rows], np.int64)
        spans = np.array([[m["regions"][k] for k in names["regions"]] for _, m, _, _ in rows],
                         np.int64).reshape(len(rows), len(names["regions"]), 2)
        out[pre + "regions"] = spans
        out[pre + "error"] = np.array([errs.index(m["error"]) + 1 if "error" in m else 0
                                       for _, m, _, _ in rows], np.int32)
        has = np.array([a is not None for _, _, _, a in rows], bool)
        out[pre + "has_after"] = has
        for j, name in enumerate(names["regions"]):
            out[f"{pre}before.{name}"] = np.concatenate(
                [ub[a:a + n] for (_, _, ub, _), (a, n) in zip(rows, spans[:, j].tolist())]
                + [np.zeros(0, np.uint8)])
            out[f"{pre}after.{name}"] = np.concatenate(
                [aft[a:a + n] for (_, _, _, aft), (a, n) in zip(rows, spans[:, j].tolist())
                 if aft is not None] + [np.zeros(0, np.uint8)])
        extra = [{k: m[k] for k in ("tags", "source", "spr") if k in m} for _, m, _, _ in rows]
        if any(extra):
            out[pre + "extra"] = np.array(json.dumps(extra))
    return out


# ------------------------------------------------------------------ reading -----------------

@dataclass
class Group:
    """One group of a stacked file, its columns read (each member once)."""

    number: int
    meta: dict
    api: Any
    chip: Any
    dtype: Any
    option: Any
    saturate: Any
    mask_words: int
    params: List[str]
    tensors: List[str]
    regions: List[str]
    errors: List[str]
    case: np.ndarray              # int64[m]
    param_cols: np.ndarray        # int64[m, P]
    tensor_cols: np.ndarray       # int64[m, T, 2]
    mask: np.ndarray              # uint64[m, W]
    ub_bytes: np.ndarray          # int64[m]
    region_cols: np.ndarray       # int64[m, R, 2]
    error: np.ndarray             # int32[m]
    has_after: np.ndarray         # bool[m]
    before: Dict[str, np.ndarray]
    after: Dict[str, np.ndarray]
    before_at: np.ndarray         # int64[R, m]: where row r's bytes of region j start
    after_at: np.ndarray          # int64[R, m]
    extra: Optional[list]

    def __len__(self) -> int:
        return int(self.case.size)

    def has_spr(self) -> np.ndarray:
        """bool[m]: the rows that carry reduce special registers (``extra``'s ``spr``)."""
        if self.extra is None:
            return np.zeros(len(self), bool)
        return np.array([x.get("spr") is not None for x in self.extra], bool)

    def before_bytes(self, j: int, r: int) -> np.ndarray:
        at, n = int(self.before_at[j, r]), int(self.region_cols[r, j, 1])
        return self.before[self.regions[j]][at:at + n]

    def after_bytes(self, j: int, r: int) -> np.ndarray:
        at, n = int(self.after_at[j, r]), int(self.region_cols[r, j, 1])
        return self.after[self.regions[j]][at:at + n]


class Stacked:
    """The groups of an open stacked file and where each case lives (``where[i] = (g, r)``).

    Every structural fault (a missing column, a wrong dtype or shape, byte arrays whose sizes
    disagree with the byte counts, case numbers that are not ``0..count-1`` once each) raises
    :class:`~ascend_ref.verify.format.DumpError` for the file: the columns cannot be read,
    so no case of the file can be."""

    def __init__(self, f: "DumpFile") -> None:
        self.f = f
        path = f.path
        layout = f._scalar("layout", str)
        if layout != LAYOUT:
            raise DumpError(path, "layout", f"{layout!r}: version 2 has layout {LAYOUT!r}")
        n = f._scalar("groups", int)
        if n < 0:
            raise DumpError(path, "groups", f"{n} is negative")
        self.groups = [self._group(g) for g in range(n)]
        count = f.count
        self.where_g = np.full(count, -1, np.int64)
        self.where_r = np.full(count, -1, np.int64)
        for g in self.groups:
            c = g.case
            bad = (c < 0) | (c >= count)
            if bad.any():
                raise DumpError(path, f"g{g.number}.case", f"case number {int(c[bad][0])} "
                                f"outside [0, {count}) (count = {count})")
            if (self.where_g[c] >= 0).any() or np.unique(c).size != c.size:
                dup = next(int(x) for x in c.tolist() if self.where_g[x] >= 0
                           or (c == x).sum() > 1)
                raise DumpError(path, f"g{g.number}.case", f"case {dup} is stored twice")
            self.where_g[c] = g.number
            self.where_r[c] = np.arange(c.size)
        missing = np.flatnonzero(self.where_g < 0)
        if missing.size:
            raise DumpError(path, "count", f"{count}, but no group holds case "
                                           f"{int(missing[0])}")

    def _array(self, key: str, dtype: DTypeLike, ndim: int) -> np.ndarray:
        a = self.f._get(key, view=True)      # the columns are only read: no copy
        if a.dtype != np.dtype(dtype) or a.ndim != ndim:
            raise DumpError(self.f.path, key, f"expected {np.dtype(dtype)} with {ndim} "
                                              f"dimension(s), got {a.dtype} {a.shape}")
        return a

    def _group(self, g: int) -> Group:
        path, pre = self.f.path, f"g{g}."
        gm = _json(self.f, pre + "meta")
        if not isinstance(gm, dict):
            raise DumpError(path, pre + "meta", "expected a JSON object")
        unknown = sorted(set(gm) - _GROUP_KEYS)
        if unknown:
            raise DumpError(path, f"{pre}meta.{unknown[0]}",
                            f"unknown field (known: {sorted(_GROUP_KEYS)})")
        for k in _GROUP_KEYS:
            if k not in gm:
                raise DumpError(path, f"{pre}meta.{k}", "missing")
        for k in ("params", "tensors", "regions", "errors"):
            if not isinstance(gm[k], list) or not all(isinstance(x, str) for x in gm[k]):
                raise DumpError(path, f"{pre}meta.{k}", "expected a list of names")
        words = gm["mask_words"]        # bit masks: 1 or 2 words valid, the case's check says
        if isinstance(words, bool) or not isinstance(words, int) or not -1 <= words <= 64:
            raise DumpError(path, f"{pre}meta.mask_words",
                            f"{words!r}: expected an int in [-1, 64] (0: an int mask, "
                            f"-1: counter mode)")
        case = self._array(pre + "case", np.int64, 1)
        m = case.size
        shapes = {"params": (m, len(gm["params"])), "tensors": (m, len(gm["tensors"]), 2),
                  "mask": (m, max(words, 1)), "ub_bytes": (m,),
                  "regions": (m, len(gm["regions"]), 2), "error": (m,), "has_after": (m,)}
        kinds = {"params": np.int64, "tensors": np.int64, "mask": np.uint64,
                 "ub_bytes": np.int64, "regions": np.int64, "error": np.int32,
                 "has_after": np.bool_}
        cols = {}
        for k, shape in shapes.items():
            a = self._array(pre + k, kinds[k], len(shape))
            if a.shape != shape:
                raise DumpError(path, pre + k, f"shape {a.shape}, expected {shape} "
                                               f"({m} case(s) in the group)")
            cols[k] = a
        err = cols["error"]
        if ((err < 0) | (err > len(gm["errors"]))).any():
            raise DumpError(path, pre + "error", f"index outside [0, {len(gm['errors'])}]")
        nbytes = cols["regions"][:, :, 1]
        if (nbytes < 0).any():
            r = int(np.argwhere(nbytes < 0)[0][0])
            raise DumpError(path, pre + "regions", f"a negative byte count (case "
                                                   f"{int(case[r])})")
        has = cols["has_after"]
        before: Dict[str, np.ndarray] = {}
        after: Dict[str, np.ndarray] = {}
        b_at = np.zeros((len(gm["regions"]), m), np.int64)
        a_at = np.zeros((len(gm["regions"]), m), np.int64)
        for j, name in enumerate(gm["regions"]):
            nb = nbytes[:, j]
            for side, store, at, rows in (("before", before, b_at, np.ones(m, bool)),
                                          ("after", after, a_at, has)):
                key = f"{pre}{side}.{name}"
                flat = self._array(key, np.uint8, 1)
                sizes = np.where(rows, nb, 0)
                if flat.size != int(sizes.sum()):
                    raise DumpError(path, key, f"{flat.size} bytes, but the regions of the "
                                               f"group's cases add up to {int(sizes.sum())}")
                at[j] = np.cumsum(sizes) - sizes
                store[name] = flat
        extra = None
        if pre + "extra" in self.f.keys:
            extra = _json(self.f, pre + "extra")
            if not isinstance(extra, list) or len(extra) != m or \
                    not all(isinstance(x, dict) for x in extra):
                raise DumpError(path, pre + "extra", f"expected a JSON list of {m} objects")
        return Group(g, gm, gm["api"], gm["chip"], gm["dtype"], gm["option"], gm["saturate"],
                     words, gm["params"], gm["tensors"], gm["regions"], gm["errors"], case,
                     cols["params"], cols["tensors"], cols["mask"], cols["ub_bytes"],
                     cols["regions"], err, has, before, after, b_at, a_at, extra)

    # -- one case, as version 1 would hold it
    def locate(self, i: int) -> Tuple[Group, int]:
        return self.groups[int(self.where_g[i])], int(self.where_r[i])

    def meta(self, i: int) -> dict:
        """Case ``i``'s version-1 ``meta`` object (validated by the version-1 rules after)."""
        g, r = self.locate(i)
        mask = g.mask[r]
        meta: Dict[str, Any] = {
            "api": g.api, "chip": g.chip, "dtype": g.dtype, "option": g.option,
            "mask": [int(w) for w in mask] if g.mask_words > 0 else
            {"counter": int(mask[0])} if g.mask_words < 0 else int(mask[0]),
            "params": dict(zip(g.params, g.param_cols[r].tolist())),
            "tensors": {k: v for k, v in zip(g.tensors, g.tensor_cols[r].tolist())},
            "saturate": g.saturate, "layout": "regions",
            "regions": {k: v for k, v in zip(g.regions, g.region_cols[r].tolist())},
            "ub_bytes": int(g.ub_bytes[r]),
        }
        if g.error[r]:
            meta["error"] = g.errors[int(g.error[r]) - 1]
        if g.extra is not None:
            meta.update(g.extra[r])
        return meta

    def has(self, key: str) -> bool:
        """Whether the version-1 member ``key`` (``c{i}.meta``, ``c{i}.before.{name}``,
        ``c{i}.after.{name}``) exists for this file."""
        head, _, rest = key.partition(".")
        if not (head[:1] == "c" and head[1:].isdigit()):
            return False
        i = int(head[1:])
        if not 0 <= i < self.where_g.size:
            return False
        if rest == "meta":
            return True
        side, _, name = rest.partition(".")
        g, r = self.locate(i)
        if name not in g.regions:
            return False
        return side == "before" or (side == "after" and bool(g.has_after[r]))

    def get(self, key: str) -> np.ndarray:
        """The bytes of a version-1 region member (``has(key)`` is true)."""
        head, _, rest = key.partition(".")
        side, _, name = rest.partition(".")
        g, r = self.locate(int(head[1:]))
        j = g.regions.index(name)
        return g.before_bytes(j, r) if side == "before" else g.after_bytes(j, r)


class Keys:
    """The member names of a stacked file as version 1 would have them, plus its real ones
    (``in`` only: what :func:`~ascend_ref.verify.format._build` asks)."""

    def __init__(self, real: set, stacked: Optional[Stacked] = None) -> None:
        self.real, self.stacked = real, stacked

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        if key in self.real:
            return True
        return self.stacked is not None and self.stacked.has(key)


def _json(f: "DumpFile", key: str) -> Any:
    a = f._get(key)
    if a.shape == () and isinstance(a[()], (str, bytes)):
        text = a[()] if isinstance(a[()], str) else a[()].decode("utf-8", "replace")
    elif a.dtype == np.uint8 and a.ndim == 1:
        text = a.tobytes().decode("utf-8", "replace")
    else:
        raise DumpError(f.path, key, f"expected JSON text, got {a.dtype} {a.shape}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DumpError(f.path, key, f"invalid JSON: {e}") from None


__all__ = ["VERSION", "LAYOUT", "Group", "Stacked", "Keys", "stacked_arrays"]
