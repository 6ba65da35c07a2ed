/* synth.h: builders of the kernel's sideband records (MMAP, MMAP2, COMM,
 * FORK, EXIT, ITRACE_START, AUX, SWITCH, SWITCH_CPU_WIDE, and the kernel
 * text changes KSYMBOL and TEXT_POKE) and of perf's
 * FINISHED_ROUND and FINISHED_INIT, laid out as the kernel writes them
 * (include/uapi/linux/perf_event.h), so that recorders (the sampling engine,
 * softpt, the PT engine) never lay out records by hand.
 *
 * Each record ends with the sample_id trailer of the attribute it belongs to
 * (when that attribute has sample_id_all): TID, TIME, ID, STREAM_ID, CPU and
 * IDENTIFIER, in the kernel's order, as the attribute's sample_type selects.
 *
 * The mappings are also parsed here (rv_perf_mmap_parse), for every reader
 * of a capture's sideband.
 *
 * Not here: writing records (perf_data.h), samples (their layout is the
 * recorder's), or anything perf-specific beyond the two round markers.
 */
#ifndef RV_CAPTURE_SYNTH_H
#define RV_CAPTURE_SYNTH_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The trailer's values. STREAM_ID gets `id` too, as the kernel's for an
 * event that is not inherited; res after cpu is 0. */
struct rv_synth_id {
	uint32_t pid, tid, cpu;
	uint64_t time, id;
};

/* Of the attribute the records carry: which trailer fields they have. */
struct rv_synth {
	uint64_t sample_type;
	bool sample_id_all;
};

/* Each returns the record size in bytes (multiple of 8), or 0 if buf_size is too small
 * (or the record would exceed the 64 KiB a record's u16 size allows). buf needs no
 * alignment. Buffers of 4096+PATH_MAX bytes are always enough. `id` may be NULL
 * (a trailer of zeros). Strings are copied up to their NUL and padded to 8 with zeros;
 * COMM names are cut to the kernel's 15 characters. */
size_t rv_synth_mmap(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff,
		     const char *filename, uint16_t misc, const struct rv_synth_id *id);
/* MMAP2 in its device/inode form (misc must not ask for PERF_RECORD_MISC_MMAP_BUILD_ID);
 * ino_generation is 0. */
size_t rv_synth_mmap2(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		      uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj,
		      uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags,
		      const char *filename, uint16_t misc, const struct rv_synth_id *id);
/* A mapping from PERF_RECORD_MMAP or MMAP2 (either MMAP2 form: the device and
 * inode fields, or a build id, take the same room). `executable`: MMAP2's
 * prot has PROT_EXEC; an MMAP without PERF_RECORD_MISC_MMAP_DATA (perf writes
 * data mappings as MMAP only with mmap_data). `filename` points into the
 * record. */
struct rv_perf_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	bool executable;
	const char *filename;
};

/* 0 and *out set; -EINVAL for another record type, a record too short for
 * its fields and a one-byte name, or a name without its NUL in the record. */
int rv_perf_mmap_parse(const struct perf_event_header *rec, struct rv_perf_mmap *out);

/* exec: the name changed by exec (PERF_RECORD_MISC_COMM_EXEC), not prctl. */
size_t rv_synth_comm(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t tid, const char *comm, bool exec, const struct rv_synth_id *id);
size_t rv_synth_fork(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time,
		     const struct rv_synth_id *id);
size_t rv_synth_exit(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time,
		     const struct rv_synth_id *id);
size_t rv_synth_itrace_start(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
			     uint32_t tid, const struct rv_synth_id *id);
/* flags: PERF_AUX_FLAG_*. */
size_t rv_synth_aux(const struct rv_synth *s, void *buf, size_t buf_size, uint64_t aux_offset,
		    uint64_t aux_size, uint64_t flags, const struct rv_synth_id *id);
/* The switched task is the trailer's pid/tid; preempt only counts when out. */
size_t rv_synth_switch(const struct rv_synth *s, void *buf, size_t buf_size, bool out, bool preempt,
		       const struct rv_synth_id *id);
/* next_prev: the task switched to (out) or from (in). */
size_t rv_synth_switch_cpu_wide(const struct rv_synth *s, void *buf, size_t buf_size, bool out,
				bool preempt, uint32_t next_prev_pid, uint32_t next_prev_tid,
				const struct rv_synth_id *id);
/* perf's markers. At a FINISHED_ROUND perf delivers, in time order, what it
 * queued that is older than the newest record of the round before: no record
 * may be older than that. FINISHED_INIT ends the synthesized sideband. */
size_t rv_synth_finished_round(void *buf, size_t buf_size);
size_t rv_synth_finished_init(void *buf, size_t buf_size);

/* Kernel code that appears, goes or changes (kernel scope only). KSYMBOL:
 * [addr, addr + len) now holds the symbol `name` (a BPF program's
 * "bpf_prog_<tag>_<name>" with ksym_type PERF_RECORD_KSYMBOL_TYPE_BPF), or
 * no longer does (unregister). TEXT_POKE: the old_len bytes at addr became
 * the new_len new ones (either may be 0: a trampoline added or removed). */
struct rv_perf_ksymbol {
	uint64_t addr;
	uint32_t len;
	uint16_t ksym_type;
	bool unregister;
	const char *name; /* points into the record */
};

struct rv_perf_text_poke {
	uint64_t addr;
	uint16_t old_len, new_len;
	const uint8_t *old_bytes, *new_bytes; /* point into the record */
};

size_t rv_synth_ksymbol(const struct rv_synth *s, void *buf, size_t buf_size,
			const struct rv_perf_ksymbol *k, const struct rv_synth_id *id);
size_t rv_synth_text_poke(const struct rv_synth *s, void *buf, size_t buf_size,
			  const struct rv_perf_text_poke *t, const struct rv_synth_id *id);

/* 0 and *out set; -EINVAL for another record type, or one too short for
 * its fields (a name without its NUL, bytes past the record's end). */
int rv_perf_ksymbol_parse(const struct perf_event_header *rec, struct rv_perf_ksymbol *out);
int rv_perf_text_poke_parse(const struct perf_event_header *rec, struct rv_perf_text_poke *out);

#endif
