#!/usr/bin/env bash
# device-kit.sh fetch DIR | env DIR - build `make test-gpu` on a GPU host
# that has CUDA but no apt (the project's lent GPU machines).
#   fetch DIR (here, on Debian 12): apt-get download the -dev packages the
#       build needs and the GPU host lacks into DIR (an ignored folder,
#       e.g. .carry/debs).
#   env DIR (there): unpack them under DIR/root, point their .pc files at
#       it, give empty .pc files for the Requires.private names the host
#       lacks (gnutls, dbus), and print the exports to eval:
#       eval "$(tests/gpu/device-kit.sh env .carry/debs)"
set -euo pipefail
pkgs=(libyaml-dev libyaml-0-2 libjson-c-dev libjson-c5 libmnl-dev libmnl0
	libcmocka-dev libcmocka0 libmicrohttpd-dev libmicrohttpd12 libpcap-dev
	libpcap0.8 libpcap0.8-dev libdbus-1-3 libfftw3-dev libfftw3-double3 libfftw3-single3
	libfftw3-long3 libfftw3-bin libdlpack-dev liburing-dev liburing2)
cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || { echo "usage: $0 fetch|env DIR" >&2; exit 2; }
case $cmd in
fetch)
	mkdir -p "$dir"
	(cd "$dir" && apt-get download "${pkgs[@]}")
	;;
env)
	dir=$(cd "$dir" && pwd)
	root=$dir/root
	rm -rf "$root"
	mkdir -p "$root"
	for d in "$dir"/*.deb; do dpkg -x "$d" "$root"; done
	pc=$root/usr/lib/x86_64-linux-gnu/pkgconfig
	mkdir -p "$pc"
	sed -i "s|^prefix=.*|prefix=$root/usr|" "$pc"/*.pc "$root"/usr/share/pkgconfig/*.pc 2>/dev/null || true
	for stub in gnutls dbus-1; do
		pkg-config --exists "$stub" 2>/dev/null ||
			printf 'Name: %s\nDescription: stub\nVersion: 99\n' "$stub" >"$pc/$stub.pc"
	done
	# the -dev packages' .so links point at the runtime packages' files
	echo "export PKG_CONFIG_PATH=$pc:$root/usr/share/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
	echo "export LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
	echo "export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
	echo "export CPATH=$root/usr/include\${CPATH:+:\$CPATH}"
	;;
*) echo "usage: $0 fetch|env DIR" >&2; exit 2 ;;
esac
