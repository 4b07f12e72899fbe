"""python-blosc2's remaining top-level names that concern arrays: format limits, type
aliases, machine facts and a few functions under their python-blosc2 names.

The limits are the formats' own (``MAX_TYPESIZE`` is 255, the one-byte typesize of a
chunk header; python-blosc2 4.14 exports a larger number it never accepts).  The table
of every python-blosc2 name and its state here is docs/compat.md.

Examples
--------
>>> import ndpack
>>> ndpack.MAX_TYPESIZE, ndpack.MAX_DIM, ndpack.DEFAULT_FLOAT.__name__
(255, 16, 'float64')
>>> ndpack.transpose(ndpack.arange(6, shape=(2, 3))).shape
(3, 2)
"""

from __future__ import annotations

import os

import numpy as np

from ndpack.about import __version__
from ndpack.codecs import MAX_TYPESIZE as _MAX_TYPESIZE  # one byte in a chunk header
from ndpack.engine.ops.shape import permute_dims
from ndpack.linalg import diagonal as _diagonal

__all__ = [
    "MAX_TYPESIZE", "MAX_BUFFERSIZE", "MAX_BLOCKSIZE", "MAX_OVERHEAD", "MIN_HEADER_LENGTH",
    "EXTENDED_HEADER_LENGTH", "MAX_DIM", "DEFINED_CODECS_STOP",
    "GLOBAL_REGISTERED_CODECS_STOP", "USER_REGISTERED_CODECS_STOP", "VERSION_STRING",
    "blosclib_version", "DEFAULT_INT", "DEFAULT_FLOAT", "DEFAULT_COMPLEX", "DEFAULT_INDEX",
    "bool_", "str_", "bytes_", "object_", "float16", "euler_gamma", "ncores",
    "detect_number_of_cores", "transpose", "diagonal",
]

MAX_TYPESIZE = _MAX_TYPESIZE
MAX_BUFFERSIZE = 2**31 - 1 - 32     # a chunk's nbytes is an int32, less the header
MAX_BLOCKSIZE = 536866816           # python-blosc2's value
MAX_OVERHEAD = 32                   # the extended header
MIN_HEADER_LENGTH = 16
EXTENDED_HEADER_LENGTH = 32
MAX_DIM = 16                        # the b2nd metalayer's limit
DEFINED_CODECS_STOP = 31            # codec ids: 0..31 defined, ..159 registered,
GLOBAL_REGISTERED_CODECS_STOP = 159  # 160..255 for users
USER_REGISTERED_CODECS_STOP = 255
VERSION_STRING = __version__
blosclib_version = f"ndpack {__version__}"

DEFAULT_INT = np.int64
DEFAULT_FLOAT = np.float64
DEFAULT_COMPLEX = np.complex128
DEFAULT_INDEX = np.int64
bool_, str_, bytes_, object_, float16 = np.bool_, np.str_, np.bytes_, np.object_, np.float16
euler_gamma = float(np.euler_gamma)



def detect_number_of_cores() -> int:
    """The CPUs this process may run on (its affinity), as the thread default uses."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


ncores = detect_number_of_cores()


def transpose(x, **kwargs):
    """python-blosc2's ``transpose``: the axes reversed (:func:`ndpack.permute_dims`)."""
    return permute_dims(x, None, **kwargs)


def diagonal(x, /, *, offset=0):
    """python-blosc2's ``diagonal``: :func:`ndpack.linalg.diagonal`."""
    return _diagonal(x, offset=offset)
