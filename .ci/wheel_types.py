"""A user's type-checked script (`.ci/wheel` runs mypy on it against the installed wheel).

It must check clean: the wheel ships ``py.typed``, so mypy reads the package's own
annotations, and the common calls type-check as written -- an instruction's plain and
``return_info=True`` forms, run_batch's unpacked result, store / load, a differentiable
function under ``jax.grad``. ``.ci/wheel`` also checks that a wrong argument type is caught.
"""

import jax
import numpy as np

import ascend_ref as ar
from ascend_ref import grad
from ascend_ref.case import Case

ub = ar.store(ar.new_ub("atlas_a2"), 0, np.ones(128, np.float16))
dst, src = ar.Tensor(512, "half", 16), ar.Tensor(0, "half", 128)
ub = ar.ascendc.whole_reduce_sum(ub, dst, src, 128, 1, 1, 1, 8, chip="atlas_a2")
total: np.ndarray = ar.load(ub, 512, "float16", 1)
ub2, info = ar.ascendc.whole_reduce_min(ub, dst, src, [0, 2**64 - 1], 1, 1, 1, 8,
                                        chip="ascend950", return_info=True)
ub3 = ar.tik.vec_reduce_add(ub, 128, dst, src, ar.Tensor(1024, "half", 16), 1, 8,
                            chip="atlas_training")
out, status = ar.run_batch("whole_reduce_sum", np.zeros((2, 512), np.uint8), chip="atlas_a2",
                           dtype="float16", mask=128, repeat_time=1, dst_rep_stride=1,
                           src_blk_stride=1, src_rep_stride=8, src=(0, 128), dst=(256, 16))
case = Case("whole_reduce_sum", "atlas_a2", "float16", None, 128,
            {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
            {"dst": (256, 16), "src": (0, 128)}, np.zeros(512, np.uint8))
outcomes = ar.run_cases([case])
d = jax.grad(lambda x: grad.whole_reduce_sum(x, 128, 1, 1, 1, 8, chip="atlas_a2").sum())
