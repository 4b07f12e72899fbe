"""Every notebook of notebooks/ runs top to bottom (nbclient, one fresh kernel each, in a
temporary working directory) and is stored without outputs."""

import importlib.util
import re
import time

import pytest

from tests.helpers import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
RUNNERS = ("nbclient", "nbformat", "ipykernel")
MISSING = [m for m in RUNNERS if importlib.util.find_spec(m) is None]
TIME_LIMIT = 60          # seconds per notebook; each is written to run in well under 20


def _nbformat():
    if "nbformat" in MISSING:
        pytest.skip("nbformat is not installed (pip install nbformat nbclient ipykernel)")
    import nbformat
    return nbformat


def _top_level_imports(nb):
    """Modules imported at the top level of the code cells (not inside try/if blocks)."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            for m in re.finditer(r"^(?:import|from)\s+([A-Za-z_]\w*)", cell.source,
                                 re.MULTILINE):
                names.add(m.group(1))
    return names


def test_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert {"quickstart", "out_of_core_hdf5_zarr", "performance"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_stored_without_outputs(path):
    nb = _nbformat().read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs (clear them before committing)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, monkeypatch):
    if MISSING:
        pytest.skip(f"cannot execute notebooks: {', '.join(MISSING)} not installed "
                    "(pip install nbclient nbformat ipykernel)")
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for mod in sorted(_top_level_imports(nb)):
        pytest.importorskip(mod, reason=f"{path.name} imports {mod}, which is not installed")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline"
                       if importlib.util.find_spec("matplotlib_inline") else "Agg")
    client = nbclient.NotebookClient(nb, timeout=TIME_LIMIT, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()            # raises CellExecutionError with the traceback on failure
    elapsed = time.perf_counter() - t0
    assert elapsed < TIME_LIMIT, f"{path.name} took {elapsed:.0f} s"
    assert any(tmp_path.iterdir()) or path.stem == "performance", \
        f"{path.name} ran outside its working directory"
    assert not list((REPO / "notebooks").glob("*.b2nd")), "a notebook wrote into notebooks/"
