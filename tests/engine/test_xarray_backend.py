"""xarray's ``engine="ndpack"``: round trips against the Dataset in memory (the oracle),
lazy opens and reads (a read spy), duck-array computations in ndpack's engine,
encodings (against xarray's own zarr engine), DataTrees, appends and bad input."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ndpack
from ndpack.errors import FormatError, ParameterError

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")

from ndpack.engine.backends import xarray_backend  # noqa: E402  (needs xarray)


def sample(nt=12, ny=5, nx=7, seed=0):
    rng = np.random.default_rng(seed)
    return xr.Dataset(
        {"temp": (("time", "lat", "lon"), rng.normal(280, 5, (nt, ny, nx)).astype("f4"),
                  {"units": "K", "long_name": "air temperature"}),
         "prec": (("time", "lat", "lon"), rng.random((nt, ny, nx))),
         "mask": (("lat", "lon"), rng.random((ny, nx)) > 0.3)},
        coords={"time": pd.date_range("2001-01-01", periods=nt, freq="D"),
                "lat": np.linspace(-60, 60, ny), "lon": np.arange(nx) * 10.0,
                "station": ("lon", np.array([f"s{i}" for i in range(nx)]))},
        attrs={"title": "sample", "version": 3})


@pytest.fixture(params=["b2z", "b2d"])
def saved(request, tmp_path):
    ds = sample()
    path = str(tmp_path / f"s.{request.param}")
    ndpack.save_dataset(ds, path, encoding={"temp": {"chunks": (4, 5, 7)}})
    return ds, path


def test_the_engine_is_registered():
    assert "ndpack" in xr.backends.list_engines()
    entry = xr.backends.list_engines()["ndpack"]
    assert entry.guess_can_open("a.b2nd") and entry.guess_can_open("a.b2z")
    assert entry.guess_can_open("a.b2d/") and not entry.guess_can_open("a.nc")
    assert not entry.guess_can_open(42)


def test_round_trip_is_identical(saved):
    ds, path = saved
    back = xr.open_dataset(path, engine="ndpack")
    xr.testing.assert_identical(back, ds)
    assert back.temp.encoding["preferred_chunks"] == {"time": 4, "lat": 5, "lon": 7}
    assert back.temp.dtype == np.float32 and back.mask.dtype == bool
    back.close()


def test_engine_is_guessed_from_the_suffix(saved):
    ds, path = saved
    xr.testing.assert_identical(xr.open_dataset(path), ds)


def test_python_blosc2_opens_every_member(saved):
    blosc2 = pytest.importorskip("blosc2")
    ds, path = saved
    store = blosc2.TreeStore(path, mode="r")
    for name in ds.variables:
        arr = store["/" + name]
        assert isinstance(arr, blosc2.NDArray), name
        assert list(arr.vlmeta["_ARRAY_DIMENSIONS"]) == list(ds[name].dims)
    temp = store["/temp"]       # (python-blosc2's vlmeta needs its array alive)
    assert temp.vlmeta["units"] == "K"
    assert store.vlmeta["title"] == "sample"
    np.testing.assert_array_equal(store["/prec"][:], ds.prec.values)


def _dataset(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    dims = tuple(f"d{i}" for i in range(ndim))
    dtype = draw(st.sampled_from(["f4", "f8", "i2", "i8", "u1", "bool", "c16"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    data = (rng.normal(size=shape) * 100).astype(dtype)
    if dtype in ("f4", "f8") and draw(st.booleans()):
        data.flat[::3] = np.nan
    attrs = draw(st.dictionaries(st.sampled_from(["units", "note", "scale", "n", "flags"]),
                                 st.one_of(st.text(max_size=5), st.integers(-9, 9),
                                           st.floats(allow_nan=False),
                                           st.lists(st.integers(0, 5), max_size=3)),
                                 max_size=3))
    coords = {}
    if draw(st.booleans()):
        coords[dims[0]] = np.arange(shape[0]) * 2.5
    if draw(st.booleans()):
        coords["label"] = (dims[-1], np.array([f"x{i}" for i in range(shape[-1])]))
    if draw(st.booleans()):
        coords["when"] = (dims[0], pd.date_range("1999-12-30", periods=shape[0], freq="h"))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    return xr.Dataset({"v": (dims, data, attrs)}, coords=coords,
                      attrs={"k": draw(st.integers(-2**63, 2**63 - 1))}), chunks


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.data())
def test_round_trips_of_generated_datasets(tmp_path, data):
    ds, chunks = _dataset(data.draw)
    path = str(tmp_path / "g.b2z")
    ndpack.save_dataset(ds, path, encoding={"v": {"chunks": chunks}})
    back = xr.open_dataset(path, engine="ndpack")
    xr.testing.assert_identical(back, ds)
    assert tuple(back.v.encoding["chunks"]) == chunks
    # lazy indexing against the same Dataset in memory: basic, outer, vectorized
    key = {d: slice(None, None, 2) for d in ds.v.dims[:1]}
    xr.testing.assert_identical(back.isel(key), ds.isel(key))
    outer = {d: [n - 1, 0] for d, n in ds.v.sizes.items()}
    xr.testing.assert_identical(back.v.isel(outer), ds.v.isel(outer))
    points = {d: xr.DataArray([0, n - 1, 0], dims="p") for d, n in ds.v.sizes.items()}
    xr.testing.assert_identical(back.v.isel(points), ds.v.isel(points))
    back.close()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.data())
def test_round_trips_of_xarrays_own_variables(tmp_path, data):
    import hypothesis.extra.numpy as npst
    try:
        import xarray.testing.strategies as xrst
    except ImportError:
        pytest.skip("xarray.testing.strategies")
    dtypes = npst.floating_dtypes(endianness="=") | npst.integer_dtypes(endianness="=")
    var = data.draw(xrst.variables(dtype=dtypes, attrs=st.just({}),
                                   dims=xrst.dimension_names(min_dims=1, max_dims=3)))
    ds = xr.Dataset({"v": var})
    path = str(tmp_path / "x.b2d")
    ndpack.save_dataset(ds, path)
    back = xr.open_dataset(path, engine="ndpack")
    xr.testing.assert_identical(back, ds)
    back.close()


class ReadSpy:
    """Records NDArray reads (keys and result sizes) and whole conversions."""

    def __init__(self, monkeypatch):
        self.reads, self.whole = [], 0
        getitem, array = ndpack.NDArray.__getitem__, ndpack.NDArray.__array__

        def spy_getitem(arr, key):
            out = getitem(arr, key)
            self.reads.append((arr.shape, key, np.size(out)))
            return out

        def spy_array(arr, *args, **kwargs):
            self.whole += 1
            return array(arr, *args, **kwargs)
        monkeypatch.setattr(ndpack.NDArray, "__getitem__", spy_getitem)
        monkeypatch.setattr(ndpack.NDArray, "__array__", spy_array)

    def data_reads(self, shape):
        return [r for r in self.reads if r[0] == shape]


def test_open_reads_metadata_only_and_a_slice_its_selection(saved, monkeypatch):
    ds, path = saved
    spy = ReadSpy(monkeypatch)
    back = xr.open_dataset(path, engine="ndpack")
    shape = ds.temp.shape
    assert spy.data_reads(shape) == [] and spy.whole <= len(ds.indexes)   # indexes only
    before = spy.whole
    got = back.temp[3:9, ::2].values
    np.testing.assert_array_equal(got, ds.temp.values[3:9, ::2])
    reads = spy.data_reads(shape)
    assert len(reads) == 1 and reads[0][2] == got.size       # only the selection
    assert spy.whole == before
    back.close()


def test_decoded_variables_open_without_computing(tmp_path, monkeypatch):
    """Booleans, fill values and scale/offset are decoded by lazy expressions: opening
    (and taking ``.data``) computes nothing."""
    ds = sample()
    path = str(tmp_path / "enc.b2z")
    ndpack.save_dataset(ds, path, encoding={
        "temp": {"_FillValue": np.float32(-999)},
        "prec": {"dtype": "int16", "scale_factor": 1e-4, "add_offset": 0.5, "_FillValue": -1}})

    def boom(*args, **kwargs):
        raise AssertionError("computed at open")
    monkeypatch.setattr(ndpack.LazyExpr, "compute", boom)
    monkeypatch.setattr(ndpack.LazyExpr, "__getitem__", boom)
    back = xr.open_dataset(path, engine="ndpack")
    for name in ("temp", "prec", "mask"):
        assert isinstance(back[name].data, ndpack.LazyExpr), name
        assert back[name].dtype == ds[name].dtype, name
    monkeypatch.undo()
    np.testing.assert_allclose(back.prec.values, ds.prec.values, atol=1e-4)
    xr.testing.assert_identical(back.mask, ds.mask)
    xr.testing.assert_identical(back.temp, ds.temp)


def test_chunks_follow_the_stored_chunks(saved):
    da = pytest.importorskip("dask.array")
    ds, path = saved
    back = xr.open_dataset(path, engine="ndpack", chunks={})
    assert isinstance(back.temp.data, da.Array)
    assert back.temp.data.chunksize == (4, 5, 7)
    xr.testing.assert_identical(back.compute(), ds)
    np.testing.assert_allclose(back.temp.mean("time").values, ds.temp.mean("time").values,
                               rtol=1e-6)


def test_duck_arrays_compute_in_ndpacks_engine(saved, monkeypatch):
    ds, path = saved
    back = xr.open_dataset(path, engine="ndpack")
    spy = ReadSpy(monkeypatch)
    assert isinstance(back.temp.data, ndpack.NDArray)
    expr = back.temp * 2 + back.prec
    assert isinstance(expr.data, ndpack.LazyExpr) and spy.reads == []   # nothing read yet
    checks = [
        (expr.mean("time"), (ds.temp * 2 + ds.prec).mean("time")),
        (back.temp.where(back.mask).sum(), ds.temp.where(ds.mask).sum()),
        (back.prec.std("lat"), ds.prec.std("lat")),
        (back.prec.sum(("lat", "lon")), ds.prec.sum(("lat", "lon"))),
        (back.temp.max("lon"), ds.temp.max("lon")),
        (back.sel(lat=0.0, method="nearest").temp, ds.sel(lat=0.0, method="nearest").temp),
        (back.isel(time=slice(2, 8)).prec.mean("time"), ds.isel(time=slice(2, 8)).prec.mean("time")),
        (back.prec.groupby("time.dayofweek").mean(), ds.prec.groupby("time.dayofweek").mean()),
        (back.temp - back.temp.mean("time"), ds.temp - ds.temp.mean("time")),
    ]
    for got, want in checks:
        xr.testing.assert_allclose(got.compute(), want, rtol=1e-5, atol=1e-3)
    assert spy.whole == 0                   # never converted whole: the engine streamed


@pytest.mark.parametrize("nan", [False, True])
def test_nan_skipping_means_take_the_fused_mean_only_without_nans(tmp_path, monkeypatch, nan):
    x = np.random.default_rng(3).random((6, 4, 5)).astype("f4")
    if nan:
        x[2, 1, 3] = np.nan
    ds = xr.Dataset({"v": (("t", "a", "b"), x)})
    ndpack.save_dataset(ds, str(tmp_path / "nm.b2z"))
    back = xr.open_dataset(str(tmp_path / "nm.b2z"), engine="ndpack")
    fast = []
    real = xarray_backend.nan_mean_fast

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        fast.append(out is not None)
        return out
    monkeypatch.setattr(xarray_backend, "nan_mean_fast", spy)
    for axis in (None, "t", ("a", "b")):
        got, want = back.v.mean(axis).values, ds.v.mean(axis).values
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert fast == [not nan] * 3          # a NaN anywhere shows in the fused result


def test_a_duck_array_result_streams_into_a_new_store(saved, tmp_path):
    ds, path = saved
    back = xr.open_dataset(path, engine="ndpack")
    anomaly = (back.temp - back.temp.mean("time")).to_dataset(name="anomaly")
    assert isinstance(anomaly.anomaly.data, ndpack.LazyExpr)
    out = str(tmp_path / "anomaly.b2z")
    anomaly.ndpack.save(out)
    got = xr.open_dataset(out, engine="ndpack")
    want = (ds.temp - ds.temp.mean("time")).to_dataset(name="anomaly")
    xr.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    assert got.anomaly.attrs == want.anomaly.attrs


def test_as_numpy_and_compute_give_numpy(saved):
    ds, path = saved
    back = xr.open_dataset(path, engine="ndpack")
    assert isinstance(back.as_numpy().temp.data, np.ndarray)
    assert isinstance((back.temp * 2).as_numpy().data, np.ndarray)
    assert isinstance(back.temp.to_numpy(), np.ndarray)


def test_vectorized_indexing_after_a_computation_with_cache_false(saved):
    """xarray caches the duck array of a variable once computed with; its array-API
    adapter has no vectorized indexing (docs/xarray.md): cache=False keeps ours."""
    ds, path = saved
    back = xr.open_dataset(path, engine="ndpack", cache=False)
    float(back.temp.mean())
    points = {"time": xr.DataArray([0, 5, 11], dims="p"), "lon": xr.DataArray([6, 0, 3], dims="p")}
    xr.testing.assert_identical(back.temp.isel(points), ds.temp.isel(points))


def test_single_array_files(tmp_path):
    x = np.arange(24.0).reshape(4, 6)
    path = str(tmp_path / "plain.b2nd")
    ndpack.asarray(x, urlpath=path, mode="w")          # no label convention
    ds = xr.open_dataset(path, engine="ndpack")
    assert list(ds.data_vars) == ["plain"] and ds.plain.dims == ("dim_0", "dim_1")
    np.testing.assert_array_equal(ds.plain.values, x)
    a = ndpack.asarray(x, urlpath=str(tmp_path / "lab.b2nd"), mode="w")
    a.vlmeta["_ARRAY_DIMENSIONS"] = ["y", "x"]
    a.vlmeta["units"] = "m"
    ds = xr.open_dataset(str(tmp_path / "lab.b2nd"))
    assert ds.lab.dims == ("y", "x") and ds.lab.attrs == {"units": "m"}
    with pytest.raises(ParameterError, match="single array"):
        xr.open_dataset(path, engine="ndpack", group="g")


@pytest.fixture
def zarr_oracle(tmp_path):
    pytest.importorskip("zarr")

    def both(ds, encoding):
        ours, theirs = str(tmp_path / "e.b2z"), str(tmp_path / "e.zarr")
        ndpack.save_dataset(ds, ours, encoding=encoding)
        ds.to_zarr(theirs, encoding=encoding, zarr_format=3, consolidated=False)
        return (xr.open_dataset(ours, engine="ndpack"),
                xr.open_dataset(theirs, engine="zarr", consolidated=False))
    return both


def test_fill_values_and_scale_offset_decode_as_xarray_does(zarr_oracle):
    rng = np.random.default_rng(1)
    t = rng.normal(280, 10, (6, 8)).astype("f4")
    t[1, 2] = t[4, 4] = np.nan
    counts = rng.integers(0, 50, (6, 8)).astype("i4")
    ds = xr.Dataset({"t": (("y", "x"), t), "packed": (("y", "x"), t.astype("f8")),
                     "counts": (("y", "x"), counts)})
    enc = {"t": {"_FillValue": np.float32(-999.0)},
           "packed": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0,
                      "_FillValue": np.int16(-32768)},
           "counts": {"_FillValue": np.int32(7)}}
    ours, theirs = zarr_oracle(ds, enc)
    for name in ds.data_vars:
        assert ours[name].dtype == theirs[name].dtype, name
        np.testing.assert_array_equal(ours[name].values, theirs[name].values)
        assert ours[name].attrs == theirs[name].attrs
        assert isinstance(ours[name].data, ndpack.LazyExpr), name   # decoded lazily
        for key in ("_FillValue", "scale_factor", "add_offset"):
            a, b = ours[name].encoding.get(key), theirs[name].encoding.get(key)
            assert (a is None) == (b is None) and (a is None or np.array_equal(
                a, b, equal_nan=True)), (name, key)


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(["i1", "i2", "i4", "u1", "u2", "f4", "f8"]),
       scale=st.one_of(st.none(), st.sampled_from([0.5, 0.01, 3.0]),
                       st.sampled_from([np.float32(0.1), np.float64(0.25)])),
       offset=st.one_of(st.none(), st.sampled_from([1.5, -10.0, np.float32(2.0)])),
       fill=st.booleans(), seed=st.integers(0, 1000))
def test_lazy_decoding_matches_xarrays_decoder(dtype, scale, offset, fill, seed):
    """ndpack's lazy mask/scale gives xarray's CF decoder's dtype and bits."""
    from xarray import conventions
    rng = np.random.default_rng(seed)
    raw = (rng.integers(0, 100, (5, 9)) if dtype[0] in "iu" else
           rng.normal(size=(5, 9)) * 50).astype(dtype)
    attrs = {}
    if fill:
        attrs["_FillValue"] = raw.dtype.type(raw.flat[3])
    if scale is not None:
        attrs["scale_factor"] = scale
    if offset is not None:
        attrs["add_offset"] = offset
    if not attrs:
        return
    want = conventions.decode_cf_variable("v", xr.Variable(("y", "x"), raw, dict(attrs)))
    data, got_attrs, enc = xarray_backend.lazy_mask_and_scale(
        ndpack.asarray(raw, chunks=(2, 4)), "v", ("y", "x"), dict(attrs))
    got = np.asarray(data[()])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want.values)
    assert got_attrs == want.attrs


def test_times_strings_and_cftime_like_calendars(tmp_path):
    ds = xr.Dataset({"v": ("time", np.arange(4.0))},
                    coords={"time": pd.date_range("1850-01-01", periods=4, freq="MS"),
                            "lead": ("time", pd.to_timedelta([0, 1, 2, 3], unit="D")),
                            "name": ("time", np.array(["a", "bb", "ccc", ""], dtype=object))})
    path = str(tmp_path / "t.b2z")
    ndpack.save_dataset(ds, path, encoding={"time": {"units": "days since 1850-01-01",
                                                     "calendar": "standard"}})
    back = xr.open_dataset(path, engine="ndpack")
    xr.testing.assert_identical(back, ds)
    raw = ndpack.TreeStore(path, mode="r")["/time"]
    assert raw.dtype.kind in "iu" and raw.vlmeta["units"] == "days since 1850-01-01"
    cftime = pytest.importorskip("cftime")
    times = xr.date_range("2000-01-01", periods=4, freq="D", calendar="noleap", use_cftime=True)
    nl = xr.Dataset({"v": ("time", np.arange(4.0))}, coords={"time": times})
    ndpack.save_dataset(nl, str(tmp_path / "nl.b2z"))
    coder = xr.coders.CFDatetimeCoder(use_cftime=True)
    back = xr.open_dataset(str(tmp_path / "nl.b2z"), engine="ndpack", decode_times=coder)
    assert isinstance(back.time.values[0], cftime.datetime)
    xr.testing.assert_identical(back, nl)


def test_append_along_a_dimension(tmp_path):
    ds = sample(nt=10)
    for suffix in ("b2d", "b2z"):
        path = str(tmp_path / f"a.{suffix}")
        ndpack.save_dataset(ds.isel(time=slice(0, 4)), path, encoding={"temp": {"chunks": (3, 5, 7)}})
        ds.isel(time=slice(4, 7)).ndpack.save(path, mode="a", append_dim="time")
        ndpack.save_dataset(ds.isel(time=slice(7, 10)), path, mode="a", append_dim="time")
        back = xr.open_dataset(path, engine="ndpack")
        xr.testing.assert_identical(back, ds)
        assert back.temp.encoding["chunks"] == (3, 5, 7)
        back.close()


def test_mode_a_adds_and_replaces_variables(tmp_path):
    path = str(tmp_path / "m.b2d")
    ds = sample()
    ndpack.save_dataset(ds[["temp"]], path)
    ndpack.save_dataset(ds[["prec"]], path, mode="a")
    back = xr.open_dataset(path, engine="ndpack")
    xr.testing.assert_identical(back, xr.merge([ds[["temp"]], ds[["prec"]]],
                                               combine_attrs="override"))


def test_datatree_round_trip(tmp_path):
    ds = sample()
    tree = xr.DataTree.from_dict({"/": xr.Dataset(attrs={"root": 1}),
                                  "/obs": ds[["temp"]],
                                  "/obs/raw": xr.Dataset({"counts": ("n", np.arange(5))}),
                                  "/model": ds[["prec"]].assign_attrs(run="r1"),
                                  "/empty": xr.Dataset()})
    path = str(tmp_path / "tree.b2z")
    tree.ndpack.save(path)
    back = xr.open_datatree(path, engine="ndpack")
    xr.testing.assert_identical(back, tree)
    groups = xr.open_groups(path, engine="ndpack")
    assert sorted(groups) == ["/", "/empty", "/model", "/obs", "/obs/raw"]
    xr.testing.assert_identical(xr.open_dataset(path, engine="ndpack", group="obs/raw"),
                                tree["/obs/raw"].to_dataset(inherit=False))
    with pytest.raises(ParameterError, match="not a group"):
        xr.open_dataset(path, engine="ndpack", group="nowhere")


def test_datatree_of_a_python_blosc2_treestore(tmp_path):
    """The TreeStore example of python-blosc2's documentation, opened as a DataTree."""
    blosc2 = pytest.importorskip("blosc2")
    path = str(tmp_path / "b2.b2z")
    with blosc2.TreeStore(path, mode="w") as ts:
        ts["/child0/data"] = np.array([1, 2, 3])
        ts["/child0/child1/data"] = blosc2.ones(10)
        ts["/child0/child2"] = blosc2.arange(5)
        ts["/other"] = np.array([[1.5, 2.5]])
        ts["/child0"].vlmeta["description"] = "the first child"
    tree = xr.open_datatree(path, engine="ndpack")
    assert tree["/child0"].attrs == {"description": "the first child"}
    np.testing.assert_array_equal(tree["/child0/child1/data"].values, np.ones(10))
    np.testing.assert_array_equal(tree["/child0/data"].values, [1, 2, 3])
    # no label convention: in a tree each array gets its own dimensions, by path
    assert tree["/child0"]["child2"].dims == ("child0_child2_dim_0",)
    assert tree["/child0/child1"]["data"].dims == ("child0_child1_data_dim_0",)
    assert tree["/other"].dims == ("other_dim_0", "other_dim_1")
    ds = xr.open_dataset(path, engine="ndpack", group="child0")      # sizes 3 and 5
    assert ds["data"].dims == ("data_dim_0",) and ds["child2"].dims == ("child2_dim_0",)


def test_bad_input_is_named(tmp_path):
    path = str(tmp_path / "bad.b2d")
    with ndpack.TreeStore(path, mode="w") as ts:
        ts["/ok"] = np.arange(3.0)
        ts["/wrong"] = np.zeros((2, 3))
        ts["/wrong"].vlmeta["_ARRAY_DIMENSIONS"] = ["x"]
    with pytest.raises(FormatError, match="variable 'wrong'.*names 1 dimensions"):
        xr.open_dataset(path, engine="ndpack")
    with ndpack.TreeStore(path, mode="a") as ts:
        arr = ndpack.asarray(np.zeros((2, 3)))
        arr.vlmeta["_ARRAY_DIMENSIONS"] = ["x", "x"]
        ts["/wrong"] = arr
    with pytest.raises(FormatError, match="variable 'wrong'.*repeats"):
        xr.open_dataset(path, engine="ndpack")
    with ndpack.TreeStore(path, mode="a") as ts:
        del ts["/wrong"]
        arr = ndpack.asarray(np.zeros(3))
        arr.vlmeta["_ARRAY_DIMENSIONS"] = ["dim_0"]
        ts["/other"] = arr                    # the same dimension: consistent sizes
    ds = xr.open_dataset(path, engine="ndpack")
    assert ds.ok.dims == ("dim_0",) and ds.other.dims == ("dim_0",)
    with open(os.path.join(path, "other.b2nd"), "r+b") as f:   # an unreadable member
        f.write(b"\0" * 64)
    with pytest.raises(FormatError, match="'other'"):
        xr.open_dataset(path, engine="ndpack")
    with pytest.raises(FileNotFoundError):
        xr.open_dataset(str(tmp_path / "missing.b2z"), engine="ndpack")


def test_bad_input_when_saving(tmp_path):
    ds = sample()
    with pytest.raises(ParameterError, match="'.b2z'"):
        ndpack.save_dataset(ds, str(tmp_path / "x.nc"))
    with pytest.raises(ParameterError, match="variable name 3"):
        ndpack.save_dataset(xr.Dataset({3: ("x", [1, 2])}), str(tmp_path / "a.b2z"))
    with pytest.raises(ParameterError, match="'a/b'"):
        ndpack.save_dataset(xr.Dataset({"a/b": ("x", [1, 2])}), str(tmp_path / "a.b2z"))
    with pytest.raises(ParameterError, match="'nope'"):
        ndpack.save_dataset(ds, str(tmp_path / "a.b2z"), encoding={"nope": {}})
    with pytest.raises(ParameterError, match="unknown encoding keys"):
        ndpack.save_dataset(ds, str(tmp_path / "a.b2z"), encoding={"temp": {"zlib": True}})
    with pytest.raises(ParameterError, match="append_dim"):
        ndpack.save_dataset(ds, str(tmp_path / "a.b2z"), append_dim="time")
    with pytest.raises(ParameterError, match="object values"):
        ndpack.save_dataset(xr.Dataset({"o": ("x", np.array([1, "a"], dtype=object))}),
                            str(tmp_path / "a.b2z"))
    with pytest.raises(ParameterError, match="attribute value"):
        ndpack.save_dataset(xr.Dataset({"v": ("x", [1], {"bad": object()})}),
                            str(tmp_path / "a.b2z"))
    assert not os.path.exists(tmp_path / "a.b2z")        # failed writes leave nothing
    path = str(tmp_path / "ok.b2z")
    ndpack.save_dataset(ds, path)
    with pytest.raises(ParameterError, match="'temp': stored dimensions"):
        ndpack.save_dataset(ds.transpose("lat", ...).isel(time=[0]), path,
                            mode="a", append_dim="time")
    xr.testing.assert_identical(xr.open_dataset(path, engine="ndpack"), ds)  # unchanged


def test_peak_rss_of_a_reduction_over_8x_the_memory_limit(tmp_path):
    """``(ds.a * 2 + ds.b).mean("time")`` over two 256 MB variables with a 32 MiB
    memory limit: the duck-array path streams chunks, the peak grows by far less than
    one variable."""
    import subprocess
    import sys
    import textwrap
    shape, n = (256, 256, 512), 256 * 256 * 512           # 256 MiB of float64 each
    path = str(tmp_path / "big.b2d")
    with ndpack.TreeStore(path, mode="w") as ts:          # written here: the child only reads
        for name, lo in (("a", 0.0), ("b", 1.0)):
            arr = ndpack.linspace(lo, lo + 1, n, shape=shape, chunks=(16, 256, 512),
                                  urlpath=str(tmp_path / f"{name}.b2nd"), mode="w",
                                  cparams={"codec": ndpack.Codec.LZ4, "clevel": 1})
            arr.vlmeta["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
            ts["/" + name] = arr
    script = textwrap.dedent(f"""
        import numpy as np, ndpack, xarray as xr

        def hwm_mb():          # VmHWM: ru_maxrss would carry the parent's peak across exec
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
        shape, n = (256, 256, 512), 256 * 256 * 512
        path = r"{path}"
        ds = xr.open_dataset(path, engine="ndpack")
        float(ds.a[0, 0, 0])                     # imports and pools warmed
        before = hwm_mb()
        m = (ds.a * 2 + ds.b).mean("time").values
        peak = hwm_mb()
        i = np.arange(256)[:, None] * 256 * 512 + np.arange(256 * 512)[None, :]
        x = i / (n - 1)
        want = (x * 2 + 1 + x).mean(axis=0).reshape(256, 512)
        assert np.allclose(m, want, rtol=1e-9), np.abs(m - want).max()
        print(before, peak)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "NDPACK_MEMORY": "32M"})
    assert out.returncode == 0, out.stderr
    before_mb, peak_mb = map(int, out.stdout.split())
    assert peak_mb - before_mb < 128, f"peak RSS grew {peak_mb - before_mb} MB (from " \
                                      f"{before_mb}) over 512 MB of variables"


def test_import_ndpack_does_not_import_xarray():
    import subprocess
    import sys
    code = "import sys, ndpack; print('xarray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
