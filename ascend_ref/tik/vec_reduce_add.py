"""TIK vec_reduce_add (float16, float32) — seed 003, SPEC §5.2, CANN 7.0–8.5 TIK pages.

Stage 1: each repeat's pairwise-tree sum over all L lanes (masked lanes +0). The order in
which the repeat results are combined is the profile's ``add_order``:

* ``"tree"`` (seed 003): stage-1 sums in chunks of L (zero-padded), each tree-summed; with
  more than one chunk the chunk sums are tree-summed again;
* ``"group255"`` (Atlas A2 page): in order, 255 repeat results at a time, then the group
  sums pairwise;
* ``"odd_even"`` (Atlas 200I/500 A2 page): element-wise, even and odd repeats in two
  accumulators, the leftover repeat, then a tree over the L lanes.

``dst[0]`` = the result. Every add is rounded to the type; half saturates if ``saturate``.
work_tensor needs ``repeat_times`` elements. After the call (``"tree"``) the reference holds
the stage-1 sums in ``work_tensor[0:R]``; ``work_tensor[0]`` is undefined (seed 003's
example shows the stage-1 sum, Huawei's TIK code leaves the final sum there or, for R = 1,
does not touch it), and so is everything from R on — all of it when R > L. With another
order the whole work_tensor is undefined.

Example (seed 003, example 2): mask 34, 6 repeats 3 blocks apart over rows of 1, 2, 3.

>>> import numpy as np, ascend_ref as ar
>>> x = np.repeat(np.array([1, 2, 3], np.float16), 128)
>>> ub = ar.store(ar.new_ub("atlas_training"), 0, x)
>>> dst, src, work = ar.Tensor(768, "half", 64), ar.Tensor(0, "half", 384), ar.Tensor(896, "half", 64)
>>> ub = ar.tik.vec_reduce_add(ub, 34, dst, src, work, 6, 3, chip="atlas_training")
>>> ar.load(ub, 896, "float16", 6).tolist(), float(ar.load(ub, 768, "float16", 1)[0])
([34.0, 34.0, 36.0, 68.0, 68.0, 86.0], 326.0)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from typing import Any, List, Optional, Tuple

from ..argtypes import CallResult, ChipLike, IntLike, MaskLike, SaturateLike, UBLike
from .. import numerics, registry
from ..constraints import Code, Rule
from ..engine import Effects, Product, Region, Spec, gate
from ..params import Params
from ..spr import ReduceSpr
from ..ub import Tensor, itemsize
from ._common import (GENERAL_ALIGN, MAX_REPEAT, declare, element_write, instruction, params,
                      stage1_write)


GROUP = 255          # Atlas A2 page: repeat results accumulated in order, 255 at a time


def _sequential(x: jax.Array, live: jax.Array, add: numerics.Add2) -> jax.Array:
    """``((x0 + x1) + x2) + …`` over axis 0, taking only the ``live`` entries (the first
    entry is the start value itself, so a lone ``-0`` stays ``-0``)."""
    def step(acc: jax.Array, xs: Tuple[jax.Array, jax.Array]) -> Tuple[jax.Array, None]:
        v, ok = xs
        return jnp.where(ok, add(acc, v), acc), None
    out, _ = lax.scan(step, x[0], (x[1:], live[1:]))
    return out


def _tree_order(spec: Spec, p: Params, stage1: jax.Array, add: numerics.Add2,
                zero: jax.Array) -> jax.Array:
    """Seed 003 (every product without a documented variant): stage-1 sums tree-summed in
    chunks of L (zero-padded), the chunk sums tree-summed again when R > L."""
    live = jnp.arange(spec.r_max) < p.repeat
    chunks = numerics.padded_tree_sum(jnp.where(live, stage1, zero), spec.lanes, add, zero)
    many = p.repeat > spec.lanes
    return jnp.where(many, numerics.padded_tree_sum(chunks, spec.lanes, add, zero)[0], chunks[0])


def _group255_order(spec: Spec, p: Params, stage1: jax.Array, add: numerics.Add2,
                    zero: jax.Array) -> jax.Array:
    """Atlas A2 page: each group of 255 consecutive repeat results summed in order
    ``((r0 + r1) + r2) + …``; with more than one group the group sums are added pairwise (a
    tree over the group sums, zero-padded to L lanes: assumption ``add_order_group_combine``)."""
    n = -(-spec.r_max // GROUP) * GROUP
    live = jnp.arange(n) < p.repeat
    x = jnp.concatenate([stage1, jnp.zeros((n - spec.r_max,), stage1.dtype)]) \
        if n > spec.r_max else stage1
    g = n // GROUP
    sums = _sequential(x.reshape(g, GROUP).T, live.reshape(g, GROUP).T, add)   # (g,)
    combined = numerics.padded_tree_sum(sums, spec.lanes, add, zero)[0] if g > 1 else sums[0]
    return jnp.where(p.repeat > GROUP, combined, sums[0])


def _odd_even_order(spec: Spec, p: Params, vectors: jax.Array, add: numerics.Add2,
                    zero: jax.Array) -> jax.Array:
    """Atlas 200I/500 A2 page: repeats taken in pairs; A = r0 + r2 + r4 + … and B = r1 + r3 +
    … element-wise in order (one accumulator per lane), C = the last repeat when R is odd;
    D = (A + B) + C; the result is the pairwise tree over D's L lanes (assumption
    ``add_order_odd_even``: a pair is two consecutive repeats, the odd repeat left over is C)."""
    r = p.repeat
    pairs = spec.r_max // 2
    if pairs:
        ev = vectors[0:2 * pairs:2]
        od = vectors[1:2 * pairs:2]
        live = jnp.arange(pairs) < r // 2
        a = _sequential(ev, live, add)
        b = _sequential(od, live, add)
        ab = add(a, b)
    else:
        ab = vectors[0]
    last = vectors[jnp.clip(r - 1, 0, spec.r_max - 1)]
    odd = (r % 2) == 1
    d = jnp.where(r >= 2, jnp.where(odd, add(ab, last), ab), last)
    return numerics.tree_sum(d, add)


def _effects(spec: Spec, p: Params, bits: jax.Array, active: jax.Array,
             arith: numerics.Exact) -> Effects:
    chip = Product(p)        # the order is data: every one a traced profile may take is computed
    tree = chip.add_order_is("tree")

    def compute(s: numerics.Summation
                ) -> Tuple[jax.Array, jax.Array]:    # in the summation's domain (fast / exact)
        add, zero = s.add, s.zero
        stage1 = numerics.row_tree(s, bits, active)          # masked lanes +0
        total = chip.add_order_choose((
            ("tree", lambda: _tree_order(spec, p, stage1, add, zero)),
            ("group255", lambda: _group255_order(spec, p, stage1, add, zero)),
            ("odd_even", lambda: _odd_even_order(spec, p, s.enter(bits, active), add, zero))))
        return stage1, total

    (stage1, total), ok = arith.sums(compute)
    work, size = p.tensor("work_tensor").addr, p.tensor("work_tensor").size * spec.size
    runs, gated = gate(spec, p)                      # mask 0: a NOP where allowed (§C)
    # "tree": work_tensor after the call (issue 12 finding 6): seed 003 shows the stage-1
    # sums there; Huawei's TIK code leaves work untouched for R = 1 and runs the later stages
    # in place (work[0] = the final sum for 2 <= R <= L; chunk sums in front for R > L).
    # Where the two disagree the bytes are undefined: work[0] always, all of it if R > L.
    many = p.repeat > spec.lanes
    kept = jnp.where(many, 0, p.repeat * spec.size)
    writes = [stage1_write(spec, p, stage1[:, None], runs & tree)]
    undefined = [Region(work + kept, size - kept, runs & tree),
                 Region(work, jnp.minimum(size, spec.size), runs & tree),
                 # the other orders' pages document the order only: nothing about work_tensor
                 Region(work, size, runs & ~tree)]
    return Effects(writes + [element_write("dst", spec, p, total[None], runs)],
                   undefined + gated, {"exact_ok": ok})


def _rules(spec: Spec) -> List[Rule]:
    return [Rule(Code.WORK_SIZE, "work_tensor.size",
                 lambda p: p.tensor("work_tensor").size >= work_need(p.repeat),
                 lambda p: int(p.tensor("work_tensor").size),
                 lambda p: f">= repeat_times = {int(p.repeat)} elements",
                 doc="work_tensor.size >= repeat_times elements")]


#: seed 003: "操作数地址偏移对齐要求请见通用约束" — every operand by the general rule (32 B)
ALIGN = {"dst": GENERAL_ALIGN, "src": GENERAL_ALIGN, "work_tensor": GENERAL_ALIGN}
#: seed 003: "src、dst和work_tensor三者互相之间不能存在地址重叠" — all three pairs
DISJOINT = (("dst", "src"), ("dst", "work_tensor"), ("src", "work_tensor"))



def layout(dtype: Any, option: Any = None) -> registry.Layout:
    """dst[0] = the sum; work_tensor[r] = repeat r's stage-1 sum."""
    sum_ = registry.fields(("sum", "value"), nbytes=itemsize(dtype))
    return registry.Layout(sum_, per_repeat=False, work=sum_)


def repeat_range(option: Any = None, dtype: str = "") -> tuple:
    return 1, MAX_REPEAT


def work_need(r: Any, option: Any = None, dtype: str = "") -> Any:
    """work_tensor elements: one stage-1 sum per repeat (``r`` may be traced)."""
    return r


_ADD = declare(instruction("vec_reduce_add", _effects, lambda spec: repeat_range(), _rules,
                           align=ALIGN, disjoint=DISJOINT, saturating=True),
               kind=lambda o: "sum", layout=layout, repeat_range=repeat_range,
               work_need=work_need, profile_rules=("add_order",), summary="TIK vec_reduce_add")


def vec_reduce_add(ub: UBLike, mask: MaskLike, dst: Tensor, src: Tensor, work_tensor: Tensor,
                   repeat_times: IntLike, src_rep_stride: IntLike, *, chip: ChipLike,
                   saturate: SaturateLike = None, return_info: bool = False,
                   spr: Optional[ReduceSpr] = None
                   ) -> CallResult:
    """TIK vec_reduce_add: the tree sum of every active lane of every repeat into ``dst[0]``.

    ``saturate`` (half only) defaults to the product profile's ``saturate_default``.
    """
    return _ADD.run(ub, {"dst": dst, "src": src, "work_tensor": work_tensor}, mask,
                    params(repeat_times, src_rep_stride), chip=chip, saturate=saturate,
                    return_info=return_info, spr=spr)
