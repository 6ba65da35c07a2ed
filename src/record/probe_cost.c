/* probe_cost.c: the per-call cost of a probe pair, measured on rearview's
 * own code; see probe_cost.h for the method and its error. */
#include "record/probe_cost.h"

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "probe_cost.skel.h"
#include "util/bpf_log.h"

/* The two copies of the calibration's function: x + 1, with a frame, so that
 * the entry probe is on a `push %rbp` and the exit probe on the `ret`, as on
 * most functions the tracer probes. Written in assembly so that the `ret`'s
 * place is a label rather than a guess at what a compiler emitted; both
 * symbols are local to this file. */
#define COST_FUNCTION(name)                                                                        \
	".p2align 4\n"                                                                             \
	".type " name ", @function\n" name ":\n"                                                   \
	"\tpush %rbp\n"                                                                            \
	"\tmov %rsp, %rbp\n"                                                                       \
	"\tlea 1(%rdi), %rax\n"                                                                    \
	"\tpop %rbp\n" name "_ret:\n"                                                              \
	"\tret\n"                                                                                  \
	".size " name ", . - " name "\n"

__asm__(".pushsection .text\n" COST_FUNCTION("rv_probe_cost_probed")
		COST_FUNCTION("rv_probe_cost_bare") ".popsection\n");

uint64_t rv_probe_cost_probed(uint64_t x);
uint64_t rv_probe_cost_bare(uint64_t x);
extern const char rv_probe_cost_probed_ret[];

/* ---- where the probed copy is in its file ---- */

struct code_place {
	uintptr_t addr;	     /* in: an address of rearview's code */
	char path[PATH_MAX]; /* out: the file that maps it */
	uint64_t offset;     /* out: addr's offset in that file */
	bool found;
};

static int find_segment(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct code_place *p = ctx;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || p->addr < start || p->addr - start >= ph->p_filesz)
			continue;
		p->offset = p->addr - start + ph->p_offset;
		if (info->dlpi_name && info->dlpi_name[0]) {
			snprintf(p->path, sizeof(p->path), "%s", info->dlpi_name);
		} else {
			ssize_t n = readlink("/proc/self/exe", p->path, sizeof(p->path) - 1);

			if (n <= 0)
				return 1; /* found, but nameless: reported by the caller */
			p->path[n] = '\0';
		}
		p->found = true;
		return 1;
	}
	return 0;
}

static int locate(uintptr_t addr, struct code_place *p, struct rv_error *err)
{
	memset(p, 0, sizeof(*p));
	p->addr = addr;
	dl_iterate_phdr(find_segment, p);
	if (!p->found)
		return rv_error_set(err, ENOENT,
				    "cannot find the file of rearview's own code at %#llx "
				    "(/proc/self/exe unreadable?)",
				    (unsigned long long)addr);
	return 0;
}

/* ---- timing ---- */

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of n calls of fn; *sink keeps the calls from being elided. */
static uint64_t time_calls(uint64_t (*fn)(uint64_t), unsigned n, uint64_t *sink)
{
	uint64_t x = *sink, start = thread_cpu_ns();

	for (unsigned i = 0; i < n; i++)
		x = fn(x);
	*sink = x;
	return thread_cpu_ns() - start;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The value at fraction q of sorted v[0..n) (nearest rank). */
static double quantile(const double *v, unsigned n, double q)
{
	unsigned i = (unsigned)(q * (n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

/* ---- the calibration ---- */

#define WARM_UP_CALLS 100
#define ROUND_NS      4000000ull /* 4 ms of probed calls a round */
#define MIN_CALLS     100

static int attach_at(struct bpf_program *prog, const struct code_place *p, bool retprobe,
		     struct bpf_link **link, struct rv_error *err)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe);
	int e;

	/* pid 0: this process only */
	*link = bpf_program__attach_uprobe_opts(prog, 0, p->path, (size_t)p->offset, &opts);
	if (*link)
		return 0;
	e = errno ? errno : EINVAL;
	if (e == EPERM || e == EACCES)
		return rv_error_set(err, e,
				    "not allowed to place a uprobe in '%s': run rearview as root "
				    "(or with CAP_PERFMON and CAP_BPF)",
				    p->path);
	return rv_error_set(err, e, "cannot place a uprobe in '%s' at offset %#llx: %s", p->path,
			    (unsigned long long)p->offset, strerror(e));
}

/* Calls per round when the config leaves it open: about ROUND_NS of probed
 * calls at the warm-up's cost, within [MIN_CALLS, RV_PROBE_COST_MAX_CALLS]. */
static unsigned calls_for_budget(uint64_t warm_ns)
{
	uint64_t each = warm_ns / WARM_UP_CALLS, calls;

	calls = each ? ROUND_NS / each : RV_PROBE_COST_MAX_CALLS;
	if (calls < MIN_CALLS)
		calls = MIN_CALLS;
	return calls > RV_PROBE_COST_MAX_CALLS ? RV_PROBE_COST_MAX_CALLS : (unsigned)calls;
}

static int run_rounds(struct probe_cost_bpf *skel, unsigned rounds, unsigned calls,
		      struct rv_probe_cost *out, struct rv_error *err)
{
	double *cost = calloc(rounds, sizeof(*cost));
	uint64_t sink = 1, warm_ns, expected;

	if (!cost)
		return rv_error_set(err, ENOMEM, "out of memory");
	/* Warm-up: the first hits map the kernel's out-of-line area and fault
	 * the code in; its time sizes the rounds. */
	warm_ns = time_calls(rv_probe_cost_probed, WARM_UP_CALLS, &sink);
	time_calls(rv_probe_cost_bare, WARM_UP_CALLS, &sink);
	if (!calls)
		calls = calls_for_budget(warm_ns);
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t probed, bare;

		if (r % 2) {
			bare = time_calls(rv_probe_cost_bare, calls, &sink);
			probed = time_calls(rv_probe_cost_probed, calls, &sink);
		} else {
			probed = time_calls(rv_probe_cost_probed, calls, &sink);
			bare = time_calls(rv_probe_cost_bare, calls, &sink);
		}
		cost[r] = ((double)probed - (double)bare) / calls;
	}
	qsort(cost, rounds, sizeof(*cost), compare_double);
	out->ns_per_call = quantile(cost, rounds, 0.5);
	out->low_ns = quantile(cost, rounds, 0.25);
	out->high_ns = quantile(cost, rounds, 0.75);
	out->rounds = rounds;
	out->calls_per_round = calls;
	out->probed_calls = WARM_UP_CALLS + (uint64_t)rounds * calls;
	free(cost);
	expected = out->probed_calls;
	if (sink == 0 || skel->bss->entries != expected || skel->bss->exits != expected)
		return rv_error_set(err, EIO,
				    "the probe cost calibration's probes saw %llu entries and %llu "
				    "exits of %llu calls: this kernel's uprobes do not behave as "
				    "expected",
				    (unsigned long long)skel->bss->entries,
				    (unsigned long long)skel->bss->exits,
				    (unsigned long long)expected);
	if (out->ns_per_call <= 0)
		return rv_error_set(err, EIO,
				    "the probe cost calibration measured no cost (%.1f ns a call): "
				    "the thread's CPU clock is too coarse here",
				    out->ns_per_call);
	return 0;
}

struct rv_probe_cost_probes {
	struct probe_cost_bpf *skel;
	struct bpf_link *links[2];
	pthread_t releaser;
	bool releasing; /* the releaser thread runs */
};

static void release_now(struct rv_probe_cost_probes *p)
{
	/* Released by a thread that is not in the probed copy, which only the
	 * calibration's thread runs: nothing keeps the release waiting beyond
	 * the kernel's grace period. */
	bpf_link__destroy(p->links[1]);
	bpf_link__destroy(p->links[0]);
	probe_cost_bpf__destroy(p->skel);
	p->links[0] = p->links[1] = NULL;
	p->skel = NULL;
}

static void *releaser(void *arg)
{
	release_now(arg);
	return NULL;
}

void rv_probe_cost_release(struct rv_probe_cost_probes *p)
{
	if (!p || p->releasing)
		return;
	if (!pthread_create(&p->releaser, NULL, releaser, p))
		p->releasing = true;
	else
		release_now(p);
}

void rv_probe_cost_probes_free(struct rv_probe_cost_probes *p)
{
	if (!p)
		return;
	if (p->releasing)
		pthread_join(p->releaser, NULL);
	else
		release_now(p);
	free(p);
}

int rv_probe_cost_measure(const struct rv_probe_cost_config *config, struct rv_probe_cost *out,
			  struct rv_probe_cost_probes **held, struct rv_error *err)
{
	unsigned rounds = config && config->rounds ? config->rounds : RV_PROBE_COST_ROUNDS;
	unsigned calls = config ? config->calls_per_round : 0;
	bool uretprobe = config && config->exit == RV_PROBE_COST_EXIT_URETPROBE;
	uint64_t started = monotonic_ns();
	struct code_place entry, exit_site;
	struct rv_probe_cost_probes *p;
	int ret;

	memset(out, 0, sizeof(*out));
	if (held)
		*held = NULL;
	if (rounds > RV_PROBE_COST_MAX_ROUNDS || calls > RV_PROBE_COST_MAX_CALLS)
		return rv_error_set(err, EINVAL,
				    "probe cost calibration: at most %u rounds of %u calls",
				    RV_PROBE_COST_MAX_ROUNDS, RV_PROBE_COST_MAX_CALLS);
	ret = locate((uintptr_t)rv_probe_cost_probed, &entry, err);
	if (!ret)
		ret = locate((uintptr_t)rv_probe_cost_probed_ret, &exit_site, err);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return rv_error_set(err, ENOMEM, "out of memory");
	rv_bpf_log_setup();
	p->skel = probe_cost_bpf__open_and_load();
	if (!p->skel) {
		ret = -errno;
		free(p);
		return rv_bpf_load_error(err, ret, "the probe cost calibration's BPF programs");
	}
	ret = attach_at(p->skel->progs.cost_entry, &entry, false, &p->links[0], err);
	if (!ret && uretprobe)
		ret = attach_at(p->skel->progs.cost_exit, &entry, true, &p->links[1], err);
	else if (!ret)
		ret = attach_at(p->skel->progs.cost_exit, &exit_site, false, &p->links[1], err);
	if (!ret)
		ret = run_rounds(p->skel, rounds, calls, out, err);
	out->elapsed_ns = monotonic_ns() - started;
	if (ret || !held)
		rv_probe_cost_probes_free(p);
	else
		*held = p;
	return ret;
}
