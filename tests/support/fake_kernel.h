/* fake_kernel.h: a simulated perf kernel for the PT engine's ops table
 * (src/record/pt_engine.h), so that unit tests run the engine, and whole PT
 * sessions, without Intel PT hardware or root.
 *
 * The fake hands out fds from FAKE_FD0 up, one per perf_event_open, and
 * memory for each event's mmap page, data ring and AUX area. The test plays
 * the kernel and the hardware: fake_kernel_record appends records to a data
 * ring, fake_kernel_trace writes trace bytes round an AUX area and moves
 * aux_head as the PT driver does. The fake checks what the engine must do
 * (events opened disabled, the AUX area mapped where the mmap page announced
 * it, SET_OUTPUT to a mapped ring) with Criterion assertions, so it is for
 * Criterion tests only. As the kernel, it refuses (EINVAL) to map a per-task
 * event (cpu -1) that children inherit.
 *
 * Pausing and resuming Intel PT is modelled as Linux 6.13+ does it (read in
 * kernel/events/core.c and arch/x86/events/intel/pt.c):
 *   - an intel_pt event opened with aux_start_paused starts paused
 *     (perf_event_alloc sets hw.aux_paused);
 *   - a sibling's overflow (fake_kernel_overflow: a gate uprobe hit the BPF
 *     program let through, or a cpu-clock period) pauses the group's PT
 *     event when the sibling has aux_pause and resumes it when it has
 *     aux_resume (__perf_event_overflow: pause before the sample, resume
 *     after it; __perf_event_aux_pause changes hw.aux_paused and calls the
 *     driver only when the state changes), and only while the group is
 *     scheduled in (both enabled): a sibling of a disabled group does not
 *     fire;
 *   - nothing else resumes it: PERF_EVENT_IOC_DISABLE then ENABLE leaves a
 *     paused event paused (pt_config_start returns at hw.aux_paused, which
 *     only __perf_event_aux_pause clears);
 *   - a paused or disabled PT event's hardware writes nothing
 *     (fake_kernel_trace drops the bytes and says so);
 *   - in snapshot mode aux_head is published only when the event is
 *     stopped with PERF_EF_UPDATE, that is at DISABLE (pt_event_del ->
 *     pt_event_stop -> perf_aux_output_end), never at a pause (the
 *     PERF_EF_PAUSE path of pt_event_stop only clears TraceEn); in full
 *     mode the PMI publishes as the hardware goes, as before;
 *   - PERF_EVENT_IOC_REFRESH n adds n to the event's limit and enables it,
 *     and is refused (EINVAL) for an inherited or non-sampling event
 *     (_perf_event_refresh); the overflow that takes the limit to 0
 *     disables the event (perf_event_disable_inatomic) and still pauses or
 *     resumes.
 * Not modelled: the PERF_RECORD_AUX the kernel writes at each sched-out
 * (tests write their own), context switches, several CPUs.
 *
 * Also a fake /proc for one process (fake_proc_write), which the engine reads
 * to synthesize threads and mappings.
 *
 * Not here: the records themselves (capture/synth.h), reading the capture
 * back (capture/perf_data.h), a real kernel (rv_pt_syscall_ops).
 */
#ifndef RV_TESTS_FAKE_KERNEL_H
#define RV_TESTS_FAKE_KERNEL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record/pt_engine.h"

#define FAKE_MAX 32   /* events one fake kernel holds */
#define FAKE_FD0 300  /* the first fd; event i is fd FAKE_FD0 + i */
#define FAKE_ID0 7000 /* event i's PERF_EVENT_IOC_ID is FAKE_ID0 + i */

struct fake_event {
	bool open; /* until closed */
	struct perf_event_attr attr;
	pid_t pid;
	int cpu, group_fd, output_fd; /* output_fd: SET_OUTPUT's target, else -1 */
	uint64_t id;
	bool enabled;
	bool traced; /* enable_trace was written into its AUX area */
	void *ring;  /* the mmap page, then the data ring */
	size_t ring_bytes;
	uint8_t *aux;
	size_t aux_bytes;
	int aux_prot;	      /* PROT_WRITE: full mode (aux_tail bounds the hardware) */
	uint64_t aux_written; /* the hardware's free-running count */
	bool paused;	      /* intel_pt: hw.aux_paused */
	int event_limit;      /* PERF_EVENT_IOC_REFRESH's count; 0: none */
	uint64_t overflows;   /* fake_kernel_overflow calls that fired */
	uint64_t dropped;     /* trace bytes not written: paused or disabled */
};

struct fake_kernel {
	/* What the test sets before the first call (zero: as noted). */
	uint16_t time_shift; /* the mmap page's clock; cap_user_time_zero is always 1 */
	uint32_t time_mult;
	uint64_t time_zero;
	uint64_t tsc;	   /* read_tsc adds tsc_step to this and returns it */
	uint64_t tsc_step; /* 0: 1000 */
	int fail_errno;	   /* non-zero: perf_event_open call number fail_at (0-based) */
	int fail_at;	   /* fails with -fail_errno */
	/* When an event of type pt_type is enabled for the first time with
	 * its AUX area mapped, the hardware writes these bytes into that area
	 * (as fake_kernel_trace); NULL: nothing. */
	uint32_t pt_type;
	const uint8_t *enable_trace;
	size_t enable_trace_size;

	/* What happened. */
	struct fake_event ev[FAKE_MAX];
	int nr;	   /* events opened */
	int opens; /* perf_event_open calls counted while fail_errno is set */
	int enables, disables, set_outputs, refreshes;
	int pauses, resumes; /* state changes of PT events (hw.aux_paused) */
};

/* The ops table whose ctx is k. */
struct rv_pt_ops fake_kernel_ops(struct fake_kernel *k);

/* The event of fd; fails the test for an fd the fake did not hand out. */
struct fake_event *fake_kernel_event(struct fake_kernel *k, int fd);

/* The kernel appends a record (its header's size) to an event's data ring;
 * fails the test when the ring is full. */
void fake_kernel_record(struct fake_event *ev, const void *rec);

/* The hardware writes n bytes of trace round ev's AUX area, when ev is
 * enabled and not paused (else it writes nothing and returns 0). Snapshot
 * mode: round and round, aux_head (the position within the area, as the PT
 * driver reports it) published at the next DISABLE. Full mode:
 * free-running, never past aux_tail (fails the test), published at once.
 * Returns the bytes written. */
size_t fake_kernel_trace(struct fake_event *ev, const uint8_t *bytes, size_t n);

/* A group sibling (fd) overflows in the traced task's context, thread tid,
 * at perf time `time`: if it and its leader are enabled, its aux_pause or
 * aux_resume acts on the leader, its refresh limit counts down, and a
 * sample ({id, ip, pid/tid, time, cpu}, for RV_PT_SAMPLE_TYPE) goes to its
 * ring (or SET_OUTPUT's). Returns whether it fired. */
bool fake_kernel_overflow(struct fake_kernel *k, int fd, pid_t tid, uint64_t time);

/* Writes text to path, failing the test when it cannot. */
void fake_write_text(const char *path, const char *text);

/* ROOT/proc/PID for a process of one thread: task/PID/comm ("comm\n") and
 * maps (maps: /proc/PID/maps lines). */
void fake_proc_write(const char *root, pid_t pid, const char *comm, const char *maps);

#endif
