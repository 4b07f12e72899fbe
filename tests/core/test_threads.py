"""One process-wide pool: many Python threads at once, nthreads per call, fork safety."""

import multiprocessing as mp
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ndpack

X = np.sin(np.arange(2_000_000) / 1000.0)


def _roundtrip(nthreads):
    c = ndpack.compress2(X, typesize=8, nthreads=nthreads, blocksize=32768)
    return np.array_equal(np.frombuffer(ndpack.decompress2(c, nthreads=nthreads)), X)


def test_nthreads_per_call():
    for n in (1, 2, 3, 8):
        assert _roundtrip(n)


def test_many_python_threads_share_the_pool():
    results = []

    def work():
        results.append(all(_roundtrip(2) for _ in range(3)))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 6


def _child(q):
    q.put(_roundtrip(2))


def test_safe_after_fork():
    assert _roundtrip(2)            # the pool is running in the parent
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert q.get(timeout=5) is True


def test_env_nthreads():
    env = dict(os.environ, NDPACK_NTHREADS="3")
    out = subprocess.run([sys.executable, "-c", "import ndpack; print(ndpack.nthreads)"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "3"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_default_nthreads_follow_cpu_affinity():
    """Under ``taskset -c 0`` (one CPU allowed) the default is one thread, whatever the
    machine's core count."""
    env = {k: v for k, v in os.environ.items() if k != "NDPACK_NTHREADS"}
    cpu = min(os.sched_getaffinity(0))
    code = "import ndpack; print(ndpack.nthreads)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, preexec_fn=lambda: os.sched_setaffinity(0, {cpu})).stdout
    assert out.strip() == "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == str(min(len(os.sched_getaffinity(0)), 64))


def test_concurrent_calls_are_deterministic():
    """Single-threaded compression in two Python threads at once (GIL released, per-thread
    scratch buffers) gives the same bytes in both."""
    out = [None, None]

    def work(i):
        out[i] = ndpack.compress2(X, nthreads=1)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert out[0] == out[1]
