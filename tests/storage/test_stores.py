"""DictStore / TreeStore / EmbedStore: round trips, python-blosc2 interop both ways,
in-place reads of .b2z members, laziness, errors."""

import os
import zipfile

import numpy as np
import pytest

import ndpack
from ndpack.errors import FormatError, ParameterError

blosc2 = pytest.importorskip("blosc2")

RNG = np.random.default_rng(7)
A = RNG.random((40, 30))
B = np.arange(1000, dtype=np.int32)
C = np.linspace(0, 1, 50).astype(np.float32).reshape(5, 10)
S_BYTES = bytes(range(256)) * 4


def _fill(ts, schunk_cls):
    ts["/a"] = A
    ts["/g1/b"] = B
    ts["/g1/g2/c"] = C
    s = schunk_cls(chunksize=256, data=S_BYTES)      # 4 chunks of 256 bytes
    ts["/g1/s"] = s
    ts.vlmeta["author"] = "me"
    ts.vlmeta["n"] = [1, 2, 3]
    ts["/g1"].vlmeta["units"] = "m/s"
    ts["/g1/g2"].vlmeta["pi"] = 3.5


def _check(ts):
    assert sorted(ts.keys()) == ["/a", "/g1", "/g1/b", "/g1/g2", "/g1/g2/c", "/g1/s"]
    np.testing.assert_array_equal(ts["/a"][:], A)
    np.testing.assert_array_equal(ts["/g1/b"][:], B)
    np.testing.assert_array_equal(ts["/g1/g2/c"][:], C)
    assert bytes(ts["/g1/s"][:]) == S_BYTES
    assert ts.vlmeta[:] == {"author": "me", "n": [1, 2, 3]}
    assert ts["/g1"].vlmeta[:] == {"units": "m/s"}
    assert ts["/g1/g2"].vlmeta["pi"] == 3.5


PATHS = ["t.b2z", "t.b2d"]
THRESHOLDS = [0, 5000, None]


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_tree_round_trip(tmp_path, name, threshold):
    path = tmp_path / name
    with ndpack.TreeStore(path, mode="w", threshold=threshold) as ts:
        _fill(ts, ndpack.SChunk)
        _check(ts)                               # before closing, too
    with ndpack.TreeStore(path, mode="r") as ts:
        _check(ts)
        assert [w for w in ts.walk("/")] == [("/", ["g1"], ["a"]),
                                             ("/g1", ["g2"], ["b", "s"]),
                                             ("/g1/g2", [], ["c"])]
        assert ts.get_children("/") == ["/a", "/g1"]
        assert ts.get_descendants("/g1") == ["/g1/b", "/g1/g2", "/g1/g2/c", "/g1/s"]
        assert len(ts) == 6 and list(ts) == ts.keys()
        sub = ts["/g1"]
        assert sub.keys() == ["/b", "/g2", "/g2/c", "/s"]
        np.testing.assert_array_equal(sub["g2/c"][:], C)
        assert "/g2" in sub and "/a" not in sub
        assert list(sub.walk("/")) == [("/", ["g2"], ["b", "s"]), ("/g2", [], ["c"])]
    if threshold == 5000:                        # B (4000 bytes) and C are embedded
        with ndpack.DictStore(path, mode="r") as ds:
            assert {"/g1/b", "/g1/g2/c", "/g1/s", "/__vlmeta__"} <= set(ds.estore.keys())
            assert "/a" not in ds.estore


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize("threshold", [0, None])
def test_ndpack_store_opens_in_blosc2(tmp_path, name, threshold):
    path = str(tmp_path / name)
    with ndpack.TreeStore(path, mode="w", threshold=threshold) as ts:
        _fill(ts, ndpack.SChunk)
    with blosc2.TreeStore(path, mode="r") as ts:
        _check(ts)
    assert type(blosc2.open(path)).__name__ == "TreeStore"
    with ndpack.DictStore(str(tmp_path / ("d" + name)), mode="w", threshold=100) as ds:
        ds["/x"] = B
        ds["/dir/y"] = np.arange(3)
    with blosc2.DictStore(str(tmp_path / ("d" + name)), mode="r") as ds:
        assert sorted(ds.keys()) == ["/dir/y", "/x"]
        np.testing.assert_array_equal(ds["/x"][:], B)
        np.testing.assert_array_equal(ds["/dir/y"][:], np.arange(3))
    assert type(blosc2.open(str(tmp_path / ("d" + name)))).__name__ == "DictStore"


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize("threshold", [0, None])
def test_blosc2_store_opens_in_ndpack(tmp_path, name, threshold):
    path = str(tmp_path / name)
    with blosc2.TreeStore(path, mode="w", threshold=threshold) as ts:
        _fill(ts, blosc2.SChunk)
    with ndpack.TreeStore(path, mode="r") as ts:
        _check(ts)
        assert isinstance(ts["/a"], ndpack.NDArray)
    assert type(ndpack.storage.dispatch.open_store(path)).__name__ == "TreeStore"
    # and ndpack edits a python-blosc2 store that python-blosc2 then reads
    with ndpack.TreeStore(path, mode="a") as ts:
        ts["/g1/new"] = np.arange(7)
        del ts["/a"]
        ts.vlmeta["author"] = "you"
    with blosc2.TreeStore(path, mode="r") as ts:
        assert sorted(ts.keys()) == ["/g1", "/g1/b", "/g1/g2", "/g1/g2/c", "/g1/new",
                                     "/g1/s"]
        np.testing.assert_array_equal(ts["/g1/new"][:], np.arange(7))
        assert ts.vlmeta["author"] == "you"
        assert ts["/g1"].vlmeta[:] == {"units": "m/s"}


def test_blosc2_dictstore_threshold_and_cparams(tmp_path):
    path = str(tmp_path / "d.b2z")
    cp = {"codec": ndpack.Codec.LZ4, "clevel": 1}
    with ndpack.DictStore(path, mode="w", threshold=80, cparams=cp) as ds:
        ds["/a"] = np.arange(10)            # 80 bytes: not under the threshold
        ds["/b"] = np.arange(9)             # 72 bytes: embedded
        assert list(ds.estore.keys()) == ["/b"]
        assert ds["/a"].cparams.codec == ndpack.Codec.LZ4
    names = sorted(zipfile.ZipFile(path).namelist())
    assert names == ["a.b2nd", "embed.b2e"]
    with blosc2.DictStore(path, mode="r") as ds:
        assert ds["/a"].cparams.codec == blosc2.Codec.LZ4
        np.testing.assert_array_equal(ds["/b"][:], np.arange(9))


def test_b2z_members_are_opened_in_place(tmp_path):
    path = tmp_path / "t.b2z"
    with ndpack.TreeStore(path, mode="w") as ts:
        ts["/x/a"] = A
        ts["/x/b"] = A * 2
    before = sorted(os.listdir(tmp_path))
    ts = ndpack.TreeStore(path, mode="r")
    a = ts["/x/a"]
    np.testing.assert_array_equal(a[:], A)
    frame = a.schunk._frame
    off, nbytes = ts.member_window("/x/a")
    assert os.path.samefile(frame.path, path) and frame.base == off > 0
    assert frame.frame_len == nbytes
    with zipfile.ZipFile(path) as zf:            # the member is the frame, stored
        info = zf.getinfo("x/a.b2nd")
        assert info.compress_type == zipfile.ZIP_STORED
        assert zf.read("x/a.b2nd") == a.to_cframe()
    assert sorted(os.listdir(tmp_path)) == before    # nothing extracted, no temp files
    # the same holds in mode 'a': old members are read in place, read-only
    with ndpack.TreeStore(path, mode="a") as ts:
        b = ts["/x/b"]
        assert os.path.samefile(b.schunk._frame.path, path) and b.schunk._frame.base > 0
        with pytest.raises(ValueError, match="mode 'r'"):
            b[0, 0] = 1.0
        assert sorted(os.listdir(tmp_path)) == before


def test_lazy_expression_over_b2z_arrays(tmp_path):
    path = tmp_path / "e.b2z"
    x, y = RNG.random((200, 100)), RNG.random((200, 100))
    with ndpack.TreeStore(path, mode="w") as ts:
        ts["/in/x"] = ndpack.asarray(x, chunks=(50, 100), blocks=(10, 100))
        ts["/in/y"] = y
    with ndpack.TreeStore(path, mode="r") as ts:
        a, b = ts["/in/x"], ts["/in/y"]
        assert a.schunk._frame.base > 0
        expr = ndpack.lazyexpr("a * 2 + sin(b)", operands={"a": a, "b": b})
        np.testing.assert_allclose(expr.compute()[:], x * 2 + np.sin(y))
        np.testing.assert_allclose(ndpack.evaluate("a + b", local_dict={"a": a, "b": b}),
                                   x + y)
        np.testing.assert_allclose(float(ndpack.sum(a)), x.sum())


def test_opening_reads_no_array_data(tmp_path):
    for name in PATHS:
        path = tmp_path / name
        with ndpack.TreeStore(path, mode="w") as ts:
            ts["/good"] = A
            ts["/bad"] = B
        if name.endswith(".b2d"):                # cut the leaf file short
            f = path / "bad.b2nd"
            f.write_bytes(f.read_bytes()[:100])
        else:                                    # scribble over the member's frame
            with ndpack.DictStore(path, mode="r") as ds:
                off, _ = ds.member_window("/bad")
            with open(path, "r+b") as f:
                f.seek(off)
                f.write(b"\0" * 16)
        ts = ndpack.TreeStore(path, mode="r")
        assert ts.keys() == ["/bad", "/good"] and "/bad" in ts
        np.testing.assert_array_equal(ts["/good"][:], A)
        with pytest.raises(FormatError):
            ts["/bad"]


@pytest.mark.parametrize("name", PATHS)
def test_append_mode_edits(tmp_path, name):
    path = tmp_path / name
    with ndpack.DictStore(path, mode="w") as ds:
        ds["/a"] = A
        ds["/b"] = B
    entries = sorted(os.listdir(tmp_path))
    with ndpack.DictStore(path, mode="a") as ds:
        ds["/b"] = np.arange(5)                  # replace
        ds["/b"] = np.arange(6)                  # and again before closing
        ds["/c/d"] = C
        del ds["/a"]
        assert ds.keys() == ["/b", "/c/d"]
        np.testing.assert_array_equal(ds["/b"][:], np.arange(6))
    assert sorted(os.listdir(tmp_path)) == entries      # temp zip moved over, none left
    with blosc2.DictStore(str(path), mode="r") as ds:
        assert sorted(ds.keys()) == ["/b", "/c/d"]
        np.testing.assert_array_equal(ds["/b"][:], np.arange(6))
    if name.endswith(".b2z"):
        assert sorted(zipfile.ZipFile(path).namelist()) == ["b.b2nd", "c/d.b2nd",
                                                            "embed.b2e"]
    else:
        assert sorted(os.listdir(path)) == ["b.b2nd", "c", "embed.b2e"]
    # deleting the last leaf of a directory removes the directory
    with ndpack.DictStore(path, mode="a") as ds:
        del ds["/c/d"]
    if name.endswith(".b2d"):
        assert sorted(os.listdir(path)) == ["b.b2nd", "embed.b2e"]


def test_unmodified_append_leaves_b2z_untouched(tmp_path):
    path = tmp_path / "u.b2z"
    with ndpack.DictStore(path, mode="w") as ds:
        ds["/a"] = A
    stat = os.stat(path)
    with ndpack.DictStore(path, mode="a") as ds:
        assert ds["/a"].shape == A.shape
    assert os.stat(path).st_mtime_ns == stat.st_mtime_ns
    assert os.listdir(tmp_path) == ["u.b2z"]


def test_conversions(tmp_path):
    with ndpack.TreeStore(tmp_path / "s.b2d", mode="w", threshold=1000) as ts:
        _fill(ts, ndpack.SChunk)
        z = ts.to_b2z(filename=tmp_path / "s.b2z")
        with pytest.raises(FileExistsError):
            ts.to_b2z(filename=tmp_path / "s.b2z")
    with ndpack.TreeStore(z, mode="r") as ts:
        _check(ts)
        d = ts.to_b2d(tmp_path / "back.b2d")
    with blosc2.TreeStore(d, mode="r") as ts:
        _check(ts)
    with ndpack.TreeStore(tmp_path / "s.b2z", mode="a") as ts:
        ts["/new"] = np.arange(3)
        ts.to_b2z()                              # flush pending changes in place
        assert "/new" in ts
        np.testing.assert_array_equal(ts["/new"][:], np.arange(3))
    with blosc2.TreeStore(str(tmp_path / "s.b2z"), mode="r") as ts:
        assert "/new" in ts


def test_subtree_views_write_through(tmp_path):
    path = tmp_path / "v.b2z"
    with ndpack.TreeStore(path, mode="w") as ts:
        ts["/g/a"] = np.arange(3)
        sub = ts["/g"]
        sub["/h/b"] = np.arange(4)               # relative key
        sub["c"] = np.arange(2)
        sub.vlmeta["k"] = 1
        del sub["/a"]
        assert sub.keys() == ["/c", "/h", "/h/b"]
        assert ts.get_subtree("/g/h").keys() == ["/b"]
    with ndpack.TreeStore(path, mode="r") as ts:
        assert ts.keys() == ["/g", "/g/c", "/g/h", "/g/h/b"]
        assert ts["/g"].vlmeta[:] == {"k": 1} and ts.vlmeta[:] == {}
        del_sub = ts["/g"]
        with pytest.raises(ValueError, match="mode 'r'"):
            del del_sub["/c"]


def test_group_deletion_and_structure_errors(tmp_path):
    ts = ndpack.TreeStore(tmp_path / "s.b2d", mode="w")
    ts["/a/b/c"] = np.arange(2)
    ts["/a/d"] = np.arange(2)
    ts["/a/b"].vlmeta["x"] = 1
    with pytest.raises(ValueError, match="group"):
        ts["/a/b"] = np.arange(2)
    with pytest.raises(ValueError, match="holds a value"):
        ts["/a/d/e"] = np.arange(2)
    del ts["/a/b"]                               # a group and its vlmeta
    assert ts.keys() == ["/a", "/a/d"]
    ts.close()                                   # a new store is in place once closed
    assert sorted(os.listdir(tmp_path / "s.b2d" / "a")) == ["d.b2nd"]


@pytest.mark.parametrize("bad", ["/a//b", "/a/", "/..", "/x/../y", "/.", "", "/"])
def test_invalid_keys(tmp_path, bad):
    ds = ndpack.DictStore(tmp_path / "k.b2d", mode="w")
    with pytest.raises(ValueError):
        ds[bad] = np.arange(2)
    ts = ndpack.TreeStore(tmp_path / "t.b2d", mode="w")
    with pytest.raises(ValueError):
        ts[bad] = np.arange(2)
    with pytest.raises(ValueError, match="reserved"):
        ts["/g/__vlmeta__"] = np.arange(2)
    assert ds.keys() == [] and ts.keys() == []
    with pytest.raises(ValueError, match="start with"):
        ds["noslash"] = np.arange(2)
    with pytest.raises(TypeError):
        ds[3] = np.arange(2)


@pytest.mark.parametrize("name", PATHS)
def test_read_only_and_missing(tmp_path, name):
    path = tmp_path / name
    with pytest.raises(FileNotFoundError):
        ndpack.TreeStore(path, mode="r")
    with ndpack.TreeStore(path, mode="w") as ts:
        ts["/a"] = np.arange(3)
    ts = ndpack.TreeStore(path, mode="r")
    for op in (lambda: ts.__setitem__("/b", np.arange(2)), lambda: ts.__delitem__("/a"),
               lambda: ts.vlmeta.__setitem__("k", 1)):
        with pytest.raises(ParameterError, match="mode 'r'"):
            op()
    with pytest.raises(KeyError, match="/nope"):
        ts["/nope"]
    with pytest.raises(KeyError, match="/nope"):
        ts.get_children("/nope")
    assert ts.get("/nope", 5) == 5
    ts.close()
    with pytest.raises(ParameterError, match="closed"):
        ts["/a"]
    with pytest.raises(ParameterError):
        ndpack.DictStore(path, mode="x")
    with pytest.raises(TypeError, match="str"):
        ndpack.DictStore(tmp_path / "o.b2d", mode="w")["/s"] = "a string"


def test_bad_b2z_files(tmp_path):
    path = tmp_path / "t.b2z"
    with ndpack.TreeStore(path, mode="w") as ts:
        ts["/a"] = A
    data = path.read_bytes()
    cut = tmp_path / "cut.b2z"
    cut.write_bytes(data[:len(data) // 2])
    with pytest.raises(FormatError, match="truncated"):
        ndpack.TreeStore(cut, mode="r")
    junk = tmp_path / "junk.b2z"
    junk.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(FormatError):
        ndpack.DictStore(junk, mode="r")
    deflated = tmp_path / "deflated.b2z"
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.b2nd", ndpack.asarray(A).to_cframe())
    with pytest.raises(FormatError, match="compressed"):
        ndpack.DictStore(deflated, mode="r")
    notstore = tmp_path / "plain"
    notstore.mkdir()
    (notstore / "keep.txt").write_text("precious")
    with pytest.raises(ParameterError, match="not a store"):
        ndpack.DictStore(notstore, mode="w")
    assert (notstore / "keep.txt").read_text() == "precious"


def test_embed_store_file_and_interop(tmp_path):
    path = str(tmp_path / "e.b2e")
    with ndpack.EmbedStore(path, mode="w") as es:
        es["/a"] = np.arange(5)
        es["/b"] = ndpack.ones((2, 3))
        s = ndpack.SChunk(chunksize=16)
        s.append_data(b"x" * 40)
        es["/s"] = s
        del es["/b"]
    es = blosc2.EmbedStore(path, mode="r")
    assert sorted(es.keys()) == ["/a", "/s"]
    np.testing.assert_array_equal(es["/a"][:], np.arange(5))
    bes = blosc2.EmbedStore(str(tmp_path / "f.b2e"), mode="w")
    bes["/z"] = np.arange(4.0)
    del bes
    es = ndpack.EmbedStore(str(tmp_path / "f.b2e"), mode="r")
    assert es.kind == "b2embed" and es["/z"][:].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(KeyError, match="/nope"):
        es["/nope"]


def test_values_and_items_types(tmp_path):
    with ndpack.TreeStore(tmp_path / "t.b2z", mode="w", threshold=50) as ts:
        ts["/a"] = np.float64(3.5)                 # 0-d, embedded
        ts["/g/b"] = ndpack.arange(100)
        kinds = {k: type(v).__name__ for k, v in ts.items()}
    assert kinds == {"/a": "NDArray", "/g": "TreeStore", "/g/b": "NDArray"}
    with ndpack.TreeStore(tmp_path / "t.b2z", mode="r") as ts:
        assert float(ts["/a"][()]) == 3.5


@pytest.mark.parametrize("name", PATHS)
def test_mmap_mode_and_open_store(tmp_path, name):
    from ndpack.storage.dispatch import open_store
    path = tmp_path / name
    with ndpack.DictStore(path, mode="w") as ds:
        ds["/a"] = A
    with pytest.raises(ParameterError, match="mmap_mode"):
        ndpack.DictStore(path, mode="a", mmap_mode="r")
    with ndpack.DictStore(path, mode="r", mmap_mode="r") as ds:
        a = ds["/a"]
        assert a.schunk._frame.reader.mm is not None          # read through the map
        np.testing.assert_array_equal(a[3:7, ::2], A[3:7, ::2])
    store = open_store(path)
    assert type(store) is ndpack.DictStore and store.mode == "r"
    es_path = tmp_path / "e.b2e"
    with ndpack.EmbedStore(es_path, mode="w") as es:
        es["/x"] = np.arange(3)
    assert type(open_store(es_path)) is ndpack.EmbedStore


def test_many_replacements_keep_b2z_clean(tmp_path):
    path = tmp_path / "r.b2z"
    with ndpack.TreeStore(path, mode="w", threshold=100) as ts:
        for i in range(5):
            ts["/g/x"] = np.full(50, i)            # external (400 bytes)
            ts["/g/small"] = np.full(3, i)         # embedded
            ts["/g"].vlmeta["i"] = i
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert sorted(names) == ["embed.b2e", "g/x.b2nd"] and zf.testzip() is None
    with blosc2.TreeStore(str(path), mode="r") as ts:
        assert ts["/g/x"][:].tolist() == [4] * 50 and ts["/g/small"][:].tolist() == [4] * 3
        assert ts["/g"].vlmeta["i"] == 4


def test_hostile_member_names_and_maps(tmp_path):
    evil = tmp_path / "evil.b2z"
    frame = ndpack.asarray(np.arange(3)).to_cframe()
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../escape.b2nd", frame)
    with pytest.raises(FormatError, match="safe relative path"):
        ndpack.DictStore(evil, mode="r")
    es = ndpack.EmbedStore()
    es.schunk.vlmeta["estore_metadata"] = {"embed_map": {"/a": {"offset": "x"}},
                                           "current_offset": 0}
    with pytest.raises(FormatError, match="bad key map"):
        ndpack.storage.embedstore.estore_from_cframe(es.to_cframe())
    es.schunk.vlmeta["estore_metadata"] = {"embed_map": {"/a": {"offset": 0, "length": 99}},
                                           "current_offset": 0}
    with pytest.raises(FormatError, match="outside"):
        ndpack.storage.embedstore.estore_from_cframe(es.to_cframe())["/a"]


@pytest.mark.parametrize("name", PATHS)
def test_file_backed_values_are_copied_as_frames(tmp_path, name):
    src = ndpack.asarray(A, urlpath=tmp_path / "src.b2nd", mode="w", chunks=(10, 30))
    src.vlmeta["note"] = "from disk"
    src[0, 0] = -1.0
    expected = src[:]
    path = tmp_path / name
    with ndpack.TreeStore(path, mode="w") as ts:
        ts["/a"] = src
        ts["/b"] = ndpack.open(tmp_path / "src.b2nd", mode="r")
        ts["/a"] = ts["/a"]                      # a value read back from the store itself
        ts.attrs["k"] = "v"
    for lib in (ndpack, blosc2):
        with lib.TreeStore(str(path), mode="r") as ts:
            for k in ("/a", "/b"):
                arr = ts[k]              # python-blosc2's vlmeta needs its array alive
                np.testing.assert_array_equal(arr[:], expected)
                assert arr.vlmeta["note"] == "from disk" and arr.chunks == (10, 30)
            assert ts.vlmeta["k"] == "v"


def test_unclosed_store_is_written_when_collected(tmp_path):
    import gc
    ts = ndpack.TreeStore(tmp_path / "gc.b2z", mode="w")
    ts["/a"] = np.arange(3)
    del ts
    gc.collect()
    with ndpack.TreeStore(tmp_path / "gc.b2z", mode="r") as ts:
        assert ts["/a"][:].tolist() == [0, 1, 2]
    assert os.listdir(tmp_path) == ["gc.b2z"]


def test_embed_member_that_is_not_an_embedded_store(tmp_path):
    path = tmp_path / "odd.b2z"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("embed.b2e", ndpack.asarray(np.arange(3)).to_cframe())
    with pytest.raises(FormatError, match="not a super-chunk"):
        ndpack.DictStore(path, mode="r")
    with zipfile.ZipFile(path, "w") as zf:       # the frame runs past its member
        frame = ndpack.asarray(np.arange(300)).to_cframe()
        zf.writestr("a.b2nd", frame[:-40])
        zf.writestr("b.b2nd", frame)
    with ndpack.DictStore(path, mode="r") as ds:
        assert ds["/b"][:].tolist() == list(range(300))
        with pytest.raises(FormatError):
            ds["/a"]


@pytest.mark.parametrize("name", PATHS)
def test_append_mode_creates_a_missing_store(tmp_path, name):
    ndpack.TreeStore(tmp_path / name, mode="a").close()
    with ndpack.TreeStore(tmp_path / name, mode="r") as ts:
        assert ts.keys() == []
    with blosc2.TreeStore(str(tmp_path / name), mode="r") as ts:
        assert list(ts.keys()) == []
