/* corner_turn.c - the corner turn between MPI ranks over exposed-buffer
 * rings: every rank runs a pipeline (loopback generator) that writes
 * chunks; each chunk is split into one slice per rank, and slice d goes to
 * rank d's ring for this rank with one-sided writes (vfgx_mpi_rings: RDMA
 * WRITEs of vfgx's own verbs channels where the ranks have an RDMA device,
 * MPI_Put into an MPI window otherwise).
 * Every rank checks every byte of every slice it got against the
 * generator's pattern, that it is the slice for this rank, and that each
 * peer's chunks came in order.  Rank 0 prints the result; exit 0 only
 * when every rank saw everything right.
 *
 *     mpirun -np N corner_turn [--chunks C] [--bench ROUNDS] [--ring-bytes B]
 *                              [--transport auto|rdma|mpi] [--rdma-dev NAME]
 *                              [--alltoall-first] [--flip]
 *
 * --transport: rdma = verbs rings on --rdma-dev (default: the first RDMA
 * device), mpi = MPI window rings, auto (default) = rdma when every rank
 * has an RDMA device with an active port.  The report line names it.
 *
 * --alltoall-first: time MPI_Alltoall before the rings (benches alternate).
 *
 * --ring-bytes: data bytes of each ring (a power of two, default 1 MiB).
 *
 * --flip: every rank damages one byte of the first slice it sends, after
 * the split and before the write (the test shows the check catches it).
 * --bench: afterwards, ROUNDS timed corner turns of one chunk-sized block
 * through the rings, then the same bytes with MPI_Alltoall, same ranks,
 * same run; rank 0 prints both rates.  VFGX_BOOT_T0_NS (CLOCK_REALTIME
 * nanoseconds when the launcher started) adds bootstrap_ms: launch to
 * every ring connected. */
#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vfgx/vfgx.h>
#include <vfgx_mpi.h>

#define SLICE_MAGIC 0x54434656u /* "VFCT" */
#define SLOTS_PER_RANK 64
#define SLOT_BYTES 1024
#define RING_BYTES_DEFAULT (1u << 20)

struct slice_hdr {
	uint32_t magic;
	uint32_t src, dst;
	uint32_t nslots;      /* 0: the end record, chunk = chunks sent */
	uint64_t chunk;       /* the stream's chunk index */
	uint64_t first;       /* packet index of the slice's slot 0 */
	uint32_t slot_bytes;
	uint32_t stream;
	/* then uint32_t lens[nslots], then nslots * slot_bytes */
};

static int rank, size;
static uint64_t ring_bytes = RING_BYTES_DEFAULT;
static bool a2a_first;
static bool flip;
static enum vfgx_mpi_rings_transport transport = VFGX_MPI_RINGS_AUTO;
static const char *rdma_dev;

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* slice d of chunk c, with its header, into buf; its length */
static uint32_t make_slice(uint8_t *buf, const struct vfgx_chunk *c, int d)
{
	uint32_t n = c->packets / (uint32_t)size, s0 = n * (uint32_t)d;
	struct slice_hdr h = {
		.magic = SLICE_MAGIC, .src = (uint32_t)rank, .dst = (uint32_t)d,
		.nslots = n, .chunk = c->index, .first = c->first + s0,
		.slot_bytes = c->payload_bytes, .stream = c->stream,
	};

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), c->lens + s0, n * sizeof(uint32_t));
	memcpy(buf + sizeof(h) + n * sizeof(uint32_t),
	       (const uint8_t *)c->data + (size_t)s0 * c->payload_bytes,
	       (size_t)n * c->payload_bytes);
	return (uint32_t)(sizeof(h) + n * sizeof(uint32_t) + (size_t)n * c->payload_bytes);
}

/* Check one slice from src: for this rank, the chunk src sends next, every
 * slot present and every byte the generator's.  Errors found. */
static uint64_t check_slice(const uint8_t *rec, uint32_t len, int src,
			    uint64_t want_chunk, uint32_t packets)
{
	struct slice_hdr h;
	uint32_t n = packets / (uint32_t)size;
	const uint32_t *lens;
	const uint8_t *data;
	uint64_t bad = 0;

	if (len < sizeof(h))
		return 1;
	memcpy(&h, rec, sizeof(h));
	if (h.magic != SLICE_MAGIC || h.src != (uint32_t)src || h.dst != (uint32_t)rank ||
	    h.nslots != n || h.chunk != want_chunk || h.slot_bytes != SLOT_BYTES ||
	    h.first != want_chunk * packets + (uint64_t)n * (uint32_t)rank ||
	    len != sizeof(h) + n * (sizeof(uint32_t) + (size_t)SLOT_BYTES)) {
		fprintf(stderr, "corner_turn: rank %d: slice from rank %d: wrong header (src %u dst %u chunk %" PRIu64 ", want %" PRIu64 ")\n",
			rank, src, h.src, h.dst, h.chunk, want_chunk);
		return 1;
	}
	lens = (const uint32_t *)(rec + sizeof(h));
	data = rec + sizeof(h) + n * sizeof(uint32_t);
	for (uint32_t i = 0; i < n; i++) {
		bad += lens[i] == 0 || lens[i] > SLOT_BYTES; /* a slot missing */
		for (uint32_t j = 0; j < lens[i] && j < SLOT_BYTES; j++)
			bad += data[(size_t)i * SLOT_BYTES + j] !=
			       vfgx_pattern_byte(h.stream, h.first + i, j);
	}
	return bad;
}

struct state {
	vfgx_mpi_rings *rings;
	uint64_t *next;      /* [size] next chunk index expected from each */
	int64_t *end;        /* [size] chunks a peer said it sent, -1: not yet */
	uint64_t bad, slices;
	uint32_t packets;
};

/* Take what arrived in our rings: how many records, or the ring's error.
 * With none and idle, give the CPU away: with more ranks than cores, a
 * busy poll holds the core the writer needs (Open MPI yields the same
 * way). */
static int drain(struct state *s, bool idle)
{
	int n = 0;

	for (int p = 0; p < size; p++) {
		const void *rec;
		uint32_t len;
		int ret;

		if (p == rank)
			continue;
		while ((ret = vfgx_mpi_rings_peek(s->rings, p, &rec, &len)) == 1) {
			struct slice_hdr h;

			memcpy(&h, rec, sizeof(h) <= len ? sizeof(h) : 0);
			if (len >= sizeof(h) && h.magic == SLICE_MAGIC && h.nslots == 0) {
				s->end[p] = (int64_t)h.chunk;
			} else {
				s->bad += check_slice(rec, len, p, s->next[p], s->packets);
				s->next[p]++;
				s->slices++;
			}
			vfgx_mpi_rings_release(s->rings, p);
			n++;
		}
		if (ret < 0)
			return ret;
	}
	if (!n && idle)
		sched_yield();
	return n;
}

static bool all_ended(const struct state *s)
{
	for (int p = 0; p < size; p++)
		if (p != rank && s->end[p] < 0)
			return false;
	return true;
}

/* Send until it fits, draining our rings meanwhile (the peers do the same,
 * so nobody waits on a full ring for ever). */
static int send_slice(struct state *s, int d, const void *rec, uint32_t len)
{
	int ret;

	while ((ret = vfgx_mpi_rings_send(s->rings, d, rec, len)) == -EAGAIN)
		if ((ret = drain(s, true)) < 0)
			return ret;
	return ret;
}

static int corner_turn(struct state *s, vfgx_pipeline *pl, uint8_t *buf,
		       uint64_t *chunks)
{
	struct vfgx_chunk *c;
	int ret;

	while ((ret = vfgx_chunk_get(pl, 0, &c)) != -ENODATA) {
		if (ret == -EAGAIN || ret == -ETIMEDOUT) {
			if ((ret = drain(s, true)) < 0)
				return ret;
			continue;
		}
		if (ret)
			return ret;
		for (int k = 1; k <= size; k++) {
			int d = (rank + k) % size; /* spread: not all to rank 0 first */

			if (d == rank) {
				uint32_t len = make_slice(buf, c, d);

				s->bad += check_slice(buf, len, rank, c->index, c->packets);
				s->slices++;
			} else {
				uint32_t len = make_slice(buf, c, d);

				if (flip) {
					buf[len - 1] ^= 0x01; /* the last slot's last byte */
					flip = false;
				}
				if ((ret = send_slice(s, d, buf, len))) {
					vfgx_chunk_put(pl, c->stream, c->index);
					return ret;
				}
			}
		}
		s->packets = c->packets;
		if (c->index != *chunks)
			s->bad++; /* our own chunks skipped one */
		vfgx_chunk_put(pl, c->stream, c->index);
		++*chunks;
		/* release what arrived meanwhile (see bench) */
		if ((ret = drain(s, false)) < 0)
			return ret;
	}
	{
		struct slice_hdr end = { .magic = SLICE_MAGIC, .src = (uint32_t)rank,
					 .chunk = *chunks };

		for (int d = 0; d < size; d++)
			if (d != rank && (ret = send_slice(s, d, &end, sizeof(end))))
				return ret;
	}
	while (!all_ended(s))
		if ((ret = drain(s, true)) < 0)
			return ret;
	return 0;
}

/* Bench: take every record that arrived (checked, read in place); how many, or
 * the ring's error.  With none and idle, yields (see drain). */
static int bench_drain(struct state *s, uint8_t *out, uint64_t *got, bool idle)
{
	int n = 0;

	for (int p = 0; p < size; p++) {
		const void *rec;
		uint32_t len;
		int ret;

		while (p != rank && (ret = vfgx_mpi_rings_peek(s->rings, p, &rec, &len)) == 1) {
			/* the record is in this rank's memory, checked: used in
			 * place, as a consumer of the ring would */
			out[p] ^= ((const uint8_t *)rec)[len - 1];
			vfgx_mpi_rings_release(s->rings, p);
			got[p]++;
			n++;
		}
		if (p != rank && ret < 0)
			return ret;
	}
	if (!n && idle)
		sched_yield();
	return n;
}

static bool bench_done(const uint64_t *got, uint32_t rounds)
{
	for (int p = 0; p < size; p++)
		if (p != rank && got[p] < rounds)
			return false;
	return true;
}

static double time_alltoall(const uint8_t *block, uint8_t *out, uint32_t slice,
			    uint32_t rounds)
{
	double t;

	MPI_Barrier(MPI_COMM_WORLD);
	t = MPI_Wtime();
	for (uint32_t r = 0; r < rounds; r++)
		MPI_Alltoall(block, (int)slice, MPI_BYTE, out, (int)slice, MPI_BYTE,
			     MPI_COMM_WORLD);
	return MPI_Wtime() - t;
}

/* ROUNDS corner turns of one block through the rings and through
 * MPI_Alltoall (first with a2a_first); the slowest rank's seconds of each. */
static int bench(struct state *s, uint32_t rounds, double *ring_s, double *a2a_s,
		 uint64_t *bytes)
{
	uint32_t slice = SLOTS_PER_RANK * SLOT_BYTES;
	uint8_t *block = calloc((size_t)size, slice), *out = calloc((size_t)size, slice);
	uint64_t *got = calloc((size_t)size, sizeof(*got));
	double t, mine[2], all[2];
	int ret = 0;

	if (!block || !out || !got) {
		fprintf(stderr, "corner_turn: rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (size_t i = 0; i < (size_t)size * slice; i++)
		block[i] = (uint8_t)(i * 7 + (size_t)rank);
	/* the block does not change: the verbs rings may write it in place,
	 * as MPI_Alltoall reads it in place */
	if (vfgx_mpi_rings_register(s->rings, block, (size_t)size * slice))
		fprintf(stderr, "corner_turn: rank %d: block not registered, sending through the staging copy\n",
			rank);
	if (a2a_first)
		mine[1] = time_alltoall(block, out, slice, rounds);
	MPI_Barrier(MPI_COMM_WORLD);
	t = MPI_Wtime();
	for (uint32_t r = 0; r < rounds && ret >= 0; r++)
		for (int k = 1; k < size && ret >= 0; k++) {
			int d = (rank + k) % size;

			while ((ret = vfgx_mpi_rings_send(s->rings, d, block + (size_t)d * slice,
							  slice)) == -EAGAIN)
				if ((ret = bench_drain(s, out, got, true)) < 0)
					break;
			/* Release what arrived meanwhile.  Draining only when a
			 * send is refused serialises the ranks: a rank whose
			 * sends all fit never releases, so its peers' rings to
			 * it fill and they wait for it to finish (2 ranks in
			 * the soft-RoCE guest: half the rate). */
			if (ret >= 0)
				ret = bench_drain(s, out, got, false);
		}
	while (ret >= 0 && !bench_done(got, rounds))
		ret = bench_drain(s, out, got, true);
	mine[0] = MPI_Wtime() - t;
	/* every record from the block consumed before it goes */
	if (ret >= 0)
		ret = vfgx_mpi_rings_flush(s->rings);
	if (ret >= 0)
		ret = vfgx_mpi_rings_register(s->rings, NULL, 0);
	if (!a2a_first)
		mine[1] = time_alltoall(block, out, slice, rounds);
	MPI_Reduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	*ring_s = all[0];
	*a2a_s = all[1];
	*bytes = (uint64_t)rounds * (uint64_t)size * (uint64_t)(size - 1) * slice;
	free(block);
	free(out);
	free(got);
	return ret < 0 ? ret : 0;
}

static const char yaml_fmt[] =
	"interfaces:\n"
	"  - backend: loopback\n"
	"    loopback: { packets: %llu, packet_size: %u, flows: 1 }\n"
	"pipeline:\n"
	"  device: cpu\n"
	"  chunks: { payload_bytes: %u, packets: %u, streams: 1, in_flight: 16 }\n";

int main(int argc, char **argv)
{
	struct state s = { 0 };
	struct vfgx_config *cfg = NULL;
	vfgx_pipeline *pl = NULL;
	vfgx_port *port = NULL;
	vfgx_ctx *ctx = NULL;
	uint64_t chunks = 0, nchunks = 64, boot_t0 = 0, t_init, t_open, errs[2], tot[2];
	uint32_t rounds = 0;
	char yaml[512], via[64];
	uint8_t *buf;
	int ret;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--chunks") && i + 1 < argc)
			nchunks = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--bench") && i + 1 < argc)
			rounds = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--ring-bytes") && i + 1 < argc)
			ring_bytes = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--transport") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "auto") || !strcmp(argv[i + 1], "rdma") ||
			  !strcmp(argv[i + 1], "mpi"))) {
			i++;
			transport = !strcmp(argv[i], "rdma") ? VFGX_MPI_RINGS_VERBS :
				    !strcmp(argv[i], "mpi") ? VFGX_MPI_RINGS_WINDOW :
				    VFGX_MPI_RINGS_AUTO;
		} else if (!strcmp(argv[i], "--rdma-dev") && i + 1 < argc)
			rdma_dev = argv[++i];
		else if (!strcmp(argv[i], "--alltoall-first"))
			a2a_first = true;
		else if (!strcmp(argv[i], "--flip"))
			flip = true;
		else {
			if (rank == 0)
				fprintf(stderr, "usage: mpirun -np N corner_turn [--chunks C] [--bench ROUNDS] [--ring-bytes B] [--transport auto|rdma|mpi] [--rdma-dev NAME] [--alltoall-first] [--flip]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (getenv("VFGX_BOOT_T0_NS"))
		boot_t0 = strtoull(getenv("VFGX_BOOT_T0_NS"), NULL, 10);
	s.packets = SLOTS_PER_RANK * (uint32_t)size;
	s.next = calloc((size_t)size, sizeof(*s.next));
	s.end = malloc((size_t)size * sizeof(*s.end));
	buf = malloc(sizeof(struct slice_hdr) + (size_t)SLOTS_PER_RANK * (4 + SLOT_BYTES));
	if (!s.next || !s.end || !buf || vfgx_ctx_create(&ctx)) {
		fprintf(stderr, "corner_turn: rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int p = 0; p < size; p++)
		s.end[p] = -1;
	MPI_Barrier(MPI_COMM_WORLD); /* every rank is past MPI_Init */
	t_init = realtime_ns();
	ret = vfgx_mpi_rings_open_transport(ctx, MPI_COMM_WORLD, ring_bytes, transport, rdma_dev,
					    &s.rings);
	if (ret) {
		fprintf(stderr, "corner_turn: rank %d: %s\n", rank, vfgx_last_error(ctx));
		MPI_Finalize();
		return 1;
	}
	MPI_Barrier(MPI_COMM_WORLD); /* every rank's rings are connected */
	t_open = realtime_ns();
	/* a slot holds what follows the app header: a full slot per packet */
	snprintf(yaml, sizeof(yaml), yaml_fmt, (unsigned long long)(nchunks * s.packets),
		 SLOT_BYTES + VFGX_ETH_HLEN + 20 + VFGX_UDP_HLEN + VFGX_APP_HLEN,
		 SLOT_BYTES, s.packets);
	if (vfgx_config_load_string(ctx, yaml, strlen(yaml), "corner_turn", &cfg) ||
	    vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port) ||
	    vfgx_pipeline_create(ctx, &cfg->pipeline, &port, 1, &pl) ||
	    vfgx_pipeline_start(pl)) {
		fprintf(stderr, "corner_turn: rank %d: %s\n", rank, vfgx_last_error(ctx));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	ret = corner_turn(&s, pl, buf, &chunks);
	if (ret) {
		fprintf(stderr, "corner_turn: rank %d: %s\n", rank, strerror(-ret));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	vfgx_pipeline_stop(pl);
	/* every peer said how many it sent: that many arrived, in order */
	for (int p = 0; p < size; p++)
		if (p != rank && (s.end[p] != (int64_t)s.next[p] || s.next[p] != nchunks))
			s.bad++;
	if (chunks != nchunks)
		s.bad++;
	errs[0] = s.bad;
	errs[1] = s.slices;
	MPI_Reduce(errs, tot, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (vfgx_mpi_rings_transport(s.rings) == VFGX_MPI_RINGS_VERBS)
			snprintf(via, sizeof(via), "verbs rings on %s", vfgx_mpi_rings_rdma_dev(s.rings));
		else
			snprintf(via, sizeof(via), "MPI window rings");
		printf("corner_turn: %d ranks, %s, %" PRIu64 " chunks of %u packets x %u bytes per rank, "
		       "%" PRIu64 " slices checked (want %" PRIu64 "), %" PRIu64 " errors: %s\n",
		       size, via, nchunks, s.packets, SLOT_BYTES, tot[1],
		       nchunks * (uint64_t)size * (uint64_t)size, tot[0],
		       tot[0] || tot[1] != nchunks * (uint64_t)size * (uint64_t)size ? "FAILED" : "ok");
		if (boot_t0)
			printf("bootstrap_ms=%.3f init_ms=%.3f rings_ms=%.3f\n",
			       (double)(t_open - boot_t0) / 1e6, (double)(t_init - boot_t0) / 1e6,
			       (double)(t_open - t_init) / 1e6);
	}
	ret = tot[0] || tot[1] != nchunks * (uint64_t)size * (uint64_t)size;
	MPI_Bcast(&ret, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rounds && !ret) {
		double ring_s, a2a_s;
		uint64_t bytes;

		if ((ret = bench(&s, rounds, &ring_s, &a2a_s, &bytes)))
			fprintf(stderr, "corner_turn: rank %d: bench: %s\n", rank, strerror(-ret));
		if (rank == 0)
			printf("bench: rounds=%u bytes=%" PRIu64 " ring_s=%.6f alltoall_s=%.6f "
			       "ring_gbps=%.3f alltoall_gbps=%.3f\n", rounds, bytes, ring_s, a2a_s,
			       (double)bytes * 8 / ring_s / 1e9, (double)bytes * 8 / a2a_s / 1e9);
	}
	vfgx_mpi_rings_close(s.rings);
	vfgx_pipeline_destroy(pl);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	vfgx_ctx_destroy(ctx);
	free(s.next);
	free(s.end);
	free(buf);
	MPI_Finalize();
	return ret ? 1 : 0;
}
