/* cliopt.c - getopt_long, usage text and errors from one option table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cliopt.h"
#include <vfgx/core.h>

static size_t build(const struct cli_cmd *cmd, struct option *lo,
		    char *shorts, size_t slen)
{
	size_t n = 0, s = 0;

	shorts[s++] = ':'; /* a missing value returns ':' and prints nothing */
	for (const struct cli_opt *o = cmd->opts; o->name && n < CLI_MAX_OPTS; o++, n++) {
		lo[n] = (struct option){ o->name, o->arg ? required_argument : no_argument,
					 NULL, o->val };
		if (s + 3 < slen) {
			shorts[s++] = (char)o->val;
			if (o->arg)
				shorts[s++] = ':';
		}
	}
	shorts[s] = '\0';
	lo[n] = (struct option){ 0 };
	return n;
}

static const struct cli_opt *find_short(const struct cli_cmd *cmd, int val)
{
	for (const struct cli_opt *o = cmd->opts; o->name; o++)
		if (o->val == val)
			return o;
	return NULL;
}

int cli_getopt(int argc, char **argv, const struct cli_cmd *cmd)
{
	struct option lo[CLI_MAX_OPTS + 1];
	char shorts[2 * CLI_MAX_OPTS + 2];
	const char *bad;
	int c;

	build(cmd, lo, shorts, sizeof(shorts));
	opterr = 0;
	c = getopt_long(argc, argv, shorts, lo, NULL);
	if (c != '?' && c != ':')
		return c;
	bad = argv[optind - 1];
	if (c == ':') {
		const struct cli_opt *o = find_short(cmd, optopt);

		fprintf(stderr, "vfgx %s: option --%s needs a value (%s)\n", cmd->name,
			o ? o->name : "?", o && o->arg ? o->arg : "");
	} else if (optopt && bad[0] == '-' && bad[1] != '-') {
		fprintf(stderr, "vfgx %s: unknown option '-%c' (vfgx %s --help lists them)\n",
			cmd->name, optopt, cmd->name);
	} else {
		fprintf(stderr, "vfgx %s: unknown option '%s' (vfgx %s --help lists them)\n",
			cmd->name, cli_esc(bad), cmd->name);
	}
	return '?';
}

void cli_usage(FILE *f, const struct cli_cmd *cmd)
{
	fprintf(f, "usage: vfgx %s [OPTIONS]%s%s\n", cmd->name,
		cmd->operands ? " " : "", cmd->operands ? cmd->operands : "");
	if (cmd->summary)
		fprintf(f, "  %s\n", cmd->summary);
	fprintf(f, "options:\n");
	for (const struct cli_opt *o = cmd->opts; o->name; o++) {
		char left[64];

		snprintf(left, sizeof(left), "-%c, --%s%s%s", o->val, o->name,
			 o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-28s %s\n", left, o->help);
	}
	if (cmd->more)
		fprintf(f, "%s", cmd->more);
}

int cli_bad_operands(const struct cli_cmd *cmd, const char *what)
{
	fprintf(stderr, "vfgx %s: %s (vfgx %s --help)\n", cmd->name, what, cmd->name);
	return 2;
}

const char *cli_esc(const char *s)
{
	static char buf[4][512];
	static unsigned next;
	char *b = buf[next++ % 4];

	vfgx_escape(b, sizeof(buf[0]), s);
	return b;
}

static int flag_error(const char *cmd, const char *flag, const char *msg)
{
	fprintf(stderr, "vfgx %s: %s: %s\n", cmd, flag, msg);
	return -EINVAL;
}

int vfgx_flag_u64(const char *cmd, const char *flag, const char *s,
		  uint64_t min, uint64_t max, uint64_t *out)
{
	char err[VFGX_NUM_ERR_MAX];

	if (vfgx_num_u64(s, min, max, 0, out, err, sizeof(err)))
		return flag_error(cmd, flag, err);
	return 0;
}

int vfgx_flag_u32(const char *cmd, const char *flag, const char *s,
		  uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int ret = vfgx_flag_u64(cmd, flag, s, min, max, &v);

	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

int vfgx_flag_int(const char *cmd, const char *flag, const char *s, int min,
		  int max, int *out)
{
	uint64_t v;
	int ret = vfgx_flag_u64(cmd, flag, s, min < 0 ? 0 : (uint64_t)min,
				max < 0 ? 0 : (uint64_t)max, &v);

	if (!ret)
		*out = (int)v;
	return ret;
}

int vfgx_flag_double(const char *cmd, const char *flag, const char *s,
		     double min, double max, double *out)
{
	char err[VFGX_NUM_ERR_MAX];

	if (vfgx_num_double(s, min, max, out, err, sizeof(err)))
		return flag_error(cmd, flag, err);
	return 0;
}
