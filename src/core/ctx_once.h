/* ctx_once.h - "say it once per context": a warning that every queue or
 * region of a run would repeat is printed for the first and logged at
 * debug level after (the context is the run's). */
#ifndef VFGX_CTX_ONCE_H
#define VFGX_CTX_ONCE_H

#include <stdbool.h>

#include <vfgx/core.h>

enum vfgx_once {
	VFGX_ONCE_HUGEPAGE_FALLBACK = 1u << 0,
	VFGX_ONCE_MEM_FALLBACK = 1u << 1,
};

/* true the first time `what` is asked of ctx, false after (and for NULL). */
bool vfgx_ctx_once(vfgx_ctx *ctx, enum vfgx_once what);

#endif
