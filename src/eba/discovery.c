/* discovery.c - exposed-buffer discovery over raw Ethernet: broadcast our
 * descriptors with EtherType 0x88B5 on one interface (AF_PACKET) and keep
 * a leased table of what peers announce; bad frames are counted and
 * dropped, and each source MAC may add only so many entries a second. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vfgx/eba.h>

#include "core/argsz.h"

/* New entries one source MAC added in the current one-second window. */
struct src_rate {
	uint8_t mac[6];
	uint32_t added;
	uint64_t window_ns;
	uint64_t seen_ns;
};

struct vfgx_discovery {
	vfgx_ctx *ctx;
	int fd;
	int ifindex;
	char ifname[IF_NAMESIZE];
	uint8_t mac[6];
	uint64_t node_id;
	uint32_t interval_ms;
	uint32_t seq;
	struct vfgx_eba_frame local;
	struct vfgx_eba_peer_table peers;
	struct vfgx_discovery_stats st;
	struct src_rate src[VFGX_DISCOVERY_SOURCES];
	vfgx_discovery_event_fn ev;
	void *ev_user;
};

static uint64_t node_from_mac(const uint8_t mac[6])
{
	uint64_t v = 0;

	for (int i = 0; i < 6; i++)
		v = v << 8 | mac[i];
	return v ? v : 1;
}

static int set_local(vfgx_discovery *d, const struct vfgx_discovery_config *cfg)
{
	struct vfgx_eba_frame *f = &d->local;

	f->node_id = d->node_id;
	if (cfg->nb_local == 0) {
		memset(&f->desc[0], 0, sizeof(f->desc[0]));
		f->desc[0].type = VFGX_EBA_CTRL;
		f->desc[0].state_off = VFGX_EBA_NO_STATE;
		f->desc[0].lease_s = cfg->lease_s ? cfg->lease_s : 30;
		f->count = 1;
	} else {
		if (cfg->nb_local > VFGX_EBA_FRAME_MAX_DESCS)
			return vfgx_set_error(d->ctx, -EINVAL,
					      "discovery: %u local descriptors; one frame carries at most 16",
					      cfg->nb_local);
		memcpy(f->desc, cfg->local, cfg->nb_local * sizeof(f->desc[0]));
		f->count = cfg->nb_local;
	}
	for (uint16_t i = 0; i < f->count; i++) {
		f->desc[i].node_id = d->node_id;
		memcpy(f->desc[i].mac, d->mac, 6);
		if (vfgx_eba_desc_check(d->ctx, &f->desc[i]))
			return vfgx_set_error(d->ctx, -EINVAL, "discovery: local descriptor %u: %s",
					      i, vfgx_last_error(d->ctx));
	}
	return 0;
}

int vfgx_discovery_open(vfgx_ctx *ctx, const struct vfgx_discovery_config *ucfg,
			vfgx_discovery **out)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	struct ifreq ifr = { 0 };
	struct vfgx_discovery_config cfgv;
	const struct vfgx_discovery_config *cfg = &cfgv;
	vfgx_discovery *d;
	int ret;

	if (vfgx_argsz_copy(&cfgv, sizeof(cfgv), ucfg, sizeof(cfgv)))
		return vfgx_set_error(ctx, -EINVAL, "discovery: struct vfgx_discovery_config argsz %u not understood by this libvfgx",
				      ucfg->argsz);
	if (!cfg->ifname || !cfg->ifname[0] || strlen(cfg->ifname) >= IF_NAMESIZE)
		return vfgx_set_error(ctx, -EINVAL, "discovery: interface name missing or too long (give -i IFACE)");
	d = calloc(1, sizeof(*d));
	if (!d)
		return vfgx_set_error(ctx, -ENOMEM, "discovery: out of memory");
	d->ctx = ctx;
	d->fd = -1;
	d->interval_ms = cfg->interval_ms ? cfg->interval_ms : 200;
	strcpy(d->ifname, cfg->ifname);
	ret = vfgx_eba_peers_init(&d->peers, cfg->max_peers ? cfg->max_peers :
							  VFGX_DISCOVERY_DEFAULT_PEERS);
	if (ret) {
		vfgx_set_error(ctx, ret, "discovery: peer table allocation failed");
		goto err;
	}
	d->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(VFGX_EBA_ETHERTYPE));
	if (d->fd < 0) {
		ret = -errno;
		vfgx_set_error(ctx, ret, "discovery: AF_PACKET socket: %s (needs CAP_NET_RAW: run as root)",
			       strerror(errno));
		goto err;
	}
	strcpy(ifr.ifr_name, d->ifname);
	if (ioctl(d->fd, SIOCGIFINDEX, &ifr) < 0) {
		ret = -errno;
		vfgx_set_error(ctx, ret, "discovery: %s: no such interface (ip link lists them)", d->ifname);
		goto err;
	}
	d->ifindex = ifr.ifr_ifindex;
	if (ioctl(d->fd, SIOCGIFHWADDR, &ifr) < 0) {
		ret = -errno;
		vfgx_set_error(ctx, ret, "discovery: %s: cannot read the MAC address: %s",
			       d->ifname, strerror(errno));
		goto err;
	}
	memcpy(d->mac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_protocol = htons(VFGX_EBA_ETHERTYPE);
	sll.sll_ifindex = d->ifindex;
	if (bind(d->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		ret = -errno;
		vfgx_set_error(ctx, ret, "discovery: %s: bind: %s", d->ifname, strerror(errno));
		goto err;
	}
	d->node_id = cfg->node_id ? cfg->node_id : node_from_mac(d->mac);
	ret = set_local(d, cfg);
	if (ret)
		goto err;
	*out = d;
	return 0;
err:
	vfgx_discovery_close(d);
	return ret;
}

void vfgx_discovery_close(vfgx_discovery *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	vfgx_eba_peers_fini(&d->peers);
	free(d);
}

void vfgx_discovery_set_events(vfgx_discovery *d, vfgx_discovery_event_fn fn,
			       void *user)
{
	d->ev = fn;
	d->ev_user = user;
}

uint64_t vfgx_discovery_node_id(const vfgx_discovery *d)
{
	return d->node_id;
}

int vfgx_discovery_announce(vfgx_discovery *d)
{
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(VFGX_EBA_ETHERTYPE),
		.sll_ifindex = d->ifindex,
		.sll_halen = 6,
		.sll_addr = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
	};
	uint8_t buf[VFGX_EBA_FRAME_HDR_LEN + VFGX_EBA_FRAME_MAX_DESCS * VFGX_EBA_DESC_LEN];
	int len;

	d->local.seq = d->seq++;
	len = vfgx_eba_frame_encode(d->ctx, &d->local, buf, sizeof(buf));
	if (len < 0)
		return len;
	if (sendto(d->fd, buf, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return vfgx_set_error(d->ctx, -errno, "discovery: %s: send: %s (is the link up?)",
				      d->ifname, strerror(errno));
	d->st.tx_frames++;
	return 0;
}

/* The rate slot of mac: found, free, or the least recently seen one
 * (a flood of forged MACs only recycles slots; it never grows memory).
 */
static struct src_rate *src_slot(vfgx_discovery *d, const uint8_t mac[6],
				 uint64_t now_ns)
{
	struct src_rate *r = &d->src[0];

	for (int i = 0; i < VFGX_DISCOVERY_SOURCES; i++) {
		if (!memcmp(d->src[i].mac, mac, 6) && d->src[i].seen_ns) {
			r = &d->src[i];
			goto found;
		}
		if (d->src[i].seen_ns < r->seen_ns)
			r = &d->src[i];
	}
	memcpy(r->mac, mac, 6);
	r->added = 0;
	r->window_ns = now_ns;
found:
	r->seen_ns = now_ns ? now_ns : 1;
	if (now_ns - r->window_ns >= 1000000000ull || now_ns < r->window_ns) {
		r->window_ns = now_ns;
		r->added = 0;
	}
	return r;
}

int vfgx_discovery_input(vfgx_discovery *d, const void *payload, size_t len,
			 const uint8_t src_mac[6], uint64_t now_ns)
{
	struct vfgx_eba_frame f;
	struct src_rate *r;
	int ret;

	d->st.rx_frames++;
	ret = vfgx_eba_frame_decode(NULL, payload, len, &f);
	switch (ret) {
	case -EMSGSIZE: d->st.rx_truncated++; return ret;
	case -EBADMSG: d->st.rx_bad_magic++; return ret;
	case -EPROTONOSUPPORT: d->st.rx_bad_version++; return ret;
	default:
		if (ret < 0) {
			d->st.rx_malformed++;
			return ret;
		}
	}
	if (f.node_id == d->node_id) {
		d->st.rx_own++;
		return 0;
	}
	d->st.rx_valid++;
	r = src_slot(d, src_mac, now_ns);
	for (uint16_t i = 0; i < f.count; i++) {
		bool known = vfgx_eba_peers_find(&d->peers, f.desc[i].node_id,
						 f.desc[i].buffer_id);
		int ev;

		/* renewals are free: only new keys take from the source's rate */
		if (!known && r->added >= VFGX_DISCOVERY_NEW_PER_SRC) {
			d->st.rate_limited++;
			continue;
		}
		ev = vfgx_eba_peers_update(&d->peers, &f.desc[i], src_mac, now_ns);
		if (ev < 0) {
			d->st.table_full++;
			continue;
		}
		if (ev == VFGX_EBA_PEER_ADDED) {
			d->st.peers_added++;
			r->added++;
		}
		if (d->ev)
			d->ev(d->ev_user, vfgx_eba_peers_find(&d->peers, f.desc[i].node_id,
							      f.desc[i].buffer_id), ev, false);
	}
	d->st.peers_evicted = d->peers.evicted;
	return 0;
}

static void expired_cb(void *user, const struct vfgx_eba_peer *p)
{
	vfgx_discovery *d = user;

	d->st.peers_expired++;
	if (d->ev)
		d->ev(d->ev_user, p, 0, true);
}

static void receive_all(vfgx_discovery *d)
{
	uint8_t buf[2048];
	struct sockaddr_ll from;
	socklen_t fl = sizeof(from);
	ssize_t n;

	while ((n = recvfrom(d->fd, buf, sizeof(buf), MSG_DONTWAIT,
			     (struct sockaddr *)&from, &fl)) >= 0) {
		if (from.sll_pkttype != PACKET_OUTGOING)
			vfgx_discovery_input(d, buf, (size_t)n, from.sll_addr,
					     vfgx_now_ns());
		fl = sizeof(from);
	}
}

int vfgx_discovery_run(vfgx_discovery *d, uint32_t timeout_ms,
		       uint32_t want_nodes)
{
	uint64_t end = vfgx_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint64_t next = 0;

	if (want_nodes > d->peers.cap)
		return vfgx_set_error(d->ctx, -EINVAL,
				      "discovery: waiting for %u peers, but the peer table holds %u",
				      want_nodes, d->peers.cap);

	for (;;) {
		uint64_t now = vfgx_now_ns();
		struct pollfd pfd = { .fd = d->fd, .events = POLLIN };
		uint64_t wake;
		int ret;

		vfgx_eba_peers_expire(&d->peers, now, expired_cb, d);
		if (want_nodes && vfgx_eba_peers_nodes(&d->peers) >= want_nodes) {
			/* one more announcement so the peer learns of us too */
			ret = vfgx_discovery_announce(d);
			if (ret)
				return ret;
			break;
		}
		if (now >= end)
			break;
		if (now >= next) {
			ret = vfgx_discovery_announce(d);
			if (ret)
				return ret;
			next = now + (uint64_t)d->interval_ms * 1000000ull;
		}
		wake = next < end ? next : end;
		ret = poll(&pfd, 1, (int)((wake - now) / 1000000ull) + 1);
		if (ret < 0 && errno != EINTR)
			return vfgx_set_error(d->ctx, -errno, "discovery: %s: poll: %s",
					      d->ifname, strerror(errno));
		if (ret > 0)
			receive_all(d);
	}
	return (int)vfgx_eba_peers_nodes(&d->peers);
}

const struct vfgx_eba_peer_table *vfgx_discovery_peers(const vfgx_discovery *d)
{
	return &d->peers;
}

void vfgx_discovery_stats(const vfgx_discovery *d,
			  struct vfgx_discovery_stats *st)
{
	*st = d->st;
}
