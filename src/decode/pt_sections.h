/* pt_sections.h: which file section of a libipt image holds an address.
 *
 * libipt keeps an image's sections to itself: pt_image has no call that
 * says which section maps an address, and the query-layer walker
 * (pt_fast.c) reads code itself, through pt_iscache_read, which needs the
 * section's id. So every image the PT decoder is given is built through
 * these wrappers, which do what libipt's calls do and remember what they
 * did, in one registry for the process keyed by the image (and by the
 * section cache for the ids). An image is known here once it was made by
 * rv_pt_image_alloc or given a section or a copy through these wrappers;
 * an image built otherwise is unknown, and the walker leaves its chunks to
 * libipt's block decoder.
 *
 * The rules an image's builder keeps, or lookups go wrong:
 * - every section of a known image is added through these wrappers (one
 *   added with pt_image_add_cached directly is not seen here);
 * - a known image is freed with rv_pt_image_free, never pt_image_free: the
 *   registry would otherwise keep its list, and give it to the next image
 *   malloc puts at that address (rv_pt_image_alloc drops such a list);
 * - rv_pt_sections_forget_iscache comes before pt_iscache_free.
 * What the registry cannot follow makes an image opaque, not wrong: an id
 * that is not rv_pt_sections_add_file's, a copy of an unknown or opaque
 * image, a section cache forgotten while an image still holds its
 * sections. An opaque image stays so until it is freed; rv_pt_sections_get
 * says it is unknown.
 *
 * Overlaps follow libipt: a section added later replaces, where they
 * overlap, the sections added before it; so the section that holds an
 * address is the last one added that covers it, and it holds the bytes up
 * to the start of the first section added after it above the address. A
 * section of size 0, or one whose end would pass 2^64 - 1, holds nothing
 * and hides nothing (libipt cannot match it either).
 *
 * Thread safety: every call but rv_pt_section_at locks the registry
 * (rv_pt_sections_add_cached and rv_pt_sections_copy hold it through their
 * libipt calls, so an image's list and libipt's stay in step); building
 * one image from two threads at once is as wrong as it is in libipt. A
 * snapshot (rv_pt_sections_get) is the caller's, and stays valid after the
 * image changes or is freed; the generation says whether it is still
 * current. A snapshot names section caches it does not own: they must
 * outlive its use.
 *
 * Not here: reading code (pt_iscache_read), address spaces (every section
 * is added with libipt's default, NULL, asid), pt_image_add_file (a
 * section without an id cannot be read through a cache).
 */
#ifndef RV_DECODE_PT_SECTIONS_H
#define RV_DECODE_PT_SECTIONS_H

#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

/* pt_image_alloc(name), known here from the start with no sections. Use it
 * for every image the decoder may be given: an image with no sections is
 * known only so. NULL when memory is short. */
struct pt_image *rv_pt_image_alloc(const char *name);

/* pt_iscache_add_file(iscache, file, offset, size, vaddr), remembering the
 * section's address and its real size: size is clipped to the file's
 * length minus offset, as libipt clips it (UINT64_MAX: to the end of the
 * file). Returns the isid, or libipt's negative pte_* (-pte_bad_file when
 * the file changed under the call, -pte_nomem when the registry cannot
 * grow: the cache may then hold a section nothing uses). */
int rv_pt_sections_add_file(struct pt_image_section_cache *iscache, const char *file,
			    uint64_t offset, uint64_t size, uint64_t vaddr);

/* pt_image_add_cached(image, iscache, isid, NULL), remembering the section
 * as image's newest. Returns what libipt returned (negative pte_* on
 * failure; nothing changes then), or -pte_nomem, before libipt is called,
 * when the registry cannot grow. An isid that is not from
 * rv_pt_sections_add_file makes the image opaque. */
int rv_pt_sections_add_cached(struct pt_image *image, struct pt_image_section_cache *iscache,
			      int isid);

/* pt_image_copy(copy, source): source's sections added to copy, after
 * copy's own, and remembered. For a known source they are added again
 * from the registry, in the order they were added to source
 * (pt_image_add_cached each), not by pt_image_copy: libipt 2.0.5 copies
 * each piece of a section that a later one split as the whole section at
 * the piece's address, which maps bytes at the wrong addresses, in an
 * order that depends on source's lookups, and it reads a source list that
 * another thread's lookups reorder. An unknown or opaque source is copied
 * by pt_image_copy and makes copy opaque. Returns the number of sections
 * that could not be added (libipt's "ignored"), or a negative pte_*
 * (-pte_nomem when the registry cannot grow; copy is unchanged then). */
int rv_pt_sections_copy(struct pt_image *copy, const struct pt_image *source);

/* Forgets image and frees it (pt_image_free). NULL is ignored. */
void rv_pt_image_free(struct pt_image *image);

/* Forgets a section cache's ids; call it before pt_iscache_free, after the
 * images that hold its sections are freed. An image still known that holds
 * one of them becomes opaque (its generation changes), so no later
 * snapshot names the freed cache. */
void rv_pt_sections_forget_iscache(const struct pt_image_section_cache *iscache);

struct rv_pt_section {
	uint64_t vaddr, size; /* [vaddr, vaddr + size) as added, size clipped to the file */
	int isid;	      /* for pt_iscache_read(iscache, buf, n, isid, vaddr) */
	struct pt_image_section_cache *iscache;
};

/* Where a section shows through the ones added after it. */
struct rv_pt_section_piece {
	uint64_t begin, end; /* [begin, end) */
	size_t section;	     /* index in the list's sections */
};

/* A snapshot of image's sections, in the order they were added (the last
 * one wins where they overlap). */
struct rv_pt_section_list {
	struct rv_pt_section *sections; /* malloc'd: the caller frees */
	size_t nr;
	uint64_t generation; /* changes whenever the image's list changes */
	/* The image's address map: disjoint pieces sorted by address, in the
	 * allocation of `sections` (freeing it frees them). A list made by
	 * hand may leave them NULL: rv_pt_section_at then scans the list. */
	const struct rv_pt_section_piece *pieces;
	size_t nr_pieces;
};

/* Fills *out for image. Returns 0; -1 when the image is unknown or opaque
 * (*out is then empty, its generation 0), -2 when memory is short (*out
 * empty). O(n log n) in the image's sections. */
int rv_pt_sections_get(const struct pt_image *image, struct rv_pt_section_list *out);

/* The image's current generation: nonzero, different from every other
 * image's, the same until its list changes (a section added or copied in,
 * the image made opaque); 0 when it is unknown or opaque. A snapshot with
 * another generation is out of date. O(1). */
uint64_t rv_pt_sections_generation(const struct pt_image *image);

/* The section of list that holds addr, and in *end the end of the bytes
 * it holds there (clipped by the sections added after it); NULL when
 * none does (*end untouched). Reads the list only: no lock, any thread.
 * O(log n) with pieces, O(n) without. */
const struct rv_pt_section *rv_pt_section_at(const struct rv_pt_section_list *list, uint64_t addr,
					     uint64_t *end);

#endif
