"""Scalar oracle: the reduction APIs as literal loops over repeats and lanes.

Written from ``shared/SPEC.md`` and ``docs/SEMANTICS.md`` only; it shares no code with the
vectorised implementation (it imports nothing but the error codes; its product facts are
its own table, :mod:`ascend_ref.oracle._products`).
Every validity rule is evaluated, and the lowest failing code number is raised, before
anything is computed; the only data-dependent error (INDEX_OVERFLOW) is raised after
computing, with nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ascend_ref.constraints import Code

from . import _fp
from ._products import PRODUCTS, Product as ChipProfile, product as _chip_lookup

BLOCK = 32            # bytes per DataBlock
REPEAT_BYTES = 256    # bytes per repeat (8 DataBlocks)
STRIDE_MAX = 65535
U64_MAX = (1 << 64) - 1
_CANONICAL = ("float16", "float32", "int16", "uint16", "int32", "uint32")
_ALIASES = {"half": "float16", "float": "float32"}
_ORDERS = ("ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE", "ORDER_ONLY_VALUE", "ORDER_ONLY_INDEX")
_REDUCE_TYPES = ("SUM", "MAX", "MIN")


# ====================================================================== results, errors

class OracleError(Exception):
    """A documented constraint is violated; ``code`` is an :class:`ascend_ref.constraints.Code`."""

    def __init__(self, code: Code, message: str = "", *, all_failures=()) -> None:
        self.code = Code(code)
        self.failures = tuple(all_failures)   # every (code, message) found, for debugging
        super().__init__(f"[{self.code.name}] {message}")


@dataclass
class OracleResult:
    ub: np.ndarray          # uint8, the UB after the call
    written: np.ndarray     # bool, bytes written with a defined value
    undefined: np.ndarray   # bool, bytes whose content the documentation does not define


class _Failures:
    """Collects every failing rule; raises the one with the lowest code number."""

    def __init__(self, api: str, chip_id: str) -> None:
        self.api, self.chip_id = api, chip_id
        self.items: List[Tuple[Code, str]] = []

    def add(self, code: Code, msg: str) -> None:
        self.items.append((Code(code), msg))

    def raise_first(self) -> None:
        if self.items:
            code, msg = min(self.items, key=lambda cm: int(cm[0]))  # stable: first listed on ties
            raise OracleError(code, f"{self.api} on {self.chip_id}: {msg}",
                              all_failures=self.items)


# ====================================================================== argument parsing

def _as_int(x: Any) -> Optional[int]:
    """A Python / numpy integer (not a bool), or a 0-d integer array -- numpy's or any other
    array library's, read through ``__array__`` (a concrete JAX scalar) -- as int, else
    None."""
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    if not isinstance(x, np.ndarray) and hasattr(x, "__array__") and \
            getattr(x, "shape", None) == ():
        try:
            x = np.asarray(x)
        except Exception:  # a value with no concrete number (a tracer): not an int
            return None
    if isinstance(x, np.ndarray) and x.ndim == 0 and np.issubdtype(x.dtype, np.integer):
        return int(x)
    return None


def _as_bool(x: Any) -> Optional[bool]:
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    i = _as_int(x)
    if i in (0, 1):
        return bool(i)
    return None


def _as_switch(x: Any) -> Optional[bool]:
    """``saturate``: what :func:`_as_bool` takes, or a 0-d bool array (numpy's or JAX's,
    concrete), as docs/arguments.md allows for it (``cal_index`` does not take one)."""
    if getattr(x, "shape", None) == () and hasattr(x, "__array__") and \
            not isinstance(x, np.generic):
        try:
            a = np.asarray(x)
        except Exception:  # a tracer: no concrete value
            return None
        if a.dtype == np.bool_:
            return bool(a)
    return _as_bool(x)


def _resolve_chip(chip: Any, api: str) -> ChipProfile:
    try:
        return _chip_lookup(chip)
    except Exception:  # an unknown id, or an unhashable argument
        msg = f"{api}: chip = {chip!r} has no row in the oracle's product table; " \
              f"one of {sorted(PRODUCTS)}"
        raise OracleError(Code.CHIP_UNKNOWN, msg,
                          all_failures=[(Code.CHIP_UNKNOWN, msg)]) from None


def _parse_ub(fails: _Failures, ub: Any) -> Optional[np.ndarray]:
    arr = ub if isinstance(ub, np.ndarray) else None
    if arr is None:
        try:
            arr = np.asarray(ub)
        except Exception:
            arr = None
    if arr is None or arr.ndim != 1 or arr.dtype != np.uint8:
        fails.add(Code.BAD_ARGUMENT, f"ub must be a 1-D uint8 array, got {type(ub).__name__}")
        return None
    return np.array(arr, dtype=np.uint8, copy=True)


@dataclass(frozen=True)
class _T:
    """A parsed operand. ``dtype`` is canonical or the raw name; ``fmt`` None if unknown."""

    name: str
    addr: int
    dtype: str
    size: int
    fmt: Optional[_fp.Fmt]

    @property
    def nbytes(self) -> Optional[int]:
        return None if self.fmt is None else self.size * self.fmt.size

    @property
    def end(self) -> Optional[int]:
        return None if self.fmt is None else self.addr + self.nbytes


def _dtype_name(d: Any) -> str:
    if isinstance(d, str) and d in _ALIASES:
        return _ALIASES[d]
    try:
        return np.dtype(d).name
    except Exception:
        return str(d)


def _parse_same_type(fails: _Failures, supported: Sequence[str],
                     named: Sequence[Tuple[str, Any]], rule: str) -> List[Optional[_T]]:
    """Parse operands that share one element type: each must be a Tensor of a dtype the
    product lists (DTYPE_UNSUPPORTED), and all the same dtype (DTYPE_MISMATCH, ``rule``)."""
    tensors = [_parse_tensor(fails, name, t) for name, t in named]
    for t in tensors:
        if t is not None and supported and t.dtype not in supported:
            fails.add(Code.DTYPE_UNSUPPORTED, f"{t.name}.dtype = {t.dtype}; allowed {list(supported)}")
    known = [t for t in tensors if t is not None]
    if len({t.dtype for t in known}) > 1:
        fails.add(Code.DTYPE_MISMATCH, f"{rule}, got "
                                       + ", ".join(f"{t.name}={t.dtype}" for t in known))
    return tensors


def _level2_operands(fails: _Failures, supported: Any, prof: Any, kind: str, dst: Any, src: Any,
                     tmp: Any, cal_index: Any, saturate: Any) -> tuple:
    """Both level-2 forms: dst, src and sharedTmpBuffer of one type T (its format, L, epb),
    calIndex a bool, ``saturate`` for ReduceSum."""
    d, s, w = _parse_same_type(fails, supported, (("dst", dst), ("src", src),
                                                  ("shared_tmp_buffer", tmp)),
                               "dst, src and sharedTmpBuffer share the type T")
    fmt = s.fmt if s is not None else None
    L = None if fmt is None else REPEAT_BYTES // fmt.size
    epb = None if fmt is None else BLOCK // fmt.size
    ci = _as_bool(cal_index)
    if ci is None:
        fails.add(Code.BAD_ARGUMENT, f"calIndex must be a bool, got {cal_index!r}")
    sat = False
    if kind == "SUM":
        sat, _ = _parse_saturate(fails, saturate, prof, fmt)
    return d, s, w, fmt, L, epb, ci, sat


def _level2_align(fails: _Failures, fmt: Any, ci: Any, d: Any, s: Any, w: Any) -> None:
    """Both level-2 forms: src and sharedTmpBuffer 32 B; dst per ReduceRepeat table 3
    ([value, index] 2*size with calIndex, [value] size without; SUM: size)."""
    if fmt is not None and ci is not None:
        for t, need in ((d, fmt.size * (2 if ci else 1)), (s, BLOCK), (w, BLOCK)):
            if t is not None and t.addr % need:
                fails.add(Code.ALIGN, f"{t.name}.addr = {t.addr} not {need}-byte aligned")


def _parse_tensor(fails: _Failures, name: str, t: Any) -> Optional[_T]:
    try:
        addr, dtype, size = t.addr, t.dtype, t.size
    except AttributeError:
        fails.add(Code.BAD_ARGUMENT, f"{name} must have .addr, .dtype and .size, got {t!r}")
        return None
    a, s = _as_int(addr), _as_int(size)
    if a is None or s is None or a < 0 or s < 0:
        fails.add(Code.BAD_ARGUMENT, f"{name}.addr / {name}.size must be non-negative ints, "
                                     f"got {addr!r} / {size!r}")
        return None
    dn = _dtype_name(dtype)
    return _T(name, a, dn, s, _fp.FORMATS.get(dn))


def _parse_name(x: Any, known: Tuple[str, ...] = ()) -> Optional[str]:
    """An option's name: a member's ``name``, or a string spelled as the public functions
    take it (any case, an ``Enum.`` prefix, an order without its ``ORDER_`` prefix)."""
    if isinstance(x, str):
        n: Any = x.split(".")[-1].upper()
        return f"ORDER_{n}" if n not in known and f"ORDER_{n}" in known else n
    n = getattr(x, "name", None)
    return n if isinstance(n, str) else None


def _parse_mask(fails: _Failures, mask: Any, lanes_per_repeat: Optional[int],
                style: str) -> Optional[List[int]]:
    """Participating lanes (sorted), ``[]`` for an all-zero mask, None when invalid.

    ``style`` "ascendc" (words [lanes 0-63, lanes 64-127]) or "tik" ([mask_h, mask_l]).
    A uint32 array of shape (4,) holds lane words, lanes 0-31 first (both styles).
    """
    L = lanes_per_repeat
    words: Optional[List[int]] = None
    lane_words: Optional[List[int]] = None
    cont: Optional[int] = None
    if isinstance(mask, (list, tuple)):
        ws = [_as_int(w) for w in mask]
        if any(w is None for w in ws):
            fails.add(Code.BAD_ARGUMENT, f"mask words must be ints, got {mask!r}")
            return None
        words = ws
    elif _as_int(mask) is not None:
        cont = _as_int(mask)
    elif isinstance(mask, np.ndarray) or (hasattr(mask, "__array__") and not isinstance(mask, (str, bytes))):
        try:
            arr = np.asarray(mask)
        except Exception:
            arr = None
        if arr is None or not np.issubdtype(arr.dtype, np.integer) or arr.ndim > 1:
            fails.add(Code.BAD_ARGUMENT, f"mask must be an int or a list of ints, got {mask!r}")
            return None
        if arr.ndim == 0:
            cont = int(arr)
        elif arr.shape == (4,):        # lane words, of any integer dtype (arguments.md)
            lane_words = [int(w) for w in arr]
            if any(w < 0 or w > 0xFFFFFFFF for w in lane_words):
                fails.add(Code.MASK_BITS, f"mask lane words {lane_words}: each must be in "
                                          f"[0, 2^32-1]")
                return None
        else:
            words = [int(w) for w in arr]
    else:
        fails.add(Code.BAD_ARGUMENT, f"mask must be an int or a list of ints, got {mask!r}")
        return None

    if L is None:          # the element type is unknown: nothing more can be checked
        return None

    if cont is not None:
        if cont < 0 or cont > L:
            fails.add(Code.MASK_RANGE, f"mask = {cont} outside [1, {L}] (0: product's zero-mask rule)")
            return None
        return list(range(cont))

    if lane_words is not None:
        if L == 64 and (lane_words[2] or lane_words[3]):
            fails.add(Code.MASK_BITS, f"mask lane words {lane_words}: lanes 64-127 do not exist "
                                      f"for 32-bit types")
            return None
        lanes = []
        for k, w in enumerate(lane_words):
            for j in range(32):
                if (w >> j) & 1:
                    lanes.append(32 * k + j)
        return lanes

    assert words is not None
    if any(w < 0 or w > U64_MAX for w in words):
        fails.add(Code.MASK_BITS, f"mask words {words}: each must be in [0, 2^64-1]")
        return None
    if style == "ascendc":
        if L == 128:
            if len(words) != 2:
                fails.add(Code.MASK_BITS, f"mask {words}: 16-bit types need exactly 2 words")
                return None
            return _fp.lanes_from_words(words)
        if len(words) == 1 or (len(words) == 2 and words[1] == 0):
            return _fp.lanes_from_words(words[:1])
        fails.add(Code.MASK_BITS, f"mask {words}: 32-bit types take 1 word (or 2 with the second 0)")
        return None
    # TIK: [mask_h, mask_l]
    if len(words) != 2:
        fails.add(Code.MASK_BITS, f"mask {words}: TIK bit mode needs exactly [mask_h, mask_l]")
        return None
    mask_h, mask_l = words
    if L == 64 and mask_h != 0:
        fails.add(Code.MASK_BITS, f"mask {words}: mask_h must be 0 for 32-bit types")
        return None
    return _fp.lanes_from_words([mask_l, mask_h])


def _check_ub_bounds(fails: _Failures, prof: ChipProfile, ub: Optional[np.ndarray],
                     tensors: List[Optional[_T]]) -> None:
    for t in tensors:
        if t is None or t.fmt is None:
            continue
        if t.end > prof.ub_bytes:
            fails.add(Code.UB_BOUNDS, f"{t.name} extent [{t.addr}, {t.end}) leaves the product UB "
                                      f"({prof.ub_bytes} bytes)")
        if ub is not None and t.end > len(ub):
            fails.add(Code.UB_BOUNDS, f"{t.name} extent [{t.addr}, {t.end}) leaves the ub array "
                                      f"({len(ub)} bytes)")


def _read(ub: np.ndarray, addr: int, n: int) -> int:
    return int.from_bytes(ub[addr:addr + n].tobytes(), "little")


class _Writer:
    """Applies writes in program order and keeps the written / undefined byte masks."""

    def __init__(self, ub: np.ndarray) -> None:
        self.ub = ub
        self.written = np.zeros(len(ub), dtype=bool)
        self.undefined = np.zeros(len(ub), dtype=bool)

    def write(self, addr: int, n: int, value: int) -> None:
        self.ub[addr:addr + n] = np.frombuffer((value & ((1 << (8 * n)) - 1)).to_bytes(n, "little"),
                                               dtype=np.uint8)
        self.written[addr:addr + n] = True
        self.undefined[addr:addr + n] = False

    def undef(self, addr: int, n: int) -> None:
        self.written[addr:addr + n] = False
        self.undefined[addr:addr + n] = True

    def result(self) -> OracleResult:
        return OracleResult(self.ub, self.written, self.undefined)


# ====================================================================== Ascend C

def _ascendc(api: str, kind: str, ub, dst, src, mask, repeat_time, dst_rep_stride,
             src_blk_stride, src_rep_stride, chip, *, order=None, reduce_type=None,
             saturate=None, minmax: str = "", table_api: Optional[str] = None,
             continuous_only: bool = False, tik: bool = False,
             index_low: Any = False) -> OracleResult:
    """kind: "whole_minmax" | "whole_sum" | "block" | "pair". ``api`` names the call in
    messages; ``table_api`` (default ``api``) is its row in the product table (an alias
    shares the row of the API it renames). ``tik``: the TIK form (vcadd, vcmax, ...,
    SEMANTICS §T): ``[mask_h, mask_l]`` words, repeat_times in [1, 255], no counter mode,
    dst and src 32-byte aligned, vcmax / vcmin's order from ``index_low``."""
    prof = _resolve_chip(chip, api)
    fails = _Failures(api, prof.id)
    ubarr = _parse_ub(fails, ub)

    supported = prof.dtypes(table_api or api)
    if not supported:
        fails.add(Code.API_UNSUPPORTED, f"{api} does not exist on {prof.id}")

    d = _parse_tensor(fails, "dst", dst)
    s = _parse_tensor(fails, "src", src)
    # the documented (dst T, src U) pairs (Ascend 950 ReduceRepeat<SUM>: int32 <- int16 /
    # int32, uint32 <- uint16 / uint32); every other pair: dst and src of one type
    pairs = dict(getattr(prof, "dst_dtypes", {}).get(table_api or api, {}))
    for t in (d, s):
        ok = list(supported) + ([v for v in pairs.values() if v not in supported]
                                if t is d else [])
        if t is not None and supported and t.dtype not in ok:
            fails.add(Code.DTYPE_UNSUPPORTED, f"{t.name}.dtype = {t.dtype}; allowed {ok}")
    if d is not None and s is not None and d.dtype != pairs.get(s.dtype, s.dtype):
        fails.add(Code.DTYPE_MISMATCH, f"src.dtype = {s.dtype} but dst.dtype = {d.dtype}; "
                                       f"allowed {pairs.get(s.dtype, s.dtype)}")
    counter = _is_counter(mask)
    if tik and counter:
        fails.add(Code.MASK_MODE, "no TIK source documents a counter mask mode for the vc* "
                                  "instructions")
        fails.raise_first()
    if continuous_only and not counter and not (_as_int(mask) is not None
                                                and not isinstance(mask, bool)):
        # RepeatReduceSum takes ``const int32_t mask`` only ("不支持mask逐bit模式"): a list is
        # a malformed argument, reported with what was found so far
        fails.add(Code.BAD_ARGUMENT, f"mask must be an int (continuous mode only), got {mask!r}")
        fails.raise_first()
    fmt = s.fmt if s is not None else None            # the computation type
    L = None if fmt is None else REPEAT_BYTES // fmt.size
    epb = None if fmt is None else BLOCK // fmt.size

    # -- order / reduce_type / saturate
    order_name = None
    if kind == "whole_minmax" and tik:
        # index_low=True: [index, value] (the TIK docstring), unless the product's row says
        # the flag is ignored (tik_index_low; the 2020 TIK source sends the order bits on
        # HI3796CV300ES / 610 / 620 only)
        order_name = ("ORDER_INDEX_VALUE" if index_low is True
                      and prof.tik_index_low == "index_value" else "ORDER_VALUE_INDEX")
    elif kind == "whole_minmax":
        order_name = _parse_name(order, _ORDERS)
        if order_name is None:
            fails.add(Code.BAD_ARGUMENT, f"order must be a ReduceOrder name or member, got {order!r}")
        elif order_name not in prof.orders:
            fails.add(Code.ORDER_UNSUPPORTED, f"order = {order_name}; allowed {list(prof.orders)}")
            order_name = None
    rtype = None
    if kind in ("block", "pair") and _parse_name(reduce_type) is None:
        # neither a name nor a member (an int, None, bytes): a malformed argument, as order
        fails.add(Code.BAD_ARGUMENT,
                  f"reduce_type must be a ReduceType name or member, got {reduce_type!r}")
    elif kind == "block":
        rtype = _parse_name(reduce_type)
        if rtype not in _REDUCE_TYPES:
            fails.add(Code.REDUCE_TYPE, f"reduce_type = {reduce_type!r}; allowed SUM, MAX, MIN")
            rtype = None
    elif kind == "pair" and _parse_name(reduce_type) != "SUM":
        # ReducePairElem<reduceType>: "当前仅支持求和操作" (only ReduceType::SUM)
        fails.add(Code.REDUCE_TYPE, f"reduce_type = {reduce_type!r}; allowed SUM")
    count = None
    if counter:          # counter mode (SetMaskCount): checked where the call is prepared
        count = _parse_counter(fails, mask, prof)
    sat = False
    if kind in ("whole_sum", "block", "pair"):
        sat, _ = _parse_saturate(fails, saturate, prof, fmt)

    # -- mask, repeat, strides
    per_repeat = None            # counter mode: the lanes of each repeat
    if counter:
        lanes, R, per_repeat = _counter_lanes(fails, count, L)
        if _as_int(repeat_time) is None:           # ignored ("该值不生效"), but an int32_t
            fails.add(Code.BAD_ARGUMENT, f"repeat_time must be an int, got {repeat_time!r}")
            R = None
    else:
        lanes = _parse_mask(fails, mask, L, "tik" if tik else "ascendc")
        R = _as_int(repeat_time)
    if counter:
        pass                                       # no range: the count decides R
    elif R is None:
        fails.add(Code.BAD_ARGUMENT, f"repeat_time must be an int, got {repeat_time!r}")
    elif tik and (R < 1 or R > 255):
        # TIK: [0, 255], "当repeat_times为立即数时，不支持0" -- every call here is an immediate
        fails.add(Code.REPEAT_RANGE, f"repeat_times = {R} outside [1, 255]")
        R = None
    elif R < 0 or R > 255:
        fails.add(Code.REPEAT_RANGE, f"repeat_time = {R} outside [0, 255]")
        R = None
    elif R == 0 and prof.zero_repeat == "error":
        fails.add(Code.REPEAT_RANGE, "repeat_time = 0 is outside the documented range here")
        R = None
    if lanes == [] and prof.zero_mask == "error":
        fails.add(Code.MASK_ZERO, "mask selects no lane; not allowed on this product")
        lanes = None
    strides: Dict[str, Optional[int]] = {}
    for nm, v in (("dst_rep_stride", dst_rep_stride), ("src_blk_stride", src_blk_stride),
                  ("src_rep_stride", src_rep_stride)):
        iv = _as_int(v)
        if iv is None:
            fails.add(Code.BAD_ARGUMENT, f"{nm} must be an int, got {v!r}")
        elif iv < 0 or iv > STRIDE_MAX:
            fails.add(Code.STRIDE_RANGE, f"{nm} = {iv} outside [0, {STRIDE_MAX}]")
            iv = None
        strides[nm] = iv
    if strides["dst_rep_stride"] == 0 and not prof.dst_rep_stride_zero:
        fails.add(Code.DST_STRIDE_ZERO, "dst_rep_stride = 0 is not supported on this product")

    # -- alignment (ReducePairElem: dst and src "需要32字节对齐")
    if s is not None and s.addr % BLOCK:
        fails.add(Code.ALIGN, f"src.addr = {s.addr} not 32-byte aligned")
    dfmt = d.fmt if d is not None else None
    unit = None          # dst repeat stride unit in bytes
    dalign = None
    if dfmt is not None:
        sz = dfmt.size
        if kind == "whole_minmax" and order_name is not None:
            unit = {"ORDER_VALUE_INDEX": 2 * sz, "ORDER_INDEX_VALUE": 2 * sz,
                    "ORDER_ONLY_VALUE": sz, "ORDER_ONLY_INDEX": 4}[order_name]
            dalign = unit
        elif kind == "whole_sum":
            unit = dalign = sz
        elif kind == "block":
            unit = dalign = 8 * sz
        elif kind == "pair":
            unit = REPEAT_BYTES // 2     # dstRepStride unit: one repeat's L/2 sums = 128 B
            dalign = BLOCK
        if tik:
            dalign = BLOCK       # TIK 通用约束: UB operands 32-byte aligned (no vc* page)
        if dalign is not None and d.addr % dalign:
            fails.add(Code.ALIGN, f"dst.addr = {d.addr} not {dalign}-byte aligned")

    _check_ub_bounds(fails, prof, ubarr, [d, s])

    # -- the access plan (only when every input it depends on is valid)
    ready = (ubarr is not None and d is not None and s is not None and fmt is not None
             and dfmt is not None and lanes is not None and R is not None
             and None not in strides.values() and unit is not None
             and (kind != "block" or rtype is not None))
    nop = ready and (len(lanes) == 0 or R == 0)
    plan = None
    if ready and not nop:
        plan = _ascendc_plan(kind, s, d, fmt, lanes, R, strides, unit, order_name, prof,
                             per_repeat)
        _check_accesses(fails, plan, s, d)
    fails.raise_first()

    # -- compute
    assert ready, "all checks passed, so every input is valid"
    out = _Writer(ubarr.copy())
    if nop:
        undefined = ((len(lanes) == 0 and prof.zero_mask == "undefined")
                     or (R == 0 and prof.zero_repeat == "undefined" and not counter))
        if undefined:
            out.undef(d.addr, d.nbytes)
        return out.result()
    orig = ubarr                                     # every read sees the UB as it was at the call
    sz = fmt.size
    kw = dict(default_nan=prof.default_nan(fmt.name), ftz=prof.fp32_ftz, saturate=sat)
    with np.errstate(all="ignore"):
        for r in range(R):
            reads, pieces = plan[r]
            vals = [(i, _read(orig, a, sz)) for i, a in reads]
            if kind == "whole_minmax" and tik and fmt.name == "int16" \
                    and prof.tik_vc_int16_compare == "unsigned":
                # TIK vcmax / vcmin on int16 read as uint16 (the TIK source's reinterpret_cast)
                idx, v = _fp.select([(i, b ^ 0x8000) for i, b in vals], fmt, minmax)
                for addr, n, what in pieces:
                    out.write(addr, n, v ^ 0x8000 if what == "value" else idx)
            elif kind == "whole_minmax":
                idx, v = _fp.select(vals, fmt, minmax)
                v = _minmax_nan(v, fmt, prof)
                for addr, n, what in pieces:
                    out.write(addr, n, v if what == "value" else idx)
            elif kind == "whole_sum":
                full = [0] * L                       # non-participating lanes are +0
                for i, v in vals:
                    full[i] = v
                if fmt.is_float:
                    total = _fp.tree_sum(full, fmt, **kw)
                else:                                # 950 integer sums, into dst's type
                    total = _fp.int_sum(full, fmt, dfmt,
                                        clamp=prof.int_sum_overflow == "saturate")
                (addr, n, _), = pieces
                out.write(addr, n, total)
            elif kind == "pair":
                lane_val = dict(vals)
                for addr, n, what in pieces:
                    j = what[1]
                    if what[0] == "zero":           # both lanes masked, "置为0" products
                        out.write(addr, n, 0)
                        continue
                    # a masked lane of the pair counts as +0 (Reg PairReduceElem page: "不参与
                    # 计算的元素，被当作0进行累加"; elsewhere assumed): one add, a = lane 2j;
                    # "passthrough" (the audit's alternative): the active lane's bits
                    a = lane_val.get(2 * j, 0)
                    b = lane_val.get(2 * j + 1, 0)
                    alone = (2 * j in lane_val) != (2 * j + 1 in lane_val)
                    if alone and prof.pair_masked_lane == "passthrough":
                        out.write(addr, n, a if 2 * j in lane_val else b)
                    else:
                        out.write(addr, n, _fp.add(a, b, fmt, **kw))
            else:  # block
                for addr, n, what in pieces:
                    b = what[1]
                    if what[0] == "fill":
                        out.write(addr, n, prof.fill_bits(rtype, fmt.name))
                        continue
                    if what[0] == "undef":
                        out.undef(addr, n)
                        continue
                    bvals = [(i, v) for i, v in vals if i // epb == b]
                    if rtype == "SUM":
                        full = [0] * epb
                        for i, v in bvals:
                            full[i % epb] = v
                        res = _fp.tree_sum(full, fmt, **kw)
                    else:
                        _, res = _fp.select(bvals, fmt, rtype)
                        res = _minmax_nan(res, fmt, prof)
                    out.write(addr, n, res)
    if counter and strides["dst_rep_stride"] == 0 and \
            prof.counter_dst_stride_zero == "undefined":
        out.undef(d.addr, d.nbytes)        # 950's emulation: src moved by repeatTime (§Q)
    return out.result()


def _is_counter(mask: Any) -> bool:
    """A counter-mode mask (``ascend_ref.CounterMask``: its ``mode`` is ``"counter"``)."""
    return getattr(type(mask), "mode", None) == "counter" and hasattr(mask, "count")


def _parse_counter(fails: _Failures, mask: Any, prof: ChipProfile) -> Optional[int]:
    """The element count of a counter-mode mask (SEMANTICS §Q): an int in [0, 2^64) (the
    low 64 bits of the mask register), on a product whose SetMaskCount page says 支持.
    These are checked where the call is prepared: a fault is raised at once."""
    n = _as_int(mask.count)
    if n is None:
        fails.add(Code.BAD_ARGUMENT, f"CounterMask count must be an int, got {mask.count!r}")
        fails.raise_first()
    if n < 0 or n > (1 << 64) - 1:
        fails.add(Code.MASK_RANGE, f"counter mode count {n} outside [0, 2^64 - 1]")
        fails.raise_first()
    if prof.counter_mode != "supported":
        fails.add(Code.MASK_MODE, "counter mode (SetMaskCount) is not supported on this product")
        fails.raise_first()
    return n


def _counter_lanes(fails: _Failures, n: Optional[int], L: Optional[int]):
    """``(union of lanes, repeats, lanes of each repeat)`` for ``n`` elements: repeat k takes
    lanes ``0 .. min(L, n - k*L) - 1``; at most 255 repeats (the repeat range; assumed
    counter_max_repeat)."""
    if n is None or L is None:
        return None, None, None
    if n > 255 * L:
        fails.add(Code.MASK_RANGE, f"counter mode count {n} needs {-(-n // L)} repeats; at "
                                   f"most 255 ({255 * L} elements)")
        return None, None, None
    R = -(-n // L)
    rows = [list(range(min(L, n - k * L))) for k in range(R)]
    return (rows[0] if rows else []), R, rows


def _minmax_nan(v: int, fmt: _fp.Fmt, prof: ChipProfile) -> int:
    """Profile ``minmax_nan = "default"`` (Ascend 950 Reg Reduce page: a NaN input makes the
    result "the type's NaN"): a NaN result becomes the profile's default NaN."""
    if prof.minmax_nan == "default" and fmt.name.startswith("float") and _fp.is_nan(v, fmt):
        return prof.default_nan(fmt.name)
    return v


def _parse_saturate(fails: _Failures, saturate, prof: ChipProfile,
                    fmt: Optional[_fp.Fmt]) -> Tuple[bool, bool]:
    """Effective saturation flag (float16 only) and whether the argument was valid."""
    if saturate is None:
        flag = prof.saturate_default
    else:
        b = _as_switch(saturate)
        if b is None:
            fails.add(Code.BAD_ARGUMENT, f"saturate must be None or a bool, got {saturate!r}")
            return False, False
        flag = b
        if not b and prof.saturate_only and fmt is not None and fmt.name == "float16":
            fails.add(Code.SATURATE_DTYPE, f"saturate = False on {prof.id}: the product has only "
                                           "the saturation mode")
        if b and fmt is not None and fmt.name != "float16":
            fails.add(Code.SATURATE_DTYPE, f"saturate = True with dtype {fmt.name}; "
                                           "saturation exists for float16 only")
    return bool(flag) and fmt is not None and fmt.name == "float16", True


def _ascendc_plan(kind, s: _T, d: _T, fmt: _fp.Fmt, lanes0, R, strides, unit, order_name,
                  prof: ChipProfile, per_repeat=None):
    """Per repeat: (reads [(lane, addr)], write pieces [(addr, nbytes, what)]).
    ``per_repeat``: each repeat's own lanes (counter mode), else ``lanes0`` for all."""
    sz = fmt.size
    epb = BLOCK // sz
    srs, sbs, drs = strides["src_rep_stride"], strides["src_blk_stride"], strides["dst_rep_stride"]
    plan = []
    for r in range(R):
        lanes = per_repeat[r] if per_repeat is not None else lanes0
        blocks_used = sorted({i // epb for i in lanes})
        reads = [(i, s.addr + r * srs * BLOCK + (i // epb) * sbs * BLOCK + (i % epb) * sz)
                 for i in lanes]
        base = d.addr + r * drs * unit
        if kind == "whole_minmax":
            layout = {"ORDER_VALUE_INDEX": [(0, sz, "value"), (sz, sz, "index")],
                      "ORDER_INDEX_VALUE": [(0, sz, "index"), (sz, sz, "value")],
                      "ORDER_ONLY_VALUE": [(0, sz, "value")],
                      "ORDER_ONLY_INDEX": [(0, 4, "index")]}[order_name]
            pieces = [(base + off, n, what) for off, n, what in layout]
        elif kind == "whole_sum":
            pieces = [(base, unit, "sum")]          # one word of dst's type
        elif kind == "pair":
            active = set(lanes)
            pieces = []
            for j in range(REPEAT_BYTES // sz // 2):
                if 2 * j in active or 2 * j + 1 in active:
                    pieces.append((base + j * sz, sz, ("pair", j)))
                elif prof.pair_masked_pair == "zero":
                    pieces.append((base + j * sz, sz, ("zero", j)))
                # "keep": that dst element is not written
        else:
            pieces = []
            for b in range(8):
                if b in blocks_used:
                    pieces.append((base + b * sz, sz, ("value", b)))
                elif prof.block_fill == "fill":
                    pieces.append((base + b * sz, sz, ("fill", b)))
                elif prof.block_fill == "undefined":
                    pieces.append((base + b * sz, sz, ("undef", b)))
                # "keep": nothing written
        plan.append((reads, pieces))
    return plan


def _check_accesses(fails: _Failures, plan, s: _T, d: _T) -> None:
    """TENSOR_BOUNDS (every access inside its tensor) and OVERLAP (a byte written by repeat
    r read by a participating lane of a later repeat)."""
    sz = s.fmt.size
    bad_read = bad_write = None
    first_write: Dict[int, int] = {}
    for r, (reads, pieces) in enumerate(plan):
        for i, a in reads:
            if bad_read is None and (a < s.addr or a + sz > s.end):
                bad_read = (r, i, a)
        for a, n, _ in pieces:
            if bad_write is None and (a < d.addr or a + n > d.end):
                bad_write = (r, a, n)
            for byte in range(a, a + n):
                if byte not in first_write:
                    first_write[byte] = r
    if bad_read:
        r, i, a = bad_read
        fails.add(Code.TENSOR_BOUNDS, f"repeat {r} lane {i} reads bytes [{a}, {a + sz}) outside src "
                                      f"[{s.addr}, {s.end})")
    if bad_write:
        r, a, n = bad_write
        fails.add(Code.TENSOR_BOUNDS, f"repeat {r} writes bytes [{a}, {a + n}) outside dst "
                                      f"[{d.addr}, {d.end})")
    for r, (reads, _) in enumerate(plan):
        for i, a in reads:
            for byte in range(a, a + sz):
                w = first_write.get(byte)
                if w is not None and w < r:
                    fails.add(Code.OVERLAP, f"byte {byte} written by repeat {w} is read by "
                                            f"repeat {r} (lane {i})")
                    return


def whole_reduce_min(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, order="ORDER_VALUE_INDEX", *, chip) -> OracleResult:
    return _ascendc("whole_reduce_min", "whole_minmax", ub, dst, src, mask, repeat_time,
                    dst_rep_stride, src_blk_stride, src_rep_stride, chip, order=order,
                    minmax="MIN")


def whole_reduce_max(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, order="ORDER_VALUE_INDEX", *, chip) -> OracleResult:
    return _ascendc("whole_reduce_max", "whole_minmax", ub, dst, src, mask, repeat_time,
                    dst_rep_stride, src_blk_stride, src_rep_stride, chip, order=order,
                    minmax="MAX")


def whole_reduce_sum(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, *, chip, saturate=None) -> OracleResult:
    return _ascendc("whole_reduce_sum", "whole_sum", ub, dst, src, mask, repeat_time,
                    dst_rep_stride, src_blk_stride, src_rep_stride, chip, saturate=saturate)


def repeat_reduce_sum(ub, dst, src, repeat_time, mask, dst_blk_stride, src_blk_stride,
                      dst_rep_stride, src_rep_stride, *, chip, saturate=None) -> OracleResult:
    """RepeatReduceSum (deprecated; RepeatReduceSum.md at 3825d1c98^): WholeReduceSum with a
    continuous mask only, in its own argument order; ``dst_blk_stride`` "此参数无效，可以配置任意
    值" (an int, no effect). Its own product row (not WholeReduceSum's)."""
    if _as_int(dst_blk_stride) is None:
        raise OracleError(Code.BAD_ARGUMENT, f"dst_blk_stride must be an int, got "
                                             f"{dst_blk_stride!r}")
    return _ascendc("repeat_reduce_sum", "whole_sum", ub, dst, src, mask, repeat_time,
                    dst_rep_stride, src_blk_stride, src_rep_stride, chip, saturate=saturate,
                    continuous_only=True)


def reduce_data_block(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                      src_rep_stride, *, reduce_type, chip, saturate=None) -> OracleResult:
    return _ascendc("reduce_data_block", "block", ub, dst, src, mask, repeat_time,
                    dst_rep_stride, src_blk_stride, src_rep_stride, chip,
                    reduce_type=reduce_type, saturate=saturate)


def pair_reduce_sum(ub, dst, src, repeat_time, mask, dst_rep_stride, src_blk_stride,
                    src_rep_stride, *, chip, saturate=None) -> OracleResult:
    """PairReduceSum (Ascend C order: repeatTime before mask): per repeat, output j of the
    128-byte slot at ``dst + r*dst_rep_stride*128`` is ``lane[2j] + lane[2j+1]``."""
    return _ascendc("pair_reduce_sum", "pair", ub, dst, src, mask, repeat_time,
                    dst_rep_stride, src_blk_stride, src_rep_stride, chip, saturate=saturate,
                    reduce_type="SUM")


def reduce_pair_elem(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, *, chip, reduce_type="SUM", saturate=None) -> OracleResult:
    """ReducePairElem<reduceType> (the newer name; documented order: mask before repeatTime)."""
    return _ascendc("reduce_pair_elem", "pair", ub, dst, src, mask, repeat_time,
                    dst_rep_stride, src_blk_stride, src_rep_stride, chip, saturate=saturate,
                    reduce_type=reduce_type, table_api="pair_reduce_sum")


# ====================================================================== TIK

def _stride_unit(api: str, stride_unit: Any) -> None:
    """TIK vc*: ``stride_unit`` is an int in [0, 3] for TIK, but no source defines 1-3:
    only 0 is taken (SEMANTICS §T)."""
    v = _as_int(stride_unit)
    if v is None:
        raise OracleError(Code.BAD_ARGUMENT, f"{api}: stride_unit must be an int, got "
                                             f"{stride_unit!r}")
    if v != 0:
        raise OracleError(Code.STRIDE_RANGE, f"{api}: stride_unit = {v}; only 0 has a "
                                             "documented meaning")


def _vc(api: str, kind: str, ub, mask, dst, src, repeat_times, dst_rep_stride,
        src_blk_stride, src_rep_stride, stride_unit, chip, **kw) -> OracleResult:
    _stride_unit(api, stride_unit)
    return _ascendc(api, kind, ub, dst, src, mask, repeat_times, dst_rep_stride,
                    src_blk_stride, src_rep_stride, chip, tik=True, **kw)


def vcadd(ub, mask, dst, src, repeat_times, dst_rep_stride, src_blk_stride, src_rep_stride,
          stride_unit=0, *, chip, saturate=None) -> OracleResult:
    """TIK vcadd: per repeat the tree sum of the active lanes into one word (unit s)."""
    return _vc("vcadd", "whole_sum", ub, mask, dst, src, repeat_times, dst_rep_stride,
               src_blk_stride, src_rep_stride, stride_unit, chip, saturate=saturate)


def _vc_minmax(api: str, which: str, index_low: Any, *args: Any, chip: Any) -> OracleResult:
    if _as_bool(index_low) is None or isinstance(index_low, float):
        raise OracleError(Code.BAD_ARGUMENT, f"{api}: index_low must be a bool, got "
                                             f"{index_low!r}")
    return _vc(api, "whole_minmax", *args, chip, minmax=which,
               index_low=bool(_as_bool(index_low)))


def vcmax(ub, mask, dst, src, repeat_times, dst_rep_stride, src_blk_stride, src_rep_stride,
          stride_unit=0, index_low=False, *, chip) -> OracleResult:
    """TIK vcmax: per repeat [value, lane] (index_low: [lane, value]), slot 2s."""
    return _vc_minmax("vcmax", "MAX", index_low, ub, mask, dst, src, repeat_times,
                      dst_rep_stride, src_blk_stride, src_rep_stride, stride_unit, chip=chip)


def vcmin(ub, mask, dst, src, repeat_times, dst_rep_stride, src_blk_stride, src_rep_stride,
          stride_unit=0, index_low=False, *, chip) -> OracleResult:
    """TIK vcmin: per repeat [value, lane] (index_low: [lane, value]), slot 2s."""
    return _vc_minmax("vcmin", "MIN", index_low, ub, mask, dst, src, repeat_times,
                      dst_rep_stride, src_blk_stride, src_rep_stride, stride_unit, chip=chip)


def vcgadd(ub, mask, dst, src, repeat_times, dst_rep_stride, src_blk_stride, src_rep_stride,
           stride_unit=0, *, chip, saturate=None) -> OracleResult:
    """TIK vcgadd: per repeat the 8 DataBlock sums (unit 8s)."""
    return _vc("vcgadd", "block", ub, mask, dst, src, repeat_times, dst_rep_stride,
               src_blk_stride, src_rep_stride, stride_unit, chip, reduce_type="SUM",
               saturate=saturate)


def vcgmax(ub, mask, dst, src, repeat_times, dst_rep_stride, src_blk_stride, src_rep_stride,
           stride_unit=0, *, chip) -> OracleResult:
    """TIK vcgmax: per repeat the 8 DataBlock maxima (unit 8s)."""
    return _vc("vcgmax", "block", ub, mask, dst, src, repeat_times, dst_rep_stride,
               src_blk_stride, src_rep_stride, stride_unit, chip, reduce_type="MAX")


def vcgmin(ub, mask, dst, src, repeat_times, dst_rep_stride, src_blk_stride, src_rep_stride,
           stride_unit=0, *, chip) -> OracleResult:
    """TIK vcgmin: per repeat the 8 DataBlock minima (unit 8s)."""
    return _vc("vcgmin", "block", ub, mask, dst, src, repeat_times, dst_rep_stride,
               src_blk_stride, src_rep_stride, stride_unit, chip, reduce_type="MIN")


def vcpadd(ub, mask, dst, src, repeat_times, dst_rep_stride, src_blk_stride, src_rep_stride,
           stride_unit=0, *, chip, saturate=None) -> OracleResult:
    """TIK vcpadd: per repeat the L/2 adjacent-pair sums into a 128-byte slot."""
    return _vc("vcpadd", "pair", ub, mask, dst, src, repeat_times, dst_rep_stride,
               src_blk_stride, src_rep_stride, stride_unit, chip, reduce_type="SUM",
               saturate=saturate)


def _tik(api: str, kind: str, ub, mask, dst, src, work, repeat_times, src_rep_stride, chip,
         *, cal_index=False, saturate=None) -> OracleResult:
    """kind: "MIN" | "MAX" | "ADD"."""
    prof = _resolve_chip(chip, api)
    fails = _Failures(api, prof.id)
    ubarr = _parse_ub(fails, ub)

    supported = prof.dtypes(api)
    if not supported:
        fails.add(Code.API_UNSUPPORTED, f"{api} does not exist on {prof.id}")
    d, s, w = _parse_same_type(fails, supported, (("dst", dst), ("src", src),
                                                  ("work_tensor", work)),
                               "src, dst and work_tensor must share one dtype")
    tensors = [d, s, w]
    fmt = s.fmt if s is not None else None
    L = None if fmt is None else REPEAT_BYTES // fmt.size
    epb = None if fmt is None else BLOCK // fmt.size

    ci: Optional[bool] = False
    sat = False
    if kind in ("MIN", "MAX"):
        ci = _as_bool(cal_index)
        if ci is None:
            fails.add(Code.BAD_ARGUMENT, f"cal_index must be a bool, got {cal_index!r}")
    else:
        sat, _ = _parse_saturate(fails, saturate, prof, fmt)

    if _is_counter(mask):
        fails.add(Code.MASK_MODE, "the TIK pages document no counter mask mode")
        fails.raise_first()
    lanes = _parse_mask(fails, mask, L, "tik")
    if lanes == [] and prof.zero_mask == "error":
        fails.add(Code.MASK_ZERO, "mask selects no lane; not allowed on this product")
        lanes = None
    R = _as_int(repeat_times)
    if R is None:
        fails.add(Code.BAD_ARGUMENT, f"repeat_times must be an int, got {repeat_times!r}")
    elif ci is not None:
        # cal_index: int16 [1, 255], float16 [1, 511], float32 [1, 4095] (TIK pages / source)
        hi = ({"int16": 255, "float16": 511, "float32": 4095}.get(fmt.name, 511)
              if ci and fmt is not None else 511 if ci else 4095)
        if R < 1 or R > hi:
            fails.add(Code.REPEAT_RANGE, f"repeat_times = {R} outside [1, {hi}]"
                                         + (" (cal_index=True)" if ci else ""))
            R = None
    else:
        if R < 1 or R > 4095:     # outside every range whatever cal_index is
            fails.add(Code.REPEAT_RANGE, f"repeat_times = {R} outside [1, 4095]")
        R = None
    srs = _as_int(src_rep_stride)
    if srs is None:
        fails.add(Code.BAD_ARGUMENT, f"src_rep_stride must be an int, got {src_rep_stride!r}")
    elif srs < 0 or srs > STRIDE_MAX:
        fails.add(Code.STRIDE_RANGE, f"src_rep_stride = {srs} outside [0, {STRIDE_MAX}]")
        srs = None

    # alignment, from each API's page: vec_reduce_min/max dst 4 B ("起始地址要求4Byte对齐"),
    # everything else the TIK general-constraints rule, 32 B
    for t in tensors:
        need = 4 if (kind != "ADD" and t is not None and t.name == "dst") else BLOCK
        if t is not None and t.addr % need:
            fails.add(Code.ALIGN, f"{t.name}.addr = {t.addr} not {need}-byte aligned")
    _check_ub_bounds(fails, prof, ubarr, tensors)

    ready = (ubarr is not None and all(t is not None and t.fmt is not None for t in tensors)
             and fmt is not None and lanes is not None and R is not None and srs is not None
             and ci is not None)
    nop = ready and len(lanes) == 0
    if ready:
        sz = fmt.size
        # TENSOR_BOUNDS: src reads of participating lanes, dst writes (work: WORK_SIZE below)
        if not nop:
            bad = [(r, i, s.addr + r * srs * BLOCK + i * sz) for r in range(R) for i in lanes
                   if s.addr + r * srs * BLOCK + (i + 1) * sz > s.end]
            if bad:
                r, i, a = bad[0]
                fails.add(Code.TENSOR_BOUNDS, f"repeat {r} lane {i} reads bytes [{a}, {a + sz}) "
                                              f"outside src [{s.addr}, {s.end})")
            n_dst = 2 if (kind != "ADD" and ci) else 1
            if d.size < n_dst:
                fails.add(Code.TENSOR_BOUNDS, f"dst holds {d.size} elements; the call writes {n_dst}")
        # OVERLAP: vec_reduce_add forbids all three pairs (seed 003); vec_reduce_min/max only
        # dst / work_tensor (seed 002)
        for x, y in (((s, d), (s, w), (d, w)) if kind == "ADD" else ((d, w),)):
            if x.nbytes and y.nbytes and x.addr < y.end and y.addr < x.end:
                fails.add(Code.OVERLAP, f"{x.name} [{x.addr}, {x.end}) overlaps {y.name} "
                                        f"[{y.addr}, {y.end})")
        # WORK_SIZE
        if kind == "ADD":
            need = R
        elif ci:
            need = _fp.cascade_need(R, epb, L)
        else:
            need = 2 * R
        if w.size < need:
            fails.add(Code.WORK_SIZE, f"work_tensor.size = {w.size} < {need} elements needed")
    fails.raise_first()

    assert ready
    out = _Writer(ubarr.copy())
    if nop:
        if prof.zero_mask == "undefined":
            out.undef(d.addr, d.nbytes)
            out.undef(w.addr, w.nbytes)
        return out.result()
    orig = ubarr
    sz = fmt.size
    with np.errstate(all="ignore"):
        per_repeat = []
        for r in range(R):
            vals = [(i, _read(orig, s.addr + r * srs * BLOCK + i * sz, sz)) for i in lanes]
            per_repeat.append(vals)
        if kind == "ADD":
            kw = dict(default_nan=prof.default_nan(fmt.name), ftz=prof.fp32_ftz, saturate=sat)
            rows = []                                  # each repeat's L lanes, masked +0
            for vals in per_repeat:
                full = [0] * L
                for i, v in vals:
                    full[i] = v
                rows.append(full)
            stage1 = [_fp.tree_sum(full, fmt, **kw) for full in rows]
            order = prof.add_order
            if order == "tree":                        # seed 003
                chunks = []
                for c in range(0, R, L):
                    chunk = stage1[c:c + L]
                    chunks.append(_fp.tree_sum(chunk + [0] * (L - len(chunk)), fmt, **kw))
                if len(chunks) == 1:
                    result = chunks[0]
                else:
                    result = _fp.tree_sum(chunks + [0] * (L - len(chunks)), fmt, **kw)
            elif order == "group255":                  # Atlas A2 TIK page
                groups = []
                for g in range(0, R, 255):
                    acc = stage1[g]
                    for v in stage1[g + 1:g + 255]:
                        acc = _fp.add(acc, v, fmt, **kw)
                    groups.append(acc)
                if len(groups) == 1:
                    result = groups[0]
                else:
                    result = _fp.tree_sum(groups + [0] * (L - len(groups)), fmt, **kw)
            else:                                      # "odd_even": Atlas 200I/500 A2 page
                parts = []
                if R >= 2:
                    a = list(rows[0])
                    b = list(rows[1])
                    for k in range(1, R // 2):
                        a = [_fp.add(x, y, fmt, **kw) for x, y in zip(a, rows[2 * k])]
                        b = [_fp.add(x, y, fmt, **kw) for x, y in zip(b, rows[2 * k + 1])]
                    parts += [a, b]
                if R % 2 == 1:
                    parts.append(rows[R - 1])
                dvec = parts[0]
                for part in parts[1:]:
                    dvec = [_fp.add(x, y, fmt, **kw) for x, y in zip(dvec, part)]
                result = _fp.tree_sum(dvec, fmt, **kw)
            if order == "tree":
                for r, v in enumerate(stage1):
                    out.write(w.addr + r * sz, sz, v)
                # work[0]: seed 003 shows the stage-1 sum, Huawei's TIK code the final sum
                # (or nothing, R = 1): undefined; work[R:] undefined; all of it if R > L
                out.undef(w.addr, min(sz, w.nbytes))
                out.undef(w.addr + R * sz, (w.size - R) * sz)
                if R > L:
                    out.undef(w.addr, w.nbytes)
            else:                                      # the pages say nothing about work
                out.undef(w.addr, w.nbytes)
            out.write(d.addr, sz, result)
            return out.result()
        # MIN / MAX
        stage1 = [_fp.select(vals, fmt, kind) for vals in per_repeat]   # (lane_r, value_r)
        r_win, _ = _fp.select([(r, v) for r, (_, v) in enumerate(stage1)], fmt, kind)
        lane_win, v_win = stage1[r_win]
        index = r_win * srs * epb + lane_win
        if ci and index > (1 << (8 * sz)) - 1:       # stored as uint16 / uint32 bits
            raise OracleError(Code.INDEX_OVERFLOW,
                              f"{api} on {prof.id}: result index {index} (repeat {r_win}, lane "
                              f"{lane_win}) above {(1 << (8 * sz)) - 1}", all_failures=[(Code.INDEX_OVERFLOW, "")])
        for r, (lane_r, v_r) in enumerate(stage1):
            out.write(w.addr + 2 * r * sz, sz, v_r)
            out.write(w.addr + (2 * r + 1) * sz, sz, lane_r)
        out.undef(w.addr + 2 * R * sz, (w.size - 2 * R) * sz)
        if not ci and R >= 2:
            # TIK's code runs the later stages in place from work[0] without cal_index
            out.undef(w.addr, 2 * (-(-2 * R // L)) * sz)
        out.write(d.addr, sz, v_win)
        if ci:
            out.write(d.addr + sz, sz, index)
        return out.result()


def vec_reduce_min(ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                   cal_index=False, *, chip) -> OracleResult:
    return _tik("vec_reduce_min", "MIN", ub, mask, dst, src, work_tensor, repeat_times,
                src_rep_stride, chip, cal_index=cal_index)


def vec_reduce_max(ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride,
                   cal_index=False, *, chip) -> OracleResult:
    return _tik("vec_reduce_max", "MAX", ub, mask, dst, src, work_tensor, repeat_times,
                src_rep_stride, chip, cal_index=cal_index)


def vec_reduce_add(ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride, *, chip,
                   saturate=None) -> OracleResult:
    return _tik("vec_reduce_add", "ADD", ub, mask, dst, src, work_tensor, repeat_times,
                src_rep_stride, chip, saturate=saturate)


# ====================================================================== Ascend C level 2

def _level2(api: str, kind: str, ub, dst, src, tmp, mask, repeat_time, src_rep_stride,
            cal_index, chip, saturate=None) -> OracleResult:
    """ReduceMax / ReduceMin / ReduceSum, high-dimensional form (ReduceMax.md / ReduceMin.md /
    ReduceSum.md, current asc-devkit pages; docs/SEMANTICS.md §N). kind: "MIN" | "MAX" |
    "SUM" (calIndex False)."""
    prof = _resolve_chip(chip, api)
    fails = _Failures(api, prof.id)
    if src_rep_stride is None or repeat_time is None:
        fails.add(Code.BAD_ARGUMENT, "the high-dimensional form gives mask, repeatTime and "
                                     "srcRepStride (the count form: count alone)")
        fails.raise_first()
    ubarr = _parse_ub(fails, ub)
    supported = prof.dtypes(api)
    if not supported:
        fails.add(Code.API_UNSUPPORTED, f"{api} does not exist on {prof.id}")
    counter = _is_counter(mask)
    # a counter-mode fault is raised where the call is prepared, before the saturate rule
    # (a traced check) is even looked at: parse saturate after the mask in counter mode
    d, s, w, fmt, L, epb, ci, sat = _level2_operands(fails, supported, prof, kind, dst, src, tmp,
                                                     cal_index, None if counter else saturate)
    tensors = [d, s, w]
    top = None if L is None else L * L // 4    # the model's limit (SEMANTICS §N)
    rows = None          # counter mode (SEMANTICS §R): the lanes of each repeat
    n = None
    if counter:
        n = _parse_counter(fails, mask, prof)
        if kind == "SUM":
            sat, _ = _parse_saturate(fails, saturate, prof, fmt)
        lanes = None
        if n is not None and L is not None and top is not None:
            if n > top * L:
                fails.add(Code.MASK_RANGE, f"counter mode count {n} needs {-(-n // L)} "
                                           f"repeats; at most {top} ({top * L} elements)")
            else:
                rows = [list(range(min(L, n - k * L))) for k in range(-(-n // L))]
                lanes = rows[0] if rows else []
    else:
        lanes = _parse_mask(fails, mask, L, "ascendc")
    zero_mask = lanes == []
    if zero_mask and prof.zero_mask == "error":
        fails.add(Code.MASK_ZERO, "mask selects no lane; not allowed on this product")
        lanes = None
    R = _as_int(repeat_time)
    if R is None:
        fails.add(Code.BAD_ARGUMENT, f"repeatTime must be an int, got {repeat_time!r}")
    elif counter:                              # ignored ("该值不生效"): the count decides
        R = len(rows) if rows is not None else None
    elif top is not None:
        low = 1 if prof.zero_repeat == "error" else 0
        if R < low or R > top:
            fails.add(Code.REPEAT_RANGE, f"repeatTime = {R} outside [{low}, {top}]")
            R = None
    srs = _as_int(src_rep_stride)
    if srs is None:
        fails.add(Code.BAD_ARGUMENT, f"srcRepStride must be an int, got {src_rep_stride!r}")
    elif srs < 0 or srs > STRIDE_MAX:
        fails.add(Code.STRIDE_RANGE, f"srcRepStride = {srs} outside [0, {STRIDE_MAX}]")
        srs = None
    _level2_align(fails, fmt, ci, d, s, w)
    _check_ub_bounds(fails, prof, ubarr, tensors)

    ready = (ubarr is not None and all(t is not None and t.fmt is not None for t in tensors)
             and fmt is not None and lanes is not None and R is not None and srs is not None
             and ci is not None)
    nop = ready and (len(lanes) == 0 or R == 0)
    # ReduceSum's high-dimensional form is 方式二 on every product (ReduceSum.md): the buffer
    # is used everywhere -- but on 950's 方式三 paths in counter mode ("Counter模式且数据量在
    # 256~1024字节之间采用方式三"); ReduceMax / ReduceMin: the products' list
    merge = (counter and kind == "SUM" and prof.reduce_sum_counter_mode == "merge"
             and n is not None and L is not None and L <= n <= 4 * L)
    used = (kind == "SUM" and not merge) or (kind != "SUM" and prof.reduce_tmp_buffer == "used")

    def lanes_of(r):                           # repeat r's lanes (counter: its own)
        return rows[r] if rows is not None else lanes

    if ready:
        sz = fmt.size
        if not nop:
            for r in range(R):
                for i in lanes_of(r):
                    a = s.addr + r * srs * BLOCK + i * sz
                    if a + sz > s.end:
                        fails.add(Code.TENSOR_BOUNDS, f"repeat {r} lane {i} reads [{a}, {a + sz}) "
                                                      f"outside src [{s.addr}, {s.end})")
                        break
                else:
                    continue
                break
            if d.size < (2 if ci else 1):
                fails.add(Code.TENSOR_BOUNDS, f"dst holds {d.size} elements; the call writes "
                                              f"{2 if ci else 1}")
        if used and kind == "SUM":
            # ReduceSum.md 关键特性说明, 方式二: DivCeil(firstMaxRepeat, epb) * epb elements
            # (firstMaxRepeat = repeatTime; counter mode: the repeats it derives)
            need = (R + epb - 1) // epb * epb
            if w.size < need:
                fails.add(Code.WORK_SIZE, f"sharedTmpBuffer.size = {w.size} < {need} elements")
        elif used:
            # ReduceMax.md 关键特性说明: the size formula (elements), firstMaxRepeat = repeatTime
            up = lambda a, b: (a + b - 1) // b      # noqa: E731 - the page's RoundUp
            it1 = R * 2
            need = up(it1, epb) * epb
            if ci:
                it2 = up(it1, L) * 2
                end2 = up(it2, epb) * epb
                need = need + end2
                if it2 > 2:
                    it3 = up(it2, L) * 2
                    need = need + up(it3, epb) * epb
            if w.size < need:
                fails.add(Code.WORK_SIZE, f"sharedTmpBuffer.size = {w.size} < {need} elements")
    fails.raise_first()

    assert ready
    out = _Writer(ubarr.copy())
    if nop:
        if (len(lanes) == 0 and prof.zero_mask == "undefined") or \
                (R == 0 and prof.zero_repeat == "undefined"):
            out.undef(d.addr, d.nbytes)
            if used:
                out.undef(w.addr, w.nbytes)
        return out.result()
    sz = fmt.size
    if counter and prof.reduce_l2_counter == "undefined":
        # the audit's alternative where the implementation does not show counter mode
        out.undef(d.addr, d.nbytes)
        if used:
            out.undef(w.addr, w.nbytes)
        return out.result()
    if merge:
        # Ascend 950 方式三 (counter mode, L <= n <= 4L, 256~1024 bytes both ends in): the
        # repeats merged lane by lane into one vector, then one tree; x_k = repeat k's L
        # elements, +0 past the count
        kw = dict(default_nan=prof.default_nan(fmt.name), ftz=prof.fp32_ftz, saturate=sat)

        def x(k):
            return [_read(ubarr, s.addr + k * srs * BLOCK + i * sz, sz) if k * L + i < n else 0
                    for i in range(L)]

        def plus(a, b):
            return _fp.add(a, b, fmt, **kw)

        x0, x1 = x(0), x(1)
        v = []
        for i in range(L):
            if n <= 2 * L:
                v.append(plus(x0[i], x1[i]) if i < n - L else x0[i])
            elif n <= 3 * L:
                a01 = plus(x0[i], x1[i])
                v.append(plus(a01, x(2)[i]) if i < n - 2 * L else a01)
            else:
                hi = plus(x(2)[i], x(3)[i]) if i < n - 3 * L else x(2)[i]
                v.append(plus(hi, plus(x0[i], x1[i])))
        out.write(d.addr, sz, _fp.tree_sum(v, fmt, **kw))
        return out.result()
    if kind == "SUM":
        kw = dict(default_nan=prof.default_nan(fmt.name), ftz=prof.fp32_ftz, saturate=sat)
        sums = []                                # 方式二: a tree inside each repeat ...
        for r in range(R):
            full = [0] * L                       # masked lanes are +0
            for i in lanes_of(r):
                full[i] = _read(ubarr, s.addr + r * srs * BLOCK + i * sz, sz)
            sums.append(_fp.tree_sum(full, fmt, **kw))
        if R == 1:                               # ... one repeat: its sum
            total = sums[0]
        else:                                    # ... the repeat sums as trees of L lanes
            chunks = [_fp.tree_sum(sums[c:c + L] + [0] * (L - len(sums[c:c + L])), fmt, **kw)
                      for c in range(0, R, L)]
            total = chunks[0] if len(chunks) == 1 else \
                _fp.tree_sum(chunks + [0] * (L - len(chunks)), fmt, **kw)
        out.undef(w.addr, w.nbytes)
        out.write(d.addr, sz, total)
        return out.result()
    # the index: the element offset from src; counter mode on a "position" product: the
    # position r*L + i among the counted elements (SEMANTICS §R)
    pos = counter and prof.reduce_l2_counter_index == "position"
    items = sorted({((r * L if pos else r * srs * epb) + i,
                     _read(ubarr, s.addr + (r * srs * epb + i) * sz, sz))
                    for r in range(R) for i in lanes_of(r)})
    index, value = _fp.select(items, fmt, kind)
    if ci and sz == 2 and index > 65535:
        raise OracleError(Code.INDEX_OVERFLOW,
                          f"{api} on {prof.id}: result index {index} above 65535",
                          all_failures=[(Code.INDEX_OVERFLOW, "")])
    value = _minmax_nan(value, fmt, prof)
    if used:                                   # intermediate results: undefined afterwards
        out.undef(w.addr, w.nbytes)
    out.write(d.addr, sz, value)
    if ci:
        out.write(d.addr + sz, sz, index)
    return out.result()


def _level2_count(api: str, kind: str, ub, dst, src, tmp, count, cal_index, chip,
                  saturate=None) -> OracleResult:
    """ReduceSum / ReduceMax / ReduceMin, the count form "tensor前n个数据计算" (the first
    ``count`` elements; ReduceSum.md / ReduceMax.md / ReduceMin.md, current pages;
    docs/SEMANTICS.md §N). Loops over the elements as the pages describe them."""
    prof = _resolve_chip(chip, api)
    fails = _Failures(api, prof.id)
    ubarr = _parse_ub(fails, ub)
    supported = prof.dtypes(api)
    if not supported:
        fails.add(Code.API_UNSUPPORTED, f"{api} does not exist on {prof.id}")
    d, s, w, fmt, L, epb, ci, sat = _level2_operands(fails, supported, prof, kind, dst, src, tmp,
                                                     cal_index, saturate)
    tensors = [d, s, w]
    n = _as_int(count)
    if n is None:
        fails.add(Code.BAD_ARGUMENT, f"count must be an int, got {count!r}")
    elif fmt is not None:
        # "最大处理的数据量不能超过UB大小限制": [1, UB bytes / sizeof(T)]; 0: the zero rule
        low = 1 if prof.zero_repeat == "error" else 0
        if n < low or n > prof.ub_bytes // fmt.size:
            fails.add(Code.REPEAT_RANGE, f"count = {n} outside [{low}, "
                                         f"{prof.ub_bytes // fmt.size}]")
            n = None
    _level2_align(fails, fmt, ci, d, s, w)
    _check_ub_bounds(fails, prof, ubarr, tensors)
    ready = (ubarr is not None and all(t is not None and t.fmt is not None for t in tensors)
             and fmt is not None and n is not None and ci is not None)
    used = False
    if ready:
        sz = fmt.size
        if n > 0 and s.addr + n * sz > s.end:
            fails.add(Code.TENSOR_BOUNDS, f"the first {n} elements end at {s.addr + n * sz}, "
                                          f"outside src [{s.addr}, {s.end})")
        if n > 0 and d.size < (2 if ci else 1):
            fails.add(Code.TENSOR_BOUNDS, f"dst holds {d.size} elements; the call writes "
                                          f"{2 if ci else 1}")
        up = lambda a, b: (a + b - 1) // b      # noqa: E731 - the pages' RoundUp / DivCeil
        if kind == "SUM":
            mode = prof.reduce_sum_count_mode
            # 方式二 paths need the buffer: "tree" always; 950 outside 256 <= n*size <= 1024
            # (int64 / uint64 on 950: "采用方式三" whatever the count)
            used = mode == "tree" or (mode == "merge" and not (L <= n <= 4 * L) and sz != 8)
            first = max(n // L, 1)                # count / L, 1 if count < L
            need = up(first, epb) * epb
        else:
            used = prof.reduce_tmp_buffer == "used"
            first = n // L                        # count / elementsPerRepeat
            it1 = first * 2
            need = up(it1, epb) * epb
            if ci:
                it2 = up(it1, L) * 2
                need += up(it2, epb) * epb
                if it2 > 2:
                    need += up(up(it2, L) * 2, epb) * epb
        if used and w.size < need:
            fails.add(Code.WORK_SIZE, f"sharedTmpBuffer.size = {w.size} < {need} elements")
    fails.raise_first()

    assert ready
    out = _Writer(ubarr.copy())
    sz = fmt.size
    if n == 0:
        if prof.zero_repeat == "undefined":
            out.undef(d.addr, d.nbytes)
            if used:
                out.undef(w.addr, w.nbytes)
        return out.result()
    x = [_read(ubarr, s.addr + k * sz, sz) for k in range(n)]
    if kind != "SUM":
        index, value = _fp.select(list(enumerate(x)), fmt, kind)
        if ci and sz == 2 and index > 65535:
            raise OracleError(Code.INDEX_OVERFLOW,
                              f"{api} on {prof.id}: result index {index} above 65535",
                              all_failures=[(Code.INDEX_OVERFLOW, "")])
        if used:
            out.undef(w.addr, w.nbytes)
        out.write(d.addr, sz, _minmax_nan(value, fmt, prof))
        if ci:
            out.write(d.addr + sz, sz, index)
        return out.result()
    if sz == 8:                                   # int64 / uint64: 方式三, exact integers
        if used:
            out.undef(w.addr, w.nbytes)
        out.write(d.addr, sz, _sum64(x, fmt, prof.int64_sum_overflow == "saturate"))
        return out.result()
    kw = dict(default_nan=prof.default_nan(fmt.name), ftz=prof.fp32_ftz, saturate=sat)
    plus = lambda a, b: _fp.add(a, b, fmt, **kw)      # noqa: E731

    def vec(k):                                   # the k-th L elements, +0 past count
        return [x[k * L + i] if k * L + i < n else 0 for i in range(L)]

    def tree(vals):                               # one tree of L lanes, +0 padded
        return _fp.tree_sum(list(vals) + [0] * (L - len(vals)), fmt, **kw)

    def trees(vals):                              # 方式二 across repeat sums
        if len(vals) == 1:
            return vals[0]
        chunks = [tree(vals[c:c + L]) for c in range(0, len(vals), L)]
        return chunks[0] if len(chunks) == 1 else tree(chunks)

    R = up(n, L)
    sums = [_fp.tree_sum(vec(k), fmt, **kw) for k in range(R)]
    mode = prof.reduce_sum_count_mode
    if mode == "sequential":                      # 方式一: "不同repeat的结果按顺序累加"
        total = sums[0]
        for t in sums[1:]:
            total = plus(total, t)
    elif mode == "tree":                          # 方式二: body, then the tail
        full = n // L
        if full == 0:
            total = sums[0]
        else:
            body = trees(sums[:full])
            total = tree([body, sums[full]]) if n % L else body
            if prof.reduce_sum_tree_tail == "leaf":   # dav_l300 / dav_l311: one tree
                total = trees(sums)                   # over every repeat sum
    elif n <= L:                                  # 950: one repeat
        total = sums[0]
    elif n <= 4 * L:                              # 950 方式三: vector merge, then one tree
        x0, x1 = vec(0), vec(1)
        if n <= 2 * L:
            v = [plus(x0[i], x1[i]) if i < n - L else x0[i] for i in range(L)]
        elif n <= 3 * L:
            x2 = vec(2)
            v = [plus(x0[i], x1[i]) for i in range(L)]
            v = [plus(v[i], x2[i]) if i < n - 2 * L else v[i] for i in range(L)]
        else:
            x2, x3 = vec(2), vec(3)
            a = [plus(x0[i], x1[i]) for i in range(L)]
            v = [plus(x2[i], x3[i]) if i < n - 3 * L else x2[i] for i in range(L)]
            v = [plus(v[i], a[i]) for i in range(L)]
        total = _fp.tree_sum(v, fmt, **kw)
    else:                                         # 950 方式二: every repeat a sum
        total = trees(sums)
    if used:
        out.undef(w.addr, w.nbytes)
    out.write(d.addr, sz, total)
    return out.result()


def _sum64(x: Sequence[int], fmt: _fp.Fmt, clamp: bool) -> int:
    """ReduceSum of int64 / uint64 words: the exact sum modulo 2^64 (assumed
    ``int64_sum_overflow = "wrap"``: any order gives it); ``clamp``: every add clamped to
    the type's range, in dav_3510 ReduceB64SumImpl's order -- 64 accumulators, element k
    added to accumulator k % 64 in turn, then the pairwise tree of the 64."""
    ints = [_fp.to_int(v, fmt) for v in x]
    if not clamp:
        return sum(ints) & fmt.mask
    lo, hi = (-(1 << 63), (1 << 63) - 1) if fmt.signed else (0, fmt.mask)
    acc = [0] * 64
    for k, v in enumerate(ints):
        acc[k % 64] = min(hi, max(lo, acc[k % 64] + v))
    while len(acc) > 1:
        acc = [min(hi, max(lo, acc[j] + acc[j + 1])) for j in range(0, len(acc), 2)]
    return acc[0] & fmt.mask


def _count_form(kind_has_index: bool, mask, repeat_time, src_rep_stride, cal_index, count):
    """(is_count_form, count, cal_index): count= given, or one numeric argument after the
    buffer (a bool after it is calIndex) -- the rule of the public functions."""
    if count is not None:
        return True, count, cal_index
    if kind_has_index and isinstance(repeat_time, (bool, np.bool_)) and src_rep_stride is None:
        return True, mask, bool(repeat_time)
    if repeat_time is None and src_rep_stride is None:
        return True, mask, cal_index
    return False, None, cal_index


def reduce_max(ub, dst, src, shared_tmp_buffer, mask=None, repeat_time=None,
               src_rep_stride=None, cal_index=False, *, count=None, chip) -> OracleResult:
    """ReduceMax (level 2): the count form (``count`` alone, a bool after it is calIndex) or
    the high-dimensional form."""
    cf, n, ci = _count_form(True, mask, repeat_time, src_rep_stride, cal_index, count)
    if cf:
        return _level2_count("reduce_max_count", "MAX", ub, dst, src, shared_tmp_buffer, n, ci,
                             chip)
    return _level2("reduce_max", "MAX", ub, dst, src, shared_tmp_buffer, mask, repeat_time,
                   src_rep_stride, cal_index, chip)


def reduce_min(ub, dst, src, shared_tmp_buffer, mask=None, repeat_time=None,
               src_rep_stride=None, cal_index=False, *, count=None, chip) -> OracleResult:
    """ReduceMin (level 2): the count form or the high-dimensional form (as reduce_max)."""
    cf, n, ci = _count_form(True, mask, repeat_time, src_rep_stride, cal_index, count)
    if cf:
        return _level2_count("reduce_min_count", "MIN", ub, dst, src, shared_tmp_buffer, n, ci,
                             chip)
    return _level2("reduce_min", "MIN", ub, dst, src, shared_tmp_buffer, mask, repeat_time,
                   src_rep_stride, cal_index, chip)


def reduce_sum(ub, dst, src, shared_tmp_buffer, mask=None, repeat_time=None,
               src_rep_stride=None, *, count=None, chip, saturate=None) -> OracleResult:
    """ReduceSum (level 2): the count form (方式一 / 二 / 三 per product) or the
    high-dimensional form (方式二)."""
    cf, n, _ = _count_form(False, mask, repeat_time, src_rep_stride, False, count)
    if cf:
        return _level2_count("reduce_sum_count", "SUM", ub, dst, src, shared_tmp_buffer, n,
                             False, chip, saturate=saturate)
    return _level2("reduce_sum", "SUM", ub, dst, src, shared_tmp_buffer, mask, repeat_time,
                   src_rep_stride, False, chip, saturate=saturate)


def reduce_sum_count(ub, dst, src, shared_tmp_buffer, count, *, chip,
                     saturate=None) -> OracleResult:
    """ReduceSum (level 2), count form."""
    return _level2_count("reduce_sum_count", "SUM", ub, dst, src, shared_tmp_buffer, count,
                         False, chip, saturate=saturate)


def reduce_max_count(ub, dst, src, shared_tmp_buffer, count, cal_index=False, *,
                     chip) -> OracleResult:
    """ReduceMax (level 2), count form."""
    return _level2_count("reduce_max_count", "MAX", ub, dst, src, shared_tmp_buffer, count,
                         cal_index, chip)


def reduce_min_count(ub, dst, src, shared_tmp_buffer, count, cal_index=False, *,
                     chip) -> OracleResult:
    """ReduceMin (level 2), count form."""
    return _level2_count("reduce_min_count", "MIN", ub, dst, src, shared_tmp_buffer, count,
                         cal_index, chip)
