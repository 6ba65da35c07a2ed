/* bpf_images.h: the JIT images of BPF programs, saved beside a kernel-scope
 * capture (DIR/bpf_images), so that Intel PT through BPF programs decodes:
 * the kernel traces their JIT code at addresses that no kcore copy or vmlinux
 * holds (the programs are loaded and unloaded at run time).
 *
 * The file (little-endian, as the machine that recorded it):
 *
 *   header  8 bytes  "RVBPFJIT"
 *           u32      version (1)
 *           u32      0
 *   then one entry per function of a program (a program with subprograms
 *   has one per JIT function, in the kernel's order), each:
 *           u32      size of the entry in bytes (this field included; a
 *                    multiple of 8)
 *           u32      the program's id (bpf_prog_info.id)
 *           u64      the function's address (bpf_prog_info.jited_ksyms[i])
 *           u32      its length in bytes (jited_func_lens[i])
 *           u16      name bytes, NUL included
 *           u16      the function's index in the program
 *           u8[8]    the function's tag (prog_tags[i])
 *           char[]   the name the kernel gives the function in kallsyms and
 *                    in PERF_RECORD_KSYMBOL ("bpf_prog_<tag>_<name>"), NUL
 *                    terminated, zeros to the next 8 bytes
 *           u8[]     the code (jited_prog_insns' bytes of the function, as
 *                    the kernel held them when saved), zeros to the next 8
 *
 * Entries are appended as programs are saved, so a program loaded, unloaded
 * and loaded again at another address has two entries; one id is saved
 * once. The code is what the kernel held when the entry was written: later
 * changes to it come as TEXT_POKE records.
 *
 * Not here: asking the kernel (record/bpf_images.h), decoding
 * (decode/pt_capture_bpf.c).
 */
#ifndef RV_CAPTURE_BPF_IMAGES_H
#define RV_CAPTURE_BPF_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define RV_BPF_IMAGES_FILE  "bpf_images"
#define RV_BPF_IMAGES_MAGIC "RVBPFJIT"
#define RV_BPF_TAG_BYTES    8
/* The longest name an entry may hold, NUL included (the kernel's KSYM_NAME_LEN). */
#define RV_BPF_NAME_BYTES 512

struct rv_bpf_image {
	uint32_t prog_id;
	uint16_t func;
	uint8_t tag[RV_BPF_TAG_BYTES];
	uint64_t addr;
	uint32_t len;
	const char *name;
	/* writing: the len bytes of code; reading: NULL, and code_offset says
	 * where they are in the file */
	const uint8_t *code;
	uint64_t code_offset;
};

/* Appends one entry to the open file fd (positioned at its end; a new file
 * gets the header first when `header`). Returns 0, or a negative errno with
 * err set naming path. */
int rv_bpf_images_append(int fd, const char *path, bool header, const struct rv_bpf_image *image,
			 struct rv_error *err);

/* The entries of the file at path, in file order; names point into *names,
 * which the caller frees with free() (as *out). A file that ends inside an
 * entry keeps the entries before it (*truncated set). Returns 0, -ENOENT
 * when there is no such file, or another negative errno (err set: not such
 * a file, unreadable, out of memory). */
int rv_bpf_images_read(const char *path, struct rv_bpf_image **out, size_t *nr, char **names,
		       bool *truncated, struct rv_error *err);

#endif
