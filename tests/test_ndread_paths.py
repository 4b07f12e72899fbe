"""Read paths of NDArray that skip work: whole blocks decoded straight into the
output, and positioned reads of only the touched blocks of files opened read-only
(several threads at once).  Each against NumPy, with the path checked to be taken."""

import numpy as np
import pytest

import ndpack
from ndpack.storage import ndread


def _count_direct(monkeypatch):
    calls = []
    real = ndread.NDReader._direct_into

    def spy(self, *args):
        done = real(self, *args)
        calls.append(done)
        return done
    monkeypatch.setattr(ndread.NDReader, "_direct_into", spy)
    return calls


@pytest.mark.parametrize("where", ["memory", "disk"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_whole_blocks_decode_into_the_output(where, nthreads, tmp_path, monkeypatch):
    x = np.random.default_rng(0).random((6, 10, 30, 25))
    kw = {"urlpath": str(tmp_path / "a.b2nd"), "mode": "w"} if where == "disk" else {}
    a = ndpack.asarray(x, chunks=(2, 10, 30, 25), blocks=(1, 1, 15, 25),
                       cparams={"clevel": 5}, **kw)
    if where == "disk":
        a = ndpack.open(a.urlpath, mode="r", dparams={"nthreads": nthreads})
    calls = _count_direct(monkeypatch)
    for key in [(3,), (slice(None), 4), (slice(2, 6), 9), (1, 2), (slice(None), 0, slice(15, 30))]:
        calls.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert any(calls), key                          # decoded straight into the output
    for key in [(slice(None), slice(None), 7), (slice(None), 3, slice(2, 20)),
                (slice(None), slice(None, None, 2))]:
        calls.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert not any(calls), key                      # partial blocks: copied


def test_edge_blocks_with_padding_are_not_decoded_into_the_output():
    x = np.arange(7 * 9 * 11, dtype=np.int32).reshape(7, 9, 11)
    a = ndpack.asarray(x, chunks=(3, 4, 11), blocks=(1, 4, 11))
    for i in range(7):
        np.testing.assert_array_equal(a[i], x[i])
    for j in range(9):
        np.testing.assert_array_equal(a[:, j], x[:, j])


def test_read_only_files_read_blocks_from_several_threads(tmp_path, monkeypatch):
    x = np.random.default_rng(1).random((40, 50, 60))
    path = str(tmp_path / "r.b2nd")
    ndpack.asarray(x, chunks=(8, 50, 60), blocks=(1, 5, 60), urlpath=path, mode="w",
                   cparams={"clevel": 5})
    a = ndpack.open(path, mode="r", dparams={"nthreads": 4})
    assert a.schunk._frame.readonly
    lazy = []
    real = ndread.NDReader._lazy_chunk
    monkeypatch.setattr(ndread.NDReader, "_lazy_chunk",
                        lambda self, *args: lazy.append(1) or real(self, *args))
    import concurrent.futures
    keys = [(slice(None), j) for j in range(50)] + [(slice(None), slice(None), k)
                                                   for k in range(0, 60, 7)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for key, got in zip(keys, pool.map(lambda k: a[k], keys)):
            np.testing.assert_array_equal(got, x[key])
    assert lazy                                   # only the touched blocks were read
