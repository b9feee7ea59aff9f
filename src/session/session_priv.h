/* session_priv.h - the parts of a vfgx_session (session.c): the user code
 * (user_cpu.c, user_gpu.c), the recorder hookup (session_record.c) and
 * the session itself. */
#ifndef VFGX_SESSION_PRIV_H
#define VFGX_SESSION_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vfgx/session.h>
#include <vfgx/user.h>
#include <vfgx/vfgx.h>

/* pipeline.user.gpu_module: a CUDA module whose per-chunk kernel runs on
 * every ready chunk (user_gpu.c). */
struct session_gpu_user {
	bool loaded;
	void *lib, *kernel, *stream; /* cudaLibrary_t, cudaKernel_t, cudaStream_t */
	void *state;
	uint64_t state_bytes;
	uint32_t threads;
	const char *path, *state_out;
	uint64_t launches;
	char error[256]; /* the first failure, one line */
};

/* Load the module and find its kernel; 0, or -EINVAL with the error set. */
int session_gpu_user_load(struct session_gpu_user *g, vfgx_ctx *ctx,
			  const struct vfgx_config *cfg);
/* Run the kernel on chunk c and wait for it: 0, or -1 with g->error set
 * (a faulting kernel: the run must stop). */
int session_gpu_user_chunk(struct session_gpu_user *g, const struct vfgx_chunk *c);
/* After the run: the state into gpu_state_out; -1 with g->error set. */
int session_gpu_user_finish(struct session_gpu_user *g);
void session_gpu_user_close(struct session_gpu_user *g);

/* The record: section or opts->record_path (session_record.c). */
struct session_record {
	bool on;                  /* asked for */
	vfgx_record *rec;         /* NULL when off or its first file failed */
	const char *path;
	char *config_text;        /* owned */
	uint64_t refused;         /* chunks offered while rec is NULL */
	bool told;                /* the line that stopped it is logged */
	struct vfgx_record_stats st;
};

/* After the pipeline exists.  An unusable first file stops the recording
 * with one logged line and the run goes on; a config without chunks or
 * options the build refuses: -EINVAL with the error set. */
int session_record_open(struct session_record *rr, vfgx_ctx *ctx,
			const struct vfgx_config *cfg, const char *config_text,
			const char *flag_path, vfgx_pipeline *pl);
/* 1: the recorder keeps the chunk and gives it back once written */
int session_record_chunk(struct session_record *rr, vfgx_ctx *ctx,
			  const struct vfgx_chunk *c);
uint32_t session_record_poll(struct session_record *rr);
void session_record_close(struct session_record *rr, vfgx_ctx *ctx);
void session_record_free(struct session_record *rr, vfgx_ctx *ctx);

/* pipeline.user.library and the consumer thread (user_cpu.c). */
struct session_user {
	void *dl;                            /* dlopen handle, or NULL */
	const struct vfgx_user_module *mod;  /* or NULL */
	void *state;                         /* the module's */
	const char *user_arg;                /* pipeline.user.arg */
	char name[128];                      /* the module's name, escaped */
	bool inited;
	vfgx_pipeline *pl;
	vfgx_ctx *ctx;
	pthread_t thread;
	bool running;
	uint64_t chunks, complete, user_errors;
	int fini_ret;
	struct session_gpu_user gpu;         /* pipeline.user.gpu_module */
	_Atomic bool failed;                 /* the GPU kernel faulted: stop */
	struct session_record *rec;          /* the recorder, or NULL */
	vfgx_session_chunk_fn on_chunk;
	void *on_chunk_user;
};

/* Load pipeline.user.library and gpu_module: 0 or -EINVAL (error set). */
int session_user_load(struct session_user *u, vfgx_ctx *ctx, const struct vfgx_config *cfg);
/* The module's init and stage, and the consumer thread when the pipeline
 * has chunks (and consume).  -EINVAL: the module does not fit the
 * pipeline; other: init or the thread failed. */
int session_user_start(struct session_user *u, vfgx_pipeline *pl, bool consume);
bool session_user_failed(struct session_user *u);
/* After vfgx_pipeline_stop: join the consumer, the module's fini. */
void session_user_stop(struct session_user *u);
void session_user_close(struct session_user *u);

struct vfgx_session {
	vfgx_ctx *ctx;
	struct vfgx_config *cfg;
	bool owns_cfg;
	struct vfgx_session_opts opts;
	char *config_text;                   /* for the recorder, owned */
	vfgx_port *ports[VFGX_MAX_IFACES];
	uint16_t nb_ports;
	vfgx_capture *cap;
	const char *capture_path;
	bool capture_closed;
	struct vfgx_capture_stats cap_st;
	vfgx_pipeline *pl;
	struct session_user user;
	struct session_record rec;
	char gpu_path[VFGX_PATH_MAX * 2];    /* escaped, for the report */
	char record_path[VFGX_PATH_MAX * 2];
	char capture_path_esc[VFGX_PATH_MAX * 2];
	bool started, stopped;
	uint64_t t0, t1;
	vfgx_metrics *metrics;               /* the endpoint fed, or NULL */
	vfgx_metrics *own_metrics;           /* the session's own (opts) */
};

#endif
