"""Chunk stores on disk: contiguous frames (a file, or a frame embedded at an offset in
a bigger file, read with positioned reads or through mmap) and sparse frames (a
directory of chunk files), mutated in place the way C-Blosc2 does it (FORMAT.md §4.8)
so that python-blosc2 and ndpack can share files.

Each store implements :class:`ndpack.storage.frame.FrameBase`; one chunk read is one
``os.pread`` (or one mmap slice).
"""

from __future__ import annotations

import array
import bisect
import contextlib
import mmap
import os
import re
import struct
import threading
import weakref

import numpy as np

from ndpack.chunks import special_chunk
from ndpack.codecs import SpecialValue
from ndpack.errors import FormatError, NdpackError, OperationError, ParameterError
from ndpack.resources import memory_limit
from ndpack.storage.frame import (FrameBase, HEADER_FIXED, MAGIC, MemoryFrame, RawChunk,
                                  SPARSE_INDEX,
                                  SPECIAL_OFFSET_CODES, chunk_len, offset_code, build_header, chunk_cbytes_of,
                                  chunk_nbytes_of, decode_index, encode_index, index_special, parse_header,
                                  serialize, special_offset)
from ndpack.storage import checksums
from ndpack.storage.atomic import start_writeback
from ndpack.storage.meta import build_trailer, locate_trailer, parse_trailer
from ndpack.storage.remote import RemoteSource, is_url, remote_path_error
from ndpack.storage.source import Source, SourceError, local_source

__all__ = ["ContiguousFrame", "SparseFrame", "parse_cframe", "open_frame"]

_Reader = local_source        # the positioned reader's former name (tests build it)
_LAZY_MIN = 2**17             # chunks read block by block from this size (ndread's)


_URL_PART = re.compile(r"(?:^|/)([A-Za-z][A-Za-z0-9+.\-]*):/")


def _refuse_url_path(path: str) -> None:
    """A new frame whose path came from a URL (``s3://b/x`` made ``<cwd>/s3:/b/x``):
    an object store is not written in place; say so instead of creating local
    folders named after the scheme."""
    m = _URL_PART.search(path)
    if m and not os.path.isdir(path[:m.end(1) + 1]):
        raise OperationError(f"{path!r} looks like a URL ({m.group(1)}://): frames are "
                             "written to object stores whole, with ndpack.save(array, url) "
                             "(compute into a local file or in memory first)")


def _read_exact(reader: Source, pos: int, n: int, what: str):
    data = reader.read(pos, n)
    if len(data) != n:
        raise FormatError(f"frame byte {pos}: {what} truncated ({len(data)} of {n} bytes)")
    return data


def _read_chunk(reader: Source, pos: int, limit: int, what: str):
    if pos < 0 or pos + 16 > limit:
        raise FormatError(f"frame byte {pos}: {what} starts outside the frame (end {limit})")
    head = _read_exact(reader, pos, 16, what)
    cb = chunk_cbytes_of(head, pos, what)
    if pos + cb > limit:
        raise FormatError(f"frame byte {pos}: {what} of {cb} bytes runs past byte {limit}")
    return _read_exact(reader, pos, cb, what)


def _parse_frame(reader: Source, base: int, sparse_expected: bool | None):
    """Parse header, trailer and index of the frame at `base`; returns a dict of state."""
    size = reader.size()
    if size - base < HEADER_FIXED:
        raise FormatError(f"frame byte {base}: only {max(size - base, 0)} bytes, a frame "
                          f"header needs {HEADER_FIXED}")
    head = _read_exact(reader, base, HEADER_FIXED, "frame header")
    if head[0] != 0x9E or bytes(head[1:10]) != b"\xa8" + MAGIC:
        raise FormatError(f"frame byte {base}: bad magic, expected 9E A8 'b2frame\\0', got "
                          f"{bytes(head[:10]).hex(' ')}")
    hlen = struct.unpack_from(">i", head, 11)[0] if head[10] == 0xD2 else 0
    if not HEADER_FIXED < hlen <= size - base:
        raise FormatError(f"frame byte {base + 11}: header_len {hlen} out of range")
    fields, info, meta = parse_header(_read_exact(reader, base, hlen, "frame header"), base)
    flen = fields["frame_len"]
    if base + flen > size:
        raise FormatError(f"frame byte {base + 16}: frame_len {flen} but only {size - base} "
                          "bytes available (truncated frame)")
    if sparse_expected is not None and info.sparse != sparse_expected:
        raise FormatError(f"frame byte {base + 26}: frame_type {fields['frame_type']}, "
                          f"expected {'sparse' if sparse_expected else 'contiguous'}")
    index_at = hlen if info.sparse else hlen + fields["cbytes"]
    if hlen <= index_at < flen:        # index and trailer: one request for remote sources
        reader.hint(base + index_at, base + flen)
    tail = bytes(_read_exact(reader, base + flen - 23, 23, "trailer"))
    tlen = locate_trailer(tail, flen, base)
    tstart = flen - tlen
    if tstart < hlen:
        raise FormatError(f"frame byte {base + flen - 22}: trailer_len {tlen} overlaps the header")
    vlmeta = parse_trailer(_read_exact(reader, base + tstart, tlen, "trailer"), base + tstart)
    nbytes, cbytes, cs = fields["nbytes"], fields["cbytes"], info.chunksize
    idx_pos = hlen if info.sparse else hlen + cbytes
    if not info.sparse and idx_pos > tstart and nbytes:
        raise FormatError(f"frame byte {base + 39}: cbytes {cbytes} runs past the trailer "
                          f"at {base + tstart}")
    if nbytes == 0:
        offsets = np.zeros(0, dtype="<i8")
    else:
        nchunks = -(-nbytes // cs) if cs > 0 else None
        ichunk = _read_chunk(reader, base + idx_pos, base + tstart, "offsets index")
        offsets = decode_index(ichunk, nchunks, base + idx_pos)
        _check_offsets(offsets, 0 if info.sparse else cbytes, base + idx_pos)
    return dict(fields=fields, info=info, meta=meta, vlmeta=vlmeta, offsets=offsets,
                idx_pos=idx_pos, tstart=tstart, fingerprint=tail[-16:])


def _check_offsets(offsets: np.ndarray, cbytes: int, pos: int):
    """Every regular offset lies inside the chunks section; special codes are known."""
    if cbytes:
        bad = np.nonzero((offsets >= 0) & (offsets + 16 > cbytes))[0]
        if bad.size:
            i = int(bad[0])
            raise FormatError(f"frame byte {pos}: index entry {i} = {int(offsets[i])} points "
                              f"outside the chunks section ({cbytes} bytes)")
    neg = offsets[offsets < 0]
    if neg.size:
        codes = (neg.view(np.uint64) >> np.uint64(56)) & np.uint64(0x7F)
        for c in np.unique(codes):
            if int(c) not in SPECIAL_OFFSET_CODES:
                raise FormatError(f"frame byte {pos}: index holds a special offset with "
                                  f"unknown code {int(c)}")


class _FileFrame(FrameBase):
    """Common parts of the frames read through an index (files and parsed buffers)."""

    _writes_raw = False          # RawChunk: joined before storing (see ContiguousFrame)

    base = 0
    _sorted = None                        # sorted distinct offsets, for chunk end bounds
    pending = None      # atomic.Pending while a new frame is written under a temporary name

    def commit(self) -> None:
        """Move a new frame from its temporary name to its target (flushed first); a
        frame that is not pending is left alone (see :mod:`ndpack.storage.atomic`)."""
        with self.lock:
            p = self.pending
            if p is None:
                return
            p.commit()
            self.path, self.pending = p.target, None

    def abort(self) -> None:
        """Remove the temporary of a new frame that will not be completed."""
        p, self.pending = self.pending, None
        if p is not None:
            self.close()
            p.abort()

    def maybe_commit(self) -> None:
        """Move a new frame into place once its last expected chunk is written (and no
        ``holding()`` block defers it); a bulk writer that bypasses ``_mutate`` calls
        this itself."""
        p = self.pending
        if p is not None and not p.held and p.expected == len(self.offsets):
            self.commit()

    # contiguous layout (ContiguousFrame, _BufferFrame); SparseFrame overrides these two
    def _raw_chunk_head(self, i: int):
        pos = self.base + self.header_len + self.offsets[i]
        return _read_exact(self.reader, pos, 16, f"chunk {i} header")

    def _raw_chunk(self, i: int, v: int, buf: bytearray | None = None):
        """Chunk at section offset `v` with one positioned read (the next offset bounds it),
        into `buf` when it is big enough."""
        if self._sorted is None:
            self._sorted = sorted({o for o in self.offsets if o >= 0})
        k = bisect.bisect_right(self._sorted, v)
        end = self._sorted[k] if k < len(self._sorted) else self._cbytes
        pos = self.base + self.header_len + v
        if v < 0 or end - v < 16:
            raise FormatError(f"frame byte {pos}: chunk {i} starts outside the chunks section "
                              f"or overlaps the next chunk")
        if buf is not None and len(buf) >= end - v:
            data = self.reader.read_into(pos, end - v, buf)
            if len(data) != end - v:
                raise FormatError(f"frame byte {pos}: chunk {i} truncated ({len(data)} of "
                                  f"{end - v} bytes)")
        else:
            data = _read_exact(self.reader, pos, end - v, f"chunk {i}")
        cb = chunk_cbytes_of(data, pos, f"chunk {i}")
        if cb > len(data):
            raise FormatError(f"frame byte {pos}: chunk {i} of {cb} bytes runs into the next "
                              f"chunk or past the chunks section at byte "
                              f"{self.base + self.header_len + end}")
        return data if cb == len(data) else memoryview(data)[:cb]

    def _load(self, st: dict, base: int):
        self.fields = st["fields"]
        self.meta = dict(st["meta"])
        self.vlmeta = dict(st["vlmeta"])
        self.offsets = array.array("q", st["offsets"].astype(np.int64).tobytes())
        self.header_len = self.fields["header_len"]
        self.nbytes = self.fields["nbytes"]
        self._cbytes = self.fields["cbytes"]
        if not self.offsets and not self.info.sparse:
            self._cbytes = 0              # C-Blosc2 keeps a stale cbytes in emptied frames
        cs, n = self.info.chunksize, len(self.offsets)
        if cs < 0 and n:
            self.info.chunksize = cs = 0          # "no chunk yet" but there are chunks
        if cs > 0:
            self.cnb = [cs] * n
            if n and self.nbytes % cs:
                self.cnb[-1] = self.nbytes % cs
            if n != -(-self.nbytes // cs):
                raise FormatError(f"frame byte {base + 58}: chunksize {cs} and nbytes "
                                  f"{self.nbytes} disagree with {n} index entries")
        else:
            self.cnb = []
            if n > max(self._cbytes, 0) // 16:      # every chunk has a 16-byte header at least
                raise FormatError(f"frame byte {base + 39}: {n} index entries in a "
                                  f"variable-size frame of {self._cbytes} chunk bytes")
            rd = getattr(self, "reader", None)
            if isinstance(rd, RemoteSource):        # every chunk's head: one batch
                at = self.base + self.header_len
                rd.prefetch([(at + v, at + v + 16) for v in self.offsets if v >= 0])
            for i, v in enumerate(self.offsets):
                if v < 0:
                    raise FormatError(f"frame byte {base + st['idx_pos']}: special offset "
                                      f"for chunk {i} in a variable-size frame")
                head = self._raw_chunk_head(i)
                self.cnb.append(chunk_nbytes_of(head))
            if sum(self.cnb) != self.nbytes:
                raise FormatError(f"frame byte {base + 30}: nbytes {self.nbytes} but the chunks "
                                  f"hold {sum(self.cnb)}")
        checksums.take_record(self, self._cbytes, st.get("fingerprint"))

    @property
    def cbytes(self) -> int:
        return self._cbytes

    def get(self, i: int, buf: bytearray | None = None, partial=False):
        """Chunk `i` (bytes, or a view of `buf` when given and big enough: contiguous
        file frames read into it instead of allocating), checked against the checksum
        record (:mod:`ndpack.storage.checksums`); `partial`: the caller decodes only
        part of it -- the block numbers it decodes (chunks of memory-mapped frames are
        then checked by those blocks' checksums) or True (checked only with
        ``verify="full"``); chunks read from a file are read and checked whole."""
        return checksums.checked(self, i, *self.fetch(i, buf, partial))

    def fetch(self, i: int, buf: bytearray | None = None, partial=False):
        """``(chunk, crc)``: chunk `i` as :meth:`get` gives it, not checked yet, and
        the value its check must find (None: no check), for
        :func:`ndpack.storage.checksums.decode_checked`."""
        # an update may be compacting the section; a file opened read-only never is
        with (contextlib.nullcontext() if self.readonly else self.lock):
            i = self._check_index(i)
            v = self.offsets[i]
            mapped = getattr(getattr(self, "reader", None), "view", None) is not None
            want = checksums.expected(self, i, partial if mapped else False)   # checked later
            if v < 0:
                data = self._synth(offset_code(v, self.header_len), i)
            else:
                try:
                    if not partial and isinstance(getattr(self, "reader", None),
                                                  RemoteSource):
                        self._read_ahead(i)
                    data = self._raw_chunk(i, v, buf)
                except SourceError as exc:      # a remote read: say which chunk
                    raise exc.at(f"chunk {i}") from exc.__cause__
        return data, want

    def _chunk_span(self, v: int) -> tuple[int, int]:
        """``(pos, n)``: where the chunk at section offset `v` lies, `n` bytes up to the
        next stored chunk."""
        if self._sorted is None:
            self._sorted = sorted({o for o in self.offsets if o >= 0})
        k = bisect.bisect_right(self._sorted, v)
        end = self._sorted[k] if k < len(self._sorted) else self._cbytes
        return self.base + self.header_len + v, end - v

    def _read_ahead(self, i: int) -> None:
        """Chunks read whole in order (reductions, the aligned path, regions): the next
        ones are fetched in the background while this one decodes -- 2 ahead, doubling
        with every chunk in order up to 16 and an eighth of the memory limit (the
        source forgets the oldest fetched ahead beyond that)."""
        rd = self.reader
        seq = self.__dict__.setdefault("_reads_in_order", {})   # per thread: the threads
        me = threading.get_ident()                             # of a reduction each
        last, streak = seq.get(me, (-2, 0))                    # take their own run
        streak = streak + 1 if 0 < i - last <= 4 else 0
        seq[me] = (i, streak)
        if not streak:
            return
        depth = min(16, 2 ** streak)
        cap, ranges, total = memory_limit() // 8, [], 0
        for j in range(i + 1, min(self.nchunks, i + 1 + depth)):
            v = self.offsets[j]
            if v < 0:
                continue
            pos, n = self._chunk_span(v)
            total += n
            if total > cap:
                break
            ranges.append((pos, pos + n))
        rd.fetch_ahead(ranges)

    def prefetch(self, parts, layout) -> None:
        """The chunks a read of `parts` (``ChunkPart``s of `layout`) is about to take,
        fetched in one batch when the frame is remote: whole chunks for the parts that
        cover them (and small chunks), the header and block starts for the others
        (their blocks follow, see ``RemoteSource.read_blocks``).  At most an eighth of
        the memory limit is fetched ahead; the rest is read when asked for."""
        rd = getattr(self, "reader", None)
        if not isinstance(rd, RemoteSource):
            return
        hend, cap, total, ranges = 32 + 4 * layout.nblocks, memory_limit() // 8, 0, []
        for p in parts:
            v = self.offsets[p.nchunk]
            if v < 0:
                continue
            pos, n = self._chunk_span(v)
            full = all(loc.start == 0 and loc.step == 1 and len(loc) == e
                       for loc, e in zip(p.local, layout.ext_chunks))
            if not full and n >= _LAZY_MIN:
                n = min(n, hend)
            if total + n > cap:
                break
            ranges.append((pos, pos + n))
            total += n
        rd.prefetch(ranges)

    def _materialize_specials(self):
        """Store special-offset chunks physically (needed once chunk sizes vary)."""
        for i, v in enumerate(self.offsets):
            if v < 0:
                chunk = special_chunk(SpecialValue(offset_code(v, 0)), self.cnb[i],
                                      min(self.info.typesize, 255))
                self.offsets[i] = self._store_new(chunk)

    def _mutate(self, i: int, chunk, op: str, sums=None):
        if isinstance(chunk, RawChunk) and (op == "update" or not self._writes_raw):
            chunk = chunk.joined()
        with self.lock:
            self._check_write()
            i = self._check_index(i, allow_end=(op != "update"))
            if not isinstance(chunk, RawChunk):
                chunk_len(chunk)
            if op == "insert" and i == self.nchunks:
                op = "append"
            old_cs = self.info.chunksize
            head = chunk.header if isinstance(chunk, RawChunk) else chunk
            became_var = self._account(i, chunk_nbytes_of(head), op)
            code = 0 if head is not chunk else index_special(chunk, self.info)
            checksums.on_write(self, i, chunk, op, sums)
            if op == "update":
                self._replace(i, chunk, code)
            else:
                v = special_offset(code) if code else self._store_new(chunk)
                self.offsets.insert(i, v)
            if became_var and old_cs != 0:
                self._materialize_specials()
            self._flush()
            self.changed(op, i)
            self.maybe_commit()

    def append(self, chunk, sums=None):
        self._mutate(self.nchunks, chunk, "append", sums)

    def _extend_same(self, chunk: bytes, count: int) -> None:
        """`count` more copies of `chunk` after the first two (see append_repeated):
        index-only specials are index entries, others are stored by _store_copies."""
        code = index_special(chunk, self.info)
        if code:
            self.offsets.extend(array.array("q", [special_offset(code)]) * count)
        else:
            self._store_copies(chunk, count)
        self._flush()
        commit = getattr(self, "maybe_commit", None)     # a new frame, once complete
        if commit is not None:
            commit()

    def insert(self, i: int, chunk):
        self._mutate(i, chunk, "insert")

    def update(self, i: int, chunk, sums=None):
        self._mutate(i, chunk, "update", sums)

    def delete(self, i: int):
        with self.lock:
            self._check_write()
            i = self._check_index(i)
            self._drop(i)
            checksums.on_delete(self, i)
            self.nbytes -= self.cnb.pop(i)
            del self.offsets[i]
            if not self.offsets and not self.info.sparse:
                self._cbytes = 0          # no index: the trailer follows the header (§4.4)
            self._flush()
            self.changed("delete", i)

    def _reordered(self, order: list, became_var: bool) -> None:
        self.offsets = array.array("q", [self.offsets[k] for k in order])
        if became_var:
            self._materialize_specials()
        self._flush()

    def _flush_meta(self):
        self._flush()

    def _tail(self) -> tuple[bytes, bytes, bytes]:
        index = encode_index(self.offsets) if self.offsets else b""
        vlmeta = checksums.with_record(self.vlmeta, self.crcs, self._cbytes, self.nbytes,
                                        self.meta, self.info.typesize)
        trailer = checksums.mark(build_trailer(vlmeta), vlmeta, self._cbytes, self.nbytes)
        body = (0 if self.info.sparse else self._cbytes)
        frame_len = self.header_len + body + len(index) + len(trailer)
        header = build_header(self.info, self.meta, self.nbytes, self._cbytes, frame_len,
                              bool(vlmeta), empty=not self.offsets)
        if len(header) != self.header_len:
            raise NdpackError("internal error: the frame header changed length")
        return header, index, trailer


class ContiguousFrame(_FileFrame):
    """A contiguous frame in a file, possibly at `offset` inside a larger file."""

    def __init__(self, path, mode: str = "a", offset: int = 0, mmap_mode: str | None = None,
                 create: tuple | None = None, source: Source | None = None):
        self.path = os.fspath(path)
        self.base = int(offset)
        self.readonly = mode == "r"
        if source is not None:              # a remote object (read only): no descriptor
            self.fd, self.reader = None, source
            try:
                self._open_from(self.reader)
            except BaseException:
                self.close()
                raise
            # errors of the source name this frame's chunks (frames of a .b2z share it)
            me, prev = weakref.ref(self), source.describe
            lo, hi = self.base, self.base + self.frame_len

            def describe(pos: int) -> str:
                frame = me()
                return frame._chunk_at(pos) if frame is not None and lo <= pos < hi \
                    else prev(pos)
            source.describe = describe
            return
        if create is not None:
            info, meta = create
            FrameBase.__init__(self, info, meta)
            self.fresh = True
            info.sparse = False
            _refuse_url_path(self.path)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
            self.reader = local_source(fd=self.fd, name=self.path)
            self.header_len = len(build_header(info, self.meta, 0, 0, 0, False))
            self.offsets, self.nbytes, self._cbytes = array.array("q"), 0, 0
            self._flush()
            return
        flags = os.O_RDONLY if self.readonly else os.O_RDWR
        self.fd = os.open(self.path, flags)
        try:
            if mmap_mode == "r":
                mm = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ) if os.fstat(
                    self.fd).st_size else None
                self.reader = local_source(mm=mm) if mm is not None else local_source(fd=self.fd, name=self.path)
            else:
                self.reader = local_source(fd=self.fd, name=self.path)
            self._open_from(self.reader)
        except BaseException:
            self.close()
            raise

    def _chunk_at(self, pos: int) -> str:
        """``chunk i`` for the chunk stored at file byte `pos` (errors of remote reads)."""
        v = pos - self.base - self.header_len
        hit = np.nonzero(np.frombuffer(self.offsets, np.int64) == v)[0]
        return f"chunk {int(hit[0])}" if hit.size else f"frame byte {pos}"

    def _open_from(self, reader: Source) -> None:
        st = _parse_frame(reader, self.base, False)
        FrameBase.__init__(self, st["info"], st["meta"])
        self.meta_pos = st["fields"]["meta_pos"]
        self.frame_len = st["fields"]["frame_len"]
        self._load(st, self.base)

    _writes_raw = True           # RawChunk data goes to the file without a copy

    def _store_new(self, chunk) -> int:
        v = self._cbytes
        pos = self.base + self.header_len + v
        if isinstance(chunk, RawChunk):
            done = os.pwritev(self.fd, [chunk.header, chunk.data], pos)
            if done != len(chunk):                   # a short write: finish it
                os.pwrite(self.fd, chunk.joined()[done:], pos + done)
        else:
            os.pwrite(self.fd, chunk, pos)
        if self.pending is not None:      # fsynced when complete: the disk starts now
            start_writeback(self.fd, pos, len(chunk))
        self._cbytes += len(chunk)
        return v

    def _store_copies(self, chunk: bytes, count: int) -> None:
        """`count` copies of `chunk` at the end of the chunks section, written ~64 MiB
        at a time."""
        first, per = self._cbytes, max(1, (64 << 20) // len(chunk))
        for k in range(0, count, per):
            piece = chunk * min(per, count - k)
            pos = self.base + self.header_len + self._cbytes
            done = 0
            while done < len(piece):
                done += os.pwrite(self.fd, memoryview(piece)[done:], pos + done)
            self._cbytes += len(piece)
        offs = first + np.arange(count, dtype=np.int64) * len(chunk)
        self.offsets.extend(array.array("q", offs.tobytes()))

    def _replace(self, i: int, chunk, code: int):
        old = self.offsets[i]
        if old < 0:
            self.offsets[i] = special_offset(code) if code else self._store_new(chunk)
            return
        start = self.base + self.header_len
        old_len = chunk_cbytes_of(self.reader.read(start + old, 16), start + old)
        new = b"" if code else bytes(chunk)
        tail = self.reader.read(start + old + old_len, self._cbytes - old - old_len)
        os.pwrite(self.fd, new + bytes(tail), start + old)
        delta = len(new) - old_len
        self._cbytes += delta
        offs = np.frombuffer(self.offsets, dtype=np.int64).copy()
        offs[offs > old] += delta
        self.offsets = array.array("q", offs.tobytes())
        self.offsets[i] = special_offset(code) if code else old

    def _drop(self, i: int):
        pass                                  # bytes stay as orphans (C-Blosc2 does the same)

    def _flush(self):
        self._sorted = None
        header, index, trailer = self._tail()
        end = self.base + self.header_len + self._cbytes
        self.frame_len = self.header_len + self._cbytes + len(index) + len(trailer)
        os.pwrite(self.fd, index, end)
        os.pwrite(self.fd, header, self.base)
        os.pwrite(self.fd, trailer, end + len(index))
        os.ftruncate(self.fd, end + len(index) + len(trailer))

    def _check_write(self):
        if self.fd is None and isinstance(self.reader, RemoteSource):
            raise OperationError(remote_path_error(self.path))
        super()._check_write()
        if self.base:
            size = os.fstat(self.fd).st_size
            if size != self.base + self.frame_len:
                raise ParameterError("cannot modify a frame embedded before the end of a "
                                     "larger file")

    def to_cframe(self) -> bytes:
        with self.lock:
            return bytes(_read_exact(self.reader, self.base, self.frame_len, "frame"))

    def close(self):
        if getattr(self, "reader", None) is not None:
            self.reader.close()
            self.reader = None
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self):
        self.close()


class SparseFrame(_FileFrame):
    """A sparse frame: directory with ``chunks.b2frame`` and one file per chunk."""

    def __init__(self, path, mode: str = "a", create: tuple | None = None):
        self.path = os.fspath(path)
        self.readonly = mode == "r"
        self.base = 0
        index_path = os.path.join(self.path, SPARSE_INDEX)
        if create is not None:
            info, meta = create
            FrameBase.__init__(self, info, meta)
            self.fresh = True
            info.sparse = True
            _refuse_url_path(self.path)
            os.makedirs(self.path, exist_ok=True)
            self.header_len = len(build_header(info, self.meta, 0, 0, 0, False))
            self.offsets, self.nbytes, self._cbytes = array.array("q"), 0, 0
            self._flush()
            return
        if not os.path.isfile(index_path):
            raise FormatError(f"{self.path!r} is a directory without {SPARSE_INDEX}: "
                              "not a sparse frame")
        with open(index_path, "rb") as fh:
            buf = fh.read()
        st = _parse_frame(local_source(buf=buf), 0, True)
        FrameBase.__init__(self, st["info"], st["meta"])
        self._load(st, 0)

    def _file(self, v: int) -> str:
        return os.path.join(self.path, f"{v:08X}.chunk")

    def _raw_chunk_head(self, i: int):
        return self._raw_chunk(i, self.offsets[i])[:16]

    def _raw_chunk(self, i: int, v: int, buf=None):
        name = self._file(v)
        try:
            with open(name, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise FormatError(f"sparse frame: chunk {i} file {os.path.basename(name)} is "
                              "missing") from None
        if len(data) < 16 or chunk_cbytes_of(data, 0) != len(data):
            raise FormatError(f"sparse frame: chunk file {os.path.basename(name)} byte 12: "
                              f"cbytes does not match the file size {len(data)}")
        return data

    def _write_file(self, v: int, chunk):
        name = self._file(v)
        if os.path.exists(name):
            self._cbytes -= os.path.getsize(name)
        with open(name, "wb") as fh:
            fh.write(chunk)
        self._cbytes += len(chunk)

    def _store_new(self, chunk) -> int:
        v = 1 + max((o for o in self.offsets if o >= 0), default=-1)
        self._write_file(v, chunk)
        return v

    def _store_copies(self, chunk: bytes, count: int) -> None:
        """One chunk file per copy (a sparse frame has no other way)."""
        v = 1 + max((o for o in self.offsets if o >= 0), default=-1)
        for k in range(count):
            self._write_file(v + k, chunk)
        self.offsets.extend(array.array("q", range(v, v + count)))

    def _replace(self, i: int, chunk, code: int):
        old = self.offsets[i]
        if code:
            if old >= 0:
                self._remove_file(old)
            self.offsets[i] = special_offset(code)
        elif old >= 0:
            self._write_file(old, chunk)
        else:
            self.offsets[i] = self._store_new(chunk)

    def _remove_file(self, v: int):
        name = self._file(v)
        if os.path.exists(name):
            self._cbytes -= os.path.getsize(name)
            os.remove(name)

    def _drop(self, i: int):
        if self.offsets[i] >= 0:
            self._remove_file(self.offsets[i])

    def _flush(self):
        header, index, trailer = self._tail()
        with open(os.path.join(self.path, SPARSE_INDEX), "r+b" if os.path.exists(
                os.path.join(self.path, SPARSE_INDEX)) else "wb") as fh:
            fh.write(header + index + trailer)
            fh.truncate()

    def to_cframe(self) -> bytes:
        with self.lock:
            chunks = [self.get(i) for i in range(self.nchunks)]
            return serialize(self.info, self.meta, self.vlmeta, chunks, self.nbytes,
                             self.crcs)


class _BufferFrame(_FileFrame):
    """A read-only view of a contiguous frame held in a buffer."""

    readonly = True

    def __init__(self, reader: Source, st: dict):
        FrameBase.__init__(self, st["info"], st["meta"])
        self.reader = reader
        self._load(st, 0)



def parse_cframe(buf, copy: bool = False) -> MemoryFrame:
    """A :class:`MemoryFrame` from contiguous-frame bytes.

    With ``copy=False`` the chunks are memoryview slices of `buf` (no copy).
    """
    view = buf if isinstance(buf, bytes) else memoryview(buf).cast("B")
    reader = local_source(buf=view)
    st = _parse_frame(reader, 0, False)
    src = _BufferFrame(reader, st)
    out = MemoryFrame(src.info, src.meta)
    out.fresh = False
    out.vlmeta = dict(src.vlmeta)
    out.crcs, out.crc_stale, out.crc_problem = src.crcs, src.crc_stale, src.crc_problem
    out.trusted = False
    out.cnb, out.nbytes = list(src.cnb), src.nbytes
    src.verify = False                     # checked when read from `out`
    out.chunks = [src.get(i) for i in range(src.nchunks)]
    if copy:
        out.chunks = [bytes(c) for c in out.chunks]
    out._cbytes = sum(len(c) for c in out.chunks)
    return out


def open_frame(urlpath, mode: str = "a", offset: int = 0, mmap_mode: str | None = None,
               storage_options: dict | None = None):
    """Open an existing contiguous or sparse frame on disk, or a contiguous frame at a
    URL (:func:`open_remote_frame`; `mmap_mode` does not apply there)."""
    path = os.fspath(urlpath)
    if is_url(path):
        return open_remote_frame(path, mode, offset, storage_options)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file or directory: {path}")
    if os.path.isdir(path):
        if offset:
            raise ParameterError("offset= applies to contiguous frames only")
        if mmap_mode is not None:
            raise ParameterError("mmap_mode applies to contiguous frames only")
        return SparseFrame(path, mode)
    return ContiguousFrame(path, mode, offset, mmap_mode)


def open_remote_frame(url: str, mode: str = "r", offset: int = 0,
                      storage_options: dict | None = None) -> ContiguousFrame:
    """The contiguous frame of the object at `url` (any URL fsspec knows), read through
    a :class:`~ndpack.storage.remote.RemoteSource`: two requests (the head, then the
    index and trailer), chunks fetched when read.  Mode 'r' only."""
    if mode != "r":
        raise OperationError(remote_path_error(url) + f" (mode {mode!r}; open with 'r')")
    src = RemoteSource(url, storage_options)
    try:
        return ContiguousFrame(url, "r", offset, source=src)
    except SourceError:
        raise
    except FormatError as exc:
        raise FormatError(f"{url}: {exc}") from None
