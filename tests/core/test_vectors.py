"""Every golden chunk decodes to the bytes whose SHA-256 the manifest gives."""

import hashlib

import pytest

import ndpack

from tests.conftest import vectors_dir


def _chunk_entries():
    import json
    files = json.loads((vectors_dir() / "manifest.json").read_text())["files"]
    return [f for f in files if f["kind"] == "chunk"]


@pytest.mark.parametrize("entry", _chunk_entries(), ids=lambda e: e["file"].split("/")[-1])
def test_golden_chunk_decodes(entry, vectors):
    data = (vectors / entry["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == entry["file_sha256"]
    out = ndpack.decompress(data)
    nbytes, cbytes, _ = ndpack.get_cbuffer_sizes(data)
    assert (nbytes, cbytes) == (entry["header"]["nbytes"], len(data))
    if "decoded_sha256" in entry:
        assert len(out) == entry["decoded_nbytes"]
        assert hashlib.sha256(out).hexdigest() == entry["decoded_sha256"]
    else:   # uninitialized special chunk: undefined content, we output zeros
        assert out == bytes(len(out))


@pytest.mark.parametrize("entry", _chunk_entries(), ids=lambda e: e["file"].split("/")[-1])
def test_golden_chunk_header_fields(entry, vectors):
    info = ndpack.chunk_info((vectors / entry["file"]).read_bytes())
    hdr = entry["header"]
    assert info["version"] == hdr["version"]
    assert info["flags"] == int(hdr["flags"], 16)
    assert info["typesize"] == hdr["typesize"]
    assert info["cbytes"] == hdr["cbytes"]


def test_all_chunk_vectors_listed(vectors):
    on_disk = {p.name for p in (vectors / "chunks").glob("*.cdata")}
    listed = {e["file"].split("/")[-1] for e in _chunk_entries()}
    assert on_disk <= listed
    assert len(on_disk) >= 70
