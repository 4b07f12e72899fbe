"""Python-level fuzzing of frames, b2nd files, stores and saved expressions
(:mod:`tests.tools.fuzzing`): a quick sample here; ``NDPACK_FUZZ_CASES=20000`` (or
``python -m tests.tools.fuzzing --cases 20000``) for the full run."""

import os
import random
import tempfile

import pytest

from tests.tools import fuzzing

CASES = int(os.environ.get("NDPACK_FUZZ_CASES", "600"))
# every clean error is ndpack's own now (MissingOperandsError is an NdpackError too)
ALLOWED_FOREIGN = set()


def test_seeds_read_unmutated():
    """A seed that cannot be read unmutated would only ever test the error path."""
    root = tempfile.mkdtemp(prefix="ndpfuzz_seeds")
    try:
        entries = fuzzing.build_corpus(root)
        kinds = {e["kind"] for e in entries}
        assert kinds == {"chunk", "frame", "store", "expr", "text"}
        assert fuzzing.check_corpus(root, entries) == []
    finally:
        import shutil
        shutil.rmtree(root, ignore_errors=True)


def test_mutations_are_deterministic():
    data = bytes(range(256)) * 4
    a = [fuzzing.mutate(data, random.Random(k)) for k in range(50)]
    b = [fuzzing.mutate(data, random.Random(k)) for k in range(50)]
    assert a == b and sum(x != data for x in a) >= 45


def test_crashes_and_hangs_are_counted(monkeypatch, tmp_path):
    """The harness itself: a worker that dies or stalls is charged to its case."""
    results, names = {}, {}
    job = dict(corpus=str(tmp_path), entries=[{"name": "x", "kind": "chunk", "path": "x",
                                               "open": ""}],
               seed=0, start=0, stop=3, scratch=str(tmp_path), as_limit=4 << 30)
    (tmp_path / "x").write_bytes(b"")
    # a case that kills its worker: SIGSEGV-like death through os._exit in run_case
    monkeypatch.setenv("NDPACK_FUZZ_SELFTEST", "crash")
    nxt = fuzzing._run_batch(job, 20.0, results, names)
    assert results[0][0] == "crash" and nxt == 1
    monkeypatch.setenv("NDPACK_FUZZ_SELFTEST", "hang")
    nxt = fuzzing._run_batch(dict(job, start=1), 2.0, results, names)
    assert results[1][0] == "hang" and nxt == 2


@pytest.mark.parametrize("seed", [0])
def test_fuzz_sample(seed):
    rep = fuzzing.fuzz(CASES, seed=seed, jobs=1, batch=300, deadline=60.0)
    counts = rep["counts"]
    assert sum(counts.values()) == CASES, counts
    bad = {k: counts.get(k, 0) for k in fuzzing.FAILURES + ("lost",) if counts.get(k)}
    assert not bad, (bad, rep["failures"][:20])
    assert counts.get("error", 0) > CASES // 10 and counts.get("ok", 0) > CASES // 20
    # builtin exceptions other than these are bugs (an IndexError from zipfile was one)
    assert set(rep["foreign"]) <= ALLOWED_FOREIGN, rep["foreign_cases"][:20]
