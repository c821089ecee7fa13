"""ascend_ref — a bit-exact, vectorised JAX reference of Ascend vector reductions.

>>> import ascend_ref as ar
>>> "atlas_a2" in ar.chips()
True

Public API (SPEC §8): :func:`chips`, :func:`chip`, :func:`new_ub`, :func:`store`,
:func:`load`, :class:`Tensor`, :mod:`ascendc`, :mod:`tik`, :class:`ReduceOrder`,
:class:`ReduceType`, :class:`ConstraintError`; :class:`ReduceSpr`, the reduce special registers
(every instruction's ``spr=`` / ``info.spr``, read by ``ascendc.get_reduce_repeat_sum_spr`` /
``get_reduce_repeat_max_min_spr``).

Beyond it: :func:`run_batch` (many UBs, one call each, as arrays), :func:`run_cases` /
:func:`run_columns` (many different calls), :class:`CounterMask` (counter mask mode,
SetMaskCount), :class:`Code` and :func:`explain` (a constraint code, explained), :mod:`oracle`
(the independent scalar twin, same signatures), :class:`CallInfo` (``return_info=True``).
Imported on demand: :mod:`ascend_ref.viz` (access maps and rounding trees drawn),
:mod:`ascend_ref.grad` (the differentiable path), :mod:`ascend_ref.verify`,
:mod:`ascend_ref.golden` and :mod:`ascend_ref.fuzz` (the ``ascend-ref verify / golden / fuzz``
commands' Python side), :mod:`ascend_ref.scale` (cases over devices and hosts). README.md and
docs/ say more.
"""

from . import ascendc, explain, oracle, provenance, tik
from .chips import ChipProfile, chip, chips
from .constraints import Code, ConstraintError
from .batch import run_batch, run_cases, run_columns
from .engine import CallInfo
from .spr import ReduceSpr, SprRead
from .enums import ReduceOrder, ReduceType
from .mask import CounterMask
from .ub import Tensor, load, new_ub, store

__version__ = provenance.VERSION
__all__ = ["CounterMask", "chips", "chip", "ChipProfile", "new_ub", "store", "load", "Tensor", "ascendc", "tik",
           "oracle", "ReduceOrder", "ReduceType", "ConstraintError", "Code", "explain",
           "CallInfo", "run_batch", "run_cases", "run_columns", "ReduceSpr", "SprRead"]
