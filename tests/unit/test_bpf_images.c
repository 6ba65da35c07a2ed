/* test_bpf_images.c: saving BPF programs' JIT code from the running kernel
 * (record/bpf_images.h), for real: a program of the test's own is loaded
 * while the machine-wide watch is open, rearview's gate before a saver
 * starts, and what was saved must equal what the kernel holds: the bytes and addresses
 * bpf_obj_get_info_by_fd gives (asked here once more, in one call), the addresses and names
 * /proc/kallsyms lists, and the KSYMBOL records the kernel wrote for the program. Root only (the
 * machines of CI are root).
 *
 * Not here: decoding with the saved images (test_pt_capture_bpf.c).
 */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/bpf_images.h"
#include "capture/synth.h"
#include "record/bpf_images.h"
#include "record/gate.h"
#include "record/pt_attr.h"
#include "test_env.h"
#include "test_files.h"

static void require_root(void)
{
	if (geteuid() == 0)
		return;
	cr_assert(!under_ci(), "under CI=true the BPF image tests must run as root");
	cr_skip_test("reading BPF programs' code and watching every CPU need root");
}

#define MAX_KSYMS 256

struct watched {
	struct {
		uint64_t addr;
		uint32_t len;
		bool unregister;
		char name[128];
	} ksyms[MAX_KSYMS];
	size_t nr_ksyms;
	uint32_t loaded[MAX_KSYMS]; /* BPF_EVENT PROG_LOAD ids */
	size_t nr_loaded;
	uint64_t pokes;
};

static int watch_record(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	struct watched *w = ctx;
	struct rv_perf_ksymbol k;

	(void)err;
	if (rec->type == PERF_RECORD_KSYMBOL && !rv_perf_ksymbol_parse(rec, &k) &&
	    w->nr_ksyms < MAX_KSYMS) {
		w->ksyms[w->nr_ksyms].addr = k.addr;
		w->ksyms[w->nr_ksyms].len = k.len;
		w->ksyms[w->nr_ksyms].unregister = k.unregister;
		snprintf(w->ksyms[w->nr_ksyms++].name, 128, "%s", k.name);
	}
	if (rec->type == PERF_RECORD_BPF_EVENT && rec->size >= 16 && w->nr_loaded < MAX_KSYMS) {
		uint16_t type;
		uint32_t id;

		memcpy(&type, (const uint8_t *)rec + 8, 2);
		memcpy(&id, (const uint8_t *)rec + 12, 4);
		if (type == PERF_BPF_EVENT_PROG_LOAD)
			w->loaded[w->nr_loaded++] = id;
	}
	w->pokes += rec->type == PERF_RECORD_TEXT_POKE;
	return 0;
}

/* A loaded program named `name` that the watch saw loaded (this process's,
 * or another's loaded meanwhile: either will do), held by the fd returned
 * so that it cannot go while it is checked; *id its id. */
static int find_program(const struct watched *w, const char *name, uint32_t *id)
{
	for (size_t i = 0; i < w->nr_loaded; i++) {
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(w->loaded[i]);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, name)) {
			*id = w->loaded[i];
			return fd;
		}
		close(fd);
	}
	cr_assert_fail("the watch saw no %s loaded", name);
	return -1;
}

/* The entries of the saved file for program id, in order. */
static size_t saved_entries(const char *dir, uint32_t id, struct rv_bpf_image *out, size_t max,
			    uint8_t **file)
{
	char path[PATH_MAX + 32];
	struct rv_bpf_image *v;
	struct rv_error err = { 0 };
	size_t nr, n = 0, size;
	char *names;
	bool truncated;

	snprintf(path, sizeof(path), "%s/%s", dir, RV_BPF_IMAGES_FILE);
	cr_assert_eq(rv_bpf_images_read(path, &v, &nr, &names, &truncated, &err), 0, "%s",
		     err.message);
	cr_assert_not(truncated);
	for (size_t i = 0; i < nr; i++) {
		if (v[i].prog_id != id)
			continue;
		cr_assert_lt(n, max);
		out[n] = v[i];
		out[n].name = strdup(v[i].name);
		n++;
	}
	free(v);
	free(names);
	*file = read_whole(path, &size);
	cr_assert_not_null(*file);
	return n;
}

/* Whether kallsyms lists the BPF program function `name` ("[bpf]") at addr
 * (a program loaded twice has one name at two addresses). */
static bool kallsyms_has_bpf(const char *name, uint64_t at)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];
	bool found = false;

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, sym[256], module[64] = "";

		found = sscanf(line, "%llx %c %255s %63s", &addr, &type, sym, module) >= 3 &&
			addr == at && !strcmp(sym, name) && !strcmp(module, "[bpf]");
	}
	fclose(f);
	return found;
}

/* A socket filter of this process's own, `return getpid()`: its tag (a
 * hash of its instructions) is this process's, whatever else the machine
 * loads meanwhile. Returns its fd; *id its id. */
static int load_own_program(uint32_t *id)
{
	struct bpf_insn insns[2];
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int fd;

	memset(insns, 0, sizeof(insns));
	insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
	insns[0].dst_reg = BPF_REG_0;
	insns[0].imm = (int32_t)getpid();
	insns[1].code = BPF_JMP | BPF_EXIT;
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "rv_test_prog", "GPL", insns, 2, NULL);
	cr_assert_geq(fd, 0, "loading a socket filter: %s", strerror(errno));
	memset(&info, 0, sizeof(info));
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	*id = info.id;
	return fd;
}

/* What was saved of program id equals what the kernel holds; the program
 * is held (an fd on it) while it is checked, so that it cannot go. */
static void check_saved_program(const char *dir, const struct watched *w, uint32_t id,
				const char *name_end)
{
	struct rv_bpf_image e[16];
	uint8_t *file, *dumped;
	size_t n = saved_entries(dir, id, e, 16, &file), dumped_size, at = 0;
	uint64_t ksyms[16];
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	cr_assert_geq(n, 1, "program %u was saved", id);
	/* the bytes and addresses the kernel gives now (Debian's bpftool,
	 * without libbfd, dumps no JIT code) */
	cr_assert_geq(fd, 0);
	memset(&info, 0, sizeof(info));
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	dumped_size = info.jited_prog_len;
	cr_assert_eq(info.nr_jited_ksyms, n, "one entry per function");
	dumped = malloc(dumped_size);
	memset(&info, 0, sizeof(info));
	info.jited_prog_len = (uint32_t)dumped_size;
	info.jited_prog_insns = (uint64_t)(uintptr_t)dumped;
	info.nr_jited_ksyms = (uint32_t)n;
	info.jited_ksyms = (uint64_t)(uintptr_t)ksyms;
	len = sizeof(info);
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(e[i].addr, ksyms[i], "jited_ksyms[%zu]", i);
		cr_assert_eq(e[i].func, i);
		cr_assert_leq(at + e[i].len, dumped_size);
		cr_assert_eq(memcmp(file + e[i].code_offset, dumped + at, e[i].len), 0,
			     "the code of function %zu of program %u", i, id);
		at += e[i].len;
		/* the address and the name: kallsyms', and the KSYMBOL record's */
		cr_assert(kallsyms_has_bpf(e[i].name, e[i].addr), "%s at %#" PRIx64, e[i].name,
			  e[i].addr);
		bool announced = false;
		for (size_t k = 0; k < w->nr_ksyms; k++)
			announced |= w->ksyms[k].addr == e[i].addr && w->ksyms[k].len == e[i].len &&
				     !strcmp(w->ksyms[k].name, e[i].name) &&
				     !w->ksyms[k].unregister;
		cr_assert(announced, "KSYMBOL of %s", e[i].name);
		cr_assert_not_null(strstr(e[i].name, name_end), "%s", e[i].name);
		free((char *)e[i].name);
	}
	close(fd);
	cr_assert_eq(at, dumped_size, "every function of program %u", id);
	free(dumped);
	free(file);
}

Test(bpf_images, saves_a_program_loaded_while_watching, .timeout = 60)
{
	char dir[PATH_MAX];
	struct rv_bpf_saver *s;
	struct rv_error err = { 0 };
	struct perf_event_attr sb, attr;
	struct rv_sideband_request req = { .scope = RV_SCOPE_USER_KERNEL };
	struct rv_bpf_saver_stats st;
	int nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	uint64_t *ids = calloc((size_t)nr_cpus, sizeof(*ids));
	struct watched *w = calloc(1, sizeof(*w));
	uint32_t id;
	bool loaded = false;

	require_root();
	make_temp_dir(dir, sizeof(dir), "rv-bpfsave");
	rv_sideband_attr(&sb, &req);
	cr_assert_eq(rv_bpf_saver_open(&s, dir, &err), 0, "%s", err.message);
	cr_assert_eq(rv_bpf_saver_watch(s, &sb, nr_cpus, &attr, ids, &err), 0, "%s", err.message);
	cr_assert(attr.ksymbol && attr.bpf_event && attr.text_poke);
	cr_assert_eq(attr.sample_type, sb.sample_type);
	cr_assert_neq(ids[0], 0);

	int fd = load_own_program(&id);
	cr_assert_eq(rv_bpf_saver_drain(s, watch_record, w, &err), 0, "%s", err.message);
	for (size_t i = 0; i < w->nr_loaded; i++)
		loaded |= w->loaded[i] == id;
	cr_assert(loaded, "the watch saw program %u loaded", id);
	rv_bpf_saver_stats(s, &st);
	cr_assert_geq(st.programs, 1);
	cr_assert_geq(st.records, 2, "its KSYMBOL and BPF_EVENT");
	check_saved_program(dir, w, id, "_rv_test_prog");

	/* unloaded: the watch says so */
	struct rv_bpf_image e[16];
	uint8_t *file;
	size_t n = saved_entries(dir, id, e, 16, &file);
	uint64_t addr = e[0].addr;

	cr_assert_eq(n, 1);
	free((char *)e[0].name);
	free(file);
	close(fd);
	bool gone = false;
	for (int tries = 0; tries < 300 && !gone; tries++) {
		cr_assert_eq(rv_bpf_saver_drain(s, watch_record, w, &err), 0, "%s", err.message);
		for (size_t k = 0; k < w->nr_ksyms; k++)
			gone |= w->ksyms[k].addr == addr && w->ksyms[k].unregister;
		if (!gone)
			usleep(10000); /* the kernel frees programs after an RCU grace period */
	}
	cr_assert(gone, "KSYMBOL unregister for the program");
	rv_bpf_saver_free(s);
	free(ids);
	free(w);
	remove_tree(dir);
}

Test(bpf_images, saves_what_is_loaded_when_recording_starts, .timeout = 60)
{
	char dir[PATH_MAX];
	struct rv_bpf_saver *s;
	struct rv_gate *gate;
	struct rv_error err = { 0 };
	struct perf_event_attr sb, attr;
	struct rv_sideband_request req = { .scope = RV_SCOPE_USER_KERNEL };
	struct rv_gate_config gc = { .pid = getpid() };
	struct rv_bpf_saver_stats st;
	int nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	uint64_t *ids = calloc((size_t)nr_cpus, sizeof(*ids));
	struct watched *w = calloc(1, sizeof(*w));
	struct rv_bpf_saver *watcher;

	require_root();
	make_temp_dir(dir, sizeof(dir), "rv-bpfsave");
	/* a watch of its own only to learn the gate's id and KSYMBOL */
	rv_sideband_attr(&sb, &req);
	cr_assert_eq(rv_bpf_saver_open(&watcher, dir, &err), 0, "%s", err.message);
	cr_assert_eq(rv_bpf_saver_watch(watcher, &sb, nr_cpus, &attr, ids, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_gate_open(&gate, &gc, &err), 0, "%s", err.message);
	cr_assert_eq(rv_bpf_saver_drain(watcher, watch_record, w, &err), 0, "%s", err.message);
	rv_bpf_saver_free(watcher);
	uint32_t id;
	int held = find_program(w, "gate_hit", &id);

	/* the saver that matters: opened after the load, no watch */
	cr_assert_eq(rv_bpf_saver_open(&s, dir, &err), 0, "%s", err.message);
	cr_assert_eq(rv_bpf_saver_save_loaded(s, &err), 0, "%s", err.message);
	cr_assert_eq(rv_bpf_saver_save_loaded(s, &err), 0, "%s", err.message);
	rv_bpf_saver_stats(s, &st);
	cr_assert_geq(st.programs, 1);
	check_saved_program(dir, w, id, "_gate_hit");
	/* once, however often asked */
	struct rv_bpf_image e[16];
	uint8_t *file;
	size_t once = saved_entries(dir, id, e, 16, &file);
	cr_assert_eq(rv_bpf_saver_save_id(s, id, &err), 0);
	free(file);
	for (size_t i = 0; i < once; i++)
		free((char *)e[i].name);
	cr_assert_eq(saved_entries(dir, id, e, 16, &file), once);
	for (size_t i = 0; i < once; i++)
		free((char *)e[i].name);
	free(file);
	/* a program that does not exist: lost, not an error */
	cr_assert_eq(rv_bpf_saver_save_id(s, UINT32_MAX - 1, &err), 0);
	rv_bpf_saver_stats(s, &st);
	cr_assert_eq(st.lost, 1);
	rv_bpf_saver_free(s);
	close(held);
	rv_gate_free(gate);
	free(ids);
	free(w);
	remove_tree(dir);
}
