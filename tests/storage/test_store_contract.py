"""The contract every store keeps (zarr's ``StoreTests`` pattern): one class of tests,
run by each store through a subclass that says how to open it.

DictStore (``.b2d`` and ``.b2z``), TreeStore and EmbedStore are all mappings of keys
(``"/name"``) to arrays: values round-trip, keys list what was stored, deleting
forgets, a missing key is a KeyError, what was written is there after reopening, mode
'r' refuses writes and mode 'w' starts empty.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndpack
from ndpack.errors import NdpackError

A = np.arange(60.0).reshape(6, 10)
B = np.arange(1000, dtype=np.int32)


class StoreTests:
    """Subclasses set ``suffix`` and may override :meth:`open`."""

    cls = None
    suffix = ""

    def open(self, path, mode):
        return self.cls(path, mode=mode)

    @pytest.fixture
    def path(self, tmp_path):
        return tmp_path / f"store{self.suffix}"

    def test_values_round_trip(self, path):
        with self.open(path, "w") as st:
            st["/a"] = A
            st["/b"] = ndpack.asarray(B)
            np.testing.assert_array_equal(st["/a"][:], A)
            np.testing.assert_array_equal(st["/b"][:], B)
            assert st["/b"].dtype == B.dtype and st["/a"].shape == A.shape

    def test_keys_len_contains(self, path):
        with self.open(path, "w") as st:
            assert len(st) == 0 and list(st.keys()) == [] and "/a" not in st
            st["/b"] = B
            st["/a"] = A
            assert sorted(st.keys()) == ["/a", "/b"] == sorted(st)
            assert len(st) == 2 and "/a" in st and "/c" not in st

    def test_delete_and_missing_keys(self, path):
        with self.open(path, "w") as st:
            st["/a"] = A
            st["/b"] = B
            del st["/a"]
            assert sorted(st.keys()) == ["/b"] and "/a" not in st
            with pytest.raises(KeyError):
                st["/a"]
            with pytest.raises(KeyError):
                del st["/a"]
            assert st.get("/a") is None and st.get("/a", 5) == 5

    def test_items_and_values(self, path):
        with self.open(path, "w") as st:
            st["/a"] = A
            st["/b"] = B
            items = dict(st.items())
            assert sorted(items) == ["/a", "/b"]
            np.testing.assert_array_equal(items["/b"][:], B)
            assert len(list(st.values())) == 2

    def test_overwrite_a_key(self, path):
        with self.open(path, "w") as st:
            st["/a"] = A
            st["/a"] = B
            np.testing.assert_array_equal(st["/a"][:], B)
            assert list(st.keys()) == ["/a"]

    def test_reopened_for_reading(self, path):
        with self.open(path, "w") as st:
            st["/a"] = A
            st["/b"] = B
        with self.open(path, "r") as st:
            assert sorted(st.keys()) == ["/a", "/b"]
            np.testing.assert_array_equal(st["/a"][:], A)
            np.testing.assert_array_equal(st["/b"][:], B)
            with pytest.raises(NdpackError):
                st["/c"] = A
            with pytest.raises(NdpackError):
                del st["/a"]

    def test_appended_then_overwritten(self, path):
        with self.open(path, "w") as st:
            st["/a"] = A
        with self.open(path, "a") as st:
            st["/b"] = B
            assert sorted(st.keys()) == ["/a", "/b"]
        with self.open(path, "w") as st:
            assert len(st) == 0


class TestDictStoreDir(StoreTests):
    cls = ndpack.DictStore
    suffix = ".b2d"


class TestDictStoreZip(StoreTests):
    cls = ndpack.DictStore
    suffix = ".b2z"


class TestDictStoreEmbedded(StoreTests):
    """Every value in the embedded store (``threshold=None``)."""
    cls = ndpack.DictStore
    suffix = ".b2d"

    def open(self, path, mode):
        return self.cls(path, mode=mode, threshold=None)


class TestTreeStore(StoreTests):
    cls = ndpack.TreeStore
    suffix = ".b2z"


class TestEmbedStore(StoreTests):
    cls = ndpack.EmbedStore
    suffix = ".b2e"
