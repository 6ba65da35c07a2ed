/* ifunc.h: what an IFUNC symbol stands for in a running process, read from
 * the process's memory, without running anything in it or in rearview (a
 * resolver picks by the CPU and by the process's own settings, such as
 * GLIBC_TUNABLES, so only the process's choice is the truth).
 *
 * The dynamic linker writes the function the resolver chose into the GOT
 * slots that refer to the IFUNC: those of the process's objects whose
 * JUMP_SLOT or GLOB_DAT relocation names the symbol (a PLT slot once the
 * program called it, or at load time when bound now), and the library's own
 * IRELATIVE slots whose addend is the resolver. The first such slot that
 * holds an address in the library's code names the function: the
 * symbolizer's name for that address (a debug file's local symbols count,
 * such as libm's __sin_fma). Every relocation, slot and mapping is read
 * within bounds; objects that cannot be read are passed over.
 *
 * Not here: selecting functions (fn_select.h), probe sites (probe_site.h).
 */
#ifndef RV_RECORD_IFUNC_H
#define RV_RECORD_IFUNC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum rv_ifunc_answer {
	RV_IFUNC_RESOLVED,   /* out holds the function's name */
	RV_IFUNC_NOT_LOADED, /* no process, or it has not mapped the library (yet) */
	RV_IFUNC_NOT_BOUND,  /* no slot holds the choice: nothing called it yet */
};

/* The function the IFUNC `name` of the library at lib_path (its symbol's
 * value `resolver`, a link-time address) resolved to in process pid: its
 * name in out (size bytes). */
enum rv_ifunc_answer rv_ifunc_resolve(pid_t pid, const char *lib_path, uint64_t resolver,
				      const char *name, char *out, size_t size);

#endif
