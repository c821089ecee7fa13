"""Scale-out: every batched path over all local devices (same bits), and several processes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

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


def test_run_rows_runs_a_row_function_on_one_device():
    """One device: the rows as they are (no padding: that is the sharded path's, checked on
    four devices in test_batch and below)."""
    import jax

    fn = jax.vmap(lambda x, y: (x * 2, y["a"] + 1))
    x = np.arange(7, dtype=np.int32)
    out = scale.run_rows(fn, x, {"a": x})
    assert out[0].tolist() == (x * 2).tolist() and out[1].tolist() == (x + 1).tolist()


def test_pad_rows_pads_every_leaf_with_row_0_and_never_drops():
    x = np.arange(3, 10, dtype=np.int32)             # row 0 holds 3, not the zero of a pad
    got = scale.pad_rows((x, {"a": x[:, None] * 10}), 9)
    assert got[0].tolist() == list(range(3, 10)) + [3, 3]
    assert got[1]["a"][:, 0].tolist() == [30, 40, 50, 60, 70, 80, 90, 30, 30]
    with pytest.raises(ValueError, match="never dropped"):
        scale.pad_rows(x, 6)


# ------------------------------------------------------------------ fuzz and verify --------
# A small campaign (JAX on atlas_a2 vs JAX on ascend950: documented differences give
# mismatches) and a small dump set (reference results, a few corrupted, a bad file) are run
# on 1 device in this process and on 4 devices / 2 processes in subprocesses; the stored
# results and the reports must be equal. The work is bounded by case counts, not by time.

CAMPAIGN_TOML = """
[campaign]
name = "scale_test"
seed = 7
cases = 24
apis = ["whole_reduce_sum", "reduce_data_block"]
products = ["atlas_a2"]
dtypes = ["float16"]
static_configs = 3
chunk = 5
ub_bytes = 4096
invalid_rate = 0.15
workers = 0

[compare]
kind = "product"
product = "ascend950"

[shrink]
enabled = false
"""

_TABLES = {"cases": "case_id, api, chip, dtype, option, expected, actual, verdict, signature, "
                    "bins",
           "coverage": "bin, value, hits",
           "mismatches": "case_id, signature, description, detail, original"}


def stored(db) -> dict:
    """Every stored result row of the campaign store (not timings or run ids)."""
    import sqlite3

    con = sqlite3.connect(str(db))
    try:
        return {t: con.execute(f"SELECT {cols} FROM {t} ORDER BY {cols}").fetchall()
                for t, cols in _TABLES.items()}
    finally:
        con.close()


def make_dumps(root) -> str:
    """Reference dumps of drawn cases (3 per file), three corrupted, plus one bad file."""
    import ascend_ref as ar
    from ascend_ref.fuzz.generate import RngDraw, draw_case
    from ascend_ref.verify import write_dumps

    d = os.path.join(str(root), "dumps")
    os.makedirs(d, exist_ok=True)
    cases = [draw_case(RngDraw(31, i), apis=["whole_reduce_sum", "reduce_data_block"],
                       chips=["atlas_a2"], max_ub=4096, invalid_rate=0.2) for i in range(14)]
    outs = ar.run_cases(cases)
    afters, flipped, wrote = [], 0, 0
    for k, o in enumerate(outs):
        after = None if o.code is not None else np.asarray(o.ub).copy()
        if after is not None and o.written.any():
            wrote += 1
            if wrote % 2 == 0 and flipped < 3:     # every other call that wrote, three
                after[np.flatnonzero(o.written)[k % int(o.written.sum())]] ^= 0x40
                flipped += 1
        afters.append(after)
    assert flipped >= 2
    for f in range(0, len(cases), 3):
        write_dumps(os.path.join(d, f"d{f // 3:02d}.npz"), cases[f:f + 3], afters[f:f + 3],
                    errors=[o.code for o in outs[f:f + 3]])
    with open(os.path.join(d, "d99_bad.npz"), "wb") as fh:
        fh.write(b"not a dump")
    return d


def run_fuzz(toml_path, db) -> int:
    import io

    from ascend_ref.fuzz.campaign import Campaign
    from ascend_ref.fuzz.runner import run_campaign

    s = run_campaign(Campaign.load(toml_path), str(db), quiet=True, out=io.StringIO())
    return s["mismatch"]


def run_verify(dumps) -> dict:
    from ascend_ref.verify import verify

    rep = verify(dumps, audit=True, batch_size=4, progress=False)
    return rep.to_json()


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The single-device, single-process results."""
    import ascend_ref  # noqa: F401

    root = tmp_path_factory.mktemp("scale")
    toml = root / "scale_test.toml"
    toml.write_text(CAMPAIGN_TOML)
    dumps = make_dumps(root)
    mism = run_fuzz(toml, root / "one.sqlite")
    rep = run_verify(dumps)
    assert mism > 0 and rep["mismatched"] > 0 and rep["bad"] and rep["agreed"] > 0, rep
    return root, toml, dumps, stored(root / "one.sqlite"), rep


@pytest.mark.slow   # four-device subprocess campaigns (~60 s idle with its fixture)
def test_run_cases_fuzz_and_verify_on_four_devices_equal_one_device(one_process):
    import json

    root, toml, dumps, want_rows, want_rep = one_process
    here = os.path.dirname(os.path.abspath(__file__))
    out = _four_devices(f"""
        import json, sys
        sys.path.insert(0, {here!r})
        import jax
        from ascend_ref import scale
        import test_scale as t
        assert len(jax.local_devices()) == 4
        t.run_fuzz({str(toml)!r}, {str(root / 'four.sqlite')!r})
        rep = t.run_verify({dumps!r})
        assert scale.CALLS[4] > 0 and scale.CALLS[1] == 0, dict(scale.CALLS)
        json.dump(rep, open({str(root / 'four.json')!r}, "w"))
        # run_cases on its own: 4 devices against 1 in this process
        import ascend_ref as ar
        from ascend_ref.fuzz.compare import diff
        from ascend_ref.fuzz.generate import RngDraw, draw_case
        cases = [draw_case(RngDraw(21, i), apis=["whole_reduce_min", "vec_reduce_max"],
                           invalid_rate=0.2, tik_max_repeat=8, max_ub=4096) for i in range(8)]
        many = ar.run_cases(cases)
        with scale.use_devices(jax.local_devices()[:1]):
            one = ar.run_cases(cases)
        assert scale.CALLS[1] > 0, dict(scale.CALLS)
        bad = [c.describe() for c, a, b in zip(cases, many, one) if diff(a, b) is not None]
        assert not bad, bad
        print("SAME", len(cases), sum(o.code is None for o in many))
    """)
    assert "SAME 8" in out
    assert stored(root / "four.sqlite") == want_rows
    assert json.loads((root / "four.json").read_text()) == json.loads(json.dumps(want_rep))


_RB_ROWS = 12


def run_batch_rows(rows):
    """``run_batch`` (ReduceDataBlock SUM, half, ascend950) on the seeded cases ``rows``."""
    rng = np.random.default_rng(5)
    ubs = rng.standard_normal((_RB_ROWS, 2048)).astype(np.float16).view(np.uint8)
    ubs[:, 8:10] = [0x00, 0x7c]                           # +inf in every row's first repeat
    kw = dict(chip="ascend950", dtype="half", reduce_type="SUM",
              mask=rng.integers(0, 129, _RB_ROWS), repeat=rng.integers(0, 8, _RB_ROWS),
              dst_rep_stride=1, src_blk_stride=1, src_rep_stride=rng.integers(0, 9, _RB_ROWS),
              src=(0, 1024), dst=(3072, 512))
    rows = np.asarray(rows)
    kw = {k: (v[rows] if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    return kw, ubs[rows]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow   # two jax.distributed processes (~40 s idle)
def test_two_processes_split_verify_and_fuzz_and_feed_their_own_rows(one_process):
    """2 CPU processes joined with jax.distributed (gloo): run_batch with the global device
    list (each process its own rows), ``ascend-ref verify`` and ``ascend-ref fuzz`` with
    --coordinator/--num-processes/--process-id: one report and one store, equal to one
    process's."""
    import json

    import ascend_ref as ar

    root, toml, dumps, want_rows, want_rep = one_process
    here = os.path.dirname(os.path.abspath(__file__))
    addr = f"127.0.0.1:{_free_port()}"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {here!r})
        import numpy as np, jax
        from ascend_ref import cli, scale
        import test_scale as t
        pid = int(sys.argv[1])
        dist = ["--coordinator", {addr!r}, "--num-processes", "2", "--process-id", str(pid)]
        scale.init_distributed({addr!r}, 2, pid)
        assert jax.process_count() == 2 and len(jax.devices()) == 2
        kw, ubs = t.run_batch_rows(range(pid, t._RB_ROWS, 2))
        import ascend_ref as ar
        out, status = ar.run_batch("reduce_data_block", ubs, devices=jax.devices(), **kw)
        np.savez({str(root)!r} + f"/rb{{pid}}.npz", out=out, status=status)
        rv = cli.main(["verify", {dumps!r}, "--json", {str(root / 'two.json')!r}, "--batch", "4",
                       "--audit", "--examples", "3", "--no-progress", *dist])
        rf = cli.main(["fuzz", {str(toml)!r}, "--db", {str(root / 'two.sqlite')!r}, "-q", *dist])
        print("RC", pid, rv, rf, flush=True)
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(p)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for p in range(2)]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=HANG_GUARD_S))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (o, e) in zip(procs, outs):
        assert p.returncode == 0, o[-2000:] + e[-4000:]
    # as one process: verify fails (mismatches, bad file); a product diff campaign exits 0
    assert "RC 0 1 0" in outs[0][0] and "RC 1 1 0" in outs[1][0], [o for o, _ in outs]
    assert json.loads((root / "two.json").read_text()) == json.loads(json.dumps(want_rep))
    assert stored(root / "two.sqlite") == want_rows
    kw, ubs = run_batch_rows(range(_RB_ROWS))
    want_out, want_status = ar.run_batch("reduce_data_block", ubs, **kw)
    for pid in range(2):
        with np.load(root / f"rb{pid}.npz") as z:
            np.testing.assert_array_equal(z["out"], want_out[pid::2])
            np.testing.assert_array_equal(z["status"], want_status[pid::2])


def test_incomplete_multi_process_options_are_a_clear_error(monkeypatch, tmp_path, capsys):
    from ascend_ref import cli

    for k in (scale.ENV_COORDINATOR, scale.ENV_NUM_PROCESSES, scale.ENV_PROCESS_ID):
        monkeypatch.delenv(k, raising=False)
    assert scale.init_distributed() is False                 # nothing given: one process
    monkeypatch.setenv(scale.ENV_NUM_PROCESSES, "2")
    with pytest.raises(ValueError, match="coordinator address"):
        scale.init_distributed()
    with pytest.raises(ValueError, match=r"process id 2 is not in \[0, 2\)"):
        scale.init_distributed("127.0.0.1:1", None, 2)
    assert cli.main(["verify", str(tmp_path), "--process-id", "0"]) == 2
    assert "--coordinator HOST:PORT" in capsys.readouterr().err


def test_malformed_multi_process_values_are_a_clear_error(monkeypatch, tmp_path, capsys):
    """A coordinator without a port was an IndexError inside jax.distributed, a count of 0
    "process id 0 is not in [0, 0)", a non-integer environment value a bare int() error."""
    from ascend_ref import cli

    for k in (scale.ENV_COORDINATOR, scale.ENV_NUM_PROCESSES, scale.ENV_PROCESS_ID):
        monkeypatch.delenv(k, raising=False)
    for coord in ("x", ":80", "host:0", "host:99999", "host:p"):
        with pytest.raises(ValueError, match="expected HOST:PORT"):
            scale.init_distributed(coord, 2, 0)
    with pytest.raises(ValueError, match="number of processes 0"):
        scale.init_distributed("127.0.0.1:1", 0, 0)
    monkeypatch.setenv(scale.ENV_NUM_PROCESSES, "two")
    with pytest.raises(ValueError, match="JAX_NUM_PROCESSES = 'two'"):
        scale.init_distributed("127.0.0.1:1", None, 0)
    monkeypatch.delenv(scale.ENV_NUM_PROCESSES)
    assert cli.main(["verify", str(tmp_path), "--coordinator", "x", "--num-processes", "2",
                     "--process-id", "0"]) == 2
    err = capsys.readouterr().err
    assert "expected HOST:PORT" in err and "Traceback" not in err
    for index, count in ((5, 2), (0, 0), (-1, 2)):           # [] / a slice error / a share
        with pytest.raises(ValueError, match="my_share"):
            scale.my_share([1, 2, 3], index, count)
