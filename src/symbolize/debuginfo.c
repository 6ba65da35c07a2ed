/* debuginfo.c: libdwfl's search for separate debug files, with the debug
 * directories of REARVIEW_DEBUG_DIRS; see debuginfo.h.
 */
#include "symbolize/debuginfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rv_debuginfo_init(struct rv_debuginfo *d)
{
	const char *dirs = getenv(RV_DEBUG_DIRS_ENV);

	memset(d, 0, sizeof(*d));
	d->callbacks.find_elf = dwfl_build_id_find_elf;
	d->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
	d->callbacks.section_address = dwfl_offline_section_address;
	if (dirs && *dirs) {
		/* libdwfl's form: "" is the file's own directory, ".debug" a
		 * directory beside it, absolute entries are debug roots (by
		 * build ID and by path); as its default, with other roots. */
		if (asprintf(&d->path, ":.debug:%s", dirs) < 0) {
			d->path = NULL;
			return -ENOMEM;
		}
		d->callbacks.debuginfo_path = &d->path;
	}
	return 0;
}

void rv_debuginfo_destroy(struct rv_debuginfo *d)
{
	free(d->path);
	d->path = NULL;
	d->callbacks.debuginfo_path = NULL;
}
