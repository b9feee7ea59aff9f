/* cfgnode.h - the library's own reader of a loaded YAML document
 * (cfgnode.c): typed getters with precise errors (file:line:col:
 * key.path: what is allowed).  Internal: a program reads its sections
 * through tables (vfgx_config_section, vfgx/config.h). */
#ifndef VFGX_CFGNODE_H
#define VFGX_CFGNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vfgx/config.h>

/*
 * A position in a loaded document.  index 0 means "absent": every getter on
 * an absent mapping returns the default, so a section left out is read as
 * its defaults through the same code.
 */
struct vfgx_cfg_node {
	const struct vfgx_cfg_doc *doc;
	int index;
	/* key path for messages, e.g. interfaces[0].afxdp, in memory of the
	 * document; NULL (the top, or a node built by hand) reads as "" */
	const char *path;
};

bool vfgx_cfg_present(const struct vfgx_cfg_node *n);
/* Fail on any key of the mapping not in allowed (NULL-terminated). */
int vfgx_cfg_check_keys(const struct vfgx_cfg_node *map,
			const char *const *allowed);
/* 0 and *out set when present, -ENOENT when absent, -EINVAL when not a map. */
int vfgx_cfg_child(const struct vfgx_cfg_node *map, const char *key,
		   struct vfgx_cfg_node *out);
int vfgx_cfg_u64(const struct vfgx_cfg_node *map, const char *key,
		 uint64_t def, uint64_t min, uint64_t max, uint64_t *out);
int vfgx_cfg_u32(const struct vfgx_cfg_node *map, const char *key,
		 uint32_t def, uint32_t min, uint32_t max, uint32_t *out);
int vfgx_cfg_double(const struct vfgx_cfg_node *map, const char *key,
		    double def, double min, double max, double *out);
int vfgx_cfg_bool(const struct vfgx_cfg_node *map, const char *key, bool def,
		  bool *out);
/* Copies the scalar; -EINVAL (with a message) when longer than len-1. */
int vfgx_cfg_str(const struct vfgx_cfg_node *map, const char *key,
		 const char *def, char *buf, size_t len);
/* names is NULL-terminated; *out is the index of the matching name. */
int vfgx_cfg_enum(const struct vfgx_cfg_node *map, const char *key,
		  const char *const *names, int def, int *out);
/* Sequence access; an absent node is an empty sequence. */
int vfgx_cfg_seq_len(const struct vfgx_cfg_node *seq);
int vfgx_cfg_seq_item(const struct vfgx_cfg_node *seq, int i,
		      struct vfgx_cfg_node *out);
/* Scalar value of a node itself (for sequences of scalars). */
const char *vfgx_cfg_scalar(const struct vfgx_cfg_node *n);
/* A sequence item that must be a decimal whole number min..max, parsed by
 * the same strict rules as vfgx_cfg_u32. */
int vfgx_cfg_item_u32(const struct vfgx_cfg_node *item, uint32_t min,
		      uint32_t max, uint32_t *out);
/* "file:line:col: key.path" of n, in memory of its document ("" when n
 * is absent). */
const char *vfgx_cfg_where(const struct vfgx_cfg_node *n);
/* Report "file:line:col: path: message" on the document's context; returns
 * -EINVAL. */
int vfgx_cfg_error(const struct vfgx_cfg_node *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
