"""``ndpack.progress``: every long call inside the scope reports ``(done, total)`` and
completes exactly once (ndpack/reporting.py; issue 38, item 4)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ndpack
from ndpack.reporting import task


class Calls:
    """A callback that records its calls and the threads they came from."""

    def __init__(self):
        self.seen, self.lock = [], threading.Lock()

    def __call__(self, done, total):
        with self.lock:
            self.seen.append((done, total))

    def completions(self):
        return [c for c in self.seen if c[0] == c[1]]

    def check(self, ncalls):
        """`ncalls` calls completed, each once, progress never going back or past."""
        assert len(self.completions()) == ncalls, self.seen
        last = {}
        for done, total in self.seen:
            assert 0 < done <= total
            assert done >= last.get(total, 0) or done == total
            last[total] = done


def _arrays(tmp_path=None):
    x = np.random.default_rng(0).normal(size=(300, 200))
    kw = dict(chunks=(50, 200), blocks=(10, 200))
    return x, ndpack.asarray(x, **kw), ndpack.asarray(x[::-1].copy(), chunks=(60, 100))


@pytest.mark.parametrize("path", ["aligned", "regions"])
def test_compute_ticks_each_chunk_and_completes_once(path):
    x, a, b = _arrays()
    expr = a * 2 + (a if path == "aligned" else b)
    f = Calls()
    with ndpack.progress(callback=f):
        out = expr.compute(chunks=(50, 200), blocks=(10, 200))
    np.testing.assert_allclose(out[()], x * 2 + (x if path == "aligned" else x[::-1]))
    f.check(1)
    assert f.seen[-1] == (6, 6)
    assert len(f.seen) == 6                # one per output chunk


def test_every_kind_of_call_completes_once(tmp_path):
    x, a, _ = _arrays()
    f = Calls()
    p = str(tmp_path / "x.b2frame")
    with ndpack.progress(callback=f):
        ndpack.evaluate("a + 1", local_dict={"a": a}, out=np.empty(x.shape))
        float(ndpack.sum(a))
        ndpack.mean(a, axis=0)
        ndpack.save_array(x, p)
        y = ndpack.load_array(p)
    np.testing.assert_array_equal(y, x)
    f.check(5)


def test_nested_calls_report_as_one():
    """A reduction inside an expression's evaluation is part of that call."""
    x, a, _ = _arrays()
    f = Calls()
    with ndpack.progress(callback=f):
        ndpack.lazyexpr("a - mean(a)", operands={"a": a}).compute()
    f.check(1)


def test_a_failing_call_reports_no_completion():
    f = Calls()
    with ndpack.progress(callback=f):
        with pytest.raises(RuntimeError):
            with task(5) as tick:
                tick(2)
                raise RuntimeError("boom")
    assert f.seen == [(2, 5)]


def test_ticks_from_threads_and_overshoot():
    f = Calls()
    with ndpack.progress(callback=f):
        with task(100) as tick:
            ts = [threading.Thread(target=lambda: [tick() for _ in range(30)]) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
    f.check(1)
    assert f.seen[-1] == (100, 100) and len(f.seen) == 100


def test_outside_a_scope_nothing_is_called_and_bad_callbacks_refused():
    with task(3) as tick:
        tick()                               # no scope, no bar: a no-op
    with pytest.raises(ndpack.ParameterError):
        with ndpack.progress(callback=42):
            pass


def test_the_bar_form_runs(capsys):
    x, a, _ = _arrays()
    with ndpack.progress():
        (a + 1).compute()
    with ndpack.progress(bar=False, callback=Calls()):
        (a + 1).compute()
