"""``ndpack.explain``: the plan of a computation known before it runs -- the path the
driver will take, its pieces, and a projected peak of the buffers it holds (issue 38,
item 2)."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import ndpack
from ndpack.storage.frame import FrameBase
from ndpack.storage.framefile import ContiguousFrame


def _a(shape=(600, 400), chunks=(100, 400), blocks=(10, 400), seed=0, **kw):
    x = np.random.default_rng(seed).normal(size=shape)
    return x, ndpack.asarray(x, chunks=chunks, blocks=blocks, **kw)


def test_the_paths_it_names_are_the_paths_taken():
    x, a = _a()
    _, b = _a(chunks=(120, 200), blocks=(20, 200), seed=1)
    assert ndpack.explain("a * 2 + 1")["path"] == "aligned, fused C program"
    assert ndpack.explain("sin(a) + 1")["path"] == "aligned"
    assert ndpack.explain("a + b")["path"] == "regions"
    p = ndpack.explain("a + b", out=np.empty(a.shape))
    assert p["path"] == "regions" and p["into"] == "ndarray"
    p = ndpack.explain("a * 2", out=np.empty(a.shape))
    assert p["path"].startswith("aligned")
    # the stated layout is the one compute() makes
    e = ndpack.lazyexpr("a + b")
    p, out = e.explain(), e.compute()
    assert (p["chunks"], p["blocks"]) == (out.chunks, out.blocks)
    assert p["nregions"] == out.schunk.nchunks
    assert p["shape"] == out.shape and p["dtype"] == str(out.dtype)


def test_steps_and_the_words():
    x, a = _a()
    p = ndpack.explain("a - mean(a, axis=0) + sum(a)")
    assert [s["path"] for s in p["steps"]] == ["reduction mean", "reduction sum"]
    text = str(p)
    assert text.startswith("path: ") and "projected peak" in text and "before: " in text
    assert p["projected_peak_bytes"] == sum(p["peak_terms"].values())
    assert dict(p)["operands"][0]["name"] == "a"


def test_explain_reads_and_computes_nothing(tmp_path, monkeypatch):
    x, a = _a(urlpath=str(tmp_path / "a.b2nd"), mode="w")
    a = ndpack.open(str(tmp_path / "a.b2nd"))

    def refuse(*args, **kwargs):
        raise AssertionError("explain read a chunk")
    monkeypatch.setattr(ContiguousFrame, "fetch", refuse)
    monkeypatch.setattr(FrameBase, "stored", refuse)
    p = ndpack.explain("sum(a, axis=0) + a * 3")
    assert p["bytes_read"] == a.schunk.cbytes
    assert p["bytes_decoded"] == a.nbytes


def test_bad_expressions_fail_as_compute_does():
    x, a = _a()
    _, c = _a(shape=(10, 10), chunks=(5, 5), blocks=(5, 5))
    with pytest.raises(ValueError):
        ndpack.explain("a + c")
    with pytest.raises(Exception) as e1:
        ndpack.explain("a + nosuchname")
    with pytest.raises(type(e1.value)):
        ndpack.lazyexpr("a + nosuchname").compute()


@pytest.mark.parametrize("text", ["a * 2 + 1", "sin(a) * b", "a + c", "a - mean(a, axis=0)"])
def test_projection_bounds_what_python_and_numpy_allocate(text):
    """The projected peak is at least the peak of the memory Python and NumPy allocate
    while the computation runs (tracemalloc; the kept buffers cleared first)."""
    x, a = _a(shape=(1200, 800), chunks=(200, 800), blocks=(20, 800))
    _, b = _a(shape=(1200, 800), chunks=(200, 800), blocks=(20, 800), seed=2)
    _, c = _a(shape=(1200, 800), chunks=(300, 400), blocks=(30, 400), seed=3)
    e = ndpack.lazyexpr(text, operands={"a": a, "b": b, "c": c})
    plan = e.explain()
    ndpack.free_resources()
    gc.collect()
    tracemalloc.start()
    try:
        out = e.compute()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.shape == x.shape
    want = plan["projected_peak_bytes"] + sum(s["projected_peak_bytes"] for s in plan["steps"])
    assert peak <= want, (peak, plan["peak_terms"])
    assert want < 64 * peak + (64 << 20)          # and not absurdly above it


def test_a_plan_over_the_limit_is_refused_before_any_read(tmp_path, monkeypatch):
    """Chunks of 8 MB under a 16 MiB limit: the aligned path cannot shrink them, so
    compute() refuses at plan time, naming the figures, and reads nothing; under a
    limit it fits, the same computation runs."""
    x = np.random.default_rng(0).normal(size=(4096, 2048))
    a = ndpack.asarray(x, chunks=(512, 2048), blocks=(16, 2048),
                       urlpath=str(tmp_path / "a.b2nd"), mode="w")
    a = ndpack.open(str(tmp_path / "a.b2nd"))
    old = ndpack.set_memory_limit("16M")
    try:
        plan = (a * 2).explain(urlpath=str(tmp_path / "o.b2nd"))
        assert plan["projected_peak_bytes"] > ndpack.memory_limit()
        reads = []
        real = ContiguousFrame.fetch
        monkeypatch.setattr(ContiguousFrame, "fetch",
                            lambda self, *a, **k: reads.append(1) or real(self, *a, **k))
        with pytest.raises(ndpack.MemoryLimitError, match=r"exceeds the memory limit of 16 MiB"):
            (a * 2).compute(urlpath=str(tmp_path / "o.b2nd"))
        assert reads == [] and not (tmp_path / "o.b2nd").exists()
        with pytest.raises(MemoryError):
            ndpack.evaluate("a * 2", local_dict={"a": a}, out=np.empty(a.shape))
    finally:
        ndpack.set_memory_limit(old)
    out = (a * 2).compute(urlpath=str(tmp_path / "o.b2nd"))
    np.testing.assert_array_equal(out[:5], x[:5] * 2)
