"""Reporting on long calls -- their progress: ``with ndpack.progress():`` (a bar), ``with
ndpack.progress(callback=f):`` (``f(done, total)``), and ``compute(progress=True)``.

Every long call of ndpack -- computing and evaluating expressions, reductions, saving
and loading arrays, concatenating -- runs as one :func:`task` of ``total`` units of
work (output chunks, input chunks, ...) and ticks as units finish, from any thread.
While a :func:`progress` scope is active in the calling thread, each call reports to
it: the callback gets ``(done, total)`` as units finish and ``(total, total)`` exactly
once when the call completes (a call that fails reports no completion); a bar shows the
same.  Only the outermost call of a thread reports (a reduction computed inside an
expression's evaluation is part of that evaluation).

The bar is tqdm when installed, else one line on stderr rewritten in place (``\\r``)
at most five times a second once the work has run for a second, and nothing when
stderr is not a terminal (logs stay clean).

Examples
--------
>>> seen = []
>>> with progress(callback=lambda done, total: seen.append((done, total))):
...     with task(3) as tick:
...         for _ in range(3):
...             tick()
>>> seen
[(1, 3), (2, 3), (3, 3)]
>>> seen.clear()
>>> with progress(callback=lambda d, t: seen.append((d, t))):
...     with task(4) as tick:         # a call that ticks less still completes once
...         tick()
>>> seen
[(1, 4), (4, 4)]
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

from ndpack.errors import ParameterError

__all__ = ["progress", "task", "progress_bar"]

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


# --- scopes and tasks ---------------------------------------------------------------

_LOCAL = threading.local()          # .scopes: the active scopes; .busy: a task runs


class _Scope:
    __slots__ = ("callback", "bar")

    def __init__(self, callback, bar):
        self.callback, self.bar = callback, bar


@contextlib.contextmanager
def progress(callback=None, *, bar: bool | None = None):
    """Report the progress of every long ndpack call made inside the ``with`` block
    (in this thread).

    Parameters
    ----------
    callback : callable, optional
        ``callback(done, total)`` as units of work finish (from ndpack's threads, one at
        a time), and ``callback(total, total)`` exactly once when a call completes.
    bar : bool, optional
        Show a bar (tqdm when installed, else a line on stderr when it is a terminal);
        default: a bar when no callback is given.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(1e6), chunks=(100_000,))
    >>> calls = []
    >>> with ndpack.progress(callback=lambda d, t: calls.append((d, t))):
    ...     _ = (a * 2).compute()
    >>> calls[-1], sum(d == t for d, t in calls)
    ((10, 10), 1)
    """
    if callback is not None and not callable(callback):
        raise ParameterError(f"progress(callback=...) takes a callable, not {callback!r}")
    scope = _Scope(callback, callback is None if bar is None else bool(bar))
    scopes = getattr(_LOCAL, "scopes", None)
    if scopes is None:
        scopes = _LOCAL.scopes = []
    scopes.append(scope)
    try:
        yield scope
    finally:
        scopes.remove(scope)


@contextlib.contextmanager
def task(total: int, chunk_bytes: int = 0, bar: bool = False):
    """One call's units of work: yields ``tick(n=1)``, to be called (from any thread) as
    units finish; reports to the active :func:`progress` scopes of this thread and to
    a bar when `bar` (``compute(progress=True)``).  Nested tasks of a thread report
    nothing (the outermost call does), and a task without scope nor bar costs nothing.
    """
    scopes = list(getattr(_LOCAL, "scopes", ()) or ())
    if getattr(_LOCAL, "busy", False) or (not scopes and not bar):
        yield _noop_n
        return
    total = max(int(total), 0)
    callbacks = [s.callback for s in scopes if s.callback is not None]
    show = bar or any(s.bar for s in scopes)
    lock = threading.Lock()
    state = {"done": 0, "drawn": 0}
    _LOCAL.busy = True
    try:
        with progress_bar(show, total, chunk_bytes) as bar_tick:
            def tick(n: int = 1) -> None:
                with lock:
                    done = min(total, state["done"] + n)
                    for _ in range(done - state["drawn"]):
                        bar_tick()
                    state["drawn"] = done
                    if state["done"] < done < total:   # completion: reported at the end
                        for f in callbacks:
                            f(done, total)
                    state["done"] = done
            yield tick
            with lock:
                for _ in range(total - state["drawn"]):
                    bar_tick()
                state["done"] = state["drawn"] = total
            for f in callbacks:
                f(total, total)
    finally:
        _LOCAL.busy = False


def _noop_n(n: int = 1) -> None:
    return None
