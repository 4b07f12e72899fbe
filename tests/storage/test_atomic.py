"""Crash-atomic writers (issue 23, item 2): the temporary mechanism, every error path
of the creating calls, and readers running while a writer replaces or appends."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ndpack
from ndpack.errors import FormatError
from ndpack.storage import atomic
from ndpack.storage.ndarray import create, fill_from, holding


def hidden(folder) -> list:
    return sorted(f for f in os.listdir(folder) if f.startswith("."))


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ---------------------------------------------------------------------------------------
# the mechanism

def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    t = tmp_path / "x.b2nd"
    host, sfx = atomic._HOST, atomic.TMP_SUFFIX
    dead = tmp_path / f".x.b2nd.{host}-{dead_pid()}-0123abcd{sfx}"
    live = tmp_path / f".x.b2nd.{host}-{os.getppid()}-0123abcd{sfx}"
    other = tmp_path / f".y.b2nd.{host}-{dead_pid()}-0123abcd{sfx}"
    remote = tmp_path / f".x.b2nd.{host}x-{dead_pid()}-0123abcd{sfx}"     # another host
    old_remote = tmp_path / f".x.b2nd.{host}x-{dead_pid()}-0123abce{sfx}"
    os.mkdir(dead)                                        # a sparse frame's directory
    (dead / "chunks.b2frame").write_bytes(b"x")
    for p in (live, other, remote, old_remote):
        p.write_bytes(b"x")
    os.utime(old_remote, (time.time() - 2 * 86400,) * 2)
    ndpack.asarray(np.arange(3), urlpath=t, mode="w")    # any write to the target
    assert hidden(tmp_path) == sorted([live.name, other.name, remote.name])
    assert atomic.is_temporary(live) and not atomic.is_temporary(t)
    assert all(f.endswith(sfx) and f.startswith(f".a.b2nd.{host}-{os.getpid()}-")
               for f in [os.path.basename(atomic.Pending(tmp_path / "a.b2nd").path)])


def test_abandoned_temporaries_of_this_process_are_stale(tmp_path):
    p = atomic.Pending(tmp_path / "t")
    open(p.path, "wb").close()
    atomic._live.discard(p.path)                          # as after a lost object
    assert atomic.remove_stale(tmp_path / "t") == [p.path]


def test_commit_replaces_files_and_directories_of_any_kind(tmp_path):
    t = str(tmp_path / "t")
    for make in ("file", "dir", "file", "dir", "dir"):
        with atomic.replacing(t) as tmp:
            if make == "dir":
                os.mkdir(tmp)
                open(os.path.join(tmp, "inside"), "w").close()
            else:
                with open(tmp, "w") as f:
                    f.write(make)
        assert os.path.isdir(t) == (make == "dir")
        assert os.listdir(tmp_path) == ["t"]


def test_exclusive_commit_refuses_a_target_that_appeared(tmp_path):
    t = tmp_path / "t.b2nd"
    out = create((10,), np.int64, chunks=(5,), blocks=(5,), urlpath=t, mode="a")
    ndpack.asarray(np.ones(3), urlpath=t, mode="w")      # someone else, meanwhile
    with pytest.raises(FileExistsError, match="was created while"):
        fill_from(out, lambda reg: np.arange(10)[reg])
    assert ndpack.open(t)[:].tolist() == [1, 1, 1]
    assert hidden(tmp_path) == []


def test_created_files_appear_only_when_complete(tmp_path):
    t = tmp_path / "t.b2nd"
    out = create((10,), np.int64, chunks=(5,), blocks=(5,), urlpath=t, mode="w")
    out.schunk.append_chunk(out.encode_chunk(np.arange(5)))
    assert not t.exists() and len(hidden(tmp_path)) == 1
    out.schunk.append_chunk(out.encode_chunk(np.arange(5, 10)))
    assert t.exists() and hidden(tmp_path) == []
    assert ndpack.open(t)[:].tolist() == list(range(10))
    out[0] = 99                                           # in place from now on
    assert ndpack.open(t)[0] == 99


def test_holding_commits_after_vlmeta(tmp_path):
    t = tmp_path / "h.b2nd"
    a = ndpack.asarray(np.arange(4), urlpath=tmp_path / "src.b2nd", mode="w")
    a.vlmeta["k"] = "v"
    ndpack.save(a, t)
    assert ndpack.open(t).vlmeta["k"] == "v"
    out = create((4,), np.int64, chunks=(2,), blocks=(2,), urlpath=t, mode="w")
    with pytest.raises(ZeroDivisionError):
        with holding(out):
            fill_from(out, lambda reg: np.arange(4)[reg])
            1 / 0
    assert ndpack.open(t).vlmeta["k"] == "v" and hidden(tmp_path) == []


def test_fsync_is_asked_for(tmp_path, monkeypatch):
    """No flush by default (as NumPy, h5py, zarr and python-blosc2 write); with
    NDPACK_FSYNC=1 the file, then its directory."""
    calls = []
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: calls.append(fd))
    monkeypatch.delenv("NDPACK_FSYNC", raising=False)
    ndpack.asarray(np.arange(3), urlpath=tmp_path / "a.b2nd", mode="w")
    assert calls == []
    monkeypatch.setenv("NDPACK_FSYNC", "1")
    ndpack.asarray(np.arange(3), urlpath=tmp_path / "a.b2nd", mode="w")
    assert len(calls) == 2                                # the file, then its directory
    monkeypatch.setenv("NDPACK_FSYNC", "0")
    ndpack.asarray(np.arange(3), urlpath=tmp_path / "a.b2nd", mode="w")
    assert len(calls) == 2


def test_unflushed_replacements_exchange_and_remove_the_old_file(tmp_path, monkeypatch):
    """Without flushes a file replaces its target by an exchange, and the old file
    (moved aside under a temporary name) is removed in the background: readers that
    opened it keep reading the old values; no temporary is left."""
    monkeypatch.delenv("NDPACK_FSYNC", raising=False)
    t = tmp_path / "a.b2nd"
    ndpack.asarray(np.arange(1000.0), urlpath=t, mode="w")
    old = ndpack.open(t, mode="r")
    monkeypatch.setattr(atomic, "_BACKGROUND_REMOVE", 0)     # (a small file)
    exchanged = []
    real = atomic._renameat2
    monkeypatch.setattr(atomic, "_renameat2",
                        lambda s, d, f: exchanged.append(f) or real(s, d, f))
    ndpack.asarray(np.arange(1000.0) * 2, urlpath=t, mode="w")
    np.testing.assert_array_equal(ndpack.open(t)[:], np.arange(1000.0) * 2)
    np.testing.assert_array_equal(old[:], np.arange(1000.0))
    deadline = time.time() + 10
    while atomic._doomed and time.time() < deadline:
        time.sleep(0.01)
    assert hidden(tmp_path) == [] and not atomic._doomed
    assert exchanged in ([atomic._RENAME_EXCHANGE], [])   # [] where the system lacks it


# ---------------------------------------------------------------------------------------
# every creating call: an error half-way keeps the old target and leaves no temporary

class Failing:
    """An array-like whose reads fail after `n` of them."""

    def __init__(self, shape, n):
        self.shape, self.dtype, self.n = shape, np.dtype(np.float64), n
        self.ndim = len(shape)

    def __getitem__(self, key):
        self.n -= 1
        if self.n < 0:
            raise OSError("the source went away")
        return np.full(np.empty(self.shape)[key].shape, 7.0)


def _old(t):
    return ndpack.asarray(np.arange(4.0), urlpath=t, mode="w")


CREATORS = {
    "asarray": lambda t: ndpack.asarray(Failing((100,), 3), urlpath=t, mode="w",
                                        chunks=(10,)),
    "asarray_sparse": lambda t: ndpack.asarray(Failing((100,), 3), urlpath=t, mode="w",
                                               chunks=(10,), contiguous=False),
    "fromiter": lambda t: ndpack.fromiter((1 / (5 - i) for i in range(100)), (100,),
                                          np.float64, urlpath=t, mode="w", chunks=(2,)),
    "compute": lambda t: (ndpack.lazyexpr("f + 1", operands={"f": Failing((100,), 3)})
                          .compute(urlpath=t, mode="w", chunks=(10,))),
    "from_dask": lambda t: ndpack.from_dask(
        __import__("dask.array").array.from_array(Failing((100,), 3), chunks=10,
                                                  asarray=True),
        urlpath=t, mode="w", chunks=(10,), scheduler="synchronous"),
    "concatenate": lambda t: ndpack.concat([ndpack.asarray(np.ones(10), chunks=(4,)),
                                            Failing((100,), 3)], urlpath=t, mode="w"),
}


@pytest.mark.parametrize("kind", sorted(CREATORS))
def test_errors_keep_the_old_target(kind, tmp_path):
    t = tmp_path / "t.b2nd"
    _old(t)
    with pytest.raises((OSError, ZeroDivisionError)):
        CREATORS[kind](t)
    assert ndpack.open(t)[:].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert hidden(tmp_path) == []


def test_store_discard_and_errors_keep_the_old_store(tmp_path):
    for name in ("s.b2d", "s.b2z"):
        t = tmp_path / name
        with ndpack.DictStore(t, mode="w") as ds:
            ds["/old"] = np.arange(3)
        ds = ndpack.DictStore(t, mode="w")
        ds["/new"] = np.arange(5)
        ds.discard()
        with ndpack.DictStore(t, mode="r") as ds:
            assert list(ds.keys()) == ["/old"]
        assert hidden(tmp_path) == []


def test_an_error_in_a_with_block_discards_a_new_store(tmp_path):
    for name in ("w.b2d", "w.b2z"):
        t = tmp_path / name
        with ndpack.TreeStore(t, mode="w") as ts:
            ts["/old"] = np.arange(3)
        with pytest.raises(KeyError), ndpack.TreeStore(t, mode="w") as ts:
            ts["/new"] = np.arange(5)
            raise KeyError("interrupted")
        with ndpack.TreeStore(t, mode="r") as ts:
            assert list(ts.keys()) == ["/old"]
        with pytest.raises(KeyError), ndpack.TreeStore(tmp_path / ("n" + name), mode="w"):
            raise KeyError("interrupted")
        assert not (tmp_path / ("n" + name)).exists()
    assert hidden(tmp_path) == []


def test_save_replaces_only_when_complete(tmp_path, monkeypatch):
    t = tmp_path / "v.b2nd"
    ndpack.save(ndpack.asarray(np.arange(4.0)), t)
    from ndpack.storage import atomic as at
    real = at.Pending.commit

    def broken(self):
        raise OSError("disk full")
    monkeypatch.setattr(at.Pending, "commit", broken)
    for call in (lambda: ndpack.save(ndpack.asarray(np.ones(50)), t),
                 lambda: ndpack.save(ndpack.SChunk(data=b"abcd"), t),
                 lambda: ndpack.save_array(np.ones(50), t)):
        with pytest.raises(OSError, match="disk full"):
            call()
        assert ndpack.open(t)[:].tolist() == [0.0, 1.0, 2.0, 3.0]
        assert hidden(tmp_path) == []
    monkeypatch.setattr(at.Pending, "commit", real)


# ---------------------------------------------------------------------------------------
# readers while a writer works

WRITER = textwrap.dedent("""
    import sys, time, numpy as np, ndpack
    t, kind = sys.argv[1], sys.argv[2]
    x = np.random.default_rng(1).random(300_000)
    if kind == "append":
        s = ndpack.open(t, mode="a")
        for k in range(1, 400):
            s.append_data(np.full(25_000, float(k)))
    else:
        for k in range(1, 40):
            ndpack.asarray(x + k, urlpath=t, mode="w", chunks=(30_000,))
    print("done", flush=True)
""")


def _writer(t, kind):
    env = dict(os.environ, NDPACK_FSYNC="0")
    return subprocess.Popen([sys.executable, "-c", WRITER, str(t), kind], env=env,
                            stdout=subprocess.PIPE, text=True)


def test_readers_see_old_or_new_while_a_writer_replaces(tmp_path):
    t = tmp_path / "r.b2nd"
    x = np.random.default_rng(1).random(300_000)
    ndpack.asarray(x, urlpath=t, mode="w", chunks=(30_000,))
    held = ndpack.open(t)                          # opened before: keeps the old file
    w = _writer(t, "replace")
    seen, deadline = set(), time.monotonic() + 20
    while w.poll() is None and time.monotonic() < deadline:
        d = ndpack.open(t)[:] - x                  # never an error, never a mix
        k = round(float(d[0]))
        assert np.abs(d - k).max() < 1e-9
        seen.add(k)
        np.testing.assert_array_equal(held[:1000], x[:1000])
    assert w.wait(10) == 0
    assert hidden(tmp_path) == []
    assert len(seen) >= 2, seen


def test_readers_while_a_writer_appends(tmp_path):
    """In-place appends keep the old chunks readable through an open handle; a new
    open sees a consistent prefix or raises FormatError (docs/storage.md), never wrong
    data."""
    t = tmp_path / "s.b2frame"
    ndpack.SChunk(chunksize=200_000, data=np.zeros(25_000), urlpath=t, mode="w").close()
    held = ndpack.open(t)
    w = _writer(t, "append")
    errors = ok = 0
    deadline = time.monotonic() + 20
    while w.poll() is None and time.monotonic() < deadline:
        try:
            s = ndpack.open(t)
            n = s.nchunks
            k = n - 1
            data = np.frombuffer(s[k * 25_000:], np.float64) if n else np.zeros(0)
        except FormatError:
            errors += 1
            continue
        assert np.all(data == k), (n, data[:3])
        ok += 1
        assert np.frombuffer(held[:], np.float64).tolist() == [0.0] * 25_000
    assert w.wait(10) == 0
    assert ok > 0
    s = ndpack.open(t)
    assert s.nchunks == 400
    assert np.frombuffer(s.decompress_chunk(399), np.float64)[0] == 399


def test_reader_thread_while_writer_thread_replaces(tmp_path):
    t = tmp_path / "th.b2nd"
    ndpack.asarray(np.zeros(50_000), urlpath=t, mode="w", chunks=(5000,))
    stop, bad = threading.Event(), []

    def reader():
        while not stop.is_set():
            try:
                v = ndpack.open(t)[:]
                if not (v == v[0]).all():
                    bad.append("mixed")
            except Exception as exc:                # noqa: BLE001
                bad.append(repr(exc))
    th = threading.Thread(target=reader)
    th.start()
    try:
        for k in range(1, 30):
            ndpack.asarray(np.full(50_000, float(k)), urlpath=t, mode="w", chunks=(5000,))
    finally:
        stop.set()
        th.join()
    assert bad == []
    assert ndpack.open(t)[0] == 29.0


def test_big_trees_are_flushed_with_one_syncfs(tmp_path, monkeypatch):
    monkeypatch.setenv("NDPACK_FSYNC", "1")
    calls = {"fsync": 0, "syncfs": 0}
    real = atomic._syncfs
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: calls.__setitem__(
        "fsync", calls["fsync"] + 1))

    def syncfs(path):
        calls["syncfs"] += 1
        return real(path)
    monkeypatch.setattr(atomic, "_syncfs", syncfs)
    ndpack.asarray(np.arange(1000.0), urlpath=tmp_path / "sp.b2nd", chunks=(10,),
                   contiguous=False)
    assert calls == {"fsync": 1, "syncfs": 1}           # the tree, then its directory
    ndpack.asarray(np.arange(1000.0), urlpath=tmp_path / "few.b2nd", chunks=(500,),
                   contiguous=False)
    assert calls == {"fsync": 1 + 5, "syncfs": 1}   # 2 chunks, index, dir, parent
    with ndpack.DictStore(tmp_path / "s.b2d", mode="w") as ds:
        n = calls["fsync"]
        for i in range(3):
            ds[f"/k{i}"] = np.arange(3)
        assert calls["fsync"] == n                       # leaves of a new store: not yet
    assert calls["syncfs"] == 1 and calls["fsync"] == n + 4 + 1 + 1   # 4 files, dir, parent


def test_new_frames_start_writeback_of_each_chunk(tmp_path, monkeypatch):
    """A new file frame (fsynced once complete) asks the kernel to write each chunk out
    as it is stored; the data and the file are unchanged by it."""
    from ndpack.storage import framefile
    ranges = []
    real = framefile.start_writeback

    def spy(fd, pos, n):
        ranges.append((pos, n))
        real(fd, pos, n)
    monkeypatch.setattr(framefile, "start_writeback", spy)
    x = np.arange(300_000.0)
    path = tmp_path / "a.b2nd"
    ndpack.asarray(x, chunks=(100_000,), urlpath=path, mode="w")
    assert len(ranges) == 3 and all(n > 0 for _, n in ranges)
    assert [p for p, _ in ranges] == sorted(p for p, _ in ranges)
    np.testing.assert_array_equal(ndpack.open(path)[()], x)
    ranges.clear()
    a = ndpack.open(path, mode="a")                     # an existing file: no fsync coming
    a.resize((400_000,))
    a[300_000:] = 1.0
    assert ranges == []


def test_start_writeback_is_harmless(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10_000)
    fd = os.open(path, os.O_RDWR)
    try:
        atomic.start_writeback(fd, 0, 10_000)
        atomic.start_writeback(fd, 0, 0)
        monkeypatch.setenv("NDPACK_FSYNC", "0")
        atomic.start_writeback(fd, 0, 10_000)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"x" * 10_000
