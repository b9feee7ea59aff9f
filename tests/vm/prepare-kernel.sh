#!/usr/bin/env bash
# prepare-kernel.sh - fetch Debian's own kernel (never installed: apt-get
# download + dpkg -x), run depmod on the extracted tree and build the
# busybox initramfs the QEMU test guest boots.  Idempotent; cached under
# $VFGX_VM_DIR (default: <repo>/.vm, git-ignored).  Prints the cache dir.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
vmdir=${VFGX_VM_DIR:-$repo/.vm}
mkdir -p "$vmdir"
vmdir=$(cd "$vmdir" && pwd)

for tool in apt-get apt-cache dpkg depmod modprobe cpio gzip; do
	command -v "$tool" >/dev/null || { echo "prepare-kernel: missing $tool (run scripts/install-deps.sh)" >&2; exit 1; }
done
[[ -x /bin/busybox ]] || { echo "prepare-kernel: /bin/busybox missing (apt-get install busybox-static)" >&2; exit 1; }

# The version the distribution's meta package points at, e.g. linux-image-6.1.0-56-amd64.
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [[ -z $pkg ]]; then
	# Offline: reuse what is cached.
	[[ -f $vmdir/kver ]] || { echo "prepare-kernel: cannot resolve linux-image-amd64 (apt-get update?) and nothing cached in $vmdir" >&2; exit 1; }
	pkg=linux-image-$(cat "$vmdir/kver")
fi
kver=${pkg#linux-image-}
stamp=$vmdir/ready-$kver
# the initramfs is rebuilt whenever guest-init.sh changes
init_sum=$(sha256sum "$here/guest-init.sh" | cut -c1-16)
if [[ -f $stamp && -f $vmdir/initramfs-$kver.cpio.gz && -f $vmdir/root/boot/vmlinuz-$kver &&
      $(cat "$vmdir/initramfs-$kver.sum" 2>/dev/null) == "$init_sum" ]]; then
	echo "$vmdir"
	exit 0
fi

if [[ ! -f $stamp || ! -f $vmdir/root/boot/vmlinuz-$kver ]]; then
	mkdir -p "$vmdir/dl"
	if ! ls "$vmdir/dl/${pkg}_"*.deb >/dev/null 2>&1; then
		# apt downloads as the _apt user: into a folder it may write
		# (not the checkout), or apt warns it runs unsandboxed as root
		tmpdl=$(mktemp -d)
		if ((EUID == 0)) && id _apt >/dev/null 2>&1; then chown _apt "$tmpdl"; fi
		(cd "$tmpdl" && apt-get download "$pkg" >&2) || { rm -rf "$tmpdl"; exit 1; }
		mv "$tmpdl/${pkg}_"*.deb "$vmdir/dl/"
		rm -rf "$tmpdl"
	fi
	rm -rf "$vmdir/root"
	dpkg -x "$vmdir/dl/${pkg}_"*.deb "$vmdir/root"
	depmod -b "$vmdir/root" "$kver"
fi

# initramfs: busybox, the modules needed to reach the host's root over
# virtio 9p (in dependency order), and /init.
ird=$(mktemp -d)
trap 'rm -rf "$ird"' EXIT
mkdir -p "$ird"/{bin,dev,proc,sys,host,lib/modules}
cp /bin/busybox "$ird/bin/busybox"
: >"$ird/modules.order"
for m in virtio_pci 9pnet_virtio 9p; do
	modprobe -d "$vmdir/root" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}' |
	while read -r ko; do
		base=$(basename "$ko")
		grep -qx "$base" "$ird/modules.order" && continue
		cp "$ko" "$ird/lib/modules/$base"
		echo "$base" >>"$ird/modules.order"
	done
done
cp "$here/guest-init.sh" "$ird/init"
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$vmdir/initramfs-$kver.cpio.gz"
echo "$init_sum" >"$vmdir/initramfs-$kver.sum"
echo "$kver" >"$vmdir/kver"
touch "$stamp"
echo "$vmdir"
