"""ascend_ref.grad's arguments: a bad one is a ConstraintError naming it (docs/arguments.md),
never truthiness, a silent conversion, a wrong status or a raw Python / JAX exception."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref.grad as g
from ascend_ref import Code, ConstraintError

A2 = "atlas_a2"
X = jnp.asarray(np.arange(512, dtype=np.float32) % 7)
ARGS = (64, 2, 1, 8)                       # mask, repeat_time, src_blk_stride, src_rep_stride


def _bad(code, param, fn, *args, **kw):
    with pytest.raises(ConstraintError) as e:
        fn(*args, **kw)
    assert e.value.code == code and e.value.param == param, str(e.value)
    return str(e.value)


@pytest.mark.parametrize("info", ["no", 2, np.array(1), 1.0, None])
def test_return_info_is_a_bool_or_0_1_not_truthiness(info):
    """return_info follows the bit-exact API's rule: "no" / 2 no longer return the status."""
    msg = _bad(Code.BAD_ARGUMENT, "return_info", g.whole_reduce_sum, X, *ARGS, chip=A2,
               return_info=info)
    assert "whole_reduce_sum" in msg and "True / False" in msg
    plain = g.whole_reduce_sum(X, *ARGS, chip=A2)
    res, st = g.whole_reduce_sum(X, *ARGS, chip=A2, return_info=1)
    assert int(st) == 0 and np.array_equal(np.asarray(res), np.asarray(plain))
    assert np.array_equal(np.asarray(g.whole_reduce_sum(X, *ARGS, chip=A2, return_info=0)),
                          np.asarray(plain))
    call = g.function("whole_reduce_sum").prepare(X, *ARGS, chip=A2)
    _bad(Code.BAD_ARGUMENT, "return_info", g.results, call, X, return_info=info)


def test_traced_return_info_is_refused_as_a_static_switch():
    f = jax.jit(lambda ri: g.whole_reduce_sum(X, *ARGS, chip=A2, return_info=ri))
    msg = _bad(Code.BAD_ARGUMENT, "return_info", f, True)
    assert "traced" in msg and "static" in msg


@pytest.mark.parametrize("api, args, dtype, top, max_repeat", [
    ("whole_reduce_sum", ARGS, np.float32, 255, 2**40),
    ("whole_reduce_sum", ARGS, np.float32, 255, 2**20),
    ("whole_reduce_sum", ARGS, np.float16, 255, 256),
    ("reduce_sum", (64, 2, 8), np.float32, 1024, 2**16),
])
def test_max_repeat_is_bounded_by_the_repeat_range(api, args, dtype, top, max_repeat):
    """A table past the repeat range is refused up front (it used to overflow, or lay the
    results out past the UB and turn a valid traced repeat of 3 into UB_BOUNDS); the top of
    the range gives the eager call's values and status 0."""
    fn = getattr(g, api)
    x = jnp.asarray(np.arange(512) % 5, dtype)

    def traced(mr):
        return jax.jit(lambda r: fn(x, args[0], r, *args[2:], chip=A2, max_repeat=mr,
                                    return_info=True))(3)

    msg = _bad(Code.BAD_ARGUMENT, "max_repeat", traced, max_repeat)
    assert f"[1, {top}]" in msg and str(max_repeat) in msg
    _bad(Code.BAD_ARGUMENT, "max_repeat", fn, x, args[0], 3, *args[2:], chip=A2,
         max_repeat=max_repeat)
    want = np.asarray(fn(x, args[0], 3, *args[2:], chip=A2))
    for mr in (top, None):
        out, st = traced(mr)
        got = np.asarray(out)
        assert int(st) == 0
        np.testing.assert_array_equal(got[:3] if got.ndim else got, want)


@pytest.mark.parametrize("src", [np.arange(512, dtype=np.float64), [1.0] * 512,
                                 jnp.ones(512, jnp.bfloat16)])
def test_src_of_another_float_type_is_refused_not_rounded(src):
    """A float64 source was silently rounded to float32; now it is DTYPE_UNSUPPORTED naming
    src.dtype and its type, as an integer source is and as float64 is under jax_enable_x64."""
    msg = _bad(Code.DTYPE_UNSUPPORTED, "src.dtype", g.whole_reduce_sum, src, *ARGS, chip=A2)
    assert np.dtype(np.asarray(src).dtype).name in msg
    _bad(Code.DTYPE_UNSUPPORTED, "src.dtype", g.plan, "whole_reduce_sum", src, *ARGS, chip=A2)


@pytest.mark.parametrize("src", [np.array([object()] * 512), np.array(["a"] * 512),
                                 [[1.0], [1.0, 2.0]]])
def test_src_that_holds_no_numbers_is_bad_argument(src):
    msg = _bad(Code.BAD_ARGUMENT, "src", g.whole_reduce_sum, src, *ARGS, chip=A2)
    assert "float16 / float32" in msg


@pytest.mark.parametrize("api, tensor", [("whole_reduce_sum", "work_tensor"),
                                         ("whole_reduce_sum", "foo"), ("reduce_sum", "foo"),
                                         ("reduce_sum", "src"), ("reduce_sum", None)])
def test_function_tensor_is_dst_or_a_stage1_work_tensor(api, tensor):
    """function(api, tensor) checks tensor when asked (it used to return a function whose
    every call raised KeyError)."""
    msg = _bad(Code.BAD_ARGUMENT, "tensor", g.function, api, tensor)
    assert "'dst'" in msg
    allowed = msg.split("allowed:")[1]
    assert ("'work_tensor'" in allowed) == (api == "reduce_sum")
    call = g.function("whole_reduce_sum").prepare(X, *ARGS, chip=A2)
    _bad(Code.BAD_ARGUMENT, "tensor", g.results, call, X, tensor)
    assert g.function("reduce_sum", "work_tensor") is g.reduce_sum_stage1


def test_plan_read_count_n_covers_every_element_read():
    p = g.plan("whole_reduce_sum", X, *ARGS, chip=A2)
    full = p.read_count(512)
    need = int(np.flatnonzero(full).max()) + 1
    msg = _bad(Code.BAD_ARGUMENT, "n", p.read_count, 10)
    assert f"[{need}," in msg
    for n in (-1, 2.5, "512", True):
        _bad(Code.BAD_ARGUMENT, "n", p.read_count, n)
    np.testing.assert_array_equal(p.read_count(need), full[:need])
    np.testing.assert_array_equal(p.read_count(np.int64(512)), full)


@pytest.mark.parametrize("values", [jnp.zeros(0, jnp.float16), jnp.zeros(3, jnp.float16),
                                    jnp.zeros((), jnp.float16), np.zeros((2, 6), np.float32),
                                    [1.0, 2.0]])
def test_tree_sum_needs_a_power_of_two_last_axis(values):
    msg = _bad(Code.BAD_ARGUMENT, "values", g.tree_sum, values)
    assert "tree_sum" in msg


def test_tree_sum_saturate_is_a_bool_not_truthiness():
    """saturate="no" used to saturate (a truthy string); 1 / True still do."""
    x = jnp.asarray(np.array([60000, 60000, 1, 1], np.float16))
    _bad(Code.BAD_ARGUMENT, "saturate", g.tree_sum, x, saturate="no")
    _bad(Code.BAD_ARGUMENT, "saturate", g.tree_sum, x, saturate=2)
    assert float(g.tree_sum(x, saturate=1)) == float(g.tree_sum(x, saturate=True)) == 65504.0
    assert float(g.tree_sum(x, saturate=0)) == np.inf
