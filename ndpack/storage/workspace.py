"""Threads and reused buffers of storage's reads: one shared pool, per-thread scratch.

Storage cannot use the engine's workers (it sits below the engine), so parallel chunk
reads run on a small pool of their own, shared by every array (:func:`pool`), through
:func:`share`: the caller works first and asks for help only when the work lasts.
Decoded blocks and chunks read from files go to per-thread buffers that are reused
(:func:`scratch`): fresh pages cost a page fault each (0.2-0.5 ms per MB here).

Examples
--------
>>> buf = scratch(1000, "doc")
>>> len(buf), buf.dtype.name, scratch(10, "doc").base is buf.base
(1000, 'uint8', True)
>>> done = []
>>> share(list(range(5)), done.append, nthreads=2)
>>> sorted(done)
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time

import numpy as np

__all__ = ["HELP_AFTER_S", "SCRATCH_MAX", "pool", "scratch", "share"]

_POOLS: dict = {}
_POOL_LOCK = threading.Lock()
_LOCAL = threading.local()

#: Per-thread buffers larger than this (bytes) are not kept for the next call.
SCRATCH_MAX = 256 * 2**20

# Work shorter than this is done by the caller alone: waking pool threads costs about
# as much here (measured: 50 blocks of 40 KB from 5 chunks, 0.89 ms with a helper
# from the start, 0.56 ms alone).
HELP_AFTER_S = 3e-4


def pool(nthreads: int) -> concurrent.futures.ThreadPoolExecutor:
    """A shared pool of `nthreads` worker threads for reading chunks in parallel."""
    key = (os.getpid(), nthreads)                   # a forked child makes its own
    with _POOL_LOCK:
        p = _POOLS.get(key)
        if p is None:
            p = _POOLS[key] = concurrent.futures.ThreadPoolExecutor(
                nthreads, thread_name_prefix="ndpack-read")
        return p


def scratch(nbytes: int, slot: str = "src") -> np.ndarray:
    """A per-thread reusable byte buffer of `nbytes` (valid until the thread's next
    call for the same `slot`): fresh pages cost page faults.  Buffers larger than
    :data:`SCRATCH_MAX` are not kept."""
    buf = getattr(_LOCAL, slot, None)
    if buf is None or len(buf) < nbytes:
        buf = np.empty(max(nbytes, 1 << 20), np.uint8)
        if nbytes <= SCRATCH_MAX:
            setattr(_LOCAL, slot, buf)
    return buf[:nbytes]


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
