"""The instruction registry's declarations agree with the instructions (issue 10, item 1).

Each declared fact is checked against something that does not read the declaration: the
public functions' own signatures, the product profiles, and the scalar oracle (an
independent implementation that never imports the registry): the bytes it writes (slot
layout, roles), the work_tensor size it accepts (work need) and the repeat counts it
accepts (repeat range).
"""

import inspect

import numpy as np
import pytest

import ascend_ref as ar
from ascend_ref import oracle, registry
from ascend_ref.case import Case, run_oracle
from ascend_ref.chips import API_NAMES
from ascend_ref.constraints import Code, ConstraintError

INSTRUCTIONS = registry.all()
CHIP = {"ascendc": "atlas_a2", "tik": "atlas_training"}


def test_every_profile_api_is_registered_and_every_instruction_is_public():
    assert set(API_NAMES) == set(registry.names())
    for ins in INSTRUCTIONS:
        assert registry.lookup(ins.name) is ins
        assert callable(ins.public(ar)) and callable(ins.public(oracle))
    with pytest.raises(ConstraintError) as e:
        registry.lookup("whole_reduce_median")
    assert e.value.code == Code.BAD_ARGUMENT


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=lambda i: i.name)
def test_declared_signature_is_the_public_one(ins):
    """The declared positional parameters are the public function's (JAX and oracle), with
    ``repeat`` standing for the API's own name of the repeat count."""
    for impl in (ar, oracle):
        params = list(inspect.signature(ins.public(impl)).parameters.values())
        positional = [p.name for p in params[1:] if p.kind == p.POSITIONAL_OR_KEYWORD]
        want = [ins.public_arg(n) for n in ins.signature]
        assert positional == want, impl.__name__
        keywords = {p.name for p in params if p.kind == p.KEYWORD_ONLY}
        assert ("saturate" in keywords) == ins.saturating
        if ins.option is not None and not ins.option.positional:
            assert ins.option.key in keywords


def _case(ins, dtype, option, repeat, work=None, **kw):
    """A call with every lane active, src at 0 (``repeat`` repeats of distinct values), dst
    and work_tensor far apart and filled with a sentinel."""
    s = np.dtype(dtype).itemsize
    lanes = 256 // s
    src_n = max(repeat, 1) * lanes
    vals = ((np.arange(src_n) + 17) % 61 + 1).astype(dtype)   # min at lane 44, max at 43
    ub = np.full(65536, 0x5A, np.uint8)
    ub[:src_n * s] = vals.view(np.uint8)
    params = {"repeat": repeat, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8}
    if ins.kernel.count_form:              # the count form: ``repeat`` full repeats' elements
        params["repeat"] = repeat * lanes
    tensors = {"src": (0, src_n), "dst": (32768, 4096 // s)}
    if "work_tensor" in ins.operands:
        tensors["work_tensor"] = (49152, work if work is not None else 8192 // s)
    return Case(ins.name, kw.get("chip", CHIP[ins.family]), dtype, option, lanes,
                {k: params[k] for k in ins.params}, tensors, ub)


def _variants():
    for ins in INSTRUCTIONS:
        prof = ar.chip(CHIP[ins.family])
        for dtype in ("float16", "float32"):
            if dtype not in prof.dtypes(ins.name):
                continue
            for opt in ins.options(prof):
                yield pytest.param(ins, dtype, opt, id=f"{ins.name}-{dtype}-{opt}")


@pytest.mark.parametrize("ins,dtype,option", list(_variants()))
def test_layout_is_where_the_oracle_writes(ins, dtype, option):
    """dst: one slot per repeat (Ascend C, dst_rep_stride 1: back to back) or one result
    (TIK) of exactly ``slot_bytes``; work_tensor: at most one entry per repeat."""
    lay = ins.layout(dtype, option)
    r = 3
    out = run_oracle(_case(ins, dtype, option, r))
    assert out.code is None
    dst = np.flatnonzero(out.written[32768:49152])
    assert dst.size and dst.min() == 0
    assert dst.max() + 1 == (r * lay.slot_bytes if lay.per_repeat else lay.slot_bytes)
    if "work_tensor" in ins.operands:
        work = np.flatnonzero(out.written[49152:])
        assert work.size == 0 or work.max() + 1 <= r * lay.entry_bytes


def _indexed(v) -> bool:
    ins, dtype, option = v.values
    return ins.layout(dtype, option).groups == 1 and ins.has_index(option, dtype)


@pytest.mark.parametrize("ins,dtype,option", [v for v in _variants() if _indexed(v)])
def test_index_role_fields_hold_the_oracles_index(ins, dtype, option):
    """A field whose declared role is ``index`` holds the winning lane (repeat 0 of a
    source of 1..61 repeating from 18: lane 44 holds the first minimum, lane 43 the first
    maximum, so a field of zero bytes or the wrong lane does not pass)."""
    lay = ins.layout(dtype, option)
    idx = [k for k, f in enumerate(lay.dst) if f.role == "index"]
    out = run_oracle(_case(ins, dtype, option, 1))
    s = np.dtype(dtype).itemsize
    lanes = 256 // s
    vals = (np.arange(lanes) + 17) % 61 + 1
    want = int(np.argmin(vals)) if ins.kind(option) == "min" else int(np.argmax(vals))
    assert want in (43, 44)
    off = sum(f.nbytes for f in lay.dst[:idx[0]])
    raw = out.ub[32768 + off:32768 + off + lay.dst[idx[0]].nbytes]
    assert int.from_bytes(raw.tobytes(), "little") == want


@pytest.mark.parametrize("ins,dtype,option", list(_variants()))
def test_repeat_range_is_what_the_oracle_accepts(ins, dtype, option):
    lo, hi = ins.repeat_range(option, dtype)
    big = _case(ins, dtype, option, 1)
    big.params["repeat"] = hi + 1
    if "src_rep_stride" in big.params:           # the count form has no stride
        big.params["src_rep_stride"] = 0
    assert run_oracle(big).code == Code.REPEAT_RANGE
    if lo >= 1:
        small = _case(ins, dtype, option, 1)
        small.params["repeat"] = lo - 1
        assert run_oracle(small).code == Code.REPEAT_RANGE


@pytest.mark.parametrize("ins,dtype,option", [v for v in _variants()
                                              if v.values[0].work_need is not None])
@pytest.mark.parametrize("r", [1, 2, 65])
def test_work_need_is_the_smallest_work_tensor_the_oracle_accepts(ins, dtype, option, r):
    kw = {}
    n = r
    if ins.kernel.count_form:     # the count form: r repeats' elements, on a product whose
        n = r * 256 // np.dtype(dtype).itemsize      # sum and max / min use the buffer
        kw["chip"] = "atlas_inference_aicore"
    need = ins.work_elements(n, option, dtype)
    assert run_oracle(_case(ins, dtype, option, r, work=need, **kw)).code is None
    assert run_oracle(_case(ins, dtype, option, r, work=need - 1, **kw)).code == Code.WORK_SIZE


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=lambda i: i.name)
def test_option_text_forms_normalise_to_what_the_public_function_takes(ins):
    if ins.option is None:
        assert ins.normalise_option(None) is None
        with pytest.raises(ValueError):
            ins.normalise_option("SUM")
        return
    for v in ins.options():
        assert ins.normalise_option(v) == v
        assert ins.option.parse(v, api=ins.name) == v
    if isinstance(ins.option, registry.EnumOption):
        first = ins.options()[0]
        short = first[len(ins.option.prefix):].lower()
        assert ins.normalise_option(short) == first       # "value_index" -> ORDER_VALUE_INDEX
        with pytest.raises(ValueError):
            ins.normalise_option("NOT_AN_OPTION")


def test_kind_is_what_the_oracle_computes():
    """``kind`` / ``sums``: on all-ones half data a sum gives the lanes of its group (128, or
    16 per DataBlock), a min / max gives 1; read from the first value-role field."""
    for ins in INSTRUCTIONS:
        for opt in ins.options(ar.chip(CHIP[ins.family])):
            c = _case(ins, "float16", opt, 1)
            c.ub[:256] = np.ones(128, np.float16).view(np.uint8)
            lay = ins.layout("float16", opt)
            value = [k for k, f in enumerate(lay.dst) if f.role == "value"]
            if not value:
                continue                                  # ORDER_ONLY_INDEX: no value field
            off = sum(f.nbytes for f in lay.dst[:value[0]])
            got = float(run_oracle(c).ub[32768 + off:32770 + off].view(np.float16)[0])
            assert got == (128 / lay.groups if ins.sums(opt) else 1.0), (ins, opt)
            assert ins.kind(opt) in (("sum",) if ins.sums(opt) else ("min", "max"))


def _masks(ins, dtype):
    """A continuous and a sparse bit mask (lanes 0, 15 and 67 / 3 on 32-bit types), in the
    instruction's word order."""
    lanes = 256 // np.dtype(dtype).itemsize
    low = [(1 << 0) | (1 << 15) | ((1 << 3) if lanes == 64 else 0),
           (1 << 3) if lanes == 128 else 0]
    words = low[::-1] if ins.word_order == "tik" else (low if lanes == 128 else low[:1])
    return [37, words] if "bits" in ins.mask_modes else [37]    # RepeatReduceSum: no bit mode


@pytest.mark.parametrize("ins,dtype,option", list(_variants()))
def test_read_extent_is_the_smallest_source_the_oracle_accepts(ins, dtype, option):
    """``read_extent``: a source tensor of exactly that many bytes is in bounds, one element
    fewer is TENSOR_BOUNDS (the oracle's own addressing)."""
    s = np.dtype(dtype).itemsize
    for mask in _masks(ins, dtype):
        c = _case(ins, dtype, option, 3)
        c.mask = mask
        if "src_rep_stride" in c.params:         # the count form has no stride
            c.params["src_rep_stride"] = 9
        if "src_blk_stride" in c.params:
            c.params["src_blk_stride"] = 2
        p = c.params
        r = p["repeat"]                       # 3 (the count form: 3 repeats' elements)
        need = ins.read_extent(dtype, mask, r, 9, p.get("src_blk_stride"))
        assert need % s == 0 and need <= ins.src_footprint(r, 9, p.get("src_blk_stride"))
        c.tensors["src"] = (0, need // s)
        assert run_oracle(c).code is None, (mask, need)
        c.tensors["src"] = (0, need // s - 1)
        assert run_oracle(c).code == Code.TENSOR_BOUNDS, (mask, need)


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=lambda i: i.name)
def test_rep_stride_fitting_is_the_largest_stride_whose_footprint_fits(ins):
    if ins.kernel.count_form:             # no stride: the first count elements, contiguous
        assert ins.rep_stride_fitting(255, 100_000) == 2**31 - 1
        assert ins.rep_stride_fitting(100_000, 300) == 0
        return
    for r in (2, 7, 255):
        for n in (300, 4096, 100_000):
            for blk in (1, 3):
                k = ins.rep_stride_fitting(r, n, blk)
                assert ins.src_footprint(r, k + 1, blk) > n
                assert k == 0 or ins.src_footprint(r, k, blk) <= n
    assert ins.rep_stride_fitting(1, 10, 1) >= 65535          # one repeat: any stride
