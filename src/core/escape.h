/* escape.h - vfgx_escape (public, vfgx/core.h): text that echoes input
 * made safe to print on one line. */
#ifndef VFGX_ESCAPE_H
#define VFGX_ESCAPE_H

#include <vfgx/core.h>

#endif
