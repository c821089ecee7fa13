"""Argument forms the JAX path and the scalar oracle read differently (found by a probe,
2026-12-06): an integer ``[4]`` lane-word mask that is not uint32 (the oracle read it as four
bit-mode words: MASK_BITS) and a 0-d bool array as ``saturate`` (the oracle: BAD_ARGUMENT).
docs/arguments.md allows both; each path now gives the same bits or the same code."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Tensor, oracle

A2 = "atlas_a2"


def _both(fn_name: str, mask, **kw):
    ub = np.zeros(8192, np.uint8)
    ub[:2048] = ((np.arange(1024) % 7) * 1.5 + 60000 * (np.arange(1024) < 2)).astype(
        np.float16).view(np.uint8)
    out = []
    for f in (getattr(ar.ascendc, fn_name), getattr(oracle, fn_name)):
        try:
            r = f(ub.copy(), Tensor(4096, "half", 64), Tensor(0, "half", 1024), mask, 1, 1, 1,
                  8, chip=A2, **kw)
            out.append(np.asarray(getattr(r, "ub", r))[4096:4128].tobytes())
        except (ar.ConstraintError, oracle.OracleError) as e:
            out.append(ar.Code(int(e.code)).name)
    return out


@pytest.mark.parametrize("mask", [np.array([8, 0, 0, 0]), np.array([8, 0, 1, 0], np.int16),
                                  jnp.array([0xFF, 0, 0, 2**31 - 1]), np.array([-1, 0, 0, 0]),
                                  np.array([2**32, 0, 0, 0]), np.array([8, 0, 0, 0], np.uint32)])
def test_lane_word_masks_of_any_integer_type(mask):
    jax_path, oracle_path = _both("whole_reduce_sum", mask)
    assert jax_path == oracle_path
    words = np.asarray(mask).astype(np.int64)
    if (words < 0).any() or (words > 0xFFFFFFFF).any():
        assert jax_path == "MASK_BITS"
    else:
        assert isinstance(jax_path, bytes)


@pytest.mark.parametrize("sat, same", [(np.array(True), True), (jnp.array(False), False),
                                       (np.array(1), True), (np.array(2), None)])
def test_saturate_as_a_0d_array(sat, same):
    jax_path, oracle_path = _both("whole_reduce_sum", 128, saturate=sat)
    assert jax_path == oracle_path
    if same is None:
        assert jax_path == "BAD_ARGUMENT"
    else:
        assert jax_path == _both("whole_reduce_sum", 128, saturate=same)[0]
        assert jax_path != _both("whole_reduce_sum", 128, saturate=not same)[0]
