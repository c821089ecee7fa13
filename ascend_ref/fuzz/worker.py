"""Oracle worker process: ``python -m ascend_ref.fuzz.worker`` (started by the campaign runner).

Reads length-prefixed pickled lists of cases on stdin, answers each with a length-prefixed
pickled list of oracle outcomes on stdout, and exits at end of input — also when the parent
process dies (SIGKILL included), because its end of the pipe closes. A plain subprocess, not
``multiprocessing``: nothing re-imports the parent's ``__main__``.
"""

from __future__ import annotations

import pickle
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any, List, Optional, Sequence

from ..case import Case, Outcome, run_oracle
from .compare import safe

_HDR = 8


def _with_registers(c: Case) -> Outcome:
    from .compare import observable

    return run_oracle(c, spr=observable(c))


def oracle_many(cases: Sequence[Case]) -> List[Outcome]:
    """The scalar oracle on each case, a crash as a :class:`~ascend_ref.fuzz.compare.Crash`
    outcome (what a worker process answers for one batch); a setter's outcome carries the
    oracle's reduce special registers where its product can read them
    (``run_oracle(spr=True)``, :func:`~ascend_ref.fuzz.compare.observable`)."""
    return [safe(_with_registers, "oracle", c) for c in cases]


def _read_exact(f: IO[bytes], n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            raise EOFError
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def _send(f: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(len(data).to_bytes(_HDR, "little"))
    f.write(data)
    f.flush()


def _recv(f: IO[bytes]) -> Any:
    return pickle.loads(_read_exact(f, int.from_bytes(_read_exact(f, _HDR), "little")))


def serve(inp: Optional[IO[bytes]] = None, out: Optional[IO[bytes]] = None) -> int:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's; EOF ends us

    inp = inp or sys.stdin.buffer
    out = out or sys.stdout.buffer
    while True:
        try:
            cases = _recv(inp)
        except (EOFError, OSError):
            return 0
        try:
            _send(out, oracle_many(cases))
        except (BrokenPipeError, OSError):      # the parent is gone: exit quietly
            _silence_stdout()
            return 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail loudly."""
    import os

    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except OSError:
        pass


class Workers:
    """``n`` worker processes; :meth:`submit` returns a Future of the outcomes of a batch."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.idle: "queue.Queue" = queue.Queue()
        self.procs: List[subprocess.Popen] = []
        self.lock = threading.Lock()
        self.threads = ThreadPoolExecutor(n, thread_name_prefix="oracle-io")

    def _proc(self) -> subprocess.Popen[bytes]:
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            if len(self.procs) < self.n:
                p = subprocess.Popen([sys.executable, "-m", "ascend_ref.fuzz.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                self.procs.append(p)
                return p
        return self.idle.get()

    def _run(self, cases: Sequence) -> List:
        p = self._proc()
        try:
            _send(p.stdin, list(cases))     # type: ignore[arg-type]  # (started with pipes)
            out = _recv(p.stdout)           # type: ignore[arg-type]  # (started with pipes)
        except (EOFError, BrokenPipeError, OSError):
            with self.lock:
                if p in self.procs:
                    self.procs.remove(p)
            return oracle_many(cases)          # the worker died: do it here
        self.idle.put(p)
        return out

    def submit(self, cases: Sequence) -> Future:
        return self.threads.submit(self._run, list(cases))

    def close(self) -> None:
        self.threads.shutdown(wait=True)
        for p in self.procs:
            try:
                assert p.stdin is not None          # every worker is started with a pipe
                p.stdin.close()
                p.wait(timeout=10)
            except Exception:  # noqa: BLE001
                p.kill()
        self.procs = []


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve())
