/* capture_pcapng.c - capture files as pcapng, written with libwiretap,
 * Wireshark's capture file library (capture_file.h): a section header,
 * one Ethernet interface with nanosecond resolution and the snap length,
 * then one enhanced packet block per record.
 *
 * libwiretap keeps its FILE to itself, so the cut after a write error goes
 * through a descriptor of our own on the same file: the dumper is closed
 * first (whatever stdio still held may reach the disk then), and the file
 * is truncated after it to the end of its last flushed record. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <wiretap/wtap.h>
#include <wsutil/wslog.h>

#include "backend.h"
#include "capture_file.h"

struct cap_file {
	wtap_dumper *d;
	int fd;  /* ours: the cut and the final size */
	int err; /* a failed wtap_dump, for the next flush */
	wtap_rec rec;
};

static pthread_once_t wtap_once = PTHREAD_ONCE_INIT;

/* libwiretap's file type tables are process-wide and set up once.  Its
 * log (libwsutil's) prints every debug line of every record until a
 * program sets a level: warnings and worse only. */
static void wtap_setup(void)
{
	ws_log_set_level(LOG_LEVEL_WARNING);
	wtap_init(FALSE);
}

/* libwiretap's error as an errno: its own codes are negative. */
static int wtap_errno(int err)
{
	return err > 0 ? err : EIO;
}

static const char *wtap_what(int err, const char *info)
{
	return info && info[0] ? info : wtap_strerror(err);
}

static int ng_fail_open(vfgx_ctx *ctx, struct cap_file *f, const char *path, int err,
			gchar *info, const char *doing)
{
	vfgx_set_error(ctx, -wtap_errno(err), "capture: %s: %s%s", path, doing,
		       wtap_what(err, info));
	g_free(info);
	close(f->fd);
	free(f);
	return -wtap_errno(err);
}

static int ng_open(vfgx_ctx *ctx, int fd, const char *path, uint32_t snaplen,
		   struct cap_file **out)
{
	wtap_dump_params params = WTAP_DUMP_PARAMS_INIT;
	struct cap_file *f;
	gchar *info = NULL;
	int err = 0, wfd;

	*out = NULL;
	pthread_once(&wtap_once, wtap_setup);
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	/* libwiretap writes through a descriptor of its own on the file
	 * capture.c opened (never the path again: it could be replaced) */
	f->fd = fd;
	if ((wfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		err = errno;
		close(fd);
		free(f);
		return vfgx_set_error(ctx, -err, "capture: %s: %s", path, strerror(err));
	}
	/* no interface list: libwiretap makes the one interface block from
	 * these (Ethernet, nanosecond resolution, snap length) */
	params.encap = WTAP_ENCAP_ETHERNET;
	params.snaplen = (int)snaplen;
	params.tsprec = WTAP_TSPREC_NSEC;
	f->d = wtap_dump_fdopen(wfd, wtap_pcapng_file_type_subtype(), WTAP_UNCOMPRESSED,
				&params, &err, &info);
	if (!f->d) /* wfd: closed by libwiretap where it got that far */
		return ng_fail_open(ctx, f, path, err, info, "");
	if (!wtap_dump_flush(f->d, &err)) {
		/* libwiretap writes through err_info on a failed close: never
		 * NULL (a full disk crashed here) */
		int cerr = 0;

		wtap_dump_close(f->d, NULL, &cerr, &info);
		g_free(info);
		return ng_fail_open(ctx, f, path, err, NULL, "writing the file header: ");
	}
	wtap_rec_init(&f->rec);
	f->rec.rec_type = REC_TYPE_PACKET;
	f->rec.presence_flags = WTAP_HAS_TS | WTAP_HAS_CAP_LEN | WTAP_HAS_INTERFACE_ID;
	f->rec.tsprec = WTAP_TSPREC_NSEC;
	f->rec.rec_header.packet_header.pkt_encap = WTAP_ENCAP_ETHERNET;
	f->rec.rec_header.packet_header.interface_id = 0;
	*out = f;
	return 0;
}

static int ng_write(struct cap_file *f, int64_t ts_ns, uint32_t caplen, uint32_t len,
		    const void *data)
{
	gchar *info = NULL;

	if (f->err)
		return -1;
	f->rec.ts.secs = (time_t)(ts_ns / 1000000000);
	f->rec.ts.nsecs = (int)(ts_ns % 1000000000);
	f->rec.rec_header.packet_header.caplen = caplen;
	f->rec.rec_header.packet_header.len = len;
	if (wtap_dump(f->d, &f->rec, data, &f->err, &info)) {
		f->err = 0;
		return 0;
	}
	g_free(info);
	if (!f->err)
		f->err = WTAP_ERR_CANT_WRITE;
	return -1;
}

static int64_t ng_size(struct cap_file *f)
{
	return wtap_get_bytes_dumped(f->d);
}

static int ng_flush(struct cap_file *f)
{
	int err = 0;

	if (f->err)
		return wtap_errno(f->err);
	if (wtap_dump_flush(f->d, &err))
		return 0;
	f->err = err ? err : WTAP_ERR_CANT_WRITE;
	return wtap_errno(f->err);
}

static int64_t ng_close(struct cap_file *f, int64_t cut)
{
	struct stat st;
	gchar *info = NULL;
	int err = 0;
	int64_t size = -1;

	/* after a write error the close fails too (what it still held did
	 * not go out, or only partly): the cut below makes the file whole */
	if (!wtap_dump_close(f->d, NULL, &err, &info) && cut < 0)
		cut = -2;
	g_free(info);
	if (cut >= 0 && ftruncate(f->fd, cut) == 0)
		size = cut;
	else if (cut == -1 && fstat(f->fd, &st) == 0)
		size = st.st_size;
	close(f->fd);
	wtap_rec_cleanup(&f->rec);
	free(f);
	return size;
}

const struct cap_format vfgx_cap_pcapng = {
	.name = "pcapng",
	.open = ng_open,
	.write = ng_write,
	.size = ng_size,
	.flush = ng_flush,
	.close = ng_close,
};
