/* gpu_runner.h - the GPU runner (gpu_runner.c), internal: the gpu engine
 * (engine_gpu.c) is its one user; applications reach it through
 * vfgx_pipeline with pipeline.device gpu. */
#ifndef VFGX_GPU_RUNNER_H
#define VFGX_GPU_RUNNER_H

#include <vfgx/bench.h> /* what vfgx-bench may call: exported */
#include <vfgx/gpu.h>

/* vfgx_gpu_pipeline_create, _start, _done, _stop, _stats, _error,
 * _destroy, _window, _lat_pct and _feeder are declared once, in
 * vfgx/bench.h (exported for vfgx-bench); what the engine alone calls: */
const char *vfgx_gpu_pipeline_describe(const vfgx_gpu_pipeline *gpl);
/* Ends the persistent kernel (once; the engine's stop, after its
 * dispatcher has ended): until then CUDA frees and module loads in the
 * process wait for it (src/mem/gpu_resident.c).  Internal, not exported. */
void gpu_proc_quit(vfgx_gpu_proc *gp);

#endif
