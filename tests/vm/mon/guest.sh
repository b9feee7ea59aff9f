#!/bin/sh
# guest.sh KO MON_GUEST VFGX - runs inside the QEMU guest (see test-mon.sh):
# loads gpurdma_mon against the q35 topology's real PCIe devices, runs the
# mon_guest checks (an unprivileged user's among them), vfgx mon and the
# library's publisher, rmmod with a client open, then reloads it with other
# parameters and with none.
set -u
ko=$1 t=$2 vfgx=$3
gpu=0000:20:00.0    # root port on NUMA node 0, x32 16 GT/s capable, at x1 2.5
nic=0000:41:00.0    # e1000e on NUMA node 1
nic_port=0000:40:00.0
sys=/sys/class/misc/gpurdma_mon
inj=/sys/kernel/debug/gpurdma_mon/inject
out=${VM_OUT:-/tmp}

fail() {
	echo "FAIL: $*"
	dmesg | grep -i gpurdma | tail -20
	exit 1
}
step() { echo "== $*"; }
wait_clients() {
	i=0
	while [ "$(cat $sys/clients 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		[ $i -gt 300 ] && fail "clients never reached $1"
		sleep 0.1
	done
}

mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
for d in $gpu $nic $nic_port; do
	[ -e "/sys/bus/pci/devices/$d" ] || fail "guest has no PCI device $d (QEMU topology changed?)"
done

step "insmod with gpu=$gpu nic=$nic"
insmod "$ko" gpu=$gpu nic=$nic check_ms=200 queue_len=256 || fail "insmod"
[ -c /dev/gpurdma_mon ] || fail "/dev/gpurdma_mon missing"
[ "$(cat $sys/gpu_address)" = $gpu ] || fail "sysfs gpu_address $(cat $sys/gpu_address)"
[ "$(cat $sys/nic_address)" = $nic ] || fail "sysfs nic_address"
grep -q ' degraded$' $sys/gpu_link || fail "sysfs gpu_link: $(cat $sys/gpu_link)"
grep -q ' degraded$' $sys/nic_link && fail "sysfs nic_link degraded: $(cat $sys/nic_link)"
[ "$(cat $sys/numa_mismatch)" = 1 ] || fail "sysfs numa_mismatch"
[ "$(cat $sys/same_switch)" = 0 ] || fail "sysfs same_switch"
dmesg | grep -q 'gpurdma_mon: GPU on NUMA node 0, NIC on node 1' || fail "no NUMA warning in dmesg"
echo "sysfs: gpu_link $(cat $sys/gpu_link); nic_link $(cat $sys/nic_link)"

step "debugfs inject refuses what it cannot parse"
for bad in "nonsense" "test loud x" "none info x" "test"; do
	echo "$bad" 2>/dev/null >$inj && fail "inject accepted '$bad'"
done
echo "  test   info padded" >$inj || fail "inject with leading blanks"

step "telemetry against the devices' own sysfs"
"$t" telemetry --gpu $gpu --nic $nic --numa 1 --switch 0 || fail "telemetry"
step "8 clients, 100 injected events each, in order"
"$t" clients 8 100 || fail "clients"
step "read semantics, wake-ups, overflow"
"$t" read 256 || fail "read"
step "ioctls"
"$t" ioctl || fail "ioctl"
step "PUBLISH thresholds"
"$t" publish || fail "publish"
step "an unprivileged user reads, cannot write, cannot pin memory"
[ "$(stat -c %a /dev/gpurdma_mon)" = 644 ] || fail "device mode $(stat -c %a /dev/gpurdma_mon), want 644"
"$t" unpriv || fail "unpriv"
step "periodic link check"
"$t" link-checks || fail "link-checks"

step "vfgx mon"
"$vfgx" mon --pressure 90 --bw 0 --once >"$out/mon-once.txt" || fail "vfgx mon --once"
cat "$out/mon-once.txt"
grep -q "^gpu  $gpu .*node 0 .*DEGRADED" "$out/mon-once.txt" || fail "vfgx mon: gpu line"
grep -q "^nic  $nic \[8086:10d3\] node 1" "$out/mon-once.txt" || fail "vfgx mon: nic line"
grep -q "NUMA MISMATCH" "$out/mon-once.txt" || fail "vfgx mon: NUMA"
"$vfgx" mon --count 4 --timeout 120 >"$out/mon-live.txt" &
mp=$!
wait_clients 1
echo "test warn live-one" >$inj
echo "test crit live-two" >$inj
wait $mp || fail "vfgx mon --count 4 exited $?"
cat "$out/mon-live.txt"
grep -q 'LINK_DEGRADED warn gpu' "$out/mon-live.txt" || fail "vfgx mon: replayed LINK_DEGRADED"
grep -q 'NUMA_WARN' "$out/mon-live.txt" || fail "vfgx mon: replayed NUMA_WARN"
grep -q 'TEST .*crit.*"live-two"' "$out/mon-live.txt" || fail "vfgx mon: injected event"

step "the library publishes its counters while a pipeline runs"
before=$(cat $sys/publishes)
"$vfgx" run --duration 2.5 --quiet >"$out/run.txt" 2>&1
after=$(cat $sys/publishes)
[ "$after" -gt "$before" ] || fail "vfgx run published nothing ($before -> $after)"
"$vfgx" mon --once >"$out/mon-after-run.txt" || fail "vfgx mon --once"
grep 'library counters' "$out/mon-after-run.txt"
grep -q 'library counters (pid [0-9]*, [0-9]* publishes): 2 queues, rx [1-9][0-9]* packets' \
	"$out/mon-after-run.txt" || fail "published counters: $(cat "$out/mon-after-run.txt")"
echo "publishes $before -> $after"

step "vfgx run --metrics serves the driver's telemetry; vfgx mon --json"
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
"$vfgx" run --duration 1 --quiet --metrics 127.0.0.1:9464 --metrics-hold 300 >"$out/run-metrics.txt" 2>&1 &
rp=$!
# the host's wget (the guest runs in a chroot of the host's root;
# scripts/install-deps.sh installs it); until the page is served, its error
# is kept and shown if the final page never comes
command -v wget >/dev/null || fail "wget missing on the host (apt-get install wget, or scripts/install-deps.sh)"
i=0
until wget -q -O "$out/metrics.txt" http://127.0.0.1:9464/metrics 2>"$out/wget.err" &&
	grep -q '^vfgx_run_finished 1$' "$out/metrics.txt"; do
	i=$((i + 1))
	[ $i -gt 2400 ] && fail "no final metrics page after 240 s; wget: $(cat "$out/wget.err"); vfgx run: $(cat "$out/run-metrics.txt")"
	sleep 0.1
done
kill $rp
wait $rp
grep '^vfgx_mon_' "$out/metrics.txt"
grep -q '^vfgx_mon_link_checks_total [1-9]' "$out/metrics.txt" || fail "metrics: link checks"
grep -q '^vfgx_mon_events_total [1-9]' "$out/metrics.txt" || fail "metrics: events"
grep -q '^vfgx_mon_link_degraded{device="gpu"} 1$' "$out/metrics.txt" || fail "metrics: gpu link not degraded"
grep -q '^vfgx_mon_link_width{device="nic"} [1-9]' "$out/metrics.txt" || fail "metrics: nic link width"
grep -q '^vfgx_mon_numa_mismatch 1$' "$out/metrics.txt" || fail "metrics: NUMA mismatch"
"$vfgx" mon --once --json >"$out/mon.json" || fail "vfgx mon --once --json"
grep -q '"schema":"vfgx.mon/1"' "$out/mon.json" || fail "mon --json: schema: $(cat "$out/mon.json")"
grep -q '"degraded":true' "$out/mon.json" || fail "mon --json: gpu link not degraded"
grep -q '"numa_mismatch":true' "$out/mon.json" || fail "mon --json: NUMA mismatch"

step "rmmod with a client open"
"$t" hold >"$out/hold.txt" &
hp=$!
wait_clients 1
i=0
until grep -q holding "$out/hold.txt"; do  # it drained its replayed events
	i=$((i + 1))
	[ $i -gt 300 ] && fail "held client never got ready"
	sleep 0.1
done
rmmod gpurdma_mon 2>"$out/rmmod.txt" && fail "rmmod succeeded with a client open"
cat "$out/rmmod.txt"
[ -c /dev/gpurdma_mon ] || fail "device gone after refused rmmod"
echo "test info still-here" >$inj
wait $hp || fail "held client failed"
grep -q 'hold got "still-here"' "$out/hold.txt" || fail "held client: $(cat "$out/hold.txt")"
rmmod gpurdma_mon || fail "rmmod after the client closed"
[ -e /dev/gpurdma_mon ] && fail "/dev/gpurdma_mon left behind"
[ -e /sys/kernel/debug/gpurdma_mon ] && fail "debugfs left behind"

step "reload: GPU stand-in is the NIC's own root port"
insmod "$ko" gpu=$nic_port nic=$nic mode=0600 max_clients=2 || fail "reload"
[ "$(stat -c %a /dev/gpurdma_mon)" = 600 ] || fail "mode=0600: device mode $(stat -c %a /dev/gpurdma_mon)"
"$t" telemetry --gpu $nic_port --nic $nic --numa 0 --switch 1 || fail "telemetry after reload"
"$t" clients 2 20 || fail "clients after reload"
rmmod gpurdma_mon || fail "rmmod"

step "auto-detection: the first Intel (0x8086) network device as the NIC"
insmod "$ko" nic_vendor=0x8086 || fail "insmod nic_vendor=0x8086"
found=$(cat $sys/nic_address)
case $found in 0000:21:00.0 | 0000:41:00.0) ;; *) fail "auto-detected NIC '$found', want one of the e1000e" ;; esac
[ "$(cat $sys/gpu_address)" = absent ] || fail "a GPU was auto-detected"
"$t" telemetry --nic "$found" --numa 0 --switch 0 || fail "telemetry with an auto-detected NIC"
rmmod gpurdma_mon || fail "rmmod"

step "reload with no parameters: no NVIDIA or Mellanox device here"
insmod "$ko" || fail "insmod without devices"
"$t" telemetry --numa 0 --switch 0 || fail "telemetry without devices"
"$vfgx" mon --once | grep -q '^gpu  absent' || fail "vfgx mon: gpu absent"
rmmod gpurdma_mon || fail "rmmod"

step "bad parameters are refused with a message"
insmod "$ko" gpu=0000:7f:1f.7 2>/dev/null && fail "insmod with a missing gpu succeeded"
dmesg | grep -q 'gpu=0000:7f:1f.7: no such PCI device' || fail "no message for the missing gpu"
insmod "$ko" check_ms=5 2>/dev/null && fail "insmod check_ms=5 succeeded"
dmesg | grep -q 'check_ms=5: must be 100..60000' || fail "no message for check_ms"
insmod "$ko" max_clients=0 2>/dev/null && fail "insmod max_clients=0 succeeded"
dmesg | grep -q 'max_clients=0: must be 1..4096' || fail "no message for max_clients"
insmod "$ko" mode=0755 2>/dev/null && fail "insmod mode=0755 succeeded"
dmesg | grep -q 'mode=0755: only read and write bits' || fail "no message for mode"
echo PASS
