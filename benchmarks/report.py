"""Markdown tables and PNG plots from the rows the benchmarks write with ``--json``.

``run_all.py`` calls :func:`write_report` after running the benchmarks; running this file
alone rebuilds the report from the results already in a directory:

    python benchmarks/report.py [benchmarks/results] [--docs]

Every ratio is the *speed of ndpack relative to the peer*: peer time / ndpack time for
times and memory, ndpack / peer for throughputs and compression ratios, so > 1 always
means ndpack is better.  How each benchmark's rows map to "ndpack" and "peers" is in
:data:`SPECS`; rows of a benchmark without a spec (or columns a spec does not name) are
still shown, as a plain table.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import sys
from dataclasses import dataclass, field, replace

REPO = pathlib.Path(__file__).resolve().parent.parent


@dataclass
class Metric:
    """One measured quantity: ndpack's column and the peers' columns (dotted for nested
    dicts, as ``times.nd-mem``)."""
    name: str
    ours: str
    peers: dict
    unit: str = "ms"             # shown unit: "ms", "GB/s", "x", "MB"
    higher_is_better: bool = False
    scale: float | None = None   # row value -> shown value; default: s -> ms, B -> MB
    floor: float = 0.0           # values below this count as this in ratios (noise floor)

    def shown(self, v):
        scale = self.scale if self.scale is not None else \
            {"ms": 1e3, "MB": 1e-6}.get(self.unit, 1.0)
        return v * scale


@dataclass
class Table:
    short: str                   # names the table in the summary
    title: str
    label: list                  # columns that name a row
    metrics: list
    where: dict = field(default_factory=dict)    # keep rows whose columns equal these
    pivot: tuple = ()            # (column naming the library, [measured columns]): rows
                                 # are libraries; turned into one row per measured column


B2, NP, NE = "python-blosc2", "NumPy", "numexpr"
SPECS = {
    "bench_codecs": [Table(
        "codecs", "Chunk codecs (one chunk, SHUFFLE, typesize 8)",
        ["input", "codec", "clevel", "nthreads"],
        [Metric("compress", "nd_comp", {B2: "b2_comp"}, "GB/s", True),
         Metric("decompress", "nd_decomp", {B2: "b2_decomp", "memcpy": "memcpy"}, "GB/s", True),
         Metric("cratio", "nd_cratio", {B2: "b2_cratio"}, "x", True)])],
    "bench_expr": [
        Table("expr memory", "Expressions over compressed in-memory operands",
              ["codec", "expression"],
              [Metric("compute()", "nd_compute", {NP: "numpy", NE: "numexpr", B2: "b2_compute"}),
               Metric("[()] to NumPy", "nd_get", {B2: "b2_get"})], {"section": "memory"}),
        Table("expr compute", "In-memory compute() at python-blosc2's settings "
              "(LZ4-5, same chunks and blocks)", ["expression", "dtype", "order"],
              [Metric("wall best", "nd_wall_best", {B2: "b2_wall_best"}),
               Metric("wall median", "nd_wall_median", {B2: "b2_wall_median"}),
               Metric("CPU best", "nd_cpu_best", {B2: "b2_cpu_best"})],
              {"section": "compute"}),
        Table("expr disk", "Expressions over .b2nd files", ["expression"],
              [Metric("[()] to NumPy", "nd_get", {"memmap + numexpr": "memmap", B2: "b2_get"}),
               Metric("into a preallocated array", "nd_out", {"memmap + numexpr": "memmap"}),
               Metric("mmap_mode='r', preallocated", "nd_mmap", {"memmap + numexpr": "memmap"}),
               Metric("compute(urlpath=)", "nd_compute", {B2: "b2_compute"})],
              {"section": "disk"}),
        Table("expr h5py/zarr", "evaluate() over h5py and zarr operands", ["source", "expression"],
              [Metric("time", "nd_s", {B2: "b2_s", "dask": "dask_s"}),
               Metric("peak RSS growth", "nd_rss", {B2: "b2_rss", "dask": "dask_rss"}, "MB",
                      floor=4e6)],
              {"section": "foreign"})],
    "bench_reductions": [Table(
        "reductions", "Reductions, reductions inside expressions, cumulative sums", ["case"],
        [Metric("time", "nd", {NP: "numpy", B2: "b2", "dask": "dask"})])],
    "bench_ndarray": [
        Table("ndarray full", "asarray and full reads (float64, sin + noise)",
              ["cparams", "nbytes"],
              [Metric("asarray", "nd_asarray", {B2: "b2_asarray"}),
               Metric("read [:]", "nd_read", {B2: "b2_read", "np.copy": "npcopy",
                                              "memcpy": "memcpy"}),
               Metric("cratio", "nd_cratio", {B2: "b2_cratio"}, "x", True)], {"part": "full"}),
        Table("ndarray slices mem", "Slices in memory", ["layout", "cparams", "case"],
              [Metric("in memory", "times.nd-mem", {B2: "times.b2-mem"})], {"part": "slice"}),
        Table("ndarray slices file", "Slices of files", ["layout", "cparams", "case"],
              [Metric("on disk", "times.nd-disk", {B2: "times.b2-disk", "zarr": "times.zarr",
                                                   "h5py": "times.h5py"}),
               Metric("mmap", "times.nd-mmap", {B2: "times.b2-disk"})], {"part": "slice"})],
    "bench_indexing": [Table(
        "indexing", "Fancy indexing", ["case"],
        [Metric("time", "ms.ndpack", {NP: "ms.numpy", B2: "ms.blosc2", "zarr": "ms.zarr",
                                      "h5py": "ms.h5py"}, scale=1.0)])],
    "bench_shape": [Table(
        "shape", "Shape operations", ["case"],
        [Metric("time", "ms.ndpack", {NP: "ms.numpy", B2: "ms.blosc2",
                                      "python-blosc2 (same cparams)": "ms.blosc2-cp"},
                scale=1.0)])],
    "bench_linalg": [
        Table("tensordot", "tensordot of two (n, n, n) arrays (ndpack on .b2nd files)",
              ["axes"],
              [Metric("time", "nd_s", {NP: "numpy_s", "ndpack over h5py": "nd_h5_s",
                                       B2: "b2_s", "dask over h5py": "dask_s"}),
               Metric("peak RSS growth", "nd_rss", {NP: "numpy_rss", B2: "b2_rss",
                                                   "dask": "dask_rss"}, "MB", floor=4e6)],
              {"kind": "tensordot"}),
        Table("tensordot foreign", "evaluate('tensordot(a, b, axes=...)') over zarr and "
              "h5py operands", ["source", "axes"],
              [Metric("time", "nd_s", {B2: "b2_s"}),
               Metric("CPU time", "nd_cpu_s", {B2: "b2_cpu_s"}),
               Metric("peak RSS growth", "nd_rss", {B2: "b2_rss"}, "MB", floor=4e6)],
              {"kind": "tensordot foreign"}),
        Table("matmul", "matmul of two (m, m) arrays compressed in memory", ["m"],
              [Metric("time", "nd_s", {NP: "numpy_s", B2: "b2_s"})], {"kind": "matmul"})],
    "bench_stores": [
        Table("stores time", "Hierarchical stores: create, list, read, slice", ["case"],
              [Metric("time", "ndpack b2z", {"ndpack .b2d": "ndpack b2d",
                                             "python-blosc2 .b2z": "blosc2 b2z",
                                             "h5py": "h5py", "zarr": "zarr"})],
              pivot=("peer", ["create", "list", "read", "slice"])),
        Table("stores size", "Hierarchical stores: file size", ["case"],
              [Metric("size", "ndpack b2z", {"ndpack .b2d": "ndpack b2d",
                                             "python-blosc2 .b2z": "blosc2 b2z",
                                             "h5py": "h5py", "zarr": "zarr"}, "MB")],
              pivot=("peer", ["size"]))],
    "bench_foreign": [Table(
        "foreign", "HDF5 and Zarr as homes: evaluate into them, read operands from them",
        ["direction", "target"],
        [Metric("time", "nd_s", {B2: "b2_s", "dask": "dask_s", "h5py/zarr + NumPy": "own_s",
                                 "ndpack on .b2nd": "native_s"})])],
    "bench_dask": [Table(
        "dask", "dask backend (ndpack's own engine vs its dask schedulers vs dask over zarr)",
        ["expression", "shape", "chunks"],
        [Metric("time", "local_s", {"ndpack on dask threads": "threads_s",
                                    "ndpack on a LocalCluster": "cluster_s",
                                    "dask + zarr": "zarr_s"})])],
}


# -- rows ---------------------------------------------------------------------------------

def flatten(row: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[prefix + str(k)] = v
    return out


def _number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        else None


def ratio(metric: Metric, ours, peer):
    """> 1: ndpack better.  None when a value is missing or zero."""
    ours, peer = _number(ours), _number(peer)
    if ours is None or peer is None:
        return None
    ours, peer = max(ours, metric.floor), max(peer, metric.floor)
    if not ours or not peer:
        return None
    return ours / peer if metric.higher_is_better else peer / ours


def _show(metric: Metric, v) -> str:
    v = _number(v)
    if v is None:
        return ""
    v = metric.shown(v)
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _label(row: dict, cols) -> str:
    parts = []
    for c in cols:
        v = row.get(c)
        if v is None:
            continue
        if c == "nbytes" and _number(v):
            v = f"{v / 1e6:.0f} MB"
        elif isinstance(v, list):
            v = "(" + ", ".join(map(str, v)) + ")"
        parts.append(str(v))
    return " ".join(parts)


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def build_tables(name: str, rows: list) -> tuple[list, list]:
    """``([(Table, [flat rows], {(metric, peer): [ratios]})], rows no table shows)`` for
    one benchmark."""
    flat = [flatten(r) for r in rows if isinstance(r, dict)]
    out, shown = [], set()
    for t in SPECS.get(name, []):
        mine = [r for r in flat if all(r.get(k) == v for k, v in t.where.items())]
        if any(_number(r.get(m.ours)) is not None for r in mine for m in t.metrics) or \
                (t.pivot and mine):
            shown.update(id(r) for r in mine)
        if t.pivot:
            by, cols = t.pivot
            mine = [{"case": c, **{r[by]: r.get(c) for r in mine if by in r}} for c in cols
                    if any(c in r for r in mine)]
        if not mine:
            continue
        metrics = [m for m in t.metrics if any(_number(r.get(m.ours)) is not None for r in mine)]
        if not metrics:
            continue
        t = replace(t, metrics=[replace(m, peers={p: c for p, c in m.peers.items()
                                                  if any(c in r for r in mine)})
                                for m in metrics])
        ratios = {(m.name, p): [ratio(m, r.get(m.ours), r.get(c)) for r in mine]
                  for m in t.metrics for p, c in m.peers.items()}
        out.append((t, mine, ratios))
    return out, [r for r in flat if id(r) not in shown]


def table_markdown(t: Table, rows: list, ratios: dict) -> str:
    head = ["case"]
    for m in t.metrics:
        head.append(f"{m.name}: ndpack {m.unit}")
        head += [f"{p} {m.unit}" for p in m.peers]
        head += [f"vs {p}" for p in m.peers]
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |",
             "|" + "---|" * len(head)]
    for i, r in enumerate(rows):
        cells = [_label(r, t.label)]
        for m in t.metrics:
            cells.append(_show(m, r.get(m.ours)))
            cells += [_show(m, r.get(c)) for c in m.peers.values()]
            for p in m.peers:
                x = ratios[(m.name, p)][i]
                cells.append("" if x is None else f"{x:.2f}x")
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def plain_markdown(rows: list) -> str:
    """Any list of dict rows as a table (benchmarks without a spec)."""
    flat = [flatten(r) for r in rows if isinstance(r, dict)]
    cols = list(dict.fromkeys(k for r in flat for k in r))
    if not cols:
        return "(no rows)"

    def show(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)
    lines = ["| " + " | ".join(_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(show(r.get(c))) for c in cols) + " |" for r in flat]
    return "\n".join(lines)


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# -- plots --------------------------------------------------------------------------------

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _log_x(ax):
    from matplotlib.ticker import FuncFormatter, NullFormatter
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(1, color="k", lw=0.8)


def plot_table(t: Table, rows: list, ratios: dict, path) -> bool:
    """Horizontal bars: one panel per metric, one bar per (row, peer), log scale, line at 1."""
    panels = [m for m in t.metrics if m.peers]
    if not panels:
        return False
    plt = _plt()
    labels = [_label(r, t.label) for r in rows]
    height = 0.9 + 0.22 * len(rows) * max(1, max(len(m.peers) for m in panels)) ** 0.5
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 2.2, height),
                             sharey=True, squeeze=False)
    for ax, m in zip(axes[0], panels):
        n = len(m.peers)
        w = 0.8 / n
        for j, p in enumerate(m.peers):
            vals = [x if x else float("nan") for x in ratios[(m.name, p)]]
            ax.barh([i - 0.4 + w * (j + 0.5) for i in range(len(rows))], vals, w, label=p)
        _log_x(ax)
        ax.set_title(m.name, fontsize=9)
        ax.set_xlabel("ndpack vs peer (> 1: ndpack better)", fontsize=8)
        ax.legend(fontsize=7, loc="best")
        ax.tick_params(labelsize=7)
    axes[0][0].set_yticks(range(len(rows)), labels)
    axes[0][0].invert_yaxis()
    fig.suptitle(t.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return True


def plot_summary(summary: list, path) -> bool:
    """Geometric-mean ratio of every (benchmark table, metric, peer)."""
    if not summary:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.24 * len(summary)))
    labels = [f"{s['table']}: {s['metric']} vs {s['peer']}" for s in summary]
    vals = [s["geomean"] for s in summary]
    colors = ["tab:green" if v >= 1 else "tab:red" for v in vals]
    ax.barh(range(len(vals)), vals, color=colors)
    _log_x(ax)
    ax.set_yticks(range(len(vals)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("geometric mean of ndpack vs peer (> 1: ndpack better)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return True


# -- the report ---------------------------------------------------------------------------

def write_report(results: pathlib.Path, image_dir: pathlib.Path | None = None,
                 image_prefix: str = "", md_path: pathlib.Path | None = None,
                 intro: str = "") -> pathlib.Path:
    """Write ``report.md`` (or `md_path`) and its PNGs (in `image_dir`, linked as
    `image_prefix` + name) from ``run.json``, ``<bench>.json`` and ``<bench>.txt`` in
    `results`.  Returns the Markdown file's path."""
    results = pathlib.Path(results)
    image_dir = pathlib.Path(image_dir or results)
    image_dir.mkdir(parents=True, exist_ok=True)
    md_path = pathlib.Path(md_path or results / "report.md")
    run = json.loads((results / "run.json").read_text()) if (results / "run.json").exists() \
        else {"benchmarks": [{"name": p.stem} for p in sorted(results.glob("bench_*.json"))]}

    sections, summary = [], []
    for b in run["benchmarks"]:
        name = b["name"]
        jpath, tpath = results / f"{name}.json", results / f"{name}.txt"
        head = f"## {name}\n"
        if "seconds" in b:
            head += (f"\n`{' '.join(b.get('command', []))}`: {b['seconds']:.0f} s, "
                     + ("ok" if b.get("returncode") == 0 else
                        f"**failed** (exit status {b.get('returncode')})") + "\n")
        body = []
        if b.get("returncode", 0) != 0:
            tail = tpath.read_text(errors="replace").splitlines()[-15:] if tpath.exists() else []
            body.append("```text\n" + "\n".join(tail) + "\n```")
        elif jpath.exists():
            rows = json.loads(jpath.read_text())
            tables, others = build_tables(name, rows)
            for k, (t, trows, ratios) in enumerate(tables):
                png = f"{name}_{k}.png"
                body.append(f"### {t.title}")
                if plot_table(t, trows, ratios, image_dir / png):
                    body.append(f"![{t.title}]({image_prefix}{png})")
                body.append(table_markdown(t, trows, ratios))
                for m in t.metrics:
                    for p in m.peers:
                        g = geomean(ratios[(m.name, p)])
                        if g:
                            summary.append({"bench": name, "table": t.short, "title": t.title,
                                            "metric": m.name, "peer": p, "geomean": g,
                                            "n": sum(1 for x in ratios[(m.name, p)] if x)})
            if others:
                body.append(("Rows that no table of `benchmarks/report.py` describes"
                             if tables else "No table spec for this benchmark in "
                             "`benchmarks/report.py`") + "; as written:\n\n"
                            + plain_markdown(others))
        elif tpath.exists():
            body.append("This benchmark has no `--json` option; its printed output:\n\n"
                        "```text\n" + tpath.read_text(errors="replace").strip() + "\n```")
        sections.append(head + "\n" + "\n\n".join(body) + "\n")

    lines = ["# Benchmark report" if not intro else intro.rstrip(), ""]
    if run.get("date"):
        lines += [(f"Run {run['date']} in {run.get('mode', '?')} mode on "
                   f"{run.get('machine', '?')}; {run.get('versions', '')}."), ""]
    lines += [("Ratios are ndpack's speed relative to each peer -- peer time / ndpack time "
               "(memory growth: peer / ndpack, both counted as at least 4 MB; GB/s and "
               "compression ratios: ndpack / peer) -- so **> 1 means ndpack is better**. "
               "Times are best-of-N wall times on a shared machine: indicative, not precise."),
              ""]
    if summary:
        lines += ["## Summary", "",
                  "Geometric mean of the ratios of each table (n = number of cases).", ""]
        if plot_summary(summary, image_dir / "summary.png"):
            lines += [f"![summary]({image_prefix}summary.png)", ""]
        lines += ["| benchmark | table | metric | peer | n | geometric mean |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {s['bench']} | {_cell(s['title'])} | {_cell(s['metric'])} | "
                  f"{s['peer']} | {s['n']} | {s['geomean']:.2f}x |" for s in summary]
        lines.append("")
    lines += sections
    md_path.write_text("\n".join(lines).rstrip() + "\n")
    (results / "summary.json").write_text(json.dumps(summary, indent=1))
    return md_path


DOCS_INTRO = """# Performance

This page is generated: `python benchmarks/run_all.py --quick --docs` runs every
`benchmarks/bench_*.py`, then writes the tables and plots below (and
`benchmarks/results/report.md`, which is not committed). The committed copy comes from a
`--quick` run (small sizes, few repetitions) on a shared 2-core VM, so the numbers are
indicative; `python benchmarks/run_all.py` without `--quick` runs the full sizes (much
longer). What each benchmark measures, and at which sizes, is in the docstring at the
top of its file.
"""


def write_docs(results: pathlib.Path, docs: pathlib.Path = REPO / "docs") -> pathlib.Path:
    """docs/performance.md and docs/performance/*.png from the results in `results`."""
    img = docs / "performance"
    if img.exists():
        for old in img.glob("*.png"):
            old.unlink()
    return write_report(results, image_dir=img, image_prefix="performance/",
                        md_path=docs / "performance.md", intro=DOCS_INTRO)


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", default=str(REPO / "benchmarks" / "results"))
    ap.add_argument("--docs", action="store_true",
                    help="also write docs/performance.md and docs/performance/*.png")
    args = ap.parse_args(argv)
    path = write_report(pathlib.Path(args.results))
    print(f"wrote {os.path.relpath(path)}")
    if args.docs:
        print(f"wrote {os.path.relpath(write_docs(pathlib.Path(args.results)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
