"""The ndpack command and the demo, run as a user would (subprocesses, exit codes)."""

import json
import subprocess
import sys

import numpy as np
import pytest

import ndpack


def run(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "ndpack", *map(str, args)],
                       capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_compress_info_decompress_npy(tmp_path):
    x = np.random.default_rng(0).normal(size=(300, 70)).astype("f4")
    np.save(tmp_path / "x.npy", x)
    run("compress", tmp_path / "x.npy", tmp_path / "x.b2nd", "--codec", "lz4", "--clevel", 3,
        "--filter", "bitshuffle")
    info = json.loads(run("info", tmp_path / "x.b2nd", "--json").stdout)
    assert info["kind"] == "NDArray" and info["shape"] == [300, 70] and info["dtype"] == "float32"
    assert info["codec"] == "LZ4" and info["filters"] == ["BITSHUFFLE"] and info["clevel"] == 3
    assert "shape" in run("info", tmp_path / "x.b2nd").stdout
    run("decompress", tmp_path / "x.b2nd", tmp_path / "y.npy")
    assert np.array_equal(np.load(tmp_path / "y.npy"), x)


def test_raw_files_round_trip(tmp_path):
    data = bytes(range(256)) * 5000 + b"tail"
    (tmp_path / "f.bin").write_bytes(data)
    run("compress", tmp_path / "f.bin", tmp_path / "f.b2frame", "--chunksize", 100_000)
    assert json.loads(run("info", tmp_path / "f.b2frame", "--json").stdout)["nchunks"] == 13
    run("decompress", tmp_path / "f.b2frame", tmp_path / "g.bin")
    assert (tmp_path / "g.bin").read_bytes() == data


def test_eval_and_saved_expressions(tmp_path):
    x = np.arange(20_000.0).reshape(200, 100)
    ndpack.asarray(x, urlpath=tmp_path / "a.b2nd", mode="w")
    run("eval", "sum(a, axis=0) + a * 2", f"a={tmp_path / 'a.b2nd'}", "-o", tmp_path / "o.b2nd",
        "--codec", "zstd", "-q")
    np.testing.assert_allclose(ndpack.open(tmp_path / "o.b2nd")[()], x.sum(axis=0) + x * 2)
    ndpack.lazyexpr("a + 1", operands={"a": ndpack.open(tmp_path / "a.b2nd")}).save(
        tmp_path / "e.b2nd")
    info = json.loads(run("info", tmp_path / "e.b2nd", "--json").stdout)
    assert info["kind"] == "saved expression" and info["shape"] == [200, 100]


def test_errors_and_exit_codes(tmp_path):
    r = run("info", tmp_path / "missing.b2nd", check=False)
    assert r.returncode == 1 and "missing.b2nd" in r.stderr
    (tmp_path / "junk.b2nd").write_bytes(b"not a frame" * 10)
    r = run("info", tmp_path / "junk.b2nd", check=False)
    assert r.returncode == 1 and "ndpack info:" in r.stderr
    r = run("eval", "a +", "a=x.b2nd", "-o", tmp_path / "o.b2nd", check=False)
    assert r.returncode == 1
    r = run("eval", "__import__('os')", f"a={tmp_path / 'junk.b2nd'}", "-o", tmp_path / "o.b2nd",
            check=False)
    assert r.returncode == 1 and not (tmp_path / "o.b2nd").exists()
    assert run("frobnicate", check=False).returncode == 2


def test_progress_bar_is_optional():
    a = ndpack.asarray(np.arange(1000.0), chunks=(100,))
    r = ndpack.lazyexpr("a * 2", operands={"a": a}).compute(progress=True)
    np.testing.assert_array_equal(r[()], np.arange(1000.0) * 2)


@pytest.mark.slow
def test_demo_runs(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ndpack.demo", "--small", "--dir", tmp_path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "compute sum(a, axis=0) + b * sin(c)" in r.stdout and "peak memory" in r.stdout
