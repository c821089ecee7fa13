"""Constraint codes, the error type, and rules that evaluate eagerly *and* inside jit.

Every documented constraint has a stable :class:`Code`. A rule is written once, as a
predicate over the call's parameters that works on Python ints, numpy and traced JAX values
alike (only ``&``, ``|``, ``~`` and comparisons). Eager calls evaluate the rules on concrete
values and raise :class:`ConstraintError`; traced and batched calls evaluate the same rules
into an int32 status (``0`` = ok, else the first failing code).

>>> from ascend_ref.constraints import Code, explain
>>> int(Code.MASK_RANGE), explain(int(Code.MASK_RANGE)).split(":")[0]
(7, 'MASK_RANGE')
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

if TYPE_CHECKING:
    import jax


class Code(enum.IntEnum):
    """Stable constraint codes (also the int32 per-case status of batched runs). Never renumber."""

    OK = 0
    CHIP_UNKNOWN = 1
    API_UNSUPPORTED = 2
    DTYPE_UNSUPPORTED = 3
    DTYPE_MISMATCH = 4
    ORDER_UNSUPPORTED = 5
    REDUCE_TYPE = 6
    MASK_RANGE = 7
    MASK_BITS = 8
    MASK_ZERO = 9
    REPEAT_RANGE = 10
    STRIDE_RANGE = 11
    DST_STRIDE_ZERO = 12
    ALIGN = 13
    UB_BOUNDS = 14
    TENSOR_BOUNDS = 15
    OVERLAP = 16
    WORK_SIZE = 17
    INDEX_OVERFLOW = 18
    SATURATE_DTYPE = 19
    BAD_ARGUMENT = 20
    SPR_UNDEFINED = 21
    MASK_MODE = 22

    def __str__(self) -> str:
        return self.name


DESCRIPTIONS = {
    Code.OK: "no constraint violated",
    Code.CHIP_UNKNOWN: "the product id has no profile in configs/chips/",
    Code.API_UNSUPPORTED: "the API does not exist on this product",
    Code.DTYPE_UNSUPPORTED: "the element type is not supported by this API on this product",
    Code.DTYPE_MISMATCH: "operands of one call must share one element type",
    Code.ORDER_UNSUPPORTED: "this ReduceOrder is not supported on this product",
    Code.REDUCE_TYPE: "reduce_type must be SUM, MAX or MIN",
    Code.MASK_RANGE: "continuous mask outside [1, lanes per repeat]",
    Code.MASK_BITS: "bit mask has the wrong number of words or a word outside [0, 2^64-1] "
                    "or lanes that do not exist for this type",
    Code.MASK_ZERO: "mask 0 (or an all-zero bit mask) is outside the documented range here",
    Code.REPEAT_RANGE: "repeat count outside its documented range",
    Code.STRIDE_RANGE: "stride outside [0, 65535]",
    Code.DST_STRIDE_ZERO: "dstRepStride = 0 is not supported on this product",
    Code.ALIGN: "operand start address not aligned as documented",
    Code.UB_BOUNDS: "a tensor's declared extent leaves the Unified Buffer",
    Code.TENSOR_BOUNDS: "an access leaves the declared extent of its tensor",
    Code.OVERLAP: "operands overlap in a way the documentation forbids",
    Code.WORK_SIZE: "work_tensor is smaller than the documented need",
    Code.INDEX_OVERFLOW: "the result index does not fit in 16 bits (above 65535)",
    Code.SATURATE_DTYPE: "saturation mode exists for half only (and is the only mode on a "
                         "product with saturate_only)",
    Code.BAD_ARGUMENT: "an argument has the wrong Python type or shape",
    Code.SPR_UNDEFINED: "a reduce special register getter read a register no call left "
                        "defined (unwritten, non-contiguous writer, ReduceMax's index, ...)",
    Code.MASK_MODE: "counter mask mode (SetMaskCount, ar.CounterMask) is not available for "
                    "this API or on this product",
}


def explain(code: Union[int, str, "Code"]) -> str:
    """One line naming a status code and what it means (for batched status arrays): an int
    (numpy's too), a :class:`Code` member or its name.

    >>> explain(14), explain("UB_BOUNDS") == explain(14)
    ("UB_BOUNDS: a tensor's declared extent leaves the Unified Buffer", True)
    """
    c: Optional[Code] = None
    if isinstance(code, str):
        c = Code.__members__.get(code.strip().upper())
    elif not (isinstance(code, bool) or str(getattr(code, "dtype", "")) == "bool"):
        try:
            f = float(code)
            c = Code(int(f)) if f.is_integer() else None
        except (TypeError, ValueError, OverflowError):
            c = None
    if c is None:
        raise ConstraintError(Code.BAD_ARGUMENT, api="explain", param="code", value=code,
                              allowed=f"a status code: an int in [0, {int(max(Code))}], a Code "
                                      "member or its name (e.g. 'UB_BOUNDS')")
    return f"{c.name}: {DESCRIPTIONS[c]}"


class ConstraintError(ValueError):
    """A documented constraint is violated. ``code`` is stable; the message says how to fix it."""

    def __init__(self, code: Code, *, api: str, param: str, value: Any, allowed: str,
                 chip: Optional[str] = None, hint: str = "") -> None:
        self.code = Code(code)
        self.api, self.param, self.value, self.allowed, self.chip = api, param, value, allowed, chip
        self.hint = hint
        where = f" on {chip}" if chip and param != "chip" else ""   # the value names it
        msg = f"[{self.code.name}] {api}: {param} = {value!r} is not allowed{where}; allowed: {allowed}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)

    def renamed(self, names: Mapping[str, str], api: Optional[str] = None) -> "ConstraintError":
        """The same error with the operands named as the public function names them
        (``names``: operand key -> public parameter, ``Instruction.arg_names``): in ``param``
        (``work_tensor.size`` -> ``shared_tmp_buffer.size``, ``dst/work_tensor``) and in
        the words of ``allowed`` and the hint; ``api``: the function the caller called, where
        that is another name of the instruction (``block_reduce_max`` runs reduce_data_block).

        >>> e = ConstraintError(Code.WORK_SIZE, api="reduce_sum", param="work_tensor.size",
        ...                     value=1, allowed=">= 16 elements")
        >>> print(e.renamed({"work_tensor": "shared_tmp_buffer"}))
        [WORK_SIZE] reduce_sum: shared_tmp_buffer.size = 1 is not allowed; allowed: >= 16 elements
        >>> e = ConstraintError(Code.MASK_RANGE, api="reduce_data_block", param="mask",
        ...                     value=300, allowed="[1, 128]")
        >>> print(e.renamed({}, api="block_reduce_max"))
        [MASK_RANGE] block_reduce_max: mask = 300 is not allowed; allowed: [1, 128]
        """
        def words(text: str) -> str:
            for key, public in names.items():
                text = re.sub(rf"\b{re.escape(key)}\b", public, text)
            return text

        return ConstraintError(self.code, api=api or self.api, param=words(self.param),
                               value=self.value, allowed=words(self.allowed), chip=self.chip,
                               hint=words(self.hint))


@dataclass(frozen=True)
class Rule:
    """One documented constraint, evaluable on concrete or traced values.

    ``ok(p)`` returns a bool (or a traced bool) saying the rule holds for parameters ``p``;
    ``value(p)`` and ``allowed(p)`` produce the message parts when it fails (concrete only).
    """

    code: Code
    param: str
    # called with the parameter dict alone; ``...``: the lambdas bind loop values as defaults
    ok: Callable[..., Any]
    value: Callable[..., Any]
    allowed: Callable[..., str]
    hint: str = ""
    #: the constraint in words, as a call's constraint list shows it (:class:`Constraint`)
    doc: str = ""


#: a :class:`Constraint` checked in Python before the kernel: the first failing one raises
HOST = "host"
#: a :class:`Constraint` evaluated in the kernel (eager, jit, batch): the lowest code wins
TRACED = "traced"


@dataclass(frozen=True)
class Constraint:
    """One entry of a call's constraint list (:meth:`ascend_ref.registry.Instruction.rules`).

    ``stage``: :data:`HOST` (structural, in Python, in list order: the first that fails
    raises, before any kernel runs) or :data:`TRACED` (a :class:`Rule`, ``rule``; evaluated
    in the kernel on concrete or traced values; the lowest failing code is reported, and the
    list holds them by code, so it is also the first failing one in the list).
    """

    stage: str
    code: Code
    param: str
    doc: str
    rule: Optional[Rule] = None

    def __str__(self) -> str:
        return f"{self.stage:<6}  {self.code.name:<17}  {self.param:<18}  {self.doc}"


@dataclass(frozen=True)
class HostCheck:
    """A host-stage check an instruction declares (``registry.Instruction.checks``): ``fn``
    raises :class:`ConstraintError` with ``code`` for ``param``; ``doc`` states the rule."""

    code: Code
    param: str
    doc: str
    fn: Callable[..., None]

    def __call__(self, *args: Any) -> None:
        self.fn(*args)

    def constraint(self) -> Constraint:
        return Constraint(HOST, self.code, self.param, self.doc)


def in_range(x: Any, lo: Any, hi: Any) -> Any:
    """``lo <= x <= hi`` written with ``&`` so it also works on traced arrays."""
    return (x >= lo) & (x <= hi)


def first_failure(rules: Sequence[Rule], p: Any) -> Optional[Rule]:
    """Eager evaluation: the first rule (by code order, then list order) that fails, or None."""
    failing = [r for r in rules if not bool(r.ok(p))]
    return min(failing, key=lambda r: int(r.code)) if failing else None


def raise_first(rules: Sequence[Rule], p: Any, *, api: str, chip: str) -> None:
    """Raise :class:`ConstraintError` for the first failing rule, if any."""
    r = first_failure(rules, p)
    if r is not None:
        raise ConstraintError(r.code, api=api, param=r.param, value=r.value(p),
                              allowed=r.allowed(p), chip=chip, hint=r.hint)


def status_of(rules: Sequence[Rule], p: Any) -> jax.Array:
    """Traced evaluation: int32 status, 0 when every rule holds, else the lowest failing code."""
    import jax.numpy as jnp

    status = jnp.int32(0)
    for r in sorted(rules, key=lambda r: -int(r.code)):
        status = jnp.where(jnp.asarray(r.ok(p)), status, jnp.int32(int(r.code)))
    return status
