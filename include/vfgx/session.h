/* vfgx/session.h - a whole receive run assembled by the library: the
 * config's ports, capture, pipeline, observers (Prometheus endpoint,
 * gpurdma_mon), the user code of pipeline.user (a CPU module, a CUDA
 * module), the chunk consumer thread that hands every ready chunk to the
 * user code and the recorder, and the report.  `vfgx run` is a client of
 * it; so is any program that wants what `vfgx run` does.
 *
 *   vfgx_session_create_file(ctx, "rx.yaml", NULL, &s);
 *   vfgx_session_start(s);
 *   while (!vfgx_session_done(s)) sleep...;
 *   vfgx_session_stop(s);
 *   vfgx_session_report(s, &rep);       (or vfgx_session_report_print)
 *   vfgx_session_destroy(s);
 *
 * Errors return a negative errno with vfgx_last_error(ctx) saying what
 * and where; -EINVAL is the config's or the options' fault (a usage
 * error), anything else the machine's.  Thread-safety: one thread drives
 * a session; vfgx_session_done and vfgx_session_stats may be called from
 * any thread while it runs.  docs/api.md. */
#ifndef VFGX_SESSION_H
#define VFGX_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture.h"
#include "chunk.h"
#include "config.h"
#include "core.h"
#include "metrics.h"
#include "pipeline.h"
#include "port.h"
#include "record.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

typedef struct vfgx_session vfgx_session;

/* A chunk the session's consumer took, handed to the program before the
 * user module, the CUDA module and the recorder see it; it is given back
 * after all of them.  Non-zero counts as a user error. */
typedef int (*vfgx_session_chunk_fn)(void *user, const struct vfgx_chunk *c);

/* What the session adds to, or overrides in, its config; defaults in
 * brackets (vfgx_session_opts_default).  The struct may grow at the end:
 * argsz says which version. */
struct vfgx_session_opts {
	uint32_t argsz;            /* sizeof(struct vfgx_session_opts) */
	double duration_s;         /* [-1: the config's] overrides
				    * pipeline.duration_s when >= 0 */
	const char *capture_path;  /* [NULL: pipeline.capture.path] a capture
				    * file; pcapng for a name ending .pcapng */
	bool capture_replace;      /* [false] an existing capture file is
				    * replaced (never a file a port reads) */
	const char *record_path;   /* [NULL: record.path] record every chunk;
				    * HDF5 for .h5/.hdf5, raw otherwise */
	const char *config_path;   /* [NULL] the file whose text the recorder
				    * stores; NULL: the text the session was
				    * created from (the embedded default for
				    * vfgx_config_load_default's config) */
	vfgx_metrics *metrics;     /* [NULL] an endpoint (vfgx_metrics_start)
				    * the session's pipeline feeds */
	const char *metrics_job;   /* ["session"] its job label */
	bool no_mon;               /* [false] do not publish to gpurdma_mon */
	bool no_consumer;          /* [false] no consumer thread: the program
				    * takes chunks itself (vfgx_chunk_get);
				    * refused with a user module's chunk
				    * callback, a CUDA module or a recorder */
	vfgx_session_chunk_fn on_chunk; /* [NULL] see above */
	void *on_chunk_user;
	/* what a program that takes chunks itself when nothing else does
	 * (the Python package) and serves metrics of its own asks for */
	bool consumer_auto;        /* [false] the consumer thread only when a
				    * module's chunk callback, a CUDA module,
				    * the recorder or on_chunk takes chunks;
				    * else the program takes them
				    * (vfgx_session_consumes says which) */
	const char *metrics_listen; /* [NULL] an endpoint of the session's own
				    * at "ADDR:PORT", "[IPv6]:PORT" or ":PORT"
				    * (port 0 picks one), fed by its pipeline
				    * and serving the final counters until
				    * vfgx_session_destroy; not with metrics */
	bool metrics_config;       /* [false] with metrics_listen NULL: such an
				    * endpoint where the config's metrics.listen
				    * says, when it says (`vfgx run` starts
				    * its own and leaves this off) */
	const char *config_text;   /* [NULL] the text the recorder stores for
				    * a config the caller loaded
				    * (vfgx_session_create); config_path wins */
};

void vfgx_session_opts_default(struct vfgx_session_opts *o);

/* From a loaded config, which the caller keeps (and may have edited)
 * until vfgx_session_destroy.  Opens the user code, the ports, the
 * capture, the pipeline, its observers and the recorder, in that order;
 * nothing runs yet.  opts NULL: the defaults. */
int vfgx_session_create(vfgx_ctx *ctx, struct vfgx_config *cfg,
			const struct vfgx_session_opts *opts, vfgx_session **out);
/* From a YAML file, or text (len bytes; name for messages), or the
 * embedded default (path NULL); the session owns the config. */
int vfgx_session_create_file(vfgx_ctx *ctx, const char *path,
			     const struct vfgx_session_opts *opts, vfgx_session **out);
int vfgx_session_create_text(vfgx_ctx *ctx, const char *yaml, size_t len,
			     const char *name, const struct vfgx_session_opts *opts,
			     vfgx_session **out);

/* The user module's init and stage, the consumer thread, then the
 * pipeline. */
int vfgx_session_start(vfgx_session *s);
/* True once the pipeline ended (its sources ended, or duration_s) or user
 * code failed so that the run must stop. */
bool vfgx_session_done(vfgx_session *s);
/* The live counters (vfgx_pipeline_stats). */
void vfgx_session_stats(vfgx_session *s, struct vfgx_pipeline_stats *st);
/* Stop the pipeline, join the consumer, the module's fini, close the
 * recorder and the capture.  Idempotent. */
void vfgx_session_stop(vfgx_session *s);

/* What the session opened (owned by the session). */
const struct vfgx_config *vfgx_session_config(const vfgx_session *s);
vfgx_pipeline *vfgx_session_pipeline(vfgx_session *s);
uint16_t vfgx_session_nb_ports(const vfgx_session *s);
vfgx_port *vfgx_session_port(vfgx_session *s, uint16_t i);
/* True when the session's consumer thread takes the chunks (the pipeline
 * has chunks and no_consumer is off, or consumer_auto found user code or
 * the recorder to hand them to); false: vfgx_chunk_get is the program's. */
bool vfgx_session_consumes(const vfgx_session *s);
/* The endpoint the pipeline feeds (opts.metrics, or the session's own,
 * vfgx_metrics_port says where), or NULL. */
vfgx_metrics *vfgx_session_metrics(vfgx_session *s);

/* The report of a stopped session. */
struct vfgx_session_report {
	uint32_t argsz;            /* the caller sets sizeof; the library fills */
	double secs;               /* start to stop */
	struct vfgx_pipeline_stats pipeline;
	int pipeline_error;        /* vfgx_pipeline_error */
	/* the ports, every rx queue summed */
	uint64_t rx_packets;
	uint64_t port_drops;       /* dropped by the backends before the
				    * pipeline, no-buffer events excepted */
	uint64_t conns_refused;    /* socket tcp: max_conns refusals */
	struct vfgx_source_report source; /* known when every queue's is */
	/* pipeline.user.library */
	bool user_module;
	const char *user_module_name; /* escaped, owned by the session */
	uint64_t chunks;           /* chunks the consumer took */
	uint64_t complete;         /* of which complete */
	uint64_t user_errors;      /* callbacks (and kernels) that failed */
	int user_fini;             /* the module's fini's return */
	/* pipeline.user.gpu_module */
	bool gpu_module;
	const char *gpu_module_path;
	uint64_t gpu_launches;
	const char *gpu_error;     /* "" or the first failure, one line */
	/* the capture */
	bool capture;
	const char *capture_path;
	bool capture_closed;       /* closed whole (no write error at close) */
	struct vfgx_capture_stats capture_stats;
	/* the recorder */
	bool record;
	const char *record_path;
	struct vfgx_record_stats record_stats; /* not_recorded includes the
				    * chunks offered when its first file failed */
};

int vfgx_session_report(vfgx_session *s, struct vfgx_session_report *rep);
/* The report's lines, as `vfgx run` prints them (ports, pipeline, drops,
 * capture, source, chunks, user code, recorder).  sent: a sender's own
 * account of what it sent (a `vfgx send --json` report) printed instead
 * of the ports', or NULL.  0 when every part the session ran ended well:
 * the user code (no errors, fini 0, no CUDA failure) and the recorder. */
int vfgx_session_report_print(vfgx_session *s, const struct vfgx_source_report *sent,
			      FILE *f);

void vfgx_session_destroy(vfgx_session *s);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
