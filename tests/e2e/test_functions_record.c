/* test_functions_record.c: the recording side of --backend uprobe, live:
 * attaching places real uprobes (int3 in the target's code) and detaching
 * takes every one away with the process left running; one perf link per
 * function records exactly what uprobe_multi links record; the kernel's
 * system calls are recorded exactly; --kernel-functions is refused in one
 * line where the kernel allows neither fentry nor kprobes; --dry-run lists
 * every probe. Captures are read here with the capture module, record by
 * record (the trace they make is the decoder's business). */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../bpf/functions.h"
#include "capture/perf_data.h"
#include "harness.h"
#include "record/fn_engine.h"
#include "record/fn_select.h"
#include "record/probe_site.h"

#define MAX_INDEX 64

/* Records of a capture: counts per type and function (or syscall) index. */
struct counts {
	uint64_t by_type[16];
	uint64_t enter[MAX_INDEX], exit[MAX_INDEX];
	uint64_t reads_inside;	 /* read() entries while read_zeros (index 0) is open */
	uint64_t probe_syscalls; /* system calls of the kernel's uprobe code */
	uint64_t records;
};

static void read_capture(const char *path, struct counts *c)
{
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	int depth = 0, ret;

	memset(c, 0, sizeof(*c));
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		struct rv_perf_sample s;
		struct rv_fn_record f;

		if (rec.header->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(rv_perf_reader_parse_sample(r, rec.header, &s, &err), 0, "%s",
			     err.message);
		if (!s.attr || !s.attr->name || strcmp(s.attr->name, RV_FN_EVENT_NAME))
			continue;
		cr_assert_geq(s.raw_size, sizeof(f));
		memcpy(&f, s.raw, sizeof(f));
		cr_assert_lt(f.type, 16);
		c->records++;
		c->by_type[f.type]++;
		if (f.type == RV_FN_ENTER && f.arg < MAX_INDEX)
			c->enter[f.arg]++;
		if (f.type == RV_FN_EXIT && f.arg < MAX_INDEX)
			c->exit[f.arg]++;
		if (f.type == RV_FN_ENTER && f.arg == 0)
			depth++;
		if (f.type == RV_FN_EXIT && f.arg == 0)
			depth--;
		if (f.type == RV_FN_SYSCALL_ENTER && f.arg == 0 && depth > 0)
			c->reads_inside++;
		if ((f.type == RV_FN_SYSCALL_ENTER || f.type == RV_FN_SYSCALL_EXIT) &&
		    (f.arg == 335 || f.arg == 336))
			c->probe_syscalls++;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	rv_perf_reader_free(r);
}

static const char *rearview(void)
{
	return build_path("rearview");
}

/* The file offset of function name in exe, as the function tracer selects it. */
static uint64_t function_offset(const char *exe, const char *name)
{
	struct rv_fn_list l;
	struct rv_error err = { 0 };
	const char *patterns[] = { name };
	uint64_t offset;

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = patterns, .nr_include = 1 },
				  exe, 0, 10, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 1);
	offset = l.items[0].offset;
	rv_fn_list_destroy(&l);
	return offset;
}

/* The byte at file offset `offset` of exe, in the file and in process pid's
 * memory (where a uprobe puts an int3). */
static void code_bytes(pid_t pid, const char *exe, uint64_t offset, uint8_t *in_file,
		       uint8_t *in_memory)
{
	char path[64], line[4096];
	uint64_t address = 0;
	FILE *maps;
	int fd;

	fd = open(exe, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, in_file, 1, (off_t)offset), 1);
	close(fd);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	cr_assert_not_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long start, end, pgoff;
		char perms[8];

		if (!strstr(line, exe) ||
		    sscanf(line, "%llx-%llx %7s %llx", &start, &end, perms, &pgoff) != 4)
			continue;
		if (offset >= pgoff && offset - pgoff < end - start && perms[2] == 'x')
			address = start + (offset - pgoff);
	}
	fclose(maps);
	cr_assert_neq(address, 0, "%s+%#llx is not mapped executable in %d", exe,
		      (unsigned long long)offset, (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, in_memory, 1, (off_t)address), 1);
	close(fd);
}

/* The BPF links and programs process pid holds (from /proc/PID/fdinfo). */
struct held {
	uint32_t links[256], progs[256];
	size_t nr_links, nr_progs, nr_uprobe_links;
};

static void held_by(pid_t pid, struct held *h)
{
	char path[64], line[256];
	struct dirent *de;
	DIR *dir;

	memset(h, 0, sizeof(*h));
	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	dir = opendir(path);
	cr_assert_not_null(dir);
	while ((de = readdir(dir))) {
		char info[384];
		FILE *f;
		bool uprobe = false;

		snprintf(info, sizeof(info), "%s/%s", path, de->d_name);
		f = fopen(info, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned id;

			if (strstr(line, "link_type:") && strstr(line, "probe_multi"))
				uprobe = true;
			if (sscanf(line, "link_id: %u", &id) == 1 && h->nr_links < 256)
				h->links[h->nr_links++] = id;
			else if (sscanf(line, "prog_id: %u", &id) == 1 && h->nr_progs < 256 &&
				 !strstr(line, "link"))
				h->progs[h->nr_progs++] = id;
		}
		h->nr_uprobe_links += uprobe;
		fclose(f);
	}
	closedir(dir);
}

static bool link_exists(uint32_t id)
{
	int fd = bpf_link_get_fd_by_id(id);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static bool prog_exists(uint32_t id)
{
	int fd = bpf_prog_get_fd_by_id(id);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* Processes a test started, killed by the fixture if an assertion ends it. */
static pid_t started[2];

static void kill_started(void)
{
	for (size_t i = 0; i < 2; i++) {
		if (started[i] > 0) {
			kill(started[i], SIGKILL);
			waitpid(started[i], NULL, 0);
		}
		started[i] = 0;
	}
}

/* Whether a line of `cmd`'s output contains needle. */
static bool command_output_has(const char *cmd, const char *needle)
{
	char line[4096];
	bool found = false;
	FILE *p = popen(cmd, "r");

	if (!p)
		return false;
	while (fgets(line, sizeof(line), p))
		found |= strstr(line, needle) != NULL;
	pclose(p);
	return found;
}

Test(functions_record, attach_then_detach_leaves_the_process_running_and_unprobed, .timeout = 90,
     .fini = kill_started)
{
	char dir[64], out[128], capture[128], pidtext[32], exe[4096];
	struct proc_result r;
	struct counts c;
	struct held held;
	int pipe_read, out_fd, err_fd, status, tracer;
	pid_t target = start_forever(&pipe_read), rv;
	uint64_t offset;
	uint8_t file_byte, mem_byte;
	char state;

	started[0] = target;
	cr_assert(realpath(build_path("tests/targets/forever"), exe));
	offset = function_offset(exe, "busy_loop_body");
	code_bytes(target, exe, offset, &file_byte, &mem_byte);
	cr_assert_eq(mem_byte, file_byte, "the code is the file's before recording");

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/attach.fxt", dir);
	snprintf(capture, sizeof(capture), "%s/capture", dir);
	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	char *argv[] = { (char *)rearview(),
			 "attach",
			 "-p",
			 pidtext,
			 "--backend",
			 "uprobe",
			 "--functions",
			 "busy_loop_body,main",
			 "--working-directory",
			 capture,
			 "-o",
			 out,
			 NULL };
	rv = start_process(argv, &out_fd, &err_fd);
	started[1] = rv;
	cr_assert(wait_for_text(err_fd, "attached 2 functions", 30), "rearview never attached");

	/* While recording: an int3 on the function, uprobe links of rearview's. */
	code_bytes(target, exe, offset, &file_byte, &mem_byte);
	cr_assert_eq(mem_byte, 0xcc, "a uprobe (int3) on busy_loop_body while recording");
	held_by(rv, &held);
	/* one link holds the entries and the return sites */
	cr_assert_geq(held.nr_uprobe_links, 1,
		      "rearview holds uprobe links while it records (%zu links, %zu programs)",
		      held.nr_links, held.nr_progs);
	cr_assert_gt(held.nr_progs, 0);
	{
		/* rearview may be closing a link meanwhile (the calibration's
		 * probes are released in the background): a link whose fd it
		 * held before the check and still holds after it must exist */
		bool exists[256];
		struct held after;
		size_t checked = 0;

		for (size_t i = 0; i < held.nr_links; i++)
			exists[i] = link_exists(held.links[i]);
		held_by(rv, &after);
		for (size_t i = 0; i < held.nr_links; i++)
			for (size_t j = 0; j < after.nr_links; j++)
				if (after.links[j] == held.links[i]) {
					cr_assert(exists[i], "link %u held but gone",
						  held.links[i]);
					checked++;
				}
		cr_assert_gt(checked, 0, "rearview still holds its links");
	}

	/* calls recorded while the target runs 100 ms under the probes */
	cr_assert(wait_for_cpu(target, 100, 30), "the target did not run");
	kill(rv, SIGINT);
	finish_process(rv, out_fd, err_fd, 60, &r);
	started[1] = 0;
	cr_assert_eq(r.exit_code, 0, "%s", r.err);

	/* After: running, untraced, the code as in the file, nothing left. */
	state = wait_until_running_untraced(target, &tracer, 10);
	cr_assert(state == 'R' || state == 'S', "the target is in state %c", state);
	cr_assert_eq(tracer, 0);
	cr_assert_eq(waitpid(target, &status, WNOHANG), 0, "the target exited");
	code_bytes(target, exe, offset, &file_byte, &mem_byte);
	cr_assert_eq(mem_byte, file_byte, "the uprobe is gone: %#x in memory, %#x in the file",
		     mem_byte, file_byte);
	cr_assert_not(command_output_has("cat /sys/kernel/tracing/uprobe_events 2>/dev/null", exe),
		      "a uprobe of ours is left in tracefs");
	cr_assert_not(
		command_output_has("cat /sys/kernel/debug/tracing/uprobe_events 2>/dev/null", exe));
	for (size_t i = 0; i < held.nr_links; i++)
		cr_assert_not(link_exists(held.links[i]), "link %u outlived rearview",
			      held.links[i]);
	for (size_t i = 0; i < held.nr_progs; i++)
		cr_assert_not(prog_exists(held.progs[i]), "program %u outlived rearview",
			      held.progs[i]);

	/* What was recorded: both functions' entries, balanced returns. */
	snprintf(capture, sizeof(capture), "%s/capture/perf.data", dir);
	read_capture(capture, &c);
	cr_assert_gt(c.by_type[RV_FN_ENTER], 10, "%s", r.err);
	cr_assert_leq(c.by_type[RV_FN_ENTER] - c.by_type[RV_FN_EXIT] + 1, 2,
		      "entries %llu, exits %llu: only calls under way at the start or end are "
		      "unmatched",
		      (unsigned long long)c.by_type[RV_FN_ENTER],
		      (unsigned long long)c.by_type[RV_FN_EXIT]);

	kill(target, SIGTERM);
	cr_assert_eq(waitpid(target, &status, 0), target);
	started[0] = 0;
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	close(pipe_read);
	cleanup_dir(dir);
}

/* workload 240: main once, leaf 240 times, level 3000 times (240 calls at
 * depths 0..23 in turn: 10 rounds of 1 + 2 + ... + 24). */
static void record_workload(const char *dir, const char *name, bool perf_links, struct counts *c,
			    struct proc_result *r)
{
	char capture[128], out[128];

	snprintf(capture, sizeof(capture), "%s/%s", dir, name);
	snprintf(out, sizeof(out), "%s/%s.fxt", dir, name);
	char *argv[] = { (char *)rearview(),
			 "run",
			 "-v",
			 "--backend",
			 "uprobe",
			 "--full-execution",
			 "--functions",
			 "main,level,leaf",
			 "--working-directory",
			 capture,
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/workload"),
			 "240",
			 NULL };
	if (perf_links)
		setenv(RV_UPROBE_MULTI_ENV, "0", 1);
	run_process(argv, 60, r);
	unsetenv(RV_UPROBE_MULTI_ENV);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	snprintf(capture, sizeof(capture), "%s/%s/perf.data", dir, name);
	read_capture(capture, c);
}

Test(functions_record, one_link_per_function_records_what_uprobe_multi_records, .timeout = 120)
{
	char dir[64];
	struct counts multi, perf;
	struct proc_result *r = malloc(sizeof(*r));

	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	record_workload(dir, "multi", false, &multi, r);
	if (rv_fn_uprobe_multi_supported())
		cr_assert(strstr(r->err, "(uprobe_multi)"), "%s", r->err);
	record_workload(dir, "perf", true, &perf, r);
	cr_assert(strstr(r->err, "(one uprobe link per probe)"), "%s", r->err);

	/* Functions in address order: main, level, leaf. */
	cr_assert_eq(multi.enter[0], 1);
	cr_assert_eq(multi.enter[1], 3000);
	cr_assert_eq(multi.enter[2], 240);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(multi.exit[i], multi.enter[i], "function %d", i);
		cr_assert_eq(perf.enter[i], multi.enter[i], "function %d", i);
		cr_assert_eq(perf.exit[i], multi.exit[i], "function %d", i);
	}
	cr_assert_eq(perf.records, multi.records);
	free(r);
	cleanup_dir(dir);
}

Test(functions_record, system_calls_are_recorded_exactly, .timeout = 60)
{
	char dir[64], capture[128], out[128];
	struct counts c;
	struct proc_result *r = malloc(sizeof(*r));

	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	snprintf(capture, sizeof(capture), "%s/capture", dir);
	snprintf(out, sizeof(out), "%s/syscalls.fxt", dir);
	char *argv[] = { (char *)rearview(),
			 "run",
			 "--backend",
			 "uprobe",
			 "--full-execution",
			 "--functions",
			 "read_zeros",
			 "--kernel-events",
			 "syscalls,sched",
			 "--working-directory",
			 capture,
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/syscalls"),
			 "50",
			 NULL };
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	snprintf(capture, sizeof(capture), "%s/capture/perf.data", dir);
	read_capture(capture, &c);
	cr_assert_eq(c.enter[0], 1);
	cr_assert_eq(c.exit[0], 1);
	cr_assert_eq(c.reads_inside, 50, "read_zeros made 50 read calls");
	cr_assert_eq(c.probe_syscalls, 0,
		     "the uprobe code's own system calls are not the program's");
	cr_assert_geq(c.by_type[RV_FN_SYSCALL_EXIT] + 1, c.by_type[RV_FN_SYSCALL_ENTER]);
	cr_assert_gt(c.by_type[RV_FN_SWITCH_IN], 0, "the thread was scheduled in");
	free(r);
	cleanup_dir(dir);
}

Test(functions_record, kernel_functions_refused_in_one_line, .timeout = 60)
{
	struct rv_kfunc_ops ops;
	enum rv_kfunc_method method;
	struct rv_error err = { 0 };
	struct proc_result *r;
	char *argv[] = { (char *)rearview(), "run", "--backend", "uprobe", "--kernel-functions",
			 "vfs_read",	     "--",  "true",	 NULL };

	rv_kfunc_system_ops(&ops);
	if (!rv_kfunc_choose(&ops, &method, &err)) {
		fprintf(stderr, "skipped: this kernel allows %s\n", rv_kfunc_method_name(method));
		cr_skip_test("this kernel allows %s, so nothing is refused",
			     rv_kfunc_method_name(method));
	}
	r = malloc(sizeof(*r));
	cr_assert_not_null(r);
	run_process(argv, 30, r);
	cr_assert_eq(r->exit_code, 1);
	cr_assert(strstr(r->err, "fentry") && strstr(r->err, "kprobe"), "%s", r->err);
	cr_assert_eq(count_lines(r->err), 1, "one line: %s", r->err);
	free(r);
}

Test(functions_record, dry_run_lists_every_probe, .timeout = 60)
{
	char exe[4096], want[4200];
	struct rv_probe_site site;
	struct rv_error err = { 0 };
	struct proc_result *r = malloc(sizeof(*r));

	cr_assert_not_null(r);
	cr_assert(realpath(build_path("tests/targets/workload"), exe));
	char *argv[] = { (char *)rearview(), "run",	    "--backend", "uprobe",
			 "--dry-run",	     "--functions", "le*",	 "--kernel-events",
			 "syscalls,faults",  "--",	    exe,	 NULL };
	run_process(argv, 30, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert_eq(rv_probe_site_resolve("leaf", exe, 0, &site, &err), 0, "%s", err.message);
	snprintf(want, sizeof(want), "  uprobe %s+%#llx: leaf ", exe,
		 (unsigned long long)site.offset);
	cr_assert(strstr(r->out, want), "%s not in:\n%s", want, r->out);
	/* its returns: uprobes at its return sites, no uretprobe */
	snprintf(want, sizeof(want), "  uretprobe %s+%#llx: leaf ", exe,
		 (unsigned long long)site.offset);
	cr_assert_null(strstr(r->out, want), "%s in:\n%s", want, r->out);
	cr_assert(strstr(r->out, ": leaf (function ") && strstr(r->out, "; return at 0x"), "%s",
		  r->out);
	cr_assert(strstr(r->out, ": level "), "%s", r->out);
	cr_assert_null(strstr(r->out, ": main "), "%s", r->out);
	cr_assert(strstr(r->out, "  tracepoint raw_syscalls:sys_enter"), "%s", r->out);
	cr_assert(strstr(r->out, "  tracepoint exceptions:page_fault_user"), "%s", r->out);
	cr_assert_null(strstr(r->out, "sched_switch"), "%s", r->out);
	cr_assert(strstr(r->out, "bpf-output, CPU 0 (" RV_FN_EVENT_NAME ")"), "%s", r->out);
	cr_assert(strstr(r->out, "  program fn_enter "), "%s", r->out);
	cr_assert(strstr(r->out, "  map fn_rings (array_of_maps)"), "%s", r->out);
	cr_assert(strstr(r->out, "nothing was opened"), "%s", r->out);

	/* --exits uretprobe: a uretprobe at the entry, no return sites */
	char *uretprobes[] = { (char *)rearview(), "run",	  "--backend", "uprobe",
			       "--dry-run",	   "--functions", "leaf",      "--exits",
			       "uretprobe",	   "--",	  exe,	       NULL };
	run_process(uretprobes, 30, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert(strstr(r->out, want), "%s not in:\n%s", want, r->out);
	cr_assert_null(strstr(r->out, "return at"), "%s", r->out);
	free(r);
}

Test(functions_record, only_unprobeable_functions_is_an_error, .timeout = 60)
{
	struct proc_result *r = malloc(sizeof(*r));
	char *argv[] = { (char *)rearview(),
			 "run",
			 "--backend",
			 "uprobe",
			 "--functions",
			 "_start",
			 "--",
			 (char *)build_path("tests/targets/workload"),
			 "1",
			 NULL };

	cr_assert_not_null(r);
	run_process(argv, 30, r);
	cr_assert_eq(r->exit_code, 1);
	cr_assert(strstr(r->err, "cannot be probed"), "%s", r->err);
	free(r);
}

/* fib(n)'s calls as the function tracer records them: entry, the calls of
 * fib(n - 1) and fib(n - 2) when n >= 2, return. */
static void fib_records(unsigned n, uint16_t *out, size_t *count)
{
	out[(*count)++] = RV_FN_ENTER;
	if (n >= 2) {
		fib_records(n - 1, out, count);
		fib_records(n - 2, out, count);
	}
	out[(*count)++] = RV_FN_EXIT;
}

#define RECORDER_FIB   20
#define RECORDER_CALLS 21891 /* calls fib(20) makes */

/* Recorder mode (--trigger): a thread that made more records than its slot
 * holds leaves exactly the newest RV_FN_RECORDER_RECORDS of them, and the
 * overwritten ones are counted. The trigger never fires (--only fib never
 * calls window_stop), so the end of the recording is the snapshot. */
Test(functions_record, recorder_keeps_the_last_records_of_a_thread, .timeout = 120)
{
	char dir[64], capture[128], out[128], fib_n[16], expected_line[128];
	struct proc_result *r = malloc(sizeof(*r));
	uint16_t *truth = malloc(2 * RECORDER_CALLS * sizeof(*truth));
	uint16_t *got = calloc(RV_FN_RECORDER_RECORDS + 1, sizeof(*got));
	struct rv_perf_reader *reader;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	size_t nr_truth = 0, nr_got = 0;
	uint64_t last_time = 0;
	uint32_t tid = 0;
	int ret;

	cr_assert(r && truth && got);
	fib_records(RECORDER_FIB, truth, &nr_truth);
	cr_assert_eq(nr_truth, 2 * RECORDER_CALLS);
	make_test_dir(dir, sizeof(dir));
	snprintf(capture, sizeof(capture), "%s/capture", dir);
	snprintf(out, sizeof(out), "%s/recorder.fxt", dir);
	snprintf(fib_n, sizeof(fib_n), "%d", RECORDER_FIB);
	char *argv[] = { (char *)rearview(),
			 "run",
			 "-v",
			 "--backend",
			 "uprobe",
			 "--functions",
			 "fib",
			 "--trigger",
			 "window_stop",
			 "--working-directory",
			 capture,
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/fncalls"),
			 "--only",
			 "fib",
			 "--fib",
			 fib_n,
			 NULL };
	run_process(argv, 90, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert(strstr(r->err, "per-thread flight recorder in BPF maps"),
		  "-v says the recorder is used:\n%s", r->err);

	snprintf(capture, sizeof(capture), "%s/capture/perf.data", dir);
	cr_assert_eq(rv_perf_reader_open(&reader, capture, &err), 0, "%s", err.message);
	while ((ret = rv_perf_reader_next(reader, &rec, &err)) == 1) {
		struct rv_perf_sample s;
		struct rv_fn_record f;

		if (rec.header->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(rv_perf_reader_parse_sample(reader, rec.header, &s, &err), 0, "%s",
			     err.message);
		if (!s.attr || !s.attr->name || strcmp(s.attr->name, RV_FN_EVENT_NAME))
			continue;
		cr_assert_eq(s.raw_size, 52, "raw data as the kernel pads it");
		memcpy(&f, s.raw, sizeof(f));
		cr_assert_eq(f.arg, 0, "only fib is traced");
		cr_assert_eq(s.tid, f.tid, "a user probe's record is about the thread that ran");
		cr_assert(!tid || f.tid == tid, "one thread");
		tid = f.tid;
		cr_assert_eq(s.time, f.time, "the sample's time is the record's");
		cr_assert_geq(s.time, last_time, "in time order");
		last_time = s.time;
		cr_assert_lt(nr_got, RV_FN_RECORDER_RECORDS, "more records than a slot holds");
		got[nr_got++] = f.type;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	rv_perf_reader_free(reader);

	/* exactly the newest records, in the order they were made */
	cr_assert_eq(nr_got, RV_FN_RECORDER_RECORDS, "%s", r->err);
	for (size_t i = 0; i < nr_got; i++)
		cr_assert_eq(got[i], truth[nr_truth - RV_FN_RECORDER_RECORDS + i],
			     "record %zu of the last %u", i, RV_FN_RECORDER_RECORDS);
	/* and the rest counted as overwritten */
	snprintf(expected_line, sizeof(expected_line), ": %u records, %u overwritten by newer ones",
		 2 * RECORDER_CALLS, 2 * RECORDER_CALLS - RV_FN_RECORDER_RECORDS);
	cr_assert(strstr(r->err, expected_line), "no \"%s\" in:\n%s", expected_line, r->err);
	snprintf(expected_line, sizeof(expected_line),
		 "%u older records of 1 thread were overwritten",
		 2 * RECORDER_CALLS - RV_FN_RECORDER_RECORDS);
	cr_assert(strstr(r->err, expected_line), "no \"%s\" in:\n%s", expected_line, r->err);
	free(got);
	free(truth);
	free(r);
	cleanup_dir(dir);
}
