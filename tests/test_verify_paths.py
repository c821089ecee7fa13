"""verify never passes silently: links followed (loops guarded), every unreadable path is bad
input, FIFOs are not opened, ``*.NPZ`` is a dump, ``--batch`` is validated (issue 13 V1/V2)."""

import os
import threading

import numpy as np
import pytest

from ascend_ref.case import Case
from ascend_ref.cli import main as cli_main
from ascend_ref.verify import dumps_from_cases, iter_paths, verify
from ascend_ref.verify.format import DumpError


def _case(seed: int) -> Case:
    ub = np.zeros(1024, np.uint8)
    ub[:256] = np.random.default_rng(seed).uniform(-4, 4, 64).astype(np.float32).view(np.uint8)
    return Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
                {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"src": (0, 64), "dst": (512, 8)}, ub)


@pytest.fixture
def dumps(tmp_path):
    """good/dump_000000.npz (agrees) and bad/dump_000000.npz (one result bit flipped)."""
    good = dumps_from_cases([_case(1)], tmp_path / "good")
    bad = dumps_from_cases([_case(2)], tmp_path / "bad")
    with np.load(bad[0]) as z:
        a = {k: z[k] for k in z.files}
    a["c0.ub_after"] = a["c0.ub_after"].copy()
    a["c0.ub_after"][512] ^= 1
    np.savez(bad[0], **a)
    return tmp_path, good[0], bad[0]


def _run(*paths):
    return verify([str(p) for p in paths], progress=False)


def test_symlinked_directory_is_followed(dumps):
    tmp, good, bad = dumps
    top = tmp / "top"
    top.mkdir()
    os.symlink(good, top / "good.npz")
    os.symlink(tmp / "bad", top / "run7")            # a directory reached through a link
    r = _run(top)
    assert r.cases == 2 and r.mismatched == 1 and not r.ok


def test_directory_loop_is_reported_and_fails(dumps):
    tmp, good, bad = dumps
    top = tmp / "top"
    (top / "sub").mkdir(parents=True)
    os.symlink(good, top / "sub" / "a.npz")
    os.symlink(top, top / "sub" / "up")              # leads back to an ancestor
    r = _run(top)
    assert r.cases == 1 and r.agreed == 1             # the dump is verified once
    assert [e.field for e in r.bad] == ["directory"] and "loop" in r.bad[0].reason
    assert r.bad[0].file.endswith("up") and not r.ok and r.exit_code == 1


def test_same_directory_through_two_links_is_walked_once(dumps):
    tmp, good, bad = dumps
    top = tmp / "top"
    top.mkdir()
    os.symlink(tmp / "good", top / "l1")
    os.symlink(tmp / "good", top / "l2")
    r = _run(top)
    assert r.cases == 1 and r.ok


def test_symlink_loop_and_broken_link_named_npz(dumps):
    tmp, good, bad = dumps
    top = tmp / "top"
    top.mkdir()
    os.symlink(top / "self.npz", top / "self.npz")    # resolves to itself
    os.symlink(tmp / "nothing", top / "gone.npz")
    r = _run(top)
    reasons = sorted(e.reason for e in r.bad)
    assert len(reasons) == 2 and not r.ok
    assert "broken symbolic link" in reasons[0] and "symbolic link loop" in reasons[1]
    # named directly too
    r = _run(top / "self.npz")
    assert "symbolic link loop" in r.bad[0].reason


def test_unlistable_directory_fails_the_run(dumps, monkeypatch):
    tmp, good, bad = dumps
    top = tmp / "top"
    (top / "locked").mkdir(parents=True)
    os.symlink(bad, top / "locked" / "x.npz")
    os.symlink(good, top / "ok.npz")
    real = os.scandir
    locked = str(top / "locked")

    def scandir(p="."):
        if os.fspath(p) == locked:                    # root can read anything: simulate
            raise PermissionError(13, "Permission denied", locked)
        return real(p)

    monkeypatch.setattr(os, "scandir", scandir)
    r = _run(top)
    assert r.agreed == 1 and not r.ok
    assert r.bad[0].file == locked and "Permission denied" in r.bad[0].reason


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads mode-000 directories")
def test_mode_000_directory_fails_the_run(dumps):
    tmp, good, bad = dumps
    top = tmp / "top"
    (top / "locked").mkdir(parents=True)
    os.symlink(good, top / "ok.npz")
    os.chmod(top / "locked", 0)
    try:
        r = _run(top)
    finally:
        os.chmod(top / "locked", 0o755)
    assert r.agreed == 1 and not r.ok and r.bad[0].field == "directory"


def test_fifo_named_npz_is_reported_not_opened(dumps):
    tmp, good, bad = dumps
    top = tmp / "top"
    top.mkdir()
    os.symlink(good, top / "ok.npz")
    fifo = top / "pipe.npz"
    os.mkfifo(fifo)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", _run(top)), daemon=True)
    t.start()
    t.join(120)
    if t.is_alive():                                   # unblock the reader, then fail
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(30)
        pytest.fail("verify blocked on a FIFO")
    r = box["r"]
    assert r.agreed == 1 and not r.ok
    assert r.bad[0].file == str(fifo) and "FIFO" in r.bad[0].reason


def test_upper_case_extension_is_a_dump(dumps):
    tmp, good, bad = dumps
    top = tmp / "top"
    top.mkdir()
    os.symlink(bad, top / "RUN.NPZ")
    r = _run(top)
    assert r.cases == 1 and r.mismatched == 1 and not r.ok


def test_iter_paths_yields_errors_in_order(dumps):
    tmp, good, bad = dumps
    items = list(iter_paths([tmp]))
    assert [os.path.basename(p) for p in items] == ["dump_000000.npz"] * 2
    assert all(isinstance(p, str) for p in items)
    os.symlink(tmp / "missing", tmp / "good" / "z.npz")
    items = list(iter_paths([tmp]))
    assert isinstance(items[-1], DumpError) and items[-1].file.endswith("z.npz")


def test_paths_as_bytes_or_one_path(dumps):
    """bytes name a file or directory as the file system does; one path needs no list."""
    tmp, good, bad = dumps
    want = list(iter_paths([str(tmp)]))
    assert list(iter_paths(str(tmp))) == want
    assert list(iter_paths([os.fsencode(tmp)])) == want          # was a TypeError
    assert list(iter_paths(os.fsencode(tmp))) == want
    r = verify(os.fsencode(tmp / "good"), progress=False)
    assert r.ok and r.cases == 1


@pytest.mark.parametrize("paths", [None, 42, [None], [3], [str, "x"], [bytearray(b"x")]])
def test_paths_that_are_no_paths_are_a_clear_error(paths):
    """Not a path nor an iterable of them: a ValueError naming the value (was a TypeError
    from iterating it or from os.fspath)."""
    with pytest.raises(ValueError, match="paths.*(not a path|expected a dump file)"):
        verify(paths, progress=False)
    with pytest.raises(ValueError, match="paths"):
        list(iter_paths(paths))


@pytest.mark.parametrize("value", ["0", "-5", "x"])
def test_cli_batch_must_be_positive(dumps, value, capsys):
    tmp, good, bad = dumps
    with pytest.raises(SystemExit) as e:
        cli_main(["verify", str(good), "--no-progress", "--batch", value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--batch" in err and "Traceback" not in err


@pytest.mark.parametrize("kw", [dict(max_examples=-1), dict(max_examples="x"),
                                dict(max_examples=True), dict(on_case=3)])
def test_python_arguments_are_checked_first(dumps, kw):
    """max_examples "x" was taken (an error only once a mismatch needed examples), on_case=3
    a TypeError at the first case."""
    tmp, good, bad = dumps
    with pytest.raises(ValueError, match=next(iter(kw))):
        verify([good], progress=False, **kw)


def test_open_dump_takes_a_path(dumps):
    """None was a TypeError from os.fspath; bytes name the file as the file system does."""
    from ascend_ref.verify import open_dump

    tmp, good, bad = dumps
    with pytest.raises(ValueError, match="open_dump: path = None"):
        open_dump(None)
    assert open_dump(os.fsencode(good)).count == open_dump(good).count == 1


def test_python_batch_size_must_be_positive(dumps):
    tmp, good, bad = dumps
    for v in (0, -5, 1.5):
        with pytest.raises(ValueError, match="batch_size"):
            verify(str(good), batch_size=v, progress=False)


def test_cli_symlinked_bad_dump_fails(dumps, capsys):
    tmp, good, bad = dumps
    top = tmp / "top"
    top.mkdir()
    os.symlink(good, top / "good.npz")
    os.symlink(tmp / "bad", top / "run7")
    assert cli_main(["verify", str(top), "--no-progress"]) == 1
    assert "RESULT: FAILED" in capsys.readouterr().out


def test_cli_unwritable_json_is_a_usage_error(dumps, capsys):
    tmp, good, bad = dumps
    assert cli_main(["verify", str(good), "--no-progress", "--json", str(tmp)]) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "Traceback" not in err
