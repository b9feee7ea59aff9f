#!/usr/bin/env bash
# test-mon.sh MON_GUEST VFGX BUILDDIR - builds gpurdma_mon against Debian's
# linux-headers for the kernel the VM harness boots, then runs guest.sh in
# a q35 guest with two PCIe expander bridges on two NUMA nodes, each with a
# root port and an e1000e, so the driver reads real link registers.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
mon_guest=$(realpath "$1") vfgx=$(realpath "$2") bdir=$3

kmod=$("$here/build-kmod.sh" "$bdir")
rc=$?
((rc == 0)) || exit $rc

cd "$repo" || exit 1
"$repo/tests/vm/vm-run.sh" --no-rdma -t 840 \
	-q -machine -q q35 \
	-q -object -q memory-backend-ram,id=m0,size=1024M \
	-q -object -q memory-backend-ram,id=m1,size=1024M \
	-q -numa -q node,nodeid=0,cpus=0,memdev=m0 \
	-q -numa -q node,nodeid=1,cpus=1,memdev=m1 \
	-q -device -q pxb-pcie,id=pxb0,bus_nr=32,numa_node=0,bus=pcie.0 \
	-q -device -q pcie-root-port,id=rp0,bus=pxb0,chassis=1,slot=1 \
	-q -device -q e1000e,bus=rp0 \
	-q -device -q pxb-pcie,id=pxb1,bus_nr=64,numa_node=1,bus=pcie.0 \
	-q -device -q pcie-root-port,id=rp1,bus=pxb1,chassis=2,slot=2 \
	-q -device -q e1000e,bus=rp1 \
	-- sh "$here/guest.sh" "$kmod/gpurdma_mon.ko" "$mon_guest" "$vfgx"
rc=$?
((rc == 0 || rc == 77)) || echo "FAIL: guest exit status $rc"
exit $rc
