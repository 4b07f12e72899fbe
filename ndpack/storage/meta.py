"""Metalayers and variable-length metalayers (vlmeta) of a super-chunk.

Values are msgpack with python-blosc2's conventions (FORMAT.md §4.2, §4.5):
``use_bin_type=True``, ``strict_types=True``, tuples as ``["__tuple__", ...]``,
NumPy scalars as their Python equivalents, and extension types 44 (complex),
45 (set) and 46 (NumPy array).  Fixed metalayers hold raw msgpack bytes and can
only be updated with a value of the same encoded length; vlmeta values are
stored as compressed chunks.  The binary metalayers section of a frame header
(§4.2) and the trailer that holds the vlmeta (§4.5) are built and parsed here too.

Examples
--------
>>> from ndpack.storage.meta import packb, unpackb
>>> packb({"a": 1, "b": [1.5, "x"]}).hex()
'82a16101a16292cb3ff8000000000000a178'
>>> unpackb(packb((1, 2j, {3})))
(1, 2j, {3})
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, MutableMapping

import msgpack
import numpy as np

from ndpack.chunks import compress2, decompress
from ndpack.codecs import Codec
from ndpack.errors import FormatError, ParameterError

__all__ = ["packb", "unpackb", "Meta", "vlmeta", "pack_vlmeta_value", "unpack_vlmeta_value",
           "build_metalayers", "build_trailer", "parse_section", "parse_trailer",
           "locate_trailer"]

EXT_BLOSC2_OBJECT = 42
EXT_REFERENCE = 43
EXT_COMPLEX = 44
EXT_SET = 45
EXT_NDARRAY = 46
MAX_NAME = 31


def _convert(obj):
    """Rewrite tuples (recursively) to python-blosc2's ``["__tuple__", ...]`` form."""
    if isinstance(obj, tuple):
        return ["__tuple__"] + [_convert(o) for o in obj]
    if isinstance(obj, list):
        return [_convert(o) for o in obj]
    if isinstance(obj, dict):
        return {_convert(k): _convert(v) for k, v in obj.items()}
    return obj


def _default(obj):
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("NumPy arrays of Python objects cannot be stored in metadata")
        dtype = ({"descr": obj.dtype.descr} if obj.dtype.fields is not None
                 else {"str": obj.dtype.str})
        payload = {"dtype": dtype, "shape": list(obj.shape),
                   "data": np.ascontiguousarray(obj).tobytes()}
        return msgpack.ExtType(EXT_NDARRAY, packb(payload))
    if isinstance(obj, np.generic):
        return _convert(obj.item())
    if isinstance(obj, complex):
        return msgpack.ExtType(EXT_COMPLEX, struct.pack(">dd", obj.real, obj.imag))
    if isinstance(obj, (set, frozenset)):
        return msgpack.ExtType(EXT_SET, packb(list(obj)))
    raise TypeError(f"cannot store a {type(obj).__name__} in metadata")


def packb(value) -> bytes:
    """Encode `value` as python-blosc2 encodes metadata values.

    Examples
    --------
    >>> packb((1, 2)).hex()
    '93a95f5f7475706c655f5f0102'
    """
    return msgpack.packb(_convert(value), use_bin_type=True, strict_types=True,
                         default=_default)


def _ext_hook(code, data):
    if code == EXT_COMPLEX:
        if len(data) != 16:
            raise FormatError(f"complex extension holds {len(data)} bytes, expected 16")
        re, im = struct.unpack(">dd", data)
        return complex(re, im)
    if code == EXT_SET:
        return set(unpackb(data))
    if code == EXT_NDARRAY:
        d = unpackb(data)
        try:
            dt = _dtype_from(d["dtype"])
            return np.frombuffer(d["data"], dtype=dt).reshape(d["shape"]).copy()
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"malformed NumPy array extension in metadata: {exc}") from None
    if code in (EXT_BLOSC2_OBJECT, EXT_REFERENCE):
        raise FormatError(f"metadata extension type {code} (embedded Blosc2 object/reference) "
                          "is not supported yet")
    return msgpack.ExtType(code, data)


def _dtype_from(spec) -> np.dtype:
    """NumPy dtype from python-blosc2's ``{"str": ...}`` or ``{"descr": [...]}`` form."""
    if isinstance(spec, dict) and "descr" in spec:
        return np.dtype([tuple(f) for f in spec["descr"]])
    if isinstance(spec, dict):
        return np.dtype(spec["str"])
    return np.dtype(spec)


def _list_hook(items):
    if items and items[0] == "__tuple__":
        return tuple(items[1:])
    return items


def unpackb(data):
    """Decode a metadata value written by :func:`packb` or python-blosc2.

    Raises
    ------
    FormatError
        If `data` is not one complete msgpack value.
    """
    try:
        return msgpack.unpackb(bytes(data), raw=False, strict_map_key=False,
                               ext_hook=_ext_hook, list_hook=_list_hook)
    except FormatError:
        raise
    except Exception as exc:
        raise FormatError(f"metadata value is not valid msgpack ({type(exc).__name__}: "
                          f"{exc})") from None


def pack_vlmeta_value(value, typesize: int = 1) -> bytes:
    """Encode and compress a vlmeta value into a chunk (zstd clevel 5, typesize 1)."""
    return compress2(packb(value), codec=Codec.ZSTD, clevel=5, typesize=typesize, nthreads=1)


def unpack_vlmeta_value(chunk, name: str = "?"):
    """Decompress and decode a vlmeta chunk.

    A special chunk of zeros, NaN or uninitialized bytes (32 bytes that may claim 2 GB)
    holding more than one byte cannot be one msgpack value: a FormatError before
    anything is decoded.
    """
    if len(chunk) >= 32 and (chunk[2] & 0x05) == 0x05 and (chunk[31] >> 4) & 0x07 in (1, 2, 4) \
            and struct.unpack_from("<i", chunk, 4)[0] > 1:
        raise FormatError(f"vlmeta {name!r}: value chunk is a special chunk of "
                          f"{struct.unpack_from('<i', chunk, 4)[0]} bytes, not a msgpack value")
    try:
        raw = decompress(chunk)
    except FormatError as exc:
        raise FormatError(f"vlmeta {name!r}: value chunk is corrupt: {exc}") from None
    return unpackb(raw)


def name_of(name):
    """A vlmeta key as stored: bytes keys are their UTF-8 text (python-blosc2 takes
    ``vlmeta[b"k"]`` and lists it as ``"k"``)."""
    if isinstance(name, (bytes, bytearray)):
        try:
            return bytes(name).decode()
        except UnicodeDecodeError:
            raise ParameterError(f"metadata name {bytes(name)!r} is not UTF-8") from None
    return name


def check_name(name) -> str:
    """Validate a metalayer name (str of 1..31 UTF-8 bytes)."""
    if not isinstance(name, str):
        raise TypeError(f"metadata names are str, not {type(name).__name__}")
    n = len(name.encode())
    if not 1 <= n <= MAX_NAME:
        raise ParameterError(f"metadata name {name!r} must have 1..{MAX_NAME} UTF-8 bytes")
    return name


# --- the binary sections of a frame (§4.2 metalayers, §4.5 trailer) ---------------------

_FP_NONE = b"\xd8\x00" + bytes(16)


def _build_section(entries: dict, base: int, map_start: int) -> tuple[bytes, bytes]:
    """Map and values of a (vl)metalayer section; offsets are ``base`` + position."""
    names = list(entries)
    map_part = bytearray(b"\xde" + struct.pack(">H", len(names)))
    for n in names:
        nb = n.encode()
        map_part += bytes([0xA0 | len(nb)]) + nb + b"\xd2" + b"\0\0\0\0"
    # values follow: b"\xdc" + n16, then C6 len bytes each
    values = bytearray(b"\xdc" + struct.pack(">H", len(names)))
    pos = base + map_start + len(map_part) + 3
    offsets = []
    for n in names:
        offsets.append(pos)
        v = bytes(entries[n])
        values += b"\xc6" + struct.pack(">I", len(v)) + v
        pos += 5 + len(v)
    # patch offsets
    p = 3
    for n, off in zip(names, offsets):
        nb = n.encode()
        p += 1 + len(nb) + 1
        map_part[p:p + 4] = struct.pack(">i", off)
        p += 4
    return bytes(map_part), bytes(values)


def build_metalayers(meta: dict, start: int) -> bytes:
    """The metalayers section starting at frame position `start` (§4.2)."""
    # 93 CD <idx_size> <map> <values>; offsets count from the frame start
    map_part, values = _build_section(meta, start, 4)
    idx_size = 4 + len(map_part)
    return b"\x93\xcd" + struct.pack(">H", idx_size) + map_part + values


def build_trailer(vlmeta: dict) -> bytes:
    """The trailer for the given vlmeta chunks (§4.5)."""
    map_part, values = _build_section(vlmeta, 0, 6)
    idx_size = 3 + len(map_part)
    body = b"\x94\x01\x93\xcd" + struct.pack(">H", idx_size) + map_part + values
    trailer_len = len(body) + 5 + len(_FP_NONE)
    return body + b"\xce" + struct.pack(">I", trailer_len) + _FP_NONE


def expect(buf, pos, byte, what, base=0):
    if pos >= len(buf) or buf[pos] != byte:
        got = "end of data" if pos >= len(buf) else f"0x{buf[pos]:02X}"
        raise FormatError(f"frame byte {base + pos}: expected 0x{byte:02X} ({what}), got {got}")


def parse_section(buf, pos: int, rel_base: int, base: int, limit: int, what: str) -> dict:
    """Parse ``DE <n> {name: offset} DC <n> [C6 len bytes]`` starting at `pos` of `buf`.

    Offsets in the map are relative to ``rel_base`` (a position in `buf`).
    """
    expect(buf, pos, 0xDE, f"{what} map16", base)
    if pos + 3 > len(buf):
        raise FormatError(f"frame byte {base + pos}: {what} map truncated")
    (n,) = struct.unpack_from(">H", buf, pos + 1)
    pos += 3
    entries = {}
    for _ in range(n):
        if pos >= len(buf) or not 0xA1 <= buf[pos] <= 0xBF:
            raise FormatError(f"frame byte {base + pos}: expected a {what} name (fixstr)")
        ln = buf[pos] & 0x1F
        name_b = bytes(buf[pos + 1:pos + 1 + ln])
        pos += 1 + ln
        expect(buf, pos, 0xD2, f"{what} offset int32", base)
        if pos + 5 > len(buf):
            raise FormatError(f"frame byte {base + pos}: {what} map truncated")
        (off,) = struct.unpack_from(">i", buf, pos + 1)
        pos += 5
        try:
            name = name_b.decode()
        except UnicodeDecodeError:
            raise FormatError(f"frame byte {base + pos}: {what} name is not UTF-8") from None
        entries[name] = off
    expect(buf, pos, 0xDC, f"{what} values array16", base)
    out = {}
    for name, off in entries.items():
        p = rel_base + off
        if not 0 <= p or p + 5 > limit:
            raise FormatError(f"frame byte {base + pos}: {what} {name!r} offset {off} out of range")
        expect(buf, p, 0xC6, f"{what} {name!r} bin32", base)
        (ln,) = struct.unpack_from(">I", buf, p + 1)
        if p + 5 + ln > limit:
            raise FormatError(f"frame byte {base + p}: {what} {name!r} length {ln} runs past "
                              f"the end of its section")
        out[name] = (p + 5, bytes(buf[p + 5:p + 5 + ln]))
    return out


def parse_trailer(buf, base: int = 0) -> dict:
    """Parse a trailer (the whole of `buf`); returns vlmeta name -> chunk bytes."""
    n = len(buf)
    if n < 35:
        raise FormatError(f"frame byte {base}: trailer of {n} bytes, at least 35 expected")
    expect(buf, 0, 0x94, "trailer fixarray(4)", base)
    if buf[1] not in (0, 1):
        raise FormatError(f"frame byte {base + 1}: trailer version {buf[1]}, expected 0 or 1")
    expect(buf, 2, 0x93, "vlmetalayers fixarray(3)", base)
    expect(buf, 3, 0xCD, "vlmetalayers idx_size uint16", base)
    raw = parse_section(buf, 6, 0, base, n - 23, "vlmeta")
    return {k: v for k, (pos, v) in raw.items()}


def locate_trailer(tail: bytes, frame_len: int, base: int) -> int:
    """Trailer length from the last 23 bytes of a frame."""
    if len(tail) != 23 or tail[0] != 0xCE:
        raise FormatError(f"frame byte {base + frame_len - 23}: expected 0xCE (trailer_len); "
                          "the frame is truncated or corrupt")
    (tlen,) = struct.unpack_from(">I", tail, 1)
    if tail[5] != 0xD8:
        raise FormatError(f"frame byte {base + frame_len - 18}: expected 0xD8 (fingerprint)")
    if not 35 <= tlen <= frame_len:
        raise FormatError(f"frame byte {base + frame_len - 22}: trailer_len {tlen} out of range")
    return tlen



class Meta(MutableMapping):
    """The fixed metalayers of a super-chunk (``schunk.meta``).

    Values are decoded from msgpack on access.  A metalayer can be updated only
    with a value whose encoding has the same length; none can be added or removed
    after creation (pass ``meta=`` to the constructor).

    Examples
    --------
    >>> import ndpack
    >>> s = ndpack.SChunk(chunksize=40, meta={"shape": (10,)})
    >>> s.meta["shape"], "shape" in s.meta, len(s.meta)
    ((10,), True, 1)
    >>> s.meta["shape"] = (12,)
    >>> s.meta["shape"]
    (12,)
    """

    def __init__(self, raw: dict, writer: Callable[[str, bytes], None], readonly: Callable):
        self._raw = raw           # name -> bytes, shared with the storage
        self._writer = writer
        self._readonly = readonly

    def __getitem__(self, name):
        if name not in self._raw:
            raise KeyError(name)
        return unpackb(self._raw[name])

    def get_raw(self, name) -> bytes:
        """The stored msgpack bytes of a metalayer."""
        return bytes(self._raw[name])

    def __setitem__(self, name, value):
        self._readonly()
        if name not in self._raw:
            raise ParameterError(f"metalayer {name!r} does not exist; metalayers are fixed "
                                 "when the super-chunk is created (use meta=)")
        new = packb(value)
        if len(new) != len(self._raw[name]):
            raise ParameterError(f"the encoded length of metalayer {name!r} cannot change "
                                 f"({len(self._raw[name])} -> {len(new)} bytes)")
        self._writer(name, new)

    def __delitem__(self, name):
        raise ParameterError("metalayers cannot be deleted")

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._raw))

    def __len__(self) -> int:
        return len(self._raw)

    def getall(self) -> dict:
        """All metalayers decoded, as a dict."""
        return {k: self[k] for k in self._raw}

    def __repr__(self):
        return repr(self.getall())


class vlmeta(MutableMapping):  # noqa: N801  (python-blosc2's name)
    """Variable-length metalayers of a super-chunk (``schunk.vlmeta``), dict-like.

    Examples
    --------
    >>> import ndpack
    >>> s = ndpack.SChunk(chunksize=40)
    >>> s.vlmeta["note"] = "hello"
    >>> s.vlmeta["pair"] = (1, 2)
    >>> s.vlmeta.getall()
    {'note': 'hello', 'pair': (1, 2)}
    >>> del s.vlmeta["note"]
    >>> list(s.vlmeta), len(s.vlmeta)
    (['pair'], 1)
    """

    def __init__(self, store, owner=None):
        self._store = store       # has .vlmeta (name -> chunk bytes), .set_vlmeta, .del_vlmeta
        self._owner = owner       # the SChunk, for its mode

    @property
    def mode(self) -> str:
        """The owner's open mode ('r', 'a' or 'w'), as python-blosc2's ``vlmeta.mode``."""
        return getattr(self._owner, "mode", "a")

    def __getitem__(self, name):
        if isinstance(name, slice):
            if name == slice(None):
                return self.getall()
            raise KeyError("only vlmeta[:] is supported as a slice")
        name = name_of(name)
        if name not in self._store.vlmeta:
            raise KeyError(name)
        return unpack_vlmeta_value(self._store.vlmeta[name], name)

    def __setitem__(self, name, value):
        name = check_name(name_of(name))
        self._store.set_vlmeta(name, pack_vlmeta_value(value))

    def __delitem__(self, name):
        name = name_of(name)
        if name not in self._store.vlmeta:
            raise KeyError(name)
        self._store.del_vlmeta(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._store.vlmeta))

    def __len__(self) -> int:
        return len(self._store.vlmeta)

    def __contains__(self, name) -> bool:
        return name_of(name) in self._store.vlmeta

    def getall(self) -> dict:
        """All entries decoded, as a dict (insertion order)."""
        return {k: self[k] for k in self}

    def to_dict(self) -> dict:
        """Same as :meth:`getall`."""
        return self.getall()

    def __repr__(self):
        return repr(self.getall())
