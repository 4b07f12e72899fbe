"""Views of an NDArray with axes of length 1 added or removed (``expand_dims``, ``squeeze``).

A view shares its base's super-chunk and shows it through another :class:`Layout`:
the base's shape, chunks and blocks with axes of length 1 inserted (chunk and block 1
there) or removed (only axes whose chunk, hence block, is 1).  An axis of length 1
with chunks and blocks of 1 changes neither the chunk grid's C order nor the blocks'
order inside a chunk nor the C order inside a block (FORMAT.md §5), so every chunk
of the base is, byte for byte, the chunk of the same number of the view: reads,
writes, chunk numbers and stored-order decodes need nothing but the view's layout.
Making a view copies nothing (a few microseconds, whatever the array's size).

What a view does that its base does not:

* its ``meta`` shows the view's ``b2nd`` metalayer and is read-only; ``to_cframe()``
  and ``save()`` write a new frame with that metalayer (the chunks copied as they
  are), which python-blosc2 opens with the view's shape;
* its ``urlpath`` is None (python-blosc2's too): code that reopens an array by its
  path (saved expressions, dask graphs, index sidecars) would get the base's shape;
* it cannot be resized or appended to (NumPy's rule for views); resizing the base
  resizes its live views with it, and is refused while a view has removed an axis
  that the new shape would make longer than 1.

Writes through a view change the base (and every other view of it), as in
python-blosc2 and NumPy; ``vlmeta`` is the base's.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.arange(6).reshape(2, 3), chunks=(1, 3), blocks=(1, 3))
>>> v = a.axes_view((None, 0, 1))               # expand_dims(a, 0)
>>> v.shape, v.chunks, v.base is a, v.schunk is a.schunk
((1, 2, 3), (1, 1, 3), True, True)
>>> v[0, 1, 2] = 50
>>> a[1].tolist()
[3, 4, 50]
>>> a.resize((3, 3)); v.shape
(1, 3, 3)
"""

from __future__ import annotations

import operator

from ndpack.errors import ParameterError
from ndpack.storage.layout import Layout
from ndpack.storage.meta import Meta

__all__ = ["NDViews", "view_layout"]


def view_layout(base: Layout, axes: tuple) -> Layout:
    """The layout of a view of `base`: ``axes[i]`` is the axis of `base` that axis ``i``
    of the view shows, or None for a new axis of length 1.

    The axes named must increase (no transposition); those of `base` not named are
    removed and must have length 1 and chunks (hence blocks) of 1, else ValueError.

    Examples
    --------
    >>> import numpy as np
    >>> lay = Layout((1, 5, 6), (1, 2, 4), (1, 1, 2), np.dtype("f8"))
    >>> v = view_layout(lay, (1, None, 2))
    >>> v.shape, v.chunks, v.blocks, v.nchunks == lay.nchunks
    ((5, 1, 6), (2, 1, 4), (1, 1, 2), True)
    >>> view_layout(lay, (0, 2))             # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cannot remove axis 1 of an array of shape (1, 5, 6) (chunks (1, 2, 4)): ...
    """
    named = [a for a in axes if a is not None]
    if any(b <= a for a, b in zip(named, named[1:])) or \
            any(not 0 <= a < base.ndim for a in named):
        raise ValueError(f"a view's axes must be increasing axes of the base (0 to "
                         f"{base.ndim - 1}) or None, not {axes}")
    for d in sorted(set(range(base.ndim)) - set(named)):
        if (base.shape[d], base.chunks[d], base.blocks[d]) != (1, 1, 1):
            raise ValueError(f"cannot remove axis {d} of an array of shape {base.shape} "
                             f"(chunks {base.chunks}): only an axis of length 1 with "
                             f"chunks of 1 can be removed without copying")
    return base.picked(axes)


def _axes_of(axes, ndim: int) -> tuple:
    out = []
    for a in axes:
        if a is None:
            out.append(None)
            continue
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"a view's axes are integers or None, not {a!r:.40}") from None
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for an array of {ndim} dimensions")
        out.append(a % ndim)
    return tuple(out)


def _read_only(*_args):
    raise ParameterError("the metalayers of a view are read-only (they describe the view; "
                         "write them through its base)")


class NDViews:
    """Views sharing an NDArray's super-chunk (a mixin of NDArray: it sets the array's
    ``_schunk``, ``_layout`` and ``_io`` for a new view, as NDArray's constructor does)."""

    _base = None          # the array whose chunks a view shows; None: not a view
    _axes = None          # per axis of a view: the base's axis it shows, or None
    _views = None         # the live views of a base (a WeakSet, made with the first)

    @property
    def base(self):
        """The array whose super-chunk this view shares (None if it is not a view).

        Examples
        --------
        >>> from ndpack.storage.constructors import zeros
        >>> a = zeros((3, 4))
        >>> a.base is None, a.axes_view((0, None, 1)).base is a
        (True, True)
        """
        return self._base

    def axes_view(self, axes):
        """A view of this array with axes of length 1 added or removed, sharing its
        compressed chunks (nothing is copied; writes go to this array).

        Parameters
        ----------
        axes : sequence of int or None
            One entry per axis of the view: the axis of this array it shows, or None
            for a new axis of length 1.  The axes named must increase; the others are
            removed and must have length 1 and chunks of 1.

        Returns
        -------
        NDArray
            A view whose :attr:`base` is the array that owns the chunks (this one, or
            this view's base).

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(4).reshape(1, 4), chunks=(1, 2), blocks=(1, 1))
        >>> s = a.axes_view((1,))                       # squeeze(a, 0)
        >>> s.shape, s.chunks, s[1:3].tolist(), s.axes_view((None, 0)).base is a
        ((4,), (2,), [1, 2], True)
        """
        axes = _axes_of(axes, self.ndim)
        root = self if self._base is None else self._base
        if self._base is not None:              # a view of a view: of the same base
            axes = tuple(None if a is None else self._axes[a] for a in axes)
        layout = view_layout(root.layout, axes)
        lay = root.layout             # the same chunks, byte for byte (no frame check)
        if (layout.nchunks, layout.chunk_nbytes) != (lay.nchunks, lay.chunk_nbytes):
            raise AssertionError(f"view layout {layout} does not match {lay}")
        return type(self)._new_view(root, layout, axes)

    def squeeze(self, axis=None):
        """This array without its axes `axis` (int or ints) of length 1, all of them
        when None, as python-blosc2's ``NDArray.squeeze``: a view sharing the chunks
        when the removed axes have chunks of 1 (the usual case), else a copy.

        Examples
        --------
        >>> from ndpack.storage.constructors import zeros
        >>> z = zeros((1, 3, 1))
        >>> s = z.squeeze(axis=(0, 2))
        >>> s.shape, z.shape, s.base is z
        ((3,), (1, 3, 1), True)
        """
        nd = self.ndim
        if axis is None:
            drop = {d for d in range(nd) if self.shape[d] == 1}
        else:
            items = axis if isinstance(axis, (tuple, list)) else (axis,)
            drop = set()
            for a in items:
                d = operator.index(a)
                if not -nd <= d < nd:
                    raise ValueError(f"axis {a} is out of bounds for {nd} dimensions")
                drop.add(d % nd)
            if len(drop) != len(items):
                raise ValueError(f"repeated axis in {axis}")
        for d in sorted(drop):
            if self.shape[d] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not "
                                 f"equal to one (axis {d} has size {self.shape[d]})")
        keep = tuple(d for d in range(nd) if d not in drop)
        if all(self.chunks[d] == 1 for d in drop):
            return self.axes_view(keep)
        return self.slice(tuple(0 if d in drop else slice(None) for d in range(nd)))

    # --- what differs on a view ----------------------------------------------------------
    def _view_meta(self) -> Meta:
        """The base's metalayers with this view's ``b2nd``, read-only."""
        raw = {k: self._schunk.meta.get_raw(k) for k in self._schunk.meta}
        raw["b2nd"] = self._layout.to_b2nd()
        return Meta(raw, _read_only, _read_only)

    def _check_resizable(self, newshape: tuple) -> None:
        """Refuse to resize a view, or a base whose live views cannot follow
        `newshape` (a removed axis that would no longer have length 1)."""
        if self._base is not None:
            raise ValueError("cannot resize a view (expand_dims and squeeze share their "
                             "base's chunks): resize its base (.base), or a copy (.copy())")
        new = self._layout.resized(newshape)
        for view in list(self._views or ()):
            try:
                view_layout(new, view._axes)
            except ValueError:
                raise ValueError(f"cannot resize to {newshape}: a view of shape "
                                 f"{view.shape} removed an axis of length 1 that would "
                                 f"grow (delete the view, or resize a copy)") from None

    def _follow(self) -> None:
        """After this base was resized, give its live views their new layouts."""
        for view in list(self._views or ()):
            view._set_layout(view_layout(self._layout, view._axes))
