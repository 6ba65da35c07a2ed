/* probe_cost.h: what a probe pair costs a call on this machine, now: the
 * calibration the function tracer's backend runs when it starts, so that the
 * summary can say how much of a traced run was the probes themselves.
 *
 * Method. Two copies of one tiny function live in rearview's own code (push
 * %rbp ... ret, the shape of most functions' entries and exits). A plain
 * uprobe goes at one copy's entry and another at its `ret` (or a uretprobe,
 * config->exit), as the function tracer places them, for this process
 * only, with BPF programs that only count
 * (bpf/probe_cost.bpf.c). The calling thread then runs rounds of calls_per_round
 * calls, each round timing a loop over the probed copy and a loop over the
 * bare copy on its own CPU time (CLOCK_THREAD_CPUTIME_ID: time on other
 * threads and time waiting for a CPU are not counted, so the other work of
 * a busy machine does not inflate it), the two in alternating order. A
 * round's cost is (probed - bare) / calls_per_round; the result is the
 * median of the rounds (after 100 calls of warm-up, which also size the
 * rounds), with the rounds' quartiles as its spread. The BPF counters must show that every probed
 * call hit both probes and no bare one did, else the calibration fails.
 *
 * What it costs depends on the probed instructions. The kernel emulates some
 * (push, and on Linux 6.18 turns a probe on a 5-byte nop into a call) and
 * single-steps the others out of line, which takes a second trap: measured
 * on this project's VM (kernel 6.18), a uprobe on `push %rbp` costs 0.6 us a
 * hit, one on a 5-byte nop 0.25 us, and one on `ret`, `endbr64`, `mov`,
 * `sub` or `xor` 24-28 us; a uretprobe 0.4 us. The calibration's pair is the
 * common shape (an emulated entry; a single-stepped `ret`, or a uretprobe);
 * functions whose entry is single-stepped pay more, a nop entry less.
 *
 * Error. The trap is charged to the thread that takes it, so the number is
 * the thread's own cost of a probe pair; cache and TLB effects on the code
 * after each trap are included only as far as a loop of calls shows them.
 * On this machine the rounds' quartiles are within a few percent of the
 * median; a round preempted in kernel code can still be an outlier, which
 * the median ignores. It is a floor for the function tracer's cost: its BPF
 * programs do more than count (a record per call), which adds to it.
 *
 * Not here: the function tracer's probes (fn_engine.h), what the summary
 * makes of the number (render/probe_summary.h).
 */
#ifndef RV_RECORD_PROBE_COST_H
#define RV_RECORD_PROBE_COST_H

#include <stdint.h>

#include "util/error.h"

/* How the pair's exit is probed: as the function tracer probes exits. */
enum rv_probe_cost_exit {
	RV_PROBE_COST_EXIT_RET,	      /* a plain uprobe on the `ret` (return-site probes) */
	RV_PROBE_COST_EXIT_URETPROBE, /* a uretprobe (the return address replaced) */
};

struct rv_probe_cost_config {
	enum rv_probe_cost_exit exit;
	unsigned rounds; /* timed rounds (0: RV_PROBE_COST_ROUNDS) */
	/* 0: as many as about 4 ms of probed calls at the warm-up's cost (at
	 * least 100), so that the whole takes about 40 ms whatever a pair costs */
	unsigned calls_per_round;
};

#define RV_PROBE_COST_ROUNDS 7
/* Bounds on a config's values, so that a calibration stays short. */
#define RV_PROBE_COST_MAX_ROUNDS 99
#define RV_PROBE_COST_MAX_CALLS	 100000

struct rv_probe_cost {
	double ns_per_call;	  /* the median round's cost of one call's pair, in ns */
	double low_ns, high_ns;	  /* the rounds' first and third quartiles, in ns */
	unsigned rounds;	  /* timed rounds, warm-up not included */
	unsigned calls_per_round; /* probed calls in each */
	uint64_t probed_calls;	  /* every probed call made, warm-up included */
	uint64_t elapsed_ns;	  /* wall time from the start until the probes were measured */
};

/* The calibration's probes, still attached after a measure (on rearview's
 * own code, so they cost nothing meanwhile). */
struct rv_probe_cost_probes;

/* Measures the cost as described above, on the calling thread; config NULL
 * means the defaults (exits probed on the `ret`). Needs what the function tracer needs (root, BPF,
 * uprobes). Returns 0 with *out filled, or a negative code with err saying
 * why it could not measure (privileges, no uprobes, a count that does not
 * add up); it never prints.
 *
 * Releasing a uprobe makes the kernel wait for a grace period, 0.1-0.2 s a
 * probe here and seconds on a loaded machine, longer than measuring takes.
 * held NULL: the probes are released before it returns. Else, on success,
 * *held keeps them, for rv_probe_cost_release (in the background) and
 * rv_probe_cost_probes_free; on failure *held is NULL and nothing is left
 * attached or loaded. */
int rv_probe_cost_measure(const struct rv_probe_cost_config *config, struct rv_probe_cost *out,
			  struct rv_probe_cost_probes **held, struct rv_error *err);

/* Starts releasing the probes on a thread of their own (inline when no
 * thread can be made), and returns at once. NULL-safe. */
void rv_probe_cost_release(struct rv_probe_cost_probes *p);

/* Waits until the probes are released (releasing them now if
 * rv_probe_cost_release was not called), then frees p. NULL-safe. */
void rv_probe_cost_probes_free(struct rv_probe_cost_probes *p);

#endif
