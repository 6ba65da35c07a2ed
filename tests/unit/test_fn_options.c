/* test_fn_options.c: the function tracer's command line (--backend uprobe,
 * --functions, --kernel-events, --kernel-functions), its bpf-output events'
 * attribute and its --dry-run lines. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/options.h"
#include "record/dry_run.h"
#include "record/sample_engine.h"

static int parse(struct rv_options *o, struct rv_error *err, const char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return rv_options_parse(o, argc, (char **)argv, err);
}

Test(fn_options, uprobe_backend_with_patterns_and_events)
{
	const char *argv[] = { "rearview",
			       "run",
			       "--backend",
			       "uprobe",
			       "--functions",
			       "parse_*,libc:mall*",
			       "-functions",
			       "ns::f",
			       "--kernel-events",
			       "syscalls",
			       "--kernel-events",
			       "sched,irq",
			       "--",
			       "prog",
			       NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, argv), 0, "%s", err.message);
	cr_assert_eq(o.backend, RV_BACKEND_UPROBE);
	cr_assert_eq(o.nr_functions, 3, "comma lists and repeats add up");
	cr_assert_str_eq(o.functions[0], "parse_*");
	cr_assert_str_eq(o.functions[1], "libc:mall*");
	cr_assert_str_eq(o.functions[2], "ns::f");
	cr_assert_eq(o.kernel_events,
		     RV_KERNEL_EVENTS_SYSCALLS | RV_KERNEL_EVENTS_SCHED | RV_KERNEL_EVENTS_IRQ);
	cr_assert_eq(o.nr_kernel_functions, 0);
	rv_options_destroy(&o);
	cr_assert_null(o.functions);
}

Test(fn_options, attach_with_kernel_functions_and_the_gate)
{
	const char *argv[] = { "rearview",
			       "attach",
			       "-p",
			       "42",
			       "--backend",
			       "uprobe",
			       "--kernel-functions",
			       "vfs_*,do_sys_*",
			       "--filter",
			       "a,b",
			       "--kernel-events",
			       "faults",
			       NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, argv), 0, "%s", err.message);
	cr_assert_eq(o.nr_kernel_functions, 2);
	cr_assert_str_eq(o.kernel_functions[1], "do_sys_*");
	cr_assert_eq(o.kernel_events, RV_KERNEL_EVENTS_FAULTS);
	cr_assert_str_eq(o.filter_start, "a");
	rv_options_destroy(&o);
}

static void refused(const char **argv, const char *needle)
{
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_lt(parse(&o, &err, argv), 0, "accepted: %s ...", argv[2]);
	cr_assert(strstr(err.message, needle), "'%s' not in: %s", needle, err.message);
	rv_options_destroy(&o);
}

Test(fn_options, bad_values_and_other_backends_are_refused)
{
	const char *bad_event[] = {
		"rearview",	 "run", "--backend", "uprobe", "--kernel-events",
		"syscalls,disk", "--",	"x",	     NULL
	};
	const char *empty_pattern[] = { "rearview", "run", "--backend", "uprobe", "--functions",
					"a,,b",	    "--",  "x",		NULL };
	const char *trailing[] = { "rearview", "run", "--backend", "uprobe", "--functions",
				   "a,",       "--",  "x",	   NULL };
	const char *sampling[] = { "rearview", "run", "--backend", "sample", "--functions",
				   "a",	       "--",  "x",	   NULL };
	const char *auto_backend[] = { "rearview", "run", "--kernel-events", "sched", "--",
				       "x",	   NULL };
	const char *pt_kfunc[] = { "rearview", "run", "--backend", "pt", "--kernel-functions",
				   "vfs_read", "--",  "x",	   NULL };
	const char *include_kernel[] = {
		"rearview", "run", "--backend", "uprobe", "--trace-include-kernel", "--", "x", NULL
	};
	const char *callgraph[] = { "rearview", "run", "--backend", "uprobe", "--callgraph-mode",
				    "fp",	"--",  "x",	    NULL };
	const char *timer[] = { "rearview", "run", "--backend", "uprobe", "--timer-resolution",
				"high",	    "--",  "x",		NULL };
	const char *decode[] = { "rearview", "decode", "--functions", "f", "perf.data", NULL };
	const char *backend[] = { "rearview", "run", "--backend", "uprobes", "--", "x", NULL };

	refused(bad_event, "syscalls, sched, faults and irq");
	refused(empty_pattern, "none empty");
	refused(trailing, "none empty");
	refused(sampling, "--backend uprobe");
	refused(auto_backend, "--kernel-events belongs to the function tracer");
	refused(pt_kfunc, "--kernel-functions");
	refused(include_kernel, "--kernel-events");
	refused(callgraph, "--callgraph-mode");
	refused(timer, "--timer-resolution");
	refused(decode, "no effect on 'rearview decode'");
	refused(backend, "or uprobe");
}

Test(fn_options, help_documents_the_options)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	rv_options_print_help(RV_CMD_RUN, f);
	fclose(f);
	cr_assert(strstr(text, "--backend auto|pt|sample|uprobe"));
	cr_assert(strstr(text, "--functions PAT[,PAT...]"));
	cr_assert(strstr(text, "--kernel-events LIST"));
	cr_assert(strstr(text, "syscalls"));
	cr_assert(strstr(text, "--kernel-functions PAT[,PAT...]"));
	free(text);
}

Test(fn_options, bpf_output_events_attribute)
{
	struct rv_sample_config c = { .bpf_output = true, .dwarf = true, .frequency = 999 };
	struct perf_event_attr a;

	rv_sample_engine_attr(&c, true, &a);
	cr_assert_eq(a.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(a.config, PERF_COUNT_SW_BPF_OUTPUT);
	cr_assert_eq(a.sample_period, 1);
	cr_assert_not(a.freq);
	cr_assert_eq(a.sample_type, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
					    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW);
	cr_assert(a.mmap2 && a.comm && a.task && a.sample_id_all && a.disabled);
	cr_assert(a.use_clockid);
	cr_assert_eq(a.clockid, CLOCK_MONOTONIC);
	cr_assert_eq(a.sample_stack_user, 0, "no DWARF stacks for records");
}

Test(fn_options, dry_run_lists_probes)
{
	struct rv_dry_run_plan plan;
	struct rv_error err = { 0 };
	char *text = NULL;
	size_t size = 0;
	FILE *f;

	rv_dry_run_plan_init(&plan);
	cr_assert_eq(rv_dry_run_add_probe(&plan, "uprobe", "/bin/x+0x1139",
					  "main (function 0): fn_enter_multi", &err),
		     0);
	cr_assert_eq(
		rv_dry_run_add_probe(&plan, "tracepoint", "raw_syscalls:sys_enter", NULL, &err), 0);
	cr_assert_eq(rv_dry_run_add_bpf(&plan, "program", "fn_enter_multi", "kprobe", NULL, &err),
		     0);
	f = open_memstream(&text, &size);
	rv_dry_run_print(f, &plan, NULL);
	fclose(f);
	cr_assert(strstr(text, "dry run: 0 perf events, 1 BPF program, 0 BPF maps, 2 probes; "
			       "nothing was opened\n"),
		  "%s", text);
	cr_assert(strstr(text, "\nprobes:\n  uprobe /bin/x+0x1139: main (function 0): "
			       "fn_enter_multi\n  tracepoint raw_syscalls:sys_enter\n"),
		  "%s", text);
	free(text);
	rv_dry_run_plan_destroy(&plan);
}

Test(fn_options, exclude_and_exits)
{
	const char *argv[] = { "rearview",  "run",	 "--backend",  "uprobe",  "--exclude",
			       "tiny,hot*", "--exclude", "libc:mall*", "--exits", "uretprobe",
			       "--",	    "prog",	 NULL };
	const char *defaults[] = { "rearview", "run", "--backend", "uprobe", "--", "prog", NULL };
	const char *bad[] = { "rearview",  "run", "--backend", "uprobe", "--exits",
			      "sometimes", "--",  "prog",      NULL };
	const char *no_backend[] = { "rearview", "run", "--exclude", "tiny", "--", "prog", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, argv), 0, "%s", err.message);
	cr_assert_eq(o.nr_exclude, 3);
	cr_assert_str_eq(o.exclude[1], "hot*");
	cr_assert_str_eq(o.exclude[2], "libc:mall*");
	cr_assert(o.exits_uretprobe);
	rv_options_destroy(&o);
	cr_assert_null(o.exclude);

	cr_assert_eq(parse(&o, &err, defaults), 0, "%s", err.message);
	cr_assert_not(o.exits_uretprobe, "return sites by default");
	rv_options_destroy(&o);

	cr_assert_lt(parse(&o, &err, bad), 0);
	cr_assert(strstr(err.message, "return-sites"), "%s", err.message);
	rv_options_destroy(&o);

	cr_assert_lt(parse(&o, &err, no_backend), 0);
	cr_assert(strstr(err.message, "--exclude") && strstr(err.message, "--backend uprobe"), "%s",
		  err.message);
	rv_options_destroy(&o);
}
