#!/usr/bin/env bash
# install-deps.sh - install the Debian 12 packages VectorFlow-GX builds and
# tests with.  Idempotent: installs only what is missing, runs apt-get update
# at most once.  Needs root (or sudo) when something is missing.
set -euo pipefail

pkgs=(
	# build
	build-essential meson ninja-build pkg-config python3 clang libclang-rt-14-dev
	# core
	libyaml-dev libcmocka-dev libjson-c-dev libmnl-dev libmicrohttpd-dev prometheus python3-matplotlib librsvg2-bin
	# backends
	libxdp-dev libbpf-dev bpftool libdpdk-dev dpdk
	rdma-core libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils perftest
	# references and test tooling
	sockperf iproute2 kmod cpio busybox-static qemu-system-x86 shellcheck
	ethtool # afxdp net test: checksum offload off on the veth sender
	dpdk-dev # dpdk-testpmd: the reference of vfgx bench dpdk
)
# gpurdma_mon: headers of the kernel the VM tests boot (linux-image-amd64's target)
kimage=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}' || true)
[[ -n $kimage ]] && pkgs+=("linux-headers-${kimage#linux-image-}")

missing=()
for p in "${pkgs[@]}"; do
	[[ $p == \#* ]] && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#pkgs[@]} packages present"
	"$(dirname "$0")/../tests/vm/prepare-kernel.sh" >/dev/null || echo "install-deps: VM guest kernel not prepared; vm tests will skip" >&2
	exit 0
fi

sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
"$(dirname "$0")/../tests/vm/prepare-kernel.sh" >/dev/null || echo "install-deps: VM guest kernel not prepared; vm tests will skip" >&2
