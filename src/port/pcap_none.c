/* pcap_none.c - the pcap port's info and capture files for builds
 * without libpcap: one line saying so. */
#include <errno.h>

#include <vfgx/capture.h>
#include <vfgx/pcap.h>

#include "capture_open.h"

int vfgx_pcap_info(vfgx_port *port, struct vfgx_pcap_info *info)
{
	(void)port;
	(void)info;
	return -ENOTSUP;
}

int vfgx_capture_open(vfgx_ctx *ctx, const struct vfgx_capture_conf *conf,
		      vfgx_capture **out)
{
	(void)conf;
	*out = NULL;
	return vfgx_set_error(ctx, -ENOTSUP,
			      "capture: this build has no libpcap (install libpcap-dev and rebuild)");
}

int vfgx_capture_open_guarded(vfgx_ctx *ctx, const struct vfgx_capture_conf *conf,
			      const struct vfgx_capture_guard *guard, vfgx_capture **out)
{
	(void)guard;
	return vfgx_capture_open(ctx, conf, out);
}

int vfgx_capture_attach(vfgx_capture *c, vfgx_port *port)
{
	(void)c;
	(void)port;
	return -ENOTSUP;
}

void vfgx_capture_stats(vfgx_capture *c, struct vfgx_capture_stats *st)
{
	(void)c;
	*st = (struct vfgx_capture_stats){ .error = -ENOTSUP };
}

int vfgx_capture_close(vfgx_capture *c, struct vfgx_capture_stats *st)
{
	(void)c;
	if (st)
		*st = (struct vfgx_capture_stats){ .error = -ENOTSUP };
	return 0;
}
