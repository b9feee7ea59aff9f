#!/bin/sh
# kparams_grid_constant.sh [NVCC] - the GPU kernels read their parameter
# block (struct kparams, about 600 bytes) in place, from the constant bank:
#  1. every __global__ in src/pipeline that takes kparams takes it as
#     `const __grid_constant__ kparams k`;
#  2. with NVCC: gpu_proc.cu compiled to PTX, no kernel's local memory
#     (__local_depot) is as large as its kparams parameter - a by-value
#     parameter whose address reaches an out-of-line function is copied
#     into every thread's local memory, and each k.field read becomes a
#     local load (the regression since de75d6d, issue 40).
# Exits 1 with one line per finding.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$here/src/pipeline
nvcc=${1:-}
fail=0
say() { echo "kparams_grid_constant: $*"; fail=1; }

# 1. the source: each kernel's parameter list, joined onto one line
n=0
for f in "$dir"/*.cu "$dir"/*.cuh; do
	[ -f "$f" ] || continue
	bad=$(awk '/__global__/ { sig = ""; on = 1 }
		   on { sig = sig " " $0; if (index($0, ")")) { on = 0; print sig } }' "$f" |
	      grep 'kparams' | grep -v 'const __grid_constant__ kparams ')
	n=$((n + $(awk '/__global__/' "$f" | wc -l)))
	[ -z "$bad" ] || say "$(basename "$f"): kernel takes kparams by value without const __grid_constant__:$bad"
done
[ $n -gt 0 ] || say "no __global__ found under $dir"

# 2. the compiled kernels
if [ -n "$nvcc" ]; then
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	if ! "$nvcc" -std=c++17 -O3 -arch=compute_90 -I"$here/include" -I"$dir" \
		-ptx "$dir/gpu_proc.cu" -o "$tmp/k.ptx" 2>"$tmp/err"; then
		say "nvcc -ptx gpu_proc.cu failed: $(head -1 "$tmp/err")"
	else
		# per entry: its kparams parameter's size and its local depot
		awk '/^\.visible \.entry|^\.entry/ { e = $3; sub(/\(.*/, "", e); p = 0; d = 0; ent[e] = 1 }
		     e != "" && /\.param .*_param_0\[/ { s = $0; sub(/.*\[/, "", s); sub(/\].*/, "", s); p = s + 0; par[e] = p }
		     e != "" && /__local_depot[0-9]+\[/ { s = $0; sub(/.*\[/, "", s); sub(/\].*/, "", s); dep[e] = s + 0 }
		     END { for (x in ent) printf "%s %d %d\n", x, par[x], dep[x] }' "$tmp/k.ptx" >"$tmp/sizes"
		grep -q 'kparams' "$tmp/sizes" || say "no kernel taking kparams in the PTX"
		while read -r name par dep; do
			case $name in *kparams*) ;; *) continue ;; esac
			[ "$dep" -lt "$par" ] ||
				say "$name: $dep bytes of local memory, room for its $par-byte kparams copy"
		done <"$tmp/sizes"
		[ $fail = 1 ] || echo "kparams_grid_constant: PTX: $(grep -c kparams "$tmp/sizes") kernels, local memory below kparams ($(awk '/kparams/ { print $2; exit }' "$tmp/sizes") B)"
	fi
else
	echo "kparams_grid_constant: no nvcc - the source check only"
fi
[ $fail = 0 ] && echo "kparams_grid_constant: $n kernels in src/pipeline, kparams const __grid_constant__"
exit $fail
