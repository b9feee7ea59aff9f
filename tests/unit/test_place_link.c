/* test_place_link.c TILE_PLACE_FATBIN - the gpu engine's run-time link
 * for a user placement function (gpu_place_link.c), which needs no GPU:
 * the persistent kernel built for it, the entry and
 * examples/user_place's fatbin link (nvJitLink) into one image for
 * sm_90 that holds the kernel, ELF as cuobjdump reads it; a symbol the
 * module lacks, a name that is not an identifier and a module that does
 * not exist are each one error line naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pipeline/gpu_place_link.h"

static const char *fatbin;

static void test_links(void **state)
{
	char err[512] = "";
	void *cubin = NULL;
	size_t size = 0;
	const unsigned char *b;

	(void)state;
	if (vfgx_place_link(fatbin, "tile_place", 9, 0, &cubin, &size, err, sizeof(err)))
		fail_msg("link: %s", err);
	b = cubin;
	assert_true(size > 1024);
	/* an ELF image (a cubin) with the kernel's name in it */
	assert_memory_equal(b, "\x7f" "ELF", 4);
	assert_non_null(memmem(cubin, size, "kernel_persistent", 17));
	assert_non_null(memmem(cubin, size, "tile_place", 10));
	free(cubin);
}

static void expect_error(const char *module, const char *symbol, const char *needle)
{
	char err[512] = "";
	void *cubin = (void *)1;
	size_t size = 1;

	assert_int_not_equal(vfgx_place_link(module, symbol, 9, 0, &cubin, &size, err,
					     sizeof(err)), 0);
	assert_null(cubin);
	assert_int_equal(size, 0);
	if (!strstr(err, needle) || strchr(err, '\n'))
		fail_msg("error '%s' does not name '%s' on one line", err, needle);
	printf("ok   %s\n", err);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error(fatbin, "no_such_place", "no_such_place");
	expect_error(fatbin, "tile place", "tile place");
	expect_error(fatbin, "vfgx_user_place_entry", "vfgx_");
	expect_error("/nonexistent/place.fatbin", "tile_place", "/nonexistent/place.fatbin");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_errors),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: test_place_link TILE_PLACE_FATBIN\n");
		return 2;
	}
	fatbin = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
