"""Saved expressions: a LazyExpr in a ``.b2nd`` carrier, reopened by ``open``.

The carrier is python-blosc2's: an NDArray of the expression's shape and dtype with
no data (uninitialized special chunks), metalayer ``b2o`` =
``{"kind": "lazyexpr", "version": 1}``, vlmeta ``b2o`` holding the expression text and
each operand as ``{"kind": "urlpath", "version": 1, "urlpath": <relative path>}``
(relative to the carrier's folder), and the user's vlmeta apart under
``_b2o_user_vlmeta``.  python-blosc2's legacy layout (metalayer ``LazyArray``, vlmeta
``_LazyArray``) is read too.

Opening never executes code: the text goes through the whitelist parser
(:mod:`ndpack.engine.expr.parse`), and the operands are reopened by path (a carrier among
them opens as an expression in turn).

Examples
--------
>>> import numpy as np, ndpack, os, tempfile
>>> d = tempfile.mkdtemp()
>>> a = ndpack.asarray(np.arange(6.0), urlpath=os.path.join(d, "a.b2nd"), mode="w")
>>> e = ndpack.lazyexpr("sin(a) * 2 + 1", operands={"a": a})
>>> e.save(os.path.join(d, "e.b2nd"))
>>> again = ndpack.open(os.path.join(d, "e.b2nd"))
>>> type(again).__name__, bool(np.allclose(again[()], np.sin(np.arange(6.0)) * 2 + 1))
('LazyExpr', True)
"""

from __future__ import annotations

import keyword
import os
import pathlib

import numpy as np

from ndpack.engine.expr.functions import BINARY_OPERATORS, UNARY_OPERATORS
from ndpack.engine.expr.parse import parse
from ndpack.engine.expr.nodes import (Accumulate, Apply, Constant, Contract, Node, Operand,
                                      Reduce)
from ndpack.engine.expr.views import SliceView, TransposeView
from ndpack.codecs import SpecialValue
from ndpack.engine.operand_paths import allowed_roots, resolve_operand
from ndpack.engine.udf import open_udf
from ndpack.errors import FormatError, NdpackError, ParameterError
from ndpack.storage.ndarray import NDArray, create, fill_from, holding
from ndpack.storage.dispatch import open as open_storage
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.storage.dispatch import open_store

__all__ = ["save_expr", "open", "expression_text", "MissingOperandsError", "LAZYEXPR_MEMBERS"]

_KIND = {"kind": "lazyexpr", "version": 1}
_USER = "_b2o_user_vlmeta"
_LEGACY_EXPR = 0                                  # python-blosc2's LazyArrayEnum.Expr


class MissingOperandsError(NdpackError, FileNotFoundError, ValueError):
    """A saved expression's operand files are missing (``.missing`` maps each name to
    the path looked for).

    It is python-blosc2's ``MissingOperands`` too (``ndpack.exceptions``): a ValueError
    with ``.expr`` (the expression text) and ``.missing_ops`` (each name to the path
    the carrier stores, a ``pathlib.Path``)."""

    def __init__(self, expression: str, missing: dict, stored: dict | None = None):
        self.expression, self.missing = expression, dict(missing)
        self.missing_ops = {k: pathlib.Path(v) if isinstance(v, str) else v
                            for k, v in (stored or missing).items()}
        listing = ", ".join(f"{k!r}: {v}" for k, v in self.missing.items())
        super().__init__(f"the saved expression {expression!r} cannot be opened: operand "
                         f"file(s) missing: {listing}")

    @property
    def expr(self) -> str:
        return self.expression


# ---------------------------------------------------------------------------------------
# tree -> text

_INFIX = {}
for _sym, _fn in BINARY_OPERATORS.items():
    _INFIX.setdefault(_fn, {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//",
                            "Mod": "%", "Pow": "**", "BitAnd": "&", "BitOr": "|",
                            "BitXor": "^", "LShift": "<<", "RShift": ">>", "Lt": "<",
                            "LtE": "<=", "Gt": ">", "GtE": ">=", "Eq": "==",
                            "NotEq": "!="}.get(_sym))
_PREFIX = {fn: {"USub": "-", "UAdd": "+", "Invert": "~"}.get(sym)
           for sym, fn in UNARY_OPERATORS.items()}


def expression_text(node: Node, names: dict) -> str:
    """Text of a tree that :func:`ndpack.engine.expr.parse.parse` turns back into it;
    `names` maps ``id(array)`` of each operand to its name in the text."""
    if isinstance(node, Operand):
        return node.source if node.source else _operand_text(node.array, names)
    if isinstance(node, Constant):
        v = node.value
        return repr(v.item() if isinstance(v, np.generic) else v)
    if isinstance(node, Reduce):
        kw = {k: v for k, v in node.numpy_kwargs().items() if v is not None}
        if "dtype" in kw:
            raise ParameterError(f"{node.op}(dtype=...) cannot be written in an expression "
                                 "string; cast with astype() instead")
        parts = [expression_text(node.arg, names)]
        parts += [f"{k}={_literal(v)}" for k, v in kw.items() if k != "keepdims" or v]
        if node.where is not None:
            parts.append(f"where={expression_text(node.where, names)}")
        return f"{node.op}({', '.join(parts)})"
    if isinstance(node, Accumulate):
        parts = [expression_text(node.arg, names)]
        parts += [f"{k}={_literal(v)}" for k, v in node.kwargs().items()]
        return f"{node.op}({', '.join(parts)})"
    if isinstance(node, Contract):
        parts = [expression_text(a, names) for a in node.args]
        parts += [f"{k}={_literal(v)}" for k, v in node.kwargs.items()]
        return f"{node.op}({', '.join(parts)})"
    if isinstance(node, Apply):
        args = [expression_text(a, names) for a in node.args]
        sym = _INFIX.get(node.func.name)
        if sym and len(args) == 2 and not node.kwargs:
            return f"({args[0]} {sym} {args[1]})"
        sym = _PREFIX.get(node.func.name)
        if sym and len(args) == 1:
            return f"({sym}{args[0]})"
        args += [f"{k}={_literal(v)}" for k, v in node.kwargs.items()]
        return f"{node.func.name}({', '.join(args)})"
    raise ParameterError(f"cannot write {type(node).__name__} nodes as text")


def _literal(v) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, tuple):
        return "(" + ", ".join(_literal(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _operand_text(arr, names: dict) -> str:
    if isinstance(arr, TransposeView):
        return f"{_base_text(arr.base, names)}.T"
    if isinstance(arr, SliceView):
        key = arr.key if isinstance(arr.key, tuple) else (arr.key,)
        return f"{_base_text(arr.base, names)}[{', '.join(_key_text(k) for k in key)}]"
    return names[id(arr)]


def _base_text(base, names) -> str:
    if isinstance(base, LazyExpr):
        return f"({expression_text(base.node, names)})"
    return _operand_text(base, names)


def _key_text(k) -> str:
    if k is None:
        return "None"
    if k is Ellipsis:
        return "..."
    if isinstance(k, slice):
        parts = ["" if p is None else repr(int(p)) for p in (k.start, k.stop, k.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
    return repr(int(k))


def _unwrapped(text: str) -> str:
    """`text` without one pair of parentheses around all of it (``a + b``, as
    python-blosc2 saves it, not ``(a + b)``)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, c in enumerate(text):       # (no strings in the text: only numbers and names)
        depth += (c == "(") - (c == ")")
        if depth == 0 and i < len(text) - 1:
            return text                # "(a) + (b)": the first pair closes early
    return text[1:-1]


def _leaves(node: Node, out: list) -> list:
    """Stored arrays under the tree (operands, and the bases of views); arrays made by a
    constructor call in the text are written as that call, not stored."""
    if isinstance(node, Operand) and node.source:
        return out
    if isinstance(node, Operand):
        arr = node.array
        while isinstance(arr, (SliceView, TransposeView)):
            arr = arr.base
        if isinstance(arr, LazyExpr):
            _leaves(arr.node, out)
        elif all(a is not arr for a, _ in out):
            out.append((arr, node.name))
    elif isinstance(node, (Apply, Reduce, Contract, Accumulate)):
        for child in (node.args if isinstance(node, Apply) else node.children):
            _leaves(child, out)
    return out


# ---------------------------------------------------------------------------------------
# save

def save_expr(expr, urlpath, **kwargs) -> None:
    """Write `expr` as a carrier file (see the module docstring).

    Every operand must be stored on disk; the error lists those that are not.
    """
    carrier = os.path.abspath(os.fspath(urlpath))
    folder = os.path.dirname(carrier)
    leaves = _leaves(expr.node, [])
    in_memory = [name or f"<{type(a).__name__} {tuple(a.shape)}>" for a, name in leaves
                 if not (isinstance(a, NDArray) and a.urlpath is not None)]
    if in_memory:
        raise ParameterError(f"to save an expression, every operand must be an NDArray "
                             f"stored on disk; in memory: {', '.join(map(str, in_memory))}")
    names, used = {}, set()
    for i, (arr, name) in enumerate(leaves):
        plain = name and name.isidentifier() and not keyword.iskeyword(name)
        name = name if plain and name not in used else f"o{i}"      # (a view's text: not)
        while name in used:
            name += "_"
        names[id(arr)] = name
        used.add(name)
    text = _unwrapped(expression_text(expr.node, names))
    parse(text, {names[id(a)]: a for a, _ in leaves})         # it must read back
    operands = {names[id(a)]: {"kind": "urlpath", "version": 1,
                               "urlpath": os.path.relpath(os.path.abspath(a.urlpath), folder)}
                for a, _ in leaves}
    meta = dict(kwargs.pop("meta", None) or {})
    meta["b2o"] = dict(_KIND)
    if kwargs.pop("mode", "w") not in ("w", "a"):
        raise ParameterError("save writes a new carrier: mode must be 'w' (or 'a')")
    out = create(tuple(expr.shape), expr.dtype, urlpath=carrier, mode="w", meta=meta, **kwargs)
    with holding(out):                 # replaces an old carrier only once complete
        fill_from(out, special=SpecialValue.UNINIT)
        out.vlmeta["b2o"] = {**_KIND, "expression": text, "operands": operands}
        out.vlmeta[_USER] = {}
    out.schunk.close()


# ---------------------------------------------------------------------------------------
# open

def open(urlpath, mode: str = "r", offset: int = 0, trust_code: bool = False,  # noqa: A001
         operand_paths=None, **kwargs):
    """Open a file: an NDArray, an SChunk, a saved expression (a LazyExpr), or a store
    (``.b2z``/``.b2d``: TreeStore or DictStore; ``.b2e``: EmbedStore).

    python-blosc2's ``open``, including saved expressions (its current ``b2o`` carriers
    and the legacy ``LazyArray`` layout) and stores.  Opening a saved expression never runs code; a
    saved user function (which would) needs ``trust_code=True``.

    The operands of a saved expression are read only from the carrier's folder (and its
    subfolders) unless `operand_paths` lists more directories; absolute paths elsewhere,
    ``..`` leaving the folder, device files and FIFOs are refused before anything is
    opened (:mod:`ndpack.engine.operand_paths`).  A malformed carrier, or carriers that
    name each other in a cycle, raise ``FormatError``.

    Parameters
    ----------
    urlpath : str or path
    mode : {'r', 'a'}
    offset : int
        Where a contiguous frame starts inside a larger file.
    trust_code : bool
        Allow opening saved user functions (their source is run).
    deserialize : {'safe', 'full'}, optional (keyword)
        python-blosc2's policy: ``'full'`` is ``trust_code=True``; ``'safe'`` (the
        default) still opens saved expressions, which never run code.
    operand_paths : path or list of paths, optional
        Directories, besides the carrier's folder, that saved expressions may read
        their operands from.

    Examples
    --------
    >>> import numpy as np, ndpack, os, tempfile
    >>> d = tempfile.mkdtemp(); os.mkdir(os.path.join(d, "data"))
    >>> a = ndpack.asarray(np.arange(3.0), urlpath=os.path.join(d, "data", "a.b2nd"))
    >>> os.mkdir(os.path.join(d, "exprs"))
    >>> (a * 2).save(os.path.join(d, "exprs", "e.b2nd"))      # names ../data/a.b2nd
    >>> ndpack.open(os.path.join(d, "exprs", "e.b2nd"))
    Traceback (most recent call last):
    ...
    ndpack.engine.operand_paths.OperandPathError: ...outside the carrier's folder...
    >>> e = ndpack.open(os.path.join(d, "exprs", "e.b2nd"),
    ...                 operand_paths=[os.path.join(d, "data")])
    >>> e[()].tolist()
    [0.0, 2.0, 4.0]
    """
    deserialize = kwargs.pop("deserialize", "safe")      # python-blosc2's policy
    if deserialize not in ("safe", "full"):
        raise ValueError(f"deserialize must be 'safe' or 'full', not {deserialize!r}")
    trust_code = trust_code or deserialize == "full"     # "full": trusted input
    roots = allowed_roots(operand_paths)
    return _open(urlpath, mode, offset, trust_code, roots, (), kwargs)


_MAX_NESTING = 64                  # carriers opening carriers: deeper is refused


def _open(urlpath, mode, offset, trust_code, roots, chain, kwargs):
    path = os.fspath(urlpath)
    if _is_store(path):
        return open_store(path, mode=mode, **kwargs)
    obj = open_storage(urlpath, mode=mode, offset=offset, **kwargs)
    if not isinstance(obj, NDArray):
        return obj
    meta = list(obj.schunk.meta)
    if "b2o" not in meta and "LazyArray" not in meta:
        return obj
    real = os.path.realpath(path)
    names = [p for _, p in chain] + [path]
    if any(real == r for r, _ in chain):
        raise FormatError("saved expressions name each other in a cycle: "
                          + " -> ".join(map(repr, names)))
    if len(chain) >= _MAX_NESTING:
        raise FormatError(f"saved expressions nested more than {_MAX_NESTING} deep: "
                          + " -> ".join(map(repr, names[:3] + ["..."] + names[-2:])))
    chain = chain + ((real, path),)
    try:
        return _open_carrier(obj, path, meta, trust_code, roots, chain)
    except (NdpackError, OSError, RecursionError):
        raise
    except (KeyError, AttributeError, TypeError, IndexError, ValueError) as exc:
        raise FormatError(f"{path!r}: malformed saved expression "
                          f"({type(exc).__name__}: {exc})") from None


def _open_carrier(obj: NDArray, path: str, meta: list, trust_code, roots, chain):
    """The expression (or user function) of the carrier `obj`."""
    vlmeta_names = set(obj.vlmeta)
    if "b2o" in meta:
        kind = obj.schunk.meta["b2o"]
        if not isinstance(kind, dict) or kind.get("kind") != "lazyexpr":
            raise FormatError(f"{path!r}: b2o objects of kind {kind!r} are not supported "
                              "(only 'lazyexpr')")
        if "b2o" not in vlmeta_names:
            raise FormatError(f"{path!r}: malformed saved expression (no 'b2o' vlmeta)")
        payload = obj.vlmeta["b2o"]
        operands = payload.get("operands", {}) if isinstance(payload, dict) else None
        if not isinstance(operands, dict):
            raise FormatError(f"{path!r}: malformed saved expression")
        ops = {k: v.get("urlpath") if isinstance(v, dict) else None
               for k, v in operands.items()}
        return _rebuild(path, payload.get("expression"), ops, trust_code, roots, chain)
    if "_LazyArray" not in vlmeta_names:
        raise FormatError(f"{path!r}: malformed saved expression (no '_LazyArray' vlmeta)")
    legacy = obj.vlmeta["_LazyArray"]
    kind = obj.schunk.meta["LazyArray"]
    if not isinstance(legacy, dict) or type(kind) is not int or kind not in (0, 1):
        raise FormatError(f"{path!r}: malformed saved expression (LazyArray {kind!r})")
    if kind != _LEGACY_EXPR:
        if not trust_code:
            raise PermissionError(f"{path!r} holds a saved user function; opening it "
                                  "runs its code: pass trust_code=True if you trust it")
        return open_udf(obj, path, legacy,
                        lambda name, rel: _operand(path, name, rel, trust_code, roots, chain))
    return _rebuild(path, legacy.get("expression"), legacy.get("operands", {}),
                    trust_code, roots, chain)


def _is_store(path: str) -> bool:
    """A DictStore/TreeStore (``.b2z``, ``.b2d``, a folder with ``embed.b2e``) or an
    EmbedStore (``.b2e``), as python-blosc2's ``open`` recognizes them."""
    if path.endswith((".b2z", ".b2e")) and os.path.isfile(path):
        return True
    return os.path.isdir(path) and (path.rstrip("/").endswith(".b2d") or
                                    os.path.isfile(os.path.join(path, "embed.b2e")))


def _operand(urlpath, name, rel, trust_code, roots, chain):
    real = resolve_operand(urlpath, name, rel, roots)
    if real is None:
        raise MissingOperandsError(f"<saved function in {urlpath}>",
                                   {name: _looked_for(urlpath, rel)})
    return _open(real, "r", 0, trust_code, roots, chain, {})


def _looked_for(urlpath, rel: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(urlpath))), rel)


def _rebuild(urlpath, text, operands: dict, trust_code: bool, roots=(), chain=()):
    if not isinstance(text, str) or not isinstance(operands, dict):
        raise FormatError(f"{urlpath!r}: malformed saved expression")
    names, missing, found = {}, {}, {}
    for name, rel in operands.items():              # every path checked before any open
        if not isinstance(name, str):
            raise FormatError(f"{urlpath!r}: operand name {name!r} is not a string")
        real = resolve_operand(urlpath, name, rel, roots)
        if real is None:
            missing[name] = _looked_for(urlpath, rel)
        else:
            found[name] = real
    if missing:
        raise MissingOperandsError(text, missing, {k: operands[k] for k in missing})
    for name, real in found.items():
        names[name] = _open(real, "r", 0, trust_code, roots, chain, {})
    return LazyExpr(parse(text, names))


def _expression(self) -> str:
    """python-blosc2's ``LazyExpr.expression``: the expression as text over the names
    of :attr:`LazyExpr.operands` (``lazyexpr(e.expression, e.operands)`` is `e` again).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(3.0))
    >>> e = ndpack.sin(a) + 2 * a
    >>> e.expression, list(e.operands)
    ('(sin(o0) + (2 * o0))', ['o0'])
    """
    names = {id(arr): name for name, arr in self.operands.items()}
    return expression_text(self.node, names)


#: LazyExpr's members from here: python-blosc2's ``expression``
LAZYEXPR_MEMBERS = [("expression", property(_expression, doc=_expression.__doc__))]
