"""Coverage model of a campaign: bins over the parameter space, what a campaign can reach,
and the table printed at the end of a run.

Each case falls into one value of every *bin group* (:func:`case_bins`); the model
(:func:`model`) lists, per group, the values the campaign's APIs, products, dtypes and
distributions can reach, so the table says what was hit and what was missed.

The groups that matter are combinations, not marginals: ``combination`` is (API, product
behaviour group, dtype, option, mask mode) hit by a *valid* case; ``api x rule`` is (API,
documented rule an illegal case breaks); ``api x repeat`` is (API, repeat class). A
campaign's covering pool (:func:`~ascend_ref.fuzz.generate.build_pool`,
:func:`~ascend_ref.fuzz.generate.cover_plan`) reaches every one of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Union

from .. import registry
from ..case import Case
from .generate import (MASK_BITS_KINDS, MASK_COUNT_KINDS, MASK_COUNTER_KINDS, MASK_MODES,
                       REPEAT_CLASSES,
                       STRIDE_REGIMES, _TABLE_VALUES, breakable_rules)

if TYPE_CHECKING:
    from ..case import Outcome
    from ..chips import ChipProfile
    from .campaign import Campaign
    from .generate import Template

#: bin groups, in table order
GROUPS = ["api", "product", "api x product", "combination", "api x rule", "api x repeat",
          "mask", "repeat", "src stride", "blk stride", "dst stride", "layout", "data",
          "saturate", "spr set", "spr read", "validity", "outcome"]

#: the getter that reads each reduce special register, and the profile field saying whether
#: the product has it (:mod:`ascend_ref.spr`)
_GETTER = {"sum": ("get_reduce_repeat_sum_spr", "spr_sum"),
           "max_min": ("get_reduce_repeat_max_min_spr", "spr_maxmin")}
_SPR_TYPES = ("float16", "float32")


def _has_getter(chip: Union[str, ChipProfile], register: str) -> bool:
    from .. import spr as sprs
    from ..chips import chip as get_chip

    return sprs._fact(get_chip(chip), _GETTER[register][1]) != "unsupported"


def spr_bins(case: Case, expected: Outcome) -> dict:
    """The reduce special register bins of one case: ``spr set`` = ``api/register`` for a
    setter that ran (half / float) on a product with the register's getter, its registers
    compared; ``spr read`` = ``getter:defined`` / ``getter:undefined``, what the expected
    side's getter read of that register of the case's type afterwards."""
    from .compare import readings

    ins = case.instruction
    sets = ins.spr
    if sets is None or expected.code is not None or case.dtype not in _SPR_TYPES or \
            not _has_getter(case.chip, sets.register):
        return {}
    r = readings(case, expected)
    if r is None:
        return {}
    got = r.get(f"{sets.register}.{case.dtype}")
    b = {"spr set": f"{case.api}/{sets.register}"}
    if got is not None and (not isinstance(got, str) or got == "SPR_UNDEFINED"):
        b["spr read"] = f"{_GETTER[sets.register][0]}:" + \
            ("undefined" if isinstance(got, str) else "defined")
    return b


def _opt(case_or_t: Union[Case, Template]) -> Optional[str]:
    o = case_or_t.option
    if o is None:
        return None
    return registry.lookup(case_or_t.api).option_label(o)


def case_bins(case: Case, expected_code: str) -> dict:
    """``{group: value}`` for one case (``expected_code``: "ok" or the expected error)."""
    t = case.tags
    a = case.api
    validity = t.get("validity", "valid")
    b = {"api": a, "product": case.chip, "api x product": f"{a}/{case.chip}",
         "mask": t.get("mask", "?"),
         "repeat": t.get("repeat_class", "?"), "api x repeat": f"{a}/{t.get('repeat_class')}",
         "src stride": t.get("stride_regime", "?"), "layout": t.get("layout", "?"),
         "data": t.get("data", "?"), "validity": t.get("validity", "valid"),
         "outcome": expected_code}
    if validity == "valid" and "combo" in t:
        b["combination"] = t["combo"]
    elif validity != "valid":
        b["api x rule"] = f"{a}/{validity}"
    ins = case.instruction
    if ins.has_blk_stride:
        b["blk stride"] = t.get("blk_stride", "?")
    if "dst_rep_stride" in ins.params:
        b["dst stride"] = t.get("dst_stride", "?")
    if "saturate" in t:
        b["saturate"] = t["saturate"]
    return b


def model(camp: Campaign) -> dict:
    """``{group: set of reachable values}`` (no entry: the group is counted, not bounded)."""
    uni = [t for t, _ in camp.universe()]
    dist = camp.dist
    w = dist.weight
    m: Dict[str, set] = {g: set() for g in GROUPS if g != "outcome"}
    for t in uni:
        a = t.api
        m["api"].add(a)
        for c in t.chips:
            m["product"].add(c)
            m["api x product"].add(f"{a}/{c}")
        m["combination"].add(t.combo)
        if dist.invalid_rate > 0:
            m["api x rule"] |= {f"{a}/{r}" for r in breakable_rules(t)
                                if w("invalid", r) > 0}
        kinds = {"count": MASK_COUNT_KINDS, "bits": MASK_BITS_KINDS,
                 "counter": MASK_COUNTER_KINDS}[t.mask_mode]
        # (counter mode per API: the "combination" bins carry the mask mode)
        m["mask"] |= {f"{t.mask_mode}:{k}" for k in kinds if w(f"mask_{t.mask_mode}", k) > 0}
        for k in t.classes:
            if w("repeat", k) > 0:
                m["repeat"].add(k)
                m["api x repeat"].add(f"{a}/{k}")
        ins = registry.lookup(a)
        if ins.has_blk_stride:
            m["blk stride"] |= {_stride_tag(k) for k in _TABLE_VALUES["blk_stride"]
                                if w("blk_stride", k) > 0}
        if "dst_rep_stride" in ins.params:
            m["dst stride"] |= {_stride_tag(k) for k in _TABLE_VALUES["dst_stride"]
                                if w("dst_stride", k) > 0}
        if ins.kernel.overlap == "repeat" and dist.in_place_rate > 0:
            m["layout"].add("in_place")
        if ins.saturating and t.dtype == "float16":
            m["saturate"] |= {k for k in _TABLE_VALUES["saturate"] if w("saturate", k) > 0}
        m["validity"] |= breakable_rules(t) if dist.invalid_rate > 0 else set()
        sets = ins.spr
        if sets is not None and t.dtype in _SPR_TYPES and dist.invalid_rate < 1 and \
                camp.compare.kind == "oracle" and \
                any(_has_getter(c, sets.register) for c in t.chips):
            m["spr set"].add(f"{a}/{sets.register}")
    m["src stride"] = {k for k in STRIDE_REGIMES if w("stride", k) > 0}
    m["layout"] |= {"at_zero", "ub_end"} | ({"offset"} if dist.offset_rate > 0 else set())
    m["data"] = {k for k in _TABLE_VALUES["data"] if w("data", k) > 0}
    m["validity"] = {v for v in m["validity"] if w("invalid", v) > 0}
    if dist.invalid_rate < 1:
        m["validity"].add("valid")
    return {g: v for g, v in m.items() if v}


def _stride_tag(k: str) -> str:
    return {"double": "gapped"}.get(k, k)


def clip(items: list, sep: str, room: "int | None") -> str:
    """``items`` joined by ``sep``, cut only between items to fit ``room`` characters, with
    ``... (+N more)`` for the rest (``room`` None: everything). Never cuts inside a name."""
    text = sep.join(items)
    if room is None or len(text) <= room:
        return text
    out: List[str] = []
    for k, it in enumerate(items):
        more = f"{sep if out else ''}... (+{len(items) - k} more)"
        cand = sep.join(out + [it])
        if len(cand) + len(f"{sep}... (+{len(items) - k - 1} more)") > room and out:
            return sep.join(out) + more
        out.append(it)
    return sep.join(out)


def table(hits: dict, mdl: dict, width: int = 100, detail: bool = False) -> str:
    """The coverage table: per group hit / reachable bins, and the misses (or top values)."""
    lines = [f"{'coverage bin':<16}{'hit / bins':>13}{'':>7}  values (hits) / missing"]
    tot_hit = tot = 0
    for g in GROUPS:
        vals = hits.get(g, {})
        reach = mdl.get(g)
        if not vals and not reach:
            continue
        if reach:
            hit = len([v for v in reach if vals.get(v)])
            tot_hit += hit
            tot += len(reach)
            pct = f"{100.0 * hit / len(reach):5.1f}%"
            missing = sorted(v for v in reach if not vals.get(v))
            head = f"{g:<16}{hit:>6} / {len(reach):<4}{pct:>7}  "
        else:
            missing = []
            head = f"{g:<16}{len(vals):>6}{'':>7}{'':>7}  "
        if missing:
            prefix, items, sep = "MISSING ", list(missing), ", "
        else:
            top = sorted(vals.items(), key=lambda kv: (-kv[1], kv[0]))
            prefix, items, sep = "", [f"{k}({n})" for k, n in top], " "
        room = None if detail else max(10, width - len(head))
        lines.append(head + prefix + clip(items, sep, None if room is None else
                                           room - len(prefix)))
    if tot:
        lines.append(f"{'total':<16}{tot_hit:>6} / {tot:<4}{100.0 * tot_hit / tot:6.1f}%")
    return "\n".join(lines)


__all__ = ["GROUPS", "case_bins", "model", "table", "MASK_MODES", "REPEAT_CLASSES"]
