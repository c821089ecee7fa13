"""The C heap's thresholds for the batched kernels (glibc ``malloc``), set once at import.

XLA:CPU allocates a kernel's outputs and temporaries with ``malloc``. glibc serves a block
of at least ``M_MMAP_THRESHOLD`` bytes (128 KiB at start) with a fresh ``mmap`` and returns
it with ``munmap`` when freed, so every call of a kernel whose buffers are larger faults in
every page of them again (a zero fill each). glibc raises the threshold itself, up to 32 MiB
(and the trim threshold to twice that), but only after the process has freed such a mapped
block: whether a kernel runs at its speed then depends on what the process did before.
Measured here, run_batch's ReduceDataBlock SUM float kernel (R = 255, 128 cases, the same
executable and inputs): 4.0-5.3 ms a call in a fresh process, 1.2-1.4 ms once the
thresholds were raised, or in a process that had freed a large block earlier.

:func:`tune` sets both thresholds to the values glibc would reach on its own (mmap 32 MiB,
trim 64 MiB), so the kernels run at their speed from the first call. Blocks above 32 MiB
are still mapped and unmapped, and the heap keeps at most 64 MiB of freed memory at its top
before returning it. ``$ASCEND_REF_MALLOPT=off`` leaves the heap alone; a C library other
than glibc is left alone too.

>>> from ascend_ref import heap
>>> heap.STATE in ("set", "off", "unsupported")
True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

#: glibc ``mallopt`` parameters (``malloc.h``)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc's own upper bound for its dynamic mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
#: what :func:`tune` did in this process: ``"set"``, ``"off"`` (the environment said so) or
#: ``"unsupported"`` (no glibc ``mallopt``)
STATE = "unset"


def tune() -> str:
    """Set glibc's mmap and trim thresholds (module docstring) unless
    ``$ASCEND_REF_MALLOPT`` is ``off``; returns (and records in :data:`STATE`) what it did.
    Calling it again does nothing more."""
    global STATE
    if STATE != "unset":
        return STATE
    if os.environ.get("ASCEND_REF_MALLOPT", "").strip().lower() in ("off", "0", "no", "false"):
        STATE = "off"
        return STATE
    STATE = "unsupported"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version          # glibc only: other C libraries read mallopt otherwise
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return STATE
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and \
            mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1:
        STATE = "set"
    return STATE


__all__ = ["tune", "STATE", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]
