/* test_pool.c - pools: bulk alloc is all-or-nothing, exhaustion is
 * -ENOBUFS and counted, frees are checked, regions of each kind, none larger than the
 * machine. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <vfgx/mem.h>

static void test_bulk_and_exhaustion(void **state)
{
	vfgx_ctx *ctx;
	vfgx_pool *p;
	void *a[16], *b[16];
	struct vfgx_pool_stats st;

	(void)state;
	assert_int_equal(vfgx_ctx_create(&ctx), 0);
	assert_int_equal(vfgx_pool_create(ctx, NULL, 100, 16, &p), 0);
	assert_int_equal(vfgx_pool_buf_size(p), 128); /* rounded to 64 */
	assert_int_equal(vfgx_pool_alloc_bulk(p, a, 10), 10);
	/* distinct, writable, non-overlapping buffers */
	for (int i = 0; i < 10; i++) {
		memset(a[i], i, 128);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(a[i], a[j]);
	}
	for (int i = 0; i < 10; i++)
		assert_int_equal(((uint8_t *)a[i])[127], i);
	assert_int_equal(vfgx_pool_alloc_bulk(p, b, 7), -ENOBUFS);
	assert_int_equal(vfgx_pool_available(p), 6); /* nothing taken */
	assert_int_equal(vfgx_pool_alloc_bulk(p, b, 6), 6);
	assert_int_equal(vfgx_pool_alloc_bulk(p, b + 6, 1), -ENOBUFS);
	vfgx_pool_stats(p, &st);
	assert_int_equal(st.alloc_fail, 2);
	assert_int_equal(st.alloc_ok, 16);
	vfgx_pool_free_bulk(p, a, 10);
	vfgx_pool_free_bulk(p, a, 1); /* double free: counted, ignored */
	void *foreign = &st;
	vfgx_pool_free_bulk(p, &foreign, 1);
	vfgx_pool_stats(p, &st);
	assert_int_equal(st.double_free, 2);
	assert_int_equal(vfgx_pool_available(p), 10);
	vfgx_pool_free_bulk(p, b, 6);
	assert_int_equal(vfgx_pool_available(p), 16);
	vfgx_pool_destroy(p);
	vfgx_ctx_destroy(ctx);
}

static void test_region_kinds(void **state)
{
	vfgx_ctx *ctx;
	vfgx_region *r;
	vfgx_pool *p;
	void *x;

	(void)state;
	assert_int_equal(vfgx_ctx_create(&ctx), 0);
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	/* hugepage: either real huge pages or a host fallback, always usable */
	assert_int_equal(vfgx_region_create(ctx, VFGX_MEM_HUGEPAGE, 1 << 20, 0, false, &r), 0);
	assert_true(vfgx_region_info(r)->kind == VFGX_MEM_HUGEPAGE ||
		    vfgx_region_info(r)->kind == VFGX_MEM_HOST);
	assert_int_equal(vfgx_region_info(r)->requested, VFGX_MEM_HUGEPAGE);
	assert_int_equal(vfgx_pool_create(ctx, r, 2048, 512, &p), 0);
	assert_int_equal(vfgx_pool_alloc_bulk(p, &x, 1), 1);
	memset(x, 0xab, 2048);
	assert_int_equal(vfgx_pool_index(p, x), 0);
	vfgx_pool_free_bulk(p, &x, 1);
	vfgx_pool_destroy(p);
	/* a region too small for the pool is refused with a message */
	assert_int_equal(vfgx_pool_create(ctx, r, 2048, 1024, &p), -EINVAL);
	assert_non_null(strstr(vfgx_last_error(ctx), "cannot hold"));
	vfgx_pool_destroy(NULL);
	vfgx_region_destroy(r);
	/* more than the machine has: refused, not overcommitted (1 PiB) */
	assert_int_equal(vfgx_region_create(ctx, VFGX_MEM_HOST, (size_t)1 << 50, 0, false, &r), -ENOMEM);
	assert_null(r);
	assert_non_null(strstr(vfgx_last_error(ctx), "larger than this machine's memory"));
	/* gpu memory without a GPU: an error, or host memory when allowed */
	if (vfgx_region_create(ctx, VFGX_MEM_GPU, 1 << 20, 0, false, &r) == 0) {
		assert_int_equal(vfgx_region_info(r)->kind, VFGX_MEM_GPU);
		vfgx_region_destroy(r);
	} else {
		assert_true(strlen(vfgx_last_error(ctx)) > 0);
		assert_int_equal(vfgx_region_create(ctx, VFGX_MEM_GPU, 1 << 20, 0, true, &r), 0);
		assert_int_equal(vfgx_region_info(r)->kind, VFGX_MEM_HOST);
		vfgx_region_destroy(r);
	}
	vfgx_ctx_destroy(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bulk_and_exhaustion),
		cmocka_unit_test(test_region_kinds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
