"""NDArray's surface is declared in one place (``ndpack/engine/bind.py``).

Storage's NDArray does not know the engine; the members the engine gives it (operators,
reductions, the array object protocol, indexes, ``to_dask``) and storage's ``fields``
are one table, ``NDARRAY_SURFACE``, bound once by ``ndpack.engine.bind.install``.  These
tests pin that table to the list below (docs/architecture.md gives the same groups),
check that no name is bound twice and that no other module assigns members of NDArray
or LazyExpr, and that ``import ndpack.storage`` alone gives the complete NDArray.
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import subprocess
import sys

import pytest

import ndpack
from ndpack.engine import bind
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.storage.ndarray import NDArray

_BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
           "lshift", "rshift"]

#: the documented surface: every member NDArray gets from outside its class body
NDARRAY_SURFACE = sorted(
    [f"__{s}__" for s in _BINARY] + [f"__r{s}__" for s in _BINARY] +
    [f"__{s}__" for s in ("lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "invert",
                          "abs")] +
    ["__matmul__", "__rmatmul__", "__array_ufunc__", "__array_function__", "__hash__"] +
    ["sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax",
     "count_nonzero", "cumulative_sum", "cumulative_prod"] +
    ["compute"] + [f"__i{s}__" for s in _BINARY + ["matmul"]] +
    ["__array_namespace__", "device", "to_device", "__bool__", "__int__", "__float__",
     "__complex__", "__index__", "__dlpack__", "__dlpack_device__", "astype", "take",
     "reshape", "sort", "argsort"] +
    ["create_index", "drop_index", "rebuild_index", "expr_key", "index", "indexes"] +
    ["to_dask", "fields"])

LAZYEXPR_SURFACE = sorted(
    ["__array_namespace__", "device", "to_device", "__bool__", "__int__", "__float__",
     "__complex__", "__index__", "__dlpack__", "__dlpack_device__", "T", "mT",
     "expression"])

ROOT = pathlib.Path(ndpack.__file__).resolve().parent


def test_the_surface_is_the_documented_list():
    assert len(NDARRAY_SURFACE) == len(set(NDARRAY_SURFACE)) == 90
    assert sorted(bind.NDARRAY_SURFACE) == NDARRAY_SURFACE
    assert sorted(bind.LAZYEXPR_SURFACE) == LAZYEXPR_SURFACE


@pytest.mark.parametrize("cls, table", [(NDArray, bind.NDARRAY_SURFACE),
                                        (LazyExpr, bind.LAZYEXPR_SURFACE)])
def test_the_surface_is_installed(cls, table):
    for name, member in table.items():
        assert cls.__dict__[name] is member, name


def _class_body_names(cls) -> set:
    names = set()
    for klass in cls.__mro__[:-1]:                      # object excluded
        node = ast.parse(inspect.getsource(klass)).body[0]
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(item.name)
            elif isinstance(item, ast.Assign):
                for t in item.targets:
                    elts = t.elts if isinstance(t, ast.Tuple) else [t]
                    names |= {e.id for e in elts if isinstance(e, ast.Name)}
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.add(item.target.id)
    return names


@pytest.mark.parametrize("cls, table", [(NDArray, bind.NDARRAY_SURFACE),
                                        (LazyExpr, bind.LAZYEXPR_SURFACE)])
def test_no_name_is_bound_twice(cls, table):
    """A bound member is not also in the class body (a hook of ``HOOKS`` excepted), and
    the table refuses a name given twice."""
    twice = (_class_body_names(cls) & set(table)) - set(bind.HOOKS[cls])
    assert not twice, sorted(twice)
    with pytest.raises(AssertionError, match="bound twice"):
        bind.surface([("x", 1)], [("x", 2)])


def test_no_other_module_binds_members():
    """Only ndpack/engine/bind.py sets attributes of NDArray or LazyExpr from outside
    their class bodies (no ``NDArray.x = ...``, ``setattr(NDArray, ...)``, ``cls.x =``
    in an ``install(cls)``)."""
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "bind.py" and path.parent.name == "engine":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and \
                        t.value.id in ("NDArray", "LazyExpr"):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" \
                    and node.args and getattr(node.args[0], "id", None) in ("NDArray",
                                                                            "LazyExpr"):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad


def test_views_have_one_constructor():
    """Views are made by ``NDArray._new_view`` only (ndview.py builds none itself)."""
    text = (ROOT / "storage" / "ndview.py").read_text()
    assert "object.__new__" not in text and "._schunk =" not in text


def test_storage_alone_gives_the_complete_array():
    """``import ndpack.storage`` (nothing else named) gives an NDArray whose operators,
    reductions, in-place operators and fields work."""
    code = """if 1:
        import sys
        import numpy as np
        import ndpack.storage as st
        a = st.asarray(np.arange(6.0))
        e = a * 2 + 1
        assert type(e).__name__ == "LazyExpr", type(e)
        assert e[1:3].tolist() == [3.0, 5.0]
        assert float(a.sum()) == 15.0 and int(a.argmax()) == 5
        a += 1
        assert a[:2].tolist() == [1.0, 2.0]
        assert a.fields == {} and a.device == "cpu"
        assert np.sin(a).compute()[0] == np.sin(1.0)
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
