#!/usr/bin/env bash
# test-harness.sh - the VM harness itself: output and exit status of the
# guest command come back, and a soft-RoCE device can be created in it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2016 # expanded by the guest's shell
out=$("$here/vm-run.sh" -t 240 -- sh -c 'echo vfgx-guest $(uname -r); ip link add va type veth peer name vb && ip link set va up && ip link set vb up && rdma link add rxa type rxe netdev va && ibv_devices | grep -c rxa; exit 7')
rc=$?
((rc == 77)) && { echo "$out"; exit 77; }
echo "$out"
((rc == 7)) || { echo "FAIL: guest exit status $rc, want 7"; exit 1; }
grep -q "^vfgx-guest $(cat "${VFGX_VM_DIR:-$here/../../.vm}/kver")" <<<"$out" || { echo "FAIL: guest kernel line missing"; exit 1; }
grep -qx 1 <<<"$out" || { echo "FAIL: rxa device not listed by ibv_devices"; exit 1; }
echo "PASS"
