"""The oracle's own product table against the JAX path's ``configs/chips/*.toml`` profiles.

The two are written separately (the oracle restates the documentation with a source per
row); this test compares them field by field, so a wrong TOML value (or a wrong row) fails
here instead of being shared by both sides of every fuzz campaign.
"""

import ast
import dataclasses
from pathlib import Path

import pytest

import ascend_ref as ar
from ascend_ref import registry
from ascend_ref.chips import API_NAMES
from ascend_ref.oracle._products import PRODUCTS, product

FIELDS = ("ub_bytes", "orders", "zero_mask", "zero_repeat", "dst_rep_stride_zero", "block_fill",
          "saturate_default", "fp32_ftz", "default_nan_f16", "default_nan_f32",
          "saturate_only", "add_order", "minmax_nan")            # the last three: issue 12


def differences(prof, row) -> list:
    """Every field where a TOML profile and an oracle row disagree: ``[(field, toml, oracle)]``."""
    out = [(f, getattr(prof, f), getattr(row, f)) for f in FIELDS
           if getattr(prof, f) != getattr(row, f)]
    for api in API_NAMES:
        if tuple(prof.dtypes(api)) != tuple(row.dtypes(api)):
            out.append((f"apis.{api}", prof.dtypes(api), row.dtypes(api)))
    # instruction-declared fields: set exactly on the products that have the instruction
    for name, f in registry.declared_fields().items():
        ins = [i for i in registry.all() if f in i.profile_fields][0]
        if prof.dtypes(ins.name) or name in prof.facts:
            if prof.facts.get(name) != getattr(row, name):
                out.append((name, prof.facts.get(name), getattr(row, name)))
    # the (dst, src) pair tables (Ascend 950 ReduceRepeat<SUM>: int16 -> int32, ...)
    toml_pairs = {a: dict(v) for a, v in prof.dst_dtypes.items() if v}
    row_pairs = {a: dict(v) for a, v in row.dst_dtypes.items() if v}
    if toml_pairs != row_pairs:
        out.append(("dst_dtypes", toml_pairs, row_pairs))
    toml_fill = {rt: dict(v) for rt, v in prof.block_fill_values.items()}
    row_fill = {rt: dict(v) for rt, v in row.fill_values.items()}
    if toml_fill != row_fill:
        out.append(("block_fill_values", toml_fill, row_fill))
    return out


def test_same_products():
    assert set(PRODUCTS) == set(ar.chips())


@pytest.mark.parametrize("chip_id", sorted(PRODUCTS))
def test_oracle_row_matches_the_profile_field_by_field(chip_id):
    assert differences(ar.chip(chip_id), PRODUCTS[chip_id]) == []


@pytest.mark.parametrize("chip_id", sorted(PRODUCTS))
def test_every_row_names_its_sources(chip_id):
    row = PRODUCTS[chip_id]
    for f in ("apis", "orders", "zero_mask", "zero_repeat", "dst_rep_stride_zero", "block_fill",
              "ub_bytes", "saturate_default", "fp32_ftz", "default_nan_f16", "default_nan_f32",
              "saturate_only", "add_order", "minmax_nan", "pair_masked_pair",
              "pair_masked_lane", "int_sum_overflow", "dst_dtypes"):
        assert row.sources.get(f, "").strip(), (chip_id, f)


@pytest.mark.parametrize("change", [
    {"ub_bytes": 196608 + 32}, {"zero_mask": "nop"}, {"dst_rep_stride_zero": False},
    {"orders": ("ORDER_VALUE_INDEX",)}, {"default_nan_f16": 0x7E00}, {"fp32_ftz": True},
    {"block_fill_values": {"SUM": {"float16": 0, "float32": 0},
                           "MAX": {"float16": 0xFBFF, "float32": 0xFF800000},
                           "MIN": {"float16": 0x7BFF, "float32": 0x7F800001}}},
    {"apis": {**{a: ar.chip("atlas_200i_500_a2").dtypes(a) for a in API_NAMES},
              "reduce_data_block": ("float32",)}},
    {"facts": {**ar.chip("atlas_200i_500_a2").facts, "pair_masked_pair": "keep"}},
    {"facts": {**ar.chip("atlas_200i_500_a2").facts, "pair_masked_lane": "passthrough"}},
    {"facts": {**ar.chip("atlas_200i_500_a2").facts, "int_sum_overflow": "saturate"}},
    {"dst_dtypes": {"whole_reduce_sum": {"float16": "float32"}}},
])
def test_a_wrong_profile_value_is_caught(change):
    prof = dataclasses.replace(ar.chip("atlas_200i_500_a2"), **change)
    diffs = differences(prof, PRODUCTS["atlas_200i_500_a2"])
    assert len(diffs) == 1, diffs


#: what the scalar oracle may import besides itself: the standard library it needs, numpy and
#: the status codes (the one name it shares with the JAX path, so both report the same Code)
ORACLE_MAY_IMPORT = ("__future__", "dataclasses", "typing", "math", "numpy", "struct",
                     "ascend_ref.constraints")


def _imports(source: str, package: str) -> list:
    """Every module ``source`` (a module of ``package``) imports, absolute names: relative
    imports resolved, imports inside functions included, and ``importlib.import_module`` /
    ``__import__`` calls as the module they name (or ``"?"`` for a computed name)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                out.append(".".join(base + ([node.module] if node.module else [])))
            else:
                out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr",
                                                     getattr(node.func, "id", None)) in \
                ("import_module", "__import__"):
            arg = node.args[0] if node.args else None
            out.append(arg.value if isinstance(arg, ast.Constant) else "?")
    return out


def test_the_oracle_reads_its_own_table_not_the_profiles():
    folder = Path(ar.__file__).parent / "oracle"
    paths = sorted(folder.glob("*.py"))
    assert {p.name for p in paths} >= {"__init__.py", "_api.py", "_fp.py", "_products.py"}
    for path in paths:
        for module in _imports(path.read_text(), "ascend_ref.oracle"):
            assert module in ORACLE_MAY_IMPORT or module.startswith("ascend_ref.oracle"), \
                (path.name, module)
    # the check itself sees relative, nested and dynamic imports of the JAX path
    sneaky = ("from ..chips import chip\n"
              "def f():\n    from ascend_ref import engine\n"
              "import importlib\nimportlib.import_module('ascend_ref.batch')\n"
              "from . import _fp\n")
    bad = [m for m in _imports(sneaky, "ascend_ref.oracle")
           if m not in ORACLE_MAY_IMPORT and not m.startswith("ascend_ref.oracle")]
    assert sorted(bad) == ["ascend_ref", "ascend_ref.batch", "ascend_ref.chips", "importlib"], bad
    # an unknown product is the oracle's own CHIP_UNKNOWN, naming the table
    from ascend_ref import oracle

    with pytest.raises(oracle.OracleError, match="product table") as e:
        oracle.whole_reduce_sum(ar.new_ub("atlas_a2"), 8, (0, 8), (0, 128), 1, 1, 1, 8,
                                chip="no_such_chip")
    assert e.value.code == ar.Code.CHIP_UNKNOWN
    assert product("atlas_a2") is PRODUCTS["atlas_a2"]


def test_fill_values_are_the_documented_numbers():
    import numpy as np

    row = PRODUCTS["atlas_200i_500_a2"]
    as_f16 = lambda b: float(np.array([b], np.uint16).view(np.float16)[0])  # noqa: E731
    assert as_f16(row.fill_bits("MAX", "float16")) == -65504.0
    assert as_f16(row.fill_bits("MIN", "float16")) == 65504.0
    assert np.isinf(as_f16(PRODUCTS["ascend950"].fill_bits("MIN", "float16")))
