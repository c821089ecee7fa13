"""A zero TIK mask on a product whose zero-mask rule is "nop" (Atlas A2/A3, SEMANTICS §C) writes
nothing — neither dst nor the stage-1 work_tensor entries — and reports nothing undefined, as
the oracle says; on a product whose rule is "error" it is MASK_ZERO in both."""

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import oracle
from ascend_ref.chips import chip as get_chip


@pytest.mark.parametrize("api", ["vec_reduce_min", "vec_reduce_max", "vec_reduce_add"])
@pytest.mark.parametrize("chip", ["atlas_a2", "atlas_training"])
def test_zero_mask_matches_the_oracle(api, chip):
    ub = ar.store(ar.new_ub(chip), 0, np.arange(512, dtype=np.float16))
    dst, src, wk = ar.Tensor(1024, "half", 16), ar.Tensor(0, "half", 512), ar.Tensor(2048, "half", 64)
    args = (0, dst, src, wk, 2, 8)
    if get_chip(chip).zero_mask == "error":
        with pytest.raises(ar.ConstraintError) as e:
            getattr(ar.tik, api)(ub, *args, chip=chip)
        with pytest.raises(oracle.OracleError) as o:
            getattr(oracle, api)(np.asarray(ub), *args, chip=chip)
        assert e.value.code == o.value.code
        return
    out, info = getattr(ar.tik, api)(ub, *args, chip=chip, return_info=True)
    ref = getattr(oracle, api)(np.asarray(ub), *args, chip=chip)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ub))        # a NOP
    np.testing.assert_array_equal(np.asarray(info.written), np.asarray(ref.written))
    np.testing.assert_array_equal(np.asarray(info.undefined), np.asarray(ref.undefined))
    assert not np.asarray(info.written).any() and not np.asarray(info.undefined).any()
