"""Layouts are validated at open (issue 23, item 1): the b2nd metalayer against the
frame's chunk count, nbytes, chunk sizes, typesize and blocksize.  Files written by
python-blosc2 4.14.1 (the peer) must keep opening; mutated ones are a FormatError at
``open()`` naming the field, never a walk over chunks the index does not hold."""

import struct
import time

import numpy as np
import pytest

import ndpack
from ndpack.storage.grid import MAX_NCHUNKS, encode_b2nd

blosc2 = pytest.importorskip("blosc2")


@pytest.fixture(autouse=True)
def _no_checksum_record(monkeypatch):
    """The files made here carry no checksum record, as python-blosc2's: validation is
    what protects those.  (In files with a record, a changed b2nd metalayer is caught
    by the record first: tests/storage/test_block_checksums.py.)"""
    monkeypatch.setenv("NDPACK_CHECKSUMS", "0")


# --- what python-blosc2 writes still opens ---------------------------------------------

def _resized(p, start, new, **kw):
    a = blosc2.asarray(start, urlpath=p, mode="w", **kw)
    a.resize(new)
    return a


PEER_FILES = {
    "empty": lambda p: blosc2.empty((100, 50), dtype="f8", chunks=(30, 20), urlpath=p, mode="w"),
    "uninit": lambda p: blosc2.uninit((100, 50), dtype="i4", chunks=(30, 20), urlpath=p,
                                      mode="w"),
    "zeros": lambda p: blosc2.zeros((100, 50), dtype="f8", chunks=(30, 20), urlpath=p, mode="w"),
    "full": lambda p: blosc2.full((100, 50), 3.5, dtype="f8", chunks=(30, 20), urlpath=p,
                                  mode="w"),
    "nans": lambda p: blosc2.full((100, 50), np.nan, chunks=(30, 20), urlpath=p, mode="w"),
    "sparse": lambda p: blosc2.zeros((100, 50), chunks=(30, 20), urlpath=p, mode="w",
                                     contiguous=False),
    "size0": lambda p: blosc2.zeros((0, 50), dtype="f8", urlpath=p, mode="w"),
    "size0_inner": lambda p: blosc2.zeros((10, 0), dtype="f8", urlpath=p, mode="w"),
    "ndim0": lambda p: blosc2.asarray(np.array(3.5), urlpath=p, mode="w"),
    "ndim0_zeros": lambda p: blosc2.zeros((), dtype="i2", urlpath=p, mode="w"),
    "grown": lambda p: _resized(p, np.arange(5000.0).reshape(100, 50), (150, 70),
                                chunks=(30, 20)),
    "shrunk": lambda p: _resized(p, np.arange(5000.0).reshape(100, 50), (40, 10),
                                 chunks=(30, 20)),
    "shrunk_to_0": lambda p: _resized(p, np.arange(5000.0).reshape(100, 50), (0, 50),
                                      chunks=(30, 20)),
    "grown_from_0": lambda p: _resized(p, np.zeros((0, 30)), (40, 30), chunks=(10, 10)),
    "empty_grown": lambda p: (lambda a: (a.resize((140, 30)), a)[1])(
        blosc2.empty((100, 30), chunks=(10, 10), urlpath=p, mode="w")),
    "wide_items": lambda p: blosc2.asarray(np.array([b"x" * 300] * 7, dtype="S300"),
                                           urlpath=p, mode="w"),
    "million_chunks": lambda p: blosc2.empty((10**6, 10**6), dtype="u1", chunks=(1000, 1000),
                                             urlpath=p, mode="w"),
}


@pytest.mark.parametrize("kind", sorted(PEER_FILES))
def test_files_python_blosc2_writes_open(tmp_path, kind):
    p = str(tmp_path / f"{kind}.b2nd")
    ref = PEER_FILES[kind](p)
    a = ndpack.open(p)
    assert a.shape == ref.shape and a.dtype == ref.dtype
    assert a.schunk.nchunks == ref.schunk.nchunks
    if kind in ("empty", "uninit", "million_chunks"):
        a[:3]                                  # undefined content, but readable
    else:
        np.testing.assert_array_equal(a[...], ref[...])


# --- mutated files: a FormatError at open naming the field -------------------------------

def _array_file(tmp_path, shape=(6, 10), chunks=(1, 10), blocks=(1, 10), name="a.b2nd"):
    p = tmp_path / name
    x = np.arange(np.prod(shape), dtype="f8").reshape(shape)
    ndpack.asarray(x, chunks=chunks, blocks=blocks, urlpath=p, mode="w")
    return p, x


def _patch_b2nd(p, old_layout, new_layout):
    raw = p.read_bytes()
    old, new = encode_b2nd(*old_layout), encode_b2nd(*new_layout)
    assert len(old) == len(new) and raw.count(old) == 1
    p.write_bytes(raw.replace(old, new))


def _patch(p, pos, fmt, value):
    raw = bytearray(p.read_bytes())
    struct.pack_into(fmt, raw, pos, value)
    p.write_bytes(bytes(raw))


def test_three_byte_shape_change_is_refused_at_open(tmp_path):
    """The issue's case: shape (16711686, 10) over 6 chunks; open() used to accept it and
    a[...] walked the grid for 101 s."""
    p, _ = _array_file(tmp_path)
    raw = p.read_bytes()
    shape0 = b"\xd3" + struct.pack(">q", 6)
    pos = raw.index(shape0) + 1
    raw = raw[:pos + 5] + b"\xff\x00\x06" + raw[pos + 8:]          # 3 bytes changed
    p.write_bytes(raw)
    t = time.perf_counter()
    with pytest.raises(ndpack.FormatError, match=r"16711686.*field nchunks"):
        ndpack.open(p)
    assert time.perf_counter() - t < 10


def test_shape_of_2_40_rows_is_a_format_error_not_a_memory_error(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch_b2nd(p, ((6, 10), (1, 10), (1, 10), "f8"), ((2**40, 10), (1, 10), (1, 10), "f8"))
    with pytest.raises(ndpack.FormatError, match="chunks"):
        ndpack.open(p)
    _patch_b2nd(p, ((2**40, 10), (1, 10), (1, 10), "f8"), ((2**62, 10), (1, 10), (1, 10), "f8"))
    with pytest.raises(ndpack.FormatError, match="elements"):
        ndpack.open(p)


def test_shape_beyond_the_index_is_a_format_error(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch_b2nd(p, ((6, 10), (1, 10), (1, 10), "f8"), ((2**40, 10**3), (1, 10), (1, 10), "f8"))
    with pytest.raises(ndpack.FormatError, match="index holds"):
        ndpack.open(p)


def test_fewer_chunks_in_the_grid_than_stored(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch_b2nd(p, ((6, 10), (1, 10), (1, 10), "f8"), ((3, 10), (1, 10), (1, 10), "f8"))
    with pytest.raises(ndpack.FormatError, match="field nchunks"):
        ndpack.open(p)


def test_header_nbytes_disagreeing_with_the_shape(tmp_path):
    """A header nbytes of 0 gave an array of 6 rows over 0 chunks (IndexError on read)."""
    p, _ = _array_file(tmp_path)
    _patch(p, 30, ">q", 0)
    with pytest.raises(ndpack.FormatError, match="field nchunks"):
        ndpack.open(p)


def test_header_nbytes_of_fewer_chunks(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch(p, 30, ">q", 80 * 3)            # three chunks' worth: the index has 6 entries
    with pytest.raises(ndpack.FormatError):
        ndpack.open(p)


def test_chunk_shape_disagreeing_with_chunksize(tmp_path):
    p, _ = _array_file(tmp_path, shape=(6, 10), chunks=(2, 10), blocks=(1, 10))
    _patch_b2nd(p, ((6, 10), (2, 10), (1, 10), "f8"), ((3, 10), (1, 10), (1, 10), "f8"))
    with pytest.raises(ndpack.FormatError, match="field chunksize"):
        ndpack.open(p)


def test_typesize_disagreeing_with_the_dtype(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch(p, 48, ">i", 4)
    with pytest.raises(ndpack.FormatError, match="field typesize"):
        ndpack.open(p)


def test_blocksize_disagreeing_with_the_blocks(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch(p, 53, ">i", 40)
    with pytest.raises(ndpack.FormatError, match="field blocksize"):
        ndpack.open(p)


def test_dtype_changing_the_chunk_bytes(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch_b2nd(p, ((6, 10), (1, 10), (1, 10), "f8"), ((6, 10), (1, 10), (1, 10), "i4"))
    with pytest.raises(ndpack.FormatError):
        ndpack.open(p)


def test_variable_size_frame_with_a_short_chunk(tmp_path):
    """A variable-size frame (chunksize 0) whose chunks do not all hold one padded chunk."""
    from ndpack.storage.frame import FrameInfo, MemoryFrame
    from ndpack.storage.validate import check_array_frame
    f = MemoryFrame(FrameInfo(typesize=8, chunksize=80))
    f.append(ndpack.compress2(np.arange(10.0), typesize=8))
    f.append(ndpack.compress2(np.arange(5.0), typesize=8))        # frame becomes variable
    f.fresh = False
    with pytest.raises(ndpack.FormatError, match="nbytes|chunk 1"):
        check_array_frame(f, (20,), (10,), (10,), np.dtype("f8"))


def test_cframe_bytes_are_validated_too(tmp_path):
    p, _ = _array_file(tmp_path)
    _patch_b2nd(p, ((6, 10), (1, 10), (1, 10), "f8"), ((60, 10), (1, 10), (1, 10), "f8"))
    with pytest.raises(ndpack.FormatError, match="field nchunks"):
        ndpack.ndarray_from_cframe(p.read_bytes())


def test_mutated_metalayer_never_hangs(tmp_path):
    """Every single-byte change of the b2nd metalayer opens (then reads) or fails cleanly,
    each within a second."""
    p, x = _array_file(tmp_path)
    raw = p.read_bytes()
    old = encode_b2nd((6, 10), (1, 10), (1, 10), "f8")
    start = raw.index(old)
    for i in range(len(old)):
        for v in (0x00, 0x01, 0x7F, 0xFF):
            if raw[start + i] == v:
                continue
            q = tmp_path / "m.b2nd"
            q.write_bytes(raw[:start + i] + bytes([v]) + raw[start + i + 1:])
            t = time.perf_counter()
            try:
                a = ndpack.open(q)
                a[...]
            except (ndpack.NdpackError, ValueError, TypeError, KeyError):
                pass
            assert time.perf_counter() - t < 10, (i, v)      # no hang (an open takes ms)


# --- shapes the format cannot index: ParameterError at once -----------------------------

@pytest.mark.parametrize("shape, kw", [
    ((2**62, 2**62), {}),
    ((2**63,), {"chunks": (2**31,), "blocks": (2**20,)}),
    ((MAX_NCHUNKS + 1,), {"chunks": (1,), "blocks": (1,)}),
    ((2**40, 2**40), {"chunks": (2**20, 2**20), "blocks": (1, 1)}),
])
@pytest.mark.parametrize("make", ["zeros", "empty", "full", "uninit"])
def test_unindexable_shapes_raise_at_once(shape, kw, make):
    args = (shape, 1.5) if make == "full" else (shape,)
    t = time.perf_counter()
    with pytest.raises(ndpack.ParameterError):
        getattr(ndpack, make)(*args, dtype="f8", **kw)
    assert time.perf_counter() - t < 10           # at once, not after planning 2**40 chunks


def test_chunk_bytes_beyond_a_chunk(tmp_path):
    with pytest.raises(ndpack.ParameterError, match="a chunk holds at most"):
        ndpack.zeros((2**31,), dtype="f8", chunks=(2**30,), blocks=(2**20,))
    assert not list(tmp_path.iterdir())
    with pytest.raises(ndpack.ParameterError):
        ndpack.zeros((2**31,), dtype="f8", chunks=(2**30,), blocks=(2**20,),
                     urlpath=tmp_path / "big.b2nd", mode="w")
    assert not (tmp_path / "big.b2nd").exists()


@pytest.mark.parametrize("where", ["memory", "file", "sparse"])
@pytest.mark.parametrize("make", ["zeros", "empty", "full", "nans"])
def test_large_special_arrays_are_quick(tmp_path, where, make):
    """A million special chunks without a Python step per chunk."""
    # repeated-value chunks are stored (one file each in a sparse frame): fewer of them
    n = 10**6 if make != "full" else {"memory": 10**6, "file": 250**2, "sparse": 30**2}[where]
    side = int(round(n ** 0.5)) * 1000
    kw = {} if where == "memory" else {"urlpath": tmp_path / "x.b2nd", "mode": "w"}
    if where == "sparse":
        kw["contiguous"] = False
    args = ((side, side), 7) if make == "full" else ((side, side),)
    dtype = "f4" if make == "nans" else "u1"
    t = time.perf_counter()
    a = getattr(ndpack, make)(*args, dtype=dtype, chunks=(1000, 1000), blocks=(100, 1000), **kw)
    assert time.perf_counter() - t < 10
    assert a.schunk.nchunks == n
    want = {"zeros": 0, "full": 7, "nans": np.nan}.get(make)
    if want is not None:
        np.testing.assert_array_equal(a[side - 3:, :2], np.full((3, 2), want, dtype))
    if where != "memory":
        b = ndpack.open(kw["urlpath"])
        assert b.shape == (side, side) and b.schunk.nchunks == n
        if want is not None:
            np.testing.assert_array_equal(b[:2, side - 5:], np.full((2, 5), want, dtype))
        c = ndpack.open(kw["urlpath"], mode="a")
        c[0, 0] = 1                            # a regular chunk among the specials
        c[side - 1, side - 1] = 2
        d = ndpack.open(kw["urlpath"])
        assert d[0, 0] == 1 and d[side - 1, side - 1] == 2 and d.schunk.nchunks == n


@pytest.mark.parametrize("where", ["memory", "file", "sparse"])
def test_repeated_specials_match_python_blosc2(tmp_path, where):
    kw = {} if where == "memory" else {"urlpath": str(tmp_path / "x.b2nd"), "mode": "w"}
    if where == "sparse":
        kw["contiguous"] = False
    for make, args in (("zeros", ()), ("full", (2.5,))):
        a = getattr(ndpack, make)((70, 50), *args, chunks=(20, 20), blocks=(5, 20), **kw)
        data = a.to_cframe()
        b = blosc2.ndarray_from_cframe(data)
        np.testing.assert_array_equal(b[...], a[...])
        assert b.schunk.nchunks == 12


def test_schunk_fill_special_in_bulk():
    s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4})
    assert s.fill_special(10**6 + 3, ndpack.SpecialValue.VALUE, np.int32(7)) == 10**4 + 1
    assert np.frombuffer(s[10**6:10**6 + 3], np.int32).tolist() == [7, 7, 7]
    assert s.nbytes == 4 * (10**6 + 3)
    t = ndpack.SChunk(chunksize=8, cparams={"typesize": 8})
    with pytest.raises(ndpack.ParameterError, match="index holds"):
        t.fill_special(2**40, ndpack.SpecialValue.ZERO)


# --- offsets index sizes checked before the work they would cause ------------------------

def _frame_with_index(index_chunk, variable=False):
    from ndpack.storage.frame import FrameInfo, serialize
    sizes = (10, 5) if variable else (10, 10, 10)
    chunks = [ndpack.compress2(np.arange(float(n)), typesize=8) for n in sizes]
    buf = serialize(FrameInfo(typesize=8, chunksize=0 if variable else 80), {}, {}, chunks,
                    8 * sum(sizes))
    hlen = struct.unpack_from(">i", buf, 11)[0]
    ipos = hlen + struct.unpack_from(">q", buf, 39)[0]
    ilen = struct.unpack_from("<i", buf, ipos + 12)[0]
    out = bytearray(buf[:ipos] + index_chunk + buf[ipos + ilen:])
    struct.pack_into(">Q", out, 16, len(out))
    return bytes(out)


def test_index_chunk_size_checked_before_decoding(tmp_path):
    """An index chunk claiming 2 GB (a 32-byte special chunk) for a 3-chunk frame: a
    FormatError before anything is decoded (it was a MemoryError under a 1 GiB limit)."""
    from ndpack.chunks import special_chunk
    big = special_chunk(ndpack.SpecialValue.ZERO, 8 * (2**28 - 8), 8, 1 << 20)
    (tmp_path / "f.b2frame").write_bytes(_frame_with_index(big))
    code = f"""
import resource
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import ndpack
try:
    ndpack.open({str(tmp_path / 'f.b2frame')!r})
except ndpack.FormatError as exc:
    print("FormatError", exc)
"""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.stdout.startswith("FormatError") and "offsets index holds" in r.stdout, \
        (r.stdout, r.stderr[-500:])


def test_variable_frame_index_bounded_by_its_chunks(monkeypatch):
    """16M index entries (all 0) over two stored chunks: refused without reading 16M
    chunk headers (a spy counts the headers read)."""
    from ndpack.chunks import special_chunk
    from ndpack.storage import framefile
    heads = []
    real = framefile._FileFrame._raw_chunk_head

    def spy(self, i):
        heads.append(i)
        return real(self, i)
    monkeypatch.setattr(framefile._FileFrame, "_raw_chunk_head", spy)
    many = special_chunk(ndpack.SpecialValue.ZERO, 8 * 2**24, 8, 1 << 16)
    with pytest.raises(ndpack.FormatError, match="index entries in a variable-size frame"):
        ndpack.schunk_from_cframe(_frame_with_index(many, variable=True))
    assert len(heads) < 16


def test_zip_member_with_an_empty_name(tmp_path):
    """Found by tests/tools/fuzzing.py: zipfile's is_dir() raised IndexError on it."""
    import zipfile
    p = tmp_path / "e.b2z"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr(zipfile.ZipInfo(""), b"x")
    with pytest.raises(ndpack.FormatError, match="empty name"):
        ndpack.TreeStore(p, mode="r")


# --- chunk headers against the layout, at read time -------------------------------------

def _chunk_file_and_pos(a, path, n):
    frame = a.schunk._frame
    v = frame.offsets[n]
    if path.is_dir():
        return path / f"{v:08X}.chunk", 0
    return path, frame.header_len + v


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("field, pos, value", [("nbytes", 4, 400), ("blocksize", 8, 80)])
def test_chunk_header_of_another_layout(tmp_path, monkeypatch, contiguous, field, pos, value):
    """A chunk whose header nbytes or blocksize is not the array's: a FormatError naming
    the chunk (it was a NumPy ValueError, or values left unwritten, found by the fuzzer)."""
    monkeypatch.setenv("NDPACK_CHECKSUMS", "0")     # a checksum would catch it first
    path = tmp_path / "c.b2nd"
    x = np.arange(400.0).reshape(20, 20)
    a = ndpack.asarray(x, chunks=(10, 10), blocks=(5, 10), urlpath=path, mode="w",
                       contiguous=contiguous, cparams={"codec": ndpack.Codec.LZ4})
    f, at = _chunk_file_and_pos(a, path, 1)
    del a
    raw = bytearray(f.read_bytes())
    struct.pack_into("<i", raw, at + pos, value)
    f.write_bytes(bytes(raw))
    b = ndpack.open(path)
    np.testing.assert_array_equal(b[:10, :10], x[:10, :10])      # chunk 0 is fine
    for key in [(slice(None),), (slice(0, 10), slice(10, 20)), (3, 15), ([1, 2], 17),
                (slice(2, 9), slice(12, 14))]:
        with pytest.raises(ndpack.FormatError, match=f"chunk 1: .*field chunk {field}"):
            b[key]


@pytest.mark.parametrize("newshape", [(2**62, 10), (2**40, 10), (10, 2**62)])
def test_resize_beyond_the_index_raises_at_once(tmp_path, newshape):
    """resize() planned every chunk of the new grid in Python first (2**40 never returned)."""
    for kw in ({}, {"urlpath": tmp_path / "r.b2nd", "mode": "w"}):
        a = ndpack.asarray(np.arange(100.0).reshape(10, 10), chunks=(1, 10), blocks=(1, 10),
                           **kw)
        t = time.perf_counter()
        with pytest.raises(ndpack.ParameterError):
            a.resize(newshape)
        assert time.perf_counter() - t < 10           # at once, not after planning 2**40 chunks
        np.testing.assert_array_equal(a[...], np.arange(100.0).reshape(10, 10))
        a.resize((12, 10))                     # still usable
        assert a.shape == (12, 10) and a[11].tolist() == [0.0] * 10


@pytest.mark.parametrize("name", ["note", "ndpack.checksums"])
def test_vlmeta_special_chunk_claiming_2gb(name):
    """A 32-byte special chunk standing for 2 GB of zeros as a vlmeta value (the checksum
    record is decoded at open): a FormatError, not a 2 GB allocation."""
    import subprocess
    import sys
    code = f"""
import resource
import numpy as np
import ndpack
from ndpack.chunks import special_chunk
from ndpack.storage.frame import FrameInfo, serialize
chunks = [ndpack.compress2(np.arange(10.0), typesize=8) for _ in range(3)]
big = special_chunk(ndpack.SpecialValue.ZERO, 2**31 - 1024, 1, 1 << 20)
buf = serialize(FrameInfo(typesize=8, chunksize=80), {{}}, {{{name!r}: big}}, chunks, 240)
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
try:
    s = ndpack.schunk_from_cframe(buf)
    s.vlmeta[{name!r}]
except ndpack.FormatError as exc:
    print("FormatError", exc)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.stdout.startswith("FormatError") and "special chunk" in r.stdout, \
        (r.stdout, r.stderr[-800:])
