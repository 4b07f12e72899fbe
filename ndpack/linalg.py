"""``ndpack.linalg``: the array API standard's linear algebra extension.

Out of core: ``matmul``, ``tensordot``, ``vecdot``, ``outer`` and ``matrix_transpose``
(the engine's blocked products, docs/linalg.md), ``vector_norm`` and the ``"fro"``, 1 and
infinity ``matrix_norm`` (streamed reductions), ``diagonal``, ``trace`` and ``cross``
(chunk by chunk).  The factorizations and solvers (``cholesky``, ``det``, ``eigh``,
``eigvalsh``, ``inv``, ``matrix_power``, ``matrix_rank``, ``pinv``, ``qr``, ``slogdet``,
``solve``, ``svd``, ``svdvals`` and the 2, -2 and nuclear matrix norms) decode their
input and run NumPy's LAPACK in memory, behind a size guard: inputs above
:data:`IN_MEMORY_BYTES` (1 GiB; ``NDPACK_LINALG_BYTES`` changes it) are a
``ParameterError`` instead of an attempt to hold them.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.array([[4.0, 2.0], [2.0, 3.0]]))
>>> round(float(ndpack.linalg.det(a)[()]), 9)
8.0
>>> ndpack.linalg.vector_norm(a, axis=1)[()].round(3).tolist()
[4.472, 3.606]
>>> ndpack.linalg.diagonal(a)[()].tolist()
[4.0, 3.0]
"""

from __future__ import annotations

import math
import operator
import os
from typing import NamedTuple

import numpy as np

from ndpack.engine.elementwise import abs as _abs, pow as _pow
from ndpack.engine.ops.linalg import matmul as _matmul, outer as _outer
from ndpack.engine.ops.linalg import tensordot as _tensordot, vecdot as _vecdot
from ndpack.engine.statistical import count_nonzero as _count_nonzero
from ndpack.engine.statistical import max as _max, min as _min, sum as _sum
from ndpack.engine.expr.axes import normalize_axes
from ndpack.engine.ops.shape import as_array, fill_chunks, matrix_transpose as _mT, read_values
from ndpack.errors import ParameterError
from ndpack.storage.constructors import asarray
from ndpack.storage.ndarray import NDArray, create

__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigvals", "eigh", "eigvalsh",
           "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm", "IN_MEMORY_BYTES", "EigResult", "EighResult", "QRResult",
           "SlogdetResult", "SVDResult"]

#: Largest input (bytes, decoded) that the in-memory functions accept.
IN_MEMORY_BYTES = 1 << 30


def guard_bytes() -> int:
    text = os.environ.get("NDPACK_LINALG_BYTES", "").strip()
    if not text:
        return IN_MEMORY_BYTES
    try:
        return int(float(text))
    except ValueError:
        raise ParameterError(f"NDPACK_LINALG_BYTES={text!r}: give a number of bytes") from None


def _in_memory(x, name: str, min_ndim: int = 2, kinds: str = "fc") -> np.ndarray:
    """The decoded input of an in-memory function, after the size guard; dtype kinds
    outside `kinds` are a TypeError."""
    x = as_array(x)
    nbytes = math.prod(x.shape) * np.dtype(x.dtype).itemsize
    if nbytes > guard_bytes():
        raise ParameterError(
            f"linalg.{name} runs in memory and its input has {nbytes / 2**20:.0f} MiB, above "
            f"the {guard_bytes() / 2**20:.0f} MiB guard (NDPACK_LINALG_BYTES raises it)")
    if len(x.shape) < min_ndim:
        raise ValueError(f"linalg.{name} needs at least {min_ndim} dimensions, not "
                         f"{len(x.shape)}")
    if np.dtype(x.dtype).kind not in kinds:
        raise TypeError(f"linalg.{name} needs a floating-point array, not {x.dtype}")
    return np.asarray(x[...])


def _out(values) -> NDArray:
    return asarray(np.asarray(values))


class EigResult(NamedTuple):
    eigenvalues: NDArray
    eigenvectors: NDArray


class EighResult(NamedTuple):
    eigenvalues: NDArray
    eigenvectors: NDArray


class QRResult(NamedTuple):
    Q: NDArray
    R: NDArray


class SlogdetResult(NamedTuple):
    sign: NDArray
    logabsdet: NDArray


class SVDResult(NamedTuple):
    U: NDArray
    S: NDArray
    Vh: NDArray


# --- out of core -------------------------------------------------------------------

def matmul(x1, x2, /):
    """The matrix product (NumPy's ``matmul`` rules), computed in blocks out of core."""
    return _matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    """The tensor contraction over `axes`, computed in blocks out of core."""
    return _tensordot(x1, x2, axes=axes)


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along `axis` (conjugating `x1`)."""
    return _vecdot(x1, x2, axis=axis)


def outer(x1, x2, /):
    """The outer product of two 1-d arrays."""
    return _outer(x1, x2)


def matrix_transpose(x, /):
    """The transpose of the last two dimensions."""
    return _mT(x)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002 -- standard's name
    """The vector `ord`-norm over `axis` (all axes when None), streamed over chunks."""
    x = as_array(x)
    axes = tuple(range(len(x.shape))) if axis is None else normalize_axes(axis, len(x.shape))
    kind = np.dtype(x.dtype).kind
    real = np.finfo(x.dtype).dtype if kind in "fc" else np.dtype(np.float64)
    mag = _abs(x) if kind in "fc" else _abs(x).astype(real)
    if kind == "c":
        mag = mag.astype(real)
    kw = {"axis": axes, "keepdims": keepdims}
    with np.errstate(all="ignore"):       # the reductions stream; their results are small
        if ord == 2:
            res = np.sqrt(_sum(mag * mag, **kw))
        elif ord == 1:
            res = _sum(mag, **kw)
        elif ord == math.inf:
            res = _max(mag, **kw) if math.prod(x.shape) else _sum(mag, **kw)
        elif ord == -math.inf:
            res = _min(mag, **kw)
        elif ord == 0:
            res = _count_nonzero(mag, **kw)
        else:
            p = float(ord)
            res = np.power(_sum(_pow(mag, p), **kw), 1.0 / p)
    return asarray(np.asarray(res).astype(real, copy=False))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002 -- standard's name
    """The matrix norm of the last two dimensions: ``"fro"``, 1, -1, inf and -inf
    streamed; 2, -2 and ``"nuc"`` from singular values (in memory)."""
    x = as_array(x)
    nd = len(x.shape)
    if nd < 2:
        raise ValueError(f"matrix_norm needs at least 2 dimensions, not {nd}")
    if ord in (2, -2, "nuc"):
        s = np.linalg.svd(_in_memory(x, "matrix_norm"), compute_uv=False)
        res = s.sum(-1) if ord == "nuc" else (s.max(-1) if ord == 2 else s.min(-1))
        if keepdims:
            res = res[..., None, None]
        return _out(res)
    if ord == "fro":
        return vector_norm(x, axis=(nd - 2, nd - 1), keepdims=keepdims, ord=2)
    if ord in (1, -1, math.inf, -math.inf):
        sum_axis = nd - 2 if ord in (1, -1) else nd - 1      # columns for 1, rows for inf
        sums = np.asarray(vector_norm(x, axis=sum_axis, keepdims=True, ord=1)[()])
        pick = np.max if ord > 0 else np.min
        res = pick(sums, axis=(nd - 1 if ord in (1, -1) else nd - 2), keepdims=True)
        return _out(res if keepdims else res.reshape(res.shape[:-2]))
    raise ValueError(f"ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, not {ord!r}")


def diagonal(x, /, *, offset=0):
    """The `offset`-th diagonal of the last two dimensions, chunk by chunk."""
    x = as_array(x)
    if len(x.shape) < 2:
        raise ValueError("diagonal needs at least 2 dimensions")
    offset = operator.index(offset)
    m, n = x.shape[-2:]
    size = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    r0, c0 = max(0, -offset), max(0, offset)
    out = create(tuple(x.shape[:-2]) + (size,), x.dtype)

    def producer(reg):
        k = reg[-1]
        box = read_values(x, tuple(reg[:-1]) + (slice(r0 + k.start, r0 + k.stop),
                                          slice(c0 + k.start, c0 + k.stop)))
        return np.diagonal(np.asarray(box), axis1=-2, axis2=-1)

    return fill_chunks(out, producer)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of the `offset`-th diagonal of the last two dimensions."""
    d = diagonal(x, offset=offset)
    if dtype is None and np.dtype(d.dtype).kind in "iu":
        dtype = np.int64 if np.dtype(d.dtype).kind == "i" else np.uint64
    res = np.sum(np.asarray(d[...]), axis=-1, dtype=dtype)
    return _out(res)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along `axis` (the arrays broadcast)."""
    a, b = as_array(x1), as_array(x2)
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    nd = len(shape)
    if not -nd <= axis < 0:
        raise ValueError(f"axis must be negative and within the broadcast shape, not {axis}")
    ax = axis % nd
    if shape[ax] != 3 or a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ValueError(f"cross needs vectors of 3 elements along axis {axis}")
    dtype = np.result_type(a.dtype, b.dtype)
    chunks = list(getattr(a, "chunks", None) or shape)[-nd:] if len(a.shape) == nd else None
    if chunks is not None:
        chunks[ax] = 3
    out = create(shape, dtype, chunks=tuple(chunks) if chunks else None)

    def producer(reg):
        def part(arr):
            lead = nd - len(arr.shape)
            key = tuple(slice(0, 1) if s == 1 else r for s, r in zip(arr.shape, reg[lead:]))
            return np.asarray(read_values(arr, key))
        return np.cross(part(a), part(b), axis=axis)

    return fill_chunks(out, producer)


# --- in memory, behind the guard ---------------------------------------------------

def cholesky(x, /, *, upper=False):
    """The Cholesky factor (lower, or upper with ``upper=True``) of Hermitian positive
    definite matrices."""
    low = np.linalg.cholesky(_in_memory(x, "cholesky"))
    return _out(np.conj(np.swapaxes(low, -1, -2)) if upper else low)


def det(x, /):
    """The determinant of square matrices."""
    return _out(np.linalg.det(_in_memory(x, "det")))


def eigh(x, /):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices."""
    w, v = np.linalg.eigh(_in_memory(x, "eigh"))
    return EighResult(_out(w), _out(v))


def _complex(a: np.ndarray) -> np.ndarray:
    """Real results of eig/eigvals as the complex dtype of their precision (the
    standard's 2025.12 eig: always complex)."""
    return a.astype(np.result_type(a.dtype, np.complex64)) if a.dtype.kind == "f" else a


def eig(x, /):
    """Eigenvalues and right eigenvectors of general square matrices (array API
    2025.12), complex whatever the input's real dtype; in memory.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> w, v = ndpack.linalg.eig(ndpack.asarray(np.array([[0.0, -1.0], [1.0, 0.0]])))
    >>> sorted(complex(z).imag for z in w[()]), v.dtype
    ([-1.0, 1.0], dtype('complex128'))
    """
    w, v = np.linalg.eig(_in_memory(x, "eig"))
    return EigResult(_out(_complex(w)), _out(_complex(v)))


def eigvals(x, /):
    """Eigenvalues of general square matrices (array API 2025.12), complex."""
    return _out(_complex(np.linalg.eigvals(_in_memory(x, "eigvals"))))


def eigvalsh(x, /):
    """Eigenvalues (ascending) of Hermitian matrices."""
    return _out(np.linalg.eigvalsh(_in_memory(x, "eigvalsh")))


def inv(x, /):
    """The inverse of square matrices."""
    return _out(np.linalg.inv(_in_memory(x, "inv")))


def matrix_power(x, n, /):
    """Square matrices raised to the integer power `n` (negative: of the inverse)."""
    return _out(np.linalg.matrix_power(_in_memory(x, "matrix_power"), operator.index(n)))


def matrix_rank(x, /, *, rtol=None):
    """The number of singular values above ``rtol * largest`` (default tolerance:
    ``max(M, N) * eps``); integer and boolean matrices are ranked in float64, as
    NumPy and the reference implementation do."""
    v = _in_memory(x, "matrix_rank", kinds="biufc")
    s = np.linalg.svd(v, compute_uv=False)
    if rtol is None:
        rtol = max(v.shape[-2:]) * np.finfo(s.dtype).eps
    tol = np.asarray(rtol)[..., None] * s.max(axis=-1, keepdims=True, initial=0.0)
    return _out(np.count_nonzero(s > tol, axis=-1).astype(np.int64))


def pinv(x, /, *, rtol=None):
    """The Moore-Penrose pseudo-inverse."""
    v = _in_memory(x, "pinv")
    if rtol is None:
        rtol = max(v.shape[-2:]) * np.finfo(v.dtype).eps
    return _out(np.linalg.pinv(v, rcond=rtol))


def qr(x, /, *, mode="reduced"):
    """The QR factorization (``mode="reduced"`` or ``"complete"``)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete', not {mode!r}")
    q, r = np.linalg.qr(_in_memory(x, "qr"), mode=mode)
    return QRResult(_out(q), _out(r))


def slogdet(x, /):
    """Sign and natural log of the absolute value of the determinant."""
    sign, logabs = np.linalg.slogdet(_in_memory(x, "slogdet"))
    return SlogdetResult(_out(sign), _out(logabs))


def solve(x1, x2, /):
    """The solution of ``x1 @ result == x2`` (NumPy's broadcasting rules; a 1-d `x2` is
    one right-hand side)."""
    a = _in_memory(x1, "solve")
    b = _in_memory(x2, "solve", min_ndim=1)
    if b.ndim == 1:
        return _out(np.linalg.solve(a, b[..., None])[..., 0])
    return _out(np.linalg.solve(a, b))


def svd(x, /, *, full_matrices=True):
    """The singular value decomposition ``U @ diag(S) @ Vh``."""
    u, s, vh = np.linalg.svd(_in_memory(x, "svd"), full_matrices=full_matrices)
    return SVDResult(_out(u), _out(s), _out(vh))


def svdvals(x, /):
    """The singular values, descending."""
    return _out(np.linalg.svd(_in_memory(x, "svdvals"), compute_uv=False))
