#!/usr/bin/env bash
# build-kmod.sh BUILDDIR - builds drivers/gpurdma_mon against Debian's
# linux-headers for the kernel the VM harness boots (a copy of the sources
# in BUILDDIR/gpurdma_mon-KVER, so the source tree stays clean), checks the
# module's vermagic, prints the build directory.  77: no kernel or headers.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
vmdir=${VFGX_VM_DIR:-$repo/.vm}
[[ -f $vmdir/kver ]] || { echo "SKIP: no guest kernel in $vmdir (run tests/vm/prepare-kernel.sh)" >&2; exit 77; }
kver=$(cat "$vmdir/kver")
kdir=/usr/src/linux-headers-$kver
[[ -f $kdir/Makefile ]] || { echo "SKIP: $kdir missing (apt-get install linux-headers-$kver; scripts/install-deps.sh does)" >&2; exit 77; }
out=$(realpath -m "$1")/gpurdma_mon-$kver
mkdir -p "$out"
cp -p "$repo"/drivers/gpurdma_mon/Makefile "$repo"/drivers/gpurdma_mon/*.[ch] "$out/"
mkdir -p "$out/uapi"
cp -p "$repo"/drivers/gpurdma_mon/uapi/*.h "$out/uapi/"
if ! make -s -C "$out" KDIR="$kdir" >"$out/build.log" 2>&1; then
	cat "$out/build.log" >&2
	echo "FAIL: gpurdma_mon does not build against $kdir" >&2
	exit 1
fi
# warnings are errors here too
if grep -E 'warning:|error:' "$out/build.log" >&2; then
	echo "FAIL: gpurdma_mon built with warnings against $kdir" >&2
	exit 1
fi
magic=$(modinfo -F vermagic "$out/gpurdma_mon.ko")
[[ $magic == "$kver "* ]] || { echo "FAIL: vermagic '$magic', want $kver" >&2; exit 1; }
echo "$out"
