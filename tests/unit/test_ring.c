/* test_ring.c - SPSC ring: order, full/empty behaviour, and a two-thread
 * stress run where every value must arrive once, in order. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <vfgx/mem.h>

static void test_init_rejects_bad_size(void **state)
{
	struct vfgx_ring r;

	(void)state;
	assert_int_equal(vfgx_ring_init(&r, 0), -EINVAL);
	assert_int_equal(vfgx_ring_init(&r, 3), -EINVAL);
	assert_int_equal(vfgx_ring_init(&r, 8), 0);
	vfgx_ring_fini(&r);
}

static void test_fifo_and_full(void **state)
{
	struct vfgx_ring r;
	void *in[10], *out[10];

	(void)state;
	assert_int_equal(vfgx_ring_init(&r, 8), 0);
	for (uintptr_t i = 0; i < 10; i++)
		in[i] = (void *)(i + 1);
	assert_int_equal(vfgx_ring_enqueue_burst(&r, in, 10), 8); /* full */
	assert_int_equal(vfgx_ring_count(&r), 8);
	assert_int_equal(vfgx_ring_enqueue_burst(&r, in + 8, 2), 0);
	assert_int_equal(vfgx_ring_dequeue_burst(&r, out, 3), 3);
	assert_ptr_equal(out[0], in[0]);
	assert_ptr_equal(out[2], in[2]);
	assert_int_equal(vfgx_ring_enqueue_burst(&r, in + 8, 2), 2);
	assert_int_equal(vfgx_ring_dequeue_burst(&r, out, 10), 7);
	assert_ptr_equal(out[0], in[3]);
	assert_ptr_equal(out[6], in[9]);
	assert_int_equal(vfgx_ring_dequeue_burst(&r, out, 1), 0);
	vfgx_ring_fini(&r);
}

#define STRESS_N 2000000u

static void *producer(void *arg)
{
	struct vfgx_ring *r = arg;
	uintptr_t next = 1;

	while (next <= STRESS_N) {
		void *b[17];
		uint32_t n = 0;

		for (; n < 17 && next + n <= STRESS_N; n++)
			b[n] = (void *)(next + n);
		next += vfgx_ring_enqueue_burst(r, b, n);
	}
	return NULL;
}

static void test_two_threads(void **state)
{
	struct vfgx_ring r;
	pthread_t th;
	uintptr_t expect = 1;

	(void)state;
	assert_int_equal(vfgx_ring_init(&r, 256), 0);
	assert_int_equal(pthread_create(&th, NULL, producer, &r), 0);
	while (expect <= STRESS_N) {
		void *b[32];
		uint32_t n = vfgx_ring_dequeue_burst(&r, b, 32);

		for (uint32_t i = 0; i < n; i++) {
			if ((uintptr_t)b[i] != expect)
				fail_msg("got %zu, expected %zu", (size_t)(uintptr_t)b[i], (size_t)expect);
			expect++;
		}
	}
	pthread_join(th, NULL);
	assert_int_equal(vfgx_ring_count(&r), 0);
	vfgx_ring_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_rejects_bad_size),
		cmocka_unit_test(test_fifo_and_full),
		cmocka_unit_test(test_two_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
