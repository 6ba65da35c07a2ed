/* pt_sections.h: which file section of a libipt image holds an address.
 *
 * libipt keeps an image's sections to itself: pt_image has no call that
 * says which section maps an address, and the query-layer walker
 * (pt_fast.c) reads code itself, through pt_iscache_read, which needs the
 * section's id. So every image the PT decoder is given is built through
 * these wrappers, which do what libipt's calls do and remember what they
 * did, in a registry keyed by the image (and by the section cache for the
 * ids). An image built otherwise is unknown here, and the walker leaves
 * its chunks to libipt's block decoder.
 *
 * Overlaps follow libipt: a section added later replaces, where they
 * overlap, the sections added before it; so the section that holds an
 * address is the last one added that covers it, and it holds the bytes up
 * to the start of the first section added after it above the address.
 *
 * Thread safety: every call locks the registry; a snapshot
 * (rv_pt_sections_get) is the caller's, and stays valid after the image
 * changes or is freed. The generation says whether it is still current.
 */
#ifndef RV_DECODE_PT_SECTIONS_H
#define RV_DECODE_PT_SECTIONS_H

#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

/* pt_iscache_add_file(iscache, file, offset, size, vaddr), remembering the
 * section's address and its real size (size is clipped to the file's end,
 * as libipt clips it). Returns the isid, or libipt's negative pte_*. */
int rv_pt_sections_add_file(struct pt_image_section_cache *iscache, const char *file,
			    uint64_t offset, uint64_t size, uint64_t vaddr);

/* pt_image_add_cached(image, iscache, isid, NULL) for an isid from
 * rv_pt_sections_add_file, remembering it as image's newest section.
 * Returns what libipt returned (negative pte_* on failure; nothing is
 * remembered then). */
int rv_pt_sections_add_cached(struct pt_image *image, struct pt_image_section_cache *iscache,
			      int isid);

/* pt_image_copy(copy, source), copying what is remembered of source too.
 * Returns libipt's result. */
int rv_pt_sections_copy(struct pt_image *copy, const struct pt_image *source);

/* Forgets image and frees it (pt_image_free). NULL is ignored. */
void rv_pt_image_free(struct pt_image *image);

/* Forgets a section cache's ids (call before pt_iscache_free). */
void rv_pt_sections_forget_iscache(const struct pt_image_section_cache *iscache);

struct rv_pt_section {
	uint64_t vaddr, size; /* [vaddr, vaddr + size) as added */
	int isid;
	struct pt_image_section_cache *iscache;
};

/* A snapshot of image's sections, in the order they were added (the last
 * one wins where they overlap). */
struct rv_pt_section_list {
	struct rv_pt_section *sections; /* malloc'd: the caller frees */
	size_t nr;
	uint64_t generation; /* changes whenever the image's list changes */
};

/* Fills *out for image. Returns 0; -1 when the image was not built
 * through these wrappers (*out is then empty), -2 when memory is short. */
int rv_pt_sections_get(const struct pt_image *image, struct rv_pt_section_list *out);

/* The image's current generation (0 when it is unknown): a snapshot with
 * another generation is out of date. */
uint64_t rv_pt_sections_generation(const struct pt_image *image);

/* The section of list that holds addr, and in *end the end of the bytes
 * it holds there (clipped by the sections added after it); NULL when
 * none does. */
const struct rv_pt_section *rv_pt_section_at(const struct rv_pt_section_list *list, uint64_t addr,
					     uint64_t *end);

#endif
