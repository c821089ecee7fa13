"""Level-2 ReduceMax / ReduceMin / ReduceSum (with ``sharedTmpBuffer``) — asc-devkit
ReduceMax.md / ReduceMin.md / ReduceSum.md (current pages), docs/SEMANTICS.md §N.

The high-dimensional form ``ReduceMax(dst, src, sharedTmpBuffer, mask, repeatTime,
srcRepStride, calIndex = false)``: repeat ``r`` reads ``L`` lanes (128 half / 64 float; no
block stride: the 8 DataBlocks of a repeat are contiguous) at ``src + r * srcRepStride * 32``;
``mask`` picks the lanes of every repeat. One result over all repeats:

* ``dst[0]`` = the maximum (minimum) of every participating element — NaN, ``-0 < +0`` and
  the integer orders as every min / max (SEMANTICS §D);
* with ``cal_index``, ``dst[1]`` = its index, the element offset from ``src``
  ``r * srcRepStride * (32 / s) + lane``, stored as raw integer bits of the element width;
  among equal extremes the **smallest index** ("如果存在多个最大值，该指令会将最小索引写入目的操作数");
  above 65535 for a 16-bit type ("只支持获取最大不超过65535的索引值"): ``INDEX_OVERFLOW``.
  Without ``cal_index`` only ``dst[0]`` is written.

``sharedTmpBuffer`` (operand key ``work_tensor``: the work tensor of every tool) holds the
intermediate results on every product but Ascend 950 (profile field ``reduce_tmp_buffer``):
there it must hold the page's size (elements; ``first = repeatTime``)::

    no index:   ceil(2*first / epb) * epb
    with index: start2 = ceil(2*first / epb) * epb; it2 = ceil(2*first / L) * 2
                end2 = ceil(it2 / epb) * epb; it3 = ceil(it2 / L) * 2
                need = start2 + end2                       (it2 == 2)
                need = start2 + end2 + ceil(it3 / epb) * epb  (it2 > 2)

(``WORK_SIZE`` otherwise) and its whole declared extent is undefined after the call, except
the dst bytes where dst overlaps it (allowed by the page). On 950 it is not used: any size, not
touched. dst alignment: the slot ([value, index] 2·s, [value] s; ReduceRepeat table 3);
src and sharedTmpBuffer 32 B. repeatTime: the page allows up to INT32_MAX; the reference
models up to ``L*L/4`` (4096 half, 1024 float), where the page's three-round size formula
ends (assumption ``reduce_l2_max_repeat``). repeatTime 0 / mask 0: the product's zero rules
(A2/A3 NOP, 950 not guaranteed). The count form ``ReduceMax(dst, src, sharedTmpBuffer, count,
calIndex)`` is its own declared instruction, ``reduce_max_count`` (``ascendc/reduce_count.py``);
the public functions ``reduce_max`` / ``reduce_min`` / ``reduce_sum`` (in
``ascendc/reduce_count.py``, which declares the count form) take either overload.

Counter mask mode (``ar.CounterMask(n)`` as ``mask``; docs/SEMANTICS.md §R): ``ceil(n / L)``
repeats at the caller's srcRepStride, the last one partial, repeatTime ignored; the buffer
size counts those repeats; ReduceSum on 950 merges ``L <= n <= 4L`` (方式三, no buffer); the
max / min index is the offset or the position ``r*L + lane`` by product (profile fields
``reduce_l2_counter``, ``reduce_l2_counter_index``, ``reduce_sum_counter_mode``).

ReduceSum (same geometry, no calIndex, ``saturate`` as every half sum): 方式二 on every product
(the page's accumulation table: the high-dimensional form is 方式二 everywhere, 950's Normal
mode included) — a tree inside each repeat (masked lanes +0), the repeat sums tree-summed in
chunks of L (zero-padded), the chunk sums tree-summed again when R > L, one repeat being its
own sum (the chunking is assumption ``reduce_sum_tree_chunking``: the page says only "不同repeat
的结果也按二叉树累加"). sharedTmpBuffer: ``ceil(repeatTime / epb) * epb`` elements on every
product, undefined afterwards; dst aligned to ``s`` (ReduceRepeat table 3, SUM).

Example (ReduceMax.md, tensor高维切分 example, shortened): the maximum 0.9985 at index 114.

>>> import numpy as np, ascend_ref as ar
>>> x = np.full(512, 0.5, np.float16); x[114] = 0.9985; x[300] = 0.9985
>>> ub = ar.store(ar.new_ub("atlas_a2"), 0, x)
>>> dst, src, tmp = ar.Tensor(1024, "half", 16), ar.Tensor(0, "half", 512), ar.Tensor(1056, "half", 32)
>>> ub = ar.ascendc.reduce_max(ub, dst, src, tmp, 128, 4, 8, True, chip="atlas_a2")
>>> out = ar.load(ub, 1024, "float16", 2)
>>> float(out[0]), int(out.view(np.uint16)[1])
(0.99853515625, 114)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Tuple, Union

import jax.numpy as jnp
import numpy as np

from .. import mask as masks, numerics, registry
from ..constraints import Code, Rule
from ..engine import Effects, Instruction as Kernel, Region, Write, gate
from ..ub import itemsize
from . import _spr_hooks as sprs
from ._slots import COUNTER_MODE

if TYPE_CHECKING:
    import jax

    from ..engine import Spec
    from ..numerics import Summation
    from ..params import Params
    from ..engine import EffectsFn

#: Numeric parameters (Case keys) and the public signature after ``ub``
PARAMS = ("repeat", "src_rep_stride")
SIGNATURE = ("dst", "src", "work_tensor", "mask", "repeat", "src_rep_stride", "cal_index")
INDEX_LIMIT = 65535          # "只支持获取最大不超过65535（uint16_t能表示的最大值）的索引值"

TMP = registry.ProfileField(
    "reduce_tmp_buffer", ("used", "unused"),
    "ReduceMax / ReduceMin: sharedTmpBuffer holds the intermediate results (its documented "
    "size is required, its bytes are undefined after the call) or is not used at all (950)")


#: counter mask mode (SetMaskCount, ``ar.CounterMask(n)``; docs/SEMANTICS.md §R): the
#: high-dimensional call over ``n`` elements -- ``ceil(n / L)`` repeats at the caller's
#: srcRepStride, the last one partial, repeatTime ignored (掩码/概述.md table 3) -- or, where the
#: product's implementation does not show it (A2 / A3 / 200I/500 A2 / AI Core: their ReduceImpl
#: is normal-mode code), the alternative the audit reruns with: dst (and the buffer) undefined
COUNTER = registry.ProfileField(
    "reduce_l2_counter", ("count", "undefined"),
    "level-2 ReduceSum / Max / Min high-dimensional form in counter mode: the documented "
    "counter rule (ceil(n / L) repeats, the last partial, srcRepStride kept) or dst undefined")
#: the index in counter mode: the element offset ``r*srcRepStride*(32/s) + lane`` (the normal
#: high-dimensional formula; dav_c220's later stages) or the position ``r*L + lane`` among the
#: counted elements (dav_3510 / dav_l300 counter templates advance the index by L per repeat)
COUNTER_INDEX = registry.ProfileField(
    "reduce_l2_counter_index", ("offset", "position"),
    "level-2 ReduceMax / ReduceMin in counter mode: the result index is the element offset "
    "from src (r*srcRepStride*32/s + lane) or the position r*L + lane among the n elements")
#: ReduceSum in counter mode (ReduceSum.md 不同硬件形态对应的ReduceSum相加方式): 方式二 ("tree")
#: or Ascend 950's "Counter模式且数据量在256~1024字节之间采用方式三；否则采用方式二" ("merge")
SUM_COUNTER = registry.ProfileField(
    "reduce_sum_counter_mode", ("tree", "merge"),
    "level-2 ReduceSum high-dimensional form in counter mode: 方式二 trees, or 950's 方式三 "
    "vector merge for 256 <= n*size <= 1024 bytes and 方式二 otherwise (ReduceSum.md)")


def _has(p: Params, field: registry.ProfileField, value: Any) -> Any:
    """``field.holds(p, value)`` where the call's instruction declares ``field`` (the count
    form shares these effects and declares none of the counter fields: False there)."""
    if field.name not in p.chip.fields:
        return jnp.bool_(False)
    return field.holds(p, value)


def _counter_undefined(p: Params) -> Any:
    """A counter-mode call on a product whose ``reduce_l2_counter`` is ``"undefined"``."""
    return jnp.asarray(p.mask_counter, bool) & _has(p, COUNTER, "undefined")


def merged(spec: Spec, p: Params, n: jax.Array, field: registry.ProfileField,
           value: Any) -> Any:
    """方式三's range ``L <= n <= 4L`` (256 <= n*size <= 1024 bytes: "256~1024字节之间", both
    ends in, as dav_3510 takes them: n = L is one tree either way, with no buffer) on a
    product whose ``field`` is ``value``."""
    return _has(p, field, value) & (n >= spec.lanes) & (n <= 4 * spec.lanes)


def merge_sum(x: jax.Array, n: jax.Array, lanes: int,
              arith: Union[Summation, numerics.Exact]) -> jax.Array:
    """方式三 (Ascend 950, dav_3510 ``ReduceSumCounterMode``): the rows ``x0..x3`` (``(rows,
    L)``, lanes past the count already +0) merged into one vector -- ``L < n <= 2L``: ``x0 +
    x1`` on lanes ``< n - L`` (``x0`` elsewhere); ``<= 3L``: ``(x0 + x1) + x2`` on lanes ``< n
    - 2L``; ``<= 4L``: ``(x2 + x3 on lanes < n - 3L, else x2) + (x0 + x1)`` (the
    implementation's operand order) -- then one tree."""
    add, zero = arith.add, arith.zero
    rows = x.shape[0]

    def row(k: int) -> jax.Array:
        return x[k] if rows > k else jnp.broadcast_to(zero, (lanes,))

    lane = jnp.arange(lanes, dtype=jnp.int32)
    x0, x1, x2, x3 = row(0), row(1), row(2), row(3)
    a01 = add(x0, x1)
    two = jnp.where(lane < n - lanes, a01, x0)
    three = jnp.where(lane < n - 2 * lanes, add(a01, x2), a01)
    four = add(jnp.where(lane < n - 3 * lanes, add(x2, x3), x2), a01)
    v = jnp.where(n <= 2 * lanes, two, jnp.where(n <= 3 * lanes, three, four))
    return numerics.tree_sum(v, add)


def _ceil(a: Any, b: int) -> Any:
    return (a + b - 1) // b


def tmp_need(r: Any, cal_index: Any, dtype: str) -> Any:
    """The page's sharedTmpBuffer size in elements for ``r`` first-round repeats (``r`` may
    be traced): ReduceMax.md 关键特性说明 (ReduceMin.md has the same formula)."""
    s = itemsize(dtype)
    epb, lanes = 32 // s, 256 // s
    if isinstance(r, (np.integer, np.ndarray)) and np.ndim(r) == 0 and \
            np.issubdtype(np.asarray(r).dtype, np.integer):
        r = int(r)              # host values: Python ints (an int32 stand-in would wrap in 2*r;
        #                         a 0-d array too, or reach jnp and wrap there)
    it1 = 2 * r
    start2 = _ceil(it1, epb) * epb
    if cal_index is not True:
        return start2
    it2 = _ceil(it1, lanes) * 2
    end2 = _ceil(it2, epb) * epb
    it3 = _ceil(it2, lanes) * 2
    third = _ceil(it3, epb) * epb
    if isinstance(r, (int, np.integer)):
        return int(start2 + end2 + (third if it2 > 2 else 0))
    return start2 + end2 + jnp.where(it2 > 2, third, 0)


def repeat_range(option: Any = None, dtype: str = "float16") -> tuple:
    """[0, L*L/4]: 4096 for 16-bit types, 1024 for 32-bit types (module docstring)."""
    lanes = 256 // itemsize(dtype or "float16")
    return 0, lanes * lanes // 4


#: the top of repeatTime is the reference's, not the page's: the REPEAT_RANGE message says so
REPEAT_CAP = (lambda spec, p: repeat_range(None, spec.dtype)[1],
              "the reference's top, L*L/4: assumed reduce_l2_max_repeat; the page allows "
              "repeatTime up to INT32_MAX, '保证不超过int32_t的最大值即可'")


def layout(dtype: Any, cal_index: Any) -> registry.Layout:
    """dst[0] = the value (dst[1] = the index bits with cal_index); the slot is dst's
    alignment."""
    s = itemsize(dtype)
    dst = (("value", "value"),) + ((("index", "index"),) if cal_index is True else ())
    # sharedTmpBuffer: per repeat [value, lane] ("在每个repeat迭代中计算得到最大值和repeat内部
    # 索引，这些中间结果暂存于sharedTmpBuffer") -- the roles of its words; their bytes are undefined
    return registry.Layout(registry.fields(*dst, nbytes=s), per_repeat=False,
                           work=registry.fields(("value", "value"), ("lane", "index"), nbytes=s))


#: what an INDEX_OVERFLOW says to do (the data, not an argument, put the winner past 65535)
INDEX_HINT = ("The data put the first extreme past index 65535: call with cal_index=False, on "
              "a 32-bit type, or split the call so that each part's index stays <= 65535")


def _repeats_text(spec: Spec, p: Params) -> str:
    """The repeats a size message counts: ``repeatTime R``, or in counter mode the repeats the
    count makes (the caller's repeatTime is ignored there, and may be any int)."""
    if bool(p.mask_counter):
        count = int(p.mask[0]) | int(p.mask[1]) << 32
        return (f"ceil({count} / {spec.lanes}) = {int(p.repeat)} repeats (counter mode: "
                f"repeatTime is ignored)")
    return f"repeatTime {int(p.repeat)}"


def _rules(spec: Spec) -> List[Rule]:
    index = spec.option == "index"
    out = [Rule(Code.WORK_SIZE, "work_tensor.size",
                lambda p: (p.tensor("work_tensor").size >= tmp_need(p.repeat, index, spec.dtype))
                | TMP.holds(p, "unused"),
                lambda p: int(p.tensor("work_tensor").size),
                lambda p: f">= {int(tmp_need(p.repeat, index, spec.dtype))} elements for "
                          f"{_repeats_text(spec, p)}" + (" (calIndex)" if index else "")
                          + " (sharedTmpBuffer, the page's formula)")]
    if index and spec.size == 2:
        out.append(Rule(Code.INDEX_OVERFLOW, "src_rep_stride",
                        lambda p: p.diagnostics.values["index"] <= INDEX_LIMIT,
                        lambda p: int(p.src_rep_stride),
                        lambda p: f"a call whose result index fits in 16 bits (the winning "
                                  f"element's offset is {int(p.diagnostics.values['index'])} > {INDEX_LIMIT})",
                        hint=INDEX_HINT))
    return out


def _effects(kind: str) -> EffectsFn:
    def effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                arith: numerics.Exact) -> Effects:
        s = spec.size
        value_r, lane_r, live = arith.extreme(bits, active, kind)       # per repeat
        value, _, _ = arith.extreme(value_r, live, kind)                # the extreme
        # repeats whose extreme is as good as the winner: the pair [value_r, value] picks
        # its first entry exactly then (ties go to the lower position)
        pair = jnp.stack([value_r, jnp.broadcast_to(value, value_r.shape)], axis=-1)
        _, which, _ = arith.extreme(pair, jnp.ones(pair.shape, bool), kind)
        # the index: the element offset from src; in counter mode on a "position" product
        # the position r*L + lane among the counted elements (COUNTER_INDEX)
        step = jnp.where(jnp.asarray(p.mask_counter, bool) & _has(p, COUNTER_INDEX, "position"),
                         spec.lanes, p.src_rep_stride * (32 // s))
        index_r = jnp.arange(spec.rows, dtype=jnp.int32) * step + lane_r
        big = jnp.int32(2**31 - 1)
        cand = jnp.where(live & (which == 0), index_r, big)
        best = jnp.argmin(cand)                                         # smallest index
        value = arith.nan_result(value_r[best])
        index = index_r[best]
        words = [value] + ([arith.word(index)] if spec.option == "index" else [])
        runs = ~(masks.is_zero(p.mask_count, p.mask) | (p.repeat == 0)) & ~_counter_undefined(p)
        return _result(spec, p, words, TMP.holds(p, "used"),
                       {"index": jnp.where(runs, index, 0)})

    return effects


def sum_tmp_need(r: Any, option: Any = None, dtype: str = "float16") -> Any:
    """ReduceSum.md 关键特性说明, 方式二 (every product's high-dimensional form):
    ``ceil(firstMaxRepeat / epb) * epb`` elements, ``firstMaxRepeat = repeatTime``."""
    epb = 32 // itemsize(dtype)
    return _ceil(r, epb) * epb


def sum_layout(dtype: Any, option: Any = None) -> registry.Layout:
    """dst[0] = the sum; sharedTmpBuffer: one repeat sum per repeat (roles only: undefined)."""
    word = registry.fields(("sum", "value"), nbytes=itemsize(dtype))
    return registry.Layout(word, per_repeat=False, work=word)


def _merge_call(spec: Spec, p: Params) -> jax.Array:
    """A counter-mode ReduceSum on 950's 方式三 range (the buffer is not used there)."""
    n = masks.counter_count(p.mask, spec.lanes * spec.r_max)
    return jnp.asarray(p.mask_counter, bool) & merged(spec, p, n, SUM_COUNTER, "merge")


def _sum_rules(spec: Spec) -> List[Rule]:
    return [Rule(Code.WORK_SIZE, "work_tensor.size",
                 lambda p: (p.tensor("work_tensor").size
                            >= sum_tmp_need(p.repeat, None, spec.dtype)) | _merge_call(spec, p),
                 lambda p: int(p.tensor("work_tensor").size),
                 lambda p: f">= {int(sum_tmp_need(p.repeat, None, spec.dtype))} elements for "
                           f"{_repeats_text(spec, p)} (sharedTmpBuffer, 方式二)")]


def _sum_effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
                 arith: numerics.Exact) -> Effects:
    """方式二: a tree inside each repeat (masked lanes +0), the repeat sums tree-summed in
    chunks of L (zero-padded), the chunk sums tree-summed again when R > L; one repeat: its
    own sum (assumption ``reduce_sum_tree_chunking``). On the summation of the path
    (``arith.sums``: the fast tree with its guard, the exact adder where it fails)."""
    live = jnp.arange(spec.rows) < p.repeat
    # counter mode (the repeats and their lanes are the engine's: ceil(n / L), the last
    # partial): 方式二 as above, but 方式三 on 950 for L <= n <= 4L (no buffer used there)
    counter = jnp.asarray(p.mask_counter, bool)
    n = jnp.sum(jnp.asarray(active, jnp.int32))
    merge = counter & merged(spec, p, n, SUM_COUNTER, "merge")

    def compute(s: Summation) -> Tuple[jax.Array]:   # in the summation's domain (fast / exact)
        add, zero = s.add, s.zero
        stage1 = numerics.row_tree(s, bits, active)
        chunks = numerics.padded_tree_sum(jnp.where(live, stage1, zero), spec.lanes, add, zero)
        many = numerics.padded_tree_sum(chunks, spec.lanes, add, zero)[0]
        total = jnp.where(p.repeat > spec.lanes, many,
                          jnp.where(p.repeat == 1, stage1[0], chunks[0]))
        if spec.rows > 1:
            total = jnp.where(merge, merge_sum(s.enter(bits, active), n, spec.lanes, s), total)
        return (total,)

    (total,), ok = arith.sums(compute)
    return _result(spec, p, [total], ~merge, {"exact_ok": ok})


def _result(spec: Spec, p: Params, words: List[jax.Array], used: jax.Array,
            diag: Dict[str, jax.Array]) -> Effects:
    """The dst words, and sharedTmpBuffer undefined (where ``used``) but for them."""
    s = spec.size
    runs, undefined = gate(spec, p)
    _, tmp_gated = gate(spec, p, "work_tensor")
    n = len(words)
    addr = p.tensor("dst").addr + jnp.arange(n, dtype=jnp.int32) * s
    # counter mode where the product's result is not the documented rule (COUNTER): nothing
    # defined is written, the whole declared dst is undefined (the buffer, where used, too)
    odd = runs & _counter_undefined(p)
    valid = jnp.broadcast_to(runs & ~odd, (n,))
    write = Write("dst", addr, jnp.stack(words), s, valid, valid)
    t0 = p.tensor("work_tensor").addr
    t1 = t0 + p.tensor("work_tensor").size * s
    d0, d1 = p.tensor("dst").addr, p.tensor("dst").addr + n * s
    head_end = jnp.minimum(t1, d0)
    tail = jnp.maximum(t0, d1)
    undefined += [Region(t0, head_end - t0, runs & used), Region(tail, t1 - tail, runs & used)]
    undefined += [Region(r.start, r.nbytes, r.when & used) for r in tmp_gated]
    undefined.append(Region(d0, p.tensor("dst").size * s, odd))
    return Effects([write], undefined, diag)


def _kernel(name: str, kind: str) -> Kernel:
    sums = kind == "sum"
    lay = sum_layout if sums else layout
    return Kernel(
        api=name, operands=("dst", "src", "work_tensor"), repeat_param="repeat_time",
        repeat_range=lambda spec: repeat_range(None, spec.dtype),
        strides=("src_rep_stride",),
        align=lambda spec: {"dst": lay(spec.dtype, spec.option == "index").slot_bytes,
                            "src": 32, "work_tensor": 32},
        effects=_sum_effects if sums else _effects(kind), overlap="repeat",
        word_order="ascendc", blk_stride=False, saturating=sums,
        mask_modes=("count", "bits", "counter"),
        extra_rules=_sum_rules if sums else _rules, sized_by_rule=("work_tensor",),
        repeat_cap=REPEAT_CAP, spr=None if sums else sprs.level2_sets(kind))


def _declare(name: str, kind: str, summary: str) -> registry.Instruction:
    return registry.register(registry.Instruction(
        name=name, family="ascendc", kernel=_kernel(name, kind), signature=SIGNATURE,
        params=PARAMS, kind=lambda o: kind, layout=layout, repeat_range=repeat_range,
        option=registry.CAL_INDEX, work_need=tmp_need,
        assumptions={"reduce_l2_max_repeat": Code.REPEAT_RANGE},
        codes=(Code.WORK_SIZE, Code.INDEX_OVERFLOW),
        profile_fields=(TMP,) + sprs.MAXMIN_FIELDS + (COUNTER_MODE, COUNTER, COUNTER_INDEX),
        arg_names={"work_tensor": "shared_tmp_buffer"}, summary=summary))


_SUM = registry.register(registry.Instruction(
    name="reduce_sum", family="ascendc", kernel=_kernel("reduce_sum", "sum"),
    signature=SIGNATURE[:-1], params=PARAMS, kind=lambda o: "sum", layout=sum_layout,
    repeat_range=repeat_range, work_need=sum_tmp_need,
    assumptions={"reduce_l2_max_repeat": Code.REPEAT_RANGE}, codes=(Code.WORK_SIZE,),
    profile_fields=sprs.SUM_FIELDS + (COUNTER_MODE, COUNTER, SUM_COUNTER),
    arg_names={"work_tensor": "shared_tmp_buffer"},
    summary="ReduceSum (level 2, high-dimensional form)"))
_MAX = _declare("reduce_max", "max", "ReduceMax (level 2, high-dimensional form)")
_MIN = _declare("reduce_min", "min", "ReduceMin (level 2, high-dimensional form)")
