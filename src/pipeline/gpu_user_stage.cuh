/* gpu_user_stage.cuh - the user stage of the GPU pipeline: a __device__
 * function compiled into libvfgx, called for every record the reorder
 * stage delivers (in sequence order per stream), or for every passing
 * packet when reorder is off.
 *
 * Contract: all 32 lanes of one warp call it together with the same
 * arguments (lane = 0..31), so it can split the payload across lanes; the
 * value returned by lane 0 decides: non-zero drops the record
 * (VFGX_DROP_USER).  payload is in GPU memory (the reorder output buffer)
 * or in pinned host memory (reorder off); read it with __ldcg() since
 * another multiprocessor may have written it.  With reorder on, one warp at
 * a time owns a stream; with reorder off, several warps may deliver records
 * of one stream at once, so shared per-stream state needs atomics.
 *
 * To add your own stage, replace the body below (keep the signature),
 * rebuild, and select it with pipeline.gpu.user_stage: flow_sum.
 *
 * Example: per-flow payload sum.  Each lane adds its bytes, the warp
 * reduces with shuffles, lane 0 adds the total to the flow's counter.
 */
#ifndef VFGX_GPU_USER_STAGE_CUH
#define VFGX_GPU_USER_STAGE_CUH

#include <stdint.h>

struct vfgx_gpu_user_ctx {
	unsigned long long *flow_sum; /* one per stream, GPU memory */
	uint32_t nb_flows;
	uint32_t enabled;
};

__device__ __forceinline__ int
vfgx_gpu_user_stage(const struct vfgx_gpu_user_ctx *u, uint32_t stream,
		    uint64_t seq, const uint8_t *payload, uint32_t len,
		    uint32_t lane)
{
	unsigned long long sum = 0;

	(void)seq;
	if (!u->enabled)
		return 0;
	for (uint32_t i = lane; i < len; i += 32)
		sum += __ldcg(payload + i);
	for (int off = 16; off > 0; off >>= 1)
		sum += __shfl_down_sync(0xffffffffu, sum, off);
	if (lane == 0 && stream < u->nb_flows)
		atomicAdd(&u->flow_sum[stream], sum);
	return 0;
}

#endif
