/* flow_sum_gpu.cu - the GPU half of the flow_sum example: a CUDA module
 * `vfgx run` loads at run time (pipeline.user.gpu_module), whose per-chunk
 * kernel adds each present slot's payload bytes into a per-stream sum in
 * its state (pipeline.user.gpu_state_bytes: 8 bytes per stream).  The
 * state file written after the run holds the sums, little endian, so they
 * can be compared with what the CPU module summed from the same chunks. */
#include <stdint.h>

#include <vfgx/user.h>

extern "C" __global__ void vfgx_chunk_kernel(struct vfgx_chunk_kargs a)
{
	unsigned long long *sums = (unsigned long long *)a.state;
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long s = 0;

	if (i >= a.packets || (a.stream + 1) * 8 > a.state_bytes ||
	    !(a.present[i / 64] >> (i % 64) & 1))
		return;
	for (uint32_t j = 0; j < a.lens[i]; j++)
		s += a.data[(size_t)i * a.payload_bytes + j];
	atomicAdd(&sums[a.stream], s);
}
