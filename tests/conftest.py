import os

import numpy as np
import pytest

import ascend_ref as ar

# campaigns run from the CLI keep compiled kernels on disk; not from the test suite
os.environ.setdefault("ASCEND_REF_COMPILE_CACHE", "off")


def half_bits(x):
    return np.asarray(x, np.float16).view(np.uint16)


@pytest.fixture
def ub_a2():
    return ar.new_ub("atlas_a2")
