/* config_ranks.h - the `ranks:` section (per-rank overrides for MPI
 * launches), parsed after interfaces: so it can check their names. */
#ifndef VFGX_CONFIG_RANKS_H
#define VFGX_CONFIG_RANKS_H

#include <vfgx/config.h>

#define VFGX_MAX_RANK_ENTRIES 4096
#define VFGX_MAX_RANK_CORES 1024

int vfgx_config_parse_ranks(struct vfgx_config *cfg,
			    const struct vfgx_cfg_node *root);

#endif
