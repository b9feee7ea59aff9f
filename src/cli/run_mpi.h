/* run_mpi.h - `mpirun -np N vfgx run CONFIG`: MPI only when the launcher's
 * environment says so (the plain CLI never calls MPI), the config's ranks:
 * overrides, the job report on rank 0, and MPI_Abort for a rank that fails
 * before it (never a hang). */
#ifndef VFGX_CLI_RUN_MPI_H
#define VFGX_CLI_RUN_MPI_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <vfgx/vfgx.h>

#include "run_config.h"

struct run_mpi {
	bool on;        /* launched by mpirun/srun and MPI initialised */
	bool reported;  /* reached the job report (every rank does, or none) */
	int rank, size, local_rank;
};

/* The launcher's variables: Open MPI, PMIx (srun --mpi=pmix), PMI-2. */
static inline bool run_mpi_launched(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
	       getenv("PMI_RANK");
}

#ifdef VFGX_HAVE_MPI
/* When launched: MPI_Init, then this rank's ranks: entry applied to cfg
 * (interfaces, rx queues, CUDA_VISIBLE_DEVICES, CPU affinity).
 * 0, or an exit code after a one-line error. */
int run_mpi_begin(struct run_mpi *m, struct vfgx_config *cfg,
		  const struct run_config *rc, bool json);
/* Reduce every rank's counters to rank 0, which prints one report with a
 * row per rank and checks expect: over the whole job.  Every rank
 * returns the job's exit code. */
int run_mpi_report(struct run_mpi *m, const struct vfgx_config *cfg,
		   const struct run_config *rc, vfgx_port **ports, uint16_t nb_ports,
		   const struct vfgx_pipeline_stats *st, int pipeline_err,
		   double secs);
/* A rank that failed before the report ends the job (MPI_Abort); the
 * others finalize. */
void run_mpi_end(struct run_mpi *m, int rc);
#else
static inline int run_mpi_begin(struct run_mpi *m, struct vfgx_config *cfg,
				const struct run_config *rc, bool json)
{
	(void)cfg;
	(void)rc;
	(void)json;
	m->on = false;
	if (!run_mpi_launched())
		return 0;
	fprintf(stderr, "vfgx: launched by mpirun/srun, but this vfgx was built without MPI (install libopenmpi-dev and rebuild; meson option mpi)\n");
	return 2;
}
static inline int run_mpi_report(struct run_mpi *m, const struct vfgx_config *cfg,
				 const struct run_config *rc, vfgx_port **ports, uint16_t nb_ports,
				 const struct vfgx_pipeline_stats *st,
				 int pipeline_err, double secs)
{
	(void)m, (void)cfg, (void)rc, (void)ports, (void)nb_ports, (void)st;
	(void)pipeline_err, (void)secs;
	return 1; /* never reached: run_mpi_begin refused */
}
static inline void run_mpi_end(struct run_mpi *m, int rc)
{
	(void)m;
	(void)rc;
}
#endif
#endif
