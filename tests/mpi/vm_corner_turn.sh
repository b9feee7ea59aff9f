#!/usr/bin/env bash
# vm_corner_turn.sh CORNER_TURN [NP] - the corner turn over soft-RoCE in
# the QEMU guest: one rxe device on a veth, NP ranks (default 2) whose
# rings' one-sided writes and MPI_Alltoall both go through UCX on rxe0
# (Open MPI's osc ucx and pml ucx; UCX shared-memory transports off, so the
# bytes cross the rxe device).  Run from the host: it boots the guest.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ct=$(realpath "$1")
np=${2:-2}
if [[ ${VFGX_IN_VM:-0} != 1 ]]; then
	exec "$here/../vm/vm-run.sh" -t 900 -- bash "$here/vm_corner_turn.sh" "$ct" "$np"
fi
# the guest boots without a host name, which Open MPI's launcher refuses
echo vfgx-guest >/proc/sys/kernel/hostname
ip link add ct0 type veth peer name ct1 || exit 125
ip addr add 198.18.75.1/24 dev ct0
ip link set ct0 up
ip link set ct1 up
ip link set lo up
rdma link add rxe0 type rxe netdev ct0 || exit 125
export OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_btl=^vader,tcp,openib,uct
# rc for the data, ud for UCX's connection set-up (rc alone has no wire-up,
# tcp cannot be the auxiliary); ud's timeout raised for the emulated guest
export UCX_NET_DEVICES=rxe0:1 UCX_TLS=rc_verbs,ud_verbs,self UCX_WARN_UNUSED_ENV_VARS=n
export UCX_UD_TIMEOUT=600s UCX_RC_TIMEOUT=10s
shift $#
mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
	-x UCX_NET_DEVICES -x UCX_TLS -x UCX_WARN_UNUSED_ENV_VARS -x UCX_UD_TIMEOUT -x UCX_RC_TIMEOUT \
	"$ct" --chunks 8 --bench 20 --ring-bytes 262144
