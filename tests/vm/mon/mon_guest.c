/* mon_guest.c - checks of /dev/gpurdma_mon run inside the QEMU guest by
 * guest.sh, one subcommand per aspect: telemetry against the PCI devices'
 * own sysfs, many clients receiving injected events in order, poll and
 * blocking-read wake-ups, queue overflow, ioctl argument checks, PUBLISH
 * thresholds, the periodic link check, what an unprivileged user may do and
 * the bound on open clients.  Exit 0 pass, 1 fail. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpurdma_mon.h>

#define DEV "/dev/" GPURDMA_MON_DEVNAME
#define INJECT "/sys/kernel/debug/gpurdma_mon/inject"
#define EVSZ sizeof(struct gpurdma_mon_event)

static int failures;

#define CHECK(cond, ...)                                               \
	do {                                                           \
		if (!(cond)) {                                         \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, \
			       #cond);                                 \
			printf(__VA_ARGS__);                           \
			printf("\n");                                  \
			failures++;                                    \
		}                                                      \
	} while (0)

static int dev_open(int flags)
{
	int fd = open(DEV, O_RDWR | flags);

	if (fd < 0) {
		printf("FAIL: open %s: %s\n", DEV, strerror(errno));
		exit(1);
	}
	return fd;
}

static void inject(const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(INJECT, O_WRONLY);
	if (fd < 0 || write(fd, buf, (size_t)n) != n) {
		printf("FAIL: inject '%s': %s\n", buf, strerror(errno));
		exit(1);
	}
	close(fd);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Read every queued event without blocking. */
static int drain(int fd, struct gpurdma_mon_event *ev, int max)
{
	int fl = fcntl(fd, F_GETFL), got = 0;
	ssize_t n;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (got < max &&
	       (n = read(fd, ev + got, (size_t)(max - got) * EVSZ)) > 0) {
		CHECK(n % EVSZ == 0, "read %zd bytes", n);
		got += (int)(n / EVSZ);
	}
	fcntl(fd, F_SETFL, fl);
	return got;
}

static struct gpurdma_mon_telemetry telemetry(int fd)
{
	struct gpurdma_mon_telemetry t = { .argsz = sizeof(t) };

	if (ioctl(fd, GPURDMA_MON_IOC_GET_TELEMETRY, &t)) {
		printf("FAIL: GET_TELEMETRY: %s\n", strerror(errno));
		exit(1);
	}
	return t;
}

/* --- telemetry ------------------------------------------------------- */

static int sysfs_read(const char *bdf, const char *attr, char *buf,
		      size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static void check_link(const char *what, const char *bdf,
		       const struct gpurdma_mon_link *l)
{
	char buf[64], addr[32];
	double gts;

	CHECK(l->present, "%s %s present", what, bdf);
	snprintf(addr, sizeof(addr), "%04x:%02x:%02x.%u", l->domain, l->bus,
		 (l->devfn >> 3) & 0x1f, l->devfn & 7);
	CHECK(!strcmp(addr, bdf), "%s address %s, want %s", what, addr, bdf);
	/* the kernel's own reading of the same registers */
	sysfs_read(bdf, "current_link_speed", buf, sizeof(buf));
	gts = atof(buf);
	CHECK(l->cur_speed == (uint32_t)(gts * 1000 + 0.5),
	      "%s cur_speed %u, sysfs '%s'", what, l->cur_speed, buf);
	sysfs_read(bdf, "max_link_speed", buf, sizeof(buf));
	gts = atof(buf);
	CHECK(l->max_speed == (uint32_t)(gts * 1000 + 0.5),
	      "%s max_speed %u, sysfs '%s'", what, l->max_speed, buf);
	sysfs_read(bdf, "current_link_width", buf, sizeof(buf));
	CHECK(l->cur_width == (uint32_t)atoi(buf), "%s cur_width %u, sysfs %s",
	      what, l->cur_width, buf);
	sysfs_read(bdf, "max_link_width", buf, sizeof(buf));
	CHECK(l->max_width == (uint32_t)atoi(buf), "%s max_width %u, sysfs %s",
	      what, l->max_width, buf);
	sysfs_read(bdf, "numa_node", buf, sizeof(buf));
	CHECK(l->numa_node == atoi(buf), "%s numa %d, sysfs %s", what,
	      l->numa_node, buf);
	CHECK(l->degraded == (l->cur_speed < l->max_speed ||
			      l->cur_width < l->max_width),
	      "%s degraded %u", what, l->degraded);
	CHECK(l->cur_speed == 0 || l->bw_mbps > 0, "%s bw %llu", what,
	      (unsigned long long)l->bw_mbps);
	printf("%s %s: x%u@%u of x%u@%u node %d degraded %u bw %llu Mb/s\n",
	       what, bdf, l->cur_width, l->cur_speed, l->max_width,
	       l->max_speed, l->numa_node, l->degraded,
	       (unsigned long long)l->bw_mbps);
}

static int cmd_telemetry(int argc, char **argv)
{
	const char *gpu = NULL, *nic = NULL;
	int want_numa = -1, want_switch = -1;
	struct gpurdma_mon_event ev[16];
	struct gpurdma_mon_telemetry t;
	int fd, n, degraded_ev = 0, numa_ev = 0;

	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--gpu"))
			gpu = argv[i + 1];
		else if (!strcmp(argv[i], "--nic"))
			nic = argv[i + 1];
		else if (!strcmp(argv[i], "--numa"))
			want_numa = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--switch"))
			want_switch = atoi(argv[i + 1]);
	}
	fd = dev_open(0);
	t = telemetry(fd);
	CHECK(t.argsz == sizeof(t) && t.version == GPURDMA_MON_ABI_VERSION,
	      "argsz %u version %u", t.argsz, t.version);
	if (gpu)
		check_link("gpu", gpu, &t.gpu);
	else
		CHECK(!t.gpu.present, "gpu present without one");
	if (nic)
		check_link("nic", nic, &t.nic);
	else
		CHECK(!t.nic.present, "nic present without one");
	if (want_numa >= 0)
		CHECK((int)t.numa_mismatch == want_numa, "numa_mismatch %u",
		      t.numa_mismatch);
	if (want_switch >= 0)
		CHECK((int)t.same_switch == want_switch, "same_switch %u",
		      t.same_switch);
	if (gpu && nic) {
		uint64_t est = t.gpu.bw_mbps < t.nic.bw_mbps ? t.gpu.bw_mbps :
							       t.nic.bw_mbps;

		CHECK(t.est_bw_mbps == est, "est %llu",
		      (unsigned long long)t.est_bw_mbps);
	} else {
		CHECK(t.est_bw_mbps == 0, "est %llu without both devices",
		      (unsigned long long)t.est_bw_mbps);
	}
	CHECK(t.clients == 1, "clients %u", t.clients);
	/* a new client is told the conditions in force */
	n = drain(fd, ev, 16);
	for (int i = 0; i < n; i++) {
		if (ev[i].type == GPURDMA_MON_EV_LINK_DEGRADED) {
			degraded_ev++;
			CHECK(ev[i].source == (t.gpu.degraded ?
					       GPURDMA_MON_SRC_GPU :
					       GPURDMA_MON_SRC_NIC),
			      "degraded source %u", ev[i].source);
			CHECK(ev[i].value < ev[i].threshold, "value %llu of %llu",
			      (unsigned long long)ev[i].value,
			      (unsigned long long)ev[i].threshold);
		}
		if (ev[i].type == GPURDMA_MON_EV_NUMA_WARN)
			numa_ev++;
		printf("replayed: type %u sev %u src %u \"%s\"\n", ev[i].type,
		       ev[i].severity, ev[i].source, ev[i].detail);
	}
	CHECK(degraded_ev == (int)(t.gpu.degraded + t.nic.degraded),
	      "%d LINK_DEGRADED events", degraded_ev);
	CHECK(numa_ev == (int)t.numa_mismatch, "%d NUMA_WARN events", numa_ev);
	close(fd);
	return failures ? 1 : 0;
}

/* --- many clients ---------------------------------------------------- */

struct client {
	pthread_t thread;
	int fd;
	int want;
	int got;
	int errors;
	pthread_barrier_t *ready;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct gpurdma_mon_event ev[32];
	uint64_t last_seq = 0;

	c->fd = dev_open(O_NONBLOCK);
	drain(c->fd, ev, 32); /* replayed conditions */
	pthread_barrier_wait(c->ready);
	while (c->got < c->want) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 30000) != 1 || !(pfd.revents & POLLIN)) {
			printf("FAIL: client fd %d: poll timed out at %d of %d\n",
			       c->fd, c->got, c->want);
			c->errors++;
			break;
		}
		n = read(c->fd, ev, sizeof(ev));
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0 || n % EVSZ) {
			printf("FAIL: client read %zd: %s\n", n, strerror(errno));
			c->errors++;
			break;
		}
		for (int i = 0; i < (int)(n / EVSZ); i++) {
			char want[16];

			snprintf(want, sizeof(want), "%d", c->got);
			if (ev[i].type != GPURDMA_MON_EV_TEST ||
			    strcmp(ev[i].detail, want) || ev[i].seq <= last_seq ||
			    ev[i].lost || !ev[i].timestamp_ns) {
				printf("FAIL: client got type %u detail '%s' seq %llu lost %u, want test '%s' after seq %llu\n",
				       ev[i].type, ev[i].detail,
				       (unsigned long long)ev[i].seq, ev[i].lost,
				       want, (unsigned long long)last_seq);
				c->errors++;
			}
			last_seq = ev[i].seq;
			c->got++;
		}
	}
	return NULL;
}

static int cmd_clients(int argc, char **argv)
{
	int nthreads = argc > 0 ? atoi(argv[0]) : 8;
	int nevents = argc > 1 ? atoi(argv[1]) : 100;
	struct client *cl = calloc((size_t)nthreads, sizeof(*cl));
	pthread_barrier_t ready;
	struct gpurdma_mon_telemetry t;
	int errors = 0, fd;

	pthread_barrier_init(&ready, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		cl[i].want = nevents;
		cl[i].ready = &ready;
		pthread_create(&cl[i].thread, NULL, client_main, &cl[i]);
	}
	pthread_barrier_wait(&ready);
	fd = dev_open(0);
	t = telemetry(fd);
	CHECK((int)t.clients == nthreads + 1, "clients %u, want %d",
	      t.clients, nthreads + 1);
	close(fd);
	for (int i = 0; i < nevents; i++)
		inject("test info %d", i);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(cl[i].thread, NULL);
		errors += cl[i].errors;
		CHECK(cl[i].got == nevents, "client %d got %d of %d", i,
		      cl[i].got, nevents);
		close(cl[i].fd);
	}
	printf("%d clients each received %d events in order\n", nthreads,
	       nevents);
	pthread_barrier_destroy(&ready);
	free(cl);
	return failures || errors ? 1 : 0;
}

/* --- wake-ups, read semantics, overflow ------------------------------ */

static void *poller(void *arg)
{
	int fd = *(int *)arg;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret = poll(&pfd, 1, 60000);

	*(int *)arg = ret == 1 && (pfd.revents & POLLIN) ? 1 : -1;
	return NULL;
}

static void *blocking_reader(void *arg)
{
	int fd = *(int *)arg;
	struct gpurdma_mon_event ev;
	ssize_t n = read(fd, &ev, sizeof(ev));

	*(int *)arg = n == (ssize_t)EVSZ && !strcmp(ev.detail, "wake-read") ?
			      1 : -1;
	return NULL;
}

static int cmd_read(int argc, char **argv)
{
	unsigned int qlen = argc > 0 ? (unsigned int)atoi(argv[0]) : 256;
	struct gpurdma_mon_event *ev = calloc(qlen + 64, EVSZ);
	int fd = dev_open(O_NONBLOCK), bfd = dev_open(0), arg, n;
	pthread_t th;
	char small[EVSZ - 1];
	ssize_t r;

	drain(fd, ev, (int)qlen);
	drain(bfd, ev, (int)qlen);
	errno = 0;
	r = read(fd, ev, EVSZ);
	CHECK(r == -1 && errno == EAGAIN, "empty O_NONBLOCK read %zd errno %d",
	      r, errno);
	inject("test info small");
	errno = 0;
	r = read(fd, small, sizeof(small));
	CHECK(r == -1 && errno == EINVAL, "read into %zu bytes: %zd errno %d",
	      sizeof(small), r, errno);
	r = read(fd, ev, EVSZ + EVSZ / 2);
	CHECK(r == (ssize_t)EVSZ && !strcmp(ev[0].detail, "small"),
	      "read of 1.5 events gave %zd", r);
	drain(bfd, ev, (int)qlen);

	/* poll() wakes when an event arrives */
	arg = fd;
	pthread_create(&th, NULL, poller, &arg);
	sleep_ms(300);
	inject("test warn wake-poll");
	pthread_join(th, NULL);
	CHECK(arg == 1, "poll did not report POLLIN");
	drain(fd, ev, (int)qlen);
	drain(bfd, ev, (int)qlen);

	/* a blocking read() wakes too */
	arg = bfd;
	pthread_create(&th, NULL, blocking_reader, &arg);
	sleep_ms(300);
	inject("test crit wake-read");
	pthread_join(th, NULL);
	CHECK(arg == 1, "blocking read did not return the event");
	drain(fd, ev, (int)qlen);

	/* several events come back from one read, whole */
	for (int i = 0; i < 5; i++)
		inject("test info batch%d", i);
	r = read(fd, ev, 16 * EVSZ);
	CHECK(r == (ssize_t)(5 * EVSZ), "batch read %zd", r);
	for (int i = 0; i < 5 && r == (ssize_t)(5 * EVSZ); i++) {
		char want[16];

		snprintf(want, sizeof(want), "batch%d", i);
		CHECK(!strcmp(ev[i].detail, want) && ev[i].severity == 0,
		      "batch %d: '%s'", i, ev[i].detail);
	}

	/* overflow: producers never block, the client counts what it lost */
	drain(bfd, ev, (int)qlen);
	for (unsigned int i = 0; i < qlen + 10; i++)
		inject("test info of%u", i);
	n = drain(fd, ev, (int)qlen + 64);
	CHECK(n == (int)qlen, "queued %d, want %u", n, qlen);
	CHECK(n > 0 && !strcmp(ev[0].detail, "of0") && ev[0].lost == 0,
	      "first kept '%s' lost %u", ev[0].detail, ev[0].lost);
	inject("test info after");
	n = drain(fd, ev, 4);
	CHECK(n == 1 && ev[0].lost == 10, "after overflow: %d events, lost %u",
	      n, n ? ev[0].lost : 0);
	printf("read semantics, poll and read wake-ups, overflow (lost %u) ok\n",
	       n ? ev[0].lost : 0);
	close(fd);
	close(bfd);
	free(ev);
	return failures ? 1 : 0;
}

/* --- ioctls ---------------------------------------------------------- */

static int cmd_ioctl(void)
{
	int fd = dev_open(O_NONBLOCK);
	struct gpurdma_mon_telemetry t = { .argsz = sizeof(t) };
	struct gpurdma_mon_threshold thr = { .argsz = sizeof(thr) };
	struct gpurdma_mon_publish p = { .argsz = sizeof(p) };
	uint32_t ver = 0;

	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_VERSION, &ver) == 0 &&
		      ver == GPURDMA_MON_ABI_VERSION, "version %u", ver);
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_VERSION, NULL) == -1 &&
		      errno == EFAULT, "GET_VERSION NULL errno %d", errno);
	errno = 0;
	CHECK(ioctl(fd, _IO(GPURDMA_MON_IOC_MAGIC, 0x7f), 0) == -1 &&
		      errno == ENOTTY, "unknown ioctl errno %d", errno);
	errno = 0;
	CHECK(ioctl(fd, _IOR('T', 0x01, int), &ver) == -1 && errno == ENOTTY,
	      "foreign ioctl errno %d", errno);
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_TELEMETRY, (void *)8) == -1 &&
		      errno == EFAULT, "telemetry bad pointer errno %d", errno);
	t.argsz = sizeof(t) - 8;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_TELEMETRY, &t) == -1 &&
		      errno == EINVAL, "telemetry short argsz errno %d", errno);
	t.argsz = sizeof(t) + 8;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_TELEMETRY, &t) == -1 &&
		      errno == EINVAL, "telemetry long argsz errno %d", errno);
	t.argsz = sizeof(t);
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_TELEMETRY, &t) == 0,
	      "telemetry errno %d", errno);

	thr.pressure_pct = 0;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_SET_THRESHOLD, &thr) == -1 &&
		      errno == EINVAL, "threshold 0%% errno %d", errno);
	thr.pressure_pct = 101;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_SET_THRESHOLD, &thr) == -1 &&
		      errno == EINVAL, "threshold 101%% errno %d", errno);
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_SET_THRESHOLD, (void *)-4096L) == -1 &&
		      errno == EFAULT, "threshold bad pointer errno %d", errno);
	thr.pressure_pct = 77;
	thr.bw_mbps = 1234;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_SET_THRESHOLD, &thr) == 0,
	      "threshold 77%% errno %d", errno);
	memset(&thr, 0, sizeof(thr));
	thr.argsz = sizeof(thr);
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_THRESHOLD, &thr) == 0 &&
		      thr.pressure_pct == 77 && thr.bw_mbps == 1234,
	      "threshold read back %u %llu", thr.pressure_pct,
	      (unsigned long long)thr.bw_mbps);

	p.nr_queues = GPURDMA_MON_MAX_QUEUES + 1;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_PUBLISH, &p) == -1 && errno == EINVAL,
	      "publish 17 queues errno %d", errno);
	p.nr_queues = 1;
	p.pool_used = 11;
	p.pool_total = 10;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_PUBLISH, &p) == -1 && errno == EINVAL,
	      "publish used > total errno %d", errno);
	p.argsz = 8;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_PUBLISH, &p) == -1 && errno == EINVAL,
	      "publish argsz 8 errno %d", errno);
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_PUBLISH, NULL) == -1 && errno == EFAULT,
	      "publish NULL errno %d", errno);
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_COUNTERS, (void *)8) == -1 &&
		      errno == EFAULT, "counters bad pointer errno %d", errno);
	printf("ioctl argument checks done\n");
	close(fd);
	return failures ? 1 : 0;
}

/* --- PUBLISH thresholds -------------------------------------------- */

static int count_type(int fd, uint32_t type, struct gpurdma_mon_event *last)
{
	struct gpurdma_mon_event ev[64];
	int n = drain(fd, ev, 64), c = 0;

	for (int i = 0; i < n; i++) {
		if (ev[i].type == type) {
			c++;
			*last = ev[i];
		}
	}
	return c;
}

static void do_publish(int fd, uint32_t used, uint32_t total,
		       uint64_t rx_bytes)
{
	struct gpurdma_mon_publish p = { .argsz = sizeof(p) };

	p.nr_queues = 2;
	p.pool_used = used;
	p.pool_total = total;
	p.q[0].rx_bytes = rx_bytes / 2;
	p.q[1].rx_bytes = rx_bytes - rx_bytes / 2;
	p.q[0].rx_packets = 7;
	p.q[1].rx_packets = 5;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_PUBLISH, &p) == 0, "publish errno %d",
	      errno);
}

static int cmd_publish(void)
{
	int pub = dev_open(O_NONBLOCK), a = dev_open(O_NONBLOCK),
	    b = dev_open(O_NONBLOCK);
	struct gpurdma_mon_threshold thr = { .argsz = sizeof(thr),
					     .pressure_pct = 50 };
	struct gpurdma_mon_publish got = { .argsz = sizeof(got) };
	struct gpurdma_mon_event ev, scratch[64];
	int fds[] = { pub, a, b };

	for (int i = 0; i < 3; i++)
		drain(fds[i], scratch, 64);
	CHECK(ioctl(pub, GPURDMA_MON_IOC_SET_THRESHOLD, &thr) == 0,
	      "threshold errno %d", errno);
	do_publish(pub, 10, 100, 0);
	for (int i = 0; i < 3; i++)
		CHECK(count_type(fds[i], GPURDMA_MON_EV_PRESSURE, &ev) == 0,
		      "PRESSURE below threshold");
	do_publish(pub, 60, 100, 0);
	for (int i = 0; i < 3; i++) {
		CHECK(count_type(fds[i], GPURDMA_MON_EV_PRESSURE, &ev) == 1,
		      "client %d: no PRESSURE at 60%%", i);
		CHECK(ev.value == 60 && ev.threshold == 50 &&
			      ev.source == GPURDMA_MON_SRC_LIB &&
			      ev.severity == GPURDMA_MON_SEV_WARN,
		      "PRESSURE value %llu threshold %llu",
		      (unsigned long long)ev.value,
		      (unsigned long long)ev.threshold);
	}
	do_publish(pub, 70, 100, 0);
	CHECK(count_type(a, GPURDMA_MON_EV_PRESSURE, &ev) == 0,
	      "PRESSURE again while still over");
	do_publish(pub, 10, 100, 0);
	do_publish(pub, 100, 100, 0);
	CHECK(count_type(b, GPURDMA_MON_EV_PRESSURE, &ev) == 1 &&
		      ev.severity == GPURDMA_MON_SEV_CRIT && ev.value == 100,
	      "no CRIT PRESSURE at 100%%");
	drain(a, scratch, 64);
	drain(pub, scratch, 64);

	/* rx bandwidth: 1 GB more within well under a second is > 1000 Mb/s
	 * however slow the guest is (it would take 8 s to fall below) */
	thr.bw_mbps = 1000;
	CHECK(ioctl(pub, GPURDMA_MON_IOC_SET_THRESHOLD, &thr) == 0,
	      "threshold errno %d", errno);
	do_publish(pub, 0, 100, 1000);
	do_publish(pub, 0, 100, 1000ull * 1000 * 1000);
	for (int i = 0; i < 3; i++) {
		CHECK(count_type(fds[i], GPURDMA_MON_EV_BW_HIGH, &ev) == 1,
		      "client %d: no BW_HIGH", i);
		CHECK(ev.value > 1000 && ev.threshold == 1000,
		      "BW_HIGH value %llu", (unsigned long long)ev.value);
	}
	CHECK(ioctl(a, GPURDMA_MON_IOC_GET_COUNTERS, &got) == 0 &&
		      got.pid == (uint32_t)getpid() && got.nr_queues == 2 &&
		      got.q[0].rx_packets == 7 && got.q[1].rx_packets == 5 &&
		      got.timestamp_ns,
	      "counters pid %u queues %u", got.pid, got.nr_queues);
	printf("PUBLISH: PRESSURE and BW_HIGH raised on crossing, in every client\n");
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	return failures ? 1 : 0;
}

/* --- an unprivileged user -------------------------------------------- */

#define NOBODY 65534

static unsigned int module_param_uint(const char *name)
{
	char path[128];
	unsigned int v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/gpurdma_mon/parameters/%s",
		 name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%u", &v) != 1) {
		printf("FAIL: %s unreadable\n", path);
		exit(1);
	}
	fclose(f);
	return v;
}

static unsigned int sysfs_clients(void)
{
	unsigned int v = 0;
	FILE *f = fopen("/sys/class/misc/gpurdma_mon/clients", "r");

	if (!f || fscanf(f, "%u", &v) != 1) {
		printf("FAIL: clients unreadable\n");
		exit(1);
	}
	fclose(f);
	return v;
}

/* setuid() away from root clears every capability; check it did. */
static void drop_to_nobody(void)
{
	char line[256];
	bool none = false;
	FILE *f;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
		printf("FAIL: cannot drop to uid %d: %s\n", NOBODY,
		       strerror(errno));
		exit(1);
	}
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strcmp(line, "CapEff:\t0000000000000000\n"))
			none = true;
	if (f)
		fclose(f);
	if (!none) {
		printf("FAIL: capabilities left after setuid(%d)\n", NOBODY);
		exit(1);
	}
}

/* The child: reads work, SET_THRESHOLD and PUBLISH are refused, opens
 * stop at max_clients.  Tells the parent over ready, waits on go.
 */
static void unpriv_child(int ready, int go, unsigned int max)
{
	struct gpurdma_mon_threshold thr = { .argsz = sizeof(thr) };
	struct gpurdma_mon_threshold now = { .argsz = sizeof(now) };
	struct gpurdma_mon_publish *p = calloc(1, sizeof(*p));
	struct gpurdma_mon_event ev[16];
	int fd, *fds = calloc(max + 1, sizeof(int)), nfds = 0, err;
	uint64_t publishes;
	char c = 0;

	drop_to_nobody();
	errno = 0;
	fd = open(DEV, O_RDWR);
	CHECK(fd == -1 && errno == EACCES,
	      "unprivileged O_RDWR open: fd %d errno %d", fd, errno);
	if (fd >= 0)
		close(fd);
	fd = open(DEV, O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		printf("FAIL: unprivileged O_RDONLY open: %s\n",
		       strerror(errno));
		exit(1);
	}
	publishes = telemetry(fd).publishes;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_THRESHOLD, &now) == 0,
	      "unprivileged GET_THRESHOLD errno %d", errno);
	/* the replayed conditions (a degraded link) are readable */
	CHECK(drain(fd, ev, 16) > 0, "unprivileged read got no events");

	thr.pressure_pct = now.pressure_pct == 50 ? 60 : 50;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_SET_THRESHOLD, &thr) == -1 &&
		      errno == EPERM,
	      "unprivileged SET_THRESHOLD errno %d", errno);
	thr.argsz = 1; /* refused for the caller, not for its argument */
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_SET_THRESHOLD, &thr) == -1 &&
		      errno == EPERM,
	      "unprivileged SET_THRESHOLD, bad argsz: errno %d", errno);
	thr = (struct gpurdma_mon_threshold){ .argsz = sizeof(thr) };
	CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_THRESHOLD, &thr) == 0 &&
		      thr.pressure_pct == now.pressure_pct &&
		      thr.bw_mbps == now.bw_mbps,
	      "threshold changed to %u%%", thr.pressure_pct);
	p->argsz = sizeof(*p);
	p->pool_total = 100;
	p->pool_used = 100;
	errno = 0;
	CHECK(ioctl(fd, GPURDMA_MON_IOC_PUBLISH, p) == -1 && errno == EPERM,
	      "unprivileged PUBLISH errno %d", errno);
	CHECK(telemetry(fd).publishes == publishes,
	      "unprivileged PUBLISH counted");
	CHECK(drain(fd, ev, 16) == 0, "unprivileged PUBLISH raised an event");

	/* fill the table: the last open fails with EUSERS, cleanly */
	fds[nfds++] = fd;
	while (nfds <= (int)max) {
		fd = open(DEV, O_RDONLY | O_NONBLOCK);
		if (fd < 0)
			break;
		fds[nfds++] = fd;
	}
	err = errno;
	CHECK(fd == -1 && err == EUSERS, "open %d: fd %d errno %d",
	      nfds + 1, fd, err);
	CHECK(sysfs_clients() == max, "clients %u at the bound %u",
	      sysfs_clients(), max);
	/* a closed slot can be taken again */
	close(fds[--nfds]);
	fd = open(DEV, O_RDONLY | O_NONBLOCK);
	CHECK(fd >= 0, "reopen after a close: errno %d", errno);
	if (fd >= 0)
		fds[nfds++] = fd;
	printf("unprivileged: %d clients open, the next refused with %s\n",
	       nfds, strerror(err));
	if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
		failures++;
	while (nfds)
		close(fds[--nfds]);
	free(fds);
	free(p);
	exit(failures ? 1 : 0);
}

static int cmd_unpriv(void)
{
	struct gpurdma_mon_threshold thr = { .argsz = sizeof(thr) };
	unsigned int max = module_param_uint("max_clients");
	int ready[2], go[2], status = 0, fd;
	pid_t pid;
	char c;

	CHECK(sysfs_clients() == 0, "clients open before the test: %u",
	      sysfs_clients());
	if (pipe(ready) || pipe(go))
		return 1;
	pid = fork();
	if (pid == 0)
		unpriv_child(ready[1], go[0], max);
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &c, 1) == 1) {
		/* a client with CAP_NET_ADMIN is never locked out */
		fd = open(DEV, O_RDWR | O_NONBLOCK);
		CHECK(fd >= 0, "privileged open at the bound: errno %d", errno);
		if (fd >= 0) {
			CHECK(sysfs_clients() == max + 1, "clients %u",
			      sysfs_clients());
			CHECK(ioctl(fd, GPURDMA_MON_IOC_GET_THRESHOLD, &thr) == 0 &&
				      ioctl(fd, GPURDMA_MON_IOC_SET_THRESHOLD,
					    &thr) == 0,
			      "privileged SET_THRESHOLD errno %d", errno);
			close(fd);
		}
	} else {
		failures++;
	}
	if (write(go[1], &c, 1) != 1)
		failures++;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "unprivileged child status %#x", status);
	for (int i = 0; i < 100 && sysfs_clients(); i++)
		sleep_ms(20);
	CHECK(sysfs_clients() == 0, "clients left open: %u", sysfs_clients());
	return failures ? 1 : 0;
}

/* --- the rest -------------------------------------------------------- */

static int cmd_hold(void)
{
	int fd = dev_open(0);
	struct gpurdma_mon_event ev[16];
	ssize_t n;

	drain(fd, ev, 16);
	printf("holding\n");
	fflush(stdout);
	n = read(fd, ev, EVSZ);
	CHECK(n == (ssize_t)EVSZ, "hold read %zd errno %d", n, errno);
	if (n == (ssize_t)EVSZ)
		printf("hold got \"%s\"\n", ev[0].detail);
	close(fd);
	return failures ? 1 : 0;
}

static int cmd_link_checks(void)
{
	int fd = dev_open(O_NONBLOCK);
	uint64_t first = telemetry(fd).link_checks, now = first;

	for (int i = 0; i < 100 && now == first; i++) {
		sleep_ms(100);
		now = telemetry(fd).link_checks;
	}
	CHECK(now > first, "link_checks stayed at %llu",
	      (unsigned long long)first);
	printf("periodic link check ran (%llu -> %llu)\n",
	       (unsigned long long)first, (unsigned long long)now);
	close(fd);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mon_guest telemetry|clients|read|ioctl|publish|unpriv|hold|link-checks ...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "telemetry"))
		return cmd_telemetry(argc - 2, argv + 2);
	if (!strcmp(argv[1], "clients"))
		return cmd_clients(argc - 2, argv + 2);
	if (!strcmp(argv[1], "read"))
		return cmd_read(argc - 2, argv + 2);
	if (!strcmp(argv[1], "ioctl"))
		return cmd_ioctl();
	if (!strcmp(argv[1], "publish"))
		return cmd_publish();
	if (!strcmp(argv[1], "unpriv"))
		return cmd_unpriv();
	if (!strcmp(argv[1], "hold"))
		return cmd_hold();
	if (!strcmp(argv[1], "link-checks"))
		return cmd_link_checks();
	fprintf(stderr, "mon_guest: unknown subcommand %s\n", argv[1]);
	return 2;
}
