/* afxdp_none.c - vfgx_afxdp_info() for builds without libxdp/libbpf. */
#include <errno.h>

#include <vfgx/afxdp.h>

int vfgx_afxdp_info(vfgx_port *port, struct vfgx_afxdp_info *info)
{
	(void)port;
	(void)info;
	return -ENOTSUP;
}
