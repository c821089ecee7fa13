"""Run one :class:`~ascend_ref.fuzz.generate.Case` on two implementations and compare.

An outcome is either an error code or the UB after the call with its ``written`` and
``undefined`` byte masks. Two outcomes agree when both raise the same code, or both succeed
with identical UB bytes outside the bytes either side calls undefined, and identical masks.
Two more outcome kinds come from the fuzz sides: :class:`Crash` (a side raised something
other than a constraint error) and :class:`Skip` (the device under test gave no answer).

The reduce special registers (:mod:`ascend_ref.spr`): an outcome that carries them
(``outcome.spr``: the JAX path's :class:`~ascend_ref.spr.ReduceSpr` or the oracle's own
``OracleSpr``) is read through that side's own getters, for both types, of the register the
case's instruction sets (:func:`readings`: bits, ``(bits, index)`` or the getter's error
code); two sides agree when every reading is equal (:func:`spr_diff`).
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, Dict, Optional, Tuple, Type

import numpy as np

from ..case import Case, Outcome, run_jax, run_oracle  # noqa: F401  (re-exported)
from ..constraints import Code, ConstraintError


class Crash(Outcome):
    """A side raised something other than a constraint error."""

    def __init__(self, side: str, exc: BaseException) -> None:
        super().__init__(None)
        self.side = side
        self.error = f"{type(exc).__name__}: {exc}"
        self.trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-2000:]

    def __repr__(self) -> str:
        return f"Crash({self.side}: {self.error})"


class Skip(Outcome):
    """The device under test did not run the case (or gave no usable answer)."""

    def __init__(self, verdict: str, note: str) -> None:
        super().__init__(None)
        self.verdict, self.note = verdict, note

    def __repr__(self) -> str:
        return f"Skip({self.verdict}: {self.note})"


def safe(fn: Callable[[Case], Outcome], side: str, c: Case) -> Outcome:
    """``fn(c)``, or a :class:`Crash` of ``side`` if it raises."""
    try:
        return fn(c)
    except Exception as e:  # noqa: BLE001
        return Crash(side, e)


def diff(a: Outcome, b: Outcome) -> Optional[str]:
    """None when the outcomes agree, else a one-line reason.

    ``a`` and ``b``: :class:`Outcome` s that raised a constraint error (``code`` a
    :class:`~ascend_ref.constraints.Code`) or ran (``code`` None, with ``ub`` a 1-D
    ``uint8`` array and ``written`` / ``undefined`` ``bool`` arrays of its shape, the same
    on both sides); anything else is BAD_ARGUMENT naming it.

    >>> import numpy as np
    >>> ub, no = np.zeros(4, np.uint8), np.zeros(4, bool)
    >>> diff(Outcome(None, ub, no, no), Outcome(None, ub + 1, no, no))
    '4 byte(s) differ, first at 0: 0x00 vs 0x01'
    """
    _outcome(a, "a")
    _outcome(b, "b")
    if a.code or b.code:
        if a.code == b.code:
            return None
        return f"error {a.code and a.code.name} vs {b.code and b.code.name}"
    # both ran: they carry the UB and its byte masks
    au, aw, ad = _ran(a, "a")
    bu, bw, bd = _ran(b, "b")
    if au.shape != bu.shape:
        raise ConstraintError(Code.BAD_ARGUMENT, api="diff", param="b.ub",
                              value=f"{bu.size} bytes", allowed=f"a's {au.size} bytes",
                              hint="Compare outcomes of the same case")
    undefined = ad | bd
    bad = np.flatnonzero((au != bu) & ~undefined)
    if bad.size:
        k = int(bad[0])
        return f"{bad.size} byte(s) differ, first at {k}: {au[k]:#04x} vs {bu[k]:#04x}"
    if not np.array_equal(ad, bd):
        return f"undefined masks differ at {int(np.flatnonzero(ad != bd)[0])}"
    if not np.array_equal(aw, bw):
        return f"written masks differ at {int(np.flatnonzero(aw != bw)[0])}"
    return None


def _outcome(o: Any, name: str, api: str = "diff") -> None:
    """BAD_ARGUMENT (of ``api``) unless ``o`` is an Outcome whose ``code`` is None or a Code."""
    if not isinstance(o, Outcome) or isinstance(o, (Crash, Skip)):
        what = repr(o) if isinstance(o, (Crash, Skip)) else type(o).__name__
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=name, value=what,
                              allowed="an Outcome that ran or raised a constraint error")
    if o.code is not None and not isinstance(o.code, Code):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=f"{name}.code",
                              value=o.code, allowed="None or an ascend_ref.Code")


def _ran(o: Outcome, name: str,
         api: str = "diff") -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ub, written, undefined)`` of an outcome that ran, as arrays; BAD_ARGUMENT naming
    the first that is missing or of another type or shape."""
    out: list = []
    for field, dtype in (("ub", np.uint8), ("written", np.bool_), ("undefined", np.bool_)):
        x = getattr(o, field)
        arr = x if isinstance(x, np.ndarray) else None
        shape = out[0].shape if out else None
        if arr is None or arr.dtype != dtype or arr.ndim != 1 or \
                (shape is not None and arr.shape != shape):
            value = type(x).__name__ if arr is None else f"{arr.dtype}{list(arr.shape)}"
            allowed = (f"a 1-D {np.dtype(dtype).name} array"
                       + (f" of ub's shape {list(shape)}" if shape is not None else ""))
            raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=f"{name}.{field}",
                                  value=value, allowed=allowed,
                                  hint="An outcome without a code ran: it carries the UB "
                                  "and its byte masks")
        out.append(arr)
    return out[0], out[1], out[2]


# ------------------------------------------------------------------ the registers ----------

_TYPES = ("float16", "float32")


def _registers(case: Case) -> tuple:
    """The registers worth reading after ``case`` run from the fresh state: the one its
    instruction sets (the other is still unwritten on both sides)."""
    sets = case.instruction.spr
    return (sets.register,) if sets is not None else ("sum", "max_min")


def _side_readings(case: Case, st: Any, sum_getter: Callable, max_min_getter: Callable,
                   error: Type[Exception], bits: Callable[[Any, str], int],
                   chip: Any = None) -> Dict[str, Any]:
    """One side's readings through that side's own getters (``error``: its constraint
    exception, whose ``code`` names the getter's refusal; ``bits``: a value as its bits;
    ``chip``: the product argument that side takes, the case's by default)."""
    chip = case.chip if chip is None else chip

    out: Dict[str, Any] = {}
    regs = _registers(case)
    for t in _TYPES:
        if "sum" in regs:
            try:
                out[f"sum.{t}"] = bits(sum_getter(st, t, chip=chip), t)
            except error as e:
                out[f"sum.{t}"] = Code(getattr(e, "code")).name
        for with_index in ((True, False) if "max_min" in regs else ()):
            try:
                got = max_min_getter(st, t, chip=chip, with_index=with_index)
            except error as e:
                code = Code(getattr(e, "code"))
                out[f"max_min.{t}"] = code.name
                if code == Code.API_UNSUPPORTED:
                    continue                 # the other form (or none on the product)
                break
            out[f"max_min.{t}"] = (bits(got[0], t), int(got[1])) if with_index \
                else bits(got, t)
            break
    return out


def _array_bits(v: Any, t: str) -> int:
    return int(np.asarray(v).view(np.uint16 if t == "float16" else np.uint32))


def readings(case: Case, o: Outcome) -> Optional[Dict[str, Any]]:
    """What the getters of ``o``'s own side read from its registers (None: ``o`` carries
    none): ``{"sum.float16": bits | code name, ..., "max_min.float32": (bits, index) | bits |
    code name}``. Cached on the outcome."""
    st = getattr(o, "spr", None)
    if st is None:
        return None
    got = getattr(o, "_readings", None)
    if got is None:
        from ..spr import ReduceSpr

        if isinstance(st, ReduceSpr):
            from .. import spr as sprs
            from ..constraints import ConstraintError

            got = _side_readings(case, st, sprs.get_reduce_repeat_sum_spr,
                                 sprs.get_reduce_repeat_max_min_spr, ConstraintError,
                                 _array_bits)
        else:
            from .. import oracle
            from ..case import oracle_chip

            got = _side_readings(case, st, oracle.spr.get_reduce_repeat_sum_spr,
                                 oracle.spr.get_reduce_repeat_max_min_spr, oracle.OracleError,
                                 lambda v, t: int(v), oracle_chip(case.chip))
        o._readings = got  # type: ignore[attr-defined]
    return got


def spr_diff(case: Case, a: Outcome, b: Outcome) -> Optional[str]:
    """None when both outcomes' register readings agree (or either carries none), else the
    readings that differ, ``"spr max_min.float32"`` (a bit signature)."""
    if getattr(a, "spr", None) is None or getattr(b, "spr", None) is None:
        return None
    ra, rb = readings(case, a), readings(case, b)
    assert ra is not None and rb is not None
    bad = [k for k in ra if ra[k] != rb.get(k)]
    return ("spr " + ",".join(bad)) if bad else None


def spr_detail(case: Case, a: Outcome, b: Outcome) -> str:
    """The differing readings, both sides (a mismatch's detail line)."""
    ra, rb = readings(case, a) or {}, readings(case, b) or {}
    return "; ".join(f"{k}: {_show(ra.get(k))} vs {_show(rb.get(k))}"
                     for k in ra if ra[k] != rb.get(k))


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return f"({v[0]:#x}, index {v[1]})"
    return f"{v:#x}" if isinstance(v, int) else str(v)


def observable(case: Case) -> bool:
    """Whether the registers ``case`` sets can be read on its product (the profile lists the
    getter of the register its instruction sets): only then do the campaign's sides compute
    and compare them."""
    from .. import spr as sprs
    from ..chips import chip as get_chip

    sets = case.instruction.spr
    if sets is None:
        return False
    fact = sprs.SPR_SUM if sets.register == sprs.SUM else sprs.SPR_MAXMIN
    try:
        return sprs._fact(get_chip(case.chip), fact) != "unsupported"
    except Exception:                    # noqa: BLE001 - an unknown product: its error decides
        return False
