"""Instruction-declared profile fields (registry.ProfileField): a per-product rule only one
instruction has lives in the profiles as an instruction fact; the registry checks every
profile against the declarations."""

import dataclasses
import types

import pytest

import ascend_ref as ar
from ascend_ref import registry
from ascend_ref.chips import SHARED_KEYS, _load

BASE = """
id = "{id}"
product = "test product"
ub_bytes = 4096
default_nan_f16 = 0xFE00
default_nan_f32 = 0xFFC00000
saturate_default = false
fp32_ftz = false
zero_mask = "nop"
zero_repeat = "nop"
dst_rep_stride_zero = true
block_fill = "keep"
{extra}
[apis]
{apis}
"""

FIELD = registry.ProfileField("widget_rule", ("keep", "zero"), "what a widget does")
WIDGET = types.SimpleNamespace(name="widget", profile_fields=(FIELD,), assumptions={},
                               profile_rules=(), option=None)
OTHER = types.SimpleNamespace(name="other", profile_fields=(), assumptions={}, profile_rules=(),
                              option=None)


def profile(tmp_path, extra="", apis='widget = ["float16"]', pid="p1"):
    path = tmp_path / f"{pid}.toml"
    path.write_text(BASE.format(id=pid, extra=extra, apis=apis))
    return _load(path)


def test_a_non_shared_key_is_an_instruction_fact(tmp_path):
    p = profile(tmp_path, 'widget_rule = "zero"')
    assert dict(p.facts) == {"widget_rule": "zero"}
    assert p.fact("widget_rule") == "zero" and p.widget_rule == "zero"
    b = p.behaviour                                   # the jit key carries it
    assert b.fact("widget_rule") == "zero" and b.widget_rule == "zero"
    q = dataclasses.replace(p, facts={"widget_rule": "keep"})
    assert q.behaviour != b and q.widget_rule == "keep"
    with pytest.raises(AttributeError):
        p.no_such_field
    registry.check_profile(p, [WIDGET, OTHER])


@pytest.mark.parametrize("extra, apis, message", [
    ('widgt_rule = "zero"', 'widget = ["float16"]', "neither a shared profile field"),
    ('widget_rule = "drop"', 'widget = ["float16"]', "allowed ['keep', 'zero']"),
    ('', 'widget = ["float16"]', "does not set 'widget_rule'"),
    ('widget_rule = "zero"', 'gadget = ["float16"]', "not a registered instruction"),
])
def test_profiles_are_checked_against_the_declarations(tmp_path, extra, apis, message):
    p = profile(tmp_path, extra, apis)
    with pytest.raises(ValueError, match="p1.toml") as e:
        registry.check_profile(p, [WIDGET, OTHER])
    assert message in str(e.value)


def test_a_product_without_the_instruction_needs_no_fact(tmp_path):
    registry.check_profile(profile(tmp_path, "", 'widget = []'), [WIDGET, OTHER])


def test_the_shipped_profiles_pass():
    for c in ar.chips():
        registry.check_profile(ar.chip(c), registry.all())
        assert not set(ar.chip(c).facts) & set(SHARED_KEYS)
    for name, f in registry.declared_fields().items():
        assert f.name == name and len(f.choices) >= 2 and f.doc


def test_a_declared_field_is_traced_kernel_data(tmp_path):
    """Kernels read a declared field as ``p.chip.fields[name]`` (the index of the product's
    choice), like every product rule: no recompilation per product."""
    import jax
    import jax.numpy as jnp

    from ascend_ref.engine import product_params

    zero = profile(tmp_path, 'widget_rule = "zero"')
    keep = profile(tmp_path, 'widget_rule = "keep"', pid="p2")
    pz = product_params(zero, "float16", "", [FIELD])
    pk = product_params(keep, "float16", "", [FIELD])
    assert int(pz.fields["widget_rule"]) == 1 and int(pk.fields["widget_rule"]) == 0
    assert "widget_rule" not in product_params(zero, "float16").fields
    f = jax.jit(lambda chip: jnp.where(FIELD.holds(chip, "zero"), 7, 3))
    assert int(f(pz)) == 7
    assert int(f(pk)) == 3
