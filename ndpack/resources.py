"""One home for the process's threads and scratch memory.

Every part of ndpack that runs threads or keeps buffers between calls gets them here:

* **Thread pools** (:func:`pool`): one registry, one pool per kind and size per process
  (a forked child makes its own).  The engine's prefetch, evaluation, writer, reader
  and leaf threads and storage's chunk readers are all kinds of it.
* **One byte limit** (:func:`memory_limit`): set with :func:`set_memory_limit` or the
  ``NDPACK_MEMORY`` environment variable (``"512M"``, ``"2G"``, ``"1.5GiB"`` or a byte
  count); by default a quarter of the machine's physical memory.  The engine's plans
  size their regions from it (:mod:`ndpack.engine.run.plan`), and the buffers kept
  below stay under it.
* **Reused buffers**: large buffers handed out and given back (:data:`buffers`), and
  per-thread scratch buffers (:func:`scratch`).  A fresh multi-MB buffer costs a page
  fault per page (0.2-0.5 ms per MB on the machines measured), a kept one does not;
  what is kept is bounded by the limit (idle buffers at most a quarter of it, one
  thread's scratch slot at most an eighth).

:func:`usage` reports the figures (``ndpack.show_config()`` prints them).

Examples
--------
>>> parse_bytes("512M"), parse_bytes("1.5GiB"), parse_bytes(4096)
(536870912, 1610612736, 4096)
>>> old = set_memory_limit("256M")
>>> memory_limit()
268435456
>>> b = buffers.take(1000)
>>> len(b) >= 1000, buffers.take(10) is not b
(True, True)
>>> buffers.give(b)
>>> buf = scratch(1000, "doc")
>>> len(buf), scratch(10, "doc").base is buf.base
(1000, True)
>>> _ = set_memory_limit(old)
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import threading

import numpy as np

from ndpack.errors import ParameterError

__all__ = ["pool", "memory_limit", "set_memory_limit", "parse_bytes", "buffers", "scratch",
           "usage", "MIN_LIMIT"]

MIN_LIMIT = 16 * 2**20            # smaller limits are refused: nothing useful fits

_LOCK = threading.Lock()
_POOLS: dict = {}
_LOCAL = threading.local()
_STATE = {"limit": None}          # None: not read yet (environment, then the default)

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6,
          "mib": 2**20, "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12,
          "tib": 2**40}


def pool(kind: str, n: int) -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool of `n` threads of `kind` (created on first use).

    Examples
    --------
    >>> pool("doc", 2) is pool("doc", 2), pool("doc", 2) is pool("doc", 1)
    (True, False)
    """
    key = (os.getpid(), kind, max(1, int(n)))
    with _LOCK:
        p = _POOLS.get(key)
        if p is None:
            p = _POOLS[key] = concurrent.futures.ThreadPoolExecutor(
                key[2], thread_name_prefix=f"ndpack-{kind}")
        return p


def parse_bytes(value) -> int:
    """A byte count from an int or a string with a unit (``"512M"``, ``"2GiB"``;
    K/M/G/T are powers of 1024 unless written KB/MB/GB/TB)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", str(value))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise ParameterError(f"not a byte count: {value!r} (write e.g. 512M, 2G or 1073741824)")
    mult = _UNITS[unit]
    if unit in ("k", "m", "g", "t"):
        mult = 2 ** (10 * "kmgt".index(unit) + 10)
    return int(float(m.group(1)) * mult)


def _physical() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def _checked(nbytes: int, where: str) -> int:
    if nbytes < MIN_LIMIT:
        raise ParameterError(f"{where}: a memory limit of {nbytes} bytes is below the "
                             f"least ndpack works in ({MIN_LIMIT // 2**20} MiB)")
    return nbytes


def memory_limit() -> int:
    """The byte limit that plans and kept buffers respect."""
    limit = _STATE["limit"]
    if limit is None:
        env = os.environ.get("NDPACK_MEMORY")
        limit = _checked(parse_bytes(env), "NDPACK_MEMORY") if env else \
            max(MIN_LIMIT, _physical() // 4)
        _STATE["limit"] = limit
    return limit


def set_memory_limit(nbytes=None) -> int:
    """Set the process's memory limit (bytes, or a string such as ``"2G"``; None goes
    back to ``NDPACK_MEMORY`` or the default) and return the previous one.  Kept
    buffers beyond the new limit's share are released at once."""
    with _LOCK:
        before = memory_limit()
        _STATE["limit"] = None if nbytes is None else _checked(parse_bytes(nbytes),
                                                               "set_memory_limit")
    buffers.trim()
    return before


class BufferPool:
    """Large byte buffers kept between computations.

    :meth:`take` hands out a buffer of at least `nbytes` (the caller's until
    :meth:`give` returns it); idle buffers stay while they total at most a quarter of
    the memory limit, the largest kept first.
    """

    def __init__(self):
        self.free, self.lock, self.pid = [], threading.Lock(), os.getpid()

    def take(self, nbytes: int) -> np.ndarray:
        with self.lock:
            self._forked()
            fits = [i for i, b in enumerate(self.free) if b.nbytes >= nbytes]
            if fits:                      # the smallest that fits (arrays: no list.remove)
                return self.free.pop(min(fits, key=lambda i: self.free[i].nbytes))
        return np.empty(max(int(nbytes), 1), np.uint8)

    def give(self, buf: np.ndarray) -> None:
        with self.lock:
            self._forked()
            self.free.append(buf)
            self.free.sort(key=lambda b: -b.nbytes)
            self._trim()

    def trim(self) -> None:
        """Release idle buffers beyond the limit's share."""
        with self.lock:
            self._trim()

    def clear(self) -> None:
        """Release every idle buffer (``ndpack.free_resources``)."""
        with self.lock:
            self.free = []

    def idle(self) -> int:
        """Bytes of the buffers kept idle."""
        with self.lock:
            return sum(b.nbytes for b in self.free)

    def _trim(self) -> None:
        cap = memory_limit() // 4
        while self.free and sum(b.nbytes for b in self.free) > cap:
            self.free.pop()                  # the smallest goes first

    def _forked(self) -> None:
        if os.getpid() != self.pid:          # a forked child: its parent's are not its own
            self.free, self.pid = [], os.getpid()


buffers = BufferPool()


def scratch(nbytes: int, slot: str = "src") -> np.ndarray:
    """A per-thread reusable byte buffer of `nbytes` (valid until the thread's next
    call for the same `slot`).  Buffers over an eighth of the memory limit are not
    kept."""
    buf = getattr(_LOCAL, slot, None)
    if buf is None or len(buf) < nbytes:
        buf = np.empty(max(nbytes, 1 << 20), np.uint8)
        if buf.nbytes <= memory_limit() // 8:
            setattr(_LOCAL, slot, buf)
        elif hasattr(_LOCAL, slot):
            delattr(_LOCAL, slot)            # a big one is not kept, nor the old one
    return buf[:nbytes]


def usage() -> dict:
    """The memory limit, the bytes kept idle by :data:`buffers` and the pools alive.

    Examples
    --------
    >>> sorted(usage())
    ['idle_bytes', 'memory_limit', 'pools']
    """
    with _LOCK:
        pools = sorted(f"{kind}x{n}" for pid, kind, n in _POOLS if pid == os.getpid())
    return {"memory_limit": memory_limit(), "idle_bytes": buffers.idle(), "pools": pools}
