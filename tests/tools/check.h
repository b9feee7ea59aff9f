/* check.h - the tools tests' one check: a condition that does not hold
 * prints one "FAIL: file:line: message" line and counts in `fails`; the
 * program goes on with its other checks and main returns fails ? 1 : 0.
 * Included by one file of each test program. */
#ifndef VFGX_TESTS_TOOLS_CHECK_H
#define VFGX_TESTS_TOOLS_CHECK_H

#include <stdio.h>

static int fails;

#define CHECK(c, ...)                                             \
	do {                                                      \
		if (!(c)) {                                       \
			printf("FAIL: %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                      \
			printf("\n");                             \
			fails++;                                  \
		}                                                 \
	} while (0)

#endif
