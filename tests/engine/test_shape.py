"""Shape operations against NumPy: concat, stack, permute_dims, reshape and friends."""

import ast
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.ops import shape as shp
from ndpack.storage.ndarray import NDArray

from tests.helpers import assert_eq, random_data

DTYPES = ["f4", "f8", "c8", "i2", "u8", "?"]


_data = random_data


@st.composite
def arrays(draw, min_nd=1, max_nd=3, max_size=8):
    nd = draw(st.integers(min_nd, max_nd))
    shape = tuple(draw(st.integers(1, max_size)) for _ in range(nd))
    chunks = tuple(draw(st.integers(1, s + 1)) for s in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    dtype = draw(st.sampled_from(DTYPES))
    x = _data(shape, dtype, draw(st.integers(0, 99)))
    return x, ndpack.asarray(x, chunks=chunks, blocks=blocks)


def _check(res, expected):
    """An NDArray, then metadata and exact values."""
    assert isinstance(res, ndpack.NDArray), type(res)
    assert_eq(res, expected, rtol=0)


@settings(max_examples=50)
@given(data=st.data(), xa=arrays())
def test_permute_dims_permutes_layout(data, xa):
    x, a = xa
    axes = tuple(data.draw(st.permutations(range(x.ndim))))
    res = ndpack.permute_dims(a, axes)
    _check(res, np.transpose(x, axes))
    assert res.chunks == tuple(a.chunks[i] for i in axes)
    # python-blosc2's layout: the default blocks of the permuted chunks
    assert res.blocks == ndpack.compute_chunks_blocks(res.shape, res.chunks,
                                                      dtype=x.dtype)[1]
    blocks = tuple(a.blocks[i] for i in axes)         # the source's blocks, on request
    own = ndpack.permute_dims(a, axes, blocks=blocks)
    assert own.blocks == blocks
    _check(own, np.transpose(x, axes))
    _check(ndpack.permute_dims(a), x.T)
    _check(ndpack.permute_dims(x, axes, chunks=res.chunks), np.transpose(x, axes))
    src, dst = data.draw(st.integers(0, x.ndim - 1)), data.draw(st.integers(-x.ndim, x.ndim - 1))
    _check(ndpack.moveaxis(a, src, dst), np.moveaxis(x, src, dst))
    if x.ndim >= 2:
        _check(ndpack.matrix_transpose(a), np.swapaxes(x, -1, -2))
        mt = a.mT
        _check(mt, np.swapaxes(x, -1, -2))
        assert mt.chunks == a.chunks[:-2] + a.chunks[:-3:-1]


@settings(max_examples=50)
@given(data=st.data(), xa=arrays(max_nd=4, max_size=6))
def test_reshape_any_ndim(data, xa):
    x, a = xa
    n = x.size
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    d1 = data.draw(st.sampled_from(divisors))
    d2 = data.draw(st.sampled_from([d for d in divisors if (n // d1) % d == 0]))
    shape = data.draw(st.permutations([d1, d2, n // d1 // d2]))
    shape = tuple(shape)[:data.draw(st.integers(1, 3))]
    shape = shape[:-1] + (n // int(np.prod(shape[:-1])),)
    chunks = tuple(data.draw(st.integers(1, s + 1)) for s in shape)
    saved = shp._SLAB_BYTES
    shp._SLAB_BYTES = data.draw(st.sampled_from([1, 64, saved]))   # slabs, single rows
    try:
        _check(ndpack.reshape(a, shape, chunks=chunks), x.reshape(shape))
        _check(ndpack.reshape(x, (-1,)), x.reshape(-1))
    finally:
        shp._SLAB_BYTES = saved


@settings(max_examples=50)
@given(data=st.data(), xa=arrays())
def test_flip_roll_expand_squeeze_broadcast(data, xa):
    x, a = xa
    nd = x.ndim
    axis = data.draw(st.none() | st.integers(-nd, nd - 1))
    _check(ndpack.flip(a, axis), np.flip(x, axis))
    shift = data.draw(st.integers(-20, 20))
    _check(ndpack.roll(a, shift, axis), np.roll(x, shift, axis))
    if nd >= 2:
        _check(ndpack.roll(a, (shift, 1), (0, -1)), np.roll(x, (shift, 1), (0, -1)))
    ax = data.draw(st.integers(-nd - 1, nd))
    e = ndpack.expand_dims(a, ax)
    _check(e, np.expand_dims(x, ax))
    _check(ndpack.squeeze(e, ax), x)
    _check(ndpack.squeeze(e), np.squeeze(np.expand_dims(x, ax)))
    target = tuple(data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2))))
    target += tuple(s if data.draw(st.booleans()) else 1 for s in x.shape)
    one = x[tuple(slice(0, 1) if s == 1 else slice(None) for s in target[len(target) - nd:])]
    _check(ndpack.broadcast_to(ndpack.asarray(one), target), np.broadcast_to(one, target))


@settings(max_examples=50)
@given(data=st.data(), xa=arrays(max_size=10))
def test_concat_and_stack(data, xa):
    x, a = xa
    nd = x.ndim
    axis = data.draw(st.integers(-nd, nd - 1))
    parts, arrs = [], []
    for i in range(data.draw(st.integers(1, 3))):
        shape = list(x.shape)
        shape[axis] = data.draw(st.integers(0, 7))
        y = _data(tuple(shape), x.dtype, seed=i + 10)
        parts.append(y)
        chunks = a.chunks if data.draw(st.booleans()) else None
        arrs.append(ndpack.asarray(y, chunks=chunks, blocks=a.blocks if chunks else None)
                    if data.draw(st.integers(0, 3)) else y)
    _check(ndpack.concat([a] + arrs, axis=axis), np.concatenate([x] + parts, axis=axis))
    k = data.draw(st.integers(1, 3))
    same = [a] + [ndpack.asarray(_data(x.shape, x.dtype, i), chunks=a.chunks, blocks=a.blocks)
                  for i in range(k)]
    sx = [x] + [_data(x.shape, x.dtype, i) for i in range(k)]
    sax = data.draw(st.integers(-nd - 1, nd))
    _check(ndpack.stack(same, axis=sax), np.stack(sx, axis=sax))
    _check(ndpack.stack(sx, axis=sax), np.stack(sx, axis=sax))


def _spy(monkeypatch, name):
    calls = []
    orig = getattr(shp, name)

    def spy(*args):
        calls.append(name)
        return orig(*args)

    monkeypatch.setattr(shp, name, spy)
    return calls


def test_concat_aligned_copies_compressed_chunks(monkeypatch):
    xs = [np.arange(k * 40 * 30, dtype="f4").reshape(k * 40, 30) * (k + 1) for k in (1, 2, 1)]
    xs[-1] = xs[-1][:35]                                      # the last may be ragged
    cp = ndpack.CParams(codec=ndpack.Codec.LZ4, clevel=1)
    arrs = [ndpack.asarray(x, chunks=(20, 16), blocks=(10, 8), cparams=cp) for x in xs]
    fast = _spy(monkeypatch, "_copy_concat")
    monkeypatch.setattr(shp, "_fill_concat", None)            # the slow path must not run
    out = ndpack.concat(arrs, axis=0)
    assert fast == ["_copy_concat"]
    _check(out, np.concatenate(xs))
    assert out.chunks == (20, 16) and out.cparams.codec == ndpack.Codec.LZ4
    chunks_in = [c for a in arrs for c in (a.get_chunk(i) for i in range(a.schunk.nchunks))]
    assert [out.get_chunk(i) for i in range(out.schunk.nchunks)] == chunks_in
    # along axis 1 too (chunks interleave)
    ys = [x[:40] for x in xs[:2]]
    b = [ndpack.asarray(y, chunks=(20, 15), blocks=(10, 5)) for y in ys]
    _check(ndpack.concat(b, axis=1), np.concatenate(ys, axis=1))
    assert fast == ["_copy_concat"] * 2


def test_chunk_copies_keep_the_sources_checksums(tmp_path):
    """Copied compressed chunks carry the crc32c their source recorded (nothing hashed
    again): a chunk damaged in the source is still caught where it was copied to."""
    x = np.arange(80 * 30, dtype="f8").reshape(80, 30)
    src = ndpack.asarray(x, chunks=(20, 30), blocks=(10, 30), urlpath=str(tmp_path / "a.b2nd"))
    crcs = list(src.schunk.frame.crcs)
    out = ndpack.concat([src, src], axis=0)
    assert list(out.schunk.frame.crcs) == crcs + crcs
    assert list(ndpack.stack([src, src], axis=0).schunk.frame.crcs) == crcs + crcs
    chunk, crc = src.stored_chunk(1)
    del src
    raw = bytearray((tmp_path / "a.b2nd").read_bytes())
    at = raw.find(chunk) + len(chunk) - 40                     # inside chunk 1's streams
    raw[at] ^= 0x10
    (tmp_path / "a.b2nd").write_bytes(bytes(raw))
    src = ndpack.open(str(tmp_path / "a.b2nd"))
    ndpack.concat([src, src], axis=0, urlpath=str(tmp_path / "c.b2nd"))
    copy = ndpack.open(str(tmp_path / "c.b2nd"))
    np.testing.assert_array_equal(copy[:20], x[:20])          # undamaged chunks read right
    with pytest.raises(ndpack.FormatError):
        copy[20:40]


def test_concat_unaligned_or_recompressed_goes_chunk_by_chunk(monkeypatch):
    x = np.arange(50 * 30, dtype="i8").reshape(50, 30)
    a = ndpack.asarray(x, chunks=(20, 16), blocks=(10, 8))
    slow = _spy(monkeypatch, "_fill_concat")
    monkeypatch.setattr(shp, "_copy_concat", None)            # the fast path must not run
    _check(ndpack.concat([a, a], axis=0), np.concatenate([x, x]))      # 50 % 20 != 0
    b = ndpack.asarray(x[:40], chunks=(20, 16), blocks=(10, 8))
    out = ndpack.concat([b, b], axis=0, cparams=ndpack.CParams(clevel=9))
    _check(out, np.concatenate([x[:40]] * 2))                 # other cparams: recompress
    c = ndpack.asarray(x[:40], chunks=(20, 10))
    _check(ndpack.concat([b, c]), np.concatenate([x[:40]] * 2))   # other chunks
    _check(ndpack.concat([b, x[:40].astype("f4")]), np.concatenate([x[:40], x[:40]
                                                                     .astype("f4")]))
    assert slow == ["_fill_concat"] * 4


@settings(deadline=None, max_examples=25)
@given(data=st.data())
def test_concat_unaligned_copies_the_chunks_that_line_up(data):
    """Unaligned inputs: output chunks that are an input's chunk (the input starting
    on an output chunk boundary, same layout and cparams, the same items) are stored
    compressed as they are; the others assembled.  NumPy's values, along any axis."""
    ndim = data.draw(st.integers(1, 3))
    axis = data.draw(st.integers(0, ndim - 1))
    base = [data.draw(st.integers(1, 12)) for _ in range(ndim)]
    chunks = tuple(data.draw(st.integers(1, b)) for b in base)
    blocks = tuple(data.draw(st.integers(1, c)) for c in chunks)
    sizes = data.draw(st.lists(st.integers(1, 25), min_size=2, max_size=4))
    xs = []
    for k, n in enumerate(sizes):
        shape = list(base)
        shape[axis] = n
        xs.append(np.arange(np.prod(shape), dtype="f8").reshape(shape) + 1e6 * (k + 1))
    other = data.draw(st.booleans())                 # one input with other cparams
    cps = [ndpack.CParams(codec=ndpack.Codec.LZ4, clevel=1) for _ in xs]
    if other:
        cps[-1] = ndpack.CParams(codec=ndpack.Codec.ZSTD, clevel=3)
    arrs = [ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cp)
            for x, cp in zip(xs, cps)]
    kw = {"cparams": cps[0]} if other else {}
    encoded = []
    real = NDArray.encode_chunk

    def spy(self, *args, **kwargs):
        encoded.append(1)
        return real(self, *args, **kwargs)
    NDArray.encode_chunk = spy
    try:
        out = ndpack.concat(arrs, axis=axis, **kw)
    finally:
        NDArray.encode_chunk = real
    _check(out, np.concatenate(xs, axis=axis))
    # which output chunks are an input's chunk, stored as they are
    c = out.chunks[axis]
    starts = np.cumsum([0] + sizes)
    src = {}
    for k, a in enumerate(arrs):
        for n in range(a.schunk.nchunks):
            src[bytes(a.get_chunk(n))] = k
    lay = out.layout
    nlined = 0
    for n, coords in enumerate(lay.all_coords()):
        lo, hi = coords[axis] * c, min(coords[axis] * c + c, out.shape[axis])
        k = int(np.searchsorted(starts, lo, side="right")) - 1
        lines_up = (hi <= starts[k + 1] and (lo - starts[k]) % c == 0
                    and hi - lo == min(c, starts[k + 1] - lo)
                    and not (other and k == len(arrs) - 1))
        if lines_up:
            nlined += 1
            assert src.get(bytes(out.get_chunk(n))) == k, (n, coords)
    if lay.nchunks > 1 or not nlined:         # (a single chunk may go through fill_from)
        assert len(encoded) == lay.nchunks - nlined


def _no_fill(monkeypatch):
    """Make the chunk-by-chunk path fail: what runs copies compressed chunks."""
    def fail(*args):
        raise AssertionError("chunk-by-chunk path ran")
    monkeypatch.setattr(shp, "fill_from", fail)
    monkeypatch.setattr(shp, "fill_chunks", fail)


def test_stack_copies_chunks(monkeypatch):
    x = np.arange(60.0).reshape(6, 10)
    arrs = [ndpack.asarray(x + i, chunks=(4, 5), blocks=(2, 5)) for i in range(3)]
    _no_fill(monkeypatch)
    s = ndpack.stack(arrs, axis=1)
    assert s.chunks == (4, 1, 5) and s.blocks == (2, 1, 5)
    s0 = ndpack.stack(arrs[:2], axis=0)
    monkeypatch.undo()
    _check(s, np.stack([x, x + 1, x + 2], axis=1))
    _check(s0, np.stack([x, x + 1]))
    with pytest.raises(AssertionError, match="chunk-by-chunk"):   # the spy works
        _no_fill(monkeypatch)
        ndpack.stack([arrs[0], x])


def test_expand_squeeze_copy_chunks(monkeypatch):
    a = ndpack.asarray(np.arange(30.0).reshape(5, 6), chunks=(2, 4), blocks=(1, 2))
    _no_fill(monkeypatch)
    e = ndpack.expand_dims(a, (0, 2))
    s = ndpack.squeeze(e)
    monkeypatch.undo()
    assert e.chunks == (1, 2, 1, 4) and e.blocks == (1, 1, 1, 2)
    assert [e.get_chunk(i) for i in range(6)] == [a.get_chunk(i) for i in range(6)]
    _check(e, np.arange(30.0).reshape(1, 5, 1, 6))
    assert s.chunks == (2, 4) and s.get_chunk(5) == a.get_chunk(5)
    _check(s, np.arange(30.0).reshape(5, 6))


def test_foreign_inputs(tmp_path):
    h5py = pytest.importorskip("h5py")
    zarr = pytest.importorskip("zarr")
    x = np.random.default_rng(0).random((30, 20))
    with h5py.File(tmp_path / "f.h5", "w") as f:
        d = f.create_dataset("x", data=x, chunks=(10, 10))
        z = zarr.create_array(store=str(tmp_path / "z.zarr"), shape=x.shape, dtype=x.dtype,
                              chunks=(7, 20))
        z[:] = x
        a = ndpack.asarray(x, chunks=(10, 10))
        out = ndpack.concat([d, z, a, x], axis=1, urlpath=tmp_path / "c.b2nd", mode="w")
        _check(out, np.concatenate([x] * 4, axis=1))
        _check(ndpack.open(tmp_path / "c.b2nd"), np.concatenate([x] * 4, axis=1))
        _check(ndpack.stack([d, z, x], axis=2), np.stack([x] * 3, axis=2))
        _check(ndpack.permute_dims(d), x.T)
        _check(ndpack.reshape(z, (5, 120)), x.reshape(5, 120))
        _check(ndpack.flip(d, 0), x[::-1])
        _check(ndpack.roll(z, 3, 1), np.roll(x, 3, 1))
        _check(ndpack.take(d, [3, 1], axis=1), x[:, [3, 1]])


def test_storage_keywords(tmp_path):
    x = np.arange(100.0).reshape(10, 10)
    a = ndpack.asarray(x, chunks=(5, 5), blocks=(5, 5))
    p = ndpack.permute_dims(a, urlpath=tmp_path / "p.b2nd", mode="w", chunks=(2, 10),
                            cparams=ndpack.CParams(clevel=1))
    assert p.chunks == (2, 10) and p.urlpath == str(tmp_path / "p.b2nd")
    _check(ndpack.open(tmp_path / "p.b2nd"), x.T)
    for nthreads in (1, 2):                     # chunks written in order, or by workers
        f = ndpack.flip(a, 0, chunks=(3, 4), dparams={"nthreads": nthreads})
        assert f.dparams.nthreads == nthreads
        _check(f, x[::-1])
        _check(ndpack.permute_dims(a, dparams={"nthreads": nthreads}), x.T)
        _check(ndpack.permute_dims(a, blocks=(3, 2), dparams={"nthreads": nthreads}), x.T)
    r = ndpack.reshape(a, (4, 25), chunks=(3, 7), blocks=(1, 7))
    assert r.chunks == (3, 7)
    _check(r, x.reshape(4, 25))


def test_errors():
    a = ndpack.zeros((3, 4))
    with pytest.raises(ValueError, match="must match"):
        ndpack.concat([a, ndpack.zeros((3, 5))], axis=0)
    with pytest.raises(ValueError, match="at least one"):
        ndpack.concat([])
    with pytest.raises(np.exceptions.AxisError):
        ndpack.concat([a, a], axis=2)
    with pytest.raises(ValueError, match="same shape"):
        ndpack.stack([a, ndpack.zeros((4, 3))])
    with pytest.raises(ValueError, match="permutation"):
        ndpack.permute_dims(a, (0, 0))
    with pytest.raises(ValueError, match="cannot reshape"):
        ndpack.reshape(a, (5, 3))
    with pytest.raises(ValueError, match="at most one -1"):
        ndpack.reshape(a, (-1, -1))
    with pytest.raises(ValueError, match="squeeze"):
        ndpack.squeeze(a, 0)
    with pytest.raises(ValueError, match="broadcast"):
        ndpack.broadcast_to(a, (3, 5))
    with pytest.raises(ValueError, match="2 dimensions"):
        ndpack.matrix_transpose(ndpack.zeros(3))
    with pytest.raises(ValueError, match="2 dimensions"):
        _ = ndpack.zeros(3).mT
    with pytest.raises(TypeError, match="integer"):
        ndpack.flip(a, 1.5)
    with pytest.raises(ValueError, match="repeated"):
        ndpack.moveaxis(a, (0, 0), (0, 1))


def test_bounded_memory_on_disk(tmp_path):
    """concat (unaligned), permute_dims, reshape and flip of 400 MB on-disk arrays to
    disk keep the growth of the peak RSS to a few chunks (VmHWM, reset before each)."""
    script = textwrap.dedent(f"""
        import numpy as np, ndpack

        def hwm_mb():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024

        n0, n1 = 5000, 10000                       # 400 MB of float64 per array
        kw = dict(chunks=(1000, 1000), blocks=(100, 1000), mode="w",
                  cparams={{"codec": ndpack.Codec.LZ4, "clevel": 1}})
        for name, lo in (("a", 0), ("b", 1)):
            flat = ndpack.linspace(lo, lo + 1, n0 * n1, chunks=(10**6,), blocks=(10**5,))
            ndpack.reshape(flat, (n0, n1), urlpath=r"{tmp_path}/" + name + ".b2nd", **kw)
        a = ndpack.open(r"{tmp_path}/a.b2nd")
        b = ndpack.open(r"{tmp_path}/b.b2nd")
        ops = {{
            "concat": lambda: ndpack.concat([a, b], chunks=(700, 1000),
                                            urlpath=r"{tmp_path}/c.b2nd", mode="w"),
            "permute_dims": lambda: ndpack.permute_dims(a, urlpath=r"{tmp_path}/p.b2nd",
                                                        mode="w"),
            "reshape": lambda: ndpack.reshape(b, (2500, 20000), chunks=(200, 2000),
                                              urlpath=r"{tmp_path}/r.b2nd", mode="w"),
            "flip": lambda: ndpack.flip(a, 0, urlpath=r"{tmp_path}/f.b2nd", mode="w"),
        }}
        growth = {{}}
        for name, op in ops.items():
            open("/proc/self/clear_refs", "w").write("5")        # resets VmHWM
            before = hwm_mb()
            r = op()
            growth[name] = hwm_mb() - before
            del r
        c = ndpack.open(r"{tmp_path}/c.b2nd")
        assert c.shape == (2 * n0, n1) and c[n0, 0] == 1.0 and c[n0 - 1, -1] == 1.0
        r = ndpack.open(r"{tmp_path}/r.b2nd")
        assert np.array_equal(r[1234, 5:9], b[2468, 5:9])
        p = ndpack.open(r"{tmp_path}/p.b2nd")
        assert np.array_equal(p[17, 4000:4003], a[4000:4003, 17])
        print(growth)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    growth = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert max(growth.values()) < 200, growth       # the arrays hold 400-800 MB
    assert growth["concat"] < 120 and growth["permute_dims"] < 120, growth
