"""The reduce special registers in dumps (docs/verify.md §1c; :mod:`ascend_ref.spr`).

A dump case may carry, in its ``meta``, what the device's getters read after the call
(``spr.after``) and, optionally, the register state before it (``spr.before``)::

    "spr": {"before": "fresh" | READING,           # optional: absent = not known
            "after": READING}
    READING = {"sum": {"half": bits, "float": bits},            # GetReduceRepeatSumSpr<T>()
               "max_min": {"dtype": "half" | "float",            # GetReduceRepeatMaxMinSpr<T>
                           "value": bits, "index": n}}           # every part optional

``bits`` are the register's bits read as T (an int, or a ``"0x..."`` string; a half in the
low 16 bits), ``index`` the integer of the page's ``reinterpret_cast``. A reading the
product's getters cannot make (no such getter on the product, the index on a value-only
product) is bad input. Registers the reference leaves undefined after the call (nothing
wrote them, a non-contiguous write, the index after a level-2 ReduceMax, a reading with
another T than the writer's, a register ``before`` did not give and the call did not
write) are skipped and counted, as undefined bytes are.

``before``: ``"fresh"`` is the state before any reduction (nothing written); a READING sets
each register it names to those bits (defined), every register it does not name is not
known (undefined); without ``before`` no register is known before the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import spr as sprs
from ..chips import chip as get_chip, chips as all_chips
from ..constraints import ConstraintError
from ..ub import dtype_from_text

#: the flat names of the readings a dump records, in report order
SUM_KEYS = ("sum.float16", "sum.float32")
MM_KEYS = ("max_min.value", "max_min.index")
_WIDTH = {"float16": 0xFFFF, "float32": 0xFFFFFFFF}


@dataclass
class SprDump:
    """The registers of one dump case: ``before`` (a :class:`~ascend_ref.spr.ReduceSpr`) and
    ``after`` (flat reading name -> int; ``"max_min.dtype"`` -> the T of the max/min
    reading), ``raw`` the JSON object as the dump holds it."""

    before: Any
    after: Dict[str, Any]
    raw: dict = field(default_factory=dict)


class SprFormatError(ValueError):
    """A malformed ``spr`` object: ``field`` (``meta.spr...``) and ``reason``."""

    def __init__(self, fld: str, reason: str) -> None:
        self.field, self.reason = fld, reason
        super().__init__(f"{fld}: {reason}")


# ------------------------------------------------------------------ parsing ----------------

def _bits(v: Any, fld: str, hi: int) -> int:
    if isinstance(v, str):
        try:
            v = int(v, 0)
        except ValueError:
            raise SprFormatError(fld, f"{v!r} is not an integer (decimal or 0x hex)") from None
    if isinstance(v, bool) or not isinstance(v, int):
        raise SprFormatError(fld, f"{v!r} is not an integer")
    if not 0 <= v <= hi:
        raise SprFormatError(fld, f"{v} outside [0, {hi:#x}]")
    return v


def _type(v: Any, fld: str) -> str:
    t = dtype_from_text(v) if isinstance(v, str) else None
    if t not in sprs.TYPES:
        raise SprFormatError(fld, f"{v!r}: the registers hold half or float")
    return str(t)


def _others(chip_id: str, fact: str, ok: Callable[[str], bool]) -> List[str]:
    return [c for c in all_chips() if ok(sprs._fact(get_chip(c), fact))]


def parse_reading(obj: Any, fld: str, chip_id: str) -> Dict[str, Any]:
    """A READING object -> flat ``{name: int, "max_min.dtype": T}`` (raises
    :class:`SprFormatError`; readings the product's getters cannot make included)."""
    if not isinstance(obj, dict):
        raise SprFormatError(fld, "expected an object {\"sum\": ..., \"max_min\": ...}")
    unknown = sorted(set(obj) - {"sum", "max_min"})
    if unknown:
        raise SprFormatError(f"{fld}.{unknown[0]}", "unknown register (known: sum, max_min)")
    prof = get_chip(chip_id)
    out: Dict[str, Any] = {}
    if "sum" in obj:
        s = obj["sum"]
        f = f"{fld}.sum"
        if sprs._fact(prof, sprs.SPR_SUM) == "unsupported":
            raise SprFormatError(f, f"{chip_id} has no GetReduceRepeatSumSpr (products with it: "
                                    f"{_others(chip_id, sprs.SPR_SUM, lambda v: v != 'unsupported')})")
        if not isinstance(s, dict):
            raise SprFormatError(f, "expected an object {\"half\": bits, \"float\": bits}")
        for k, v in s.items():
            t = _type(k, f"{f}.{k}")
            out[f"sum.{t}"] = _bits(v, f"{f}.{k}", _WIDTH[t])
    if "max_min" in obj:
        m = obj["max_min"]
        f = f"{fld}.max_min"
        form = sprs._fact(prof, sprs.SPR_MAXMIN)
        if form == "unsupported":
            raise SprFormatError(f, f"{chip_id} has no GetReduceRepeatMaxMinSpr (products with "
                                    f"it: {_others(chip_id, sprs.SPR_MAXMIN, lambda v: v != 'unsupported')})")
        if not isinstance(m, dict):
            raise SprFormatError(f, "expected an object {\"dtype\": T, \"value\": bits, "
                                    "\"index\": n}")
        unknown = sorted(set(m) - {"dtype", "value", "index"})
        if unknown:
            raise SprFormatError(f"{f}.{unknown[0]}", "unknown field (known: dtype, value, index)")
        if "dtype" not in m:
            raise SprFormatError(f"{f}.dtype", "missing (the T the getter read with)")
        t = _type(m["dtype"], f"{f}.dtype")
        out["max_min.dtype"] = t
        if "value" in m:
            out["max_min.value"] = _bits(m["value"], f"{f}.value", _WIDTH[t])
        if "index" in m:
            if form != "value_index":
                raise SprFormatError(f"{f}.index", f"{chip_id} has only the value-only form of "
                                                   f"GetReduceRepeatMaxMinSpr (no index)")
            out["max_min.index"] = _bits(m["index"], f"{f}.index", _WIDTH[t])
    return out


def unknown_state(dtype: str = "float32") -> sprs.ReduceSpr:
    """Registers not known: every reading undefined (what a dump without ``before`` says)."""
    return sprs.ReduceSpr(sum_written=np.ones(2, bool),
                          mm_dtype=np.int32(sprs.type_code(dtype) or 1))


def state_from(reading: Dict[str, Any], dtype: str = "float32") -> sprs.ReduceSpr:
    """The state a parsed READING describes (what it does not name: not known)."""
    st = unknown_state(reading.get("max_min.dtype", dtype))
    bits, defined = np.array(st.sum_bits), np.array(st.sum_defined)
    for k, t in enumerate(sprs.TYPES):
        if f"sum.{t}" in reading:
            bits[k], defined[k] = reading[f"sum.{t}"], True
    return sprs.ReduceSpr(
        bits, np.ones(2, bool), defined, np.int32(0),
        np.uint32(reading.get("max_min.value", 0)), np.uint32(reading.get("max_min.index", 0)),
        st.mm_dtype, np.bool_("max_min.value" in reading), np.bool_("max_min.index" in reading))


def parse(obj: Any, chip_id: str, dtype: str) -> SprDump:
    """A case's ``meta.spr`` (raises :class:`SprFormatError`)."""
    if not isinstance(obj, dict):
        raise SprFormatError("meta.spr", "expected an object {\"before\": ..., \"after\": ...}")
    unknown = sorted(set(obj) - {"before", "after"})
    if unknown:
        raise SprFormatError(f"meta.spr.{unknown[0]}", "unknown field (known: before, after)")
    if "after" not in obj:
        raise SprFormatError("meta.spr.after", "missing (what the getters read after the call)")
    after = parse_reading(obj["after"], "meta.spr.after", chip_id)
    b = obj.get("before")
    if b is None:
        before = unknown_state(dtype if dtype in sprs.TYPES else "float32")
    elif b == "fresh":
        before = sprs.fresh()
    else:
        before = state_from(parse_reading(b, "meta.spr.before", chip_id),
                            dtype if dtype in sprs.TYPES else "float32")
    return SprDump(before, after, obj)


# ------------------------------------------------------------------ reading a state --------

def read(state: Any, chip: Any, names: Any = None, mm_dtype: Optional[str] = None
         ) -> Dict[str, Tuple[int, bool]]:
    """What the product's getters read from one concrete ``state``: ``{name: (bits,
    defined)}`` for ``names`` (default: every reading the product has; ``mm_dtype``: the T of
    the max/min reading, default the writer's). A max/min reading with another T than its
    writer's is undefined ("否则会导致精度错误")."""
    prof = get_chip(chip)
    out: Dict[str, Tuple[int, bool]] = {}
    has_sum = sprs._fact(prof, sprs.SPR_SUM) != "unsupported"
    form = sprs._fact(prof, sprs.SPR_MAXMIN)
    want = set(names) if names is not None else \
        (set(SUM_KEYS) if has_sum else set()) | \
        ({"max_min.value"} | ({"max_min.index"} if form == "value_index" else set())
         if form != "unsupported" else set())
    for k, t in enumerate(sprs.TYPES):
        if f"sum.{t}" in want and has_sum:
            v, info = sprs.get_reduce_repeat_sum_spr(state, t, chip=prof, return_info=True)
            out[f"sum.{t}"] = (_int_bits(v, t), bool(np.asarray(info.value_defined)))
    if want & set(MM_KEYS) and form != "unsupported":
        code = int(np.asarray(state.mm_dtype))
        t = mm_dtype or (sprs.TYPES[code - 1] if code else "float32")
        same = code in (0, sprs.type_code(t))
        probe = state if same else sprs.ReduceSpr(
            state.sum_bits, state.sum_written, state.sum_defined, state.sum_dtype,
            state.mm_value, state.mm_index, np.int32(sprs.type_code(t)),
            np.bool_(False), np.bool_(False))
        got, info = sprs.get_reduce_repeat_max_min_spr(
            probe, t, chip=prof, with_index=form == "value_index", return_info=True)
        value, index = got if form == "value_index" else (got, None)
        if "max_min.value" in want:
            out["max_min.value"] = (_int_bits(value, t), bool(np.asarray(info.value_defined)))
        if "max_min.index" in want and index is not None:
            out["max_min.index"] = (int(np.asarray(index)), bool(np.asarray(info.index_defined)))
    return out


def _int_bits(v: Any, t: str) -> int:
    return int(np.asarray(v).astype(t).view(np.uint16 if t == "float16" else np.uint32))


def reference_after(case: Any, before: Any) -> Any:
    """The reference's register state after ``case`` from ``before`` (the direct path; None
    when the reference rejects the call)."""
    from ..case import JAX

    try:
        return case.call(JAX, return_info=True, spr=before)[1].spr
    except ConstraintError:
        return None


@dataclass
class SprVerdict:
    """The comparison of a case's registers: ``differ`` (reading names), ``skipped``
    (recorded readings the reference leaves undefined), ``reference`` (its readings)."""

    differ: List[str]
    skipped: List[str]
    reference: Dict[str, Tuple[int, bool]]


def compare(case: Any, sd: SprDump, chip: Any = None) -> Optional[SprVerdict]:
    """Compare the device's readings ``sd.after`` with the reference's (``chip``: another
    profile, for the audit's counterfactuals); None when the reference rejects the call."""
    c = case
    if chip is not None:
        import copy

        c = copy.copy(case)
        c.chip = chip
    state = reference_after(c, sd.before)
    if state is None:
        return None
    names = [k for k in sd.after if k != "max_min.dtype"]
    ref = read(state, c.chip, names, sd.after.get("max_min.dtype"))
    differ, skipped = [], []
    for k in names:
        bits, defined = ref.get(k, (0, False))
        if not defined:
            skipped.append(k)
        elif bits != sd.after[k]:
            differ.append(k)
    return SprVerdict(differ, skipped, ref)


def signature(v: Optional[SprVerdict]) -> Optional[str]:
    """The mismatch signature of a register comparison (None: agree)."""
    if v is None or not v.differ:
        return None
    return "spr " + ",".join(v.differ)


def to_json(reading: Dict[str, Tuple[int, bool]], mm_dtype: Optional[str]) -> dict:
    """A READING object of ``reading`` (``read``'s output; undefined readings too: a device
    reads some bits there)."""
    out: Dict[str, Any] = {}
    sums = {("half" if k.endswith("float16") else "float"): b
            for k, (b, _) in reading.items() if k.startswith("sum.")}
    if sums:
        out["sum"] = sums
    mm = {k.split(".")[1]: b for k, (b, _) in reading.items() if k.startswith("max_min.")}
    if mm:
        out["max_min"] = {"dtype": "half" if mm_dtype == "float16" else "float", **mm}
    return out


def reference_dump(case: Any) -> Optional[dict]:
    """The ``spr`` object a device that behaves like the reference records for ``case`` run
    from the fresh state (None: the product has no getter, or the call is rejected)."""
    state = reference_after(case, sprs.fresh())
    if state is None:
        return None
    reading = read(state, case.chip)
    if not reading:
        return None
    code = int(np.asarray(state.mm_dtype))
    t = sprs.TYPES[code - 1] if code else "float32"
    return {"before": "fresh", "after": to_json(reading, t)}


def dump_of(before: Any, after: Any, chip: Any, first: bool = False) -> Optional[dict]:
    """The ``spr`` object of a call in a chain (golden kernels): ``after`` every reading the
    product's getters make of the state after the call; ``before`` ``"fresh"`` for the first
    call (``first``), else the readings of the state before it that the reference defines
    (the others: not known). None when the product has no getter."""
    def reading(state: Any) -> Tuple[Dict[str, Tuple[int, bool]], str]:
        code = int(np.asarray(state.mm_dtype))
        t = sprs.TYPES[code - 1] if code else "float32"
        return read(state, chip), t

    got, t = reading(after)
    if not got:
        return None
    out: Dict[str, Any] = {"after": to_json(got, t)}
    if first:
        out["before"] = "fresh"
    else:
        prev, pt = reading(before)
        known = {k: v for k, v in prev.items() if v[1]}
        if "max_min.index" in known and "max_min.value" not in known:
            known.pop("max_min.index")
        if known:
            out["before"] = to_json(known, pt)
    return out


__all__ = ["SprDump", "SprFormatError", "SprVerdict", "parse", "parse_reading", "read",
           "compare", "signature", "reference_dump", "dump_of", "state_from", "unknown_state"]
