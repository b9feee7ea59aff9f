/* bad_abi_module.c - a user module built for another ABI version: vfgx run
 * must refuse it with one line (tests/tools/test-user-module.sh). */
#include <vfgx/user.h>

const struct vfgx_user_module vfgx_user_module = {
	.abi_version = VFGX_USER_ABI_VERSION + 98,
	.name = "bad_abi",
};
