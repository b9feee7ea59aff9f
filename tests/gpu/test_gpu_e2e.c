/* test_gpu_e2e.c - `vfgx run`'s own path on the GPU (loopback replay port
 * -> GPU runner -> GPU processor -> release) against the CPU runner over
 * the same replay traffic with injected loss, reordering, duplicates and
 * corruption: identical counters, every source count accounted exactly,
 * no out-of-order delivery, for every launch mode, with the replay frames
 * in pinned host memory and in GPU memory (the CPU reads host memory).
 * The replay source is faster than the GPU in per_burst and graph mode:
 * the runner must hold it back (full comm list) and still account for
 * every packet.  Each GPU case runs with the queues polled on the
 * dispatcher's thread (rx_threads 1) and on a thread each (rx_threads 2:
 * items of both lanes interleaved on the comm list).  Frames in GPU
 * memory for the cpu engine are refused at load and at create.  Exits 77
 * with the reason when no GPU is present. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vfgx/gpu.h>
#include <vfgx/vfgx.h>

static int failures;

static const char *const yaml_fmt =
	"memory_regions: [{name: r, kind: %s, buf_size: 512, num_bufs: 8192}]\n"
	"interfaces:\n"
	"  - name: rp\n"
	"    backend: loopback\n"
	"    rx: {queues: [{id: 0, memory_region: r, batch_size: %u},\n"
	"                  {id: 1, memory_region: r, batch_size: %u}]}\n"
	"    loopback: {packets: %u, flows: 6, packet_size: 300, replay: true,\n"
	"               loss: 0.02, reorder: 0.05, reorder_distance: 5,\n"
	"               duplicate: 0.02, corrupt: 0.01, seed: %u}\n"
	"pipeline:\n"
	"  device: %s\n"
	"  workers: 2\n"
	"  filter: {udp_dst_ports: [5000]}\n"
	"  reorder: {enabled: true, window: 256}\n"
	"  verify_payload: %s\n"
	"  gpu: {mode: %s, items: 16, graph_items: 4, rx_threads: %u}\n";

struct outcome {
	struct vfgx_pipeline_stats st;
	struct vfgx_source_report rep;
	uint64_t rx, order;
	int err;
};

static int run_one(vfgx_ctx *ctx, const char *kind, const char *device,
		   const char *mode, bool verify, uint32_t packets, uint32_t batch,
		   uint32_t threads, struct outcome *o)
{
	char y[2048];
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;
	int ret;

	memset(o, 0, sizeof(*o));
	snprintf(y, sizeof(y), yaml_fmt, kind, batch, batch, packets, 3u, device,
		 verify ? "true" : "false", mode, threads);
	if ((ret = vfgx_config_load_string(ctx, y, strlen(y), "e2e.yaml", &cfg)))
		return ret;
	if ((ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port)))
		goto out;
	/* pipeline.device (cpu or gpu) picks the engine */
	ret = vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl);
	if (ret || (ret = vfgx_pipeline_start(pl)))
		goto out;
	while (!vfgx_pipeline_done(pl)) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_stats(pl, &o->st);
	o->order = o->st.order_errors;
	o->err = vfgx_pipeline_error(pl);
	for (uint16_t q = 0; q < 2; q++) {
		struct vfgx_source_report r;
		struct vfgx_queue_stats qs;

		vfgx_port_source_report(port, q, &r);
		vfgx_port_stats(port, q, &qs);
		o->rx += qs.rx_packets;
		o->rep.generated += r.generated;
		o->rep.lost += r.lost;
		o->rep.duplicated += r.duplicated;
		o->rep.corrupted += r.corrupted;
		o->rep.reordered += r.reordered;
	}
out:
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	return ret;
}

/* Replay frames in GPU memory and the cpu engine (its workers segfaulted
 * reading them): refused at config load, and by vfgx_pipeline_create for
 * a program that opens the port itself and asks for the cpu engine, one
 * line each, before anything runs. */
static void gpu_frames_cpu_engine_refused(vfgx_ctx *ctx)
{
	char y[2048];
	struct vfgx_config *cfg = NULL;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;
	int ret;

	snprintf(y, sizeof(y), yaml_fmt, "gpu", 64u, 64u, 1000u, 3u, "cpu", "false",
		 "persistent", 1u);
	ret = vfgx_config_load_string(ctx, y, strlen(y), "e2e.yaml", &cfg);
	if (ret != -EINVAL || cfg ||
	    !strstr(vfgx_last_error(ctx), "e2e.yaml: interface rp rx queue 0: memory_region r: GPU memory, which the cpu engine cannot read")) {
		printf("FAIL gpu frames, device cpu, at load: %d: %s\n", ret, vfgx_last_error(ctx));
		failures++;
	}
	vfgx_config_destroy(cfg);
	cfg = NULL;
	snprintf(y, sizeof(y), yaml_fmt, "gpu", 64u, 64u, 1000u, 3u, "gpu", "false",
		 "persistent", 1u);
	if (vfgx_config_load_string(ctx, y, strlen(y), "e2e.yaml", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port)) {
		printf("FAIL gpu frames: open: %s\n", vfgx_last_error(ctx));
		failures++;
		goto out;
	}
	cfg->pipeline.device = VFGX_DEVICE_CPU;
	ret = vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl);
	if (ret != -EINVAL || pl ||
	    !strstr(vfgx_last_error(ctx), "rp rx queue 0: GPU memory, which the cpu engine cannot read") ||
	    strchr(vfgx_last_error(ctx), '\n')) {
		printf("FAIL gpu frames, cpu engine, at create: %d: %s\n", ret, vfgx_last_error(ctx));
		failures++;
	} else {
		printf("ok   gpu frames refused by the cpu engine: %s\n", vfgx_last_error(ctx));
	}
out:
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

#define CHECK(c, ...)                                                          \
	do {                                                                   \
		if (!(c)) {                                                    \
			printf("FAIL %s: ", what);                             \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			failures++;                                            \
			return;                                                \
		}                                                              \
	} while (0)

static void compare(const char *what, const struct outcome *c, const struct outcome *g)
{
	const struct vfgx_source_report *r = &g->rep;

	CHECK(!g->err, "run error %d", g->err);
	CHECK(r->lost && r->duplicated && r->corrupted && r->reordered,
	      "replay injected no faults");
	CHECK(r->generated == c->rep.generated && r->lost == c->rep.lost &&
		      r->duplicated == c->rep.duplicated && r->corrupted == c->rep.corrupted,
	      "source reports differ");
	CHECK(g->rx == r->generated - r->lost + r->duplicated,
	      "rx %" PRIu64 ", source sent %" PRIu64, g->rx, r->generated - r->lost + r->duplicated);
	CHECK(g->st.packets == g->rx, "processed %" PRIu64 " of %" PRIu64 " received",
	      g->st.packets, g->rx);
	CHECK(g->st.delivered == r->generated - r->lost - r->corrupted,
	      "delivered %" PRIu64 ", expected %" PRIu64, g->st.delivered,
	      r->generated - r->lost - r->corrupted);
	CHECK(g->st.drops[VFGX_DROP_BAD_UDP_CSUM] == r->corrupted, "checksum drops");
	CHECK(g->st.drops[VFGX_DROP_DUPLICATE] + g->st.drops[VFGX_DROP_LATE] == r->duplicated,
	      "duplicate/late drops");
	CHECK(g->order == 0, "%" PRIu64 " out-of-order deliveries", g->order);
	CHECK(g->st.packets == c->st.packets && g->st.bytes == c->st.bytes &&
		      g->st.passed == c->st.passed && g->st.delivered == c->st.delivered &&
		      g->st.delivered_bytes == c->st.delivered_bytes && g->st.gaps == c->st.gaps &&
		      g->st.verify_errors == c->st.verify_errors && g->st.last_seen == c->st.last_seen,
	      "counters differ from the CPU's (gpu delivered %" PRIu64 " gaps %" PRIu64
	      ", cpu %" PRIu64 " %" PRIu64 ")",
	      g->st.delivered, g->st.gaps, c->st.delivered, c->st.gaps);
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		CHECK(g->st.drops[i] == c->st.drops[i], "drop %s: gpu %" PRIu64 " cpu %" PRIu64,
		      vfgx_drop_reason_name((enum vfgx_drop_reason)i), g->st.drops[i],
		      c->st.drops[i]);
	printf("ok   %s: %" PRIu64 " packets, %" PRIu64 " delivered, %" PRIu64
	       " lost / %" PRIu64 " duplicated / %" PRIu64 " corrupted / %" PRIu64
	       " reordered accounted\n",
	       what, g->st.packets, g->st.delivered, r->lost, r->duplicated, r->corrupted,
	       r->reordered);
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "persistent", "per_burst", "graph" };
	static const char *const kinds[] = { "pinned", "gpu" };
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	uint32_t packets = quick ? 20000 : 200000;
	char desc[256];
	vfgx_ctx *ctx;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (vfgx_ctx_create(&ctx))
		return 1;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	if (vfgx_gpu_probe(ctx, 0, desc, sizeof(desc))) {
		printf("SKIP: no GPU: %s\n", vfgx_last_error(ctx));
		vfgx_ctx_destroy(ctx);
		return 77;
	}
	printf("%s\n", desc);
	gpu_frames_cpu_engine_refused(ctx);
	for (int v = 0; v < 2; v++) {
		struct outcome cpu;

		if (run_one(ctx, "host", "cpu", "persistent", v, packets, 64, 1, &cpu)) {
			printf("FAIL cpu run: %s\n", vfgx_last_error(ctx));
			return 1;
		}
		for (int m = 0; m < 3; m++)
			for (int k = 0; k < 4; k++) {
				uint32_t threads = k / 2 + 1;
				struct outcome g;
				char what[128];

				snprintf(what, sizeof(what), "%s/%s/verify %s/rx_threads %u",
					 modes[m], kinds[k % 2], v ? "on" : "off", threads);
				if (run_one(ctx, kinds[k % 2], "gpu", modes[m], v, packets,
					    k % 2 ? 256 : 32, threads, &g)) {
					printf("FAIL %s: %s\n", what, vfgx_last_error(ctx));
					failures++;
					continue;
				}
				compare(what, &cpu, &g);
			}
	}
	vfgx_ctx_destroy(ctx);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
