#!/usr/bin/env bash
# test_run.sh VFGX [dpdk] - `vfgx run` as a user sees it: the default
# config passes, faults are accounted, bad configs give one file:line:col
# line and exit 2 (also those only a backend can judge), an unmet
# expectation exits 1, a run that delivered nothing fails and says why
# unless the config expects it, SIGINT stops cleanly with a report.
# dpdk: the DPDK configs instead (a build with the DPDK backend).
set -uo pipefail
vfgx=$1 part=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

expect_rc() { # NAME WANT_RC GREP_PATTERN CMD...
	local name=$1 want=$2 pat=$3
	shift 3
	"$@" >"$tmp/out" 2>&1
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		bad "$name: exit $rc, wanted $want"; sed 's/^/     /' "$tmp/out" | tail -15; return
	fi
	if ! grep -qE -- "$pat" "$tmp/out"; then
		bad "$name: output lacks /$pat/"; sed 's/^/     /' "$tmp/out" | tail -15; return
	fi
	ok "$name"
}
# in a private network namespace where possible: only lo, and no other
# test's sender reaches a port opened here
isolated() { if unshare -n true 2>/dev/null; then unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"; else "$@"; fi; }
one_line() { [ "$(grep -c . "$tmp/out")" -eq 1 ] && ok "$1 is one line" || bad "$1 printed $(grep -c . "$tmp/out") lines"; }

if [ "$part" = dpdk ]; then
	# configs/dpdk-af-xdp.yaml where dk-a0 does not exist: said in one line
	# before DPDK starts
	expect_rc "dpdk-af-xdp.yaml, interface missing" 1 \
		"^vfgx: xdp0: interface 'dk-a0' not found in this network namespace \\(check \`ip link\`; run vfgx inside the interface's namespace with ip netns exec\\)$" \
		isolated "$vfgx" run configs/dpdk-af-xdp.yaml --duration 1
	one_line "dpdk-af-xdp.yaml, interface missing"
	# #44: a PCI address this machine lacks: one line, before EAL's own
	# lines and the hugepage warning
	printf 'interfaces:\n  - name: nic0\n    backend: dpdk\n    address: "0000:ee:1f.7"\n' >"$tmp/nopci.yaml"
	if [ -e /sys/bus/pci/devices ] && [ ! -e /sys/bus/pci/devices/0000:ee:1f.7 ]; then
		expect_rc "dpdk, PCI device missing" 1 \
			"^vfgx: nic0: no PCI device 0000:ee:1f.7 on this machine \\(lspci -D lists them; dpdk-devbind.py --status shows which DPDK can use\\)$" \
			"$vfgx" run "$tmp/nopci.yaml" --duration 1
		one_line "dpdk, PCI device missing"
	fi
	((EUID == 0)) || { echo "SKIP: dpdk-null.yaml: DPDK's EAL needs root here"; exit 77; }
	# configs/dpdk-null.yaml: all-zero frames, every one dropped: no pass
	expect_rc "dpdk-null.yaml: nothing delivered fails" 1 \
		'^  min_packets   FAILED  0 delivered, at least 1 wanted: [1-9][0-9]* received, every one dropped \(see the drop lines\)' \
		"$vfgx" run configs/dpdk-null.yaml --duration 0.3 -q
	grep -qE '^drop bad_eth +[1-9][0-9]*$' "$tmp/out" || bad "dpdk-null.yaml: no bad_eth drop line"
	echo "$fails failure(s)"
	exit $((fails != 0))
fi

expect_rc "default config passes" 0 '^result: PASSED' "$vfgx" run
expect_rc "default delivers 1000000" 0 'delivered 1000000 of 1000000 expected' "$vfgx" run -q
expect_rc "faults accounted" 0 'injected: [1-9][0-9]* lost, [1-9][0-9]* duplicated, [1-9][0-9]* corrupted' "$vfgx" run configs/loopback-faults.yaml

printf 'pipeline:\n  workers: 0\n' >"$tmp/bad.yaml"
expect_rc "out of range value" 2 "^vfgx: $tmp/bad.yaml:2:12: pipeline.workers: 0 is out of range \\(must be 1..64\\)$" "$vfgx" run "$tmp/bad.yaml"
[ "$(wc -l <"$tmp/out")" -eq 1 ] && ok "bad config is one line" || bad "bad config printed $(wc -l <"$tmp/out") lines"
# #44: loopback.packets stops at 2^63 - 1, and the message says so exactly
printf 'interfaces:\n  - backend: loopback\n    loopback: {packets: 9223372036854775808}\n' >"$tmp/big.yaml"
expect_rc "loopback.packets 2^63" 2 "^vfgx: $tmp/big.yaml:3:25: interfaces\\[0\\].loopback.packets: 9223372036854775808 is out of range \\(must be 0..9223372036854775807\\)$" "$vfgx" run "$tmp/big.yaml"
one_line "loopback.packets 2^63"
printf 'interfaces:\n  - backend: loopback\n    loopbak: {}\n' >"$tmp/typo.yaml"
expect_rc "unknown key" 2 "typo.yaml:3:5: interfaces\\[0\\].loopbak: unknown key" "$vfgx" run "$tmp/typo.yaml"
expect_rc "missing file" 2 'nope.yaml: cannot open config' "$vfgx" run "$tmp/nope.yaml"
# #39: pipeline.gpu is read by its option table at load, also on a host
# without a GPU: an unknown key or a bad value is one line, exit 2
printf 'pipeline:\n  gpu:\n    itmes: 64\n' >"$tmp/gpukey.yaml"
expect_rc "pipeline.gpu unknown key" 2 "^vfgx: $tmp/gpukey.yaml:3:5: pipeline.gpu.itmes: unknown key \\(allowed: mode, stage_copy, items, burst, graph_items, blocks, timeout_ms, user_stage, log_records, gpu_id, rx_threads\\)$" "$vfgx" run "$tmp/gpukey.yaml"
one_line "pipeline.gpu unknown key"
printf 'pipeline:\n  gpu: {mode: graph, items: 1}\n' >"$tmp/gpuval.yaml"
expect_rc "pipeline.gpu value out of range" 2 "^vfgx: $tmp/gpuval.yaml:2:29: pipeline.gpu.items: 1 is out of range \\(must be 2..4096\\)$" "$vfgx" run "$tmp/gpuval.yaml"
one_line "pipeline.gpu value out of range"
printf 'pipeline:\n  gpu: {user_stage: flow_max}\n' >"$tmp/gpuenum.yaml"
expect_rc "pipeline.gpu bad name" 2 "^vfgx: $tmp/gpuenum.yaml:2:21: pipeline.gpu.user_stage: 'flow_max' is not allowed \\(use one of: none, flow_sum\\)$" "$vfgx" run "$tmp/gpuenum.yaml"
one_line "pipeline.gpu bad name"
# a key the backend judges when the port opens: still one line, no info
# line about the pipeline device before it
printf 'interfaces:\n  - backend: socket\n    address: udp://127.0.0.1:5000\n    socket: {role: sideways}\n' >"$tmp/role.yaml"
expect_rc "backend config error" 2 "^vfgx: $tmp/role.yaml:4:20: interfaces\\[0\\].socket.role: 'sideways' is not allowed" "$vfgx" run "$tmp/role.yaml"
one_line "backend config error"
# rdma ring mode's own checks (the port refuses before it opens a device)
printf 'interfaces:\n  - backend: rdma\n    rdma: { peer: "10.0.0.1:7471", mode: ring, ring_bytes: 5000 }\n' >"$tmp/ring.yaml"
if "$vfgx" run "$tmp/ring.yaml" 2>&1 | grep -q "backend 'rdma'.*not"; then
	echo "SKIP: rdma ring options: this build has no RDMA backend"
else
	expect_rc "rdma ring_bytes not a power of two" 2 "^vfgx: $tmp/ring.yaml:3:11: interfaces\\[0\\].rdma: ring_bytes: 5000 is not a power of two$" "$vfgx" run "$tmp/ring.yaml"
	one_line "rdma ring_bytes not a power of two"
	sed -i 's/ring_bytes: 5000/qp_type: ud/' "$tmp/ring.yaml"
	expect_rc "rdma ring mode over UD" 2 "^vfgx: $tmp/ring.yaml:3:11: interfaces\\[0\\].rdma: mode: ring WRITEs into the peer's memory, which needs qp_type: rc$" "$vfgx" run "$tmp/ring.yaml"
fi
expect_rc "bad option" 2 "^vfgx run: unknown option '--frobnicate'" "$vfgx" run --frobnicate
expect_rc "unknown command" 2 "unknown command 'fly'" "$vfgx" fly

# pipeline.device: gpu where CUDA finds no GPU: one line naming the file, exit 2
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
	printf 'interfaces:\n  - backend: loopback\npipeline: {device: gpu}\n' >"$tmp/gpu.yaml"
	expect_rc "device gpu without a GPU" 2 "^vfgx: $tmp/gpu.yaml: pipeline.device: gpu, but .*[ (]use device: cpu or auto\\)$" "$vfgx" run "$tmp/gpu.yaml"
fi

# corrupted frames with UDP checksums off reach the payload check: unmet
cat >"$tmp/unmet.yaml" <<'Y'
interfaces:
  - backend: loopback
    loopback: {packets: 20000, corrupt: 0.05, udp_csum: false}
pipeline: {verify_payload: true}
expect: {verified: true}
Y
expect_rc "unmet expectation exits 1" 1 'verified +FAILED +[1-9][0-9]* payload mismatches' "$vfgx" run "$tmp/unmet.yaml"

# configs/socket-udp.yaml with no sender: nothing received, so it fails and
# says why; with min_packets: 0 the same empty run passes
expect_rc "no sender: zero delivered fails" 1 'min_packets +FAILED +0 delivered, at least 1 wanted: nothing received' \
	isolated "$vfgx" run configs/socket-udp.yaml --duration 0.5 -q
grep -q '^result: FAILED$' "$tmp/out" || bad "no sender: no 'result: FAILED'"
sed 's/^  verified: true$/  verified: true\n  min_packets: 0/' configs/socket-udp.yaml >"$tmp/empty-ok.yaml"
expect_rc "min_packets: 0 accepts an empty run" 0 '^result: PASSED$' isolated "$vfgx" run "$tmp/empty-ok.yaml" --duration 0.5 -q

# a memory region larger than the machine: one line before anything runs
# (mmap would overcommit and the first pass over the buffers would kill it)
cat >"$tmp/huge.yaml" <<'Y'
memory_regions:
  - {name: big, kind: host, buf_size: 1048576, num_bufs: 16000000}
interfaces:
  - backend: loopback
    rx: {queues: [{id: 0, memory_region: big}]}
Y
expect_rc "region larger than RAM" 2 "^vfgx: $tmp/huge.yaml:2:5: memory_regions\\[0\\]: num_bufs 16000000 x buf_size 1048576 is 16777216000000 bytes, more than this machine.s memory \\([0-9]+ bytes\\)$" "$vfgx" run "$tmp/huge.yaml"
one_line "region larger than RAM"

# an endless source stops on SIGINT with a report
cat >"$tmp/endless.yaml" <<'Y'
interfaces:
  - backend: loopback
    loopback: {packets: 0, rate_pps: 200000}
expect: {min_packets: 1}
Y
"$vfgx" run "$tmp/endless.yaml" >"$tmp/out" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 0 ] && grep -q '^interrupted: stopping' "$tmp/out" && grep -q '^result: PASSED' "$tmp/out"; then
	ok "SIGINT stops cleanly with a report"
else
	bad "SIGINT: exit $rc"; tail -5 "$tmp/out"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
