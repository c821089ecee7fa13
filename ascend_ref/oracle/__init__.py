"""Scalar oracle of the reduction APIs, written independently of the vectorised path.

Slow, literal loops over repeats and lanes on raw bit patterns, straight from
``shared/SPEC.md`` and ``docs/SEMANTICS.md``. It imports only the error codes
(:mod:`ascend_ref.constraints`); the per-product facts are its own table
(:mod:`ascend_ref.oracle._products`, with the source of each row), never the JAX path's
``configs/chips`` profiles.

Every function takes a 1-D uint8 ``ub`` (never modified) and returns an
:class:`OracleResult` ``(ub, written, undefined)``; an invalid call raises
:class:`OracleError` whose ``code`` is the lowest failing :class:`~ascend_ref.constraints.Code`.
"""

from ._api import (OracleError, OracleResult, pair_reduce_sum, reduce_data_block,
                   reduce_pair_elem, repeat_reduce_sum, vec_reduce_add, vec_reduce_max, vec_reduce_min,
                   whole_reduce_max, whole_reduce_min, whole_reduce_sum)
from ._api import reduce_max, reduce_min, reduce_sum
from ._api import reduce_max_count, reduce_min_count, reduce_sum_count
from ._api import vcadd, vcgadd, vcgmax, vcgmin, vcmax, vcmin, vcpadd
from ._fp import cascade_need
from . import _spr as spr        # the reduce special registers (SEMANTICS §P)

__all__ = [
    "OracleError", "OracleResult", "whole_reduce_min", "whole_reduce_max", "whole_reduce_sum",
    "reduce_data_block", "pair_reduce_sum", "reduce_pair_elem", "repeat_reduce_sum", "vec_reduce_min", "vec_reduce_max", "vec_reduce_add", "cascade_need",
    "reduce_max", "reduce_min", "reduce_sum", "spr",
    "reduce_max_count", "reduce_min_count", "reduce_sum_count",
    "vcadd", "vcmax", "vcmin", "vcgadd", "vcgmax", "vcgmin", "vcpadd",
]
