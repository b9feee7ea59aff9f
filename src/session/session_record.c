/* session_record.c - a session's recorder: the record: section or
 * opts->record_path, opened once the pipeline exists; the consumer thread
 * hands it each chunk after the user code saw it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_priv.h"

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && strcmp(s + a - b, tail) == 0;
}

int session_record_open(struct session_record *rr, vfgx_ctx *ctx,
			const struct vfgx_config *cfg, const char *config_text,
			const char *flag_path, vfgx_pipeline *pl)
{
	struct vfgx_record_conf rc;
	char why[512];
	int ret;

	memset(rr, 0, sizeof(*rr));
	if (!cfg->record && !flag_path)
		return 0;
	if (cfg->record) {
		rc = *cfg->record;
	} else {
		/* a path alone: the defaults, HDF5 for a name ending in .h5
		 * or .hdf5, raw otherwise */
		vfgx_record_conf_default(&rc);
		rc.format = ends_with(flag_path, ".h5") || ends_with(flag_path, ".hdf5") ?
				    VFGX_RECORD_HDF5 : VFGX_RECORD_RAW;
	}
	if (flag_path)
		rc.path = flag_path;
	if (!rc.path || !rc.path[0])
		return vfgx_set_error(ctx, -EINVAL,
			"%s: record: no path (set record.path, or vfgx run --record PATH)",
			cfg->source);
	if (!vfgx_chunk_conf(pl))
		return vfgx_set_error(ctx, -EINVAL,
			"%s: record: the pipeline has no chunks; recording writes chunks (add pipeline.chunks)",
			cfg->source);
	rr->on = true;
	rr->path = rc.path;
	rr->config_text = config_text ? strdup(config_text) : NULL;
	rc.config_text = rr->config_text;
	ret = vfgx_record_open(ctx, &rc, pl, &rr->rec);
	snprintf(why, sizeof(why), "%s", ret ? vfgx_last_error(ctx) : "");
	if (ret == -ENOTSUP || ret == -EINVAL) {
		/* the build or the options, not the file: nothing runs */
		rr->on = false;
		return vfgx_set_error(ctx, -EINVAL, "%s: %s", cfg->source, why);
	}
	if (ret) {
		/* the run goes on; the report counts the chunks not recorded */
		vfgx_err(ctx, "%s; recording stopped (the run goes on)", why);
		snprintf(rr->st.message, sizeof(rr->st.message), "%s", why);
		rr->st.error = -EIO;
		rr->told = true;
	}
	return 0;
}

int session_record_chunk(struct session_record *rr, vfgx_ctx *ctx, const struct vfgx_chunk *c)
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
		vfgx_err(ctx, "%s", st.message);
		rr->told = true;
	}
	return ret > 0;
}

uint32_t session_record_poll(struct session_record *rr)
{
	return rr->rec ? vfgx_record_poll(rr->rec) : 0;
}

void session_record_close(struct session_record *rr, vfgx_ctx *ctx)
{
	struct vfgx_record_stats st;

	if (!rr->rec)
		return;
	vfgx_record_close(rr->rec, &st);
	if (st.error && !rr->told)
		vfgx_err(ctx, "%s", st.message);
	rr->told = rr->told || st.error;
	rr->st = st;
	rr->rec = NULL;
}

void session_record_free(struct session_record *rr, vfgx_ctx *ctx)
{
	session_record_close(rr, ctx);
	free(rr->config_text);
	memset(rr, 0, sizeof(*rr));
}
