"""Codec and filter identifiers, compression parameters, and the user registry.

Names, numeric ids and defaults follow python-blosc2, so code written for it
keeps working: ``CParams()`` is zstd at clevel 5 with SHUFFLE in slot 5.

Examples
--------
>>> import ndpack
>>> cp = ndpack.CParams(codec=ndpack.Codec.LZ4, clevel=1, typesize=4)
>>> cp.filters
[<Filter.NOFILTER: 0>, <Filter.NOFILTER: 0>, <Filter.NOFILTER: 0>, <Filter.NOFILTER: 0>, <Filter.NOFILTER: 0>, <Filter.SHUFFLE: 1>]
>>> ndpack.Codec.ZSTD in ndpack.compressor_list()
True
"""

from __future__ import annotations

import dataclasses
import functools
import enum
from collections.abc import Callable, Mapping

import numpy as np

from . import _core
from ndpack.errors import CodecError, FilterError, ParameterError

__all__ = [
    "Codec",
    "Filter",
    "SplitMode",
    "SpecialValue",
    "Tuner",
    "CParams",
    "DParams",
    "cparams_dflts",
    "dparams_dflts",
    "compressor_list",
    "codec_status",
    "register_codec",
    "register_filter",
    "get_nthreads",
    "set_nthreads",
]


class Codec(enum.IntEnum):
    """Codec ids as stored in chunk headers (compcode numbering)."""

    BLOSCLZ = 0
    LZ4 = 1
    LZ4HC = 2
    ZLIB = 4
    ZSTD = 5
    NDLZ = 32
    ZFP_ACC = 33
    ZFP_PREC = 34
    ZFP_RATE = 35
    OPENHTJ2K = 36
    GROK = 37
    OPENZL = 38
    J2K = 39
    HTJ2K = 40


class Filter(enum.IntEnum):
    """Filter ids of the 6-slot pipeline."""

    NOFILTER = 0
    SHUFFLE = 1
    BITSHUFFLE = 2
    DELTA = 3
    TRUNC_PREC = 4
    NDCELL = 32
    NDMEAN = 33
    BYTEDELTA = 35
    INT_TRUNC = 36


class SplitMode(enum.IntEnum):
    """Whether blocks are split into one stream per byte of the type."""

    ALWAYS_SPLIT = 1
    NEVER_SPLIT = 2
    AUTO_SPLIT = 3
    FORWARD_COMPAT_SPLIT = 4


class SpecialValue(enum.IntEnum):
    """Special chunks: content described by the header alone."""

    NOT_SPECIAL = 0
    ZERO = 1
    NAN = 2
    VALUE = 3
    UNINIT = 4


class Tuner(enum.IntEnum):
    """Block-size tuner (only the static tuner exists)."""

    STUNE = 0


BUILTIN_CODECS = (Codec.BLOSCLZ, Codec.LZ4, Codec.LZ4HC, Codec.ZLIB, Codec.ZSTD)
#: C-Blosc2's n-d codecs and filters, built into python-blosc2's wheel and into our C
#: core (ZFP through the system libzfp, found at build time): they read the blocks'
#: n-d shape (the "b2nd" metalayer), so they work on n-d arrays.
ND_CODECS = (Codec.NDLZ, Codec.ZFP_ACC, Codec.ZFP_PREC, Codec.ZFP_RATE)
ND_FILTERS = (Filter.NDCELL, Filter.NDMEAN)
USER_ID_RANGE = range(160, 256)
_codec_names: dict[int, str] = {int(c): c.name for c in BUILTIN_CODECS + ND_CODECS}


def get_nthreads() -> int:
    """Default number of threads (``NDPACK_NTHREADS``, else the usable cores, at most 64)."""
    return _core.get_nthreads()


def set_nthreads(n: int) -> int:
    """Set the process-wide default number of threads; returns the previous value.

    Examples
    --------
    >>> import ndpack
    >>> old = ndpack.set_nthreads(1)
    >>> ndpack.nthreads
    1
    >>> _ = ndpack.set_nthreads(old)
    """
    n = int(n)
    if n < 1:
        raise ParameterError(f"nthreads must be >= 1, got {n}")
    return _core.set_nthreads(n)


def _default_nthreads() -> int:
    return _core.get_nthreads()


MAX_TYPESIZE = 255          # a chunk header keeps the typesize in one byte


def check_int_range(name: str, value, lo: int, hi: int | None = None) -> int:
    """`value` as an int within ``lo..hi`` (no upper bound when `hi` is None), else a
    :class:`ParameterError` naming the argument (a bool or a non-integer is refused).

    Examples
    --------
    >>> check_int_range("clevel", 5, 0, 9)
    5
    >>> check_int_range("nthreads", 0, 1)
    Traceback (most recent call last):
    ...
    ndpack.errors.ParameterError: nthreads must be >= 1, got 0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"{name} must be an integer, not {value!r}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"{lo}..{hi}"
        raise ParameterError(f"{name} must be {bound}, got {value}")
    return value


def _default_filters() -> list:
    return [Filter.NOFILTER] * 5 + [Filter.SHUFFLE]


def _as_enum(enum_cls, value):
    try:
        return enum_cls(value)
    except ValueError:
        return int(value)   # user ids keep their number


@dataclasses.dataclass
class CParams:
    """Compression parameters (the fields and defaults of python-blosc2's ``CParams``).

    Parameters
    ----------
    codec : Codec or int
        Codec id; 160..255 for codecs registered with :func:`register_codec`.
    codec_meta : int
        Parameter byte passed to user codecs.
    clevel : int
        0 (store uncompressed) to 9.
    use_dict : bool
        Train and use a dictionary (zstd, LZ4, LZ4HC).  Not supported for writing yet.
    typesize : int
        Element size in bytes; drives SHUFFLE and split streams.
    nthreads : int
        Threads used to compress the blocks of a chunk.
    blocksize : int
        Block size in bytes, 0 for automatic.
    splitmode : SplitMode
    filters : list of Filter or int
        Up to 6 filters, filling slots from 0.
    filters_meta : list of int
        One parameter per filter (BYTEDELTA 0 becomes the typesize).
    tuner : Tuner
    """

    codec: Codec | int = Codec.ZSTD
    codec_meta: int = 0
    clevel: int = 5
    use_dict: bool = False
    typesize: int = 8
    nthreads: int = dataclasses.field(default_factory=_default_nthreads)
    blocksize: int = 0
    splitmode: SplitMode = SplitMode.AUTO_SPLIT
    filters: list = dataclasses.field(default_factory=_default_filters)
    filters_meta: list = dataclasses.field(default_factory=lambda: [0] * 6)
    tuner: Tuner = Tuner.STUNE

    def __post_init__(self):
        check_int_range("clevel", self.clevel, 0, 9)
        check_int_range("typesize", self.typesize, 1, MAX_TYPESIZE)
        check_int_range("nthreads", self.nthreads, 1)
        self.codec = _as_enum(Codec, self.codec)
        self.splitmode = _as_enum(SplitMode, self.splitmode)
        self.tuner = _as_enum(Tuner, self.tuner)
        self.filters = [_as_enum(Filter, f) for f in self.filters]
        self.filters_meta = [int(m) for m in self.filters_meta]
        if len(self.filters) > 6:
            raise ParameterError(f"at most 6 filters, got {len(self.filters)}")
        if len(self.filters_meta) > len(self.filters):
            self.filters_meta = self.filters_meta[: len(self.filters)]
        if len(self.filters_meta) < len(self.filters):
            raise ParameterError("filters_meta needs one value per filter")
        for i, f in enumerate(self.filters):
            if f == Filter.BYTEDELTA and self.filters_meta[i] == 0:
                self.filters_meta[i] = self.typesize

    def pipeline(self) -> tuple[list[int], list[int]]:
        """The 6 filter slots and their parameter bytes, as written in chunk headers.

        A BYTEDELTA on one-byte items is dropped (it would be a no-op).
        """
        filters = [int(f) for f in self.filters] + [0] * (6 - len(self.filters))
        meta = [int(m) for m in self.filters_meta] + [0] * (6 - len(self.filters_meta))
        for i, f in enumerate(filters):
            if f == Filter.BYTEDELTA and self.typesize == 1:
                filters[i] = meta[i] = 0
            if not -128 <= meta[i] <= 255:
                raise FilterError(f"filters_meta[{i}] = {meta[i]} does not fit in one byte")
        return filters, meta


@dataclasses.dataclass(init=False, eq=False)
class DParams:
    """Decompression parameters.

    Its one dataclass field is python-blosc2's (``dataclasses.asdict`` gives
    ``{"nthreads": ...}`` as there); `verify` is an ndpack keyword kept beside it.

    Parameters
    ----------
    nthreads : int, optional
        Threads used to decode the blocks of a chunk (default: ``ndpack.nthreads``).
    verify : bool or "full"
        Check chunks against the frame's checksums when it carries them (ndpack
        extension, docs/storage.md): True checks every chunk read whole, "full" also
        reads whole the chunks of which only some blocks are wanted, False checks
        nothing.

    Examples
    --------
    >>> import dataclasses, ndpack
    >>> dp = ndpack.DParams(nthreads=1, verify="full")
    >>> dataclasses.asdict(dp), dp.verify
    ({'nthreads': 1}, 'full')
    >>> dp == ndpack.DParams(nthreads=1)
    False
    """

    nthreads: int

    def __init__(self, nthreads: int | None = None, verify: bool | str = True):
        self.nthreads = _default_nthreads() if nthreads is None else nthreads
        self.verify = verify
        check_int_range("nthreads", self.nthreads, 1)

    def __eq__(self, other):
        if not isinstance(other, DParams):
            return NotImplemented
        return (self.nthreads, self.verify) == (other.nthreads, other.verify)

    def __repr__(self):
        extra = "" if self.verify is True else f", verify={self.verify!r}"
        return f"DParams(nthreads={self.nthreads!r}{extra})"


@functools.cache
def _fields(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _shallow(params) -> dict:
    """The fields of a CParams/DParams as a dict, lists copied (``dataclasses.asdict``
    deep-copies every value: a tenth of a millisecond per call)."""
    return {name: (list(v) if isinstance(v := getattr(params, name), list) else v)
            for name in _fields(type(params))}


def make_cparams(cparams=None, **kwargs) -> CParams:
    """Normalize ``cparams`` (CParams, dict or None) plus loose keyword fields.

    Unknown keys raise :class:`ParameterError` rather than being ignored.
    """
    if isinstance(cparams, CParams):
        base = _shallow(cparams)
    elif cparams is None:
        base = {}
    elif isinstance(cparams, Mapping):
        base = dict(cparams)
    else:
        raise ParameterError(f"cparams must be a CParams or a dict, not {type(cparams).__name__}")
    base.update(kwargs)
    unknown = set(base) - _fields(CParams)
    if unknown:
        raise ParameterError(f"unknown compression parameter(s) {sorted(unknown)}; "
                             f"valid ones: {sorted(_fields(CParams))}")
    return CParams(**base)


def make_dparams(dparams=None, **kwargs) -> DParams:
    """Normalize ``dparams`` (DParams, dict or None) plus loose keyword fields."""
    if isinstance(dparams, DParams):
        base = {**_shallow(dparams), "verify": dparams.verify}
    elif dparams is None:
        base = {}
    elif isinstance(dparams, Mapping):
        base = dict(dparams)
    else:
        raise ParameterError(f"dparams must be a DParams or a dict, not {type(dparams).__name__}")
    base.update(kwargs)
    unknown = set(base) - _fields(DParams) - {"verify"}
    if unknown:
        raise ParameterError(f"unknown decompression parameter(s) {sorted(unknown)}")
    return DParams(**base)


def compressor_list(plugins: bool = False) -> list:
    """Codecs available for compression: the built-in ones, then registered user codecs.

    ``plugins=True`` adds C-Blosc2's n-d codecs that this build has (NDLZ always,
    the ZFP ones when libzfp was found at build time; see :func:`codec_status`), as
    python-blosc2 lists its plugins.
    """
    nd = [c for c in ND_CODECS if _core.codec_available(int(c))] if plugins else []
    return list(BUILTIN_CODECS) + nd + sorted(c for c in _codec_names if c in USER_ID_RANGE)


def codec_status() -> dict:
    """Each built-in and n-d codec and filter: ``"built in"`` or why it is missing.

    >>> st = codec_status()
    >>> st["ZSTD"], st["NDCELL"]
    ('built in', 'built in')
    """
    out = {}
    for c in BUILTIN_CODECS + ND_CODECS:
        out[c.name] = "built in" if _core.codec_available(int(c)) else (
            _core.codec_missing(int(c)) or "not available")
    for f in Filter:
        if f != Filter.NOFILTER:
            out[f.name] = "built in"
    return out


def codec_name(codec: int) -> str:
    """Name of a built-in or registered codec, e.g. ``'zstd'``."""
    try:
        return _codec_names[int(codec)].lower()
    except KeyError:
        raise CodecError(f"codec {int(codec)} is neither built in nor registered") from None


def _check_user_id(kind: str, id: int) -> int:
    id = int(id)
    if id not in USER_ID_RANGE:
        raise ParameterError(f"user {kind} ids must be in 160..255, got {id}")
    return id


def register_codec(codec_name: str, id: int, encoder: Callable | None = None,
                   decoder: Callable | None = None, version: int = 1) -> None:
    """Register a codec written in Python under an id in 160..255.

    ``encoder(input, output, meta, schunk) -> int`` writes into ``output`` (a
    uint8 NumPy array) and returns the compressed size (0: did not compress);
    ``decoder(input, output, meta, schunk) -> int`` returns the decoded size.
    ``schunk`` is None at the chunk level.

    Examples
    --------
    >>> import zlib, numpy as np, ndpack
    >>> def enc(src, dst, meta, schunk):
    ...     out = zlib.compress(src.tobytes(), 1)
    ...     if len(out) >= dst.size:
    ...         return 0                      # does not fit: stored raw
    ...     dst[:len(out)] = np.frombuffer(out, np.uint8)
    ...     return len(out)
    >>> def dec(src, dst, meta, schunk):
    ...     out = zlib.decompress(src.tobytes())
    ...     dst[:len(out)] = np.frombuffer(out, np.uint8)
    ...     return len(out)
    >>> ndpack.register_codec("zlib1", 200, enc, dec)
    >>> data = np.arange(10_000, dtype=np.int32)
    >>> c = ndpack.compress2(data, codec=200, typesize=4)
    >>> len(c) < data.nbytes, ndpack.decompress2(c) == data.tobytes()
    (True, True)
    """
    id = _check_user_id("codec", id)
    if encoder is None and decoder is None:
        raise ParameterError("register_codec needs an encoder, a decoder or both")
    _core.register_codec(id, int(version), encoder, decoder)
    _codec_names[id] = str(codec_name)


def register_filter(id: int, forward: Callable | None = None,
                    backward: Callable | None = None, name: str | None = None) -> None:
    """Register a filter written in Python under an id in 160..255.

    ``forward(input, output, meta, schunk)`` and ``backward(...)`` fill ``output``
    (a uint8 NumPy array as long as ``input``).
    """
    id = _check_user_id("filter", id)
    if forward is None and backward is None:
        raise ParameterError("register_filter needs a forward function, a backward one or both")
    _core.register_filter(id, forward, backward)


#: python-blosc2's default compression and decompression parameters, as dicts (the
#: thread count as it was when ndpack was imported).
cparams_dflts = dataclasses.asdict(CParams())
dparams_dflts = {"nthreads": DParams().nthreads}


# ---- raw zstd frames: the chunks of zarr's and numcodecs' zstd codec -----------------------

def zstd_frame_compress(data, level: int = 0, checksum: bool = False, out=None):
    """One zstd frame of the bytes of `data` (a contiguous buffer), as zarr's and
    numcodecs' zstd codec store a chunk: the content size in the frame header, a
    checksum when `checksum`, `level` in zstd's numbering (0: its default, 3;
    negative: the fast levels).  Encoded by the C core with this thread's reused
    context, the GIL released.  Returns bytes, or with `out` (a writable buffer of at
    least :func:`zstd_frame_bound` bytes) the frame's size, written at its start.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(1000.0)
    >>> frame = zstd_frame_compress(x, level=1, checksum=True)
    >>> len(frame) < x.nbytes
    True
    >>> y = np.empty_like(x)
    >>> zstd_frame_decompress(frame, y), bool((x == y).all())
    (8000, True)
    """
    level = check_int_range("level", level, -(1 << 17), 22)
    return _core.zstd_compress(data, level, bool(checksum), out)


def zstd_frame_decompress(src, out) -> int:
    """Decode the zstd frame(s) `src` into the writable contiguous buffer `out`, which
    they must fill exactly (a frame without its content size is decoded, then its
    size checked).  Returns the bytes written.  A corrupt, truncated or foreign `src`
    raises :class:`~ndpack.errors.FormatError`; frames of another size
    :class:`~ndpack.errors.ParameterError`.  The C core decodes with this thread's
    reused context, the GIL released.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.errors import FormatError
    >>> frame = zstd_frame_compress(np.ones(100))
    >>> zstd_frame_decompress(frame[:-3], np.empty(100))
    Traceback (most recent call last):
    ...
    ndpack.errors.FormatError: a corrupt or truncated zstd frame (...)
    """
    return _core.zstd_decompress(src, out)


def zstd_frame_bound(nbytes: int) -> int:
    """The most bytes one zstd frame of `nbytes` input bytes can take.

    Examples
    --------
    >>> zstd_frame_bound(1 << 20) > 1 << 20
    True
    """
    return _core.zstd_bound(int(nbytes))
