# ndpack developer commands.  `make install` then `make test` on a fresh machine.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
SYS_PKGS := pkg-config libzstd-dev liblz4-dev zlib1g-dev
VECTORS ?= $(abspath ../shared/spec/vectors)
PYTEST_ARGS ?=

.PHONY: install sysdeps test ctest asan fuzz bench bench-quick demo clean

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
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build/asan --print-errorlogs chunk fuzz_quick filters blosclz

# Long fuzz run (benchmarks/fuzz): a million mutated inputs under ASan.
fuzz:
	@[ -d build/asan ] || meson setup build/asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	ninja -C build/asan fuzz_chunk
	NDPACK_VECTORS=$(VECTORS) ./build/asan/fuzz_chunk --iterations 1000000

bench:
	$(PYTHON) benchmarks/bench_codecs.py
	$(PYTHON) benchmarks/bench_schunk.py
	$(PYTHON) benchmarks/bench_expr.py
	$(PYTHON) benchmarks/bench_ndarray.py
	$(PYTHON) benchmarks/bench_reductions.py
	$(PYTHON) benchmarks/bench_linalg.py
	$(PYTHON) benchmarks/bench_indexing.py
	$(PYTHON) benchmarks/bench_shape.py
	$(PYTHON) benchmarks/bench_dask.py
	$(PYTHON) benchmarks/bench_stores.py

bench-quick:
	$(PYTHON) benchmarks/bench_codecs.py --quick
	$(PYTHON) benchmarks/bench_schunk.py --quick
	$(PYTHON) benchmarks/bench_expr.py --quick
	$(PYTHON) benchmarks/bench_ndarray.py --quick
	$(PYTHON) benchmarks/bench_reductions.py --quick
	$(PYTHON) benchmarks/bench_linalg.py --quick
	$(PYTHON) benchmarks/bench_indexing.py --quick
	$(PYTHON) benchmarks/bench_shape.py --quick
	$(PYTHON) benchmarks/bench_dask.py --quick
	$(PYTHON) benchmarks/bench_stores.py --quick

# Install what is missing, build, and run the main job with a short report.
demo:
	@$(PYTHON) -c "import ndpack" 2>/dev/null || $(MAKE) install
	$(PYTHON) -m ndpack.demo

clean:
	rm -rf build .mesonpy-* *.egg-info
