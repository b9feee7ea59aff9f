#!/usr/bin/env bash
# test-bench-results-check.sh - issue #41: no committed results file says
# met=yes without the numbers behind it (scripts/bench-stale.py --check), and
# the check itself fails on such a line (the one an unmeasured latency class
# used to print), on a ratio well above the reference that bounds it (a
# noisy one just above 1 passes), and on one buffer passed twice to
# bench_fmt_spread.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/bench-stale.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
python3 "$script" --check || { echo "FAIL: bench/results has met=yes lines the check refuses (above)"; fails=$((fails + 1)); }
# the check can fail: a fixture with lines that must be refused
cat >"$tmp/rdma.md" <<'M'
target: rdma_read_lat_small_usec measured=0 reference=0 ratio=0.000 goal=1 met=yes
target: one_value measured=10 reference=5 ratio=3.000 goal=1.5 met=yes
target: ratio_rounds measured=0 reference=0 ratio=0.0000 goal=1.05 met=yes rounds=3 min=0 max=0 interval=[0,0] level=0.750 on=ratio
target: across_goal measured=5 reference=0 ratio=0.0000 goal=4 met=yes rounds=7 min=3 max=6 interval=[3,6] level=0.984 on=measured
target: fine measured=5 reference=0 ratio=0.0000 goal=4 met=yes rounds=7 min=4.5 max=6 interval=[4.5,6] level=0.984 on=measured
target: not_measured measured=none reference=none ratio=none goal=1.05 met=no (no round measured)
target: five_rounds measured=5 reference=0 ratio=0.0000 goal=4 met=yes rounds=5 min=4.5 max=6 interval=[4.5,6] level=0.938 on=measured
target: level_lies measured=5 reference=0 ratio=0.0000 goal=4 met=yes rounds=7 min=4.5 max=6 interval=[4.5,6] level=0.999 on=measured
target: no_level measured=5 reference=0 ratio=0.0000 goal=4 met=yes rounds=7 min=4.5 max=6 interval=[4.5,6] on=measured
target: five_not_met measured=5 reference=0 ratio=0.0000 goal=4 met=no rounds=5 min=4.5 max=6 interval=[4.5,6] level=0.938 on=measured (too few rounds for 95%: 6 needed)
target: e2e_64B_gpu_vs_kernel measured=354.6 reference=182.7 ratio=1.9422 goal=0.8 met=yes rounds=7 min=1.926 max=1.95 interval=[1.926,1.95] level=0.984 on=ratio
target: e2e_8192B_pinned_vs_pcie measured=48.36 reference=51.11 ratio=0.9494 goal=0.8 met=yes rounds=7 min=0.9343 max=0.9567 interval=[0.9343,0.9567] level=0.984 on=ratio
target: e2e_8192B_pinned_vs_pcie measured=56 reference=51 ratio=1.098 goal=0.8 met=yes rounds=7 min=0.98 max=1.12 interval=[0.98,1.12] level=0.984 on=ratio
M
out=$(python3 "$script" --check --results "$tmp")
rc=$?
echo "$out"
[ "$rc" = 1 ] || { echo "FAIL: --check passed a fixture with unbacked met=yes lines"; fails=$((fails + 1)); }
# issue #41: five rounds give 93.8%, not the 95% the files state
for want in rdma.md:1:.rdma_read_lat_small_usec rdma.md:2:.one_value rdma.md:3:.ratio_rounds rdma.md:4:.across_goal \
	rdma.md:7:.five_rounds rdma.md:8:.level_lies rdma.md:9:.no_level rdma.md:11:.e2e_64B_gpu_vs_kernel; do
	grep -q "^FAIL: ${want}" <<<"$out" || { echo "FAIL: --check did not refuse ${want}"; fails=$((fails + 1)); }
done
grep -q "rdma.md:\(5\|6\|10\|12\|13\):" <<<"$out" && { echo "FAIL: --check refused a backed line or a met=no line"; fails=$((fails + 1)); }
# a results file must have its sources declared for the stale listing
mkdir "$tmp/undeclared" && echo "# x" >"$tmp/undeclared/new-bench.md"
python3 "$script" --results "$tmp/undeclared" >/dev/null 2>&1 &&
	{ echo "FAIL: a results file without declared sources was accepted"; fails=$((fails + 1)); }
[ "$fails" = 0 ] && echo "bench-results-check: ok"
exit $((fails > 0))
