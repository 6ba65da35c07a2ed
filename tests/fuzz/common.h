/* common.h: what the libFuzzer harnesses of tests/fuzz share: a
 * scratch directory of the process's own, created once and removed at exit,
 * for the readers that take a path rather than bytes.
 *
 * Each harness is one file, fuzz_NAME.c (the others are shared), built by mk/fuzz.mk into
 * build-fuzz/fuzz/NAME with its seeds in tests/fuzz/corpus/NAME.
 *
 * Not here: any reader's logic; the harnesses call the project's own entry
 * points, never copies of them.
 */
#ifndef RV_FUZZ_COMMON_H
#define RV_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* The process's scratch directory, $TMPDIR/rearview-fuzz-PID-XXXXXX (created
 * on the first call, removed with what is in it at exit; those of harnesses
 * that crashed, whose PID is gone, are removed then too). Aborts when it cannot be made: a harness
 * without it would test nothing. */
const char *fuzz_scratch_dir(void);

/* DIR/name in buf (size bytes); aborts when it does not fit. */
void fuzz_scratch_path(char *buf, size_t size, const char *name);

/* Writes size bytes to DIR/name (replacing it) and returns its path in buf. */
void fuzz_write_file(char *buf, size_t buf_size, const char *name, const uint8_t *data,
		     size_t size);

/* Reads a whole file of the build (the raw PT harness's image); aborts
 * naming it when it cannot. Caller frees. */
uint8_t *fuzz_read_build_file(const char *path, size_t *size);

#endif
