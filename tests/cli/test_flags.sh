#!/usr/bin/env bash
# test_flags.sh VFGX - every numeric command-line flag of every subcommand
# goes through the one strict parser: nan, inf, 1e300, empty strings,
# values that wrap (4294967297), leading zeros (010), signs and hex are
# refused with exit 2 and one line naming the flag, before anything runs.
set -uo pipefail
vfgx=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# refused PATTERN ARGS... : exit 2, exactly one line, matching PATTERN
refused() {
	local pat=$1
	shift
	timeout 20 "$vfgx" "$@" >"$tmp/out" 2>&1
	local rc=$? lines
	lines=$(wc -l <"$tmp/out")
	if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qE -- "$pat" "$tmp/out"; then
		echo "FAIL vfgx $*: exit $rc, $lines lines:"
		sed 's/^/     /' "$tmp/out" | head -5
		fails=$((fails + 1))
		return
	fi
	echo "ok   vfgx $*"
}

for v in nan inf -inf 1e300 '' -1 0x10 ' 1' '1 ' 1s; do
	refused "^vfgx run: --duration: '?.*'? (is|has)" run --duration "$v"
done
refused "^vfgx mon: --count: 4294967297 is out of range \(must be 0\.\.4294967295\)$" mon --count 4294967297
refused "^vfgx mon: --timeout: '010' has a leading zero" mon --timeout 010
refused "^vfgx mon: --pressure: 0 is out of range \(must be 1\.\.100\)$" mon --pressure 0
refused "^vfgx mon: --bw: '' is empty" mon --bw ''
refused "^vfgx mon: --bw: '\+5' is not a whole number" mon --bw +5
refused "^vfgx discover: -n: '010' has a leading zero" discover -i lo -n 010
refused "^vfgx discover: -n: 18446744073709551616 is out of range" discover -i lo -n 18446744073709551616
refused "^vfgx discover: -p: 257 is out of range \(must be 0\.\.256\)$" discover -i lo -p 257
refused "^vfgx discover: -t: '1e3' is not a whole number" discover -i lo -t 1e3
refused "^vfgx discover: -l: '' is empty" discover -i lo -l ''
refused "^vfgx bench afxdp: --seconds: 'nan' is not a decimal number" bench afxdp --seconds nan
refused "^vfgx bench afxdp: --senders: 4294967297 is out of range" bench afxdp --senders 4294967297
refused "^vfgx bench afxdp: --queues: '' is empty" bench afxdp --queues ''
refused "^vfgx bench dpdk: --rounds: '010' has a leading zero" bench dpdk --rounds 010
refused "^vfgx bench dpdk: --core: '-1' is not a whole number" bench dpdk --core -1
refused "^vfgx bench dpdk: --seconds: 'inf' is not a decimal number" bench dpdk --seconds inf
refused "^vfgx bench eba: --seconds: '1e300' is not a whole number" bench eba --seconds 1e300
refused "^vfgx bench eba: --seconds: 2 is out of range" bench eba --seconds 2
refused "^vfgx bench eba: --rounds: '' is empty" bench eba --rounds ''
refused "^vfgx bench rdma: -s: 4294967297 is out of range" bench rdma -s 4294967297 write_bw
refused "^vfgx bench rdma: -x: 256 is out of range" bench rdma -x 256 write_bw
refused "^vfgx bench rdma: -p: 0 is out of range" bench rdma -p 0 write_bw
refused "^vfgx bench rdma: -n: '0x10' is not a whole number" bench rdma -n 0x10 write_bw
refused "^vfgx bench rdma: -I: '1e3' is not a whole number" bench rdma -I 1e3 write_bw
refused "^vfgx bench rdma: -Q: 0 is out of range" bench rdma -Q 0 write_bw
refused "^vfgx bench socket: --senders: 4294967297 is out of range" bench socket --senders 4294967297
refused "^vfgx bench socket: --cpus takes" bench socket --cpus 0,010
refused "^vfgx bench socket: --cpus takes" bench socket --cpus 0,4294967297
refused "^vfgx bench socket: --udp-rate must be" bench socket --udp-rate nan
refused "^vfgx bench socket: --rounds: '' is empty" bench socket --rounds ''
refused "^vfgx bench pipeline: --seconds must be" bench pipeline --seconds nan
refused "^vfgx bench pipeline: --seconds must be" bench pipeline --seconds 1e300
# a flag value that carries a terminal escape is echoed escaped
refused "^vfgx mon: --count: '1\\\\x1b\[31m' is not a whole number" mon --count $'1\e[31m'

# the port inside a socket address goes through the same parser
for a in '+5000' ' 5000' '05000' '70000' '4294972296'; do
	printf 'interfaces:\n  - name: s\n    backend: socket\n    address: "udp://127.0.0.1:%s"\n' "$a" >"$tmp/addr.yaml"
	refused "^vfgx: s: address 'udp://127\\.0\\.0\\.1:.*': port .*\\(must be 0\\.\\.65535\\)$" run "$tmp/addr.yaml" --duration 0.1
done

# arguments echoed in messages are escaped too: a command, an option, a
# --root path, a config file name (one line, never a forged second one)
refused "^vfgx: unknown command 'x\\\\x1b\\[31m'" $'x\e[31m'
refused "^vfgx run: unknown option '--x\\\\x1b\\[31m'" run $'--x\e[31m'
refused "^vfgx devices: --root .*r\\\\nvfgx: forged: not a directory" devices --root "$tmp/r"$'\n'"vfgx: forged"
printf 'interfaces: []\n' >"$tmp/a"$'\n'"b.yaml"
refused "^vfgx: .*/a\\\\nb\\.yaml: no interfaces configured" run "$tmp/a"$'\n'"b.yaml"

echo "$fails failed"
[ "$fails" -eq 0 ]
