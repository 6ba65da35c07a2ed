/* unwind.c: user stacks from a sample's registers and stack copy, through
 * libdwfl's CFI unwinder; see unwind.h.
 *
 * libdwfl unwinds "a process" through callbacks. Here the process is a
 * sample: one thread, registers from PERF_SAMPLE_REGS_USER, memory only the
 * copied stack. State is attached once per Dwfl (the symbolizer's, one per
 * process); each rv_unwind points that state at the sample in hand and
 * unpoints it afterwards. dwfl_getthread_frames builds the thread's frames
 * afresh on every call (initial registers included) and frees them before it
 * returns, so nothing of one sample survives into the next; modules reported
 * later (dlopen) are simply found by the next unwind.
 *
 * This is not: a symbolizer, nor a frame-pointer walker of its own (libdwfl
 * falls back to the frame pointer where a module has no CFI).
 */
#define RV_LOG_DOMAIN "unwind"

#include "symbolize/unwind.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/map.h"

/* perf_regs numbering on x86-64 (arch/x86/include/uapi/asm/perf_regs.h): AX BX
 * CX DX SI DI BP SP IP FLAGS CS SS DS ES FS GS are 0..15, R8..R15 are 16..23. */
#define PERF_REG_X86_SP	   7
#define PERF_REG_X86_IP	   8
#define PERF_REG_X86_COUNT 24

/* DWARF register numbers of the x86-64 psABI (16, the return address, is last). */
#define DWARF_REG_SP  7
#define DWARF_NR_REGS 17

/* DWARF number of each perf_regs register, or -1 for those CFI never names. */
static const int8_t dwarf_of_perf_reg[PERF_REG_X86_COUNT] = {
	[0] = 0,  [1] = 3,  [2] = 2,   [3] = 1,	  [4] = 4,   [5] = 5,	[6] = 6,   [7] = 7,
	[8] = 16, [9] = -1, [10] = -1, [11] = -1, [12] = -1, [13] = -1, [14] = -1, [15] = -1,
	[16] = 8, [17] = 9, [18] = 10, [19] = 11, [20] = 12, [21] = 13, [22] = 14, [23] = 15,
};

/* What one Dwfl's attached state sees: the sample being unwound, if any.
 * libdwfl owns it once attached and frees it through the detach callback
 * when the Dwfl ends, so it lives exactly as long as the Dwfl. */
struct unwind_session {
	const struct rv_unwind_input *sample; /* NULL between unwinds */
	pid_t tid;
	uint64_t sp, ip;
	Dwarf_Word regs[DWARF_NR_REGS];
	uint32_t regs_present; /* bit n: DWARF register n is known */
	bool beyond_copy;      /* a read above the copied stack failed */
};

struct rv_unwinder {
	struct rv_symbolizer *symbolizer;
	/* Sessions this unwinder attached, by Dwfl address. An entry may
	 * outlive its Dwfl; it is only trusted while that Dwfl reports attached
	 * state, and replaced when a new Dwfl takes the address. */
	struct rv_map sessions;
	bool last_cut;	   /* the last rv_unwind stopped at the copy's end */
	bool last_stopped; /* ... at a caller nothing described, inside the copy */
};

struct frame_collector {
	uint64_t *frames;
	size_t max, count;
	uint64_t last_sp;
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct unwind_session *us = dwfl_arg;

	if (*thread_argp || !us->sample)
		return 0;
	*thread_argp = us;
	return us->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct unwind_session *us = dwfl_arg;

	if (!us->sample || tid != us->tid)
		return false;
	*thread_argp = us;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct unwind_session *us = dwfl_arg;
	uint64_t offset;

	if (!us->sample || addr < us->sp)
		return false;
	offset = addr - us->sp;
	if (offset > us->sample->stack_size || us->sample->stack_size - offset < sizeof(*result)) {
		us->beyond_copy = true;
		return false;
	}
	memcpy(result, us->sample->stack + offset, sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct unwind_session *us = thread_arg;

	for (int reg = 0; reg < DWARF_NR_REGS; reg++) {
		if (!(us->regs_present & (1u << reg)))
			continue;
		if (!dwfl_thread_state_registers(thread, reg, 1, &us->regs[reg]))
			return false;
	}
	dwfl_thread_state_register_pc(thread, us->ip);
	return true;
}

static void detach(Dwfl *dwfl, void *dwfl_arg)
{
	free(dwfl_arg);
}

static const Dwfl_Thread_Callbacks sample_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
	.detach = detach,
};

static int collect_frame(Dwfl_Frame *state, void *arg)
{
	struct frame_collector *c = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (c->count > 0) {
		if (pc == 0)
			return DWARF_CB_ABORT; /* the outermost frame's caller */
		/* Callers live higher up the stack; anything else is a loop in
		 * corrupt or misread data. */
		if (dwfl_frame_reg(state, DWARF_REG_SP, &sp) == 0) {
			if (sp <= c->last_sp)
				return DWARF_CB_ABORT;
			c->last_sp = sp;
		}
	}
	c->frames[c->count++] = pc;
	return c->count < c->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* The session attached to dwfl, attaching one on first use; NULL when libdwfl
 * cannot unwind this process (no module told it the architecture) or another
 * unwinder attached it. */
static struct unwind_session *session_for(struct rv_unwinder *u, Dwfl *dwfl, pid_t pid)
{
	struct unwind_session *us;

	if (dwfl_pid(dwfl) >= 0) {
		us = rv_map_get(&u->sessions, (uintptr_t)dwfl);
		if (!us)
			rv_debug("pid %d: its libdwfl session belongs to another unwinder",
				 (int)pid);
		return us;
	}
	us = calloc(1, sizeof(*us));
	if (!us)
		return NULL;
	if (!dwfl_attach_state(dwfl, NULL, pid, &sample_callbacks, us)) {
		rv_debug("pid %d: cannot unwind: %s", (int)pid, dwfl_errmsg(-1));
		free(us);
		return NULL;
	}
	/* From here libdwfl owns us (see detach). */
	/* (a new Dwfl at a freed one's address replaces its entry) */
	if (rv_map_put(&u->sessions, (uintptr_t)dwfl, us))
		return NULL;
	return us;
}

int rv_unwinder_new(struct rv_unwinder **out, struct rv_symbolizer *symbolizer,
		    struct rv_error *err)
{
	struct rv_unwinder *u;

	*out = NULL;
	if (!symbolizer)
		return rv_error_set(err, EINVAL, "the unwinder needs a symbolizer");
	u = calloc(1, sizeof(*u));
	if (!u)
		return rv_error_set(err, ENOMEM, "out of memory creating the unwinder");
	u->symbolizer = symbolizer;
	*out = u;
	return 0;
}

/* Spreads the sample's registers (in perf_regs bit order) into DWARF order. */
static int load_registers(const struct rv_unwind_input *in, struct unwind_session *regs,
			  struct rv_error *err)
{
	const uint64_t required = (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP);
	size_t next = 0;

	if ((in->regs_mask & required) != required)
		return rv_error_set(
			err, EINVAL,
			"the sample's user registers lack IP or SP, so its stack cannot be "
			"unwound; record with --callgraph-mode dwarf");
	if (!in->regs)
		return rv_error_set(err, EINVAL, "the sample claims user registers but has none");
	if (in->stack_size && !in->stack)
		return rv_error_set(err, EINVAL, "the sample claims a stack copy but has none");
	regs->regs_present = 0;
	for (int bit = 0; bit < 64; bit++) {
		uint64_t value;

		if (!(in->regs_mask & (1ull << bit)))
			continue;
		value = in->regs[next++];
		if (bit == PERF_REG_X86_SP)
			regs->sp = value;
		if (bit == PERF_REG_X86_IP)
			regs->ip = value;
		if (bit < PERF_REG_X86_COUNT && dwarf_of_perf_reg[bit] >= 0) {
			regs->regs[dwarf_of_perf_reg[bit]] = value;
			regs->regs_present |= 1u << dwarf_of_perf_reg[bit];
		}
	}
	return 0;
}

int rv_unwind(struct rv_unwinder *u, const struct rv_unwind_input *in, uint64_t *frames,
	      size_t max_frames, size_t *nr_frames, struct rv_error *err)
{
	struct unwind_session sample_regs, *us;
	struct frame_collector collector;
	Dwfl *dwfl;
	pid_t tid;
	int ret;

	if (!u || !in || !nr_frames || (max_frames && !frames))
		return rv_error_set(err, EINVAL, "rv_unwind: missing argument");
	*nr_frames = 0;
	u->last_cut = u->last_stopped = false;
	ret = load_registers(in, &sample_regs, err);
	if (ret)
		return ret;
	if (!max_frames)
		return 0;
	frames[0] = sample_regs.ip;
	*nr_frames = 1;
	dwfl = max_frames > 1 ? rv_symbolizer_dwfl(u->symbolizer, in->pid) : NULL;
	if (!dwfl)
		return 0;
	us = session_for(u, dwfl, (pid_t)in->pid);
	if (!us)
		return 0;
	/* libdwfl needs a positive thread id; which one does not matter. */
	tid = in->tid ? (pid_t)in->tid : in->pid ? (pid_t)in->pid : 1;
	if (tid <= 0)
		tid = 1;
	memcpy(us->regs, sample_regs.regs, sizeof(us->regs));
	us->regs_present = sample_regs.regs_present;
	us->sp = sample_regs.sp;
	us->ip = sample_regs.ip;
	us->tid = tid;
	us->sample = in;
	us->beyond_copy = false;
	collector.frames = frames;
	collector.max = max_frames;
	collector.count = 0;
	collector.last_sp = sample_regs.sp;
	/* An error here only ends the chain early: what came before stands. */
	/* Stopped for want of memory above the copy (libdwfl ends the chain
	 * quietly when a return address cannot be read): the stack was cut. */
	if (dwfl_getthread_frames(dwfl, tid, collect_frame, &collector) < 0) {
		rv_debug2("pid %u: unwinding stopped after %zu frames: %s", in->pid,
			  collector.count, dwfl_errmsg(-1));
		u->last_stopped = !us->beyond_copy && collector.count < collector.max;
	}
	u->last_cut = us->beyond_copy && collector.count < collector.max;
	us->sample = NULL;
	if (collector.count)
		*nr_frames = collector.count;
	return 0;
}

bool rv_unwind_cut(const struct rv_unwinder *u)
{
	return u && u->last_cut;
}

bool rv_unwind_stopped(const struct rv_unwinder *u)
{
	return u && u->last_stopped;
}

void rv_unwinder_free(struct rv_unwinder *u)
{
	if (!u)
		return;
	/* The sessions belong to their Dwfls, which free them when they end. */
	rv_map_destroy(&u->sessions);
	free(u);
}
