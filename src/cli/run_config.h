/* run_config.h - the config sections `vfgx run` reads itself
 * (run_config.c): expect: (what the run must show to pass), metrics:
 * (the Prometheus endpoint) and ranks: (per-rank overrides under
 * mpirun).  Each is a table the library reads at load
 * (vfgx_config_section); the checks between keys are made here. */
#ifndef VFGX_CLI_RUN_CONFIG_H
#define VFGX_CLI_RUN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <vfgx/config.h>

#define RUN_MAX_RANK_ENTRIES 4096
#define RUN_MAX_RANK_CORES 1024

struct run_expect {
	bool all_received;  /* every generated packet accounted for */
	bool in_order;      /* reorder delivered every sequence, no gaps */
	bool verified;      /* no payload mismatch */
	/* delivered at least this many; default 1: a run that delivered
	 * nothing fails unless the config sets 0 (an empty run expected) */
	uint64_t min_packets;
};

/* ranks[i]: what one MPI rank of `mpirun -np N vfgx run` uses (the entry
 * of its rank, else of its local rank; none: the whole config). */
struct run_rank_iface {
	const char *name;      /* interfaces[].name */
	const char *where;     /* its place in the file, for messages */
};

struct run_rank {
	int32_t rank;          /* MPI_COMM_WORLD rank, -1: matched by local_rank */
	int32_t local_rank;    /* rank on its node, -1: matched by rank */
	uint16_t nb_ifaces;    /* 0: every interface */
	const struct run_rank_iface *ifaces; /* the interfaces this rank opens */
	uint16_t rx_queues;    /* 0: as configured; else each of its
				* interfaces keeps its first rx_queues */
	int32_t gpu;           /* -1: unchanged; CUDA device the rank sees */
	uint16_t nb_cores;     /* 0: unchanged */
	const uint16_t *cores; /* CPU cores the rank's threads run on */
};

struct run_config {
	struct run_expect expect;
	const char *metrics_listen; /* metrics.listen: ADDR:PORT, NULL = off */
	uint16_t nb_ranks;
	struct run_rank *ranks;
};

/* The sections of a loaded config; strings and lists live in cfg.
 * 0, or -EINVAL with the place in vfgx_last_error. */
int run_config_parse(vfgx_ctx *ctx, const struct vfgx_config *cfg,
		     struct run_config *rc);
void run_config_free(struct run_config *rc);

#endif
