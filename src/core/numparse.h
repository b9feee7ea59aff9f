/* numparse.h - the one strict parser for numbers in config values and
 * command-line flags: decimal digits only (0x only where a caller allows
 * it), no sign on whole numbers, no leading zeros, no blanks, the whole
 * string consumed, range-checked before any conversion.  nan, inf and
 * values that wrap are refused.  Errors are one line and echo the input
 * escaped (escape.h).
 */
#ifndef VFGX_NUMPARSE_H
#define VFGX_NUMPARSE_H

#include <stddef.h>
#include <stdint.h>

/* flags for vfgx_num_u64 */
#define VFGX_NUM_HEX 1u /* also accept 0x followed by hex digits */

/* Room for any message the parsers write. */
#define VFGX_NUM_ERR_MAX 256

/* Parses s into *out (untouched on error).  0, or -EINVAL with a message
 * such as "'4294967297' is out of range (must be 0..4294967295)" in err.
 */
int vfgx_num_u64(const char *s, uint64_t min, uint64_t max, unsigned flags,
		 uint64_t *out, char *err, size_t errlen);

/* A decimal real: optional '-', digits with at most one '.', an optional
 * exponent; finite and within min..max.
 */
int vfgx_num_double(const char *s, double min, double max, double *out,
		    char *err, size_t errlen);

/* Command-line flags: on error print "vfgx CMD: FLAG: message" on stderr
 * and return -EINVAL; the caller exits 2.
 */
int vfgx_flag_u64(const char *cmd, const char *flag, const char *s,
		  uint64_t min, uint64_t max, uint64_t *out);
int vfgx_flag_u32(const char *cmd, const char *flag, const char *s,
		  uint32_t min, uint32_t max, uint32_t *out);
int vfgx_flag_int(const char *cmd, const char *flag, const char *s, int min,
		  int max, int *out); /* 0 <= min <= max */
int vfgx_flag_double(const char *cmd, const char *flag, const char *s,
		     double min, double max, double *out);

#endif
