"""Two halves of a memory-bound job on two cores: one in a worker thread, one here.

Reading and checking a stacked dump is a few passes over tens of megabytes (CRC-32 of the
archive members, assembling the kernels' windows, comparing the device's bytes), each a
call into C that releases the GIL (zlib, libdeflate and ``memcmp`` through ctypes, numpy's
copies). On a machine with a second core, :func:`both` runs the second half of such a pass
in one shared worker thread while the caller runs the first.

>>> both(lambda: 1 + 1, lambda: "two")
(2, 'two')
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, Tuple, TypeVar

A = TypeVar("A")
B = TypeVar("B")

#: a pass over at least this many bytes is split in two (below it the hand-off to the worker
#: costs more than the half it saves: ~30 us against ~0.3 ms for 4 MiB of CRC-32 at 13 GB/s)
SPLIT_MIN = 1 << 22

_POOL: Optional[ThreadPoolExecutor] = None
_POOL_LOCK = threading.Lock()


def two_cores() -> bool:
    """This process may run on at least two cores (else :func:`both` runs both halves here)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return (len(affinity(0)) if affinity is not None else os.cpu_count() or 1) >= 2


def _forget_pool() -> None:
    """In a forked child: the parent's worker thread does not exist there (a task handed to
    its pool would never run), so the child makes its own on first use."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ascend_ref_worker")
        return _POOL


def both(first: Callable[[], A], second: Callable[[], B]) -> Tuple[A, B]:
    """``(first(), second())``, ``second`` in the worker thread while ``first`` runs here
    (both here, one after the other, on one core or when called from the worker itself).
    An exception of either is raised here, after both have finished."""
    if not two_cores() or threading.current_thread().name.startswith("ascend_ref_worker"):
        return first(), second()
    fut = _pool().submit(second)
    try:
        a = first()
    finally:
        b = fut.result()              # waits for the worker even when first() raised
    return a, b


__all__ = ["SPLIT_MIN", "both", "two_cores"]
