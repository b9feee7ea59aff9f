/* session.c - vfgx_session: a receive run assembled from a config, in
 * dependency order (user code, ports, capture, pipeline, observers,
 * recorder), started, stopped and torn down in reverse.  The report's
 * numbers and lines are in report.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/argsz.h"
#include "core/escape.h"
#include "port/capture_open.h"
#include "session_priv.h"

extern const char vfgx_default_config_yaml[];

void vfgx_session_opts_default(struct vfgx_session_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->argsz = sizeof(*o);
	o->duration_s = -1;
	o->metrics_job = "session";
}

/* A file's text for the recorder's config attribute; NULL when it cannot
 * be read (then none). */
static char *file_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

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

/* Prefix the context's error with the config's name, as the run's other
 * config errors are said; err becomes -EINVAL (a usage error). */
static int config_error(vfgx_session *s)
{
	char why[512];

	snprintf(why, sizeof(why), "%s", vfgx_last_error(s->ctx));
	return vfgx_set_error(s->ctx, -EINVAL, "%s: %s", s->cfg->source, why);
}

static int open_capture(vfgx_session *s)
{
	const struct vfgx_config *cfg = s->cfg;
	const char *path = s->opts.capture_path;
	/* an existing file is replaced only when asked; never a file a port
	 * reads (a pcap port's input) */
	struct vfgx_capture_guard guard = { .replace = s->opts.capture_replace,
					    .inputs = s->ports, .nb_inputs = s->nb_ports };
	struct vfgx_capture_conf cc;
	int ret;

	if (!cfg->capture && !path)
		return 0;
	if (cfg->capture)
		cc = *cfg->capture;
	else
		vfgx_capture_conf_default(&cc);
	if (path)
		cc.path = path;
	if ((ret = vfgx_capture_open_guarded(s->ctx, &cc, &guard, &s->cap)))
		return ret == -ENOTSUP || ret == -EEXIST ? vfgx_set_error(s->ctx, -EINVAL, "%s",
					      vfgx_last_error(s->ctx)) : ret;
	s->capture_path = cc.path;
	vfgx_escape(s->capture_path_esc, sizeof(s->capture_path_esc), cc.path ? cc.path : "");
	for (uint16_t i = 0; i < s->nb_ports; i++) {
		if ((ret = vfgx_capture_attach(s->cap, s->ports[i]))) {
			char why[512];

			snprintf(why, sizeof(why), "%s", vfgx_last_error(s->ctx));
			vfgx_capture_close(s->cap, NULL);
			s->cap = NULL;
			return vfgx_set_error(s->ctx, ret == -ENOTSUP ? -EINVAL : ret, "%s", why);
		}
	}
	return 0;
}

/* The endpoint: the caller's, or one of the session's own at
 * opts.metrics_listen or (metrics_config) the config's metrics.listen. */
struct session_metrics_section {
	const char *listen;
};

static const struct vfgx_opt metrics_tab[] = {
	VFGX_OPT(STR, struct session_metrics_section, listen, 0),
};

static int open_metrics(vfgx_session *s)
{
	const char *listen = s->opts.metrics_listen;
	struct session_metrics_section m;
	int ret;

	s->metrics = s->opts.metrics;
	if (s->metrics && listen)
		return vfgx_set_error(s->ctx, -EINVAL,
				      "session: opts.metrics and opts.metrics_listen both given (one endpoint)");
	if (!s->metrics && !listen && s->opts.metrics_config) {
		/* the metrics: section vfgx run owns, read as it reads it */
		if ((ret = vfgx_config_section(s->cfg, "metrics", metrics_tab, 1, &m, sizeof(m))))
			return ret;
		if (m.listen && m.listen[0])
			listen = m.listen;
	}
	if (!listen)
		return 0;
	if ((ret = vfgx_metrics_start(s->ctx, listen, &s->own_metrics)))
		return ret;
	s->metrics = s->own_metrics;
	return 0;
}

/* consumer_auto: the consumer thread only for user code or the recorder */
static void pick_consumer(vfgx_session *s)
{
	const struct session_user *u = &s->user;

	if (s->opts.consumer_auto &&
	    !((u->mod && u->mod->chunk) || u->gpu.loaded || s->rec.on || u->on_chunk))
		s->opts.no_consumer = true;
}

static int create(vfgx_session *s)
{
	struct vfgx_config *cfg = s->cfg;
	const char *text_path;
	int ret;

	if (vfgx_pipeline_check(s->ctx, &cfg->pipeline))
		return config_error(s);
	vfgx_log_set_level(s->ctx, cfg->log_level);
	if ((ret = session_user_load(&s->user, s->ctx, cfg)))
		return ret;
	s->user.on_chunk = s->opts.on_chunk;
	s->user.on_chunk_user = s->opts.on_chunk_user;
	if (s->opts.duration_s >= 0)
		cfg->pipeline.duration_s = s->opts.duration_s;
	if (cfg->nb_ifaces == 0)
		return vfgx_set_error(s->ctx, -EINVAL,
			"%s: no interfaces configured (add one under interfaces:)", cfg->source);
	for (uint16_t i = 0; i < cfg->nb_ifaces; i++, s->nb_ports++)
		if ((ret = vfgx_port_open_config(s->ctx, cfg, &cfg->ifaces[i], &s->ports[i])))
			return ret;
	if ((ret = open_capture(s)))
		return ret;
	ret = vfgx_pipeline_create(s->ctx, &cfg->pipeline, s->ports, s->nb_ports, &s->pl);
	if (ret == -ENODEV) /* pipeline.device names a GPU this machine lacks */
		return config_error(s);
	if (ret)
		return ret;
	/* the endpoint is an observer like any other the program attaches */
	if ((ret = open_metrics(s)))
		return ret;
	if (s->metrics &&
	    (ret = vfgx_metrics_observe(s->ctx, s->pl, s->metrics,
					s->opts.metrics_job ? s->opts.metrics_job : "session", 1000)))
		return ret;
	/* telemetry to gpurdma_mon once a second, when the driver is loaded */
	if (!s->opts.no_mon && (ret = vfgx_mon_observe(s->ctx, s->pl, NULL, 1000)))
		return ret;
	if (cfg->record || s->opts.record_path) {
		text_path = s->opts.config_path;
		if (text_path) {
			free(s->config_text);
			s->config_text = file_text(text_path);
		} else if (!s->config_text && s->opts.config_text) {
			s->config_text = strdup(s->opts.config_text);
		} else if (!s->config_text && !strncmp(cfg->source, "<embedded", 9)) {
			s->config_text = strdup(vfgx_default_config_yaml);
		}
	}
	if ((ret = session_record_open(&s->rec, s->ctx, cfg, s->config_text,
				       s->opts.record_path, s->pl)))
		return ret;
	if (s->rec.on) {
		s->user.rec = &s->rec;
		vfgx_escape(s->record_path, sizeof(s->record_path), s->rec.path);
	}
	if (s->user.gpu.loaded)
		vfgx_escape(s->gpu_path, sizeof(s->gpu_path), s->user.gpu.path);
	pick_consumer(s);
	return 0;
}

static int session_new(vfgx_ctx *ctx, struct vfgx_config *cfg, bool owns, char *text,
		       const struct vfgx_session_opts *opts, vfgx_session **out)
{
	vfgx_session *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		if (owns)
			vfgx_config_destroy(cfg);
		free(text);
		return vfgx_set_error(ctx, -ENOMEM, "session: out of memory");
	}
	s->ctx = ctx;
	s->cfg = cfg;
	s->owns_cfg = owns;
	s->config_text = text;
	vfgx_session_opts_default(&s->opts);
	/* the first version ended at on_chunk_user; later fields default */
	if (opts && (ret = vfgx_argsz_copy(&s->opts, sizeof(s->opts), opts,
					   offsetof(struct vfgx_session_opts, on_chunk_user) +
						   sizeof(void *)))) {
		vfgx_session_destroy(s);
		return vfgx_set_error(ctx, ret, "session: opts.argsz %u is not a struct vfgx_session_opts",
				      opts->argsz);
	}
	if ((ret = create(s))) {
		vfgx_session_destroy(s);
		return ret;
	}
	*out = s;
	return 0;
}

int vfgx_session_create(vfgx_ctx *ctx, struct vfgx_config *cfg,
			const struct vfgx_session_opts *opts, vfgx_session **out)
{
	if (!ctx || !cfg || !out)
		return -EINVAL;
	return session_new(ctx, cfg, false, NULL, opts, out);
}

int vfgx_session_create_file(vfgx_ctx *ctx, const char *path,
			     const struct vfgx_session_opts *opts, vfgx_session **out)
{
	struct vfgx_config *cfg;
	int ret;

	if (!ctx || !out)
		return -EINVAL;
	ret = path ? vfgx_config_load_file(ctx, path, &cfg) : vfgx_config_load_default(ctx, &cfg);
	if (ret)
		return ret;
	return session_new(ctx, cfg, true, path ? file_text(path) : strdup(vfgx_default_config_yaml),
			   opts, out);
}

int vfgx_session_create_text(vfgx_ctx *ctx, const char *yaml, size_t len,
			     const char *name, const struct vfgx_session_opts *opts,
			     vfgx_session **out)
{
	struct vfgx_config *cfg;
	char *text;
	int ret;

	if (!ctx || !yaml || !out)
		return -EINVAL;
	if ((ret = vfgx_config_load_string(ctx, yaml, len, name, &cfg)))
		return ret;
	text = malloc(len + 1);
	if (text) {
		memcpy(text, yaml, len);
		text[len] = 0;
	}
	return session_new(ctx, cfg, true, text, opts, out);
}

int vfgx_session_start(vfgx_session *s)
{
	int ret;

	if (s->started)
		return vfgx_set_error(s->ctx, -EALREADY, "session: already started");
	if ((ret = session_user_start(&s->user, s->pl, !s->opts.no_consumer)))
		return ret;
	s->started = true;
	s->t0 = vfgx_now_ns();
	return vfgx_pipeline_start(s->pl);
}

bool vfgx_session_done(vfgx_session *s)
{
	return vfgx_pipeline_done(s->pl) || session_user_failed(&s->user);
}

void vfgx_session_stats(vfgx_session *s, struct vfgx_pipeline_stats *st)
{
	vfgx_pipeline_stats(s->pl, st);
}

void vfgx_session_stop(vfgx_session *s)
{
	if (!s || s->stopped)
		return;
	s->stopped = true;
	if (s->pl)
		vfgx_pipeline_stop(s->pl); /* the consumer ends with it */
	session_user_stop(&s->user);
	session_record_close(&s->rec, s->ctx); /* the writes in flight, the files closed */
	memset(&s->cap_st, 0, sizeof(s->cap_st));
	s->capture_closed = true;
	if (s->cap)
		s->capture_closed = vfgx_capture_close(s->cap, &s->cap_st) == 0;
	s->cap = NULL;
	s->t1 = vfgx_now_ns();
}

const struct vfgx_config *vfgx_session_config(const vfgx_session *s)
{
	return s->cfg;
}

vfgx_pipeline *vfgx_session_pipeline(vfgx_session *s)
{
	return s->pl;
}

uint16_t vfgx_session_nb_ports(const vfgx_session *s)
{
	return s->nb_ports;
}

vfgx_port *vfgx_session_port(vfgx_session *s, uint16_t i)
{
	return i < s->nb_ports ? s->ports[i] : NULL;
}

bool vfgx_session_consumes(const vfgx_session *s)
{
	return s->pl && vfgx_chunk_conf(s->pl) && !s->opts.no_consumer;
}

vfgx_metrics *vfgx_session_metrics(vfgx_session *s)
{
	return s->metrics;
}

void vfgx_session_destroy(vfgx_session *s)
{
	if (!s)
		return;
	if (s->pl)
		vfgx_pipeline_stop(s->pl);
	session_user_stop(&s->user);
	session_record_free(&s->rec, s->ctx);
	if (s->cap) /* a failed start: the ports never ran */
		vfgx_capture_close(s->cap, NULL);
	vfgx_pipeline_destroy(s->pl); /* its observers first */
	vfgx_metrics_stop(s->own_metrics);
	session_user_close(&s->user);
	for (uint16_t i = 0; i < s->nb_ports; i++)
		vfgx_port_close(s->ports[i]);
	if (s->owns_cfg)
		vfgx_config_destroy(s->cfg);
	free(s->config_text);
	free(s);
}
