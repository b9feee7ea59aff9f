/* test_chunks.c - ordered chunks (vfgx/chunk.h) on the cpu engine.
 * The rules on a chunk set fed records by hand: placement by sequence and
 * by a header field (with its step), ring wrap, late, duplicate and
 * out-of-range records, a far jump, completion, close by distance, by
 * timeout and at the end, gaps, and a placer that stops while the consumer
 * holds its slot, and a stale put refused.  Then whole pipelines over a real loopback port with the
 * generator's faults: every byte of every slot checked against the
 * generator's pattern, masks against lengths, a consumer that holds every
 * chunk (backpressure, then progress), one that never returns them (stop
 * does not hang), and config errors. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>
#include <vfgx/chunk.h>

#include "pipeline/chunkset.h"
#include "chunk_rig.h"

#include "unit_ctx.h"

/* --- the rules, on a chunk set --------------------------------------------- */

static struct vfgx_chunkset *make_set(uint32_t packets, uint32_t in_flight,
				      uint32_t streams, uint32_t close_distance,
				      uint32_t timeout_ms)
{
	struct vfgx_chunk_config c;
	struct vfgx_chunkset *cs;

	vfgx_chunk_config_default(&c);
	c.payload_bytes = 16;
	c.packets = packets;
	c.in_flight = in_flight;
	c.streams = streams;
	c.close_distance = close_distance;
	c.timeout_ms = timeout_ms;
	assert_int_equal(vfgx_chunkset_create(ctx, &c, &cs), 0);
	return cs;
}

static int put_rec(struct vfgx_chunkset *cs, uint32_t stream, uint64_t seq,
		   uint64_t now)
{
	uint8_t body[16];
	const uint8_t *slot;

	for (int i = 0; i < 16; i++)
		body[i] = vfgx_pattern_byte(stream, seq, (uint32_t)i);
	return vfgx_chunkset_place(cs, stream, seq, body, 16, now, &slot);
}

static void give_back(struct vfgx_chunkset *cs, struct vfgx_chunk *d)
{
	vfgx_chunkset_put(cs, d->stream, d->index);
}

static bool bit(const struct vfgx_chunk *d, uint32_t i)
{
	return d->present[i / 64] >> (i % 64) & 1;
}

static void check_slot_bytes(const struct vfgx_chunk *d, uint32_t i)
{
	const uint8_t *p = (const uint8_t *)d->data + (size_t)i * d->payload_bytes;

	assert_true(bit(d, i));
	assert_int_equal(d->lens[i], 16);
	for (uint32_t j = 0; j < 16; j++)
		assert_int_equal(p[j], vfgx_pattern_byte(d->stream, d->first + i, j));
}

static void test_place_complete_in_order(void **state)
{
	struct vfgx_chunkset *cs = make_set(8, 2, 1, 0, 0);
	struct vfgx_chunk *d;

	(void)state;
	/* chunk 0 out of order within itself, then complete */
	for (uint64_t s = 8; s-- > 0;)
		assert_int_equal(put_rec(cs, 0, s, 1), VFGX_STAGE_PASS);
	d = next_ready(cs);
	assert_non_null(d);
	assert_int_equal(d->index, 0);
	assert_int_equal(d->flags, VFGX_CHUNK_COMPLETE);
	assert_int_equal(d->present_count, 8);
	assert_int_equal(d->missing, 0);
	for (uint32_t i = 0; i < 8; i++)
		check_slot_bytes(d, i);
	/* a complete newer chunk waits for the older one (its slot is
	 * chunk 0's: given back first, else the placer would wait) */
	give_back(cs, d);
	for (uint64_t s = 16; s < 24; s++)
		assert_int_equal(put_rec(cs, 0, s, 1), VFGX_STAGE_PASS);
	assert_null(next_ready(cs));
	for (uint64_t s = 8; s < 16; s++)
		assert_int_equal(put_rec(cs, 0, s, 1), VFGX_STAGE_PASS);
	d = next_ready(cs);
	assert_int_equal(d->index, 1);
	give_back(cs, d);
	d = next_ready(cs);
	assert_int_equal(d->index, 2);
	assert_int_equal(d->ring_slot, 0); /* n % in_flight */
	check_slot_bytes(d, 7);
	assert_int_equal(vfgx_chunkset_gaps(cs), 0);
	assert_int_equal(atomic_load(&cs->ready_word[0]), 3); /* index + 1 */
	vfgx_chunkset_destroy(cs);
}

static void test_late_duplicate_out_of_range(void **state)
{
	struct vfgx_chunkset *cs = make_set(4, 3, 2, 2, 0);
	uint8_t big[17] = { 0 };
	const uint8_t *slot;
	struct vfgx_chunk *d;

	(void)state;
	assert_int_equal(put_rec(cs, 0, 4, 1), VFGX_STAGE_PASS); /* opens chunk 1 */
	assert_int_equal(put_rec(cs, 0, 3, 1), VFGX_R_LATE);      /* chunk 0: before it */
	assert_int_equal(put_rec(cs, 0, 4, 1), VFGX_R_DUPLICATE);
	assert_int_equal(put_rec(cs, 2, 0, 1), VFGX_R_BAD_STREAM);
	assert_int_equal(vfgx_chunkset_place(cs, 1, 0, big, 17, 1, &slot), VFGX_R_TOO_BIG);
	/* chunk 3 is two past chunk 1: chunk 1 closes by distance */
	assert_int_equal(put_rec(cs, 0, 12, 1), VFGX_STAGE_PASS);
	d = next_ready(cs);
	assert_int_equal(d->index, 1);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_DISTANCE);
	assert_int_equal(d->present_count, 1);
	assert_int_equal(d->missing, 3);
	assert_int_equal(d->lens[1], 0);
	assert_false(bit(d, 1));
	assert_int_equal(d->stream_late, 1);
	/* a late packet for the closed chunk is never written, but counted
	 * in it */
	assert_int_equal(d->late, 0);
	assert_int_equal(put_rec(cs, 0, 5, 1), VFGX_R_LATE);
	assert_false(bit(d, 1));
	assert_int_equal(d->lens[1], 0);
	assert_int_equal(d->late, 1);
	give_back(cs, d);
	/* chunk 4 closes chunk 2, which never got a packet: skipped */
	assert_int_equal(put_rec(cs, 0, 16, 1), VFGX_STAGE_PASS);
	assert_null(next_ready(cs));
	assert_int_equal(atomic_load(&cs->streams[0].skipped), 1);
	assert_int_equal(atomic_load(&cs->streams[0].late), 2);
	assert_int_equal(atomic_load(&cs->streams[0].duplicates), 1);
	assert_int_equal(atomic_load(&cs->streams[1].out_of_range), 1);
	/* gaps: chunk 1's slots 5..7 and chunk 2's four (later packets came) */
	assert_int_equal(vfgx_chunkset_gaps(cs), 7);
	vfgx_chunkset_destroy(cs);
}

static void test_far_jump_and_wrap(void **state)
{
	struct vfgx_chunkset *cs = make_set(4, 4, 1, 0, 0);
	struct vfgx_chunk *d;
	uint64_t far = (1ull << 62) + 5;

	(void)state;
	assert_int_equal(put_rec(cs, 0, 0, 1), VFGX_STAGE_PASS);
	assert_int_equal(put_rec(cs, 0, far, 1), VFGX_STAGE_PASS);
	d = next_ready(cs);
	assert_int_equal(d->index, 0);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_RING);
	give_back(cs, d);
	assert_null(next_ready(cs));
	assert_true(atomic_load(&cs->streams[0].skipped) > (1ull << 59));
	/* the stream goes on from there; its chunk lives in slot n % 4 */
	assert_int_equal(put_rec(cs, 0, far + 1, 1), VFGX_STAGE_PASS);
	assert_int_equal(put_rec(cs, 0, far - 1, 1), VFGX_STAGE_PASS); /* slot 0 of its chunk */
	assert_int_equal(put_rec(cs, 0, 1, 1), VFGX_R_LATE);
	vfgx_chunkset_flush(cs, 0);
	d = next_ready(cs);
	assert_non_null(d);
	assert_int_equal(d->index, far / 4);
	assert_int_equal(d->ring_slot, (far / 4) % 4);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_END);
	check_slot_bytes(d, 0);
	check_slot_bytes(d, 1);
	check_slot_bytes(d, 2);
	assert_false(bit(d, 3));
	vfgx_chunkset_destroy(cs);
}

static void test_close_distance_timeout_end(void **state)
{
	struct vfgx_chunkset *cs = make_set(4, 8, 1, 2, 10);
	struct vfgx_chunk *d;
	const uint64_t ms = 1000000;

	(void)state;
	assert_int_equal(put_rec(cs, 0, 0, 0), VFGX_STAGE_PASS);
	assert_int_equal(put_rec(cs, 0, 4, 0), VFGX_STAGE_PASS);
	assert_null(next_ready(cs));
	/* chunk 2 is two past chunk 0: it closes by distance */
	assert_int_equal(put_rec(cs, 0, 8, 0), VFGX_STAGE_PASS);
	d = next_ready(cs);
	assert_int_equal(d->index, 0);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_DISTANCE);
	assert_null(next_ready(cs));
	/* 5 ms: nothing; 11 ms after chunk 1's first packet: 1 and 2 go */
	vfgx_chunkset_tick(cs, 0, 5 * ms);
	assert_null(next_ready(cs));
	vfgx_chunkset_tick(cs, 0, 11 * ms);
	d = next_ready(cs);
	assert_int_equal(d->index, 1);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_TIMEOUT);
	d = next_ready(cs);
	assert_int_equal(d->index, 2);
	/* the last chunk's tail is not a gap until a later packet comes */
	assert_int_equal(vfgx_chunkset_gaps(cs), 3 + 3);
	assert_int_equal(put_rec(cs, 0, 13, 20 * ms), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_chunkset_gaps(cs), 3 + 3 + 3);
	vfgx_chunkset_flush(cs, 0);
	d = next_ready(cs);
	assert_int_equal(d->index, 3);
	assert_int_equal(d->flags, VFGX_CHUNK_BY_END);
	assert_int_equal(d->present_count, 1);
	/* the end's tail (and head before slot 1) is missing, but gaps count
	 * only between packets: 12 is a gap, 14 and 15 are not */
	assert_int_equal(vfgx_chunkset_gaps(cs), 3 + 3 + 3 + 1);
	vfgx_chunkset_destroy(cs);
}

static void test_place_by_field(void **state)
{
	struct vfgx_chunk_config c;
	struct vfgx_chunkset *cs;
	struct vfgx_chunk *d;
	const uint8_t *slot;
	uint8_t body[24];

	(void)state;
	vfgx_chunk_config_default(&c);
	c.payload_bytes = 24;
	c.packets = 4;
	c.place = VFGX_CHUNK_BY_FIELD;
	c.field_offset = 8;
	c.field_size = 8;
	c.field_step = 2048; /* e.g. an ADC timestamp per packet of 2048 samples */
	assert_int_equal(vfgx_chunkset_create(ctx, &c, &cs), 0);
	for (uint64_t i = 0; i < 4; i++) {
		memset(body, (int)i, sizeof(body));
		vfgx_wr64(body + 8, (100 + i) * 2048);
		/* the app header's sequence does not matter here */
		assert_int_equal(vfgx_chunkset_place(cs, 0, 7, body, 24, 1, &slot), VFGX_STAGE_PASS);
	}
	d = next_ready(cs);
	assert_int_equal(d->index, 25); /* packet 100 / 4 */
	assert_int_equal(d->first, 100);
	assert_int_equal(((uint8_t *)d->data)[2 * 24], 2);
	vfgx_wr64(body + 8, 3); /* not a multiple of the step */
	assert_int_equal(vfgx_chunkset_place(cs, 0, 7, body, 24, 1, &slot), VFGX_R_BAD_APP_HDR);
	/* the field outside a short payload */
	assert_int_equal(vfgx_chunkset_place(cs, 0, 7, body, 15, 1, &slot), VFGX_R_BAD_APP_HDR);
	assert_int_equal(atomic_load(&cs->streams[0].out_of_range), 2);
	vfgx_chunkset_destroy(cs);
}

static void test_stopped_placer_drops(void **state)
{
	struct vfgx_chunkset *cs = make_set(2, 2, 1, 0, 0);

	(void)state;
	for (uint64_t s = 0; s < 4; s++)
		assert_int_equal(put_rec(cs, 0, s, 1), VFGX_STAGE_PASS);
	assert_non_null(next_ready(cs));
	assert_non_null(next_ready(cs));
	/* both slots held: chunk 2 would wait; stopping drops it instead */
	vfgx_chunkset_stop(cs);
	assert_int_equal(put_rec(cs, 0, 4, 1), VFGX_DROP_NOBUFS);
	assert_int_equal(atomic_load(&cs->streams[0].backpressure), 1);
	assert_int_equal(atomic_load(&cs->streams[0].backpressure_drops), 1);
	vfgx_chunkset_destroy(cs);
}

/* A put names the exact chunk, not only its ring slot: consumer A gives
 * chunk 0 back, B takes chunk 2 from the same slot, A's repeated put of
 * chunk 0 is refused (-ESTALE) and leaves B's chunk held (before, it freed
 * the slot and the placer refilled it under B). */
static void test_stale_put(void **state)
{
	struct vfgx_chunkset *cs = make_set(2, 2, 1, 0, 0);
	struct vfgx_chunk *a, *b1, *b2;

	(void)state;
	for (uint64_t s = 0; s < 2; s++)
		assert_int_equal(put_rec(cs, 0, s, 1), VFGX_STAGE_PASS);
	a = next_ready(cs);
	assert_non_null(a);
	assert_int_equal(a->index, 0);
	assert_int_equal(vfgx_chunkset_put(cs, 0, 0), 0);
	/* the same put again: nothing held under that name */
	assert_int_equal(vfgx_chunkset_put(cs, 0, 0), -ESTALE);
	for (uint64_t s = 2; s < 6; s++)
		assert_int_equal(put_rec(cs, 0, s, 1), VFGX_STAGE_PASS);
	b1 = next_ready(cs);
	b2 = next_ready(cs);
	assert_non_null(b1);
	assert_non_null(b2);
	assert_int_equal(b2->index, 2);
	assert_int_equal(b2->ring_slot, 0);
	assert_ptr_equal(b2, a); /* one descriptor per slot */
	/* A's stale put: refused, one line, B's chunk still held */
	assert_int_equal(vfgx_chunkset_put(cs, 0, 0), -ESTALE);
	assert_non_null(strstr(vfgx_last_error(ctx), "stream 0 chunk 0, which is not held"));
	assert_int_equal(atomic_load(&cs->streams[0].state[0]), CHUNK_HELD);
	assert_int_equal(cs->returned, 1);
	assert_int_equal(atomic_load(&cs->returned_word[0]), 1);
	/* an index ahead of what is held, and a stream without a ring */
	assert_int_equal(vfgx_chunkset_put(cs, 0, 4), -ESTALE);
	assert_int_equal(vfgx_chunkset_put(cs, 1, 2), -EINVAL);
	assert_int_equal(vfgx_chunkset_put(NULL, 0, 2), -ENOTSUP);
	/* the slot stays B's: chunk 4 would need it, so a stopped placer
	 * drops instead of writing under B */
	vfgx_chunkset_stop(cs);
	assert_int_equal(put_rec(cs, 0, 8, 1), VFGX_DROP_NOBUFS);
	for (uint32_t i = 0; i < 2; i++)
		check_slot_bytes(b2, i);
	assert_int_equal(vfgx_chunkset_put(cs, 0, 2), 0);
	assert_int_equal(vfgx_chunkset_put(cs, 0, 1), 0);
	assert_int_equal(cs->returned, 3);
	vfgx_chunkset_destroy(cs);
}

static void test_bad_options(void **state)
{
	struct vfgx_chunk_config c;
	struct vfgx_chunkset *cs;

	(void)state;
	vfgx_chunk_config_default(&c);
	c.field_size = 5;
	assert_int_equal(vfgx_chunkset_create(ctx, &c, &cs), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "field_size 5"));
	vfgx_chunk_config_default(&c);
	c.in_flight = 1;
	assert_int_equal(vfgx_chunkset_create(ctx, &c, &cs), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "in_flight"));
	vfgx_chunk_config_default(&c);
	c.argsz = 7;
	assert_int_equal(vfgx_chunkset_create(ctx, &c, &cs), -EINVAL);
	vfgx_chunk_config_default(&c);
	c.packets = 1u << 24;
	c.payload_bytes = 1u << 20;
	assert_int_equal(vfgx_chunkset_create(ctx, &c, &cs), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "at most 64 GiB"));
}

/* --- pipelines over a loopback port ----------------------------------------- */

struct run {
	struct vfgx_config *cfg;
	vfgx_port *port;
	vfgx_pipeline *pl;
	uint64_t chunks, slots_present, slots_missing, bad_bytes, bad_masks;
	uint64_t order_errors, next_index[8];
	int hold_ms;       /* keep every chunk this long before the put */
	bool never_return;
};

static void open_run(struct run *r, const char *yaml)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(vfgx_config_load_string(ctx, yaml, strlen(yaml), "t.yaml", &r->cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, r->cfg, &r->cfg->ifaces[0], &r->port), 0);
	assert_int_equal(vfgx_pipeline_create(ctx, &r->cfg->pipeline, &r->port, 1, &r->pl), 0);
}

static void close_run(struct run *r)
{
	vfgx_pipeline_destroy(r->pl);
	vfgx_port_close(r->port);
	vfgx_config_destroy(r->cfg);
}

/* Every slot: present bit <=> length; present bytes are the generator's. */
static void check_chunk(struct run *r, const struct vfgx_chunk *c)
{
	uint32_t present = 0;

	for (uint32_t i = 0; i < c->packets; i++) {
		const uint8_t *p = (const uint8_t *)c->data + (size_t)i * c->payload_bytes;
		bool in = c->present[i / 64] >> (i % 64) & 1;

		if (in != (c->lens[i] != 0)) /* the generator sends no empty payload */
			r->bad_masks++;
		if (!in)
			continue;
		present++;
		for (uint32_t j = 0; j < c->lens[i]; j++)
			if (p[j] != vfgx_pattern_byte(c->stream, c->first + i, j)) {
				r->bad_bytes++;
				break;
			}
	}
	if (present != c->present_count || c->missing != c->packets - present)
		r->bad_masks++;
	r->slots_present += present;
	r->slots_missing += c->packets - present;
	if (c->stream < 8) {
		if (c->index < r->next_index[c->stream])
			r->order_errors++;
		r->next_index[c->stream] = c->index + 1;
	}
	r->chunks++;
}

static void *consume(void *arg)
{
	struct run *r = arg;
	struct vfgx_chunk *c;
	int ret;

	while ((ret = vfgx_chunk_get(r->pl, 1000, &c)) != -ENODATA) {
		if (ret == -ETIMEDOUT)
			continue;
		if (ret) { /* no cmocka asserts off the main thread */
			r->bad_masks++;
			break;
		}
		check_chunk(r, c);
		if (r->never_return)
			continue;
		if (r->hold_ms) {
			struct timespec ts = { 0, r->hold_ms * 1000000L };

			nanosleep(&ts, NULL);
		}
		vfgx_chunk_put(r->pl, c->stream, c->index);
	}
	return NULL;
}

static void run_with_consumer(struct run *r, struct vfgx_pipeline_stats *st,
			      struct vfgx_chunk_stats *cst)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, consume, r), 0);
	assert_int_equal(vfgx_pipeline_start(r->pl), 0);
	while (!vfgx_pipeline_done(r->pl))
		sched_yield();
	vfgx_pipeline_stop(r->pl);
	assert_int_equal(pthread_join(t, NULL), 0);
	vfgx_pipeline_stats(r->pl, st);
	cst->argsz = sizeof(*cst);
	assert_int_equal(vfgx_chunk_stats(r->pl, cst), 0);
}

#define LB_PORT(opts) \
	"interfaces:\n" \
	"  - backend: loopback\n" \
	"    rx: { queues: [ { id: 0 }, { id: 1 } ] }\n" \
	"    loopback: { " opts " }\n"

static void test_pipeline_every_byte(void **state)
{
	static const char y[] = LB_PORT("packets: 40000, flows: 4, reorder: 0.05")
		"pipeline:\n"
		"  device: cpu\n"
		"  workers: 2\n"
		"  verify_payload: true\n"
		"  chunks: { payload_bytes: 512, packets: 100, streams: 4, in_flight: 4 }\n";
	struct vfgx_pipeline_stats st;
	struct vfgx_chunk_stats cst;
	struct run r;

	(void)state;
	open_run(&r, y);
	assert_non_null(vfgx_chunk_conf(r.pl));
	assert_int_equal(vfgx_chunk_conf(r.pl)->packets, 100);
	run_with_consumer(&r, &st, &cst);
	assert_int_equal(r.bad_bytes, 0);
	assert_int_equal(r.bad_masks, 0);
	assert_int_equal(r.order_errors, 0);
	assert_int_equal(r.chunks, 400);
	assert_int_equal(r.slots_present, 40000);
	assert_int_equal(cst.complete, 400);
	assert_int_equal(cst.placed, 40000);
	assert_int_equal(cst.handed_out, 400);
	assert_int_equal(cst.returned, 400);
	assert_int_equal(st.delivered, 40000);
	assert_int_equal(st.verify_errors, 0);
	assert_int_equal(st.gaps, 0);
	assert_int_equal(st.order_errors, 0);
	close_run(&r);
}

static void test_pipeline_loss_and_duplicates(void **state)
{
	static const char y[] = LB_PORT("packets: 30000, flows: 3, loss: 0.01, duplicate: 0.01, seed: 7")
		"pipeline:\n"
		"  device: cpu\n"
		"  chunks: { payload_bytes: 512, packets: 64, streams: 3, in_flight: 3 }\n";
	struct vfgx_source_report src = { 0 }, q;
	struct vfgx_pipeline_stats st;
	struct vfgx_chunk_stats cst;
	struct run r;

	(void)state;
	open_run(&r, y);
	run_with_consumer(&r, &st, &cst);
	for (uint16_t i = 0; i < 2; i++) {
		assert_int_equal(vfgx_port_source_report(r.port, i, &q), 0);
		src.generated += q.generated;
		src.lost += q.lost;
		src.duplicated += q.duplicated;
	}
	assert_int_equal(r.bad_bytes, 0);
	assert_int_equal(r.bad_masks, 0);
	assert_true(cst.closed > 0);
	assert_true(src.lost > 0 && src.duplicated > 0);
	/* in order: every sequence sent is placed; a copy is a duplicate, or
	 * late when the original completed its chunk */
	assert_int_equal(st.delivered, src.generated - src.lost);
	assert_int_equal(cst.duplicates + cst.late, src.duplicated);
	assert_int_equal(st.drops[VFGX_DROP_LATE], cst.late);
	assert_int_equal(cst.missing, r.slots_missing);
	assert_int_equal(cst.placed, r.slots_present);
	assert_int_equal(st.delivered, cst.placed);
	assert_true(cst.duplicates > 0);
	assert_int_equal(st.drops[VFGX_DROP_DUPLICATE], cst.duplicates);
	/* the lost sequences are gaps, but for those after a stream's last
	 * packet (missing in its last chunk only) */
	assert_true(st.gaps <= src.lost && st.gaps + 6 >= src.lost);
	assert_true(st.gaps <= cst.missing);
	close_run(&r);
}

static void test_pipeline_backpressure(void **state)
{
	static const char y[] = LB_PORT("packets: 4000, flows: 1")
		"pipeline:\n"
		"  device: cpu\n"
		"  chunks: { payload_bytes: 512, packets: 100, in_flight: 2 }\n";
	struct vfgx_pipeline_stats st;
	struct vfgx_chunk_stats cst;
	struct run r;

	(void)state;
	open_run(&r, y);
	r.hold_ms = 5; /* slower than the source: the pipeline waits */
	run_with_consumer(&r, &st, &cst);
	assert_true(cst.backpressure > 0);
	assert_int_equal(cst.backpressure_drops, 0);
	assert_int_equal(cst.complete, 40);
	assert_int_equal(r.bad_bytes, 0);
	assert_int_equal(st.delivered, 4000);
	close_run(&r);
}

static void test_pipeline_consumer_never_returns(void **state)
{
	static const char y[] = LB_PORT("packets: 0, flows: 1")
		"pipeline:\n"
		"  device: cpu\n"
		"  chunks: { payload_bytes: 512, packets: 100, in_flight: 2 }\n";
	struct vfgx_chunk_stats cst = { .argsz = sizeof(cst) };
	struct vfgx_chunk *c[2];
	struct run r;
	int n = 0;

	(void)state;
	open_run(&r, y);
	assert_int_equal(vfgx_pipeline_start(r.pl), 0);
	while (n < 2)
		if (vfgx_chunk_get(r.pl, 1000, &c[n]) == 0)
			n++;
	/* both slots held: the endless source stalls, counted */
	do {
		assert_int_equal(vfgx_chunk_stats(r.pl, &cst), 0);
	} while (!cst.backpressure);
	assert_int_equal(vfgx_chunk_get(r.pl, 0, &c[0]), -EAGAIN);
	vfgx_pipeline_stop(r.pl); /* does not hang */
	assert_int_equal(vfgx_chunk_stats(r.pl, &cst), 0);
	assert_true(cst.backpressure_drops >= 1);
	assert_int_equal(cst.handed_out, 2);
	/* the end released what was open; then no more */
	while (vfgx_chunk_get(r.pl, 0, &c[0]) == 0)
		;
	assert_int_equal(vfgx_chunk_get(r.pl, 100, &c[0]), -ENODATA);
	close_run(&r);
}

static void test_pipeline_without_chunks(void **state)
{
	static const char y[] = LB_PORT("packets: 10") "pipeline: { device: cpu }\n";
	struct vfgx_chunk_stats cst = { .argsz = sizeof(cst) };
	struct vfgx_chunk *c;
	struct run r;

	(void)state;
	open_run(&r, y);
	assert_int_equal(vfgx_chunk_get(r.pl, 0, &c), -ENOTSUP);
	assert_int_equal(vfgx_chunk_stats(r.pl, &cst), -ENOTSUP);
	assert_null(vfgx_chunk_conf(r.pl));
	assert_null(vfgx_chunk_slot(r.pl, 0, 0));
	close_run(&r);
}

static void test_config_errors(void **state)
{
	static const struct {
		const char *yaml, *want;
	} cases[] = {
		{ "pipeline: { chunks: { field_size: 5 } }\n",
		  "t.yaml:1:35: pipeline.chunks.field_size: 5; a placement field is 4 or 8 bytes" },
		{ "pipeline: { chunks: { mem: hugepage } }\n",
		  "pipeline.chunks.mem: hugepage: chunks live in host, pinned or gpu memory" },
		{ "pipeline: { chunks: { packets: 0 } }\n", "pipeline.chunks.packets" },
		{ "pipeline: { chunks: { place: offset } }\n", "pipeline.chunks.place" },
		{ "pipeline: { chunks: { pakets: 4 } }\n", "pakets" },
		{ "pipeline: { chunks: 5 }\n", "pipeline.chunks" },
	};
	struct vfgx_config *cfg;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(vfgx_config_load_string(ctx, cases[i].yaml,
							 strlen(cases[i].yaml),
							 "t.yaml", &cfg), -EINVAL);
		if (!strstr(vfgx_last_error(ctx), cases[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, vfgx_last_error(ctx),
				 cases[i].want);
		assert_null(strchr(vfgx_last_error(ctx), '\n'));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_place_complete_in_order),
		cmocka_unit_test(test_late_duplicate_out_of_range),
		cmocka_unit_test(test_far_jump_and_wrap),
		cmocka_unit_test(test_close_distance_timeout_end),
		cmocka_unit_test(test_place_by_field),
		cmocka_unit_test(test_stopped_placer_drops),
		cmocka_unit_test(test_stale_put),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_pipeline_every_byte),
		cmocka_unit_test(test_pipeline_loss_and_duplicates),
		cmocka_unit_test(test_pipeline_backpressure),
		cmocka_unit_test(test_pipeline_consumer_never_returns),
		cmocka_unit_test(test_pipeline_without_chunks),
		cmocka_unit_test(test_config_errors),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
