/* decoder.c: a capture opened once, its kind recognised once; see
 * decoder.h. */
#define RV_LOG_DOMAIN "decode"
#include "decode/decoder.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "capture/auxtrace.h"
#include "capture/marks.h"
#include "capture/perf_data.h"
#include "symbolize/kernel_syms.h"
#include "util/count_text.h"
#include "util/log.h"

/* Records read ahead, at most, for an AUXTRACE_INFO that says a pipe-mode
 * capture without names is Intel PT's: perf writes it among the first. */
#define PT_SNIFF_RECORDS 256
/* Records read ahead, at most, for the kernel's MMAP: synthesized before
 * the first sample. */
#define KERNEL_MMAP_RECORDS 4096

struct rv_decoder {
	struct rv_decoder_options options;
	enum rv_capture_kind kind;
	struct rv_symbolizer *symbolizer;
	struct rv_perf_reader *reader; /* perf.data kinds */
	struct rv_sample_decoder *samples;
	struct rv_fn_decoder *functions;
	struct rv_pt_capture *pt;
	struct rv_perf_script *perf_script;
	FILE *text; /* perf script's input */
	uint64_t first_time;
	struct rv_pt_stats pt_stats;
	uint64_t packets;
	struct rv_raw_pt_coverage coverage; /* raw PT */
	char undecoded[sizeof(((struct rv_error *)0)->message)];
	char damage[sizeof(((struct rv_error *)0)->message)];
};

enum rv_capture_kind rv_decoder_kind(const struct rv_decoder *d)
{
	return d->kind;
}

struct rv_symbolizer *rv_decoder_symbolizer(struct rv_decoder *d)
{
	return d->symbolizer;
}

uint64_t rv_decoder_first_time(const struct rv_decoder *d)
{
	return d->first_time;
}

/* ---- what a perf.data is ---- */

static bool has_pt_event(const struct rv_perf_reader *r)
{
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const char *name = rv_perf_reader_attr(r, i)->name;

		if (name && !strncmp(name, "intel_pt", 8))
			return true;
	}
	return false;
}

/* An AUXTRACE_INFO among the first records (then back to the first). */
static bool has_auxtrace_info(struct rv_perf_reader *r)
{
	struct rv_perf_record rec;
	struct rv_error ignored = { 0 };
	bool found = false;

	for (int i = 0; !found && i < PT_SNIFF_RECORDS; i++) {
		if (rv_perf_reader_next(r, &rec, &ignored) <= 0)
			break;
		found = rec.header->type == RV_PERF_RECORD_AUXTRACE_INFO;
	}
	rv_perf_reader_rewind(r);
	return found;
}

/* An event that takes samples of what ran: not perf's dummy sideband
 * event, not a bpf-output event (rearview's marks), not a PT event. */
static bool has_sampling_event(const struct rv_perf_reader *r)
{
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct perf_event_attr *a = &rv_perf_reader_attr(r, i)->attr;

		if (a->type == PERF_TYPE_SOFTWARE &&
		    (a->config == PERF_COUNT_SW_DUMMY || a->config == PERF_COUNT_SW_BPF_OUTPUT))
			continue;
		if (a->sample_type & (PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN))
			return true;
	}
	return false;
}

static int perf_data_kind(struct rv_perf_reader *r, const char *path, enum rv_capture_kind *kind,
			  struct rv_error *err)
{
	if (rv_fn_decoder_recognises(r))
		*kind = RV_CAPTURE_FUNCTIONS;
	else if (rv_perf_reader_has_feature(r, RV_FEAT_AUXTRACE) || has_pt_event(r) ||
		 has_auxtrace_info(r))
		*kind = RV_CAPTURE_PT;
	else if (has_sampling_event(r))
		*kind = RV_CAPTURE_SAMPLES;
	else
		return rv_error_set(err, ENOTSUP,
				    "'%s' holds no Intel PT trace, no sampling event and no "
				    "function records, only sideband: nothing to decode; record "
				    "it again",
				    path);
	return 0;
}

/* Where kernel names come from (symbolize/kernel_syms.h): the capture's
 * own kallsyms and module list (DIR/kcore_dir/{kallsyms,modules}), else this
 * machine's for a capture just recorded here; the .ko files of the
 * capture's kernel release, where this machine has them; --vmlinux. */
struct kernel_sources {
	char *kallsyms, *modules, *modules_dir;
};

static void kernel_sources_free(struct kernel_sources *k)
{
	free(k->kallsyms);
	free(k->modules);
	free(k->modules_dir);
}

/* The module list beside a capture's kallsyms copy, or NULL. */
static char *modules_beside(const char *kallsyms)
{
	size_t len = kallsyms ? strlen(kallsyms) : 0;
	char *modules;

	if (len < 8 || strcmp(kallsyms + len - 8, "kallsyms") || !(modules = malloc(len)))
		return NULL;
	memcpy(modules, kallsyms, len - 8);
	strcpy(modules + len - 8, "modules");
	if (access(modules, R_OK) == 0)
		return modules;
	free(modules);
	return NULL;
}

/* /lib/modules/RELEASE when it is a directory; release NULL: this
 * machine's. */
static char *modules_dir_of(const char *release)
{
	struct utsname u;
	struct stat st;
	char *dir;

	if (!release && uname(&u) == 0)
		release = u.release;
	if (!release || !*release || strchr(release, '/') ||
	    asprintf(&dir, "/lib/modules/%s", release) < 0)
		return NULL;
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return dir;
	free(dir);
	return NULL;
}

/* The build id HEADER_BUILD_ID gives the kernel ("[kernel.kallsyms]"): its
 * size, or 0. Entries: perf's build_id_event (a header, pid, 20 bytes of id,
 * their size, 3 reserved) and a NUL-terminated name, header.size long. */
static size_t capture_kernel_build_id(const struct rv_perf_reader *r, uint8_t *id)
{
	uint64_t size = 0, pos = 0;
	const uint8_t *p = rv_perf_reader_feature_data(r, RV_FEAT_BUILD_ID, &size);

	while (p && size - pos >= 36) {
		struct perf_event_header h;
		size_t name_len;

		memcpy(&h, p + pos, sizeof(h));
		if (h.size < 36 || h.size > size - pos)
			break;
		name_len = strnlen((const char *)p + pos + 36, h.size - 36u);
		if (name_len < h.size - 36u &&
		    !strncmp((const char *)p + pos + 36, "[kernel.kallsyms]", 17)) {
			/* the id's size is there when misc says so; else 20 */
			size_t n = (h.misc & (1 << 15)) ? p[pos + 32] : RV_BUILD_ID_MAX;

			if (n > RV_BUILD_ID_MAX)
				n = RV_BUILD_ID_MAX;
			memcpy(id, p + pos + 12, n);
			while (n && !(h.misc & (1 << 15)) && !id[n - 1])
				n--;
			return n;
		}
		pos += h.size;
	}
	return 0;
}

/* Where the capture's kernel text began: the address of perf's kernel
 * MMAP ("[kernel.kallsyms]_text", pid -1), among its first records (then
 * back to the first); 0 when it has none. MMAP: pid, tid, addr, len, pgoff,
 * name; MMAP2 has 32 more bytes before the name. */
static uint64_t capture_kernel_text(struct rv_perf_reader *r)
{
	static const char name[] = "[kernel.kallsyms]";
	struct rv_perf_record rec;
	struct rv_error ignored = { 0 };
	uint64_t text = 0;

	for (int i = 0; !text && i < KERNEL_MMAP_RECORDS; i++) {
		const struct perf_event_header *h;
		size_t at;
		uint32_t pid;

		if (rv_perf_reader_next(r, &rec, &ignored) <= 0)
			break;
		h = rec.header;
		if (h->type != PERF_RECORD_MMAP && h->type != PERF_RECORD_MMAP2)
			continue;
		at = sizeof(*h) + (h->type == PERF_RECORD_MMAP ? 32 : 64);
		if (h->size < at + sizeof(name) - 1)
			continue;
		memcpy(&pid, (const uint8_t *)h + sizeof(*h), sizeof(pid));
		if (pid == UINT32_MAX && !memcmp((const uint8_t *)h + at, name, sizeof(name) - 1))
			memcpy(&text, (const uint8_t *)h + sizeof(*h) + 8, sizeof(text));
	}
	rv_perf_reader_rewind(r);
	return text;
}

/* _text in this machine's /proc/kallsyms; 0 when it hides addresses. */
static uint64_t running_kernel_text(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	uint64_t text = 0;
	char line[512];

	if (!f)
		return 0;
	while (!text && fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, symbol[64];

		if (sscanf(line, "%llx %c %63s", &addr, &type, symbol) == 3 &&
		    !strcmp(symbol, "_text"))
			text = addr;
	}
	fclose(f);
	return text;
}

/* A capture recorded on this machine in this boot (a sampling or uprobe
 * capture kept with --working-directory, decoded later): its build-id list
 * gives the running kernel's, and its kernel text is where the running
 * kernel's is (KASLR places it anew at each boot). Its kernel is then
 * named by /proc/kallsyms, as the run that recorded it named it. */
static bool recorded_in_this_boot(struct rv_perf_reader *r)
{
	uint8_t id[RV_BUILD_ID_MAX], running[RV_BUILD_ID_MAX];
	size_t size = capture_kernel_build_id(r, id);
	uint64_t text;

	if (!size || rv_kernel_running_build_id(running) != size || memcmp(id, running, size))
		return false;
	text = capture_kernel_text(r);
	return text && text == running_kernel_text();
}

static int kernel_sources(const struct rv_decoder_options *o, struct rv_perf_reader *r,
			  struct kernel_sources *k)
{
	memset(k, 0, sizeof(*k));
	if (!o->include_kernel || o->kind == RV_CAPTURE_PERF_SCRIPT || o->kind == RV_CAPTURE_RAW_PT)
		return 0;
	k->kallsyms = rv_pt_capture_probe_kallsyms(o->path);
	k->modules = modules_beside(k->kallsyms);
	if (o->live || (!k->kallsyms && r && recorded_in_this_boot(r))) {
		if (!k->kallsyms && !(k->kallsyms = strdup("/proc/kallsyms")))
			return -ENOMEM;
		if (!k->modules && access("/proc/modules", R_OK) == 0 &&
		    !(k->modules = strdup("/proc/modules")))
			return -ENOMEM;
		k->modules_dir = modules_dir_of(NULL);
	} else if (r) {
		k->modules_dir =
			modules_dir_of(rv_perf_reader_feature_string(r, RV_FEAT_OSRELEASE));
	}
	return 0;
}

/* --vmlinux must be the kernel the capture recorded (its build id, when the
 * capture has one), or for a capture just made here, the running one. */
static int check_vmlinux(const struct rv_decoder_options *o, const struct rv_perf_reader *r,
			 struct rv_error *err)
{
	uint8_t id[RV_BUILD_ID_MAX];
	size_t size = r ? capture_kernel_build_id(r, id) : 0;

	if (!o->vmlinux)
		return 0;
	if (size)
		return rv_vmlinux_check(o->vmlinux, id, size, "the kernel the capture recorded",
					err);
	if (o->live)
		size = rv_kernel_running_build_id(id);
	return rv_vmlinux_check(o->vmlinux, id, size, "the running kernel", err);
}

static unsigned jobs_of(const struct rv_decoder_options *o)
{
	long cpus;

	if (o->jobs)
		return o->jobs;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus > 0 ? (unsigned)cpus : 1;
}

static int open_perf_data(struct rv_decoder *d, struct rv_error *err)
{
	const struct rv_decoder_options *o = &d->options;
	int ret = perf_data_kind(d->reader, o->path, &d->kind, err);
	if (ret)
		return ret;
	switch (d->kind) {
	case RV_CAPTURE_FUNCTIONS:
		d->first_time = rv_marks_first_time(d->reader);
		return rv_fn_decoder_open(&d->functions, d->reader, d->symbolizer, err);
	case RV_CAPTURE_SAMPLES:
		d->first_time = rv_marks_first_time(d->reader);
		return rv_sample_decoder_open(&d->samples, d->reader, d->symbolizer, err);
	default:
		break;
	}
	{
		struct rv_pt_capture_options co = {
			.path = o->path,
			.vmlinux = o->vmlinux,
			.include_kernel = o->include_kernel,
			.jobs = jobs_of(o),
			.chunk_bytes = o->chunk_bytes,
			.decoder = o->decoder,
			.progress = o->progress,
			.reader = d->reader,
		};
		struct rv_pt_capture_info info;

		ret = rv_pt_capture_open(&d->pt, &co, d->symbolizer, err);
		if (ret)
			return ret;
		rv_pt_capture_info(d->pt, &info);
		d->first_time = info.first_time;
	}
	return 0;
}

static int open_perf_script(struct rv_decoder *d, struct rv_error *err)
{
	const char *path = d->options.path;
	bool in = !strcmp(path, "-");

	d->text = in ? stdin : fopen(path, "r");
	if (!d->text)
		return rv_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
	return rv_perf_script_open(&d->perf_script, d->text, in ? "standard input" : path, err);
}

static int open_symbolizer(struct rv_decoder *d, struct rv_error *err)
{
	struct kernel_sources k;
	struct rv_symbolizer_options so = { .vmlinux = d->options.vmlinux };
	int ret = kernel_sources(&d->options, d->reader, &k);

	if (ret) {
		kernel_sources_free(&k);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	if (d->options.include_kernel) {
		so.kernel = d->kind != RV_CAPTURE_PERF_SCRIPT && d->kind != RV_CAPTURE_RAW_PT;
		so.kallsyms_path = k.kallsyms;
		so.modules = k.modules;
		so.modules_dir = k.modules_dir;
	} else {
		so.vmlinux = NULL;
	}
	ret = rv_symbolizer_new(&d->symbolizer, &so, err);
	kernel_sources_free(&k);
	return ret;
}

int rv_decoder_open(struct rv_decoder **out, const struct rv_decoder_options *options,
		    struct rv_error *err)
{
	struct rv_decoder *d = calloc(1, sizeof(*d));
	int ret = 0;

	*out = NULL;
	if (!d)
		return rv_error_set(err, ENOMEM, "out of memory");
	d->options = *options;
	d->kind = options->kind;
	if (d->kind != RV_CAPTURE_PERF_SCRIPT && d->kind != RV_CAPTURE_RAW_PT)
		ret = rv_perf_reader_open(&d->reader, options->path, err);
	if (!ret)
		ret = check_vmlinux(options, d->reader, err);
	if (!ret)
		ret = open_symbolizer(d, err);
	if (!ret && d->kind == RV_CAPTURE_PERF_SCRIPT)
		ret = open_perf_script(d, err);
	else if (!ret && d->kind != RV_CAPTURE_RAW_PT)
		ret = open_perf_data(d, err);
	if (ret) {
		rv_decoder_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* ---- decoding ---- */

/* Without kernel scope a sample keeps its user frames only (the kernel's,
 * leaf first, come before them); false when it had kernel frames and
 * nothing else (a kernel thread's). */
static bool user_part(struct rv_event *ev)
{
	size_t before = ev->stack.nr_frames;

	while (ev->stack.nr_frames && ev->stack.frames[0].kernel) {
		ev->stack.frames++;
		ev->stack.nr_frames--;
		ev->stack.caller_unseen = false;
	}
	return ev->stack.nr_frames || !before;
}

/* The decoders that are read record by record: a damaged capture ends the
 * events there, and is said in the report. */
static int pull(struct rv_decoder *d, rv_event_sink_fn sink, void *ctx, struct rv_error *err)
{
	struct rv_event ev;
	int ret = 0;

	while (!ret) {
		int got = d->samples	 ? rv_sample_decoder_next(d->samples, &ev, err)
			  : d->functions ? rv_fn_decoder_next(d->functions, &ev, err)
					 : rv_perf_script_next(d->perf_script, &ev, err);

		if (got == 0)
			break;
		if (got < 0 && d->perf_script)
			return got;
		if (got < 0) {
			snprintf(d->damage, sizeof(d->damage), "%s", err->message);
			rv_error_clear(err);
			break;
		}
		if (!d->options.include_kernel && ev.kind == RV_EVENT_STACK_SAMPLE &&
		    !user_part(&ev))
			continue;
		ret = sink(ctx, &ev, err);
	}
	/* perf script text: lines it could not read were skipped (the report
	 * says which); a text that gave no event at all is an error */
	if (!ret && d->perf_script)
		ret = rv_perf_script_check_any(d->perf_script, err);
	return ret;
}

/* ---- how much did not decode (PT) ---- */

/* More than this share of a trace not decoded is said in words. */
#define UNDECODED_PERCENT_SAID 50

/* "the image 'a' at 0x400000" or "the images 'a' at 0x400000 and 'b' at
 * 0x7f0000": every --image, by path and address. */
static void name_images(const struct rv_decoder_options *o, char *out, size_t size)
{
	size_t used = (size_t)snprintf(out, size, "the image%s", o->nr_images == 1 ? "" : "s");

	for (size_t i = 0; i < o->nr_images && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s'%s' at %#" PRIx64,
					 i == 0			 ? " "
					 : i + 1 == o->nr_images ? " and "
								 : ", ",
					 o->images[i].path, o->images[i].addr);
}

/* A raw trace: nothing decoded is an error (there is no trace worth
 * writing), most of it not decoded a warning in the report; both name the
 * images. */
static int judge_raw_pt(struct rv_decoder *d, struct rv_error *err)
{
	const struct rv_decoder_options *o = &d->options;
	const struct rv_pt_stats *s = &d->pt_stats;
	const struct rv_raw_pt_coverage *c = &d->coverage;
	char images[640], errors[32], lost[32], all[32];
	unsigned percent;

	if (!s->errors)
		return 0;
	name_images(o, images, sizeof(images));
	rv_count_text(s->errors, errors, sizeof(errors));
	if (!s->insns)
		return rv_error_set(err, EINVAL,
				    "nothing in '%s' decoded (%s decode error%s, %" PRIu64
				    " for code outside the images): %s %s not fit the trace; "
				    "check --image (the file, and the address it was loaded at)%s",
				    o->path, errors, s->errors == 1 ? "" : "s", s->nomap, images,
				    o->nr_images == 1 ? "does" : "do",
				    o->cpu || o->addr_filter[1] ? ", --cpu and --addr-filter" : "");
	if (!c->branch_packets)
		return 0;
	percent = (unsigned)(100 * c->undecoded_packets / c->branch_packets);
	if (percent <= UNDECODED_PERCENT_SAID)
		return 0;
	snprintf(d->undecoded, sizeof(d->undecoded),
		 "%u%% of the trace did not decode (%s of its %s branch packets, after %s "
		 "decode error%s): %s %s not fit the trace; check --image (the file, and the "
		 "address it was loaded at)",
		 percent, rv_count_text(c->undecoded_packets, lost, sizeof(lost)),
		 rv_count_text(c->branch_packets, all, sizeof(all)), errors,
		 s->errors == 1 ? "" : "s", images, o->nr_images == 1 ? "does" : "do");
	return 0;
}

/* A capture: the bytes skipped after decode errors, against all (its
 * buffers hold no long runs of PSB+ alone: tracing that is off writes
 * nothing). Said, never an error: its sideband and the gaps still show
 * what ran when, and the missing files are named beside it. */
static void judge_pt_capture(struct rv_decoder *d)
{
	const struct rv_pt_stats *s = &d->pt_stats;
	const struct rv_pt_missing *missing;
	size_t nr_missing = rv_pt_capture_missing(d->pt, &missing);
	const char *why = "the binaries at the capture's paths are not the ones that ran "
			  "(rebuilt or updated since?); decode on the machine that recorded it";
	char skipped[32], all[32], errors[32];
	unsigned percent;

	for (size_t i = 0; i < nr_missing; i++)
		if (missing[i].errors || missing[i].skipped_bytes)
			why = "the code it ran could not be read (the files named above)";
	if (!s->errors || !s->bytes)
		return;
	percent = (unsigned)(100 * s->skipped_bytes / s->bytes);
	if (percent <= UNDECODED_PERCENT_SAID)
		return;
	snprintf(d->undecoded, sizeof(d->undecoded),
		 "%u%% of the trace did not decode (%s of its %s bytes skipped after %s decode "
		 "error%s): %s",
		 percent, rv_count_text(s->skipped_bytes, skipped, sizeof(skipped)),
		 rv_count_text(s->bytes, all, sizeof(all)),
		 rv_count_text(s->errors, errors, sizeof(errors)), s->errors == 1 ? "" : "s", why);
}

int rv_decoder_run(struct rv_decoder *d, rv_event_sink_fn sink, void *ctx, struct rv_error *err)
{
	return rv_decoder_run_batches(d, sink, NULL, ctx, err);
}

int rv_decoder_run_batches(struct rv_decoder *d, rv_event_sink_fn sink, rv_event_batch_fn batch,
			   void *ctx, struct rv_error *err)
{
	const struct rv_decoder_options *o = &d->options;

	switch (d->kind) {
	case RV_CAPTURE_PT: {
		int ret;

		if (o->count_packets)
			d->packets = rv_pt_capture_count_packets(d->pt);
		ret = rv_pt_capture_decode_batches(d->pt, sink, batch, ctx, &d->pt_stats, err);
		if (!ret)
			judge_pt_capture(d);
		return ret;
	}
	case RV_CAPTURE_RAW_PT: {
		struct rv_raw_pt_options ro = {
			.path = o->path,
			.images = o->images,
			.nr_images = o->nr_images,
			.cpu = o->cpu,
			.addr_filter = { o->addr_filter[0], o->addr_filter[1] },
			.jobs = jobs_of(o),
			.chunk_bytes = o->chunk_bytes,
			.decoder = o->decoder,
			.count_packets = o->count_packets,
			.sink_batch = batch,
		};

		int ret = rv_raw_pt_decode(&ro, sink, ctx, &d->pt_stats, &d->packets, &d->coverage,
					   err);

		return ret ? ret : judge_raw_pt(d, err);
	}
	default:
		return pull(d, sink, ctx, err);
	}
}

void rv_decoder_report(const struct rv_decoder *d, struct rv_decoder_report *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = d->kind;
	out->damage = d->damage[0] ? d->damage : NULL;
	out->pt = d->pt_stats;
	out->packets = d->packets;
	out->jumps_ignored = d->kind == RV_CAPTURE_RAW_PT;
	out->undecoded = d->undecoded[0] ? d->undecoded : NULL;
	out->kernel_names = d->symbolizer ? rv_symbolizer_kernel_problems(d->symbolizer) : NULL;
	if (d->pt) {
		struct rv_pt_capture_info info;

		rv_pt_capture_info(d->pt, &info);
		out->windows_applied = info.windows;
		out->damage = rv_pt_capture_damage(d->pt);
		out->nr_missing = rv_pt_capture_missing(d->pt, &out->missing);
	}
	if (d->samples)
		rv_sample_decoder_stats(d->samples, &out->samples);
	if (d->functions)
		rv_fn_decoder_stats(d->functions, &out->functions);
	if (d->perf_script)
		rv_perf_script_stats(d->perf_script, &out->perf_script);
}

void rv_decoder_free(struct rv_decoder *d)
{
	if (!d)
		return;
	rv_sample_decoder_free(d->samples);
	rv_fn_decoder_free(d->functions);
	rv_pt_capture_free(d->pt);
	rv_perf_script_free(d->perf_script);
	if (d->text && d->text != stdin)
		fclose(d->text);
	rv_perf_reader_free(d->reader);
	rv_symbolizer_free(d->symbolizer);
	free(d);
}
