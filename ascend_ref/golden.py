"""Bit-exact golden files for Ascend sample kernels: ``ascend-ref golden KERNEL.toml --out DIR``.

Ascend sample kernels ship a ``gen_data.py`` that makes ``input/*.bin`` with numpy and an
``output/golden.bin`` that the run is compared with, under a tolerance. A short TOML
description of the kernel's reduce calls (API, product, dtype, parameters, an input
generator with a seed) lets this module write the same files **bit-exact**: the inputs come
from numpy's seeded generators exactly as a ``gen_data.py`` would make them, the golden from
the reference. Files are raw little-endian arrays in ``ndarray.tofile`` layout.

The TOML format is specified in ``docs/verify.md``; examples are in ``configs/kernels/``.

>>> import tempfile
>>> from ascend_ref.golden import generate
>>> g = generate("whole_reduce_max_half", tempfile.mkdtemp())
>>> g.golden.dtype.name, g.golden.shape, sorted(g.files)[0].split("/")[-2:]
('float16', (8,), ['input', 'input_x.bin'])
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import mask as masks, registry, spr as sprs
from ._toml import tomllib
from .argtypes import PathLike
from .case import Case, Outcome
from .cli_args import is_path
from .chips import chip as get_chip, chips as all_chips, config_dir
from .constraints import ConstraintError
from .provenance import software
from .ub import ALIASES_TEXT, DTYPES, _converted, dtype_from_text

GENERATORS = ("uniform", "normal", "randint", "constant", "arange", "bits", "values", "file")
_TOP = {"name", "description", "chip", "dtype", "inputs", "output", "calls"}
_INPUT = {"shape", "generator", "seed", "low", "high", "mean", "std", "value", "start", "step",
          "values", "path", "file", "ub_row_stride", "ub_pad"}
_OUTPUT = {"size", "shape", "init", "file"}
_CALL_COMMON = {"api", "src", "src_offset", "dst_offset", "mask", "repeat", "src_rep_stride"}
#: a call's numeric parameters default to the common layout (dense blocks, back-to-back repeats)
_PARAM_DEFAULTS = {"dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}


def _call_keys(ins: registry.Instruction) -> set:
    """Keys a [[calls]] table of ``ins`` may hold: the common ones, its parameters, the
    option keys and ``saturate`` of its family (an error naming the APIs that have them when
    ``ins`` has not) and ``work_size`` when it has a work tensor."""
    family = [i for i in registry.all() if i.family == ins.family]
    keys = _CALL_COMMON | set(ins.params) | {"saturate"}
    keys |= {i.option.key for i in family if i.option is not None}
    if ins.work_need is not None:
        keys.add("work_size")
    return keys


def _only_for() -> dict:
    """Keys that only some APIs take: an error on any other API (never silently ignored)."""
    out: dict = {}
    for i in registry.all():
        if i.option is not None:
            out.setdefault(i.option.key, []).append(i.name)
    out["saturate"] = list(registry.where(lambda i: i.saturating))
    return out


ALIGN = 32


class GoldenError(ValueError):
    """A kernel description that cannot produce golden data: ``file``, ``field``, ``reason``."""

    def __init__(self, file: PathLike, field: str, reason: str) -> None:
        self.file, self.field, self.reason = str(file), field, reason
        super().__init__(f"{self.file}: {field}: {reason}")


# ------------------------------------------------------------------ description ------------

@dataclass
class Input:
    name: str
    shape: tuple
    spec: dict
    file: str
    row_stride: int          # elements between rows in the UB
    pad: Union[int, float]   # the padding lanes' value (one the dtype holds)


@dataclass
class Call:
    api: str
    src: str
    src_offset: int
    dst_offset: int
    mask: Any
    params: dict
    option: Any
    saturate: Optional[bool]
    work_size: Optional[int]


@dataclass
class Read:
    """A reduce special register getter in the call list (``api`` one of
    :data:`ascend_ref.spr.GETTERS`): after call ``after``, the register's value -- and, for
    the max/min register with ``with_index``, the index bits in the next element -- is
    stored into the output at ``dst_offset`` (what a sample kernel does with
    ``dstLocal.SetValue(1, GetReduceRepeatSumSpr<half>())``). ``pos``: its place in the file's
    ``[[calls]]`` list."""

    pos: int
    after: int
    api: str
    dst_offset: int
    with_index: bool


@dataclass
class Kernel:
    """A parsed kernel description (see ``docs/verify.md``)."""

    path: str
    name: str
    description: str
    chip: str
    dtype: str
    inputs: List[Input]
    calls: List[Call]
    out_size: Optional[int]
    out_shape: Optional[tuple]
    out_init: Union[int, float]
    out_file: str
    reads: List[Read] = field(default_factory=list)


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def find_kernel(name_or_path: PathLike) -> Path:
    """A kernel file: a path, or a name without a folder (``.toml`` optional), looked up in
    the current directory, then among the shipped ones (``configs/kernels/``)."""
    if not is_path(name_or_path, allow_bytes=True):
        raise GoldenError(repr(name_or_path), "file", "expected a kernel name (ascend-ref "
                          "golden --list) or a path to a .toml file (str, bytes or os.PathLike)")
    p = Path(os.fsdecode(name_or_path))
    if p.is_file():
        return p
    local = Path(f"{p.name}.toml")              # NAME of ./NAME.toml: before a shipped NAME
    if p.parent == Path(".") and p.suffix != ".toml" and local.exists():
        return local
    if p.parent != Path("."):        # a path with a folder names that file, nothing else
        if p.exists():               # (not a regular one: the reader says so)
            return p
        raise GoldenError(p, "file", "no such file (a shipped kernel is named without a "
                                     "folder: ascend-ref golden --list)")
    for cand in (config_dir() / "kernels" / p.name, config_dir() / "kernels" / f"{p.name}.toml"):
        if cand.exists():
            return cand
    if p.exists():                   # ./NAME, no shipped NAME: not a regular file (the reader)
        return p
    known = sorted(x.stem for x in (config_dir() / "kernels").glob("*.toml"))
    raise GoldenError(p, "file", f"no such kernel description (files, or one of {known})")


def _int(path: PathLike, fld: str, v: Any, lo: int = 0, hi: int = 2**31 - 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise GoldenError(path, fld, f"{v!r} is not an integer")
    if not lo <= v <= hi:
        raise GoldenError(path, fld, f"{v} outside [{lo}, {hi}]")
    return v


def _word(path: PathLike, fld: str, w: Any) -> int:
    if isinstance(w, str):
        try:
            w = int(w, 0)
        except ValueError:
            raise GoldenError(path, fld, f"{w!r} is not an integer (decimal or 0x hex)") from None
    return _int(path, fld, w, 0, 2**64 - 1)


def _shape(path: PathLike, fld: str, shape: Any) -> tuple:
    """A shape: a non-empty list of ints >= 1."""
    if not isinstance(shape, list) or not shape:
        raise GoldenError(path, fld, f"{shape!r}: expected a list of ints")
    return tuple(_int(path, fld, d, 1) for d in shape)


def _held(path: PathLike, fld: str, values: Any, dtype: str) -> np.ndarray:
    """``values`` (a number or a list of them, written in the file) as ``dtype``: integers
    only where every value is a whole number the type holds, floats rounded to the nearest
    but never to an infinity; strings and bools are errors (what ``ascend_ref.store`` takes
    with ``dtype=``). ``-1`` as a uint32 init wrapped to 4294967295 and ``2.5`` as an int32
    truncated to 2 in silence."""
    try:
        return _converted(values, dtype)
    except ConstraintError as e:
        raise GoldenError(path, fld, f"{e.value!r} as {dtype}: expected {e.allowed}") from None


def _unknown(path: PathLike, where: str, got: dict, known: set) -> None:
    bad = sorted(set(got) - known)
    if bad:
        raise GoldenError(path, f"{where}{bad[0]}", f"unknown key (known: {sorted(known)})")


def load_kernel(name_or_path: PathLike) -> Kernel:
    """Parse and check a kernel description (raises :class:`GoldenError`)."""
    path = find_kernel(name_or_path)
    if not path.is_file():
        raise GoldenError(path, "file", "not a regular file")
    try:
        raw = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise GoldenError(path, "file", f"not valid TOML: {e}") from None
    except OSError as e:
        raise GoldenError(path, "file", f"cannot read: {e.strerror or e}") from None
    _unknown(path, "", raw, _TOP)
    for key in ("chip", "dtype", "inputs", "calls"):
        if key not in raw:
            raise GoldenError(path, key, "missing")
    chip_id = raw["chip"]
    if chip_id not in all_chips():
        raise GoldenError(path, "chip", f"unknown product {chip_id!r}; known: {all_chips()}")
    dtype = dtype_from_text(raw["dtype"])
    if dtype is None:
        raise GoldenError(path, "dtype", f"{raw['dtype']!r}; known: {list(DTYPES)} "
                                         f"(or {ALIASES_TEXT})")
    if not isinstance(raw["inputs"], dict) or not raw["inputs"]:
        raise GoldenError(path, "inputs", "expected at least one [inputs.NAME] table")
    inputs = []
    for name, spec in raw["inputs"].items():
        where = f"inputs.{name}."
        if not isinstance(spec, dict):
            raise GoldenError(path, f"inputs.{name}", "expected a table")
        _unknown(path, where, spec, _INPUT)
        gen = spec.get("generator", "uniform")
        if gen not in GENERATORS:
            raise GoldenError(path, where + "generator", f"{gen!r}; known: {list(GENERATORS)}")
        if "shape" not in spec:
            raise GoldenError(path, where + "shape", "missing (a list of ints, e.g. [1024])")
        shape = _shape(path, where + "shape", spec["shape"])
        row = shape[-1]
        stride = _int(path, where + "ub_row_stride", spec.get("ub_row_stride", row), row)
        # its UB image fits the product's UB, before anything is made (a 10^10-element
        # shape was a MemoryError from numpy, or gigabytes made before the UB check)
        ub_bytes = get_chip(chip_id).ub_bytes
        image = math.prod(shape[:-1]) * stride * np.dtype(dtype).itemsize
        if image > ub_bytes:
            raise GoldenError(path, where + ("shape" if stride == row else "ub_row_stride"),
                              f"{list(shape)} with rows {stride} elements apart takes {image} "
                              f"bytes of UB; {chip_id} has {ub_bytes}")
        need = {"uniform": ("low", "high"), "normal": ("mean", "std"), "randint": ("low", "high"),
                "constant": ("value",), "values": ("values",), "file": ("path",)}.get(gen, ())
        for key in need:
            if key not in spec:
                raise GoldenError(path, where + key, f"missing (generator {gen!r} needs "
                                                   f"{list(need)})")
        _numbers(path, where, spec, gen)
        if gen == "file" and (not isinstance(spec["path"], str) or not spec["path"]):
            raise GoldenError(path, where + "path", f"{spec['path']!r}: expected a file name "
                                                   f"(a string; relative to this file)")
        for key in ("value", "values", "ub_pad"):
            if key in spec and (key != "value" or gen == "constant"):
                _held(path, where + key, spec[key], dtype)
        inputs.append(Input(name, shape, dict(spec, generator=gen),
                            _file_name(path, where + "file",
                                       spec.get("file", f"input_{name}.bin")), stride,
                            spec.get("ub_pad", 0)))
    out = raw.get("output", {})
    if not isinstance(out, dict):
        raise GoldenError(path, "output", f"{out!r}: expected a table ([output])")
    _unknown(path, "output.", out, _OUTPUT)
    out_shape = _shape(path, "output.shape", out["shape"]) if "shape" in out else None
    out_size = int(np.prod(out_shape)) if out_shape else None
    if "size" in out:
        out_size = _int(path, "output.size", out["size"], 1)
        if out_shape and int(np.prod(out_shape)) != out_size:
            raise GoldenError(path, "output.shape", f"{list(out_shape)} does not hold "
                                                    f"{out_size} elements")
    calls: List[Call] = []
    if not isinstance(raw["calls"], list) or not raw["calls"]:
        raise GoldenError(path, "calls", "expected at least one [[calls]] table")
    names = [i.name for i in inputs]
    reads: List[Read] = []
    for k, c in enumerate(raw["calls"]):
        where = f"calls[{k}]."
        if not isinstance(c, dict):
            raise GoldenError(path, f"calls[{k}]", f"{c!r}: expected a table ([[calls]])")
        api: Any = c.get("api")
        if isinstance(api, str) and api in sprs.GETTERS:
            _unknown(path, where, c, {"api", "dst_offset"} |
                     ({"with_index"} if sprs.GETTERS[api][2] else set()))
            if not calls:
                raise GoldenError(path, where + "api", f"{api} reads what a reduction left: "
                                                       "it needs a call before it")
            wi = c.get("with_index", True)
            if not isinstance(wi, bool):
                raise GoldenError(path, where + "with_index", f"{wi!r}: true or false")
            reads.append(Read(k, len(calls) - 1, api,
                              _int(path, where + "dst_offset", c.get("dst_offset", 0)),
                              wi and sprs.GETTERS[api][2]))
            continue
        ins = registry.get(api)
        if ins is None:
            raise GoldenError(path, where + "api", f"{api!r}; known: {list(registry.names())} "
                                                   f"and the register getters "
                                                   f"{list(sprs.GETTERS)}")
        _unknown(path, where, c, _call_keys(ins))
        for key, apis in _only_for().items():
            if key in c and api not in apis:
                raise GoldenError(path, where + key, f"{c[key]!r}: {api} has no {key} "
                                                     f"(only {', '.join(apis)})")
        src = c.get("src", names[0] if len(names) == 1 else None)
        if src not in names:
            raise GoldenError(path, where + "src", f"{src!r}: expected one of the inputs {names}")
        for key in ("mask", "repeat"):
            if key not in c and not (key == "mask" and ins.kernel.count_form):
                raise GoldenError(path, where + key, "missing")
        # the level-2 count form has no mask ("repeat" is its count): every lane
        mask = c.get("mask", 256 // np.dtype(dtype).itemsize)
        if isinstance(mask, dict):          # counter mode: mask = { counter = N }
            if set(mask) != {"counter"}:
                raise GoldenError(path, where + "mask", f"{mask!r}: a counter-mode mask is "
                                                        f"{{ counter = N }}")
            mask = masks.CounterMask(_int(path, where + "mask.counter", mask["counter"], 0,
                                          2**64 - 1))
        elif isinstance(mask, list):
            mask = [_word(path, f"{where}mask[{j}]", w) for j, w in enumerate(mask)]
        else:
            mask = _int(path, where + "mask", mask, 0)
        params = {"repeat": _int(path, where + "repeat", c["repeat"])}
        for key in ins.params[1:]:
            params[key] = _int(path, where + key, c.get(key, _PARAM_DEFAULTS[key]))
        option = None
        if ins.option is not None:
            try:
                option = ins.option.normalise(c.get(ins.option.key))
            except ValueError as e:
                raise GoldenError(path, where + ins.option.key, str(e)) from None
        sat = c.get("saturate")
        if sat is not None and not isinstance(sat, bool):
            raise GoldenError(path, where + "saturate", f"{sat!r}: true or false")
        calls.append(Call(api, src, _int(path, where + "src_offset", c.get("src_offset", 0)),
                          _int(path, where + "dst_offset", c.get("dst_offset", 0)), mask, params,
                          option, sat,
                          None if "work_size" not in c
                          else _int(path, where + "work_size", c["work_size"], 1)))
    init = out.get("init", 0)
    if isinstance(init, bool) or not isinstance(init, (int, float)):
        raise GoldenError(path, "output.init", f"{init!r} is not a number")
    return Kernel(str(path), _file_name(path, "name", raw.get("name", path.stem)),
                  raw.get("description", ""), chip_id, dtype, inputs, calls, out_size,
                  out_shape, init, _file_name(path, "output.file",
                                                     out.get("file", "golden.bin")), reads)


def _file_name(path: PathLike, fld: str, v: Any) -> str:
    """A name the kernel's files are written under: a non-empty string naming no folder
    (``"../x"`` would write outside the output folder)."""
    if not isinstance(v, str) or not v or v in (".", "..") or "/" in v or "\\" in v:
        raise GoldenError(path, fld, f"{v!r}: expected a file name without a folder")
    return v


#: the numbers an input's generator and placement read (each a finite int or float)
_NUMBERS = ("low", "high", "mean", "std", "value", "start", "step", "ub_pad")


def _numbers(path: PathLike, where: str, spec: dict, gen: str) -> None:
    """An input's numbers are finite numbers (``low = nan`` was an OverflowError, ``ub_pad =
    "x"`` a ValueError, from numpy), its seed an int in numpy's ``[0, 2**32 - 1]``, a range
    not empty and a spread not negative (they were drawn from in silence)."""
    for key in _NUMBERS:
        v = spec.get(key)
        if key in spec and (isinstance(v, bool) or not isinstance(v, (int, float))
                            or not math.isfinite(v)):
            raise GoldenError(path, where + key, f"{v!r}: expected a finite number")
    if "seed" in spec:
        _int(path, where + "seed", spec["seed"], 0, 2**32 - 1)
    if gen == "randint":
        for key in ("low", "high"):
            _int(path, where + key, spec[key], -(2**63), 2**63 - 1)
    if gen in ("uniform", "randint") and not spec["low"] < spec["high"]:
        raise GoldenError(path, where + "high", f"{spec['high']!r}: expected above low = "
                                                f"{spec['low']!r} (an empty range)")
    if gen == "uniform" and not math.isfinite(float(spec["high"]) - float(spec["low"])):
        raise GoldenError(path, where + "high", f"{spec['high']!r}: high - low = "
                                                f"{spec['high']!r} - {spec['low']!r} is past "
                                                f"the largest float (numpy cannot draw from it)")
    if gen == "normal" and spec["std"] < 0:
        raise GoldenError(path, where + "std", f"{spec['std']!r}: expected >= 0")


# ------------------------------------------------------------------ data -------------------

def make_input(inp: Input, dtype: str, base: Optional[Path] = None) -> np.ndarray:
    """The input array, exactly as a ``gen_data.py`` would make it.

    ``uniform``: ``np.random.seed(seed); np.random.uniform(low, high, shape).astype(dtype)``
    (numpy's legacy global generator, which ``np.random.RandomState(seed)`` reproduces);
    likewise ``normal`` (mean, std) and ``randint`` (low, high exclusive). ``bits``: random raw
    bit patterns (every value, NaN and inf included). ``constant``, ``arange`` (start, step),
    ``values`` (a list), ``file`` (a raw ``.bin`` next to the TOML).
    """
    sp, shape = inp.spec, inp.shape
    g = sp["generator"]
    rs = np.random.RandomState(int(sp.get("seed", 0)))
    n = int(np.prod(shape))
    x: np.ndarray
    if g == "uniform":
        x = rs.uniform(sp["low"], sp["high"], shape)
    elif g == "normal":
        x = rs.normal(sp["mean"], sp["std"], shape)
    elif g == "randint":
        x = rs.randint(sp["low"], sp["high"], shape)
    elif g == "constant":
        x = np.full(shape, sp["value"])
    elif g == "arange":
        x = (sp.get("start", 0) + sp.get("step", 1) * np.arange(n)).reshape(shape)
    elif g == "bits":
        s = np.dtype(dtype).itemsize
        return rs.randint(0, 2 ** (8 * s), shape, dtype=np.uint64).astype(
            f"uint{8 * s}").view(dtype)
    elif g == "values":
        x = np.asarray(sp["values"])
        if x.size != n:
            raise ValueError(f"inputs.{inp.name}.values: {x.size} values for shape {list(shape)}")
        x = x.reshape(shape)
    else:  # file
        p = Path(sp["path"])
        if not p.is_absolute() and base is not None:
            p = base / p
        x = np.fromfile(p, dtype=np.dtype(dtype).newbyteorder("<"))
        if x.size != n:
            raise ValueError(f"inputs.{inp.name}.path: {p} holds {x.size} elements, shape "
                             f"{list(shape)} needs {n}")
        x = x.reshape(shape)
    return x.astype(dtype)


# ------------------------------------------------------------------ the calls ---------------

@dataclass
class Golden:
    """What :func:`generate` produced."""

    kernel: Kernel
    inputs: Dict[str, np.ndarray]
    golden: np.ndarray
    cases: List[Case]
    outcomes: List[Outcome]
    files: List[str] = field(default_factory=list)
    #: ``DIR/golden.json``: what made the files (:func:`write_manifest`)
    manifest: Optional[str] = None


def _dst_bytes(call: Call, dtype: str) -> int:
    """Bytes from dst to the end of the last slot the call writes."""
    lay = registry.lookup(call.api).layout(dtype, call.option)
    repeat = call.params["repeat"]
    if isinstance(call.mask, masks.CounterMask):      # counter mode: the count decides
        repeat = masks.counter_repeats(int(call.mask.count), masks.lanes_per_repeat(dtype))
    return lay.dst_bytes(repeat, call.params.get("dst_rep_stride", 1))


def _work_need(call: Call, dtype: str) -> int:
    ins = registry.lookup(call.api)
    return ins.work_elements(max(call.params["repeat"], 1), call.option, dtype)


def out_dtype(k: Kernel) -> str:
    """The output's element type: what the calls write to dst (the kernel's dtype, or the
    type the products pair with it: an int16 Ascend 950 ReduceRepeat<SUM> writes int32)."""
    types = {registry.lookup(c.api).tensor_dtype("dst", k.dtype) for c in k.calls}
    if len(types) != 1:
        raise GoldenError(k.path, "calls", f"the calls write dst types {sorted(types)}; one "
                                           "output holds one type")
    return types.pop()


def kernel_cases(kernel: Union[Kernel, PathLike]
                 ) -> Tuple[List[Case], List[Outcome], Dict[str, np.ndarray],
                            Dict[str, Tuple[int, int]], int]:
    """The kernel as reference calls: ``(cases, outcomes, inputs, layout, out_size)``.

    Each :class:`~ascend_ref.case.Case` holds the UB before its call (the previous call's UB
    after); ``layout`` maps ``input:NAME``, ``output`` and ``work:K`` to ``(addr, nbytes)``.
    Raises :class:`GoldenError` when a call is outside the documented range.
    """
    return _run_kernel(kernel)[:5]


def _read_words(k: Kernel, rd: Read, state: Any) -> bytes:
    """The bytes a register getter stores (value, then the index bits with ``with_index``)."""
    fn, _, takes_index = sprs.GETTERS[rd.api]
    try:
        got = fn(state, k.dtype, chip=k.chip, **({"with_index": rd.with_index}
                                                 if takes_index else {}))
    except ConstraintError as e:
        raise GoldenError(k.path, f"calls[{rd.pos}]", str(e)) from None
    words = list(got) if isinstance(got, tuple) else [got]
    bits = np.uint16 if np.dtype(k.dtype).itemsize == 2 else np.uint32
    out = [np.asarray(words[0]).view(bits)] + [np.asarray(w).astype(bits) for w in words[1:]]
    return np.array(out, bits).astype(np.dtype(bits).newbyteorder("<")).tobytes()


def _run_kernel(kernel: Union[Kernel, PathLike]
                ) -> Tuple[List[Case], List[Outcome], Dict[str, np.ndarray],
                           Dict[str, Tuple[int, int]], int, np.ndarray]:
    """:func:`kernel_cases` and the UB after the whole kernel (the getters' stores in it)."""
    from .batch import run_cases
    from .case import JAX

    k = kernel if isinstance(kernel, Kernel) else load_kernel(kernel)
    prof = get_chip(k.chip)
    s = np.dtype(k.dtype).itemsize
    od = out_dtype(k)
    os_ = np.dtype(od).itemsize           # output elements (dst_offset, output.size) in od
    base = Path(k.path).parent
    layout: Dict[str, tuple] = {}
    cursor = 0
    inputs: Dict[str, np.ndarray] = {}
    images = []
    for inp in k.inputs:
        try:
            x = make_input(inp, k.dtype, base)
        except (ValueError, OSError) as e:
            raise GoldenError(k.path, f"inputs.{inp.name}", str(e)) from None
        inputs[inp.name] = x
        rows = int(np.prod(inp.shape[:-1])) if len(inp.shape) > 1 else 1
        img = np.full((rows, inp.row_stride), _held(k.path, f"inputs.{inp.name}.ub_pad",
                                                     inp.pad, k.dtype))
        img[:, :inp.shape[-1]] = x.reshape(rows, inp.shape[-1])
        nbytes = img.size * s
        layout[f"input:{inp.name}"] = (cursor, nbytes)
        images.append((cursor, img))
        cursor = _round_up(cursor + nbytes, ALIGN)
    # the bytes each call (and each register getter) writes from the output's start
    getters = {rd.pos for rd in k.reads}                  # [[calls]] places of the getters
    places = [j for j in range(len(k.calls) + len(k.reads)) if j not in getters]
    ends = [(c.dst_offset * os_ + _dst_bytes(c, k.dtype), j) for j, c in zip(places, k.calls)]
    for rd in k.reads:
        if od != k.dtype:
            raise GoldenError(k.path, f"calls[{rd.pos}].api", f"the output holds {od}; "
                                                              f"{rd.api} reads {k.dtype}")
        ends.append(((rd.dst_offset + 1 + int(rd.with_index)) * os_, rd.pos))
    need, last = max(ends)
    if k.out_size is not None and k.out_size * os_ < need:
        # golden.bin would hold only the first out_size elements: the rest of what the
        # calls write would be dropped without a word
        fld = "output.shape" if k.out_shape else "output.size"
        given = list(k.out_shape) if k.out_shape else k.out_size
        n = -(-need // os_)
        raise GoldenError(k.path, fld, f"{given} holds {k.out_size} {od} elements, but "
                                       f"calls[{last}] writes into the output's first {n}: "
                                       f"make it at least {n} elements, or leave it out (the "
                                       f"output then ends at the last element written)")
    out_size = k.out_size if k.out_size is not None else _round_up(need, os_) // os_
    out_bytes = _round_up(max(need, out_size * os_), ALIGN)
    layout["output"] = (cursor, out_bytes)
    out_addr = cursor
    cursor += out_bytes
    for i, c in enumerate(k.calls):
        if "work_tensor" in registry.lookup(c.api).operands:
            n = c.work_size if c.work_size is not None else _work_need(c, k.dtype)
            layout[f"work:{i}"] = (cursor, n * s)
            cursor = _round_up(cursor + n * s, ALIGN)
    if cursor > prof.ub_bytes:
        raise GoldenError(k.path, "inputs", f"the tensors need {cursor} bytes of UB, more than "
                                            f"{k.chip} has ({prof.ub_bytes})")
    ub: np.ndarray = np.zeros(prof.ub_bytes, np.uint8)
    for a, img in images:
        ub[a:a + img.size * s] = np.ascontiguousarray(img.astype(np.dtype(k.dtype).newbyteorder("<"))).view(np.uint8).ravel()
    init = np.full(out_bytes // os_, _held(k.path, "output.init", k.out_init, od))
    ub[out_addr:out_addr + out_bytes] = init.view(np.uint8)
    cases, outs = [], []
    state = sprs.ReduceSpr()
    for i, c in enumerate(k.calls):
        ia, inb = layout[f"input:{c.src}"]
        if c.src_offset * s >= inb:
            raise GoldenError(k.path, f"calls[{i}].src_offset", f"{c.src_offset} is past the end "
                                                                f"of input {c.src}")
        tensors = {"dst": (out_addr + c.dst_offset * os_, out_bytes // os_ - c.dst_offset),
                   "src": (ia + c.src_offset * s, inb // s - c.src_offset)}
        if "work_tensor" in registry.lookup(c.api).operands:
            wa, wn = layout[f"work:{i}"]
            tensors["work_tensor"] = (wa, wn // s)
        case = Case(c.api, k.chip, k.dtype, c.option, c.mask, dict(c.params), tensors, ub,
                    c.saturate, {"kernel": k.name, "call": i})
        cases.append(case)
        o = run_cases([case])[0]
        if o.code is not None:
            from .verify.run import _field_of, constraint_error

            err = constraint_error(case)
            fld = _field_of(err.param).replace("meta.params.", "").replace("meta.", "") \
                if err else "?"
            raise GoldenError(k.path, f"calls[{i}].{fld}", str(err) if err else o.code.name)
        outs.append(o)
        ub = np.asarray(o.ub).copy()
        if k.reads:                         # the registers after the call, then the getters
            state = case.call(JAX, return_info=True, spr=state)[1].spr
            o.spr = state                   # (the dumps record them: docs/verify.md §1c)
            for rd in (r for r in k.reads if r.after == i):
                data = _read_words(k, rd, state)
                at = out_addr + rd.dst_offset * os_
                ub[at:at + len(data)] = np.frombuffer(data, np.uint8)
    return cases, outs, inputs, layout, out_size, ub


def generate(kernel: Union[Kernel, PathLike], out_dir: PathLike, *,
             dumps: bool = False, stacked: bool = False) -> Golden:
    """Write ``out_dir/input/*.bin`` and ``out_dir/output/golden.bin`` for ``kernel``.

    ``kernel`` is a :class:`Kernel`, a TOML path or the name of a file in
    ``configs/kernels/``. ``dumps=True`` also writes ``out_dir/dumps/<name>.npz``: the calls
    as a dump file with the reference's results (``ascend-ref verify`` input; replace the
    ``ub_after`` arrays with what a device wrote); ``stacked`` -- that file in the stacked
    layout (format version 2, the tensors' regions, docs/verify.md §1b).
    """
    if stacked and not dumps:
        raise ValueError("stacked=True is the layout of the dump file: only with dumps=True")
    if not is_path(out_dir):
        raise ValueError(f"out_dir = {out_dir!r}: expected the folder to write into (a "
                         f"non-empty str or os.PathLike)")
    k = kernel if isinstance(kernel, Kernel) else load_kernel(kernel)
    cases, outs, inputs, layout, out_size, final = _run_kernel(k)
    od = out_dtype(k)
    s = np.dtype(od).itemsize
    out_addr = layout["output"][0]
    le = np.dtype(od).newbyteorder("<")
    golden = final[out_addr:out_addr + out_size * s].copy().view(le).astype(od)
    if k.out_shape:
        golden = golden.reshape(k.out_shape)
    out = Path(out_dir)
    (out / "input").mkdir(parents=True, exist_ok=True)
    (out / "output").mkdir(parents=True, exist_ok=True)
    files = []
    ile = np.dtype(k.dtype).newbyteorder("<")        # the inputs' type (the source's)
    for inp in k.inputs:
        p = out / "input" / inp.file
        inputs[inp.name].astype(ile).tofile(p)
        files.append(str(p))
    p = out / "output" / k.out_file
    golden.astype(le).tofile(p)
    files.append(str(p))
    if dumps:
        from .verify import write_dumps

        (out / "dumps").mkdir(exist_ok=True)
        p = out / "dumps" / f"{k.name}.npz"
        regs = None
        if any(o.spr is not None for o in outs):   # a kernel that reads the registers
            from .verify.registers import dump_of

            regs, prev = [], sprs.ReduceSpr()
            for i, o in enumerate(outs):
                regs.append(dump_of(prev, o.spr, k.chip, first=i == 0))
                prev = o.spr
        if stacked:
            write_dumps(p, cases, [o.ub for o in outs], regions="tensors", stacked=True,
                        sprs=regs)
        else:
            write_dumps(p, cases, [o.ub for o in outs], sprs=regs)
        files.append(str(p))
    return Golden(k, inputs, golden, cases, outs, files, write_manifest(k, out, files))


def _sha256(path: PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_manifest(k: Kernel, out: Path, files: List[str]) -> str:
    """Write ``out/golden.json``: the kernel description (name, file, its SHA-256), the
    software that computed the files (:func:`ascend_ref.provenance.software`) and each file's
    SHA-256 by its path under ``out``; returns its path. It sits beside ``input/`` and
    ``output/``, not in them (tools that take every file there see what a ``gen_data.py``
    makes)."""
    src = Path(k.path) if k.path else None
    manifest = {
        "kernel": {"name": k.name, "file": k.path,
                   "sha256": _sha256(src) if src is not None and src.is_file() else None},
        "software": software(backend=True),
        "files": {Path(f).relative_to(out).as_posix(): _sha256(f) for f in files},
    }
    p = out / "golden.json"
    p.write_text(json.dumps(manifest, indent=1) + "\n")
    return str(p)


# ------------------------------------------------------------------ CLI --------------------

def register(sub: Any) -> None:    # argparse's sub-parsers action
    p = sub.add_parser(
        "golden", help="write bit-exact input/*.bin and output/golden.bin for a sample kernel",
        description="From a kernel description (TOML: product, dtype, inputs with a seeded "
                    "generator, the reduce calls), write DIR/input/*.bin and "
                    "DIR/output/golden.bin (raw little-endian, ndarray.tofile layout), "
                    "bit-exact. KERNEL is a path, or a name: ./NAME.toml if there is one, "
                    "else the shipped kernel of that name (--list). "
                    "Format: docs/verify.md.")
    p.add_argument("kernel", nargs="?", metavar="KERNEL.toml")
    p.add_argument("--out", metavar="DIR", help="output folder (default: ./golden/<name>)")
    p.add_argument("--dumps", action="store_true",
                   help="also write DIR/dumps/<name>.npz (the calls as a dump file)")
    p.add_argument("--stacked", action="store_true",
                   help="with --dumps: the stacked layout (format version 2, tensor regions; "
                        "docs/verify.md)")
    p.add_argument("--list", action="store_true", help="list the kernels in configs/kernels/")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    extra = [f for f, v in (("KERNEL", args.kernel), ("--out", args.out),
                            ("--dumps", args.dumps), ("--stacked", args.stacked)) if v]
    bad = (f"--list takes no {extra[0]}" if args.list and extra
           else "--stacked is for --dumps (the layout of the dump file)"
           if args.stacked and not args.dumps else None)
    if bad is not None:
        print(f"ascend-ref golden: {bad}", file=sys.stderr)
        return 2
    if not args.kernel and not args.list:
        print("ascend-ref golden: give a KERNEL (a name below or a .toml path), or --list",
              file=sys.stderr)
    if args.list or not args.kernel:
        for f in sorted((config_dir() / "kernels").glob("*.toml")):
            try:
                k = load_kernel(f)
                print(f"{f.stem:<32} {k.description}")
            except GoldenError as e:
                print(f"{f.stem:<32} (broken: {e})")
        return 0 if args.list else 2
    try:
        k = load_kernel(args.kernel)
        out = args.out or os.path.join("golden", k.name)
        g = generate(k, out, dumps=args.dumps, stacked=args.stacked)
    except (GoldenError, ConstraintError) as e:
        print(f"ascend-ref golden: {e}", file=sys.stderr)
        return 1
    except OSError as e:                 # --out not writable: a file, /dev/null, read-only
        where = e.filename or args.out
        print(f"ascend-ref golden: cannot write the output to {where}: {e.strerror or e} "
              f"(give a writable --out DIR)", file=sys.stderr)
        return 2
    print(f"{k.name} ({k.path}): {len(k.calls)} call(s) on {k.chip}, {k.dtype}")
    for name, x in g.inputs.items():
        print(f"  input  {name}: shape {list(x.shape)}")
    print(f"  golden: shape {list(g.golden.shape)}")
    for written in g.files:
        print(f"  wrote {written} ({os.path.getsize(written)} bytes)")
    print(f"  wrote {g.manifest} (the kernel, the software and each file's SHA-256)")
    return 0


__all__ = ["load_kernel", "find_kernel", "generate", "kernel_cases", "make_input", "Kernel",
           "Golden", "GoldenError", "register"]
