#!/usr/bin/env bash
# afxdp-device-kit.sh BUILD DEST - packs `vfgx bench afxdp` for a bare
# x86-64 machine with another userland (no apt, no iproute2, no DPDK):
# vfgx from BUILD (meson build dir), plus ip, ethtool, dpdk-testpmd, the
# net_af_xdp and mempool_ring PMDs, libxdp's XDP objects and every library
# they load, taken from the Debian 12 packages (apt-get download + dpkg -x)
# and run through Debian's own loader.  Writes DEST/kit.tar.gz (gzip: every
# userland has it) and DEST/device.sh; on the target: `bash DEST/device.sh`
# (root; results go to $OUT, or /tmp/vfgx-xdp-out).  Run on the Debian 12
# build host, as root.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BUILD DEST   (e.g. build-kit .carry-xdp)" >&2; exit 2; }
build=$(readlink -f "$1")
dest=$2
root=$(cd "$(dirname "$0")/.." && pwd)
vfgx=$build/src/cli/vfgx
vfgx_bench=$build/src/cli/vfgx-bench
for b in "$vfgx" "$vfgx_bench"; do
	[ -x "$b" ] || { echo "$0: $b not built (ninja -C $1)" >&2; exit 1; }
done
multi=x86_64-linux-gnu
pmddir=$(ls -d /usr/lib/$multi/dpdk/pmds-* | head -1)
pmds="librte_net_af_xdp.so librte_mempool_ring.so"
bins="/usr/sbin/ip /usr/sbin/ethtool /usr/bin/dpdk-testpmd"

work=$(mktemp -d /tmp/afxdp-kit.XXXXXX)
trap 'rm -rf "$work"' EXIT
kit=$work/kit
mkdir -p "$kit"/{bin,lib,pmds,bpf,wrap,repo/scripts} "$work/debs" "$work/stage"

# Packages: those owning the programs, the PMDs, libxdp's objects, the
# loader, and every library ldd resolves for them (dpkg knows a file under
# /lib or /usr/lib, whichever the package shipped).
objs="$vfgx $vfgx_bench $bins"
for p in $pmds; do objs="$objs $pmddir/$(readlink "$pmddir/$p")"; done
owner() {
	dpkg -S "$1" 2>/dev/null || dpkg -S "${1#/usr}" 2>/dev/null ||
		dpkg -S "/usr$1" 2>/dev/null || true
}
libs=$(for o in $objs; do ldd "$o" | awk '$3 ~ /^\// {print $3}'; done | sort -u)
pkgs=$(for f in $bins $libs /lib64/ld-linux-x86-64.so.2 \
		/usr/lib/$multi/bpf/xsk_def_xdp_prog.o \
		"$pmddir/$(readlink "$pmddir/librte_net_af_xdp.so")" \
		"$pmddir/$(readlink "$pmddir/librte_mempool_ring.so")"; do
		case $f in "$build"/*) continue ;; esac
		owner "$(readlink -f "$f")" | head -1 | cut -d: -f1
	done | sort -u)
chmod 755 "$work"; chmod 777 "$work/debs"
(cd "$work/debs" && apt-get download $pkgs >/dev/null)
for d in "$work"/debs/*.deb; do dpkg -x "$d" "$work/stage"; done

# Files from the unpacked packages only: programs, libraries by name, PMDs.
for b in $bins; do
	f=$(find "$work/stage" -name "$(basename "$b")" -type f -path "*bin/*" | head -1)
	[ -n "$f" ] || { echo "$0: $b not in the downloaded packages" >&2; exit 1; }
	cp "$f" "$kit/bin/"
done
cp "$vfgx" "$kit/bin/vfgx"
cp "$vfgx_bench" "$kit/bin/vfgx-bench"
strip "$kit/bin/vfgx" "$kit/bin/vfgx-bench"
for l in $libs; do
	n=$(basename "$l")
	case $l in "$build"/*)
		cp -L "$l" "$kit/lib/$n" && strip "$kit/lib/$n"
		continue ;;
	esac
	f=$(find "$work/stage" -name "$n" \( -type f -o -type l \) | head -1)
	[ -n "$f" ] || { echo "$0: $n not in the downloaded packages" >&2; exit 1; }
	cp -L "$f" "$kit/lib/$n"
done
cp -L "$work/stage/lib64/ld-linux-x86-64.so.2" "$kit/lib/" 2>/dev/null ||
	cp -L "$(find "$work/stage" -name ld-linux-x86-64.so.2 | head -1)" "$kit/lib/"
for p in $pmds; do
	f=$(find "$work/stage" -path "*dpdk/pmds-*/$p.*" -type f | head -1)
	# EAL's -d DIR loads only names ending in .so or .so.<ABI>.0
	cp -L "$f" "$kit/pmds/$p"
done
cp "$work"/stage/usr/lib/$multi/bpf/{xsk_def_xdp_prog.o,xsk_def_xdp_prog_5.3.o,xdp-dispatcher.o} "$kit/bpf/"
cp "$root/scripts/netns-veth.sh" "$kit/repo/scripts/"

# Every library the programs and PMDs need must resolve inside the kit.
for o in "$kit"/bin/* "$kit"/pmds/*; do
	if "$kit/lib/ld-linux-x86-64.so.2" --library-path "$kit/lib" --list "$o" |
		awk '$3 ~ /^\// {print $3}' | grep -v "^$kit/lib/"; then
		echo "$0: $o loads a library from outside the kit" >&2
		exit 1
	fi
done

# vfgx runs through the loader, so it cannot find vfgx-bench beside its
# own /proc/self/exe: VFGX_BENCH names the wrapper
for b in ip ethtool vfgx vfgx-bench; do
	cat >"$kit/wrap/$b" <<EOF
#!/bin/sh
k=\$(dirname "\$(dirname "\$(readlink -f "\$0")")")
export VFGX_BENCH="\$k/wrap/vfgx-bench"
exec "\$k/lib/ld-linux-x86-64.so.2" --library-path "\$k/lib" "\$k/bin/$b" "\$@"
EOF
done
cat >"$kit/wrap/dpdk-testpmd" <<'EOF'
#!/bin/sh
k=$(dirname "$(dirname "$(readlink -f "$0")")")
exec "$k/lib/ld-linux-x86-64.so.2" --library-path "$k/lib" "$k/bin/dpdk-testpmd" -d "$k/pmds" "$@"
EOF
chmod +x "$kit"/wrap/*
ls "$work/debs" >"$kit/PACKAGES"
echo "vfgx from $(git -C "$root" rev-parse --abbrev-ref HEAD) $(git -C "$root" describe --always --dirty), built $(date -u '+%F %T UTC')" >"$kit/VERSION"

mkdir -p "$dest"
tar -C "$work" -czf "$dest/kit.tar.gz" kit
cat >"$dest/device.sh" <<'EOF'
#!/usr/bin/env bash
# device.sh - runs `vfgx bench afxdp` from kit.tar.gz beside it (see
# scripts/afxdp-device-kit.sh): unpacks it to /root, puts its ip, ethtool,
# dpdk-testpmd and vfgx first in PATH, and writes the results to $OUT.
# AFXDP_SECONDS (5), AFXDP_SENDERS (12), AFXDP_QUEUES (8) change the main
# run; AFXDP_VARIANTS (default "1 12") are extra queue counts, each in
# $OUT/qN/ with 3 s windows; AFXDP_TOUCH=0 skips the --touch run in $OUT/touch.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/vfgx-xdp-out}
# DPDK (EAL) refuses to load PMDs from below a world-writable directory such as /tmp
w=/root/vfgx-xdp
mkdir -p "$out"
rm -rf "$w" && mkdir -p "$w" && tar -C "$w" -xzf "$here/kit.tar.gz" || exit 1
export PATH="$w/kit/wrap:$PATH" LIBXDP_OBJECT_PATH="$w/kit/bpf"
mountpoint -q /sys/fs/bpf 2>/dev/null || mount -t bpf bpf /sys/fs/bpf 2>/dev/null
{
	cat "$w/kit/VERSION"
	echo "nproc: $(nproc)   load: $(cat /proc/loadavg)   kernel: $(uname -r)"
	for t in ip ethtool dpdk-testpmd vfgx; do echo "$t -> $(command -v $t)"; done
	ip -V
	ethtool --version
} 2>&1 | tee "$out/setup.log"
cd "$w/kit/repo" || exit 1
set -o pipefail
vfgx bench afxdp --seconds "${AFXDP_SECONDS:-3}" --rounds "${AFXDP_ROUNDS:-5}" --touch \
	--senders "${AFXDP_SENDERS:-12}" --queues "${AFXDP_QUEUES:-8}" --out "$out" 2>&1 | grep -v '^libbpf: elf: skipping' | tee "$out/bench.log"
rc=$?
for q in ${AFXDP_VARIANTS-1 12}; do
	mkdir -p "$out/q$q"
	vfgx bench afxdp --seconds 3 --senders "${AFXDP_SENDERS:-12}" --queues "$q" \
		--out "$out/q$q" 2>&1 | grep -v '^libbpf: elf: skipping' | tee "$out/q$q/bench.log"
done
# the main setup once more with vfgx reading a byte of every frame
if [ "${AFXDP_TOUCH:-1}" = 1 ]; then
	mkdir -p "$out/touch"
	vfgx bench afxdp --seconds 3 --senders "${AFXDP_SENDERS:-12}" --queues "${AFXDP_QUEUES:-8}" \
		--touch --out "$out/touch" 2>&1 | grep -v '^libbpf: elf: skipping' | tee "$out/touch/bench.log"
fi
echo "load at the end: $(cat /proc/loadavg)" | tee -a "$out/setup.log"
sed -n '/^| frame B | afxdp/,$p' "$out/afxdp.md" 2>/dev/null
exit $rc
EOF
chmod +x "$dest/device.sh"
du -sh "$dest"/*
