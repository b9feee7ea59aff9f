/* gpu_place_shim.cu - the entry the persistent kernel built for
 * user_place calls (vfgx_user_place_entry), calling the user's function.
 * Built as PTX; gpu_place_link.c puts the user's symbol in place of
 * VFGX_PLACE_SYMBOL_ before linking, so any name links. */
#include <vfgx/place.h>

extern "C" __device__ int VFGX_PLACE_SYMBOL_(const uint8_t *pkt, uint32_t len,
					     const struct vfgx_fmt_pkt *d,
					     struct vfgx_place *out);

extern "C" __device__ int vfgx_user_place_entry(const uint8_t *pkt, uint32_t len,
						const struct vfgx_fmt_pkt *d,
						struct vfgx_place *out)
{
	return VFGX_PLACE_SYMBOL_(pkt, len, d, out);
}
