/* test_loopback.c - the loopback port end to end through the processor:
 * clean streams, injected faults accounted exactly, tx looped back,
 * malformed frames counted, pool exhaustion as backpressure, each queue's
 * own batch_size, the threaded runner; replay mode: laps counted and
 * ordered exactly, frames handed out again only after release, sequences
 * and checksums advanced per lap, by the port's thread or (inline, as
 * vfgx send has it) by rx as it hands frames out. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/stages.h>
#include <vfgx/vfgx.h>

#include "port/loopback_replay.h"

#include "unit_ctx.h"

/* Drain every queue of port into proc until the source says done. */
static void drain(vfgx_port *port, vfgx_proc *proc)
{
	struct vfgx_pkt pk[256];
	bool done = false;

	for (int guard = 0; !done && guard < 10000000; guard++) {
		done = true;
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(port); q++) {
			int n = vfgx_port_rx_burst(port, q, pk, 256);

			assert_true(n >= 0);
			if (n) {
				vfgx_proc_burst(proc, pk, (uint32_t)n);
				vfgx_port_release(port, q, pk, (uint16_t)n);
			}
			if (n || !vfgx_port_rx_done(port, q))
				done = false;
		}
	}
	assert_true(done);
	vfgx_proc_flush(proc);
}

static void run_cfg(const char *yaml, struct vfgx_pipeline_stats *st,
		    struct vfgx_source_report *rep)
{
	struct vfgx_config *cfg = cfg_of(yaml);
	vfgx_port *port;
	vfgx_proc *proc;

	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_proc_create(ctx, &cfg->pipeline, &proc), 0);
	drain(port, proc);
	vfgx_proc_stats(proc, st);
	memset(rep, 0, sizeof(*rep));
	for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(port); q++) {
		struct vfgx_source_report r;

		vfgx_port_source_report(port, q, &r);
		assert_true(r.known);
		rep->generated += r.generated;
		rep->lost += r.lost;
		rep->duplicated += r.duplicated;
		rep->corrupted += r.corrupted;
		rep->reordered += r.reordered;
	}
	vfgx_proc_destroy(proc);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_clean_stream(void **state)
{
	struct vfgx_pipeline_stats st;
	struct vfgx_source_report rep;

	(void)state;
	run_cfg("interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0}, {id: 1}, {id: 2}]}\n"
		"    loopback: {packets: 30001, flows: 5, packet_size: 300}\n"
		"pipeline: {verify_payload: true}\n",
		&st, &rep);
	assert_int_equal(rep.generated, 30001);
	assert_int_equal(st.packets, 30001);
	assert_int_equal(st.delivered, 30001);
	assert_int_equal(st.delivered_bytes, 30001ull * (300 - 58));
	assert_int_equal(st.verify_errors, 0);
	assert_int_equal(st.gaps, 0);
	assert_int_equal(st.last_seen, 5);
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		assert_int_equal(st.drops[i], 0);
}

static void test_faults_accounted(void **state)
{
	struct vfgx_pipeline_stats st;
	struct vfgx_source_report rep;

	(void)state;
	run_cfg("interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0}, {id: 1}]}\n"
		"    loopback: {packets: 50000, flows: 4, packet_size: 128, loss: 0.03,\n"
		"               reorder: 0.1, reorder_distance: 7, duplicate: 0.05,\n"
		"               corrupt: 0.02, seed: 42}\n"
		"pipeline: {verify_payload: true, reorder: {window: 64}}\n",
		&st, &rep);
	assert_true(rep.lost > 0 && rep.duplicated > 0 && rep.corrupted > 0 && rep.reordered > 0);
	assert_int_equal(st.packets, rep.generated - rep.lost + rep.duplicated);
	assert_int_equal(st.delivered, rep.generated - rep.lost - rep.corrupted);
	assert_int_equal(st.drops[VFGX_DROP_BAD_UDP_CSUM], rep.corrupted);
	assert_int_equal(st.drops[VFGX_DROP_DUPLICATE] + st.drops[VFGX_DROP_LATE], rep.duplicated);
	assert_true(st.gaps <= rep.lost + rep.corrupted);
	assert_int_equal(st.verify_errors, 0);
}

/* An endless source that loses every packet: each rx returns (none
 * received, the losses counted), and the source is never done. */
static void test_endless_all_lost(void **state)
{
	struct vfgx_config *cfg = cfg_of("interfaces:\n"
					 "  - backend: loopback\n"
					 "    loopback: {packets: 0, loss: 1}\n");
	struct vfgx_source_report r;
	struct vfgx_pkt pk[64];
	vfgx_port *port;

	(void)state;
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vfgx_port_rx_burst(port, 0, pk, 64), 0);
		assert_false(vfgx_port_rx_done(port, 0));
	}
	vfgx_port_source_report(port, 0, &r);
	assert_false(r.known); /* endless: what it injected is not a total */
	assert_true(r.lost >= 3 * 4096);
	assert_int_equal(r.generated, r.lost);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_tx_loops_back_malformed(void **state)
{
	struct vfgx_config *cfg = cfg_of("interfaces:\n"
					 "  - backend: loopback\n"
					 "    loopback: {packets: 0, rate_pps: 1}\n");
	struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .src_port = 9,
				   .dst_port = 5000, .frame_len = 100,
				   .udp_csum = true };
	uint8_t good[128], bad[128];
	struct vfgx_pkt tx[3] = {
		{ .data = good, .len = 100 },
		{ .data = bad, .len = 100 },
		{ .data = good, .len = 20 }, /* truncated */
	};
	struct vfgx_pkt rx[8];
	struct vfgx_pipeline_stats st;
	struct vfgx_queue_stats qs;
	vfgx_port *port;
	vfgx_proc *proc;
	int n;

	(void)state;
	vfgx_pkt_build(good, sizeof(good), &s);
	memcpy(bad, good, 100);
	bad[14] = 0x46; /* IHL 24 > header: checksum no longer matches */
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_proc_create(ctx, &cfg->pipeline, &proc), 0);
	assert_int_equal(vfgx_port_tx_burst(port, 0, tx, 3), 3);
	n = vfgx_port_rx_burst(port, 0, rx, 8);
	assert_true(n >= 3);
	assert_memory_equal(rx[0].data, good, 100);
	assert_int_equal(rx[2].len, 20);
	vfgx_proc_burst(proc, rx, 3);
	vfgx_port_release(port, 0, rx, (uint16_t)n);
	vfgx_proc_stats(proc, &st);
	assert_int_equal(st.passed, 1);
	assert_int_equal(st.drops[VFGX_DROP_BAD_IP_CSUM], 1);
	assert_int_equal(st.drops[VFGX_DROP_TRUNCATED], 1);
	vfgx_port_stats(port, 0, &qs);
	assert_int_equal(qs.tx_packets, 3);
	assert_int_equal(vfgx_port_tx_burst(port, 1, tx, 1), -EINVAL);
	assert_false(vfgx_port_rx_done(port, 0)); /* endless source */
	vfgx_proc_destroy(proc);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

static void test_backpressure(void **state)
{
	struct vfgx_config *cfg = cfg_of("memory_regions: [{name: small, num_bufs: 8}]\n"
					 "interfaces:\n"
					 "  - backend: loopback\n"
					 "    rx: {queues: [{id: 0, memory_region: small}]}\n"
					 "    loopback: {packets: 20, flows: 1}\n");
	struct vfgx_pkt a[32], b[32];
	struct vfgx_queue_stats qs;
	vfgx_port *port;
	int n, m;

	(void)state;
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	n = vfgx_port_rx_burst(port, 0, a, 32);
	assert_int_equal(n, 8);
	/* pool empty: nothing produced, nothing overwritten, refusal counted */
	assert_int_equal(vfgx_port_rx_burst(port, 0, b, 32), 0);
	vfgx_port_stats(port, 0, &qs);
	assert_true(qs.drops[VFGX_DROP_NOBUFS] >= 1);
	for (int i = 0; i < n; i++)
		assert_int_equal(a[i].data[14 + 20 + 8 + 15], i); /* seq low byte intact */
	vfgx_port_release(port, 0, a, (uint16_t)n);
	m = vfgx_port_rx_burst(port, 0, b, 32);
	assert_int_equal(m, 8);
	assert_int_equal(b[0].data[14 + 20 + 8 + 15], 8); /* sequence resumes */
	vfgx_port_release(port, 0, b, (uint16_t)m);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

/* rx.queues[].batch_size is each queue's own rx burst (queue 0's value
 * used to apply to the whole port); tx.queues[].batch_size splits a tx
 * burst into backend calls of that size, all accepted, order kept. */
static void test_batch_size_per_queue(void **state)
{
	static const char *const yaml[2] = {
		"interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0, batch_size: 8}, {id: 1, batch_size: 32}]}\n"
		"    tx: {queues: [{id: 0, batch_size: 2}]}\n"
		"    loopback: {packets: 100000, flows: 2}\n",
		"interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0, batch_size: 32}, {id: 1, batch_size: 8}]}\n"
		"    tx: {queues: [{id: 0, batch_size: 2}]}\n"
		"    loopback: {packets: 100000, flows: 2}\n",
	};
	static const int want[2][2] = { { 8, 32 }, { 32, 8 } };
	struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .src_port = 9,
				   .dst_port = 5000, .frame_len = 100 };
	uint8_t frames[5][128];
	struct vfgx_pkt tx[5], rx[256];
	struct vfgx_queue_stats qs;

	(void)state;
	for (int c = 0; c < 2; c++) {
		struct vfgx_config *cfg = cfg_of(yaml[c]);
		vfgx_port *port;

		assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
		for (int round = 0; round < 3; round++)
			for (uint16_t q = 0; q < 2; q++) {
				int n = vfgx_port_rx_burst(port, q, rx, 256);

				/* the source has plenty: a full burst of the
				 * queue's own size, never more */
				assert_int_equal(n, want[c][q]);
				vfgx_port_release(port, q, rx, (uint16_t)n);
			}
		for (int i = 0; i < 5; i++) {
			s.src_port = (uint16_t)(100 + i);
			vfgx_pkt_build(frames[i], sizeof(frames[i]), &s);
			tx[i] = (struct vfgx_pkt){ .data = frames[i], .len = 100 };
		}
		assert_int_equal(vfgx_port_tx_burst(port, 0, tx, 5), 5);
		vfgx_port_stats(port, 0, &qs);
		assert_int_equal(qs.tx_packets, 5);
		/* looped back first, in order (queue 0 takes 8 or 32) */
		assert_true(vfgx_port_rx_burst(port, 0, rx, 256) >= 5);
		for (int i = 0; i < 5; i++)
			assert_memory_equal(rx[i].data, frames[i], 100);
		vfgx_port_release(port, 0, rx, (uint16_t)want[c][0]);
		vfgx_port_close(port);
		vfgx_config_destroy(cfg);
	}
}

static void test_open_errors(void **state)
{
	struct vfgx_config *cfg;
	vfgx_port *port;

	(void)state;
	/* the section's keys: refused when the config loads */
	assert_int_equal(load_rc("interfaces:\n  - backend: loopback\n    loopback: {bogus: 1}\n"),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "interfaces[0].loopback.bogus: unknown key"));
	cfg = cfg_of("memory_regions: [{name: tiny, buf_size: 128}]\n"
		     "interfaces:\n  - backend: loopback\n    rx: {queues: [{id: 0, memory_region: tiny}]}\n");
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "exceeds queue 0's buffer size"));
	vfgx_config_destroy(cfg);
	struct vfgx_port_conf pc = { .argsz = sizeof(pc), .name = "p", .backend = "warp-drive",
				     .burst = 32 };

	assert_int_equal(vfgx_port_open(ctx, &pc, &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "unknown backend"));
}

static void test_threaded_runner(void **state)
{
	struct vfgx_config *cfg;
	vfgx_port *port;
	vfgx_pipeline *pl;
	struct vfgx_pipeline_stats st;

	(void)state;
	assert_int_equal(vfgx_config_load_default(ctx, &cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	cfg->pipeline.device = VFGX_DEVICE_CPU; /* the worker threads */
	assert_int_equal(vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl), 0);
	assert_int_equal(vfgx_pipeline_start(pl), 0);
	while (!vfgx_pipeline_done(pl))
		;
	vfgx_pipeline_stop(pl);
	vfgx_pipeline_stats(pl, &st);
	assert_int_equal(st.delivered, 1000000);
	assert_int_equal(st.verify_errors, 0);
	assert_int_equal(vfgx_pipeline_error(pl), 0);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

/* Replay: per stream, every delivered sequence of lap L is one of lap 0's
 * plus L * P (the same faults every lap), in increasing order. */
#define RP_MAX 20000
struct rp_log {
	uint32_t stream[RP_MAX];
	uint64_t seq[RP_MAX];
	uint32_t n;
};

static int rp_record(void *user, uint32_t stream, uint64_t seq,
		     const uint8_t *payload, uint32_t len)
{
	struct rp_log *l = user;

	(void)payload;
	(void)len;
	if (l->n < RP_MAX) {
		l->stream[l->n] = stream;
		l->seq[l->n++] = seq;
	}
	return 0;
}

/* Two queues of replayed frames with every fault, 3 laps exactly (the
 * exact and copy tests below); KEYS more loopback keys, each with a comma. */
#define REPLAY_FAULTS_YAML_WITH(KEYS)                                                 \
	"memory_regions: [{name: r, num_bufs: 2048}]\n"                                 \
	"interfaces:\n"                                                                 \
	"  - backend: loopback\n"                                                       \
	"    rx: {queues: [{id: 0, memory_region: r}, {id: 1, memory_region: r}]}\n"    \
	"    loopback: {packets: 9216, flows: 4, packet_size: 200, replay: true," KEYS "\n" \
	"               loss: 0.02, reorder: 0.05, duplicate: 0.03, corrupt: 0.02, seed: 9}\n"
#define REPLAY_FAULTS_YAML REPLAY_FAULTS_YAML_WITH("")

/* test_replay_exact's states */
enum { REPLAY_THREAD, REPLAY_INLINE_CALL, REPLAY_INLINE_KEY };

/* state: the rewriting thread, or the sequences advanced inline, asked by
 * vfgx_loopback_replay_inline or by the key loopback.replay_inline */
static void test_replay_exact(void **state)
{
	int mode = *(int *)*state;
	/* 2 flows per queue, 2048 buffers: P = 768 sequences per flow and
	 * lap; 4 x 768 x 3 packets = exactly 3 laps */
	struct vfgx_config *cfg = cfg_of(
		mode == REPLAY_INLINE_KEY ?
			REPLAY_FAULTS_YAML_WITH(" replay_inline: true,")
			"pipeline: {verify_payload: true, reorder: {window: 64}}\n" :
			REPLAY_FAULTS_YAML
			"pipeline: {verify_payload: true, reorder: {window: 64}}\n");
	static struct rp_log log;
	struct vfgx_source_report rep = { 0 };
	struct vfgx_pipeline_stats st;
	vfgx_port *port;
	vfgx_proc *proc;
	uint64_t last[4], per_lap[3] = { 0 };

	memset(&log, 0, sizeof(log));
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	if (mode == REPLAY_INLINE_CALL)
		assert_int_equal(vfgx_loopback_replay_inline(port), 0);
	assert_int_equal(vfgx_proc_create(ctx, &cfg->pipeline, &proc), 0);
	vfgx_proc_set_user_stage(proc, rp_record, &log);
	drain(port, proc);
	vfgx_proc_stats(proc, &st);
	for (uint16_t q = 0; q < 2; q++) {
		struct vfgx_source_report r;

		vfgx_port_source_report(port, q, &r);
		assert_true(r.known);
		rep.generated += r.generated;
		rep.lost += r.lost;
		rep.duplicated += r.duplicated;
		rep.corrupted += r.corrupted;
		rep.reordered += r.reordered;
	}
	assert_int_equal(rep.generated, 9216);
	assert_true(rep.lost > 0 && rep.duplicated > 0 && rep.corrupted > 0 && rep.reordered > 0);
	assert_int_equal(st.packets, rep.generated - rep.lost + rep.duplicated);
	assert_int_equal(st.delivered, rep.generated - rep.lost - rep.corrupted);
	assert_int_equal(st.drops[VFGX_DROP_BAD_UDP_CSUM], rep.corrupted);
	assert_int_equal(st.drops[VFGX_DROP_DUPLICATE] + st.drops[VFGX_DROP_LATE], rep.duplicated);
	assert_int_equal(st.verify_errors, 0);
	assert_int_equal(log.n, st.delivered);
	/* in order per stream; each lap delivers the same sequences + L * 768 */
	memset(last, 0, sizeof(last));
	for (uint32_t i = 0; i < log.n; i++) {
		uint32_t s = log.stream[i];

		assert_true(s < 4);
		assert_true(log.seq[i] + 1 > last[s]);
		last[s] = log.seq[i] + 1;
		assert_true(log.seq[i] < 3 * 768);
		per_lap[log.seq[i] / 768]++;
	}
	assert_int_equal(per_lap[0], per_lap[1]);
	assert_int_equal(per_lap[1], per_lap[2]);
	for (uint32_t i = 0; i < log.n; i++) {
		bool found = false;

		if (log.seq[i] < 768)
			continue;
		for (uint32_t k = 0; k < log.n && !found; k++)
			found = log.stream[k] == log.stream[i] &&
				log.seq[k] == log.seq[i] % 768;
		assert_true(found);
	}
	vfgx_proc_destroy(proc);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

/* One flow, 512 buffers: P = 256, a lap of 256 frames.  Opens the port
 * (its queue advanced inline when inl), takes the whole lap into a (then
 * nothing more comes until frames are released) and runs it through a
 * processor. */
static void replay_lap(bool inl, struct vfgx_config **cfgp, vfgx_port **port,
		       vfgx_proc **proc, struct vfgx_pkt a[256])
{
	struct vfgx_config *cfg = cfg_of(
		"memory_regions: [{name: r, num_bufs: 512}]\n"
		"interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0, memory_region: r}]}\n"
		"    loopback: {packets: 0, flows: 1, packet_size: 100, replay: true}\n");
	struct vfgx_pkt b[64];
	int n = 0, m;

	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], port), 0);
	if (inl)
		assert_int_equal(vfgx_loopback_replay_inline(*port), 0);
	assert_int_equal(vfgx_proc_create(ctx, &cfg->pipeline, proc), 0);
	while (n < 256 && (m = vfgx_port_rx_burst(*port, 0, a + n, (uint16_t)(256 - n))) > 0)
		n += m;
	assert_int_equal(n, 256);
	assert_int_equal(vfgx_port_rx_burst(*port, 0, b, 64), 0);
	vfgx_proc_burst(*proc, a, 256);
	*cfgp = cfg;
}

/* The end of a replay_lap test: the lap's frames from a[from] on and the
 * m handed out again in b go back, then everything is closed. */
static void replay_end(struct vfgx_config *cfg, vfgx_port *port, vfgx_proc *proc,
		       struct vfgx_pkt a[256], uint16_t from, struct vfgx_pkt *b, int m)
{
	vfgx_port_release(port, 0, a + from, (uint16_t)(256 - from));
	vfgx_port_release(port, 0, b, (uint16_t)m);
	vfgx_proc_destroy(proc);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

/* b[0 .. m) are a[0 .. m) handed out again, each sequence one lap (256)
 * on; run through proc, which has then seen packets in all, every one
 * delivered (the UDP checksums still valid) and none dropped. */
static void assert_lap_on(vfgx_proc *proc, const struct vfgx_pkt *a, struct vfgx_pkt *b,
			  int m, uint64_t packets)
{
	struct vfgx_pipeline_stats st;

	for (int i = 0; i < m; i++) {
		assert_ptr_equal(b[i].data, a[i].data);
		assert_int_equal(vfgx_rd64(b[i].data + 14 + 20 + 8 + 8), 256 + (uint64_t)i);
	}
	vfgx_proc_burst(proc, b, (uint32_t)m);
	vfgx_proc_stats(proc, &st);
	assert_int_equal(st.packets, packets);
	assert_int_equal(st.delivered, packets);
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		assert_int_equal(st.drops[i], 0);
}

static void test_replay_release(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_pkt a[256], b[64];
	vfgx_port *port;
	vfgx_proc *proc;
	int m;

	(void)state;
	replay_lap(false, &cfg, &port, &proc, a);
	/* 10 frames back: not enough, the lap's first eighth (32 frames) is
	 * rewritten as a whole */
	vfgx_port_release(port, 0, a, 10);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(vfgx_port_rx_burst(port, 0, b, 64), 0);
	vfgx_port_release(port, 0, a + 10, 22);
	m = 0;
	for (long i = 0; i < 100000000 && m == 0; i++)
		m = vfgx_port_rx_burst(port, 0, b, 64);
	assert_int_equal(m, 32);
	assert_lap_on(proc, a, b, m, 288);
	assert_false(vfgx_port_rx_done(port, 0)); /* endless */
	replay_end(cfg, port, proc, a, 32, b, m);
}

/* Inline: a frame comes back with its sequence one lap on only after it
 * was released; a released one goes out again at once. */
static void test_replay_inline_release(void **state)
{
	struct vfgx_config *cfg;
	struct vfgx_pkt a[256], b[64];
	vfgx_port *port;
	vfgx_proc *proc;
	int m;

	(void)state;
	replay_lap(true, &cfg, &port, &proc, a);
	vfgx_port_release(port, 0, a, 10);
	m = vfgx_port_rx_burst(port, 0, b, 64);
	assert_int_equal(m, 10); /* exactly the released ones */
	/* the frames after them, not released: still lap 0's sequences */
	assert_int_equal(vfgx_rd64(a[10].data + 14 + 20 + 8 + 8), 10);
	assert_int_equal(vfgx_port_rx_burst(port, 0, b + m, 64), 0);
	assert_lap_on(proc, a, b, m, 266);
	replay_end(cfg, port, proc, a, 10, b, m);
}

static void test_replay_inline_errors(void **state)
{
	struct vfgx_config *cfg = cfg_of(
		"interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0}]}\n"
		"    loopback: {flows: 1, replay: true}\n");
	struct vfgx_pkt pk[8];
	vfgx_port *port;

	(void)state;
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_true(vfgx_port_rx_burst(port, 0, pk, 8) > 0);
	assert_int_equal(vfgx_loopback_replay_inline(port), -EBUSY);
	assert_non_null(strstr(vfgx_last_error(ctx), "handed out frames already"));
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

/* Copy mode: the frames copied out are, byte for byte, those rx_burst
 * hands out inline (same config, faults, laps, bursts that straddle a
 * lap's end), counted the same; rx_burst is refused; frames larger than
 * the caller's buffers leave the port as it was. */
static void test_replay_copy(void **state)
{
	struct vfgx_config *cfg = cfg_of(REPLAY_FAULTS_YAML);
	static uint8_t copies[64][256];
	void *dst[64];
	uint32_t lens[64];
	struct vfgx_pkt pk[64];
	vfgx_port *inl, *cp;

	(void)state;
	for (int i = 0; i < 64; i++)
		dst[i] = copies[i];
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &inl), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &cp), 0);
	assert_int_equal(vfgx_loopback_replay_inline(inl), 0);
	assert_int_equal(vfgx_loopback_replay_copy_mode(cp, 199), -ENOTSUP);
	assert_int_equal(vfgx_loopback_replay_copy_mode(cp, 256), 0);
	assert_int_equal(vfgx_port_rx_burst(cp, 0, pk, 8), -EBUSY);
	for (uint16_t q = 0; q < 2; q++) {
		struct vfgx_source_report ra, rb;
		uint64_t total = 0;
		int n, burst = 1;

		while ((n = vfgx_loopback_replay_copy(cp, q, dst, 256, lens, (uint16_t)burst)) > 0) {
			int got = 0;

			while (got < n) {
				int m = vfgx_port_rx_burst(inl, q, pk, (uint16_t)(n - got));

				assert_true(m > 0);
				for (int i = 0; i < m; i++) {
					assert_int_equal(pk[i].len, lens[got + i]);
					assert_memory_equal(pk[i].data, copies[got + i], lens[got + i]);
				}
				vfgx_port_release(inl, q, pk, (uint16_t)m);
				got += m;
			}
			total += (uint64_t)n;
			burst = burst % 61 + 3; /* 1, 4, 7 .. 61, 3, ..: across the laps' ends */
		}
		assert_int_equal(n, 0);
		assert_true(vfgx_port_rx_done(cp, q));
		assert_int_equal(vfgx_port_rx_burst(inl, q, pk, 64), 0);
		assert_true(vfgx_port_rx_done(inl, q));
		vfgx_port_source_report(inl, q, &ra);
		vfgx_port_source_report(cp, q, &rb);
		assert_memory_equal(&ra, &rb, sizeof(ra));
		assert_true(total > 2 * 2048 / 2); /* more than one lap */
	}
	vfgx_port_close(inl);
	vfgx_port_close(cp);
	vfgx_config_destroy(cfg);
}

/* loopback.replay_inline: a bad value, or without replay: one line each,
 * when the config loads */
static void test_replay_inline_key_errors(void **state)
{
	static const char *const bad[][2] = {
		{ "{flows: 1, replay: true, replay_inline: sometimes}",
		  "interfaces[0].loopback.replay_inline: 'sometimes' is not a boolean" },
		{ "{flows: 1, replay_inline: true}", "replay_inline: true needs replay: true" },
	};
	char y[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(y, sizeof(y), "interfaces:\n  - backend: loopback\n    loopback: %s\n",
			 bad[i][0]);
		assert_int_equal(load_rc(y), -EINVAL);
		assert_non_null(strstr(vfgx_last_error(ctx), bad[i][1]));
		assert_null(strchr(vfgx_last_error(ctx), '\n'));
	}
}

static void test_replay_errors(void **state)
{
	struct vfgx_config *cfg = cfg_of(
		"memory_regions: [{name: r, num_bufs: 200}]\n"
		"interfaces:\n"
		"  - backend: loopback\n"
		"    rx: {queues: [{id: 0, memory_region: r}]}\n"
		"    loopback: {flows: 1, replay: true}\n");
	vfgx_port *port;

	(void)state;
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "replay: queue 0 needs at least"));
	vfgx_config_destroy(cfg);
}

int main(void)
{
	static int thread_mode = REPLAY_THREAD, inline_call = REPLAY_INLINE_CALL,
		   inline_key = REPLAY_INLINE_KEY;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_stream),
		cmocka_unit_test(test_faults_accounted),
		cmocka_unit_test(test_endless_all_lost),
		cmocka_unit_test(test_tx_loops_back_malformed),
		cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_batch_size_per_queue),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_threaded_runner),
		cmocka_unit_test_prestate(test_replay_exact, &thread_mode),
		cmocka_unit_test_prestate(test_replay_exact, &inline_call),
		cmocka_unit_test_prestate(test_replay_exact, &inline_key),
		cmocka_unit_test(test_replay_inline_key_errors),
		cmocka_unit_test(test_replay_inline_release),
		cmocka_unit_test(test_replay_inline_errors),
		cmocka_unit_test(test_replay_release),
		cmocka_unit_test(test_replay_errors),
		cmocka_unit_test(test_replay_copy),
	};
	int ret;

	vfgx_ctx_create(&ctx);
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	vfgx_ctx_destroy(ctx);
	return ret;
}
