"""The ndpack command and the demo, run as a user would (subprocesses, exit codes)."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ndpack


OPTIONAL = ("tqdm", "h5py", "hdf5plugin", "zarr", "dask", "distributed", "matplotlib",
            "blosc2")

# Installed as sitecustomize.py: the optional packages fail to import, as in a venv that
# has only ndpack's run-time dependencies.
BLOCKER = f"""
import sys
class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Missing())
"""


def run(*args, check=True, env=None):
    r = subprocess.run([sys.executable, "-m", "ndpack", *map(str, args)],
                       capture_output=True, text=True, env=env)
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


def _bare_env(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return env


def test_commands_without_optional_packages(tmp_path):
    env = _bare_env(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import tqdm"], env=env,
                           capture_output=True, text=True)
    assert probe.returncode != 0 and "tqdm" in probe.stderr      # the blocker works
    x = np.arange(60_000.0).reshape(300, 200)
    np.save(tmp_path / "x.npy", x)
    run("compress", tmp_path / "x.npy", tmp_path / "a.b2nd", env=env)
    run("info", tmp_path / "a.b2nd", env=env)
    r = run("eval", "a * 2 + sin(a)", f"a={tmp_path / 'a.b2nd'}", "-o", tmp_path / "y.b2nd",
            env=env)                                             # progress on by default
    assert "Traceback" not in r.stderr
    run("decompress", tmp_path / "y.b2nd", tmp_path / "y.npy", env=env)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), x * 2 + np.sin(x))


@pytest.mark.parametrize("args", [
    ("info", "{tmp}/missing.b2nd"),
    ("info", "{tmp}/junk.b2nd"),
    ("eval", "a +", "a={tmp}/a.b2nd", "-o", "{tmp}/o.b2nd"),
    ("eval", "a * b", "a={tmp}/a.b2nd", "-o", "{tmp}/o.b2nd"),
    ("eval", "a", "1a={tmp}/a.b2nd", "-o", "{tmp}/o.b2nd"),
    ("eval", "a", "a={tmp}/junk.b2nd", "-o", "{tmp}/o.b2nd"),
    ("eval", "a", "a={tmp}/a.b2nd", "-o", "{tmp}/no/such/dir/o.b2nd"),
    ("compress", "{tmp}/missing.npy", "{tmp}/o.b2nd"),
    ("compress", "{tmp}/junk.b2nd", "{tmp}/o.b2nd", "--clevel", "99"),
    ("decompress", "{tmp}/junk.b2nd", "{tmp}/o.npy"),
    ("decompress", "{tmp}/a.b2nd", "{tmp}/no/such/dir/o.npy"),
])
def test_every_error_is_one_line(tmp_path, args):
    ndpack.asarray(np.arange(100.0), urlpath=tmp_path / "a.b2nd", mode="w")
    (tmp_path / "junk.b2nd").write_bytes(b"not a frame" * 10)
    args = [a.format(tmp=tmp_path) for a in args]
    r = run(*args, check=False, env=_bare_env(tmp_path))
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ndpack {args[0]}: "), r.stderr
    debug = run("--debug", *args, check=False)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_plain_progress_line(monkeypatch):
    from ndpack import reporting as progress
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    term = _Terminal()
    with progress.progress_bar(True, 4, 2**20, stream=term, use_tqdm=False) as tick:
        for _ in range(4):
            tick()
    text = term.getvalue()
    assert "\rndpack: 1/4 chunks (25%)" in text and "s left" in text
    assert "4/4 chunks (100%)" in text and text.endswith("\n")
    quiet = io.StringIO()                      # not a terminal: nothing at all
    with progress.progress_bar(True, 4, 2**20, stream=quiet, use_tqdm=False) as tick:
        tick()
    assert quiet.getvalue() == ""
    monkeypatch.setattr(progress, "DELAY", 3600.0)
    late = _Terminal()                         # work shorter than the delay: nothing shown
    with progress.progress_bar(True, 4, 2**20, stream=late, use_tqdm=False) as tick:
        tick()
    assert late.getvalue() == ""


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
