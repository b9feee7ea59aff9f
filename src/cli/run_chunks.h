/* run_chunks.h - what `vfgx run` adds around a pipeline with chunks or
 * user code (run_chunks.c): the user module of pipeline.user.library, a
 * consumer thread that hands every ready chunk to it and gives it back,
 * and the report's chunk lines. */
#ifndef VFGX_RUN_CHUNKS_H
#define VFGX_RUN_CHUNKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <vfgx/vfgx.h>
#include <vfgx/user.h>

#include "run_gpu_user.h"
#include "run_record.h"

struct run_chunks {
	void *dl;                            /* dlopen handle, or NULL */
	const struct vfgx_user_module *mod;  /* or NULL */
	void *state;                         /* the module's */
	const char *user_arg;                /* pipeline.user.arg */
	bool inited;
	vfgx_pipeline *pl;
	pthread_t thread;
	bool running;
	uint64_t chunks, complete, user_errors;
	int fini_ret;
	struct run_gpu_user gpu;             /* pipeline.user.gpu_module */
	_Atomic bool failed;                 /* the GPU kernel faulted: stop */
	struct run_record *rec;              /* the recorder, or NULL */
};

/* Load pipeline.user.library (one line on stderr and 2 on error). */
int run_chunks_load(struct run_chunks *rc, const struct vfgx_config *cfg);
/* After create, before start: the module's init and stage, and the
 * consumer thread when the pipeline has chunks.  Non-zero: one line
 * printed, exit code returned. */
int run_chunks_start(struct run_chunks *rc, vfgx_ctx *ctx, vfgx_pipeline *pl);
/* True once user code failed so that the run must stop (the line is in
 * the report). */
bool run_chunks_failed(struct run_chunks *rc);
/* After vfgx_pipeline_stop: join the consumer, the module's fini. */
void run_chunks_stop(struct run_chunks *rc);
/* The report's lines (nothing without chunks or a module); false when
 * the module's fini failed. */
bool run_chunks_report(const struct run_chunks *rc);
/* The JSON report's "chunks" object, or NULL without chunks. */
json_object *run_chunks_json(const struct run_chunks *rc);
void run_chunks_close(struct run_chunks *rc);
#endif
