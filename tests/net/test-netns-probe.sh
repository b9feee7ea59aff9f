#!/usr/bin/env bash
# test-netns-probe.sh - scripts/netns-probe.sh, the one check every tests/net
# script makes first: silent exit 0 where namespaces work; where they do not
# (not root; a read-only /run, where `ip netns add` cannot make its mount
# point), one "SKIP: ..." line with the system's own error and exit 77, and
# every namespace test skips with that same line instead of failing.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
probe=$root/scripts/netns-probe.sh
fails=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
# check WHAT OUT RC PATTERN: exit 77 and exactly one line matching PATTERN
check() {
	if (($3 == 77)) && [ "$(grep -c . <<<"$2")" = 1 ] && grep -qE "^SKIP: $4" <<<"$2"; then
		ok "$1: $2"
	else
		fail "$1: exit $3, output:"; echo "$2"
	fi
}

((EUID == 0)) || { echo "SKIP: this test drops root itself to check both sides; run it as root"; exit 77; }

out=$("$probe" 2>&1); rc=$?
if ((rc == 0)) && [ -z "$out" ]; then ok "namespaces usable here: silent, exit 0"; else
	# the machine itself cannot: the probe's own line is the reason
	echo "$out"; exit 77
fi

# a copy nobody can reach: the checkout may sit in root's 0700 home
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" && cp "$probe" "$tmp/" && chmod 755 "$tmp/netns-probe.sh"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$tmp/netns-probe.sh" 2>&1); rc=$?
check "not root" "$out" $rc "network namespaces need root"

# a read-only /run in a private mount namespace: ip netns add cannot work
in_ro_run() { unshare -m sh -c 'mount -t tmpfs -o ro vfgx-ro-run /run && exec "$@"' sh "$@" 2>&1; }
out=$(in_ro_run "$probe"); rc=$?
check "read-only /run" "$out" $rc "cannot create a network namespace: .*"
want=$out
for t in "tests/net/afxdp/afxdp-queues.sh /bin/false" "tests/net/dpdk/dpdk-veth.sh /bin/false" \
	 "tests/net/discovery/test_discovery.sh /bin/false /bin/false" \
	 "tests/net/socket/run-netns.sh /bin/false /bin/false" \
	 "tests/net/afxdp/afxdp-veth.sh /bin/false /bin/false /bin/false"; do
	read -ra cmd <<<"$t"
	out=$(in_ro_run "$root/${cmd[0]}" "${cmd[@]:1}"); rc=$?
	if ((rc == 77)) && [ "$out" = "$want" ]; then ok "${cmd[0]}: skips with the probe's line"; else
		fail "${cmd[0]}: exit $rc, output:"; echo "$out"
	fi
done
echo "netns-probe: $fails failure(s)"
((fails == 0))
