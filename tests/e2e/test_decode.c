/* test_decode.c: `rearview decode` as a user runs it, on inputs other than
 * the softpt oracle's captures (those are decoded in test_softpt.c, next to
 * perf's decoding of the same files):
 *
 * - the real-hardware raw traces of ../shared/pt-corpus: --stats gives 0
 *   errors and exactly the reference instruction counts, on one thread or
 *   several, whatever the chunk size;
 * - the real perf.data from a Skylake (perf-4.14): no crash, both buffers
 *   processed, the missing binaries whose absence cost trace named with
 *   what it cost (test_kernel_names.c: the kernel's, and why);
 * - --perf-script: perf's own text for a softpt capture gives the program's
 *   counted calls; hand-written text with syscalls, interrupts, trace gaps and
 *   errors gives the stacks they imply (issue 17's kernel entries that end
 *   where the trace resumes in user space among them, in the kernel
 *   category);
 * - captures cut at every record boundary or with bytes flipped: a clear
 *   error or a trace, never a crash (and no sanitizer report, under
 *   make check-asan);
 * - command-line mistakes: one clear line each.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/perf_data.h"
#include "fxt_reader.h"
#include "harness.h"
#include "test_files.h"

#define CORPUS "../shared/pt-corpus"

static bool corpus_available(void)
{
	if (access(CORPUS "/README.md", R_OK) == 0)
		return true;
	cr_assert(!under_ci(), CORPUS " is missing: under CI=true the corpus must be there");
	return false;
}

/* "name    N" from --stats output; UINT64_MAX when absent. */
static uint64_t stat_value(const char *out, const char *name)
{
	size_t n = strlen(name);

	for (const char *line = out; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, name, n) && line[n] == ' ')
			return strtoull(line + n, NULL, 10);
	}
	return UINT64_MAX;
}

struct raw_case {
	const char *name;
	const char *base, *end;
	uint64_t insns;
};

static const struct raw_case raw_cases[] = {
	{ "Unzip", "0x400000", "0x427000", 149576 },
	{ "foo", "0x7ffff7819000", "0x7ffff79ca000", 117967 },
	{ "mruby", "0x400000", "0x4b6000", 6334131 },
};

static void decode_raw(const struct raw_case *rc, const char *jobs, const char *chunk,
		       bool explicit_filter, struct proc_result *r)
{
	char trace[128], image[160], filter[64], out[64];
	char *argv[20];
	int n = 0;

	snprintf(trace, sizeof(trace), CORPUS "/%s/trace.pt", rc->name);
	snprintf(image, sizeof(image), CORPUS "/%s/image.bin@%s", rc->name, rc->base);
	snprintf(filter, sizeof(filter), "%s-%s", rc->base, rc->end);
	snprintf(out, sizeof(out), "/tmp/rv-raw-%d.fxt", getpid());
	argv[n++] = (char *)build_path("rearview");
	argv[n++] = "decode";
	argv[n++] = "--raw-pt";
	argv[n++] = trace;
	argv[n++] = "--image";
	argv[n++] = image;
	argv[n++] = "--stats";
	argv[n++] = "--jobs";
	argv[n++] = (char *)jobs;
	if (chunk) {
		argv[n++] = "--chunk-size";
		argv[n++] = (char *)chunk;
	}
	if (explicit_filter) {
		argv[n++] = "--addr-filter";
		argv[n++] = filter;
	}
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n] = NULL;
	run_process(argv, 300, r);
	cr_assert_eq(r->exit_code, 0, "%s: rearview decode failed (%d): %s", rc->name, r->exit_code,
		     r->err);
	cr_assert(file_exists(out), "%s: no trace written", rc->name);
	unlink(out);
}

static void check_raw(const struct raw_case *rc)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	const char *settings[][2] = { { "1", NULL }, { "2", NULL }, { "2", "4K" }, { "1", "64K" } };

	cr_assert_not_null(r);
	if (!corpus_available()) {
		free(r);
		cr_skip_test(CORPUS " is not there (it is outside the repository)");
		return;
	}
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		decode_raw(rc, settings[i][0], settings[i][1], i == 3, r);
		cr_assert_eq(stat_value(r->out, "instructions"), rc->insns,
			     "%s (--jobs %s --chunk-size %s): %" PRIu64 " instructions, the "
			     "reference is %" PRIu64 "\n%s",
			     rc->name, settings[i][0], settings[i][1] ? settings[i][1] : "default",
			     stat_value(r->out, "instructions"), rc->insns, r->out);
		cr_assert_eq(stat_value(r->out, "errors"), 0, "%s: errors\n%s", rc->name, r->out);
		cr_assert_gt(stat_value(r->out, "packets"), 0, "%s\n%s", rc->name, r->out);
		cr_assert_gt(stat_value(r->out, "calls"), 0, "%s\n%s", rc->name, r->out);
	}
	free(r);
}

Test(decode, raw_unzip, .timeout = 300)
{
	check_raw(&raw_cases[0]);
}

Test(decode, raw_foo, .timeout = 300)
{
	check_raw(&raw_cases[1]);
}

Test(decode, raw_mruby, .timeout = 300)
{
	check_raw(&raw_cases[2]);
}

/* The raw traces' spans are named by address: there are no symbols. */
Test(decode, raw_spans_named_by_address, .timeout = 120)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char err[256], out[64];

	cr_assert_not_null(r);
	if (!corpus_available()) {
		free(r);
		cr_skip_test(CORPUS " is not there (it is outside the repository)");
		return;
	}
	snprintf(out, sizeof(out), "/tmp/rv-rawnames-%d.fxt", getpid());
	char *argv[] = { (char *)build_path("rearview"),
			 "decode",
			 "--raw-pt",
			 CORPUS "/Unzip/trace.pt",
			 "--image",
			 CORPUS "/Unzip/image.bin@0x400000",
			 "-o",
			 out,
			 NULL };
	run_process(argv, 120, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(t->nr_spans, 100, "%zu spans", t->nr_spans);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const char *name = t->spans[i].name;

		cr_assert(!strncmp(name, "0x", 2) || name[0] == '[',
			  "span %zu is named '%s', not by its address", i, name);
	}
	fxt_trace_free(t);
	unlink(out);
	free(r);
}

/* ---- perf-4.14: a real capture whose binaries are not here ---- */

/* expected_bytes: the AUXTRACE buffers' sizes summed (perf report -D lists
 * them: 0x2fd0 + 0x21a00 in the file, 0x12a70 + 0x10a60 in the pipe). */
static void check_perf_4_14(const char *file, bool via_stdin, uint64_t expected_bytes)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char path[160], out[64];

	cr_assert_not_null(r);
	if (!corpus_available()) {
		free(r);
		cr_skip_test(CORPUS " is not there (it is outside the repository)");
		return;
	}
	snprintf(path, sizeof(path), CORPUS "/perf-4.14/%s", file);
	snprintf(out, sizeof(out), "/tmp/rv-4.14-%d.fxt", getpid());
	if (via_stdin) {
		char cmd[512];
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };

		snprintf(cmd, sizeof(cmd), "exec %s decode - --stats -o %s < %s",
			 build_path("rearview"), out, path);
		run_process(argv, 120, r);
	} else {
		char *argv[] = {
			(char *)build_path("rearview"), "decode", path, "--stats", "-o", out, NULL
		};
		run_process(argv, 120, r);
	}
	cr_assert_eq(r->exit_code, 0, "%s: exit %d: %s", file, r->exit_code, r->err);
	cr_assert_eq(stat_value(r->out, "trace bytes"), expected_bytes, "%s\n%s", file, r->out);
	cr_assert_gt(stat_value(r->out, "errors"), 0, "the binaries are missing: %s", r->out);
	/* ld.so's absence cost trace; libc's, never reached, cost none */
	cr_assert(strstr(r->err, "/lib64/ld-2.23.so is missing"), "%s: %s", file, r->err);
	cr_assert_null(strstr(r->err, "/lib64/libc-2.23.so is missing"), "%s: %s", file, r->err);
	cr_assert(strstr(r->err, "bytes of trace left undecoded"), "%s: %s", file, r->err);
	cr_assert(strstr(r->err, "decode on the machine that recorded"), "%s: %s", file, r->err);
	cr_assert(file_exists(out));
	unlink(out);
	free(r);
}

Test(decode, perf_4_14_file, .timeout = 120)
{
	check_perf_4_14("perf.data.intel_pt-4.14", false, 0x2fd0 + 0x21a00);
}

Test(decode, perf_4_14_pipe_on_stdin, .timeout = 120)
{
	check_perf_4_14("perf.data.piped.intel_pt-4.14", true, 0x12a70 + 0x10a60);
}

/* ---- a softpt capture, for the tests below ---- */

static void make_capture(char *dir, size_t size, const char *target, const char *arg)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char *argv[] = { (char *)build_path("softpt"), "-q",	    "-o", dir, "--",
			 (char *)build_path(target),   (char *)arg, NULL };

	cr_assert_not_null(r);
	make_test_dir(dir, size);
	run_process(argv, 240, r);
	cr_assert_eq(r->exit_code, 0, "softpt %s: %s", target, r->err);
	free(r);
}

/* The program's "count F N" lines, checked against the trace's spans. */
static size_t check_counts(const char *program_out, const struct fxt_trace *t)
{
	char *text = strdup(program_out), *save = NULL;
	size_t checked = 0;

	cr_assert_not_null(text);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char function[128];
		unsigned long expected;

		if (sscanf(line, "count %127s %lu", function, &expected) != 2)
			continue;
		cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, function), expected,
			     "%s: counted %lu, the trace has %zu", function, expected,
			     fxt_count_spans(t, FXT_ANY, FXT_ANY, function));
		checked++;
	}
	free(text);
	return checked;
}

Test(decode, perf_script_import_of_a_softpt_capture, .timeout = 300)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char dir[64], cmd[1024], out[128], err[256];
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };

	cr_assert_not_null(r);
	if (!perf_available()) {
		free(r);
		cr_skip_test("perf is not installed: no text to import");
		return;
	}
	make_capture(dir, sizeof(dir), "tests/pt/fnptr", NULL);
	snprintf(out, sizeof(out), "%s/imported.fxt", dir);
	snprintf(cmd, sizeof(cmd),
		 "perf script -i %s/perf.data --itrace=be --ns -F "
		 "pid,tid,time,flags,ip,addr,sym,symoff,dso > %s/branches.txt 2>%s/perf.err || "
		 "{ cat %s/perf.err >&2; exit 1; }; "
		 "exec %s decode --perf-script %s/branches.txt -o %s",
		 dir, dir, dir, dir, build_path("rearview"), dir, out);
	run_process(sh, 240, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);

	/* The program's own counts, from a plain run. */
	char *prog[] = { (char *)build_path("tests/pt/fnptr"), NULL };
	run_process(prog, 60, r);
	cr_assert_eq(r->exit_code, 0);
	cr_assert_gt(check_counts(r->out, t), 0, "fnptr printed no counts: %s", r->out);
	fxt_trace_free(t);
	cleanup_dir(dir);
	free(r);
}

/* Text as perf prints it for a kernel-and-user trace: a system call and an
 * interrupt in the kernel, a gap where tracing stopped, and a decode error. */
static const char kernel_text[] =
	"  100/100  1.000000100:   call                      401000 main+0x10 (/bin/prog) =>       "
	"    402000 work+0x0 (/bin/prog)\n"
	"  100/100  1.000000200:   syscall                   402010 work+0x10 (/bin/prog) => "
	"ffffffff81000000 entry_SYSCALL_64+0x0 ([kernel.kallsyms])\n"
	"  100/100  1.000000300:   call              ffffffff81000010 entry_SYSCALL_64+0x10 "
	"([kernel.kallsyms]) => ffffffff81100000 ksys_read+0x0 ([kernel.kallsyms])\n"
	"  100/100  1.000000400:   return            ffffffff81100020 ksys_read+0x20 "
	"([kernel.kallsyms]) => ffffffff81000015 entry_SYSCALL_64+0x15 ([kernel.kallsyms])\n"
	"  100/100  1.000000500:   sysret            ffffffff81000030 entry_SYSCALL_64+0x30 "
	"([kernel.kallsyms]) =>           402012 work+0x12 (/bin/prog)\n"
	"  100/100  1.000000600:   hw int                    402020 work+0x20 (/bin/prog) => "
	"ffffffff81200000 asm_common_interrupt+0x0 ([kernel.kallsyms])\n"
	"  100/100  1.000000700:   iret              ffffffff81200040 asm_common_interrupt+0x40 "
	"([kernel.kallsyms]) =>           402020 work+0x20 (/bin/prog)\n"
	"  100/100  1.000000800:   tr end                    402030 work+0x30 (/bin/prog) =>       "
	"         0 [unknown] ([unknown])\n"
	"  100/100  1.000000900:   tr strt                        0 [unknown] ([unknown]) =>       "
	"    402034 work+0x34 (/bin/prog)\n"
	" instruction trace error type 1 time 1.000001000 cpu -1 pid 100 tid 100 ip 0x402040 code "
	"6: Trace doesn't match instruction\n"
	"  100/100  1.000001100:   tr strt                        0 [unknown] ([unknown]) =>       "
	"    402050 work+0x50 (/bin/prog)\n"
	"  100/100  1.000001200:   return                    402060 work+0x60 (/bin/prog) =>       "
	"    401015 main+0x15 (/bin/prog)\n";

Test(decode, perf_script_kernel_syscalls_interrupts_gaps, .timeout = 60)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char dir[64], in[128], out[128], err[256];
	const struct fxt_span *work, *entry, *read, *irq, *child;
	FILE *f;

	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	snprintf(in, sizeof(in), "%s/branches.txt", dir);
	snprintf(out, sizeof(out), "%s/kernel.fxt", dir);
	f = fopen(in, "w");
	cr_assert_not_null(f);
	fputs(kernel_text, f);
	fclose(f);
	char *argv[] = {
		(char *)build_path("rearview"), "decode", "--perf-script", in, "-o", out, NULL
	};
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);

	/* Before the error: work nests the system call's kernel frames and the
	 * interrupt's, each on a stack of its own that ends where user code
	 * resumes. */
	work = fxt_find_span(t, 100, 100, "work", 0);
	cr_assert_not_null(work);
	entry = fxt_find_span(t, 100, 100, "entry_SYSCALL_64", 0);
	read = fxt_find_span(t, 100, 100, "ksys_read", 0);
	irq = fxt_find_span(t, 100, 100, "asm_common_interrupt", 0);
	cr_assert(entry && read && irq, "kernel frames are missing");
	cr_assert_eq(fxt_span_parent(t, entry), work, "the system call nests in work");
	cr_assert_eq(fxt_span_parent(t, read), entry);
	cr_assert_eq(fxt_span_parent(t, irq), work, "the interrupt nests in work");
	cr_assert_eq(entry->begin_ns + 300, entry->end_ns, "from the syscall to the sysret");
	/* The gap where tracing stopped is a placeholder inside work. */
	child = NULL;
	fxt_for_each_child(t, work, child) if (!strcmp(child->name, "[untraced]")) break;
	cr_assert_not_null(child, "no [untraced] span in work");
	/* The decode error is marked, and the trace resumes afresh. */
	cr_assert_eq(fxt_count_instants(t, 100, 100, NULL), 1);
	cr_assert(!strncmp(t->instants[0].name, "[decode error", 13), "%s", t->instants[0].name);
	cr_assert_eq(fxt_count_spans(t, 100, 100, "work"), 2, "work before and after the error");
	cr_assert_eq(fxt_count_spans(t, 100, 100, "[trace gap]"), 1);
	fxt_trace_free(t);
	cleanup_dir(dir);
	free(r);
}

/* issue 17: the page fault and the system call end where the trace resumes
 * in user space ("tr strt"), as children of the one main, in the kernel
 * category (FXT's, and JSON's "cat"). */
static const char resume_text[] =
	"1/1 1.000000000: 1 branches:uH: tr strt 0 [unknown] ([unknown]) => 401000 main+0x0 "
	"(a.out)\n"
	"1/1 1.000000010: 1 branches:uH: hw int 401010 main+0x10 (a.out) => ffffffff81000ab0 "
	"asm_exc_page_fault+0x0 ([kernel.kallsyms])\n"
	"1/1 1.000000100: 1 branches:uH: tr strt 0 [unknown] ([unknown]) => 401010 main+0x10 "
	"(a.out)\n"
	"1/1 1.000000130: 1 branches:uH: syscall 401030 main+0x30 (a.out) => ffffffff81000000 "
	"entry_SYSCALL_64+0x0 ([kernel.kallsyms])\n"
	"1/1 1.000000200: 1 branches:uH: tr strt 0 [unknown] ([unknown]) => 401032 main+0x32 "
	"(a.out)\n";

Test(decode, perf_script_kernel_entries_end_in_user_space, .timeout = 60)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char dir[64], in[128], out[128], json[128], err[256], *text;
	const struct fxt_span *main_fn, *fault, *entry;

	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	snprintf(in, sizeof(in), "%s/branches.txt", dir);
	snprintf(out, sizeof(out), "%s/resume.fxt", dir);
	snprintf(json, sizeof(json), "%s/resume.json", dir);
	write_file(in, resume_text, strlen(resume_text));
	char *argv[] = {
		(char *)build_path("rearview"), "decode", "--perf-script", in, "-o", out, NULL
	};
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(t->nr_spans, 3);
	cr_assert_eq(fxt_count_spans(t, 1, 1, "main"), 1, "one main, no staircase");
	main_fn = fxt_find_span(t, 1, 1, "main", 0);
	fault = fxt_find_span(t, 1, 1, "asm_exc_page_fault", 0);
	entry = fxt_find_span(t, 1, 1, "entry_SYSCALL_64", 0);
	cr_assert(main_fn && fault && entry);
	cr_assert_eq(fxt_span_parent(t, fault), main_fn);
	cr_assert_eq(fxt_span_parent(t, entry), main_fn);
	cr_assert(main_fn->begin_ns == 0 && main_fn->end_ns == 200);
	cr_assert(fault->begin_ns == 10 && fault->end_ns == 100, "fault [%llu, %llu]",
		  (unsigned long long)fault->begin_ns, (unsigned long long)fault->end_ns);
	cr_assert(entry->begin_ns == 130 && entry->end_ns == 200, "syscall [%llu, %llu]",
		  (unsigned long long)entry->begin_ns, (unsigned long long)entry->end_ns);
	cr_assert_str_eq(fault->category, "kernel");
	cr_assert_str_eq(entry->category, "kernel");
	cr_assert_str_eq(main_fn->category, "");
	fxt_trace_free(t);

	argv[5] = json;
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	text = read_whole(json, NULL);
	cr_assert_not_null(strstr(text, "\"name\":\"asm_exc_page_fault\",\"cat\":\"kernel\""), "%s",
			   text);
	cr_assert_not_null(strstr(text, "\"name\":\"entry_SYSCALL_64\",\"cat\":\"kernel\""), "%s",
			   text);
	cr_assert_null(strstr(text, "\"name\":\"main\",\"cat\""), "%s", text);
	free(text);
	cleanup_dir(dir);
	free(r);
}

/* ---- damaged captures ---- */

static void expect_no_crash(const char *capture, const char *what)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char out[160];

	cr_assert_not_null(r);
	snprintf(out, sizeof(out), "%s.fxt", capture);
	char *argv[] = { (char *)build_path("rearview"),
			 "decode",
			 (char *)capture,
			 "--jobs",
			 "2",
			 "-o",
			 out,
			 NULL };
	run_process(argv, 120, r);
	cr_assert(r->exit_code == 0 || r->exit_code == 1, "%s: exit %d: %s", what, r->exit_code,
		  r->err);
	cr_assert(!strstr(r->err, "AddressSanitizer") && !strstr(r->err, "runtime error") &&
			  !strstr(r->err, "LeakSanitizer"),
		  "%s: %s", what, r->err);
	if (r->exit_code == 1)
		cr_assert(strstr(r->err, "rearview: "), "%s: no message: %s", what, r->err);
	else
		cr_assert(file_exists(out), "%s: exit 0 without a trace", what);
	unlink(out);
	free(r);
}

Test(decode, damaged_captures, .timeout = 600)
{
	char dir[64], data[128], cut[128];
	struct rv_perf_reader *reader;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	uint64_t offsets[4096];
	size_t nr = 0, size;
	unsigned char *bytes;
	int got;

	make_capture(dir, sizeof(dir), "tests/pt/recursion", "50");
	snprintf(data, sizeof(data), "%s/perf.data", dir);
	snprintf(cut, sizeof(cut), "%s/damaged/perf.data", dir);
	{
		char sub[128];

		snprintf(sub, sizeof(sub), "%s/damaged", dir);
		cr_assert_eq(mkdir(sub, 0700), 0);
	}
	cr_assert_eq(rv_perf_reader_open(&reader, data, &err), 0, "%s", err.message);
	while ((got = rv_perf_reader_next(reader, &rec, &err)) == 1 && nr < 4096)
		offsets[nr++] = rec.file_offset;
	cr_assert_eq(got, 0, "%s", err.message);
	rv_perf_reader_free(reader);
	bytes = read_whole(data, &size);
	cr_assert_gt(nr, 5);

	/* Cut at every record boundary, and in the middle of each record. */
	for (size_t i = 0; i < nr; i++) {
		uint64_t end = i + 1 < nr ? offsets[i + 1] : size;
		char what[64];

		write_file(cut, bytes, offsets[i]);
		snprintf(what, sizeof(what), "cut at record %zu", i);
		expect_no_crash(cut, what);
		write_file(cut, bytes, offsets[i] + (end - offsets[i]) / 2);
		snprintf(what, sizeof(what), "cut inside record %zu", i);
		expect_no_crash(cut, what);
	}
	/* Random bytes flipped, in the headers and sideband and in the trace. */
	srand(12345);
	for (int round = 0; round < 60; round++) {
		unsigned char *copy = malloc(size);
		char what[64];

		cr_assert_not_null(copy);
		memcpy(copy, bytes, size);
		for (int k = 0; k < 1 + round % 8; k++) {
			size_t at = (size_t)rand() % size;

			copy[at] ^= (unsigned char)(1 + rand() % 255);
		}
		write_file(cut, copy, size);
		snprintf(what, sizeof(what), "flip round %d", round);
		expect_no_crash(cut, what);
		free(copy);
	}
	free(bytes);
	cleanup_dir(dir);
}

/* ---- command-line mistakes ---- */

static void expect_error(char *const argv[], int code, const char *says)
{
	struct proc_result *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, code, "exit %d, wanted %d: %s", r->exit_code, code, r->err);
	cr_assert_eq(count_lines(r->err), 1, "one line, got: %s", r->err);
	cr_assert(strstr(r->err, says), "'%s' does not say '%s'", r->err, says);
	free(r);
}

Test(decode, command_line_mistakes, .timeout = 120)
{
	const char *rv = build_path("rearview");
	char *nothing[] = { (char *)rv, "decode", NULL };
	char *no_image[] = { (char *)rv, "decode", "--raw-pt", "x.pt", NULL };
	char *two[] = { (char *)rv, "decode", "a.data", "--perf-script", "b.txt", NULL };
	char *bad_image[] = { (char *)rv, "decode", "--raw-pt", "x.pt", "--image", "img", NULL };
	char *bad_filter[] = { (char *)rv, "decode",	    "--raw-pt",	     "x.pt", "--image",
			       "i@0x1000", "--addr-filter", "0x2000-0x1000", NULL };
	char *bad_jobs[] = { (char *)rv, "decode", "x", "--jobs", "0", NULL };
	char *missing[] = {
		(char *)rv, "decode", "/nonexistent/perf.data", "-o", "/tmp/rv-missing.fxt", NULL
	};
	char *missing_raw[] = { (char *)rv, "decode",
				"--raw-pt", "/nonexistent.pt",
				"--image",  "/nonexistent.bin@0x400000",
				"-o",	    "/tmp/rv-missing.fxt",
				NULL };
	char *bad_cpu[] = { (char *)rv, "decode",
			    "--raw-pt", CORPUS "/Unzip/trace.pt",
			    "--image",	CORPUS "/Unzip/image.bin@0x400000",
			    "--cpu",	"six",
			    "-o",	"/tmp/rv-missing.fxt",
			    NULL };
	char *not_decode[] = { (char *)rv, "run", "--stats", "true", NULL };

	expect_error(nothing, 2, "nothing to decode");
	expect_error(no_image, 2, "--image FILE@ADDR");
	expect_error(two, 2, "give one input");
	expect_error(bad_image, 2, "invalid --image 'img'");
	expect_error(bad_filter, 2, "END must be above BEGIN");
	expect_error(bad_jobs, 2, "invalid --jobs '0'");
	expect_error(missing, 1, "/nonexistent/perf.data");
	expect_error(missing_raw, 1, "/nonexistent.pt");
	if (corpus_available())
		expect_error(bad_cpu, 1, "six");
	expect_error(not_decode, 2, "belong to 'rearview decode'");
	cr_assert(!file_exists("/tmp/rv-missing.fxt"));
}

/* A capture without Intel PT, of stack samples: decoded as samples, to the
 * trace `run` wrote of it. (A capture with nothing to decode is refused:
 * tests/unit/test_decoder.c.) */
Test(decode, capture_without_pt, .timeout = 120)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char dir[64];

	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	char *record[] = { (char *)build_path("rearview"),
			   "run",
			   "--sampling",
			   "--working-directory",
			   dir,
			   "-o",
			   "/tmp/rv-sampled.fxt",
			   "--",
			   (char *)build_path("tests/targets/workload"),
			   "20",
			   NULL };
	run_process(record, 120, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	char *decode[] = {
		(char *)build_path("rearview"), "decode", dir, "-o", "/tmp/rv-nopt.fxt", NULL
	};
	run_process(decode, 120, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
	cr_assert(strstr(r->err, " samples"), "a sampling summary: %s", r->err);
	cr_assert(files_equal("/tmp/rv-sampled.fxt", "/tmp/rv-nopt.fxt"),
		  "decode writes the trace run wrote of the capture");
	unlink("/tmp/rv-sampled.fxt");
	unlink("/tmp/rv-nopt.fxt");
	cleanup_dir(dir);
	free(r);
}
