#!/usr/bin/env bash
# rdma-bench.sh [VFGX] [ROUNDS] - run `vfgx bench rdma --report` in the QEMU
# guest on one soft-RoCE device (tests/vm/rxe-env.sh) and write
# bench/results/rdma.md.  The host's load average at the start goes into the
# file.  Run it under flock /work/net.lock (and the bench lock) on a shared host.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
vfgx=$(realpath "${1:-$root/build/src/cli/vfgx}")
rounds=${2:-10}
mkdir -p "$root/bench/results"
if [[ ${VFGX_IN_VM:-0} != 1 ]]; then
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	exec "$here/vm-run.sh" -t 3000 -w "$root/bench/results" \
		-e "VFGX_BENCH_HOST_LOAD=load average $load (1, 5, 15 min) when the guest started" \
		-- "$here/rxe-env.sh" bash "$here/rdma-bench.sh" "$vfgx" "$rounds"
fi
cd "$root"
"$vfgx" bench rdma --report -d "$VFGX_RDMA_DEV" --ip "$VFGX_RDMA_IP" --rounds "$rounds" \
	--out "$root/bench/results"
