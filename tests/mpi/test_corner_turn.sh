#!/bin/bash
# test_corner_turn.sh CORNER_TURN MPIRUN_SH - examples/corner_turn under
# mpirun on this host (--transport mpi: rings in MPI windows, osc sm):
# with 4 and 2 ranks every slice of every chunk arrives at its rank, in
# order, every byte checked; a byte damaged before the write is caught on
# every rank that receives one.
set -u
ct=$1
mpirun_sh=$2
fail=0
die() { echo "FAIL: $*"; fail=1; }

for np in 4 2; do
	out=$(timeout 60 "$mpirun_sh" "$np" "$ct" --transport mpi --chunks 32 2>&1)
	rc=$?
	want=$((32 * np * np))
	[ $rc -eq 0 ] || die "np $np: exit $rc"
	grep -q "^corner_turn: $np ranks, MPI window rings, 32 chunks of $((64 * np)) packets x 1024 bytes per rank, $want slices checked (want $want), 0 errors: ok$" <<<"$out" ||
		die "np $np: $out"
done
out=$(timeout 60 "$mpirun_sh" 4 "$ct" --transport mpi --chunks 8 --flip 2>&1)
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
	die "damaged slices: exit $rc"
fi
grep -q "^corner_turn: 4 ranks, .* 4 errors: FAILED$" <<<"$out" || die "damaged slices not caught: $out"
[ $fail = 0 ] && echo "ok: corner turn over rings between 2 and 4 ranks, every byte checked; damage caught"
exit $fail
