/* gpu_runner.h - the GPU runner (gpu_runner.c), internal: the gpu engine
 * (engine_gpu.c) is its one user; applications reach it through
 * vfgx_pipeline with pipeline.device gpu. */
#ifndef VFGX_GPU_RUNNER_H
#define VFGX_GPU_RUNNER_H

#include <vfgx/bench.h> /* what vfgx-bench may call: exported */
#include <vfgx/gpu.h>

typedef struct vfgx_gpu_pipeline vfgx_gpu_pipeline;

struct vfgx_chunkset;

/* chunks: the GPU places records into them (gpu_chunks.cuh), or NULL. */
int vfgx_gpu_pipeline_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
			     vfgx_port *const *ports, uint16_t nb_ports,
			     struct vfgx_chunkset *chunks, vfgx_gpu_pipeline **out);
int vfgx_gpu_pipeline_start(vfgx_gpu_pipeline *gpl);
bool vfgx_gpu_pipeline_done(vfgx_gpu_pipeline *gpl);
void vfgx_gpu_pipeline_stop(vfgx_gpu_pipeline *gpl);
void vfgx_gpu_pipeline_stats(vfgx_gpu_pipeline *gpl, struct vfgx_pipeline_stats *st,
			     uint64_t *order_errors);
int vfgx_gpu_pipeline_error(vfgx_gpu_pipeline *gpl);
const char *vfgx_gpu_pipeline_describe(const vfgx_gpu_pipeline *gpl);
void vfgx_gpu_pipeline_destroy(vfgx_gpu_pipeline *gpl);
/* Ends the persistent kernel (once; the engine's stop, after its
 * dispatcher has ended): until then CUDA frees and module loads in the
 * process wait for it (src/mem/gpu_resident.c).  Internal, not exported. */
void gpu_proc_quit(vfgx_gpu_proc *gp);

#endif
