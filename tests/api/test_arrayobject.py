"""The array API array object protocol on NDArray and LazyExpr: the namespace,
conversions of one-element arrays, devices, DLPack, transposes (NumPy is the oracle)."""

import numpy as np
import pytest

import ndpack

array_api_compat = pytest.importorskip("array_api_compat")


def _arrays(x):
    nd = ndpack.asarray(x, chunks=tuple(max(1, s // 2) for s in x.shape) or None)
    return [nd, ndpack.lazyexpr("a", operands={"a": nd})]   # an NDArray and a LazyExpr


def test_namespace_is_found():
    for arr in _arrays(np.arange(12.0).reshape(3, 4)):
        assert arr.__array_namespace__() is ndpack
        assert arr.__array_namespace__(api_version="2024.12") is ndpack
        assert array_api_compat.array_namespace(arr) is ndpack
        with pytest.raises(ValueError, match="api_version"):
            arr.__array_namespace__(api_version="2019.01")


@pytest.mark.parametrize("value", [0.0, -2.5, 7, True, False, 3 + 4j])
def test_conversions_of_one_element(value):
    x = np.array(value)
    for arr in _arrays(x) + _arrays(x.reshape(1, 1)):
        assert bool(arr) == bool(x)
        if x.dtype.kind != "c":
            assert int(arr) == int(x) and float(arr) == float(x)
        else:
            with pytest.raises(TypeError):
                float(arr)
        assert complex(arr) == complex(x)


def test_conversions_refuse_many_elements():
    for arr in _arrays(np.arange(6.0).reshape(2, 3)):
        with pytest.raises(ValueError, match="ambiguous"):
            bool(arr)
        with pytest.raises(TypeError, match="one element"):
            float(arr)
        with pytest.raises(TypeError, match="integer arrays"):
            arr.__index__()
    for arr in _arrays(np.arange(6).reshape(2, 3)):
        with pytest.raises(TypeError, match="0-d integer"):
            arr.__index__()


def test_index():
    for arr in _arrays(np.array(3, dtype=np.int16)):
        assert [10, 11, 12, 13][arr] == 13 and arr.__index__() == 3
    for arr in _arrays(np.array(3.0)):
        with pytest.raises(TypeError, match="integer arrays"):
            [1, 2][arr]


def test_device():
    for arr in _arrays(np.ones((2, 2))):
        assert arr.device == "cpu" and arr.to_device("cpu") is arr
        with pytest.raises(ValueError, match="device must be 'cpu'"):
            arr.to_device("cuda:0")


@pytest.mark.parametrize("dtype", ["f8", "f4", "i2", "u8", "c16", "?"])
def test_dlpack(dtype):
    x = (np.arange(24) % 3).astype(dtype).reshape(2, 3, 4)
    for arr in _arrays(x):
        assert arr.__dlpack_device__() == (1, 0)
        got = np.from_dlpack(arr)
        assert got.dtype == x.dtype and np.array_equal(got, x)
        with pytest.raises(BufferError, match="copy"):
            arr.__dlpack__(copy=False)


def test_transposes_of_expressions():
    x = np.arange(24.0).reshape(2, 3, 4)
    e = ndpack.asarray(x) * 2
    np.testing.assert_array_equal(e.mT[()], np.swapaxes(x * 2, -1, -2))
    m = ndpack.asarray(x[0]) + 1
    np.testing.assert_array_equal(m.T[()], (x[0] + 1).T)
    with pytest.raises(ValueError, match="2-d"):
        e.T


CREATION = {
    "asarray": lambda **kw: ndpack.asarray(np.arange(4.0), **kw),
    "arange": lambda **kw: ndpack.arange(5, **kw),
    "linspace": lambda **kw: ndpack.linspace(0, 1, 5, **kw),
    "empty": lambda **kw: ndpack.empty((2, 3), **kw),
    "zeros": lambda **kw: ndpack.zeros((2, 3), **kw),
    "ones": lambda **kw: ndpack.ones((2, 3), **kw),
    "full": lambda **kw: ndpack.full((2, 3), 1.5, **kw),
    "eye": lambda **kw: ndpack.eye(3, **kw),
    "empty_like": lambda **kw: ndpack.empty_like(ndpack.zeros(3), **kw),
    "zeros_like": lambda **kw: ndpack.zeros_like(ndpack.zeros(3), **kw),
    "ones_like": lambda **kw: ndpack.ones_like(ndpack.zeros(3), **kw),
    "full_like": lambda **kw: ndpack.full_like(ndpack.zeros(3), 2, **kw),
    "from_dlpack": lambda **kw: ndpack.from_dlpack(np.arange(3.0), **kw),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation_takes_device(name):
    import inspect
    param = inspect.signature(getattr(ndpack, name)).parameters["device"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None
    a, b = CREATION[name](), CREATION[name](device="cpu")
    assert isinstance(b, ndpack.NDArray) and b.device == "cpu"
    if name != "empty" and name != "empty_like":
        np.testing.assert_array_equal(a[()], b[()])
    with pytest.raises(ValueError, match="device must be 'cpu'"):
        CREATION[name](device="cuda")


def test_from_dlpack():
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    a = ndpack.from_dlpack(x, chunks=(2, 2))
    assert a.chunks == (2, 2) and np.array_equal(a[()], x)
    np.testing.assert_array_equal(ndpack.from_dlpack(ndpack.asarray(x))[()], x)
    with pytest.raises(ValueError, match="always copies"):
        ndpack.from_dlpack(x, copy=False)


INPLACE = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="]


@pytest.mark.parametrize("op", INPLACE)
@pytest.mark.parametrize("dtype", ["i4", "f8", "u1", "?"])
def test_inplace_operators_match_numpy(op, dtype, tmp_path):
    rng = np.random.default_rng(7)
    x = (rng.integers(1, 5, size=(6, 10)) if dtype != "?" else rng.integers(0, 2, (6, 10)))
    x = x.astype(dtype)
    y = x[::-1].copy() if dtype == "?" else (x[::-1] % 3 + 1).astype(dtype)
    want = x.copy()
    try:
        with np.errstate(all="ignore"):
            exec(f"want {op} y")                       # noqa: S102 -- the test's own text
    except TypeError:                                  # NumPy refuses it: so do we
        a = ndpack.asarray(x, chunks=(4, 5), blocks=(2, 5))
        with pytest.raises(TypeError):
            exec(f"a {op} y")                          # noqa: S102
        return
    for where in ("memory", "disk"):
        path = None if where == "memory" else tmp_path / f"a{INPLACE.index(op)}.b2nd"
        a = ndpack.asarray(x, chunks=(4, 5), blocks=(2, 5), urlpath=path, mode="w")
        same = a
        with np.errstate(all="ignore"):
            exec(f"a {op} y")                          # noqa: S102
        assert a is same
        np.testing.assert_array_equal(a[()], want)
        if path is not None:
            np.testing.assert_array_equal(ndpack.open(path)[()], want)


def test_inplace_reads_before_it_writes():
    x = np.arange(40.0).reshape(8, 5)
    a = ndpack.asarray(x, chunks=(2, 5), blocks=(1, 5))
    a += ndpack.lazyexpr("a[::-1]", operands={"a": a})     # a view of the target itself
    np.testing.assert_array_equal(a[()], x + x[::-1])
    a *= a
    np.testing.assert_array_equal(a[()], (x + x[::-1]) ** 2)


def test_inplace_bad_input(tmp_path):
    a = ndpack.asarray(np.arange(6))
    with pytest.raises(TypeError, match="same_kind"):
        a += 1.5
    with pytest.raises(ValueError, match="shape"):
        a += np.ones((2, 6), dtype=int)
    np.testing.assert_array_equal(a[()], np.arange(6))      # untouched
    ndpack.asarray(np.arange(6), urlpath=tmp_path / "r.b2nd", mode="w")
    r = ndpack.open(tmp_path / "r.b2nd", mode="r")
    with pytest.raises(ndpack.ParameterError, match="mode 'r'"):
        r += 1


def test_asarray_copy_keyword():
    x = np.arange(6.0)
    a = ndpack.asarray(x)
    assert ndpack.asarray(a) is a and ndpack.asarray(a, copy=False) is a
    b = ndpack.asarray(a, copy=True)
    assert b is not a and np.array_equal(b[()], x)
    for bad in (x, [1, 2, 3]):
        with pytest.raises(ValueError, match="copy=False"):
            ndpack.asarray(bad, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        ndpack.asarray(a, copy=False, dtype=np.float32)


class _OnDevice:
    """A DLPack exporter whose data lives on another device (kDLCUDA)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise BufferError("data is on the device; cannot export to the host")


@pytest.mark.parametrize("kind", ["ndarray", "lazyexpr"])
def test_dlpack_keywords_as_the_standard(kind):
    """__dlpack__ with max_version= (old and new consumers), dl_device= (the CPU only),
    copy= (True and None copy; False is a BufferError) and stream=None; from_dlpack with
    copy=True/None, device="cpu"/(1, 0)/None and the standard's errors."""
    x = np.arange(12.0).reshape(3, 4)
    a = ndpack.asarray(x) if kind == "ndarray" else ndpack.asarray(x) + 0
    for kw in ({}, {"max_version": None}, {"max_version": (1, 0)}, {"max_version": (0, 8)},
               {"dl_device": (1, 0)}, {"copy": True}, {"copy": None}, {"stream": None}):
        assert type(a.__dlpack__(**kw)).__name__ == "PyCapsule", kw
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        a.__dlpack__(copy=False)
    for kw in ({}, {"copy": True}, {"copy": None}, {"device": "cpu"}, {"device": (1, 0)}):
        got = ndpack.from_dlpack(a, **kw)
        assert isinstance(got, ndpack.NDArray) and got.device == "cpu"
        np.testing.assert_array_equal(got[()], x)
        np.testing.assert_array_equal(np.from_dlpack(a), x)     # as a consumer sees it
    with pytest.raises(ValueError):                 # the standard: ValueError (and BufferError)
        ndpack.from_dlpack(a, copy=False)
    with pytest.raises(BufferError):
        ndpack.from_dlpack(a, copy=False)
    with pytest.raises(AttributeError):
        ndpack.from_dlpack([1.0, 2.0])
    with pytest.raises(BufferError, match="device"):
        ndpack.from_dlpack(_OnDevice())
    with pytest.raises(ValueError, match="device must be 'cpu'"):
        ndpack.from_dlpack(a, device="cuda")
