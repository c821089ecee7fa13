import numpy as np
import pytest

import ascend_ref as ar


def half_bits(x):
    return np.asarray(x, np.float16).view(np.uint16)


@pytest.fixture
def ub_a2():
    return ar.new_ub("atlas_a2")
