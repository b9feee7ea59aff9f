/* test_rules.c - the reorder and chunk rules of src/pipeline/rules.h, the
 * very functions both engines run (nvcc compiles the same header into the
 * GPU kernels): every decision at its edges (window and ring edges, far
 * jumps, sequence and slot wraparound, duplicates, late records, timeouts,
 * end of input), and sweeps against plain models written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pipeline/rules.h"

/* ---- common --------------------------------------------------------------- */

static void test_jump(void **state)
{
	struct vfgx_rule_jump j;

	(void)state;
	j = vfgx_rule_jump(10, 12, 4);
	assert_int_equal(j.steps, 2);
	assert_int_equal(j.skipped, 0);
	/* exactly a window: still one step at a time */
	j = vfgx_rule_jump(10, 14, 4);
	assert_int_equal(j.steps, 4);
	assert_int_equal(j.skipped, 0);
	/* one past the window: the window, then one skipped */
	j = vfgx_rule_jump(10, 15, 4);
	assert_int_equal(j.steps, 4);
	assert_int_equal(j.skipped, 1);
	/* a far jump costs a window of steps, not the distance */
	j = vfgx_rule_jump(0, 1000000000000ull, 8);
	assert_int_equal(j.steps, 8);
	assert_int_equal(j.skipped, 1000000000000ull - 8);
	/* near the top of the sequence space */
	j = vfgx_rule_jump(UINT64_MAX - 5, UINT64_MAX, 4);
	assert_int_equal(j.steps, 4);
	assert_int_equal(j.skipped, 1);
	/* every distance up to 3 windows: steps + skipped is the distance */
	for (uint64_t d = 1; d <= 48; d++) {
		j = vfgx_rule_jump(7, 7 + d, 16);
		assert_int_equal(j.steps + j.skipped, d);
		assert_int_equal(j.steps, d < 16 ? d : 16);
	}
}

static void test_deliver(void **state)
{
	struct vfgx_rule_delivery d;

	(void)state;
	d = vfgx_rule_deliver(0, 0, 100, 0);
	assert_int_equal(d.delivered, 1);
	assert_int_equal(d.bytes, 100);
	assert_int_equal(d.last + d.user_drop + d.verify_error, 0);
	d = vfgx_rule_deliver(0, 0, 0, VFGX_APP_FLAG_LAST);
	assert_int_equal(d.delivered, 1);
	assert_int_equal(d.bytes, 0);
	assert_int_equal(d.last, 1);
	/* a user drop: no delivery, no LAST, but a bad record still counts */
	d = vfgx_rule_deliver(1, 1, 64, VFGX_APP_FLAG_LAST);
	assert_int_equal(d.verify_error, 1);
	assert_int_equal(d.user_drop, 1);
	assert_int_equal(d.delivered + d.bytes + d.last, 0);
	d = vfgx_rule_deliver(1, 0, 64, 0x6);
	assert_int_equal(d.verify_error, 1);
	assert_int_equal(d.delivered, 1);
	assert_int_equal(d.last, 0);
}

/* ---- reorder -------------------------------------------------------------- */

static struct vfgx_ro_insert ro(uint64_t base, uint32_t held, uint32_t w,
				uint64_t seq)
{
	struct vfgx_ro_state s = { .base = base, .held = held };

	return vfgx_ro_insert(s, w, seq);
}

static void test_ro_edges(void **state)
{
	struct vfgx_ro_insert d;

	(void)state;
	/* in order, nothing held: straight from the packet */
	d = ro(0, 0, 16, 0);
	assert_int_equal(d.act, VFGX_RO_DELIVER);
	/* in order but something held: stored, the drain delivers */
	d = ro(5, 1, 16, 5);
	assert_int_equal(d.act, VFGX_RO_STORE);
	assert_int_equal(d.slot, 5);
	assert_int_equal(d.ahead, 0);
	/* late: one before base, and far before */
	assert_int_equal(ro(5, 0, 16, 4).act, VFGX_RO_LATE);
	assert_int_equal(ro(5, 3, 16, 0).act, VFGX_RO_LATE);
	assert_int_equal(ro(UINT64_MAX, 0, 16, 0).act, VFGX_RO_LATE);
	/* last place of the window: no slide */
	d = ro(100, 0, 16, 115);
	assert_int_equal(d.act, VFGX_RO_STORE);
	assert_int_equal(d.ahead, 0);
	assert_int_equal(d.slot, 115 % 16);
	/* first place past it: slide by one */
	d = ro(100, 0, 16, 116);
	assert_int_equal(d.act, VFGX_RO_STORE);
	assert_int_equal(d.ahead, 1);
	assert_int_equal(d.target, 101);
	assert_int_equal(d.slide.steps, 1);
	assert_int_equal(d.slide.skipped, 0);
	assert_int_equal(d.slot, 116 % 16);
	/* two windows ahead: drain the window, skip one */
	d = ro(100, 3, 16, 132);
	assert_int_equal(d.ahead, 1);
	assert_int_equal(d.target, 117);
	assert_int_equal(d.slide.steps, 16);
	assert_int_equal(d.slide.skipped, 1);
	/* a jump of 2^40 */
	d = ro(0, 1, 4, 1ull << 40);
	assert_int_equal(d.target, (1ull << 40) - 3);
	assert_int_equal(d.slide.steps, 4);
	assert_int_equal(d.slide.skipped, (1ull << 40) - 7);
	/* the slot wraps with the sequence past 2^32 and near 2^64 */
	d = ro(0xffffffffull, 2, 8, 0x100000003ull);
	assert_int_equal(d.act, VFGX_RO_STORE);
	assert_int_equal(d.slot, 3);
	d = ro(UINT64_MAX - 1, 0, 8, UINT64_MAX);
	assert_int_equal(d.act, VFGX_RO_STORE);
	assert_int_equal(d.slot, 7);
	assert_int_equal(d.ahead, 0);
	d = ro(UINT64_MAX, 0, 8, UINT64_MAX);
	assert_int_equal(d.act, VFGX_RO_DELIVER);
	/* the smallest window */
	d = ro(10, 0, 2, 12);
	assert_int_equal(d.ahead, 1);
	assert_int_equal(d.target, 11);
	assert_int_equal(d.slot, 0);
}

/* Every (base, held, seq) near the window against the model: late below
 * base; at base with nothing held, delivered; else stored at seq mod w,
 * the window first moved so that its last place is seq. */
static void test_ro_sweep(void **state)
{
	const uint32_t w = 8;

	(void)state;
	for (uint64_t base = 0; base < 20; base++) {
		for (uint32_t held = 0; held < 3; held++) {
			for (uint64_t seq = 0; seq < base + 4 * w; seq++) {
				struct vfgx_ro_insert d = ro(base, held, w, seq);

				if (seq < base) {
					assert_int_equal(d.act, VFGX_RO_LATE);
					continue;
				}
				if (seq == base && held == 0) {
					assert_int_equal(d.act, VFGX_RO_DELIVER);
					continue;
				}
				assert_int_equal(d.act, VFGX_RO_STORE);
				assert_int_equal(d.slot, seq % w);
				assert_int_equal(d.ahead, seq >= base + w);
				if (!d.ahead)
					continue;
				/* after the slide, seq is the window's last place */
				assert_int_equal(d.target + w - 1, seq);
				assert_int_equal(d.slide.steps + d.slide.skipped,
						 d.target - base);
				assert_true(d.slide.steps <= w);
			}
		}
	}
}

static void test_ro_store_advance(void **state)
{
	(void)state;
	assert_int_equal(vfgx_ro_store(0), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_ro_store(1), VFGX_R_DUPLICATE);
	assert_int_equal(vfgx_ro_advance_gaps(1), 0);
	assert_int_equal(vfgx_ro_advance_gaps(0), 1);
	assert_int_equal(vfgx_ro_slot(0, 16), 0);
	assert_int_equal(vfgx_ro_slot(17, 16), 1);
	assert_int_equal(vfgx_ro_slot(UINT64_MAX, 16), 15);
	assert_int_equal(vfgx_ro_slot(0x100000000ull, 2), 0);
}

/* A plain reorder window, written from docs/pipeline.md's rule (not
 * from rules.h): the model the quiet batch is held against. */
struct ro_model {
	uint64_t base;
	uint32_t held, late, dup, gaps, delivered;
	uint8_t occ[16];
};

static void model_insert(struct ro_model *m, uint32_t w, uint64_t seq)
{
	if (seq < m->base) {
		m->late++;
		return;
	}
	if (seq == m->base && !m->held) {
		m->delivered++;
		m->base++;
		return;
	}
	while (seq >= m->base + w) {	/* slide: seq becomes the last place */
		if (m->occ[m->base % w]) {
			m->occ[m->base % w] = 0;
			m->held--;
			m->delivered++;
		} else {
			m->gaps++;
		}
		m->base++;
	}
	if (m->occ[seq % w]) {
		m->dup++;
		return;
	}
	m->occ[seq % w] = 1;
	m->held++;
	while (m->occ[m->base % w]) {	/* drain */
		m->occ[m->base % w] = 0;
		m->held--;
		m->delivered++;
		m->base++;
	}
}

/* Random batches of one stream's sequences: a batch whose every record is
 * quiet (vfgx_ro_quiet) against the state before it, with distinct
 * sequences, stored all at once as the gpu engine does (late counted,
 * taken slots duplicates, the rest stored, base unchanged) leaves the
 * window and the counters the model's one-by-one inserts leave.  Also
 * vfgx_ro_run against the filled slots from base. */
static void test_ro_quiet_batch(void **state)
{
	const uint32_t w = 16;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	uint32_t quiet_batches = 0;

	(void)state;
	for (int trial = 0; trial < 20000; trial++) {
		struct ro_model m = { 0 }, b;
		uint64_t seqs[32];
		uint32_t n, bad = 0;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		m.base = 100 + (rng >> 60);
		for (uint32_t i = 1; i < w; i++)	/* the base slot is a hole */
			if (rng >> (10 + i) & 1) {
				m.occ[(m.base + i) % w] = 1;
				m.held++;
			}
		n = 1 + (uint32_t)(rng >> 33) % 12;
		for (uint32_t i = 0; i < n; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			seqs[i] = m.base - 4 + (rng >> 40) % (w + 8);
		}
		b = m;
		for (uint32_t i = 0; i < n; i++) {
			struct vfgx_ro_state s = { .base = m.base, .held = m.held };
			struct vfgx_ro_insert d = vfgx_ro_insert(s, w, seqs[i]);

			bad |= !vfgx_ro_quiet(s, d, seqs[i]);
			for (uint32_t j = 0; j < i; j++)
				bad |= seqs[j] == seqs[i];
		}
		if (bad)
			continue;
		quiet_batches++;
		for (uint32_t i = 0; i < n; i++)	/* one by one */
			model_insert(&m, w, seqs[i]);
		for (uint32_t i = n; i-- > 0;) {	/* at once, any order */
			if (seqs[i] < b.base)
				b.late++;
			else if (b.occ[seqs[i] % w])
				b.dup++;
			else
				b.occ[seqs[i] % w] = 1, b.held++;
		}
		assert_memory_equal(&m, &b, sizeof(m));
		{
			uint32_t have = 0, run = 0;

			for (uint32_t i = 0; i < 32 && i < w; i++)
				have |= (uint32_t)b.occ[(b.base + i) % w] << i;
			while (run < w && b.occ[(b.base + run) % w])
				run++;
			assert_int_equal(vfgx_ro_run(have), run);
		}
	}
	/* the sweep must have exercised the rule, not skipped every batch */
	assert_true(quiet_batches > 1000);
	assert_int_equal(vfgx_ro_run(0xffffffffu), 32);
	assert_int_equal(vfgx_ro_run(0x7fffffffu), 31);
	assert_int_equal(vfgx_ro_run(0xfffffffeu), 0);
	/* at base with something held, or past the window: not quiet */
	{
		struct vfgx_ro_state s = { .base = 10, .held = 2 };

		assert_false(vfgx_ro_quiet(s, vfgx_ro_insert(s, w, 10), 10));
		assert_false(vfgx_ro_quiet(s, vfgx_ro_insert(s, w, 10 + w), 10 + w));
		assert_true(vfgx_ro_quiet(s, vfgx_ro_insert(s, w, 9 + w), 9 + w));
		assert_true(vfgx_ro_quiet(s, vfgx_ro_insert(s, w, 3), 3));
		s.held = 0;
		assert_false(vfgx_ro_quiet(s, vfgx_ro_insert(s, w, 10), 10));
	}
}

/* Every occupancy of an 8-slot window flushed step by step as both
 * engines do, against the model: the held slots delivered in order, the
 * empty ones between held ones counted as gaps, base left just after the
 * last held slot. */
static void test_ro_flush_all(void **state)
{
	const uint32_t w = 8;

	(void)state;
	for (uint32_t occ = 0; occ < 256; occ++) {
		uint64_t base = 1000, skipped = 0, gaps = 0, held = 0;
		uint32_t delivered[8], nd = 0, want_gaps = 0, last = 0, first = 8;

		for (uint32_t i = 0; i < w; i++)
			held += occ >> i & 1;
		for (uint32_t i = 0; i < w && held; i++) {
			uint32_t slot = vfgx_ro_slot(base, w);
			struct vfgx_ro_flush f =
				vfgx_ro_flush_step(skipped, occ >> slot & 1);

			gaps += f.gaps_now;
			skipped = f.skipped;
			if (f.deliver) {
				delivered[nd++] = (uint32_t)(base - 1000);
				held--;
			}
			base++;
		}
		base -= skipped;
		/* the model */
		for (uint32_t i = 0; i < w; i++) {
			if (occ >> i & 1) {
				last = i + 1;
				if (first == 8)
					first = i;
			}
		}
		for (uint32_t i = 0; i < last; i++)
			want_gaps += !(occ >> i & 1);
		assert_int_equal(gaps, want_gaps);
		assert_int_equal(base, 1000 + last);
		assert_int_equal(nd, __builtin_popcount(occ));
		for (uint32_t i = 0, j = 0; i < w; i++)
			if (occ >> i & 1)
				assert_int_equal(delivered[j++], i);
	}
}

/* ---- chunks --------------------------------------------------------------- */

static const struct vfgx_ck_conf seqconf = {
	.packets = 100, .in_flight = 4, .close_distance = 0,
	.payload_bytes = 256, .place = VFGX_CHUNK_BY_SEQ,
};

static void test_ck_index(void **state)
{
	struct vfgx_ck_conf c = seqconf;
	uint8_t body[16];
	uint64_t p = 0;

	(void)state;
	assert_int_equal(vfgx_ck_index(c, 12345, NULL, 0, &p), VFGX_STAGE_PASS);
	assert_int_equal(p, 12345);
	assert_int_equal(vfgx_ck_index(c, (1ull << 63) - 1, NULL, 0, &p), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_ck_index(c, 1ull << 63, NULL, 0, &p), VFGX_R_BAD_APP_HDR);
	assert_int_equal(vfgx_ck_index(c, UINT64_MAX, NULL, 0, &p), VFGX_R_BAD_APP_HDR);
	/* a 4-byte big-endian field at offset 2, step 8 */
	c.place = VFGX_CHUNK_BY_FIELD;
	c.field_offset = 2;
	c.field_size = 4;
	c.field_step = 8;
	memset(body, 0xee, sizeof(body));
	body[2] = 0x00;
	body[3] = 0x01;
	body[4] = 0x02;
	body[5] = 0x08; /* 0x00010208 = 66056 = 8 * 8257 */
	assert_int_equal(vfgx_ck_index(c, 7, body, 6, &p), VFGX_STAGE_PASS);
	assert_int_equal(p, 8257);
	/* the field one byte past the record */
	assert_int_equal(vfgx_ck_index(c, 7, body, 5, &p), VFGX_R_BAD_APP_HDR);
	/* off its step */
	body[5] = 0x09;
	assert_int_equal(vfgx_ck_index(c, 7, body, 16, &p), VFGX_R_BAD_APP_HDR);
	/* 8 bytes: the value's top bit set, step 1: beyond 2^63 */
	c.field_offset = 8;
	c.field_size = 8;
	c.field_step = 1;
	memset(body + 8, 0, 8);
	body[8] = 0x80;
	assert_int_equal(vfgx_ck_index(c, 7, body, 16, &p), VFGX_R_BAD_APP_HDR);
	/* ... step 2 brings it to 2^62 */
	c.field_step = 2;
	assert_int_equal(vfgx_ck_index(c, 7, body, 16, &p), VFGX_STAGE_PASS);
	assert_int_equal(p, 1ull << 62);
	body[15] = 0x01; /* odd: off step 2 */
	assert_int_equal(vfgx_ck_index(c, 7, body, 16, &p), VFGX_R_BAD_APP_HDR);
}

static struct vfgx_ck_place place(uint64_t head, uint64_t top, int open,
				  uint64_t seq, uint32_t len)
{
	struct vfgx_ck_stream st = { .head = head, .top = top, .open = open };

	return vfgx_ck_place(seqconf, st, seq, NULL, len);
}

static void test_ck_place(void **state)
{
	struct vfgx_ck_place d;

	(void)state;
	/* too big: out of range before anything else */
	d = place(0, 0, 1, 5, 257);
	assert_int_equal(d.verdict, VFGX_R_TOO_BIG);
	assert_true(d.out_of_range);
	assert_false(d.open);
	d = place(0, 0, 1, 5, 256);
	assert_int_equal(d.verdict, VFGX_STAGE_PASS);
	/* an index beyond 2^63: out of range, the stream not opened */
	d = place(0, 0, 0, 1ull << 63, 10);
	assert_int_equal(d.verdict, VFGX_R_BAD_APP_HDR);
	assert_true(d.out_of_range);
	assert_false(d.open);
	/* a first packet opens at its chunk, anywhere */
	d = place(0, 0, 0, 123456, 10);
	assert_int_equal(d.verdict, VFGX_STAGE_PASS);
	assert_true(d.open);
	assert_int_equal(d.p, 123456);
	assert_int_equal(d.n, 1234);
	assert_int_equal(d.k, 56);
	assert_int_equal(d.slot, 1234 % 4);
	assert_false(d.advance);
	/* late: a chunk before head, even just before */
	d = place(10, 12, 1, 999, 10);
	assert_int_equal(d.verdict, VFGX_R_LATE);
	assert_true(d.late);
	assert_false(d.out_of_range);
	d = place(10, 12, 1, 1000, 10);
	assert_int_equal(d.verdict, VFGX_STAGE_PASS);
	assert_int_equal(d.n, 10);
	assert_int_equal(d.k, 0);
	/* ring edge: head + in_flight - 1 fits, head + in_flight needs the
	 * head released (ring full) */
	d = place(10, 10, 1, 1399, 10);
	assert_false(d.advance);
	assert_int_equal(d.slot, 13 % 4);
	assert_int_equal(d.k, 99);
	d = place(10, 10, 1, 1400, 10);
	assert_true(d.advance);
	assert_int_equal(d.target, 11);
	assert_int_equal(d.slot, 14 % 4);
	/* a far jump: everything up to the ring's last place */
	d = place(10, 12, 1, 100ull * 1000000, 10);
	assert_true(d.advance);
	assert_int_equal(d.target, 1000000 - 3);
}

static void test_ck_dup_holds(void **state)
{
	(void)state;
	assert_int_equal(vfgx_ck_dup(0, 0), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_ck_dup(1, 0), VFGX_R_DUPLICATE);
	assert_int_equal(vfgx_ck_dup(1ull << 63, 63), VFGX_R_DUPLICATE);
	assert_int_equal(vfgx_ck_dup(1ull << 63, 127), VFGX_R_DUPLICATE);
	assert_int_equal(vfgx_ck_dup(~(1ull << 5), 69), VFGX_STAGE_PASS);
	assert_int_equal(vfgx_ck_dup(~0ull, 64), VFGX_R_DUPLICATE);
	assert_true(vfgx_ck_holds(1, 7, 7));
	assert_false(vfgx_ck_holds(1, 3, 7)); /* the slot holds an older chunk */
	assert_false(vfgx_ck_holds(0, 7, 7)); /* released already */
}

static void test_ck_release(void **state)
{
	struct vfgx_ck_release r;

	(void)state;
	/* complete: no missing, flags COMPLETE whatever the reason */
	r = vfgx_ck_release(seqconf, 1, 100, VFGX_CHUNK_BY_RING, 1);
	assert_false(r.skip);
	assert_int_equal(r.missing, 0);
	assert_int_equal(r.flags, VFGX_CHUNK_COMPLETE);
	/* one missing: closed by the reason */
	r = vfgx_ck_release(seqconf, 1, 99, VFGX_CHUNK_BY_TIMEOUT, 0);
	assert_int_equal(r.missing, 1);
	assert_int_equal(r.flags, VFGX_CHUNK_BY_TIMEOUT);
	assert_int_equal(r.gaps.now + r.gaps.pending, 0);
	/* no packet came: skipped, its packets gaps now or pending */
	r = vfgx_ck_release(seqconf, 0, 0, VFGX_CHUNK_BY_END, 1);
	assert_true(r.skip);
	assert_int_equal(r.gaps.now, 100);
	assert_int_equal(r.gaps.pending, 0);
	r = vfgx_ck_release(seqconf, 0, 0, VFGX_CHUNK_BY_END, 0);
	assert_int_equal(r.gaps.now, 0);
	assert_int_equal(r.gaps.pending, 100);
}

/* The gaps of a chunk's present bitmap word by word, as both engines sum
 * them (the CPU word after word, the GPU a word per lane), against a bit
 * by bit count, for words at and around every edge. */
static void test_ck_gaps_words(void **state)
{
	static const uint64_t words[] = {
		0, 1, 1ull << 63, ~0ull, 0x5555555555555555ull,
		0x8000000000000001ull, 0x00000000ffffffffull, 0x0123456789abcdefull,
	};
	const uint32_t nw = sizeof(words) / sizeof(words[0]);

	(void)state;
	assert_int_equal(vfgx_ck_gaps_from(200, 250), 50);
	assert_int_equal(vfgx_ck_gaps_from(200, 200), 0);
	assert_int_equal(vfgx_ck_gaps_from(300, 250), 0);
	assert_int_equal(vfgx_ck_word_hi(1, 0), 0);
	assert_int_equal(vfgx_ck_word_hi(1ull << 63, 0), 63);
	assert_int_equal(vfgx_ck_word_hi(1, 2), 128);
	assert_int_equal(vfgx_ck_word_hi(~0ull, 1), 127);
	for (uint32_t a = 0; a < nw; a++) {
		for (uint32_t b = 0; b < nw; b++) {
			uint64_t pr[2] = { words[a], words[b] };

			for (uint32_t from = 0; from <= 128; from++) {
				for (uint32_t hi = 0; hi <= 128; hi++) {
					uint64_t want = 0, got = 0;

					for (uint32_t i = from; i < hi; i++)
						want += !(pr[i / 64] >> (i % 64) & 1);
					for (uint32_t w = 0; w < 2; w++)
						got += vfgx_ck_word_gaps(pr[w], w, from, hi);
					assert_int_equal(got, want);
				}
			}
		}
	}
	{
		struct vfgx_ck_gaps g = vfgx_ck_gaps_split(1, 7);

		assert_int_equal(g.now, 7);
		assert_int_equal(g.pending, 0);
		g = vfgx_ck_gaps_split(0, 7);
		assert_int_equal(g.now, 0);
		assert_int_equal(g.pending, 7);
	}
}

static void test_ck_advance(void **state)
{
	struct vfgx_ck_advance a;

	(void)state;
	a = vfgx_ck_advance(seqconf, 10, 13, 1);
	assert_int_equal(a.jump.steps, 3);
	assert_int_equal(a.jump.skipped, 0);
	assert_int_equal(a.gaps, 0);
	a = vfgx_ck_advance(seqconf, 10, 14, 1);
	assert_int_equal(a.jump.steps, 4);
	assert_int_equal(a.jump.skipped, 0);
	/* past the ring: 4 released, the rest skipped whole */
	a = vfgx_ck_advance(seqconf, 10, 20, 1);
	assert_int_equal(a.jump.steps, 4);
	assert_int_equal(a.jump.skipped, 6);
	assert_int_equal(a.gaps, 600);
	a = vfgx_ck_advance(seqconf, 10, 20, 0);
	assert_int_equal(a.jump.skipped, 6);
	assert_int_equal(a.gaps, 0);
}

static struct vfgx_ck_settle settle(uint32_t cd, uint64_t head, uint64_t top,
				    int complete)
{
	struct vfgx_ck_conf c = seqconf;
	struct vfgx_ck_stream st = { .head = head, .top = top, .open = 1 };

	c.close_distance = cd;
	return vfgx_ck_settle(c, st, complete);
}

static void test_ck_settle(void **state)
{
	struct vfgx_ck_settle d;

	(void)state;
	d = settle(0, 5, 7, 1);
	assert_int_equal(d.act, VFGX_CK_RELEASE);
	assert_true(d.later_known);
	d = settle(0, 7, 7, 1);
	assert_int_equal(d.act, VFGX_CK_RELEASE);
	assert_false(d.later_known);
	/* head past top (everything released): nothing */
	assert_int_equal(settle(0, 8, 7, 1).act, VFGX_CK_SETTLED);
	assert_int_equal(settle(0, 5, 7, 0).act, VFGX_CK_SETTLED);
	/* close_distance 2: top two ahead of head closes the head */
	d = settle(2, 5, 7, 0);
	assert_int_equal(d.act, VFGX_CK_CLOSE);
	assert_int_equal(d.target, 6);
	assert_int_equal(settle(2, 5, 6, 0).act, VFGX_CK_SETTLED);
	d = settle(2, 5, 17, 0);
	assert_int_equal(d.target, 16);
	/* a complete head is released before any close */
	assert_int_equal(settle(2, 5, 17, 1).act, VFGX_CK_RELEASE);
	assert_int_equal(settle(2, 9, 7, 0).act, VFGX_CK_SETTLED);
}

static void test_ck_tick_flush(void **state)
{
	struct vfgx_ck_stream st = { .head = 10, .top = 13, .open = 1 };
	struct vfgx_ck_stream closed = { .head = 10, .top = 13, .open = 0 };
	const uint64_t ms = 1000000;

	(void)state;
	/* chunk 12 holds packets since t=1 s; timeout 5 ms */
	assert_int_equal(vfgx_ck_tick(st, 12, 1000 * ms, 1005 * ms - 1, 5 * ms), 0);
	assert_int_equal(vfgx_ck_tick(st, 12, 1000 * ms, 1005 * ms, 5 * ms), 13);
	assert_int_equal(vfgx_ck_tick(st, 13, 1000 * ms, 2000 * ms, 5 * ms), 14);
	/* no chunk with packets, no timeout, a stream never opened */
	assert_int_equal(vfgx_ck_tick(st, 14, 0, 2000 * ms, 5 * ms), 0);
	assert_int_equal(vfgx_ck_tick(st, 12, 0, 2000 * ms, 0), 0);
	assert_int_equal(vfgx_ck_tick(closed, 12, 0, 2000 * ms, 5 * ms), 0);
	/* everything released (head past top) */
	st.head = 14;
	assert_int_equal(vfgx_ck_tick(st, 14, 0, 2000 * ms, 5 * ms), 0);
	/* end of input: head..top, at most a ring */
	st.head = 10;
	assert_int_equal(vfgx_ck_flush(seqconf, st), 4);
	st.top = 11;
	assert_int_equal(vfgx_ck_flush(seqconf, st), 2);
	st.top = 10;
	assert_int_equal(vfgx_ck_flush(seqconf, st), 1);
	st.top = 100;
	assert_int_equal(vfgx_ck_flush(seqconf, st), 4);
	st.head = 101;
	assert_int_equal(vfgx_ck_flush(seqconf, st), 0);
	assert_int_equal(vfgx_ck_flush(seqconf, closed), 0);
}

/* vfgx_seq_extend_steps against the calls of vfgx_seq_extend one by one:
 * the same extended sequences and end state, or 0 and nothing changed;
 * batches of steps of 1 (a run), of 0 and 1 (a SPEAD heap's packets, then
 * the next heap's), and of any size below seq_max_dropout; every sequence
 * width the profiles use, around wraparound, after a jump. */
static void test_seq_steps(void **state)
{
	static const uint32_t bits[] = { 4, 8, 16, 32, 48, 0 };
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (size_t b = 0; b < sizeof(bits) / sizeof(bits[0]); b++) {
		for (int t = 0; t < 4000; t++) {
			struct vfgx_format f;
			struct vfgx_seq_state a, c;
			struct vfgx_seq_run r;
			uint64_t mask = vfgx_fmt_mask(bits[b]), v[32], cum[32], total = 0, e0 = 0, e = 0;
			uint32_t n, kind;

			memset(&f, 0, sizeof(f));
			f.seq_bits = bits[b];
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			f.seq_max_dropout = bits[b] == 4 ? 1 + (rnd >> 61) : 1 + (rnd >> 50) % 3000;
			f.seq_max_misorder = bits[b] == 4 ? 2 : 100;
			r = vfgx_seq_run_of(&f);
			memset(&a, 0, sizeof(a));
			a.started = (rnd >> 7) % 8 != 0;
			a.max_ext = (rnd >> 11) % 3 == 0 ? mask + 1 + ((rnd >> 20) & mask) : (rnd >> 9);
			a.have_bad = (rnd >> 13) % 4 == 0;
			a.bad_next = rnd >> 17;
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			v[0] = ((rnd >> 5) % 3 == 0 ? (a.max_ext + 1 + (rnd >> 40) % 4) : rnd >> 8) &
			       mask;
			n = 1 + (uint32_t)(rnd >> 59);
			cum[0] = 0;
			kind = (uint32_t)(rnd >> 3) % 3;
			for (uint32_t i = 1; i < n; i++) {
				uint64_t st;

				rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
				/* what the caller passes: each below seq_max_dropout
				 * (and a turn of the counter) */
				st = ((kind == 0 ? 1 : kind == 1 ? (rnd >> 62) & 1 : rnd >> 20) %
				      f.seq_max_dropout) & mask;
				v[i] = (v[i - 1] + st) & mask;
				assert_int_equal(vfgx_seq_step(r, v[i - 1], v[i]), st);
				total += st;
				cum[i] = total;
			}
			c = a;
			if (!vfgx_seq_extend_steps(r, &c, v[0], total, &e0)) {
				assert_memory_equal(&a, &c, sizeof(a));
				/* the first is not in order: not started, or
				 * not a step forward below seq_max_dropout */
				assert_true(!a.started ||
					    vfgx_seq_step(r, a.max_ext, v[0]) >= f.seq_max_dropout);
				continue;
			}
			for (uint32_t i = 0; i < n; i++) {
				assert_int_equal(vfgx_seq_extend(&f, &a, v[i], &e), VFGX_FD_OK);
				assert_int_equal(e, e0 + cum[i]);
			}
			assert_int_equal(a.max_ext, c.max_ext);
			assert_int_equal(a.max_ext, e0 + total);
			assert_int_equal(a.started, c.started);
			assert_int_equal(a.have_bad, c.have_bad);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jump),
		cmocka_unit_test(test_seq_steps),
		cmocka_unit_test(test_deliver),
		cmocka_unit_test(test_ro_edges),
		cmocka_unit_test(test_ro_sweep),
		cmocka_unit_test(test_ro_store_advance),
		cmocka_unit_test(test_ro_flush_all),
		cmocka_unit_test(test_ro_quiet_batch),
		cmocka_unit_test(test_ck_index),
		cmocka_unit_test(test_ck_place),
		cmocka_unit_test(test_ck_dup_holds),
		cmocka_unit_test(test_ck_release),
		cmocka_unit_test(test_ck_gaps_words),
		cmocka_unit_test(test_ck_advance),
		cmocka_unit_test(test_ck_settle),
		cmocka_unit_test(test_ck_tick_flush),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
