/* odd_symbol_module.c - a library whose vfgx_user_module is not the struct
 * vfgx run reads: a function (AS_FUNCTION) or an object smaller than the
 * struct.  vfgx run must refuse either with one line instead of reading
 * past it, misaligned (tests/tools/test-user-module.sh). */
#include <stdint.h>

#ifdef AS_FUNCTION
void vfgx_user_module(void);
void vfgx_user_module(void)
{
}
#else
extern const uint32_t vfgx_user_module;
const uint32_t vfgx_user_module = 1; /* the ABI version alone */
#endif
