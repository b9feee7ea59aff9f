#!/usr/bin/env bash
# fresh-debian.sh - try the README's two commands on a fresh Debian 12:
# build a bookworm minbase root with mmdebstrap (from the Debian mirror this
# host's apt uses), clone a commit of this repository into it, and run
# `make demo` and `make test` there as root in a chroot, exactly as a new
# user would.  The root gets only git and make; `make` installs the rest.
#
# usage: fresh-debian.sh [options]
#   --short              make demo, then only the cli, docs and tools suites
#                        (meson test --suite ...) instead of the whole make test
#   --commit REV         commit to clone (default: HEAD)
#   --dir DIR            build the root in DIR (must not exist; default: a new
#                        directory under /var/tmp), removed on exit unless --keep
#   --base-tarball FILE  reuse FILE as the minbase root (git and make, nothing of
#                        this repository) when it exists, else create it; the
#                        root is extracted anew from it on every run
#   --keep               leave the root in place after the run
#   -h, --help           this help
# Prints the demo's `result:` line and the test summary
# ("N passed, N failed, N skipped") and exits 0 only when both passed.
# Needs root (mmdebstrap, chroot, mounts); installs mmdebstrap if missing.
set -euo pipefail

PROG=$(basename "$0")
repo=$(cd "$(dirname "$0")/.." && pwd)
short=false
commit=HEAD
dir=""
base_tarball=""
keep=false

die() {
	echo "$PROG: $*" >&2
	exit 2
}
usage() {
	sed -n '/^# usage:/,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
}
value() {
	[[ $# -ge 2 && -n $2 && $2 != -* ]] || die "$1 needs a value ($PROG -h)"
	printf '%s' "$2"
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--short) short=true; shift ;;
	--commit) commit=$(value "$@"); shift 2 ;;
	--dir) dir=$(value "$@"); shift 2 ;;
	--base-tarball) base_tarball=$(value "$@"); shift 2 ;;
	--keep) keep=true; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option '$1' ($PROG -h lists them)" ;;
	esac
done

((EUID == 0)) || die "needs root (mmdebstrap, chroot and mounts)"
sha=$(git -C "$repo" rev-parse --verify --quiet "$commit^{commit}") ||
	die "--commit $commit: not a commit of $repo"
[[ -z $dir || ! -e $dir ]] || die "--dir $dir exists (give a new path; it is removed afterwards)"

if ! command -v mmdebstrap >/dev/null; then
	echo "$PROG: installing mmdebstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap >/dev/null 2>&1 || {
		DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap >/dev/null
	} || die "cannot install mmdebstrap (apt-get install mmdebstrap)"
fi

# The Debian mirror of this host's apt sources: the URIs that serve the
# suites bookworm, bookworm-updates and bookworm-security (one-line and
# deb822 files alike), passed to mmdebstrap as one-line entries.
mirror_lines() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk '$1 == "deb" {
			i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			uri = $i; suite = $(i + 1); comps = ""
			for (j = i + 2; j <= NF && $j !~ /^#/; j++) comps = comps " " $j
			if (suite ~ /^bookworm(-updates|-security)?$/) print "deb " uri " " suite comps
		}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk 'function flush(  n, s, u, k, l) {
			if (types ~ /(^| )deb( |$)/ && uris != "" && suites != "") {
				n = split(suites, s, " "); split(uris, u, " ")
				for (k = 1; k <= n; k++)
					if (s[k] ~ /^bookworm(-updates|-security)?$/)
						for (l in u) print "deb " u[l] " " s[k] " " comps
			}
			types = uris = suites = comps = ""
		}
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		{ key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
		  if (key == "types") types = $0; else if (key == "uris") uris = $0
		  else if (key == "suites") suites = $0; else if (key == "components") comps = $0 }
		END { flush() }' "$f"
	done
}
mapfile -t mirrors < <(mirror_lines | sort -u)
grep -q ' bookworm ' <<<"$(printf '%s\n' "${mirrors[@]}")" ||
	die "no 'bookworm' suite in /etc/apt/sources.list or /etc/apt/sources.list.d/ (this needs a Debian 12 mirror there)"

if [[ -z $dir ]]; then
	dir=$(mktemp -d /var/tmp/vfgx-fresh.XXXXXX)
else
	mkdir -p "$dir"
fi
dir=$(cd "$dir" && pwd)
root=$dir/root
mkdir "$root"
log=$dir/log

mounts=()
# processes still running in the root (a test's leftover daemon) keep its
# mounts busy: end those, and only those, before unmounting
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local rc=$? p m i
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		m=${mounts[i]}
		umount -R "$m" 2>/dev/null || umount -R -l "$m" 2>/dev/null ||
			echo "$PROG: could not unmount $m" >&2
	done
	if $keep; then
		echo "$PROG: root kept in $root (logs: $log*)"
	elif grep -qE " $root(/| )" /proc/mounts; then
		echo "$PROG: $root still has mounts; left in place" >&2
	elif ((rc == 0)); then
		rm -rf "$dir"
	else
		# a failed run keeps its logs, not the root
		rm -rf "$root"
		echo "$PROG: logs kept: $log*" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the root ------------------------------------------------------------------
start=$SECONDS
# shellcheck disable=SC2054 # --include takes a comma-separated list
debootstrap=(mmdebstrap --variant=minbase --include=git,make --quiet bookworm)
if [[ -n $base_tarball && -s $base_tarball ]]; then
	echo "$PROG: root from $base_tarball"
	tar -C "$root" -xf "$base_tarball"
elif [[ -n $base_tarball ]]; then
	echo "$PROG: mmdebstrap bookworm minbase into $base_tarball"
	"${debootstrap[@]}" "$base_tarball.tmp.tar" "${mirrors[@]}" >"$log" 2>&1 ||
		{ tail -20 "$log" >&2; rm -f "$base_tarball.tmp.tar"; die "mmdebstrap failed (log above)"; }
	mv "$base_tarball.tmp.tar" "$base_tarball"
	tar -C "$root" -xf "$base_tarball"
else
	echo "$PROG: mmdebstrap bookworm minbase into $root"
	"${debootstrap[@]}" "$root" "${mirrors[@]}" >"$log" 2>&1 ||
		{ tail -20 "$log" >&2; die "mmdebstrap failed (log above)"; }
fi
# what an installed machine has and a minbase root lacks: name resolution
# (for apt's mirror) and a localhost entry
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
[[ -s $root/etc/hosts ]] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"

echo "$PROG: cloning $sha"
git clone --quiet --no-checkout "$repo" "$root/root/vectorflow-gx"
git -C "$root/root/vectorflow-gx" checkout --quiet --detach "$sha"

# the root a mount point of its own, as / is on a machine: unshare -m
# (cli-capture's full-disk cases) makes / private, which fails with EINVAL
# on a plain directory; then network namespaces (ip netns: /run/netns),
# the QEMU guests (/dev/kvm, /dev/net/tun), DPDK (/dev/hugepages), AF_XDP
# (/sys/fs/bpf), ptys: the host's /dev and /sys, a fresh /proc and /run
mount --bind "$root" "$root" && mount --make-private "$root" && mounts+=("$root")
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" && mounts+=("$root/sys")
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" && mounts+=("$root/dev")
if ! grep -q " $root/dev/pts " /proc/mounts; then
	mount --bind /dev/pts "$root/dev/pts" && mounts+=("$root/dev/pts")
fi
mount -t tmpfs -o mode=755 tmpfs "$root/run" && mounts+=("$root/run")
echo "$PROG: root ready in $((SECONDS - start)) s"

# in the root: a login-like environment, no stdin, CI passed through;
# the install test installs into the root's real /usr/local and imports
# the Python package from there (tests/tools/test-install.sh)
in_root() {
	env -i HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		VFGX_TEST_PREFIX=/usr/local ${CI:+CI=$CI} \
		chroot "$root" /bin/bash -c "cd /root/vectorflow-gx && $1" </dev/null
}

status=0
t=$SECONDS
echo "$PROG: make demo (log: $log.demo)"
in_root 'make demo' >"$log.demo" 2>&1 || status=1
demo_time=$((SECONDS - t))
demo_result=$(grep -a '^result:' "$log.demo" | tail -1 || true)
if [[ $demo_result != "result: PASSED" ]]; then
	status=1
	tail -30 "$log.demo" >&2
fi

t=$SECONDS
if $short; then
	echo "$PROG: meson test --suite cli --suite docs --suite tools (log: $log.test)"
	in_root 'meson test -C build --print-errorlogs --num-processes 2 --suite cli --suite docs --suite tools' \
		>"$log.test" 2>&1 || status=1
	# meson's "Ok: N ... Fail: N ... Skipped: N" as make test's one line
	summary=$(awk '/^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):/ {
			seen = 1; if ($0 ~ /^(Ok|Expected)/) p += $NF; else if ($0 ~ /^Skipped/) s += $NF; else f += $NF }
		END { if (seen) printf "%d passed, %d failed, %d skipped\n", p, f, s }' "$log.test")
else
	echo "$PROG: make test (log: $log.test)"
	in_root 'make test' >"$log.test" 2>&1 || status=1
	summary=$(grep -a -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log.test" | tail -1 || true)
fi
test_time=$((SECONDS - t))
if [[ ! $summary =~ ^[0-9]+\ passed,\ 0\ failed ]]; then
	status=1
	grep -a -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|ERROR)' "$log.test" >&2 || tail -30 "$log.test" >&2
fi

echo "$PROG: demo: ${demo_result:-no result line} (${demo_time} s)"
echo "$PROG: test: ${summary:-no summary line} (${test_time} s)"
echo "$PROG: total $((SECONDS - start)) s"
exit "$status"
