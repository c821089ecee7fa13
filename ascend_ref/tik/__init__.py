"""TIK vector reductions (SPEC §5): vec_reduce_min / vec_reduce_max / vec_reduce_add."""

from .vec_reduce_add import vec_reduce_add
from .vec_reduce_minmax import vec_reduce_max, vec_reduce_min

__all__ = ["vec_reduce_min", "vec_reduce_max", "vec_reduce_add"]
