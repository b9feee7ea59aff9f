/* link_bad_embed.c - built only to be refused by test-link.py (check 3):
 * it links libvfgx.so.2 and also the internal static library, so library
 * code (the config reader it calls) is linked into it.  Never run. */
#include <stdint.h>

#include <vfgx/vfgx.h>

#include "core/cfgnode.h"

int main(void)
{
	uint32_t v = 0;
	vfgx_ctx *ctx;
	int ret;

	if (vfgx_ctx_create(&ctx))
		return 1;
	ret = vfgx_cfg_u32(NULL, "x", 0, 0, 1, &v);
	vfgx_ctx_destroy(ctx);
	return ret ? 1 : (int)v;
}
