/* test_exchange.c - vfgx_eba_exchange_mpi under mpirun -np N: every rank
 * sees every other rank's descriptors with the right fields, leases expire
 * through the peer table, and errors (a rank's bad descriptor, one node id
 * on two ranks) are returned on every rank, naming the rank, without a
 * hang.  Rank 0 prints the result; exit 0 only when every rank passed. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vfgx_mpi.h"

static int rank, size, failures;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			failures++;                                       \
		}                                                         \
	} while (0)

/* Rank r's two descriptors: an RX ring buffer and a TX buffer. */
static void make_desc(int r, uint32_t i, struct vfgx_eba_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->node_id = VFGX_MPI_NODE_ID(r);
	d->buffer_id = 100 + i;
	d->type = i == 0 ? VFGX_EBA_RX : VFGX_EBA_TX;
	d->addr = 0x10000000ull * (r + 1) + i * 0x1000;
	d->rkey = 0x1000u + (uint32_t)r;
	d->qpn = 0x100u * (uint32_t)(r + 1) + i;
	d->size = 65536 + 64 + 4096ull * (uint64_t)r; /* ring, then its head word */
	d->state_off = i == 0 ? 65536 : VFGX_EBA_NO_STATE;
	d->gid[15] = (uint8_t)r;
	d->mac[5] = (uint8_t)r;
	d->lease_s = 5;
}

static void test_exchange(vfgx_ctx *ctx)
{
	struct vfgx_eba_peer_table t;
	struct vfgx_eba_desc mine[2], want;
	uint64_t now = 1000000000ull;
	int ret;

	for (uint32_t i = 0; i < 2; i++)
		make_desc(rank, i, &mine[i]);
	CHECK(vfgx_eba_peers_init(&t, 64) == 0, "peers_init");
	ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, mine, 2, &t, now);
	CHECK(ret == size - 1, "exchange returned %d (%s), want %d", ret,
	      vfgx_last_error(ctx), size - 1);
	CHECK(t.nb == 2u * (uint32_t)(size - 1), "%u peers, want %d", t.nb, 2 * (size - 1));
	CHECK(vfgx_eba_peers_nodes(&t) == (uint32_t)(size - 1), "nodes");
	CHECK(!vfgx_eba_peers_find(&t, VFGX_MPI_NODE_ID(rank), 100), "own descriptor entered");
	for (int r = 0; r < size; r++) {
		if (r == rank)
			continue;
		for (uint32_t i = 0; i < 2; i++) {
			const struct vfgx_eba_peer *p =
				vfgx_eba_peers_find(&t, VFGX_MPI_NODE_ID(r), 100 + i);

			make_desc(r, i, &want);
			CHECK(p, "rank %d buffer %u missing", r, 100 + i);
			if (!p)
				continue;
			CHECK(!memcmp(&p->desc, &want, sizeof(want)),
			      "rank %d buffer %u: fields differ", r, 100 + i);
			CHECK(p->expires_ns == now + 5000000000ull, "lease not applied");
			CHECK(p->src_mac[5] == (uint8_t)r, "source mac");
		}
	}
	/* renewed by a second exchange, gone when it is not renewed */
	ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, mine, 2, &t, now + 3000000000ull);
	CHECK(ret == size - 1, "second exchange %d", ret);
	CHECK(vfgx_eba_peers_expire(&t, now + 6000000000ull, NULL, NULL) == 0,
	      "renewed peers expired");
	CHECK(vfgx_eba_peers_expire(&t, now + 8000000000ull, NULL, NULL) ==
	      2u * (uint32_t)(size - 1), "leases did not expire");
	CHECK(t.nb == 0, "peers left after expiry");
	vfgx_eba_peers_fini(&t);
}

static void test_presence(vfgx_ctx *ctx)
{
	struct vfgx_eba_peer_table t;
	int ret;

	CHECK(vfgx_eba_peers_init(&t, 64) == 0, "peers_init");
	ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, NULL, 0, &t, 1);
	CHECK(ret == size - 1, "presence exchange %d (%s)", ret, vfgx_last_error(ctx));
	for (int r = 0; r < size; r++) {
		const struct vfgx_eba_peer *p = vfgx_eba_peers_find(&t, VFGX_MPI_NODE_ID(r), 0);

		CHECK(r == rank ? !p : p && p->desc.type == VFGX_EBA_CTRL,
		      "presence of rank %d", r);
	}
	vfgx_eba_peers_fini(&t);
}

/* The last rank publishes a descriptor with lease 0: it gets -EINVAL, the
 * others -ECOMM naming it, and nobody hangs. */
static void test_bad_rank(vfgx_ctx *ctx)
{
	struct vfgx_eba_peer_table t;
	struct vfgx_eba_desc d;
	char want[64];
	int ret;

	make_desc(rank, 0, &d);
	if (rank == size - 1)
		d.lease_s = 0;
	CHECK(vfgx_eba_peers_init(&t, 64) == 0, "peers_init");
	ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, &d, 1, &t, 1);
	snprintf(want, sizeof(want), "rank %d could not publish", size - 1);
	if (rank == size - 1)
		CHECK(ret == -EINVAL && strstr(vfgx_last_error(ctx), "lease"),
		      "bad rank got %d (%s)", ret, vfgx_last_error(ctx));
	else
		CHECK(ret == -ECOMM && strstr(vfgx_last_error(ctx), want),
		      "got %d (%s)", ret, vfgx_last_error(ctx));
	CHECK(t.nb == 0, "peers entered despite the error");
	vfgx_eba_peers_fini(&t);
}

/* One rank passes bad arguments (no peer table; then descriptors NULL with
 * a count): it gets -EINVAL, the others -ECOMM naming it, nobody waits in
 * a collective that rank skipped (before the fix they hung here). */
static void test_bad_args(vfgx_ctx *ctx, bool no_table)
{
	struct vfgx_eba_peer_table t;
	struct vfgx_eba_desc d;
	char want[64];
	int ret, bad = size - 1;

	make_desc(rank, 0, &d);
	CHECK(vfgx_eba_peers_init(&t, 64) == 0, "peers_init");
	if (rank != bad)
		ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, &d, 1, &t, 1);
	else if (no_table)
		ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, &d, 1, NULL, 1);
	else
		ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, NULL, 3, &t, 1);
	snprintf(want, sizeof(want), "rank %d could not publish", bad);
	if (rank == bad)
		CHECK(ret == -EINVAL && strstr(vfgx_last_error(ctx),
					       no_table ? "no peer table" : "descriptors NULL"),
		      "bad rank got %d (%s)", ret, vfgx_last_error(ctx));
	else
		CHECK(ret == -ECOMM && strstr(vfgx_last_error(ctx), want) &&
			      strstr(vfgx_last_error(ctx), "Invalid argument"),
		      "got %d (%s)", ret, vfgx_last_error(ctx));
	CHECK(t.nb == 0, "peers entered despite the error");
	vfgx_eba_peers_fini(&t);
}

static void test_same_node_id(vfgx_ctx *ctx)
{
	struct vfgx_eba_peer_table t;
	struct vfgx_eba_desc d;
	int ret;

	make_desc(rank, 0, &d);
	d.node_id = 42;
	CHECK(vfgx_eba_peers_init(&t, 64) == 0, "peers_init");
	ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, &d, 1, &t, 1);
	CHECK(ret == -EINVAL && strstr(vfgx_last_error(ctx), "ranks 0 and 1 both use node id"),
	      "duplicate node id: %d (%s)", ret, vfgx_last_error(ctx));
	vfgx_eba_peers_fini(&t);
}

/* A table too small for the others' descriptors: -ENOSPC, locally. */
static void test_table_full(vfgx_ctx *ctx)
{
	struct vfgx_eba_peer_table t;
	struct vfgx_eba_desc mine[2];
	int ret;

	for (uint32_t i = 0; i < 2; i++)
		make_desc(rank, i, &mine[i]);
	CHECK(vfgx_eba_peers_init(&t, 1) == 0, "peers_init");
	ret = vfgx_eba_exchange_mpi(ctx, MPI_COMM_WORLD, mine, 2, &t, 1);
	CHECK(ret == -ENOSPC, "small table: %d", ret);
	vfgx_eba_peers_fini(&t);
}

int main(int argc, char **argv)
{
	vfgx_ctx *ctx;
	int total = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		if (rank == 0)
			printf("SKIP: needs at least 2 ranks (mpirun -np 4)\n");
		MPI_Finalize();
		return 77;
	}
	if (vfgx_ctx_create(&ctx)) {
		fprintf(stderr, "rank %d: vfgx_ctx_create failed\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	test_exchange(ctx);
	test_presence(ctx);
	test_bad_rank(ctx);
	test_bad_args(ctx, true);
	test_bad_args(ctx, false);
	test_same_node_id(ctx);
	test_table_full(ctx);
	MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: descriptor exchange over %d ranks, %d failed checks\n",
		       total ? "FAIL" : "ok", size, total);
	vfgx_ctx_destroy(ctx);
	MPI_Finalize();
	return total ? 1 : 0;
}
