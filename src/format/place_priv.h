/* place_priv.h - pipeline.format.user_place inside the library (place.c):
 * its YAML keys, the cpu engine's function loaded from a shared object. */
#ifndef VFGX_PLACE_PRIV_H
#define VFGX_PLACE_PRIV_H

#include <stdbool.h>

#include <vfgx/place.h>

struct vfgx_cfg_node;

/* The user_place map under pipeline.format (format_map): *pc filled, its
 * strings owned by the document; *present false when absent. */
int vfgx_place_conf_from_yaml(const struct vfgx_cfg_node *format_map,
			      struct vfgx_place_conf *pc, bool *present);
/* pc->fn, or pc->symbol from pc->library (dlopen; *dl to unload), checked
 * to be a function.  One error line on ctx. */
int vfgx_place_load(vfgx_ctx *ctx, const struct vfgx_place_conf *pc, void **dl,
		    vfgx_place_fn **fn);
void vfgx_place_unload(void *dl);
#endif
