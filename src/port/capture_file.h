/* capture_file.h - one file of a capture as its writer thread sees it
 * (capture.c): the file format behind five calls, libpcap's nanosecond
 * pcap (capture_pcap.c) or libwiretap's pcapng (capture_pcapng.c).  Only
 * the writer thread calls them once the first file is open. */
#ifndef VFGX_CAPTURE_FILE_H
#define VFGX_CAPTURE_FILE_H

#include <stdint.h>

#include <vfgx/core.h>

struct cap_file;

struct cap_format {
	const char *name;
	/* Create path with its header written and flushed: 0, or -errno
	 * after a one-line error on ctx naming path; nothing is left on
	 * disk then. */
	int (*open)(vfgx_ctx *ctx, const char *path, uint32_t snaplen, struct cap_file **out);
	/* One Ethernet record, wall-clock ts_ns.  Non-zero when the write
	 * failed: the next flush returns why. */
	int (*write)(struct cap_file *f, int64_t ts_ns, uint32_t caplen, uint32_t len,
		     const void *data);
	/* Bytes of the file so far, what is still buffered included. */
	int64_t (*size)(struct cap_file *f);
	/* Hand what is buffered to the kernel: 0, or the positive errno of
	 * a write error (EIO when the library says no more). */
	int (*flush)(struct cap_file *f);
	/* Close and free f.  cut >= 0 (after a write error): the file ends
	 * at byte cut, the end of its last flushed record, whatever was
	 * buffered after it; -1: as written.  The file's size, or -1. */
	int64_t (*close)(struct cap_file *f, int64_t cut);
};

extern const struct cap_format vfgx_cap_pcap;
extern const struct cap_format vfgx_cap_pcapng; /* only where VFGX_HAVE_PCAPNG */

#endif
