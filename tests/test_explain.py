"""ascend_ref.explain / ascend_ref.viz: access maps and rounding trees agree with the real calls.

The address formula below is SPEC §1.1 written out independently (the module itself uses the
kernels' tables); written / undefined bytes and results come from the public API.
"""

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import ascend_ref as ar  # noqa: E402
import ascend_ref.explain as explain  # noqa: E402
import ascend_ref.viz as viz  # noqa: E402
from ascend_ref import cli  # noqa: E402


def spec_addr(base, r, i, blk, rep, s):
    epb = 32 // s
    return base + r * rep * 32 + (i // epb) * blk * 32 + (i % epb) * s


def mask_lanes(mask, lanes, tik=False):
    if isinstance(mask, int):
        return np.arange(lanes) < mask
    words = [mask[1], mask[0]] if tik else list(mask) + [0]
    bits = (words[0] | (words[1] << 64)) if lanes == 128 else words[0]
    return np.array([(bits >> i) & 1 for i in range(lanes)], bool)


CASES = [
    # api, chip, dtype, mask, repeat, blk, rep, drs, option
    ("whole_reduce_min", "atlas_a2", "float16", [0x5555555555555555, 0xF0], 2, 2, 16, 1,
     "ORDER_VALUE_INDEX"),
    ("whole_reduce_max", "atlas_a2", "float32", 37, 3, 0, 3, 2, "ORDER_INDEX_VALUE"),
    ("whole_reduce_sum", "atlas_a3", "float16", 128, 4, 1, 8, 1, None),
    ("reduce_data_block", "atlas_a2", "float16", [0xFFFF0000FFFF, 0], 3, 1, 9, 0, "SUM"),
    ("reduce_data_block", "ascend950", "float32", 20, 2, 3, 30, 1, "MIN"),
    ("vec_reduce_min", "atlas_training", "float16", [0, 2**64 - 1], 3, 1, 5, 1, True),
    ("vec_reduce_add", "atlas_training", "float16", 34, 6, 1, 3, 1, None),
]


def make(api, chip, dtype, mask, repeat, blk, rep, drs, option, **kw):
    return explain.make_case(api, chip=chip, dtype=dtype, mask=mask, repeat=repeat,
                             src_blk_stride=blk, src_rep_stride=rep, dst_rep_stride=drs,
                             option=option, **kw)


@pytest.mark.parametrize("c", CASES, ids=lambda c: f"{c[0]}-{c[2]}")
def test_reads_follow_spec_formula_and_mask(c):
    api, chip, dtype, mask, repeat, blk, rep, drs, option = c
    m = explain.access_map(make(*c))
    s = np.dtype(dtype).itemsize
    lanes = 256 // s
    tik = api.startswith("vec_")
    b = 1 if tik else blk
    want = np.array([[spec_addr(0, r, i, b, rep, s) for i in range(lanes)] for r in range(repeat)])
    np.testing.assert_array_equal(m.reads, want)
    np.testing.assert_array_equal(m.active, np.broadcast_to(mask_lanes(mask, lanes, tik),
                                                             (repeat, lanes)))
    assert m.error is None


@pytest.mark.parametrize("c", CASES, ids=lambda c: f"{c[0]}-{c[2]}")
def test_written_words_match_call_info(c):
    m = explain.access_map(make(*c))
    _, info = m.case.call(ar, return_info=True)
    from_map = np.zeros(m.case.ub.size, bool)
    for w in m.writes:
        for a in w.addr[w.final]:
            from_map[int(a):int(a) + m.size] = True
    written = np.asarray(info.written)
    undefined = np.asarray(info.undefined)
    np.testing.assert_array_equal(from_map & ~undefined, written)
    np.testing.assert_array_equal(m.written, written)
    # the words the map reports are the bytes the call wrote
    ub = np.asarray(m.ub_after)
    for w in m.writes:
        for a, bits in zip(w.addr[w.final], w.bits[w.final]):
            got = int(ub[int(a):int(a) + m.size].view(f"uint{8 * m.size}")[0])
            assert got == int(bits)


def test_min_winner_is_the_api_index():
    x = np.full(512, 10, np.float16)
    x[52], x[128 + 100], x[256 + 7], x[384 + 19] = 1, 2, 2.5, 3
    c = explain.make_case("whole_reduce_min", chip="atlas_a2", repeat=4, data=x)
    m = explain.access_map(c)
    assert m.winners.tolist() == [52, 100, 7, 19]
    txt = m.text()
    assert "min = 1.0 at lane 52" in txt and "index=52" in txt


def test_overlap_and_in_place_are_marked():
    # block stride 0: every active lane of a block reads the same 32 bytes 8 times
    c = explain.make_case("whole_reduce_sum", chip="atlas_a2", mask=64, repeat=2,
                          src_blk_stride=0, src_rep_stride=1)
    m = explain.access_map(c)
    cells = m.cells()
    # mask 64 = 4 active blocks, all at the repeat's first 32 bytes; repeat 1 starts 32 B on
    assert cells["reads"].max() == 4
    assert "*" in "\n".join(m.ub_text())
    np.testing.assert_array_equal(m.read_count[:32], np.full(32, 4))
    assert not m.read_count[32:].any()
    # in place: dst inside src, 1 repeat → read then written
    c = explain.make_case("whole_reduce_sum", chip="atlas_a2", repeat=1, src=(0, 128),
                          dst=(0, 16))
    m = explain.access_map(c)
    assert m.error is None
    assert "X" in "\n".join(m.ub_text())


def test_rejected_call_is_still_mapped():
    c = explain.make_case("whole_reduce_sum", chip="atlas_a2", repeat=3, src=(0, 200))
    m = explain.access_map(c)
    assert m.error is not None and "TENSOR_BOUNDS" in m.error
    assert m.written is None
    assert m.cells()["outside"].any()
    assert "REJECTED" in m.text() and "!" in "\n".join(m.ub_text())


def test_callable_module_keeps_status_names():
    assert ar.explain(0).startswith("OK")
    assert explain.explain_code(0) == ar.explain(0)


# ------------------------------------------------------------------ rounding trees ----------

def test_seed003_tree_saturating_and_not():
    t = explain.rounding_tree([60000.0, 60000.0, -30000.0, 100.0], saturate=True)
    assert float(t.result) == 35584.0
    top, (a, b) = t.root, t.levels[1]
    assert a.overflow and a.saturated and a.value == 65504.0
    assert b.inexact and not b.tie and b.value == -29904.0 and b.exact == -29900
    assert top.tie and top.exact == 35600           # 35600 is half way: 35584 is even
    t = explain.rounding_tree([60000.0, 60000.0, -30000.0, 100.0], saturate=False)
    assert np.isinf(t.levels[1][0].value) and t.levels[1][0].overflow
    assert not t.levels[1][0].saturated and np.isinf(float(t.result))
    assert t.error is None


def test_ties_to_even():
    t = explain.rounding_tree([2048.0, 1.0, 2048.0, 3.0])
    n0, n1 = t.levels[1]
    assert n0.tie and n0.value == 2048.0            # 2049 → 2048 (even)
    assert n1.tie and n1.value == 2052.0            # 2051 → 2052 (even)
    assert t.leaves[0].error == 0.0
    assert "tie -> even" in t.text(full=True)


def _api_sum_bits(case, m, k=0):
    ub = np.asarray(case.call(ar))
    a = int(m.writes[0].addr.reshape(-1)[k])
    return int(ub[a:a + m.size].view(f"uint{8 * m.size}")[0])


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("kind", ["random", "ties", "specials", "saturating"])
def test_tree_root_is_the_api_result(dtype, kind):
    data = None if kind == "random" else kind
    c = explain.make_case("whole_reduce_sum", chip="atlas_a2", dtype=dtype,
                          mask=[0xFFFFFFFF0000FFFF, 0xFF] if dtype == "float16" else [2**64 - 7],
                          repeat=3, src_blk_stride=2, src_rep_stride=5, dst_rep_stride=1,
                          data=data, seed=3, saturate=(kind == "saturating") or None
                          if dtype == "float16" else None)
    m = explain.access_map(c)
    for r in range(3):
        t = explain.rounding_tree(c, repeat=r)
        assert t.root.bits == _api_sum_bits(c, m, r)
        if t.error is not None and all(n.error is not None for n in t.nodes()):
            assert abs(sum(n.error for n in t.nodes()) - t.error) <= 1e-9 * max(1, abs(t.error))


def test_block_and_tik_stage_trees():
    c = explain.make_case("reduce_data_block", chip="atlas_a2", mask=[2**64 - 1, 0xF0F0], repeat=2,
                          option="SUM", seed=5)
    m = explain.access_map(c)
    w = m.writes[0]
    for b in range(8):
        if w.issued[1, b]:
            t = explain.rounding_tree(c, repeat=1, block=b)
            assert len(t.leaves) == 16 and t.root.bits == int(w.bits[1, b])
    x = np.repeat(np.array([1, 2, 3], np.float16), 128)
    c = explain.make_case("vec_reduce_add", chip="atlas_training", mask=34, repeat=6,
                          src_rep_stride=3, data=x)
    stage1 = [float(explain.rounding_tree(c, repeat=r).result) for r in range(6)]
    assert stage1 == [34, 34, 36, 68, 68, 86]                    # seed 003 example 2
    t2 = explain.rounding_tree(c, stage=2)
    assert float(t2.result) == 326 and [n.value for n in t2.leaves[:6]] == stage1
    with pytest.raises(ValueError):
        explain.rounding_tree(explain.make_case("whole_reduce_max", chip="atlas_a2"))


def test_stage3_when_repeats_exceed_lanes():
    c = explain.make_case("vec_reduce_add", chip="atlas_training", dtype="float32", mask=64,
                          repeat=70, src_rep_stride=8, seed=1)
    t3 = explain.rounding_tree(c, stage=3)
    ub = np.asarray(c.call(ar))
    dst = c.tensors["dst"][0]
    assert t3.root.bits == int(ub[dst:dst + 4].view(np.uint32)[0])
    assert sum(n.active for n in t3.leaves) == 2


# ------------------------------------------------------------------ CLI and pictures -------

def test_cli_explain_prints_map_and_tree(capsys, tmp_path):
    rc = cli.main(["explain", "whole_reduce_min", "--chip", "atlas_a2", "--dtype", "half",
                   "--mask", "0x5555555555555555,0", "--repeat", "2", "--src-blk-stride", "2",
                   "--src-rep-stride", "16"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "block 1  bytes [    64,     96)" in out and "UB map" in out and "legend" in out
    png = tmp_path / "tree.png"
    rc = cli.main(["explain", "whole_reduce_sum", "--values", "60000,60000,-30000,100",
                   "--mask", "4", "--saturate", "on", "--tree", "0", "--tree-png", str(png)])
    out = capsys.readouterr().out
    assert rc == 0 and "overflow -> saturated" in out and "tie -> even" in out
    assert png.stat().st_size > 10_000
    rc = cli.main(["explain", "whole_reduce_sum", "--repeat", "2", "--src", "0,100"])
    assert rc == 1 and "REJECTED" in capsys.readouterr().out


def test_pictures_render(tmp_path):
    c = make(*CASES[0])
    fig = viz.access_map(explain.access_map(c))
    assert len(fig.axes) == 2
    p = viz.save(fig, str(tmp_path / "map.png"))
    assert (tmp_path / "map.png").stat().st_size > 20_000 and p.endswith(".png")
    c = explain.make_case("whole_reduce_sum", chip="atlas_a2", seed=2)
    t = explain.rounding_tree(c)
    viz.save(viz.rounding_tree(t), str(tmp_path / "tree.png"))
    viz.save(viz.rounding_tree(t, root=(4, 1)), str(tmp_path / "sub.png"))
    assert (tmp_path / "sub.png").stat().st_size > 10_000


def test_access_map_of_an_api_name_is_its_default_call():
    """``access_map("vcadd")`` maps make_case's default call (a name was an AttributeError);
    anything but a Case or a name is BAD_ARGUMENT naming ``case``."""
    for api in ("whole_reduce_min", "vcadd"):
        got, want = explain.access_map(api), explain.access_map(explain.make_case(api))
        assert got.text() == want.text()
        np.testing.assert_array_equal(got.written, want.written)
    for bad in (None, 3, ["whole_reduce_min"]):
        with pytest.raises(ar.ConstraintError) as e:
            explain.access_map(bad)
        assert e.value.code == ar.Code.BAD_ARGUMENT and e.value.param == "case"


def test_viz_draws_a_case_or_a_name_as_its_map_and_tree():
    """viz.access_map / viz.rounding_tree of a Case (or a name, for the map) draw what the
    explain objects draw (both were an AttributeError); anything else is BAD_ARGUMENT."""
    case = explain.make_case("whole_reduce_sum")
    amap = explain.access_map(case)
    pairs = [(viz.access_map(case), viz.access_map(amap)),
             (viz.access_map("whole_reduce_sum"), viz.access_map(amap)),
             (viz.rounding_tree(case), viz.rounding_tree(explain.rounding_tree(case))),
             (viz.rounding_tree(amap), viz.rounding_tree(explain.rounding_tree(case)))]
    for got, want in pairs:
        assert [len(a.patches) for a in got.axes] == [len(a.patches) for a in want.axes] != []
        assert [t.get_text() for a in got.axes for t in a.texts] == \
            [t.get_text() for a in want.axes for t in a.texts]
        viz.close(got)
        viz.close(want)
    with pytest.raises(ar.ConstraintError, match="tree"):
        viz.rounding_tree(None)


@pytest.mark.parametrize("api, kw, param", [
    # silently stored in the Case and ignored by every path: the call shown was another one
    ("vec_reduce_add", {"option": "ORDER_VALUE_INDEX"}, "option"),
    ("whole_reduce_min", {"saturate": True}, "saturate"),
    # a KeyError, a ValueError not naming the argument, an IndexError
    ("whole_reduce_sum", {"data": "nope"}, "data"),
    ("whole_reduce_sum", {"seed": -1}, "seed"),
    ("whole_reduce_sum", {"repeat": "a"}, "repeat"),
    ("whole_reduce_sum", {"src_rep_stride": 1.5}, "src_rep_stride"),
    ("whole_reduce_sum", {"src": (1,)}, "src"),
    ("vec_reduce_add", {"work_tensor": (0, "x")}, "work_tensor"),
])
def test_make_case_arguments_that_make_no_call_are_bad_argument(api, kw, param):
    with pytest.raises(ar.ConstraintError, match=f"make_case: {param} = ") as e:
        explain.make_case(api, **kw)
    assert e.value.code == ar.Code.BAD_ARGUMENT


def test_make_case_arguments_of_the_api_still_work():
    c = explain.make_case("whole_reduce_sum", saturate=False, data="ties", seed=np.int64(3),
                          repeat=np.int32(2), src=[0, 256])
    assert (c.saturate, c.params["repeat"], c.tensors["src"]) == (False, 2, (0, 256))
    assert explain.make_case("vec_reduce_min", option=True).option is True
    assert explain.make_case("reduce_data_block", option=ar.ReduceType.MAX).option == "MAX"


@pytest.mark.parametrize("kw, text", [
    ({"stage": 9}, "stage 9: 1, 2 or 3"),             # was the stage-3 tree
    ({"stage": 0}, "stage 0: 1, 2 or 3"),
    ({"stage": 2, "chunk": 1}, "chunk 1 outside [0, 1)"),    # was "... leaves, got 0"
    ({"stage": 2, "chunk": -1}, "chunk -1 outside"),
    ({"repeat": "a"}, "repeat 'a': expected an int"),  # was a TypeError
])
def test_rounding_tree_arguments_are_checked(kw, text):
    c = explain.make_case("vec_reduce_add", chip="atlas_training", repeat=6)
    with pytest.raises(ValueError) as e:
        explain.rounding_tree(c, **kw)
    assert text in str(e.value)
    assert explain.rounding_tree(c, stage=2, chunk=0).root.bits == \
        explain.rounding_tree(c, stage=3).root.bits     # one chunk: its tree is the last


def test_rounding_tree_block_only_where_a_repeat_has_groups():
    """block picks a group of a per-group sum; on whole_reduce_sum it was ignored."""
    with pytest.raises(ValueError, match="block 1: whole_reduce_sum adds one sum per repeat"):
        explain.rounding_tree(explain.make_case("whole_reduce_sum"), block=1)
    rdb = explain.make_case("reduce_data_block", option="SUM")
    assert explain.rounding_tree(rdb, block=1).title.endswith("block 1 (lanes 16-31)")
    with pytest.raises(ValueError, match="source None"):    # was a tree of one NaN
        explain.rounding_tree(None)


def test_viz_save_names_what_it_cannot_use(tmp_path):
    """path None / 3 and fig None were AttributeErrors from matplotlib."""
    fig = viz.access_map("whole_reduce_sum")
    for path in (None, 3):
        with pytest.raises(ValueError, match="save: path = "):
            viz.save(fig, path)
    with pytest.raises(ValueError, match="save: fig = NoneType"):
        viz.save(None, str(tmp_path / "x.png"))
    assert viz.save(fig, tmp_path / "x.png") == tmp_path / "x.png"
    assert (tmp_path / "x.png").stat().st_size > 0



def test_viz_save_closes_the_figure_when_it_cannot_write(tmp_path):
    """A folder that does not exist was matplotlib's FileNotFoundError, an extension it has
    no writer for its bare ValueError, and both left the figure open (save closes it)."""
    import matplotlib.pyplot as plt

    for path, said in ((tmp_path / "no" / "x.png", "does not exist (make it first)"),
                       (tmp_path / "x.xyz", "use .png, .svg or .pdf")):
        plt.close("all")
        fig = viz.access_map("whole_reduce_sum")
        with pytest.raises(ValueError, match=re.escape(said)):
            viz.save(fig, path)
        assert plt.get_fignums() == [], path


def test_reprs_are_one_line_and_name_the_call_not_the_ub_bytes():
    """A Case's repr shows every field but the UB's bytes (their dtype and count instead), an
    AccessMap's and a RoundingTree's one summary line each, however large the call; ``str``
    and a notebook still show the whole map / tree."""
    from ascend_ref.case import Case

    big = explain.make_case("whole_reduce_sum", repeat=255, dst=(100000, 256))
    ub = np.zeros(192 * 1024, np.uint8)
    ub[:big.ub.size] = big.ub
    case = Case(big.api, big.chip, big.dtype, big.option, big.mask, big.params, big.tensors, ub)
    r = repr(case)
    assert "ub=<uint8[196608]>" in r and "\n" not in r and len(r) < 400, r
    for name in ("api='whole_reduce_sum'", "chip='atlas_a2'", "'repeat': 255",
                 "'dst': (100000, 256)", "saturate=None"):
        assert name in r, (name, r)
    assert "tags=" not in r                 # no tags: not shown; make_case's are
    assert "tags={'made_by': 'explain.make_case'}" in repr(big)

    amap = explain.access_map(case)
    r = repr(amap)
    assert r.startswith("<AccessMap whole_reduce_sum<float16> on atlas_a2 · mask 128")
    assert r.endswith(f": {255 * 128} active lanes, 255 words written, ok>"), r
    assert "\n" not in r and len(str(amap).splitlines()) > 10
    bad = explain.access_map(explain.make_case("whole_reduce_sum", src=(0, 64)))
    assert "0 words written" in repr(bad) and "TENSOR_BOUNDS" in repr(bad)

    tree = explain.rounding_tree(case, repeat=7)
    r = repr(tree)
    assert r.startswith("<RoundingTree 'whole_reduce_sum<float16> on atlas_a2, repeat 7', "
                        "float16, 128 leaves, result ") and "\n" not in r, r
    want = ar.load(ar.ascendc.whole_reduce_sum(ub, ar.Tensor(100000, "half", 256),
                                               ar.Tensor(0, "half", 255 * 128), 128, 255, 1,
                                               1, 8, chip="atlas_a2"), 100000 + 14, "uint16", 1)
    assert f"(0x{int(want[0]):04X})" in r, (r, want)
    assert len(str(tree).splitlines()) > 5
    assert "exact sum" not in repr(explain.rounding_tree([np.inf, 1.0]))   # no exact sum


def test_a_rejected_calls_writes_are_would_writes_and_none_is_overwritten():
    """A rejected call writes nothing: each repeat's line said "(overwritten by a later
    repeat)", the last one and a single repeat's too. dstRepStride 0 with two repeats: on
    atlas_training (DST_STRIDE_ZERO) both lines "would write"; on A2 (last wins) the first
    is overwritten and the second not."""
    def writes(chip):
        c = explain.make_case("whole_reduce_sum", chip=chip, mask=3, repeat=2,
                              dst_rep_stride=0, data=lambda n: np.arange(n) % 2048)
        m = explain.access_map(c)
        return m.error, [ln.strip() for ln in m.text().splitlines() if "write " in ln
                         or ln.strip().startswith("writes ")]
    err, lines = writes("atlas_training")
    assert "DST_STRIDE_ZERO" in err and len(lines) == 2
    assert all(ln.startswith("would write dst bytes [512, 514)") and "overwritten" not in ln
               for ln in lines), lines
    err, lines = writes("atlas_a2")
    assert err is None and [("overwritten" in ln) for ln in lines] == [True, False], lines
    assert all(ln.startswith("writes dst bytes [512, 514): sum=") for ln in lines), lines


def test_a_count_form_call_is_described_by_its_count_and_its_repeats():
    """reduce_max_count of 300 halves: 3 repeats (128, 128, 44 lanes). The map said
    "repeat 300", showed a mask the count form does not have, called 300 "past the table"
    and listed a fourth, fully masked repeat."""
    m = explain.access_map(explain.make_case("reduce_max_count", repeat=300))
    text = m.text()
    assert m.error is None and m.repeat == 3
    assert "count 300 (the first 300 elements: 3 repeats of 128 lanes, the last 44; no mask)" \
        in text
    assert "past the table" not in text and "  repeat 2 " in text and "  repeat 3 " not in text
    assert "mask 128" not in text and "· repeat 300" not in text
    assert m.active[:3].sum(axis=1).tolist() == [128, 128, 44]
    one = explain.access_map(explain.make_case("reduce_sum_count", repeat=100))
    assert one.repeat == 1 and "count 100 (the first 100 elements: 1 repeat of 128 lanes; " \
        "no mask)" in one.text()
