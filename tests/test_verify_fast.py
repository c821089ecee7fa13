"""The fast parts of verify: the one-piece member reader and the one-pass agreement check
give what numpy's reader and the signature comparison give."""

import numpy as np
import pytest

from ascend_ref.case import Case
from ascend_ref.verify import dumps_from_cases, open_dump, verify, write_dumps
from ascend_ref.verify import format as fmt
from ascend_ref.verify import run as vrun


def _cases(n=12):
    rng = np.random.default_rng(4)
    out = []
    for i in range(n):
        ub = rng.integers(0, 256, 4096 + 32 * i, dtype=np.uint8)
        out.append(Case("whole_reduce_min", "atlas_a2", "float16", "ORDER_VALUE_INDEX",
                        int(rng.integers(0, 129)) if i % 2 else [2**64 - 1, i],
                        {"repeat": 1 + i % 5, "dst_rep_stride": 1, "src_blk_stride": 1,
                         "src_rep_stride": 8},
                        {"src": (256, 640), "dst": (3072 + 32 * (i % 3), 16)}, ub))
    return out


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("regions", [None, "tensors"])
def test_member_reader_equals_numpy(tmp_path, compress, regions):
    cases = _cases()
    p = tmp_path / "d.npz"
    write_dumps(p, cases, [c.ub for c in cases], regions=regions, compress=compress)
    with open_dump(p) as f:
        npz = np.load(p, allow_pickle=False)
        for key in sorted(f.keys):
            got = fmt._read_member(f._npz.zip, key + ".npy", f._raw())
            want = npz[key]
            assert got is not None, key
            assert got.dtype == want.dtype and got.shape == want.shape, key
            np.testing.assert_array_equal(got, want)
            assert got.flags.writeable
            via_zip = fmt._read_member(f._npz.zip, key + ".npy")      # without the mmap
            np.testing.assert_array_equal(via_zip, want)


def test_corrupt_member_reports_numpys_error(tmp_path):
    cases = _cases(2)
    p = tmp_path / "d.npz"
    write_dumps(p, cases, [c.ub for c in cases], compress=False)
    raw = bytearray(p.read_bytes())
    at = raw.find(b"\x93NUMPY", raw.find(b"c1.ub_before"))
    raw[at + 200] ^= 0xFF                            # data byte: the CRC no longer matches
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    with open_dump(bad) as f:
        assert fmt._read_member(f._npz.zip, "c1.ub_before.npy", f._raw()) is None
        with pytest.raises(fmt.DumpError, match="c1.ub_before: unreadable"):
            f._get("c1.ub_before", 1)
        np.testing.assert_array_equal(f._get("c0.ub_before", 0), cases[0].ub)


def test_fast_agreement_gives_the_same_report(tmp_path, monkeypatch):
    cases = _cases(16)
    paths = dumps_from_cases(cases, tmp_path, per_file=5, regions="tensors")
    # a device that differs in one case: a result word and, in another, an undefined byte
    with open_dump(paths[1]) as f:
        ds = [f.case(i) for i in range(f.count)]
    afters = [d.after.copy() for d in ds]
    a, _ = ds[2].case.tensors["dst"]
    afters[2][a] ^= 0x01
    write_dumps(paths[1], [d.case for d in ds], afters, regions="tensors")
    fast = verify(tmp_path, progress=False).to_json()
    monkeypatch.setattr(vrun, "_agrees", lambda d, ref: False)
    slow = verify(tmp_path, progress=False).to_json()
    assert fast == slow
    assert fast["mismatched"] == 1 and fast["agreed"] == 15
