#!/bin/sh
# rxe-env.sh - inside the test guest: make a veth pair, put one soft-RoCE
# device (rxa) on va with 10.77.0.1/24, then run the given command with
# VFGX_RDMA_DEV=rxa VFGX_RDMA_IP=10.77.0.1.  One device: two rxe devices on
# one veth pair in one namespace route through lo and hang.
set -e
[ "${VFGX_IN_VM:-}" = 1 ] || { echo "rxe-env: run inside tests/vm/vm-run.sh"; exit 77; }
ip link add va type veth peer name vb
ip addr add 10.77.0.1/24 dev va
ip link set lo up
ip link set va up
ip link set vb up
rdma link add rxa type rxe netdev va
export VFGX_RDMA_DEV=rxa VFGX_RDMA_IP=10.77.0.1
# shellcheck disable=SC3045 # dash and busybox sh have ulimit -l
ulimit -l unlimited 2>/dev/null || true
set +e
"$@"
