/* pt_capture_internal.h: what pt_capture.c (opening: sideband, images,
 * kernel) and pt_capture_decode.c (decoding: per-thread and per-CPU buffers,
 * the merge, progress) share about an open capture. Private to those two.
 *
 * Everything here is built by rv_pt_capture_open and only read afterwards,
 * except the per-thread decode state and the missing list's counters, which
 * only the thread that called rv_pt_capture_decode touches.
 */
#ifndef RV_DECODE_PT_CAPTURE_INTERNAL_H
#define RV_DECODE_PT_CAPTURE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "decode/pt_capture.h"
#include "symbolize/symtab.h"

/* perf's -1 for "no task" or "no CPU" in sideband and AUXTRACE records. */
#define PTC_NONE UINT32_MAX

/* The lowest kernel address on x86-64 (the canonical high half). */
#define PTC_KERNEL_START 0xffff800000000000ull

/* Strings that live as long as the capture. */
struct ptc_arena_block;
struct ptc_arena {
	struct ptc_arena_block *blocks;
};

/* An executable mapping, of a process or of the kernel (pid -1 MMAPs). */
struct ptc_mapping {
	uint64_t start, end, pgoff;
	const char *path; /* as the capture names it */
	int isid;	  /* in the section cache; 0 when its code could not be read */
	size_t missing;	  /* index in the missing list, or SIZE_MAX */
};

/* What a section of the shared cache was made from, so that a decoding thread
 * can make its own (rv_pt_populate_fn). */
struct ptc_section {
	char *file;
	uint64_t offset, size, vaddr;
};

struct ptc_mappings {
	struct ptc_mapping *v;
	size_t nr, cap;
};

/* A process between two execs: its mappings, and the libipt image made of
 * them (the kernel's sections included). */
struct ptc_generation {
	uint64_t time; /* when it began: the exec (0 for the first one seen) */
	struct pt_image *image;
	struct ptc_mappings maps;
	struct rv_symtab_ranges functions; /* of its readable mappings, for function_at */
};

struct ptc_process {
	uint32_t pid;
	struct ptc_generation *gens; /* in time order */
	size_t nr_gens, cap_gens;
};

struct ptc_comm {
	uint64_t time;
	const char *name;
};

struct ptc_thread {
	uint32_t tid, pid;
	struct ptc_comm *comms; /* in time order */
	size_t nr_comms, cap_comms;
	bool exited;
	uint64_t exit_time;

	/* decode state: the sink has been told the name comms[named_comm] */
	bool named;
	size_t named_comm;
	bool has_events;
	bool exit_sent;
	uint64_t last_time;

	/* --filter windows applied while decoding: c->windows[win_first, +
	 * win_nr) are this thread's, in time order; win_next is the first one
	 * not yet handed to the sink (decode state). */
	size_t win_first, win_nr, win_next;
};

/* A --filter window of a thread, from a window mark of an ungated recording
 * (the kernel could not pause Intel PT): the thread's trace is kept only
 * strictly between begin and end, and the window is handed to the sink at
 * its end. The windows of one thread do not overlap. */
struct ptc_window {
	uint32_t pid, tid;
	uint64_t begin, end; /* the capture's clock; a trigger hit: both its time */
	uint32_t flags;	     /* RV_MARK_FLAG_* */
	bool trigger;	     /* a --trigger hit, not a window */
	const char *name;    /* in the arena */
};

/* From `time` on, task pid/tid runs on the CPU. */
struct ptc_switch {
	uint64_t time;
	uint32_t pid, tid;
};

struct ptc_cpu {
	uint32_t cpu;
	struct ptc_switch *points; /* in time order */
	size_t nr, cap;
};

/* A stretch of trace decoded on its own, from its first PSB: an AUXTRACE
 * record (snapshot mode), the contiguous AUXTRACE records of one buffer
 * joined (full mode), or the AUX data of a PERF_SAMPLE_AUX sample (an
 * in-kernel snapshot; aux.idx PTC_NONE, its tid and cpu the sample's). */
struct ptc_buffer {
	struct rv_perf_auxtrace aux; /* size: of the whole stretch */
	const uint8_t *data;	     /* the payload, inside the reader's mapping or pipe copy,
				      * or `joined` */
	uint64_t size;		     /* bytes of trace: min(aux.size, payload) */
	uint8_t *joined;	     /* pieces joined into one allocation, owned; or NULL */
	size_t pieces;		     /* AUXTRACE records in the stretch (0 for a sample's) */
};

struct ptc_missing {
	struct rv_pt_missing pub;
	bool kernel; /* the kernel or a module: errors at kernel addresses */
};

/* An id -> index map (open addressing), for threads and processes. */
struct ptc_index {
	uint64_t *slots; /* (id << 32 | index + 1), 0 when empty */
	size_t cap;	 /* a power of two, or 0 */
	size_t count;
};

struct rv_pt_capture {
	struct rv_perf_reader *reader;
	char *path;	/* what the reader opened */
	char *dir;	/* the capture's directory, or NULL (stdin) */
	char *kallsyms; /* DIR/kcore_dir/kallsyms, or NULL */
	char *kcore;	/* DIR/kcore_dir/kcore, or NULL */
	char *vdso;	/* DIR/vdso.so, or NULL */
	char *vmlinux;	/* options.vmlinux, or NULL */
	char *damage;	/* why reading stopped early, or NULL */
	bool include_kernel;
	unsigned jobs;
	size_t chunk_bytes;
	bool progress;
	struct rv_symbolizer *symbolizer;
	struct ptc_arena arena;

	struct rv_intel_pt_info info;
	struct rv_perf_time_conv time_conv;
	bool have_time_conv;
	struct pt_config config; /* cpu, errata and timing; no buffer */
	bool kernel_traced;	 /* the intel_pt event did not exclude the kernel */
	bool per_cpu;

	struct pt_image_section_cache *iscache;
	struct ptc_section *sections; /* by isid */
	size_t nr_sections, cap_sections;
	int *kernel_isids; /* sections of kernel code, added to every image */
	size_t nr_kernel_isids, cap_kernel_isids;
	bool kernel_loaded;		 /* kernel code was read (kcore or vmlinux) */
	bool kcore_loaded;		 /* from kcore, which holds the modules too */
	const char *kernel_reason;	 /* why not, for the missing list */
	struct pt_image *kernel_image;	 /* kernel sections only: unknown tasks */
	struct ptc_mappings kernel_maps; /* pid -1 MMAPs: the kernel and its modules */

	struct ptc_process *processes;
	size_t nr_processes, cap_processes;
	struct ptc_index process_index;

	struct ptc_thread *threads;
	size_t nr_threads, cap_threads;
	struct ptc_index thread_index;

	struct ptc_cpu *cpus;
	size_t nr_cpus, cap_cpus;

	struct ptc_window *windows; /* sorted by tid, then time */
	size_t nr_windows, cap_windows; /* window and trigger marks */
	size_t nr_applied;		/* windows to apply (RV_MARK_FLAG_APPLY) */
	size_t windows_before_trace; /* window marks left out: they ended before any trace */

	struct ptc_buffer *buffers; /* in file order */
	size_t nr_buffers, cap_buffers;
	uint64_t trace_bytes;

	struct ptc_missing *missing;
	size_t nr_missing, cap_missing;
	struct rv_pt_missing *missing_pub; /* filled by rv_pt_capture_missing */
};

const struct ptc_thread *ptc_thread_find(const struct rv_pt_capture *c, uint32_t tid);
/* The TSC of the PSB+ at offset (d's buffer), in the capture's clock;
 * UINT64_MAX when that PSB+ has none. */
uint64_t ptc_psb_time(const struct rv_pt_capture *c, struct pt_packet_decoder *d, uint64_t offset);

/* pt_iscache_add_file, remembering what the section was made from: the isid,
 * or a negative libipt code. */
int ptc_add_section(struct rv_pt_capture *c, const char *file, uint64_t offset, uint64_t size,
		    uint64_t vaddr);

/* The sections an image of the capture (a generation's or the kernel's) was
 * made of, in the order they were added; 0 and *isids NULL when the image is
 * not one of the capture's. Up to `max` are stored; returns how many there are. */
size_t ptc_image_sections(const struct rv_pt_capture *c, const struct pt_image *image, int *isids,
			  size_t max);

struct ptc_thread *ptc_thread_find_mut(struct rv_pt_capture *c, uint32_t tid);
const struct ptc_process *ptc_process_find(const struct rv_pt_capture *c, uint32_t pid);

/* The process's generation at `time` (the last exec at or before it, else
 * the first); NULL when pid is unknown. */
const struct ptc_generation *ptc_generation_at(const struct ptc_process *p, uint64_t time);

/* The task running on cpu at time by the switch sideband; false when the
 * sideband says nothing about that CPU before `time`. */
bool ptc_task_at(const struct ptc_cpu *cpu, uint64_t time, uint32_t *pid, uint32_t *tid);
const struct ptc_cpu *ptc_cpu_find(const struct rv_pt_capture *c, uint32_t cpu);

/* The missing-list entry whose code would be at ip in process pid at time, or
 * SIZE_MAX. */
size_t ptc_missing_at(const struct rv_pt_capture *c, uint32_t pid, uint64_t time, uint64_t ip);

/* The thread's name at `time`: index into its comms, or SIZE_MAX when none. */
size_t ptc_comm_at(const struct ptc_thread *t, uint64_t time);

#endif
