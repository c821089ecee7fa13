"""A user's ``jax_enable_x64`` changes no result: Huawei's worked examples (tests/test_seeds.py,
each expectation taken from the pages) hold with the flag on, in a process of its own (the
flag is global). The package itself never turns it on (SPEC §9); with it on, 64-bit traced
integers are judged as concrete ones are (tests/test_traced_argument_faults.py)."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_worked_examples_hold_under_jax_enable_x64():
    code = (
        "import sys, jax\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "import jax.numpy as jnp\n"
        "assert jnp.asarray(1).dtype == jnp.int64    # the flag is really on\n"
        "import pytest\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', "
        f"'-m', 'not slow', {str(HERE / 'test_seeds.py')!r}]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, cwd=HERE.parent)
    tail = out.stdout[-2000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    assert " passed" in out.stdout and "failed" not in out.stdout, tail
