/* run_record.c - `vfgx run --record PATH` and the record: section: open
 * the recorder once the pipeline exists, hand it each chunk on the chunk
 * consumer thread after the user module saw it, report what it wrote. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliopt.h"
#include "run_record.h"

extern const char vfgx_default_config_yaml[];

/* The config's text for the files' config attribute: the file as read,
 * or the embedded default.  NULL when it cannot be read (then none). */
static char *config_text(const char *config_path)
{
	FILE *f;
	char *buf;
	long n;

	if (!config_path)
		return strdup(vfgx_default_config_yaml);
	f = fopen(config_path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > VFGX_CONFIG_MAX_BYTES ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)n + 1))) {
		fclose(f);
		return NULL;
	}
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	} else {
		buf[n] = 0;
	}
	fclose(f);
	return buf;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && strcmp(s + a - b, tail) == 0;
}

int run_record_open(struct run_record *rr, vfgx_ctx *ctx,
		    const struct vfgx_config *cfg, const char *config_path,
		    const char *flag_path, vfgx_pipeline *pl)
{
	struct vfgx_record_conf rc;
	int ret;

	memset(rr, 0, sizeof(*rr));
	if (!cfg->record && !flag_path)
		return 0;
	if (cfg->record) {
		rc = *cfg->record;
	} else {
		/* --record alone: the defaults, HDF5 for a name ending in .h5
		 * or .hdf5, raw otherwise */
		vfgx_record_conf_default(&rc);
		rc.format = ends_with(flag_path, ".h5") || ends_with(flag_path, ".hdf5") ?
				    VFGX_RECORD_HDF5 : VFGX_RECORD_RAW;
	}
	if (flag_path)
		rc.path = flag_path;
	if (!rc.path || !rc.path[0]) {
		fprintf(stderr, "vfgx: %s: record: no path (set record.path, or vfgx run --record PATH)\n",
			cli_esc(cfg->source));
		return 2;
	}
	if (!vfgx_chunk_conf(pl)) {
		fprintf(stderr, "vfgx: %s: record: the pipeline has no chunks; recording writes chunks (add pipeline.chunks)\n",
			cli_esc(cfg->source));
		return 2;
	}
	rr->on = true;
	rr->path = rc.path;
	rr->config_text = config_text(config_path);
	rc.config_text = rr->config_text;
	ret = vfgx_record_open(ctx, &rc, pl, &rr->rec);
	if (ret == -ENOTSUP || ret == -EINVAL) {
		/* the build or the options, not the file: nothing runs */
		fprintf(stderr, "vfgx: %s: %s\n", cli_esc(cfg->source), vfgx_last_error(ctx));
		rr->on = false;
		return 2;
	}
	if (ret) {
		/* the run goes on; the report counts the chunks not recorded */
		fprintf(stderr, "vfgx: %s; recording stopped (the run goes on)\n", vfgx_last_error(ctx));
		snprintf(rr->st.message, sizeof(rr->st.message), "%s", vfgx_last_error(ctx));
		rr->st.error = -EIO;
		rr->told = true;
	}
	return 0;
}

int run_record_chunk(struct run_record *rr, const struct vfgx_chunk *c)
{
	struct vfgx_record_stats st;
	int ret;

	if (!rr->on)
		return 0;
	if (!rr->rec) {
		rr->refused++;
		return 0;
	}
	/* 1: the recorder keeps the chunk and gives it back once written */
	ret = vfgx_record_take(rr->rec, c);
	if (ret < 0 && !rr->told) {
		vfgx_record_stats(rr->rec, &st);
		fprintf(stderr, "vfgx: %s\n", st.message);
		rr->told = true;
	}
	return ret > 0;
}

uint32_t run_record_poll(struct run_record *rr)
{
	return rr->rec ? vfgx_record_poll(rr->rec) : 0;
}

void run_record_close(struct run_record *rr)
{
	struct vfgx_record_stats st;

	if (!rr->rec)
		return;
	vfgx_record_close(rr->rec, &st);
	if (st.error && !rr->told)
		fprintf(stderr, "vfgx: %s\n", st.message);
	rr->told = rr->told || st.error;
	rr->st = st;
	rr->rec = NULL;
}

bool run_record_report(const struct run_record *rr)
{
	if (!rr->on)
		return true;
	printf("record: %s: %" PRIu64 " chunks recorded, %" PRIu64 " not recorded, %u files, %.1f MiB%s%s\n",
	       cli_esc(rr->path), rr->st.recorded, rr->st.not_recorded + rr->refused,
	       rr->st.files, (double)rr->st.bytes / (1 << 20),
	       rr->st.error ? "; stopped: " : "", rr->st.error ? rr->st.message : "");
	return rr->st.error == 0;
}

json_object *run_record_json(const struct run_record *rr)
{
	json_object *o;

	if (!rr->on)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(rr->path));
	json_object_object_add(o, "recorded", json_object_new_uint64(rr->st.recorded));
	json_object_object_add(o, "not_recorded",
			       json_object_new_uint64(rr->st.not_recorded + rr->refused));
	json_object_object_add(o, "files", json_object_new_uint64(rr->st.files));
	json_object_object_add(o, "bytes", json_object_new_uint64(rr->st.bytes));
	json_object_object_add(o, "direct", json_object_new_boolean(rr->st.direct));
	json_object_object_add(o, "error", rr->st.error ?
				json_object_new_string(rr->st.message) : NULL);
	return o;
}

void run_record_free(struct run_record *rr)
{
	run_record_close(rr);
	free(rr->config_text);
	memset(rr, 0, sizeof(*rr));
}
