/* run_capture.c - `vfgx run`'s capture files (--capture, pipeline.capture)
 * and --expect-sent (a `vfgx send --json` report as the run's source of
 * expectations, so a two-process run is checked as exactly as a loopback
 * one). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "port/capture_open.h"
#include "run_capture.h"

int run_capture_open(vfgx_ctx *ctx, const struct vfgx_config *cfg, const char *path,
		     bool force, vfgx_port *const *ports, uint16_t nb_ports, vfgx_capture **out)
{
	/* an existing file is replaced only when asked; never a file a port
	 * reads (a pcap port's input) */
	struct vfgx_capture_guard guard = { .replace = force, .inputs = ports,
					    .nb_inputs = nb_ports };
	struct vfgx_capture_conf cc;
	int ret;

	*out = NULL;
	if (!cfg->capture && !path)
		return 0;
	if (cfg->capture)
		cc = *cfg->capture;
	else
		vfgx_capture_conf_default(&cc);
	if (path)
		cc.path = path;
	if ((ret = vfgx_capture_open_guarded(ctx, &cc, &guard, out))) {
		fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
		return ret == -EINVAL || ret == -ENOTSUP || ret == -EEXIST ? 2 : 1;
	}
	for (uint16_t i = 0; i < nb_ports; i++) {
		if ((ret = vfgx_capture_attach(*out, ports[i]))) {
			fprintf(stderr, "vfgx: %s\n", vfgx_last_error(ctx));
			vfgx_capture_close(*out, NULL);
			*out = NULL;
			return ret == -ENOTSUP ? 2 : 1;
		}
	}
	return 0;
}

bool run_capture_close(vfgx_capture *c, struct vfgx_capture_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!c)
		return true;
	return vfgx_capture_close(c, st) == 0;
}

/* What the capture's mode chose and is not in the files: dropped with
 * the ring full, left in GPU memory, or after a write error. */
static uint64_t not_captured(const struct vfgx_capture_stats *st)
{
	return st->ring_full + st->skipped_gpu + st->failed;
}

/* The share of what the mode chose that is not in the files, in percent. */
static double not_captured_pct(const struct vfgx_capture_stats *st)
{
	uint64_t chosen = st->selected + st->skipped_gpu;

	return chosen ? 100.0 * (double)not_captured(st) / (double)chosen : 0;
}

void run_capture_report(const struct vfgx_capture_stats *st, const char *path)
{
	printf("capture %s: %" PRIu64 " packets seen, %" PRIu64 " selected, %" PRIu64
	       " written (%" PRIu64 " bytes, %u files), %" PRIu64 " dropped (ring full), %" PRIu64
	       " in GPU memory not copied, %" PRIu64 " failed; %" PRIu64
	       " not captured (%.1f%%)%s%s\n",
	       path, st->seen, st->selected, st->written, st->bytes, st->files, st->ring_full,
	       st->skipped_gpu, st->failed, not_captured(st), not_captured_pct(st),
	       st->error ? ": " : "", st->error ? strerror(-st->error) : "");
}

bool run_capture_verdict(const struct vfgx_capture_stats *st, bool closed_ok, char *d,
			 size_t len)
{
	uint64_t miss = not_captured(st);

	if (!miss && closed_ok) {
		snprintf(d, len, "every one of %" PRIu64 " selected packets written", st->selected);
		return true;
	}
	snprintf(d, len,
		 "%" PRIu64 " of %" PRIu64 " chosen packets not captured (%.1f%%: %" PRIu64
		 " ring full, %" PRIu64 " in GPU memory, %" PRIu64 " failed)%s%s",
		 miss, st->selected + st->skipped_gpu, not_captured_pct(st), st->ring_full,
		 st->skipped_gpu, st->failed, st->error ? ": " : "",
		 st->error ? strerror(-st->error) : "");
	return false;
}

json_object *run_capture_json(const struct vfgx_capture_stats *st, const char *path)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "seen", json_object_new_uint64(st->seen));
	json_object_object_add(o, "selected", json_object_new_uint64(st->selected));
	json_object_object_add(o, "written", json_object_new_uint64(st->written));
	json_object_object_add(o, "bytes", json_object_new_uint64(st->bytes));
	json_object_object_add(o, "files", json_object_new_uint64(st->files));
	json_object_object_add(o, "ring_full", json_object_new_uint64(st->ring_full));
	json_object_object_add(o, "skipped_gpu", json_object_new_uint64(st->skipped_gpu));
	json_object_object_add(o, "failed", json_object_new_uint64(st->failed));
	json_object_object_add(o, "not_captured", json_object_new_uint64(not_captured(st)));
	json_object_object_add(o, "error", st->error ? json_object_new_string(strerror(-st->error)) : NULL);
	return o;
}

static int sent_u64(json_object *src, const char *key, const char *file, uint64_t *v)
{
	json_object *o;

	if (!json_object_object_get_ex(src, key, &o) || !json_object_is_type(o, json_type_int)) {
		fprintf(stderr, "vfgx: %s: not a `vfgx send --json` report: source.%s missing\n",
			file, key);
		return -1;
	}
	*v = json_object_get_uint64(o);
	return 0;
}

int run_sent_load(const char *file, struct vfgx_source_report *rep)
{
	json_object *root = json_object_from_file(file), *schema, *src;
	int ret = -1;

	memset(rep, 0, sizeof(*rep));
	if (!root) {
		fprintf(stderr, "vfgx: --expect-sent %s: %s\n", file, json_util_get_last_err());
		return -1;
	}
	if (!json_object_object_get_ex(root, "schema", &schema) ||
	    strcmp(json_object_get_string(schema), "vfgx.send/1") != 0 ||
	    !json_object_object_get_ex(root, "source", &src) ||
	    !json_object_is_type(src, json_type_object)) {
		fprintf(stderr, "vfgx: --expect-sent %s: not a `vfgx send --json` report of a generated source (schema vfgx.send/1 with a source object)\n",
			file);
		goto out;
	}
	if (sent_u64(src, "generated", file, &rep->generated) ||
	    sent_u64(src, "lost", file, &rep->lost) ||
	    sent_u64(src, "duplicated", file, &rep->duplicated) ||
	    sent_u64(src, "corrupted", file, &rep->corrupted) ||
	    sent_u64(src, "reordered", file, &rep->reordered))
		goto out;
	rep->known = true;
	ret = 0;
out:
	json_object_put(root);
	return ret;
}
