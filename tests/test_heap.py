"""ascend_ref.heap: glibc's malloc thresholds are set at import, and left alone on request."""

import ctypes
import ctypes.util
import os
import subprocess
import sys

import pytest

from ascend_ref import heap


def _glibc() -> bool:
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").gnu_get_libc_version
        return True
    except (OSError, AttributeError):
        return False


def _state_in_fresh_process(env: dict) -> str:
    code = "import ascend_ref, ascend_ref.heap as h; print(h.STATE)"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_import_sets_the_thresholds_on_glibc():
    assert heap.STATE == ("set" if _glibc() else "unsupported")
    assert heap.tune() == heap.STATE                     # a second call changes nothing
    assert heap.TRIM_THRESHOLD == 2 * heap.MMAP_THRESHOLD == 64 << 20


@pytest.mark.parametrize("value,want", [("off", "off"), ("OFF", "off"), ("0", "off"),
                                        ("", None), ("on", None)])
def test_the_environment_can_leave_the_heap_alone(value, want):
    expected = want or ("set" if _glibc() else "unsupported")
    assert _state_in_fresh_process({"ASCEND_REF_MALLOPT": value}) == expected


@pytest.mark.skipif(not _glibc(), reason="glibc's mallinfo2 reads the mmap count")
def test_a_large_block_comes_from_the_heap_after_tune():
    """After tune, a 16 MiB malloc is not a fresh mapping (glibc's mallinfo2 hblks counts
    the mapped blocks); with ASCEND_REF_MALLOPT=off it is one."""
    code = ("import ctypes, ascend_ref\n"
            "libc = ctypes.CDLL('libc.so.6')\n"
            "class M(ctypes.Structure):\n"
            "    _fields_ = [(n, ctypes.c_size_t) for n in ('arena', 'ordblks', 'smblks', "
            "'hblks', 'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]\n"
            "libc.mallinfo2.restype = M\n"
            "libc.malloc.restype = ctypes.c_void_p\n"
            "before = libc.mallinfo2().hblks\n"
            "p = libc.malloc(16 << 20)\n"
            "print(libc.mallinfo2().hblks - before)\n"
            "libc.free(ctypes.c_void_p(p))\n")
    got = {}
    for value in ("", "off"):
        try:
            out = subprocess.run([sys.executable, "-c", code],
                                 env={**os.environ, "ASCEND_REF_MALLOPT": value},
                                 capture_output=True, text=True, check=True)
        except subprocess.CalledProcessError as e:       # glibc < 2.33: no mallinfo2
            pytest.skip(f"no mallinfo2: {e.stderr.strip().splitlines()[-1]}")
        got[value] = int(out.stdout.strip().splitlines()[-1])
    assert got == {"": 0, "off": 1}
