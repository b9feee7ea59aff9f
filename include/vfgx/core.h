/* vfgx/core.h - context, errors and logging: the handle every other call takes. */
#ifndef VFGX_CORE_H
#define VFGX_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

#define VFGX_VERSION_MAJOR 0
#define VFGX_VERSION_MINOR 1
#define VFGX_VERSION_PATCH 0
#define VFGX_VERSION_STRING "0.1.0"

/*
 * A context owns the error detail string, the log settings and the objects
 * created from it.  Contexts are independent: there is no global mutable
 * state in libvfgx.  A context is not thread-safe; objects created from it
 * document their own rules (ports and pools: one thread per queue).
 */
typedef struct vfgx_ctx vfgx_ctx;

enum vfgx_log_level {
	VFGX_LOG_ERROR = 0,
	VFGX_LOG_WARN = 1,
	VFGX_LOG_INFO = 2,
	VFGX_LOG_DEBUG = 3,
};

typedef void (*vfgx_log_fn)(void *user, enum vfgx_log_level level,
			    const char *msg);

/* Create a context.  Logs go to stderr at INFO until changed. */
int vfgx_ctx_create(vfgx_ctx **out);
void vfgx_ctx_destroy(vfgx_ctx *ctx);

/* Return a static description of a negative errno (or a vfgx code). */
const char *vfgx_strerror(int err);

/*
 * Detail of the last failure on this context: what and where, e.g.
 * "config.yaml:12:5: rx.queues[0].batch_size: must be 1..1024".
 * Empty string when nothing failed.  Valid until the next failing call.
 */
const char *vfgx_last_error(const vfgx_ctx *ctx);

/* Record a detail string and return err (a negative errno) for chaining. */
int vfgx_set_error(vfgx_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void vfgx_clear_error(vfgx_ctx *ctx);

void vfgx_log_set_level(vfgx_ctx *ctx, enum vfgx_log_level level);
enum vfgx_log_level vfgx_log_get_level(const vfgx_ctx *ctx);
/* Replace the stderr sink; fn NULL restores it. */
void vfgx_log_set_sink(vfgx_ctx *ctx, vfgx_log_fn fn, void *user);
void vfgx_log(vfgx_ctx *ctx, enum vfgx_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int vfgx_log_level_parse(const char *name, enum vfgx_log_level *out);

/*
 * The one strict number parser of config values, for a program's own
 * flags too: decimal digits only (0x only with VFGX_NUM_HEX), no sign on
 * whole numbers, no leading zeros, no blanks, the whole string consumed,
 * range-checked before any conversion; nan, inf and values that wrap are
 * refused.  0 and *out set, or -EINVAL (out untouched) with a one-line
 * message in err (errlen bytes, VFGX_NUM_ERR_MAX is room for any; err may
 * be NULL) that echoes the input escaped, e.g. "'4294967297' is out of
 * range (must be 0..4294967295)".
 */
#define VFGX_NUM_HEX 1u
#define VFGX_NUM_ERR_MAX 256
int vfgx_num_u64(const char *s, uint64_t min, uint64_t max, unsigned flags,
		 uint64_t *out, char *err, size_t errlen);
/* A decimal real: optional '-', digits with at most one '.', an optional
 * exponent; finite and within min..max. */
int vfgx_num_double(const char *s, double min, double max, double *out,
		    char *err, size_t errlen);

/*
 * Copies src into dst (len bytes, always NUL-terminated when len > 0),
 * writing newline, tab and carriage return as \n \t \r and every other
 * control character and every byte that is not valid UTF-8 as \xNN, so
 * text that echoes input (a config value, a name from the wire) stays one
 * line and cannot move a terminal's cursor.  Truncates at a whole
 * character or escape.  Returns strlen(dst).  vfgx_set_error() and
 * vfgx_log() pass every message through it.
 */
size_t vfgx_escape(char *dst, size_t len, const char *src);

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). */
uint64_t vfgx_now_ns(void);

#define vfgx_err(ctx, ...) vfgx_log((ctx), VFGX_LOG_ERROR, __VA_ARGS__)
#define vfgx_warn(ctx, ...) vfgx_log((ctx), VFGX_LOG_WARN, __VA_ARGS__)
#define vfgx_info(ctx, ...) vfgx_log((ctx), VFGX_LOG_INFO, __VA_ARGS__)
#define vfgx_dbg(ctx, ...) vfgx_log((ctx), VFGX_LOG_DEBUG, __VA_ARGS__)

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
