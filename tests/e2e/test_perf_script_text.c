/* test_perf_script_text.c: `rearview decode --perf-script` on text as perf
 * really writes it (issue 19, section 1):
 *
 * - the REAL perf on this machine records deepstack (`perf record -e
 *   cpu-clock -g`, and `--call-graph dwarf`), `perf script` prints the
 *   stacks, and the trace made from that text holds the target's functions
 *   nested as it calls them: main > shallow_spin, main > descend (64 levels,
 *   with frame pointers) > deep_spin;
 * - text with lines that cannot be read, a cut last line and time going
 *   back: a trace (exit 0), with each said on stderr (the count, the first
 *   line numbers, what was expected);
 * - text with nothing to draw (empty, psb lines only, all unreadable):
 *   exit 1, with what the text held and the perf script command to use.
 *
 * Not here: each kind of line and quirk, field by field
 * (tests/unit/test_perf_script.c).
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"

/* deepstack's recursion: descend(64) down to descend(0) */
#define LEVELS 64

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	cr_assert_eq(fclose(f), 0);
}

static void shell(const char *command, int timeout_s)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char *argv[] = { "/bin/sh", "-c", (char *)command, NULL };

	cr_assert_not_null(r);
	run_process(argv, timeout_s, r);
	cr_assert_eq(r->exit_code, 0, "`%s` failed (%d): %s", command, r->exit_code, r->err);
	free(r);
}

/* `rearview decode --perf-script in -o out`; its exit code, stderr in r. */
static int decode_text(const char *in, const char *out, struct proc_result *r)
{
	char *argv[] = { (char *)build_path("rearview"),
			 "decode",
			 "--perf-script",
			 (char *)in,
			 "-o",
			 (char *)out,
			 NULL };

	run_process(argv, 120, r);
	cr_assert_not(r->timed_out, "decode did not end");
	return r->exit_code;
}

/* The deepest chain of `name` spans, each the parent of the next, under
 * span s (inclusive). */
static unsigned chain_depth(const struct fxt_trace *t, const struct fxt_span *s, const char *name)
{
	unsigned best = 0;
	const struct fxt_span *child;

	if (strcmp(s->name, name))
		return 0;
	fxt_for_each_child(t, s, child)
	{
		unsigned d = chain_depth(t, child, name);

		if (d > best)
			best = d;
	}
	return best + 1;
}

/* The name of a perf script frame line ("\t    55d0c0a01189 shallow_spin+0x10
 * (/path)") into name[]; false if the line is no frame. */
static bool frame_name(const char *line, char *name, size_t size)
{
	const char *p = line, *end;

	if (*p != '\t' && *p != ' ')
		return false;
	while (*p == '\t' || *p == ' ')
		p++;
	if (!strchr("0123456789abcdef", *p) || !*p)
		return false;
	while (*p && strchr("0123456789abcdef", *p))
		p++;
	if (*p != ' ')
		return false;
	p++;
	end = p + strcspn(p, "+ \n");
	snprintf(name, size, "%.*s", (int)(end - p), p);
	return true;
}

/* Frame-pointer unwinding cannot see a function's caller while the sample
 * is in its prologue or epilogue (before `push %rbp; mov %rsp,%rbp`, after
 * `pop %rbp`): perf then names main's caller right under shallow_spin. Counts
 * the samples of stacks.txt with shallow_spin as their leaf and something
 * other than main under it, and keeps those callers' names (up to 8). */
static size_t shallow_samples_past_main(const char *path, char callers[8][128], size_t *nr)
{
	FILE *f = fopen(path, "r");
	char line[4096], first[128] = "", name[128];
	size_t past = 0, frames = 0;

	cr_assert_not_null(f, "%s", path);
	*nr = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!frame_name(line, name, sizeof(name))) {
			frames = 0;
			continue;
		}
		if (frames++ == 0) {
			snprintf(first, sizeof(first), "%s", name);
			continue;
		}
		if (frames != 2 || strcmp(first, "shallow_spin") || !strcmp(name, "main"))
			continue;
		past++;
		bool known = false;

		for (size_t i = 0; i < *nr; i++)
			known |= !strcmp(callers[i], name);
		if (!known && *nr < 8)
			snprintf(callers[(*nr)++], 128, "%s", name);
	}
	fclose(f);
	return past;
}

/* Records deepstack with perf (call graph options `mode`), prints the text with
 * perf script, decodes it, and checks how the target's functions nest. */
static void record_and_decode(const char *mode, bool whole_stacks)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char dir[64], command[1024], text[256], out[256], err[256];
	struct fxt_trace *t = NULL;
	const struct fxt_span *main_span = NULL, *s;
	size_t shallow = 0, shallow_in_main = 0, deep = 0, deep_in_descend = 0;
	size_t past_main, nr_callers, shallow_past_main = 0;
	char callers[8][128];
	unsigned deepest = 0;
	uint64_t pid = 0;

	cr_assert_not_null(r);
	if (!perf_available())
		cr_skip_test("perf is not installed: /usr/bin/perf (linux-perf)");
	make_test_dir(dir, sizeof(dir));
	snprintf(command, sizeof(command),
		 "perf record -q -e cpu-clock %s -o %s/perf.data -- %s 600 >%s/target.out "
		 "2>%s/perf-record.err && perf script -i %s/perf.data >%s/stacks.txt "
		 "2>%s/perf-script.err",
		 mode, dir, build_path("tests/targets/deepstack"), dir, dir, dir, dir, dir);
	shell(command, 120);
	snprintf(text, sizeof(text), "%s/stacks.txt", dir);
	snprintf(out, sizeof(out), "%s/stacks.fxt", dir);
	cr_assert_eq(decode_text(text, out, r), 0, "%s", r->err);
	cr_assert(strstr(r->err, " samples, "), "a sampling summary: %s", r->err);
	cr_assert_null(strstr(r->err, "could not be read"), "%s", r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	past_main = shallow_samples_past_main(text, callers, &nr_callers);

	/* the target's thread, named by perf's comm field */
	for (size_t i = 0; i < t->nr_threads; i++)
		if (t->threads[i].name && !strncmp(t->threads[i].name, "deepstack [", 11))
			pid = t->threads[i].koid;
	cr_assert_neq(pid, 0, "no thread named deepstack");
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *parent;

		s = &t->spans[i];
		if (s->tid != pid)
			continue;
		parent = fxt_span_parent(t, s);
		if (!strcmp(s->name, "main") && !main_span)
			main_span = s;
		if (!strcmp(s->name, "shallow_spin")) {
			shallow++;
			if (parent && !strcmp(parent->name, "main")) {
				shallow_in_main++;
			} else {
				bool perf_said = false;

				for (size_t c = 0; c < nr_callers; c++)
					perf_said |= parent && !strcmp(parent->name, callers[c]);
				cr_assert(perf_said,
					  "shallow_spin under %s, a caller perf never gave it",
					  parent ? parent->name : "nothing");
				shallow_past_main++;
			}
		}
		if (!strcmp(s->name, "deep_spin")) {
			deep++;
			deep_in_descend += parent && !strcmp(parent->name, "descend");
		}
		if (!strcmp(s->name, "descend") && (!parent || strcmp(parent->name, "descend"))) {
			unsigned d = chain_depth(t, s, "descend");

			if (d > deepest)
				deepest = d;
		}
	}
	cr_assert_gt(shallow, 0, "no shallow_spin span");
	cr_assert_gt(deep, 0, "no deep_spin span");
	cr_assert_eq(deep_in_descend, deep, "%zu of %zu deep_spin spans in descend",
		     deep_in_descend, deep);
	/* each span outside main comes from at least one sample perf unwound
	 * past main (see shallow_samples_past_main) */
	cr_assert_gt(shallow_in_main, 0, "no shallow_spin span in main");
	cr_assert_leq(shallow_past_main, past_main,
		      "%zu of %zu shallow_spin spans outside main, from %zu samples perf "
		      "unwound past main",
		      shallow_past_main, shallow, past_main);
	if (whole_stacks) {
		/* frame pointers reach main through all 65 calls of descend */
		cr_assert_not_null(main_span, "no main span");
		cr_assert_eq(deepest, LEVELS + 1, "descend nests %u deep, not %d", deepest,
			     LEVELS + 1);
		fxt_for_each_child(t, main_span, s)
		{
			cr_assert(!strcmp(s->name, "shallow_spin") || !strcmp(s->name, "descend") ||
					  !strcmp(s->name, "now_ms") ||
					  !strcmp(s->name, "[unknown]") || s->name[0] == '_' ||
					  strstr(s->name, "clock_gettime") ||
					  strstr(s->name, "syscall"),
				  "main calls %s", s->name);
		}
	} else {
		/* perf's DWARF unwinding copies 8 KiB of a 64 KiB stack: the
		 * samples in deep_spin reach a few levels of descend only */
		cr_assert_gt(deepest, 1, "descend does not nest in itself");
	}
	fxt_trace_free(t);
	cleanup_dir(dir);
	free(r);
}

Test(perf_script_text, perf_record_g_frame_pointers, .timeout = 180)
{
	record_and_decode("-g", true);
}

Test(perf_script_text, perf_record_call_graph_dwarf, .timeout = 180)
{
	record_and_decode("--call-graph dwarf", false);
}

/* A text with what perf's output can hold besides good lines: a bad line
 * (a symbol offset that does not fit 64 bits), a line that is no sample,
 * time going back on the thread, and a last line cut short. */
static const char damaged_text[] =
	"1/1 1.000000000:   tr strt                        0 [unknown] ([unknown]) =>           "
	"401000 main+0x0 (/bin/prog)\n"
	"1/1 1.000000100:   call                      401010 main+0x10 (/bin/prog) =>           "
	"401100 work+0x0 (/bin/prog)\n"
	"1/1 1.000000150:   call                      401110 work+0x10 (/bin/prog) =>     "
	"7ffd193838e0 memcpy@plt+0xffffffffff22f000 (/bin/prog)\n"
	"1/1 1.000000160:   return                7ffd193838f0 memcpy@plt+0xffffffffff22f010 "
	"(/bin/prog) =>           401115 work+0x15 (/bin/prog)\n"
	"1/1 1.000000200:   call                      401120 work+0x20 (/bin/prog) =>           "
	"401200 f+0x11111111111111111 (/bin/prog)\n"
	"Warning: 3 instruction trace errors\n"
	"1/1 1.000000050:   jmp                       401130 work+0x30 (/bin/prog) =>           "
	"401140 work+0x40 (/bin/prog)\n"
	" instruction trace error type 1 cpu -1 pid 1 tid 1 ip 0x401150 code 7: Overflow packet\n"
	"1/1 1.000000300:   tr strt                        0 [unknown] ([unknown]) =>           "
	"401160 work+0x60 (/bin/prog)\n"
	"1/1 1.000000400:   return                    401170 work+0x70 (/bin/prog) =>           "
	"401015 main+0x15 (/bin/prog)\n"
	"1/1 1.000000500:   call                      401020 main+0x20 (/bin/prog) =>  ";

Test(perf_script_text, damaged_text_gives_a_trace_and_says_what_was_wrong, .timeout = 60)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char dir[64], in[128], out[128], err[256];
	struct fxt_trace *t = NULL;

	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	snprintf(in, sizeof(in), "%s/damaged.txt", dir);
	snprintf(out, sizeof(out), "%s/damaged.fxt", dir);
	write_text(in, damaged_text);
	cr_assert_eq(decode_text(in, out, r), 0, "%s", r->err);
	cr_assert(strstr(r->err, "damaged.txt: 2 lines could not be read and were skipped (line "
				 "5, line 6)"),
		  "%s", r->err);
	cr_assert(strstr(r->err, "line 5: expected a symbol offset that fits 64 bits"), "%s",
		  r->err);
	cr_assert(strstr(r->err, "line 6: expected a sample: [COMM] PID/TID"), "%s", r->err);
	cr_assert(strstr(r->err, "the last line (11) ends without a newline"), "%s", r->err);
	cr_assert(strstr(r->err, "time goes back 1 time on a thread (line 7)"), "%s", r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fxt_count_spans(t, 1, 1, "work"), 2, "work before and after the overflow");
	cr_assert_eq(fxt_count_spans(t, 1, 1, "memcpy@plt"), 1,
		     "the call with perf's garbage offset");
	cr_assert_eq(fxt_count_instants(t, 1, 1, "[overflow]"), 1);
	fxt_trace_free(t);
	cleanup_dir(dir);
	free(r);
}

struct nothing_case {
	const char *name, *text, *says;
};

static const struct nothing_case nothing_cases[] = {
	{ "empty.txt", "", "empty.txt is empty: nothing to decode" },
	{ "psb.txt",
	  "28407/28407 13479.503601244:          1         psb:                          psb offs: "
	  "0                                     0                0 [unknown] ([unknown])\n",
	  "psb.txt holds nothing rearview can draw: 1 line: 0 branches, 0 samples, 0 other "
	  "events, 1 line of events rearview does not draw (psb), 0 lines that could not be "
	  "read" },
	{ "junk.txt", "not perf\nscript output\n",
	  "junk.txt holds nothing rearview can draw: 2 lines: 0 branches, 0 samples, 0 other "
	  "events, 0 lines of events rearview does not draw, 2 lines that could not be read" },
};

Test(perf_script_text, nothing_to_draw_exits_1_and_says_what_the_text_held, .timeout = 60)
{
	for (size_t i = 0; i < sizeof(nothing_cases) / sizeof(nothing_cases[0]); i++) {
		const struct nothing_case *c = &nothing_cases[i];
		struct proc_result *r = calloc(1, sizeof(*r));
		char dir[64], in[128], out[128];

		cr_assert_not_null(r);
		make_test_dir(dir, sizeof(dir));
		snprintf(in, sizeof(in), "%s/%s", dir, c->name);
		snprintf(out, sizeof(out), "%s/out.fxt", dir);
		write_text(in, c->text);
		cr_assert_eq(decode_text(in, out, r), 1, "%s: %s", c->name, r->err);
		cr_assert(strstr(r->err, c->says), "%s: %s", c->name, r->err);
		cr_assert(strstr(r->err, "perf script --itrace=be"), "%s", r->err);
		cr_assert_not(file_exists(out), "%s: a trace was written", c->name);
		cleanup_dir(dir);
		free(r);
	}
}
