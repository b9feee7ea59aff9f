# Top-level wrapper: `make demo` and `make test` do all set-up themselves.
SHELL := /bin/bash
CUDA_HOME ?= /usr/local/cuda
export PATH := $(CUDA_HOME)/bin:$(PATH)
BUILD ?= build
SAN ?= build-san
VFGX := $(BUILD)/src/cli/vfgx

.PHONY: all deps build demo test test-gpu bench bench-stale lint clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)
	ninja -C $(BUILD)

demo: build
	$(VFGX) run

test: build
	@scripts/run-tests.sh $(BUILD) $(SAN)

# no `deps` step (a GPU machine may have no apt; meson says what is
# missing); the GPU tests use most of the build (examples, modules, the
# Python package), so all of it is built
test-gpu:
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)
	ninja -C $(BUILD)
	@tests/gpu/run-gpu-tests.sh $(BUILD)

# results go to the build folder; BENCH_OUT=bench/results updates the
# committed file (a full-length run, on a quiet machine)
BENCH_OUT ?= $(BUILD)/bench-results
bench: build
	$(VFGX) bench pipeline --out $(BENCH_OUT) $(BENCH_ARGS)

# the committed results whose measured sources changed since the commit
# each names (scripts/bench-stale.py: the map of sources is there)
bench-stale:
	@scripts/bench-stale.py

lint:
	@scripts/lint.sh

clean:
	rm -rf $(BUILD) $(SAN) build-tsan
