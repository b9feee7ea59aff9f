#!/bin/sh
# mpirun.sh NP PROGRAM ARGS... - run PROGRAM on NP ranks of this host with
# Debian's Open MPI, as the tests need it: as root in CI containers, more
# ranks than cores (the host has 2), shared memory between ranks without
# cross-memory attach (ptrace is restricted in containers).
np=$1
shift
exec mpirun --allow-run-as-root --oversubscribe -np "$np" \
	--mca btl self,vader --mca btl_vader_single_copy_mechanism none \
	--bind-to none "$@"
