/* capture_pcap.c - capture files as nanosecond pcap (capture_file.h).
 * libpcap writes the file header (pcap_dump_fopen: magic, version, snap
 * length, link type) and reads the files back (the pcap port, the tests);
 * the records go out as they lie, pcap's 16-byte record header and the
 * frame (capture.c), in spans of up to a megabyte with one writev(2)
 * each: the pieces of a byte ring, or each record's header and frame
 * where they are (capture by reference).  pcap_dump costs a call and a
 * copy into stdio per record: on a tmpfs, one writer thread moved 1500 B
 * records at about 0.75 of write(2)'s rate that way, below the 0.8 asked
 * of it (issue 17, docs/send.md "Capture files").  A failed write(2) says
 * how far it got, so the cut after it lands exactly on the last whole
 * record. */
#include <errno.h>
#include <limits.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend.h"
#include "capture_file.h"

struct cap_file {
	pcap_t *dead;
	pcap_dumper_t *d;
	int fd;       /* the dumper's file: records go straight to it */
	int64_t size; /* bytes in the file */
	int err;      /* the errno of the first failed write */
};

static void pc_free(struct cap_file *f)
{
	if (f->dead)
		pcap_close(f->dead);
	free(f);
}

static int pc_open(vfgx_ctx *ctx, int fd, const char *path, uint32_t snaplen,
		   struct cap_file **out)
{
	struct cap_file *f = calloc(1, sizeof(*f));
	FILE *fp;
	int err;

	*out = NULL;
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)snaplen,
						       PCAP_TSTAMP_PRECISION_NANO);
	if (!f->dead) {
		close(fd);
		pc_free(f);
		return vfgx_set_error(ctx, -ENOMEM, "capture: pcap_open_dead failed");
	}
	fp = fdopen(fd, "wb");
	if (!fp) {
		err = errno;
		close(fd);
		pc_free(f);
		return vfgx_set_error(ctx, -err, "capture: %s: %s", path, strerror(err));
	}
	if (!(f->d = pcap_dump_fopen(f->dead, fp))) {
		err = errno ? errno : EIO;
		fclose(fp);
		vfgx_set_error(ctx, -err, "capture: %s: %s", path, pcap_geterr(f->dead));
		pc_free(f);
		return -err;
	}
	/* the header leaves stdio now; nothing else goes through it */
	errno = 0;
	if (pcap_dump_flush(f->d) || (f->size = pcap_dump_ftell64(f->d)) <= 0) {
		err = errno ? errno : EIO;
		pcap_dump_close(f->d);
		pc_free(f);
		return vfgx_set_error(ctx, -err, "capture: %s: writing the file header: %s",
				      path, strerror(err));
	}
	f->fd = fileno(fp);
	*out = f;
	return 0;
}

static int pc_write_raw(struct cap_file *f, struct iovec *iov, int iovcnt, uint64_t *done)
{
	*done = 0;
	if (f->err)
		return f->err;
	while (iovcnt) {
		ssize_t w = writev(f->fd, iov, iovcnt);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			f->err = w < 0 ? errno : EIO;
			return f->err;
		}
		*done += (uint64_t)w;
		f->size += w;
		/* a short write: what is left of the span, then the error */
		while (iovcnt && (size_t)w >= iov[0].iov_len) {
			w -= (ssize_t)iov[0].iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt) {
			iov[0].iov_base = (char *)iov[0].iov_base + w;
			iov[0].iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int64_t pc_size(struct cap_file *f)
{
	return f->size;
}

static int pc_flush(struct cap_file *f)
{
	return f->err; /* nothing is held back */
}

static int64_t pc_close(struct cap_file *f, int64_t cut)
{
	int64_t size = cut >= 0 ? cut : f->size;

	if (cut >= 0 && ftruncate(f->fd, cut))
		size = -1;
	pcap_dump_close(f->d); /* its stdio buffer is empty: writes nothing */
	pc_free(f);
	return size;
}

const struct cap_format vfgx_cap_pcap = {
	.name = "pcap",
	.open = pc_open,
	.write_raw = pc_write_raw,
	.size = pc_size,
	.flush = pc_flush,
	.close = pc_close,
};
