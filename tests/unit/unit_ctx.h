/* unit_ctx.h - the one library context of a cmocka test program, `ctx`,
 * and its life: made before the group's tests run and destroyed after
 * (main: cmocka_run_group_tests(tests, ctx_setup, ctx_teardown), or
 * ctx_quiet_setup for a context that logs errors only), and the two
 * config loaders the tests share.  Included once per program, after
 * <cmocka.h> and <vfgx/vfgx.h>. */
#ifndef VFGX_TESTS_UNIT_CTX_H
#define VFGX_TESTS_UNIT_CTX_H

#include <string.h>

static vfgx_ctx *ctx;

static inline int ctx_setup(void **state)
{
	(void)state;
	return vfgx_ctx_create(&ctx);
}

static inline int ctx_quiet_setup(void **state)
{
	(void)state;
	if (vfgx_ctx_create(&ctx))
		return -1;
	vfgx_log_set_level(ctx, VFGX_LOG_ERROR);
	return 0;
}

static inline int ctx_teardown(void **state)
{
	(void)state;
	vfgx_ctx_destroy(ctx);
	return 0;
}

/* A config that must load (the test fails with its message if not). */
static inline struct vfgx_config *cfg_of(const char *y)
{
	struct vfgx_config *cfg;

	if (vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg))
		fail_msg("%s", vfgx_last_error(ctx));
	return cfg;
}

/* A config that must not load: the load's result (the message in ctx). */
static inline int load_rc(const char *y)
{
	struct vfgx_config *cfg = NULL;
	int ret = vfgx_config_load_string(ctx, y, strlen(y), "t.yaml", &cfg);

	if (!ret)
		vfgx_config_destroy(cfg);
	return ret;
}

#endif
