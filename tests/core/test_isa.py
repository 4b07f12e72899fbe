"""Every SIMD path equals the scalar reference byte for byte."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ndpack
from ndpack import _core

ISAS = ["scalar", "sse2", "avx2"]


def _available():
    found = []
    current = _core.isa()
    for name in ISAS:
        try:
            _core.set_isa(name)
            found.append(name)
        except ValueError:
            pass
    _core.set_isa(current)
    return found


@pytest.fixture
def restore_isa():
    current = _core.isa()
    yield
    _core.set_isa(current)


def _chunks_for(isa, payloads):
    _core.set_isa(isa)
    out = []
    for data, typesize, filters in payloads:
        c = ndpack.compress2(data, typesize=typesize, filters=filters, nthreads=1,
                             codec=ndpack.Codec.LZ4, blocksize=0)
        out.append(c)
        assert ndpack.decompress2(c) == data
    return out


def test_scalar_always_available():
    assert "scalar" in _available()


def test_all_isas_identical(restore_isa):
    rng = np.random.default_rng(5)
    payloads = []
    F = ndpack.Filter
    for typesize in (1, 2, 3, 4, 7, 8, 16, 17, 32):
        for n in (0, 5, 31, 64, 100, 257, 4096 + 13, 65_536 + 7, 300_001):
            n -= n % typesize
            data = (np.arange(n) // 3 % 251 + rng.integers(0, 3, n)).astype(np.uint8).tobytes()
            for filters in ([F.SHUFFLE], [F.BITSHUFFLE], [F.SHUFFLE, F.BYTEDELTA],
                            [F.BITSHUFFLE, F.SHUFFLE]):
                payloads.append((data, typesize, filters))
    reference = _chunks_for("scalar", payloads)
    for isa in _available():
        assert _chunks_for(isa, payloads) == reference, isa


@pytest.mark.parametrize("isa", ISAS)
def test_env_var_forces_isa(isa):
    if isa not in _available():
        pytest.skip(f"{isa} not available here")
    code = "import ndpack._core as c; print(c.isa())"
    env = dict(os.environ, NDPACK_ISA=isa)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == isa


def test_unknown_isa_rejected(restore_isa):
    with pytest.raises(ValueError, match="neon"):
        _core.set_isa("neon")
