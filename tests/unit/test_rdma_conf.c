/* test_rdma_conf.c - the rdma backend's option checking and device lookup
 * errors, which need no RDMA device (the data path runs in tests/vm). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/rdma.h>
#include <vfgx/vfgx.h>

#include "unit_ctx.h"

/* The first failure: the rdma section's keys and values when the config
 * loads, the rest when the port opens. */
static int open_yaml(const char *y)
{
	struct vfgx_config *cfg;
	vfgx_port *port = NULL;
	int ret;

	if ((ret = vfgx_config_load_string(ctx, y, strlen(y), "r.yaml", &cfg)))
		return ret;
	ret = vfgx_port_open_config(ctx, cfg, &cfg->ifaces[0], &port);
	vfgx_config_destroy(cfg);
	if (!ret)
		vfgx_port_close(port);
	return ret;
}

static void test_options(void **state)
{
	(void)state;
	assert_int_equal(open_yaml("interfaces:\n  - name: r\n    backend: rdma\n    rdma: { role: client }\n"),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "needs peer"));
	assert_int_equal(open_yaml("interfaces:\n  - name: r\n    backend: rdma\n    rdma: { peer: 10.0.0.1 }\n"),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "has no port"));
	/* the port through the strict number parser: no junk, sign or zero */
	assert_int_equal(open_yaml("interfaces:\n  - name: r\n    backend: rdma\n    rdma: { peer: \"10.0.0.1:7471abc\" }\n"),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "port '7471abc' is not a whole number (must be 1..65535)"));
	assert_int_equal(open_yaml("interfaces:\n  - name: r\n    backend: rdma\n    rdma: { peer: \"10.0.0.1:+7471\" }\n"),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "port '+7471' is not a whole number"));
	assert_int_equal(open_yaml("interfaces:\n  - name: r\n    backend: rdma\n    rdma: { peer: \"10.0.0.1:1\", role: boss }\n"),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "r.yaml:4:"));
	assert_int_equal(open_yaml("interfaces:\n  - name: r\n    backend: rdma\n    rdma: { peer: \"10.0.0.1:1\", qdepth: 3 }\n"),
			 -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "qdepth"));
}

static void test_no_device(void **state)
{
	vfgx_rdma_dev *dev;

	(void)state;
	assert_int_equal(vfgx_rdma_dev_open(ctx, "no-such-dev0", 1, -1, &dev), -ENODEV);
	assert_null(dev);
	assert_non_null(strstr(vfgx_last_error(ctx), "rdma"));
	assert_null(strchr(vfgx_last_error(ctx), '\n'));
	assert_string_equal(vfgx_rdma_reg_path_name(VFGX_RDMA_REG_DMABUF), "dma-buf");
	assert_string_equal(vfgx_rdma_reg_path_name(VFGX_RDMA_REG_HOST), "host");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_no_device),
	};

	return cmocka_run_group_tests(tests, ctx_quiet_setup, ctx_teardown);
}
