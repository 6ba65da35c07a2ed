/* records.h: the BPF-records harnesses' input, a ring's worth of records
 * of any length: each is one byte of length, one byte the harness uses as
 * it likes (the CPU of the ring it came from), then that many bytes (or
 * what is left). Seeds of this form are written by tools/fuzz-seeds.
 *
 * Not here: what a record means (the harnesses call the project's
 * parsers on each).
 */
#ifndef RV_FUZZ_RECORDS_H
#define RV_FUZZ_RECORDS_H

#include <stddef.h>
#include <stdint.h>

struct fuzz_record {
	const uint8_t *bytes;
	size_t size;
	uint8_t tag;
};

/* The next record at *pos of data (size bytes); 0 at the end. */
static inline int fuzz_next_record(const uint8_t *data, size_t size, size_t *pos,
				   struct fuzz_record *out)
{
	size_t left;

	if (size - *pos < 2)
		return 0;
	out->size = data[*pos];
	out->tag = data[*pos + 1];
	*pos += 2;
	left = size - *pos;
	if (out->size > left)
		out->size = left;
	out->bytes = data + *pos;
	*pos += out->size;
	return 1;
}

#endif
