/* fuzz_config.c - libFuzzer target: arbitrary text as a YAML config, then
 * each interface's loopback section through the backend's own parser.
 * Must never crash, leak, or fail without an error message, and that
 * message is one line with no control characters whatever the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vfgx/vfgx.h>

#include "mem/pool_bytes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The memory an interface's rx queues would map: a config may ask for
 * gigabytes (the product refuses only more than the machine has), and
 * loopback replay writes every buffer, so the harness opens only ports
 * that fit its own 2 GiB limit with room to spare. */
static size_t iface_bytes(const struct vfgx_config *cfg,
			  const struct vfgx_iface_config *ifc)
{
	size_t sum = 0;

	for (uint16_t q = 0; q < ifc->nb_rx_queues; q++) {
		const struct vfgx_region_config *rc = NULL;

		if (ifc->rx_queues[q].region && ifc->rx_queues[q].region[0])
			rc = vfgx_config_find_region(cfg, ifc->rx_queues[q].region);
		sum += rc ? vfgx_pool_bytes(rc->buf_size, rc->num_bufs) : (size_t)8 << 20;
	}
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static vfgx_ctx *ctx;
	struct vfgx_config *cfg;
	int ret;

	if (!ctx) {
		if (vfgx_ctx_create(&ctx))
			abort();
		vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
		vfgx_log_set_sink(ctx, NULL, NULL);
	}
	if (size > 1 << 16)
		return 0;
	vfgx_clear_error(ctx);
	ret = vfgx_config_load_string(ctx, (const char *)data, size, "fuzz.yaml", &cfg);
	if (ret) {
		const char *msg = vfgx_last_error(ctx);

		if (!msg[0])
			abort(); /* every refusal must say why */
		for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort(); /* an input cannot forge a line */
		return 0;
	}
	for (uint16_t i = 0; i < cfg->nb_ifaces; i++) {
		vfgx_port *port;

		if (strcmp(cfg->ifaces[i].backend, "loopback") ||
		    iface_bytes(cfg, &cfg->ifaces[i]) > (size_t)256 << 20)
			continue;
		/* keep the generator small so one input stays fast */
		if (vfgx_port_open_config(ctx, cfg, &cfg->ifaces[i], &port) == 0) {
			struct vfgx_pkt pk[8];
			int n = vfgx_port_rx_burst(port, 0, pk, 8);

			if (n > 0)
				vfgx_port_release(port, 0, pk, (uint16_t)n);
			vfgx_port_close(port);
		}
	}
	vfgx_config_destroy(cfg);
	return 0;
}
