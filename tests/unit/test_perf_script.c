/* test_perf_script.c: the import of `perf script` branch text
 * (decode/perf_script.h). Every flags form perf 6.1 prints, from literal
 * lines with each field checked; trace errors; the lines that are skipped;
 * malformed lines, each rejected with its line number; every truncation of
 * two real outputs (tests/data/perf_script, cut from perf's decoding of
 * softpt captures); and whole captures made at test time by softpt and
 * decoded by perf, whose calls per thread must be those softpt saw.
 *
 * One text goes on through the trace builder: issue 17's kernel entries
 * that the trace leaves by resuming in user space.
 *
 * Not here: the rest of what the branches mean for call stacks
 * (test_builder_branch.c), or the speed of the import (measured outside the
 * tests).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder_fixture.h"
#include "decode/perf_script.h"
#include "test_env.h"
#include "test_files.h"

#define MAX_EVENTS  4096
#define MAX_THREADS 16
#define DSO	    "/src/rearview/build/tests/pt/signals"

/* ---- Importing text ---- */

struct import {
	struct rv_perf_script *p;
	FILE *f;
	struct rv_error err;
};

static FILE *text_file(const char *text, size_t len)
{
	FILE *f = tmpfile();

	cr_assert_not_null(f, "tmpfile: %s", strerror(errno));
	cr_assert_eq(fwrite(text, 1, len, f), len);
	rewind(f);
	return f;
}

static void import_open(struct import *im, const char *text, size_t len, const char *name)
{
	memset(im, 0, sizeof(*im));
	im->f = text_file(text, len);
	cr_assert_eq(rv_perf_script_open(&im->p, im->f, name, &im->err), 0, "%s", im->err.message);
}

static void import_close(struct import *im)
{
	rv_perf_script_free(im->p);
	fclose(im->f);
}

/* The one event of a text holding one line (and maybe skipped ones). */
static struct rv_event one_event(struct import *im, const char *text)
{
	struct rv_event ev, after;
	int ret;

	import_open(im, text, strlen(text), "one.txt");
	ret = rv_perf_script_next(im->p, &ev, &im->err);
	cr_assert_eq(ret, 1, "\"%s\" gives %d: %s", text, ret, im->err.message);
	ret = rv_perf_script_next(im->p, &after, &im->err);
	cr_assert_eq(ret, 0, "\"%s\": %d after the event: %s", text, ret, im->err.message);
	return ev;
}

static void assert_end(const struct rv_branch_end *e, uint64_t ip, const char *sym,
		       uint64_t sym_start, const char *dso, const char *line)
{
	cr_assert_eq(e->ip, ip, "ip %#" PRIx64 ", not %#" PRIx64 ": %s", e->ip, ip, line);
	if (sym) {
		cr_assert_not_null(e->sym, "no symbol, not %s: %s", sym, line);
		cr_assert_str_eq(e->sym, sym, "%s", line);
	} else {
		cr_assert_null(e->sym, "symbol %s: %s", e->sym, line);
	}
	cr_assert_eq(e->sym_start, sym_start, "sym_start %#" PRIx64 ", not %#" PRIx64 ": %s",
		     e->sym_start, sym_start, line);
	if (dso) {
		cr_assert_not_null(e->dso, "no DSO, not %s: %s", dso, line);
		cr_assert_str_eq(e->dso, dso, "%s", line);
	} else {
		cr_assert_null(e->dso, "DSO %s: %s", e->dso, line);
	}
}

/* ---- Flags ---- */

struct flags_case {
	const char *text; /* as perf 6.1 prints it, before the 21-column padding */
	enum rv_branch_kind kind;
	uint32_t flags;
};

static const struct flags_case flags_cases[] = {
	{ "call", RV_BRANCH_CALL, 0 },
	{ "return", RV_BRANCH_RETURN, 0 },
	{ "jmp", RV_BRANCH_JUMP, 0 },
	{ "jcc", RV_BRANCH_COND, 0 },
	{ "syscall", RV_BRANCH_SYSCALL, 0 },
	{ "sysret", RV_BRANCH_SYSRET, 0 },
	{ "hw int", RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC },
	{ "int", RV_BRANCH_SOFT_INT, 0 },
	{ "iret", RV_BRANCH_IRET, 0 },
	{ "tx abrt", RV_BRANCH_TX_ABORT, 0 },
	{ "async", RV_BRANCH_NONE, RV_BRANCH_ASYNC },
	{ "tr strt", RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN },
	{ "tr end", RV_BRANCH_NONE, RV_BRANCH_TRACE_END },
	{ "tr strt tr end", RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN | RV_BRANCH_TRACE_END },
	{ "tr end  async", RV_BRANCH_NONE, RV_BRANCH_TRACE_END | RV_BRANCH_ASYNC },
	{ "tr end  call", RV_BRANCH_CALL, RV_BRANCH_TRACE_END },
	{ "tr end  return", RV_BRANCH_RETURN, RV_BRANCH_TRACE_END },
	{ "tr end  syscall", RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END },
	{ "tr end  sysret", RV_BRANCH_SYSRET, RV_BRANCH_TRACE_END },
	{ "tr end  iret", RV_BRANCH_IRET, RV_BRANCH_TRACE_END },
	{ "tr end  jmp", RV_BRANCH_JUMP, RV_BRANCH_TRACE_END },
	{ "tr end  hw int", RV_BRANCH_INTERRUPT, RV_BRANCH_TRACE_END | RV_BRANCH_ASYNC },
	{ "tr strt jmp", RV_BRANCH_JUMP, RV_BRANCH_TRACE_BEGIN },
	{ "tr strt call", RV_BRANCH_CALL, RV_BRANCH_TRACE_BEGIN },
	/* "%-15s%6s" with the in-transaction marker */
	{ "call              (x)", RV_BRANCH_CALL, RV_BRANCH_IN_TX },
	{ "jcc               (x)", RV_BRANCH_COND, RV_BRANCH_IN_TX },
	{ "tx abrt           (x)", RV_BRANCH_TX_ABORT, RV_BRANCH_IN_TX },
	{ "return           (xD)", RV_BRANCH_RETURN, RV_BRANCH_IN_TX },
	{ "hw int            (D)", RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC },
	{ "tr end  jmp       (x)", RV_BRANCH_JUMP, RV_BRANCH_TRACE_END | RV_BRANCH_IN_TX },
	{ "tr strt jmp (x)", RV_BRANCH_JUMP, RV_BRANCH_TRACE_BEGIN | RV_BRANCH_IN_TX },
	{ "call(x)", RV_BRANCH_CALL, RV_BRANCH_IN_TX },
};

Test(perf_script, every_flags_form)
{
	for (size_t i = 0; i < sizeof(flags_cases) / sizeof(flags_cases[0]); i++) {
		const struct flags_case *fc = &flags_cases[i];
		struct import im;
		struct rv_event ev;
		char line[512];

		snprintf(line, sizeof(line),
			 "28371/28372 13477.213769447:   %-21s %16s %s (%s) => %16s %s (%s)\n",
			 fc->text, "401815", "main+0x1f5", DSO, "408b60", "raise+0x0", DSO);
		ev = one_event(&im, line);
		cr_assert_eq(ev.kind, RV_EVENT_BRANCH, "%s", line);
		cr_assert_eq(ev.branch.kind, fc->kind, "\"%s\": kind %d, not %d", fc->text,
			     ev.branch.kind, fc->kind);
		cr_assert_eq(ev.branch.flags, fc->flags, "\"%s\": flags %#x, not %#x", fc->text,
			     ev.branch.flags, fc->flags);
		cr_assert_eq(ev.pid, 28371);
		cr_assert_eq(ev.tid, 28372);
		cr_assert_eq(ev.time, 13477213769447ull);
		assert_end(&ev.branch.from, 0x401815, "main", 0x401815 - 0x1f5, DSO, line);
		assert_end(&ev.branch.to, 0x408b60, "raise", 0x408b60, DSO, line);
		import_close(&im);
	}
}

/* ---- Branch lines as perf prints them ---- */

Test(perf_script, call_line_from_perf)
{
	static const char line[] =
		"28371/28371 13477.213710730:   call                             408b6d "
		"raise+0xd (/src/rearview/build/tests/pt/signals) =>           418710 "
		"__pthread_kill+0x0 (/src/rearview/build/tests/pt/signals)\n";
	struct import im;
	struct rv_event ev = one_event(&im, line);

	cr_assert_eq(ev.kind, RV_EVENT_BRANCH);
	cr_assert_eq(ev.pid, 28371);
	cr_assert_eq(ev.tid, 28371);
	cr_assert_eq(ev.time, 13477213710730ull);
	cr_assert_eq(ev.branch.kind, RV_BRANCH_CALL);
	cr_assert_eq(ev.branch.flags, 0);
	assert_end(&ev.branch.from, 0x408b6d, "raise", 0x408b60, DSO, line);
	assert_end(&ev.branch.to, 0x418710, "__pthread_kill", 0x418710, DSO, line);
	import_close(&im);
}

Test(perf_script, trace_begin_from_unknown)
{
	static const char line[] = "28371/28371 13477.213769448:   tr strt                        "
				   "       0 [unknown] ([unknown]) =>           401a00 on_usr1+0x0 "
				   "(/src/rearview/build/tests/pt/signals)\n";
	struct import im;
	struct rv_event ev = one_event(&im, line);

	cr_assert_eq(ev.branch.kind, RV_BRANCH_NONE);
	cr_assert_eq(ev.branch.flags, RV_BRANCH_TRACE_BEGIN);
	assert_end(&ev.branch.from, 0, "[unknown]", 0, NULL, line);
	assert_end(&ev.branch.to, 0x401a00, "on_usr1", 0x401a00, DSO, line);
	import_close(&im);
}

Test(perf_script, trace_end_async_to_unknown)
{
	static const char line[] =
		"28371/28371 13477.213769447:   tr end  async                    4186bb "
		"__pthread_kill_implementation.constprop.0+0x10b "
		"(/src/rearview/build/tests/pt/signals) =>                0 [unknown] "
		"([unknown])\n";
	struct import im;
	struct rv_event ev = one_event(&im, line);

	cr_assert_eq(ev.branch.kind, RV_BRANCH_NONE);
	cr_assert_eq(ev.branch.flags, RV_BRANCH_TRACE_END | RV_BRANCH_ASYNC);
	assert_end(&ev.branch.from, 0x4186bb, "__pthread_kill_implementation.constprop.0",
		   0x4186bb - 0x10b, DSO, line);
	assert_end(&ev.branch.to, 0, "[unknown]", 0, NULL, line);
	import_close(&im);
}

/* "[unknown]" at a known address: the symbol starts, as far as we know, there. */
Test(perf_script, unknown_symbol_at_an_address)
{
	static const char line[] = "7/8 1.000000001:   jmp  7f0000001234 [unknown] (/tmp/jit.so) "
				   "=>  7f0000002000 [unknown] ([unknown])\n";
	struct import im;
	struct rv_event ev = one_event(&im, line);

	assert_end(&ev.branch.from, 0x7f0000001234, "[unknown]", 0x7f0000001234, "/tmp/jit.so",
		   line);
	assert_end(&ev.branch.to, 0x7f0000002000, "[unknown]", 0x7f0000002000, NULL, line);
	import_close(&im);
}

Test(perf_script, without_dso_offset_or_symbol)
{
	struct import im;
	struct rv_event ev;
	const char *line;

	line = "1/2 3.000004:   call  401000 main+0x10 =>  401100 work+0x0\n";
	ev = one_event(&im, line);
	assert_end(&ev.branch.from, 0x401000, "main", 0x400ff0, NULL, line);
	assert_end(&ev.branch.to, 0x401100, "work", 0x401100, NULL, line);
	import_close(&im);

	/* -F without symoff: the start is not known (0), the name is */
	line = "1/2 3.000004:   call  401000 main (/bin/x) =>  401100 work (/bin/x)\n";
	ev = one_event(&im, line);
	assert_end(&ev.branch.from, 0x401000, "main", 0, "/bin/x", line);
	assert_end(&ev.branch.to, 0x401100, "work", 0, "/bin/x", line);
	import_close(&im);

	/* -F without sym and dso */
	line = "1/2 3.000004:   return  401000 =>  401100\n";
	ev = one_event(&im, line);
	cr_assert_eq(ev.branch.kind, RV_BRANCH_RETURN);
	assert_end(&ev.branch.from, 0x401000, NULL, 0, NULL, line);
	assert_end(&ev.branch.to, 0x401100, NULL, 0, NULL, line);
	import_close(&im);
}

/* Demangled C++ names hold spaces and parentheses; a DSO may end in
 * " (deleted)". */
Test(perf_script, symbols_with_spaces_and_parentheses)
{
	static const char line[] =
		"100/101 5.000000000:   call   7f00000010a0 std::vector<int, std::allocator<int> "
		">::push_back(int const&)+0x12 (/usr/lib/libx.so (deleted)) =>     7f0000002000 "
		"(anonymous namespace)::visit(Node*) const+0x0 (/usr/lib/liby.so)\n";
	struct import im;
	struct rv_event ev = one_event(&im, line);

	assert_end(&ev.branch.from, 0x7f00000010a0,
		   "std::vector<int, std::allocator<int> >::push_back(int const&)",
		   0x7f00000010a0 - 0x12, "/usr/lib/libx.so (deleted)", line);
	assert_end(&ev.branch.to, 0x7f0000002000, "(anonymous namespace)::visit(Node*) const",
		   0x7f0000002000, "/usr/lib/liby.so", line);
	import_close(&im);

	/* without a DSO field, a symbol's own parentheses are not one */
	ev = one_event(&im, "1/1 1.5:   call  401000 f(int)+0x4 =>  402000 "
			    "(anonymous namespace)::g()\n");
	assert_end(&ev.branch.from, 0x401000, "f(int)", 0x400ffc, NULL, "f(int)");
	assert_end(&ev.branch.to, 0x402000, "(anonymous namespace)::g()", 0, NULL, "g()");
	import_close(&im);
}

Test(perf_script, times_with_and_without_ns)
{
	struct import im;
	struct rv_event ev;

	ev = one_event(&im, "1/1 13479.504207:   jcc  401000 f+0x0 (/x) =>  401010 f+0x10 (/x)\n");
	cr_assert_eq(ev.time, 13479504207000ull);
	import_close(&im);
	ev = one_event(&im, "1/1 13479.504207749:   jcc  401000 f+0x0 (/x) =>  401010 f+0x10 "
			    "(/x)\n");
	cr_assert_eq(ev.time, 13479504207749ull);
	import_close(&im);
	ev = one_event(&im, "1/1     0.000000001:   jcc  401000 f+0x0 (/x) =>  401010 f+0x10 "
			    "(/x)\r\n");
	cr_assert_eq(ev.time, 1);
	assert_end(&ev.branch.to, 0x401010, "f", 0x401000, "/x", "CRLF");
	import_close(&im);
}

/* magic-trace's -F ...,synth,dso,event,period (period then event, as perf
 * prints them), the other order, and a cpu field. */
Test(perf_script, magic_trace_fields)
{
	static const char *const lines[] = {
		"28407/28407 13479.503601244:          1  branches:u:   call                     "
		"        40150b _start+0x1b (/bin/r) =>           402880 "
		"__libc_start_main_impl+0x0 (/bin/r)\n",
		"28407/28407 13479.503601244:  branches:u:          1   call  40150b _start+0x1b "
		"(/bin/r) =>  402880 __libc_start_main_impl+0x0 (/bin/r)\n",
		"28407/28407 [003] 13479.503601244:  branches:   call  40150b _start+0x1b (/bin/r) "
		"=>  402880 __libc_start_main_impl+0x0 (/bin/r)\n",
		"28407/28407 13479.503601244:       branches:uk:   call  40150b _start+0x1b "
		"(/bin/r) =>  402880 __libc_start_main_impl+0x0 (/bin/r)\n",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct import im;
		struct rv_event ev = one_event(&im, lines[i]);

		cr_assert_eq(ev.kind, RV_EVENT_BRANCH, "%s", lines[i]);
		cr_assert_eq(ev.branch.kind, RV_BRANCH_CALL, "%s", lines[i]);
		cr_assert_eq(ev.tid, 28407);
		cr_assert_eq(ev.time, 13479503601244ull);
		assert_end(&ev.branch.from, 0x40150b, "_start", 0x4014f0, "/bin/r", lines[i]);
		assert_end(&ev.branch.to, 0x402880, "__libc_start_main_impl", 0x402880, "/bin/r",
			   lines[i]);
		import_close(&im);
	}
}

/* One pooled copy per name, valid until the importer is freed. */
Test(perf_script, names_are_interned_and_stay_valid)
{
	size_t size = 4096 * 128, used = 0;
	char *text = malloc(size);
	struct import im;
	struct rv_event first, ev;
	int ret;

	cr_assert_not_null(text);
	for (int i = 0; i < 4096; i++)
		used += (size_t)snprintf(text + used, size - used,
					 "9/9 1.%06d:   call  %x caller+0x4 (/bin/a) =>  %x "
					 "callee_%d+0x0 (/lib/b%d.so)\n",
					 i, 0x1004 + i * 16, 0x900000 + i * 64, i, i % 7);
	import_open(&im, text, used, "many.txt");
	free(text);
	cr_assert_eq(rv_perf_script_next(im.p, &first, &im.err), 1, "%s", im.err.message);
	for (int i = 1; i < 4096; i++) {
		cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
		cr_assert_eq(ev.branch.from.sym, first.branch.from.sym, "one copy of \"caller\"");
		cr_assert_eq(ev.branch.from.dso, first.branch.from.dso, "one copy of \"/bin/a\"");
		cr_assert_eq(ev.branch.from.sym_start, 0x1000 + (uint64_t)i * 16);
		if (i % 7 == 0)
			cr_assert_eq(ev.branch.to.dso, first.branch.to.dso, "one copy of b0.so");
	}
	ret = rv_perf_script_next(im.p, &ev, &im.err);
	cr_assert_eq(ret, 0);
	/* 4096 more names later, the first line's are intact */
	cr_assert_str_eq(first.branch.to.sym, "callee_0");
	cr_assert_str_eq(first.branch.to.dso, "/lib/b0.so");
	cr_assert_str_eq(ev.branch.to.sym, "callee_4095");
	import_close(&im);
}

/* A line longer than the read block. */
Test(perf_script, long_symbol)
{
	size_t name_len = 3 << 20, size = name_len + 256;
	char *text = malloc(size);
	struct import im;
	struct rv_event ev;
	int n;

	cr_assert_not_null(text);
	n = snprintf(text, size, "1/1 1.0:   call  401000 main+0x0 (/x) =>  402000 ");
	memset(text + n, 'z', name_len);
	n += (int)name_len;
	n += snprintf(text + n, size - (size_t)n, "+0x0 (/x)\n");
	import_open(&im, text, (size_t)n, "long.txt");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
	cr_assert_eq(strlen(ev.branch.to.sym), name_len);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	import_close(&im);
	free(text);
}

/* ---- Trace errors ---- */

Test(perf_script, overflow_error_from_perf)
{
	static const char line[] = " instruction trace error type 1 time 13479.504207749 cpu -1 "
				   "pid 28407 tid 28407 ip 0x4016d7 code 7: Overflow packet\n";
	struct import im;
	struct rv_event ev = one_event(&im, line);

	cr_assert_eq(ev.kind, RV_EVENT_TRACE_ERROR);
	cr_assert_eq(ev.pid, 28407);
	cr_assert_eq(ev.tid, 28407);
	cr_assert_eq(ev.time, 13479504207749ull);
	cr_assert_eq(ev.error.ip, 0x4016d7);
	cr_assert_eq(ev.error.offset, UINT64_MAX);
	cr_assert(ev.error.overflow);
	cr_assert_str_eq(ev.error.message, "Overflow packet");
	import_close(&im);
}

Test(perf_script, other_errors)
{
	struct import im;
	struct rv_event ev;

	ev = one_event(&im, " instruction trace error type 1 time 2.000000100 cpu 3 pid 10 tid 11 "
			    "ip 0x7f0012345678 code 6: Trace doesn't match instruction\n");
	cr_assert_eq(ev.kind, RV_EVENT_TRACE_ERROR);
	cr_assert_eq(ev.pid, 10);
	cr_assert_eq(ev.tid, 11);
	cr_assert_eq(ev.time, 2000000100ull);
	cr_assert_eq(ev.error.ip, 0x7f0012345678);
	cr_assert_not(ev.error.overflow);
	cr_assert_str_eq(ev.error.message, "Trace doesn't match instruction");
	import_close(&im);

	/* no time, no ip, unknown thread */
	ev = one_event(&im, " instruction trace error type 1 time 0 cpu -1 pid -1 tid -1 ip 0 "
			    "code 1: Lost trace data\n");
	cr_assert_eq(ev.kind, RV_EVENT_TRACE_ERROR);
	cr_assert_eq(ev.time, 0);
	cr_assert_eq(ev.pid, UINT32_MAX);
	cr_assert_eq(ev.tid, UINT32_MAX);
	cr_assert_eq(ev.error.ip, 0);
	cr_assert_str_eq(ev.error.message, "Lost trace data");
	import_close(&im);

	/* a guest's error (perf 5.19+) */
	ev = one_event(&im,
		       " instruction trace error type 1 time 5.5 machine_pid 4242 vcpu 1 cpu 0 "
		       "pid 5 tid 6 ip 0xffffffff81000000 code 7: Overflow packet (foo)\n");
	cr_assert_eq(ev.time, 5500000000ull);
	cr_assert_eq(ev.tid, 6);
	cr_assert_eq(ev.error.ip, 0xffffffff81000000ull);
	cr_assert(ev.error.overflow);
	cr_assert_str_eq(ev.error.message, "Overflow packet (foo)");
	import_close(&im);

	ev = one_event(&im, " unknown AUX error type 9 time 1.000000000 cpu 0 pid 1 tid 1 ip 0x10 "
			    "code 3:\n");
	cr_assert_eq(ev.kind, RV_EVENT_TRACE_ERROR);
	cr_assert_str_eq(ev.error.message, "");
	import_close(&im);
}

/* ---- Skipped lines ---- */

Test(perf_script, skipped_lines)
{
	static const char text[] =
		/* --itrace=bep with the event, period and synth fields */
		"28407/28407 13479.503601244:          1         psb:                          psb "
		"offs: 0                                     0                0 [unknown] "
		"([unknown])\n"
		"28407/28407 13479.503601244:          1         cbr:                          "
		"cbr: "
		"24 freq: 2096 MHz (100%)                   0                0 [unknown] "
		"([unknown])\n"
		/* the same without event and period, with and without synth */
		"28407/28407 13479.503601244:                                        0             "
		"   0 [unknown] ([unknown])\n"
		"28407/28407 13479.503601:                          cbr: 24 freq: 2096 MHz (100%)  "
		" "
		"                0                0 [unknown] ([unknown])\n"
		/* a sample of another event, then its call chain */
		"28407/28407 13479.503601244:          1  instructions:u:   jcc   401000 main+0x0 "
		"(/bin/x)\n"
		"\t          401000 main+0x0 (/bin/x)\n"
		"\t          402000 __libc_start_main+0x80 (/lib/libc.so.6)\n"
		"\n"
		"   \n"
		"28407/28407 13479.503601244:          1  branches:u:   call   401000 main+0x0 "
		"(/bin/x) =>  401100 f+0x0 (/bin/x)\n";
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;

	import_open(&im, text, strlen(text), "skipped.txt");
	/* cbr with its event field, cbr without: power events, instants */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
		cr_assert_eq(ev.kind, RV_EVENT_EXTRA);
		cr_assert_str_eq(ev.extra.name, "cbr");
		cr_assert_eq(ev.extra.ip, 0, "a payload has no ip");
		cr_assert_eq(ev.tid, 28407);
	}
	/* the instructions sample: an instant at its ip, its chain skipped */
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
	cr_assert_eq(ev.kind, RV_EVENT_EXTRA);
	cr_assert_str_eq(ev.extra.name, "instructions:u");
	cr_assert_eq(ev.extra.ip, 0x401000);
	cr_assert_eq(ev.extra.count, 1);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
	cr_assert_eq(ev.kind, RV_EVENT_BRANCH);
	cr_assert_eq(ev.branch.kind, RV_BRANCH_CALL);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_eq(stats.lines, 10);
	cr_assert_eq(stats.not_drawn, 2, "psb, and the synthesized line without its name");
	cr_assert_eq(stats.nr_not_drawn_names, 2);
	cr_assert_str_eq(stats.not_drawn_names[0], "psb");
	cr_assert_eq(stats.skipped, 4, "two frames, a blank line, spaces");
	cr_assert_eq(stats.extra, 3);
	cr_assert_eq(stats.branches, 1);
	cr_assert_eq(stats.errors, 0);
	cr_assert_eq(stats.bad, 0);
	import_close(&im);
}

/* ---- Malformed lines ---- */

static const char good_line[] = "1/1 1.000000000:   call  401000 main+0x0 (/x) =>  401100 f+0x0 "
				"(/x)\n";

static const char *const malformed[] = {
	"garbage",
	"28407/ 13479.504207749:   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"99999999999/1 13479.504207749:   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"-2/1 13479.504207749:   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 [x] 13479.504207749:   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479:   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.5042077491:   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 99999999999999999999.5:   call  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   cal  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   branches:u: 401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   vmentry  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   call (q)  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   call (x  401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   call  zz401000 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   call  11111111111111111 main+0x0 (/x) =>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   call  401000 main+0x0 (/x)",
	"1/1 13479.504207749:   call  401000 main+0x0 (/x) =>",
	"1/1 13479.504207749:   call  401000 main+0x0 (/x) =>  g401100 f+0x0 (/x)",
	"1/1 13479.504207749:   call  401000 main+0x0 (/x) =>>  401100 f+0x0 (/x)",
	"1/1 13479.504207749:   call  401000 main+0x11111111111111111 (/x) =>  401100 f (/x)",
	"1/1 13479.504207749:   call",
	"1/1 13479.504207749:",
	"1/1",
	" instruction trace error",
	" instruction trace error type x time 1.5 cpu 0 pid 1 tid 1 ip 0x1 code 7: Overflow",
	" instruction trace error type 1 time x cpu 0 pid 1 tid 1 ip 0x1 code 7: Overflow",
	" instruction trace error type 1 time 1.5 pid 1 tid 1 ip 0x1 code 7: Overflow",
	" instruction trace error type 1 time 1.5 cpu 0 pid 1 ip 0x1 code 7: Overflow",
	" instruction trace error type 1 time 1.5 cpu 0 pid 1 tid 1 ip 0x1: Overflow",
	" instruction trace error type 1 time 1.5 cpu 0 pid 1 tid 1 ip 0x1 code 7 Overflow",
	" instruction trace error type 1 time 1.5 machine_pid cpu 0 pid 1 tid 1 ip 0x1 code 7: O",
	"Warning:",
	/* long: the message quotes 80 characters of it */
	"1/1 13479.504207749:   call  401000 a_rather_long_function_name_that_goes_on_and_on+0x0 "
	"(/x)",
};

Test(perf_script, malformed_lines_are_skipped_counted_and_noted)
{
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		char text[1024];
		struct import im;
		struct rv_event ev;
		struct rv_perf_script_stats stats;

		snprintf(text, sizeof(text), "%s\t    401000 main+0x0 (/x)\n%s\n%s", good_line,
			 malformed[i], good_line);
		import_open(&im, text, strlen(text), "bad.txt");
		cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
		/* the bad line is passed over: the import goes on after it */
		cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "\"%s\": %s", malformed[i],
			     im.err.message);
		cr_assert_eq(ev.kind, RV_EVENT_BRANCH);
		cr_assert_eq(ev.branch.kind, RV_BRANCH_CALL);
		cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
		rv_perf_script_stats(im.p, &stats);
		cr_assert_eq(stats.bad, 1, "\"%s\" is accepted", malformed[i]);
		cr_assert_eq(stats.bad_at[0].line, 3);
		cr_assert_not_null(stats.bad_at[0].expected);
		cr_assert_gt(strlen(stats.bad_at[0].expected), 5);
		cr_assert_eq(stats.lines, 4);
		cr_assert_eq(stats.branches, 2);
		cr_assert_eq(stats.skipped, 1);
		cr_assert_not(stats.cut);
		import_close(&im);
	}
}

/* Bytes that are not text are quoted as '?', and NUL ends nothing. */
Test(perf_script, binary_bytes)
{
	static const char text[] = "1/1 1.0:   call  401000 ma\0in+0x0 (/x) =>  401100 f+0x0 "
				   "(/x)\n\x01\x02\xff\n";
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;

	import_open(&im, text, sizeof(text) - 1, "bin.txt");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
	cr_assert_eq(memcmp(ev.branch.from.sym, "ma\0in", 6), 0);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_eq(stats.bad, 1);
	cr_assert_eq(stats.bad_at[0].line, 2);
	import_close(&im);
}

Test(perf_script, read_error_ends_the_import)
{
	FILE *f = fopen("/dev/null", "w"); /* reading it fails */
	struct rv_perf_script *p;
	struct rv_error err = { 0 };
	struct rv_event ev;

	cr_assert_not_null(f);
	cr_assert_eq(rv_perf_script_open(&p, f, "out.txt", &err), 0);
	cr_assert_eq(rv_perf_script_next(p, &ev, &err), -EIO);
	cr_assert(strstr(err.message, "cannot read out.txt"), "%s", err.message);
	rv_error_clear(&err);
	cr_assert_eq(rv_perf_script_next(p, &ev, &err), -EIO, "the error stays");
	cr_assert(strstr(err.message, "cannot read out.txt"), "%s", err.message);
	rv_perf_script_free(p);
	fclose(f);
}

Test(perf_script, line_over_16_mib_ends_the_import)
{
	size_t len = (17u << 20);
	char *text = malloc(len);
	struct import im;
	struct rv_event ev;

	cr_assert_not_null(text);
	memset(text, 'a', len);
	memcpy(text, good_line, strlen(good_line));
	import_open(&im, text, len, "huge.txt");
	free(text);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), -EINVAL);
	cr_assert(strstr(im.err.message, "huge.txt:2: line longer than 16 MiB"), "%s",
		  im.err.message);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), -EINVAL);
	import_close(&im);
}

/* ---- Real outputs, whole and cut at every byte ---- */

/* ROOT/rel (test_env.h's project root). */
static void project_path(const char *rel, char *path, size_t size)
{
	char root[PATH_MAX];
	int n;

	project_root(root, sizeof(root));
	n = snprintf(path, size, "%s/%s", root, rel);
	cr_assert(n > 0 && (size_t)n < size, "path too long: %s/%s", root, rel);
}

struct tally {
	size_t branches, errors, overflows, extra, calls;
	struct rv_perf_script_stats stats;
};

/* Imports text[0..len) to the end, counting what it gives. */
static void tally_text(const char *text, size_t len, const char *name, struct tally *t)
{
	struct import im;
	struct rv_event ev;
	int ret;

	memset(t, 0, sizeof(*t));
	import_open(&im, text, len, name);
	for (size_t guard = 0; (ret = rv_perf_script_next(im.p, &ev, &im.err)) != 0; guard++) {
		cr_assert_lt(guard, len + 2, "the import does not end");
		cr_assert_gt(ret, 0, "%s", im.err.message);
		if (ev.kind == RV_EVENT_EXTRA) {
			t->extra++;
			cr_assert_not_null(ev.extra.name);
		} else if (ev.kind == RV_EVENT_TRACE_ERROR) {
			t->errors++;
			t->overflows += ev.error.overflow;
			cr_assert_not_null(ev.error.message);
		} else {
			cr_assert_eq(ev.kind, RV_EVENT_BRANCH);
			t->branches++;
			t->calls += ev.branch.kind == RV_BRANCH_CALL;
			/* names are never empty (and ASan checks their bytes) */
			cr_assert(!ev.branch.from.sym || strlen(ev.branch.from.sym) > 0);
			cr_assert(!ev.branch.to.sym || strlen(ev.branch.to.sym) > 0);
			cr_assert(!ev.branch.from.dso || strlen(ev.branch.from.dso) > 0);
			cr_assert(!ev.branch.to.dso || strlen(ev.branch.to.dso) > 0);
		}
	}
	rv_perf_script_stats(im.p, &t->stats);
	import_close(&im);
}

static void check_every_truncation(const char *file, size_t branches, size_t errors, size_t extra,
				   size_t not_drawn)
{
	char path[PATH_MAX];
	size_t len, lines = 0;
	char *text;
	struct tally whole;

	project_path(file, path, sizeof(path));
	text = read_whole(path, &len);
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	tally_text(text, len, file, &whole);
	cr_assert_eq(whole.stats.bad, 0, "%s has lines the import cannot read", file);
	cr_assert_not(whole.stats.cut);
	cr_assert_eq(whole.stats.lines, lines);
	cr_assert_eq(whole.branches, branches, "%s: %zu branches", file, whole.branches);
	cr_assert_eq(whole.errors, errors, "%s: %zu errors", file, whole.errors);
	cr_assert_eq(whole.extra, extra, "%s: %zu other events", file, whole.extra);
	cr_assert_eq(whole.stats.not_drawn, not_drawn, "%s: %" PRIu64 " not drawn", file,
		     whole.stats.not_drawn);

	for (size_t cut = 0; cut < len; cut++) {
		struct tally t;

		tally_text(text, cut, file, &t);
		cr_assert_leq(t.branches + t.errors + t.extra,
			      whole.branches + whole.errors + whole.extra);
		/* a cut line is counted as cut, never as a bad line */
		cr_assert_eq(t.stats.bad, 0, "%s cut at %zu: %" PRIu64 " bad lines", file, cut,
			     t.stats.bad);
		/* cut at a line's end: every line whole, none cut */
		if (cut == 0 || text[cut - 1] == '\n')
			cr_assert_not(t.stats.cut, "%s cut after a line (byte %zu) is cut", file,
				      cut);
		else if (t.stats.cut)
			cr_assert_eq(t.stats.cut_line, t.stats.lines, "the cut line is the last");
	}
	free(text);
}

Test(perf_script, signals_output_cut_at_every_byte, .timeout = 300)
{
	check_every_truncation("tests/data/perf_script/signals-ns.txt", 28, 0, 0, 0);
}

Test(perf_script, magic_trace_output_cut_at_every_byte, .timeout = 300)
{
	check_every_truncation("tests/data/perf_script/overflow-magic-trace.txt", 18, 1, 1, 1);
}

Test(perf_script, real_output_values)
{
	char path[PATH_MAX];
	size_t len;
	char *text;
	struct import im;
	struct rv_event ev;
	int ret;
	size_t n = 0;

	project_path("tests/data/perf_script/overflow-magic-trace.txt", path, sizeof(path));
	text = read_whole(path, &len);
	import_open(&im, text, len, "overflow-magic-trace.txt");
	free(text);
	while ((ret = rv_perf_script_next(im.p, &ev, &im.err)) == 1) {
		if (ev.kind == RV_EVENT_EXTRA) { /* line 2: cbr */
			cr_assert_str_eq(ev.extra.name, "cbr");
			continue;
		}
		n++;
		if (n == 1) { /* line 3: tr strt into _start */
			cr_assert_eq(ev.branch.flags, RV_BRANCH_TRACE_BEGIN);
			cr_assert_eq(ev.branch.to.ip, 0x4014f0);
			cr_assert_str_eq(ev.branch.to.sym, "_start");
		}
		if (ev.kind == RV_EVENT_TRACE_ERROR) {
			cr_assert_eq(n, 13, "the error is the 13th event");
			cr_assert(ev.error.overflow);
			cr_assert_eq(ev.error.ip, 0x4016d7);
			cr_assert_eq(ev.time, 13479504207749ull);
		}
	}
	cr_assert_eq(ret, 0, "%s", im.err.message);
	cr_assert_eq(n, 19);
	import_close(&im);
}

/* ---- Captures made now: softpt runs a program, perf decodes it ---- */

static void require_tools(const char *target)
{
	char path[PATH_MAX];
	const char *why = NULL;

	if (system("command -v perf >/dev/null 2>&1") != 0)
		why = "perf is not installed (Debian package linux-perf)";
	snprintf(path, sizeof(path), "%s/softpt", build_dir());
	if (!why && access(path, X_OK) != 0)
		why = "softpt is not built (make softpt)";
	snprintf(path, sizeof(path), "%s/tests/pt/%s", build_dir(), target);
	if (!why && access(path, X_OK) != 0)
		why = "the PT target programs are not built (make test builds them)";
	if (!why)
		return;
	if (under_ci())
		cr_assert_fail("%s; CI must run this test", why);
	fprintf(stderr, "skipped: %s\n", why);
	cr_skip_test("%s", why);
}

struct thread_calls {
	uint32_t tid;
	size_t calls;
};

static struct thread_calls *thread_slot(struct thread_calls *threads, size_t *count, uint32_t tid)
{
	for (size_t i = 0; i < *count; i++)
		if (threads[i].tid == tid)
			return &threads[i];
	cr_assert_lt(*count, MAX_THREADS, "too many threads");
	threads[*count] = (struct thread_calls){ tid, 0 };
	return &threads[(*count)++];
}

/* Runs softpt on the target (once; several captures with -o), returning the
 * directory that holds them. */
static void capture(const char *target, const char *softpt_args, char *dir, size_t size)
{
	char command[3 * PATH_MAX], build[PATH_MAX];
	int status;

	cr_assert_not_null(realpath(build_dir(), build), "no build directory %s", build_dir());
	snprintf(dir, size, "/tmp/rv-perf-script-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(command, sizeof(command),
		 "cd %s && env -i %s/softpt -q %s -- %s/tests/pt/%s > target.out 2> softpt.err",
		 dir, build, softpt_args, build, target);
	status = system(command);
	cr_assert_eq(status, 0, "softpt failed on %s (status %d): see %s/softpt.err", target,
		     status, dir);
}

static void perf_script(const char *capture_dir, const char *itrace, const char *fields,
			const char *out)
{
	char command[2048];
	int status;

	snprintf(command, sizeof(command),
		 "perf script -i %s/perf.data --itrace=%s -F %s --ns --force > %s 2> %s.err",
		 capture_dir, itrace, fields, out, out);
	status = system(command);
	cr_assert_eq(status, 0, "%s failed (status %d)", command, status);
}

/* Every line imports; the calls of each thread are the ground truth's. */
static void check_calls(const char *capture_dir, const char *text_path)
{
	struct thread_calls truth[MAX_THREADS], imported[MAX_THREADS];
	size_t nr_truth = 0, nr_imported = 0, arrows = 0, len;
	char path[PATH_MAX], *line = NULL, *text;
	size_t line_size = 0;
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/ground-truth.txt", capture_dir);
	f = fopen(path, "r");
	cr_assert_not_null(f, "no %s", path);
	while (getline(&line, &line_size, f) > 0) {
		uint32_t tid;

		if (sscanf(line, "call %" SCNu32, &tid) == 1)
			thread_slot(truth, &nr_truth, tid)->calls++;
	}
	free(line);
	fclose(f);
	cr_assert_gt(nr_truth, 0, "no calls in %s", path);

	text = read_whole(text_path, &len);
	for (const char *at = text; (at = strstr(at, " => ")); at += 4)
		arrows++;
	import_open(&im, text, len, text_path);
	while ((ret = rv_perf_script_next(im.p, &ev, &im.err)) != 0) {
		cr_assert_gt(ret, 0, "%s", im.err.message);
		if (ev.kind == RV_EVENT_BRANCH && ev.branch.kind == RV_BRANCH_CALL)
			thread_slot(imported, &nr_imported, ev.tid)->calls++;
	}
	rv_perf_script_stats(im.p, &stats);
	import_close(&im);
	free(text);

	cr_assert_eq(stats.branches, arrows, "%s: %" PRIu64 " branches of %zu lines with \"=>\"",
		     text_path, stats.branches, arrows);
	cr_assert_eq(stats.errors, 0, "%s: perf reports errors", text_path);
	cr_assert_eq(stats.bad, 0);
	cr_assert_eq(stats.branches + stats.skipped + stats.not_drawn + stats.extra, stats.lines);
	cr_assert_eq(nr_imported, nr_truth, "%zu threads call, not %zu", nr_imported, nr_truth);
	for (size_t i = 0; i < nr_truth; i++) {
		struct thread_calls *got = thread_slot(imported, &nr_imported, truth[i].tid);

		cr_assert_eq(got->calls, truth[i].calls, "%s: thread %u: %zu calls, not %zu",
			     text_path, truth[i].tid, got->calls, truth[i].calls);
	}
}

#define BASE_FIELDS	   "pid,tid,time,flags,ip,addr,sym,symoff,dso"
#define MAGIC_TRACE_FIELDS "pid,tid,time,flags,ip,addr,sym,symoff,synth,dso,event,period"

static void check_program(const char *target)
{
	char dir[64], capture_dir[PATH_MAX], out[PATH_MAX], command[PATH_MAX];

	require_tools(target);
	capture(target, "-o full", dir, sizeof(dir));
	snprintf(capture_dir, sizeof(capture_dir), "%s/full", dir);
	snprintf(out, sizeof(out), "%s/be.txt", dir);
	perf_script(capture_dir, "be", BASE_FIELDS, out);
	check_calls(capture_dir, out);
	snprintf(out, sizeof(out), "%s/magic-trace.txt", dir);
	perf_script(capture_dir, "bep", MAGIC_TRACE_FIELDS, out);
	check_calls(capture_dir, out);
	snprintf(command, sizeof(command), "rm -rf %s", dir);
	cr_assert_eq(system(command), 0);
}

Test(perf_script, softpt_recursion, .timeout = 240)
{
	check_program("recursion");
}

Test(perf_script, softpt_signals, .timeout = 240)
{
	check_program("signals");
}

Test(perf_script, softpt_two_threads, .timeout = 240)
{
	check_program("two_threads");
}

/* An injected overflow: perf's error line arrives as an overflow event of
 * the thread, and everything else still imports. */
Test(perf_script, softpt_overflow, .timeout = 240)
{
	char dir[64], capture_dir[PATH_MAX], out[PATH_MAX], command[PATH_MAX];
	struct tally t;
	size_t len;
	char *text;

	require_tools("recursion");
	capture("recursion", "--inject-overflow 20000:3000 -o ovf", dir, sizeof(dir));
	snprintf(capture_dir, sizeof(capture_dir), "%s/ovf", dir);
	snprintf(out, sizeof(out), "%s/magic-trace.txt", dir);
	perf_script(capture_dir, "bep", MAGIC_TRACE_FIELDS, out);
	text = read_whole(out, &len);
	tally_text(text, len, out, &t);
	free(text);
	cr_assert_eq(t.stats.bad, 0);
	cr_assert_eq(t.errors, 1, "%zu errors", t.errors);
	cr_assert_eq(t.overflows, 1);
	cr_assert_gt(t.branches, 1000);
	cr_assert_gt(t.stats.not_drawn, 0, "psb lines");
	cr_assert_gt(t.extra, 0, "cbr lines");
	snprintf(command, sizeof(command), "rm -rf %s", dir);
	cr_assert_eq(system(command), 0);
}

/* ---- through the trace builder ---- */

/* issue 17: a page fault and a system call that perf shows entering the
 * kernel, each followed by the trace resuming in user space ("tr strt").
 * Both end there, as children of the one main. */
static const char kernel_entries[] =
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

Test(perf_script, kernel_entries_end_where_the_trace_resumes_in_user_space)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct import im;
	struct rv_event ev;
	int ret, events = 0;

	builder_fixture_open(&f);
	import_open(&im, kernel_entries, strlen(kernel_entries), "issue17.txt");
	while ((ret = rv_perf_script_next(im.p, &ev, &im.err)) > 0) {
		builder_fixture_add(&f, &ev);
		events++;
	}
	cr_assert_eq(ret, 0, "%s", im.err.message);
	cr_assert_eq(events, 5);
	t = builder_fixture_finish(&f);
	import_close(&im);
	cr_assert_eq(t->nr_spans, 3);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	expect_span(t, "main", 0, 0, 200, NULL);
	expect_span(t, "asm_exc_page_fault", 0, 10, 100, "main");
	expect_span(t, "entry_SYSCALL_64", 0, 130, 200, "main");
	cr_assert_str_eq(trace_span(t, "main", 0)->category, "");
	cr_assert_str_eq(trace_span(t, "asm_exc_page_fault", 0)->category, "kernel");
	cr_assert_str_eq(trace_span(t, "entry_SYSCALL_64", 0)->category, "kernel");
	builder_fixture_close(&f, t);
}

/* ---- Issue 19: text as perf really writes it ---- */

/* Every event of a text, through the builder, and the import's stats. */
static struct fxt_trace *build_text(struct builder_fixture *f, const char *text,
				    struct rv_perf_script_stats *stats)
{
	struct import im;
	struct rv_event ev;
	int ret;

	builder_fixture_open(f);
	import_open(&im, text, strlen(text), "text.txt");
	while ((ret = rv_perf_script_next(im.p, &ev, &im.err)) > 0)
		builder_fixture_add(f, &ev);
	cr_assert_eq(ret, 0, "%s", im.err.message);
	rv_perf_script_stats(im.p, stats);
	import_close(&im);
	return builder_fixture_finish(f);
}

/* The next event, which must be of that kind (thread names passed over). */
static void next_of_kind(struct import *im, struct rv_event *ev, enum rv_event_kind kind)
{
	int ret;

	do
		ret = rv_perf_script_next(im->p, ev, &im->err);
	while (ret == 1 && ev->kind == RV_EVENT_THREAD_NAME);
	cr_assert_eq(ret, 1, "%d: %s", ret, im->err.message);
	cr_assert_eq(ev->kind, kind, "event kind %d, not %d", ev->kind, kind);
}

/* perf's garbage offset: memcpy@plt+0xffffffffff22f000 at 0x7ffd193838e0
 * would start in the kernel's half. The name is kept, the start unknown. */
Test(perf_script, an_offset_past_its_address_is_unknown)
{
	static const char line[] =
		"293415/293415 7.000000100:   call                 401010 main+0x10 (/x) =>     "
		"   7ffd193838e0 memcpy@plt+0xffffffffff22f000 (/x)\n";
	struct import im;
	struct rv_event ev = one_event(&im, line);
	struct rv_perf_script_stats stats;

	cr_assert_eq(ev.kind, RV_EVENT_BRANCH);
	assert_end(&ev.branch.from, 0x401010, "main", 0x401000, "/x", line);
	assert_end(&ev.branch.to, 0x7ffd193838e0, "memcpy@plt", 0, "/x", line);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_eq(stats.bad_offsets, 1);
	cr_assert_eq(stats.bad, 0);
	import_close(&im);
}

/* The builder tells such a function by its name: two calls of it are two
 * spans in main, a jump inside it (another garbage offset) is no new
 * frame, and its return lands back in main. */
Test(perf_script, the_builder_keeps_functions_of_unknown_start_apart_by_name)
{
	static const char text[] =
		"1/1 1.000000000:   tr strt   0 [unknown] ([unknown]) =>   401000 main+0x0 (/x)\n"
		"1/1 1.000000010:   call   401010 main+0x10 (/x) =>   7f00 memcpy@plt+0xfffff000 "
		"(/x)\n"
		"1/1 1.000000020:   jmp   7f04 memcpy@plt+0xfffff004 (/x) =>   7f08 "
		"memcpy@plt+0xfffff008 (/x)\n"
		"1/1 1.000000030:   return   7f0c memcpy@plt+0xfffff00c (/x) =>   401015 "
		"main+0x15 (/x)\n"
		"1/1 1.000000040:   call   401020 main+0x20 (/x) =>   9f00 strlen@plt+0xfffff000 "
		"(/x)\n"
		"1/1 1.000000050:   return   9f0c strlen@plt+0xfffff00c (/x) =>   401025 "
		"main+0x25 (/x)\n"
		"1/1 1.000000060:   call   401030 main+0x30 (/x) =>   7f00 memcpy@plt+0xfffff000 "
		"(/x)\n"
		"1/1 1.000000070:   return   7f0c memcpy@plt+0xfffff00c (/x) =>   401035 "
		"main+0x35 (/x)\n"
		"1/1 1.000000100:   tr end   401040 main+0x40 (/x) =>   0 [unknown] ([unknown])\n";
	struct builder_fixture f;
	struct rv_perf_script_stats stats;
	struct fxt_trace *t = build_text(&f, text, &stats);

	cr_assert_eq(stats.bad_offsets, 8);
	cr_assert_eq(stats.bad, 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "memcpy@plt"), 2);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "strlen@plt"), 1);
	expect_span(t, "memcpy@plt", 0, 10, 30, "main");
	expect_span(t, "strlen@plt", 0, 40, 50, "main");
	expect_span(t, "memcpy@plt", 1, 60, 70, "main");
	builder_fixture_close(&f, t);
}

/* The error lines the issue quotes: no time. Each takes the time of the
 * line before it; the first line of a text has none before it (0). */
Test(perf_script, an_error_without_time_takes_the_previous_lines)
{
	static const char text[] =
		" instruction trace error type 1 cpu -1 pid 7 tid 7 ip 0x401000 code 7: "
		"Overflow packet\n"
		"293415/293415 5.000000100:   call   401010 main+0x10 (/x) =>   401100 f+0x0 "
		"(/x)\n"
		" instruction trace error type 1 cpu -1 pid 293415 tid 293415 ip 0x7ffff7327730 "
		"code 7: Overflow packet\n"
		" instruction trace error type 1 time 0 cpu -1 pid 293415 tid 293415 ip 0x1 code "
		"6: Trace doesn't match instruction\n";
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;

	import_open(&im, text, strlen(text), "errors.txt");
	next_of_kind(&im, &ev, RV_EVENT_TRACE_ERROR);
	cr_assert_eq(ev.time, 0);
	cr_assert_eq(ev.tid, 7);
	next_of_kind(&im, &ev, RV_EVENT_BRANCH);
	next_of_kind(&im, &ev, RV_EVENT_TRACE_ERROR);
	cr_assert_eq(ev.time, 5000000100ull);
	cr_assert_eq(ev.pid, 293415);
	cr_assert_eq(ev.error.ip, 0x7ffff7327730);
	cr_assert(ev.error.overflow);
	cr_assert_str_eq(ev.error.message, "Overflow packet");
	next_of_kind(&im, &ev, RV_EVENT_TRACE_ERROR);
	cr_assert_eq(ev.time, 5000000100ull, "\"time 0\" is no time either");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_eq(stats.untimed_errors, 3);
	cr_assert_eq(stats.errors, 3);
	cr_assert_eq(stats.bad, 0);
	import_close(&im);
}

struct arrow_case {
	const char *line;
	const char *from_sym, *to_sym;
	uint64_t from_ip, to_ip;
};

/* Symbols holding " => ", with perf's own spacing ("%16" addresses) and
 * without it (text written by hand). */
static const struct arrow_case arrow_cases[] = {
	{ "1/1 1.000000000:   call                 401004 std::function<void () => "
	  "int>::operator()+0x4 (/x) =>           402000 f+0x0 (/x)",
	  "std::function<void () => int>::operator()", "f", 0x401004, 0x402000 },
	{ "1/1 1.000000000:   call                 401004 f+0x4 (/x) =>           402000 "
	  "std::function<void () => int>::operator()+0x0 (/x)",
	  "f", "std::function<void () => int>::operator()", 0x401004, 0x402000 },
	/* a name whose " => " is followed by a word that reads as hex */
	{ "1/1 1.000000000:   call                 401004 cmp => bad (/x) =>           402000 "
	  "g+0x0 (/x)",
	  "cmp => bad", "g", 0x401004, 0x402000 },
	{ "1/1 1.000000000:   return               401004 app::main::{{closure}} => beef+0x4 "
	  "(/x) =>           402000 app::main::{{closure}} => fade+0x10 (/x)",
	  "app::main::{{closure}} => beef", "app::main::{{closure}} => fade", 0x401004, 0x402000 },
	{ "1/1 1.000000000:   call  401004 operator=> (/x) =>  402000 g (/x)", "operator=>", "g",
	  0x401004, 0x402000 },
	{ "1/1 1.000000000:   call  401004 a => b =>  402000 c", "a => b", "c", 0x401004,
	  0x402000 },
};

Test(perf_script, a_symbol_holding_an_arrow_is_split_at_perfs_separator)
{
	for (size_t i = 0; i < sizeof(arrow_cases) / sizeof(arrow_cases[0]); i++) {
		const struct arrow_case *a = &arrow_cases[i];
		char text[512];
		struct import im;
		struct rv_event ev;

		snprintf(text, sizeof(text), "%s\n", a->line);
		ev = one_event(&im, text);
		cr_assert_eq(ev.kind, RV_EVENT_BRANCH, "%s", a->line);
		cr_assert_eq(ev.branch.from.ip, a->from_ip, "%s", a->line);
		cr_assert_eq(ev.branch.to.ip, a->to_ip, "%s", a->line);
		cr_assert_str_eq(ev.branch.from.sym, a->from_sym, "%s", a->line);
		cr_assert_str_eq(ev.branch.to.sym, a->to_sym, "%s", a->line);
		import_close(&im);
	}
}

/* A pipe cut short: the last line ends without a newline, mid-field. It is
 * counted as cut, not as a bad line, and what came before is all there. */
Test(perf_script, a_cut_last_line_is_counted_as_cut)
{
	static const char *const cuts[] = {
		"1/1 1.000000200:   call   401020 main+0x20 (/x) =>",
		"1/1 1.0000",
		"1/1 1.000000200:   call   401020 main+0x2",
		" instruction trace error type 1 time 1.000000200 cpu -1 pid 1 tid 1 ip 0x40",
	};

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		char text[512];
		struct import im;
		struct rv_event ev;
		struct rv_perf_script_stats stats;

		snprintf(text, sizeof(text), "%s%s", good_line, cuts[i]);
		import_open(&im, text, strlen(text), "cut.txt");
		next_of_kind(&im, &ev, RV_EVENT_BRANCH);
		cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0, "%s", im.err.message);
		rv_perf_script_stats(im.p, &stats);
		cr_assert(stats.cut, "\"%s\" is not cut", cuts[i]);
		cr_assert_eq(stats.cut_line, 2);
		cr_assert_eq(stats.bad, 0);
		cr_assert_eq(rv_perf_script_check_any(im.p, &im.err), 0);
		import_close(&im);
	}
}

/* What `perf script` prints for `perf record -e cpu-clock -g` here (perf
 * 6.1: comm %16s, tid, time, period, event; frames "\t%16lx sym+off (dso)"),
 * with a comm holding a space and a second thread. */
static const char stacks_text[] =
	"Web Content  4874 [001] 64284.000000100:     250000 cpu-clock: \n"
	"\t            1135 leaf+0xc (/tmp/app)\n"
	"\t            1150 mid+0x4 (/tmp/app)\n"
	"\t            116a main+0x13 (/tmp/app)\n"
	"\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
	"\n"
	"Web Content  4874 [001] 64284.000000350:     250000 cpu-clock: \n"
	"\tffffffff8223b5d1 do_syscall_64+0x71 ([kernel.kallsyms])\n"
	"\t            1160 other+0x2 (/tmp/app)\n"
	"\t            1150 mid+0x4 (/tmp/app)\n"
	"\t            116a main+0x13 (/tmp/app)\n"
	"\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
	"\n"
	"worker  4875/4875 [000] 64284.000000400:     250000 cpu-clock: \n"
	"\t    7f948f6f2ad7 [unknown] ([unknown])\n"
	"\t            1200 work+0x10 (/tmp/app)\n"
	"\n"
	"Web Content  4874 [001] 64284.000000600:     250000 cpu-clock: \n"
	"\t            116a main+0x13 (/tmp/app)\n"
	"\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
	"\n";

Test(perf_script, sampled_stacks_as_perf_prints_them)
{
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;

	import_open(&im, stacks_text, strlen(stacks_text), "stacks.txt");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1, "%s", im.err.message);
	cr_assert_eq(ev.kind, RV_EVENT_THREAD_NAME, "the comm names the thread first");
	cr_assert_str_eq(ev.thread.name, "Web Content");
	cr_assert_eq(ev.tid, 4874);
	cr_assert_eq(ev.pid, 4874, "perf's lone tid field stands for the pid too");
	next_of_kind(&im, &ev, RV_EVENT_STACK_SAMPLE);
	cr_assert_eq(ev.time, 64284000000100ull);
	cr_assert_eq(ev.stack.nr_frames, 4);
	cr_assert_eq(ev.stack.interval_ns, 250000, "cpu-clock's period is nanoseconds");
	cr_assert_not(ev.stack.switches_recorded);
	cr_assert_str_eq(ev.stack.frames[0].sym, "leaf");
	cr_assert(ev.stack.frames[0].is_ip);
	cr_assert_eq(ev.stack.frames[0].addr, 0x1135);
	cr_assert_str_eq(ev.stack.frames[1].sym, "mid");
	cr_assert_not(ev.stack.frames[1].is_ip);
	cr_assert_str_eq(ev.stack.frames[3].sym, "__libc_start_call_main");
	cr_assert_not(ev.stack.frames[3].kernel);

	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1);
	cr_assert_eq(ev.kind, RV_EVENT_STACK_SAMPLE, "the same name is not said again");
	cr_assert_eq(ev.stack.nr_frames, 5);
	cr_assert(ev.stack.frames[0].kernel);
	cr_assert_str_eq(ev.stack.frames[0].sym, "do_syscall_64");
	cr_assert_not(ev.stack.frames[1].kernel);

	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1);
	cr_assert_eq(ev.kind, RV_EVENT_THREAD_NAME);
	cr_assert_str_eq(ev.thread.name, "worker");
	next_of_kind(&im, &ev, RV_EVENT_STACK_SAMPLE);
	cr_assert_eq(ev.tid, 4875);
	cr_assert_str_eq(ev.stack.frames[0].sym, "[unknown]");
	cr_assert_eq(ev.stack.frames[0].addr, 0x7f948f6f2ad7);
	cr_assert_str_eq(ev.stack.frames[1].sym, "work");

	next_of_kind(&im, &ev, RV_EVENT_STACK_SAMPLE);
	cr_assert_eq(ev.stack.nr_frames, 2);
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_eq(stats.samples, 4);
	cr_assert_eq(stats.frames, 13);
	cr_assert_eq(stats.skipped, 4, "the blank lines");
	cr_assert_eq(stats.lines, 21);
	cr_assert_eq(stats.bad, 0);
	import_close(&im);
}

/* Through the builder (the sampling rules): names from the text, nested as
 * the stacks say, the thread named by its comm. */
Test(perf_script, sampled_stacks_make_a_sampling_trace)
{
	struct builder_fixture f;
	struct rv_perf_script_stats stats;
	struct fxt_trace *t = build_text(&f, stacks_text, &stats);

	cr_assert_eq(stats.samples, 4);
	/* the last sample stands for its interval */
	expect_span(t, "__libc_start_call_main", 0, 0, 500 + 250000, NULL);
	expect_span(t, "main", 0, 0, 500 + 250000, "__libc_start_call_main");
	expect_span(t, "mid", 0, 0, 500, "main");
	expect_span(t, "leaf", 0, 0, 250, "mid");
	expect_span(t, "other", 0, 250, 500, "mid");
	expect_span(t, "do_syscall_64", 0, 250, 500, "other");
	cr_assert_str_eq(trace_span(t, "do_syscall_64", 0)->category, "kernel");
	cr_assert_str_eq(trace_span(t, "other", 0)->category, "");
	expect_span(t, "work", 0, 300, 300 + 250000, NULL);
	expect_span(t, "[unknown]", 0, 300, 300 + 250000, "work");
	cr_assert_str_eq(fxt_thread_name(t, 4874, 4874), "Web Content [4874/4874]");
	cr_assert_str_eq(fxt_thread_name(t, 4875, 4875), "worker [4875/4875]");
	builder_fixture_close(&f, t);
}

/* Samples without a call chain: of a sampling event, a one-frame stack; of
 * any other event, an instant named after it, at its ip, with its period;
 * a sampling event's empty chain is not drawn. */
Test(perf_script, samples_without_call_chains)
{
	static const char text[] =
		"app  10/11 [002] 3.000000000:     250000 cpu-clock:u:      401010 main+0x10 (/x)\n"
		"app  10/11 [002] 3.000001000:      20011 branch-misses:      401020 main+0x20 "
		"(/x)\n"
		"app  10/11 [002] 3.000002000:          1 cache-misses:u:  ffffffff81000010 "
		"clear_page+0x10 ([kernel.kallsyms])\n"
		"app  10/11 [002] 3.000003000:     100003 instructions:u: \n"
		"\t          401030 main+0x30 (/x)\n"
		"\t          402000 __libc_start_main+0x80 (/lib/libc.so.6)\n"
		"\n"
		"app  10/11 [002] 3.000004000:     250000 cpu-clock:u: \n"
		"\n"
		"app  10/11 [002] 3.000005000:          1 sched:sched_switch: prev_comm=app "
		"prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/2 next_pid=0 "
		"next_prio=120\n";
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;

	import_open(&im, text, strlen(text), "other.txt");
	next_of_kind(&im, &ev, RV_EVENT_STACK_SAMPLE);
	cr_assert_eq(ev.pid, 10);
	cr_assert_eq(ev.tid, 11);
	cr_assert_eq(ev.stack.nr_frames, 1);
	cr_assert_str_eq(ev.stack.frames[0].sym, "main");
	cr_assert_eq(ev.stack.frames[0].addr, 0x401010);
	cr_assert(ev.stack.frames[0].is_ip);

	next_of_kind(&im, &ev, RV_EVENT_EXTRA);
	cr_assert_str_eq(ev.extra.name, "branch-misses");
	cr_assert_eq(ev.extra.ip, 0x401020);
	cr_assert_not(ev.extra.kernel);
	cr_assert_eq(ev.extra.count, 20011);
	cr_assert_eq(ev.extra.cpu, 2);
	cr_assert_eq(ev.time, 3000001000ull);

	next_of_kind(&im, &ev, RV_EVENT_EXTRA);
	cr_assert_str_eq(ev.extra.name, "cache-misses:u");
	cr_assert_eq(ev.extra.ip, 0xffffffff81000010ull);
	cr_assert(ev.extra.kernel);

	next_of_kind(&im, &ev, RV_EVENT_EXTRA);
	cr_assert_str_eq(ev.extra.name, "instructions:u", "a chain of another event: an instant");
	cr_assert_eq(ev.extra.ip, 0x401030, "at the chain's leaf");
	cr_assert_eq(ev.extra.count, 100003);

	next_of_kind(&im, &ev, RV_EVENT_EXTRA);
	cr_assert_str_eq(ev.extra.name, "sched:sched_switch");
	cr_assert_eq(ev.extra.ip, 0, "a tracepoint's fields are no ip");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_eq(stats.samples, 1);
	cr_assert_eq(stats.extra, 4);
	cr_assert_eq(stats.not_drawn, 1, "the empty chain");
	cr_assert_str_eq(stats.not_drawn_names[0], "cpu-clock:u");
	cr_assert_eq(stats.bad, 0);
	import_close(&im);
}

/* Nothing to draw: an error that says what the text held and what to give
 * instead; empty input says it is empty. */
Test(perf_script, nothing_decoded_says_what_the_text_held)
{
	static const char psb_only[] =
		"28407/28407 13479.503601244:          1         psb:                          psb "
		"offs: 0                                     0                0 [unknown] "
		"([unknown])\n"
		"28407/28407 13479.503601245:          1         psb:                          psb "
		"offs: 0x4000                                0                0 [unknown] "
		"([unknown])\n";
	struct import im;
	struct rv_event ev;

	import_open(&im, "", 0, "empty.txt");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	cr_assert_eq(rv_perf_script_check_any(im.p, &im.err), -ENODATA);
	cr_assert(strstr(im.err.message, "empty.txt is empty"), "%s", im.err.message);
	cr_assert(strstr(im.err.message, "perf script --itrace=be"), "%s", im.err.message);
	import_close(&im);

	import_open(&im, psb_only, strlen(psb_only), "psb.txt");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	cr_assert_eq(rv_perf_script_check_any(im.p, &im.err), -ENODATA);
	cr_assert(strstr(im.err.message,
			 "psb.txt holds nothing rearview can draw: 2 lines: 0 branches, 0 samples, "
			 "0 other events, 2 lines of events rearview does not draw (psb), 0 lines "
			 "that could not be read."),
		  "%s", im.err.message);
	import_close(&im);

	import_open(&im, "garbage\nmore garbage\n", 21, "bad.txt");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	cr_assert_eq(rv_perf_script_check_any(im.p, &im.err), -ENODATA);
	cr_assert(strstr(im.err.message, "2 lines that could not be read"), "%s", im.err.message);
	import_close(&im);

	import_open(&im, good_line, strlen(good_line), "good.txt");
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 1);
	cr_assert_eq(rv_perf_script_check_any(im.p, &im.err), 0);
	import_close(&im);
}

/* Time going back on a thread (a shuffled file): counted with its first
 * lines; each such event takes the thread's latest time, so that the
 * builder sees every thread in order. Other threads are their own. */
Test(perf_script, time_going_back_is_counted_and_clamped)
{
	static const char text[] =
		"1/1 1.000000300:   call   401000 main+0x0 (/x) =>   401100 f+0x0 (/x)\n"
		"2/2 1.000000100:   call   401000 main+0x0 (/x) =>   401100 f+0x0 (/x)\n"
		"1/1 1.000000100:   return   401104 f+0x4 (/x) =>   401005 main+0x5 (/x)\n"
		"1/1 1.000000200:   call   401000 main+0x0 (/x) =>   401100 f+0x0 (/x)\n"
		"1/1 1.000000400:   return   401104 f+0x4 (/x) =>   401005 main+0x5 (/x)\n"
		"1/1 1.000000000:   call   401000 main+0x0 (/x) =>   401100 f+0x0 (/x)\n"
		"1/1 1.000000001:   call   401000 main+0x0 (/x) =>   401100 f+0x0 (/x)\n";
	static const uint64_t times[] = { 300, 100, 300, 300, 400, 400, 400 };
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;

	import_open(&im, text, strlen(text), "shuffled.txt");
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		next_of_kind(&im, &ev, RV_EVENT_BRANCH);
		cr_assert_eq(ev.time, 1000000000ull + times[i], "event %zu at %" PRIu64, i,
			     ev.time);
	}
	cr_assert_eq(rv_perf_script_next(im.p, &ev, &im.err), 0);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_eq(stats.backwards, 4);
	cr_assert_eq(stats.backwards_at[0], 3);
	cr_assert_eq(stats.backwards_at[1], 4);
	cr_assert_eq(stats.backwards_at[2], 6);
	import_close(&im);
}

/* One file with everything: branches on one thread, sampled stacks on
 * another, power events and a trace error; each drawn by its own rules. */
Test(perf_script, a_mix_of_branches_samples_and_events)
{
	static const char text[] =
		"# ========\n"
		"# captured on    : Fri Dec  4 16:22:33 2026\n"
		"app  20/20 [000] 2.000000000:          1 branches:u:   tr strt                    "
		" "
		"     0 [unknown] ([unknown]) =>           401000 main+0x0 (/x)\n"
		"app  20/20 [000] 2.000000000:          1         cbr:                          "
		"cbr: "
		"24 freq: 2096 MHz (100%)                   0                0 [unknown] "
		"([unknown])\n"
		"app  20/21 [001] 2.000000050:     250000 cpu-clock:u: \n"
		"\t          402010 spin+0x10 (/x)\n"
		"\t          402100 thread_main+0x20 (/x)\n"
		"\n"
		"app  20/20 [000] 2.000000100:          1 branches:u:   call                    "
		"401010 main+0x10 (/x) =>           401100 f+0x0 (/x)\n"
		"app  20/21 [001] 2.000000300:     250000 cpu-clock:u: \n"
		"\t          402010 spin+0x10 (/x)\n"
		"\t          402100 thread_main+0x20 (/x)\n"
		"\n"
		"app  20/20 [000] 2.000000400:          1 branches:u:   return                  "
		"401104 f+0x4 (/x) =>           401015 main+0x15 (/x)\n"
		" instruction trace error type 1 cpu 0 pid 20 tid 20 ip 0x401020 code 7: Overflow "
		"packet\n"
		"app  20/20 [000] 2.000000600:          1 branches:u:   tr strt                    "
		" "
		"     0 [unknown] ([unknown]) =>           401030 main+0x30 (/x)\n"
		"app  20/20 [000] 2.000000700:          1 branches:u:   tr end                  "
		"401040 main+0x40 (/x) =>                0 [unknown] ([unknown])\n";
	struct builder_fixture f;
	struct rv_perf_script_stats stats;
	struct fxt_trace *t = build_text(&f, text, &stats);

	cr_assert_eq(stats.branches, 5);
	cr_assert_eq(stats.samples, 2);
	cr_assert_eq(stats.extra, 1);
	cr_assert_eq(stats.errors, 1);
	cr_assert_eq(stats.untimed_errors, 1);
	cr_assert_eq(stats.skipped, 4, "two comments, two blank lines");
	cr_assert_eq(stats.bad, 0);
	expect_span(t, "f", 0, 100, 400, "main");
	expect_span(t, "thread_main", 0, 50, 300 + 250000, NULL);
	expect_span(t, "spin", 0, 50, 300 + 250000, "thread_main");
	cr_assert_eq(fxt_count_instants(t, 20, 20, "cbr"), 1);
	cr_assert_eq(fxt_count_instants(t, 20, 20, "[overflow]"), 1);
	/* it has the return's time (checked above, on the import), and the
	 * builder places it among the events of that time */
	cr_assert_geq(fxt_find_instant(t, 20, 20, "[overflow]", 0)->ts_ns, 400);
	cr_assert_lt(fxt_find_instant(t, 20, 20, "[overflow]", 0)->ts_ns, 600);
	builder_fixture_close(&f, t);
}

/* A real capture's text: `perf record -e cpu-clock -g` of a small program,
 * then `perf script` (perf 6.1, this machine). Every header is a sample,
 * every tab-led line a frame, and nothing is unreadable. */
Test(perf_script, real_sampled_stacks)
{
	char path[PATH_MAX];
	size_t len, headers = 0, frames = 0;
	char *text;
	struct import im;
	struct rv_event ev;
	struct rv_perf_script_stats stats;
	int ret;

	project_path("tests/data/perf_script/stacks-cpu-clock.txt", path, sizeof(path));
	text = read_whole(path, &len);
	for (size_t i = 0; i < len; i++) {
		if (i && text[i - 1] != '\n')
			continue;
		if (text[i] == '\t')
			frames++;
		else if (text[i] != '\n')
			headers++;
	}
	import_open(&im, text, len, "stacks-cpu-clock.txt");
	free(text);
	while ((ret = rv_perf_script_next(im.p, &ev, &im.err)) == 1) {
		if (ev.kind == RV_EVENT_THREAD_NAME) {
			cr_assert_str_eq(ev.thread.name, "stacks");
			continue;
		}
		cr_assert_eq(ev.kind, RV_EVENT_STACK_SAMPLE);
		cr_assert_gt(ev.stack.nr_frames, 0);
		for (size_t i = 0; i < ev.stack.nr_frames; i++)
			cr_assert(ev.stack.frames[i].sym && *ev.stack.frames[i].sym);
	}
	cr_assert_eq(ret, 0, "%s", im.err.message);
	rv_perf_script_stats(im.p, &stats);
	cr_assert_gt(headers, 10);
	cr_assert_eq(stats.samples + stats.not_drawn, headers);
	cr_assert_eq(stats.frames, frames);
	cr_assert_eq(stats.bad, 0);
	cr_assert_eq(stats.backwards, 0);
	import_close(&im);
}

/* perf's default fields for Intel PT print names without offsets: each
 * function is told by its name, so jumps inside it stay in its frame and
 * calls and returns nest as with offsets. */
Test(perf_script, names_without_offsets_nest_by_name)
{
	static const char text[] =
		"app  1/1 [000] 1.000000000:  1 branches:u:   tr strt               0 [unknown] "
		"([unknown]) =>           401000 main (/x)\n"
		"app  1/1 [000] 1.000000010:  1 branches:u:   jcc              401004 main (/x) => "
		"          401008 main (/x)\n"
		"app  1/1 [000] 1.000000020:  1 branches:u:   call             401010 main (/x) => "
		"          401100 work (/x)\n"
		"app  1/1 [000] 1.000000030:  1 branches:u:   jmp              401104 work (/x) => "
		"          401120 work (/x)\n"
		"app  1/1 [000] 1.000000040:  1 branches:u:   call             401124 work (/x) => "
		"          401200 leaf (/x)\n"
		"app  1/1 [000] 1.000000050:  1 branches:u:   return           401204 leaf (/x) => "
		"          401128 work (/x)\n"
		"app  1/1 [000] 1.000000060:  1 branches:u:   return           401130 work (/x) => "
		"          401015 main (/x)\n"
		"app  1/1 [000] 1.000000070:  1 branches:u:   jmp              401018 main (/x) => "
		"          401020 main (/x)\n"
		"app  1/1 [000] 1.000000100:  1 branches:u:   tr end           401024 main (/x) => "
		"               0 [unknown] ([unknown])\n";
	struct builder_fixture f;
	struct rv_perf_script_stats stats;
	struct fxt_trace *t = build_text(&f, text, &stats);

	cr_assert_eq(stats.branches, 9);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work"), 1);
	expect_span(t, "work", 0, 20, 60, "main");
	expect_span(t, "leaf", 0, 40, 50, "work");
	builder_fixture_close(&f, t);
}
