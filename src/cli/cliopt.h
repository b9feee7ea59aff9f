/* cliopt.h - the one option table of each vfgx subcommand: getopt_long,
 * --help text and bash completion are all generated from it. */
#ifndef VFGX_CLI_CLIOPT_H
#define VFGX_CLI_CLIOPT_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_MAX_OPTS 24

struct cli_opt {
	const char *name;  /* long name, without -- */
	int val;           /* the short letter (every option has both) */
	const char *arg;   /* value name, NULL for a flag */
	const char *help;
};

struct cli_cmd {
	const char *name;      /* "run", "bench pipeline" */
	const char *operands;  /* after the options: "[CONFIG.yaml]", or NULL */
	const char *summary;   /* one line for `vfgx -h` */
	const char *more;      /* extra usage lines, or NULL */
	const struct cli_opt *opts; /* ends with { 0 } */
};

/*
 * getopt_long over cmd's table (-h/--help included by the table).  Prints
 * the one-line error itself ("vfgx run: unknown option '--x' (vfgx run
 * --help lists them)") and returns '?' for an unknown option or a missing
 * value; the caller returns 2.  Reset optind to 1 before the first call.
 */
int cli_getopt(int argc, char **argv, const struct cli_cmd *cmd);
/* "usage: vfgx NAME [OPTIONS] OPERANDS" and one line per option. */
void cli_usage(FILE *f, const struct cli_cmd *cmd);
/* Extra operands: one line, returns 2. */
int cli_bad_operands(const struct cli_cmd *cmd, const char *what);
/* s with control characters and invalid UTF-8 escaped (vfgx_escape), for
 * messages that echo a command-line argument; valid until the 4th next
 * call (a rotating set of static buffers). */
const char *cli_esc(const char *s);

/* Command-line flags read with the strict parser (vfgx_num_u64,
 * vfgx_num_double): on error print "vfgx CMD: FLAG: message" on stderr and
 * return -EINVAL; the caller exits 2. */
int vfgx_flag_u64(const char *cmd, const char *flag, const char *s,
		  uint64_t min, uint64_t max, uint64_t *out);
int vfgx_flag_u32(const char *cmd, const char *flag, const char *s,
		  uint32_t min, uint32_t max, uint32_t *out);
int vfgx_flag_int(const char *cmd, const char *flag, const char *s, int min,
		  int max, int *out); /* 0 <= min <= max */
int vfgx_flag_double(const char *cmd, const char *flag, const char *s,
		     double min, double max, double *out);

#endif
