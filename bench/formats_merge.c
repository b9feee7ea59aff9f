/* formats_merge.c - `vfgx bench formats --gpu-only`'s merge (formats.h):
 * the CPU part of an earlier results file, read back to be written before
 * this run's GPU part. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

/* ---- merging a GPU part into an earlier run's CPU part --------------------
 * The CPU part: the earlier file up to its first "## GPU" or "## RFC 4175
 * video on the GPU" section or "## Targets", its title dropped and its
 * date, commit and machine kept under names of their own; its target lines
 * whose names do not say gpu. */
static bool is_gpu_section(const char *line)
{
	return !strncmp(line, "## GPU", 6) || !strncmp(line, "## RFC 4175 video on the GPU", 28);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, got;

	if (!f)
		return NULL;
	for (;;) {
		char *nb = realloc(buf, len + 65536 + 1);

		if (!nb) {
			free(buf);
			fclose(f);
			return NULL;
		}
		buf = nb;
		got = fread(buf + len, 1, 65536, f);
		len += got;
		if (got < 65536)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

int cpu_part_read(const char *path, struct cpu_part *cp)
{
	char *all = read_all(path), *line, *next, *mark;
	FILE *b, *t;
	size_t bl = 0, tl = 0;
	bool in_cpu = true, any = false;

	memset(cp, 0, sizeof(*cp));
	if (!all) {
		fprintf(stderr, "vfgx bench formats: --merge-from %s: %s (run the CPU part first: vfgx bench formats --cpu-only)\n",
			path, strerror(errno));
		return -1;
	}
	b = open_memstream(&cp->body, &bl);
	t = open_memstream(&cp->targets, &tl);
	/* a merged file: its CPU part starts after the marker line */
	line = all;
	if ((mark = strstr(all, MERGED_MARK)) && (mark = strchr(mark, '\n')))
		line = mark + 1;
	for (; b && t && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, "target: ", 8)) {
			char name[128];

			if (sscanf(line, "target: %127s", name) == 1 && !strstr(name, "gpu")) {
				fprintf(t, "%s\n", line);
				any = true;
			}
			continue;
		}
		if (is_gpu_section(line) || !strncmp(line, "## Targets", 10))
			in_cpu = false;
		else if (!strncmp(line, "## ", 3))
			in_cpu = true;
		if (!in_cpu || !strncmp(line, "# ", 2))
			continue; /* GPU sections, targets, the title */
		if (!strncmp(line, "- date: ", 8) || !strncmp(line, "- commit: ", 10) ||
		    !strncmp(line, "- machine: ", 11) || !strncmp(line, "- command: ", 11) ||
		    !strncmp(line, "- load average", 14))
			fprintf(b, "- CPU part's %s\n", line + 2);
		else
			fprintf(b, "%s\n", line);
	}
	free(all);
	if (b)
		fclose(b);
	if (t)
		fclose(t);
	if (!cp->body || !cp->targets || !any) {
		fprintf(stderr, "vfgx bench formats: --merge-from %s: no CPU part's target lines in it (run vfgx bench formats --cpu-only)\n",
			path);
		free(cp->body);
		free(cp->targets);
		memset(cp, 0, sizeof(*cp));
		return -1;
	}
	return 0;
}
