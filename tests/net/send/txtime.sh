#!/usr/bin/env bash
# txtime.sh VFGX MODE HAVE_AFXDP - `vfgx send` with send.txtime (SO_TXTIME
# launch times, the ETF qdisc) into `vfgx run` over veth between two
# namespaces, two processes.  MODE guest (tests/vm/vm-run.sh, Debian's 6.1
# kernel with sch_etf): an ETF qdisc on the sender's veth; every packet is
# accounted for exactly (delivered + dropped at the receiver's socket +
# refused by the qdisc = generated) and the sender says txtime was used;
# launch times in the past are refused by the qdisc and counted
# (txtime_invalid); with the qdisc removed the sender falls back with one
# line and delivers everything.  MODE host (no ETF here): that fallback,
# the TCP and AF_XDP refusals and bad send.txtime values.  Gap statistics
# of the departure times (dumpcap on the sender's veth) are printed, never
# asserted (the guest is TCG-emulated).  Nothing waits for time: each
# sender starts once the receiver's socket is bound (ss), each receiver is
# stopped once it has counted every packet sent (its metrics page).
set -uo pipefail
vfgx=$1 mode=${2:-host} have_afxdp=${3:-0}
root=$(cd "$(dirname "$0")/../../.." && pwd)
name=txt
export VETH_NET=78
A=$name-a B=$name-b
IPB=198.18.$VETH_NET.2
if [ "$mode" = guest ] && [ "${VFGX_IN_VM:-}" != 1 ]; then
	echo "SKIP: txtime.sh guest runs inside tests/vm/vm-run.sh"
	exit 77
fi
"$root/scripts/netns-probe.sh" tc python3 || exit $?
have_cap=0
command -v dumpcap >/dev/null && have_cap=1
. "$root/tests/net/send/pair.sh" txtime-test
ok() { echo "ok   - $*"; passes=$((passes + 1)); }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
udp_out="  - { name: out, backend: socket, address: udp://$IPB:5000,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      socket: { role: client } }"
send_cfg() { # PACKETS LEAD_US [IFACE-YAML]
	cat <<EOT
interfaces:
${3:-$udp_out}
send:
  rate_pps: 10000
  burst: 8
  txtime: true
  txtime_lead_us: $2
  generator: { packets: $1, packet_size: 256, flows: 2 }
EOT
}
cat >"$tmp/recv.yaml" <<EOT
memory_regions:
  - { name: rx, kind: host, buf_size: 2048, num_bufs: 8192 }
interfaces:
  - { name: in, backend: socket, address: udp://$IPB:5000,
      rx: { queues: [ { id: 0, memory_region: rx } ] },
      socket: { role: server, rcvbuf: 8388608 } }
pipeline:
  device: cpu
  workers: 1
  reorder: { enabled: true, window: 1024 }
  verify_payload: true
  duration_s: 3600 # stopped by run_pair once it has counted what was sent
expect: { verified: true, min_packets: 0 }
EOT

# run_pair NAME PACKETS LEAD_US: sender and receiver; results in $tmp/NAME-*
run_pair() {
	local n=$1
	src=255 rrc=255
	send_cfg "$2" "$3" >"$tmp/$n-send.yaml"
	: >"$tmp/$n-send.log"
	echo '{}' >"$tmp/$n-sent.json"
	ip netns exec "$B" "$vfgx" run -q --json --metrics "$RX_METRICS" "$tmp/recv.yaml" \
		>"$tmp/$n-recv.json" 2>"$tmp/$n-recv.log" &
	bgpid=$!
	if wait_until "$n: the receiver's UDP socket on port 5000" $bgpid listening u 5000; then
		ip netns exec "$A" "$vfgx" send --json "$tmp/$n-send.yaml" >"$tmp/$n-sent.json" 2>"$tmp/$n-send.log"
		src=$?
		rx_settle "$tmp/$n-sent.json"
	fi
	kill -INT $bgpid
	wait $bgpid
	rrc=$?
	bgpid=
}

show() { # NAME: the logs of a failed case, and where packets went
	sed 's/^/  send: /' "$tmp/$1-send.log" "$tmp/$1-sent.json"
	sed 's/^/  recv: /' "$tmp/$1-recv.log" "$tmp/$1-recv.json"
	{
		ip netns exec "$A" tc -s qdisc show dev "$A"0
		ip -n "$A" -s link show "$A"0
		ip -n "$B" -s link show "$B"0
		ip netns exec "$B" nstat -az 'Udp*' 'Ip*Discards' 'IpInReceives'
		cat /proc/net/softnet_stat
	} 2>&1 | sed 's/^/  kern: /'
}

# report NAME [PCAP]: what case NAME's checks compare, read from the
# sender's and the receiver's JSON reports by one python3 (in the emulated
# guest each python3 start took 5 to 30 s: one a case, not one a number)
# and set as shell variables: from the sender's report sent bytes gen
# (source.generated) used tsent delta (txtime.used, .sent, .delta_ns)
# missed invalid (drops.txtime_missed, .txtime_invalid); from the
# receiver's deliv verr (pipeline.delivered, .verify_errors) and, summed
# over its queues, rxp rxb rfull (rx_packets, rx_bytes, drops.ring_full).
# A report or key that is not there leaves its variables empty.  With
# PCAP (dumpcap's capture on the sender's veth), gapline: the gaps between
# the times packets left it (a capture there sees each datagram as the
# qdisc releases it; on the receiving side GRO may merge a burst into one
# packet), printed, never asserted.
report() {
	local vars
	vars=$(python3 - "$tmp/$1-sent.json" "$tmp/$1-recv.json" "${2:-}" <<'EOP'
import json, shlex, struct, sys

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def get(v, path):
    for k in path.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    return "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)

def qsum(r, path):
    qs = r.get("queues") if isinstance(r, dict) else None
    if not isinstance(qs, list) or not qs:
        return ""
    vals = [get(q, path) for q in qs]
    return str(sum(int(x) for x in vals)) if all(x.isdigit() for x in vals) else ""

def gaps(path):
    try:
        d = open(path, "rb").read()
    except OSError as e:
        return "no capture (%s)" % e
    t, o, res = [], 0, 1e-6
    while o + 12 <= len(d):
        typ, ln = struct.unpack("<II", d[o:o + 8])
        if ln < 12: break
        if typ == 1:  # interface description: if_tsresol (option 9)
            p = o + 16
            while p + 4 <= o + ln - 4:
                code, olen = struct.unpack("<HH", d[p:p + 4])
                if code == 0: break
                if code == 9:
                    r = d[p + 4]
                    res = 2.0 ** -(r & 127) if r & 128 else 10.0 ** -r
                p += 4 + (olen + 3) // 4 * 4
        elif typ == 6:  # enhanced packet
            hi, lo = struct.unpack("<II", d[o + 12:o + 20])
            t.append(((hi << 32) | lo) * res * 1e6)
        o += ln
    g = sorted(b - a for a, b in zip(t, t[1:]))
    if len(g) < 10: return "too few packets captured (%d)" % len(t)
    q = lambda p: g[min(len(g) - 1, int(len(g) * p))]
    return ("%d gaps, us: p1 %.1f p10 %.1f p50 %.1f p90 %.1f p99 %.1f max %.1f (schedule 100)" %
            (len(g), q(.01), q(.1), q(.5), q(.9), q(.99), g[-1]))

s, r = load(sys.argv[1]), load(sys.argv[2])
out = {"sent": get(s, "packets"), "bytes": get(s, "bytes"), "gen": get(s, "source.generated"),
       "used": get(s, "txtime.used"), "tsent": get(s, "txtime.sent"),
       "delta": get(s, "txtime.delta_ns"), "missed": get(s, "drops.txtime_missed"),
       "invalid": get(s, "drops.txtime_invalid"),
       "deliv": get(r, "pipeline.delivered"), "verr": get(r, "pipeline.verify_errors"),
       "rxp": qsum(r, "rx_packets"), "rxb": qsum(r, "rx_bytes"), "rfull": qsum(r, "drops.ring_full"),
       "gapline": gaps(sys.argv[3]) if sys.argv[3] else ""}
for k, v in out.items():
    print("%s=%s" % (k, shlex.quote(v)))
EOP
	)
	sent='' bytes='' gen='' used='' tsent='' delta='' missed='' invalid=''
	deliv='' verr='' rxp='' rxb='' rfull='' gapline=''
	eval "$vars"
	acct="generated $gen = delivered $deliv + receiver socket drops $rfull + qdisc missed $missed + invalid $invalid"
}

# after report (which says it in $acct): generated = delivered + dropped at the receiver's
# socket (buffer full) + refused by the qdisc; and what the sender counts
# as sent is what arrived; every count there (an empty one fails)
accounted() {
	local v
	for v in "$gen" "$sent" "$missed" "$invalid" "$deliv" "$verr" "$rxp" "$rfull" "$bytes" "$rxb"; do
		[[ $v =~ ^[0-9]+$ ]] || return 1
	done
	# bytes too: the refused packets' bytes come off what the sender sent
	((gen == deliv + rfull + missed + invalid && sent == rxp + rfull && verr == 0)) &&
		((rfull > 0 || bytes == rxb))
}

capture_start() { # FILE: dumpcap writing FILE (its header is there, 20 s
	# at most), or a line with dumpcap's own words (the gaps are not asserted)
	capfile=$1
	ip netns exec "$A" dumpcap -q -n -i "$A"0 -f "udp port 5000" -w "$capfile" >"$capfile.log" 2>&1 &
	cappid=$!
	for _ in $(seq 100); do
		[ -s "$capfile" ] && return 0
		kill -0 "$cappid" 2>/dev/null || break
		sleep 0.2
	done
	echo "     (no departure gaps: dumpcap on ${A}0 wrote nothing: $(tr '\n' ' ' <"$capfile.log"))"
}
capture_stop() {
	kill -INT "$cappid" 2>/dev/null
	wait "$cappid" 2>/dev/null
}

etf=(tc qdisc replace dev "${A}0" root etf clockid CLOCK_TAI delta 200000)
if err=$(ip netns exec "$A" "${etf[@]}" 2>&1); then
	((have_cap)) && capture_start "$tmp/etf.pcap"
	# a lead of 20 ms: the emulated guest's sender often runs milliseconds
	# behind its schedule, and a launch time already past is refused
	run_pair etf 4000 20000
	((have_cap)) && capture_stop
	report etf "$( ((have_cap)) && echo "$tmp/etf.pcap")"
	if ((src == 0 && rrc == 0)) && [ "$used" = true ] && [ "$tsent" = 4000 ] && accounted; then
		ok "etf on ${A}0: txtime used, $acct; sender $(grep -o 'pacing: .*' "$tmp/etf-send.log")"
	elif ((rrc == 0)) && [ "$used" = true ] && accounted; then
		# the qdisc dropped some (a TCG guest misses launch times): counted, exit 1
		ok "etf on ${A}0: txtime used, $acct (sender exit $src: the qdisc's refusals are its drops)"
	else
		fail "etf on ${A}0: send exit $src, receive exit $rrc; ${acct:-}"
		show etf
	fi
	((have_cap)) && echo "     departure gaps with ETF: $gapline"

	# launch times 100 ms in the past: the qdisc refuses every packet and
	# the error queue says so, one report each
	run_pair past 500 -100000
	report past
	if ((src == 1 && rrc == 0)) && [ "$invalid" = 500 ] && [ "$sent" = 0 ] && accounted &&
		grep -q '^drop txtime_invalid *500$' "$tmp/past-send.log"; then
		ok "launch times in the past: exit 1, all 500 counted txtime_invalid, none arrived"
	else
		fail "launch times in the past: send exit $src, receive exit $rrc; ${acct:-}"
		show past
	fi
	# SO_TXTIME refused (no CAP_NET_ADMIN for CLOCK_TAI) while ETF is the
	# root qdisc: sending without launch times would lose every packet
	# there, so it is refused with one line instead of falling back
	send_cfg 100 20000 >"$tmp/eperm.yaml"
	out=$(ip netns exec "$A" setpriv --bounding-set -net_admin --inh-caps -net_admin \
		"$vfgx" send "$tmp/eperm.yaml" 2>&1 | grep -v ': info: '; exit "${PIPESTATUS[0]}")
	rc=$?
	if ((rc == 2)) && [ "$(grep -c . <<<"$out")" = 1 ] && grep -q "need CAP_NET_ADMIN.*drops every packet without a launch time" <<<"$out"; then
		ok "SO_TXTIME refused under a root ETF: exit 2, $out"
	else
		fail "SO_TXTIME refused under a root ETF: exit $rc, '$out'"
	fi

	# the same with a wider delta (5 ms): the qdisc wakes that much before
	# each launch time; the counts are printed, only the accounting checked
	# (ETF cannot change in place: tc's replace of one is refused)
	if ! err=$(ip netns exec "$A" tc qdisc del dev "${A}0" root 2>&1 &&
		ip netns exec "$A" tc qdisc add dev "${A}0" root etf clockid CLOCK_TAI delta 5000000 2>&1); then
		fail "etf delta 5 ms: cannot put the qdisc there: $err"
	fi
	((have_cap)) && capture_start "$tmp/wide.pcap"
	run_pair wide 4000 20000
	((have_cap)) && capture_stop
	report wide "$( ((have_cap)) && echo "$tmp/wide.pcap")"
	if ((rrc == 0)) && [ "$used" = true ] && [ "$delta" = 5000000 ] && accounted; then
		ok "etf delta 5 ms: $acct"
	else
		fail "etf delta 5 ms: send exit $src, receive exit $rrc; ${acct:-}"
		show wide
	fi
	((have_cap)) && echo "     departure gaps with ETF, delta 5 ms: $gapline"
	ip netns exec "$A" tc qdisc del dev "${A}0" root
elif [ "$mode" = guest ]; then
	fail "cannot install the ETF qdisc in the guest: $err"
else
	echo "SKIP: ETF cases: this kernel has no ETF qdisc (${etf[*]}: $(head -1 <<<"$err"))"
fi

# no ETF on the device: one line, the token bucket alone, everything sent
((have_cap)) && capture_start "$tmp/tb.pcap"
run_pair noetf 4000 2000
((have_cap)) && capture_stop
report noetf "$( ((have_cap)) && echo "$tmp/tb.pcap")"
lines=$(grep -v ': info: ' "$tmp/noetf-send.log" | grep -c '^vfgx: ')
if ((src == 0 && rrc == 0)) && [ "$used" = false ] &&
	((lines == 1)) && grep -q "^vfgx: out: txtime: no ETF qdisc on ${A}0, .*; pacing with the token bucket instead$" "$tmp/noetf-send.log" &&
	accounted && ((deliv == gen)); then
	ok "no ETF qdisc: one line, token bucket, $acct"
	echo "     $(grep '^vfgx: out: txtime' "$tmp/noetf-send.log")"
else
	fail "no ETF qdisc: send exit $src, receive exit $rrc, $lines lines; ${acct:-}"
	show noetf
fi
((have_cap)) && echo "     departure gaps between frames, token bucket alone (bursts of 8 leave as one UDP GSO frame on veth): $gapline"

if [ "$mode" = host ]; then
	# bad values: file:line:col, exit 2
	send_cfg 10 2000 | sed 's/txtime: true/txtime: maybe/' >"$tmp/bad.yaml"
	out=$(ip netns exec "$A" "$vfgx" send "$tmp/bad.yaml" 2>&1); rc=$?
	if ((rc == 2)) && grep -q "bad.yaml:[0-9]*:[0-9]*: .*txtime" <<<"$out"; then
		ok "send.txtime: maybe: exit 2, $out"
	else
		fail "send.txtime: maybe: exit $rc, '$out'"
	fi
	send_cfg 10 5000000 >"$tmp/bad.yaml"
	out=$(ip netns exec "$A" "$vfgx" send "$tmp/bad.yaml" 2>&1); rc=$?
	if ((rc == 2)) && grep -q "bad.yaml:[0-9]*:[0-9]*: .*txtime_lead_us" <<<"$out"; then
		ok "send.txtime_lead_us: 5000000: exit 2, $out"
	else
		fail "send.txtime_lead_us: 5000000: exit $rc, '$out'"
	fi
	# TCP: no per-datagram launch time, refused with one line
	send_cfg 10 2000 "  - { name: out, backend: socket, address: tcp://$IPB:5001,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      socket: { role: client } }" >"$tmp/tcp.yaml"
	sed 's#udp://\(.*\):5000#tcp://\1:5001#; s/rcvbuf: 8388608/max_record: 2048/' "$tmp/recv.yaml" >"$tmp/tcp-recv.yaml"
	ip netns exec "$B" "$vfgx" run -q --duration 120 "$tmp/tcp-recv.yaml" >"$tmp/tcp-recv.log" 2>&1 &
	bgpid=$!
	out='' rc=-
	if wait_until "txtime on TCP: the receiver listening on 5001" $bgpid listening t 5001; then
		out=$(ip netns exec "$A" "$vfgx" send "$tmp/tcp.yaml" 2>&1 | grep -v ': info: '; exit "${PIPESTATUS[0]}")
		rc=$?
	fi
	kill $bgpid 2>/dev/null; wait $bgpid 2>/dev/null; bgpid=
	if [ "$rc" = 2 ] && [ "$(grep -c . <<<"$out")" = 1 ] && grep -q "txtime needs a UDP socket port" <<<"$out"; then
		ok "txtime on TCP: refused, exit 2, $out"
	else
		fail "txtime on TCP: exit $rc, '$out'"
	fi
	if [ "$have_afxdp" = 1 ]; then
		send_cfg 10 2000 "  - { name: out, backend: afxdp, address: ${A}0,
      rx: { queues: [ { id: 0 } ] }, tx: { queues: [ { id: 0 } ] },
      afxdp: { queues: [0] } }" >"$tmp/xdp.yaml"
		out=$(ip netns exec "$A" "$vfgx" send "$tmp/xdp.yaml" 2>&1 | grep -v ': info: '; exit "${PIPESTATUS[0]}")
		rc=$?
		if ((rc == 2)) && [ "$(grep -c . <<<"$out")" = 1 ] && grep -q "not available on AF_XDP" <<<"$out"; then
			ok "txtime on AF_XDP: refused, exit 2, $out"
		else
			fail "txtime on AF_XDP: exit $rc, '$out'"
		fi
	else
		echo "SKIP: txtime on AF_XDP: this build has no AF_XDP backend"
	fi
fi
echo "$passes passed, $fails failed"
((fails == 0))
