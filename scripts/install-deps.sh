#!/usr/bin/env bash
# install-deps.sh [--dry-run] - install the Debian 12 packages VectorFlow-GX
# builds and tests with, then prepare the VM tests' guest kernel.
# Idempotent: installs only what is missing, runs apt-get update at most
# once.  Names that depend on apt's lists (the kernel headers the VM tests
# build against) are resolved from the lists, refreshed first where they
# cannot be; a name that still cannot be resolved is an error, never a
# silent omission.  --dry-run: resolve and print what would be installed,
# install nothing.  Needs root (or sudo) when something is missing.
set -euo pipefail

dry_run=false
case ${1:-} in
"") ;;
--dry-run) dry_run=true ;;
*) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac

pkgs=(
	# build
	build-essential meson ninja-build pkg-config python3 clang libclang-rt-14-dev
	llvm # llvm-symbolizer: sanitizer reports with file:line, libFuzzer's coverage report (fuzz-cover-*)
	# core
	libyaml-dev libcmocka-dev libjson-c-dev libmnl-dev libmicrohttpd-dev prometheus python3-matplotlib python3-pil librsvg2-bin
	libfftw3-dev # examples/spectrometer: the CPU twin of the cuFFT spectrometer
	python3-dev python3-numpy python3-pytest libdlpack-dev # the Python package (python/)
	python3-prometheus-client # tests/python parses the metrics page with its text parser
	libhdf5-dev liburing-dev python3-h5py # the recorder (src/record): HDF5 and raw files; h5py reads them back in the tests
	# backends
	libxdp-dev libbpf-dev bpftool libdpdk-dev dpdk
	libpcap-dev tshark # backend pcap, capture files; tshark reads them back in the tests
	libwiretap-dev libwsutil-dev libglib2.0-dev # pcapng capture files (libwiretap writes them; its headers need wsutil's and glib's)
	rdma-core libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils perftest
	# references and test tooling
	libopenmpi-dev openmpi-bin # the MPI part (src/mpi) and its mpirun tests
	sockperf iproute2 kmod cpio busybox-static qemu-system-x86 shellcheck
	ethtool # afxdp net test: checksum offload off on the veth sender
	fio # bench/record: the reference of raw recording's write rate
	netsniff-ng # trafgen: a reference row of vfgx bench send (the fastest Debian packet sender)
	dpdk-dev # dpdk-testpmd: the reference of vfgx bench dpdk and bench afxdp
	util-linux procps # netns tests: unshare, setpriv, pgrep, sysctl
	wget # gpurdma_mon-guest reads vfgx run's metrics page with it (tests/vm/mon/guest.sh)
	# producers' formats (#38): real senders and the capture the tests decode
	gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good ffmpeg tcpdump
	gnuradio # gr-network's UDP sink (tests/net/format); 111 packages, 321 MB on a Debian 12 base
)

sudo=()
if ((EUID != 0)); then
	sudo=(sudo)
fi
updated=false
apt_update() {
	$updated && return 0
	if ((EUID != 0)) && ! command -v sudo >/dev/null; then
		echo "install-deps: need root to run apt-get update" >&2
		exit 1
	fi
	echo "install-deps: apt-get update"
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -q
	updated=true
}

# gpurdma_mon in the VM tests: the headers of the kernel the guest boots,
# the version linux-image-amd64 points at in apt's lists.
headers_pkg() {
	local kimage
	kimage=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[[ -n $kimage ]] && echo "linux-headers-${kimage#linux-image-}"
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing_pkgs() {
	missing=()
	for p in "${pkgs[@]}"; do
		installed "$p" || missing+=("$p")
	done
}

headers=$(headers_pkg) || true
missing_pkgs
if [[ -z $headers ]] || ((${#missing[@]})); then
	# empty or stale lists (a fresh machine): names resolve only after this
	apt_update
	[[ -n $headers ]] || headers=$(headers_pkg) || {
		echo "install-deps: cannot resolve the kernel headers package: linux-image-amd64 names no linux-image-<version> in apt's lists (check /etc/apt/sources.list, then rerun)" >&2
		exit 1
	}
fi
pkgs+=("$headers")
missing_pkgs

if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#pkgs[@]} packages present"
elif $dry_run; then
	echo "install-deps: would install ${missing[*]}"
else
	echo "install-deps: installing ${missing[*]}"
	apt_update
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
$dry_run && exit 0
"$(dirname "$0")/../tests/vm/prepare-kernel.sh" >/dev/null || echo "install-deps: VM guest kernel not prepared; vm tests will skip" >&2
