/* test_perf_data_pt.c: Intel PT captures in perf.data (auxtrace.h, synth.h)
 * and perf's pipe mode, with Linux perf as the oracle. The real Skylake
 * capture in ../shared/pt-corpus/perf-4.14 (file mode and piped) must read
 * the same with our reader as with `perf report -D`, record by record; so
 * must pipe streams perf 6 writes itself; a capture our writer makes must
 * read back as written, be dumped by perf without a complaint, and decode
 * with perf's own Intel PT decoder. Not here: file-mode basics and corrupt
 * files in general (test_perf_data.c), what the packets mean (the decoder).
 */
#include <criterion/criterion.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "perf_names.h"
#include "capture/perf_data_internal.h"
#include "capture/synth.h"
#include "test_env.h"
#include "test_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR_TYPES 128

/* ---- the environment ---- */

/* Opens `path` through standard input fed by a pipe, as `cmd | rearview`
 * would: the reader must take the non-mappable path. */
static int open_via_stdin_pipe(struct rv_perf_reader **r, const char *path, struct rv_error *err)
{
	int fds[2], status, ret;
	pid_t child;

	cr_assert_eq(pipe(fds), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		char buf[65536];
		int fd = open(path, O_RDONLY);
		ssize_t n;

		close(fds[0]);
		if (fd < 0)
			_exit(1);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			if (write(fds[1], buf, (size_t)n) != n)
				_exit(1);
		_exit(n == 0 ? 0 : 1);
	}
	close(fds[1]);
	cr_assert_eq(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
	close(fds[0]);
	ret = rv_perf_reader_open(r, "-", err);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the feeding child failed");
	return ret;
}

/* ---- perf report -D, parsed ---- */

static int type_of_name(const char *name, size_t len)
{
	for (int t = 0; t < NR_TYPES; t++)
		if (perf_record_type_name(t) && strlen(perf_record_type_name(t)) == len &&
		    !memcmp(perf_record_type_name(t), name, len))
			return t;
	return -1;
}

/* One "CPU TIME OFFSET [SIZE]: PERF_RECORD_NAME..." line of the dump. */
struct dumped_record {
	uint64_t offset;
	uint32_t size;
	int type;
	bool has_cpu_time; /* perf printed both (it prints what the events sample) */
	uint64_t cpu, time;
	const char *text;  /* what follows the name */
	const char *block; /* the lines below it, up to a blank line */
	bool matched;
};

struct perf_dump {
	char *output;
	char *end;
	long counts[NR_TYPES];
	long total;
	bool have_stats;
	struct dumped_record *records;
	size_t nr_records;
};

static int compare_offsets(const void *a, const void *b)
{
	const struct dumped_record *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void parse_record_line(struct perf_dump *d, char *line, char *marker)
{
	struct dumped_record rec = { 0 };
	char *bracket = marker, *name = marker + strlen("]: PERF_RECORD_"), *tokens[4];
	size_t name_len = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
	int nr_tokens = 0;
	char *save = NULL, *tok;

	while (bracket > line && *bracket != '[')
		bracket--;
	cr_assert_eq(*bracket, '[', "no size in perf's line: %s", line);
	rec.size = (uint32_t)strtoul(bracket + 1, NULL, 16);
	rec.type = type_of_name(name, name_len);
	cr_assert_geq(rec.type, 0, "perf printed a record type the test does not know: %.*s",
		      (int)name_len, name);
	rec.text = name + name_len;
	bracket[0] = '\0';
	for (tok = strtok_r(line, " ", &save); tok && nr_tokens < 4;
	     tok = strtok_r(NULL, " ", &save))
		tokens[nr_tokens++] = tok;
	cr_assert(nr_tokens >= 1 && nr_tokens <= 3, "unexpected record line prefix");
	rec.offset = strtoull(tokens[nr_tokens - 1], NULL, 16);
	if (nr_tokens == 3) {
		rec.has_cpu_time = true;
		rec.cpu = strtoull(tokens[0], NULL, 10);
		rec.time = strtoull(tokens[1], NULL, 10);
	}
	if (d->nr_records % 1024 == 0) {
		d->records = realloc(d->records, (d->nr_records + 1024) * sizeof(*d->records));
		cr_assert_not_null(d->records);
	}
	d->records[d->nr_records++] = rec;
}

/* Splits perf's output into lines (in place) and notes every record line and
 * the "Aggregated stats" counts. */
static void parse_dump(struct perf_dump *d, char *output, size_t len)
{
	char *line = output;
	bool in_stats = false;

	memset(d, 0, sizeof(*d));
	d->output = output;
	d->end = output + len;
	d->total = -1;
	while (line < d->end) {
		char *next = memchr(line, '\n', (size_t)(d->end - line)), *marker;

		if (next)
			*next++ = '\0';
		else
			next = d->end;
		if (in_stats) {
			char name[64];
			long n;

			if (strstr(line, " stats:")) {
				in_stats = false; /* per-event stats follow */
			} else if (sscanf(line, " %63s events: %ld", name, &n) == 2) {
				int t = type_of_name(name, strlen(name));

				if (!strcmp(name, "TOTAL")) {
					d->total = n;
				} else {
					cr_assert_geq(t, 0, "perf counts %s records", name);
					d->counts[t] = n;
				}
			}
		} else if (!strncmp(line, "Aggregated stats:", 17)) {
			in_stats = true;
			d->have_stats = true;
		} else if (line[0] != '.' && (marker = strstr(line, "]: PERF_RECORD_"))) {
			parse_record_line(d, line, marker);
			d->records[d->nr_records - 1].block = next;
		}
		line = next;
	}
	qsort(d->records, d->nr_records, sizeof(*d->records), compare_offsets);
	for (size_t i = 1; i < d->nr_records; i++)
		cr_assert_neq(d->records[i].offset, d->records[i - 1].offset,
			      "perf printed two records at offset %#" PRIx64, d->records[i].offset);
}

static struct dumped_record *dump_find(struct perf_dump *d, uint64_t offset)
{
	struct dumped_record key = { .offset = offset };

	return bsearch(&key, d->records, d->nr_records, sizeof(key), compare_offsets);
}

/* The value after `label` on one of the record's block lines ("  PMU Type  6",
 * "... Time Shift  31"); NULL when no line has it. */
static const char *block_text(const struct perf_dump *d, const struct dumped_record *r,
			      const char *label)
{
	size_t label_len = strlen(label);

	for (const char *l = r->block; l && l < d->end && *l; l += strlen(l) + 1) {
		const char *p = l;

		while (*p == ' ' || *p == '.')
			p++;
		/* labels are padded to a column; "Filter string" is also the
		 * start of "Filter string len." */
		if (!strncmp(p, label, label_len) && (p[label_len] == ' ' || !p[label_len]) &&
		    strncmp(p + label_len, " len.", 5)) {
			p += label_len;
			while (*p == ' ')
				p++;
			return p;
		}
	}
	return NULL;
}

static uint64_t block_value(const struct perf_dump *d, const struct dumped_record *r,
			    const char *label)
{
	const char *text = block_text(d, r, label);

	cr_assert_not_null(text, "perf's dump of the record at %#" PRIx64 " has no '%s'", r->offset,
			   label);
	return strtoull(text, NULL, 0);
}

static void dump_free(struct perf_dump *d)
{
	free(d->records);
	free(d->output);
	memset(d, 0, sizeof(*d));
}

/* Runs perf report -D (the command given prints it on stdout) and parses it. */
static void dump_with_perf(struct perf_dump *d, const char *what, const char *cmd)
{
	int status;
	size_t len;
	char *out = run_command(&status, &len, "%s", cmd);

	cr_assert_eq(status, 0, "perf report -D failed on %s", what);
	parse_dump(d, out, len);
	cr_assert(d->have_stats, "perf report -D printed no stats for %s", what);
}

/* ---- our reading against perf's, record by record ---- */

struct comparison {
	long records, auxtrace, samples_checked, sample_ids_checked;
	bool saw_info, saw_time_conv;
};

static void compare_sample_fields(const struct dumped_record *dr, uint64_t sample_type,
				  uint32_t cpu, uint64_t time, struct comparison *c)
{
	if (!dr->has_cpu_time)
		return;
	if (sample_type & PERF_SAMPLE_CPU)
		cr_expect_eq(dr->cpu, cpu, "record at %#" PRIx64 ": cpu %u, perf says %" PRIu64,
			     dr->offset, cpu, dr->cpu);
	if (sample_type & PERF_SAMPLE_TIME)
		cr_expect_eq(dr->time, time,
			     "record at %#" PRIx64 ": time %" PRIu64 ", perf says %" PRIu64,
			     dr->offset, time, dr->time);
	c->sample_ids_checked++;
}

static void compare_auxtrace_info(const struct perf_dump *d, const struct dumped_record *dr,
				  const struct perf_event_header *h)
{
	struct rv_intel_pt_info info;
	struct rv_error err = { 0 };
	const char *filter;

	cr_assert_eq(rv_intel_pt_info_parse(h, &info, &err), 0, "%s", err.message);
	cr_assert_eq(strtoul(dr->text + strlen(" type:"), NULL, 10), RV_PERF_AUXTRACE_INTEL_PT);
	cr_expect_eq(info.pmu_type, block_value(d, dr, "PMU Type"));
	cr_expect_eq(info.time_shift, block_value(d, dr, "Time Shift"));
	cr_expect_eq(info.time_mult, block_value(d, dr, "Time Muliplier"));
	cr_expect_eq(info.time_zero, block_value(d, dr, "Time Zero"));
	cr_expect_eq(info.cap_user_time_zero, block_value(d, dr, "Cap Time Zero"));
	cr_expect_eq(info.tsc_bit, block_value(d, dr, "TSC bit"));
	cr_expect_eq(info.noretcomp_bit, block_value(d, dr, "NoRETComp bit"));
	cr_expect_eq(info.have_sched_switch, block_value(d, dr, "Have sched_switch"));
	cr_expect_eq(info.snapshot_mode, block_value(d, dr, "Snapshot mode"));
	cr_expect_eq(info.per_cpu_mmaps, block_value(d, dr, "Per-cpu maps"));
	cr_assert_eq(info.nr_priv, RV_INTEL_PT_PRIV_MAX, "the captures here have every field");
	cr_expect_eq(info.mtc_bit, block_value(d, dr, "MTC bit"));
	cr_expect_eq(info.mtc_freq_bits, block_value(d, dr, "MTC freq bits"));
	cr_expect_eq(info.tsc_ctc_ratio_n, block_value(d, dr, "TSC:CTC numerator"));
	cr_expect_eq(info.tsc_ctc_ratio_d, block_value(d, dr, "TSC:CTC denominator"));
	cr_expect_eq(info.cyc_bit, block_value(d, dr, "CYC bit"));
	cr_expect_eq(info.max_non_turbo_ratio, block_value(d, dr, "Max non-turbo ratio"));
	cr_expect_eq(info.filter ? strlen(info.filter) : 0,
		     block_value(d, dr, "Filter string len."));
	filter = block_text(d, dr, "Filter string");
	cr_assert_not_null(filter);
	cr_expect_str_eq(filter, info.filter ? info.filter : "");
}

static void compare_time_conv(const struct perf_dump *d, const struct dumped_record *dr,
			      const struct perf_event_header *h)
{
	struct rv_perf_time_conv tc;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_perf_time_conv_parse(h, &tc, &err), 0, "%s", err.message);
	cr_expect_eq(tc.time_shift, block_value(d, dr, "Time Shift"));
	cr_expect_eq(tc.time_mult, block_value(d, dr, "Time Muliplier"));
	cr_expect_eq(tc.time_zero, block_value(d, dr, "Time Zero"));
	if (h->size >= 56) {
		cr_expect_eq(tc.time_cycles, block_value(d, dr, "Time Cycles"));
		cr_expect_eq(tc.time_mask, block_value(d, dr, "Time Mask"));
		cr_expect_eq(tc.cap_user_time_zero, block_value(d, dr, "Cap Time Zero"));
		cr_expect_eq(tc.cap_user_time_short, block_value(d, dr, "Cap Time Short"));
	} else {
		cr_expect_null(block_text(d, dr, "Time Cycles"), "an old TIME_CONV has no cycles");
	}
}

static void compare_record(struct rv_perf_reader *r, const struct rv_perf_record *rec,
			   const struct perf_dump *d, const struct dumped_record *dr,
			   struct comparison *c)
{
	const struct perf_event_header *h = rec->header;
	struct rv_error err = { 0 };

	if (h->type == PERF_RECORD_SAMPLE) {
		struct rv_perf_sample s;

		cr_assert_eq(rv_perf_reader_parse_sample(r, h, &s, &err), 0, "%s", err.message);
		compare_sample_fields(dr, s.sample_type, s.cpu, s.time, c);
		c->samples_checked++;
	} else if (h->type < RV_PERF_RECORD_HEADER_ATTR) {
		struct rv_perf_sample_id sid;
		const struct rv_perf_attr *a;

		cr_assert_eq(rv_perf_reader_parse_sample_id(r, h, &sid, &err), 0, "%s",
			     err.message);
		a = sid.valid ? rv_perf_reader_attr_for_id(r, sid.id) : NULL;
		if (a)
			compare_sample_fields(dr, a->attr.sample_type, sid.cpu, sid.time, c);
	}
	switch (h->type) {
	case RV_PERF_RECORD_AUXTRACE: {
		struct rv_perf_auxtrace a;
		uint64_t size, offset, ref;
		unsigned int idx;
		int tid, cpu;

		cr_assert_eq(rv_perf_auxtrace_parse(h, &a, &err), 0, "%s", err.message);
		cr_assert_eq(sscanf(dr->text,
				    " size: %" SCNx64 " offset: %" SCNx64 " ref: %" SCNx64
				    " idx: %u tid: %d cpu: %d",
				    &size, &offset, &ref, &idx, &tid, &cpu),
			     6, "perf's AUXTRACE line: %s", dr->text);
		cr_expect_eq(a.size, size);
		cr_expect_eq(a.offset, offset);
		cr_expect_eq(a.reference, ref);
		cr_expect_eq(a.idx, idx);
		cr_expect_eq((int)a.tid, tid);
		cr_expect_eq((int)a.cpu, cpu);
		cr_assert_eq(rec->payload_size, a.size, "the trace follows the record");
		cr_assert_not_null(rec->payload);
		c->auxtrace++;
		break;
	}
	case RV_PERF_RECORD_AUXTRACE_INFO:
		compare_auxtrace_info(d, dr, h);
		c->saw_info = true;
		break;
	case RV_PERF_RECORD_TIME_CONV:
		compare_time_conv(d, dr, h);
		c->saw_time_conv = true;
		break;
	case PERF_RECORD_AUX: {
		struct rv_perf_aux aux;
		uint64_t offset, size, flags;

		cr_assert_eq(rv_perf_aux_parse(h, &aux, &err), 0, "%s", err.message);
		cr_assert_eq(sscanf(dr->text,
				    " offset: %" SCNx64 " size: %" SCNx64 " flags: %" SCNx64,
				    &offset, &size, &flags),
			     3, "perf's AUX line: %s", dr->text);
		cr_expect_eq(aux.aux_offset, offset);
		cr_expect_eq(aux.aux_size, size);
		cr_expect_eq(aux.flags, flags);
		break;
	}
	case PERF_RECORD_ITRACE_START: {
		struct rv_perf_itrace_start it;
		unsigned int pid, tid;

		cr_assert_eq(rv_perf_itrace_start_parse(h, &it, &err), 0, "%s", err.message);
		cr_assert_eq(sscanf(dr->text, " pid: %u tid: %u", &pid, &tid), 2);
		cr_expect_eq(it.pid, pid);
		cr_expect_eq(it.tid, tid);
		break;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		struct rv_perf_switch sw;
		const char *ids = strstr(dr->text, "pid/tid:");

		cr_assert_eq(rv_perf_switch_parse(h, &sw, &err), 0, "%s", err.message);
		cr_expect_eq(sw.out, strstr(dr->text, "OUT") != NULL, "%s", dr->text);
		cr_expect_eq(sw.preempt, strstr(dr->text, "preempt") != NULL, "%s", dr->text);
		cr_expect_eq(sw.cpu_wide, ids != NULL);
		if (ids) {
			int pid, tid;

			cr_assert_eq(sscanf(ids, "pid/tid: %d/%d", &pid, &tid), 2);
			cr_expect_eq((int)sw.next_prev_pid, pid);
			cr_expect_eq((int)sw.next_prev_tid, tid);
			cr_expect_eq(strstr(dr->text, sw.out ? "next" : "prev") != NULL, true);
		}
		break;
	}
	default:
		break;
	}
}

/* Every record we read is one perf printed, at the same place (perf's pipe
 * offsets leave out the 16-byte header: offset_bias), of the same type and
 * size, with the same fields; and perf printed no other. */
static void compare_with_dump(struct rv_perf_reader *r, struct perf_dump *d, uint64_t offset_bias,
			      struct comparison *c)
{
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	long counts[NR_TYPES] = { 0 };
	int ret;

	memset(c, 0, sizeof(*c));
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		struct dumped_record *dr;

		cr_assert_geq(rec.file_offset, offset_bias);
		dr = dump_find(d, rec.file_offset - offset_bias);
		cr_assert_not_null(dr, "perf printed no record at offset %#" PRIx64 " (type %u)",
				   rec.file_offset - offset_bias, rec.header->type);
		cr_assert_not(dr->matched);
		dr->matched = true;
		cr_assert_eq(dr->type, (int)rec.header->type,
			     "at %#" PRIx64 ": type %u, perf says %s", dr->offset, rec.header->type,
			     perf_record_type_name(dr->type));
		cr_assert_eq(dr->size, rec.header->size);
		compare_record(r, &rec, d, dr, c);
		if (rec.header->type < NR_TYPES)
			counts[rec.header->type]++;
		c->records++;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_eq((size_t)c->records, d->nr_records, "perf printed %zu records, we read %ld",
		     d->nr_records, c->records);
	cr_assert_eq(c->records, d->total, "perf counted %ld records, we read %ld", d->total,
		     c->records);
	for (int t = 0; t < NR_TYPES; t++)
		cr_expect_eq(counts[t], d->counts[t], "%s records: we read %ld, perf counted %ld",
			     perf_record_type_name(t) ? perf_record_type_name(t) : "?", counts[t],
			     d->counts[t]);
}

static void print_summary(const char *what, const struct rv_perf_reader *r,
			  const struct perf_dump *d, const struct comparison *c)
{
	fprintf(stderr, "%s (%s mode): %ld records matched perf report -D (", what,
		rv_perf_reader_is_pipe(r) ? "pipe" : "file", c->records);
	for (int t = 0, first = 1; t < NR_TYPES; t++) {
		if (!d->counts[t])
			continue;
		fprintf(stderr, "%s%s %ld", first ? "" : ", ", perf_record_type_name(t),
			d->counts[t]);
		first = 0;
	}
	fprintf(stderr, "); %ld AUXTRACE buffers\n", c->auxtrace);
}

/* ---- the real Skylake capture ---- */

static void check_corpus_file(const char *file, bool piped, bool via_stdin)
{
	char path[PATH_MAX + 64], cmd[PATH_MAX + 128], rel[128];
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	struct perf_dump d;
	struct comparison c;

	snprintf(rel, sizeof(rel), "perf-4.14/%s", file);
	corpus_path(path, sizeof(path), rel);
	require_tool("perf", "linux-perf");
	/* perf 6.1 seeks to an AUXTRACE's payload by its offset in the stream,
	 * which in a pipe-mode file is 16 bytes off: give it a real pipe. */
	if (piped)
		snprintf(cmd, sizeof(cmd), "cat '%s' | perf report -D --force -i - 2>/dev/null",
			 path);
	else
		snprintf(cmd, sizeof(cmd), "perf report -D --force -i '%s' 2>/dev/null", path);
	dump_with_perf(&d, file, cmd);
	if (via_stdin)
		cr_assert_eq(open_via_stdin_pipe(&r, path, &err), 0, "%s", err.message);
	else
		cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_reader_is_pipe(r), piped);
	compare_with_dump(r, &d, piped ? 16 : 0, &c);
	cr_assert_gt(c.auxtrace, 0, "the capture holds AUXTRACE buffers");
	cr_assert(c.saw_info && c.saw_time_conv);
	cr_assert_gt(c.sample_ids_checked, 0);
	print_summary(file, r, &d, &c);

	/* the Intel PT event is the attribute whose type AUXTRACE_INFO names */
	{
		bool found = false;

		for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
			const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

			if (a->attr.type == 6) {
				cr_assert_str_eq(a->name, "intel_pt//");
				cr_assert_gt(a->nr_ids, 0);
				found = true;
			}
		}
		cr_assert(found);
		cr_assert_str_eq(rv_perf_reader_feature_string(r, RV_FEAT_CPUID),
				 "GenuineIntel,6,78,3");
	}
	rv_perf_reader_free(r);
	dump_free(&d);
}

Test(perf_data_pt, skylake_file_mode_reads_as_perf_reads_it, .timeout = 120)
{
	check_corpus_file("perf.data.intel_pt-4.14", false, false);
}

Test(perf_data_pt, skylake_pipe_mode_reads_as_perf_reads_it, .timeout = 120)
{
	check_corpus_file("perf.data.piped.intel_pt-4.14", true, false);
}

Test(perf_data_pt, skylake_pipe_mode_from_standard_input, .timeout = 120)
{
	check_corpus_file("perf.data.piped.intel_pt-4.14", true, true);
}

/* The attributes of the file-mode capture, as `perf report --header-only`
 * lists them: names, types and ids. */
Test(perf_data_pt, skylake_attributes_match_perf_header, .timeout = 60)
{
	char path[PATH_MAX + 64];
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	size_t nr_events = 0;
	int status;
	char *out, *line, *save = NULL;

	corpus_path(path, sizeof(path), "perf-4.14/perf.data.intel_pt-4.14");
	require_tool("perf", "linux-perf");
	out = run_command(&status, NULL, "perf report --header-only --force -i '%s' 2>/dev/null",
			  path);
	cr_assert_eq(status, 0);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const struct rv_perf_attr *a;
		char name[128], ids[256], *p;
		unsigned int type = 0;
		size_t k = 0;

		if (strncmp(line, "# event : name = ", 17))
			continue;
		cr_assert_eq(
			sscanf(line, "# event : name = %127[^,], , id = { %255[^}]}", name, ids), 2,
			"%s", line);
		p = strstr(line, ", type = ");
		if (p)
			type = (unsigned int)strtoul(p + 9, NULL, 10); /* perf omits type 0 */
		cr_assert_lt(nr_events, rv_perf_reader_nr_attrs(r));
		a = rv_perf_reader_attr(r, nr_events++);
		cr_expect_str_eq(a->name, name);
		cr_expect_eq(a->attr.type, type);
		for (char *id_save = NULL, *id = strtok_r(ids, ", ", &id_save); id;
		     id = strtok_r(NULL, ", ", &id_save), k++) {
			cr_assert_lt(k, a->nr_ids);
			cr_expect_eq(a->ids[k], strtoull(id, NULL, 10));
		}
		cr_expect_eq(k, a->nr_ids);
	}
	cr_assert_eq(nr_events, rv_perf_reader_nr_attrs(r));
	rv_perf_reader_free(r);
	free(out);
}

/* ---- pipe mode as perf 6 writes it ---- */

/* `perf record -o -` on this machine: features, attributes, event names,
 * tracing data (a payload), id index, thread and CPU maps in the stream. */
Test(perf_data_pt, perf_record_pipe_output_reads_as_perf_reads_it, .timeout = 120)
{
	char dir[64], path[128], cmd[512];
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	struct perf_dump d;
	struct comparison c;
	int status;
	char *out;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-perf-pt");
	snprintf(path, sizeof(path), "%s/pipe.data", dir);
	out = run_command(&status, NULL,
			  "perf record -q -o - -e cpu-clock -e sched:sched_process_exec -- "
			  "/bin/true > '%s' 2>&1 && echo recorded",
			  path);
	if (!strstr(out, "recorded")) {
		if (under_ci())
			cr_assert_fail("perf record cannot record here: %s", out);
		fprintf(stderr, "skipped: perf record cannot record here\n");
		remove_tree(dir);
		cr_skip_test("perf record cannot record here");
	}
	free(out);
	snprintf(cmd, sizeof(cmd), "cat '%s' | perf report -D --force -i - 2>/dev/null", path);
	dump_with_perf(&d, "perf record's pipe output", cmd);
	cr_assert_eq(open_via_stdin_pipe(&r, path, &err), 0, "%s", err.message);
	cr_assert(rv_perf_reader_is_pipe(r));
	compare_with_dump(r, &d, 16, &c);
	cr_assert_gt(c.samples_checked, 0);
	cr_assert_gt(d.counts[RV_PERF_RECORD_HEADER_TRACING_DATA], 0, "a payload in the stream");
	cr_assert_gt(d.counts[RV_PERF_RECORD_HEADER_FEATURE], 0);
	print_summary("perf record -o -", r, &d, &c);
	/* names from the stream's EVENT_UPDATE records, as asked for with -e */
	cr_assert_eq(rv_perf_reader_nr_attrs(r), 2);
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "cpu-clock");
	cr_assert_str_eq(rv_perf_reader_attr(r, 1)->name, "sched:sched_process_exec");
	cr_assert_gt(rv_perf_reader_attr(r, 0)->nr_ids, 0);
	/* features from HEADER_FEATURE records */
	{
		const char *const *argv;
		int argc = rv_perf_reader_cmdline(r, &argv);

		cr_assert_gt(argc, 2);
		cr_assert_not_null(strstr(argv[0], "perf"));
		cr_assert_not_null(rv_perf_reader_feature_string(r, RV_FEAT_OSRELEASE));
		cr_assert(rv_perf_reader_has_feature(r, RV_FEAT_NRCPUS));
	}
	rv_perf_reader_free(r);
	dump_free(&d);
	remove_tree(dir);
}

/* ---- hand-made pipe streams ---- */

struct stream {
	uint8_t bytes[4096];
	size_t len;
};

static void stream_put(struct stream *s, const void *p, size_t n)
{
	cr_assert_leq(s->len + n, sizeof(s->bytes));
	memcpy(s->bytes + s->len, p, n);
	s->len += n;
}

static void stream_u64(struct stream *s, uint64_t v)
{
	stream_put(s, &v, 8);
}

static void stream_header(struct stream *s, uint32_t type, uint16_t size)
{
	struct perf_event_header h = { .type = type, .misc = 0, .size = size };

	stream_put(s, &h, sizeof(h));
}

/* A perf_header_string: u32 length (NUL and padding included), then the string. */
static void stream_string(struct stream *s, const char *str, uint32_t padded)
{
	char buf[256] = { 0 };

	cr_assert_lt(strlen(str), padded);
	stream_put(s, &padded, 4);
	memcpy(buf, str, strlen(str));
	stream_put(s, buf, padded);
}

/* A pipe stream: hostname feature (84 bytes: the records after it are not
 * 8-byte aligned in the stream), an attribute with two ids, a name for it, a
 * COMM and an AUXTRACE with 13 bytes of trace padded to 16. */
static void build_pipe_stream(struct stream *s, uint64_t *auxtrace_at)
{
	struct perf_event_attr attr = { 0 };
	uint8_t trace[16] = "0123456789abc";
	char comm[8] = "stream";

	memset(s, 0, sizeof(*s));
	stream_put(s, "PERFILE2", 8);
	stream_u64(s, 16);
	stream_header(s, RV_PERF_RECORD_HEADER_FEATURE, 8 + 8 + 4 + 64);
	stream_u64(s, RV_FEAT_HOSTNAME);
	stream_string(s, "pipehost", 64);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.size = sizeof(attr);
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID;
	attr.sample_id_all = 1;
	stream_header(s, RV_PERF_RECORD_HEADER_ATTR, (uint16_t)(8 + sizeof(attr) + 16));
	stream_put(s, &attr, sizeof(attr));
	stream_u64(s, 41);
	stream_u64(s, 42);
	stream_header(s, RV_PERF_RECORD_EVENT_UPDATE, 8 + 16 + 16);
	stream_u64(s, 2); /* PERF_EVENT_UPDATE__NAME */
	stream_u64(s, 42);
	stream_put(s, "dummy:piped\0\0\0\0", 16);
	stream_header(s, PERF_RECORD_COMM, 8 + 8 + 8 + 24);
	stream_u64(s, 7 | (7ULL << 32));
	stream_put(s, comm, 8);
	stream_u64(s, 7 | (7ULL << 32)); /* TID */
	stream_u64(s, 1234);		 /* TIME */
	stream_u64(s, 41);		 /* ID */
	*auxtrace_at = s->len;
	stream_header(s, RV_PERF_RECORD_AUXTRACE, 48);
	stream_u64(s, 16);		 /* size, padded */
	stream_u64(s, 0x100);		 /* offset */
	stream_u64(s, 99);		 /* reference */
	stream_u64(s, 3 | (7ULL << 32)); /* idx, tid */
	stream_u64(s, 1);		 /* cpu, reserved */
	stream_put(s, trace, sizeof(trace));
	stream_header(s, RV_PERF_RECORD_FINISHED_ROUND, 8);
}

Test(perf_data_pt, hand_made_pipe_stream)
{
	struct stream s;
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_perf_sample_id sid;
	struct rv_perf_auxtrace a;
	struct rv_error err = { 0 };
	uint64_t auxtrace_at;
	uint8_t *copy;
	int types[8], n = 0, ret;

	build_pipe_stream(&s, &auxtrace_at);
	copy = malloc(s.len);
	cr_assert_not_null(copy);
	memcpy(copy, s.bytes, s.len);
	cr_assert_eq(rv_perf_reader_open_buffer(&r, copy, s.len, "pipe", &err), 0, "%s",
		     err.message);
	cr_assert(rv_perf_reader_is_pipe(r));
	cr_assert_eq(rv_perf_reader_nr_attrs(r), 1);
	cr_assert_eq(rv_perf_reader_attr(r, 0)->nr_ids, 2);
	cr_assert_eq(rv_perf_reader_attr(r, 0)->ids[1], 42);
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "dummy:piped");
	cr_assert_str_eq(rv_perf_reader_feature_string(r, RV_FEAT_HOSTNAME), "pipehost");
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		cr_assert_lt(n, 8);
		cr_assert_eq((uintptr_t)rec.header % 8, 0, "records are handed out aligned");
		types[n++] = (int)rec.header->type;
		if (rec.header->type == PERF_RECORD_COMM) {
			cr_assert_eq(rv_perf_reader_parse_sample_id(r, rec.header, &sid, &err), 0,
				     "%s", err.message);
			cr_assert(sid.valid);
			cr_assert_eq(sid.time, 1234);
			cr_assert_eq(sid.id, 41);
		}
		if (rec.header->type == RV_PERF_RECORD_AUXTRACE) {
			cr_assert_eq(rec.file_offset, auxtrace_at);
			cr_assert_eq(rv_perf_auxtrace_parse(rec.header, &a, &err), 0);
			cr_assert_eq(a.offset, 0x100);
			cr_assert_eq(a.idx, 3);
			cr_assert_eq(a.tid, 7);
			cr_assert_eq(a.cpu, 1);
			cr_assert_eq(rec.payload_size, 16);
			cr_assert_eq(memcmp(rec.payload, "0123456789abc\0\0", 16), 0);
		}
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_eq(n, 6);
	cr_assert_eq(types[0], RV_PERF_RECORD_HEADER_FEATURE);
	cr_assert_eq(types[1], RV_PERF_RECORD_HEADER_ATTR);
	cr_assert_eq(types[2], RV_PERF_RECORD_EVENT_UPDATE);
	cr_assert_eq(types[3], PERF_RECORD_COMM);
	cr_assert_eq(types[4], RV_PERF_RECORD_AUXTRACE);
	cr_assert_eq(types[5], RV_PERF_RECORD_FINISHED_ROUND);
	rv_perf_reader_free(r);
	free(copy);
}

Test(perf_data_pt, pipe_stream_cut_or_corrupt_everywhere, .timeout = 120)
{
	struct stream s;
	uint64_t auxtrace_at;

	build_pipe_stream(&s, &auxtrace_at);
	/* cut at every length: a clean open error or a walk that stops, never
	 * a read past the end (AddressSanitizer watches in check-asan) */
	for (size_t len = 0; len <= s.len; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		struct rv_perf_reader *r;
		struct rv_perf_record rec;
		struct rv_error err = { 0 };
		int ret;

		memcpy(copy, s.bytes, len);
		ret = rv_perf_reader_open_buffer(&r, copy, len, "cut", &err);
		if (ret == 0) {
			while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1)
				if (rec.payload_size)
					(void)*(volatile const uint8_t *)((const uint8_t *)
										  rec.payload +
									  rec.payload_size - 1);
			rv_perf_reader_free(r);
		}
		if (ret < 0)
			cr_assert_neq(err.message[0], '\0');
		/* the attribute record is whole from this length on */
		if (len >= 16 + 84 + 8 + sizeof(struct perf_event_attr) + 16)
			cr_assert(ret == 0 || strstr(err.message, "offset"), "cut at %zu: %s", len,
				  err.message);
		free(copy);
	}
	/* an attribute that claims more bytes than its record */
	{
		uint8_t *copy = malloc(s.len);
		struct rv_perf_reader *r;
		struct rv_error err = { 0 };
		uint32_t huge = 4000;

		memcpy(copy, s.bytes, s.len);
		memcpy(copy + 16 + 84 + 8 + offsetof(struct perf_event_attr, size), &huge, 4);
		cr_assert_lt(rv_perf_reader_open_buffer(&r, copy, s.len, "bad-attr", &err), 0);
		cr_assert_not_null(strstr(err.message, "attribute"), "%s", err.message);
		free(copy);
	}
	/* an AUXTRACE whose trace runs past the end: the records before it come */
	{
		uint8_t *copy = malloc(s.len);
		struct rv_perf_reader *r;
		struct rv_perf_record rec;
		struct rv_error err = { 0 };
		uint64_t big = 1ULL << 40;
		int n = 0, ret;

		memcpy(copy, s.bytes, s.len);
		memcpy(copy + auxtrace_at + 8, &big, 8);
		cr_assert_eq(rv_perf_reader_open_buffer(&r, copy, s.len, "bad-aux", &err), 0);
		while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1)
			n++;
		cr_assert_lt(ret, 0);
		cr_assert_eq(n, 4);
		rv_perf_reader_free(r);
		free(copy);
	}
}

Test(perf_data_pt, pipe_stream_from_a_fifo)
{
	char dir[64], path[128];
	struct stream s;
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	uint64_t auxtrace_at;
	int status, n = 0, ret;
	pid_t child;

	build_pipe_stream(&s, &auxtrace_at);
	make_temp_dir(dir, sizeof(dir), "rv-perf-pt");
	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0, "%s", strerror(errno));
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		int fd = open(path, O_WRONLY);

		_exit(fd >= 0 && write(fd, s.bytes, s.len) == (ssize_t)s.len ? 0 : 1);
	}
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert(rv_perf_reader_is_pipe(r));
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "dummy:piped");
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1)
		n++;
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_eq(n, 6);
	rv_perf_reader_free(r);
	remove_tree(dir);
}

Test(perf_data_pt, empty_standard_input_is_an_error)
{
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	close(fds[1]);
	cr_assert_eq(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
	close(fds[0]);
	cr_assert_lt(rv_perf_reader_open(&r, "-", &err), 0);
	cr_assert_not_null(strstr(err.message, "standard input"), "%s", err.message);
	cr_assert_not_null(strstr(err.message, "empty"), "%s", err.message);
}

/* ---- the record builders (synth.h), against the uapi layout ---- */

#define TRAILER_TYPES                                                                              \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

static uint64_t u64_at(const uint8_t *p, size_t offset)
{
	uint64_t v;

	memcpy(&v, p + offset, 8);
	return v;
}

static uint32_t u32_at(const uint8_t *p, size_t offset)
{
	uint32_t v;

	memcpy(&v, p + offset, 4);
	return v;
}

static const struct perf_event_header *header_of(const uint8_t *p)
{
	return (const struct perf_event_header *)(const void *)p;
}

/* The sample_id trailer the kernel appends, read from the record's end in
 * its order: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER. Returns its size. */
static size_t check_trailer(const uint8_t *rec, size_t size, const struct rv_synth *s,
			    const struct rv_synth_id *id)
{
	uint64_t type = s->sample_id_all ? s->sample_type & TRAILER_TYPES : 0;
	size_t len = 8 * (size_t)__builtin_popcountll(type), at = size - len;

	cr_assert_geq(size, len + 8);
	if (type & PERF_SAMPLE_TID) {
		cr_assert_eq(u32_at(rec, at), id->pid);
		cr_assert_eq(u32_at(rec, at + 4), id->tid);
		at += 8;
	}
	if (type & PERF_SAMPLE_TIME) {
		cr_assert_eq(u64_at(rec, at), id->time);
		at += 8;
	}
	if (type & PERF_SAMPLE_ID) {
		cr_assert_eq(u64_at(rec, at), id->id);
		at += 8;
	}
	if (type & PERF_SAMPLE_STREAM_ID) {
		cr_assert_eq(u64_at(rec, at), id->id);
		at += 8;
	}
	if (type & PERF_SAMPLE_CPU) {
		cr_assert_eq(u32_at(rec, at), id->cpu);
		cr_assert_eq(u32_at(rec, at + 4), 0);
		at += 8;
	}
	if (type & PERF_SAMPLE_IDENTIFIER) {
		cr_assert_eq(u64_at(rec, at), id->id);
		at += 8;
	}
	cr_assert_eq(at, size);
	return len;
}

enum builder_kind {
	B_MMAP,
	B_MMAP2,
	B_COMM,
	B_FORK,
	B_EXIT,
	B_ITRACE_START,
	B_AUX,
	B_SWITCH,
	B_SWITCH_CPU_WIDE,
	B_NR
};

static const char long_path[] = "/usr/lib/x86_64-linux-gnu/libc.so.6"; /* 35 characters */

static size_t build(enum builder_kind kind, const struct rv_synth *s, void *buf, size_t size,
		    const struct rv_synth_id *id)
{
	switch (kind) {
	case B_MMAP:
		return rv_synth_mmap(s, buf, size, 10, 11, 0x400000, 0x2000, 0x1000, long_path,
				     PERF_RECORD_MISC_USER, id);
	case B_MMAP2:
		return rv_synth_mmap2(s, buf, size, 10, 11, 0x7f0000000000, 0x21000, 0x3000, 8, 3,
				      123456, 5, 2, long_path, PERF_RECORD_MISC_USER, id);
	case B_COMM:
		return rv_synth_comm(s, buf, size, 10, 11, "a-very-long-thread-name", true, id);
	case B_FORK:
		return rv_synth_fork(s, buf, size, 10, 9, 12, 11, 777, id);
	case B_EXIT:
		return rv_synth_exit(s, buf, size, 10, 9, 12, 11, 778, id);
	case B_ITRACE_START:
		return rv_synth_itrace_start(s, buf, size, 10, 11, id);
	case B_AUX:
		return rv_synth_aux(s, buf, size, 0x4000, 0x1230, PERF_AUX_FLAG_TRUNCATED, id);
	case B_SWITCH:
		return rv_synth_switch(s, buf, size, true, true, id);
	case B_SWITCH_CPU_WIDE:
		return rv_synth_switch_cpu_wide(s, buf, size, true, false, 20, 21, id);
	default:
		cr_assert_fail("no such builder");
		return 0;
	}
}

/* The record's fields before the trailer, at their uapi offsets. */
static void check_body(enum builder_kind kind, const uint8_t *rec, size_t body_end)
{
	const struct perf_event_header *h = header_of(rec);

	switch (kind) {
	case B_MMAP:
		cr_assert_eq(h->type, PERF_RECORD_MMAP);
		cr_assert_eq(h->misc, PERF_RECORD_MISC_USER);
		cr_assert_eq(u32_at(rec, 8), 10);
		cr_assert_eq(u32_at(rec, 12), 11);
		cr_assert_eq(u64_at(rec, 16), 0x400000);
		cr_assert_eq(u64_at(rec, 24), 0x2000);
		cr_assert_eq(u64_at(rec, 32), 0x1000);
		cr_assert_str_eq((const char *)rec + 40, long_path);
		cr_assert_eq(body_end, 40 + 40, "35 characters, a NUL, padded to 40");
		break;
	case B_MMAP2:
		cr_assert_eq(h->type, PERF_RECORD_MMAP2);
		cr_assert_eq(u64_at(rec, 16), 0x7f0000000000);
		cr_assert_eq(u64_at(rec, 24), 0x21000);
		cr_assert_eq(u64_at(rec, 32), 0x3000);
		cr_assert_eq(u32_at(rec, 40), 8);
		cr_assert_eq(u32_at(rec, 44), 3);
		cr_assert_eq(u64_at(rec, 48), 123456);
		cr_assert_eq(u64_at(rec, 56), 0);
		cr_assert_eq(u32_at(rec, 64), 5);
		cr_assert_eq(u32_at(rec, 68), 2);
		cr_assert_str_eq((const char *)rec + 72, long_path);
		cr_assert_eq(body_end, 72 + 40);
		break;
	case B_COMM:
		cr_assert_eq(h->type, PERF_RECORD_COMM);
		cr_assert_eq(h->misc, PERF_RECORD_MISC_COMM_EXEC);
		cr_assert_eq(u32_at(rec, 8), 10);
		cr_assert_eq(u32_at(rec, 12), 11);
		cr_assert_str_eq((const char *)rec + 16, "a-very-long-thr", "the kernel's 15");
		cr_assert_eq(body_end, 16 + 16);
		break;
	case B_FORK:
	case B_EXIT:
		cr_assert_eq(h->type, kind == B_FORK ? PERF_RECORD_FORK : PERF_RECORD_EXIT);
		cr_assert_eq(u32_at(rec, 8), 10);
		cr_assert_eq(u32_at(rec, 12), 9);
		cr_assert_eq(u32_at(rec, 16), 12);
		cr_assert_eq(u32_at(rec, 20), 11);
		cr_assert_eq(u64_at(rec, 24), kind == B_FORK ? 777 : 778);
		cr_assert_eq(body_end, 32);
		break;
	case B_ITRACE_START:
		cr_assert_eq(h->type, PERF_RECORD_ITRACE_START);
		cr_assert_eq(u32_at(rec, 8), 10);
		cr_assert_eq(u32_at(rec, 12), 11);
		cr_assert_eq(body_end, 16);
		break;
	case B_AUX:
		cr_assert_eq(h->type, PERF_RECORD_AUX);
		cr_assert_eq(u64_at(rec, 8), 0x4000);
		cr_assert_eq(u64_at(rec, 16), 0x1230);
		cr_assert_eq(u64_at(rec, 24), PERF_AUX_FLAG_TRUNCATED);
		cr_assert_eq(body_end, 32);
		break;
	case B_SWITCH:
		cr_assert_eq(h->type, PERF_RECORD_SWITCH);
		cr_assert_eq(h->misc,
			     PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		cr_assert_eq(body_end, 8);
		break;
	case B_SWITCH_CPU_WIDE:
		cr_assert_eq(h->type, PERF_RECORD_SWITCH_CPU_WIDE);
		cr_assert_eq(h->misc, PERF_RECORD_MISC_SWITCH_OUT);
		cr_assert_eq(u32_at(rec, 8), 20);
		cr_assert_eq(u32_at(rec, 12), 21);
		cr_assert_eq(body_end, 16);
		break;
	default:
		break;
	}
}

Test(perf_data_pt, builders_lay_out_every_trailer)
{
	const struct rv_synth_id id = {
		.pid = 0x11, .tid = 0x22, .cpu = 3, .time = 0x123456789, .id = 0xabc
	};
	uint8_t buf[8192];

	for (int kind = 0; kind < B_NR; kind++) {
		/* all 64 trailers, and bits that never reach a trailer */
		for (uint64_t bits = 0; bits <= 64; bits++) {
			struct rv_synth s = { .sample_id_all = bits < 64 };
			uint64_t type = 0;
			size_t size;

			for (int k = 0, b = 0; k < 20 && b < 6; k++)
				if (TRAILER_TYPES & (1ULL << k) && (bits >> b++) & 1)
					type |= 1ULL << k;
			s.sample_type =
				type | PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
			if (bits == 64)
				s.sample_type = TRAILER_TYPES; /* without sample_id_all */
			memset(buf, 0xa5, sizeof(buf));
			size = build((enum builder_kind)kind, &s, buf, sizeof(buf), &id);
			cr_assert_gt(size, 0);
			cr_assert_eq(size % 8, 0);
			cr_assert_eq(header_of(buf)->size, size);
			cr_assert_eq(buf[size], 0xa5, "nothing past the record");
			check_body((enum builder_kind)kind, buf,
				   size - check_trailer(buf, size, &s, &id));
		}
	}
}

Test(perf_data_pt, builders_never_overrun_a_short_buffer)
{
	const struct rv_synth s = { .sample_type = TRAILER_TYPES, .sample_id_all = true };
	const struct rv_synth_id id = { .pid = 1, .tid = 2, .cpu = 3, .time = 4, .id = 5 };
	uint8_t full[8192], buf[8192];

	for (int kind = 0; kind < B_NR; kind++) {
		size_t size = build((enum builder_kind)kind, &s, full, sizeof(full), &id);

		for (size_t cap = 0; cap < size; cap++) {
			memset(buf, 0xa5, sizeof(buf));
			cr_assert_eq(build((enum builder_kind)kind, &s, buf, cap, &id), 0,
				     "builder %d in %zu of %zu bytes", kind, cap, size);
			for (size_t k = cap; k < sizeof(buf); k++)
				cr_assert_eq(buf[k], 0xa5, "builder %d wrote byte %zu of %zu", kind,
					     k, cap);
		}
		cr_assert_eq(build((enum builder_kind)kind, &s, buf, size, &id), size);
		cr_assert_eq(memcmp(buf, full, size), 0);
	}
	cr_assert_eq(rv_synth_finished_round(buf, 7), 0);
	cr_assert_eq(rv_synth_finished_round(buf, 8), 8);
	cr_assert_eq(header_of(buf)->type, RV_PERF_RECORD_FINISHED_ROUND);
	cr_assert_eq(rv_synth_finished_init(buf, 8), 8);
	cr_assert_eq(header_of(buf)->type, RV_PERF_RECORD_FINISHED_INIT);
	cr_assert_eq(header_of(buf)->size, 8);
}

Test(perf_data_pt, builders_edge_cases)
{
	const struct rv_synth s = { .sample_type = TRAILER_TYPES, .sample_id_all = true };
	char name[PATH_MAX];
	uint8_t buf[4096 + PATH_MAX];
	size_t size;

	/* 4096 + PATH_MAX is enough for the longest path and the whole trailer */
	memset(name, 'x', sizeof(name) - 1);
	name[0] = '/';
	name[sizeof(name) - 1] = '\0';
	size = rv_synth_mmap2(&s, buf, sizeof(buf), 1, 1, 0, 1, 0, 0, 0, 0, 5, 2, name, 0, NULL);
	cr_assert_gt(size, 0);
	cr_assert_eq(size, 72 + PATH_MAX + 48);
	/* a NULL id gives a trailer of zeros */
	for (size_t k = size - 48; k < size; k++)
		cr_assert_eq(buf[k], 0);
	/* the build-id form of MMAP2 is not what this builder lays out */
	cr_assert_eq(rv_synth_mmap2(&s, buf, sizeof(buf), 1, 1, 0, 1, 0, 0, 0, 0, 5, 2, "/x",
				    PERF_RECORD_MISC_MMAP_BUILD_ID, NULL),
		     0);
	/* switching in has no preempt flag, even when asked */
	cr_assert_gt(rv_synth_switch(&s, buf, sizeof(buf), false, true, NULL), 0);
	cr_assert_eq(header_of(buf)->misc, 0);
	cr_assert_gt(rv_synth_comm(&s, buf, sizeof(buf), 1, 1, "x", false, NULL), 0);
	cr_assert_eq(header_of(buf)->misc, 0);
	cr_assert_eq(header_of(buf)->size, 16 + 8 + 48);
	cr_assert_eq(rv_synth_comm(&s, NULL, 100, 1, 1, "x", false, NULL), 0);
}

/* ---- the parsers, on records laid out by hand ---- */

struct hand_record {
	uint64_t words[64];
};

static const struct perf_event_header *hand_header(struct hand_record *r, uint32_t type,
						   uint16_t misc, uint16_t size)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = size };

	memcpy(r->words, &h, sizeof(h));
	return (const struct perf_event_header *)(const void *)r->words;
}

/* An Intel PT AUXTRACE_INFO as perf's intel_pt_info_fill writes it, with
 * priv[k] = 1000 + k and `nr_priv` private words. */
static const struct perf_event_header *hand_info(struct hand_record *r, size_t nr_priv,
						 const char *filter)
{
	size_t filter_bytes = filter ? (strlen(filter) + 1 + 7) / 8 * 8 : 0;
	uint32_t type = RV_PERF_AUXTRACE_INTEL_PT;

	memset(r, 0, sizeof(*r));
	memcpy((uint8_t *)r->words + 8, &type, 4);
	for (size_t k = 0; k < nr_priv && k < 16; k++)
		r->words[2 + k] = 1000 + k; /* priv[16] is the filter's length */
	if (filter) {
		r->words[2 + 16] = strlen(filter);
		memcpy(&r->words[2 + 17], filter, strlen(filter));
	}
	return hand_header(r, RV_PERF_RECORD_AUXTRACE_INFO, 0,
			   (uint16_t)(16 + 8 * nr_priv + filter_bytes));
}

Test(perf_data_pt, intel_pt_info_of_every_perf_version)
{
	struct hand_record r;
	struct rv_intel_pt_info info;
	struct rv_error err = { 0 };
	const struct perf_event_header *h;

	/* perf 4.1 wrote 10 words, 4.3 added MTC..CYC, 4.6 the ratio, 4.10 the filter */
	for (size_t nr = 9; nr <= RV_INTEL_PT_PRIV_MAX; nr++) {
		h = hand_info(&r, nr, NULL);
		cr_assert_eq(rv_intel_pt_info_parse(h, &info, &err), 0, "%zu words: %s", nr,
			     err.message);
		cr_assert_eq(info.nr_priv, nr);
		cr_assert_eq(info.pmu_type, 1000);
		cr_assert_eq(info.time_shift, 1001);
		cr_assert_eq(info.snapshot_mode, 1008);
		cr_assert_eq(info.per_cpu_mmaps, nr > 9 ? 1009 : 0);
		cr_assert_eq(info.cyc_bit, nr > 14 ? 1014 : 0);
		cr_assert_eq(info.max_non_turbo_ratio, nr > 15 ? 1015 : 0);
		cr_assert_null(info.filter);
	}
	h = hand_info(&r, 8, NULL);
	cr_assert_lt(rv_intel_pt_info_parse(h, &info, &err), 0, "perf needs 9 words");
	h = hand_info(&r, RV_INTEL_PT_PRIV_MAX, "filter main @ /bin/ls");
	cr_assert_eq(rv_intel_pt_info_parse(h, &info, &err), 0, "%s", err.message);
	cr_assert_str_eq(info.filter, "filter main @ /bin/ls");
	cr_assert_eq(info.nr_priv, RV_INTEL_PT_PRIV_MAX, "the string is not a private word");
	/* a filter longer than its record, or without its NUL */
	r.words[2 + 16] = 1000;
	cr_assert_lt(rv_intel_pt_info_parse(h, &info, &err), 0);
	cr_assert_not_null(strstr(err.message, "filter"), "%s", err.message);
	h = hand_info(&r, RV_INTEL_PT_PRIV_MAX, "12345678");
	r.words[2 + 16] = 16;
	cr_assert_lt(rv_intel_pt_info_parse(h, &info, &err), 0);
	/* another kind of trace */
	h = hand_info(&r, RV_INTEL_PT_PRIV_MAX, NULL);
	((uint8_t *)r.words)[8] = 3;
	cr_assert_eq(rv_intel_pt_info_parse(h, &info, &err), -ENOTSUP);
	cr_assert_lt(rv_intel_pt_info_parse(NULL, &info, &err), 0);
	h = hand_header(&r, PERF_RECORD_AUX, 0, 32);
	cr_assert_lt(rv_intel_pt_info_parse(h, &info, &err), 0);
	for (uint16_t size = 0; size < 16; size += 4) {
		h = hand_header(&r, RV_PERF_RECORD_AUXTRACE_INFO, 0, size);
		cr_assert_lt(rv_intel_pt_info_parse(h, &info, &err), 0);
	}
}

Test(perf_data_pt, parsers_check_every_length)
{
	struct hand_record r;
	struct rv_error err = { 0 };
	struct rv_perf_auxtrace a;
	struct rv_perf_time_conv tc;
	struct rv_perf_aux aux;
	struct rv_perf_itrace_start it;
	struct rv_perf_switch sw;
	const struct perf_event_header *h;

	memset(&r, 0, sizeof(r));
	r.words[1] = 0x1008;
	r.words[2] = 0x200;
	r.words[3] = 0xfeed;
	r.words[4] = 2 | (300ULL << 32);
	r.words[5] = 1;
	h = hand_header(&r, RV_PERF_RECORD_AUXTRACE, 0, 48);
	cr_assert_eq(rv_perf_auxtrace_parse(h, &a, &err), 0, "%s", err.message);
	cr_assert_eq(a.size, 0x1008);
	cr_assert_eq(a.offset, 0x200);
	cr_assert_eq(a.reference, 0xfeed);
	cr_assert_eq(a.idx, 2);
	cr_assert_eq(a.tid, 300);
	cr_assert_eq(a.cpu, 1);
	for (uint16_t size = 0; size < 48; size += 4) {
		h = hand_header(&r, RV_PERF_RECORD_AUXTRACE, 0, size);
		cr_assert_lt(rv_perf_auxtrace_parse(h, &a, &err), 0);
	}

	/* TIME_CONV: perf 4.x's 32 bytes, perf 5.12's 56 */
	memset(&r, 0, sizeof(r));
	r.words[1] = 31;
	r.words[2] = 1789569706;
	r.words[3] = 0xfffffff863439b91ULL;
	r.words[4] = 0x100000000ULL;
	r.words[5] = 0xffffffff;
	r.words[6] = 0x0101;
	h = hand_header(&r, RV_PERF_RECORD_TIME_CONV, 0, 56);
	cr_assert_eq(rv_perf_time_conv_parse(h, &tc, &err), 0);
	cr_assert_eq(tc.time_cycles, 0x100000000ULL);
	cr_assert_eq(tc.time_mask, 0xffffffff);
	cr_assert(tc.cap_user_time_zero && tc.cap_user_time_short);
	h = hand_header(&r, RV_PERF_RECORD_TIME_CONV, 0, 32);
	cr_assert_eq(rv_perf_time_conv_parse(h, &tc, &err), 0);
	cr_assert_eq(tc.time_shift, 31);
	cr_assert_eq(tc.time_mult, 1789569706);
	cr_assert_eq(tc.time_zero, 0xfffffff863439b91ULL);
	cr_assert_eq(tc.time_mask, 0, "an old record has no mask");
	cr_assert(tc.cap_user_time_zero && !tc.cap_user_time_short);
	for (uint16_t size = 0; size < 32; size += 8) {
		h = hand_header(&r, RV_PERF_RECORD_TIME_CONV, 0, size);
		cr_assert_lt(rv_perf_time_conv_parse(h, &tc, &err), 0);
	}

	memset(&r, 0, sizeof(r));
	r.words[1] = 0x40;
	r.words[2] = 0x80;
	r.words[3] = PERF_AUX_FLAG_OVERWRITE;
	h = hand_header(&r, PERF_RECORD_AUX, 0, 32);
	cr_assert_eq(rv_perf_aux_parse(h, &aux, &err), 0);
	cr_assert_eq(aux.aux_offset, 0x40);
	cr_assert_eq(aux.aux_size, 0x80);
	cr_assert_eq(aux.flags, PERF_AUX_FLAG_OVERWRITE);
	for (uint16_t size = 0; size < 32; size += 8) {
		h = hand_header(&r, PERF_RECORD_AUX, 0, size);
		cr_assert_lt(rv_perf_aux_parse(h, &aux, &err), 0);
	}
	h = hand_header(&r, PERF_RECORD_ITRACE_START, 0, 32);
	cr_assert_lt(rv_perf_aux_parse(h, &aux, &err), 0, "not an AUX record");

	r.words[1] = 5 | (6ULL << 32);
	h = hand_header(&r, PERF_RECORD_ITRACE_START, 0, 16);
	cr_assert_eq(rv_perf_itrace_start_parse(h, &it, &err), 0);
	cr_assert_eq(it.pid, 5);
	cr_assert_eq(it.tid, 6);
	h = hand_header(&r, PERF_RECORD_ITRACE_START, 0, 12);
	cr_assert_lt(rv_perf_itrace_start_parse(h, &it, &err), 0);

	h = hand_header(&r, PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT, 16);
	cr_assert_eq(rv_perf_switch_parse(h, &sw, &err), 0);
	cr_assert(sw.out && !sw.preempt && sw.cpu_wide);
	cr_assert_eq(sw.next_prev_pid, 5);
	cr_assert_eq(sw.next_prev_tid, 6);
	h = hand_header(&r, PERF_RECORD_SWITCH_CPU_WIDE, 0, 8);
	cr_assert_lt(rv_perf_switch_parse(h, &sw, &err), 0);
	h = hand_header(&r, PERF_RECORD_SWITCH,
			PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, 8);
	cr_assert_eq(rv_perf_switch_parse(h, &sw, &err), 0);
	cr_assert(sw.out && sw.preempt && !sw.cpu_wide);
	cr_assert_eq(sw.next_prev_pid, UINT32_MAX);
	h = hand_header(&r, PERF_RECORD_COMM, 0, 16);
	cr_assert_lt(rv_perf_switch_parse(h, &sw, &err), 0);
	cr_assert_lt(rv_perf_switch_parse(NULL, &sw, &err), 0);
}

/* ---- TSC and perf time ---- */

Test(perf_data_pt, time_conversions_are_perfs)
{
	static const uint64_t freqs[] = { 1,	      1000,	  1000000,    24000000,
					  100000000,  1200000000, 2400000000, 3999999999,
					  5000000000, 12345678901 };
	/* counters that ran for no time, a second, an hour, ten years */
	static const uint64_t seconds[] = { 0, 1, 3600, 10ULL * 365 * 86400 };

	for (size_t f = 0; f < sizeof(freqs) / sizeof(freqs[0]); f++) {
		for (size_t b = 0; b < sizeof(seconds) / sizeof(seconds[0]); b++) {
			struct rv_perf_time_conv tc;
			uint64_t tsc_at = seconds[b] * freqs[f] + b;
			uint64_t ns_at = 5000000000ULL + seconds[b] * 333333333ULL;
			long double want = 1e9L * (long double)(1ULL << 31) / (long double)freqs[f];
			uint64_t prev = 0;

			rv_perf_time_conv_from_freq(&tc, freqs[f], tsc_at, ns_at);
			cr_assert_eq(rv_perf_tsc_to_time(&tc, tsc_at), ns_at, "%" PRIu64 " Hz",
				     freqs[f]);
			cr_assert_lt(tc.time_mult, 1ULL << 32);
			cr_assert_leq(tc.time_shift, 31);
			cr_assert(tc.cap_user_time_zero && !tc.cap_user_time_short);
			if (tc.time_shift == 31) {
				long double got = (long double)tc.time_mult;

				cr_assert(got - want < 0.51L && want - got < 0.51L,
					  "mult %" PRIu64 " for %" PRIu64 " Hz", tc.time_mult,
					  freqs[f]);
			}
			/* a second later in ticks is a second later in ns, to the tick */
			{
				uint64_t later = rv_perf_tsc_to_time(&tc, tsc_at + freqs[f]);
				uint64_t tick_ns = 1000000000ULL / freqs[f] + 1;

				cr_assert_leq(later - ns_at, 1000000000ULL + tick_ns);
				cr_assert_geq(later - ns_at + tick_ns, 1000000000ULL);
			}
			/* monotonic, and time_to_tsc inverts it to within a tick */
			for (uint64_t k = 0; k < 2000; k++) {
				uint64_t tsc = tsc_at + k * 7919 + (k * k) % 13;
				uint64_t ns = rv_perf_tsc_to_time(&tc, tsc);
				uint64_t back = rv_perf_time_to_tsc(&tc, ns);

				cr_assert_geq(ns, prev);
				prev = ns;
				cr_assert(back <= tsc && tsc - back <= freqs[f] / 1000000000 + 1,
					  "tsc %" PRIu64 " -> %" PRIu64 " ns -> %" PRIu64, tsc, ns,
					  back);
				/* as perf's, the inverse may land a tick early (which
				 * is why perf's intel_pt_tsc_start steps forward) */
				cr_assert_leq(ns - rv_perf_tsc_to_time(&tc, back),
					      1000000000ULL / freqs[f] + 1);
			}
		}
	}
}

Test(perf_data_pt, time_conversion_of_a_short_counter)
{
	struct rv_perf_time_conv tc = {
		.time_shift = 10,
		.time_mult = 1024,
		.time_zero = 100,
		.time_cycles = 0x100000000ULL,
		.time_mask = 0xffffffffULL,
		.cap_user_time_short = true,
	};

	/* a 32-bit counter that read 5 has wrapped past time_cycles */
	cr_assert_eq(rv_perf_tsc_to_time(&tc, 5), 100 + 0x100000005ULL);
	tc.cap_user_time_short = false;
	cr_assert_eq(rv_perf_tsc_to_time(&tc, 5), 105);
	tc.time_mult = 0;
	cr_assert_eq(rv_perf_time_to_tsc(&tc, 500), 0, "no multiplier, no conversion");
}

/* perf's tsc_to_perf_time as rearview spells it (a shift past 63 taken as
 * 63), every product wrapping at 64 bits. */
static uint64_t perf_formula(const struct rv_perf_time_conv *tc, uint64_t tsc)
{
	uint64_t shift = tc->time_shift < 64 ? tc->time_shift : 63;

	if (tc->cap_user_time_short)
		tsc = tc->time_cycles + ((tsc - tc->time_cycles) & tc->time_mask);
	return tc->time_zero + (tsc >> shift) * tc->time_mult +
	       (((tsc & ((1ULL << shift) - 1)) * tc->time_mult) >> shift);
}

/* The conversion worked out once (rv_perf_tsc_conv_prepare) is the formula,
 * wrapping products included, whether it takes the one 128-bit product's
 * high half (high: what a kernel's shift and multiplier give), the product
 * shifted (wide) or the formula's two halves; prepared from no TIME_CONV,
 * it is the identity. */
Test(perf_data_pt, prepared_conversions_are_the_formula)
{
	static const uint64_t shifts[] = { 0, 1, 10, 31, 32, 40, 63, 64, 200 };
	static const uint64_t mults[] = { 0,	      1,	   1024,       1000000000,
					  0xffffffff, 0x123456789, 1ULL << 40, UINT64_MAX };
	static const uint64_t tscs[] = { 0,
					 1,
					 999,
					 1ULL << 31,
					 (1ULL << 32) - 1,
					 22242862301508,
					 1ULL << 62,
					 UINT64_MAX - 5,
					 UINT64_MAX };
	struct rv_perf_time_conv kernel;
	struct rv_perf_tsc_conv c;
	size_t high = 0, wide = 0, narrow = 0;

	for (size_t s = 0; s < sizeof(shifts) / sizeof(shifts[0]); s++) {
		for (size_t m = 0; m < sizeof(mults) / sizeof(mults[0]); m++) {
			for (int cycles_short = 0; cycles_short < 2; cycles_short++) {
				struct rv_perf_time_conv tc = {
					.time_shift = shifts[s],
					.time_mult = mults[m],
					.time_zero = 0xfffff00000000000ULL + s * 77 + m,
					.time_cycles = 0x100000000ULL,
					.time_mask = 0xffffffffULL,
					.cap_user_time_zero = true,
					.cap_user_time_short = cycles_short,
				};

				c = rv_perf_tsc_conv_prepare(&tc);
				high += c.high;
				wide += c.wide && !c.high;
				narrow += !c.wide;
				for (size_t t = 0; t < sizeof(tscs) / sizeof(tscs[0]); t++) {
					uint64_t want = perf_formula(&tc, tscs[t]);

					cr_assert_eq(rv_perf_tsc_conv(&c, tscs[t]), want,
						     "shift %" PRIu64 ", mult %" PRIu64
						     ", short %d, tsc %" PRIu64,
						     shifts[s], mults[m], cycles_short, tscs[t]);
					cr_assert_eq(rv_perf_tsc_to_time(&tc, tscs[t]), want);
				}
			}
		}
	}
	cr_assert_gt(high, 0);
	cr_assert_gt(wide, 0);
	cr_assert_gt(narrow, 0);
	rv_perf_time_conv_from_freq(&kernel, 2400000000ULL, 0, 0);
	cr_assert(rv_perf_tsc_conv_prepare(&kernel).high, "a kernel's conversion is one product");
	c = rv_perf_tsc_conv_prepare(NULL);
	for (size_t t = 0; t < sizeof(tscs) / sizeof(tscs[0]); t++)
		cr_assert_eq(rv_perf_tsc_conv(&c, tscs[t]), tscs[t]);
}

/* ---- writing a PT capture ---- */

/* Straight-line code with a known flow for perf's decoder to walk: two
 * instructions and a return. */
__asm__(".text\n"
	".globl rv_pt_test_leaf\n"
	".type rv_pt_test_leaf, @function\n"
	"rv_pt_test_leaf:\n"
	"\tnop\n"
	"\tnop\n"
	"\tret\n"
	".size rv_pt_test_leaf, .-rv_pt_test_leaf\n");
void rv_pt_test_leaf(void);

/* The mapping of this test program that holds `addr`. */
static void own_mapping(uint64_t addr, uint64_t *start, uint64_t *len, uint64_t *pgoff, char *path,
			size_t path_size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 256];

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, o;
		char perms[8];
		int at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &o, &at) >= 4 &&
		    addr >= s && addr < e && at > 0) {
			*start = s;
			*len = e - s;
			*pgoff = o;
			snprintf(path, path_size, "%s", line + at);
			path[strcspn(path, "\n")] = '\0';
			fclose(f);
			return;
		}
	}
	fclose(f);
	cr_assert_fail("no mapping holds %#" PRIx64, addr);
}

#define PT_PMU_TYPE	 10
#define PT_TSC_HZ	 2400000000ULL
#define PT_TSC_BASE	 1000000000000ULL
#define PT_NS_BASE	 5000000000ULL
#define PT_PID		 4242
#define PT_SECOND_TID	 4243
#define PT_RETURN_TARGET 0x7f0000001234ULL

struct pt_capture {
	char path[256];
	struct rv_perf_time_conv tc;
	struct rv_intel_pt_info info;
	uint64_t leaf, tsc_start;
	uint8_t trace[2][96];
	struct rv_perf_auxtrace aux[2];
	/* every record handed to rv_perf_writer_write, in file order, with
	 * its place among all the records written (NULL: written otherwise) */
	uint8_t *raw[32];
	size_t nr_records;
	uint64_t auxtrace_offsets[2];
};

static void put_packet_ip(uint8_t *trace, size_t *len, uint8_t header, uint64_t ip)
{
	trace[(*len)++] = header;
	for (int i = 0; i < 6; i++)
		trace[(*len)++] = (uint8_t)(ip >> (8 * i));
}

/* CPU 0's trace: PSB+ (MODE.Exec 64-bit, TSC), tracing enabled at the leaf,
 * disabled by its return, which leaves the traced range. CPU 1's: a PSB+ alone. */
static void make_traces(struct pt_capture *pc)
{
	size_t len = 0;

	for (int k = 0; k < 2; k++) {
		len = 0;
		for (int i = 0; i < 8; i++) {
			pc->trace[k][len++] = 0x02;
			pc->trace[k][len++] = 0x82;
		}
		pc->trace[k][len++] = 0x99; /* MODE.Exec: 64-bit */
		pc->trace[k][len++] = 0x01;
		pc->trace[k][len++] = 0x19; /* TSC */
		for (int i = 0; i < 7; i++)
			pc->trace[k][len++] = (uint8_t)(pc->tsc_start >> (8 * i));
		pc->trace[k][len++] = 0x02; /* PSBEND */
		pc->trace[k][len++] = 0x23;
		if (k == 0) {
			put_packet_ip(pc->trace[k], &len, 0x71, pc->leaf);	   /* TIP.PGE */
			put_packet_ip(pc->trace[k], &len, 0x61, PT_RETURN_TARGET); /* TIP.PGD */
		}
		pc->aux[k].size = len;
	}
}

static void write_synth(struct rv_perf_writer *w, struct pt_capture *pc, const void *rec,
			size_t size)
{
	struct rv_error err = { 0 };

	cr_assert_gt(size, 0);
	cr_assert_lt(pc->nr_records, 32);
	pc->raw[pc->nr_records] = malloc(size);
	cr_assert_not_null(pc->raw[pc->nr_records]);
	memcpy(pc->raw[pc->nr_records++], rec, size);
	cr_assert_eq(rv_perf_writer_write(w, rec, &err), 0, "%s", err.message);
}

static void write_other(struct pt_capture *pc)
{
	cr_assert_lt(pc->nr_records, 32);
	pc->raw[pc->nr_records++] = NULL;
}

/* Lays out a capture as `perf record -e intel_pt//u` does: TIME_CONV,
 * AUXTRACE_INFO, synthesized sideband, FINISHED_INIT, then the kernel's
 * records and the AUX area's trace, in rounds. */
static void write_pt_capture(struct pt_capture *pc, const char *path, const char *filter)
{
	static const struct rv_perf_pmu_mapping intel_pmus[] = {
		{ "cpu", 4 },	    { "software", 1 },	 { "msr", PT_PMU_TYPE },
		{ "intel_pt", 99 }, { "tracepoint", 2 }, { "breakpoint", 5 },
	};
	const uint64_t sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				     PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	struct perf_event_attr pt = {
		.type = PT_PMU_TYPE,
		.size = sizeof(pt),
		.config = 0x2401, /* pt, tsc, branch */
		.sample_period = 1,
		.sample_type = sample_type,
		.read_format = PERF_FORMAT_ID,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.enable_on_exec = 1,
		.sample_id_all = 1,
		.exclude_guest = 1,
	};
	struct perf_event_attr dummy = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(dummy),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_period = 1,
		.sample_type = sample_type,
		.read_format = PERF_FORMAT_ID,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.mmap = 1,
		.comm = 1,
		.enable_on_exec = 1,
		.task = 1,
		.sample_id_all = 1,
		.mmap2 = 1,
		.comm_exec = 1,
		.context_switch = 1,
	};
	static const uint64_t pt_ids[] = { 101, 102 }, dummy_ids[] = { 201, 202 };
	const struct rv_synth s = { .sample_type = sample_type, .sample_id_all = true };
	struct rv_synth_id id = { .pid = PT_PID, .tid = PT_PID, .time = PT_NS_BASE, .id = 201 };
	static const char *const argv[] = {
		"perf", "record", "-e", "intel_pt//u", "--", "pt-target"
	};
	struct rv_perf_meta meta = {
		.clockid = -1,
		.cpuid = "GenuineIntel,6,142,10",
		.cpu_desc = "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz",
		.argc = 6,
		.argv = argv,
		.nr_cpus_avail = 4,
		.nr_cpus_online = 4,
		.pmu_mappings = intel_pmus,
		.nr_pmu_mappings = sizeof(intel_pmus) / sizeof(intel_pmus[0]),
	};
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	uint8_t buf[4096 + PATH_MAX];
	uint64_t map_start, map_len, map_pgoff;
	char map_path[PATH_MAX];

	memset(pc, 0, sizeof(*pc));
	snprintf(pc->path, sizeof(pc->path), "%s", path);
	pc->leaf = (uint64_t)(uintptr_t)rv_pt_test_leaf;
	/* 100 ns and 7 ticks in: perf must print the time our conversion gives */
	pc->tsc_start = PT_TSC_BASE + PT_TSC_HZ / 10000000 + 7;
	rv_perf_time_conv_from_freq(&pc->tc, PT_TSC_HZ, PT_TSC_BASE, PT_NS_BASE);
	pc->info = (struct rv_intel_pt_info){
		.pmu_type = PT_PMU_TYPE,
		.time_shift = pc->tc.time_shift,
		.time_mult = pc->tc.time_mult,
		.time_zero = pc->tc.time_zero,
		.cap_user_time_zero = 1,
		.tsc_bit = 0x400,
		.noretcomp_bit = 0x800,
		.have_sched_switch = 2,
		.snapshot_mode = 0,
		.per_cpu_mmaps = 1,
		.mtc_bit = 0x200,
		.mtc_freq_bits = 0x3c000,
		.tsc_ctc_ratio_n = 200,
		.tsc_ctc_ratio_d = 2,
		.cyc_bit = 0x2,
		.max_non_turbo_ratio = 24,
		.filter = filter,
	};
	make_traces(pc);
	pc->aux[0].offset = 0;
	pc->aux[0].reference = pc->tsc_start;
	pc->aux[0].idx = 0;
	pc->aux[0].tid = PT_PID;
	pc->aux[0].cpu = 0;
	pc->aux[1].offset = 0x1000;
	pc->aux[1].reference = pc->tsc_start + 1;
	pc->aux[1].idx = 1;
	pc->aux[1].tid = PT_SECOND_TID;
	pc->aux[1].cpu = 1;
	own_mapping(pc->leaf, &map_start, &map_len, &map_pgoff, map_path, sizeof(map_path));

	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, &pt, "intel_pt//u", pt_ids, 2, &err), 0);
	cr_assert_eq(rv_perf_writer_add_attr(w, &dummy, "dummy:u", dummy_ids, 2, &err), 0);
	cr_assert_eq(rv_perf_writer_write_time_conv(w, &pc->tc, &err), 0, "%s", err.message);
	write_other(pc);
	cr_assert_eq(rv_perf_writer_write_intel_pt_info(w, &pc->info, &err), 0, "%s", err.message);
	write_other(pc);
	write_synth(w, pc, buf,
		    rv_synth_comm(&s, buf, sizeof(buf), PT_PID, PT_PID, "pt-target", true, &id));
	write_synth(w, pc, buf,
		    rv_synth_mmap2(&s, buf, sizeof(buf), PT_PID, PT_PID, map_start, map_len,
				   map_pgoff, 8, 1, 1234, 5, 2, map_path, PERF_RECORD_MISC_USER,
				   &id));
	write_synth(w, pc, buf, rv_synth_finished_init(buf, sizeof(buf)));
	id.time += 10;
	id.id = 101;
	write_synth(w, pc, buf, rv_synth_itrace_start(&s, buf, sizeof(buf), PT_PID, PT_PID, &id));
	id.id = 201;
	write_synth(w, pc, buf,
		    rv_synth_switch_cpu_wide(&s, buf, sizeof(buf), false, false, 0, 0, &id));
	write_synth(w, pc, buf, rv_synth_switch(&s, buf, sizeof(buf), false, false, &id));
	id.time += 10;
	write_synth(w, pc, buf,
		    rv_synth_fork(&s, buf, sizeof(buf), PT_PID, PT_PID, PT_SECOND_TID, PT_PID,
				  id.time, &id));
	id.cpu = 1;
	id.tid = PT_SECOND_TID;
	id.id = 102;
	write_synth(w, pc, buf,
		    rv_synth_itrace_start(&s, buf, sizeof(buf), PT_PID, PT_SECOND_TID, &id));
	id.time = PT_NS_BASE + 200;
	write_synth(w, pc, buf,
		    rv_synth_aux(&s, buf, sizeof(buf), pc->aux[1].offset, pc->aux[1].size, 0, &id));
	id.cpu = 0;
	id.tid = PT_PID;
	id.id = 101;
	write_synth(w, pc, buf,
		    rv_synth_aux(&s, buf, sizeof(buf), 0, pc->aux[0].size, PERF_AUX_FLAG_OVERWRITE,
				 &id));
	id.time += 10;
	id.id = 201;
	write_synth(w, pc, buf, rv_synth_switch(&s, buf, sizeof(buf), true, true, &id));
	write_synth(w, pc, buf,
		    rv_synth_switch_cpu_wide(&s, buf, sizeof(buf), true, true, 0, 0, &id));
	write_synth(w, pc, buf, rv_synth_finished_round(buf, sizeof(buf)));
	for (int k = 0; k < 2; k++) {
		pc->auxtrace_offsets[k] = 104 + rv_perf_writer_data_size(w);
		cr_assert_eq(rv_perf_writer_write_auxtrace(w, &pc->aux[k], pc->trace[k], &err), 0,
			     "%s", err.message);
		write_other(pc);
	}
	id.time += 10;
	write_synth(
		w, pc, buf,
		rv_synth_exit(&s, buf, sizeof(buf), PT_PID, PT_PID, PT_PID, PT_PID, id.time, &id));
	write_synth(w, pc, buf, rv_synth_finished_round(buf, sizeof(buf)));
	cr_assert_eq(rv_perf_writer_finish(w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
}

static void free_pt_capture(struct pt_capture *pc)
{
	for (size_t i = 0; i < pc->nr_records; i++)
		free(pc->raw[i]);
}

/* Reads the capture back: every record as written, the AUXTRACE_INFO, the
 * TIME_CONV and the traces field by field, and the features perf needs. */
static void check_pt_capture(struct rv_perf_reader *r, const struct pt_capture *pc)
{
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	size_t n = 0, k = 0;
	uint64_t size;
	int ret;

	cr_assert_eq(rv_perf_reader_nr_attrs(r), 2);
	cr_assert_eq(rv_perf_reader_attr(r, 0)->attr.type, PT_PMU_TYPE);
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "intel_pt//u");
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		const struct perf_event_header *h = rec.header;

		cr_assert_lt(n, pc->nr_records);
		if (pc->raw[n]) {
			cr_assert_eq(h->size, header_of(pc->raw[n])->size);
			cr_assert_eq(memcmp(h, pc->raw[n], h->size), 0, "record %zu", n);
		} else if (h->type == RV_PERF_RECORD_TIME_CONV) {
			struct rv_perf_time_conv tc;

			cr_assert_eq(rv_perf_time_conv_parse(h, &tc, &err), 0, "%s", err.message);
			cr_assert_eq(memcmp(&tc, &pc->tc, sizeof(tc)), 0);
		} else if (h->type == RV_PERF_RECORD_AUXTRACE_INFO) {
			struct rv_intel_pt_info info;

			cr_assert_eq(rv_intel_pt_info_parse(h, &info, &err), 0, "%s", err.message);
			cr_assert_eq(info.nr_priv, RV_INTEL_PT_PRIV_MAX);
			cr_assert_eq(info.pmu_type, pc->info.pmu_type);
			cr_assert_eq(info.time_zero, pc->info.time_zero);
			cr_assert_eq(info.tsc_ctc_ratio_n, pc->info.tsc_ctc_ratio_n);
			cr_assert_eq(info.max_non_turbo_ratio, pc->info.max_non_turbo_ratio);
			cr_assert_eq(info.mtc_freq_bits, pc->info.mtc_freq_bits);
			if (pc->info.filter && pc->info.filter[0])
				cr_assert_str_eq(info.filter, pc->info.filter);
			else
				cr_assert_null(info.filter);
			cr_assert_eq(h->size % 8, 0);
		} else {
			struct rv_perf_auxtrace a;

			cr_assert_eq(h->type, RV_PERF_RECORD_AUXTRACE);
			cr_assert_lt(k, 2);
			cr_assert_eq(rv_perf_auxtrace_parse(h, &a, &err), 0);
			cr_assert_eq(rec.file_offset, pc->auxtrace_offsets[k]);
			cr_assert_eq(a.size, (pc->aux[k].size + 7) / 8 * 8, "padding counted");
			cr_assert_eq(a.offset, pc->aux[k].offset);
			cr_assert_eq(a.reference, pc->aux[k].reference);
			cr_assert_eq(a.idx, pc->aux[k].idx);
			cr_assert_eq(a.tid, pc->aux[k].tid);
			cr_assert_eq(a.cpu, pc->aux[k].cpu);
			cr_assert_eq(rec.payload_size, a.size);
			cr_assert_eq(memcmp(rec.payload, pc->trace[k], pc->aux[k].size), 0);
			for (uint64_t b = pc->aux[k].size; b < a.size; b++)
				cr_assert_eq(((const uint8_t *)rec.payload)[b], 0);
			k++;
		}
		n++;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_eq(n, pc->nr_records);
	cr_assert_eq(k, 2);

	cr_assert_str_eq(rv_perf_reader_feature_string(r, RV_FEAT_CPUID), "GenuineIntel,6,142,10");
	{
		const uint32_t *cpus = rv_perf_reader_feature_data(r, RV_FEAT_NRCPUS, &size);

		cr_assert_eq(size, 8);
		cr_assert_eq(cpus[0], 4);
		cr_assert_eq(cpus[1], 4);
	}
	/* HEADER_AUXTRACE: perf's index, {nr, {offset, the record's own size}...} */
	{
		const uint8_t *index = rv_perf_reader_feature_data(r, RV_FEAT_AUXTRACE, &size);

		cr_assert_eq(size, 8 + 2 * 16);
		cr_assert_eq(u64_at(index, 0), 2);
		for (int i = 0; i < 2; i++) {
			cr_assert_eq(u64_at(index, 8 + 16 * (size_t)i), pc->auxtrace_offsets[i]);
			cr_assert_eq(u64_at(index, 16 + 16 * (size_t)i), 48);
		}
	}
	/* HEADER_PMU_MAPPINGS: the given machine's, intel_pt at the trace's type */
	{
		const uint8_t *p = rv_perf_reader_feature_data(r, RV_FEAT_PMU_MAPPINGS, &size);
		static const struct {
			const char *name;
			uint32_t type;
		} want[] = { { "cpu", 4 },
			     { "software", 1 },
			     { "tracepoint", 2 },
			     { "breakpoint", 5 },
			     { "intel_pt", PT_PMU_TYPE } };
		size_t at = 4;

		cr_assert_not_null(p);
		cr_assert_eq(u32_at(p, 0), 5);
		for (size_t i = 0; i < 5; i++) {
			uint32_t len = u32_at(p, at + 4);

			cr_assert_eq(u32_at(p, at), want[i].type);
			cr_assert_str_eq((const char *)p + at + 8, want[i].name);
			at += 8 + len;
		}
		cr_assert_eq(at, size);
	}
}

Test(perf_data_pt, written_capture_reads_back_as_written)
{
	char dir[64], path[128];
	struct pt_capture pc;
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };

	make_temp_dir(dir, sizeof(dir), "rv-perf-pt");
	snprintf(path, sizeof(path), "%s/pt.data", dir);
	write_pt_capture(&pc, path, "filter 0x1000/0x200@/bin/true");
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	cr_assert_not(rv_perf_reader_is_pipe(r));
	check_pt_capture(r, &pc);
	rv_perf_reader_free(r);
	free_pt_capture(&pc);
	remove_tree(dir);
}

/* perf's complaints go to stderr. */
static void check_perf_quiet(const char *path, const char *perf_command)
{
	static const char *const bad[] = { "arning", "rror",	"ailed",   "nexpected",
					   "Can't",  "corrupt", "invalid", "unsupported" };
	int status;
	char *err = run_command(&status, NULL, "perf %s --force -i '%s' 2>&1 >/dev/null",
				perf_command, path);

	cr_assert_eq(status, 0, "perf %s failed on %s:\n%s", perf_command, path, err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_null(strstr(err, bad[i]), "perf %s complains about %s:\n%s", perf_command,
			       path, err);
	free(err);
}

Test(perf_data_pt, perf_reads_the_written_capture_as_we_do, .timeout = 120)
{
	char dir[64], path[128], cmd[256];
	struct pt_capture pc;
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	struct perf_dump d;
	struct comparison c;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-perf-pt");
	snprintf(path, sizeof(path), "%s/pt.data", dir);
	write_pt_capture(&pc, path, "filter 0x1000/0x200@/bin/true");
	check_perf_quiet(path, "report -D");
	check_perf_quiet(path, "report --header-only");
	snprintf(cmd, sizeof(cmd), "perf report -D --force -i '%s' 2>/dev/null", path);
	dump_with_perf(&d, "our capture", cmd);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	compare_with_dump(r, &d, 0, &c);
	cr_assert_eq(c.auxtrace, 2);
	cr_assert(c.saw_info && c.saw_time_conv);
	cr_assert_eq(c.sample_ids_checked, (long)pc.nr_records - 5 - 2, "every kernel record");
	print_summary("written capture", r, &d, &c);
	rv_perf_reader_free(r);
	dump_free(&d);
	free_pt_capture(&pc);
	remove_tree(dir);
}

/* perf's own Intel PT decoder follows the flow the trace encodes through our
 * sideband: tracing starts at the leaf, three instructions, the return ends
 * it; at the time our TIME_CONV gives the trace's TSC. */
Test(perf_data_pt, perf_decodes_the_written_trace, .timeout = 120)
{
	char dir[64], path[128], when[64], hex[64];
	struct pt_capture pc;
	uint64_t ns;
	int status;
	char *out, *line, *save = NULL;
	int nr_lines = 0;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-perf-pt");
	snprintf(path, sizeof(path), "%s/pt.data", dir);
	write_pt_capture(&pc, path, NULL);
	ns = rv_perf_tsc_to_time(&pc.tc, pc.tsc_start);
	snprintf(when, sizeof(when), " %" PRIu64 ".%09" PRIu64 ":", ns / 1000000000,
		 ns % 1000000000);

	out = run_command(&status, NULL,
			  "perf script --force --ns --itrace=be -F comm,tid,time,ip,sym,addr,flags "
			  "-i '%s' 2>&1",
			  path);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_null(strstr(out, "error"), "perf's decoder reports an error:\n%s", out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cr_assert_not_null(strstr(line, "pt-target"), "%s", line);
		cr_assert_not_null(strstr(line, when), "want%s in: %s", when, line);
		if (nr_lines == 0) {
			snprintf(hex, sizeof(hex), "=> %16" PRIx64 " rv_pt_test_leaf", pc.leaf);
			cr_assert_not_null(strstr(line, "tr strt"), "%s", line);
		} else {
			snprintf(hex, sizeof(hex), "%" PRIx64 " rv_pt_test_leaf =>", pc.leaf + 2);
			cr_assert_not_null(strstr(line, "tr end"), "%s", line);
			cr_assert_not_null(strstr(line, "return"), "%s", line);
			cr_assert_not_null(strstr(line, "7f0000001234"), "%s", line);
		}
		cr_assert_not_null(strstr(line, hex), "want '%s' in: %s", hex, line);
		nr_lines++;
	}
	cr_assert_eq(nr_lines, 2, "a start and an end of tracing");
	free(out);

	out = run_command(&status, NULL,
			  "perf script --force --ns --itrace=i1i -F tid,ip,sym -i '%s' 2>&1", path);
	cr_assert_eq(status, 0, "%s", out);
	nr_lines = 0;
	save = NULL;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		snprintf(hex, sizeof(hex), "%" PRIx64 " rv_pt_test_leaf",
			 pc.leaf + (uint64_t)nr_lines);
		cr_assert_not_null(strstr(line, hex), "instruction %d: want '%s' in: %s", nr_lines,
				   hex, line);
		nr_lines++;
	}
	cr_assert_eq(nr_lines, 3, "nop, nop, ret");
	free(out);
	free_pt_capture(&pc);
	remove_tree(dir);
}

/* `perf inject -o -` turns our capture into a pipe stream, AUXTRACE payloads
 * inline: read from standard input, it must agree with perf's dump and
 * still carry our traces. */
Test(perf_data_pt, perf_inject_pipe_of_the_written_capture, .timeout = 120)
{
	char dir[64], path[128], piped[128], cmd[512];
	struct pt_capture pc;
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	struct perf_dump d;
	struct comparison c;
	int status, ret, k = 0;
	char *out;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-perf-pt");
	snprintf(path, sizeof(path), "%s/pt.data", dir);
	snprintf(piped, sizeof(piped), "%s/piped.data", dir);
	write_pt_capture(&pc, path, NULL);
	out = run_command(&status, NULL, "perf inject --force -i '%s' -o - > '%s' 2>&1", path,
			  piped);
	cr_assert_eq(status, 0, "perf inject: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "cat '%s' | perf report -D --force -i - 2>/dev/null", piped);
	dump_with_perf(&d, "perf inject's pipe", cmd);
	cr_assert_eq(open_via_stdin_pipe(&r, piped, &err), 0, "%s", err.message);
	cr_assert(rv_perf_reader_is_pipe(r));
	compare_with_dump(r, &d, 16, &c);
	cr_assert_eq(c.auxtrace, 2);
	cr_assert_eq(d.counts[RV_PERF_RECORD_HEADER_ATTR], 2);
	print_summary("perf inject -o -", r, &d, &c);
	rv_perf_reader_free(r);

	cr_assert_eq(rv_perf_reader_open(&r, piped, &err), 0, "%s", err.message);
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "intel_pt//u");
	cr_assert_eq(rv_perf_reader_attr(r, 0)->ids[1], 102);
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		if (rec.header->type != RV_PERF_RECORD_AUXTRACE)
			continue;
		cr_assert_lt(k, 2);
		cr_assert_eq(memcmp(rec.payload, pc.trace[k], pc.aux[k].size), 0);
		k++;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_eq(k, 2);
	rv_perf_reader_free(r);
	dump_free(&d);
	free_pt_capture(&pc);
	remove_tree(dir);
}

Test(perf_data_pt, writer_insists_on_what_perf_needs)
{
	char dir[64], path[128], filter[5000];
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	struct rv_intel_pt_info info = { .pmu_type = PT_PMU_TYPE };
	struct rv_perf_auxtrace a = { .size = 8 };

	make_temp_dir(dir, sizeof(dir), "rv-perf-pt");
	snprintf(path, sizeof(path), "%s/rules.data", dir);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0);
	cr_assert_lt(rv_perf_writer_write_auxtrace(w, &a, "01234567", &err), 0);
	cr_assert_not_null(strstr(err.message, "AUXTRACE_INFO"), "%s", err.message);
	info.pmu_type = PERF_TYPE_SOFTWARE;
	cr_assert_lt(rv_perf_writer_write_intel_pt_info(w, &info, &err), 0);
	cr_assert_not_null(strstr(err.message, "dynamic"), "%s", err.message);
	memset(filter, 'f', sizeof(filter) - 1);
	filter[sizeof(filter) - 1] = '\0';
	info.pmu_type = PT_PMU_TYPE;
	info.filter = filter;
	cr_assert_lt(rv_perf_writer_write_intel_pt_info(w, &info, &err), 0);
	info.filter = "";
	cr_assert_eq(rv_perf_writer_write_intel_pt_info(w, &info, &err), 0, "%s", err.message);
	cr_assert_lt(rv_perf_writer_write_intel_pt_info(w, &info, &err), 0, "one per capture");
	cr_assert_eq(rv_perf_writer_write_auxtrace(w, &a, "01234567", &err), 0, "%s", err.message);
	cr_assert_lt(rv_perf_writer_write_auxtrace(w, NULL, "x", &err), 0);
	a.size = 4;
	cr_assert_lt(rv_perf_writer_write_auxtrace(w, &a, NULL, &err), 0, "data missing");
	cr_assert_lt(rv_perf_writer_write_time_conv(w, NULL, &err), 0);
	rv_perf_writer_free(w);
	remove_tree(dir);
}

/* MMAP and MMAP2 read back as built; a record cut short, or whose name has
 * no NUL inside it, or of another type, is refused. */
Test(perf_data_pt, mmap_records_parse_as_built)
{
	struct rv_synth s = { .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
			      .sample_id_all = true };
	struct rv_synth_id id = { .pid = 10, .tid = 11, .time = 99 };
	uint8_t buf[512];
	struct perf_event_header *h = (struct perf_event_header *)buf;
	struct rv_perf_mmap m;
	size_t size;

	size = rv_synth_mmap2(&s, buf, sizeof(buf), 10, 11, 0x7f0000001000, 0x21000, 0x3000, 8, 3,
			      42, 5 /* PROT_READ | PROT_EXEC */, 2, "/lib/libc.so.6", 0, &id);
	cr_assert_gt(size, 0);
	cr_assert_eq(rv_perf_mmap_parse(h, &m), 0);
	cr_assert_eq(m.pid, 10);
	cr_assert_eq(m.tid, 11);
	cr_assert_eq(m.start, 0x7f0000001000);
	cr_assert_eq(m.len, 0x21000);
	cr_assert_eq(m.pgoff, 0x3000);
	cr_assert(m.executable);
	cr_assert_str_eq(m.filename, "/lib/libc.so.6");

	size = rv_synth_mmap2(&s, buf, sizeof(buf), 1, 1, 0x1000, 0x1000, 0, 0, 0, 0,
			      1 /* PROT_READ */, 2, "/data", 0, &id);
	cr_assert_eq(rv_perf_mmap_parse(h, &m), 0);
	cr_assert(!m.executable, "a mapping without PROT_EXEC");

	size = rv_synth_mmap(&s, buf, sizeof(buf), 7, 8, 0x400000, 0x2000, 0, "/bin/prog", 0, &id);
	cr_assert_eq(rv_perf_mmap_parse(h, &m), 0);
	cr_assert_eq(m.pid, 7);
	cr_assert_eq(m.start, 0x400000);
	cr_assert(m.executable, "MMAP without MMAP_DATA is code");
	cr_assert_str_eq(m.filename, "/bin/prog");
	size = rv_synth_mmap(&s, buf, sizeof(buf), 7, 8, 0x600000, 0x2000, 0, "/bin/prog",
			     PERF_RECORD_MISC_MMAP_DATA, &id);
	cr_assert_eq(rv_perf_mmap_parse(h, &m), 0);
	cr_assert(!m.executable, "MMAP with MMAP_DATA is data");

	/* too short for the fields and a one-byte name */
	h->size = 40;
	cr_assert_eq(rv_perf_mmap_parse(h, &m), -EINVAL);
	/* a name whose NUL is past the record's end */
	size = rv_synth_mmap(&s, buf, sizeof(buf), 7, 8, 0x400000, 0x2000, 0,
			     "/a/name/of/some/length", 0, NULL);
	h->size = 48; /* 8 bytes of the name, no NUL */
	cr_assert_eq(rv_perf_mmap_parse(h, &m), -EINVAL);
	h->size = (uint16_t)size;
	cr_assert_eq(rv_perf_mmap_parse(h, &m), 0);
	h->type = PERF_RECORD_COMM;
	cr_assert_eq(rv_perf_mmap_parse(h, &m), -EINVAL);
}
