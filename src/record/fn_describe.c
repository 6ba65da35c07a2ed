/* fn_describe.c: --dry-run for the function tracer: the probes (every
 * function's entry uprobe and its return-site uprobes or uretprobe, the
 * tracepoints, the kernel functions),
 * programs and maps a configuration would set up, loading nothing; see
 * fn_engine.h.
 *
 * Not here: the plan's output (dry_run.c).
 */
#include "record/fn_engine_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

static int describe_bpf(struct rv_dry_run_plan *plan, const struct rv_fn_engine_config *c,
			bool multi, struct rv_error *err)
{
	struct {
		const char *kind, *name, *type, *detail;
		bool wanted;
	} items[] = {
		{ "program", "fn_enter_multi", "kprobe (uprobe_multi)",
		  "records function entries and returns (at return sites)", c->nr_funcs && multi },
		{ "program", "fn_exit_multi", "kprobe (uprobe_multi)",
		  "records function returns (uretprobes)", c->nr_funcs && multi },
		{ "program", "fn_enter", "kprobe (uprobe perf link)",
		  multi ? "records function entries and returns (at return sites) where a "
			  "uprobe_multi link is refused"
			: "records function entries and returns (at return sites)",
		  c->nr_funcs },
		{ "program", "fn_exit", "kprobe (uprobe perf link)",
		  multi ? "records function returns (uretprobes) where a uprobe_multi link is "
			  "refused"
			: "records function returns (uretprobes)",
		  c->nr_funcs },
		{ "program", "fn_sys_enter", "tracepoint", "records system call entries",
		  c->kernel_events & RV_FN_EVENTS_SYSCALLS },
		{ "program", "fn_sys_exit", "tracepoint", "records system call returns",
		  c->kernel_events & RV_FN_EVENTS_SYSCALLS },
		{ "program", "fn_sched_switch", "raw_tracepoint",
		  "records threads leaving and regaining a CPU",
		  c->kernel_events & RV_FN_EVENTS_SCHED },
		{ "program", "fn_page_fault", "tracepoint", "records user page faults",
		  c->kernel_events & RV_FN_EVENTS_FAULTS },
		{ "program", "fn_irq_entry", "tracepoint", "records interrupt handlers starting",
		  c->kernel_events & RV_FN_EVENTS_IRQ },
		{ "program", "fn_irq_exit", "tracepoint", "records interrupt handlers ending",
		  c->kernel_events & RV_FN_EVENTS_IRQ },
		{ "program", "fn_kprobe", "kprobe", "records kernel function entries",
		  rv_fn_has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_KPROBE },
		{ "program", "fn_kretprobe", "kprobe", "records kernel function returns",
		  rv_fn_has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_KPROBE },
		{ "program", "fn_fentry", "tracing (fentry)",
		  "records kernel function entries, one copy per function",
		  rv_fn_has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_FENTRY },
		{ "program", "fn_fexit", "tracing (fexit)",
		  "records kernel function returns, one copy per function",
		  rv_fn_has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_FENTRY },
		{ "program", "fn_follow_fork", "tp_btf/sched_process_fork",
		  "adds a process a traced one forks to fn_targets, before it runs",
		  c->follow_children },
		{ "program", "fn_follow_exec", "tp_btf/sched_process_exec",
		  "takes a child that execs out of fn_targets (execs are not followed)",
		  c->follow_children },
		{ "program", "fn_follow_exit", "tp_btf/sched_process_exit",
		  "takes a child that exits out of fn_targets", c->follow_children },
		{ "map", "fn_rings", "array_of_maps", "the ring buffer of each CPU",
		  c->recorder_slots == 0 },
		{ "map", "fn_targets", "hash",
		  c->follow_children
			  ? "the processes recorded: the target and the children it forks "
			    "(the function links have no pid: every process that maps the "
			    "files takes the probes' traps, the programs keep these "
			    "processes' calls)"
			  : "the processes recorded",
		  true },
		{ "map", "fn_entry_addrs", "array", "first runtime entry address per function",
		  true },
		{ "map", "kfunc_addrs", "array", "kernel function addresses", true },
		{ "map", "fn_stats", "percpu_array", "records dropped", true },
		{ "map", ".bss", "array", "whether recording is on, records lost per CPU", true },
		{ "map", "fn_in_probe_syscall", "lru_hash",
		  "threads in a system call of the kernel's uprobe code",
		  c->kernel_events & RV_FN_EVENTS_SYSCALLS },
		{ "map", "gate_windows", "hash", "the gate's window map, shared",
		  c->gate_windows_fd >= 0 },
		{ "map", "fn_slots", "array",
		  "the per-thread flight recorder: the last records of each thread",
		  c->recorder_slots > 0 },
		{ "map", "fn_slot_of", "hash", "each thread's recorder slot",
		  c->recorder_slots > 0 },
		{ "map", "fn_slot_owner", "hash", "the thread that claimed each slot",
		  c->recorder_slots > 0 },
		{ "map", "fn_slot_count", "array", "recorder slots claimed",
		  c->recorder_slots > 0 },
	};
	int ret = 0;

	for (size_t i = 0; !ret && i < sizeof(items) / sizeof(items[0]); i++)
		if (items[i].wanted)
			ret = rv_dry_run_add_bpf(plan, items[i].kind, items[i].name, items[i].type,
						 items[i].detail, err);
	return ret;
}

/* A function's entry uprobe, and its return-site uprobes or uretprobe. */
static int describe_function(struct rv_dry_run_plan *plan, const struct rv_fn_probe *f, size_t i,
			     bool multi, struct rv_error *err)
{
	const char *program = multi ? "fn_enter_multi (uprobe_multi link)" : "fn_enter (perf link)";
	char where[PATH_MAX + 32], detail[512], pieces[64] = "";
	int ret;

	if (f->nr_pieces)
		snprintf(pieces, sizeof(pieces), ", %zu out-of-line piece%s", f->nr_pieces,
			 f->nr_pieces == 1 ? "" : "s");
	snprintf(where, sizeof(where), "%s+0x%" PRIx64, f->path,
		 f->offset + (f->exits == RV_FN_EXITS_SITES ? f->entry_skip : 0));
	if (f->exits == RV_FN_EXITS_SITES)
		snprintf(detail, sizeof(detail),
			 "%s (function %zu): %s; entry%s, %zu return site%s%s", f->name, i, program,
			 f->entry_skip ? " (after its endbr64)" : "", f->nr_sites,
			 f->nr_sites == 1 ? "" : "s", pieces);
	else
		snprintf(detail, sizeof(detail), "%s (function %zu): %s; entry", f->name, i,
			 program);
	ret = rv_dry_run_add_probe(plan, "uprobe", where, detail, err);
	for (size_t k = 0; !ret && f->exits == RV_FN_EXITS_SITES && k < f->nr_sites; k++) {
		const struct rv_fn_site *site = &f->sites[k];

		snprintf(where, sizeof(where), "%s+0x%" PRIx64, f->path, site->offset);
		snprintf(detail, sizeof(detail), "%s (function %zu): %s; %s at 0x%" PRIx64 "%s%s",
			 f->name, i, program,
			 site->kind == RV_FN_SITE_RETURN ? "return" : "jump out (tail call)",
			 site->address, site->condition ? ", when taken" : "",
			 site->address == f->address ? ", the entry's probe" : "");
		ret = rv_dry_run_add_probe(plan, "uprobe", where, detail, err);
	}
	if (ret || f->exits == RV_FN_EXITS_SITES)
		return ret;
	snprintf(where, sizeof(where), "%s+0x%" PRIx64, f->path, f->offset);
	snprintf(detail, sizeof(detail), "%s (function %zu): %s%s%s", f->name, i,
		 multi ? "fn_exit_multi (uprobe_multi link)" : "fn_exit (perf link)",
		 f->exits_problem ? "; its code could not be decoded: " : "",
		 f->exits_problem ? f->exits_problem : "");
	return rv_dry_run_add_probe(plan, "uretprobe", where, detail, err);
}

int rv_fn_engine_describe(struct rv_dry_run_plan *plan, const struct rv_fn_engine_config *c,
			  struct rv_error *err)
{
	static const struct {
		unsigned group;
		const char *kind, *where, *program;
	} tracepoints[] = {
		{ RV_FN_EVENTS_SYSCALLS, "tracepoint", "raw_syscalls:sys_enter", "fn_sys_enter" },
		{ RV_FN_EVENTS_SYSCALLS, "tracepoint", "raw_syscalls:sys_exit", "fn_sys_exit" },
		{ RV_FN_EVENTS_SCHED, "raw_tracepoint", "sched_switch", "fn_sched_switch" },
		{ RV_FN_EVENTS_FAULTS, "tracepoint", "exceptions:page_fault_user",
		  "fn_page_fault" },
		{ RV_FN_EVENTS_IRQ, "tracepoint", "irq:irq_handler_entry", "fn_irq_entry" },
		{ RV_FN_EVENTS_IRQ, "tracepoint", "irq:irq_handler_exit", "fn_irq_exit" },
	};
	bool multi = rv_fn_uprobe_multi_supported() && !c->no_uprobe_multi;
	int ret = 0;

	for (size_t i = 0; !ret && i < c->nr_funcs; i++)
		ret = describe_function(plan, &c->funcs[i], i, multi, err);
	for (size_t i = 0; !ret && i < sizeof(tracepoints) / sizeof(tracepoints[0]); i++)
		if (c->kernel_events & tracepoints[i].group)
			ret = rv_dry_run_add_probe(plan, tracepoints[i].kind, tracepoints[i].where,
						   tracepoints[i].program, err);
	for (size_t i = 0; !ret && rv_fn_has_kfuncs(c) && i < c->kfuncs->count; i++) {
		bool fentry = c->kfuncs->method == RV_KFUNC_FENTRY;

		ret = rv_dry_run_add_probe(plan, fentry ? "fentry" : "kprobe",
					   c->kfuncs->funcs[i].name,
					   fentry ? "fn_fentry" : "fn_kprobe", err);
		if (!ret)
			ret = rv_dry_run_add_probe(plan, fentry ? "fexit" : "kretprobe",
						   c->kfuncs->funcs[i].name,
						   fentry ? "fn_fexit" : "fn_kretprobe", err);
	}
	if (!ret)
		ret = describe_bpf(plan, c, multi, err);
	return ret;
}
