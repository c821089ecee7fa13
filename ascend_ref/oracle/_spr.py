"""The oracle's reduce special registers: its own model, straight from the pages.

asc-devkit ``.../归约计算/寄存器辅助接口/GetReduceRepeatSumSpr(ISASI).md`` and
``GetReduceRepeatMaxMinSpr(ISASI).md`` (current pages), docs/SEMANTICS.md §P. Written with
literal loops over the source, independently of :mod:`ascend_ref.spr` and the kernels: it
shares only the oracle's own helpers (bit formats, mask parsing, the instruction functions
whose results it reads).

:class:`OracleSpr` is an immutable value. Each setter here runs the oracle's instruction
(its result and errors unchanged) and returns ``(OracleResult, OracleSpr)``; any other call
leaves the registers as they were (:func:`passthrough`). The getters return raw bits (value,
index) or raise :class:`~ascend_ref.oracle.OracleError` (``API_UNSUPPORTED``,
``DTYPE_UNSUPPORTED``, ``DTYPE_MISMATCH``, ``SPR_UNDEFINED``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Optional, Tuple

from ..constraints import Code
from . import _api, _fp

UNDEF = "undefined"

#: a register word the documentation leaves undefined (the per-product facts, the pages'
#: 产品支持情况 and what they leave open, are the oracle's product rows: ``spr_*`` in
#: :mod:`ascend_ref.oracle._products`)


@dataclass(frozen=True)
class OracleSpr:
    """``sums``: type name -> bits or :data:`UNDEF` (absent: never written);
    ``maxmin``: None (never written) or ``(type name, value bits | UNDEF, index | UNDEF)``."""

    sums: Dict[str, Any] = field(default_factory=dict)
    maxmin: Optional[Tuple[str, Any, Any]] = None


def _product(chip: Any) -> Any:
    return _api._resolve_chip(chip, "spr")


def _counter(mask: Any) -> bool:
    """A counter-mode mask (SetMaskCount; ``ar.CounterMask(count)``)."""
    return _api._is_counter(mask)


def _runs_counter(mask: Any) -> bool:
    return int(getattr(mask, "count", 0)) > 0


def _lanes(mask: Any, L: int) -> list:
    fails = _api._Failures("spr", "")
    lanes = _api._parse_mask(fails, mask, L, "ascendc")
    return list(lanes or [])


def _extreme(ub, src, mask, repeat: int, blk: int, rep: int, kind: str) -> Optional[tuple]:
    """(flat index r*L + lane, bits) of the winner over every repeat and participating lane,
    first NaN / extreme / first index (SEMANTICS §D); None when no lane takes part."""
    fmt = _fp.FORMATS[_api._dtype_name(src.dtype)]
    s = fmt.size
    L, epb = 256 // s, 32 // s
    items = []
    for r in range(repeat):
        for lane in _lanes(mask, L):
            addr = src.addr + r * rep * 32 + (lane // epb) * blk * 32 + (lane % epb) * s
            items.append((r * L + lane, _api._read(ub, addr, s)))
    if not items:
        return None
    return _fp.select(items, fmt, kind)


def _whole(kind: str, fn: Callable) -> Callable:
    def call(spr: OracleSpr, ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
             src_rep_stride, order="ORDER_VALUE_INDEX", *, chip):
        res = fn(ub, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                 src_rep_stride, order, chip=chip)
        prof = _product(chip)
        if _counter(mask):     # "不支持获取归约接口使用Mask Counter模式时的结果"
            return res, (replace(spr, maxmin=(_api._dtype_name(src.dtype), UNDEF, UNDEF))
                         if _runs_counter(mask) else spr)
        win = _extreme(ub, src, mask, repeat_time, src_blk_stride, src_rep_stride, kind)
        if win is None:
            return res, spr                                   # a NOP
        fmt = _fp.FORMATS[_api._dtype_name(src.dtype)]
        idx, bits = win
        L = 256 // fmt.size
        if src_rep_stride != 8 or src_blk_stride != 1:        # "仅支持...连续计算场景"
            return res, replace(spr, maxmin=(fmt.name, UNDEF, UNDEF))
        index = idx if prof.spr_maxmin_index == "flat" else idx % L
        return res, replace(spr, maxmin=(fmt.name, _api._minmax_nan(bits, fmt, prof), index))

    return call


def _count_of(mask, repeat_time, src_rep_stride, count):
    """The element count of a count-form call (``count=``, or one numeric argument after the
    buffer, a bool after it being calIndex), None for the high-dimensional form."""
    if count is not None:
        return count
    if src_rep_stride is None and (repeat_time is None or isinstance(repeat_time, bool)):
        return mask
    return None


def _maxmin_after(spr: OracleSpr, res, dst, src, mask, repeat_time, src_rep_stride, n):
    """Level-2 ReduceMax / ReduceMin (``n``: the count of a count-form call, else None): the
    exact value, the index not ("此时获取的索引不准确"); contiguous only (srcRepStride 8; the
    count form is contiguous); a NOP (count / repeat 0, mask 0) leaves the register."""
    fmt = _fp.FORMATS[_api._dtype_name(src.dtype)]
    if n is not None:
        if not n:
            return spr
    elif _counter(mask):        # "不支持获取归约接口使用Mask Counter模式时的结果"
        return replace(spr, maxmin=(fmt.name, UNDEF, UNDEF)) if _runs_counter(mask) else spr
    elif repeat_time == 0 or not _lanes(mask, 256 // fmt.size):
        return spr
    elif src_rep_stride != 8:
        return replace(spr, maxmin=(fmt.name, UNDEF, UNDEF))
    value = _api._read(res.ub, dst.addr, fmt.size)            # the call's own dst[0]
    return replace(spr, maxmin=(fmt.name, value, UNDEF))


def _level2(fn: Callable) -> Callable:
    def call(spr: OracleSpr, ub, dst, src, shared_tmp_buffer, mask=None, repeat_time=None,
             src_rep_stride=None, cal_index=False, *, count=None, chip):
        res = fn(ub, dst, src, shared_tmp_buffer, mask, repeat_time, src_rep_stride, cal_index,
                 count=count, chip=chip)
        n = _count_of(mask, repeat_time, src_rep_stride, count)
        return res, _maxmin_after(spr, res, dst, src, mask, repeat_time, src_rep_stride, n)

    return call


def _level2_count(fn: Callable) -> Callable:
    def call(spr: OracleSpr, ub, dst, src, shared_tmp_buffer, count, cal_index=False, *, chip):
        res = fn(ub, dst, src, shared_tmp_buffer, count, cal_index, chip=chip)
        return res, _maxmin_after(spr, res, dst, src, None, None, None, count)

    return call


def _sum_after(spr: OracleSpr, res, dst, src, n, chip) -> OracleSpr:
    """The count form of ReduceSum (``n`` its count; None: the high-dimensional form, which
    does not write it) sets the sum register of its type ("仅支持tensor前n个数据连续计算接口使用")."""
    t = _api._dtype_name(src.dtype)
    if n is None or not n or t not in ("float16", "float32"):
        return spr
    value = _api._read(res.ub, dst.addr, _fp.FORMATS[t].size)
    sums = dict(spr.sums)
    if _product(chip).spr_sum_other_type != "kept":    # one register for both types
        sums = {k: UNDEF for k in ("float16", "float32")}
    sums[t] = value
    return replace(spr, sums=sums)


def reduce_sum(spr: OracleSpr, ub, dst, src, shared_tmp_buffer, mask=None, repeat_time=None,
               src_rep_stride=None, *, count=None, chip, saturate=None):
    """ReduceSum, either form: the count form writes the sum register."""
    res = _api.reduce_sum(ub, dst, src, shared_tmp_buffer, mask, repeat_time, src_rep_stride,
                          count=count, chip=chip, saturate=saturate)
    return res, _sum_after(spr, res, dst, src, _count_of(mask, repeat_time, src_rep_stride,
                                                         count), chip)


def reduce_sum_count(spr: OracleSpr, ub, dst, src, shared_tmp_buffer, count, *, chip,
                     saturate=None):
    """ReduceSum, count form."""
    res = _api.reduce_sum_count(ub, dst, src, shared_tmp_buffer, count, chip=chip,
                                saturate=saturate)
    return res, _sum_after(spr, res, dst, src, count, chip)


whole_reduce_max = _whole("MAX", _api.whole_reduce_max)
whole_reduce_min = _whole("MIN", _api.whole_reduce_min)
reduce_max = _level2(_api.reduce_max)
reduce_min = _level2(_api.reduce_min)
reduce_max_count = _level2_count(_api.reduce_max_count)
reduce_min_count = _level2_count(_api.reduce_min_count)


def reduce_data_block(spr: OracleSpr, ub, dst, src, mask, repeat_time, dst_rep_stride,
                      src_blk_stride, src_rep_stride, *, reduce_type, chip, saturate=None):
    """ReduceDataBlock (vcgadd / vcgmax / vcgmin): the max/min register as it was
    (the product row's ``spr_vcg_clobber``)."""
    res = _api.reduce_data_block(ub, dst, src, mask, repeat_time, dst_rep_stride,
                                 src_blk_stride, src_rep_stride, reduce_type=reduce_type,
                                 chip=chip, saturate=saturate)
    name = str(getattr(reduce_type, "value", reduce_type)).upper()
    if _product(chip).spr_vcg_clobber == UNDEF and name in ("MAX", "MIN") and spr.maxmin is not None:
        return res, replace(spr, maxmin=(spr.maxmin[0], UNDEF, UNDEF))
    return res, spr


def passthrough(spr: OracleSpr, fn: Callable, *args: Any, **kw: Any):
    """Any call that does not touch the registers: ``(fn(*args, **kw), spr)``."""
    return fn(*args, **kw), spr


def _raise(code: Code, msg: str):
    raise _api.OracleError(code, msg, all_failures=[(code, msg)])


def _type(dtype: Any, api: str) -> str:
    name = _api._dtype_name(dtype)
    if name not in ("float16", "float32"):
        _raise(Code.DTYPE_UNSUPPORTED, f"{api}: T = {dtype}; half or float")
    return name


def get_reduce_repeat_sum_spr(spr: OracleSpr, dtype: Any, *, chip: Any) -> int:
    """GetReduceRepeatSumSpr<T>(): the bits of the sum register read as T."""
    prof = _product(chip)
    if prof.spr_sum == "unsupported":
        _raise(Code.API_UNSUPPORTED, f"GetReduceRepeatSumSpr does not exist on {prof.id}")
    t = _type(dtype, "GetReduceRepeatSumSpr")
    v = spr.sums.get(t, 0 if prof.spr_unwritten == "zero" else UNDEF)
    if v == UNDEF:
        _raise(Code.SPR_UNDEFINED, "GetReduceRepeatSumSpr: the sum register is not defined")
    return int(v)


def get_reduce_repeat_max_min_spr(spr: OracleSpr, dtype: Any, *, chip: Any,
                                  with_index: bool = True) -> Any:
    """GetReduceRepeatMaxMinSpr<T>(value[, index]): ``(value bits, index)`` or value bits."""
    prof = _product(chip)
    form = prof.spr_maxmin
    if form == "unsupported":
        _raise(Code.API_UNSUPPORTED, f"GetReduceRepeatMaxMinSpr does not exist on {prof.id}")
    if (form == "value_index") != bool(with_index):
        _raise(Code.API_UNSUPPORTED, f"GetReduceRepeatMaxMinSpr: {prof.id} has only the "
                                     f"{form} form")
    t = _type(dtype, "GetReduceRepeatMaxMinSpr")
    if spr.maxmin is None and prof.spr_unwritten == "zero":
        return (0, 0) if with_index else 0
    if spr.maxmin is None:
        _raise(Code.SPR_UNDEFINED, "GetReduceRepeatMaxMinSpr: nothing has written the register")
    wt, value, index = spr.maxmin
    if wt != t:
        _raise(Code.DTYPE_MISMATCH, f"GetReduceRepeatMaxMinSpr: T = {t}, the writer's is {wt} "
                                    f"(否则会导致精度错误)")
    if value == UNDEF or (with_index and index == UNDEF):
        _raise(Code.SPR_UNDEFINED, "GetReduceRepeatMaxMinSpr: the register is not defined")
    if not with_index:
        return int(value)
    mask = 0xFFFF if t == "float16" else 0xFFFFFFFF
    return int(value), int(index) & mask
