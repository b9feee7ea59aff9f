#!/usr/bin/env bash
# test-gpu-user.sh BUILD - user code on GPU chunks (make test-gpu):
# the cuFFT spectrometer's spectrum equals its FFTW twin's; vfgx run loads
# examples/user_module's CUDA module next to its CPU module and the
# per-stream sums the GPU kernel kept equal those the CPU module read from
# the same (pinned) chunks; a module without the kernel and a missing file
# stop the run with one line (exit 2); a kernel that faults ends the run
# with one line naming the fault (exit 1), without hanging.
set -uo pipefail
build=${1:-build}
vfgx=$build/src/cli/vfgx
tmp=$(mktemp -d /tmp/vfgx-gpu-user.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# --- spectrometer: cuFFT against FFTW on the same stream
if "$build/examples/spectrometer/spectrometer" "$tmp/gpu.txt" &&
	"$build/examples/spectrometer/spectrometer_fftw" "$tmp/cpu.txt"; then
	if python3 - "$tmp/gpu.txt" "$tmp/cpu.txt" <<'PY'
import sys
g = [float(x) for x in open(sys.argv[1])]
c = [float(x) for x in open(sys.argv[2])]
assert len(g) == len(c) == 4096, (len(g), len(c))
total = sum(c)
assert total > 0
worst = max(abs(a - b) / max(abs(b), total / len(c) * 1e-3) for a, b in zip(g, c))
print("ok   spectrometer: cuFFT and FFTW spectra agree, worst relative difference %.2e" % worst)
sys.exit(0 if worst < 1e-3 else 1)
PY
	then :; else fail "spectrometer: the spectra differ"; fi
else
	fail "spectrometer: a run failed"
fi

# --- spectrometer --alternate (vfgx bench chunks' FFT row): 25,000 chunks
# (a few more where the source's losses end a chunk early) in phases of
# 1000 after a warm-up one: 20 or 24 timed phases (whole groups of four),
# both rates printed; too few phases for one group is a usage error
if out=$("$build/examples/spectrometer/spectrometer" "$tmp/alt.txt" --packets 1600000 --alternate 1000) &&
	[[ $out =~ ", "2[04]" phases, ".*"fft_chunks_per_s "[1-9][0-9.]*" none_chunks_per_s "[1-9] ]]; then
	echo "ok   spectrometer --alternate: $out"
else
	fail "spectrometer --alternate: '$out'"
fi
"$build/examples/spectrometer/spectrometer" "$tmp/alt.txt" --packets 64000 --alternate 1000 2>/dev/null
[[ $? == 2 ]] || fail "spectrometer --alternate with 1000 chunks in all: not a usage error"

# --- vfgx run with the CPU and the GPU flow_sum modules on pinned chunks
cat >"$tmp/sum.yaml" <<YAML
interfaces:
  - backend: loopback
    loopback: { packets: 200000, flows: 3, loss: 0.001, reorder: 0.01, replay: true }
pipeline:
  device: cpu
  chunks: { payload_bytes: 512, packets: 256, streams: 3, in_flight: 8, mem: pinned }
  user:
    library: $build/examples/user_module/flow_sum.so
    arg: verify
    gpu_module: $build/examples/user_module/flow_sum_gpu.fatbin
    gpu_state_bytes: 24
    gpu_state_out: $tmp/state.bin
expect: { in_order: true }
YAML
out=$("$vfgx" run -q "$tmp/sum.yaml" 2>&1)
rc=$?
if ((rc != 0)); then
	fail "flow_sum on the GPU: exit $rc"$'\n'"$out"
elif printf '%s\n' "$out" >"$tmp/out.txt" && python3 - "$tmp/state.bin" "$tmp/out.txt" <<'PY'
import re, struct, sys
gpu = struct.unpack("<3Q", open(sys.argv[1], "rb").read())
cpu = {int(m.group(1)): int(m.group(2)) for m in
       re.finditer(r"^flow_sum: stream (\d+): \d+ records \(sum \d+\), \d+ chunk slots \(sum (\d+)\)", open(sys.argv[2]).read(), re.M)}
assert len(cpu) == 3 and all(gpu[s] == cpu[s] for s in range(3)), (gpu, cpu)
print("ok   flow_sum: the GPU kernel's sums equal the CPU module's:", list(gpu))
PY
then :; else fail "flow_sum on the GPU: sums differ"$'\n'"$out"; fi

# --- the same module on chunks the gpu engine placed: its kernels run
# beside the persistent kernel (which leaves SMs free for them) on the same
# traffic, so the sums equal the cpu engine's run above
sed -e 's/device: cpu/device: gpu/' -e '/library:/d' -e '/arg: verify/d' \
	-e "s#$tmp/state.bin#$tmp/state_gpu.bin#" "$tmp/sum.yaml" >"$tmp/sum_gpu.yaml"
out=$(timeout 120 "$vfgx" run -q "$tmp/sum_gpu.yaml" 2>&1)
rc=$?
if ((rc != 0)); then
	fail "flow_sum on gpu-engine chunks: exit $rc"$'\n'"$out"
elif python3 - "$tmp/state.bin" "$tmp/state_gpu.bin" <<'PY'
import struct, sys
cpu, gpu = (struct.unpack("<3Q", open(p, "rb").read()) for p in sys.argv[1:3])
assert cpu == gpu and all(cpu), (cpu, gpu)
print("ok   flow_sum on chunks the gpu engine placed: the same sums as on the cpu engine's:", list(gpu))
PY
then :; else fail "flow_sum on gpu-engine chunks: sums differ"$'\n'"$out"; fi

# --- a persistent consumer kernel through the device chunk API
# (vfgx/chunk_device.h): every chunk's present count and byte sum equal the
# same stream's chunks taken on the CPU from host memory, for both engines
# and both chunk memories; a consumer that gives nothing back still ends
gc=$build/examples/gpu_consumer/gpu_consumer
# (0.2% of packets lost: some chunks close with holes)
if timeout 120 "$gc" "$tmp/gc-ref.txt" --reference --loss 0.002 >/dev/null; then
	for e in gpu cpu; do
		for m in gpu pinned; do
			if out=$(timeout 120 "$gc" "$tmp/gc-$e-$m.txt" --engine $e --mem $m --loss 0.002) &&
				cmp -s "$tmp/gc-ref.txt" "$tmp/gc-$e-$m.txt"; then
				echo "ok   gpu_consumer engine $e mem $m: $(wc -l <"$tmp/gc-ref.txt") chunks as the CPU's; ${out//$'\n'/; }"
			else
				fail "gpu_consumer engine $e mem $m: differs from the reference or failed"$'\n'"$out"$'\n'"$(diff "$tmp/gc-ref.txt" "$tmp/gc-$e-$m.txt" | head -5)"
			fi
		done
	done
	# a consumer that never gives a chunk back: the stop ends the run, the
	# waits counted (what waited for the held slots dropped)
	for e in gpu cpu; do
		out=$(timeout 60 "$gc" "$tmp/gc-hold.txt" --hold --engine $e)
		rc=$?
		if ((rc == 0)) && [[ $out =~ backpressure\ ([1-9][0-9]*)\ backpressure_drops\ ([1-9][0-9]*) ]] &&
			(($(wc -l <"$tmp/gc-hold.txt") == 8)); then
			echo "ok   gpu_consumer --hold engine $e: ended; $out"
		else
			fail "gpu_consumer --hold engine $e: exit $rc, want 8 chunks held and counted backpressure drops"$'\n'"$out"
		fi
	done
else
	fail "gpu_consumer --reference failed"
fi

refuse() { # NAME RC WANT YAML-EDIT
	local out rc
	sed "$4" "$tmp/sum.yaml" >"$tmp/x.yaml"
	out=$(timeout 120 "$vfgx" run -q "$tmp/x.yaml" 2>&1)
	rc=$?
	if ((rc == $2)) && grep -q -- "$3" <<<"$out"; then
		echo "ok   $1: $(grep -- "$3" <<<"$out" | head -1)"
	else
		fail "$1: exit $rc, want $2 and '$3'"$'\n'"$out"
	fi
}
refuse "missing module" 2 "gpu_module $tmp/none.fatbin: " "s|gpu_module: .*|gpu_module: $tmp/none.fatbin|"
refuse "missing kernel" 2 "has no kernel nope" "s|gpu_state_bytes: 24|gpu_state_bytes: 24\n    gpu_kernel: nope|"
refuse "faulting kernel" 1 "user gpu module .*: kernel: .*illegal" "s|gpu_module: .*|gpu_module: $build/tests/gpu/fault_module.fatbin|"
exit $failed
