"""No wrapped parameter, no silent truncation (issue 13 D1-D9, alias order).

Sizes and addresses near and past int32 are judged like the oracle's unbounded integers, in
eager calls, under vmap and in run_batch; run_batch rejects what it would have to wrap or
truncate; load / store / chip / mask reject what they would have to guess.
"""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Tensor
from ascend_ref.case import Case, Outcome, run_jax, run_oracle
from ascend_ref.fuzz.compare import diff

A2 = "atlas_a2"


def _code(fn):
    try:
        fn()
    except ar.ConstraintError as e:
        return e.code, str(e)
    except ar.oracle.OracleError as e:
        return e.code, str(e)
    return ar.Code.OK, ""


def _ub(chip=A2):
    return np.zeros(ar.chip(chip).ub_bytes, np.uint8)


# (description, api, dst, src, work, repeat, chip); work None for Ascend C
HUGE = [
    ("src 4 GiB extent", "whole_reduce_sum", (1024, 8), (0, 2**30 + 64), None, 1, A2),
    ("dst 2**31-1 floats", "whole_reduce_sum", (1024, 2**31 - 1), (0, 64), None, 1, A2),
    ("dst 2**31-1 halves", "whole_reduce_min", (1024, 2**31 - 1), (0, 128), None, 1, A2),
    ("dst addr 2**31-4", "whole_reduce_sum", (2**31 - 4, 8), (0, 64), None, 1, A2),
    ("dst addr 2**31-32", "whole_reduce_sum", (2**31 - 32, 8), (0, 64), None, 1, A2),
    ("src addr 2**31-32", "reduce_data_block", (4096, 64), (2**31 - 32, 128), None, 1, A2),
    ("dst addr 2**40", "whole_reduce_min", (2**40, 16), (0, 128), None, 1, A2),
    ("dst addr 2**40+2", "whole_reduce_min", (2**40 + 2, 16), (0, 128), None, 1, A2),
    ("dst size 2**40", "whole_reduce_sum", (1024, 2**40), (0, 64), None, 1, A2),
    ("repeat 2**40", "whole_reduce_sum", (1024, 8), (0, 64), None, 2**40, A2),
    ("repeat 2**31", "whole_reduce_sum", (1024, 8), (0, 64), None, 2**31, A2),
    ("TIK work 2**31-1", "vec_reduce_add", (4096, 16), (0, 128), (8192, 2**31 - 1), 1,
     "atlas_training"),
    ("TIK work addr 2**31-32", "vec_reduce_max", (4096, 16), (0, 128), (2**31 - 32, 64), 1,
     "atlas_training"),
    ("TIK repeat 2**33", "vec_reduce_min", (4096, 16), (0, 128), (8192, 64), 2**33,
     "atlas_training"),
]


def _call(mod, api, dst, src, work, repeat, chip, ub=None):
    dt = "float32" if api == "whole_reduce_sum" else "float16"
    mask = 64 if dt == "float32" else 128
    t = lambda a_n: Tensor(a_n[0], dt, a_n[1])               # noqa: E731
    ub = _ub(chip) if ub is None else ub
    if work is not None:
        return lambda: getattr(mod.tik if mod is ar else mod, api)(
            ub, mask, t(dst), t(src), t(work), repeat, 8, chip=chip)
    f = getattr(mod.ascendc if mod is ar else mod, api)
    if api == "reduce_data_block":
        return lambda: f(ub, t(dst), t(src), mask, repeat, 1, 1, 8, reduce_type="SUM", chip=chip)
    return lambda: f(ub, t(dst), t(src), mask, repeat, 1, 1, 8, chip=chip)


@pytest.mark.parametrize("desc, api, dst, src, work, repeat, chip", HUGE, ids=[h[0] for h in HUGE])
def test_huge_values_get_the_oracles_code_and_show_the_value(desc, api, dst, src, work, repeat,
                                                             chip):
    want, _ = _code(_call(ar.oracle, api, dst, src, work, repeat, chip))
    got, msg = _code(_call(ar, api, dst, src, work, repeat, chip))
    assert want != ar.Code.OK and got == want, (desc, msg)
    assert "-1 is not" not in msg and "= -1" not in msg
    # the value given, not a stand-in, of whichever parameter the error names: a count as
    # given, a tensor as its byte extent [addr, addr + size * itemsize)
    s = 4 if api == "whole_reduce_sum" else 2
    given = {f"repeat{tail}": repeat for tail in ("", "_time", "_times")}
    for name, (a, n) in (("dst", dst), ("src", src), ("work_tensor", work or (0, 0))):
        given[name] = f"'bytes [{a}, {a + n * s})'"
        given[f"{name}.addr"], given[f"{name}.size"] = a, n
    param = msg.split("] ", 1)[1].split(": ", 1)[1].split(" = ", 1)[0]
    assert param in given and f"{param} = {given[param]} " in msg, msg


def test_vmapped_addresses_near_int32_get_ub_bounds():
    ub = jnp.zeros(ar.chip(A2).ub_bytes, jnp.uint8)

    def status(a):
        _, info = ar.ascendc.whole_reduce_sum(ub, Tensor(a, "float32", 8), Tensor(0, "float32", 64),
                                              64, 1, 1, 1, 8, chip=A2, return_info=True)
        return info.status

    addrs = [1024, 2**31 - 4, 2**31 - 32, 196608 - 32, 196608 - 16, 2**31 - 2]
    got = jax.vmap(status)(jnp.array(addrs, jnp.int32)).tolist()
    want = [int(_code(lambda: ar.oracle.whole_reduce_sum(
        _ub(), Tensor(a, "float32", 8), Tensor(0, "float32", 64), 64, 1, 1, 1, 8,
        chip=A2))[0]) for a in addrs]
    assert got == want and want[1:3] == [int(ar.Code.UB_BOUNDS)] * 2

    def status_size(n):
        _, info = ar.ascendc.whole_reduce_sum(ub, Tensor(1024, "float32", n),
                                              Tensor(0, "float32", 64), 64, 1, 1, 1, 8, chip=A2,
                                              return_info=True)
        return info.status

    sizes = [8, 2**31 - 1, 2**30, (196608 - 1024) // 4, (196608 - 1024) // 4 + 1]
    got = jax.vmap(status_size)(jnp.array(sizes, jnp.int32)).tolist()
    want = [int(_code(lambda: ar.oracle.whole_reduce_sum(
        _ub(), Tensor(1024, "float32", n), Tensor(0, "float32", 64), 64, 1, 1, 1, 8,
        chip=A2))[0]) for n in sizes]
    assert got == want and want[1] == int(ar.Code.UB_BOUNDS)


def _batch(**over):
    b = 8
    kw = dict(chip=A2, dtype="float", mask=64, repeat=1, dst_rep_stride=1, src_blk_stride=1,
              src_rep_stride=8, dst=(1024, 8), src=(0, 64))
    kw.update(over)
    return ar.run_batch("whole_reduce_sum", np.zeros((b, 2048), np.uint8), **kw)


@pytest.mark.parametrize("over, param", [
    (dict(repeat=2**40), "repeat"), (dict(repeat=np.full(8, 1.7)), "repeat"),
    (dict(dst=(np.full(8, 2**32 + 512, np.int64), 8)), "dst.addr"),
    (dict(src=(0, np.full(8, 2**31, np.uint64))), "src.size"),
    (dict(src_rep_stride=-(2**31) - 1), "src_rep_stride"), (dict(repeat="3"), "repeat"),
    (dict(repeat=np.ones(3, int)), "repeat"), (dict(mask=np.full(8, 64.0)), "mask"),
    (dict(saturate="yes"), "saturate"), (dict(saturate=np.full(8, 2)), "saturate"),
    (dict(dst=5), "dst"), (dict(ub_base=1.5), "ub_base"),
    (dict(mask=np.ones(4, np.uint32)), "mask"), (dict(mask_mode="words"), "mask_mode"),
    (dict(mask=np.full((8, 4), 2**33), mask_mode="bits"), "mask"),
])
def test_run_batch_rejects_wrapped_or_truncated_parameters(over, param):
    with pytest.raises(ar.ConstraintError) as e:
        _batch(**over)
    assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == param, str(e.value)
    assert f": {param} = " in str(e.value)


@pytest.mark.parametrize("api, over", [
    ("whole_reduce_sum", dict(order="ORDER_VALUE_INDEX")),
    ("whole_reduce_sum", dict(reduce_type="SUM")), ("whole_reduce_sum", dict(cal_index=True)),
    ("whole_reduce_min", dict(saturate=False)), ("whole_reduce_min", dict(saturate=True)),
    ("whole_reduce_sum", dict(max_repeat=0)), ("whole_reduce_sum", dict(max_repeat="255")),
    ("whole_reduce_sum", dict(max_repeat=True)), ("whole_reduce_sum", dict(max_repeat=2.0)),
])
def test_run_batch_rejects_keywords_the_api_does_not_take(api, over):
    """A keyword of another API (the public function: TypeError, unexpected keyword) and a
    table height that is not a positive int are BAD_ARGUMENT errors naming them, not
    ignored (saturate for WholeReduceMin) nor a traceback (max_repeat 0 or a string)."""
    kw = dict(chip=A2, dtype="float16", mask=128, repeat=1, dst_rep_stride=1, src_blk_stride=1,
              src_rep_stride=8, dst=(1024, 16), src=(0, 128), **over)
    with pytest.raises(ar.ConstraintError) as e:
        ar.run_batch(api, np.zeros((2, 2048), np.uint8), **kw)
    param = next(iter(over))
    assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == param
    assert param in str(e.value)
    with pytest.raises(TypeError, match=param):        # what the public function does
        getattr(ar.ascendc, api)(np.zeros(2048, np.uint8), Tensor(1024, "half", 16),
                                 Tensor(0, "half", 128), 128, 1, 1, 1, 8, chip=A2,
                                 **{param: over[param]})


def test_run_batch_defaults_of_other_keywords_are_accepted():
    """The signature's defaults (``order`` / ``reduce_type`` / ``saturate`` None,
    ``cal_index`` False) stand for "not given"."""
    _, st = ar.run_batch("whole_reduce_min", np.zeros((2, 2048), np.uint8), chip=A2,
                         dtype="float16", mask=128, repeat=1, dst_rep_stride=1,
                         src_blk_stride=1, src_rep_stride=8, dst=(1024, 16), src=(0, 128),
                         order=None, reduce_type=None, cal_index=np.False_, saturate=None)
    assert st.tolist() == [0, 0]


@pytest.mark.parametrize("api, kw", [
    ("whole_reduce_min", dict(dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8,
                              dst=(0, 16), src=(0, 128))),
    ("vec_reduce_add", dict(src_rep_stride=8, dst=(0, 16), src=(0, 128), work_tensor=(0, 64))),
])
def test_run_batch_on_no_rows_or_a_ub_of_no_bytes(api, kw):
    """``uint8[0, W]``: nothing to run, an empty result (was a ValueError from reshape).
    ``uint8[B, 0]``: each case gets the code its public function raises on a 0-byte UB
    (was a TypeError from the gather), on both paths, and the result has no column."""
    ins = ar.registry.lookup(api)
    rep = ins.public_arg("repeat")
    out, st = ar.run_batch(api, np.zeros((0, 2048), np.uint8), chip=A2, dtype="float16",
                           mask=128, **{rep: 1}, **kw)
    assert out.shape == (0, 2048) and st.shape == (0,)
    repeats = np.array([1, 0, -1, 3])
    want = []
    for r in repeats.tolist():
        c = Case(api, A2, "float16", ins.canonical_option(None), 128,
                 {"repeat": r, **{k: v for k, v in kw.items() if k in ins.params}},
                 {k: v for k, v in kw.items() if k in ins.operands}, np.zeros(0, np.uint8))
        o = run_oracle(c)
        assert diff(o, run_jax(c)) is None, c.describe()
        want.append(int(o.code))
    assert int(ar.Code.UB_BOUNDS) in want
    for path in ("fast", "general"):
        with ar.engine.use_path(path):
            out, st, und = ar.run_batch(api, np.zeros((4, 0), np.uint8), chip=A2,
                                        dtype="float16", mask=128, **{rep: repeats}, **kw,
                                        return_undefined=True)
        assert out.shape == und.shape == (4, 0) and st.tolist() == want, path


def test_run_batch_in_range_values_and_explicit_mask_mode():
    _, st = _batch(dst=(np.full(8, 2**31 - 32, np.int64), 8))
    assert st.tolist() == [int(ar.Code.UB_BOUNDS)] * 8           # D1 in run_batch
    words = np.array([2**32 - 1, 2**32 - 1, 0, 0], np.uint32)
    _, st_bits = _batch(mask=words, mask_mode="bits")
    _, st_words2d = _batch(mask=np.tile(words, (8, 1)))
    assert st_bits.tolist() == st_words2d.tolist() == [0] * 8
    out4, st4 = ar.run_batch("whole_reduce_sum", np.zeros((4, 2048), np.uint8), chip=A2,
                             dtype="float", mask=np.array([64, 0, 1, 65]), repeat=1,
                             dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8, dst=(1024, 8),
                             src=(0, 64))
    assert st4.tolist() == [0, 0, 0, int(ar.Code.MASK_RANGE)]   # 1-D: counts, whatever B
    _, st = _batch(saturate=np.zeros(8, bool))
    assert st.tolist() == [0] * 8


def test_run_batch_cal_index_must_be_a_bool():
    with pytest.raises(ar.ConstraintError, match="cal_index"):
        ar.run_batch("vec_reduce_max", np.zeros((2, 4096), np.uint8), chip="atlas_training",
                     dtype="half", mask=128, cal_index="no", repeat=1, src_rep_stride=8,
                     src=(0, 128), dst=(2048, 16), work_tensor=(2112, 64))


def test_run_batch_never_touches_the_callers_ubs_on_one_device():
    ubs = np.random.default_rng(0).integers(0, 256, (8, 2048), dtype=np.uint8)
    keep = ubs.copy()
    out, st = ar.run_batch("whole_reduce_sum", ubs, chip=A2, dtype="float", mask=64, repeat=1,
                           dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8, dst=(1024, 8),
                           src=(0, 64))
    assert np.array_equal(ubs, keep) and not np.array_equal(out, keep)
    j = jnp.asarray(keep)
    out2, _ = ar.run_batch("whole_reduce_sum", j, chip=A2, dtype="float", mask=64, repeat=1,
                           dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8, dst=(1024, 8),
                           src=(0, 64))
    assert not j.is_deleted() and np.array_equal(np.asarray(j), keep)
    assert np.array_equal(out, out2)


def test_run_batch_never_deletes_a_sharded_callers_ubs():
    script = textwrap.dedent("""
        import numpy as np, jax, ascend_ref as ar
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        assert len(jax.devices()) == 4
        keep = np.random.default_rng(0).integers(0, 256, (8, 2048), dtype=np.uint8)
        rows = NamedSharding(Mesh(np.array(jax.devices()), ("case",)), P("case"))
        j = jax.device_put(keep, rows)
        kw = dict(chip="atlas_a2", dtype="float", mask=64, repeat=1, dst_rep_stride=1,
                  src_blk_stride=1, src_rep_stride=8, dst=(1024, 8), src=(0, 64))
        out, st = ar.run_batch("whole_reduce_sum", j, **kw)
        assert not j.is_deleted(), "the caller's sharded ubs was donated"
        assert (np.asarray(j) == keep).all()
        one, _ = ar.run_batch("whole_reduce_sum", keep, devices=jax.devices()[:1], **kw)
        assert (out == one).all() and (st == 0).all()
        print("KEPT")
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "KEPT" in r.stdout


@pytest.mark.parametrize("addr, count", [(0, -1), (60, -40), (0, 1.5), (0, "2"), (0, True)])
def test_load_count_must_be_a_non_negative_int(addr, count):
    with pytest.raises(ar.ConstraintError) as e:
        ar.load(ar.new_ub(size=64), addr, "float16", count)
    assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == "count"


def test_load_count_zero_and_bounds():
    ub = ar.new_ub(size=64)
    assert ar.load(ub, 64, "float16", 0).shape == (0,)
    with pytest.raises(ar.ConstraintError) as e:
        ar.load(ub, 60, "float16", 3)
    assert e.value.code == ar.Code.UB_BOUNDS


@pytest.mark.parametrize("values", [[1.5, 2], 1.0, np.array([1.5]), np.array([True]),
                                    np.array([1], np.int64), "ab"])
def test_store_needs_an_element_type(values):
    with pytest.raises(ar.ConstraintError) as e:
        ar.store(ar.new_ub(size=64), 0, values)
    assert e.value.code == ar.Code.BAD_ARGUMENT and "dtype" in str(e.value)


def test_store_with_dtype_and_element_arrays():
    ub = ar.store(ar.new_ub(size=64), 0, [1.5, 2], dtype="half")
    assert np.asarray(ub)[4:].tolist() == [0] * 60                   # 4 bytes, not 16
    assert ar.load(ub, 0, "float16", 2).tolist() == [1.5, 2.0]
    ub = ar.store(ub, 8, 1.0, dtype="float32")
    assert ar.load(ub, 8, "float32", 1).tolist() == [1.0] and np.asarray(ub)[12:].sum() == 0
    for dt in ("float16", "float32", "int16", "uint16", "int32", "uint32", "uint8", "int8"):
        x = np.arange(3).astype(dt)
        got = np.asarray(ar.store(ar.new_ub(size=64), 0, x))[:x.nbytes]
        assert np.array_equal(got, x.view(np.uint8))
    with pytest.raises(ar.ConstraintError):
        ar.store(ar.new_ub(size=64), 0, [70000], dtype="int16")


def test_run_batch_says_how_to_pass_a_mask_or_a_missing_parameter():
    """A bit mask in the APIs' two 64-bit words, a CounterMask and a missing parameter get
    a message that says what run_batch takes (they showed 'shape (2,)' alone, the object
    array of the CounterMask, and 'repeat = None' naming run_batch)."""
    ubs = np.zeros((4, 1024), np.uint8)
    kw = dict(chip="atlas_a2", dtype="half", src=(0, 128), dst=(512, 16), repeat_time=1,
              src_blk_stride=1, src_rep_stride=8, dst_rep_stride=1, mask=128)
    for over, drop, words in (
            ({"mask": [1, 0]}, None, "lane words are four uint32 words here"),
            ({"mask": ar.CounterMask(5)}, None, "mask = CounterMask(5) is not allowed; "
                                                "allowed: lane counts or lane words: run_batch "
                                                "has no counter mode"),
            ({}, "repeat_time", "repeat_time = 'missing' is not allowed; allowed: an int or a "
                                "[B] int array: pass repeat_time=..."),
            ({}, "dst", "dst = 'missing' is not allowed; allowed: an (addr, size) pair: pass "
                        "dst=(addr, size)")):
        args = {k: v for k, v in {**kw, **over}.items() if k != drop}
        with pytest.raises(ar.ConstraintError) as e:
            ar.run_batch("whole_reduce_sum", ubs, **args)
        assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.api == "whole_reduce_sum"
        assert words in str(e.value), str(e.value)
    # the words themselves run, as bits
    out, status = ar.run_batch("whole_reduce_sum", ubs, **{**kw, "mask": [1, 0, 0, 0]},
                               mask_mode="bits")
    assert (status == 0).all()


def test_store_under_jit_and_vmap_writes_the_traced_values_bytes():
    """store inside jax.jit / jax.vmap: a traced array of a UB element type is written as
    that type's little-endian bytes, as a concrete one is (it was a raw JAX
    TracerArrayConversionError); dtype= or another element type is a BAD_ARGUMENT."""
    ub0 = ar.new_ub(size=256)
    for dt in (np.float16, np.float32, np.int16, np.uint16, np.int32, np.uint32, np.int8,
               np.uint8):
        x = (np.arange(8) * 37 - 100).astype(dt)
        got = jax.jit(lambda v: ar.store(ub0, 32, v))(jnp.asarray(x))
        want = np.zeros(256, np.uint8)
        want[32:32 + x.nbytes] = np.frombuffer(x.astype(x.dtype.newbyteorder("<")).tobytes(),
                                                np.uint8)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(dt))
    xs = np.random.default_rng(0).standard_normal((5, 128)).astype(np.float16)

    def one(v):
        return ar.ascendc.whole_reduce_sum(ar.store(ar.new_ub(size=1024), 0, v),
                                           Tensor(512, "half", 16), Tensor(0, "half", 128), 128,
                                           1, 1, 1, 8, chip="atlas_a2")
    batched = np.asarray(jax.vmap(one)(jnp.asarray(xs)))
    for k, x in enumerate(xs):
        np.testing.assert_array_equal(batched[k], np.asarray(one(x)))
    for v, kw, what in ((jnp.ones(4, jnp.float16), {"dtype": "half"}, "with dtype='half'"),
                        (jnp.ones(4, bool), {}, "a traced bool array")):
        with pytest.raises(ar.ConstraintError, match=what) as e:
            jax.jit(lambda v: ar.store(ub0, 0, v, **kw))(v)
        assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.api == "store"
    with pytest.raises(ar.ConstraintError) as e:
        jax.jit(lambda v: ar.store(ub0, 250, v))(jnp.ones(4, jnp.float16))
    assert e.value.code == ar.Code.UB_BOUNDS


def test_load_under_jit_says_how_to_read_a_traced_ub():
    """load returns numpy: a traced UB was JAX's raw TracerArrayConversionError; now a
    BAD_ARGUMENT whose message gives the read that works there (run here: the same bits)."""
    x = np.array([1.5, -0.0, 65504.0], np.float16)
    ub = ar.store(ar.new_ub(size=64), 8, x)
    with pytest.raises(ar.ConstraintError, match=r"bitcast_convert_type\(ub\[addr:addr \+ "
                                                 r"count \* 2\]\.reshape\(count, 2\)") as e:
        jax.jit(lambda u: ar.load(u, 8, "float16", 3))(ub)
    assert (e.value.code, e.value.api, e.value.param) == (ar.Code.BAD_ARGUMENT, "load", "ub")
    read = jax.jit(lambda u: jax.lax.bitcast_convert_type(u[8:8 + 3 * 2].reshape(3, 2),
                                                          "float16"))(ub)
    np.testing.assert_array_equal(np.asarray(read).view(np.uint16), x.view(np.uint16))
    np.testing.assert_array_equal(ar.load(ub, 8, "float16", 3).view(np.uint16),
                                  x.view(np.uint16))


@pytest.mark.parametrize("bad", [["x"], ["atlas_a2"], {"id": "atlas_a2"}, 3, None])
def test_chip_of_a_non_string_is_chip_unknown(bad):
    with pytest.raises(ar.ConstraintError) as e:
        ar.chip(bad)
    assert e.value.code == ar.Code.CHIP_UNKNOWN
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.whole_reduce_sum(_ub(), Tensor(1024, "float", 8), Tensor(0, "float", 64), 64, 1,
                                    1, 1, 8, chip=bad)
    assert e.value.code == ar.Code.CHIP_UNKNOWN


def test_ub_and_chip_errors_name_the_api_called():
    """A UB that is no uint8 array and an unknown product id are reported by the API the
    caller called (they named the helpers that check them, ``ub`` and ``chip``), for every
    registered instruction; ``load`` / ``store`` name themselves, ``ar.chip`` itself too."""
    from ascend_ref import explain, registry

    for ins in registry.all():
        case = explain.make_case(ins.name)
        for field, bad, code in (("ub", case.ub.view(np.int8), ar.Code.BAD_ARGUMENT),
                                 ("ub", case.ub.tolist(), ar.Code.BAD_ARGUMENT),
                                 ("chip", "atlas_a9", ar.Code.CHIP_UNKNOWN)):
            broken = Case(**{**vars(case), field: bad})
            with pytest.raises(ar.ConstraintError) as e:
                broken.call(ar)
            assert (e.value.code, e.value.api, e.value.param) == (code, ins.name, field), \
                (ins.name, field, str(e.value))
            assert str(e.value).startswith(f"[{code.name}] {ins.name}: {field} = "), str(e.value)
    with pytest.raises(ar.ConstraintError, match=r"^\[BAD_ARGUMENT\] load: ub = 'list \(not an "
                                                 r"array\)'"):
        ar.load([0, 0], 0, "uint16", 1)
    with pytest.raises(ar.ConstraintError, match=r"^\[BAD_ARGUMENT\] store: ub = 'ndarray int8"):
        ar.store(np.zeros(4, np.int8), 0, [1], dtype="int16")
    with pytest.raises(ar.ConstraintError, match=r"^\[CHIP_UNKNOWN\] chip: chip = 'atlas_a9'"):
        ar.chip("atlas_a9")


@pytest.mark.parametrize("mask", [np.array(64.7), np.array(64.0), jnp.array(64.5),
                                  np.array(True), np.full(4, 1.0)])
def test_float_or_bool_array_masks_are_rejected(mask):
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.whole_reduce_sum(_ub(), Tensor(1024, "float", 8), Tensor(0, "float", 64), mask,
                                    1, 1, 1, 8, chip=A2)
    assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == "mask"


def test_integer_0d_masks_are_judged_like_ints():
    args = (Tensor(1024, "float", 8), Tensor(0, "float", 64))
    ok = ar.ascendc.whole_reduce_sum(_ub(), *args, np.array(64), 1, 1, 1, 8, chip=A2)
    assert np.array_equal(np.asarray(ok), np.asarray(
        ar.ascendc.whole_reduce_sum(_ub(), *args, 64, 1, 1, 1, 8, chip=A2)))
    for m in (np.array(2**32 + 64), np.array(-1)):          # never wrapped to 64
        with pytest.raises(ar.ConstraintError) as e:
            ar.ascendc.whole_reduce_sum(_ub(), *args, m, 1, 1, 1, 8, chip=A2)
        assert e.value.code == ar.Code.MASK_RANGE


def test_block_reduce_aliases_take_the_documented_order():
    """BlockReduceSum/Max/Min(dst, src, repeat, mask, dstRepStride, srcBlkStride, srcRepStride)."""
    x = np.random.default_rng(1).standard_normal(512).astype(np.float16)
    ub = np.zeros(8192, np.uint8)
    ub[:1024] = x.view(np.uint8)
    dst, src = Tensor(4096, "half", 64), Tensor(0, "half", 512)
    for name, rt in (("block_reduce_sum", "SUM"), ("block_reduce_max", "MAX"),
                     ("block_reduce_min", "MIN")):
        want = ar.ascendc.reduce_data_block(ub, dst, src, 100, 3, 1, 1, 8, reduce_type=rt,
                                            chip=A2)
        got = getattr(ar.ascendc, name)(ub, dst, src, 3, 100, 1, 1, 8, chip=A2)   # repeat, mask
        assert np.array_equal(np.asarray(got), np.asarray(want)), name
        # the other order would be repeat 100 (> src), i.e. an error, not the same result;
        # the error names the function called, not the instruction it runs
        with pytest.raises(ar.ConstraintError) as e:
            getattr(ar.ascendc, name)(ub, dst, src, 100, 3, 1, 1, 8, chip=A2)
        assert e.value.api == name and str(e.value).startswith(f"[TENSOR_BOUNDS] {name}:"), \
            str(e.value)
        with pytest.raises(ar.ConstraintError) as e:          # a mask out of range
            getattr(ar.ascendc, name)(ub, dst, src, 3, 300, 1, 1, 8, chip=A2)
        assert (e.value.code, e.value.api, e.value.param) == (ar.Code.MASK_RANGE, name, "mask")


def test_reduce_pair_elem_errors_name_reduce_pair_elem():
    """ReducePairElem runs PairReduceSum; a bad argument is named as the caller called it."""
    ub = np.zeros(8192, np.uint8)
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.reduce_pair_elem(ub, Tensor(4096, "half", 64), Tensor(0, "half", 128), 300,
                                    1, 1, 1, 8, chip=A2)
    assert (e.value.code, e.value.api, e.value.param) == \
        (ar.Code.MASK_RANGE, "reduce_pair_elem", "mask")
    assert str(e.value).startswith("[MASK_RANGE] reduce_pair_elem: mask = 300"), str(e.value)


def test_a_case_missing_an_argument_is_bad_argument_on_every_path():
    """A Case without one of its instruction's parameters or operands (or with no dict of
    them): BAD_ARGUMENT naming it from the public call, the same code from run_jax, the
    oracle and run_cases (was a KeyError); run_columns without that column likewise."""
    p = {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    t = {"dst": (512, 16), "src": (0, 128)}
    ub = np.zeros(1024, np.uint8)
    good = Case("whole_reduce_sum", A2, "float16", None, 128, p, t, ub)
    assert run_jax(good).code is None
    pairs = Case("whole_reduce_sum", A2, "float16", None, 128, p,     # lists, numpy pairs
                 {"dst": np.array([512, 16]), "src": [0, 128]}, ub)
    assert {run_jax(pairs).code, run_oracle(pairs).code, ar.run_cases([pairs])[0].code} == {None}
    bad = {"dst_rep_stride": ({k: v for k, v in p.items() if k != "dst_rep_stride"}, t),
           "src": (p, {"dst": t["dst"]}), "case.params": (None, t),
           "dst": (p, {"dst": (512, 16, 1), "src": t["src"]})}      # not an (addr, size) pair
    for param, (params, tensors) in bad.items():
        c = Case("whole_reduce_sum", A2, "float16", None, 128, params, tensors, ub)
        with pytest.raises(ar.ConstraintError) as e:
            c.call(ar)
        assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == param
        codes = {run_jax(c).code, run_oracle(c).code, ar.run_cases([c])[0].code,
                 ar.run_cases([c, good])[0].code}
        assert codes == {ar.Code.BAD_ARGUMENT}, (param, codes)
        if params is not None and tensors["dst"] == t["dst"]:
            got = ar.run_columns("whole_reduce_sum", A2, "float16", None, 128, params,
                                 tensors, np.zeros((2, 1024), np.uint8))
            assert got.code.tolist() == [int(ar.Code.BAD_ARGUMENT)] * 2, param
    # a register setter asked for its registers: both paths give the code and a fresh state
    c = Case("whole_reduce_min", A2, "float16", "ORDER_VALUE_INDEX", 128, {"repeat": 1}, t, ub)
    for o in (run_jax(c, spr=True), run_oracle(c, spr=True)):
        assert o.code == ar.Code.BAD_ARGUMENT and o.spr is not None


@pytest.mark.parametrize("dtype", ["bfloat16", None])
@pytest.mark.parametrize("api, option", [("whole_reduce_sum", None),
                                         ("whole_reduce_min", "ORDER_VALUE_INDEX")])
def test_an_unknown_dtype_is_the_same_outcome_on_every_path(api, option, dtype):
    """run_oracle returned no outcome for it (the ConstraintError of ``ub.Tensor`` escaped)
    where run_jax and run_cases give DTYPE_UNSUPPORTED; with the registers asked for too
    (WholeReduceMin sets them: the oracle's register path)."""
    c = Case(api, A2, dtype, option, 128,
             {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
             {"dst": (512, 16), "src": (0, 128)}, np.zeros(1024, np.uint8))
    codes = {run_jax(c).code, run_oracle(c).code, ar.run_cases([c])[0].code,
             run_oracle(c, spr=True).code, run_jax(c, spr=True).code}
    assert codes == {ar.Code.DTYPE_UNSUPPORTED}


@pytest.mark.parametrize("heights", ["16", [1.5], [True], 16, None])
def test_table_heights_must_be_ints(heights):
    c = Case("whole_reduce_sum", A2, "float16", None, 128,
             {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
             {"dst": (512, 16), "src": (0, 128)}, np.zeros(1024, np.uint8))
    for call in (lambda: ar.run_cases([c], heights=heights),
                 lambda: ar.run_columns("whole_reduce_sum", A2, "float16", None, 128, c.params,
                                        c.tensors, np.zeros((2, 1024), np.uint8),
                                        heights=heights)):
        with pytest.raises(ar.ConstraintError) as e:
            call()
        assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == "heights"


def test_table_heights_in_any_order_or_below_one_give_the_same_outcomes():
    rng = np.random.default_rng(5)
    ubs = rng.integers(0, 256, (3, 66 * 1024), dtype=np.uint8)
    cases = [Case("whole_reduce_sum", A2, "float16", None, 128,
                  {"repeat": r, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                  {"dst": (65536, 256), "src": (0, 128 * r)}, ubs[k])
             for k, r in enumerate((1, 20, 255))]
    want = ar.run_cases(cases)
    assert all(o.code is None for o in want)
    for heights in ((256, 16), (0, -3), np.array([16, 256])):
        for w, g in zip(want, ar.run_cases(cases, heights=heights)):
            assert diff(w, g) is None, heights


@pytest.mark.parametrize("devices", [[], "cpu", [None], "first"])
def test_devices_must_be_a_sequence_of_devices(devices):
    """An empty list was a ValueError from run_rows, ``"cpu"`` or ``[None]`` an
    AttributeError, a single device (not in a list) the same: BAD_ARGUMENT naming devices,
    from run_batch and from scale.use_devices (run_cases' setting)."""
    devices = jax.local_devices()[0] if devices == "first" else devices
    with pytest.raises(ar.ConstraintError) as e:
        _batch(devices=devices)
    assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == "devices"
    with pytest.raises(ar.ConstraintError, match="devices"):
        with ar.scale.use_devices(devices):
            pass
    _, st = _batch(devices=np.array(jax.local_devices()[:1]))     # a numpy array of them: ok
    assert st.tolist() == [0] * 8


@pytest.mark.parametrize("call, value, param", [
    (lambda v: run_jax(v), None, "run_jax: case = 'NoneType'"),
    (lambda v: run_oracle(v), 3, "run_oracle: case = 'int'"),
    (lambda v: ar.run_cases(v), None, "run_cases: cases = 'NoneType'"),
    (lambda v: ar.run_cases([v]), "x", "run_cases: cases[0] = 'str'"),
])
def test_something_that_is_no_case_is_bad_argument(call, value, param):
    """An AttributeError ('NoneType' object has no attribute 'call' / 'api') or a TypeError
    (not iterable) before."""
    code, msg = _code(lambda: call(value))
    assert code == ar.Code.BAD_ARGUMENT and param in msg, msg
    c = Case("whole_reduce_sum", A2, "float32", None, 64, {"repeat": 1, "dst_rep_stride": 1,
             "src_blk_stride": 1, "src_rep_stride": 8}, {"src": (0, 64), "dst": (512, 8)},
             np.zeros(1024, np.uint8))
    code, msg = _code(lambda: ar.run_cases(c))                  # one Case, not a list
    assert code == ar.Code.BAD_ARGUMENT and "an iterable of Case" in msg
    assert [o.code for o in ar.run_cases(x for x in [c])] == [None]     # any iterable


@pytest.mark.parametrize("args", [((-1, 5),), ((2,),), ("x",), ((2, 5.0),), ((2, 5), 0),
                                  ((2, 5), True)])
def test_aligned_zeros_arguments(args):
    """A negative row count gave an empty array, (2,) an IndexError, align 0 a
    ZeroDivisionError: each a ValueError naming shape or align."""
    from ascend_ref import batch_prep

    with pytest.raises(ValueError, match="aligned_zeros: (shape|align) = "):
        batch_prep.aligned_zeros(*args)
    a = batch_prep.aligned_zeros((np.int64(3), 100), 128)
    assert a.shape == (3, 100) and a.ctypes.data % 128 == 0 and not a.any()


@pytest.mark.parametrize("call, name", [
    (lambda ub, r: ar.ascendc.whole_reduce_sum(ub, Tensor(4096, "half", 16),
                                               Tensor(0, "half", 256), 128, r, 1, 1, 8,
                                               chip=A2), "repeat_time"),
    (lambda ub, r: ar.tik.vec_reduce_add(ub, 128, Tensor(4096, "float16", 16),
                                         Tensor(0, "float16", 256),
                                         Tensor(8192, "float16", 64), r, 8, chip=A2),
     "repeat_times"),
])
def test_a_repeat_count_of_another_type_is_named_as_the_function_names_it(call, name):
    """The type check named the internal "repeat"; the range rule already said repeat_time
    (Ascend C) / repeat_times (TIK), as the signatures do."""
    ub = ar.new_ub(A2)
    for bad in ("1", True, 1.0):
        with pytest.raises(ar.ConstraintError) as e:
            call(ub, bad)
        assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == name, str(e.value)
    with pytest.raises(ar.ConstraintError) as e:
        call(ub, 5000)
    assert e.value.code == ar.Code.REPEAT_RANGE and e.value.param == name


def _ran(n=4, ub=None):
    return Outcome(None, np.zeros(n, np.uint8) if ub is None else ub, np.zeros(n, bool),
                      np.zeros(n, bool))


@pytest.mark.parametrize("a, b, param", [
    (None, _ran(), "a"),
    (_ran(), "ok", "b"),
    (Outcome(None), _ran(), "a.ub"),                       # ran, but carries nothing
    (_ran(), _ran(5), "b.ub"),                                # another case's UB
    (_ran(), Outcome(None, np.zeros(4, np.uint8), np.zeros(3, bool), np.zeros(4, bool)),
     "b.written"),
    (_ran(), _ran(ub=[0, 0, 0, 0]), "b.ub"),                  # a list, not an array
    (Outcome("X"), _ran(), "a.code"),
])
def test_diff_names_the_outcome_field_it_cannot_compare(a, b, param):
    """diff gave an AttributeError, an AssertionError, a numpy broadcast error or a wrong
    'error' line for these; now BAD_ARGUMENT naming the side and field."""
    with pytest.raises(ar.ConstraintError) as e:
        diff(a, b)
    assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == param, str(e.value)
    assert "diff:" in str(e.value)


def test_diff_of_a_crash_is_bad_argument_and_of_good_outcomes_a_reason():
    from ascend_ref.fuzz.compare import Crash

    with pytest.raises(ar.ConstraintError, match=r"diff: a = 'Crash\(jax"):
        diff(Crash("jax", RuntimeError("boom")), _ran())
    one = _ran(ub=np.array([0, 1, 2, 3], np.uint8))
    assert diff(_ran(), one) == "3 byte(s) differ, first at 1: 0x00 vs 0x01"
    assert diff(Outcome(ar.Code.REPEAT_RANGE), _ran()) == "error REPEAT_RANGE vs None"
    assert diff(_ran(), _ran()) is None


@pytest.mark.parametrize("fn", [ar.ascendc.reduce_sum, ar.ascendc.reduce_max])
@pytest.mark.parametrize("bad, code, param", [
    ("x", ar.Code.BAD_ARGUMENT, "shared_tmp_buffer"),
    (Tensor(0, "float32", 8), ar.Code.DTYPE_MISMATCH, "shared_tmp_buffer.dtype"),
    (Tensor(8191, "half", 64), ar.Code.ALIGN, "shared_tmp_buffer.addr"),
    (Tensor(8192, "half", 1), ar.Code.WORK_SIZE, "shared_tmp_buffer.size"),
])
def test_level2_errors_name_the_tmp_buffer_as_the_function_does(fn, bad, code, param):
    """The public function's errors named its shared_tmp_buffer 'work_tensor' (the tools'
    key for it); the oracle already said sharedTmpBuffer. A Case still keys it work_tensor."""
    ub = _ub()
    with pytest.raises(ar.ConstraintError) as e:
        fn(ub, Tensor(4096, "half", 16), Tensor(0, "half", 256), bad, 128, 2, 8, chip=A2)
    assert e.value.code == code and e.value.param == param, str(e.value)
    assert "work_tensor" not in str(e.value)
    with pytest.raises(ar.oracle.OracleError) as o:
        getattr(ar.oracle, fn.__name__)(ub, Tensor(4096, "half", 16), Tensor(0, "half", 256),
                                        bad, 128, 2, 8, chip=A2)
    assert o.value.code == code


def test_renamed_keeps_code_value_chip_and_hint():
    e = ar.ConstraintError(ar.Code.OVERLAP, api="reduce_sum", param="dst/work_tensor",
                           value="x", allowed="dst apart from work_tensor", chip=A2,
                           hint="move work_tensor")
    r = e.renamed({"work_tensor": "shared_tmp_buffer"})
    assert (r.code, r.param, r.value, r.chip) == (e.code, "dst/shared_tmp_buffer", "x", A2)
    assert str(r) == str(e).replace("work_tensor", "shared_tmp_buffer")


def test_reduce_repeat_refuses_the_other_types_parameter():
    """ReduceRepeat<SUM> has no order and <MIN|MAX> no saturate (WholeReduceSum / Min / Max
    take none): given, each was silently ignored; now BAD_ARGUMENT. Without them the alias
    equals the instruction it names, bit for bit (order defaults to ORDER_VALUE_INDEX)."""
    ub = ar.store(ar.new_ub("atlas_a2"), 0, np.arange(128, dtype=np.float16)[::-1].copy())
    d, s = Tensor(1024, "half", 16), Tensor(0, "half", 128)
    args = (ub, d, s, 128, 1, 1, 1, 8)
    for rt, kw, param in (("SUM", {"order": "ORDER_ONLY_VALUE"}, "order"),
                          ("MAX", {"saturate": True}, "saturate"),
                          ("MIN", {"saturate": False}, "saturate")):
        with pytest.raises(ar.ConstraintError) as e:
            ar.ascendc.reduce_repeat(*args, reduce_type=rt, chip="atlas_a2", **kw)
        assert (e.value.code, e.value.api, e.value.param) == \
            (ar.Code.BAD_ARGUMENT, "reduce_repeat", param)
    pairs = ((ar.ascendc.reduce_repeat(*args, reduce_type="MIN", chip="atlas_a2"),
              ar.ascendc.whole_reduce_min(*args, chip="atlas_a2")),
             (ar.ascendc.reduce_repeat(*args, "ORDER_INDEX_VALUE", reduce_type="MAX",
                                       chip="atlas_a2"),
              ar.ascendc.whole_reduce_max(*args, "ORDER_INDEX_VALUE", chip="atlas_a2")),
             (ar.ascendc.reduce_repeat(*args, reduce_type="SUM", saturate=True, chip="atlas_a2"),
              ar.ascendc.whole_reduce_sum(*args, saturate=True, chip="atlas_a2")))
    for a, b in pairs:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert ar.load(pairs[0][0], 1024, "float16", 2).view(np.uint16)[1] == 127   # the index
