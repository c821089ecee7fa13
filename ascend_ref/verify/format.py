"""The dump format (version 1): what a device or simulator wrote, as an ``.npz`` archive.

A dump file holds ``count`` recorded calls. Each call is a :class:`~ascend_ref.case.Case`
(API, product, dtype, static option, mask, parameters, tensors, UB before) plus what the
device left in the UB afterwards: either the whole UB (layout ``"ub"``) or named byte regions
with their addresses (layout ``"regions"``). ``docs/verify.md`` is the full specification.

Keys of the archive::

    format              "ascend_ref.dump"
    version             1
    count               N (number of cases)
    c{i}.meta           JSON text (str, or uint8 UTF-8 bytes) — see docs/verify.md
    c{i}.ub_before      uint8[n]  } layout "ub"
    c{i}.ub_after       uint8[n]  }
    c{i}.before.{name}  uint8[nbytes]  } layout "regions": meta.regions = {name: [addr, nbytes]}
    c{i}.after.{name}   uint8[nbytes]  }

``meta.spr`` (optional): the reduce special registers the device's getters read after the
call, and the state before it (:mod:`ascend_ref.verify.registers`, docs/verify.md §1c).

Reading never yields a silent partial result: anything truncated, malformed or inconsistent
raises :class:`DumpError` naming the file, the case and the field.

>>> import numpy as np, tempfile, os
>>> from ascend_ref.case import Case
>>> c = Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
...          {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
...          {"src": (0, 64), "dst": (256, 8)}, np.zeros(512, np.uint8))
>>> p = os.path.join(tempfile.mkdtemp(), "one.npz")
>>> write_dump(p, c, ub_after=c.ub)
>>> with open_dump(p) as f:
...     d = f.case(0)
>>> d.case.api, d.case.params["repeat"], d.after.size
('whole_reduce_sum', 1, 512)
"""

from __future__ import annotations

import itertools
import json
import os
from collections import abc
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    NamedTuple, Optional, Sequence, Tuple, Type, Union, overload)

import numpy as np

from .. import registry
from ..batch_args import is_int
from ..case import Case, as_cases
from ..cli_args import is_path
from ..chips import chip as get_chip, chips as all_chips
from ..constraints import Code, ConstraintError
from ..mask import CounterMask
from ..ub import ALIASES_TEXT, DTYPES, dtype_from_text
from .crc import crc32_split
from .parallel import SPLIT_MIN as _SPLIT_MIN

if TYPE_CHECKING:
    from ..chips import ChipProfile
    from .stacked import Stacked

FORMAT = "ascend_ref.dump"
VERSION = 1
SUPPORTED_VERSIONS = (1, 2)       # 2: the stacked layout (stacked.py)

_META_KEYS = {"api", "chip", "dtype", "option", "mask", "params", "tensors", "saturate",
              "layout", "regions", "error", "tags", "source", "ub_bytes", "spr"}
from .meta import (DumpError, PathLike, Regions, _jsonable_mask, case_fields,  # noqa: F401
                   case_meta, tensor_regions)


@dataclass
class DumpCase:
    """One recorded call, validated: the :class:`Case`, and what the device left.

    ``after`` — the whole UB after the call as the device left it, rebuilt from regions for
    layout ``"regions"`` (bytes outside the regions copy ``case.ub``); ``compared`` — bool mask
    of the bytes the dump actually recorded after the call (None: all of them); ``error`` —
    the constraint code the device/simulator reported instead of running (then ``after`` is
    None).
    """

    file: str
    index: int
    case: Case
    after: Optional[np.ndarray]
    compared: Optional[np.ndarray] = None
    error: Optional[Code] = None
    meta: dict = field(default_factory=dict)
    spr: Optional[Any] = None
    spr_verdict: Optional[Any] = None         # the register comparison (run.Verifier)

    @property
    def where(self) -> str:
        return f"{self.file} case {self.index}"


# ------------------------------------------------------------------ writing -----------------

def _case_arrays(i: int, case: Case, after: Optional[np.ndarray], regions: Any,
                 error: Optional[str], spr: Any = None) -> dict:
    """Case ``i``'s members (``after``: checked by :func:`_after_bytes`)."""
    pre = f"c{i}."
    if regions == "tensors":
        regions = tensor_regions(case)
    layout = "regions" if regions is not None else "ub"
    out = {pre + "meta": np.array(json.dumps(case_meta(case, layout=layout, regions=regions,
                                                       error=error, spr=spr, index=i)))}
    ub = np.ascontiguousarray(case.ub, np.uint8)
    if layout == "ub":
        out[pre + "ub_before"] = ub
        if after is not None:
            out[pre + "ub_after"] = after
    else:
        for name, (a, n) in regions.items():
            if a < 0 or n < 0 or a + n > ub.size:     # a slice would shorten it silently
                raise ValueError(f"case {i}: region {name} [{a}, {a + n}) is outside its "
                                 f"{ub.size}-byte UB")
            out[f"{pre}before.{name}"] = ub[a:a + n]
            if after is not None:
                out[f"{pre}after.{name}"] = after[a:a + n]
    return out


def _check_path(path: Any) -> str:
    """``path`` as :func:`write_dumps` writes it, else a ValueError naming it (None, 5, ""
    were a TypeError or FileNotFoundError, a folder an IsADirectoryError that left a
    ``.part`` file behind)."""
    p = os.fspath(path) if is_path(path) else None
    if not isinstance(p, str):
        raise ValueError(f"path = {path!r}: expected the dump file to write (a non-empty str "
                         f"or os.PathLike)")
    if os.path.isdir(p):
        raise ValueError(f"path = {p!r} is a directory: expected a file name in it (e.g. "
                         f"{os.path.join(p, 'dump.npz')!r})")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder):
        raise ValueError(f"path = {p!r}: its folder {folder!r} does not exist")
    return p


def _per_case(name: str, v: Any, n: int) -> list:
    """``v`` (None: nothing for any case) as a list of one entry a case; a ValueError naming
    ``name`` for anything else (``errors=5`` was a TypeError)."""
    if v is None:
        return [None] * n
    if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__") or \
            getattr(v, "shape", None) == ():
        raise ValueError(f"{name} = {v!r}: expected a sequence with one entry a case "
                         f"(or None)")
    out = list(v)
    if len(out) != n:
        raise ValueError(f"{name} has {len(out)} entries for {n} cases: expected one a case")
    return out


def _after_bytes(k: int, after: Any, case: Case, error: Optional[str]) -> Optional[np.ndarray]:
    """``ub_afters[k]`` as the 1-D uint8 array of ``case.ub``'s size it must be (an int16 or
    float array was wrapped or truncated to bytes, a 2-D one said "has 320 bytes, the
    case's UB has 320")."""
    if after is None:
        if error is None:
            raise ValueError(f"ub_afters[{k}] is required unless errors[{k}] says the device "
                             f"rejected the call")
        return None
    a = np.asarray(after)
    n = int(np.shape(case.ub)[0])
    if a.dtype != np.uint8 or a.ndim != 1 or a.size != n:
        raise ValueError(f"ub_afters[{k}] = {a.dtype} array of shape {a.shape}: expected "
                         f"the UB after the call as bytes, a 1-D uint8 array of {n} (the size "
                         f"of cases[{k}].ub)")
    return np.ascontiguousarray(a)


def _spr_json(k: int, spr: Any) -> Any:
    """``sprs[k]`` as a ``meta.spr`` object: JSON, ``{"after": ..., "before": ...}`` with
    ``after`` (docs/verify.md §1c), else a ValueError naming it (``sprs=[5]`` was written,
    then refused by the reader). The readings inside are what the device read: the reader
    judges them (one the product's getters cannot make is that case's bad input)."""
    if spr is None:
        return None
    try:
        obj = json.loads(json.dumps(spr))
    except (TypeError, ValueError) as e:
        raise ValueError(f"sprs[{k}] = {spr!r}: not JSON ({e})") from None
    if not isinstance(obj, dict) or "after" not in obj or set(obj) - {"before", "after"}:
        raise ValueError(f"sprs[{k}] = {spr!r}: expected None or an object {{\"after\": "
                         f"..., \"before\": ...}} (\"before\" optional; docs/verify.md §1c)")
    return obj


def _int64_columns(k: int, fields: dict) -> None:
    """The stacked layout keeps parameters and tensors as int64 columns: a value past them
    is a BAD_ARGUMENT naming it (was an OverflowError from numpy)."""
    lim = 2**63
    vals = [(f"params.{n}", v) for n, v in fields["params"].items()] + \
        [(f"tensors.{n}[{j}]", x) for n, t in fields["tensors"].items() for j, x in enumerate(t)]
    for fld, v in vals:
        if not -lim <= v < lim:
            raise ConstraintError(Code.BAD_ARGUMENT, api="write_dumps", param=f"cases[{k}].{fld}",
                                  value=v, allowed="an int64 in the stacked layout (write "
                                                   "such a case in version 1)")


def write_dumps(path: PathLike, cases: Sequence[Case], ub_afters: Optional[Sequence] = None, *,
                regions: Regions = None, errors: Optional[Sequence] = None,
                compress: bool = True, stacked: bool = False,
                sprs: Optional[Sequence] = None) -> None:
    """Write several cases into one dump file.

    ``ub_afters[i]`` — the whole UB after case ``i`` (a 1-D uint8 array of
    ``cases[i].ub``'s size). ``regions`` — None: store the whole UB before/after (layout
    ``"ub"``); ``"tensors"``: store each tensor's declared extent; or a dict ``{name: (addr,
    nbytes)}`` applied to every case. ``errors[i]`` — a :class:`~ascend_ref.constraints.Code`
    (or its name) when the device rejected case ``i`` instead of running it. ``stacked`` —
    format version 2, the stacked layout (:mod:`ascend_ref.verify.stacked`): the cases as
    columns, one member per column, which ``verify`` reads and checks as whole batches; its
    regions as ``regions`` says (None: each whole UB as one region ``"ub"``). ``sprs[i]`` --
    the reduce special registers of case ``i`` as its ``meta.spr`` object (``{"before": ...,
    "after": ...}``, docs/verify.md §1c; None: not recorded).

    Every argument is checked before anything is written: a case field no dump can record
    as it is (:func:`~ascend_ref.verify.meta.case_fields`) is a BAD_ARGUMENT naming
    ``cases[i].field``, a bad path, ``ub_afters[i]``, ``errors[i]`` or ``sprs[i]`` a
    ValueError naming it; nothing is left behind (no ``.part`` file) when writing fails.
    """
    p = _check_path(path)
    cases = as_cases(cases, "write_dumps")
    n = len(cases)
    ub_afters = _per_case("ub_afters", ub_afters, n)
    errors = _per_case("errors", errors, n)
    regs = _per_case("sprs", sprs, n)
    _check_regions(regions)
    errors = [_error_name(k, e) for k, e in enumerate(errors)]
    for k, c in enumerate(cases):
        fields = case_fields(c, k)
        if stacked:
            _int64_columns(k, fields)
        ub_afters[k] = _after_bytes(k, ub_afters[k], c, errors[k])
        regs[k] = _spr_json(k, regs[k])
    arrays: Dict[str, Any] = {"format": np.array(FORMAT), "count": np.array(n)}
    if stacked:
        from .stacked import VERSION as STACKED, stacked_arrays

        arrays["version"] = np.array(STACKED)
        arrays.update(stacked_arrays(cases, ub_afters, regions, errors, regs))
    else:
        arrays["version"] = np.array(VERSION)
        for i, (c, a, e, r) in enumerate(zip(cases, ub_afters, errors, regs)):
            arrays.update(_case_arrays(i, c, a, regions, e, r))
    tmp = f"{p}.part"
    try:
        with open(tmp, "wb") as fh:
            _savez(fh, arrays, compress)
        os.replace(tmp, p)
    except BaseException:
        if os.path.isfile(tmp):
            os.remove(tmp)
        raise


def _check_regions(regions: Any) -> None:
    """``regions`` as :func:`write_dumps` takes it, else a ValueError saying what it takes
    (a string or a list was an AttributeError or a ValueError from ``dict()``)."""
    if regions is None or (isinstance(regions, str) and regions == "tensors"):
        return
    if isinstance(regions, Mapping) and regions and all(
            isinstance(k, str) and isinstance(r, (tuple, list)) and len(r) == 2
            and all(is_int(x) for x in r) for k, r in regions.items()):
        return
    raise ValueError(f"regions = {regions!r}: expected None (the whole UB), \"tensors\" (each "
                     "tensor's declared extent) or a non-empty {name: (addr, nbytes)} of ints")


def _error_name(k: int, e: Any) -> Optional[str]:
    """``errors[k]`` as a :class:`Code`'s name (None: the device ran the call); an unknown
    name, a value that is no code, or ``OK`` (no rejection; the reader refuses it) is a
    ValueError (``"NOPE"`` was written into the meta as it was)."""
    if e is None:
        return None
    name = None
    if isinstance(e, Code):
        name = e.name
    elif isinstance(e, str) and e in Code.__members__:
        name = e
    elif is_int(e) and int(e) in {int(c) for c in Code}:
        name = Code(int(e)).name
    if name is not None and name != Code.OK.name:
        return name
    raise ValueError(f"errors[{k}] = {e!r}: expected None (the device ran the call), a Code "
                     "other than OK, its name (e.g. 'MASK_RANGE') or its number")


#: a member deflates only when that saves at least this share of its bytes (noise-like
#: region bytes -- random floats save 5-8% -- are stored: inflating them would cost the
#: reader far more time than the bytes saved)
DEFLATE_GAIN = 0.1


def _savez(fh: Any, arrays: Dict[str, Any], compress: bool) -> None:
    """``np.savez`` (``compress`` false) or a compressed ``.npz`` whose members are each
    deflated, or stored where deflating saves less than :data:`DEFLATE_GAIN` of their bytes
    (a zip archive may mix both; numpy's reader, ``zipfile`` and :func:`_read_member` read
    either member the same)."""
    import io
    import zipfile
    import zlib

    if not compress:
        np.savez(fh, **arrays)
        return
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for key, val in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(val), allow_pickle=False)
            data = buf.getbuffer()
            co = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
            small = len(co.compress(data)) + len(co.flush()) <= len(data) * (1 - DEFLATE_GAIN)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if small else zipfile.ZIP_STORED
            info.external_attr = 0o600 << 16
            zf.writestr(info, data)
            del data
            buf.close()


def write_dump(path: PathLike, case: Case, ub_after: Optional[np.ndarray] = None, *,
               regions: Regions = None, error: Union[None, Code, str, int] = None,
               compress: bool = True) -> None:
    """Write one case (see :func:`write_dumps`)."""
    write_dumps(path, [case], None if ub_after is None else [ub_after], regions=regions,
                errors=None if error is None else [error], compress=compress)


# ------------------------------------------------------------------ reading -----------------

def _is_dump_name(name: str) -> bool:
    """``*.npz`` in any letter case (``RUN.NPZ`` is a dump too)."""
    return name.lower().endswith(".npz")


def _stat_problem(path: str, e: OSError) -> str:
    """Why ``path`` cannot be examined, in words."""
    import errno

    if e.errno == errno.ELOOP:
        return "symbolic link loop (the link resolves to itself)"
    if e.errno == errno.ENOENT:
        return ("broken symbolic link (its target does not exist)" if os.path.islink(path)
                else "no such file or directory")
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied ({e.strerror})"
    return f"cannot examine: {e.strerror or e}"


def iter_paths(paths: Union[PathLike, Iterable[Union[PathLike, "DumpError"]]]
               ) -> Iterator[Union[str, "DumpError"]]:
    """Dump files named by ``paths`` (one path, or an iterable of paths): files as given,
    directories searched for ``*.npz``. A path is a ``str``, ``bytes`` (decoded as the file
    system does) or ``os.PathLike``; anything else is a ValueError naming it.

    Directories are walked recursively in sorted order, **following symbolic links** to
    directories; a directory is walked once, however many links lead to it. Names match
    ``*.npz`` in any letter case. Nothing is skipped silently: a directory that cannot be
    listed, an entry that cannot be examined (permission, broken link, link loop), and a link
    that leads back into one of its own parent directories (a loop) are yielded as
    :class:`DumpError` (field ``"directory"`` / ``"file"``) — verification reports them as bad
    input and fails the run. A path named ``*.npz`` that is not a regular file (a FIFO, a
    device) is yielded as a path; opening it gives the error without reading it.
    """
    import stat as _stat

    seen = set()                          # (st_dev, st_ino) of directories already walked

    def walk(d: str, ancestors: Tuple[Tuple[int, int], ...]
             ) -> Iterator[Union[str, DumpError]]:
        try:
            st = os.stat(d)
        except OSError as e:
            yield DumpError(d, "directory", _stat_problem(d, e))
            return
        key = (st.st_dev, st.st_ino)
        if key in ancestors:
            yield DumpError(d, "directory", "directory loop: a symbolic link leads back to "
                                            "one of its own parent directories (not followed)")
            return
        if key in seen:                   # reached again through another link: walked once
            return
        seen.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            yield DumpError(d, "directory", f"cannot list the directory: {_stat_problem(d, e)}")
            return
        subdirs = []
        for ent in entries:
            p = os.path.join(d, ent.name)
            try:
                mode = os.stat(p).st_mode          # follows links
            except OSError as e:
                yield DumpError(p, "file", f"{_stat_problem(p, e)}; it may hold dumps, "
                                           f"so the run cannot pass")
                continue
            if _stat.S_ISDIR(mode):
                subdirs.append(p)
            elif _is_dump_name(ent.name):
                yield p
        for p in subdirs:
            yield from walk(p, ancestors + (key,))

    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    elif not isinstance(paths, abc.Iterable):
        raise ValueError(f"paths = {paths!r}: expected a dump file or directory path (str, "
                         f"bytes or os.PathLike) or an iterable of them")
    for p in paths:
        if isinstance(p, DumpError):      # already found bad (a list of iter_paths' output)
            yield p
            continue
        if not isinstance(p, (str, bytes, os.PathLike)):
            raise ValueError(f"paths: {p!r} is not a path: expected a dump file or directory "
                             f"(str, bytes or os.PathLike)")
        p = os.fsdecode(p)                # bytes: a name in the file system's encoding
        if os.path.isdir(p):
            yield from walk(p, ())
        else:
            yield p


class DumpFile:
    """An open dump file: ``count`` cases, read one at a time with :meth:`case` (lazy)."""

    def __init__(self, path: PathLike) -> None:
        import stat as _stat

        if not isinstance(path, (str, bytes, os.PathLike)):
            raise ValueError(f"open_dump: path = {path!r}: expected a dump file (str, bytes or "
                             f"os.PathLike)")
        self.path = os.fsdecode(path)
        self.stacked: Optional["Stacked"] = None        # version 2: the columns
        self.keys: Any = set()                          # member names (a set; version 2: Keys)
        try:
            mode = os.stat(self.path).st_mode
        except OSError as e:
            raise DumpError(self.path, "file", _stat_problem(self.path, e)) from None
        if _stat.S_ISDIR(mode):
            raise DumpError(self.path, "file", "is a directory (give it to verify, which "
                                               "searches it for *.npz)")
        if not _stat.S_ISREG(mode):
            kind = ("a FIFO (named pipe)" if _stat.S_ISFIFO(mode) else
                    "a socket" if _stat.S_ISSOCK(mode) else
                    "a device" if _stat.S_ISCHR(mode) or _stat.S_ISBLK(mode) else
                    "not a regular file")
            raise DumpError(self.path, "file", f"not a regular file: {kind}; not read")
        try:
            with open(self.path, "rb") as fh:
                magic = fh.read(4)
        except OSError as e:
            raise DumpError(self.path, "file", f"cannot read: {e}") from None
        if magic != b"PK\x03\x04":
            raise DumpError(self.path, "file", "not an .npz (zip) archive" +
                            (" (empty file)" if not magic else ""))
        # the archive's directory, read from its bytes in one pass (numpy's reader builds a
        # ZipInfo object per member: ~8 us each, 40 ms for a version-1 file of 1000 cases);
        # anything unusual (ZIP64 records, bytes before the archive, a short file) takes
        # numpy's reader, with its own errors
        self._zdir = _zip_directory(self._raw())
        if self._zdir is not None:
            self.keys = self._zdir.member_keys if self._zdir.member_keys is not None else \
                {k[:-4] if k.endswith(".npy") else k for k in self._zdir}
        else:
            try:
                self._open_npz()
            except DumpError:
                self.close()
                raise
        try:
            fmt = self._scalar("format", str)
            if fmt != FORMAT:
                raise DumpError(self.path, "format", f"{fmt!r}, expected {FORMAT!r}")
            self.version = self._scalar("version", int)
            if self.version not in SUPPORTED_VERSIONS:
                raise DumpError(self.path, "version",
                                f"{self.version} is not supported (this ascend_ref reads "
                                f"{list(SUPPORTED_VERSIONS)}; newer dumps need a newer ascend_ref)")
            self.count = self._scalar("count", int)
            if self.count < 0:
                raise DumpError(self.path, "count", f"{self.count} is negative")
            if self.version == 2:
                from .stacked import Keys, Stacked

                self.stacked = Stacked(self)
                self.keys = Keys(self.keys, self.stacked)
                return
            top = None if self._zdir is None else self._zdir.top_case
            heads = {k.partition(".")[0] for k in self.keys if k.startswith("c")} \
                if top is None or top >= self.count else set()     # else: none can be
            stray = sorted(h for h in heads if h[1:].isdecimal() and int(h[1:]) >= self.count)
            if stray:
                raise DumpError(self.path, "count",
                                f"{self.count}, but the archive also holds {', '.join(stray[:5])}")
        except Exception:
            self.close()
            raise

    def _open_npz(self) -> Any:
        """numpy's reader of the archive (opened on first use when the directory was read
        from the bytes)."""
        npz = getattr(self, "_npz_file", None)
        if npz is None:
            try:
                npz = self._npz_file = np.load(self.path, allow_pickle=False)
                if self._zdir is None:
                    self.keys = set(npz.files)
            except Exception as e:  # BadZipFile, EOFError, OSError, ValueError, ...
                raise DumpError(self.path, "file", f"not a readable .npz archive (truncated or "
                                                   f"not a dump?): {type(e).__name__}: {e}") \
                    from None
        return npz

    @property
    def _npz(self) -> Any:
        return self._open_npz()

    # -- plumbing
    def _get(self, key: str, case: Optional[int] = None, view: bool = False) -> np.ndarray:
        """Member ``key`` as an array (``view``: a stored member may come back as a read-only
        view of the archive's bytes)."""
        if key not in self.keys:
            raise DumpError(self.path, key, "missing", case)
        if self.stacked is not None and key not in self.keys.real:
            return self.stacked.get(key)           # a case's region bytes, from the columns
        view = view or self.stacked is not None or key in _STACKED_SCALARS
        if self._zdir is not None:
            entry = self._zdir.get(key + ".npy")
            fast = None if entry is None else _read_member(None, key + ".npy", self._raw(),
                                                           view=view, entry=entry)
        else:
            fast = _read_member(self._npz.zip, key + ".npy", self._raw(), view=view)
        if fast is not None:
            return fast
        try:
            return self._npz[key]
        except Exception as e:
            raise DumpError(self.path, key, f"unreadable (corrupt or truncated): "
                                            f"{type(e).__name__}: {e}", case) from None

    @overload
    def _scalar(self, key: str, kind: Type[str]) -> str: ...

    @overload
    def _scalar(self, key: str, kind: Type[int]) -> int: ...

    def _scalar(self, key: str, kind: Union[Type[str], Type[int]]) -> Union[str, int]:
        a = self._get(key)
        if a.shape != ():
            raise DumpError(self.path, key, f"expected a scalar, got shape {a.shape}")
        v = a[()]
        if kind is str:
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            if not isinstance(v, str):
                raise DumpError(self.path, key, f"expected text, got {a.dtype}")
            return str(v)
        if not np.issubdtype(a.dtype, np.integer):
            raise DumpError(self.path, key, f"expected an integer, got {a.dtype}")
        return int(v)

    def _raw(self) -> Any:
        """The archive's bytes (a read-only mmap, opened on first use; None if it cannot be)."""
        mm = getattr(self, "_mm", False)
        if mm is False:
            import mmap

            mm = None
            try:
                with open(self.path, "rb") as fh:
                    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                mm = None
            self._mm = mm
        return mm

    def close(self) -> None:
        mm = getattr(self, "_mm", None)
        if mm:
            try:
                mm.close()
            except BufferError:          # stacked columns still view it: closed with them
                pass
            self._mm = None
        npz = getattr(self, "_npz_file", None)
        if npz is not None:
            npz.close()
            self._npz_file = None

    def __enter__(self) -> DumpFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one case
    def meta(self, i: int) -> dict:
        if self.stacked is not None:
            return self.stacked.meta(i)
        return self._parse_meta(self._get(f"c{i}.meta", i), i)

    def _parse_meta(self, a: np.ndarray, i: int) -> dict:
        """Case ``i``'s ``meta`` object from its member ``a``."""
        if a.dtype == np.uint8 and a.ndim == 1:
            text = a.tobytes().decode("utf-8", "replace")
        elif a.shape == () and isinstance(a[()], (str, bytes)):
            text = a[()] if isinstance(a[()], str) else a[()].decode("utf-8", "replace")
        else:
            raise DumpError(self.path, f"c{i}.meta", f"expected JSON text, got {a.dtype} "
                                                     f"{a.shape}", i)
        try:
            meta = json.loads(text)
        except json.JSONDecodeError as e:
            raise DumpError(self.path, f"c{i}.meta", f"invalid JSON: {e}", i) from None
        if not isinstance(meta, dict):
            raise DumpError(self.path, f"c{i}.meta", "expected a JSON object", i)
        return meta

    def case(self, i: int) -> DumpCase:
        """Case ``i``, validated (raises :class:`DumpError`); ``i`` that is no int (a float,
        a bool, None, a string) is a BAD_ARGUMENT error naming it, not a file error."""
        if not is_int(i):
            raise ConstraintError(Code.BAD_ARGUMENT, api="DumpFile.case", param="i", value=i,
                                  allowed="a case number: an int >= 0 (not a bool)")
        if not 0 <= i < self.count:
            raise DumpError(self.path, "case", f"{i} out of range: the file holds {self.count} "
                                               f"case(s)", i)
        meta = self.meta(i)
        return _build(self, i, meta)


#: parsed ``.npy`` headers by their bytes: ``(dtype, shape, fortran_order, count)`` (the headers of
#: one dump repeat from case to case)
_HEADERS: Dict[bytes, Tuple[np.dtype, Tuple[int, ...], bool, int]] = {}


#: members read before a file is known to be stacked (views are fine for them too)
_STACKED_SCALARS = frozenset({"format", "version", "count", "layout", "groups"})


class _Entry(NamedTuple):
    """What :func:`_read_member` needs of a member (the names of ``zipfile.ZipInfo``)."""

    header_offset: int
    compress_type: int
    flag_bits: int
    compress_size: int
    file_size: int
    CRC: int


#: entries :meth:`Directory.get` builds from their own row before it turns the whole
#: directory into lists (opening a file reads three; the list of a 5000-member directory
#: took 0.6 ms, an eighth of the open)
_ROW_GETS = 16


class Directory(Mapping[str, _Entry]):
    """An archive's members by name (a read-only mapping to :class:`_Entry`), held as
    columns: ``cols`` int64 ``[K, 6]`` (the entry fields in order, one row a member) and
    ``row`` (name -> row; a name given twice: the last, as ``zipfile`` keeps). An entry is
    built when asked for; :meth:`rows` finds many at once, for the many-member reader."""

    def __init__(self, names: List[str], cols: np.ndarray, keys: Optional[set] = None,
                 top_case: Optional[int] = None) -> None:
        self.cols = cols
        self.row: Dict[str, int] = dict(zip(names, range(len(names))))
        #: the member names without ``.npy`` and the largest case number among their heads
        #: (``c<N>``; -1: none), where the directory's reader found them (else None)
        self.member_keys, self.top_case = keys, top_case
        self._lists: Optional[List[List[int]]] = None
        self._gets = 0

    def get(self, name: str, default: Any = None) -> Any:
        r = self.row.get(name)
        if r is None:
            return default
        if self._lists is None:
            self._gets += 1
            if self._gets <= _ROW_GETS:       # a few (the format fields): a row each
                return _Entry._make(self.cols[r].tolist())
            self._lists = self.cols.tolist()
        return _Entry._make(self._lists[r])

    def __getitem__(self, name: str) -> _Entry:
        e = self.get(name)
        if e is None:
            raise KeyError(name)
        return e

    def __contains__(self, name: object) -> bool:
        return name in self.row

    def __iter__(self) -> Iterator[str]:
        return iter(self.row)

    def __len__(self) -> int:
        return len(self.row)

    def rows(self, names: Sequence[str]) -> np.ndarray:
        """int64: the row of each of ``names`` (-1 where the archive has no such member)."""
        return np.fromiter(map(self.row.get, names, itertools.repeat(-1)), np.int64,
                           len(names))


def _zip_directory(raw: Any) -> Optional[Directory]:
    """The members of the zip archive ``raw`` (bytes or an mmap) by name, read from its
    central directory as ``zipfile`` reads it, or None for anything but the plain layout
    numpy writes (end record at the very end, no comment, no ZIP64 records, nothing before
    the archive, every directory entry well-formed): then ``zipfile`` reads it."""
    import struct

    if raw is None:
        return None
    try:
        n = len(raw)
        if n < 22:
            return None
        end = n - 22
        sig, disk, disk_cd, here, total, size_cd, off_cd, comment = \
            struct.unpack_from("<IHHHHIIH", raw, end)
        if sig != 0x06054B50 or comment or disk or disk_cd or here != total \
                or total == 0xFFFF or size_cd == 0xFFFFFFFF or off_cd == 0xFFFFFFFF \
                or off_cd + size_cd != end:
            return None
        if end >= 20 and raw[end - 20:end - 16] == b"PK\x06\x07":     # a ZIP64 locator
            return None
        fast = _directory_columns(raw, off_cd, size_cd, total)
        if fast is not None:
            return fast
        names: List[str] = []
        rows: List[Tuple[int, ...]] = []
        at, count = off_cd, 0
        unpack = struct.Struct("<IHHHHHHIIIHHHHHII").unpack_from
        while at < end:
            (sig, _, _, flags, method, _, _, crc, csize, usize, nlen, elen, clen, _, _, _,
             offset) = unpack(raw, at)
            if sig != 0x02014B50 or 0xFFFFFFFF in (csize, usize, offset):
                return None
            name_b = raw[at + 46:at + 46 + nlen]
            if name_b.isascii():         # the same text in utf-8 and cp437, decoded fast
                name = name_b.decode("ascii")
            else:
                name = name_b.decode("utf-8") if flags & 0x800 else name_b.decode("cp437")
            names.append(name)
            rows.append((offset, method, flags, csize, usize, crc))
            at += 46 + nlen + elen + clen
            count += 1
        if at != end or count != total:
            return None
        return Directory(names, np.array(rows, np.int64).reshape(len(rows), 6))
    except Exception:                    # noqa: BLE001 - zipfile reads it, with its errors
        return None


def _joined(buf8: np.ndarray, start: np.ndarray, size: np.ndarray) -> bytes:
    """The byte strings ``buf8[start[k]:start[k] + size[k]]``, each followed by a newline,
    in one piece (one gather).

    >>> _joined(np.frombuffer(b"abcdef", np.uint8), np.array([1, 4]), np.array([2, 0]))
    b'bc\\n\\n'
    """
    n = len(start)
    out = np.full(int(size.sum()) + n, 10, np.uint8)
    ends = np.cumsum(size + 1) - 1                        # each string's newline in out
    src = np.arange(out.size) + np.repeat(start - (ends - size), size + 1)
    keep = np.ones(out.size, bool)
    keep[ends] = False
    out[keep] = buf8[src[keep]]
    return out.tobytes()


#: digits of a case number :func:`_top_case` reads (more: the names are read one by one)
_CASE_DIGITS = 18


def _top_case(buf8: np.ndarray, start: np.ndarray, size: np.ndarray) -> Optional[int]:
    """The largest ``N`` among the ASCII names ``buf8[start[k]:start[k] + size[k]]`` of
    the form ``c<N>`` or ``c<N>.<anything>`` (the case heads :class:`DumpFile` checks
    against its count), -1 when there is none, None when some name holds a longer number
    than :data:`_CASE_DIGITS` digits (then the names are read one by one).

    >>> names = [b"c12.meta.npy", b"c3", b"c.npy", b"c4x.npy", b"count.npy", b"c07.npy"]
    >>> buf = np.frombuffer(b"".join(names), np.uint8)
    >>> size = np.array([len(n) for n in names])
    >>> _top_case(buf, np.cumsum(size) - size, size)
    12
    """
    d = min(int(size.max(initial=0)) - 1, _CASE_DIGITS)
    if d < 1:
        return -1
    room = size - 1                                   # the bytes after the "c"
    k = np.arange(d + 1)
    b = buf8[np.minimum(start[:, None] + 1 + k, buf8.size - 1)]
    digit = (k < room[:, None]) & (b >= 48) & (b <= 57)
    digit[:, d] = False                               # a stop past the window
    run = np.argmin(digit, axis=1)                    # digits after the "c"
    first = buf8[np.minimum(start, buf8.size - 1)]
    head = (size >= 2) & (first == ord("c")) & (run >= 1)
    if (head & (run == d) & (room > d)).any():        # a longer number: not read here
        return None
    after = b[np.arange(len(b)), run]
    head &= (run == room) | (after == ord("."))
    if not head.any():
        return -1
    value = np.zeros(len(b), np.int64)
    for j in range(d):                                # digit j of each head's number
        on = head & (j < run)
        value[on] = value[on] * 10 + (b[on, j].astype(np.int64) - 48)
    return int(value[head].max())


def _le16(buf8: np.ndarray, at: np.ndarray) -> np.ndarray:
    """int64: the little-endian 16-bit numbers at byte offsets ``at`` of ``buf8`` (uint8)."""
    return buf8[at].astype(np.int64) | buf8[at + 1].astype(np.int64) << 8


def _directory_columns(raw: Any, off_cd: int, size_cd: int,
                       total: int) -> Optional["Directory"]:
    """:func:`_zip_directory`'s walk of the central directory done as numpy columns: the
    entries found by their signature, accepted only when they chain exactly from the first
    byte to the last (a signature inside a name breaks the chain) and none is a ZIP64 one;
    None otherwise (then the walk decides). ~1 us an entry less than the walk."""
    if total == 0 or size_cd < 46 * total:
        return None
    cd = np.frombuffer(raw, np.uint8, size_cd, off_cd)
    at = np.flatnonzero(cd[:size_cd - 45] == 0x50)
    at = at[(cd[at + 1] == 0x4B) & (cd[at + 2] == 1) & (cd[at + 3] == 2)]
    if at.size != total or at[0] != 0:
        return None

    def u16(k: int) -> np.ndarray:
        return _le16(cd, at + k)

    def u32(k: int) -> np.ndarray:
        return u16(k) | u16(k + 2) << 16

    nlen = u16(28)
    nxt = at + 46 + nlen + u16(30) + u16(32)
    if not ((nxt[:-1] == at[1:]).all() and nxt[-1] == size_cd):
        return None
    cols = np.stack([u32(42), u16(10), u16(8), u32(20), u32(24), u32(16)], 1)
    if (cols[:, [0, 3, 4]] == 0xFFFFFFFF).any():
        return None
    text = _joined(cd, at + 46, nlen)    # the names, each followed by a newline
    if text.isascii() and text.count(b"\n") == total:   # (no name holds one)
        names = text[:-1].decode("ascii").split("\n")    # the same in utf-8 and cp437
        npy = nlen >= 4
        npy &= (cd[np.where(npy, at + 42 + nlen, 0)[:, None] + np.arange(4)] ==
                np.frombuffer(b".npy", np.uint8)).all(axis=1)
        keys = set(_joined(cd, at + 46, nlen - 4 * npy)[:-1].decode("ascii").split("\n"))
        return Directory(names, cols, keys, _top_case(cd, at + 46, nlen))
    else:
        names = []
        for a, n, fl in zip((at + off_cd + 46).tolist(), nlen.tolist(), cols[:, 2].tolist()):
            b = bytes(raw[a:a + n])
            names.append(b.decode("ascii") if b.isascii() else
                         b.decode("utf-8") if fl & 0x800 else b.decode("cp437"))
    return Directory(names, cols)


class _Libdeflate:
    """libdeflate (the system's shared library, when it has one) for the two hot loops of
    reading an archive: a member's CRC-32 (about 2.3x zlib's here) and inflating a deflated
    member (about 1.6x zlib's, straight into the array's buffer). Same results as zlib
    (CRC-32 is one function; inflating is exact); without the library zlib does both."""

    _NAMES = ("libdeflate.so.0", "libdeflate.so", "libdeflate.0.dylib", "libdeflate.dylib")

    def __init__(self) -> None:
        import ctypes
        import threading

        self.lib: Any = None
        self._local = threading.local()
        if os.environ.get("ASCEND_REF_NO_LIBDEFLATE"):        # zlib only (tests, A/B)
            return
        for name in self._NAMES:
            try:
                lib = ctypes.CDLL(name)
                lib.libdeflate_crc32.restype = ctypes.c_uint32
                lib.libdeflate_crc32.argtypes = [ctypes.c_uint32, ctypes.c_void_p,
                                                 ctypes.c_size_t]
                lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
                lib.libdeflate_alloc_decompressor.argtypes = []
                lib.libdeflate_deflate_decompress.restype = ctypes.c_int
                lib.libdeflate_deflate_decompress.argtypes = [
                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                    ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
            except (OSError, AttributeError):
                continue
            self.lib = lib
            break

    def crc32(self, data: Any) -> int:
        """CRC-32 of a bytes-like object (as ``zlib.crc32``); a large one as two halves on
        two cores (:func:`.crc.crc32_split`)."""
        n = data.nbytes if isinstance(data, memoryview) else len(data)
        if n < _SPLIT_MIN:            # most members: no view, no hand-off
            return self._crc32_one(data)
        view = memoryview(data).cast("B")
        try:
            return crc32_split(self._crc32_one, view)
        finally:
            view.release()

    def _crc32_one(self, data: Any) -> int:
        import zlib

        n = data.nbytes if isinstance(data, memoryview) else len(data)
        if self.lib is None or n < 4096:
            return zlib.crc32(data)
        a = np.frombuffer(data, np.uint8)
        return int(self.lib.libdeflate_crc32(0, a.ctypes.data, n))

    def decompressor(self) -> int:
        """This thread's libdeflate decompressor (allocated on first use; the library must
        be there)."""
        d = getattr(self._local, "d", None)
        if d is None:
            d = self._local.d = self.lib.libdeflate_alloc_decompressor()
            if not d:
                raise MemoryError("libdeflate_alloc_decompressor")
        return d

    def inflate(self, data: Any, size: int) -> Optional[bytearray]:
        """The raw deflate stream at the start of ``data`` inflated, when it gives exactly
        ``size`` bytes (else None; trailing bytes ignored, as ``zlib.decompress``)."""
        import ctypes
        import zlib

        if self.lib is None or size < 4096:
            try:
                out = zlib.decompress(data, -15)
            except zlib.error:
                return None
            return bytearray(out) if len(out) == size else None
        d = self.decompressor()
        src = np.frombuffer(data, np.uint8)
        out_b = bytearray(size)
        dst = np.frombuffer(out_b, np.uint8)
        got = ctypes.c_size_t(0)
        rc = self.lib.libdeflate_deflate_decompress(
            d, src.ctypes.data, src.size, dst.ctypes.data if size else None, size,
            ctypes.byref(got))
        del src, dst
        return out_b if rc == 0 and got.value == size else None


_LIBDEFLATE: Optional[_Libdeflate] = None


def _codec() -> _Libdeflate:
    global _LIBDEFLATE
    if _LIBDEFLATE is None:
        _LIBDEFLATE = _Libdeflate()
    return _LIBDEFLATE


def _npy_header(key: bytes) -> Optional[Tuple[np.dtype, Tuple[int, ...], bool, int]]:
    """A ``.npy`` version-1 header's text parsed: ``(dtype, shape, fortran_order, count)``
    (cached in :data:`_HEADERS`), None when it does not parse or holds objects."""
    import io

    parsed = _HEADERS.get(key)
    if parsed is None:
        try:
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(
                io.BytesIO(len(key).to_bytes(2, "little") + key))
        except Exception:                # noqa: BLE001 - numpy's reader reports it
            return None
        if dtype.hasobject:
            return None
        count = 1
        for d in shape:
            count *= int(d)
        parsed = (dtype, tuple(shape), bool(fortran), count)
        if len(_HEADERS) < 4096:
            _HEADERS[key] = parsed
    return parsed


def _read_member(zf: Any, name: str, raw: Any = None, view: bool = False,
                 entry: Optional[_Entry] = None) -> Optional[np.ndarray]:
    """A plain ``.npy`` member of the archive, read in one piece from ``raw`` (the archive's
    bytes, e.g. an mmap; None: through ``zf``). ``view``: a stored (uncompressed) member comes
    back as a read-only view of ``raw``, no copy (the stacked columns), a compressed one as a
    read-only array of its decompressed bytes. ``entry``: the member's directory entry
    (:func:`_zip_directory`; ``zf`` is not asked then). None for anything
    unusual -- another format version, an object dtype, an encrypted or short member, a bad
    CRC --: then the caller takes numpy's own reader, with its own error."""
    buf: Union[bytes, bytearray, memoryview]
    read_only = False
    try:
        info = zf.getinfo(name) if entry is None else entry
        if raw is not None and info.compress_type in (0, 8) and not info.flag_bits & 0x1:
            at = info.header_offset
            head = raw[at:at + 30]
            if head[:4] != b"PK\x03\x04":
                return None
            start = at + 30 + int.from_bytes(head[26:28], "little") + \
                int.from_bytes(head[28:30], "little")
            codec = _codec()
            if info.compress_type == 8:
                data = codec.inflate(memoryview(raw)[start:start + info.compress_size],
                                     info.file_size)
                if data is None or codec.crc32(data) != info.CRC:
                    return None
                buf = data
                read_only = view             # as a view would be
            else:                        # stored: one copy out of the mapping
                if info.compress_size != info.file_size or start + info.file_size > len(raw):
                    return None
                part = memoryview(raw)[start:start + info.file_size]
                if codec.crc32(part) != info.CRC:
                    part.release()
                    return None
                if view:
                    buf = part            # read-only; keeps the mapping alive
                else:
                    buf = bytearray(part)
                    part.release()
        else:
            if zf is None:               # a directory entry without its ZipInfo
                return None
            buf = bytearray(info.file_size)
            with zf.open(info) as fh:
                if fh.readinto(buf) != info.file_size or fh.read(1):   # read(1): the CRC
                    return None
        if bytes(buf[:8]) != b"\x93NUMPY\x01\x00":
            return None
        hl = int.from_bytes(buf[8:10], "little")
        parsed = _npy_header(bytes(buf[10:10 + hl]))
        if parsed is None:
            return None
        dtype, shape, fortran, count = parsed
        if len(buf) - 10 - hl != count * dtype.itemsize:
            return None
        arr = np.frombuffer(buf, dtype, count, 10 + hl)
        if read_only:
            arr.flags.writeable = False
        return arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
    except Exception:                    # noqa: BLE001 - numpy's reader reports it
        return None


def open_dump(path: PathLike) -> DumpFile:
    """Open a dump file (raises :class:`DumpError` when it is not a readable dump)."""
    return DumpFile(path)


def iter_dump_cases(paths: Iterable[Union[PathLike, DumpError]],
                    on_file: Optional[Callable[[str], object]] = None,
                    share: Tuple[int, int] = (0, 1),
                    stacked: Optional[Callable[[DumpFile, np.ndarray], Sequence[int]]] = None
                    ) -> Iterator[Union[DumpCase, DumpError]]:
    """Every case of every dump file under ``paths``, one at a time (never all in memory).

    Yields a :class:`DumpCase` for each valid case and a :class:`DumpError` (not raised) for
    each bad file or bad case, then carries on with the next. ``on_file(path)`` is called
    when a file is finished (progress bars). ``share = (index, count)``: only the cases
    whose running number (over all files, in order) is ``index`` modulo ``count``, and the
    errors of files whose number is (the shares of ``count`` processes: each case once).
    ``stacked(dump_file, mine)`` -- called on each file while it is open, with ``mine``
    (bool per case) the cases of this share; it verifies what it can as whole batches
    (:func:`ascend_ref.verify.fast.check_stacked`: stacked files, format version 2, and
    version-1 files of at least :data:`ascend_ref.verify.regions.MIN_CASES` cases) and
    returns the case numbers it leaves, which are then yielded one at a time.
    """
    index, count = share
    k = 0
    for n, p in enumerate(iter_paths(paths)):
        mine = n % count == index
        if isinstance(p, DumpError):
            if mine:
                yield p
            if on_file:
                on_file(p.file)
            continue
        try:
            f = DumpFile(p)
        except DumpError as e:
            if mine:
                yield e
            if on_file:
                on_file(p)
            continue
        with f:
            if f.count == 0 and mine:
                yield DumpError(p, "count", "the file holds no case")
            todo = np.flatnonzero((k + np.arange(f.count)) % count == index)
            k += f.count
            if stacked is not None and todo.size:
                sel = np.zeros(f.count, bool)
                sel[todo] = True
                todo = np.asarray(stacked(f, sel), np.int64)
            for i in todo.tolist():
                try:
                    yield f.case(i)
                except DumpError as e:
                    yield e
        if on_file:
            on_file(p)


# ------------------------------------------------------------------ validation --------------

class _V:
    """Validation helpers bound to one file and case."""

    def __init__(self, f: DumpFile, i: int) -> None:
        self.f, self.i = f, i

    def err(self, fld: str, reason: str) -> DumpError:
        return DumpError(self.f.path, fld, reason, self.i)

    def int_(self, v: object, fld: str, lo: int = 0, hi: int = 2**31 - 1) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.err(fld, f"{v!r} is not an integer")
        if not lo <= v <= hi:
            raise self.err(fld, f"{v} outside [{lo}, {hi}]")
        return v

    def keys_of(self, obj: Any, fld: str, want: Sequence[str], shape: str, noun: str,
                api: str) -> dict:
        """``obj``, a dict holding exactly the keys ``want`` of ``api`` (each one a ``noun``;
        a missing key is reported before an unknown one)."""
        if not isinstance(obj, dict):
            raise self.err(fld, f"expected {shape}")
        for k in want:
            if k not in obj:
                raise self.err(f"{fld}.{k}", f"missing ({api} needs {list(want)})")
        for k in obj:
            if k not in want:
                raise self.err(f"{fld}.{k}", f"unknown {noun} for {api} (expected {list(want)})")
        return obj


def _word(v: _V, w: object, fld: str) -> int:
    if isinstance(w, str):
        try:
            w = int(w, 0)
        except ValueError:
            raise v.err(fld, f"{w!r} is not an integer (decimal or 0x hex)") from None
    return v.int_(w, fld, 0, 2**64 - 1)


def _option(v: _V, ins: registry.Instruction, opt: object) -> Union[None, str, bool]:
    try:
        return ins.normalise_option(opt)
    except ValueError as e:
        raise v.err("meta.option", f"{ins.name}: {e}") from None


def _build(f: DumpFile, i: int, meta: dict) -> DumpCase:
    v = _V(f, i)
    unknown = sorted(set(meta) - _META_KEYS)
    if unknown:
        raise v.err(f"meta.{unknown[0]}", f"unknown field (known: {sorted(_META_KEYS)})")
    for k in ("api", "chip", "dtype", "mask", "params", "tensors"):
        if k not in meta:
            raise v.err(f"meta.{k}", "missing")
    api = meta["api"]
    ins = registry.get(api)
    if ins is None:
        raise v.err("meta.api", f"unknown API {api!r}; known: {list(registry.names())}")
    chip_id = meta["chip"]
    if not isinstance(chip_id, str) or chip_id not in all_chips():
        raise v.err("meta.chip", f"unknown product {chip_id!r}; known: {all_chips()}")
    prof = get_chip(chip_id)
    dtype = dtype_from_text(meta["dtype"])
    if dtype is None:
        raise v.err("meta.dtype", f"unknown element type {meta['dtype']!r}; known: "
                                  f"{list(DTYPES)} (or {ALIASES_TEXT})")
    s = np.dtype(dtype).itemsize
    option = _option(v, ins, meta.get("option"))
    # mask
    mask = meta["mask"]
    if isinstance(mask, dict):                  # counter mode: {"counter": n}
        if set(mask) != {"counter"}:
            raise v.err("meta.mask", f"a counter-mode mask is {{\"counter\": n}}, got "
                                     f"keys {sorted(mask)}")
        mask = CounterMask(v.int_(mask["counter"], "meta.mask.counter", 0, 2**64 - 1))
    elif isinstance(mask, list):
        if not 1 <= len(mask) <= 2:
            raise v.err("meta.mask", f"a bit mask has 1 or 2 words, got {len(mask)}")
        mask = [_word(v, w, f"meta.mask[{k}]") for k, w in enumerate(mask)]
    else:
        mask = v.int_(mask, "meta.mask", 0, 2**31 - 1)
    # params
    want = ins.params
    params = v.keys_of(meta["params"], "meta.params", want, "an object", "parameter", api)
    params = {k: v.int_(params[k], f"meta.params.{k}") for k in want}
    # tensors
    names = ins.operands
    tensors = v.keys_of(meta["tensors"], "meta.tensors", names,
                        "an object {name: [addr, size]}", "tensor", api)
    tens = {}
    for k in names:
        t = tensors[k]
        if not isinstance(t, list) or len(t) != 2:
            raise v.err(f"meta.tensors.{k}", f"{t!r}: expected [addr, size] (byte address, "
                                             f"size in elements)")
        tens[k] = (v.int_(t[0], f"meta.tensors.{k}[0]"), v.int_(t[1], f"meta.tensors.{k}[1]"))
    saturate = meta.get("saturate")
    if saturate is not None and not isinstance(saturate, bool):
        raise v.err("meta.saturate", f"{saturate!r}: expected true, false or null")
    error = meta.get("error")
    if error is not None:
        if not isinstance(error, str) or error not in Code.__members__ or error == "OK":
            raise v.err("meta.error", f"{error!r} is not a constraint code name "
                                      f"(e.g. {Code.MASK_RANGE.name})")
        error = Code[error]
    tags = meta.get("tags") or {}
    if not isinstance(tags, dict):
        raise v.err("meta.tags", "expected an object")
    # the UB
    layout = meta.get("layout", "ub")
    growable = "ub_bytes" in prof.assumed
    if layout == "ub":
        before = _bytes(v, f"c{i}.ub_before")
        after = None
        if error is None or f"c{i}.ub_after" in f.keys:
            after = _bytes(v, f"c{i}.ub_after")
            if after.size != before.size:
                raise v.err(f"c{i}.ub_after", f"{after.size} bytes, but ub_before has "
                                              f"{before.size}")
        if before.size == 0:
            raise v.err(f"c{i}.ub_before", "empty")
        if before.size > prof.ub_bytes and not growable:
            raise v.err(f"c{i}.ub_before", f"{before.size} bytes, more than the UB of {chip_id} "
                                           f"({prof.ub_bytes} bytes)")
        if "ub_bytes" in meta and meta["ub_bytes"] != before.size:
            raise v.err("meta.ub_bytes", f"{meta['ub_bytes']!r}, but ub_before has "
                                         f"{before.size} bytes")
        compared = None
    elif layout == "regions":
        before, after, compared = _regions(v, meta, tens, s, prof, growable, error, api)
    else:
        raise v.err("meta.layout", f"{layout!r}: expected \"ub\" or \"regions\"")
    case = Case(api, chip_id, dtype, option, mask, params, tens, before, saturate,
                dict(tags, dump=f"{f.path}#{i}"))
    spr = None
    if meta.get("spr") is not None:
        from .registers import SprFormatError, parse

        try:
            spr = parse(meta["spr"], chip_id, dtype)
        except SprFormatError as e:
            raise v.err(e.field, e.reason) from None
    return DumpCase(f.path, i, case, after, compared, error, meta, spr)


def _bytes(v: _V, key: str) -> np.ndarray:
    a = v.f._get(key, v.i)
    if a.dtype != np.uint8 or a.ndim != 1:
        raise v.err(key, f"expected a 1-D uint8 array, got {a.dtype} {a.shape}")
    return a


def _covered(mask: np.ndarray, a: int, n: int) -> bool:
    return bool(mask[a:a + n].all())


def _regions(v: _V, meta: dict, tens: dict, s: int, prof: ChipProfile, growable: bool,
             error: Optional[Code], api: str
             ) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray]:
    regions = meta.get("regions")
    if not isinstance(regions, dict) or not regions:
        raise v.err("meta.regions", "layout \"regions\" needs {name: [addr, nbytes], ...}")
    reg = {}
    for name, r in regions.items():
        if not isinstance(r, list) or len(r) != 2:
            raise v.err(f"meta.regions.{name}", f"{r!r}: expected [addr, nbytes]")
        reg[name] = (v.int_(r[0], f"meta.regions.{name}[0]"),
                     v.int_(r[1], f"meta.regions.{name}[1]"))
    end = max(a + n for a, n in reg.values())
    size = int(meta.get("ub_bytes", prof.ub_bytes))
    if end > size:
        name = max(reg, key=lambda k: sum(reg[k]))
        if not growable:
            raise v.err(f"meta.regions.{name}", f"ends at byte {end}, beyond the UB of "
                                                f"{prof.id} ({size} bytes)")
        size = end
    before = np.zeros(size, np.uint8)
    have_before = np.zeros(size, bool)
    after: Optional[np.ndarray]         # set below
    after_parts = []
    for name, (a, n) in reg.items():
        kb, ka = f"c{v.i}.before.{name}", f"c{v.i}.after.{name}"
        if kb not in v.f.keys and ka not in v.f.keys:
            raise v.err(kb, f"missing (region {name!r} has neither before nor after bytes)")
        if kb in v.f.keys:
            b = _bytes(v, kb)
            if b.size != n:
                raise v.err(kb, f"{b.size} bytes, but meta.regions.{name} says {n}")
            clash = have_before[a:a + n] & (before[a:a + n] != b)
            if clash.any():
                raise v.err(kb, f"disagrees with another region at byte "
                                f"{a + int(np.flatnonzero(clash)[0])}")
            before[a:a + n] = b
            have_before[a:a + n] = True
        if ka in v.f.keys:
            b = _bytes(v, ka)
            if b.size != n:
                raise v.err(ka, f"{b.size} bytes, but meta.regions.{name} says {n}")
            after_parts.append((a, b))
    for k, (a, n) in tens.items():
        if a + n * s > size:
            continue            # the reference reports UB_BOUNDS with the parameter named
        if not _covered(have_before, a, n * s):
            raise v.err("meta.regions", f"tensor {k} [{a}, {a + n * s}) is not covered by the "
                                        f"regions dumped before the call")
    compared = np.zeros(size, bool)
    after = None
    if error is None or after_parts:
        after = before.copy()
        for a, b in after_parts:
            after[a:a + b.size] = b
            compared[a:a + b.size] = True
        outs = [k for k in tens if k != "src"]
        for k in outs:
            a, n = tens[k]
            if a + n * s <= size and not _covered(compared, a, n * s):
                raise v.err("meta.regions", f"tensor {k} [{a}, {a + n * s}) is not covered by the "
                                            f"regions dumped after the call")
    return before, after, compared


__all__ = ["FORMAT", "VERSION", "DumpError", "DumpCase", "DumpFile", "open_dump", "write_dump",
           "write_dumps", "iter_dump_cases", "iter_paths", "case_meta", "tensor_regions"]
