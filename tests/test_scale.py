"""Scale-out: every batched path over all local devices (same bits), and several processes."""

import os
import subprocess
import sys
import textwrap

import numpy as np

from ascend_ref import scale

HANG_GUARD_S = 900          # a guard against a hung subprocess, not a time budget


def _four_devices(script: str, cwd=None) -> str:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                       text=True, env=env, timeout=HANG_GUARD_S, cwd=cwd)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r.stdout


def test_my_share_splits_without_loss_or_duplicate():
    items = list(range(23))
    shares = [scale.my_share(items, p, 3) for p in range(3)]
    assert sorted(sum(shares, [])) == items
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_run_rows_pads_and_trims_on_one_device():
    import jax

    fn = jax.vmap(lambda x, y: (x * 2, y["a"] + 1))
    x = np.arange(7, dtype=np.int32)
    out = scale.run_rows(fn, x, {"a": x})
    assert out[0].tolist() == (x * 2).tolist() and out[1].tolist() == (x + 1).tolist()


def test_run_cases_is_sharded_over_four_devices_with_the_same_bits():
    out = _four_devices("""
        import jax, ascend_ref as ar
        from ascend_ref import scale
        from ascend_ref.fuzz.compare import diff
        from ascend_ref.fuzz.generate import RngDraw, draw_case
        assert len(jax.local_devices()) == 4
        cases = [draw_case(RngDraw(21, i), invalid_rate=0.2, tik_max_repeat=40) for i in range(12)]
        many = ar.run_cases(cases)
        assert scale.CALLS[4] > 0 and scale.CALLS[1] == 0, dict(scale.CALLS)
        with scale.use_devices(jax.local_devices()[:1]):
            one = ar.run_cases(cases)
        assert scale.CALLS[1] > 0, dict(scale.CALLS)
        bad = [c.describe() for c, a, b in zip(cases, many, one) if diff(a, b) is not None]
        assert not bad, bad
        print("SAME", len(cases), sum(o.code is None for o in many))
    """)
    assert "SAME 12" in out
