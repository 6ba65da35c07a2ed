/* pt_capture_internal.h: what the parts of an open Intel PT capture share.
 * Private to them:
 *
 *   pt_capture.c           opening: the capture's files, the pass over the
 *                          records (buffers, window marks), the PT
 *                          configuration, the section cache, the public face
 *   pt_capture_sideband.c  the sideband parsed, sorted and replayed into
 *                          threads, processes and their images, CPU
 *                          timelines; the lookups over them
 *   pt_capture_kernel.c    kernel code: kcore, vmlinux moved by KASLR,
 *                          modules
 *   pt_capture_decode.c    decoding: per-thread and per-CPU buffers, the
 *                          merge, progress
 *   pt_capture_bpf.c       kernel code that changes under the trace: BPF
 *                          programs (KSYMBOL, their saved JIT images) and
 *                          TEXT_POKE, as images per stretch of time
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

/* How perf names the kernel's own mapping (and its missing-list entry). */
#define PTC_KERNEL_NAME "[kernel.kallsyms]"

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
	/* An --events sample (not a window: begin == end, its time), handed
	 * on as RV_EVENT_EXTRA in time order with the thread's events, like a
	 * trigger hit; those before the trace are left out with the windows.
	 * name: the event's. */
	bool extra;
	struct {
		uint64_t ip, addr, count;
		uint32_t cpu;
		bool kernel;
	} sample;
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
	bool reader_borrowed; /* the caller's (rv_pt_capture_options.reader) */
	char *path;	      /* what the reader opened */
	char *dir;	      /* the capture's directory, or NULL (stdin) */
	char *kallsyms;	      /* DIR/kcore_dir/kallsyms, or NULL */
	char *kcore;	      /* DIR/kcore_dir/kcore, or NULL */
	char *vdso;	      /* DIR/vdso.so, or NULL */
	char *vmlinux;	      /* options.vmlinux, or NULL */
	char *damage;	      /* why reading stopped early, or NULL */
	bool include_kernel;
	unsigned jobs;
	size_t chunk_bytes;
	enum rv_pt_decoder_choice decoder;
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

	struct ptc_window *windows;	/* sorted by tid, then time */
	size_t nr_windows, cap_windows; /* window and trigger marks */
	size_t nr_applied;		/* windows to apply (RV_MARK_FLAG_APPLY) */
	size_t windows_before_trace;	/* window marks left out: they ended before any trace */

	struct ptc_buffer *buffers; /* in file order */
	size_t nr_buffers, cap_buffers;
	uint64_t trace_bytes;

	struct ptc_kcode *kcode; /* pt_capture_bpf.c's; NULL until a change is seen */

	struct ptc_missing *missing;
	size_t nr_missing, cap_missing;
	struct rv_pt_missing *missing_pub; /* filled by rv_pt_capture_missing */
};

/* ---- pt_capture.c ---- */

/* A copy of s[0, len) that lives as long as the capture; NULL when memory
 * is short. */
const char *ptc_arena_strndup(struct ptc_arena *a, const char *s, size_t len);

/* rv_error_set's "out of memory reading the capture". */
int ptc_nomem(struct rv_error *err);

/* The missing-list entry for path (a mapping more of it when it is there
 * already): its index, or SIZE_MAX when memory is short. */
size_t ptc_missing_add(struct rv_pt_capture *c, const char *path, const char *reason, bool kernel);

/* rv_pt_sections_add_file, remembering what the section was made from: the
 * isid, or a negative libipt code. */
int ptc_add_section(struct rv_pt_capture *c, const char *file, uint64_t offset, uint64_t size,
		    uint64_t vaddr);

/* The sections an image of the capture (a generation's or the kernel's) was
 * made of, in the order they were added; 0 and *isids NULL when the image is
 * not one of the capture's. Up to `max` are stored; returns how many there are. */
size_t ptc_image_sections(const struct rv_pt_capture *c, const struct pt_image *image, int *isids,
			  size_t max);

/* A packet decoder over buffer b's trace (b->size must not be 0); NULL when
 * memory is short. */
struct pt_packet_decoder *ptc_packet_decoder(const struct rv_pt_capture *c,
					     const struct ptc_buffer *b);

/* The TSC of the PSB+ at offset (d's buffer), in the capture's clock;
 * UINT64_MAX when that PSB+ has none. */
uint64_t ptc_psb_time(const struct rv_pt_capture *c, struct pt_packet_decoder *d, uint64_t offset);

/* The earliest time a buffer's trace starts at; 0 when none has a time. */
uint64_t ptc_trace_start(const struct rv_pt_capture *c);

/* ---- pt_capture_sideband.c ---- */

/* The sideband records of the pass over the file, parsed, and what perf's
 * kernel MMAP says about the kernel's place (for --vmlinux). */
struct ptc_sb_record;
struct ptc_sideband {
	struct ptc_sb_record *v;
	size_t nr, cap;
	uint64_t kernel_ref_addr; /* from the kernel's MMAP: the ref symbol's address */
	const char *kernel_ref_sym;
};

/* Keeps the record at h if it is sideband (COMM, FORK, EXIT, MMAP, MMAP2,
 * ITRACE_START, SWITCH); order is its place in the file. Records too short
 * to parse are skipped. Returns 0, or negative (err set) when memory is
 * short. */
int ptc_sideband_add(struct rv_pt_capture *c, struct ptc_sideband *sb,
		     const struct perf_event_header *h, uint64_t order, struct rv_error *err);

/* Replays the sideband in time order into c's threads, processes (their
 * generations, mappings and images), CPU timelines and the missing list;
 * then prepares the window marks per thread and names the threads nothing
 * named. Kernel code must be loaded before. */
int ptc_sideband_replay(struct rv_pt_capture *c, struct ptc_sideband *sb, struct rv_error *err);

void ptc_sideband_destroy(struct ptc_sideband *sb);

/* How many of the nr entries at v (each `size` bytes, whose first member is
 * a uint64_t time, in time order) have a time at or before `time`. */
size_t ptc_count_until(const void *v, size_t nr, size_t size, uint64_t time);

/* A mapping of [start, start + len) (clamped at the top of the address
 * space) at file offset pgoff, with no code read yet. */
void ptc_mapping_init(struct ptc_mapping *m, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *path);

/* The newest mapping in m holding ip (a later one replaces what it
 * overlaps); NULL if none. */
const struct ptc_mapping *ptc_mapping_at(const struct ptc_mappings *m, uint64_t ip);

const struct ptc_thread *ptc_thread_find(const struct rv_pt_capture *c, uint32_t tid);
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

/* ---- pt_capture_kernel.c ---- */

/* Reads kernel code when the kernel was traced and decoding it was asked
 * for: DIR/kcore_dir/kcore, else --vmlinux moved by the KASLR offset (from
 * the capture's kallsyms, else from perf's kernel MMAP: ref_sym at
 * ref_addr); why not is c->kernel_reason. Then makes c->kernel_image of
 * what was read. Returns 0, or negative (err set) when memory is short. */
int ptc_kernel_load(struct rv_pt_capture *c, const char *ref_sym, uint64_t ref_addr,
		    struct rv_error *err);

/* An executable kernel MMAP (the kernel's own, or a module's), listed as
 * missing when its code was not read. */
int ptc_kernel_mapping(struct rv_pt_capture *c, uint64_t start, uint64_t len, uint64_t pgoff,
		       const char *name, struct rv_error *err);

/* The missing-list entry of kernel address ip: its module's, else the
 * kernel's own; SIZE_MAX when none. */
size_t ptc_kernel_missing_at(const struct rv_pt_capture *c, uint64_t ip);

/* After the replay: the kernel listed as missing when it was traced but
 * its code was not read, even when no MMAP named it. */
int ptc_kernel_note_missing(struct rv_pt_capture *c, struct rv_error *err);

/* ---- pt_capture_bpf.c ---- */

/* Kernel code that changes while it is traced: BPF programs come and go
 * (KSYMBOL, with the JIT images saved in DIR/bpf_images, capture/
 * bpf_images.h) and code is patched (TEXT_POKE: static keys, ftrace, BPF
 * trampolines). The sideband's change times cut the capture's time into
 * stretches; in each, kernel code is the base (kcore or vmlinux), the BPF
 * programs loaded then, and every poked range with its bytes of then: the
 * new bytes of the last poke before, else the old bytes of the first poke
 * after (so a kcore copied after a poke still decodes what ran before it).
 * Images with those sections are made on first use, per (image, stretch),
 * and kept until the capture is freed. */
struct ptc_kcode;

/* Keeps a KSYMBOL or TEXT_POKE record (others: nothing), of the time its
 * sample_id gives (0 without one); order is its place in the file. Records
 * too short to parse are skipped. Returns 0, or negative (err set) when
 * memory is short or the poked bytes cannot be stored. */
int ptc_kcode_add(struct rv_pt_capture *c, const struct perf_event_header *h, uint64_t time,
		  uint64_t order, struct rv_error *err);

/* After the kernel's code is loaded (ptc_kernel_load): reads DIR/bpf_images,
 * pairs its images with the programs KSYMBOL announced (the images no
 * KSYMBOL names were loaded before recording began), makes their sections
 * and the pokes', the stretches, and names the programs for the symbolizer.
 * Nothing when the kernel was not traced or not asked for. */
int ptc_kcode_load(struct rv_pt_capture *c, struct rv_error *err);

/* The image to decode with at `time` instead of base (a generation's or the
 * kernel's image): base itself when no kernel code changes, else base with
 * the kernel code of time's stretch; *until: when that stretch ends
 * (UINT64_MAX: it does not). Thread-safe. Returns 0, or negative (err set)
 * when memory is short. */
int ptc_kcode_image(struct rv_pt_capture *c, struct pt_image *base, uint64_t time,
		    struct pt_image **out, uint64_t *until, struct rv_error *err);

/* For ptc_image_sections: when image is one ptc_kcode_image made, its base
 * (*base) and the sections added to it, in order (up to max stored; returns
 * how many there are); 0 and *base NULL otherwise. Thread-safe. */
size_t ptc_kcode_sections(const struct rv_pt_capture *c, const struct pt_image *image,
			  const struct pt_image **base, int *isids, size_t max);

/* The missing-list entry of a BPF program whose code was not saved, at ip
 * and time; SIZE_MAX when none. */
size_t ptc_kcode_missing_at(const struct rv_pt_capture *c, uint64_t ip, uint64_t time);

void ptc_kcode_free(struct rv_pt_capture *c);

#endif
