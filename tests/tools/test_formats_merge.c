/* test_formats_merge.c - issue #38: `vfgx bench formats --gpu-only` keeps
 * the CPU part of an earlier results file, `--cpu-only --merge-from` its
 * GPU part (bench/formats_merge.c): the part's sections and target lines,
 * never the title, the other part's sections or targets; the part's date,
 * commit, machine, command and load renamed "CPU part's" or "GPU part's"
 * where the file's own run measured it, dropped where it did not; lines
 * so renamed by an earlier merge kept once; a file without the part's
 * target lines, or no file, is refused. */
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

/* A file whose CPU part was kept by a --cpu-only --merge-from run: its
 * own run is the CPU part's, the GPU part's lines carry their names. */
static const char gpu_kept_file[] =
	"# Producers' formats: title\n"
	"\n"
	"- date: 2026-11-30 10:00:00 UTC\n"
	"- commit: 2222222222222222222222222222222222222222\n"
	"- machine: AMD EPYC, 2 online cores\n"
	"- command: vfgx bench formats --cpu-only --merge-from x\n"
	"- load average (1 min) before 1.0, after 1.1\n"
	"- the GPU part below is x's, measured earlier\n"
	"\n"
	"- GPU part's date: 2026-11-29 01:00:00 UTC\n"
	"- GPU part's commit: 1111111111111111111111111111111111111111\n"
	"- GPU part's code unchanged through: 3333333333333333333333333333333333333333 (why)\n"
	"\n"
	"## CPU engine: each profile against the vfgx profile\n"
	"\n"
	"| rtp | 64 | 1 | 11.0 | 20.0 | 0.55 |\n"
	"\n"
	"## GPU engine: each profile against the vfgx profile\n"
	"\n"
	"| rtp | 64 | 1 | 300.0 | 310.0 | 0.97 |\n"
	"\n"
	"## Targets\n"
	"\n"
	"- rule: the rule\n"
	"\n"
	"target: format_cpu_vs_vfgx_rtp_64B measured=11 reference=20 ratio=0.55 goal=0.9 met=no\n"
	"target: format_gpu_vs_vfgx_rtp_64B measured=300 reference=310 ratio=0.97 goal=0.9 met=yes\n";

int main(void)
{
	char dir[] = "/tmp/vfgx-merge-XXXXXX", path[64];
	struct kept_part kp;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/formats.md", dir);

	/* an earlier CPU-only file, its CPU part */
	put(path, cpu_file);
	CHECK(part_read(path, false, &kp) == 0, "a CPU-only file refused");
	if (kp.body) {
		CHECK(!strstr(kp.head, "# Producers") && !strstr(kp.body, "# Producers"),
		      "the title kept: %s", kp.head);
		CHECK(strstr(kp.head, "- CPU part's date: 2026-11-28 20:34:29 UTC\n"), "date: %s", kp.head);
		CHECK(strstr(kp.head, "- CPU part's commit: a6d471f"), "commit: %s", kp.head);
		CHECK(strstr(kp.head, "- CPU part's machine: AMD EPYC"), "machine: %s", kp.head);
		CHECK(strstr(kp.head, "- CPU part's command: vfgx bench formats --cpu-only"), "command");
		CHECK(strstr(kp.head, "- CPU part's load average"), "load");
		CHECK(!strstr(kp.head, "\n- commit: ") && strncmp(kp.head, "- commit: ", 10) &&
		      !strstr(kp.head, "\n- date: ") && strncmp(kp.head, "- date: ", 8),
		      "a date or commit line left as the file's own: %s", kp.head);
		CHECK(strstr(kp.body, "## CPU engine") && strstr(kp.body, "| rtp | 64 | 1 | 10.0"),
		      "the CPU engine section lost");
		CHECK(strstr(kp.body, "## RFC 4175 video on the CPU") && strstr(kp.body, "| 1 | 60 | 60 |"),
		      "the CPU video section lost");
		CHECK(!strstr(kp.body, "## Targets") && !strstr(kp.body, "- rule:"),
		      "the targets section kept in the body");
		CHECK(!strcmp(kp.targets,
			      "target: format_cpu_vs_vfgx_rtp_64B measured=10 reference=20 ratio=0.5 goal=0.9 met=no\n"
			      "target: rtp_video_1080p60_cpu measured=235 reference=60 ratio=3.9 goal=60 met=yes\n"),
		      "targets: %s", kp.targets);
		kept_part_free(&kp);
	}
	/* ... and no GPU part in it: refused */
	CHECK(part_read(path, true, &kp) == -1, "a CPU-only file's GPU part taken");

	/* a file merged by --gpu-only: its CPU part after its marker, no GPU part */
	put(path, merged_file);
	CHECK(part_read(path, false, &kp) == 0, "a merged file refused");
	if (kp.body) {
		CHECK(!strstr(kp.head, "Intel Xeon") && !strstr(kp.head, "1111111"),
		      "the earlier GPU run's header kept: %s", kp.head);
		CHECK(!strstr(kp.head, MERGED_MARK), "the marker kept");
		CHECK(strstr(kp.head, "- CPU part's commit: a6d471f") &&
		      !strstr(kp.head, "CPU part's CPU part's"), "commit renamed twice: %s", kp.head);
		CHECK(strstr(kp.body, "| rtp | 64 | 1 | 10.0"), "the CPU rows lost");
		CHECK(!strstr(kp.body, "## GPU") && !strstr(kp.body, "300.0") &&
		      !strstr(kp.body, "video on the GPU") && !strstr(kp.body, "| 1 | 16 |"),
		      "a GPU section kept: %s", kp.body);
		CHECK(!strcmp(kp.targets,
			      "target: format_cpu_vs_vfgx_rtp_64B measured=10 reference=20 ratio=0.5 goal=0.9 met=no\n"),
		      "targets: %s", kp.targets);
		kept_part_free(&kp);
	}
	/* ... and its GPU part: the file's own run, renamed */
	CHECK(part_read(path, true, &kp) == 0, "a merged file's GPU part refused");
	if (kp.body) {
		CHECK(strstr(kp.head, "- GPU part's date: 2026-11-29 01:00:00 UTC\n") &&
		      strstr(kp.head, "- GPU part's commit: 1111111") &&
		      strstr(kp.head, "- GPU part's machine: Intel Xeon") &&
		      strstr(kp.head, "- GPU part's command: vfgx bench formats --gpu-only") &&
		      strstr(kp.head, "- GPU part's load average"), "GPU header: %s", kp.head);
		CHECK(!strstr(kp.head, "a6d471f") && !strstr(kp.head, "CPU part's") &&
		      !strstr(kp.head, MERGED_MARK), "the CPU part's lines kept: %s", kp.head);
		CHECK(strstr(kp.body, "## GPU engine") && strstr(kp.body, "| rtp | 64 | 1 | 300.0") &&
		      strstr(kp.body, "## RFC 4175 video on the GPU") && strstr(kp.body, "| 1 | 16 |"),
		      "a GPU section lost: %s", kp.body);
		CHECK(!strstr(kp.body, "## CPU") && !strstr(kp.body, "| 10.0 |") &&
		      !strstr(kp.body, "## Targets"), "a CPU section kept: %s", kp.body);
		CHECK(!strcmp(kp.targets,
			      "target: format_gpu_vs_vfgx_rtp_64B measured=300 reference=310 ratio=0.97 goal=0.9 met=yes\n"
			      "target: rtp_video_streams_gpu measured=12 reference=0 ratio=0 goal=12 met=no\n"),
		      "targets: %s", kp.targets);
		kept_part_free(&kp);
	}

	/* a file merged by --cpu-only --merge-from: its GPU part's named
	 * lines once, its own run's lines (the CPU part's) not */
	put(path, gpu_kept_file);
	CHECK(part_read(path, true, &kp) == 0, "a GPU-kept file's GPU part refused");
	if (kp.body) {
		CHECK(strstr(kp.head, "- GPU part's commit: 1111111") &&
		      strstr(kp.head, "- GPU part's code unchanged through: 3333333") &&
		      !strstr(kp.head, "GPU part's GPU part's"), "GPU lines: %s", kp.head);
		CHECK(!strstr(kp.head, "2222222") && !strstr(kp.head, "AMD EPYC") &&
		      !strstr(kp.head, MERGED_MARK_GPU), "the CPU run's lines kept: %s", kp.head);
		CHECK(strstr(kp.body, "| rtp | 64 | 1 | 300.0") && !strstr(kp.body, "11.0"),
		      "body: %s", kp.body);
		CHECK(!strcmp(kp.targets,
			      "target: format_gpu_vs_vfgx_rtp_64B measured=300 reference=310 ratio=0.97 goal=0.9 met=yes\n"),
		      "targets: %s", kp.targets);
		kept_part_free(&kp);
	}
	CHECK(part_read(path, false, &kp) == 0, "a GPU-kept file's CPU part refused");
	if (kp.body) {
		CHECK(strstr(kp.head, "- CPU part's commit: 2222222") &&
		      strstr(kp.head, "- CPU part's machine: AMD EPYC"), "CPU lines: %s", kp.head);
		CHECK(!strstr(kp.head, "GPU part's") && !strstr(kp.head, "1111111") &&
		      !strstr(kp.head, MERGED_MARK_GPU), "the GPU part's lines kept: %s", kp.head);
		CHECK(strstr(kp.body, "| rtp | 64 | 1 | 11.0") && !strstr(kp.body, "300.0"),
		      "body: %s", kp.body);
		kept_part_free(&kp);
	}

	/* nothing to keep: refused */
	put(path, "# x\n\n## CPU engine\n\n| a |\n");
	CHECK(part_read(path, false, &kp) == -1, "a file without CPU target lines taken");
	unlink(path);
	CHECK(part_read(path, false, &kp) == -1, "a missing file taken");
	CHECK(part_read(path, true, &kp) == -1, "a missing file taken for its GPU part");
	rmdir(dir);
	if (!fails)
		printf("formats-merge: either part kept, the other part and titles left out, merged files re-merged\n");
	return fails ? 1 : 0;
}
