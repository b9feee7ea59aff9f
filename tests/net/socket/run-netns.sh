#!/usr/bin/env bash
# run-netns.sh TEST_SOCKET VFGX - the socket tests across two namespaces
# joined by veth (sk-a 198.18.71.1, sk-b 198.18.71.2), then `vfgx run
# configs/socket-udp.yaml` inside sk-a fed by a real UDP sender.
set -uo pipefail
test_socket=$1
vfgx=$2
name=sk
export VETH_NET=71
root=$(cd "$(dirname "$0")/../../.." && pwd)
"$root/scripts/netns-probe.sh" || exit $?
pids=()
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	"$root/scripts/netns-veth.sh" down "$name"
}
trap cleanup EXIT
"$root/scripts/netns-veth.sh" up "$name" >/dev/null || { echo "FAIL: scripts/netns-veth.sh up $name failed (its error above)"; exit 1; }

rc=0
"$test_socket" netns "$name-a" "$name-b" 198.18.71.1 198.18.72.1 || rc=1

echo "== vfgx run configs/socket-udp.yaml (in $name-a, 20000 datagrams from a sender)"
out=$(mktemp)
ip netns exec "$name-a" "$vfgx" run "$root/configs/socket-udp.yaml" --duration 4 --quiet >"$out" 2>&1 &
pids+=($!)
sleep 1
ip netns exec "$name-a" "$test_socket" send 127.0.0.1 5000 20000 || rc=1
wait "${pids[0]}"; vrc=$?
pids=()
cat "$out"
delivered=$(sed -n 's/.*delivered \([0-9]*\) (.*/\1/p' "$out")
if [ "$vrc" != 0 ] || ! grep -q "result: PASSED" "$out"; then
	echo "FAIL: vfgx run exited $vrc"; rc=1
elif [ "${delivered:-0}" -le 0 ]; then
	echo "FAIL: vfgx run delivered nothing"; rc=1
else
	echo "vfgx run: delivered $delivered of 20000 sent"
fi
rm -f "$out"
exit $rc
