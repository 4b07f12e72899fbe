"""sort / argsort out of core against NumPy: tiles sorted in memory and external merges
(runs forced small through ``mergesort.RUN_ITEMS`` / ``PIECE_ITEMS``), every axis,
descending, stability, NaN/-0.0/inf, outputs on disk, inputs of every kind, bad input,
and a subprocess sorting 2 GB with a bounded peak RSS."""

import contextlib
import errno
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndpack
from ndpack.engine.ops import mergesort, spool

from ..helpers import as_operand


@contextlib.contextmanager
def knobs(run=None, piece=None):
    """Small runs and pieces (what a small memory limit would give) for the block."""
    old = mergesort.RUN_ITEMS, mergesort.PIECE_ITEMS
    mergesort.RUN_ITEMS, mergesort.PIECE_ITEMS = run, piece
    try:
        yield
    finally:
        mergesort.RUN_ITEMS, mergesort.PIECE_ITEMS = old


def reference(x, axis, descending, positions):
    """NumPy's stable order; descending: values from largest (NaNs first), ties in the
    order of their positions (an oracle built from ranks, not the code's flip trick)."""
    if not descending:
        o = np.argsort(x, axis=axis, kind="stable")
    else:
        xm = np.moveaxis(x, axis, -1)
        o = np.empty(xm.shape, np.int64)
        for idx in np.ndindex(xm.shape[:-1]):
            lane = xm[idx]            # rank: where the value's class starts in NumPy's
            rank = np.searchsorted(np.sort(lane), lane, side="left")    # order
            o[idx] = np.lexsort((np.arange(lane.size), -rank))
        o = np.moveaxis(o, -1, axis)
    return o if positions else np.take_along_axis(x, o, axis)


def same_bits(got, want):
    got, want = np.asarray(got), np.array(want, order="C")
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype.kind in "fc":     # -0.0 vs 0.0 and NaN payloads are told apart
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (got, want)
    else:
        np.testing.assert_array_equal(got, want)


FLOATS = [0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 7.0]
DTYPES = ["int8", "uint8", "int16", "int32", "int64", "uint64", "float32", "float64",
          "bool", "complex128"]


@st.composite
def arrays(draw, max_dims=3, max_side=7):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    if dtype.kind == "f":
        elements = st.sampled_from(FLOATS)
    elif dtype.kind == "c":
        elements = st.builds(complex, st.sampled_from([0.0, 1.0, np.nan, -1.0]),
                             st.sampled_from([0.0, -0.0, np.nan, 2.0]))
    elif dtype.kind == "b":
        elements = st.booleans()
    else:
        elements = st.integers(0, 3)           # few values: ties everywhere
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=0,
                                  max_side=max_side))
    return draw(hnp.arrays(dtype, shape, elements=elements))


@given(x=arrays(), data=st.data())
def test_sort_and_argsort_match_numpy(x, data):
    nd = x.ndim
    chunks = tuple(data.draw(st.integers(1, max(1, s))) for s in x.shape)
    a = ndpack.asarray(x, chunks=chunks) if x.size else ndpack.asarray(x)
    axis = data.draw(st.integers(-nd, nd - 1))
    descending = data.draw(st.booleans())
    run = data.draw(st.sampled_from([None, 1, 2, 3, 5, 16]))
    piece = data.draw(st.sampled_from([None, 1, 2, 3]))
    with knobs(run, piece):
        got = ndpack.sort(a, axis=axis, descending=descending)
        pos = ndpack.argsort(a, axis=axis, descending=descending)
    same_bits(got[()], reference(x, axis, descending, False))
    same_bits(pos[()], reference(x, axis, descending, True))
    if x.size:
        assert got.chunks == a.chunks and pos.chunks == a.chunks


@given(n=st.integers(0, 300), data=st.data())
def test_one_long_lane_many_runs(n, data):
    """1-D: runs of a few items, pieces of one or two, many ties: argsort is NumPy's
    stable argsort (ties in the order of positions, both directions)."""
    x = np.asarray(data.draw(hnp.arrays(np.int16, n, elements=st.integers(-2, 2))))
    chunk = data.draw(st.integers(1, 50))
    a = ndpack.asarray(x, chunks=(chunk,)) if n else ndpack.asarray(x)
    with knobs(data.draw(st.integers(1, 40)), data.draw(st.integers(1, 4))):
        for descending in (False, True):
            same_bits(ndpack.argsort(a, descending=descending)[()],
                      reference(x, 0, descending, True))


def test_split_path_of_a_large_lane():
    """A lane of >= SPLIT_ITEMS items alone is sorted as parallel runs and merged."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1000, mergesort.SPLIT_ITEMS + 12345).astype(np.float64)
    x[rng.integers(0, x.size, 100)] = np.nan
    x[rng.integers(0, x.size, 100)] = -0.0
    a = ndpack.asarray(x, chunks=(300_000,))
    for descending in (False, True):
        same_bits(ndpack.argsort(a, descending=descending)[()],
                  reference(x, 0, descending, True))
    same_bits(ndpack.sort(a)[()], np.sort(x, kind="stable"))


@pytest.mark.parametrize("kind", ["ndarray", "lazyexpr", "numpy", "foreign"])
def test_input_kinds(kind):
    x = np.random.default_rng(1).normal(size=(13, 17))
    if kind == "foreign":
        op = Foreign(x)
    else:
        op = as_operand(x, kind)
    with knobs(7, 2):
        for axis in (0, 1):
            same_bits(ndpack.sort(op, axis=axis)[()], np.sort(x, axis=axis, kind="stable"))
            same_bits(ndpack.argsort(op, axis=axis, descending=True)[()],
                      reference(x, axis, True, True))


class Foreign:
    """An h5py/zarr-like array: shape, dtype, chunks and __getitem__ only (counting reads)."""

    def __init__(self, x, chunks=None, fail_after=None):
        self.x, self.shape, self.dtype = x, x.shape, x.dtype
        self.chunks = chunks
        self.reads, self.fail_after = 0, fail_after

    def __getitem__(self, key):
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise OSError("disk went away")
        return self.x[key]


def test_chunks_follow_the_input_or_the_caller():
    x = np.arange(60.0)[::-1].reshape(6, 10)
    assert ndpack.sort(Foreign(x, chunks=(3, 4))).chunks == (3, 4)
    assert ndpack.sort(ndpack.asarray(x, chunks=(2, 5))).chunks == (2, 5)
    r = ndpack.sort(ndpack.asarray(x, chunks=(2, 5)), axis=0, chunks=(4, 4))
    assert r.chunks == (4, 4)
    same_bits(r[()], np.sort(x, axis=0))


@pytest.mark.parametrize("axis", [0, 1])
def test_outputs_on_disk_and_no_file_left(tmp_path, axis):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 50, (40, 30)).astype(np.float32)
    a = ndpack.asarray(x, chunks=(7, 6))
    path = tmp_path / "s.b2nd"
    with knobs(25, 4):                          # external: runs in the output's folder
        r = ndpack.sort(a, axis=axis, urlpath=str(path), cparams={"clevel": 3})
        p = ndpack.argsort(a, axis=axis, urlpath=str(tmp_path / "p.b2nd"))
    assert sorted(os.listdir(tmp_path)) == ["p.b2nd", "s.b2nd"]
    same_bits(ndpack.open(str(path))[()], np.sort(x, axis=axis, kind="stable"))
    same_bits(ndpack.open(str(tmp_path / "p.b2nd"))[()],
              np.argsort(x, axis=axis, kind="stable"))
    assert r.urlpath is not None and p.dtype == np.int64
    with pytest.raises(FileExistsError):
        ndpack.sort(a, urlpath=str(path), mode="a")
    ndpack.sort(a[::-1], urlpath=str(path))                 # mode 'w' replaces
    same_bits(ndpack.open(str(path))[()], np.sort(x[::-1], axis=-1, kind="stable"))


@pytest.mark.parametrize("run, axis", [(None, 1), (30, 0)])   # tiles in memory, runs
def test_an_error_leaves_no_file(tmp_path, run, axis):
    x = np.random.default_rng(3).random((50, 40))
    src = Foreign(x, chunks=(10, 40), fail_after=3)
    path = tmp_path / "out.b2nd"
    with knobs(run, 4), pytest.raises(OSError, match="disk went away"):
        ndpack.sort(src, axis=axis, urlpath=str(path))
    assert src.reads >= 4 and os.listdir(tmp_path) == []


def test_disk_full_while_writing_runs(tmp_path, monkeypatch):
    """A full disk under the runs: the OSError comes through, nothing is left (runs
    are unnamed files, the output is removed under its temporary name)."""
    real, calls = spool._write_all, []

    def full(fd, data, pos):
        calls.append(pos)
        if len(calls) > 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data, pos)

    monkeypatch.setattr(spool, "_write_all", full)
    x = np.random.default_rng(4).random(400)
    with knobs(50, 8), pytest.raises(OSError, match="No space left"):
        ndpack.argsort(ndpack.asarray(x, chunks=(64,)), urlpath=str(tmp_path / "o.b2nd"))
    assert len(calls) > 5 and os.listdir(tmp_path) == []


def test_bad_input():
    rec = np.array([(2, 1.0), (1, 3.0), (1, 2.0), (0, 9.0)], dtype=[("a", "i4"), ("b", "f8")])
    # structured arrays sort by their fields, in memory (python-blosc2's order=)
    np.testing.assert_array_equal(ndpack.sort(rec)[()], np.sort(rec))
    np.testing.assert_array_equal(ndpack.argsort(rec)[()], np.argsort(rec, kind="stable"))
    for fn in (ndpack.sort, ndpack.argsort):
        with pytest.raises(np.exceptions.AxisError):
            fn(np.ones((2, 3)), axis=2)
        with pytest.raises(np.exceptions.AxisError):
            fn(np.ones((2, 3)), axis=-3)
        with pytest.raises(TypeError):
            fn(np.ones(3), axis=1.0)
        with pytest.raises(ValueError, match="at least one dimension"):
            fn(np.float64(3.0))
        with pytest.raises(TypeError, match="objects"):
            fn(np.array([1, "a"], dtype=object))
    c = np.array([1 + 2j, 1 - 1j, np.nan + 0j, 0j, 1 + np.nan * 1j])
    same_bits(ndpack.sort(c)[()], np.sort(c, kind="stable"))      # NumPy's complex order


def test_sorted_strings():
    x = np.array(["pear", "fig", "apple", "fig", "kiwi"])
    with knobs(2, 1):
        same_bits(ndpack.sort(ndpack.asarray(x, chunks=(2,)))[()], np.sort(x))
        same_bits(ndpack.argsort(x, descending=True)[()], reference(x, 0, True, True))


def test_sort_2gb_with_bounded_memory(tmp_path):
    """2 GiB of random float64 on disk sorted into a file with the memory limit at
    64 MiB (768 runs): sorted, the same values (counts of 1024 bins), peak RSS under
    400 MB (~290 MB measured, most of it 16 MB chunks in flight)."""
    script = textwrap.dedent(f"""
        import numpy as np, ndpack

        def hwm_mb():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
        ndpack.set_memory_limit("64M")
        n, step = 2 ** 28, 2 ** 21
        kw = dict(cparams={{"codec": ndpack.Codec.LZ4, "clevel": 1}})
        a = ndpack.empty((n,), np.float64, chunks=(step,), urlpath=r"{tmp_path}/a.b2nd",
                         mode="w", **kw)
        rng = np.random.default_rng(0)
        counts = np.zeros(1024, np.int64)
        for i in range(0, n, step):
            v = rng.random(step)
            counts += np.bincount((v * 1024).astype(np.intp), minlength=1024)
            a[i:i + step] = v
        del a
        a = ndpack.open(r"{tmp_path}/a.b2nd")
        before = hwm_mb()
        r = ndpack.sort(a, urlpath=r"{tmp_path}/s.b2nd", **kw)
        peak = hwm_mb()
        last, got = -1.0, np.zeros(1024, np.int64)
        for i in range(0, n, step):
            v = r[i:i + step]
            assert v[0] >= last and (v[1:] >= v[:-1]).all()
            got += np.bincount((v * 1024).astype(np.intp), minlength=1024)
            last = v[-1]
        assert (got == counts).all()
        print(before, peak)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, out.stderr
    before_mb, peak_mb = map(int, out.stdout.split())
    assert peak_mb < 400, f"peak RSS {peak_mb} MB sorting 2 GiB (before: {before_mb} MB)"
