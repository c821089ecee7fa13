"""golden and explain: bad input is one error line and a documented exit code, never a
traceback; a kernel path names that file only; a key the API does not take is an error
(issue 13 G1, G2, E1)."""

import os
import subprocess
import sys
import textwrap

import pytest

from ascend_ref.cli import main as cli_main
from ascend_ref.golden import GoldenError, load_kernel


def _cli(capsys, *argv):
    rc = cli_main(list(argv))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    return rc, cap.out, cap.err


@pytest.mark.parametrize("target", ["file", "/dev/null", "/proc/ascend_ref_no_such_dir"])
def test_golden_unwritable_out_is_exit_2(tmp_path, capsys, target):
    out = tmp_path / "a_file" if target == "file" else target
    if target == "file":
        out.write_text("x")
    rc, _, err = _cli(capsys, "golden", "whole_reduce_sum_float", "--out", str(out))
    assert rc == 2 and "cannot write" in err and "--out" in err


def test_golden_unwritable_out_in_a_real_process(tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    r = subprocess.run([sys.executable, "-m", "ascend_ref", "golden", "whole_reduce_sum_float",
                        "--out", str(f), "--dumps"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "cannot write" in r.stderr


def test_golden_path_with_a_folder_is_that_file_only(tmp_path, capsys):
    rc, _, err = _cli(capsys, "golden", "/nonexistent/row_sum_float_13x57.toml", "--out",
                      str(tmp_path / "g"))
    assert rc == 1 and "no such file" in err and not (tmp_path / "g").exists()
    with pytest.raises(GoldenError):
        load_kernel(tmp_path / "row_sum_float_13x57.toml")
    assert load_kernel("row_sum_float_13x57").name == "row_sum_float_13x57"   # a bare name
    rc, _, err = _cli(capsys, "golden", str(tmp_path), "--out", str(tmp_path / "g"))
    assert rc == 1 and "not a regular file" in err


KERNEL = """
chip = "atlas_a2"
dtype = "float32"
[inputs.x]
shape = [64]
generator = "constant"
value = 1.0
[[calls]]
api = "API"
mask = 64
repeat = 1
EXTRA
"""


@pytest.mark.parametrize("api, extra, key", [
    ("whole_reduce_sum", 'order = "ORDER_INDEX_VALUE"', "order"),
    ("whole_reduce_min", 'reduce_type = "SUM"', "reduce_type"),
    ("whole_reduce_max", "saturate = true", "saturate"),
    ("vec_reduce_add", "cal_index = true", "cal_index"),
])
def test_golden_key_the_api_does_not_take_is_an_error(tmp_path, capsys, api, extra, key):
    p = tmp_path / "k.toml"
    p.write_text(textwrap.dedent(KERNEL).replace("API", api).replace("EXTRA", extra))
    with pytest.raises(GoldenError) as e:
        load_kernel(p)
    assert f"calls[0].{key}" in str(e.value) and api in str(e.value)
    rc, _, err = _cli(capsys, "golden", str(p), "--out", str(tmp_path / "g"))
    assert rc == 1 and f"calls[0].{key}" in err
    p.write_text(textwrap.dedent(KERNEL).replace("API", api).replace("EXTRA", ""))
    assert load_kernel(p).calls[0].api == api              # the same file without the key


@pytest.mark.parametrize("argv, text", [
    (["whole_reduce_max_half", "--stacked"], "--stacked is for --dumps"),   # was ignored
    (["--list", "whole_reduce_max_half"], "--list takes no KERNEL"),       # was ignored
    (["--list", "--dumps"], "--list takes no --dumps"),
    ([], "give a KERNEL"),                      # was exit 2 with the list and no reason
])
def test_golden_flags_that_do_not_go_together_are_exit_2(tmp_path, capsys, argv, text):
    got, out, err = _cli(capsys, "golden", *argv, *(["--out", str(tmp_path / "g")]
                                                   if "--stacked" in argv else []))
    assert got == 2 and text in err and not (tmp_path / "g").exists()


def test_golden_generate_stacked_needs_dumps(tmp_path):
    from ascend_ref.golden import generate

    with pytest.raises(ValueError, match="stacked=True .* only with dumps=True"):
        generate("whole_reduce_max_half", tmp_path / "g", stacked=True)
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("argv, rc, text", [
    (["--repeat", "300"], 1, "REPEAT_RANGE"),
    (["--values", "a,b"], 2, "--values"),
    (["--src", "1,2,3"], 2, "ADDR,SIZE"),
    (["--dtype", "int8"], 2, "DTYPE_UNSUPPORTED"),
    # sized the picture (and the UB) from these: numpy's MemoryError for terabytes
    (["--repeat", str(2**40)], 1, f"repeat_time = {2**40}"),
    (["--dst", f"{2**40},16"], 1, "UB_BOUNDS"),
    (["--src", f"0,{2**40}"], 1, "UB_BOUNDS"),
    (["--src-rep-stride", str(2**40)], 1, "STRIDE_RANGE"),
    # a negative extent: numpy's "negative dimensions", or Tensor's size
    (["--src-blk-stride", "-1"], 1, "src_blk_stride = -1"),
    # an unknown order: the enum's ValueError, with no code and no allowed list
    (["--order", "bogus"], 2, "ORDER_VALUE_INDEX"),
])
def test_explain_bad_input(capsys, argv, rc, text):
    got, out, err = _cli(capsys, "explain", "whole_reduce_min", *argv)
    assert got == rc and text in out + err


@pytest.mark.parametrize("api, argv, text", [
    # an option of another API, or saturation on one without it: was silently ignored
    ("vec_reduce_add", ["--order", "ORDER_VALUE_INDEX"], "vec_reduce_add takes no --order"),
    ("whole_reduce_min", ["--reduce-type", "SUM"], "takes --order, not --reduce-type"),
    ("whole_reduce_min", ["--cal-index"], "takes --order, not --cal-index"),
    ("reduce_data_block", ["--order", "ORDER_ONLY_VALUE"], "takes --reduce-type, not --order"),
    # vcmax / vcmin's option (index_low) had no flag: any option flag was a KeyError
    ("vcmax", ["--order", "ORDER_INDEX_VALUE"], "vcmax takes --index-low, not --order"),
    ("vcmin", ["--cal-index"], "vcmin takes --index-low, not --cal-index"),
    ("whole_reduce_min", ["--index-low"], "takes --order, not --index-low"),
    ("whole_reduce_min", ["--saturate", "on"], "whole_reduce_min has no saturation mode"),
    # a tree flag without a tree: was silently ignored
    ("whole_reduce_sum", ["--block", "3"], "--block: only with --tree"),
    ("vec_reduce_add", ["--stage", "2"], "--stage: only with --tree"),
    ("whole_reduce_sum", ["--tree-depth", "2"], "--tree-depth: only with --tree"),
    ("whole_reduce_sum", ["--full-tree"], "--full-tree: only with --tree"),
    # a tree the (valid) call does not have: was a note on stdout and exit 0
    ("whole_reduce_sum", ["--repeat", "2", "--tree", "5"], "--tree: repeat 5 outside [0, 2)"),
    ("reduce_data_block", ["--tree", "0", "--block", "9"], "block 9 outside [0, 8)"),
    ("whole_reduce_min", ["--tree", "0"], "does not add"),
    # out of range: --stage 9 / --block -3 were ignored, --max-repeats 0 taken as 1, a
    # negative seed and a bad mask literal an error that did not name the flag
    ("whole_reduce_sum", ["--stage", "9", "--tree", "0"], "argument --stage"),
    ("whole_reduce_sum", ["--block", "-3", "--tree", "0"], "argument --block"),
    ("whole_reduce_sum", ["--max-repeats", "0"], "argument --max-repeats"),
    ("whole_reduce_sum", ["--tree-depth", "-1", "--tree", "0"], "argument --tree-depth"),
    ("whole_reduce_sum", ["--seed", "-1"], "argument --seed"),
    ("whole_reduce_sum", ["--mask", "0x"], "--mask '0x'"),
    ("whole_reduce_sum", ["--mask", "1,zz"], "--mask '1,zz'"),
    # an empty value put the next one a lane early; an empty list gave random data;
    # --data beside --values was dropped
    ("whole_reduce_sum", ["--values", "1,,2"], "value 1 is empty"),
    ("whole_reduce_sum", ["--values", ""], "value 0 is empty"),
    ("whole_reduce_sum", ["--values", "1,2", "--data", "ones"], "give one of them"),
])
def test_explain_flags_the_call_cannot_use_are_exit_2(capsys, api, argv, text):
    try:
        got, out, err = _cli(capsys, "explain", api, *argv)
    except SystemExit as e:                      # argparse: its usage line and exit 2
        got, err = e.code, capsys.readouterr().err
    assert got == 2 and text in err, err


@pytest.mark.parametrize("api, argv", [
    ("whole_reduce_sum", ["--saturate", "on", "--tree", "0", "--tree-depth", "1"]),
    ("vec_reduce_min", ["--cal-index"]),
    ("reduce_data_block", ["--reduce-type", "MAX", "--max-repeats", "1"]),
    ("whole_reduce_min", ["--order", "ORDER_ONLY_VALUE", "--seed", "0x10"]),
])
def test_explain_flags_the_call_takes_still_work(capsys, api, argv):
    got, out, err = _cli(capsys, "explain", api, *argv)
    assert got == 0 and not err and "legend" in out


def test_explain_unsavable_picture(tmp_path, capsys):
    got, _, err = _cli(capsys, "explain", "whole_reduce_sum", "--dtype", "float", "--png",
                       str(tmp_path / "no" / "such" / "dir" / "x.png"))
    assert got == 2 and "cannot save" in err


def test_explain_picture_names_where_it_went(tmp_path, capsys):
    """A name without an extension was written as NAME.png while the CLI printed NAME; an
    existing folder DIR was written as DIR.png beside it, exit 0."""
    got, out, err = _cli(capsys, "explain", "whole_reduce_sum", "--dtype", "float", "--png",
                         str(tmp_path / "noext"))
    assert got == 0 and f"access map picture: {tmp_path / 'noext.png'}" in out
    assert (tmp_path / "noext.png").stat().st_size > 0 and not (tmp_path / "noext").exists()
    (tmp_path / "d").mkdir()
    got, out, err = _cli(capsys, "explain", "whole_reduce_sum", "--dtype", "float", "--png",
                         str(tmp_path / "d"))
    assert got == 2 and "is a folder" in err and not (tmp_path / "d.png").exists()


def test_a_closed_output_pipe_ends_quietly(tmp_path):
    """``ascend-ref ... | head``: the reader closes the pipe before the output is written; the
    command stops with 141 (128 + SIGPIPE, as a shell reports it), no traceback."""
    r_fd, w_fd = os.pipe()
    os.close(r_fd)                       # no reader: every write gets EPIPE
    try:
        p = subprocess.run([sys.executable, "-m", "ascend_ref", "fuzz", "--list"], stdout=w_fd,
                           stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=300)
    finally:
        os.close(w_fd)
    assert p.returncode == 141 and "Traceback" not in p.stderr and "Broken" not in p.stderr, \
        p.stderr[-2000:]


def test_every_option_of_every_command_says_what_it_does():
    """``--help`` of each command describes every option and shows no argparse placeholder
    default (``ascend-ref explain`` listed four options with no text and "(default: None)"
    beside defaults its help already gave)."""
    import argparse

    from ascend_ref.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subs.choices) >= {"fuzz", "verify", "golden", "explain"}
    for name, sub in subs.choices.items():
        for action in sub._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                assert action.help, (name, action.option_strings)
        text = sub.format_help()
        assert "(default: None)" not in text, (name, text)


@pytest.mark.parametrize("index_low, first, second", [(False, "value", "index"),
                                                      (True, "index", "value")])
def test_explain_vcmin_index_low_shows_its_layout(capsys, index_low, first, second):
    """Every registered option has its flag (explain could not show vcmax / vcmin with
    index_low=True: --index-low was an unknown argument); the minimum of 5, 3, -2 is -2 at
    lane 2, written [value, index] or, with --index-low, [index, value]."""
    argv = ["--values", "5,3,-2", "--chip", "atlas_a2"] + (["--index-low"] if index_low else [])
    got, out, err = _cli(capsys, "explain", "vcmin", *argv)
    want = {"index": "index=2", "value": "value=-2.0"}
    assert got == 0 and f"{want[first]}, {want[second]}" in out, out + err


def test_importing_the_main_module_runs_nothing(tmp_path):
    """``import ascend_ref.__main__`` (a doctest collector, a documentation tool) ran the
    default fuzz campaign, 5000 cases into ./ascend-ref-fuzz.sqlite; ``python -m ascend_ref``
    still runs the command."""
    r = subprocess.run([sys.executable, "-c", "import ascend_ref.__main__; print('imported')"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "imported", r.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
    r = subprocess.run([sys.executable, "-m", "ascend_ref", "fuzz", "--cases", "x"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "argument --cases:" in r.stderr, r.stderr[-2000:]
