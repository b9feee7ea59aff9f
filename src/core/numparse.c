/* numparse.c - strict numbers for config values and command-line flags
 * (the rules are in numparse.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "numparse.h"

/* Longest input echoed in a message; the rest is cut with "...". */
#define ECHO_MAX 40

static int fail(char *err, size_t errlen, const char *s, const char *what,
		const char *range)
{
	char cut[ECHO_MAX + 4], quoted[4 * ECHO_MAX + 8];
	size_t n = strlen(s);

	snprintf(cut, sizeof(cut), "%.*s%s", ECHO_MAX, s,
		 n > ECHO_MAX ? "..." : "");
	vfgx_escape(quoted, sizeof(quoted), cut);
	/* a value out of range has only digits: no quotes needed */
	if (err && errlen)
		snprintf(err, errlen, strcmp(what, "is out of range") ?
			 "'%s' %s (must be %s)" : "%s %s (must be %s)",
			 quoted, what, range);
	return -EINVAL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int vfgx_num_u64(const char *s, uint64_t min, uint64_t max, unsigned flags,
		 uint64_t *out, char *err, size_t errlen)
{
	char range[64];
	unsigned base = 10;
	const char *p = s;
	uint64_t v = 0;
	bool big = false;
	int d;

	snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64, min, max);
	if (!s || !*s)
		return fail(err, errlen, s ? s : "", "is empty; a whole number is needed",
			    range);
	if ((flags & VFGX_NUM_HEX) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		if (!*p)
			return fail(err, errlen, s, "has no hex digits after 0x", range);
	} else if (p[0] == '0' && p[1] >= '0' && p[1] <= '9') {
		return fail(err, errlen, s,
			    "has a leading zero (numbers are decimal; write it without)",
			    range);
	}
	for (; *p; p++) {
		d = base == 16 ? hexval(*p) : (*p >= '0' && *p <= '9' ? *p - '0' : -1);
		if (d < 0)
			return fail(err, errlen, s,
				    base == 16 ? "is not a hex number" :
						 "is not a whole number",
				    range);
		if (v > (UINT64_MAX - (uint64_t)d) / base)
			big = true;
		else
			v = v * base + (uint64_t)d;
	}
	if (big || v < min || v > max)
		return fail(err, errlen, s, "is out of range", range);
	*out = v;
	return 0;
}

/* [-]digits[.digits][(e|E)[+-]digits], at least one digit before the
 * exponent: what strtod reads as decimal, without nan, inf, hex or blanks.
 */
static bool decimal_real(const char *p)
{
	bool digits = false;

	if (*p == '-')
		p++;
	for (; *p >= '0' && *p <= '9'; p++)
		digits = true;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			digits = true;
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

int vfgx_num_double(const char *s, double min, double max, double *out,
		    char *err, size_t errlen)
{
	char range[64];
	double v;

	snprintf(range, sizeof(range), "%g..%g", min, max);
	if (!s || !*s)
		return fail(err, errlen, s ? s : "", "is empty; a number is needed",
			    range);
	if (!decimal_real(s))
		return fail(err, errlen, s, "is not a decimal number", range);
	errno = 0;
	v = strtod(s, NULL);
	/* ERANGE on underflow too: 1e-400 is no usable value either */
	if (errno || !isfinite(v) || v < min || v > max)
		return fail(err, errlen, s, "is out of range", range);
	*out = v;
	return 0;
}
