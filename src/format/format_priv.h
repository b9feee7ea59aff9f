/* format_priv.h - the format layer's internal helpers (src/format). */
#ifndef VFGX_FORMAT_PRIV_H
#define VFGX_FORMAT_PRIV_H

#include <stddef.h>

#include <vfgx/format.h>

/* The i-th field of f and its key name; NULL past the last. */
const struct vfgx_fmt_field *vfgx_fmt_field_by_index(const struct vfgx_format *f,
						     unsigned i, const char **name);
/* A YAML file on its own: either a map with the format keys at the top,
 * or a config with pipeline.format.  One error line on ctx when bad. */
int vfgx_format_load_file(vfgx_ctx *ctx, const char *path, struct vfgx_format *f);
/* The same from len bytes of YAML text; name for messages. */
int vfgx_format_load_string(vfgx_ctx *ctx, const char *name, const char *yaml,
			    size_t len, struct vfgx_format *f);
#endif
