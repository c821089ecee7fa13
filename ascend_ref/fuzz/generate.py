"""Random calls over the parameter space: legal and illegal, with adversarial data.

One generator serves the hypothesis tests (``HypothesisDraw``: shrinkable draws) and the
seeded fuzz campaigns (``RngDraw``: numpy, replayable from ``(seed, case_id)``). A
:class:`Case` is a complete, self-contained call: API, product, dtype, option, mask,
parameters, tensors and the UB bytes before the call.

>>> from ascend_ref.fuzz.generate import RngDraw, draw_case
>>> c = draw_case(RngDraw(seed=1, case_id=0), apis=["whole_reduce_min"], chips=["atlas_a2"])
>>> c.api, c.chip, c.ub.dtype.name
('whole_reduce_min', 'atlas_a2', 'uint8')
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..case import TIK, Case
from ..chips import API_NAMES, chip as get_chip, chips as all_chips

ORDERS = ["ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE", "ORDER_ONLY_VALUE", "ORDER_ONLY_INDEX"]
REDUCE_TYPES = ["SUM", "MAX", "MIN"]
STRIDE_REGIMES = ["zero", "overlap", "contiguous", "gapped", "large"]
DATA_KINDS = ["random_bits", "ties", "specials", "subnormal", "saturating", "mixed"]


# ------------------------------------------------------------------ draws ------------------

class RngDraw:
    """Draws from numpy's PCG64 seeded by ``(seed, case_id)``: any case replays exactly."""

    def __init__(self, seed: int, case_id: int):
        self.rng = np.random.default_rng([int(seed), int(case_id)])

    def integers(self, lo: int, hi: int) -> int:          # inclusive
        if hi - lo >= 2**62:                              # 64-bit mask words
            return lo + (int(self.rng.integers(0, 2**32)) << 32 | int(self.rng.integers(0, 2**32))) % (hi - lo + 1)
        return int(self.rng.integers(lo, hi + 1))

    def choice(self, seq: Sequence, weights: Optional[Sequence[float]] = None):
        p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
        return seq[int(self.rng.choice(len(seq), p=p))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def data_seed(self) -> int:
        return int(self.rng.integers(0, 2**63))


class HypothesisDraw:
    """The same interface over ``hypothesis.strategies.data()``: shrinks towards simple calls."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def integers(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, seq: Sequence, weights=None):
        return seq[self.data.draw(self.st.integers(0, len(seq) - 1))]

    def chance(self, p: float) -> bool:
        return self.data.draw(self.st.integers(0, 999)) < int(p * 1000)

    def data_seed(self) -> int:
        return self.data.draw(self.st.integers(0, 2**32 - 1))


# ------------------------------------------------------------------ generation -------------

def _size(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


def _mask(d, dtype: str, tik: bool):
    lanes = 256 // _size(dtype)
    mode = d.choice(["count", "bits"])
    if mode == "count":
        return d.choice([lanes, d.integers(1, lanes), 1, d.integers(1, 16)])
    density = d.choice(["full", "sparse", "dense", "blocks", "one"])
    words = []
    for _ in range(lanes // 64):
        if density == "full":
            w = 2**64 - 1
        elif density == "one":
            w = 1 << d.integers(0, 63)
        elif density == "blocks":
            w = int(sum(0xFFFF << (16 * k) for k in range(4) if d.chance(0.5)))
        else:
            w = d.integers(0, 2**64 - 1)
            w2 = d.integers(0, 2**64 - 1)
            w = (w & w2) if density == "sparse" else (w | w2)
        words.append(w)
    if not any(words):
        words[0] = 1
    if tik:
        return [words[1], words[0]] if len(words) == 2 else [0, words[0]]
    return words


def _stride(d, regime: str, hi: int) -> int:
    if regime == "zero":
        return 0
    if regime == "overlap":
        return d.integers(1, 7)
    if regime == "contiguous":
        return 8
    if regime == "gapped" or hi < 25:
        return d.integers(9, max(9, min(24, hi)))
    return d.integers(25, hi)


def fill_ub(nbytes: int, dtype: str, kind: str, seed: int) -> np.ndarray:
    """UB bytes with adversarial element values (``kind`` from :data:`DATA_KINDS`)."""
    rng = np.random.default_rng(seed)
    s = _size(dtype)
    n = nbytes // s
    bits_t = np.dtype(f"uint{8 * s}")
    raw = rng.integers(0, 2 ** (8 * s), n, dtype=np.uint64).astype(bits_t)
    if kind == "random_bits":
        return raw.view(np.uint8)
    is_float = dtype.startswith("float")
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
        ext = np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dtype).view(bits_t)
        small = rng.integers(-3 if info.min < 0 else 0, 4, n).astype(dtype).view(bits_t)
        pools = {"ties": [small], "specials": [ext[rng.integers(0, len(ext), n)], small],
                 "subnormal": [small, raw], "saturating": [ext[rng.integers(0, len(ext), n)], raw],
                 "mixed": [raw, small, ext[rng.integers(0, len(ext), n)]]}[kind]
    pick = rng.integers(0, len(pools), n)
    out = np.choose(pick, pools) if len(pools) > 1 else pools[0]
    return np.ascontiguousarray(out.astype(bits_t)).view(np.uint8)


def slot_bytes(api: str, dtype: str, option) -> int:
    s = _size(dtype)
    if api in ("whole_reduce_min", "whole_reduce_max"):
        return {"ORDER_VALUE_INDEX": 2 * s, "ORDER_INDEX_VALUE": 2 * s,
                "ORDER_ONLY_VALUE": s, "ORDER_ONLY_INDEX": 4}[option]
    return 8 * s if api == "reduce_data_block" else s


def tik_work_need(api: str, r: int, cal_index: bool) -> int:
    if api == "vec_reduce_add":
        return r
    if not cal_index:
        return 2 * r
    n, need = 2 * r, 0
    while True:
        start, out = _round_up(n, 16), -(-n // 128) * 2
        need += start
        n = out
        if out == 2:
            return need + 2


def draw_case(d, *, apis: Sequence[str] = API_NAMES, chips: Optional[Sequence[str]] = None,
              invalid_rate: float = 0.0, max_ub: int = 1 << 17, tik_max_repeat: int = 4095,
              special_rate: float = 0.6) -> Case:
    """Draw one call. Valid unless the draw chooses to break one rule (``invalid_rate``)."""
    chips = list(chips or all_chips())
    api = d.choice([a for a in apis if any(get_chip(c).dtypes(a) for c in chips)] or list(apis))
    hosts = [c for c in chips if get_chip(c).dtypes(api)] or chips
    chip_id = d.choice(hosts)
    prof = get_chip(chip_id)
    dtype = d.choice(list(prof.dtypes(api)) or ["float16"])
    s, tik = _size(dtype), api in TIK
    option: Any = None
    if api in ("whole_reduce_min", "whole_reduce_max"):
        option = d.choice(list(prof.orders) or ORDERS)
    elif api == "reduce_data_block":
        option = d.choice(REDUCE_TYPES)
    elif api in ("vec_reduce_min", "vec_reduce_max"):
        option = d.chance(0.5)
    mask = _mask(d, dtype, tik)
    regime = d.choice(STRIDE_REGIMES)
    if tik:
        hi_rep = 511 if option is True else tik_max_repeat
        r = d.choice([1, 2, d.integers(1, 16), d.integers(1, 300), hi_rep,
                      d.integers(1, hi_rep)])
    else:
        r = d.choice([0, 1, d.integers(1, 8), d.integers(1, 255), 255])
    budget = max_ub // 2
    span = max(r - 1, 1)
    rs = _stride(d, regime, min(65535, budget // (32 * span)))
    params = {"repeat": r, "src_rep_stride": rs}
    tags = {"stride_regime": regime, "mask_mode": "count" if isinstance(mask, int) else "bits"}
    if tik:
        src_bytes = (max(r, 1) - 1) * rs * 32 + 256
    else:
        bs = d.choice([1, 1, 0, 2, d.integers(3, 16)])
        drs = d.choice([1, 1, 0, 2, d.integers(3, 9)])
        if not prof.dst_rep_stride_zero and drs == 0:
            drs = 1
        params = {"repeat": r, "dst_rep_stride": drs, "src_blk_stride": bs, "src_rep_stride": rs}
        src_bytes = (max(r, 1) - 1) * rs * 32 + 7 * bs * 32 + 32
        tags["blk_stride"] = "zero" if bs == 0 else ("unit" if bs == 1 else "gapped")
    src_bytes = _round_up(src_bytes, 32)
    tensors = {"src": (0, src_bytes // s)}
    cursor = src_bytes
    if tik:
        tensors["dst"] = (cursor, 16 if s == 2 else 8)
        cursor += 32
        need = tik_work_need(api, r, option is True)
        tensors["work_tensor"] = (cursor, need + d.choice([0, 0, 16]))
        cursor += _round_up(tensors["work_tensor"][1] * s, 32)
    else:
        slot = slot_bytes(api, dtype, option)
        dst_bytes = slot * ((max(r, 1) - 1) * params["dst_rep_stride"] + 1)
        if d.chance(0.1):                       # in place: dst inside src
            tensors["dst"] = (0, _round_up(dst_bytes, 32) // s)
            cursor = max(cursor, _round_up(dst_bytes, 32))
        else:
            tensors["dst"] = (cursor, _round_up(dst_bytes, 32) // s)
            cursor += _round_up(dst_bytes, 32)
    saturate = None
    if api in ("whole_reduce_sum", "reduce_data_block", "vec_reduce_add") and s == 2:
        saturate = d.choice([None, True, False])
    kind = d.choice(DATA_KINDS) if d.chance(special_rate) else "random_bits"
    tags["data"] = kind
    case = Case(api, chip_id, dtype, option, mask, params, tensors,
                np.zeros(0, np.uint8), saturate, tags)
    ub_size = _round_up(cursor + 64, 64)
    if invalid_rate and d.chance(invalid_rate):
        ub_size = _break_one_rule(d, case, ub_size)
    case.ub = fill_ub(ub_size, dtype, kind, d.data_seed())
    return case


def _break_one_rule(d, case: Case, ub_size: int) -> int:
    """Make the case violate one documented rule (tagged ``broken``); returns the UB size."""
    tik = case.api in TIK
    s = _size(case.dtype)
    lanes = 256 // s
    choices = ["mask_range", "repeat_range", "stride_range", "align", "tensor_small", "ub",
               "zero_mask", "dtype", "overlap"]
    if not tik:
        choices.append("dst_stride_zero")
    else:
        choices += ["work_small", "index_overflow"]
    what = d.choice(choices)
    case.tags["broken"] = what
    p, t = case.params, case.tensors
    if what == "mask_range":
        case.mask = lanes + d.integers(1, 100)
    elif what == "repeat_range":
        p["repeat"] = (4096 if case.option is not True else 512) if tik else 256
    elif what == "stride_range":
        p["src_rep_stride"] = 65536 + d.integers(0, 10)
    elif what == "align":
        a, n = t["dst"]
        t["dst"] = (a + s, n)
    elif what == "tensor_small":
        a, n = t["src"]
        t["src"] = (a, max(n // 3, 1))
    elif what == "ub":
        return max(64, (t["src"][1] * s) // 2 // 64 * 64)
    elif what == "zero_mask":
        case.mask = 0
    elif what == "dtype":
        case.dtype = d.choice(["int16", "uint32", "float32", "float16"])
    elif what == "overlap":
        t["dst"] = (t["src"][0], t["dst"][1])
    elif what == "dst_stride_zero":
        p["dst_rep_stride"] = 0
    elif what == "work_small":
        a, n = t["work_tensor"]
        t["work_tensor"] = (a, max(n - d.integers(1, 4), 0))
    elif what == "index_overflow" and case.api != "vec_reduce_add":
        # repeat 1 starts 4096 blocks on: its source offsets are >= 65536 (invalid if it wins)
        case.option, p["repeat"], p["src_rep_stride"] = True, 2, 4096
        src_bytes = 4096 * 32 + 256
        t["src"] = (0, src_bytes // s)
        t["dst"] = (src_bytes, t["dst"][1])
        t["work_tensor"] = (src_bytes + 32, 18)
        return src_bytes + 32 + 64 + 64
    return ub_size
