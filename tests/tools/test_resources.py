"""ndpack.resources: the one registry of pools, the memory limit and kept buffers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ndpack
from ndpack import resources
from ndpack.engine.run import plan
from ndpack.errors import ParameterError


@pytest.fixture
def limit():
    before = resources.set_memory_limit(None)
    resources.set_memory_limit(before)
    yield
    resources.set_memory_limit(before)


@pytest.mark.parametrize("text, nbytes", [("512M", 512 * 2**20), ("2G", 2 * 2**30),
                                          ("1.5GiB", 3 * 2**29), ("100MB", 10**8),
                                          (" 64 k ", 65536), ("4096", 4096), (123, 123)])
def test_parse_bytes(text, nbytes):
    assert resources.parse_bytes(text) == nbytes


@pytest.mark.parametrize("bad", ["", "lots", "12 parsecs", "-5M", "1e9", None, 1.5j])
def test_parse_bytes_refuses(bad):
    with pytest.raises(ParameterError, match="byte count"):
        resources.parse_bytes(bad)


def test_set_memory_limit(limit):
    old = resources.set_memory_limit("128M")
    assert resources.memory_limit() == 128 * 2**20 == ndpack.memory_limit()
    assert resources.set_memory_limit(old) == 128 * 2**20
    assert resources.memory_limit() == old
    with pytest.raises(ParameterError, match="below"):
        ndpack.set_memory_limit(2**20)
    assert resources.memory_limit() == old          # a refused value changes nothing


def test_limit_from_environment():
    code = "import ndpack; print(ndpack.memory_limit(), ndpack.show_config(file=open(" \
           "'/dev/null', 'w'))['memory']['memory_limit'])"
    env = dict(os.environ, NDPACK_MEMORY="96M")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == [str(96 * 2**20)] * 2
    env["NDPACK_MEMORY"] = "a lot"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True)
    assert res.returncode != 0 and "NDPACK_MEMORY" in res.stderr


def test_default_limit_is_a_share_of_physical_memory():
    code = "import ndpack; print(ndpack.memory_limit())"
    env = {k: v for k, v in os.environ.items() if k != "NDPACK_MEMORY"}
    got = int(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout)
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert got == max(resources.MIN_LIMIT, physical // 4)


def test_kept_buffers_stay_under_the_limit(limit):
    resources.set_memory_limit("64M")
    bufs = [resources.buffers.take(8 * 2**20) for _ in range(4)]
    for b in bufs:
        resources.buffers.give(b)
    assert resources.buffers.idle() <= 16 * 2**20          # a quarter of the limit
    again = resources.buffers.take(8 * 2**20)               # a kept one comes back
    assert any(again is b for b in bufs)
    resources.buffers.give(again)
    resources.set_memory_limit("16M")                        # lowering it trims at once
    assert resources.buffers.idle() <= 4 * 2**20


def test_buffer_pool_reuses_the_smallest_that_fits(limit):
    resources.set_memory_limit("64M")                        # 16 MiB may stay idle
    pool, mb = resources.BufferPool(), 2**20
    a = pool.take(6 * mb)
    pool.give(a)
    assert pool.take(5 * mb) is a                            # the smallest that fits
    b, c = pool.take(8 * mb), pool.take(7 * mb)
    assert b is not a and c is not a
    for buf in (a, b, c):
        pool.give(buf)
    assert pool.idle() <= 16 * mb and pool.free[0] is b       # the smallest went first


def test_scratch_is_kept_only_when_small(limit):
    resources.set_memory_limit("64M")
    small = resources.scratch(2**20, "t")
    assert resources.scratch(1000, "t").base is small.base
    big = resources.scratch(32 * 2**20, "t")                 # over an eighth: not kept
    assert len(big) == 32 * 2**20
    assert resources.scratch(1000, "t").base is not big.base


def test_one_pool_registry():
    from ndpack.engine.run import workers
    assert resources.pool("eval", 2) is resources.pool("eval", 2)
    workers.run_all([lambda: 1, lambda: 2], 2)
    assert "readx2" in resources.usage()["pools"]


def test_regions_follow_the_limit(limit):
    resources.set_memory_limit("64M")
    assert plan.region_budget(1) == 8 * 2**20
    assert plan.region_budget(3) == 4 * 2**20
    assert plan.default_region_shape((10**6, 1000), 8) == (1048, 1000)   # 8 MiB of rows
    resources.set_memory_limit("16G")
    assert plan.region_budget(1) == plan.REGION_BYTES


def _peak_script(path_a, path_b, path_out):
    return textwrap.dedent(f"""
        import numpy as np, ndpack

        def hwm_mb():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        a, b, out = ndpack.open(r"{path_a}"), ndpack.open(r"{path_b}"), ndpack.open(r"{path_out}", mode="a")
        before = hwm_mb()
        ndpack.evaluate("a * 2 + b", out=out)        # layouts differ: the region path
        total = float(ndpack.sum(ndpack.lazyexpr("a - b")))     # a reduction too
        print(before, hwm_mb(), total)
    """)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_peak_rss_follows_the_memory_limit(tmp_path):
    """An evaluation over 2 x 320 MB on disk into an array of another layout: with
    NDPACK_MEMORY=64M the peak RSS grows by less than the limit."""
    rows, cols = 4000, 10_000
    paths = [str(tmp_path / n) for n in ("a.b2nd", "b.b2nd", "out.b2nd")]
    make = textwrap.dedent(f"""
        import numpy as np, ndpack
        for p, start in ((r"{paths[0]}", 0.0), (r"{paths[1]}", 1.0)):
            ndpack.linspace(start, start + 1, {rows * cols}, shape=({rows}, {cols}),
                            chunks=(20, {cols}), blocks=(4, {cols}), urlpath=p, mode="w")
        ndpack.zeros(({rows}, {cols}), chunks=(25, 5000), blocks=(5, 1000),
                     urlpath=r"{paths[2]}", mode="w")
    """)
    subprocess.run([sys.executable, "-c", make], check=True, timeout=600)
    peaks = {}
    for mem in ("64M", "4G"):
        env = dict(os.environ, NDPACK_MEMORY=mem)
        out = subprocess.run([sys.executable, "-c", _peak_script(*paths)], env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        before, after, total = map(float, out.stdout.split())
        peaks[mem] = after - before
        assert total == pytest.approx(-rows * cols, rel=1e-9)
    res = ndpack.open(paths[2])
    expect = np.linspace(0.0, 1.0, rows * cols).reshape(rows, cols)[-3:] * 2 + \
        np.linspace(1.0, 2.0, rows * cols).reshape(rows, cols)[-3:]
    np.testing.assert_allclose(res[-3:], expect)
    print(f"peak RSS growth: {peaks}")
    assert peaks["64M"] < 64, peaks
