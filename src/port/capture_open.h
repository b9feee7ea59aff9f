/* capture_open.h - what `vfgx run` asks of a capture beyond the public
 * vfgx_capture_open (capture.c): whether an existing file may be replaced,
 * and the ports whose input files it must never write (the pcap port's
 * file, pcap.c). */
#ifndef VFGX_CAPTURE_OPEN_H
#define VFGX_CAPTURE_OPEN_H

#include <stdbool.h>
#include <sys/stat.h>

#include <vfgx/capture.h>

struct vfgx_capture_guard {
	bool replace;               /* an existing regular file is truncated;
				     * false: refused (the CLI's default,
				     * --force sets it) */
	vfgx_port *const *inputs;   /* ports whose input files are refused */
	uint16_t nb_inputs;
};

/* vfgx_capture_open with guard (NULL: replace, no inputs, the public
 * call's behaviour).  Either way a capture file is created O_EXCL and
 * O_NOFOLLOW; a symbolic link, a device, FIFO, socket or directory at its
 * path is refused with one line, and a file the capture did not create is
 * never unlinked. */
int vfgx_capture_open_guarded(vfgx_ctx *ctx, const struct vfgx_capture_conf *conf,
			      const struct vfgx_capture_guard *guard, vfgx_capture **out);

/* The input file a port reads (the pcap port's: its device and inode, as
 * opened): 0, or -ENOENT for a port that reads none (pcap.c). */
int vfgx_port_input_file(vfgx_port *port, struct stat *st, const char **path);

#endif
