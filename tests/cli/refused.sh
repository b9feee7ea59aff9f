# refused.sh - sourced by the cli tests of what `vfgx run` refuses at load
# (test_in_flight.sh, test_run_inputs.sh, test_rx_memory.sh): ok and bad
# lines, the bad ones counted in $fails, and refused, the one check of a
# refusal: exit 2 and one line.  $vfgx names the program.
# shellcheck shell=bash
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

refused() { # NAME PATTERN CONFIG: exit 2, one line matching PATTERN
	local out rc
	# shellcheck disable=SC2154 # vfgx: set by the sourcing test
	out=$(timeout -s KILL 30 "$vfgx" run -q "$3" 2>&1)
	rc=$?
	if ((rc == 2)) && [ "$(grep -c . <<<"$out")" = 1 ] && grep -qE -- "$2" <<<"$out"; then
		ok "$1: $out"
	else
		bad "$1: exit $rc, want 2 and one line /$2/"; sed 's/^/     /' <<<"$out" | tail -15
	fi
}
