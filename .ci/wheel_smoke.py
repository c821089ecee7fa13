"""Smoke test of an installed wheel (run by .ci/run from a directory outside the source tree).

Checks that ``ascend_ref`` is imported from the installed wheel (not the checkout), that the
chip profiles, campaigns and kernels come from the wheel's package data, and makes one call
of every public API (each checked against the scalar oracle, bit for bit) plus ``run_batch``
and ``run_cases``. The CLI (``ascend-ref fuzz --cases 20``) is run by .ci/run itself.
"""

import os
import sys
from pathlib import Path

import numpy as np

import ascend_ref as ar
from ascend_ref.chips import config_dir

source_tree = Path(sys.argv[1]).resolve()
pkg = Path(ar.__file__).resolve().parent
assert source_tree not in pkg.parents, f"ascend_ref imported from the checkout: {pkg}"
assert Path(sys.prefix).resolve() in pkg.parents, f"not the venv's install: {pkg}"
cfg = config_dir().resolve()
assert cfg == pkg / "configs", f"configs not read from the wheel's package data: {cfg}"
for sub, least in (("chips", 10), ("campaigns", 4), ("kernels", 7)):
    n = len(list((cfg / sub).glob("*.toml")))
    assert n >= least, f"wheel ships {n} {sub}/*.toml (expected >= {least})"
# PEP 561: a user's type checker reads the package's annotations only with this marker
assert (pkg / "py.typed").is_file(), "the wheel does not ship ascend_ref/py.typed"
assert len(ar.chips()) >= 10 and ar.new_ub("atlas_a2").shape == (ar.chip("atlas_a2").ub_bytes,)

rng = np.random.default_rng(0)
T = ar.Tensor


def same(api, got, want):
    got, want = np.asarray(got), np.asarray(want.ub)
    assert np.array_equal(got, want), f"{api}: JAX path and oracle differ"
    print(f"  {api}: ok")


ub = ar.store(ar.new_ub("atlas_a2"), 0, rng.standard_normal(512).astype(np.float16))
u = np.asarray(ub)
for api in ("whole_reduce_min", "whole_reduce_max"):
    args = (T(4096, "half", 16), T(0, "half", 512), 128, 4, 1, 1, 8, "ORDER_VALUE_INDEX")
    same(api, getattr(ar.ascendc, api)(ub, *args, chip="atlas_a2"),
         getattr(ar.oracle, api)(u, *args, chip="atlas_a2"))
args = (T(4096, "half", 16), T(0, "half", 512), 128, 4, 1, 1, 8)
same("whole_reduce_sum", ar.ascendc.whole_reduce_sum(ub, *args, chip="atlas_a2"),
     ar.oracle.whole_reduce_sum(u, *args, chip="atlas_a2"))
args = (T(4096, "half", 64), T(0, "half", 512), 128, 4, 1, 1, 8)
same("reduce_data_block", ar.ascendc.reduce_data_block(ub, *args, reduce_type="MAX",
                                                       chip="atlas_a2"),
     ar.oracle.reduce_data_block(u, *args, reduce_type="MAX", chip="atlas_a2"))
same("block_reduce_sum", ar.ascendc.block_reduce_sum(ub, T(4096, "half", 64), T(0, "half", 512),
                                                     4, 128, 1, 1, 8, chip="atlas_a2"),
     ar.oracle.reduce_data_block(u, *args, reduce_type="SUM", chip="atlas_a2"))
args = (T(4096, "half", 256), T(0, "half", 512), 4, 128, 1, 1, 8)
same("pair_reduce_sum", ar.ascendc.pair_reduce_sum(ub, *args, chip="atlas_a2"),
     ar.oracle.pair_reduce_sum(u, *args, chip="atlas_a2"))
same("reduce_pair_elem", ar.ascendc.reduce_pair_elem(ub, T(4096, "half", 256),
                                                     T(0, "half", 512), 128, 4, 1, 1, 8,
                                                     chip="atlas_a2"),
     ar.oracle.pair_reduce_sum(u, *args, chip="atlas_a2"))
args = (T(4096, "half", 16), T(0, "half", 512), 4, 128, 0, 1, 1, 8)
same("repeat_reduce_sum", ar.ascendc.repeat_reduce_sum(ub, *args, chip="atlas_a2"),
     ar.oracle.repeat_reduce_sum(u, *args, chip="atlas_a2"))
args = (T(4096, "half", 16), T(0, "half", 512), T(8192, "half", 1024), 128, 4, 8)
for api in ("reduce_max", "reduce_min"):
    same(api, getattr(ar.ascendc, api)(ub, *args, True, chip="atlas_a2"),
         getattr(ar.oracle, api)(u, *args, True, chip="atlas_a2"))
same("reduce_sum", ar.ascendc.reduce_sum(ub, *args, chip="atlas_a2"),
     ar.oracle.reduce_sum(u, *args, chip="atlas_a2"))
iub = ar.store(ar.new_ub("ascend950"), 0, rng.integers(-2**15, 2**15, 512).astype(np.int16))
args = (T(4096, "int32", 16), T(0, "int16", 512), 128, 4, 1, 1, 8)
same("whole_reduce_sum int16 -> int32 (ascend950)",
     ar.ascendc.whole_reduce_sum(iub, *args, chip="ascend950"),
     ar.oracle.whole_reduce_sum(np.asarray(iub), *args, chip="ascend950"))
tub = ar.store(ar.new_ub("atlas_training"), 0, rng.standard_normal(512).astype(np.float16))
tu = np.asarray(tub)
targs = (128, T(4096, "half", 16), T(0, "half", 512), T(8192, "half", 64), 4, 8)
for api in ("vec_reduce_min", "vec_reduce_max"):
    same(api, getattr(ar.tik, api)(tub, *targs, True, chip="atlas_training"),
         getattr(ar.oracle, api)(tu, *targs, True, chip="atlas_training"))
same("vec_reduce_add", ar.tik.vec_reduce_add(tub, *targs, chip="atlas_training"),
     ar.oracle.vec_reduce_add(tu, *targs, chip="atlas_training"))
out, status = ar.run_batch("whole_reduce_sum", np.repeat(u[None, :8192], 4, 0), chip="atlas_a2",
                           dtype="half", mask=np.array([128, 64, 1, 129]), repeat=4,
                           dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8,
                           dst=(4096, 16), src=(0, 512))
assert status.tolist() == [0, 0, 0, int(ar.Code.MASK_RANGE)], status
print("  run_batch: ok")
from ascend_ref.golden import kernel_cases  # noqa: E402

cases = kernel_cases("row_sum_float_13x57")[0]
assert all(o.code is None for o in ar.run_cases(cases))
print("  run_cases (shipped kernel row_sum_float_13x57): ok")
print(f"wheel smoke test passed: {pkg}")
