"""ascend_ref.explain / ascend_ref.viz: integer sum trees, rejected calls and argument checks.

A probe found raw tracebacks (OverflowError, IndexError, TypeError), trees of calls that never
run and arguments taken by truthiness or converted in silence; each test below failed on the
code before the fix.
"""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import ascend_ref as ar  # noqa: E402
import ascend_ref.explain as explain  # noqa: E402
import ascend_ref.viz as viz  # noqa: E402
from ascend_ref.case import Outcome  # noqa: E402
from ascend_ref.mask import CounterMask  # noqa: E402

BAD = ar.Code.BAD_ARGUMENT


def dst_word(m):
    """The first word the call wrote to dst, read from the UB after the call."""
    c = m.case
    wdt = np.dtype(c.instruction.tensor_dtype("dst", c.dtype))
    a = int(m.writes[0].addr[0, 0])
    return int(np.asarray(m.ub_after[a:a + wdt.itemsize]).view(wdt)[0])


# ---------------------------------------------------------------- 1. integer sums ----------

@pytest.mark.parametrize("api, dtype, data, kw, wide, overflows", [
    # int16 lanes widen to int32: 60012 does not fit int16 (was an OverflowError)
    ("whole_reduce_sum", "int16", [30000, 30000, 5, 7], {"mask": 4}, "int32", 0),
    # 32-bit lanes wrap modulo 2^32 at the adds that leave the type
    ("whole_reduce_sum", "uint32", [2**32 - 1, 5, 2**31, 2**31], {"mask": 4}, "uint32", 2),
    ("repeat_reduce_sum", "int32", [2**31 - 1, 1, -2**31, -1], {"mask": 4}, "int32", 2),
    # the count form's 8-byte sum (was an IndexError)
    ("reduce_sum_count", "uint64", [2**64 - 1, 2, 7], {"repeat": 3}, "uint64", 1),
])
def test_integer_sum_tree_is_the_word_the_call_writes(api, dtype, data, kw, wide, overflows):
    c = explain.make_case(api, chip="ascend950", dtype=dtype, data=data, **kw)
    m = explain.access_map(c)
    assert m.error is None
    t = explain.rounding_tree(c)
    assert t.integer and t.dtype == wide
    assert int(t.result) == dst_word(m)                  # bit for bit the call's result
    assert t.exact_sum == sum(data)
    assert sum(n.overflow for n in t.nodes()) == overflows
    assert all(n.exact == n.a + n.b for n in t.nodes())  # exact integer adds
    text = t.text(full=True)
    assert f"result {int(t.result)}" in text
    assert ("wrapped modulo" in text) == bool(overflows)
    viz.close(viz.rounding_tree(c))                      # the picture too (was OverflowError)


def test_integer_leaf_values_widen_and_wrap():
    t = explain.rounding_tree([1, 65535], dtype="uint16")       # was an OverflowError
    assert (t.dtype, int(t.result), t.root.overflow) == ("uint32", 65536, False)
    t = explain.rounding_tree([2**31 - 1, 1], dtype="int32")
    assert (int(t.result), t.root.overflow, t.error) == (-2**31, True, -2.0**32)
    c = explain.rounding_tree([2**31 - 1, 1], dtype="int32", saturate=True)
    assert (int(c.result), c.root.saturated) == (2**31 - 1, True)
    with pytest.raises(ar.ConstraintError, match="source = ") as e:   # 1.5 was truncated
        explain.rounding_tree([1.5, 2], dtype="int16")
    assert e.value.code == BAD


# ---------------------------------------------------------------- 2. / 3. rejected calls ---

@pytest.mark.parametrize("kw, repeat", [
    ({"dst": (2**40, 16)}, 0),
    ({"mask": CounterMask(10**9)}, 0),
    ({"src_rep_stride": -8}, 0),
    ({"repeat": 300}, 299),                  # was an IndexError (the table holds 255 rows)
])
def test_rejected_call_has_no_tree(kw, repeat):
    c = explain.make_case("whole_reduce_sum", **kw)
    err = explain.access_map(c).error
    assert err is not None                   # mapped, with the call's error
    with pytest.raises(ValueError) as e:     # was a tree reporting "result 31.78"
        explain.rounding_tree(c, repeat=repeat)
    assert "rejects this call" in str(e.value) and err in str(e.value)
    with pytest.raises(ValueError, match="rejects this call"):
        viz.rounding_tree(c)


# ---------------------------------------------------------------- 4. switches / chip -------

def test_rounding_tree_switches_chip_and_leaves_are_checked():
    leaves = [60000.0, 60000.0, -30000.0, 100.0]
    with pytest.raises(ar.ConstraintError, match="saturate = 'no'") as e:   # was "on"
        explain.rounding_tree(leaves, saturate="no")
    assert e.value.code == BAD
    assert explain.rounding_tree(leaves, saturate=1).root.bits == \
        explain.rounding_tree(leaves, saturate=True).root.bits
    with pytest.raises(ar.ConstraintError, match="chip = ") as e:      # was atlas_a2
        explain.rounding_tree(leaves, chip=[])
    assert e.value.code == ar.Code.CHIP_UNKNOWN
    for bad in ([object(), object()], Outcome(None)):                  # were TypeErrors
        with pytest.raises(ar.ConstraintError, match="rounding_tree: source = ") as e:
            explain.rounding_tree(bad)
        assert e.value.code == BAD
    with pytest.raises(ar.ConstraintError, match="half|float16"):      # was an inf leaf
        explain.rounding_tree([70000.0, 1.0])
    for n in (0, 3, 6):                      # a ValueError without API, param, allowed
        with pytest.raises(ar.ConstraintError, match=rf"rounding_tree: source = '{n} leaves'"
                                                     r".*power-of-two") as e:
            explain.rounding_tree([1.0] * n)
        assert e.value.code == BAD
        with pytest.raises(ar.ConstraintError, match=rf"replay: leaf_bits = '{n} leaves'"):
            explain.replay(np.zeros(n, np.uint16), "float16")
    c = explain.make_case("whole_reduce_sum")
    for kw in ({"saturate": True}, {"chip": "atlas_a3"}, {"dtype": "float32"}):
        with pytest.raises(ar.ConstraintError, match=f"{next(iter(kw))} = ") as e:  # ignored
            explain.rounding_tree(c, **kw)
        assert e.value.code == BAD


# ---------------------------------------------------------------- 5. access_map ------------

@pytest.mark.parametrize("kw, code", [
    ({"mask": [-1, 2]}, "MASK_BITS"),
    ({"dtype": "int16", "chip": "atlas_a2"}, "DTYPE_UNSUPPORTED"),
    ({"mask": CounterMask(100), "chip": "atlas_training"}, "MASK_MODE"),
    ({"mask": CounterMask(-1)}, "MASK_RANGE"),
])
def test_access_map_raises_exactly_the_host_checks_the_docs_name(kw, code):
    c = explain.make_case("whole_reduce_sum", **kw)
    with pytest.raises(ar.ConstraintError) as e:
        explain.access_map(c)
    assert e.value.code.name == code
    # a host-stage check of the call (explain.constraints lists it so) ...
    stages = {tuple(line.split()[:2]) for line in
              explain.constraints("whole_reduce_sum", dtype=c.dtype).splitlines()[1:]}
    assert ("host", code) in stages
    # ... and the documentation says that such a call raises (it said: "is still mapped")
    doc = explain.access_map.__doc__ or ""
    assert "host" in doc and "raised" in doc
    with open("docs/explore.md", encoding="utf-8") as f:
        explore = f.read()
    section = explore[explore.index("## Access maps"):explore.index("## Rounding trees")]
    assert f"`{code}`" in section and "host-stage check" in section
    # a count the register holds but the kernel's rule refuses is a traced rule: mapped
    m = explain.access_map(explain.make_case("whole_reduce_sum", mask=CounterMask(2**40)))
    assert m.error.startswith("[MASK_RANGE]")


# ---------------------------------------------------------------- 6. make_case -------------

@pytest.mark.parametrize("kw, param, code", [
    ({"work_tensor": (1024, 16)}, "work_tensor", BAD),          # was dropped in silence
    ({"chip": []}, "chip", ar.Code.CHIP_UNKNOWN),                 # was the default chip
    ({"chip": ""}, "chip", ar.Code.CHIP_UNKNOWN),
    ({"dtype": "int16", "chip": "ascend950", "data": [1e10, 70000, -1.7]}, "data", BAD),
    ({"data": [70000.0]}, "data", BAD),                           # was inf
    ({"dtype": "uint16", "chip": "ascend950", "data": [-1]}, "data", BAD),   # was 65535
    ({"data": {}}, "data", BAD),                                  # were TypeErrors
    ({"data": object()}, "data", BAD),
    ({"data": lambda n: ["x"] * n}, "data", BAD),
])
def test_make_case_refuses_what_it_dropped_or_converted(kw, param, code):
    with pytest.raises(ar.ConstraintError, match=f"make_case: {param} = ") as e:
        explain.make_case("whole_reduce_sum", **kw)
    assert e.value.code == code


def test_make_case_data_kept_exactly():
    with pytest.raises(ar.ConstraintError, match="make_case: api = "):
        explain.make_case([])
    c = explain.make_case("whole_reduce_sum", chip="ascend950", dtype="int16",
                          data=[30000, -5.0, 7])
    assert c.ub[:6].view(np.int16).tolist() == [30000, -5, 7]
    c = explain.make_case("reduce_sum_count", chip="ascend950", dtype="uint64",
                          data=[2**64 - 1, 2], repeat=2)
    assert c.ub[:16].view(np.uint64).tolist() == [2**64 - 1, 2]
    w = explain.make_case("vec_reduce_add", chip="atlas_training", work_tensor=(512, 16))
    assert w.tensors["work_tensor"] == (512, 16)


# ---------------------------------------------------------------- 7. viz / text / replay ---

def test_viz_and_text_arguments_are_checked():
    t = explain.rounding_tree([1.0, 2.0, 3.0, 2049.0])
    for root in [(5, 0), (1, 7), (-1, 0), 3, (1.0, 0), (True, 0), "a"]:  # IndexError / TypeError
        with pytest.raises(ar.ConstraintError, match="viz.rounding_tree: root = ") as e:
            viz.rounding_tree(t, root=root)
        assert e.value.code == BAD
    viz.close(viz.rounding_tree(t, root=(1, 1)))
    viz.close(viz.rounding_tree(t, root=[0, 3]))
    m = explain.access_map("whole_reduce_sum")
    for kw in ({"max_repeats": None}, {"width": "x"}, {"width": 0}, {"max_rows": 1.5}):
        with pytest.raises(ar.ConstraintError, match=f"viz.access_map: {next(iter(kw))} = "):
            viz.access_map(m, **kw)
    # what to draw: named as viz.access_map's own argument (it said access_map: case = /
    # make_case: api =, functions the caller had not called)
    for amap, value in ((42, "'int'"), ("nope", "'nope'"), (None, "'NoneType'")):
        with pytest.raises(ar.ConstraintError, match=f"viz.access_map: amap = {value} ") as e:
            viz.access_map(amap)
        assert e.value.code == BAD
    viz.close(viz.access_map("whole_reduce_sum"))
    with pytest.raises(ar.ConstraintError, match="AccessMap.text: max_repeats = None"):
        m.text(max_repeats=None)
    with pytest.raises(ar.ConstraintError, match="RoundingTree.text: depth = None"):
        t.text(depth=None)
    with pytest.raises(ar.ConstraintError, match="RoundingTree.text: full = 'yes'"):
        t.text(full="yes")
    bits = np.zeros(4, np.uint16)
    with pytest.raises(ar.ConstraintError, match="replay: labels = "):   # was an IndexError
        explain.replay(bits, "float16", labels=["a"])
    with pytest.raises(ar.ConstraintError, match="replay: active = "):
        explain.replay(bits, "float16", active=[True])
    with pytest.raises(ar.ConstraintError, match="replay: saturate = "):
        explain.replay(bits, "float16", saturate="no")
    r = explain.replay(bits, "float16", labels=list("abcd"), active=[1, 0, 1, 0])
    assert [n.label for n in r.leaves] == list("abcd")
    assert [n.active for n in r.leaves] == [True, False, True, False]


def test_continuous_masks_of_no_lane_and_one_lane_read_as_such():
    for mask, words in ((0, "mask 0 (continuous: no lane)"), (1, "mask 1 (continuous: lane 0)"),
                        (37, "mask 37 (continuous: lanes 0-36)")):   # 0 was "lanes 0--1"
        assert words in explain.access_map(explain.make_case("whole_reduce_sum",
                                                             mask=mask)).text()
