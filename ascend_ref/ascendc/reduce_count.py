"""Level-2 ReduceSum / ReduceMax / ReduceMin, the count form ("tensor前n个数据计算") —
asc-devkit ReduceSum.md / ReduceMax.md / ReduceMin.md (current pages), docs/SEMANTICS.md §N.

``ReduceSum(dst, src, sharedTmpBuffer, count)`` and ``ReduceMax / ReduceMin(dst, src,
sharedTmpBuffer, count, calIndex = false)`` reduce the first ``count`` elements of src
(contiguous: element ``k`` is lane ``k % L`` of repeat ``k // L``, srcRepStride 8; no mask).
Declared as their own instructions ``reduce_sum_count`` / ``reduce_max_count`` /
``reduce_min_count`` (the public ``reduce_sum`` / ``reduce_max`` / ``reduce_min`` take either
form: :func:`ascend_ref.ascendc.reduce.reduce_sum`); the repeat parameter of the engine is
``count`` (``engine.Instruction.count_form``).

count: ``[1, UB bytes / sizeof(T)]`` ("最大处理的数据量不能超过UB大小限制"; the implementation's
``ASCENDC_CHECK_VALUE_RANGE(count, 1, …)``): ``REPEAT_RANGE`` above the product's UB; 0 is
the product's zero-repeat rule (A2/A3 NOP, 950 "不保证该接口被视为NOP": dst undefined).

ReduceMax / ReduceMin: ``dst[0]`` the extreme of the first ``count`` elements, with
``cal_index`` ``dst[1]`` its flat position ``r*L + i`` (the tail repeat's ``L*R + lane``: the
same number), the smallest among equal extremes; above 65535 for a 2-byte type:
``INDEX_OVERFLOW``. sharedTmpBuffer (profile field ``reduce_tmp_buffer``): where ``"used"``
the page's formula with ``first = count / L`` (integer division, as the page writes it) is
required (``WORK_SIZE``) and the buffer is undefined afterwards; on 950 any size, untouched.

ReduceSum, per product (profile field ``reduce_sum_count_mode``, ReduceSum.md
"不同硬件形态对应的ReduceSum相加方式"):

* ``"sequential"`` (方式一, A2 / A3): a tree inside each repeat (the last one over its
  ``count % L`` lanes, the others +0), the repeat sums added one after the other
  ("不同repeat的结果按顺序累加"); the buffer is not used ("传入任意大小的sharedTmpBuffer，
  sharedTmpBuffer不会被使用"): any size, not touched. Not documented, so assumed: each add is
  rounded to T (``reduce_sum_seq_rounding``) and the chain starts from the first repeat's sum
  (``reduce_sum_seq_seed`` ``"first"``; ``"zero"``: from +0, which differs for a −0 or NaN
  first sum).
* ``"tree"`` (方式二 for both forms: 200I/500 A2, AI Core, training, Kirin): the body
  ``R = count / L`` full repeats summed as the high-dimensional 方式二 (``R`` = 1 with
  ``count`` lanes when ``count < L``), then, with a tail of ``count % L`` lanes, one tree of
  L lanes over ``[body, tail sum, +0, …]`` (the generic implementation's last step:
  ``reduce_sum_tree_tail = "step"``, assumed; ``"leaf"``, dav_l300 / dav_l311's order: the
  tail repeat's sum one more leaf of the tree across the repeat sums).
* ``"merge"`` (Ascend 950, "Counter模式且数据量在256~1024字节之间采用方式三；否则采用方式二"):
  ``n = count``; ``n <= L`` one tree (at ``n = L`` already 方式三: no buffer); ``L < n <= 2L``
  ``v = x0 + x1`` on lanes ``< n - L`` (``x0`` elsewhere); ``2L < n <= 3L`` ``v = (x0 + x1)
  + x2`` on lanes ``< n - 2L``; ``3L < n <= 4L`` ``v = (x2 + x3 on lanes < n - 3L, x2
  elsewhere) + (x0 + x1)``; then one tree of
  ``v`` (方式三, ``xk`` the k-th L elements); ``n > 4L`` the repeat sums (the last partial)
  tree-summed in chunks of L, the chunk sums tree-summed again past L² (方式二).

sharedTmpBuffer on the 方式二 paths (``"tree"``; ``"merge"`` outside 256 <= n·s <= 1024): the
page's ``DivCeil(firstMaxRepeat, epb) * epb`` elements, ``firstMaxRepeat = count / L`` (1 if
``count < L``) — ``WORK_SIZE`` — undefined afterwards; on the 方式一 / 方式三 paths any size,
not touched. The sum is also the declared effect value ``"sum"`` (``Effects.diag["sum"]``:
the word the special register GetReduceRepeatSumSpr reads back).

Example (ReduceSum.md 调用示例, tensor前n个数据计算: 288 ones):

>>> import numpy as np, ascend_ref as ar
>>> ub = ar.store(ar.new_ub("atlas_a2"), 0, np.ones(288, np.float16))
>>> dst, src, tmp = ar.Tensor(1024, "half", 16), ar.Tensor(0, "half", 288), ar.Tensor(1056, "half", 16)
>>> ub = ar.ascendc.reduce_sum(ub, dst, src, tmp, 288, chip="atlas_a2")
>>> float(ar.load(ub, 1024, "float16", 1)[0])
288.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from .. import numerics, registry
from ..argtypes import CallResult, ChipLike, FlagLike, IntLike, MaskLike, SaturateLike, UBLike
from ..constraints import Code, ConstraintError, Rule
from ..engine import Instruction as Kernel
from ..mask import CounterMask
from ..spr import ReduceSpr
from ..ub import Tensor, itemsize
from . import _b64, _spr_hooks as sprs, reduce as high

if TYPE_CHECKING:
    from jax.typing import ArrayLike

    from ..engine import Effects, Spec
    from ..numerics import Summation
    from ..params import Params
    from ..engine import EffectsFn

#: the count form's public signature after ``ub`` (``"repeat"`` is ``count``: the engine's
#: repeat parameter, public name ``kernel.repeat_param``)
SIGNATURE = ("dst", "src", "work_tensor", "repeat", "cal_index")
PARAMS = ("repeat",)
UB_MAX = 262144           # the largest UB of the products (Ascend 950): the static count range

SUM_MODE = registry.ProfileField(
    "reduce_sum_count_mode", ("sequential", "tree", "merge"),
    "ReduceSum count form: 方式一 (tree per repeat, repeat sums added in order; A2/A3), "
    "方式二 (trees across repeats, body + tail) or 950's 方式三 vector merge for "
    "256 <= count*size <= 1024 bytes and 方式二 trees otherwise (ReduceSum.md)")
SEQ_SEED = registry.ProfileField(
    "reduce_sum_seq_seed", ("first", "zero"),
    "ReduceSum count form, 方式一: the sequential chain starts from the first repeat's sum, "
    "or from +0 (not documented)")
TREE_TAIL = registry.ProfileField(
    "reduce_sum_tree_tail", ("step", "leaf"),
    "ReduceSum count form, 方式二 with a tail (count % L > 0): the body's tree, then one more "
    "tree over [body, tail sum] (the generic implementation), or the tail repeat's sum one "
    "more leaf of the tree across the repeat sums (dav_l300 / dav_l311) (not documented)")
SEQ_ROUNDING = registry.ProfileField(
    "reduce_sum_seq_rounding", ("each", "wide"),
    "ReduceSum count form, 方式一: every sequential add rounded to T (the result is read back "
    "as T), or (half) the chain in float32 rounded to half once at the end (not documented)")


def count_range(option: Any = None, dtype: str = "float16") -> tuple:
    """[0, 262144 / sizeof(T)] statically; within it the product's own UB by :data:`COUNT_CAP`."""
    return 0, UB_MAX // itemsize(dtype or "float16")


def _first(count: Any, lanes: int, at_least_one: bool) -> Any:
    """The pages' ``firstMaxRepeat`` of the count form: ``count / L`` (ReduceSum: 1 if
    ``count < L``)."""
    first = count // lanes
    return jnp.maximum(first, 1) if at_least_one and not isinstance(first, int) else (
        max(first, 1) if at_least_one else first)


def minmax_need(count: Any, option: Any = None, dtype: str = "float16") -> Any:
    """ReduceMax.md 关键特性说明 with ``firstMaxRepeat = count / elementsPerRepeat``."""
    return high.tmp_need(_first(count, 256 // itemsize(dtype), False), option is True, dtype)


def sum_need(count: Any, option: Any = None, dtype: str = "float16") -> Any:
    """ReduceSum.md 关键特性说明, 方式二: ``DivCeil(firstMaxRepeat, epb) * epb`` with
    ``firstMaxRepeat = count / L``, 1 if ``count < L`` (the 方式二 paths; the others need none)."""
    return high.sum_tmp_need(_first(count, 256 // itemsize(dtype), True), None, dtype)


def _merged(spec: Spec, p: Params) -> Any:
    """950's 方式三 paths: ``L <= count <= 4L`` (256 <= count*size <= 1024 bytes)."""
    return SUM_MODE.holds(p, "merge") & (p.repeat >= spec.lanes) & (p.repeat <= 4 * spec.lanes)


def _sum_uses_tmp(spec: Spec, p: Params) -> Any:
    """The 方式二 paths: every call on a "tree" product, 950 outside 方式三 (8-byte types:
    always 方式三 on 950, "int64_t、uint64_t采用方式三")."""
    if spec.size == 8:
        return SUM_MODE.holds(p, "tree")
    return SUM_MODE.holds(p, "tree") | (SUM_MODE.holds(p, "merge") & ~_merged(spec, p))


#: the product's top of ``count`` (:attr:`ascend_ref.engine.Instruction.repeat_cap`)
COUNT_CAP = (lambda spec, p: p.chip_ub // spec.size,
             "UB bytes / sizeof(T): '最大处理的数据量不能超过UB大小限制'")


def _minmax_rules(spec: Spec) -> List[Rule]:
    index = spec.option == "index"
    out = [Rule(Code.WORK_SIZE, "work_tensor.size",
                lambda p: (p.tensor("work_tensor").size >= minmax_need(p.repeat, index, spec.dtype))
                | high.TMP.holds(p, "unused"),
                lambda p: int(p.tensor("work_tensor").size),
                lambda p: f">= {int(minmax_need(p.repeat, index, spec.dtype))} elements for "
                          f"count {int(p.repeat)}" + (" (calIndex)" if index else "")
                          + " (sharedTmpBuffer, the page's formula, firstMaxRepeat = count / L)",
                doc="sharedTmpBuffer holds the page's size (first = count / L) where the "
                    "product uses it")]
    if index and spec.size == 2:
        out.append(Rule(Code.INDEX_OVERFLOW, "count",
                        lambda p: p.diagnostics.values["index"] <= high.INDEX_LIMIT,
                        lambda p: int(p.repeat),
                        lambda p: f"a call whose result index fits in 16 bits (the winning "
                                  f"element's position is {int(p.diagnostics.values['index'])}"
                                  f" > {high.INDEX_LIMIT})",
                        hint=high.INDEX_HINT,
                        doc="the result index of a 2-byte type <= 65535"))
    return out


def _sum_rules(spec: Spec) -> List[Rule]:
    return [Rule(Code.WORK_SIZE, "work_tensor.size",
                 lambda p: (p.tensor("work_tensor").size >= sum_need(p.repeat, None, spec.dtype))
                 | ~_sum_uses_tmp(spec, p),
                 lambda p: int(p.tensor("work_tensor").size),
                 lambda p: f">= {int(sum_need(p.repeat, None, spec.dtype))} elements for count "
                           f"{int(p.repeat)} (sharedTmpBuffer, 方式二: DivCeil(firstMaxRepeat, "
                           f"epb) * epb, firstMaxRepeat = count / L, 1 if count < L)",
                 doc="sharedTmpBuffer holds the 方式二 size on the 方式二 paths (方式一 / 方式三: "
                     "any size)")]


def _minmax_effects(kind: str) -> EffectsFn:
    high_effects = high._effects(kind)          # srcRepStride 8: index = r * L + lane

    def effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                arith: numerics.Exact) -> Effects:
        if spec.size == 8:                       # int64 / uint64: (lo, hi) words
            return _b64.minmax_effects(spec, p, bits, active, kind, high.TMP.holds(p, "used"))
        return high_effects(spec, p, bits, active, arith)

    return effects


def _tree_of(v: jax.Array, arith: Union[Summation, numerics.Exact], lanes: int) -> jax.Array:
    """One tree of L lanes over ``v`` (zero-padded to L)."""
    return numerics.padded_tree_sum(v, lanes, arith.add, arith.zero)[0]


def _sum_effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                 arith: numerics.Exact) -> Effects:
    """方式一 / 方式二 / 方式三 by the product's profile, computed on the path's summation
    (``arith.sums``: the fast tree with its guard, the exact adder where it fails)."""
    if spec.size == 8:                           # int64 / uint64: (lo, hi) words, 方式三
        return _b64.sum_effects(spec, p, bits, active, _sum_uses_tmp(spec, p))

    def compute(s: Summation) -> Tuple[jax.Array]:   # in the summation's domain (fast / exact)
        return (_sum_total(spec, p, s.enter(bits, active), s, arith.saturate),)

    (total,), ok = arith.sums(compute)
    return high._result(spec, p, [total], _sum_uses_tmp(spec, p), {"sum": total,
                                                                   "exact_ok": ok})


def _sum_total(spec: Spec, p: Params, x: jax.Array, s: Summation,
               saturate: ArrayLike) -> jax.Array:
    """The count form's sum of ``x`` (``(rows, L)`` values of the summation ``s``, lanes past
    the count +0) in the product's order (``saturate``: the call's flag)."""
    add, zero, L = s.add, s.zero, spec.lanes
    n = p.repeat
    rows = spec.rows
    t = numerics.tree_sum(x, add)                         # the tree of each repeat, (rows,)
    r = jnp.arange(rows, dtype=jnp.int32)
    nrep = (n + L - 1) // L                               # repeats with data (last partial)

    # 方式一: t_0 (+0 first under seed "zero"), then + t_1, + t_2, ... in order
    seed = jnp.where(SEQ_SEED.holds(p, "zero"), add(zero, t[0]), t[0])

    def step(acc: jax.Array, k: jax.Array) -> Tuple[jax.Array, None]:
        return jnp.where(k < nrep, add(acc, t[k]), acc), None

    sequential = jax.lax.scan(step, seed, r[1:])[0] if rows > 1 else seed
    # "wide": a float32 chain over the repeat sums, rounded to half once (saturated as an
    # add's result); the fast summation's half values are float16 already (an overflow is
    # an infinity there, which its guard sends to the exact adder)
    fast_half = isinstance(s, numerics.Summation) and s.fast and s.half
    if fast_half or (t.dtype == jnp.uint16 and spec.dtype == "float16"):
        wide = t.astype(jnp.float32) if fast_half else \
            jax.lax.bitcast_convert_type(t, jnp.float16).astype(jnp.float32)
        acc = jnp.where(SEQ_SEED.holds(p, "zero"), jnp.float32(0) + wide[0], wide[0])

        def wstep(a: jax.Array, k: jax.Array) -> Tuple[jax.Array, None]:
            return jnp.where(k < nrep, a + wide[k], a), None

        acc = jax.lax.scan(wstep, acc, r[1:])[0] if rows > 1 else acc
        if fast_half:
            half = acc.astype(jnp.float16)
        else:
            half = jax.lax.bitcast_convert_type(acc.astype(jnp.float16), jnp.uint16)
            half = numerics.saturated(half, saturate)
        sequential = jnp.where(SEQ_ROUNDING.holds(p, "wide"), half, sequential)

    def trees(values: jax.Array, live: jax.Array) -> jax.Array:
        """方式二 over ``values`` (live ones): one value its own sum, up to L one tree, past L
        chunks of L then a tree of the chunk sums."""
        chunks = numerics.padded_tree_sum(jnp.where(live, values, zero), L, add, zero)
        many = _tree_of(chunks, s, L)
        count = jnp.sum(live.astype(jnp.int32))
        return jnp.where(count > L, many, jnp.where(count == 1, values[0], chunks[0]))

    # 方式二, body + tail (the A2-style implementation of the other products)
    full = n // L
    body = trees(t, r < jnp.maximum(full, 1))             # count < L: one repeat, count lanes
    tail = jnp.where(full >= 1, t[jnp.minimum(full, rows - 1)], zero)
    with_tail = _tree_of(jnp.stack([body, tail]), s, L)
    tree = jnp.where((full >= 1) & (n % L > 0), with_tail, body)
    # 方式二, "leaf" (dav_l300 / dav_l311 ReduceSumCounterMode): every repeat's sum (the last
    # partial) a leaf of one tree across the repeats
    leaf = jnp.where(n <= L, t[0], trees(t, r < nrep))
    tree = jnp.where(TREE_TAIL.holds(p, "leaf"), leaf, tree)

    # Ascend 950: 方式三 for L <= n <= 4L (the high-dimensional form's counter mode shares
    # it), its 方式二 (every repeat a row, the last partial)
    merge = jnp.where(_merged(spec, p), high.merge_sum(x, n, L, s),
                      jnp.where(n <= L, t[0], trees(t, r < nrep)))

    return jnp.where(SUM_MODE.holds(p, "sequential"), sequential,
                     jnp.where(SUM_MODE.holds(p, "tree"), tree, merge))


def _kernel(name: str, kind: str) -> Kernel:
    sums = kind == "sum"
    lay = high.sum_layout if sums else high.layout
    return Kernel(
        api=name, operands=("dst", "src", "work_tensor"), repeat_param="count",
        repeat_range=lambda spec: count_range(None, spec.dtype), strides=(),
        align=lambda spec: {"dst": lay(spec.dtype, spec.option == "index").slot_bytes,
                            "src": 32, "work_tensor": 32},
        effects=_sum_effects if sums else _minmax_effects(kind), overlap="repeat",
        word_order="ascendc", blk_stride=False, saturating=sums, mask_modes=("count",),
        extra_rules=_sum_rules if sums else _minmax_rules, sized_by_rule=("work_tensor",),
        count_form=True, repeat_cap=COUNT_CAP, spr=sprs.count_sum_sets() if sums else sprs.level2_sets(kind))


_ASSUMED = {"reduce_l2_index": Code.INDEX_OVERFLOW}

SUM = registry.register(registry.Instruction(
    name="reduce_sum_count", family="ascendc", kernel=_kernel("reduce_sum_count", "sum"),
    signature=SIGNATURE[:-1], params=PARAMS, kind=lambda o: "sum", layout=high.sum_layout,
    repeat_range=count_range, work_need=sum_need, codes=(Code.WORK_SIZE,),
    profile_fields=(SUM_MODE, TREE_TAIL, SEQ_SEED, SEQ_ROUNDING, _b64.OVERFLOW) + sprs.SUM_FIELDS,
    arg_names={"work_tensor": "shared_tmp_buffer"},
    summary="ReduceSum (level 2, count form: the first count elements)",
    overload_of="reduce_sum"))


def _declare_extreme(kind: str) -> registry.Instruction:
    """ReduceMax / ReduceMin, count form (``kind`` "max" / "min"): one declaration."""
    name, title = f"reduce_{kind}_count", f"Reduce{kind.capitalize()}"
    return registry.register(registry.Instruction(
        name=name, family="ascendc", kernel=_kernel(name, kind),
        signature=SIGNATURE, params=PARAMS, kind=lambda o: kind, layout=high.layout,
        repeat_range=count_range, option=registry.CAL_INDEX, work_need=minmax_need,
        assumptions=_ASSUMED, codes=(Code.WORK_SIZE, Code.INDEX_OVERFLOW),
        profile_fields=(high.TMP,) + sprs.MAXMIN_FIELDS,
        arg_names={"work_tensor": "shared_tmp_buffer"},
        summary=f"{title} (level 2, count form: the first count elements)",
        overload_of=f"reduce_{kind}"))


MAX = _declare_extreme("max")
MIN = _declare_extreme("min")


def reduce_sum_count(ub: UBLike, dst: Tensor, src: Tensor, shared_tmp_buffer: Tensor,
                     count: IntLike, *, chip: ChipLike, saturate: SaturateLike = None,
                     return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReduceSum (level 2), count form: the sum of the first ``count`` elements into
    ``dst[0]`` (the product's 方式一 / 二 / 三). Same as ``reduce_sum(ub, dst, src, tmp,
    count)``."""
    return SUM.run(ub, {"dst": dst, "src": src, "work_tensor": shared_tmp_buffer}, None,
                   {"repeat": count}, chip=chip, saturate=saturate, return_info=return_info,
                   spr=spr)


def reduce_max_count(ub: UBLike, dst: Tensor, src: Tensor, shared_tmp_buffer: Tensor,
                     count: IntLike, cal_index: FlagLike = False, *, chip: ChipLike,
                     return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReduceMax (level 2), count form (``reduce_max(ub, dst, src, tmp, count, cal_index)``)."""
    return MAX.run(ub, {"dst": dst, "src": src, "work_tensor": shared_tmp_buffer}, None,
                   {"repeat": count}, chip=chip, option=cal_index, return_info=return_info,
                   spr=spr)


def reduce_min_count(ub: UBLike, dst: Tensor, src: Tensor, shared_tmp_buffer: Tensor,
                     count: IntLike, cal_index: FlagLike = False, *, chip: ChipLike,
                     return_info: bool = False,
                     spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReduceMin (level 2), count form (``reduce_min(ub, dst, src, tmp, count, cal_index)``)."""
    return MIN.run(ub, {"dst": dst, "src": src, "work_tensor": shared_tmp_buffer}, None,
                   {"repeat": count}, chip=chip, option=cal_index, return_info=return_info,
                   spr=spr)


# ------------------------------------------------------------------ the public calls --------
# (both documented overloads of each name: the high-dimensional form is ascendc/reduce.py's)

def _form(ins: registry.Instruction, mask: Optional[MaskLike], repeat_time: Optional[IntLike],
          src_rep_stride: Optional[IntLike], cal_index: Optional[FlagLike],
          count: Optional[IntLike], bool_second: bool
          ) -> Tuple[str, Optional[MaskLike], Optional[FlagLike]]:
    """Which documented overload a call is: ``("count", count, cal_index)`` or ``("high",
    mask, cal_index)``. The count form is the call with ``count=`` or with exactly one
    numeric argument after shared_tmp_buffer (for ReduceMax / ReduceMin optionally followed
    by calIndex: a bool in repeat_time's place is calIndex, never a repeat count); the
    high-dimensional form gives mask, repeat_time and src_rep_stride."""
    if count is not None:
        if mask is not None or repeat_time is not None or src_rep_stride is not None:
            raise ConstraintError(
                Code.BAD_ARGUMENT, api=ins.name, param="count", value=count,
                allowed="count= alone (the count form: dst, src, shared_tmp_buffer, count"
                        + ("[, cal_index]" if bool_second else "") + ")",
                hint="give either count= or mask, repeat_time, src_rep_stride, not both")
        return "count", count, cal_index
    if repeat_time is None or (bool_second and isinstance(repeat_time, (bool, np.bool_))):
        if isinstance(mask, (list, tuple, CounterMask)) or getattr(mask, "ndim", 0) > 0:
            # a mask, not a count: the high-dimensional form without its repeats
            raise ConstraintError(
                Code.BAD_ARGUMENT, api=ins.name, param="repeat_time", value=None,
                allowed="a repeat count with src_rep_stride after a mask (the "
                        "high-dimensional form: mask, repeat_time, src_rep_stride"
                        + ("[, cal_index]" if bool_second else "") + ")",
                hint=f"{type(mask).__name__} {mask!r} is a mask; the count form takes one int "
                     f"count")
    if bool_second and isinstance(repeat_time, (bool, np.bool_)) and src_rep_stride is None:
        return "count", mask, bool(repeat_time)           # reduce_max(..., count, True)
    if repeat_time is None and src_rep_stride is None:
        if mask is None:
            raise ConstraintError(Code.BAD_ARGUMENT, api=ins.name, param="count", value=None,
                                  allowed="count (an int) or mask, repeat_time, src_rep_stride")
        return "count", mask, cal_index
    if repeat_time is None or src_rep_stride is None:
        # two numbers after the buffer: a count form whose calIndex was not given as a bool
        hint = (f"For the count form with calIndex give a bool after count: "
                f"{ins.name.split('_count')[0]}(ub, dst, src, tmp, {mask!r}, True) or "
                f"cal_index=...") if bool_second and src_rep_stride is None else ""
        raise ConstraintError(
            Code.BAD_ARGUMENT, api=ins.name,
            param="src_rep_stride" if src_rep_stride is None else "repeat_time",
            value=None, allowed="the high-dimensional form gives mask, repeat_time and "
                                "src_rep_stride (the count form: count alone)", hint=hint)
    return "high", mask, cal_index


def _run(ins: registry.Instruction, count_ins: registry.Instruction, ub: UBLike, dst: Tensor,
         src: Tensor, shared_tmp_buffer: Tensor, mask: Optional[MaskLike],
         repeat_time: Optional[IntLike], src_rep_stride: Optional[IntLike],
         cal_index: Optional[FlagLike], count: Optional[IntLike], chip: ChipLike,
         return_info: bool, saturate: SaturateLike = None,
         spr: Optional[ReduceSpr] = None) -> CallResult:
    form, first, ci = _form(ins, mask, repeat_time, src_rep_stride, cal_index, count,
                            ins.option is not None)
    tensors = {"dst": dst, "src": src, "work_tensor": shared_tmp_buffer}
    if form == "count":
        return count_ins.run(ub, tensors, None, {"repeat": first}, chip=chip,
                             option=ci if count_ins.option is not None else None,
                             saturate=saturate, return_info=return_info, spr=spr)
    try:
        return ins.run(ub, tensors, first, {"repeat": repeat_time, "src_rep_stride": src_rep_stride},
                       chip=chip, option=ci, saturate=saturate, return_info=return_info, spr=spr)
    except ConstraintError as e:
        # a type only the count form has here (950 int64 / uint64: "仅支持tensor前n个数据计算")
        if e.code is Code.DTYPE_UNSUPPORTED and e.value in _count_dtypes(count_ins, chip):
            raise ConstraintError(
                e.code, api=e.api, param=e.param, value=e.value, allowed=e.allowed, chip=e.chip,
                hint=f"{e.value} is in the count form only on {e.chip} "
                     f"('仅支持tensor前n个数据计算'): {ins.name}(ub, dst, src, tmp, count"
                     + ("[, cal_index])" if ins.option is not None else ")")) from None
        raise


def _count_dtypes(count_ins: registry.Instruction, chip: ChipLike) -> Tuple[str, ...]:
    """The count form's dtypes on ``chip`` (none where the product does not load: the
    caller's error stands as it is)."""
    try:
        return tuple(registry.get_chip(chip).dtypes(count_ins.name))
    except Exception:                                        # noqa: BLE001
        return ()


def reduce_sum(ub: UBLike, dst: Tensor, src: Tensor, shared_tmp_buffer: Tensor,
               mask: Optional[MaskLike] = None, repeat_time: Optional[IntLike] = None,
               src_rep_stride: Optional[IntLike] = None, *, count: Optional[IntLike] = None,
               chip: ChipLike, saturate: SaturateLike = None, return_info: bool = False,
               spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReduceSum (level 2), both documented overloads:

    * ``reduce_sum(ub, dst, src, tmp, count)`` (or ``count=``): the count form, the first
      ``count`` elements (the product's 方式一 / 二 / 三: ``ascendc/reduce_count.py``);
    * ``reduce_sum(ub, dst, src, tmp, mask, repeat_time, src_rep_stride)``: the
      high-dimensional form (方式二: trees inside and across the repeats).

    The sum goes to ``dst[0]``. ``saturate`` (half only) defaults to the product profile's
    ``saturate_default``."""
    return _run(high._SUM, SUM, ub, dst, src, shared_tmp_buffer, mask, repeat_time,
                src_rep_stride, None, count, chip, return_info, saturate, spr)


def reduce_max(ub: UBLike, dst: Tensor, src: Tensor, shared_tmp_buffer: Tensor,
               mask: Optional[MaskLike] = None, repeat_time: Optional[IntLike] = None,
               src_rep_stride: Optional[IntLike] = None, cal_index: FlagLike = False, *,
               count: Optional[IntLike] = None, chip: ChipLike, return_info: bool = False,
               spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReduceMax (level 2): the maximum into ``dst[0]`` (its smallest index into ``dst[1]``
    with ``cal_index``). Both documented overloads:

    * ``reduce_max(ub, dst, src, tmp, count[, cal_index])`` (or ``count=``): the count form,
      the first ``count`` elements, index = flat position. A bool right after ``count`` is
      calIndex: ``reduce_max(ub, dst, src, tmp, 288, True)`` is the count form with index;
    * ``reduce_max(ub, dst, src, tmp, mask, repeat_time, src_rep_stride[, cal_index])``: the
      high-dimensional form (repeat_time an int, never a bool)."""
    return _run(high._MAX, MAX, ub, dst, src, shared_tmp_buffer, mask, repeat_time,
                src_rep_stride, cal_index, count, chip, return_info, spr=spr)


def reduce_min(ub: UBLike, dst: Tensor, src: Tensor, shared_tmp_buffer: Tensor,
               mask: Optional[MaskLike] = None, repeat_time: Optional[IntLike] = None,
               src_rep_stride: Optional[IntLike] = None, cal_index: FlagLike = False, *,
               count: Optional[IntLike] = None, chip: ChipLike, return_info: bool = False,
               spr: Optional[ReduceSpr] = None) -> CallResult:
    """ReduceMin (level 2): the minimum into ``dst[0]`` (its smallest index into ``dst[1]``
    with ``cal_index``); the two overloads as :func:`reduce_max`."""
    return _run(high._MIN, MIN, ub, dst, src, shared_tmp_buffer, mask, repeat_time,
                src_rep_stride, cal_index, count, chip, return_info, spr=spr)
