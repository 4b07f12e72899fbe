"""Remote objects as byte sources: any URL fsspec knows (``s3://``, ``gs://``,
``https://``, ``memory://``, chained ``zip://m::s3://b/o``), read by ranges.

:class:`RemoteSource` is the :class:`~ndpack.storage.source.Source` of one object.  It
keeps two windows of the object from the first requests (its head, and the index plus
trailer that :meth:`RemoteSource.hint` names), so that opening a frame costs two
requests; other reads are batches of ranges merged and split by
:func:`~ndpack.storage.source.plan_requests`, run on the ``remote`` threads
(``concurrency`` requests at a time, apart from the decoding threads), their bytes
charged to the memory limit while in flight.  Every request is checked: more bytes
than asked (a server that ignored ``Range``) is an error at once, fewer bytes, resets,
timeouts, 5xx and throttling are retried with exponential backoff, then reported by a
:class:`~ndpack.storage.source.SourceError` naming the URL; 404 and 403 are
``FileNotFoundError``/``PermissionError`` naming the URL.

Block reads (:meth:`RemoteSource.read_blocks`): the chunk's header and block starts in
one request, then the wanted blocks' spans in one batch, packed as the valid smaller
chunk ``csrc/format/fdread.c`` builds for local files; the fetched bytes are checked
by :func:`verify_fetched_blocks` against the chunk's block checksums.

fsspec (and aiohttp/s3fs for HTTP/S3) is optional: without it, a URL is a one-line
error naming the extra ``ndpack[remote]``.

Examples
--------
>>> import numpy as np, ndpack, fsspec
>>> with fsspec.open("memory://doc/a.b2nd", "wb") as f:
...     _ = f.write(ndpack.asarray(np.arange(10.0), chunks=(4,)).to_cframe())
>>> a = ndpack.open("memory://doc/a.b2nd")
>>> a[3:6].tolist(), a.urlpath
([3.0, 4.0, 5.0], 'memory://doc/a.b2nd')
>>> is_url("s3://bucket/x.b2nd"), is_url("/tmp/x.b2nd")
(True, False)
"""

from __future__ import annotations

import errno
import re
import struct
import threading
import time

import numpy as np

from ndpack.chunks import block_sums_check, chunk_info, crc32c
from ndpack.codecs import Filter
from ndpack.errors import FormatError, NdpackError
from ndpack.resources import memory_limit, pool
from ndpack.storage.source import (IN_FLIGHT, SourceError, Source, fetch_batch,
                                   join_pieces, plan_requests)

__all__ = ["RemoteSource", "RemoteUnavailable", "is_url", "filesystem", "upload",
           "verify_fetched_blocks", "DEFAULTS"]

#: Defaults of every remote source (``storage_options`` of ``ndpack.open`` go to
#: fsspec; these are ndpack's own and can be given there too).
DEFAULTS = dict(
    concurrency=16,           # requests in flight per batch (latency-bound: many)
    gap=64 << 10,             # ranges closer than this are fetched as one
    max_request=32 << 20,     # a request never asks for more (huge ranges are split)
    head=64 << 10,            # the first request: the frame header (and small objects)
    timeout=30.0,             # seconds for one request (connect, and between bytes)
    retries=3,                # transient failures retried this many times
    backoff=0.1,              # seconds before the first retry, doubled at each one
)

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_EXTRA = "pip install 'ndpack[remote]'"


class RemoteUnavailable(NdpackError, ImportError):
    """A URL was given but fsspec (the ``ndpack[remote]`` extra) is not installed."""


def is_url(path) -> bool:
    """Whether `path` is a URL (``scheme://...``, or a ``::`` chain of them) rather
    than a local path."""
    return isinstance(path, str) and bool(_URL.match(path)) and not path.startswith("file://")


def _fsspec():
    try:
        import fsspec
    except ImportError:
        raise RemoteUnavailable(f"reading URLs needs fsspec: {_EXTRA}") from None
    return fsspec


def filesystem(url: str, storage_options: dict | None = None):
    """``(fs, path)`` of `url` through fsspec, with timeouts set for HTTP and S3
    unless `storage_options` sets them."""
    fsspec = _fsspec()
    opts = dict(storage_options or {})
    timeout = opts.pop("timeout", DEFAULTS["timeout"])
    scheme = url.split("::")[-1].split("://")[0].lower()
    if scheme in ("http", "https") and "client_kwargs" not in opts:
        try:
            import aiohttp
        except ImportError:
            raise RemoteUnavailable(f"reading {scheme}:// URLs needs aiohttp: "
                                    f"{_EXTRA}") from None
        opts["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(
            total=None, connect=timeout, sock_connect=timeout, sock_read=timeout)}
    if scheme in ("s3", "s3a") and "config_kwargs" not in opts:
        opts["config_kwargs"] = {"connect_timeout": timeout, "read_timeout": timeout}
    try:
        fs, path = fsspec.core.url_to_fs(url, **opts)
    except ImportError as exc:
        raise RemoteUnavailable(f"{url}: {exc} ({_EXTRA})") from None
    except ValueError as exc:
        raise SourceError(f"{url}: {exc}") from None
    return fs, path


def _status(exc) -> int | None:
    """The HTTP status an exception of aiohttp/botocore/s3fs carries, if any."""
    for attr in ("status", "status_code", "code"):
        v = getattr(exc, attr, None)
        if isinstance(v, int) and 100 <= v < 600:
            return v
    resp = getattr(exc, "response", None)
    if isinstance(resp, dict):
        v = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(v, int):
            return v
    return None


def _transient(exc) -> bool:
    """Worth retrying: 5xx, throttling, resets, timeouts, truncated bodies."""
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
        return False
    st = _status(exc)
    if st is not None:
        return st >= 500 or st in (408, 429)
    if isinstance(exc, OSError) and exc.errno in (errno.EINVAL, errno.EACCES,
                                                  errno.ENOENT, errno.EPERM):
        return False                   # s3fs's translation of a client error (4xx)
    if isinstance(exc, (ConnectionError, TimeoutError, OSError, _ShortRead)):
        return True
    mod = type(exc).__module__ or ""
    return mod.startswith(("aiohttp", "botocore", "urllib3", "asyncio"))


class _ShortRead(Exception):
    pass


class _Status(Exception):
    """An HTTP status that is not an answer (5xx, 429...): classified by _transient."""

    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


class _Changed(Exception):
    pass


def _total(content_range) -> int | None:
    """The object's size from a ``Content-Range: bytes a-b/total`` header."""
    if content_range and "/" in content_range:
        tail = content_range.rsplit("/", 1)[1].strip()
        if tail.isdigit():
            return int(tail)
    return None


def _http_get(fs, path: str, start: int, end: int, etag: str | None):
    """One ranged GET through the aiohttp session of fsspec's HTTPFileSystem (the
    status and headers are ours to check): ``(body, etag, size or None)``."""
    from fsspec.asyn import sync

    async def go():
        session = await fs.set_session()
        kw = dict(fs.kwargs)
        headers = dict(kw.pop("headers", None) or {})
        headers["Range"] = f"bytes={start}" if start < 0 else f"bytes={start}-{end - 1}"
        if etag:
            headers["If-Match"] = etag
        async with session.get(fs.encode_url(path), headers=headers, **kw) as r:
            body = await r.read()
            return r.status, r.headers.get("ETag"), r.headers.get("Content-Range"), body

    status, tag, crange, body = sync(fs.loop, go)
    if status == 206:
        return body, tag, _total(crange)
    if status == 200:                        # the whole object: fine only if asked for
        if (start == 0 and len(body) <= end) or (start < 0 and len(body) <= -start):
            return body, tag, len(body)
        raise SourceError(f"asked bytes {start}-{end}, the server sent {len(body)} bytes "
                          "with status 200 (it ignored the Range request)")
    if status == 416:
        return b"", tag, _total(crange)
    if status == 412:
        raise _Changed()
    if status == 404:
        raise FileNotFoundError(path)
    if status in (401, 403):
        raise PermissionError(f"HTTP {status}")
    raise _Status(status)


def _s3_get(fs, path: str, start: int, end: int, etag: str | None):
    """One ranged get_object of s3fs with ``IfMatch`` once the ETag is known."""
    from fsspec.asyn import sync
    bucket, key, version = fs.split_path(path)

    async def go():
        kw = {"Range": f"bytes={start}" if start < 0 else f"bytes={start}-{end - 1}"}
        if etag:
            kw["IfMatch"] = etag
        if version:
            kw["VersionId"] = version
        resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, **kw)
        try:
            body = await resp["Body"].read()
        finally:
            resp["Body"].close()
        return body, resp.get("ETag"), _total(resp.get("ContentRange"))

    try:
        return sync(fs.loop, go)
    except OSError as exc:
        text = str(exc)
        low = text.lower().replace("-", "")
        if "PreconditionFailed" in text or "412" in text or "precondition" in low:
            raise _Changed() from None
        if "InvalidRange" in text or "416" in text:
            return b"", None, None
        raise


def _generic_get(fs, path: str, start: int, end: int, etag: str | None):
    return fs.cat_file(path, start=start, end=end), None, None


def _getter(fs):
    """How one range is fetched: our own request for HTTP and S3 (status, ETag and
    If-Match checked), fsspec's ``cat_file`` for every other filesystem."""
    name = type(fs).__name__
    if name == "HTTPFileSystem" and hasattr(fs, "set_session"):
        return _http_get
    if name == "S3FileSystem" and hasattr(fs, "_call_s3"):
        return _s3_get
    return _generic_get


class RemoteSource(Source):
    """The byte source of one remote object (see the module's docstring).

    Parameters
    ----------
    url : str
        Any URL fsspec knows.
    storage_options : dict, optional
        Options of the filesystem (fsspec's), plus ndpack's own (:data:`DEFAULTS`).
    """

    block_reads = True

    def __init__(self, url: str, storage_options: dict | None = None):
        opts = dict(storage_options or {})
        self.options = {k: opts.pop(k, v) for k, v in DEFAULTS.items()}
        opts["timeout"] = self.options["timeout"]
        self.url = self.name = url
        self.fs, self.path = filesystem(url, opts)
        self.get = _getter(self.fs)
        self.etag = None                 # the object's identity, from the first answer
        self.lock = threading.Lock()
        self._size = None
        self.windows: list = []          # (start, bytes) kept: the head, the tail
        self.ahead: dict = {}            # (start, end) -> bytes prefetched, read once
        self.pending: dict = {}          # (start, end) -> Future of a read-ahead
        self.pending_bytes = 0
        self.recent: dict = {}           # ranges read lately (ordered, bounded)
        self.requests = 0                # counted by fetch (tests, benchmarks)
        self.ahead_hits = 0              # reads served by the read-ahead
        self.fetched = 0

    # --- one request ---------------------------------------------------------------------
    def _fetch(self, start: int, end: int):
        """Bytes ``[start, end)`` by one request, retried while the failure is transient.
        `end` past the object's end gives fewer bytes when the size is not known yet."""
        o = self.options
        delay = o["backoff"]
        for attempt in range(o["retries"] + 1):
            try:
                with self.lock:
                    self.requests += 1
                data, tag, size = self.get(self.fs, self.path, start, end, self.etag)
                with self.lock:
                    self.fetched += len(data)
                    if self.etag is None and tag:
                        self.etag = tag          # the identity: later requests If-Match it
                    elif tag and self.etag and tag != self.etag:
                        raise _Changed()
                    if self._size is None and size is not None:
                        self._size = size
                return data if start < 0 else self._checked(start, end, data)
            except _Changed:
                raise SourceError(f"{self.url}: the object changed since it was opened "
                                  f"(its ETag is no longer {self.etag})") from None
            except FileNotFoundError:
                raise FileNotFoundError(f"{self.url}: no such object (404)") from None
            except PermissionError as exc:
                raise PermissionError(f"{self.url}: access denied ({exc})") from None
            except SourceError as exc:
                if exc.args and str(exc.args[0]).startswith(self.url):
                    raise
                raise SourceError(f"{self.url}: {exc}") from None
            except Exception as exc:  # noqa: BLE001  (classified, then raised or retried)
                st = _status(exc)
                if st in (401, 403):
                    raise PermissionError(f"{self.url}: access denied ({st})") from None
                if st == 404:
                    raise FileNotFoundError(f"{self.url}: no such object (404)") from None
                if not _transient(exc) or attempt == o["retries"]:
                    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                    raise SourceError(f"{self.url}: bytes {start}-{end} failed after "
                                      f"{attempt + 1} attempt(s): {what}") from exc
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    def _checked(self, start: int, end: int, data):
        """`data` if it is what ``[start, end)`` asked for; an error if the server sent
        more (it ignored Range) and :class:`_ShortRead` (retried) if it sent less."""
        size = self._size
        want = end - start if size is None else max(0, min(end, size) - start)
        if len(data) > end - start:
            raise SourceError(f"{self.url}: asked bytes {start}-{end}, the server sent "
                              f"{len(data)} bytes (it ignored the Range request)")
        if len(data) < want and size is not None:
            raise _ShortRead(f"{len(data)} of {want} bytes (truncated body)")
        return data

    # --- the interface -------------------------------------------------------------------
    def size(self) -> int:
        if self._size is None:
            self._load_head()
        return self._size

    def _load_head(self) -> None:
        """The first requests: the object's head, and for HTTP and S3 its tail at the
        same time (a frame's index and trailer are there: open costs one round trip).
        The size comes from Content-Range, else it is the frame's length when the head
        is a frame's, else it is asked of the store."""
        n = self.options["head"]
        suffix = None                       # HTTP, S3: the tail at once (suffix range)
        if self.get is not _generic_get:
            suffix = pool("remote", self.options["concurrency"]).submit(
                self._fetch, -n, None)
        head = self._fetch(0, n)
        if suffix is not None:
            tail = suffix.result(self._wait())
            if self._size is not None and len(tail) <= self._size:
                self.windows.append((self._size - len(tail), bytes(tail)))
        if self._size is not None:          # Content-Range said it
            pass
        elif len(head) < n:
            self._size = len(head)
        elif len(head) >= 24 and head[:10] == b"\x9e\xa8b2frame\x00" and head[15] == 0xCF:
            self._size = struct.unpack_from(">Q", head, 16)[0]
        else:
            self._size = int(self.fs.size(self.path))
        self.windows.append((0, bytes(head)))

    def _held(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` is in a kept window, fetched ahead or on its way."""
        if any(w <= start and end <= w + len(d) for w, d in self.windows):
            return True
        with self.lock:
            return (start, end) in self.ahead or (start, end) in self.pending

    def _window(self, pos: int, n: int):
        """`n` bytes at `pos` from a kept window or a prefetched piece, else None."""
        for start, data in self.windows:
            if start <= pos and pos + n <= start + len(data):
                return memoryview(data)[pos - start:pos - start + n]
        with self.lock:
            data = self.ahead.pop((pos, pos + n), None)
            fut = self.pending.pop((pos, pos + n), None) if data is None else None
            if fut is not None:
                self.pending_bytes -= n
            self._remember((pos, pos + n))
        if fut is not None:
            data = fut.result(self._wait())
            self.ahead_hits += 1
        return data

    def _wait(self) -> float:
        """The longest a request may take, its retries included (seconds)."""
        o = self.options
        return o["timeout"] * (o["retries"] + 2) + o["backoff"] * 2 ** (o["retries"] + 1)

    def fetch_ahead(self, ranges) -> None:
        """Start fetching `ranges` in the background (read-ahead); a read of one of them
        waits for it.  Ranges kept or running already are not fetched again."""
        p = pool("remote", self.options["concurrency"])
        cap = memory_limit() // 8
        for s, e in ranges:
            key = (int(s), int(e))
            with self.lock:
                if key in self.ahead or key in self.pending or key in self.recent:
                    continue
                self.pending[key] = p.submit(self._charged, *key)
                self.pending_bytes += key[1] - key[0]
                while self.pending_bytes > cap and len(self.pending) > 1:
                    old = next(iter(self.pending))          # the oldest, never read
                    self.pending.pop(old).cancel()
                    self.pending_bytes -= old[1] - old[0]

    def _charged(self, start: int, end: int):
        held = IN_FLIGHT.take(end - start, self._wait())
        try:
            return self._fetch(start, end)
        finally:
            IN_FLIGHT.give(held)

    def drop_ahead(self) -> None:
        """Forget what was fetched ahead (the reads went elsewhere)."""
        with self.lock:
            pending, self.pending, self.ahead = self.pending, {}, {}
            self.pending_bytes = 0
        for f in pending.values():
            f.cancel()

    def read(self, pos: int, n: int):
        if self._size is None:
            self._load_head()
        n = max(0, min(n, self._size - pos))
        got = self._window(pos, n)
        if got is not None:
            return got
        return self.read_ranges([(pos, pos + n)])[0]

    def _remember(self, key) -> None:
        """`key` was read (or is being read): read-ahead leaves it alone (lock held)."""
        self.recent[key] = None
        if len(self.recent) > 32:         # about one read-ahead depth: a later pass
            del self.recent[next(iter(self.recent))]

    def read_into(self, pos: int, n: int, buf):
        data = self.read(pos, n)
        mv = memoryview(buf).cast("B")[:len(data)]
        mv[:] = data
        return mv

    def read_ranges(self, ranges) -> list:
        """The bytes of every ``(start, end)`` of `ranges`: merged, split and fetched
        ``concurrency`` at a time (ranges past the end are cut to the object)."""
        size = self.size()
        ranges = [(max(0, int(s)), min(int(e), size)) for s, e in ranges]
        o = self.options
        reqs = plan_requests(ranges, o["gap"], o["max_request"])
        pieces = fetch_batch(reqs, self._fetch, pool("remote", o["concurrency"]), self._wait())
        return join_pieces(ranges, reqs, pieces)

    def hint(self, start: int, end: int) -> None:
        """Keep ``[start, end)`` (the frame's index and trailer) from one request."""
        if end > start and not self._held(start, end):
            self.windows.append((start, bytes(self.read_ranges([(start, end)])[0])))

    def prefetch(self, ranges) -> None:
        """Fetch `ranges` in one batch now; each is then read once from memory."""
        ranges = [(int(s), int(e)) for s, e in ranges if e > s and not self._held(s, e)]
        if len(ranges) < 2:
            return
        for r, data in zip(ranges, self.read_ranges(ranges)):
            with self.lock:
                self.ahead[r] = data

    def read_blocks(self, pos: int, nblocks: int, numbers, buf, min_cbytes: int,
                    entry=None):
        """The chunk at `pos` reduced to the blocks `numbers`: ``(size, needed)`` as
        :func:`ndpack.chunks.read_blocks_from_file` (0 declines: read it whole); the
        fetched bytes are checked against the block checksums `entry` when given
        (:func:`verify_fetched_blocks`)."""
        try:
            return self._read_blocks(pos, nblocks, numbers, buf, min_cbytes, entry)
        except SourceError as exc:
            raise exc.at(self.describe(pos)) from exc.__cause__

    def describe(self, pos: int) -> str:
        """What starts at byte `pos` (the frame sets this to name its chunks)."""
        return f"the chunk at byte {pos}"

    def _read_blocks(self, pos, nblocks, numbers, buf, min_cbytes, entry):
        hend = 32 + 4 * nblocks
        if hend > len(buf):
            return 0, hend
        head = bytes(self.read(pos, hend))
        plan = _block_plan(head, nblocks, numbers, min_cbytes)
        if plan is None:
            return 0, 0
        spans, lo, starts = plan
        total = lo + sum(e - s for s, e in spans)
        if total > len(buf):
            return 0, total
        ranges = ([(pos + hend, pos + lo)] if lo > hend else []) + \
                 [(pos + s, pos + e) for s, e in spans]
        got = self.read_ranges(ranges)
        if any(len(g) != e - s for g, (s, e) in zip(got, ranges)):
            raise SourceError(f"{self.url}: the blocks of the chunk at byte {pos} were "
                              "cut short")
        out = memoryview(buf).cast("B")
        out[:hend] = head
        at, where = lo, []
        if lo > hend:
            out[hend:lo] = got[0]
        for (s, e), data in zip(spans, got[-len(spans):] if spans else []):
            out[at:at + e - s] = data
            where.append((s, e, at))
            at += e - s
        _rewrite_starts(out, nblocks, numbers, starts, where, hend,
                        _has_delta(head))
        struct.pack_into("<i", out, 12, total)
        if entry is not None:
            verify_fetched_blocks(head + bytes(got[0] if lo > hend else b""),
                                  out[:total], numbers, entry)
        return total, 0

    def close(self) -> None:
        self.drop_ahead()
        self.windows = []


def verify_fetched_blocks(prefix: bytes, packed, numbers, entry) -> None:
    """Check the bytes fetched for a partial read of a chunk against its block
    checksums `entry` (:func:`ndpack.chunks.block_sums`; issue 41): the chunk's
    original prefix (`prefix`: its header, block starts and what follows up to the first
    block, as stored) against ``entry[0]``, and the wanted blocks (with block 0 under
    DELTA) as they lie in the `packed` smaller chunk, whose blocks keep their bytes.
    :class:`~ndpack.errors.FormatError` naming the part that differs.  Whole chunks
    are verified against the chunk crc32c as for local files (frames' ``get``)."""
    nblocks = (len(entry) // 4) - 1
    dstart = 32 + 4 * nblocks
    if prefix[2] & 0x05 == 0x05 and prefix[31] & 0x01:           # a dictionary
        if len(prefix) < dstart + 4:
            raise FormatError("the chunk's dictionary size is missing")
        dstart += 4 + struct.unpack_from("<i", prefix, dstart)[0]
    if dstart > len(prefix):
        raise FormatError("the chunk's prefix runs into its blocks")
    (want,) = struct.unpack_from("<I", entry, 0)
    got = crc32c(prefix[:dstart])
    if got != want:
        raise FormatError(f"the header and block starts: checksum mismatch (crc32c "
                          f"{got:08x}, the record says {want:08x})")
    block_sums_check(packed, numbers, entry, prefix=False)


def _has_delta(head: bytes) -> bool:
    return int(Filter.DELTA) in head[16:22]


def _block_plan(head: bytes, nblocks: int, numbers, min_cbytes: int):
    """``(spans, lo, starts)`` of the blocks `numbers` of a chunk whose first bytes are
    `head` (header and block starts): the merged spans to fetch, where the first block
    begins (the dictionary sits before it) and the block starts; None declines."""
    hend = 32 + 4 * nblocks
    if len(head) < hend:
        return None
    (cbytes,) = struct.unpack_from("<i", head, 12)
    if cbytes < hend or cbytes < min_cbytes:
        return None
    probe = bytearray(head)
    struct.pack_into("<i", probe, 12, hend)          # the header alone, as a chunk
    try:
        ci = chunk_info(bytes(probe))
    except NdpackError:
        return None
    if (not ci["extended"] or ci["special"] or ci["memcpyed"] or ci["vlblocks"]
            or ci["nblocks"] != nblocks):
        return None
    starts = np.frombuffer(head, "<i4", nblocks, 32).astype(np.int64)
    if starts.size and (starts.min() < hend or starts.max() >= cbytes):
        return None                                   # corrupt: the decoder says so
    order = np.sort(starts)
    want = [int(j) for j in numbers] + ([0] if _has_delta(head) else [])
    if any(not 0 <= j < nblocks for j in want):
        return None
    spans = []
    for j in want:
        s = int(starts[j])
        k = int(np.searchsorted(order, s, side="right"))
        spans.append((s, int(order[k]) if k < nblocks else cbytes))
    spans.sort()
    merged: list = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    lo = int(order[0]) if nblocks else hend
    return [tuple(m) for m in merged], lo, starts


def _rewrite_starts(out, nblocks: int, numbers, starts, where, hend: int, delta: bool):
    """The packed chunk's block starts: wanted blocks at their packed places, the
    others at the first wanted block's (never decoded), as fdread.c writes them."""
    fresh = np.full(nblocks, -1, np.int64)
    want = [int(j) for j in numbers] + ([0] if delta else [])
    for j in want:
        s = int(starts[j])
        for a, e, at in where:
            if a <= s < e:
                fresh[j] = at + (s - a)
                break
    fill = fresh[0 if delta else want[0]] if want else hend
    fresh[fresh < 0] = fill
    out[32:32 + 4 * nblocks] = fresh.astype("<i4").tobytes()


def remote_path_error(url: str) -> str:
    """The message for operations an object store cannot do in place."""
    return (f"{url}: objects in remote stores are read-only here (resizing, appending "
            "and updating need a local copy: ndpack.load(url), then save it)")


def upload(local: str, url: str, storage_options: dict | None = None) -> None:
    """Put the finished local file `local` at `url` whole (s3fs uploads big files in
    parts, and the object appears only when the upload completes); on failure no object
    is left under the name where the store allows removing it."""
    opts = {k: v for k, v in (storage_options or {}).items() if k not in DEFAULTS}
    fs, path = filesystem(url, opts)
    kw = {"method": "put"} if type(fs).__name__ == "HTTPFileSystem" else {}
    try:
        fs.put_file(local, path, **kw)
    except Exception as exc:  # noqa: BLE001  (reported with the URL)
        try:
            if fs.exists(path):
                fs.rm_file(path)
        except Exception:  # noqa: BLE001  (the first error is the one to report)
            pass
        if isinstance(exc, (PermissionError, FileNotFoundError)):
            raise type(exc)(f"{url}: {exc}") from None
        raise SourceError(f"{url}: upload failed: {type(exc).__name__}: {exc}") from exc
