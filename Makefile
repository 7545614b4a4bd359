# Timelake: the top-level driver (as DuckDB's). Every target that needs set-up
# runs scripts/setup.sh first, which installs what is missing and nothing else.
#
#   make            release build (build/release/timelake)
#   make demo       the main job: TSBS data into a local warehouse, then queries
#   make test       every test (unit, end-to-end, compatibility)
#   make debug      debug build
#   make asan       unit tests under ASAN+UBSAN
#   make format     clang-format the tree

SHELL := /bin/bash
JOBS ?= $(shell nproc)
export PATH := $(HOME)/.cargo/bin:$(PATH)
export TIMELAKE_CARGO_TARGET_DIR ?= $(HOME)/.cache/timelake/cargo-target
export CCACHE_DIR ?= $(HOME)/.cache/ccache

DEMO_WAREHOUSE ?= build/demo-warehouse
DEMO_ARGS ?=

.PHONY: all release debug asan demo test unit-test rust-test compat-test setup setup-test format clean

all: release

setup:
	@scripts/setup.sh build

setup-test:
	@scripts/setup.sh test

release: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

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
	TIMELAKE_BIN=$(CURDIR)/build/release/timelake .venv/bin/python -m pytest -q tests/compat tests/cli

test: setup-test release
	ctest --preset release -j $(JOBS)
	cd rust && CARGO_TARGET_DIR=$(TIMELAKE_CARGO_TARGET_DIR) cargo test --release --locked
	TIMELAKE_BIN=$(CURDIR)/build/release/timelake .venv/bin/python -m pytest -q tests/compat tests/cli

asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build
