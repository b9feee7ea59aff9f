/* test_devices.c - vfgx_devices_scan(), the library's hardware scan, on
 * the fixture trees of tests/fixtures through the public API only: the
 * GPU, the NICs and the GPU-NIC pairs nearest first; a missing root; a
 * caller's struct older than the library's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/vfgx.h>

static vfgx_ctx *ctx;

static void test_healthy_fixture(void **state)
{
	struct vfgx_device_pair p0 = { .argsz = sizeof(p0) }, p1 = { .argsz = sizeof(p1) };
	struct vfgx_device_nic nic = { .argsz = sizeof(nic) };
	struct vfgx_device_gpu gpu = { .argsz = sizeof(gpu) };
	vfgx_devices *d;

	(void)state;
	assert_int_equal(vfgx_devices_scan(ctx, "tests/fixtures/healthy-cx7-h100", &d), 0);
	assert_int_equal(vfgx_devices_nb_gpus(d), 1);
	assert_int_equal(vfgx_devices_nb_pairs(d), 2);
	assert_int_equal(vfgx_devices_pair(d, 0, &p0), 0);
	assert_int_equal(vfgx_devices_pair(d, 1, &p1), 0);
	assert_int_equal(p0.dist, VFGX_PCIE_SAME_SWITCH);
	assert_int_equal(p1.dist, VFGX_PCIE_CROSS_SOCKET);
	assert_string_equal(vfgx_pcie_dist_name(p0.dist), "same-switch");
	assert_int_equal(vfgx_devices_nic(d, p0.nic, &nic), 0);
	assert_string_equal(nic.name, "ens1f0np0");
	assert_true(nic.bdf[0] != '\0');
	assert_int_equal(vfgx_devices_gpu(d, p0.gpu, &gpu), 0);
	assert_int_equal(gpu.numa, 0);
	assert_true(gpu.bdf[0] != '\0');
	assert_int_equal(vfgx_devices_gpu(d, 1, &gpu), -EINVAL);
	assert_int_equal(vfgx_devices_pair(d, 2, &p0), -EINVAL);
	vfgx_devices_free(d);
}

static void test_no_gpu_fixture(void **state)
{
	/* a caller built against a version that knew only argsz and name */
	struct {
		uint32_t argsz;
		const char *name;
	} old = { .argsz = sizeof(old) };
	struct vfgx_device_nic nic = { .argsz = sizeof(nic) };
	vfgx_devices *d;

	(void)state;
	assert_int_equal(vfgx_devices_scan(ctx, "tests/fixtures/no-gpu", &d), 0);
	assert_int_equal(vfgx_devices_nb_gpus(d), 0);
	assert_int_equal(vfgx_devices_nb_pairs(d), 0);
	assert_int_equal(vfgx_devices_nb_nics(d), 2);
	assert_int_equal(vfgx_devices_nic(d, 0, &nic), 0);
	assert_string_equal(nic.name, "eth0");
	assert_string_equal(nic.bdf, "0000:00:03.0");
	assert_string_equal(nic.driver, "virtio_net");
	assert_int_equal(vfgx_devices_nic(d, 0, (struct vfgx_device_nic *)&old), 0);
	assert_string_equal(old.name, "eth0");
	vfgx_devices_free(d);
}

static void test_missing_root(void **state)
{
	vfgx_devices *d = (vfgx_devices *)1;

	(void)state;
	assert_int_equal(vfgx_devices_scan(ctx, "tests/fixtures/nope", &d), -ENOENT);
	assert_null(d);
	assert_non_null(strstr(vfgx_last_error(ctx), "tests/fixtures/nope: not a directory"));
}

static int setup(void **state)
{
	(void)state;
	return vfgx_ctx_create(&ctx) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	vfgx_ctx_destroy(ctx);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_fixture),
		cmocka_unit_test(test_no_gpu_fixture),
		cmocka_unit_test(test_missing_root),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
