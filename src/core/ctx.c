/* ctx.c - contexts, error strings and levelled logging. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx_internal.h"

int vfgx_ctx_create(vfgx_ctx **out)
{
	vfgx_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return -ENOMEM;
	ctx->level = VFGX_LOG_INFO;
	*out = ctx;
	return 0;
}

void vfgx_ctx_destroy(vfgx_ctx *ctx)
{
	free(ctx);
}

const char *vfgx_strerror(int err)
{
	if (err > 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case -ENOBUFS:
		return "no buffers available (pool exhausted)";
	case -ENOTSUP:
		return "not supported by this build or device";
	default:
		return strerror(-err);
	}
}

const char *vfgx_last_error(const vfgx_ctx *ctx)
{
	return ctx ? ctx->errmsg : "";
}

int vfgx_set_error(vfgx_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	if (!ctx)
		return err;
	va_start(ap, fmt);
	vsnprintf(ctx->errmsg, sizeof(ctx->errmsg), fmt, ap);
	va_end(ap);
	vfgx_dbg(ctx, "error %d: %s", err, ctx->errmsg);
	return err;
}

void vfgx_clear_error(vfgx_ctx *ctx)
{
	if (ctx)
		ctx->errmsg[0] = '\0';
}

void vfgx_log_set_level(vfgx_ctx *ctx, enum vfgx_log_level level)
{
	ctx->level = level;
}

enum vfgx_log_level vfgx_log_get_level(const vfgx_ctx *ctx)
{
	return ctx->level;
}

void vfgx_log_set_sink(vfgx_ctx *ctx, vfgx_log_fn fn, void *user)
{
	ctx->log_fn = fn;
	ctx->log_user = user;
}

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int vfgx_log_level_parse(const char *name, enum vfgx_log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum vfgx_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void vfgx_log(vfgx_ctx *ctx, enum vfgx_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (ctx && level > ctx->level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx && ctx->log_fn) {
		ctx->log_fn(ctx->log_user, level, msg);
		return;
	}
	fprintf(stderr, "vfgx: %s: %s\n", level_names[level], msg);
}

uint64_t vfgx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
