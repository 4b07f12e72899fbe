"""Run every benchmark and write a report: tables, ratios and plots against the peers.

    python benchmarks/run_all.py --quick          # CI sizes (a few minutes)
    python benchmarks/run_all.py                  # full sizes (half an hour or more)
    python -m benchmarks.run_all --quick          # the same, from the repository root
    python benchmarks/run_all.py --quick --docs   # also regenerate docs/performance.md
    python benchmarks/run_all.py --report-only    # rebuild the report from the results

Each ``benchmarks/bench_*.py`` runs in its own process, one after the other (they time
themselves; running two at once would skew both), from the repository root, with
``--quick`` when asked and ``--json benchmarks/results/<name>.json`` when the script has a
``--json`` option.  Its output goes to ``benchmarks/results/<name>.txt``.  Then
``benchmarks/report.py`` writes ``benchmarks/results/report.md`` and the PNG plots next to
it.  The exit status is 1 when a benchmark failed or timed out (the report still lists
the others and the failure's last lines).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_OUT = HERE / "results"
PEERS = ("numpy", "numexpr", "blosc2", "zarr", "h5py", "dask")


def _report_module():
    """benchmarks/report.py, whether this file runs as a script or as a module."""
    spec = importlib.util.spec_from_file_location("ndpack_bench_report", HERE / "report.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # dataclasses look the module up by name
    spec.loader.exec_module(mod)
    return mod


def discover(only=(), skip=()) -> list[pathlib.Path]:
    scripts = sorted(HERE.glob("bench_*.py"))
    names = {p.stem for p in scripts}
    unknown = [n for n in (*only, *skip) if n not in names and f"bench_{n}" not in names]
    if unknown:
        raise SystemExit(f"run_all: no benchmark named {', '.join(unknown)} "
                         f"(have: {', '.join(sorted(names))})")

    def match(p, names):
        return p.stem in names or p.stem.removeprefix("bench_") in names
    return [p for p in scripts if (not only or match(p, only)) and not match(p, skip)]


def has_option(script: pathlib.Path, option: str) -> bool:
    """Whether the script's argparse declares `option` (read from its source, so that
    nothing is imported)."""
    return re.search(r"add_argument\(\s*['\"]" + re.escape(option) + r"['\"]",
                     script.read_text()) is not None


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{cpu}, {os.cpu_count()} cores{load}, Python {platform.python_version()}"


def versions() -> str:
    out = []
    for name in ("ndpack",) + PEERS:
        try:
            mod = __import__(name)
            out.append(f"{'python-blosc2' if name == 'blosc2' else name} "
                       f"{getattr(mod, '__version__', '?')}")
        except ImportError:                 # a missing peer: its columns stay empty
            out.append(f"{name} absent")
    return ", ".join(out)


def run_one(script: pathlib.Path, out: pathlib.Path, quick: bool, timeout: float) -> dict:
    name = script.stem
    cmd = [sys.executable, os.path.relpath(script, REPO)]
    if quick:
        cmd.append("--quick")
    json_path = out / f"{name}.json"
    txt_path = out / f"{name}.txt"
    for stale in (json_path, txt_path):
        stale.unlink(missing_ok=True)
    if has_option(script, "--json"):
        cmd += ["--json", os.path.relpath(json_path, REPO)]
    env = dict(os.environ, MPLBACKEND="Agg")
    print(f"== {' '.join(cmd)}", flush=True)
    t0 = time.perf_counter()
    with open(txt_path, "w") as log:
        try:
            rc = subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                timeout=timeout, check=False).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
            log.write(f"\nrun_all: stopped after {timeout:.0f} s (--timeout)\n")
    dt = time.perf_counter() - t0
    status = "ok" if rc == 0 else f"FAILED ({rc})"
    shown = os.path.relpath(json_path if json_path.exists() else txt_path)
    print(f"   {status} in {dt:.0f} s -> {shown}", flush=True)
    return {"name": name, "command": ["python", *cmd[1:]], "returncode": rc, "seconds": dt,
            "json": json_path.exists()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, each script's --quick")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only this benchmark (bench_expr or expr; repeatable)")
    ap.add_argument("--skip", action="append", default=[], metavar="NAME",
                    help="do not run this benchmark (repeatable)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="results directory")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per benchmark (default 600 with --quick, none otherwise)")
    ap.add_argument("--docs", action="store_true",
                    help="also write docs/performance.md and docs/performance/*.png")
    ap.add_argument("--report-only", action="store_true",
                    help="do not run anything; rebuild the report from --out")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    report = _report_module()

    failed = []
    if not args.report_only:
        timeout = args.timeout or (600.0 if args.quick else None)
        run = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "mode": "quick" if args.quick else "full", "machine": machine(),
               "versions": versions(), "benchmarks": []}
        t0 = time.perf_counter()
        for script in discover(args.only, args.skip):
            res = run_one(script, out, args.quick, timeout)
            run["benchmarks"].append(res)
            if res["returncode"] != 0:
                failed.append(res["name"])
        run["seconds"] = time.perf_counter() - t0
        (out / "run.json").write_text(json.dumps(run, indent=1))
        print(f"== {len(run['benchmarks'])} benchmarks in {run['seconds']:.0f} s"
              + (f"; failed: {', '.join(failed)}" if failed else ""))
    elif not (out / "run.json").exists():
        raise SystemExit(f"run_all: nothing to report in {out} (no run.json)")

    path = report.write_report(out)
    print(f"report: {os.path.relpath(path)}")
    if args.docs:
        print(f"docs:   {os.path.relpath(report.write_docs(out))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
