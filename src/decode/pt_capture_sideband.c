/* pt_capture_sideband.c: an Intel PT capture's sideband, parsed in the pass
 * over its records (KSYMBOL and TEXT_POKE handed to pt_capture_bpf.c), then
 * sorted by time (perf writes it per CPU, so the file
 * is not in time order) and replayed: threads and their names, processes and
 * their generations (one per exec), each generation's executable mappings and
 * libipt image, and per CPU the timeline of which task ran; then the window
 * marks of an ungated --filter recording, per thread. And the lookups the
 * decode makes in what the replay built.
 *
 * Not here: the pass over the file (pt_capture.c), kernel code
 * (pt_capture_kernel.c), decoding (pt_capture_decode.c).
 */
#define RV_LOG_DOMAIN "pt-capture"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/marks.h"
#include "capture/synth.h"
#include "decode/pt_capture_internal.h"
#include "decode/pt_sections.h"
#include "util/array.h"
#include "util/log.h"

/* Limits against corrupt input: a record names at most this many CPUs. */
#define MAX_CPU_ID 65536u

#ifndef PERF_RECORD_MISC_COMM_EXEC
#define PERF_RECORD_MISC_COMM_EXEC (1 << 13)
#endif

/* ---- small helpers ---- */

static uint64_t hash_id(uint32_t id)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull;

	return x ^ (x >> 29);
}

/* Index of id, or SIZE_MAX. */
static size_t index_get(const struct ptc_index *ix, uint32_t id)
{
	if (!ix->cap)
		return SIZE_MAX;
	for (size_t i = hash_id(id) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
		uint64_t s = ix->slots[i];

		if (!s)
			return SIZE_MAX;
		if ((uint32_t)(s >> 32) == id)
			return (size_t)(uint32_t)s - 1;
	}
}

static bool index_put(struct ptc_index *ix, uint32_t id, size_t index)
{
	if ((ix->count + 1) * 2 > ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;
		uint64_t *slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return false;
		for (size_t i = 0; i < ix->cap; i++) {
			uint64_t s = ix->slots[i];

			if (!s)
				continue;
			size_t j = hash_id((uint32_t)(s >> 32)) & (cap - 1);
			while (slots[j])
				j = (j + 1) & (cap - 1);
			slots[j] = s;
		}
		free(ix->slots);
		ix->slots = slots;
		ix->cap = cap;
	}
	size_t i = hash_id(id) & (ix->cap - 1);
	while (ix->slots[i] && (uint32_t)(ix->slots[i] >> 32) != id)
		i = (i + 1) & (ix->cap - 1);
	if (!ix->slots[i])
		ix->count++;
	ix->slots[i] = (uint64_t)id << 32 | (uint64_t)(index + 1);
	return true;
}

static uint32_t load_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Why the file at path cannot be read as code, or NULL when it can. */
static const char *file_problem(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return errno == ENOENT || errno == ENOTDIR ? "no such file" : strerror(errno);
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (access(path, R_OK))
		return strerror(errno);
	return NULL;
}

size_t ptc_count_until(const void *v, size_t nr, size_t size, uint64_t time)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t t;

		memcpy(&t, (const char *)v + mid * size, sizeof(t));
		if (t <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void ptc_mapping_init(struct ptc_mapping *m, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *path)
{
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = start + len < start ? UINT64_MAX : start + len;
	m->pgoff = pgoff;
	m->path = path;
	m->missing = SIZE_MAX;
}

/* ---- lookups (shared with pt_capture_decode.c) ---- */

struct ptc_thread *ptc_thread_find_mut(struct rv_pt_capture *c, uint32_t tid)
{
	size_t i = index_get(&c->thread_index, tid);

	return i == SIZE_MAX ? NULL : &c->threads[i];
}

const struct ptc_thread *ptc_thread_find(const struct rv_pt_capture *c, uint32_t tid)
{
	return ptc_thread_find_mut((struct rv_pt_capture *)c, tid);
}

const struct ptc_process *ptc_process_find(const struct rv_pt_capture *c, uint32_t pid)
{
	size_t i = index_get(&c->process_index, pid);

	return i == SIZE_MAX ? NULL : &c->processes[i];
}

const struct ptc_generation *ptc_generation_at(const struct ptc_process *p, uint64_t time)
{
	if (!p || !p->nr_gens)
		return NULL;
	/* the last generation that began at or before time, else the first */
	return &p->gens[ptc_count_until(p->gens + 1, p->nr_gens - 1, sizeof(*p->gens), time)];
}

const struct ptc_cpu *ptc_cpu_find(const struct rv_pt_capture *c, uint32_t cpu)
{
	for (size_t i = 0; i < c->nr_cpus; i++)
		if (c->cpus[i].cpu == cpu)
			return &c->cpus[i];
	return NULL;
}

bool ptc_task_at(const struct ptc_cpu *cpu, uint64_t time, uint32_t *pid, uint32_t *tid)
{
	size_t n;

	if (!cpu || !cpu->nr || cpu->points[0].time > time)
		return false;
	n = ptc_count_until(cpu->points, cpu->nr, sizeof(*cpu->points), time);
	*pid = cpu->points[n - 1].pid;
	*tid = cpu->points[n - 1].tid;
	return true;
}

size_t ptc_comm_at(const struct ptc_thread *t, uint64_t time)
{
	if (!t || !t->nr_comms)
		return SIZE_MAX;
	if (t->comms[0].time > time)
		return 0; /* named before its first COMM: take that one */
	return ptc_count_until(t->comms, t->nr_comms, sizeof(*t->comms), time) - 1;
}

const struct ptc_mapping *ptc_mapping_at(const struct ptc_mappings *m, uint64_t ip)
{
	/* newest first: a later mapping replaces what it overlaps */
	for (size_t i = m->nr; i-- > 0;)
		if (ip >= m->v[i].start && ip < m->v[i].end)
			return &m->v[i];
	return NULL;
}

size_t ptc_missing_at(const struct rv_pt_capture *c, uint32_t pid, uint64_t time, uint64_t ip)
{
	const struct ptc_mapping *m;

	if (ip >= PTC_KERNEL_START) {
		size_t bpf = ptc_kcode_missing_at(c, ip, time);

		return bpf != SIZE_MAX ? bpf : ptc_kernel_missing_at(c, ip);
	}
	const struct ptc_generation *g = ptc_generation_at(ptc_process_find(c, pid), time);
	if (!g)
		return SIZE_MAX;
	m = ptc_mapping_at(&g->maps, ip);
	return m ? m->missing : SIZE_MAX;
}

/* ---- sideband records, parsed ---- */

/* One sideband record, kept for replay in time order. */
struct ptc_sb_record {
	uint64_t time;
	uint64_t order; /* position in the file, for ties */
	uint32_t type;
	uint16_t misc;
	uint32_t cpu;
	uint32_t pid, tid;   /* the record's task (switches: the sample_id's) */
	uint32_t ppid, ptid; /* FORK/EXIT; switches: the next or previous task */
	uint64_t start, len, pgoff;
	bool flag; /* COMM: exec; SWITCH: out; MMAP: executable */
	const char *name;
};

/* Copies a NUL-terminated string that must end within [p, p + room). */
static const char *record_string(struct rv_pt_capture *c, const uint8_t *p, size_t room, bool *bad)
{
	size_t n = strnlen((const char *)p, room);

	if (n == room) {
		*bad = true;
		return NULL;
	}
	return ptc_arena_strndup(&c->arena, (const char *)p, n);
}

int ptc_sideband_add(struct rv_pt_capture *c, struct ptc_sideband *sb,
		     const struct perf_event_header *h, uint64_t order, struct rv_error *err)
{
	const uint8_t *b = (const uint8_t *)h;
	struct rv_perf_sample_id sid = { 0 };
	struct rv_error ignored;
	struct ptc_sb_record r;
	bool bad = false;

	memset(&r, 0, sizeof(r));
	r.type = h->type;
	r.misc = h->misc;
	r.order = order;
	r.cpu = PTC_NONE;
	r.pid = r.tid = r.ppid = r.ptid = PTC_NONE;
	bool have_sid =
		rv_perf_reader_parse_sample_id(c->reader, h, &sid, &ignored) == 0 && sid.valid;

	if (have_sid) {
		r.time = sid.time;
		r.cpu = sid.cpu;
		r.pid = sid.pid;
		r.tid = sid.tid;
	}
	switch (h->type) {
	case PERF_RECORD_COMM:
		if (h->size < 17)
			return 0;
		r.pid = load_u32(b + 8);
		r.tid = load_u32(b + 12);
		r.flag = (h->misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
		r.name = record_string(c, b + 16, h->size - 16, &bad);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (h->size < 32)
			return 0;
		r.pid = load_u32(b + 8);
		r.ppid = load_u32(b + 12);
		r.tid = load_u32(b + 16);
		r.ptid = load_u32(b + 20);
		if (!have_sid)
			r.time = load_u64(b + 24);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct rv_perf_mmap m;

		if (rv_perf_mmap_parse(h, &m))
			return 0; /* short, or an unterminated name: skipped */
		r.pid = m.pid;
		r.tid = m.tid;
		r.start = m.start;
		r.len = m.len;
		r.pgoff = m.pgoff;
		r.flag = m.executable;
		r.name = ptc_arena_strndup(&c->arena, m.filename, strlen(m.filename));
		break;
	}
	case PERF_RECORD_ITRACE_START: {
		struct rv_perf_itrace_start it;

		if (rv_perf_itrace_start_parse(h, &it, &ignored))
			return 0;
		r.pid = it.pid;
		r.tid = it.tid;
		break;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		struct rv_perf_switch sw;

		if (!have_sid || rv_perf_switch_parse(h, &sw, &ignored))
			return 0; /* a switch without task, CPU and time says nothing */
		r.flag = sw.out;
		r.ppid = sw.next_prev_pid;
		r.ptid = sw.next_prev_tid;
		break;
	}
	case PERF_RECORD_KSYMBOL:
	case PERF_RECORD_TEXT_POKE:
		/* kernel code that changes: kept apart (pt_capture_bpf.c) */
		return ptc_kcode_add(c, h, have_sid ? sid.time : 0, order, err);
	default:
		return 0;
	}
	if (bad)
		return 0; /* an unterminated name: skip the record rather than guess */
	if ((h->type == PERF_RECORD_COMM || h->type == PERF_RECORD_MMAP ||
	     h->type == PERF_RECORD_MMAP2) &&
	    !r.name)
		return ptc_nomem(err);
	if ((h->type == PERF_RECORD_MMAP || h->type == PERF_RECORD_MMAP2) && r.name &&
	    !strncmp(r.name, PTC_KERNEL_NAME, strlen(PTC_KERNEL_NAME)) &&
	    r.name[strlen(PTC_KERNEL_NAME)]) {
		/* perf's kernel map: pgoff is the address of the symbol it names */
		sb->kernel_ref_sym = r.name + strlen(PTC_KERNEL_NAME);
		sb->kernel_ref_addr = r.pgoff;
	}
	if (rv_array_grow(&sb->v, &sb->cap, sb->nr, sizeof(*sb->v), 8))
		return ptc_nomem(err);
	sb->v[sb->nr++] = r;
	return 0;
}

static int compare_sb(const void *a, const void *b)
{
	const struct ptc_sb_record *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* ---- the replay: threads, processes, images, CPUs ---- */

static struct ptc_thread *thread_get(struct rv_pt_capture *c, uint32_t tid, uint32_t pid)
{
	struct ptc_thread *t = ptc_thread_find_mut(c, tid);

	if (t) {
		if (pid != PTC_NONE)
			t->pid = pid;
		return t;
	}
	if (rv_array_reserve(&c->threads, &c->cap_threads, c->nr_threads + 1, sizeof(*c->threads),
			     8) ||
	    !index_put(&c->thread_index, tid, c->nr_threads))
		return NULL;
	t = &c->threads[c->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid != PTC_NONE ? pid : tid;
	return t;
}

static bool thread_add_comm(struct rv_pt_capture *c, struct ptc_thread *t, uint64_t time,
			    const char *name)
{
	if (!name)
		return true;
	if (t->nr_comms && !strcmp(t->comms[t->nr_comms - 1].name, name))
		return true; /* perf repeats the name after exec; nothing changed */
	if (rv_array_reserve(&t->comms, &t->cap_comms, t->nr_comms + 1, sizeof(*t->comms), 8))
		return false;
	t->comms[t->nr_comms++] = (struct ptc_comm){ .time = time, .name = name };
	return true;
}

static int new_generation(struct rv_pt_capture *c, struct ptc_process *p, uint64_t time,
			  struct rv_error *err)
{
	if (rv_array_reserve(&p->gens, &p->cap_gens, p->nr_gens + 1, sizeof(*p->gens), 8))
		return ptc_nomem(err);
	struct ptc_generation *g = &p->gens[p->nr_gens];
	memset(g, 0, sizeof(*g));
	g->time = time;
	g->image = rv_pt_image_alloc(NULL);
	if (!g->image)
		return ptc_nomem(err);
	p->nr_gens++;
	for (size_t i = 0; i < c->nr_kernel_isids; i++) {
		int rc = rv_pt_sections_add_cached(g->image, c->iscache, c->kernel_isids[i]);

		if (rc < 0)
			return rv_error_set(err, ENOMEM, "cannot add kernel code to an image: %s",
					    pt_errstr(pt_errcode(rc)));
	}
	return 0;
}

static struct ptc_process *process_get(struct rv_pt_capture *c, uint32_t pid, struct rv_error *err)
{
	size_t i = index_get(&c->process_index, pid);

	if (i != SIZE_MAX)
		return &c->processes[i];
	if (rv_array_reserve(&c->processes, &c->cap_processes, c->nr_processes + 1,
			     sizeof(*c->processes), 8) ||
	    !index_put(&c->process_index, pid, c->nr_processes)) {
		ptc_nomem(err);
		return NULL;
	}
	struct ptc_process *p = &c->processes[c->nr_processes++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	if (new_generation(c, p, 0, err))
		return NULL;
	return p;
}

/* Adds a mapping to a generation: its image and, when its code is readable,
 * the section; the symbolizer when `report`. */
static int generation_add(struct rv_pt_capture *c, uint32_t pid, struct ptc_generation *g,
			  const struct ptc_mapping *m, bool report, struct rv_error *err)
{
	if (rv_array_reserve(&g->maps.v, &g->maps.cap, g->maps.nr + 1, sizeof(*g->maps.v), 8))
		return ptc_nomem(err);
	g->maps.v[g->maps.nr++] = *m;
	if (m->isid > 0) {
		int rc = rv_pt_sections_add_cached(g->image, c->iscache, m->isid);

		if (rc < 0)
			return rv_error_set(err, ENOMEM,
					    "cannot add %s to the image of process %u: %s", m->path,
					    pid, pt_errstr(pt_errcode(rc)));
	}
	if (report && c->symbolizer) {
		bool vdso = !strcmp(m->path, "[vdso]") && c->vdso;

		return rv_symbolizer_add_mapping(c->symbolizer, pid, m->start, m->end - m->start,
						 vdso ? 0 : m->pgoff, true,
						 vdso ? c->vdso : m->path, err);
	}
	return 0;
}

/* Where a user mapping's code comes from; *missing is set when it cannot be read. */
static int user_mapping(struct rv_pt_capture *c, const struct ptc_sb_record *r,
			struct ptc_mapping *m, struct rv_error *err)
{
	const char *file = r->name, *why = NULL;
	uint64_t offset = r->pgoff;
	char msg[256];

	ptc_mapping_init(m, r->start, r->len, r->pgoff, r->name);
	if (!strcmp(r->name, "[vdso]")) {
		file = c->vdso;
		offset = 0;
		if (!file)
			why = "no vdso.so in the capture's directory";
	} else if (r->name[0] != '/' || !strncmp(r->name, "//", 2) ||
		   strstr(r->name, " (deleted)")) {
		why = "not backed by a file (anonymous, special or deleted)";
	} else {
		why = file_problem(r->name);
	}
	if (!why) {
		int isid = ptc_add_section(c, file, offset, r->len, r->start);

		if (isid == -pte_nomem)
			return ptc_nomem(err);
		if (isid < 0) {
			snprintf(msg, sizeof(msg), "cannot read its code: %s",
				 pt_errstr(pt_errcode(isid)));
			why = msg;
		} else {
			m->isid = isid;
		}
	}
	if (why) {
		m->missing = ptc_missing_add(c, r->name, why, false);
		if (m->missing == SIZE_MAX)
			return ptc_nomem(err);
	}
	return 0;
}

static int on_mmap(struct rv_pt_capture *c, const struct ptc_sb_record *r, struct rv_error *err)
{
	bool kernel = r->pid == PTC_NONE ||
		      (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	struct ptc_mapping m;
	int ret;

	if (!r->flag || !r->len)
		return 0; /* data: no code */
	if (kernel)
		return ptc_kernel_mapping(c, r->start, r->len, r->pgoff, r->name, err);
	struct ptc_process *p = process_get(c, r->pid, err);
	if (!p)
		return -ENOMEM;
	ret = user_mapping(c, r, &m, err);
	if (ret)
		return ret;
	return generation_add(c, p->pid, &p->gens[p->nr_gens - 1], &m, true, err);
}

static int on_exec(struct rv_pt_capture *c, const struct ptc_sb_record *r, struct rv_error *err)
{
	struct ptc_process *p = process_get(c, r->pid, err);

	if (!p)
		return -ENOMEM;
	if (c->symbolizer)
		rv_symbolizer_forget_process(c->symbolizer, r->pid);
	/* the first generation, still empty, is this exec's */
	if (p->nr_gens == 1 && !p->gens[0].maps.nr)
		return 0;
	return new_generation(c, p, r->time, err);
}

/* A new process (not a thread) starts with its parent's mappings. */
static int on_fork_process(struct rv_pt_capture *c, const struct ptc_sb_record *r,
			   struct rv_error *err)
{
	bool known = ptc_process_find(c, r->pid) != NULL;
	struct ptc_process *p = process_get(c, r->pid, err);
	int ret;

	if (!p)
		return -ENOMEM;
	if (known) {
		/* the pid was used before: a new process now */
		if (c->symbolizer)
			rv_symbolizer_forget_process(c->symbolizer, r->pid);
		ret = new_generation(c, p, r->time, err);
		if (ret)
			return ret;
	}
	const struct ptc_process *parent = ptc_process_find(c, r->ppid);
	if (!parent || parent == p)
		return 0;
	const struct ptc_generation *pg = &parent->gens[parent->nr_gens - 1];
	for (size_t i = 0; i < pg->maps.nr; i++) {
		ret = generation_add(c, p->pid, &p->gens[p->nr_gens - 1], &pg->maps.v[i], true,
				     err);
		if (ret)
			return ret;
	}
	return 0;
}

static int cpu_point(struct rv_pt_capture *c, uint32_t cpu, uint64_t time, uint32_t pid,
		     uint32_t tid, struct rv_error *err)
{
	struct ptc_cpu *k = (struct ptc_cpu *)ptc_cpu_find(c, cpu);

	if (cpu == PTC_NONE || cpu >= MAX_CPU_ID)
		return 0;
	if (!k) {
		if (rv_array_reserve(&c->cpus, &c->cap_cpus, c->nr_cpus + 1, sizeof(*c->cpus), 8))
			return ptc_nomem(err);
		k = &c->cpus[c->nr_cpus++];
		memset(k, 0, sizeof(*k));
		k->cpu = cpu;
	}
	if (k->nr && k->points[k->nr - 1].pid == pid && k->points[k->nr - 1].tid == tid)
		return 0;
	if (rv_array_reserve(&k->points, &k->cap, k->nr + 1, sizeof(*k->points), 8))
		return ptc_nomem(err);
	k->points[k->nr++] = (struct ptc_switch){ .time = time, .pid = pid, .tid = tid };
	if (tid != PTC_NONE && !thread_get(c, tid, pid))
		return ptc_nomem(err);
	return 0;
}

static int replay_one(struct rv_pt_capture *c, const struct ptc_sb_record *r, struct rv_error *err)
{
	struct ptc_thread *t;
	int ret;

	switch (r->type) {
	case PERF_RECORD_COMM:
		t = thread_get(c, r->tid, r->pid);
		if (!t || !thread_add_comm(c, t, r->time, r->name))
			return ptc_nomem(err);
		if (!r->flag)
			return 0;
		ret = on_exec(c, r, err);
		if (ret)
			return ret;
		return cpu_point(c, r->cpu, r->time, r->pid, r->tid, err);
	case PERF_RECORD_FORK: {
		const struct ptc_thread *parent = ptc_thread_find(c, r->ptid);
		const char *name = NULL;

		if (parent) {
			size_t i = ptc_comm_at(parent, r->time);

			name = i == SIZE_MAX ? NULL : parent->comms[i].name;
		}
		t = thread_get(c, r->tid, r->pid);
		if (!t || !thread_add_comm(c, t, r->time, name))
			return ptc_nomem(err);
		t->exited = false;
		return r->pid != r->ppid ? on_fork_process(c, r, err) : 0;
	}
	case PERF_RECORD_EXIT:
		t = thread_get(c, r->tid, r->pid);
		if (!t)
			return ptc_nomem(err);
		t->exited = true;
		t->exit_time = r->time;
		return 0;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(c, r, err);
	case PERF_RECORD_ITRACE_START:
		return cpu_point(c, r->cpu, r->time, r->pid, r->tid, err);
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		/* A task's trace runs on until its PT event is scheduled out,
		 * which is after the OUT record: the next task owns the CPU from
		 * its IN record on. An OUT only says who ran before it. */
		if (!r->flag)
			return cpu_point(c, r->cpu, r->time, r->pid, r->tid, err);
		if (!ptc_cpu_find(c, r->cpu))
			return cpu_point(c, r->cpu, 0, r->pid, r->tid, err);
		return 0;
	}
	return 0;
}

/* Threads named by nothing in the sideband get their process's name, or a
 * name that says what is known. */
static int name_threads(struct rv_pt_capture *c, struct rv_error *err)
{
	for (size_t i = 0; i < c->nr_buffers; i++) {
		const struct rv_perf_auxtrace *a = &c->buffers[i].aux;
		bool cpu_buffer = c->info.per_cpu_mmaps && a->cpu != PTC_NONE;

		/* per-CPU buffers may start before the sideband names a task */
		if (!thread_get(c, cpu_buffer ? PTC_NONE : a->tid, PTC_NONE))
			return ptc_nomem(err);
	}
	for (size_t i = 0; i < c->nr_threads; i++) {
		struct ptc_thread *t = &c->threads[i];
		const struct ptc_thread *main_thread;
		const char *name;
		char buf[48];

		if (t->nr_comms)
			continue;
		main_thread = ptc_thread_find(c, t->pid);
		if (main_thread && main_thread->nr_comms) {
			name = main_thread->comms[0].name;
		} else {
			if (t->tid == PTC_NONE)
				snprintf(buf, sizeof(buf), "[unknown]");
			else if (t->tid == 0)
				snprintf(buf, sizeof(buf), "swapper");
			else
				snprintf(buf, sizeof(buf), "[thread %u]", t->tid);
			name = ptc_arena_strndup(&c->arena, buf, strlen(buf));
		}
		if (!name || !thread_add_comm(c, &c->threads[i], 0, name))
			return ptc_nomem(err);
	}
	return 0;
}

static int compare_windows(const void *a, const void *b)
{
	const struct ptc_window *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* The window and trigger marks and --events samples, per thread in time
 * order: those that ended before any trace are left out (a snapshot holds the
 * end of the recording only), and a window that begins before the thread's previous one ended
 * begins at that end, so that the windows of a thread never overlap. */
static int prepare_windows(struct rv_pt_capture *c, struct rv_error *err)
{
	uint64_t start;
	size_t kept = 0, extras_before = 0;

	if (!c->nr_windows)
		return 0;
	start = ptc_trace_start(c);
	for (size_t i = 0; i < c->nr_windows; i++) {
		if (!start || c->windows[i].end > start)
			c->windows[kept++] = c->windows[i];
		else
			extras_before += c->windows[i].extra;
	}
	c->windows_before_trace = c->nr_windows - kept - extras_before;
	if (extras_before)
		rv_debug("%zu --events samples came before the trace begins (aged out of it); "
			 "left out",
			 extras_before);
	c->nr_windows = kept;
	qsort(c->windows, c->nr_windows, sizeof(*c->windows), compare_windows);
	for (size_t i = 0; i < c->nr_windows;) {
		size_t j;
		struct ptc_thread *t;

		uint64_t last_end = 0;

		for (j = i; j < c->nr_windows && c->windows[j].tid == c->windows[i].tid; j++) {
			struct ptc_window *w = &c->windows[j];

			if (w->trigger || w->extra)
				continue;
			if (w->begin < last_end)
				w->begin = last_end;
			last_end = w->end;
			c->nr_applied += (w->flags & RV_MARK_FLAG_APPLY) != 0;
		}
		t = thread_get(c, c->windows[i].tid, c->windows[i].pid);
		if (!t)
			return ptc_nomem(err);
		t->win_first = i;
		t->win_nr = j - i;
		i = j;
	}
	if (c->windows_before_trace)
		rv_debug("%zu --filter windows ended before the trace begins; left out",
			 c->windows_before_trace);
	return 0;
}

int ptc_sideband_replay(struct rv_pt_capture *c, struct ptc_sideband *sb, struct rv_error *err)
{
	int ret;

	qsort(sb->v, sb->nr, sizeof(*sb->v), compare_sb);
	for (size_t i = 0; i < sb->nr; i++) {
		ret = replay_one(c, &sb->v[i], err);
		if (ret)
			return ret;
	}
	ret = ptc_kernel_note_missing(c, err);
	if (!ret)
		ret = prepare_windows(c, err);
	return ret ? ret : name_threads(c, err);
}

void ptc_sideband_destroy(struct ptc_sideband *sb)
{
	free(sb->v);
	memset(sb, 0, sizeof(*sb));
}
