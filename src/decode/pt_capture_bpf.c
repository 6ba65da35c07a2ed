/* pt_capture_bpf.c: kernel code that changes under an Intel PT trace: BPF
 * programs (PERF_RECORD_KSYMBOL, their JIT images from DIR/bpf_images) and
 * patched text (PERF_RECORD_TEXT_POKE), as libipt images per stretch of time
 * between two changes; see pt_capture_internal.h.
 *
 * How a change reaches the decoder: libipt's sections are files, so each
 * poke's old and new bytes are written to a memory file of the capture's
 * (memfd, read as /proc/self/fd/N) and become two small sections; a BPF
 * program is a section of DIR/bpf_images. An image of a stretch is its base
 * image (a process generation's, or the kernel's) with these sections added
 * on top, in an order that makes the right bytes win (libipt shrinks or
 * splits what a new section overlaps): programs loaded then, the old bytes
 * of later pokes (latest first), the new bytes of earlier pokes (earliest
 * first). The decoder asks for the image again when its time reaches the
 * stretch's end (rv_pt_resolve_fn's until), between two blocks: perf's
 * decoder likewise applies a TEXT_POKE when the trace reaches its time. The
 * kernel emits the record between writing an int3 with the new tail and
 * writing the new first byte (arch/x86/kernel/alternative.c,
 * text_poke_bp_batch), so that trace before its time runs the old bytes
 * (or the int3) and trace after it the new ones; it keeps the old bytes so
 * that a decoder can go backwards too, which the old-bytes rule does.
 *
 * Not here: the kernel's own code (pt_capture_kernel.c), the file format
 * (capture/bpf_images.h), the sideband's other records.
 */
#define RV_LOG_DOMAIN "pt-capture"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/bpf_images.h"
#include "capture/synth.h"
#include "decode/pt_capture_internal.h"
#include "decode/pt_sections.h"
#include "symbolize/symbolizer.h"
#include "util/array.h"
#include "util/log.h"

enum { KC_KSYMBOL, KC_POKE };

/* A sideband record, as kept from the pass over the file. */
struct kc_record {
	uint64_t time, order;
	uint8_t kind;
	bool unregister; /* KSYMBOL */
	uint16_t ksym_type;
	uint64_t addr;
	uint32_t len;	  /* KSYMBOL: the symbol's; POKE: unused */
	const char *name; /* KSYMBOL, in the arena */
	uint16_t old_len, new_len;
	uint64_t bytes_at; /* POKE: old then new bytes, in the memory file */
	int old_isid, new_isid;
};

/* A BPF program's function, from when to when it is loaded. */
struct kc_prog {
	uint64_t addr, len;
	uint64_t from, until; /* the capture's clock; until UINT64_MAX: to the end */
	const char *name;
	int isid;	/* its saved image's section; 0 when none was saved */
	size_t missing; /* its missing-list entry, or SIZE_MAX */
};

struct kc_image {
	struct kc_image *next;
	const struct pt_image *base;
	size_t stretch;
	struct pt_image *image;
	int *isids;
	size_t nr_isids;
};

struct ptc_kcode {
	struct kc_record *records;
	size_t nr, cap;
	int memfd;
	char memfd_path[48];
	uint64_t memfd_size;

	struct kc_prog *progs;
	size_t nr_progs, cap_progs;
	uint64_t *times; /* the stretches' starts after the first (which starts at 0) */
	size_t nr_times;
	bool active; /* some kernel code changes */

	pthread_mutex_t lock;
	struct kc_image *images;
	char *bpf_path;
	bool have_file; /* DIR/bpf_images was there */
	struct rv_bpf_image *saved;
	size_t nr_saved;
	char *saved_names;
};

static struct ptc_kcode *kcode_get(struct rv_pt_capture *c)
{
	if (c->kcode)
		return c->kcode;
	c->kcode = calloc(1, sizeof(*c->kcode));
	if (!c->kcode)
		return NULL;
	c->kcode->memfd = -1;
	pthread_mutex_init(&c->kcode->lock, NULL);
	return c->kcode;
}

/* Appends bytes to the memory file; their offset in *at. */
static int memfd_put(struct ptc_kcode *k, const uint8_t *bytes, size_t n, uint64_t *at,
		     struct rv_error *err)
{
	if (k->memfd < 0) {
		k->memfd = memfd_create("rearview-text-pokes", MFD_CLOEXEC);
		if (k->memfd < 0)
			return rv_error_set(err, errno,
					    "cannot keep the capture's kernel text changes: %s",
					    strerror(errno));
		snprintf(k->memfd_path, sizeof(k->memfd_path), "/proc/self/fd/%d", k->memfd);
	}
	*at = k->memfd_size;
	for (size_t done = 0; done < n;) {
		ssize_t w = pwrite(k->memfd, bytes + done, n - done, (off_t)(k->memfd_size + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return rv_error_set(err, w < 0 ? errno : EIO,
					    "cannot keep the capture's kernel text changes: %s",
					    strerror(w < 0 ? errno : EIO));
		done += (size_t)w;
	}
	k->memfd_size += n;
	return 0;
}

int ptc_kcode_add(struct rv_pt_capture *c, const struct perf_event_header *h, uint64_t time,
		  uint64_t order, struct rv_error *err)
{
	struct kc_record r = { .time = time, .order = order };
	struct rv_perf_ksymbol ks;
	struct rv_perf_text_poke tp;
	struct ptc_kcode *k;
	int ret;

	if (h->type == PERF_RECORD_KSYMBOL) {
		if (rv_perf_ksymbol_parse(h, &ks) || !ks.len || ks.addr + ks.len < ks.addr)
			return 0;
		r.kind = KC_KSYMBOL;
		r.addr = ks.addr;
		r.len = ks.len;
		r.unregister = ks.unregister;
		r.ksym_type = ks.ksym_type;
		r.name = ptc_arena_strndup(&c->arena, ks.name, strlen(ks.name));
		if (!r.name)
			return ptc_nomem(err);
	} else if (h->type == PERF_RECORD_TEXT_POKE) {
		if (rv_perf_text_poke_parse(h, &tp) || (!tp.old_len && !tp.new_len) ||
		    tp.addr + tp.old_len < tp.addr || tp.addr + tp.new_len < tp.addr)
			return 0;
		if (tp.old_len == tp.new_len && !memcmp(tp.old_bytes, tp.new_bytes, tp.new_len))
			return 0; /* nothing changed: no stretch for it */
		r.kind = KC_POKE;
		r.addr = tp.addr;
		r.old_len = tp.old_len;
		r.new_len = tp.new_len;
	} else {
		return 0;
	}
	k = kcode_get(c);
	if (!k)
		return ptc_nomem(err);
	if (r.kind == KC_POKE) {
		/* old and new bytes follow each other in the record */
		ret = memfd_put(k, tp.old_bytes, (size_t)tp.old_len + tp.new_len, &r.bytes_at, err);
		if (ret)
			return ret;
	}
	if (rv_array_grow(&k->records, &k->cap, k->nr, sizeof(*k->records), 16))
		return ptc_nomem(err);
	k->records[k->nr++] = r;
	return 0;
}

static int compare_records(const void *a, const void *b)
{
	const struct kc_record *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int add_prog(struct ptc_kcode *k, uint64_t addr, uint64_t len, uint64_t from,
		    const char *name)
{
	if (rv_array_grow(&k->progs, &k->cap_progs, k->nr_progs, sizeof(*k->progs), 8))
		return -ENOMEM;
	k->progs[k->nr_progs++] = (struct kc_prog){ .addr = addr,
						    .len = len,
						    .from = from,
						    .until = UINT64_MAX,
						    .name = name,
						    .missing = SIZE_MAX };
	return 0;
}

/* The BPF programs from KSYMBOL, in time order: each lives from its
 * register to the unregister of its address. */
static int programs_from_ksymbols(struct ptc_kcode *k)
{
	for (size_t i = 0; i < k->nr; i++) {
		const struct kc_record *r = &k->records[i];

		if (r->kind != KC_KSYMBOL || r->ksym_type != PERF_RECORD_KSYMBOL_TYPE_BPF)
			continue;
		/* the same record can come twice: from the watch of every CPU and
		 * from the traced task's own sideband event */
		bool open = false;

		for (size_t j = 0; j < k->nr_progs; j++) {
			struct kc_prog *p = &k->progs[j];

			if (p->addr != r->addr || p->until != UINT64_MAX)
				continue;
			if (r->unregister)
				p->until = r->time;
			else
				open |= p->len == r->len && !strcmp(p->name, r->name);
		}
		if (!r->unregister && !open && add_prog(k, r->addr, r->len, r->time, r->name))
			return -ENOMEM;
	}
	return 0;
}

/* The first KSYMBOL at addr: a program saved before recording but named
 * by no KSYMBOL was gone by then. */
static uint64_t first_ksymbol_at(const struct ptc_kcode *k, uint64_t addr)
{
	for (size_t i = 0; i < k->nr; i++)
		if (k->records[i].kind == KC_KSYMBOL && k->records[i].addr == addr)
			return k->records[i].time;
	return UINT64_MAX;
}

/* The saved images: each to the first program KSYMBOL announced at its
 * address with its length and name; the others were loaded before
 * recording began (rearview saves what is loaded when it starts, and its
 * own gate), and live from the start. */
static int pair_images(struct rv_pt_capture *c, struct ptc_kcode *k, struct rv_error *err)
{
	size_t from_ksymbol = k->nr_progs;
	bool truncated = false;
	int ret;

	if (!c->dir)
		return 0;
	if (asprintf(&k->bpf_path, "%s/%s", c->dir, RV_BPF_IMAGES_FILE) < 0) {
		k->bpf_path = NULL;
		return ptc_nomem(err);
	}
	ret = rv_bpf_images_read(k->bpf_path, &k->saved, &k->nr_saved, &k->saved_names, &truncated,
				 err);
	if (ret == -ENOENT)
		return 0;
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		rv_warn("%s; BPF programs in the trace will not decode", err->message);
		rv_error_clear(err);
		return 0;
	}
	k->have_file = true;
	if (truncated)
		rv_warn("%s ends inside a program's code; the programs after it are missing",
			k->bpf_path);
	for (size_t i = 0; i < k->nr_saved; i++) {
		const struct rv_bpf_image *im = &k->saved[i];
		struct kc_prog *p = NULL;
		int isid;

		if (im->addr < PTC_KERNEL_START || !im->len)
			continue;
		for (size_t j = 0; j < from_ksymbol && !p; j++)
			if (!k->progs[j].isid && k->progs[j].addr == im->addr &&
			    k->progs[j].len == im->len && !strcmp(k->progs[j].name, im->name))
				p = &k->progs[j];
		if (!p) {
			if (add_prog(k, im->addr, im->len, 0, im->name))
				return ptc_nomem(err);
			p = &k->progs[k->nr_progs - 1];
			p->until = first_ksymbol_at(k, im->addr);
		}
		isid = ptc_add_section(c, k->bpf_path, im->code_offset, im->len, im->addr);
		if (isid == -pte_nomem)
			return ptc_nomem(err);
		if (isid > 0)
			p->isid = isid;
	}
	return 0;
}

/* The pokes' sections, each's old and new bytes. */
static int poke_sections(struct rv_pt_capture *c, struct ptc_kcode *k, struct rv_error *err)
{
	for (size_t i = 0; i < k->nr; i++) {
		struct kc_record *r = &k->records[i];
		int isid;

		if (r->kind != KC_POKE)
			continue;
		if (r->old_len) {
			isid = ptc_add_section(c, k->memfd_path, r->bytes_at, r->old_len, r->addr);
			if (isid < 0)
				return rv_error_set(
					err, isid == -pte_nomem ? ENOMEM : EIO,
					"cannot use the capture's kernel text changes: %s",
					pt_errstr(pt_errcode(isid)));
			r->old_isid = isid;
		}
		if (r->new_len) {
			isid = ptc_add_section(c, k->memfd_path, r->bytes_at + r->old_len,
					       r->new_len, r->addr);
			if (isid < 0)
				return rv_error_set(
					err, isid == -pte_nomem ? ENOMEM : EIO,
					"cannot use the capture's kernel text changes: %s",
					pt_errstr(pt_errcode(isid)));
			r->new_isid = isid;
		}
	}
	return 0;
}

/* The stretches: every time code appears, goes or changes. */
static int make_stretches(struct ptc_kcode *k)
{
	size_t n = 0;

	k->times = calloc(k->nr + 2 * k->nr_progs + 1, sizeof(*k->times));
	if (!k->times)
		return -ENOMEM;
	for (size_t i = 0; i < k->nr; i++)
		if (k->records[i].kind == KC_POKE && k->records[i].time)
			k->times[n++] = k->records[i].time;
	for (size_t i = 0; i < k->nr_progs; i++) {
		if (!k->progs[i].isid)
			continue;
		if (k->progs[i].from)
			k->times[n++] = k->progs[i].from;
		if (k->progs[i].until != UINT64_MAX)
			k->times[n++] = k->progs[i].until;
	}
	qsort(k->times, n, sizeof(*k->times), compare_u64);
	k->nr_times = 0;
	for (size_t i = 0; i < n; i++)
		if (!k->nr_times || k->times[k->nr_times - 1] != k->times[i])
			k->times[k->nr_times++] = k->times[i];
	return 0;
}

static void name_programs(struct rv_pt_capture *c, struct ptc_kcode *k)
{
	struct rv_error err = { 0 };

	if (!c->symbolizer)
		return;
	for (size_t i = 0; i < k->nr; i++) {
		const struct kc_record *r = &k->records[i];

		if (r->kind == KC_KSYMBOL && !r->unregister &&
		    rv_symbolizer_add_kernel_symbol(c->symbolizer, r->addr, r->len, r->name, &err))
			break;
	}
	for (size_t i = 0; i < k->nr_progs; i++)
		if (!k->progs[i].from &&
		    rv_symbolizer_add_kernel_symbol(c->symbolizer, k->progs[i].addr,
						    k->progs[i].len, k->progs[i].name, &err))
			break;
}

int ptc_kcode_load(struct rv_pt_capture *c, struct rv_error *err)
{
	struct ptc_kcode *k;
	size_t pokes = 0, saved = 0;
	int ret;

	if (!c->kernel_traced || !c->include_kernel)
		return 0;
	k = kcode_get(c);
	if (!k)
		return ptc_nomem(err);
	if (k->nr)
		qsort(k->records, k->nr, sizeof(*k->records), compare_records);
	if (programs_from_ksymbols(k))
		return ptc_nomem(err);
	ret = pair_images(c, k, err);
	if (!ret)
		ret = poke_sections(c, k, err);
	if (!ret && make_stretches(k))
		ret = ptc_nomem(err);
	if (ret)
		return ret;
	for (size_t i = 0; i < k->nr_progs; i++) {
		struct kc_prog *p = &k->progs[i];

		saved += p->isid > 0;
		if (p->isid > 0)
			continue;
		p->missing = ptc_missing_add(
			c, p->name,
			k->have_file ? "a BPF program not in the capture's bpf_images: it was "
				       "unloaded before its code could be saved"
				     : "a BPF program, and the capture has no bpf_images (rearview "
				       "saves BPF programs' code when it records the kernel)",
			true);
		if (p->missing == SIZE_MAX)
			return ptc_nomem(err);
	}
	for (size_t i = 0; i < k->nr; i++)
		pokes += k->records[i].kind == KC_POKE;
	k->active = pokes || saved;
	name_programs(c, k);
	if (k->nr_progs || pokes)
		rv_debug("kernel code changes: %zu BPF programs (%zu with their code), %zu text "
			 "pokes, %zu stretches",
			 k->nr_progs, saved, pokes, k->nr_times + 1);
	return 0;
}

struct kept_section {
	uint64_t addr, len;
	size_t at; /* its place in the order of adding */
	int isid;
};

static int compare_kept(const void *a, const void *b)
{
	const struct kept_section *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static int compare_at(const void *a, const void *b)
{
	const struct kept_section *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* Of the sections v[0, *nr) that cover the same range, only the last one
 * added shows: the others go (a site poked again and again would otherwise
 * stack a section a poke, and libipt would split them all). */
static int drop_covered(const struct rv_pt_capture *c, int *v, size_t *nr)
{
	struct kept_section *k = malloc((*nr + 1) * sizeof(*k));
	size_t n = 0;

	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < *nr; i++)
		k[i] = (struct kept_section){ c->sections[v[i]].vaddr, c->sections[v[i]].size, i,
					      v[i] };
	qsort(k, *nr, sizeof(*k), compare_kept);
	for (size_t i = 0; i < *nr; i++)
		if (i + 1 == *nr || k[i + 1].addr != k[i].addr || k[i + 1].len != k[i].len)
			k[n++] = k[i];
	qsort(k, n, sizeof(*k), compare_at);
	for (size_t i = 0; i < n; i++)
		v[i] = k[i].isid;
	*nr = n;
	free(k);
	return 0;
}

/* The sections stretch s adds, in the order they must be added. */
static int stretch_sections(const struct rv_pt_capture *c, const struct ptc_kcode *k, size_t s,
			    int **out, size_t *nr)
{
	uint64_t at = s ? k->times[s - 1] : 0;
	size_t n = 0;
	int *v = malloc((k->nr_progs + k->nr + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < k->nr_progs; i++)
		if (k->progs[i].isid > 0 && k->progs[i].from <= at && at < k->progs[i].until)
			v[n++] = k->progs[i].isid;
	for (size_t i = k->nr; i-- > 0;) /* the first later poke's old bytes win */
		if (k->records[i].kind == KC_POKE && k->records[i].time > at &&
		    k->records[i].old_isid > 0)
			v[n++] = k->records[i].old_isid;
	for (size_t i = 0; i < k->nr; i++) /* the last earlier poke's new bytes win */
		if (k->records[i].kind == KC_POKE && k->records[i].time <= at &&
		    k->records[i].new_isid > 0)
			v[n++] = k->records[i].new_isid;
	if (drop_covered(c, v, &n)) {
		free(v);
		return -ENOMEM;
	}
	*out = v;
	*nr = n;
	return 0;
}

int ptc_kcode_image(struct rv_pt_capture *c, struct pt_image *base, uint64_t time,
		    struct pt_image **out, uint64_t *until, struct rv_error *err)
{
	struct ptc_kcode *k = c->kcode;
	struct kc_image *im;
	size_t s;
	int ret = 0;

	*out = base;
	*until = UINT64_MAX;
	if (!k || !k->active || !base)
		return 0;
	s = ptc_count_until(k->times, k->nr_times, sizeof(*k->times), time);
	*until = s < k->nr_times ? k->times[s] : UINT64_MAX;
	pthread_mutex_lock(&k->lock);
	for (im = k->images; im; im = im->next)
		if (im->base == base && im->stretch == s)
			break;
	if (!im) {
		im = calloc(1, sizeof(*im));
		if (!im || stretch_sections(c, k, s, &im->isids, &im->nr_isids)) {
			free(im);
			ret = ptc_nomem(err);
			goto out;
		}
		im->base = base;
		im->stretch = s;
		im->image = rv_pt_image_alloc(pt_image_name(base));
		if (!im->image || rv_pt_sections_copy(im->image, base) < 0) {
			rv_pt_image_free(im->image);
			free(im->isids);
			free(im);
			ret = ptc_nomem(err);
			goto out;
		}
		for (size_t i = 0; i < im->nr_isids; i++) {
			int rc = rv_pt_sections_add_cached(im->image, c->iscache, im->isids[i]);

			if (rc < 0) {
				ret = rv_error_set(err, ENOMEM,
						   "cannot add changed kernel code to an image: %s",
						   pt_errstr(pt_errcode(rc)));
				break;
			}
		}
		im->next = k->images;
		k->images = im;
	}
	if (!ret)
		*out = im->nr_isids ? im->image : base;
out:
	pthread_mutex_unlock(&k->lock);
	return ret;
}

size_t ptc_kcode_sections(const struct rv_pt_capture *c, const struct pt_image *image,
			  const struct pt_image **base, int *isids, size_t max)
{
	struct ptc_kcode *k = c->kcode;
	size_t n = 0;

	*base = NULL;
	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	for (const struct kc_image *im = k->images; im; im = im->next) {
		if (im->image != image)
			continue;
		*base = im->base;
		for (size_t i = 0; i < im->nr_isids && i < max; i++)
			isids[i] = im->isids[i];
		n = im->nr_isids;
		break;
	}
	pthread_mutex_unlock(&k->lock);
	return n;
}

size_t ptc_kcode_missing_at(const struct rv_pt_capture *c, uint64_t ip, uint64_t time)
{
	const struct ptc_kcode *k = c->kcode;

	for (size_t i = 0; k && i < k->nr_progs; i++) {
		const struct kc_prog *p = &k->progs[i];

		if (p->missing != SIZE_MAX && ip - p->addr < p->len && p->from <= time &&
		    time < p->until)
			return p->missing;
	}
	return SIZE_MAX;
}

void ptc_kcode_free(struct rv_pt_capture *c)
{
	struct ptc_kcode *k = c->kcode;

	if (!k)
		return;
	while (k->images) {
		struct kc_image *im = k->images;

		k->images = im->next;
		rv_pt_image_free(im->image);
		free(im->isids);
		free(im);
	}
	pthread_mutex_destroy(&k->lock);
	if (k->memfd >= 0)
		close(k->memfd);
	free(k->records);
	free(k->progs);
	free(k->times);
	free(k->bpf_path);
	free(k->saved);
	free(k->saved_names);
	free(k);
	c->kcode = NULL;
}
