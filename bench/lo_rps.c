/* lo_rps.c - RPS on loopback and per-CPU busy time (lo_rps.h). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "lo_rps.h"

int lo_rps_prepare(void)
{
	if (unshare(CLONE_NEWNS))
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	/* a sysfs mounted from this network namespace shows its devices */
	if (mount("sysfs", "/sys", "sysfs", 0, NULL))
		return -errno;
	return 0;
}

int lo_rps_set(int cpu)
{
	FILE *f = fopen("/sys/class/net/lo/queues/rx-0/rps_cpus", "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (cpu < 0)
		fprintf(f, "0\n");
	else if (cpu < 32)
		fprintf(f, "%x\n", 1u << cpu);
	else
		ret = -EINVAL;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

int cpu_sample(int cpu, struct cpu_sample *s)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[512], want[16];
	int ret = -1;

	snprintf(want, sizeof(want), "cpu%d ", cpu);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long v[8] = { 0 };

		if (strncmp(line, want, strlen(want)))
			continue;
		if (sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
			/* user nice system idle iowait irq softirq steal */
			s->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
			s->busy = s->total - v[3] - v[4];
			s->irq = v[5] + v[6];
			ret = 0;
		}
		break;
	}
	if (f)
		fclose(f);
	return ret;
}

double cpu_busy(const struct cpu_sample *a, const struct cpu_sample *b)
{
	if (b->total <= a->total)
		return -1;
	return (double)(b->busy - a->busy) / (double)(b->total - a->total);
}

double cpu_irq(const struct cpu_sample *a, const struct cpu_sample *b)
{
	if (b->total <= a->total)
		return -1;
	return (double)(b->irq - a->irq) / (double)(b->total - a->total);
}

bool udp_saturated(double rx_work, double offered, double got)
{
	return rx_work >= 0.9 && offered > 0 && offered - got >= 0.01 * offered;
}
