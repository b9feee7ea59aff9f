#!/usr/bin/env bash
# test_run.sh VFGX - `vfgx run` as a user sees it: the default config
# passes, faults are accounted, bad configs give one file:line:col line and
# exit 2, an unmet expectation exits 1, SIGINT stops cleanly with a report.
set -uo pipefail
vfgx=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

expect_rc() { # NAME WANT_RC GREP_PATTERN CMD...
	local name=$1 want=$2 pat=$3
	shift 3
	"$@" >"$tmp/out" 2>&1
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		bad "$name: exit $rc, wanted $want"; sed 's/^/     /' "$tmp/out" | tail -15; return
	fi
	if ! grep -qE -- "$pat" "$tmp/out"; then
		bad "$name: output lacks /$pat/"; sed 's/^/     /' "$tmp/out" | tail -15; return
	fi
	ok "$name"
}

expect_rc "default config passes" 0 '^result: PASSED' "$vfgx" run
expect_rc "default delivers 1000000" 0 'delivered 1000000 of 1000000 expected' "$vfgx" run -q
expect_rc "faults accounted" 0 'injected: [1-9][0-9]* lost, [1-9][0-9]* duplicated, [1-9][0-9]* corrupted' "$vfgx" run configs/loopback-faults.yaml

printf 'pipeline:\n  workers: 0\n' >"$tmp/bad.yaml"
expect_rc "out of range value" 2 "^vfgx: $tmp/bad.yaml:2:12: pipeline.workers: 0 is out of range \\(must be 1..64\\)$" "$vfgx" run "$tmp/bad.yaml"
[ "$(wc -l <"$tmp/out")" -eq 1 ] && ok "bad config is one line" || bad "bad config printed $(wc -l <"$tmp/out") lines"
printf 'interfaces:\n  - backend: loopback\n    loopbak: {}\n' >"$tmp/typo.yaml"
expect_rc "unknown key" 2 "typo.yaml:3:5: interfaces\\[0\\].loopbak: unknown key" "$vfgx" run "$tmp/typo.yaml"
expect_rc "missing file" 2 'nope.yaml: cannot open config' "$vfgx" run "$tmp/nope.yaml"
expect_rc "bad option" 2 "^vfgx run: unknown option '--frobnicate'" "$vfgx" run --frobnicate
expect_rc "unknown command" 2 "unknown command 'fly'" "$vfgx" fly

# corrupted frames with UDP checksums off reach the payload check: unmet
cat >"$tmp/unmet.yaml" <<'Y'
interfaces:
  - backend: loopback
    loopback: {packets: 20000, corrupt: 0.05, udp_csum: false}
pipeline: {verify_payload: true}
expect: {verified: true}
Y
expect_rc "unmet expectation exits 1" 1 'verified +FAILED +[1-9][0-9]* payload mismatches' "$vfgx" run "$tmp/unmet.yaml"

# an endless source stops on SIGINT with a report
cat >"$tmp/endless.yaml" <<'Y'
interfaces:
  - backend: loopback
    loopback: {packets: 0, rate_pps: 200000}
expect: {min_packets: 1}
Y
"$vfgx" run "$tmp/endless.yaml" >"$tmp/out" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 0 ] && grep -q '^interrupted: stopping' "$tmp/out" && grep -q '^result: PASSED' "$tmp/out"; then
	ok "SIGINT stops cleanly with a report"
else
	bad "SIGINT: exit $rc"; tail -5 "$tmp/out"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
