#!/usr/bin/env bash
# test_in_flight.sh VFGX - pipeline.max_in_flight_bytes through `vfgx run`
# on the cpu engine (#40): a run with a budget of a few buffers delivers
# every packet in order (the report's counters); a budget below one packet
# buffer a worker stops the run at once with one line naming the key and
# the least that fits (exit 2), as does a value out of range at load.
# What the budget holds is checked from the pool's counters in
# tests/unit/test_in_flight.c.
set -uo pipefail
vfgx=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/cli/refused.sh
. "$(dirname "$0")/refused.sh"

conf() { # BUDGET WORKERS
	cat <<YAML
memory_regions: [{ name: rx, kind: host, buf_size: 2048, num_bufs: 1024 }]
interfaces:
  - backend: loopback
    rx: { queues: [ { id: 0, memory_region: rx }, { id: 1, memory_region: rx } ] }
    loopback: { packets: 50000, flows: 4, reorder: 0.01 }
pipeline:
  device: cpu
  workers: $2
  max_in_flight_bytes: $1
expect: { in_order: true, all_received: true, min_packets: 50000 }
YAML
}

# a budget of 8 buffers over 2 workers: every packet, in order
conf 16384 2 >"$tmp/ok.yaml"
out=$(timeout -s KILL 60 "$vfgx" run -q --json "$tmp/ok.yaml" 2>"$tmp/ok.err")
rc=$?
if ((rc == 0)) && python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
p = r["pipeline"]
assert r["result"] == "PASSED", r["result"]
assert p["packets"] == 50000 and p["delivered"] == 50000, p
assert p["order_errors"] == 0 and sum(p["drops"].values()) == 0, p
print("ok   16384 B in flight, 2 workers: %d packets, all delivered in order" % p["delivered"])
PY
then :; else bad "budget 16384: exit $rc"; { echo "$out"; cat "$tmp/ok.err"; } | sed 's/^/     /' | tail -15; fi

conf 3000 2 >"$tmp/small.yaml"
refused "budget below one buffer a worker" \
	"pipeline.max_in_flight_bytes 3000 .*2048-byte packet buffer.*set it to at least 4096" "$tmp/small.yaml"
conf -5 1 >"$tmp/neg.yaml"
refused "negative budget" "max_in_flight_bytes" "$tmp/neg.yaml"
exit $((fails > 0))
