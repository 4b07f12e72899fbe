"""Where the operands of a saved expression may be read from.

A carrier (a saved expression or user function, see :mod:`ndpack.engine.persist`)
names its operands by path, and a carrier can come from anyone: opening it must not
read ``/dev/zero``, ``/proc/self/mem`` or ``../../secret`` because the file says so.
The policy:

* a relative operand path is resolved against the carrier's folder (ndpack writes
  paths that way); when nothing is there, against the current directory
  (python-blosc2 writes the paths as they were given when saving, often relative to
  the directory it ran in); an absolute path is taken as it is;
* the resolved path (symbolic links followed) must lie inside the carrier's folder
  or inside one of the directories the caller allows (``operand_paths=``);
  otherwise it is refused with :class:`OperandPathError` *before* anything is opened;
* it must be a regular file or a directory (a sparse frame); device files, FIFOs and
  sockets are refused even inside an allowed directory.

Examples
--------
>>> import os, tempfile
>>> d = tempfile.mkdtemp(); open(os.path.join(d, "a.b2nd"), "w").close()
>>> carrier = os.path.join(d, "e.b2nd")
>>> resolve_operand(carrier, "a", "a.b2nd", ()) == os.path.realpath(os.path.join(d, "a.b2nd"))
True
>>> resolve_operand(carrier, "z", "/dev/zero", ())
Traceback (most recent call last):
...
ndpack.engine.operand_paths.OperandPathError: ...: operand 'z' names '/dev/zero', outside the carrier's folder ... operand_paths=[...] ...
"""

from __future__ import annotations

import os
import stat

from ndpack.errors import FormatError, ParameterError

__all__ = ["OperandPathError", "allowed_roots", "resolve_operand"]


class OperandPathError(PermissionError):
    """A saved expression names an operand file it may not read (see the module)."""


def allowed_roots(operand_paths) -> tuple:
    """The real paths of the directories the caller allows (a path or a list of them).

    Examples
    --------
    >>> allowed_roots(None), allowed_roots("/") == ("/",)
    ((), True)
    """
    if operand_paths is None:
        return ()
    if isinstance(operand_paths, (str, bytes, os.PathLike)):
        operand_paths = [operand_paths]
    roots = []
    for p in operand_paths:
        try:
            real = os.path.realpath(os.fsdecode(os.fspath(p)))
        except TypeError:
            raise ParameterError(f"operand_paths must hold directory paths, not "
                                 f"{type(p).__name__}") from None
        if not os.path.isdir(real):
            raise ParameterError(f"operand_paths: {p!r} is not a directory")
        roots.append(real)
    return tuple(roots)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_operand(carrier, name: str, given, roots: tuple):
    """The real path of operand `name` of `carrier` (stored as `given`), or None when it
    does not exist; raises :class:`OperandPathError` when the policy refuses it and
    ``FormatError`` when `given` is not a path."""
    if not isinstance(given, str) or not given or "\x00" in given:
        raise FormatError(f"{os.fspath(carrier)!r}: operand {name!r} has no valid urlpath "
                          f"({given!r})")
    folder = os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(carrier))))
    allowed = (folder,) + tuple(roots)
    candidates = [os.path.join(folder, given)]            # absolute: `given` itself
    if not os.path.isabs(given):
        candidates.append(os.path.abspath(given))         # python-blosc2: as given (CWD)
    refused = None
    for cand in candidates:
        real = os.path.realpath(cand)
        if not any(_inside(real, r) for r in allowed):
            refused = refused or cand
            continue
        try:
            mode = os.stat(real).st_mode                  # no open: stat only
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise OperandPathError(f"{os.fspath(carrier)!r}: operand {name!r} names "
                                   f"{given!r}, which is not a regular file or directory "
                                   "(device, FIFO or socket): refused")
        return real
    if refused is not None and refused == candidates[0]:
        raise OperandPathError(
            f"{os.fspath(carrier)!r}: operand {name!r} names {given!r}, outside the "
            f"carrier's folder {folder!r}: refused; pass operand_paths=[...] with the "
            "directories that hold the operands if you trust this file")
    return None
