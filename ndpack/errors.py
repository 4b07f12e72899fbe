"""Exceptions raised by ndpack.

Every error from the C core arrives as one of these classes, with the core's
message.  Each subclasses both :class:`NdpackError` and the closest builtin,
so ``except ValueError`` keeps working for code written against python-blosc2.

Examples
--------
>>> import ndpack
>>> try:
...     ndpack.decompress(b"not a chunk")
... except ndpack.FormatError as exc:
...     print(type(exc).__name__, "is a ValueError:", isinstance(exc, ValueError))
FormatError is a ValueError: True
"""

__all__ = [
    "NdpackError",
    "FormatError",
    "CodecError",
    "FilterError",
    "ParameterError",
    "MissingFileError",
    "CallbackError",
    "NdpackMemoryError",
    "ThreadError",
    "OperationError",
    "LimitError",
    "MemoryLimitError",
]


class NdpackError(Exception):
    """Base class of every ndpack error."""


class FormatError(NdpackError, ValueError):
    """Input bytes are not a valid Blosc2 chunk or frame (corrupt, truncated, lying header)."""


class CodecError(NdpackError, ValueError):
    """A codec id is unknown, not built in, or not registered."""


class FilterError(NdpackError, ValueError):
    """A filter id is unknown or its parameters do not fit the data."""


class ParameterError(NdpackError, ValueError):
    """An argument is out of range or inconsistent with the data."""


class MissingFileError(NdpackError, FileNotFoundError, ValueError):
    """A file opened for reading does not exist (a ValueError too, as python-blosc2's
    ``SChunk(urlpath=..., mode="r")`` raises)."""


class CallbackError(NdpackError, RuntimeError):
    """A user codec or filter registered from Python failed; the cause is chained."""


class NdpackMemoryError(NdpackError, MemoryError):
    """The C core could not allocate memory (a MemoryError)."""


class ThreadError(NdpackError, RuntimeError):
    """The C core could not start a thread (a RuntimeError)."""


class OperationError(NdpackError, RuntimeError):
    """A request the store cannot carry out as given (a chunk beyond the format's size
    limit, an order that is not a permutation of the chunks); a RuntimeError, the type
    python-blosc2 raises when C-Blosc2 refuses the same request."""


class MemoryLimitError(NdpackError, MemoryError):
    """A computation whose projected peak of working memory exceeds the memory limit
    (``ndpack.set_memory_limit``), refused before it reads or writes anything; the
    message names the projection, the limit and what drives it (``ndpack.explain``)."""


class LimitError(ParameterError, OperationError):
    """A size beyond what the format can hold (a chunk over ``2**31 - 33`` bytes):
    a ParameterError (ValueError) and, as python-blosc2 raises for it, a RuntimeError."""
