# ndpack developer commands.  `make install` then `make test` on a fresh machine.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
SYS_PKGS := pkg-config libzstd-dev liblz4-dev zlib1g-dev libzfp-dev
VECTORS ?= $(abspath tests/data/vectors)
PYTEST_ARGS ?=

.PHONY: install sysdeps test ctest asan fuzz fuzz-py bench bench-quick bench-report demo docs notebooks clean

# Install missing system packages (apt-get when root, else print the command),
# then the package in editable mode with its test dependencies.
sysdeps:
	@missing=""; for p in $(SYS_PKGS); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; apt-get update -qq && apt-get install -y -qq $$missing; \
	  else \
	    echo "missing system packages; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

install: sysdeps
	$(PIP) install -q --no-build-isolation meson-python meson ninja Cython numpy
	$(PIP) install -q --no-build-isolation -e ".[test]"

# The full test suite: C unit tests, then the Python tests.
test: ctest
	NDPACK_VECTORS=$(VECTORS) $(PYTHON) -m pytest $(PYTEST_ARGS) tests --doctest-modules ndpack

# C unit tests (filters, BloscLZ, chunks, quick fuzz) in their own build directory.
ctest:
	@[ -d build/ctest ] || meson setup build/ctest -Dbuildtype=release >/dev/null
	meson test -C build/ctest --print-errorlogs

# The chunk tests and the quick fuzz run under AddressSanitizer + UBSan.
asan:
	@[ -d build/asan ] || meson setup build/asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build/asan --print-errorlogs chunk boxread fuzz_quick filters blosclz vmath checksum zstd_frames ndcodecs

# Long fuzz run (benchmarks/fuzz): a million mutated inputs under ASan.
fuzz:
	@[ -d build/asan ] || meson setup build/asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	ninja -C build/asan fuzz_chunk
	NDPACK_VECTORS=$(VECTORS) ./build/asan/fuzz_chunk --iterations 1000000

# Python-level fuzzing of frames, arrays, stores and saved expressions (tests/tools/fuzzing.py):
# FUZZ_CASES mutated inputs, each in a worker subprocess (crashes and hangs are counted).
FUZZ_CASES ?= 20000
fuzz-py:
	NDPACK_VECTORS=$(VECTORS) $(PYTHON) -m tests.tools.fuzzing --cases $(FUZZ_CASES) --seed 0

# Every benchmarks/bench_*.py against its peers, ratios printed; bench-report also
# writes benchmarks/results/report.md and PNG plots (BENCH_ARGS= for full sizes).
bench:
	$(PYTHON) benchmarks/run_all.py

bench-quick:
	$(PYTHON) benchmarks/run_all.py --quick

BENCH_ARGS ?= --quick
bench-report:
	$(PYTHON) benchmarks/run_all.py $(BENCH_ARGS)

# Documentation site (mkdocs-material + mkdocstrings); warnings are errors.
docs:
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict -d build/site

# Every notebook of notebooks/, executed with nbclient (also part of `make test`).
notebooks:
	$(PYTHON) -m pytest -q tests/tools/test_notebooks.py

# Install what is missing, build, and run the main job with a short report.
demo:
	@$(PYTHON) -c "import ndpack" 2>/dev/null || $(MAKE) install
	$(PYTHON) -m ndpack.demo

clean:
	rm -rf build .mesonpy-* *.egg-info
