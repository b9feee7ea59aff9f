/* testpmd.c - dpdk-testpmd as a reference: one forwarding lcore on a vdev,
 * measured over a steady-state window (bench dpdk: rxonly; bench send:
 * txonly). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vfgx/core.h>

#include "testpmd.h"

/* Run time (ns, /proc/PID/task/TID/schedstat) of every thread of pid:
 * up to max (tid, ns) pairs; returns how many. */
#define MAX_TASKS 64
struct task_ns {
	pid_t tid;
	unsigned long long ns;
};

static int threads_run_ns(pid_t pid, struct task_ns *t, int max)
{
	char path[128];
	struct dirent *de;
	int n = 0;
	DIR *d;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && n < max && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", pid, de->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &t[n].ns) == 1)
			t[n++].tid = atoi(de->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* The run time in the window of the thread that ran most in it: the
 * forwarding lcore.  (The thread with the most run time in all was not
 * always that one: on a loaded machine testpmd's main thread, which set up
 * 512 MiB at start, had more than the lcore, and its near-zero share in
 * the window gave rates of 10^5 Mpps per CPU-second.)  *tid: its id. */
static uint64_t busiest_in_window(const struct task_ns *a, int na, const struct task_ns *b,
				  int nb, pid_t *tid)
{
	uint64_t best = 0;

	*tid = 0;
	for (int j = 0; j < nb; j++) {
		unsigned long long before = 0;

		for (int i = 0; i < na; i++)
			if (a[i].tid == b[j].tid)
				before = a[i].ns;
		if (b[j].ns > before && b[j].ns - before > best) {
			best = b[j].ns - before;
			*tid = b[j].tid;
		}
	}
	return best;
}

/* The key's samples ("Rx-pps") testpmd has printed so far (k), their
 * values from index `from` on summed into *sum (counted in *nb). */
static int pps_samples(const char *path, const char *key, int from, double *sum, int *nb)
{
	char line[256], fmt[48];
	int k = 0;
	FILE *f = fopen(path, "r");

	snprintf(fmt, sizeof(fmt), " %s: %%lf", key);
	while (f && fgets(line, sizeof(line), f)) {
		double v;

		if (sscanf(line, fmt, &v) == 1) {
			if (sum && k >= from) {
				*sum += v;
				(*nb)++;
			}
			k++;
		}
	}
	if (f)
		fclose(f);
	return k;
}

int testpmd_measure(const struct testpmd_run *o, struct testpmd_rate *res)
{
	char lcores[32], vdev_arg[160], burst[32], mbufs[64], period[32], fwd[48];
	char out_path[] = "/tmp/vfgx-bench-testpmd-XXXXXX";
	char *argv[40], *mem;
	int argc = 0, fd, status, nb = 0, k1;
	double sum = 0, share;
	uint64_t w1, w2, ran;
	struct task_ns t1[MAX_TASKS], t2[MAX_TASKS];
	int n1, n2;
	pid_t pid, tid = 0;

	fd = mkstemp(out_path);
	if (fd < 0)
		return -errno;
	snprintf(lcores, sizeof(lcores), "%d,%d", o->main_core, o->core);
	snprintf(vdev_arg, sizeof(vdev_arg), "--vdev=%s", o->vdev);
	snprintf(burst, sizeof(burst), "--burst=%d", o->burst);
	snprintf(mbufs, sizeof(mbufs), "--total-num-mbufs=%d", o->nb_mbufs);
	snprintf(fwd, sizeof(fwd), "--forward-mode=%s", o->fwd);
	memset(res, 0, sizeof(*res));
	snprintf(period, sizeof(period), "--stats-period=1");
	if (o->netns) {
		argv[argc++] = (char *)"ip";
		argv[argc++] = (char *)"netns";
		argv[argc++] = (char *)"exec";
		argv[argc++] = (char *)o->netns;
	}
	/* line-buffered, so the samples are in the file when they are printed */
	argv[argc++] = (char *)"stdbuf";
	argv[argc++] = (char *)"-oL";
	argv[argc++] = (char *)"dpdk-testpmd";
	argv[argc++] = (char *)"-l";
	argv[argc++] = lcores;
	argv[argc++] = (char *)"--no-pci";
	argv[argc++] = vdev_arg;
	argv[argc++] = (char *)"--no-telemetry";
	argv[argc++] = (char *)"--log-level=warning";
	mem = strdup(o->mem_args);
	for (char *t = strtok(mem, " "); t; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc++] = (char *)"--";
	argv[argc++] = fwd;
	argv[argc++] = burst;
	argv[argc++] = mbufs;
	argv[argc++] = (char *)"--mbcache=250";
	argv[argc++] = (char *)"--nb-cores=1";
	argv[argc++] = (char *)"--rxq=1";
	argv[argc++] = (char *)"--txq=1";
	argv[argc++] = period;
	if (o->extra)
		argv[argc++] = (char *)o->extra;
	argv[argc] = NULL;
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	free(mem);
	close(fd);
	if (pid < 0)
		return -errno;
	/* start-up (EAL, pool, port) plus `skip` s of forwarding */
	usleep((useconds_t)((3 + o->skip) * 1e6));
	k1 = pps_samples(out_path, o->sample, 0, NULL, NULL);
	w1 = vfgx_now_ns();
	n1 = threads_run_ns(pid, t1, MAX_TASKS);
	usleep((useconds_t)((o->seconds + 0.5) * 1e6));
	/* testpmd prints a sample a second, late on a busy machine: the
	 * window ends once it holds one (at most 2 s more), so a short
	 * --seconds measures instead of failing with no sample */
	for (int i = 0; i < 20 && pps_samples(out_path, o->sample, 0, NULL, NULL) <= k1; i++)
		usleep(100000);
	n2 = threads_run_ns(pid, t2, MAX_TASKS);
	w2 = vfgx_now_ns();
	ran = busiest_in_window(t1, n1, t2, n2, &tid);
	/* the samples printed inside [w1, w2]; the first covers up to a
	 * period before w1, when testpmd was forwarding already */
	pps_samples(out_path, o->sample, k1, &sum, &nb);
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	if (!nb || !ran || !tid) {
		fprintf(stderr, "%s: dpdk-testpmd printed no %s samples in its window (exit status 0x%x; its output: %s)\n",
			o->who, o->sample, status, out_path);
		return -EIO;
	}
	unlink(out_path);
	share = (double)ran / (double)(w2 - w1);
	res->wall = sum / nb / 1e6;
	res->cpu = res->wall / (share > 1 ? 1 : share);
	res->packets = (uint64_t)(sum / nb * (double)(w2 - w1) / 1e9);
	return 0;
}
