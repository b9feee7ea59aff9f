#!/usr/bin/env bash
# run-gpu-tests.sh BUILD - `make test-gpu`: CPU/GPU parity for every launch
# mode and placement, the fault path for two modes, `vfgx run`'s path
# (replay port -> GPU runner) against the CPU runner, the shipped GPU
# loopback configs through `vfgx run`, chunks in GPU and pinned memory
# (every format profile's too) and
# user code on them (tests/gpu/test-gpu-user.sh), then the parity test (quick traffic)
# under compute-sanitizer memcheck and racecheck.  Exits 77 with the reason
# when no GPU is present; 1 when anything failed.
set -uo pipefail
build=${1:-build}
bin=$build/tests/gpu/test_gpu_parity
[ -x "$bin" ] || { echo "SKIP: $bin not built (this build has no CUDA)"; exit 77; }
"$bin" --fault >/dev/null 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	"$bin" --fault | head -1
	exit 77
fi
fail=0
step() {
	local name=$1; shift
	echo "== $name"
	if timeout "${GPU_TEST_TIMEOUT:-600}" "$@"; then echo "PASS $name"; else echo "FAIL $name (exit $?)"; fail=1; fi
}
step parity "$bin"
step "fault persistent" env VFGX_FAULT_MODE=persistent "$bin" --fault
step "fault per_burst" env VFGX_FAULT_MODE=per_burst "$bin" --fault
# a kernel that stops answering (item 3 of the run): a timeout line, no hang
step "wedged kernel" timeout 60 env VFGX_GPU_TEST_WEDGE=3 "$bin" --wedge
step e2e "$build/tests/gpu/test_gpu_e2e"
step "chunks in GPU and pinned memory" "$build/tests/gpu/test_chunks_gpu"
# issue 38: every profile's chunks (bytes, header metadata, learned SSRCs)
step "format chunks, gpu engine = cpu engine" "$build/tests/gpu/test_format_chunks_gpu"
# the legacy default stream held past burst 0 (the test's comment): the
# engine's create must not leave work there that its kernels race
step "format chunks, legacy stream held at create" \
	env VFGX_TEST_STREAM0_GATE=1 "$build/tests/gpu/test_format_chunks_gpu" vfgx
step "user code on GPU chunks" tests/gpu/test-gpu-user.sh "$build"
# issue 38: a user placement function linked into the persistent kernel
# (nvJitLink), against the same source on the cpu engine, by slot and by
# its own offsets (chunks by bytes; a buggy function's mistakes too); then
# vfgx run with it (examples/user_place)
place_fatbin=$build/examples/user_place/tile_place.fatbin
bad_fatbin=$build/tests/gpu/bad_place.fatbin
step "user placement function" "$build/tests/gpu/test_place_gpu" "$place_fatbin" "$bad_fatbin"
if grep -q "define VFGX_HAVE_PCAP 1" "$build/vfgx_build.h"; then
	step "user placement function in vfgx run" python3 tests/cli/test_user_place.py \
		"$build/src/cli/vfgx" "$build/examples/user_place/tile_place.so"
fi
# issue 40: the spectrometer on the device chunk API, a consumer kernel that
# faults, pipeline.max_in_flight_bytes on the gpu engine
step "device chunk API and in-flight bound" tests/gpu/test-gpu-device.sh "$build"
if grep -q "define VFGX_HAVE_PCAP 1" "$build/vfgx_build.h"; then
	step "capture from GPU memory" tests/gpu/test-gpu-capture.sh "$build"
else
	echo "SKIP: capture from GPU memory: this build has no libpcap (libpcap-dev)"
fi
# the Python package with CuPy and PyTorch: the interpreter that has them
pyg=${VFGX_PYTHON:-python3}
if ls "$build"/python/vfgx/_vfgx*.so >/dev/null 2>&1; then
	step "python GPU hand-off" env PYTHONPATH="$build/python" VFGX_BUILD="$build" \
		"$pyg" -m pytest -q -p no:cacheprovider tests/gpu/python
else
	echo "FAIL python GPU hand-off: the vfgx Python package was not built (python3-dev, libdlpack-dev)"
	fail=1
fi
# the recorder with chunks in GPU and pinned memory (the pinned staging
# ring), every byte read back (tests/cli/test_record.py)
for m in gpu pinned; do
	step "record $m chunks" env VFGX_RECORD_MEM=$m "$pyg" tests/cli/test_record.py \
		"$build/src/cli/vfgx" "$build" test_raw_from_device
done
# device: auto picks by where the packets are: the generator's host memory
# -> the CPU pipeline; the replay's GPU memory -> the gpu engine (one line each)
auto_pick() { # CONFIG WANT: the line `vfgx run` logs with device: auto
	local out y
	y=$(mktemp --suffix=.yaml)
	sed 's/device: gpu/device: auto/' "$1" >"$y"
	out=$(timeout "${GPU_TEST_TIMEOUT:-600}" "$build/src/cli/vfgx" run --quiet "$y" 2>&1)
	rm -f "$y"
	if grep -q -- "$2" <<<"$out"; then
		echo "PASS $3"
	else
		echo "FAIL $3: want '$2'"; grep -i "device auto" <<<"$out"; fail=1
	fi
}
echo "== auto"
auto_pick configs/loopback.yaml "auto: using the CPU pipeline: the packets are in host or pinned memory" \
	"auto on host memory: the CPU pipeline"
auto_pick configs/gpu-loopback-replay.yaml "packets are in GPU memory, which only the gpu engine reads" \
	"auto on GPU memory: the gpu engine"
for c in configs/gpu-loopback.yaml configs/gpu-loopback-replay.yaml; do
	step "vfgx run $c" "$build/src/cli/vfgx" run --quiet "$c"
done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$san" ]; then
	step "memcheck" "$san" --tool memcheck --error-exitcode 9 "$bin" --quick
	step "racecheck" "$san" --tool racecheck --error-exitcode 9 "$bin" --quick
	step "memcheck e2e" "$san" --tool memcheck --error-exitcode 9 "$build/tests/gpu/test_gpu_e2e" --quick
	step "memcheck chunks" "$san" --tool memcheck --error-exitcode 9 "$build/tests/gpu/test_chunks_gpu"
	for p in rtp-video spead; do
		step "memcheck format chunks $p" "$san" --tool memcheck --error-exitcode 9 \
			"$build/tests/gpu/test_format_chunks_gpu" $p
	done
	step "memcheck user placement" "$san" --tool memcheck --error-exitcode 9 \
		"$build/tests/gpu/test_place_gpu" "$place_fatbin" "$bad_fatbin"
else
	echo "FAIL compute-sanitizer not found (install the CUDA toolkit's sanitizer)"
	fail=1
fi
[ $fail -eq 0 ] && echo "test-gpu: all passed" || echo "test-gpu: FAILED"
exit $fail
