/* run_mpi.c - `mpirun -np N vfgx run CONFIG`: each rank runs its own ports
 * and pipeline (its ranks: entry), counters are reduced to rank 0, which
 * prints one report with a row per rank and checks expect: over the job. */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include <vfgx/socket.h>

#include "cliopt.h"
#include "run_mpi.h"
#include "run_output.h"

_Static_assert(sizeof(struct vfgx_pipeline_stats) % sizeof(uint64_t) == 0,
	       "pipeline stats are reduced as an array of uint64_t");
#define STATS_WORDS ((int)(sizeof(struct vfgx_pipeline_stats) / sizeof(uint64_t)))

/* What a rank adds to its pipeline counters for the report. */
struct rank_row {
	struct vfgx_pipeline_stats st;
	uint64_t rx_packets;  /* every port queue's rx counter */
	uint64_t port_drops;  /* backend drops past no-buffer, refused conns */
	uint64_t src_known;   /* 1: every queue is a finite source */
	uint64_t generated, lost, duplicated, corrupted;
	uint64_t pipeline_err; /* -errno of the pipeline, as unsigned */
	uint64_t local_rank;
	double secs;
	char host[64];
};

static const struct run_rank *my_entry(const struct run_config *cfg,
					       int rank, int local_rank)
{
	for (uint16_t i = 0; i < cfg->nb_ranks; i++)
		if (cfg->ranks[i].rank == rank)
			return &cfg->ranks[i];
	for (uint16_t i = 0; i < cfg->nb_ranks; i++)
		if (cfg->ranks[i].rank < 0 && cfg->ranks[i].local_rank == local_rank)
			return &cfg->ranks[i];
	return NULL;
}

static int apply_entry(const struct run_mpi *m, struct vfgx_config *cfg,
		       const struct run_rank *e)
{
	uint16_t n = 0;

	if (e->nb_ifaces) {
		/* keep the named interfaces, in config order; the rest are
		 * another rank's (the structs are swapped, never freed twice) */
		for (uint16_t i = 0; i < cfg->nb_ifaces; i++) {
			bool mine = false;

			for (uint16_t k = 0; k < e->nb_ifaces; k++)
				mine |= !strcmp(cfg->ifaces[i].name, e->ifaces[k].name);
			if (mine) {
				struct vfgx_iface_config t = cfg->ifaces[n];

				cfg->ifaces[n++] = cfg->ifaces[i];
				cfg->ifaces[i] = t;
			}
		}
		/* the others stay past nb_ifaces, still freed by
		 * vfgx_config_destroy (it stops at the first unallocated) */
		cfg->nb_ifaces = n;
	}
	for (uint16_t i = 0; e->rx_queues && i < cfg->nb_ifaces; i++)
		if (cfg->ifaces[i].nb_rx_queues > e->rx_queues)
			cfg->ifaces[i].nb_rx_queues = e->rx_queues;
	if (e->gpu >= 0) {
		char dev[16];

		snprintf(dev, sizeof(dev), "%d", e->gpu);
		setenv("CUDA_VISIBLE_DEVICES", dev, 1);
	}
	if (e->nb_cores) {
		cpu_set_t set;

		CPU_ZERO(&set);
		for (uint16_t i = 0; i < e->nb_cores; i++)
			CPU_SET(e->cores[i], &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "vfgx: rank %d: ranks: cores: %s (is every core listed online?)\n",
				m->rank, strerror(errno));
			return 2;
		}
	}
	return 0;
}

int run_mpi_begin(struct run_mpi *m, struct vfgx_config *cfg, const struct run_config *rc,
		  bool json)
{
	const struct run_rank *e;
	MPI_Comm node;

	memset(m, 0, sizeof(*m));
	if (!run_mpi_launched())
		return 0;
	if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
		fprintf(stderr, "vfgx: MPI_Init failed (launched by mpirun/srun?)\n");
		return 1;
	}
	m->on = true;
	MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &m->size);
	/* the local rank as the launcher sees it: ranks sharing this node */
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m->rank,
			    MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &m->local_rank);
	MPI_Comm_free(&node);
	if (json) {
		fprintf(stderr, "vfgx: rank %d: --json is not available under mpirun (the job report is text on rank 0)\n",
			m->rank);
		return 2;
	}
	if (cfg->user_library[0] || cfg->user_gpu_module[0]) {
		/* their checks are in the single-process report only */
		fprintf(stderr, "vfgx: rank %d: %s: pipeline.user is not available under mpirun yet (run it without a launcher)\n",
			m->rank, cli_esc(cfg->source));
		return 2;
	}
	e = my_entry(rc, m->rank, m->local_rank);
	return e ? apply_entry(m, cfg, e) : 0;
}

static void fill_row(struct rank_row *row, const struct run_mpi *m,
		     vfgx_port **ports, uint16_t nb_ports,
		     const struct vfgx_pipeline_stats *st, int pipeline_err,
		     double secs)
{
	bool any = false, known = true;

	memset(row, 0, sizeof(*row));
	row->st = *st;
	row->pipeline_err = (uint64_t)(int64_t)pipeline_err;
	row->local_rank = (uint64_t)m->local_rank;
	row->secs = secs;
	gethostname(row->host, sizeof(row->host) - 1);
	for (uint16_t i = 0; i < nb_ports; i++) {
		struct vfgx_socket_info si;

		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			struct vfgx_queue_stats qs;
			struct vfgx_source_report r;

			vfgx_port_stats(ports[i], q, &qs);
			vfgx_port_source_report(ports[i], q, &r);
			row->rx_packets += qs.rx_packets;
			for (int k = VFGX_DROP_NOBUFS + 1; k < VFGX_DROP_MAX; k++)
				row->port_drops += qs.drops[k];
			any = true;
			known = known && r.known;
			row->generated += r.generated;
			row->lost += r.lost;
			row->duplicated += r.duplicated;
			row->corrupted += r.corrupted;
		}
		if (!vfgx_socket_info(ports[i], &si) && si.tcp)
			row->port_drops += si.refused;
	}
	row->src_known = any && known;
}

static uint64_t drops_of(const struct vfgx_pipeline_stats *st)
{
	uint64_t d = 0;

	for (int i = 0; i < VFGX_DROP_MAX; i++)
		d += st->drops[i];
	return d;
}

static void check(int *failed, bool wanted, bool ok, const char *what,
		  const char *detail)
{
	if (!wanted)
		return;
	run_output_expectation(what, ok, detail);
	printf("  %-13s %s  %s\n", what, ok ? "ok" : "FAILED", detail);
	if (!ok)
		*failed = 1;
}

/* Rank 0: the rows, the job's totals (tot: MPI_Reduce of every rank's
 * counters) and expect: over the whole job.  The exit code. */
static int job_report(const struct run_mpi *m, const struct vfgx_config *cfg,
		      const struct run_config *rc,
		      const struct rank_row *rows,
		      const struct vfgx_pipeline_stats *tot)
{
	struct rank_row sum = { .src_known = 1 };
	uint64_t drops = drops_of(tot);
	double secs = 0;
	int failed = 0;
	char d[320];

	printf("\n== vfgx run report (%s, %d MPI ranks) ==\n", cli_esc(cfg->source), m->size);
	printf("%-5s %-5s %-16s %12s %12s %12s %8s %8s %8s %8s %7s\n", "rank",
	       "local", "host", "packets", "delivered", "bytes", "gaps", "drops",
	       "verify", "order", "secs");
	for (int r = 0; r < m->size; r++) {
		const struct rank_row *w = &rows[r];

		printf("%-5d %-5" PRIu64 " %-16.16s %12" PRIu64 " %12" PRIu64 " %12" PRIu64
		       " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %7.3f%s%s\n",
		       r, w->local_rank, cli_esc(w->host), w->st.packets, w->st.delivered,
		       w->st.delivered_bytes, w->st.gaps,
		       drops_of(&w->st) + w->port_drops, w->st.verify_errors,
		       w->st.order_errors, w->secs, w->pipeline_err ? "  pipeline error: " : "",
		       w->pipeline_err ? vfgx_strerror((int)(int64_t)w->pipeline_err) : "");
		sum.rx_packets += w->rx_packets;
		sum.port_drops += w->port_drops;
		sum.src_known &= w->src_known;
		sum.generated += w->generated;
		sum.lost += w->lost;
		sum.duplicated += w->duplicated;
		sum.corrupted += w->corrupted;
		failed |= w->pipeline_err != 0;
		if (w->secs > secs)
			secs = w->secs;
	}
	printf("job: %" PRIu64 " packets in %.3f s (%.3f Mpps, %.3f Gbps), delivered %" PRIu64
	       " (%" PRIu64 " payload bytes), gaps %" PRIu64 ", drops %" PRIu64
	       ", verify errors %" PRIu64 "\n",
	       tot->packets, secs, secs > 0 ? (double)tot->packets / secs / 1e6 : 0,
	       secs > 0 ? (double)tot->bytes * 8 / secs / 1e9 : 0, tot->delivered,
	       tot->delivered_bytes, tot->gaps, drops + sum.port_drops,
	       tot->verify_errors);
	printf("latency (rx to processed, all ranks): p50 <= %" PRIu64 " ns, p99 <= %" PRIu64 " ns\n",
	       vfgx_stats_lat_pct(tot, 50), vfgx_stats_lat_pct(tot, 99));
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		if (tot->drops[i])
			printf("drop %-12s %" PRIu64 "\n",
			       vfgx_drop_reason_name((enum vfgx_drop_reason)i), tot->drops[i]);
	printf("expectations (whole job):\n");
	if (rc->expect.all_received && sum.src_known) {
		uint64_t want = sum.generated - sum.lost - sum.corrupted;
		uint64_t sent = sum.generated - sum.lost + sum.duplicated;
		uint64_t explained = tot->drops[VFGX_DROP_BAD_UDP_CSUM] +
				     tot->drops[VFGX_DROP_DUPLICATE] +
				     tot->drops[VFGX_DROP_LATE];

		snprintf(d, sizeof(d), "delivered %" PRIu64 " of %" PRIu64 " expected; received %" PRIu64
			 " of %" PRIu64 " sent; unexplained drops %" PRIu64,
			 tot->delivered, want, tot->packets, sent,
			 drops - explained + sum.port_drops);
		check(&failed, true,
		      tot->delivered == want && tot->packets == sent &&
			      sum.rx_packets == sent && drops == explained &&
			      sum.port_drops == 0 &&
			      tot->drops[VFGX_DROP_BAD_UDP_CSUM] == sum.corrupted &&
			      tot->drops[VFGX_DROP_DUPLICATE] + tot->drops[VFGX_DROP_LATE] ==
				      sum.duplicated,
		      "all_received", d);
	} else if (rc->expect.all_received) {
		snprintf(d, sizeof(d), "live source: received %" PRIu64 ", delivered %" PRIu64
			 "; dropped by ports %" PRIu64 ", by the pipelines %" PRIu64 ", gaps %" PRIu64,
			 sum.rx_packets, tot->delivered, sum.port_drops, drops, tot->gaps);
		check(&failed, true,
		      sum.port_drops == 0 && drops == 0 && tot->gaps == 0 &&
			      tot->delivered == tot->packets && sum.rx_packets == tot->packets,
		      "all_received", d);
	}
	snprintf(d, sizeof(d), "%" PRIu64 " out-of-order deliveries", tot->order_errors);
	check(&failed, rc->expect.in_order, tot->order_errors == 0, "in_order", d);
	snprintf(d, sizeof(d), "%" PRIu64 " payload mismatches", tot->verify_errors);
	check(&failed, rc->expect.verified, tot->verify_errors == 0, "verified", d);
	snprintf(d, sizeof(d), "%" PRIu64 " delivered by %d ranks, at least %" PRIu64 " wanted",
		 tot->delivered, m->size, rc->expect.min_packets);
	check(&failed, rc->expect.min_packets > 0,
	      tot->delivered >= rc->expect.min_packets, "min_packets", d);
	printf("result: %s\n", failed ? "FAILED" : "PASSED");
	fflush(stdout);
	return failed ? 1 : 0;
}

int run_mpi_report(struct run_mpi *m, const struct vfgx_config *cfg,
		   const struct run_config *rcfg,
		   vfgx_port **ports, uint16_t nb_ports,
		   const struct vfgx_pipeline_stats *st, int pipeline_err,
		   double secs)
{
	struct vfgx_pipeline_stats tot = { 0 };
	struct rank_row mine, *rows = NULL;
	int rc = 1;

	m->reported = true;
	fill_row(&mine, m, ports, nb_ports, st, pipeline_err, secs);
	if (m->rank == 0) {
		rows = calloc((size_t)m->size, sizeof(*rows));
		if (!rows) {
			fprintf(stderr, "vfgx: rank 0: out of memory for %d report rows\n", m->size);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	MPI_Reduce(st, &tot, STATS_WORDS, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Gather(&mine, (int)sizeof(mine), MPI_BYTE, rows, (int)sizeof(mine),
		   MPI_BYTE, 0, MPI_COMM_WORLD);
	if (m->rank == 0)
		rc = job_report(m, cfg, rcfg, rows, &tot);
	free(rows);
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return rc;
}

void run_mpi_end(struct run_mpi *m, int rc)
{
	if (!m->on)
		return;
	if (!m->reported && rc) {
		/* its error is printed; the others may wait for it in the
		 * report's collectives: end them all, now */
		fflush(stderr);
		MPI_Abort(MPI_COMM_WORLD, rc);
	}
	MPI_Finalize();
}
