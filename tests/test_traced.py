"""The same bits eagerly, under jax.jit and under jax.vmap with traced numeric parameters."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import Tensor

RNG = np.random.default_rng(7)


def _ub(chip, dtype=np.float16, n=4096):
    x = RNG.standard_normal(n).astype(dtype)
    return ar.store(ar.new_ub(chip, size=65536), 0, x)


CASES = [  # (repeat, dst_rep_stride, src_blk_stride, src_rep_stride, mask)
    (3, 1, 1, 8, 128), (5, 2, 2, 3, 77), (4, 0, 0, 0, [0xF0F0, 1 << 63]), (0, 1, 1, 8, 128),
    (7, 1, 1, 9, [2**64 - 1, 0]),
]


def _wr(ub, r, drs, bs, rs, mask):
    return ar.ascendc.whole_reduce_max(ub, Tensor(32768, "half", 1024), Tensor(0, "half", 8192),
                                       mask, r, drs, bs, rs, "ORDER_INDEX_VALUE", chip="atlas_a2")


@pytest.mark.parametrize("case", CASES)
def test_jit_matches_eager(case):
    ub = _ub("atlas_a2")
    eager = np.asarray(_wr(ub, *case))
    r, drs, bs, rs, mask = case
    m = mask if isinstance(mask, int) else np.array(
        [mask[0] & 0xFFFFFFFF, mask[0] >> 32, mask[1] & 0xFFFFFFFF, mask[1] >> 32], np.uint32)
    f = jax.jit(lambda u, r, drs, bs, rs, m: _wr(u, r, drs, bs, rs, m))
    traced = np.asarray(f(ub, jnp.int32(r), jnp.int32(drs), jnp.int32(bs), jnp.int32(rs),
                          jnp.asarray(m)))
    np.testing.assert_array_equal(eager, traced)


def test_vmap_over_parameter_sets_matches_eager_loop():
    ub = _ub("atlas_a2")
    reps, rss, masks = np.array([1, 4, 9, 2]), np.array([8, 3, 16, 0]), np.array([128, 5, 64, 100])
    f = jax.vmap(lambda r, rs, m: _wr(ub, r, 1, 1, rs, m))
    batched = np.asarray(f(jnp.asarray(reps, jnp.int32), jnp.asarray(rss, jnp.int32),
                           jnp.asarray(masks, jnp.int32)))
    for k in range(4):
        np.testing.assert_array_equal(batched[k], np.asarray(
            _wr(ub, int(reps[k]), 1, 1, int(rss[k]), int(masks[k]))))


def test_vmap_over_ubs_and_addresses_reduce_data_block():
    ubs = jnp.stack([_ub("ascend950", np.float32) for _ in range(3)])
    srcs = jnp.asarray([0, 256, 512], jnp.int32)

    def one(u, s):
        return ar.ascendc.reduce_data_block(u, Tensor(40960, "float", 256), Tensor(s, "float", 1024),
                                            [0x00FF00FF00FF00FF], 3, 1, 1, 8, reduce_type="SUM",
                                            chip="ascend950")
    batched = np.asarray(jax.vmap(one)(ubs, srcs))
    for k in range(3):
        np.testing.assert_array_equal(batched[k], np.asarray(one(ubs[k], int(srcs[k]))))


def test_tik_jit_and_vmap_match_eager():
    ub = _ub("atlas_training")
    dst, src, work = Tensor(40960, "half", 16), Tensor(0, "half", 8192), Tensor(41984, "half", 2048)

    def run(u, r, rs, m, sat):
        u = ar.tik.vec_reduce_add(u, m, dst, src, work, r, rs, chip="atlas_training", saturate=sat)
        return ar.tik.vec_reduce_max(u, m, Tensor(40992, "half", 16), src, Tensor(45056, "half", 1058),
                                     r, rs, cal_index=True, chip="atlas_training")
    eager = np.asarray(run(ub, 40, 1, 100, True))
    jitted = np.asarray(jax.jit(run)(ub, jnp.int32(40), jnp.int32(1), jnp.int32(100), jnp.bool_(True)))
    np.testing.assert_array_equal(eager, jitted)
    vm = jax.vmap(run, in_axes=(None, 0, 0, None, None))(ub, jnp.asarray([40, 3]), jnp.asarray([1, 8]),
                                                         100, True)
    np.testing.assert_array_equal(np.asarray(vm[0]), eager)
    np.testing.assert_array_equal(np.asarray(vm[1]), np.asarray(run(ub, 3, 8, 100, True)))


def test_traced_invalid_case_leaves_ub_unchanged_and_reports_status():
    ub = _ub("atlas_a2")
    f = jax.jit(lambda u, r: ar.ascendc.whole_reduce_sum(
        u, Tensor(32768, "half", 8), Tensor(0, "half", 8192), 128, r, 1, 1, 8, chip="atlas_a2",
        return_info=True))
    out, info = f(ub, jnp.int32(300))
    assert int(info.status) == ar.Code.REPEAT_RANGE
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ub))
    out, info = f(ub, jnp.int32(8))
    assert int(info.status) == 0 and info.ranges("written") == [(32768, 32784)]


def test_seed002_example_passes_under_jit_and_batch():
    """Seed 002's own example (R = 2, work_tensor of 18 halves) is valid eagerly, under jit
    (traced repeat count) and in a batch: the exact cascade need is evaluated on the traced
    count (issue 12, finding 5), so all three give the same answer."""
    x = np.zeros(4096, np.float16)
    x[43] = -9.97
    ub = np.asarray(ar.store(ar.new_ub("atlas_training"), 0, x))[:49152]
    args = (Tensor(40960, "half", 16), Tensor(0, "half", 4096), Tensor(41984, "half", 18))
    eager = ar.tik.vec_reduce_min(ub, 128, *args, 2, 8, cal_index=True, chip="atlas_training")
    f = jax.jit(lambda u, r: ar.tik.vec_reduce_min(u, 128, *args, r, 8, cal_index=True,
                                                   chip="atlas_training", return_info=True))
    out, info = f(ub, jnp.int32(2))
    assert int(info.status) == 0
    np.testing.assert_array_equal(np.asarray(out), np.asarray(eager))
    assert np.asarray(out)[40960:40964].view(np.uint16)[1] == 43
    # one element short of the exact need (16 + 2 = 18 for R = 2): WORK_SIZE everywhere
    short = (args[0], args[1], Tensor(41984, "half", 17))
    with pytest.raises(ar.ConstraintError) as e:
        ar.tik.vec_reduce_min(ub, 128, *short, 2, 8, cal_index=True, chip="atlas_training")
    assert e.value.code == ar.Code.WORK_SIZE
    g = jax.jit(lambda u, r: ar.tik.vec_reduce_min(u, 128, *short, r, 8, cal_index=True,
                                                   chip="atlas_training", return_info=True))
    assert int(g(ub, jnp.int32(2))[1].status) == ar.Code.WORK_SIZE
    # R = 65 needs 144 + 16 + 2 = 162 (seed 002 example 1): traced 65 with 162 is valid
    big = (args[0], args[1], Tensor(41984, "half", 162))
    h = jax.jit(lambda u, r: ar.tik.vec_reduce_min(u, 128, *big, r, 0, cal_index=True,
                                                   chip="atlas_training", return_info=True))
    assert int(h(ub, jnp.int32(65))[1].status) == 0
    assert int(h(ub, jnp.int32(66))[1].status) == 0          # 2*66 = 132 -> 144 + 16 + 2
    small = (args[0], args[1], Tensor(41984, "half", 161))
    k = jax.jit(lambda u, r: ar.tik.vec_reduce_min(u, 128, *small, r, 0, cal_index=True,
                                                   chip="atlas_training", return_info=True))
    assert int(k(ub, jnp.int32(65))[1].status) == ar.Code.WORK_SIZE
    # the batch path gives the same answer
    from ascend_ref.batch import run_batch
    ubs = np.stack([ub, ub])
    outs, status = run_batch("vec_reduce_min", ubs, chip="atlas_training", dtype="float16",
                             mask=np.array([128, 128]), cal_index=True, dst=(40960, 16),
                             src=(0, 4096), work_tensor=(41984, np.array([18, 17])),
                             repeat=np.array([2, 2]), src_rep_stride=8)
    assert status.tolist() == [0, int(ar.Code.WORK_SIZE)]
    np.testing.assert_array_equal(outs[0], np.asarray(eager))
