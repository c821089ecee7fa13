"""The columnar entry point (ascend_ref.run_columns) against run_cases on the same cases.

run_cases (Case objects in, Outcome objects out) is the reference: cases drawn for every
instruction, with adversarial edits a column can hold (values outside int32 and past the
plain range, negative and misaligned addresses, out-of-bounds tensors, masks the host or
the kernel rejects, odd UB sizes, windows above 0, unknown products), are regrouped into
column batches and must get the same codes and the same bytes, written and undefined masks.
"""

import collections

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import batch_prep, registry
from ascend_ref.case import Case, run_oracle
from ascend_ref.constraints import Code, ConstraintError
from ascend_ref.fuzz.compare import diff
from ascend_ref.fuzz.generate import RngDraw, draw_case


def _edits(c: Case, rng) -> list:
    """Edits of a drawn case that a column can still hold (each a new case)."""
    out = []

    def edit(**kw):
        d = Case(c.api, c.chip, c.dtype, c.option, c.mask, dict(c.params), dict(c.tensors),
                 c.ub, c.saturate)
        for k, v in kw.items():
            if k == "param":
                d.params[v[0]] = v[1]
            elif k == "tensor":
                d.tensors[v[0]] = v[1]
            else:
                setattr(d, k, v)
        out.append(d)

    k = sorted(c.params)[int(rng.integers(len(c.params)))]
    t = sorted(c.tensors)[int(rng.integers(len(c.tensors)))]
    a, n = c.tensors[t]
    edit(param=(k, 2**31 + 5))                                 # outside int32
    edit(param=(k, 2**45))                                     # past the plain range
    edit(param=(k, -(2**31) - 7))
    edit(tensor=(t, (a, 2**31 + 3)))
    edit(tensor=(t, (2**32 + 64, n)))
    edit(tensor=(t, (-32, n)))                                 # BAD_ARGUMENT
    edit(tensor=(t, (a + 2, n)))                               # alignment
    edit(tensor=(t, (c.ub.size - 32, n + 64)))                 # bounds
    edit(mask=0)
    edit(mask=300)                                             # MASK_RANGE in the kernel
    edit(mask=2**31)                                           # MASK_RANGE on the host
    edit(mask=-1)
    edit(mask=[2**64 - 1, 2**63])
    edit(mask=[0, 0])
    edit(mask=[5, 6, 7])
    edit(ub=np.concatenate([c.ub, np.zeros(7, np.uint8)]))     # an odd UB size
    shifted = np.concatenate([np.full(5 * 1024, 0x5A, np.uint8), c.ub])
    edit(ub=shifted, tensors={x: (p + 5 * 1024, s) for x, (p, s) in c.tensors.items()})
    edit(chip="no_such_chip")
    edit(dtype="half" if c.dtype == "float16" else "int8")
    return out


def _cases(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        c = draw_case(RngDraw(seed, i), invalid_rate=0.4, max_ub=1 << 13, tik_max_repeat=40)
        out.append(c)
        if i % 4 == 0:
            out.extend(_edits(c, rng))
    return out


def _per_api(seed: int) -> list:
    """Two drawn cases of every instruction and the edits of one (few static
    configurations: a cheap default test)."""
    rng = np.random.default_rng(seed)
    got: dict = collections.defaultdict(list)
    for i in range(2000):
        c = draw_case(RngDraw(seed, i), invalid_rate=0.2, max_ub=1 << 12, tik_max_repeat=16)
        if len(got[c.api]) < 2 and isinstance(c.mask, (int, list)):
            got[c.api].append(c)
        if len(got) == len(registry.names()) and all(len(v) == 2 for v in got.values()):
            break
    out = []
    for c, d in got.values():
        out += [c, d] + _edits(c, rng)[:-4]     # not the window shifts, products and dtypes
    return out


def _holdable(c: Case) -> bool:
    ints = list(c.params.values()) + [v for pair in c.tensors.values() for v in pair]
    mask_ok = (type(c.mask) is int and -(2**63) <= c.mask < 2**63) or (
        isinstance(c.mask, list) and all(type(w) is int and 0 <= w < 2**64 for w in c.mask))
    return (isinstance(c.chip, str) and isinstance(c.ub, np.ndarray) and c.ub.dtype == np.uint8
            and c.ub.ndim == 1 and mask_ok and all(type(v) is int and -(2**63) <= v < 2**63
                                                   for v in ints)
            and all(isinstance(p, tuple) and len(p) == 2 for p in c.tensors.values()))


def _batches(cases: list) -> dict:
    """Column batches: the indices of the cases one column call can hold together."""
    out = collections.defaultdict(list)
    for k, c in enumerate(cases):
        if not _holdable(c):
            continue
        mask = "count" if type(c.mask) is int else len(c.mask)
        key = (c.api, c.chip, c.dtype, repr(c.option), c.saturate is None, mask, c.ub.size,
               tuple(sorted(c.params)), tuple(sorted(c.tensors)))
        out[key].append(k)
    return out


def _run_columns(cases: list, ks: list, **kw):
    c0 = cases[ks[0]]
    cs = [cases[k] for k in ks]
    mask = np.array([c.mask for c in cs], np.int64 if type(c0.mask) is int else np.uint64)
    params = {p: np.array([c.params[p] for c in cs], np.int64) for p in c0.params}
    tensors = {t: (np.array([c.tensors[t][0] for c in cs], np.int64),
                   np.array([c.tensors[t][1] for c in cs], np.int64)) for t in c0.tensors}
    sat = None if c0.saturate is None else np.array([bool(c.saturate) for c in cs])
    return ar.run_columns(c0.api, c0.chip, c0.dtype, c0.option, mask, params, tensors,
                          np.stack([c.ub for c in cs]), sat, **kw)


def _same(got, want, what) -> None:
    assert diff(got, want) is None, (what, got, want)
    assert got.code == want.code, what
    if want.code is None:
        for x, y in ((got.ub, want.ub), (got.written, want.written),
                     (got.undefined, want.undefined)):
            np.testing.assert_array_equal(x, y, err_msg=str(what))


def _check(cases: list) -> None:
    batches = _batches(cases)
    seen, codes, rows = set(), set(), 0
    for key, ks in batches.items():
        # run_cases on the same group (a case's outcome does not depend on the others:
        # test_batch), so both compile the same kernels
        want = dict(zip(ks, ar.run_cases([cases[k] for k in ks])))
        got = _run_columns(cases, ks)
        assert isinstance(got, batch_prep.Stacked) and len(got) == len(ks)
        for j, k in enumerate(ks):
            _same(got.outcome(j), want[k], (k, cases[k].describe()))
            if got.code[j]:                   # an error leaves the UB as it was, nothing marked
                np.testing.assert_array_equal(got.ub[j], cases[k].ub)
                assert not got.written[j].any() and not got.undefined[j].any()
            codes.add(want[k].code)
        seen.add(key[0])
        rows += len(ks)
    assert seen == set(registry.names()), seen
    assert rows > 0.8 * len(cases), (rows, len(cases))
    # host errors, kernel errors and successes all reached
    assert {None, Code.BAD_ARGUMENT, Code.MASK_RANGE} <= codes and len(codes) >= 5, codes


@pytest.mark.slow   # one kernel per instruction configuration (~50 s idle); the default run keeps the column checks
def test_columns_give_run_cases_outcomes_on_every_instruction():
    _check(_per_api(7))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12])
def test_columns_give_run_cases_outcomes_campaign(seed):
    _check(_cases(150, seed))


def test_columns_match_run_batch_and_the_oracle():
    """Rows of one batch (masks, repeats and addresses varying per row) against run_batch
    and the scalar oracle (an independent implementation)."""
    rng = np.random.default_rng(3)
    b = 8
    ubs = np.ascontiguousarray(rng.standard_normal((b, 1024)).astype(np.float16)).view(np.uint8)
    ubs[1, 0:2] = np.array([np.nan], np.float16).view(np.uint8)     # a NaN in one row
    mask = np.array([128, 64, 1, 0, 127, 128, 3, 128])
    repeat = np.array([1, 2, 3, 2, 1, 0, 2, 3])
    params = {"repeat": repeat, "dst_rep_stride": 1, "src_blk_stride": 1,
              "src_rep_stride": np.array([8, 8, 4, 8, 0, 8, 8, 2])}
    tensors = {"dst": (np.full(b, 1536), 16), "src": (np.zeros(b, np.int64), 384)}
    got = ar.run_columns("whole_reduce_min", "atlas_a2", "float16", "ORDER_VALUE_INDEX", mask,
                         params, tensors, ubs)
    out, status = ar.run_batch("whole_reduce_min", ubs, chip="atlas_a2", dtype="float16",
                               mask=mask, order="ORDER_VALUE_INDEX", dst=(1536, 16),
                               src=(0, 384), **params)
    np.testing.assert_array_equal(got.code, status)
    np.testing.assert_array_equal(got.ub, out)
    for k in range(b):
        case = Case("whole_reduce_min", "atlas_a2", "float16", "ORDER_VALUE_INDEX",
                    int(mask[k]), {p: int(np.broadcast_to(v, (b,))[k]) for p, v in params.items()},
                    {"dst": (1536, 16), "src": (0, 384)}, ubs[k])
        _same(got.outcome(k), run_oracle(case), k)


def test_columns_reject_what_no_column_holds():
    ubs = np.zeros((2, 1024), np.uint8)
    ok = dict(api="whole_reduce_sum", chip="atlas_a2", dtype="float16", option=None,
              mask=np.array([128, 128]), params={"repeat": 1, "dst_rep_stride": 1,
                                                 "src_blk_stride": 1, "src_rep_stride": 8},
              tensors={"dst": (512, 16), "src": (0, 128)}, ubs=ubs)
    bad = [("ubs", dict(ubs=ubs.view(np.int8))), ("ubs", dict(ubs=ubs[0])),
           ("mask", dict(mask=np.array([1.0, 2.0]))), ("mask", dict(mask=np.ones(3, int))),
           ("repeat", dict(params={**ok["params"], "repeat": np.array([1.5, 1])})),
           ("repeat", dict(params={**ok["params"], "repeat": np.ones((2, 2), int)})),
           ("src.addr", dict(tensors={"dst": (512, 16), "src": (np.zeros(5, int), 128)})),
           ("src", dict(tensors={"dst": (512, 16), "src": 0})),
           ("saturate", dict(saturate=np.array([1, 0])))]
    for param, change in bad:
        with pytest.raises(ConstraintError) as e:
            ar.run_columns(**{**ok, **change})
        assert e.value.code == Code.BAD_ARGUMENT and e.value.param == param, (param, e.value)
    assert ar.run_columns(**ok).code.tolist() == [0, 0]
    # an empty batch, and a product the package does not know (every row: run_cases' code)
    assert len(ar.run_columns(**{**ok, "ubs": ubs[:0], "mask": np.zeros(0, int)})) == 0
    got = ar.run_columns(**{**ok, "chip": "no_such_chip"})
    want = ar.run_cases([Case("whole_reduce_sum", "no_such_chip", "float16", None, 128,
                              ok["params"], ok["tensors"], ubs[0])])[0]
    assert want.code is not None and got.code.tolist() == [int(want.code)] * 2
