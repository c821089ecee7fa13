"""Vectorised preparation of run_cases (ascend_ref.batch_prep) against the per-case path.

The per-case path (Instruction.prepare_case, one case at a time) is the reference: on
adversarial cases -- bad parameters of every host and kernel code, values outside int32,
odd and traced UBs, both mask modes, every instruction -- the vectorised groups must give
the same kernel inputs (up to the window shift of the addresses) and the same outcomes.
"""

import collections
import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import batch_prep, registry
from ascend_ref.case import Case, run_jax
from ascend_ref.constraints import Code, ConstraintError
from ascend_ref.fuzz.compare import diff
from ascend_ref.fuzz.generate import RngDraw, draw_case


def _variants(c: Case, rng) -> list:
    """Adversarial edits of one drawn case (each a new case)."""
    out = []

    def edit(fn):
        d = copy.copy(c)
        d.params, d.tensors = dict(c.params), dict(c.tensors)
        fn(d)
        out.append(d)

    k = rng.choice(sorted(c.params))
    t = rng.choice(sorted(c.tensors))
    big = int(rng.choice([2**31, 2**31 + 5, -(2**31) - 7, 2**33 + 3, 2**39]))
    edit(lambda d: d.params.__setitem__(k, big))                          # outside int32
    edit(lambda d: d.params.__setitem__(k, True))                         # bool: BAD_ARGUMENT
    edit(lambda d: d.params.__setitem__(k, np.int64(c.params[k])))        # numpy int
    edit(lambda d: d.params.__setitem__(k, 2**45))                        # past the plain range
    edit(lambda d: d.tensors.__setitem__(t, (c.tensors[t][0], 2**31 + 3)))
    edit(lambda d: d.tensors.__setitem__(t, (2**32 + 64, c.tensors[t][1])))
    edit(lambda d: d.tensors.__setitem__(t, (-32, c.tensors[t][1])))       # BAD_ARGUMENT
    edit(lambda d: d.tensors.__setitem__(t, (c.tensors[t][0] + 2, c.tensors[t][1])))  # ALIGN
    edit(lambda d: d.tensors.__setitem__(t, (c.ub.size - 32, c.tensors[t][1] + 64)))   # bounds
    edit(lambda d: setattr(d, "mask", 0))
    edit(lambda d: setattr(d, "mask", 300))                                # MASK_RANGE kernel
    edit(lambda d: setattr(d, "mask", 2**31))                              # MASK_RANGE host
    edit(lambda d: setattr(d, "mask", -1))
    edit(lambda d: setattr(d, "mask", [0, 0]))
    edit(lambda d: setattr(d, "mask", [2**64 - 1, 2**63]))
    edit(lambda d: setattr(d, "mask", [2**64, 1]))                         # MASK_BITS host
    edit(lambda d: setattr(d, "mask", [5, 6, 7]))
    edit(lambda d: setattr(d, "mask", (3, 0)))
    edit(lambda d: setattr(d, "mask", np.int16(7)))
    edit(lambda d: setattr(d, "mask", np.array([1, 0, 0, 0], np.uint32)))  # lane words
    edit(lambda d: setattr(d, "mask", 7.0))
    edit(lambda d: setattr(d, "ub", np.concatenate([c.ub, np.zeros(7, np.uint8)])))  # odd
    edit(lambda d: setattr(d, "ub", c.ub[: max(c.ub.size - 33, 1)]))
    edit(lambda d: setattr(d, "ub", np.zeros(0, np.uint8)))                 # empty UB
    edit(lambda d: setattr(d, "ub", c.ub[:1]))
    edit(lambda d: setattr(d, "ub", jnp.asarray(c.ub)))                    # a JAX UB
    edit(lambda d: setattr(d, "ub", c.ub.astype(np.int8)))                 # BAD_ARGUMENT
    edit(lambda d: _shift(d, 5 * 1024 + 32 * int(rng.integers(0, 40))))  # a window above 0
    edit(lambda d: _shift(d, 3 * 1024, extra=-1))                          # last byte missing
    edit(lambda d: setattr(d, "saturate", not bool(c.saturate)))
    edit(lambda d: setattr(d, "saturate", 1))
    edit(lambda d: setattr(d, "saturate", "yes"))
    edit(lambda d: setattr(d, "chip", "no_such_chip"))
    edit(lambda d: setattr(d, "dtype", "half" if c.dtype == "float16" else "int8"))
    edit(lambda d: setattr(d, "option", "NOT_AN_OPTION" if c.option is not None else 3))
    return out


def _shift(d: Case, by: int, extra: int = 0) -> None:
    """Move every tensor ``by`` bytes up in a UB that grows by as much (plus ``extra``)."""
    d.ub = np.concatenate([np.full(by, 0x5A, np.uint8), d.ub])[:d.ub.size + by + extra]
    d.tensors = {k: (a + by, n) for k, (a, n) in d.tensors.items()}


def _cases(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        c = draw_case(RngDraw(seed, i), invalid_rate=0.4, max_ub=1 << 13, tik_max_repeat=40)
        out.append(c)
        if i % 3 == 0:
            out.extend(_variants(c, rng))
    return out


def _per_case(case: Case):
    try:
        return case.prepare(info=True), None
    except ConstraintError as e:
        return None, e.code
    # (anything else raised escapes run_cases too)


def _flat(p) -> dict:
    """Every leaf of a parameter tree by its path (``src.addr``, ``ub_len``, ...)."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(p)
    key = lambda path: jax.tree_util.keystr(path).strip(".").replace("['", "").replace(  # noqa
        "']", "").replace("'", "")
    return {key(path): np.asarray(v) for path, v in leaves}


def _row_params(rows) -> dict:
    """Case index -> (spec, base, length, {key: value}) of every prepared row."""
    out = {}
    for r in rows:
        flat = _flat(r.p)
        for j, k in enumerate(r.idx.tolist()):
            out[k] = (r.spec, int(r.base[j]), int(r.length[j]),
                      {key: v[j] for key, v in flat.items()})
    return out


def test_every_instruction_drawn():
    names = {c.api for c in _cases(120, 5)}
    assert names == set(registry.names())


@pytest.mark.parametrize("seed", [5, 6])
def test_vectorised_kernel_inputs_equal_the_per_case_ones(seed):
    cases = _cases(120, seed)
    outcomes = [None] * len(cases)
    rows = _row_params(batch_prep.prepare(cases, outcomes, ar.batch.TABLE_HEIGHTS))
    windowed = above = stood_in = 0
    for k, c in enumerate(cases):
        try:
            prep, code = _per_case(c)
        except Exception as e:                                     # noqa: BLE001
            pytest.fail(f"case {k} raised {type(e).__name__} on the per-case path: {e}")
        if code is not None:
            assert k not in rows and outcomes[k] is not None and outcomes[k].code == code, \
                (k, c.describe(), code, outcomes[k])
            continue
        assert outcomes[k] is None and k in rows, (k, c.describe())
        spec, base, length, got = rows[k]
        want_spec = batch_prep._finish_spec(prep, ar.batch.TABLE_HEIGHTS)
        assert spec == want_spec, (k, spec, want_spec)
        want = _flat(prep.p)
        assert set(got) == set(want)
        n = int(np.asarray(prep.ub).size)
        windowed += (base, length) != (0, n)
        above += base > 0
        stood_in += bool(prep.given)
        for key in want:
            if key == "ub_base":
                assert int(got[key]) == base and int(want[key]) == 0
            elif key == "ub_len":
                assert int(got[key]) == length and int(want[key]) == n
                assert 0 <= length <= n - base
            elif key.endswith(".addr"):
                assert int(got[key]) == int(want[key]) - base, (k, key)
            else:
                assert got[key].dtype == want[key].dtype, (k, key)
                np.testing.assert_array_equal(got[key], want[key], err_msg=f"{k} {key}")
        assert base % batch_prep.WINDOW_ALIGN == 0
        if base or length != n:             # a window: every declared tensor inside it
            s = np.dtype(c.dtype).itemsize if c.dtype != "half" else 2
            for a, size in c.tensors.values():
                assert base <= a and a + size * s <= base + length
    assert windowed > 20 and above > 10 and stood_in > 3, (windowed, above, stood_in)


@pytest.mark.parametrize("n", [pytest.param(20, id="20-draws"),
                               pytest.param(90, id="90-draws", marks=pytest.mark.slow)])
def test_vectorised_outcomes_equal_the_per_case_path(monkeypatch, n):
    """End to end: run_cases' grouped outcomes equal the ones of every case run alone (each
    alone compiles its own kernel: the default run takes 20 draws, the slow run 90; the
    kernel inputs of 240 draws are compared above)."""
    cases = _cases(n, 7)
    fast = ar.run_cases(cases)
    monkeypatch.setattr(batch_prep, "BULK_KEYS", False)
    monkeypatch.setattr(batch_prep, "_group_key", lambda case: None)   # every case alone
    slow = ar.run_cases(cases)
    codes = set()
    for k, (c, a, b) in enumerate(zip(cases, fast, slow)):
        assert diff(a, b) is None, (k, c.describe(), a, b)
        if a.code is None:
            assert b.code is None
            for x, y in ((a.ub, b.ub), (a.written, b.written), (a.undefined, b.undefined)):
                np.testing.assert_array_equal(x, y, err_msg=f"case {k}")
        codes.add(a.code)
    # the adversarial set reaches host errors, kernel errors and successes
    assert {None, Code.BAD_ARGUMENT, Code.MASK_RANGE, Code.MASK_BITS} <= codes, codes
    assert len(codes) >= 8, codes


def test_vectorised_outcomes_equal_the_public_functions():
    """A sample against the public function of each case (the full, non-compact kernel): of
    the draws the per-case test above runs, so run_cases' kernels are compiled already and
    the time goes to the public functions' (a sample of other draws: 12 s more)."""
    cases = _cases(20, 7)[::10]
    for c, got in zip(cases, ar.run_cases(cases)):
        assert diff(got, run_jax(c)) is None, c.describe()


# ------------------------------------------ host merge helpers (the dense 2-D store) -------

def _span_by_words(a, valid, size, n, offset=0):
    """What batch_prep._dense_span decides, written out word by word: the same words valid
    in every row (at least one), the valid words of each row the same run ``lo, lo + size,
    ...`` of absolute addresses ``a + offset``, aligned to ``size`` and inside ``[0, n)``;
    ``(lo, hi, the valid columns as a list)``."""
    m = a.shape[0]
    a = np.asarray(a, np.int64).reshape(m, -1) + offset
    v = np.asarray(valid).reshape(m, -1)
    if a.size == 0:
        return None
    cols = [j for j, ok in enumerate(v[0].tolist()) if ok]
    if not cols or any(v[i].tolist() != v[0].tolist() for i in range(m)):
        return None
    lo = int(a[0, cols[0]])
    for row in a.tolist():
        for i, j in enumerate(cols):
            if row[j] != lo + i * size:
                return None
    hi = lo + len(cols) * size
    return (lo, hi, cols) if lo >= 0 and hi <= n and lo % size == 0 else None


def test_dense_span_is_the_word_by_word_rule():
    """_dense_span (row 0 against the run, every row against row 0, an address offset, the
    valid columns) gives the span exactly where the word-by-word rule does, over dense
    tables, shifted rows, one word out of place, one invalid word, value-only pair tables
    (every other word valid), a last word invalid in every row, a word out of place where it
    is invalid, misaligned and out-of-range runs and offsets; the columns it returns select
    the valid words."""
    rng = np.random.default_rng(97)
    seen = {True: 0, False: 0}
    kinds = collections.Counter()
    for trial in range(900):
        m, k, size = int(rng.integers(1, 6)), int(rng.integers(1, 9)), int(rng.choice([2, 4]))
        lo = int(rng.choice([0, size, 3 * size, 1, -size, 96]))
        a = np.tile(lo + size * np.arange(k, dtype=np.int32), (m, 1)).reshape(m, k, 1)
        valid = np.ones(a.shape, bool)
        kind = trial % 9
        if kind == 1:
            a[int(rng.integers(m))] += size                     # one row shifted
        elif kind == 2:
            a[int(rng.integers(m)), int(rng.integers(k))] += 1  # one word out of place
        elif kind == 3:
            valid[int(rng.integers(m)), int(rng.integers(k))] = False
        elif kind in (4, 7):                 # value-only pairs: each address twice, one valid
            a = np.repeat(a, 2, axis=1)
            valid = np.zeros(a.shape, bool)
            valid[:, ::2] = True
            if kind == 7:                    # the invalid twin moved: still the same span
                a[:, 1::2] += 3 * size
        elif kind == 5:                      # one more word, invalid in every row
            a = np.concatenate([a, a[:, -1:] + size], axis=1)
            valid = np.ones(a.shape, bool)
            valid[:, -1] = False
        elif kind == 6:                      # invalid in one row only where others are valid
            valid[:, 0] = False
            if m > 1:
                valid[int(rng.integers(m)), 0] = True
        elif kind == 8:                      # nothing valid
            valid[:] = False
        n = int(rng.choice([64, lo + k * size, lo + k * size - 1, 4096]))
        offset = int(rng.choice([0, 0, 32, -lo, 2]))
        want = _span_by_words(a, valid, size, n, offset)
        got = batch_prep._dense_span(a, valid, size, n, offset)
        if want is None:
            assert got is None, (trial, kind)
        else:
            assert got is not None and got[:2] == want[:2], (trial, kind)
            assert np.arange(a[0].size)[got[2]].tolist() == want[2], (trial, kind)
        seen[want is not None] += 1
        kinds[kind, want is not None] += 1
    assert seen[True] > 100 and seen[False] > 100
    for kind in (0, 4, 5, 7):        # the partly valid kinds do give spans
        assert kinds[kind, True] > 10, kinds


def test_column_of_recycles_only_dropped_columns(monkeypatch):
    """column_of (verify's stacked region columns) is np.concatenate's result in recycled
    memory: a held column keeps its bytes while later columns of the same size reuse the
    memory of a dropped one, and the pool keeps no more than _RECYCLE_TOTAL bytes."""
    if not batch_prep._REFCOUNTS:
        pytest.skip("sys.getrefcount does not count holders here: recycling is off")
    monkeypatch.setattr(batch_prep, "RECYCLE", True)
    monkeypatch.setattr(batch_prep, "_RECYCLE_MIN", 0)
    monkeypatch.setattr(batch_prep, "_RECYCLED", [])
    rng = np.random.default_rng(3)
    parts = [[rng.integers(0, 256, int(rng.integers(0, 300)), np.uint8) for _ in range(5)]
             for _ in range(4)]
    for p in parts:                                 # the same total size: one pool size
        p.append(np.zeros(2000 - sum(x.size for x in p), np.uint8))
    held = batch_prep.column_of(parts[0])
    gone = batch_prep.column_of(parts[1]).ctypes.data
    again = batch_prep.column_of(parts[2])
    assert again.ctypes.data == gone != held.ctypes.data
    np.testing.assert_array_equal(held, np.concatenate(parts[0]))
    np.testing.assert_array_equal(again, np.concatenate(parts[2]))
    assert batch_prep.column_of([]).size == 0
    monkeypatch.setattr(batch_prep, "_RECYCLE_TOTAL", 5000)   # two 2064-byte buffers fit
    keep = [batch_prep.column_of(p) for p in parts]
    assert sum(a.nbytes for a in batch_prep._RECYCLED) <= 5000
    for k, p in zip(keep, parts):
        np.testing.assert_array_equal(k, np.concatenate(p))


# ------------------------------------------ plain values and sparse byte masks --------------

def _values_by_rule(tensors, operands, params, names):
    """What batch_prep._case_values decides, value by value (its docstring's rule): every
    operand's pair unpacks into ``addr, size``, integers (Python or numpy, not bool) in
    ``[0, _PLAIN)``; every parameter an integer in ``[-_PLAIN, _PLAIN)``."""
    plain = batch_prep._PLAIN

    def integer(v):
        return type(v) is int or isinstance(v, np.integer)

    try:
        pairs = [tensors[t] for t in operands]
        pv = [params[k] for k in names]
    except (KeyError, TypeError):
        return None
    out = []
    for pr in pairs:
        try:
            a, n = pr
        except (TypeError, ValueError):
            return None
        for v in (a, n):
            if not (integer(v) and 0 <= v < plain):
                return None
            out.append(int(v))
    for v in pv:
        if not (integer(v) and -plain <= v < plain):
            return None
        out.append(int(v))
    return out


def test_case_values_is_the_value_by_value_rule():
    """_case_values (C item getters and map checks for tuples of Python ints, a loop for the
    rest) returns exactly what the value-by-value rule does, as the same Python ints, over
    pairs that are tuples, lists, arrays, 1- and 3-tuples and strings, and values that are
    ints at and past the range ends, numpy ints, bools, floats and None, with missing keys."""
    rng = np.random.default_rng(11)
    plain = batch_prep._PLAIN
    values = [0, 1, 32, 2**31, plain - 1, plain, -1, -plain, -plain - 1, np.int64(64),
              np.uint64(2**63), np.int32(-5), True, np.bool_(False), 3.0, None, "7"]
    shapes = ["tuple", "tuple", "tuple", "list", "array", "one", "three", "str"]
    seen = {True: 0, False: 0}
    for trial in range(3000):
        operands = ("dst", "src", "work")[:int(rng.integers(1, 4))]
        names = ("repeat", "dst_rep_stride", "src_rep_stride")[:int(rng.integers(1, 4))]
        pick = lambda: values[int(rng.integers(len(values)))] if rng.random() < 0.3 else \
            int(rng.integers(0, 4096))  # noqa: E731
        tensors = {}
        for t in operands:
            a, n, shape = pick(), pick(), shapes[int(rng.integers(len(shapes)))]
            tensors[t] = {"tuple": (a, n), "list": [a, n], "one": (a,), "three": (a, n, 1),
                          "str": "ab", "array": np.array([7, 9])}[shape]
        params = {k: pick() for k in names}
        if rng.random() < 0.05:
            del tensors[operands[0]]
        if rng.random() < 0.05:
            del params[names[-1]]
        want = _values_by_rule(tensors, operands, params, names)
        got = batch_prep._case_values(tensors, operands, params, names)
        assert got == want, (trial, tensors, params)
        assert got is None or all(type(v) is int for v in got)
        seen[want is not None] += 1
    assert seen[True] > 300 and seen[False] > 300, seen


class _Dict(dict):
    pass


class _Str(str):
    pass


def _key_cases(seed: int) -> list:
    """Drawn and adversarial cases (:func:`_cases`), replicas of some (groups of more than
    one case) and type confusions within one head: an option True beside 1, a str subclass
    as product, a dict subclass as tensors, numpy ints among Python ints, masks as lists and
    tuples of two lengths, a negative count, bools, ints past 64 bits; shuffled."""
    rng = np.random.default_rng(seed)
    base = _cases(12, seed)
    out = list(base)
    for c in base[::2]:
        for i in range(int(rng.integers(2, 6))):
            d = copy.copy(c)
            d.params, d.tensors = dict(c.params), dict(c.tensors)
            edit = int(rng.integers(0, 13))
            k = sorted(d.params)[0]
            if edit == 1:
                d.option = True if d.option == 1 else d.option
            elif edit == 2:
                d.chip = _Str(d.chip) if isinstance(d.chip, str) else d.chip
            elif edit == 3:
                d.tensors = _Dict(d.tensors)
            elif edit == 4 and type(d.params[k]) is int:
                d.params[k] = np.int64(d.params[k])
            elif edit == 5:
                d.mask = [1, 2]
            elif edit == 6:
                d.mask = (2**64 - 1,)
            elif edit == 7:
                d.mask = -3
            elif edit == 8 and type(d.params[k]) is int:
                d.params[k] = bool(d.params[k] % 2)
            elif edit == 9:
                d.mask = [2**63, 5]
            elif edit == 10:
                d.mask = 2**70 if rng.random() < 0.5 else [2**70, 0]
            elif edit == 11 and type(d.params[k]) is int:
                d.params[k] = -(2**70)
            out.append(d)
    order = rng.permutation(len(out))
    return [out[k] for k in order.tolist()]


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_group_keys_equal_the_case_by_case_keys(seed, monkeypatch):
    """group_keys (each head's cases checked as columns) gives what _group_key gives case
    by case: the same lone cases, the same keys in the same order, and per key the same
    positions, values (int64) and mask words (uint32) row by row; the column checks pass
    for some heads and refuse others (then the cases are keyed one by one)."""
    calls = collections.Counter()
    bulk = batch_prep._bulk_group

    def spy(cases, heads):
        got = bulk(cases, heads)
        calls[got is not None] += 1
        return got

    monkeypatch.setattr(batch_prep, "_bulk_group", spy)
    cases = _key_cases(seed)
    lone, groups = batch_prep.group_keys(cases)
    want_lone, want = batch_prep._keys_one_by_one(cases)
    assert lone == want_lone
    assert list(groups) == list(want)
    for key, (ks, vals, words) in groups.items():
        wk, wv, ww = want[key]
        for a, b in ((ks, wk), (vals, wv), (words, ww)):
            assert a.dtype == b.dtype and a.shape == b.shape, key
            np.testing.assert_array_equal(a, b, err_msg=str(key))
    assert calls[True] >= 2 and calls[False] >= 1, calls
    assert len(lone) >= 3 and len(groups) >= 3, (len(lone), len(groups))


def test_group_keys_unhashable_option_keys_every_case_alone():
    """An unhashable option (a list) anywhere: every case keyed alone, as _group_key does."""
    cases = _cases(4, 9)
    odd = copy.copy(cases[0])
    odd.option = [1]
    cases = cases + [odd]
    lone = batch_prep.group_keys(cases)[0]
    assert lone == batch_prep._keys_one_by_one(cases)[0]
    assert len(cases) - 1 in lone


def test_consecutive_rows_only_for_one_arrays_aligned_rows():
    """consecutive_rows: rows k, k + 1, ... of one C-contiguous array, the first 64-byte
    aligned (rows of any width), as one read-only view of the same memory; None for rows out
    of order, with a gap, of two arrays, starting unaligned, of another dtype or width, or
    copies."""
    a = batch_prep.aligned_zeros((6, 128))
    a[...] = np.arange(6 * 128, dtype=np.uint8).reshape(6, 128)
    got = batch_prep.consecutive_rows([a[k] for k in range(1, 5)])
    assert got is not None and not got.flags.writeable
    np.testing.assert_array_equal(got, a[1:5])
    assert np.shares_memory(got, a)
    ro_rows = batch_prep.aligned_zeros((3, 64))
    ro_rows.flags.writeable = False                   # read-only rows: the slower pointer read
    assert batch_prep.consecutive_rows([ro_rows[k] for k in range(3)]) is not None
    b = batch_prep.aligned_zeros((6, 128))
    un = batch_prep.aligned_zeros((1, 6 * 128 + 16))[0, 16:].reshape(6, 128)
    narrow = batch_prep.aligned_zeros((4, 96))
    got = batch_prep.consecutive_rows([narrow[0], narrow[1], narrow[2]])   # 96-byte rows
    assert got is not None and np.shares_memory(got, narrow) and got.shape == (3, 96)
    for rows in ([a[1], a[0]], [a[0], a[2]], [a[0], b[1]], [un[0], un[1]],
                 [a[0], a[1].copy()], [narrow[1], narrow[2]], [],
                 [a.view(np.int8)[0], a.view(np.int8)[1]], [a[0][:64], a[1][:64]]):
        assert batch_prep.consecutive_rows(rows) is None, rows


def test_run_cases_reads_the_cases_rows_in_place(monkeypatch):
    """Cases whose UBs are consecutive aligned rows of one array (one call over many data)
    run run_batch's kernel on those rows in place (Sink.sources_in_place), the stack filled
    after the dispatch: every outcome equal to the copying path's and, for a sample, to the
    oracle's; the callers' UBs unchanged."""
    from ascend_ref import batch
    from ascend_ref.case import run_oracle

    rng = np.random.default_rng(21)
    r, n = 16, 16 * 256 + 64              # the value-index pairs: 2 R halves after the source
    ubs = batch_prep.aligned_zeros((192, n))
    ubs[...] = rng.standard_normal((192, n // 2)).astype(np.float16).view(np.uint8)
    ubs[3, :512] = np.full(256, np.nan, np.float16).view(np.uint8)          # all-NaN repeats
    ubs[4, :1024] = 0
    before = ubs.copy()
    params = {"repeat": r, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    cases = [Case("whole_reduce_max", "atlas_a2", "float16", "ORDER_VALUE_INDEX", 128, params,
                  {"src": (0, r * 128), "dst": (r * 256, 32)}, ubs[k]) for k in range(192)]
    seen = []
    orig = batch_prep.Sink.sources_in_place

    def spy(self, rows, b):
        got = orig(self, rows, b)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(batch_prep.Sink, "sources_in_place", spy)
    got = ar.run_cases(cases)
    assert any(seen), seen
    monkeypatch.setattr(batch_prep, "READ_SOURCES", False)
    want = ar.run_cases(cases)
    np.testing.assert_array_equal(ubs, before)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.code is None and diff(a, b) is None, k
    for k in (0, 3, 4, 191):
        assert diff(run_oracle(cases[k]), got[k]) is None, k
    assert batch.SHARED_ROWS


def test_a_write_table_no_case_writes_is_skipped_with_the_same_outcomes(monkeypatch):
    """vec_reduce_add float, one call over many data: its work-tensor table holds no valid
    word (the work tensor is left undefined, not written), and _merge skips such a table;
    every outcome (bytes, written and undefined masks) equals the public function's."""
    rng = np.random.default_rng(5)
    r, n = 2, 640
    ubs = batch_prep.aligned_zeros((8, n))
    ubs[:, :512] = rng.standard_normal((8, 128)).astype(np.float32).view(np.uint8)
    ubs[1, :4] = np.array([np.nan], np.float32).view(np.uint8)
    ubs[2, :8] = np.array([np.inf, -np.inf], np.float32).view(np.uint8)
    cases = [Case("vec_reduce_add", "atlas_a2", "float32", None, 64,
                  {"repeat": r, "src_rep_stride": 8},
                  {"src": (0, 128), "dst": (512, 8), "work_tensor": (544, 2)}, ubs[k])
             for k in range(8)]
    tables = []
    orig = batch_prep._merge

    def spy(rows, sel, into, at, writes, regions, words):
        tables.extend(bool(np.asarray(valid).any()) for _, _, valid in writes)
        return orig(rows, sel, into, at, writes, regions, words)

    monkeypatch.setattr(batch_prep, "_merge", spy)
    got = ar.run_cases(cases)
    assert False in tables and True in tables, tables
    for k, c in enumerate(cases):
        want = run_jax(c)
        assert got[k].code is None and diff(got[k], want) is None, k
        for x, y in ((got[k].ub, want.ub), (got[k].written, want.written),
                     (got[k].undefined, want.undefined)):
            np.testing.assert_array_equal(x, y, err_msg=f"case {k}")


def test_written_masks_cleared_or_mapped_give_the_same_outcomes(monkeypatch):
    """written_zeros: narrow rows from cleared recycled memory, wide ones mapped: the same
    outcomes either way; an outcome held from one call keeps its masks when the next call
    reuses memory (the per-case test's first draws: their kernels are compiled already)."""
    cases = _cases(12, 7)
    monkeypatch.setattr(batch_prep, "_RECYCLE_MIN", 0)         # recycle even small tables
    monkeypatch.setattr(batch_prep, "WRITTEN_DENSE", False)
    mapped = ar.run_cases(cases)
    monkeypatch.setattr(batch_prep, "WRITTEN_DENSE", True)
    first = ar.run_cases(cases)
    held = [o.written.copy() if o.code is None else None for o in first]
    cleared = ar.run_cases(cases)
    n = 0
    for k, (a, b, c) in enumerate(zip(mapped, first, cleared)):
        assert diff(a, b) is None and diff(a, c) is None, k
        if a.code is None:
            np.testing.assert_array_equal(b.written, held[k], err_msg=str(k))
            np.testing.assert_array_equal(a.written, c.written, err_msg=str(k))
            n += 1
    assert n > 10, n
    w = batch_prep.written_zeros((4, 100))
    assert w.dtype == bool and not w.any() and w.flags.writeable
    assert isinstance(_owner(batch_prep.written_zeros((64, 1 << 16))), batch_prep.mmap.mmap) \
        or not batch_prep.SPARSE_MMAP


def test_sparse_masks_give_the_same_outcomes(monkeypatch):
    """run_cases' written / undefined byte masks from anonymous mappings (sparse_zeros, here
    for every table size) are the same bits as from np.zeros, each outcome's UB row
    writable and its own (the mask rows: test_pooled_mask_...); where no mapping can be
    made, sparse_zeros falls back to np.zeros."""
    cases = _cases(6, 7)
    monkeypatch.setattr(batch_prep, "SPARSE_MMAP", False)
    plain = ar.run_cases(cases)
    monkeypatch.setattr(batch_prep, "SPARSE_MMAP", True)
    monkeypatch.setattr(batch_prep, "_SPARSE_MIN", 0)
    mapped = ar.run_cases(cases)
    ok, undefined = [], 0
    for k, (a, b) in enumerate(zip(plain, mapped)):
        assert a.code == b.code, k
        if a.code is None:
            for x, y in ((a.ub, b.ub), (a.written, b.written), (a.undefined, b.undefined)):
                np.testing.assert_array_equal(x, y, err_msg=f"case {k}")
            assert b.ub.flags.writeable
            ok.append(b)
            undefined += int(b.undefined.any())
    assert len(ok) > 10 and undefined > 0, (len(ok), undefined)
    first, other = ok[0], ok[1]
    before = other.ub.copy()
    first.ub[:] = 255
    np.testing.assert_array_equal(other.ub, before)             # rows do not share bytes
    t = batch_prep.sparse_zeros((3, 5000))
    assert t.dtype == bool and t.shape == (3, 5000) and not t.any()
    mapping = batch_prep.mmap.mmap
    assert isinstance(_owner(t), mapping)

    def no_map(*args, **kw):
        raise OSError("no mapping")

    monkeypatch.setattr(batch_prep.mmap, "mmap", no_map)
    t = batch_prep.sparse_zeros((3, 5000))
    assert t.dtype == bool and t.shape == (3, 5000) and not t.any() and t.flags.writeable
    assert not isinstance(_owner(t), mapping)


def _sum_cases(dsts, n=8192):
    """WholeReduceSum float cases on UBs of ``n`` bytes, case ``k`` writing at ``dsts[k]``."""
    rng = np.random.default_rng(len(dsts))
    params = {"repeat": 2, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    out = []
    for d in dsts:
        ub = np.zeros(n, np.uint8)
        ub[:512] = rng.standard_normal(128).astype(np.float32).view(np.uint8)
        out.append(Case("whole_reduce_sum", "atlas_a2", "float32", None, 64, dict(params),
                        {"dst": (int(d), 8), "src": (0, 128)}, ub))
    return out


def test_pooled_mask_tables_are_cleared_where_marked_and_never_shared(monkeypatch):
    """run_cases hands a dropped call's written table out again, cleared where the merge
    marked it (a one-span chunk's box, a scattered chunk's bounding box): the same masks
    as a fresh table, call after call; the rows are read-only (as run_jax's), so only the
    merge marks a pooled table; a table an outcome still holds is never handed out."""
    b = 160                                            # 160 x 8 KiB: pooled (>= 1 MiB)
    same = _sum_cases([4096] * b)                      # one span: the dense merge
    scattered = _sum_cases([1024 + 32 * (k % 50) for k in range(b)])   # the scatter merge
    monkeypatch.setattr(batch_prep, "MASK_POOL", False)
    want = {id(c): [o.written.copy() for o in ar.run_cases(c)] for c in (same, scattered)}
    monkeypatch.setattr(batch_prep, "MASK_POOL", True)
    batch_prep._MASK_POOL.clear()
    owners = []
    for cases in (same, scattered, same, scattered):
        got = ar.run_cases(cases)
        assert all(o.code is None for o in got)
        for k, o in enumerate(got):
            np.testing.assert_array_equal(o.written, want[id(cases)][k], err_msg=str(k))
        assert not got[0].written.flags.writeable
        with pytest.raises(ValueError):
            got[0].written[0] = True
        # ids: a reference would keep a table (written and undefined come from one pool)
        owners += [id(_owner(got[0].written)), id(_owner(got[0].undefined))]
        del got, o
    # the first two tables were handed out again each time (else this test proves nothing)
    assert len(set(owners)) == 2, str([sorted(set(owners)).index(x) for x in owners])
    held = ar.run_cases(same)
    again = ar.run_cases(scattered)
    assert not np.shares_memory(held[0].written, again[0].written)
    for k, o in enumerate(held):
        np.testing.assert_array_equal(o.written, want[id(same)][k], err_msg=str(k))


def test_pooled_undefined_tables_are_cleared_where_marked(monkeypatch):
    """TIK vec_reduce_add leaves its work tensor undefined: the undefined table is pooled as
    the written one is (marks by span and by word), the same masks as fresh tables."""
    rng = np.random.default_rng(3)

    def cases(work):                    # 160 x 8 KiB UBs; work tensor at work[k]
        out = []
        for w in work:
            ub = np.zeros(8192, np.uint8)
            ub[:1024] = rng.standard_normal(256).astype(np.float32).view(np.uint8)
            out.append(Case("vec_reduce_add", "atlas_training", "float32", None, 64,
                            {"repeat": 4, "src_rep_stride": 8},
                            {"src": (0, 256), "dst": (1024, 8), "work_tensor": (int(w), 4)},
                            ub))
        return out

    one = cases([4096] * 160)
    many = cases([2048 + 32 * (k % 40) for k in range(160)])
    monkeypatch.setattr(batch_prep, "MASK_POOL", False)
    want = {id(c): [(o.written.copy(), o.undefined.copy()) for o in ar.run_cases(c)]
            for c in (one, many)}
    assert all(u.any() for _, u in want[id(one)])       # the work tensor: undefined
    monkeypatch.setattr(batch_prep, "MASK_POOL", True)
    batch_prep._MASK_POOL.clear()
    owners = []
    for cs in (one, many, one, many):
        got = ar.run_cases(cs)
        for k, o in enumerate(got):
            assert o.code is None, k
            np.testing.assert_array_equal(o.written, want[id(cs)][k][0], err_msg=str(k))
            np.testing.assert_array_equal(o.undefined, want[id(cs)][k][1], err_msg=str(k))
        assert not got[0].undefined.flags.writeable and got[0].ub.flags.writeable
        owners += [id(_owner(got[0].written)), id(_owner(got[0].undefined))]
        del got, o
    assert len(set(owners)) == 2, owners              # the two tables, handed out each time
    # by word: ReduceDataBlock on atlas_training leaves an empty block's result undefined
    blocks = []
    for k in range(160):
        ub = np.zeros(8192, np.uint8)
        ub[:512] = rng.standard_normal(256).astype(np.float16).view(np.uint8)
        blocks.append(Case("reduce_data_block", "atlas_training", "float16", "SUM", 16,
                           {"repeat": 2, "dst_rep_stride": 1, "src_blk_stride": 1,
                            "src_rep_stride": 8},
                           {"src": (0, 256), "dst": (4096 + 32 * (k % 20), 16)}, ub))
    monkeypatch.setattr(batch_prep, "MASK_POOL", False)
    want[id(blocks)] = [(o.written.copy(), o.undefined.copy()) for o in ar.run_cases(blocks)]
    assert all(u.any() for _, u in want[id(blocks)])
    monkeypatch.setattr(batch_prep, "MASK_POOL", True)
    for cs in (one, blocks, many, blocks, one):
        got = ar.run_cases(cs)
        for k, o in enumerate(got):
            np.testing.assert_array_equal(o.written, want[id(cs)][k][0], err_msg=str(k))
            np.testing.assert_array_equal(o.undefined, want[id(cs)][k][1], err_msg=str(k))
        owners += [id(_owner(got[0].written)), id(_owner(got[0].undefined))]
        got = o = None                      # every outcome dropped: the tables are free
    assert len(set(owners)) == 2, str([sorted(set(owners)).index(x) for x in owners])


def test_a_pooled_table_goes_out_clean_in_another_shape_of_its_size():
    """The boxes are cleared in the shape they were marked in: a campaign's chunks of
    another row count and width but the same size got a table still marked (stale written
    / undefined bytes, a fuzz mismatch)."""
    t, marks = batch_prep.pooled_mask((64, 1 << 15))
    t[5:9, 100:110] = True
    marks.append((5, 9, 100, 110))
    del t
    t2, marks2 = batch_prep.pooled_mask((128, 1 << 14))
    assert marks2 is marks and not t2.any()              # reused, and clean
    t2[100:101, 3:4] = True
    marks2.append((100, 101, 3, 4))
    del t2
    t3, marks3 = batch_prep.pooled_mask((64, 1 << 15))
    assert marks3 is marks and not t3.any()


def test_a_pooled_table_marked_over_half_is_not_reused():
    """(The pool entry is told by its marks list: a reference to the table would keep it.)"""
    t, marks = batch_prep.pooled_mask((64, 1 << 15))
    assert marks is not None and not t.any()
    t[:, :20000] = True
    marks.append((0, 64, 0, 20000))
    del t
    t2, marks2 = batch_prep.pooled_mask((64, 1 << 15))
    assert not t2.any() and marks2 == [] and marks2 is not marks
    t2[3, 7] = True
    marks2.append((3, 4, 7, 8))
    del t2
    t3, marks3 = batch_prep.pooled_mask((64, 1 << 15))
    assert not t3.any() and marks3 is marks2 and marks3 == []
    held, _ = batch_prep.pooled_mask((64, 1 << 15))        # t3 is held: another table
    assert not np.shares_memory(held, t3)


def _owner(a):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a.obj if isinstance(a, memoryview) else a


def test_scatter_flat_stores_into_padded_rows():
    """_scatter_flat into rows of contiguous bytes further apart (Sink's stacks, padded to 64
    bytes) stores each word's little-endian bytes at its (row, byte), as written out byte by
    byte here, and nothing into the padding; words aligned or not, into a C-contiguous
    array too."""
    rng = np.random.default_rng(5)
    for n, dtype in ((100, np.uint32), (96, np.uint32), (70, np.uint16), (64, np.uint16)):
        size = np.dtype(dtype).itemsize
        for aligned in (True, False):
            cols = np.arange(0, n - size + 1, size if aligned else size + 1)
            pos = np.array([r * n + c for r in range(4) for c in cols.tolist()])
            pos = rng.choice(pos, min(30, pos.size), replace=False)
            bits = rng.integers(0, 2**31, pos.size).astype(dtype)
            width = -(-n // 64) * 64
            want = np.full((4, width), 7, np.uint8)
            for f, v in zip(pos.tolist(), bits.tolist()):
                for k in range(size):
                    want[f // n, f % n + k] = (v >> (8 * k)) & 0xFF
            store = np.full((4, width), 7, np.uint8)
            batch_prep._scatter_flat(store[:, :n], pos, bits)
            np.testing.assert_array_equal(store, want)
            dense = np.full((4, n), 7, np.uint8)
            batch_prep._scatter_flat(dense, pos, bits)
            np.testing.assert_array_equal(dense, want[:, :n])


def test_mark_spans_is_the_slice_by_slice_rule():
    """mark_spans (one 2-D store for equal spans, else one slice each) marks what a slice
    per (row, span) marks, empty spans skipped, and says whether it marked anything; over
    equal spans, mixed spans, empty ones and rows named twice."""
    rng = np.random.default_rng(11)
    for trial in range(300):
        k = int(rng.integers(1, 7))
        rows = rng.integers(0, 4, k)
        lo = rng.integers(0, 20, k)
        hi = lo + rng.integers(-2, 8, k)
        if trial % 3 == 0:                                  # every span the same bytes
            lo, hi = np.full(k, lo[0]), np.full(k, hi[0])
        hi = np.clip(hi, 0, 24)
        want = np.zeros((4, 24), bool)
        for r, a, z in zip(rows.tolist(), lo.tolist(), hi.tolist()):
            if z > a:
                want[r, a:z] = True
        got = np.zeros((4, 24), bool)
        assert batch_prep.mark_spans(got, rows, lo, hi) == bool((hi > lo).any())
        np.testing.assert_array_equal(got, want)
