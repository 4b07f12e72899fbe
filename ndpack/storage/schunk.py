"""Super-chunks: a sequence of compressed chunks with metadata (python-blosc2's ``SChunk``).

An :class:`SChunk` lives in memory (a list of chunks), in a contiguous frame file
or in a sparse-frame directory (:mod:`ndpack.storage.frame`).  Items are
``typesize`` bytes; ``len(schunk)`` counts items, as in python-blosc2.

Examples
--------
>>> import numpy as np, ndpack
>>> s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4})
>>> for i in range(3):
...     n = s.append_data(np.arange(100, dtype=np.int32) + 100 * i)
>>> n, len(s), s.nbytes
(3, 300, 1200)
>>> np.frombuffer(s[98:102], np.int32).tolist()
[98, 99, 100, 101]
>>> t = ndpack.schunk_from_cframe(s.to_cframe())
>>> bytes(t[:]) == bytes(s[:])
True
"""

from __future__ import annotations

import collections
import os
import shutil

import numpy as np

from ndpack.chunks import (_as_buffer, chunk_info, compress2, decompress2, getitem, nd_scope,
                           special_chunk)
from ndpack.codecs import CParams, DParams, SpecialValue, make_cparams, make_dparams
from ndpack.errors import MissingFileError, NdpackError, ParameterError
from ndpack.storage.atomic import Pending
from ndpack.storage import checksums
from ndpack.storage.frame import FrameInfo, MemoryFrame
from ndpack.storage.grid import MAX_NCHUNKS
from ndpack.storage.layout import Layout
from ndpack.storage.framefile import ContiguousFrame, SparseFrame, open_frame, parse_cframe
from ndpack.storage.meta import Meta, check_name, packb, vlmeta
from ndpack.storage.params import schunk_storage

__all__ = ["SChunk", "open_schunk", "schunk_from_cframe", "remove_urlpath", "ChunkInfo",
           "frame_info", "new_file_frame", "size_text", "info_text"]


def size_text(n: int) -> str:
    """python-blosc2's size in ``info_items``: ``"16000 (15.62 KiB)"``.

    Examples
    --------
    >>> size_text(800), size_text(2400000)
    ('800 (800 B)', '2400000 (2.29 MiB)')
    """
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            break
        value /= 1024
    return f"{n} ({int(value)} B)" if unit == "B" else f"{n} ({value:.2f} {unit})"


def info_text(items) -> str:
    """The ``info`` report of ``info_items`` rows: ``name : value`` lines."""
    width = max(len(k) for k, _ in items)
    return "\n".join(f"{k:<{width}} : {v}" for k, v in items) + "\n"

DEFAULT_CHUNKSIZE = 2 ** 24
MAX_CHUNKSIZE = 2 ** 31 - 33
_MODES = ("r", "a", "w")

ChunkInfo = collections.namedtuple("ChunkInfo",
                                   ["nchunk", "cratio", "special", "repeated_value", "lazychunk"])


def frame_info(cp: CParams, dp: DParams, chunksize: int) -> FrameInfo:
    """The header fields of a new frame from compression and decompression parameters
    and the chunk size in bytes (-1: chunks of different sizes)."""
    return FrameInfo(typesize=int(cp.typesize), chunksize=int(chunksize), codec=int(cp.codec),
                     clevel=int(cp.clevel), splitmode=int(cp.splitmode),
                     blocksize=int(cp.blocksize), nthreads_c=int(cp.nthreads),
                     nthreads_d=int(dp.nthreads), filters=cp.pipeline()[0],
                     filters_meta=cp.pipeline()[1], codec_meta=int(cp.codec_meta),
                     use_dict=bool(cp.use_dict))


def _cparams_from(info: FrameInfo) -> CParams:
    filters = [int(f) for f in info.filters]
    typesize = info.typesize if info.typesize <= 255 else 1     # python-blosc2 writes >255
    return make_cparams(codec=info.codec, clevel=info.clevel, typesize=typesize,
                        splitmode=info.splitmode, blocksize=info.blocksize,
                        filters=filters, filters_meta=list(info.filters_meta),
                        codec_meta=info.codec_meta, use_dict=info.use_dict,
                        **({"nthreads": info.nthreads_c} if info.nthreads_c > 0 else {}))


def _initial_cparams(cparams, data) -> CParams:
    """python-blosc2's rule: the typesize is the data's itemsize, else 1, unless given."""
    if isinstance(cparams, CParams):
        return make_cparams(cparams)
    d = dict(cparams or {})
    if "typesize" not in d:
        d["typesize"] = getattr(data, "itemsize", None) or (
            getattr(getattr(data, "dtype", None), "itemsize", None) or 1)
        if d["typesize"] > 255:               # as C-Blosc2: one-byte typesize field
            d["typesize"] = 1
    return make_cparams(d)


def _as_bytes_view(data) -> memoryview:
    view = _as_buffer(data, "data")
    if view.ndim == 1 and view.format == "B":
        return view
    if not view.c_contiguous:
        view = memoryview(np.ascontiguousarray(data))
    return view.cast("B")


def _scalar_bytes(value, typesize: int) -> bytes:
    """The bytes of one item: NumPy's for arrays and NumPy scalars; a Python int (or
    bool) or float as the signed integer or float of `typesize` bytes when NumPy's
    default has another size (as python-blosc2's ``fill_special``)."""
    raw = np.asarray(value).tobytes()
    if len(raw) != typesize and type(value) in (int, bool, float) and typesize in (
            (1, 2, 4, 8) if type(value) is not float else (2, 4, 8)):
        kind = "f" if type(value) is float else "i"
        raw = np.asarray(value, f"{kind}{typesize}").tobytes()
    return raw


class SChunk:
    """A super-chunk: compressed chunks plus metalayers and vlmeta.

    Parameters
    ----------
    chunksize : int, optional
        Bytes per chunk for :meth:`append_data` and friends; defaults to the size of
        `data` when given, else 2**24.
    data : bytes-like, optional
        Initial content, split into chunks of `chunksize` bytes.
    cparams, dparams : CParams/DParams or dict, optional
        Compression defaults; the typesize is that of `data` or 1 unless given.
    urlpath : str or path, optional
        Where to store the frame; None keeps it in memory.
    contiguous : bool, optional
        One file (default when `urlpath` is given) or a sparse directory.
    mode : {'a', 'w', 'r'}
        'w' overwrites `urlpath`; 'a' creates it and refuses an existing one (use
        :func:`open`); 'r' opens an existing frame read-only.
    mmap_mode : {'r'}, optional
        Read chunks from a memory map of the file.
    meta : dict, optional
        Fixed metalayers (name -> msgpack-able value), fixed at creation.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> s = ndpack.SChunk(data=np.arange(10, dtype=np.int16), chunksize=8)
    >>> s.typesize, s.nchunks, len(s)
    (2, 3, 10)
    >>> s[2:5] = np.array([-1, -2, -3], np.int16)
    >>> np.frombuffer(s[:], np.int16)[:6].tolist()
    [0, 1, -1, -2, -3, 5]
    """

    def __init__(self, chunksize=None, data=None, cparams=None, dparams=None, urlpath=None,
                 contiguous=None, mode="a", mmap_mode=None, meta=None, **kwargs):
        commit = kwargs.pop("_commit", True)     # internal: the creator commits itself
        if kwargs.get("storage") is not None or "initial_mapping_size" in kwargs \
                or "locking" in kwargs:       # python-blosc2's Storage, or its fields
            given = {"urlpath": urlpath, "contiguous": contiguous, "meta": meta,
                     "mmap_mode": mmap_mode, **({} if mode == "a" else {"mode": mode})}
            given = {k: v for k, v in given.items() if v is not None}
            fields = schunk_storage(kwargs.pop("storage", None), kwargs, given)
            urlpath, contiguous, meta = (fields.get(k) for k in ("urlpath", "contiguous",
                                                                 "meta"))
            mode, mmap_mode = fields.get("mode", "a"), fields.get("mmap_mode")
        kwargs.pop("storage", None)
        if kwargs:
            raise ParameterError(f"unknown SChunk argument(s) {sorted(kwargs)}")
        if mode not in _MODES:
            raise ParameterError(f"mode must be one of {_MODES}, not {mode!r}")
        if mmap_mode not in (None, "r"):
            raise ParameterError(f"mmap_mode {mmap_mode!r} is not supported (only 'r')")
        if mmap_mode == "r" and mode == "w":
            raise ParameterError("mmap_mode='r' reads an existing frame; it needs mode 'r'")
        self._mode = mode
        self._urlpath = None if urlpath is None else os.fspath(urlpath)
        self._dparams = make_dparams(dparams)
        if mode == "r" or mmap_mode == "r":
            if self._urlpath is None:
                raise ParameterError("mode 'r' and mmap_mode need a urlpath (you did not "
                                     "specify a urlpath)")
            if not os.path.exists(self._urlpath):
                raise MissingFileError(f"{self._urlpath!r} does not exist")
            if data is not None or meta is not None:
                raise ParameterError("data= and meta= cannot be given in mode 'r'")
            self._mode = "r"
            self._attach(open_frame(self._urlpath, "r", 0, mmap_mode))
            return
        view = None if data is None else _as_bytes_view(data)
        self._cparams = _initial_cparams(cparams, data)
        if chunksize is None:
            chunksize = DEFAULT_CHUNKSIZE
            if view is not None and len(view):      # one chunk, up to the chunk size limit
                ts = self._cparams.typesize
                chunksize = min(len(view), MAX_CHUNKSIZE - MAX_CHUNKSIZE % ts)
        chunksize = int(chunksize)
        if chunksize <= 0:
            raise ParameterError(f"chunksize must be positive, got {chunksize}")
        if view is not None and len(view) > chunksize and chunksize % self._cparams.typesize:
            raise ParameterError(f"chunksize {chunksize} is not a multiple of the typesize "
                                 f"{self._cparams.typesize}")
        raw_meta = {check_name(k): packb(v) for k, v in (meta or {}).items()}
        if len(raw_meta) > 16:
            raise ParameterError(f"at most 16 metalayers, got {len(raw_meta)}")
        info = frame_info(self._cparams, self._dparams, chunksize)
        self._attach(self._new_frame(info, raw_meta, contiguous), keep_cparams=True)
        self._contiguous = (bool(contiguous) if self._urlpath is None
                            else contiguous in (None, True))
        try:
            if view is not None and len(view):
                for pos in range(0, len(view), chunksize):
                    self.append_data(view[pos:pos + chunksize])
            if commit:
                self._frame.commit()
        except BaseException:
            self._frame.abort()
            raise

    def _new_frame(self, info: FrameInfo, raw_meta: dict, contiguous):
        """A new frame; on disk it is written under a temporary name until committed
        (:mod:`ndpack.storage.atomic`), so an existing file stays until then."""
        if self._urlpath is None:
            return MemoryFrame(info, raw_meta)
        return new_file_frame(self._urlpath, self._mode, info, raw_meta, contiguous)

    @classmethod
    def from_frame(cls, frame, urlpath=None, mode="a", dparams=None,
                   cparams: CParams | None = None) -> SChunk:
        """Wrap an existing frame (an opened file, a parsed buffer or a new frame of
        :mod:`ndpack.storage.frame`); `cparams` replaces the compression parameters
        read from its header (a new frame's creator knows them exactly)."""
        self = cls.__new__(cls)
        self._mode = mode
        self._urlpath = None if urlpath is None else os.fspath(urlpath)
        nthreads = frame.info.nthreads_d
        self._dparams = make_dparams(dparams) if dparams is not None else make_dparams(
            **({"nthreads": nthreads} if nthreads > 0 else {}))
        if cparams is not None:
            self._cparams = cparams
        self._attach(frame, keep_cparams=cparams is not None)
        return self

    def _attach(self, frame, keep_cparams: bool = False):
        self._frame = frame
        if not keep_cparams:
            self._cparams = _cparams_from(frame.info)
        self._contiguous = isinstance(frame, (ContiguousFrame, MemoryFrame))
        checksums.configure(frame, self._dparams.verify)

    # --- properties ----------------------------------------------------------------------
    @property
    def frame(self):
        """The frame holding the chunks and metadata (a ``MemoryFrame``,
        ``ContiguousFrame`` or ``SparseFrame``): the storage modules' access to the
        stored bytes, without the checks and copies of the methods here."""
        return self._frame

    @property
    def nbytes(self) -> int:
        """Uncompressed size in bytes."""
        return self._frame.nbytes

    @property
    def cbytes(self) -> int:
        """Compressed size of the chunks in bytes."""
        return self._frame.cbytes

    @property
    def cratio(self) -> float:
        """``nbytes / cbytes`` (0 when empty)."""
        return self.nbytes / self.cbytes if self.cbytes else 0.0

    @property
    def info_items(self) -> list:
        """python-blosc2's report as ``(name, value)`` pairs: type, chunksize,
        blocksize, typesize, nbytes, cbytes, cratio, cparams, dparams.

        Examples
        --------
        >>> s = SChunk(chunksize=80)
        >>> [k for k, _ in s.info_items][:4], s.info_items[4]
        (['type', 'chunksize', 'blocksize', 'typesize'], ('nbytes', '0 (0 B)'))
        """
        return [("type", "SChunk"), ("chunksize", self.chunksize),
                ("blocksize", self.cparams.blocksize), ("typesize", self.typesize),
                ("nbytes", size_text(self.nbytes)), ("cbytes", size_text(self.cbytes)),
                ("cratio", f"{self.cratio:.2f}x"), ("cparams", self.cparams),
                ("dparams", self.dparams)]

    @property
    def info(self) -> str:
        """:attr:`info_items` as text."""
        return info_text(self.info_items)

    @property
    def nchunks(self) -> int:
        return self._frame.nchunks

    @property
    def chunksize(self) -> int:
        """Bytes per chunk (0 when chunks have different sizes)."""
        return max(self._frame.info.chunksize, 0)

    @property
    def chunkshape(self) -> int:
        """Items per chunk (``chunksize // typesize``), python-blosc2's name."""
        return self.chunksize // self.typesize

    @property
    def blocksize(self) -> int:
        return self._cparams.blocksize

    @property
    def typesize(self) -> int:
        return self._cparams.typesize

    @property
    def urlpath(self):
        return self._urlpath

    @property
    def contiguous(self) -> bool:
        return self._contiguous

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def cparams(self) -> CParams:
        return self._cparams

    @cparams.setter
    def cparams(self, value):
        self.check_writable()
        if isinstance(value, CParams):
            cp = make_cparams(value)
        else:                          # a dict updates only the fields it names
            cp = make_cparams(self._cparams, **dict(value))
        info = self._frame.info
        new = frame_info(cp, self._dparams, info.chunksize)
        for field in ("codec", "clevel", "splitmode", "blocksize", "nthreads_c", "filters",
                      "filters_meta", "codec_meta", "use_dict", "typesize"):
            setattr(info, field, getattr(new, field))
        self._cparams = cp

    @property
    def dparams(self) -> DParams:
        return self._dparams

    @dparams.setter
    def dparams(self, value):
        dp = make_dparams(value)
        checksums.configure(self._frame, dp.verify)
        self._dparams = dp

    @property
    def meta(self) -> Meta:
        # made per access: a kept Meta or vlmeta would hold the super-chunk in a
        # reference cycle, so a dropped one (and its chunks) lived until the cyclic
        # collector ran (a foreign writer's temporary arrays: 5 chunks of 68 MB)
        return Meta(self._frame.meta, self._frame.write_meta, self.check_writable)

    @property
    def vlmeta(self) -> vlmeta:
        return vlmeta(self._frame, self)

    def __len__(self) -> int:
        return self.nbytes // self.typesize

    def __repr__(self):
        return (f"<SChunk nchunks={self.nchunks} nbytes={self.nbytes} cbytes={self.cbytes} "
                f"typesize={self.typesize} urlpath={self.urlpath!r}>")

    # --- chunk level ---------------------------------------------------------------------
    def check_writable(self) -> None:
        """Raise :class:`ParameterError` if the super-chunk was opened in mode 'r'."""
        if self._mode == "r":
            raise ParameterError("cannot modify a super-chunk opened in mode 'r'")

    def _nd(self):
        """The n-d layout of the chunks (C-Blosc2's n-d codecs and filters read it from
        the "b2nd" metalayer, as here), or None."""
        raw = self._frame.meta.get("b2nd")
        if raw is None:
            return None
        cached = getattr(self._frame, "_nd_of_meta", None)
        if cached is None or cached[0] != raw:
            try:
                nd = Layout.from_b2nd(raw).nd
            except NdpackError:
                nd = None
            cached = (bytes(raw), nd)
            self._frame._nd_of_meta = cached
        return cached[1]

    def _compress(self, data) -> bytes:
        with nd_scope(self._nd()):
            return self._compress_raw(data)

    def _compress_raw(self, data) -> bytes:
        view = _as_bytes_view(data)
        if len(view) % self.typesize:
            raise ParameterError(f"data of {len(view)} bytes is not a multiple of the "
                                 f"typesize {self.typesize}")
        return compress2(view, cparams=self._cparams)

    @staticmethod
    def _chunk_bytes(chunk):
        view = _as_bytes_view(chunk)
        chunk_info(view)                       # validates the header (FormatError)
        return chunk if type(chunk) is bytes else bytes(view)   # (bytes: immutable, kept)

    def append_data(self, data) -> int:
        """Compress `data` into a new chunk at the end; returns the number of chunks."""
        self.check_writable()
        self._frame.append(self._compress(data))
        return self.nchunks

    def insert_data(self, nchunk: int, data, copy: bool = True) -> int:
        """Compress `data` and insert it as chunk `nchunk`; returns the number of chunks."""
        self.check_writable()
        self._frame.insert(nchunk, self._compress(data))
        return self.nchunks

    def update_data(self, nchunk: int, data, copy: bool = True) -> int:
        """Compress `data` and replace chunk `nchunk` with it; returns the number of chunks."""
        self.check_writable()
        self._frame.update(nchunk, self._compress(data))
        return self.nchunks

    def append_chunk(self, chunk) -> int:
        """Append an already compressed chunk; returns the number of chunks."""
        self.check_writable()
        self._frame.append(self._chunk_bytes(chunk))
        return self.nchunks

    def insert_chunk(self, nchunk: int, chunk) -> int:
        """Insert a compressed chunk at position `nchunk`; returns the number of chunks."""
        self.check_writable()
        self._frame.insert(nchunk, self._chunk_bytes(chunk))
        return self.nchunks

    def update_chunk(self, nchunk: int, chunk) -> int:
        """Replace chunk `nchunk` with a compressed chunk; returns the number of chunks."""
        self.check_writable()
        self._frame.update(nchunk, self._chunk_bytes(chunk))
        return self.nchunks

    def delete_chunk(self, nchunk: int) -> int:
        """Remove chunk `nchunk`; returns the number of chunks left."""
        self.check_writable()
        self._frame.delete(nchunk)
        return self.nchunks

    def reorder_offsets(self, order) -> None:
        """Reorder the chunks in place: chunk ``order[k]`` becomes chunk `k` (as
        python-blosc2's; only the offsets index is rewritten, no chunk is copied).

        `order` is a one-dimensional permutation of ``range(self.nchunks)``: another
        shape or length raises ValueError, repeated or out-of-range chunks
        :class:`~ndpack.errors.OperationError` (a RuntimeError, as python-blosc2's).
        The checksum record follows the chunks.
        """
        if self._mode == "r":
            raise ParameterError("cannot reorder the chunks of a super-chunk opened in "
                                 "reading mode ('r')")
        order = np.asarray(order)
        if order.ndim != 1:
            raise ParameterError(f"order must be one-dimensional, not of shape {order.shape}")
        if len(order) != self.nchunks:
            raise ParameterError(f"order has {len(order)} entries for {self.nchunks} chunks")
        if order.size and order.dtype.kind not in "iu":
            raise ParameterError(f"order must hold chunk numbers (integers), not {order.dtype}")
        self._frame.reorder(order.tolist())

    def get_chunk(self, nchunk: int) -> bytes:
        """The compressed chunk `nchunk` (special chunks come back as 32-byte chunks)."""
        return bytes(self._frame.get(nchunk))

    def decompress_chunk(self, nchunk: int, dst=None):
        """Decode chunk `nchunk`; into `dst` (then None is returned) or as bytes."""
        with nd_scope(self._nd()):
            return self._decompress_chunk(nchunk, dst)

    def _decompress_chunk(self, nchunk: int, dst=None):
        if dst is None:
            return decompress2(self._frame.get(nchunk), nthreads=self._dparams.nthreads)
        checksums.decode_checked(self._frame, nchunk, *self._frame.fetch(nchunk), dst,
                                 self._dparams.nthreads)
        return None

    def iterchunks(self, dtype):
        """Yield every chunk decoded as a 1-d NumPy array of `dtype`."""
        for i in range(self.nchunks):
            yield np.frombuffer(self.decompress_chunk(i), dtype=dtype)

    def iterchunks_info(self):
        """Yield a :class:`ChunkInfo` per chunk (nchunk, cratio, special, value, header)."""
        for i in range(self.nchunks):
            chunk = self._frame.get(i)
            info = chunk_info(chunk)
            special = SpecialValue(info["special"])
            rep = bytes(chunk[32:info["cbytes"]]) if special == SpecialValue.VALUE else None
            yield ChunkInfo(i, info["nbytes"] / info["cbytes"], special, rep,
                            bytes(chunk[:32]))

    def fill_special(self, nitems: int, special_value, value=None) -> int:
        """Fill an empty super-chunk with `nitems` special items; returns nchunks.

        Examples
        --------
        >>> import numpy as np, ndpack
        >>> s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4})
        >>> s.fill_special(250, ndpack.SpecialValue.VALUE, np.int32(7))
        3
        >>> np.frombuffer(s[248:250], np.int32).tolist()
        [7, 7]
        """
        self.check_writable()
        special_value = SpecialValue(special_value)
        if special_value == SpecialValue.NOT_SPECIAL:
            raise ParameterError("fill_special needs ZERO, NAN, VALUE or UNINIT")
        if self.nchunks:
            raise ParameterError("fill_special needs an empty super-chunk")
        ts, cs = self.typesize, self.chunksize or DEFAULT_CHUNKSIZE
        if cs % ts:
            raise ParameterError(f"chunksize {cs} is not a multiple of the typesize {ts}")
        if nitems < 0:
            raise ParameterError("nitems must be >= 0")
        raw = None
        if special_value == SpecialValue.VALUE:
            if value is None:
                raise ParameterError("SpecialValue.VALUE needs value=")
            raw = bytes(value) if isinstance(value, (bytes, bytearray)) else \
                _scalar_bytes(value, ts)
            if len(raw) != ts:
                raise ParameterError(f"value is {len(raw)} bytes, the typesize is {ts}")
        total = nitems * ts
        if total // cs > MAX_NCHUNKS:
            raise ParameterError(f"{nitems} items in chunks of {cs} bytes make more chunks "
                                 f"than a frame's index holds ({MAX_NCHUNKS})")
        self._frame.append_repeated(special_chunk(special_value, cs, ts, value=raw),
                                    total // cs)
        if total % cs:
            self._frame.append(special_chunk(special_value, total % cs, ts, value=raw))
        return self.nchunks

    # --- item level ----------------------------------------------------------------------
    def _chunk_starts(self) -> np.ndarray:
        """Byte offsets where every chunk starts, plus the end."""
        return np.concatenate(([0], np.cumsum(self._frame.cnb, dtype=np.int64)))

    def _spans(self, b0: int, b1: int):
        """Yield ``(nchunk, chunk_start, chunk_end)`` for the chunks overlapping ``[b0, b1)``."""
        cs, n = self._frame.info.chunksize, self.nchunks
        if cs > 0:                         # fixed size: straight arithmetic
            for i in range(b0 // cs, min(n, -(-b1 // cs))):
                yield i, i * cs, min((i + 1) * cs, self.nbytes)
            return
        starts = self._chunk_starts()
        i = int(np.searchsorted(starts, b0, side="right")) - 1
        while i < n and starts[i] < b1:
            yield i, int(starts[i]), int(starts[i + 1])
            i += 1

    def get_slice(self, start=0, stop=None, out=None):
        """Items ``[start, stop)`` as bytes, or into `out` (then None is returned).

        Only the chunks holding the items are decoded.
        """
        start, stop, _ = slice(start, stop).indices(len(self))
        stop = max(stop, start)
        ts = self.typesize
        b0, b1 = start * ts, stop * ts
        buf = bytearray(b1 - b0) if out is None else _as_bytes_view(out)
        if out is not None and (len(buf) < b1 - b0 or buf.readonly):
            raise ParameterError(f"out must be a writable buffer of at least {b1 - b0} bytes")
        for i, cs, ce in self._spans(b0, b1) if b1 > b0 else ():
            lo, hi = max(b0, cs), min(b1, ce)
            if lo == cs and hi == ce:
                self.decompress_chunk(i, memoryview(buf)[lo - b0:hi - b0])
            else:
                buf[lo - b0:hi - b0] = self._partial(i, lo - cs, hi - cs)
        return bytes(buf) if out is None else None

    def _partial(self, i: int, lo: int, hi: int) -> bytes:
        """Bytes ``[lo, hi)`` of chunk `i`, decoding only the blocks that hold them."""
        chunk = self._frame.get(i)
        ts = chunk[3]
        if ts and lo % ts == 0 and hi % ts == 0:
            with nd_scope(self._nd()):
                return getitem(chunk, lo // ts, (hi - lo) // ts)
        return self.decompress_chunk(i)[lo:hi]

    def _key(self, key) -> tuple[int, int]:
        if isinstance(key, (int, np.integer)):
            n = len(self)
            k = int(key) + n if key < 0 else int(key)
            if not 0 <= k < n:
                raise IndexError(f"index {key} out of range for {n} items")
            return k, k + 1
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise IndexError("`step` must be 1")
            return key.start, key.stop
        raise TypeError(f"SChunk indices are int or slice, not {type(key).__name__}")

    def __getitem__(self, key) -> bytes:
        start, stop = self._key(key)
        return self.get_slice(start, stop)

    def __setitem__(self, key, value):
        self.check_writable()
        start, stop = self._key(key)
        n, ts = len(self), self.typesize
        start = 0 if start is None else (start + n if start < 0 else start)
        view = _as_bytes_view(value)
        if stop is None:
            stop = start + len(view) // ts if start >= n else n
        stop = stop + n if stop < 0 else stop
        if start > n:
            raise ParameterError(f"cannot set items from {start}: the super-chunk has {n}")
        if stop < start or len(view) != (stop - start) * ts:
            raise ParameterError(f"value has {len(view)} bytes, {max(stop - start, 0) * ts} "
                                 f"expected for items [{start}, {stop})")
        b0, b1 = start * ts, stop * ts
        starts = self._chunk_starts()
        i = max(int(np.searchsorted(starts, b0, side="right")) - 1, 0)
        while i < self.nchunks and starts[i] < b1:
            cs, ce = int(starts[i]), int(starts[i + 1])
            lo, hi = max(b0, cs), min(b1, ce)
            if i == self.nchunks - 1 and b1 > ce and self.chunksize and ce - cs < self.chunksize:
                hi = min(b1, cs + self.chunksize)          # grow a short last chunk
            data = bytearray(self.decompress_chunk(i))
            data[lo - cs:hi - cs] = view[lo - b0:hi - b0]
            self._frame.update(i, self._compress(data))
            starts = self._chunk_starts()
            i += 1
        pos = int(starts[-1])
        if b1 > pos:
            if not self.chunksize:
                raise ParameterError("cannot grow a super-chunk with variable chunk sizes")
            for p in range(pos, b1, self.chunksize):
                self.append_data(view[p - b0:min(p + self.chunksize, b1) - b0])

    # --- serialization -------------------------------------------------------------------
    def to_cframe(self) -> bytes:
        """The super-chunk as contiguous-frame bytes."""
        return self._frame.to_cframe()

    def close(self):
        """Release the file handle / memory map (the object is unusable afterwards)."""
        self._frame.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def schunk_from_cframe(cframe, copy: bool = False) -> SChunk:
    """An in-memory :class:`SChunk` from contiguous-frame bytes.

    With ``copy=False`` chunks are views of `cframe` (keep it alive and unchanged).

    Examples
    --------
    >>> import ndpack
    >>> s = ndpack.SChunk(chunksize=8, data=bytes(range(20)))
    >>> t = ndpack.schunk_from_cframe(s.to_cframe())
    >>> t.nchunks, t[3:6]
    (3, b'\\x03\\x04\\x05')
    """
    return SChunk.from_frame(parse_cframe(cframe, copy=copy))


def open_schunk(urlpath, mode: str = "r", offset: int = 0, mmap_mode=None,
                **kwargs) -> SChunk:
    """Open a frame on disk (contiguous file or sparse directory) as an :class:`SChunk`,
    whatever its metalayers (:func:`ndpack.storage.dispatch.open` gives an NDArray
    for a frame with a ``b2nd`` metalayer).

    Parameters
    ----------
    urlpath : str or path
    mode : {'r', 'a'}
        'r' (default, as python-blosc2) reads; 'a' allows appends and edits (written the
        way C-Blosc2 writes them).
    offset : int
        Where the frame starts inside a larger file (contiguous frames only).
    mmap_mode : {'r'}, optional
        Read chunks as slices of a memory map (implies mode 'r').
    **kwargs
        ``dparams=`` (DParams or dict) only.

    Examples
    --------
    >>> import numpy as np, ndpack, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.b2frame")
    >>> ndpack.SChunk(chunksize=400, data=np.arange(300, dtype=np.int32), urlpath=path).close()
    >>> s = open_schunk(path, mmap_mode="r")
    >>> s.nchunks, np.frombuffer(s[298:300], np.int32).tolist()
    (3, [298, 299])
    >>> s.close(); ndpack.remove_urlpath(path); os.path.exists(path)
    False

    Raises
    ------
    FileNotFoundError
        If `urlpath` does not exist.
    FormatError
        If it is not a valid frame.
    """
    if mode not in ("r", "a"):
        raise ParameterError(f"open() mode must be 'r' or 'a', not {mode!r}")
    if mmap_mode not in (None, "r"):
        raise ParameterError(f"mmap_mode {mmap_mode!r} is not supported (only 'r')")
    if mmap_mode == "r":
        mode = "r"
    dparams = kwargs.pop("dparams", None)
    cparams = kwargs.pop("cparams", None)
    if kwargs:
        raise ParameterError(f"unknown open() argument(s) {sorted(kwargs)}")
    frame = open_frame(urlpath, mode, offset, mmap_mode)
    s = SChunk.from_frame(frame, urlpath=urlpath, mode=mode, dparams=dparams)
    if cparams is not None:           # python-blosc2's: the parameters of later writes
        cp = make_cparams(s.cparams, **cparams) if isinstance(cparams, dict) \
            else make_cparams(cparams)
        if mode == "r":
            s._cparams = cp           # nothing will be written: the frame stays as it is
        else:
            s.cparams = cp
    return s


def new_file_frame(urlpath, mode: str, info: FrameInfo, raw_meta: dict, contiguous):
    """A new contiguous (default) or sparse frame for `urlpath`, written under a
    temporary name beside it (its ``pending``) until ``frame.commit()``.

    Mode 'a' refuses an existing `urlpath` (now and at the commit); 'w' replaces it at
    the commit.
    """
    path = os.fspath(urlpath)
    if mode == "a" and os.path.lexists(path):
        raise FileExistsError(f"{path!r} exists; use ndpack.open() to open it, or "
                              "mode='w' to overwrite it")
    pending = Pending(path, exclusive=(mode == "a"))
    try:
        cls = ContiguousFrame if contiguous is None or contiguous else SparseFrame
        frame = cls(pending.path, "w", create=(info, raw_meta))
    except BaseException:
        pending.abort()
        raise
    frame.pending = pending
    return frame


def remove_urlpath(path) -> None:
    """Remove a frame file or sparse-frame directory; a missing path is not an error."""
    if path is None:
        return
    path = os.fspath(path)
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
