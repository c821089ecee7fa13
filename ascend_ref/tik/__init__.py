"""TIK vector reductions (SPEC §5): vec_reduce_min / vec_reduce_max / vec_reduce_add, and the
per-repeat vcadd / vcmax / vcmin / vcgadd / vcgmax / vcgmin / vcpadd (docs/SEMANTICS.md §T)."""

from __future__ import annotations

from ..docstrings import with_family_example
from .vec_reduce_add import vec_reduce_add
from .vec_reduce_minmax import vec_reduce_max, vec_reduce_min
from .vc import vcadd, vcgadd, vcgmax, vcgmin, vcmax, vcmin, vcpadd

__all__ = ["vec_reduce_min", "vec_reduce_max", "vec_reduce_add", "vcadd", "vcmax", "vcmin",
           "vcgadd", "vcgmax", "vcgmin", "vcpadd"]

for _name in __all__:                 # help() shows each function's family example
    with_family_example(globals()[_name])
