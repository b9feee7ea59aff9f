/* formats_merge.c - `vfgx bench formats`' merges (formats.h): the other
 * part of an earlier results file, read back to be written with this
 * run's part (--gpu-only keeps the CPU part, --cpu-only --merge-from the
 * GPU part). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

/* ---- the part kept from an earlier file --------------------------------------
 * A GPU section is "## GPU ..." or "## RFC 4175 video on the GPU ..."; the
 * other "## " sections up to "## Targets" are the CPU part's.  The kept
 * part's date, commit, "code unchanged through", machine, command and
 * load lines are renamed "CPU part's ..." or "GPU part's ..." where the
 * file's own run measured that part (lines so named already, from an
 * earlier merge, stay); its target lines are those whose names say gpu
 * (the GPU part) or do not (the CPU part). */
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

/* A header line a run writes about itself, renamed for the kept part. */
static bool run_line(const char *line)
{
	static const char *const heads[] = { "- date: ", "- commit: ", "- code unchanged through: ",
					     "- machine: ", "- command: ", "- load average" };

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
		if (!strncmp(line, heads[i], strlen(heads[i])))
			return true;
	return false;
}

int part_read(const char *path, bool gpu, struct kept_part *kp)
{
	const char *part = gpu ? "GPU" : "CPU", *other = gpu ? "- CPU part's " : "- GPU part's ";
	const char *own = gpu ? "- GPU part's " : "- CPU part's ";
	char *all = read_all(path), *line, *next;
	FILE *h, *b, *t;
	size_t hl = 0, bl = 0, tl = 0;
	bool in_head = true, in_gpu = false, in_targets = false, any = false, mine;

	memset(kp, 0, sizeof(*kp));
	if (!all) {
		fprintf(stderr, "vfgx bench formats: --merge-from %s: %s (run the %s part first: vfgx bench formats --%s-only)\n",
			path, strerror(errno), part, gpu ? "gpu" : "cpu");
		return -1;
	}
	/* the run's own header lines: of both parts, or of the part it
	 * measured when it kept the other (its merge mark says which) */
	mine = gpu ? !strstr(all, MERGED_MARK_GPU) : !strstr(all, MERGED_MARK);
	h = open_memstream(&kp->head, &hl);
	b = open_memstream(&kp->body, &bl);
	t = open_memstream(&kp->targets, &tl);
	for (line = all; h && b && t && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, "target: ", 8)) {
			char name[128];

			if (sscanf(line, "target: %127s", name) == 1 && !strstr(name, "gpu") == !gpu) {
				fprintf(t, "%s\n", line);
				any = true;
			}
			continue;
		}
		if (!strncmp(line, "## ", 3)) {
			in_head = false;
			in_targets = !strncmp(line, "## Targets", 10);
			in_gpu = is_gpu_section(line);
		}
		if (!strncmp(line, "# ", 2) || in_targets)
			continue; /* the title, the targets' section */
		if (in_head) {
			/* the run's own lines, renamed; the kept part's lines of an
			 * earlier merge as they are; the other part's and the merge
			 * marks dropped */
			if (!strncmp(line, own, strlen(own)))
				fprintf(h, "%s\n", line);
			else if (run_line(line)) {
				if (mine)
					fprintf(h, "%s%s\n", own, line + 2);
			}
			else if (*line && strncmp(line, other, strlen(other)) &&
				 strncmp(line, MERGED_MARK, strlen(MERGED_MARK)) &&
				 strncmp(line, MERGED_MARK_GPU, strlen(MERGED_MARK_GPU)))
				fprintf(h, "%s\n", line);
			continue;
		}
		if (in_gpu == gpu)
			fprintf(b, "%s\n", line);
	}
	free(all);
	if (h)
		fclose(h);
	if (b)
		fclose(b);
	if (t)
		fclose(t);
	if (!kp->head || !kp->body || !kp->targets || !any) {
		fprintf(stderr, "vfgx bench formats: --merge-from %s: no %s part's target lines in it (run vfgx bench formats --%s-only)\n",
			path, part, gpu ? "gpu" : "cpu");
		kept_part_free(kp);
		return -1;
	}
	return 0;
}

void kept_part_free(struct kept_part *kp)
{
	free(kp->head);
	free(kp->body);
	free(kp->targets);
	memset(kp, 0, sizeof(*kp));
}
