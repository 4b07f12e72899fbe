"""Foreign operands (h5py, zarr, any object with shape/dtype/__getitem__) on the general
path: values against NumPy, reads aligned to the operands' own chunks, outputs of any
kind, and numexpr used only where it gives NumPy's exact dtype."""

import h5py
import numpy as np
import pytest
import zarr

import ndpack


class Recording:
    """An Array-protocol operand that records the keys it is read with."""

    def __init__(self, data, chunks=None):
        self.data, self.shape, self.dtype = data, data.shape, data.dtype
        if chunks is not None:
            self.chunks = chunks
        self.keys = []

    def __getitem__(self, key):
        self.keys.append(key)
        return self.data[key]


@pytest.mark.parametrize("chunks", [(7, 13), (50, 5), None])
def test_reads_follow_the_operands_chunks(chunks):
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(50, 13))
    rec = Recording(raw, chunks)
    b = ndpack.asarray(rng.normal(size=(50, 13)), chunks=(10, 13))
    expected = np.sin(raw) * b[()]
    np.testing.assert_allclose(ndpack.evaluate("sin(a) * b", local_dict={"a": rec, "b": b}),
                               expected, rtol=1e-14)
    assert rec.keys
    if chunks is not None:
        for key in rec.keys:                 # never straddles a chunk of the operand
            start, stop = key[0].start, key[0].stop
            assert start // chunks[0] == (stop - 1) // chunks[0]


def test_h5py_and_zarr_operands_and_outputs(tmp_path):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(300, 40)), rng.normal(size=(300, 40))
    with h5py.File(tmp_path / "f.h5", "w") as f:
        ha = f.create_dataset("a", data=a, chunks=(32, 40))
        hb = f.create_dataset("b", data=b, chunks=(100, 8))
        za = zarr.create_array(tmp_path / "a.zarr", data=a, chunks=(64, 40))
        out_h5 = f.create_dataset("out", shape=a.shape, dtype="f8", chunks=(50, 40))
        ndpack.evaluate("ha * 2 + sqrt(abs(hb)) - za", out=out_h5)
        expected = a * 2 + np.sqrt(np.abs(b)) - a
        np.testing.assert_allclose(out_h5[()], expected, rtol=1e-14)
        out_z = zarr.create_array(tmp_path / "o.zarr", shape=a.shape, dtype="f8",
                                  chunks=(70, 40))
        ndpack.evaluate("ha * 2 + sqrt(abs(hb)) - za", out=out_z)
        np.testing.assert_allclose(out_z[()], expected, rtol=1e-14)
        e = ndpack.lazyexpr("ha * hb", operands={"ha": ha, "hb": hb})
        np.testing.assert_allclose(e[10:250:3, 5], (a * b)[10:250:3, 5], rtol=1e-14)
        np.testing.assert_allclose(e.compute(chunks=(64, 16))[()], a * b, rtol=1e-14)


def test_broadcast_and_memmap_operands(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "m.npy"
    np.save(path, rng.normal(size=(120, 30)))
    m = np.load(path, mmap_mode="r")
    row = rng.normal(size=30)
    col = ndpack.asarray(rng.normal(size=(120, 1)), chunks=(50, 1))
    got = ndpack.evaluate("m * row + col", local_dict={"m": m, "row": row, "col": col})
    np.testing.assert_allclose(got, np.asarray(m) * row + col[()], rtol=1e-14)


@pytest.mark.parametrize("text,dtype", [("abs(a)", "i8"), ("floor(a) + a", "i8"),
                                        ("abs(a) * 3", "i4"), ("trunc(a)", "i4")])
def test_integer_functions_keep_numpy_dtype_and_values(text, dtype):
    big = np.array([2**62 + 1, -(2**62) - 3, 7, -9], dtype) if dtype == "i8" else \
        np.array([2**30 + 1, -(2**30) - 3, 7, -9], dtype)
    a = ndpack.asarray(np.tile(big, 25), chunks=(40,))
    expected = eval(text.replace("abs", "np.abs").replace("floor", "np.floor")
                    .replace("trunc", "np.trunc"), {"np": np, "a": np.tile(big, 25)})
    e = ndpack.lazyexpr(text, operands={"a": a})
    assert e.dtype == expected.dtype
    np.testing.assert_array_equal(e[()], expected)
    np.testing.assert_array_equal(e.compute()[()], expected)
    np.testing.assert_array_equal(ndpack.evaluate(text, local_dict={"a": np.tile(big, 25)}),
                                  expected)


def _finishes(fn, seconds=60):
    """Run `fn` on a daemon thread; fail (instead of hanging) if it deadlocks."""
    import threading
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:      # re-raised below
            box["error"] = exc
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "evaluation did not finish (deadlock in the engine's threads?)"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_nested_expressions_as_operands_do_not_deadlock(tmp_path):
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(400, 30)), rng.normal(size=(400, 30))
    a = ndpack.asarray(x, chunks=(50, 30), blocks=(10, 30))
    b = ndpack.asarray(y, chunks=(50, 30), blocks=(10, 30))
    with h5py.File(tmp_path / "n.h5", "w") as f:
        h = f.create_dataset("h", data=y, chunks=(16, 30))
        inner = ndpack.lazyexpr("(a + h)[::2] * 2 + b[1::2].T.T", operands={"a": a, "h": h, "b": b})
        expected = (x + y)[::2] * 2 + y[1::2]
        np.testing.assert_allclose(_finishes(lambda: inner[()]), expected, rtol=1e-14)
        outer = ndpack.lazyexpr("sin(e)[::-1] + 1", operands={"e": inner})
        # float64 sin from the C core (1 ulp of NumPy's): absolute tolerance where
        # sin(e) + 1 cancels
        np.testing.assert_allclose(_finishes(lambda: outer.compute()[()]),
                                   np.sin(expected)[::-1] + 1, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(_finishes(lambda: ndpack.evaluate("e * 3", local_dict={"e": outer})),
                                   (np.sin(expected)[::-1] + 1) * 3, rtol=1e-14, atol=3e-15)
