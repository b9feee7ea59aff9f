#!/bin/busybox sh
# shellcheck shell=dash
# guest-init.sh - /init of the test guest: load virtio + 9p, mount the
# host's root read-only and the run's output share, chroot into the host
# root and run the script vm-run.sh left in the output share; record its
# exit status and power off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
while read -r m; do
	insmod "/lib/modules/$m" || echo "guest-init: insmod $m failed"
done </modules.order
out=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case $arg in vfgx.out=*) out=${arg#vfgx.out=} ;; esac
done
opts=trans=virtio,version=9p2000.L,msize=524288
# the host's root is read-only here and nothing the guest runs waits for a
# host file to change: cache=loose keeps what the guest has read (files,
# directory entries, attributes) in its own page cache instead of asking
# QEMU's 9p server again on every exec, open and stat (a python3 start is
# hundreds of those; on the loaded 2-core host each took a round trip)
if ! mount -t 9p -o "$opts,ro,cache=loose" hostroot /host; then
	echo "guest-init: cannot mount the host root"; poweroff -f
fi
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
mount -t tmpfs tmpfs /host/var/tmp 2>/dev/null
mkdir -p "/host$out" 2>/dev/null
if ! mount -t 9p -o "$opts" vfgxout "/host$out"; then
	echo "guest-init: cannot mount the output share at $out"; poweroff -f
fi
chroot /host /bin/sh "$out/run.sh" >"/host$out/output" 2>&1
echo $? >"/host$out/rc"
sync
poweroff -f
