/* rx_memory.h - which rx memory each engine can read: the one rule, used
 * at config load (src/core/config.c: every rx queue of every interface,
 * its memory_region or the backend's own buffers, with the largest frame
 * its parsed options allow) and at vfgx_pipeline_create (the ports a
 * program opened itself, for the engine chosen), so that a source the
 * engine cannot read is refused in one line before it runs instead of
 * crashing a worker or failing mid-run. */
#ifndef VFGX_RX_MEMORY_H
#define VFGX_RX_MEMORY_H

#include <stdint.h>

#include <vfgx/config.h>
#include <vfgx/mem.h>

/* The gpu engine copies packets in host memory the GPU cannot read into
 * pinned bounce slots of this many bytes each (gpu_runner.c). */
#define VFGX_GPU_BOUNCE_SLOT 2048

/* What an engine reads from one rx queue. */
struct vfgx_rx_memory {
	enum vfgx_mem_kind kind; /* the pool's region; host: the backend's own */
	uint32_t buf_size;       /* the pool's buffers; 0: the backend's own */
	uint32_t frame_max;      /* the largest frame the queue hands out */
	const char *key;         /* the option that bounds frame_max, or NULL */
};

/* 0 when `device`'s engine can read the queue m describes (auto: either
 * engine may, nothing refused); else -EINVAL with one line on ctx:
 * "<who>: ..." and the fix.  The only place either refusal is made. */
int vfgx_rx_memory_check(vfgx_ctx *ctx, enum vfgx_device_choice device,
			 const char *who, const struct vfgx_rx_memory *m);

#endif
