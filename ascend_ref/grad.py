"""The differentiable path: the registry's instructions over a float arithmetic, ``jax.grad``-able.

The bit-exact API works on a ``uint8`` UB and raw bits, which have no derivative. Here the
*same* instruction declarations (:mod:`ascend_ref.registry`) and the *same* rules run through
:func:`ascend_ref.engine.evaluate` over a typed source array ``src`` (the source tensor's
elements, from its first) in the arithmetic :class:`Differentiable`: values are float16 /
float32 arrays whose every forward result is computed on their bits by
:class:`ascend_ref.numerics.Exact` (the API's own arithmetic), with derivatives attached by
``jax.custom_jvp``. Nothing here knows an instruction: each function is built from its
registry entry (signature, parameters, option, result layout, work need).

**Forward values** are the bit-exact API's, bit for bit, on any data (NaN payloads, infinities,
signed zeros, float32 subnormals, saturation), and results are the words the API writes: a
word the API does not write (a block ReduceDataBlock keeps, a repeat past a traced count, a
call that breaks a rule under a trace) is NaN (an index -1).

**Every constraint applies**: the call is the API call with ``src`` at UB address 0, and the
results (dst, work_tensor) placed after it, sized for the call. Eager calls raise the API's
:class:`~ascend_ref.ConstraintError`; traced calls (``jit`` / ``vmap``) return NaN results
and, with ``return_info=True``, the status. Numeric parameters and masks may be traced: a
traced repeat count gives results for ``max_repeat`` (default: the top of the repeat range)
repeats.

**Arguments** (BAD_ARGUMENT otherwise, never truthiness or a conversion): ``src`` is a 1-D
float16 / float32 array and keeps its type (another type, float64 included, is
DTYPE_UNSUPPORTED naming ``src.dtype``: it is not rounded to float32); ``return_info`` is a
bool or an int 0 / 1 and static (it picks the result's structure: not a traced value);
``max_repeat`` is None or a static int in ``[1, top of the call's repeat range]``. The results
of a traced repeat count are laid out in the virtual UB for ``max_repeat`` rows, so the bound
is what keeps them exact: rows past the range hold no result, and a larger table (``2**16``
rows) would leave the UB and turn a valid repeat into ``UB_BOUNDS``.

**Gradients**

* sums — every add passes its cotangent to both operands (rounding is treated as the
  identity, the derivative of the exact sum), so ``d result / d src[j]`` is the number of
  active lanes that read element ``j`` (a block stride of 0 reads an element 8 times:
  gradient 8); masked lanes get 0; this holds for every product's vec_reduce_add order;
* min / max — to the selected lane only (the first NaN / smallest index among equals, as the
  hardware chooses); where the product writes its default NaN for a NaN result
  (``minmax_nan = "default"``: Ascend 950, Kirin) that result is a constant and passes no
  gradient, though the index names the first NaN lane;
* saturation (half, ``saturate=True``) — the clamp of an add whose result was NaN or ±inf
  (set to +0 / ±65504) is a constant: it passes no gradient (:func:`saturated`, a
  ``custom_jvp``).

>>> import numpy as np, jax, jax.numpy as jnp
>>> import ascend_ref.grad as g
>>> x = jnp.asarray(np.array([60000, 60000, -30000, 100], np.float16))
>>> f = lambda x: g.whole_reduce_sum(jnp.pad(x, (0, 124)), 4, 1, 1, 8, chip="atlas_a2",
...                                  saturate=True)[0]
>>> float(f(x)), jax.grad(f)(x).tolist()
(35584.0, [0.0, 0.0, 1.0, 1.0])
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple,
                    Union)

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike, DTypeLike

from . import batch_args, engine, mask as masks, numerics, registry
from .argtypes import MaskLike
from .chips import chip as get_chip
from .constraints import Code, ConstraintError
from .ub import Tensor, dtype_name, itemsize

F16_MAX = 65504.0

#: What a differentiable function returns (:func:`results`): its value fields (one array, the
#: fields stacked on the last axis if several), its first index field (int32), or the tuple
#: ``(value, index)`` where it has both; with ``return_info=True``, ``(that, status)``
Values = Union[jax.Array, Tuple[jax.Array, ...]]


# ------------------------------------------------------------------ the arithmetic ----------

def _bits(x: jax.Array) -> jax.Array:
    """Raw bits of a typed array (uint16 / uint32)."""
    return lax.bitcast_convert_type(x, jnp.dtype(f"uint{8 * jnp.dtype(x.dtype).itemsize}"))


def _typed(bits: jax.Array, dtype: DTypeLike) -> jax.Array:
    return lax.bitcast_convert_type(bits, jnp.dtype(dtype))


@jax.custom_jvp
def saturated(r: jax.Array, on: ArrayLike) -> jax.Array:
    """Half saturation of an add's result where ``on``: NaN → +0, ±inf → ±65504 (the bits of
    :func:`ascend_ref.numerics.saturated`); a clamped result is a constant (no gradient)."""
    return _typed(numerics.saturated(_bits(r), on), r.dtype)


@saturated.defjvp
def _saturated_jvp(primals: Tuple[jax.Array, ArrayLike], tangents: Tuple[jax.Array, ArrayLike]
                   ) -> Tuple[jax.Array, jax.Array]:
    r, on = primals
    b = _bits(r)
    out = numerics.saturated(b, on)
    return _typed(out, r.dtype), jnp.where(out != b, jnp.zeros_like(tangents[0]), tangents[0])


@jax.custom_jvp
def exact_add(a: jax.Array, b: jax.Array, default_nan: ArrayLike, ftz: ArrayLike) -> jax.Array:
    """``a + b`` of typed half / float arrays, its bits :func:`ascend_ref.numerics.add`'s
    without saturation (the product's default NaN and float32 flush, maybe traced); its
    derivative is the exact sum's: the cotangent goes to both operands."""
    return _typed(numerics.add(_bits(a), _bits(b), jnp.dtype(a.dtype).name, saturate=False,
                               default_nan=default_nan, ftz=ftz), a.dtype)


@exact_add.defjvp
def _exact_add_jvp(primals: Tuple[jax.Array, jax.Array, ArrayLike, ArrayLike],
                   tangents: Tuple[jax.Array, jax.Array, ArrayLike, ArrayLike]
                   ) -> Tuple[jax.Array, jax.Array]:
    return exact_add(*primals), tangents[0] + tangents[1]


class Differentiable(numerics.Exact):
    """The float arithmetic: values are typed arrays (float16 / float32) whose forward bits
    are :class:`~ascend_ref.numerics.Exact`'s; adds pass their cotangent to both operands, the
    saturation clamp (:func:`saturated`) none where it clamps, min / max to the chosen lane."""

    def __init__(self, dtype: numerics.DType, chip: numerics.ExactProfile,
                 saturate: ArrayLike = False, path: str = "fast") -> None:
        super().__init__(dtype, chip, saturate, path)
        self.value_type = jnp.dtype(self.dtype)

    def _typed(self, bits: jax.Array) -> jax.Array:
        return _typed(bits, self.value_type)

    @property
    def zero(self) -> jax.Array:
        return jnp.zeros((), self.value_type)

    def add(self, a: jax.Array, b: jax.Array) -> jax.Array:
        r = exact_add(a, b, self.chip.default_nan(self.dtype), self.chip.fp32_ftz)
        return saturated(r, self.saturate) if self.value_type.itemsize == 2 else r

    # the summation protocol of numerics.Summation: values enter as they are
    def enter(self, x: jax.Array, active: Optional[ArrayLike] = None) -> jax.Array:
        return x if active is None else jnp.where(active, x, self.zero)

    def leave(self, v: jax.Array) -> jax.Array:
        return v

    # ``compute`` is handed this arithmetic itself (its enter / add / zero), not the
    # numerics.Summation of Exact.sums' annotation: a callable of any argument
    def sums(self, compute: Callable[..., Sequence[jax.Array]]
             ) -> Tuple[Tuple[jax.Array, ...], jax.Array]:
        return tuple(compute(self)), jnp.bool_(True)

    def extreme(self, x: jax.Array, active: ArrayLike,
                kind: str) -> Tuple[jax.Array, jax.Array, jax.Array]:
        _, index, found = super().extreme(_bits(lax.stop_gradient(x)), active, kind)
        return jnp.take_along_axis(x, index[..., None], axis=-1)[..., 0], index, found

    def extreme_value(self, x: jax.Array, active: ArrayLike,
                      kind: str) -> Tuple[jax.Array, jax.Array]:
        value, _, found = self.extreme(x, active, kind)   # the derivative needs the index
        return value, found

    def nan_result(self, value: jax.Array) -> jax.Array:
        b = _bits(lax.stop_gradient(value))
        out = super().nan_result(b)
        return jnp.where(out == b, value, self._typed(out))

    def word(self, n: jax.Array) -> jax.Array:
        return self._typed(super().word(n))

    def const(self, bits: ArrayLike) -> jax.Array:
        return self._typed(super().const(bits))


# ------------------------------------------------------------------ a call ------------------

#: Parameters that only place the results: fixed so that repeat r's slot is row r.
PLACEMENT = {"dst_rep_stride": 1}
_GAP = 512                       # virtual tensors start on multiples of this (every alignment)


@functools.lru_cache(maxsize=None)
def _virtual_ub(nbytes: int) -> jax.Array:
    """The product's whole UB (only its length is read: the rules' UB bound); concrete even
    when first asked for inside a trace."""
    with jax.ensure_compile_time_eval():
        return jnp.zeros(nbytes, jnp.uint8)


def _concrete_int(v: object) -> Optional[int]:
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (np.ndarray, jax.Array)) and not isinstance(v, jax.core.Tracer) and \
            np.ndim(v) == 0 and np.issubdtype(v.dtype, np.integer):
        return int(v)
    return None


def _up(n: int) -> int:
    return -(-n // _GAP) * _GAP


_SRC = "a 1-D float16 / float32 array: the source tensor's elements"


def _source(api: str, src: Any, chip_id: str) -> jax.Array:
    """``src`` as a 1-D float16 / float32 JAX array, never converted: another float type
    (float64, bfloat16) is not rounded to float32 but refused like an integer type
    (DTYPE_UNSUPPORTED naming ``src.dtype``); what holds no numbers (objects, strings, a ragged
    list) is BAD_ARGUMENT naming ``src``."""
    if src is None or isinstance(src, (str, bytes, dict)):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="src",
                              value=type(src).__name__, allowed=_SRC)
    if not hasattr(src, "dtype"):           # a list or tuple: the dtype numpy reads from it
        try:
            src = np.asarray(src)
        except Exception:                                    # noqa: BLE001 - ragged etc.
            try:                                # a sequence of traced values: JAX stacks it
                src = jnp.asarray(src)
            except Exception:                                # noqa: BLE001
                raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="src",
                                      value=type(src).__name__, allowed=_SRC) from None
    try:
        dt: Optional[np.dtype] = np.dtype(src.dtype)
    except TypeError:
        dt = None
    if dt is None or not (dt.kind in "biufc" or jnp.issubdtype(dt, jnp.floating)):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="src",
                              value=type(src).__name__ if dt is None else
                              f"an array of dtype {dt}",
                              allowed=_SRC)
    if np.ndim(src) != 1:
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="src",
                              value=f"an array of shape {np.shape(src)}", allowed=_SRC)
    if dt.name not in ("float16", "float32"):
        raise ConstraintError(Code.DTYPE_UNSUPPORTED, api=api, param="src.dtype",
                              value=dt.name, allowed="float16 or float32: grad differentiates "
                              "the float reductions on the source's own type (no conversion: "
                              "pass src.astype(float16 / float32); an integer sum has no "
                              f"derivative, call ar.ascendc.{api} for its value)",
                              chip=chip_id)
    return jnp.asarray(src)


@dataclass(frozen=True)
class Call:
    """A prepared differentiable call: the API call (``prep``), where its tensors are, its
    result layout and how many rows (repeats) the results have."""

    ins: registry.Instruction
    prep: Any
    tensors: Dict[str, Tensor]
    layout: registry.Layout
    rows: int


def prepare(ins: registry.Instruction, src: ArrayLike, mask: MaskLike, params: Dict[str, Any], *,
            option: Any = None, chip: Any, saturate: Any = None,
            max_repeat: Optional[int] = None) -> Call:
    """The API call of ``ins`` over ``src`` (at UB address 0) with its results placed after
    it: every host-side check of the API (raises :class:`ConstraintError`)."""
    prof = get_chip(chip)
    src = _source(ins.name, src, prof.id)
    dtype = dtype_name(src.dtype)
    opt = None if ins.option is None else ins.option.parse(option, api=ins.name, chip=prof)
    top = ins.repeat_range(opt, dtype)[1]
    if max_repeat is not None:
        max_repeat = batch_args.held_int(max_repeat)
        if not (batch_args.is_int(max_repeat) and 1 <= max_repeat <= top):
            shown = "a traced value" if isinstance(max_repeat, jax.core.Tracer) else max_repeat
            raise ConstraintError(
                Code.BAD_ARGUMENT, api=ins.name, param="max_repeat", value=shown,
                allowed=f"None or an int in [1, {top}] (static: the rows a traced repeat count "
                f"gives, at most the top of the {dtype} repeat range)", chip=prof.id)
        max_repeat = int(max_repeat)
    hi = max_repeat or top
    r = _concrete_int(params.get("repeat"))
    if isinstance(mask, masks.CounterMask):     # counter mode: the count decides the repeats
        n = _concrete_int(mask.count)
        r = None if n is None else masks.counter_repeats(n, masks.lanes_per_repeat(dtype))
    rows = hi if r is None else int(np.clip(r, 0, hi))
    layout = ins.layout(dtype, opt)
    s = itemsize(dtype)
    with jax.ensure_compile_time_eval():       # concrete sizes, also inside jit / grad
        sizes = {"src": int(src.shape[0]),
                 "dst": layout.dst_bytes(max(rows, 1), 1) // s,
                 "work_tensor": ins.work_elements(max(rows, 1), opt, dtype)}
    tensors, addr = {}, 0
    for t in ("src",) + tuple(t for t in ins.operands if t != "src"):
        if t not in sizes:
            raise ConstraintError(Code.API_UNSUPPORTED, api=ins.name, param=t, value=t,
                                  allowed="operands src, dst and work_tensor (grad lays them "
                                  "out in its virtual UB; call the public function instead)")
        tensors[t] = Tensor(addr, dtype, sizes[t])
        addr = _up(addr + sizes[t] * s)
    full = dict(params)
    full.update({k: v for k, v in PLACEMENT.items() if k in ins.params})
    prep = ins.prepare(_virtual_ub(prof.ub_bytes), tensors, mask, full, chip=prof, option=opt,
                       saturate=saturate if ins.saturating else None, repeat_hi=max_repeat)
    return Call(ins, prep, tensors, layout, rows)


def _collect(writes: List[tuple], base: int, n: int, size: int,
             dtype: DTypeLike) -> Tuple[Any, Any]:
    """The words written to a tensor of ``n`` elements at ``base``: ``(words, written)``."""
    fill = jnp.nan if jnp.issubdtype(dtype, jnp.floating) else 0
    buf = jnp.full((n,), fill, dtype)
    written = jnp.zeros((n,), bool)
    for addr, words, ok in writes:
        k = jnp.where(ok, (addr - base) // size, n).reshape(-1)
        buf = buf.at[k].set(jnp.broadcast_to(words, addr.shape).reshape(-1), mode="drop")
        written = written.at[k].set(True, mode="drop")
    return buf, written


def _return_info(api: str, v: Any) -> bool:
    """``return_info``: a bool or an int 0 / 1 (never truthiness, as the bit-exact API); it
    picks the shape of the result, so it is static -- a traced value is refused."""
    if isinstance(v, jax.core.Tracer):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="return_info",
                              value="a traced value", allowed="True / False (or 0 / 1): a "
                              "static switch (it picks the result's structure); pass a Python "
                              "bool, not an argument of jit / vmap / grad")
    return bool(batch_args.flag(api, "return_info", v))


def _tensor_arg(ins: registry.Instruction, tensor: Any) -> str:
    """``tensor``: ``"dst"``, or ``"work_tensor"`` where ``ins`` leaves stage-1 results there."""
    ok = ("dst", "work_tensor") if ins.work_need is not None else ("dst",)
    if not (isinstance(tensor, str) and tensor in ok):
        why = "" if ins.work_need is not None else \
            f" ({ins.name} leaves no stage-1 results in a work tensor)"
        raise ConstraintError(Code.BAD_ARGUMENT, api="ascend_ref.grad", param="tensor",
                              value=tensor, allowed=" or ".join(map(repr, ok)) + why)
    return tensor


def results(call: Call, src: ArrayLike, tensor: str = "dst", *, return_info: bool = False
            ) -> Union[Values, Tuple[Values, jax.Array]]:
    """Run ``call`` over ``src`` in the :class:`Differentiable` arithmetic: the fields of
    ``tensor`` (``"dst"`` or ``"work_tensor"``) by the layout's roles -- the value fields
    (stacked on the last axis if several), the first index field (int32), ``(value, index)``
    when there are both."""
    return_info = _return_info(call.ins.name, return_info)
    _tensor_arg(call.ins, tensor)
    src = jnp.asarray(src)
    writes, status, _ = engine.evaluate(call.prep, src, Differentiable)
    t = call.tensors[tensor]
    s = itemsize(t.dtype)
    buf, written = _collect(writes.get(tensor, []), t.addr, t.size, s, src.dtype)
    fields = call.layout.dst if tensor == "dst" else call.layout.work
    k = len(fields)
    if tensor == "dst" and not call.layout.per_repeat:
        table, ok = buf[:k], written[:k]
    else:
        # the work tensor holds what its documented size holds (the count form's size rule
        # counts count / L repeats, rounded down: fewer rows than the call's repeats)
        rows = call.rows if tensor == "dst" else min(call.rows, t.size // k)
        table = buf[:rows * k].reshape(rows, k)
        ok = written[:rows * k].reshape(rows, k)
    vals = [j for j, f in enumerate(fields) if f.role == "value"]
    idx = [j for j, f in enumerate(fields) if f.role == "index"]
    out = []
    if vals:
        out.append(table[..., vals[0]] if len(vals) == 1 else table[..., np.array(vals)])
    if idx:
        j = idx[0]
        out.append(jnp.where(ok[..., j], _bits(table[..., j]).astype(jnp.int32), -1))
    res = out[0] if len(out) == 1 else tuple(out)
    return (res, status) if return_info else res


# ------------------------------------------------------------------ the functions -----------

class Reduction:
    """The differentiable form of one registered instruction: the API's signature without the
    UB, the result tensors and the parameters that only place results (:data:`PLACEMENT`);
    ``src`` and ``mask`` first, then its numeric parameters and option as the API orders them,
    ``chip`` (and ``saturate``) by keyword, plus ``max_repeat`` and ``return_info``.

    ``tensor="work_tensor"``: the stage-1 results the instruction leaves in its work tensor.
    """

    def __init__(self, ins: registry.Instruction, tensor: str = "dst") -> None:
        self.ins, self.tensor = ins, tensor
        P = inspect.Parameter
        self.names = {(ins.repeat_param if k == "repeat" else k): k
                      for k in ins.params if k not in PLACEMENT}
        pos = [P(n, P.POSITIONAL_OR_KEYWORD) for n in ("src", "mask", *self.names)]
        kw = []
        opt = ins.option
        if opt is not None:
            default = P.empty if opt.default is None else opt.default
            if opt.positional:
                pos.append(P(opt.key, P.POSITIONAL_OR_KEYWORD, default=default))
            else:
                kw.append(P(opt.key, P.KEYWORD_ONLY, default=default))
        kw.append(P("chip", P.KEYWORD_ONLY))
        if ins.saturating:
            kw.append(P("saturate", P.KEYWORD_ONLY, default=None))
        kw += [P("max_repeat", P.KEYWORD_ONLY, default=None),
               P("return_info", P.KEYWORD_ONLY, default=False)]
        self.__signature__ = inspect.Signature(pos + kw)
        self.__name__ = self.__qualname__ = ins.name + ("" if tensor == "dst" else "_stage1")
        what = ("the per-repeat (stage-1) results it leaves in work_tensor"
                if tensor != "dst" else "its dst results")
        self.__doc__ = (f"{ins.summary or ins.name}, differentiable: {what}.\n\n"
                        f"``{self.__name__}{self.__signature__}``; see :mod:`ascend_ref.grad`.")

    def __repr__(self) -> str:
        return f"<ascend_ref.grad.{self.__name__}>"

    def prepare(self, *args: Any, **kw: Any) -> Call:
        """The checked call for these arguments (see :func:`prepare`)."""
        a = self.__signature__.bind(*args, **kw)
        a.apply_defaults()
        v = a.arguments
        opt = self.ins.option
        return prepare(self.ins, v["src"], v["mask"], {k: v[n] for n, k in self.names.items()},
                       option=None if opt is None else v[opt.key], chip=v["chip"],
                       saturate=v.get("saturate"), max_repeat=v["max_repeat"])

    def __call__(self, *args: Any, **kw: Any) -> Any:
        # Values, or (Values, status) with return_info=True: Any, so that a caller's checked
        # code uses either form without narrowing (results() names them)
        a = self.__signature__.bind(*args, **kw)
        info = _return_info(self.ins.name, a.arguments.get("return_info", False))
        return results(self.prepare(*args, **kw), a.arguments["src"], self.tensor,
                       return_info=info)


_FUNCTIONS: Dict[Tuple[str, str], Reduction] = {}


def function(api: str, tensor: str = "dst") -> Reduction:
    """The differentiable function of an API name (or alias) from the registry."""
    ins = registry.lookup(api, api="ascend_ref.grad")
    key = (ins.name, _tensor_arg(ins, tensor))
    if key not in _FUNCTIONS:
        _FUNCTIONS[key] = Reduction(ins, tensor)
    return _FUNCTIONS[key]


_GENERATED: List[str] = []
for _ins in registry.all():
    globals()[_ins.name] = function(_ins.name)
    _GENERATED.append(_ins.name)
    if _ins.work_need is not None:
        globals()[_ins.name + "_stage1"] = function(_ins.name, "work_tensor")
        _GENERATED.append(_ins.name + "_stage1")

if TYPE_CHECKING:
    # the generated functions above, as a type checker sees them (``grad.whole_reduce_sum``
    # is a Reduction); nothing is defined at run time, where the names are module globals
    def __getattr__(name: str) -> Reduction: ...


# ------------------------------------------------------------------ which elements ----------

@dataclass(frozen=True)
class Plan:
    """Which source elements a call reads: ``index[r, i]`` (elements from ``src[0]``) and
    ``active[r, i]`` (numpy; ``r < repeat``, lane ``i`` of ``L``)."""

    dtype: str
    index: np.ndarray
    active: np.ndarray

    @property
    def lanes(self) -> int:
        return self.index.shape[1]

    @property
    def epb(self) -> int:
        return 32 // itemsize(self.dtype)

    def read_count(self, n: int) -> np.ndarray:
        """How many active lanes read each of ``n`` source elements (= the gradient of a
        plain sum of every result); ``n`` an int covering every element read."""
        reads = self.index[self.active]
        need = int(reads.max()) + 1 if reads.size else 0
        v = batch_args.held_int(n)
        if not (batch_args.is_int(v) and need <= v <= batch_args.INT32[1]):
            raise ConstraintError(Code.BAD_ARGUMENT, api="ascend_ref.grad.Plan.read_count",
                                  param="n", value=v, allowed=f"an int in [{need}, "
                                  f"{batch_args.INT32[1]}] (the call reads element {need - 1})"
                                  if need else f"an int in [0, {batch_args.INT32[1]}]")
        cnt = np.zeros(int(v), int)
        np.add.at(cnt, reads, 1)
        return cnt


def plan(api: str, src: ArrayLike, mask: MaskLike, *args: Any, chip: Any, **kw: Any) -> Plan:
    """The checked call of ``api``'s differentiable function (same arguments) and the source
    elements it reads, from the kernels' own tables (concrete parameters)."""
    call = function(api).prepare(src, mask, *args, chip=chip, **kw)
    engine.evaluate(call.prep, _bits(jnp.asarray(src)), numerics.Exact)   # every rule
    with jax.ensure_compile_time_eval():
        index, active = engine.source_elements(call.ins.kernel, call.prep.spec, call.prep.p)
    return Plan(call.prep.spec.dtype, np.asarray(index)[:call.rows],
                np.asarray(active)[:call.rows])


def gather(src: ArrayLike, p: Plan) -> jax.Array:
    """The lanes of every repeat, ``(repeat, L)``; masked lanes are +0."""
    v = jnp.take(jnp.asarray(src), jnp.asarray(np.clip(p.index, 0, None)))
    return jnp.where(jnp.asarray(p.active), v, jnp.zeros_like(v))


# ------------------------------------------------------------------ adds ---------------------

def plain_add(a: jax.Array, b: jax.Array) -> jax.Array:
    """One add in the operand type (float16 adds are exact IEEE on every backend)."""
    return a + b


def saturating_add(a: jax.Array, b: jax.Array) -> jax.Array:
    """Half add with saturation: ±inf → ±65504, NaN → +0; a clamped result has no gradient."""
    return saturated(a + b, True)


# ``values``: a numpy or JAX array (anything else is BAD_ARGUMENT, checked here); Any, since
# numerics.tree_sum, which it is passed to, is annotated for a jax.Array only
def tree_sum(values: Any, *, saturate: bool = False) -> jax.Array:
    """The hardware's pairwise tree over the last axis (a power of two), rounded per add.
    ``values``: an array (numpy / JAX) whose last axis has 1, 2, 4, ... elements; ``saturate``
    a bool (or 0 / 1)."""
    api = "ascend_ref.grad.tree_sum"
    sat = batch_args.flag(api, "saturate", saturate)
    shape = getattr(values, "shape", None)
    if not hasattr(values, "dtype") or not isinstance(shape, tuple):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="values",
                              value=type(values).__name__,
                              allowed="an array (numpy or JAX) whose last axis is summed")
    n = shape[-1] if shape else 0
    if not shape or n < 1 or n & (n - 1):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="values",
                              value=f"an array of shape {shape}", allowed="at least one axis, "
                              "the last of a power-of-two length (1, 2, 4, ...)")
    return numerics.tree_sum(values, saturating_add if sat else plain_add)


# ------------------------------------------------------------------ worked use ---------------
# Searching for inputs whose half tree sum is far from the exact sum (notebook 05).

def exact_sum(x: ArrayLike) -> float:
    """The exact sum of ``x`` (float16 / float32 values), correctly rounded to float64."""
    return math.fsum(np.asarray(x, np.float64).reshape(-1).tolist())


_tree_jit = jax.jit(tree_sum, static_argnames=("saturate",))


def tree_gap(x: ArrayLike, *, saturate: bool = False) -> float:
    """``tree_sum(x) − exact sum`` for one vector ``x`` (its dtype decides the rounding)."""
    x = jnp.asarray(x)
    return float(_tree_jit(x, saturate=saturate)) - exact_sum(np.asarray(x))


def ulp16(v: ArrayLike) -> jax.Array:
    """Spacing of float16 at ``|v|`` (as float32, no gradient): one rounding step of a half."""
    a = jnp.abs(lax.stop_gradient(jnp.asarray(v))).astype(jnp.float16)
    nxt = jnp.nextafter(a, jnp.asarray(np.inf, jnp.float16))
    # subtracted as halves (exact: a power of two, or inf / NaN past the range), not as
    # float32s: ``a.astype(float32)`` after ``astype(float16)`` is a round trip XLA's GPU
    # compiler may delete under excess precision (numerics.Summation), leaving |v| unrounded
    return (nxt - a).astype(jnp.float32)


def lattice_surrogate(x: ArrayLike) -> jax.Array:
    """A smooth model of ``tree_gap`` for a float16 vector ``x`` (given as float32).

    The gap of the tree is the sum of every add's rounding error ``round(s) − s``. Each is
    replaced by ``−(u/2)·sin(π s/u)`` (``u`` the ulp of the add's result): whenever ``s`` lies
    on the half-ulp lattice — always, when every partial sum stays in its binade — this is the
    exact error of round-half-to-even (0 on the lattice, ``+u/2`` at a tie that rounds up to
    even, ``−u/2`` at one that rounds down), so the surrogate *equals* the gap there, and it is
    differentiable. The tree itself is the half tree (rounded values forward,
    straight-through gradients).
    """
    total = jnp.zeros((), jnp.float32)
    v = jnp.asarray(x, jnp.float32)
    while v.shape[-1] > 1:
        a, b = v[..., 0::2], v[..., 1::2]
        s = a + b
        # the rounded add as a half add (v holds halves): a f32 -> f16 -> f32 round trip of
        # s is what XLA's GPU compiler deletes under excess precision (numerics.Summation)
        r = (a.astype(jnp.float16) + b.astype(jnp.float16)).astype(jnp.float32)
        u = ulp16(r)
        t = s / u                                    # exact: s is a multiple of u/2 here
        t = t - 2 * lax.stop_gradient(jnp.floor(t / 2))    # period 2: keep sin accurate
        total = total + jnp.sum(-(u / 2) * jnp.sin(jnp.pi * t))
        v = s + lax.stop_gradient(r - s)             # forward: rounded; backward: identity
    return total


@dataclass
class SearchResult:
    """Outcome of a search: the best input, its score and the best score after each step."""

    x: Optional[np.ndarray]      # float16, the best input (None: no evaluation ran)
    score: float                 # its objective (gap, or error in ulps)
    history: np.ndarray          # best score so far, per step
    evaluations: np.ndarray      # exact evaluations used, per step (cumulative)


@jax.jit
def _tree_batch(xs: jax.Array) -> jax.Array:
    return jax.vmap(lambda v: tree_sum(v))(xs)


def _gaps(xs: np.ndarray) -> np.ndarray:
    """Exact gaps of a batch of float16 vectors (the tree vmapped in JAX, exact sums by fsum)."""
    t = np.asarray(_tree_batch(jnp.asarray(xs)), np.float64)
    return np.array([ti - exact_sum(xi) for ti, xi in zip(t, xs)])


_surrogate_grad = jax.jit(jax.grad(lattice_surrogate))


def search_tree_gap(n: int = 128, *, steps: int = 100, batch: int = 32, lo: float = 0.5,
                    hi: float = 1.0, seed: int = 0, guide: str = "gradient") -> SearchResult:
    """Local search over ``x ∈ [lo, hi]^n`` (float16) maximising ``tree_sum(x) − exact``.

    Each step proposes ``batch`` moves of 1–3 coordinates by one or two half ulps, evaluates
    the exact gap of all of them at once (the tree ``jax.vmap`` -ed) and keeps the best if it
    is no worse. ``guide="gradient"``: half of the moves follow the sign of the gradient of
    :func:`lattice_surrogate` (each coordinate's predicted direction), the rest are random;
    ``guide="random"``: all random. Deterministic for a given ``seed``.
    """
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo, hi, n).astype(np.float16)
    cur = float(_gaps(x[None])[0])
    best, best_x = cur, x
    hist, evals, used = [], [], 1
    for _ in range(steps):
        u = np.asarray(ulp16(x.astype(np.float32)))
        g = np.asarray(_surrogate_grad(jnp.asarray(x, jnp.float32))) if guide == "gradient" \
            else None
        cand = np.repeat(x[None].astype(np.float32), batch, 0)
        for b in range(batch):
            m = int(rng.integers(1, 4))
            idx = rng.choice(n, m, replace=False)
            if g is not None and b < batch // 2:
                d: np.ndarray = np.sign(g[idx])
                d[d == 0] = rng.choice([-1.0, 1.0], int((d == 0).sum()))
                k: np.ndarray = np.ones(m)
            else:
                d, k = rng.choice([-1.0, 1.0], m), rng.choice([1.0, 2.0], m)
            cand[b, idx] += d * k * u[idx]
        cand = np.clip(cand, lo, hi).astype(np.float16)
        gaps = _gaps(cand)
        used += batch
        j = int(np.argmax(gaps))
        if gaps[j] >= cur:
            x, cur = cand[j], float(gaps[j])
            if cur > best:
                best, best_x = cur, x
        hist.append(best)
        evals.append(used)
    return SearchResult(best_x, best, np.array(hist), np.array(evals))


def random_search(n: int = 128, *, evaluations: int = 3200, lo: float = 0.5, hi: float = 1.0,
                  seed: int = 0, chunk: int = 256) -> SearchResult:
    """The baseline: the best gap among ``evaluations`` uniformly random inputs."""
    rng = np.random.default_rng(seed)
    best, best_x, hist, evals, used = -np.inf, None, [], [], 0
    while used < evaluations:
        m = min(chunk, evaluations - used)
        xs = rng.uniform(lo, hi, (m, n)).astype(np.float16)
        gaps = _gaps(xs)
        j = int(np.argmax(gaps))
        if gaps[j] > best:
            best, best_x = float(gaps[j]), xs[j]
        used += m
        hist.append(best)
        evals.append(used)
    return SearchResult(best_x, best, np.array(hist), np.array(evals))


def in_binade_gap_bound(n: int = 128) -> float:
    """The largest ``tree_sum(x) − exact`` over ``x ∈ [0.5, 1)^n`` in float16.

    With every leaf in [0.5, 1) each partial sum of level ℓ stays in [2^(ℓ−1), 2^ℓ), so every
    add's exact sum lies on its half-ulp lattice: its error is 0 or ±u/2, +u/2 only at a tie
    that rounds up to even. A tie needs exactly one odd child, and an odd result is never a
    tie's (ties round to even): each tying add needs a child that did not tie. Taking ties
    from the top (each worth twice a tie one level down) gives the bound; the local search
    reaches it.
    """
    levels = int(math.log2(n))
    total, free = 0.0, 1
    for lvl in range(levels, 0, -1):
        nodes = n >> lvl
        ties = min(nodes, free)
        total += ties * 2.0 ** (lvl - 12)
        free = 2 * nodes - ties            # children (level lvl-1) not forced to be non-ties
    return total


__all__ = _GENERATED + [
    "Differentiable", "saturated", "Reduction", "Call", "function", "prepare", "results",
    "PLACEMENT", "plan", "Plan", "gather", "tree_sum", "saturating_add", "plain_add",
    "exact_sum", "tree_gap", "ulp16", "lattice_surrogate", "search_tree_gap", "random_search",
    "in_binade_gap_bound", "SearchResult"]
