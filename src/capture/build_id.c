/* build_id.c: the files a capture maps, and their GNU build ids, for the
 * writer's HEADER_BUILD_ID (perf finds the binaries of a capture by them).
 * Build ids come from the MMAP2 record when it carries one, else from the
 * file's ELF notes (sections, then segments), or from /sys/kernel/notes for
 * the kernel.
 *
 * Not here: the rest of the writer (perf_data_write.c), or reading build ids
 * back (the reader hands HEADER_BUILD_ID over as bytes).
 */
#define RV_LOG_DOMAIN "perf-data"

#include "capture/perf_data_internal.h"
#include "capture/synth.h"
#include "util/array.h"
#include "util/elf.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUILD_ID_MAX	RV_BUILD_ID_MAX
#define HOST_KERNEL_PID (-1)

/* HEADER_BUILD_ID's entries say how many bytes of build_id are the id. */
#define RECORD_MISC_BUILD_ID_SIZE (1 << 15)

/* perf's struct perf_record_header_build_id, without the file name. */
struct build_id_entry_header {
	struct perf_event_header header;
	int32_t pid;
	uint8_t build_id[BUILD_ID_MAX];
	uint8_t build_id_size;
	uint8_t reserved[3];
};

_Static_assert(sizeof(struct build_id_entry_header) == 36, "build_id_event is 36 bytes");

/* Where MMAP2 carries a build id (PERF_RECORD_MISC_MMAP_BUILD_ID). */
#define MMAP2_BUILD_ID_SIZE_OFFSET 40
#define MMAP2_BUILD_ID_OFFSET	   44

/* The GNU build id of an ELF file, or 0 when it has none or is not ELF. */
static size_t build_id_of_file(const char *path, uint8_t *id)
{
	size_t found = 0;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		found = rv_elf_build_id(elf, id);
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* ---- the table of mapped files ---- */

struct pd_build_id_file {
	char *name;
	uint16_t misc; /* PERF_RECORD_MISC_KERNEL or _USER, for HEADER_BUILD_ID */
	uint8_t build_id_size;
	uint8_t build_id[BUILD_ID_MAX];
};

static uint64_t hash_string(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

/* The slot where name is, or the empty one where it would go. */
static size_t find_slot(const struct pd_build_ids *t, const uint32_t *slots, size_t nr_slots,
			const char *name)
{
	size_t i = hash_string(name) & (nr_slots - 1);

	while (slots[i] && strcmp(t->files[slots[i] - 1].name, name) != 0)
		i = (i + 1) & (nr_slots - 1);
	return i;
}

static struct pd_build_id_file *table_find(const struct pd_build_ids *t, const char *name)
{
	uint32_t slot;

	if (!t->nr_slots)
		return NULL;
	slot = t->slots[find_slot(t, t->slots, t->nr_slots, name)];
	return slot ? &t->files[slot - 1] : NULL;
}

static int table_rehash(struct pd_build_ids *t, size_t nr_slots)
{
	uint32_t *slots = calloc(nr_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	/* the names are distinct, so each finds an empty slot */
	for (size_t e = 0; e < t->nr; e++)
		slots[find_slot(t, slots, nr_slots, t->files[e].name)] = (uint32_t)(e + 1);
	free(t->slots);
	t->slots = slots;
	t->nr_slots = nr_slots;
	return 0;
}

static struct pd_build_id_file *table_add(struct pd_build_ids *t, const char *name)
{
	struct pd_build_id_file *f;

	if (t->nr >= UINT32_MAX / 2 ||
	    rv_array_grow(&t->files, &t->cap, t->nr, sizeof(*t->files), 16))
		return NULL;
	if ((t->nr + 1) * 2 > t->nr_slots && table_rehash(t, t->nr_slots ? t->nr_slots * 2 : 64))
		return NULL;
	f = &t->files[t->nr];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name)
		return NULL;
	t->slots[find_slot(t, t->slots, t->nr_slots, name)] = (uint32_t)(t->nr + 1);
	t->nr++;
	return f;
}

void pd_build_ids_destroy(struct pd_build_ids *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->files[i].name);
	free(t->files);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

void pd_build_ids_note_mapping(struct pd_build_ids *t, const struct perf_event_header *record)
{
	const uint8_t *bytes = (const uint8_t *)record;
	unsigned int cpumode = record->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	struct pd_build_id_file *file;
	struct rv_perf_mmap mapping;
	const char *name;
	bool kernel;

	if (rv_perf_mmap_parse(record, &mapping) || !mapping.filename[0])
		return;
	if (cpumode != PERF_RECORD_MISC_KERNEL && cpumode != PERF_RECORD_MISC_USER)
		return; /* guests, hypervisor: not this machine's files */
	name = mapping.filename;
	kernel = cpumode == PERF_RECORD_MISC_KERNEL;
	if (kernel && strncmp(name, "[kernel.kallsyms]", 17) == 0)
		name = "[kernel.kallsyms]";
	else if (name[0] != '/')
		return; /* [vdso], [stack], //anon: nothing to look up */
	if (table_find(t, name))
		return;
	file = table_add(t, name);
	if (!file)
		return;
	file->misc = kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	if (record->type == PERF_RECORD_MMAP2 && (record->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		uint8_t size = bytes[MMAP2_BUILD_ID_SIZE_OFFSET];

		file->build_id_size = size < BUILD_ID_MAX ? size : BUILD_ID_MAX;
		memcpy(file->build_id, bytes + MMAP2_BUILD_ID_OFFSET, file->build_id_size);
	} else if (name[0] == '[') {
		file->build_id_size = (uint8_t)rv_kernel_running_build_id(file->build_id);
	} else {
		file->build_id_size = (uint8_t)build_id_of_file(name, file->build_id);
	}
	rv_debug2("%s: build id of %zu bytes", name, (size_t)file->build_id_size);
}

void pd_build_ids_put_feature(const struct pd_build_ids *t, struct rv_bytes *b)
{
	/* perf puts the kernel first (its reader checks the first entry's name). */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->nr; i++) {
			const struct pd_build_id_file *file = &t->files[i];
			struct build_id_entry_header h;
			size_t name_len = strlen(file->name) + 1;
			size_t padded = pd_align_up(name_len, PD_NAME_ALIGN);

			if (!file->build_id_size || (file->name[0] == '[') != (pass == 0))
				continue;
			memset(&h, 0, sizeof(h));
			/* header.type stays 0 in the file's table, as perf leaves it */
			h.header.misc = file->misc | RECORD_MISC_BUILD_ID_SIZE;
			h.header.size = (uint16_t)(sizeof(h) + padded);
			h.pid = HOST_KERNEL_PID;
			memcpy(h.build_id, file->build_id, file->build_id_size);
			h.build_id_size = file->build_id_size;
			rv_bytes_put(b, &h, sizeof(h));
			rv_bytes_put(b, file->name, name_len);
			rv_bytes_put(b, NULL, padded - name_len);
		}
	}
}
