"""Lazy expressions over compressed operands: ndpack vs NumPy, numexpr and python-blosc2.

Operands: three (4000, 4000) float64 arrays (sin/cos ramps with noise), compressed with
LZ4 clevel 5 + shuffle, in memory.  For each expression it times

* NumPy and numexpr on the decompressed NumPy arrays (the baselines),
* ``lazyexpr(...)[()]`` (result as NumPy) and ``lazyexpr(...).compute()`` (result as a
  compressed array, same cparams) for ndpack and python-blosc2,

best of N, in one process, and prints the times and the ratios to numexpr and
python-blosc2.  ``--quick`` uses (1000, 1000) operands (CI).

    python benchmarks/bench_expr.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse

import numexpr
import numpy as np

import ndpack
from timing import best, write_json

try:
    import blosc2
except ImportError:
    blosc2 = None

EXPRESSIONS = ["a + b + c", "sqrt(a + 2*b + c/2)**1.2",
               "sin(a)**2 + cos(b)*exp(-c) + arctan2(a, b)"]


def operands(n):
    rng = np.random.default_rng(0)
    x = np.linspace(0, 20, n * n).reshape(n, n)
    return {"a": np.sin(x) + rng.normal(0, 1e-3, x.shape),
            "b": np.cos(x) + 1.5,
            "c": x / 20 + rng.normal(0, 1e-3, x.shape)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    n = 1000 if args.quick else 4000
    reps = 3 if args.quick else 5
    raw = operands(n)
    cp_nd = {"codec": ndpack.Codec.LZ4, "clevel": 5}
    nd_ops = {k: ndpack.asarray(v, cparams=cp_nd) for k, v in raw.items()}
    if blosc2 is not None:
        cp_b2 = {"codec": blosc2.Codec.LZ4, "clevel": 5}
        b2_ops = {k: blosc2.asarray(v, cparams=cp_b2) for k, v in raw.items()}
    print(f"operands: 3 x ({n}, {n}) float64, LZ4 clevel 5 + shuffle; chunks "
          f"{nd_ops['a'].chunks}; numexpr {numexpr.__version__} threads "
          f"{numexpr.get_num_threads()}")
    rows = []
    hdr = (f"{'expression':<44}{'numpy':>8}{'numexpr':>9}{'nd [()]':>9}{'nd comp':>9}"
           f"{'b2 [()]':>9}{'b2 comp':>9}  ratios to numexpr nd [()] / comp | vs b2")
    print(hdr)
    for text in EXPRESSIONS:
        np_text = (text.replace("sqrt", "np.sqrt").replace("sin", "np.sin").replace("cos", "np.cos")
                   .replace("exp", "np.exp").replace("arctan2", "np.arctan2"))
        t = {"numpy": best(lambda: eval(np_text, {"np": np}, raw), reps),   # our own text
             "numexpr": best(lambda: numexpr.evaluate(text, local_dict=raw), reps)}
        e = ndpack.lazyexpr(text, operands=nd_ops)
        t["nd_get"] = best(lambda: e[()], reps)
        t["nd_compute"] = best(lambda: e.compute(cparams=cp_nd), reps)
        np.testing.assert_allclose(e[()], numexpr.evaluate(text, local_dict=raw), rtol=1e-12)
        if blosc2 is not None:
            e2 = blosc2.lazyexpr(text, operands=b2_ops)
            t["b2_get"] = best(lambda: e2[()], reps)
            t["b2_compute"] = best(lambda: e2.compute(cparams=cp_b2), reps)
        else:
            t["b2_get"] = t["b2_compute"] = float("nan")
        ms = {k: v * 1e3 for k, v in t.items()}
        print(f"{text:<44}{ms['numpy']:>8.0f}{ms['numexpr']:>9.0f}{ms['nd_get']:>9.0f}"
              f"{ms['nd_compute']:>9.0f}{ms['b2_get']:>9.0f}{ms['b2_compute']:>9.0f}  "
              f"{t['nd_get'] / t['numexpr']:>5.2f}x / {t['nd_compute'] / t['numexpr']:>5.2f}x | "
              f"{t['b2_get'] / t['nd_get']:>5.2f}x / {t['b2_compute'] / t['nd_compute']:>5.2f}x faster")
        rows.append(dict(expression=text, **t))
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
