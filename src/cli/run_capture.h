/* run_capture.h - `vfgx run`'s capture verdict and --expect-sent
 * (run_capture.c). */
#ifndef VFGX_CLI_RUN_CAPTURE_H
#define VFGX_CLI_RUN_CAPTURE_H

#include <json-c/json.h>
#include <vfgx/vfgx.h>

/* The `capture` expectation: every packet the capture's mode chose is in
 * the files (none dropped with the ring full, left in GPU memory or lost
 * to a write error) and the files closed whole.  d: the report's line. */
bool run_capture_verdict(const struct vfgx_capture_stats *st, bool closed_ok, char *d,
			 size_t len);
json_object *run_capture_json(const struct vfgx_capture_stats *st, const char *path);

/* --expect-sent: a `vfgx send --json` report is read whole, at most this
 * many bytes, nested at most RUN_SENT_MAX_DEPTH deep. */
#define RUN_SENT_MAX_BYTES (1u << 20)
#define RUN_SENT_MAX_DEPTH 16

/* Before the run: file may not exist yet (the sender writes it during
 * the run); where it does it must be a regular file of at most
 * RUN_SENT_MAX_BYTES.  0, or 2 after a one-line message. */
int run_sent_check(const char *file);
/* After the run: the report read and checked (run_sent_parse).  0, or -1;
 * why: the line for the report either way (file name escaped). */
int run_sent_load(const char *file, struct vfgx_source_report *rep, char *why,
		  size_t why_len);
/* A report's text (len bytes, not NUL-terminated): one JSON document of
 * schema vfgx.send/1 whose source counters are whole numbers 0..2^63-1 a
 * generator can give (lost <= generated, ...).  0 and rep->known, or -1
 * and rep zeroed, why the reason (no file name). */
int run_sent_parse(const char *text, size_t len, struct vfgx_source_report *rep, char *why,
		   size_t why_len);

#endif
