/* opts.h - typed backend options described by a table: one table gives
 * the defaults, the YAML adapter (file:line:col errors) and the range
 * check of a struct a program filled itself, so the two ways in cannot
 * disagree. */
#ifndef VFGX_OPTS_H
#define VFGX_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include <vfgx/config.h>

#include "core/cfgnode.h"

/* enum vfgx_opt_type, struct vfgx_opt and VFGX_OPT are public
 * (vfgx/config.h): a program describes its own config sections with them. */

/* Defaults into s (strings NULL), then argsz = size.  size 0: only the
 * table's fields, nothing else touched (a nested section's table). */
void vfgx_opts_default(const struct vfgx_opt *tab, size_t n, void *s,
		       size_t size);
/* Defaults, then the keys of map (absent: defaults); unknown keys and
 * values out of range fail with the node's file:line:col.  size 0: as
 * vfgx_opts_default. */
int vfgx_opts_from_yaml(const struct vfgx_cfg_node *map,
			const struct vfgx_opt *tab, size_t n, void *s,
			size_t size);
/* o, a VFGX_OPT_LIST, read from map into s (the struct o->off is in). */
int vfgx_opts_read_list(const struct vfgx_cfg_node *map,
			const struct vfgx_opt *o, void *s);
/* Every value of s against the table's ranges; errors name
 * "NAME: BACKEND options: KEY ...". */
int vfgx_opts_check(vfgx_ctx *ctx, const char *name, const char *backend,
		    const struct vfgx_opt *tab, size_t n, const void *s);
/* A struct the program filled: argsz-checked copy into out (size bytes),
 * then vfgx_opts_check. */
int vfgx_opts_from_user(vfgx_ctx *ctx, const char *name, const char *backend,
			const struct vfgx_opt *tab, size_t n, const void *user,
			void *out, size_t size);

/* A port's options: the program's struct (user) as vfgx_opts_from_user,
 * or, user NULL, the table's defaults. */
int vfgx_opts_get(vfgx_ctx *ctx, const char *name, const char *backend,
		  const struct vfgx_opt *tab, size_t n, const void *user,
		  void *out, size_t size);

/* size bytes, zeroed, that live as long as n's document (NULL when n is
 * absent or out of memory): where a YAML adapter puts the arrays of a
 * typed struct it fills (afxdp.queues, dpdk.eal_args, dpdk.flows). */
void *vfgx_cfg_alloc(const struct vfgx_cfg_node *n, size_t size);
/* The list under key in map: 0 (*out NULL) when absent or empty; n > 0 with
 * *out n zeroed elements of elem bytes in memory of the document and seq
 * the list's node; negative after a one-line error (not a list, more than
 * max items, named by what). */
int vfgx_cfg_list_alloc(const struct vfgx_cfg_node *map, const char *key,
			int max, const char *what, size_t elem,
			struct vfgx_cfg_node *seq, void **out);
#endif
