/* vfgx/eba.h - exposed buffers: the buffer descriptor (fixed little-endian
 * wire layout), discovery frames over raw Ethernet (EtherType 0x88B5) with a
 * leased peer table, and the message ring's record format and
 * producer/consumer algorithm over an abstract one-sided transport. */
#ifndef VFGX_EBA_H
#define VFGX_EBA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "rdma.h"

/* A word both sides update atomically: C11 _Atomic in C; in C++ the
 * plain type of the same size and alignment (use std::atomic_ref). */
#ifdef __cplusplus
#define VFGX_ATOMIC_U64 uint64_t
#else
#include <stdatomic.h>
#define VFGX_ATOMIC_U64 _Atomic uint64_t
#endif

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the library builds hidden */

/* ---- descriptor ------------------------------------------------------- */

#define VFGX_EBA_DESC_MAGIC 0x42454656u /* "VFEB" little-endian */
#define VFGX_EBA_DESC_VERSION 1
#define VFGX_EBA_DESC_LEN 88            /* bytes on the wire, version 1 */
#define VFGX_EBA_NO_STATE UINT64_MAX    /* state_off: buffer has no state word */
#define VFGX_EBA_LEASE_MAX 86400        /* seconds */

enum vfgx_eba_type {
	VFGX_EBA_RX = 1,   /* peers write into it (a ring or a landing zone) */
	VFGX_EBA_TX = 2,   /* peers read from it */
	VFGX_EBA_CTRL = 3, /* presence / control; address, rkey, size may be 0 */
};

/*
 * What a node publishes about one buffer.  Wire layout (version 1, all
 * integers little-endian, 88 bytes):
 *   0 magic u32 | 4 version u16 | 6 length u16 (=88) | 8 node_id u64 |
 *   16 buffer_id u32 | 20 type u8 | 21 flags u8 (=0) | 22 reserved u16 (=0) |
 *   24 addr u64 | 32 rkey u32 | 36 qpn u32 (< 2^24) | 40 size u64 |
 *   48 state_off u64 | 56 gid[16] | 72 mac[6] | 78 reserved u16 (=0) |
 *   80 lease_s u32 (1..86400) | 84 reserved u32 (=0)
 */
struct vfgx_eba_desc {
	uint64_t node_id;
	uint32_t buffer_id;
	enum vfgx_eba_type type;
	uint64_t addr;      /* remote virtual address (or iova) of byte 0 */
	uint32_t rkey;
	uint32_t qpn;       /* the owner's QP for this buffer, 0 when none */
	uint64_t size;
	uint64_t state_off; /* offset of the 8-byte state word, or NO_STATE */
	uint8_t gid[16];
	uint8_t mac[6];
	uint32_t lease_s;
};

const char *vfgx_eba_type_name(enum vfgx_eba_type t);

/* Check a descriptor's fields (type, qpn range, size, state word inside the
 * buffer and 8-byte aligned, addr+size not wrapping, lease range).
 * 0 or -EINVAL with a detail on ctx (ctx may be NULL). */
int vfgx_eba_desc_check(vfgx_ctx *ctx, const struct vfgx_eba_desc *d);
/* Encode into buf (>= VFGX_EBA_DESC_LEN bytes).  Returns the bytes written,
 * -ENOBUFS when len is too small, -EINVAL when the descriptor is invalid. */
int vfgx_eba_desc_encode(vfgx_ctx *ctx, const struct vfgx_eba_desc *d,
			 void *buf, size_t len);
/* Decode len bytes.  Returns the bytes consumed, -EMSGSIZE when truncated,
 * -EBADMSG on a wrong magic, -EPROTONOSUPPORT on an unknown version,
 * -EINVAL on a bad field (length, reserved bits, ranges). */
int vfgx_eba_desc_decode(vfgx_ctx *ctx, const void *buf, size_t len,
			 struct vfgx_eba_desc *d);

/* ---- discovery frames ------------------------------------------------- */

#define VFGX_EBA_ETHERTYPE 0x88B5
#define VFGX_EBA_FRAME_MAGIC 0x44474656u /* "VFGD" little-endian */
#define VFGX_EBA_FRAME_VERSION 1
#define VFGX_EBA_FRAME_HDR_LEN 24
#define VFGX_EBA_FRAME_MAX_DESCS 16      /* 24 + 16 * 88 = 1432 <= 1500 */

/*
 * A discovery frame is the payload of an Ethernet frame with EtherType
 * 0x88B5: 0 magic u32 | 4 version u16 | 6 count u16 (1..16) | 8 node_id u64 |
 * 16 seq u32 | 20 reserved u32 (=0) | 24 count descriptors.  Every
 * descriptor's node_id equals the frame's.
 */
struct vfgx_eba_frame {
	uint64_t node_id;
	uint32_t seq;
	uint16_t count;
	struct vfgx_eba_desc desc[VFGX_EBA_FRAME_MAX_DESCS];
};

int vfgx_eba_frame_encode(vfgx_ctx *ctx, const struct vfgx_eba_frame *f,
			  void *buf, size_t len);
/* Same errors as vfgx_eba_desc_decode; trailing bytes after the last
 * descriptor (Ethernet padding) are allowed. */
int vfgx_eba_frame_decode(vfgx_ctx *ctx, const void *buf, size_t len,
			  struct vfgx_eba_frame *f);

/* ---- peer table ------------------------------------------------------- */

struct vfgx_eba_peer {
	struct vfgx_eba_desc desc;
	uint8_t src_mac[6];   /* where the frame came from */
	uint64_t first_ns;    /* first seen (vfgx_now_ns clock) */
	uint64_t last_ns;     /* last announcement */
	uint64_t expires_ns;  /* last announcement + lease */
};

/* A peer announced within this long is live and never evicted. */
#define VFGX_EBA_PEER_STALE_NS 2000000000ull

/* A fixed-capacity table keyed by (node_id, buffer_id).  Pure data: the
 * caller passes the clock, so leases are testable without sleeping.
 * When full, a new key evicts the entry announced longest ago, if that was
 * more than stale_ns ago (VFGX_EBA_PEER_STALE_NS after init): a flood of
 * one-off keys with long leases cannot keep live peers out.
 * Not thread-safe. */
struct vfgx_eba_peer_table {
	struct vfgx_eba_peer *peers;
	uint32_t nb, cap;
	uint64_t stale_ns;
	uint64_t evicted;     /* entries replaced by new keys */
};

enum vfgx_eba_peer_event {
	VFGX_EBA_PEER_ADDED = 1,
	VFGX_EBA_PEER_RENEWED = 2,
	VFGX_EBA_PEER_CHANGED = 3, /* same key, different fields */
};

int vfgx_eba_peers_init(struct vfgx_eba_peer_table *t, uint32_t cap);
void vfgx_eba_peers_fini(struct vfgx_eba_peer_table *t);
/* Insert or renew.  Returns a vfgx_eba_peer_event, or -ENOSPC when full of
 * live peers (none announced more than stale_ns ago). */
int vfgx_eba_peers_update(struct vfgx_eba_peer_table *t,
			  const struct vfgx_eba_desc *d,
			  const uint8_t src_mac[6], uint64_t now_ns);
/* Remove peers whose lease ran out (expires_ns <= now_ns); each removed
 * peer is passed to cb (may be NULL) before it goes.  Returns how many. */
uint32_t vfgx_eba_peers_expire(struct vfgx_eba_peer_table *t, uint64_t now_ns,
			       void (*cb)(void *user,
					  const struct vfgx_eba_peer *p),
			       void *user);
const struct vfgx_eba_peer *vfgx_eba_peers_find(const struct vfgx_eba_peer_table *t,
						uint64_t node_id,
						uint32_t buffer_id);
/* Number of distinct node ids in the table. */
uint32_t vfgx_eba_peers_nodes(const struct vfgx_eba_peer_table *t);

/* ---- discovery over AF_PACKET ---------------------------------------- */

typedef struct vfgx_discovery vfgx_discovery;

struct vfgx_discovery_config {
	uint32_t argsz;           /* sizeof(struct vfgx_discovery_config) */
	const char *ifname;       /* required */
	uint64_t node_id;         /* 0: derived from the interface MAC */
	const struct vfgx_eba_desc *local; /* published; node_id/mac filled in */
	uint16_t nb_local;        /* 0: one CTRL descriptor (presence) */
	uint32_t lease_s;         /* for the default CTRL descriptor; 0: 30 */
	uint32_t interval_ms;     /* announce period; 0: 200 */
	uint32_t max_peers;       /* peer table capacity; 0: 256 */
};

#define VFGX_DISCOVERY_DEFAULT_PEERS 256
/* New table entries one source MAC may create per second (and in a burst):
 * a frame carries at most 16, a real node announces the same ones again. */
#define VFGX_DISCOVERY_NEW_PER_SRC 32
/* Source MACs whose rates are tracked; the least recent one is forgotten. */
#define VFGX_DISCOVERY_SOURCES 64

struct vfgx_discovery_stats {
	uint64_t tx_frames;
	uint64_t rx_frames;      /* every frame of our EtherType */
	uint64_t rx_valid;
	uint64_t rx_own;         /* our own node id, ignored */
	uint64_t rx_truncated;   /* counted and dropped */
	uint64_t rx_bad_magic;
	uint64_t rx_bad_version;
	uint64_t rx_malformed;   /* bad field or length */
	uint64_t table_full;     /* refused: the table holds only live peers */
	uint64_t rate_limited;   /* refused: the source added too many */
	uint64_t peers_evicted;  /* stale entries replaced by new ones */
	uint64_t peers_added;
	uint64_t peers_expired;
};

/* Event callback: added / renewed / changed, or 0 with expired = true. */
typedef void (*vfgx_discovery_event_fn)(void *user, const struct vfgx_eba_peer *p,
					int event, bool expired);

/* Needs CAP_NET_RAW.  Opens an AF_PACKET socket bound to ifname for our
 * EtherType.  Not thread-safe: one thread drives a discovery object. */
int vfgx_discovery_open(vfgx_ctx *ctx, const struct vfgx_discovery_config *cfg,
			vfgx_discovery **out);
void vfgx_discovery_close(vfgx_discovery *d);
void vfgx_discovery_set_events(vfgx_discovery *d, vfgx_discovery_event_fn fn,
			       void *user);
uint64_t vfgx_discovery_node_id(const vfgx_discovery *d);
/* Broadcast our descriptors once. */
int vfgx_discovery_announce(vfgx_discovery *d);
/* Feed one received frame payload (what follows the Ethernet header);
 * used by the socket loop, and by tests and fuzzing without a socket.
 * Returns 0 when accepted, or the decode error (already counted). */
int vfgx_discovery_input(vfgx_discovery *d, const void *payload, size_t len,
			 const uint8_t src_mac[6], uint64_t now_ns);
/* Announce every interval and receive until timeout_ms passes or
 * want_nodes distinct peer nodes are known (0: run for the whole timeout).
 * Expires leases as it goes.  Returns the number of known peer nodes. */
int vfgx_discovery_run(vfgx_discovery *d, uint32_t timeout_ms,
		       uint32_t want_nodes);
const struct vfgx_eba_peer_table *vfgx_discovery_peers(const vfgx_discovery *d);
void vfgx_discovery_stats(const vfgx_discovery *d,
			  struct vfgx_discovery_stats *st);

/* ---- message ring ------------------------------------------------------ */

/*
 * The ring lives in the consumer's exposed buffer: a data area of
 * `size` bytes (a power of two) and, elsewhere in the buffer, an 8-byte
 * little-endian state word holding `head`, the number of bytes the
 * consumer has released (monotonic).  Records are 16-byte aligned and
 * never wrap: [len u32 | seq u32 | check u64 | payload | pad to 16].
 * When a record does not fit before the end of the data area, the producer
 * writes a wrap marker (len = VFGX_RING_WRAP, same seq, no payload) and
 * starts again at offset 0.
 *
 * Completion: check = vfgx_ring_check(len, seq, payload), a 64-bit hash
 * the consumer recomputes over what it finds in memory.  The verbs spec
 * orders WRITEs on an RC QP as the responder executes them, not as a CPU
 * polling memory sees them land, so the header may be visible before the
 * payload (or part of it).  A record is delivered only when its seq is the
 * expected one and the check matches; until then it is "not yet" (peek
 * returns 0) and polled again.  One that still does not match
 * torn_ns after its header was first seen is torn: -EBADMSG and counted,
 * never delivered.  A stale header from an earlier lap has the wrong seq.
 *
 * Credit: the producer keeps `tail` and a cached copy of head.  Once the
 * cached credit (size - (tail - cached_head)) falls below half the ring it
 * starts one read of the state word (one RDMA READ) without waiting for
 * it, and picks its result up on a later send, so the send queue keeps
 * flowing while the head travels back; it waits for that read only when
 * a record does not fit the cached credit.  Any head value read is at
 * most the consumer's current one, so a late answer only understates the
 * free space.  A full ring is -EAGAIN: the producer waits, nothing is
 * overwritten.
 */
#define VFGX_RING_HDR 16
#define VFGX_RING_WRAP 0xFFFFFFFFu
#define VFGX_RING_MIN 64
#define VFGX_RING_TORN_NS 1000000000ull /* default consumer torn_ns */

static inline uint64_t vfgx_ring_rec_size(uint32_t len)
{
	return ((uint64_t)VFGX_RING_HDR + len + 15) & ~(uint64_t)15;
}

/* Largest payload a ring of `size` bytes accepts: a record plus the
 * worst-case wrap gap must fit, so half the ring minus the header. */
static inline uint32_t vfgx_ring_max_payload(uint64_t size)
{
	uint64_t m = size / 2 - VFGX_RING_HDR;

	return m > UINT32_MAX - 16 ? UINT32_MAX - 16 : (uint32_t)m;
}

/* The first 8 header bytes: len and seq. */
static inline uint64_t vfgx_ring_hdr_pack(uint32_t len, uint32_t seq)
{
	return (uint64_t)len | (uint64_t)seq << 32;
}

/* The check value of a record: a 64-bit hash of len, seq and the len
 * payload bytes (none for a wrap marker). */
uint64_t vfgx_ring_check(uint32_t len, uint32_t seq, const void *payload);

/* A record's 16 header bytes (little-endian) into hdr. */
void vfgx_ring_hdr_make(uint8_t hdr[VFGX_RING_HDR], uint32_t len, uint32_t seq,
			const void *payload);

/* One-sided operations on the consumer's buffer, by offset from byte 0 of
 * the exposed buffer.  write: place len bytes (wake: deliver a completion
 * to the consumer too, WRITE_WITH_IMM); read_start: start fetching the
 * 8-byte word at off (at most one in flight); read_poll: 1 with the word
 * in dst once it arrived, 0 while pending (wait: block until it arrives).
 * write and read_start may return -EAGAIN (send queue full) and are
 * retried.  0 or -errno.  write_rec (optional, NULL: two writes): place a
 * record's len-byte payload at off + VFGX_RING_HDR and its 16-byte header
 * at off, submitted together (RDMA: one post list, one doorbell); the
 * order they land in does not matter (the check value decides);
 * -EAGAIN as for write. */
struct vfgx_ring_transport {
	int (*write)(void *user, uint64_t off, const void *src, uint32_t len,
		     bool wake);
	int (*read_start)(void *user, uint64_t off);
	int (*read_poll)(void *user, void *dst, bool wait);
	void *user;
	int (*write_rec)(void *user, uint64_t off, const void *payload,
			 uint32_t len, const void *hdr, bool wake);
};

struct vfgx_ring_producer {
	struct vfgx_ring_transport tr;
	uint64_t size;        /* data area bytes, power of two */
	uint64_t data_off;    /* offset of the data area in the buffer */
	uint64_t state_off;   /* offset of the head word in the buffer */
	uint64_t tail;        /* bytes produced */
	uint64_t cached_head; /* last head read */
	uint32_t seq;         /* next record's seq (starts at 1) */
	uint64_t state_reads; /* RDMA READs of the head word */
	uint64_t full;        /* sends refused with -EAGAIN */
	bool read_busy;       /* a read of the head word is in flight */
};

struct vfgx_ring_consumer {
	uint8_t *data;             /* local data area */
	VFGX_ATOMIC_U64 *state;   /* local state word */
	uint64_t size;
	uint64_t head;             /* bytes released */
	uint32_t seq;              /* expected seq */
	bool ready;                /* the record at head passed its check */
	uint64_t torn_ns;          /* how long a header may wait for its
				    * payload; init: VFGX_RING_TORN_NS */
	uint64_t seen_ns;          /* when the unmatched header was first
				    * seen, 0: none */
	uint64_t not_yet;          /* polls that saw a header whose check
				    * did not match (yet) */
	uint64_t torn;             /* records given up as torn */
	int err;                   /* sticky: -EBADMSG / -EPROTO, 0: none */
};

/* 0 or -EINVAL (size not a power of two >= 64, state word overlapping the
 * data area or unaligned). */
int vfgx_ring_producer_init(struct vfgx_ring_producer *p,
			    const struct vfgx_ring_transport *tr,
			    uint64_t data_off, uint64_t size,
			    uint64_t state_off);
/* Free bytes the producer may use without reading the head word. */
static inline uint64_t vfgx_ring_credit(const struct vfgx_ring_producer *p)
{
	return p->size - (p->tail - p->cached_head);
}
/* Append one record.  0, -EAGAIN when the ring is full (after waiting for
 * a read of the head word), -EMSGSIZE when len > vfgx_ring_max_payload(size),
 * -EPROTO when the head word is impossible (beyond tail), or the
 * transport's error. */
int vfgx_ring_send(struct vfgx_ring_producer *p, const void *msg, uint32_t len,
		   bool wake);
/* Read the head word now (waiting for a read in flight, or one started
 * here) and update the cached head.  0, -EPROTO or the transport's error. */
int vfgx_ring_refresh(struct vfgx_ring_producer *p);

/* data: the local data area (zeroed by this call); state: the local,
 * 8-byte aligned state word (set to 0). */
int vfgx_ring_consumer_init(struct vfgx_ring_consumer *c, void *data,
			    uint64_t size, VFGX_ATOMIC_U64 *state);
/* Look at the next record in place: 1 with *msg and *len set (its check
 * matched), 0 when none has arrived or it is still landing, -EBADMSG when
 * its check has not matched for torn_ns (torn), -EPROTO when its length
 * has been beyond the ring for torn_ns.  The ring cannot go on after
 * either error.  The record stays valid until vfgx_ring_release(). */
int vfgx_ring_peek(struct vfgx_ring_consumer *c, const void **msg,
		   uint32_t *len);
/* Release the record returned by the last successful peek: advances head
 * and publishes it in the state word (release store). */
void vfgx_ring_release(struct vfgx_ring_consumer *c);


/* ---- channels over RDMA (built when VFGX_HAVE_RDMA) -------------------- */

/*
 * A channel is one connected RC queue pair plus the peer's descriptor: the
 * one-sided operations address the peer's exposed buffer by offset and are
 * checked against the descriptor's size before anything is posted (out of
 * bounds is -ERANGE locally, never sent).  Local memory is the channel's
 * registered `local` MR (by offset).  One thread per channel.
 */
typedef struct vfgx_channel vfgx_channel;

/* Fill a descriptor for an MR this node exposes (addr/rkey/size from the
 * registration, qpn from qp when not NULL, gid from the device). */
int vfgx_eba_desc_from_mr(const vfgx_rdma_mr *mr, vfgx_rdma_qp *qp,
			  uint64_t node_id, uint32_t buffer_id,
			  enum vfgx_eba_type type, uint64_t state_off,
			  uint32_t lease_s, struct vfgx_eba_desc *out);
/* rdma_cm carries only addr/rkey/len in its private data (56 bytes), so
 * full descriptors go as the connection's first message: each side posts
 * a receive, sends its encoded descriptor and waits for the peer's.
 * The peer's descriptor is decoded with every check.  0 or -errno. */
int vfgx_eba_exchange(vfgx_rdma_qp *qp, const struct vfgx_eba_desc *mine,
		      struct vfgx_eba_desc *theirs, int timeout_ms);

int vfgx_channel_open(vfgx_rdma_qp *qp, const struct vfgx_eba_desc *remote,
		      vfgx_rdma_mr *local, vfgx_channel **out);
void vfgx_channel_close(vfgx_channel *ch);
const struct vfgx_eba_desc *vfgx_channel_remote(const vfgx_channel *ch);
/* Write len bytes from local+loff to the peer's buffer at roff.  Posted
 * (completes later: vfgx_channel_fence); -ERANGE when roff+len exceeds the
 * descriptor's size, -EFAULT when loff+len exceeds the local MR. */
int vfgx_channel_write(vfgx_channel *ch, uint64_t roff, size_t loff,
		       uint32_t len);
/* Read len bytes of the peer's buffer at roff into local+loff; valid after
 * vfgx_channel_fence().  Same checks as write. */
int vfgx_channel_read(vfgx_channel *ch, uint64_t roff, size_t loff,
		      uint32_t len);
/* Wait until every operation posted on the channel completed; the first
 * failure's status (remote access error: -EACCES) or -ETIMEDOUT. */
int vfgx_channel_fence(vfgx_channel *ch, int timeout_ms);

/* Message ring producer on a channel whose remote descriptor is an RX
 * buffer holding a ring of ring_size data bytes at offset 0 and its head
 * word at the descriptor's state_off.  -EINVAL when the descriptor cannot
 * hold that ring, or when the local MR is GPU memory (records carry a
 * check value computed on the CPU). */
int vfgx_channel_ring_init(vfgx_channel *ch, uint64_t ring_size);
/* Append one record; msg must lie in the local MR (sent without a copy)
 * and stay unchanged until the next fence.  Waits while the ring is full
 * (re-reading the head word) up to timeout_ms: -ETIMEDOUT when the
 * consumer never made room.  wake: the header goes as WRITE_WITH_IMM. */
int vfgx_channel_ring_send(vfgx_channel *ch, const void *msg, uint32_t len,
			   bool wake, int timeout_ms);
const struct vfgx_ring_producer *vfgx_channel_ring(const vfgx_channel *ch);
/* Wait (re-reading the head word) until the consumer has released every
 * record sent: 0, or -ETIMEDOUT after timeout_ms. */
int vfgx_channel_ring_drain(vfgx_channel *ch, int timeout_ms);
/* Consumer side: keep `n` zero-length receives posted for wake-ups, and
 * wait up to timeout_ms for one (WRITE_WITH_IMM from the producer).
 * Returns 1 woken, 0 timed out, or -errno. */
int vfgx_channel_wake_arm(vfgx_rdma_qp *qp, vfgx_rdma_mr *mr, uint32_t n);
int vfgx_channel_wake_wait(vfgx_rdma_qp *qp, vfgx_rdma_mr *mr,
			   int timeout_ms);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
