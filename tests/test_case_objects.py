"""Case, Outcome and ReduceSpr as values, and the checks on their fields (found by a probe of
the public objects, 2026-12-06): equal objects compare equal (a dataclass's generated
``__eq__`` compared numpy fields as a tuple and raised 'truth value ... ambiguous'), a
hand-made ``Outcome(14)`` has a repr, an api that is no str is BAD_ARGUMENT on every path (a
list was a TypeError from a dict lookup), a register state no call could leave is
BAD_ARGUMENT (an IndexError, or a DTYPE_MISMATCH naming a writer it never had), a device
listed twice is BAD_ARGUMENT (JAX's safe_zip error at run time)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import scale
from ascend_ref.case import Case, Outcome, run_jax, run_oracle
from ascend_ref.spr import ReduceSpr, get_reduce_repeat_max_min_spr, get_reduce_repeat_sum_spr


def _case(**kw) -> Case:
    c = Case("whole_reduce_max", "atlas_a2", "float32", "ORDER_VALUE_INDEX", 64,
             {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
             {"dst": (512, 8), "src": (0, 64)},
             np.concatenate([np.arange(64, dtype=np.float32).view(np.uint8),
                             np.zeros(768, np.uint8)]))
    return dataclasses.replace(c, **kw)


def test_cases_and_outcomes_compare_by_value():
    a, b = _case(), _case()
    assert a is not b and a == b and not a != b
    for other in (_case(mask=63), _case(ub=np.zeros(1024, np.uint8)),
                  _case(tensors={"dst": (544, 8), "src": (0, 64)}), _case(option=None)):
        assert a != other
    assert a != "a case" and a != None  # noqa: E711
    oa, ob = run_jax(a, spr=True), run_jax(b, spr=True)
    assert oa == ob and oa.spr == ob.spr and oa.code is None
    assert oa != run_jax(_case(mask=63))
    assert run_jax(_case(tensors={"dst": (2**20, 8), "src": (0, 64)})) == Outcome(
        ar.Code.UB_BOUNDS)


@pytest.mark.parametrize("code, text", [(14, "Outcome(UB_BOUNDS)"),
                                        ("UB_BOUNDS", "Outcome(UB_BOUNDS)"),
                                        (ar.Code.UB_BOUNDS, "Outcome(UB_BOUNDS)"),
                                        (None, "Outcome(ok)"), (999, "Outcome(999)")])
def test_an_outcome_made_by_hand_has_a_repr(code, text):
    assert repr(Outcome(code)) == text


@pytest.mark.parametrize("api", [[], ["whole_reduce_sum"], 5, None])
def test_an_api_that_is_no_name_is_bad_argument_on_every_path(api):
    c = _case(api=api)
    assert run_jax(c).code == run_oracle(c).code == ar.run_cases([c])[0].code \
        == ar.Code.BAD_ARGUMENT
    with pytest.raises(ar.ConstraintError) as e:
        c.call(ar)
    assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == "api"


def test_register_states_compare_by_value():
    assert ReduceSpr() == ReduceSpr() and ReduceSpr() != ReduceSpr(mm_dtype=np.int32(1))
    got = run_jax(_case(), spr=True).spr
    assert got == run_jax(_case(), spr=True).spr and got != ReduceSpr()


@pytest.mark.parametrize("fields, text", [
    ({"mm_dtype": np.int32(5)}, "mm_dtype"), ({"mm_dtype": -1}, "mm_dtype"),
    ({"sum_dtype": 3}, "sum_dtype"), ({"sum_bits": np.uint32(3)}, "sum_bits"),
    ({"mm_value": np.float32(1.5)}, "mm_value"), ({"mm_dtype": "half"}, "mm_dtype"),
])
def test_a_register_state_no_call_left_is_bad_argument(fields, text):
    s = ReduceSpr(**fields)
    assert "malformed" in repr(s) and text in repr(s)
    for get in (get_reduce_repeat_max_min_spr, get_reduce_repeat_sum_spr):
        with pytest.raises(ar.ConstraintError) as e:
            get(s, "half", chip="atlas_a2")
        assert e.value.code == ar.Code.BAD_ARGUMENT and text in str(e.value)
    # a state a call left reads as before
    s = run_jax(_case(), spr=True).spr
    assert "malformed" not in repr(s)
    value = get_reduce_repeat_max_min_spr(s, "float", chip="atlas_a2")
    assert float(np.asarray(value[0])) == 63.0                  # the max of 0 .. 63


def test_a_device_twice_or_a_0d_object_array_is_bad_argument():
    d = jax.devices()[0]
    for bad in ([d, d], np.array(d, dtype=object)):
        with pytest.raises(ar.ConstraintError) as e:
            with scale.use_devices(bad):
                pass
        assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == "devices"
    assert scale.checked_devices([d]) == (d,)


def test_an_option_on_an_api_without_one_is_bad_argument_on_every_path():
    """``Case(whole_reduce_sum, ..., option="ORDER_VALUE_INDEX")`` ran as if the option were
    not there; run_columns likewise."""
    c = dataclasses.replace(_case(), api="whole_reduce_sum", option="ORDER_VALUE_INDEX")
    codes = {run_jax(c).code, run_oracle(c).code, ar.run_cases([c])[0].code,
             ar.run_cases([c] * 70)[-1].code}
    assert codes == {ar.Code.BAD_ARGUMENT}
    with pytest.raises(ar.ConstraintError) as e:
        c.call(ar)
    assert e.value.param == "case.option" and "takes no option" in str(e.value)
    got = ar.run_columns("whole_reduce_sum", "atlas_a2", "float32", "ORDER_VALUE_INDEX",
                         np.array([64, 64]), c.params, c.tensors, np.zeros((2, 1024), np.uint8))
    assert got.code.tolist() == [int(ar.Code.BAD_ARGUMENT)] * 2
    assert run_jax(dataclasses.replace(c, option=None)).code is None
