/* commlist_host.h - CPU-side helpers of the communication list (C only). */
#ifndef VFGX_COMMLIST_HOST_H
#define VFGX_COMMLIST_HOST_H

#include "commlist.h"

uint32_t vfgx_comm_load(const struct vfgx_comm_list *l, uint32_t slot);
struct vfgx_comm_pkt *vfgx_comm_pkts(const struct vfgx_comm_list *l,
				     uint32_t slot);
void vfgx_comm_publish(struct vfgx_comm_list *l, uint32_t slot, uint64_t seq,
		       uint32_t nb_pkts, uint32_t cmd);
void vfgx_comm_free(struct vfgx_comm_list *l, uint32_t slot);
void vfgx_comm_quit(struct vfgx_comm_list *l);

#endif
