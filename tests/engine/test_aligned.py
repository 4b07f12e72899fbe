"""The aligned-chunks path of the engine against NumPy and against the general path.

Operands that share the output's shape, chunks and blocks are evaluated chunk by chunk
in stored order (ndpack.engine.run.aligned); everything else goes region by region
(ndpack.engine.run.kernel).  Both must give NumPy's values; these tests drive each path
on purpose and check which one ran.
"""

import numexpr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.run import aligned
from ndpack.engine.run.aligned import aligned_operands
from ndpack.engine.compute import prepare as _prepare


@pytest.fixture
def count_aligned(monkeypatch):
    """Counts the chunks the aligned path evaluates."""
    calls = []
    real = aligned._chunk_results

    def spy(*args, **kwargs):
        for item in real(*args, **kwargs):
            calls.append(item[0])
            yield item
    monkeypatch.setattr(aligned, "_chunk_results", spy)
    return calls


def _arrays(shape, chunks, blocks, dtypes=("f8", "f8", "f8"), seed=0):
    rng = np.random.default_rng(seed)
    raw = [(rng.normal(size=shape) * 10).astype(dt) for dt in dtypes]
    nd = [ndpack.asarray(r, chunks=chunks, blocks=blocks) for r in raw]
    return raw, nd


EXPRS = ["a + b + c", "sqrt(abs(a) + 2*b**2) ** 1.2", "sin(a)**2 + cos(b)*exp(-abs(c)) + arctan2(a, b)",
         "where(a > b, a, c)", "a > b", "a * 2 - 1"]


@pytest.mark.parametrize("text", EXPRS)
@pytest.mark.parametrize("layout", [
    ((40, 30), (16, 30), (4, 30)),          # blocks in C order, padded edge chunk
    ((40, 30), (16, 12), (8, 5)),           # blocks not in C order, padding everywhere
    ((7, 9, 11), (3, 9, 11), (1, 9, 11)),   # 3-d, C-order blocks
    ((1000,), (300,), (64,)),               # 1-d
])
def test_aligned_matches_numpy(text, layout, count_aligned):
    shape, chunks, blocks = layout
    raw, nd = _arrays(shape, chunks, blocks)
    ops = dict(zip("abc", nd))
    with np.errstate(all="ignore"):
        expected = numexpr.evaluate(text, local_dict=dict(zip("abc", raw)))
    e = ndpack.lazyexpr(text, operands=ops)
    np.testing.assert_allclose(e[()], expected, rtol=1e-13)
    r = e.compute()
    assert (r.chunks, r.blocks) == (chunks, blocks)
    np.testing.assert_allclose(r[()], expected, rtol=1e-13)
    out = np.empty(shape, expected.dtype)
    np.testing.assert_allclose(ndpack.evaluate(text, local_dict=ops, out=out), expected,
                               rtol=1e-13)
    target = ndpack.zeros(shape, dtype=expected.dtype, chunks=chunks, blocks=blocks)
    ndpack.evaluate(text, local_dict=ops, out=target)
    np.testing.assert_allclose(target[()], expected, rtol=1e-13)
    nchunks = nd[0].schunk.nchunks
    assert len(count_aligned) == 4 * nchunks         # [()], compute, two evaluate()


def test_general_path_gives_the_same_values(count_aligned):
    raw, nd = _arrays((50, 20), (16, 20), (4, 20))
    e = ndpack.lazyexpr("a * b + sin(c)", operands=dict(zip("abc", nd)))
    fast = e.compute()
    count_fast = len(count_aligned)
    other = e.compute(chunks=(10, 10), blocks=(5, 5))     # another layout: general path
    assert len(count_aligned) == count_fast > 0
    np.testing.assert_array_equal(fast[()], other[()])
    # float64 sin comes from the C core: within 1 ulp of NumPy's (tests/core/test_vmath.py)
    np.testing.assert_allclose(e[3:40, 1:], (raw[0] * raw[1] + np.sin(raw[2]))[3:40, 1:],
                               rtol=1e-15, atol=1e-13)


def test_mixed_layouts_are_not_aligned():
    raw, nd = _arrays((50, 20), (16, 20), (4, 20))
    other = ndpack.asarray(raw[2], chunks=(10, 20), blocks=(5, 20))
    e = ndpack.lazyexpr("a + c", operands={"a": nd[0], "c": other})
    node = _prepare(e.node)
    assert aligned_operands(node, e.shape, nd[0].chunks, nd[0].blocks) is None
    np.testing.assert_array_equal(e[()], raw[0] + raw[2])
    # NumPy operands broadcast into the aligned path only when stored order is C order
    blocked = ndpack.asarray(raw[0], chunks=(16, 20), blocks=(4, 5))
    e2 = ndpack.lazyexpr("a + c", operands={"a": blocked, "c": raw[2]})
    assert aligned_operands(_prepare(e2.node), e2.shape, (16, 20), (4, 5)) is None
    np.testing.assert_array_equal(e2.compute()[()], raw[0] + raw[2])
    e3 = ndpack.lazyexpr("a + h", operands={"a": nd[0], "h": _Opaque(raw[2])})
    assert aligned_operands(_prepare(e3.node), e3.shape, (16, 20), (4, 20)) is None
    np.testing.assert_array_equal(e3[()], raw[0] + raw[2])


class _Opaque:
    """A foreign array-like (not NumPy): read by regions, never aligned."""

    def __init__(self, data):
        self.data, self.shape, self.dtype = data, data.shape, data.dtype

    def __getitem__(self, key):
        return self.data[key]


@pytest.mark.parametrize("text,other", [
    ("a * row + col", None),
    ("sum(a, axis=0) + b * sin(c)", None),
    ("a - mean(a, axis=1, keepdims=True) + full", None),
    ("where(a > row, a, 0) * 2", None),
])
def test_broadcast_numpy_operands_on_the_aligned_path(text, other, count_aligned):
    shape, chunks, blocks = (45, 30), (10, 30), (3, 30)
    raw, nd = _arrays(shape, chunks, blocks)
    row, col = np.linspace(0, 1, 30), np.linspace(-1, 1, 45)[:, None]
    names = {"a": nd[0], "b": nd[1], "c": nd[2], "row": row, "col": col, "full": raw[2]}
    np_names = {"a": raw[0], "b": raw[1], "c": raw[2], "row": row, "col": col, "full": raw[2]}
    e = ndpack.lazyexpr(text, operands=names)
    with np.errstate(all="ignore"):
        want = eval(text.replace("sin", "np.sin").replace("where", "np.where")   # oracle
                    .replace("sum(a, axis=0)", "np.sum(a, axis=0)")
                    .replace("mean(a, axis=1, keepdims=True)", "np.mean(a, axis=1, keepdims=True)"),
                    {"np": np}, np_names)
    np.testing.assert_allclose(e[()], want, rtol=1e-12)
    np.testing.assert_allclose(e.compute()[()], want, rtol=1e-12)
    assert len(count_aligned) == 2 * 5


def test_special_chunks_are_scalars_and_stay_special(count_aligned):
    shape, chunks, blocks = (60, 10), (20, 10), (5, 10)
    z = ndpack.zeros(shape, chunks=chunks, blocks=blocks)
    f = ndpack.full(shape, 2.5, chunks=chunks, blocks=blocks)
    data = np.arange(600.0).reshape(shape)
    a = ndpack.asarray(data, chunks=chunks, blocks=blocks)
    a[20:40] = 0                                   # a zero chunk in the middle
    r = ndpack.lazyexpr("z * 3 + f", operands={"z": z, "f": f}).compute()
    assert r.cbytes < 200 * r.schunk.nchunks            # special chunks: no data stored
    np.testing.assert_array_equal(r[()], np.full(shape, 2.5))
    zero = ndpack.lazyexpr("z * f", operands={"z": z, "f": f}).compute()
    assert [i.special for i in zero.iterchunks_info()] == [ndpack.SpecialValue.ZERO] * 3
    expected = np.where(np.arange(60)[:, None] // 20 == 1, 0.0, data) * 2.5
    e = ndpack.lazyexpr("a * f + z", operands={"a": a, "z": z, "f": f})
    np.testing.assert_array_equal(e[()], expected)
    np.testing.assert_array_equal(e.compute()[()], expected)
    assert count_aligned


@pytest.mark.parametrize("dtypes,text", [
    (("i4", "i4", "i4"), "a + b * c"),          # numexpr, int32
    (("i8", "i8", "i8"), "a // (abs(b) + 1)"),  # NumPy (floor_divide)
    (("f4", "f4", "f4"), "a * b + c"),          # NumPy (numexpr upcasts float32 constants)
    (("i4", "f8", "i2"), "a + b + c"),          # mixed dtypes: NumPy
    (("c16", "c16", "f8"), "a * b + c"),        # complex
    (("?", "?", "?"), "a & ~b | c"),            # bool
])
def test_dtypes(dtypes, text, count_aligned):
    raw, nd = _arrays((33, 17), (10, 17), (5, 17), dtypes, seed=3)
    e = ndpack.lazyexpr(text, operands=dict(zip("abc", nd)))
    names = dict(zip("abc", raw))
    with np.errstate(all="ignore"):
        np_text = text.replace("abs", "np.abs")
        expected = eval(np_text, {"np": np}, names)        # test oracle, our own text
    assert e.dtype == expected.dtype
    np.testing.assert_array_equal(e[()], expected)
    np.testing.assert_array_equal(e.compute()[()], expected)
    assert count_aligned


def test_astype_on_the_aligned_path(count_aligned):
    raw, nd = _arrays((40, 12), (16, 12), (4, 12))
    e = ndpack.lazyexpr("a * 100", operands={"a": nd[0]}).astype(np.int16)
    expected = (raw[0] * 100).astype(np.int16)
    np.testing.assert_array_equal(e[()], expected)
    r = e.compute()
    assert r.dtype == np.int16
    np.testing.assert_array_equal(r[()], expected)
    assert count_aligned


def test_out_of_another_dtype_is_cast(count_aligned):
    raw, nd = _arrays((40, 12), (16, 12), (4, 12))
    out = np.zeros((40, 12), np.float32)
    ndpack.evaluate("a + b", local_dict={"a": nd[0], "b": nd[1]}, out=out)
    np.testing.assert_array_equal(out, (raw[0] + raw[1]).astype(np.float32))


def test_in_place_update_of_an_operand():
    raw, nd = _arrays((64, 8), (16, 8), (4, 8))
    a = nd[0]
    ndpack.evaluate("a * 2 + 1", local_dict={"a": a}, out=a)
    np.testing.assert_array_equal(a[()], raw[0] * 2 + 1)


def test_numexpr_threads_restored():
    before = numexpr.get_num_threads()
    raw, nd = _arrays((64, 8), (16, 8), (4, 8))
    ndpack.lazyexpr("a + b", operands={"a": nd[0], "b": nd[1]}).compute()
    assert numexpr.get_num_threads() == before


def test_an_error_in_a_worker_reaches_the_caller():
    a = ndpack.asarray(np.arange(512.0).reshape(64, 8), chunks=(16, 8), blocks=(4, 8))
    chunk = bytearray(a.get_chunk(1))
    assert chunk[2] & 0x2 == 0                            # not a memcpyed chunk
    chunk[32 + 4:32 + 8] = (10**6).to_bytes(4, "little")  # block 1 starts past the end
    a.schunk.update_chunk(1, bytes(chunk))
    e = ndpack.lazyexpr("a + 1", operands={"a": a})
    with pytest.raises(ndpack.NdpackError):
        e[()]
    assert numexpr.get_num_threads() >= 1


@given(
    shape=st.lists(st.integers(1, 30), min_size=1, max_size=3),
    data=st.data(),
    text=st.sampled_from(EXPRS),
)
@settings(deadline=None, max_examples=40)
def test_hypothesis_aligned_layouts(shape, data, text):
    shape = tuple(shape)
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    blocks = tuple(data.draw(st.integers(1, c)) for c in chunks)
    raw, nd = _arrays(shape, chunks, blocks, seed=len(shape))
    ops = dict(zip("abc", nd))
    with np.errstate(all="ignore"):
        expected = numexpr.evaluate(text, local_dict=dict(zip("abc", raw)))
    e = ndpack.lazyexpr(text, operands=ops)
    # atol: sin/cos within 1 ulp of numexpr's libm, where the sum cancels
    np.testing.assert_allclose(e[()], expected, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(e.compute()[()], expected, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("storage", ["contiguous", "sparse", "mmap"])
def test_on_disk_operands(tmp_path, storage, count_aligned):
    """Compressed chunks read ahead into reused buffers (contiguous files), the
    frames' own bytes (sparse, mmap); results identical to NumPy."""
    raw, _ = _arrays((90, 40), (20, 40), (5, 40))
    ops = {}
    for name, r in zip("abc", raw):
        path = tmp_path / f"{name}.b2nd"
        ndpack.asarray(r, chunks=(20, 40), blocks=(5, 40), urlpath=path, mode="w",
                       contiguous=storage != "sparse")
        ops[name] = ndpack.open(path, mmap_mode="r" if storage == "mmap" else None)
    e = ndpack.lazyexpr("a * b + sin(c)", operands=ops)
    expected = raw[0] * raw[1] + np.sin(raw[2])
    for _ in range(2):                    # buffers reused across calls and chunk sizes
        np.testing.assert_allclose(e[()], expected, rtol=1e-14)
    r = e.compute(urlpath=tmp_path / "out.b2nd")
    np.testing.assert_allclose(r[()], expected, rtol=1e-14)
    assert len(count_aligned) == 3 * 5


def test_read_chunk_buffers(tmp_path):
    a = ndpack.asarray(np.arange(10_000.0), chunks=(3000,), urlpath=tmp_path / "r.b2nd",
                       mode="w")
    big, small = bytearray(1 << 20), bytearray(10)
    for n in range(a.schunk.nchunks):
        ref = a.get_chunk(n)
        view = a.read_chunk(n, big)
        assert isinstance(view, memoryview) and view.obj is big and bytes(view) == ref
        assert bytes(a.read_chunk(n, small)) == ref and small == bytearray(10)
        assert bytes(a.read_chunk(n)) == ref


def test_aligned_into_h5py_and_zarr(tmp_path, count_aligned):
    """Outputs with no chunks of their own (a contiguous HDF5 dataset) take the aligned
    path; chunked HDF5 and zarr outputs get whole chunks from their chunk writers."""
    import h5py
    import zarr

    from ndpack.engine.run import chunkout
    raw, nd = _arrays((70, 25), (16, 25), (4, 25))
    writes = dict(chunkout.WRITES)
    ops = dict(zip("abc", nd))
    want = raw[0] * raw[1] - np.cos(raw[2])
    with h5py.File(tmp_path / "o.h5", "w") as f:
        ds = f.create_dataset("o", shape=(70, 25), dtype="f8", chunks=(10, 25))
        ndpack.evaluate("a * b - cos(c)", local_dict=ops, out=ds)
        np.testing.assert_allclose(ds[()], want, rtol=1e-14)
        ds32 = f.create_dataset("o32", shape=(70, 25), dtype="f4")
        ndpack.evaluate("a * b - cos(c)", local_dict=ops, out=ds32)    # cast on write
        np.testing.assert_allclose(ds32[()], want.astype("f4"), rtol=1e-6)
    z = zarr.create_array(tmp_path / "o.zarr", shape=(70, 25), dtype="f8", chunks=(33, 7))
    ndpack.evaluate("a * b - cos(c)", local_dict=ops, out=z)
    np.testing.assert_allclose(z[()], want, rtol=1e-14)
    assert len(count_aligned) == 5                       # the contiguous dataset only
    assert chunkout.WRITES["h5py"] - writes.get("h5py", 0) == 7
    assert chunkout.WRITES["zarr"] - writes.get("zarr", 0) == 3 * 4


# ---- compute() with the result blocks encoded on the workers (aligned._compute_encoding)

@pytest.fixture
def count_encoded(monkeypatch):
    """Counts the chunks whose blocks the workers encoded (fused compression)."""
    calls = []
    real = aligned._compute_encoding

    def spy(node, ops, out, tick=None):
        calls.append(out.schunk.cparams)
        return real(node, ops, out, tick)
    monkeypatch.setattr(aligned, "_compute_encoding", spy)
    return calls


def _chunks_of(arr):
    return [bytes(arr.get_chunk(n)) for n in range(arr.schunk.nchunks)]


@pytest.mark.parametrize("cparams", [
    {"codec": ndpack.Codec.LZ4, "clevel": 5},
    {"codec": ndpack.Codec.ZSTD, "clevel": 1},
    {"codec": ndpack.Codec.BLOSCLZ, "clevel": 9,
     "filters": [ndpack.Filter.BITSHUFFLE], "filters_meta": [0]},
])
def test_encoded_on_the_workers_is_a_plain_compress(cparams, count_encoded):
    """One worker adds the blocks in order: every chunk is byte for byte the one-thread
    compress of the decoded values (what the writer thread would have stored)."""
    raw, _ = _arrays((70, 30), (16, 30), (4, 30))
    nd = [ndpack.asarray(r, chunks=(16, 30), blocks=(4, 30), dparams={"nthreads": 1})
          for r in raw]
    e = ndpack.lazyexpr("a * b + sin(c)", operands=dict(zip("abc", nd)))
    one = dict(cparams, nthreads=1)
    r = e.compute(cparams=one)
    assert len(count_encoded) == 1
    expected = raw[0] * raw[1] + np.sin(raw[2])
    np.testing.assert_allclose(r[()], expected, rtol=1e-14, atol=1e-14)
    for n, chunk in enumerate(_chunks_of(r)):
        values = r.decode_stored(chunk)
        assert chunk == r.encode_stored(values, nthreads=1), n
    two = e.compute(cparams=dict(cparams, nthreads=2))       # two workers: other order
    np.testing.assert_array_equal(two[()], r[()])


@pytest.mark.parametrize("cparams", [
    {"codec": ndpack.Codec.ZSTD, "clevel": 3, "filters": [ndpack.Filter.DELTA],
     "filters_meta": [0]},
    {"codec": ndpack.Codec.ZSTD, "clevel": 3, "use_dict": True},
    {"codec": ndpack.Codec.LZ4, "clevel": 0},
])
def test_cparams_that_cannot_be_encoded_in_parts(cparams, count_encoded, count_aligned):
    """DELTA (block 0 first), dictionaries (every block first) and clevel 0 keep the
    writer thread's whole-chunk compression: same values, aligned path still."""
    raw, nd = _arrays((70, 30), (16, 30), (4, 30))
    e = ndpack.lazyexpr("a - 2 * b", operands=dict(zip("abc", nd)))
    r = e.compute(cparams=cparams)
    assert count_encoded == [] and len(count_aligned) == 5
    np.testing.assert_array_equal(r[()], raw[0] - 2 * raw[1])


def test_encoded_chunks_noise_zeros_and_specials(count_encoded):
    """Noise is stored uncompressed (decided from the two sample blocks, as a whole
    compress does), computed zeros collapse into a zero chunk, scalar chunks stay
    special, in one result."""
    shape, chunks, blocks = (96, 64), (32, 64), (2, 64)      # 16 blocks per chunk
    rng = np.random.default_rng(5)
    x = rng.integers(-2**62, 2**62, shape)                   # chunk 0: noise
    x[32:64] = 1                                             # chunk 1: zeros computed
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks)
    z = ndpack.zeros(shape, dtype=np.int64, chunks=chunks, blocks=blocks)
    z[64:] = np.arange(32 * 64).reshape(32, 64)
    z[:32] = 0
    e = ndpack.lazyexpr("(a - 1) * (a != 1) + z", operands={"a": a, "z": z})
    cp = {"codec": ndpack.Codec.LZ4, "clevel": 5, "nthreads": 1}
    r = e.compute(cparams=cp)
    assert count_encoded
    expected = (x - 1) * (x != 1) + z[()]
    np.testing.assert_array_equal(r[()], expected)
    infos = list(r.iterchunks_info())
    assert infos[1].special == ndpack.SpecialValue.ZERO
    for n, chunk in enumerate(_chunks_of(r)):     # (a zero chunk decodes to a 0-d)
        values = np.broadcast_to(r.decode_stored(chunk), (r.stored_elements,)).copy()
        assert chunk == r.encode_stored(values, nthreads=1), n
    assert ndpack.get_cbuffer_sizes(_chunks_of(r)[0])[1] == 32 * 64 * 8 + 32   # noise: raw
    s = ndpack.lazyexpr("z * 0 + 3", operands={"z": ndpack.zeros(shape, chunks=chunks,
                                                                  blocks=blocks)}).compute()
    assert all(i.special == ndpack.SpecialValue.VALUE for i in s.iterchunks_info())


def test_encoded_result_read_by_python_blosc2(tmp_path, count_encoded):
    blosc2 = pytest.importorskip("blosc2")
    raw, nd = _arrays((90, 40), (20, 40), (5, 40))
    e = ndpack.lazyexpr("a + b + c", operands=dict(zip("abc", nd)))
    path = tmp_path / "r.b2nd"
    e.compute(urlpath=path, cparams={"codec": ndpack.Codec.LZ4, "clevel": 5})
    assert count_encoded
    np.testing.assert_array_equal(blosc2.open(str(path))[()], raw[0] + raw[1] + raw[2])


def test_an_error_while_encoding_reaches_the_caller(monkeypatch):
    """A worker that fails on a later chunk: the error is raised, nothing hangs, and
    the engine computes again afterwards."""
    raw, nd = _arrays((80, 10), (16, 10), (4, 10))
    e = ndpack.lazyexpr("a + b", operands=dict(zip("abc", nd)))
    real = aligned._encoder
    made = []

    class Failing:
        def __init__(self, enc):
            self.enc = enc

        def add(self, *args):
            raise RuntimeError("encoder failed")

        def finish(self, values):
            return self.enc.finish(values)

    class Proto:                      # chunk 3's encoder fails
        def __init__(self, enc):
            self.enc = enc

        def again(self):
            made.append(1)
            enc = self.enc.again()
            return Failing(enc) if len(made) == 4 else enc

    def encoder(out):
        enc = real(out)
        return None if enc is None else Proto(enc)
    monkeypatch.setattr(aligned, "_encoder", encoder)
    with pytest.raises(RuntimeError, match="encoder failed"):
        e.compute()
    monkeypatch.undo()
    np.testing.assert_array_equal(e.compute()[()], raw[0] + raw[1])


def test_encoded_chunks_carry_their_crc(monkeypatch):
    """The crc32c of each chunk encoded on the workers is joined from its blocks'
    crcs (ChunkParts.sums): the frame records it without hashing the chunk again, and
    it is the chunk's crc32c; chunks not made of those blocks (the memcpy fallback,
    zero collapse, small chunks encoded again whole) are hashed as before."""
    from ndpack.storage import checksums
    hashed = []
    real = checksums.on_write
    def spy(frame, i, chunk, op, value=None):       # which chunks on_write must hash
        if value is None or len(chunk) <= 32:
            hashed.append(i)
        return real(frame, i, chunk, op, value)
    monkeypatch.setattr(checksums, "on_write", spy)
    rng = np.random.default_rng(3)
    shape, chunks, blocks = (400, 300), (64, 300), (4, 300)
    x = [np.linspace(i, i + 1, 400 * 300).reshape(shape) + rng.normal(0, 1e-3, shape)
         for i in range(3)]
    nd = [ndpack.asarray(v, chunks=chunks, blocks=blocks) for v in x]
    for cp in ({"codec": ndpack.Codec.LZ4, "clevel": 5},
               {"codec": ndpack.Codec.ZSTD, "clevel": 1, "nthreads": 1}):
        hashed.clear()
        r = ndpack.lazyexpr("a + b + c", operands=dict(zip("abc", nd))).compute(cparams=cp)
        np.testing.assert_array_equal(r[()], x[0] + x[1] + x[2])
        frame = r.schunk.frame
        assert hashed == [] and len(frame.crcs) == r.schunk.nchunks == 7
        assert [c == checksums.chunk_crc(frame.get(i)) for i, c in enumerate(frame.crcs)] \
            == [True] * 7
        assert [frame.crcs.entry(i) == checksums.chunk_sums(frame.get(i))[1]
                for i in range(7)] == [True] * 7          # the encoders' block sums
    noise = ndpack.asarray(rng.integers(-2**62, 2**62, (96, 64)), chunks=(32, 64),
                           blocks=(2, 64))
    zero = ndpack.zeros((96, 64), dtype=np.int64, chunks=(32, 64), blocks=(2, 64))
    zero[32:64] = 1
    zero[64:] = np.arange(32 * 64).reshape(32, 64) + 2
    hashed.clear()                   # chunks: noise (stored raw), zeros, compressible
    r = ndpack.lazyexpr("a * (z == 0) + z * (z > 1)", operands={"a": noise, "z": zero}
                        ).compute(cparams={"codec": ndpack.Codec.LZ4, "clevel": 5})
    assert [i.special for i in r.iterchunks_info()][1] == ndpack.SpecialValue.ZERO
    assert hashed == [0, 1]
    frame = r.schunk.frame
    assert [c == checksums.chunk_crc(frame.get(i)) for i, c in enumerate(frame.crcs)] \
        == [True] * 3


def test_chunk_parts_again_and_crc():
    """``ChunkParts.again`` encodes another chunk with the same parameters; ``sums``
    are the crc32c and block checksums of the chunk ``finish`` returned (blocks in any
    order)."""
    from ndpack.chunks import block_sums, chunk_parts, compress2, crc32c
    cp = ndpack.CParams(codec=ndpack.Codec.LZ4, clevel=5, typesize=8, blocksize=8000,
                        nthreads=1)
    x = np.linspace(0, 1, 20_000) + np.random.default_rng(0).normal(0, 1e-3, 20_000)
    first = chunk_parts(x.nbytes, cp)
    assert first.sums is None
    for enc in (first, first.again()):
        order = [19, 0, 5, 1, 2, 3, 4] + list(range(6, 19)) if enc is first else range(20)
        for j in order:
            enc.add(x, j, 1)
        chunk = enc.finish(x)
        assert enc.sums[0] == crc32c(chunk)
        assert enc.sums == block_sums(chunk)
        np.testing.assert_array_equal(np.frombuffer(ndpack.decompress2(chunk), x.dtype), x)
    assert chunk == compress2(x, cparams=cp)                # in order: one-thread compress


def test_file_output_records_the_joined_crc(tmp_path, monkeypatch):
    """compute(urlpath=) hands the encoder's joined crc32c to the file frame: the
    reopened file's chunks all verify, and none was hashed again on the writer."""
    from ndpack.storage import checksums
    monkeypatch.setenv("NDPACK_CHECKSUMS", "1")
    hashed = []
    real = checksums.on_write

    def spy(frame, i, chunk, op, value=None):
        if value is None:
            hashed.append(i)
        return real(frame, i, chunk, op, value)
    x = np.linspace(0, 1, 400 * 300).reshape(400, 300)
    a = ndpack.asarray(x, chunks=(64, 300), blocks=(4, 300))
    monkeypatch.setattr(checksums, "on_write", spy)
    p = str(tmp_path / "r.b2nd")
    ndpack.lazyexpr("a * 2 + 1", operands={"a": a}).compute(
        urlpath=p, cparams={"codec": ndpack.Codec.LZ4, "clevel": 5})
    assert hashed == []
    r = ndpack.open(p, dparams={"verify": "full"})
    np.testing.assert_array_equal(r[:], x * 2 + 1)
    assert r.schunk.frame.crcs is not None and len(r.schunk.frame.crcs) == 7


def _noise(n, seed):
    """Random float64 bits, neither NaN nor infinite (bit 62 clear): incompressible."""
    bits = np.random.default_rng(seed).integers(0, 2**63, n, dtype=np.uint64)
    return (bits & ~np.uint64(1 << 62)).view(np.float64)


def _near_limit(nblocks, per_block, seed):
    """Noise whose every block starts with 64 zeros: its chunk compresses to within a
    few KB of its size (not noise by the samples, but near the limit)."""
    x = _noise(nblocks * per_block, seed).reshape(nblocks, per_block)
    x[:, :64] = 0.0
    return x.reshape(-1)


@pytest.mark.parametrize("kind", ["smooth", "noise", "overflow", "near"])
def test_chunk_parts_add_block_and_needs_source(kind):
    """Blocks added from copies (``add_block``) give the bytes ``add`` gives; when
    ``finish`` must read the whole chunk (stored uncompressed, encoded again near the
    limit) ``needs_source`` says so, ``finish`` refuses an unfilled buffer, and after
    ``source_filled`` the chunk holds the values."""
    from ndpack.chunks import chunk_parts, compress2
    per_block = 2000
    nblocks = {"smooth": 10, "noise": 10, "overflow": 4, "near": 4}[kind]
    x = {"smooth": lambda: np.linspace(0, 1, nblocks * per_block),
         "noise": lambda: _noise(nblocks * per_block, 1),
         "overflow": lambda: _noise(nblocks * per_block, 2),
         "near": lambda: _near_limit(nblocks, per_block, 3)}[kind]()
    cp = ndpack.CParams(codec=ndpack.Codec.LZ4, clevel=5, typesize=8,
                        blocksize=8 * per_block, nthreads=1)
    whole = chunk_parts(x.nbytes, cp)
    for j in range(nblocks):
        whole.add(x, j, 1)
    assert not whole.needs_source
    want = whole.finish(x)
    enc = chunk_parts(x.nbytes, cp)
    for j in reversed(range(nblocks)):
        enc.add_block(x[j * per_block:(j + 1) * per_block].copy(), j)
    assert enc.needs_source == (kind != "smooth")
    empty = np.zeros_like(x)
    if kind == "smooth":
        got = enc.finish(empty)               # never read
    else:
        with pytest.raises(ndpack.ParameterError, match="lacks the blocks"):
            enc.finish(empty)
        enc.source_filled()
        assert not enc.needs_source
        got = enc.finish(x)
        assert got == want == compress2(x, cparams=cp)
    np.testing.assert_array_equal(np.frombuffer(ndpack.decompress2(got), x.dtype), x)
    with pytest.raises(ndpack.ParameterError):
        chunk_parts(x.nbytes, cp).add_block(x[:10], 0)            # too short
    with pytest.raises(ndpack.ParameterError):
        chunk_parts(x.nbytes, cp).add_block(x[:per_block], nblocks)


@pytest.mark.parametrize("kind", ["noise", "near"])
def test_fused_compute_fills_chunks_stored_uncompressed(kind):
    """The fused program encodes result blocks from its own buffers and leaves the
    chunk buffer unwritten; a chunk that ends stored uncompressed (noise) or encoded
    again whole (near its limit) is evaluated into the buffer first: NumPy's values."""
    shape, chunks, blocks = (8 * 64, 256), (64, 256), (8, 256)      # 8 blocks per chunk
    if kind == "noise":
        a = _noise(shape[0] * shape[1], 4).reshape(shape)
    else:
        a = _near_limit(16, 32 * 256, 5).reshape(shape)
        chunks, blocks = (64, 256), (32, 256)                        # 2 blocks per chunk
    b = np.linspace(0, 1, a.size).reshape(shape)
    lz4 = {"codec": ndpack.Codec.LZ4, "clevel": 5}
    nd = {"a": ndpack.asarray(a, chunks=chunks, blocks=blocks, cparams=lz4),
          "b": ndpack.asarray(b, chunks=chunks, blocks=blocks, cparams=lz4)}
    want = a * 1.0 if kind == "noise" else a + b * 0.0
    text = "a * 1.0" if kind == "noise" else "a + b * 0.0"
    for _ in range(2):                   # the second run reuses the first's buffers
        aligned.FUSED.clear()
        got = ndpack.lazyexpr(text, operands=nd).compute(cparams=lz4)
        assert aligned.FUSED["fused"] > 0 and aligned.FUSED["general"] == 0
        np.testing.assert_array_equal(got[()].view(np.uint64), want.view(np.uint64))
    memcpyed = [bool(i.lazychunk[2] & 0x02) for i in got.schunk.iterchunks_info()]
    assert all(memcpyed) if kind == "noise" else not any(memcpyed)
