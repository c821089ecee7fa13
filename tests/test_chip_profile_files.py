"""A malformed product profile (``<configs>/chips/<id>.toml``) is one clear error naming the
file (its real path), the field, the value and what is allowed -- never a raw KeyError /
ValueError / TOMLDecodeError, never a profile that loads with a wrong meaning."""

import importlib
import shutil
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import ascend_ref as ar

chips_mod = importlib.import_module("ascend_ref.chips")   # ``ar.chips`` is the function
SHIPPED = Path(__file__).resolve().parent.parent / "configs" / "chips"
A2 = (SHIPPED / "atlas_a2.toml").read_text()


@pytest.fixture(autouse=True)
def _fresh_profiles() -> Iterator[None]:
    chips_mod._profiles.cache_clear()
    getattr(chips_mod, "_checked", chips_mod._profiles).cache_clear()
    yield
    chips_mod._profiles.cache_clear()
    getattr(chips_mod, "_checked", chips_mod._profiles).cache_clear()


def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str,
            *, also_good: bool = False) -> Path:
    """A configs folder whose atlas_a2.toml has ``old`` replaced by ``new`` (and, with
    ``also_good``, an unbroken atlas_a3.toml); returns the broken file's path."""
    folder = tmp_path / "cfg" / "chips"
    folder.mkdir(parents=True)
    assert old in A2
    path = folder / "atlas_a2.toml"
    path.write_text(A2.replace(old, new, 1))
    if also_good:
        shutil.copy(SHIPPED / "atlas_a3.toml", folder / "atlas_a3.toml")
    monkeypatch.setenv("ASCEND_REF_CONFIGS", str(folder.parent))
    return path


def broken(path: Path, field: str) -> str:
    with pytest.raises(ValueError) as e:
        ar.chip("atlas_a2")
    msg = str(e.value)
    assert type(e.value).__name__ == "ProfileError", msg
    assert str(path) in msg and field in msg, msg
    assert "allowed" in msg and "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("key", ["saturate_default", "fp32_ftz", "dst_rep_stride_zero"])
def test_a_boolean_given_as_a_string_is_an_error_not_true(tmp_path, monkeypatch, key):
    line = next(x for x in A2.splitlines() if x.startswith(key + " "))
    value = line.split("=")[1].split("#")[0].strip()
    path = configs(tmp_path, monkeypatch, line, f'{key} = "{value}"')
    assert "TOML boolean" in broken(path, key)


@pytest.mark.parametrize("old, new, field, allowed", [
    ('whole_reduce_min = ["float16", "float32"]', 'whole_reduce_min = "float16"',
     "whole_reduce_min", "list"),
    ('whole_reduce_min = ["float16", "float32"]', 'whole_reduce_min = ["float16", "half"]',
     "whole_reduce_min", "float16"),
    ("assumed = [", 'assumed = "minmax_rules"\nnot_assumed = [', "assumed", "list"),
    ("ub_bytes = 196608", "ub_bytes = 1.5", "ub_bytes", "integer"),
    ("ub_bytes = 196608", "ub_bytes = -5", "ub_bytes", "integer"),
    ("ub_bytes = 196608", 'ub_bytes = "lots"', "ub_bytes", "integer"),
    ('"ORDER_ONLY_INDEX"]', '"ORDER_BOGUS"]', "whole_reduce", "ORDER_ONLY_INDEX"),
    ("default_nan_f16 = 0xFE00", "default_nan_f16 = 0x1FFFFF", "default_nan_f16", "0xffff"),
    ("default_nan_f32 = 0xFFC00000", "default_nan_f32 = 0x1FFC00000", "default_nan_f32",
     "0xffffffff"),
    ('block_fill = "keep"', 'block_fill = "kept"', "block_fill", "fill"),
    ('add_order = "group255"', "add_order = 255", "add_order", "odd_even"),
])
def test_a_bad_shared_value_is_an_error(tmp_path, monkeypatch, old, new, field, allowed):
    assert allowed in broken(configs(tmp_path, monkeypatch, old, new), field)


@pytest.mark.parametrize("old, new, field", [
    ('pair_masked_pair = "keep"', 'pair_masked_pair = "bogus"', "pair_masked_pair"),
    ('id = "atlas_a2"', 'id = "atlas_a2"\nno_such_rule = "keep"', "no_such_rule"),
    ('pair_masked_pair = "keep"', "", "pair_masked_pair"),
])
def test_instruction_facts_are_checked_when_the_profile_loads(tmp_path, monkeypatch, old, new,
                                                               field):
    """The registry's check runs at load, so a direct call fails with it too (it was a bare
    ``'bogus' is not in list`` from the engine), naming the real file, not configs/chips/."""
    path = configs(tmp_path, monkeypatch, old, new)
    broken(path, field)
    with pytest.raises(ValueError, match=field) as e:
        ar.ascendc.pair_reduce_sum(ar.new_ub(size=4096), ar.Tensor(0, "float16", 64),
                                   ar.Tensor(256, "float16", 128), 1, 128, 1, 1, 8,
                                   chip="atlas_a2")
    assert str(path) in str(e.value)


@pytest.mark.parametrize("old, new, field", [
    ("ub_bytes = 196608", "", "ub_bytes"),
    ('product = "Atlas A2 training / inference series"', "", "product"),
    (A2, "", "id"),
    ('id = "atlas_a2"', 'id = "atlas_a2" =', "TOML"),
    ('id = "atlas_a2"', 'id = "atlas_a3"', "id"),
])
def test_a_missing_key_or_a_syntax_error_names_the_file(tmp_path, monkeypatch, old, new, field):
    broken(configs(tmp_path, monkeypatch, old, new), field)


def test_a_broken_file_breaks_only_what_loads_it(tmp_path, monkeypatch):
    """Listing ids does not load; a call naming a good product works; a call naming the
    broken one, or anything that loads every product, gets the error naming the file."""
    path = configs(tmp_path, monkeypatch, "ub_bytes = 196608", "ub_bytes = 1.5",
                   also_good=True)
    assert ar.chips() == ["atlas_a2", "atlas_a3"]
    assert ar.chip("atlas_a3").ub_bytes == 196608
    broken(path, "ub_bytes")
    with pytest.raises(ValueError, match="ub_bytes") as e:
        [ar.chip(c) for c in ar.chips()]
    assert str(path) in str(e.value)


def test_the_shipped_profiles_load_as_before_and_know_their_file():
    p = ar.chip("atlas_a2")
    assert (p.ub_bytes, p.saturate_default, p.fp32_ftz, p.dst_rep_stride_zero) == (
        196608, False, False, True)
    assert p.default_nan_f16 == 0xFE00 and p.default_nan_f32 == 0xFFC00000
    assert p.orders[0] == "ORDER_VALUE_INDEX" and "minmax_rules" in p.assumed
    assert p.dtypes("whole_reduce_min") == ("float16", "float32")
    for c in ar.chips():
        q = ar.chip(c)
        assert Path(q.source) == chips_mod.config_dir() / "chips" / f"{c}.toml"
        assert q.id == c and all(isinstance(x, bool) for x in (
            q.saturate_default, q.fp32_ftz, q.dst_rep_stride_zero, q.saturate_only))
        for vals in q.block_fill_values.values():
            assert all(isinstance(b, (int, np.integer)) for b in vals.values())


def test_the_cli_names_a_broken_profile_in_one_line(tmp_path, monkeypatch):
    """The CLI's parser lists every API for explain, which loads every profile: a broken
    one was a traceback, exit 1. Now one line naming the file and field, exit 2. In a fresh
    process, as a user meets it (this one has every profile checked already)."""
    import subprocess
    import sys

    path = configs(tmp_path, monkeypatch, "ub_bytes = 196608", "ub_bytes = 1.5",
                   also_good=True)
    got = subprocess.run([sys.executable, "-m", "ascend_ref", "fuzz", "--cases", "1"],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 2, got.stderr
    assert got.stderr.count("\n") == 1 and str(path) in got.stderr and "ub_bytes" in got.stderr


def test_products_that_disagree_on_a_dst_dtype_pair_name_the_real_file(tmp_path, monkeypatch):
    """Two products pairing one source dtype with different dst dtypes (the result layouts
    need one): the error names the loaded file's real path, not configs/chips/<id>.toml."""
    from ascend_ref import registry

    folder = tmp_path / "cfg" / "chips"
    folder.mkdir(parents=True)
    a950 = (SHIPPED / "ascend950.toml").read_text()
    shutil.copy(SHIPPED / "ascend950.toml", folder / "ascend950.toml")
    other = a950.replace('whole_reduce_sum = { int16 = "int32", uint16 = "uint32" }',
                         'whole_reduce_sum = { int16 = "int16", uint16 = "uint32" }', 1)
    other = other.replace('id = "ascend950"', 'id = "zz_other"', 1)
    assert other.count("zz_other") == 1 and "int16 = \"int16\"" in other
    (folder / "zz_other.toml").write_text(other)
    monkeypatch.setenv("ASCEND_REF_CONFIGS", str(folder.parent))
    registry._dst_dtypes.cache_clear()
    try:
        with pytest.raises(ValueError) as e:
            registry.dst_dtype("whole_reduce_sum", "int16")
    finally:
        registry._dst_dtypes.cache_clear()
    msg = str(e.value)
    assert any(str(folder / f) in msg for f in ("ascend950.toml", "zz_other.toml")), msg
    assert "[dst_dtypes] whole_reduce_sum pairs int16" in msg, msg
