"""Unit tests of :mod:`ascend_ref.params`: the typed parameter pytree of one call.

Expected values come from the arguments the test itself passes (addresses, sizes, repeat
counts, mask lane counts), never from the code under test.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import engine, registry
from ascend_ref.constraints import Code
from ascend_ref.params import ChipFacts, Diag, Params

CHIP = "atlas_a2"


def _prep(repeat=3, mask=128, src=0, dst=1024, rep_stride=8, api="whole_reduce_sum"):
    ins = registry.lookup(api)
    tensors = {"dst": ar.Tensor(dst, "half", 64), "src": ar.Tensor(src, "half", 2048)}
    params = {"repeat": repeat, "dst_rep_stride": 1, "src_blk_stride": 1,
              "src_rep_stride": rep_stride}
    return ins.prepare(ar.new_ub(CHIP), tensors, mask, params, chip=CHIP)


def _tik_prep(repeat=2):
    ins = registry.lookup("vec_reduce_add")
    tensors = {"dst": ar.Tensor(2048, "half", 16), "src": ar.Tensor(0, "half", 1024),
               "work_tensor": ar.Tensor(2560, "half", 64)}
    return ins.prepare(ar.new_ub(CHIP), tensors, 128, {"repeat": repeat, "src_rep_stride": 8},
                       chip=CHIP)


def test_fields_hold_the_arguments_given():
    p = _prep(repeat=5, mask=77, src=64, dst=1536, rep_stride=9).p
    assert isinstance(p, Params) and isinstance(p.chip, ChipFacts)
    assert (int(p.repeat), int(p.src_rep_stride), int(p.dst_rep_stride)) == (5, 9, 1)
    assert (int(p.src.addr), int(p.src.size)) == (64, 2048)
    assert (int(p.tensor("dst").addr), int(p.tensor("dst").size)) == (1536, 64)
    assert np.asarray(p.mask).tolist() == [77, 0, 0, 0] and bool(p.mask_count)
    assert p.work_tensor is None and p.option is None and p.diag is None
    assert int(p.arg("src_rep_stride")) == 9
    with pytest.raises(KeyError):
        p.tensor("work_tensor")
    # TIK: no block / dst stride, a work tensor
    q = _tik_prep().p
    assert q.src_blk_stride is None and q.dst_rep_stride is None
    assert int(q.tensor("work_tensor").addr) == 2560
    with pytest.raises(KeyError):
        q.arg("dst_rep_stride")


def test_pytree_round_trip_keeps_structure_and_values():
    p = _prep(repeat=7).p
    leaves, tree = jax.tree_util.tree_flatten(p)
    back = jax.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(back, Params) and back.src == p.src and int(back.repeat) == 7
    assert jax.tree_util.tree_structure(back) == tree
    # absent fields (None) are empty subtrees, not leaves, and come back as None
    assert p.work_tensor is None and back.work_tensor is None and back.option is None
    assert len(leaves) == tree.num_leaves and jax.tree_util.tree_leaves(p.work_tensor) == []
    doubled = jax.tree_util.tree_map(lambda x: np.asarray(x).astype(np.int64) * 2, p)
    assert int(doubled.repeat) == 14 and int(doubled.tensor("dst").addr) == 2048
    # a call's structure does not depend on its values (one compiled kernel)
    assert jax.tree_util.tree_structure(_prep(repeat=1, mask=[1, 2]).p) == tree


def test_vmap_over_stacked_params():
    masks, repeats = [128, 5, 64], [1, 4, 9]
    ps = [_prep(repeat=r, mask=m).p for r, m in zip(repeats, masks)]
    stacked = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *ps)
    assert np.asarray(stacked.repeat).tolist() == repeats
    lanes = jax.vmap(lambda p: jnp.sum(engine.mask_lanes(p, 128)))(stacked)
    assert np.asarray(lanes).tolist() == masks
    reads = jax.vmap(lambda p: p.repeat * p.src_rep_stride * 32 + p.tensor("src").addr)(stacked)
    assert np.asarray(reads).tolist() == [r * 8 * 32 for r in repeats]


def test_the_kernel_runs_a_stacked_batch_and_reports_per_case_status():
    good, bad = _prep(repeat=2), _prep(repeat=2, dst=1025)      # a half slot at an odd byte
    ins, spec = good.ins, good.spec
    ps = jax.tree_util.tree_map(lambda *xs: np.stack(xs), good.p, bad.p)
    ubs = jnp.stack([engine.pad_ub(good.ub)] * 2)
    _, status, diag, _, _ = engine.batched(ins, spec, ubs, ps)
    assert np.asarray(status).tolist() == [0, int(Code.ALIGN)]
    assert isinstance(diag, Diag) and np.asarray(diag.need_exact).shape == (2,)


def test_a_traced_call_reads_traced_leaves():
    ub = ar.store(ar.new_ub(CHIP), 0, np.ones(2048, np.float16))

    def run(r, m):
        _, info = ar.ascendc.whole_reduce_sum(ub, ar.Tensor(8192, "half", 64),
                                              ar.Tensor(0, "half", 2048), m, r, 1, 1, 8,
                                              chip=CHIP, return_info=True)
        return info.status

    f = jax.jit(run)
    assert int(f(jnp.int32(3), jnp.int32(128))) == 0
    assert int(f(jnp.int32(256), jnp.int32(128))) == int(Code.REPEAT_RANGE)
    assert int(f(jnp.int32(3), jnp.int32(129))) == int(Code.MASK_RANGE)


def test_overridden_replaces_named_values():
    p = _prep(repeat=3).p
    q = p.overridden({"repeat": 2**40, "src.addr": -(2**33), "ub_base": 64})
    assert (q.repeat, q.tensor("src").addr, q.ub_base) == (2**40, -(2**33), 64)
    assert int(q.tensor("src").size) == 2048 and int(p.repeat) == 3    # p itself unchanged


def test_profile_fields_are_typed_chip_facts():
    ins = registry.lookup("pair_reduce_sum")
    tensors = {"dst": ar.Tensor(1024, "half", 64), "src": ar.Tensor(0, "half", 128)}
    params = {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    for chip in ("atlas_a2", "ascend950"):
        p = ins.prepare(ar.new_ub(chip), tensors, 128, params, chip=chip).p
        want = ar.chip(chip).facts["pair_masked_pair"]
        for f in ins.profile_fields:
            assert f.name in p.chip.fields
        holds = [bool(ins.profile_fields[0].holds(p, c)) for c in ins.profile_fields[0].choices]
        assert holds == [c == want for c in ins.profile_fields[0].choices]


# ------------------------------------------------------------------ the constraint list -----

def _dtypes(ins):
    return sorted({d for c in ar.chips() for d in ar.chip(c).dtypes(ins.name)})


def _module_codes(ins):
    """Codes named in the instruction's own source file (``Code.X``): each must be listed."""
    import ast
    import importlib
    import inspect

    src = inspect.getsource(importlib.import_module(ins.kernel.effects.__module__))
    return {Code[n.attr] for n in ast.walk(ast.parse(src))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "Code"}


@pytest.mark.parametrize("name", registry.names())
def test_the_constraint_list_is_complete(name):
    ins = registry.lookup(name)
    listed = {c.code for o in ins.options() for d in _dtypes(ins) for c in ins.rules(o, d)}
    # every call can break these (docs/SEMANTICS.md §H, SPEC §6)
    every = {Code.CHIP_UNKNOWN, Code.API_UNSUPPORTED, Code.DTYPE_UNSUPPORTED,
             Code.DTYPE_MISMATCH, Code.MASK_RANGE, Code.MASK_BITS, Code.MASK_ZERO,
             Code.REPEAT_RANGE, Code.STRIDE_RANGE, Code.ALIGN, Code.UB_BOUNDS,
             Code.TENSOR_BOUNDS, Code.OVERLAP, Code.BAD_ARGUMENT}
    if ins.kernel.count_form:       # level-2 count form: no mask, no stride parameter
        every -= {Code.MASK_RANGE, Code.MASK_BITS, Code.MASK_ZERO, Code.STRIDE_RANGE}
    want = set(every) | set(ins.codes) | set(ins.assumptions.values())
    if ins.option is not None:
        want.add(getattr(ins.option, "code", Code.BAD_ARGUMENT))
    if "dst_rep_stride" in ins.params:
        want.add(Code.DST_STRIDE_ZERO)
    if ins.saturating:
        want.add(Code.SATURATE_DTYPE)
    if ins.work_need is not None:
        want.add(Code.WORK_SIZE)
    assert want <= listed, sorted(c.name for c in want - listed)
    assert Code.OK not in listed


def _listed(ins):
    return {c.code for o in ins.options() for d in _dtypes(ins) for c in ins.rules(o, d)}


def test_every_code_an_instruction_file_names_is_listed():
    """A code named in an instruction file (a rule, a check, an alias's check) is in the list
    of one of the instructions that file declares."""
    by_module = {}
    for ins in registry.all():
        by_module.setdefault(ins.kernel.effects.__module__, []).append(ins)
    for mod, group in by_module.items():
        named = _module_codes(group[0])
        listed = set().union(*[_listed(i) for i in group])
        assert named <= listed, (mod, sorted(c.name for c in named - listed))


@pytest.mark.parametrize("name", registry.names())
def test_the_constraint_list_is_ordered(name):
    ins = registry.lookup(name)
    for o in ins.options():
        for d in _dtypes(ins):
            lst = ins.rules(o, d)
            stages = [c.stage for c in lst]
            assert stages == sorted(stages, key=lambda s: s != "host"), "host checks first"
            traced = [int(c.code) for c in lst if c.stage == "traced"]
            assert traced == sorted(traced) and traced, "traced rules by code"
            assert all(c.rule is not None for c in lst if c.stage == "traced")
            assert all(c.doc for c in lst)


def _mutations(case):
    """Host-stage faults of a valid call, each with the (code, param) it raises alone."""
    import dataclasses

    ins = case.instruction
    out = {"chip": (dict(chip="atlas_z9"), (Code.CHIP_UNKNOWN, "chip")),
           "ub": (dict(ub=np.zeros(16, np.float32)), (Code.BAD_ARGUMENT, "ub")),
           "dtype": (dict(dtype="int32"), (Code.DTYPE_UNSUPPORTED, f"{ins.operands[0]}.dtype")),
           "mask": (dict(mask=1.5), (Code.BAD_ARGUMENT, "mask")),
           "repeat": (dict(params={**case.params, "repeat": 1.5}),     # the public name
                      (Code.BAD_ARGUMENT, ins.repeat_param))}
    if ins.kernel.count_form:              # level-2 count form: no mask parameter
        del out["mask"]
    if ins.option is not None:
        flag = isinstance(ins.option, registry.FlagOption)
        out["option"] = (dict(option=2 if flag else "NOPE"),
                         (Code.BAD_ARGUMENT if flag else ins.option.code, ins.option.key))
    if ins.saturating:
        out["saturate"] = (dict(saturate="yes"), (Code.BAD_ARGUMENT, "saturate"))
    return {k: (lambda c, kw=kw: dataclasses.replace(c, **kw), want)
            for k, (kw, want) in out.items()}


def _raised(case):
    from ascend_ref.case import JAX

    with pytest.raises(ar.ConstraintError) as e:
        case.call(JAX)
    return e.value.code, e.value.param


@pytest.mark.parametrize("name", registry.names())
def test_host_checks_raise_in_list_order(name):
    """Two host-stage faults at once: the call reports the one listed first."""
    import itertools

    from ascend_ref import explain

    ins = registry.lookup(name)
    case = explain.make_case(name, repeat=2)
    keys = [(c.code, c.param) for c in ins.rules(case.option, case.dtype) if c.stage == "host"]
    muts = _mutations(case)
    for k, (f, want) in muts.items():
        assert want in keys, (k, want)
        assert _raised(f(case)) == want, k
    for (a, (fa, wa)), (b, (fb, wb)) in itertools.combinations(muts.items(), 2):
        first = wa if keys.index(wa) < keys.index(wb) else wb
        assert _raised(fb(fa(case))) == first, (a, b)


@pytest.mark.parametrize("name", registry.names())
def test_traced_faults_are_listed(name):
    """A traced fault raises a (code, param) that the call's list holds."""
    import dataclasses

    from ascend_ref import explain

    ins = registry.lookup(name)
    case = explain.make_case(name, repeat=2)
    keys = {(c.code, c.param) for c in ins.rules(case.option, case.dtype) if c.stage == "traced"}
    a, n = case.tensors["src"]
    faults = [dataclasses.replace(case, tensors={**case.tensors, "src": (a + 2, n)}),
              dataclasses.replace(case, tensors={**case.tensors, "src": (a, 1)}),
              dataclasses.replace(case, params={**case.params, "src_rep_stride": 70000})]
    want = [Code.ALIGN, Code.TENSOR_BOUNDS, Code.STRIDE_RANGE]
    if ins.kernel.count_form:              # no stride parameter: the count instead
        faults[2] = dataclasses.replace(case, params={**case.params, "repeat": 10**6})
        want[2] = Code.REPEAT_RANGE
    seen = [_raised(c) for c in faults]
    assert [c for c, _ in seen] == want
    assert all(s in keys for s in seen), seen


def test_two_traced_faults_report_the_lower_code_the_list_holds_first():
    from ascend_ref import explain

    ins = registry.lookup("whole_reduce_sum")
    case = explain.make_case("whole_reduce_sum", repeat=2)
    a, n = case.tensors["src"]
    import dataclasses

    bad = dataclasses.replace(case, tensors={**case.tensors, "src": (a + 2, 1)},
                              params={**case.params, "src_rep_stride": 70000})
    code, param = _raised(bad)
    traced = [(c.code, c.param) for c in ins.rules(None, case.dtype) if c.stage == "traced"]
    assert (code, param) == (Code.STRIDE_RANGE, "src_rep_stride")
    assert traced.index((code, param)) < traced.index((Code.ALIGN, "src.addr"))


def test_reduce_pair_elem_checks_its_reduce_type_first():
    ins = registry.lookup("pair_reduce_sum")
    assert (ins.rules()[0].code, ins.rules()[0].param) == (Code.REDUCE_TYPE, "reduce_type")
    with pytest.raises(ar.ConstraintError) as e:
        ar.ascendc.reduce_pair_elem(np.zeros(4, np.float32), None, None, 1.5, 1, 1, 1, 8,
                                    chip="atlas_z9", reduce_type="MAX")
    assert e.value.code == Code.REDUCE_TYPE


def test_explain_prints_the_list():
    from ascend_ref import explain

    text = explain.constraints("vec_reduce_min", True, "float32")
    lines = text.splitlines()
    assert lines[0].startswith("vec_reduce_min (float32, cal_index=")
    assert lines[-1].split()[:2] == ["traced", "INDEX_OVERFLOW"]
    assert sum(line.startswith("host") for line in lines) > 10
