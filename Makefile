# Timelake: the top-level driver (as DuckDB's). Every target that needs set-up
# runs scripts/setup.sh first, which installs what is missing and nothing else.
#
#   make            release build (build/release/timelake) and the Python package's extension,
#                   so that `.venv/bin/python -c "import timelake"` works
#   make demo       the main job: TSBS data into a local warehouse, then queries
#   make test       every test: the layer check, unit (also under ASAN+UBSAN, as `make asan`), end-to-end, compatibility, Python
#   make python-test  the Python package's tests (tests/python/)
#   make debug      debug build
#   make asan       unit tests under ASAN+UBSAN
#   make fuzz       every fuzz target under libFuzzer+ASAN+UBSAN for FUZZ_SECONDS each
#   make soak       writers SIGKILLed at random for SOAK_SECONDS, local and S3, checked after each
#   make format     clang-format the tree

SHELL := /bin/bash
JOBS ?= $(shell nproc)
export PATH := $(HOME)/.cargo/bin:$(PATH)
export TIMELAKE_CARGO_TARGET_DIR ?= $(HOME)/.cache/timelake/cargo-target
export CCACHE_DIR ?= $(HOME)/.cache/ccache
# Paths relative to the clone in ccache's keys: a clone elsewhere (CI) hits
# the same cache.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1

DEMO_WAREHOUSE ?= build/demo-warehouse
DEMO_ARGS ?=
FUZZ_SECONDS ?= 60
SOAK_SECONDS ?= 1200
SOAK_ARGS ?=

.PHONY: all release debug asan fuzz soak demo test unit-test rust-test compat-test python-dev python-test setup setup-test format clean layers

all: release

setup:
	@scripts/setup.sh build

setup-test:
	@scripts/setup.sh test

release: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)
	@$(MAKE) --no-print-directory python-dev

# `import timelake` in .venv: the release build copies the extension into
# python/timelake/, and a .pth file puts python/ on the venv's path (written
# only when it differs).
python-dev:
	@site="$$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" && \
	  { echo "$(CURDIR)/python" | cmp -s - "$$site/timelake-dev.pth" || \
	    echo "$(CURDIR)/python" > "$$site/timelake-dev.pth"; }

# The Python package's tests (tests/python/), against the release build.
python-test: release setup-test
	TIMELAKE_BIN=$(CURDIR)/build/release/timelake .venv/bin/python -m pytest -q tests/python

debug: setup
	@cmake --preset debug >/dev/null
	@cmake --build --preset debug -j $(JOBS)

demo: release
	build/release/timelake demo -w $(DEMO_WAREHOUSE) $(DEMO_ARGS)

unit-test: release
	ctest --preset release -j $(JOBS)

rust-test: setup
	cd rust && CARGO_TARGET_DIR=$(TIMELAKE_CARGO_TARGET_DIR) cargo test --release --locked

compat-test: release setup-test
	TIMELAKE_BIN=$(CURDIR)/build/release/timelake .venv/bin/python -m pytest -q tests/compat tests/cli tests/sql tests/reliability tests/engines

# Dependencies point one way: no include from a lower stage of src/timelake/
# to a higher one, no import cycle in rust/src (scripts/check_layers.py).
layers:
	@python3 scripts/check_layers.py

test: setup-test layers release
	ctest --preset release -j $(JOBS)
	@$(MAKE) --no-print-directory asan
	cd rust && CARGO_TARGET_DIR=$(TIMELAKE_CARGO_TARGET_DIR) cargo test --release --locked
	TIMELAKE_BIN=$(CURDIR)/build/release/timelake .venv/bin/python -m pytest -q tests/compat tests/cli tests/sql tests/reliability tests/engines tests/python

# The sanitizers' run-time options for `make asan` (and so `make test`). Each
# finding fails its test: ASAN and LSan exit non-zero, and UBSAN aborts (the
# build has -fno-sanitize-recover=undefined). No leak suppressions: the tests
# leak nothing, in Arrow and the Rust crate included. Arrow's system memory pool
# sends its buffers through malloc, which ASAN sees (the wheel's default,
# mimalloc, would hide overflows of them and their leaks). Set either variable
# to override.
ASAN_OPTIONS ?= detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1
UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1

asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	ASAN_OPTIONS=$(ASAN_OPTIONS) UBSAN_OPTIONS=$(UBSAN_OPTIONS) ARROW_DEFAULT_MEMORY_POOL=system \
	  ctest --preset asan -j $(JOBS)

# clang builds the fuzz targets (fuzz/) in build/fuzz; libstdc++ keeps them
# link-compatible with the wheel's Arrow. Inputs found go to build/fuzz/corpus,
# crashes to build/fuzz/artifacts (see fuzz/run.sh).
fuzz:
	@scripts/setup.sh fuzz
	@CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTIMELAKE_LIBFUZZER=ON -DTIMELAKE_BUILD_TESTS=OFF -DTIMELAKE_BUILD_PYTHON=OFF -DTIMELAKE_WERROR=ON >/dev/null
	@cmake --build build/fuzz --target fuzz_targets -j $(JOBS)
	fuzz/run.sh build/fuzz $(FUZZ_SECONDS)

# The soak (tests/reliability/soak.py; not part of `make test`): both targets
# at once for SOAK_SECONDS; the summary also goes to build/soak/summary.md.
soak: setup-test release
	TIMELAKE_BIN=$(CURDIR)/build/release/timelake .venv/bin/python tests/reliability/soak.py \
	  --seconds $(SOAK_SECONDS) --out build/soak/summary.md $(SOAK_ARGS)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build

# Benchmarks side by side with the peers (bench/run.py, SPEC §12): each prints
# and writes bench/results/<date>[-quick].md with plots beside it.
#   make bench-quick   100 hosts x 12 h, 3 repeats, then `latest` on 1,000 hosts: a few minutes
#   make bench         100 hosts x 24 h and 1,000 hosts x 12 h, 5 repeats, then bench-latest
#   make bench-large   also 4,000 hosts x 24 h (TSBS's scale, 34.6 M rows), 3 repeats: ~1 hour
#   make bench-latest  `latest` (bench/latest.py): Session::Latest cold and warm beside the
#                      scan fallback and Timelake 0.7, 1,000 and 10,000 hosts x 1 h (~1 min)
#   make bench-ts      hourly m4 and time_weighted_mean beside avg and Timelake 0.7
#                      (bench/ts_functions.py): 1,000 hosts x 72 h = 26 M rows
#   make bench-asof    ASOF JOIN of 10 M trades to 10 M quotes beside DuckDB (bench/asof.py)
# bench/requirements.txt (numpy, matplotlib) goes into .venv once; a stamp
# records what was installed. BENCH_ARGS passes more options to each script
# (e.g. BENCH_ARGS="--hosts 5 --hours 2 --repeats 1" for a smoke run of bench-ts).
BENCH_ARGS ?=
.PHONY: bench bench-quick bench-large bench-latest bench-deps bench-ts bench-asof

bench-deps: setup
	@cmp -s bench/requirements.txt .venv/.bench-requirements || { \
	  .venv/bin/python -m pip install -q -r bench/requirements.txt && \
	  cp bench/requirements.txt .venv/.bench-requirements; }

bench-quick: setup-test release bench-deps
	.venv/bin/python bench/run.py --quick $(BENCH_ARGS)
	.venv/bin/python bench/run.py --latest --quick $(BENCH_ARGS)

bench: setup-test release bench-deps
	.venv/bin/python bench/run.py $(BENCH_ARGS)
	.venv/bin/python bench/run.py --latest $(BENCH_ARGS)

# TSBS's standard scale, 4,000 hosts x 1 day (34.6 M rows), after the two data
# sets of `make bench`, so that the report shows how each figure grows; about
# an hour, several GiB under build/bench. Not part of `make test`.
bench-large: setup-test release bench-deps
	.venv/bin/python bench/run.py --large $(BENCH_ARGS)

bench-latest: setup-test release bench-deps
	.venv/bin/python bench/run.py --latest $(BENCH_ARGS)

bench-ts: setup-test release bench-deps
	.venv/bin/python bench/ts_functions.py $(BENCH_ARGS)

bench-asof: setup-test release bench-deps
	.venv/bin/python bench/asof.py $(BENCH_ARGS)
