/* fuzz_capture_files.c: the files a kernel-scope capture keeps beside its
 * perf.data, which `rearview decode DIR` reads: the BPF programs' JIT
 * images (DIR/bpf_images, rv_bpf_images_read, each entry's code then read
 * where it says it is) and the kernel's symbols (DIR/kcore_dir/kallsyms,
 * rv_kallsyms_load, then lookups at the symbols' own addresses and between
 * them). The input's first byte chooses the file, the rest is its bytes,
 * written in the harness's scratch directory. Seeds: tools/fuzz-seeds
 * writes an images file of two programs and a kallsyms of made-up
 * addresses (none of this machine's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/bpf_images.h"
#include "common.h"
#include "symbolize/kallsyms.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_scratch_dir();
	return 0;
}

static void bpf_images(const char *path, size_t file_size)
{
	struct rv_bpf_image *images = NULL;
	struct rv_error err = { 0 };
	char *names = NULL;
	bool truncated = false;
	size_t nr = 0;
	FILE *f;

	if (rv_bpf_images_read(path, &images, &nr, &names, &truncated, &err))
		return;
	f = fopen(path, "rb");
	for (size_t i = 0; f && i < nr; i++) {
		uint8_t byte;

		sink += strlen(images[i].name) + images[i].addr;
		/* The code is where the entry says, inside the file (the decoder
		 * reads it there). */
		if (images[i].len && (images[i].code_offset > file_size ||
				      images[i].len > file_size - images[i].code_offset))
			abort();
		if (images[i].len && !fseek(f, (long)images[i].code_offset, SEEK_SET) &&
		    fread(&byte, 1, 1, f) == 1)
			sink += byte;
	}
	if (f)
		fclose(f);
	free(images);
	free(names);
}

static void kallsyms(const char *path)
{
	struct rv_kallsyms table = { 0 };
	struct rv_error err = { 0 };

	if (rv_kallsyms_load(&table, path, &err))
		return;
	for (size_t i = 0; i < table.nr; i++) {
		const struct rv_ksym *at = rv_kallsyms_find(&table, table.syms[i].addr);
		const struct rv_ksym *after =
			rv_kallsyms_find(&table, table.syms[i].addr + table.syms[i].size / 2);

		sink += (at ? strlen(at->name) : 0) + (after ? after->size : 0);
	}
	sink += rv_kallsyms_find(&table, 0) != NULL;
	rv_kallsyms_destroy(&table);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[4096];

	if (!size)
		return 0;
	if (data[0] & 1) {
		fuzz_write_file(path, sizeof(path), "kallsyms", data + 1, size - 1);
		kallsyms(path);
	} else {
		fuzz_write_file(path, sizeof(path), RV_BPF_IMAGES_FILE, data + 1, size - 1);
		bpf_images(path, size - 1);
	}
	unlink(path);
	return 0;
}
