"""The package's floors: every module imports only from its own floor or below.

Each module of ``ndpack/`` gets a floor (``FLOORS``, most specific prefix wins; the
engine's top is split into named floors, with a written order inside them, ``WITHIN``).
A module-level import of a higher floor fails the test, and so does any import made
inside a function between two modules of the package unless it is one of the seams of
``SEAMS`` (each with its reason; none today: LazyExpr reaches the engine through its
door, ``ndpack/engine/expr/door.py``), an import cycle (function-level imports
included), a private name imported from another module (``PRIVATE_IMPORTS`` lists the
exceptions with their reasons) and a module over 800 lines.  Optional third-party
packages (dask, h5py, zarr, tqdm) are not the package's and are not checked.
docs/architecture.md draws the same floors and names every module.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import ndpack

# the package being tested: the source tree, or the installed wheel when the suite runs
# outside the tree (.ci/wheel.sh), where a path next to tests/ would find no module
ROOT = pathlib.Path(ndpack.__file__).resolve().parent

# floor of each module: the longest matching prefix decides
FLOORS = {
    "ndpack._core": 0,
    "ndpack.errors": 0,
    "ndpack.dtypes": 1,
    "ndpack.codecs": 1,
    "ndpack.chunks": 1,
    "ndpack.vmath": 1,
    "ndpack.resources": 2,
    "ndpack.reporting": 2,
    "ndpack.storage": 3,
    "ndpack.inspection": 3,
    "ndpack.engine.expr": 4,
    "ndpack.engine.run": 5,
    "ndpack.engine.ops": 6,
    # the engine's top, in named floors: the driver < the entry points < the methods
    "ndpack.engine": 7,
    "ndpack.engine.compute": 7,      # driver: prepare the tree, the one choice of path
    "ndpack.engine.api": 8,          # entry points: lazyexpr/evaluate, reductions, ...
    "ndpack.engine.statistical": 8,
    "ndpack.engine.elementwise": 8,
    "ndpack.engine.nanreductions": 8,
    "ndpack.engine.operand_paths": 8,
    "ndpack.engine.operators": 9,    # methods: NDArray's and LazyExpr's, saving, formats
    "ndpack.engine.arrayobject": 9,
    "ndpack.engine.protocols": 9,
    "ndpack.engine.udf": 9,
    "ndpack.engine.persist": 9,
    "ndpack.engine.hdf5": 9,
    "ndpack.engine.backends": 10,
    "ndpack.engine.bind": 11,        # the door's implementation and NDArray's surface
    "ndpack": 12,                    # the namespace: __init__, linalg, fft, compat, cli
}

FLOOR_NAMES = {0: "core", 1: "codecs", 2: "resources", 3: "storage", 4: "engine.expr",
               5: "engine.run", 6: "engine.ops", 7: "engine.driver", 8: "engine.entry",
               9: "engine.methods", 10: "engine.backends", 11: "engine.bind",
               12: "ndpack"}

# Inside a floor of the engine's top, the written order of its modules: each imports only
# modules before it in its floor's tuple (so the floor has an order, not only a bag).
WITHIN = {
    "engine.entry": ("ndpack.engine.operand_paths", "ndpack.engine.elementwise",
                     "ndpack.engine.statistical", "ndpack.engine.nanreductions",
                     "ndpack.engine.api"),
    "engine.methods": ("ndpack.engine.arrayobject", "ndpack.engine.operators",
                       "ndpack.engine.udf", "ndpack.engine.persist",
                       "ndpack.engine.protocols", "ndpack.engine.hdf5"),
}

# Imports made inside a function between modules of the package: (importer, imported)
# -> why it cannot be at module level.  Nothing else may import inside a function: the
# engine is reached from below through LazyExpr's door (ndpack.engine.expr.door, which
# ndpack.engine.bind implements), the optional dask backend included.
SEAMS: dict = {}


# Private names (one leading underscore) imported from another module of the package:
# (importer, module, name) -> why it stays.  A helper another module needs gets a public
# name in its home module instead.
PRIVATE_IMPORTS = {
    ("ndpack.storage.schunk", "ndpack.chunks", "_as_buffer"):
        "chunks.py is another worktree's (the codec work of this wave): rename it there",
}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
KNOWN = set(MODULES) | {"ndpack._core"}


def floor(module: str) -> int:
    best = max((k for k in FLOORS if module == k or module.startswith(k + ".")), key=len)
    return FLOORS[best]


def _targets(importer: str, node, is_package: bool) -> list[str]:
    """The package modules an import statement names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = importer.split(".")
        if not is_package:
            parts.pop()
        parts = parts[:len(parts) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in KNOWN else base for a in node.names]


def imports(module: str) -> list[tuple[str, bool, int]]:
    """``(imported module, inside a function?, line)`` for each import of the package."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    found = []

    def walk(node, inside):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for t in _targets(module, child, path.name == "__init__.py"):
                    if t == "ndpack" or t.startswith("ndpack."):
                        found.append((t, inside, child.lineno))
            walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.Lambda)))
    walk(tree, False)
    return found


GRAPH = {m: imports(m) for m in MODULES}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    """A module-level import of a higher floor is an error."""
    mine = floor(module)
    bad = [f"line {line}: {t} ({FLOOR_NAMES[floor(t)]})" for t, inside, line in GRAPH[module]
           if not inside and floor(t) > mine]
    assert not bad, f"{module} ({FLOOR_NAMES[mine]}) imports upward: {bad}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_function_level_imports_are_seams(module):
    """Inside functions, only the listed seams may import from the package."""
    bad = [f"line {line}: {t}" for t, inside, line in GRAPH[module]
           if inside and t != module and (module, t) not in SEAMS
           and not (t == "ndpack" or t == "ndpack._core")]
    assert not bad, f"{module} imports inside functions: {bad} (add it at module level, " \
                    "or to SEAMS with a reason if it must reach up)"


def test_seams_exist():
    """Every listed seam is still used (a stale allow-list hides nothing but misleads)."""
    used = {(m, t) for m, found in GRAPH.items() for t, inside, _ in found if inside}
    assert set(SEAMS) <= used, sorted(set(SEAMS) - used)


@pytest.mark.parametrize("name", sorted(WITHIN))
def test_order_within_a_floor(name):
    """Inside a named floor of the engine's top, imports point to earlier modules of its
    written order, and every module of the floor is in the order."""
    order = WITHIN[name]
    members = sorted(m for m in MODULES if FLOOR_NAMES[floor(m)] == name)
    assert sorted(order) == members, (name, members)
    bad = [f"{m} -> {t}" for m in order for t, _, _ in GRAPH[m]
           if t in order and order.index(t) >= order.index(m)]
    assert not bad, f"{name}: imports against the written order: {bad}"


def test_no_cycle_but_the_seams():
    """The import graph, function-level imports included, is acyclic once the seams are
    taken out."""
    edges = {m: {t for t, _, _ in found if t in MODULES and t != m and (m, t) not in SEAMS
                 and not MODULES[t].name == "__init__.py"}
             for m, found in GRAPH.items()}
    state, path = {}, []

    def visit(m):
        state[m] = 1
        path.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)


def private_imports() -> set:
    """``(importer, module, name)`` of each private name imported across modules (the
    binding ``ndpack._core``, a module, is not a name)."""
    found = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            for a in node.names:
                base = _targets(module, node, path.name == "__init__.py")[0]
                base = base.rsplit(".", 1)[0] if base.endswith("." + a.name) else base
                if (base == "ndpack" or base.startswith("ndpack.")) and \
                        a.name.startswith("_") and not a.name.startswith("__") and \
                        f"{base}.{a.name}" not in KNOWN and base != module:
                    found.add((module, base, a.name))
    return found


def test_no_private_names_across_modules():
    """No module imports another's private name unless ``PRIVATE_IMPORTS`` says why."""
    found = private_imports()
    bad = sorted(found - set(PRIVATE_IMPORTS))
    assert not bad, f"private names imported across modules: {bad} (give them a public " \
                    "name in their home module, or a reason in PRIVATE_IMPORTS)"
    stale = sorted(set(PRIVATE_IMPORTS) - found)
    assert not stale, f"PRIVATE_IMPORTS lists imports that no longer exist: {stale}"


def test_floor_of_each_module():
    """The floors mean what they say (a sanity check of ``floor``)."""
    assert floor("ndpack.storage.ndarray") == 3
    assert floor("ndpack.engine.expr.nodes") == 4
    assert floor("ndpack.engine.compute") == 7
    assert floor("ndpack.engine") == 7
    assert floor("ndpack.engine.persist") == 9
    assert floor("ndpack.linalg") == 12
    assert floor("ndpack.engine.backends.dask") > floor("ndpack.engine.compute")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    """A module holds one noun: under 800 lines."""
    n = len(MODULES[module].read_text().splitlines())
    assert n <= 800, f"{module} has {n} lines"


# the C core's sources (csrc/, its tests excluded as the Python tests are): absent when
# the suite runs from a copy of tests/ outside the tree against the wheel (.ci/wheel.sh)
CSRC = pathlib.Path(__file__).resolve().parents[2] / "csrc"
C_SOURCES = sorted(str(p.relative_to(CSRC)) for p in CSRC.rglob("*.[ch]")
                   if p.relative_to(CSRC).parts[0] != "tests") if CSRC.is_dir() else []


@pytest.mark.skipif(not C_SOURCES, reason="no csrc/ next to tests/ (the wheel's run)")
@pytest.mark.parametrize("source", C_SOURCES or ["-"])
def test_c_source_size(source):
    """A C source file holds one noun too: under 800 lines."""
    n = len((CSRC / source).read_text().splitlines())
    assert n <= 800, f"csrc/{source} has {n} lines"


DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


@pytest.mark.skipif(not DOC.is_file(), reason="no docs/ next to tests/ (the wheel's run)")
def test_the_map_names_every_module():
    """docs/architecture.md's floor map names every module of the package."""
    text = DOC.read_text()
    block = text[text.index("## Floors, bottom up"):]
    block = block[block.index("```") + 3:]
    words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", block[:block.index("```")]))
    missing = sorted(m for m in MODULES if m.rsplit(".", 1)[-1] not in words)
    assert not missing, f"docs/architecture.md's floors do not name {missing}"
