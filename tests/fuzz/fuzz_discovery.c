/* fuzz_discovery.c - libFuzzer target: arbitrary bytes as a discovery
 * frame payload through the frame decoder and the peer table.  Must never
 * crash or read out of bounds; whatever decodes must re-encode to the same
 * bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/eba.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vfgx_eba_peer_table t;
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
	static uint64_t now;
	struct vfgx_eba_frame f;
	uint8_t out[VFGX_EBA_FRAME_HDR_LEN + VFGX_EBA_FRAME_MAX_DESCS * VFGX_EBA_DESC_LEN];
	uint8_t *copy;
	int len;

	if (!t.peers && vfgx_eba_peers_init(&t, 64))
		abort();
	if (size > 4096)
		return 0;
	/* an exact-size heap copy so ASan sees any overread */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	len = vfgx_eba_frame_decode(NULL, copy, size, &f);
	if (len > 0) {
		if ((size_t)len > size)
			abort(); /* consumed bytes it was not given */
		if (vfgx_eba_frame_encode(NULL, &f, out, sizeof(out)) != len ||
		    memcmp(out, copy, (size_t)len))
			abort(); /* decode accepted what encode would not write */
		for (uint16_t i = 0; i < f.count; i++)
			if (vfgx_eba_peers_update(&t, &f.desc[i], mac, now) < 0)
				break;
	}
	now += 1000000000ull;
	vfgx_eba_peers_expire(&t, now, NULL, NULL);
	free(copy);
	return 0;
}
