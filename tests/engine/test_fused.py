"""Fused per-block evaluation (csrc/math/fused.c, ndpack/engine/run/fused.py): float64
arithmetic trees decoded, evaluated and encoded block by block in the C core.  NumPy
is the oracle, bit for bit; the general path is checked to give the same, and to take
the groups the fused program does not."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack._core import FusedProgram
from ndpack.engine.expr.nodes import operands_of
from ndpack.engine.expr.parse import parse
from ndpack.engine.run import aligned, fused

LZ4 = {"codec": ndpack.Codec.LZ4, "clevel": 5}

# (text, NumPy's function): +, -, *, /, negation, constants of every kind that NumPy
# makes float64 with a float64 array
CASES = [
    ("a + b + c", lambda a, b, c: a + b + c),
    ("a * 2.5 - b / 3 + c", lambda a, b, c: a * 2.5 - b / 3 + c),
    ("-(a - b) * (c + 1)", lambda a, b, c: -(a - b) * (c + 1)),
    ("1 / a + 2", lambda a, b, c: 1 / a + 2),
    ("(a * b) + c", lambda a, b, c: a * b + c),          # never an FMA
    ("a / b / c - a", lambda a, b, c: a / b / c - a),
    ("((((a + b) * c - a) / b + c) * a - b) / c", lambda a, b, c:
     ((((a + b) * c - a) / b + c) * a - b) / c),
]


# float32 trees (computed in float32, Python scalars taking the arrays' type as NumPy
# does) and the unary steps: square (``**2``) and square root (``**0.5``)
CASES_MORE = [
    ("a**2 + b**2 + 2*a*b + 1", lambda a, b, c: a**2 + b**2 + 2 * a * b + 1),
    ("sqrt(a*a + b*b) - c", lambda a, b, c: np.sqrt(a * a + b * b) - c),
    ("square(a - c) / (sqrt(b) + 0.1)", lambda a, b, c: np.square(a - c) / (np.sqrt(b) + 0.1)),
    ("-sqrt(c) * 0.3 + a", lambda a, b, c: -np.sqrt(c) * 0.3 + a),
]


def _values(shape, seed, special=False):
    rng = np.random.default_rng(seed)
    x = {k: rng.normal(size=shape) * 10 for k in "abc"}
    if special:                        # NaN, infinities, signed zeros, tiny values
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, 1e308, -1e308])
        for k in "abc":
            flat = x[k].reshape(-1)
            flat[rng.integers(0, flat.size, flat.size // 3)] = rng.choice(pool, flat.size // 3)
    return x


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = f"u{want.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


@pytest.mark.parametrize("text, f", CASES + CASES_MORE)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [False, True])
def test_fused_compute_gives_numpys_bits(text, f, dtype, special):
    """compute() and [()] through the fused program: NumPy's bits, special values
    included.  float32 operands run a float32 program (NumPy computes ``a * 2.5`` of a
    float32 array in float32); square, ``**2``, sqrt and ``**0.5`` in both types."""
    x = {k: v.astype(dtype) for k, v in _values((70, 90), 2, special).items()}
    nd = {k: ndpack.asarray(v, chunks=(32, 90), blocks=(8, 90), cparams=LZ4)
          for k, v in x.items()}
    aligned.FUSED.clear()
    with np.errstate(all="ignore"):
        want = f(**x)
        got = ndpack.lazyexpr(text, operands=nd).compute(cparams=LZ4)
        read = ndpack.lazyexpr(text, operands=nd)[()]
    assert want.dtype == dtype
    assert aligned.FUSED["fused"] > 0 and aligned.FUSED["general"] == 0
    _same_bits(got[()], want)
    _same_bits(read, want)


def test_float32_programs_take_only_float32_trees():
    """Mixed float32/float64 operands, NumPy float64 scalars (strong: the result is
    float64), constants overflowing float32 and other exponents go the general way."""
    x = _values((40, 30), 6)
    f4 = {k: ndpack.asarray(v.astype(np.float32), chunks=(16, 30), blocks=(4, 30))
          for k, v in x.items()}
    f8 = ndpack.asarray(x["c"], chunks=(16, 30), blocks=(4, 30))
    for text, ops, want in [
            ("a + c", {"a": f4["a"], "c": f8}, x["a"].astype(np.float32) + x["c"]),
            ("a * 1e300", f4, x["a"].astype(np.float32) * np.float32(np.inf)),
            ("a**3 + b", f4, x["a"].astype(np.float32)**3 + x["b"].astype(np.float32))]:
        node = parse(text, ops)
        assert fused.program(node, operands_of(node)) is None, text
        with np.errstate(all="ignore"):
            got = ndpack.lazyexpr(text, operands=ops).compute()[()]
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    node = parse("a * 2.5 + b", f4)
    assert fused.program(node, operands_of(node)).itemsize == 4


@settings(deadline=None, max_examples=30)
@given(data=st.data())
def test_fused_over_any_layout(data):
    """Shapes, chunks and blocks drawn (edge chunks padded, blocks not dividing the
    chunk), compute in memory and to a file, and [()]: NumPy's bits each time."""
    nd_ = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 40), min_size=nd_, max_size=nd_)))
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    blocks = tuple(data.draw(st.integers(1, c)) for c in chunks)
    text, f = data.draw(st.sampled_from(CASES + CASES_MORE))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    x = {k: v.astype(dtype) for k, v in
         _values(shape, data.draw(st.integers(0, 99)), data.draw(st.booleans())).items()}
    nd = {k: ndpack.asarray(v, chunks=chunks, blocks=blocks, cparams=LZ4)
          for k, v in x.items()}
    with np.errstate(all="ignore"):
        want = f(**x)
        _same_bits(ndpack.lazyexpr(text, operands=nd).compute(cparams=LZ4)[()], want)
        _same_bits(ndpack.lazyexpr(text, operands=nd)[()], want)


def test_special_chunks_take_the_general_path(tmp_path):
    """A chunk of zeros (stored as a special chunk) is not decoded by the fused program:
    its groups go the general way, and every value is still NumPy's."""
    x = _values((64, 50), 3)
    x["a"][:32] = 0.0                         # chunk 0 of `a` is all zeros
    nd = {k: ndpack.asarray(v, chunks=(32, 50), blocks=(8, 50), cparams=LZ4)
          for k, v in x.items()}
    assert nd["a"].schunk.iterchunks_info().__next__().special != 0
    aligned.FUSED.clear()
    r = ndpack.lazyexpr("a * 2 + b - c", operands=nd).compute(
        urlpath=str(tmp_path / "r.b2nd"), mode="w", cparams=LZ4)
    _same_bits(r[()], x["a"] * 2 + x["b"] - x["c"])
    assert aligned.FUSED["fused"] > 0


def test_trees_that_do_not_qualify_compute_generally():
    x = _values((40, 30), 4)
    nd = {k: ndpack.asarray(v, chunks=(16, 30), blocks=(4, 30), cparams=LZ4)
          for k, v in x.items()}
    f32 = ndpack.asarray(x["c"].astype(np.float32), chunks=(16, 30), blocks=(4, 30))
    for text, ops, want in [
            ("sin(a) + b", nd, np.sin(x["a"]) + x["b"]),
            ("a + b > c", nd, x["a"] + x["b"] > x["c"]),
            ("a + c", {"a": nd["a"], "c": f32}, x["a"] + x["c"].astype(np.float32))]:
        node = parse(text, ops)
        assert fused.program(node, operands_of(node)) is None, text
        aligned.FUSED.clear()
        got = ndpack.lazyexpr(text, operands=ops).compute()
        np.testing.assert_allclose(got[()], want, rtol=1e-15)
        assert aligned.FUSED["fused"] == 0


def test_python_blosc2_files_are_read_by_the_fused_program(tmp_path):
    blosc2 = pytest.importorskip("blosc2")
    x = _values((50, 60), 5)
    for k, v in x.items():
        blosc2.asarray(v, chunks=(20, 60), blocks=(5, 60), urlpath=str(tmp_path / f"{k}.b2nd"),
                       mode="w", cparams={"codec": blosc2.Codec.LZ4, "clevel": 5})
    nd = {k: ndpack.open(str(tmp_path / f"{k}.b2nd")) for k in "abc"}
    aligned.FUSED.clear()
    got = ndpack.lazyexpr("(a - b) * c / 2", operands=nd).compute(cparams=LZ4)
    _same_bits(got[()], (x["a"] - x["b"]) * x["c"] / 2)
    assert aligned.FUSED["fused"] > 0


def test_bad_programs_are_refused():
    for code, arg, consts, nin in [
            (bytes([1, 4]), [0, 0], [], 1),             # too few values
            (bytes([1, 1]), [0, 1], [], 2),             # two values left
            (bytes([2, 3]), [0, 0], [1.0], 1),          # negating a constant
            (bytes([2, 2, 4]), [0, 0, 0], [1.0], 1),    # no array
            (bytes([1]), [3], [], 2),                   # no operand 3
            (bytes([1, 10]), [0, 0], [], 1),            # unknown step
            (bytes([2, 8]), [0, 0], [1.0], 1),          # squaring a constant
            (bytes([1, 9, 9, 4]), [0, 0, 0, 0], [], 1), # one value for two
            (bytes([1] * 17 + [4] * 16), [0] * 33, [], 1),   # 17 values at once
            (b"", [], [], 1)]:
        with pytest.raises(ndpack.ParameterError):
            FusedProgram(code, arg, consts, nin)
    with pytest.raises(ndpack.ParameterError, match="4- or 8-byte"):
        FusedProgram(bytes([1]), [0], [], 1, 2)


def test_run_checks_its_buffers():
    a = ndpack.asarray(np.arange(64.0), chunks=(64,), blocks=(16,), cparams=LZ4)
    chunk = a.schunk.get_chunk(0)
    prog = FusedProgram(bytes([1, 2, 4]), [0, 0, 0], [1.0], 1)
    out = np.empty(64)
    assert prog.run([chunk], np.arange(4, dtype=np.int32), out, 512, 128)
    np.testing.assert_array_equal(out, np.arange(64.0) + 1)
    assert not prog.run([chunk], np.arange(2, dtype=np.int32), out, 512, 256)  # layout
    with pytest.raises(ndpack.ParameterError):
        prog.run([chunk], np.arange(4, dtype=np.int32), np.empty(10), 512, 128)
    with pytest.raises(ndpack.ParameterError):
        prog.run([chunk, chunk], np.arange(4, dtype=np.int32), out, 512, 128)
    with pytest.raises(ndpack.ParameterError):
        prog.run([chunk], np.array([7], np.int32), out, 512, 128)    # no block 7
    with pytest.raises(ndpack.FormatError):
        prog.run([b"\x00" * 40], np.arange(4, dtype=np.int32), out, 512, 128)
