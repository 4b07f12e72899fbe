"""Every frame among the golden vectors decodes to the manifest's bytes and metadata."""

import hashlib
import itertools

import numpy as np
import pytest

import ndpack
from ndpack.storage import frame as fr, framefile as ff

FRAME_KINDS = ("cframe", "sframe", "b2nd")


def _entries():
    """Frame entries of the manifest (collected at import time, for parametrize ids)."""
    import json

    from tests.conftest import vectors_dir
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
    s = getattr(s, "schunk", s)      # .b2nd frames open as NDArray
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
    assert [hex(v) for v in list(s._frame.offsets)[1:]] == ["0x317", "0x0", "0x25f"]
    v = ndpack.open(vectors / "frames/schunk_varlen.b2frame", mode="r")
    assert v.chunksize == 0 and v._frame.cnb == [400, 200, 400, 100]
    sp = ndpack.open(vectors / "frames/schunk3_sparse.b2frame", mode="r")
    assert list(sp._frame.offsets[:2]) == [0, 3] and sp.vlmeta["note"] == "sparse"
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


def _manifest_structures(vectors):
    """``{file: {field: value}}`` from the "Structure:" lines of MANIFEST.md."""
    import ast
    import re

    text = (vectors / "MANIFEST.md").read_text()
    out = {}
    for m in re.finditer(r"#### `(frames/[^`]+)`(.*?)\* Structure: ([^\n]+)", text, re.S):
        line = m.group(3)
        head, rest = line.split("; index chunk flags ")
        fields = {}
        for part in re.split(r", (?=[a-z_]+ )", head):
            key, val = part.split(" ", 1)
            fields[key] = ast.literal_eval(val) if val[0] in "[0123456789-" else val
        flags, rest = rest.split(" at ")
        pos, offs = rest.split("; offsets ")
        fields.update(index_flags=int(flags, 16), index_pos=int(pos),
                      offsets=[int(v, 16) for v in ast.literal_eval(offs)])
        out[m.group(1)] = fields
    return out


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_frame_structure_matches_manifest(vectors, entry):
    structures = _manifest_structures(vectors)
    want = structures[entry["file"]]
    path = vectors / entry["file"]
    if entry["kind"] == "sframe":
        path = path / "chunks.b2frame"
    buf = path.read_bytes()
    st = ff._parse_frame(ff._Reader(buf=buf), 0, None)
    f, info = st["fields"], st["info"]
    got = dict(header_len=f["header_len"], frame_len=f["frame_len"],
               general_flags=f["general_flags"], frame_type=f["frame_type"],
               codec_flags=(info.codec if info.codec < 6 else 6) | (info.clevel << 4),
               other_flags=info.splitmode - 1, nbytes=f["nbytes"], cbytes=f["cbytes"],
               typesize=info.typesize, blocksize=info.blocksize, chunksize=info.chunksize,
               metalayers=list(st["meta"]), vlmeta=list(st["vlmeta"]),
               trailer_len=f["frame_len"] - st["tstart"], index_flags=buf[st["idx_pos"] + 2],
               index_pos=st["idx_pos"],
               offsets=[int(v) & (2**64 - 1) for v in st["offsets"]])
    for key, value in want.items():
        if isinstance(value, str) and value.startswith("0x"):
            value = int(value, 16)
        assert got[key] == value, key


@pytest.mark.parametrize("name", ["frames/schunk3_vlmeta_tocframe.b2frame",
                                  "frames/schunk3_vlmeta.b2frame",
                                  "frames/schunk3_vlmeta_inmem_tocframe.b2frame"])
def test_reserialize_is_byte_identical(vectors, name):
    """Header, metalayers, chunks, (memcpyed) index and trailer are written as C-Blosc2 does."""
    buf = (vectors / name).read_bytes()
    assert ndpack.schunk_from_cframe(buf).to_cframe() == buf


CP4 = {"typesize": 4, "nthreads": 1}
DP = {"nthreads": 1}


def _write_like_gen_vectors(name, path):
    """Repeat gen_vectors.py's calls for `name` with ndpack."""
    contiguous = name != "frames/schunk3_sparse.b2frame"
    chunksize = {"frames/schunk40_special.b2frame": 256,
                 "frames/schunk_varlen.b2frame": 400}.get(name, 4000)
    s = ndpack.SChunk(chunksize=chunksize, cparams=CP4, dparams=DP, urlpath=path,
                      contiguous=contiguous, mode="w")
    a = np.arange(3000, dtype=np.int32)
    if name == "frames/schunk3_vlmeta.b2frame":
        for i in range(3):
            s.append_data(a[i * 1000:(i + 1) * 1000])
        s.vlmeta["note"] = "hello"
        s.vlmeta["tup"] = (1, 2)
        s.vlmeta["d"] = {"a": 1, "b": [1.5, "x"]}
    elif name == "frames/schunk40_special.b2frame":
        for i in range(40):
            s.append_data(np.zeros(64, np.int32) if i % 10 == 3
                          else np.arange(64, dtype=np.int32) * (i + 1))
    elif name == "frames/schunk_varlen.b2frame":
        for n in (100, 50, 100, 25):
            s.append_chunk(ndpack.compress2(np.arange(n, dtype=np.int32) + n, typesize=4,
                                            nthreads=1))
    elif name == "frames/schunk_edited.b2frame":
        for i in range(4):
            s.append_data(np.arange(1000, dtype=np.int32) * (i + 1))
        s.insert_data(1, np.arange(1000, dtype=np.int32) + 5)
        s.delete_chunk(3)
        s.update_data(0, np.zeros(1000, np.int32))
    else:
        for i in range(3):
            s.append_data(a[i * 1000:(i + 1) * 1000])
        s.insert_data(1, np.zeros(1000, np.int32))
        s.insert_data(1, np.arange(1000, dtype=np.int32) - 7)
        s.vlmeta["note"] = "sparse"
    s.close()


@pytest.mark.parametrize("name", ["frames/schunk3_vlmeta.b2frame",
                                  "frames/schunk40_special.b2frame",
                                  "frames/schunk_varlen.b2frame",
                                  "frames/schunk_edited.b2frame",
                                  "frames/schunk3_sparse.b2frame"])
def test_same_calls_write_same_frame(vectors, tmp_path, name, monkeypatch):
    """The mutations of §4.8 land where C-Blosc2 puts them: same structure, chunks, offsets.

    Bytes are compared outside the offsets index, whose BloscLZ stream may differ from
    C-Blosc2's when it is compressed (it must only decode to the same offsets).
    Written without the checksum record (an ndpack extension C-Blosc2 does not write).
    """
    monkeypatch.setenv("NDPACK_CHECKSUMS", "0")
    path = tmp_path / "x.b2frame"
    _write_like_gen_vectors(name, path)
    mine_p, theirs_p = path, vectors / name
    if name.endswith("sparse.b2frame"):
        for f in sorted(p.name for p in theirs_p.iterdir()):
            if f != "chunks.b2frame":
                assert (mine_p / f).read_bytes() == (theirs_p / f).read_bytes(), f
        mine_p, theirs_p = mine_p / "chunks.b2frame", theirs_p / "chunks.b2frame"
    mine, theirs = mine_p.read_bytes(), theirs_p.read_bytes()
    sm = ff._parse_frame(ff._Reader(buf=mine), 0, None)
    st = ff._parse_frame(ff._Reader(buf=theirs), 0, None)
    assert list(sm["offsets"]) == list(st["offsets"])
    assert sm["vlmeta"] == st["vlmeta"] and sm["meta"] == st["meta"]
    hm, ht = sm["fields"]["header_len"], st["fields"]["header_len"]
    assert mine[:16] == theirs[:16] and mine[24:hm] == theirs[24:ht]   # all but frame_len
    assert mine[hm:sm["idx_pos"]] == theirs[ht:st["idx_pos"]]      # chunks section
    assert mine[-(mine_len := len(mine) - sm["tstart"]):] == theirs[-mine_len:]   # trailer
