/* ring.c - the exposed message ring's producer and consumer over an
 * abstract one-sided transport (RDMA WRITE/READ, or plain memory in one
 * process); the record format and ordering rules are in vfgx/eba.h. */
#include <errno.h>
#include <string.h>

#include <vfgx/eba.h>

/* ---- check value ------------------------------------------------------ */

#define K1 0x9E3779B185EBCA87ull
#define K2 0xC2B2AE3D27D4EB4Full
#define K3 0x165667B19E3779F9ull

static inline uint64_t rotl(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint64_t lane(uint64_t acc, uint64_t w)
{
	return rotl(acc + w * K2, 31) * K1;
}

/* Eight independent multiply-rotate lanes over 64-byte blocks (enough
 * in flight to hide the multiplies' latency), the tail folded in by words,
 * then a final avalanche; len and seq key it, so a header from another
 * lap or a torn header word does not match. */
uint64_t vfgx_ring_check(uint32_t len, uint32_t seq, const void *payload)
{
	const uint8_t *p = payload;
	uint64_t n = len == VFGX_RING_WRAP ? 0 : len;
	uint64_t key = vfgx_ring_hdr_pack(len, seq);
	uint64_t a[8], h, i = 0;

	for (int j = 0; j < 8; j++)
		a[j] = key + (uint64_t)(j + 1) * K1;
	for (; i + 64 <= n; i += 64)
		for (int j = 0; j < 8; j++)
			a[j] = lane(a[j], ld64(p + i + 8 * j));
	h = key * K3;
	for (int j = 0; j < 8; j++)
		h += rotl(a[j], 1 + 7 * j);
	for (; i + 8 <= n; i += 8)
		h = rotl(h ^ lane(0, ld64(p + i)), 27) * K1 + K3;
	if (i < n) {
		uint64_t w = 0;

		memcpy(&w, p + i, n - i);
		h = rotl(h ^ lane(0, w), 27) * K1 + K3;
	}
	h ^= h >> 33;
	h *= K2;
	h ^= h >> 29;
	h *= K3;
	return h ^ h >> 32;
}

void vfgx_ring_hdr_make(uint8_t hdr[VFGX_RING_HDR], uint32_t len, uint32_t seq,
			const void *payload)
{
	uint64_t w = vfgx_ring_hdr_pack(len, seq);
	uint64_t check = vfgx_ring_check(len, seq, payload);

	memcpy(hdr, &w, 8);
	memcpy(hdr + 8, &check, 8);
}

/* ---- producer --------------------------------------------------------- */

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int vfgx_ring_producer_init(struct vfgx_ring_producer *p,
			    const struct vfgx_ring_transport *tr,
			    uint64_t data_off, uint64_t size,
			    uint64_t state_off)
{
	if (!pow2(size) || size < VFGX_RING_MIN || data_off % 8 ||
	    state_off % 8 || data_off + size < data_off)
		return -EINVAL;
	if (state_off + 8 > data_off && state_off < data_off + size)
		return -EINVAL; /* the head word would be overwritten by records */
	memset(p, 0, sizeof(*p));
	p->tr = *tr;
	p->size = size;
	p->data_off = data_off;
	p->state_off = state_off;
	p->seq = 1;
	return 0;
}

static int tr_write(struct vfgx_ring_producer *p, uint64_t off,
		    const void *src, uint32_t len, bool wake)
{
	int ret;

	while ((ret = p->tr.write(p->tr.user, p->data_off + off, src, len,
				  wake)) == -EAGAIN)
		;
	return ret;
}

static int read_start(struct vfgx_ring_producer *p)
{
	int ret;

	while ((ret = p->tr.read_start(p->tr.user, p->state_off)) == -EAGAIN)
		;
	if (ret)
		return ret;
	p->read_busy = true;
	return 0;
}

/* Pick up the head word read in flight: 1 when it arrived (cached head
 * updated), 0 while pending (never with wait), or -errno.  A word outside
 * [cached head, tail] is read again: an RDMA READ racing the consumer's
 * store of the word can return it torn where the responder copies it byte
 * by byte (soft-RoCE's memcpy); one still outside after three reads is a
 * corrupt ring (-EPROTO). */
static int read_finish(struct vfgx_ring_producer *p, bool wait)
{
	for (int tries = 0;; tries++) {
		uint8_t b[8];
		uint64_t head = 0;
		int ret = p->tr.read_poll(p->tr.user, b, wait);

		if (ret <= 0)
			return ret;
		p->read_busy = false;
		p->state_reads++;
		for (int i = 7; i >= 0; i--)
			head = head << 8 | b[i];
		if (head <= p->tail && head >= p->cached_head) {
			p->cached_head = head;
			return 1;
		}
		if (tries == 3)
			return -EPROTO;
		ret = read_start(p);
		if (ret)
			return ret;
		wait = true;
	}
}

int vfgx_ring_send(struct vfgx_ring_producer *p, const void *msg, uint32_t len,
		   bool wake)
{
	uint64_t rec = vfgx_ring_rec_size(len);
	uint64_t pos = p->tail & (p->size - 1);
	uint64_t gap = pos + rec > p->size ? p->size - pos : 0;
	uint8_t hdr[VFGX_RING_HDR];
	int ret;

	if (len > vfgx_ring_max_payload(p->size))
		return -EMSGSIZE;
	if (p->read_busy) {
		ret = read_finish(p, false);
		if (ret < 0)
			return ret;
	}
	if (vfgx_ring_credit(p) < gap + rec) {
		if (!p->read_busy) {
			ret = read_start(p);
			if (ret)
				return ret;
		}
		ret = read_finish(p, true);
		if (ret < 0)
			return ret;
		if (vfgx_ring_credit(p) < gap + rec) {
			p->full++;
			return -EAGAIN;
		}
	}
	if (gap) {
		/* a wrap marker is a header alone; gap >= 16 because
		 * records and the ring size are multiples of 16 */
		vfgx_ring_hdr_make(hdr, VFGX_RING_WRAP, p->seq, NULL);
		ret = tr_write(p, pos, hdr, VFGX_RING_HDR, false);
		if (ret)
			return ret;
		p->tail += gap;
		pos = 0;
	}
	/* the check value, not the order the writes land in, tells the
	 * consumer the record is complete */
	vfgx_ring_hdr_make(hdr, len, p->seq, msg);
	if (len && p->tr.write_rec) {
		while ((ret = p->tr.write_rec(p->tr.user, p->data_off + pos, msg,
					      len, hdr, wake)) == -EAGAIN)
			;
	} else {
		ret = len ? tr_write(p, pos + VFGX_RING_HDR, msg, len, false) : 0;
		if (!ret)
			ret = tr_write(p, pos, hdr, VFGX_RING_HDR, wake);
	}
	if (ret)
		return ret;
	p->tail += rec;
	p->seq++;
	/* below half credit: ask for the head now, pick the answer up later */
	if (!p->read_busy && vfgx_ring_credit(p) < p->size / 2)
		return read_start(p);
	return 0;
}

int vfgx_ring_refresh(struct vfgx_ring_producer *p)
{
	int ret;

	if (!p->read_busy) {
		ret = read_start(p);
		if (ret)
			return ret;
	}
	ret = read_finish(p, true);
	return ret < 0 ? ret : 0;
}

int vfgx_ring_consumer_init(struct vfgx_ring_consumer *c, void *data,
			    uint64_t size, _Atomic uint64_t *state)
{
	if (!pow2(size) || size < VFGX_RING_MIN || (uintptr_t)data % 8 ||
	    (uintptr_t)state % 8)
		return -EINVAL;
	memset(data, 0, size);
	atomic_store_explicit(state, 0, memory_order_release);
	c->data = data;
	c->state = state;
	c->size = size;
	c->head = 0;
	c->seq = 1;
	c->ready = false;
	c->torn_ns = VFGX_RING_TORN_NS;
	c->seen_ns = 0;
	c->not_yet = 0;
	c->torn = 0;
	c->err = 0;
	return 0;
}

/* The header at head names the expected seq but does not check (yet):
 * 0 to poll again, or err once it has stayed so for torn_ns. */
static int not_yet(struct vfgx_ring_consumer *c, int err)
{
	uint64_t now = vfgx_now_ns();

	c->not_yet++;
	if (!c->seen_ns) {
		c->seen_ns = now;
		return 0;
	}
	if (now - c->seen_ns < c->torn_ns)
		return 0;
	if (err == -EBADMSG)
		c->torn++;
	c->err = err; /* the ring stops here: nothing after it is trusted */
	return err;
}

int vfgx_ring_peek(struct vfgx_ring_consumer *c, const void **msg,
		   uint32_t *len)
{
	if (c->err)
		return c->err;
	for (int lap = 0; lap < 2; lap++) {
		uint64_t pos = c->head & (c->size - 1);
		_Atomic uint64_t *hp = (_Atomic uint64_t *)(c->data + pos);
		uint64_t hdr = atomic_load_explicit(hp, memory_order_acquire);
		uint32_t l = (uint32_t)hdr, seq = (uint32_t)(hdr >> 32);
		const uint8_t *payload = c->data + pos + VFGX_RING_HDR;
		uint64_t check;

		if (seq != c->seq)
			return 0;
		if (!c->ready) {
			if (l != VFGX_RING_WRAP &&
			    pos + vfgx_ring_rec_size(l) > c->size)
				return not_yet(c, -EPROTO);
			memcpy(&check, c->data + pos + 8, 8);
			if (check != vfgx_ring_check(l, seq, payload))
				return not_yet(c, -EBADMSG);
			c->seen_ns = 0;
		}
		if (l == VFGX_RING_WRAP) {
			if (pos == 0)
				return -EPROTO;
			c->head += c->size - pos;
			continue;
		}
		c->ready = true;
		*msg = payload;
		*len = l;
		return 1;
	}
	return -EPROTO;
}

void vfgx_ring_release(struct vfgx_ring_consumer *c)
{
	uint64_t pos = c->head & (c->size - 1);
	uint64_t hdr;

	memcpy(&hdr, c->data + pos, 8);
	c->head += vfgx_ring_rec_size((uint32_t)hdr);
	c->seq++;
	c->ready = false;
	/* all reads of the record happen before the producer may reuse it */
	atomic_store_explicit(c->state, c->head, memory_order_release);
}
