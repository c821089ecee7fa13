"""The reduce special registers in the differential campaign: ``run_cases(spr=True)`` gives
the direct path's ``info.spr``; the oracle comparator compares both sides' register readings
(each through its own getters) and catches a planted register bug; the coverage bins show
the setters and getters were exercised."""

import numpy as np

import ascend_ref as ar
from ascend_ref import batch, spr as sprs
from ascend_ref.case import Case, JAX
from ascend_ref.fuzz import comparators, coverage
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.compare import readings

A2 = "atlas_a2"
PARAMS = {"repeat": 2, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}


def cases():
    out = []
    for k, winner in enumerate((69, 3)):
        x = (np.arange(128, dtype=np.float32) * 7) % 50
        x[winner] = 99.0
        ub = np.zeros(1024, np.uint8)
        ub[:512] = x.view(np.uint8)
        out.append(Case("whole_reduce_max", A2, "float32", "ORDER_VALUE_INDEX", 64,
                        dict(PARAMS), {"src": (0, 128), "dst": (512, 4)}, ub))
    ub = np.zeros(1024, np.uint8)
    out.append(Case("whole_reduce_sum", A2, "float32", None, 64, dict(PARAMS),
                    {"src": (0, 128), "dst": (512, 4)}, ub))           # no register
    return out


def test_run_cases_registers_match_the_direct_path_and_the_oracle():
    cs = cases()
    got = batch.run_cases(cs, heights=(), spr=True)
    plain = batch.run_cases(cs, heights=())
    for c, o, p in zip(cs, got, plain):
        assert np.array_equal(o.ub, p.ub) and p.spr is None
        if c.api == "whole_reduce_sum":
            assert o.spr is None
            continue
        direct = c.call(JAX, return_info=True)[1].spr
        assert readings(c, o) == readings(c, ar.case.Outcome(None, spr=direct))
    # the winners' flat indices (spr_maxmin_index "flat" on A2), from the data
    assert [readings(c, o)["max_min.float32"] for c, o in zip(cs[:2], got)] == \
        [(int(np.float32(99.0).view(np.uint32)), 69), (int(np.float32(99.0).view(np.uint32)), 3)]
    exp, act = comparators.OracleComparator(0).run(cs)
    assert [comparators.compare(c, e, a) for c, e, a in zip(cs, exp, act)] == \
        [("pass", None)] * 3
    assert exp[0].spr is not None and exp[2].spr is None


def test_a_planted_register_bug_is_caught():
    """The JAX register model reports the index one too high: bytes still agree, the
    register comparison does not."""
    real = sprs.after

    def planted(state, write, dtype, ok):
        if isinstance(write, sprs.MaxMinWrite):
            write = sprs.MaxMinWrite(write.sets, write.value, write.index + 1,
                                     write.value_defined, write.index_defined)
        return real(state, write, dtype, ok)

    cs = cases()
    batch._vmapped_spr.cache_clear()
    sprs.after = planted
    try:
        exp, act = comparators.OracleComparator(0).run(cs)
    finally:
        sprs.after = real
        batch._vmapped_spr.cache_clear()
    got = [comparators.compare(c, e, a) for c, e, a in zip(cs, exp, act)]
    assert got == [("mismatch", "spr max_min.float32")] * 2 + [("pass", None)]


def test_coverage_bins_for_setters_and_getters():
    c = cases()[0]
    from ascend_ref import oracle

    _, st = oracle.spr.whole_reduce_max(oracle.spr.OracleSpr(), c.ub.copy(),
                                        ar.Tensor(512, "float32", 4), ar.Tensor(0, "float32", 128),
                                        64, 2, 1, 1, 8, chip=A2)
    e = ar.case.Outcome(None, spr=st)
    assert coverage.spr_bins(c, e) == {"spr set": "whole_reduce_max/max_min",
                                      "spr read": "get_reduce_repeat_max_min_spr:defined"}
    nc = Case(c.api, A2, c.dtype, c.option, c.mask, dict(PARAMS, repeat=1, src_blk_stride=2), c.tensors,
              c.ub)
    _, st = oracle.spr.whole_reduce_max(oracle.spr.OracleSpr(), c.ub.copy(),
                                        ar.Tensor(512, "float32", 4), ar.Tensor(0, "float32", 128),
                                        64, 1, 1, 2, 8, chip=A2)    # srcBlkStride 2
    assert coverage.spr_bins(nc, ar.case.Outcome(None, spr=st))["spr read"] == \
        "get_reduce_repeat_max_min_spr:undefined"
    assert coverage.spr_bins(cases()[2], ar.case.Outcome(None)) == {}
    # the model: a setter on a product with the getter; none on Ascend 950 (no max/min getter)
    for products, want in ((["atlas_a2"], True), (["ascend950"], False)):
        camp = Campaign(name="t", cases=10, apis=["whole_reduce_max"], products=products)
        assert ("whole_reduce_max/max_min" in coverage.model(camp).get("spr set", set())) == want
