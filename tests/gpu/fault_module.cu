/* fault_module.cu - a per-chunk kernel that writes through a bad pointer:
 * `vfgx run` must end with one line naming the fault, not hang
 * (tests/gpu/test-gpu-user.sh). */
#include <vfgx/user.h>

extern "C" __global__ void vfgx_chunk_kernel(struct vfgx_chunk_kargs a)
{
	volatile uint64_t *bad = (volatile uint64_t *)(uintptr_t)(0x10 + a.index);

	*bad = a.first;
}
