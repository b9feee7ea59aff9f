/* test_devices_sysroot.c - the sysroot reader behind `vfgx devices` and
 * `vfgx doctor`: paths stay inside the root, text and numbers are read the
 * way sysfs writes them, lspci text stands in for binary config space, and
 * the PCIe distance of the fixture pairs, capability walks bounded by the
 * bytes read, FIFOs refused. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "hwscan.h"
#include "sysroot.h"

static char tmpdir[PATH_MAX];

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", tmpdir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char p[PATH_MAX];

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/vfgx-sysroot.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(p, sizeof(p), "%s/sys", tmpdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sys/d", tmpdir);
	mkdir(p, 0755);
	put("/sys/d/b", "2\n");
	put("/sys/d/a", "1\n");
	put("/sys/d/hex", "0x10de\n");
	put("/sys/d/neg", "-1\n");
	put("/sys/d/word", "performance  \n");
	put("/sys/d/bad", "12abc\n");
	put("/sys/d/cfg.txt", "00: de 10 30 23 06 04 10 00\n100: 0d 00 01 00 5f 00 1d 00\n");
	snprintf(p, sizeof(p), "%s/sys/escape", tmpdir);
	if (symlink("/etc", p))
		return -1;
	snprintf(p, sizeof(p), "%s/sys/inside", tmpdir);
	if (symlink("d", p))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_init(void **state)
{
	struct sysroot sr;

	(void)state;
	assert_int_equal(sysroot_init(&sr, NULL), 0);
	assert_true(sr.real);
	assert_int_equal(sysroot_init(&sr, "/"), 0);
	assert_true(sr.real);
	assert_int_equal(sysroot_init(&sr, "/nonexistent/vfgx-root"), -ENOENT);
	assert_int_equal(sysroot_init(&sr, tmpdir), 0);
	assert_false(sr.real);
}

static void test_read_text_and_numbers(void **state)
{
	struct sysroot sr;
	char buf[32];
	int64_t v;

	(void)state;
	assert_int_equal(sysroot_init(&sr, tmpdir), 0);
	assert_int_equal(sysroot_read(&sr, buf, sizeof(buf), "/sys/d/word"), 11);
	assert_string_equal(buf, "performance");
	assert_int_equal(sysroot_read(&sr, buf, 5, "/sys/d/word"), 4);
	assert_string_equal(buf, "perf");
	assert_int_equal(sysroot_read(&sr, buf, sizeof(buf), "/sys/d/missing"), -ENOENT);
	assert_string_equal(buf, "");
	assert_int_equal(sysroot_read_s64(&sr, &v, "/sys/d/hex"), 0);
	assert_int_equal(v, 0x10de);
	assert_int_equal(sysroot_read_s64(&sr, &v, "/sys/d/neg"), 0);
	assert_int_equal(v, -1);
	assert_int_equal(sysroot_read_s64(&sr, &v, "/sys/d/bad"), -EINVAL);
	assert_true(sysroot_exists(&sr, "/sys/d/%s", "a"));
	assert_false(sysroot_exists(&sr, "/sys/d/%s", "zz"));
}

static void test_list_sorted(void **state)
{
	struct sysroot sr;
	char **names;

	(void)state;
	assert_int_equal(sysroot_init(&sr, tmpdir), 0);
	assert_int_equal(sysroot_list(&sr, &names, "/sys/d"), 7);
	assert_string_equal(names[0], "a");
	assert_string_equal(names[1], "b");
	assert_string_equal(names[6], "word");
	assert_null(names[7]);
	free(names);
	assert_int_equal(sysroot_list(&sr, &names, "/sys/none"), -ENOENT);
	assert_null(names);
}

static void test_resolve_stays_inside(void **state)
{
	struct sysroot sr;
	char buf[PATH_MAX];

	(void)state;
	assert_int_equal(sysroot_init(&sr, tmpdir), 0);
	assert_int_equal(sysroot_resolve(&sr, buf, sizeof(buf), "/sys/inside/a"), 0);
	assert_string_equal(buf, "/sys/d/a");
	/* an absolute link points at the host, not into the fixture */
	assert_int_equal(sysroot_resolve(&sr, buf, sizeof(buf), "/sys/escape"), -EXDEV);
	assert_int_equal(sysroot_link_name(&sr, buf, sizeof(buf), "/sys/inside"), 0);
	assert_string_equal(buf, "d");
}

static void test_bdf(void **state)
{
	(void)state;
	assert_true(sysroot_is_bdf("0000:17:00.0"));
	assert_true(sysroot_is_bdf("0000:9a:1f.7"));
	assert_false(sysroot_is_bdf("17:00.0"));
	assert_false(sysroot_is_bdf("0000:17:00.0x"));
	assert_false(sysroot_is_bdf("pci0000:16"));
	assert_false(sysroot_is_bdf("virtio2"));
}

static void test_config_from_lspci_text(void **state)
{
	struct sysroot sr;
	uint8_t cfg[4096];
	char p[PATH_MAX];

	(void)state;
	assert_int_equal(sysroot_init(&sr, tmpdir), 0);
	snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/0000:01:00.0", tmpdir);
	{
		char cmd[PATH_MAX * 2];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s/sys/d/cfg.txt' '%s/config.lspci'",
			 p, tmpdir, p);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(sysroot_pci_config(&sr, "0000:01:00.0", cfg, sizeof(cfg)), 0x108);
	assert_int_equal(cfg[0], 0xde);
	assert_int_equal(cfg[1], 0x10);
	assert_int_equal(cfg[6], 0x10);
	assert_int_equal(cfg[0x100], 0x0d);
	assert_int_equal(cfg[0x106], 0x1d);
	assert_int_equal(cfg[0x50], 0); /* lines not given read as zero */
	assert_int_equal(sysroot_pci_config(&sr, "0000:02:00.0", cfg, sizeof(cfg)), -ENOENT);
}

/* A capability whose registers run past the bytes read is not found: the
 * acs-at-end fixture's ACS header sits at 0xffc, its control register
 * would be at 0x1002 (read past cfg[4096] before).
 */
static void test_cap_bounds(void **state)
{
	struct sysroot sr;
	uint8_t cfg[4096];
	int len;

	(void)state;
	assert_int_equal(sysroot_init(&sr, "tests/fixtures/acs-at-end"), 0);
	len = sysroot_pci_config(&sr, "0000:17:00.0", cfg, sizeof(cfg));
	assert_int_equal(len, 4096);
	assert_int_equal(sysroot_pci_ext_cap(cfg, len, 0x000d, 4), 0xffc);
	assert_int_equal(sysroot_pci_ext_cap(cfg, len, 0x000d, 8), 0);
	/* fewer bytes read than the header needs */
	assert_int_equal(sysroot_pci_ext_cap(cfg, 0xffe, 0x000d, 4), 0);
	assert_int_equal(sysroot_init(&sr, "tests/fixtures/acs-redirect"), 0);
	len = sysroot_pci_config(&sr, "0000:17:00.0", cfg, sizeof(cfg));
	assert_int_equal(sysroot_pci_ext_cap(cfg, len, 0x000d, 8), 0x100);
	assert_int_equal(sysroot_pci_cap(cfg, len, 0x10, 10), 0x68);
	assert_int_equal(sysroot_pci_cap(cfg, 0x70, 0x10, 10), 0); /* cut off */
}

/* A FIFO in a --root tree is refused at once, never waited on. */
static void test_fifo_refused(void **state)
{
	struct sysroot sr;
	uint8_t cfg[64];
	char p[PATH_MAX], buf[64];

	(void)state;
	alarm(20); /* the old code blocked in open() for ever */
	snprintf(p, sizeof(p), "%s/sys/fifo", tmpdir);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/0000:03:00.0", tmpdir);
	assert_int_equal(mkdir(p, 0755), 0);
	strcat(p, "/config");
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(sysroot_init(&sr, tmpdir), 0);
	assert_int_equal(sysroot_read(&sr, buf, sizeof(buf), "/sys/fifo"), -EINVAL);
	assert_int_equal(sysroot_pci_config(&sr, "0000:03:00.0", cfg, sizeof(cfg)), -EINVAL);
	alarm(0);
}

/* The committed fixture trees: the pairs rank as the trees were drawn. */
static void test_fixture_distances(void **state)
{
	struct sysroot sr;
	struct hw_scan *s = malloc(sizeof(*s));

	(void)state;
	assert_non_null(s);
	assert_int_equal(sysroot_init(&sr, "tests/fixtures/healthy-cx7-h100"), 0);
	hw_scan(&sr, s);
	assert_int_equal(s->nb_gpus, 1);
	assert_int_equal(s->nb_rdma, 2);
	assert_int_equal(s->nb_pairs, 2);
	assert_int_equal(s->pairs[0].dist, HW_SAME_SWITCH);
	assert_string_equal(s->nics[s->pairs[0].nic].name, "ens1f0np0");
	assert_int_equal(s->pairs[1].dist, HW_CROSS_SOCKET);
	assert_string_equal(s->gpus[0].dev.host, "pci0000:15");
	assert_int_equal(s->gpus[0].dev.depth, 4);
	assert_string_equal(s->gpus[0].iommu_group, "30");
	assert_true(s->nv_open);
	assert_string_equal(s->nv_driver, "550.54.15");

	assert_int_equal(sysroot_init(&sr, "tests/fixtures/cross-socket"), 0);
	hw_scan(&sr, s);
	assert_int_equal(s->nb_pairs, 1);
	assert_int_equal(s->pairs[0].dist, HW_CROSS_SOCKET);
	assert_int_equal(s->gpus[0].dev.numa, 1);

	assert_int_equal(sysroot_init(&sr, "tests/fixtures/no-gpu"), 0);
	hw_scan(&sr, s);
	assert_int_equal(s->nb_gpus, 0);
	assert_int_equal(s->nb_pairs, 0);
	assert_int_equal(s->nb_nics, 2);
	assert_string_equal(s->nics[0].name, "eth0");
	assert_string_equal(s->nics[0].dev.bdf, "0000:00:03.0");
	assert_string_equal(s->nics[0].dev.driver, "virtio_net");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_read_text_and_numbers),
		cmocka_unit_test(test_list_sorted),
		cmocka_unit_test(test_resolve_stays_inside),
		cmocka_unit_test(test_bdf),
		cmocka_unit_test(test_config_from_lspci_text),
		cmocka_unit_test(test_cap_bounds),
		cmocka_unit_test(test_fifo_refused),
		cmocka_unit_test(test_fixture_distances),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
