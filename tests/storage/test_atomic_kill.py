"""Writers killed with SIGKILL at random moments (issue 23, item 2).

A child process rewrites one target over and over with ``mode="w"`` (each version
holds ``BASE + k`` for its own k) and reports each completed write; the parent kills
it at a random moment and checks that the target is the old complete file or a new
complete one -- never a prefix, never gone -- and that a later write by the parent
leaves no temporary behind.  The target exists before the child starts (version -1),
so "the old file was destroyed" is caught too.
"""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ndpack

N = 600_000                    # float64 items: ~5 MB per version, a write takes 10-100 ms


def base() -> np.ndarray:
    return np.random.default_rng(7).random(N)


# writer kind -> (target name, code writing version `v` of `x` to `t`)
WRITERS = {
    "asarray": ("a.b2nd", "ndpack.asarray(x, urlpath=t, mode='w', chunks=(50_000,))"),
    "asarray_sparse": ("s.b2nd", "ndpack.asarray(x, urlpath=t, mode='w', chunks=(100_000,), "
                                 "contiguous=False)"),
    "zeros_then_write": ("z.b2nd", "ndpack.empty(x.shape, urlpath=t, mode='w', "
                                   "chunks=(100_000,))"),
    "schunk": ("c.b2frame", "ndpack.SChunk(chunksize=800_000, data=x, urlpath=t, mode='w')"),
    "save": ("v.b2nd", "ndpack.save(ndpack.asarray(x, chunks=(100_000,)), t)"),
    "save_schunk": ("vs.b2frame", "ndpack.save(ndpack.SChunk(chunksize=800_000, data=x), t)"),
    "save_array": ("sa.b2frame", "ndpack.save_array(x, t, chunksize=800_000)"),
    "pack_tensor": ("pt.b2frame", "ndpack.pack_tensor(x, chunksize=800_000, urlpath=t, "
                                  "mode='w')"),
    "compute": ("e.b2nd", "(ndpack.asarray(x, chunks=(100_000,)) * 1).compute(urlpath=t, "
                          "mode='w')"),
    "dict_dir": ("d.b2d", "ds = ndpack.DictStore(t, mode='w'); ds['/a'] = x; ds.close()"),
    "dict_zip": ("d.b2z", "ds = ndpack.DictStore(t, mode='w'); ds['/a'] = x; ds.close()"),
    "cli_compress": ("cli.b2nd", "np.save(t + '.in.npy', x); "
                                 "ndpack.cli.main(['compress', t + '.in.npy', t])"),
}


def write(kind: str, t: str, x: np.ndarray):
    import ndpack.cli  # noqa: F401  (used by the cli_compress code)
    exec(WRITERS[kind][1], {"ndpack": ndpack, "np": np, "t": t, "x": x})  # noqa: S102


def read(kind: str, t: str) -> np.ndarray:
    """The values stored at `t` (the whole file must read)."""
    if kind in ("dict_dir", "dict_zip"):
        with ndpack.DictStore(t, mode="r") as ds:
            return ds["/a"][:]
    if kind in ("schunk", "save_schunk"):
        return np.frombuffer(ndpack.open(t)[:], np.float64)
    if kind in ("save_array", "pack_tensor"):
        return ndpack.load_array(t)
    return ndpack.open(t)[:]


CHILD = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {tests!r})
    from test_atomic_kill import base, write
    x0 = base()
    print("ready", flush=True)
    k = 0
    while True:
        write({kind!r}, {target!r}, x0 + k)
        print(k, flush=True)
        k += 1
""")


def version(kind, t, x0) -> int:
    """The k of the complete version at `t` (-1: the one written before the child)."""
    d = read(kind, t) - x0
    if kind == "zeros_then_write":
        d = d + x0                       # empty() then nothing: zeros complete the file
        assert d.shape == (N,) and not d.any()
        return 0
    assert d.shape == (N,)
    k = int(round(float(d[0])))
    assert np.abs(d - k).max() < 1e-6, f"mixed versions around {k}"
    return k


def temporaries(folder) -> list:
    """Hidden names: our temporaries (``.<name>.<pid>-<rand>.ndpack-tmp``) and any other
    writer's leftovers (the old ``*.part``)."""
    return [f for f in os.listdir(folder) if f.startswith(".")]


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_sigkill_during_write_leaves_old_or_new(kind, tmp_path):
    x0 = base()
    t = str(tmp_path / WRITERS[kind][0])
    write(kind, t, x0 - 1)                              # the old version, -1
    rng = random.Random(kind)
    env = dict(os.environ, NDPACK_FSYNC="0")            # SIGKILL needs no fsync: faster
    prev = -1
    for trial in range(2):
        code = CHILD.format(tests=os.path.dirname(__file__), kind=kind, target=t)
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert child.stdout.readline().strip() == "ready", child.stderr.read()
            time.sleep(rng.uniform(0.0, 0.3))
        finally:
            child.send_signal(signal.SIGKILL)
            out, err = child.communicate()
        done = [int(s) for s in out.split()]
        assert "Traceback" not in err, err
        assert os.path.exists(t), f"trial {trial}: {kind} lost the target after {done}"
        k = version(kind, t, x0)
        if kind != "zeros_then_write":
            assert k == prev or k in done or k == (done[-1] + 1 if done else 0), (k, done)
            prev = k
    write(kind, t, x0 + 5)                              # a later write cleans up
    assert temporaries(tmp_path) == []
    assert version(kind, t, x0) in (5, 0)
