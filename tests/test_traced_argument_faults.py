"""Traced arguments whose values cannot be judged before the kernel runs: they are judged in
it (a status, as every traced rule), never read by truthiness or wrapped into range.

Before: a traced ``saturate`` of ``jnp.int32(5)`` acted as True with status 0; a traced int32
``[4]`` lane-word mask holding -1 wrapped to 0xFFFFFFFF (lanes 0-31) with status 0, where the
same concrete values are BAD_ARGUMENT / MASK_BITS. Expected outcomes here come from the eager
call on the same values (the concrete path judges them before the kernel) and, for values in
range, from the same call with the canonical type (bool / uint32)."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Code, ConstraintError, Tensor
from ascend_ref import mask as masks

A2 = "atlas_a2"
DATA = np.linspace(-3e4, 6e4, 256).astype(np.float16)        # sums overflow half: saturate shows


def _ub():
    return ar.store(ar.new_ub(A2), 0, DATA)


def _sum(ub, sat, mask):
    return ar.ascendc.whole_reduce_sum(ub, Tensor(1024, "half", 4), Tensor(0, "half", 256),
                                       mask, 2, 1, 1, 8, chip=A2, saturate=sat, return_info=True)


def _status(info):
    return np.asarray(info.status).tolist()


@pytest.mark.parametrize("sat", [0, 1])
def test_traced_integer_saturate_0_1_is_the_bool(sat):
    ub = _ub()
    want, winfo = _sum(ub, bool(sat), 128)
    got, info = jax.jit(_sum)(ub, jnp.int32(sat), 128)
    assert _status(info) == _status(winfo) == 0
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("sat", [5, -1, 2])
def test_traced_integer_saturate_outside_0_1_is_bad_argument(sat):
    ub = _ub()
    with pytest.raises(ConstraintError) as e:                 # the concrete value: refused
        _sum(ub, np.int32(sat), 128)
    assert e.value.code == Code.BAD_ARGUMENT
    _, info = jax.jit(_sum)(ub, jnp.int32(sat), 128)          # traced: the same code, status
    assert _status(info) == int(Code.BAD_ARGUMENT)


def test_vmapped_saturate_is_judged_per_case():
    ub = _ub()
    sats = jnp.array([0, 1, 7, 1], jnp.int32)
    _, info = jax.vmap(_sum, in_axes=(None, 0, None))(ub, sats, 128)
    assert _status(info) == [0, 0, int(Code.BAD_ARGUMENT), 0]


@pytest.mark.parametrize("words", [[0xFFFF, 0, 1, 0], [0x7FFFFFFF, 3, 0, 0x7FFFFFFF]])
def test_traced_signed_lane_words_in_range_are_the_uint32_words(words):
    ub = _ub()
    want, winfo = _sum(ub, True, np.array(words, np.uint32))
    got, info = jax.jit(_sum)(ub, True, jnp.array(words, jnp.int32))
    assert _status(info) == _status(winfo) == 0
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("words", [[-1, 0, 0, 0], [1, 0, 0, -2**31]])
def test_traced_negative_lane_word_is_mask_bits_not_wrapped(words):
    ub = _ub()
    with pytest.raises(ConstraintError) as e:
        _sum(ub, True, np.array(words, np.int32))
    assert e.value.code == Code.MASK_BITS
    _, info = jax.jit(_sum)(ub, True, jnp.array(words, jnp.int32))
    assert _status(info) == int(Code.MASK_BITS)
    _, info = jax.vmap(_sum, in_axes=(None, None, 0))(
        ub, True, jnp.array([[1, 0, 0, 0], words], jnp.int32))
    assert _status(info) == [0, int(Code.MASK_BITS)]


def test_unsigned_lane_words_have_no_fault_to_judge():
    """uint32 / uint16 words are all in range: no per-call judgement is built for them;
    int32 words get one."""
    seen = []

    def probe(w):
        seen.append(masks.parse(w, "float16", api="x", chip="c").fault)
        return 0

    for dt in (jnp.uint32, jnp.uint16, jnp.int32):
        jax.eval_shape(probe, jax.ShapeDtypeStruct((4,), dt))
    assert seen[0] is None and seen[1] is None and seen[2] is not None


def test_concrete_jax_two_word_mask_is_bit_mode_as_numpy_and_the_list():
    """``jnp.array([8, 0])`` was BAD_ARGUMENT on the JAX path (numpy's and the list were
    lane 3): now all three are lane 3, on the JAX path and the oracle."""
    ub = _ub()
    want = np.asarray(_sum(ub, True, [8, 0])[0])
    for m in (np.array([8, 0]), jnp.array([8, 0])):
        np.testing.assert_array_equal(np.asarray(_sum(ub, True, m)[0]), want)
    assert ar.load(want, 1024, "float16", 2).tolist() == [float(DATA[3]), float(DATA[131])]
    from ascend_ref import oracle
    o = oracle.whole_reduce_sum(np.asarray(ub), Tensor(1024, "half", 4), Tensor(0, "half", 256),
                                jnp.array([8, 0]), 2, 1, 1, 8, chip=A2, saturate=True)
    np.testing.assert_array_equal(o.ub, want)


def test_traced_two_word_mask_is_refused_with_the_form_to_use():
    ub = _ub()
    with pytest.raises(ConstraintError) as e:
        jax.jit(_sum)(ub, True, jnp.array([8, 0]))
    assert e.value.code == Code.BAD_ARGUMENT and "uint32[4]" in str(e.value)


@pytest.mark.parametrize("word_order", ["TIK", "AscendC", None])
def test_word_order_is_checked_not_read_as_ascend_c(word_order):
    with pytest.raises(ValueError, match="word_order"):
        masks.parse([8, 0], "float16", api="x", chip="c", word_order=word_order)
    with pytest.raises(ValueError, match="word_order"):
        masks.low_first([8, 0], word_order)
    with pytest.raises(ValueError, match="word_order"):
        masks.api_words([8, 0], word_order)


@pytest.mark.parametrize("mode", ["COUNT", "bit", ""])
def test_mask_mode_string_is_checked_not_read_as_bits(mode):
    words = np.array([3, 0, 0, 0], np.uint32)
    for fn in (lambda: masks.lane_bits(mode, words, 128), lambda: masks.is_zero(mode, words),
               lambda: masks.rules(mode, "float16", "error")):
        with pytest.raises(ValueError, match="mask mode"):
            fn()


def test_counter_mask_equality_and_hash_by_value():
    C = ar.CounterMask
    assert C(5) == C(np.int64(5)) == C(np.array(5)) and hash(C(5)) == hash(C(np.int64(5)))
    assert C(5) != C(6) and C(5) != 5
    assert C([5]) == C([5]) and len({C([5]), C([5])}) == 1          # was unhashable
    assert C(np.array([1, 2])) == C(np.array([1, 2]))               # was an ambiguous truth value
    assert C(np.array([1, 2])) != C(np.array([1, 3]))
    assert C(np.array([1, 2], np.int32)) != C(np.array([1, 2], np.int64))


def test_traced_64_bit_masks_are_judged_not_wrapped():
    """Under jax_enable_x64 (a process of its own: the flag is global), an int64 count of
    2**32 + 64 is MASK_RANGE, not 64, and int64 lane words past 2**32 - 1 are MASK_BITS."""
    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        import ascend_ref as ar
        ub = ar.store(ar.new_ub("atlas_a2"), 0, np.ones(256, np.float16))
        def f(m):
            return ar.ascendc.whole_reduce_sum(ub, ar.Tensor(1024, "half", 4),
                ar.Tensor(0, "half", 256), m, 1, 1, 1, 8, chip="atlas_a2", return_info=True)[1]
        print(int(jax.jit(f)(jnp.int64(2**32 + 64)).status),
              int(jax.jit(f)(jnp.int64(-2**32 + 64)).status),
              int(jax.jit(f)(jnp.int64(64)).status),
              int(jax.jit(f)(jnp.array([2**32 + 1, 0, 0, 0], jnp.int64)).status),
              int(jax.jit(f)(jnp.array([1, 0, 0, 0], jnp.uint64)).status),
              int(jax.jit(f)(jnp.array([2**32, 0, 0, 0], jnp.uint64)).status))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(int(c)) for c in (Code.MASK_RANGE, Code.MASK_RANGE, 0,
                                                         Code.MASK_BITS, 0, Code.MASK_BITS)]


def test_traced_64_bit_scalars_are_judged_not_wrapped():
    """Under jax_enable_x64 a traced int64 / uint64 repeat, stride, address, size or counter
    count past int32 got the low 32 bits (2**32 + 2 ran as a repeat of 2, status 0); now each
    gets the code its concrete value gets, and values inside int32 still run (status 0)."""
    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        import ascend_ref as ar
        from ascend_ref import Tensor
        ub = ar.store(ar.new_ub("atlas_a2"), 0, np.ones(1024, np.float16))
        def f(ub, r, a, s, m, rs):
            return ar.ascendc.whole_reduce_sum(ub, Tensor(a, "half", s), Tensor(0, "half", 1024),
                m, r, 1, 1, rs, chip="atlas_a2", return_info=True)[1].status
        def eager(*args):
            try:
                return int(f(ub, *args))
            except ar.ConstraintError as e:
                return int(e.code)
        rows = [(2**32 + 2, 8192, 64, 128, 8), (2, 2**32 + 8192, 64, 128, 8),
                (2, 8192, 2**32, 128, 8), (2, 8192, 2**32 + 64, 128, 8),
                (2, 8192, 64, 128, 2**32 + 8), (2, 8192, 64, 128, 8)]
        for r, a, s, m, rs in rows:
            traced = jax.jit(f)(ub, jnp.int64(r), jnp.int64(a), jnp.int64(s), m, jnp.int64(rs))
            print(eager(r, a, s, m, rs), int(traced))
        for n, dt in ((2**32 + 200, jnp.int64), (2**32 + 64, jnp.uint64), (200, jnp.int64)):
            traced = jax.jit(f)(ub, 1, 8192, 64, ar.CounterMask(dt(n)), 8)
            print(eager(1, 8192, 64, ar.CounterMask(n), 8), int(traced))
        print(eager(2, 8192, 64, 128, 2**31 + 8),
              int(jax.jit(f)(ub, 2, 8192, 64, 128, jnp.uint32(2**31 + 8))))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()]
    assert len(rows) == 10
    for eager, traced in rows:
        assert eager == traced, rows
    assert [r[0] for r in rows] == [str(int(c)) for c in (
        Code.REPEAT_RANGE, Code.UB_BOUNDS, Code.UB_BOUNDS, Code.UB_BOUNDS, Code.STRIDE_RANGE,
        0, Code.MASK_RANGE, Code.MASK_RANGE, 0, Code.STRIDE_RANGE)]


def _vcadd(ub, su):
    return ar.tik.vcadd(ub, 128, Tensor(1024, "half", 2), Tensor(0, "half", 256), 2, 1, 1, 8,
                        su, chip=A2, return_info=True)


def test_traced_stride_unit_is_judged_in_the_kernel():
    """TIK vc*'s stride_unit refused every traced value (0 too) at trace time; now a traced
    0 runs as the concrete 0 does and any other value is the status STRIDE_RANGE, the code
    the concrete value raises."""
    ub = _ub()
    want, winfo = _vcadd(ub, 0)
    got, info = jax.jit(_vcadd)(ub, jnp.int32(0))
    assert _status(info) == _status(winfo) == 0
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(ConstraintError) as e:
        _vcadd(ub, 2)
    assert e.value.code == Code.STRIDE_RANGE
    assert _status(jax.jit(_vcadd)(ub, jnp.int32(2))[1]) == int(Code.STRIDE_RANGE)
    _, info = jax.vmap(_vcadd, in_axes=(None, 0))(ub, jnp.array([0, 1, 0], jnp.int32))
    assert _status(info) == [0, int(Code.STRIDE_RANGE), 0]
    with pytest.raises(ConstraintError) as e:                  # a traced float: its form
        jax.jit(_vcadd)(ub, jnp.float32(0))
    assert e.value.code == Code.BAD_ARGUMENT


@pytest.mark.parametrize("api, flag", [("vcmax", "index_low"), ("vec_reduce_min", "cal_index")])
def test_a_traced_flag_option_says_it_must_be_known_when_traced(api, flag):
    """cal_index / index_low choose the kernel (the result's layout): a traced one cannot be
    judged in the kernel as saturate is; the error says so and how to pass it (it printed
    'index_low = JitTracer(bool[]) is not allowed; allowed: True / False')."""
    ub = ar.new_ub(A2, size=16384)
    dst, src = Tensor(4096, "half", 64), Tensor(0, "half", 128)
    if api == "vcmax":
        call = lambda u, f: ar.tik.vcmax(u, 128, dst, src, 1, 1, 1, 8, 0, f, chip=A2)  # noqa: E731
    else:
        call = lambda u, f: ar.tik.vec_reduce_min(u, 128, dst, src, Tensor(6144, "half", 64),  # noqa: E731
                                                  1, 8, f, chip=A2)
    call(ub, True)                                  # concrete: fine
    with pytest.raises(ConstraintError) as e:
        jax.jit(call)(ub, True)
    assert (e.value.code, e.value.api, e.value.param, e.value.value) == \
        (Code.BAD_ARGUMENT, api, flag, "a traced value")
    assert "static_argnames" in str(e.value) and "Tracer" not in str(e.value)
    with pytest.raises(ConstraintError) as e:       # a concrete non-flag keeps its own text
        call(ub, 2)
    assert e.value.value == 2 and e.value.code == Code.BAD_ARGUMENT
