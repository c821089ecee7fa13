"""Many archive members read at once (verify.members) give what the one-by-one reader gives.

The archive is written member by member with ``zipfile`` so that each member's compression is
chosen here, then damaged in place: a bad CRC, a bad local header, a deflate stream cut
short, a header of another ``.npy`` version, an object dtype. For every member,
``read_members`` must give exactly ``DumpFile._get(key, view=True)`` (dtype, shape, bytes,
read-only) or None -- and None exactly for the members planted as unusual, so a reader that
gave up on everything would fail. The expectations come from the one-by-one reader and from
the planted list, never typed in.
"""

import io
import zipfile

import numpy as np
import pytest

from ascend_ref.verify import members
from ascend_ref.verify.fast import _row_blocks, _rows_differ, _rows_differ_at
from ascend_ref.verify.format import DumpError, open_dump


def _npy(a, version=(1, 0)):
    b = io.BytesIO()
    np.lib.format.write_array(b, a, version=version, allow_pickle=True)
    return b.getvalue()


def _archive(path, seed):
    """The names of the members planted as unusual (several members are also written with
    the same bytes: the shared ``meta``, the two zero ``before.dst``)."""
    rng = np.random.default_rng(seed)
    items = []                                      # (name, npy bytes, deflate?)

    def add(name, a, deflate=None, version=(1, 0)):
        items.append((name, _npy(a, version),
                      bool(rng.integers(0, 2)) if deflate is None else deflate))

    add("format", np.array("ascend_ref.dump"))
    add("version", np.array(1))
    n = 40
    add("count", np.array(n))
    shared_meta = np.frombuffer(b'{"api": "whole_reduce_sum"}', np.uint8)
    for i in range(n):
        add(f"c{i}.meta", shared_meta if i % 3 else np.array(f'{{"k": {i}}}'),
            deflate=i % 2 == 0)
        size = int(rng.choice([0, 1, 9, 64, 700, 3000, 5000, 70000]))
        add(f"c{i}.before.src", rng.integers(0, 256, size, dtype=np.uint8))
        kind = i % 8
        if kind == 0:
            add(f"c{i}.after.src", rng.standard_normal((3, 5)).astype(">f4"))
        elif kind == 1:
            add(f"c{i}.after.src", np.asfortranarray(rng.integers(0, 9, (4, 6), np.int16)))
        elif kind == 2:
            add(f"c{i}.after.src", np.zeros((0, 3), np.float16))
        elif kind == 3:
            add(f"c{i}.after.src", np.zeros(300, np.uint8))          # repeats, deflates well
        else:
            add(f"c{i}.after.src", rng.integers(0, 256, 2 * size + 1, dtype=np.uint8))
    add("c5.before.dst", np.arange(10, dtype=np.uint8), version=(2, 0))
    add("c6.before.dst", np.array([{"a": 1}], dtype=object))
    add("c7.before.dst", np.zeros(300, np.uint8), deflate=False)     # stored repeat of ...
    add("c8.before.dst", np.zeros(300, np.uint8), deflate=False)     # ... the same bytes
    with zipfile.ZipFile(path, "w") as z:
        for name, data, deflate in items:
            z.writestr(zipfile.ZipInfo(name + ".npy", (1980, 1, 1, 0, 0, 0)), data,
                       compress_type=zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = {i.filename[:-4]: i for i in z.infolist()}

    def data_at(name):
        i = info[name]
        return i.header_offset + 30 + len(i.filename) + len(i.extra)

    bad = {"c5.before.dst", "c6.before.dst"}
    # a stored member's byte flipped: its CRC no longer matches (and its twin stays good)
    raw[data_at("c8.before.dst") + 200] ^= 0x40
    bad.add("c8.before.dst")
    # a local header's signature broken
    raw[info["c9.before.src"].header_offset + 1] ^= 0xFF
    bad.add("c9.before.src")
    # a deflated member whose stream is cut short: its bytes overwritten with an empty
    # stored block and garbage (the CRC and sizes left as they were)
    for name in ("c10.before.src", "c11.before.src"):
        i = info[name]
        if i.compress_type == zipfile.ZIP_DEFLATED and i.compress_size > 8:
            raw[data_at(name):data_at(name) + 5] = b"\x01\x00\x00\xff\xff"
            bad.add(name)
    path.write_bytes(bytes(raw))
    return bad


def _same(got, want):
    return (got.dtype == want.dtype and got.shape == want.shape and
            got.tobytes() == want.tobytes() and not got.flags.writeable)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_read_members_equals_one_by_one(tmp_path, codec, seed, monkeypatch):
    p = tmp_path / "a.npz"
    bad = _archive(p, seed)
    # small limits too, so the shared-bytes path and the split CRC run on these sizes
    for small, split in ((members.SMALL, members.SPLIT_MIN), (4096, 6000)):
        monkeypatch.setattr(members, "SMALL", small)
        monkeypatch.setattr(members, "SPLIT_MIN", split)
        with open_dump(p) as f:
            keys = sorted(f.keys) + ["c3.nothing", "c99.meta"]
            at = np.full(len(keys), -1, np.int64)
            got = members.read_members(f, keys, at)
            raw = np.frombuffer(f._raw(), np.uint8)
            none = set()
            for k, g, a in zip(keys, got, at.tolist()):
                if g is None:
                    none.add(k)
                    continue
                assert _same(g, f._get(k, view=True)), k
                if a >= 0:                          # a view of the archive's bytes, there
                    assert raw[a:a + g.nbytes].tobytes() == g.tobytes(order="A")
                    assert f._zdir[k + ".npy"].compress_type == zipfile.ZIP_STORED, k
            # and the deflated members too long to inflate here (the one-by-one reader's)
            long = {k for k in keys if k + ".npy" in f._zdir and
                    f._zdir[k + ".npy"].compress_type == zipfile.ZIP_DEFLATED and
                    f._zdir[k + ".npy"].file_size > members.INFLATE_MAX}
            assert long or seed != 0                  # the draws have some
            assert none == bad | long | {"c3.nothing", "c99.meta"}
            assert (at >= 0).sum() > len(keys) // 4          # most stored members are views
            for k in bad - {"c5.before.dst"}:                 # numpy reads version 2.0 itself
                with pytest.raises(DumpError, match="unreadable"):
                    f._get(k)


def test_read_members_without_the_mapped_directory(tmp_path):
    """A file whose directory zipfile reads (a comment after the archive) or a version-2 file:
    nothing is read here, the one-by-one reader reads it all."""
    p = tmp_path / "a.npz"
    _archive(p, 3)
    with zipfile.ZipFile(p, "a") as z:
        z.comment = b"simulator run 7"
    with open_dump(p) as f:
        assert f._zdir is None
        assert members.read_members(f, ["c0.meta", "c1.before.src"]) == [None, None]


def test_row_blocks_are_the_rows():
    rng = np.random.default_rng(7)
    flat = rng.integers(0, 256, 5000, dtype=np.uint8)
    layouts = [np.arange(0, 4000, 100), np.array([7]), np.array([5, 5, 5, 9]),
               np.cumsum([0, 40, 40, 40, 55, 55, 55, 55, 41, 41, 41, 60]),
               np.array([100, 300, 200]), rng.integers(0, 4000, 64)]
    for at in layouts:
        for k in (0, 1, 33):
            blocks = _row_blocks(flat, at, k)
            if blocks is None:                        # many runs, or a step back: row by row
                steps = np.diff(at)
                assert (steps < 0).any() or (steps[1:] != steps[:-1]).sum() > 4, at
                continue
            rows = np.concatenate([b[2] for b in blocks])
            assert blocks[0][0] == 0 and blocks[-1][1] == at.size and all(
                a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
            want = np.stack([flat[a:a + k] for a in at]) if k else np.zeros((at.size, 0))
            assert rows.shape == want.shape and (rows == want).all(), (at, k)
    assert _row_blocks(flat, np.array([4999]), 2) is None            # past the end
    assert len(_row_blocks(flat, np.arange(0, 4000, 100), 10)) == 1   # a stacked column


@pytest.mark.parametrize("k", [5, 16, 20000])
def test_rows_differ_at_equals_numpy(k, monkeypatch):
    rng = np.random.default_rng(k)
    m = 9
    flat = rng.integers(0, 256, m * (k + 50) + 100, dtype=np.uint8)
    at = np.sort(rng.choice(flat.size - k, m, replace=False))
    rows = np.stack([flat[a:a + k] for a in at])
    b = rows.copy()
    b[2, k - 1] ^= 1
    b[5, 0] ^= 0x80
    want = (rows != b).any(axis=1)
    assert want.sum() == 2
    assert _rows_differ_at(flat, at, b).tolist() == want.tolist()
    assert _rows_differ(rows, b).tolist() == want.tolist()
    monkeypatch.setattr("ascend_ref.verify.fast.SPLIT_MIN", 1)       # the two-core split
    assert _rows_differ_at(flat, at, b).tolist() == want.tolist()


@pytest.mark.parametrize("pieces", ["default", "small"])
def test_uniform_stored_file_reads_rows_in_runs(tmp_path, monkeypatch, pieces):
    """A file of like cases, every member stored: the region rows lie at a constant distance
    but for the longer names from c10 on, so the windows are filled and the device's bytes
    compared a run of rows at a time, in place. The report is the per-case path's, with the
    mismatches planted in some cases found there (counted, not typed in); also when the
    members are read 7 cases at a time and the groups cut every ~5000 region bytes."""
    from ascend_ref.batch import run_cases
    from ascend_ref.case import Case
    from ascend_ref.verify import fast, regions, verify, write_dumps

    rng = np.random.default_rng(11)
    cases, afters = [], []
    for i in range(40):
        ub = np.zeros(4096, np.uint8)
        ub[:2048] = rng.standard_normal(1024).astype(np.float16).view(np.uint8)
        cases.append(Case("whole_reduce_min", "atlas_a2", "float16", "ORDER_VALUE_INDEX", 128,
                          {"repeat": 4, "dst_rep_stride": 1, "src_blk_stride": 1,
                           "src_rep_stride": 8}, {"src": (0, 1024), "dst": (2048, 16)}, ub))
    for i, o in enumerate(run_cases(cases)):
        a = o.ub.copy()
        if i % 7 == 3:
            a[2048 + i % 16] ^= 0x10                     # a dst byte
        if i % 11 == 5:
            a[i * 9] ^= 0x01                             # a src byte: an extra write
        afters.append(a)
    p = tmp_path / "u.npz"
    write_dumps(p, cases, afters, regions="tensors", compress=False)
    runs = []
    real = fast._row_blocks

    def spy(flat, at, k):
        got = real(flat, at, k)
        runs.append(None if got is None else len(got))
        return got

    monkeypatch.setattr(fast, "_row_blocks", spy)
    monkeypatch.setattr(regions, "MIN_CASES", 1)
    if pieces == "small":
        monkeypatch.setattr(regions, "BLOCK", 7)
        monkeypatch.setattr(regions, "CHUNK_BYTES", 5000)
    fast.STATS.clear()
    got = verify(p, progress=False)
    assert fast.STATS["vectorised"] == 40 - got.mismatched and runs
    assert (max(runs) > 1) == (pieces == "default")     # small pieces: a run a group
    want = verify(p, progress=False, vectorised=False)
    assert got.to_json() == want.to_json()
    assert got.mismatched == len({i for i in range(40) if i % 7 == 3 or i % 11 == 5}) > 0


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("pieces", ["default", "small"])
def test_damaged_cases_inside_a_run_of_like_cases(tmp_path, monkeypatch, compress, pieces):
    """Cases that share one meta are stacked a run at a time; a case in the middle of such a
    run whose member fails its CRC, whose region is another dtype, or that recorded only
    some regions after the call goes to the per-case path, and its neighbours stay
    stacked. The report is the per-case path's; the stacked count is the cases left
    undamaged (a planted mismatch is found and handed back too)."""
    import zipfile

    from ascend_ref.batch import run_cases
    from ascend_ref.case import Case
    from ascend_ref.verify import fast, regions, verify, write_dumps

    rng = np.random.default_rng(12)
    cases = []
    for i in range(40):
        ub = np.zeros(4096, np.uint8)
        ub[:2048] = rng.standard_normal(1024).astype(np.float16).view(np.uint8)
        cases.append(Case("whole_reduce_sum", "atlas_a2", "float16", None, 128,
                          {"repeat": 4, "dst_rep_stride": 1, "src_blk_stride": 1,
                           "src_rep_stride": 8}, {"src": (0, 1024), "dst": (2048, 16)}, ub))
    afters = [o.ub.copy() for o in run_cases(cases)]
    afters[30][2048] ^= 0x04                                   # a mismatch
    p = tmp_path / "w.npz"
    write_dumps(p, cases, afters, regions="tensors", compress=compress)
    with np.load(p) as z:
        members = dict(z)
    members["c17.after.dst"] = members["c17.after.dst"].view(np.int16)   # another dtype
    del members["c23.after.src"]                                         # one region only
    q = tmp_path / "d.npz"
    (np.savez_compressed if compress else np.savez)(q, **members)
    raw = bytearray(q.read_bytes())
    info = zipfile.ZipFile(q).getinfo("c9.before.src.npy")
    h = info.header_offset
    start = h + 30 + int.from_bytes(raw[h + 26:h + 28], "little") + \
        int.from_bytes(raw[h + 28:h + 30], "little")
    raw[start + info.compress_size // 2] ^= 0x20                         # its CRC fails
    q.write_bytes(bytes(raw))
    monkeypatch.setattr(regions, "MIN_CASES", 1)
    if pieces == "small":
        monkeypatch.setattr(regions, "BLOCK", 7)
        monkeypatch.setattr(regions, "CHUNK_BYTES", 5000)
    in_runs = []
    add_run = regions._Rows.add_run

    def spy(self, cases, *args):
        in_runs.extend(cases)
        return add_run(self, cases, *args)

    monkeypatch.setattr(regions._Rows, "add_run", spy)
    fast.STATS.clear()
    got = verify(q, progress=False)
    want = verify(q, progress=False, vectorised=False)
    assert got.to_json() == want.to_json()
    assert fast.STATS["vectorised"] == 40 - len({9, 17, 23, 30})
    # most cases went in runs, the damaged ones never
    assert len(in_runs) >= 20 and not {9, 17, 23} & set(in_runs)
    assert not got.ok and got.mismatched >= 1


@pytest.mark.parametrize("names, columns", [
    ([f"c{i}.before.src.npy" for i in range(60)], True),
    (["c0.meta.npy", "aPK\x01\x02b.npy", "c1.meta.npy"], False),   # a signature in a name
    (["c0.meta.npy", "é/ü.npy", "c1.x"], True),                     # utf-8 names
    (["same.npy", "other.npy", "same.npy"], True),                  # a name twice: the last
    (["c12.meta.npy", "c3", "c.npy", "c4x.npy", "c007.npy", "c5.npy.npy", "count.npy",
      "x/c99.npy"], True),                                          # case heads, or not
    (["c1.npy", "c" + "9" * 25 + ".npy"], True),                    # a number too long
    (["c1.npy", "new\nline.npy", "c2"], True),                      # a newline in a name
    (["c1.npy", "c\u00b2.meta.npy", "c3.npy"], True),                # a superscript digit
])
def test_directory_columns_equal_zipfile(tmp_path, names, columns):
    """The archive directory read as columns is zipfile's, entry for entry; where the
    columns cannot be trusted (a signature inside a name) the walk reads it, the same.
    The member names without ``.npy`` and the largest case head ``c<N>`` it gives beside
    them (where it gives them) are those of the names one by one."""
    import struct
    import warnings

    from ascend_ref.verify import format as fmt

    p = tmp_path / "d.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # zipfile: "Duplicate name"
        with zipfile.ZipFile(p, "w") as z:
            for k, name in enumerate(names):
                z.writestr(name, bytes(range(k % 7 * 40)),
                           compress_type=zipfile.ZIP_DEFLATED if k % 2 else zipfile.ZIP_STORED)
    raw = p.read_bytes()
    with zipfile.ZipFile(p) as z:
        want = {i.filename: (i.header_offset, i.compress_type, i.flag_bits, i.compress_size,
                             i.file_size, i.CRC) for i in z.infolist()}
    got = fmt._zip_directory(raw)
    assert got is not None and {k: tuple(v) for k, v in got.items()} == want
    assert [got.get(k) for k in want] == [fmt._Entry(*v) for v in want.values()]
    assert got.rows(list(want) + ["absent"]).tolist()[-1] == -1
    keys = {k[:-4] if k.endswith(".npy") else k for k in want}
    assert got.member_keys is None or got.member_keys == keys
    numbers = [int(h[1:]) for h in (k.partition(".")[0] for k in keys)
               if h[:1] == "c" and h[1:].isascii() and h[1:].isdecimal()]
    top = max(numbers, default=-1)
    assert got.top_case is None or got.top_case == top
    # where the names are plain ASCII without a newline and no number is too long, both
    assert (got.top_case is not None and got.member_keys is not None) == (
        columns and all(n.isascii() and "\n" not in n for n in names) and top < 10**18)
    _, _, _, _, total, size_cd, off_cd, _ = struct.unpack_from("<IHHHHIIH", raw, len(raw) - 22)
    assert (fmt._directory_columns(raw, off_cd, size_cd, total) is not None) == columns
    if columns and len(names) > 10:     # a name length one too long: neither reads it
        bad = bytearray(raw)
        at = off_cd + 5 * (46 + len(names[0]))
        assert bad[at:at + 4] == b"PK\x01\x02"
        bad[at + 28] += 1
        assert fmt._directory_columns(bytes(bad), off_cd, size_cd, total) is None
        assert fmt._zip_directory(bytes(bad)) is None


@pytest.mark.parametrize("extra, stray", [
    ([], []),
    (["c4.meta"], []),
    (["c5.meta", "c12.x", "c05.y"], ["c05", "c12", "c5"]),
    (["c\u00b2.meta", "c\u0663.meta"], []),           # superscript 2: no number; Arabic 3 < 5
    (["c\u0667.meta"], ["c\u0667"]),                  # Arabic 7 >= 5
    (["c" + "9" * 25 + ".meta"], ["c" + "9" * 25]),
])
def test_members_of_cases_past_the_count_are_reported(tmp_path, extra, stray):
    """A version-1 file whose members name a case at or past its ``count`` is reported
    (the heads sorted as text, at most five), whichever way its directory was read; a head
    that is not a decimal number is not a case."""
    p = tmp_path / "s.npz"
    np.savez(p, format="ascend_ref.dump", version=1, count=5,
             **{"c0.meta": np.zeros(1, np.uint8)}, **{k: np.zeros(1, np.uint8) for k in extra})
    if stray:
        with pytest.raises(DumpError, match="count") as e:
            open_dump(p)
        assert str(e.value).endswith("5, but the archive also holds " + ", ".join(stray))
    else:
        open_dump(p).close()
