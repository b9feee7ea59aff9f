/* capture_pcap.c - capture files as nanosecond pcap, written with libpcap
 * (capture_file.h).  The file is our FILE with a large buffer, so records
 * reach the kernel in CAP_IOBUF pieces, not stdio's default few kilobytes;
 * a write error is seen on the record that met it (stdio's error flag, with
 * the errno of that moment), and the cut drops what stdio still holds
 * before truncating. */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "capture_file.h"

#define CAP_IOBUF (4u << 20) /* stdio buffer of the file */

struct cap_file {
	pcap_t *dead;
	pcap_dumper_t *d;
	FILE *fp;
	char *iobuf;
	int err; /* the errno of the first failed write */
};

static void pc_free(struct cap_file *f)
{
	if (f->dead)
		pcap_close(f->dead);
	free(f->iobuf);
	free(f);
}

static int pc_open(vfgx_ctx *ctx, const char *path, uint32_t snaplen, struct cap_file **out)
{
	struct cap_file *f = calloc(1, sizeof(*f));
	FILE *fp;
	int err;

	*out = NULL;
	if (!f || !(f->iobuf = malloc(CAP_IOBUF))) {
		free(f);
		return -ENOMEM;
	}
	f->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)snaplen,
						       PCAP_TSTAMP_PRECISION_NANO);
	if (!f->dead) {
		pc_free(f);
		return vfgx_set_error(ctx, -ENOMEM, "capture: pcap_open_dead failed");
	}
	fp = fopen(path, "wb");
	if (!fp) {
		err = errno;
		pc_free(f);
		return vfgx_set_error(ctx, -err, "capture: %s: %s", path, strerror(err));
	}
	if (setvbuf(fp, f->iobuf, _IOFBF, CAP_IOBUF) || !(f->d = pcap_dump_fopen(f->dead, fp))) {
		err = errno ? errno : EIO;
		fclose(fp);
		unlink(path);
		vfgx_set_error(ctx, -err, "capture: %s: %s", path, pcap_geterr(f->dead));
		pc_free(f);
		return -err;
	}
	f->fp = fp;
	if (pcap_dump_flush(f->d)) {
		err = errno ? errno : EIO;
		pcap_dump_close(f->d);
		unlink(path);
		pc_free(f);
		return vfgx_set_error(ctx, -err, "capture: %s: writing the file header: %s",
				      path, strerror(err));
	}
	*out = f;
	return 0;
}

static int pc_write(struct cap_file *f, int64_t ts_ns, uint32_t caplen, uint32_t len,
		    const void *data)
{
	struct pcap_pkthdr h;

	h.ts.tv_sec = (time_t)(ts_ns / 1000000000);
	h.ts.tv_usec = (suseconds_t)(ts_ns % 1000000000); /* nanoseconds: the file says so */
	h.caplen = caplen;
	h.len = len;
	errno = 0;
	pcap_dump((u_char *)f->d, &h, data);
	if (!ferror_unlocked(f->fp)) /* only this thread uses the FILE */
		return 0;
	if (!f->err)
		f->err = errno ? errno : EIO;
	return -1;
}

static int64_t pc_size(struct cap_file *f)
{
	return pcap_dump_ftell64(f->d);
}

static int pc_flush(struct cap_file *f)
{
	if (f->err)
		return f->err;
	errno = 0;
	if (pcap_dump_flush(f->d) == 0 && !ferror(f->fp))
		return 0;
	f->err = errno ? errno : EIO;
	return f->err;
}

static int64_t pc_close(struct cap_file *f, int64_t cut)
{
	FILE *fp = f->fp;
	int64_t size = cut;

	if (cut >= 0) {
		__fpurge(fp); /* what stdio still holds must not follow the cut */
		if (ftruncate(fileno(fp), cut))
			size = -1;
	} else {
		size = pcap_dump_ftell64(f->d);
	}
	pcap_dump_close(f->d);
	pc_free(f);
	return size;
}

const struct cap_format vfgx_cap_pcap = {
	.name = "pcap",
	.open = pc_open,
	.write = pc_write,
	.size = pc_size,
	.flush = pc_flush,
	.close = pc_close,
};
