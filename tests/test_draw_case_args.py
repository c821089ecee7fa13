"""draw_case's arguments: every value it cannot use is a clear error naming it, never a
silent default or a case that cannot run (``fuzz.generate._space_args``, ``check_rate``)."""

import numpy as np
import pytest

from ascend_ref.constraints import Code, ConstraintError
from ascend_ref.fuzz import RngDraw, draw_case, run_oracle


def _code(**kw) -> Code:
    with pytest.raises(ConstraintError) as e:
        draw_case(kw.pop("d", RngDraw(1, 0)), **kw)
    return e.value.code


@pytest.mark.parametrize("kw", [{"apis": []}, {"chips": []}, {"apis": [1]}, {"chips": [None]},
                                {"apis": 3}, {"max_ub": 0}, {"max_ub": -5}, {"max_ub": 1.5},
                                {"tik_max_repeat": 0}, {"tik_max_repeat": True},
                                {"d": None}, {"d": np.random.default_rng(1)}])
def test_unusable_arguments_are_bad_argument(kw):
    """An empty list of APIs or products was every one; max_ub 0 or below and a repeat cap
    of 0 were silently raised to what the draw needs; d=None an AttributeError."""
    name = next(iter(kw))
    with pytest.raises(ConstraintError, match=f"draw_case: {name} = ") as e:
        draw_case(kw.pop("d", RngDraw(1, 0)), **kw)
    assert e.value.code == Code.BAD_ARGUMENT


def test_unknown_names_keep_their_codes():
    assert _code(apis=["nope"]) == Code.BAD_ARGUMENT
    assert _code(chips=["nope"]) == Code.CHIP_UNKNOWN


def test_no_api_on_the_products_is_an_error_not_cases_tagged_valid():
    """vec_reduce_add is not on ascend950: every case drawn was tagged valid and raised
    API_UNSUPPORTED when run."""
    with pytest.raises(ConstraintError, match=r"chips \['ascend950'\]") as e:
        draw_case(RngDraw(1, 0), apis=["vec_reduce_add"], chips=["ascend950"])
    assert e.value.code == Code.API_UNSUPPORTED
    for k in range(6):            # a product that has it is chosen; the others are skipped
        c = draw_case(RngDraw(1, k), apis=["vec_reduce_add", "whole_reduce_sum"],
                      chips=["ascend950", "atlas_a2"])
        assert (c.api, c.tags["validity"]) in {("whole_reduce_sum", "valid"),
                                               ("vec_reduce_add", "valid")}
        assert c.api == "whole_reduce_sum" or c.chip == "atlas_a2"
        assert run_oracle(c).code is None


def test_one_name_is_a_list_of_one():
    a = draw_case(RngDraw(5, 3), apis="whole_reduce_min", chips="atlas_a2")
    b = draw_case(RngDraw(5, 3), apis=["whole_reduce_min"], chips=("atlas_a2",))
    assert a.describe() == b.describe() and np.array_equal(a.ub, b.ub)
    c = draw_case(RngDraw(5, 3), apis=(n for n in ["whole_reduce_min"]),   # any iterable
                  chips={"atlas_a2": 1}.keys())
    assert c.describe() == a.describe()


@pytest.mark.parametrize("name", ["invalid_rate", "special_rate"])
@pytest.mark.parametrize("value", [None, -0.1, 1.5, "0.5", True, float("nan")])
def test_rates_are_probabilities(name, value):
    with pytest.raises(ValueError, match=f"{name} = .*need a value in \\[0, 1\\]"):
        draw_case(RngDraw(1, 0), **{name: value})


def test_rates_accept_numpy_and_ints():
    c = draw_case(RngDraw(1, 0), invalid_rate=np.float32(0), special_rate=1)
    assert c.tags["validity"] == "valid"
