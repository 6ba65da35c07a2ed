/* debuginfo.h: where libdwfl looks for a file's separate debug information,
 * the one setting every libdwfl session of rearview shares (the symbolizer,
 * the PT decoder's stretches of code, probe sites).
 *
 * libdwfl's standard search, which this keeps: the file's own .symtab; a
 * separate debug file by build ID (DIR/.build-id/xx/yyyy.debug, what
 * Debian's -dbgsym packages install under /usr/lib/debug) or by
 * .gnu_debuglink (beside the file, in its .debug/ directory, or under DIR
 * with the file's path; the file must carry the module's build ID, or
 * without one the CRC the link names), a dwz file (.gnu_debugaltlink) the
 * same ways and in DIR/.dwz/; MiniDebugInfo (.gnu_debugdata, an
 * xz-compressed ELF with a .symtab, merged with .dynsym); then debuginfod,
 * only where DEBUGINFOD_URLS is set and not empty (libdebuginfod, and the
 * libraries it pulls in, are loaded only then). DIR is /usr/lib/debug, or
 * the directories listed in REARVIEW_DEBUG_DIRS (colon-separated), for tests
 * and for debug trees kept elsewhere.
 *
 * Not here: reading the symbols (symtab.h).
 */
#ifndef RV_SYMBOLIZE_DEBUGINFO_H
#define RV_SYMBOLIZE_DEBUGINFO_H

#include <elfutils/libdwfl.h>

#define RV_DEBUG_DIRS_ENV "REARVIEW_DEBUG_DIRS"

/* Callbacks for a libdwfl session whose modules the caller reports itself
 * (dwfl_report_elf, dwfl_report_offline), so that libdwfl never asks its
 * find_elf (which would try debuginfod for a missing file). libdwfl keeps a
 * pointer to them: the struct must outlive every session begun with it, and
 * not move. */
struct rv_debuginfo {
	Dwfl_Callbacks callbacks;
	char *path; /* libdwfl's debuginfo_path; NULL: its default */
};

/* Reads REARVIEW_DEBUG_DIRS and DEBUGINFOD_URLS; the search reads
 * REARVIEW_DEBUG_DIRS again, so neither may change while a session lives.
 * Returns 0, or -ENOMEM. */
int rv_debuginfo_init(struct rv_debuginfo *d);

void rv_debuginfo_destroy(struct rv_debuginfo *d);

#endif
