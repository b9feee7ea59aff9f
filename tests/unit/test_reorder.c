/* test_reorder.c - the processor's reorder stage with loss, duplicates,
 * reordering, late packets, far jumps, and a randomized model check. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

#include "unit_ctx.h"

#define W 16

struct rec {
	uint64_t seqs[4096];
	uint32_t n;
};

static int record(void *user, uint32_t stream, uint64_t seq,
		  const uint8_t *payload, uint32_t len)
{
	struct rec *r = user;

	(void)payload;
	(void)len;
	(void)stream;
	if (r->n < 4096)
		r->seqs[r->n++] = seq;
	return 0;
}

static uint8_t frames[4096][128];

static vfgx_proc *mkproc(struct rec *r, uint32_t window)
{
	struct vfgx_pipeline_config pc = {
		.reorder = true, .reorder_window = window, .reorder_slot = 256,
		.max_streams = 4, .verify_payload = true,
	};
	vfgx_proc *p;

	assert_int_equal(vfgx_proc_create(ctx, &pc, &p), 0);
	memset(r, 0, sizeof(*r));
	vfgx_proc_set_user_stage(p, record, r);
	return p;
}

static void feed(vfgx_proc *p, const uint64_t *seqs, uint32_t n)
{
	struct vfgx_pkt pk[64];

	assert_true(n <= 64);
	for (uint32_t i = 0; i < n; i++) {
		struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .src_port = 1,
					   .dst_port = 2, .stream = 1, .seq = seqs[i],
					   .frame_len = 100, .udp_csum = true };

		pk[i] = (struct vfgx_pkt){ .data = frames[i], .len = 100 };
		vfgx_pkt_build(frames[i], 128, &s);
	}
	vfgx_proc_burst(p, pk, n);
}

/* One packet (sequence 0) for each stream id first .. first+n-1. */
static void feed_streams(vfgx_proc *p, uint32_t first, uint32_t n)
{
	struct vfgx_pkt pk[64];

	assert_true(n <= 64);
	for (uint32_t i = 0; i < n; i++) {
		struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .src_port = 1,
					   .dst_port = 2, .stream = first + i,
					   .frame_len = 100, .udp_csum = true };

		pk[i] = (struct vfgx_pkt){ .data = frames[i], .len = 100 };
		vfgx_pkt_build(frames[i], 128, &s);
	}
	vfgx_proc_burst(p, pk, n);
}

/* A sender using many stream ids gets windows only while max_memory
 * lasts; the rest are refused once each and their packets dropped. */
static void test_memory_budget(void **state)
{
	const uint64_t one = 16 * (256 + 5); /* window x (slot + len + flags) */
	struct vfgx_pipeline_config pc = {
		.reorder = true, .reorder_window = 16, .reorder_slot = 256,
		.max_streams = 64, .reorder_max_memory = 3 * one,
	};
	struct vfgx_pipeline_stats st;
	vfgx_proc *p;

	(void)state;
	assert_int_equal(vfgx_proc_create(ctx, &pc, &p), 0);
	feed_streams(p, 0, 10);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.delivered, 3);
	assert_int_equal(st.streams_refused, 7);
	assert_int_equal(st.drops[VFGX_DROP_BAD_STREAM], 7);
	assert_int_equal(st.reorder_bytes, 3 * one);
	/* a refused stream stays refused, counted once; a held one works */
	feed_streams(p, 5, 1);
	feed_streams(p, 0, 1);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.streams_refused, 7);
	assert_int_equal(st.drops[VFGX_DROP_BAD_STREAM], 8);
	assert_int_equal(st.drops[VFGX_DROP_LATE], 1); /* stream 0, seq 0 again */
	assert_int_equal(st.reorder_bytes, 3 * one);
	vfgx_proc_destroy(p);
}

/* window x slot_size x max_streams beyond any host, or one window beyond
 * max_memory: refused before anything runs, in one line. */
static void test_config_check(void **state)
{
	struct vfgx_pipeline_config pc = {
		.reorder = true, .reorder_window = 1u << 20, .reorder_slot = 65536,
		.max_streams = 65536,
	};
	vfgx_proc *p;

	(void)state;
	assert_int_equal(vfgx_pipeline_check(ctx, &pc), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "exceeds this host's"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
	assert_int_equal(vfgx_proc_create(ctx, &pc, &p), -EINVAL);
	pc.max_streams = 1;
	pc.reorder_slot = 2048; /* 2 GiB for one stream, above 1 GiB */
	assert_int_equal(vfgx_pipeline_check(ctx, &pc), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "exceeds max_memory"));
	pc.reorder_window = 1024;
	pc.max_streams = 64;
	assert_int_equal(vfgx_pipeline_check(ctx, &pc), 0);
	pc.reorder = false; /* nothing to hold */
	pc.reorder_window = 3;
	assert_int_equal(vfgx_pipeline_check(ctx, &pc), 0);
}

static void test_in_order_and_shuffled(void **state)
{
	struct rec r;
	struct vfgx_pipeline_stats st;
	vfgx_proc *p = mkproc(&r, W);
	uint64_t a[] = { 0, 1, 2, 5, 4, 3, 7, 6, 8 };

	(void)state;
	feed(p, a, 9);
	vfgx_proc_stats(p, &st);
	assert_int_equal(r.n, 9);
	for (uint32_t i = 0; i < 9; i++)
		assert_int_equal(r.seqs[i], i);
	assert_int_equal(st.delivered, 9);
	assert_int_equal(st.verify_errors, 0);
	assert_int_equal(st.gaps, 0);
	vfgx_proc_destroy(p);
}

static void test_duplicates_and_late(void **state)
{
	struct rec r;
	struct vfgx_pipeline_stats st;
	vfgx_proc *p = mkproc(&r, W);
	uint64_t a[] = { 0, 2, 2, 1, 0, 1, 3 };

	(void)state;
	feed(p, a, 7);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.delivered, 4);
	assert_int_equal(st.drops[VFGX_DROP_DUPLICATE], 1); /* 2 held twice */
	assert_int_equal(st.drops[VFGX_DROP_LATE], 2);      /* 0, 1 after delivery */
	vfgx_proc_destroy(p);
}

static void test_loss_slides_window(void **state)
{
	struct rec r;
	struct vfgx_pipeline_stats st;
	vfgx_proc *p = mkproc(&r, W);
	uint64_t a[] = { 0, 2, 3, 4 };
	uint64_t b[] = { W + 2 }; /* forces 1 out of the window */
	uint64_t c[] = { 1 };     /* now late */

	(void)state;
	feed(p, a, 4);
	assert_int_equal(r.n, 1);
	feed(p, b, 1);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.gaps, 1);
	assert_int_equal(r.n, 4); /* 0, 2, 3, 4 */
	assert_int_equal(r.seqs[1], 2);
	feed(p, c, 1);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.drops[VFGX_DROP_LATE], 1);
	/* flush delivers the held W+2, counting 5..W+1 as gaps between */
	vfgx_proc_flush(p);
	vfgx_proc_stats(p, &st);
	assert_int_equal(r.n, 5);
	assert_int_equal(r.seqs[4], W + 2);
	assert_int_equal(st.gaps, 1 + (W + 2 - 5));
	vfgx_proc_destroy(p);
}

static void test_far_jump(void **state)
{
	struct rec r;
	struct vfgx_pipeline_stats st;
	vfgx_proc *p = mkproc(&r, W);
	uint64_t a[] = { 0, 3, 1000000 };

	(void)state;
	feed(p, a, 3);
	vfgx_proc_stats(p, &st);
	/* 0 delivered; 3 delivered on the slide; everything before 1000000
	 * that never came is a gap, counted without walking it */
	assert_int_equal(r.n, 2);
	assert_int_equal(st.gaps, 1000000 - (W - 1) - 2);
	vfgx_proc_flush(p);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.seqs[2], 1000000);
	vfgx_proc_destroy(p);
}

static void test_too_big_and_bad_stream(void **state)
{
	struct vfgx_pipeline_config pc = { .reorder = true, .reorder_window = 4,
					   .reorder_slot = 16, .max_streams = 2 };
	uint8_t f[256];
	struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .src_port = 1,
				   .dst_port = 2, .stream = 1, .frame_len = 200 };
	struct vfgx_pkt pk = { .data = f, .len = 200 };
	struct vfgx_pipeline_stats st;
	vfgx_proc *p;

	(void)state;
	assert_int_equal(vfgx_proc_create(ctx, &pc, &p), 0);
	vfgx_pkt_build(f, sizeof(f), &s);
	vfgx_proc_burst(p, &pk, 1);
	s.stream = 2;
	vfgx_pkt_build(f, sizeof(f), &s);
	vfgx_proc_burst(p, &pk, 1);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.drops[VFGX_DROP_TOO_BIG], 1);
	assert_int_equal(st.drops[VFGX_DROP_BAD_STREAM], 1);
	vfgx_proc_destroy(p);
	pc.reorder_window = 6;
	assert_int_equal(vfgx_proc_create(ctx, &pc, &p) < 0, 1);
	vfgx_proc_destroy(NULL);
	assert_int_equal(vfgx_proc_create(ctx, &(struct vfgx_pipeline_config){ .reorder = true, .reorder_window = 4, .reorder_slot = 16, .max_streams = 2 }, &p), 0);
	vfgx_proc_destroy(p);
}

/* Random permutations within the window plus duplicates: delivery must be
 * exactly 0..n-1 in order. */
static void test_randomized(void **state)
{
	enum { N = 2048 };
	static uint64_t order[N];
	struct rec r;
	struct vfgx_pipeline_stats st;
	vfgx_proc *p = mkproc(&r, 64);
	uint32_t dups = 0;

	(void)state;
	srand(12345);
	for (uint64_t i = 0; i < N; i++)
		order[i] = i;
	/* shuffle within disjoint blocks of 32: displacement stays < window */
	for (uint32_t b = 0; b < N; b += 32) {
		for (uint32_t i = 31; i > 0; i--) {
			uint32_t j = (uint32_t)rand() % (i + 1);
			uint64_t t = order[b + i];

			order[b + i] = order[b + j];
			order[b + j] = t;
		}
	}
	/* interleave duplicates: every 10th sequence sent twice */
	uint64_t seq[N + N / 10 + 1];
	uint32_t k = 0;

	for (uint32_t i = 0; i < N; i++) {
		seq[k++] = order[i];
		if (i % 10 == 0) {
			seq[k++] = order[i];
			dups++;
		}
	}
	for (uint32_t i = 0; i < k; i += 64)
		feed(p, seq + i, k - i < 64 ? k - i : 64);
	vfgx_proc_flush(p);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.delivered, N);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(r.seqs[i], i);
	assert_int_equal(st.drops[VFGX_DROP_DUPLICATE] + st.drops[VFGX_DROP_LATE], dups);
	assert_int_equal(st.gaps, 0);
	assert_int_equal(st.verify_errors, 0);
	vfgx_proc_destroy(p);
}

/* Payload-only packets (socket backend) skip parsing and go straight to
 * the sequence header and reorder. */
static void test_payload_packets(void **state)
{
	struct rec r;
	struct vfgx_pipeline_stats st;
	vfgx_proc *p = mkproc(&r, W);
	uint8_t pay[3][40];
	struct vfgx_pkt pk[3];

	(void)state;
	for (int i = 0; i < 3; i++) {
		struct vfgx_pkt_spec s = { .src_ip = 1, .dst_ip = 2, .src_port = 1,
					   .dst_port = 2, .stream = 1, .seq = (uint64_t)(2 - i),
					   .frame_len = 100, .udp_csum = true };

		vfgx_pkt_build(frames[i], 128, &s);
		memcpy(pay[i], frames[i] + 42, 40); /* the UDP payload */
		pk[i] = (struct vfgx_pkt){ .data = pay[i], .len = 40, .flags = VFGX_PKT_PAYLOAD };
	}
	pay[1][39] ^= 1; /* no checksum here: the pattern check catches it */
	vfgx_proc_burst(p, pk, 3);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.delivered, 3);
	assert_int_equal(r.seqs[0], 0);
	assert_int_equal(r.seqs[2], 2);
	assert_int_equal(st.verify_errors, 1);
	vfgx_proc_destroy(p);
}

/* Where each delivered record's bytes were: in the packet (frames) or
 * elsewhere (the window's slots). */
struct where {
	uint64_t seq[8];
	int in_packet[8];
	uint32_t n;
};

static int where_stage(void *user, uint32_t stream, uint64_t seq,
		       const uint8_t *payload, uint32_t len)
{
	struct where *w = user;
	const uint8_t *lo = &frames[0][0], *hi = &frames[4095][127] + 1;

	(void)stream;
	(void)len;
	if (w->n < 8) {
		w->seq[w->n] = seq;
		w->in_packet[w->n++] = payload >= lo && payload < hi;
	}
	return 0;
}

/* A record in order with nothing held is delivered from its packet, not
 * copied into the window first (the GPU engine's rule, rules.h
 * vfgx_ro_insert: both engines do the same work); one that must wait is
 * copied and delivered from its slot; the counters are the same. */
static void test_in_order_not_copied(void **state)
{
	struct vfgx_pipeline_config pc = {
		.reorder = true, .reorder_window = W, .reorder_slot = 256,
		.max_streams = 4, .verify_payload = true,
	};
	struct vfgx_pipeline_stats st;
	struct where w = { 0 };
	vfgx_proc *p;

	(void)state;
	assert_int_equal(vfgx_proc_create(ctx, &pc, &p), 0);
	vfgx_proc_set_user_stage(p, where_stage, &w);
	/* 0, 1 in order; 3 waits for 2; 2 then releases 3 from its slot */
	feed(p, (const uint64_t[]){ 0, 1, 3, 2 }, 4);
	assert_int_equal(w.n, 4);
	assert_int_equal(w.seq[0], 0);
	assert_true(w.in_packet[0]);
	assert_int_equal(w.seq[1], 1);
	assert_true(w.in_packet[1]);
	/* 2 came with 3 held: stored, then drained from the window */
	assert_int_equal(w.seq[2], 2);
	assert_false(w.in_packet[2]);
	assert_int_equal(w.seq[3], 3);
	assert_false(w.in_packet[3]);
	vfgx_proc_stats(p, &st);
	assert_int_equal(st.delivered, 4);
	assert_int_equal(st.gaps, 0);
	assert_int_equal(st.verify_errors, 0);
	vfgx_proc_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_budget),
		cmocka_unit_test(test_config_check),
		cmocka_unit_test(test_in_order_and_shuffled),
		cmocka_unit_test(test_duplicates_and_late),
		cmocka_unit_test(test_loss_slides_window),
		cmocka_unit_test(test_far_jump),
		cmocka_unit_test(test_too_big_and_bad_stream),
		cmocka_unit_test(test_randomized),
		cmocka_unit_test(test_payload_packets),
		cmocka_unit_test(test_in_order_not_copied),
	};

	return cmocka_run_group_tests(tests, ctx_setup, ctx_teardown);
}
