"""Progress of long computations: a tqdm bar when tqdm is installed, else one line.

``compute(progress=True)`` and the ``ndpack eval`` command report chunks done,
throughput and time left once the work has run for a second.  tqdm is optional: without
it, progress is one line on stderr rewritten in place (``\\r``) at most five times a
second, and nothing at all when stderr is not a terminal (logs stay clean).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

__all__ = ["progress_bar"]

DELAY = 1.0        # seconds of work before anything is shown (tqdm's delay=)
INTERVAL = 0.2     # seconds between redraws of the plain line


@contextlib.contextmanager
def progress_bar(enabled: bool, nchunks: int, chunk_bytes: int, *, stream=None,
                 use_tqdm: bool | None = None):
    """A context giving ``tick()``, to be called once per finished chunk (from any thread).

    Parameters
    ----------
    enabled : bool
        False gives a no-op ``tick``.
    nchunks : int
        Chunks in all.
    chunk_bytes : int
        Uncompressed bytes of one chunk (for the throughput).
    stream : file, optional
        Where the plain line goes (default ``sys.stderr``); shown only if it is a terminal.
    use_tqdm : bool, optional
        Force (True) or refuse (False) tqdm; default: tqdm when it can be imported.

    Examples
    --------
    >>> with progress_bar(True, 3, 1 << 20, use_tqdm=False) as tick:
    ...     for _ in range(3):
    ...         tick()
    """
    if not enabled:
        yield _noop
        return
    if use_tqdm is not False:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if use_tqdm:
                raise ImportError("use_tqdm=True needs tqdm (pip install tqdm)") from None
        else:
            with tqdm(total=nchunks, unit="chunk", delay=DELAY, dynamic_ncols=True,
                      postfix=f"{chunk_bytes / 2**20:.0f} MiB/chunk") as bar:
                yield lambda: bar.update(1)
            return
    line = _PlainLine(nchunks, chunk_bytes, sys.stderr if stream is None else stream)
    try:
        yield line.tick
    finally:
        line.close()


def _noop() -> None:
    return None


class _PlainLine:
    """``ndpack: 37/120 chunks (31%), 420 MB/s, 3 s left`` rewritten in place."""

    def __init__(self, total: int, chunk_bytes: int, stream):
        self.total, self.chunk_bytes, self.stream = max(total, 0), chunk_bytes, stream
        isatty = getattr(stream, "isatty", None)
        try:
            self.live = bool(isatty and isatty())
        except (OSError, ValueError):          # a closed or detached stream
            self.live = False
        self.done = 0
        self.start = time.monotonic()
        self.drawn_at = None                   # time of the last redraw, None before the first
        self.lock = threading.Lock()

    def tick(self) -> None:
        with self.lock:
            self.done += 1
            if not self.live:
                return
            now = time.monotonic()
            if now - self.start < DELAY:
                return
            if self.drawn_at is None or now - self.drawn_at >= INTERVAL or self.done >= self.total:
                self._draw(now)

    def _draw(self, now: float) -> None:
        self.drawn_at = now
        elapsed = max(now - self.start, 1e-9)
        rate = self.done * self.chunk_bytes / elapsed / 1e6
        text = f"ndpack: {self.done}/{self.total} chunks"
        if self.total:
            text += f" ({100 * self.done // self.total}%)"
        text += f", {rate:,.0f} MB/s"
        if 0 < self.done < self.total:
            text += f", {elapsed * (self.total - self.done) / self.done:,.0f} s left"
        self._write("\r" + text + "\x1b[K")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):          # the terminal went away: stop drawing
            self.live = False

    def close(self) -> None:
        with self.lock:
            if self.drawn_at is not None and self.live:
                self._draw(time.monotonic())
                self._write("\n")
