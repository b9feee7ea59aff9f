/* pipeline_work.c - traffic and floor for `vfgx bench pipeline`
 * (pipeline_work.h). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline_work.h"

struct entry {
	uint32_t stream;
	uint64_t seq;
};

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: a fixed sequence, so every run offers the same traffic */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

size_t work_llc_bytes(void)
{
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

	return l3 > 0 ? (size_t)l3 : l2 > 0 ? (size_t)l2 : 0;
}

/* Arrival order with impairments; counts what the pipeline must see. */
static struct entry *make_order(struct work *w, uint64_t n)
{
	struct entry *e = malloc(sizeof(*e) * n);
	uint64_t next[WORK_STREAMS] = { 0 }, maxseq[WORK_STREAMS] = { 0 };
	uint64_t rng = 0x9E3779B97F4A7C15ull, i = 0, k = 0, pend_at = 0;
	struct entry pend = { 0 };
	bool have_pend = false;

	if (!e)
		return NULL;
	w->unique = w->lost = w->dups = w->reordered = 0;
	while (i < n) {
		uint32_t s = (uint32_t)(k++ % WORK_STREAMS);
		uint64_t r = rng_next(&rng) % 1000;

		if (have_pend && i >= pend_at) {
			e[i++] = pend;
			w->dups++;
			have_pend = false;
			continue;
		}
		/* the first frames of each stream are clean: windows start at 0 */
		if (i > 64 && r < 10) {
			next[s]++; /* lost */
			continue;
		}
		e[i] = (struct entry){ s, next[s]++ };
		maxseq[s] = e[i].seq;
		w->unique++;
		if (i > 64 && r >= 10 && r < 15 && !have_pend) {
			pend = e[i];
			pend_at = i + 1 + rng_next(&rng) % 4;
			have_pend = true;
		}
		i++;
	}
	/* swaps 1..16 places apart: at most 2 frames of a stream apart, well
	 * inside the reorder window */
	for (i = 65; i + 16 < n; i++) {
		if (rng_next(&rng) % 100 == 0) {
			uint64_t j = i + 1 + rng_next(&rng) % 16;
			struct entry t = e[i];

			e[i] = e[j];
			e[j] = t;
			w->reordered++;
		}
	}
	/* gaps the reorder stage counts: sequences below a stream's highest
	 * that never arrived */
	w->lost = 0;
	for (uint32_t s = 0; s < WORK_STREAMS; s++)
		w->lost += maxseq[s] + 1;
	w->lost -= w->unique;
	return e;
}

int work_build(struct work *w, uint32_t size, size_t ws_bytes)
{
	struct vfgx_pkt_spec sp = {
		.src_ip = 0xC6120001, .dst_ip = 0xC6120002, .src_port = 4000,
		.dst_port = WORK_PORT, .frame_len = size, .udp_csum = true,
	};
	struct entry *e;

	memset(w, 0, sizeof(*w));
	w->size = size;
	w->stride = (size + 63) & ~63u;
	w->n = ws_bytes / (w->stride + sizeof(struct vfgx_pkt));
	if (w->n < 1024)
		w->n = 1024;
	w->bytes = w->n * (w->stride + sizeof(struct vfgx_pkt));
	w->mem = aligned_alloc(64, w->n * w->stride);
	w->pkts = calloc(w->n, sizeof(*w->pkts));
	e = make_order(w, w->n);
	if (!w->mem || !w->pkts || !e) {
		free(e);
		work_free(w);
		return -1;
	}
	for (uint64_t i = 0; i < w->n; i++) {
		sp.stream = e[i].stream;
		sp.seq = e[i].seq;
		w->pkts[i].data = w->mem + i * w->stride;
		w->pkts[i].len = vfgx_pkt_build(w->pkts[i].data, w->stride, &sp);
	}
	free(e);
	return 0;
}

void work_free(struct work *w)
{
	free(w->mem);
	free(w->pkts);
	w->mem = NULL;
	w->pkts = NULL;
}

/* Ones' complement sum of len bytes, 32-bit words into a 64-bit
 * accumulator (as DPDK's raw checksum), folded to 16 bits. */
static uint32_t csum_add(uint64_t sum, const uint8_t *p, uint32_t len)
{
	while (len >= 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		sum += v;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		sum += v;
		p += 2;
		len -= 2;
	}
	if (len)
		sum += *p; /* little-endian host: the odd byte is the low half */
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint32_t)sum;
}

static int floor_one(const uint8_t *f, uint32_t len)
{
	uint32_t ihl, tot, ulen, sum;
	uint64_t pseudo;
	const uint8_t *ip = f + 14, *udp;

	if (len < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0x00)
		return 0;
	ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	tot = (uint32_t)ip[2] << 8 | ip[3];
	if ((ip[0] >> 4) != 4 || ihl < 20 || tot < ihl + 8 || 14 + tot > len)
		return 0;
	if (csum_add(0, ip, ihl) != 0xffff || ip[9] != 17 ||
	    (((ip[6] << 8) | ip[7]) & 0x3fff))
		return 0;
	udp = ip + ihl;
	ulen = (uint32_t)udp[4] << 8 | udp[5];
	if (ulen < 8 || ulen > tot - ihl)
		return 0;
	if (udp[6] | udp[7]) {
		/* pseudo header: addresses, protocol, UDP length (network order
		 * 16-bit words summed as the host reads them) */
		pseudo = (uint64_t)htons(17) + htons((uint16_t)ulen);
		sum = csum_add(pseudo, ip + 12, 8);
		if (csum_add(sum, udp, ulen) != 0xffff)
			return 0;
	}
	return ((uint32_t)udp[2] << 8 | udp[3]) == WORK_PORT;
}

uint64_t work_floor_pass(const struct work *w)
{
	uint64_t ok = 0;

	for (uint64_t i = 0; i < w->n; i++)
		ok += (uint64_t)floor_one(w->pkts[i].data, w->pkts[i].len);
	return ok;
}
