/* test_probe_cost.c: the probe cost calibration (record/probe_cost.h) on
 * this machine's kernel: a plausible positive cost with every probed call
 * seen by both probes, and a clean error, not a crash, where uprobes are not
 * allowed (a process without root's capabilities).
 *
 * Not here: what the summary says with the number (test_probe_summary.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/probe_cost.h"
#include "test_env.h"

static void require_root(void)
{
	if (geteuid() == 0)
		return;
	cr_assert(!under_ci(), "under CI=true the probe cost test must run as root");
	cr_skip_test("placing uprobes needs root");
}

Test(probe_cost, measures_a_plausible_cost_with_every_call_probed)
{
	struct rv_probe_cost_config config = { .rounds = 5, .calls_per_round = 1000 };
	struct rv_probe_cost cost;
	struct rv_error err = { 0 };
	int ret;

	require_root();
	ret = rv_probe_cost_measure(&config, &cost, NULL, &err);
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_log_info("a probe pair costs %.0f ns a call (quartiles %.0f..%.0f), measured in %.1f "
		    "ms",
		    cost.ns_per_call, cost.low_ns, cost.high_ns, cost.elapsed_ns / 1e6);
	/* an int3 trap and a BPF program each way: well above 10 ns, and far
	 * below 100 us on any machine that runs the tests */
	cr_assert_gt(cost.ns_per_call, 10.0);
	cr_assert_lt(cost.ns_per_call, 100000.0);
	cr_assert_leq(cost.low_ns, cost.ns_per_call);
	cr_assert_geq(cost.high_ns, cost.ns_per_call);
	cr_assert_eq(cost.rounds, 5);
	cr_assert_eq(cost.calls_per_round, 1000);
	cr_assert_eq(cost.probed_calls, 5100, "the warm-up's 100 calls count too");
	cr_assert_gt(cost.elapsed_ns, 0);
}

/* As the function tracer's backend runs it: defaults, the probes released
 * in the background while the caller goes on. */
Test(probe_cost, the_defaults_stay_short)
{
	struct rv_probe_cost_probes *held = NULL;
	struct rv_probe_cost cost;
	struct rv_error err = { 0 };

	require_root();
	cr_assert_eq(rv_probe_cost_measure(NULL, &cost, &held, &err), 0, "%s", err.message);
	cr_assert_not_null(held);
	rv_probe_cost_release(held);
	rv_probe_cost_probes_free(held);
	cr_log_info(
		"defaults: %.0f ns a call (quartiles %.0f..%.0f), %u rounds of %u calls, %.1f ms",
		cost.ns_per_call, cost.low_ns, cost.high_ns, cost.rounds, cost.calls_per_round,
		cost.elapsed_ns / 1e6);
	cr_assert_eq(cost.rounds, RV_PROBE_COST_ROUNDS);
	cr_assert_geq(cost.calls_per_round, 100);
	cr_assert_eq(cost.probed_calls,
		     100 + (uint64_t)RV_PROBE_COST_ROUNDS * cost.calls_per_round);
	/* well under 100 ms on an idle machine; 2 s leaves room for a loaded one */
	cr_assert_lt(cost.elapsed_ns, 2000000000ull, "%.1f ms", cost.elapsed_ns / 1e6);
}

/* The uretprobe pair, as the function tracer's --exits uretprobe places it:
 * also every call seen, at a cost of its own. */
Test(probe_cost, measures_a_uretprobe_pair_too)
{
	struct rv_probe_cost_config config = { .exit = RV_PROBE_COST_EXIT_URETPROBE,
					       .rounds = 5,
					       .calls_per_round = 1000 };
	struct rv_probe_cost cost;
	struct rv_error err = { 0 };

	require_root();
	cr_assert_eq(rv_probe_cost_measure(&config, &cost, NULL, &err), 0, "%s", err.message);
	cr_log_info("an entry probe and a uretprobe cost %.0f ns a call (quartiles %.0f..%.0f)",
		    cost.ns_per_call, cost.low_ns, cost.high_ns);
	cr_assert_gt(cost.ns_per_call, 10.0);
	cr_assert_lt(cost.ns_per_call, 100000.0);
	cr_assert_eq(cost.probed_calls, 5100);
}

Test(probe_cost, refuses_configs_that_would_take_long)
{
	struct rv_probe_cost_config config = { .rounds = RV_PROBE_COST_MAX_ROUNDS + 1 };
	struct rv_probe_cost cost;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_probe_cost_measure(&config, &cost, NULL, &err), -EINVAL);
	cr_assert(strstr(err.message, "at most"), "%s", err.message);
}

/* Without root's capabilities the kernel refuses the BPF programs: the
 * calibration says so and what to do, and leaves nothing behind. */
Test(probe_cost, fails_cleanly_where_uprobes_are_not_allowed)
{
	int status;
	pid_t pid;

	require_root();
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rv_probe_cost cost;
		struct rv_error err = { 0 };
		int ret;

		/* leaving uid 0 drops every capability */
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(3);
		ret = rv_probe_cost_measure(NULL, &cost, NULL, &err);
		if (ret >= 0)
			_exit(4);
		if (ret != -err.code || !strstr(err.message, "root"))
			_exit(5);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the calibration crashed without privileges (status %#x)",
		  status);
	cr_assert_eq(WEXITSTATUS(status), 0,
		     "3: could not drop privileges, 4: it measured without them, 5: the error does "
		     "not say what to do");
}
