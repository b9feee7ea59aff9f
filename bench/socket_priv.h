/* socket_priv.h - `vfgx bench socket`'s helpers shared by its files:
 * socket.c (processes, ports, UDP receive, main) and socket_tcp.c (TCP
 * message rate and ping-pong). */
#ifndef VFGX_BENCH_SOCKET_PRIV_H
#define VFGX_BENCH_SOCKET_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <vfgx/socket.h>
#include <vfgx/vfgx.h>

/* senders' and receivers' CPUs (-1: not pinned) */
extern int sb_cpu_send, sb_cpu_recv;

/* a child process and what it printed */
struct proc_out {
	pid_t pid;
	int fd;
	char buf[65536];
	size_t len;
};

/* Runs argv with its output to a pipe, pinned to cpu (-1: not). */
int sb_spawn_on(struct proc_out *po, char *const argv[], int cpu);
/* Sends sig (0: none), reads the rest of the output, waits; the exit status. */
int sb_finish(struct proc_out *po, int sig);
/* The number after key in buf, -1 when key is not there. */
double sb_find_num(const char *buf, const char *key);
/* Waits (up to 10 s) until a server has bound port. */
bool sb_wait_bound(uint16_t port, bool tcp);
vfgx_port *sb_open_port(vfgx_ctx *ctx, const char *uri, const struct vfgx_socket_opts *so,
			uint16_t nrx, uint16_t ntx);
/* pid (0: this thread) to cpu; sb_unpin: this thread to every CPU */
int sb_pin(pid_t pid, int cpu);
void sb_unpin(void);

/* socket_tcp.c: one TCP run of size-byte messages for secs, one way or
 * ping-pong (pp); *rate: messages per second */
int sb_sockperf_tcp(uint16_t port, uint32_t size, double secs, bool pp, double *rate);
int sb_vfgx_tcp(vfgx_ctx *ctx, uint16_t port, uint32_t size, double secs, bool pp,
		double *rate);

/* --- UDP receive: senders, kernel counters (socket.c) ------------------ */

extern int udp_senders;
extern struct vfgx_socket_opts udp_so; /* the vfgx receiver's options */

struct udp_shared {
	_Atomic int done;        /* senders finished */
	_Atomic int go;          /* start sending */
	_Atomic int ack;         /* the receiver has seen the end */
	bool mark;               /* end with empty datagrams until ack */
	int gso;                 /* >1: senders send GSO batches of this many
				  * datagrams (kept across udp_start_senders) */
	uint64_t sent[16];
	double secs[16];
};

struct udp_snmp {
	unsigned long long in, rcvbuf_err;
};

/* One receiver's run: datagrams offered, received, dropped; its CPU time;
 * the senders' time; the receiving CPU's busy fraction from the senders'
 * start to their end (/proc/stat; -1: unknown). */
struct udp_side {
	double sent, got, drops, cpu_s, wall_s, busy;
	double irq; /* the receiving CPU's interrupt (softirq) fraction, same span */
};

int udp_snmp(struct udp_snmp *u);
unsigned long udp_queued(uint16_t port);
double thread_cpu_ns(void);
/* Forks udp_senders processes that wait for sh->go, then send SIZE-byte
 * datagrams to 127.0.0.1:port for secs (rate > 0: datagrams/s each),
 * bursts of 64 per sendmmsg(), or GSO batches of sh->gso per sendmsg(). */
int udp_start_senders(struct udp_shared *sh, pid_t *pids, uint16_t port, uint32_t size,
		      double secs, double rate, bool mark);
void udp_reap(pid_t *pids);
void udp_totals(struct udp_shared *sh, struct udp_side *u);

/* socket_ref.c: the same-syscall reference receiver: recvmmsg() of the
 * vfgx port's batch with UDP GRO, each datagram copied out, on this
 * thread pinned to sb_cpu_recv. */
int udp_rx_ref(uint32_t size, double secs, double rate, uint16_t port,
	       struct udp_shared *sh, struct udp_side *u);

#endif
