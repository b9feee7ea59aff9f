/* rx_memory.h - which rx buffer memory each engine can read: the one rule,
 * used at config load (src/core/config.c, the memory_regions the rx queues
 * name) and at vfgx_pipeline_create (every port's pools, whichever backend
 * made them), so that a source the engine cannot read is refused in one
 * line before it runs instead of crashing a worker or failing mid-run. */
#ifndef VFGX_RX_MEMORY_H
#define VFGX_RX_MEMORY_H

#include <stdint.h>

#include <vfgx/config.h>
#include <vfgx/mem.h>

/* The gpu engine copies packets in host memory the GPU cannot read into
 * pinned bounce slots of this many bytes each (gpu_runner.c). */
#define VFGX_GPU_BOUNCE_SLOT 2048

/* 0 when `device`'s engine can read rx buffers of `kind` holding up to
 * buf_size bytes (auto: either engine may, nothing refused); else -EINVAL
 * with one line on ctx: "<who>: ..." and the fix. */
int vfgx_rx_memory_check(vfgx_ctx *ctx, enum vfgx_device_choice device,
			 const char *who, enum vfgx_mem_kind kind, uint32_t buf_size);

#endif
