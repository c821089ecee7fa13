"""The two implementations agree on every argument *type*, not only on values: valid drawn
cases with one argument replaced by the same number in another form (numpy scalars of
several widths, numpy and JAX 0-d arrays, floats, bools, strings, one-element arrays, the
value past 32 bits or negated; mask lists of numpy scalars or 0-d arrays, tuples, floats;
saturate and cal_index as ints, arrays, strings; option spellings) get one outcome code
from the JAX path (``run_jax``), the oracle (``run_oracle``) and ``run_cases``, and the
same bytes where they run.

Found by this sweep (2026-12-06), each disagreeing before: a concrete JAX scalar as a
parameter, address or size (the JAX path ran it, the oracle said BAD_ARGUMENT); a mask list
of 0-d numpy arrays (the oracle ran it, the JAX path said BAD_ARGUMENT); a bit-mode mask
given to RepeatReduceSum (continuous only) with malformed words (MASK_BITS on the JAX
path, BAD_ARGUMENT in the oracle, which refuses any bit-mode form first); ``cal_index`` as
``np.int64(1)`` or a 0-d integer array (BAD_ARGUMENT on the JAX path only); a
ReduceDataBlock ``reduce_type`` that is not a string or member (an int, None, bytes: the
oracle said REDUCE_TYPE, the JAX path BAD_ARGUMENT, as for an order)."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Tuple

import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref.case import Case, run_jax, run_oracle
from ascend_ref.fuzz import RngDraw, draw_case


def _forms(v: int) -> List[Any]:
    """``v`` in other forms: the same number as other types, then other numbers."""
    out = [np.int64(v), np.int32(v), np.array(v), float(v), np.float32(v), np.bool_(v == 1),
           str(v), jnp.int32(v), np.array([v]), v + 2**32, -v - 1]
    if 0 <= v < 65536:
        out.append(np.uint16(v))
    if -32768 <= v < 32768:
        out.append(np.array(v, np.int16))
    if v == 1:
        out.append(True)
    return out


def _variants(base: Case) -> List[Tuple[str, Any, Case]]:
    """``(what, value, case)``: ``base`` with one argument in another form."""
    rep = dataclasses.replace
    out: List[Tuple[str, Any, Case]] = []
    for k, v in base.params.items():
        if isinstance(v, int):
            out += [(k, o, rep(base, params={**base.params, k: o})) for o in _forms(v)]
    for t, (a, s) in base.tensors.items():
        out += [(f"{t}.addr", o, rep(base, tensors={**base.tensors, t: (o, s)}))
                for o in _forms(a)]
        out += [(f"{t}.size", o, rep(base, tensors={**base.tensors, t: (a, o)}))
                for o in _forms(s)]
    if isinstance(base.mask, int):
        out += [("mask", o, rep(base, mask=o)) for o in _forms(base.mask)]
    elif isinstance(base.mask, (list, tuple)):
        words = list(base.mask)
        for o in (list(map(np.uint64, words)), list(map(np.array, words)), tuple(words),
                  [float(w) for w in words], np.array(words, np.uint64), words[:1],
                  words + [0]):
            out.append(("mask", o, rep(base, mask=o)))
    for o in (1, 0, np.int64(1), np.array(0), "true", 0.0, None):
        out.append(("saturate", o, rep(base, saturate=o)))
    if isinstance(base.option, bool):
        out += [("cal_index", o, rep(base, option=o)) for o in _forms(int(base.option))]
    elif base.option is not None:
        name = getattr(base.option, "name", str(base.option))
        for o in (name.lower(), "Enum." + name, name.replace("ORDER_", ""), 1, None):
            out.append(("option", o, rep(base, option=o)))
    return out


def _sweep(seeds: range) -> int:
    checked = 0
    for seed in seeds:
        base = draw_case(RngDraw(seed, 0), max_ub=1 << 14)
        if run_oracle(base).code is not None:
            continue
        variants = _variants(base)
        batched = ar.run_cases([c for _, _, c in variants])
        for (what, value, case), got in zip(variants, batched):
            a, b = run_jax(case), run_oracle(case)
            where = f"{base.api} {what} = {value!r} ({type(value).__name__})"
            assert a.code == b.code == got.code, \
                f"{where}: jax {a.code}, oracle {b.code}, run_cases {got.code}"
            if a.code is None:
                assert np.array_equal(a.ub, b.ub) and np.array_equal(a.ub, got.ub), where
            checked += 1
    return checked


def test_every_argument_form_gets_one_code_on_every_path():
    # the variants of 6 valid drawn cases (instructions and products vary with the seed)
    assert _sweep(range(6)) > 300


@pytest.mark.slow
def test_every_argument_form_gets_one_code_on_every_path_campaign():
    assert _sweep(range(6, 106)) > 5000


@pytest.mark.parametrize("mask", [[1], [1, 0], np.array([1]), (3,), [2**70, 0],
                                  np.array([1, 0, 0, 0], np.uint32), [np.array(1)]])
def test_a_bit_mode_mask_on_a_continuous_only_api_is_bad_argument_first(mask):
    """RepeatReduceSum takes ``const int32_t mask`` only: any bit-mode form is BAD_ARGUMENT
    before its words are judged (MASK_BITS was the JAX path's answer to malformed words)."""
    case = Case("repeat_reduce_sum", "atlas_a2", "float16", None, 128,
                {"repeat": 2, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"dst": (1024, 16), "src": (0, 256)}, np.zeros(2048, np.uint8))
    assert run_oracle(case).code is None
    case = dataclasses.replace(case, mask=mask)
    assert run_jax(case).code == run_oracle(case).code == ar.run_cases([case])[0].code \
        == ar.Code.BAD_ARGUMENT


def test_a_mask_list_of_0d_arrays_is_the_words_they_hold():
    ub = ar.store(ar.new_ub("atlas_a2"), 0, np.arange(128, dtype=np.float16))
    call = lambda m: ar.ascendc.whole_reduce_sum(  # noqa: E731
        ub, ar.Tensor(1024, "half", 16), ar.Tensor(0, "half", 128), m, 1, 1, 1, 8,
        chip="atlas_a2")
    words = [0xF0, 2**63]
    got = call([jnp.int32(words[0]), np.array(words[1], np.uint64)])
    assert np.array_equal(np.asarray(got), np.asarray(call(words)))
    assert ar.load(got, 1024, "float16", 1).tolist() == [4.0 + 5 + 6 + 7 + 127]


@pytest.mark.parametrize("option, code", [(1, ar.Code.BAD_ARGUMENT), (None, ar.Code.BAD_ARGUMENT),
                                          (b"SUM", ar.Code.BAD_ARGUMENT),
                                          ("bogus", ar.Code.REDUCE_TYPE),
                                          (ar.ReduceOrder.ORDER_VALUE_INDEX, ar.Code.REDUCE_TYPE),
                                          ("max", None)])
def test_a_reduce_type_that_is_not_a_name_is_a_malformed_argument(option, code):
    """Like an order: a name or member it does not know is REDUCE_TYPE; an int, None or bytes
    is BAD_ARGUMENT (the oracle said REDUCE_TYPE to those; found by the campaign above)."""
    case = Case("reduce_data_block", "atlas_a2", "float16", option, 128,
                {"repeat": 2, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
                {"dst": (2048, 16), "src": (0, 512)}, np.zeros(4096, np.uint8))
    assert run_jax(case).code == run_oracle(case).code == ar.run_cases([case])[0].code == code
