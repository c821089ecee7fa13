"""Checks of :func:`ascend_ref.run_batch` arguments: nothing is wrapped, truncated or guessed.

Every per-case parameter is an integer scalar or an integer ``[B]`` array whose values fit
int32; a float array (``repeat=np.full(8, 1.7)``), a value past int32 (``2**40``, an int64
address ``2**32 + 512``), a wrong length or a string is a BAD_ARGUMENT
:class:`~ascend_ref.constraints.ConstraintError` naming the parameter — before any kernel
runs. Values inside int32 but outside a documented range are per-case statuses as usual.
The mask mode is explicit: ``mask_mode="count"`` (``[B]`` / scalar lane counts) or
``"bits"`` (``[B, 4]`` / ``[4]`` uint32 lane words); without it a 2-D mask is bits and a
0-D / 1-D mask counts, so a ``[4]`` mask never changes meaning with ``B``.

>>> import numpy as np
>>> int_param("run_batch", "repeat", 3, 4).tolist()
[3, 3, 3, 3]
>>> int_param("run_batch", "repeat", np.full(4, 1.7), 4)
Traceback (most recent call last):
...
ascend_ref.constraints.ConstraintError: [BAD_ARGUMENT] run_batch: repeat = 'float64 array' is not allowed; allowed: an int or a [4] integer array (values in int32)
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .constraints import Code, ConstraintError

INT32 = (-(2**31), 2**31 - 1)


def _bad(api: str, name: str, value: Any, allowed: str) -> ConstraintError:
    return ConstraintError(Code.BAD_ARGUMENT, api=api, param=name, value=value, allowed=allowed)


def is_int(v: Any) -> bool:
    """A Python or numpy integer, not a bool (a static count: ``max_repeat``, a height)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def held_int(v: Any) -> Any:
    """A concrete 0-d integer array (numpy's or JAX's) or numpy integer as the int it holds;
    anything else -- a traced value, a float or bool array, a list -- as it is, for the
    caller's own check.

    >>> held_int(np.array(2**40)), held_int(np.array(1.5)), held_int([3])
    (1099511627776, array(1.5), [3])
    """
    if not hasattr(v, "__array__") or getattr(v, "shape", None) != ():
        return v
    try:
        a = np.asarray(v)
    except Exception:                        # noqa: BLE001 - a traced value: no number yet
        return v
    return int(a) if a.dtype.kind in "iu" else v


def int_param(api: str, name: str, v: Any, b: int) -> np.ndarray:
    """``v`` (int or ``[B]`` integer array) as int32 ``[B]``; BAD_ARGUMENT otherwise. A
    scalar comes back as a read-only ``[B]`` view of one value (stride 0: :func:`uniform`
    reads one element of it).

    >>> a = int_param("run_batch", "repeat", 3, 4)
    >>> a.tolist(), a.strides, uniform(a).tolist(), uniform(np.arange(3)).tolist()
    ([3, 3, 3, 3], (0,), [3], [0, 1, 2])
    """
    if type(v) is int:                  # the common case, without numpy's checks (~6 us)
        if not INT32[0] <= v <= INT32[1]:
            raise _bad(api, name, v, f"integers in [{INT32[0]}, {INT32[1]}] (int32)")
        return _repeat(np.array(v, np.int32), b)
    allowed = f"an int or a [{b}] integer array (values in int32)"
    try:
        a = np.asarray(v)
    except Exception:                                        # noqa: BLE001 - ragged etc.
        raise _bad(api, name, type(v).__name__, allowed) from None
    if a.dtype == bool or a.dtype.kind not in "iu":
        # a short list as given (numpy reads [2**64 - 1, 0] as floats: not what was passed)
        shown = v if isinstance(v, (list, tuple)) and len(v) <= 8 else \
            f"{a.dtype} array" if a.ndim or a.dtype.kind != "O" else v
        raise _bad(api, name, shown, allowed)
    if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != b):
        raise _bad(api, name, f"shape {a.shape}", f"a scalar or shape ({b},) (one per case)")
    if a.size:
        lo, hi = a.min(), a.max()
        if (a.dtype.kind == "i" and int(lo) < INT32[0]) or int(hi) > INT32[1]:
            bad = int(lo) if a.dtype.kind == "i" and int(lo) < INT32[0] else int(hi)
            raise _bad(api, name, bad, f"integers in [{INT32[0]}, {INT32[1]}] (int32)")
    return np.broadcast_to(a.astype(np.int32), (b,))


def _repeat(one: np.ndarray, b: int) -> np.ndarray:
    """The 0-d ``one`` as a read-only ``[b]`` array of stride 0 (``np.broadcast_to``'s
    result, without its argument checks: ~1 us against ~4)."""
    a: np.ndarray = np.ndarray((b,), one.dtype, one, 0, (0,))
    a.flags.writeable = False
    return a


def uniform(a: np.ndarray) -> np.ndarray:
    """``a``, or its first row where every row is that one by construction (a scalar
    broadcast to ``[B, ...]``: stride 0 along the cases), so a check over a scalar parameter
    reads one element, not ``B``."""
    return a[:1] if a.ndim and a.shape[0] and a.strides[0] == 0 else a


def pair(api: str, name: str, v: Any) -> Tuple[Any, Any]:
    """An ``(addr, size)`` pair."""
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != 2:
        raise _bad(api, name, v if np.size(v) <= 4 else type(v).__name__,
                   "an (addr, size) pair of ints or [B] arrays")
    return v[0], v[1]


def flag(api: str, name: str, v: Any, b: Optional[int] = None) -> Any:
    """A bool (``b`` None) or bool ``[B]`` array: bools, or integers 0 / 1 — never strings."""
    allowed = "True / False" + (f" or a [{b}] bool array" if b is not None else "")
    if b is None:
        if isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)):
            return bool(v)
        raise _bad(api, name, v, allowed)
    try:
        a = np.asarray(v)
    except Exception:                                        # noqa: BLE001
        raise _bad(api, name, type(v).__name__, allowed) from None
    if a.dtype != bool and not (a.dtype.kind in "iu" and np.isin(a, (0, 1)).all()):
        raise _bad(api, name, v if a.ndim == 0 else f"{a.dtype} array", allowed)
    if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != b):
        raise _bad(api, name, f"shape {a.shape}", f"a scalar or shape ({b},) (one per case)")
    return np.broadcast_to(a.astype(bool), (b,))


def mask_param(api: str, mask: Any, b: int, mask_mode: Optional[str]) -> Tuple[str, np.ndarray]:
    """``(mode, values)``: int32 ``[B]`` counts or uint32 ``[B, 4]`` lane words."""
    if mask_mode not in (None, "count", "bits"):
        raise _bad(api, "mask_mode", mask_mode, "'count', 'bits' or None")
    if type(mask).__name__ == "CounterMask":    # ascend_ref.CounterMask (no import cycle)
        raise _bad(api, "mask", mask, "lane counts or lane words: run_batch has no counter "
                                      "mode; run counter-mode calls with run_cases or the API")
    try:
        a = np.asarray(mask)
    except Exception:                                        # noqa: BLE001
        raise _bad(api, "mask", type(mask).__name__, "integer counts or lane words") from None
    mode = mask_mode or ("bits" if a.ndim == 2 else "count")
    if mode == "count":
        if mask_mode is None and a.shape == (4,) and b != 4:
            raise _bad(api, "mask", "shape (4,)", f"[{b}] lane counts; for one set of lane "
                                                   f"words for every case pass mask_mode='bits'")
        if mask_mode is None and a.shape == (2,) and b != 2:     # the APIs' two 64-bit words
            raise _bad(api, "mask", "shape (2,)", f"[{b}] lane counts; lane words are four "
                                                   f"uint32 words here (lanes 0-31 first): "
                                                   f"shape (4,) or ({b}, 4) with "
                                                   f"mask_mode='bits'")
        return mode, int_param(api, "mask", mask if type(mask) in (int, list, tuple) else a, b)
    allowed = f"uint32 lane words: shape (4,), (1, 4) or ({b}, 4), each in [0, 2**32 - 1]"
    if a.dtype == bool or a.dtype.kind not in "iu":
        raise _bad(api, "mask", f"{a.dtype} array", allowed)
    if a.shape not in ((4,), (1, 4), (b, 4)):
        raise _bad(api, "mask", f"shape {a.shape}", allowed)
    if a.size and ((a.dtype.kind == "i" and int(a.min()) < 0) or int(a.max()) > 2**32 - 1):
        raise _bad(api, "mask", int(a.min()) if int(a.min()) < 0 else int(a.max()), allowed)
    return mode, np.broadcast_to(a.astype(np.uint32).reshape(-1, 4), (b, 4))
