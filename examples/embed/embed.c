/* embed.c - a complete libvfgx program, no YAML: a context, a memory region
 * carved into a pool, a loopback port receiving into it, a pipeline that
 * hands every in-order record to our consume(), then teardown in reverse.
 * Build: cc embed.c $(pkg-config --cflags --libs vfgx).  Run: ./embed [cpu|gpu|auto] */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <vfgx/vfgx.h>

#define PACKETS 200000

/* Runs on the pipeline's worker thread, in sequence order per stream. */
static int consume(void *user, uint32_t stream, uint64_t seq,
		   const uint8_t *payload, uint32_t len)
{
	uint64_t *bytes = user; /* one worker: no sharing */

	(void)stream, (void)seq, (void)payload;
	*bytes += len;
	return 0; /* keep it; non-zero counts a VFGX_DROP_USER drop */
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "cpu";
	vfgx_ctx *ctx;
	vfgx_region *region = NULL;
	vfgx_pool *pool = NULL;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;
	struct vfgx_loopback_opts lo;
	struct vfgx_pipeline_config pc;
	struct vfgx_pipeline_stats st;
	uint64_t bytes = 0;
	int ret, rc = 1;

	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_loopback_opts_default(&lo);
	lo.packets = PACKETS;
	lo.reorder = 0.01; /* the pipeline puts them back in order */
	struct vfgx_port_conf conf = {
		.argsz = sizeof(conf), .name = "gen0", .backend = "loopback",
		.nb_rx_queues = 1, .burst = 256, .rx_pools = &pool, .backend_opts = &lo.hdr,
	};
	vfgx_pipeline_config_default(&pc);
	pc.device = !strcmp(dev, "gpu") ? VFGX_DEVICE_GPU :
		    !strcmp(dev, "auto") ? VFGX_DEVICE_AUTO : VFGX_DEVICE_CPU;
	pc.verify_payload = true;
	/* pinned host memory lets the GPU read packets where they land */
	enum vfgx_mem_kind kind = pc.device == VFGX_DEVICE_CPU ? VFGX_MEM_HOST : VFGX_MEM_PINNED;

	if ((ret = vfgx_region_create(ctx, kind, 4096 * 2048, 0, true, &region)) ||
	    (ret = vfgx_pool_create(ctx, region, 2048, 4096, &pool)) ||
	    (ret = vfgx_port_open(ctx, &conf, &port)) ||
	    (ret = vfgx_pipeline_create(ctx, &pc, &port, 1, &pl)))
		goto out;
	/* the gpu engine runs no host callback: it refuses, and we go on */
	if (vfgx_pipeline_set_user_stage(pl, consume, &bytes))
		printf("%s\n", vfgx_last_error(ctx));
	if ((ret = vfgx_pipeline_start(pl)))
		goto out;
	while (!vfgx_pipeline_done(pl))
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_stats(pl, &st);
	printf("%s engine: delivered %" PRIu64 " of %d in order (%" PRIu64
	       " out of order, %" PRIu64 " payload errors), consumed %" PRIu64 " bytes\n",
	       vfgx_pipeline_engine(pl), st.delivered, PACKETS, st.order_errors,
	       st.verify_errors, bytes);
	rc = st.delivered == PACKETS && !st.order_errors && !st.verify_errors &&
	     !vfgx_pipeline_error(pl) ? 0 : 1;
out:
	if (ret)
		fprintf(stderr, "embed: %s\n", vfgx_last_error(ctx));
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_pool_destroy(pool);
	vfgx_region_destroy(region);
	vfgx_ctx_destroy(ctx);
	return rc;
}
