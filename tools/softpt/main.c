/* main.c: softpt, genuine Intel PT captures on machines without Intel PT.
 *
 * softpt runs a command under ptrace (stepper.c), turns each thread's
 * instruction flow into the packets PT hardware tracing user space would have
 * written (ptgen.c), and keeps them as perf.data laid out as `perf record -e
 * intel_pt//u --per-thread` lays it out, with a ground-truth file of every
 * call and return it saw. Linux perf's decoder reading the capture is then an
 * oracle nobody on the team wrote.
 *
 * Not here: decoding. softpt writes captures; rearview decodes them.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "ptgen.h"
#include "stepper.h"
#include "util/error.h"
#include "util/proc.h"

/* The intel_pt PMU's config bits (its sysfs format directory on Intel CPUs). */
#define PT_CFG_PT		(1ULL << 0)
#define PT_CFG_CYC		(1ULL << 1)
#define PT_CFG_MTC		(1ULL << 9)
#define PT_CFG_TSC		(1ULL << 10)
#define PT_CFG_NORETCOMP	(1ULL << 11)
#define PT_CFG_BRANCH		(1ULL << 13)
#define PT_CFG_MTC_PERIOD_SHIFT 14
#define PT_CFG_CYC_THRESH_SHIFT 19
#define PT_CFG_PSB_PERIOD_SHIFT 24

/* The CPU softpt's captures claim to come from: a Tiger Lake, whose PT has
 * every feature modelled here and none of the errata perf works around. */
#define SOFTPT_CPUID		  "GenuineIntel,6,140,1"
#define SOFTPT_CPU_DESC		  "softpt virtual Intel(R) Core(TM) with Intel PT"
#define SOFTPT_MAX_NONTURBO_RATIO 24
#define SOFTPT_TSC_CTC_N	  100
#define SOFTPT_TSC_CTC_D	  1

#define DEFAULT_GAP_INSNS 1000

/* One capture to write: softpt can write several from one stepped run, each
 * with its own PT configuration, since stepping is what costs. */
struct output_opts {
	const char *dir;
	struct ptgen_config pt;
	uint64_t snapshot_size;
	uint64_t overflow_at, overflow_len;
};

struct options {
	int argc;
	char **argv_self; /* softpt's own command line, for HEADER_CMDLINE */
	struct output_opts *outs;
	size_t nr_outs;
	char *const *argv;
	bool quiet;
};

enum gt_kind { GT_THREAD, GT_CALL, GT_RETURN, GT_OVERFLOW, GT_RESUME, GT_EXIT };

struct gt_event {
	uint8_t kind;
	uint32_t tid, thread_idx;
	uint64_t insn;
	uint64_t a, b;
	uint64_t psbs; /* PSBs the thread's trace had when the event happened */
};

/* A thread's trace in one output. */
struct out_thread {
	struct ptgen *gen;
	uint64_t gap_left;	 /* instructions still to lose in an injected overflow */
	bool gap_resume_pending; /* overflow over, waiting for tracing to resume */
};

struct output {
	const struct output_opts *o;
	struct gt_event *events;
	size_t nr_events, cap_events;
	uint64_t calls, returns;
	bool overflow_done;
};

struct thread_rec {
	uint32_t pid, tid, parent_tid;
	uint32_t idx;
	struct out_thread *per_out; /* one per output */
	uint64_t insns;
	bool in_user;
	bool ended;
	uint64_t begin_tsc, end_tsc;
};

struct mapping_key {
	uint64_t start, end, pgoff, ino;
};

struct session {
	const struct options *opt;
	struct rv_error *err;
	uint64_t tsc; /* the virtual clock: one tick per instruction, syscalls real */
	uint64_t tsc_hz;
	struct rv_perf_time_conv time_conv;
	struct rv_synth synth;
	uint64_t total_insns;

	struct output *outs;

	struct thread_rec *threads;
	size_t nr_threads, cap_threads;

	uint8_t *sideband; /* records, in time order, written after the headers */
	size_t sideband_size, sideband_cap;

	struct mapping_key *maps;
	size_t nr_maps, cap_maps;
	char comm[16];
	char *vdso; /* the vdso's code, saved into every output */
	size_t vdso_size;
};

static void *grow_array(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t cap2 = *cap ? *cap : 16;
	while (cap2 < need)
		cap2 *= 2;
	void *q = realloc(p, cap2 * elem);
	if (q)
		*cap = cap2;
	return q;
}

static uint64_t pt_id(uint32_t idx)
{
	return 1000 + idx;
}

static uint64_t sideband_id(uint32_t idx)
{
	return 100000 + idx;
}

static uint64_t perf_time(const struct session *s, uint64_t tsc)
{
	return rv_perf_tsc_to_time(&s->time_conv, tsc);
}

static struct thread_rec *find_thread(struct session *s, uint32_t tid)
{
	for (size_t i = s->nr_threads; i-- > 0;)
		if (s->threads[i].tid == tid && !s->threads[i].ended)
			return &s->threads[i];
	return NULL;
}

static int add_event(struct session *s, struct output *out, enum gt_kind kind,
		     const struct thread_rec *t, uint64_t a, uint64_t b)
{
	struct gt_event *e =
		grow_array(out->events, &out->cap_events, out->nr_events + 1, sizeof(*e));
	if (!e)
		return rv_error_set(s->err, ENOMEM, "out of memory for the ground truth");
	out->events = e;
	e[out->nr_events++] = (struct gt_event){
		.kind = (uint8_t)kind,
		.tid = t->tid,
		.thread_idx = t->idx,
		.insn = t->insns,
		.a = a,
		.b = b,
		.psbs = ptgen_psb_count(t->per_out[out - s->outs].gen),
	};
	return 0;
}

static int append_record(struct session *s, const void *rec, size_t size)
{
	if (size == 0)
		return rv_error_set(s->err, EOVERFLOW, "a sideband record did not fit its buffer");
	uint8_t *p = grow_array(s->sideband, &s->sideband_cap, s->sideband_size + size, 1);
	if (!p)
		return rv_error_set(s->err, ENOMEM, "out of memory for sideband records");
	s->sideband = p;
	memcpy(p + s->sideband_size, rec, size);
	s->sideband_size += size;
	return 0;
}

static struct rv_synth_id synth_id(const struct session *s, uint32_t pid, uint32_t tid, uint64_t id,
				   uint64_t tsc)
{
	return (struct rv_synth_id){
		.pid = pid, .tid = tid, .cpu = 0, .time = perf_time(s, tsc), .id = id
	};
}

static int check_pt(struct session *s, int rc, const struct thread_rec *t)
{
	if (rc >= 0)
		return 0;
	return rv_error_set(s->err, EIO, "encoding the PT trace of thread %u failed: %s", t->tid,
			    rc == -ENOMEM ? "out of memory" : "libipt encoder error");
}

/* ---- mappings ---- */

static void comm_of(struct session *s, pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(s->comm, sizeof(s->comm), f))
		s->comm[strcspn(s->comm, "\n")] = 0;
	fclose(f);
}

static bool mapping_seen(struct session *s, const struct mapping_key *k)
{
	for (size_t i = 0; i < s->nr_maps; i++)
		if (!memcmp(&s->maps[i], k, sizeof(*k)))
			return true;
	return false;
}

static int read_vdso(struct session *s, uint32_t pid, uint64_t start, uint64_t end)
{
	size_t len = end - start;

	s->vdso = malloc(len);
	if (!s->vdso)
		return rv_error_set(s->err, ENOMEM, "out of memory for the vdso");
	if (rv_proc_read_memory((pid_t)pid, start, s->vdso, len, s->err))
		return rv_error_prefix(s->err, "cannot read the vdso of process %u", pid);
	s->vdso_size = len;
	return 0;
}

/* Emits an MMAP2 record for each executable mapping not recorded yet, as the
 * kernel does when code is mapped. */
static int on_maps_changed(void *ctx, pid_t pid, bool exec)
{
	struct session *s = ctx;
	char path[64], line[PATH_MAX + 256];

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return rv_error_set(s->err, errno, "cannot read %s", path);
	int rc = 0;
	if (exec) {
		/* A new program image: its name, as the kernel reports it at exec. */
		uint8_t rec[512];
		struct rv_synth_id id =
			synth_id(s, (uint32_t)pid, (uint32_t)pid, sideband_id(0), s->tsc);
		s->nr_maps = 0;
		comm_of(s, pid);
		rc = append_record(s, rec,
				   rv_synth_comm(&s->synth, rec, sizeof(rec), (uint32_t)pid,
						 (uint32_t)pid, s->comm, true, &id));
	}
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8], file[PATH_MAX] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms,
			   &pgoff, &maj, &min, &ino, file) < 7)
			continue;
		char *name = file + strspn(file, " ");
		if (perms[2] != 'x' || !name[0] || !strcmp(name, "[vsyscall]"))
			continue;
		struct mapping_key key = { start, end, pgoff, ino };
		if (mapping_seen(s, &key))
			continue;
		struct mapping_key *m =
			grow_array(s->maps, &s->cap_maps, s->nr_maps + 1, sizeof(*m));
		if (!m) {
			rc = rv_error_set(s->err, ENOMEM, "out of memory");
			break;
		}
		s->maps = m;
		m[s->nr_maps++] = key;
		if (!strcmp(name, "[vdso]") && !s->vdso &&
		    (rc = read_vdso(s, (uint32_t)pid, start, end)))
			break;
		uint32_t prot = (perms[0] == 'r' ? PROT_READ : 0) |
				(perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
		uint32_t flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		uint8_t rec[4096 + PATH_MAX];
		struct rv_synth_id id =
			synth_id(s, (uint32_t)pid, (uint32_t)pid, sideband_id(0), s->tsc);
		size_t size = rv_synth_mmap2(&s->synth, rec, sizeof(rec), (uint32_t)pid,
					     (uint32_t)pid, start, end - start, pgoff, maj, min,
					     ino, prot, flags, name, PERF_RECORD_MISC_USER, &id);
		rc = append_record(s, rec, size);
	}
	fclose(f);
	return rc;
}

/* ---- the flow ---- */

static int on_thread_begin(void *ctx, pid_t pid, pid_t tid, pid_t parent_tid, uint64_t ip)
{
	struct session *s = ctx;
	uint8_t rec[512];
	int rc;

	struct thread_rec *t =
		grow_array(s->threads, &s->cap_threads, s->nr_threads + 1, sizeof(*t));
	if (!t)
		return rv_error_set(s->err, ENOMEM, "out of memory");
	s->threads = t;
	t = &t[s->nr_threads];
	memset(t, 0, sizeof(*t));
	t->pid = (uint32_t)pid;
	t->tid = (uint32_t)tid;
	t->parent_tid = (uint32_t)parent_tid;
	t->idx = (uint32_t)s->nr_threads;
	t->per_out = calloc(s->opt->nr_outs, sizeof(*t->per_out));
	if (!t->per_out)
		return rv_error_set(s->err, ENOMEM, "out of memory");
	s->nr_threads++;
	for (size_t i = 0; i < s->opt->nr_outs; i++) {
		t->per_out[i].gen = ptgen_new(&s->opt->outs[i].pt);
		if (!t->per_out[i].gen)
			return rv_error_set(s->err, ENOMEM, "cannot set up the PT encoder");
	}
	t->begin_tsc = s->tsc;
	t->in_user = true;

	/* The first thread's COMM came with its exec (on_maps_changed). */
	struct rv_synth_id id = synth_id(s, t->pid, t->tid, sideband_id(t->idx), s->tsc);
	if (parent_tid != 0) {
		rc = append_record(s, rec,
				   rv_synth_fork(&s->synth, rec, sizeof(rec), t->pid, t->pid,
						 t->tid, t->parent_tid, id.time, &id));
		if (rc)
			return rc;
	}
	id.id = pt_id(t->idx);
	rc = append_record(s, rec,
			   rv_synth_itrace_start(&s->synth, rec, sizeof(rec), t->pid, t->tid, &id));
	for (size_t i = 0; rc == 0 && i < s->opt->nr_outs; i++) {
		rc = add_event(s, &s->outs[i], GT_THREAD, t, t->pid, ip);
		if (rc == 0)
			rc = check_pt(s, ptgen_enable(t->per_out[i].gen, ip, s->tsc), t);
	}
	return rc;
}

static int start_overflow(struct session *s, struct output *out, struct thread_rec *t)
{
	struct out_thread *ot = &t->per_out[out - s->outs];

	out->overflow_done = true;
	ot->gap_left = out->o->overflow_len;
	if (add_event(s, out, GT_OVERFLOW, t, 0, 0))
		return -1;
	return check_pt(s, ptgen_overflow_begin(ot->gen, s->tsc), t);
}

static int end_overflow(struct session *s, struct output *out, struct thread_rec *t, uint64_t ip)
{
	struct out_thread *ot = &t->per_out[out - s->outs];
	int rc = check_pt(s, ptgen_overflow_end(ot->gen, ip, s->tsc), t);

	if (rc)
		return rc;
	if (!t->in_user) {
		ot->gap_resume_pending = true;
		return 0;
	}
	return add_event(s, out, GT_RESUME, t, ip, 0);
}

static int retire_in(struct session *s, struct output *out, struct thread_rec *t, uint64_t ip,
		     const struct insn_info *insn, uint64_t next_ip)
{
	struct out_thread *ot = &t->per_out[out - s->outs];
	int rc;

	if (insn->trap)
		rc = check_pt(s, ptgen_async_disable(ot->gen, ip, s->tsc), t);
	else
		rc = check_pt(s, ptgen_insn(ot->gen, ip, insn->size, insn->cls, next_ip, s->tsc),
			      t);
	if (rc == 0 && insn->cls == PTGEN_SYSCALL)
		rc = check_pt(s, ptgen_switch_out(ot->gen, s->tsc), t);
	if (rc)
		return rc;
	if (ot->gap_left == 0 && !ot->gap_resume_pending) {
		if (insn->cls == PTGEN_CALL || insn->cls == PTGEN_CALL_IND) {
			out->calls++;
			rc = add_event(s, out, GT_CALL, t, ip, next_ip);
		} else if (insn->cls == PTGEN_RET) {
			out->returns++;
			rc = add_event(s, out, GT_RETURN, t, ip, next_ip);
		}
		if (rc)
			return rc;
	}
	if (ot->gap_left && --ot->gap_left == 0)
		return end_overflow(s, out, t, next_ip);
	if (out->o->overflow_at && !out->overflow_done && s->total_insns >= out->o->overflow_at &&
	    t->in_user)
		return start_overflow(s, out, t);
	return 0;
}

/* Whether a thread other than t is running user code. */
static bool others_in_user(const struct session *s, const struct thread_rec *t)
{
	for (size_t i = 0; i < s->nr_threads; i++)
		if (&s->threads[i] != t && !s->threads[i].ended && s->threads[i].in_user)
			return true;
	return false;
}

/* The virtual clock: a tick per instruction of any thread. A thread in the
 * kernel is taken to be scheduled out (its tracing off, as perf's per-thread
 * tracing leaves it), so time spent there does not fill its trace with timing
 * packets. The clock takes a system call's real duration only when no other
 * thread was running user code meanwhile: then the process was waiting (a
 * sleep shows as a sleep); otherwise the others' instructions are what
 * happened during the wait, and a jump would appear in their traces as a
 * stretch of user code lasting as long as the wait. */
static int on_retire(void *ctx, pid_t tid, uint64_t ip, const struct insn_info *insn,
		     uint64_t next_ip, uint64_t syscall_ns)
{
	struct session *s = ctx;
	struct thread_rec *t = find_thread(s, (uint32_t)tid);

	if (!t)
		return rv_error_set(s->err, ESRCH, "an instruction of unknown thread %d", tid);
	s->total_insns++;
	t->insns++;
	s->tsc++;
	if (insn->cls == PTGEN_SYSCALL)
		t->in_user = false;
	for (size_t i = 0; i < s->opt->nr_outs; i++)
		if (retire_in(s, &s->outs[i], t, ip, insn, next_ip))
			return -1;
	if (insn->cls == PTGEN_SYSCALL && !others_in_user(s, t))
		s->tsc += syscall_ns * s->tsc_hz / 1000000000u;
	return 0;
}

static int on_async(void *ctx, pid_t tid, uint64_t ip)
{
	struct session *s = ctx;
	struct thread_rec *t = find_thread(s, (uint32_t)tid);

	if (!t)
		return rv_error_set(s->err, ESRCH, "an event of unknown thread %d", tid);
	t->in_user = false;
	s->tsc++;
	for (size_t i = 0; i < s->opt->nr_outs; i++) {
		struct ptgen *g = t->per_out[i].gen;
		if (check_pt(s, ptgen_async_disable(g, ip, s->tsc), t) ||
		    check_pt(s, ptgen_switch_out(g, s->tsc), t))
			return -1;
	}
	return 0;
}

/* Back from the kernel, one tick after whatever the kernel recorded (an
 * MMAP2 of the system call that just returned), so that a decoder reaches
 * the new code only after it knows the mapping. */
static int on_resume(void *ctx, pid_t tid, uint64_t ip)
{
	struct session *s = ctx;
	struct thread_rec *t = find_thread(s, (uint32_t)tid);

	if (!t)
		return rv_error_set(s->err, ESRCH, "an event of unknown thread %d", tid);
	t->in_user = true;
	s->tsc++;
	for (size_t i = 0; i < s->opt->nr_outs; i++) {
		struct out_thread *ot = &t->per_out[i];
		if (check_pt(s, ptgen_switch_in(ot->gen, s->tsc), t) ||
		    check_pt(s, ptgen_enable(ot->gen, ip, s->tsc), t))
			return -1;
		if (ot->gap_resume_pending && ot->gap_left == 0) {
			ot->gap_resume_pending = false;
			if (add_event(s, &s->outs[i], GT_RESUME, t, ip, 0))
				return -1;
		}
	}
	return 0;
}

static int on_thread_end(void *ctx, pid_t pid, pid_t tid)
{
	struct session *s = ctx;
	struct thread_rec *t = find_thread(s, (uint32_t)tid);
	uint8_t rec[256];

	if (!t)
		return 0;
	for (size_t i = 0; i < s->opt->nr_outs; i++) {
		if (check_pt(s, ptgen_flush(t->per_out[i].gen), t) ||
		    add_event(s, &s->outs[i], GT_EXIT, t, 0, 0))
			return -1;
	}
	t->ended = true;
	t->end_tsc = s->tsc;
	struct rv_synth_id id = synth_id(s, t->pid, t->tid, sideband_id(t->idx), s->tsc);
	return append_record(s, rec,
			     rv_synth_exit(&s->synth, rec, sizeof(rec), t->pid, t->pid, t->tid,
					   t->parent_tid ? t->parent_tid : t->tid, id.time, &id));
}

/* ---- the captures ---- */

static uint64_t pt_config(const struct ptgen_config *c)
{
	uint64_t config = PT_CFG_PT | PT_CFG_BRANCH;

	if (c->tsc)
		config |= PT_CFG_TSC;
	if (c->mtc)
		config |= PT_CFG_MTC | (uint64_t)c->mtc_period << PT_CFG_MTC_PERIOD_SHIFT;
	if (c->cyc)
		config |= PT_CFG_CYC | (uint64_t)c->cyc_thresh << PT_CFG_CYC_THRESH_SHIFT;
	if (c->noretcomp)
		config |= PT_CFG_NORETCOMP;
	config |= (uint64_t)c->psb_period << PT_CFG_PSB_PERIOD_SHIFT;
	return config;
}

/* A PMU type number no PMU of this machine uses, so that perf running here
 * does not mistake the capture's intel_pt event for a local one. */
static uint32_t free_pmu_type(void)
{
	uint32_t type = 8;
	glob_t g;

	if (glob("/sys/bus/event_source/devices/*/type", 0, NULL, &g))
		return type;
	for (bool clash = true; clash;) {
		clash = false;
		for (size_t i = 0; i < g.gl_pathc && !clash; i++) {
			FILE *f = fopen(g.gl_pathv[i], "re");
			unsigned long used;
			if (f && fscanf(f, "%lu", &used) == 1 && used == type)
				clash = true;
			if (f)
				fclose(f);
		}
		if (clash)
			type++;
	}
	globfree(&g);
	return type;
}

struct kept {
	const uint8_t *data;
	size_t size;
	uint64_t offset;    /* of data in the thread's whole trace */
	uint64_t first_psb; /* events with psbs > first_psb are in the capture */
	bool all;	    /* the whole trace was kept */
};

/* What of a thread's trace the capture holds: all of it, or in snapshot mode
 * the last snapshot_size bytes, as a wrapped AUX ring buffer leaves them. */
static struct kept kept_trace(const struct output_opts *o, const struct ptgen *gen)
{
	struct kept k = { .all = true };

	k.data = ptgen_data(gen, &k.size);
	if (!o->snapshot_size || k.size <= o->snapshot_size)
		return k;
	k.all = false;
	k.offset = k.size - o->snapshot_size;
	k.data += k.offset;
	k.size = o->snapshot_size;
	k.first_psb = UINT64_MAX;
	for (size_t i = 0; i < ptgen_psb_count(gen); i++) {
		if (ptgen_psb_offset(gen, i) >= k.offset) {
			k.first_psb = i;
			break;
		}
	}
	return k;
}

static int write_aux(struct session *s, struct rv_perf_writer *w, const struct output *out,
		     size_t i)
{
	const struct thread_rec *t = &s->threads[i];
	struct kept k = kept_trace(out->o, t->per_out[out - s->outs].gen);
	uint8_t rec[256];

	if (k.size == 0)
		return 0;
	struct rv_synth_id id = synth_id(s, t->pid, t->tid, pt_id(t->idx), t->end_tsc);
	uint64_t flags = out->o->snapshot_size ? PERF_AUX_FLAG_OVERWRITE : 0;
	size_t size = rv_synth_aux(&s->synth, rec, sizeof(rec), k.offset, k.size, flags, &id);
	if (size == 0)
		return rv_error_set(s->err, EOVERFLOW, "an AUX record did not fit its buffer");
	int rc = rv_perf_writer_write(w, (const void *)rec, s->err);
	if (rc)
		return rc;
	struct rv_perf_auxtrace a = {
		.size = k.size,
		.offset = k.offset,
		.reference = t->end_tsc,
		.idx = t->idx,
		.tid = t->tid,
		.cpu = UINT32_MAX,
	};
	return rv_perf_writer_write_auxtrace(w, &a, k.data, s->err);
}

static int write_capture(struct session *s, const struct output *out, const char *path)
{
	const struct output_opts *o = out->o;
	struct rv_perf_writer *w = NULL;
	uint64_t *pt_ids = calloc(s->nr_threads + 1, sizeof(uint64_t));
	uint64_t *sb_ids = calloc(s->nr_threads + 1, sizeof(uint64_t));
	uint32_t pmu_type = free_pmu_type();
	int rc;

	if (!pt_ids || !sb_ids) {
		rc = rv_error_set(s->err, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->nr_threads; i++) {
		pt_ids[i] = pt_id((uint32_t)i);
		sb_ids[i] = sideband_id((uint32_t)i);
	}
	rc = rv_perf_writer_open(&w, path, s->err);
	if (rc)
		goto out;

	uint64_t sample_type = s->synth.sample_type;
	struct perf_event_attr pt = {
		.type = pmu_type,
		.size = sizeof(pt),
		.config = pt_config(&o->pt),
		.sample_period = 1,
		.sample_type = sample_type,
		.disabled = 1,
		.enable_on_exec = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.sample_id_all = 1,
	};
	struct perf_event_attr dummy = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(dummy),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_period = 1,
		.sample_type = sample_type,
		.disabled = 1,
		.enable_on_exec = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.sample_id_all = 1,
	};
	if ((rc = rv_perf_writer_add_attr(w, &pt, "intel_pt//u", pt_ids, s->nr_threads, s->err)) ||
	    (rc = rv_perf_writer_add_attr(w, &dummy, "dummy:u", sb_ids, s->nr_threads, s->err)))
		goto out;

	struct rv_intel_pt_info info = {
		.pmu_type = pmu_type,
		.time_shift = s->time_conv.time_shift,
		.time_mult = s->time_conv.time_mult,
		.time_zero = s->time_conv.time_zero,
		.cap_user_time_zero = 1,
		.tsc_bit = PT_CFG_TSC,
		.noretcomp_bit = PT_CFG_NORETCOMP,
		.have_sched_switch = 0,
		.snapshot_mode = o->snapshot_size != 0,
		.per_cpu_mmaps = 0,
		.mtc_bit = PT_CFG_MTC,
		.mtc_freq_bits = 0xfULL << PT_CFG_MTC_PERIOD_SHIFT,
		.tsc_ctc_ratio_n = o->pt.tsc_ctc_ratio_n,
		.tsc_ctc_ratio_d = o->pt.tsc_ctc_ratio_d,
		.cyc_bit = PT_CFG_CYC,
		.max_non_turbo_ratio = o->pt.max_nonturbo_ratio,
		.filter = "",
	};
	if ((rc = rv_perf_writer_write_time_conv(w, &s->time_conv, s->err)) ||
	    (rc = rv_perf_writer_write_intel_pt_info(w, &info, s->err)))
		goto out;
	for (size_t off = 0; off < s->sideband_size;) {
		const struct perf_event_header *h = (const void *)(s->sideband + off);
		if ((rc = rv_perf_writer_write(w, h, s->err)))
			goto out;
		off += h->size;
	}
	/* The AUX area of each thread's event, as perf reads it when tracing ends. */
	for (size_t i = 0; i < s->nr_threads; i++)
		if ((rc = write_aux(s, w, out, i)))
			goto out;
	uint8_t round[64];
	if (!rv_synth_finished_round(round, sizeof(round))) {
		rc = rv_error_set(s->err, EOVERFLOW, "a FINISHED_ROUND record did not fit");
		goto out;
	}
	if ((rc = rv_perf_writer_write(w, (const void *)round, s->err)))
		goto out;

	struct rv_perf_meta meta = {
		.cpuid = SOFTPT_CPUID,
		.cpu_desc = SOFTPT_CPU_DESC,
		.perf_version = "softpt " RV_VERSION,
		.clockid = -1,
		.argc = s->opt->argc,
		.argv = (const char *const *)s->opt->argv_self,
	};
	rc = rv_perf_writer_finish(w, &meta, s->err);
out:
	rv_perf_writer_free(w);
	free(pt_ids);
	free(sb_ids);
	return rc;
}

static const char *const gt_names[] = {
	[GT_THREAD] = "thread",	    [GT_CALL] = "call",	    [GT_RETURN] = "return",
	[GT_OVERFLOW] = "overflow", [GT_RESUME] = "resume", [GT_EXIT] = "exit",
};

static int write_ground_truth(struct session *s, const struct output *out, const char *path)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return rv_error_set(s->err, errno, "cannot create %s", path);
	fprintf(f, "# softpt ground truth 1: the calls and returns of every thread, in order\n"
		   "# thread TID PID FIRST_IP | call TID INSN FROM TO | return TID INSN FROM TO\n"
		   "# overflow TID INSN | resume TID INSN IP | exit TID INSN\n");

	struct kept *kept = calloc(s->nr_threads + 1, sizeof(*kept));
	if (!kept) {
		fclose(f);
		return rv_error_set(s->err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nr_threads; i++) {
		kept[i] = kept_trace(out->o, s->threads[i].per_out[out - s->outs].gen);
		if (!kept[i].all)
			fprintf(f,
				"# snapshot of thread %u: the last %zu bytes from offset %" PRIu64
				"; events before its PSB #%" PRIu64 " are not in the capture\n",
				s->threads[i].tid, kept[i].size, kept[i].offset, kept[i].first_psb);
	}
	for (size_t i = 0; i < out->nr_events; i++) {
		const struct gt_event *e = &out->events[i];
		const struct kept *k = &kept[e->thread_idx];
		bool structural = e->kind == GT_THREAD || e->kind == GT_EXIT;
		if (!k->all && !structural &&
		    (k->first_psb == UINT64_MAX || e->psbs <= k->first_psb))
			continue;
		switch (e->kind) {
		case GT_THREAD:
			fprintf(f, "thread %u %" PRIu64 " 0x%" PRIx64 "\n", e->tid, e->a, e->b);
			break;
		case GT_CALL:
		case GT_RETURN:
			fprintf(f, "%s %u %" PRIu64 " 0x%" PRIx64 " 0x%" PRIx64 "\n",
				gt_names[e->kind], e->tid, e->insn, e->a, e->b);
			break;
		case GT_RESUME:
			fprintf(f, "resume %u %" PRIu64 " 0x%" PRIx64 "\n", e->tid, e->insn, e->a);
			break;
		default:
			fprintf(f, "%s %u %" PRIu64 "\n", gt_names[e->kind], e->tid, e->insn);
			break;
		}
	}
	free(kept);
	if (fclose(f))
		return rv_error_set(s->err, errno, "cannot write %s", path);
	return 0;
}

static int write_vdso(struct session *s, const char *path)
{
	if (!s->vdso)
		return 0;
	FILE *f = fopen(path, "we");
	if (!f || fwrite(s->vdso, 1, s->vdso_size, f) != s->vdso_size) {
		if (f)
			fclose(f);
		return rv_error_set(s->err, errno ? errno : EIO, "cannot write %s", path);
	}
	if (fclose(f))
		return rv_error_set(s->err, errno, "cannot write %s", path);
	return 0;
}

static int write_output(struct session *s, const struct output *out)
{
	char path[PATH_MAX];
	int rc;

	snprintf(path, sizeof(path), "%s/perf.data", out->o->dir);
	if ((rc = write_capture(s, out, path)))
		return rc;
	snprintf(path, sizeof(path), "%s/ground-truth.txt", out->o->dir);
	if ((rc = write_ground_truth(s, out, path)))
		return rc;
	snprintf(path, sizeof(path), "%s/vdso.so", out->o->dir);
	return write_vdso(s, path);
}

/* ---- the command line ---- */

/* mkdir -p, so that a mistyped directory is reported before a long run. */
static int make_dir(const char *dir)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The TSC's rate, against CLOCK_MONOTONIC over 20 ms. */
static uint64_t measure_tsc_hz(void)
{
	uint64_t ns0 = now_ns(), tsc0 = __rdtsc();
	struct timespec pause = { 0, 20000000 };

	nanosleep(&pause, NULL);
	uint64_t ns1 = now_ns(), tsc1 = __rdtsc();
	if (ns1 <= ns0 || tsc1 <= tsc0)
		return 1000000000u;
	return (uint64_t)((double)(tsc1 - tsc0) * 1e9 / (double)(ns1 - ns0));
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: softpt [OPTIONS] -o DIR [[OPTIONS] -o DIR2 ...] -- COMMAND [ARGS...]\n"
		"\n"
		"Runs COMMAND under ptrace, single-steps every user-space instruction of\n"
		"every thread, and writes the Intel PT trace that PT hardware tracing user\n"
		"space would have produced:\n"
		"  DIR/perf.data         the capture, as `perf record -e intel_pt//u "
		"--per-thread`\n"
		"                        lays it out (`perf script --itrace=cr` decodes it)\n"
		"  DIR/ground-truth.txt  every call and return softpt saw, per thread\n"
		"  DIR/vdso.so           the vdso's code, for decoders\n"
		"\n"
		"Options apply to the -o that follows them, so one run (stepping is what\n"
		"costs) can make several captures, each configured differently:\n"
		"  -o, --output DIR           where to write (created if missing)\n"
		"  --timer-resolution R       low (tsc,mtc,mtc_period=3: perf's default),\n"
		"                             normal (+cyc,cyc_thresh=1,mtc_period=0),\n"
		"                             high (normal + noretcomp), or\n"
		"                             custom:KEY=VAL,... with keys tsc, mtc, mtc_period,\n"
		"                             cyc, cyc_thresh, noretcomp, psb_period\n"
		"                             (default: low)\n"
		"  --noretcomp                no return compression: every ret gets a TIP\n"
		"  --psb-period N             a PSB every 2^(11+N) bytes (0..15, default 3)\n"
		"  --snapshot-size BYTES      keep only the last BYTES of each thread's trace,\n"
		"                             as a snapshot of a wrapped AUX buffer (K/M "
		"suffixes)\n"
		"  --inject-overflow N[:LEN]  lose LEN instructions' packets (default %d) after\n"
		"                             the N-th instruction, then write OVF\n"
		"Global options:\n"
		"  -q, --quiet                no statistics on stderr\n"
		"  -h, --help                 this text\n"
		"\n"
		"Exit status: COMMAND's, or 1 when softpt itself failed.\n",
		DEFAULT_GAP_INSNS);
}

static int parse_uint(const char *s, uint64_t *out, bool suffixes)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	if (suffixes && (*end == 'k' || *end == 'K'))
		v <<= 10, end++;
	else if (suffixes && (*end == 'm' || *end == 'M'))
		v <<= 20, end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int set_custom(struct ptgen_config *c, const char *spec)
{
	char *copy = strdup(spec), *save = NULL;
	int rc = 0;

	if (!copy)
		return -1;
	for (char *kv = strtok_r(copy, ",", &save); kv && rc == 0;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		uint64_t v;
		if (!eq || parse_uint(eq + 1, &v, false)) {
			rc = -1;
			break;
		}
		*eq = 0;
		if (!strcmp(kv, "tsc") && v <= 1)
			c->tsc = v;
		else if (!strcmp(kv, "mtc") && v <= 1)
			c->mtc = v;
		else if (!strcmp(kv, "mtc_period") && v <= 15)
			c->mtc_period = (unsigned)v;
		else if (!strcmp(kv, "cyc") && v <= 1)
			c->cyc = v;
		else if (!strcmp(kv, "cyc_thresh") && v <= 15)
			c->cyc_thresh = (unsigned)v;
		else if (!strcmp(kv, "noretcomp") && v <= 1)
			c->noretcomp = v;
		else if (!strcmp(kv, "psb_period") && v <= 15)
			c->psb_period = (unsigned)v;
		else
			rc = -1;
	}
	free(copy);
	return rc;
}

static int set_timer_resolution(struct ptgen_config *c, const char *r)
{
	c->tsc = true;
	c->mtc = true;
	c->mtc_period = 3;
	c->cyc = false;
	c->cyc_thresh = 0;
	c->noretcomp = false;
	if (!strcmp(r, "low"))
		return 0;
	if (!strcmp(r, "normal") || !strcmp(r, "high")) {
		c->cyc = true;
		c->cyc_thresh = 1;
		c->mtc_period = 0;
		c->noretcomp = !strcmp(r, "high");
		return 0;
	}
	if (!strncmp(r, "custom:", 7))
		return set_custom(c, r + 7);
	return -1;
}

/* The options gathered for the next -o. */
struct pending {
	const char *resolution;
	bool noretcomp;
	int64_t psb_period;
	uint64_t snapshot_size, overflow_at, overflow_len;
	bool any;
};

static int finish_output(struct options *o, struct pending *p, const char *dir)
{
	struct output_opts *outs = realloc(o->outs, (o->nr_outs + 1) * sizeof(*outs));

	if (!outs)
		return -1;
	o->outs = outs;
	struct output_opts *out = &outs[o->nr_outs];
	memset(out, 0, sizeof(*out));
	out->dir = dir;
	out->pt.psb_period = 3;
	if (set_timer_resolution(&out->pt, p->resolution ? p->resolution : "low")) {
		fprintf(stderr,
			"softpt: unknown --timer-resolution '%s'; use low, normal, high or "
			"custom:KEY=VAL,... (keys tsc, mtc, mtc_period, cyc, cyc_thresh, "
			"noretcomp, psb_period)\n",
			p->resolution);
		return -1;
	}
	if (p->noretcomp)
		out->pt.noretcomp = true;
	if (p->psb_period >= 0)
		out->pt.psb_period = (unsigned)p->psb_period;
	out->pt.tsc_ctc_ratio_n = SOFTPT_TSC_CTC_N;
	out->pt.tsc_ctc_ratio_d = SOFTPT_TSC_CTC_D;
	out->pt.cbr = SOFTPT_MAX_NONTURBO_RATIO;
	out->pt.max_nonturbo_ratio = SOFTPT_MAX_NONTURBO_RATIO;
	out->snapshot_size = p->snapshot_size;
	out->overflow_at = p->overflow_at;
	out->overflow_len = p->overflow_len;
	o->nr_outs++;
	*p = (struct pending){ .psb_period = -1 };
	return 0;
}

static int parse_overflow(struct pending *p, char *arg)
{
	char *colon = strchr(arg, ':');

	p->overflow_len = DEFAULT_GAP_INSNS;
	if (colon) {
		*colon = 0;
		if (parse_uint(colon + 1, &p->overflow_len, false) || !p->overflow_len) {
			fprintf(stderr, "softpt: bad overflow length '%s'\n", colon + 1);
			return -1;
		}
	}
	if (parse_uint(arg, &p->overflow_at, false) || !p->overflow_at) {
		fprintf(stderr,
			"softpt: --inject-overflow takes an instruction number N >= 1, not '%s'\n",
			arg);
		return -1;
	}
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "timer-resolution", required_argument, NULL, 't' },
		{ "noretcomp", no_argument, NULL, 'n' },
		{ "psb-period", required_argument, NULL, 'p' },
		{ "snapshot-size", required_argument, NULL, 's' },
		{ "inject-overflow", required_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct pending p = { .psb_period = -1 };
	int c;

	while ((c = getopt_long(argc, argv, "+o:qh", longopts, NULL)) != -1) {
		uint64_t v;
		switch (c) {
		case 'o':
			if (finish_output(o, &p, optarg))
				return -1;
			break;
		case 't':
			p.resolution = optarg;
			p.any = true;
			break;
		case 'n':
			p.noretcomp = true;
			p.any = true;
			break;
		case 'p':
			if (parse_uint(optarg, &v, false) || v > 15) {
				fprintf(stderr, "softpt: --psb-period takes 0 to 15, not '%s'\n",
					optarg);
				return -1;
			}
			p.psb_period = (int64_t)v;
			p.any = true;
			break;
		case 's':
			if (parse_uint(optarg, &p.snapshot_size, true) || p.snapshot_size < 64) {
				fprintf(stderr,
					"softpt: --snapshot-size takes a size of at least 64 "
					"bytes, "
					"not '%s'\n",
					optarg);
				return -1;
			}
			p.any = true;
			break;
		case 'v':
			if (parse_overflow(&p, optarg))
				return -1;
			p.any = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (o->nr_outs == 0) {
		fprintf(stderr, "softpt: say where to write the capture with -o DIR\n");
		return -1;
	}
	if (p.any) {
		fprintf(stderr, "softpt: options after the last -o apply to no capture; put them "
				"before the -o they are for\n");
		return -1;
	}
	if (optind >= argc) {
		fprintf(stderr, "softpt: give the command to run after --\n");
		return -1;
	}
	o->argv = argv + optind;
	return 0;
}

static void free_session(struct session *s)
{
	for (size_t i = 0; i < s->nr_threads; i++) {
		for (size_t j = 0; s->threads[i].per_out && j < s->opt->nr_outs; j++)
			ptgen_free(s->threads[i].per_out[j].gen);
		free(s->threads[i].per_out);
	}
	for (size_t j = 0; s->outs && j < s->opt->nr_outs; j++)
		free(s->outs[j].events);
	free(s->outs);
	free(s->threads);
	free(s->sideband);
	free(s->maps);
	free(s->vdso);
}

static void print_stats(const struct session *s, uint64_t elapsed_ns,
			const struct stepper_stats *st)
{
	double secs = (double)elapsed_ns / 1e9;

	fprintf(stderr,
		"softpt: %" PRIu64 " instructions of %zu thread(s) single-stepped in %.2f s "
		"(%.0f instructions/s, %" PRIu64 " decoded)\n",
		s->total_insns, s->nr_threads, secs, secs > 0 ? (double)s->total_insns / secs : 0.0,
		st->decoded);
	for (size_t j = 0; j < s->opt->nr_outs; j++) {
		uint64_t bytes = 0, packets = 0, psbs = 0;
		for (size_t i = 0; i < s->nr_threads; i++) {
			size_t size;
			const struct ptgen *g = s->threads[i].per_out[j].gen;
			ptgen_data(g, &size);
			bytes += size;
			packets += ptgen_packet_count(g);
			psbs += ptgen_psb_count(g);
		}
		fprintf(stderr,
			"softpt: %s: %" PRIu64 " calls, %" PRIu64 " returns; %" PRIu64
			" bytes of PT in %" PRIu64 " packets, %" PRIu64 " PSBs\n",
			s->opt->outs[j].dir, s->outs[j].calls, s->outs[j].returns, bytes, packets,
			psbs);
	}
}

int main(int argc, char **argv)
{
	struct options opt = { .argc = argc, .argv_self = argv };
	struct rv_error err = { 0 };
	struct stepper_stats stats = { 0 };
	int status = 0;

	if (parse_options(argc, argv, &opt))
		return 1;

	for (size_t i = 0; i < opt.nr_outs; i++) {
		if (make_dir(opt.outs[i].dir)) {
			fprintf(stderr, "softpt: cannot create %s: %s\n", opt.outs[i].dir,
				strerror(errno));
			free(opt.outs);
			return 1;
		}
	}

	struct session s = { .opt = &opt, .err = &err };
	s.outs = calloc(opt.nr_outs, sizeof(*s.outs));
	if (!s.outs) {
		fprintf(stderr, "softpt: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < opt.nr_outs; i++)
		s.outs[i].o = &opt.outs[i];
	s.tsc_hz = measure_tsc_hz();
	s.tsc = __rdtsc();
	rv_perf_time_conv_from_freq(&s.time_conv, s.tsc_hz, s.tsc, now_ns());
	s.synth.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			      PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	s.synth.sample_id_all = true;

	static const struct stepper_ops ops = {
		.thread_begin = on_thread_begin,
		.retire = on_retire,
		.async = on_async,
		.resume = on_resume,
		.maps_changed = on_maps_changed,
		.thread_end = on_thread_end,
	};
	uint64_t t0 = now_ns();
	int rc = stepper_run(opt.argv, &ops, &s, &status, &stats, &err);
	uint64_t elapsed = now_ns() - t0;
	for (size_t i = 0; rc == 0 && i < opt.nr_outs; i++)
		rc = write_output(&s, &s.outs[i]);
	if (rc) {
		fprintf(stderr, "softpt: %s\n", err.message);
		free_session(&s);
		free(opt.outs);
		return 1;
	}
	if (!opt.quiet)
		print_stats(&s, elapsed, &stats);
	free_session(&s);
	free(opt.outs);
	return status;
}
