/* test_afxdp_config.c - interfaces[].afxdp validation: every bad key or
 * value is refused before the port touches the interface (a key or value
 * when the config loads), with one line naming file:line:col or the thing
 * and the fix.  Runs without root. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/afxdp.h>
#include <vfgx/vfgx.h>

#include "../../unit/unit_ctx.h"

#define HEAD "memory_regions:\n" \
	     "  - { name: umem, kind: host, buf_size: %s, num_bufs: 256 }\n" \
	     "interfaces:\n" \
	     "  - name: x0\n" \
	     "    backend: afxdp\n" \
	     "%s" \
	     "    rx: { queues: [ { id: 0, memory_region: umem } ] }\n" \
	     "    afxdp:\n" \
	     "      %s\n"

/* Load a config built from HEAD and open its port; returns the first
 * failure (the section's keys and values at load, the rest at open) and
 * leaves the message in ctx. */
static int open_with(const char *buf_size, const char *address,
		     const char *afxdp_line)
{
	char y[1024];
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;
	int ret;

	snprintf(y, sizeof(y), HEAD, buf_size, address, afxdp_line);
	if ((ret = vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg)))
		return ret;
	ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port);
	if (!ret)
		vfgx_port_close(port);
	vfgx_config_destroy(cfg);
	return ret;
}

static void expect_error(const char *buf_size, const char *address,
			 const char *line, int err, const char *needle)
{
	assert_int_equal(open_with(buf_size, address, line), err);
	if (!strstr(vfgx_last_error(ctx), needle))
		fail_msg("'%s' lacks '%s'", vfgx_last_error(ctx), needle);
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
}

static void bad_ring(void **state)
{
	(void)state;
	expect_error("2048", "    address: lo\n", "rx_ring: 1000", -EINVAL,
		     "t.yaml:9:16: interfaces[0].afxdp.rx_ring: 1000 is not a power of two");
	expect_error("2048", "    address: lo\n", "fill_ring: 32", -EINVAL,
		     "fill_ring");
}

static void bad_mode_and_keys(void **state)
{
	(void)state;
	expect_error("2048", "    address: lo\n", "mode: turbo", -EINVAL, "mode");
	expect_error("2048", "    address: lo\n", "zero_copy: maybe", -EINVAL,
		     "zero_copy");
	expect_error("2048", "    address: lo\n", "ring: 64", -EINVAL, "ring");
	expect_error("2048", "    address: lo\n", "frame_size: 3000", -EINVAL,
		     "afxdp.frame_size: 3000; AF_XDP frames are 2048 or 4096 bytes");
}

static void bad_queues(void **state)
{
	(void)state;
	expect_error("2048", "    address: lo\n", "queues: [0, 1]", -EINVAL,
		     "2 queue ids for 1 rx queues");
	expect_error("2048", "    address: lo\n", "queues: [x]", -EINVAL,
		     "queues[0]: 'x' is not a whole number (must be 0..65535)");
	expect_error("2048", "    address: lo\n", "queues: ['+1']", -EINVAL,
		     "queues[0]: '+1' is not a whole number");
}

static void bad_address_and_frames(void **state)
{
	(void)state;
	expect_error("2048", "", "mode: auto", -EINVAL, "address: required for afxdp");
	expect_error("2048", "    address: vfgx-no-such0\n", "mode: auto",
		     -ENODEV, "interface 'vfgx-no-such0' not found");
	/* lo exists everywhere; the frame check comes before any socket */
	expect_error("1024", "    address: lo\n", "mode: auto", -EINVAL,
		     "buffers are 1024 bytes; AF_XDP frames are 2048 or 4096 bytes");
}

static void info_on_other_backend(void **state)
{
	const char *y = "interfaces:\n  - { backend: loopback }\n";
	struct vfgx_afxdp_info info;
	struct vfgx_config *cfg;
	vfgx_port *port;

	(void)state;
	assert_int_equal(vfgx_config_load_string(ctx, y, strlen(y), "l.yaml", &cfg), 0);
	assert_int_equal(vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port), 0);
	assert_int_equal(vfgx_afxdp_info(port, &info), -EINVAL);
	vfgx_port_close(port);
	vfgx_config_destroy(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_ring),
		cmocka_unit_test(bad_mode_and_keys),
		cmocka_unit_test(bad_queues),
		cmocka_unit_test(bad_address_and_frames),
		cmocka_unit_test(info_on_other_backend),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
