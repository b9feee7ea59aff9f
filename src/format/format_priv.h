/* format_priv.h - the format layer's internal helpers (src/format). */
#ifndef VFGX_FORMAT_PRIV_H
#define VFGX_FORMAT_PRIV_H

#include <stddef.h>

#include <vfgx/format.h>

/* The i-th field of f and its key name; NULL past the last. */
const struct vfgx_fmt_field *vfgx_fmt_field_by_index(const struct vfgx_format *f,
						     unsigned i, const char **name);
#endif
