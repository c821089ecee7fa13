"""Group mismatches by *bit signature*: what kind of difference, not where.

``signature(case, expected, actual)`` returns a short stable label such as ``"1 ulp"``,
``"index differs"``, ``"nan vs value"``, ``"sign of zero"``, ``"saturated vs inf"``,
``"whole slot missing"``, ``"extra write"`` or ``"error MASK_RANGE vs ok"``; several kinds
join with ``" + "`` in a fixed order. Mismatch groups in fuzz reports and dump verification
use it, so one root cause shows up as one group.

>>> import numpy as np
>>> from ascend_ref.fuzz.signature import classify_values
>>> classify_values(np.float16(1.0).view(np.uint16), np.float16(1.0009766).view(np.uint16), "float16")
'1 ulp'
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from ..case import Case, Outcome
from ..constraints import Code, ConstraintError
from .compare import _outcome, _ran

ORDER = ["error", "whole slot missing", "extra write", "index differs", "nan vs value",
         "value vs nan", "nan payload", "sign of zero", "saturated vs inf", "inf vs saturated",
         "1 ulp", "few ulp", "large", "integer differs", "undefined mask", "written mask"]
_F16_MAX = {0x7BFF, 0xFBFF}


def _ulp_distance(a: int, b: int, size: int) -> int:
    """Distance in representable steps between two same-width float bit patterns."""
    sign = 1 << (8 * size - 1)

    def key(x: int) -> int:
        return -(x & (sign - 1)) if x & sign else x

    return abs(key(a) - key(b))


def classify_values(expected_bits: Union[int, np.integer], actual_bits: Union[int, np.integer],
                    dtype: str) -> str:
    """The kind of difference between two element bit patterns of ``dtype``."""
    e, a = int(expected_bits), int(actual_bits)
    size = np.dtype(dtype).itemsize
    if not dtype.startswith("float"):
        return "integer differs"
    ft = np.dtype(dtype)
    bt = np.dtype(f"uint{8 * size}")
    ev, av = np.array(e, bt).view(ft), np.array(a, bt).view(ft)
    if np.isnan(ev) and np.isnan(av):
        return "nan payload"
    if np.isnan(ev):
        return "nan vs value"
    if np.isnan(av):
        return "value vs nan"
    if ev == 0 and av == 0:
        return "sign of zero"
    if size == 2 and e in _F16_MAX and np.isinf(av):
        return "saturated vs inf"
    if size == 2 and a in _F16_MAX and np.isinf(ev):
        return "inf vs saturated"
    d = _ulp_distance(e, a, size)
    return "1 ulp" if d == 1 else ("few ulp" if d <= 16 else "large")


def _roles(case: Case, addr: int) -> str:
    """``"index"`` if byte ``addr`` belongs to an index field of the case's result, else value
    (the instruction's declared result layout)."""
    s = np.dtype(case.dtype).itemsize
    lay = case.instruction.layout(case.dtype, case.option)
    for name in ("dst", "work_tensor"):
        if name in case.tensors:
            a, n = case.tensors[name]
            if a <= addr < a + n * s:
                return lay.role(name, addr - a)
    return "value"


def signature(case: Case, expected: Outcome, actual: Outcome) -> Optional[str]:
    """Label of the difference between two outcomes of ``case`` (None when they agree).

    The outcomes are checked as :func:`~ascend_ref.fuzz.compare.diff` checks them: an
    Outcome that raised a constraint error, or one that ran with a 1-D ``uint8`` UB and
    ``bool`` masks of its shape, the same size on both sides; anything else is BAD_ARGUMENT.
    """
    if not isinstance(case, Case):
        raise ConstraintError(Code.BAD_ARGUMENT, api="signature", param="case",
                              value=type(case).__name__, allowed="an ascend_ref Case")
    _outcome(expected, "expected", "signature")
    _outcome(actual, "actual", "signature")
    if expected.code or actual.code:
        if expected.code == actual.code:
            return None
        name = lambda c: c.name if c is not None else "ok"  # noqa: E731
        return f"error {name(expected.code)} vs {name(actual.code)}"
    # both ran: they carry the UB and its byte masks
    _ran(expected, "expected", "signature")
    _ran(actual, "actual", "signature")
    assert expected.ub is not None and expected.written is not None \
        and expected.undefined is not None                          # (checked by _ran)
    assert actual.ub is not None and actual.written is not None and actual.undefined is not None
    if actual.ub.shape != expected.ub.shape:
        raise ConstraintError(Code.BAD_ARGUMENT, api="signature", param="actual.ub",
                              value=f"{actual.ub.size} bytes",
                              allowed=f"expected's {expected.ub.size} bytes",
                              hint="Compare outcomes of the same case")
    undefined = expected.undefined | actual.undefined
    differ = (expected.ub != actual.ub) & ~undefined
    kinds = set()
    s = np.dtype(case.dtype).itemsize
    before = case.ub
    # a device (dump, external command) cannot say which bytes it wrote: its outcome borrows
    # the reference's masks (the same array); then an unchanged word counts as not written
    borrowed = actual.written is expected.written
    for word in np.unique(np.flatnonzero(differ) // s):
        lo = word * s
        e = int(expected.ub[lo:lo + s].view(f"uint{8 * s}")[0])
        a = int(actual.ub[lo:lo + s].view(f"uint{8 * s}")[0])
        was = int(before[lo:lo + s].view(f"uint{8 * s}")[0]) if lo + s <= before.size else None
        if expected.written[lo] and (not actual.written[lo] or
                                     (borrowed and a == was and e != was)):
            kinds.add("whole slot missing")
        elif not expected.written[lo]:
            kinds.add("extra write")
        elif _roles(case, lo) == "index":
            kinds.add("index differs")
        else:
            kinds.add(classify_values(e, a, case.dtype))
    if not kinds:
        if not np.array_equal(expected.undefined, actual.undefined):
            kinds.add("undefined mask")
        elif not np.array_equal(expected.written, actual.written):
            kinds.add("written mask")
        else:
            return None
    return " + ".join(k for k in ORDER if k in kinds)


__all__ = ["signature", "classify_values", "ORDER"]
