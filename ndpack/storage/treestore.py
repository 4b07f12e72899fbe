"""Hierarchical stores: python-blosc2's ``TreeStore`` (a :class:`DictStore` whose keys
are ``/``-separated paths).

Groups are implicit: ``/a/b/c`` makes ``/a`` and ``/a/b`` exist.  A group's vlmeta
lives in the vlmeta of an empty super-chunk stored at ``<group>/__vlmeta__`` (the root's
at ``/__vlmeta__``), as python-blosc2 does; those keys are hidden.  ``ts["/a"]`` is a
view of the subtree with relative keys, sharing the store.  Keys iterate sorted.

Examples
--------
>>> import numpy as np, ndpack, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "t.b2z")
>>> with ndpack.TreeStore(path, mode="w") as ts:
...     ts["/exp1/temp"] = np.arange(4.0)
...     ts["/exp1/raw/counts"] = np.arange(3)
...     ts["/exp1"].vlmeta["operator"] = "ada"
...     ts.vlmeta["version"] = 2
>>> ts = ndpack.TreeStore(path, mode="r")
>>> ts.keys()
['/exp1', '/exp1/raw', '/exp1/raw/counts', '/exp1/temp']
>>> sub = ts["/exp1"]
>>> sub.keys(), sub.vlmeta["operator"], ts.vlmeta[:]
(['/raw', '/raw/counts', '/temp'], 'ada', {'version': 2})
>>> [(p, c, n) for p, c, n in ts.walk("/")]
[('/', ['exp1'], []), ('/exp1', ['raw'], ['temp']), ('/exp1/raw', [], ['counts'])]
"""

from __future__ import annotations

from collections.abc import MutableMapping

from ndpack.errors import ParameterError
from ndpack.storage.schunk import SChunk, schunk_from_cframe
from ndpack.storage.stores import DictStore, check_path

__all__ = ["TreeStore"]

VLMETA = "__vlmeta__"


def _is_vlmeta_key(key: str) -> bool:
    return key == "/" + VLMETA or key.endswith("/" + VLMETA)


def _join(prefix: str, key: str) -> str:
    return key if not prefix else (prefix if key == "/" else prefix + key)


class _GroupVlmeta(MutableMapping):
    """vlmeta of a group: the vlmeta of the super-chunk at ``<group>/__vlmeta__``."""

    def __init__(self, store: TreeStore, key: str):
        self._store, self._key = store, key

    def _schunk(self):
        st = self._store
        return st._get(self._key) if st._has(self._key) else None

    def __getitem__(self, name):
        s = self._schunk()
        if isinstance(name, slice):
            return {} if s is None else s.vlmeta[name]
        if s is None or name not in s.vlmeta:
            raise KeyError(name)
        return s.vlmeta[name]

    def _edit(self, fn):
        self._store._check_writable()
        s = self._schunk()
        s = SChunk() if s is None else schunk_from_cframe(s.to_cframe(), copy=True)
        fn(s.vlmeta)
        self._store._set(self._key, s)

    def __setitem__(self, name, value):
        if not isinstance(name, str):
            raise TypeError(f"vlmeta names are str, not {type(name).__name__}")

        def put(vl):
            vl[name] = value
        self._edit(put)

    def __delitem__(self, name):
        if name not in self:
            raise KeyError(name)

        def drop(vl):
            del vl[name]
        self._edit(drop)

    def __iter__(self):
        s = self._schunk()
        return iter([] if s is None else list(s.vlmeta))

    def __len__(self) -> int:
        s = self._schunk()
        return 0 if s is None else len(s.vlmeta)

    def __contains__(self, name) -> bool:
        s = self._schunk()
        return s is not None and name in s.vlmeta

    def getall(self) -> dict:
        return self[:]

    def __repr__(self):
        return repr(self[:])


class TreeStore(DictStore):
    """A hierarchical store: ``/``-separated keys, implicit groups, subtree views,
    per-group vlmeta (python-blosc2's ``TreeStore``, same files).

    Takes the arguments of :class:`DictStore`.  Keys without a leading ``/`` get one.

    Examples
    --------
    >>> import numpy as np, ndpack, os, tempfile
    >>> ts = ndpack.TreeStore(os.path.join(tempfile.mkdtemp(), "t.b2d"), mode="w")
    >>> ts["a/b/x"] = np.arange(3)
    >>> ts["a/y"] = np.ones(2)
    >>> ts.get_children("/a"), ts.get_descendants("/a")
    (['/a/b', '/a/y'], ['/a/b', '/a/b/x', '/a/y'])
    >>> ts["/a/b/x/z"] = np.arange(2)
    Traceback (most recent call last):
    ...
    ndpack.errors.ParameterError: cannot add '/a/b/x/z': '/a/b/x' holds a value
    >>> del ts["/a/b"]; ts.keys()
    ['/a', '/a/y']
    """

    _kind = "b2tree"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._prefix = ""
        self._root = self

    # --- a view shares the root's state ----------------------------------------------------
    def _check_open(self):
        DictStore._check_open(self._root)

    def _set(self, key: str, value):
        DictStore._set(self._root, key, value)

    def _del(self, key: str):
        DictStore._del(self._root, key)

    # --- keys ----------------------------------------------------------------------------
    def _norm(self, key) -> str:
        if not isinstance(key, str):
            raise TypeError(f"store keys are str, not {type(key).__name__}")
        key = key if key.startswith("/") else "/" + key
        if key == "/":
            return self._prefix or "/"
        check_path(key)
        if VLMETA in key[1:].split("/"):
            raise ParameterError(f"key {key!r}: {VLMETA!r} is reserved for group metadata")
        return _join(self._prefix, key)

    def _rel(self, full: str) -> str:
        if not self._prefix:
            return full
        return "/" if full == self._prefix else full[len(self._prefix):]

    def _leaves(self) -> list:
        return [k for k in self._all_keys() if not _is_vlmeta_key(k)]

    def _structure(self):
        """(leaves, groups) as sets of full keys; groups exclude the root."""
        cached = self._keycache.get("struct")
        if cached is not None:
            return cached
        leaves, groups = set(), set()
        for k in self._all_keys():
            if _is_vlmeta_key(k):
                parts = k.split("/")[1:-1]
            else:
                leaves.add(k)
                parts = k.split("/")[1:-1]
            for i in range(1, len(parts) + 1):
                groups.add("/" + "/".join(parts[:i]))
        self._keycache["struct"] = (leaves, groups)
        return leaves, groups

    def _under(self, full: str, keys) -> list:
        base = "" if full == "/" else full
        return sorted(k for k in keys if k.startswith(base + "/") and k != full)

    def _is_group(self, full: str) -> bool:
        return full == "/" or full in self._structure()[1]

    # --- mapping -------------------------------------------------------------------------
    def __getitem__(self, key):
        full = self._norm(key)
        self._check_open()
        leaves, groups = self._structure()
        if full in leaves:
            return self._get(full)
        if full in groups or full == "/":
            return self._view(full)
        raise KeyError(f"key {key!r} not found in the store {self.localpath!r}")

    def __setitem__(self, key, value):
        full = self._norm(key)
        self._check_writable()
        leaves, groups = self._structure()
        if full == "/" or full in groups:
            raise ParameterError(f"cannot assign to {self._rel(full)!r}: it is a group")
        parts = full.split("/")
        for i in range(2, len(parts)):
            anc = "/".join(parts[:i])
            if anc in leaves:
                raise ParameterError(f"cannot add {self._rel(full)!r}: "
                                     f"{self._rel(anc)!r} holds a value")
        self._set(full, value)

    def __delitem__(self, key):
        full = self._norm(key)
        self._check_writable()
        leaves, groups = self._structure()
        if full in leaves:
            self._del(full)
            return
        if full == "/" or full in groups:
            base = "" if full == "/" else full
            for k in self._all_keys():
                if k.startswith(base + "/"):
                    self._del(k)
            return
        raise KeyError(f"key {key!r} not found in the store {self.localpath!r}")

    def __contains__(self, key) -> bool:
        try:
            full = self._norm(key)
        except (TypeError, ValueError):
            return False
        leaves, groups = self._structure()
        return full != (self._prefix or "/") and (full in leaves or full in groups)

    def keys(self) -> list:
        """Leaf and group keys of this view, sorted (relative to a subtree's root)."""
        self._check_open()
        leaves, groups = self._structure()
        return [self._rel(k) for k in self._under(self._prefix or "/", leaves | groups)]

    # --- tree ----------------------------------------------------------------------------
    def _view(self, full: str) -> TreeStore:
        if full == (self._prefix or "/"):
            return self
        view = object.__new__(type(self))
        view.__dict__.update(self._root.__dict__)
        view._prefix = "" if full == "/" else full
        view._root = self._root
        return view

    def get_subtree(self, path: str) -> TreeStore:
        """The subtree at group `path` as a store with relative keys."""
        full = self._norm(path)
        if not self._is_group(full):
            raise KeyError(f"{path!r} is not a group of the store {self.localpath!r}")
        return self._view(full)

    def _group_or_raise(self, path: str) -> str:
        full = self._norm(path)
        self._check_open()
        if not self._is_group(full):
            raise KeyError(f"{path!r} is not a group of the store {self.localpath!r}")
        return full

    def get_children(self, path: str = "/") -> list:
        """Paths of the direct children (groups and leaves) of group `path`, sorted."""
        full = self._group_or_raise(path)
        leaves, groups = self._structure()
        depth = 1 if full == "/" else full.count("/") + 1
        return [self._rel(k) for k in self._under(full, leaves | groups)
                if k.count("/") == depth]

    def get_descendants(self, path: str = "/") -> list:
        """Paths of everything below group `path`, sorted."""
        full = self._group_or_raise(path)
        leaves, groups = self._structure()
        return [self._rel(k) for k in self._under(full, leaves | groups)]

    def walk(self, path: str = "/", topdown: bool = True):
        """Yield ``(path, group_names, leaf_names)`` for group `path` and every group
        below it (like :func:`os.walk`); names sorted.

        Examples
        --------
        >>> import numpy as np, ndpack, os, tempfile
        >>> ts = ndpack.TreeStore(os.path.join(tempfile.mkdtemp(), "w.b2d"), mode="w")
        >>> ts["/a/b"] = np.arange(2); ts["/c"] = np.arange(2)
        >>> list(ts.walk(topdown=False))
        [('/a', [], ['b']), ('/', ['a'], ['c'])]
        """
        full = self._group_or_raise(path)
        leaves, groups = self._structure()

        def visit(g):
            depth = 1 if g == "/" else g.count("/") + 1
            kids = [k for k in self._under(g, leaves | groups) if k.count("/") == depth]
            sub = [k for k in kids if k in groups]
            names = [k.rsplit("/", 1)[1] for k in sub]
            leafnames = [k.rsplit("/", 1)[1] for k in kids if k in leaves]
            if topdown:
                yield self._rel(g), names, leafnames
            for s in sub:
                yield from visit(s)
            if not topdown:
                yield self._rel(g), names, leafnames

        yield from visit(full)

    @property
    def vlmeta(self) -> _GroupVlmeta:
        """The vlmeta of this view's root group (dict-like; ``vlmeta[:]`` gives a dict)."""
        return _GroupVlmeta(self, (self._prefix or "") + "/" + VLMETA)

    @property
    def attrs(self) -> _GroupVlmeta:
        """Alias of :attr:`vlmeta` (python-blosc2's name)."""
        return self.vlmeta

    def close(self) -> None:
        """Close the store (a subtree view leaves it open)."""
        if self._root is self:
            super().close()

    def __del__(self):
        if getattr(self, "_root", self) is self:
            super().__del__()
