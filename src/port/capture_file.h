/* capture_file.h - one file of a capture as its writer thread sees it
 * (capture.c): the file format behind a few calls, nanosecond pcap
 * (capture_pcap.c: libpcap's header, records as the ring holds them) or
 * libwiretap's pcapng (capture_pcapng.c).  Only the writer thread calls
 * them once the first file is open. */
#ifndef VFGX_CAPTURE_FILE_H
#define VFGX_CAPTURE_FILE_H

#include <stdint.h>
#include <sys/uio.h>

#include <vfgx/core.h>

struct cap_file;

struct cap_format {
	const char *name;
	/* Write the header to fd, an empty regular file opened for writing
	 * (capture.c made it, the format owns it from here: closed on
	 * failure too), and flush it: 0, or -errno after a one-line error on
	 * ctx naming path.  The path is only named, never opened or removed
	 * here. */
	int (*open)(vfgx_ctx *ctx, int fd, const char *path, uint32_t snaplen,
		    struct cap_file **out);
	/* One Ethernet record, wall-clock ts_ns (formats without
	 * write_raw).  Non-zero when the write failed: the next flush
	 * returns why. */
	int (*write)(struct cap_file *f, int64_t ts_ns, uint32_t caplen, uint32_t len,
		     const void *data);
	/* Formats whose records are the ring's (pcap): whole records, each
	 * pcap's 16-byte header and the frame, in iovcnt (up to IOV_MAX)
	 * pieces written as they are; iov is changed.  0, or the positive
	 * errno that stopped it; *done: the bytes that reached the file
	 * either way. */
	int (*write_raw)(struct cap_file *f, struct iovec *iov, int iovcnt, uint64_t *done);
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
