/* sk_test.h - set-up shared by the socket backend's test programs: a port
 * from a YAML snippet, its bound port, loopback up in a fresh namespace. */
#ifndef VFGX_SK_TEST_H
#define VFGX_SK_TEST_H

#include <stdint.h>
#include <stdio.h>

#include <vfgx/vfgx.h>

/* Count a failure (in the including file's `failures`) and say why. */
#define CHECK(c, ...)                                                        \
	do {                                                                 \
		if (!(c)) {                                                  \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, "\n");                               \
			failures++;                                          \
		}                                                            \
	} while (0)

/* Load yaml, give its first interface nrx/ntx queues and open it; NULL
 * with *err set (and the detail in vfgx_last_error) on failure. */
vfgx_port *sk_open_port(vfgx_ctx *ctx, const char *yaml, uint16_t nrx,
			uint16_t ntx, struct vfgx_config **cfgp, int *err);
/* The port a socket-backend port is bound or connected to. */
uint16_t sk_port_of(vfgx_port *p);
/* Bring lo up (after unshare(CLONE_NEWNET)); 0 or -1. */
int sk_lo_up(void);

#endif
