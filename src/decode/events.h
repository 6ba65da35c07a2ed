/* events.h: the one stream of events that decoders produce and the trace
 * builder consumes, in time order per thread.
 *
 * Each decoder (samples today; Intel PT and function records later) turns its
 * capture into these, so that the builder needs to know nothing about where
 * they came from.
 */
#ifndef RV_DECODE_EVENTS_H
#define RV_DECODE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rv_event_kind {
	RV_EVENT_STACK_SAMPLE, /* a sampled call stack */
	RV_EVENT_THREAD_NAME,  /* a thread got (or changed) its name */
	RV_EVENT_THREAD_EXIT,  /* a thread ended */
	RV_EVENT_LOST,	       /* records the kernel could not deliver */
};

struct rv_frame {
	uint64_t addr;
	bool kernel;
	/* addr is an instruction pointer (the leaf, or where user code entered the
	 * kernel) rather than a return address; return addresses are looked up at
	 * addr - 1 so that they land in the calling function. */
	bool is_ip;
};

struct rv_event {
	enum rv_event_kind kind;
	uint32_t pid, tid;
	uint64_t time; /* nanoseconds, the capture's clock */
	union {
		struct {
			const struct rv_frame *frames; /* leaf first */
			size_t nr_frames;
			uint64_t interval_ns; /* nominal time one sample stands for */
			/* the user frames come from a frame-pointer walk, which
			 * cannot see the caller of a function that has not yet set
			 * up its frame */
			bool frame_pointers;
		} stack;
		struct {
			const char *name;
		} thread;
		struct {
			uint64_t count;
		} lost;
	};
};

#endif
