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
    # fill values on a product that keeps empty blocks: nothing would read them
    ("[orders]", "[block_fill_values]\nSUM = { float16 = 1 }\n\n[orders]", "block_fill_values",
     "only 'fill' writes them"),
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
    ("ub_bytes = 196608", "ub_byte = 196608", "(the file sets 'ub_byte': misspelt?)"),
    ('product = "Atlas A2 training / inference series"', "", "product"),
    (A2, "", "id is missing"),
    ('id = "atlas_a2"', 'id = "atlas_a2" =', "TOML"),
    ('id = "atlas_a2"', 'id = "atlas_a3"', "id = 'atlas_a3'"),
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


def test_a_dst_dtype_pair_the_engine_does_not_compute_is_refused_where_it_loads(tmp_path,
                                                                                 monkeypatch):
    """[dst_dtypes] pairs other than the widening integer sums (int16 -> int32, uint16 ->
    uint32): a float16 -> float32 pair loaded and the sum of 128 ones came back as
    3.1568e-41 (the half bits of 128 in a float32 slot); int16 -> int16 was caught only
    when two products disagreed. Now the file's load says so, naming the real path."""
    folder = tmp_path / "cfg" / "chips"
    folder.mkdir(parents=True)
    a950 = (SHIPPED / "ascend950.toml").read_text()
    pairs = 'whole_reduce_sum = { int16 = "int32", uint16 = "uint32" }'
    assert pairs in a950
    monkeypatch.setenv("ASCEND_REF_CONFIGS", str(folder.parent))
    for bad, said in (('whole_reduce_sum = { int16 = "int16", uint16 = "uint32" }',
                       "int16 = 'int16'"),
                      ('whole_reduce_sum = { float16 = "float32" }', "float16 = 'float32'")):
        (folder / "ascend950.toml").write_text(a950.replace(pairs, bad, 1))
        chips_mod.clear_cache()
        with pytest.raises(ValueError) as e:
            ar.chip("ascend950")
        msg = str(e.value)
        assert type(e.value).__name__ == "ProfileError", msg
        assert str(folder / "ascend950.toml") in msg and "[dst_dtypes] whole_reduce_sum" in msg
        assert said in msg and "'int16': 'int32'" in msg, msg


def _a2_with(tmp_path, monkeypatch, text):
    folder = tmp_path / "cfg" / "chips"
    folder.mkdir(parents=True)
    path = folder / "atlas_a2.toml"
    path.write_text(text)
    monkeypatch.setenv("ASCEND_REF_CONFIGS", str(folder.parent))
    return path


def test_a_fill_table_without_a_listed_dtype_is_refused(tmp_path, monkeypatch):
    """block_fill = "fill" with fill values for float16 only, while reduce_data_block lists
    float32 too: a float32 block with no active lane was filled with 0 (fills.get(dtype, 0))."""
    tables = ('\n[block_fill_values]\nSUM = { float16 = "0" }\nMAX = { float16 = "-inf" }\n'
              'MIN = { float16 = "inf" }\n')
    text = A2.replace('block_fill = "keep"', 'block_fill = "fill"', 1) + tables
    msg = broken(_a2_with(tmp_path, monkeypatch, text), "[block_fill_values] MAX")
    assert "has no float32, which [apis] reduce_data_block lists" in msg, msg
    whole = tables.replace('float16 = "-inf"', 'float16 = "-inf", float32 = "-inf"')
    whole = whole.replace('float16 = "inf"', 'float16 = "inf", float32 = "inf"')
    whole = whole.replace('float16 = "0"', 'float16 = "0", float32 = "0"')
    (tmp_path / "cfg" / "chips" / "atlas_a2.toml").write_text(
        A2.replace('block_fill = "keep"', 'block_fill = "fill"', 1) + whole)
    chips_mod.clear_cache()
    assert ar.chip("atlas_a2").block_fill_values["MAX"]["float32"] == 0xFF800000
    (tmp_path / "cfg" / "chips" / "atlas_a2.toml").write_text(       # rounds to -inf
        A2.replace('block_fill = "keep"', 'block_fill = "fill"', 1)
        + whole.replace('float16 = "-inf"', 'float16 = "-1e9"'))
    chips_mod.clear_cache()
    assert "finite: no rounding to inf" in broken(tmp_path / "cfg" / "chips" / "atlas_a2.toml",
                                                 "[block_fill_values] MAX.float16")


@pytest.mark.parametrize("old, new, field, said", [
    ('"minmax_rules", ', '"minmax_rulez", ', "assumed", "'minmax_rulez', which no field"),
    ("default_nan_f16 = 0xFE00", "default_nan_f16 = 0x3C00", "default_nan_f16",
     "0x3c00 is no NaN"),
    ("default_nan_f16 = 0xFE00", "default_nan_f16 = 0x7C00", "default_nan_f16",
     "0x7c00 is no NaN"),
    ("default_nan_f32 = 0xFFC00000", "default_nan_f32 = 0x3F800000", "default_nan_f32",
     "0x3f800000 is no NaN"),
    ("saturate_default = false", "saturate_default = false\nsaturate_only = true",
     "saturate_default", "true where saturate_only = true"),
    ("ub_bytes = 196608", "ub_bytes = 100", "ub_bytes", "integer in [256,"),
    ("ub_bytes = 196608", "ub_bytes = 196600", "ub_bytes", "a multiple of 32"),
    ('whole_reduce = ["ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE", "ORDER_ONLY_VALUE", '
     '"ORDER_ONLY_INDEX"]', "", "[orders]", "lists whole_reduce_min but no order"),
])
def test_a_value_that_would_mislead_is_refused(tmp_path, monkeypatch, old, new, field, said):
    """Values that loaded and then misled: a misspelt assumption dropped the audit's checks
    of it (verify --audit showed 'minmax_rulez: not exercised' in their place); a default
    NaN of 0x3C00 made inf - inf = 1; saturate_only with saturate_default false made every
    half sum fail with 'saturate = False is not allowed' for a call that passed none."""
    assert said in broken(configs(tmp_path, monkeypatch, old, new), field)


def test_an_empty_configs_folder_is_named(tmp_path, monkeypatch):
    """$ASCEND_REF_CONFIGS naming a folder without chips/*.toml: CHIP_UNKNOWN said only
    "allowed: one of []"."""
    monkeypatch.setenv("ASCEND_REF_CONFIGS", str(tmp_path / "nowhere"))
    with pytest.raises(ar.ConstraintError) as e:
        ar.chip("atlas_a2")
    msg = str(e.value)
    assert str(tmp_path / "nowhere" / "chips") in msg and "$ASCEND_REF_CONFIGS" in msg, msg


def test_a_product_of_the_users_own_runs_on_the_oracle_under_its_profile(tmp_path, monkeypatch):
    """A copy of atlas_a2.toml as my_chip.toml: the JAX path took it, the oracle (whose product
    table has no my_chip) answered CHIP_UNKNOWN, so a campaign on it reported every case as a
    mismatch (and every register reading, through the oracle's getters). Now the oracle takes
    the loaded profile as its row: the outcome and readings equal atlas_a2's."""
    from ascend_ref import case as case_mod, explain
    from ascend_ref.fuzz.compare import readings

    folder = tmp_path / "cfg" / "chips"
    folder.mkdir(parents=True)
    shutil.copy(SHIPPED / "atlas_a2.toml", folder / "atlas_a2.toml")
    (folder / "my_chip.toml").write_text(A2.replace('id = "atlas_a2"', 'id = "my_chip"', 1))
    monkeypatch.setenv("ASCEND_REF_CONFIGS", str(folder.parent))
    assert case_mod.oracle_chip("atlas_a2") == "atlas_a2"
    assert case_mod.oracle_chip("no_such_chip") == "no_such_chip"
    assert case_mod.oracle_chip("my_chip") is ar.chip("my_chip")
    mine = explain.make_case("whole_reduce_max", chip="my_chip", repeat=3, seed=4)
    a2 = explain.make_case("whole_reduce_max", chip="atlas_a2", repeat=3, seed=4)
    got, want = case_mod.run_oracle(mine, spr=True), case_mod.run_oracle(a2, spr=True)
    assert got.code is None and want.code is None
    assert (got.ub == want.ub).all() and (got.written == want.written).all()
    assert readings(mine, got) == readings(a2, want)
    assert readings(mine, got)["max_min.float16"] != "CHIP_UNKNOWN"
    assert readings(mine, got) == readings(mine, case_mod.run_jax(mine, spr=True))
