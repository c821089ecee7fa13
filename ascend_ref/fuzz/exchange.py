"""Cases and results as files: the repro format and the external-command (device) exchange.

A case file is an ``.npz`` with two arrays: ``ub`` (uint8, the UB before the call) and
``meta`` (a 0-d unicode string holding JSON: api, chip, dtype, option, mask, params, tensors,
saturate, tags). A result file is an ``.npz`` with ``status`` (0-d string: ``"ok"``, an error
code name such as ``"MASK_RANGE"``, or ``"skip"``) and, when ``"ok"``, ``ub`` (uint8, the UB
after the call, same length). The exchange directory layout is in ``docs/fuzz.md``.

>>> import numpy as np
>>> from ascend_ref.case import Case
>>> c = Case("whole_reduce_sum", "atlas_a2", "float16", None, 128, {"repeat": 1,
...          "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
...          {"src": (0, 128), "dst": (256, 16)}, np.zeros(512, np.uint8))
>>> case_from_bytes(case_to_bytes(c)).describe() == c.describe()
True
"""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from ..argtypes import PathLike
from ..case import Case, Outcome
from ..constraints import Code
from ..mask import CounterMask

FORMAT = "ascend-ref-exchange/1"


def case_meta(case: Case) -> dict:
    mask = case.mask if isinstance(case.mask, int) else \
        {"counter": int(case.mask.count)} if isinstance(case.mask, CounterMask) else \
        [int(w) for w in case.mask]
    return {"api": case.api, "chip": case.chip, "dtype": case.dtype, "option": case.option,
            "mask": mask, "params": {k: int(v) for k, v in case.params.items()},
            "tensors": {k: [int(a), int(n)] for k, (a, n) in case.tensors.items()},
            "saturate": case.saturate, "ub_bytes": int(case.ub.size),
            "tags": {k: v for k, v in case.tags.items() if _jsonable(v)}}


def case_from_meta(meta: dict, ub: np.ndarray) -> Case:
    m = meta["mask"]
    mask = m if isinstance(m, int) else CounterMask(int(m["counter"])) if isinstance(m, dict) \
        else list(m)
    return Case(meta["api"], meta["chip"], meta["dtype"], meta["option"], mask,
                dict(meta["params"]), {k: (int(a), int(n)) for k, (a, n) in meta["tensors"].items()},
                np.asarray(ub, np.uint8), meta.get("saturate"), dict(meta.get("tags", {})))


def _jsonable(v: object) -> bool:
    try:
        json.dumps(v)
        return True
    except TypeError:
        return False


def case_to_bytes(case: Case, compress: bool = True) -> bytes:
    buf = io.BytesIO()
    save = np.savez_compressed if compress else np.savez
    save(buf, ub=np.asarray(case.ub, np.uint8), meta=np.array(json.dumps(case_meta(case))))
    return buf.getvalue()


def case_from_bytes(data: bytes) -> Case:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return case_from_meta(json.loads(str(z["meta"])), z["ub"])


def save_case(case: Case, path: PathLike) -> None:
    Path(path).write_bytes(case_to_bytes(case))


def load_case(path: PathLike) -> Case:
    return case_from_bytes(Path(path).read_bytes())


def save_result(path: PathLike, status: str,
                ub: Optional[np.ndarray] = None) -> None:
    """What a device under test writes for one case (``status`` "ok" needs ``ub``)."""
    arrays: Dict[str, Any] = {"status": np.array(status)}
    if ub is not None:
        arrays["ub"] = np.asarray(ub, np.uint8)
    tmp = Path(str(path) + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


# ------------------------------------------------------------------ exchange directory ------

def write_exchange(folder: Path, cases: Sequence[Case], names: Sequence[str],
                   valid: Optional[Sequence[bool]] = None) -> None:
    """``folder/manifest.json`` + ``folder/cases/<name>.npz``; ``folder/results/`` empty."""
    (folder / "cases").mkdir(parents=True, exist_ok=True)
    (folder / "results").mkdir(exist_ok=True)
    entries = []
    for i, (c, n) in enumerate(zip(cases, names)):
        meta = case_meta(c)
        meta["reference_valid"] = None if valid is None else bool(valid[i])
        buf = io.BytesIO()
        np.savez(buf, ub=np.asarray(c.ub, np.uint8), meta=np.array(json.dumps(meta)))
        (folder / "cases" / f"{n}.npz").write_bytes(buf.getvalue())
        entries.append(n)
    (folder / "manifest.json").write_text(json.dumps({"format": FORMAT, "cases": entries}))


def read_exchange_cases(folder: PathLike) -> List[tuple]:
    """``[(name, Case, meta)]`` of an exchange directory (what a device harness reads)."""
    folder = Path(folder)
    man = json.loads((folder / "manifest.json").read_text())
    if man.get("format") != FORMAT:
        raise ValueError(f"{folder}: unknown exchange format {man.get('format')!r}")
    out = []
    for n in man["cases"]:
        with np.load(folder / "cases" / f"{n}.npz", allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            out.append((n, case_from_meta(meta, z["ub"]), meta))
    return out


def read_result(path: PathLike, expected: Outcome) -> tuple:
    """``(verdict, Outcome or None, note)`` for one result file; verdict is ``"ok"``,
    ``"skip"``, ``"missing"`` or ``"bad"``. A device cannot know which bytes the reference
    calls written / undefined, so the actual outcome borrows the expected masks."""
    p = Path(path)
    if not p.exists():
        return "missing", None, "no result file"
    try:
        with np.load(p, allow_pickle=False) as z:
            status = str(z["status"])
            ub = np.asarray(z["ub"], np.uint8) if "ub" in z.files else None
    except Exception as e:  # noqa: BLE001 - any unreadable file is a bad answer
        return "bad", None, f"unreadable result: {e}"
    if status == "skip":
        return "skip", None, "skipped by the device"
    if status == "ok":
        if ub is None:
            return "bad", None, "status ok without ub"
        if expected.code is None and expected.ub is not None and ub.size != expected.ub.size:
            return "bad", None, f"ub has {ub.size} bytes, the case has {expected.ub.size}"
        if expected.code is None:
            return "ok", Outcome(None, ub, expected.written, expected.undefined), ""
        n = ub.size
        return "ok", Outcome(None, ub, np.zeros(n, bool), np.zeros(n, bool)), ""
    try:
        return "ok", Outcome(Code[status]), ""
    except KeyError:
        return "bad", None, f"unknown status {status!r}"


class DeviceCommandError(RuntimeError):
    """The ``[compare] command`` could not run (missing executable, non-zero exit, timeout).

    The campaign stops; committed chunks are kept. The CLI prints the message (with the
    command's last stderr lines) and exits 2."""


def run_command(command: str, folder: Path, timeout_s: float) -> None:
    """Run the device command on an exchange folder: ``{dir}`` in ``command`` becomes the
    folder (else it is appended), ``{python}`` this Python interpreter. Raises
    :class:`DeviceCommandError` when it cannot be run, fails or times out."""
    import sys

    cmd = command.replace("{python}", shlex.quote(sys.executable))
    if "{dir}" in cmd:
        cmd = cmd.replace("{dir}", shlex.quote(str(folder)))
    else:
        cmd = f"{cmd} {shlex.quote(str(folder))}"
    env = dict(os.environ, ASCEND_REF_EXCHANGE=str(folder))
    try:
        r = subprocess.run(cmd, shell=True, env=env, timeout=timeout_s, capture_output=True,
                           text=True)
    except subprocess.TimeoutExpired:
        raise DeviceCommandError(f"device command timed out after {timeout_s} s "
                                 f"([compare] timeout_s): {cmd}") from None
    except OSError as e:
        raise DeviceCommandError(f"device command cannot be started: {cmd}: {e}") from None
    if r.returncode != 0:
        tail = (r.stderr or r.stdout or "").strip().splitlines()[-5:]
        what = " (command not found: check [compare] command)" if r.returncode == 127 else ""
        raise DeviceCommandError(f"device command failed (exit {r.returncode}){what}: {cmd}"
                                 + "".join("\n  " + t for t in tail))


class ExchangeDir:
    """A temporary exchange folder, removed afterwards (kept with ``keep=True``)."""

    def __init__(self, keep: bool = False, parent: Optional[str] = None) -> None:
        self.keep, self.parent = keep, parent

    def __enter__(self) -> Path:
        self.path = Path(tempfile.mkdtemp(prefix="ascend-ref-dut-", dir=self.parent))
        return self.path

    def __exit__(self, *exc: object) -> None:
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)


def names_for(ids: Iterable) -> List[str]:
    return [f"{i:08d}" if isinstance(i, int) else str(i) for i in ids]
