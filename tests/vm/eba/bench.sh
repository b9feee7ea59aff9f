#!/usr/bin/env bash
# bench.sh [VFGX [ARGS...]] - run `vfgx bench eba [ARGS...]` in the QEMU guest
# on a soft-RoCE device (rxe0 on a veth, 198.18.74.1) and write
# bench/results/eba.md; the host's load average at the start goes into the
# file.  Run it under flock /work/net.lock (and the bench lock) on a shared host.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
vfgx=$(realpath "${1:-$root/build/src/cli/vfgx}")
shift || true
mkdir -p "$root/bench/results"
if [[ ${VFGX_IN_VM:-0} != 1 ]]; then
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	exec "$here/../vm-run.sh" -t 1800 -w "$root/bench/results" \
		-e "VFGX_BENCH_HOST_LOAD=load average $load (1, 5, 15 min) when the guest started" \
		-- bash "$here/bench.sh" "$vfgx" "$@"
fi
ip link add eba0 type veth peer name eba1
ip addr add 198.18.74.1/24 dev eba0
ip link set eba0 up
ip link set eba1 up
ip link set lo up
rdma link add rxe0 type rxe netdev eba0
cd "$root"
"$vfgx" bench eba --dev rxe0 --addr 198.18.74.1 --out "$root/bench/results" "$@"
