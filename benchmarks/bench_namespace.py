"""The array API namespace form of an expression vs its string form and the peers.

``ndpack.sin(a)**2 + ndpack.cos(b)*ndpack.exp(-c)`` builds the same lazy tree as
``lazyexpr("sin(a)**2 + cos(b)*exp(-c)")``; this checks that building it through the
namespace costs nothing measurable (target: within 5% of the string form), and puts
both beside numexpr on the decompressed arrays and python-blosc2's namespace form
(``blosc2.sin(a)**2 + ...``), best of N, peers interleaved in one process:

* ``memory``: three (4000, 4000) float64 operands compressed in memory (LZ4 clevel 5 +
  shuffle), result as NumPy (``[()]``) and compressed (``compute()``);
* ``disk``: the same in .b2nd files (ZSTD clevel 1 + shuffle), ``[()]`` and
  ``compute(urlpath=)``.

Ratios: namespace / string (1.00 = the same), b2 / nd (> 1: ndpack faster),
nd / numexpr.  On a loaded machine the wall-clock ratio of the two forms is noise (and
the first call of a round follows numexpr's spinning threads), so each section also
prints ``cpu ns/str``: the process CPU time (all threads) of the two forms' ``[()]``,
run alternately, best and median of the rounds.  ``--quick`` shrinks the sizes (CI).

    python benchmarks/bench_namespace.py [--quick] [--json f]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numexpr
import numpy as np

import ndpack
from timing import best_times, write_json

try:
    import blosc2
except ImportError:
    blosc2 = None

TEXT = "sin(a)**2 + cos(b)*exp(-c)"


def operands(shape):
    rng = np.random.default_rng(0)
    x = np.linspace(0, 20, int(np.prod(shape))).reshape(shape)
    return {"a": np.sin(x) + rng.normal(0, 1e-3, shape), "b": np.cos(x) + 1.5,
            "c": x / 20 + rng.normal(0, 1e-3, shape)}


def namespace_form(xp, ops):
    a, b, c = ops["a"], ops["b"], ops["c"]
    return xp.sin(a) ** 2 + xp.cos(b) * xp.exp(-c)


def _table(section, raw, nd_ops, b2_ops, reps, rows, compute_kw, b2_compute_kw):
    ns = namespace_form(ndpack, nd_ops)
    st = ndpack.lazyexpr(TEXT, operands=nd_ops)
    want = numexpr.evaluate(TEXT, local_dict=raw)
    np.testing.assert_allclose(ns[()], want, rtol=1e-12, atol=1e-14)
    assert np.array_equal(ns[()], st[()])                 # one tree, identical bits
    # numexpr runs last in each round: the threads it leaves spinning slow down whatever
    # runs right after it (measured: the first ndpack call after it, 15% slower)
    fns = {"nd_ns_get": lambda: namespace_form(ndpack, nd_ops)[()],
           "nd_str_get": lambda: ndpack.lazyexpr(TEXT, operands=nd_ops)[()],
           "nd_ns_compute": lambda: namespace_form(ndpack, nd_ops).compute(**compute_kw),
           "nd_str_compute": lambda: ndpack.lazyexpr(TEXT, operands=nd_ops).compute(
               **compute_kw)}
    if b2_ops is not None:
        fns["b2_ns_get"] = lambda: namespace_form(blosc2, b2_ops)[()]
        fns["b2_ns_compute"] = lambda: namespace_form(blosc2, b2_ops).compute(**b2_compute_kw)
    fns["numexpr"] = lambda: numexpr.evaluate(TEXT, local_dict=raw)
    times = dict(zip(fns, best_times(list(fns.values()), reps, budget=60)))
    t = {k: times.get(k, float("nan")) for k in (
        "numexpr", "nd_ns_get", "nd_str_get", "nd_ns_compute", "nd_str_compute",
        "b2_ns_get", "b2_ns_compute")}
    print(f"{section:<8}" + "".join(f"{v * 1e3:>9.1f}" for v in t.values()) +
          f"   {t['nd_ns_get'] / t['nd_str_get']:>5.2f} {t['nd_ns_compute'] / t['nd_str_compute']:>5.2f}"
          f" | {t['b2_ns_get'] / t['nd_ns_get']:>5.2f} {t['b2_ns_compute'] / t['nd_ns_compute']:>5.2f}"
          f" | {t['nd_ns_get'] / t['numexpr']:>5.2f}")
    cpu = _cpu_times(fns["nd_ns_get"], fns["nd_str_get"], max(reps, 6))
    print(f"{'':<8}cpu ns/str [] best {cpu[0]:.3f}, median {cpu[1]:.3f}")
    rows.append(dict(section=section, expression=TEXT, cpu_ns_over_str=cpu, **t))


def _cpu_times(ns, st, rounds):
    """(best, median) of the ratio of process CPU times ns / st, run alternately."""
    times = {ns: [], st: []}
    for r in range(rounds):
        for fn in ((ns, st) if r % 2 else (st, ns)):
            t0 = time.process_time()
            fn()
            times[fn].append(time.process_time() - t0)
    a, b = sorted(times[ns]), sorted(times[st])
    return a[0] / b[0], a[len(a) // 2] / b[len(b) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = 1000 if args.quick else 4000
    reps = args.reps or (3 if args.quick else 7)
    rows = []
    print(f"namespace vs string form of {TEXT}; ms, best of {reps}")
    print(f"{'':<8}{'numexpr':>9}{'nd ns[]':>9}{'nd str[]':>9}{'nd nsC':>9}{'nd strC':>9}"
          f"{'b2 ns[]':>9}{'b2 nsC':>9}   ns/str [] C | b2/nd [] C | nd/numexpr []")
    raw = operands((n, n))
    cp = {"codec": ndpack.Codec.LZ4, "clevel": 5}
    nd_ops = {k: ndpack.asarray(v, cparams=cp) for k, v in raw.items()}
    b2_ops = None
    cp2 = None
    if blosc2 is not None:
        cp2 = {"codec": blosc2.Codec.LZ4, "clevel": 5}
        b2_ops = {k: blosc2.asarray(v, cparams=cp2) for k, v in raw.items()}
    _table("memory", raw, nd_ops, b2_ops, reps, rows, {"cparams": cp}, {"cparams": cp2})
    with tempfile.TemporaryDirectory() as tmp:
        cp = {"codec": ndpack.Codec.ZSTD, "clevel": 1}
        nd_ops, b2_ops = {}, None
        for k, v in raw.items():
            nd_ops[k] = ndpack.asarray(v, cparams=cp, urlpath=os.path.join(tmp, f"{k}.b2nd"),
                                       mode="w")
        if blosc2 is not None:
            cp2 = {"codec": blosc2.Codec.ZSTD, "clevel": 1}
            b2_ops = {k: blosc2.asarray(v, cparams=cp2, urlpath=os.path.join(
                tmp, f"b2{k}.b2nd"), mode="w") for k, v in raw.items()}
        _table("disk", raw, nd_ops, b2_ops, reps, rows,
               {"urlpath": os.path.join(tmp, "out.b2nd"), "cparams": cp},
               {"urlpath": os.path.join(tmp, "b2out.b2nd"), "mode": "w", "cparams": cp2})
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
