"""Arguments of the fuzz Python API: a bad one is a clear error naming it (the module's own
error type, or BAD_ARGUMENT), never a raw numpy / Python traceback and never silently wrong."""

from __future__ import annotations

import os
from typing import Any, List, Optional

import numpy as np
import pytest

from ascend_ref.case import Case, Outcome
from ascend_ref.constraints import Code, ConstraintError
from ascend_ref.fuzz.campaign import Campaign
from ascend_ref.fuzz.generate import RngDraw
from ascend_ref.fuzz.shrink import shrink
from ascend_ref.fuzz.signature import signature
from ascend_ref.fuzz.store import Store, StoreError


def _base(**kw: Any) -> dict:
    c = {"name": "t", "apis": ["whole_reduce_sum"], "products": ["atlas_a2"], "cases": 10}
    c.update(kw)
    return {"campaign": c}


def _bad_arg(e: pytest.ExceptionInfo, param: str) -> None:
    assert isinstance(e.value, ConstraintError)
    assert e.value.code is Code.BAD_ARGUMENT and e.value.param == param


def _case(n: int = 128) -> Case:
    ub = np.zeros(65536, np.uint8)
    return Case("whole_reduce_sum", "atlas_a2", "float16", None, [2**64 - 1, 2**64 - 1],
                {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"src": (0, n), "dst": (2 * n + 64, 2)}, ub)


def _ran(size: int) -> Outcome:
    no = np.zeros(size, bool)
    return Outcome(None, np.zeros(size, np.uint8), no, no.copy())


# ------------------------------------------------------------------ 1: case ids -------------
@pytest.mark.parametrize("cid", [-1, None, "3", 1.5, True])
def test_campaign_case_rejects_a_bad_case_id(cid: Any) -> None:
    camp = Campaign.from_dict(_base())
    with pytest.raises(ConstraintError) as e:
        camp.case(cid)
    _bad_arg(e, "case_id")
    assert "an int >= 0" in str(e.value)
    assert camp.case(np.int64(3)).describe() == camp.case(3).describe()  # type: ignore[arg-type]


@pytest.mark.parametrize("args, param", [((-1, 0), "seed"), ((None, 0), "seed"),
                                         ((0, -1), "case_id"), ((0, "1"), "case_id"),
                                         ((0, 1.5), "case_id")])
def test_rng_draw_rejects_a_bad_seed_or_case_id(args: tuple, param: str) -> None:
    with pytest.raises(ConstraintError) as e:
        RngDraw(*args)
    _bad_arg(e, param)
    assert RngDraw(1, 2).integers(0, 10**6) == RngDraw(1, 2).integers(0, 10**6)


# ------------------------------------------------------------------ 2, 6: from_dict ---------
@pytest.mark.parametrize("raw", [None, [], 5, "campaign"])
def test_from_dict_needs_a_dict(raw: Any) -> None:
    with pytest.raises(ValueError, match="expected a dict of tables"):
        Campaign.from_dict(raw)


@pytest.mark.parametrize("kw, text", [
    (dict(apis=5), "apis = 5"), (dict(dtypes=5), "dtypes = 5"),
    (dict(products=5), "products = 5"), (dict(apis={"a": 1}), "apis = {'a': 1}"),
    (dict(dtypes=[]), "dtypes = []: no API / product / dtype combination"),
    (dict(apis=[]), "apis = []: no API / product / dtype combination"),
    (dict(workers=True), "workers = True"), (dict(workers=False), "workers = False"),
])
def test_from_dict_rejects_bad_campaign_values(kw: dict, text: str) -> None:
    with pytest.raises(ValueError) as e:
        Campaign.from_dict(_base(**kw))
    assert text in str(e.value) and str(e.value).startswith("campaign:")


def test_empty_dtypes_is_an_error_and_valid_values_still_work() -> None:
    with pytest.raises(ValueError, match="dtypes = \\[\\]"):     # was "all" under another id
        Campaign.from_dict(_base(dtypes=[]))
    a = Campaign.from_dict(_base(dtypes=["float16"], workers=1))
    assert a.dtypes == ["float16"] and a.workers == 1
    assert Campaign.from_dict(_base(dtypes="all")).id == Campaign.from_dict(_base()).id


@pytest.mark.parametrize("cmd", [5, ["python", "dut.py"], True])
def test_compare_command_must_be_a_string(cmd: Any) -> None:
    raw = dict(_base(), compare={"kind": "command", "command": cmd})
    with pytest.raises(ValueError, match=r"\[compare\] command = .*must be a string"):
        Campaign.from_dict(raw)
    ok = dict(_base(), compare={"kind": "command", "command": "dut {dir}"})
    assert Campaign.from_dict(ok).compare.command == "dut {dir}"


def test_compare_path_is_checked_and_only_general_changes_the_identity(monkeypatch) -> None:
    with pytest.raises(ValueError, match=r"\[compare\] path = 'slow'; one of \('fast', 'general'\)"):
        Campaign.from_dict(dict(_base(), compare={"path": "slow"}))
    plain = Campaign.from_dict(_base())
    fast = Campaign.from_dict(dict(_base(), compare={"path": "fast"}))
    general = Campaign.from_dict(dict(_base(), compare={"path": "general"}))
    assert fast.id == plain.id and "path" not in plain.identity()["compare"]
    assert general.id != plain.id and general.compare.describe().startswith("JAX general path")
    assert Campaign.from_dict(general.to_dict()).id == general.id      # stored, read back


def test_compare_path_reaches_the_kernels(monkeypatch) -> None:
    """``path = "general"`` traces the general min / max (numerics.select_extreme); the
    default never calls it (the fast trees)."""
    import jax

    from ascend_ref import numerics
    from ascend_ref.fuzz import comparators

    calls: List[str] = []
    real = numerics.select_extreme

    def counted(*a: Any, **k: Any) -> Any:
        calls.append("general")
        return real(*a, **k)

    monkeypatch.setattr(numerics, "select_extreme", counted)
    camp = Campaign.load("tie_rule")
    camp.workers = 0
    cases = [camp.case(i) for i in range(3)]
    seen = {}
    for path in ("fast", "general"):
        camp.compare.path = path
        jax.clear_caches()
        calls.clear()
        exp, act = comparators.make(camp).run(cases)
        assert [comparators.compare(c, e, a)[0] for c, e, a in zip(cases, exp, act)] == \
            ["pass"] * 3
        seen[path] = len(calls)
    jax.clear_caches()
    assert seen["fast"] == 0 and seen["general"] > 0, seen


# ------------------------------------------------------------------ 3: signature ------------
def test_signature_checks_its_outcomes_as_diff_does() -> None:
    case = _case()
    with pytest.raises(ConstraintError) as e:
        signature(case, _ran(65536), _ran(1024))
    _bad_arg(e, "actual.ub")
    with pytest.raises(ConstraintError) as e:
        signature(case, Outcome(3, None, None, None), _ran(65536))     # type: ignore[arg-type]
    _bad_arg(e, "expected.code")
    with pytest.raises(ConstraintError) as e:
        signature(case, _ran(65536), None)                             # type: ignore[arg-type]
    _bad_arg(e, "actual")
    with pytest.raises(ConstraintError) as e:
        signature(case, _ran(65536), Outcome(None, np.zeros(65536), None, None))
    _bad_arg(e, "actual.ub")
    with pytest.raises(ConstraintError) as e:
        signature(None, _ran(8), _ran(8))                              # type: ignore[arg-type]
    _bad_arg(e, "case")
    assert signature(case, _ran(65536), _ran(65536)) is None
    assert signature(case, Outcome(Code.MASK_RANGE, None, None, None), _ran(65536)) == \
        "error MASK_RANGE vs ok"


# ------------------------------------------------------------------ 4: shrink ---------------
def _never(cands: List[Case]) -> List[Optional[str]]:
    return [None] * len(cands)


@pytest.mark.parametrize("kw, param", [
    (dict(max_evals="5"), "max_evals"), (dict(max_evals=0), "max_evals"),
    (dict(max_evals=True), "max_evals"), (dict(evaluate=None), "evaluate"),
    (dict(deadline="soon"), "deadline"), (dict(cut_ub="yes"), "cut_ub"),
    (dict(signature=3), "signature"), (dict(case=None), "case"),
])
def test_shrink_rejects_bad_arguments(kw: dict, param: str) -> None:
    args: dict = dict(case=_case(), signature="1 ulp", evaluate=_never)
    args.update(kw)
    case, sig, ev = args.pop("case"), args.pop("signature"), args.pop("evaluate")
    with pytest.raises(ConstraintError) as e:
        shrink(case, sig, ev, **args)
    _bad_arg(e, param)


@pytest.mark.parametrize("answer", [[], "1 ulp", None, [3], Outcome(None, None, None, None)])
def test_shrink_refuses_a_wrong_evaluate_answer_on_its_first_call(answer: Any) -> None:
    calls: List[int] = []

    def evaluate(cands: List[Case]) -> Any:
        calls.append(len(cands))
        return answer

    with pytest.raises(ConstraintError) as e:
        shrink(_case(), "1 ulp", evaluate, max_evals=3000)
    _bad_arg(e, "evaluate")
    assert "one per candidate" in str(e.value)
    assert len(calls) == 1                       # not 3000 evaluations spent on nothing


# ------------------------------------------------------------------ 5: Store ----------------
@pytest.mark.parametrize("path", [None, 5, "", b"r.sqlite"])
def test_store_needs_a_file_name(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                 path: Any) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match="expected a file name"):
        Store(path)
    assert os.listdir(tmp_path) == []            # no database named "None" / "5"


def test_store_case_row_rejects_a_case_id_past_int64(tmp_path: Any) -> None:
    s = Store(tmp_path / "r.sqlite")             # a PathLike is fine
    try:
        for cid in (2**70, -(2**64), "3", 1.5):
            with pytest.raises(ConstraintError) as e:
                s.case_row("x", cid)                             # type: ignore[arg-type]
            _bad_arg(e, "case_id")
        with pytest.raises(ConstraintError) as e:
            s.mismatch("x", 2**70)
        _bad_arg(e, "case_id")
        assert s.case_row("x", 2**63 - 1) is None and s.mismatch("x", 0) is None
    finally:
        s.close()
