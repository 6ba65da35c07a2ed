/* pt_capture.h: an Intel PT capture opened for decoding: a perf.data (file or
 * pipe mode) written by rearview, softpt or `perf record -e intel_pt//`, or a
 * capture directory holding one (DIR/perf.data or perf's DIR/data, with
 * DIR/vdso.so and DIR/kcore_dir/ when present).
 *
 * Opening reads the whole sideband: AUXTRACE_INFO (the PT configuration),
 * TIME_CONV, the cpuid (CPU errata), COMM/FORK/EXIT (threads and their
 * names), MMAP/MMAP2 (each process's code, put into a libipt image through
 * one shared section cache, and into the symbolizer), ITRACE_START and
 * SWITCH/SWITCH_CPU_WIDE (which task ran on which CPU when). Code comes from
 * the mapped files as the capture names them; the vdso from DIR/vdso.so;
 * kernel code from DIR/kcore_dir/kcore, or from `vmlinux` relocated by the
 * KASLR offset the capture's kallsyms gives. Files that cannot be found are
 * listed (rv_pt_capture_missing) rather than failing the open.
 *
 * Decoding hands the sink, per thread and in time order within each thread:
 * RV_EVENT_THREAD_NAME when a thread is first seen or renamed, the branch and
 * error events of its trace, and RV_EVENT_THREAD_EXIT. Per-thread buffers are
 * decoded with their thread's process image; per-CPU buffers are attributed
 * to threads by the context-switch sideband.
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
	const char *path;	/* perf.data, "-" for standard input, or a capture directory */
	const char *vmlinux;	/* --vmlinux, or NULL */
	bool include_kernel;	/* decode and name kernel code (else kernel parts are gaps) */
	unsigned jobs;		/* decoding threads (see rv_pt_decode_options.jobs) */
	bool progress;		/* report progress on stderr (the caller checks it is a tty) */
};

struct rv_pt_capture;

/* Reads the capture's sideband, builds the images and reports every
 * executable mapping to the symbolizer. Fails with a clear message when the
 * file is not a perf.data, holds no Intel PT trace (naming what it holds
 * instead), or is damaged before its first AUXTRACE record. */
int rv_pt_capture_open(struct rv_pt_capture **out, const struct rv_pt_capture_options *options,
		       struct rv_symbolizer *symbolizer, struct rv_error *err);

/* The kallsyms file for kernel symbols (DIR/kcore_dir/kallsyms, or NULL when
 * the capture has none); valid until the capture is freed. */
const char *rv_pt_capture_kallsyms(const struct rv_pt_capture *c);

/* Decodes every AUXTRACE buffer into the sink; stats are summed over all
 * buffers. Damage past the first buffer is reported as a warning and what
 * was decoded is kept. */
int rv_pt_capture_decode(struct rv_pt_capture *c, rv_pt_sink_fn sink, void *sink_ctx,
			 struct rv_pt_stats *stats, struct rv_error *err);

struct rv_pt_missing {
	const char *path;     /* as the capture names it */
	uint64_t mappings;    /* how many mappings of it */
	uint64_t errors;      /* decode errors at addresses it covers */
	uint64_t skipped_bytes; /* trace that could not be decoded because of it */
};

/* Binaries the capture maps that could not be read; after decoding, with
 * what their absence cost. */
size_t rv_pt_capture_missing(const struct rv_pt_capture *c, const struct rv_pt_missing **out);

struct rv_pt_capture_info {
	uint64_t buffers;	/* AUXTRACE records */
	uint64_t trace_bytes;	/* their sizes summed */
	bool per_cpu;		/* per-CPU buffers (else per-thread) */
	bool snapshot;		/* snapshot mode */
	bool kernel;		/* the kernel was traced */
	uint64_t threads;
};
void rv_pt_capture_info(const struct rv_pt_capture *c, struct rv_pt_capture_info *out);

void rv_pt_capture_free(struct rv_pt_capture *c);

#endif
