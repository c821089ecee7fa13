"""What every Ascend C reduction shares: per-repeat result slots at ``dst + r*dstRepStride*slot``.

A reduction produces, for each repeat, a *slot* of whole words of the element size ``s``
(VALUE_INDEX: ``[value, index]``; ReduceDataBlock: 8 block results; ...). The slot size is
also the unit of ``dst_rep_stride`` and the alignment of ``dst`` (SPEC §4 tables).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Union

import jax.numpy as jnp

from .. import addressing, mask as masks, registry
from ..argtypes import IntLike
from ..engine import Instruction, Region, Spec, Write, no_pair_src, option_value
from ..params import Params

if TYPE_CHECKING:
    import jax

MAX_REPEAT = 255
#: Every Ascend C reduction's numeric parameters (Case keys), and its public signature
PARAMS = ("repeat", "dst_rep_stride", "src_blk_stride", "src_rep_stride")
SIGNATURE = ("dst", "src", "mask") + PARAMS


#: SetMaskCount.md 产品支持情况: the counter mask mode per product (every per-repeat Ascend C
#: reduction documents ``isSetMask``, the way its mask argument or SetVectorMask carries the
#: count; docs/SEMANTICS.md §Q)
COUNTER_MODE = registry.ProfileField(
    masks.COUNTER_FACT, ("supported", "unsupported"),
    "counter mask mode (SetMaskCount, ar.CounterMask): available on the product or MASK_MODE")
#: counter mode with dstRepStride = 0: every repeat writes the same slot, the last one wins
#: (as in normal mode), or the dst is undefined -- Ascend 950's software emulation
#: (掩码/概述.md: "软仿实现 ... 存在一定差异", no detail) moves the source by the ignored
#: repeatTime in that case (dav_3510 ReduceTemplate / PairReduceTemplate)
COUNTER_DST_STRIDE_ZERO = registry.ProfileField(
    "counter_dst_stride_zero", ("last_wins", "undefined"),
    "counter mode with dst_rep_stride 0: the last repeat's slot wins, or dst is undefined")
COUNTER_FIELDS = (COUNTER_MODE, COUNTER_DST_STRIDE_ZERO)


def counter_undefined(spec: Spec, p: Params) -> list:
    """The undefined dst of a counter-mode call with ``dst_rep_stride`` 0 on a product whose
    ``counter_dst_stride_zero`` is ``"undefined"`` (the whole declared dst extent)."""
    dst = p.tensor("dst")
    when = jnp.asarray(p.mask_counter) & (p.dst_rep_stride == 0) & \
        COUNTER_DST_STRIDE_ZERO.holds(p, "undefined")
    return [Region(dst.addr, dst.size * spec.tsize("dst"), when)]


def slot_write(spec: Spec, p: Params, words: jax.Array, runs: jax.Array,
               keep: Optional[jax.Array] = None,
               slot_words: Optional[Union[int, jax.Array]] = None) -> Write:
    """The dst write of per-repeat slots. ``words``: ``(r_max, fields)`` bits; ``keep`` masks
    fields that are not written at all (same shape); ``slot_words``: words per slot when
    fewer than ``fields`` (may be traced: the dst stride unit)."""
    fields = words.shape[-1]
    unit = fields if slot_words is None else slot_words
    size = spec.tsize("dst")          # dst's element width (a 950 int32 sum of int16 lanes: 4)
    addr, issued, final = addressing.write_table(
        p.tensor("dst").addr, p.dst_rep_stride * (unit * size), p.repeat,
        r_max=spec.r_max, fields=fields, size=size)
    issued = issued & runs if keep is None else issued & runs & keep
    final = final & issued
    if keep is not None:
        # dst_rep_stride 0 with fields some repeats skip (counter mode's partial last repeat
        # on a "keep" product): a word survives from the last repeat that writes it
        later = jnp.flip(jnp.cumsum(jnp.flip(issued.astype(jnp.int32), 0), 0), 0) \
            - issued.astype(jnp.int32) > 0
        final = issued & ((p.dst_rep_stride != 0) | ~later)
    rep = jnp.broadcast_to(jnp.arange(spec.r_max, dtype=jnp.int32)[:, None], addr.shape)
    return Write("dst", addr, words, size, issued, final, rep)


def repeat_range(option: Any = None, dtype: str = "") -> Tuple[int, int]:
    """[0, 255] for every Ascend C reduction (0: a NOP or an error, by product)."""
    return 0, MAX_REPEAT


def instruction(api: str, effects: Callable, layout: Callable[[str, Any], registry.Layout], *,
                saturating: bool = False, traced_options: Tuple[str, ...] = (),
                mask_modes: Tuple[str, ...] = ("count", "bits", "counter"),
                spr: Any = None,
                pair_src: Callable[[str, str], bool] = no_pair_src
                ) -> Instruction:
    """An Ascend C reduction over ``(dst, src)`` with the shared parameter set and rules;
    dst's alignment is its slot (``layout``). ``traced_options``: option values that travel
    as data (``p.option``, :func:`ascend_ref.engine.option_value`): one kernel for all.
    ``spr``: the call's declared effect on a reduce special register
    (:class:`ascend_ref.spr.Sets`). ``pair_src``: :attr:`Instruction.pair_src`."""
    def dst_align(spec: Spec) -> Union[int, Callable[[Params], Any]]:
        if not traced_options:
            return layout(spec.dtype, spec.option).slot_bytes
        sizes = [layout(spec.dtype, o).slot_bytes for o in traced_options]
        return lambda p: option_value(p, sizes)

    return Instruction(
        api=api, operands=("dst", "src"), repeat_param="repeat_time",
        repeat_range=lambda spec: repeat_range(),
        strides=("dst_rep_stride", "src_blk_stride", "src_rep_stride"),
        align=lambda spec: {"src": 32, "dst": dst_align(spec)},
        effects=effects, saturating=saturating, traced_options=tuple(traced_options),
        dst_align_slot=True, mask_modes=tuple(mask_modes), spr=spr, pair_src=pair_src)


def declare(kernel: Instruction, *, kind: Callable[[Any], str],
            layout: Callable[[str, Any], registry.Layout],
            option: Optional[registry.Option] = None, checks: tuple = (),
            aliases: tuple = (), profile_rules: tuple = (), codes: tuple = (),
            signature: Tuple[str, ...] = SIGNATURE,
            profile_fields: Tuple[registry.ProfileField, ...] = (),
            ignored: Optional[dict] = None, summary: str = "") -> registry.Instruction:
    """Register an Ascend C reduction: by default the signature ``(ub, dst, src, mask,
    repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride[, option])`` (an API whose
    documented order differs, e.g. repeat before mask, passes its own ``signature``)."""
    pos = (option.key,) if option is not None and option.positional else ()
    return registry.register(registry.Instruction(
        name=kernel.api, family="ascendc", kernel=kernel, signature=tuple(signature) + pos,
        params=PARAMS, kind=kind, layout=layout, repeat_range=repeat_range, option=option,
        checks=checks, aliases=aliases,
        profile_rules=tuple(profile_rules) + tuple(f.name for f in profile_fields)
        + tuple(f.name for f in COUNTER_FIELDS),
        profile_fields=tuple(profile_fields) + COUNTER_FIELDS, ignored=dict(ignored or {}),
        codes=tuple(codes) + ((option.code,) if isinstance(option, registry.EnumOption) else ()),
        summary=summary))


def params(repeat_time: IntLike, dst_rep_stride: IntLike, src_blk_stride: IntLike,
           src_rep_stride: IntLike) -> Dict[str, IntLike]:
    return {"repeat": repeat_time, "dst_rep_stride": dst_rep_stride,
            "src_blk_stride": src_blk_stride, "src_rep_stride": src_rep_stride}
