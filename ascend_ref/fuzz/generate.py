"""Random calls over the parameter space: legal and illegal, with adversarial data.

One generator, one flow (:func:`draw_campaign_case`): a case *template* (:class:`Template`:
API, products, dtype, option, mask mode, repeat range, UB length) and the weights of every
random choice (:class:`Distributions`) decide a case; the one breaker table
(:data:`BREAKERS`, keyed by :class:`~ascend_ref.constraints.Code`) is the only way an
illegal case is made. The two front ends differ only in those parameters:

* a campaign (``Campaign.case``) takes the template from its covering pool and the weights
  from its file, and its cover plan forces repeat class, product and validity of its first
  cases (``prefer_repeat``, ``prefer_chip``, ``force_rule``);
* :func:`draw_case` (hypothesis tests, notebooks) draws the template itself over the whole
  parameter space (:func:`space_template`), with :func:`space_distributions`.

Draws come from ``HypothesisDraw`` (shrinkable) or ``RngDraw`` (numpy, replayable from
``(seed, case_id)``). A :class:`Case` is a complete, self-contained call: API, product,
dtype, option, mask, parameters, tensors and the UB bytes before the call. Every size,
extent and alignment is the instruction's own (:class:`ascend_ref.registry.Instruction`:
``src_footprint``, ``rep_stride_fitting``, ``read_extent``, ``dst_extent``,
``work_elements``, ``alignment``); none is computed here.

>>> from ascend_ref.fuzz.generate import RngDraw, draw_case
>>> c = draw_case(RngDraw(seed=1, case_id=0), apis=["whole_reduce_min"], chips=["atlas_a2"])
>>> c.api, c.chip, c.ub.dtype.name
('whole_reduce_min', 'atlas_a2', 'uint8')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple,
                    TypeVar, Union)

import numpy as np

from .. import mask as masks, registry
from ..case import Case
from ..chips import ChipProfile, chip as get_chip, chips as all_chips
from ..batch_args import is_int
from ..constraints import Code, ConstraintError

if TYPE_CHECKING:
    from hypothesis.strategies import DataObject

_T = TypeVar("_T")
#: a call's mask argument: a lane count, bit-mask words, or a counter-mode count
Mask = Union[int, List[int], masks.CounterMask]

#: the option values of the registry's option kinds (for tests and campaign files)
ORDERS = registry.ORDER.values()
REDUCE_TYPES = registry.REDUCE_TYPE.values()
STRIDE_REGIMES = ["zero", "overlap", "contiguous", "gapped", "large"]
DATA_KINDS = ["random_bits", "ties", "specials", "subnormal", "saturating", "mixed"]


# ------------------------------------------------------------------ draws ------------------

class RngDraw:
    """Draws from numpy's PCG64 seeded by ``(seed, case_id)``: any case replays exactly."""

    def __init__(self, seed: int, case_id: int, stream: int = 0) -> None:
        for name, v in (("seed", seed), ("case_id", case_id), ("stream", stream)):
            if not is_int(v) or v < 0:               # numpy: a raw ValueError / TypeError
                raise ConstraintError(Code.BAD_ARGUMENT, api="RngDraw", param=name, value=v,
                                      allowed="an int >= 0")
        key = [int(seed), int(case_id)] + ([int(stream)] if stream else [])
        self.rng = np.random.default_rng(key)

    def integers(self, lo: int, hi: int) -> int:          # inclusive
        if hi - lo >= 2**62:                              # 64-bit mask words
            return lo + (int(self.rng.integers(0, 2**32)) << 32 | int(self.rng.integers(0, 2**32))) % (hi - lo + 1)
        return int(self.rng.integers(lo, hi + 1))

    def choice(self, seq: Sequence[_T], weights: Optional[Sequence[float]] = None) -> _T:
        p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
        return seq[int(self.rng.choice(len(seq), p=p))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def data_seed(self) -> int:
        return int(self.rng.integers(0, 2**63))


class HypothesisDraw:
    """The same interface over ``hypothesis.strategies.data()``: shrinks towards simple calls."""

    def __init__(self, data: DataObject) -> None:
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def integers(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, seq: Sequence[_T], weights: Optional[Sequence[float]] = None) -> _T:
        return seq[self.data.draw(self.st.integers(0, len(seq) - 1))]

    def chance(self, p: float) -> bool:
        return self.data.draw(self.st.integers(0, 999)) < int(p * 1000)

    def data_seed(self) -> int:
        return self.data.draw(self.st.integers(0, 2**32 - 1))


#: a draw (what every drawing function takes): replayable or shrinkable
Draw = Union[RngDraw, HypothesisDraw]


# ------------------------------------------------------------------ data -------------------

def _size(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def _ins(api: str) -> registry.Instruction:
    return registry.lookup(api, api="fuzz")


def fill_ub(nbytes: int, dtype: str, kind: str, seed: int) -> np.ndarray:
    """UB bytes with adversarial element values (``kind`` from :data:`DATA_KINDS` or
    :data:`CAMPAIGN_DATA_KINDS`)."""
    rng = np.random.default_rng(seed)
    s = _size(dtype)
    n = nbytes // s
    bits_t = np.dtype(f"uint{8 * s}")
    raw = rng.integers(0, 2 ** (8 * s), n, dtype=np.uint64).astype(bits_t)
    if kind == "random_bits":
        return raw.view(np.uint8)
    is_float = dtype.startswith("float")
    if kind == "signed_zeros":       # +0 / -0 with a few +-1: sign-of-zero rules of sums and min/max
        sign = bits_t.type(1 << (8 * s - 1))
        one = (np.ones(1, dtype).view(bits_t)[0] if is_float else bits_t.type(1))
        pick = rng.integers(0, 8, n)
        out = np.where(pick < 4, bits_t.type(0), sign).astype(bits_t)
        out = np.where(pick == 7, one | (sign if is_float and rng.random() < 0.5 else 0), out)
        return np.ascontiguousarray(out.astype(bits_t)).view(np.uint8)
    if is_float:
        ft = np.dtype(dtype)
        small = (rng.integers(-4, 5, n) * 0.5).astype(ft).view(bits_t)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0,
                             np.finfo(ft).max, -np.finfo(ft).max, np.finfo(ft).smallest_subnormal,
                             -np.finfo(ft).smallest_subnormal, np.finfo(ft).tiny], ft).view(bits_t)
        qnan = np.array([0x7E00, 0xFE00, 0x7C01, 0x7D55] if s == 2 else
                        [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA5A5A5], bits_t)
        sub_mask = (1 << (10 if s == 2 else 23)) - 1
        subn = (raw & bits_t.type(sub_mask)) | (raw & bits_t.type(1 << (8 * s - 1)))
        big = (rng.uniform(0.3, 1.0, n) * (65504 if s == 2 else 3e38) *
               rng.choice([-1, 1], n)).astype(ft).view(bits_t)
        pools = {"ties": [small], "specials": [specials[rng.integers(0, len(specials), n)],
                                               qnan[rng.integers(0, len(qnan), n)], small],
                 "subnormal": [subn, small], "saturating": [big, small],
                 "mixed": [raw, small, specials[rng.integers(0, len(specials), n)],
                           qnan[rng.integers(0, len(qnan), n)], subn, big]}[kind]
    else:
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0, 1, info.max - 1]
        if s == 8:           # int64 / uint64: carries across the 32-bit words, wrap at 2^64
            edges += [2**32 - 1, 2**32, 2**31, -1 if info.min < 0 else 2**63, info.min + 1]
        ext = np.array(edges, dtype=dtype).view(bits_t)
        small = rng.integers(-3 if info.min < 0 else 0, 4, n).astype(dtype).view(bits_t)
        pools = {"ties": [small], "specials": [ext[rng.integers(0, len(ext), n)], small],
                 "subnormal": [small, raw], "saturating": [ext[rng.integers(0, len(ext), n)], raw],
                 "mixed": [raw, small, ext[rng.integers(0, len(ext), n)]]}[kind]
    pick = rng.integers(0, len(pools), n)
    out = np.choose(pick, pools) if len(pools) > 1 else pools[0]
    return np.ascontiguousarray(out.astype(bits_t)).view(np.uint8)


# ------------------------------------------------------------------ campaigns --------------
#
# A campaign draws its cases in two levels. First a *pool* of templates (:class:`Template`:
# API, a group of products with the same behaviour, dtype, option, mask mode and a repeat
# bucket) is built from ``(seed, distributions)``, covering every combination bin before it
# repeats one. Then case ``i`` draws, from ``RngDraw(seed, i)`` alone, one template and every
# dynamic parameter (repeat inside the bucket, strides, placement, mask bits, data, validity).
# Templates are units of coverage, not of compilation: the batch executor compiles one kernel
# per (API, dtype, option) for all of them (product behaviour, mask mode and whole-reduce
# order are traced data), and any case replays from (seed, case id).

REPEAT_CLASSES = ["zero", "one", "small", "mid", "max"]
#: share of illegal draws that land exactly one step past the limit (repeat max + 1, mask
#: lanes + 1, stride 65536, work need - 1, alignment + one element, one element past a
#: tensor's last byte read or past the UB); the rest go further past it
BOUNDARY_RATE = 0.8
#: the mask modes: continuous (``count``), bit mode, and the counter mode (SetMaskCount,
#: :class:`ascend_ref.mask.CounterMask`) where the instruction and the product have it
MASK_MODES = ["count", "bits", "counter"]
MASK_COUNT_KINDS = ["full", "one", "low", "partial"]
#: counter mode: the lanes of the last repeat (L, 1, or 2..L-1)
MASK_COUNTER_KINDS = ["full", "one", "partial"]
MASK_BITS_KINDS = ["full", "one", "sparse", "dense", "blocks", "random"]
BLK_STRIDES = ["unit", "zero", "double", "gapped"]
DST_STRIDES = ["unit", "zero", "double", "gapped"]
CAMPAIGN_DATA_KINDS = DATA_KINDS + ["signed_zeros"]
SATURATE_CHOICES = ["default", "on", "off"]
INVALID_RULES = ["mask_range", "mask_bits", "mask_mode", "zero_mask", "repeat_range", "stride_range",
                 "dst_stride_zero", "align", "tensor_small", "ub", "overlap", "dtype",
                 "api_unsupported", "order_unsupported", "work_small", "index_overflow",
                 "saturate_dtype"]

#: Every weight table a campaign may set under ``[distributions.<table>]``, with defaults.
DEFAULT_WEIGHTS = {
    "repeat": {"zero": 1, "one": 1, "small": 2, "mid": 2, "max": 1},
    "stride": {"zero": 1, "overlap": 1, "contiguous": 2, "gapped": 1, "large": 1},
    "blk_stride": {"unit": 3, "zero": 1, "double": 1, "gapped": 1},
    "dst_stride": {"unit": 3, "zero": 1, "double": 1, "gapped": 1},
    "mask_mode": {"count": 1, "bits": 1, "counter": 1},
    "mask_count": {"full": 2, "one": 1, "low": 1, "partial": 2},
    "mask_counter": {"full": 1, "one": 1, "partial": 2},
    "mask_bits": {"full": 1, "one": 1, "sparse": 1, "dense": 1, "blocks": 1, "random": 1},
    "data": {"random_bits": 2, "ties": 2, "specials": 1, "subnormal": 1, "saturating": 1,
             "mixed": 1, "signed_zeros": 1},
    "saturate": {"default": 1, "on": 1, "off": 1},
    "invalid": {r: 1 for r in INVALID_RULES},
}
_TABLE_VALUES = {"repeat": REPEAT_CLASSES, "stride": STRIDE_REGIMES, "blk_stride": BLK_STRIDES,
                 "dst_stride": DST_STRIDES, "mask_mode": MASK_MODES,
                 "mask_count": MASK_COUNT_KINDS, "mask_bits": MASK_BITS_KINDS,
                 "mask_counter": MASK_COUNTER_KINDS,
                 "data": CAMPAIGN_DATA_KINDS, "saturate": SATURATE_CHOICES,
                 "invalid": INVALID_RULES}
_RATES = {"invalid_rate": 0.1, "in_place_rate": 0.1, "offset_rate": 0.5}


def check_rate(name: str, v: Any) -> None:
    """A probability: a real number in [0, 1] (not a bool); else a ValueError naming it."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                             np.floating)) \
            or not 0.0 <= float(v) <= 1.0:
        raise ValueError(f"{name} = {v!r}: need a value in [0, 1]")


class Distributions:
    """Weights of every random choice a campaign makes, plus three rates.

    ``weights[table][value]``: relative weight (0 disables a value); tables and values are
    :data:`DEFAULT_WEIGHTS`. Rates: ``invalid_rate`` (share of cases that break one documented
    rule), ``in_place_rate`` (Ascend C dst inside src), ``offset_rate`` (src not at UB 0).
    """

    def __init__(self, weights: Optional[Mapping[str, Mapping[str, float]]] = None,
                 **rates: float) -> None:
        self.weights = {t: {k: float(w) for k, w in v.items()} for t, v in DEFAULT_WEIGHTS.items()}
        for table, vals in (weights or {}).items():
            if table not in self.weights:
                raise ValueError(f"unknown distribution table {table!r}; "
                                 f"known: {sorted(self.weights)}")
            for k, w in vals.items():
                if k not in _TABLE_VALUES[table]:
                    raise ValueError(f"[distributions.{table}]: unknown value {k!r}; "
                                     f"known: {_TABLE_VALUES[table]}")
                if not isinstance(w, (int, float)) or w < 0:
                    raise ValueError(f"[distributions.{table}] {k} = {w!r}: need a weight >= 0")
            # a table given replaces the default one: values left out are never drawn
            self.weights[table] = {k: float(vals.get(k, 0)) for k in _TABLE_VALUES[table]}
            if not any(self.weights[table].values()):
                raise ValueError(f"[distributions.{table}]: every weight is 0")
        for k in rates:
            if k not in _RATES:
                raise ValueError(f"unknown rate {k!r}; known: {sorted(_RATES)}")
        r = {**_RATES, **rates}
        for k, v in r.items():
            check_rate(k, v)
        self.invalid_rate = float(r["invalid_rate"])
        self.in_place_rate = float(r["in_place_rate"])
        self.offset_rate = float(r["offset_rate"])

    def weight(self, table: str, value: str) -> float:
        return self.weights[table].get(value, 0.0)

    def pick(self, d: Draw, table: str, values: Optional[Sequence[str]] = None) -> str:
        """Weighted choice among ``values`` (default: all of ``table``) with weight > 0."""
        values = list(_TABLE_VALUES[table] if values is None else values)
        live = [v for v in values if self.weight(table, v) > 0] or values
        return d.choice(live, [self.weight(table, v) or 1.0 for v in live])

    def as_dict(self) -> dict:
        return {"weights": self.weights, "invalid_rate": self.invalid_rate,
                "in_place_rate": self.in_place_rate, "offset_rate": self.offset_rate}


def api_repeat_range(api: str, option: Any, dtype: str = "float16") -> tuple:
    """Documented repeat range of ``api`` for ``option`` and ``dtype`` (the instruction's
    declaration: TIK min/max with cal_index is int16 255, float16 511, float32 4095)."""
    return tuple(_ins(api).repeat_range(option, dtype))


#: repeat counts that share one compiled table height in the batch executor
#: (:func:`ascend_ref.batch.run_cases`): up to 16, up to 256, up to the maximum
TABLE_HEIGHTS = (16, 256)


def repeat_buckets(lo: int, hi: int) -> list:
    """``[(r_lo, r_hi), ...]``: repeat ranges that share one compiled table height
    (``[lo, 16]``, ``[17, 256]``, ``[257, hi]``, each capped at ``hi``)."""
    out, start = [], lo
    for h in TABLE_HEIGHTS + (hi,):
        if start > hi:
            break
        end = min(h, hi)
        if end >= start:
            out.append((start, end))
            start = end + 1
    return out


def repeat_class(r: int, api: str, option: Any, dtype: str = "float16",
                 top: Optional[int] = None) -> str:
    """The coverage class of repeat count ``r``; ``top``: the largest count a valid call
    can reach (default the top of the documented range)."""
    hi = api_repeat_range(api, option, dtype)[1] if top is None else top
    if r == 0:
        return "zero"
    if r == 1:
        return "one"
    if r == hi:
        return "max"
    return "small" if r <= 8 else "mid"


def _in_place_ok(ins: Any, dtype: str, option: Any, repeats: int, rep_stride: int,
                 dst_rep_stride: int) -> bool:
    """dst at src keeps the OVERLAP rule (docs/SEMANTICS.md §E: no repeat reads the result
    slot of an earlier one): repeat ``r``'s slot, ``[r*D, r*D + w)`` from src, ends before
    repeat ``r + 1`` starts reading at ``(r + 1) * S`` (S = src_rep_stride * 32, nothing of
    a repeat is read below its start), for every ``r`` -- a linear condition, checked at
    both ends. Sufficient, not necessary: a slot among masked lanes would be allowed too."""
    if repeats < 2:
        return True
    w = ins.dst_extent(1, dtype, option, dst_rep_stride)
    step = ins.dst_extent(2, dtype, option, dst_rep_stride) - w
    src_step = rep_stride * 32
    return all(k * step + w <= (k + 1) * src_step for k in (0, repeats - 2))


def count_fitting(ins: Any, option: Any, dtype: str, budget: int, top: int) -> int:
    """The count form: the largest count up to ``top`` whose source, dst and work tensor
    (its need and 16 spare elements) fit in ``budget`` bytes. Its documented top, UB bytes
    / sizeof(T) of the largest UB, is past every product's UB once dst and the work tensor
    are placed: a valid draw at the top of the range must stop here."""
    s = _size(dtype)

    def need(c: int) -> int:
        return (_round_up(ins.src_footprint(c, 0, None, dtype), 32)
                + _round_up(ins.dst_extent(c, dtype, option), 32)
                + _round_up((ins.work_elements(c, option, dtype) + 16) * s, 32) + 64)

    lo, hi = 0, int(top)
    while lo < hi:                    # need() grows with the count
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(mid) <= budget else (lo, mid - 1)
    return lo


def _bucket_classes(b: tuple, api: str, option: Any, dtype: str = "float16") -> List[str]:
    lo, hi = api_repeat_range(api, option, dtype)
    out = []
    if b[0] <= 0 <= b[1]:
        out.append("zero")
    if b[0] <= 1 <= b[1]:
        out.append("one")
    if b[0] <= 8 and b[1] >= 2:
        out.append("small")
    if b[1] >= 9 and b[0] < hi:
        out.append("mid")
    if b[1] == hi:
        out.append("max")
    return out


def api_options(api: str, prof: ChipProfile) -> list:
    return _ins(api).options(prof)


def _supports(prof: ChipProfile, api: str, dtype: str, option: Any) -> bool:
    return _ins(api).supports(prof, dtype, option)


def behaviour_group(chip_id: str) -> str:
    """Name of the products that share ``chip_id``'s behaviour
    (:class:`~ascend_ref.chips.Behaviour`): the first member and how many more, e.g.
    ``atlas_a2+1`` (Atlas A2 and A3)."""
    return _groups()[chip_id]


def _groups() -> dict:
    members: dict = {}
    for c in all_chips():
        members.setdefault(get_chip(c).behaviour, []).append(c)
    out = {}
    for ids in members.values():
        ids = sorted(ids)
        name = ids[0] + (f"+{len(ids) - 1}" if len(ids) > 1 else "")
        out.update({c: name for c in ids})
    return out


def option_name(option: Any) -> str:
    if option is None:
        return "-"
    if isinstance(option, bool):
        return "cal_index" if option else "no_index"
    return str(getattr(option, "value", option))


def combo_name(api: str, group: str, dtype: str, option: Any, mask_mode: str) -> str:
    return f"{api}/{group}/{dtype}/{option_name(option)}/{mask_mode}"


@dataclass(frozen=True)
class Template:
    """One case template of a campaign (a unit of coverage): every case drawn from it shares
    API, dtype, option, mask mode, repeat bucket, UB length and product behaviour."""

    api: str
    chips: tuple
    dtype: str
    option: Any
    mask_mode: str
    r_lo: int
    r_hi: int
    ub_bytes: int

    @property
    def classes(self) -> List[str]:
        return _bucket_classes((self.r_lo, self.r_hi), self.api, self.option, self.dtype)

    @property
    def combo(self) -> str:
        """The template's combination bin: ``api/behaviour group/dtype/option/mask mode``."""
        return combo_name(self.api, behaviour_group(self.chips[0]), self.dtype, self.option,
                          self.mask_mode)

    def facets(self) -> set:
        """Coverage facets one case of this template can hit: its combination, an
        (API, product) pair per product, and an (API, repeat class) pair per class."""
        a = self.api
        f: set = {("api", a), ("combo", self.combo)}
        f |= {("product", a, c) for c in self.chips}
        f |= {("repeat", a, k) for k in self.classes}
        return f

    def cost(self) -> float:
        """Rough seconds per case on the scalar oracle (for balancing time across templates)."""
        mean_r = (max(self.r_lo, 1) + self.r_hi) / 2
        sums = _ins(self.api).sums(self.option)
        per = (7e-4 if self.dtype.endswith("16") else 4e-4) if sums else 2e-4
        return 2e-3 + mean_r * per        # measured: ~0.7 ms per half repeat of a tree sum

    def as_dict(self) -> dict:
        return {"api": self.api, "chips": list(self.chips), "dtype": self.dtype,
                "option": self.option, "mask_mode": self.mask_mode, "repeat": [self.r_lo, self.r_hi],
                "ub_bytes": self.ub_bytes}

    def __str__(self) -> str:
        opt = "" if self.option is None else f" {self.option}"
        return (f"{self.api}<{self.dtype}>{opt} {self.mask_mode} r∈[{self.r_lo},{self.r_hi}] "
                f"on {'/'.join(self.chips)}")


def template_universe(apis: Sequence[str], chips: Sequence[str], dtypes: Optional[Sequence[str]],
                      ub_bytes: Union[int, str], dist: Distributions,
                      also_on: Optional[str] = None) -> list:
    """Every template of a campaign with its draw weight: ``[(Template, w)]``.

    ``ub_bytes``: an int, or ``"product"`` (each product's own UB size). ``also_on``: a second
    product every case must also be valid API/dtype/option on (product-diff campaigns).
    Products whose behaviour is identical share templates.
    """
    other = get_chip(also_on) if also_on else None
    groups: dict = {}
    for c in chips:
        groups.setdefault(get_chip(c).behaviour, []).append(c)
    out = []
    mode_w = {m: dist.weight("mask_mode", m) for m in MASK_MODES}
    for api in apis:
        for members in groups.values():
            profs = [get_chip(c) for c in members]
            dts = sorted({dt for p in profs for dt in p.dtypes(api)},
                         key=lambda x: CAMPAIGN_DTYPES.index(x) if x in CAMPAIGN_DTYPES else 99)
            for dt in dts:
                if dtypes and dt not in dtypes:
                    continue
                opts = []
                for p in profs:
                    opts += [o for o in api_options(api, p) if o not in opts]
                for opt in opts:
                    hosts = tuple(p.id for p in profs if _supports(p, api, dt, opt)
                                  and (other is None or _supports(other, api, dt, opt)))
                    if not hosts:
                        continue
                    ub = (max(get_chip(c).ub_bytes for c in hosts) if ub_bytes == "product"
                          else int(ub_bytes))
                    buckets = repeat_buckets(*api_repeat_range(api, opt, dt))
                    share = {k: sum(k in _bucket_classes(b, api, opt, dt) for b in buckets)
                             for k in REPEAT_CLASSES}
                    for mode in MASK_MODES:
                        if mode_w[mode] <= 0 or mode not in _ins(api).mask_modes:
                            continue
                        on = hosts if mode != "counter" else tuple(
                            c for c in hosts if counter_supported(c))
                        if not on:
                            continue
                        for b in buckets:
                            w = sum(dist.weight("repeat", k) / share[k]
                                    for k in _bucket_classes(b, api, opt, dt))
                            if w <= 0:
                                continue
                            out.append((Template(api, on, dt, opt, mode, b[0], b[1], ub),
                                        w * mode_w[mode]))
    return out


CAMPAIGN_DTYPES = ["float16", "float32", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def counter_supported(chip_id: Union[str, ChipProfile]) -> bool:
    """The product has the counter mask mode (its profile's ``counter_mode``)."""
    return get_chip(chip_id).facts.get(masks.COUNTER_FACT) == "supported"


def counter_mask(d: Draw, dist: Distributions, dtype: str,
                 r: int) -> Tuple[masks.CounterMask, str]:
    """A counter-mode mask for ``r`` repeats: ``(r - 1)`` full ones and a last repeat of the
    kind drawn (L, 1 or 2..L-1 lanes); count 0 for ``r`` 0."""
    lanes = masks.lanes_per_repeat(dtype)
    kind = dist.pick(d, "mask_counter")
    last = {"full": lambda: lanes, "one": lambda: 1,
            "partial": lambda: d.integers(2, lanes - 1)}[kind]()
    return masks.CounterMask(0 if r <= 0 else (r - 1) * lanes + last), kind


def breakable_rules(t: "Template", chip_id: Union[str, ChipProfile, None] = None) -> set:
    """Documented rules a case of template ``t`` (on ``chip_id``, default: any of its
    products) can be drawn to break (the :data:`BREAKERS` whose ``can`` holds)."""
    if chip_id is None:
        return set().union(*(breakable_rules(t, c) for c in t.chips))
    ins = _ins(t.api)
    prof = get_chip(chip_id)
    return {b.name for b in BREAKERS.values() if b.can(t, ins, prof)}


def build_pool(universe: list, size: int, seed: int,
               extra_facets: Optional[Callable[[Template], set]] = None) -> list:
    """A covering pool: greedily cover every facet of the universe first (``extra_facets(t)``:
    more facets of a template), then draw templates by weight until ``size``. ``size`` -1:
    the whole cover and nothing more; 0 or larger than the universe: every template; else
    the cover stops at ``size`` templates."""
    if not universe:
        return []
    if size == 0 or size >= len(universe):
        return [t for t, _ in universe]
    cover_all = size < 0
    d = RngDraw(seed, 0, stream=1)
    facets = [t.facets() | (extra_facets(t) if extra_facets else set()) for t, _ in universe]
    todo = set().union(*facets)
    pool: list = []
    used: set = set()
    weights = np.array([w for _, w in universe], float)
    while todo and (cover_all or len(pool) < size):
        gain = np.array([len(f & todo) if i not in used else -1 for i, f in enumerate(facets)])
        best = np.flatnonzero(gain == gain.max())
        if gain.max() <= 0:
            break
        i = int(best[int(d.rng.choice(len(best), p=weights[best] / weights[best].sum()))])
        used.add(i)
        pool.append(universe[i][0])
        todo -= facets[i]
    rest = [i for i in range(len(universe)) if i not in used]
    while len(pool) < size and rest:
        p = weights[rest] / weights[rest].sum()
        j = int(d.rng.choice(len(rest), p=p))
        pool.append(universe[rest.pop(j)][0])
    return pool


def cover_plan(pool: Sequence[Template], dist: "Distributions", rounds: int = 2) -> list:
    """The forced first cases of a campaign: ``[(template index, repeat class, product,
    rule)]``, at least ``rounds`` per template, that together hit every (API, product),
    (API, repeat class) and (API, broken rule) pair the pool can reach, and every
    combination with a valid case. ``rule`` is ``"valid"`` (no rule broken), a rule name
    (break exactly that one) or None (drawn as usual)."""
    want_rules = dist.invalid_rate > 0
    todo_cls = {(t.api, k) for t in pool for k in t.classes if dist.weight("repeat", k) > 0}
    todo_chip = {(t.api, c) for t in pool for c in t.chips}
    todo_rule = ({(t.api, r) for t in pool for r in breakable_rules(t)
                  if dist.weight("invalid", r) > 0} if want_rules else set())
    plan: list = []

    def pick_class(t: Template, prefer: Callable[[List[str]], str]) -> str:
        live = [k for k in t.classes if dist.weight("repeat", k) > 0] or t.classes
        for k in live:
            if (t.api, k) in todo_cls:
                return k
        return prefer(live)

    def pick_chip(t: Template, rule: Optional[str] = None) -> str:
        hosts = [c for c in t.chips if rule is None or rule in breakable_rules(t, c)]
        for c in hosts:
            if (t.api, c) in todo_chip:
                return c
        return hosts[len(plan) % len(hosts)]

    for rnd in range(rounds):
        for k, t in enumerate(pool):
            rule = "valid" if rnd == 0 else None
            if rnd > 0:
                for r in sorted(breakable_rules(t)):
                    if (t.api, r) in todo_rule:
                        rule = r
                        break
            cls: Optional[str] = pick_class(
                t, (lambda live: live[-1]) if rnd == 0 else (lambda live: live[0]))
            if rule == "index_overflow" and cls in ("zero", "one"):
                cls = next((x for x in ("max", "mid", "small") if x in t.classes), cls)
            chip: Optional[str] = pick_chip(t, rule if rule not in (None, "valid") else None)
            plan.append((k, cls, chip, rule))
            todo_cls.discard((t.api, cls))
            todo_chip.discard((t.api, chip))
            todo_rule.discard((t.api, rule))
    while todo_rule or todo_cls or todo_chip:      # leftovers: one more case each
        n = len(plan)
        for k, t in enumerate(pool):
            rule = next((r for r in sorted(breakable_rules(t)) if (t.api, r) in todo_rule), None)
            cls = next((x for x in t.classes if (t.api, x) in todo_cls), None)
            chip = next((c for c in t.chips if (t.api, c) in todo_chip
                         and (rule is None or rule in breakable_rules(t, c))), None)
            if rule is None and cls is None and chip is None:
                continue
            if rule == "index_overflow" and cls in (None, "zero", "one"):
                cls = next((x for x in ("max", "mid", "small") if x in t.classes), cls)
            chip = chip or pick_chip(t, rule)
            plan.append((k, cls or t.classes[0], chip, rule or "valid"))
            todo_cls.discard((t.api, cls))
            todo_chip.discard((t.api, chip))
            todo_rule.discard((t.api, rule))
        if len(plan) == n:
            break
    return plan


def pool_weights(pool: Sequence[Template], cost_balance: float) -> list:
    """Case share of each template: ``cost ** -cost_balance`` (1: equal oracle time per
    template, 0: equal case counts)."""
    return [t.cost() ** -float(cost_balance) for t in pool]


def _campaign_mask(d: Draw, dist: Distributions, mode: str, dtype: str,
                   word_order: str) -> Tuple[Optional[Mask], str]:
    lanes = masks.lanes_per_repeat(dtype)
    if mode == "counter":                # drawn with the repeat count (counter_mask)
        return None, ""
    if mode == "count":
        kind = dist.pick(d, "mask_count")
        m = {"full": lambda: lanes, "one": lambda: 1, "low": lambda: d.integers(1, 16),
             "partial": lambda: d.integers(2, lanes - 1)}[kind]()
        return m, kind
    kind = dist.pick(d, "mask_bits")
    words = []
    for k in range(2):
        if k * 64 >= lanes:
            words.append(0)
            continue
        if kind == "full":
            w = 2**64 - 1
        elif kind == "one":
            w = 0
        elif kind == "blocks":
            w = int(sum(0xFFFF << (16 * j) for j in range(4) if d.chance(0.5)))
        else:
            w, w2 = d.integers(0, 2**64 - 1), d.integers(0, 2**64 - 1)
            w = {"sparse": w & w2, "dense": w | w2, "random": w}[kind]
        words.append(w)
    if kind == "one":
        lane = d.integers(0, lanes - 1)
        words[lane // 64] = 1 << (lane % 64)
    if not any(words):
        words[0] = 1 << d.integers(0, 63)
    if word_order == "tik":
        return masks.api_words(words, word_order), kind
    return (words if lanes == 128 else [words[0]]), kind


def _named_stride(d: Draw, name: str) -> int:
    return {"unit": 1, "zero": 0, "double": 2}[name] if name != "gapped" else d.integers(3, 16)


def _stride(d: Draw, regime: str, hi: int) -> int:
    if regime == "zero":
        return 0
    if regime == "overlap":
        return d.integers(1, 7)
    if regime == "contiguous":
        return 8
    if regime == "gapped" or hi < 25:
        return d.integers(9, max(9, min(24, hi)))
    return d.integers(25, hi)


def draw_campaign_case(d: Draw, template: Template, dist: Distributions,
                       prefer_repeat: Optional[str] = None, prefer_chip: Optional[str] = None,
                       force_rule: Optional[str] = None) -> Case:
    """One case of ``template``: every dynamic parameter drawn from ``d`` by ``dist`` (the
    one drawing flow: campaigns and :func:`draw_case` both end here).

    Valid unless the draw breaks one documented rule (``dist.invalid_rate``; tag
    ``validity``). ``prefer_repeat`` forces a repeat class of the template's bucket,
    ``prefer_chip`` one of its products, ``force_rule`` the validity (``"valid"`` or the rule
    to break, when the case can break it). Tags name the coverage bins of the case
    (``combo``, ``repeat_class``, ``stride_regime``, ``mask``, ``data``, ...).

    Valid draws include values exactly at each limit (work_tensor of exactly the elements
    needed, a source tensor ending exactly at the last byte read, a tensor ending exactly at
    the end of the UB, strides of 65535 where they fit); illegal draws land exactly one step
    past the limit most of the time (:data:`BOUNDARY_RATE`).
    """
    t = template
    api, dtype, option = t.api, t.dtype, t.option
    chip_id = d.choice(list(t.chips))
    if prefer_chip in t.chips:
        chip_id = prefer_chip
    prof = get_chip(chip_id)
    ins = _ins(api)
    s = _size(dtype)
    ub_len = t.ub_bytes
    budget = min(ub_len, prof.ub_bytes) - 64
    mask, mkind = _campaign_mask(d, dist, t.mask_mode, dtype, ins.word_order)
    # repeat inside the bucket, by class weight
    classes = t.classes
    k = dist.pick(d, "repeat", classes)
    if prefer_repeat in classes:
        k = prefer_repeat
    lo, hi = t.r_lo, t.r_hi
    top = ins.repeat_range(option, dtype)[1]
    if ins.kernel.count_form:         # the top a valid call reaches in this UB
        top = max(min(lo, top), count_fitting(ins, option, dtype, budget, top))
        hi = min(hi, top)
    r = {"zero": 0, "one": 1, "max": top}.get(k)
    if r is None:
        a, b = max(lo, 2 if k == "small" else 9), min(hi, 8 if k == "small" else hi)
        if k == "mid" and b == top:
            b -= 1
        r = d.integers(a, max(a, b))
    if t.mask_mode == "counter":
        # the count decides the repeats; the case carries repeat = R (repeat_time is ignored:
        # tests/test_counter_mask.py varies it). Count 0 only where it is no error
        if r == 0 and prof.zero_mask == "error":
            r = 1
        mask, mkind = counter_mask(d, dist, dtype, r)
    span = max(r - 1, 0)
    tags = {"template": str(t), "combo": t.combo,
            "repeat_class": repeat_class(r, api, option, dtype, top),
            "mask_mode": t.mask_mode, "mask": f"{t.mask_mode}:{mkind}"}
    # destination / work first (their size does not depend on the source stride)
    bs: Optional[int] = None
    drs = 1
    if ins.has_blk_stride:
        bs = _named_stride(d, dist.pick(d, "blk_stride"))
        tags["blk_stride"] = "zero" if bs == 0 else ("unit" if bs == 1 else "gapped")
    if "dst_rep_stride" in ins.params:
        drs = _named_stride(d, dist.pick(d, "dst_stride"))
        if drs == 0 and not prof.dst_rep_stride_zero:
            drs = 1
        while drs > 1 and ins.dst_extent(r, dtype, option, drs) > budget // 2:
            drs //= 2
        tags["dst_stride"] = "zero" if drs == 0 else ("unit" if drs == 1 else "gapped")
    dst_bytes = _round_up(ins.dst_extent(r, dtype, option, drs), 32)
    work_n = work_bytes = 0
    if "work_tensor" in ins.operands:
        work_n = ins.work_elements(r, option, dtype) + d.choice([0, 0, 0, 16])
        work_bytes = _round_up(max(work_n, 1) * s, 32)
    src_budget = budget - dst_bytes - work_bytes - 64
    regime = dist.pick(d, "stride")
    hi_rs = min(65535, ins.rep_stride_fitting(r, src_budget, bs, dtype))
    rs = _stride(d, regime, hi_rs) if span else _stride(d, regime, 65535)
    if rs > hi_rs:                              # does not fit this UB: largest stride that does
        rs = hi_rs
    tags["stride_regime"] = ("zero" if rs == 0 else "overlap" if rs < 8 else "contiguous"
                             if rs == 8 else "gapped" if rs <= 24 else "large")
    if not span:
        tags["stride_regime"] = regime if regime in ("zero", "overlap", "contiguous") else "gapped"
        rs = 65535 if regime == "large" and d.chance(0.5) else min(rs, 4096)
    given = {"repeat": r, "dst_rep_stride": drs, "src_blk_stride": bs, "src_rep_stride": rs}
    params = {k: given[k] for k in ins.params}
    src_bytes = _round_up(ins.src_footprint(r, rs, bs, dtype), 32)
    src_n = src_bytes // s
    if r and d.chance(0.3):                     # at the limit: ends at the last byte read
        src_n = ins.read_extent(dtype, mask, r, rs, bs) // s
        tags["src_size"] = "exact"
    used = src_bytes + dst_bytes + work_bytes
    free = max(0, budget - used)
    base = d.integers(0, free // 32) * 32 if free >= 32 and d.chance(dist.offset_rate) else 0
    tensors = {"src": (base, src_n)}
    cursor = base + src_bytes
    # in place (dst inside src) where the instruction allows overlapping operands and no
    # repeat reads a result an earlier one wrote (the OVERLAP rule)
    in_place = (ins.kernel.overlap == "repeat" and d.chance(dist.in_place_rate)
                and dst_bytes <= src_bytes
                and (ins.kernel.count_form or _in_place_ok(ins, dtype, option, r, rs, drs)))
    ds = _size(ins.tensor_dtype("dst", dtype))        # dst may be wider (950 int sums)
    if in_place:
        tensors["dst"] = (base, dst_bytes // ds)
    else:
        gap = d.choice([0, 0, 32, 256])
        gap = gap if cursor + gap + dst_bytes + work_bytes <= budget else 0
        tensors["dst"] = (cursor + gap, dst_bytes // ds)
        cursor += gap + dst_bytes
    if "work_tensor" in ins.operands:
        tensors["work_tensor"] = (cursor, work_n)
    tags["layout"] = "in_place" if in_place else ("offset" if base else "at_zero")
    last = list(tensors)[-1]
    limit = min(ub_len, prof.ub_bytes)
    if not in_place and d.chance(0.1):          # at the limit: the last tensor ends at the UB end
        a, _ = tensors[last]
        tensors[last] = (a, max(limit - a, 0) // (ds if last == "dst" else s))
        tags["layout"] = "ub_end"
    saturate = None
    if ins.saturating and dtype == "float16":      # half only (not the 16-bit integers)
        saturate = {"default": None, "on": True, "off": False}[dist.pick(d, "saturate")]
        if saturate is False and prof.saturate_only:      # the only mode there: "off" is invalid
            saturate = None
        tags["saturate"] = {None: "default", True: "on", False: "off"}[saturate]
    kind = dist.pick(d, "data")
    tags["data"] = kind
    case = Case(api, chip_id, dtype, option, mask, params, tensors, np.zeros(0, np.uint8),
                saturate, tags)
    breaking = d.chance(dist.invalid_rate) if dist.invalid_rate else False
    if force_rule is not None:
        breaking = force_rule != "valid"
    if breaking:
        break_rule(d, case, t, dist, ub_len,
                   force=None if force_rule in (None, "valid") else force_rule)
    else:
        tags["validity"] = "valid"
    data_seed = d.data_seed()
    rng = np.random.default_rng(data_seed)
    ub = rng.integers(0, 256, ub_len, dtype=np.uint8)
    a, n = case.tensors["src"]
    a = min(max(a, 0), ub_len)
    nbytes = min(_round_up(n * _size(case.dtype), 32), ub_len - a)
    if nbytes > 0:
        ub[a:a + nbytes] = fill_ub(nbytes, case.dtype, kind, data_seed + 1)[:nbytes]
    case.ub = ub
    return case


# ------------------------------------------------------------------ the whole space --------

def _names(what: str, given: Any, every: Sequence[str]) -> list:
    """``apis`` / ``chips`` of :func:`space_template` as a list: None is ``every``, a string
    one name; an empty or non-string collection is BAD_ARGUMENT."""
    if given is None:
        return list(every)
    names = [given] if isinstance(given, str) else None
    if names is None and not isinstance(given, (bytes, dict)) and hasattr(given, "__iter__"):
        names = list(given)                       # a list, tuple, set, array, generator
    if not names or not all(isinstance(n, str) for n in names):
        raise ConstraintError(Code.BAD_ARGUMENT, api="draw_case", param=what, value=given,
                              allowed=f"None (every one), a name or a non-empty list of "
                                      f"names of {list(every)}")
    return names


def _space_args(d: Any, apis: Any, chips: Any, max_ub: Any, tik_max_repeat: Any
                ) -> Tuple[list, list]:
    """The checked arguments of :func:`space_template`: ``(apis, chips)`` as lists, every
    name known and at least one of ``apis`` on one of ``chips``."""
    if not all(callable(getattr(d, m, None)) for m in ("choice", "integers", "chance",
                                                        "data_seed")):
        raise ConstraintError(Code.BAD_ARGUMENT, api="draw_case", param="d",
                              value=type(d).__name__,
                              allowed="a draw: RngDraw(seed, case_id) or HypothesisDraw(data)")
    for name, v in (("max_ub", max_ub), ("tik_max_repeat", tik_max_repeat)):
        if not is_int(v) or v < 1:
            raise ConstraintError(Code.BAD_ARGUMENT, api="draw_case", param=name, value=v,
                                  allowed="an int >= 1")
    apis = _names("apis", apis, registry.names())
    chips = _names("chips", chips, all_chips())
    for a in apis:
        _ins(a)                                        # BAD_ARGUMENT naming an unknown API
    profs = [get_chip(c) for c in chips]               # CHIP_UNKNOWN naming an unknown one
    if not any(p.dtypes(a) for a in apis for p in profs):
        raise ConstraintError(Code.API_UNSUPPORTED, api="draw_case", param="apis", value=apis,
                              allowed=f"an API that one of chips {chips} has (pass chips "
                                      f"with these APIs, or None for every product)")
    return apis, chips


def space_template(d: Draw, apis: Optional[Sequence[str]] = None,
                   chips: Optional[Sequence[str]] = None, *, max_ub: int = 1 << 17,
                   tik_max_repeat: int = 4095, mask_modes: Sequence[str] = MASK_MODES) -> Template:
    """A one-product template drawn from ``d`` over the whole parameter space: an API of
    ``apis`` that one of ``chips`` has, a product that has it, one of its dtypes and options
    there, a mask mode, the documented repeat range (a TIK instruction's capped at
    ``tik_max_repeat``) and a UB of ``max_ub`` bytes (more where the largest repeat count
    needs it, at most the product's)."""
    apis, chips = _space_args(d, apis, chips, max_ub, tik_max_repeat)
    api = d.choice([a for a in apis if any(get_chip(c).dtypes(a) for c in chips)])
    chip_id = d.choice([c for c in chips if get_chip(c).dtypes(api)])
    prof = get_chip(chip_id)
    dtype = d.choice(list(prof.dtypes(api)) or ["float16"])
    ins = _ins(api)
    option = d.choice(ins.options(prof) or ins.options())
    modes = [m for m in ins.mask_modes if m != "counter" or counter_supported(chip_id)]
    mode = d.choice([m for m in mask_modes if m in modes] or modes)
    lo, hi = ins.repeat_range(option, dtype)
    if ins.family == "tik":
        hi = max(lo, min(hi, int(tik_max_repeat)))
    # at least room for the largest repeat count at stride 0 (work tensor included)
    least = (ins.src_footprint(hi, 0, 1, dtype) + ins.dst_extent(hi, dtype, option)
             + ins.work_elements(hi, option, dtype) * _size(dtype) + 512)
    return Template(api, (chip_id,), dtype, option, mode, lo, hi,
                    min(max(int(max_ub), _round_up(least, 64)), prof.ub_bytes))


@functools.lru_cache(maxsize=64)
def space_distributions(invalid_rate: float = 0.0, special_rate: float = 0.6) -> Distributions:
    """The weights of :func:`draw_case`: the campaign defaults, ``invalid_rate``, and source
    data that is adversarial (any kind but ``random_bits``) with probability about
    ``special_rate``."""
    kinds = CAMPAIGN_DATA_KINDS
    data = {k: float(special_rate) / len(kinds) for k in kinds}
    data["random_bits"] += 1.0 - float(special_rate)
    return Distributions({"data": data}, invalid_rate=float(invalid_rate))


def draw_case(d: Draw, *, apis: Optional[Sequence[str]] = None,
              chips: Optional[Sequence[str]] = None,
              invalid_rate: float = 0.0, max_ub: int = 1 << 17, tik_max_repeat: int = 4095,
              special_rate: float = 0.6) -> Case:
    """Draw one call over the whole parameter space: :func:`draw_campaign_case` of a
    :func:`space_template` with :func:`space_distributions`. Valid unless the draw breaks one
    rule (``invalid_rate``; tags ``validity`` and ``broken``: the :data:`BREAKERS` rule it
    broke, ``validity`` ``"valid"`` when none). The UB is ``max_ub`` bytes (see
    :func:`space_template`)."""
    check_rate("invalid_rate", invalid_rate)
    check_rate("special_rate", special_rate)
    t = space_template(d, apis, chips, max_ub=max_ub, tik_max_repeat=tik_max_repeat)
    case = draw_campaign_case(d, t, space_distributions(invalid_rate, special_rate))
    if case.tags["validity"] != "valid":
        case.tags["broken"] = case.tags["validity"]
    return case


@dataclass
class _Break:
    """What a breaker works on: the draw, the case (changed in place), its template and
    distributions, the UB length, whether to land exactly one step past the limit."""

    d: Any
    case: Case
    t: Template
    ub_len: int
    edge: bool
    ins: registry.Instruction
    prof: Any

    @property
    def s(self) -> int:
        return _size(self.case.dtype)

    @property
    def lanes(self) -> int:
        return masks.lanes_per_repeat(self.case.dtype)


@dataclass(frozen=True)
class Breaker:
    """One illegal-case breaker: the ``code`` the broken case is drawn to raise (where the
    product's rules make it an error), its ``name`` in campaign files and coverage bins,
    ``can(template, instruction, profile)`` and ``apply(_Break)`` (returns False when this
    case cannot break it after all: the case stays valid)."""

    code: Code
    name: str
    can: Callable[..., bool]
    apply: Callable[[_Break], Any]


def _b_mask_range(b: _Break) -> None:
    if isinstance(b.case.mask, masks.CounterMask):   # more repeats than the range allows
        top = b.ins.repeat_range(b.case.option, b.case.dtype)[1]
        b.case.mask = masks.CounterMask(top * b.lanes + (1 if b.edge else b.d.integers(2, 100)))
        return
    b.case.mask = b.lanes + (1 if b.edge else b.d.integers(2, 100))


def _b_mask_bits(b: _Break) -> None:
    c, d = b.case, b.d
    if b.ins.word_order == "tik" or b.lanes == 128:      # two words already: add a third
        c.mask = list(c.mask) + [d.integers(0, 2**64 - 1)]
    else:                                   # edge: lane 64 only, the first that is not
        c.mask = [c.mask[0], 1 if b.edge else d.integers(2, 2**64 - 1)]


def _b_zero_mask(b: _Break) -> None:
    m = b.case.mask
    b.case.mask = masks.CounterMask(0) if isinstance(m, masks.CounterMask) else \
        0 if isinstance(m, int) else [0] * len(m)


def _no_counter_host(t: "Template") -> list:
    """Products with the template's API and dtype but without the counter mask mode."""
    return [c for c in all_chips() if _supports(get_chip(c), t.api, t.dtype, t.option)
            and not counter_supported(c)]


def _b_mask_mode(b: _Break) -> None:
    b.case.chip = b.d.choice(_no_counter_host(b.t))


def _b_repeat_range(b: _Break) -> None:
    lo, hi = b.ins.repeat_range(b.case.option, b.case.dtype)
    b.case.params["repeat"] = hi + 1 if b.t.r_hi == hi else 0


def _b_stride_range(b: _Break) -> None:
    strides = [k for k in ("src_rep_stride", "src_blk_stride", "dst_rep_stride")
               if k in b.ins.params]
    key = b.d.choice(strides)
    b.case.params[key] = 65536 + (0 if b.edge else b.d.integers(1, 1000))


def _b_dst_stride_zero(b: _Break) -> None:
    b.case.params["dst_rep_stride"] = 0


def _b_align(b: _Break) -> None:
    c, s = b.case, b.s
    tn = c.tensors
    key = b.d.choice(["src", "dst"] + (["work_tensor"] if "work_tensor" in tn else []))
    align = b.ins.alignment(key, c.dtype, c.option)
    a, n = tn[key]
    step = s if align > s else 1            # the smallest step that breaks the alignment
    tn[key] = (a + (step if b.edge else max(1, align // 2)), n)


def _b_tensor_small(b: _Break) -> None:
    c, s, p = b.case, b.s, b.case.params
    a, n = c.tensors["src"]
    need = b.ins.read_extent(c.dtype, c.mask, p["repeat"], p.get("src_rep_stride", 8),
                             p.get("src_blk_stride")) // s
    if b.edge and need >= 1:                # the last element read is just past the end
        c.tensors["src"] = (a, need - 1)
    else:
        c.tensors["src"] = (a, max(n // 3, 1) if n > 1 else 0)


def _b_ub(b: _Break) -> None:
    tn, s = b.case.tensors, b.s
    key = b.d.choice(list(tn))
    a, n = tn[key]
    limit = min(b.ub_len, b.prof.ub_bytes)
    # past the UB's end (a tensor that starts past it already is: a few elements there)
    tn[key] = (a, max(limit - a, 0) // s + (1 if b.edge else b.d.integers(2, 64)))


def _b_overlap(b: _Break) -> None:
    tn, d = b.case.tensors, b.d
    if b.ins.kernel.overlap == "disjoint":
        x, y = d.choice([("dst", "src"), ("work_tensor", "src"), ("dst", "work_tensor")])
        tn[x] = (tn[y][0], tn[x][1])
    else:
        tn["dst"] = (tn["src"][0] + 32 * d.integers(0, 2), tn["dst"][1])


def _b_dtype(b: _Break) -> None:
    c = b.case
    c.dtype = b.d.choice([x for x in CAMPAIGN_DTYPES if x not in b.prof.dtypes(c.api)])


def _b_api_unsupported(b: _Break) -> None:
    c = b.case
    c.chip = b.d.choice([x for x in all_chips() if not get_chip(x).dtypes(c.api)])


def _b_order_unsupported(b: _Break) -> None:
    b.case.option = b.d.choice([o for o in b.ins.options() if o not in b.ins.options(b.prof)])


def _b_work_small(b: _Break) -> None:
    c = b.case
    a, n = c.tensors["work_tensor"]
    need = b.ins.work_elements(c.params["repeat"], c.option, c.dtype)
    c.tensors["work_tensor"] = (a, max(need - (1 if b.edge else b.d.integers(2, 4)), 0))


def _b_index_overflow(b: _Break) -> bool:
    # source offsets of the last repeat pass 65535: an error if that repeat wins
    c, s, p, tn = b.case, b.s, b.case.params, b.case.tensors
    room = min(b.ub_len, b.prof.ub_bytes)
    dst_bytes = tn["dst"][1] * s
    # the case's repeat count, else its bucket's shortest (a long repeat range); its work
    # tensor, else just the elements needed (one stretched to the UB's end leaves no room)
    fit = None
    for r in (p["repeat"], max(b.t.r_lo, 2)):
        rs = -(-4096 // (r - 1))
        src_bytes = _round_up(b.ins.src_footprint(r, rs, dtype=c.dtype), 32)
        for work in (tn["work_tensor"][1], b.ins.work_elements(r, c.option, c.dtype)):
            if fit is None and src_bytes + dst_bytes + work * s + 64 <= room:
                fit = (r, rs, src_bytes, work)
    if fit is None:
        return False
    r, rs, src_bytes, work = fit
    if r != p["repeat"]:
        p["repeat"] = r
        c.tags["repeat_class"] = repeat_class(r, c.api, c.option, c.dtype)
    tn["work_tensor"] = (tn["work_tensor"][0], work)
    p["src_rep_stride"] = rs
    tn["src"] = (0, src_bytes // s)
    tn["dst"] = (src_bytes, tn["dst"][1])
    tn["work_tensor"] = (src_bytes + dst_bytes, tn["work_tensor"][1])
    return True


def _b_saturate_dtype(b: _Break) -> None:
    b.case.saturate = True


def _always(t: Template, ins: registry.Instruction, prof: Any) -> bool:
    return True


#: Every illegal-case breaker, keyed by the code it aims at, in campaign order. ``can`` reads
#: the instruction's declaration (parameters, work tensor, option, codes), never its name.
BREAKERS: Dict[Code, Breaker] = {b.code: b for b in [
    Breaker(Code.MASK_RANGE, "mask_range",
            lambda t, i, p: t.mask_mode in ("count", "counter") and not i.kernel.count_form,
            _b_mask_range),
    Breaker(Code.MASK_BITS, "mask_bits", lambda t, i, p: t.mask_mode == "bits", _b_mask_bits),
    Breaker(Code.MASK_MODE, "mask_mode",
            lambda t, i, p: t.mask_mode == "counter" and bool(_no_counter_host(t)),
            _b_mask_mode),
    Breaker(Code.MASK_ZERO, "zero_mask", lambda t, i, p: not i.kernel.count_form,
            _b_zero_mask),
    Breaker(Code.REPEAT_RANGE, "repeat_range",
            lambda t, i, p: t.mask_mode != "counter" and (
                t.r_hi == i.repeat_range(t.option, t.dtype)[1]
                or (i.repeat_range(t.option, t.dtype)[0] >= 1 and t.r_lo <= 1)),
            _b_repeat_range),
    Breaker(Code.STRIDE_RANGE, "stride_range", lambda t, i, p: bool(i.kernel.strides),
            _b_stride_range),
    Breaker(Code.DST_STRIDE_ZERO, "dst_stride_zero",
            lambda t, i, p: "dst_rep_stride" in i.params and not p.dst_rep_stride_zero,
            _b_dst_stride_zero),
    Breaker(Code.ALIGN, "align", _always, _b_align),
    Breaker(Code.TENSOR_BOUNDS, "tensor_small", _always, _b_tensor_small),
    Breaker(Code.UB_BOUNDS, "ub", _always, _b_ub),
    Breaker(Code.OVERLAP, "overlap", _always, _b_overlap),
    Breaker(Code.DTYPE_UNSUPPORTED, "dtype",
            lambda t, i, p: any(dt not in p.dtypes(t.api) for dt in CAMPAIGN_DTYPES), _b_dtype),
    Breaker(Code.API_UNSUPPORTED, "api_unsupported",
            lambda t, i, p: any(not get_chip(c).dtypes(t.api) for c in all_chips()),
            _b_api_unsupported),
    Breaker(Code.ORDER_UNSUPPORTED, "order_unsupported",
            lambda t, i, p: Code.ORDER_UNSUPPORTED in i.codes
            and len(i.options(p)) < len(i.options()), _b_order_unsupported),
    Breaker(Code.WORK_SIZE, "work_small", lambda t, i, p: Code.WORK_SIZE in i.codes,
            _b_work_small),
    Breaker(Code.INDEX_OVERFLOW, "index_overflow",
            lambda t, i, p: Code.INDEX_OVERFLOW in i.codes and i.has_index(t.option, t.dtype)
            and t.r_hi >= 2 and not i.kernel.count_form and t.mask_mode != "counter",
            _b_index_overflow),   # counter mode: the index may not follow srcRepStride (§R)
    Breaker(Code.SATURATE_DTYPE, "saturate_dtype",
            lambda t, i, p: t.dtype == "float32" and i.saturating, _b_saturate_dtype),
]}
_BY_NAME = {b.name: b for b in BREAKERS.values()}
assert [b.name for b in BREAKERS.values()] == INVALID_RULES


def break_rule(d: Draw, case: Case, t: Template, dist: Distributions, ub_len: int,
               force: Optional[str] = None) -> None:
    """Break one documented rule (a :data:`BREAKERS` entry) without leaving the template's
    compiled shape (``force``: that rule, when this case can break it); tag ``validity``.
    Most draws land exactly one step past the limit (:data:`BOUNDARY_RATE`)."""
    ins = _ins(case.api)
    prof = get_chip(case.chip)
    p = case.params
    ok = breakable_rules(t, case.chip)
    if "index_overflow" in ok and p["repeat"] < 2:
        ok.discard("index_overflow")
    if case.saturate is not None:
        ok.discard("saturate_dtype")
    live = [r for r in sorted(ok, key=INVALID_RULES.index) if dist.weight("invalid", r) > 0]
    if force in ok:
        live = [force]
    if not live:
        case.tags["validity"] = "valid"
        return
    edge = d.chance(BOUNDARY_RATE)            # exactly one step past the limit
    if force in ok:
        edge = True                             # the cover's own case of a rule: the edge
    what = dist.pick(d, "invalid", live)
    case.tags["validity"] = what
    if _BY_NAME[what].apply(_Break(d, case, t, ub_len, edge, ins, prof)) is False:
        case.tags["validity"] = "valid"

