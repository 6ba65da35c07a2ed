/* test_softpt.c: the oracle for softpt's captures. Each PT target program
 * (tests/pt) runs under build/softpt, and Linux perf's own Intel PT decoder
 * (`perf script --itrace=cre`) decodes the capture. Per thread, perf must
 * print exactly the calls and returns the single-stepper saw
 * (ground-truth.txt), with no decode error, and the programs' own call counts
 * must match. The same holds without return compression, at each timer
 * resolution, with a short PSB period, for a snapshot (decoded from its first
 * PSB), and around an injected overflow (outside the lost stretch).
 *
 * Then `rearview decode` of the same capture: the trace must hold every one
 * of those calls as a span of the callee nested in a span of the caller, in
 * order (perf's calls around an overflow, which the trace marks), and the
 * programs' counts as span counts; cut at every PSB, decoding on two threads
 * must give the same file as on one.
 *
 * Not here: softpt's packet rules one by one (tests/unit/test_ptgen.c), or the
 * decoder's events against perf's (tests/unit/test_pt_decoder.c). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "program_counts.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "harness.h"
#include "symbolize/symbolizer.h"
#include "test_files.h"

#define PERF		 "/usr/bin/perf"
#define SOFTPT_TIMEOUT_S 240
#define PERF_TIMEOUT_S	 120
/* Two captures at a time: each pairs a tracer and a single-stepped program,
 * which together keep about one CPU busy. */
#define PARALLEL_RUNS 2
#define MAX_THREADS   16
#define MAX_RUNS      8

/* ---- Capture settings ---- */

enum capture_kind {
	CAPTURE_FULL,	  /* everything: perf must match the ground truth exactly */
	CAPTURE_SNAPSHOT, /* the end only; the ground truth lists what it holds */
	CAPTURE_OVERFLOW, /* one injected overflow: a stretch is lost */
};

struct capture_config {
	const char *name;
	const char *args[6]; /* softpt options, NULL-terminated */
	enum capture_kind kind;
};

static const struct capture_config config_low = {
	.name = "low",
	.args = { "--timer-resolution", "low", NULL },
	.kind = CAPTURE_FULL,
};
static const struct capture_config config_noretcomp = {
	.name = "noretcomp",
	.args = { "--timer-resolution", "low", "--noretcomp", NULL },
	.kind = CAPTURE_FULL,
};
static const struct capture_config config_normal = {
	.name = "normal",
	.args = { "--timer-resolution", "normal", NULL },
	.kind = CAPTURE_FULL,
};
static const struct capture_config config_high = {
	.name = "high",
	.args = { "--timer-resolution", "high", NULL },
	.kind = CAPTURE_FULL,
};
/* TSC packets only (in PSB+ and when a thread is scheduled back in after a
 * system call). perf applies an MMAP2 record once the decoder's time has
 * passed the record's, so this is also the test that softpt's times put code
 * mapped during the run after its mapping. */
static const struct capture_config config_tsc_only = {
	.name = "tsc-only",
	.args = { "--timer-resolution", "custom:tsc=1,mtc=0,cyc=0", NULL },
	.kind = CAPTURE_FULL,
};
/* A PSB+ every 2 KiB of trace, the shortest period PT allows. */
static const struct capture_config config_psb = {
	.name = "psb-2k",
	.args = { "--timer-resolution", "low", "--psb-period", "0", NULL },
	.kind = CAPTURE_FULL,
};
/* Snapshots: a PSB every 2 KiB, so that a snapshot of a few KiB starts at one
 * well inside the run; TSC and CYC timing here, perf's default in
 * config_snapshot_mtc. The size comes from the target. */
static const struct capture_config config_snapshot = {
	.name = "snapshot",
	.args = { "--timer-resolution", "custom:tsc=1,mtc=0,cyc=1,cyc_thresh=0,psb_period=0",
		  NULL },
	.kind = CAPTURE_SNAPSHOT,
};
/* A snapshot with perf's default timing (TSC, MTC). */
static const struct capture_config config_snapshot_mtc = {
	.name = "snapshot",
	.args = { "--timer-resolution", "low", "--psb-period", "0", NULL },
	.kind = CAPTURE_SNAPSHOT,
};
static const struct capture_config config_overflow = {
	.name = "overflow",
	.args = { "--timer-resolution", "low", NULL },
	.kind = CAPTURE_OVERFLOW,
};

/* ---- Events: the ground truth's and perf's, in one form ---- */

enum event_kind {
	EVENT_CALL,
	EVENT_RETURN,
	EVENT_OVERFLOW, /* ground truth: packets lost from here */
	EVENT_RESUME,	/* ground truth: trace resumes (to = ip) */
	EVENT_ERROR,	/* perf: an instruction trace error */
};

struct event {
	enum event_kind kind;
	uint32_t tid;
	uint64_t from, to;
	uint64_t insn;	/* ground truth: the thread's instruction count */
	int error_code; /* perf's errors */
	char *from_sym; /* perf: symbol+offset of from (or the error message) */
	char *to_sym;	/* perf: symbol+offset of to */
	size_t line_no; /* where it was read */
};

struct event_list {
	struct event *items;
	size_t count, capacity;
};

static struct event *event_list_add(struct event_list *list)
{
	if (list->count == list->capacity) {
		size_t capacity = list->capacity ? list->capacity * 2 : 1024;
		struct event *items = realloc(list->items, capacity * sizeof(*items));

		cr_assert_not_null(items, "out of memory");
		list->items = items;
		list->capacity = capacity;
	}
	memset(&list->items[list->count], 0, sizeof(struct event));
	return &list->items[list->count++];
}

static void event_list_free(struct event_list *list)
{
	for (size_t i = 0; i < list->count; i++) {
		free(list->items[i].from_sym);
		free(list->items[i].to_sym);
	}
	free(list->items);
	memset(list, 0, sizeof(*list));
}

static bool is_branch(const struct event *e)
{
	return e->kind == EVENT_CALL || e->kind == EVENT_RETURN;
}

/* ---- One capture: softpt's run, its ground truth, perf's decoding ---- */

/* perf's name ("function+0x12") for an address it printed. */
struct symbol_entry {
	uint64_t address;
	const char *name;
};

struct capture {
	const char *target;
	const struct capture_config *config;
	char dir[64];
	char softpt_option[32];	 /* the snapshot size or overflow position */
	const char *program_arg; /* NULL: the program's default workload */
	struct proc_result *softpt;
	struct proc_result *perf;

	/* ground-truth.txt */
	struct event_list truth;
	uint32_t tids[MAX_THREADS];
	size_t nr_threads;
	uint32_t pid;
	bool snapshot_comment;

	/* perf script */
	struct event_list decoded;
	size_t other_samples;	      /* trace begin/end, syscalls: not compared */
	struct symbol_entry *symbols; /* sorted by address */
	size_t nr_symbols;
};

/* Which events of a list belong to one thread, in order. */
struct thread_view {
	const struct event **items;
	size_t count;
};

static struct thread_view thread_view(const struct event_list *list, uint32_t tid)
{
	struct thread_view view = { calloc(list->count + 1, sizeof(*view.items)), 0 };

	cr_assert_not_null(view.items);
	for (size_t i = 0; i < list->count; i++)
		if (list->items[i].tid == tid)
			view.items[view.count++] = &list->items[i];
	return view;
}

static void describe(const struct event *e, char *out, size_t size)
{
	const char *kind = e->kind == EVENT_CALL ? "call" : "return";

	switch (e->kind) {
	case EVENT_CALL:
	case EVENT_RETURN:
		if (e->from_sym) /* perf's */
			snprintf(out, size, "%-6s %#" PRIx64 " -> %#" PRIx64 "  (%s -> %s)", kind,
				 e->from, e->to, e->from_sym, e->to_sym ? e->to_sym : "");
		else /* the ground truth's */
			snprintf(out, size,
				 "%-6s %#" PRIx64 " -> %#" PRIx64 "  (instruction %" PRIu64 ")",
				 kind, e->from, e->to, e->insn);
		break;
	case EVENT_OVERFLOW:
		snprintf(out, size, "overflow after %" PRIu64 " instructions", e->insn);
		break;
	case EVENT_RESUME:
		snprintf(out, size, "resume at %#" PRIx64, e->to);
		break;
	case EVENT_ERROR:
		snprintf(out, size, "error %d: %s", e->error_code, e->from_sym ? e->from_sym : "");
		break;
	}
}

static bool same_branch(const struct event *a, const struct event *b)
{
	return a->kind == b->kind && a->from == b->from && a->to == b->to;
}

/* Appends up to 4 events before and after index `at` of view, one a line. */
static size_t append_context(char *out, size_t size, size_t used, const char *title,
			     const struct thread_view *view, size_t at)
{
	size_t first = at > 4 ? at - 4 : 0;

	if (used < size)
		used += (size_t)snprintf(out + used, size - used, "\n  %s:", title);
	for (size_t i = first; i < at + 5 && i < view->count && used < size; i++) {
		char text[512];

		describe(view->items[i], text, sizeof(text));
		used += (size_t)snprintf(out + used, size - used, "\n    %s#%zu %s",
					 i == at ? "> " : "  ", i, text);
	}
	if (at >= view->count && used < size)
		used += (size_t)snprintf(out + used, size - used, "\n    > #%zu (end)", at);
	return used;
}

/* The first index where the branch sequences truth[t_from..t_to) and
 * decoded[d_from..d_to) differ, or SIZE_MAX if they are equal. */
static size_t first_difference(const struct thread_view *truth, size_t t_from, size_t t_to,
			       const struct thread_view *decoded, size_t d_from, size_t d_to)
{
	size_t n = t_to - t_from < d_to - d_from ? t_to - t_from : d_to - d_from;

	for (size_t i = 0; i < n; i++)
		if (!same_branch(truth->items[t_from + i], decoded->items[d_from + i]))
			return i;
	return t_to - t_from == d_to - d_from ? SIZE_MAX : n;
}

static void fail_difference(const struct capture *c, uint32_t tid, const char *what,
			    const struct thread_view *truth, size_t t_at,
			    const struct thread_view *decoded, size_t d_at)
{
	static const size_t size = 8192;
	char *message = malloc(size);
	size_t used;

	cr_assert_not_null(message);
	used = (size_t)snprintf(message, size,
				"%s [%s]: thread %u: %s: perf's decoding differs from the ground "
				"truth at ground-truth event #%zu, perf event #%zu",
				c->target, c->config->name, tid, what, t_at, d_at);
	used = append_context(message, size, used, "ground truth", truth, t_at);
	append_context(message, size, used, "perf script", decoded, d_at);
	cr_assert_fail("%s (capture kept in %s)", message, c->dir);
}

/* ---- Reading the ground truth ---- */

static void add_thread(struct capture *c, uint32_t tid)
{
	for (size_t i = 0; i < c->nr_threads; i++)
		if (c->tids[i] == tid)
			return;
	cr_assert_lt(c->nr_threads, MAX_THREADS, "too many threads in %s", c->dir);
	c->tids[c->nr_threads++] = tid;
}

static void read_ground_truth(struct capture *c)
{
	char path[128], *line = NULL;
	size_t line_size = 0, line_no = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/ground-truth.txt", c->dir);
	f = fopen(path, "r");
	cr_assert_not_null(f, "softpt wrote no %s", path);
	while (getline(&line, &line_size, f) > 0) {
		uint32_t tid, pid;
		uint64_t insn, from;
		struct event *e;

		line_no++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0') {
			if (strstr(line, "snapshot"))
				c->snapshot_comment = true;
			continue;
		}
		if (sscanf(line, "thread %" SCNu32 " %" SCNu32 " %" SCNx64, &tid, &pid, &from) ==
		    3) {
			if (!c->nr_threads)
				c->pid = pid;
			add_thread(c, tid);
			continue;
		}
		if (sscanf(line, "exit %" SCNu32 " %" SCNu64, &tid, &insn) == 2)
			continue;
		e = event_list_add(&c->truth);
		e->line_no = line_no;
		if (sscanf(line, "call %" SCNu32 " %" SCNu64 " %" SCNx64 " %" SCNx64, &e->tid,
			   &e->insn, &e->from, &e->to) == 4) {
			e->kind = EVENT_CALL;
		} else if (sscanf(line, "return %" SCNu32 " %" SCNu64 " %" SCNx64 " %" SCNx64,
				  &e->tid, &e->insn, &e->from, &e->to) == 4) {
			e->kind = EVENT_RETURN;
		} else if (sscanf(line, "overflow %" SCNu32 " %" SCNu64, &e->tid, &e->insn) == 2) {
			e->kind = EVENT_OVERFLOW;
		} else if (sscanf(line, "resume %" SCNu32 " %" SCNu64 " %" SCNx64, &e->tid,
				  &e->insn, &e->to) == 3) {
			e->kind = EVENT_RESUME;
		} else {
			cr_assert_fail("%s:%zu: not a ground-truth line: %s", path, line_no, line);
		}
		add_thread(c, e->tid);
	}
	free(line);
	fclose(f);
}

/* ---- Reading perf script's output ---- */

/* " instruction trace error type 1 time 1.2 cpu 0 pid 7 tid 7 ip 0x401000 code 7:
 * Overflow packet" */
static bool parse_perf_error(const char *line, struct event *e)
{
	const char *tid = strstr(line, " tid ");
	const char *code = strstr(line, " code ");
	const char *message;

	if (!strstr(line, "instruction trace error"))
		return false;
	cr_assert(tid && code, "unexpected error line from perf: %s", line);
	e->kind = EVENT_ERROR;
	e->tid = (uint32_t)strtoul(tid + 5, NULL, 10);
	e->error_code = (int)strtol(code + 6, NULL, 10);
	message = strchr(code, ':');
	e->from_sym = strdup(message ? message + 1 + strspn(message + 1, " ") : code);
	return true;
}

/* "  TID  FLAGS...  IP SYM+OFF =>  ADDR SYM+OFF" with -F tid,flags,ip,sym,symoff,addr
 * and --no-demangle, so that symbols hold no spaces. Returns false for
 * samples that are neither a plain call nor a plain return (trace begin or
 * end, system calls); those are counted apart. */
static bool parse_perf_sample(char *line, struct event *e, bool *other)
{
	char *arrow = strstr(line, " => ");
	char *tokens[16], *save = NULL;
	size_t n = 0;
	char flags[128] = "";
	char *to_addr, *to_sym, *end;

	*other = false;
	if (!arrow)
		return false;
	*arrow = '\0';
	for (char *t = strtok_r(line, " \t", &save); t && n < 16; t = strtok_r(NULL, " \t", &save))
		tokens[n++] = t;
	if (n < 4)
		return false;
	for (size_t i = 1; i + 2 < n; i++) {
		if (i > 1)
			strncat(flags, " ", sizeof(flags) - strlen(flags) - 1);
		strncat(flags, tokens[i], sizeof(flags) - strlen(flags) - 1);
	}
	to_addr = strtok_r(arrow + 4, " \t", &save);
	to_sym = strtok_r(NULL, " \t\n", &save);
	if (!to_addr)
		return false;
	if (!strcmp(flags, "call")) {
		e->kind = EVENT_CALL;
	} else if (!strcmp(flags, "return")) {
		e->kind = EVENT_RETURN;
	} else {
		*other = true;
		return false;
	}
	e->tid = (uint32_t)strtoul(tokens[0], &end, 10);
	cr_assert(*end == '\0' || *end == '/', "perf line without a tid: %s", tokens[0]);
	e->from = strtoull(tokens[n - 2], &end, 16);
	cr_assert(*end == '\0', "perf line with a bad ip: %s", tokens[n - 2]);
	e->to = strtoull(to_addr, &end, 16);
	cr_assert(*end == '\0', "perf line with a bad addr: %s", to_addr);
	e->from_sym = strdup(tokens[n - 1]);
	e->to_sym = strdup(to_sym ? to_sym : "");
	return true;
}

static int compare_symbols(const void *a, const void *b)
{
	const struct symbol_entry *x = a, *y = b;

	return x->address < y->address ? -1 : x->address > y->address;
}

/* Both ends of perf's calls and returns are where functions are named: the
 * index of perf's names for them, built once per capture. */
static void index_symbols(struct capture *c)
{
	c->symbols = calloc(2 * c->decoded.count + 1, sizeof(*c->symbols));
	cr_assert_not_null(c->symbols);
	for (size_t i = 0; i < c->decoded.count; i++) {
		const struct event *e = &c->decoded.items[i];

		if (!is_branch(e))
			continue;
		if (e->to_sym)
			c->symbols[c->nr_symbols++] = (struct symbol_entry){ e->to, e->to_sym };
		if (e->from_sym)
			c->symbols[c->nr_symbols++] = (struct symbol_entry){ e->from, e->from_sym };
	}
	qsort(c->symbols, c->nr_symbols, sizeof(*c->symbols), compare_symbols);
}

static void read_perf_script(struct capture *c)
{
	char path[128], *line = NULL;
	size_t line_size = 0, line_no = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/perf-script.txt", c->dir);
	f = fopen(path, "r");
	cr_assert_not_null(f, "no %s", path);
	while (getline(&line, &line_size, f) > 0) {
		struct event parsed = { 0 };
		bool other;

		line_no++;
		line[strcspn(line, "\n")] = '\0';
		if (parse_perf_error(line, &parsed) || parse_perf_sample(line, &parsed, &other)) {
			parsed.line_no = line_no;
			*event_list_add(&c->decoded) = parsed;
		} else if (other) {
			c->other_samples++;
		}
	}
	free(line);
	fclose(f);
	index_symbols(c);
}

/* ---- Running softpt and perf ---- */

/* One softpt run makes the captures of every config that runs the same
 * workload: single-stepping is what costs, and each config's options go
 * before its own -o. */
static void start_softpt(struct capture *const *group, size_t n, const char *target, pid_t *pid,
			 int *out_fd, int *err_fd)
{
	const char *argv[16 + MAX_RUNS * 10];
	size_t a = 0;

	/* An empty environment: glibc's start-up compares every variable with
	 * every tunable's name, some 900 single-steps per variable (22,000 of a
	 * static program's 34,000 with a 1.5 KiB environment), and the runs do
	 * not depend on the caller's environment. */
	argv[a++] = "/usr/bin/env";
	argv[a++] = "-i";
	argv[a++] = build_path("softpt");
	argv[a++] = "-q";
	for (size_t g = 0; g < n; g++) {
		const struct capture *c = group[g];
		for (size_t i = 0; c->config->args[i]; i++)
			argv[a++] = c->config->args[i];
		if (c->config->kind == CAPTURE_SNAPSHOT)
			argv[a++] = "--snapshot-size";
		if (c->config->kind == CAPTURE_OVERFLOW)
			argv[a++] = "--inject-overflow";
		if (c->config->kind != CAPTURE_FULL)
			argv[a++] = c->softpt_option;
		argv[a++] = "-o";
		argv[a++] = c->dir;
	}
	argv[a++] = "--";
	argv[a++] = target;
	if (group[0]->program_arg)
		argv[a++] = group[0]->program_arg;
	argv[a] = NULL;
	*pid = start_process((char *const *)argv, out_fd, err_fd);
}

/* Runs softpt once per workload (the captures with the same program
 * argument), the workloads in parallel; each capture gets its run's result. */
static void run_softpt(struct capture *captures, size_t count, const char *target)
{
	struct capture *groups[2][MAX_RUNS];
	size_t sizes[2] = { 0, 0 };
	pid_t pids[2];
	int out_fds[2], err_fds[2];

	for (size_t i = 0; i < count; i++) {
		size_t g = captures[i].program_arg ? 1 : 0;
		groups[g][sizes[g]++] = &captures[i];
	}
	for (size_t g = 0; g < 2; g++)
		if (sizes[g])
			start_softpt(groups[g], sizes[g], target, &pids[g], &out_fds[g],
				     &err_fds[g]);
	for (size_t g = 0; g < 2; g++) {
		if (!sizes[g])
			continue;
		finish_process(pids[g], out_fds[g], err_fds[g], SOFTPT_TIMEOUT_S,
			       groups[g][0]->softpt);
		for (size_t i = 1; i < sizes[g]; i++)
			*groups[g][i]->softpt = *groups[g][0]->softpt;
	}
}

static void start_perf_script(struct capture *c, pid_t *pid, int *out_fd, int *err_fd)
{
	char command[512];

	/* Through sh for the redirection: the harness keeps only 64 KiB of
	 * output, and a decoding runs to megabytes. */
	snprintf(command, sizeof(command),
		 "exec " PERF
		 " script -i %s/perf.data --itrace=cre -F tid,flags,ip,sym,symoff,addr "
		 "--no-demangle --force > %s/perf-script.txt",
		 c->dir, c->dir);
	char *argv[] = { "/bin/sh", "-c", command, NULL };
	*pid = start_process(argv, out_fd, err_fd);
}

/* Runs perf script on every capture, PARALLEL_RUNS at a time. */
static void run_perf(struct capture *captures, size_t count)
{
	pid_t pids[MAX_RUNS];
	int out_fds[MAX_RUNS], err_fds[MAX_RUNS];
	size_t started = 0, finished = 0;

	while (finished < count) {
		while (started < count && started - finished < PARALLEL_RUNS) {
			struct capture *c = &captures[started];

			start_perf_script(c, &pids[started], &out_fds[started], &err_fds[started]);
			started++;
		}
		struct capture *c = &captures[finished];

		finish_process(pids[finished], out_fds[finished], err_fds[finished], PERF_TIMEOUT_S,
			       c->perf);
		finished++;
	}
}

/* ---- Checks ---- */

/* Adds the calls and returns among view[from..to) to the counts. */
static void count_branches(const struct thread_view *view, size_t from, size_t to, size_t *calls,
			   size_t *returns)
{
	for (size_t i = from; i < to && i < view->count; i++) {
		*calls += view->items[i]->kind == EVENT_CALL;
		*returns += view->items[i]->kind == EVENT_RETURN;
	}
}

/* One thread without overflow: the same calls and returns, no error. */
static void compare_whole_thread(const struct capture *c, uint32_t tid,
				 const struct thread_view *truth, const struct thread_view *decoded,
				 size_t *calls, size_t *returns)
{
	size_t at;

	for (size_t i = 0; i < decoded->count; i++)
		cr_assert_neq(decoded->items[i]->kind, EVENT_ERROR,
			      "%s [%s] thread %u: perf reports an error where the ground truth has "
			      "no overflow: %s",
			      c->target, c->config->name, tid, decoded->items[i]->from_sym);
	at = first_difference(truth, 0, truth->count, decoded, 0, decoded->count);
	if (at != SIZE_MAX)
		fail_difference(c, tid, "calls and returns", truth, at, decoded, at);
	count_branches(truth, 0, truth->count, calls, returns);
}

/* The thread with the injected overflow: perf decodes all before it, maybe a
 * little of the lost stretch, then reports the overflow once and decodes all
 * from where the trace resumes. */
static void compare_overflowed_thread(const struct capture *c, uint32_t tid,
				      const struct thread_view *truth, size_t t_overflow,
				      const struct thread_view *decoded, size_t *calls,
				      size_t *returns)
{
	size_t t_resume = truth->count, d_error = decoded->count, walked, at;

	for (size_t i = t_overflow + 1; i < truth->count && t_resume == truth->count; i++)
		if (truth->items[i]->kind == EVENT_RESUME)
			t_resume = i;
	for (size_t i = 0; i < decoded->count; i++)
		if (decoded->items[i]->kind == EVENT_ERROR)
			d_error = i;
	cr_assert_lt(d_error, decoded->count,
		     "%s [%s] thread %u: perf does not report the overflow of ground-truth event "
		     "#%zu",
		     c->target, c->config->name, tid, t_overflow);
	cr_assert(strstr(decoded->items[d_error]->from_sym, "verflow"),
		  "%s [%s] thread %u: perf's error is not an overflow: code %d: %s", c->target,
		  c->config->name, tid, decoded->items[d_error]->error_code,
		  decoded->items[d_error]->from_sym);

	if (d_error <= t_overflow) {
		/* perf stops at the last packet before the overflow: the direct calls
		 * made after it leave no packet and are lost with the stretch. Every
		 * return leaves one (a TNT bit or a TIP), so none may be missing. */
		at = first_difference(truth, 0, d_error, decoded, 0, d_error);
		if (at != SIZE_MAX)
			fail_difference(c, tid, "before the overflow", truth, at, decoded, at);
		for (size_t i = d_error; i < t_overflow; i++)
			if (truth->items[i]->kind != EVENT_CALL)
				fail_difference(c, tid,
						"before the overflow (only direct calls may be "
						"missing there)",
						truth, i, decoded, d_error);
		count_branches(truth, 0, d_error, calls, returns);
	} else {
		/* perf walks on from the last packet into the lost stretch as far as
		 * no packet is needed: what it finds must be what happened there. */
		walked = d_error - t_overflow;
		cr_assert_leq(t_overflow + 1 + walked, t_resume,
			      "%s [%s] thread %u: perf decodes %zu events past the overflow, more "
			      "than the lost stretch holds",
			      c->target, c->config->name, tid, walked);
		at = first_difference(truth, 0, t_overflow, decoded, 0, t_overflow);
		if (at != SIZE_MAX)
			fail_difference(c, tid, "before the overflow", truth, at, decoded, at);
		at = first_difference(truth, t_overflow + 1, t_overflow + 1 + walked, decoded,
				      t_overflow, d_error);
		if (at != SIZE_MAX)
			fail_difference(c, tid, "walking into the lost stretch", truth,
					t_overflow + 1 + at, decoded, t_overflow + at);
		count_branches(truth, 0, t_overflow, calls, returns);
		count_branches(truth, t_overflow + 1, t_overflow + 1 + walked, calls, returns);
	}

	if (t_resume == truth->count) {
		cr_assert_eq(d_error + 1, decoded->count,
			     "%s [%s] thread %u: perf decodes events after an overflow that "
			     "never resumes",
			     c->target, c->config->name, tid);
		return;
	}
	at = first_difference(truth, t_resume + 1, truth->count, decoded, d_error + 1,
			      decoded->count);
	if (at != SIZE_MAX)
		fail_difference(c, tid, "after the overflow", truth, t_resume + 1 + at, decoded,
				d_error + 1 + at);
	count_branches(truth, t_resume + 1, truth->count, calls, returns);
}

/* Every thread's calls and returns, decoded, equal the ground truth's; with an
 * overflow, outside the lost stretch. Counts the calls and returns compared. */
static void compare_threads(const struct capture *c, size_t *calls, size_t *returns)
{
	uint32_t tids[2 * MAX_THREADS];
	size_t nr_tids = 0, errors = 0, overflows = 0;

	*calls = *returns = 0;
	for (size_t i = 0; i < c->nr_threads; i++)
		tids[nr_tids++] = c->tids[i];
	for (size_t i = 0; i < c->decoded.count; i++) {
		const struct event *e = &c->decoded.items[i];
		bool known = false;

		for (size_t t = 0; t < nr_tids; t++)
			known |= tids[t] == e->tid;
		if (!known) {
			cr_assert_lt(nr_tids, 2 * MAX_THREADS, "too many threads");
			tids[nr_tids++] = e->tid;
		}
		if (e->kind == EVENT_ERROR)
			errors++;
	}
	for (size_t i = 0; i < c->truth.count; i++)
		overflows += c->truth.items[i].kind == EVENT_OVERFLOW;
	if (c->config->kind == CAPTURE_OVERFLOW) {
		cr_assert_eq(overflows, 1, "%s [%s]: the ground truth has %zu overflows, not one",
			     c->target, c->config->name, overflows);
		cr_assert_eq(errors, 1,
			     "%s [%s]: perf reports %zu errors where one overflow was injected",
			     c->target, c->config->name, errors);
	} else {
		cr_assert_eq(overflows, 0, "%s [%s]: an overflow nobody asked for", c->target,
			     c->config->name);
	}

	for (size_t t = 0; t < nr_tids; t++) {
		struct thread_view truth = thread_view(&c->truth, tids[t]);
		struct thread_view decoded = thread_view(&c->decoded, tids[t]);
		size_t t_overflow = truth.count;

		for (size_t i = 0; i < truth.count && t_overflow == truth.count; i++)
			if (truth.items[i]->kind == EVENT_OVERFLOW)
				t_overflow = i;
		if (t_overflow == truth.count)
			compare_whole_thread(c, tids[t], &truth, &decoded, calls, returns);
		else
			compare_overflowed_thread(c, tids[t], &truth, t_overflow, &decoded, calls,
						  returns);
		free(truth.items);
		free(decoded.items);
	}
}

/* perf's name for an address, from the call targets and return sources it
 * printed ("name+0x12"), or NULL. */
static const char *symbol_at(const struct capture *c, uint64_t address)
{
	struct symbol_entry key = { address, NULL };
	const struct symbol_entry *found =
		bsearch(&key, c->symbols, c->nr_symbols, sizeof(key), compare_symbols);

	return found ? found->name : NULL;
}

/* sym is "function+0x..." (at_entry: "function+0x0"). */
static bool symbol_is(const char *sym, const char *function, bool at_entry)
{
	size_t n = strlen(function);

	if (!sym || strncmp(sym, function, n) || sym[n] != '+')
		return false;
	return !at_entry || !strcmp(sym + n, "+0x0");
}

/* Ground-truth calls to function's entry, and returns from inside it, on
 * thread tid (0: every thread). */
static size_t truth_calls_to(const struct capture *c, const char *function, uint32_t tid)
{
	size_t n = 0;

	for (size_t i = 0; i < c->truth.count; i++) {
		const struct event *e = &c->truth.items[i];

		if (e->kind == EVENT_CALL && (!tid || e->tid == tid) &&
		    symbol_is(symbol_at(c, e->to), function, true))
			n++;
	}
	return n;
}

static size_t truth_returns_from(const struct capture *c, const char *function)
{
	size_t n = 0;

	for (size_t i = 0; i < c->truth.count; i++) {
		const struct event *e = &c->truth.items[i];

		if (e->kind == EVENT_RETURN && symbol_is(symbol_at(c, e->from), function, false))
			n++;
	}
	return n;
}

/* The program prints `count FUNCTION N` for functions entered by calls and
 * `entered FUNCTION N` for those the kernel or a jmp enters: the first must
 * be called exactly N times, the second never called and returned from N
 * times. Returns the number of functions checked. */
static size_t check_program_counts(const struct capture *c)
{
	char *text = strdup(c->softpt->out), *save = NULL;
	size_t checked = 0;

	cr_assert_not_null(text);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char function[128];
		unsigned long expected;

		if (sscanf(line, "count %127s %lu", function, &expected) == 2) {
			size_t calls = truth_calls_to(c, function, 0);

			cr_assert_gt(expected, 0, "%s is never called", function);
			cr_assert_eq(calls, expected,
				     "[%s] %s counted %lu calls, the ground truth has %zu",
				     c->config->name, function, expected, calls);
			checked++;
		} else if (sscanf(line, "entered %127s %lu", function, &expected) == 2) {
			size_t calls = truth_calls_to(c, function, 0);
			size_t returns = truth_returns_from(c, function);

			cr_assert_gt(expected, 0, "%s is never entered", function);
			cr_assert_eq(calls, 0,
				     "[%s] %s is entered without a call, yet called %zu times",
				     c->config->name, function, calls);
			cr_assert_eq(returns, expected,
				     "[%s] %s was entered %lu times, the ground truth has %zu "
				     "returns from it",
				     c->config->name, function, expected, returns);
			checked++;
		}
	}
	free(text);
	return checked;
}

/* ---- rearview decode on the same captures ---- */

static bool is_placeholder(const char *name)
{
	return name[0] == '[';
}

/* The nearest enclosing span that is a function, not a placeholder. */
static const struct fxt_span *function_parent(const struct fxt_trace *t, const struct fxt_span *s)
{
	const struct fxt_span *p = fxt_span_parent(t, s);

	while (p && is_placeholder(p->name))
		p = fxt_span_parent(t, p);
	return p;
}

struct span_walk {
	const struct fxt_span **items;
	size_t count, capacity;
};

static void walk_preorder(const struct fxt_trace *t, const struct fxt_span *s, struct span_walk *w)
{
	for (; s; s = fxt_span_next_sibling(t, s)) {
		if (w->count == w->capacity) {
			w->capacity = w->capacity ? w->capacity * 2 : 1024;
			w->items = realloc(w->items, w->capacity * sizeof(*w->items));
			cr_assert_not_null(w->items);
		}
		w->items[w->count++] = s;
		walk_preorder(t, fxt_span_first_child(t, s), w);
	}
}

/* Every ground-truth call of the thread (perf's, around an overflow) must be
 * a span of the callee nested in a span of the caller, in the same order: the
 * calls are a subsequence of the thread's spans in depth-first order (which
 * also holds functions entered by jumps, placeholders and inferred frames). */
static size_t compare_trace_thread(const struct capture *c, const struct fxt_trace *t,
				   struct rv_symbolizer *sym, uint32_t tid, const char *trace_name)
{
	struct rv_symbol to, from;
	struct span_walk w = { 0 };
	size_t next = 0, matched = 0;
	bool lost = false;

	/* Around an overflow, the ground truth and a decoder may differ by the
	 * direct calls made between the last packet and the overflow (see
	 * compare_overflowed_thread): there the calls are perf's. */
	const struct event_list *expected =
		c->config->kind == CAPTURE_OVERFLOW ? &c->decoded : &c->truth;

	walk_preorder(t, fxt_first_root(t, c->pid, tid), &w);
	for (size_t i = 0; i < expected->count; i++) {
		const struct event *e = &expected->items[i];
		const char *callee, *caller;
		bool found = false;

		if (e->tid != tid)
			continue;
		if (e->kind == EVENT_OVERFLOW)
			lost = true;
		if (e->kind == EVENT_RESUME)
			lost = false;
		if (e->kind != EVENT_CALL || lost)
			continue;
		rv_symbolizer_lookup(sym, c->pid, e->to, &to);
		rv_symbolizer_lookup(sym, c->pid, e->from, &from);
		callee = to.name;
		caller = from.name;
		for (size_t j = next; j < w.count && !found; j++) {
			const struct fxt_span *parent;

			if (!pc_same_function(w.items[j]->name, callee))
				continue;
			parent = function_parent(t, w.items[j]);
			if (!parent || !pc_same_function(parent->name, caller))
				continue;
			found = true;
			next = j + 1;
		}
		if (!found) {
			char context[2048] = "";
			size_t used = 0;

			for (size_t j = next > 4 ? next - 4 : 0; j < w.count && j < next + 8; j++) {
				const struct fxt_span *parent = function_parent(t, w.items[j]);

				used += (size_t)snprintf(context + used, sizeof(context) - used,
							 "\n  %s span %zu: %s in %s at %" PRIu64,
							 j == next ? ">" : " ", j, w.items[j]->name,
							 parent ? parent->name : "-",
							 w.items[j]->begin_ns);
				if (used >= sizeof(context))
					break;
			}
			cr_assert_fail("[%s] %s: the trace (%s) has no span of %s called from %s "
				       "for call %zu of thread %u (ground truth line %zu), after "
				       "span %zu of %zu:%s",
				       c->config->name, c->target, trace_name,
				       callee ? callee : "?", caller ? caller : "?", matched, tid,
				       e->line_no, next, w.count, context);
		}
		matched++;
	}
	free(w.items);
	return matched;
}

/* The program's own counts, in spans: a function called N times (or entered
 * N times by jumps or by the kernel) has N spans. */
static void check_trace_counts(const struct capture *c, const struct fxt_trace *t)
{
	char why[256];

	cr_assert_geq(pc_check_trace(c->softpt->out, t, why, sizeof(why)), 0, "[%s] %s: %s",
		      c->config->name, c->target, why);
}

static struct fxt_trace *decode_capture(const struct capture *c, const char *name, const char *jobs,
					const char *chunk)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char out[160], err[256];
	char *argv[12] = { (char *)build_path("rearview"),
			   "decode",
			   (char *)c->dir,
			   "-o",
			   out,
			   "--jobs",
			   (char *)jobs,
			   NULL };

	cr_assert_not_null(r);
	snprintf(out, sizeof(out), "%s/%s", c->dir, name);
	if (chunk) {
		argv[7] = "--chunk-size";
		argv[8] = (char *)chunk;
	}
	run_process(argv, 120, r);
	cr_assert_eq(r->exit_code, 0, "[%s] %s: rearview decode failed (%d): %s", c->config->name,
		     c->target, r->exit_code, r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "[%s] %s: %s", c->config->name,
		     out, err);
	free(r);
	return t;
}

static size_t count_instants_prefixed(const struct fxt_trace *t, const char *prefix)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_instants; i++)
		n += !strncmp(t->instants[i].name, prefix, strlen(prefix));
	return n;
}

/* Names for the ground truth's addresses, as a symbolizer given the
 * capture's mappings gives them (perf may pick another of a function's
 * aliases: __libc_start_main_impl for __libc_start_main). */
static struct rv_symbolizer *capture_symbolizer(const struct capture *c)
{
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	char path[160], vdso[160];
	int got;

	snprintf(path, sizeof(path), "%s/perf.data", c->dir);
	snprintf(vdso, sizeof(vdso), "%s/vdso.so", c->dir);
	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while ((got = rv_perf_reader_next(r, &rec, &err)) == 1) {
		struct rv_perf_mmap m;

		if (rec.header->type != PERF_RECORD_MMAP2)
			continue;
		cr_assert_eq(rv_perf_mmap_parse(rec.header, &m), 0, "a damaged MMAP2 record");
		if (!strcmp(m.filename, "[vdso]")) {
			m.filename = vdso;
			m.pgoff = 0;
		}
		cr_assert_eq(rv_symbolizer_add_mapping(sym, m.pid, m.start, m.len, m.pgoff,
						       m.executable, m.filename, &err),
			     0, "%s", err.message);
	}
	cr_assert_eq(got, 0, "%s", err.message);
	rv_perf_reader_free(r);
	return sym;
}

/* rearview decode of the capture perf decoded: since perf's calls and returns
 * equal the ground truth's, the trace matches both. */
static size_t check_rearview_decode(const struct capture *c)
{
	struct fxt_trace *t = decode_capture(c, "trace.fxt", "1", NULL);
	struct rv_symbolizer *sym = capture_symbolizer(c);
	size_t calls = 0;
	size_t overflows = 0, errors = count_instants_prefixed(t, "[decode error");

	for (size_t i = 0; i < c->truth.count; i++)
		overflows += c->truth.items[i].kind == EVENT_OVERFLOW;
	for (size_t i = 0; i < c->nr_threads; i++)
		calls += compare_trace_thread(c, t, sym, c->tids[i], "trace.fxt");
	cr_assert_eq(errors, 0, "[%s] %s: the trace has %zu decode errors", c->config->name,
		     c->target, errors);
	cr_assert_eq(count_instants_prefixed(t, "[overflow]"), overflows,
		     "[%s] %s: the trace marks %zu overflows, softpt injected %zu", c->config->name,
		     c->target, count_instants_prefixed(t, "[overflow]"), overflows);
	if (c->config->kind == CAPTURE_FULL)
		check_trace_counts(c, t);

	/* Parallel decoding, cut at every PSB it can: the same file whatever
	 * the number of threads, and still every call. */
	if (!strcmp(c->config->name, "psb-2k")) {
		struct fxt_trace *one = decode_capture(c, "chunked-1.fxt", "1", "1K");
		struct fxt_trace *two = decode_capture(c, "chunked-2.fxt", "2", "1K");
		char a[160], b[160];

		snprintf(a, sizeof(a), "%s/chunked-1.fxt", c->dir);
		snprintf(b, sizeof(b), "%s/chunked-2.fxt", c->dir);
		cr_assert(files_equal(a, b),
			  "[%s] %s: decoding on 2 threads gives another trace "
			  "than on 1",
			  c->config->name, c->target);
		for (size_t i = 0; i < c->nr_threads; i++)
			compare_trace_thread(c, two, sym, c->tids[i], "chunked-2.fxt");
		check_trace_counts(c, two);
		fxt_trace_free(one);
		fxt_trace_free(two);
	}
	fxt_trace_free(t);
	rv_symbolizer_free(sym);
	return calls;
}

/* ---- Targets ---- */

struct pt_target {
	const char *name;				/* build/tests/pt/NAME */
	const struct capture_config *configs[MAX_RUNS]; /* the first one is CAPTURE_FULL */
	const char *snapshot_size;			/* --snapshot-size, if a snapshot is run */
	const char *snapshot_program_arg;		/* a longer run for the snapshot, or NULL */
	const char *overflow_at;			/* --inject-overflow, if one is run */
	void (*check)(const struct capture *full);	/* target-specific, on full captures */
};

static void capture_free(struct capture *c)
{
	event_list_free(&c->truth);
	event_list_free(&c->decoded);
	free(c->symbols);
	free(c->softpt);
	free(c->perf);
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* A snapshot worth the name: perf decodes it from a PSB well inside the run
 * (the ground truth's first event comes after thousands of instructions),
 * and it holds more than a few events. */
static void check_snapshot_starts_mid_way(const struct capture *c, size_t compared)
{
	uint64_t latest_start = 0;

	cr_assert(c->snapshot_comment, "%s: the snapshot's ground truth does not say it is one",
		  c->target);
	for (size_t t = 0; t < c->nr_threads; t++) {
		for (size_t i = 0; i < c->truth.count; i++) {
			if (c->truth.items[i].tid != c->tids[t])
				continue;
			if (c->truth.items[i].insn > latest_start)
				latest_start = c->truth.items[i].insn;
			break;
		}
	}
	cr_assert_geq(latest_start, 1000,
		      "%s: a snapshot of %s bytes starts at the beginning (instruction %" PRIu64
		      "): it should start mid-way",
		      c->target, c->softpt_option, latest_start);
	cr_assert_geq(compared, 20, "%s: a snapshot of %s bytes holds only %zu calls and returns",
		      c->target, c->softpt_option, compared);
}

static void check_target(const struct pt_target *target)
{
	struct capture captures[MAX_RUNS];
	size_t count = 0;
	struct timespec start;
	const char *program = build_path(target->name);
	char program_path[256];

	if (!perf_available()) {
		cr_skip_test(PERF " is not installed: the oracle cannot run");
		return;
	}
	cr_assert(file_exists(build_path("softpt")), "%s is not built", build_path("softpt"));
	snprintf(program_path, sizeof(program_path), "%s", program);
	cr_assert(file_exists(program_path), "%s is not built", program_path);
	clock_gettime(CLOCK_MONOTONIC, &start);

	memset(captures, 0, sizeof(captures));
	for (; count < MAX_RUNS && target->configs[count]; count++) {
		struct capture *c = &captures[count];

		c->target = target->name;
		c->config = target->configs[count];
		make_test_dir(c->dir, sizeof(c->dir));
		c->softpt = calloc(1, sizeof(*c->softpt));
		c->perf = calloc(1, sizeof(*c->perf));
		cr_assert(c->softpt && c->perf);
		if (c->config->kind == CAPTURE_SNAPSHOT) {
			snprintf(c->softpt_option, sizeof(c->softpt_option), "%s",
				 target->snapshot_size);
			c->program_arg = target->snapshot_program_arg;
		}
		if (c->config->kind == CAPTURE_OVERFLOW)
			snprintf(c->softpt_option, sizeof(c->softpt_option), "%s",
				 target->overflow_at);
	}
	cr_assert_eq(captures[0].config->kind, CAPTURE_FULL);

	run_softpt(captures, count, program_path);
	for (size_t i = 0; i < count; i++) {
		struct capture *c = &captures[i];
		char data[128];

		cr_assert(!c->softpt->timed_out, "[%s] softpt ran longer than %d s",
			  c->config->name, SOFTPT_TIMEOUT_S);
		cr_assert_eq(c->softpt->exit_code, 0, "[%s] softpt %s failed (%d): %s",
			     c->config->name, target->name, c->softpt->exit_code, c->softpt->err);
		snprintf(data, sizeof(data), "%s/perf.data", c->dir);
		cr_assert(file_exists(data), "[%s] no %s", c->config->name, data);
	}
	run_perf(captures, count);

	for (size_t i = 0; i < count; i++) {
		struct capture *c = &captures[i];
		size_t calls, returns, functions = 0, traced;

		cr_assert_eq(c->perf->exit_code, 0, "[%s] perf script failed (%d): %s",
			     c->config->name, c->perf->exit_code, c->perf->err);
		read_ground_truth(c);
		read_perf_script(c);
		compare_threads(c, &calls, &returns);
		cr_assert_gt(calls, 0, "[%s] no calls at all in %s", c->config->name, c->dir);
		if (c->config->kind == CAPTURE_FULL) {
			functions = check_program_counts(c);
			cr_assert_gt(functions, 0, "%s printed no counts: %s", target->name,
				     c->softpt->out);
			if (target->check)
				target->check(c);
		}
		if (c->config->kind == CAPTURE_SNAPSHOT)
			check_snapshot_starts_mid_way(c, calls + returns);
		traced = check_rearview_decode(c);
		fprintf(stderr,
			"softpt oracle: %-23s %-9s %5zu calls %5zu returns compared, %zu threads, "
			"%zu counts checked, %zu other samples; rearview's trace: %zu calls\n",
			target->name, c->config->name, calls, returns, c->nr_threads, functions,
			c->other_samples, traced);
	}
	fprintf(stderr, "softpt oracle: %-23s %zu captures in %.1f s\n", target->name, count,
		seconds_since(&start));
	for (size_t i = 0; i < count; i++) {
		cleanup_dir(captures[i].dir);
		capture_free(&captures[i]);
	}
}

/* ---- Target-specific checks ---- */

/* The deepest call nesting on any thread, from the thread's first event. */
static long max_call_depth(const struct capture *c)
{
	long deepest = 0;

	for (size_t t = 0; t < c->nr_threads; t++) {
		long depth = 0, lowest = 0, highest = 0;

		for (size_t i = 0; i < c->truth.count; i++) {
			const struct event *e = &c->truth.items[i];

			if (e->tid != c->tids[t] || !is_branch(e))
				continue;
			depth += e->kind == EVENT_CALL ? 1 : -1;
			lowest = depth < lowest ? depth : lowest;
			highest = depth > highest ? depth : highest;
		}
		if (highest - lowest > deepest)
			deepest = highest - lowest;
	}
	return deepest;
}

static void check_recursion(const struct capture *c)
{
	long depth = max_call_depth(c);

	cr_assert_geq(depth, 200, "the recursion is %ld deep, less than the 200 asked for", depth);
}

/* Work functions run on their own threads, neither of them the main one. */
static void check_two_threads(const struct capture *c)
{
	uint32_t owners[2] = { 0, 0 };
	const char *functions[2] = { "work_a", "work_b" };

	cr_assert_eq(c->nr_threads, 3, "main and two threads, not %zu", c->nr_threads);
	for (int f = 0; f < 2; f++) {
		for (size_t t = 0; t < c->nr_threads; t++) {
			if (!truth_calls_to(c, functions[f], c->tids[t]))
				continue;
			cr_assert_eq(owners[f], 0, "%s is called on two threads", functions[f]);
			owners[f] = c->tids[t];
		}
		cr_assert_neq(owners[f], 0);
		cr_assert_neq(owners[f], c->pid, "%s runs on the main thread", functions[f]);
	}
	cr_assert_neq(owners[0], owners[1], "both work functions on one thread");
}

/* ask_parent calls getppid through the PLT twice: the first call goes
 * through the resolver, which makes calls of its own (_dl_fixup), the second
 * goes straight to libc. Both end with getppid's return to ask_parent. */
static void check_lazy_binding(const struct capture *c)
{
	size_t nested[2] = { 0, 0 }, seen = 0;
	uint64_t plt[2] = { 0, 0 };
	const char *returned_from[2] = { NULL, NULL };

	for (size_t i = 0; i < c->truth.count && seen < 2; i++) {
		const struct event *e = &c->truth.items[i];
		long depth = 0;

		if (e->kind != EVENT_CALL || !symbol_is(symbol_at(c, e->to), "ask_parent", true))
			continue;
		/* The first call inside ask_parent is the one through the PLT. */
		for (size_t j = i + 1; j < c->truth.count; j++) {
			const struct event *inner = &c->truth.items[j];

			if (inner->tid != e->tid || !is_branch(inner))
				continue;
			if (inner->kind == EVENT_CALL && depth == 0)
				plt[seen] = inner->to;
			else if (inner->kind == EVENT_CALL)
				nested[seen]++;
			depth += inner->kind == EVENT_CALL ? 1 : -1;
			if (depth == 0 && inner->kind == EVENT_RETURN)
				returned_from[seen] = symbol_at(c, inner->from);
			if (depth <= 0 && inner->kind == EVENT_RETURN)
				break;
		}
		seen++;
	}
	cr_assert_eq(seen, 2, "ask_parent is not called twice");
	cr_assert(plt[0] && plt[0] == plt[1],
		  "both calls go to one PLT entry (%#" PRIx64 " and %#" PRIx64 ")", plt[0], plt[1]);
	for (int k = 0; k < 2; k++)
		cr_assert(returned_from[k] && strstr(returned_from[k], "getppid"),
			  "call %d through the PLT returns from %s, not getppid", k + 1,
			  returned_from[k] ? returned_from[k] : "nowhere");
	cr_assert_gt(nested[0], 0, "the first call through the PLT made no calls: not lazy?");
	cr_assert_eq(nested[1], 0, "the second call through the PLT made %zu calls", nested[1]);
}

/* Every target gets every setting: softpt makes all the captures of a
 * workload in one run (1 to 2 s of single-stepping for the static programs,
 * 5 to 20 s for the dynamic ones). Snapshots need a trace of several PSB
 * periods; some static targets make one with a longer workload, in a second
 * run. */
#define FULL_CONFIGS                                                                               \
	&config_low, &config_noretcomp, &config_normal, &config_high, &config_tsc_only, &config_psb

static const struct pt_target target_recursion = {
	.name = "tests/pt/recursion",
	.configs = { FULL_CONFIGS, &config_snapshot, &config_overflow },
	.snapshot_size = "4096",
	.snapshot_program_arg = "600",
	.overflow_at = "12000",
	.check = check_recursion,
};
static const struct pt_target target_fnptr = {
	.name = "tests/pt/fnptr",
	.configs = { FULL_CONFIGS, &config_snapshot, &config_overflow },
	.snapshot_size = "4096",
	.snapshot_program_arg = "400",
	.overflow_at = "10500",
};
static const struct pt_target target_qsort = {
	.name = "tests/pt/qsort_callback",
	.configs = { FULL_CONFIGS, &config_snapshot_mtc, &config_overflow },
	.snapshot_size = "4096",
	.snapshot_program_arg = "200",
	.overflow_at = "12000",
};
static const struct pt_target target_longjmp = {
	.name = "tests/pt/longjmp",
	.configs = { FULL_CONFIGS, &config_snapshot_mtc, &config_overflow },
	.snapshot_size = "2048",
	.snapshot_program_arg = "600",
	.overflow_at = "10600",
};
static const struct pt_target target_signals = {
	.name = "tests/pt/signals",
	.configs = { FULL_CONFIGS, &config_snapshot_mtc, &config_overflow },
	.snapshot_size = "4096",
	.snapshot_program_arg = "100",
	.overflow_at = "10600",
};
static const struct pt_target target_tailcall = {
	.name = "tests/pt/tailcall",
	.configs = { FULL_CONFIGS, &config_snapshot, &config_overflow },
	.snapshot_size = "2048",
	.snapshot_program_arg = "40",
	.overflow_at = "10800",
};
static const struct pt_target target_syscalls = {
	.name = "tests/pt/syscall_loop",
	.configs = { FULL_CONFIGS, &config_snapshot, &config_overflow },
	.snapshot_size = "4096",
	.snapshot_program_arg = "300",
	.overflow_at = "10800",
};
static const struct pt_target target_threads = {
	.name = "tests/pt/two_threads",
	.configs = { FULL_CONFIGS, &config_snapshot_mtc, &config_overflow },
	.snapshot_size = "2048",
	.overflow_at = "11000",
	.check = check_two_threads,
};
/* Overflow while the dynamic linker relocates libc. */
static const struct pt_target target_lazy_plt = {
	.name = "tests/pt/lazy_plt",
	.configs = { FULL_CONFIGS, &config_snapshot_mtc, &config_overflow },
	.snapshot_size = "4096",
	.overflow_at = "86000",
	.check = check_lazy_binding,
};
static const struct pt_target target_dlopen = {
	.name = "tests/pt/dlopen_main",
	.configs = { FULL_CONFIGS, &config_snapshot_mtc, &config_overflow },
	.snapshot_size = "4096",
	.overflow_at = "60000",
};
static const struct pt_target target_exceptions = {
	.name = "tests/pt/exceptions",
	.configs = { FULL_CONFIGS, &config_snapshot_mtc, &config_overflow },
	.snapshot_size = "8192",
	.overflow_at = "60000",
};
/* lld's layout: the code segment's load bias is not the first segment's. */
static const struct pt_target target_lld_layout = {
	.name = "tests/pt/lld_layout",
	.configs = { FULL_CONFIGS },
};

Test(softpt, deep_recursion, .timeout = 600)
{
	check_target(&target_recursion);
}

Test(softpt, function_pointers, .timeout = 600)
{
	check_target(&target_fnptr);
}

Test(softpt, qsort_callbacks, .timeout = 600)
{
	check_target(&target_qsort);
}

Test(softpt, setjmp_longjmp, .timeout = 600)
{
	check_target(&target_longjmp);
}

Test(softpt, signal_handlers, .timeout = 600)
{
	check_target(&target_signals);
}

Test(softpt, tail_calls, .timeout = 600)
{
	check_target(&target_tailcall);
}

Test(softpt, syscalls_in_a_loop, .timeout = 600)
{
	check_target(&target_syscalls);
}

Test(softpt, two_threads, .timeout = 600)
{
	check_target(&target_threads);
}

Test(softpt, lazy_plt_binding, .timeout = 600)
{
	check_target(&target_lazy_plt);
}

Test(softpt, dlopen_library, .timeout = 600)
{
	check_target(&target_dlopen);
}

Test(softpt, cpp_exceptions, .timeout = 600)
{
	check_target(&target_exceptions);
}

Test(softpt, lld_layout, .timeout = 600)
{
	check_target(&target_lld_layout);
}

/* softpt's own failures are one line on stderr and exit status 1; the
 * program's exit status passes through. */
Test(softpt, errors_and_exit_status, .timeout = 120)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char dir[64], data[128];

	cr_assert(r);
	make_test_dir(dir, sizeof(dir));

	char *missing[] = { (char *)build_path("softpt"), "-o", dir, "--",
			    "/nonexistent/program",	  NULL };
	run_process(missing, 60, r);
	cr_assert_eq(r->exit_code, 1);
	cr_assert(strstr(r->err, "cannot run /nonexistent/program"), "%s", r->err);

	char *no_output[] = { (char *)build_path("softpt"), "--", "/bin/true", NULL };
	run_process(no_output, 60, r);
	cr_assert_eq(r->exit_code, 1);
	cr_assert(strstr(r->err, "-o DIR"), "%s", r->err);

	char *dangling[] = {
		(char *)build_path("softpt"), "-o", dir, "--noretcomp", "--", "/bin/true", NULL
	};
	run_process(dangling, 60, r);
	cr_assert_eq(r->exit_code, 1);
	cr_assert(strstr(r->err, "after the last -o"), "%s", r->err);

	char *bad_timer[] = { (char *)build_path("softpt"),
			      "--timer-resolution",
			      "fast",
			      "-o",
			      dir,
			      "--",
			      "/bin/true",
			      NULL };
	run_process(bad_timer, 60, r);
	cr_assert_eq(r->exit_code, 1);
	cr_assert(strstr(r->err, "unknown --timer-resolution 'fast'"), "%s", r->err);

	char *status[] = { "/usr/bin/env",
			   "-i",
			   (char *)build_path("softpt"),
			   "-q",
			   "-o",
			   dir,
			   "--",
			   (char *)build_path("tests/pt/syscall_loop"),
			   "1",
			   NULL };
	run_process(status, 120, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	snprintf(data, sizeof(data), "%s/perf.data", dir);
	cr_assert(file_exists(data));

	char *exit3[] = {
		(char *)build_path("softpt"), "-q", "-o", dir, "--", "/bin/sh", "-c", "exit 3", NULL
	};
	run_process(exit3, 120, r);
	cr_assert_eq(r->exit_code, 3, "%s", r->err);

	cleanup_dir(dir);
	free(r);
}
