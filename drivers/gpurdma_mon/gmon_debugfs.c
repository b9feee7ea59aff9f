// SPDX-License-Identifier: GPL-2.0
/*
 * gmon_debugfs.c - <debugfs>/gpurdma_mon/inject: writing
 * "TYPE SEVERITY [DETAIL]" (for example "test warn hello") raises that
 * event for every client, so tests can drive the event path.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "gmon.h"

static const char * const type_names[] = {
	[0] = "none",
	[GPURDMA_MON_EV_LINK_DEGRADED] = "link_degraded",
	[GPURDMA_MON_EV_NUMA_WARN] = "numa_warn",
	[GPURDMA_MON_EV_PRESSURE] = "pressure",
	[GPURDMA_MON_EV_BW_HIGH] = "bw_high",
	[GPURDMA_MON_EV_TEST] = "test",
};

static const char * const sev_names[] = {
	[GPURDMA_MON_SEV_INFO] = "info",
	[GPURDMA_MON_SEV_WARN] = "warn",
	[GPURDMA_MON_SEV_CRIT] = "crit",
};

static ssize_t inject_write(struct file *file, const char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	char buf[128], *p, *type, *sev;
	int t, s;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	p = strim(buf);
	type = strsep(&p, " \t");
	sev = p ? strsep(&p, " \t") : NULL;
	while (sev && !*sev && p)	/* runs of blanks between words */
		sev = strsep(&p, " \t");
	if (p)
		p = skip_spaces(p);
	if (!sev)
		return -EINVAL;
	t = match_string(type_names, ARRAY_SIZE(type_names), type);
	s = match_string(sev_names, ARRAY_SIZE(sev_names), sev);
	if (t <= 0 || s < 0)
		return -EINVAL;
	gmon_raise(t, s, GPURDMA_MON_SRC_NONE, 0, 0, "%s", p ? p : "");
	return count;
}

static const struct file_operations inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = inject_write,
	.llseek = no_llseek,
};

void gmon_debugfs_init(void)
{
	/* debugfs is best effort: the device works without it */
	gmon.debugfs = debugfs_create_dir(GPURDMA_MON_DEVNAME, NULL);
	debugfs_create_file("inject", 0200, gmon.debugfs, NULL, &inject_fops);
}

void gmon_debugfs_exit(void)
{
	debugfs_remove_recursive(gmon.debugfs);
	gmon.debugfs = NULL;
}
