/* test_formats_merge.c - issue #38: `vfgx bench formats --gpu-only` keeps
 * the CPU part of an earlier results file (bench/formats_merge.c): its CPU
 * sections and CPU target lines, never its title, GPU sections or GPU
 * targets; its date, commit, machine, command and load renamed "CPU
 * part's"; a file merged before gives back only the CPU part after its
 * marker line; a file without CPU target lines or no file is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "formats.h"

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f)) {
		printf("FAIL: cannot write %s\n", path);
		exit(1);
	}
}

static const char cpu_file[] =
	"# Producers' formats: title\n"
	"\n"
	"- date: 2026-11-28 20:34:29 UTC\n"
	"- commit: a6d471f0bd10c7946ae0ed6aca0920eb973d0b8f\n"
	"- machine: AMD EPYC, 2 online cores\n"
	"- command: vfgx bench formats --cpu-only\n"
	"- load average (1 min) before 13.02, after 13.73\n"
	"\n"
	"## CPU engine: each profile against the vfgx profile\n"
	"\n"
	"| rtp | 64 | 1 | 10.0 | 20.0 | 0.5 |\n"
	"\n"
	"## RFC 4175 video on the CPU: one 1080p60 stream, one core\n"
	"\n"
	"| 1 | 60 | 60 |\n"
	"\n"
	"## Targets\n"
	"\n"
	"- rule: the rule\n"
	"\n"
	"target: format_cpu_vs_vfgx_rtp_64B measured=10 reference=20 ratio=0.5 goal=0.9 met=no\n"
	"target: rtp_video_1080p60_cpu measured=235 reference=60 ratio=3.9 goal=60 met=yes\n";

static const char merged_file[] =
	"# Producers' formats: title\n"
	"\n"
	"- date: 2026-11-29 01:00:00 UTC\n"
	"- commit: 1111111111111111111111111111111111111111\n"
	"- machine: Intel Xeon, 16 online cores\n"
	"- command: vfgx bench formats --gpu-only\n"
	"- load average (1 min) before 0.5, after 0.6\n"
	"- the CPU part below is bench/results/formats.md's, measured earlier\n"
	"\n"
	"- CPU part's date: 2026-11-28 20:34:29 UTC\n"
	"- CPU part's commit: a6d471f0bd10c7946ae0ed6aca0920eb973d0b8f\n"
	"\n"
	"## CPU engine: each profile against the vfgx profile\n"
	"\n"
	"| rtp | 64 | 1 | 10.0 | 20.0 | 0.5 |\n"
	"\n"
	"## GPU engine: each profile against the vfgx profile\n"
	"\n"
	"| rtp | 64 | 1 | 300.0 | 310.0 | 0.97 |\n"
	"\n"
	"## RFC 4175 video on the GPU: 4K60 streams at once\n"
	"\n"
	"| 1 | 16 |\n"
	"\n"
	"## Targets\n"
	"\n"
	"- rule: the rule\n"
	"\n"
	"target: format_cpu_vs_vfgx_rtp_64B measured=10 reference=20 ratio=0.5 goal=0.9 met=no\n"
	"target: format_gpu_vs_vfgx_rtp_64B measured=300 reference=310 ratio=0.97 goal=0.9 met=yes\n"
	"target: rtp_video_streams_gpu measured=12 reference=0 ratio=0 goal=12 met=no\n";

int main(void)
{
	char dir[] = "/tmp/vfgx-merge-XXXXXX", path[64];
	struct cpu_part cp;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/formats.md", dir);

	/* an earlier CPU-only file */
	put(path, cpu_file);
	CHECK(cpu_part_read(path, &cp) == 0, "a CPU-only file refused");
	if (cp.body) {
		CHECK(!strstr(cp.body, "# Producers"), "the title kept: %s", cp.body);
		CHECK(strstr(cp.body, "- CPU part's date: 2026-11-28 20:34:29 UTC\n"), "date: %s", cp.body);
		CHECK(strstr(cp.body, "- CPU part's commit: a6d471f"), "commit: %s", cp.body);
		CHECK(strstr(cp.body, "- CPU part's machine: AMD EPYC"), "machine: %s", cp.body);
		CHECK(strstr(cp.body, "- CPU part's command: vfgx bench formats --cpu-only"), "command");
		CHECK(strstr(cp.body, "- CPU part's load average"), "load");
		CHECK(!strstr(cp.body, "\n- commit: ") && !strstr(cp.body, "\n- date: "),
		      "a date or commit line left as the file's own: %s", cp.body);
		CHECK(strstr(cp.body, "## CPU engine") && strstr(cp.body, "| rtp | 64 | 1 | 10.0"),
		      "the CPU engine section lost");
		CHECK(strstr(cp.body, "## RFC 4175 video on the CPU") && strstr(cp.body, "| 1 | 60 | 60 |"),
		      "the CPU video section lost");
		CHECK(!strstr(cp.body, "## Targets") && !strstr(cp.body, "- rule:"),
		      "the targets section kept in the body");
		CHECK(!strcmp(cp.targets,
			      "target: format_cpu_vs_vfgx_rtp_64B measured=10 reference=20 ratio=0.5 goal=0.9 met=no\n"
			      "target: rtp_video_1080p60_cpu measured=235 reference=60 ratio=3.9 goal=60 met=yes\n"),
		      "targets: %s", cp.targets);
		free(cp.body);
		free(cp.targets);
	}

	/* a file merged before: the CPU part after its marker, no GPU part */
	put(path, merged_file);
	CHECK(cpu_part_read(path, &cp) == 0, "a merged file refused");
	if (cp.body) {
		CHECK(!strstr(cp.body, "Intel Xeon") && !strstr(cp.body, "1111111"),
		      "the earlier GPU run's header kept: %s", cp.body);
		CHECK(!strstr(cp.body, MERGED_MARK), "the marker kept");
		CHECK(strstr(cp.body, "- CPU part's commit: a6d471f") &&
		      !strstr(cp.body, "CPU part's CPU part's"), "commit renamed twice: %s", cp.body);
		CHECK(strstr(cp.body, "| rtp | 64 | 1 | 10.0"), "the CPU rows lost");
		CHECK(!strstr(cp.body, "## GPU") && !strstr(cp.body, "300.0") &&
		      !strstr(cp.body, "video on the GPU") && !strstr(cp.body, "| 1 | 16 |"),
		      "a GPU section kept: %s", cp.body);
		CHECK(!strcmp(cp.targets,
			      "target: format_cpu_vs_vfgx_rtp_64B measured=10 reference=20 ratio=0.5 goal=0.9 met=no\n"),
		      "targets: %s", cp.targets);
		free(cp.body);
		free(cp.targets);
	}

	/* nothing to keep: refused */
	put(path, "# x\n\n## CPU engine\n\n| a |\n");
	CHECK(cpu_part_read(path, &cp) == -1, "a file without CPU target lines taken");
	unlink(path);
	CHECK(cpu_part_read(path, &cp) == -1, "a missing file taken");
	rmdir(dir);
	if (!fails)
		printf("formats-merge: the CPU part kept, the GPU part and titles left out, merged files re-merged\n");
	return fails ? 1 : 0;
}
