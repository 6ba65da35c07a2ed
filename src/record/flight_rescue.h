/* flight_rescue.h: a flight-recorder capture whose recorder was killed,
 * made whole again for rearview decode.
 *
 * Without --full-execution the sampling backend keeps its samples in a
 * flight recorder and writes the capture (DIR/perf.data) only at the end.
 * So that a SIGKILL does not lose them, the recorder keeps in DIR, from the
 * start: the flight recorder itself in RV_FLIGHT_RING_FILE (mapped,
 * record/flight_recorder.h), and RV_FLIGHT_RESCUE_FILE, a perf.data flushed
 * as it grows (capture/perf_data.h) holding the events, the header features
 * and the sideband and marks as they came. A recording that ends removes
 * both. When they are there and DIR/perf.data is not a valid capture (the
 * recorder was killed before it finished it), rv_flight_rescue merges the
 * two by time into DIR/perf.data, written as the recorder would have, and
 * removes them: DIR is then an ordinary capture.
 *
 * Not here: decoding (the caller decodes DIR/perf.data afterwards), the
 * function tracer's own flight recorder (record/fn_stream.h), which is not
 * kept in a file.
 */
#ifndef RV_RECORD_FLIGHT_RESCUE_H
#define RV_RECORD_FLIGHT_RESCUE_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/perf_data.h"
#include "util/error.h"

#define RV_FLIGHT_RING_FILE   "flight.ring"
#define RV_FLIGHT_RESCUE_FILE "flight.data"

struct rv_flight_rescue_report {
	bool rescued;			   /* DIR/perf.data was made from the two */
	uint64_t samples;		   /* records taken from the flight recorder */
	uint64_t sideband;		   /* records taken from the rescue capture */
	struct rv_perf_flush_info flushed; /* the rescue capture's last flush */
};

/* Does the above for path when it is such a directory (or its perf.data);
 * otherwise (another file, a directory without the two, or one whose
 * perf.data is whole) leaves everything as it is, with out->rescued false.
 * Errors say what could not be read or written. */
int rv_flight_rescue(const char *path, struct rv_flight_rescue_report *out, struct rv_error *err);

#endif
