"""PyTables as a home: Blosc2 CArrays and EArrays read and written chunk by chunk.

PyTables is the oracle: what ndpack writes with ``write_chunk``, PyTables reads back
through its own Blosc2 filter; what PyTables writes, ndpack's direct reader reads the
same as PyTables.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndpack
from ndpack.engine.run import chunkout, foreign

tables = pytest.importorskip("tables")

FILTERS = [{"complib": "blosc2:lz4", "complevel": 5, "shuffle": True},
           {"complib": "blosc2:zstd", "complevel": 3, "shuffle": False, "bitshuffle": True},
           {"complib": "blosc2:blosclz", "complevel": 9, "shuffle": False},
           {"complevel": 0}]


@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize("dtype", ["f8", "i4", "f4"])
def test_carray_both_ways(tmp_path, filters, dtype):
    x = (np.random.default_rng(5).standard_normal((45, 33)) * 100).astype(dtype)
    with tables.open_file(tmp_path / "a.h5", "w") as f:
        src = f.create_carray("/", "src", obj=x, chunkshape=(8, 10),
                              filters=tables.Filters(**filters))
        out = f.create_carray("/", "out", atom=tables.Atom.from_dtype(np.dtype(dtype)),
                              shape=x.shape, chunkshape=(16, 12),
                              filters=tables.Filters(**filters))
        assert foreign.reader(src) is not None and chunkout.chunk_writer(out) is not None
        reads, writes = foreign.READS["tables"], chunkout.WRITES["tables"]
        ndpack.evaluate("s * 2", local_dict={"s": src}, out=out)
        assert foreign.READS["tables"] > reads and foreign.READS["tables fallback"] == 0
        assert chunkout.WRITES["tables"] - writes == 3 * 3
    with tables.open_file(tmp_path / "a.h5", "r") as f:
        np.testing.assert_array_equal(f.root.out[:], x * 2)      # PyTables reads ours
        got = foreign.read_new(foreign.reader(f.root.out), f.root.out,
                               (slice(3, 40), slice(5, 33)), 2)
        np.testing.assert_array_equal(got, (x * 2)[3:40, 5:33])


def test_earray_and_unallocated_chunks(tmp_path):
    x = np.arange(50 * 37, dtype="f4").reshape(50, 37)
    with tables.open_file(tmp_path / "a.h5", "w") as f:
        e = f.create_earray("/", "e", atom=tables.Float32Atom(), shape=(0, 37),
                            chunkshape=(7, 37), filters=tables.Filters(complevel=0))
        e.append(np.zeros((50, 37), "f4"))
        ndpack.evaluate("x - 1", local_dict={"x": x}, out=e)
        np.testing.assert_array_equal(e[:], x - 1)
        c = f.create_carray("/", "c", atom=tables.Int16Atom(dflt=-3), shape=(30, 30),
                            chunkshape=(10, 10),
                            filters=tables.Filters(complib="blosc2:lz4", complevel=1))
        c[0:10, 0:10] = 1                                # one chunk of nine stored
        got = foreign.read_new(foreign.reader(c), c, (slice(5, 30), slice(0, 30)), 2)
        np.testing.assert_array_equal(got, c[5:30, :])
