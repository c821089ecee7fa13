"""Golden files: each shipped kernel, byte for byte against an independent model.

The independent model regenerates the inputs the way a sample's ``gen_data.py`` does
(``np.random.seed``; ``np.random.uniform``), lays the UB out itself, and runs the scalar
oracle (``ascend_ref.oracle``, which shares no code with the JAX path); where plain numpy can
compute the answer (max, argmin, float32 trees) that is checked too.
"""

import types

import numpy as np
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

import ascend_ref as ar
from ascend_ref import oracle
from ascend_ref.chips import config_dir
from ascend_ref.cli import main as cli_main
from ascend_ref.golden import GoldenError, generate, load_kernel
from ascend_ref.verify import verify

KERNELS = sorted(p.stem for p in (config_dir() / "kernels").glob("*.toml"))


def T(addr, dtype, size):
    return types.SimpleNamespace(addr=addr, dtype=dtype, size=size)


def independent(name):
    """(inputs {file: bytes}, golden bytes) computed without ascend_ref's JAX path."""
    raw = tomllib.loads((config_dir() / "kernels" / f"{name}.toml").read_text())
    dt = {"half": "float16", "float": "float32"}.get(raw["dtype"], raw["dtype"])
    s = np.dtype(dt).itemsize
    (xname, xs), = raw["inputs"].items()
    np.random.seed(xs["seed"])
    if xs["generator"] == "randint":
        x = np.random.randint(xs["low"], xs["high"], xs["shape"]).astype(dt)
    else:
        x = np.random.uniform(xs["low"], xs["high"], xs["shape"]).astype(dt)
    # ReduceRepeat.md id18 (Ascend 950 SUM): an int16 / uint16 source writes int32 / uint32
    od = {"int16": "int32", "uint16": "uint32"}.get(dt, dt)
    os_ = np.dtype(od).itemsize
    stride = xs.get("ub_row_stride", xs["shape"][-1])
    padded = np.zeros((int(np.prod(xs["shape"][:-1])), stride), dt)
    padded[:, :xs["shape"][-1]] = x.reshape(padded.shape[0], -1)
    call, *reads = raw["calls"]          # then reduce special register getters, if any
    if isinstance(call.get("mask"), dict):   # counter mode: mask = { counter = N }
        call = {**call, "mask": ar.CounterMask(call["mask"]["counter"])}
    out = raw["output"]
    n_out = out.get("size") or int(np.prod(out["shape"]))
    ub = np.zeros(65536, np.uint8)
    src_b = padded.view(np.uint8).ravel()
    ub[:src_b.size] = src_b
    dst_addr = 32768
    ub[dst_addr:dst_addr + 4096] = np.full(4096 // os_, out.get("init", 0), od).view(np.uint8)
    api, chip = call["api"], raw["chip"]
    src = T(0, dt, padded.size)
    dst = T(dst_addr, od, 4096 // os_)
    if api == "vec_reduce_add":
        work = T(40960, dt, call["work_size"])
        r = oracle.vec_reduce_add(ub, call["mask"], dst, src, work, call["repeat"],
                                  call["src_rep_stride"], chip=chip)
    elif api == "reduce_max":                          # level 2: sharedTmpBuffer third
        tmp = T(40960, dt, call["work_size"])
        r = oracle.reduce_max(ub, dst, src, tmp, call["mask"], call["repeat"],
                              call["src_rep_stride"], call["cal_index"], chip=chip)
    elif api == "reduce_sum_count":                    # level 2, count form ("repeat": count)
        tmp = T(40960, dt, call["work_size"])
        r = oracle.reduce_sum_count(ub, dst, src, tmp, call["repeat"], chip=chip)
    elif api == "reduce_sum":
        tmp = T(40960, dt, call["work_size"])
        r = oracle.reduce_sum(ub, dst, src, tmp, call["mask"], call["repeat"],
                              call["src_rep_stride"], chip=chip)
    elif api == "pair_reduce_sum":                     # repeat before mask; hex mask words
        mask = [int(w, 16) for w in call["mask"]] if isinstance(call["mask"], list) \
            else call["mask"]
        r = oracle.pair_reduce_sum(ub, dst, src, call["repeat"], mask, call["dst_rep_stride"],
                                   call["src_blk_stride"], call["src_rep_stride"], chip=chip)
    elif api == "repeat_reduce_sum":                   # repeat, mask, dstBlkStride (no effect)
        r = oracle.repeat_reduce_sum(ub, dst, src, call["repeat"], call["mask"], 0,
                                     call["src_blk_stride"], call["dst_rep_stride"],
                                     call["src_rep_stride"], chip=chip)
    elif api.startswith("vc"):                         # TIK vc*: mask first, stride_unit 0
        r = getattr(oracle, api)(ub, call["mask"], dst, src, call["repeat"],
                                 call["dst_rep_stride"], call["src_blk_stride"],
                                 call["src_rep_stride"], 0,
                                 *([call["index_low"]] if "index_low" in call else []),
                                 chip=chip)
    else:
        args = (ub, dst, src, call["mask"], call["repeat"], call["dst_rep_stride"],
                call["src_blk_stride"], call["src_rep_stride"])
        if api == "reduce_data_block":
            r = oracle.reduce_data_block(*args, reduce_type=call["reduce_type"], chip=chip)
        elif api == "whole_reduce_sum":
            r = oracle.whole_reduce_sum(*args, chip=chip)
        else:
            r = getattr(oracle, api)(*args, call["order"], chip=chip)
    golden = r.ub[dst_addr:dst_addr + n_out * os_].copy()
    for rd in reads:                     # the oracle's own register model (oracle.spr)
        assert rd["api"] == "get_reduce_repeat_max_min_spr" and api.startswith("whole_reduce_m")
        _, st = getattr(oracle.spr, api)(oracle.spr.OracleSpr(), ub, dst, src, call["mask"],
                                         call["repeat"], call["dst_rep_stride"],
                                         call["src_blk_stride"], call["src_rep_stride"],
                                         chip=chip)
        value, index = oracle.spr.get_reduce_repeat_max_min_spr(st, dt, chip=chip)
        k = rd["dst_offset"] * os_
        golden[k:k + 2 * s] = np.array([value, index], f"<u{s}").view(np.uint8)
    return {f"input_{xname}.bin": x.tobytes()}, golden.tobytes(), x


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("golden")
    return root, {k: generate(k, root / k, dumps=True) for k in KERNELS}


def test_the_example_kernels_ship():
    assert KERNELS == ["pair_reduce_sum_half", "reduce_data_block_sum_half",
                       "reduce_max_index_half", "reduce_sum_count_float",
                       "reduce_sum_count_int64_950", "reduce_sum_counter_half_950",
                       "reduce_sum_float",
                       "repeat_reduce_sum_half", "row_sum_float_13x57",
                       "tik_vcmax_index_low_half", "tik_vec_reduce_add_half",
                       "whole_reduce_max_half",
                       "whole_reduce_max_spr_float",
                       "whole_reduce_min_index_half", "whole_reduce_sum_counter_float",
                       "whole_reduce_sum_float", "whole_reduce_sum_int16_950"]
    # docs/verify.md's table of shipped examples names each of them (it named 7 of 17)
    import pathlib
    doc = (pathlib.Path(__file__).parents[1] / "docs" / "verify.md").read_text()
    table = doc.split("Shipped examples")[1].split("###")[0]
    assert sorted(line.split("`")[1] for line in table.splitlines()
                  if line.startswith("| `")) == KERNELS


@pytest.mark.parametrize("name", KERNELS)
def test_golden_bit_exact_against_oracle(name, generated):
    root, gens = generated
    inputs, golden, _ = independent(name)
    for f, data in inputs.items():
        assert (root / name / "input" / f).read_bytes() == data
    assert (root / name / "output" / "golden.bin").read_bytes() == golden
    assert gens[name].golden.tobytes() == golden


def tree(v):
    while v.shape[-1] > 1:
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def test_golden_against_plain_numpy(generated):
    root, _ = generated

    def read(name, dt):
        return np.fromfile(root / name / "output" / "golden.bin", dt)

    _, _, x = independent("whole_reduce_max_half")
    assert read("whole_reduce_max_half", "<f2").tobytes() == x.reshape(8, 128).max(1).tobytes()
    _, _, x = independent("whole_reduce_max_spr_float")       # slot, then the register
    g = read("whole_reduce_max_spr_float", "<f4")
    assert g[0::2].tolist() == [x.max()] * 2 and g.view("<u4")[1::2].tolist() == [x.argmax()] * 2
    _, _, x = independent("whole_reduce_min_index_half")
    g = read("whole_reduce_min_index_half", "<f2")
    assert g[0::2].tobytes() == x.reshape(8, 128).min(1).tobytes()
    assert (g.view("<u2")[1::2] == x.reshape(8, 128).argmin(1)).all()
    _, _, x = independent("tik_vcmax_index_low_half")          # [index, value] per row
    g = read("tik_vcmax_index_low_half", "<f2")
    assert g[1::2].tobytes() == x.reshape(4, 128).max(1).tobytes()
    assert (g.view("<u2")[0::2] == x.reshape(4, 128).argmax(1)).all()
    _, _, x = independent("whole_reduce_sum_float")             # float32 adds are exact IEEE
    assert read("whole_reduce_sum_float", "<f4").tobytes() == tree(x.reshape(32, 64)).tobytes()
    _, _, x = independent("whole_reduce_sum_counter_float")    # 15 full repeats, 40 lanes
    p = np.zeros(16 * 64, np.float32)
    p[:1000] = x
    assert read("whole_reduce_sum_counter_float", "<f4").tobytes() == \
        tree(p.reshape(16, 64)).tobytes()
    _, _, x = independent("reduce_sum_count_float")      # 方式一: trees, then in order
    padded = np.zeros(1024, np.float32)
    padded[:1000] = x
    acc = np.float32(0)
    for k, t in enumerate(tree(padded.reshape(16, 64))):
        acc = t if k == 0 else np.float32(acc + t)
    assert read("reduce_sum_count_float", "<f4")[:1].tobytes() == acc.tobytes()
    _, _, x = independent("reduce_sum_count_int64_950")     # modulo 2^64 (Python ints)
    want = sum(int(v) for v in x) % 2**64
    assert read("reduce_sum_count_int64_950", "<u8")[0] == want
    _, _, x = independent("whole_reduce_sum_int16_950")     # widened: exact integer sums
    assert read("whole_reduce_sum_int16_950", "<i4").tolist() == \
        x.astype(np.int64).reshape(8, 128).sum(1).tolist()
    _, _, x = independent("repeat_reduce_sum_half")          # the half tree, rounded per add
    t = x.reshape(4, 128)
    while t.shape[-1] > 1:
        t = (t[:, 0::2] + t[:, 1::2]).astype(np.float16)
    assert read("repeat_reduce_sum_half", "<f2").tobytes() == t[:, 0].tobytes()
    _, _, x = independent("row_sum_float_13x57")
    p = np.zeros((13, 64), np.float32)
    p[:, :57] = x
    assert read("row_sum_float_13x57", "<f4").tobytes() == tree(p).tobytes()
    assert np.allclose(read("row_sum_float_13x57", "<f4"), x.sum(1), rtol=1e-5)


def test_golden_dumps_verify(generated):
    root, _ = generated
    r = verify(root, progress=False)
    assert r.ok and r.cases == len(KERNELS)


def test_seed_example_vec_reduce_add(tmp_path):
    """TIK doc example 2: rows of 1, 2, 3; mask 34, 6 repeats, stride 3 -> 326."""
    k = tmp_path / "k.toml"
    k.write_text("""
chip = "atlas_training"
dtype = "float16"
[inputs.x]
shape = [3, 128]
generator = "values"
values = [%s]
[output]
size = 64
[[calls]]
api = "vec_reduce_add"
mask = 34
repeat = 6
src_rep_stride = 3
work_size = 64
""" % ", ".join(["1"] * 128 + ["2"] * 128 + ["3"] * 128))
    g = generate(k, tmp_path / "out")
    assert g.golden[0] == 326 and not g.golden[1:].any()
    assert np.fromfile(tmp_path / "out" / "output" / "golden.bin", "<f2")[0] == 326
    work = g.outcomes[0].ub[g.cases[0].tensors["work_tensor"][0]:][:12].view(np.float16)
    assert work[:6].tolist() == [34, 34, 36, 68, 68, 86]


@pytest.mark.parametrize("body,field", [
    ("[[calls]]\napi = 'whole_reduce_sum'\nmask = 64\nrepeat = 300\n", "calls[0].repeat"),
    ("[[calls]]\napi = 'whole_reduce_summ'\nmask = 64\nrepeat = 1\n", "calls[0].api"),
    ("[[calls]]\napi = 'whole_reduce_sum'\nmask = 64\nrepeats = 1\n", "calls[0].repeats"),
    ("[[calls]]\napi = 'whole_reduce_sum'\nmask = 65\nrepeat = 1\n", "calls[0].mask"),
    ("[[calls]]\napi = 'whole_reduce_sum'\nmask = 64\nrepeat = 1\nsrc = 'y'\n", "calls[0].src"),
    # a register getter: after a call; its own keys; a register the call left undefined
    ("[[calls]]\napi = 'get_acc_val'\n", "calls[0].api"),
    ("[[calls]]\napi = 'whole_reduce_max'\nmask = 64\nrepeat = 1\n[[calls]]\n"
     "api = 'get_reduce_repeat_max_min_spr'\nmask = 3\n", "calls[1].mask"),
    ("[[calls]]\napi = 'whole_reduce_max'\nmask = 64\nrepeat = 1\nsrc_rep_stride = 0\n"
     "[[calls]]\napi = 'get_reduce_repeat_max_min_spr'\ndst_offset = 2\n", "calls[1]"),
])
def test_bad_kernel_names_the_field(tmp_path, body, field):
    k = tmp_path / "bad.toml"
    k.write_text("chip = 'atlas_a2'\ndtype = 'float'\n[inputs.x]\nshape = [64]\n"
                 "generator = 'uniform'\nlow = 0.0\nhigh = 1.0\n" + body)
    with pytest.raises(GoldenError) as e:
        generate(k, tmp_path / "out")
    assert e.value.field == field and str(k) in str(e.value)


@pytest.mark.parametrize("output,field", [("size = 3", "output.size"),
                                          ("shape = [1, 3]", "output.shape")])
def test_an_output_smaller_than_the_writes_is_a_golden_error(tmp_path, output, field):
    """It wrote golden.bin with the first 3 elements of the 4 the calls write (two repeats of
    whole_reduce_max VALUE_INDEX half: a value and its index each; the getter's pair after
    them needs 6), dropping the rest in silence. Nothing is written; the message says how
    big to make it, and that size (or no size) generates."""
    calls = ("[[calls]]\napi = 'whole_reduce_max'\nmask = 128\nrepeat = 2\n"
             "order = 'VALUE_INDEX'\n")
    getter = "[[calls]]\napi = 'get_reduce_repeat_max_min_spr'\ndst_offset = 4\n"
    head = "chip = 'atlas_a2'\ndtype = 'float16'\n[inputs.x]\nshape = [256]\n" + _UNIFORM
    k = tmp_path / "k.toml"
    for body, need in ((calls, 4), (calls + getter, 6)):
        k.write_text(head + f"\n[output]\n{output}\n" + body)
        with pytest.raises(GoldenError) as e:
            generate(k, tmp_path / "out")
        assert e.value.field == field and f"first {need}:" in str(e.value)
        assert f"at least {need} elements" in str(e.value) and str(k) in str(e.value)
        assert not (tmp_path / "out").exists()
        for fits in (f"size = {need}", ""):
            k.write_text(head + f"\n[output]\n{fits}\n" + body)
            g = generate(k, tmp_path / "ok")
            assert g.golden.size == need
            assert np.fromfile(tmp_path / "ok" / "output" / "golden.bin", "<f2").size == need


_CALL = "[[calls]]\napi = 'whole_reduce_sum'\nmask = 64\nrepeat = 1\n"
_UNIFORM = "generator = 'uniform'\nlow = 0.0\nhigh = 1.0"


@pytest.mark.parametrize("top,x,field", [
    ("", "generator = 'uniform'\nlow = nan\nhigh = 1.0", "inputs.x.low"),
    ("", "generator = 'uniform'\nlow = -inf\nhigh = 1.0", "inputs.x.low"),
    ("", "generator = 'uniform'\nlow = 2.0\nhigh = 1.0", "inputs.x.high"),
    ("", _UNIFORM + "\nseed = 1.5", "inputs.x.seed"),
    ("", _UNIFORM + "\nseed = -1", "inputs.x.seed"),
    ("", _UNIFORM + "\nub_pad = 'x'", "inputs.x.ub_pad"),
    ("", "generator = 'normal'\nmean = 0.0\nstd = -1.0", "inputs.x.std"),
    ("", "generator = 'randint'\nlow = 0.5\nhigh = 4", "inputs.x.low"),
    ("", "generator = 'constant'\nvalue = 'one'", "inputs.x.value"),
    ("", _UNIFORM + "\nfile = '../x.bin'", "inputs.x.file"),
    ("name = 5\n", _UNIFORM, "name"),
    # a range numpy cannot draw from (an OverflowError); a path that is no string (TypeError)
    ("", "generator = 'uniform'\nlow = -1.7e308\nhigh = 1.7e308", "inputs.x.high"),
    ("", "generator = 'file'\npath = 5", "inputs.x.path"),
    ("", "generator = 'file'\npath = ['a']", "inputs.x.path"),
    # values the dtype (float) does not hold: they became inf, or strings were read
    ("", "generator = 'constant'\nvalue = 1e39", "inputs.x.value"),
    ("", _UNIFORM + "\nub_pad = -1e39", "inputs.x.ub_pad"),
    ("", "generator = 'values'\nvalues = " + str(["1.5"] * 64).replace('"', "'"),
     "inputs.x.values"),
    ("", "generator = 'values'\nvalues = " + str([True] * 64).lower(), "inputs.x.values"),
    # an image past the UB, found before it is made (gigabytes were allocated first)
    ("", _UNIFORM + "\nub_row_stride = 2000000000", "inputs.x.ub_row_stride"),
    ("name = '../../escape'\n", _UNIFORM, "name"),
])
def test_bad_kernel_numbers_and_names_are_golden_errors(tmp_path, top, x, field):
    """Each was a raw exception from numpy / os.path, or drawn from / written in silence."""
    k = tmp_path / "bad.toml"
    k.write_text(top + "chip = 'atlas_a2'\ndtype = 'float'\n[inputs.x]\nshape = [64]\n" + x
                 + "\n" + _CALL)
    with pytest.raises(GoldenError) as e:
        load_kernel(k)
    assert e.value.field == field and str(k) in str(e.value)
    good = "chip = 'atlas_a2'\ndtype = 'float'\n[inputs.x]\nshape = [64]\n" + _UNIFORM + \
        "\nseed = 7\n" + _CALL
    k.write_text(good)
    assert load_kernel(k).inputs[0].spec["seed"] == 7


@pytest.mark.parametrize("top,body,field", [
    ("calls = [1]\n", "", "calls[0]"),
    ("output = 5\n", _CALL, "output"),
    ("", "[output]\nshape = 'ab'\n" + _CALL, "output.shape"),
    ("", "[output]\nshape = [2.0]\n" + _CALL, "output.shape"),
    ("", "[output]\nshape = [[2]]\n" + _CALL, "output.shape"),
    ("", "[output]\nshape = [-1, -2]\n" + _CALL, "output.shape"),
])
def test_bad_tables_and_output_shapes_are_golden_errors(tmp_path, top, body, field):
    """Each was a raw AttributeError / TypeError / numpy error."""
    k = tmp_path / "bad.toml"
    k.write_text("chip = 'atlas_a2'\ndtype = 'float'\n" + top + "[inputs.x]\nshape = [64]\n"
                 + _UNIFORM + "\n" + body)
    with pytest.raises(GoldenError) as e:
        load_kernel(k)
    assert e.value.field == field and str(k) in str(e.value)


def test_a_huge_input_shape_is_refused_before_it_is_made(tmp_path):
    """10^10 elements were a MemoryError from numpy (or made, before the UB check)."""
    k = tmp_path / "bad.toml"
    k.write_text("chip = 'atlas_a2'\ndtype = 'float'\n[inputs.x]\nshape = [100000, 100000]\n"
                 + _UNIFORM + "\n" + _CALL)
    with pytest.raises(GoldenError, match=r"takes 40000000000 bytes of UB; atlas_a2 has ") as e:
        load_kernel(k)
    assert e.value.field == "inputs.x.shape"


_INT16_950 = """chip = 'ascend950'
dtype = 'int16'
[inputs.x]
shape = [128]
generator = 'constant'
value = %s
ub_row_stride = 144
ub_pad = %s
[output]
init = %s
[[calls]]
api = 'whole_reduce_sum'
mask = 128
repeat = 1
"""


@pytest.mark.parametrize("value,pad,init,field", [
    ("1e12", "0", "0", "inputs.x.value"),            # int16: an invalid cast, sum 0
    ("1.5", "0", "0", "inputs.x.value"),
    ("1", "40000", "0", "inputs.x.ub_pad"),           # wrapped to -25536
    ("1", "0.5", "0", "inputs.x.ub_pad"),             # truncated to 0
    ("1", "0", "2.5", "output.init"),                 # the int32 output: truncated to 2
    ("1", "0", str(2**31), "output.init"),            # wrapped
])
def test_values_the_type_does_not_hold_are_golden_errors(tmp_path, value, pad, init, field):
    """Constant values, the padding and the output's init are numbers the file states: they
    are held exactly by the type they are written as (int16 input, int32 output here), as
    ``store(..., dtype=)`` takes them; they were wrapped, truncated or cast in silence. The
    same kernel with values it holds generates (the sum of 128 ones)."""
    k = tmp_path / "k.toml"
    k.write_text(_INT16_950 % (value, pad, init))
    with pytest.raises(GoldenError) as e:
        generate(k, tmp_path / "out")
    assert e.value.field == field and str(k) in str(e.value)
    assert not (tmp_path / "out").exists()
    k.write_text(_INT16_950 % ("1", "-7", "-1"))
    g = generate(k, tmp_path / "ok")
    assert g.golden.dtype == np.int32 and g.golden.tolist() == [128]


@pytest.mark.parametrize("kernel", [None, 3, ""])
def test_a_kernel_that_is_no_name_is_a_golden_error(tmp_path, kernel):
    """None / an int were a TypeError from Path(); "" named the current folder."""
    with pytest.raises(GoldenError, match="expected a kernel name") as e:
        generate(kernel, tmp_path / "out")
    assert e.value.field == "file"
    with pytest.raises(GoldenError, match="expected a kernel name"):
        load_kernel(kernel)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("out_dir", [None, "", 5])
def test_out_dir_must_be_a_folder_path(out_dir, tmp_path, monkeypatch):
    """None was a TypeError after the kernel ran; "" wrote into the current folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="out_dir = "):
        generate("whole_reduce_max_half", out_dir)
    assert list(tmp_path.iterdir()) == []


def test_a_kernel_named_by_bytes(tmp_path):
    a = generate(b"whole_reduce_max_half", tmp_path / "a")
    b = generate("whole_reduce_max_half", tmp_path / "b")
    assert np.array_equal(a.golden, b.golden)


def test_cli(tmp_path, capsys):
    assert cli_main(["golden", "whole_reduce_max_half", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "input" / "input_x.bin").stat().st_size == 2048
    assert (tmp_path / "o" / "output" / "golden.bin").stat().st_size == 16
    assert cli_main(["golden", "--list"]) == 0
    assert "whole_reduce_sum_float" in capsys.readouterr().out
    assert cli_main(["golden", str(tmp_path / "nope.toml"), "--out", str(tmp_path)]) == 1
    assert load_kernel("row_sum_float_13x57").inputs[0].row_stride == 64


def test_a_name_is_looked_up_in_the_current_folder_first(tmp_path, monkeypatch, capsys):
    """docs/verify.md: a name without a folder is ./NAME.toml if there is one (with or
    without the suffix), then the shipped kernel; a folder of that name is no kernel file.
    Without the suffix the shipped kernel was read, and a local name was not found."""
    shipped = config_dir() / "kernels" / "row_sum_float_13x57.toml"
    text = shipped.read_text()
    assert "seed = 57" in text
    monkeypatch.chdir(tmp_path)
    (tmp_path / "row_sum_float_13x57.toml").write_text(text.replace("seed = 57", "seed = 58"))
    (tmp_path / "mykern.toml").write_text(text.replace("seed = 57", "seed = 58"))
    (tmp_path / "whole_reduce_max_half").mkdir()          # e.g. an earlier --out folder
    mine = load_kernel("row_sum_float_13x57.toml")
    assert mine.path == "row_sum_float_13x57.toml"
    assert load_kernel("row_sum_float_13x57").path == mine.path
    assert load_kernel("mykern").path == "mykern.toml"
    assert load_kernel("whole_reduce_max_half").path == str(
        config_dir() / "kernels" / "whole_reduce_max_half.toml")
    local = generate("row_sum_float_13x57", tmp_path / "a").inputs
    monkeypatch.chdir(tmp_path / "whole_reduce_max_half")
    theirs = generate("row_sum_float_13x57", tmp_path / "b").inputs
    assert not np.array_equal(local["x"], theirs["x"])        # seed 58 against 57
    monkeypatch.chdir(tmp_path)
    assert cli_main(["golden", "mykern", "--out", str(tmp_path / "c")]) == 0
    assert capsys.readouterr().out.startswith("row_sum_float_13x57 (mykern.toml): 1 call(s)")
