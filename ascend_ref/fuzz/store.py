"""Campaign results in SQLite (stdlib): crash-safe, resumable, one file for many campaigns.

Every chunk of cases is committed in one transaction: its ``cases`` rows, its ``coverage``
increments and its ``mismatches`` rows, together. A process killed at any moment (SIGKILL
included) leaves whole chunks only; a resumed run skips the case ids already present, and
``(campaign, case_id)`` primary keys make a duplicate impossible (a row that already exists
is ignored *and* its coverage is not counted twice). Shrinking updates one mismatch row per
transaction. The schema is documented in ``docs/fuzz.md`` (``SCHEMA`` below is the truth).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Literal, Optional, Tuple, Type

from ..argtypes import PathLike
from ..batch_args import is_int
from ..constraints import Code, ConstraintError

if TYPE_CHECKING:
    from .campaign import Campaign

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS campaigns (
    id          TEXT PRIMARY KEY,      -- name-<hash of what decides cases and verdicts>
    name        TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    cases       INTEGER NOT NULL,      -- target case count of the latest run
    comparator  TEXT NOT NULL,         -- human description of the comparator
    identity    TEXT NOT NULL,         -- JSON: the hashed campaign identity
    config      TEXT NOT NULL,         -- JSON: the whole campaign (overrides included)
    source      TEXT NOT NULL,         -- the campaign TOML text as read
    path        TEXT,                  -- where the TOML was read from
    created     REAL NOT NULL,
    updated     REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id      INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign    TEXT NOT NULL REFERENCES campaigns(id),
    started     REAL NOT NULL,
    finished    REAL,                  -- NULL: killed or still running
    cases_run   INTEGER NOT NULL DEFAULT 0,
    seconds     REAL NOT NULL DEFAULT 0,   -- wall time up to the last commit
    pid         INTEGER,
    software    TEXT                   -- JSON: provenance.software(backend=True) of the run;
                                       -- NULL in runs recorded before the column existed
);
CREATE TABLE IF NOT EXISTS cases (
    campaign    TEXT NOT NULL REFERENCES campaigns(id),
    case_id     INTEGER NOT NULL,
    run_id      INTEGER NOT NULL,
    api         TEXT NOT NULL,
    chip        TEXT NOT NULL,
    dtype       TEXT NOT NULL,
    option      TEXT,
    expected    TEXT NOT NULL,         -- 'ok' or the error code name of the expected side
    actual      TEXT NOT NULL,         -- same for the actual side ('crash', 'skip', ...)
    verdict     TEXT NOT NULL,         -- 'pass' | 'mismatch' | 'skip'
    signature   TEXT,                  -- mismatch bit signature, NULL when pass
    bins        TEXT NOT NULL,         -- JSON {bin: value} coverage bins of the case
    PRIMARY KEY (campaign, case_id)
);
CREATE TABLE IF NOT EXISTS coverage (
    campaign    TEXT NOT NULL REFERENCES campaigns(id),
    bin         TEXT NOT NULL,
    value       TEXT NOT NULL,
    hits        INTEGER NOT NULL,
    PRIMARY KEY (campaign, bin, value)
);
CREATE TABLE IF NOT EXISTS mismatches (
    campaign    TEXT NOT NULL REFERENCES campaigns(id),
    case_id     INTEGER NOT NULL,
    signature   TEXT NOT NULL,         -- of the original case
    description TEXT NOT NULL,         -- Case.describe() of the original case
    detail      TEXT,                  -- first differing bytes / crash trace
    original    TEXT NOT NULL,         -- JSON parameters of the case as drawn (its UB
                                       -- bytes are re-drawn from seed and case_id)
    shrunk      BLOB,                  -- the minimal case (npz: ub + meta), NULL until shrunk
    shrunk_description TEXT,
    shrink_steps INTEGER,              -- accepted simplifications
    shrink_evals INTEGER,              -- candidate cases evaluated
    shrink_seconds REAL,
    PRIMARY KEY (campaign, case_id)
);
CREATE INDEX IF NOT EXISTS mismatches_by_signature ON mismatches (campaign, signature);
"""


class StoreError(RuntimeError):
    """The results file cannot be used: not a results database, corrupt, or not openable.

    The message names the file, says what is wrong and how to recover; the CLI prints it and
    exits 2. A file that is not an ascend-ref results database is never written to.
    """


class CampaignBusy(StoreError):
    """Another process is running the same campaign on the same results file."""


_SQLITE_MAGIC = b"SQLite format 3\x00"
_RECOVER = ("move it aside or delete it (its results are lost), or give another --db FILE")


def _opened(path: str) -> sqlite3.Connection:
    """Connect to ``path`` after checking it is a results database or a new file (no write
    happens before the checks pass)."""
    p = Path(path)
    if p.is_dir():
        raise StoreError(f"results file {path}: is a directory; --db needs a file name")
    if p.exists():
        if not p.is_file():
            raise StoreError(f"results file {path}: not a regular file; use another --db FILE")
        try:
            with open(p, "rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as e:
            raise StoreError(f"results file {path}: cannot read it ({e.strerror or e})") from None
        if head and head != _SQLITE_MAGIC:
            raise StoreError(f"results file {path}: not an ascend-ref results database (not "
                             f"an SQLite file, or its header is damaged); it is left "
                             f"untouched: {_RECOVER}")
    else:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"results file {path}: cannot create its directory "
                             f"({e.strerror or e}); use another --db FILE") from None
    try:
        db = sqlite3.connect(path, timeout=60, isolation_level=None)
    except sqlite3.Error as e:
        raise StoreError(f"results file {path}: cannot open it ({e}); "
                         f"use another --db FILE") from None
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and not {"meta", "campaigns", "cases"} <= tables:
            raise StoreError(f"results file {path}: an SQLite database, but not an ascend-ref "
                             f"results database (tables: {', '.join(sorted(tables)[:6])}); it "
                             f"is left untouched: use another --db FILE")
        if tables:
            bad = [r[0] for r in db.execute("PRAGMA quick_check(5)")]
            if bad != ["ok"]:
                raise StoreError(f"results file {path}: corrupt ({'; '.join(bad)}): {_RECOVER}")
    except sqlite3.Error as e:
        db.close()
        raise StoreError(f"results file {path}: corrupt or unreadable ({e}): {_RECOVER}") from None
    except StoreError:
        db.close()
        raise
    return db


class Store:
    def __init__(self, path: PathLike) -> None:
        if not ((isinstance(path, str) and path) or isinstance(path, os.PathLike)):
            # str(None) / str(5) was a database named "None" / "5" in the working directory
            raise StoreError(f"results file {path!r}: expected a file name (a non-empty str "
                             f"or os.PathLike), got {type(path).__name__}; use --db FILE")
        self.path = str(path)
        if self.path == ":memory:":
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        else:
            self.db = _opened(self.path)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")   # WAL + NORMAL: safe against SIGKILL
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(SCHEMA)
            v = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if v is None:
                self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                                (str(SCHEMA_VERSION),))
        except sqlite3.Error as e:
            self.db.close()
            raise StoreError(f"results file {self.path}: cannot be used ({e}): "
                             f"{_RECOVER}") from None
        if v is not None and v[0] != str(SCHEMA_VERSION):
            self.db.close()
            raise StoreError(f"results file {self.path}: schema version {v[0]}, this package "
                             f"writes {SCHEMA_VERSION}; use another --db FILE")
        try:                                    # (only once the version is known to be ours)
            self._software = self._software_column()
        except sqlite3.Error as e:
            self.db.close()
            raise StoreError(f"results file {self.path}: cannot be used ({e}): "
                             f"{_RECOVER}") from None

    def _software_column(self) -> bool:
        """Whether ``runs`` has its ``software`` column, adding it to a file written before
        runs recorded their software (the same schema version: older readers name the
        columns they read, and ignore it). A file that cannot take it now (an older
        version's run holds its write lock) is used without it: this open's runs record
        nothing. (A read-only file never gets here: the schema set-up above refuses it.)"""
        if "software" in {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}:
            return True
        try:
            self.db.execute("ALTER TABLE runs ADD COLUMN software TEXT")
        except sqlite3.OperationalError:
            return False
        return True

    # ------------------------------------------------------------------ transactions ------
    def tx(self) -> _Tx:
        return _Tx(self.db)

    def close(self) -> None:
        import os

        for fd in getattr(self, "_locks", {}).values():
            os.close(fd)                  # releases the flock
        self._locks: Dict[str, int] = {}
        self.db.close()

    # ------------------------------------------------------------------ campaigns ---------
    def claim(self, campaign: str) -> None:
        """Hold this campaign for this Store (until :meth:`close` or process exit, SIGKILL
        included): an exclusive ``flock`` on ``<db>.lock-<campaign id>``. A second run of the
        same campaign on the same file raises :class:`CampaignBusy` before it computes (or,
        with ``--fresh``, deletes) anything; other campaigns in the file run concurrently."""
        if self.path == ":memory:" or campaign in getattr(self, "_locks", {}):
            return
        import fcntl
        import os

        lock = f"{self.path}.lock-{campaign}"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise StoreError(f"results file {self.path}: cannot create the run lock {lock} "
                             f"({e.strerror or e})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise CampaignBusy(f"campaign {campaign} is being run by another process on "
                               f"results file {self.path} (lock {lock}); wait for it to "
                               f"finish, or run with another --db FILE") from None
        if not hasattr(self, "_locks"):
            self._locks = {}
        self._locks[campaign] = fd

    def register(self, camp: Campaign) -> None:
        """Record (or update) ``camp`` and :meth:`claim` it for this run."""
        self.claim(camp.id)
        now = time.time()
        with self.tx():
            self.db.execute(
                "INSERT INTO campaigns VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE "
                "SET cases=excluded.cases, config=excluded.config, source=excluded.source, "
                "path=excluded.path, updated=excluded.updated",
                (camp.id, camp.name, camp.seed, camp.cases, camp.compare.describe(),
                 json.dumps(camp.identity(), sort_keys=True), json.dumps(camp.to_dict()),
                 camp.source, camp.path, now, now))

    def reset(self, campaign: str) -> None:
        with self.tx():
            for t in ("cases", "coverage", "mismatches", "runs"):
                self.db.execute(f"DELETE FROM {t} WHERE campaign=?", (campaign,))

    def campaign_row(self, campaign: str) -> Optional[dict]:
        cur = self.db.execute("SELECT * FROM campaigns WHERE id=?", (campaign,))
        row = cur.fetchone()
        return None if row is None else dict(zip([c[0] for c in cur.description], row))

    def find_campaigns(self, name: Optional[str] = None) -> List[dict]:
        """Campaign rows, most recently updated first (``name``: that name only)."""
        q = "SELECT * FROM campaigns" + (" WHERE name=?" if name else "") + " ORDER BY updated DESC"
        cur = self.db.execute(q, (name,) if name else ())
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def touch(self, campaign: str) -> None:
        self.db.execute("UPDATE campaigns SET updated=? WHERE id=?", (time.time(), campaign))

    # ------------------------------------------------------------------ runs --------------
    def start_run(self, campaign: str, pid: int,
                  software: Optional[Dict[str, str]] = None) -> int:
        """A new run of ``campaign`` by process ``pid``; ``software``: what computes its
        results (:func:`ascend_ref.provenance.software`), stored as JSON."""
        sw = None if software is None else json.dumps(software, sort_keys=True)
        with self.tx():
            if self._software:
                cur = self.db.execute("INSERT INTO runs (campaign, started, pid, software) "
                                      "VALUES (?,?,?,?)", (campaign, time.time(), pid, sw))
            else:
                cur = self.db.execute("INSERT INTO runs (campaign, started, pid) VALUES "
                                      "(?,?,?)", (campaign, time.time(), pid))
        assert cur.lastrowid is not None             # an INSERT sets it
        return int(cur.lastrowid)

    def run_software(self, campaign: str) -> List[Tuple[Optional[Dict[str, str]], int, int]]:
        """The software the runs of ``campaign`` recorded: ``(software or None where a run
        did not record it, runs, cases stored by them)`` for each, the most cases first."""
        stored = dict(self.db.execute("SELECT run_id, COUNT(*) FROM cases WHERE campaign=? "
                                      "GROUP BY run_id", (campaign,)).fetchall())
        col = "software" if self._software else "NULL"
        runs: Dict[Optional[str], List[int]] = {}
        for run_id, sw in self.db.execute(f"SELECT run_id, {col} FROM runs WHERE campaign=?",
                                          (campaign,)):
            n = runs.setdefault(sw, [0, 0])
            n[0] += 1
            n[1] += stored.get(run_id, 0)
        out = [(None if sw is None else json.loads(sw), n, k) for sw, (n, k) in runs.items()]
        return sorted(out, key=lambda t: (-t[2], -t[1]))

    def finish_run(self, run_id: int, seconds: float) -> None:
        with self.tx():
            self.db.execute("UPDATE runs SET finished=?, seconds=? WHERE run_id=?",
                            (time.time(), seconds, run_id))

    # ------------------------------------------------------------------ cases -------------
    def done_ids(self, campaign: str) -> set:
        return {r[0] for r in self.db.execute("SELECT case_id FROM cases WHERE campaign=?",
                                              (campaign,))}

    def commit_chunk(self, campaign: str, run_id: int, rows: Iterable[dict],
                     seconds: float) -> int:
        """Insert a chunk atomically; returns the number of new case rows."""
        new = 0
        with self.tx():
            cov: dict = {}
            for r in rows:
                cur = self.db.execute(
                    "INSERT OR IGNORE INTO cases VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (campaign, r["case_id"], run_id, r["api"], r["chip"], r["dtype"],
                     r["option"], r["expected"], r["actual"], r["verdict"], r["signature"],
                     json.dumps(r["bins"], sort_keys=True)))
                if cur.rowcount != 1:
                    continue                         # already there: count nothing twice
                new += 1
                for b, v in r["bins"].items():
                    cov[(b, str(v))] = cov.get((b, str(v)), 0) + 1
                m = r.get("mismatch")
                if m is not None:
                    self.db.execute(
                        "INSERT OR IGNORE INTO mismatches (campaign, case_id, signature, "
                        "description, detail, original) VALUES (?,?,?,?,?,?)",
                        (campaign, r["case_id"], m["signature"], m["description"],
                         m["detail"], m["original"]))
            self.db.executemany(
                "INSERT INTO coverage VALUES (?,?,?,?) ON CONFLICT(campaign, bin, value) "
                "DO UPDATE SET hits = hits + excluded.hits",
                [(campaign, b, v, n) for (b, v), n in cov.items()])
            self.db.execute("UPDATE runs SET cases_run = cases_run + ?, seconds=? WHERE run_id=?",
                            (new, seconds, run_id))
            self.touch(campaign)
        return new

    def counts(self, campaign: str) -> dict:
        out = {"pass": 0, "mismatch": 0, "skip": 0}
        for v, n in self.db.execute("SELECT verdict, COUNT(*) FROM cases WHERE campaign=? "
                                    "GROUP BY verdict", (campaign,)):
            out[v] = n
        out["total"] = sum(out.values())
        return out

    def coverage(self, campaign: str) -> dict:
        out: dict = {}
        for b, v, n in self.db.execute("SELECT bin, value, hits FROM coverage WHERE campaign=?",
                                       (campaign,)):
            out.setdefault(b, {})[v] = n
        return out

    def case_row(self, campaign: str, case_id: int) -> Optional[dict]:
        _check_key("case_row", campaign, case_id)
        cur = self.db.execute("SELECT * FROM cases WHERE campaign=? AND case_id=?",
                              (campaign, case_id))
        row = cur.fetchone()
        return None if row is None else dict(zip([c[0] for c in cur.description], row))

    # ------------------------------------------------------------------ mismatches --------
    def pending_shrinks(self, campaign: str) -> List[int]:
        return [r[0] for r in self.db.execute(
            "SELECT case_id FROM mismatches WHERE campaign=? AND shrunk IS NULL ORDER BY case_id",
            (campaign,))]

    def mismatch(self, campaign: str, case_id: int) -> Optional[dict]:
        _check_key("mismatch", campaign, case_id)
        cur = self.db.execute("SELECT * FROM mismatches WHERE campaign=? AND case_id=?",
                              (campaign, case_id))
        row = cur.fetchone()
        return None if row is None else dict(zip([c[0] for c in cur.description], row))

    def mismatches(self, campaign: str) -> List[dict]:
        cur = self.db.execute(
            "SELECT case_id, signature, description, shrunk IS NOT NULL, shrunk_description, "
            "shrink_steps, length(shrunk) FROM mismatches WHERE campaign=? ORDER BY case_id",
            (campaign,))
        keys = ["case_id", "signature", "description", "shrunk", "shrunk_description",
                "shrink_steps", "shrunk_size"]
        return [dict(zip(keys, r)) for r in cur.fetchall()]

    def save_shrunk(self, campaign: str, case_id: int, blob: bytes, description: str,
                    steps: int, evals: int, seconds: float) -> None:
        with self.tx():
            self.db.execute(
                "UPDATE mismatches SET shrunk=?, shrunk_description=?, shrink_steps=?, "
                "shrink_evals=?, shrink_seconds=? WHERE campaign=? AND case_id=?",
                (blob, description, steps, evals, seconds, campaign, case_id))


def _check_key(method: str, campaign: Any, case_id: Any) -> None:
    """BAD_ARGUMENT unless ``campaign`` is a str and ``case_id`` an int in SQLite's INTEGER
    range (2**70 was a raw OverflowError from sqlite3)."""
    if not isinstance(campaign, str):
        raise ConstraintError(Code.BAD_ARGUMENT, api=f"Store.{method}", param="campaign",
                              value=campaign, allowed="a campaign id (str)")
    if not is_int(case_id) or not -(2**63) <= case_id < 2**63:
        raise ConstraintError(Code.BAD_ARGUMENT, api=f"Store.{method}", param="case_id",
                              value=case_id, allowed="an int in [-2**63, 2**63 - 1]")


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> Literal[False]:
        self.db.execute("COMMIT" if et is None else "ROLLBACK")
        return False
