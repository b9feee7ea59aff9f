/* consumer.c - the smallest application of chunks: a pipeline over the
 * loopback generator (with loss and reordering) writes 4 streams into
 * chunks of 256 packets in host memory; this thread takes every ready
 * chunk, checks every byte of every slot that arrived against the
 * generator's pattern and every missing slot's length, gives it back, and
 * exits 0 only when nothing was wrong.
 *
 *     consumer [cpu|gpu|auto]     (device: the engine that places records)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <vfgx/vfgx.h>

static const char yaml[] =
	"interfaces:\n"
	"  - backend: loopback\n"
	"    loopback: { packets: 400000, flows: 4, loss: 0.001, reorder: 0.01 }\n"
	"pipeline:\n"
	"  chunks: { payload_bytes: 512, packets: 256, streams: 4, in_flight: 8 }\n";

int main(int argc, char **argv)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	unsigned long long chunks = 0, slots = 0, bad = 0;
	struct vfgx_config *cfg = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	struct vfgx_chunk *c;
	vfgx_ctx *ctx;
	int ret;

	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_config_load_string(ctx, yaml, sizeof(yaml) - 1, "consumer", &cfg) ||
	    (argc > 1 && strcmp(argv[1], "auto") &&
	     (cfg->pipeline.device = strcmp(argv[1], "gpu") ? VFGX_DEVICE_CPU : VFGX_DEVICE_GPU, 0)) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl) ||
	    vfgx_pipeline_start(pl)) {
		fprintf(stderr, "consumer: %s\n", vfgx_last_error(ctx));
		ret = 1;
		goto out;
	}
	while ((ret = vfgx_chunk_get(pl, 1000, &c)) != -ENODATA) {
		if (ret == -ETIMEDOUT)
			continue;
		if (ret) {
			fprintf(stderr, "consumer: vfgx_chunk_get: %s\n", strerror(-ret));
			break;
		}
		chunks++;
		for (uint32_t i = 0; i < c->packets; i++) {
			const uint8_t *p = (const uint8_t *)c->data + (size_t)i * c->payload_bytes;

			if (!(c->present[i / 64] >> (i % 64) & 1)) {
				bad += c->lens[i] != 0;
				continue;
			}
			slots++;
			for (uint32_t j = 0; j < c->lens[i]; j++)
				bad += p[j] != vfgx_pattern_byte(c->stream, c->first + i, j);
		}
		vfgx_chunk_put(pl, c->stream, c->index);
	}
	vfgx_pipeline_stop(pl);
	vfgx_chunk_stats(pl, &cs);
	printf("%s engine: %llu chunks (%llu complete), %llu slots checked, %llu missing, %llu late, %llu bad\n",
	       vfgx_pipeline_engine(pl), chunks, (unsigned long long)cs.complete,
	       slots, (unsigned long long)cs.missing, (unsigned long long)cs.late, bad);
	ret = bad || ret != -ENODATA || slots != cs.placed || !chunks;
out:
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	return ret;
}
