#!/usr/bin/env bash
# bench-guest.sh [ROUNDS] - every benchmark of the QEMU soft-RoCE guest in
# ONE boot (the guest takes minutes to boot under TCG): the corner turn
# rounds of `vfgx bench scaleout --guest` (tests/mpi/vm_corner_turn.sh -b),
# `vfgx bench rdma --report` (rdma-bench.sh) and `vfgx bench eba`
# (eba/bench.sh), one after the other, each on its own veth and rxe device
# (removed again before the next).  Writes bench/results/rdma.md and eba.md,
# and the corner turn's output to build/bench-guest/corner_turn.log, which
#   vfgx bench scaleout --guest tests/mpi/vm_corner_turn.sh --guest-log FILE
# then reads beside its host part.  The guest kernel gets init_on_alloc=0
# (vm_corner_turn.sh says why) for all three.  ROUNDS (default 8): rdma and
# eba rounds; the corner turn runs ROUNDS - 1 (at least 7).  Run it under
# flock /work/net.lock (and the bench lock) on a shared host.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-8}
vfgx=$root/build/src/cli/vfgx
ct=$root/build/examples/corner_turn/corner_turn
logdir=$root/build/bench-guest
ct_rounds=$((rounds - 1 < 7 ? 7 : rounds - 1))
if [[ ${VFGX_IN_VM:-0} != 1 ]]; then
	mkdir -p "$root/bench/results" "$logdir"
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	exec "$here/vm-run.sh" -t 3600 -a init_on_alloc=0 -w "$root/bench/results" -w "$logdir" \
		-e "VFGX_BENCH_HOST_LOAD=load average $load (1, 5, 15 min) when the guest started (one boot for the corner turn, rdma and eba benchmarks: tests/vm/bench-guest.sh)" \
		-- bash "$here/bench-guest.sh" "$rounds"
fi
rc=0
echo "bench-guest: corner turn, $ct_rounds rounds ($(date -u +%T))"
bash "$root/tests/mpi/vm_corner_turn.sh" -n 2 -b "$ct_rounds" -r 400 "$ct" >"$logdir/corner_turn.log" 2>&1 || rc=1
tail -n 3 "$logdir/corner_turn.log"
rdma link delete rxe0 2>/dev/null
ip link del ct0 2>/dev/null
echo "bench-guest: rdma, $rounds rounds ($(date -u +%T))"
"$here/rxe-env.sh" bash "$here/rdma-bench.sh" "$vfgx" "$rounds" || rc=1
rdma link delete rxa 2>/dev/null
ip link del va 2>/dev/null
echo "bench-guest: eba, $rounds rounds ($(date -u +%T))"
bash "$here/eba/bench.sh" "$vfgx" --seconds 6 --rounds "$rounds" || rc=1
echo "bench-guest: done ($(date -u +%T)), status $rc"
exit $rc
