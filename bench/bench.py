"""Throughput of the batched reference against baselines measured in the same run.

Conditions (printed with the results): issue 11's table — B = 256 cases at R = 255 (each
case a ~66 KB window, 17 MB in all; the 64 cases ``--quick`` used to run there were 4 MB, a
copy baseline of another kind), 2048 at R = 16 and 8192 at R = 1 (``--quick``: a quarter of
those two; R = 255 keeps 256 cases); standard-normal data; the machine's load average before
and after (ratios are taken within one run, but a loaded machine slows both sides unevenly).

For each registered instruction (issue 11's rows first, then every other instruction at
its default option; float16 and float32 on the first product that has them: :func:`configs`)
and R = 1, 16, 255 repeats with realistic strides (block stride 1, repeat stride 8) and full
masks, the call's tensors laid out from the instruction's declaration (:func:`layout`), one
run measures:

* ``batch``    — cases/s of ``ascend_ref.run_batch`` (steady state, compiled; measured in
                 turns with ``copy`` and ``np.sum``, :func:`_in_turns`: the best of 7
                 rounds each) on an input that starts at a 64-byte boundary (the CPU
                 backend reads it in place);
* ``unaligned``— the same on the same bytes 16 bytes off such a boundary (where a large
                 ``np.zeros`` usually starts: the first chunk is copied before any kernel
                 can start), in the same turns, and its ratio to ``batch``;
* ``cases``    — cases/s of ``ascend_ref.run_cases`` on the same cases as Case objects
                 (grouping, preparation, windows, outcomes with byte masks), warm as
                 run_batch is by its best round: 7 untimed calls, then the best of 7;
* ``oracle``   — cases/s of the package's scalar oracle on the same cases;
* ``numpy``    — cases/s of a vectorised numpy golden of the kind Ascend samples use
                 (gather, then np.min / np.argmin / np.sum per repeat; *not* bit-exact);
* ``copy``     — cases/s of ``np.copyto`` of the cases' windows into a pre-allocated array;
* ``np.sum``   — cases/s of ``np.sum`` over the same lanes (per repeat; not bit-exact);
* ``verify``   — cases/s of ``ascend_ref.verify.verify`` on the same cases written as dump
                 files (regions layout, 1000 cases a file; reading, reference, comparison;
                 the second of two runs);
* ``stacked``  — the same for the cases written as stacked dump files (format version 2,
                 1000 cases a file, tensor regions, uncompressed: one member per column,
                 verified as whole batches), and its ratio to ``batch`` in the same run;
* ``compile``  — seconds to compile the static configuration (first call minus a steady call);
* peak resident memory of the process at the end.

Every ratio compares two figures measured in the same run (the machine may be shared).
Each row starts from fresh compile caches (``ascend_ref.engine.release``), so a release
after ``COMPILE_LIMIT`` compiles never falls inside a row's timed calls.

Usage: ``python bench/bench.py [--quick] [--json PATH] [--only API[:DTYPE]] [--repeats 1,16,255]
[--issue-rows]`` (``--issue-rows``: issue 11's rows only, README's table; ``--markdown JSON``
prints the table of a results file, with ``--issue-rows`` only those rows; ``--targets JSON``
issue 11's targets in a results file: each target's figures, reached or not).
Prints a table and issue 11's targets, and writes JSON.
Not a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

import jax
import numpy as np

import ascend_ref as ar
from ascend_ref import batch_prep, engine, registry

#: issue 11's rows (README's Performance table): (api, chip, dtype, option)
ISSUE_CONFIGS = [
    ("whole_reduce_min", "atlas_a2", "float16", "ORDER_VALUE_INDEX"),
    ("whole_reduce_min", "atlas_a2", "float32", "ORDER_VALUE_INDEX"),
    ("whole_reduce_max", "atlas_a2", "float16", "ORDER_VALUE_INDEX"),
    ("whole_reduce_max", "atlas_a2", "float32", "ORDER_ONLY_VALUE"),
    ("whole_reduce_sum", "atlas_a2", "float16", None),
    ("whole_reduce_sum", "atlas_a2", "float32", None),
    ("reduce_data_block", "atlas_a2", "float16", "SUM"),
    ("reduce_data_block", "atlas_a2", "float32", "SUM"),
    ("reduce_data_block", "atlas_a2", "float16", "MIN"),
    ("reduce_data_block", "atlas_a2", "float32", "MAX"),
    ("vec_reduce_min", "atlas_training", "float16", True),
    ("vec_reduce_max", "atlas_training", "float16", False),
    ("vec_reduce_add", "atlas_training", "float16", None),
    ("vec_reduce_add", "atlas_training", "float32", None),
]
#: where a row of another instruction runs: the first of these products that has its dtype
CHIP_ORDER = ("atlas_a2", "atlas_training")


def configs(every: bool = True) -> list:
    """The bench's rows: issue 11's, then (``every``) each other registered instruction and
    dtype (float16, float32) at its default option, on the first product of
    :data:`CHIP_ORDER` (then the others) that has that dtype for it."""
    out = list(ISSUE_CONFIGS)
    if not every:
        return out
    have = {(api, dtype) for api, _, dtype, _ in out}
    chips = list(CHIP_ORDER) + [c for c in ar.chips() if c not in CHIP_ORDER]
    for ins in registry.all():
        for dtype in ("float16", "float32"):
            chip = next((c for c in chips if dtype in ar.chip(c).dtypes(ins.name)), None)
            if (ins.name, dtype) not in have and chip is not None:
                out.append((ins.name, chip, dtype, ins.canonical_option(None)))
    return out


#: cases per run_batch call by repeat count (issue 11's table: 256 at R = 255)
CASES = {1: 8192, 16: 2048, 255: 256}
CONDITIONS = ("full mask, dst_rep_stride 1 / src_blk_stride 1 / src_rep_stride 8, "
              "standard-normal data; cases per batch: R=1 {r1}, R=16 {r16}, R=255 {r255}")


#: issue 11's targets: (what, the rows it names as (api, dtype, option) or None for every
#: issue row, the repeat counts it is judged at or None for every one measured, the row's
#: field, and its bound: ``(">=", x)`` or ``("<=", x)``)
TARGETS = [
    ("min/max half R = 255 >= 0.3x copy",
     [("whole_reduce_min", "float16", "ORDER_VALUE_INDEX"),
      ("whole_reduce_max", "float16", "ORDER_VALUE_INDEX"), ("vec_reduce_min", "float16", True),
      ("vec_reduce_max", "float16", False), ("reduce_data_block", "float16", "MIN")],
     (255,), "vs_copy", (">=", 0.3)),
    ("half sums R = 255 >= 3x np.sum",
     [("whole_reduce_sum", "float16", None), ("reduce_data_block", "float16", "SUM"),
      ("vec_reduce_add", "float16", None)], (255,), "vs_sum", (">=", 3.0)),
    ("float sums R = 255 >= 0.5x np.sum",
     [("whole_reduce_sum", "float32", None), ("reduce_data_block", "float32", "SUM"),
      ("vec_reduce_add", "float32", None)], (255,), "vs_sum", (">=", 0.5)),
    ("run_cases >= 0.7x run_batch", None, None, "cases_vs_batch", (">=", 0.7)),
    ("verify (regions) >= 0.5x run_batch", None, None, "verify_vs_batch", (">=", 0.5)),
    ("compile <= 3 s", None, None, "compile_s", ("<=", 3.0)),
]


def _key(r: dict) -> tuple:
    """A results row's (api, dtype, option) as :data:`ISSUE_KEYS` spells it."""
    return r["api"], r["dtype"], str(r["option"])


#: issue 11's rows as :func:`_key` gives them
ISSUE_KEYS = {(a, d, str(o)) for a, _, d, o in ISSUE_CONFIGS}


def _api_option(r: dict) -> str:
    """``api`` or ``api OPTION`` of a results row (README's first column)."""
    return r["api"] if str(r["option"]) == "None" else f"{r['api']} {r['option']}"


def _row_name(r: dict) -> str:
    return f"{_api_option(r)} {r['dtype']}"


def targets(rows: list) -> str:
    """Issue 11's targets (:data:`TARGETS`) in a run's rows, one line each and a line per
    repeat count for the targets on every issue row: how many rows reached the target, each
    named row's figure (a missed one marked) or, over every issue row, the range and the
    rows on the smaller side (when three or fewer). A target whose rows the run lacks says
    so.

    >>> rows = [dict(api="vec_reduce_add", dtype=d, option="None", repeat=255, vs_sum=v,
    ...              cases_vs_batch=c, compile_s=1.9)
    ...         for d, v, c in (("float16", 3.3, 0.73), ("float32", 0.68, 0.62))]
    >>> print(targets(rows))
    - min/max half R = 255 >= 0.3x copy: no row in this run
    - half sums R = 255 >= 3x np.sum: 1 of 1 reached: vec_reduce_add float16 3.3
    - float sums R = 255 >= 0.5x np.sum: 1 of 1 reached: vec_reduce_add float32 0.68
    - run_cases >= 0.7x run_batch:
      R = 255: 1 of 2 reached, 0.62-0.73; reached: vec_reduce_add float16
    - verify (regions) >= 0.5x run_batch: no row in this run
    - compile <= 3 s:
      R = 255: 2 of 2 reached, 1.9-1.9
    """
    out = []
    for what, names, repeats, field, (op, bound) in TARGETS:
        want = ISSUE_KEYS if names is None else {(a, d, str(o)) for a, d, o in names}
        sel = [r for r in rows if _key(r) in want
               and (repeats is None or r["repeat"] in repeats) and r.get(field) is not None]
        if not sel:
            out.append(f"- {what}: no row in this run")
            continue

        def good(r: dict) -> bool:
            return r[field] >= bound if op == ">=" else r[field] <= bound

        if names is not None:
            figs = [f"{_row_name(r)} {r[field]:.3g}" + ("" if good(r) else " (missed)")
                    for r in sel]
            out.append(f"- {what}: {sum(map(good, sel))} of {len(sel)} reached: "
                       + ", ".join(figs))
            continue
        out.append(f"- {what}:")
        for rep in sorted({r["repeat"] for r in sel}):
            at = [r for r in sel if r["repeat"] == rep]
            hit = [r for r in at if good(r)]
            few, side = (hit, "reached") if len(hit) <= len(at) / 2 else \
                ([r for r in at if not good(r)], "missed")
            vals = [r[field] for r in at]
            line = (f"  R = {rep}: {len(hit)} of {len(at)} reached, "
                    f"{min(vals):.3g}-{max(vals):.3g}")
            if 0 < len(few) <= 3:
                line += f"; {side}: " + ", ".join(_row_name(r) for r in few)
            out.append(line)
    return "\n".join(out)


def _timeit(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


#: rounds of :func:`_in_turns` for the ratios' figures (run_batch, copy, np.sum)
ROUNDS = 7


def _in_turns(fns: dict, rounds: int = ROUNDS) -> dict:
    """The best seconds of each callable in ``fns``, measured in turns: each round runs every
    one once, so a slow spell of a shared machine falls on all of them alike instead of on
    whichever was measured in it (best-of-3 of each, one after the other, moved the ratios by
    up to 2x between runs on the development VM)."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def _round32(n: int) -> int:
    return -(-int(n) // 32) * 32


def layout(api, dtype, r, option=None):
    """``(tensors, window)``: the call's operands as ``{name: (addr, elements)}`` and the
    window's bytes, from the instruction's declaration: the source's ``r`` repeats of 256
    bytes (block stride 1, repeat stride 8; the count form: ``r`` repeats' worth of
    elements) at 0, then dst (its declared extent), then the work tensor (the elements a
    call of ``r`` repeats needs), each 32-byte aligned."""
    ins = registry.lookup(api)
    s = np.dtype(dtype).itemsize
    src_bytes = r * 256
    dst_bytes = _round32(ins.dst_extent(_count(ins, dtype, r), dtype, option, 1))
    dsize = np.dtype(ins.tensor_dtype("dst", dtype)).itemsize
    tensors = {"src": (0, src_bytes // s), "dst": (src_bytes, dst_bytes // dsize)}
    window = src_bytes + dst_bytes
    if "work_tensor" in ins.operands:
        need = ins.work_elements(_count(ins, dtype, r), option, dtype)
        tensors["work_tensor"] = (window, need)
        window += _round32(need * s)
    return tensors, window


def _count(ins, dtype, r):
    """The call's ``repeat`` parameter: ``r``, or the count form's element count."""
    return r * (256 // np.dtype(dtype).itemsize) if ins.kernel.count_form else r


def params_of(api, dtype, r):
    """The call's numeric parameters (Case keys): ``r`` repeats, dst repeat stride 1, source
    block stride 1 and repeat stride 8, where the instruction has them."""
    ins = registry.lookup(api)
    given = {"repeat": _count(ins, dtype, r), "dst_rep_stride": 1, "src_blk_stride": 1,
             "src_rep_stride": 8}
    return {k: given[k] for k in ins.params}


def batch_kwargs(api, chip, dtype, option, r, tensors):
    ins = registry.lookup(api)
    kw = dict(chip=chip, dtype=dtype, mask=256 // np.dtype(dtype).itemsize,
              max_repeat=_count(ins, dtype, r), **tensors)
    kw.update({ins.public_arg(k) if k == "repeat" else k: v
               for k, v in params_of(api, dtype, r).items()})
    if ins.option is not None:
        kw[ins.option.key] = option
    return kw


def numpy_golden(api, dtype, option, ubs, r):
    """The usual sample golden: view the source as [cases, R, lanes] and reduce per repeat
    (the instruction's kind, over each of its result groups; with the arg-reduction where it
    writes an index), then over the repeats where it writes one result for the call."""
    ins = registry.lookup(api)
    lay = ins.layout(dtype, option)
    kind = ins.kind(option)
    s = np.dtype(dtype).itemsize
    x = ubs[:, :r * 256].view(dtype).reshape(len(ubs), r, lay.groups, 256 // s // lay.groups)
    i = None
    if kind == "sum":
        v = x.sum(axis=3, dtype=dtype)
    else:
        v = x.min(axis=3) if kind == "min" else x.max(axis=3)
        if ins.has_index(option, dtype):
            i = x.argmin(axis=3) if kind == "min" else x.argmax(axis=3)
    if not lay.per_repeat:
        v = v.sum(axis=1, dtype=dtype) if kind == "sum" else \
            v.min(axis=1) if kind == "min" else v.max(axis=1)
    return v if i is None else (v, i)


def oracle_case(case):
    """The scalar oracle's result of one case (``ascend_ref.oracle``)."""
    return case.call(ar.oracle)


def run(quick: bool, only=None, repeats=(1, 16, 255), every=True):
    rows = []
    rng = np.random.default_rng(0)
    for api, chip, dtype, option in configs(every):
        if only and not any(f"{api}:{dtype}".startswith(o) for o in only):
            continue
        for r in repeats:
            # each row from fresh caches: the library drops them after COMPILE_LIMIT
            # compiles, which a whole bench run passes (its last rows' timed calls then
            # recompiled everything: vec_reduce_add float read 0.09 cases / batch)
            engine.release()
            tensors, window = layout(api, dtype, r, option)
            b = CASES[r] // (4 if quick and r != 255 else 1)
            s = np.dtype(dtype).itemsize
            data = rng.standard_normal((b, window // s)).astype(dtype).view(np.uint8)
            # the input 64-byte aligned (the CPU backend reads it in place), as verify's and
            # run_cases' windows are; the same bytes 16 bytes off such a boundary (malloc
            # aligns to 16 bytes only: where a large np.zeros usually starts) as a second
            # run_batch figure
            ubs = batch_prep.aligned_zeros(data.shape)
            ubs[...] = data
            unaligned = batch_prep.aligned_zeros((1, data.size + 16))[0, 16:].reshape(data.shape)
            unaligned[...] = data
            kw = batch_kwargs(api, chip, dtype, option, r, tensors)
            t0 = time.perf_counter()
            out, status = ar.run_batch(api, ubs, **kw)
            first = time.perf_counter() - t0
            assert (status == 0).all(), (api, r, set(status.tolist()))
            dest = np.empty_like(ubs)
            lanes = ubs[:, :r * 256].view(dtype).reshape(b, r, -1)
            cases = make_cases(api, chip, dtype, option, r, tensors, ubs)
            outcomes = ar.run_cases(cases)
            assert all(o.code is None for o in outcomes)
            assert np.array_equal(outcomes[0].ub, out[0]), f"{api} R={r}: run_cases differs"
            # each run_batch right after an np.sum over its lanes, so both start from the
            # same cache state (placed after the first, the second read a result buffer
            # the first had just written and came out faster)
            turns = _in_turns({"batch": lambda: ar.run_batch(api, ubs, **kw),
                               "copy": lambda: np.copyto(dest, ubs),
                               "sum": lambda: np.sum(lanes, axis=2),
                               "unaligned": lambda: ar.run_batch(api, unaligned, **kw),
                               "sum2": lambda: np.sum(lanes, axis=2)})
            steady, un_t, copy_t = (turns[k] for k in ("batch", "unaligned", "copy"))
            sum_t = min(turns["sum"], turns["sum2"])
            # apart: in turns, each run_cases call's outcome stack took the memory run_batch
            # would have reused, and run_batch faulted in fresh pages. Warm, as run_batch is
            # by the time of its best round: ROUNDS untimed calls, then the best of ROUNDS
            # (a row's run_cases calls ran 1.3-1.7x slower in its first few calls than from
            # about the eighth on, run_batch's 1.2-1.3x; the best of 3 right after the first
            # call read vec_reduce_add float at 7.8 ms where its warm calls take 4.1-4.5)
            for _ in range(ROUNDS):
                ar.run_cases(cases)
            cases_t = _timeit(lambda: ar.run_cases(cases), repeat=ROUNDS)
            verify_t = _verify_time(cases, outcomes)
            stacked_t = _verify_time(cases, outcomes, stacked=True)
            jax_cps = b / steady
            np_t = _timeit(lambda: numpy_golden(api, dtype, option, ubs, r))
            n_or = 2 if r == 255 else 4
            or_t = _timeit(lambda: [oracle_case(cases[k]) for k in range(n_or)], repeat=1) / n_or
            # the oracle agrees bit for bit with the batched result (a sanity check, not a timing)
            ref = oracle_case(cases[0])
            assert np.array_equal(ref.ub, out[0]), f"{api} R={r}: batch differs from oracle"
            rows.append(dict(api=api, chip=chip, dtype=dtype, option=str(option), repeat=r,
                             cases=b, jax_cases_per_s=jax_cps, cases_cases_per_s=b / cases_t,
                             unaligned_cases_per_s=b / un_t, unaligned_vs_batch=steady / un_t,
                             numpy_cases_per_s=b / np_t,
                             copy_cases_per_s=b / copy_t, sum_cases_per_s=b / sum_t,
                             oracle_cases_per_s=1 / or_t,
                             vs_copy=jax_cps * copy_t / b, vs_sum=jax_cps * sum_t / b,
                             cases_vs_batch=(b / cases_t) / jax_cps,
                             verify_cases_per_s=b / verify_t,
                             verify_vs_batch=(b / verify_t) / jax_cps,
                             verify_stacked_cases_per_s=b / stacked_t,
                             verify_stacked_vs_batch=(b / stacked_t) / jax_cps,
                             vs_numpy=jax_cps * np_t / b, vs_oracle=jax_cps * or_t,
                             compile_s=max(first - steady, 0.0)))
            print(_fmt_row(rows[-1]), flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return rows, peak_mb


HEADER = (f"{'api':<18} {'dtype':<8} {'R':>4} {'cases':>6} {'batch c/s':>10} {'unal./batch':>11} "
          f"{'cases c/s':>10} "
          f"{'×copy':>7} {'×np.sum':>8} {'cases/batch':>11} {'verify c/s':>10} "
          f"{'verify/batch':>12} {'stacked c/s':>11} {'stacked/batch':>13} {'×numpy':>7} {'×oracle':>8} {'compile s':>9}")


def _verify_time(cases, outcomes, stacked=False):
    """Seconds ``ascend-ref verify`` takes on ``cases`` written as dumps (regions layout, 1000
    cases a file, the reference's results as the device's; ``stacked``: format version 2):
    the better of the second and third runs (one timed run read 0.007 where its row's reruns
    read 0.032 and 0.036)."""
    import shutil
    import tempfile

    from ascend_ref.verify import dumps_from_cases, verify

    d = tempfile.mkdtemp(prefix="ascend_ref_bench_")
    try:
        dumps_from_cases(cases, d, per_file=1000, regions="tensors", outcomes=outcomes,
                         stacked=stacked, compress=not stacked)
        rep = verify(d, progress=False)
        assert rep.ok and rep.cases == len(cases), rep.format()
        return _timeit(lambda: verify(d, progress=False), repeat=2)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def one_call(api, dtype, r, chip="atlas_a2", b=None, seed=0):
    """``(ubs, kwargs, cases)``: ``b`` cases (default :data:`CASES`) of ``api`` laid out as
    :func:`run` lays them out (standard-normal data in 64-byte-aligned rows), the
    run_batch keyword arguments of the one call they share, and the same cases as
    :class:`ascend_ref.Case` objects on those rows (the floor scripts' input)."""
    ins = registry.lookup(api)
    option = ins.canonical_option(None) if ins.option is not None else None
    b = CASES[r] if b is None else b
    tensors, window = layout(api, dtype, r, option)
    s = np.dtype(dtype).itemsize
    data = np.random.default_rng(seed).standard_normal((b, window // s)).astype(dtype)
    ubs = batch_prep.aligned_zeros((b, window))
    ubs[...] = data.view(np.uint8)
    return (ubs, batch_kwargs(api, chip, dtype, option, r, tensors),
            make_cases(api, chip, dtype, option, r, tensors, ubs))


def make_cases(api, chip, dtype, option, r, tensors, ubs):
    """The benchmark's cases as :class:`ascend_ref.Case` objects (windows as their UBs)."""
    from ascend_ref.case import Case

    mask = 256 // np.dtype(dtype).itemsize
    params = params_of(api, dtype, r)
    return [Case(api, chip, dtype, option, mask, dict(params), dict(tensors), ubs[k])
            for k in range(len(ubs))]


def _fmt_row(r):
    return (f"{r['api']:<18} {r['dtype']:<8} {r['repeat']:>4} {r['cases']:>6} "
            f"{r['jax_cases_per_s']:>10.0f} {r.get('unaligned_vs_batch', float('nan')):>11.2f} "
            f"{r['cases_cases_per_s']:>10.0f} "
            f"{r['vs_copy']:>7.3f} {r['vs_sum']:>8.2f} {r['cases_vs_batch']:>11.2f} "
            f"{r['verify_cases_per_s']:>10.0f} {r['verify_vs_batch']:>12.3f} "
            f"{r.get('verify_stacked_cases_per_s', float('nan')):>11.0f} "
            f"{r.get('verify_stacked_vs_batch', float('nan')):>13.3f} "
            f"{r['vs_numpy']:>7.2f} {r['vs_oracle']:>8.0f} {r['compile_s']:>9.2f}")


def markdown(rows) -> str:
    """README's Performance table from the bench's rows."""
    out = ["| API | dtype | R | cases | run_batch cases/s | × copy | × np.sum | "
           "unaligned input / aligned | "
           "run_cases cases/s | cases / batch | verify cases/s | verify / batch | "
           "stacked verify cases/s | stacked / batch | "
           "× numpy golden | × scalar oracle | compile s |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ver = (f"{r['verify_cases_per_s']:,.0f} | {r['verify_vs_batch']:.3f}"
               if "verify_cases_per_s" in r else "– | –")
        ver += (f" | {r['verify_stacked_cases_per_s']:,.0f} | {r['verify_stacked_vs_batch']:.3f}"
                if "verify_stacked_cases_per_s" in r else " | – | –")
        out.append(f"| {_api_option(r)} | {r['dtype']} | {r['repeat']} | {r['cases']} | "
                   f"{r['jax_cases_per_s']:,.0f} | {r['vs_copy']:.3f} | {r['vs_sum']:.2f} | "
                   f"{r.get('unaligned_vs_batch', float('nan')):.2f} | "
                   f"{r['cases_cases_per_s']:,.0f} | {r['cases_vs_batch']:.2f} | {ver} | "
                   f"{r['vs_numpy']:.2f} | {r['vs_oracle']:,.0f} | {r['compile_s']:.2f} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="a quarter of the cases at R = 1 and 16 (R = 255 keeps 256)")
    ap.add_argument("--json", default=str(Path(__file__).parent / "results" / "bench.json"))
    ap.add_argument("--only", action="append", metavar="API[:DTYPE]",
                    help="only these rows (prefix of 'api:dtype'; repeatable)")
    ap.add_argument("--repeats", default="1,16,255", help="R values (default 1,16,255)")
    ap.add_argument("--issue-rows", action="store_true",
                    help="only issue 11's rows (README's table), not every instruction")
    ap.add_argument("--markdown", metavar="JSON",
                    help="print README's table from a results file instead of measuring")
    ap.add_argument("--targets", metavar="JSON",
                    help="print issue 11's targets in a results file instead of measuring")
    args = ap.parse_args()
    if args.targets:
        print(targets(json.loads(Path(args.targets).read_text())["rows"]))
        return
    if args.markdown:
        res = json.loads(Path(args.markdown).read_text())
        load = {k: " / ".join(f"{v:.1f}" for v in res.get(k, ())) for k in
                ("load_before", "load_after")}
        print(f"conditions: {res.get('conditions')}; load average (1 / 5 / 15 min) before "
              f"{load['load_before']}, after {load['load_after']}; "
              f"peak RSS {res['peak_rss_mb']:.0f} MB\n")
        print(markdown([r for r in res["rows"] if not args.issue_rows
                        or _key(r) in ISSUE_KEYS]))
        return
    cases = {r: CASES[r] // (4 if args.quick and r != 255 else 1) for r in CASES}
    conditions = CONDITIONS.format(**{f"r{k}": v for k, v in cases.items()})
    load_before = os.getloadavg()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({jax.device_count()} device(s)), "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s)")
    print(f"conditions: {conditions}")
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    print(HEADER, flush=True)
    rows, peak = run(args.quick, args.only, tuple(int(r) for r in args.repeats.split(",")),
                     every=not args.issue_rows)
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"peak resident memory: {peak:.0f} MB")
    print(f"issue 11's targets:\n{targets(rows)}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"jax": jax.__version__, "platform": jax.devices()[0].platform,
                               "cpus": os.cpu_count(), "conditions": conditions,
                               "load_before": load_before, "load_after": load_after,
                               "peak_rss_mb": peak, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
