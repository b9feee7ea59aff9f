/* run_capture.h - `vfgx run`'s capture files and --expect-sent
 * (run_capture.c). */
#ifndef VFGX_CLI_RUN_CAPTURE_H
#define VFGX_CLI_RUN_CAPTURE_H

#include <json-c/json.h>
#include <vfgx/vfgx.h>

/* Open the capture the config or path (--capture, which wins) asks for and
 * tap every port; *out NULL when none is asked.  An existing file is
 * replaced only with force (--force), a port's input file never.  0, or
 * the exit code after a one-line message. */
int run_capture_open(vfgx_ctx *ctx, const struct vfgx_config *cfg, const char *path,
		     bool force, vfgx_port *const *ports, uint16_t nb_ports,
		     vfgx_capture **out);
/* After the ports stopped: write the rest, close; false on a write error. */
bool run_capture_close(vfgx_capture *c, struct vfgx_capture_stats *st);
void run_capture_report(const struct vfgx_capture_stats *st, const char *path);
/* The `capture` expectation: every packet the capture's mode chose is in
 * the files (none dropped with the ring full, left in GPU memory or lost
 * to a write error) and the files closed whole.  d: the report's line. */
bool run_capture_verdict(const struct vfgx_capture_stats *st, bool closed_ok, char *d,
			 size_t len);
json_object *run_capture_json(const struct vfgx_capture_stats *st, const char *path);

/* A `vfgx send --json` report's source counters; -1 after a one-line
 * message. */
int run_sent_load(const char *file, struct vfgx_source_report *rep);

#endif
