/* ctx.c - contexts, error strings and levelled logging. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx_internal.h"
#include "ctx_once.h"
#include "escape.h"

int vfgx_ctx_create(vfgx_ctx **out)
{
	vfgx_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return -ENOMEM;
	ctx->level = VFGX_LOG_INFO;
	*out = ctx;
	return 0;
}

bool vfgx_ctx_once(vfgx_ctx *ctx, enum vfgx_once what)
{
	bool first = ctx && !(ctx->once & what);

	if (ctx)
		ctx->once |= what;
	return first;
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

/* Length of the valid UTF-8 sequence at s that is not a C1 control
 * (U+0080..U+009F), or 0: the ranges are RFC 3629's, so overlong forms and
 * surrogates count as invalid.
 */
static size_t utf8_printable_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		if (s[0] == 0xc2)
			lo = 0xa0; /* C2 80..9F are the C1 controls */
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

size_t vfgx_escape(char *dst, size_t len, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;

	if (!len)
		return 0;
	while (*s) {
		char piece[8];
		size_t n, adv = 1;

		if (*s >= 0x20 && *s < 0x7f) {
			piece[0] = (char)*s;
			n = 1;
		} else if (*s >= 0x80 && (n = utf8_printable_len(s))) {
			memcpy(piece, s, n);
			adv = n;
		} else if (*s == '\n' || *s == '\t' || *s == '\r') {
			piece[0] = '\\';
			piece[1] = *s == '\n' ? 'n' : *s == '\t' ? 't' : 'r';
			n = 2;
		} else {
			n = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", *s);
		}
		if (o + n >= len)
			break; /* never half an escape or half a character */
		memcpy(dst + o, piece, n);
		o += n;
		s += adv;
	}
	dst[o] = '\0';
	return o;
}

int vfgx_set_error(vfgx_ctx *ctx, int err, const char *fmt, ...)
{
	char raw[VFGX_ERRMSG_MAX];
	va_list ap;

	if (!ctx)
		return err;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* messages echo config values and names from the wire */
	vfgx_escape(ctx->errmsg, sizeof(ctx->errmsg), raw);
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
	char raw[1024], msg[1024];
	va_list ap;

	if (ctx && level > ctx->level)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	vfgx_escape(msg, sizeof(msg), raw);
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
