"""Every function of the namespace, of ``ndpack.linalg`` and ``ndpack.fft``, and every
method of the array object (NDArray and LazyExpr) has the signature of the array API
standard, revision 2024.12, as ``array_api_strict`` (its reference implementation)
declares it.

A difference is a mismatch when a call written to the standard would fail or mean
something else with ndpack:

* the standard's positional parameters come first, in its order; a positional-only
  one may have any name (ndpack keeps python-blosc2's, e.g. ``sum(ndarr, ...)``) and
  may also be passed by keyword; a positional-or-keyword one has the standard's name;
* a keyword-only parameter exists under its name (keyword-only, or positional-or-keyword
  after the standard's positional ones);
* every default the standard gives is ndpack's default too (``None`` stands for
  array_api_strict's private "not given" sentinel);
* ndpack's extra parameters (python-blosc2's ``chunks``, ``where``, ``c_order``, ...)
  have defaults and come after the standard's positional parameters, or are keyword-only.
"""

import enum
import inspect

import numpy as np
import pytest

import ndpack
from ndpack.engine import elementwise

from tests.api.standard import EXTENSIONS, xp

P = inspect.Parameter
POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)

# the main namespace of revision 2024.12 (array_api_strict also carries 2025.12's)
MAIN = sorted(set(elementwise.UNARY) | set(elementwise.BINARY) | {
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "clip", "take", "take_along_axis", "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "argsort", "sort",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff"})
# the array object's methods (its properties are checked by test_array_attributes)
METHODS = sorted(n for n, f in vars(type(xp.asarray(0))).items()
                 if callable(f) and n.startswith("__") and n.endswith("__")
                 and n not in ("__new__", "__init__", "__repr__", "__str__", "__reduce__",
                               "__buffer__", "__array__", "__hash__", "__iter__")) + ["to_device"]
READ_ONLY = {"__setitem__"} | {n for n in METHODS if n.startswith("__i") and
                               n not in ("__int__", "__index__", "__invert__")}




def _to_device(self, device, /, *, stream=None):
    """The standard's text (array_api_strict 2.6 lets `stream` be positional)."""


SPEC = {"to_device": _to_device}


def _same_default(ours, ref) -> bool:
    if isinstance(ref, enum.Enum) and type(ref).__module__.startswith("array_api_strict"):
        ref = None                  # the reference's private "not given" sentinel
    if ours is ref:
        return True
    try:
        return bool(ours == ref) and type(ours) is type(ref)
    except (TypeError, ValueError):
        return False


def mismatches(ours_f, ref_f, method=False) -> list:
    """How the signature of `ours_f` differs from `ref_f`'s in ways a call written to
    the standard would notice (see the module docstring); empty when they agree."""
    ours = list(inspect.signature(ours_f).parameters.values())
    ref = list(inspect.signature(ref_f).parameters.values())
    if method:                                       # unbound: drop self on both
        ours, ref = ours[1:], [p for p in ref if p.name != "self"]
    byname = {p.name: p for p in ours}
    bad = []
    npos = 0
    for i, r in enumerate(ref):
        if r.kind == P.KEYWORD_ONLY:
            o = byname.get(r.name)
            if o is None or o.kind not in (P.KEYWORD_ONLY, P.POSITIONAL_OR_KEYWORD) or \
                    (o.kind == P.POSITIONAL_OR_KEYWORD and ours.index(o) < npos):
                bad.append(f"keyword {r.name!r}: {o}")
                continue
        else:
            o = ours[i] if i < len(ours) else None
            npos = i + 1
            if r.kind == P.VAR_POSITIONAL:
                if o is None or o.kind != P.VAR_POSITIONAL:
                    bad.append(f"*{r.name}: {o}")
                continue
            if o is None or o.kind not in POSITIONAL:
                bad.append(f"positional #{i} {r.name!r}: {o}")
                continue
            if r.kind == P.POSITIONAL_OR_KEYWORD and \
                    (o.name != r.name or o.kind != P.POSITIONAL_OR_KEYWORD):
                bad.append(f"{r.name!r} may be given by keyword: ours is {o}")
        if r.default is not P.empty and not _same_default(o.default, r.default):
            bad.append(f"{r.name!r} defaults to {o.default!r}, the standard's {r.default!r}")
    named = {r.name for r in ref if r.kind == P.KEYWORD_ONLY}
    for i, o in enumerate(ours):
        if o.kind in (P.KEYWORD_ONLY, P.VAR_KEYWORD) or i < npos or o.name in named:
            continue
        if o.default is P.empty or o.kind == P.VAR_POSITIONAL:
            bad.append(f"extra positional {o}")
    return bad


@pytest.mark.parametrize("name", MAIN)
def test_namespace_function(name):
    assert mismatches(getattr(ndpack, name), getattr(xp, name)) == []


@pytest.mark.parametrize("module, name", EXTENSIONS)
def test_extension_function(module, name):
    ours = getattr(getattr(ndpack, module), name)
    assert mismatches(ours, getattr(getattr(xp, module), name)) == []


@pytest.mark.parametrize("cls", [ndpack.NDArray, ndpack.LazyExpr], ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", METHODS)
def test_array_method(cls, name):
    if cls is ndpack.LazyExpr and name in READ_ONLY:
        pytest.skip("an expression is read-only: no item or in-place assignment")
    ref = SPEC.get(name) or getattr(type(xp.asarray(0)), name)
    assert mismatches(getattr(cls, name), ref, method=True) == []


@pytest.mark.parametrize("make", [lambda x: ndpack.asarray(x), lambda x: ndpack.asarray(x) + 0],
                         ids=["NDArray", "LazyExpr"])
def test_array_attributes(make):
    a = make(np.arange(6.0).reshape(2, 3))
    assert (a.dtype, a.device, a.ndim, a.shape, a.size) == (ndpack.float64, "cpu", 2, (2, 3), 6)
    assert a.T.shape == a.mT.shape == (3, 2)
    assert a.__array_namespace__() is ndpack
    assert ndpack.__array_api_version__ == "2024.12"


def test_the_rule_sees_real_mismatches():
    """The checker itself: each kind of mismatch it must report, and what it allows."""
    def std_ref(x, /, *, axis=None, correction=0.0, keepdims=False): ...
    def reshape_ref(x, /, shape, *, copy=None): ...

    def ok(ndarr, axis=None, dtype=None, keepdims=False, *, correction=0.0, chunks=None): ...
    def wrong_default(x, /, *, axis=None, correction=None, keepdims=False): ...
    def missing_keyword(x, axis=None, keepdims=False): ...
    def renamed(x, /, newshape, *, copy=None): ...
    def extra_first(y, x, /, shape, *, copy=None): ...
    def required_extra(x, shape, order, *, copy=None): ...
    assert mismatches(ok, std_ref) == []
    assert mismatches(wrong_default, std_ref) != []
    assert mismatches(missing_keyword, std_ref) != []
    assert mismatches(renamed, reshape_ref) != []
    assert mismatches(extra_first, reshape_ref) != []
    assert mismatches(required_extra, reshape_ref) != []
