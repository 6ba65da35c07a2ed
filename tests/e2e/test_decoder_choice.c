/* test_decoder_choice.c: --decoder, as a user runs it. The default walker
 * (the fast one, which hands what it does not model to libipt's block
 * decoder) and --decoder libipt (the block decoder alone) must write the same
 * trace, byte for byte, as FXT and as Chrome JSON, on one decoding thread and
 * on two (cut at every PSB they can), for:
 *
 * - the real-hardware raw traces of ../shared/pt-corpus (mruby, foo, Unzip),
 *   with the reference instruction counts either way;
 * - the real perf.data from a Skylake (per-CPU buffers, decoded in lanes; its
 *   binaries are missing, so decode errors too);
 * - softpt captures of the PT targets (tests/pt): CYC and MTC timing, a PSB
 *   every 2 KiB, an injected overflow, a snapshot that begins mid-way.
 *
 * --stats counts the same instructions, calls, returns, errors and
 * overflows either way, and says which walker decoded how much. An unknown
 * --decoder is refused, naming the choices.
 *
 * Not here: whether the trace is right (test_softpt.c against perf's
 * decoding, test_decode.c against the corpus's counts): only that the two
 * walkers agree.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "test_files.h"

#define DECODE_TIMEOUT_S 300
#define SOFTPT_TIMEOUT_S 240

/* The rest of the --stats line that starts with name (then spaces), in out;
 * false when there is none. */
static bool stat_line(const char *stats, const char *name, char *out, size_t size)
{
	size_t n = strlen(name);

	for (const char *line = stats; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, name, n) && line[n] == ' ') {
			const char *value = line + n + strspn(line + n, " ");
			size_t len = strcspn(value, "\n");

			snprintf(out, size, "%.*s", (int)len, value);
			return true;
		}
	}
	return false;
}

/* `rearview decode INPUT... --stats --jobs JOBS [--decoder DECODER] -o OUT`,
 * which must succeed; two jobs decode chunks of 1 KiB, so that every PSB
 * can begin one. */
static void decode(const char *const *input, const char *decoder, const char *jobs, const char *out,
		   struct proc_result *r)
{
	const char *argv[24];
	size_t n = 0;

	argv[n++] = build_path("rearview");
	argv[n++] = "decode";
	for (size_t i = 0; input[i]; i++)
		argv[n++] = input[i];
	argv[n++] = "--stats";
	argv[n++] = "--jobs";
	argv[n++] = jobs;
	if (strcmp(jobs, "1")) {
		argv[n++] = "--chunk-size";
		argv[n++] = "1K";
	}
	if (decoder) {
		argv[n++] = "--decoder";
		argv[n++] = decoder;
	}
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n] = NULL;
	run_process((char *const *)argv, DECODE_TIMEOUT_S, r);
	cr_assert(!r->timed_out, "%s: decoding %s took longer than %d s", input[0], out,
		  DECODE_TIMEOUT_S);
	cr_assert_eq(r->exit_code, 0,
		     "%s (--decoder %s, --jobs %s): rearview decode failed (%d): %s", input[0],
		     decoder ? decoder : "fast", jobs, r->exit_code, r->err);
}

/* --stats of a default decode (fast) and of --decoder libipt: the same
 * counts, and each says which walker decoded how much. */
static void compare_stats(const char *what, const char *fast, const char *libipt,
			  uint64_t reference_insns)
{
	static const char *const same[] = { "trace bytes", "instructions", "calls",
					    "returns",	   "errors",	   "overflows" };
	char a[256], b[256];

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		cr_assert(stat_line(fast, same[i], a, sizeof(a)), "%s: no '%s' in --stats:\n%s",
			  what, same[i], fast);
		cr_assert(stat_line(libipt, same[i], b, sizeof(b)), "%s: no '%s' in --stats:\n%s",
			  what, same[i], libipt);
		cr_assert_str_eq(a, b, "%s: %s %s by default, %s with --decoder libipt", what,
				 same[i], a, b);
	}
	if (reference_insns) {
		stat_line(fast, "instructions", a, sizeof(a));
		cr_assert_eq(strtoull(a, NULL, 10), reference_insns,
			     "%s: %s instructions, the reference is %" PRIu64, what, a,
			     reference_insns);
	}

	cr_assert(stat_line(fast, "decoded by", a, sizeof(a)), "%s: no 'decoded by' line:\n%s",
		  what, fast);
	cr_assert(!strncmp(a, "fast walker ", 12) && strstr(a, ", libipt's block decoder "),
		  "%s: by default, 'decoded by %s'", what, a);
	cr_assert(stat_line(libipt, "decoded by", b, sizeof(b)), "%s: no 'decoded by' line:\n%s",
		  what, libipt);
	cr_assert(!strncmp(b, "libipt's block decoder ", 23) &&
			  strstr(b, "(all of it: --decoder libipt)"),
		  "%s: with --decoder libipt, 'decoded by %s'", what, b);

	cr_assert(stat_line(fast, "fast caches", a, sizeof(a)), "%s: no 'fast caches' line:\n%s",
		  what, fast);
	cr_assert(a[0] >= '0' && a[0] <= '9' && strstr(a, " bytes"), "%s: 'fast caches %s'", what,
		  a);
	cr_assert(stat_line(libipt, "fast caches", b, sizeof(b)), "%s: no 'fast caches' line:\n%s",
		  what, libipt);
	cr_assert_str_eq(b, "0 bytes (not used: --decoder libipt)", "%s", what);
}

/* Decodes input both ways, on one job and on two, as FXT and as JSON, in
 * dir; the traces must be the same files. reference_insns: the instruction
 * count both must find (0: not known). Failing, it leaves the traces in dir. */
static void same_either_way(const char *what, const char *const *input, const char *dir,
			    uint64_t reference_insns)
{
	static const char *const jobs[] = { "1", "2" };
	static const char *const formats[] = { "fxt", "json" };
	struct proc_result *r = calloc(1, sizeof(*r));
	char *fast_stats = NULL;

	cr_assert_not_null(r);
	for (size_t j = 0; j < 2; j++) {
		for (size_t f = 0; f < 2; f++) {
			char fast[256], libipt[256];

			snprintf(fast, sizeof(fast), "%s/fast-%s.%s", dir, jobs[j], formats[f]);
			snprintf(libipt, sizeof(libipt), "%s/libipt-%s.%s", dir, jobs[j],
				 formats[f]);
			decode(input, NULL, jobs[j], fast, r);
			fast_stats = strdup(r->out);
			cr_assert_not_null(fast_stats);
			decode(input, "libipt", jobs[j], libipt, r);
			cr_assert(files_equal(fast, libipt),
				  "%s (--jobs %s, %s): the default walker's trace %s differs from "
				  "--decoder libipt's %s",
				  what, jobs[j], formats[f], fast, libipt);
			compare_stats(what, fast_stats, r->out, reference_insns);
			free(fast_stats);
			unlink(fast);
			unlink(libipt);
		}
	}
	free(r);
}

/* ---- the corpus ---- */

struct raw_case {
	const char *name;
	const char *base;
	uint64_t insns;
};

static void check_raw(const struct raw_case *rc)
{
	char trace[512], image[600], dir[64], what[64];
	const char *input[] = { "--raw-pt", trace, "--image", image, NULL };

	corpus_path(trace, sizeof(trace), rc->name);
	snprintf(trace + strlen(trace), sizeof(trace) - strlen(trace), "/trace.pt");
	corpus_path(image, sizeof(image), rc->name);
	snprintf(image + strlen(image), sizeof(image) - strlen(image), "/image.bin@%s", rc->base);
	snprintf(what, sizeof(what), "raw %s", rc->name);
	make_test_dir(dir, sizeof(dir));
	same_either_way(what, input, dir, rc->insns);
	cleanup_dir(dir);
}

Test(decoder_choice, raw_unzip, .timeout = 600)
{
	check_raw(&(struct raw_case){ "Unzip", "0x400000", 149576 });
}

Test(decoder_choice, raw_foo, .timeout = 600)
{
	check_raw(&(struct raw_case){ "foo", "0x7ffff7819000", 117967 });
}

Test(decoder_choice, raw_mruby, .timeout = 600)
{
	check_raw(&(struct raw_case){ "mruby", "0x400000", 6334131 });
}

/* Two per-CPU buffers, decoded at once in lanes whose counts are merged. */
Test(decoder_choice, perf_4_14_per_cpu_buffers, .timeout = 300)
{
	char path[512], dir[64];
	const char *input[] = { path, NULL };

	corpus_path(path, sizeof(path), "perf-4.14/perf.data.intel_pt-4.14");
	make_test_dir(dir, sizeof(dir));
	same_either_way("perf-4.14", input, dir, 0);
	cleanup_dir(dir);
}

/* ---- softpt captures ---- */

#define MAX_CAPTURES 4

struct softpt_capture {
	char name[16];
	const char *args[8]; /* softpt's options for it, NULL-terminated */
	char dir[128];
};

struct pt_target {
	const char *name;	   /* build/tests/pt/NAME */
	const char *overflow_at;   /* --inject-overflow (an instruction within the run), or NULL */
	const char *snapshot_size; /* a snapshot of the run's end, or NULL */
};

/* The target's captures: CYC and MTC timing; a PSB every 2 KiB; an
 * overflow; a snapshot (a PSB every 2 KiB, so that it begins at one). */
static size_t plan_captures(const struct pt_target *t, struct softpt_capture *c)
{
	size_t n = 0;

	c[n++] = (struct softpt_capture){ .name = "normal",
					  .args = { "--timer-resolution", "normal", NULL } };
	c[n++] = (struct softpt_capture){
		.name = "psb-2k", .args = { "--timer-resolution", "low", "--psb-period", "0", NULL }
	};
	if (t->overflow_at)
		c[n++] = (struct softpt_capture){ .name = "overflow",
						  .args = { "--timer-resolution", "low",
							    "--inject-overflow", t->overflow_at,
							    NULL } };
	if (t->snapshot_size)
		c[n++] = (struct softpt_capture){ .name = "snapshot",
						  .args = { "--timer-resolution", "low",
							    "--psb-period", "0", "--snapshot-size",
							    t->snapshot_size, NULL } };
	return n;
}

/* One softpt run of the target makes all its captures (each capture's
 * options before its -o); each is decoded both ways. */
static void check_target(const struct pt_target *t)
{
	struct softpt_capture captures[MAX_CAPTURES];
	size_t n = plan_captures(t, captures), a = 0;
	const char *argv[16 + MAX_CAPTURES * 10];
	struct proc_result *r = calloc(1, sizeof(*r));
	char dir[64];

	cr_assert_not_null(r);
	cr_assert(file_exists(build_path("softpt")), "%s is not built", build_path("softpt"));
	cr_assert(file_exists(build_path(t->name)), "%s is not built", build_path(t->name));
	make_test_dir(dir, sizeof(dir));
	/* an empty environment, as test_softpt.c runs it: glibc's start-up
	 * compares each variable with every tunable, single-stepped */
	argv[a++] = "/usr/bin/env";
	argv[a++] = "-i";
	argv[a++] = build_path("softpt");
	argv[a++] = "-q";
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; captures[i].args[k]; k++)
			argv[a++] = captures[i].args[k];
		snprintf(captures[i].dir, sizeof(captures[i].dir), "%s/%.15s", dir,
			 captures[i].name);
		argv[a++] = "-o";
		argv[a++] = captures[i].dir;
	}
	argv[a++] = "--";
	argv[a++] = build_path(t->name);
	argv[a] = NULL;
	run_process((char *const *)argv, SOFTPT_TIMEOUT_S, r);
	cr_assert(!r->timed_out, "softpt ran %s longer than %d s", t->name, SOFTPT_TIMEOUT_S);
	cr_assert_eq(r->exit_code, 0, "softpt %s failed (%d): %s", t->name, r->exit_code, r->err);
	for (size_t i = 0; i < n; i++) {
		const char *input[] = { captures[i].dir, NULL };
		char what[128];

		snprintf(what, sizeof(what), "%s [%.15s]", t->name, captures[i].name);
		same_either_way(what, input, dir, 0);
	}
	cleanup_dir(dir);
	free(r);
}

/* The overflows' instructions and snapshot sizes are test_softpt.c's. */
Test(decoder_choice, softpt_deep_recursion, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/recursion", "12000", NULL });
}

Test(decoder_choice, softpt_signal_handlers, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/signals", "10600", NULL });
}

Test(decoder_choice, softpt_two_threads, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/two_threads", "11000", "2048" });
}

Test(decoder_choice, softpt_cpp_exceptions, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/exceptions", "60000", "8192" });
}

Test(decoder_choice, softpt_setjmp_longjmp, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/longjmp", "10600", NULL });
}

Test(decoder_choice, softpt_tail_calls, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/tailcall", "10800", NULL });
}

Test(decoder_choice, softpt_syscalls_in_a_loop, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/syscall_loop", "10800", NULL });
}

Test(decoder_choice, softpt_dlopen_library, .timeout = 900)
{
	check_target(&(struct pt_target){ "tests/pt/dlopen_main", "60000", "4096" });
}

/* ---- mistakes ---- */

Test(decoder_choice, an_unknown_decoder_is_refused_naming_the_choices, .timeout = 60)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char *argv[] = {
		(char *)build_path("rearview"), "decode", "--decoder", "bogus", "perf.data", "-o",
		"/tmp/rv-bogus-decoder.fxt",	NULL
	};

	cr_assert_not_null(r);
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, 2, "exit %d: %s", r->exit_code, r->err);
	cr_assert(strstr(r->err, "'bogus'") && strstr(r->err, "fast") && strstr(r->err, "libipt"),
		  "%s", r->err);
	cr_assert_eq(count_lines(r->err), 1, "one line: %s", r->err);
	cr_assert(!file_exists("/tmp/rv-bogus-decoder.fxt"));
	free(r);
}
