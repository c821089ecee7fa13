"""Assumption audit: confirm or refute, from device dumps, every profile field marked ``assumed``.

For each verified case whose product lists an assumption, the auditor decides which bytes
of the result the assumption *decides* (the bytes it exercises), and whether the device
agreed with the reference on those bytes. Two techniques:

* **counterfactual** — run the case again with the assumed value changed (``saturate``
  flipped; another default NaN; ``fp32_ftz`` flipped). The bytes where the two reference
  results differ are exactly the bytes the assumption decides. A device that matches the
  counterfactual there "follows the alternative".
* **data inspection** — ``minmax_rules`` (no profile value to flip): the result slots of the
  repeats (blocks, for ReduceDataBlock) whose active lanes contain a NaN, both zeros when the
  extreme is a zero, or a tie that decides an index; ``zero_repeat``: the destination of a
  ``repeat = 0`` call; ``ub_bytes``: cases whose tensors reach into the top part of the UB
  (above the next smaller documented UB size), or that the device ran beyond the assumed UB.

Undocumented behaviour the reference reports as undefined (``block_fill = "undefined"``:
what is written for a DataBlock with no active lane) is *observed*: the auditor tallies what
the device left there, to settle the open question.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import jax.numpy as jnp
import numpy as np

from .. import numerics, registry
from ..assumptions import AUDITED
from ..case import Case, Outcome
from ..chips import chip as get_chip, chips as all_chips
from ..constraints import Code
from .format import DumpCase
from .outcomes import device_outcome, repro_command, run_reference

if TYPE_CHECKING:
    from ..chips import ChipProfile

#: what exercises each assumption (printed in the report and in docs/verify.md): the table
#: lives in :mod:`ascend_ref.assumptions`, where the profile check reads the names too
DESCRIPTIONS = AUDITED


@dataclass
class Row:
    """One (product, assumption) line of the audit."""

    chip: str
    assumption: str
    kind: str = "check"                 # "check" or "observe"
    exercised: int = 0
    agreed: int = 0
    alternative: int = 0                # device matched the counterfactual
    other: int = 0                      # device matched neither
    observed: Counter = field(default_factory=Counter)
    examples: List[Tuple[str, int]] = field(default_factory=list)

    @property
    def disagreed(self) -> int:
        return self.alternative + self.other

    @property
    def verdict(self) -> str:
        if self.exercised == 0:
            return "not exercised"
        if self.kind == "observe":
            return "observed"
        if self.disagreed == 0:
            return "confirmed"
        alt = f", device follows the alternative in {self.alternative}" if self.alternative else ""
        return f"REFUTED ({self.disagreed} of {self.exercised}{alt})"


def _fmt_word(bits: int, dtype: str) -> str:
    if dtype.startswith("float"):
        return numerics.word_text(bits, dtype)
    return f"{bits:#0{2 + 2 * np.dtype(dtype).itemsize}x}"


class Auditor:
    """Accumulates audit rows over verified cases (used by :func:`ascend_ref.verify.verify`)."""

    def __init__(self, max_examples: int = 3) -> None:
        self.rows: Dict[Tuple[str, str], Row] = {}
        self.max_examples = max_examples
        self._seen_chips: Set[str] = set()

    # -- bookkeeping
    def row(self, chip: str, assumption: str, kind: str = "check") -> Row:
        key = (chip, assumption)
        if key not in self.rows:
            self.rows[key] = Row(chip, assumption, kind)
        return self.rows[key]

    def _record(self, row: Row, d: DumpCase, D: np.ndarray, ref: np.ndarray, dev: np.ndarray,
                cf: Optional[np.ndarray] = None) -> None:
        row.exercised += 1
        if np.array_equal(dev[D], ref[D]):
            row.agreed += 1
            return
        if cf is not None and np.array_equal(dev[D], cf[D]):
            row.alternative += 1
        else:
            row.other += 1
        from ..fuzz.signature import _roles

        s = np.dtype(d.case.dtype).itemsize
        bt = f"uint{8 * s}"
        for w in np.unique(np.flatnonzero(D & (dev != ref)) // s)[:64]:
            bits = int(dev[w * s:w * s + s].view(bt)[0])
            if _roles(d.case, int(w) * s) == "index":
                row.observed[f"index {bits}"] += 1
            else:
                row.observed[_fmt_word(bits, d.case.dtype)] += 1
        if len(row.examples) < self.max_examples:
            row.examples.append((d.file, d.index))

    # -- main entry
    def add(self, items: Sequence[Tuple[DumpCase, Outcome, Optional[str]]]) -> None:
        """Audit a chunk of ``(dump_case, reference_outcome, signature)``."""
        pending = []   # (dump_case, ref, dev, valid, assumption, counterfactual case)
        for d, ref, sig in items:
            c = d.case
            prof = get_chip(c.chip)
            self._seen_chips.add(prof.id)
            assumed = set(prof.assumed)
            self._audit_errors(prof, assumed, d, ref)
            if d.error is not None or d.after is None:
                continue
            if ref.code is not None:
                if ref.code == Code.UB_BOUNDS and "ub_bytes" in assumed:
                    row = self.row(prof.id, "ub_bytes")
                    row.exercised += 1
                    row.other += 1
                    row.observed[f"ran with a tensor beyond {prof.ub_bytes} B"] += 1
                    if len(row.examples) < self.max_examples:
                        row.examples.append((d.file, d.index))
                continue
            dev = device_outcome(d, ref).ub
            # the call ran on both sides: both UBs and the reference's masks exist
            assert dev is not None and ref.ub is not None and ref.undefined is not None
            valid = ~ref.undefined
            if d.compared is not None:
                valid &= d.compared
            s = np.dtype(c.dtype).itemsize
            is_float = c.dtype.startswith("float")
            # -- data inspection: these rows read one lane mask for every repeat and the
            # repeat parameter as a repeat count; a counter-mode call ignores it and a
            # level-2 count-form call counts elements (in both the last repeat is partial),
            # so those cases feed only the counterfactual reruns below
            irregular = _is_counter(c) or c.instruction.kernel.count_form
            if "minmax_rules" in assumed and _is_minmax(c) and not irregular:
                for sub, D in _minmax_masks(c, ref.ub.size).items():
                    D &= valid
                    if D.any():
                        self._record(self.row(prof.id, f"minmax_rules ({sub})"), d, D, ref.ub, dev)
            if "zero_repeat" in assumed and not _is_counter(c) and c.params["repeat"] == 0 and \
                    c.instruction.repeat_range(c.option, c.dtype)[0] == 0:
                D = _extent_mask(c, "dst", ref.ub.size) & valid
                if D.any():
                    self._record(self.row(prof.id, "zero_repeat"), d, D, ref.ub, dev)
            if "ub_bytes" in assumed:
                top = _top_threshold(prof)
                end = max(a + n * s for a, n in c.tensors.values())
                if end > top:
                    row = self.row(prof.id, "ub_bytes")
                    row.exercised += 1
                    if sig is None:
                        row.agreed += 1
                    else:
                        row.other += 1
                        row.observed[sig] += 1
                        if len(row.examples) < self.max_examples:
                            row.examples.append((d.file, d.index))
            if irregular:
                pass
            elif prof.block_fill == "undefined" and "block_fill" in c.instruction.profile_rules:
                self._observe_fill(prof.id, d, ref, dev)
            if irregular:
                self._observe_zero(prof, assumed, d, dev)
            else:
                self._audit_choices(prof, assumed, d, ref, dev, valid)
            if d.spr is not None:
                self._audit_spr(prof, assumed, d)
            # -- counterfactuals
            pending += _field_counterfactuals(prof, assumed, d, ref, dev, valid)
            if not (c.instruction.sums(c.option) and is_float):
                continue
            if "saturate_default" in assumed and s == 2 and c.saturate is None:
                alt = copy.copy(c)
                alt.saturate = not prof.saturate_default
                pending.append((d, ref, dev, valid, "saturate_default", alt))
            nan_field = "default_nan_f16" if s == 2 else "default_nan_f32"
            if nan_field in assumed:
                dn = prof.default_nan(c.dtype)
                if dn in _written_words(ref, s):
                    flip = dn ^ (1 << (8 * s - 1))
                    alt = copy.copy(c)
                    field_value: Dict[str, Any] = {nan_field: flip}
                    alt.chip = dataclasses.replace(prof, id=f"{prof.id}~{nan_field}={flip:#x}",
                                                   **field_value)
                    pending.append((d, ref, dev, valid, nan_field, alt))
            if "fp32_ftz" in assumed and s == 4 and _has_subnormal(c, ref):
                alt = copy.copy(c)
                alt.chip = dataclasses.replace(prof, id=f"{prof.id}~fp32_ftz={not prof.fp32_ftz}",
                                               fp32_ftz=not prof.fp32_ftz)
                pending.append((d, ref, dev, valid, "fp32_ftz", alt))
        if pending:
            outs = run_reference([p[-1] for p in pending])
            for (d, ref, dev, valid, name, _), cf in zip(pending, outs):
                if isinstance(cf, Exception) or cf.code is not None:
                    continue
                assert ref.ub is not None
                D = (ref.ub != cf.ub) & valid
                if D.any():
                    self._record(self.row(get_chip(d.case.chip).id, name), d, D, ref.ub, dev,
                                 cf.ub)

    # -- issue 12: the named open choices (docs/SEMANTICS.md §J), by data inspection
    def _check(self, prof: ChipProfile, name: str, d: DumpCase, D: np.ndarray, ref: Outcome,
               dev: np.ndarray) -> None:
        if D.any():
            assert ref.ub is not None
            self._record(self.row(prof.id, name), d, D, ref.ub, dev)

    def _tally(self, row: Row, d: DumpCase, what: str) -> None:
        row.exercised += 1
        row.observed[what] += 1
        if len(row.examples) < self.max_examples:
            row.examples.append((d.file, d.index))

    def _audit_errors(self, prof: ChipProfile, assumed: set, d: DumpCase,
                      ref: Outcome) -> None:
        """Assumptions about documented-or-not errors: the device either rejected the call
        with the same code (agreed) or ran it (refuted)."""
        c = d.case
        ran = d.error is None and d.after is not None
        checks = []
        if "tik_align" in assumed and "tik_align" in c.instruction.assumptions and \
                ref.code == Code.ALIGN:
            checks.append("tik_align")
        if "index_overflow_limit" in assumed and ref.code == Code.INDEX_OVERFLOW:
            checks.append("index_overflow_limit")
        # the other assumptions an instruction declares with the code its assumed rule
        # raises (TIK vc*: tik_vc_dtypes -> DTYPE_UNSUPPORTED): ran = refuted
        checks += [name for name, code in c.instruction.assumptions.items()
                   if name in assumed and name not in ("tik_align", "index_overflow_limit")
                   and ref.code == code]
        for name in checks:
            row = self.row(prof.id, name)
            row.exercised += 1
            if ran:
                assert ref.code is not None          # a check is listed for an error only
                row.other += 1
                row.observed[f"ran (the reference says {ref.code.name})"] += 1
                if len(row.examples) < self.max_examples:
                    row.examples.append((d.file, d.index))
            elif d.error == ref.code:
                row.agreed += 1
            else:
                row.other += 1
                row.observed[f"device error {d.error.name if d.error else '?'}"] += 1
        if ("index_overflow_limit" in assumed and ref.code is None and d.error is not None
                and _tik_indexed(c)
                and (index := _tik_index(c, ref)) is not None and index > 65504):
            row = self.row(prof.id, "index_overflow_limit")
            row.exercised += 1
            row.other += 1
            row.observed[f"device error {d.error.name} for index {index}"] += 1

    def _audit_choices(self, prof: ChipProfile, assumed: set, d: DumpCase, ref: Outcome,
                       dev: np.ndarray, valid: np.ndarray) -> None:
        c = d.case
        assert ref.ub is not None and ref.written is not None     # the call ran
        n = ref.ub.size
        s = np.dtype(c.dtype).itemsize
        R = c.params.get("repeat", 0)
        wrote = ref.written & valid
        ins = c.instruction
        per_repeat = ins.layout(c.dtype, c.option).per_repeat     # Ascend C result slots
        dst = c.tensors["dst"][0]
        if "dst_rep_stride_zero_last_wins" in assumed and per_repeat and R >= 2 \
                and c.params.get("dst_rep_stride") == 0:
            self._check(prof, "dst_rep_stride_zero_last_wins", d,
                        wrote & _extent_mask(c, "dst", n), ref, dev)
        if "overlap_reads_first" in assumed and R >= 1:
            src = _extent_mask(c, "src", n)
            outs = [k for k in c.tensors if k != "src"]
            if any((src & _extent_mask(c, k, n)).any() for k in outs):
                self._check(prof, "overlap_reads_first", d, wrote.copy(), ref, dev)
        if "partial_overlap_in_repeat" in assumed and per_repeat and R >= 1:
            a = c.tensors["src"][0]
            if a <= dst < a + 256:
                self._check(prof, "partial_overlap_in_repeat", d,
                            wrote & _extent_mask(c, "dst", n), ref, dev)
        if "tik_index_formula" in assumed and _tik_indexed(c) \
                and c.params["src_rep_stride"] != 8 and R >= 2:
            D = np.zeros(n, bool)
            D[dst + s:dst + 2 * s] = True
            self._check(prof, "tik_index_formula", d, D & valid, ref, dev)
        if "index_overflow_limit" in assumed and _tik_indexed(c):
            idx = _tik_index(c, ref)
            if idx is not None and idx > 65504:
                D = np.zeros(n, bool)
                D[dst + s:dst + 2 * s] = True
                self._check(prof, "index_overflow_limit", d, D & valid, ref, dev)
        if "add_order" in ins.profile_rules:
            D = np.zeros(n, bool)
            D[dst:dst + s] = True
            D &= valid
            L = 256 // s
            if "add_chunking" in assumed and prof.add_order == "tree" and R > L:
                self._check(prof, "add_chunking", d, D, ref, dev)
            if "add_order_group_combine" in assumed and prof.add_order == "group255" and R > 255:
                self._check(prof, "add_order_group_combine", d, D, ref, dev)
            if "add_order_odd_even" in assumed and prof.add_order == "odd_even" and R >= 2:
                self._check(prof, "add_order_odd_even", d, D, ref, dev)
            if "tik_add_work_contents" in assumed:
                w = c.tensors["work_tensor"][0]
                if d.compared is None or d.compared[w:w + s].all():
                    bt = f"uint{8 * s}"
                    after = int(dev[w:w + s].view(bt)[0])
                    before = int(c.ub[w:w + s].view(bt)[0])
                    what = "kept" if after == before else _fmt_word(after, c.dtype)
                    self._tally(self.row(prof.id, "tik_add_work_contents (undefined)",
                                         "observe"), d, f"R={R}: work[0] {what}")
        if "nan_add_operand" in assumed and ins.sums(c.option) and c.dtype.startswith("float") \
                and R >= 1:
            bits = _src_bits(c)
            _, nan, _, _ = _keys(bits, c.dtype)
            act = nan & _active(c)[None, :]
            if act.sum() >= 2 and len(np.unique(bits[act])) >= 2:
                self._check(prof, "nan_add_operand", d, wrote.copy(), ref, dev)
        if "minmax_nan" in assumed and _is_minmax(c):
            self._check(prof, "minmax_nan", d, _minmax_masks(c, n)["nan"] & valid, ref, dev)
        if "block_fill" in assumed and prof.block_fill == "fill" and \
                "block_fill" in ins.profile_rules and R >= 1:
            lay = ins.layout(c.dtype, c.option)
            empty = ~_active(c).reshape(len(lay.dst), -1).any(axis=1)
            if empty.any():
                D = np.zeros(n, bool)
                drs = c.params["dst_rep_stride"]
                for r in ([R - 1] if drs == 0 else range(R)):
                    for b in np.flatnonzero(empty):
                        a = dst + r * drs * lay.slot_bytes + int(b) * s
                        D[a:a + s] = True
                self._check(prof, "block_fill", d, D & valid, ref, dev)
        self._observe_zero(prof, assumed, d, dev)

    def _observe_zero(self, prof: ChipProfile, assumed: set, d: DumpCase,
                      dev: np.ndarray) -> None:
        """What dst holds after a zero mask (a counter count of 0 included) or repeat 0 (not
        in counter mode, which ignores the repeat parameter) where the product leaves it
        undefined."""
        c = d.case
        s = np.dtype(c.dtype).itemsize
        zero_repeat = not _is_counter(c) and c.params.get("repeat", 0) == 0
        for field_, zero in (("zero_mask", _mask_is_zero(c)), ("zero_repeat", zero_repeat)):
            if field_ in assumed and getattr(prof, field_) == "undefined" and zero:
                a, size = c.tensors["dst"]
                if d.compared is None or d.compared[a:a + size * s].all():
                    same = np.array_equal(dev[a:a + size * s], c.ub[a:a + size * s])
                    self._tally(self.row(prof.id, f"{field_} (undefined)", "observe"), d,
                                "dst kept" if same else "dst changed")

    # -- the reduce special registers (docs/verify.md §1c): counterfactual readings
    def _audit_spr(self, prof: ChipProfile, assumed: set, d: Any) -> None:
        """The assumed ``spr_*`` fields (state_only: no UB byte depends on them), settled by
        the registers the dump recorded: the case rerun with each other choice; the readings
        where the two reference states differ are the ones the field decides. Where the
        reference's choice leaves them undefined (``spr_unwritten``, ``spr_sum_other_type``
        = ``"undefined"``) the row observes: it tallies whether the device read what the
        alternative defines."""
        # d: a DumpCase whose ``spr`` is set (the caller checks it; typed Any: DumpCase.spr
        # is Optional, and mypy cannot see that check here)
        from .registers import compare

        names = [n for n in SPR_FIELDS if n in assumed and n in prof.facts
                 and n in registry.declared_fields()]
        if not names:
            return
        mine = d.spr_verdict if d.spr_verdict is not None else compare(d.case, d.spr)
        if mine is None:
            return
        dev = d.spr.after
        for name in names:
            f = registry.declared_fields()[name]
            here = prof.fact(name)
            for value in f.choices:
                if value == here:
                    continue
                alt = dataclasses.replace(prof, id=f"{prof.id}~{name}={value}",
                                          facts={**prof.facts, name: value})
                other = compare(d.case, d.spr, chip=alt)
                if other is None:
                    continue
                decided = [k for k in mine.reference
                           if mine.reference[k] != other.reference.get(k)
                           and (mine.reference[k][1] or other.reference.get(k, (0, False))[1])]
                if not decided:
                    continue
                if here == "undefined":
                    on = [k for k in decided if other.reference[k][1]]
                    same = all(dev[k] == other.reference[k][0] for k in on)
                    self._tally(self.row(prof.id, name, "observe"), d,
                                f"as {name} = {value!r}" if same else
                                "other: " + ", ".join(f"{k} {dev[k]:#x}" for k in on))
                    continue
                row = self.row(prof.id, name)
                row.exercised += 1
                ref_on = [k for k in decided if mine.reference[k][1]]
                if all(dev[k] == mine.reference[k][0] for k in ref_on):
                    row.agreed += 1
                    continue
                alt_on = [k for k in decided if other.reference[k][1]]
                if alt_on and all(dev[k] == other.reference[k][0] for k in alt_on):
                    row.alternative += 1
                else:
                    row.other += 1
                for k in ref_on:
                    if dev[k] != mine.reference[k][0]:
                        row.observed[f"{k} {dev[k]:#x}"] += 1
                if len(row.examples) < self.max_examples:
                    row.examples.append((d.file, d.index))

    def _observe_fill(self, chip_id: str, d: DumpCase, ref: Outcome, dev: np.ndarray) -> None:
        c = d.case
        s = np.dtype(c.dtype).itemsize
        R = c.params["repeat"]
        empty = ~_active(c).reshape(8, -1).any(axis=1)
        if R == 0 or not empty.any():
            return
        row = self.row(chip_id, "block_fill (undefined)", "observe")
        row.exercised += 1
        dst, drs = c.tensors["dst"][0], c.params["dst_rep_stride"]
        rs = [R - 1] if drs == 0 else range(R)
        bt = f"uint{8 * s}"
        seen = set()
        for r in rs:
            for b in np.flatnonzero(empty):
                a = dst + r * drs * 8 * s + int(b) * s
                if d.compared is not None and not d.compared[a:a + s].all():
                    continue
                after = int(dev[a:a + s].view(bt)[0])
                before = int(c.ub[a:a + s].view(bt)[0])
                key = f"{c.option} {c.dtype}: " + \
                    ("kept" if after == before else _fmt_word(after, c.dtype))
                seen.add(key)
        for k in seen:
            row.observed[k] += 1
        if len(row.examples) < self.max_examples:
            row.examples.append((d.file, d.index))

    # -- output
    def sorted_rows(self) -> List[Row]:
        out = list(self.rows.values())
        for chip_id in self._seen_chips:                 # assumptions nothing exercised
            prof = get_chip(chip_id)
            for a in prof.assumed:
                if not _relevant(prof, a):
                    continue
                names = [f"minmax_rules ({k})" for k in ("nan", "signed zero", "ties")] \
                    if a == "minmax_rules" else [a]
                if a == "tik_add_work_contents" or (
                        a in ("zero_mask", "zero_repeat") and getattr(prof, a) == "undefined"):
                    names = [f"{a} (undefined)"]
                for n in names:
                    if (chip_id, n) not in self.rows:
                        out.append(Row(chip_id, n))
        return sorted(out, key=lambda r: (r.chip, r.assumption))

    def format(self) -> str:
        rows = self.sorted_rows()
        if not rows:
            return "assumption audit: no product with assumed fields among the cases"
        w = max([28] + [len(r.assumption) for r in rows])   # the longest name in its column
        lines = ["assumption audit (profile fields marked `assumed`; exercised = cases whose "
                 "result the assumption decides):",
                 f"  {'product':<28} {'assumption':<{w}} {'exercised':>9} {'agreed':>7} "
                 f"{'disagreed':>9}  verdict"]
        for r in rows:
            dis = "-" if r.kind == "observe" else str(r.disagreed)
            agr = "-" if r.kind == "observe" else str(r.agreed)
            lines.append(f"  {r.chip:<28} {r.assumption:<{w}} {r.exercised:>9} {agr:>7} "
                         f"{dis:>9}  {r.verdict}")
            if r.observed:
                seen = ", ".join(f"{k} x{n}" for k, n in r.observed.most_common(6))
                lines.append(f"      device wrote{'' if r.kind == 'observe' else ' (where it disagreed)'}"
                             f": {seen}")
            if r.examples and (r.disagreed or r.kind == "observe"):
                lines.append(f"      repro: {repro_command(*r.examples[0])}")
        return "\n".join(lines)

    def to_json(self) -> list:
        return [{"chip": r.chip, "assumption": r.assumption, "kind": r.kind,
                 "exercised": r.exercised, "agreed": r.agreed, "alternative": r.alternative,
                 "other": r.other, "verdict": r.verdict, "observed": dict(r.observed),
                 "examples": [{"file": f, "case": i} for f, i in r.examples],
                 "what": describe(r.assumption)}
                for r in self.sorted_rows()]


def describe(assumption: str) -> str:
    """What exercises ``assumption``: :data:`DESCRIPTIONS`, else the doc of the instruction's
    :class:`~ascend_ref.registry.ProfileField` of that name."""
    if assumption in DESCRIPTIONS:
        return DESCRIPTIONS[assumption]
    f = registry.declared_fields().get(assumption)
    return f"{f.doc} (checked by rerunning with {', '.join(map(str, f.choices))})" if f else ""


#: the profile fields of the reduce special registers that a dump's registers settle
#: (declared in ascendc/_spr_hooks.py; the getter forms ``spr_sum`` / ``spr_maxmin`` are
#: documented, not assumed)
SPR_FIELDS = ("spr_maxmin_index", "spr_unwritten", "spr_sum_other_type", "spr_vcg_clobber")


def _field_counterfactuals(prof: ChipProfile, assumed: set, d: DumpCase, ref: Outcome,
                           dev: np.ndarray, valid: np.ndarray) -> list:
    """Pending counterfactual cases for every assumed field the case's instruction declares
    (:class:`~ascend_ref.registry.ProfileField`): the case rerun with each other choice; the
    bytes where the results differ are the bytes the field decides."""
    out = []
    c = d.case
    for f in c.instruction.profile_fields:
        if f.name not in assumed or f.name not in prof.facts or f.state_only:
            continue                # state_only: no UB byte depends on it (spr.py)
        for value in f.choices:
            if value == prof.fact(f.name):
                continue
            alt = copy.copy(c)
            alt.chip = dataclasses.replace(prof, id=f"{prof.id}~{f.name}={value}",
                                           facts={**prof.facts, f.name: value})
            out.append((d, ref, dev, valid, f.name, alt))
    return out


# ------------------------------------------------------------------ case analysis -----------

def _relevant(prof: ChipProfile, assumption: str) -> bool:
    """Whether any API of the product can exercise ``assumption`` (for "not exercised" rows)."""
    def has(pred: Callable[[registry.Instruction], bool], dtype: Optional[str] = None
            ) -> bool:
        return any(prof.dtypes(i.name) and (dtype is None or dtype in prof.dtypes(i.name))
                   for i in registry.all() if pred(i))

    if assumption in registry.declared_fields():
        return has(lambda i: any(f.name == assumption for f in i.profile_fields))

    def kinds(i: registry.Instruction) -> Set[str]:
        return {i.kind(o) for o in i.options()}

    if assumption == "minmax_rules":
        return has(lambda i: bool(kinds(i) & {"min", "max"}))
    if assumption == "zero_repeat":
        return has(lambda i: i.repeat_range(i.options()[0], "float16")[0] == 0)
    declared = [i for i in registry.all() if assumption in i.assumptions]
    if declared and assumption not in ("tik_align", "index_overflow_limit"):
        return has(lambda i: i in declared)
    if assumption in ("tik_align", "tik_index_formula", "index_overflow_limit"):
        return has(lambda i: i.family == "tik")
    if assumption in ("saturate_default", "default_nan_f16"):
        return has(lambda i: "sum" in kinds(i), "float16")
    if assumption in ("default_nan_f32", "fp32_ftz"):
        return has(lambda i: "sum" in kinds(i), "float32")
    return True


def _tik_indexed(c: Case) -> bool:
    """A call whose result index is the TIK source offset (vec_reduce_min/max cal_index)."""
    ins = c.instruction
    return "index_overflow_limit" in ins.assumptions and ins.has_index(c.option, c.dtype)


def _is_counter(c: Case) -> bool:
    """The case runs in counter mask mode (``ar.CounterMask``)."""
    return isinstance(getattr(c.mask, "count", None), (int, np.integer))


def _mask_is_zero(c: Case) -> bool:
    m = c.mask
    if isinstance(getattr(m, "count", None), int):        # counter mode: no element
        return int(m.count) == 0
    if isinstance(m, (list, tuple)):
        return all(int(w) == 0 for w in m)
    try:
        return int(np.asarray(m).sum()) == 0
    except Exception:
        return False


def _tik_index(c: Case, ref: Outcome) -> Optional[int]:
    """The index a TIK min/max with cal_index writes (or would write), by the reference's
    rule: from the source bits, first NaN / extreme repeat and lane."""
    R = c.params["repeat"]
    if R < 1:
        return None
    s = np.dtype(c.dtype).itemsize
    bits = _src_bits(c)
    act = _active(c)[None, :]
    want_max = c.instruction.kind(c.option) == "max"
    _, _, _, winner = _decide(bits, act, c.dtype, want_max)
    key, nan, _, _ = _keys(bits, c.dtype)
    # repeat: first repeat holding the overall result; lane: its first lane with that value
    _, _, _, overall = _decide(winner[None, :], np.ones((1, R), bool), c.dtype, want_max)
    r = int(np.flatnonzero(winner == overall[0])[0])
    lanes = np.flatnonzero(act[0] & (bits[r] == overall[0]))
    if lanes.size == 0:
        return None
    return r * c.params["src_rep_stride"] * (32 // s) + int(lanes[0])


def _is_minmax(c: Case) -> bool:
    """A min/max call (the callers run only on cases with one lane mask for every repeat:
    counter-mode and count-form cases are not data-inspected, see ``Auditor.add``)."""
    return c.instruction.kind(c.option) in ("min", "max")


def _top_threshold(prof: ChipProfile) -> int:
    """Bytes above which an access proves a UB larger than every smaller documented UB."""
    smaller = [get_chip(p).ub_bytes for p in all_chips() if get_chip(p).ub_bytes < prof.ub_bytes]
    return max(smaller) if smaller else prof.ub_bytes // 2


def _extent_mask(c: Case, name: str, n: int) -> np.ndarray:
    s = np.dtype(c.dtype).itemsize
    a, size = c.tensors[name]
    m = np.zeros(n, bool)
    m[a:a + size * s] = True
    return m


def _written_words(ref: Outcome, s: int) -> set:
    assert ref.ub is not None and ref.written is not None         # the call ran
    idx = np.flatnonzero(ref.written[::s])
    if idx.size == 0:
        return set()
    bt = np.dtype(f"uint{8 * s}")
    usable = ref.ub[:ref.ub.size // s * s].view(bt)
    return set(int(x) for x in np.unique(usable[idx[idx < usable.size]]))


def _source(c: Case, rows: Optional[int]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(reads, lane_mask, active)``: the byte each lane of the first ``rows`` repeats reads
    (None: every repeat the call runs), the lanes the mask enables and the elements that take
    part -- the shared source gather (``Instruction.source_reads``, which also knows the
    counter mode and the level-2 count form, whose last repeat is partial)."""
    p = c.params
    reads, lane_mask, active = c.instruction.source_reads(
        c.dtype, c.mask, p["repeat"], p.get("src_rep_stride", 0), p.get("src_blk_stride"),
        base=c.tensors["src"][0], rows=None if rows is None else max(rows, 1))
    return reads, lane_mask, active


def _active(c: Case) -> np.ndarray:
    """Which lanes of a repeat take part (bool[L])."""
    return _source(c, 1)[1]


def _src_bits(c: Case) -> np.ndarray:
    """Source element bits ``[R, L]`` as the call reads them (elements that take no part: 0)."""
    s = np.dtype(c.dtype).itemsize
    addr, _, active = _source(c, None)
    addr = np.where(active, addr, 0)
    addr = np.clip(addr, 0, c.ub.size - s)
    byte = addr[..., None] + np.arange(s)
    raw = c.ub[byte].astype(np.uint64)
    bits = (raw << (8 * np.arange(s, dtype=np.uint64))).sum(axis=-1).astype(np.uint64)
    return np.where(active, bits, np.uint64(0))


def _keys(bits: np.ndarray, dtype: str
          ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Monotone integer keys (-0 < +0, numerics.order_key), NaN, zero and sign masks."""
    s = np.dtype(dtype).itemsize
    typed = jnp.asarray(bits.astype(f"uint{8 * s}"))
    key = np.asarray(numerics.order_key(typed, dtype)).astype(np.int64)
    if not dtype.startswith("float"):
        f = np.zeros(bits.shape, bool)
        return key, f, f, f
    sign = np.uint64(1 << (8 * s - 1))
    nan = np.asarray(numerics.is_nan(typed))
    neg = (bits & sign) != 0
    zero = (bits & ~sign & np.uint64((1 << (8 * s)) - 1)) == 0
    return key, nan, zero, neg


def _decide(bits: np.ndarray, act: np.ndarray, dtype: str, want_max: bool
            ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group (last axis = lanes): (nan, signed_zero, ties, winner_bits)."""
    key, nan, zero, neg = _keys(bits, dtype)
    ok = act & ~nan
    big = np.int64(1 << 40)
    k = np.where(ok, key, -big if want_max else big)
    ext = k.max(axis=-1) if want_max else k.min(axis=-1)
    hit = ok & (k == ext[..., None])
    has_nan = (act & nan).any(axis=-1)
    ties = (hit.sum(axis=-1) > 1) & ~has_nan
    zpos = (ok & zero & ~neg).any(axis=-1)
    zneg = (ok & zero & neg).any(axis=-1)
    ext_zero = (hit & zero).any(axis=-1)
    signed_zero = zpos & zneg & ext_zero & ~has_nan
    first = np.argmax(np.where(has_nan[..., None], act & nan, hit), axis=-1)
    winner = np.take_along_axis(bits, first[..., None], axis=-1)[..., 0]
    return has_nan, signed_zero, ties, winner


def _minmax_masks(c: Case, n: int) -> Dict[str, np.ndarray]:
    """Bytes of the result decided by each min/max rule (``nan``, ``signed zero``, ``ties``)."""
    s = np.dtype(c.dtype).itemsize
    R = c.params["repeat"]
    out = {k: np.zeros(n, bool) for k in ("nan", "signed zero", "ties")}
    if R == 0:
        return out
    act = _active(c)
    bits = _src_bits(c)
    ins = c.instruction
    lay = ins.layout(c.dtype, c.option)
    want_max = ins.kind(c.option) == "max"
    has_index = any(f.role == "index" for f in lay.dst)
    dst = c.tensors["dst"][0]

    def mark(name: str, a: int, nbytes: int) -> None:
        out[name][a:a + nbytes] = True

    if lay.per_repeat:
        # one decision per value field of a slot (ReduceDataBlock: one per DataBlock), or
        # one for the whole slot (WholeReduce: value and index decided together)
        groups = max(1, sum(f.role == "value" for f in lay.dst))
        g = bits.reshape(R, groups, -1) if groups > 1 else bits[:, None, :]
        ga = act.reshape(groups, -1)[None] if groups > 1 else act[None, None, :]
        nan, sz, ties, _ = _decide(g, ga, c.dtype, want_max)
        drs = c.params["dst_rep_stride"]
        for r in ([R - 1] if drs == 0 else range(R)):
            a = dst + r * drs * lay.slot_bytes
            for b in range(groups):
                at, nb = (a + b * s, s) if groups > 1 else (a, lay.slot_bytes)
                if nan[r, b]:
                    mark("nan", at, nb)
                if sz[r, b]:
                    mark("signed zero", at, nb)
                if ties[r, b] and has_index:
                    mark("ties", at, nb)
        return out
    nan, sz, ties, winner = _decide(bits, act[None], c.dtype, want_max)
    # TIK: stage-1 entries in work, the overall result in dst
    work = c.tensors["work_tensor"][0]
    entry = lay.entry_bytes
    for r in range(R):
        a = work + r * entry
        if nan[r]:
            mark("nan", a, entry)
        if sz[r]:
            mark("signed zero", a, entry)
        if ties[r]:
            mark("ties", a, entry)
    xnan, xsz, xties, _ = _decide(winner[None, :], np.ones((1, R), bool), c.dtype, want_max)
    dst_bytes = lay.slot_bytes
    if nan.any() or xnan[0]:
        mark("nan", dst, dst_bytes)
    if sz.any() or xsz[0]:
        mark("signed zero", dst, dst_bytes)
    if has_index and (ties.any() or xties[0]):
        mark("ties", dst, dst_bytes)
    return out


def _has_subnormal(c: Case, ref: Outcome) -> bool:
    """A float32 call whose source or written result holds a subnormal."""
    bits = _src_bits(c)                   # elements that take no part read as +0
    sub = ((bits & np.uint64(0x7F800000)) == 0) & ((bits & np.uint64(0x007FFFFF)) != 0)
    if sub.any():
        return True
    for w in _written_words(ref, 4):
        if (w & 0x7F800000) == 0 and (w & 0x007FFFFF) != 0:
            return True
    return False


__all__ = ["Auditor", "Row", "DESCRIPTIONS", "describe"]
