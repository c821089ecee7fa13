"""Dump verification: round trips, planted mismatches, planted bad files, streaming, CLI.

A "device" is simulated by writing the reference's own results (``dumps_from_cases``); tests
then corrupt bytes or files. Every case uses one 4 KiB UB layout so the JAX kernels compile
once per API/dtype for the whole module.
"""

import json
import os

import numpy as np
import pytest

from ascend_ref.case import Case
from ascend_ref.cli import main as cli_main
from ascend_ref.constraints import Code
from ascend_ref.verify import (DumpError, dumps_from_cases, explain, iter_dump_cases,
                               open_dump, verify, write_dump, write_dumps)
from ascend_ref.batch import run_cases

UB = 4096


def mk(api, dtype, option, mask, repeat, values=None, *, chip="atlas_a2", sat=None, drs=1,
       n=UB, seed=0):
    """A call with src at 0 (2 KiB), dst at 2048, work at 2304 (TIK)."""
    s = np.dtype(dtype).itemsize
    ub = np.zeros(n, np.uint8)
    if values is None:
        values = np.random.default_rng(seed).uniform(-4, 4, 2048 // s)
    v = np.asarray(values, dtype).view(np.uint8)
    ub[:v.size] = v
    if api.startswith("vec_"):
        return Case(api, chip, dtype, option, mask, {"repeat": repeat, "src_rep_stride": 8},
                    {"src": (0, 2048 // s), "dst": (2048, 32 // s),
                     "work_tensor": (2304, 512 // s)}, ub, sat)
    return Case(api, chip, dtype, option, mask,
                {"repeat": repeat, "dst_rep_stride": drs, "src_blk_stride": 1,
                 "src_rep_stride": 8}, {"src": (0, 2048 // s), "dst": (2048, 1024 // s)}, ub, sat)


@pytest.fixture(scope="module")
def base():
    cases = [
        mk("whole_reduce_min", "float16", "ORDER_VALUE_INDEX", 128, 4, seed=1),
        mk("whole_reduce_sum", "float32", None, 64, 4, seed=2),
        mk("reduce_data_block", "float16", "SUM", [2**64 - 1, 2**64 - 1], 4, seed=3),
        mk("whole_reduce_max", "float16", "ORDER_ONLY_VALUE", 100, 3, seed=4),
    ]
    return cases, run_cases(cases)


@pytest.fixture
def good_dir(tmp_path, base):
    cases, outs = base
    dumps_from_cases(cases, tmp_path / "good", outcomes=outs)
    return tmp_path / "good"


def load(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def save(path, arrays):
    np.savez(path, **arrays)


def set_meta(path, **changes):
    a = load(path)
    meta = json.loads(str(a["c0.meta"][()]))
    for k, v in changes.items():
        if v is KeyError:
            meta.pop(k, None)
        else:
            meta[k] = v
    a["c0.meta"] = np.array(json.dumps(meta))
    save(path, a)


# ------------------------------------------------------------------ agreement -------------

def test_roundtrip_agrees(good_dir):
    r = verify(good_dir, progress=False)
    assert r.ok and r.cases == 4 and r.agreed == 4 and r.exit_code == 0
    assert r.files == 4 and not r.bad and not r.groups


def test_regions_layout_and_multi_case_file(tmp_path, base):
    cases, outs = base
    p = tmp_path / "multi.npz"
    write_dumps(p, cases, [o.ub for o in outs], regions="tensors")
    with open_dump(p) as f:
        assert f.count == 4
        d = f.case(2)
    assert d.compared is not None and d.compared.sum() == 2048 + 1024    # src and dst extents
    assert d.case.ub.size == cases[2].ub.size
    r = verify([p], progress=False, batch_size=3)
    assert r.ok and r.cases == 4


def test_streaming_is_lazy_and_batch_size_invariant(tmp_path, base):
    cases, outs = base
    paths = dumps_from_cases(cases * 3, tmp_path / "many", per_file=2, outcomes=outs * 3)
    it = iter_dump_cases([tmp_path / "many"])
    first = next(it)                     # a generator: nothing else read yet
    assert first.index == 0 and first.file == paths[0]
    r1 = verify(tmp_path / "many", progress=False, batch_size=1)
    r2 = verify(tmp_path / "many", progress=False, batch_size=1000)
    assert (r1.cases, r1.agreed, r1.files) == (r2.cases, r2.agreed, r2.files) == (12, 12, 6)


def test_undefined_bytes_are_skipped_and_counted(tmp_path):
    # vec_reduce_add with a work tensor larger than needed: work[R:] is undefined
    c = mk("vec_reduce_add", "float16", None, 128, 2, chip="atlas_training", seed=5)
    (o,) = run_cases([c])
    assert o.undefined.any()
    after = o.ub.copy()
    after[o.undefined] ^= 0x5A                   # the device leaves garbage there
    write_dump(tmp_path / "u.npz", c, ub_after=after)
    r = verify(tmp_path, progress=False)
    assert r.ok and r.undefined_bytes == int(o.undefined.sum()) and r.cases_with_undefined == 1


def test_device_reported_error_agrees(tmp_path):
    c = mk("whole_reduce_sum", "float16", None, 200, 1)        # MASK_RANGE
    write_dump(tmp_path / "e.npz", c, error="MASK_RANGE")
    r = verify(tmp_path, progress=False)
    assert r.ok and r.device_errors == 1
    write_dump(tmp_path / "e.npz", c, error="ALIGN")
    r = verify(tmp_path, progress=False)
    assert not r.ok and list(r.groups) == ["error MASK_RANGE vs ALIGN"]


# ------------------------------------------------------------------ mismatches ------------

def test_mismatches_grouped_with_repro(good_dir, base, capsys):
    cases, outs = base
    files = sorted(os.listdir(good_dir))
    # 1 ulp in the first float sum; an index flip in the min; an extra write past the max's slots
    a = load(good_dir / files[1])
    a["c0.ub_after"][2048] ^= 1
    save(good_dir / files[1], a)
    a = load(good_dir / files[0])
    a["c0.ub_after"][2048 + 2] ^= 1                                # index of repeat 0
    save(good_dir / files[0], a)
    a = load(good_dir / files[3])
    a["c0.ub_after"][3000] = 7
    save(good_dir / files[3], a)
    r = verify(good_dir, progress=False)
    assert not r.ok and r.mismatched == 3 and r.agreed == 1
    assert set(r.groups) == {"1 ulp", "index differs", "extra write"}
    assert r.groups["index differs"].apis == {"whole_reduce_min": 1}
    g = r.groups["1 ulp"]
    assert g.repro == f"ascend-ref verify {good_dir / files[1]} --case 0 --explain"
    text = r.format()
    assert "repro: ascend-ref verify" in text and "RESULT: FAILED" in text
    # the repro command explains the difference
    rc = cli_main(["verify", str(good_dir / files[1]), "--case", "0", "--explain"])
    out = capsys.readouterr().out
    assert rc == 1 and "MISMATCH (1 ulp)" in out and "dst[0]" in out
    assert cli_main(["verify", str(good_dir / files[2]), "--case", "0"]) == 0
    capsys.readouterr()
    # usage errors, one line each (a negative case was a ConstraintError's traceback;
    # --audit beside --case was ignored without a word)
    with pytest.raises(SystemExit) as e:                   # argparse's usage error
        cli_main(["verify", str(good_dir / files[2]), "--case", "-1"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--case: -1 must be at least 0" in err, err
    assert cli_main(["verify", str(good_dir / files[2]), "--case", "0", "--audit"]) == 2
    err = capsys.readouterr().err
    assert "--audit reports on whole files" in err and "Traceback" not in err, err


def test_whole_slot_missing(tmp_path, base):
    cases, outs = base
    c, o = cases[0], outs[0]
    after = o.ub.copy()
    after[2048 + 4:2048 + 8] = c.ub[2048 + 4:2048 + 8]            # repeat 1 not written
    write_dump(tmp_path / "m.npz", c, ub_after=after)
    text, sig = explain(tmp_path / "m.npz", 0)
    assert sig == "whole slot missing" and "slot not written" in text


# ------------------------------------------------------------------ bad input -------------

def _plant(d, base):
    """Every kind of bad file, next to good ones. Returns {file name: expected field}."""
    cases, outs = base
    c, o = cases[1], outs[1]                         # whole_reduce_sum float32

    def good(name):
        write_dump(d / name, c, ub_after=o.ub)
        return d / name

    expect = {}
    p = good("truncated.npz")
    data = p.read_bytes()
    p.write_bytes(data[:len(data) // 2])
    expect["truncated.npz"] = "file"
    (d / "garbage.npz").write_bytes(b"this is not a zip archive at all" * 10)
    expect["garbage.npz"] = "file"
    p = good("crc.npz")
    a = load(p)
    save(p, a)                                                     # uncompressed copy
    raw = bytearray(p.read_bytes())
    k = raw.find(b"c0.ub_after.npy")
    raw[k + 200] ^= 0xFF                                           # corrupt the member's data
    p.write_bytes(bytes(raw))
    expect["crc.npz"] = "c0.ub_after"
    p = good("format.npz")
    a = load(p)
    a["format"] = np.array("something.else")
    save(p, a)
    expect["format.npz"] = "format"
    p = good("version.npz")
    a = load(p)
    a["version"] = np.array(99)
    save(p, a)
    expect["version.npz"] = "version"
    p = good("count.npz")
    a = load(p)
    a["count"] = np.array(3)
    save(p, a)
    expect["count.npz"] = "c1.meta"
    p = good("nometa.npz")
    a = load(p)
    del a["c0.meta"]
    save(p, a)
    expect["nometa.npz"] = "c0.meta"
    p = good("json.npz")
    a = load(p)
    a["c0.meta"] = np.array("{not json")
    save(p, a)
    expect["json.npz"] = "c0.meta"
    good("api.npz")
    set_meta(d / "api.npz", api="whole_reduce_median")
    expect["api.npz"] = "meta.api"
    good("chip.npz")
    set_meta(d / "chip.npz", chip="atlas_z9")
    expect["chip.npz"] = "meta.chip"
    good("dtype.npz")
    set_meta(d / "dtype.npz", dtype="bfloat16")
    expect["dtype.npz"] = "meta.dtype"
    good("param_missing.npz")
    set_meta(d / "param_missing.npz", params={"repeat": 4, "src_rep_stride": 8})
    expect["param_missing.npz"] = "meta.params.dst_rep_stride"
    good("param_unknown.npz")
    set_meta(d / "param_unknown.npz", params={"repeat": 4, "dst_rep_stride": 1,
                                              "src_blk_stride": 1, "src_rep_stride": 8,
                                              "src_stride": 8})
    expect["param_unknown.npz"] = "meta.params.src_stride"
    good("params_list.npz")
    set_meta(d / "params_list.npz", params=[4, 1, 1, 8])
    expect["params_list.npz"] = "meta.params"
    good("tensor_missing.npz")
    set_meta(d / "tensor_missing.npz", tensors={"src": [0, 512]})
    expect["tensor_missing.npz"] = "meta.tensors.dst"
    good("tensor_unknown.npz")
    set_meta(d / "tensor_unknown.npz", tensors={"src": [0, 512], "dst": [2048, 8],
                                                "work_tensor": [4096, 8]})
    expect["tensor_unknown.npz"] = "meta.tensors.work_tensor"
    good("repeat_range.npz")
    set_meta(d / "repeat_range.npz", params={"repeat": 300, "dst_rep_stride": 1,
                                             "src_blk_stride": 1, "src_rep_stride": 8})
    expect["repeat_range.npz"] = "meta.params.repeat"
    good("mask_range.npz")
    set_meta(d / "mask_range.npz", mask=65)
    expect["mask_range.npz"] = "meta.mask"
    good("align.npz")
    set_meta(d / "align.npz", tensors={"src": [0, 512], "dst": [2050, 8]})
    expect["align.npz"] = "meta.tensors.dst"
    good("option.npz")
    set_meta(d / "option.npz", option="SUM")
    expect["option.npz"] = "meta.option"
    p = good("size.npz")
    a = load(p)
    a["c0.ub_after"] = a["c0.ub_after"][:100]
    save(p, a)
    expect["size.npz"] = "c0.ub_after"
    p = good("dtype_arr.npz")
    a = load(p)
    a["c0.ub_before"] = a["c0.ub_before"].view(np.uint16)
    save(p, a)
    expect["dtype_arr.npz"] = "c0.ub_before"
    p = good("toobig.npz")
    a = load(p)
    a["c0.ub_before"] = np.zeros(300000, np.uint8)
    a["c0.ub_after"] = np.zeros(300000, np.uint8)
    save(p, a)
    expect["toobig.npz"] = "c0.ub_before"
    write_dump(d / "regions.npz", c, ub_after=o.ub, regions={"src": (0, 2048),
                                                             "dst": (2048, 16)})
    expect["regions.npz"] = "meta.regions"                       # dst extent not covered
    return expect


def test_every_bad_file_reported_good_ones_verified(tmp_path, base, good_dir):
    bad = tmp_path / "good" / "bad"
    bad.mkdir()
    expect = _plant(bad, base)
    r = verify(tmp_path / "good", progress=False)
    got = {}
    for e in r.bad:
        got.setdefault(os.path.basename(e.file), e.field)
    assert got == expect
    for e in r.bad:
        assert e.reason and e.file in str(e)
    assert sorted(e.field for e in r.bad if e.file.endswith("count.npz")) == ["c1.meta", "c2.meta"]
    assert r.cases == 5 and r.agreed == 5 and r.bad_files == len(expect)   # count.npz case 0 is fine
    assert not r.ok and r.exit_code == 1


def test_dump_error_messages_name_file_and_field(tmp_path, base):
    cases, outs = base
    p = tmp_path / "x.npz"
    write_dump(p, cases[1], ub_after=outs[1].ub)
    set_meta(p, params={"repeat": 300, "dst_rep_stride": 1, "src_blk_stride": 1,
                        "src_rep_stride": 8})
    r = verify(p, progress=False)
    (e,) = r.bad
    assert str(e).startswith(f"{p}: case 0: meta.params.repeat:") and "300" in str(e)
    set_meta(p, params={"repeat": 4, "src_rep_stride": 8})
    (e,) = verify(p, progress=False).bad
    assert str(e).startswith(f"{p}: case 0: meta.params.dst_rep_stride: missing (whole_reduce")
    assert "'src_blk_stride'" in str(e)
    set_meta(p, params={"repeat": 4, "dst_rep_stride": 1, "src_blk_stride": 1,
                        "src_rep_stride": 8},
             tensors={"src": [0, 512], "dst": [2048, 8], "tmp": [4096, 8]})
    (e,) = verify(p, progress=False).bad
    assert str(e).startswith(f"{p}: case 0: meta.tensors.tmp: unknown tensor for whole_reduce")
    assert "expected ['dst', 'src']" in str(e)
    with pytest.raises(DumpError, match="meta.api"):
        set_meta(p, api="nope")
        with open_dump(p) as f:
            f.case(0)


def test_cli_exit_codes_and_json(tmp_path, good_dir, base, capsys):
    assert cli_main(["verify", str(good_dir), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "RESULT: OK" in out
    expect = _plant(good_dir, base)
    j = tmp_path / "r.json"
    assert cli_main(["verify", str(good_dir), "--no-progress", "--json", str(j)]) == 1
    rep = json.loads(j.read_text())
    # one entry a planted file, two for count.npz (cases 1 and 2: see the test above)
    assert rep["ok"] is False and rep["agreed"] == 5 and len(rep["bad"]) == len(expect) + 1
    assert {os.path.basename(b["file"]) for b in rep["bad"]} == set(expect)
    assert cli_main(["verify", str(tmp_path / "missing.npz"), "--no-progress"]) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli_main(["verify", str(empty), "--no-progress"]) == 1


def device_afters(outs, rng):
    """What a device might leave after each call: random bytes where the reference says
    undefined and, in about half of the calls, one flipped bit in a defined written byte
    (None where the call was rejected). Returns ``(afters, number of flipped calls)``."""
    afters, flipped = [], 0
    for o in outs:
        if o.code is not None:
            afters.append(None)
            continue
        a = o.ub.copy()
        a[o.undefined] = rng.integers(0, 256, int(o.undefined.sum()), dtype=np.uint8)
        defined = np.flatnonzero(o.written & ~o.undefined)
        if defined.size and rng.random() < 0.5:
            a[rng.choice(defined)] ^= 1 << int(rng.integers(0, 8))
            flipped += 1
        afters.append(a)
    return afters, flipped


@pytest.mark.slow
def test_fuzzed_dumps_every_defined_corruption_detected(tmp_path):
    """Random calls on every product (some invalid, recorded as device errors): flipping one
    defined byte is always a mismatch; scribbling on undefined bytes never is."""
    from ascend_ref.fuzz.generate import RngDraw, draw_case

    cases = [draw_case(RngDraw(77, i), invalid_rate=0.15, max_ub=1 << 14, tik_max_repeat=64)
             for i in range(48)]
    outs = run_cases(cases)
    afters, expect_bad = device_afters(outs, np.random.default_rng(0))
    for k in range(0, len(cases), 6):
        write_dumps(tmp_path / f"f{k:03d}.npz", cases[k:k + 6], afters[k:k + 6],
                    errors=[o.code for o in outs[k:k + 6]])
    r = verify(tmp_path, progress=False, audit=True, batch_size=16)
    assert not r.bad and r.cases == len(cases)
    assert r.mismatched == expect_bad > 0
    assert r.device_errors == sum(o.code is not None for o in outs)
    assert "assumption audit" in r.format()


@pytest.mark.parametrize("region", [(4000, 200), (-8, 16), (0, -1)])
def test_region_outside_the_ub_is_refused_when_writing(tmp_path, region):
    """The version-1 writer refuses a region that leaves the UB (as the stacked writer does)
    instead of storing a shortened slice the reader then rejects."""
    c = mk("whole_reduce_sum", "float32", None, 64, 1, n=4096)
    with pytest.raises(ValueError, match="outside its 4096-byte UB"):
        write_dump(tmp_path / "x.npz", c, ub_after=c.ub, regions={"dst": region})
    assert not (tmp_path / "x.npz").exists()


@pytest.mark.parametrize("stacked", [False, True])
def test_writer_arguments_are_checked_before_anything_is_written(tmp_path, base, stacked):
    """An error that is no Code ("NOPE" was written into the meta as it was), regions that
    are neither None, "tensors" nor {name: (addr, nbytes)} (an AttributeError / a ValueError
    from dict()), dumps_from_cases' per_file below 1 (0: a ValueError from range(); -1: no
    file and no error) or a short outcomes list (an AttributeError): each a ValueError
    saying what it takes, and nothing written."""
    cases, outs = base
    c = cases[0]
    bad = [dict(errors=["NOPE"]), dict(errors=[True]), dict(errors=[9999]),
           dict(regions="nope"), dict(regions=[("dst", 2048, 64)]), dict(regions={}),
           dict(regions={"dst": (2048.0, 64)})]
    for kw in bad:
        with pytest.raises(ValueError, match=next(iter(kw))):
            write_dumps(tmp_path / "x.npz", [c], [c.ub], stacked=stacked, **kw)
        assert not (tmp_path / "x.npz").exists()
    for err in (Code.MASK_RANGE, "MASK_RANGE", int(Code.MASK_RANGE), np.int32(7)):
        write_dumps(tmp_path / "e.npz", [c], [None], errors=[err], stacked=stacked)
        (got,) = list(iter_dump_cases([tmp_path / "e.npz"]))
        assert got.error == Code.MASK_RANGE, err
    for per_file in (0, -1, 1.5):
        with pytest.raises(ValueError, match="per_file"):
            dumps_from_cases(cases, tmp_path / "d", per_file=per_file, outcomes=outs,
                             stacked=stacked)
    with pytest.raises(ValueError, match="outcomes"):
        dumps_from_cases(cases, tmp_path / "d", outcomes=outs[:-1], stacked=stacked)
    assert not (tmp_path / "d").exists()
    # out_dir None was a TypeError from os.makedirs; a prefix holding a folder wrote outside
    # out_dir ("../x": next to it)
    for kw in (dict(out_dir=None), dict(out_dir=""), dict(prefix="../x"), dict(prefix=""),
               dict(prefix=3)):
        with pytest.raises(ValueError, match=next(iter(kw))):
            dumps_from_cases(cases, **{"out_dir": tmp_path / "d", **kw}, outcomes=outs,
                             stacked=stacked)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.npz"]
    for bad_cases in (None, [None], [c, "x"]):          # an AttributeError / a TypeError
        with pytest.raises(ValueError, match="cases"):
            write_dumps(tmp_path / "x.npz", bad_cases, None, stacked=stacked)
        with pytest.raises(ValueError, match="cases"):
            dumps_from_cases(bad_cases, tmp_path / "d", stacked=stacked)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.npz"]
