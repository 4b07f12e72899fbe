"""How storage's reads share work: the caller first, pool threads when it lasts.

Storage cannot use the engine's workers (it sits below the engine), so parallel chunk
reads run on the process's ``"storage"`` pool (:func:`pool`, from
:mod:`ndpack.resources`, the one registry of threads and buffers) through
:func:`share`.  Decoded blocks and chunks read from files go to the per-thread buffers
of :func:`ndpack.resources.scratch`.

Examples
--------
>>> done = []
>>> share(list(range(5)), done.append, nthreads=2)
>>> sorted(done)
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import concurrent.futures
import time

from ndpack.resources import pool as _registry_pool

__all__ = ["HELP_AFTER_S", "pool", "share"]

# Work shorter than this is done by the caller alone: waking pool threads costs about
# as much here (measured: 50 blocks of 40 KB from 5 chunks, 0.89 ms with a helper
# from the start, 0.56 ms alone).
HELP_AFTER_S = 3e-4


def pool(nthreads: int) -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool of `nthreads` threads for reading chunks in parallel."""
    return _registry_pool("storage", nthreads)


def share(items: list, work, nthreads: int) -> None:
    """``work(item)`` for every item, by the caller and up to ``nthreads - 1`` pool
    threads taking items from one iterator (a list iterator's next is atomic): one
    handoff per thread, not per item.  Helpers are called once the caller has worked
    :data:`HELP_AFTER_S` with items left (short work stays on one thread).  Helpers
    that never started (a busy pool, e.g. a read nested in a pool thread) are
    cancelled: the caller did their share.  The first error is raised once every
    started helper has stopped."""
    todo = iter(items)

    def drain():
        for item in todo:
            work(item)
    t0, done = time.perf_counter(), 0
    for item in todo:
        work(item)
        done += 1
        if done >= len(items) or time.perf_counter() - t0 >= HELP_AFTER_S:
            break
    if done >= len(items):
        return
    p = pool(nthreads)
    helpers = [p.submit(drain) for _ in range(min(nthreads, len(items) - done) - 1)]
    try:
        drain()
    finally:
        running = [f for f in helpers if not f.cancel()]
        errors = [f.exception() for f in running]
    for e in errors:
        if e is not None:
            raise e
