"""Vectorized float64 math (ndpack.vmath) against NumPy and numexpr, and an expression
of transcendental functions against python-blosc2 (issue 40).

* kernels: ns per element of each function on 64 Ki float64 in cache, one thread:
  ndpack.vmath (the C core's kernels at the ISA shown), NumPy's ufunc with ``out=``
  and numexpr (one thread); power is ``x ** 1.2`` -- best of the rounds, thread CPU time (the machine may be
  shared; wall time moves with the other tenants) -- with the ratios NumPy/ours and
  numexpr/ours.
* expression: ``sin(a)**2 + cos(b)*exp(c) + arctan2(a, b)`` over 3 x (4000, 4000)
  float64 in memory (``--quick``: 1000), LZ4 clevel 5 + shuffle in both libraries, on
  linspace-derived and on random data: ``[()]`` and ``compute()`` (same cparams) of
  ndpack with its chosen kernels, of ndpack with NumPy's (``NDPACK_VMATH=numpy``) and of
  python-blosc2, best wall time and the ratios python-blosc2 time / ndpack time.

    python benchmarks/bench_vmath.py [--quick] [--section kernels|expression] [--json F]
"""

from __future__ import annotations

import argparse
import os
import time

import numexpr
import numpy as np

import ndpack
from ndpack import vmath
from timing import best, best_times, write_json

try:
    import blosc2
except ImportError:
    blosc2 = None

EXPRESSION = "sin(a)**2 + cos(b)*exp(c) + arctan2(a, b)"
# sample ranges per function (in the domain, typical magnitudes)
RANGES = {"log": (0.01, 100.0), "log1p": (-0.5, 100.0), "arctan": (-20.0, 20.0),
          "tan": (-1.5, 1.5), "sin": (-20.0, 20.0), "cos": (-20.0, 20.0),
          "sinh": (-20.0, 20.0), "cosh": (-20.0, 20.0)}


def host() -> str:
    """The vmath part of the host (timing.py prints the CPU line on import)."""
    return (f"vmath ISA {vmath.isa()} (available: {', '.join(ndpack._core.vmath_isas())}); "
            f"NumPy {np.__version__}, numexpr {numexpr.__version__}")


def kernels(n: int, reps: int, rows: list) -> None:
    print(f"\n[kernels] ns per element, {n} float64 in cache, one thread, thread CPU time "
          f"best of {reps}")
    print(f"{'function':<10}{'ours':>8}{'numpy':>8}{'numexpr':>9}   numpy/ours numexpr/ours"
          f"   engine uses")
    rng = np.random.default_rng(0)
    old = numexpr.set_num_threads(1)
    try:
        for name in vmath.NAMES:
            lo, hi = RANGES.get(name, (-3.0, 3.0))
            args = [rng.uniform(lo, hi, n) for _ in range(2 if name == "arctan2" else 1)]
            names = dict(zip("xy", args))
            text = f"{name}({', '.join(names)})"
            if name == "power":                   # x ** 1.2, the engine's case
                args = [rng.uniform(0.1, 10.0, n), 1.2]
                names, text = {"x": args[0]}, "x ** 1.2"
            out = np.empty(n)
            ours, ref = getattr(vmath, name), getattr(np, name)
            fns = [lambda: ours(*args, out=out), lambda: ref(*args, out=out),
                   lambda: numexpr.evaluate(text, local_dict=names, out=out)]
            with np.errstate(all="ignore"):
                for fn in fns:
                    fn()
                t = [best(fn, reps, time.thread_time) / n * 1e9 for fn in fns]
            print(f"{name:<10}{t[0]:>8.2f}{t[1]:>8.2f}{t[2]:>9.2f}   {t[1] / t[0]:>9.2f}x "
                  f"{t[2] / t[0]:>10.2f}x   {vmath.implementation(name)}")
            rows.append(dict(section="kernels", function=name, n=n, ours_ns=t[0],
                             numpy_ns=t[1], numexpr_ns=t[2], isa=vmath.isa(),
                             engine=vmath.implementation(name)))
    finally:
        numexpr.set_num_threads(old)


def data(kind: str, shape):
    rng = np.random.default_rng(1)
    if kind == "linspace":
        x = np.linspace(0, 20, int(np.prod(shape))).reshape(shape)
        return {"a": np.sin(x) + rng.normal(0, 1e-3, shape), "b": np.cos(x) + 1.5,
                "c": x / 20 + rng.normal(0, 1e-3, shape)}
    return {k: rng.uniform(-3, 3, shape) for k in "abc"}


def _with_env(value, fn):
    """fn() with NDPACK_VMATH=value for the programs it compiles."""
    old = os.environ.get("NDPACK_VMATH")
    os.environ["NDPACK_VMATH"] = value
    try:
        return fn()
    finally:
        if old is None:
            del os.environ["NDPACK_VMATH"]
        else:
            os.environ["NDPACK_VMATH"] = old


def expression(n: int, reps: int, rows: list) -> None:
    shape = (n, n)
    cp_nd = {"codec": ndpack.Codec.LZ4, "clevel": 5}
    print(f"\n[expression] {EXPRESSION} over 3 x {shape} float64 in memory, LZ4 clevel 5 + "
          f"shuffle, best wall time of {reps} (ms); nd = ndpack with its chosen kernels, "
          f"nd-np = ndpack with NumPy's (NDPACK_VMATH=numpy), b2 = python-blosc2")
    print(f"{'data':<10}{'nd [()]':>9}{'nd comp':>9}{'nd-np []':>9}{'nd-np cp':>9}"
          f"{'b2 [()]':>9}{'b2 comp':>9}   b2/nd [()] comp | nd-np/nd [()] comp")
    for kind in ("linspace", "random"):
        raw = data(kind, shape)
        nd_ops = {k: ndpack.asarray(v, cparams=cp_nd) for k, v in raw.items()}
        e = ndpack.lazyexpr(EXPRESSION, operands=nd_ops)
        e_np = _with_env("numpy", lambda: ndpack.lazyexpr(EXPRESSION, operands=nd_ops))
        # compile the numpy-kernel expression's programs now, under the override
        _with_env("numpy", lambda: (e_np[()], e_np.compute(cparams=cp_nd)))
        fns = [lambda: e[()], lambda: e.compute(cparams=cp_nd),
               lambda: e_np[()], lambda: e_np.compute(cparams=cp_nd)]
        if blosc2 is not None:
            cp_b2 = {"codec": blosc2.Codec.LZ4, "clevel": 5}
            b2_ops = {k: blosc2.asarray(v, cparams=cp_b2) for k, v in raw.items()}
            e2 = blosc2.lazyexpr(EXPRESSION, operands=b2_ops)
            fns += [lambda: e2[()], lambda: e2.compute(cparams=cp_b2)]
        want = np.sin(raw["a"])**2 + np.cos(raw["b"]) * np.exp(raw["c"]) + \
            np.arctan2(raw["a"], raw["b"])
        np.testing.assert_allclose(e[()], want, rtol=1e-13, atol=1e-13)
        t = best_times(fns, reps, budget=120)
        t += [float("nan")] * (6 - len(t))
        print(f"{kind:<10}" + "".join(f"{v * 1e3:>9.0f}" for v in t) +
              f"   {t[4] / t[0]:>5.2f}x {t[5] / t[1]:>5.2f}x | {t[2] / t[0]:>5.2f}x "
              f"{t[3] / t[1]:>5.2f}x")
        rows.append(dict(section="expression", data=kind, shape=list(shape),
                         nd_get=t[0], nd_compute=t[1], nd_numpy_get=t[2],
                         nd_numpy_compute=t[3], b2_get=t[4], b2_compute=t[5]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--section", choices=["kernels", "expression"], action="append")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    sections = args.section or ["kernels", "expression"]
    print(host())
    print("engine choice: " + ", ".join(f"{n} {vmath.implementation(n)}"
                                        for n in vmath.NAMES))
    rows: list = []
    if "kernels" in sections:
        kernels(65536, 20 if args.quick else 200, rows)
    if "expression" in sections:
        expression(1000 if args.quick else 4000, 2 if args.quick else 5, rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
