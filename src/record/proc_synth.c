/* proc_synth.c: COMM and MMAP2 records from /proc; see proc_synth.h. */
#include "record/proc_synth.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Room for any record synth.h builds (4096 + PATH_MAX bytes). */
struct synth_buffer {
	union {
		struct perf_event_header header;
		uint8_t bytes[8192];
	};
};

static void proc_path(const struct rv_proc_synth *p, char *out, size_t size, const char *fmt,
		      unsigned a, unsigned long b)
{
	char rel[128];

	snprintf(rel, sizeof(rel), fmt, a, b);
	snprintf(out, size, "%s%s", p->root ? p->root : "", rel);
}

static int emit(const struct rv_proc_synth *p, size_t size, const struct synth_buffer *b,
		struct rv_error *err)
{
	if (size == 0)
		return rv_error_set(err, EOVERFLOW, "a synthesized sideband record did not fit");
	return p->emit(p->ctx, &b->header, err);
}

static struct rv_synth_id trailer(const struct rv_proc_synth *p, uint32_t pid, uint32_t tid)
{
	struct rv_synth_id id = { .pid = pid, .tid = tid, .cpu = 0, .time = p->time, .id = p->id };

	return id;
}

int rv_proc_synth_threads(const struct rv_proc_synth *p, uint32_t pid, struct rv_error *err)
{
	char path[4200];
	struct dirent *de;
	DIR *dir;
	int ret = 0;

	proc_path(p, path, sizeof(path), "/proc/%u/task", pid, 0);
	dir = opendir(path);
	if (!dir)
		return 0; /* gone: its exit ends the recording */
	while (!ret && (de = readdir(dir))) {
		char comm[32] = "", *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);
		struct synth_buffer b;
		FILE *f;

		if (*end || tid == 0)
			continue;
		proc_path(p, path, sizeof(path), "/proc/%u/task/%lu/comm", pid, tid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		struct rv_synth_id id = trailer(p, pid, (uint32_t)tid);
		ret = emit(p,
			   rv_synth_comm(&p->synth, b.bytes, sizeof(b.bytes), pid, (uint32_t)tid,
					 comm, false, &id),
			   &b, err);
	}
	closedir(dir);
	return ret;
}

static uint32_t parse_prot(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
}

int rv_proc_synth_mmaps(const struct rv_proc_synth *p, uint32_t pid, struct rv_error *err)
{
	char path[4200], line[4096 + 256], filename[4096 + 1];
	struct rv_synth_id id = trailer(p, pid, pid);
	FILE *f;
	int ret = 0;

	proc_path(p, path, sizeof(path), "/proc/%u/maps", pid, 0);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!ret && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, inode;
		unsigned int major, minor;
		char perms[8] = "";
		int name_at = 0;
		const char *name;
		size_t name_len;
		struct synth_buffer b;
		uint16_t misc = PERF_RECORD_MISC_USER;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff,
			   &major, &minor, &inode, &name_at) < 7)
			continue;
		name = name_at > 0 ? line + name_at : "";
		name_len = strcspn(name, "\n");
		if (perms[2] != 'x' && (!p->data_mappings || name[0] != '/'))
			continue;
		if (p->code_files_only &&
		    (name_len == 0 || (name_len == 10 && !strncmp(name, "[vsyscall]", 10))))
			continue;
		if (name_len == 0) {
			name = "//anon";
			name_len = 6;
		}
		if (name_len > sizeof(filename) - 1)
			name_len = sizeof(filename) - 1;
		memcpy(filename, name, name_len);
		filename[name_len] = '\0';
		if (perms[2] != 'x')
			misc |= PERF_RECORD_MISC_MMAP_DATA;
		ret = emit(p,
			   rv_synth_mmap2(
				   &p->synth, b.bytes, sizeof(b.bytes), pid, pid, start,
				   end - start, pgoff, major, minor, inode, parse_prot(perms),
				   perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE, filename, misc, &id),
			   &b, err);
	}
	fclose(f);
	return ret;
}

int rv_proc_synth_processes(const struct rv_proc_synth *p, const pid_t *pids, size_t nr_pids,
			    struct rv_error *err)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < nr_pids; i++) {
		ret = rv_proc_synth_threads(p, (uint32_t)pids[i], err);
		if (!ret)
			ret = rv_proc_synth_mmaps(p, (uint32_t)pids[i], err);
	}
	return ret;
}
