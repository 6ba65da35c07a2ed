/* pt_capture.h: an Intel PT capture opened for decoding: a perf.data (file or
 * pipe mode) written by rearview, softpt or `perf record -e intel_pt//`, or a
 * capture directory holding one (DIR/perf.data or perf's DIR/data, with
 * DIR/vdso.so and DIR/kcore_dir/ when present; for a perf.data file, DIR is
 * the directory it is in).
 *
 * Opening reads the whole sideband: AUXTRACE_INFO (the PT configuration),
 * TIME_CONV, the cpuid (CPU errata), COMM/FORK/EXIT (threads and their
 * names), MMAP/MMAP2 (each process's code, put into a libipt image through
 * one shared section cache, and into the symbolizer), ITRACE_START and
 * SWITCH/SWITCH_CPU_WIDE (which task ran on which CPU when). Code comes from
 * the mapped files as the capture names them; the vdso from DIR/vdso.so;
 * kernel code (when asked for, and only if the kernel was traced) from
 * DIR/kcore_dir/kcore, or from `vmlinux` relocated by the KASLR offset: the
 * capture's kallsyms' _stext (or _text), else the address perf's kernel MMAP
 * gives its reference symbol, minus vmlinux's; modules' code from kcore
 * only. Files that cannot be found or read are listed (rv_pt_capture_missing)
 * rather than failing the open, each with why. The kernel's MMAPs are
 * reported to the symbolizer too (with include_kernel), for the kernel's
 * names.
 *
 * Without include_kernel, in a capture that traced the kernel, nothing at
 * a kernel address reaches the sink: an entry into the kernel becomes the
 * end of the trace (to 0, RV_BRANCH_TRACE_END), the return to user space
 * its beginning (from 0, RV_BRANCH_TRACE_BEGIN), and the kernel's own
 * branches are dropped, as if only user space had been traced; the decode
 * errors the kernel's part leaves are still counted against it.
 *
 * Decoding hands the sink, per thread and in time order within each thread:
 * RV_EVENT_THREAD_NAME when a thread is first seen or renamed, the branch and
 * error events of its trace, and RV_EVENT_THREAD_EXIT. Per-thread buffers are
 * decoded with their thread's process image; per-CPU buffers are attributed
 * to threads by the sideband: a task owns its CPU from its SWITCH IN (or
 * ITRACE_START, or exec) record on, and a stretch of trace that begins
 * (TIP.PGE) up to a microsecond before a task's IN record is that task's, as
 * the kernel enables a task's PT event just before it writes the record.
 *
 * Images are kept per process and per exec: the mappings a process had before
 * an exec are used for its trace before the exec's time, the new ones after.
 * A forked process starts with its parent's mappings. Within one generation
 * the newest mapping of an address wins for the whole generation (munmap is
 * not in the sideband).
 *
 * In snapshot mode each AUXTRACE record is decoded on its own, from its first
 * PSB (the bytes before it are skipped): snapshots of one buffer are decoded
 * separately and in order. In full mode the records of one buffer (idx, with
 * its thread and CPU) that go on where the previous one ended (its offset
 * plus its size, less the zero padding to 8 bytes) are joined into one
 * stream and decoded as one, so nothing is lost at the cuts. The AUX data of
 * a PERF_SAMPLE_AUX sample (an in-kernel snapshot a gate's event takes) is a
 * snapshot of its own: decoded from its first PSB as a buffer of the
 * sample's thread (and CPU, in a per-CPU capture), in file order with the
 * AUXTRACE records. rv_pt_capture_info's buffers counts what is decoded
 * separately: joined streams once, and samples.
 *
 * A capture recorded with --filter on a kernel that cannot pause Intel PT
 * holds the whole trace and a window mark (capture/marks.h) per --filter
 * window; decoding applies them. Per thread, its branch and error events are
 * handed to the sink only strictly inside one of its windows (begin, end),
 * and at each window's end comes an RV_EVENT_WINDOW (its time the end), so
 * that the trace builder ends the thread's stacks there and draws the
 * window; a window nothing ran in still comes (before the thread's
 * THREAD_EXIT, or once all buffers are decoded). Windows that ended before
 * any trace are left out. This runs where the events reach the sink, after
 * the per-CPU merge, so the output stays deterministic. Captures without
 * window marks decode as if this paragraph did not exist.
 *
 * Window marks of a gated recording (PT paused outside the windows) and
 * --trigger hits are only drawn: each comes as an RV_EVENT_WINDOW or
 * RV_EVENT_TRIGGER of its thread, in time order with its events, and nothing
 * is left out.
 *
 * The caller makes the symbolizer before opening (open reports the mappings
 * to it); a capture's own kernel symbols are at
 * rv_pt_capture_probe_kallsyms(path), to be passed as its kallsyms_path.
 *
 * Not here: the packet decoding itself (pt_decoder.h), call stacks, writing.
 */
#ifndef RV_DECODE_PT_CAPTURE_H
#define RV_DECODE_PT_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/pt_decoder.h"
#include "symbolize/symbolizer.h"
#include "util/error.h"

struct rv_pt_capture_options {
	const char *path;    /* perf.data, "-" for standard input, or a capture directory */
	const char *vmlinux; /* --vmlinux, or NULL */
	bool include_kernel; /* decode and name kernel code (else kernel parts are gaps) */
	unsigned jobs;	     /* decoding threads (see rv_pt_decode_options.jobs) */
	size_t chunk_bytes;  /* see rv_pt_decode_options.chunk_bytes; 0: the default */
	bool progress;	     /* report progress on stderr (the caller checks it is a tty) */
	/* which walker decodes (rv_pt_decode_options.decoder), every buffer */
	enum rv_pt_decoder_choice decoder;
	/* path's perf.data, already open (decode/decoder.h opens it once to
	 * tell its kind); borrowed, used from its first record. NULL: opened
	 * here. */
	struct rv_perf_reader *reader;
};

struct rv_pt_capture;

/* Reads the capture's sideband, builds the images and reports every
 * executable mapping to the symbolizer (which may be NULL: no symbols).
 * Fails with a clear message when the file is not a perf.data, holds no
 * Intel PT trace (-ENOTSUP, naming what it holds instead, e.g. samples;
 * decode/decoder.h sends a capture that names no Intel PT event to the
 * sample or function decoder before this), or is damaged before its first
 * AUXTRACE record. */
int rv_pt_capture_open(struct rv_pt_capture **out, const struct rv_pt_capture_options *options,
		       struct rv_symbolizer *symbolizer, struct rv_error *err);

/* The kallsyms file a capture at `path` (as in rv_pt_capture_options.path)
 * carries, DIR/kcore_dir/kallsyms, for the symbolizer's kallsyms_path: a
 * malloc'd path, or NULL when it has none. Reads nothing but the directory. */
char *rv_pt_capture_probe_kallsyms(const char *path);

/* The same for an open capture, or NULL; valid until the capture is freed. */
const char *rv_pt_capture_kallsyms(const struct rv_pt_capture *c);

/* Damage found past the first AUXTRACE record (a truncated or corrupt
 * record): reading stopped there, what came before is decoded, and this says
 * what and where, for the caller's warning. NULL when the capture is whole. */
const char *rv_pt_capture_damage(const struct rv_pt_capture *c);

/* Decodes every AUXTRACE buffer into the sink; stats are summed over all
 * buffers. Per-thread buffers are decoded one thread after another, each
 * with `jobs` threads. Per-CPU buffers are decoded all at once, each CPU's on
 * its own thread (jobs shared among them) into a bounded queue, and merged by
 * time, so that each thread's events reach the sink in time order and memory
 * stays bounded by the queues, not by the trace. Returns negative only when
 * the sink failed (its error) or memory ran out. */
int rv_pt_capture_decode(struct rv_pt_capture *c, rv_pt_sink_fn sink, void *sink_ctx,
			 struct rv_pt_stats *stats, struct rv_error *err);

/* rv_pt_capture_decode, with the sink's batch form (events.h; NULL: none)
 * for the events that reach the sink as they came from the decoder. */
int rv_pt_capture_decode_batches(struct rv_pt_capture *c, rv_pt_sink_fn sink,
				 rv_event_batch_fn sink_batch, void *sink_ctx,
				 struct rv_pt_stats *stats, struct rv_error *err);

struct rv_pt_missing {
	const char *path;	/* as the capture names it ("[kernel.kallsyms]" for the kernel) */
	const char *reason;	/* why its code could not be read: "no such file", ... */
	uint64_t mappings;	/* how many mappings of it */
	uint64_t errors;	/* decode errors at addresses it covers */
	uint64_t skipped_bytes; /* trace from those errors to the next PSB */
	bool kernel;		/* the kernel or one of its modules */
};

/* Binaries the capture maps that could not be read (kernel and modules
 * included when the kernel was traced and its code is not available); after
 * decoding, with what their absence cost. The array is valid until the next
 * call or until the capture is freed. */
size_t rv_pt_capture_missing(const struct rv_pt_capture *c, const struct rv_pt_missing **out);

struct rv_pt_capture_info {
	uint64_t buffers;     /* stretches decoded on their own (see above) */
	uint64_t trace_bytes; /* their sizes summed */
	bool per_cpu;	      /* per-CPU buffers (else per-thread) */
	bool snapshot;	      /* snapshot mode */
	bool kernel;	      /* the kernel was traced */
	uint64_t threads;
	/* The earliest time a buffer's trace starts at (its first TSC packet,
	 * in the capture's clock), 0 when no buffer has one: the trace's zero,
	 * since threads are decoded one after another and a later one may have
	 * started first. */
	uint64_t first_time;
	/* --filter windows applied while decoding (see above); 0: none. The
	 * first window's begin counts towards first_time, applied or not. */
	uint64_t windows;
};
void rv_pt_capture_info(const struct rv_pt_capture *c, struct rv_pt_capture_info *out);

/* The packets in every buffer (rv_pt_count_packets over each), for --stats. */
uint64_t rv_pt_capture_count_packets(const struct rv_pt_capture *c);

void rv_pt_capture_free(struct rv_pt_capture *c);

#endif
