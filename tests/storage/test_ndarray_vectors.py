"""The golden .b2nd vectors decode to the manifest's bytes (array without padding)."""

import hashlib

import numpy as np
import pytest

from ndpack.storage import NDArray, ndarray_from_cframe
from ndpack.storage import open as nd_open


def _b2nd_entries(manifest):
    return [e for e in manifest if e["kind"] == "b2nd"]


def test_both_vectors_listed(manifest):
    names = {e["file"] for e in _b2nd_entries(manifest)}
    assert {"frames/array3d.b2nd", "frames/array2d_special.b2nd"} <= names


@pytest.mark.parametrize("name", ["frames/array3d.b2nd", "frames/array2d_special.b2nd"])
@pytest.mark.parametrize("how", ["open", "mmap", "cframe"])
def test_vector_decodes(vectors, manifest, name, how):
    entry = next(e for e in _b2nd_entries(manifest) if e["file"] == name)
    path = vectors / name
    if how == "open":
        a = nd_open(path, mode="r")
    elif how == "mmap":
        a = nd_open(path, mmap_mode="r")
    else:
        a = ndarray_from_cframe(path.read_bytes())
    assert isinstance(a, NDArray)
    data = a[...]
    assert data.nbytes == entry["decoded_nbytes"] == a.nbytes
    assert hashlib.sha256(data.tobytes()).hexdigest() == entry["decoded_sha256"]
    assert hashlib.sha256(np.asarray(a).tobytes()).hexdigest() == entry["decoded_sha256"]


def test_array3d_layout_and_slices(vectors):
    a = nd_open(vectors / "frames/array3d.b2nd", mode="r")
    ref = np.arange(630, dtype=np.int32).reshape(10, 7, 9)
    assert (a.shape, a.chunks, a.blocks, a.dtype) == ((10, 7, 9), (4, 5, 6), (3, 2, 4),
                                                      np.dtype("int32"))
    assert a.ext_shape == (12, 10, 12)
    for key in [(3, 4, 5), (slice(None, None, -1), 2), (Ellipsis, slice(1, 8, 3)),
                (slice(2, 9), None, slice(6, 0, -2), 8), (-1, -2, -3)]:
        np.testing.assert_array_equal(a[key], ref[key])


def test_array2d_special_content(vectors):
    a = nd_open(vectors / "frames/array2d_special.b2nd", mode="r")
    x = np.zeros((6, 10))
    x[0:4, 0:4] = np.arange(16.).reshape(4, 4) + 0.5
    x[4:6, 8:10] = -1.0
    np.testing.assert_array_equal(a[:], x)
    assert a.vlmeta["units"] == "m/s"
    specials = [info.special for info in a.iterchunks_info()]
    assert specials.count(1) >= 2          # untouched chunks are special zeros
