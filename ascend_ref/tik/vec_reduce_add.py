"""TIK vec_reduce_add (float16, float32) — seed 003, SPEC §5.2.

Stage 1: each repeat's pairwise-tree sum over all L lanes (masked lanes +0) →
``work_tensor[r]``. Stage 2: the stage-1 sums, in chunks of L (zero-padded), each
tree-summed; with more than one chunk, stage 3 tree-sums the chunk sums. ``dst[0]`` = the
result. Every add is rounded to the type; half saturates if ``saturate``. work_tensor needs
``repeat_times`` elements; after the call ``work_tensor[0:R]`` holds the stage-1 sums when
R ≤ L, the rest (all of it when R > L) is undefined.

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

import jax.numpy as jnp

from .. import numerics
from ..constraints import Code, Rule
from ..engine import Effects, Region, call
from ._common import MAX_REPEAT, element_write, instruction, params, stage1_write


def _effects(spec, p, bits, active):
    add = numerics.adder(spec.dtype, spec.chip, p["saturate"])
    zero = jnp.zeros((), bits.dtype)
    stage1 = numerics.tree_sum(jnp.where(active, bits, zero), add)
    live = jnp.arange(spec.r_max) < p["repeat"]
    chunks = numerics.padded_tree_sum(jnp.where(live, stage1, zero), spec.lanes, add, zero)
    many = p["repeat"] > spec.lanes
    total = jnp.where(many, numerics.padded_tree_sum(chunks, spec.lanes, add, zero)[0], chunks[0])
    work, size = p["work_tensor.addr"], p["work_tensor.size"] * spec.size
    kept = jnp.where(many, 0, p["repeat"] * spec.size)
    return Effects(
        [stage1_write(spec, p, stage1[:, None]),
         element_write("dst", spec, p, total[None], jnp.bool_(True))],
        [Region(work + kept, size - kept, jnp.bool_(True))])


def _rules(spec):
    return [Rule(Code.WORK_SIZE, "work_tensor.size",
                 lambda p: p["work_tensor.size"] >= p["repeat"],
                 lambda p: int(p["work_tensor.size"]),
                 lambda p: f">= repeat_times = {int(p['repeat'])} elements")]


_ADD = instruction("vec_reduce_add", _effects, lambda spec: (1, MAX_REPEAT), _rules,
                   saturating=True)


def vec_reduce_add(ub, mask, dst, src, work_tensor, repeat_times, src_rep_stride, *, chip,
                   saturate=None, return_info=False):
    """TIK vec_reduce_add: the tree sum of every active lane of every repeat into ``dst[0]``.

    ``saturate`` (half only) defaults to the product profile's ``saturate_default``.
    """
    return call(_ADD, ub, {"dst": dst, "src": src, "work_tensor": work_tensor}, mask,
                params(repeat_times, src_rep_stride), chip=chip, saturate=saturate,
                return_info=return_info)
