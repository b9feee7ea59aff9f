/* peers.c - the discovery peer table: descriptors keyed by (node, buffer)
 * with lease expiry against a caller-supplied clock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/eba.h>

int vfgx_eba_peers_init(struct vfgx_eba_peer_table *t, uint32_t cap)
{
	if (cap == 0)
		return -EINVAL;
	t->peers = calloc(cap, sizeof(*t->peers));
	if (!t->peers)
		return -ENOMEM;
	t->nb = 0;
	t->cap = cap;
	t->stale_ns = VFGX_EBA_PEER_STALE_NS;
	t->evicted = 0;
	return 0;
}

void vfgx_eba_peers_fini(struct vfgx_eba_peer_table *t)
{
	free(t->peers);
	t->peers = NULL;
	t->nb = t->cap = 0;
}

static struct vfgx_eba_peer *find(const struct vfgx_eba_peer_table *t,
				  uint64_t node_id, uint32_t buffer_id)
{
	for (uint32_t i = 0; i < t->nb; i++)
		if (t->peers[i].desc.node_id == node_id &&
		    t->peers[i].desc.buffer_id == buffer_id)
			return &t->peers[i];
	return NULL;
}

const struct vfgx_eba_peer *vfgx_eba_peers_find(const struct vfgx_eba_peer_table *t,
						uint64_t node_id,
						uint32_t buffer_id)
{
	return find(t, node_id, buffer_id);
}

/* The entry announced longest ago: the one a new key may replace. */
static struct vfgx_eba_peer *stalest(struct vfgx_eba_peer_table *t)
{
	struct vfgx_eba_peer *old = &t->peers[0];

	for (uint32_t i = 1; i < t->nb; i++)
		if (t->peers[i].last_ns < old->last_ns)
			old = &t->peers[i];
	return old;
}

static bool desc_equal(const struct vfgx_eba_desc *a,
		       const struct vfgx_eba_desc *b)
{
	return a->type == b->type && a->addr == b->addr && a->rkey == b->rkey &&
	       a->qpn == b->qpn && a->size == b->size &&
	       a->state_off == b->state_off && a->lease_s == b->lease_s &&
	       !memcmp(a->gid, b->gid, 16) && !memcmp(a->mac, b->mac, 6);
}

int vfgx_eba_peers_update(struct vfgx_eba_peer_table *t,
			  const struct vfgx_eba_desc *d,
			  const uint8_t src_mac[6], uint64_t now_ns)
{
	struct vfgx_eba_peer *p = find(t, d->node_id, d->buffer_id);
	uint64_t expires = now_ns + (uint64_t)d->lease_s * 1000000000ull;
	int event = VFGX_EBA_PEER_RENEWED;

	if (!p) {
		if (t->nb == t->cap) {
			p = stalest(t);
			if (now_ns <= p->last_ns ||
			    now_ns - p->last_ns < t->stale_ns)
				return -ENOSPC;
			t->evicted++;
		} else {
			p = &t->peers[t->nb++];
		}
		memset(p, 0, sizeof(*p));
		p->first_ns = now_ns;
		event = VFGX_EBA_PEER_ADDED;
	} else if (!desc_equal(&p->desc, d)) {
		event = VFGX_EBA_PEER_CHANGED;
	}
	p->desc = *d;
	memcpy(p->src_mac, src_mac, 6);
	p->last_ns = now_ns;
	p->expires_ns = expires;
	return event;
}

uint32_t vfgx_eba_peers_expire(struct vfgx_eba_peer_table *t, uint64_t now_ns,
			       void (*cb)(void *user,
					  const struct vfgx_eba_peer *p),
			       void *user)
{
	uint32_t removed = 0, i = 0;

	while (i < t->nb) {
		if (t->peers[i].expires_ns > now_ns) {
			i++;
			continue;
		}
		if (cb)
			cb(user, &t->peers[i]);
		t->peers[i] = t->peers[--t->nb];
		removed++;
	}
	return removed;
}

uint32_t vfgx_eba_peers_nodes(const struct vfgx_eba_peer_table *t)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nb; i++) {
		uint32_t j;

		for (j = 0; j < i; j++)
			if (t->peers[j].desc.node_id == t->peers[i].desc.node_id)
				break;
		if (j == i)
			n++;
	}
	return n;
}
