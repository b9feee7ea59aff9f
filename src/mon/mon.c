/* mon.c - a client of /dev/gpurdma_mon: open with an ABI check, the
 * ioctls, event reads with poll(), and names for event fields. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <vfgx/mon.h>

struct vfgx_mon {
	vfgx_ctx *ctx;
	int fd;
	char path[256];
};

int vfgx_mon_open(vfgx_ctx *ctx, const char *path, vfgx_mon **out)
{
	struct vfgx_mon *m;
	uint32_t ver = 0;
	int err;

	*out = NULL;
	if (!path)
		path = getenv("VFGX_MON_DEV");
	if (!path || !*path)
		path = VFGX_MON_DEFAULT_PATH;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ctx = ctx;
	snprintf(m->path, sizeof(m->path), "%s", path);
	/* read-only: the ioctls check capabilities, not the open mode */
	m->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (m->fd < 0) {
		err = -errno;
		free(m);
		if (err == -ENOENT)
			return vfgx_set_error(ctx, err,
					      "%s: no such device; load the gpurdma_mon driver (`make -C drivers/gpurdma_mon install && modprobe gpurdma_mon`, needs the running kernel's headers)",
					      path);
		return vfgx_set_error(ctx, err, "%s: cannot open: %s", path,
				      strerror(-err));
	}
	if (ioctl(m->fd, GPURDMA_MON_IOC_GET_VERSION, &ver) < 0 ||
	    ver != GPURDMA_MON_ABI_VERSION) {
		err = errno;
		close(m->fd);
		free(m);
		if (ver)
			return vfgx_set_error(ctx, -EPROTO,
					      "%s: driver ABI version %u, this library speaks %u; rebuild one to match the other",
					      path, ver, GPURDMA_MON_ABI_VERSION);
		return vfgx_set_error(ctx, -err,
				      "%s: GET_VERSION failed: %s (is it the gpurdma_mon device?)",
				      path, strerror(err));
	}
	*out = m;
	return 0;
}

void vfgx_mon_close(vfgx_mon *m)
{
	if (!m)
		return;
	close(m->fd);
	free(m);
}

int vfgx_mon_fd(const vfgx_mon *m)
{
	return m->fd;
}

static int mon_ioctl(vfgx_mon *m, unsigned long cmd, void *arg,
		     const char *what)
{
	if (ioctl(m->fd, cmd, arg) < 0) {
		int err = errno;

		return vfgx_set_error(m->ctx, -err, "%s: %s: %s", m->path,
				      what, strerror(err));
	}
	return 0;
}

int vfgx_mon_telemetry(vfgx_mon *m, struct gpurdma_mon_telemetry *t)
{
	memset(t, 0, sizeof(*t));
	t->argsz = sizeof(*t);
	return mon_ioctl(m, GPURDMA_MON_IOC_GET_TELEMETRY, t, "GET_TELEMETRY");
}

int vfgx_mon_set_threshold(vfgx_mon *m, uint32_t pressure_pct,
			   uint64_t bw_mbps)
{
	struct gpurdma_mon_threshold thr = {
		.argsz = sizeof(thr),
		.pressure_pct = pressure_pct,
		.bw_mbps = bw_mbps,
	};

	if (pressure_pct < 1 || pressure_pct > 100)
		return vfgx_set_error(m->ctx, -EINVAL,
				      "pressure threshold %u%%: must be 1..100",
				      pressure_pct);
	return mon_ioctl(m, GPURDMA_MON_IOC_SET_THRESHOLD, &thr,
			 "SET_THRESHOLD");
}

int vfgx_mon_get_threshold(vfgx_mon *m, struct gpurdma_mon_threshold *thr)
{
	memset(thr, 0, sizeof(*thr));
	thr->argsz = sizeof(*thr);
	return mon_ioctl(m, GPURDMA_MON_IOC_GET_THRESHOLD, thr,
			 "GET_THRESHOLD");
}

int vfgx_mon_publish(vfgx_mon *m, struct gpurdma_mon_publish *p)
{
	p->argsz = sizeof(*p);
	return mon_ioctl(m, GPURDMA_MON_IOC_PUBLISH, p, "PUBLISH");
}

int vfgx_mon_counters(vfgx_mon *m, struct gpurdma_mon_publish *p)
{
	memset(p, 0, sizeof(*p));
	p->argsz = sizeof(*p);
	return mon_ioctl(m, GPURDMA_MON_IOC_GET_COUNTERS, p, "GET_COUNTERS");
}

int vfgx_mon_read(vfgx_mon *m, struct gpurdma_mon_event *ev, int max,
		  int timeout_ms)
{
	struct pollfd pfd = { .fd = m->fd, .events = POLLIN };
	ssize_t n;
	int ret;

	if (max <= 0)
		return -EINVAL;
	n = read(m->fd, ev, (size_t)max * sizeof(*ev));
	if (n < 0 && errno == EAGAIN && timeout_ms != 0) {
		ret = poll(&pfd, 1, timeout_ms);
		if (ret < 0)
			return -errno;
		if (ret == 0)
			return 0;
		n = read(m->fd, ev, (size_t)max * sizeof(*ev));
	}
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n % sizeof(*ev))
		return vfgx_set_error(m->ctx, -EIO,
				      "%s: read returned %zd bytes, not whole events of %zu",
				      m->path, n, sizeof(*ev));
	return (int)(n / (ssize_t)sizeof(*ev));
}

const char *vfgx_mon_event_name(uint32_t type)
{
	static const char *const names[] = {
		[GPURDMA_MON_EV_LINK_DEGRADED] = "LINK_DEGRADED",
		[GPURDMA_MON_EV_NUMA_WARN] = "NUMA_WARN",
		[GPURDMA_MON_EV_PRESSURE] = "PRESSURE",
		[GPURDMA_MON_EV_BW_HIGH] = "BW_HIGH",
		[GPURDMA_MON_EV_TEST] = "TEST",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "UNKNOWN";
}

const char *vfgx_mon_severity_name(uint32_t severity)
{
	switch (severity) {
	case GPURDMA_MON_SEV_INFO:
		return "info";
	case GPURDMA_MON_SEV_WARN:
		return "warn";
	case GPURDMA_MON_SEV_CRIT:
		return "crit";
	default:
		return "unknown";
	}
}

const char *vfgx_mon_source_name(uint32_t source)
{
	switch (source) {
	case GPURDMA_MON_SRC_GPU:
		return "gpu";
	case GPURDMA_MON_SRC_NIC:
		return "nic";
	case GPURDMA_MON_SRC_LIB:
		return "lib";
	default:
		return "-";
	}
}

void vfgx_mon_format_event(const struct gpurdma_mon_event *ev, char *buf,
			   size_t len)
{
	char detail[GPURDMA_MON_DETAIL_LEN + 1];

	/* the driver terminates it; do not trust that blindly */
	memcpy(detail, ev->detail, GPURDMA_MON_DETAIL_LEN);
	detail[GPURDMA_MON_DETAIL_LEN] = '\0';
	snprintf(buf, len,
		 "#%" PRIu64 " %" PRIu64 ".%09" PRIu64 " %-13s %-4s %-3s value=%" PRIu64
		 " threshold=%" PRIu64 "%s%s%s",
		 (uint64_t)ev->seq, (uint64_t)ev->timestamp_ns / 1000000000u,
		 (uint64_t)ev->timestamp_ns % 1000000000u,
		 vfgx_mon_event_name(ev->type),
		 vfgx_mon_severity_name(ev->severity),
		 vfgx_mon_source_name(ev->source), (uint64_t)ev->value,
		 (uint64_t)ev->threshold,
		 detail[0] ? "  \"" : "", detail, detail[0] ? "\"" : "");
	if (ev->lost) {
		size_t used = strlen(buf);

		if (used < len)
			snprintf(buf + used, len - used, "  (%u lost before)",
				 ev->lost);
	}
}
