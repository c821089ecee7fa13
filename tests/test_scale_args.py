"""scale.run_rows / pad_rows arguments: scalars, lists of scalars, bad donate_argnums and a
total below the row count are clear errors naming the problem (not IndexError / TypeError)."""

import jax
import numpy as np
import pytest

from ascend_ref import scale
from ascend_ref.constraints import Code, ConstraintError

DOUBLE = jax.vmap(lambda x: 2 * x)
ADD = jax.vmap(lambda x, y: x + y)


@pytest.mark.parametrize("arg", [5, np.array(5), [1, 2, 3]])
def test_run_rows_without_a_case_axis_is_a_value_error(arg):
    with pytest.raises(ValueError, match="run_rows: every array needs a leading"):
        scale.run_rows(DOUBLE, arg)


def test_run_rows_row_errors_are_all_value_errors():
    with pytest.raises(ValueError, match="leading"):
        scale.run_rows(ADD, np.arange(3), 7)
    with pytest.raises(ValueError, match="at least one array"):
        scale.run_rows(DOUBLE)
    with pytest.raises(ValueError, match="leading axes differ"):
        scale.run_rows(ADD, np.arange(3), np.arange(4))


@pytest.mark.parametrize("donate", [5, None, (-1,), (2,), (0, 1.0), (True,), "0"])
def test_run_rows_rejects_bad_donate_argnums(donate):
    with pytest.raises(ConstraintError) as ei:
        scale.run_rows(ADD, np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32),
                       donate_argnums=donate)
    assert ei.value.code == Code.BAD_ARGUMENT and "donate_argnums" in str(ei.value)


@pytest.mark.filterwarnings("ignore:Some donated buffers")
def test_run_rows_donate_argnums_positions_only():
    x = np.arange(3, dtype=np.int32)
    with pytest.raises(ConstraintError, match="donate_argnums"):
        scale.run_rows(ADD, x, x, donate_argnums=(-1,))
    for donate in [(), (0,), (0, 1), [1], (np.int64(1),)]:
        out = scale.run_rows(ADD, x, x, donate_argnums=donate)
        assert out.tolist() == [0, 2, 4]
    assert x.tolist() == [0, 1, 2]                       # the caller's buffer is never donated


def test_pad_rows_total_below_rows_is_a_clear_error():
    with pytest.raises(ValueError, match="total = 2 is below the 3 row"):
        scale.pad_rows({"a": np.arange(3)}, 2)
    for bad in (-1, 2.5, None, True):
        with pytest.raises(ValueError, match="total"):
            scale.pad_rows({"a": np.arange(3)}, bad)
    with pytest.raises(ValueError, match="leading"):
        scale.pad_rows(np.array(5), 4)
    assert scale.pad_rows({"a": np.array([3, 4])}, 4)["a"].tolist() == [3, 4, 3, 3]
    assert scale.pad_rows(np.zeros((0, 2)), 2).shape == (2, 2)
