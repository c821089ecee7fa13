"""Scalar numerics of the oracle: element formats, IEEE add, min/max selection.

Everything here works on raw integer bit patterns with plain Python integers, so the
results do not depend on the FPU state of the process (XLA may set FTZ/DAZ on threads it
uses) nor on numpy's float16 conversion path. A float add is computed exactly as an
integer times a power of two and then rounded once (round to nearest, ties to even) to the
operand format: this is the IEEE-754 definition of a correctly rounded add.

Rules implemented (docs/SEMANTICS.md §D):

* NaN operands: ``a`` NaN → ``a`` quieted; else ``b`` NaN → ``b`` quieted; ``inf - inf`` →
  the profile's default NaN.
* Exact zero sums: ``-0 + -0 = -0``, every other exact zero is ``+0``.
* ``fp32_ftz``: float32 subnormal inputs read as signed zero, subnormal results (after
  rounding) flushed to signed zero.
* Saturation (float16 only): after every add NaN → +0 and ±inf → ±65504.
* Integers: wrap-around add.
* Min/max: the lowest-index NaN wins; otherwise compare by value with -0 < +0; ties keep
  the lowest index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Sequence, Tuple


@dataclass(frozen=True)
class Fmt:
    name: str
    size: int          # bytes
    is_float: bool
    signed: bool = True
    p: int = 0         # float precision (bits, including the hidden bit)
    ebits: int = 0     # float exponent field width

    @property
    def nbits(self) -> int:
        return 8 * self.size

    @property
    def mask(self) -> int:
        return (1 << self.nbits) - 1

    @property
    def sign_bit(self) -> int:
        return 1 << (self.nbits - 1)

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def exp_all_ones(self) -> int:
        return (1 << self.ebits) - 1

    @property
    def frac_mask(self) -> int:
        return (1 << (self.p - 1)) - 1

    @property
    def quiet_bit(self) -> int:
        return 1 << (self.p - 2)

    @property
    def max_finite(self) -> int:
        """Bits of the largest finite positive value."""
        return ((self.exp_all_ones - 1) << (self.p - 1)) | self.frac_mask


FORMATS = {
    "float16": Fmt("float16", 2, True, p=11, ebits=5),
    "float32": Fmt("float32", 4, True, p=24, ebits=8),
    "int16": Fmt("int16", 2, False, signed=True),
    "uint16": Fmt("uint16", 2, False, signed=False),
    "int32": Fmt("int32", 4, False, signed=True),
    "uint32": Fmt("uint32", 4, False, signed=False),
    # the Ascend 950 level-2 count form only (ReduceSum / ReduceMax / ReduceMin 数据类型)
    "int64": Fmt("int64", 8, False, signed=True),
    "uint64": Fmt("uint64", 8, False, signed=False),
}


# ---------------------------------------------------------------- classification

def exp_field(b: int, f: Fmt) -> int:
    return (b >> (f.p - 1)) & f.exp_all_ones


def is_nan(b: int, f: Fmt) -> bool:
    return f.is_float and exp_field(b, f) == f.exp_all_ones and (b & f.frac_mask) != 0


def is_inf(b: int, f: Fmt) -> bool:
    return f.is_float and exp_field(b, f) == f.exp_all_ones and (b & f.frac_mask) == 0


def is_zero(b: int, f: Fmt) -> bool:
    return (b & ~f.sign_bit & f.mask) == 0 if f.is_float else b == 0


def is_subnormal(b: int, f: Fmt) -> bool:
    return f.is_float and exp_field(b, f) == 0 and (b & f.frac_mask) != 0


def sign_of(b: int, f: Fmt) -> int:
    return 1 if b & f.sign_bit else 0


def decode_finite(b: int, f: Fmt) -> Tuple[int, int, int]:
    """(sign, M, E) with value = (-1)**sign * M * 2**E (exact)."""
    e = exp_field(b, f)
    frac = b & f.frac_mask
    emin = 1 - f.bias
    if e == 0:
        return sign_of(b, f), frac, emin - (f.p - 1)
    return sign_of(b, f), frac | (1 << (f.p - 1)), e - f.bias - (f.p - 1)


def encode(sign: int, n: int, e: int, f: Fmt) -> int:
    """Round (-1)**sign * n * 2**e (n > 0) to format f, round to nearest, ties to even."""
    assert n > 0
    p = f.p
    emin = 1 - f.bias
    ev = n.bit_length() - 1 + e                 # exponent of the exact value
    q = max(ev, emin) - (p - 1)                 # exponent of one unit in the last place
    if e >= q:
        m = n << (e - q)
    else:
        sh = q - e
        m = n >> sh
        rem = n - (m << sh)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and (m & 1)):
            m += 1
    if m == (1 << p):                           # rounding carried into a new binade
        m >>= 1
        q += 1
    sbit = f.sign_bit if sign else 0
    if m >= (1 << (p - 1)):                     # normal
        ef = q + (p - 1) + f.bias
        if ef >= f.exp_all_ones:                # overflow → ±inf
            return sbit | (f.exp_all_ones << (p - 1))
        return sbit | (ef << (p - 1)) | (m - (1 << (p - 1)))
    return sbit | m                             # subnormal (q == emin - (p - 1))


def to_float(b: int, f: Fmt) -> float:
    """Exact Python float of a non-NaN float value (float16/float32 fit exactly in a double)."""
    if is_inf(b, f):
        return -math.inf if sign_of(b, f) else math.inf
    s, m, e = decode_finite(b, f)
    v = math.ldexp(m, e)
    return -v if s else v


def to_int(b: int, f: Fmt) -> int:
    if f.signed and b & f.sign_bit:
        return b - (1 << f.nbits)
    return b


# ---------------------------------------------------------------- add

def add(a: int, b: int, f: Fmt, *, default_nan: int, ftz: bool = False,
        saturate: bool = False) -> int:
    """One add ``a + b`` (``a`` is the lower-index operand), result bits."""
    if not f.is_float:
        return (a + b) & f.mask
    flush = ftz and f.name == "float32"
    if flush:
        if is_subnormal(a, f):
            a &= f.sign_bit
        if is_subnormal(b, f):
            b &= f.sign_bit
    if is_nan(a, f):
        r = a | f.quiet_bit
    elif is_nan(b, f):
        r = b | f.quiet_bit
    elif is_inf(a, f) and is_inf(b, f):
        r = a if sign_of(a, f) == sign_of(b, f) else default_nan
    elif is_inf(a, f):
        r = a
    elif is_inf(b, f):
        r = b
    else:
        sa, ma, ea = decode_finite(a, f)
        sb, mb, eb = decode_finite(b, f)
        e0 = min(ea, eb)
        na = (ma << (ea - e0)) * (-1 if sa else 1)
        nb = (mb << (eb - e0)) * (-1 if sb else 1)
        n = na + nb
        if n == 0:
            # exact zero: -0 only for (-0) + (-0); x + (-x) and (+0) + (-0) give +0
            r = f.sign_bit if (a == f.sign_bit and b == f.sign_bit) else 0
        else:
            r = encode(1 if n < 0 else 0, abs(n), e0, f)
        if flush and is_subnormal(r, f):
            r &= f.sign_bit
    if saturate and f.name == "float16":
        if is_nan(r, f):
            r = 0
        elif is_inf(r, f):
            r = (r & f.sign_bit) | f.max_finite
    return r


def int_sum(vals: Sequence[int], src: Fmt, dst: Fmt, *, clamp: bool = False) -> int:
    """Integer sum of ``src`` words into a ``dst`` word: each value read as a ``src`` integer
    (signed or not), summed exactly, stored modulo 2**bits of ``dst``; ``clamp``: the
    pairwise tree of adds each clamped to ``dst``'s range (the audit's alternative)."""
    ints = [to_int(v, src) for v in vals]
    if not clamp:
        return sum(ints) & dst.mask
    lo, hi = (-(1 << (dst.nbits - 1)), (1 << (dst.nbits - 1)) - 1) if dst.signed else \
        (0, dst.mask)
    while len(ints) > 1:
        ints = [min(hi, max(lo, ints[k] + ints[k + 1])) for k in range(0, len(ints), 2)]
    return ints[0] & dst.mask


def tree_sum(vals: Sequence[int], f: Fmt, **kw) -> int:
    """Pairwise tree over a power-of-two vector: v0+v1, v2+v3, …, then again, until one."""
    vals = list(vals)
    n = len(vals)
    assert n >= 1 and (n & (n - 1)) == 0, n
    while len(vals) > 1:
        vals = [add(vals[k], vals[k + 1], f, **kw) for k in range(0, len(vals), 2)]
    return vals[0]


# ---------------------------------------------------------------- min / max

def less(a: int, b: int, f: Fmt) -> bool:
    """Strict ``a < b`` for non-NaN values, with -0 < +0."""
    if not f.is_float:
        return to_int(a, f) < to_int(b, f)
    va, vb = to_float(a, f), to_float(b, f)
    if va != vb:
        return va < vb
    if va == 0.0:                               # both zeros: only -0 < +0
        return sign_of(a, f) == 1 and sign_of(b, f) == 0
    return False


def select(items: Sequence[Tuple[int, int]], f: Fmt, kind: str) -> Tuple[int, int]:
    """Winner ``(index, bits)`` of ``items`` (given in increasing index order) for
    ``kind`` "MIN" / "MAX": first NaN, else the extreme value, ties → first index."""
    assert items
    for idx, bits in items:
        if is_nan(bits, f):
            return idx, bits
    best_idx, best = items[0]
    for idx, bits in items[1:]:
        better = less(bits, best, f) if kind == "MIN" else less(best, bits, f)
        if better:
            best_idx, best = idx, bits
    return best_idx, best


def cascade_need(repeat: int, epb: int, lanes: int) -> int:
    """Work elements a TIK min/max with cal_index needs for a concrete repeat count
    (SPEC §5.1): from n = 2R, add ceil(n/epb)*epb per stage until a stage outputs 2, +2."""
    n = 2 * repeat
    total = 0
    while True:
        start = -(-n // epb) * epb
        out = -(-n // lanes) * 2
        total += start
        if out == 2:
            break
        n = out
    return total + 2


def lanes_from_words(words: List[int]) -> List[int]:
    """Lanes whose bit is set, word k covering lanes 64k … 64k+63, LSB first."""
    lanes = []
    for k, w in enumerate(words):
        for j in range(64):
            if (w >> j) & 1:
                lanes.append(64 * k + j)
    return lanes
