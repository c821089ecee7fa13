"""bench/bench.py's calls, derived from the registry: every instruction gets a row whose
call passes every check of the API (the bench itself asserts status 0 and the oracle's
bytes when it runs; nothing here times anything)."""

import importlib.util
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ascend_ref import registry

_spec = importlib.util.spec_from_file_location(
    "ascend_ref_bench", Path(__file__).resolve().parents[1] / "bench" / "bench.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_every_instruction_has_rows_and_the_issue_rows_come_first():
    rows = bench.configs()
    assert rows[:len(bench.ISSUE_CONFIGS)] == bench.ISSUE_CONFIGS
    assert {api for api, *_ in rows} == set(registry.names())
    assert len(set((api, dtype) for api, _, dtype, _ in rows)) == len(rows) - 2  # MIN, MAX
    assert bench.configs(every=False) == bench.ISSUE_CONFIGS


@pytest.mark.parametrize("r", [1, 16, 255])
def test_every_row_is_a_valid_call_inside_its_window(r):
    for api, chip, dtype, option in bench.configs():
        ins = registry.lookup(api)
        tensors, window = bench.layout(api, dtype, r, option)
        ub = np.zeros((1, window), np.uint8)
        case = bench.make_cases(api, chip, dtype, option, r, tensors, ub)[0]
        case.prepare(info=False)                     # raises ConstraintError if invalid
        s = np.dtype(dtype).itemsize
        assert tensors["src"] == (0, r * 256 // s)
        assert case.params["repeat"] == (r * 256 // s if ins.kernel.count_form else r)
        for t, (addr, size) in tensors.items():
            width = np.dtype(ins.tensor_dtype(t, dtype)).itemsize
            assert addr % 32 == 0 and addr + size * width <= window, (api, t)
        kw = bench.batch_kwargs(api, chip, dtype, option, r, tensors)
        assert kw[ins.public_arg("repeat")] == case.params["repeat"]
        if ins.option is not None:
            assert kw[ins.option.key] == option


def test_numpy_golden_shapes_follow_the_layout():
    rng = np.random.default_rng(0)
    for api, dtype, option, want in [("whole_reduce_min", "float16", "ORDER_VALUE_INDEX",
                                      ((3, 4, 1), (3, 4, 1))),
                                     ("reduce_data_block", "float32", "SUM", (3, 4, 8)),
                                     ("vcpadd", "float16", None, (3, 4, 64)),
                                     ("vec_reduce_add", "float16", None, (3, 1))]:
        ubs = rng.standard_normal((3, 4 * 256 // np.dtype(dtype).itemsize)).astype(dtype)
        got = bench.numpy_golden(api, dtype, option, ubs.view(np.uint8), 4)
        shape = tuple(g.shape for g in got) if isinstance(got, tuple) else got.shape
        assert shape == want, api
    x = np.arange(3 * 128, dtype=np.float16).reshape(3, 128)
    v, i = bench.numpy_golden("whole_reduce_max", "float16", "ORDER_VALUE_INDEX",
                              x.view(np.uint8), 1)
    assert v.reshape(3).tolist() == x[:, -1].tolist() and (i == 127).all()


def _script(name):
    spec = importlib.util.spec_from_file_location(
        f"ascend_ref_bench_{name}", Path(__file__).resolve().parents[1] / "bench" /
        f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_run_cases_floor_times_each_piece(monkeypatch):
    """bench/run_cases_floor.py runs (on 64 cases at R = 1 here): it checks run_cases against
    run_batch itself and times every piece of its bound; nothing here compares timings."""
    floor = _script("run_cases_floor")
    monkeypatch.setattr(floor.bench, "CASES", {1: 64})
    t = floor.pieces("whole_reduce_sum", "float32", 1, rounds=1)
    assert set(t) == {"batch", "cases", "keys", "written", "outcomes"}
    assert all(v > 0 for v in t.values())


def test_verify_floor_checks_every_member_and_times_each_piece(monkeypatch, tmp_path):
    """bench/verify_floor.py runs (40 cases at R = 1): verify passes the cases' dumps and
    every member passes its CRC-32, once a member (a repeat once); a flipped byte in a
    member's data fails that check. Nothing here compares timings."""
    floor = _script("verify_floor")
    monkeypatch.setattr(floor.bench, "CASES", {1: 40})
    t = floor.pieces("whole_reduce_sum", "float32", 1, rounds=1)
    assert set(t) == {"batch", "members", "open", "verify", "checked_per_case"}
    assert all(v > 0 for v in t.values())
    assert 1 <= t["checked_per_case"] <= 5          # a meta and 4 region members a case
    import ascend_ref as ar
    from ascend_ref.verify import dumps_from_cases, members

    ubs, kw, cases = floor.bench.one_call("whole_reduce_sum", "float32", 1, b=3)
    path = dumps_from_cases(cases, tmp_path, per_file=3, regions="tensors",
                            outcomes=ar.run_cases(cases))[0]
    raw = bytearray(Path(path).read_bytes())

    def data_at(info):
        h = info.header_offset
        return h + 30 + int.from_bytes(raw[h + 26:h + 28], "little") + \
            int.from_bytes(raw[h + 28:h + 30], "little")

    # the members to check: one per distinct (entry, stored bytes) among the small ones
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    small = {(i.compress_type, i.flag_bits, i.compress_size, i.file_size, i.CRC,
              bytes(raw[data_at(i):data_at(i) + i.compress_size]))
             for i in infos if i.compress_size <= members.SMALL}
    want = len(small) + sum(i.compress_size > members.SMALL for i in infos)
    keep = []
    try:
        assert floor.member_check(path, keep)() == want
        i = next(i for i in infos if i.filename == "c2.after.src.npy")
        raw[data_at(i) + i.compress_size // 2] ^= 0x10
        bad = tmp_path / "bad.npz"
        bad.write_bytes(bytes(raw))
        with pytest.raises(AssertionError, match="fails its CRC-32"):
            floor.member_check(str(bad), keep)()
    finally:
        for f in keep:
            f.close()


def test_targets_count_each_row_against_its_bound():
    """``bench.targets`` (README's "Issue 11's targets in this run" from a results file):
    on rows made up here, every count, the missed marks and the minority names follow the
    figures given."""
    rows = []
    for api, _, dtype, option in bench.ISSUE_CONFIGS:
        odd = (api, dtype) == ("reduce_data_block", "float16") and option == "MIN"
        rows.append(dict(api=api, dtype=dtype, option=str(option), repeat=255,
                         vs_copy=0.29 if odd else 0.31, vs_sum=3.5 if dtype == "float16" else 0.4,
                         cases_vs_batch=0.5 if odd else 0.8, compile_s=3.5 if odd else 1.0))
    rows.append(dict(rows[0], repeat=16, cases_vs_batch=0.1))      # another repeat count
    lines = bench.targets(rows).splitlines()
    minmax = next(x for x in lines if x.startswith("- min/max half"))
    assert "4 of 5 reached" in minmax and minmax.count("(missed)") == 1
    assert "reduce_data_block MIN float16 0.29 (missed)" in minmax
    assert "3 of 3 reached" in next(x for x in lines if x.startswith("- half sums"))
    floats = next(x for x in lines if x.startswith("- float sums"))
    assert "0 of 3 reached" in floats and floats.count("(missed)") == 3
    k = lines.index("- run_cases >= 0.7x run_batch:")
    assert lines[k + 1] == "  R = 16: 0 of 1 reached, 0.1-0.1"
    assert lines[k + 2] == ("  R = 255: 13 of 14 reached, 0.5-0.8; "
                            "missed: reduce_data_block MIN float16")
    assert "- verify (regions) >= 0.5x run_batch: no row in this run" in lines
    k = lines.index("- compile <= 3 s:")
    assert lines[k + 2] == ("  R = 255: 13 of 14 reached, 1-3.5; "
                            "missed: reduce_data_block MIN float16")
