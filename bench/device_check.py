"""Same bits on the accelerator as on the CPU: a seeded differential corpus, run on both.

Usage::

    python bench/device_check.py [--cases N] [--seed S] [--batch B] [--json PATH] [--quick]

1. **Corpus** — seeded random cases of every API × product × dtype (one campaign template
   per combination, every product of the template in turn; ``--cases`` in all, at least two
   per combination) with adversarial data: NaN payloads (quiet and signalling, both signs),
   ±0, ±inf, subnormals, ties, saturating sums, zero / overlapping / gapped strides, in-place
   calls, sparse and partial masks, and ~10 % calls that break one documented rule (the
   status code must agree too). Each case goes through :func:`ascend_ref.run_cases` once on
   the accelerator and once on the CPU; outcome codes and every UB byte (and the written /
   undefined masks) are compared.
2. **Throughput** — :func:`ascend_ref.run_batch` on ``--batch`` cases per row of
   ``bench/bench.py`` (``configs()``: every registered instruction and dtype; R = 16, data
   mixing NaN payloads, infinities, subnormals and large values), on each device: bits
   compared, steady-state cases/s and their ratio reported.

The accelerator is the first non-CPU JAX device; without one the check runs CPU against CPU
(and says so). Exit status 1 on any difference, 0 otherwise. Prints a table and writes
JSON. Not a test: nothing here asserts a timing. See docs/scale.md.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Optional

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ascend_ref as ar  # noqa: E402
from ascend_ref import scale  # noqa: E402
from ascend_ref.fuzz.campaign import Campaign  # noqa: E402
from ascend_ref.fuzz.generate import RngDraw, draw_campaign_case, fill_ub  # noqa: E402


def devices():
    """``(accelerator, cpu, note)``: the accelerator is the CPU when there is none."""
    cpu = jax.devices("cpu")[0]
    accel = next((d for d in jax.devices() if d.platform != "cpu"), None)
    if accel is None:
        return cpu, cpu, "no accelerator: CPU against CPU"
    return accel, cpu, f"{accel.platform} ({getattr(accel, 'device_kind', '?')}) against CPU"


def corpus_pool(seed: int):
    """One template per (API, product, dtype) combination, chosen by ``seed``."""
    camp = Campaign.from_dict({"campaign": {"name": "device_check", "seed": seed, "cases": 1,
                                            "invalid_rate": 0.1, "in_place_rate": 0.1,
                                            "ub_bytes": 16384}})
    universe = camp.universe()
    rng = np.random.default_rng(seed)
    by_combo = collections.defaultdict(list)
    for k, (t, _) in enumerate(universe):
        for ch in t.chips:
            by_combo[(t.api, ch, t.dtype)].append(k)
    chosen = sorted({int(rng.choice(ks)) for _, ks in sorted(by_combo.items())})
    return camp, [universe[k][0] for k in chosen], sorted(by_combo)


def corpus(seed: int, n: int):
    """``n`` (at least 2 per combination) seeded adversarial cases over every combination."""
    camp, pool, combos = corpus_pool(seed)
    cases, seen = [], set()
    n = max(n, 2 * len(combos))
    for i in range(n):
        t = pool[i % len(pool)]
        chip = t.chips[(i // len(pool)) % len(t.chips)]
        c = draw_campaign_case(RngDraw(seed, i), t, camp.dist)
        c = dataclasses.replace(c, chip=chip, tags=dict(c.tags))
        seen.add((c.api, chip, c.dtype))
        cases.append(c)
    # every combination: a second pass over the products a template did not reach yet
    i = n
    for api, chip, dtype in combos:
        if (api, chip, dtype) in seen:
            continue
        t = next(t for t in pool if t.api == api and chip in t.chips and t.dtype == dtype)
        for _ in range(2):
            c = draw_campaign_case(RngDraw(seed, i), t, camp.dist)
            cases.append(dataclasses.replace(c, chip=chip, tags=dict(c.tags)))
            i += 1
        seen.add((api, chip, dtype))
    return cases, combos


def _timed(fn, repeat: int = 2):
    fn()                                            # compile
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best


def differ(a, b) -> int:
    """Differing bytes of two outcomes (an outcome-code difference counts as one)."""
    if a.code != b.code:
        return 1
    if a.code is not None:
        return 0
    n = int(np.count_nonzero(np.asarray(a.ub) != np.asarray(b.ub)))
    n += int(np.count_nonzero(np.asarray(a.written) != np.asarray(b.written)))
    return n + int(np.count_nonzero(np.asarray(a.undefined) != np.asarray(b.undefined)))


def check_corpus(cases, accel, cpu):
    runs = {}
    for name, dev in (("accel", accel), ("cpu", cpu)):
        with scale.use_devices([dev]):
            runs[name] = _timed(lambda: ar.run_cases(cases), repeat=1)
    outs_a, t_a = runs["accel"]
    outs_c, t_c = runs["cpu"]
    bad = [(c, differ(a, b)) for c, a, b in zip(cases, outs_a, outs_c) if differ(a, b)]
    return {"cases": len(cases), "ok_cases": sum(o.code is None for o in outs_c),
            "differing_cases": len(bad), "differing_bytes": sum(n for _, n in bad),
            "examples": [c.describe() for c, _ in bad[:5]],
            "accel_cases_per_s": len(cases) / t_a, "cpu_cases_per_s": len(cases) / t_c}


def check_throughput(batch: int, seed: int, accel, cpu, repeats: int = 16,
                     configs: Optional[list] = None):
    """run_batch on both devices for each ``(api, chip, dtype, option)`` of ``configs``
    (default: ``bench.configs()``, every registered instruction and dtype)."""
    import bench

    rows = []
    for k, (api, chip, dtype, option) in enumerate(bench.configs() if configs is None
                                                    else configs):
        tensors, window = bench.layout(api, dtype, repeats, option)
        kw = bench.batch_kwargs(api, chip, dtype, option, repeats, tensors)
        ubs = np.stack([fill_ub(window, dtype, "mixed" if j % 2 else "specials",
                                seed * 1000003 + k * 10007 + j) for j in range(batch)])
        res = {}
        for name, dev in (("accel", accel), ("cpu", cpu)):
            (out, status), t = _timed(lambda: ar.run_batch(api, ubs.copy(), devices=[dev], **kw))
            res[name] = (out, status, t)
        (oa, sa, ta), (oc, sc, tc) = res["accel"], res["cpu"]
        rows.append({"api": api, "chip": chip, "dtype": dtype, "option": option,
                     "batch": batch, "repeat": repeats,
                     "differing_bytes": int(np.count_nonzero(oa != oc))
                     + int(np.count_nonzero(sa != sc)),
                     "ok": int((sc == 0).sum()),
                     "accel_cases_per_s": batch / ta, "cpu_cases_per_s": batch / tc,
                     "ratio": tc / ta})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=400, help="corpus cases (default 400)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=2048, help="cases per throughput batch")
    ap.add_argument("--quick", action="store_true", help="small corpus and batches")
    ap.add_argument("--json", default="device_check.json", help="JSON output path")
    args = ap.parse_args(argv)
    if args.quick:
        args.cases, args.batch = 0, 64
    accel, cpu, note = devices()
    print(f"jax {jax.__version__}: {note}")
    cases, combos = corpus(args.seed, args.cases)
    tags = collections.Counter(c.tags.get("data", "?") for c in cases)
    print(f"corpus: {len(cases)} cases over {len(combos)} API x product x dtype combinations; "
          f"data kinds {dict(sorted(tags.items()))}")
    corp = check_corpus(cases, accel, cpu)
    print(f"  differing cases: {corp['differing_cases']} ({corp['differing_bytes']} bytes); "
          f"{corp['ok_cases']} ran, {corp['cases'] - corp['ok_cases']} rejected by a rule; "
          f"run_cases {corp['accel_cases_per_s']:.1f} vs {corp['cpu_cases_per_s']:.1f} cases/s")
    for e in corp["examples"]:
        print(f"    differs: {e}")
    rows = check_throughput(args.batch, args.seed, accel, cpu)
    print(f"throughput: run_batch, {args.batch} cases per configuration, R = 16")
    print(f"  {'api':<18}{'chip':<16}{'dtype':<9}{'diff B':>7}{'accel c/s':>12}{'cpu c/s':>11}"
          f"{'ratio':>7}")
    for r in rows:
        print(f"  {r['api']:<18}{r['chip']:<16}{r['dtype']:<9}{r['differing_bytes']:>7}"
              f"{r['accel_cases_per_s']:>12.0f}{r['cpu_cases_per_s']:>11.0f}{r['ratio']:>7.2f}")
    total = corp["differing_cases"] + sum(r["differing_bytes"] > 0 for r in rows)
    Path(args.json).write_text(json.dumps({
        "jax": jax.__version__, "accelerator": str(accel), "cpu": str(cpu), "note": note,
        "combinations": len(combos), "corpus": corp, "throughput": rows,
        "differences": total}, indent=1))
    print(f"RESULT: {'OK, 0 differences' if total == 0 else f'{total} DIFFERENCE(S)'} ({note}); "
          f"JSON in {args.json}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
