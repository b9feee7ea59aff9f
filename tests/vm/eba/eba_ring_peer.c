/* eba_ring_peer.c - guest test program: one process exposes a message ring
 * (consume), another connects with rdma_cm, exchanges descriptors and
 * sends COUNT messages of random sizes into it (produce); content, order
 * and count are checked on the consumer, backpressure on the producer.
 *   eba_ring_peer consume|produce DEV ADDR PORT COUNT RING MAXMSG normal|slow|wake */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/eba.h>

#define TMO 60000

static vfgx_ctx *ctx;

static int die(const char *what)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, vfgx_last_error(ctx));
	exit(1);
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* sizes 1 B .. max: mostly up to 4 KiB, one in 256 anywhere up to max */
static uint32_t msg_len(uint32_t seq, uint32_t max)
{
	uint64_t s = seq * 0x9E3779B97F4A7C15ull + 1;
	uint64_t r = xs(&s);

	return (uint32_t)(r % 256 ? 1 + (r >> 8) % (max < 4096 ? max : 4096) :
				    1 + (r >> 8) % max);
}

static uint64_t word(uint32_t seq, uint32_t i)
{
	return (uint64_t)seq << 32 ^ (i + 1) * 0x9E3779B97F4A7C15ull;
}

static void fill(uint8_t *b, uint32_t len, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = word(seq, i);

		memcpy(b + i, &v, len - i < 8 ? len - i : 8);
	}
}

static bool check(const uint8_t *b, uint32_t len, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = word(seq, i);

		if (memcmp(b + i, &v, len - i < 8 ? len - i : 8))
			return false;
	}
	return true;
}

static int consume(vfgx_rdma_dev *dev, const char *addr, uint16_t port,
		   uint32_t count, uint64_t ring, uint32_t max, const char *mode)
{
	uint8_t *buf = aligned_alloc(4096, ring + 4096);
	struct vfgx_eba_desc mine, theirs;
	struct vfgx_ring_consumer c;
	vfgx_rdma_listener *l;
	vfgx_rdma_mr *mr, *wmr;
	vfgx_rdma_qp *qp;
	uint64_t bytes = 0, idle_since = 0, wakes = 0;
	uint32_t got = 0;
	_Atomic uint64_t *flag;

	if (!buf)
		return 1;
	if (vfgx_ring_consumer_init(&c, buf, ring, (_Atomic uint64_t *)(buf + ring)))
		return die("ring init");
	flag = (_Atomic uint64_t *)(buf + ring + 8);
	atomic_store(flag, 0);
	if (vfgx_rdma_reg_mem(dev, buf, ring + 64, VFGX_RDMA_ACCESS_REMOTE_WRITE |
			      VFGX_RDMA_ACCESS_REMOTE_READ, &mr) ||
	    vfgx_rdma_reg_mem(dev, buf + ring + 1024, 1024, 0, &wmr))
		return die("register");
	if (vfgx_rdma_listen(ctx, addr, port, &l))
		return die("listen");
	printf("listening\n");
	fflush(stdout);
	if (vfgx_rdma_accept(l, dev, NULL, NULL, NULL, TMO, &qp))
		return die("accept");
	if (vfgx_eba_desc_from_mr(mr, qp, 2, 1, VFGX_EBA_RX, ring, 60, &mine) ||
	    vfgx_eba_exchange(qp, &mine, &theirs, TMO))
		return die("descriptor exchange");
	if (theirs.node_id != 1 || theirs.type != VFGX_EBA_TX) {
		fprintf(stderr, "FAIL: producer descriptor node %" PRIu64 " type %d\n",
			theirs.node_id, theirs.type);
		return 1;
	}
	if (!strcmp(mode, "wake") && vfgx_channel_wake_arm(qp, wmr, 64))
		return die("arm wake receives");
	if (!strcmp(mode, "slow")) {
		/* consume nothing until the producer found the ring full */
		uint64_t end = vfgx_now_ns() + TMO * 1000000ull;

		while (!atomic_load_explicit(flag, memory_order_acquire))
			if (vfgx_now_ns() > end) {
				fprintf(stderr, "FAIL: producer never reported a full ring\n");
				return 1;
			}
		printf("producer blocked on a full ring; consuming\n");
	}
	while (got < count) {
		const void *msg;
		uint32_t len;
		int ret = vfgx_ring_peek(&c, &msg, &len);

		if (ret < 0) {
			fprintf(stderr, "FAIL: corrupt record after %u messages\n", got);
			return 1;
		}
		if (!ret) {
			if (!strcmp(mode, "wake")) {
				ret = vfgx_channel_wake_wait(qp, wmr, 1000);
				if (ret < 0)
					return die("wait for wake");
				wakes += (uint64_t)ret;
			}
			if (!idle_since)
				idle_since = vfgx_now_ns();
			else if (vfgx_now_ns() - idle_since > TMO * 1000000ull) {
				fprintf(stderr, "FAIL: only %u of %u messages arrived\n", got, count);
				return 1;
			}
			continue;
		}
		idle_since = 0;
		got++;
		if (len != msg_len(got, max) || !check(msg, len, got)) {
			fprintf(stderr, "FAIL: message %u: length %u (want %u) or content wrong\n",
				got, len, msg_len(got, max));
			return 1;
		}
		bytes += len;
		vfgx_ring_release(&c);
	}
	if (vfgx_ring_peek(&c, &(const void *){ 0 }, &(uint32_t){ 0 }) != 0) {
		fprintf(stderr, "FAIL: more records than sent\n");
		return 1;
	}
	printf("ok: consumer received %u messages, %" PRIu64 " bytes, in order and intact; wakes=%" PRIu64 "\n",
	       got, bytes, wakes);
	fflush(stdout);
	/* stay until the producer hangs up, so its last acks arrive */
	for (int i = 0; i < 100; i++) {
		struct vfgx_rdma_wc wc;

		if (vfgx_rdma_wait(qp, true, &wc, 1, 100) == -ECONNRESET)
			break;
	}
	vfgx_rdma_qp_destroy(qp);
	vfgx_rdma_listener_close(l);
	vfgx_rdma_dereg(wmr);
	vfgx_rdma_dereg(mr);
	free(buf);
	return 0;
}

static int produce(vfgx_rdma_dev *dev, const char *addr, uint16_t port,
		   uint32_t count, uint32_t max, const char *mode)
{
	size_t area = (size_t)max * 4 > (8u << 20) ? (size_t)max * 4 : 8u << 20;
	uint8_t *buf = aligned_alloc(4096, area + 4096);
	struct vfgx_eba_desc mine, theirs;
	const struct vfgx_ring_producer *rp;
	bool slow = !strcmp(mode, "slow"), wake = !strcmp(mode, "wake");
	bool flagged = false;
	vfgx_channel *ch;
	vfgx_rdma_mr *mr;
	vfgx_rdma_qp *qp = NULL;
	size_t cur = 0;
	int ret = -1;

	if (!buf)
		return 1;
	if (vfgx_rdma_reg_mem(dev, buf, area + 4096, 0, &mr))
		return die("register");
	for (int i = 0; i < 100 && ret; i++) /* the consumer may still be starting */
		ret = vfgx_rdma_connect(dev, addr, port, NULL, NULL, NULL, TMO, &qp);
	if (ret)
		return die("connect");
	if (vfgx_eba_desc_from_mr(mr, qp, 1, 0, VFGX_EBA_TX, VFGX_EBA_NO_STATE, 60, &mine) ||
	    vfgx_eba_exchange(qp, &mine, &theirs, TMO))
		return die("descriptor exchange");
	if (vfgx_channel_open(qp, &theirs, mr, &ch) ||
	    vfgx_channel_ring_init(ch, theirs.state_off))
		return die("channel");
	/* out of bounds is refused locally: nothing posted */
	if (vfgx_channel_write(ch, theirs.size - 4, 0, 8) != -ERANGE ||
	    vfgx_channel_read(ch, theirs.size, 0, 1) != -ERANGE ||
	    vfgx_rdma_qp_outstanding(qp) != 0) {
		fprintf(stderr, "FAIL: out-of-bounds channel op not refused locally\n");
		return 1;
	}
	printf("ok: out-of-bounds write/read refused locally: %s\n", vfgx_last_error(ctx));
	for (uint32_t i = 1; i <= count; i++) {
		uint32_t len = msg_len(i, max);

		if (cur + len > area) {
			/* sources must stay unchanged until their writes complete */
			if (vfgx_channel_fence(ch, TMO))
				return die("fence");
			cur = 0;
		}
		fill(buf + cur, len, i);
		ret = vfgx_channel_ring_send(ch, buf + cur, len, wake, slow && !flagged ? 0 : TMO);
		if (ret == -ETIMEDOUT && slow && !flagged) {
			uint64_t one = 1;

			/* tell the consumer (by writing its flag word) that we hit full */
			memcpy(buf + area, &one, 8);
			if (vfgx_channel_write(ch, theirs.state_off + 8, area, 8) ||
			    vfgx_channel_fence(ch, TMO))
				return die("flag write");
			flagged = true;
			ret = vfgx_channel_ring_send(ch, buf + cur, len, wake, TMO);
		}
		if (ret) {
			fprintf(stderr, "FAIL: ring send of message %u (%u bytes): %s: %s\n",
				i, len, vfgx_strerror(ret), vfgx_last_error(ctx));
			return 1;
		}
		cur += (len + 63) & ~63u;
	}
	if (vfgx_channel_ring_drain(ch, TMO))
		return die("drain");
	rp = vfgx_channel_ring(ch);
	printf("ok: producer sent %u messages; ring full %" PRIu64 " times; head-word reads %" PRIu64 "\n",
	       count, rp->full, rp->state_reads);
	if (slow && (!flagged || rp->full == 0)) {
		fprintf(stderr, "FAIL: slow consumer but the producer never waited\n");
		return 1;
	}
	vfgx_channel_close(ch);
	vfgx_rdma_qp_destroy(qp);
	vfgx_rdma_dereg(mr);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	vfgx_rdma_dev *dev;
	int rc;

	if (argc != 9) {
		fprintf(stderr, "usage: %s consume|produce DEV ADDR PORT COUNT RING MAXMSG normal|slow|wake\n",
			argv[0]);
		return 2;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (vfgx_rdma_dev_open(ctx, argv[2], 1, -1, &dev))
		return die("device");
	if (!strcmp(argv[1], "consume"))
		rc = consume(dev, argv[3], (uint16_t)atoi(argv[4]), (uint32_t)atoi(argv[5]),
			     strtoull(argv[6], NULL, 0), (uint32_t)atoi(argv[7]), argv[8]);
	else
		rc = produce(dev, argv[3], (uint16_t)atoi(argv[4]), (uint32_t)atoi(argv[5]),
			     (uint32_t)atoi(argv[7]), argv[8]);
	vfgx_rdma_dev_close(dev);
	vfgx_ctx_destroy(ctx);
	return rc;
}
