"""No unbounded work from input and no silently accepted bad arguments (issue 23,
items 3 and 5): expression constants never reach a Python big-integer computation,
numexpr never compiles text that Python's eval could make expensive, and thread counts,
typesizes, clevels and ``out=`` casts are checked, naming the argument."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ndpack
from ndpack.chunks import decompress_blocks
from ndpack.engine.run.kernel import numexpr_text
from ndpack.engine.expr.parse import parse
from ndpack.engine.expr.nodes import operands_of

BIG = str(10**30)


def _in_subprocess(code: str, timeout: float = 60) -> str:
    """Run `code` in a fresh interpreter (a hang fails the test instead of the run)."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


# --- constants -----------------------------------------------------------------------------

def test_power_tower_of_constants_returns():
    """``2**2**40`` never returned: numexpr's eval computed the Python integer.  Now a
    clean OverflowError at once (constants fold with a bit bound, see the parser), also
    inside larger expressions and through lazyexpr."""
    out = _in_subprocess("""
        import numpy as np, ndpack
        a = np.arange(5)
        for make in (lambda: ndpack.evaluate("2**2**40"),
                     lambda: ndpack.evaluate("a + 2**2**40"),
                     lambda: ndpack.lazyexpr("a * 2**2**40 + 1", operands={"a": a})[()],
                     lambda: ndpack.evaluate("a + 3**3**3**3",
                                             local_dict={"a": ndpack.asarray(a)})):
            try:
                make()
                print("value")
            except OverflowError:
                print("OverflowError")
    """, timeout=60)
    assert out.split() == ["OverflowError"] * 4


def test_saved_expression_with_a_power_tower(tmp_path):
    """A carrier whose stored expression text is ``a + 2**2**40`` (hand-edited: ndpack
    would not write it) opens or fails at once."""
    out = _in_subprocess(f"""
        import numpy as np, ndpack
        from ndpack.storage.dispatch import open as open_storage
        a = ndpack.asarray(np.arange(5), urlpath={str(tmp_path / 'a.b2nd')!r}, mode="w")
        ndpack.lazyexpr("a + 2**2", operands={{"a": a}}).save({str(tmp_path / 'e.b2nd')!r})
        s = open_storage({str(tmp_path / 'e.b2nd')!r}, mode="a")
        meta = s.vlmeta["b2o"]
        assert meta["expression"] == "a + 4", meta      # (saved as python-blosc2 writes it)
        meta["expression"] = "a + 2**2**40"
        s.vlmeta["b2o"] = meta
        del s
        try:
            print(ndpack.open({str(tmp_path / 'e.b2nd')!r})[()].tolist())
        except (OverflowError, ndpack.FormatError) as exc:
            print(type(exc).__name__)
    """)
    assert out.strip() in ("OverflowError", "FormatError")


def test_numexpr_text_holds_no_constant_subexpression():
    """The text numexpr compiles (with Python's eval) has folded constants only."""
    out = _in_subprocess("""
        import numpy as np
        from ndpack.engine.run.kernel import numexpr_text
        from ndpack.engine.expr.parse import parse
        from ndpack.engine.expr.nodes import Apply, Constant, Operand, operands_of
        a = np.arange(5)
        for text in ("a * (2 * 3) + 2**62", "a + (7 * 8) - 2**62", "(a > 1) & (2 > 1)"):
            node = parse(text, {"a": a})
            print(numexpr_text(node, operands_of(node)))
        # a tree built without the parser (the array API functions) folds too
        node = Apply("add", (Operand(a, "a"), Apply("power", (Constant(2), Apply(
            "power", (Constant(2), Constant(40)))))))
        print(numexpr_text(node, operands_of(node)))
    """, timeout=30)
    lines = out.splitlines()
    assert lines[1] == "((o0 + 56) - 4611686018427387904)" and lines[2] == "((o0 > 1) & True)"
    assert "*" not in lines[0].replace("o0 *", "") and "**" not in lines[3], lines


@pytest.mark.parametrize("text, kind", [
    (f"a + {BIG}", "float"),            # NumPy: a Python int meets a float array
    (f"b + {BIG}", OverflowError),      # ... and an int array: OverflowError
    (f"abs({BIG})", OverflowError),     # constants only: never Python objects
    (f"square(square(square(-{BIG})))", OverflowError),
    (f"{BIG} + 1", "exact"),            # Python numbers fold as Python's (bounded)
    (f"{BIG} * 1.5", "float"),
    (f"sin(a) * {BIG}", "float"),
])
def test_big_integer_constants_follow_numpy(text, kind):
    names = {"a": ndpack.asarray(np.arange(4.0)), "b": np.arange(4)}
    if kind == "exact":
        assert ndpack.evaluate(text, local_dict=names) == eval(text)
    elif kind == "float":
        got = ndpack.evaluate(text, local_dict=names)
        assert np.asarray(got).dtype == np.float64
        ref = eval(text.replace("sin", "np.sin"), {"np": np, "a": np.arange(4.0)})
        np.testing.assert_allclose(got, ref)
    else:
        with pytest.raises(kind):
            ndpack.evaluate(text, local_dict=names)


def test_big_literal_is_not_handed_to_numexpr():
    b = np.arange(4)
    node = parse("b + 9223372036854775807", {"b": b})
    assert "9223372036854775807" in numexpr_text(node, operands_of(node))
    node = parse(f"b * 1.5 + {BIG}", {"b": b})
    assert numexpr_text(node, operands_of(node)) is None


# --- arguments -----------------------------------------------------------------------------

X = np.arange(1000.0)


@pytest.mark.parametrize("kw, name", [
    ({"nthreads": 0}, "nthreads"), ({"nthreads": -1}, "nthreads"),
    ({"typesize": 300}, "typesize"), ({"typesize": 256}, "typesize"),
    ({"typesize": 0}, "typesize"), ({"clevel": 10}, "clevel"), ({"clevel": -1}, "clevel"),
    ({"cparams": {"nthreads": 0}}, "nthreads"), ({"nthreads": 1.5}, "nthreads"),
    ({"cparams": {"clevel": True}}, "clevel"),
])
def test_compress_arguments(kw, name):
    with pytest.raises(ndpack.ParameterError, match=name):
        ndpack.compress2(X, **kw)


@pytest.mark.parametrize("kw", [{"nthreads": 0}, {"nthreads": -1}, {"dparams": {"nthreads": 0}},
                                {"dparams": ndpack.DParams(nthreads=1), "nthreads": 0}])
def test_decompress_thread_counts(kw):
    c = ndpack.compress2(X)
    with pytest.raises(ndpack.ParameterError, match="nthreads"):
        ndpack.decompress2(c, **kw)


def test_params_objects_check_fields():
    for kw in ({"nthreads": 0}, {"typesize": 300}, {"clevel": 12}):
        with pytest.raises(ndpack.ParameterError, match=next(iter(kw))):
            ndpack.CParams(**kw)
    with pytest.raises(ndpack.ParameterError, match="nthreads"):
        ndpack.DParams(nthreads=0)
    cp = ndpack.CParams()
    cp.nthreads = 0                            # fields stay assignable: checked at use
    with pytest.raises(ndpack.ParameterError, match="nthreads"):
        ndpack.compress2(X, cparams=cp)
    with pytest.raises(ndpack.ParameterError, match="nthreads"):
        decompress_blocks(ndpack.compress2(X), [0], nthreads=0)


def test_constructors_refuse_bad_params(tmp_path):
    for kw in ({"cparams": {"nthreads": 0}}, {"dparams": {"nthreads": -1}},
               {"cparams": {"clevel": 11}}, {"cparams": {"typesize": 300}}):
        with pytest.raises(ndpack.ParameterError):
            ndpack.asarray(X, **kw)
        with pytest.raises(ndpack.ParameterError):
            ndpack.SChunk(chunksize=800, data=X, **kw)
        with pytest.raises(ndpack.ParameterError):
            ndpack.asarray(X, urlpath=tmp_path / "x.b2nd", mode="w", **kw)
        assert not (tmp_path / "x.b2nd").exists()


def test_wide_items_still_store_with_typesize_1(tmp_path):
    """Items wider than 255 bytes: C-Blosc2's typesize 1, as before (no error)."""
    x = np.array([bytes([65 + i]) * 300 for i in range(7)], dtype="S300")
    a = ndpack.asarray(x, urlpath=tmp_path / "w.b2nd", mode="w")
    np.testing.assert_array_equal(ndpack.open(tmp_path / "w.b2nd")[...], x)
    assert a.cparams.typesize == 1
    s = ndpack.SChunk(data=x)
    assert s.typesize == 1 and s[:] == x.tobytes()


@pytest.mark.parametrize("kind", ["numpy", "ndarray"])
@pytest.mark.parametrize("expr", ["a * 1.5", "sin(a)", "a", "a + 0.5"])
def test_out_cast_follows_same_kind(kind, expr):
    """float64 into int8 was truncated on some paths (NDArray operands, sin, copies)."""
    x = np.arange(100.0) * 0.7
    a = ndpack.asarray(x) if kind == "ndarray" else x
    for bad in (np.int8, np.int64, np.bool_):
        out = np.zeros(100, bad)
        with pytest.raises(TypeError, match="out"):
            ndpack.evaluate(expr, local_dict={"a": a}, out=out)
        assert not out.any()
    with pytest.raises(TypeError, match="out"):
        ndpack.evaluate(expr, local_dict={"a": a}, out=ndpack.zeros(100, dtype=np.int16))
    ok = np.zeros(100, np.float32)                 # same kind: allowed, as in NumPy
    ndpack.evaluate(expr, local_dict={"a": a}, out=ok)
    ref = eval(expr.replace("sin", "np.sin"), {"np": np, "a": x})
    np.testing.assert_allclose(ok, ref.astype(np.float32), rtol=1e-6)


def test_out_cast_through_numpy_ufuncs():
    a = ndpack.asarray(np.arange(10.0) * 0.3)
    with pytest.raises(TypeError, match="same_kind"):
        np.sin(a, out=np.zeros(10, np.int32))
    out = np.zeros(10, np.int64)
    ndpack.evaluate("a > 1", local_dict={"a": a}, out=out)     # bool into int: allowed
    assert out.tolist() == (np.arange(10.0) * 0.3 > 1).astype(int).tolist()


def test_hostile_expressions_finish_quickly():
    """A batch of constant-heavy strings, each in a subprocess batch with a deadline."""
    texts = ["2**2**40", "2**2**2**2**2", "(10**18)**(10**18)", "9**9**9**9",
             "(2**62)*(2**62)*(2**62)", "1 << 2**40", "-(2**2**40)", "2**-2**40",
             "10**400.0", "abs(-2**63)", "((2**2)**2)**2**40", "~(2**2**40)",
             "7 // (2**2**40)", "7 % (2**2**40)", "where(True, 2**2**40, 1)"]
    code = "import ndpack\nfor t in %r:\n" \
           "    try:\n        ndpack.evaluate(t, local_dict={})\n" \
           "    except (ArithmeticError, ValueError, TypeError):\n        pass\n" \
           "print('done')\n" % (texts,)
    assert _in_subprocess(code, timeout=60).strip() == "done"


def test_failed_allocation_is_a_memory_error():
    """A chunk that decodes to 2 GB under a 1 GiB limit: MemoryError (the binding raised
    a second MemoryError while one was pending: a SystemError)."""
    out = _in_subprocess("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        import ndpack
        from ndpack.chunks import special_chunk
        c = special_chunk(ndpack.SpecialValue.ZERO, 2**31 - 1024, 1, 1 << 20)
        try:
            ndpack.decompress(c)
        except BaseException as exc:
            print(type(exc).__name__)
    """)
    assert out.strip() == "MemoryError"


def test_lengths_read_from_a_file_never_allocate_beyond_it(tmp_path):
    """A chunk length taken from a mutated frame header (found by tests/tools/fuzzing.py,
    seed 0 case 5698: 2**63 bytes) is a FormatError, never a MemoryError."""
    from ndpack.storage.framefile import _Reader, _read_exact
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 1000)
    fd = os.open(path, os.O_RDONLY)
    try:
        reader = _Reader(fd=fd)
        with pytest.raises(ndpack.FormatError, match="truncated"):
            _read_exact(reader, 900, 2**63 - 1000, "chunk 1")
        assert bytes(_read_exact(reader, 10, 20, "chunk 0")) == b"x" * 20
    finally:
        os.close(fd)
