#!/usr/bin/env bash
# The package as users get it: sdist -> wheel (python -m build, isolated), the wheel
# installed (not editable) into fresh virtual environments, the test suite run against it
# from a directory outside the source tree, and the CLI run where only the run-time
# dependencies are installed.  A module or data file missing from the wheel fails here.
#
# Usage: .ci/wheel.sh [pytest args...]   (from the repository root; writes build/wheel/)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work="$root/build/wheel"
rm -rf "$work"
mkdir -p "$work"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# pip's output goes to a log, shown only when it fails
pipq() { "$@" >>"$work/pip.log" 2>&1 || { tail -40 "$work/pip.log"; return 1; }; }

echo "-- python -m build (sdist, then the wheel from the sdist)"
pipq python3 -m pip install -q build
python3 -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
whl=$(ls "$work"/dist/ndpack-*.whl)
ls -l "$work"/dist

echo "-- a bare venv (run-time dependencies only): the CLI, no traceback"
python3 -m venv "$work/bare"
pipq "$work/bare/bin/pip" install -q "$whl"
(
  cd "$work"
  py="$work/bare/bin/python"
  ! "$py" -c "import tqdm" 2>/dev/null || { echo "tqdm should not be in the bare venv"; exit 1; }
  "$py" -c "import numpy as np; x = np.linspace(0, 1, 500_000).reshape(500, 1000); np.save('x.npy', x)"
  "$work/bare/bin/ndpack" compress x.npy a.b2nd --codec lz4
  "$work/bare/bin/ndpack" info a.b2nd >/dev/null
  "$work/bare/bin/ndpack" eval "a*2+sin(a)" a=a.b2nd -o y.b2nd 2>err.txt
  ! grep -q Traceback err.txt || { cat err.txt; exit 1; }
  "$work/bare/bin/ndpack" decompress y.b2nd y.npy
  "$py" -c "import numpy as np; x = np.load('x.npy'); np.testing.assert_allclose(np.load('y.npy'), x*2+np.sin(x))"
  set +e
  "$work/bare/bin/ndpack" eval "a*2+" a=missing.b2nd -o z.b2nd 2>err.txt
  rc=$?
  set -e
  [ "$rc" = 1 ] && [ "$(wc -l <err.txt)" = 1 ] && ! grep -q Traceback err.txt \
    || { echo "CLI error was not one line with status 1 (rc=$rc):"; cat err.txt; exit 1; }
  echo "bare venv: CLI ok"
)

echo "-- a test venv: the wheel with [test], the suite run outside the source tree"
python3 -m venv "$work/venv"
pipq "$work/venv/bin/pip" install -q "$whl[test]"
suite="$work/suite"
mkdir -p "$suite"
cp -r tests docs notebooks README.md pyproject.toml "$suite/"
find "$suite" -name __pycache__ -prune -exec rm -rf {} +
cd "$suite"
pkg=$("$work/venv/bin/python" -c "import ndpack, os; print(os.path.dirname(ndpack.__file__))")
case "$pkg" in "$root"/ndpack*) echo "the test venv imports the source tree ($pkg)"; exit 1;; esac
echo "testing $pkg"
# A second host profile (issue 40): other cache sizes than the host's, the filters' next
# ISA down, one thread.  A test that assumes the defaults of the machine it was written on
# fails here, in CI, not on the next kind of host.  The editable run tests the host's own.
profile=$("$work/venv/bin/python" - <<'PY'
from ndpack.storage.grid import cache_sizes
from ndpack import show_config
import io
sizes = tuple(cache_sizes())
pick = (32 << 10, 256 << 10, 8 << 20)
if sizes == pick:
    pick = (48 << 10, 2 << 20, 64 << 20)
buf = io.StringIO(); show_config(file=buf)
line = next(x for x in buf.getvalue().splitlines() if "filter ISA" in x)
isa = "sse2" if line.split(":")[1].split()[0] == "avx2" else "scalar"
print(f"NDPACK_CACHE_SIZES={pick[0] >> 10}K,{pick[1] >> 10}K,{pick[2] >> 10}K NDPACK_ISA={isa} NDPACK_NTHREADS=1")
PY
)
echo "host profile of this run: $profile"
export $profile
"$work/venv/bin/python" -m pytest -p no:cacheprovider "$@" tests
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q --doctest-modules "$pkg"
