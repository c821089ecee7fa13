"""CRC-32 of a large buffer on two cores: the two halves in parallel, then combined.

Reading a dump checks every archive member's CRC-32 (zip's own check: a damaged file is
reported, never verified). A stacked file's region columns are tens of megabytes, and the
check is one pass at the speed of the CRC loop (libdeflate's ~13 GB/s, zlib's less) on one
core while the other waits. Both libraries release the GIL for such a buffer, so the second
half runs in a worker thread, and the two CRCs are joined with the CRC of a concatenation::

    crc(A + B) = crc(A) * x^(8 * len(B))  +  crc(B)        (polynomials modulo P)

(zlib's ``crc32_combine``, which Python's ``zlib`` module does not expose; the arithmetic
below follows its ``multmodp`` / ``x2nmodp``: reflected bit order, P = 0xEDB88320).

>>> import zlib
>>> a, b = b"ascend" * 1000, b"_ref" * 999
>>> combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)
True
>>> crc32_split(zlib.crc32, memoryview(a + b), split_at=10) == zlib.crc32(a + b)
True
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from .parallel import SPLIT_MIN, both, two_cores

#: the reflected CRC-32 polynomial (zip, zlib, libdeflate)
_POLY = 0xEDB88320


def _mult_mod_p(a: int, b: int) -> int:
    """``a * b`` modulo P, both polynomials of degree < 32 in reflected order (``a`` nonzero)."""
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _x2n_table() -> List[int]:
    """``x^(2^k)`` modulo P for k = 0..31 (x itself is 1 << 30 in reflected order)."""
    out = [1 << 30]
    for _ in range(31):
        out.append(_mult_mod_p(out[-1], out[-1]))
    return out


_X2N = _x2n_table()


def _x8n_mod_p(n: int) -> int:
    """``x^(8 n)`` modulo P: the shift of a CRC past ``n`` bytes."""
    p, k = 1 << 31, 3                     # 1 << 31 is the polynomial 1
    while n:
        if n & 1:
            p = _mult_mod_p(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of ``A + B`` from ``crc1 = crc32(A)``, ``crc2 = crc32(B)`` and ``len(B)``."""
    return _mult_mod_p(_x8n_mod_p(len2), crc1) ^ crc2 if len2 else crc1


def crc32_split(one: Callable[[Any], int], data: memoryview,
                split_at: Optional[int] = None) -> int:
    """``one(data)`` (a CRC-32 of a bytes-like object that releases the GIL, e.g.
    ``zlib.crc32``) computed as two halves in parallel when ``data`` is at least
    :data:`SPLIT_MIN` bytes (``split_at``: the split point, for tests) and the machine has a
    second core; the same value."""
    n = data.nbytes
    if split_at is None:
        if n < SPLIT_MIN or not two_cores():
            return one(data)
        split_at = n // 2
    first, second = both(lambda: one(data[:split_at]), lambda: one(data[split_at:]))
    return combine(first, second, n - split_at)


__all__ = ["SPLIT_MIN", "combine", "crc32_split"]
