/* test_eba_ring.c - the exposed message ring over a plain-memory
 * transport in one process: record format, credit and head-word reads,
 * wrap markers, a full ring refused (never overwritten), two threads
 * exchanging 100,000 messages with content, order and count checked, and
 * the same through a transport's one-submission record write (write_rec). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/eba.h>

/* The "exposed buffer": data area then a 64-byte state line. */
struct membuf {
	uint8_t *base;
	uint64_t size;     /* data bytes */
	uint64_t writes, reads, recs;
	uint64_t word; /* the head word as read_start saw it */
	bool busy;
	bool rec; /* the transport has write_rec */
};

static int mem_write(void *user, uint64_t off, const void *src, uint32_t len,
		     bool wake)
{
	struct membuf *m = user;

	(void)wake;
	assert_true(off + len <= m->size); /* never outside the data area */
	if (len == 8 && off % 8 == 0) {
		uint64_t v;

		memcpy(&v, src, 8);
		atomic_store_explicit((_Atomic uint64_t *)(m->base + off), v,
				      memory_order_release);
	} else {
		memcpy(m->base + off, src, len);
	}
	m->writes++;
	return 0;
}

/* payload first, header last (release), as an RDMA post list would */
static int mem_write_rec(void *user, uint64_t off, const void *payload,
			 uint32_t len, const void *hdr, bool wake)
{
	struct membuf *m = user;
	uint64_t v;

	(void)wake;
	assert_true(len > 0); /* empty records go through write() */
	assert_true(off % 8 == 0 && off + VFGX_RING_HDR + len <= m->size);
	memcpy(&v, hdr, 8);
	assert_int_equal((uint32_t)v, len); /* the header describes this payload */
	memcpy(m->base + off + VFGX_RING_HDR, payload, len);
	atomic_store_explicit((_Atomic uint64_t *)(m->base + off), v,
			      memory_order_release);
	m->recs++;
	return 0;
}

/* read_start takes the word at once; read_poll hands it over, so the
 * answer is as old as the start, like an RDMA READ in flight */
static int mem_read_start(void *user, uint64_t off)
{
	struct membuf *m = user;

	assert_int_equal(off, m->size);
	assert_false(m->busy); /* at most one read in flight */
	m->word = atomic_load_explicit((_Atomic uint64_t *)(m->base + off),
				       memory_order_acquire);
	m->busy = true;
	m->reads++;
	return 0;
}

static int mem_read_poll(void *user, void *dst, bool wait)
{
	struct membuf *m = user;

	(void)wait;
	assert_true(m->busy);
	memcpy(dst, &m->word, 8);
	m->busy = false;
	return 1;
}

static void setup_ring(struct membuf *m, uint64_t size,
		       struct vfgx_ring_producer *p,
		       struct vfgx_ring_consumer *c)
{
	struct vfgx_ring_transport tr = { mem_write, mem_read_start, mem_read_poll, m,
					  m->rec ? mem_write_rec : NULL };

	m->base = aligned_alloc(64, size + 64);
	assert_non_null(m->base);
	m->size = size;
	m->writes = m->reads = m->recs = 0;
	m->busy = false;
	assert_int_equal(vfgx_ring_consumer_init(c, m->base, size,
						 (_Atomic uint64_t *)(m->base + size)), 0);
	assert_int_equal(vfgx_ring_producer_init(p, &tr, 0, size, size), 0);
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Length and content of message number seq (both sides compute it). */
static uint32_t msg_len(uint32_t seq, uint32_t max)
{
	uint64_t s = seq * 0x9E3779B97F4A7C15ull + 1;
	uint64_t r = xs(&s);

	/* mostly small, one in 64 up to max */
	return (uint32_t)(r % 64 ? 1 + (r >> 8) % 4096 : 1 + (r >> 8) % max);
}

static void msg_fill(uint8_t *b, uint32_t len, uint32_t seq)
{
	uint64_t s = seq * 0xD1B54A32D192ED03ull + 7;

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = xs(&s);

		memcpy(b + i, &v, len - i < 8 ? len - i : 8);
	}
}

static void test_format(void **state)
{
	struct vfgx_ring_transport tr = { mem_write, mem_read_start, mem_read_poll, NULL };
	struct vfgx_ring_producer p;
	uint8_t buf[128] __attribute__((aligned(8)));
	_Atomic uint64_t w;
	struct vfgx_ring_consumer c;

	(void)state;
	assert_int_equal(vfgx_ring_rec_size(0), 8);
	assert_int_equal(vfgx_ring_rec_size(1), 16);
	assert_int_equal(vfgx_ring_rec_size(8), 16);
	assert_int_equal(vfgx_ring_rec_size(9), 24);
	assert_int_equal(vfgx_ring_max_payload(1 << 20), (1 << 19) - 8);
	assert_int_equal(vfgx_ring_hdr_pack(5, 2), 0x200000005ull);
	assert_int_equal(vfgx_ring_producer_init(&p, &tr, 0, 100, 128), -EINVAL);
	assert_int_equal(vfgx_ring_producer_init(&p, &tr, 0, 32, 128), -EINVAL);
	/* head word inside the data area would be overwritten */
	assert_int_equal(vfgx_ring_producer_init(&p, &tr, 0, 128, 64), -EINVAL);
	assert_int_equal(vfgx_ring_producer_init(&p, &tr, 64, 128, 60), -EINVAL);
	assert_int_equal(vfgx_ring_producer_init(&p, &tr, 64, 128, 0), 0);
	assert_int_equal(vfgx_ring_credit(&p), 128);
	assert_int_equal(vfgx_ring_consumer_init(&c, buf, 100, &w), -EINVAL);
	assert_int_equal(vfgx_ring_consumer_init(&c, buf, 128, &w), 0);
}

static void test_full_and_wrap(void **state)
{
	struct membuf m = { 0 };
	struct vfgx_ring_producer p;
	struct vfgx_ring_consumer c;
	uint8_t msg[512], *payload;
	const void *got;
	uint32_t len, sent = 0, recv = 0;

	(void)state;
	setup_ring(&m, 1024, &p, &c);
	assert_int_equal(vfgx_ring_send(&p, msg, 505, false), -EMSGSIZE);
	/* 100-byte payloads are 112-byte records: 9 fit in 1024 */
	for (;;) {
		memset(msg, (int)sent, 100);
		int ret = vfgx_ring_send(&p, msg, 100, false);

		if (ret == -EAGAIN)
			break;
		assert_int_equal(ret, 0);
		sent++;
		/* no read while at least half the ring is free; the 5th
		 * record leaves 464 bytes: a read starts, nobody waits */
		if (sent == 4)
			assert_int_equal(m.reads, 0);
		if (sent == 5) {
			assert_int_equal(m.reads, 1);
			assert_true(p.read_busy);
			assert_int_equal(p.state_reads, 0);
		}
	}
	assert_int_equal(sent, 9);
	assert_int_equal(p.full, 1);
	/* below half credit one read per send (sends 5..9), picked up by the
	 * next send; the 10th found no room and waited for its own read */
	assert_int_equal(m.reads, 6);
	assert_int_equal(p.state_reads, 6);
	assert_false(p.read_busy);
	/* refused again without the consumer moving: nothing overwritten */
	assert_int_equal(vfgx_ring_send(&p, msg, 9, false), -EAGAIN);
	assert_int_equal(vfgx_ring_peek(&c, &got, &len), 1);
	assert_int_equal(len, 100);
	assert_int_equal(((const uint8_t *)got)[0], 0);
	/* in place: the payload pointer is inside the exposed buffer */
	assert_ptr_equal(got, m.base + 8);
	vfgx_ring_release(&c);
	recv++;
	assert_int_equal(atomic_load((_Atomic uint64_t *)(m.base + 1024)), 112);
	/* tail is at 1008: a 100-byte record needs a wrap marker (16 bytes)
	 * plus 112, exactly what is free now */
	memset(msg, 0xAB, 100);
	assert_int_equal(vfgx_ring_send(&p, msg, 100, false), 0);
	sent++;
	/* the refused send and this one each waited for one read; the
	 * ring is full again, so another read is in flight */
	assert_int_equal(p.state_reads, 8);
	assert_true(p.read_busy);
	assert_int_equal(vfgx_ring_send(&p, msg, 1, false), -EAGAIN);
	while (recv < sent) {
		assert_int_equal(vfgx_ring_peek(&c, &got, &len), 1);
		assert_int_equal(len, 100);
		payload = (uint8_t *)got;
		assert_int_equal(payload[99], recv < 9 ? recv : 0xAB);
		vfgx_ring_release(&c);
		recv++;
	}
	/* the last one wrapped to offset 0 */
	assert_ptr_equal(payload, m.base + 8);
	assert_int_equal(vfgx_ring_peek(&c, &got, &len), 0);
	/* empty message keeps its boundary */
	assert_int_equal(vfgx_ring_send(&p, msg, 0, false), 0);
	assert_int_equal(vfgx_ring_peek(&c, &got, &len), 1);
	assert_int_equal(len, 0);
	vfgx_ring_release(&c);
	free(m.base);
}

static void test_corrupt_header(void **state)
{
	struct membuf m = { 0 };
	struct vfgx_ring_producer p;
	struct vfgx_ring_consumer c;
	const void *got;
	uint32_t len;
	uint64_t hdr = vfgx_ring_hdr_pack(4096, 1);

	(void)state;
	setup_ring(&m, 1024, &p, &c);
	memcpy(m.base, &hdr, 8);
	assert_int_equal(vfgx_ring_peek(&c, &got, &len), -EPROTO);
	/* a stale header (wrong seq) is not a record */
	hdr = vfgx_ring_hdr_pack(4, 7);
	memcpy(m.base, &hdr, 8);
	assert_int_equal(vfgx_ring_peek(&c, &got, &len), 0);
	/* head word claiming more than was produced */
	atomic_store((_Atomic uint64_t *)(m.base + 1024), 4096);
	p.tail = 1016;
	p.cached_head = 0;
	assert_int_equal(vfgx_ring_send(&p, "x", 1, false), -EPROTO);
	free(m.base);
}

struct xfer {
	struct membuf m;
	struct vfgx_ring_producer p;
	struct vfgx_ring_consumer c;
	uint32_t count, max;
	_Atomic int producer_blocked;
	bool slow_start;
	uint64_t bad;
};

static void *producer(void *arg)
{
	struct xfer *x = arg;
	uint8_t *buf = malloc(x->max);

	for (uint32_t i = 1; i <= x->count; i++) {
		uint32_t len = msg_len(i, x->max);
		int ret;

		msg_fill(buf, len, i);
		while ((ret = vfgx_ring_send(&x->p, buf, len, false)) == -EAGAIN)
			atomic_store(&x->producer_blocked, 1);
		if (ret) {
			x->bad++;
			break;
		}
	}
	free(buf);
	return NULL;
}

static void run_xfer(uint32_t count, uint32_t max, uint64_t ring, bool slow,
		     bool rec)
{
	struct xfer *x = calloc(1, sizeof(*x));
	uint8_t *want = malloc(max);
	pthread_t th;
	uint32_t got = 0;

	x->m.rec = rec;
	setup_ring(&x->m, ring, &x->p, &x->c);
	x->count = count;
	x->max = max;
	assert_int_equal(pthread_create(&th, NULL, producer, x), 0);
	if (slow) /* consume nothing until the producer has hit a full ring */
		while (!atomic_load(&x->producer_blocked))
			;
	while (got < count) {
		const void *msg;
		uint32_t len;
		int ret = vfgx_ring_peek(&x->c, &msg, &len);

		assert_true(ret >= 0);
		if (!ret)
			continue;
		got++;
		assert_int_equal(len, msg_len(got, max)); /* order and boundary */
		msg_fill(want, len, got);
		assert_memory_equal(msg, want, len);      /* integrity */
		vfgx_ring_release(&x->c);
	}
	pthread_join(th, NULL);
	assert_int_equal(x->bad, 0);
	assert_int_equal(vfgx_ring_peek(&x->c, &(const void *){ 0 }, &(uint32_t){ 0 }), 0);
	assert_int_equal(got, count);
	if (slow)
		assert_true(x->p.full > 0);
	if (rec) /* one submission per record; write() only for wrap markers */
		assert_int_equal(x->m.recs, count);
	else
		assert_int_equal(x->m.recs, 0);
	assert_true(x->m.writes >= (rec ? 0 : 2ull * count));
	free(x->m.base);
	free(x);
	free(want);
}

static void test_threads_100k(void **state)
{
	(void)state;
	run_xfer(100000, 64 << 10, 1 << 20, false, false);
}

static void test_threads_100k_rec(void **state)
{
	(void)state;
	run_xfer(100000, 64 << 10, 1 << 20, false, true);
}

static void test_slow_consumer(void **state)
{
	(void)state;
	run_xfer(2000, 1 << 20, 4 << 20, true, false);
	run_xfer(2000, 1 << 20, 4 << 20, true, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_full_and_wrap),
		cmocka_unit_test(test_corrupt_header),
		cmocka_unit_test(test_threads_100k),
		cmocka_unit_test(test_threads_100k_rec),
		cmocka_unit_test(test_slow_consumer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
