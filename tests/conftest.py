import os
import shutil
import tempfile

# One test run shares its compiled kernels between its processes (the xdist workers): JAX's
# persistent compilation cache, in a folder the first process makes for the run (the workers
# inherit it through the environment) and removes at its end. A subset of five test files on
# two workers (2 cores): 14 min 7 s without, 12 min 18 s with (user CPU 26:12 -> 22:17).
# A JAX_COMPILATION_CACHE_DIR already set wins. Subprocesses (the CLI, notebooks) do not use
# it: a process killed while it writes an entry would leave the entry truncated.
_RUN_CACHE = "ASCEND_REF_TEST_JAX_CACHE"
_MADE_HERE = _RUN_CACHE not in os.environ and not os.environ.get("JAX_COMPILATION_CACHE_DIR")
if _MADE_HERE:
    os.environ[_RUN_CACHE] = tempfile.mkdtemp(prefix="ascend_ref_test_jax_")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import ascend_ref as ar  # noqa: E402
from ascend_ref import oracle  # noqa: E402

if os.environ.get(_RUN_CACHE) and not os.environ.get("JAX_COMPILATION_CACHE_DIR"):
    jax.config.update("jax_compilation_cache_dir", os.environ[_RUN_CACHE])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

# campaigns run from the CLI keep compiled kernels in ~/.cache; not from the test suite
os.environ.setdefault("ASCEND_REF_COMPILE_CACHE", "off")


def pytest_sessionfinish(session, exitstatus):
    if _MADE_HERE:                      # the process that made the run's cache folder
        shutil.rmtree(os.environ[_RUN_CACHE], ignore_errors=True)


def undefined_spans(mask):
    """What ``batch.undefined_rows()`` records for a run_batch ``undefined`` mask, from the
    mask itself: ``(rows with a mark, first marked column or the width, last + 1 or 0)``."""
    mask = np.asarray(mask, bool)
    width = mask.shape[1]
    rows = mask.any(axis=1)
    lo = np.where(rows, mask.argmax(axis=1), width)
    hi = np.where(rows, width - mask[:, ::-1].argmax(axis=1), 0)
    return rows.tolist(), lo.tolist(), hi.tolist()


def spans_recorded(s):
    return s.rows.tolist(), s.lo.tolist(), s.hi.tolist()


class Out:
    """One call's outcome as numpy arrays (:func:`call_ascendc`)."""

    def __init__(self, ub, written, undefined):
        self.ub = np.asarray(ub, np.uint8)
        self.written = np.asarray(written, bool)
        self.undefined = np.asarray(undefined, bool)

    def load(self, addr, dtype, count):
        return self.ub[addr:addr + count * np.dtype(dtype).itemsize].view(dtype)

    def __iter__(self):                  # ub, written, undefined = call_ascendc(...)
        return iter((self.ub, self.written, self.undefined))

    def __getitem__(self, k):
        return (self.ub, self.written, self.undefined)[k]


def call_ascendc(impl, name, ub, *args, **kw):
    """Run the Ascend C API ``name`` on ``impl`` (``"oracle"``: the scalar oracle, else the
    JAX path): :class:`Out`, or the error :class:`Code` of a rejected call."""
    ub = np.asarray(ub, np.uint8)
    if impl == "oracle":
        try:
            r = getattr(oracle, name)(ub, *args, **kw)
        except oracle.OracleError as e:
            return e.code
        return Out(r.ub, r.written, r.undefined)
    try:
        new, info = getattr(ar.ascendc, name)(ub, *args, return_info=True, **kw)
    except ar.ConstraintError as e:
        return e.code
    return Out(new, info.written, info.undefined)


def half_bits(x):
    return np.asarray(x, np.float16).view(np.uint16)


@pytest.fixture
def ub_a2():
    return ar.new_ub("atlas_a2")


@pytest.fixture
def pins(monkeypatch):
    """The pinned source address (None: not pinned) of every kernel ``batch._array_fn``
    makes from here on, in order (the tests of pinned kernels and of run_cases' tables)."""
    from ascend_ref import batch

    got: list = []
    real = batch._array_fn

    def spy(*args):
        got.append(args[-1])
        return real(*args)

    monkeypatch.setattr(batch, "_array_fn", spy)
    return got


@pytest.fixture(params=["libdeflate", "zlib"])
def codec(request, monkeypatch):
    """The member reader with libdeflate (when the system has it) and with zlib only."""
    from ascend_ref.verify import format as fmt

    c = fmt._Libdeflate()
    if request.param == "libdeflate" and c.lib is None:
        pytest.skip("no libdeflate on this system")
    if request.param == "zlib":
        c.lib = None
    monkeypatch.setattr(fmt, "_LIBDEFLATE", c)
    return c
