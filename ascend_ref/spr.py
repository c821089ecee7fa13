"""The reduce special registers as explicit, pure state (issue 14 item 2; SEMANTICS §P).

Two Ascend C getters read what an earlier reduction left behind
(asc-devkit ``.../归约计算/寄存器辅助接口/``, current pages):

* ``GetReduceRepeatSumSpr<T>()`` (old name ``GetAccVal``): the result of the **count form**
  of ``ReduceSum`` ("仅支持tensor前n个数据连续计算接口使用"; "计算结果以全局变量形式存储，可以随时调用获取").
  Products: Ascend 950, Atlas A3, Atlas A2. On A2/A3 it is the hardware ``ACC_VAL`` register
  (one register for both types: ``GetAccValImpl`` reinterprets its low bytes as T,
  impl/basic_api/dav_c220); on 950 two block-local globals, one per type, set at the end of a
  half / float count-form ReduceSum (dav_3510 ``accValHalf`` / ``accValFloat``).
* ``GetReduceRepeatMaxMinSpr<T>(value, index)`` / ``GetReduceRepeatMaxMinSpr<T>(value)`` (old
  name ``GetReduceMaxMinCount``): after ``ReduceRepeat<MAX|MIN>`` (WholeReduceMax / Min) "所有
  repeat内的最值及其索引"; after level-2 ``ReduceMax`` / ``ReduceMin`` the value is exact, the
  index is not ("此时获取的索引不准确"). Only in the contiguous case (``srcRepStride = 8``,
  ``srcBlkStride = 1``), not in counter mask mode. Products: the value + index form on A3 and
  A2, the value-only form on the inference-series AI Core; **not** on Ascend 950 (the current
  page; the previous page listed it: SEMANTICS §P, contradiction C3). T must be the dst type of
  the reduction that set it ("否则会导致精度错误").

Model. The registers are a value, :class:`ReduceSpr` (a frozen dataclass registered as a
pytree: it goes through ``jit`` and ``vmap`` -- a batch of states is a ``ReduceSpr`` whose
leaves have a leading axis), never hidden global state:

* every instruction function takes ``spr=`` (keyword-only; the state before the call, default
  :func:`fresh`: nothing written yet) and, with ``return_info=True``, returns the state after
  the call as ``info.spr``; a call that does not touch a register passes it through;
* which call sets what is **declared** by the instruction file: its kernel's ``spr`` is a
  :class:`Sets` (register, words, the update computed from the call's data); the engine
  applies it (:func:`after`) only when the call ran without error (status 0) and was not a
  NOP (repeat 0 / mask 0 leave the registers as they were);
* the getters (:func:`get_reduce_repeat_sum_spr`, :func:`get_reduce_repeat_max_min_spr`;
  ``ar.ascendc`` exports them with the old names too) read it.

What the pages leave open is a named profile field, marked ``assumed`` in the profiles
(declared in ``ascendc/_spr_hooks.py``): the index after a multi-repeat ReduceRepeat (``spr_maxmin_index``), reading
a register nothing wrote (``spr_unwritten``), reading the sum register with another T than its
writer (``spr_sum_other_type``), and whether ReduceDataBlock MAX / MIN (``vcgmax`` /
``vcgmin``) changes the max/min register (``spr_vcg_clobber``).

Reading an undefined register (not written, written by a non-contiguous call, the index
after a level-2 ReduceMax, ...): with a concrete state the getter raises
:class:`~ascend_ref.constraints.ConstraintError` ``SPR_UNDEFINED``; with ``return_info=True``
(and always under ``jit``, where it cannot raise) it returns the bits with the ``defined``
flags (:class:`SprRead`).

>>> import numpy as np, ascend_ref as ar
>>> x = np.arange(64, dtype=np.float32); x[17] = 99.0
>>> ub = ar.store(ar.new_ub("atlas_a2"), 0, x)
>>> ub, info = ar.ascendc.whole_reduce_max(ub, ar.Tensor(512, "float", 2), ar.Tensor(0, "float", 64),
...                                       64, 1, 1, 1, 8, chip="atlas_a2", return_info=True)
>>> value, index = ar.ascendc.get_reduce_repeat_max_min_spr(info.spr, "float", chip="atlas_a2")
>>> float(value), int(index)
(99.0, 17)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from .batch_args import flag
from .constraints import Code, ConstraintError

#: the types the registers hold ("操作数支持的数据类型为：half、float"), as their codes in the
#: state (0: nothing written)
TYPES = ("float16", "float32")
SUM, MAX_MIN = "sum", "max_min"

# ------------------------------------------------------------------ product facts -----------
# The profile fields (declared by the setting instructions: ascendc/_spr_hooks.py) the getters
# read on the host, with the value a profile without them has.

SPR_SUM, SPR_MAXMIN, SPR_UNWRITTEN = "spr_sum", "spr_maxmin", "spr_unwritten"
_DEFAULTS = {SPR_SUM: "unsupported", SPR_MAXMIN: "unsupported", SPR_UNWRITTEN: "undefined"}


# ------------------------------------------------------------------ the state ---------------

def _pytree(cls: Any) -> Any:
    import dataclasses

    return jax.tree_util.register_dataclass(
        cls, data_fields=[f.name for f in dataclasses.fields(cls)], meta_fields=[])


def _u32(v: Any = 0) -> Any:
    return np.uint32(v)


@_pytree
@dataclass(frozen=True)
class ReduceSpr:
    """The reduce special registers of one AI Core (or, with a leading axis on every leaf, a
    batch of them). ``ReduceSpr()`` is the state before any reduction.

    Sum register, one slot per type (index 0 half, 1 float): ``sum_bits`` (uint32, a half in
    the low 16 bits), ``sum_written`` (a call wrote the slot or the register behind it),
    ``sum_defined``; ``sum_dtype`` the type code of the last writer (0 none, 1 half, 2 float).
    Max/min register: ``mm_value`` / ``mm_index`` bits (uint32; the index as the integer the
    page's ``reinterpret_cast`` yields), ``mm_dtype`` (0: never written), ``mm_value_defined``,
    ``mm_index_defined``.
    """

    sum_bits: Any = field(default_factory=lambda: np.zeros(2, np.uint32))
    sum_written: Any = field(default_factory=lambda: np.zeros(2, bool))
    sum_defined: Any = field(default_factory=lambda: np.zeros(2, bool))
    sum_dtype: Any = field(default_factory=lambda: np.int32(0))
    mm_value: Any = field(default_factory=_u32)
    mm_index: Any = field(default_factory=_u32)
    mm_dtype: Any = field(default_factory=lambda: np.int32(0))
    mm_value_defined: Any = field(default_factory=lambda: np.bool_(False))
    mm_index_defined: Any = field(default_factory=lambda: np.bool_(False))

    def __repr__(self) -> str:
        leaves = jax.tree_util.tree_leaves(self)
        if not all(_concrete(x) for x in leaves):
            return "ReduceSpr(<traced>)"
        bad = malformed(self)
        if bad is not None:
            return f"ReduceSpr(<malformed: {bad}>)"
        if np.ndim(self.mm_dtype) > 0:
            return f"ReduceSpr(<batch of {np.shape(self.mm_dtype)}>)"
        return f"ReduceSpr(sum={self._sum_text()}, max_min={self._mm_text()})"

    def __eq__(self, other: Any) -> bool:
        """Every field the same (bit for bit; shapes and types included); a dataclass's
        field-tuple comparison raised numpy's 'truth value of an array is ambiguous'."""
        if not isinstance(other, ReduceSpr):
            return NotImplemented
        a, b = jax.tree_util.tree_leaves(self), jax.tree_util.tree_leaves(other)
        return len(a) == len(b) and all(_same_leaf(x, y) for x, y in zip(a, b))

    __hash__ = None  # type: ignore[assignment]          # mutable arrays: not hashable

    def _sum_text(self) -> str:
        parts = []
        for k, t in enumerate(TYPES):
            if not bool(self.sum_written[k]):
                continue
            parts.append(f"{t}: " + (_show(int(self.sum_bits[k]), t) if bool(self.sum_defined[k])
                                     else "undefined"))
        return "{" + ", ".join(parts) + "}" if parts else "unwritten"

    def _mm_text(self) -> str:
        code = int(self.mm_dtype)
        if code == 0:
            return "unwritten"
        t = TYPES[code - 1]
        v = _show(int(self.mm_value), t) if bool(self.mm_value_defined) else "undefined"
        i = str(int(self.mm_index)) if bool(self.mm_index_defined) else "undefined"
        return f"{{{t}: value {v}, index {i}}}"


def _show(bits: int, dtype: str) -> str:
    v = np.array([bits], np.uint32).astype(np.uint16 if dtype == "float16" else np.uint32)
    return f"{float(v.view(np.float16 if dtype == 'float16' else np.float32)[0])!r} ({bits:#x})"


def fresh() -> ReduceSpr:
    """The registers before any reduction: nothing written."""
    return ReduceSpr()


def _concrete(x: Any) -> bool:
    return not isinstance(x, jax.core.Tracer)


def is_concrete(state: Any) -> bool:
    return all(_concrete(x) for x in jax.tree_util.tree_leaves(state))


def _same_leaf(x: Any, y: Any) -> bool:
    if not (_concrete(x) and _concrete(y)):
        return x is y
    a, b = np.asarray(x), np.asarray(y)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def malformed(state: ReduceSpr) -> Any:
    """What is wrong with a concrete state's fields (a type code out of range, a slot field
    without its two slots, a field that is no number), or None (also for a traced state: its
    fields are the kernel's own)."""
    if not is_concrete(state):
        return None
    try:
        for name, top in (("sum_dtype", len(TYPES)), ("mm_dtype", len(TYPES))):
            a = np.asarray(getattr(state, name))
            if a.dtype.kind not in "iu" or bool(((a < 0) | (a > top)).any()):
                return f"{name} = {getattr(state, name)!r}: a type code in [0, {top}]"
        batch = np.shape(state.mm_dtype)
        for name in ("sum_bits", "sum_written", "sum_defined"):
            if np.shape(getattr(state, name)) != batch + (len(TYPES),):
                return (f"{name} of shape {np.shape(getattr(state, name))}: one slot per type, "
                        f"shape {batch + (len(TYPES),)}")
        for name in ("sum_dtype", "mm_value", "mm_index", "mm_value_defined",
                     "mm_index_defined"):
            if np.shape(getattr(state, name)) != batch:
                return f"{name} of shape {np.shape(getattr(state, name))}: shape {batch}"
        for name in ("sum_bits", "mm_value", "mm_index"):
            if np.asarray(getattr(state, name)).dtype.kind not in "iu":
                return f"{name}: integer bits (uint32)"
    except (TypeError, ValueError) as e:
        return f"fields that are no numbers ({e})"
    return None


def checked(state: Any, api: str) -> ReduceSpr:
    """``state`` itself (None: :func:`fresh`); BAD_ARGUMENT for anything but a ReduceSpr, or
    one whose fields no call could have left (:func:`malformed`)."""
    if state is None:
        return fresh()
    if not isinstance(state, ReduceSpr):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="spr", value=type(state).__name__,
                              allowed="an ascend_ref.ReduceSpr (the info.spr of an earlier call, "
                                      "or ReduceSpr() before any)")
    bad = malformed(state)
    if bad is not None:
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="spr", value=bad,
                              allowed="a ReduceSpr whose fields a call left (the info.spr of "
                                      "an earlier call, or ReduceSpr() before any)")
    return state


# ------------------------------------------------------------------ what a call writes ------

@_pytree
@dataclass(frozen=True)
class MaxMinWrite:
    """What one call does to the max/min register (traced values): ``sets`` (it writes the
    register), the value and index bits (uint32) and whether each is defined afterwards."""

    sets: Any
    value: Any
    index: Any
    value_defined: Any
    index_defined: Any


@_pytree
@dataclass(frozen=True)
class SumWrite:
    """What one call does to the sum register: ``sets``, the value bits (uint32), whether
    defined, and ``other_kept``: the other type's slot keeps its value (one slot per type)
    or becomes undefined (one register for both)."""

    sets: Any
    bits: Any
    defined: Any
    other_kept: Any


@dataclass(frozen=True)
class Sets:
    """An instruction's declared effect on a reduce special register (the kernel's ``spr``).

    ``register``: :data:`SUM` or :data:`MAX_MIN`; ``doc``: what it writes, in words (explain,
    README); ``update(spec, p, bits, active, arith, effects)`` computes the
    :class:`MaxMinWrite` / :class:`SumWrite` inside the kernel from the call's gathered source
    and its :class:`~ascend_ref.engine.Effects` (evaluated only when the caller asks for the
    state: ``return_info=True``)."""

    register: str
    doc: str
    update: Callable[..., Any]


def type_code(dtype: str) -> int:
    return TYPES.index(dtype) + 1 if dtype in TYPES else 0


def after(state: ReduceSpr, write: Any, dtype: str, ok: Any) -> ReduceSpr:
    """The state after a call that wrote ``write`` (None: passes ``state`` through) with
    elements of ``dtype``, applied where ``ok`` (the call's status is 0). Pure jnp: works
    traced and batched (``state``, ``write`` and ``ok`` may carry a leading axis)."""
    if write is None or type_code(dtype) == 0:
        return state
    code = np.int32(type_code(dtype))
    on = jnp.asarray(write.sets) & jnp.asarray(ok)
    if isinstance(write, MaxMinWrite):
        return ReduceSpr(
            state.sum_bits, state.sum_written, state.sum_defined, state.sum_dtype,
            jnp.where(on, jnp.asarray(write.value, jnp.uint32), state.mm_value),
            jnp.where(on, jnp.asarray(write.index, jnp.uint32), state.mm_index),
            jnp.where(on, code, state.mm_dtype),
            jnp.where(on, write.value_defined, state.mm_value_defined),
            jnp.where(on, write.index_defined, state.mm_index_defined))
    k = int(code) - 1
    mine = jnp.arange(2) == k
    on2 = jnp.asarray(on)[..., None]
    bits = jnp.where(on2 & mine, jnp.asarray(write.bits, jnp.uint32)[..., None], state.sum_bits)
    written = jnp.where(on2, mine | state.sum_written, state.sum_written)
    keep_other = jnp.asarray(write.other_kept)[..., None]
    defined = jnp.where(on2 & mine, jnp.asarray(write.defined)[..., None],
                        jnp.where(on2 & ~keep_other, False, state.sum_defined))
    # one register for both types: a write of one is a write of the other too (undefined)
    written = jnp.where(on2 & ~keep_other, True, written)
    return ReduceSpr(bits, written, defined, jnp.where(on, code, state.sum_dtype),
                     state.mm_value, state.mm_index, state.mm_dtype, state.mm_value_defined,
                     state.mm_index_defined)


# ------------------------------------------------------------------ the getters -------------

@_pytree
@dataclass(frozen=True)
class SprRead:
    """What a getter read: ``value_defined`` / ``index_defined`` (bool; ``index_defined`` is
    None for the sum register and the value-only form)."""

    value_defined: Any
    index_defined: Any = None


def _profile(chip: Any) -> Any:
    from .chips import chip as get_chip

    return get_chip(chip)


def _fact(prof: Any, name: str) -> str:
    try:
        return str(prof.fact(name))
    except KeyError:
        return _DEFAULTS[name]


def _products(f: str, ok: Callable[[str], bool]) -> list:
    from .chips import chip as get_chip, chips

    return [c for c in chips() if ok(_fact(get_chip(c), f))]


def _dtype(dtype: Any, api: str, prof: Any) -> str:
    from .ub import dtype_name

    try:
        name = dtype_name(dtype)
    except ConstraintError:
        name = str(dtype)
    if name not in TYPES:
        raise ConstraintError(Code.DTYPE_UNSUPPORTED, api=api, param="dtype", value=dtype,
                              allowed="half or float (操作数支持的数据类型为：half、float)",
                              chip=prof.id)
    return name


def _value(bits: Any, dtype: str) -> Any:
    b = jnp.asarray(bits, jnp.uint32)
    if dtype == "float16":
        return jax.lax.bitcast_convert_type(b.astype(jnp.uint16), jnp.float16)
    return jax.lax.bitcast_convert_type(b, jnp.float32)


def _raise_undefined(api: str, what: str, prof: Any, hint: str) -> None:
    raise ConstraintError(Code.SPR_UNDEFINED, api=api, param="spr", value=what,
                          allowed="a register an earlier call left defined", chip=prof.id,
                          hint=hint)


def get_reduce_repeat_sum_spr(spr: Any, dtype: Any, *, chip: Any,
                              return_info: bool = False) -> Any:
    """GetReduceRepeatSumSpr<T>(): the sum the last count-form ``ReduceSum`` of type T left
    in the sum register ``spr`` (a :class:`ReduceSpr`, e.g. ``info.spr`` of that call).

    ``dtype``: T, half or float. Returns a scalar of T; ``return_info=True`` -> ``(value,
    SprRead)``. Raises API_UNSUPPORTED on a product without the getter (Ascend 950, A3, A2
    have it), DTYPE_UNSUPPORTED for another T, SPR_UNDEFINED when the state is concrete, the
    register undefined and ``return_info`` is False.
    """
    return _sum_spr(spr, dtype, chip, return_info, "get_reduce_repeat_sum_spr")


def _sum_spr(spr: Any, dtype: Any, chip: Any, return_info: bool, api: str) -> Any:
    """:func:`get_reduce_repeat_sum_spr` under the name ``api`` (an error names it)."""
    prof = _profile(chip)
    if _fact(prof, SPR_SUM) == "unsupported":
        raise ConstraintError(Code.API_UNSUPPORTED, api=api, param="chip", value=prof.id,
                              allowed=f"a product with GetReduceRepeatSumSpr: "
                                      f"{_products(SPR_SUM, lambda v: v != 'unsupported')}",
                              chip=prof.id)
    t = _dtype(dtype, api, prof)
    state = checked(spr, api)
    return_info = flag(api, "return_info", return_info)
    k = TYPES.index(t)
    bits = jnp.asarray(state.sum_bits)[..., k]
    written = jnp.asarray(state.sum_written)[..., k]
    defined = jnp.asarray(state.sum_defined)[..., k]
    if _fact(prof, SPR_UNWRITTEN) == "zero":
        defined = defined | ~written
        bits = jnp.where(written, bits, jnp.uint32(0))
    if not return_info and is_concrete(state) and not bool(np.all(np.asarray(defined))):
        never = not bool(np.all(np.asarray(written)))
        _raise_undefined(api, "unwritten" if never else "undefined", prof,
                         "no count-form ReduceSum of this type has set it" if never else
                         f"the last write was not of type {t} (profile field "
                         f"spr_sum_other_type)")
    value = _value(bits, t)
    return (value, SprRead(defined)) if return_info else value


def get_reduce_repeat_max_min_spr(spr: Any, dtype: Any, *, chip: Any, with_index: bool = True,
                                  return_info: bool = False) -> Any:
    """GetReduceRepeatMaxMinSpr<T>(maxMinValue[, maxMinIndex]): the extreme (and its index)
    the last ReduceRepeat<MAX|MIN> / ReduceMax / ReduceMin left in the max/min register.

    The page's two overloads are ``with_index=True`` (``(value, index)``: A3 / A2) and
    ``with_index=False`` (``value``: inference-series AI Core); the other form on a product,
    or a product without the getter (Ascend 950 among them), is API_UNSUPPORTED. ``value``
    is a scalar of T; ``index`` the integer the page's ``reinterpret_cast<uint16_t/uint32_t>``
    of ``maxMinIndex`` yields (uint16 for half, uint32 for float). ``dtype`` (T) must be the
    writer's dst type: DTYPE_MISMATCH otherwise ("否则会导致精度错误"). The index after a level-2
    ReduceMax / ReduceMin, and both after a non-contiguous call (``srcRepStride != 8`` or
    ``srcBlkStride != 1``) or one in counter mode, are undefined: SPR_UNDEFINED for a concrete
    state unless ``return_info=True`` (``(result, SprRead)`` with the flags).
    """
    return _max_min_spr(spr, dtype, chip, with_index, return_info,
                        "get_reduce_repeat_max_min_spr")


def _max_min_spr(spr: Any, dtype: Any, chip: Any, with_index: bool, return_info: bool,
                 api: str) -> Any:
    """:func:`get_reduce_repeat_max_min_spr` under the name ``api`` (an error names it)."""
    prof = _profile(chip)
    form = _fact(prof, SPR_MAXMIN)
    if form == "unsupported":
        raise ConstraintError(Code.API_UNSUPPORTED, api=api, param="chip", value=prof.id,
                              allowed=f"a product with GetReduceRepeatMaxMinSpr: "
                                      f"{_products(SPR_MAXMIN, lambda v: v != 'unsupported')}",
                              chip=prof.id)
    return_info = flag(api, "return_info", return_info)
    if not isinstance(with_index, (bool, np.bool_)):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="with_index", value=with_index,
                              allowed="True (value, index) or False (value only)", chip=prof.id)
    want = "value_index" if with_index else "value"
    if form != want:
        raise ConstraintError(Code.API_UNSUPPORTED, api=api, param="with_index",
                              value=bool(with_index),
                              allowed=f"{form == 'value_index'} (this product has only the "
                                      f"{'(value, index)' if form == 'value_index' else 'value-only'}"
                                      f" form); products with the other form: "
                                      f"{_products(SPR_MAXMIN, lambda v: v == want)}",
                              chip=prof.id)
    t = _dtype(dtype, api, prof)
    state = checked(spr, api)
    code = jnp.asarray(state.mm_dtype)
    concrete = is_concrete(state)
    if concrete:
        codes = set(np.unique(np.asarray(code)).tolist()) - {0}
        if codes - {type_code(t)}:
            other = TYPES[sorted(codes - {type_code(t)})[0] - 1]
            raise ConstraintError(Code.DTYPE_MISMATCH, api=api, param="dtype", value=t,
                                  allowed=f"{other}, the dst type of the reduction that set the "
                                          f"register (否则会导致精度错误)", chip=prof.id)
    written = code != 0
    same = (code == type_code(t)) | ~written
    vdef = jnp.asarray(state.mm_value_defined) & same
    idef = jnp.asarray(state.mm_index_defined) & same
    vbits, ibits = jnp.asarray(state.mm_value), jnp.asarray(state.mm_index)
    if _fact(prof, SPR_UNWRITTEN) == "zero":
        vdef, idef = vdef | ~written, idef | ~written
        vbits = jnp.where(written, vbits, jnp.uint32(0))
        ibits = jnp.where(written, ibits, jnp.uint32(0))
    need = vdef & idef if with_index else vdef
    if not return_info and concrete and not bool(np.all(np.asarray(need))):
        never = not bool(np.all(np.asarray(written)))
        what = "unwritten" if never else ("index undefined" if bool(np.all(np.asarray(vdef)))
                                          else "undefined")
        _raise_undefined(api, what, prof,
                         "no ReduceRepeat<MAX|MIN> / ReduceMax / ReduceMin has set it" if never
                         else "set by a non-contiguous call (srcRepStride != 8 or srcBlkStride "
                              "!= 1) or in counter mode, or by ReduceMax / ReduceMin, whose "
                              "register index is not accurate (pass return_info=True to read "
                              "the value with the defined flags)")
    value = _value(vbits, t)
    if with_index:
        index = ibits.astype(jnp.uint16 if t == "float16" else jnp.uint32)
        return ((value, index), SprRead(vdef, idef)) if return_info else (value, index)
    return (value, SprRead(vdef)) if return_info else value


def get_acc_val(spr: Any, dtype: Any, *, chip: Any, return_info: bool = False) -> Any:
    """GetAccVal<T>(): the older name of :func:`get_reduce_repeat_sum_spr`."""
    return _sum_spr(spr, dtype, chip, return_info, "get_acc_val")


def get_reduce_max_min_count(spr: Any, dtype: Any, *, chip: Any, with_index: bool = True,
                             return_info: bool = False) -> Any:
    """GetReduceMaxMinCount<T>(...): the older name of :func:`get_reduce_repeat_max_min_spr`."""
    return _max_min_spr(spr, dtype, chip, with_index, return_info, "get_reduce_max_min_count")


#: The getters by public name (golden kernel descriptions name them): ``(function, register,
#: takes with_index)``
GETTERS = {
    "get_reduce_repeat_sum_spr": (get_reduce_repeat_sum_spr, SUM, False),
    "get_acc_val": (get_acc_val, SUM, False),
    "get_reduce_repeat_max_min_spr": (get_reduce_repeat_max_min_spr, MAX_MIN, True),
    "get_reduce_max_min_count": (get_reduce_max_min_count, MAX_MIN, True),
}

__all__ = ["ReduceSpr", "SprRead", "fresh", "get_reduce_repeat_sum_spr", "get_acc_val",
           "get_reduce_repeat_max_min_spr", "get_reduce_max_min_count"]
