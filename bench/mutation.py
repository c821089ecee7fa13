"""Mutation harness: does the default campaign (and the test suite) find realistic bugs?

Each mutant is one semantic bug planted in the JAX path (or in a product profile the JAX path
reads): ``(file, exact original snippet, replacement)``. For each mutant the harness copies
the repository to a temporary folder, applies the edit there (the working tree is never
touched), and runs

1. the default campaign ``ascend-ref`` (``configs/campaigns/default.toml``, shrinking off),
   JAX path against the scalar oracle, stopping at the first mismatch;
2. the default test run (``-m "not slow"``, doctests included) with ``-x``: it stops at the
   first failure, whose test id is recorded (most discriminating files first).

A mutant is *killed* by a check when that check fails on it. The report lists, per mutant,
which check killed it and the score: campaign alone, and campaign + tests.

Speed-ups that change no verdict: the oracle's outcome of each case is cached across mutants
(keyed by the case's bytes and the oracle's source, which no mutant touches) and a case whose
JAX outcome is bit-identical to the cached oracle outcome passes without re-running the
oracle; every other case is judged by the campaign's own comparator. JAX's persistent
compilation cache is shared by the runs, so kernels a mutant does not change compile once.

Usage::

    python bench/mutation.py                   # every mutant; report on stdout
    python bench/mutation.py --only tie_last_lane,work_add_short --out /tmp/mut.json
    python bench/mutation.py --list

``tests/test_mutation.py`` checks (fast) that every mutant's snippet occurs exactly once in the
current tree (rewrite that code: update the mutant), and runs the whole harness (slow).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    file: str          # path relative to the repository root
    old: str           # exact snippet; must occur exactly once in ``file``
    new: str
    what: str
    #: more ``(old, new)`` edits of the same bug in the same file (each snippet exactly once):
    #: a bug in an algorithm that exists twice (the general path and a fast tree)
    also: tuple = ()

    def edits(self) -> list:
        return [(self.old, self.new)] + [tuple(e) for e in self.also]


MUTANTS: List[Mutant] = [
    # ---------------------------------------------------------------- numerics
    Mutant("tie_last_lane", "numerics", "ascend_ref/numerics.py",
           "index = jnp.min(jnp.where(active & (key == best), pos, n), axis=-1)",
           "index = jnp.maximum(jnp.max(jnp.where(active & (key == best), pos, -1), axis=-1), 0)",
           "min/max ties pick the last lane instead of the first",
           also=(  # the fast tree (the default path): 16-bit packed keys (lane reversed,
                   # flipped back), float32 first lane of the best key, 32-bit lexicographic
               ("return key * (1 << lb) + lane",
                "return key * (1 << lb) + ((1 << lb) - 1 - lane)"),
               ("index = best & ((1 << lb) - 1)",
                "index = (1 << lb) - 1 - (best & ((1 << lb) - 1))"),
               ("index = _fold_min(jnp.where(key == best[..., None], jnp.arange(m, "
                "dtype=jnp.int32), m))",
                "index = jnp.max(jnp.where(key == best[..., None], jnp.arange(m, "
                "dtype=jnp.int32), -1), axis=-1)"),
               ("((kb == ka) & (lb_ < la))", "((kb == ka) & (lb_ > la))"))),
    Mutant("signed_zero_key", "numerics", "ascend_ref/numerics.py",
           "return jnp.where(x >= 0x8000, -1 - (x & 0x7FFF), x)",
           "return jnp.where(x >= 0x8000, -(x & 0x7FFF), x)",
           "half -0 and +0 share one order key",
           also=(  # the fast 16-bit tree computes the same key without order_key: +1 for
                   # negatives (-1 - mag becomes -mag); without it the default campaign,
                   # which runs the fast path, let this mutant survive (2026-12-07)
               ("key = sx ^ ((sx >> 15) & 0x7FFF)",
                "key = (sx ^ ((sx >> 15) & 0x7FFF)) - (sx >> 15)"),)),
    Mutant("nan_loses_in_max", "numerics", "ascend_ref/numerics.py",
           "key = jnp.where(is_nan(bits), _INT_MIN if want_min else _INT_MAX, key)",
           "key = jnp.where(is_nan(bits), _INT_MIN, key)",
           "a NaN lane loses in max instead of winning",
           also=(  # the fast tree (keys mirrored for max: the NaN key becomes the largest)
               ("key = jnp.where(is_nan(bits), -_SENT * sign, key)",   # max packs -key
                'key = jnp.where(is_nan(bits), -_SENT if kind == "min" else 1 - _SENT, key)'),
               ("key = jnp.where(act, jnp.where(is_nan(bits), _INT_MIN, key), _INT_MAX)",
                'key = jnp.where(act, jnp.where(is_nan(bits), _INT_MIN if kind == "min" else '
                '_INT_MAX - 1, key), _INT_MAX)'),
               ("k = key if nan is None else jnp.where(nan, _INT_MIN, key)",
                'k = key if nan is None else jnp.where(nan, _INT_MIN if kind == "min" else '
                '_INT_MAX, key)'))),
    Mutant("saturate_final_only", "numerics", "ascend_ref/numerics.py",
           "return add(a, b, dtype, saturate=saturate, default_nan=nan, ftz=ftz)",
           "return add(a, b, dtype, saturate=jnp.logical_and(saturate, a.shape[-1] == 1), "
           "default_nan=nan, ftz=ftz)",
           "half saturation applied only at the final add of a tree"),
    Mutant("tree_pairs_halves", "numerics", "ascend_ref/numerics.py",
           "x = add2(x[..., 0::2], x[..., 1::2])",
           "x = add2(x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:])",
           "the sum tree pairs lane i with i + n/2 instead of its neighbour"),
    Mutant("zero_sum_sign", "numerics", "ascend_ref/numerics.py",
           "r = jnp.where(both_zero, a & b, r)",
           "r = jnp.where(both_zero, a | b, r)",
           "(+0) + (-0) gives -0"),
    Mutant("nan_not_quieted", "numerics", "ascend_ref/numerics.py",
           "r = jnp.where(is_nan(a), a | ut(quiet),",
           "r = jnp.where(is_nan(a), a,",
           "a signalling NaN operand passes through an add without its quiet bit"),
    Mutant("uint32_signed_key", "numerics", "ascend_ref/numerics.py",
           "return lax.bitcast_convert_type(bits ^ jnp.uint32(0x80000000), jnp.int32)",
           "return lax.bitcast_convert_type(bits, jnp.int32)",
           "uint32 min/max compares as signed"),
    # ---------------------------------------------------------------- addressing
    Mutant("blk_stride_ignored", "addressing", "ascend_ref/addressing.py",
           "return _blocks(i // epb, blk_stride) + (i % epb) * size",
           "return _blocks(i // epb, 1) + (i % epb) * size",
           "srcBlkStride ignored (blocks always contiguous)"),
    Mutant("dst_stride0_first_wins", "addressing", "ascend_ref/addressing.py",
           "final = issued & ((step != 0) | (r == repeat - 1))",
           "final = issued & ((step != 0) | (r == 0))",
           "dstRepStride 0 keeps the first repeat's slot instead of the last"),
    Mutant("rep_stride0_as_1", "addressing", "ascend_ref/addressing.py",
           "return (jnp.asarray(base, jnp.int32) + _blocks(r, rep_stride)[:, None]",
           "return (jnp.asarray(base, jnp.int32) + _blocks(r, jnp.maximum(rep_stride, 1))[:, None]",
           "srcRepStride 0 read as 1 block"),
    Mutant("overlap_next_repeat", "addressing", "ascend_ref/addressing.py",
           "hit = (d >= 0) & (d == r_read * step) & (r_read > w_rep) & (r_read < repeat)",
           "hit = (d >= 0) & (d == r_read * step) & (r_read > w_rep + 1) & (r_read < repeat)",
           "the read-after-write rule misses a read by the very next repeat"),
    # ---------------------------------------------------------------- masks
    Mutant("tik_mask_not_swapped", "masks", "ascend_ref/mask.py",
           "        return [words[1], words[0]]\n",
           "        return [words[0], words[1]]\n",
           "TIK [mask_h, mask_l] read as [low, high]",
           also=(("return words[..., ::-1]", "return words"),)),   # a batch's masks at once
    Mutant("count_mask_off_by_one", "masks", "ascend_ref/mask.py",
           "counted = i < value[0]",
           "counted = i <= value[0]",
           "a continuous mask of n enables n + 1 lanes"),
    Mutant("mask32_lane64_allowed", "masks", "ascend_ref/mask.py",
           "lambda p: count(p) | ((p.mask[2] | p.mask[3]) == 0),",
           "lambda p: count(p) | (p.mask[3] == 0),",
           "32-bit types accept bit-mask lanes 64..95 (one past the last lane)"),
    # ---------------------------------------------------------------- constraints / boundaries
    Mutant("work_add_short", "constraints", "ascend_ref/tik/vec_reduce_add.py",
           'lambda p: p.tensor("work_tensor").size >= work_need(p.repeat),',
           'lambda p: p.tensor("work_tensor").size >= work_need(p.repeat) - 1,',
           "vec_reduce_add accepts a work_tensor one element short (need - 1)"),
    Mutant("repeat_max_256", "constraints", "ascend_ref/ascendc/_slots.py",
           "MAX_REPEAT = 255",
           "MAX_REPEAT = 256",
           "Ascend C accepts repeat 256 (max + 1)"),
    Mutant("stride_65536", "constraints", "ascend_ref/engine.py",
           "lambda p, s=s: in_range(p.arg(s), 0, U16_MAX)",
           "lambda p, s=s: in_range(p.arg(s), 0, U16_MAX + 1)",
           "strides accept 65536 (max + 1)"),
    Mutant("dst_align_element", "constraints", "ascend_ref/ascendc/_slots.py",
           'align=lambda spec: {"src": 32, "dst": dst_align(spec)},',
           'align=lambda spec: {"src": 32, "dst": spec.size},',
           "Ascend C dst aligned to one element instead of one result slot"),
    Mutant("ub_one_past", "constraints", "ascend_ref/engine.py",
           "return (addr >= 0) & (size >= 0) & (addr <= lim) & (size <= room // isz)",
           "return (addr >= 0) & (size >= 0) & (addr <= lim) & (size <= room // isz + 1)",
           "a tensor may end one element past the UB"),
    Mutant("tensor_one_short", "constraints", "ascend_ref/engine.py",
           "& (p.diagnostics.extent(t).hi <= p.tensor(t).addr + p.tensor(t).size * isz),",
           "& (p.diagnostics.extent(t).hi <= p.tensor(t).addr + (p.tensor(t).size + 1) * isz),",
           "an access one element past a tensor's declared extent is accepted"),
    # ---------------------------------------------------------------- slot layouts
    Mutant("only_index_16bit", "slots", "ascend_ref/ascendc/whole_reduce.py",
           'words += [("index", "index"), ("zero", "index")] if f == "index32" and s == 2 else',
           'words += [("index", "index")] if f == "index32" and s == 2 else',
           "ORDER_ONLY_INDEX of a 16-bit type writes a 16-bit slot"),
    Mutant("index_value_swapped", "slots", "ascend_ref/ascendc/whole_reduce.py",
           'ReduceOrder.ORDER_INDEX_VALUE: ("index", "value"),',
           'ReduceOrder.ORDER_INDEX_VALUE: ("value", "index"),',
           "ORDER_INDEX_VALUE written as [value, index]"),
    # ---------------------------------------------------------------- product rules
    Mutant("fill_200i_min_half", "products", "configs/chips/atlas_200i_500_a2.toml",
           'MIN = { float16 = "65504", float32 = "inf" }',
           'MIN = { float16 = "inf", float32 = "inf" }',
           "ReduceDataBlock MIN fill of an empty block wrong for half on 200I/500 A2"),
    Mutant("empty_block_all_lanes", "products", "ascend_ref/ascendc/reduce_data_block.py",
           "has_lane = jnp.any(live, -1)",
           "has_lane = jnp.all(live, -1)",
           "a ReduceDataBlock block counts as empty unless every lane is active"),
    Mutant("dst_stride0_allowed", "products", "ascend_ref/engine.py",
           "lambda p: (p.dst_rep_stride != 0) | Product(p).dst_rep_stride_zero,",
           "lambda p: (p.dst_rep_stride >= 0) | Product(p).dst_rep_stride_zero,",
           "dstRepStride 0 accepted on Atlas training"),
    Mutant("zero_mask_defined_950", "products", "ascend_ref/engine.py",
           'undefined = (zero_mask & chip.zero_mask_is("undefined")) |',
           'undefined = (zero_mask & zero_rep & chip.zero_mask_is("undefined")) |',
           "a zero mask on Ascend 950 is reported as a clean NOP (dst not undefined)"),
    # ---------------------------------------------------------------- TIK cascade
    Mutant("tik_ties_last_repeat", "tik", "ascend_ref/tik/vec_reduce_minmax.py",
           "value, r_best, _ = arith.extreme(value_r, live, kind)",
           "value, r_best, _ = arith.extreme(value_r[::-1], live[::-1], kind)\n"
           "        r_best = spec.r_max - 1 - r_best",
           "TIK min/max: among equal repeat results the last repeat wins"),
    Mutant("tik_offset_unit", "tik", "ascend_ref/tik/vec_reduce_minmax.py",
           "index = r_best * p.src_rep_stride * (32 // spec.size) + lane_r[r_best]",
           "index = r_best * p.src_rep_stride * (16 // spec.size) + lane_r[r_best]",
           "TIK cal_index source offset counts half the elements per block (8 for half)"),
    Mutant("cascade_need_short", "tik", "ascend_ref/tik/vec_reduce_minmax.py",
           "    return need + 2\n",
           "    return need\n",
           "the cal_index work_tensor cascade need is 2 elements short"),
    Mutant("add_chunk_half", "tik", "ascend_ref/tik/vec_reduce_add.py",
           "chunks = numerics.padded_tree_sum(jnp.where(live, stage1, zero), spec.lanes, add, zero)",
           "chunks = numerics.padded_tree_sum(jnp.where(live, stage1, zero), spec.lanes // 2, add, "
           "zero)",
           "vec_reduce_add stage 2 sums chunks of L/2 stage-1 results"),
]

#: XLA CPU compiles the hundreds of kernels of a campaign about twice as fast at optimisation
#: level 0 (no fusion emitters); the arithmetic is the same IEEE operations, so the bits are
#: too (the unmutated tree must still pass the whole campaign: the harness checks that first)
FAST_XLA = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"


@functools.lru_cache(maxsize=None)
def fast_xla_flags(flags: str = FAST_XLA) -> str:
    """The flags of ``flags`` that this jaxlib accepts. XLA aborts the process on a flag it
    does not know, and flags come and go between releases (``--xla_cpu_use_fusion_emitters``
    is unknown to jaxlib 0.12.1): each is tried once, in a child process, and dropped if
    that child cannot compute."""
    probe = "import jax.numpy as jnp; jnp.arange(4.0).sum().block_until_ready()"
    kept = []
    for flag in flags.split():
        env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flag)
        r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                           timeout=300)
        if r.returncode == 0:
            kept.append(flag)
    return " ".join(kept)


#: the order mutants run in (the ten bugs of issue 16 first, then one per area, then the rest)
PRIORITY = ["tie_last_lane", "signed_zero_key", "nan_loses_in_max", "saturate_final_only",
            "tree_pairs_halves", "dst_stride0_first_wins", "tik_mask_not_swapped",
            "work_add_short", "fill_200i_min_half", "only_index_16bit", "blk_stride_ignored",
            "count_mask_off_by_one", "repeat_max_256", "tensor_one_short", "index_value_swapped",
            "empty_block_all_lanes", "tik_ties_last_repeat", "cascade_need_short",
            "uint32_signed_key", "dst_stride0_allowed", "mask32_lane64_allowed",
            "tik_offset_unit", "stride_65536", "ub_one_past", "zero_sum_sign",
            "nan_not_quieted", "rep_stride0_as_1", "overlap_next_repeat", "dst_align_element",
            "zero_mask_defined_950", "add_chunk_half"]

#: test files, most discriminating first (pytest -x stops at the first failure)
TEST_ORDER = ["tests/test_differential.py", "tests/test_oracle.py", "tests/test_constraints.py",
              "tests/test_seeds.py", "tests/test_oracle_products.py", "tests/test_traced.py",
              "tests/test_batch.py", "tests/test_fuzz_cover.py", "tests/test_golden.py",
              "tests/test_verify.py", "tests/test_explain.py", "tests/test_grad.py"]
LAST_TESTS = ["tests/test_notebooks.py"]
EXCLUDED_TESTS = ["tests/test_mutation.py"]     # checks the *current* tree's snippets


def check_anchors(root: Path = ROOT) -> List[str]:
    """Problems with the mutant definitions in ``root`` (empty: every snippet occurs exactly
    once and every replacement differs)."""
    bad, seen = [], set()
    for m in MUTANTS:
        if m.id in seen:
            bad.append(f"{m.id}: duplicate id")
        seen.add(m.id)
        p = root / m.file
        if not p.exists():
            bad.append(f"{m.id}: {m.file} does not exist")
            continue
        text = p.read_text()
        for old, new in m.edits():
            n = text.count(old)
            if n != 1:
                bad.append(f"{m.id}: snippet occurs {n} times in {m.file} (need exactly 1): "
                           f"{old!r}")
            if old == new:
                bad.append(f"{m.id}: replacement equals the original")
    return bad


#: what a copy leaves out: version control, caches, build output (the runs import the copy's
#: sources through PYTHONPATH with this interpreter, so nothing built is needed there)
_SKIP = (".git", "__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints",
         ".mypy_cache", "build", "dist")


def _ignore(dirpath, names):
    """Names ``shutil.copytree`` skips in ``dirpath``: :data:`_SKIP`, SQLite files and
    virtual environments (a folder holding ``pyvenv.cfg``: the ``.venv`` of the README's
    setup, CI's ``.venv-ci``, ~0.9 GB, which took a copy 8-9 s)."""
    return [n for n in names if n in _SKIP or n.endswith(".sqlite")
            or os.path.isfile(os.path.join(dirpath, n, "pyvenv.cfg"))]


def make_copy(m: Optional[Mutant], dest: Path) -> Path:
    """A copy of the repository in ``dest`` with mutant ``m`` applied (None: unmutated)."""
    shutil.copytree(ROOT, dest, ignore=_ignore)
    if m is not None:
        p = dest / m.file
        text = p.read_text()
        for old, new in m.edits():
            if text.count(old) != 1:
                raise RuntimeError(f"mutant {m.id}: snippet not found exactly once in {m.file}")
            text = text.replace(old, new)
        p.write_text(text)
    return dest


# ------------------------------------------------------------------ campaign (in the copy) ---

def _outcome_hash(o) -> str:
    import numpy as np

    h = hashlib.sha1(repr((type(o).__name__, getattr(o, "code", None))).encode())
    for a in (getattr(o, "ub", None), getattr(o, "written", None), getattr(o, "undefined", None)):
        h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _case_key(c) -> str:
    from ascend_ref.fuzz import exchange

    h = hashlib.sha1(json.dumps(exchange.case_meta(c), sort_keys=True, default=str).encode())
    h.update(c.ub.tobytes())
    return h.hexdigest()


#: cases per JAX batch in the harness (the campaign's cases are the same for any chunk size;
#: a smaller one stops sooner after the first mismatch)
HARNESS_CHUNK = 10


def _save(cache: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(cache))
    tmp.replace(path)


def campaign_worker(cache_dir: str, stop_first: bool = True) -> dict:
    """Run the default campaign of the repository this process imports (shrinking off);
    returns ``{"killed", "cases", "first": {case_id, signature, description}, "seconds"}``."""
    import ascend_ref
    from ascend_ref.case import run_oracle
    from ascend_ref.fuzz import comparators
    from ascend_ref.fuzz.campaign import Campaign

    t0 = time.time()
    src = b"".join(p.read_bytes() for p in sorted(
        (Path(ascend_ref.__file__).parent / "oracle").glob("*.py")))
    src += (Path(ascend_ref.__file__).parent / "constraints.py").read_bytes()
    cache_path = Path(cache_dir) / f"oracle-{hashlib.sha1(src).hexdigest()[:12]}.json"
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    camp = Campaign.load("default")
    camp.shrink.enabled = False
    first, ran, mismatches = None, 0, 0
    for start in range(0, camp.cases, HARNESS_CHUNK):
        ids = list(range(start, min(camp.cases, start + HARNESS_CHUNK)))
        cases = [camp.case(i) for i in ids]
        actual = comparators.run_jax_batch(cases)
        for i, c, a in zip(ids, cases, actual):
            key = _case_key(c)
            if cache.get(key) == _outcome_hash(a):
                continue                                   # bit-identical to the oracle
            e = comparators._safe(run_oracle, "oracle", c)
            cache[key] = _outcome_hash(e)
            verdict, sig = comparators.compare(c, e, a)
            if verdict == "mismatch":
                mismatches += 1
                if first is None:
                    first = {"case_id": i, "signature": sig, "description": c.describe()}
        ran += len(ids)
        _save(cache, cache_path)
        if first is not None and stop_first:
            break
    return {"killed": first is not None, "cases": ran, "mismatches": mismatches, "first": first,
            "seconds": round(time.time() - t0, 1), "pool": len(camp.pool())}


def _env(copy: Path, cache_dir: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(copy), JAX_PLATFORMS="cpu", XLA_FLAGS=fast_xla_flags(),
               JAX_COMPILATION_CACHE_DIR=str(cache_dir / "jax"),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1")
    env.pop("ASCEND_REF_CONFIGS", None)
    return env


def run_campaign_in(copy: Path, cache_dir: Path, timeout: float, stop_first: bool = True) -> dict:
    code = ("import json, sys; sys.path.insert(0, 'bench'); import mutation; "
            f"print('RESULT ' + json.dumps(mutation.campaign_worker({str(cache_dir)!r}, "
            f"{stop_first!r})))")
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, "-c", code], cwd=copy, env=_env(copy, cache_dir),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"killed": False, "error": f"timeout after {timeout:.0f} s",
                "seconds": round(time.time() - t0, 1)}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    # the campaign process itself crashed (e.g. an import error): a crash is a finding
    return {"killed": True, "first": {"signature": "campaign crashed",
                                      "description": (r.stderr or r.stdout)[-600:]},
            "seconds": round(time.time() - t0, 1)}


def run_tests_in(copy: Path, cache_dir: Path, timeout: float) -> dict:
    files = [f for f in TEST_ORDER if (copy / f).exists()]
    rest = sorted(str(p.relative_to(copy)) for p in (copy / "tests").glob("test_*.py"))
    files += [f for f in rest if f not in files and f not in EXCLUDED_TESTS + LAST_TESTS]
    files += [f for f in LAST_TESTS if (copy / f).exists()]
    files += ["README.md", "ascend_ref"]
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-m", "not slow", "-p", "no:cacheprovider",
           "-rf", "--no-header"] + files + [f"--ignore={f}" for f in EXCLUDED_TESTS]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, cwd=copy, env=_env(copy, cache_dir), capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"killed": False, "error": f"timeout after {timeout:.0f} s",
                "seconds": round(time.time() - t0, 1)}
    failed = [ln.split(" ", 1)[1].split(" - ")[0] for ln in r.stdout.splitlines()
              if ln.startswith(("FAILED ", "ERROR "))]
    tail = r.stdout.strip().splitlines()[-1:] or [""]
    return {"killed": r.returncode != 0, "returncode": r.returncode,
            "first": failed[0] if failed else (None if r.returncode == 0 else tail[0]),
            "summary": tail[0], "seconds": round(time.time() - t0, 1)}


# ------------------------------------------------------------------ driver --------------------

def run(mutants: List[Mutant], cache_dir: Path, *, campaign: bool = True, tests: bool = True,
        timeout: float = 1800, log=print, json_log: Optional[str] = None,
        baseline: bool = True, tests_if_survived: bool = False) -> list:
    rows = []
    if campaign and baseline:   # the unmutated tree first: it must pass (fills both caches)
        with tempfile.TemporaryDirectory(prefix="mut-baseline-") as tmp:
            base = run_campaign_in(make_copy(None, Path(tmp) / "repo"), cache_dir,
                                   4 * timeout, stop_first=False)
        log(f"baseline (no mutant): campaign {'FAILED' if base.get('killed') else 'passes'} "
            f"({base.get('cases')} cases, {base.get('seconds')} s)")
        if json_log:
            with open(json_log, "a") as f:
                f.write(json.dumps({"id": "baseline", "campaign": base}) + "\n")
        if base.get("killed") or base.get("error"):
            raise RuntimeError(f"the unmutated tree does not pass the campaign: {base}")
    for k, m in enumerate(mutants):
        with tempfile.TemporaryDirectory(prefix=f"mut-{m.id}-") as tmp:
            copy = make_copy(m, Path(tmp) / "repo")
            row = {"id": m.id, "area": m.area, "what": m.what}
            if campaign:
                row["campaign"] = run_campaign_in(copy, cache_dir, timeout)
            if tests and not (tests_if_survived and row.get("campaign", {}).get("killed")):
                row["tests"] = run_tests_in(copy, cache_dir, timeout)
            rows.append(row)
            log(f"[{k + 1}/{len(mutants)}] {_line(row)}")
            if json_log:
                with open(json_log, "a") as f:
                    f.write(json.dumps(row) + "\n")
    return rows


def _line(row: dict) -> str:
    c, t = row.get("campaign", {}), row.get("tests", {})
    cs = "-" if not c else ("KILLED" if c.get("killed") else "survived")
    if c.get("killed") and c.get("first"):
        cs += f" (case {c['first'].get('case_id')}: {c['first'].get('signature')})"
    ts = "-" if not t else ("KILLED" if t.get("killed") else "survived")
    if t.get("killed"):
        ts += f" ({t.get('first')})"
    return (f"{row['id']:<24} campaign {cs} [{c.get('seconds', 0)} s]; tests {ts} "
            f"[{t.get('seconds', 0)} s]")


def score(rows: list) -> dict:
    n = len(rows)
    camp = sum(bool(r.get("campaign", {}).get("killed")) for r in rows)
    tests = sum(bool(r.get("tests", {}).get("killed")) for r in rows)
    both = sum(bool(r.get("campaign", {}).get("killed") or r.get("tests", {}).get("killed"))
               for r in rows)
    return {"mutants": n, "campaign": camp, "tests": tests, "campaign_or_tests": both,
            "campaign_pct": round(100.0 * camp / max(n, 1), 1),
            "tests_pct": round(100.0 * tests / max(n, 1), 1),
            "campaign_or_tests_pct": round(100.0 * both / max(n, 1), 1)}


def report(rows: list) -> str:
    s = score(rows)
    out = ["| mutant | area | campaign | tests (first failure) |", "|---|---|---|---|"]
    for r in rows:
        c, t = r.get("campaign", {}), r.get("tests", {})
        cs = "killed" if c.get("killed") else ("survived" if c else "-")
        if c.get("killed") and c.get("first"):
            cs += f": case {c['first'].get('case_id')}, {c['first'].get('signature')}"
        ts = ("killed: " + str(t.get("first")) if t.get("killed") else
              ("survived" + (f" ({t['error']})" if t.get("error") else "") if t else "-"))
        out.append(f"| {r['id']} | {r['area']} | {cs} | {ts} |")
    out.append("")
    out.append(f"score: campaign alone {s['campaign']}/{s['mutants']} ({s['campaign_pct']} %), "
               f"tests alone {s['tests']}/{s['mutants']} ({s['tests_pct']} %), campaign + tests "
               f"{s['campaign_or_tests']}/{s['mutants']} ({s['campaign_or_tests_pct']} %)")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated mutant ids")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--no-campaign", action="store_true")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "ascend_ref_mutation"),
                    help="oracle-outcome and JAX compilation cache folder")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per check")
    ap.add_argument("--json-log", help="append each finished row to this file (JSON lines)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the unmutated campaign run (sanity check and cache warm-up)")
    ap.add_argument("--tests-if-survived", action="store_true",
                    help="run the tests only on mutants the campaign did not kill")
    ap.add_argument("--out", help="write the rows and the score as JSON here")
    a = ap.parse_args(argv)
    if a.list:
        for m in MUTANTS:
            print(f"{m.id:<24} {m.area:<12} {m.file}: {m.what}")
        return 0
    bad = check_anchors()
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 2
    chosen = MUTANTS
    if a.only:
        want = a.only.split(",")
        unknown = set(want) - {m.id for m in MUTANTS}
        if unknown:
            print(f"unknown mutant(s) {sorted(unknown)}", file=sys.stderr)
            return 2
        chosen = [m for m in MUTANTS if m.id in want]
    order = {k: i for i, k in enumerate(PRIORITY)}
    chosen = sorted(chosen, key=lambda m: order.get(m.id, len(order)))
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    rows = run(chosen, cache, campaign=not a.no_campaign, tests=not a.no_tests,
               timeout=a.timeout, log=lambda s: print(s, flush=True), json_log=a.json_log,
               baseline=not a.no_baseline, tests_if_survived=a.tests_if_survived)
    print()
    print(report(rows))
    print(f"({len(rows)} mutants in {time.time() - t0:.0f} s, "
          f"{time.strftime('%Y-%m-%d', time.gmtime())})")
    if a.out:
        Path(a.out).write_text(json.dumps({"rows": rows, "score": score(rows),
                                           "date": time.strftime("%Y-%m-%d", time.gmtime()),
                                           "mutants": [asdict(m) for m in chosen]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
