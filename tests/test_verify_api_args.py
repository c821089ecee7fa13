"""verify() / explain() / Verifier arguments: a bad flag or case number is a clear
BAD_ARGUMENT error naming it (never read by truthiness, never blamed on the file)."""

import numpy as np
import pytest

from ascend_ref.case import Case
from ascend_ref.constraints import Code, ConstraintError
from ascend_ref.verify import DumpError, dumps_from_cases, explain, open_dump, verify
from ascend_ref.verify.run import Verifier


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    ub = np.zeros(512, np.uint8)
    ub[:256] = np.ones(64, np.float32).view(np.uint8)
    c = Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
             {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
             {"src": (0, 64), "dst": (256, 8)}, ub)
    (p,) = dumps_from_cases([c], tmp_path_factory.mktemp("dumps"))
    return p


def _bad(excinfo, param):
    e = excinfo.value
    assert isinstance(e, ConstraintError) and e.code == Code.BAD_ARGUMENT
    assert e.param == param and f": {param} = " in str(e), str(e)   # exactly that parameter


@pytest.mark.parametrize("index", [1.5, True, False, None, "0", -1, np.float64(0.0)])
def test_explain_rejects_a_case_index_that_is_no_int(dump, index):
    with pytest.raises(ConstraintError) as ei:
        explain(dump, index)
    _bad(ei, "index")
    assert not isinstance(ei.value, DumpError)


def test_explain_index_int_or_numpy_int_only(dump):
    for index in (1.5, True, None):
        with pytest.raises(ConstraintError, match="index"):
            explain(dump, index)
    text, sig = explain(dump, 0)
    assert sig is None and "agree" in text
    assert explain(dump, np.int64(0)) == (text, sig)
    with pytest.raises(DumpError, match="out of range"):       # past the file: a file error
        explain(dump, 1)


@pytest.mark.parametrize("max_words", [1.5, None, -1, True])
def test_explain_rejects_bad_max_words(dump, max_words):
    with pytest.raises(ConstraintError) as ei:
        explain(dump, 0, max_words=max_words)
    _bad(ei, "max_words")


@pytest.mark.parametrize("i", [1.5, True, None, "0"])
def test_dumpfile_case_rejects_an_index_that_is_no_int(dump, i):
    with open_dump(dump) as f:
        with pytest.raises(ConstraintError) as ei:
            f.case(i)
    _bad(ei, "i")


@pytest.mark.parametrize("name,value", [
    ("audit", "no"), ("audit", 2), ("audit", None),
    ("progress", "no"), ("progress", 2),
    ("vectorised", "x"), ("vectorised", None),
    ("distributed", "no"), ("distributed", 2),
])
def test_verify_rejects_flags_that_are_no_bool(dump, name, value):
    with pytest.raises(ConstraintError) as ei:
        verify(dump, **{"progress": False, name: value})
    _bad(ei, name)


def test_verify_flags_bools_or_0_1_only(dump):
    with pytest.raises(ConstraintError, match="audit"):
        verify(dump, progress=False, audit="no")
    r = verify(dump, progress=0, audit=1, vectorised=np.bool_(True), distributed=False)
    assert r.ok and r.cases == 1 and r.audit is not None
    r = verify(dump, progress=False, audit=0, vectorised=0, distributed=None)
    assert r.ok and r.cases == 1 and r.audit is None


def test_verifier_audit_flag(dump):
    with pytest.raises(ConstraintError) as ei:
        Verifier(audit="no")
    _bad(ei, "audit")
    assert Verifier(audit=0).auditor is None and Verifier(audit=True).auditor is not None
    with pytest.raises(ValueError, match="max_examples"):
        Verifier(max_examples=1.5)
