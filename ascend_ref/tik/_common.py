"""What the TIK reductions share (SPEC §5): operands, ranges, alignment, disjoint tensors.

TIK reductions have no block stride (lane i of repeat r is at ``src + r*src_rep_stride*32 +
i*s``), a bit mask written ``[mask_h, mask_l]``, src / dst / work_tensor that may not overlap
at all, and a ``work_tensor`` whose first entries hold the per-repeat (stage-1) results.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Union

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .. import addressing, registry
from ..argtypes import IntLike
from ..constraints import Code
from ..engine import Instruction, Spec, Write
from ..params import Params

MAX_REPEAT = 4095
#: Every TIK reduction's numeric parameters (Case keys), and its public signature
PARAMS = ("repeat", "src_rep_stride")
SIGNATURE = ("mask", "dst", "src", "work_tensor") + PARAMS
#: what a device reports where a profile assumption of every TIK reduction fires
ASSUMPTIONS: Mapping[str, Code] = {"tik_align": Code.ALIGN}
#: TIK's general constraint for vector operands in the UB (the "通用约束" page the API pages
#: refer to). Used for an operand whose own API page states no alignment: profile assumption
#: ``tik_align`` (docs/SEMANTICS.md §F).
GENERAL_ALIGN = 32


def instruction(api: str, effects: Callable, repeat_range: Callable[[Spec], tuple],
                extra_rules: Callable[[Spec], list], *, align: dict,
                disjoint: tuple, saturating: bool = False) -> Instruction:
    """A TIK reduction. ``align``: byte alignment of each operand (from the API's own page,
    else :data:`GENERAL_ALIGN`); ``disjoint``: the operand pairs whose declared extents the
    API's page forbids to overlap."""
    return Instruction(
        api=api, operands=("dst", "src", "work_tensor"), repeat_param="repeat_times",
        repeat_range=repeat_range, strides=("src_rep_stride",),
        align=lambda spec: dict(align),
        effects=effects, overlap="disjoint", word_order="tik", blk_stride=False,
        saturating=saturating, extra_rules=extra_rules, disjoint_pairs=tuple(disjoint),
        sized_by_rule=("work_tensor",))      # WORK_SIZE covers every stage-1 write


def declare(kernel: Instruction, *, kind: Callable[[Any], str],
            layout: Callable[[str, Any], registry.Layout],
            repeat_range: Callable[[Any, str], tuple],
            work_need: Callable[[int, Any, str], int],
            option: Optional[registry.Option] = None,
            assumptions: Optional[Mapping[str, Code]] = None,
            profile_rules: tuple = (), codes: tuple = (),
            summary: str = "") -> registry.Instruction:
    """Register a TIK reduction: the shared signature ``(ub, mask, dst, src, work_tensor,
    repeat_times, src_rep_stride[, option])``."""
    pos = (option.key,) if option is not None and option.positional else ()
    return registry.register(registry.Instruction(
        name=kernel.api, family="tik", kernel=kernel, signature=SIGNATURE + pos, params=PARAMS,
        kind=kind, layout=layout, repeat_range=repeat_range, option=option,
        work_need=work_need, assumptions={**ASSUMPTIONS, **(assumptions or {})},
        profile_rules=profile_rules, codes=(Code.WORK_SIZE,) + tuple(codes), summary=summary))


def element_write(tensor: str, spec: Spec, p: Params, words: jax.Array,
                  valid: ArrayLike) -> Write:
    """Write ``words`` (shape (n,)) to elements 0..n-1 of ``tensor`` where ``valid``."""
    n = words.shape[0]
    addr = p.tensor(tensor).addr + jnp.arange(n, dtype=jnp.int32) * spec.size
    valid = jnp.broadcast_to(valid, (n,))
    return Write(tensor, addr, words, spec.size, valid, valid)


def stage1_write(spec: Spec, p: Params, words: jax.Array, runs: ArrayLike = True) -> Write:
    """Stage-1 results: repeat r's ``k`` words at ``work_tensor[k*r : k*r + k]`` (none when
    ``runs`` is False: a mask-0 NOP, SEMANTICS §C)."""
    k = words.shape[-1]
    addr, issued, _ = addressing.write_table(p.tensor("work_tensor").addr, k * spec.size, p.repeat,
                                             r_max=spec.r_max, fields=k, size=spec.size)
    issued = issued & runs
    return Write("work_tensor", addr, words, spec.size, issued, issued)


def params(repeat_times: IntLike, src_rep_stride: IntLike) -> Dict[str, IntLike]:
    return {"repeat": repeat_times, "src_rep_stride": src_rep_stride}


def ceil_div(a: Union[int, jax.Array], b: int) -> Union[int, jax.Array]:
    return (a + b - 1) // b
