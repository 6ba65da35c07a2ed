/* test_pt_sections.c: the registry of libipt's images (decode/pt_sections.h).
 *
 * - Sizes: a section is clipped to its file, as libipt clips it.
 * - The overlap rule, by the address map of a snapshot and by the scan of
 *   a list without one, which must agree everywhere: a section split by a
 *   newer one, a newer one over an older's start or end, identical ranges,
 *   an older section that does not clip a newer one, holes, sections that
 *   hold nothing.
 * - libipt itself as the oracle: an image of overlapping sections from
 *   files of distinct one-byte instructions, walked by libipt's instruction
 *   decoder from a TIP.PGE at every mapped stretch; each address's section
 *   id and byte must be the ones rv_pt_section_at and pt_iscache_read give,
 *   the end it gives must be where libipt's section changes, and the same
 *   for a copy (which libipt's own pt_image_copy gets wrong: shown too).
 * - Bookkeeping: generations change when a list does and only then, copies
 *   keep the list, freed, unknown and opaque images are unknown, a
 *   forgotten cache makes the images that still hold it opaque.
 * - Threads: two building images while a third takes snapshots (for TSan
 *   and ASan runs).
 */
#include <criterion/criterion.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/pt_sections.h"
#include "test_files.h"

/* One-byte instructions that do not branch: any run of them decodes. */
static const uint8_t plain_ops[] = { 0x90, 0xf8, 0xf9, 0xfc, 0xfd, 0xf5 };
#define NR_OPS (sizeof(plain_ops) / sizeof(plain_ops[0]))

/* File `which`'s byte at offset k: runs of 7 of one instruction, shifted
 * per file, so a section read at the wrong offset shows. */
static uint8_t file_byte(unsigned which, uint64_t k)
{
	return plain_ops[(which + k / 7) % NR_OPS];
}

struct scratch {
	char *dir;
	char *files[4];
	size_t sizes[4];
	struct pt_image_section_cache *iscache;
};

static void scratch_open(struct scratch *s, size_t size)
{
	memset(s, 0, sizeof(*s));
	s->dir = new_temp_dir("rv-pt-sections");
	for (unsigned i = 0; i < 4; i++) {
		char name[16];
		uint8_t *bytes = malloc(size);

		cr_assert_not_null(bytes);
		for (size_t k = 0; k < size; k++)
			bytes[k] = file_byte(i, k);
		snprintf(name, sizeof(name), "code%u", i);
		s->files[i] = path_join(s->dir, name);
		s->sizes[i] = size;
		write_file(s->files[i], bytes, size);
		free(bytes);
	}
	s->iscache = pt_iscache_alloc("test");
	cr_assert_not_null(s->iscache);
}

static void scratch_close(struct scratch *s)
{
	rv_pt_sections_forget_iscache(s->iscache);
	pt_iscache_free(s->iscache);
	for (unsigned i = 0; i < 4; i++)
		free(s->files[i]);
	free_temp_dir(s->dir);
}

/* Adds file `which` [offset, offset + size) at vaddr to image; its isid. */
static int add(struct scratch *s, struct pt_image *image, unsigned which, uint64_t offset,
	       uint64_t size, uint64_t vaddr)
{
	int isid = rv_pt_sections_add_file(s->iscache, s->files[which], offset, size, vaddr);

	cr_assert_gt(isid, 0, "add_file: %s", pt_errstr(pt_errcode(isid)));
	cr_assert_geq(rv_pt_sections_add_cached(image, s->iscache, isid), 0);
	return isid;
}

static void snapshot(const struct pt_image *image, struct rv_pt_section_list *list)
{
	cr_assert_eq(rv_pt_sections_get(image, list), 0);
	cr_assert_not_null(list->pieces);
}

/* The section holding addr: by the map and by the scan, which must agree;
 * -1 when none. */
static int section_index(const struct rv_pt_section_list *list, uint64_t addr, uint64_t *end)
{
	struct rv_pt_section_list bare = *list;
	uint64_t end_map = 0, end_scan = 0;
	const struct rv_pt_section *by_map = rv_pt_section_at(list, addr, &end_map);
	const struct rv_pt_section *by_scan;

	bare.pieces = NULL;
	bare.nr_pieces = 0;
	by_scan = rv_pt_section_at(&bare, addr, &end_scan);
	cr_assert_eq(by_map, by_scan, "map and scan differ at %#" PRIx64, addr);
	if (!by_map)
		return -1;
	cr_assert_eq(end_map, end_scan, "ends differ at %#" PRIx64 ": %#" PRIx64 ", %#" PRIx64,
		     addr, end_map, end_scan);
	*end = end_map;
	return (int)(by_map - list->sections);
}

static void expect_at(const struct rv_pt_section_list *list, uint64_t addr, int index, uint64_t end)
{
	uint64_t got_end = 0;
	int got = section_index(list, addr, &got_end);

	cr_assert_eq(got, index, "at %#" PRIx64 ": section %d, expected %d", addr, got, index);
	if (index >= 0)
		cr_assert_eq(got_end, end, "at %#" PRIx64 ": end %#" PRIx64 ", expected %#" PRIx64,
			     addr, got_end, end);
}

Test(pt_sections, add_file_clips_to_the_file)
{
	struct scratch s;
	struct pt_image *image;
	struct rv_pt_section_list list;

	scratch_open(&s, 1000);
	image = rv_pt_image_alloc("clips");
	cr_assert_not_null(image);
	add(&s, image, 0, 100, UINT64_MAX, 0x10000); /* to the end: 900 */
	add(&s, image, 1, 0, 50, 0x20000);	     /* inside: as asked */
	add(&s, image, 2, 990, 100, 0x30000);	     /* past the end: 10 */
	add(&s, image, 3, 0, 1000, 0x40000);	     /* exactly the file */
	cr_assert_lt(rv_pt_sections_add_file(s.iscache, s.files[0], 1000, 10, 0x50000), 0,
		     "an offset at the file's end holds nothing: libipt refuses it");
	cr_assert_lt(rv_pt_sections_add_file(s.iscache, "/nonexistent/code", 0, 10, 0x50000), 0);
	snapshot(image, &list);
	cr_assert_eq(list.nr, 4);
	cr_assert_eq(list.sections[0].vaddr, 0x10000);
	cr_assert_eq(list.sections[0].size, 900);
	cr_assert_eq(list.sections[1].size, 50);
	cr_assert_eq(list.sections[2].size, 10);
	cr_assert_eq(list.sections[3].size, 1000);
	for (size_t i = 0; i < 4; i++) {
		uint8_t byte;
		const struct rv_pt_section *sec = &list.sections[i];

		cr_assert_eq(sec->iscache, s.iscache);
		cr_assert_eq(
			pt_iscache_read(s.iscache, &byte, 1, sec->isid, sec->vaddr + sec->size - 1),
			1, "the last byte is libipt's too");
		cr_assert_lt(
			pt_iscache_read(s.iscache, &byte, 1, sec->isid, sec->vaddr + sec->size), 0,
			"and the next one is not");
	}
	expect_at(&list, 0x10000 + 899, 0, 0x10000 + 900);
	expect_at(&list, 0x10000 + 900, -1, 0);
	free(list.sections);
	rv_pt_image_free(image);
	scratch_close(&s);
}

Test(pt_sections, newer_sections_replace_older_ones)
{
	struct scratch s;
	struct rv_pt_section_list list;
	struct pt_image *image;

	scratch_open(&s, 0x4000);

	/* an older section split by a newer one in its middle */
	image = rv_pt_image_alloc("split");
	add(&s, image, 0, 0, 0x1000, 0x1000);
	add(&s, image, 1, 0, 0x400, 0x1400);
	snapshot(image, &list);
	cr_assert_eq(list.nr_pieces, 3);
	expect_at(&list, 0xfff, -1, 0);
	expect_at(&list, 0x1000, 0, 0x1400);
	expect_at(&list, 0x13ff, 0, 0x1400);
	expect_at(&list, 0x1400, 1, 0x1800);
	expect_at(&list, 0x17ff, 1, 0x1800);
	expect_at(&list, 0x1800, 0, 0x2000);
	expect_at(&list, 0x1fff, 0, 0x2000);
	expect_at(&list, 0x2000, -1, 0);
	free(list.sections);
	rv_pt_image_free(image);

	/* newer ones over an older's start and over its end, a hole between */
	image = rv_pt_image_alloc("ends");
	add(&s, image, 0, 0, 0x1000, 0x1000);
	add(&s, image, 1, 0, 0xc00, 0x800);
	add(&s, image, 2, 0, 0x800, 0x1c00);
	add(&s, image, 3, 0, 0x100, 0x3000);
	snapshot(image, &list);
	expect_at(&list, 0x7ff, -1, 0);
	expect_at(&list, 0x800, 1, 0x1400);
	expect_at(&list, 0x13ff, 1, 0x1400);
	expect_at(&list, 0x1400, 0, 0x1c00);
	expect_at(&list, 0x1c00, 2, 0x2400);
	expect_at(&list, 0x23ff, 2, 0x2400);
	expect_at(&list, 0x2400, -1, 0);
	expect_at(&list, 0x2fff, -1, 0);
	expect_at(&list, 0x3000, 3, 0x3100);
	free(list.sections);
	rv_pt_image_free(image);

	/* identical ranges: the newest holds them all */
	image = rv_pt_image_alloc("same");
	add(&s, image, 0, 0x100, 0x200, 0x2000);
	add(&s, image, 0, 0, 0x1000, 0x1000);
	add(&s, image, 1, 0, 0x1000, 0x1000);
	add(&s, image, 2, 0, 0x1000, 0x1000);
	snapshot(image, &list);
	cr_assert_eq(list.nr_pieces, 2);
	expect_at(&list, 0x1000, 3, 0x2000);
	expect_at(&list, 0x1fff, 3, 0x2000);
	expect_at(&list, 0x2000, 0, 0x2200);
	free(list.sections);
	rv_pt_image_free(image);

	/* an older section within a newer one that a newest one clips:
	 * the newest clips, the older does not */
	image = rv_pt_image_alloc("nested");
	add(&s, image, 0, 0, 0x200, 0x1800);
	add(&s, image, 1, 0, 0x2000, 0x1000);
	add(&s, image, 2, 0, 0x100, 0x2800);
	snapshot(image, &list);
	expect_at(&list, 0x1000, 1, 0x2800);
	expect_at(&list, 0x1800, 1, 0x2800);
	expect_at(&list, 0x2800, 2, 0x2900);
	expect_at(&list, 0x2900, 1, 0x3000);
	free(list.sections);
	rv_pt_image_free(image);
	scratch_close(&s);
}

Test(pt_sections, sections_that_hold_nothing)
{
	struct scratch s;
	struct rv_pt_section_list list;
	struct pt_image *image = rv_pt_image_alloc("nothing");
	const uint64_t top = 0xfffffffffffff000ULL;

	scratch_open(&s, 0x1000);
	add(&s, image, 0, 0, 0x800, top);	   /* [top, top + 0x800) */
	add(&s, image, 1, 0, 0x1000, top + 0x400); /* would end at 2^64 + 0x400 */
	add(&s, image, 2, 0, 0x100, 0x1000);
	add(&s, image, 3, 0, 0, 0x1000); /* size 0 */
	snapshot(image, &list);
	expect_at(&list, top + 0x400, 0, top + 0x800);
	expect_at(&list, top + 0x800, -1, 0);
	expect_at(&list, 0x1000, 2, 0x1100);
	free(list.sections);
	rv_pt_image_free(image);
	scratch_close(&s);
}

/* ---- libipt as the oracle ---- */

#define WINDOW_BASE 0x10000ULL
#define WINDOW_SIZE 0x2000ULL

struct libipt_view {
	int isid[WINDOW_SIZE]; /* 0: libipt maps nothing there */
	uint8_t byte[WINDOW_SIZE];
	bool seen[WINDOW_SIZE];
};

/* Walks libipt's instruction decoder over image from start (a trace of a
 * PSB+ and a TIP.PGE there) until it leaves the window or the code; marks
 * what it read at each address. */
static void libipt_walk(struct pt_image *image, uint64_t start, struct libipt_view *v)
{
	uint8_t trace[64];
	struct pt_config config;
	struct pt_encoder *enc;
	struct pt_insn_decoder *dec;
	uint64_t length = 0;
	int status;
	struct pt_packet packets[] = {
		{ .type = ppt_psb },
		{ .type = ppt_psbend },
		{ .type = ppt_mode,
		  .payload.mode = { .leaf = pt_mol_exec, .bits.exec = { .csl = 1 } } },
		{ .type = ppt_tip_pge, .payload.ip = { .ipc = pt_ipc_sext_48, .ip = start } },
	};

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + sizeof(trace);
	enc = pt_alloc_encoder(&config);
	cr_assert_not_null(enc);
	for (size_t i = 0; i < sizeof(packets) / sizeof(packets[0]); i++)
		cr_assert_geq(pt_enc_next(enc, &packets[i]), 0);
	cr_assert_eq(pt_enc_get_offset(enc, &length), 0);
	pt_free_encoder(enc);
	config.end = trace + length;
	dec = pt_insn_alloc_decoder(&config);
	cr_assert_not_null(dec);
	cr_assert_eq(pt_insn_set_image(dec, image), 0);
	v->seen[start - WINDOW_BASE] = true; /* unmapped unless read below */
	status = pt_insn_sync_forward(dec);
	while (status >= 0) {
		struct pt_insn insn;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_insn_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0)
			break;
		status = pt_insn_next(dec, &insn, sizeof(insn));
		if (status < 0 || insn.ip < WINDOW_BASE || insn.ip >= WINDOW_BASE + WINDOW_SIZE)
			break;
		cr_assert_eq(insn.size, 1);
		v->seen[insn.ip - WINDOW_BASE] = true;
		v->isid[insn.ip - WINDOW_BASE] = insn.isid;
		v->byte[insn.ip - WINDOW_BASE] = insn.raw[0];
	}
	pt_insn_free_decoder(dec);
}

static void libipt_read_all(struct pt_image *image, struct libipt_view *v)
{
	memset(v, 0, sizeof(*v));
	for (uint64_t a = 0; a < WINDOW_SIZE; a++)
		if (!v->seen[a])
			libipt_walk(image, WINDOW_BASE + a, v);
}

/* How many addresses of the window rv_pt_section_at gets other than libipt
 * reads them through image (section, byte, or where the section ends). */
static size_t differences(struct pt_image *image, const struct rv_pt_section_list *list,
			  struct libipt_view *v)
{
	size_t wrong = 0;

	libipt_read_all(image, v);
	for (uint64_t a = 0; a < WINDOW_SIZE; a++) {
		uint64_t addr = WINDOW_BASE + a, end = 0;
		int index = section_index(list, addr, &end);
		const struct rv_pt_section *sec = index >= 0 ? &list->sections[index] : NULL;
		uint8_t byte;

		if (!sec) {
			wrong += v->isid[a] != 0;
			continue;
		}
		cr_assert_eq(pt_iscache_read(sec->iscache, &byte, 1, sec->isid, addr), 1);
		if (v->isid[a] != sec->isid || v->byte[a] != byte) {
			wrong++;
			continue;
		}
		/* libipt's section is the same up to end and changes there */
		for (uint64_t b = a; b < end - WINDOW_BASE && b < WINDOW_SIZE; b++)
			wrong += v->isid[b] != sec->isid;
		if (end - WINDOW_BASE < WINDOW_SIZE)
			wrong += v->isid[end - WINDOW_BASE] == sec->isid;
	}
	return wrong;
}

/* Overlapping sections of four files at various offsets over the window. */
static struct pt_image *overlapping_image(struct scratch *s)
{
	static const struct {
		unsigned file;
		uint64_t offset, size, at;
	} layout[] = {
		{ 0, 0, 0x1000, 0x0 },	   { 1, 0x10, 0x800, 0x400 },  { 2, 0x333, 0x200, 0x500 },
		{ 3, 0x7, 0x1000, 0xc00 }, { 0, 0x100, 0x100, 0xe00 }, { 1, 0, 0x300, 0x1a00 },
		{ 2, 0x20, 0x80, 0x1c40 }, { 3, 0x40, 0x10, 0x1c60 },  { 0, 0x1, 0x400, 0x1b00 },
		{ 1, 0x5, 0x100, 0x1100 }, { 2, 0, 0x30, 0x13f0 },     { 3, 0x77, 0x10, 0x1f00 },
	};
	struct pt_image *image = rv_pt_image_alloc("overlapping");

	cr_assert_not_null(image);
	for (size_t i = 0; i < sizeof(layout) / sizeof(layout[0]); i++)
		add(s, image, layout[i].file, layout[i].offset, layout[i].size,
		    WINDOW_BASE + layout[i].at);
	return image;
}

Test(pt_sections, agrees_with_libipt)
{
	struct scratch s;
	struct rv_pt_section_list list;
	struct libipt_view *v = malloc(sizeof(*v));
	struct pt_image *image;
	size_t mapped = 0, holes = 0;

	cr_assert_not_null(v);
	scratch_open(&s, 0x1000);
	image = overlapping_image(&s);
	snapshot(image, &list);
	cr_assert_eq(differences(image, &list, v), 0);
	for (uint64_t a = 0; a < WINDOW_SIZE; a++) {
		mapped += v->isid[a] != 0;
		holes += v->isid[a] == 0;
	}
	cr_assert_gt(mapped, 0x1000, "libipt read the sections");
	cr_assert_gt(holes, 0, "and found holes between them");
	free(list.sections);

	/* the copy maps what its source does, in libipt's eyes too */
	struct pt_image *copy = rv_pt_image_alloc("copy");

	cr_assert_eq(rv_pt_sections_copy(copy, image), 0);
	snapshot(copy, &list);
	cr_assert_eq(differences(copy, &list, v), 0);
	free(list.sections);

	/* which libipt's own copy does not: pieces of split sections come
	 * back whole (the reason rv_pt_sections_copy adds them again) */
	struct pt_image *libipt_copy = pt_image_alloc("libipt's copy");

	snapshot(image, &list);
	cr_assert_geq(pt_image_copy(libipt_copy, image), 0);
	cr_assert_gt(differences(libipt_copy, &list, v), 0);
	free(list.sections);
	pt_image_free(libipt_copy);
	rv_pt_image_free(copy);
	rv_pt_image_free(image);
	scratch_close(&s);
	free(v);
}

/* ---- bookkeeping ---- */

Test(pt_sections, generations)
{
	struct scratch s;
	struct rv_pt_section_list list;
	struct pt_image *image, *other;
	uint64_t g0, g1, g2;
	int isid;

	scratch_open(&s, 0x1000);
	image = rv_pt_image_alloc("gen");
	other = rv_pt_image_alloc("other");
	g0 = rv_pt_sections_generation(image);
	cr_assert_neq(g0, 0, "a known image, even empty");
	cr_assert_neq(g0, rv_pt_sections_generation(other));
	cr_assert_eq(rv_pt_sections_get(image, &list), 0);
	cr_assert_eq(list.nr, 0);
	cr_assert_eq(list.generation, g0);
	free(list.sections);

	add(&s, image, 0, 0, 0x100, 0x1000);
	g1 = rv_pt_sections_generation(image);
	cr_assert_neq(g1, g0, "a section added");

	isid = rv_pt_sections_add_file(s.iscache, s.files[1], 0, 0x100, 0x2000);
	cr_assert_gt(isid, 0);
	cr_assert_eq(rv_pt_sections_generation(image), g1, "a section in the cache only");
	add(&s, other, 2, 0, 0x100, 0x1000);
	cr_assert_eq(rv_pt_sections_generation(image), g1, "another image's section");
	cr_assert_lt(rv_pt_sections_add_cached(image, s.iscache, 1000), 0);
	cr_assert_eq(rv_pt_sections_generation(image), g1, "a section libipt refused");
	snapshot(image, &list);
	cr_assert_eq(list.generation, g1);
	cr_assert_eq(rv_pt_sections_generation(image), g1, "a snapshot");
	free(list.sections);

	cr_assert_geq(rv_pt_sections_add_cached(image, s.iscache, isid), 0);
	g2 = rv_pt_sections_generation(image);
	cr_assert_neq(g2, g1);
	snapshot(image, &list);
	cr_assert_eq(list.nr, 2);
	cr_assert_eq(list.sections[1].isid, isid);
	cr_assert_eq(list.generation, g2);
	free(list.sections);
	rv_pt_image_free(other);
	rv_pt_image_free(image);
	scratch_close(&s);
}

Test(pt_sections, copies_keep_the_list)
{
	struct scratch s;
	struct rv_pt_section_list from, to;
	struct pt_image *image, *copy;

	scratch_open(&s, 0x1000);
	image = rv_pt_image_alloc("source");
	add(&s, image, 0, 0, 0x1000, 0x1000);
	add(&s, image, 1, 0, 0x100, 0x1400);
	add(&s, image, 2, 0x10, 0x100, 0x1f80);

	/* into a plain image too: the copy makes it known */
	copy = pt_image_alloc("copy");
	cr_assert_eq(rv_pt_sections_copy(copy, image), 0);
	snapshot(image, &from);
	snapshot(copy, &to);
	cr_assert_eq(to.nr, from.nr);
	cr_assert_eq(memcmp(to.sections, from.sections, from.nr * sizeof(*from.sections)), 0);
	cr_assert_neq(to.generation, from.generation, "a generation of its own");
	cr_assert_eq(to.nr_pieces, from.nr_pieces);
	free(to.sections);

	/* after copy's own sections, which the source's replace */
	struct pt_image *onto = rv_pt_image_alloc("onto");

	add(&s, onto, 3, 0, 0x1000, 0x1800);
	cr_assert_eq(rv_pt_sections_copy(onto, image), 0);
	snapshot(onto, &to);
	cr_assert_eq(to.nr, 4);
	cr_assert_eq(memcmp(to.sections + 1, from.sections, from.nr * sizeof(*from.sections)), 0);
	expect_at(&to, 0x1800, 1, 0x1f80);
	expect_at(&to, 0x2080, 0, 0x2800);
	free(to.sections);
	free(from.sections);
	cr_assert_eq(rv_pt_sections_copy(image, image), 0, "onto itself: nothing");
	rv_pt_image_free(onto);
	rv_pt_image_free(copy);
	rv_pt_image_free(image);
	scratch_close(&s);
}

Test(pt_sections, unknown_and_opaque_images)
{
	struct scratch s;
	struct rv_pt_section_list list;
	struct pt_image *plain = pt_image_alloc("plain");
	struct pt_image *image, *copy;
	int raw_isid;

	scratch_open(&s, 0x1000);

	/* never seen here */
	memset(&list, 0xff, sizeof(list));
	cr_assert_eq(rv_pt_sections_get(plain, &list), -1);
	cr_assert_null(list.sections);
	cr_assert_eq(list.nr, 0);
	cr_assert_eq(list.generation, 0);
	cr_assert_eq(rv_pt_sections_generation(plain), 0);

	/* a section from pt_iscache_add_file: the list would be short */
	image = rv_pt_image_alloc("opaque");
	add(&s, image, 0, 0, 0x100, 0x1000);
	raw_isid = pt_iscache_add_file(s.iscache, s.files[1], 0, 0x100, 0x2000);
	cr_assert_gt(raw_isid, 0);
	cr_assert_geq(rv_pt_sections_add_cached(image, s.iscache, raw_isid), 0);
	cr_assert_eq(rv_pt_sections_get(image, &list), -1);
	cr_assert_eq(rv_pt_sections_generation(image), 0);
	add(&s, image, 2, 0, 0x100, 0x3000);
	cr_assert_eq(rv_pt_sections_get(image, &list), -1, "opaque for good");

	/* copies of opaque and unknown images are opaque */
	copy = rv_pt_image_alloc("copy");
	cr_assert_geq(rv_pt_sections_copy(copy, image), 0);
	cr_assert_eq(rv_pt_sections_get(copy, &list), -1);
	rv_pt_image_free(copy);
	copy = rv_pt_image_alloc("copy of plain");
	cr_assert_geq(rv_pt_sections_copy(copy, plain), 0);
	cr_assert_eq(rv_pt_sections_get(copy, &list), -1);
	rv_pt_image_free(copy);
	rv_pt_image_free(image);
	pt_image_free(plain);

	/* a freed image is forgotten */
	image = rv_pt_image_alloc("freed");
	add(&s, image, 0, 0, 0x100, 0x1000);
	cr_assert_neq(rv_pt_sections_generation(image), 0);
	rv_pt_image_free(image);
	cr_assert_eq(rv_pt_sections_generation(image), 0);
	rv_pt_image_free(NULL);
	scratch_close(&s);
}

/* Thousands of images, freed in a scrambled order: the others stay known,
 * each with its own generation, through the table's growth and removals. */
Test(pt_sections, many_images)
{
	enum { N = 3000 };
	struct pt_image **images = calloc(N, sizeof(*images));
	uint64_t *generations = calloc(N, sizeof(*generations));
	bool *freed = calloc(N, sizeof(*freed));

	cr_assert(images && generations && freed);
	for (size_t i = 0; i < N; i++) {
		images[i] = rv_pt_image_alloc("many");
		cr_assert_not_null(images[i]);
		generations[i] = rv_pt_sections_generation(images[i]);
		cr_assert_neq(generations[i], 0);
		cr_assert(!i || generations[i] != generations[i - 1]);
	}
	for (size_t round = 0; round < 3; round++) {
		for (size_t k = 0; k < N / 4; k++) {
			size_t i = (k * 7919 + round * 104729) % N;

			if (!freed[i]) {
				rv_pt_image_free(images[i]);
				freed[i] = true;
			}
		}
		for (size_t i = 0; i < N; i++)
			if (!freed[i])
				cr_assert_eq(rv_pt_sections_generation(images[i]), generations[i],
					     "image %zu after round %zu", i, round);
	}
	for (size_t i = 0; i < N; i++)
		if (!freed[i])
			rv_pt_image_free(images[i]);
	free(images);
	free(generations);
	free(freed);
}

/* NULL is no image and no cache: asking about it changes nothing (a
 * decoding thread without a cache of its own forgets NULL). */
Test(pt_sections, null_is_nothing)
{
	struct scratch s;
	struct rv_pt_section_list list;
	struct pt_image *images[40];
	uint64_t generations[40];
	int isids[40];

	scratch_open(&s, 0x1000);
	for (size_t i = 0; i < 40; i++) {
		images[i] = rv_pt_image_alloc("kept");
		isids[i] = add(&s, images[i], (unsigned)i % 4, 0, 0x10, 0x1000 * (i + 1));
		generations[i] = rv_pt_sections_generation(images[i]);
	}
	for (size_t i = 0; i < 100; i++)
		rv_pt_sections_forget_iscache(NULL);
	cr_assert_eq(rv_pt_sections_get(NULL, &list), -1);
	cr_assert_eq(rv_pt_sections_generation(NULL), 0);
	cr_assert_lt(rv_pt_sections_add_cached(NULL, s.iscache, 1), 0);
	cr_assert_lt(rv_pt_sections_copy(NULL, images[0]), 0);
	for (size_t i = 0; i < 40; i++) {
		cr_assert_eq(rv_pt_sections_generation(images[i]), generations[i]);
		/* the cache's ids are still known */
		cr_assert_geq(rv_pt_sections_add_cached(images[i], s.iscache, isids[(i + 1) % 40]),
			      0);
		snapshot(images[i], &list);
		cr_assert_eq(list.nr, 2);
		cr_assert_eq(list.sections[0].vaddr, 0x1000 * (i + 1));
		free(list.sections);
		rv_pt_image_free(images[i]);
	}
	scratch_close(&s);
}

Test(pt_sections, forgotten_caches)
{
	struct scratch s;
	struct rv_pt_section_list list;
	struct pt_image *image = rv_pt_image_alloc("holds");
	struct pt_image *other = rv_pt_image_alloc("does not");
	struct pt_image *later = rv_pt_image_alloc("later");
	struct pt_image_section_cache *second = pt_iscache_alloc("second");
	int isid, second_isid;

	scratch_open(&s, 0x1000);
	isid = add(&s, image, 0, 0, 0x100, 0x1000);
	second_isid = rv_pt_sections_add_file(second, s.files[1], 0, 0x100, 0x1000);
	cr_assert_gt(second_isid, 0);
	cr_assert_geq(rv_pt_sections_add_cached(other, second, second_isid), 0);
	uint64_t other_generation = rv_pt_sections_generation(other);

	rv_pt_sections_forget_iscache(s.iscache);
	cr_assert_eq(rv_pt_sections_get(image, &list), -1, "its snapshot would name a freed cache");
	cr_assert_eq(rv_pt_sections_generation(other), other_generation, "another cache's");
	snapshot(other, &list);
	cr_assert_eq(list.nr, 1);
	free(list.sections);

	/* the cache's ids are unknown now */
	cr_assert_geq(rv_pt_sections_add_cached(later, s.iscache, isid), 0);
	cr_assert_eq(rv_pt_sections_get(later, &list), -1);

	rv_pt_image_free(later);
	rv_pt_image_free(other);
	rv_pt_image_free(image);
	rv_pt_sections_forget_iscache(second);
	pt_iscache_free(second);
	scratch_close(&s);
}

/* ---- threads ---- */

#define BUILDER_SECTIONS 300

struct builder {
	struct scratch *s;
	struct pt_image *image;
	unsigned file;
};

static void *build(void *arg)
{
	struct builder *b = arg;

	for (unsigned i = 0; i < BUILDER_SECTIONS; i++) {
		uint64_t at = 0x100000ULL * (b->file + 1) + 0x10 * i;
		int isid =
			rv_pt_sections_add_file(b->s->iscache, b->s->files[b->file], i, 0x20, at);

		if (isid <= 0 || rv_pt_sections_add_cached(b->image, b->s->iscache, isid) < 0)
			return "cannot add a section";
	}
	return NULL;
}

struct watcher {
	struct pt_image *images[2];
	atomic_bool stop;
	const char *problem;
	size_t snapshots;
};

static void *watch(void *arg)
{
	struct watcher *w = arg;
	uint64_t last[2] = { 0, 0 };

	/* at least one round, however late this thread runs: on a loaded
	 * machine both builders may be done and stop set before it starts */
	do {
		for (unsigned k = 0; k < 2; k++) {
			struct rv_pt_section_list list;
			uint64_t end;

			if (rv_pt_sections_get(w->images[k], &list)) {
				w->problem = "a snapshot failed";
				break;
			}
			w->snapshots++;
			if (list.generation < last[k])
				w->problem = "a generation went back";
			last[k] = list.generation;
			for (size_t i = 0; i < list.nr; i++) {
				const struct rv_pt_section *sec = &list.sections[i];

				if (sec->size != 0x20 ||
				    sec->vaddr != 0x100000ULL * (k + 1) + 0x10 * i)
					w->problem = "a section not as added";
			}
			if (list.nr && rv_pt_section_at(&list, list.sections[0].vaddr, &end) !=
					       &list.sections[0])
				w->problem = "the first section not found";
			(void)rv_pt_sections_generation(w->images[k]);
			free(list.sections);
		}
	} while (!atomic_load(&w->stop) && !w->problem);
	return NULL;
}

Test(pt_sections, threads)
{
	struct scratch s;
	struct builder builders[2];
	struct watcher w = { .problem = NULL };
	pthread_t threads[3];
	void *result;

	scratch_open(&s, 0x1000);
	for (unsigned k = 0; k < 2; k++) {
		builders[k] = (struct builder){ &s, rv_pt_image_alloc("built"), k };
		w.images[k] = builders[k].image;
	}
	atomic_init(&w.stop, false);
	cr_assert_eq(pthread_create(&threads[2], NULL, watch, &w), 0);
	for (unsigned k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&threads[k], NULL, build, &builders[k]), 0);
	for (unsigned k = 0; k < 2; k++) {
		cr_assert_eq(pthread_join(threads[k], &result), 0);
		cr_assert_null(result, "%s", (const char *)result);
	}
	atomic_store(&w.stop, true);
	cr_assert_eq(pthread_join(threads[2], NULL), 0);
	cr_assert_null(w.problem, "%s", w.problem);
	cr_assert_gt(w.snapshots, 0);
	for (unsigned k = 0; k < 2; k++) {
		struct rv_pt_section_list list;
		uint64_t end;

		snapshot(builders[k].image, &list);
		cr_assert_eq(list.nr, BUILDER_SECTIONS);
		/* each section but the last is clipped by the next, 0x10 on */
		for (size_t i = 0; i < BUILDER_SECTIONS; i++)
			expect_at(&list, list.sections[i].vaddr, (int)i,
				  list.sections[i].vaddr +
					  (i + 1 < BUILDER_SECTIONS ? 0x10 : 0x20));
		cr_assert_null(rv_pt_section_at(&list, list.sections[0].vaddr - 1, &end));
		free(list.sections);
		rv_pt_image_free(builders[k].image);
	}
	scratch_close(&s);
}
