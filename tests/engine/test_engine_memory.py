"""Bounded memory: an expression over 3 GB of on-disk operands keeps its peak RSS small."""

import subprocess
import sys
import textwrap


def test_peak_rss_over_3gb_of_operands(tmp_path):
    script = textwrap.dedent(f"""
        import numpy as np, ndpack

        def hwm_mb():          # VmHWM: ru_maxrss would carry the parent's peak across exec
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
        n = 125_000_000                       # 1 GB of float64 per operand
        kw = dict(chunks=(4_000_000,), blocks=(250_000,), mode="w",
                  cparams={{"codec": ndpack.Codec.LZ4, "clevel": 1}})
        a = ndpack.linspace(0, 1, n, urlpath=r"{tmp_path}/a.b2nd", **kw)
        b = ndpack.linspace(1, 2, n, urlpath=r"{tmp_path}/b.b2nd", **kw)
        c = ndpack.linspace(2, 3, n, urlpath=r"{tmp_path}/c.b2nd", **kw)
        before = hwm_mb()
        e = ndpack.lazyexpr("a + b * c", operands={{"a": a, "b": b, "c": c}})
        r = e.compute(urlpath=r"{tmp_path}/r.b2nd", cparams={{"codec": ndpack.Codec.LZ4, "clevel": 1}})
        peak = hwm_mb()
        i = np.arange(n - 5, n) / (n - 1)
        x = i + (1 + i) * (2 + i)
        assert np.allclose(r[-5:], x) and np.allclose(r[:3], [2.0, 2.0, 2.0], atol=1e-6)
        print(before, peak)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    before_mb, peak_mb = map(int, out.stdout.split())
    assert peak_mb < 500, f"peak RSS {peak_mb} MB over 3 GB of operands (before: {before_mb} MB)"


def test_reductions_over_3gb_on_disk_stay_under_300mb(tmp_path):
    script = textwrap.dedent(f"""
        import numpy as np, ndpack

        def hwm_mb():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
        shape = (25_000, 15_000)                  # 3.0 GB of float64, default chunks
        a = ndpack.linspace(0, 1, 375_000_000, shape=shape, urlpath=r"{tmp_path}/a.b2nd",
                            mode="w", cparams={{"codec": ndpack.Codec.LZ4, "clevel": 1}})
        del a
        a = ndpack.open(r"{tmp_path}/a.b2nd")
        before = hwm_mb()
        s0 = ndpack.sum(a, axis=0)
        s1 = ndpack.mean(a, axis=1)
        mx = ndpack.max(a)
        peak = hwm_mb()
        n, step = 375_000_000, 1 / (375_000_000 - 1)
        rows = np.arange(shape[0])[:, None] * shape[1]
        # column j: sum over rows of (i * 15000 + j) * step
        want0 = (rows.sum() + shape[0] * np.arange(shape[1])) * step
        want1 = (np.arange(shape[0]) * shape[1] + (shape[1] - 1) / 2) * step
        assert np.allclose(s0, want0, rtol=1e-9) and np.allclose(s1, want1, rtol=1e-9)
        assert mx == 1.0
        print(before, peak, a.chunks)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr
    before_mb, peak_mb = map(int, out.stdout.split()[:2])
    assert peak_mb < 300, f"peak RSS {peak_mb} MB reducing 3 GB on disk (before {before_mb} MB)"
