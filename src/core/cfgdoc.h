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

#endif
