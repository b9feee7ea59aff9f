/* engine_gpu.c - the gpu engine of vfgx_pipeline: the GPU runner
 * (gpu_runner.c) behind the engine table.  It runs no host user stage and
 * takes no per-queue snapshots (its rx threads own the queues). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "gpu_runner.h"

struct gpu_engine {
	vfgx_ctx *ctx;
	vfgx_gpu_pipeline *gpl;
	char desc[448];
};

static void gpu_destroy(void *e)
{
	struct gpu_engine *ge = e;

	vfgx_gpu_pipeline_destroy(ge->gpl);
	free(ge);
}

static int gpu_create(vfgx_ctx *ctx, const struct vfgx_pipeline_config *conf,
		      vfgx_port *const *ports, uint16_t nb_ports,
		      struct vfgx_chunkset *chunks, void **out)
{
	struct gpu_engine *ge = calloc(1, sizeof(*ge));
	int ret;

	if (!ge)
		return -ENOMEM;
	ge->ctx = ctx;
	ret = vfgx_gpu_pipeline_create(ctx, conf, ports, nb_ports, chunks, &ge->gpl);
	if (ret) {
		free(ge);
		return ret;
	}
	snprintf(ge->desc, sizeof(ge->desc), "gpu: %s",
		 vfgx_gpu_pipeline_describe(ge->gpl));
	vfgx_info(ctx, "GPU pipeline: %s", vfgx_gpu_pipeline_describe(ge->gpl));
	*out = ge;
	return 0;
}

static int gpu_set_user_stage(void *e, vfgx_user_stage_fn fn, void *user)
{
	struct gpu_engine *ge = e;

	(void)fn;
	(void)user;
	return vfgx_set_error(ge->ctx, -ENOTSUP,
			      "pipeline: the gpu engine runs no host user stage (use pipeline.gpu.user_stage, or pipeline.device: cpu)");
}

static void gpu_want_queue_snaps(void *e)
{
	(void)e;
}

static int gpu_start(void *e)
{
	return vfgx_gpu_pipeline_start(((struct gpu_engine *)e)->gpl);
}

static bool gpu_done(void *e)
{
	return vfgx_gpu_pipeline_done(((struct gpu_engine *)e)->gpl);
}

static void gpu_stop(void *e)
{
	vfgx_gpu_pipeline_stop(((struct gpu_engine *)e)->gpl);
}

static void gpu_stats(void *e, struct vfgx_pipeline_stats *st)
{
	uint64_t order = 0;

	vfgx_gpu_pipeline_stats(((struct gpu_engine *)e)->gpl, st, &order);
	st->order_errors = order;
}

static int gpu_error(void *e)
{
	return vfgx_gpu_pipeline_error(((struct gpu_engine *)e)->gpl);
}

static int gpu_queue_snap(void *e, uint32_t index, struct vfgx_queue_snap *s)
{
	(void)e;
	(void)index;
	(void)s;
	return -ENOTSUP;
}

static int gpu_item_stamps(void *e, char *buf, size_t len)
{
	return vfgx_gpu_pipeline_item_stamps(((struct gpu_engine *)e)->gpl, buf, len);
}

static const char *gpu_describe(void *e)
{
	return ((struct gpu_engine *)e)->desc;
}

const struct vfgx_engine_ops vfgx_engine_gpu = {
	.name = "gpu",
	.create = gpu_create,
	.set_user_stage = gpu_set_user_stage,
	.want_queue_snaps = gpu_want_queue_snaps,
	.start = gpu_start,
	.done = gpu_done,
	.stop = gpu_stop,
	.stats = gpu_stats,
	.error = gpu_error,
	.queue_snap = gpu_queue_snap,
	.describe = gpu_describe,
	.item_stamps = gpu_item_stamps,
	.destroy = gpu_destroy,
};
