#!/usr/bin/env bash
# test_run_inputs.sh VFGX - `vfgx run` refuses inputs the engine cannot read
# in one line at load, before any region, port or GPU is made (so on a
# host without a GPU too): replayed frames in GPU memory for the cpu engine
# (it segfaulted in vfgx_parse_headers), host buffers larger than the gpu
# engine's 2048-byte bounce slot (EMSGSIZE mid-run); a directory as the
# config names it and the problem; the device: gpu advice is given once;
# a memory fallback warns once a run, not once a queue.
set -uo pipefail
vfgx=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/cli/refused.sh
. "$(dirname "$0")/refused.sh"

# configs/gpu-loopback-replay.yaml with only the device changed
sed 's/^  device: gpu$/  device: cpu/' configs/gpu-loopback-replay.yaml >"$tmp/replay-cpu.yaml"
grep -q '^  device: cpu$' "$tmp/replay-cpu.yaml" || bad "replay-cpu.yaml: the device line was not found"
refused "GPU replay frames on the cpu engine" \
	"^vfgx: $tmp/replay-cpu.yaml: interface rp0 rx queue 0: memory_region rx: GPU memory, which the cpu engine cannot read \\(.*use memory_regions\\[\\]\\.kind: pinned, or pipeline\\.device: gpu\\)$" \
	"$tmp/replay-cpu.yaml"
# the same without replay
sed '/replay: true/d' "$tmp/replay-cpu.yaml" >"$tmp/noreplay-cpu.yaml"
refused "GPU memory on the cpu engine, no replay" "GPU memory, which the cpu engine cannot read" \
	"$tmp/noreplay-cpu.yaml"

# host frames above the bounce slot for the gpu engine
cat >"$tmp/host-big.yaml" <<'Y'
memory_regions:
  - { name: rx, kind: host, buf_size: 4096, num_bufs: 1024 }
interfaces:
  - name: lb0
    backend: loopback
    rx: { queues: [ { id: 0, memory_region: rx } ] }
    loopback: { packets: 1000, packet_size: 3000 }
pipeline: { device: gpu }
Y
refused "host frames of 3000 bytes on the gpu engine" \
	"^vfgx: $tmp/host-big.yaml: interface lb0 rx queue 0: memory_region rx: host memory with frames of up to 3000 bytes, but the gpu engine copies host-memory frames through 2048-byte slots \\(use memory_regions\\[\\]\\.kind: pinned, or loopback\\.packet_size: 2048 or less\\)$" \
	"$tmp/host-big.yaml"

# a directory as the config: its path and the problem, not "read error"
refused "a directory as the config" "^vfgx: $tmp: cannot open config: Is a directory$" "$tmp"

# device: gpu where there is none (or no CUDA in the build): the advice once
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
	printf 'interfaces:\n  - backend: loopback\npipeline: {device: gpu}\n' >"$tmp/gpu.yaml"
	out=$("$vfgx" run -q "$tmp/gpu.yaml" 2>&1)
	n=$(grep -o 'device: cpu' <<<"$out" | wc -l)
	if [ "$n" = 1 ] && [ "$(grep -c . <<<"$out")" = 1 ]; then
		ok "device gpu without a GPU: the advice once: $out"
	else
		bad "device gpu without a GPU: 'device: cpu' said $n times"$'\n'"$out"
	fi
fi

# four queues of hugepage memory where no huge pages are reserved: the
# fallback to normal pages is said once a run
cat >"$tmp/huge.yaml" <<'Y'
memory_regions:
  - { name: rx, kind: hugepage, buf_size: 2048, num_bufs: 1024 }
interfaces:
  - name: lb0
    backend: loopback
    rx: { queues: [ { id: 0, memory_region: rx }, { id: 1, memory_region: rx },
                    { id: 2, memory_region: rx }, { id: 3, memory_region: rx } ] }
    loopback: { packets: 4000, flows: 4 }
pipeline: { device: cpu }
Y
out=$("$vfgx" run "$tmp/huge.yaml" 2>&1)
rc=$?
n=$(grep -c 'using normal pages' <<<"$out")
if [ "$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)" != 0 ] && [ "$n" = 0 ]; then
	ok "hugepage fallback: huge pages are reserved here, nothing to fall back from (not checked)"
elif ((rc == 0)) && [ "$n" = 1 ] && grep -q 'said once a run' <<<"$out"; then
	ok "hugepage fallback for 4 queues warned once"
else
	bad "hugepage fallback for 4 queues: exit $rc, warned $n times"$'\n'"$out"
fi

echo "$fails failed"
exit $((fails > 0))
