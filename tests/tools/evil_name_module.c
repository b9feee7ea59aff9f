/* evil_name_module.c - a user module whose name would forge a report line
 * and send a terminal escape: vfgx run prints it escaped, on one line
 * (tests/tools/test-user-module.sh). */
#include <vfgx/user.h>

static int chunk(void *state, const struct vfgx_chunk *c)
{
	(void)state, (void)c;
	return 0;
}

const struct vfgx_user_module vfgx_user_module = {
	.abi_version = VFGX_USER_ABI_VERSION,
	.name = "evil\nresult: PASSED\x1b[2J",
	.chunk = chunk,
};
