"""Sizes of the work: the one place that decides region, group and tile shapes.

Every evaluation path cuts its output (or its input, for reductions) into pieces whose
size is set here, so a change of memory budget is made once:

* *regions* of about ``REGION_BYTES`` (16 MiB) of output, less under a small memory
  limit (:func:`region_budget`: the region path holds two regions of every operand
  and one of output, and these may take half of :func:`ndpack.resources.memory_limit`):
  the unit of the general region path and of reductions over expressions and foreign
  arrays, aligned to the chunks of the output or of an operand when there are any;
* *groups* of blocks of about ``GROUP_BYTES`` (2 MiB) per operand on the aligned path
  (measured: 0.5 -> 2 MiB made ``a + b + c`` over LZ4 operands 84 -> 62 ms);
* *row groups* of about ``REDUCE_GROUP_BYTES`` of a chunk that reduction workers decode
  and reduce while it is in their cache, for chunks of at least ``CHUNK_MIN_BYTES``.

The constants are module attributes read at call time (tests shrink them to exercise
the splitting code on small arrays).

Examples
--------
>>> default_region_shape((10_000, 1000), 8)
(2097, 1000)
>>> plan_regions_for_chunks((10_000, 1000), 8, (100, 1000))
(2000, 1000)
>>> list(regions((3, 4), (2, 4)))
[(slice(0, 2, None), slice(0, 4, None)), (slice(2, 3, None), slice(0, 4, None))]
"""

from __future__ import annotations

import collections.abc
import dataclasses
import itertools
import math

import numpy as np

from ndpack.engine.expr.nodes import Node, operands_of
from ndpack.resources import memory_limit
from ndpack.storage.ndarray import NDArray

__all__ = ["Plan", "REGION_BYTES", "GROUP_BYTES", "ENCODE_GROUP_BYTES", "CHUNK_MIN_BYTES", "REDUCE_GROUP_BYTES",
           "REDUCE_GROUP_MULT", "region_budget", "plan_regions", "plan_regions_for_chunks",
           "default_region_shape", "grow", "regions", "layout_of", "valid_chunks"]

REGION_BYTES = 16 * 2**20      # target bytes of one output region
GROUP_BYTES = 1 << 21          # one operand's share of a group of blocks (aligned path)
ENCODE_GROUP_BYTES = 1 << 20   # the same when the workers also encode the result blocks
CHUNK_MIN_BYTES = 1 << 20      # reductions read NDArray chunks this big one by one
REDUCE_GROUP_BYTES = 2 << 20   # rows of a chunk decoded and reduced together
REDUCE_GROUP_MULT = 2          # chunks of at least this many groups are cut into groups


def region_budget(noperands: int = 1) -> int:
    """Bytes of one region when `noperands` operands are read per region: at most
    ``REGION_BYTES``, and two regions of each operand plus one of output within half
    the memory limit.

    Examples
    --------
    >>> from ndpack.resources import set_memory_limit
    >>> old = set_memory_limit("64M")
    >>> region_budget(1) // 2**20, region_budget(3) // 2**20
    (8, 4)
    >>> _ = set_memory_limit(old)
    """
    share = memory_limit() // (2 * (2 * max(1, noperands) + 2))
    return max(1 << 16, min(REGION_BYTES, share))


def plan_regions(node: Node, shape: tuple, itemsize: int, chunks=None) -> tuple:
    """The region shape for evaluating `node` over `shape`: whole multiples of `chunks`
    (the output's), else of the chunks of the first full-shape operand that has
    ``.chunks`` (reads stay aligned to its storage), else plain slabs."""
    budget = region_budget(len(operands_of(node)))
    if not valid_chunks(chunks, shape):
        chunks = None
        for op in operands_of(node):
            c = getattr(op.array, "chunks", None)
            if op.shape == shape and valid_chunks(c, shape):
                chunks = c
                break
    if chunks is None:
        return default_region_shape(shape, itemsize, budget)
    return plan_regions_for_chunks(shape, itemsize, chunks, budget)


def plan_regions_for_chunks(shape: tuple, itemsize: int, chunks: tuple,
                            budget: int | None = None) -> tuple:
    """Regions of about `budget` bytes (default :func:`region_budget`) made of whole
    chunks along the leading dimensions (the trailing ones as in
    :func:`default_region_shape`)."""
    target = default_region_shape(shape, itemsize, budget)
    return tuple(min(n, max(int(c), (t // int(c)) * int(c))) if n else 1
                 for c, t, n in zip(chunks, target, shape))


def valid_chunks(chunks, shape) -> bool:
    """Whether `chunks` is a usable grid for `shape` (positive ints, one per dim)."""
    return (chunks is not None and not isinstance(chunks, str)
            and len(tuple(chunks)) == len(shape)
            and all(isinstance(c, (int, np.integer)) and c > 0 for c in chunks))


def default_region_shape(shape: tuple, itemsize: int, budget: int | None = None) -> tuple:
    """Regions of about `budget` bytes (default :func:`region_budget`): whole trailing
    dimensions, a slab of the leading ones."""
    budget = region_budget() if budget is None else budget
    budget = max(budget // max(itemsize, 1), 1)
    out = list(shape)
    for d in range(len(shape)):
        inner = math.prod(shape[d + 1:])
        if inner * shape[d] <= budget:
            break
        if inner <= budget:
            out[d] = max(1, budget // max(inner, 1))
            break
        out[d] = 1
    return tuple(max(1, c) for c in out)


def grow(chunks, shape, itemsize) -> tuple:
    """Multiples of `chunks` (trailing dimensions first) up to about
    :func:`region_budget`: the regions of a reduction over an array with its own
    chunks."""
    budget = region_budget()
    out = [max(1, int(c)) for c in chunks]
    for d in reversed(range(len(shape))):
        cur = math.prod(out) * itemsize
        if cur >= budget:
            break
        out[d] = min(shape[d], out[d] * max(1, budget // cur))
    return tuple(max(1, c) for c in out)


def regions(shape: tuple, chunks: tuple):
    """Output regions (tuples of slices) of a grid with `chunks`, in C order."""
    if not shape:
        yield ()
        return
    if 0 in shape:
        return
    ranges = [range(0, n, c) for n, c in zip(shape, chunks)]
    for starts in itertools.product(*ranges):
        yield tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, shape))


def layout_of(node: Node, shape: tuple):
    """``(chunks, blocks)`` of the first NDArray operand with the output's shape, or
    ``(None, None)``: the default layout of a result."""
    for op in operands_of(node):
        if isinstance(op.array, NDArray) and op.shape == shape:
            return op.array.chunks, op.array.blocks
    return None, None


@dataclasses.dataclass
class Plan(collections.abc.Mapping):
    """How a computation will run, known before it runs (:func:`ndpack.explain`).

    A mapping of its fields (``plan["projected_peak_bytes"]``) whose ``str`` is the
    plan in words.  ``peak_terms`` names what the projected peak is made of (bytes of
    each kind of buffer the path holds at once); ``steps`` are the parts computed
    before the elementwise pass (reductions, products), each with its own plan.
    """

    path: str
    why: str
    into: str
    shape: tuple
    dtype: str
    chunks: tuple | None
    blocks: tuple | None
    region_shape: tuple | None
    nregions: int
    threads: int
    operands: list
    bytes_read: int
    bytes_decoded: int
    bytes_written: int
    peak_terms: dict
    memory_limit: int
    steps: list = dataclasses.field(default_factory=list)

    @property
    def projected_peak_bytes(self) -> int:
        return int(sum(self.peak_terms.values()))

    def _fields(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["projected_peak_bytes"] = self.projected_peak_bytes
        return out

    def __getitem__(self, key):
        return self._fields()[key]

    def __iter__(self):
        return iter(self._fields())

    def __len__(self) -> int:
        return len(self._fields())

    def __str__(self) -> str:
        mib = 2 ** 20
        lines = [f"path: {self.path} -- {self.why}",
                 f"output: {self.into} {self.shape} {self.dtype}, chunks {self.chunks}, "
                 f"blocks {self.blocks}",
                 f"pieces: {self.nregions} of {self.region_shape}, {self.threads} thread(s)"]
        for op in self.operands:
            lines.append(f"operand {op['name']}: {op['kind']} {op['shape']} {op['dtype']}"
                         + (f", chunks {op['chunks']}, {op['codec']}, "
                            f"{op['cbytes'] / mib:.1f} MiB stored" if op.get("chunks") else ""))
        lines.append(f"bytes: read {self.bytes_read / mib:.1f} MiB, decode "
                     f"{self.bytes_decoded / mib:.1f} MiB, write at most "
                     f"{self.bytes_written / mib:.1f} MiB")
        terms = ", ".join(f"{k} {v / mib:.1f}" for k, v in self.peak_terms.items())
        lines.append(f"projected peak: {self.projected_peak_bytes / mib:.1f} MiB of "
                     f"{self.memory_limit / mib:.0f} MiB allowed ({terms})")
        for step in self.steps:
            lines.append("before: " + str(step).replace("\n", "\n  "))
        return "\n".join(lines)
