"""Helpers shared by the test files: the same values as the operand kinds ndpack takes."""

import numpy as np

import ndpack

KINDS = ("ndarray", "lazyexpr", "numpy")


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
