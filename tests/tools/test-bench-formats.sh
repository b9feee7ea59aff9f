#!/usr/bin/env bash
# test-bench-formats.sh VFGX - issue #38: `vfgx bench formats` run briefly
# (--cpu-only, tiny working set, a few video frames) writes formats.md with
# every CPU target line once, each with numbers that parse (measured,
# reference, ratio, goal, rounds, interval), the rounds table of every
# profile and size, and the video rounds; --json carries the same targets;
# --gpu-only on a machine without a GPU leaves the file as it was and exits
# 0.  It asserts the file's structure, never a rate.
set -uo pipefail
vfgx=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# the target names, written here from the issue's list: each profile at 64
# B (or the least frame its header fits: vita49 74, vdif 82, spead 90) and
# at 1500 B, and the 1080p60 video on the cpu engine
want=(format_cpu_vs_vfgx_rtp_64B format_cpu_vs_vfgx_rtp_1500B
	format_cpu_vs_vfgx_vita49_74B format_cpu_vs_vfgx_vita49_1500B
	format_cpu_vs_vfgx_ecpri_64B format_cpu_vs_vfgx_ecpri_1500B
	format_cpu_vs_vfgx_spead_90B format_cpu_vs_vfgx_spead_1500B
	format_cpu_vs_vfgx_vdif_82B format_cpu_vs_vfgx_vdif_1500B
	format_cpu_vs_vfgx_gr-udp_64B format_cpu_vs_vfgx_gr-udp_1500B
	rtp_video_1080p60_cpu)

if ! timeout 600 "$vfgx" bench formats --cpu-only --rounds 7 --seconds 0.01 --working-set 2 \
	--video-frames 3 --out "$tmp" --json >"$tmp/json" 2>"$tmp/log"; then
	fail "vfgx bench formats --cpu-only: $(tail -5 "$tmp/log")"
fi
md=$tmp/formats.md
[ -s "$md" ] || fail "no $md"
num='-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?'
for t in "${want[@]}"; do
	n=$(grep -c "^target: $t " "$md")
	[ "$n" = 1 ] || { fail "target $t: $n lines, wanted 1"; continue; }
	line=$(grep "^target: $t " "$md")
	[[ "$line" =~ ^target:\ $t\ measured=$num\ reference=$num\ ratio=$num\ goal=$num\ met=(yes|no)\ rounds=7\ min=$num\ max=$num\ interval=\[$num,$num\]\ level=$num\ on=(ratio|measured) ]] ||
		fail "target $t: numbers do not parse: $line"
done
# the GPU targets, from the same list, each once and unmeasured with its
# reason (the GPU part is not in a --cpu-only file)
gwant=(format_gpu_vs_vfgx_rtp_64B format_gpu_vs_vfgx_rtp_1500B
	format_gpu_vs_vfgx_vita49_74B format_gpu_vs_vfgx_vita49_1500B
	format_gpu_vs_vfgx_ecpri_64B format_gpu_vs_vfgx_ecpri_1500B
	format_gpu_vs_vfgx_spead_90B format_gpu_vs_vfgx_spead_1500B
	format_gpu_vs_vfgx_vdif_82B format_gpu_vs_vfgx_vdif_1500B
	format_gpu_vs_vfgx_gr-udp_64B format_gpu_vs_vfgx_gr-udp_1500B
	rtp_video_streams_gpu)
for t in "${gwant[@]}"; do
	n=$(grep -c "^target: $t " "$md")
	[ "$n" = 1 ] || { fail "target $t: $n lines, wanted 1"; continue; }
	grep -qE "^target: $t measured=none reference=none ratio=none goal=$num met=no \(not measured: the CPU part alone \(--cpu-only\)" "$md" ||
		fail "target $t: not an unmeasured line with the reason: $(grep "^target: $t " "$md")"
done
# no other target line
pats=()
for t in "${want[@]}" "${gwant[@]}"; do pats+=(-e "^target: $t "); done
extra=$(grep '^target: ' "$md" | grep -v "${pats[@]}")
[ -z "$extra" ] || fail "target lines not in the list: $extra"
# the rounds behind them: 7 rows per profile and size, 7 video rounds
for p in rtp:64 rtp:1500 vita49:74 vita49:1500 ecpri:64 ecpri:1500 spead:90 spead:1500 \
	vdif:82 vdif:1500 gr-udp:64 gr-udp:1500; do
	n=$(grep -cE "^\| ${p%%:*} \| ${p##*:} \| [1-7] \| $num \| $num \| $num \|$" "$md")
	[ "$n" = 7 ] || fail "rounds of ${p%%:*} ${p##*:} B: $n rows, wanted 7"
done
n=$(grep -cE "^\| [1-7] \| 3 \| [0-9]+ \| [0-9]+ \| [0-9]+ \| $num \| $num \| $num \| $num \| $num \|$" "$md")
[ "$n" = 7 ] || fail "1080p video rounds: $n rows of 3 frames sent, wanted 7"
grep -q '^- commit: ' "$md" || fail "no commit line"
grep -q '^- load average' "$md" || fail "no load line"
grep -q '^## GPU' "$md" && fail "a --cpu-only file with a GPU section"
# --json: the same targets, as numbers
python3 - "$tmp/json" "${want[@]}" <<'P' || fail "--json: $(head -c 300 "$tmp/json")"
import json, sys
d = json.load(open(sys.argv[1]))
names = [t["name"] for t in d["targets"]]
assert sorted(names) == sorted(sys.argv[2:]), names
for t in d["targets"]:
    assert all(isinstance(t[k], float) for k in ("measured", "reference", "ratio", "goal")), t
    assert t["rounds"] == 7 and len(t["interval"]) == 2, t
P
# without a GPU, --gpu-only measures nothing and keeps the file
if ! nvidia-smi -L >/dev/null 2>&1; then
	cp "$md" "$tmp/before.md"
	"$vfgx" bench formats --gpu-only --out "$tmp" >"$tmp/g.log" 2>&1 || fail "--gpu-only without a GPU: exit $?: $(cat "$tmp/g.log")"
	cmp -s "$md" "$tmp/before.md" || fail "--gpu-only without a GPU changed formats.md"
fi
# usage errors: exit 2, one line
"$vfgx" bench formats --cpu-only --gpu-only --out "$tmp" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" != 2 ] || [ "$(wc -l <"$tmp/err")" != 1 ]; then
	fail "--cpu-only --gpu-only: exit $rc: $(cat "$tmp/err")"
fi
for bad in foo "rtp,," ""; do
	"$vfgx" bench formats --cpu-only --only "$bad" --out "$tmp" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 2 ] || [ "$(wc -l <"$tmp/err")" != 1 ]; then
		fail "--only '$bad': exit $rc: $(cat "$tmp/err")"
	fi
done
# --only: the pairs named run, every other target line still there,
# unmeasured with the reason
mkdir -p "$tmp/only"
if ! timeout 300 "$vfgx" bench formats --cpu-only --only ecpri,video --rounds 2 --seconds 0.01 \
	--working-set 2 --video-frames 3 --out "$tmp/only" >"$tmp/only.log" 2>&1; then
	fail "--only ecpri,video: $(tail -3 "$tmp/only.log")"
fi
omd=$tmp/only/formats.md
for t in "${want[@]}" "${gwant[@]}"; do
	[ "$(grep -c "^target: $t " "$omd")" = 1 ] || fail "--only: target $t not once"
done
for t in format_cpu_vs_vfgx_ecpri_64B format_cpu_vs_vfgx_ecpri_1500B rtp_video_1080p60_cpu; do
	grep -qE "^target: $t measured=$num .* rounds=2 " "$omd" || fail "--only: $t not measured: $(grep "^target: $t " "$omd")"
done
n=$(grep -c "^target: format_cpu_vs_vfgx_.* measured=none .*(not measured: not among --only ecpri,video)" "$omd")
[ "$n" = 10 ] || fail "--only: $n cpu pairs unmeasured with the reason, wanted 10"
grep -q "^- command: vfgx bench formats .* --only ecpri,video" "$omd" || fail "--only: not in the command line"
# --merge-from with neither part named: exit 2, one line
"$vfgx" bench formats --merge-from "$omd" --out "$tmp" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" != 2 ] || [ "$(wc -l <"$tmp/err")" != 1 ]; then
	fail "--merge-from alone: exit $rc: $(cat "$tmp/err")"
fi
# --cpu-only --merge-from: this run's CPU part, an earlier file's GPU part
# (its sections, its GPU target lines as they were, its date and commit
# as the GPU part's)
mkdir -p "$tmp/keep"
{
	printf '# Producers formats\n\n- date: 2026-01-02 03:04:05 UTC\n- commit: 1234567890abcdef1234567890abcdef12345678\n'
	printf -- '- machine: a GPU host\n\n## CPU engine: each profile against the vfgx profile\n\n| old cpu row |\n\n'
	printf '## GPU engine: each profile against the vfgx profile\n\n| kept gpu row |\n\n## Targets\n\n'
	printf 'target: format_cpu_vs_vfgx_rtp_64B measured=1 reference=2 ratio=0.5 goal=0.9 met=no\n'
	for t in "${gwant[@]}"; do
		printf 'target: %s measured=7 reference=8 ratio=0.875 goal=0.9 met=no\n' "$t"
	done
} >"$tmp/gpu-part.md"
if ! timeout 300 "$vfgx" bench formats --cpu-only --only ecpri --rounds 2 --seconds 0.01 \
	--working-set 2 --video-frames 3 --merge-from "$tmp/gpu-part.md" --out "$tmp/keep" \
	>"$tmp/keep.log" 2>&1; then
	fail "--cpu-only --merge-from: $(tail -3 "$tmp/keep.log")"
fi
kmd=$tmp/keep/formats.md
grep -q '^| kept gpu row |$' "$kmd" || fail "--cpu-only --merge-from: the GPU section not kept"
grep -q 'old cpu row' "$kmd" && fail "--cpu-only --merge-from: the earlier CPU rows kept"
grep -q '^- GPU part.s commit: 1234567890abcdef' "$kmd" || fail "--cpu-only --merge-from: no GPU part's commit"
grep -q '^- GPU part.s machine: a GPU host' "$kmd" || fail "--cpu-only --merge-from: no GPU part's machine"
for t in "${gwant[@]}"; do
	[ "$(grep -c "^target: $t measured=7 reference=8 " "$kmd")" = 1 ] || fail "--cpu-only --merge-from: GPU target $t not kept once"
done
for t in "${want[@]}"; do
	[ "$(grep -c "^target: $t " "$kmd")" = 1 ] || fail "--cpu-only --merge-from: target $t not once"
done
grep -qE "^target: format_cpu_vs_vfgx_ecpri_64B measured=$num .* rounds=2 " "$kmd" ||
	fail "--cpu-only --merge-from: ecpri not measured"
[ "$fails" = 0 ] && echo "bench-formats: ${#want[@]} target lines with their rounds; --json; --gpu-only without a GPU keeps the file; --only; --cpu-only --merge-from keeps a GPU part"
exit $((fails > 0))
