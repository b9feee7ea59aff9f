/* run_output.h - what `vfgx run` gives besides its text report: the
 * Prometheus endpoint (--metrics; run.c attaches it to the pipeline as an
 * observer), and the report as one JSON document (--json). */
#ifndef VFGX_CLI_RUN_OUTPUT_H
#define VFGX_CLI_RUN_OUTPUT_H

#include <signal.h>
#include <stdbool.h>

#include <vfgx/mon.h>
#include <json-c/json.h>
#include <vfgx/vfgx.h>

#include "run_config.h"

#define RUN_JSON_SCHEMA "vfgx.run/1"

struct run_output {
	const char *listen;   /* --metrics, else the config's metrics.listen */
	double hold_s;        /* --metrics-hold */
	bool json;
	int rc;               /* exit code when run_output_open failed */
	vfgx_metrics *metrics;
	int saved_stdout;     /* while the text report goes to stderr */
};

/* Start the endpoint when asked; prints its address on stderr.  Non-zero
 * (ro->rc set, message printed) when it cannot serve. */
int run_output_open(vfgx_ctx *ctx, const struct run_config *rcfg,
		    struct run_output *ro);
/* Record one expectation line of the text report for the JSON document. */
void run_output_expectation(const char *name, bool ok, const char *detail);
/* With --json the text report goes to stderr between these two. */
void run_output_text_begin(struct run_output *ro);
void run_output_text_end(struct run_output *ro);
void run_output_json(struct run_output *ro, const struct vfgx_config *cfg,
		     vfgx_port *const *ports, uint16_t nb_ports,
		     const struct vfgx_pipeline_stats *st, vfgx_pipeline *pl,
		     double secs, bool interrupted, int rc, json_object *extra);
/* extra: an object whose members join the document's top level (taken) */
/* A source report as the documents' "source" object; NULL (JSON null)
 * when the source is not known. */
json_object *run_output_source_json(const struct vfgx_source_report *src);
/* --metrics-hold: keep serving the final snapshot (until a signal). */
void run_output_hold(struct run_output *ro, volatile sig_atomic_t *interrupted);
void run_output_close(struct run_output *ro);

#endif
