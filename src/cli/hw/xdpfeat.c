/* xdpfeat.c - each netdev's XDP features as the kernel reports them: the
 * generic-netlink family "netdev" (Linux >= 6.3), read through libmnl.
 * Older kernels lack the family; hwscan then keeps its driver table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include "hwscan.h"

/* include/uapi/linux/netdev.h (Linux 6.3); Debian 12's headers predate it */
#define NETDEV_FAMILY_NAME "netdev"
#define NETDEV_CMD_DEV_GET 1
#define NETDEV_A_DEV_IFINDEX 1
#define NETDEV_A_DEV_XDP_FEATURES 3
#define NETDEV_XDP_ACT_BASIC (1u << 0)
#define NETDEV_XDP_ACT_XSK_ZEROCOPY (1u << 3)

struct dump {
	struct hw_scan *s;
	int matched;
};

static int family_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (type == CTRL_ATTR_FAMILY_ID && mnl_attr_validate(a, MNL_TYPE_U16) >= 0)
		tb[type] = a;
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[CTRL_ATTR_MAX + 1] = { 0 };
	uint16_t *id = data;

	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), family_attr, tb);
	if (tb[CTRL_ATTR_FAMILY_ID])
		*id = mnl_attr_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	return MNL_CB_OK;
}

static int dev_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if ((type == NETDEV_A_DEV_IFINDEX && mnl_attr_validate(a, MNL_TYPE_U32) >= 0) ||
	    (type == NETDEV_A_DEV_XDP_FEATURES && mnl_attr_validate(a, MNL_TYPE_U64) >= 0))
		tb[type] = a;
	return MNL_CB_OK;
}

static int dev_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[NETDEV_A_DEV_XDP_FEATURES + 1] = { 0 };
	struct dump *d = data;
	uint32_t ifindex;
	uint64_t feat;

	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), dev_attr, tb);
	if (!tb[NETDEV_A_DEV_IFINDEX] || !tb[NETDEV_A_DEV_XDP_FEATURES])
		return MNL_CB_OK;
	ifindex = mnl_attr_get_u32(tb[NETDEV_A_DEV_IFINDEX]);
	feat = mnl_attr_get_u64(tb[NETDEV_A_DEV_XDP_FEATURES]);
	for (int i = 0; i < d->s->nb_nics; i++) {
		struct hw_nic *n = &d->s->nics[i];

		if (n->ifindex != (int)ifindex)
			continue;
		n->xdp = feat & NETDEV_XDP_ACT_BASIC ? "native" : "generic";
		n->xdp_zerocopy = feat & NETDEV_XDP_ACT_XSK_ZEROCOPY;
		n->xdp_source = "kernel";
		d->matched++;
	}
	return MNL_CB_OK;
}

/* Send one request and run cb over every reply until the ack or the end
 * of the dump. */
static int request(struct mnl_socket *nl, struct nlmsghdr *nlh, char *buf,
		   size_t len, mnl_cb_t cb, void *data)
{
	unsigned int portid = mnl_socket_get_portid(nl);
	unsigned int seq = nlh->nlmsg_seq;
	ssize_t n;
	int ret;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while ((n = mnl_socket_recvfrom(nl, buf, len)) > 0) {
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
		if (ret < 0)
			return -errno;
		if (ret == MNL_CB_STOP)
			return 0;
	}
	return n < 0 ? -errno : 0;
}

static struct nlmsghdr *genl_msg(char *buf, uint16_t type, uint16_t flags,
				 uint8_t cmd, unsigned int seq)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = 1;
	return nlh;
}

int hw_xdp_features(struct hw_scan *s)
{
	char buf[8192]; /* MNL_SOCKET_BUFFER_SIZE is at most 8192 */
	struct dump d = { .s = s };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	unsigned int seq = (unsigned int)time(NULL);
	uint16_t family = 0;
	int ret;

	nl = mnl_socket_open(NETLINK_GENERIC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	nlh = genl_msg(buf, GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, CTRL_CMD_GETFAMILY, seq);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, NETDEV_FAMILY_NAME);
	ret = request(nl, nlh, buf, sizeof(buf), family_cb, &family);
	if (ret || !family) {
		ret = ret ? ret : -ENOENT; /* kernel < 6.3: no "netdev" family */
		goto out;
	}
	nlh = genl_msg(buf, family, NLM_F_REQUEST | NLM_F_DUMP, NETDEV_CMD_DEV_GET, seq + 1);
	ret = request(nl, nlh, buf, sizeof(buf), dev_cb, &d);
	if (!ret)
		ret = d.matched;
out:
	mnl_socket_close(nl);
	return ret;
}
