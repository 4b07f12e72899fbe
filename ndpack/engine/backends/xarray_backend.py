"""xarray's ``engine="ndpack"``: ``.b2nd`` arrays and ``.b2z``/``.b2d`` stores as
Datasets and DataTrees (the ``xarray.backends`` entry point ``ndpack``).

Opening reads metadata only (each variable's vlmeta, the store's listing).  Each
variable's data is a :class:`NdpackBackendArray`: indexing it decodes only the blocks
the key touches, and its duck array (what ``Variable.data`` gives with ``chunks=None``,
xarray's default) is the NDArray itself, so ``(ds.a * 2 + ds.b).mean("time")`` is a
lazy ndpack expression computed chunk by chunk by the engine.  Masking and
scale/offset (``_FillValue``, ``missing_value``, ``scale_factor``, ``add_offset``) of
plain numeric variables are decoded by a lazy ndpack expression too, with xarray's
dtypes and bits; other CF decoding (times, ``_Unsigned``, characters) is xarray's.
``chunks={}`` gives dask arrays whose chunks are the stored ones (the
``preferred_chunks`` of each variable's encoding).

The label convention (dimension names, attributes) is :mod:`xarray_labels`'s; the
writer, :func:`~ndpack.engine.backends.xarray_writer.save_dataset`.  This module is
xarray's plugin: it imports xarray, nothing in ndpack imports it.

Examples
--------
>>> import numpy as np, xarray as xr, ndpack, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "d.b2z")
>>> ds = xr.Dataset({"t": (("time", "x"), np.arange(12.0).reshape(4, 3))},
...                 coords={"x": [10, 20, 30]}, attrs={"title": "demo"})
>>> ndpack.save_dataset(ds, path)
>>> back = xr.open_dataset(path, engine="ndpack")
>>> isinstance(back.t.data, ndpack.NDArray), back.attrs["title"]
(True, 'demo')
>>> back.t.mean("time").values.tolist()
[4.5, 5.5, 6.5]
>>> xr.testing.assert_identical(back, ds)
>>> back.close()
"""

from __future__ import annotations

import os

import numpy as np

from ndpack.engine.backends.xarray_labels import (DIMS_KEY, DTYPES_KEY, OBJECT_KEY, restore_attrs,
                                                  split_vlmeta)
from ndpack.engine.backends.xarray_writer import register_accessors
from ndpack.engine.elementwise import where
from ndpack.engine.expr.lazyexpr import LazyExpr, as_node
from ndpack.engine.ops.shape import permute_dims
from ndpack.engine.statistical import mean
from ndpack.errors import FormatError, ParameterError
from ndpack.storage.constructors import asarray
from ndpack.storage.dispatch import open as open_frame
from ndpack.storage.ndarray import NDArray
from ndpack.storage.stores import DictStore
from ndpack.storage.treestore import TreeStore

try:        # this module is xarray's plugin: without xarray nothing loads it
    import xarray as xr
    from xarray import conventions
    from xarray.backends import BackendArray, BackendEntrypoint
    from xarray.backends.common import AbstractDataStore
    from xarray.backends.store import StoreBackendEntrypoint
    from xarray.core import indexing
    from xarray.core.indexing import ExplicitlyIndexed
except ImportError:                                 # pragma: no cover
    xr = None
    BackendArray = BackendEntrypoint = AbstractDataStore = ExplicitlyIndexed = object
else:
    register_accessors()            # ds.ndpack.save(...) once xarray knows the engine

__all__ = ["NdpackBackendArray", "NdpackBackendEntrypoint", "NdpackDataStore",
           "SUFFIXES", "XarrayLazyExpr", "XarrayNDArray", "xarray_face"]

SUFFIXES = (".b2nd", ".b2z", ".b2d")
_MASK_KEYS = ("_FillValue", "missing_value")
_SCALE_KEYS = ("scale_factor", "add_offset")


def _support(array):
    return indexing.IndexingSupport.OUTER_1VECTOR if isinstance(array, NDArray) \
        else indexing.IndexingSupport.BASIC


def _is_whole(key: tuple, shape: tuple) -> bool:
    return len(key) == len(shape) and all(
        isinstance(k, slice) and k.indices(n) == (0, n, 1) for k, n in zip(key, shape))


class _XarrayFace:
    """What xarray asks of a variable's cached duck array, so that it stays ours.

    xarray caches the duck array of an opened variable (``cache=True``) as
    ``as_indexable(array)``; for an array-API array that is an adapter whose duck array
    is a *whole read* into NumPy and which refuses vectorized keys.  An array that is
    also ``ExplicitlyIndexed`` is cached as itself: it gives itself as its duck array
    (so ``.data`` stays lazy on every access) and answers xarray's explicit keys (basic,
    outer, vectorized) by reading only what they select."""

    def get_duck_array(self):
        return self

    async def async_get_duck_array(self):
        return self

    def _plain_getitem(self, key):
        raise NotImplementedError

    def _raw(self, key: tuple):
        return np.asarray(self._plain_getitem(key))

    def _explicit(self, key):
        return indexing.explicit_indexing_adapter(key, tuple(self.shape), _support(self),
                                                  self._raw)

    def __getitem__(self, key):
        if isinstance(key, indexing.ExplicitIndexer):
            return self._explicit(key)
        return self._plain_getitem(key)

    @property
    def oindex(self):
        return indexing.IndexCallable(self._explicit, None)

    @property
    def vindex(self):
        return indexing.IndexCallable(self._explicit, None)

    def transpose(self, order):
        return permute_dims(self, tuple(order))


def nan_mean_fast(x, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """``np.nanmean`` of a float NDArray through the fused mean (one pass of the C
    core's sums) when the result holds no NaN, which proves no NaN was summed; None
    otherwise (a NaN somewhere, or keywords beyond these): the caller takes NumPy's
    NaN-skipping path (ndpack's streamed one)."""
    if dtype is not None or out is not None or kwargs or np.dtype(x.dtype).kind != "f":
        return None
    res = np.asarray(mean(x, axis=axis, keepdims=keepdims))
    if np.isnan(res).any():
        return None
    return res[()] if res.ndim == 0 else res


class XarrayNDArray(_XarrayFace, NDArray, ExplicitlyIndexed):
    """An NDArray as xarray's cached duck array (same super-chunk, no copy).

    xarray's ``mean`` skips NaNs (``np.nanmean``): a float variable without NaNs is
    averaged by the fused mean in one pass (:func:`nan_mean_fast`)."""

    def __array_function__(self, func, types, args, kwargs):
        if func is np.nanmean and args and args[0] is self:
            res = nan_mean_fast(self, *args[1:], **kwargs)
            if res is not None:
                return res
        return NDArray.__array_function__(self, func, types, args, kwargs)

    def _plain_getitem(self, key):
        return NDArray.__getitem__(self, key)

    def __deepcopy__(self, memo):           # ``ds.copy(deep=True)``: a compressed copy
        return XarrayNDArray(asarray(self, copy=True).schunk)


class XarrayLazyExpr(_XarrayFace, LazyExpr, ExplicitlyIndexed):
    """A LazyExpr (a decoded variable) as xarray's cached duck array."""

    def _plain_getitem(self, key):
        return LazyExpr.__getitem__(self, key)

    def __deepcopy__(self, memo):           # the tree is immutable: a new handle
        return XarrayLazyExpr(as_node(self))


def xarray_face(array):
    """`array` (an NDArray or a LazyExpr) as the duck array xarray keeps."""
    if isinstance(array, _XarrayFace):
        return array
    if isinstance(array, NDArray):
        return XarrayNDArray(array.schunk) if array.base is None else array
    return XarrayLazyExpr(as_node(array))


class NdpackBackendArray(BackendArray):
    """A stored variable for xarray: keys decode only the blocks they touch (outer keys
    with one integer array natively, the rest through xarray's decomposition); the
    whole-array key and :meth:`get_duck_array` give the ndpack array itself (an NDArray,
    or a LazyExpr for a decoded variable, see :func:`xarray_face`) so xarray computes
    with it lazily."""

    def __init__(self, array, name: str):
        self.array, self.name = xarray_face(array), name
        self.shape, self.dtype = tuple(array.shape), np.dtype(array.dtype)

    def get_duck_array(self):
        return self.array

    def __getitem__(self, key):
        if isinstance(key, indexing.BasicIndexer) and _is_whole(key.tuple, self.shape):
            return self.array                      # the whole variable: stay lazy
        return indexing.explicit_indexing_adapter(key, self.shape, _support(self.array),
                                                  self._raw)

    def _raw(self, key: tuple):
        try:
            return np.asarray(self.array._plain_getitem(key))
        except Exception as err:                   # name the variable that failed
            raise type(err)(f"variable {self.name!r}, key {key!r}: {err}") from err


class TextBackendArray(BackendArray):
    """Fixed-width text stored from an object array of str: read back (lazily, only
    what a key selects) as an object array, as the Dataset held it."""

    def __init__(self, array, name: str):
        self.array, self.name = array, name
        self.shape, self.dtype = tuple(array.shape), np.dtype(object)

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER_1VECTOR,
            lambda k: np.asarray(self.array[k]).astype(object))


def astype(x, dtype):
    """`x` cast to `dtype`, lazily (``ndpack.astype`` computes casts of NDArrays)."""
    return LazyExpr(as_node(x)).astype(dtype)


def _cf_decodable(arr, attrs: dict) -> bool:
    """Whether ndpack decodes this variable's mask/scale itself: numeric, scalar
    mask/scale attributes, nothing else of CF's that acts on the values."""
    if np.dtype(arr.dtype).kind not in "iuf" or "_Unsigned" in attrs:
        return False
    units = attrs.get("units")
    if isinstance(units, str) and " since " in units:
        return False                               # a time: xarray's
    keys = [k for k in _MASK_KEYS + _SCALE_KEYS if k in attrs]
    return bool(keys) and all(np.ndim(attrs[k]) == 0 for k in keys)


def _decoded_like(name, dims, dtype, attrs, keys):
    """xarray's decoding of a one-element variable with these attributes (only `keys`
    of the mask/scale ones): its dtype, attributes and encoding."""
    keep = {k: v for k, v in attrs.items() if k not in _MASK_KEYS + _SCALE_KEYS or k in keys}
    sample = xr.Variable(dims, np.zeros((1,) * len(dims), dtype), keep)
    return conventions.decode_cf_variable(name, sample, mask_and_scale=True,
                                          decode_times=False, decode_timedelta=False)


def lazy_mask_and_scale(arr, name: str, dims, attrs: dict):
    """``(data, attrs, encoding)``: `arr` masked and scaled as xarray's CF decoder does
    (same dtypes and bits), as a lazy ndpack expression; attrs/encoding as xarray's."""
    whole = _decoded_like(name, dims, arr.dtype, attrs, _MASK_KEYS + _SCALE_KEYS)
    masked = _decoded_like(name, dims, arr.dtype, attrs, _MASK_KEYS)
    data, raw = arr, np.dtype(arr.dtype)
    fills = [v for k in _MASK_KEYS if k in attrs for v in [attrs[k]]
             if not (np.dtype(type(v)).kind == "f" and np.isnan(v))]
    if masked.dtype != raw:
        data = astype(data, masked.dtype)
    if fills:
        cond = None
        for fv in fills:
            hit = data == masked.dtype.type(fv)
            cond = hit if cond is None else cond | hit
        data = where(cond, masked.dtype.type(np.nan), data)
    out = whole.dtype
    for key in _SCALE_KEYS:                 # ``data *= scale; data += offset`` in place
        if key in attrs:
            value = attrs[key]
            step = astype(data, out) if data is arr or data.dtype != out else data
            step = step * value if key == "scale_factor" else step + value
            data = astype(step, out) if step.dtype != out else step
    if data.dtype != out:
        data = astype(data, out)
    return data, dict(whole.attrs), dict(whole.encoding)


def stored_variable(arr, name: str, mask_and_scale: bool = True, own_dims: str = ""):
    """The xarray Variable of a stored NDArray: dims and attrs from its vlmeta, the
    stored chunks as preferred chunks, mask/scale decoded lazily when plain.  Without
    the convention the dimensions are ``dim_0...``, or ``<own_dims>_dim_0...``."""
    if not isinstance(arr, NDArray):
        raise FormatError(f"variable {name!r} is a {type(arr).__name__}, not an NDArray")
    meta = arr.vlmeta.getall()
    dims, attrs = split_vlmeta(meta, arr.ndim, name)
    if own_dims and DIMS_KEY not in meta:
        dims = tuple(f"{own_dims}_{d}" for d in dims)
    attrs = restore_attrs(attrs, meta.get(DTYPES_KEY))
    encoding = {"chunks": tuple(arr.chunks), "preferred_chunks": dict(zip(dims, arr.chunks)),
                "dtype": np.dtype(arr.dtype)}
    data = arr
    if meta.get(OBJECT_KEY) and np.dtype(arr.dtype).kind in "US":
        return xr.Variable(dims, TextBackendArray(arr, name), attrs, encoding)
    if attrs.get("dtype") == "bool" and np.dtype(arr.dtype).kind in "iu":
        data = astype(arr, bool)                   # CF's booleans, decoded lazily
        attrs = {k: v for k, v in attrs.items() if k != "dtype"}
        encoding["dtype"] = "bool"
    elif mask_and_scale and _cf_decodable(arr, attrs):
        data, attrs, more = lazy_mask_and_scale(arr, name, dims, attrs)
        encoding.update(more)
    return xr.Variable(dims, NdpackBackendArray(data, name), attrs, encoding)


def _is_store(path: str) -> bool:
    return path.endswith((".b2z", ".b2d")) or os.path.isdir(path)


def _norm_group(group) -> str:
    if group in (None, "", "/"):
        return "/"
    if not isinstance(group, str):
        raise ParameterError(f"group must be a str path, not {type(group).__name__}")
    return "/" + group.strip("/")


def _has_group(store: TreeStore, group: str) -> bool:
    try:
        store.get_subtree(group)
    except KeyError:
        return False
    return True


def open_store(path: str, mmap_mode=None) -> TreeStore:
    """A ``.b2z``/``.b2d`` store (TreeStore or DictStore files) read as a tree."""
    try:
        return TreeStore(path, mode="r", mmap_mode=mmap_mode)
    except FileNotFoundError:
        raise
    except Exception as err:
        raise FormatError(f"{path!r} is not a readable ndpack store: {err}") from err


class NdpackDataStore(AbstractDataStore):
    """One group of a store (or one ``.b2nd`` array) as xarray's data store: its
    variables (members holding NDArrays) and attributes (the group's vlmeta)."""

    def __init__(self, source, group: str = "/", name: str | None = None,
                 mask_and_scale: bool = True, close=None, tree: bool = False):
        self.source, self.group, self.name = source, group, name
        self.mask_and_scale, self._close, self.tree = mask_and_scale, close, tree

    def _members(self) -> dict:
        if isinstance(self.source, NDArray):
            return {self.name: self.source}
        store = self.source
        base = "" if self.group == "/" else self.group
        _, _, leaves = next(store.walk(self.group))
        out = {}
        for leaf in leaves:
            try:
                value = store[base + "/" + leaf]
            except Exception as err:
                raise FormatError(f"variable {leaf!r} ({base + '/' + leaf!r} of "
                                  f"{store.localpath!r}) cannot be read: {err}") from err
            if isinstance(value, NDArray):      # SChunks and other values: not variables
                out[leaf] = value
        return out

    def get_variables(self) -> dict:
        """The group's variables.  Members without the label convention share the
        dimensions ``dim_0...`` when their sizes agree; otherwise each gets its own,
        ``<name>_dim_0...`` (never a silent misalignment).  In a tree (DataTree), where
        a group's dimensions must agree with its ancestors', they are always their own,
        named by the path: ``<group>_<name>_dim_0...``."""
        members = self._members()
        sizes, clash = {}, False
        for arr in members.values():
            if DIMS_KEY not in arr.vlmeta:
                for i, n in enumerate(arr.shape):
                    clash |= sizes.setdefault(i, n) != n
        base = self.group.strip("/").replace("/", "_")
        own = {name: (f"{base}_{name}" if base else name) if self.tree else
               (name if clash else "") for name in members}
        return {name: stored_variable(arr, name, self.mask_and_scale, own[name])
                for name, arr in members.items()}

    def get_attrs(self) -> dict:
        if isinstance(self.source, NDArray):
            return {}
        meta = self.source.get_subtree(self.group).vlmeta if self.group != "/" \
            else self.source.vlmeta
        attrs = dict(meta.getall())
        return restore_attrs({k: v for k, v in attrs.items() if k != DTYPES_KEY},
                             attrs.get(DTYPES_KEY))

    def get_dimensions(self):                         # pragma: no cover - unused by load
        return {}

    def load(self):
        return self.get_variables(), self.get_attrs()

    def close(self):
        if self._close is not None:
            self._close()
            self._close = None


class NdpackBackendEntrypoint(BackendEntrypoint):
    """``engine="ndpack"``: Blosc2 arrays (``.b2nd``) and stores (``.b2z``, ``.b2d``)
    written by ndpack or python-blosc2.

    Examples
    --------
    >>> NdpackBackendEntrypoint().guess_can_open("data.b2z")
    True
    >>> NdpackBackendEntrypoint().guess_can_open("data.nc")
    False
    """

    description = "Blosc2 arrays and stores (.b2nd, .b2z, .b2d), computed by ndpack"
    url = "https://github.com/ndpack/ndpack/blob/main/docs/xarray.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mask_and_scale",
                               "decode_times", "concat_characters", "decode_coords",
                               "use_cftime", "decode_timedelta", "group", "mmap_mode")
    supports_groups = True

    def guess_can_open(self, filename_or_obj) -> bool:
        if isinstance(filename_or_obj, (NDArray, DictStore)):
            return True
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        path = os.fsdecode(path) if isinstance(path, bytes) else path
        return path.rstrip("/").endswith(SUFFIXES)

    def _source(self, filename_or_obj, group, mmap_mode):
        """``(source, name, close)``: an NDArray or a TreeStore, the single variable's
        name, and what closes it."""
        if isinstance(filename_or_obj, NDArray):
            return filename_or_obj, "data", None
        if isinstance(filename_or_obj, DictStore):
            return (filename_or_obj if isinstance(filename_or_obj, TreeStore)
                    else open_store(filename_or_obj.localpath)), None, None
        path = os.fspath(filename_or_obj)
        path = os.fsdecode(path) if isinstance(path, bytes) else path
        if not os.path.exists(path):
            raise FileNotFoundError(f"no ndpack array or store at {path!r}")
        if _is_store(path):
            store = open_store(path, mmap_mode)
            return store, None, store.close
        if group not in (None, "", "/"):
            raise ParameterError(f"{path!r} is a single array: it has no group {group!r}")
        arr = open_frame(path, mmap_mode=mmap_mode)
        if not isinstance(arr, NDArray):
            raise FormatError(f"{path!r} holds a {type(arr).__name__}, not an NDArray")
        stem = os.path.basename(path.rstrip("/"))
        return arr, stem[:-5] if stem.endswith(".b2nd") else stem, None

    def open_dataset(self, filename_or_obj, *, drop_variables=None, mask_and_scale=True,
                     decode_times=True, concat_characters=True, decode_coords=True,
                     use_cftime=None, decode_timedelta=None, group=None, mmap_mode=None):
        source, name, close = self._source(filename_or_obj, group, mmap_mode)
        group = _norm_group(group)
        if isinstance(source, TreeStore) and not _has_group(source, group):
            if close:
                close()
            raise ParameterError(f"{group!r} is not a group of {source.localpath!r}")
        store = NdpackDataStore(source, group, name, mask_and_scale, close)
        return StoreBackendEntrypoint().open_dataset(
            store, mask_and_scale=mask_and_scale, decode_times=decode_times,
            concat_characters=concat_characters, decode_coords=decode_coords,
            drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta)

    def open_groups_as_dict(self, filename_or_obj, *, drop_variables=None,
                            mask_and_scale=True, decode_times=True, concat_characters=True,
                            decode_coords=True, use_cftime=None, decode_timedelta=None,
                            group=None, mmap_mode=None) -> dict:
        source, _, close = self._source(filename_or_obj, None, mmap_mode)
        top = _norm_group(group)
        if not isinstance(source, TreeStore):
            groups = ["/"]
        else:
            if not _has_group(source, top):
                raise ParameterError(f"{top!r} is not a group of {source.localpath!r}")
            groups = [path for path, _, _ in source.walk(top)]
        out = {}
        for path in groups:
            store = NdpackDataStore(source, path, "data", mask_and_scale, tree=True)
            ds = StoreBackendEntrypoint().open_dataset(
                store, mask_and_scale=mask_and_scale, decode_times=decode_times,
                concat_characters=concat_characters, decode_coords=decode_coords,
                drop_variables=drop_variables, use_cftime=use_cftime,
                decode_timedelta=decode_timedelta)
            rel = path if top == "/" else "/" + path[len(top):].lstrip("/")
            out[rel] = ds
        if close is not None:
            out["/"].set_close(close)
        return out

    def open_datatree(self, filename_or_obj, **kwargs):
        groups = self.open_groups_as_dict(filename_or_obj, **kwargs)
        return xr.DataTree.from_dict(groups)
