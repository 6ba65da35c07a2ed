/* bpf_images.h: saving the JIT code of BPF programs beside a kernel-scope
 * Intel PT capture (DIR/bpf_images, format in capture/bpf_images.h), and
 * watching the whole machine for kernel code that changes while recording.
 *
 * Intel PT traces BPF programs where the kernel runs them: at their JIT
 * addresses, which no copy of kcore holds. So, as perf record does, the code
 * of every program is asked of the kernel (bpf_prog_get_next_id, then
 * bpf_obj_get_info_by_fd with jited_prog_insns, jited_ksyms,
 * jited_func_lens, prog_tags and func_info) and saved: the programs loaded
 * when the recording starts (rearview's own gate included: call
 * rv_bpf_saver_save_loaded after every BPF object of the session is loaded
 * and attached), and each program that a BPF_EVENT record announces while
 * recording, when that record is drained (a program unloaded before then is
 * lost: counted). Each function is named as the kernel names it in kallsyms
 * and in KSYMBOL records: "bpf_prog_<tag>_<name>", the name from the
 * program's BTF (func_info), else the program's own name.
 *
 * The watch: one dummy event per CPU, for every task (pid -1, perf's own
 * "system-wide" sideband for --kcore), with ksymbol, bpf_event and
 * text_poke: the kernel writes KSYMBOL, BPF_EVENT and TEXT_POKE records
 * only to events of the task that loads or patches (rarely the traced one)
 * and to CPU-wide events. Its records are handed to the caller (for the
 * capture) in each ring's order, as drained; rings are drained one after
 * another, so records of two CPUs may come out of time order.
 *
 * Needs CAP_SYS_ADMIN (bpf_prog_get_fd_by_id) and CAP_PERFMON (CPU-wide
 * events): kernel scope is root only.
 *
 * Not here: the file format (capture/bpf_images.h), decoding, kcore.
 */
#ifndef RV_RECORD_BPF_IMAGES_H
#define RV_RECORD_BPF_IMAGES_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct rv_bpf_saver;

struct rv_bpf_saver_stats {
	uint64_t programs;  /* saved */
	uint64_t functions; /* entries written (a function each) */
	uint64_t bytes;	    /* of JIT code saved */
	uint64_t not_jited; /* programs without JIT code to save (interpreted,
			     * or the kernel hides it: bpf_dump_raw_ok) */
	uint64_t lost;	    /* announced but gone before they could be saved */
	uint64_t records;   /* KSYMBOL, BPF_EVENT and TEXT_POKE records watched */
};

/* Creates dir/bpf_images (mode 0600; truncated if there). */
int rv_bpf_saver_open(struct rv_bpf_saver **out, const char *dir, struct rv_error *err);

/* Saves every program loaded now that is not saved yet. */
int rv_bpf_saver_save_loaded(struct rv_bpf_saver *s, struct rv_error *err);

/* Saves program id unless it was saved; one gone already is counted lost,
 * not an error. */
int rv_bpf_saver_save_id(struct rv_bpf_saver *s, uint32_t id, struct rv_error *err);

/* Where each watched record goes (valid only during the call). Returns 0,
 * or a negative errno with err set to stop. */
typedef int (*rv_bpf_record_fn)(void *ctx, const struct perf_event_header *rec,
				struct rv_error *err);

/* The watch's attribute, from the capture's sideband attribute: its
 * sample_type, sample_id_all and clock kept, what it records replaced by
 * ksymbol, bpf_event and text_poke (for --dry-run too). */
void rv_bpf_watch_attr(const struct perf_event_attr *sideband, struct perf_event_attr *out);

/* Opens the watch on CPUs [0, nr_cpus) with `attr` (the capture's sideband
 * attribute: its sample_type, sample_id_all and clock are kept, what it
 * records is replaced by ksymbol, bpf_event and text_poke), enabled at
 * once. *ids (nr_cpus of them, the caller's) get the events' ids, for the
 * capture's attribute list; *out_attr the attribute opened. */
int rv_bpf_saver_watch(struct rv_bpf_saver *s, const struct perf_event_attr *attr, int nr_cpus,
		       struct perf_event_attr *out_attr, uint64_t *ids, struct rv_error *err);

/* Hands every watched record to fn, saving the programs BPF_EVENT
 * announces (PERF_BPF_EVENT_PROG_LOAD) on the way. */
int rv_bpf_saver_drain(struct rv_bpf_saver *s, rv_bpf_record_fn fn, void *ctx,
		       struct rv_error *err);

void rv_bpf_saver_stats(const struct rv_bpf_saver *s, struct rv_bpf_saver_stats *out);

/* Closes the watch and the file. */
void rv_bpf_saver_free(struct rv_bpf_saver *s);

#endif
