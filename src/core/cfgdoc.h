/* cfgdoc.h - a loaded YAML document (libyaml's document API) and the name
 * and context its errors are reported against. */
#ifndef VFGX_CFGDOC_H
#define VFGX_CFGDOC_H

#include <yaml.h>

#include <vfgx/config.h>

#include "cfgnode.h"

struct vfgx_cfg_doc {
	yaml_document_t doc;
	vfgx_ctx *ctx;
	char name[VFGX_PATH_MAX];
	/* what the typed-option adapters allocated for lists (vfgx_cfg_alloc):
	 * it lives as long as the document, as the strings they point to */
	struct cfg_alloc *allocs;
};

/* Free what vfgx_cfg_alloc handed out for this document. */
void vfgx_cfg_doc_free_allocs(struct vfgx_cfg_doc *doc);

/* len bytes of YAML text as a document named name (for messages): at
 * most VFGX_CONFIG_MAX_BYTES, VFGX_CONFIG_MAX_DEPTH and
 * VFGX_CONFIG_MAX_NODES (refused before it is built), syntax errors as
 * "name:line:col: YAML syntax: ...".  0 and *out, or -errno with one line
 * on ctx. */
int vfgx_cfg_doc_load(vfgx_ctx *ctx, const char *yaml, size_t len,
		      const char *name, struct vfgx_cfg_doc **out);
void vfgx_cfg_doc_destroy(struct vfgx_cfg_doc *doc);
/* A config file's bytes into *out (malloc'd, NULL when empty; *len), at
 * most twice VFGX_CONFIG_MAX_BYTES read; one line on ctx when it cannot
 * be opened or read (a directory too). */
int vfgx_cfg_read_file(vfgx_ctx *ctx, const char *path, char **out, size_t *len);

#endif
