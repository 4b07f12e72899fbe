"""Blocked linear algebra against NumPy: tensordot, matmul (batched, broadcast), vecdot,
outer; in string expressions and with @; foreign operands and outputs; bounded tiles."""

import threading

import h5py
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.ops import blas
from ndpack.engine.ops import contract
from ndpack.engine.ops import linalg
from ndpack.engine.run import workers


def _scale(x, y):
    """The rounding scale of ``x @ y`` summed in another order: ``max(|x| @ |y|)``."""
    return float((np.abs(x) @ np.abs(y)).max(initial=0))


def nd(x, chunks):
    return ndpack.asarray(x, chunks=tuple(max(1, min(c, s)) for c, s in zip(chunks, x.shape)))


@given(m=st.integers(1, 25), k=st.integers(1, 25), n=st.integers(1, 25),
       c=st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)),
       dtype=st.sampled_from(["f8", "f4", "c16", "i8", "i4"]))
@settings(deadline=None, max_examples=40)
def test_matmul_2d_hypothesis(m, k, n, c, dtype):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    x = (rng.normal(size=(m, k)) * 10).astype(dtype)
    y = (rng.normal(size=(k, n)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * x[::-1]
    a, b = nd(x, (c[0], c[1])), nd(y, (c[1], c[2]))
    want = x @ y
    got = ndpack.matmul(a, b)
    assert got.dtype == want.dtype
    # tile sums add in another order than BLAS: the error scale is |x| @ |y|
    scale = float((np.abs(x).astype("f8") @ np.abs(y).astype("f8")).max(initial=0))
    eps = 1e-5 if dtype == "f4" else 1e-12
    np.testing.assert_allclose(got[()], want, rtol=eps, atol=eps * scale)


@pytest.mark.parametrize("s1,s2,axes", [
    ((6, 7, 8), (7, 8, 5), ((1, 2), (0, 1))), ((6, 7, 8), (6, 7, 9), ((0, 1), (0, 1))),
    ((5, 6, 7), (7, 6, 5), ((2, 0), (0, 2))), ((4,), (5,), 0), ((3, 4), (4,), 1),
    ((5, 4, 3), (4, 3, 5), 2), ((8, 3), (3, 8), ([0, 1], [1, 0])),
])
def test_tensordot(s1, s2, axes):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=s1), rng.normal(size=s2)
    a = nd(x, tuple(max(1, s // 2) for s in s1))
    b = nd(y, tuple(max(1, s // 3) for s in s2))
    np.testing.assert_allclose(ndpack.tensordot(a, b, axes=axes)[()],
                               np.tensordot(x, y, axes=axes), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("s1,s2", [((3, 30, 40), (40, 20)), ((2, 1, 5, 6), (3, 6, 4)),
                                   ((6,), (6, 4)), ((3, 6), (6,)), ((4, 5, 6), (4, 6, 2))])
def test_matmul_batched_and_vectors(s1, s2):
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=s1), rng.normal(size=s2)
    got = ndpack.matmul(nd(x, (2,) * len(s1)), nd(y, (3,) * len(s2)))
    np.testing.assert_allclose(got[()], np.matmul(x, y), rtol=1e-12)


def test_vecdot_outer_and_operators():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(20, 9)), rng.normal(size=(20, 9))
    a, b = nd(x, (6, 4)), nd(y, (5, 9))
    np.testing.assert_allclose(ndpack.vecdot(a, b, axis=0), (x * y).sum(0), rtol=1e-12)
    np.testing.assert_allclose(ndpack.outer(a[:, 0], b[0])[()], np.outer(x[:, 0], y[0]))
    np.testing.assert_allclose((a.T @ b)[()], x.T @ y, rtol=1e-12)
    np.testing.assert_allclose(np.matmul(a.T, b)[()], x.T @ y, rtol=1e-12)
    e = ndpack.lazyexpr("matmul(a.T, b) * 2 + tensordot(a, b, axes=((0, 1), (0, 1)))",
                        operands={"a": a, "b": b})
    assert e.shape == (9, 9)
    np.testing.assert_allclose(e[()], (x.T @ y) * 2 + np.tensordot(x, y, 2), rtol=1e-12)
    np.testing.assert_allclose(e.compute()[()], (x.T @ y) * 2 + np.tensordot(x, y, 2),
                               rtol=1e-12)
    s = ndpack.lazyexpr("sum(matmul(a.T, sin(b)), axis=0)", operands={"a": a, "b": b})
    np.testing.assert_allclose(s[()], (x.T @ np.sin(y)).sum(0), rtol=1e-12, atol=1e-12)


def test_foreign_operands_and_outputs(tmp_path):
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(40, 30)), rng.normal(size=(30, 20))
    with h5py.File(tmp_path / "f.h5", "w") as f:
        hx = f.create_dataset("x", data=x, chunks=(10, 30))
        zy = zarr.create_array(tmp_path / "y.zarr", data=y, chunks=(7, 20))
        out = f.create_dataset("o", shape=(40, 20), dtype="f8")
        ndpack.evaluate("matmul(hx, zy)", local_dict={"hx": hx, "zy": zy}, out=out)
        np.testing.assert_allclose(out[()], x @ y, rtol=1e-12)
        r = ndpack.tensordot(hx, zy, axes=([1], [0]), urlpath=tmp_path / "r.b2nd")
        np.testing.assert_allclose(ndpack.open(tmp_path / "r.b2nd")[()], x @ y, rtol=1e-12)
        assert r.urlpath is not None


@pytest.mark.parametrize("axes", [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0))])
def test_tensordot_foreign_read_directly(tmp_path, monkeypatch, axes):
    """h5py and zarr operands of a product go through the direct readers (issue 26):
    chunks read and decoded on our threads, a chunk cut by several steps decoded once;
    the result is NumPy's whatever the steps."""
    from ndpack.engine.run import foreign, gridread
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(12, 9, 10)), rng.normal(size=(12, 9, 10))
    monkeypatch.setattr(linalg, "TILE_BYTES", 8 * 9 * 10 * 3)      # steps cut the chunks
    monkeypatch.setattr(linalg, "LIVE_BYTES", 8 * 9 * 10 * 6)
    want = np.tensordot(x, y, axes=axes)
    decoded = []
    real = gridread._Decoded.get

    def get(self, coords, decode):
        return real(self, coords, lambda: decoded.append((id(self), coords)) or decode())
    monkeypatch.setattr(gridread._Decoded, "get", get)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        ops = {"h5-deflate": (f.create_dataset("x", data=x, chunks=(4, 9, 10), compression="gzip"),
                              f.create_dataset("y", data=y, chunks=(4, 9, 10), compression="gzip")),
               "h5-plain": (f.create_dataset("u", data=x, chunks=(5, 3, 10)),
                            f.create_dataset("v", data=y, chunks=(5, 3, 10))),
               "zarr": (zarr.create_array(tmp_path / "x.zarr", data=x, chunks=(4, 9, 10)),
                        zarr.create_array(tmp_path / "y.zarr", data=y, chunks=(3, 9, 5)))}
        for name, (a, b) in ops.items():
            foreign.READS.clear()
            decoded.clear()
            got = ndpack.evaluate(f"tensordot(a, b, axes={axes})", local_dict={"a": a, "b": b})
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
            assert foreign.READS[name.split("-")[0].replace("h5", "h5py")] > 0, name
            assert not any(k.endswith("fallback") for k in foreign.READS), foreign.READS
            assert len(decoded) == len(set(decoded)), (name, decoded)   # each chunk once
            np.testing.assert_allclose(ndpack.tensordot(a, b, axes=axes)[()], want,
                                       rtol=1e-12, atol=1e-12, err_msg=name)


def test_tiles_stay_bounded(monkeypatch):
    """No operand read is bigger than a tile along the contracted axes."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(64, 256)), rng.normal(size=(256, 48))
    monkeypatch.setattr(linalg, "TILE_BYTES", 64 * 8 * 8)
    reads = []

    class Rec:
        def __init__(self, data):
            self.data, self.shape, self.dtype, self.chunks = data, data.shape, data.dtype, (16, 16)

        def __getitem__(self, key):
            reads.append(self.data[key].size)
            return self.data[key]
    got = ndpack.matmul(Rec(x), Rec(y), chunks=(16, 16))
    np.testing.assert_allclose(got[()], x @ y, rtol=1e-12, atol=1e-12 * _scale(x, y))
    assert max(reads) <= 16 * 64


def test_errors():
    a, b = ndpack.asarray(np.ones((3, 4))), ndpack.asarray(np.ones((5, 6)))
    with pytest.raises(ValueError, match="columns"):
        ndpack.matmul(a, b)
    with pytest.raises(ValueError, match="columns"):
        ndpack.lazyexpr("matmul(a, b)", operands={"a": a, "b": b})
    with pytest.raises(ValueError, match="axis"):
        ndpack.tensordot(a, b, axes=((0,), (5,)))
    with pytest.raises(ValueError, match="keyword 'foo'|not allowed"):
        ndpack.lazyexpr("tensordot(a, a, foo=1)", operands={"a": a})
    with pytest.raises(ValueError, match="outer"):
        ndpack.outer(a, a)


# --- the blocked kernel and its plans ---------------------------------------------------

AXES_3D = [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0)), ((0, 2), (2, 0)),
           ((1,), (2,)), ((2, 1, 0), (0, 2, 1))]


@given(s=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
       axes=st.sampled_from(AXES_3D), first=st.booleans(), view=st.booleans())
@settings(deadline=None, max_examples=60)
def test_contract_into_matches_tensordot(s, axes, first, view):
    """Every axis pattern (matrix views, loops over leading axes, the copying fallback),
    writing or accumulating, on contiguous tiles and on strided views."""
    rng = np.random.default_rng(sum(s))
    x = rng.normal(size=s)
    perm = [0, 1, 2]
    for a, b in zip(*axes):
        perm[b] = s[a]
    y = rng.normal(size=tuple(perm))
    if view:                                 # strided tiles, as sliced from a whole tile
        x = np.concatenate([x, x], axis=0)[::2]
        y = np.concatenate([y, y], axis=-1)[..., ::2]
    want = np.tensordot(x, y, axes=axes)
    acc = np.full(want.shape, 0.0 if first else 1.0)
    contract.contract_into(acc, x, y, list(axes[0]), list(axes[1]), first, {})
    np.testing.assert_allclose(acc, want + (0.0 if first else 1.0), rtol=1e-12, atol=1e-12)


def test_contract_into_empty_and_scalar():
    acc = np.ones((2, 3))
    contract.contract_into(acc, np.ones((2, 0)), np.ones((0, 3)), [1], [0], True, {})
    assert (acc == 0).all()
    acc = np.ones((2, 3))
    contract.contract_into(acc, np.ones((2, 0)), np.ones((0, 3)), [1], [0], False, {})
    assert (acc == 1).all()
    acc = np.empty(())
    contract.contract_into(acc, np.arange(4.0), np.arange(4.0), [0], [0], True, {})
    assert acc == 14.0
    # nothing to contract: zeros, through the blocked and the batched paths
    a, b = ndpack.asarray(np.ones((2, 0))), ndpack.asarray(np.ones((0, 3)))
    assert (ndpack.tensordot(a, b, 1)[()] == np.zeros((2, 3))).all()
    c = ndpack.asarray(np.ones((4, 0, 3)))
    assert (ndpack.matmul(a, c)[()] == np.zeros((4, 2, 3))).all()


def test_fit_keeps_blocks_then_cuts():
    # 300 x 300 contracted elements of 4800 bytes each (two 300-row tiles of float64)
    per = 2 * 300 * 8
    assert linalg._fit([300, 300], [1, 75], [20, 300], [0, 1], per, 64 * 2**20, True) \
        == [40, 300]                                  # whole chunks along the outer axis
    assert linalg._fit([300, 300], [1, 75], [20, 300], [0, 1], per, 44 * 2**20, True) \
        == [20, 300]
    assert linalg._fit([300, 300], [1, 75], [20, 300], [0, 1], per, 20 * 2**20, True) \
        == [14, 300]                                  # less than a chunk: whole blocks
    assert linalg._fit([300, 300], [75, 300], [300, 300], [0, 1], per, 64 * 2**20,
                       True) is None                  # one block row does not fit
    assert linalg._fit([300, 300], [75, 300], [300, 300], [0, 1], per, 128 * 2**20,
                       True) == [75, 300]
    assert linalg._fit([300, 300], [75, 300], [300, 300], [0, 1], per, 64 * 2**20,
                       False) == [46, 300]


class Recorder:
    """An array-like that records the keys it is read with, and by which thread (and
    has a block layout)."""

    def __init__(self, data, chunks, blocks=None):
        self.data, self.shape, self.dtype = data, data.shape, data.dtype
        self.chunks = chunks
        if blocks is not None:
            self.blocks = blocks
        self.keys, self.threads = [], []

    def __getitem__(self, key):
        self.keys.append(key)
        self.threads.append(threading.current_thread().name)
        return self.data[key]


def _whole_blocks_once(rec, axes):
    """Every read of `rec` covers whole blocks along the contracted axes `axes`, and
    each element is read once."""
    assert len(rec.keys) > 1
    count = np.zeros(rec.shape, int)
    for key in rec.keys:
        count[key] += 1
        for ax, k in zip(axes, [key[d] for d in axes]):
            bl = rec.blocks[ax]
            assert k.start % bl == 0 and (k.stop % bl == 0 or k.stop == rec.shape[ax])
    assert (count == 1).all()


@pytest.mark.parametrize("axes", [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0))])
def test_steps_keep_whole_blocks_and_prefetch(monkeypatch, axes):
    """With small budgets the contraction streams in many steps, the next one read
    while the current one is multiplied (steps cut in parts, or one call); every read
    covers whole blocks along the contracted axes and each stored block is read once."""
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(24, 20, 18)), rng.normal(size=(24, 20, 18))
    a, b = Recorder(x, (6, 20, 18), (2, 5, 18)), Recorder(y, (6, 20, 18), (2, 5, 18))
    monkeypatch.setattr(linalg, "TILE_BYTES", 20 * 18 * 8 * 18)
    monkeypatch.setattr(linalg, "LIVE_BYTES", 6 * 20 * 18 * 8 * 18)
    monkeypatch.setattr(contract, "LANE_ACC_BYTES", -1)        # no lanes
    started = _count_reads_at_products(monkeypatch)
    got = ndpack.tensordot(a, b, axes=axes)
    np.testing.assert_allclose(got[()], np.tensordot(x, y, axes=axes), rtol=1e-12,
                               atol=1e-12)
    n = len(started)
    assert n > 1 and started == [2 * min(i + 2, n) for i in range(n)]    # one step ahead
    for rec in (a, b):
        _whole_blocks_once(rec, axes[0])


@pytest.mark.parametrize("axes", [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0))])
def test_lanes_deal_steps_to_workers(monkeypatch, axes):
    """With BLAS held and room for two steps, the steps are dealt to two workers in
    turn, each adding into its own accumulator: whole blocks, each read once, at most
    one step per worker in memory."""
    if blas.library() is None:
        pytest.skip("NumPy's OpenBLAS not found")
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(24, 20, 18)), rng.normal(size=(24, 20, 18))
    a, b = Recorder(x, (6, 20, 18), (2, 5, 18)), Recorder(y, (6, 20, 18), (2, 5, 18))
    monkeypatch.setattr(linalg, "TILE_BYTES", 20 * 18 * 8 * 18)
    monkeypatch.setattr(linalg, "LIVE_BYTES", 6 * 20 * 18 * 8 * 18)
    monkeypatch.setattr(linalg, "get_nthreads", lambda: 2)
    dealt = []
    real = contract.Deal.next

    def next_step(self, w):
        i = real(self, w)
        if i is not None:
            dealt.append((w, i))
        return i
    monkeypatch.setattr(contract.Deal, "next", next_step)
    got = ndpack.tensordot(a, b, axes=axes)
    np.testing.assert_allclose(got[()], np.tensordot(x, y, axes=axes), rtol=1e-12,
                               atol=1e-12)
    steps = sorted(i for _, i in dealt)
    assert len(steps) > 1 and steps == list(range(len(steps)))    # each step once
    for rec in (a, b):
        _whole_blocks_once(rec, axes[0])
        assert len(rec.keys) == len(steps)


def test_sequential_steps_when_two_do_not_fit(monkeypatch):
    """Blocks too big for two steps in LIVE_BYTES: one step at a time, blocks whole."""
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(10, 12, 16)), rng.normal(size=(9, 12, 16))
    a, b = Recorder(x, (5, 12, 16), (1, 4, 16)), Recorder(y, (3, 12, 16), (1, 4, 16))
    monkeypatch.setattr(linalg, "TILE_BYTES", 10 * 4 * 16 * 8)
    monkeypatch.setattr(linalg, "LIVE_BYTES", (10 + 9) * 4 * 16 * 8 + 64)
    started = _count_reads_at_products(monkeypatch)
    got = ndpack.tensordot(a, b, axes=((1, 2), (1, 2)))
    np.testing.assert_allclose(got[()], np.tensordot(x, y, ((1, 2), (1, 2))), rtol=1e-12)
    assert len(a.keys) == 3 and all(k[1].stop - k[1].start == 4 for k in a.keys)
    assert started == [2, 4, 6]                  # no read ahead


def _count_reads_at_products(monkeypatch):
    """The number of reads started when each step's products are done (filled later)."""
    started, submitted = [], []
    real_submit, real_raise = linalg.workers.submit, contract._raise_first

    def submit(pool, fn, *args):
        if getattr(fn, "__name__", "") == "read":
            submitted.append(1)
        return real_submit(pool, fn, *args)

    def products_done(jobs):                    # once per step, after the products
        started.append(len(submitted))
        real_raise(jobs)
    monkeypatch.setattr(linalg.workers, "submit", submit)
    monkeypatch.setattr(contract, "_raise_first", products_done)
    return started


def test_small_operands_read_once():
    """Operands that fit are read whole, once, and multiplied by one product."""
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(30, 40)), rng.normal(size=(40, 50))
    a, b = Recorder(x, (7, 9)), Recorder(y, (11, 13))
    got = ndpack.matmul(a, b)
    np.testing.assert_allclose(got[()], x @ y, rtol=1e-12, atol=1e-12 * _scale(x, y))
    assert len(a.keys) == 1 and len(b.keys) == 1


@pytest.mark.parametrize("dtype", ["f8", "f4", "c16", "i8", "i4"])
@pytest.mark.parametrize("axes", [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0))])
def test_tensordot_ndarrays_odd_shapes(monkeypatch, dtype, axes):
    """NDArrays with chunks and blocks that do not divide the shape, several dtypes,
    streamed in many steps (small budgets) through read_into and reused buffers."""
    rng = np.random.default_rng(9)
    x = (rng.normal(size=(13, 11, 9)) * 10).astype(dtype)
    y = (rng.normal(size=(13, 11, 9)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x, y = x + 1j * x[::-1], y - 2j * y[:, ::-1]
    a = ndpack.asarray(x, chunks=(5, 4, 9), blocks=(2, 3, 4))
    b = ndpack.asarray(y, chunks=(4, 11, 5), blocks=(3, 5, 2))
    monkeypatch.setattr(linalg, "TILE_BYTES", 11 * 9 * 16 * 4)
    monkeypatch.setattr(linalg, "LIVE_BYTES", 6 * 11 * 9 * 16 * 4)
    want = np.tensordot(x, y, axes=axes)
    got = ndpack.tensordot(a, b, axes=axes)
    assert got.dtype == want.dtype
    eps = 1e-5 if dtype == "f4" else 1e-12
    scale = float(np.tensordot(np.abs(x).astype("f8"), np.abs(y).astype("f8"), axes).max())
    np.testing.assert_allclose(got[()], want, rtol=eps, atol=eps * scale)
    out = np.zeros(want.shape, want.dtype)
    assert ndpack.tensordot(a, b, axes=axes, out=out) is out
    np.testing.assert_allclose(out, want, rtol=eps, atol=eps * scale)


def test_result_inherits_cparams():
    x = np.arange(64.0).reshape(8, 8)
    a = ndpack.asarray(x, cparams={"codec": ndpack.Codec.LZ4, "clevel": 1})
    r = ndpack.matmul(a, a)
    assert (r.cparams.codec, r.cparams.clevel) == (ndpack.Codec.LZ4, 1)
    r = ndpack.matmul(a, a, cparams={"codec": ndpack.Codec.ZSTD, "clevel": 3})
    assert (r.cparams.codec, r.cparams.clevel) == (ndpack.Codec.ZSTD, 3)
    r = ndpack.matmul(a, x.astype("f4") + 1j)          # another dtype: the defaults
    assert r.dtype == np.complex128 and r.cparams.codec == ndpack.asarray(x).cparams.codec


def test_tiles_of_several_chunks(monkeypatch):
    """Chunks spanning the trailing axes are computed several at a time (each tile once)
    and cut into the result's chunks; the last tile and chunk are partial."""
    rng = np.random.default_rng(10)
    x, y = rng.normal(size=(103, 20)), rng.normal(size=(20, 7))
    a, b = ndpack.asarray(x, chunks=(10, 20)), ndpack.asarray(y, chunks=(5, 7))
    monkeypatch.setattr(linalg, "OUT_CHUNK_BYTES", 10 * 7 * 8)
    monkeypatch.setattr(linalg, "OUT_TILE_BYTES", 30 * 7 * 8)
    calls = []
    real = contract.Tiler.__call__
    monkeypatch.setattr(contract.Tiler, "__call__",
                        lambda self, region: calls.append(region) or real(self, region))
    got = ndpack.matmul(a, b)
    assert got.chunks == (10, 7)
    np.testing.assert_allclose(got[()], x @ y, rtol=1e-12, atol=1e-12 * _scale(x, y))
    assert [r[0].stop - r[0].start for r in calls] == [30, 30, 30, 13]
    out = np.empty((103, 7))
    ndpack.matmul(a, b, out=out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-12, atol=1e-12 * _scale(x, y))


def test_accumulation_in_row_blocks(monkeypatch):
    """Steps after a tile's first are added through a scratch of a few hundred rows."""
    rng = np.random.default_rng(11)
    x, y = rng.normal(size=(600, 64)), rng.normal(size=(64, 8))
    a, b = Recorder(x, (600, 16)), Recorder(y, (16, 8))
    monkeypatch.setattr(linalg, "TILE_BYTES", 600 * 16 * 8)
    monkeypatch.setattr(contract, "SCRATCH_BYTES", 8)
    got = ndpack.matmul(a, b)
    np.testing.assert_allclose(got[()], x @ y, rtol=1e-12, atol=1e-12 * _scale(x, y))
    assert len(a.keys) == 4 and all(k[1].stop - k[1].start == 16 for k in a.keys)


def test_same_file_operand_read_concurrently(monkeypatch, tmp_path):
    """One on-disk NDArray as both operands: its tiles are read by two workers at once
    (and ahead of the products), block by block from the file."""
    rng = np.random.default_rng(12)
    x = rng.normal(size=(40, 30, 20))
    a = ndpack.asarray(x, chunks=(8, 30, 20), blocks=(2, 10, 20), urlpath=tmp_path / "a.b2nd",
                       mode="w")
    a = ndpack.open(tmp_path / "a.b2nd")
    monkeypatch.setattr(linalg, "TILE_BYTES", 20 * 20 * 8 * 24)
    monkeypatch.setattr(linalg, "LIVE_BYTES", 6 * 20 * 20 * 8 * 24)
    for axes in AXES_3D[:3]:
        np.testing.assert_allclose(ndpack.tensordot(a, a, axes=axes)[()],
                                   np.tensordot(x, x, axes=axes), rtol=1e-12, atol=1e-12)


def test_blocks_cut_when_one_does_not_fit(monkeypatch):
    """Blocks bigger than the budget are cut (read in parts) rather than read whole."""
    rng = np.random.default_rng(13)
    x, y = rng.normal(size=(12, 64)), rng.normal(size=(64, 10))
    a, b = Recorder(x, (12, 64), (12, 64)), Recorder(y, (64, 10), (64, 10))
    monkeypatch.setattr(linalg, "TILE_BYTES", 12 * 8 * 8)
    monkeypatch.setattr(linalg, "LIVE_BYTES", 6 * 12 * 8 * 8)
    got = ndpack.matmul(a, b)
    np.testing.assert_allclose(got[()], x @ y, rtol=1e-12, atol=1e-12 * _scale(x, y))
    assert max(x[k].size for k in a.keys) <= 12 * 8 and len(a.keys) >= 8


# --- BLAS called directly, products cut among the workers -------------------------------

needs_blas = pytest.mark.skipif(blas.library() is None, reason="NumPy's OpenBLAS not found")


@pytest.fixture(params=["fast", "fast-parts", "split-general", "general"])
def path(request, monkeypatch):
    """Run a test on each path: "fast" (accumulating BLAS calls; the workers multiply,
    in lanes where they apply, else in parts), "fast-parts" (no lanes: every step cut
    in parts), "split-general" (the workers multiply with np.matmul and scratch
    additions: what dtypes BLAS does not take get), "general" (no BLAS library: one
    np.matmul per product on the calling thread, BLAS's own threads)."""
    monkeypatch.setattr(contract, "MIN_SPLIT", 0)             # cut even tiny steps
    monkeypatch.setattr(linalg, "get_nthreads", lambda: 2)
    if request.param != "general" and blas.library() is None:
        pytest.skip("NumPy's OpenBLAS not found")
    if request.param == "fast-parts":
        monkeypatch.setattr(contract, "LANE_ACC_BYTES", -1)
    elif request.param == "split-general":
        monkeypatch.setattr(blas, "gemm", lambda out, a, b, accumulate: False)
    elif request.param == "general":
        monkeypatch.setattr(blas, "library", lambda: None)
    calls = {"parts": 0, "lanes": 0, "gemm": 0}
    real_run, real_gemm, real_lane = contract.run, blas.gemm, contract.Tiler._lane

    def run(ts, part, nparts, scratch):
        calls["parts"] += nparts > 1
        return real_run(ts, part, nparts, scratch)

    def gemm(*args, **kwargs):
        done = real_gemm(*args, **kwargs)
        calls["gemm"] += done
        return done

    def lane(*args):
        calls["lanes"] += 1
        return real_lane(*args)
    monkeypatch.setattr(contract, "run", run)
    monkeypatch.setattr(blas, "gemm", gemm)
    monkeypatch.setattr(contract.Tiler, "_lane", lane)
    yield request.param, calls
    if request.param == "general":
        assert calls == {"parts": 0, "lanes": 0, "gemm": 0}
    elif request.param == "split-general":
        assert calls["parts"] + calls["lanes"] > 0 and calls["gemm"] == 0
    elif request.param == "fast-parts":
        assert calls["parts"] > 0 and calls["lanes"] == 0 and calls["gemm"] > 0
    else:
        assert calls["parts"] + calls["lanes"] > 0 and calls["gemm"] > 0


@pytest.mark.parametrize("axes", [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0)),
                                  ((0, 2), (2, 0)), ((2, 1, 0), (0, 2, 1))])
def test_tensordot_paths(path, monkeypatch, axes):
    """Every path against NumPy: odd chunks and blocks, many steps (small budgets)."""
    rng = np.random.default_rng(20)
    x = rng.normal(size=(13, 11, 9))
    shape = [7, 6, 5]                            # the free axes of y
    for p, q in zip(*axes):
        shape[q] = x.shape[p]
    y = rng.normal(size=tuple(shape))
    a = ndpack.asarray(x, chunks=(5, 4, 9), blocks=(2, 3, 4))
    b = ndpack.asarray(y, chunks=(4, 5, 5), blocks=(3, 5, 2))
    monkeypatch.setattr(linalg, "TILE_BYTES", 11 * 9 * 8 * 4)
    monkeypatch.setattr(linalg, "LIVE_BYTES", 6 * 11 * 9 * 8 * 4)
    want = np.tensordot(x, y, axes=axes)
    np.testing.assert_allclose(ndpack.tensordot(a, b, axes=axes)[()], want, rtol=1e-12,
                               atol=1e-12 * float(np.tensordot(np.abs(x), np.abs(y), axes).max()))


@pytest.mark.parametrize("dtype", ["f8", "f4", "c16", "c8"])
def test_matmul_paths(path, monkeypatch, dtype):
    """matmul of NDArrays whose chunks do not divide the shape, tiles of several
    chunks, operands read whole and streamed, in every dtype BLAS takes."""
    rng = np.random.default_rng(21)
    x = rng.normal(size=(67, 45)).astype(dtype)
    y = rng.normal(size=(45, 38)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x, y = x + 1j * x[::-1], y - 2j * y[:, ::-1]
    a, b = ndpack.asarray(x, chunks=(10, 45)), ndpack.asarray(y, chunks=(7, 38), blocks=(3, 38))
    monkeypatch.setattr(linalg, "TILE_BYTES", 30 * 45 * 16)
    monkeypatch.setattr(linalg, "OUT_CHUNK_BYTES", 10 * 38 * 16)
    eps = 1e-5 if dtype in ("f4", "c8") else 1e-12
    got = ndpack.matmul(a, b)
    assert got.dtype == (x @ y).dtype
    np.testing.assert_allclose(got[()], x @ y, rtol=eps, atol=eps * _scale(x, y))
    out = np.full((67, 38), np.nan, x.dtype)             # garbage in out: overwritten
    ndpack.matmul(a, b, out=out)
    np.testing.assert_allclose(out, x @ y, rtol=eps, atol=eps * _scale(x, y))


def test_products_held_at_one_thread(monkeypatch):
    """While a product runs, BLAS is held at one thread (its steps are cut among the
    workers); the thread count found is given back after it, also on an error."""
    lib = blas.library()
    if lib is None:
        pytest.skip("NumPy's OpenBLAS not found")
    monkeypatch.setattr(contract, "MIN_SPLIT", 0)
    monkeypatch.setattr(linalg, "get_nthreads", lambda: 2)
    before = lib.get_threads()
    seen = []
    real = contract.run
    monkeypatch.setattr(contract, "run", lambda *args: seen.append(lib.get_threads()) or
                        real(*args))
    x = np.arange(48.0).reshape(6, 8)
    a = ndpack.asarray(x, chunks=(3, 8))
    np.testing.assert_allclose(ndpack.matmul(a, a.T)[()], x @ x.T)
    assert seen and set(seen) == {1} and lib.get_threads() == before

    def boom(*args):
        raise RuntimeError("boom")
    monkeypatch.setattr(contract, "run", boom)
    with pytest.raises(RuntimeError, match="boom"):
        ndpack.matmul(a, a.T)
    assert lib.get_threads() == before


def test_one_thread_nests_and_restores(monkeypatch):
    lib = blas.library()
    if lib is None:
        with blas.one_thread() as held:
            assert held is False
        return
    before = lib.get_threads()
    with blas.one_thread() as h1:
        with blas.one_thread() as h2:
            assert h1 and h2 and lib.get_threads() == 1
        assert lib.get_threads() == 1
    assert lib.get_threads() == before
    monkeypatch.setattr(blas, "library", lambda: None)
    with blas.one_thread() as held:
        assert held is False


@needs_blas
@given(m=st.integers(0, 9), k=st.integers(0, 9), n=st.integers(0, 9),
       dtype=st.sampled_from(["f8", "f4", "c16", "c8"]),
       layouts=st.tuples(*[st.sampled_from(["c", "f", "strided"])] * 3),
       accumulate=st.booleans())
@settings(deadline=None, max_examples=150)
def test_blas_gemm_matches_numpy(m, k, n, dtype, layouts, accumulate):
    """Row- and column-major operands and outputs, strided rows, empty and single
    dimensions, writing or adding."""
    rng = np.random.default_rng(m * 100 + k * 10 + n)

    def make(r, c, layout):
        v = rng.normal(size=(r, c))
        if np.dtype(dtype).kind == "c":
            v = v + 1j * rng.normal(size=(r, c))
        v = v.astype(dtype)
        if layout == "f":
            return np.asfortranarray(v)
        if layout == "strided":
            big = np.zeros((r, c + 2), dtype)
            big[:, :c] = v
            return big[:, :c]
        return v
    a, b, out = make(m, k, layouts[0]), make(k, n, layouts[1]), make(m, n, layouts[2])
    want = a @ b + (out if accumulate else 0)
    assert blas.gemm(out, a, b, accumulate)
    eps = 1e-5 if dtype in ("f4", "c8") else 1e-12
    np.testing.assert_allclose(out, want, rtol=eps, atol=eps * (1 + _scale(a, b)))


@needs_blas
def test_blas_gemm_declines_what_it_cannot_do():
    """Other dtypes, mixed dtypes, byte-swapped data, negative or zero strides: False,
    and `out` untouched (the caller takes the general path)."""
    a = np.arange(12.0).reshape(3, 4)
    b = np.arange(8.0).reshape(4, 2)
    cases = [(np.zeros((3, 2), "i8"), a.astype("i8"), b.astype("i8")),
             (np.zeros((3, 2)), a.astype("f4"), b),
             (np.zeros((3, 2)), a.astype(">f8"), b.astype(">f8")),
             (np.zeros((3, 2)), a[::-1], b),
             (np.zeros((3, 2)), np.broadcast_to(a[:1], (3, 4)), b),
             (np.zeros((3, 2), "f2"), a.astype("f2"), b.astype("f2"))]
    for out, x, y in cases:
        assert not blas.gemm(out, x, y, accumulate=False)
        assert not out.any()
    big = np.zeros((3, 2))
    assert not blas.gemm(big[:, :1], a, b, accumulate=False)   # shapes that do not fit


@given(s=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
       axes=st.sampled_from(AXES_3D), first=st.booleans(), nparts=st.integers(1, 4))
@settings(deadline=None, max_examples=60)
def test_parts_add_up_to_the_whole(s, axes, first, nparts):
    """Running the parts of a step's products one after another (any order) writes
    what one call writes: the parts cover the output exactly once."""
    rng = np.random.default_rng(sum(s) + nparts)
    x = rng.normal(size=s)
    perm = [0, 1, 2]
    for a, b in zip(*axes):
        perm[b] = s[a]
    y = rng.normal(size=tuple(perm))
    want = np.tensordot(x, y, axes=axes) + (0.0 if first else 1.0)
    acc = np.full(want.shape, 0.0 if first else 1.0)
    ts = contract.terms(acc, x, y, list(axes[0]), list(axes[1]), first)
    n = nparts if contract.splittable(ts) else 1
    for p in reversed(range(n)):
        contract.run(ts, p, n, {})
    np.testing.assert_allclose(acc, want, rtol=1e-12, atol=1e-12)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
       perm_seed=st.integers(0, 1000), cut=st.integers(0, 4), step=st.integers(1, 2))
@settings(deadline=None, max_examples=200)
def test_matrix_views_exactly_when_numpy_would_not_copy(shape, perm_seed, cut, step):
    """The stride test that replaced trying (and failing) a shape assignment agrees with
    NumPy: a 2-D view whenever ``transpose(...).reshape(...)`` needs no copy."""
    rng = np.random.default_rng(perm_seed)
    base = np.arange(np.prod(shape) * step, dtype="f8")[::step].reshape(shape)
    axes = list(rng.permutation(len(shape)))
    cut = min(cut, len(shape))
    rows, cols = axes[:cut], axes[cut:]
    want = base.transpose(rows + cols).reshape(
        int(np.prod([shape[a] for a in rows])), int(np.prod([shape[a] for a in cols])))
    got = contract._matrix(base, rows, cols)
    if got is None:
        assert not np.shares_memory(want, base)
    else:
        assert np.shares_memory(got, base) and np.array_equal(got, want)


@given(n=st.integers(1, 4), total=st.integers(0, 30), order=st.lists(st.integers(0, 3)))
@settings(deadline=None, max_examples=100)
def test_deal_gives_each_step_once(n, total, order):
    """Lanes asking in any order get every step once: their own run in order, then
    the last steps of the longest runs left."""
    deal = contract.Deal(n, total)
    got = {w: [] for w in range(n)}
    asks = [w % n for w in order] + [w for w in range(n) for _ in range(total + 1)]
    for w in asks:
        i = deal.next(w)
        if i is not None:
            got[w].append(i)
    assert sorted(i for v in got.values() for i in v) == list(range(total))
    for w, steps in got.items():
        own = [i for i in steps if w * total // n <= i < (w + 1) * total // n]
        assert own == sorted(own)


def test_operand_reads_whole_block_rows_in_place(tmp_path):
    """Tiles made of whole block rows of chunks spanning the other axes decode in place
    (also specials, from files and in memory, in pieces on workers); others -- cut
    block rows, a padded last block row, cut trailing axes -- go through read_into."""
    x = np.arange(23 * 6 * 4, dtype="f8").reshape(23, 6, 4)
    x[10:15] = 0
    for path in (None, tmp_path / "x.b2nd"):
        a = ndpack.asarray(x, chunks=(5, 6, 4), blocks=(1, 3, 4), urlpath=path, mode="w")
        a[5:10] = 0                                    # chunk 1: a special (zeros) chunk
        assert a.decode_stored(a.get_chunk(1)).ndim == 0
        want = x.copy()
        want[5:10] = 0
        op = contract.Operand(a, a.shape, a.dtype)
        rest = (slice(0, 6), slice(0, 4))
        assert op.runs((slice(3, 12),) + rest) == [(0, range(6, 10), 0, 2),
                                                   (1, range(0, 10), 2, 7),
                                                   (2, range(0, 4), 7, 9)]
        assert op.runs((slice(20, 23),) + rest) == [(4, range(0, 6), 0, 3)]
        assert op.runs((slice(0, 5), slice(0, 3), slice(0, 4))) is None     # cut axis 1
        for key in [(slice(3, 12),) + rest, (slice(0, 23),) + rest,
                    (slice(4, 9), slice(3, 6), slice(1, 3))]:
            tile, buf = op.read(key)
            np.testing.assert_array_equal(tile, want[key])
            workers.buffers.give(buf)
            pending = op.start(key, workers.workers(2), 2)
            tile, buf = pending.result()
            np.testing.assert_array_equal(tile, want[key])
            workers.buffers.give(buf)
    b = ndpack.asarray(x, chunks=(5, 6, 4), blocks=(2, 3, 4))          # 5 % 2: padded
    assert contract.Operand(b, b.shape, b.dtype).runs((slice(0, 5),) + rest) is None
    c = ndpack.asarray(x, chunks=(5, 6, 4), blocks=(1, 4, 4))          # 6 % 4: padded
    assert contract.Operand(c, c.shape, c.dtype).flat is None


def test_a_failing_read_is_reported(monkeypatch):
    """An error decoding a piece of a tile reaches the caller (no hang, no product
    from a half-read tile), on the paths reading in pieces and in lanes."""
    rng = np.random.default_rng(22)
    x = rng.normal(size=(40, 30))
    a = ndpack.asarray(x, chunks=(10, 30), blocks=(2, 30))
    real = type(a).decode_stored
    calls = []

    def decode(self, chunk, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk on fire")
        return real(self, chunk, *args, **kwargs)
    monkeypatch.setattr(type(a), "decode_stored", decode)
    for axes in ([1], [1]), ([0], [0]):
        calls.clear()
        with pytest.raises(OSError, match="disk on fire"):
            ndpack.tensordot(a, a, axes=axes)


def test_a_child_forked_during_a_hold_gets_blas_threads_back():
    """A process forked while a product holds BLAS at one thread does not inherit the
    hold (the parent's threads that held it do not exist there)."""
    import os
    lib = blas.library()
    if lib is None or not hasattr(os, "fork"):
        pytest.skip("NumPy's OpenBLAS not found, or no fork")
    before = lib.get_threads()
    with blas.one_thread():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                                 # the child
            os.write(w, bytes([lib.get_threads(), blas._HOLD["users"]]))
            os._exit(0)
        os.waitpid(pid, 0)
        got = os.read(r, 2)
        os.close(r)
        os.close(w)
        assert lib.get_threads() == 1
    assert tuple(got) == (before, 0) and lib.get_threads() == before


def test_a_failed_step_gives_each_buffer_back_once(monkeypatch):
    """When the second operand's read of a step fails, the first one's buffer goes back
    to the pool once (twice would hand one buffer to two later reads)."""
    rng = np.random.default_rng(23)
    x = rng.normal(size=(30, 40))
    a = ndpack.asarray(x, chunks=(10, 40))
    given = []
    real_give = workers.buffers.give
    monkeypatch.setattr(workers.buffers, "give", lambda buf: given.append(id(buf)) or
                        real_give(buf))

    class Failing:
        shape, dtype, chunks = (40, 30), np.dtype("f8"), (40, 30)

        def __getitem__(self, key):
            raise OSError("unreadable")
    with pytest.raises(OSError, match="unreadable"):
        ndpack.matmul(a, Failing())
    assert given and len(given) == len(set(given))
