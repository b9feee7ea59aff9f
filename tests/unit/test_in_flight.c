/* test_in_flight.c - pipeline.max_in_flight_bytes on the cpu engine over a
 * real loopback port (#40): the packets a worker holds between rx and
 * release, read from the rx pool's own counters while the worker is in
 * its user stage, stay within the budget (and exceed it without the key,
 * so the check can fail); every packet is still delivered; a budget below
 * one buffer a worker is refused at create with one line naming the key
 * and the least that fits; the key's range is checked at load. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

#include "unit_ctx.h"

/* one queue, one worker; reorder off, so the user stage runs while the
 * worker holds its burst (no copy into a window first) */
#define ONE_QUEUE "{ id: 0, memory_region: rx, batch_size: 256 }"
#define TWO_QUEUES "{ id: 0, memory_region: rx }, { id: 1, memory_region: rx }"

static const char yaml_fmt[] =
	"memory_regions:\n"
	"  - { name: rx, kind: host, buf_size: 2048, num_bufs: 512 }\n"
	"interfaces:\n"
	"  - name: lo0\n"
	"    backend: loopback\n"
	"    rx: { queues: [ %s ] }\n"
	"    loopback: { packets: 20000, flows: 1 }\n"
	"pipeline:\n"
	"  device: cpu\n"
	"  workers: %u\n"
	"  reorder: { enabled: false }\n"
	"%s";

struct held {
	vfgx_pool *pool;
	uint32_t max_held; /* buffers out of the pool, most seen */
	uint64_t seen;
};

/* On the worker's thread, inside its burst: the pool's count of buffers
 * handed out and not yet back is what the pipeline holds (the loopback
 * port takes a buffer per packet at rx and gets it back at release). */
static int watch_pool(void *user, uint32_t stream, uint64_t seq,
		      const uint8_t *payload, uint32_t len)
{
	struct held *h = user;
	struct vfgx_pool_stats ps;

	(void)stream;
	(void)seq;
	(void)payload;
	(void)len;
	vfgx_pool_stats(h->pool, &ps);
	if (ps.num_bufs - ps.available > h->max_held)
		h->max_held = ps.num_bufs - ps.available;
	h->seen++;
	return 0;
}

/* Run the config with pipeline.max_in_flight_bytes `budget` (0: the key
 * absent); the most buffers held into *h. */
static void run_with(uint64_t budget, struct held *h)
{
	char y[2048], key[96] = "";
	struct vfgx_config *cfg = NULL;
	struct vfgx_pipeline_stats st;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;

	if (budget)
		snprintf(key, sizeof(key), "  max_in_flight_bytes: %llu\n",
			 (unsigned long long)budget);
	snprintf(y, sizeof(y), yaml_fmt, ONE_QUEUE, 1u, key);
	memset(h, 0, sizeof(*h));
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
	assert_true(cfg->pipeline.max_in_flight_bytes == budget);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl), 0);
	if (budget)
		assert_non_null(strstr(vfgx_pipeline_describe(pl), "B in flight"));
	h->pool = vfgx_port_rx_pool(port, 0);
	assert_non_null(h->pool);
	assert_int_equal(vfgx_pipeline_set_user_stage(pl, watch_pool, h), 0);
	assert_int_equal(vfgx_pipeline_start(pl), 0);
	while (!vfgx_pipeline_done(pl))
		;
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_stats(pl, &st);
	/* the bound loses nothing: every packet delivered */
	assert_int_equal(st.packets, 20000);
	assert_int_equal(st.delivered, 20000);
	assert_int_equal(h->seen, 20000);
	assert_int_equal(vfgx_pipeline_error(pl), 0);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_budget_bounds_buffers_held(void **state)
{
	struct held without, with4, with1;

	(void)state;
	run_with(0, &without);
	run_with(4 * 2048, &with4);
	run_with(2048 + 100, &with1);
	printf("buffers held at most: no key %u, 8192 B %u, 2148 B %u\n",
	       without.max_held, with4.max_held, with1.max_held);
	/* without the key the worker holds whole bursts of the queue's 256 */
	assert_true(without.max_held > 4);
	assert_true(with4.max_held >= 1 && with4.max_held <= 4);
	assert_int_equal(with1.max_held, 1);
}

/* A budget below one buffer a worker: refused at create, one line naming
 * the key, the buffer and the least budget that fits. */
static void test_budget_below_one_buffer(void **state)
{
	static const struct {
		unsigned workers;
		uint64_t budget;
		int want;
		const char *least;
	} cases[] = {
		{ 1, 1000, -EINVAL, "at least 2048" },
		{ 1, 2048, 0, NULL },
		{ 2, 4095, -EINVAL, "at least 4096" },
		{ 2, 4096, 0, NULL },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char y[2048], key[96];
		struct vfgx_config *cfg = NULL;
		vfgx_port *port = NULL;
		vfgx_pipeline *pl = NULL;
		const char *msg;

		snprintf(key, sizeof(key), "  max_in_flight_bytes: %llu\n",
			 (unsigned long long)cases[i].budget);
		/* a worker per queue */
		snprintf(y, sizeof(y), yaml_fmt, cases[i].workers > 1 ? TWO_QUEUES : ONE_QUEUE,
			 cases[i].workers, key);
		assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
		assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
		assert_int_equal(vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl),
				 cases[i].want);
		if (cases[i].want) {
			msg = vfgx_last_error(ctx);
			printf("refused: %s\n", msg);
			assert_null(strchr(msg, '\n'));
			assert_non_null(strstr(msg, "pipeline.max_in_flight_bytes"));
			assert_non_null(strstr(msg, cases[i].least));
			assert_null(pl);
		}
		vfgx_pipeline_destroy(pl);
		vfgx_port_close(port);
		vfgx_config_destroy(cfg);
	}
}

/* A program built before the key passes the shorter struct: accepted, the
 * key taken as 0 (no bound), as docs/api.md's argsz rule says. */
static void test_older_argsz(void **state)
{
	char y[2048];
	struct vfgx_config *cfg = NULL;
	struct vfgx_pipeline_config pc;
	vfgx_port *port = NULL;
	vfgx_pipeline *pl = NULL;

	(void)state;
	snprintf(y, sizeof(y), yaml_fmt, ONE_QUEUE, 1u, "");
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	vfgx_pipeline_config_default(&pc);
	pc.device = VFGX_DEVICE_CPU;
	pc.max_in_flight_bytes = 1; /* not part of the older struct: unread */
	pc.argsz = offsetof(struct vfgx_pipeline_config, max_in_flight_bytes);
	assert_int_equal(vfgx_pipeline_create(ctx, &pc, &port, 1, &pl), 0);
	assert_null(strstr(vfgx_pipeline_describe(pl), "in flight"));
	vfgx_pipeline_destroy(pl);
	pc.argsz = sizeof(pc);
	assert_int_equal(vfgx_pipeline_create(ctx, &pc, &port, 1, &pl), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "pipeline.max_in_flight_bytes 1 "));
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_key_range_at_load(void **state)
{
	static const char *const bad[] = { "-1", "lots", "2199023255553" /* 2 TiB + 1 */ };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char y[2048], key[96];
		struct vfgx_config *cfg = NULL;

		snprintf(key, sizeof(key), "  max_in_flight_bytes: %s\n", bad[i]);
		snprintf(y, sizeof(y), yaml_fmt, ONE_QUEUE, 1u, key);
		assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg), -EINVAL);
		assert_non_null(strstr(vfgx_last_error(ctx), "max_in_flight_bytes"));
		assert_null(strchr(vfgx_last_error(ctx), '\n'));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_bounds_buffers_held),
		cmocka_unit_test(test_budget_below_one_buffer),
		cmocka_unit_test(test_older_argsz),
		cmocka_unit_test(test_key_range_at_load),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
