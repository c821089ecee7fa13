"""An unusable results database: a clear message and exit 2, never a traceback, and a file
that is not a results database is never written to (issue 13 F1)."""

import sqlite3

import pytest

from ascend_ref.cli import main as cli_main
from ascend_ref.fuzz.store import Store, StoreError


def _fuzz(db, capsys, *extra):
    rc = cli_main(["fuzz", "tie_rule", "--cases", "1", "--quiet", "--no-shrink", "--db", str(db),
                   *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def _results_db(path):
    """A real results database holding a few rows, checkpointed (no WAL left)."""
    st = Store(path)
    with st.tx():
        for i in range(400):
            st.db.execute("INSERT INTO meta VALUES (?, ?)", (f"k{i}", "x" * 200))
    st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    st.close()
    return path.read_bytes()


@pytest.mark.parametrize("content", [b"hello, not a database at all\n" * 40, b"\x00" * 4096])
def test_garbage_file_is_refused_and_untouched(tmp_path, capsys, content):
    db = tmp_path / "r.sqlite"
    db.write_bytes(content)
    rc, err = _fuzz(db, capsys)
    assert rc == 2 and "not an ascend-ref results database" in err and "--db" in err
    assert db.read_bytes() == content


def test_bad_header_is_refused_and_untouched(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    raw = bytearray(_results_db(db))
    raw[:16] = b"SQLite format 4\x00"
    db.write_bytes(bytes(raw))
    rc, err = _fuzz(db, capsys)
    assert rc == 2 and f"results file {db}: not an ascend-ref results database" in err, err
    assert "header is damaged" in err and "left untouched" in err, err
    assert db.read_bytes() == bytes(raw)


def test_truncated_database(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    raw = _results_db(db)
    db.write_bytes(raw[:len(raw) // 2 + 100])
    rc, err = _fuzz(db, capsys)
    assert rc == 2 and "corrupt" in err and "another --db" in err


def test_corrupted_page(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    raw = bytearray(_results_db(db))
    page = int.from_bytes(raw[16:18], "big")
    for p in range(1, len(raw) // page):                # trash every page but the first
        raw[p * page + 8:p * page + 60] = b"\xa5" * 52
    db.write_bytes(bytes(raw))
    rc, err = _fuzz(db, capsys)
    assert rc == 2 and "corrupt" in err
    assert db.read_bytes() == bytes(raw)


def test_another_programs_sqlite_is_untouched(tmp_path, capsys):
    db = tmp_path / "other.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE invoices (id INTEGER)")
    con.commit()
    con.close()
    before = db.read_bytes()
    rc, err = _fuzz(db, capsys)
    assert rc == 2 and "not an ascend-ref results database" in err and "invoices" in err
    assert db.read_bytes() == before
    with pytest.raises(StoreError):
        Store(db)
    assert db.read_bytes() == before


def test_directory_and_proc(tmp_path, capsys):
    rc, err = _fuzz(tmp_path, capsys)
    assert rc == 2 and "is a directory" in err
    rc, err = _fuzz("/proc/version", capsys)
    assert rc == 2 and "/proc/version" in err
    rc, err = _fuzz("/proc/ascend_ref_test.sqlite", capsys)
    assert rc == 2 and "ascend_ref_test.sqlite" in err


def test_report_and_list_and_replay_on_a_bad_db(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    db.write_bytes(b"garbage" * 100)
    for extra in (["--report"], ["--replay", "3"]):
        rc, err = _fuzz(db, capsys, *extra)
        assert rc == 2 and "not an ascend-ref results database" in err
    rc = cli_main(["fuzz", "--list", "--db", str(db)])
    assert rc == 2 and "Traceback" not in capsys.readouterr().err
    assert db.read_bytes() == b"garbage" * 100


def test_good_database_still_opens(tmp_path):
    db = tmp_path / "r.sqlite"
    _results_db(db)
    st = Store(db)
    assert st.db.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 401
    st.close()
    Store(tmp_path / "new" / "fresh.sqlite").close()       # a new file is created
