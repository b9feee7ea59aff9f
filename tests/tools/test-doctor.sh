#!/usr/bin/env bash
# shellcheck disable=SC2016 # the patterns hold literal backquotes
# test-doctor.sh VFGX - `vfgx doctor` and `vfgx devices` against the fixture
# trees in tests/fixtures (and the live machine): exit codes, the exact
# pass/warn/fail lines and the device facts each tree models.
set -uo pipefail
vfgx=${1:?usage: test-doctor.sh path/to/vfgx}
fx=$(cd "$(dirname "$0")/../fixtures" && pwd)
failed=0
out=

fail() {
	echo "FAIL: $*"
	failed=1
}

# run_doctor TREE EXPECTED_EXIT
run_doctor() {
	local rc
	out=$("$vfgx" doctor --root "$fx/$1" 2>&1)
	rc=$?
	[ "$rc" -eq "$2" ] || fail "$1: doctor exit $rc, expected $2"$'\n'"$out"
}

has() {
	grep -qE -- "$2" <<<"$out" || fail "$1: no line matching '$2' in:"$'\n'"$out"
}

hasnt() {
	! grep -qE -- "$2" <<<"$out" || fail "$1: unexpected line matching '$2' in:"$'\n'"$out"
}

count() {
	local n
	n=$(grep -cE -- "$2" <<<"$out")
	[ "$n" -eq "$3" ] || fail "$1: $n lines match '$2', expected $3"
}

# --- doctor ------------------------------------------------------------------
t=healthy-cx7-h100
run_doctor $t 0
count $t '^pass  ' 11
hasnt $t '^(warn|fail|skip) '
has $t '^pass  gpudirect    nvidia-peermem loaded; dma-buf also possible$'
has $t '^pass  iommu        IOMMU in passthrough \(identity\) mode'
has $t '^pass  acs          no ACS redirect on 3 switch port\(s\)'
has $t '^pass  numa         .*ens1f0np0: same-switch\)$'
has $t '^result: all pass$'

t=peermem-missing
run_doctor $t 2
count $t '^fail  ' 1
has $t '^fail  gpudirect    no GPUDirect RDMA path: nvidia-peermem not loaded and no dma-buf; proprietary GPU kernel modules'
has $t '^      fix: `modprobe nvidia-peermem`'
has $t '^pass  gpu          1 NVIDIA GPU\(s\), first 0000:19:00.0; driver 535.154.05 \(proprietary kernel modules\)$'
has $t '^result: failures$'

t=cross-socket
run_doctor $t 2
count $t '^fail  ' 1
has $t '^fail  numa         GPU 0000:9a:00.0 \(node 1\) and its closest NIC ens1f0np0 0000:16:00.0 \(node 0\) are on different sockets'
has $t '^pass  acs          no PCIe switch shared by a GPU and its closest NIC'

t=iommu-translated
run_doctor $t 2
count $t '^fail  ' 1
has $t '^fail  iommu        IOMMU translates DMA for GPU 0000:19:00.0 \(group 30, type DMA-FQ\)'
has $t '^      fix: add iommu=pt'

t=acs-redirect
run_doctor $t 2
count $t '^fail  ' 1
has $t '^fail  acs          ACS redirect on switch port 0000:17:01.0 \(ACSCtl 0x001d\)'
has $t 'setpci -s 0000:17:01.0 ECAP_ACS\+0x6.w=0000'

# an ACS header in the last 4 bytes of config space: its control register
# is past what was read, so there is no redirect to report (no stack read)
t=acs-at-end
run_doctor $t 0
has $t '^pass  acs          no ACS redirect on 3 switch port'

# a FIFO where a sysfs file should be: refused, never waited on
fifo_tree=$(mktemp -d)
cp -a "$fx/healthy-cx7-h100/." "$fifo_tree/"
rm -f "$fifo_tree/sys/class/net/lo/operstate" "$fifo_tree/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/config.lspci"
mkfifo "$fifo_tree/sys/class/net/lo/operstate" "$fifo_tree/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/config.lspci"
for cmd in devices doctor; do
	timeout 30 "$vfgx" $cmd --root "$fifo_tree" >/dev/null 2>&1
	rc=$?
	[ "$rc" -ne 124 ] || fail "vfgx $cmd --root with a FIFO in the tree hung"
done
rm -rf "$fifo_tree"

t=pcie-mrrs-128
run_doctor $t 1
count $t '^(warn|fail)  ' 1
has $t '^warn  pcie         0000:18:00.0: MaxReadReq 128 bytes \(< 512\) limits DMA read throughput$'
has $t '^      fix: `setpci -s 0000:18:00.0 CAP_EXP\+8.w=5000:7000` \(MaxReadReq 4096\)$'
has $t '^result: warnings$'

t=no-gpu
run_doctor $t 1
hasnt $t '^fail  '
count $t '^warn  ' 3
has $t '^skip  gpu          no NVIDIA GPU .*: the pipeline runs on CPU cores'
has $t '^warn  hugepages    no free huge pages'
has $t '^warn  memlock      locked memory limited to 8388608 bytes and no CAP_IPC_LOCK'
has $t '^warn  gpurdma_mon  gpurdma_mon not loaded'
has $t '^skip  gpudirect    no GPU$'
has $t '^skip  cpufreq      no cpufreq'
has $t '^pass  nic-driver   1 PCI NIC function\(s\)$'
has $t '^result: warnings$'

# no GPU is a supported set-up (docs/SETUP.md: checks that do not apply
# skip without changing the exit status): a GPU-less node that is otherwise
# ready passes; root's CAP_IPC_LOCK makes the 8 MiB memlock limit moot
t=no-gpu-ready
run_doctor $t 0
hasnt $t '^(warn|fail)  '
has $t '^skip  gpu          no NVIDIA GPU'
has $t '^pass  memlock      locked memory limited to 8388608 bytes, but this process has CAP_IPC_LOCK'
has $t '^result: all pass$'

# doctor, docs/SETUP.md and the DPDK backend ask for the same huge pages,
# and doctor loads gpurdma_mon the way `vfgx mon` says to
nr_fix() { grep -oE 'echo [0-9]+ > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages' "$@" | sort -u; }
run_doctor no-gpu 1
doc_hp=$(nr_fix <<<"$out")
[ -n "$doc_hp" ] || fail "no-gpu: the hugepages fix names no 2 MiB page count"
for f in "$fx/../../docs/SETUP.md" "$fx/../../src/port/dpdk_setup.c"; do
	[ "$(nr_fix "$f")" = "$doc_hp" ] || fail "$(basename "$f") says '$(nr_fix "$f")', doctor says '$doc_hp'"
done
mon_out=$("$vfgx" mon --device /nonexistent/gpurdma_mon --once 2>&1)
load_cmd() { grep -oE '`[^`]*gpurdma_mon[^`]*`' | head -1; }
doc_load=$(grep -A1 '^warn  gpurdma_mon' <<<"$out" | load_cmd)
if [ -z "$doc_load" ] || [ "$doc_load" != "$(load_cmd <<<"$mon_out")" ]; then
	fail "doctor loads gpurdma_mon with '$doc_load', vfgx mon says: $mon_out"
fi

# every non-pass line carries a fix
for t in peermem-missing cross-socket iommu-translated acs-redirect pcie-mrrs-128 no-gpu no-gpu-ready; do
	run_doctor $t "$("$vfgx" doctor --root "$fx/$t" >/dev/null 2>&1; echo $?)"
	nonpass=$(grep -cE '^(warn|fail)  ' <<<"$out")
	fixes=$(grep -c '^      fix: ' <<<"$out")
	[ "$nonpass" -eq "$fixes" ] || fail "$t: $nonpass warn/fail lines but $fixes fixes"
done

# --- devices -----------------------------------------------------------------
out=$("$vfgx" devices --root "$fx/healthy-cx7-h100") || fail "devices healthy: exit $?"
t=devices-text
has $t '^  ens1f0np0    pci 0000:18:00.0 driver mlx5_core   numa 0  speed 400000 Mb/s  up    xdp native zero-copy rdma mlx5_0$'
has $t '^  \(xdp: guessed from the driver: kernel < 6.3 or --root\)$'
has $t '^  0000:19:00.0 NVIDIA \[10de:2330\] numa 0 memory unknown bar1 128 GiB driver nvidia \(sysfs\)$'
has $t '^      gid 3   0000:0000:0000:0000:0000:ffff:c0a8:0a01 RoCE v2 ens1f0np0$'
has $t '^  gpu 0000:19:00.0 - nic ens1f0np0 \(0000:18:00.0\) same-switch$'
has $t '^  gpu 0000:19:00.0 - nic ens2f0np0 \(0000:98:00.0\) cross-socket$'

json=$("$vfgx" devices --json --root "$fx/healthy-cx7-h100") || fail "devices --json: exit $?"
python3 - "$json" <<'PY' || failed=1
import json, sys
d = json.loads(sys.argv[1])
def check(cond, what):
    if not cond:
        print("FAIL: devices --json:", what)
        sys.exit(1)
nic = {n["name"]: n for n in d["interfaces"]}
check(nic["ens1f0np0"]["pci"] == "0000:18:00.0" and nic["ens1f0np0"]["numa_node"] == 0, "ens1f0np0 pci/numa")
check(nic["ens1f0np0"]["speed_mbps"] == 400000 and nic["ens1f0np0"]["xdp_zerocopy"] is True, "ens1f0np0 speed/xdp")
check(nic["lo"]["pci"] is None, "lo has no PCI address")
check(nic["ens1f0np0"]["xdp_source"] == "driver table", "--root guesses XDP from the driver")
r = {x["name"]: x for x in d["rdma_devices"]}
check(r["mlx5_0"]["netdev"] == "ens1f0np0", "mlx5_0 netdev")
p = r["mlx5_0"]["ports"][0]
check(p["state"] == "ACTIVE" and p["link_layer"] == "Ethernet", "mlx5_0 port state")
check([g["index"] for g in p["gids"]] == [0, 1, 2, 3], "gid table without the empty entry")
g = d["gpus"][0]
check(g["pci"] == "0000:19:00.0" and g["bar1_bytes"] == 128 << 30 and g["numa_node"] == 0, "gpu facts")
pairs = [(x["gpu"], x["nic"], x["distance"], x["rank"]) for x in d["gpu_nic_pairs"]]
check(pairs == [("0000:19:00.0", "ens1f0np0", "same-switch", 0),
                ("0000:19:00.0", "ens2f0np0", "cross-socket", 3)], "pairs %r" % pairs)
PY

json=$("$vfgx" devices --json --root "$fx/no-gpu") || fail "devices --json no-gpu: exit $?"
python3 - "$json" <<'PY' || failed=1
import json, sys
d = json.loads(sys.argv[1])
eth = [n for n in d["interfaces"] if n["name"] == "eth0"]
ok = (d["gpus"] == [] and d["gpu_nic_pairs"] == [] and d["rdma_devices"] == [] and eth and
      eth[0]["pci"] == "0000:00:03.0" and eth[0]["driver"] == "virtio_net")
if not ok:
    print("FAIL: devices --json no-gpu:", d)
    sys.exit(1)
PY

# --- bad usage ---------------------------------------------------------------
out=$("$vfgx" doctor --root /nonexistent/vfgx 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "doctor --root missing: exit $rc, expected 2"
has bad-root '^vfgx doctor: --root /nonexistent/vfgx: not a directory'
out=$("$vfgx" devices --bogus 2>&1)
[ $? -eq 2 ] || fail "devices --bogus: expected exit 2"

# --- the live machine --------------------------------------------------------
out=$("$vfgx" doctor 2>&1)
rc=$?
[ "$rc" -le 2 ] || fail "live doctor: exit $rc"
count live '^(pass|skip|warn|fail)  ' 11
hasnt live 'gdrdrv'
if ! grep -qs 0x10de /sys/bus/pci/devices/*/vendor; then
	has live '^skip  gpu          no NVIDIA GPU'
fi
# root (CAP_IPC_LOCK) is exempt from the memlock limit
if [ "$(id -u)" = 0 ] && grep -qE '^CapEff:.*' /proc/self/status &&
   (( (0x$(awk '/^CapEff:/ {print $2}' /proc/self/status) >> 14) & 1 )); then
	hasnt live '^warn  memlock'
fi
json=$("$vfgx" devices --json) || fail "live devices --json: exit $?"
python3 - "$json" <<'PY' || failed=1
import json, os, sys
d = json.loads(sys.argv[1])
lo = [n for n in d["interfaces"] if n["name"] == "lo"]
major, minor = (int(x) for x in os.uname().release.split(".")[:2])
if lo and (major, minor) >= (6, 3):
    # the kernel's netdev netlink family answers; lo has no native XDP
    if lo[0]["xdp_source"] != "kernel" or lo[0]["xdp"] != "generic" or lo[0]["xdp_zerocopy"]:
        print("FAIL: live devices: lo xdp facts not from the kernel:", lo[0])
        sys.exit(1)
PY

if [ "$failed" -ne 0 ]; then
	echo "test-doctor: FAILED"
	exit 1
fi
echo "test-doctor: all checks passed"
