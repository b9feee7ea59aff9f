/* run_output.c - `vfgx run --metrics` and `--json`: the endpoint (fed by
 * its pipeline observer, vfgx_metrics_observe), and the JSON report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "run_output.h"

#define MAX_EXPECT 16

static struct {
	char name[32];
	bool ok;
	char detail[256];
} expectations[MAX_EXPECT];
static int nb_expectations;

int run_output_open(vfgx_ctx *ctx, const struct run_config *rcfg,
		    struct run_output *ro)
{
	ro->saved_stdout = -1;
	if (!ro->listen && rcfg->metrics_listen)
		ro->listen = rcfg->metrics_listen;
	if (!ro->listen)
		return 0;
	int ret = vfgx_metrics_start(ctx, ro->listen, &ro->metrics);

	if (ret) {
		/* a malformed address is a usage error; a busy port is not */
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		ro->rc = ret == -EINVAL ? 2 : 1;
		return ret;
	}
	/* the host part as given, the port as bound (port 0 picks one) */
	fprintf(stderr, "vfgx: metrics at http://%.*s:%u/metrics\n",
		(int)(strrchr(ro->listen, ':') - ro->listen), ro->listen,
		vfgx_metrics_port(ro->metrics));
	return 0;
}

void run_output_expectation(const char *name, bool ok, const char *detail)
{
	if (nb_expectations >= MAX_EXPECT)
		return;
	snprintf(expectations[nb_expectations].name, sizeof(expectations[0].name), "%s", name);
	snprintf(expectations[nb_expectations].detail, sizeof(expectations[0].detail), "%s", detail);
	expectations[nb_expectations++].ok = ok;
}

void run_output_text_begin(struct run_output *ro)
{
	if (!ro->json)
		return;
	fflush(stdout);
	ro->saved_stdout = dup(STDOUT_FILENO);
	if (ro->saved_stdout >= 0)
		dup2(STDERR_FILENO, STDOUT_FILENO);
}

void run_output_text_end(struct run_output *ro)
{
	if (ro->saved_stdout < 0)
		return;
	fflush(stdout);
	dup2(ro->saved_stdout, STDOUT_FILENO);
	close(ro->saved_stdout);
	ro->saved_stdout = -1;
}

static json_object *jdrops(const uint64_t *drops)
{
	json_object *o = json_object_new_object();

	for (int r = 0; r < VFGX_DROP_MAX; r++)
		json_object_object_add(o, vfgx_drop_reason_name((enum vfgx_drop_reason)r),
				       json_object_new_uint64(drops[r]));
	return o;
}

static json_object *jqueues(vfgx_port *const *ports, uint16_t nb_ports,
			    struct vfgx_source_report *src)
{
	json_object *a = json_object_new_array();
	bool any_known = false;

	*src = (struct vfgx_source_report){ .known = true };
	for (uint16_t i = 0; i < nb_ports; i++)
		for (uint16_t q = 0; q < vfgx_port_nb_rx_queues(ports[i]); q++) {
			json_object *o = json_object_new_object();
			struct vfgx_queue_stats qs;
			struct vfgx_source_report r;

			vfgx_port_stats(ports[i], q, &qs);
			vfgx_port_source_report(ports[i], q, &r);
			json_object_object_add(o, "port", json_object_new_string(vfgx_port_name(ports[i])));
			json_object_object_add(o, "backend", json_object_new_string(vfgx_port_backend(ports[i])));
			json_object_object_add(o, "queue", json_object_new_int(q));
			json_object_object_add(o, "rx_packets", json_object_new_uint64(qs.rx_packets));
			json_object_object_add(o, "rx_bytes", json_object_new_uint64(qs.rx_bytes));
			json_object_object_add(o, "tx_packets", json_object_new_uint64(qs.tx_packets));
			json_object_object_add(o, "tx_bytes", json_object_new_uint64(qs.tx_bytes));
			json_object_object_add(o, "drops", jdrops(qs.drops));
			json_object_array_add(a, o);
			if (r.known) {
				any_known = true;
				src->generated += r.generated;
				src->lost += r.lost;
				src->duplicated += r.duplicated;
				src->corrupted += r.corrupted;
				src->reordered += r.reordered;
			} else {
				src->known = false;
			}
		}
	src->known = src->known && any_known;
	return a;
}

static json_object *jpipeline(const struct vfgx_pipeline_stats *st,
			      uint64_t order_errors, double secs)
{
	json_object *o = json_object_new_object(), *lat = json_object_new_object();
	json_object *hist = json_object_new_array();

	json_object_object_add(o, "packets", json_object_new_uint64(st->packets));
	json_object_object_add(o, "bytes", json_object_new_uint64(st->bytes));
	json_object_object_add(o, "passed", json_object_new_uint64(st->passed));
	json_object_object_add(o, "delivered", json_object_new_uint64(st->delivered));
	json_object_object_add(o, "delivered_bytes", json_object_new_uint64(st->delivered_bytes));
	json_object_object_add(o, "gaps", json_object_new_uint64(st->gaps));
	json_object_object_add(o, "verify_errors", json_object_new_uint64(st->verify_errors));
	json_object_object_add(o, "streams_finished", json_object_new_uint64(st->last_seen));
	json_object_object_add(o, "order_errors", json_object_new_uint64(order_errors));
	json_object_object_add(o, "mpps", json_object_new_double(secs > 0 ? (double)st->packets / secs / 1e6 : 0));
	json_object_object_add(o, "gbps", json_object_new_double(secs > 0 ? (double)st->bytes * 8 / secs / 1e9 : 0));
	json_object_object_add(o, "drops", jdrops(st->drops));
	json_object_object_add(lat, "p50_ns", json_object_new_uint64(vfgx_stats_lat_pct(st, 50)));
	json_object_object_add(lat, "p99_ns", json_object_new_uint64(vfgx_stats_lat_pct(st, 99)));
	for (int b = 0; b < VFGX_LAT_BUCKETS; b++)
		json_object_array_add(hist, json_object_new_uint64(st->lat_hist[b]));
	json_object_object_add(lat, "log2_ns_histogram", hist);
	json_object_object_add(o, "latency", lat);
	return o;
}

json_object *run_output_source_json(const struct vfgx_source_report *src)
{
	json_object *s;

	if (!src->known)
		return NULL;
	s = json_object_new_object();
	json_object_object_add(s, "generated", json_object_new_uint64(src->generated));
	json_object_object_add(s, "lost", json_object_new_uint64(src->lost));
	json_object_object_add(s, "duplicated", json_object_new_uint64(src->duplicated));
	json_object_object_add(s, "corrupted", json_object_new_uint64(src->corrupted));
	json_object_object_add(s, "reordered", json_object_new_uint64(src->reordered));
	return s;
}

void run_output_json(struct run_output *ro, const struct vfgx_config *cfg,
		     vfgx_port *const *ports, uint16_t nb_ports,
		     const struct vfgx_pipeline_stats *st, vfgx_pipeline *pl,
		     double secs, bool interrupted, int rc, json_object *extra)
{
	json_object *root, *ex;
	struct vfgx_source_report src;

	if (!ro->json) {
		json_object_put(extra);
		return;
	}
	root = json_object_new_object();
	ex = json_object_new_array();
	json_object_object_add(root, "schema", json_object_new_string(RUN_JSON_SCHEMA));
	json_object_object_add(root, "config", json_object_new_string(cfg->source));
	json_object_object_add(root, "device", json_object_new_string(vfgx_pipeline_engine(pl)));
	json_object_object_add(root, "seconds", json_object_new_double(secs));
	json_object_object_add(root, "interrupted", json_object_new_boolean(interrupted));
	json_object_object_add(root, "queues", jqueues(ports, nb_ports, &src));
	json_object_object_add(root, "pipeline", jpipeline(st, st->order_errors, secs));
	json_object_object_foreach(extra, key, val)
		json_object_object_add(root, key, json_object_get(val));
	json_object_put(extra);
	json_object_object_add(root, "source", run_output_source_json(&src));
	for (int i = 0; i < nb_expectations; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "name", json_object_new_string(expectations[i].name));
		json_object_object_add(e, "ok", json_object_new_boolean(expectations[i].ok));
		json_object_object_add(e, "detail", json_object_new_string(expectations[i].detail));
		json_object_array_add(ex, e);
	}
	json_object_object_add(root, "expectations", ex);
	json_object_object_add(root, "result", json_object_new_string(rc == 0 ? "PASSED" : "FAILED"));
	json_object_object_add(root, "exit_code", json_object_new_int(rc));
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	json_object_put(root);
}

void run_output_hold(struct run_output *ro, volatile sig_atomic_t *interrupted)
{
	uint64_t end;

	if (!ro->metrics || ro->hold_s <= 0)
		return;
	fflush(stdout); /* the report is out before the hold */
	end = vfgx_now_ns() + (uint64_t)(ro->hold_s * 1e9);
	while (!*interrupted && vfgx_now_ns() < end) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

void run_output_close(struct run_output *ro)
{
	run_output_text_end(ro);
	vfgx_metrics_stop(ro->metrics);
	ro->metrics = NULL;
}
