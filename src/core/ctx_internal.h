/* ctx_internal.h - the context's layout, shared by src/core only. */
#ifndef VFGX_CTX_INTERNAL_H
#define VFGX_CTX_INTERNAL_H

#include <vfgx/core.h>

#define VFGX_ERRMSG_MAX 512

struct vfgx_ctx {
	char errmsg[VFGX_ERRMSG_MAX];
	enum vfgx_log_level level;
	vfgx_log_fn log_fn;
	void *log_user;
	unsigned once; /* enum vfgx_once bits already said (ctx_once.h) */
};

#endif
