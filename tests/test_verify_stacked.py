"""The stacked dump layout (format version 2) and its vectorised verifier.

The same adversarial cases -- mismatching bytes, garbage in undefined bytes, device errors
that agree and that do not, calls the reference rejects, bad rows, mixed APIs, products and
dtypes in one file -- are written as version-1 files (layout "regions") and as stacked
files; verifying them must give the same report (verdicts, mismatch groups, bad input, exit
code) whether the stacked file is verified as whole batches or case by case, and the same as
the version-1 files. Expected verdicts come from the per-case path, never typed in. Every
case uses the 4 KiB UB of tests/test_verify.py (the kernels compile once per API/dtype).
"""

import json
import re
import zipfile

import numpy as np
import pytest

from ascend_ref import batch, batch_prep
from ascend_ref.batch import run_cases
from ascend_ref.case import Case
from ascend_ref.cli import main as cli_main
from ascend_ref.constraints import Code
from ascend_ref.verify import DumpError, iter_dump_cases, open_dump, verify, write_dumps
from ascend_ref.verify import fast as vfast

from conftest import spans_recorded, undefined_spans
from test_verify import device_afters

UB = 4096


def mk(api, dtype, option, mask, repeat, *, chip="atlas_a2", seed=0, sat=None):
    s = np.dtype(dtype).itemsize
    ub = np.zeros(UB, np.uint8)
    v = np.random.default_rng(seed).uniform(-4, 4, 2048 // s).astype(dtype).view(np.uint8)
    ub[:v.size] = v
    if api.startswith("vec_"):
        return Case(api, chip, dtype, option, mask, {"repeat": repeat, "src_rep_stride": 8},
                    {"src": (0, 2048 // s), "dst": (2048, 32 // s),
                     "work_tensor": (2304, 512 // s)}, ub, sat)
    return Case(api, chip, dtype, option, mask,
                {"repeat": repeat, "dst_rep_stride": 1, "src_blk_stride": 1,
                 "src_rep_stride": 8}, {"src": (0, 2048 // s), "dst": (2048, 1024 // s)}, ub,
                sat)


@pytest.fixture(scope="module")
def adversarial():
    """``(cases, afters, errors, expect)``: what a misbehaving device wrote, and a label per
    case of what was planted (the verdicts themselves come from the per-case path)."""
    cases, expect = [], []

    def add(c, label):
        cases.append(c)
        expect.append(label)

    for k in range(6):
        add(mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 1 + k % 4, seed=k),
            "good")
    for k in range(3):
        add(mk("whole_reduce_sum", "float32", None, 64, 4, seed=10 + k,
               chip="atlas_a2" if k % 2 else "atlas_a3"), "good")
    add(mk("whole_reduce_sum", "float32", None, [2**64 - 1], 2, seed=20), "good")   # bit mode
    add(mk("vec_reduce_add", "float16", None, 128, 2, chip="atlas_training", seed=5),
        "undefined garbage")
    add(mk("whole_reduce_sum", "float16", None, 128, 3, seed=6), "good")      # saturate default
    add(mk("whole_reduce_sum", "float16", None, 128, 3, seed=7, sat=False), "good")
    add(mk("reduce_data_block", "float16", "MIN", [2**64 - 1, 2**63 + 5], 4, seed=8), "good")
    add(mk("whole_reduce_max", "float16", "ORDER_ONLY_VALUE", 100, 3, seed=9), "good")
    add(mk("vec_reduce_add", "float16", None, [2**40 + 3, 2**64 - 1], 2, chip="atlas_training",
           seed=11), "undefined garbage")                                # TIK [mask_h, mask_l]
    add(mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 3, seed=30), "flip dst")
    add(mk("whole_reduce_sum", "float32", None, 64, 2, seed=31, chip="atlas_a3"), "flip dst")
    add(mk("whole_reduce_sum", "float16", None, 200, 1), "device error agrees")   # MASK_RANGE
    add(mk("whole_reduce_sum", "float16", None, 201, 1), "device error differs")
    add(mk("whole_reduce_sum", "float16", None, 202, 1), "device ran, reference rejects")
    add(mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 2, seed=32),
        "device error, reference ran")
    add(mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 2, seed=33), "bad row")
    outs = run_cases(cases)
    afters, errors = [], []
    for c, o, label in zip(cases, outs, expect):
        after = None if o.code is not None else o.ub.copy()
        err = o.code
        if label == "undefined garbage":
            assert o.undefined.any()
            after[o.undefined] ^= 0x5A
        elif label == "flip dst":
            after[c.tensors["dst"][0]] ^= 0x01
        elif label == "device error differs":
            assert err == Code.MASK_RANGE
            err = Code.ALIGN
        elif label == "device ran, reference rejects":
            after, err = c.ub.copy(), None
        elif label == "device error, reference ran":
            after, err = None, Code.MASK_RANGE
        afters.append(after)
        errors.append(err)
    bad = cases[expect.index("bad row")]
    cases[expect.index("bad row")] = Case(bad.api, bad.chip, bad.dtype, bad.option, bad.mask,
                                          dict(bad.params, src_rep_stride=-1), bad.tensors,
                                          bad.ub)
    return cases, afters, errors, expect


def _write(d, cases, afters, errors, *, stacked, per_file=7):
    d.mkdir(parents=True, exist_ok=True)
    for k in range(0, len(cases), per_file):
        s = slice(k, k + per_file)
        write_dumps(d / f"dump_{k // per_file:03d}.npz", cases[s], afters[s], regions="tensors",
                    errors=errors[s], stacked=stacked)


def _norm(report, d):
    """The report as JSON and text, the directory and the run time taken out."""
    text = re.sub(r" in [0-9.]+ s:", " in T s:", report.format(examples=3))
    return (json.dumps(report.to_json(), sort_keys=True).replace(str(d), "D"),
            text.replace(str(d), "D"), report.exit_code)


def test_stacked_cases_read_back_as_version_1(tmp_path, adversarial):
    cases, afters, errors, _ = adversarial
    write_dumps(tmp_path / "v1.npz", cases, afters, regions="tensors", errors=errors)
    write_dumps(tmp_path / "v2.npz", cases, afters, regions="tensors", errors=errors,
                stacked=True)
    with open_dump(tmp_path / "v1.npz") as f1, open_dump(tmp_path / "v2.npz") as f2:
        assert f2.version == 2 and f2.count == f1.count == len(cases)
        assert len(f2.stacked.groups) > 3            # mixed APIs, products, dtypes, masks
        for i in range(f1.count):
            try:
                a = f1.case(i)
            except DumpError as e:
                with pytest.raises(DumpError) as e2:
                    f2.case(i)
                assert (e2.value.field, e2.value.reason) == (e.field, e.reason)
                continue
            b = f2.case(i)
            assert b.case.describe() == a.case.describe() and b.error == a.error
            np.testing.assert_array_equal(b.case.ub, a.case.ub)
            for x, y in ((a.after, b.after), (a.compared, b.compared)):
                assert (x is None) == (y is None)
                if x is not None:
                    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("batch", [256, 3])
def test_stacked_report_equals_per_case_and_version_1(tmp_path, adversarial, batch):
    cases, afters, errors, expect = adversarial
    _write(tmp_path / "v1", cases, afters, errors, stacked=False)
    _write(tmp_path / "v2", cases, afters, errors, stacked=True)
    v1 = verify(tmp_path / "v1", progress=False, batch_size=batch)
    vfast.STATS.clear()
    fast = verify(tmp_path / "v2", progress=False, batch_size=batch)
    decided = vfast.STATS["vectorised"]
    slow = verify(tmp_path / "v2", progress=False, batch_size=batch, vectorised=False)
    assert _norm(fast, tmp_path / "v2") == _norm(slow, tmp_path / "v2")
    assert _norm(fast, tmp_path / "v2") == _norm(v1, tmp_path / "v1")
    # what was planted is what the per-case path found (the verdicts are not typed in)
    assert not fast.ok and fast.exit_code == 1
    assert fast.mismatched == expect.count("flip dst") + expect.count("device error differs") \
        + expect.count("device error, reference ran")
    assert fast.device_errors == 1 and fast.cases_with_undefined >= 1
    assert len(fast.bad) == expect.count("bad row") + expect.count("device ran, reference rejects")
    # the batches decided the agreeing cases and the agreeing device error; the rest went
    # case by case
    assert decided == expect.count("good") + expect.count("undefined garbage") + 1
    assert vfast.STATS["per_case"] == len(cases) - decided


def test_stacked_windows_are_the_same_over_uncleared_memory(tmp_path, adversarial,
                                                           monkeypatch):
    """The vectorised verifier builds run_batch's input windows in memory it does not clear
    first (only the columns no region's block copy writes are zeroed), chunk by chunk as
    run_batch asks (batch.fill_rows): with every such buffer filled with garbage, the
    windows as the kernels read them and the report equal those built in cleared memory."""
    cases, afters, errors, _ = adversarial
    _write(tmp_path / "v2", cases, afters, errors, stacked=True)
    real_empty, real_run = batch_prep.result_empty, batch.run_batch
    seen: dict = {}

    def spy(api, ubs, **kw):
        snap = np.array(ubs)
        fill = batch._FILL.get()
        if fill is None:
            out = real_run(api, ubs, **kw)
        else:
            def rec(start, stop):                 # each chunk's rows as the kernel reads them
                fill(start, stop)
                snap[start:stop] = ubs[start:stop]

            with batch.fill_rows(rec):
                out = real_run(api, ubs, **kw)
        seen[garbage].append((api, snap))
        return out

    def empty(shape, align=64, zero=False):
        out = real_empty(shape, align, zero)
        if not zero:
            out.fill(garbage)
        return out

    monkeypatch.setattr(batch, "run_batch", spy)
    monkeypatch.setattr(batch_prep, "result_empty", empty)
    reports = {}
    for garbage in (0, 0xA5):
        seen[garbage] = []
        reports[garbage] = _norm(verify(tmp_path / "v2", progress=False), tmp_path / "v2")
    assert reports[0] == reports[0xA5]
    assert len(seen[0]) == len(seen[0xA5]) >= 3
    gaps = 0
    for (a0, w0), (a1, w1) in zip(seen[0], seen[0xA5]):
        assert a0 == a1
        np.testing.assert_array_equal(w1, w0, err_msg=a0)
        gaps += int((w0 == 0).sum())
    assert gaps       # the windows have bytes no region writes (else nothing was tested)


def test_stacked_explain_and_cli(tmp_path, adversarial, capsys):
    cases, afters, errors, expect = adversarial
    _write(tmp_path / "v2", cases, afters, errors, stacked=True, per_file=len(cases))
    p = tmp_path / "v2" / "dump_000.npz"
    assert cli_main(["verify", str(p), "--no-progress"]) == 1
    assert "RESULT: FAILED" in capsys.readouterr().out
    i = expect.index("flip dst")
    assert cli_main(["verify", str(p), "--case", str(i), "--explain"]) == 1
    assert "MISMATCH" in capsys.readouterr().out
    good = [k for k, e in enumerate(expect) if e == "good"]
    q = tmp_path / "good.npz"
    write_dumps(q, [cases[k] for k in good], [afters[k] for k in good], regions="tensors",
                stacked=True)
    assert cli_main(["verify", str(q), "--no-progress"]) == 0
    assert "RESULT: OK" in capsys.readouterr().out


def test_stacked_shares_split_the_cases(tmp_path, adversarial):
    """Distributed shares: each case verified once, the merged counts those of one process."""
    cases, afters, errors, _ = adversarial
    _write(tmp_path / "v2", cases, afters, errors, stacked=True)
    whole = [x.index if not isinstance(x, DumpError) else (x.file, x.case)
             for x in iter_dump_cases([tmp_path / "v2"])]
    seen = []
    for share in ((0, 3), (1, 3), (2, 3)):
        def fast(f, mine):
            seen.extend((f.path, i) for i in np.flatnonzero(mine).tolist())
            return np.flatnonzero(mine).tolist()            # leave all to the per-case path
        list(iter_dump_cases([tmp_path / "v2"], share=share, stacked=fast))
    assert len(seen) == len(whole) == len(set(seen))


def _good_stacked(tmp_path, adversarial):
    cases, afters, _, expect = adversarial
    good = [k for k, e in enumerate(expect) if e == "good"]
    p = tmp_path / "good.npz"
    write_dumps(p, [cases[k] for k in good], [afters[k] for k in good], regions="tensors",
                stacked=True, compress=False)
    with np.load(p, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return p, arrays


def _check_bad(tmp_path, name, arrays, field):
    p = tmp_path / name
    np.savez(p, **arrays)
    with pytest.raises(DumpError) as e:
        open_dump(p)
    assert e.value.field == field, str(e.value)
    r = verify(p, progress=False)                   # a clear bad-input entry, not a traceback
    assert not r.ok and r.cases == 0 and [x.field for x in r.bad] == [field]


def test_corrupt_stacked_files_are_bad_input(tmp_path, adversarial, capsys):
    p, arrays = _good_stacked(tmp_path, adversarial)
    data = p.read_bytes()
    for cut in (len(data) // 3, len(data) - 40):
        t = tmp_path / f"cut{cut}.npz"
        t.write_bytes(data[:cut])
        assert cli_main(["verify", str(t), "--no-progress"]) == 1
        out = capsys.readouterr().out
        assert "bad input" in out and "Traceback" not in out
    a = dict(arrays)
    a["g0.params"] = a["g0.params"][:-1]
    _check_bad(tmp_path, "short.npz", a, "g0.params")
    a = dict(arrays)
    a["g0.before.src"] = a["g0.before.src"][:-1]
    _check_bad(tmp_path, "bytes.npz", a, "g0.before.src")
    a = dict(arrays)
    a["g0.case"] = np.zeros_like(a["g0.case"])
    _check_bad(tmp_path, "twice.npz", a, "g0.case")
    a = dict(arrays)
    a["g0.mask"] = a["g0.mask"].astype(np.int64)
    _check_bad(tmp_path, "dtype.npz", a, "g0.mask")
    a = dict(arrays)
    a["layout"] = np.array("columns")
    _check_bad(tmp_path, "layout.npz", a, "layout")
    a = dict(arrays)
    a["count"] = np.array(int(a["count"]) + 1)
    _check_bad(tmp_path, "count.npz", a, "count")
    a = dict(arrays)
    del a["g1.regions"]
    _check_bad(tmp_path, "missing.npz", a, "g1.regions")
    a = dict(arrays)
    meta = json.loads(str(a["g0.meta"][()]))
    meta["api"] = "whole_reduce_avg"               # a bad shared field: every case of the group
    a["g0.meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "api.npz", **a)
    r = verify(tmp_path / "api.npz", progress=False)
    n0 = len(a["g0.case"])
    assert [x.field for x in r.bad] == ["meta.api"] * n0 and r.cases == int(a["count"]) - n0
    # a CRC error inside one column: the file is bad, named by the member
    raw = bytearray(p.read_bytes())
    k = raw.find(b"g0.before.src.npy")
    raw[k + 300] ^= 0xFF
    (tmp_path / "crc.npz").write_bytes(bytes(raw))
    with pytest.raises(DumpError):
        open_dump(tmp_path / "crc.npz")
    assert zipfile.is_zipfile(tmp_path / "crc.npz")


def test_golden_writes_stacked_dumps(tmp_path):
    from ascend_ref.golden import generate

    g1 = generate("whole_reduce_sum_float", tmp_path / "v1", dumps=True)
    g2 = generate("whole_reduce_sum_float", tmp_path / "v2", dumps=True, stacked=True)
    p2 = next(f for f in g2.files if f.endswith(".npz"))
    with open_dump(p2) as f:
        assert f.version == 2 and f.count == len(g2.cases)
    r1 = verify(tmp_path / "v1" / "dumps", progress=False)
    r2 = verify(tmp_path / "v2" / "dumps", progress=False)
    assert r1.ok and r2.ok and r2.cases == r1.cases == len(g1.cases)


def test_run_batch_undefined_mask_equals_run_cases():
    """run_batch(return_undefined=True) marks the bytes run_cases' outcomes mark undefined."""
    import ascend_ref as ar

    cs = [mk("vec_reduce_add", "float16", None, 128, 2 + k % 2, chip="atlas_training", seed=k)
          for k in range(4)]
    outs = run_cases(cs)
    ubs = np.stack([c.ub for c in cs])
    got, status, undef = ar.run_batch(
        "vec_reduce_add", ubs, chip="atlas_training", dtype="float16", mask=[128] * 4,
        repeat=np.array([c.params["repeat"] for c in cs]), src_rep_stride=8,
        src=cs[0].tensors["src"], dst=cs[0].tensors["dst"],
        work_tensor=cs[0].tensors["work_tensor"], return_undefined=True)
    assert (status == 0).all() and undef.shape == ubs.shape
    # undefined_rows says which rows hold an undefined byte, here all of them, and none
    # in a call whose outcomes have none
    with batch.undefined_rows() as marked:
        again = ar.run_batch(
            "vec_reduce_add", ubs, chip="atlas_training", dtype="float16", mask=[128] * 4,
            repeat=np.array([c.params["repeat"] for c in cs]), src_rep_stride=8,
            src=cs[0].tensors["src"], dst=cs[0].tensors["dst"],
            work_tensor=cs[0].tensors["work_tensor"], return_undefined=True)
        min_ub = np.stack([mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 2,
                              seed=k).ub for k in range(3)])
        _, _, none = ar.run_batch(
            "whole_reduce_min", min_ub, chip="atlas_a2", dtype="float16", mask=[128] * 3,
            order="ORDER_VALUE_INDEX", repeat=2, dst_rep_stride=1, src_blk_stride=1,
            src_rep_stride=8, src=(0, 1024), dst=(2048, 512), return_undefined=True)
    np.testing.assert_array_equal(again[2], undef)
    assert [m.rows.tolist() for m in marked] == [[True] * 4, [False] * 3] and not none.any()
    assert spans_recorded(marked[0]) == undefined_spans(undef)
    assert spans_recorded(marked[1]) == ([False] * 3, [2048 * 2] * 3, [0] * 3)
    for k, o in enumerate(outs):
        assert o.undefined.any()
        np.testing.assert_array_equal(undef[k], o.undefined)
        np.testing.assert_array_equal(got[k][~o.undefined], o.ub[~o.undefined])
    plain = ar.run_batch("vec_reduce_add", ubs, chip="atlas_training", dtype="float16",
                         mask=[128] * 4, repeat=np.array([c.params["repeat"] for c in cs]),
                         src_rep_stride=8, src=cs[0].tensors["src"], dst=cs[0].tensors["dst"],
                         work_tensor=cs[0].tensors["work_tensor"])
    assert len(plain) == 2
    np.testing.assert_array_equal(plain[0], got)


@pytest.mark.slow
def test_fuzzed_stacked_report_equals_per_case(tmp_path):
    """Random calls on every product and API (some invalid: device errors; defined bytes
    flipped in half of the others, undefined bytes scribbled): the stacked file's report,
    vectorised, equals its per-case report and the version-1 files' report."""
    from ascend_ref.fuzz.generate import RngDraw, draw_case
    from ascend_ref.verify.format import tensor_regions

    cases = []
    for i in range(200):
        c = draw_case(RngDraw(91, i), invalid_rate=0.15, max_ub=1 << 14, tik_max_repeat=64)
        words = c.mask if isinstance(c.mask, list) else [c.mask]   # (or a CounterMask)
        if all(a + n <= c.ub.size for a, n in tensor_regions(c).values()) and \
                all(0 <= w < 2**64 for w in words if isinstance(w, (int, np.integer))):
            cases.append(c)
    outs = run_cases(cases)
    afters, _ = device_afters(outs, np.random.default_rng(1))
    errors = [o.code for o in outs]
    _write(tmp_path / "v1", cases, afters, errors, stacked=False, per_file=50)
    _write(tmp_path / "v2", cases, afters, errors, stacked=True, per_file=50)
    vfast.STATS.clear()
    fast = verify(tmp_path / "v2", progress=False)
    assert vfast.STATS["vectorised"] > 0          # the batches decided some (the rest: errors,
    #                                                 mismatches, no compact window)
    slow = verify(tmp_path / "v2", progress=False, vectorised=False)
    v1 = verify(tmp_path / "v1", progress=False)
    assert _norm(fast, tmp_path / "v2") == _norm(slow, tmp_path / "v2")
    assert _norm(fast, tmp_path / "v2") == _norm(v1, tmp_path / "v1")
    assert fast.mismatched > 0 and fast.device_errors > 0


# ------------------------------------------------------------------ version 1 as batches ---
# A version-1 file of layout "regions" is stacked into the same groups (verify.regions) and
# verified by the same batches; whatever cannot be stacked or decided goes case by case. The
# report must be the per-case path's (vectorised=False), byte for byte.

def _v1_arrays(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _v1_join(parts):
    """One version-1 archive's members from several (their cases renumbered in order)."""
    out = {"format": np.array("ascend_ref.dump"), "version": np.array(1)}
    n = 0
    for arrays in parts:
        count = int(arrays["count"])
        for k, a in arrays.items():
            head, dot, rest = k.partition(".")
            if dot and head[0] == "c" and head[1:].isdigit():
                out[f"c{int(head[1:]) + n}.{rest}"] = a
        n += count
    out["count"] = np.array(n)
    return out


@pytest.fixture(scope="module")
def mixed_v1(adversarial, tmp_path_factory):
    """The adversarial cases in one version-1 regions file, with cases mixed in that cannot
    be stacked (layout "ub", a region member of the wrong dtype, an after region recorded for
    dst only, invalid JSON, recorded registers -- one of them wrong) and ones stacked from
    other spellings (mask words as "0x" text, no ub_bytes, tags and source). Returns
    ``(path, labels)``."""
    from ascend_ref.verify.registers import reference_dump

    cases, afters, errors, expect = adversarial
    d = tmp_path_factory.mktemp("mixed_v1")
    write_dumps(d / "base.npz", cases, afters, regions="tensors", errors=errors)
    parts, labels = [_v1_arrays(d / "base.npz")], list(expect)

    def one(case, label, *, regions="tensors", edit=None, spr=None):
        out = run_cases([case])[0]
        write_dumps(d / "one.npz", [case], [out.ub], regions=regions,
                    sprs=None if spr is None else [spr])
        a = _v1_arrays(d / "one.npz")
        meta = json.loads(str(a["c0.meta"][()]))
        if edit is None or edit(a, meta) is not False:      # False: the edit wrote meta
            a["c0.meta"] = np.array(json.dumps(meta))
        parts.append(a)
        labels.append(label)

    base = mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 2, seed=40)
    one(base, "layout ub", regions=None)

    def wrong_dtype(a, meta):
        a["c0.before.src"] = a["c0.before.src"].view(np.uint16)
    one(base, "bad member dtype", edit=wrong_dtype)

    def dst_only(a, meta):
        del a["c0.after.src"]
    one(base, "after for dst only", edit=dst_only)

    def hex_words(a, meta):
        meta["mask"] = [hex(w) for w in meta["mask"]]
    one(mk("reduce_data_block", "float16", "MIN", [2**64 - 1, 2**63 + 5], 4, seed=41),
        "hex mask words", edit=hex_words)

    def no_ub_bytes(a, meta):
        del meta["ub_bytes"]
        meta["tags"] = {"kernel": "k1"}
        meta["source"] = "simulator 1.2"
    one(mk("whole_reduce_sum", "float32", None, 64, 4, seed=42), "product UB, tags",
        edit=no_ub_bytes)

    def bad_json(a, meta):
        a["c0.meta"] = np.array("{not json")
        return False
    one(base, "invalid JSON", edit=bad_json)

    m = mk("whole_reduce_max", "float32", "ORDER_VALUE_INDEX", 64, 1, seed=43)
    spr = reference_dump(m)
    assert spr is not None
    one(m, "registers agree", spr=spr)
    wrong = json.loads(json.dumps(spr))
    wrong["after"]["max_min"]["index"] = int(wrong["after"]["max_min"]["index"]) + 1
    one(m, "register differs", spr=wrong)
    p = d / "mixed.npz"
    np.savez_compressed(p, **_v1_join(parts))
    return p, labels


@pytest.fixture(scope="module")
def mixed_v1_stored(mixed_v1):
    """``mixed_v1`` with every member stored: the region bytes are read where they lie in
    the archive (verify.members), at offsets that follow no stride."""
    p, labels = mixed_v1
    q = p.with_name("mixed_stored.npz")
    np.savez(q, **_v1_arrays(p))
    return q, labels


@pytest.mark.parametrize("stored", [False, True])
def test_regions_file_batches_report_equals_per_case(mixed_v1, mixed_v1_stored, stored,
                                                     monkeypatch):
    from ascend_ref.verify import regions

    p, labels = mixed_v1_stored if stored else mixed_v1
    monkeypatch.setattr(regions, "MIN_CASES", 1)
    copied = []
    monkeypatch.setattr(regions, "column_of", lambda rows: copied.append(1) or
                        batch_prep.column_of(rows))
    vfast.STATS.clear()
    fast = verify(p, progress=False)
    # stored members are read in place (no column is copied); inflated ones are copied
    assert (not copied) if stored else copied
    decided = vfast.STATS["vectorised"]
    slow = verify(p, progress=False, vectorised=False)
    assert _norm(fast, p.parent) == _norm(slow, p.parent)
    # what was planted, as the per-case path found it (not typed in): the spr case, the
    # bad members and the bad JSON are there, the undefined bytes were skipped
    assert fast.spr_cases == 2 and "spr max_min.index" in fast.groups
    bad = {(e.case, e.field) for e in fast.bad}
    assert (labels.index("bad member dtype"), f"c{labels.index('bad member dtype')}.before.src") \
        in bad
    assert (labels.index("invalid JSON"), f"c{labels.index('invalid JSON')}.meta") in bad
    assert fast.cases_with_undefined >= 1 and fast.undefined_bytes > 0
    # the batches decided the agreeing cases of layout "regions" (the planted good ones,
    # the scribbled undefined bytes, the agreeing device error, hex words, product UB)
    assert decided == labels.count("good") + labels.count("undefined garbage") + 1 + 2
    assert vfast.STATS["per_case"] == len(labels) - decided


def test_regions_file_below_min_cases_goes_case_by_case(mixed_v1, monkeypatch):
    from ascend_ref.verify import regions

    p, labels = mixed_v1
    monkeypatch.setattr(regions, "MIN_CASES", len(labels) + 1)
    vfast.STATS.clear()
    r = verify(p, progress=False)
    assert vfast.STATS["vectorised"] == 0 and r.cases + len(r.bad) >= len(labels) - 1


def test_zip_directory_equals_zipfile(mixed_v1, tmp_path):
    """The archive directory read from the bytes is zipfile's; a layout it does not take (a
    comment after the archive) goes through zipfile and reads the same."""
    from ascend_ref.verify import format as fmt

    p, _ = mixed_v1
    raw = p.read_bytes()
    got = fmt._zip_directory(raw)
    with zipfile.ZipFile(p) as z:
        want = {i.filename: (i.header_offset, i.compress_type, i.flag_bits, i.compress_size,
                             i.file_size, i.CRC) for i in z.infolist()}
    assert got is not None and {k: tuple(v) for k, v in got.items()} == want
    q = tmp_path / "comment.npz"
    q.write_bytes(raw)
    with zipfile.ZipFile(q, "a") as z:
        z.comment = b"simulator run 7"
    assert fmt._zip_directory(q.read_bytes()) is None
    assert fmt._zip_directory(raw[:-1]) is None and fmt._zip_directory(b"PK") is None
    a, b = verify(p, progress=False), verify(q, progress=False)
    assert _norm(a, p.parent)[0] == _norm(b, q.parent)[0].replace("comment.npz", "mixed.npz")


def test_count_true_is_count_nonzero():
    """The comparator's count of undefined bytes per row (eight bytes a word) is numpy's
    count, over row lengths around the word size, unaligned column offsets (a region's first
    column need not be a multiple of 8), row subsets and rows that are not contiguous."""
    rng = np.random.default_rng(5)
    for k in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 300]:
        for off in (0, 1, 3, 8):
            for p in (0.0, 0.01, 0.5, 1.0):
                full = rng.random((6, k + off + 5)) < p
                b = full[:, off:off + k]
                assert vfast._count_true(b).tolist() == np.count_nonzero(b, axis=1).tolist()
                sub = b[[4, 0, 4]]
                assert vfast._count_true(sub).tolist() == \
                    np.count_nonzero(sub, axis=1).tolist()
                assert vfast._count_true(full[:, ::2]).tolist() == \
                    np.count_nonzero(full[:, ::2], axis=1).tolist()


def test_a_saturate_flag_on_an_api_without_one_is_ignored_on_both_paths(tmp_path):
    """A dump whose meta gives ``saturate`` to vec_reduce_max (no such argument: the per-case
    path ignores it) verifies as agreed in whole batches too: the batch path passes run_batch
    no saturate for it (run_batch refuses one; the batch path would then hand every case to
    the per-case path, exact but slow, so the test counts the cases decided in batches)."""
    cases = [mk("vec_reduce_max", "float16", False, 128, 1 + k % 3, chip="atlas_training",
                seed=k, sat=bool(k % 2)) for k in range(8)]
    outs = run_cases(cases)
    assert all(o.code is None for o in outs)
    _write(tmp_path / "v2", cases, [o.ub.copy() for o in outs], [None] * 8, stacked=True,
           per_file=8)
    for fast in (True, False):
        before = vfast.STATS["vectorised"]
        rep = verify([tmp_path / "v2"], vectorised=fast, progress=False)
        assert (rep.cases, rep.agreed, rep.exit_code) == (8, 8, 0), fast
        assert vfast.STATS["vectorised"] - before == (8 if fast else 0)
