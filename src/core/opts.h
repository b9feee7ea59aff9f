/* opts.h - typed backend options described by a table: one table gives
 * the defaults, the YAML adapter (file:line:col errors) and the range
 * check of a struct a program filled itself, so the two ways in cannot
 * disagree. */
#ifndef VFGX_OPTS_H
#define VFGX_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include <vfgx/config.h>

enum vfgx_opt_type {
	VFGX_OPT_U32,    /* uint32_t */
	VFGX_OPT_U16,    /* uint16_t */
	VFGX_OPT_U64,    /* uint64_t */
	VFGX_OPT_DOUBLE, /* double */
	VFGX_OPT_BOOL,   /* bool */
	VFGX_OPT_ENUM,   /* uint32_t index into names */
	VFGX_OPT_STR,    /* const char *; from YAML it points into the document */
	VFGX_OPT_TRI,    /* int8_t: -1 (def: "depends"), or a YAML bool 0/1 */
	VFGX_OPT_SKIP,   /* a key read by the backend's adapter (a list or a
			  * nested section), never by the port */
};

struct vfgx_opt {
	const char *key;
	enum vfgx_opt_type type;
	size_t off;
	double def, min, max; /* numbers; bool and enum: def only */
	const char *const *names; /* enum */
	/* U64: the largest value when a double cannot name it exactly (above
	 * 2^53, e.g. INT64_MAX, which max would round up to 2^63); 0: max,
	 * where 1.8e19 or more means UINT64_MAX */
	uint64_t max_u64;
};

#define VFGX_OPT(T, S, F, ...) \
	{ #F, VFGX_OPT_##T, offsetof(S, F), __VA_ARGS__ }

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
/* Every value of s against the table's ranges; errors name
 * "NAME: BACKEND options: KEY ...". */
int vfgx_opts_check(vfgx_ctx *ctx, const char *name, const char *backend,
		    const struct vfgx_opt *tab, size_t n, const void *s);
/* A struct the program filled: argsz-checked copy into out (size bytes),
 * then vfgx_opts_check. */
int vfgx_opts_from_user(vfgx_ctx *ctx, const char *name, const char *backend,
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
