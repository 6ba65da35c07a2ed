/* test_gate.c: the BPF gate on real uprobes. tests/targets/windows counts its
 * own windows, slow windows, nested starts, triggers and stray stops; run under
 * the gate (started stopped, so every probe is in place before the first
 * window), the gate's counts and records must equal the program's. Also: a
 * uprobe event whose hits the gate suppresses writes no sample, and freeing
 * the gate leaves no event behind. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "record/gate.h"
#include "record/probe_site.h"
#include "record/target.h"

/* The program's slow windows sleep 4x this; fast ones do not sleep at all. */
#define THRESHOLD_US 10000 /* far above a preemption in a fast window, even on a loaded VM */
#define RING_PAGES   8

struct program_counts {
	unsigned long windows, slow, nested, triggers, unmatched, main_windows;
};

struct collected {
	unsigned long begins, ends, slow_ends, fired_ends, triggers, fired_triggers;
	unsigned long ends_not_longer_than_min; /* slow-flagged ends that were not slow */
	uint32_t tids[64];
	uint64_t last_time[64]; /* per thread: records of one thread are in time order */
	size_t nr_tids;
	bool time_went_back;
	uint32_t pid;
	bool other_pid;
};

static int collect(const struct rv_gate_record *r, void *ctx)
{
	struct collected *c = ctx;
	size_t i;

	if (r->pid != c->pid)
		c->other_pid = true;
	for (i = 0; i < c->nr_tids; i++)
		if (c->tids[i] == r->tid)
			break;
	if (i == c->nr_tids && c->nr_tids < 64)
		c->tids[c->nr_tids++] = r->tid;
	if (i < 64) {
		if (r->time_ns < c->last_time[i])
			c->time_went_back = true;
		c->last_time[i] = r->time_ns;
	}
	switch (r->type) {
	case RV_GATE_REC_WINDOW_BEGIN:
		c->begins++;
		break;
	case RV_GATE_REC_WINDOW_END:
		c->ends++;
		c->slow_ends += r->slow;
		c->fired_ends += r->fired;
		if (r->slow && r->duration_ns <= THRESHOLD_US * 1000ull)
			c->ends_not_longer_than_min++;
		break;
	case RV_GATE_REC_TRIGGER:
		c->triggers++;
		c->fired_triggers += r->fired;
		break;
	}
	return 0;
}

/* Starts windows ARGS stopped, its stdout into a temporary file. */
static void spawn_windows(struct rv_target *t, const char *threads, const char *iterations,
			  FILE **out)
{
	char threshold[16];
	char *argv[] = { (char *)build_path("tests/targets/windows"), threshold, (char *)threads,
			 (char *)iterations, NULL };
	struct rv_error err = { 0 };
	int saved;

	snprintf(threshold, sizeof(threshold), "%d", THRESHOLD_US);
	*out = tmpfile();
	cr_assert_not_null(*out);
	fflush(stdout);
	saved = dup(1);
	cr_assert_geq(saved, 0);
	cr_assert_geq(dup2(fileno(*out), 1), 0);
	cr_assert_eq(rv_target_spawn(t, argv, &err), 0, "%s", err.message);
	cr_assert_geq(dup2(saved, 1), 0);
	close(saved);
}

static void read_program_counts(FILE *out, struct program_counts *p)
{
	char line[256] = "";

	rewind(out);
	cr_assert_not_null(fgets(line, sizeof(line), out), "windows printed nothing");
	cr_assert_eq(sscanf(line,
			    "windows=%lu slow=%lu nested=%lu triggers=%lu unmatched=%lu "
			    "main_windows=%lu",
			    &p->windows, &p->slow, &p->nested, &p->triggers, &p->unmatched,
			    &p->main_windows),
		     6, "unexpected output: %s", line);
	fclose(out);
}

/* Lets the target run to its end, reading records meanwhile. */
static void run_to_exit(struct rv_target *t, struct rv_gate *g, struct collected *c)
{
	struct rv_error err = { 0 };
	int rounds = 0;

	c->pid = (uint32_t)t->pids[0];
	cr_assert_eq(rv_target_release(t, &err), 0, "%s", err.message);
	while (!rv_target_poll_exit(t)) {
		cr_assert_geq(rv_gate_poll(g, 50, collect, c, &err), 0, "%s", err.message);
		cr_assert_lt(++rounds, 600, "windows did not finish within 30 s");
	}
	cr_assert_eq(t->exit_status, 0, "windows failed (status 0x%x)", t->exit_status);
	while (rv_gate_poll(g, 0, collect, c, &err) > 0)
		;
}

static void resolve(const char *spec, struct rv_probe_site *site)
{
	struct rv_error err = { 0 };

	cr_assert_eq(
		rv_probe_site_resolve(spec, build_path("tests/targets/windows"), 0, site, &err), 0,
		"%s", err.message);
}

static struct rv_probe_site begin_site, end_site, trigger_site;

/* Skips without root; resolves the program's sites. */
static void prepare(void)
{
	require_root("gate");
	resolve("request_begin", &begin_site);
	resolve("request_end", &end_site);
	resolve("on_trigger", &trigger_site);
}

static struct rv_gate_site site(enum rv_gate_role role, const struct rv_probe_site *where)
{
	return (struct rv_gate_site){ .role = role, .path = where->path, .offset = where->offset };
}

/* Starts windows THREADS ITERATIONS stopped (spawn_windows) and a gate on it
 * with the sites attached. */
static struct rv_gate *gate_on_windows(struct rv_gate_config *config,
				       const struct rv_gate_site *sites, size_t nr_sites,
				       const char *threads, const char *iterations,
				       struct rv_target *t, FILE **out)
{
	struct rv_error err = { 0 };
	struct rv_gate *g;

	spawn_windows(t, threads, iterations, out);
	config->pid = t->pids[0];
	cr_assert_eq(rv_gate_open(&g, config, &err), 0, "%s", err.message);
	cr_assert_eq(rv_gate_attach(g, sites, nr_sites, &err), 0, "%s", err.message);
	return g;
}

/* Runs the program to its end (run_to_exit), then reads its counts and the
 * gate's. */
static void run_and_count(struct rv_target *t, struct rv_gate *g, struct collected *c, FILE *out,
			  struct program_counts *p, struct rv_gate_counts *n)
{
	struct rv_error err = { 0 };

	run_to_exit(t, g, c);
	read_program_counts(out, p);
	cr_assert_eq(rv_gate_counts(g, n, &err), 0, "%s", err.message);
}

Test(gate, counts_equal_the_programs_own)
{
	struct rv_gate_site sites[4];
	struct rv_gate_config config = { .min_duration_ns = THRESHOLD_US * 1000ull,
					 .multi_snapshot = true };
	struct program_counts p;
	struct rv_gate_counts n;
	struct collected c = { 0 };
	struct rv_target t;
	struct rv_gate *g;
	FILE *out;

	prepare();
	/* STOP and STOP_SAMPLE share request_end: two runs per hit, one state change. */
	sites[0] = site(RV_GATE_START, &begin_site);
	sites[1] = site(RV_GATE_STOP, &end_site);
	sites[2] = site(RV_GATE_STOP_SAMPLE, &end_site);
	sites[3] = site(RV_GATE_TRIGGER, &trigger_site);
	g = gate_on_windows(&config, sites, 4, "3", "40", &t, &out);
	cr_expect_eq(rv_gate_site_probe(g, 1), rv_gate_site_probe(g, 2));
	run_and_count(&t, g, &c, out, &p, &n);

	cr_assert_gt(p.slow, 0);
	cr_assert_lt(p.slow, p.windows);
	cr_assert_gt(p.nested, 0);
	cr_assert_eq(p.unmatched, 1);
	cr_expect_eq(n.windows, p.windows);
	cr_expect_eq(n.slow_windows, p.slow);
	cr_expect_eq(n.nested_starts, p.nested);
	cr_expect_eq(n.triggers, p.triggers);
	cr_expect_eq(n.unmatched_stops, p.unmatched);
	/* Per role: outermost STARTs and their STOPs fire, nested ones do not. */
	cr_expect_eq(n.runs[RV_GATE_START], p.windows + p.nested);
	cr_expect_eq(n.fired[RV_GATE_START], p.windows);
	cr_expect_eq(n.runs[RV_GATE_STOP], p.windows + p.nested + p.unmatched);
	cr_expect_eq(n.fired[RV_GATE_STOP], p.windows);
	cr_expect_eq(n.runs[RV_GATE_STOP_SAMPLE], n.runs[RV_GATE_STOP]);
	cr_expect_eq(n.fired[RV_GATE_STOP_SAMPLE], p.slow);
	cr_expect_eq(n.fired[RV_GATE_TRIGGER], p.triggers);
	for (int role = 0; role < RV_GATE_NR_ROLES; role++)
		cr_expect_eq(n.fired[role] + n.suppressed[role], n.runs[role]);
	/* request_end's hits are counted once although two events ran on each. */
	cr_expect_eq(n.hits,
		     p.windows + p.nested + (p.windows + p.nested + p.unmatched) + p.triggers);
	cr_expect_eq(n.run_mismatch, 0);
	cr_expect_eq(n.not_ready, 0);
	cr_expect_eq(n.other_process, 0);
	cr_expect_eq(n.record_drops, 0);
	cr_expect_eq(n.window_map_full, 0);

	/* The records say the same, from 4 threads (3 workers and the helper). */
	cr_expect_eq(c.begins, p.windows);
	cr_expect_eq(c.ends, p.windows);
	cr_expect_eq(c.slow_ends, p.slow);
	cr_expect_eq(c.fired_ends, p.slow);
	cr_expect_eq(c.ends_not_longer_than_min, 0);
	cr_expect_eq(c.triggers, p.triggers);
	cr_expect_eq(c.fired_triggers, p.triggers);
	cr_expect_eq(c.nr_tids, 4);
	cr_expect(!c.other_pid);
	cr_expect(!c.time_went_back);
	rv_gate_free(g);
}

Test(gate, first_snapshot_only_without_multi_snapshot)
{
	struct rv_gate_site sites[5];
	struct rv_gate_config config = { .min_duration_ns = THRESHOLD_US * 1000ull };
	struct program_counts p;
	struct rv_gate_counts n;
	struct collected c = { 0 };
	struct rv_target t;
	struct rv_gate *g;
	FILE *out;

	prepare();
	/* Three events on request_end (two STOPs): still one state change per hit. */
	sites[0] = site(RV_GATE_START, &begin_site);
	sites[1] = site(RV_GATE_STOP_SAMPLE, &end_site);
	sites[2] = site(RV_GATE_STOP, &end_site);
	sites[3] = site(RV_GATE_STOP, &end_site);
	sites[4] = site(RV_GATE_TRIGGER, &trigger_site);
	g = gate_on_windows(&config, sites, 5, "2", "24", &t, &out);
	run_and_count(&t, g, &c, out, &p, &n);

	cr_expect_eq(n.windows, p.windows);
	cr_expect_eq(n.slow_windows, p.slow);
	cr_expect_eq(n.nested_starts, p.nested);
	cr_expect_eq(n.triggers, p.triggers);
	cr_expect_eq(n.fired[RV_GATE_STOP], 2 * p.windows);
	cr_expect_eq(n.snapshots, 1);
	cr_expect_eq(n.fired[RV_GATE_STOP_SAMPLE] + n.fired[RV_GATE_TRIGGER], 1);
	cr_expect_eq(c.fired_ends + c.fired_triggers, 1);
	cr_expect_eq(n.run_mismatch, 0);
	rv_gate_free(g);
}

/* Takes one record and asks rv_gate_poll to stop. */
static int stop_after_one(const struct rv_gate_record *r, void *ctx)
{
	collect(r, ctx);
	return 1;
}

/* Counts PERF_RECORD_SAMPLEs in a perf ring (data pages after the header page). */
static unsigned long count_samples(void *base, size_t page)
{
	struct perf_event_mmap_page *header = base;
	const unsigned char *data = (const unsigned char *)base + page;
	uint64_t head = __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = header->data_tail, size = (uint64_t)RING_PAGES * page;
	unsigned long samples = 0;

	cr_assert_leq(head - tail, size, "the event's ring overflowed");
	while (tail < head) {
		struct perf_event_header h;

		cr_assert_geq(head - tail, sizeof(h));
		/* Records are 8-aligned and the ring's size a multiple of 8: no split header. */
		memcpy(&h, data + (tail % size), sizeof(h));
		cr_assert_geq(h.size, sizeof(h));
		if (h.type == PERF_RECORD_SAMPLE)
			samples++;
		tail += h.size;
	}
	return samples;
}

Test(gate, suppressed_hits_write_no_sample)
{
	struct rv_gate_site sites[2];
	struct rv_gate_config config = { 0 };
	struct rv_error err = { 0 };
	struct program_counts p;
	struct rv_gate_counts n;
	struct collected c = { 0 };
	struct rv_target t;
	struct rv_gate *g;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *rings[2];
	uint64_t event_count[2];
	struct collected stopped_at = { 0 };
	int got;
	FILE *out;

	prepare();
	sites[0] = site(RV_GATE_START, &begin_site);
	sites[1] = site(RV_GATE_STOP, &end_site);
	/* One thread: a per-process event's samples are its main thread's. */
	g = gate_on_windows(&config, sites, 2, "1", "30", &t, &out);
	for (int i = 0; i < 2; i++) {
		rings[i] = mmap(NULL, (1 + RING_PAGES) * page, PROT_READ | PROT_WRITE, MAP_SHARED,
				rv_gate_site_fd(g, (size_t)i), 0);
		cr_assert_neq(rings[i], MAP_FAILED, "cannot map the event's ring: %s",
			      strerror(errno));
	}
	/* The records wait in the ring until the end this time. */
	cr_assert_eq(rv_target_release(&t, &err), 0, "%s", err.message);
	cr_assert_eq(rv_target_wait(&t), 0);
	c.pid = (uint32_t)t.pids[0];
	read_program_counts(out, &p);
	cr_assert_eq(rv_gate_counts(g, &n, &err), 0, "%s", err.message);
	cr_expect_eq(rv_gate_poll(g, 0, stop_after_one, &stopped_at, &err), 1, "%s", err.message);
	cr_expect_eq(stopped_at.begins, 1, "the first record is a window's begin");
	while ((got = rv_gate_poll(g, 0, collect, &c, &err)) > 0)
		;
	cr_expect_eq(got, 0, "%s", err.message);
	cr_expect_eq(c.begins + 1, p.windows);
	cr_expect_eq(c.ends, p.windows);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(read(rv_gate_site_fd(g, (size_t)i), &event_count[i],
				  sizeof(event_count[i])),
			     (ssize_t)sizeof(event_count[i]));

	cr_assert_gt(p.nested, 0);
	cr_expect_eq(n.runs[RV_GATE_START], p.windows + p.nested);
	cr_expect_eq(n.fired[RV_GATE_START], p.windows);
	/* Every hit the gate let through is a sample; every suppressed one is not. */
	cr_expect_eq(count_samples(rings[0], page), p.windows);
	cr_expect_eq(count_samples(rings[1], page), p.windows);
	cr_expect_eq(event_count[0], p.windows);
	cr_expect_eq(event_count[1], p.windows);
	cr_expect_eq(p.main_windows, p.windows);
	for (int i = 0; i < 2; i++)
		munmap(rings[i], (1 + RING_PAGES) * page);
	rv_gate_free(g);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

Test(gate, free_leaves_no_event_behind)
{
	struct rv_gate_site sites[3];
	struct rv_gate_config config = { 0 };
	struct rv_error err = { 0 };
	struct collected c = { 0 };
	struct rv_gate_counts n;
	struct rv_target t;
	struct rv_gate *g;
	FILE *out;
	int before;

	prepare();
	sites[0] = site(RV_GATE_START, &begin_site);
	sites[1] = site(RV_GATE_STOP, &end_site);
	sites[2] = site(RV_GATE_TRIGGER, &trigger_site);
	before = open_fds();
	g = gate_on_windows(&config, sites, 3, "2", "4", &t, &out);
	cr_expect_gt(open_fds(), before + 1 + 3, "the target's output, three events and more");
	/* Detached before the program runs: no hit reaches the gate. */
	rv_gate_detach(g);
	cr_expect_eq(rv_gate_site_fd(g, 0), -1);
	run_to_exit(&t, g, &c);
	fclose(out);
	cr_assert_eq(rv_gate_counts(g, &n, &err), 0, "%s", err.message);
	cr_expect_eq(n.runs[RV_GATE_START] + n.runs[RV_GATE_STOP] + n.runs[RV_GATE_TRIGGER], 0);
	cr_expect_eq(c.begins + c.triggers, 0);
	rv_gate_free(g);
	cr_expect_eq(open_fds(), before, "%d open, %d before", open_fds(), before);
}

Test(gate, start_and_stop_on_one_instruction_is_refused)
{
	struct rv_gate_site sites[2];
	struct rv_gate_config config = { .pid = getpid() };
	struct rv_error err = { 0 };
	struct rv_gate *g;

	prepare();
	sites[0] = site(RV_GATE_START, &begin_site);
	sites[1] = site(RV_GATE_STOP, &begin_site);
	cr_assert_eq(rv_gate_open(&g, &config, &err), 0, "%s", err.message);
	cr_expect_eq(rv_gate_attach(g, sites, 2, &err), -EINVAL);
	cr_expect(strstr(err.message, "cannot both start and stop"), "%s", err.message);
	rv_gate_free(g);
}

/* The hold of Intel PT snapshots (bpf/gate.h), on the program's windows: a
 * slow window or a trigger that fires takes the hold, and until user space
 * releases it (its copy of the AUX area is made) no START opens a window
 * (it would resume PT over the trace being copied) and no trigger fires.
 * The test copies for HOLD_MS after each fired record, then releases. */
#define HOLD_MS 30

struct held {
	struct collected c;
	struct rv_gate *g;
	uint64_t held_from[256], held_until[256]; /* CLOCK_MONOTONIC */
	size_t nr_holds;
	uint64_t begins[4096];
	size_t nr_begins;
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int collect_held(const struct rv_gate_record *r, void *ctx)
{
	struct held *h = ctx;
	struct rv_error err = { 0 };

	collect(r, &h->c);
	if (r->type == RV_GATE_REC_WINDOW_BEGIN && h->nr_begins < 4096)
		h->begins[h->nr_begins++] = r->time_ns;
	if (!r->fired)
		return 0;
	cr_assert_lt(h->nr_holds, 256);
	h->held_from[h->nr_holds] = r->time_ns;
	/* the copy */
	usleep(HOLD_MS * 1000);
	h->held_until[h->nr_holds++] = monotonic_ns();
	cr_assert_eq(rv_gate_release(h->g, &err), 0, "%s", err.message);
	return 0;
}

Test(gate, a_snapshot_holds_starts_and_triggers_off_until_released, .timeout = 60)
{
	struct rv_gate_site sites[3];
	struct rv_gate_config config = { .min_duration_ns = THRESHOLD_US * 1000ull,
					 .multi_snapshot = true,
					 .keep_slow_windows = true,
					 .hold_after_snapshot = true };
	struct held *h = calloc(1, sizeof(*h));
	struct program_counts p;
	struct rv_gate_counts n;
	struct rv_error err = { 0 };
	struct rv_target t;
	FILE *out;
	int rounds = 0;

	cr_assert_not_null(h);
	prepare();
	/* no STOP_SAMPLE event: keep_slow_windows decides at STOP */
	sites[0] = site(RV_GATE_START, &begin_site);
	sites[1] = site(RV_GATE_STOP, &end_site);
	sites[2] = site(RV_GATE_TRIGGER, &trigger_site);
	h->g = gate_on_windows(&config, sites, 3, "3", "40", &t, &out);
	h->c.pid = (uint32_t)t.pids[0];
	cr_assert_eq(rv_target_release(&t, &err), 0, "%s", err.message);
	while (!rv_target_poll_exit(&t)) {
		cr_assert_geq(rv_gate_poll(h->g, 50, collect_held, h, &err), 0, "%s", err.message);
		cr_assert_lt(++rounds, 1200, "windows did not finish within 60 s");
	}
	while (rv_gate_poll(h->g, 0, collect_held, h, &err) > 0)
		;
	cr_assert_eq(t.exit_status, 0, "windows failed (status 0x%x)", t.exit_status);
	read_program_counts(out, &p);
	cr_assert_eq(rv_gate_counts(h->g, &n, &err), 0, "%s", err.message);

	cr_assert_gt(h->nr_holds, 1, "snapshots are taken again after a release");
	cr_expect_eq(n.snapshots, h->nr_holds);
	cr_expect_eq(h->c.fired_ends + h->c.fired_triggers, h->nr_holds);
	cr_expect_gt(n.held, 0, "%d ms holds refused no START or trigger hit", HOLD_MS);
	cr_expect_lt(n.fired[RV_GATE_START], p.windows, "refused STARTs open no window");
	/* no window began while a copy was held (the race of a START resuming PT
	 * over a window being copied) */
	for (size_t i = 0; i < h->nr_begins; i++)
		for (size_t k = 0; k < h->nr_holds; k++)
			cr_expect(h->begins[i] <= h->held_from[k] ||
					  h->begins[i] >= h->held_until[k],
				  "a window began %llu ns into a hold",
				  (unsigned long long)(h->begins[i] - h->held_from[k]));
	/* every STOP of an opened window still fired (it pauses PT) */
	cr_expect_eq(n.fired[RV_GATE_STOP], n.windows);
	cr_expect_eq(n.run_mismatch, 0);
	rv_gate_free(h->g);
	free(h);
}
