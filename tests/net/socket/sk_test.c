/* sk_test.c - set-up shared by the socket backend's test programs. */
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vfgx/socket.h>

#include "sk_test.h"

vfgx_port *sk_open_port(vfgx_ctx *ctx, const char *yaml, uint16_t nrx,
			uint16_t ntx, struct vfgx_config **cfgp, int *err)
{
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;

	*err = vfgx_config_load_string(ctx, yaml, strlen(yaml), "t.yaml", &cfg);
	if (*err)
		return NULL;
	cfg->ifaces[0].nb_rx_queues = nrx;
	cfg->ifaces[0].nb_tx_queues = ntx;
	*err = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port);
	if (*err) {
		vfgx_config_destroy(cfg);
		return NULL;
	}
	*cfgp = cfg;
	return port;
}

uint16_t sk_port_of(vfgx_port *p)
{
	struct vfgx_socket_info si;

	vfgx_socket_info(p, &si);
	return si.port;
}

int sk_lo_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int ret;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ret = ioctl(fd, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (!ret)
		ret = ioctl(fd, SIOCSIFFLAGS, &ifr);
	close(fd);
	return ret;
}
