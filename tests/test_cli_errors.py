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


@pytest.mark.parametrize("argv, rc, text", [
    (["--repeat", "300"], 1, "REPEAT_RANGE"),
    (["--values", "a,b"], 2, "--values"),
    (["--src", "1,2,3"], 2, "ADDR,SIZE"),
    (["--dtype", "int8"], 2, "DTYPE_UNSUPPORTED"),
])
def test_explain_bad_input(capsys, argv, rc, text):
    got, out, err = _cli(capsys, "explain", "whole_reduce_min", *argv)
    assert got == rc and text in out + err


def test_explain_unsavable_picture(tmp_path, capsys):
    got, _, err = _cli(capsys, "explain", "whole_reduce_sum", "--dtype", "float", "--png",
                       str(tmp_path / "no" / "such" / "dir" / "x.png"))
    assert got == 2 and "cannot save" in err
