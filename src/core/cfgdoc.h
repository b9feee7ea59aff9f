/* cfgdoc.h - a loaded YAML document (libyaml's document API) and the name
 * and context its errors are reported against. */
#ifndef VFGX_CFGDOC_H
#define VFGX_CFGDOC_H

#include <yaml.h>

#include <vfgx/config.h>

struct vfgx_cfg_doc {
	yaml_document_t doc;
	vfgx_ctx *ctx;
	char name[VFGX_PATH_MAX];
};

#endif
