/* link_bad_undef.c - built only to be refused by test-link.py (check 2):
 * a module (a shared object may leave symbols to the loader) that calls a
 * function libvfgx has but does not export.  Never loaded. */
#include <stdint.h>

#include <vfgx/vfgx.h>

/* internal (src/core/cfgnode.h), hidden in libvfgx.so.2 */
struct vfgx_cfg_node;
int vfgx_cfg_u32(const struct vfgx_cfg_node *map, const char *key,
		 uint32_t def, uint32_t min, uint32_t max, uint32_t *out);

int link_bad_undef(void);

int link_bad_undef(void)
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
