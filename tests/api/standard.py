"""What the tests of tests/api share about the standard they check against: its
reference implementation, array_api_strict, held at revision 2024.12 (``xp``), the
hypothesis strategies drawn from it (``xps``), and the functions of its ``linalg`` and
``fft`` extensions (``EXTENSIONS``: ``(module, name)`` pairs).

A test file that imports it is skipped as a whole where array_api_strict is missing."""

import pytest

VERSION = "2024.12"

xp = pytest.importorskip("array_api_strict")
xp.set_array_api_strict_flags(api_version=VERSION)
from hypothesis.extra.array_api import make_strategies_namespace  # noqa: E402

xps = make_strategies_namespace(xp, api_version=VERSION)

LINALG = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
          "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
          "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
          "vector_norm"]
FFT = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
       "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
EXTENSIONS = [("linalg", n) for n in LINALG] + [("fft", n) for n in FFT]
