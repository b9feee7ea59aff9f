# Top-level wrapper: `make demo` and `make test` do all set-up themselves.
SHELL := /bin/bash
CUDA_HOME ?= /usr/local/cuda
export PATH := $(CUDA_HOME)/bin:$(PATH)
BUILD ?= build
SAN ?= build-san
VFGX := $(BUILD)/src/cli/vfgx

.PHONY: all deps build demo test test-gpu bench lint clean

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
# missing), and only what the GPU tests run is built
test-gpu:
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)
	ninja -C $(BUILD) src/cli/vfgx tests/gpu/test_gpu_parity tests/gpu/test_gpu_e2e \
		tests/gpu/test_chunks_gpu tests/gpu/fault_module.fatbin \
		examples/user_module/flow_sum.so examples/user_module/flow_sum_gpu.fatbin \
		examples/spectrometer/spectrometer examples/spectrometer/spectrometer_fftw
	@tests/gpu/run-gpu-tests.sh $(BUILD)

# results go to the build folder; BENCH_OUT=bench/results updates the
# committed file (a full-length run, on a quiet machine)
BENCH_OUT ?= $(BUILD)/bench-results
bench: build
	$(VFGX) bench pipeline --out $(BENCH_OUT) $(BENCH_ARGS)

lint:
	@scripts/lint.sh

clean:
	rm -rf $(BUILD) $(SAN) build-tsan
