"""Byte sources: the one place where the bytes of a frame come from.

A frame reads its header, index, trailer and chunks through a source: positioned reads
of `n` bytes at `pos`, and batches of ranges.  The local sources are a buffer in memory
(:class:`BufferSource`), a memory map (:class:`MmapSource`) and a file descriptor
(:class:`FdSource`); remote objects reached through fsspec are a
:class:`~ndpack.storage.remote.RemoteSource`, built on the batch machinery here:

* :func:`plan_requests` merges ranges closer than a gap and splits huge ones, so a
  batch becomes few requests of bounded size;
* :class:`InFlight` charges the bytes of running requests to the process's memory limit
  (:func:`ndpack.resources.memory_limit`): a request waits while others hold its share;
* :func:`fetch_batch` runs the requests of a batch on the source's own threads (not the
  decoding threads) and joins the pieces back into the ranges asked for.

Block reads: a source with ``block_reads`` answers :meth:`Source.read_blocks` -- a chunk
reduced to some of its blocks (a valid smaller chunk, as ``csrc/format/fdread.c``
builds from a file) -- so that a slice reads only the blocks it needs.

Examples
--------
>>> plan_requests([(0, 10), (12, 20), (100, 110)], gap=4, max_request=64)
[(0, 20), (100, 110)]
>>> plan_requests([(0, 100)], gap=0, max_request=40)
[(0, 40), (40, 80), (80, 100)]
>>> src = BufferSource(bytes(range(50)))
>>> [bytes(b) for b in src.read_ranges([(1, 3), (40, 42)])]
[b'\\x01\\x02', b'()']
"""

from __future__ import annotations

import bisect
import os
import threading

from ndpack.chunks import read_blocks_from_file
from ndpack.errors import NdpackError
from ndpack.resources import memory_limit

__all__ = ["Source", "BufferSource", "MmapSource", "FdSource", "local_source",
           "SourceError", "plan_requests", "join_pieces", "InFlight", "fetch_batch"]


class SourceError(NdpackError, OSError):
    """A read of a source failed (after its retries): the message names the source
    (the URL) and, once the frame knows it, the chunk."""

    def at(self, what: str) -> "SourceError":
        """The same error, saying which part of the frame was read (``chunk 7``)."""
        err = type(self)(f"{self.args[0]} ({what})" if self.args else what)
        err.__cause__ = self.__cause__
        return err


class Source:
    """Positioned reads of bytes (the interface the frames read through).

    ``view`` is a memoryview of the whole source when it is in memory (chunks are then
    slices of it, no copy), ``fd`` the file descriptor of a file source; ``block_reads``
    tells whether :meth:`read_blocks` reads some blocks of a chunk cheaper than the
    whole chunk (files and remote objects; not memory).
    """

    view = None
    fd = None
    block_reads = False
    name = "<source>"

    def size(self) -> int:
        raise NotImplementedError

    def read(self, pos: int, n: int):
        """`n` bytes at `pos` (fewer at the end of the source)."""
        raise NotImplementedError

    def read_into(self, pos: int, n: int, buf):
        """`n` bytes at `pos`: a view of the source when it is in memory, else read into
        `buf` (at least `n` bytes) and returned as a view of it."""
        data = self.read(pos, n)
        mv = memoryview(buf).cast("B")[:len(data)]
        mv[:] = data
        return mv

    def read_ranges(self, ranges) -> list:
        """The bytes of each ``(start, end)`` of `ranges`, in order."""
        return [self.read(s, e - s) for s, e in ranges]

    def hint(self, start: int, end: int) -> None:
        """Bytes ``[start, end)`` will be read soon (the frame's index and trailer at
        open); remote sources fetch them in one request, the others ignore it."""

    def prefetch(self, ranges) -> None:
        """Ranges a read is about to ask for, one by one: a remote source fetches them
        at once, the others ignore it."""

    def read_blocks(self, pos: int, nblocks: int, numbers, buf, min_cbytes: int,
                    entry=None):
        """The chunk at `pos` reduced to the blocks `numbers` (see
        :func:`ndpack.chunks.read_blocks_from_file`): ``(size, needed)``; `entry`: the
        chunk's block checksums, checked (FormatError naming the block)."""
        return 0, 0

    def close(self) -> None:
        pass


class BufferSource(Source):
    """A source over bytes in memory (a parsed cframe, a sparse frame's index)."""

    name = "<memory>"

    def __init__(self, buf):
        self.buf = buf
        self.view = memoryview(buf)

    def size(self) -> int:
        return len(self.view)

    def read(self, pos: int, n: int):
        return self.view[pos:pos + n]

    def read_into(self, pos: int, n: int, buf):
        return self.view[pos:pos + n]

    def close(self) -> None:
        if self.view is not None:
            self.view.release()
            self.view = None


class MmapSource(BufferSource):
    """A source over a memory map of a file (``mmap_mode='r'``)."""

    name = "<mmap>"

    def __init__(self, mm):
        self.mm = mm
        super().__init__(mm)

    def close(self) -> None:
        super().close()
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:        # chunk views still alive; the GC closes it later
                pass
            self.mm = None


class FdSource(Source):
    """A source over an open file descriptor (positioned reads; the caller owns `fd`)."""

    block_reads = True

    def __init__(self, fd: int, name: str = "<file>"):
        self.fd, self.name = fd, name

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def read(self, pos: int, n: int):
        if n > (1 << 24):              # a length read from the file: never allocate more
            n = max(0, min(n, self.size() - pos))   # than the file holds (short: caller)
        return os.pread(self.fd, n, pos)

    def read_into(self, pos: int, n: int, buf):
        mv = memoryview(buf).cast("B")[:n]
        return mv[:os.preadv(self.fd, [mv], pos)]

    def read_blocks(self, pos: int, nblocks: int, numbers, buf, min_cbytes: int,
                    entry=None):
        return read_blocks_from_file(self.fd, pos, nblocks, numbers, buf, min_cbytes, entry)


def local_source(buf=None, fd=None, mm=None, name: str = "<file>") -> Source:
    """The source of a buffer, a memory map or a file descriptor (one of them)."""
    if mm is not None:
        return MmapSource(mm)
    if buf is not None:
        return BufferSource(buf)
    return FdSource(fd, name)


# ---------------------------------------------------------------------------------------
# batches of ranges


def plan_requests(ranges, gap: int, max_request: int) -> list:
    """The requests that fetch `ranges` (``(start, end)`` pairs): sorted, ranges closer
    than `gap` bytes merged (the gap is fetched too) while the request stays within
    `max_request` bytes, overlapping ones always; then requests over `max_request`
    bytes are split."""
    out: list = []
    for s, e in sorted((int(s), int(e)) for s, e in ranges if e > s):
        if out and (s <= out[-1][1] or (s <= out[-1][1] + gap and
                                        max(e, out[-1][1]) - out[-1][0] <= max_request)):
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    split = []
    for s, e in out:
        split.extend((p, min(p + max_request, e)) for p in range(s, e, max_request))
    return split


def join_pieces(ranges, requests, pieces) -> list:
    """The bytes of each range of `ranges` from the fetched `pieces` of `requests`
    (as :func:`plan_requests` made them): a view when one piece holds the range, else
    the pieces' parts joined."""
    starts = [r[0] for r in requests]
    out = []
    for s, e in ranges:
        k = bisect.bisect_right(starts, s) - 1
        if k < 0 or e <= s:
            out.append(b"")
            continue
        rs, re_ = requests[k]
        if e <= re_:
            out.append(memoryview(pieces[k])[s - rs:e - rs])
            continue
        parts = []
        while s < e:
            rs, re_ = requests[k]
            parts.append(memoryview(pieces[k])[s - rs:min(e, re_) - rs])
            s, k = min(e, re_), k + 1
        out.append(b"".join(parts))
    return out


class InFlight:
    """The bytes of running requests, charged to the memory limit: :meth:`take` waits
    while running requests hold `share` of the limit (a request alone always runs)."""

    def __init__(self, share: float = 0.25):
        self.share, self.held = share, 0
        self.cond = threading.Condition()

    def cap(self) -> int:
        return int(memory_limit() * self.share)

    def take(self, n: int, timeout: float | None = None) -> int:
        """Charge `n` bytes (clamped to the cap); returns the bytes charged."""
        with self.cond:
            n = min(int(n), self.cap())
            if not self.cond.wait_for(lambda: self.held == 0 or self.held + n <= self.cap(),
                                      timeout):
                raise SourceError(f"no memory for a request of {n} bytes: {self.held} "
                                  "bytes in flight for too long")
            self.held += n
            return n

    def give(self, n: int) -> None:
        with self.cond:
            self.held -= n
            self.cond.notify_all()


IN_FLIGHT = InFlight()          # one budget for every remote source of the process


def fetch_batch(requests, fetch, pool, wait: float | None = None) -> list:
    """Run ``fetch(start, end)`` for every request of `requests` on `pool`, each
    charged to :data:`IN_FLIGHT` while it runs; returns the pieces in order.  The first
    error is raised once the others have finished or been cancelled; `wait` bounds the
    wait for each request (seconds)."""
    if len(requests) == 1:                      # no thread hop for a single request
        s, e = requests[0]
        held = IN_FLIGHT.take(e - s, wait)
        try:
            return [fetch(s, e)]
        finally:
            IN_FLIGHT.give(held)

    def run(s, e):
        held = IN_FLIGHT.take(e - s, wait)
        try:
            return fetch(s, e)
        finally:
            IN_FLIGHT.give(held)

    futures = [pool.submit(run, s, e) for s, e in requests]
    out, first = [], None
    for f in futures:
        try:
            out.append(f.result(wait) if first is None else None)
        except TimeoutError:
            first = first or SourceError(f"a request did not finish within {wait} s")
        except BaseException as exc:            # noqa: BLE001  (re-raised below)
            first = first or exc
        if first is not None:
            for g in futures:
                g.cancel()
    if first is not None:
        raise first
    return out
