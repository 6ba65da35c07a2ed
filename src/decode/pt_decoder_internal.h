/* pt_decoder_internal.h: what the parts of the Intel PT decoder share.
 * Private to them:
 *
 *   pt_decoder.c  the contract's entry: rv_pt_decode sets the decoding up
 *                 (errata, the block decoder's flags), and the helpers of
 *                 pt_decoder.h (stats, packets, --cpu, error texts)
 *   pt_psb.c      PSB+ headers: finding them and reading what they hold
 *   pt_walk.c     one chunk's walk with libipt's block decoder, or with
 *                 the fast walker (pt_fast.c) and libipt's where it hands
 *                 the chunk over, into records
 *   pt_pool.c     the chunks, the decoding threads, and the sink's side:
 *                 records into rv_events in buffer order, seams stitched
 *
 * The buffer is cut into chunks that begin at a PSB; each chunk gets its own
 * block decoder over [chunk begin, chunk end) and writes compact records into
 * pages, which the calling thread turns into rv_events for the sink in chunk
 * order. The calling thread decodes too: the chunk the sink is at, straight
 * into the sink, when no other thread has taken it; the other threads take
 * chunks ahead and queue their pages.
 *
 * The seam between two chunks: the earlier chunk's decoder, out of packets,
 * keeps walking code that needs none until it needs a packet, while the next
 * chunk starts at its PSB's FUP address S. Past the last packet the earlier
 * decoder stops where it reaches S (counting the instructions of a block up
 * to S when S is inside it), and the next chunk's trace-begin at S is dropped
 * then. Where the earlier chunk did not reach S (an error on its way, or
 * tracing off), the next chunk's decoding really restarts at S and keeps its
 * trace begin. An error seen past the last packet before a PSB resumes at
 * that PSB (libipt would skip to the one after it, having read the PSB+
 * ahead), so the whole buffer decodes the same way whatever the cuts.
 */
#ifndef RV_DECODE_PT_DECODER_INTERNAL_H
#define RV_DECODE_PT_DECODER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

#include "decode/pt_decoder.h"
#include "util/error.h"

/* ---- records: what a chunk's walk produces, 32 bytes each ---- */

#define PTD_PAGE_RECORDS 2048

enum ptd_record_type {
	PTD_REC_BRANCH, /* a: from, b: to */
	PTD_REC_ERROR,	/* a: offset in the buffer, b: ip; code */
	PTD_REC_TASK,	/* a: pid, b: tid (the records after it are that task's) */
};

/* In a PTD_REC_BRANCH's flags next to RV_BRANCH_*: the trace begin of a
 * chunk's first synchronisation, dropped when the previous chunk ran into
 * it. */
#define PTD_REC_SEAM 0x80u

/* In a record's extra bits. */
#define PTD_REC_OVERFLOW 0x1u /* PTD_REC_ERROR: an OVF, not a decode error */

/* Laid out for the sink (pt_pool.c): a branch's ends are one 16-byte load,
 * and a plain branch's last 8 bytes (type PTD_REC_BRANCH, which is 0, no
 * PTD_REC_SEAM, extra and pad 0) are its event's branch.kind and
 * branch.flags as they are. */
struct ptd_record {
	uint64_t a, b;
	uint64_t time; /* TSC (or libipt's relative time) */
	union {
		uint32_t kind; /* PTD_REC_BRANCH: an rv_branch_kind, below 256 */
		int32_t code;  /* PTD_REC_ERROR */
	};
	uint8_t flags, type, extra, pad;
};

_Static_assert(sizeof(struct ptd_record) == 32, "records stay small");

/* A record's last 8 bytes as one word, as put() (pt_walk.c) stores them
 * and the sink reads them: its kind (a branch's; 0 else) or code (an
 * error's; 0 else) lowest, then flags, type, extra and pad (x86 is
 * little-endian). */
_Static_assert(offsetof(struct ptd_record, kind) == 24 && offsetof(struct ptd_record, code) == 24 &&
		       offsetof(struct ptd_record, flags) == 28 &&
		       offsetof(struct ptd_record, type) == 29 &&
		       offsetof(struct ptd_record, extra) == 30 &&
		       offsetof(struct ptd_record, pad) == 31,
	       "a record's tail is one word");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the first byte is the lowest");

static inline uint64_t ptd_record_tail(uint8_t type, uint8_t kind, uint8_t flags, uint8_t extra,
				       int32_t code)
{
	return ((uint32_t)code | kind) | (uint64_t)flags << 32 | (uint64_t)type << 40 |
	       (uint64_t)extra << 48;
}

struct ptd_page {
	struct ptd_page *next;
	size_t nr;
	struct ptd_record records[PTD_PAGE_RECORDS];
};

/* ---- PSB+ headers (pt_psb.c) ---- */

struct ptd_psb {
	size_t end;  /* offset of the PSBEND */
	bool has_ip; /* the header's FUP: tracing is on, at ip */
	uint64_t ip;
	bool has_tsc;
	uint64_t tsc;
};

/* An IP packet's address from the last one (*valid false when the packet
 * holds none). */
uint64_t ptd_apply_ip(uint64_t last, const struct pt_packet_ip *p, bool *valid);

/* Reads the PSB+ at offset (which must hold the PSB pattern): true when it
 * parses up to its PSBEND. */
bool ptd_parse_psb(const uint8_t *buf, size_t size, size_t offset, const struct pt_config *base,
		   struct ptd_psb *out);

/* The first PSB at or after from whose PSB+ parses; size if none. */
size_t ptd_find_psb(const uint8_t *buf, size_t size, size_t from, const struct pt_config *base,
		    struct ptd_psb *info);

/* The PSB whose PSB+ header ends at psbend (libipt's read-ahead stops
 * there), or size when psbend is not at the end of one. */
size_t ptd_psb_ending_at(const uint8_t *buf, size_t size, size_t psbend,
			 const struct pt_config *base);

/* The last PSB in buf[lo, hi) whose PSB+ parses; hi if none. */
size_t ptd_last_psb_before(const uint8_t *buf, size_t size, size_t lo, size_t hi,
			   const struct pt_config *base);

/* ---- chunks and the shared decoding state ---- */

struct ptd_chunk {
	uint64_t index;
	size_t begin, end;
	struct ptd_psb first; /* the PSB+ at begin */
	bool has_next;	      /* a PSB follows at end ... */
	struct ptd_psb next;  /* ... with this header */

	/* Written by the decoding thread; read by the sink's thread once
	 * published (under the pool's lock when threads decode). */
	struct ptd_page *pages, *last_page;
	bool claimed; /* a thread decodes it */
	bool done;
	bool passed_next; /* the decoder reached next.ip past its last packet */
	bool fast;	  /* the fast walker decoded it all */
	bool handoff;	  /* the fast walker handed it to libipt's decoder */
	uint64_t insns, blocks, skipped_bytes;
	uint64_t dropped_jumps; /* jumps inside one function, not emitted */
	int status;
	struct rv_error err;
};

struct ptd_pool; /* the decoding threads (pt_pool.c) */

struct ptd_decode {
	const uint8_t *buf;
	size_t size;
	const struct rv_pt_decode_options *options;
	struct pt_config config; /* errata applied, blocks end at direct branches */
	size_t chunk_bytes;

	/* chunk boundaries: the next chunk starts at next_begin */
	size_t next_begin;
	struct ptd_psb next_first;
	uint64_t next_index;

	/* the sink's side */
	rv_pt_sink_fn sink;
	rv_pt_batch_fn sink_batch; /* NULL: sink, one event at a time */
	struct rv_event *batch;	   /* the batch sink_batch is given (pt_pool.c) */
	void *sink_ctx;
	struct rv_pt_stats *stats;
	uint32_t pid, tid;
	bool prev_passed;
	uint64_t insns_total; /* for max_insns (sequential decoding only) */
	bool stop;

	struct ptd_pool *pool; /* NULL: the calling thread decodes */
	struct ptd_page *free_pages;
	size_t nr_free_pages;
};

/* ---- one chunk's walk (pt_walk.c) ---- */

/* What one decoding thread keeps from chunk to chunk: its instruction
 * decoder and caches, and its own copies of the images when threads decode
 * at once (copy_images). */
struct ptd_thread;

int ptd_thread_new(struct ptd_thread **out, const struct ptd_decode *d, bool copy_images,
		   struct rv_error *err);
void ptd_thread_free(struct ptd_thread *t);

/* Decodes chunk ch on thread t into pages: handed to the sink as they fill
 * when `direct` (the chunk the sink is at) or there is no pool, else queued
 * on the chunk. Returns 0, or negative (err set) when decoding must stop. */
int ptd_walk_chunk(struct ptd_decode *d, struct ptd_thread *t, struct ptd_chunk *ch, bool direct,
		   struct rv_error *err);

/* ---- pages and the sink's side (pt_pool.c) ---- */

/* An empty page: a free one, else a new one; NULL when memory is short. */
struct ptd_page *ptd_page_get(struct ptd_decode *d);

/* Gives a page back for reuse. */
void ptd_page_put(struct ptd_decode *d, struct ptd_page *p);

/* Hands a full (or the last) page of chunk ch over to the sink's side: to
 * the sink at once when `direct` or there is no pool, else queued on the
 * chunk. Returns 0, or negative when decoding must stop. */
int ptd_publish(struct ptd_decode *d, struct ptd_chunk *ch, struct ptd_page *p, bool direct,
		struct rv_error *err);

/* Decodes d's buffer from d->next_begin on, with `jobs` threads (the
 * calling one included; <= 1, or a buffer of one chunk: it only), into d's
 * sink and stats. */
int ptd_decode_chunks(struct ptd_decode *d, unsigned jobs, struct rv_error *err);

#endif
