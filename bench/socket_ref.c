/* socket_ref.c - `vfgx bench socket`'s same-syscall reference receiver:
 * what the vfgx socket port does to receive UDP with GRO (src/port/
 * socket_udp.c: recvmmsg() of 16 slots of 64 KiB with UDP_GRO on, each
 * coalesced datagram split into its segments, each copied into a buffer of
 * its own), written as a plain loop with nothing of the library around it.
 * It blocks like the vfgx receiver (recvmmsg() with MSG_WAITFORONE, no
 * timeout) on this thread, pinned to the receivers' CPU. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lo_rps.h"
#include "socket_priv.h"

#define REF_SLOTS 16      /* SK_GRO_SLOTS */
#define REF_SLOT 65536    /* SK_GRO_SLOT */
#define REF_BUFS 64       /* per-datagram buffers, reused in turn */

int udp_rx_ref(uint32_t size, double secs, double rate, uint16_t port,
	       struct udp_shared *sh, struct udp_side *u)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static uint8_t bufs[REF_BUFS][2048];
	uint8_t ctl[REF_SLOTS][64];
	struct mmsghdr m[REF_SLOTS];
	struct iovec iov[REF_SLOTS];
	struct cpu_sample k0 = { 0 }, k1;
	struct udp_snmp s0, s1;
	pid_t pids[16] = { 0 };
	uint8_t *slots = malloc((size_t)REF_SLOTS * REF_SLOT);
	uint64_t marks = 0, segs = 0, sum = 0;
	unsigned next = 0;
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM, 0), ret = -1;
	bool ended = false;
	double c0, c1;

	if (!slots || fd < 0)
		goto out;
	if (udp_so.rcvbuf) {
		int v = (int)udp_so.rcvbuf;

		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	if ((udp_so.gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    udp_start_senders(sh, pids, port, size, secs, rate, true))
		goto out;
	sb_pin(0, sb_cpu_recv);
	if (udp_snmp(&s0))
		goto out;
	c0 = thread_cpu_ns();
	cpu_sample(sb_cpu_recv, &k0);
	u->busy = -1;
	atomic_store(&sh->go, 1);
	for (;;) {
		int r, flags;

		if (!ended && atomic_load(&sh->done) == udp_senders) {
			ended = true;
			u->busy = cpu_sample(sb_cpu_recv, &k1) ? -1 : cpu_busy(&k0, &k1);
			u->irq = u->busy < 0 ? -1 : cpu_irq(&k0, &k1);
		}
		/* the senders gone and their end seen: take what is queued */
		flags = ended && marks ? MSG_DONTWAIT : MSG_WAITFORONE;
		for (int i = 0; i < REF_SLOTS; i++) {
			iov[i] = (struct iovec){ slots + (size_t)i * REF_SLOT, REF_SLOT };
			memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
			m[i].msg_hdr.msg_control = ctl[i];
			m[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
		}
		r = recvmmsg(fd, m, REF_SLOTS, flags, NULL);
		if (r < 0) {
			if (errno == EAGAIN && flags == MSG_DONTWAIT)
				break;
			if (errno == EINTR || errno == EAGAIN)
				continue;
			goto out;
		}
		for (int i = 0; i < r; i++) {
			uint32_t len = m[i].msg_len, seg = len, off = 0;

			for (struct cmsghdr *c = CMSG_FIRSTHDR(&m[i].msg_hdr); c;
			     c = CMSG_NXTHDR(&m[i].msg_hdr, c))
				if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
					int v;

					memcpy(&v, CMSG_DATA(c), sizeof(v));
					if (v > 0 && (uint32_t)v < len)
						seg = (uint32_t)v;
				}
			if (len == 0) {
				marks++;
				continue;
			}
			/* one buffer per datagram, as the port's pool gives */
			for (; off < len; off += seg, segs++) {
				uint32_t l = len - off < seg ? len - off : seg;
				uint8_t *b = bufs[next++ % REF_BUFS];

				memcpy(b, iov[i].iov_base + off, l < 2048 ? l : 2048);
				sum += b[0];
			}
		}
	}
	c1 = thread_cpu_ns();
	if (udp_snmp(&s1))
		goto out;
	udp_totals(sh, u);
	u->got = (double)(s1.in - s0.in - marks);
	u->drops = (double)(s1.rcvbuf_err - s0.rcvbuf_err);
	u->cpu_s = (c1 - c0) / 1e9;
	if (sh->gso > 1) {
		/* the kernel counts a GRO batch as one datagram */
		u->got = (double)segs;
		u->drops = u->sent - u->got;
	}
	/* the copies are used: their first bytes summed into a number the
	 * loop keeps (the segments counted must match the kernel's count) */
	if (segs != (uint64_t)u->got)
		fprintf(stderr, "vfgx bench socket: reference receiver split %llu datagrams, the kernel handed %.0f (check %llu)\n",
			(unsigned long long)segs, u->got, (unsigned long long)sum);
	ret = u->cpu_s > 0 && u->got > 0 ? 0 : -1;
out:
	atomic_store(&sh->ack, 1);
	sb_unpin();
	udp_reap(pids);
	if (ret)
		fprintf(stderr, "vfgx bench socket: reference receiver failed: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
	free(slots);
	return ret;
}
