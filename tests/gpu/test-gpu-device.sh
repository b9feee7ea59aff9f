#!/usr/bin/env bash
# test-gpu-device.sh BUILD - issue 40 on a GPU (make test-gpu): the
# spectrometer whose FFT runs in a persistent kernel on the device chunk
# API (examples/spectrometer/spectrometer_device) writes the spectrum FFTW
# computes on the CPU from the same stream (and cuFFT's); a consumer kernel
# that faults (examples/gpu_consumer --fault) ends the run with one line
# naming the fault and the report, exit 1, for both engines, never a hang;
# pipeline.max_in_flight_bytes on the gpu engine: the runner's arrays fit
# the budget (its description, logged at info) and the run still delivers
# every packet in order, verified; a budget below one packet an array
# stops vfgx run at once with one line (exit 2).
set -uo pipefail
build=${1:-build}
vfgx=$build/src/cli/vfgx
tmp=$(mktemp -d /tmp/vfgx-gpu-device.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# --- the spectrometer on the device chunk API against FFTW and cuFFT
spec=$build/examples/spectrometer
if out=$(timeout 300 "$spec/spectrometer_device" "$tmp/dev.txt") &&
	timeout 300 "$spec/spectrometer_fftw" "$tmp/fftw.txt" >/dev/null &&
	timeout 300 "$spec/spectrometer" "$tmp/cufft.txt" >/dev/null; then
	echo "     $out"
	for ref in fftw cufft; do
		if python3 - "$tmp/dev.txt" "$tmp/$ref.txt" "$ref" <<'PY'
import sys
d = [float(x) for x in open(sys.argv[1])]
r = [float(x) for x in open(sys.argv[2])]
assert len(d) == len(r) == 4096, (len(d), len(r))
total = sum(r)
assert total > 0
worst = max(abs(a - b) / max(abs(b), total / len(r) * 1e-3) for a, b in zip(d, r))
print("ok   spectrometer_device: its spectrum and %s's agree, worst relative difference %.2e" % (sys.argv[3], worst))
sys.exit(0 if worst < 1e-3 else 1)
PY
		then :; else fail "spectrometer_device: the spectrum differs from $ref's"; fi
	done
else
	fail "spectrometer_device or a reference spectrometer failed: $out"
fi

# --- a consumer kernel that faults: one line naming it, the report, exit 1
gc=$build/examples/gpu_consumer/gpu_consumer
for e in gpu cpu; do
	for m in gpu pinned; do
		timeout -s KILL 120 "$gc" "$tmp/gc-fault.txt" --fault --engine $e --mem $m \
			>"$tmp/fault.out" 2>"$tmp/fault.err"
		rc=$?
		# warnings and info lines aside (the library's, as it frees
		# what the lost context held), one line
		if ((rc == 1)) && [ "$(grep -v '^vfgx: \(warn\|info\): ' "$tmp/fault.err" | grep -c .)" = 1 ] &&
			grep -qE "^gpu_consumer: the consumer kernel failed: .*(illegal|address)" "$tmp/fault.err" &&
			grep -q "^gpu_consumer ($e, --fault): " "$tmp/fault.out"; then
			echo "ok   gpu_consumer --fault engine $e mem $m: $(grep '^gpu_consumer:' "$tmp/fault.err"); $(cat "$tmp/fault.out")"
		else
			fail "gpu_consumer --fault engine $e mem $m: exit $rc (137: killed, a hang), want 1, one line naming the fault and the report"$'\n'"$(cat "$tmp/fault.err" "$tmp/fault.out" | head -20)"
		fi
	done
done

# --- pipeline.max_in_flight_bytes on the gpu engine
bounded() { # BUDGET: the shipped replay config, 2,000,000 packets, with the key
	sed -e 's/^      packets: 20000000$/      packets: 2000000/' \
		-e "s/^  device: gpu$/  device: gpu\n  max_in_flight_bytes: $1/" \
		configs/gpu-loopback-replay.yaml
}
bounded 1048576 >"$tmp/bounded.yaml"
grep -q "max_in_flight_bytes: 1048576" "$tmp/bounded.yaml" || fail "bounded.yaml: the device line was not found"
out=$(timeout 300 "$vfgx" run --quiet "$tmp/bounded.yaml" 2>&1)
rc=$?
if ((rc == 0)) && [[ $out =~ at\ most\ 1048576\ B\ in\ flight\ \(([0-9]+)\ arrays\ of\ at\ most\ ([0-9]+)\ packets\) ]] &&
	((BASH_REMATCH[1] * BASH_REMATCH[2] * 512 <= 1048576)); then
	echo "ok   gpu engine, max_in_flight_bytes 1048576: ${BASH_REMATCH[0]} x 512 B buffers; the run passed its expectations"
else
	fail "gpu engine with max_in_flight_bytes 1048576: exit $rc"$'\n'"$(tail -20 <<<"$out")"
fi
bounded 1536 >"$tmp/small.yaml"
out=$(timeout -s KILL 60 "$vfgx" run --quiet "$tmp/small.yaml" 2>&1)
rc=$?
errs=$(grep -v '^vfgx: \(warn\|info\): ' <<<"$out" | grep -c .)
if ((rc == 2)) && grep -qE "pipeline.max_in_flight_bytes 1536 .*set it to at least [0-9]+" <<<"$out" &&
	((errs == 1)); then
	echo "ok   gpu engine, a budget below one packet an array: $(grep max_in_flight_bytes <<<"$out")"
else
	fail "gpu engine with max_in_flight_bytes 1536: exit $rc, want 2 and one line"$'\n'"$out"
fi
exit $failed
