#!/bin/bash
# test_run.sh VFGX MPIRUN_SH - `mpirun -np 4 vfgx run`: each rank runs the
# interfaces its ranks: entry names, rank 0 prints one report with a row
# per rank and the job's totals, expect: holds over the job (loopback
# sources, and UDP socket ports fed by tests/mpi/udp_send.py); a rank that
# fails ends the job at once with its error on one line; ranks: errors
# name file:line:col.
set -u
vfgx=$1
mpirun_sh=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }

cat >"$tmp/job.yaml" <<'Y'
memory_regions:
  - { name: rx, kind: host, buf_size: 2048, num_bufs: 4096 }
interfaces:
  - name: lo_a
    backend: loopback
    loopback: { packets: 20000, packet_size: 256, flows: 2, dst_port: 5000 }
  - name: lo_b
    backend: loopback
    rx: { queues: [ { id: 0 }, { id: 1 } ] }
    loopback: { packets: 30000, packet_size: 256, flows: 2, dst_port: 5000 }
pipeline:
  device: cpu
  workers: 1
  reorder: { enabled: true, window: 1024 }
  verify_payload: true
ranks:
  - { rank: 0, interfaces: [lo_a], cores: [0] }
  - { local_rank: 0, interfaces: [lo_b] }
  - { local_rank: 1, interfaces: [lo_b], rx_queues: 1 }
  - { rank: 2, interfaces: [lo_b] }
  - { local_rank: 3, interfaces: [lo_a] }
expect:
  all_received: true
  in_order: true
  verified: true
  min_packets: 100000
Y
# ranks 0 and 3 generate 20000, ranks 1 and 2 30000: 100000 in the job
timeout 60 "$mpirun_sh" 4 "$vfgx" run -q "$tmp/job.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || die "job exited $rc"
[ "$(grep -c '^== vfgx run report' "$tmp/out")" = 1 ] || die "not exactly one report"
grep -q '^== vfgx run report (.*, 4 MPI ranks) ==$' "$tmp/out" || die "report header"
for want in '0 20000' '1 30000' '2 30000' '3 20000'; do
	read -r r n <<<"$want"
	grep -Eq "^$r +$r +[^ ]+ +$n +$n " "$tmp/out" || die "rank $r row: $n packets delivered"
done
grep -q '^job: 100000 packets in .* delivered 100000 ' "$tmp/out" || die "job totals"
grep -q '^  all_received  ok  delivered 100000 of 100000 expected' "$tmp/out" || die "all_received over the job"
grep -q '^  min_packets   ok  100000 delivered by 4 ranks' "$tmp/out" || die "min_packets over the job"
grep -q '^result: PASSED$' "$tmp/out" || die "result"
[ $fail = 0 ] || { cat "$tmp/out" "$tmp/err"; }

# expect: over the whole job: 100001 packets is more than the job delivered
sed -i 's/min_packets: 100000/min_packets: 100001/' "$tmp/job.yaml"
timeout 60 "$mpirun_sh" 4 "$vfgx" run -q "$tmp/job.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || die "job missing min_packets exited $rc, want 1"
grep -q '^  min_packets   FAILED  100000 delivered by 4 ranks, at least 100001 wanted' "$tmp/out" ||
	die "min_packets failure over the job"

# the socket data path: each rank a UDP server on its own port (high,
# from the PID: worktrees share this host), 2000 datagrams to each; the
# receive buffer holds them all, so a rank descheduled on the busy host
# loses none
base=$((20000 + $$ % 20000))
{
	echo 'interfaces:'
	for r in 0 1 2 3; do
		echo "  - { name: udp_$r, backend: socket, address: \"udp://127.0.0.1:$((base + r))\", socket: { role: server, rcvbuf: 8388608 } }"
	done
	echo 'pipeline: { device: cpu, workers: 1, reorder: { enabled: true, window: 1024 }, verify_payload: true, duration_s: 4 }'
	echo 'ranks:'
	for r in 0 1 2 3; do echo "  - { rank: $r, interfaces: [udp_$r] }"; done
	echo 'expect: { all_received: true, in_order: true, verified: true, min_packets: 8000 }'
} >"$tmp/sock.yaml"
timeout 60 "$mpirun_sh" 4 "$vfgx" run -q "$tmp/sock.yaml" >"$tmp/out" 2>"$tmp/err" &
job=$!
senders=()
for r in 0 1 2 3; do
	"$(dirname "$0")/udp_send.py" $((base + r)) 2000 & senders+=($!)
done
for p in "${senders[@]}"; do wait "$p" || die "a UDP sender failed"; done
wait $job
rc=$?
[ $rc -eq 0 ] || die "socket job exited $rc"
for r in 0 1 2 3; do
	grep -Eq "^$r +$r +[^ ]+ +2000 +2000 " "$tmp/out" || die "socket rank $r row"
done
grep -q '^  all_received  ok  live source: received 8000, delivered 8000' "$tmp/out" ||
	die "socket all_received over the job"
[ $fail = 0 ] || { cat "$tmp/out" "$tmp/err"; }

# rank 2 cannot bind its socket: the job ends with its one-line error
cat >"$tmp/fail.yaml" <<'Y'
interfaces:
  - name: lo_a
    backend: loopback
    loopback: { packets: 100000000, packet_size: 256, flows: 2, dst_port: 5000 }
  - name: bad
    backend: socket
    address: udp://192.0.2.1:5999
    socket: { role: server }
pipeline: { device: cpu, workers: 1 }
ranks:
  - { local_rank: 0, interfaces: [lo_a] }
  - { local_rank: 1, interfaces: [lo_a] }
  - { local_rank: 2, interfaces: [bad] }
  - { local_rank: 3, interfaces: [lo_a] }
Y
timeout 60 "$mpirun_sh" 4 "$vfgx" run -q "$tmp/fail.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] || die "a failing rank left the job successful"
[ $rc -ne 124 ] || die "the job hung after a rank failed (timeout)"
[ "$(grep -c '^vfgx: ' "$tmp/err")" = 1 ] || die "not exactly one vfgx error line"
grep -q '^vfgx: bad: udp://192.0.2.1:5999: bind: ' "$tmp/err" || die "the failing rank's error"
! grep -q '^== vfgx run report' "$tmp/out" || die "a report after a rank failed"
[ $fail = 0 ] || { cat "$tmp/out" "$tmp/err"; }

# ranks: errors, before any MPI: file:line:col and exit 2
printf 'interfaces:\n  - { name: lo_a, backend: loopback }\nranks:\n  - { rank: 1, interfaces: [lo_x] }\n' >"$tmp/bad1.yaml"
"$vfgx" run "$tmp/bad1.yaml" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -ne 2 ] || ! grep -q "^vfgx: $tmp/bad1.yaml:4:29: ranks\[0\].interfaces\[0\]: 'lo_x' is not the name of one of interfaces:" "$tmp/err"; then
	die "unknown interface: rc $rc: $(cat "$tmp/err")"
fi
printf 'interfaces:\n  - { name: lo_a, backend: loopback }\nranks:\n  - { rank: 1, local_rank: 0 }\n' >"$tmp/bad2.yaml"
"$vfgx" run "$tmp/bad2.yaml" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -ne 2 ] || ! grep -q "^vfgx: $tmp/bad2.yaml:4:5: ranks\[0\]: give exactly one of rank or local_rank" "$tmp/err"; then
	die "rank and local_rank: rc $rc: $(cat "$tmp/err")"
fi
printf 'interfaces:\n  - { name: lo_a, backend: loopback }\nranks:\n  - { rank: 1 }\n  - { rank: 1, gpu: 64 }\n' >"$tmp/bad3.yaml"
"$vfgx" run "$tmp/bad3.yaml" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -ne 2 ] || ! grep -q "^vfgx: $tmp/bad3.yaml:5:.*gpu" "$tmp/err"; then
	die "gpu range: rc $rc: $(cat "$tmp/err")"
fi
[ $fail = 0 ] && echo "ok: mpirun -np 4 vfgx run: per-rank rows, job totals and expect, one failing rank, ranks: errors"
exit $fail
