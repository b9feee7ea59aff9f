/* escape.h - making text that echoes input safe to print on one line. */
#ifndef VFGX_ESCAPE_H
#define VFGX_ESCAPE_H

#include <stddef.h>

/* Copies src into dst (len bytes, always NUL-terminated when len > 0),
 * writing newline, tab and carriage return as \n \t \r and every other
 * control character (C0, DEL, C1) and every byte that is not part of valid
 * UTF-8 as \xNN, so that a message echoing a config value or a name from
 * the wire stays one line and cannot move a terminal's cursor or recolour
 * it.  Truncates at a whole character or escape.  Returns strlen(dst).
 * vfgx_set_error() and vfgx_log() pass every message through it.
 */
size_t vfgx_escape(char *dst, size_t len, const char *src);

#endif
