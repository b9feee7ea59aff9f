#!/bin/sh
# rules_single_source.sh [SRCDIR] - the reorder and chunk rules have one
# source, src/pipeline/rules.h, compiled into both engines (issue #39):
#  1. the cpu engine (proc.c, chunk.c) and the gpu engine (gpu_phase_a.cuh,
#     gpu_phase_b.cuh, gpu_fmt_seq.cuh, gpu_chunks.cuh, gpu_chunks_bytes.cuh)
#     include rules.h;
#  2. no file but rules.h defines a function of the same name as one of
#     rules.h's;
#  3. each engine calls every decision of rules.h that it has a stage for;
#  4. no function in src/pipeline is defined both in a C file and in a
#     CUDA file (a twin).
# Exits 1 with one line per finding.  SRCDIR: the tree's src/pipeline
# (default: this checkout's).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$here/src/pipeline}
rules=$dir/rules.h
fail=0
say() { echo "rules_single_source: $*"; fail=1; }

[ -f "$rules" ] || { echo "rules_single_source: $rules is missing"; exit 1; }
cpu="proc.c chunk.c"
gpu="gpu_phase_a.cuh gpu_phase_b.cuh gpu_fmt_seq.cuh gpu_chunks.cuh gpu_chunks_bytes.cuh"

# 1
for f in $cpu $gpu; do
	grep -q '^#include "rules.h"' "$dir/$f" || say "$f does not include rules.h"
done

# the functions rules.h defines: "VFGX_HD <type> name(" lines
names=$(sed -n 's/^VFGX_HD .*[ *]\(vfgx_[a-z0-9_]*\)(.*/\1/p' "$rules" | sort -u)
[ -n "$names" ] || say "rules.h defines no VFGX_HD function"

# 2: a definition starts a line (calls are indented in this code base)
for n in $names; do
	for f in "$dir"/*.c "$dir"/*.h "$dir"/*.cu "$dir"/*.cuh; do
		[ "$f" = "$rules" ] && continue
		if grep -Eq "^[A-Za-z_].*[ *]$n\(" "$f"; then
			say "$(basename "$f") defines $n, which rules.h defines"
		fi
	done
done

# 3: the decisions each engine must take from rules.h
need="vfgx_ro_insert vfgx_ro_store vfgx_ro_slot vfgx_ro_advance_gaps vfgx_ro_flush_step
vfgx_rule_deliver vfgx_ck_place vfgx_ck_dup vfgx_ck_holds vfgx_ck_release
vfgx_ck_advance vfgx_ck_settle vfgx_ck_tick vfgx_ck_flush vfgx_ck_gaps_from
vfgx_ck_word_hi vfgx_ck_word_gaps vfgx_ck_gaps_split
vfgx_ck_byte_chunk vfgx_ck_byte_key vfgx_ck_byte_span vfgx_ck_release_bytes"
for side in cpu gpu; do
	eval files=\$$side
	for n in $need; do
		found=0
		for f in $files; do
			grep -q "$n(" "$dir/$f" && found=1
		done
		[ $found = 1 ] || say "the $side engine ($files) does not call $n"
	done
done

# 4: function names defined at the start of a line, per language
defs() {
	for f in "$@"; do
		[ -f "$f" ] || continue
		# a definition: a line at column 0 with a name and "(", not
		# ending in ";" (a prototype), not a macro or a comment
		grep -E '^[A-Za-z_][A-Za-z0-9_ *&<>,]*[ *&]([a-z_][a-z0-9_]*)\(' "$f" |
			grep -Ev ';[[:space:]]*$|^#|^typedef' |
			sed -E 's/^[^(]*[ *&]([a-z_][a-z0-9_]*)\(.*/\1/'
	done | sort -u
}
cdefs=$(defs "$dir"/*.c)
cudefs=$(defs "$dir"/*.cu "$dir"/*.cuh)
twins=$(printf '%s\n%s\n' "$cdefs" "$cudefs" | sort | uniq -d)
for t in $twins; do
	say "$t is defined in both a C and a CUDA file of src/pipeline"
done

[ $fail = 0 ] && echo "rules_single_source: rules.h ($(echo $names | wc -w) functions) is the one source of both engines' rules"
exit $fail
