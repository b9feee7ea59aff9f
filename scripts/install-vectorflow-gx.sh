#!/usr/bin/env bash
# install-vectorflow-gx.sh - clone (or reuse), build and install VectorFlow-GX:
# distribution packages, libvfgx + headers + vfgx.pc + the vfgx tool under
# PREFIX, the gpurdma_mon kernel module when the running kernel's headers
# exist, and the NIC bound for DPDK where its driver needs that.  Safe to
# run again: it updates, rebuilds what changed and skips what is done.
#
# usage: install-vectorflow-gx.sh [options]
#   -r REPO_URL   git repository to clone (required unless --no-clone)
#   -b BRANCH     branch to clone or update (default: main)
#   -d DIR        source checkout (default: ./VectorFlow-GX)
#   -n NIC_PCI    NIC to prepare for DPDK, e.g. 0000:17:00.0
#   -g GPU_PCI    GPU to pair with the NIC (printed in the run command)
#   --no-clone    use the source already in DIR
#   --no-bind     leave NIC drivers alone
#   --no-kmod     do not build or install the gpurdma_mon kernel module
#   --check       only run `vfgx doctor` (installed under PREFIX, or built in
#                 BUILD_DIR or by make in this checkout) and exit with its status
#   -h            this help
# environment:
#   CUDA_HOME     CUDA toolkit root (default /usr/local/cuda)
#   PREFIX        install prefix (default /usr/local; DPDK_PREFIX is accepted too)
#   BUILD_DIR     meson build directory (default DIR/build-install)
#   MESON_ARGS    extra `meson setup` options, e.g. "-Ddpdk=disabled"
set -euo pipefail

REPO_URL=""
BRANCH="main"
SRC_DIR="./VectorFlow-GX"
NIC_PCI=""
GPU_PCI=""
DO_CLONE=true
DO_BIND=true
DO_KMOD=true
CHECK_ONLY=false
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
PREFIX="${PREFIX:-${DPDK_PREFIX:-/usr/local}}"
BUILD_DIR="${BUILD_DIR:-}"
MESON_ARGS="${MESON_ARGS:-}"
PROG=$(basename "$0")

log() { echo "[+] $*"; }
note() { echo "[!] $*"; }
die() {
	echo "$PROG: $*" >&2
	exit 2
}

usage() {
	sed -n '/^# usage:/,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
}

# value OPTION ARGS...: the option's value, or a one-line error
value() {
	[[ $# -ge 2 && -n $2 && $2 != -* ]] || die "$1 needs a value ($PROG -h)"
	printf '%s' "$2"
}

# normalise a PCI address to DDDD:BB:DD.F
pci_addr() {
	local a=${2,,}
	[[ $a =~ ^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] && a="0000:$a"
	[[ $a =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] ||
		die "$1 '$2': not a PCI address (like 0000:17:00.0; see lspci -D)"
	printf '%s' "$a"
}

while [[ $# -gt 0 ]]; do
	case $1 in
	-r) REPO_URL=$(value "$@"); shift 2 ;;
	-b) BRANCH=$(value "$@"); shift 2 ;;
	-d) SRC_DIR=$(value "$@"); shift 2 ;;
	-n) v=$(value "$@"); NIC_PCI=$(pci_addr -n "$v"); shift 2 ;;
	-g) v=$(value "$@"); GPU_PCI=$(pci_addr -g "$v"); shift 2 ;;
	--no-clone) DO_CLONE=false; shift ;;
	--no-bind) DO_BIND=false; shift ;;
	--no-kmod) DO_KMOD=false; shift ;;
	--check) CHECK_ONLY=true; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option '$1' ($PROG -h lists them)" ;;
	esac
done

# vfgx where it was put: installed under PREFIX, this script's build
# directory, `make`'s build of the checkout holding this script, or PATH
run_doctor() {
	local here vfgx c
	here=$(cd "$(dirname "$0")/.." && pwd)
	for c in "$PREFIX/bin/vfgx" "$BUILD_DIR/src/cli/vfgx" "$here/build/src/cli/vfgx" \
		"$here/build-install/src/cli/vfgx" "$(command -v vfgx || true)"; do
		[[ -n $c && -x $c ]] && { vfgx=$c; break; }
	done
	[[ -n ${vfgx:-} ]] || die "no vfgx in $PREFIX/bin, $BUILD_DIR, $here/build or PATH: install first (or make build)"
	log "vfgx doctor ($vfgx)"
	"$vfgx" doctor
}

[[ -n $BUILD_DIR ]] || BUILD_DIR=$SRC_DIR/build-install
if $CHECK_ONLY; then
	rc=0
	run_doctor || rc=$?
	exit "$rc"
fi

as_root=()
if ((EUID != 0)); then
	command -v sudo >/dev/null && as_root=(sudo)
fi

# --- source -------------------------------------------------------------------
if $DO_CLONE; then
	[[ -n $REPO_URL ]] || die "-r REPO_URL is required (or --no-clone -d DIR to use a checkout)"
	command -v git >/dev/null || die "git not found (apt-get install git)"
	if [[ -d $SRC_DIR/.git ]]; then
		log "updating $SRC_DIR to origin/$BRANCH"
		git -C "$SRC_DIR" fetch --quiet origin "$BRANCH"
		git -C "$SRC_DIR" checkout --quiet "$BRANCH"
		git -C "$SRC_DIR" merge --quiet --ff-only "origin/$BRANCH"
	elif [[ -e $SRC_DIR ]]; then
		die "$SRC_DIR exists but is not a git checkout (remove it, or use --no-clone)"
	else
		log "cloning $REPO_URL ($BRANCH) into $SRC_DIR"
		git clone --quiet --branch "$BRANCH" "$REPO_URL" "$SRC_DIR"
	fi
else
	[[ -f $SRC_DIR/meson.build ]] || die "-d $SRC_DIR: no VectorFlow-GX source there (drop --no-clone to clone it)"
	log "using the source in $SRC_DIR"
fi
SRC_DIR=$(cd "$SRC_DIR" && pwd)
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$PWD/$BUILD_DIR

# --- packages, build, install -----------------------------------------------------
"$SRC_DIR/scripts/install-deps.sh"

# shellcheck disable=SC2206 # MESON_ARGS is a list of options
extra=($MESON_ARGS)
opts=(--prefix "$PREFIX" "-Dcudatoolkit=$CUDA_HOME" -Dtests=false "${extra[@]}")
if [[ -f $BUILD_DIR/build.ninja ]]; then
	log "reconfiguring $BUILD_DIR"
	setup=(meson configure "$BUILD_DIR" "${opts[@]}")
else
	log "configuring $BUILD_DIR (CUDA_HOME=$CUDA_HOME, PREFIX=$PREFIX)"
	setup=(meson setup "$BUILD_DIR" "$SRC_DIR" "${opts[@]}")
fi
if ! configured=$("${setup[@]}" 2>&1); then
	tail -n 30 <<<"$configured" >&2
	die "meson could not configure $BUILD_DIR (the lines above say why)"
fi
if ! built=$(ninja -C "$BUILD_DIR" 2>&1); then
	tail -n 30 <<<"$built" >&2
	die "build failed in $BUILD_DIR (the lines above say why)"
fi
log "building: $(tail -n 1 <<<"$built")"

mkdir -p "$PREFIX" 2>/dev/null || true
install_cmd=()
[[ -w $PREFIX ]] || install_cmd=("${as_root[@]}")
[[ -w $PREFIX || ${#install_cmd[@]} -gt 0 ]] || die "$PREFIX is not writable: run as root or set PREFIX"
log "installing into $PREFIX"
"${install_cmd[@]}" meson install -C "$BUILD_DIR" --no-rebuild --quiet
if [[ $PREFIX == /usr || $PREFIX == /usr/local ]] && command -v ldconfig >/dev/null; then
	"${install_cmd[@]}" ldconfig
fi

# --- kernel module ------------------------------------------------------------
kdir=/lib/modules/$(uname -r)/build
if ! $DO_KMOD; then
	note "--no-kmod: gpurdma_mon not built"
elif [[ ! -f $SRC_DIR/drivers/gpurdma_mon/Makefile ]]; then
	note "no drivers/gpurdma_mon in this source: kernel module skipped"
elif [[ ! -d $kdir ]]; then
	note "no headers for kernel $(uname -r): gpurdma_mon skipped (apt-get install linux-headers-$(uname -r), then rerun)"
else
	log "building and installing gpurdma_mon for $(uname -r)"
	mod=$SRC_DIR/drivers/gpurdma_mon
	if make -C "$mod" -n install >/dev/null 2>&1; then
		"${as_root[@]}" make -C "$mod" install
	else
		# a Makefile without an install target: kbuild's own
		make -C "$mod"
		"${as_root[@]}" make -C "$kdir" M="$mod" modules_install
		"${as_root[@]}" depmod -a
	fi
fi

# --- NIC binding ----------------------------------------------------------------
if $DO_BIND; then
	[[ -n $NIC_PCI ]] || die "-n NIC_PCI is required to prepare a NIC (or --no-bind)"
	dev=/sys/bus/pci/devices/$NIC_PCI
	[[ -e $dev ]] || die "-n $NIC_PCI: no such PCI device (see lspci -D)"
	vendor=$(<"$dev/vendor")
	driver=$(basename "$(readlink "$dev/driver" 2>/dev/null || echo none)")
	if [[ $vendor == 0x15b3 ]]; then
		if [[ $driver == mlx5_core ]]; then
			log "$NIC_PCI: stays on mlx5_core (the mlx5 DPDK driver is bifurcated; no vfio-pci)"
		else
			log "$NIC_PCI: Mellanox NIC on '$driver': binding it back to mlx5_core"
			"${as_root[@]}" modprobe mlx5_core
			"${as_root[@]}" dpdk-devbind.py --bind=mlx5_core "$NIC_PCI"
		fi
	elif [[ $driver == vfio-pci ]]; then
		log "$NIC_PCI: already on vfio-pci"
	else
		command -v dpdk-devbind.py >/dev/null || die "dpdk-devbind.py not found (apt-get install dpdk)"
		for n in "$dev"/net/*; do
			[[ -e $n ]] && "${as_root[@]}" ip link set "$(basename "$n")" down
		done
		log "$NIC_PCI: binding to vfio-pci (was $driver)"
		"${as_root[@]}" modprobe vfio-pci
		"${as_root[@]}" dpdk-devbind.py --bind=vfio-pci "$NIC_PCI"
	fi
fi

if [[ -n $GPU_PCI ]]; then
	gdev=/sys/bus/pci/devices/$GPU_PCI
	if [[ ! -e $gdev ]]; then
		note "-g $GPU_PCI: no such PCI device here (see lspci -D -d 10de:)"
	elif [[ $(<"$gdev/vendor") != 0x10de ]]; then
		note "-g $GPU_PCI: not an NVIDIA device (vendor $(<"$gdev/vendor"))"
	fi
fi

# --- how to run -----------------------------------------------------------------
echo
log "VectorFlow-GX installed in $PREFIX"
echo "  check the system:  $PREFIX/bin/vfgx doctor"
echo "  list devices:      $PREFIX/bin/vfgx devices"
echo "  run the demo:      $PREFIX/bin/vfgx run"
if [[ -n $NIC_PCI || -n $GPU_PCI ]]; then
	echo "  run on hardware:   $PREFIX/bin/vfgx run my.yaml"
	[[ -z $NIC_PCI ]] || echo "    with interfaces[0].address: $NIC_PCI in my.yaml (docs/config.md)"
	[[ -z $GPU_PCI ]] || echo "    with a memory_regions entry of kind: gpu for GPU $GPU_PCI (vfgx devices ranks its NICs)"
fi
echo "  build against it:  PKG_CONFIG_PATH=\$(dirname \"\$(find $PREFIX -name vfgx.pc | head -1)\") pkg-config --cflags --libs vfgx"
