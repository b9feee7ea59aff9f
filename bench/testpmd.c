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

/* Run time (ns, /proc/PID/task/TID/schedstat) of the busiest thread of
 * pid, testpmd's forwarding lcore once it forwards; *tid set to it.  With
 * tid > 0 already: that thread's. */
static uint64_t thread_run_ns(pid_t pid, pid_t *tid)
{
	char path[128];
	unsigned long long ns, best = 0;
	struct dirent *de;
	DIR *d;
	FILE *f;

	if (*tid > 0) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, *tid);
		f = fopen(path, "r");
		if (!f || fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		if (f)
			fclose(f);
		return ns;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", pid, de->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &ns) == 1 && ns > best) {
			best = ns;
			*tid = atoi(de->d_name);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
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
	uint64_t w1, w2, c1, c2;
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
	c1 = thread_run_ns(pid, &tid);
	usleep((useconds_t)((o->seconds + 0.5) * 1e6));
	/* testpmd prints a sample a second, late on a busy machine: the
	 * window ends once it holds one (at most 2 s more), so a short
	 * --seconds measures instead of failing with no sample */
	for (int i = 0; i < 20 && pps_samples(out_path, o->sample, 0, NULL, NULL) <= k1; i++)
		usleep(100000);
	c2 = thread_run_ns(pid, &tid);
	w2 = vfgx_now_ns();
	/* the samples printed inside [w1, w2]; the first covers up to a
	 * period before w1, when testpmd was forwarding already */
	pps_samples(out_path, o->sample, k1, &sum, &nb);
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	if (!nb || c2 <= c1 || !tid) {
		fprintf(stderr, "%s: dpdk-testpmd printed no %s samples in its window (exit status 0x%x; its output: %s)\n",
			o->who, o->sample, status, out_path);
		return -EIO;
	}
	unlink(out_path);
	share = (double)(c2 - c1) / (double)(w2 - w1);
	res->wall = sum / nb / 1e6;
	res->cpu = res->wall / (share > 1 ? 1 : share);
	res->packets = (uint64_t)(sum / nb * (double)(w2 - w1) / 1e9);
	return 0;
}
