"""The label convention: dimension names, attributes and encodings of xarray variables
kept in the vlmeta of plain NDArrays (see docs/xarray.md).

A variable is an NDArray, a ``.b2nd`` file or a member ``/<group>/<name>`` of a
``.b2z``/``.b2d`` store.  Its vlmeta holds

* ``_ARRAY_DIMENSIONS``: the dimension names, a list of str, one per axis (zarr v2's
  and xarray's zarr backend's key, so tools that know one know the other);
* every attribute of the CF-encoded variable under its own name (``units``,
  ``long_name``, ``_FillValue``, ``scale_factor``, ``add_offset``, ``calendar``,
  ``coordinates``...), as netCDF and zarr keep them: python-blosc2 shows them as
  ``arr.vlmeta["units"]``.

Keys starting with ``ndpack.`` belong to the storage layer (the checksum record) and are
never attributes.  A group's attributes are the vlmeta of its TreeStore group
(``<group>/__vlmeta__``, python-blosc2's place).  Values are msgpack: NumPy scalars are
written as Python numbers, NumPy arrays as lists.

Examples
--------
>>> import numpy as np
>>> meta = vlmeta_of(("time", "lat"), {"units": "K", "valid_range": np.array([0, 400])})
>>> meta
{'_ARRAY_DIMENSIONS': ['time', 'lat'], 'units': 'K', 'valid_range': [0, 400]}
>>> split_vlmeta(meta, ndim=2, name="temp")
(('time', 'lat'), {'units': 'K', 'valid_range': [0, 400]})
>>> split_vlmeta({}, ndim=2, name="temp")         # no convention: dim_0, dim_1
(('dim_0', 'dim_1'), {})
"""

from __future__ import annotations

import math

import numpy as np

from ndpack.errors import FormatError, ParameterError

__all__ = ["DIMS_KEY", "DTYPES_KEY", "GROUP_META", "OBJECT_KEY", "STORAGE_PREFIX", "attr_dtypes",
           "attr_value", "check_name", "default_dims", "restore_attrs", "same_value",
           "split_vlmeta", "vlmeta_of"]

DIMS_KEY = "_ARRAY_DIMENSIONS"
STORAGE_PREFIX = "ndpack."          # the storage layer's own vlmeta keys
DTYPES_KEY = "_NDPACK_ATTR_DTYPES"  # NumPy types of attributes (restored at open)
OBJECT_KEY = "_NDPACK_OBJECT"      # fixed-width text that was an object array of str
GROUP_META = "__vlmeta__"           # TreeStore's hidden group metadata member


def default_dims(ndim: int) -> tuple:
    """``dim_0, dim_1, ...``: the names of a variable without the convention (xarray's
    names for unlabelled axes)."""
    return tuple(f"dim_{i}" for i in range(ndim))


def check_name(name, what: str = "variable") -> str:
    """A variable, dimension or group name that can be a store key: a non-empty str
    without ``/`` or NUL, not ``.``/``..`` nor TreeStore's reserved ``__vlmeta__``."""
    if not isinstance(name, str):
        raise ParameterError(f"{what} name {name!r} is a {type(name).__name__}; ndpack "
                             f"files name {what}s with str")
    if name in ("", ".", "..", GROUP_META) or "/" in name or "\x00" in name:
        raise ParameterError(f"{what} name {name!r} cannot be a store key (empty, '.', "
                             f"'..', {GROUP_META!r}, or containing '/' or NUL)")
    return name


def attr_value(value, where: str = "?"):
    """An attribute value as msgpack can carry it: NumPy scalars become Python numbers,
    arrays lists, tuples lists; str, bytes, bool, int, float, None and lists of them
    pass.  Anything else is a ParameterError naming `where`."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [attr_value(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): attr_value(v, where) for k, v in value.items()}
    if isinstance(value, int) and not isinstance(value, bool) and \
            not -2**63 <= value < 2**64:
        raise ParameterError(f"{where}: attribute value {value} does not fit in 64 bits")
    if value is None or isinstance(value, (str, bytes, bool, int, float)):
        return value
    raise ParameterError(f"{where}: attribute value {value!r} ({type(value).__name__}) "
                         "cannot be stored (str, numbers, bools, lists and NumPy "
                         "scalars/arrays can)")


def vlmeta_of(dims, attrs: dict, where: str = "?") -> dict:
    """The vlmeta entries of a CF-encoded variable: its dimension names, then its
    attributes (each checked with :func:`attr_value`)."""
    out = {DIMS_KEY: [check_name(d, "dimension") for d in dims]}
    for key, value in attrs.items():
        if not isinstance(key, str) or key in (DIMS_KEY, DTYPES_KEY, OBJECT_KEY) or \
                key.startswith(STORAGE_PREFIX):
            raise ParameterError(f"{where}: attribute name {key!r} is reserved or not a "
                                 f"str ({DIMS_KEY!r} and {STORAGE_PREFIX!r}... are the "
                                 "convention's)")
        out[key] = attr_value(value, f"{where}.attrs[{key!r}]")
    return out


def split_vlmeta(meta: dict, ndim: int, name: str) -> tuple:
    """``(dims, attrs)`` of a stored variable from its vlmeta.  Without
    ``_ARRAY_DIMENSIONS`` the dimensions are ``dim_0...``; names that are not str or
    whose count disagrees with the array's dimensions are a FormatError naming the
    variable (never a silent misalignment)."""
    attrs = {k: v for k, v in meta.items()
             if k not in (DIMS_KEY, DTYPES_KEY, OBJECT_KEY) and
             not k.startswith(STORAGE_PREFIX)}
    if DIMS_KEY not in meta:
        return default_dims(ndim), attrs
    dims = meta[DIMS_KEY]
    if not isinstance(dims, (list, tuple)) or not all(isinstance(d, str) for d in dims):
        raise FormatError(f"variable {name!r}: {DIMS_KEY} must be a list of str, got "
                          f"{dims!r}")
    if len(dims) != ndim:
        raise FormatError(f"variable {name!r}: {DIMS_KEY} names {len(dims)} dimensions "
                          f"{list(dims)} but the array has {ndim}")
    if len(set(dims)) != len(dims):
        raise FormatError(f"variable {name!r}: {DIMS_KEY} repeats a name: {list(dims)}")
    return tuple(dims), attrs


def same_value(a, b) -> bool:
    """Attribute equality that treats NaN as equal to NaN (fill values)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(np.all(np.asarray(a) == np.asarray(b)))


def attr_dtypes(attrs: dict) -> dict:
    """``{name: dtype str}`` of the attributes that are NumPy scalars or arrays, so that
    :func:`restore_attrs` gives them back their types (CF decoding chooses dtypes from
    the types of ``scale_factor``/``add_offset``/``_FillValue``)."""
    return {k: np.asarray(v).dtype.str for k, v in attrs.items()
            if isinstance(v, (np.generic, np.ndarray)) and np.asarray(v).dtype.kind in "biufcSU"}


def restore_attrs(attrs: dict, dtypes) -> dict:
    """Attributes with the NumPy types :func:`attr_dtypes` recorded (others as
    stored); a record that does not fit is ignored (never an error at open)."""
    if not isinstance(dtypes, dict):
        return dict(attrs)
    out = dict(attrs)
    for key, spec in dtypes.items():
        if key not in out:
            continue
        try:
            value = np.asarray(out[key], dtype=np.dtype(spec))
        except (TypeError, ValueError):
            continue
        out[key] = value[()] if value.ndim == 0 else value
    return out
