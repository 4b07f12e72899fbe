"""Helpers shared by the test files: one comparison against NumPy (``assert_eq``), the
same values as the operand kinds ndpack takes (``as_operand``), seeded data
(``random_data``), and corrupt files."""

import pathlib

import numpy as np

import ndpack

KINDS = ("ndarray", "lazyexpr", "numpy")

TESTS = pathlib.Path(__file__).resolve().parent      # tests/ (conftest.py, data/)
REPO = TESTS.parent                                   # README.md, docs/, notebooks/

# relative tolerance of floating and complex results when the caller gives none, by
# the item size of the (real) component: room for another order of summation (float64
# ~4500 ulps, float32 ~80, float16 ~1), not for a wrong formula; longer ones: 1e-12
DEFAULT_RTOL = {2: 1e-3, 4: 1e-5, 8: 1e-12}


def random_data(shape, dtype="f8", seed=0, scale=100):
    """Values of `shape` and `dtype` from a seeded normal distribution times `scale`:
    complex ones get a random imaginary part, bools are the positive values."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape) * scale
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    if np.dtype(dtype) == bool:
        return x > 0
    return x.astype(dtype)


def _lazy(x) -> bool:
    return isinstance(x, (ndpack.NDArray, ndpack.LazyExpr))


def assert_eq(actual, expected, *, rtol=None, atol=0, equal_nan=True, check_dtype=True,
              bitwise=False):
    """`actual` (an NDArray, a LazyExpr, a NumPy array or scalar) against NumPy's
    `expected`: metadata first, then values.

    Metadata: an array where `expected` is one (an NDArray, a LazyExpr or a NumPy
    array, not a list or a scalar), 0-d where `expected` is 0-d; the same shape; the
    same dtype (unless ``check_dtype=False``).  An NDArray or LazyExpr is read whole
    with ``[()]`` and what it gives must have the shape and dtype it declared.

    Values: exact for every kind but floating and complex ones (integers, bools,
    strings, datetimes, structured); floating and complex within ``rtol`` (default by
    item size: ``DEFAULT_RTOL``) and ``atol``, NaN where `expected` has NaN (anywhere
    fails with ``equal_nan=False``); ``rtol=0`` (with ``atol=0``) is exact.
    ``bitwise=True`` compares the stored bytes instead (signed zeros, NaN payloads,
    structured items holding NaN).
    """
    want = np.asarray(expected)
    # attributes, not np.shape/np.ndim: those are array functions, which a LazyExpr
    # answers by computing
    shape = tuple(actual.shape) if hasattr(actual, "shape") else np.shape(actual)
    if want.ndim:
        assert isinstance(actual, np.ndarray) or _lazy(actual), \
            f"expected an array of shape {want.shape}, got {type(actual).__name__}"
    else:
        assert shape == (), f"expected a 0-d result, got {type(actual).__name__} of shape {shape}"
    assert shape == want.shape, f"shape: got {shape}, expected {want.shape}"
    dtype = np.dtype(actual.dtype) if hasattr(actual, "dtype") else np.asarray(actual).dtype
    if check_dtype:
        assert dtype == want.dtype, f"dtype: got {dtype}, expected {want.dtype}"

    got = np.asarray(actual[()] if _lazy(actual) else actual)
    if _lazy(actual):
        assert got.shape == shape and got.dtype == dtype, \
            (f"{type(actual).__name__} declares {shape} {dtype} but gives "
             f"{got.shape} {got.dtype}")

    if bitwise:
        assert got.dtype == want.dtype, f"bitwise: dtype {got.dtype} vs {want.dtype}"
        assert got.tobytes() == want.tobytes(), "values: the bytes differ"
        return
    inexact = [d for d in (want.dtype, got.dtype) if d.kind in "fc"]
    if not inexact:
        np.testing.assert_array_equal(got, want)
        return
    if not equal_nan:
        assert not np.isnan(got).any() and not np.isnan(want).any(), \
            "values: NaN (equal_nan=False)"
    if rtol is None:
        size = inexact[0].itemsize // (2 if inexact[0].kind == "c" else 1)
        rtol = DEFAULT_RTOL.get(size, 1e-12)
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want)       # exact; NaN where NaN
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=equal_nan)


def as_operand(x, kind: str = "ndarray"):
    """`x` (NumPy or array_api_strict) as a NumPy array, an NDArray of several chunks
    (each dimension cut in two), or a LazyExpr over that NDArray; 0-d inputs stay NumPy."""
    a = np.asarray(x)
    if kind == "numpy" or a.ndim == 0:
        return a
    nd = ndpack.asarray(a, chunks=tuple(max(1, (s + 1) // 2) for s in a.shape))
    if kind == "ndarray":
        return nd
    if kind == "lazyexpr":
        return ndpack.lazyexpr("a", operands={"a": nd})
    raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")


def file_with_a_bad_block_start(tmp_path):
    """``(x, path)``: an (8, 100, 100) float64 .b2nd file of two chunks whose chunk 1
    has block 10's start (row 3 of plane 5) pointing far past the chunk; chunk 0 is
    intact."""
    x = np.random.default_rng(3).random((8, 100, 100))
    path = str(tmp_path / "c.b2nd")
    a = ndpack.asarray(x, chunks=(4, 100, 100), blocks=(1, 10, 100), urlpath=path,
                       mode="w", cparams={"clevel": 5})
    fr = a.schunk._frame
    pos = fr.base + fr.header_len + int(fr.offsets[1])
    del a
    with open(path, "r+b") as f:
        f.seek(pos + 32 + 4 * 10)
        f.write((10**8).to_bytes(4, "little"))
    return x, path
