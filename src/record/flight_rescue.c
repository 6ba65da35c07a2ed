/* flight_rescue.c: a killed flight-recorder capture merged into
 * DIR/perf.data; see flight_rescue.h. */
#include "record/flight_rescue.h"
#include "record/flight_recorder.h"
#include "util/array.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A record kept for the merge: where its bytes are, its time, and which
 * came first (sideband before samples at the same time, each in order). */
struct held {
	uint64_t time;
	size_t order;
	size_t at, size; /* in the byte store */
};

struct rescue {
	struct rv_perf_reader *reader;
	struct held *held;
	size_t nr, cap;
	uint8_t *bytes;
	size_t used, bytes_cap;
	uint64_t first_sample, last_sample;
	uint64_t samples;
	bool failed;
};

static int compare_held(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The record's time, by its event (0 when it cannot be told). */
static uint64_t record_time(const struct rv_perf_reader *r, const struct perf_event_header *rec)
{
	struct rv_error ignored = { 0 };

	if (rec->type == PERF_RECORD_SAMPLE) {
		struct rv_perf_sample s;

		return rv_perf_reader_parse_sample(r, rec, &s, &ignored) ? 0 : s.time;
	}
	{
		struct rv_perf_sample_id id;

		return rv_perf_reader_parse_sample_id(r, rec, &id, &ignored) || !id.valid ? 0
											  : id.time;
	}
}

static int keep(struct rescue *k, const struct perf_event_header *rec, bool sample)
{
	uint64_t time = record_time(k->reader, rec);

	if (rv_array_grow(&k->held, &k->cap, k->nr, sizeof(*k->held), 1024) ||
	    rv_array_reserve(&k->bytes, &k->bytes_cap, k->used + rec->size, 1, 1 << 20)) {
		k->failed = true;
		return -ENOMEM;
	}
	k->held[k->nr] = (struct held){ time, k->nr, k->used, rec->size };
	memcpy(k->bytes + k->used, rec, rec->size);
	k->used += rec->size;
	k->nr++;
	if (sample) {
		k->samples++;
		if (time && (!k->first_sample || time < k->first_sample))
			k->first_sample = time;
		if (time > k->last_sample)
			k->last_sample = time;
	}
	return 0;
}

static int keep_sample(void *ctx, const struct perf_event_header *rec)
{
	return keep(ctx, rec, rec->type == PERF_RECORD_SAMPLE);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The merged capture, written at path. */
static int write_merged(struct rescue *k, const char *path, struct rv_error *err)
{
	const struct rv_perf_reader *r = k->reader;
	struct rv_perf_writer *w;
	const char *const *argv = NULL;
	const struct rv_perf_attr *first = rv_perf_reader_attr(r, 0);
	struct rv_perf_meta meta = {
		.clockid = first && first->attr.use_clockid ? first->attr.clockid : -1,
	};
	int ret;

	meta.argc = rv_perf_reader_cmdline(r, &argv);
	meta.argv = argv;
	meta.tracing_data =
		rv_perf_reader_feature_data(r, RV_FEAT_TRACING_DATA, &meta.tracing_data_size);
	ret = rv_perf_writer_open(&w, path, err);
	if (ret)
		return ret;
	for (size_t i = 0; !ret && i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		ret = rv_perf_writer_add_attr(w, &a->attr, a->name, a->ids, a->nr_ids, err);
	}
	for (size_t i = 0; !ret && i < k->nr; i++)
		ret = rv_perf_writer_write(
			w, (const struct perf_event_header *)(void *)(k->bytes + k->held[i].at),
			err);
	rv_perf_writer_set_time_range(w, k->first_sample, k->last_sample);
	if (!ret)
		ret = rv_perf_writer_finish(w, &meta, err);
	rv_perf_writer_free(w);
	return ret;
}

int rv_flight_rescue(const char *path, struct rv_flight_rescue_report *out, struct rv_error *err)
{
	char ring[PATH_MAX], data[PATH_MAX], capture[PATH_MAX], merged[PATH_MAX];
	struct rescue k = { 0 };
	struct rv_perf_reader *whole = NULL;
	struct rv_perf_record rec;
	struct rv_error ignored = { 0 };
	struct stat st;
	int ret, got;

	char dir[PATH_MAX];
	const char *slash;

	memset(out, 0, sizeof(*out));
	if (stat(path, &st))
		return 0;
	/* DIR/perf.data names the capture as DIR does */
	if (S_ISREG(st.st_mode)) {
		slash = strrchr(path, '/');
		if (strcmp(slash ? slash + 1 : path, "perf.data"))
			return 0;
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if (slash - path >= (ptrdiff_t)sizeof(dir))
			return 0;
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		path = dir[0] ? dir : "/";
	} else if (!S_ISDIR(st.st_mode)) {
		return 0;
	}
	if (snprintf(ring, sizeof(ring), "%s/%s", path, RV_FLIGHT_RING_FILE) >= (int)sizeof(ring) ||
	    snprintf(data, sizeof(data), "%s/%s", path, RV_FLIGHT_RESCUE_FILE) >=
		    (int)sizeof(data) ||
	    snprintf(capture, sizeof(capture), "%s/perf.data", path) >= (int)sizeof(capture) ||
	    snprintf(merged, sizeof(merged), "%s/.perf.data.rescue", path) >= (int)sizeof(merged))
		return 0;
	if (!exists(ring) || !exists(data))
		return 0;
	/* killed after the capture was finished, before these went */
	if (exists(capture) && rv_perf_reader_open(&whole, capture, &ignored) == 0) {
		rv_perf_reader_free(whole);
		return 0;
	}
	ret = rv_perf_reader_open(&k.reader, data, err);
	if (ret) {
		rv_error_prefix(err, "the recording in '%s' was killed and cannot be rebuilt",
				path);
		return ret;
	}
	rv_perf_reader_flush_info(k.reader, &out->flushed);
	/* the sideband and marks, up to the last flush (which ends them with
	 * an error saying the capture was cut: expected) */
	while ((got = rv_perf_reader_next(k.reader, &rec, &ignored)) == 1)
		if (rec.header->type != RV_PERF_RECORD_FINISHED_ROUND &&
		    keep(&k, rec.header, false))
			break;
	out->sideband = k.nr;
	ret = k.failed ? rv_error_set(err, ENOMEM, "out of memory rebuilding '%s'", capture)
		       : rv_flight_file_read(ring, keep_sample, &k, err);
	if (!ret && k.failed)
		ret = rv_error_set(err, ENOMEM, "out of memory rebuilding '%s'", capture);
	if (!ret) {
		qsort(k.held, k.nr, sizeof(*k.held), compare_held);
		ret = write_merged(&k, merged, err);
	}
	if (!ret && rename(merged, capture))
		ret = rv_error_set(err, errno, "cannot replace '%s': %s", capture, strerror(errno));
	if (!ret) {
		unlink(ring);
		unlink(data);
		out->rescued = true;
		out->samples = k.samples;
	} else {
		unlink(merged);
		rv_error_prefix(err, "the recording in '%s' was killed and cannot be rebuilt",
				path);
	}
	rv_perf_reader_free(k.reader);
	free(k.held);
	free(k.bytes);
	return ret;
}
