"""Writing xarray Datasets and DataTrees into ``.b2z``/``.b2d`` stores:
:func:`save_dataset` and the accessor ``ds.ndpack.save(path)``.

Each variable (coordinates included) becomes an NDArray member ``/<group>/<name>``
whose vlmeta carries the label convention (:mod:`xarray_labels`): the variable is
CF-encoded by xarray's own encoder first (times as numbers with ``units``/``calendar``,
``_FillValue``, scale/offset from ``encoding``), so any netCDF-aware reader understands
the attributes, and python-blosc2 opens every member as a plain NDArray.

Data are written without holding a variable in memory when they are lazy: an ndpack
expression (a computation on a Dataset opened with ``engine="ndpack"``) is computed
chunk by chunk into the store, an NDArray copied chunk by chunk, a dask array written
by :func:`~ndpack.from_dask`; NumPy data are compressed as they are.

xarray is imported when a function here is called (``import ndpack`` never needs it).

Examples
--------
>>> import numpy as np, xarray as xr, ndpack, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "d.b2d")
>>> ds = xr.Dataset({"v": ("time", np.arange(3.0))}, coords={"time": [0, 1, 2]})
>>> ndpack.save_dataset(ds, path)
>>> more = xr.Dataset({"v": ("time", np.arange(3.0, 5.0))}, coords={"time": [3, 4]})
>>> ds.ndpack                                      # the accessor (xarray was imported)
<ndpack accessor: save(path, ...)>
>>> more.ndpack.save(path, mode="a", append_dim="time")
>>> back = xr.open_dataset(path, engine="ndpack")
>>> back.v.values.tolist(), back.time.values.tolist()
([0.0, 1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3, 4])
>>> back.close()
"""

from __future__ import annotations

import os
import sys
import uuid

import numpy as np

from ndpack.engine.backends.dask import from_dask
from ndpack.engine.backends.xarray_labels import (DIMS_KEY, DTYPES_KEY, GROUP_META, OBJECT_KEY,
                                                  attr_dtypes, attr_value, check_name,
                                                  restore_attrs, split_vlmeta, vlmeta_of)
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.ops.shape import concat
from ndpack.errors import ParameterError
from ndpack.storage.constructors import asarray
from ndpack.storage.ndarray import NDArray
from ndpack.storage.treestore import TreeStore

__all__ = ["NdpackAccessor", "register_accessors", "save_dataset", "STORAGE_KEYS"]

STORAGE_KEYS = ("chunks", "blocks", "cparams", "dparams")
_CF_KEYS = ("_FillValue", "missing_value", "dtype", "scale_factor", "add_offset", "units",
            "calendar")
_MODES = ("w", "a")
_registered = []


def _xarray():
    try:
        import xarray
        from xarray import conventions
    except ImportError as err:                          # pragma: no cover
        raise ImportError("saving Datasets needs xarray (pip install xarray)") from err
    return xarray, conventions


def _check_path(path) -> str:
    path = os.fspath(path)
    path = os.fsdecode(path) if isinstance(path, bytes) else path
    if not (path.endswith((".b2z", ".b2d")) or os.path.isdir(path)):
        raise ParameterError(f"{path!r}: a Dataset is saved into a store, a path ending "
                             "in '.b2z' (one zip file) or '.b2d' (a directory)")
    return path


def _group_key(group) -> str:
    if group in (None, "", "/"):
        return ""
    if not isinstance(group, str):
        raise ParameterError(f"group must be a str path, not {type(group).__name__}")
    parts = [p for p in group.strip("/").split("/")]
    for p in parts:
        check_name(p, "group")
    return "/" + "/".join(parts)


def _storage_of(var, name: str, given: dict) -> dict:
    """Storage keywords of one variable: `given` (the caller's encoding) first, then
    chunks kept in the variable's encoding (from an ndpack or zarr source) when they
    still fit its shape, then dask's chunks."""
    kw = {k: given[k] for k in STORAGE_KEYS if given.get(k) is not None}
    if "chunks" not in kw and var.ndim:
        old = var.encoding.get("chunks")
        dchunks = getattr(var.data, "chunks", None)
        if isinstance(old, (tuple, list)) and len(old) == var.ndim and \
                all(isinstance(c, (int, np.integer)) and c > 0 for c in old):
            kw["chunks"] = tuple(min(int(c), max(s, 1)) for c, s in zip(old, var.shape))
        elif isinstance(dchunks, tuple) and len(dchunks) == var.ndim and \
                all(isinstance(c, tuple) and c for c in dchunks):
            kw["chunks"] = tuple(max(c[0], 1) for c in dchunks)
    if "blocks" in kw and "chunks" not in kw:
        raise ParameterError(f"variable {name!r}: encoding 'blocks' needs 'chunks'")
    return kw


def _text_array(values: np.ndarray, name: str) -> np.ndarray:
    """Object arrays of str (or of bytes) as fixed-width ``U``/``S`` arrays."""
    flat = values.ravel().tolist()
    if all(isinstance(v, str) for v in flat):
        return np.asarray(values, dtype=str) if flat else values.astype("U1")
    if all(isinstance(v, bytes) for v in flat):
        return np.asarray(values, dtype=bytes)
    raise ParameterError(f"variable {name!r}: object values that are not all str or all "
                         "bytes cannot be stored")


def _is_dask(data) -> bool:
    return type(data).__module__.startswith("dask.") and hasattr(data, "dask")


class _Writer:
    """Writes encoded variables into one store; lazy data through temporary files
    beside it (removed when copied in)."""

    def __init__(self, store: TreeStore, path: str):
        self.store, self.tmpdir = store, os.path.dirname(os.path.abspath(path))
        self.tmp = []

    def temp_path(self) -> str:
        p = os.path.join(self.tmpdir, f".ndpack-xr-{uuid.uuid4().hex[:12]}.b2nd")
        self.tmp.append(p)
        return p

    def materialize(self, data, name: str, kw: dict) -> NDArray:
        """An NDArray of `data` (lazy data go to a temporary file chunk by chunk)."""
        if isinstance(data, LazyExpr):
            return data.compute(urlpath=self.temp_path(), **kw)
        if isinstance(data, NDArray):
            return asarray(data, copy=True, urlpath=self.temp_path(), **kw)
        if _is_dask(data):
            return from_dask(data, urlpath=self.temp_path(), **kw)
        values = np.asarray(data)
        if values.dtype == object:
            values = _text_array(values, name)
        return asarray(values, copy=True, **kw)

    def is_object(self, data) -> bool:
        return np.dtype(getattr(data, "dtype", None) or np.asarray(data).dtype) == object

    def put(self, key: str, arr: NDArray, meta: dict):
        for k, v in meta.items():
            arr.vlmeta[k] = v
        self.store[key] = arr

    def cleanup(self):
        for p in self.tmp:
            if os.path.exists(p):
                os.remove(p)
        self.tmp.clear()


def _encode(xr, conventions, ds, encoding: dict):
    """xarray's CF encoding of `ds` (coordinates into ``coordinates`` attributes, times
    to numbers, masks and scales applied), the caller's CF keys merged first."""
    ds = ds.copy(deep=False)
    for name, enc in encoding.items():
        var = ds.variables[name]
        var.encoding = {**var.encoding, **{k: v for k, v in enc.items() if k in _CF_KEYS}}
    for name, var in ds.variables.items():          # chunks are ours, not xarray's
        var.encoding = {k: v for k, v in var.encoding.items() if k in _CF_KEYS}
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    return conventions.cf_encoder(variables, attrs)


def _check_encoding(ds, encoding) -> dict:
    if encoding is None:
        return {}
    if not isinstance(encoding, dict):
        raise ParameterError("encoding must be a dict of variable name -> dict")
    for name, enc in encoding.items():
        if name not in ds.variables:
            raise ParameterError(f"encoding names {name!r}, which is not a variable of the "
                                 f"Dataset ({sorted(map(str, ds.variables))})")
        bad = sorted(set(enc) - set(STORAGE_KEYS) - set(_CF_KEYS))
        if bad:
            raise ParameterError(f"variable {name!r}: unknown encoding keys {bad} (known: "
                                 f"{list(STORAGE_KEYS) + list(_CF_KEYS)})")
    return encoding


def _check_names(ds):
    for name in ds.variables:
        check_name(name)
    for dim in ds.dims:
        check_name(dim, "dimension")


def _write_group(xr, conventions, writer: _Writer, ds, gkey: str, encoding: dict,
                 append_dim, mode: str):
    store = writer.store
    _check_names(ds)
    encoding = _check_encoding(ds, encoding)
    existing = set()
    if mode == "a":
        try:
            existing = set(next(store.walk(gkey or "/"))[2])
        except KeyError:
            existing = set()
    if append_dim is not None and append_dim not in ds.dims:
        raise ParameterError(f"append_dim {append_dim!r} is not a dimension of the Dataset "
                             f"({list(ds.dims)})")
    if append_dim is not None:              # appended values encoded as the stored ones
        encoding = {**{n: _stored_encoding(store, f"{gkey}/{n}", n) for n in existing
                       if n in ds.variables and append_dim in ds.variables[n].dims},
                    **encoding}
    variables, attrs = _encode(xr, conventions, ds, encoding)
    if append_dim is not None:              # every check before the first write
        for name, var in variables.items():
            if name in existing and append_dim in var.dims:
                _check_append(store[f"{gkey}/{name}"], name, var)
    for name, var in variables.items():
        key = f"{gkey}/{name}"
        kw = _storage_of(ds.variables[name], name, encoding.get(name, {}))
        meta = vlmeta_of(var.dims, var.attrs, f"variable {name!r}")
        types = attr_dtypes(var.attrs)
        if types:
            meta[DTYPES_KEY] = types
        if append_dim is not None and name in existing and append_dim in var.dims:
            _append(writer, key, name, var, append_dim, kw, meta)
            continue
        if append_dim is not None and name in existing:
            continue                       # without the dimension: kept as it is
        if writer.is_object(var.data):
            meta[OBJECT_KEY] = True         # str values read back as object arrays
        arr = writer.materialize(var.data, name, kw)
        writer.put(key, arr, meta)
    if mode == "a" and append_dim is not None:
        return
    gmeta = type(store.vlmeta)(store, f"{gkey}/{GROUP_META}")  # the group's vlmeta, also
    if attrs or not variables:                                  # of a group not made yet
        types = attr_dtypes(attrs)
        for k, v in attrs.items():
            if not isinstance(k, str):
                raise ParameterError(f"group {gkey or '/'!r}: attribute name {k!r} is "
                                     "not a str")
            gmeta[k] = attr_value(v, f"group {gkey or '/'!r}.attrs[{k!r}]")
        if types:
            gmeta[DTYPES_KEY] = types
        if not attrs and not variables:
            gmeta[DTYPES_KEY] = {}          # an empty group exists through its metadata


def _stored_encoding(store, key: str, name: str) -> dict:
    """The CF encoding of a stored variable (units, calendar, fill, scale, dtype)."""
    old = store[key]
    meta = old.vlmeta.getall()
    _, attrs = split_vlmeta(meta, old.ndim, name)
    attrs = restore_attrs(attrs, meta.get(DTYPES_KEY))
    enc = {k: attrs[k] for k in _CF_KEYS if k in attrs and k != "dtype"}
    if "dtype" not in attrs and old.dtype.kind in "biufc":
        enc["dtype"] = old.dtype
    return enc


def _check_append(old: NDArray, name: str, var) -> tuple:
    """The stored dimensions of `name`, checked against the appended (encoded) `var`."""
    old_dims, _ = split_vlmeta(old.vlmeta.getall(), old.ndim, name)
    if tuple(old_dims) != tuple(var.dims):
        raise ParameterError(f"variable {name!r}: stored dimensions {list(old_dims)} "
                             f"differ from the appended {list(var.dims)}")
    if np.dtype(var.dtype) != old.dtype:
        raise ParameterError(f"variable {name!r}: appending {var.dtype} data to a stored "
                             f"{old.dtype} variable (encode it as {old.dtype})")
    return old_dims


def _append(writer: _Writer, key: str, name: str, var, append_dim: str, kw: dict,
            meta: dict):
    """Variable `name` extended along `append_dim` with `var`'s (encoded) data."""
    old = writer.store[key]
    old_dims = _check_append(old, name, var)
    axis = var.dims.index(append_dim)
    new = writer.materialize(var.data, name, {"chunks": tuple(old.chunks),
                                              "blocks": tuple(old.blocks)})
    joined = concat([old, new], axis=axis, urlpath=writer.temp_path(),
                    chunks=tuple(old.chunks), blocks=tuple(old.blocks))
    meta = {**old.vlmeta.getall(), DIMS_KEY: list(old_dims)}
    writer.put(key, joined, {k: v for k, v in meta.items() if not k.startswith("ndpack.")})


def save_dataset(obj, path, *, mode: str = "w", group=None, append_dim=None,
                 encoding=None) -> None:
    """Write an xarray Dataset or DataTree into a ``.b2z`` or ``.b2d`` store.

    Parameters
    ----------
    obj : xarray.Dataset or xarray.DataTree
        A DataTree writes each node as a group of the store.
    path : str or path
        ``.b2z`` (one zip file) or ``.b2d`` (a directory).
    mode : {'w', 'a'}
        'w' replaces the store; 'a' adds to it: variables are replaced, or extended
        along `append_dim`.
    group : str, optional
        The group to write into (default: the root).
    append_dim : str, optional
        With ``mode='a'``: stored variables having this dimension are extended with
        `obj`'s values; stored variables without it are kept; new ones are added.
    encoding : dict, optional
        Per variable: storage keys (``chunks``, ``blocks``, ``cparams``, ``dparams``)
        and CF keys (``_FillValue``, ``dtype``, ``scale_factor``, ``add_offset``,
        ``units``, ``calendar``), as ``to_zarr``'s.

    Examples
    --------
    >>> import numpy as np, xarray as xr, ndpack, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.b2z")
    >>> ds = xr.Dataset({"t": ("x", np.array([271.5, np.nan, 280.25], np.float32))})
    >>> ndpack.save_dataset(ds, path, encoding={"t": {"dtype": "int16", "_FillValue": -1,
    ...                                               "scale_factor": 0.25, "chunks": (2,)}})
    >>> raw = ndpack.TreeStore(path, mode="r")["/t"]          # what python-blosc2 sees
    >>> raw.dtype, raw[:].tolist(), raw.vlmeta["_ARRAY_DIMENSIONS"]
    (dtype('int16'), [1086, -1, 1121], ['x'])
    >>> xr.open_dataset(path, engine="ndpack").t.values.tolist()
    [271.5, nan, 280.25]
    """
    xr, conventions = _xarray()
    register_accessors()
    if mode not in _MODES:
        raise ParameterError(f"mode must be one of {_MODES}, not {mode!r}")
    if append_dim is not None and mode != "a":
        raise ParameterError("append_dim needs mode='a'")
    path = _check_path(path)
    if isinstance(obj, xr.DataArray):
        obj = obj.to_dataset(name=obj.name if obj.name is not None else "data")
    if isinstance(obj, xr.DataTree):
        nodes = [(node.path, node.to_dataset(inherit=False)) for node in obj.subtree]
    elif isinstance(obj, xr.Dataset):
        nodes = [("/", obj)]
    else:
        raise ParameterError(f"save_dataset writes an xarray Dataset, DataArray or "
                             f"DataTree, not {type(obj).__name__}")
    if mode == "a" and not os.path.exists(path):
        mode_open = "w"
    else:
        mode_open = mode
    base = _group_key(group)
    store = TreeStore(path, mode=mode_open)
    writer = _Writer(store, path)
    try:
        for npath, ds in nodes:
            gkey = base + _group_key(npath)
            _write_group(xr, conventions, writer, ds, gkey,
                         encoding if npath == "/" else None, append_dim, mode)
    except BaseException:
        writer.cleanup()
        store.discard() if mode_open == "w" else store.close()
        raise
    store.close()
    writer.cleanup()


class NdpackAccessor:
    """``ds.ndpack`` / ``dt.ndpack`` / ``da.ndpack``: ``save(path, ...)`` is
    :func:`save_dataset` of the object."""

    def __init__(self, obj):
        self._obj = obj

    def save(self, path, **kwargs) -> None:
        """:func:`save_dataset` of this object (same keywords)."""
        save_dataset(self._obj, path, **kwargs)

    def __repr__(self):
        return "<ndpack accessor: save(path, ...)>"


def register_accessors() -> None:
    """Register the ``ndpack`` accessor on xarray's Dataset, DataArray and DataTree
    (once; xarray is imported)."""
    if _registered:
        return
    xr, _ = _xarray()
    _registered.append(True)
    for register in (xr.register_dataset_accessor, xr.register_dataarray_accessor,
                     getattr(xr, "register_datatree_accessor", None)):
        if register is not None:
            register("ndpack")(NdpackAccessor)


def register_if_loaded() -> None:
    """Register the accessor when xarray is already imported (``import ndpack`` after
    ``import xarray``); never imports xarray itself."""
    if "xarray" in sys.modules:
        register_accessors()
