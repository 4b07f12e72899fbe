"""Every frame among the golden vectors decodes to the manifest's bytes and metadata."""

import hashlib
import itertools

import numpy as np
import pytest

import ndpack
from ndpack.storage import frame as fr

FRAME_KINDS = ("cframe", "sframe", "b2nd")


def frame_entries(manifest):
    return [e for e in manifest if e.get("kind") in FRAME_KINDS]


def _entries():
    from tests.conftest import vectors_dir
    import json
    files = json.loads((vectors_dir() / "manifest.json").read_text())["files"]
    return [e for e in files if e.get("kind") in FRAME_KINDS]


ENTRIES = _entries()
IDS = [e["file"] for e in ENTRIES]


def unpad_b2nd(s):
    """Array bytes (C order, padding removed) of an SChunk holding a b2nd frame."""
    m = s.meta["b2nd"]
    _, ndim, shape, chunks, blocks, _, dtype = m
    dt = np.dtype(dtype)
    ext = [-(-c // b) * b for c, b in zip(chunks, blocks)]
    grid = [-(-n // c) for n, c in zip(shape, chunks)]
    out = np.zeros(shape, dt)
    for nchunk, cidx in enumerate(itertools.product(*[range(g) for g in grid])):
        raw = np.frombuffer(s.decompress_chunk(nchunk), dt)
        # blocks in C order inside the padded chunk
        bgrid = [e // b for e, b in zip(ext, blocks)]
        bsize = int(np.prod(blocks))
        for k, bidx in enumerate(itertools.product(*[range(g) for g in bgrid])):
            block = raw[k * bsize:(k + 1) * bsize].reshape(blocks)
            lo = [ci * c + bi * b for ci, c, bi, b in zip(cidx, chunks, bidx, blocks)]
            sel_out, sel_blk = [], []
            for d in range(ndim):
                y0 = bidx[d] * blocks[d]
                n = min(blocks[d], chunks[d] - y0, shape[d] - lo[d])
                if n <= 0:
                    break
                sel_out.append(slice(lo[d], lo[d] + n))
                sel_blk.append(slice(0, n))
            else:
                out[tuple(sel_out)] = block[tuple(sel_blk)]
    return out.tobytes()


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
@pytest.mark.parametrize("mmap_mode", [None, "r"])
def test_frame_decodes(vectors, entry, mmap_mode):
    path = vectors / entry["file"]
    if entry["kind"] == "sframe" and mmap_mode:
        pytest.skip("mmap applies to contiguous frames")
    s = ndpack.open(path, mode="r", mmap_mode=mmap_mode)
    if entry["kind"] == "b2nd":
        data = unpad_b2nd(s)
        assert "b2nd" in s.meta
    else:
        data = s[:]
        assert s.meta.getall() == {}
    assert len(data) == entry["decoded_nbytes"]
    assert hashlib.sha256(data).hexdigest() == entry["decoded_sha256"]
    expected_vl = entry.get("vlmeta")
    if expected_vl is not None:
        got = s.vlmeta.getall()
        assert list(got) == list(expected_vl)
        # manifest stores tuples in their msgpack form
        for k, v in expected_vl.items():
            if isinstance(v, list) and v and v[0] == "__tuple__":
                v = tuple(v[1:])
            assert got[k] == v
    s.close()


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["kind"] != "sframe"],
                         ids=[e["file"] for e in ENTRIES if e["kind"] != "sframe"])
def test_frame_from_cframe_and_reserialize(vectors, entry):
    buf = (vectors / entry["file"]).read_bytes()
    s = ndpack.schunk_from_cframe(buf)
    t = ndpack.schunk_from_cframe(s.to_cframe(), copy=True)
    assert t[:] == s[:]
    assert t.vlmeta.getall().keys() == s.vlmeta.getall().keys()
    assert t.meta.getall() == s.meta.getall()
    assert t.nbytes == s.nbytes and t.nchunks == s.nchunks


def test_known_structure(vectors):
    s = ndpack.open(vectors / "frames/schunk_edited.b2frame", mode="r")
    assert s._frame.offsets[0] == fr.special_offset(1)
    assert [hex(v) for v in s._frame.offsets[1:]] == ["0x317", "0x0", "0x25f"]
    v = ndpack.open(vectors / "frames/schunk_varlen.b2frame", mode="r")
    assert v.chunksize == 0 and v._frame.cnb == [400, 200, 400, 100]
    sp = ndpack.open(vectors / "frames/schunk3_sparse.b2frame", mode="r")
    assert sp._frame.offsets[:2] == [0, 3] and sp.vlmeta["note"] == "sparse"
    assert not sp.contiguous
    a = ndpack.open(vectors / "frames/array3d.b2nd", mode="r")
    assert a.meta["b2nd"][2:5] == [[10, 7, 9], [4, 5, 6], [3, 2, 4]]
    assert a.meta.get_raw("b2nd")[:3] == b"\x97\x00\x03"


def test_sparse_listing(vectors, manifest):
    entry = next(e for e in manifest if e.get("kind") == "sframe")
    d = vectors / entry["file"]
    for name, (size, sha) in entry["listing"].items():
        data = (d / name).read_bytes()
        assert len(data) == size and hashlib.sha256(data).hexdigest() == sha


def test_frame_at_offset(vectors, tmp_path):
    buf = (vectors / "frames/schunk40_special.b2frame").read_bytes()
    p = tmp_path / "embedded.bin"
    p.write_bytes(b"x" * 1234 + buf + b"trailing garbage")
    s = ndpack.open(p, mode="r", offset=1234)
    assert s[:] == ndpack.schunk_from_cframe(buf)[:]
