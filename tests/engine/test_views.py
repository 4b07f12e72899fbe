"""Subscripts and ``.T`` inside string expressions, against NumPy."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndpack
from ndpack.engine.expr.views import SliceView, TransposeView


class Exploding:
    def __init__(self, shape, dtype="f8"):
        self.shape, self.dtype = shape, np.dtype(dtype)

    def __getitem__(self, key):
        raise AssertionError("operand was read")


def _slice_text(s):
    parts = ["" if v is None else str(v) for v in (s.start, s.stop, s.step)]
    return ":".join(parts) if s.step is not None else ":".join(parts[:2])


def _key_text(key):
    out = []
    for k in key:
        if isinstance(k, slice):
            out.append(_slice_text(k))
        elif k is None:
            out.append("None")
        elif k is Ellipsis:
            out.append("...")
        else:
            out.append(str(k))
    return ", ".join(out)


@st.composite
def keys(draw, shape):
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "slice", "int", "none"]))
        if kind == "int" and n > 0:
            key.append(draw(st.integers(-n, n - 1)))
            continue
        if kind == "none":
            key.append(None)
        lo = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        hi = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        step = draw(st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3])))
        key.append(slice(lo, hi, step))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), Ellipsis)
    return tuple(key)


@given(st.data())
def test_subscripts_match_numpy(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)))
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    key = data.draw(keys(shape))
    expected = x[key]
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    a = ndpack.asarray(x, chunks=chunks)
    text = f"a[{_key_text(key)}] * 2"
    e = ndpack.lazyexpr(text, operands={"a": a})
    assert e.shape == expected.shape
    np.testing.assert_array_equal(e[()], expected * 2)
    if expected.ndim:
        sub = data.draw(keys(expected.shape))
        np.testing.assert_array_equal(e[sub], (expected * 2)[sub])
    t = ndpack.lazyexpr(f"sin(a)[{_key_text(key)}].T", operands={"a": a})
    np.testing.assert_allclose(t[()], np.sin(x)[key].T, rtol=1e-15)


@pytest.mark.parametrize("text,oracle", [
    ("a[1:3, ::2] + b[1:3, ::2]", lambda a, b: a[1:3, ::2] + b[1:3, ::2]),
    ("a.T + b.T", lambda a, b: a.T + b.T),
    ("sin(a)[::-1]", lambda a, b: np.sin(a)[::-1]),
    ("a[0] + b[-1]", lambda a, b: a[0] + b[-1]),
    ("a[..., 2, None] * b[None, 3]", lambda a, b: a[..., 2, None] * b[None, 3]),
    ("(a + b)[2:, -1:0:-3].T[0]", lambda a, b: (a + b)[2:, -1:0:-3].T[0]),
    ("a[5:1]", lambda a, b: a[5:1]),
    ("a[::-1][::-1] - a", lambda a, b: a[::-1][::-1] - a),
    ("a.T.T[1] + a[1]", lambda a, b: a.T.T[1] + a[1]),
])
def test_string_subscripts(text, oracle):
    x = np.arange(48.0).reshape(6, 8)
    y = np.linspace(0, 1, 48).reshape(6, 8)
    e = ndpack.lazyexpr(text, operands={"a": ndpack.asarray(x, chunks=(4, 3)), "b": y})
    expected = oracle(x, y)
    assert e.shape == expected.shape
    np.testing.assert_allclose(e[()], expected, rtol=1e-15)
    np.testing.assert_allclose(e.compute()[()], expected, rtol=1e-15)


def test_building_reads_nothing_and_views_read_only_what_is_needed():
    e = ndpack.lazyexpr("a[2:8, ::-1].T + sin(b)[0]", operands={"a": Exploding((10, 4)),
                                                                "b": Exploding((3, 6))})
    assert e.shape == (4, 6)
    x = np.arange(200.0).reshape(20, 10)
    asked = []

    class Rec:
        shape, dtype = x.shape, x.dtype

        def __getitem__(self, key):
            asked.append(key)
            return x[key]
    e = ndpack.lazyexpr("a[4:8, ::-2]", operands={"a": Rec()})
    np.testing.assert_array_equal(e[1:3], x[4:8, ::-2][1:3])
    assert asked == [(slice(5, 7, 1), slice(1, 10, 2))]    # positive steps, 2 rows only


def test_views_over_foreign_arrays(tmp_path):
    h5py = pytest.importorskip("h5py")
    x = np.arange(60.0).reshape(6, 10)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["x"] = x
        d = f["x"]
        e = ndpack.lazyexpr("d[::-2, 1:9:3].T + d[0, :3]", operands={"d": d})  # h5py: no step < 0
        np.testing.assert_array_equal(e[()], x[::-2, 1:9:3].T + x[0, :3])


def test_view_classes():
    x = np.arange(24).reshape(2, 3, 4)
    v = SliceView(x, (None, Ellipsis, slice(None, None, -1)))
    assert v.shape == (1, 2, 3, 4) and v.ndim == 4 and v.size == 24
    np.testing.assert_array_equal(v[0, 1, None, ::2], x[None, ..., ::-1][0, 1, None, ::2])
    np.testing.assert_array_equal(np.asarray(TransposeView(x)), x.T)
    assert v[:, :, 5:].shape == (1, 2, 0, 4)
    with pytest.raises(IndexError):
        v[0, 2]
    with pytest.raises(ValueError):
        v[np.array([0])]


@pytest.mark.parametrize("text", ["a[b]", "a[[0, 1]]", "a[0.5]", "a[i]", "a[1:i]", "a.shape",
                                  "a.T.real", "a[a > 0]", "a[True]", "3[0]", "a[::0]",
                                  "a[0, 0, 0]", "a[7]", "a[:, 'x']", "a.__class__"])
def test_rejected_subscripts_quote_the_text(text):
    ops = {"a": np.ones((3, 4)), "b": np.ones(2, int), "i": 1}
    with pytest.raises(ValueError) as info:
        ndpack.lazyexpr(text, operands=ops)
    frag = text.split("[")[0] if "[" in text else text
    assert frag in str(info.value)


def test_cast_sub_expression_keeps_its_dtype():
    x = (np.arange(60) % 200).astype(np.uint8) + 100
    e = (ndpack.asarray(x) * 2).astype("i2")
    r = ndpack.lazyexpr("e[::-1] + 1", operands={"e": e})
    assert r.dtype == np.int16
    np.testing.assert_array_equal(r[()], (x * 2).astype("i2")[::-1] + 1)
