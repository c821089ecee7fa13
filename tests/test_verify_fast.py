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


def _compressible_cases(n=6):
    """Cases whose UBs deflate well (small integers in float16 words) next to noise."""
    rng = np.random.default_rng(7)
    out = []
    for i, c in enumerate(_cases(n)):
        ub = c.ub.copy()
        if i % 2 == 0:
            ub[:] = np.repeat(rng.integers(0, 3, ub.size // 8, dtype=np.uint8), 8)[:ub.size] \
                if ub.size % 8 == 0 else 0
        out.append(Case(c.api, c.chip, c.dtype, c.option, c.mask, c.params, c.tensors, ub))
    return out


@pytest.mark.parametrize("regions", [None, "tensors"])
def test_compressed_members_store_noise_and_deflate_the_rest(tmp_path, codec, regions):
    """compress=True deflates a member only where that saves DEFLATE_GAIN of it; every
    member reads back as numpy reads it, by either codec, as a view or not."""
    import zipfile

    cases = _compressible_cases()
    p = tmp_path / "d.npz"
    write_dumps(p, cases, [c.ub for c in cases], regions=regions, compress=True)
    methods = {i.filename: i.compress_type for i in zipfile.ZipFile(p).infolist()}
    assert zipfile.ZIP_STORED in methods.values() and zipfile.ZIP_DEFLATED in methods.values()
    key = "c1.ub_before.npy" if regions is None else "c1.before.src.npy"
    assert methods[key] == zipfile.ZIP_STORED                      # noise: stored
    assert methods[key.replace("c1", "c0")] == zipfile.ZIP_DEFLATED  # small integers
    assert methods["c0.meta.npy"] == zipfile.ZIP_DEFLATED
    npz = np.load(p, allow_pickle=False)
    with open_dump(p) as f:
        for key in sorted(f.keys):
            want = npz[key]
            for view in (False, True):
                got = fmt._read_member(f._npz.zip, key + ".npy", f._raw(), view=view)
                assert got is not None, key
                assert got.dtype == want.dtype and got.shape == want.shape, key
                np.testing.assert_array_equal(got, want)
                assert got.flags.writeable == (not view), key
    a = verify(p, progress=False)
    q = tmp_path / "plain.npz"
    write_dumps(q, cases, [c.ub for c in cases], regions=regions, compress=False)
    b = verify(q, progress=False)
    import re

    def same(r, path):            # the report without its path and wall-clock seconds
        return re.sub(r" in [0-9.]+ s:", " in - s:", r.format().replace(str(path), "X"))

    assert a.cases == 6 and same(a, p) == same(b, q)


def _data_start(raw: bytearray, info) -> int:
    """Where member ``info``'s stored bytes start in the archive ``raw``."""
    at = info.header_offset
    return at + 30 + int.from_bytes(raw[at + 26:at + 28], "little") + \
        int.from_bytes(raw[at + 28:at + 30], "little")


def _unreadable(tmp_path, raw: bytearray, key: str, case: int):
    """Write ``raw`` as bad.npz: the fast reader refuses member ``key`` and the file
    reports numpy's error for it; returns the open file (for its other members)."""
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    f = open_dump(bad)
    assert fmt._read_member(f._npz.zip, key + ".npy", f._raw()) is None
    with pytest.raises(fmt.DumpError, match=f"{key}: unreadable"):
        f._get(key, case)
    return f


@pytest.mark.parametrize("compress", [True, False])
def test_corrupt_member_by_either_codec(tmp_path, codec, compress):
    """A flipped data byte of a stored or deflated member fails its CRC (or its inflate) in
    the fast reader, and the case reports numpy's error; its neighbours read fine."""
    cases = _compressible_cases(4)
    cases[2] = Case(cases[2].api, cases[2].chip, cases[2].dtype, cases[2].option,
                    cases[2].mask, cases[2].params, cases[2].tensors,
                    np.zeros_like(cases[2].ub))
    p = tmp_path / "d.npz"
    write_dumps(p, cases, [c.ub for c in cases], compress=compress)
    import zipfile

    for victim in ("c1.ub_before", "c2.ub_before"):        # noise (stored), zeros (deflated)
        raw = bytearray(p.read_bytes())
        info = zipfile.ZipFile(p).getinfo(victim + ".npy")
        raw[_data_start(raw, info) + info.compress_size // 2] ^= 0xFF   # past the .npy header
        assert info.compress_size // 2 > 128 or info.compress_type == zipfile.ZIP_DEFLATED
        with _unreadable(tmp_path, raw, victim, int(victim[1])) as f:
            np.testing.assert_array_equal(f._get("c0.ub_before", 0), cases[0].ub)


# ------------------------------------------- CRC-32 on two cores, row comparison ------------

def test_crc_combine_equals_zlib_over_a_seeded_campaign():
    """crc(A + B) from crc(A), crc(B) and len(B) (the two halves of a split CRC), against
    zlib over the whole buffer: empty halves, one byte, lengths around powers of two."""
    import zlib

    from ascend_ref.verify import crc

    rng = np.random.default_rng(61)
    data = rng.integers(0, 256, 1 << 17, dtype=np.uint8).tobytes()
    sizes = [0, 1, 2, 7, 8, 255, 256, 4095, 4096, 65537, 1 << 17]
    for n in sizes + rng.integers(0, 1 << 17, 20).tolist():
        buf = data[:n]
        for cut in {0, n, n // 2, int(rng.integers(0, n + 1))}:
            a, b = buf[:cut], buf[cut:]
            assert crc.combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(buf), \
                (n, cut)
            assert crc.crc32_split(zlib.crc32, memoryview(buf), split_at=cut) == \
                zlib.crc32(buf), (n, cut)


def test_large_member_crc_split_by_either_codec(tmp_path, codec):
    """A member of at least SPLIT_MIN bytes is checked as two halves in parallel: the same
    CRC as zlib's, and a byte flipped in either half still fails it (numpy's error)."""
    import zipfile
    import zlib

    from ascend_ref.verify import crc

    rng = np.random.default_rng(62)
    big = rng.integers(0, 256, crc.SPLIT_MIN + 4099, dtype=np.uint8)
    assert codec.crc32(memoryview(big)) == zlib.crc32(big)
    assert codec.crc32(bytearray(big.tobytes())) == zlib.crc32(big)
    case = Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
                {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"src": (0, 64), "dst": (256, 8)}, big)
    p = tmp_path / "d.npz"
    write_dumps(p, [case], [big], compress=False)
    info = zipfile.ZipFile(p).getinfo("c0.ub_before.npy")
    assert info.file_size >= crc.SPLIT_MIN
    with open_dump(p) as f:
        np.testing.assert_array_equal(fmt._read_member(f._npz.zip, "c0.ub_before.npy",
                                                       f._raw()), big)
    for where in (0.25, 0.75):                       # the first half, the second half
        raw = bytearray(p.read_bytes())
        raw[_data_start(raw, info) + int(info.file_size * where)] ^= 0x01
        _unreadable(tmp_path, raw, "c0.ub_before", 0).close()


@pytest.mark.parametrize("use_memcmp", [True, False])
def test_rows_differ_equals_numpy(monkeypatch, use_memcmp):
    """The raw row comparison of the stacked verifier (memcmp for long rows, numpy for
    short ones, or numpy only) against numpy's byte comparison: rows that differ in their
    first byte, their last, one byte in the middle, or not at all; strided and unaligned
    views; lengths around MEMCMP_MIN and around whole 8-byte words."""
    from ascend_ref.verify import fast

    if not use_memcmp:
        monkeypatch.setattr(fast, "_MEMCMP", [None])
    elif fast._memcmp() is None:
        pytest.skip("no C library memcmp here")
    rng = np.random.default_rng(63)
    for k in (1, 7, 8, 9, 4095, fast.MEMCMP_MIN, fast.MEMCMP_MIN + 3, 9000):
        base = rng.integers(0, 256, (9, k + 40), dtype=np.uint8)
        other = base.copy()
        for r, at in ((1, 0), (3, k - 1), (5, k // 2), (8, k - 1)):
            other[r, 13 + at] ^= 0x80
        for off_a, off_b in ((13, 13), (0, 0)):
            a, b = base[:, off_a:off_a + k], other[:, off_b:off_b + k]
            want = (a != b).any(axis=1)
            np.testing.assert_array_equal(fast._rows_differ(a, b), want, err_msg=str(k))
            np.testing.assert_array_equal(fast._rows_differ(a[::2], b[::2]), want[::2])
        assert fast._rows_differ(base[:, 13:13 + k], other[:, 13:13 + k]).tolist() == \
            [False, True, False, True, False, True, False, False, True]


_FORK_CHILD = """
import os, sys
from ascend_ref.verify import parallel
assert parallel.both(lambda: 1, lambda: 2) == (1, 2)     # the parent's worker thread exists
pid = os.fork()
if pid == 0:                                              # the child: its own worker
    ok = parallel.both(lambda: "a", lambda: "b") == ("a", "b")
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "register_at_fork"), reason="no fork here")
def test_worker_thread_after_fork():
    """A process forked after the worker thread started (a campaign's worker processes)
    gets its own worker: both() there finishes instead of waiting on the parent's thread.
    Run in a fresh interpreter that never starts JAX's threads (forking this one would)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _FORK_CHILD], timeout=120, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
