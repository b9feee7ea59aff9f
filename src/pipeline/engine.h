/* engine.h - the engine table behind vfgx_pipeline (pipeline.c): each
 * engine (engine_cpu.c, engine_gpu.c) fills one ops table; pipeline.c
 * resolves pipeline.device, dispatches, and runs the observers. */
#ifndef VFGX_ENGINE_H
#define VFGX_ENGINE_H

#include <vfgx/pipeline.h>

struct vfgx_chunkset;

struct vfgx_engine_ops {
	const char *name; /* "cpu", "gpu" */
	/* chunks: place records into these chunk rings instead of reorder
	 * windows (chunkset.h), or NULL */
	int (*create)(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
		      vfgx_port *const *ports, uint16_t nb_ports,
		      struct vfgx_chunkset *chunks, void **out);
	/* -ENOTSUP (with a detail) where the engine has no host user stage */
	int (*set_user_stage)(void *e, vfgx_user_stage_fn fn, void *user);
	/* observers are attached: take queue snapshots from now on */
	void (*want_queue_snaps)(void *e);
	int (*start)(void *e);
	bool (*done)(void *e);
	void (*stop)(void *e);
	void (*stats)(void *e, struct vfgx_pipeline_stats *st);
	int (*error)(void *e);
	/* -ENOTSUP where the engine takes none */
	int (*queue_snap)(void *e, uint32_t index, struct vfgx_queue_snap *s);
	const char *(*describe)(void *e);
	/* -Dgpu_item_stamps: where the items' time went (one line), or
	 * NULL where the engine has no items */
	int (*item_stamps)(void *e, char *buf, size_t len);
	void (*destroy)(void *e);
};

extern const struct vfgx_engine_ops vfgx_engine_cpu;
extern const struct vfgx_engine_ops vfgx_engine_gpu;

/* Stats and pool occupancy of one rx queue, on the thread that polls it. */
void vfgx_queue_snap_take(vfgx_port *port, uint16_t q, struct vfgx_queue_snap *s);

#endif
