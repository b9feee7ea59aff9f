/* numparse.h - the strict number parser of config values and flags:
 * vfgx_num_u64 and vfgx_num_double are public (vfgx/core.h, where the
 * rules are written); the command-line flag wrappers are the CLI's
 * (src/cli/cliopt.h). */
#ifndef VFGX_NUMPARSE_H
#define VFGX_NUMPARSE_H

#include <vfgx/core.h>

#endif
