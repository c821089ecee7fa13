"""The types the public functions take and return: their annotations, defined once for the
Ascend C and TIK families and the tools (``docs/arguments.md`` says what each form accepts
and what it rejects, with which code). Real names at run time, so ``typing.get_type_hints``
resolves every public signature.

>>> import typing, ascend_ref as ar
>>> typing.get_type_hints(ar.ascendc.whole_reduce_sum)["mask"] == MaskLike
True
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple, Union

import jax
import numpy as np

from .chips import ChipProfile
from .engine import CallInfo
from .mask import CounterMask
from .ub import UBLike

#: an integer argument (``repeat_time``, a stride, a count): an int, a numpy integer or a 0-d
#: integer array (numpy's or JAX's, concrete or traced under ``jit`` / ``vmap``)
IntLike = Union[int, np.integer, np.ndarray, jax.Array]
#: ``mask``: an int (continuous mode), the lane words (bit mode: ints, numpy integers or 0-d
#: arrays; Ascend C ``[lanes 0-63, lanes 64-127]``, TIK ``[mask_h, mask_l]``), an integer array
#: of either (traced: ``uint32[4]`` lane words), or a :class:`~ascend_ref.mask.CounterMask`
#: (counter mode: Ascend C on the products with SetMaskCount; elsewhere, and on TIK,
#: ``MASK_MODE``)
MaskLike = Union[IntLike, Sequence[IntLike], CounterMask]
#: a static switch (``cal_index``, ``index_low``): a bool, or an int 0 / 1 (Python's or numpy's,
#: or a concrete 0-d integer array); a traced one is ``BAD_ARGUMENT``
FlagLike = Union[bool, int, np.bool_, np.integer, np.ndarray]
#: ``saturate``: a switch, or a traced bool / integer array (judged in the kernel); None: the
#: product profile's default
SaturateLike = Optional[Union[FlagLike, jax.Array]]
#: ``chip``: a product id (``"atlas_a2"``) or its :class:`~ascend_ref.chips.ChipProfile`
ChipLike = Union[str, ChipProfile]
#: what an instruction function returns: the new ``ub`` (a JAX array), or ``(ub, CallInfo)``
#: with ``return_info=True`` (:data:`CallWithInfo`). Typed ``Any``: which of the two depends on
#: the flag, and as a Union every plain call (``ub = f(...)``; ``ar.load(ub, ...)``) would
#: need narrowing in a caller's type-checked code
CallResult = Any
#: the ``return_info=True`` form of :data:`CallResult`
CallWithInfo = Tuple[jax.Array, CallInfo]
#: a file or folder the tools read or write (dumps, kernels, campaign stores)
PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["UBLike", "IntLike", "MaskLike", "FlagLike", "SaturateLike", "ChipLike",
           "CallResult", "CallWithInfo", "PathLike"]
