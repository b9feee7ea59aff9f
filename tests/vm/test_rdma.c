/* test_rdma.c - the RDMA backend on a real soft-RoCE device in the test
 * guest (run through rxe-env.sh): registration chain, WRITE/READ/CAS and
 * WRITE_WITH_IMM over raw-exchanged QPs, send/recv integrity through the
 * port backend over rdma_cm (RC and UD), UD datagrams over raw-exchanged
 * QPs, and the failure cases (bad rkey, refused connection, peer killed
 * mid-transfer, oversize datagram). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <vfgx/rdma.h>
#include <vfgx/vfgx.h>

#include "rdma/rdma_internal.h" /* vfgx_rdma_dev_set_reg_fail: a test hook */

static vfgx_ctx *ctx;
static const char *devname_, *ip;

static vfgx_rdma_dev *open_dev(void)
{
	vfgx_rdma_dev *dev;

	if (vfgx_rdma_dev_open(ctx, devname_, 1, -1, &dev))
		fail_msg("%s", vfgx_last_error(ctx));
	return dev;
}

/* Two QPs of conf's type (NULL: RC) on one device connected to each other
 * by raw exchange. */
static void raw_pair_conf(vfgx_rdma_dev *dev,
			  const struct vfgx_rdma_qp_conf *conf,
			  vfgx_rdma_qp **a, vfgx_rdma_qp **b)
{
	struct vfgx_rdma_endpoint ea, eb;

	if (vfgx_rdma_qp_create(dev, conf, a) ||
	    vfgx_rdma_qp_create(dev, conf, b))
		fail_msg("%s", vfgx_last_error(ctx));
	vfgx_rdma_qp_endpoint(*a, NULL, &ea);
	vfgx_rdma_qp_endpoint(*b, NULL, &eb);
	if (vfgx_rdma_qp_connect(*a, &eb) || vfgx_rdma_qp_connect(*b, &ea))
		fail_msg("%s", vfgx_last_error(ctx));
}

static void raw_pair(vfgx_rdma_dev *dev, vfgx_rdma_qp **a, vfgx_rdma_qp **b)
{
	raw_pair_conf(dev, NULL, a, b);
}

static void test_reg_chain(void **state)
{
	vfgx_rdma_dev *dev = open_dev();
	const struct vfgx_rdma_mr_info *mi;
	vfgx_region *r;
	vfgx_rdma_mr *mr;

	(void)state;
	assert_int_equal(vfgx_region_create(ctx, VFGX_MEM_HOST, 1 << 20, 0,
					    false, &r), 0);
	/* host memory registers directly */
	assert_int_equal(vfgx_rdma_reg_region(dev, r, VFGX_RDMA_ACCESS_ALL,
					      false, &mr), 0);
	mi = vfgx_rdma_mr_info(mr);
	assert_int_equal(mi->path, VFGX_RDMA_REG_HOST);
	assert_int_equal(mi->step_err[0], 0);
	assert_ptr_equal(vfgx_rdma_mr_cpu_addr(mr), vfgx_region_info(r)->addr);
	vfgx_rdma_dereg(mr);

	/* dma-buf refused: peermem (ibv_reg_mr on the pointer) takes it */
	vfgx_rdma_dev_set_reg_fail(dev, 1u << VFGX_RDMA_REG_DMABUF);
	assert_int_equal(vfgx_rdma_reg_region(dev, r, 0, false, &mr), 0);
	mi = vfgx_rdma_mr_info(mr);
	assert_int_equal(mi->path, VFGX_RDMA_REG_PEERMEM);
	assert_int_equal(mi->step_err[VFGX_RDMA_REG_DMABUF], -EOPNOTSUPP);
	vfgx_rdma_dereg(mr);

	/* both refused, no fallback allowed: a clear error */
	vfgx_rdma_dev_set_reg_fail(dev, 3);
	assert_int_equal(vfgx_rdma_reg_region(dev, r, 0, false, &mr), -ENODEV);
	assert_non_null(strstr(vfgx_last_error(ctx), "memory.fallback: host"));

	/* both refused, fallback: a host buffer of its own */
	assert_int_equal(vfgx_rdma_reg_region(dev, r, 0, true, &mr), 0);
	mi = vfgx_rdma_mr_info(mr);
	assert_int_equal(mi->path, VFGX_RDMA_REG_HOST);
	assert_int_equal(mi->step_err[VFGX_RDMA_REG_DMABUF], -EOPNOTSUPP);
	assert_int_equal(mi->step_err[VFGX_RDMA_REG_PEERMEM], -EOPNOTSUPP);
	assert_true(mi->len >= 1 << 20);
	assert_ptr_not_equal(vfgx_rdma_mr_cpu_addr(mr), vfgx_region_info(r)->addr);
	vfgx_rdma_dereg(mr);
	vfgx_region_destroy(r);
	vfgx_rdma_dev_close(dev);
}

static void test_write_read_cas(void **state)
{
	vfgx_rdma_dev *dev = open_dev();
	size_t sz = 256 << 10;
	uint8_t *la = aligned_alloc(4096, sz), *rb = aligned_alloc(4096, sz);
	vfgx_rdma_mr *ma, *mb;
	vfgx_rdma_qp *a, *b;
	uint64_t old, rbase;
	uint32_t rkey;

	(void)state;
	raw_pair(dev, &a, &b);
	assert_int_equal(vfgx_rdma_reg_mem(dev, la, sz, VFGX_RDMA_ACCESS_ALL, &ma), 0);
	assert_int_equal(vfgx_rdma_reg_mem(dev, rb, sz, VFGX_RDMA_ACCESS_ALL, &mb), 0);
	rbase = vfgx_rdma_mr_info(mb)->addr;
	rkey = vfgx_rdma_mr_info(mb)->rkey;
	srand(7);
	for (size_t i = 0; i < sz; i++)
		la[i] = (uint8_t)rand();
	memset(rb, 0, sz);

	/* WRITE at odd offsets and lengths lands exactly there */
	assert_int_equal(vfgx_rdma_write_sync(a, ma, 3, rbase + 1001, rkey,
					      100000, 5000), 0);
	assert_memory_equal(rb + 1001, la + 3, 100000);
	assert_int_equal(rb[1000], 0);
	assert_int_equal(rb[1001 + 100000], 0);

	/* READ it back into another part of the local buffer */
	memset(la + 128 * 1024, 0, 100000);
	assert_int_equal(vfgx_rdma_read_sync(a, ma, 128 * 1024, rbase + 1001,
					     rkey, 100000, 5000), 0);
	assert_memory_equal(la + 128 * 1024, la + 3, 100000);

	/* CAS: swaps when equal, returns the old value either way */
	uint64_t v = 0x1122334455667788ull;

	memcpy(rb + 200000, &v, 8);
	assert_int_equal(vfgx_rdma_cas_sync(a, ma, 0, rbase + 200000, rkey, v,
					    42, &old, 5000), 0);
	assert_true(old == v);
	memcpy(&v, rb + 200000, 8);
	assert_true(v == 42);
	assert_int_equal(vfgx_rdma_cas_sync(a, ma, 0, rbase + 200000, rkey, 7,
					    99, &old, 5000), 0);
	assert_true(old == 42);
	memcpy(&v, rb + 200000, 8);
	assert_true(v == 42);
	assert_int_equal(vfgx_rdma_cas(a, ma, 0, rbase + 3, rkey, 0, 0, 0, 0),
			 -EINVAL);

	/* fence: a batch of unsignaled writes ends with one signaled */
	for (int i = 0; i < 32; i++)
		assert_int_equal(vfgx_rdma_write(a, ma, (size_t)i * 64,
						 rbase + (uint64_t)i * 64, rkey,
						 64, (uint64_t)i,
						 i < 31 ? VFGX_RDMA_UNSIGNALED : 0), 0);
	assert_int_equal(vfgx_rdma_fence(a, 5000), 0);
	assert_int_equal(vfgx_rdma_qp_outstanding(a), 0);
	assert_memory_equal(rb, la, 32 * 64);

	vfgx_rdma_qp_destroy(a);
	vfgx_rdma_qp_destroy(b);
	vfgx_rdma_dereg(ma);
	vfgx_rdma_dereg(mb);
	free(la);
	free(rb);
	vfgx_rdma_dev_close(dev);
}

static void test_write_imm(void **state)
{
	vfgx_rdma_dev *dev = open_dev();
	uint8_t *buf = aligned_alloc(4096, 65536);
	struct vfgx_rdma_wc wc;
	vfgx_rdma_qp *a, *b;
	vfgx_rdma_mr *m;

	(void)state;
	raw_pair(dev, &a, &b);
	assert_int_equal(vfgx_rdma_reg_mem(dev, buf, 65536, VFGX_RDMA_ACCESS_ALL, &m), 0);
	memset(buf, 0xab, 4096);
	memset(buf + 32768, 0, 4096);
	assert_int_equal(vfgx_rdma_post_recv(b, m, buf + 60000, 16, 77), 0);
	assert_int_equal(vfgx_rdma_write_imm(a, m, 0, vfgx_rdma_mr_info(m)->addr + 32768,
					     vfgx_rdma_mr_info(m)->rkey, 4096,
					     0xdeadbeef, 5, 0), 0);
	assert_int_equal(vfgx_rdma_fence(a, 5000), 0);
	assert_int_equal(vfgx_rdma_wait(b, true, &wc, 1, 5000), 1);
	assert_int_equal(wc.status, 0);
	assert_int_equal(wc.op, VFGX_RDMA_OP_RECV_IMM);
	assert_true(wc.has_imm);
	assert_int_equal(wc.imm, 0xdeadbeef);
	assert_int_equal(wc.wr_id, 77);
	assert_memory_equal(buf + 32768, buf, 4096);

	/* a write list: payload, then an inline 8-byte word with imm, one
	 * post; both land, the imm arrives, the outstanding count is right */
	uint64_t word = 0x0123456789abcdefull, got;
	uint64_t base = vfgx_rdma_mr_info(m)->addr;
	uint32_t rkey = vfgx_rdma_mr_info(m)->rkey;
	struct vfgx_rdma_write_wr w[2] = {
		{ .mr = m, .loff = 0, .raddr = base + 40008, .rkey = rkey,
		  .len = 3000, .wr_id = 1, .flags = VFGX_RDMA_UNSIGNALED },
		{ .mr = m, .loff = 61000, .raddr = base + 40000, .rkey = rkey,
		  .len = 8, .wr_id = 2, .flags = VFGX_RDMA_INLINE,
		  .with_imm = true, .imm = 40000 },
	};

	memset(buf + 40000, 0, 8192);
	memset(buf, 0x3c, 3000);
	memcpy(buf + 61000, &word, 8);
	assert_int_equal(vfgx_rdma_post_recv(b, m, buf + 60000, 16, 78), 0);
	assert_int_equal(vfgx_rdma_write_list(a, w, 2), 0);
	memset(buf + 61000, 0, 8); /* inline: copied at post */
	assert_int_equal(vfgx_rdma_qp_outstanding(a), 2);
	assert_int_equal(vfgx_rdma_fence(a, 5000), 0);
	assert_int_equal(vfgx_rdma_qp_outstanding(a), 0);
	assert_int_equal(vfgx_rdma_wait(b, true, &wc, 1, 5000), 1);
	assert_int_equal(wc.status, 0);
	assert_int_equal(wc.op, VFGX_RDMA_OP_RECV_IMM);
	assert_int_equal(wc.imm, 40000);
	memcpy(&got, buf + 40000, 8);
	assert_true(got == word);
	assert_memory_equal(buf + 40008, buf, 3000);
	assert_int_equal(buf[40008 + 3000], 0);
	/* bad lists are refused before anything is posted */
	assert_int_equal(vfgx_rdma_write_list(a, w, 0), -EINVAL);
	assert_int_equal(vfgx_rdma_write_list(a, w, VFGX_RDMA_LIST_MAX + 1), -EINVAL);
	w[0].len = 70000; /* beyond the 65536-byte registration */
	assert_int_equal(vfgx_rdma_write_list(a, w, 2), -ERANGE);
	assert_int_equal(vfgx_rdma_qp_outstanding(a), 0);

	vfgx_rdma_qp_destroy(a);
	vfgx_rdma_qp_destroy(b);
	vfgx_rdma_dereg(m);
	free(buf);
	vfgx_rdma_dev_close(dev);
}

static void test_bad_rkey(void **state)
{
	vfgx_rdma_dev *dev = open_dev();
	uint8_t *buf = aligned_alloc(4096, 8192);
	vfgx_rdma_qp *a, *b;
	vfgx_rdma_mr *m;

	(void)state;
	raw_pair(dev, &a, &b);
	assert_int_equal(vfgx_rdma_reg_mem(dev, buf, 8192, VFGX_RDMA_ACCESS_ALL, &m), 0);
	assert_int_equal(vfgx_rdma_write(a, m, 0, vfgx_rdma_mr_info(m)->addr + 4096,
					 vfgx_rdma_mr_info(m)->rkey ^ 0x5500, 64, 9, 0), 0);
	assert_int_equal(vfgx_rdma_fence(a, 10000), -EACCES);
	assert_non_null(strstr(vfgx_last_error(ctx), "bad rkey"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
	/* the QP is now in error: further operations fail, no hang */
	assert_int_equal(vfgx_rdma_read(a, m, 0, vfgx_rdma_mr_info(m)->addr,
					vfgx_rdma_mr_info(m)->rkey, 64, 10, 0) == 0 ?
				 vfgx_rdma_fence(a, 10000) != 0 : 1, 1);
	vfgx_rdma_qp_destroy(a);
	vfgx_rdma_qp_destroy(b);
	vfgx_rdma_dereg(m);
	free(buf);
	vfgx_rdma_dev_close(dev);
}

static void test_conn_refused(void **state)
{
	vfgx_rdma_dev *dev = open_dev();
	vfgx_rdma_qp *qp;

	(void)state;
	assert_int_equal(vfgx_rdma_connect(dev, ip, 7999, NULL, NULL, NULL,
					   5000, &qp), -ECONNREFUSED);
	assert_null(qp);
	assert_non_null(strstr(vfgx_last_error(ctx), "refused"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
	vfgx_rdma_dev_close(dev);
}

/* ------------------------------------------- port backend send/recv */

struct srv_arg {
	const char *yaml;
	vfgx_ctx *ctx;
	vfgx_port *port;
	int ret;
};

static void *open_server(void *p)
{
	struct srv_arg *s = p;
	struct vfgx_config *cfg;

	s->ret = vfgx_config_load_string(s->ctx, s->yaml, strlen(s->yaml),
					 "srv.yaml", &cfg);
	if (!s->ret) {
		s->ret = vfgx_port_open_config(s->ctx, cfg, &cfg->ifaces[0],
					       &s->port);
		vfgx_config_destroy(cfg);
	}
	return NULL;
}

static vfgx_port *open_yaml(const char *y)
{
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;
	int ret = -1;

	if (vfgx_config_load_string(ctx, y, strlen(y), "cli.yaml", &cfg))
		fail_msg("%s", vfgx_last_error(ctx));
	/* the server thread may not be listening yet */
	for (int i = 0; i < 100; i++) {
		ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port);
		if (ret != -ECONNREFUSED)
			break;
		usleep(100000);
	}
	vfgx_config_destroy(cfg);
	if (ret)
		fail_msg("%s", vfgx_last_error(ctx));
	return port;
}

static void test_sendrecv_port(void **state)
{
	char sy[512], cy[512];
	struct srv_arg s = { .yaml = sy };
	uint8_t msg[4096], seen[4096];
	struct vfgx_pkt pk[64];
	vfgx_port *cli;
	pthread_t th;
	uint32_t sizes[400];
	int sent = 0, got = 0;

	(void)state;
	snprintf(sy, sizeof(sy),
		 "interfaces:\n  - name: srv\n    backend: rdma\n    address: %s\n"
		 "    rdma: { role: server, peer: \"%s:7471\", timeout_ms: 20000 }\n",
		 devname_, ip);
	snprintf(cy, sizeof(cy),
		 "interfaces:\n  - name: cli\n    backend: rdma\n    address: va\n"
		 "    rdma: { role: client, peer: \"%s:7471\" }\n", ip);
	assert_int_equal(vfgx_ctx_create(&s.ctx), 0);
	assert_int_equal(pthread_create(&th, NULL, open_server, &s), 0);
	cli = open_yaml(cy);
	pthread_join(th, NULL);
	if (s.ret)
		fail_msg("server: %s", vfgx_last_error(s.ctx));
	srand(11);
	for (int i = 0; i < 400; i++)
		sizes[i] = 1 + (uint32_t)rand() % 4096;
	while (got < 400) {
		if (sent < 400) {
			struct vfgx_pkt p = { .data = msg, .len = sizes[sent] };

			for (uint32_t k = 0; k < p.len; k++)
				msg[k] = (uint8_t)(sent * 31 + k);
			sent += vfgx_port_tx_burst(cli, 0, &p, 1);
		}
		int n = vfgx_port_rx_burst(s.port, 0, pk, 64);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++, got++) {
			assert_int_equal(pk[i].len, sizes[got]);
			for (uint32_t k = 0; k < pk[i].len; k++)
				seen[k] = (uint8_t)(got * 31 + k);
			assert_memory_equal(pk[i].data, seen, pk[i].len);
			assert_true(pk[i].flags & VFGX_PKT_PAYLOAD);
		}
		vfgx_port_release(s.port, 0, pk, (uint16_t)n);
	}
	struct vfgx_queue_stats st;

	vfgx_port_stats(s.port, 0, &st);
	assert_int_equal(st.rx_packets, 400);
	vfgx_port_stats(cli, 0, &st);
	assert_int_equal(st.tx_packets, 400);
	vfgx_port_close(cli);
	vfgx_port_close(s.port);
	vfgx_ctx_destroy(s.ctx);
}

/* ------------------------------------------------------ UD datagrams */

static uint32_t ud_mtu; /* path MTU in bytes, learned by test_ud_raw */

/* Raw-exchanged UD QPs: a datagram each way lands after the GRH with its
 * own length, the full MTU passes, MTU + 1 is refused with -EMSGSIZE. */
static void test_ud_raw(void **state)
{
	const struct vfgx_rdma_qp_conf uc = { .argsz = sizeof(uc), .type = VFGX_RDMA_UD };
	vfgx_rdma_dev *dev = open_dev();
	struct vfgx_rdma_wc wc;
	vfgx_rdma_qp *a, *b;
	vfgx_rdma_mr *m;
	uint8_t *buf;
	uint32_t mtu, rlen;

	(void)state;
	raw_pair_conf(dev, &uc, &a, &b);
	assert_int_equal(vfgx_rdma_qp_type(a), VFGX_RDMA_UD);
	mtu = vfgx_rdma_qp_max_msg(a);
	assert_true(mtu >= 256 && mtu <= 4096);
	assert_int_equal(vfgx_rdma_qp_max_msg(b), mtu);
	ud_mtu = mtu;
	rlen = mtu + VFGX_RDMA_GRH_BYTES;
	/* [0, rlen) b's receive, [rlen, 2 rlen) a's receive, then tx */
	buf = calloc(3, rlen + 64);
	assert_int_equal(vfgx_rdma_reg_mem(dev, buf, 3 * (size_t)(rlen + 64), 0, &m), 0);
	uint8_t *tx = buf + 2 * rlen;

	for (int round = 0; round < 2; round++) {
		vfgx_rdma_qp *src = round ? b : a, *dst = round ? a : b;
		uint8_t *rx = buf + (size_t)round * rlen;
		uint32_t len = round ? mtu : 77;

		for (uint32_t k = 0; k < len; k++)
			tx[k] = (uint8_t)(k * 7 + round);
		memset(rx, 0xee, rlen);
		assert_int_equal(vfgx_rdma_post_recv(dst, m, rx, rlen, 100 + round), 0);
		assert_int_equal(vfgx_rdma_post_send(src, m, tx, len, 1, 0), 0);
		assert_int_equal(vfgx_rdma_wait(src, false, &wc, 1, 10000), 1);
		assert_int_equal(wc.status, 0);
		if (vfgx_rdma_wait(dst, true, &wc, 1, 10000) != 1)
			fail_msg("%s", vfgx_last_error(ctx));
		assert_int_equal(wc.status, 0);
		assert_int_equal(wc.wr_id, 100 + round);
		assert_int_equal(wc.byte_len, len);
		assert_memory_equal(rx + VFGX_RDMA_GRH_BYTES, tx, len);
	}
	/* one-sided operations need RC: a clear error, nothing posted */
	assert_int_equal(vfgx_rdma_write(a, m, 0, 0, 0, 8, 3, 0), -EOPNOTSUPP);
	assert_non_null(strstr(vfgx_last_error(ctx), "need an RC QP"));
	/* one byte over the MTU: refused before it reaches the wire */
	assert_int_equal(vfgx_rdma_post_send(a, m, tx, mtu + 1, 2, 0), -EMSGSIZE);
	assert_non_null(strstr(vfgx_last_error(ctx), "exceeds the path MTU"));
	assert_int_equal(vfgx_rdma_qp_outstanding(a), 0);
	vfgx_rdma_qp_destroy(a);
	vfgx_rdma_qp_destroy(b);
	vfgx_rdma_dereg(m);
	vfgx_rdma_dev_close(dev);
	free(buf);
}

/* UD through the port backend, peers found by rdma_cm's UDP port space:
 * random sizes up to the MTU arrive intact, in order and all counted; an
 * oversize datagram is refused with -EMSGSIZE and counted as too big. */
static void test_ud_port(void **state)
{
	enum { N = 300, WINDOW = 32 };
	char sy[512], cy[512];
	struct srv_arg s = { .yaml = sy };
	uint8_t msg[4096], seen[4096];
	struct vfgx_pkt pk[64];
	struct vfgx_queue_stats st;
	vfgx_port *cli;
	pthread_t th;
	uint32_t sizes[N];
	int sent = 0, got = 0, back = 0;

	(void)state;
	assert_true(ud_mtu > 0); /* from test_ud_raw */
	/* nobody listening: the SIDR answer is a one-line refusal */
	{
		const struct vfgx_rdma_qp_conf uc = { .argsz = sizeof(uc), .type = VFGX_RDMA_UD };
		vfgx_rdma_dev *dev = open_dev();
		vfgx_rdma_qp *qp;

		assert_int_equal(vfgx_rdma_connect(dev, ip, 7479, &uc, NULL, NULL,
						   5000, &qp), -ECONNREFUSED);
		assert_non_null(strstr(vfgx_last_error(ctx), "connection refused"));
		vfgx_rdma_dev_close(dev);
	}
	snprintf(sy, sizeof(sy),
		 "interfaces:\n  - name: usrv\n    backend: rdma\n    address: %s\n"
		 "    rdma: { role: server, qp_type: ud, peer: \"%s:7473\", timeout_ms: 20000 }\n",
		 devname_, ip);
	snprintf(cy, sizeof(cy),
		 "interfaces:\n  - name: ucli\n    backend: rdma\n    address: va\n"
		 "    rdma: { role: client, qp_type: ud, peer: \"%s:7473\" }\n", ip);
	assert_int_equal(vfgx_ctx_create(&s.ctx), 0);
	assert_int_equal(pthread_create(&th, NULL, open_server, &s), 0);
	cli = open_yaml(cy);
	pthread_join(th, NULL);
	if (s.ret)
		fail_msg("server: %s", vfgx_last_error(s.ctx));
	srand(13);
	for (int i = 0; i < N; i++)
		sizes[i] = i == 0 ? ud_mtu : 1 + (uint32_t)rand() % ud_mtu;
	/* UD drops when no receive is posted: keep at most WINDOW in flight */
	while (got < N) {
		if (sent < N && sent - got < WINDOW) {
			struct vfgx_pkt p = { .data = msg, .len = sizes[sent] };
			int r;

			for (uint32_t k = 0; k < p.len; k++)
				msg[k] = (uint8_t)(sent * 29 + k);
			r = vfgx_port_tx_burst(cli, 0, &p, 1);
			if (r < 0)
				fail_msg("tx: %s", vfgx_last_error(ctx));
			sent += r;
		}
		int n = vfgx_port_rx_burst(s.port, 0, pk, 64);

		if (n < 0)
			fail_msg("rx: %s", vfgx_last_error(s.ctx));
		for (int i = 0; i < n; i++, got++) {
			assert_int_equal(pk[i].len, sizes[got]);
			for (uint32_t k = 0; k < pk[i].len; k++)
				seen[k] = (uint8_t)(got * 29 + k);
			assert_memory_equal(pk[i].data, seen, pk[i].len);
			assert_true(pk[i].flags & VFGX_PKT_PAYLOAD);
		}
		vfgx_port_release(s.port, 0, pk, (uint16_t)n);
	}
	/* the server learned the client's QP from the request: it answers */
	for (uint32_t k = 0; k < 100; k++)
		msg[k] = (uint8_t)(k ^ 0x5a);
	struct vfgx_pkt rp = { .data = msg, .len = 100 };

	assert_int_equal(vfgx_port_tx_burst(s.port, 0, &rp, 1), 1);
	for (int i = 0; i < 2000000 && !back; i++) {
		int n = vfgx_port_rx_burst(cli, 0, pk, 64);

		assert_true(n >= 0);
		if (n) {
			assert_int_equal(n, 1);
			assert_int_equal(pk[0].len, 100);
			assert_memory_equal(pk[0].data, msg, 100);
			back = 1;
		}
		vfgx_port_release(cli, 0, pk, (uint16_t)n);
	}
	assert_true(back);
	/* oversize: refused, not sent, counted */
	struct vfgx_pkt big = { .data = msg, .len = ud_mtu + 1 };

	assert_int_equal(vfgx_port_tx_burst(cli, 0, &big, 1), -EMSGSIZE);
	assert_non_null(strstr(vfgx_last_error(ctx), "ucli: UD datagram of"));
	assert_non_null(strstr(vfgx_last_error(ctx), "path MTU"));
	vfgx_port_stats(s.port, 0, &st);
	assert_int_equal(st.rx_packets, N);
	vfgx_port_stats(cli, 0, &st);
	assert_int_equal(st.tx_packets, N);
	assert_int_equal(st.rx_packets, 1);
	assert_int_equal(st.drops[VFGX_DROP_TOO_BIG], 1);
	/* nothing more arrives: the refused datagram never left */
	usleep(200000);
	assert_int_equal(vfgx_port_rx_burst(s.port, 0, pk, 64), 0);
	vfgx_port_close(cli);
	vfgx_port_close(s.port);
	vfgx_ctx_destroy(s.ctx);
}

/* ------------------------------------------- peer killed mid-transfer */

static _Noreturn void peer_child(int fd)
{
	struct vfgx_rdma_endpoint mine = { 0 };
	vfgx_rdma_listener *l;
	vfgx_rdma_dev *dev;
	vfgx_rdma_qp *qp;
	vfgx_rdma_mr *m;
	void *buf = aligned_alloc(4096, 1 << 20);

	if (vfgx_rdma_dev_open(ctx, devname_, 1, -1, &dev) ||
	    vfgx_rdma_reg_mem(dev, buf, 1 << 20, VFGX_RDMA_ACCESS_ALL, &m) ||
	    vfgx_rdma_listen(ctx, ip, 7472, &l))
		_exit(1);
	mine.addr = vfgx_rdma_mr_info(m)->addr;
	mine.rkey = vfgx_rdma_mr_info(m)->rkey;
	mine.len = 1 << 20;
	if (write(fd, "L", 1) != 1)
		_exit(1);
	if (vfgx_rdma_accept(l, dev, NULL, &mine, NULL, 20000, &qp))
		_exit(2);
	for (;;)
		pause(); /* killed by the parent */
}

static const char *self;

/* The peer is a fresh process (fork + exec): a plain fork would share this
 * process's verbs file descriptors, keeping the peer's QP alive after the
 * kill. */
static void test_peer_killed(void **state)
{
	struct vfgx_rdma_endpoint theirs;
	struct vfgx_rdma_wc wc;
	vfgx_rdma_dev *dev;
	vfgx_rdma_qp *qp;
	vfgx_rdma_mr *m;
	void *buf = aligned_alloc(4096, 1 << 20);
	int pfd[2], ret = 0, st;
	char c;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char fdarg[16];

		close(pfd[0]);
		snprintf(fdarg, sizeof(fdarg), "%d", pfd[1]);
		execl(self, self, "--peer", fdarg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1); /* listening */
	close(pfd[0]);
	dev = open_dev();
	assert_int_equal(vfgx_rdma_reg_mem(dev, buf, 1 << 20, VFGX_RDMA_ACCESS_ALL, &m), 0);
	if (vfgx_rdma_connect(dev, ip, 7472, NULL, NULL, &theirs, 10000, &qp))
		fail_msg("%s", vfgx_last_error(ctx));
	assert_int_equal(theirs.len, 1 << 20);
	/* transfer while the peer lives */
	for (int i = 0; i < 4; i++)
		assert_int_equal(vfgx_rdma_write_sync(qp, m, 0, theirs.addr,
						      theirs.rkey, 65536, 10000), 0);
	assert_int_equal(vfgx_rdma_post_recv(qp, m, buf, 64, 1), 0);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	uint64_t t0 = vfgx_now_ns();

	/* keep writing: the failure must surface as an error, not a hang */
	for (int i = 0; i < 1000 && !ret; i++) {
		ret = vfgx_rdma_write(qp, m, 0, theirs.addr, theirs.rkey, 65536, 0, 0);
		if (!ret)
			ret = vfgx_rdma_fence(qp, 15000);
	}
	assert_int_equal(ret, -ECONNRESET);
	assert_true(vfgx_now_ns() - t0 < 30ull * 1000000000u);
	/* a receive waiting on the dead connection reports it too */
	ret = vfgx_rdma_wait(qp, true, &wc, 1, 15000);
	assert_true(ret == -ECONNRESET || (ret == 1 && wc.status == -ECONNRESET));
	vfgx_rdma_qp_destroy(qp);
	vfgx_rdma_dereg(m);
	vfgx_rdma_dev_close(dev);
	free(buf);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reg_chain),
		cmocka_unit_test(test_write_read_cas),
		cmocka_unit_test(test_write_imm),
		cmocka_unit_test(test_bad_rkey),
		cmocka_unit_test(test_conn_refused),
		cmocka_unit_test(test_sendrecv_port),
		cmocka_unit_test(test_ud_raw),
		cmocka_unit_test(test_ud_port),
		cmocka_unit_test(test_peer_killed),
	};

	devname_ = getenv("VFGX_RDMA_DEV");
	ip = getenv("VFGX_RDMA_IP");
	if (!devname_ || !ip) {
		printf("test_rdma: no soft-RoCE device (run through tests/vm/vm-run.sh tests/vm/rxe-env.sh)\n");
		return 77;
	}
	if (vfgx_ctx_create(&ctx))
		return 1;
	if (argc == 3 && !strcmp(argv[1], "--peer"))
		peer_child(atoi(argv[2]));
	self = argv[0];
	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	vfgx_ctx_destroy(ctx);
	return ret;
}
