"""The engine's threads: a prefetch thread, evaluation workers, numexpr's thread count.

* One **prefetch** thread per process reads what the next step needs (compressed
  chunks, operand regions) while the current step computes.
* Work running on any engine thread that needs the engine again (an operand that is
  itself an expression) runs synchronously on that thread: nested evaluations never
  wait on a pool that is waiting for them.
* **Evaluation workers** (``n`` threads per process) each decode and evaluate their own
  piece with one C thread and single-threaded numexpr: one level of parallelism.
* **Reader threads** (:func:`run_all`) read pieces of foreign operands (h5py, zarr,
  ...) in parallel, a piece per chunk of the operand's own storage.
* **Leaf threads** (:func:`run_leaves`) run direct chunk reads of foreign arrays
  (:mod:`~ndpack.engine.run.gridread`, ``h5read``, ``zarrread``), which
  never wait on anything: any thread, the prefetch thread included, may wait on them.
* :func:`serial_numexpr` holds numexpr at one thread while workers run, and gives back
  the caller's setting when the last concurrent user leaves.

The pools themselves, and the reused ``buffers``, live in :mod:`ndpack.resources`.

Examples
--------
>>> with serial_numexpr():
...     prefetch(sum, [1, 2]).result()
3
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading

import numexpr

from ndpack.resources import buffers, pool

__all__ = ["prefetch", "on_engine_thread", "workers", "writer", "submit", "run_all",
           "run_leaves", "serial_numexpr", "buffers"]

_LOCK = threading.Lock()
_STATE = threading.local()


def _on_engine_thread(fn, *args):
    _STATE.engine = True
    return fn(*args)


def on_engine_thread() -> bool:
    """Whether the calling thread is one of the engine's (prefetch, reader, worker)."""
    return getattr(_STATE, "engine", False)


def _now(fn, *args) -> concurrent.futures.Future:
    fut = concurrent.futures.Future()
    try:
        fut.set_result(fn(*args))
    except BaseException as exc:         # delivered by .result(), like a pool's future
        fut.set_exception(exc)
    return fut


def prefetch(fn, *args) -> concurrent.futures.Future:
    """``fn(*args)`` on the prefetch thread.  Called from any engine thread (an
    operand that is itself an expression, read by a worker), it runs synchronously
    instead: a nested evaluation never waits on a pool that is waiting for it."""
    if on_engine_thread():
        return _now(fn, *args)
    return pool("prefetch", 1).submit(_on_engine_thread, fn, *args)


class _Inline:
    """An executor that runs each task at once in the calling thread (what engine
    threads get: a nested evaluation never queues behind the pool it runs on)."""

    @staticmethod
    def submit(fn, *args, **kwargs) -> concurrent.futures.Future:
        return _now(lambda: fn(*args, **kwargs))


_INLINE = _Inline()


def writer():
    """One thread (per process) that compresses and stores finished chunks in order
    (inline when called from an engine thread)."""
    return _INLINE if on_engine_thread() else pool("write", 1)


def workers(n: int):
    """A pool of `n` evaluation worker threads shared per process; tasks should be
    submitted with :func:`submit` (inline when called from an engine thread)."""
    return _INLINE if on_engine_thread() else pool("eval", max(1, int(n)))


def run_all(calls: list, n: int) -> list:
    """Run the zero-argument callables `calls` on `n` reader threads and return their
    results in order (serially when there is one call, one thread, or when called
    from an engine thread, so nested reads never wait on a pool that waits on them)."""
    if len(calls) < 2 or n < 2 or on_engine_thread():
        return [c() for c in calls]
    executor = pool("read", n)
    futures = [executor.submit(_on_engine_thread, c) for c in calls]
    return [f.result() for f in futures]


def run_leaves(calls: list, n: int) -> list:
    """Run the zero-argument callables `calls` on `n` leaf threads and return their
    results in order.  Leaves never wait on the engine (direct chunk reads: no pool,
    no nested evaluation), so any thread may wait on them without a deadlock; they
    run serially when there is one call, one thread, or when called from a leaf."""
    if len(calls) < 2 or n < 2 or getattr(_STATE, "leaf", False):
        return [c() for c in calls]
    executor = pool("leaf", n)
    futures = [executor.submit(_on_leaf_thread, c) for c in calls]
    return [f.result() for f in futures]


def _on_leaf_thread(fn):
    _STATE.engine = _STATE.leaf = True
    return fn()


def submit(executor: concurrent.futures.ThreadPoolExecutor, fn, *args):
    """``executor.submit`` marking the task's thread as an engine thread."""
    return executor.submit(_on_engine_thread, fn, *args)


_NUMEXPR = {"users": 0, "before": None}


@contextlib.contextmanager
def serial_numexpr():
    """numexpr at one thread for the duration (our workers are the parallelism)."""
    with _LOCK:
        if _NUMEXPR["users"] == 0:
            _NUMEXPR["before"] = numexpr.set_num_threads(1)
        _NUMEXPR["users"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _NUMEXPR["users"] -= 1
            if _NUMEXPR["users"] == 0:
                numexpr.set_num_threads(_NUMEXPR["before"])
