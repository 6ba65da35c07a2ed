/* test_kernel_btf.c: what rearview's BPF objects need of the kernel's BTF
 * (record/kernel_btf.h). The gate, the sample filter and the calibration's
 * probes carry no CO-RE relocation, so they load on kernels without BTF
 * (and the gate does load with a --btf path that does not exist, which
 * libbpf would read for a relocation); the objects that read kernel structs
 * carry some, so the count is not trivially zero. A malformed .BTF.ext is an
 * error, not a crash; --btf must be a kernel's BTF.
 *
 * Not here: rearview run with the BTF hidden (tests/e2e/test_no_btf.c).
 */
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/options.h"
#include "functions.skel.h"
#include "gate.skel.h"
#include "probe_cost.skel.h"
#include "record/kernel_btf.h"
#include "sample_filter.skel.h"
#include "sample_tasks.skel.h"
#include "test_env.h"
#include "util/bpf_log.h"

static size_t core_relos(const void *elf, size_t size)
{
	struct rv_error err = { 0 };
	size_t count = 99;

	cr_assert_eq(rv_bpf_core_relo_count(elf, size, &count, &err), 0, "%s", err.message);
	return count;
}

Test(kernel_btf, gate_filter_and_probe_cost_carry_no_core_relocation)
{
	size_t size;
	const void *elf;

	elf = gate_bpf__elf_bytes(&size);
	cr_assert_eq(core_relos(elf, size), 0, "the gate needs BTF to load");
	elf = sample_filter_bpf__elf_bytes(&size);
	cr_assert_eq(core_relos(elf, size), 0, "the sample filter needs BTF to load");
	elf = probe_cost_bpf__elf_bytes(&size);
	cr_assert_eq(core_relos(elf, size), 0, "the calibration's probes need BTF to load");
}

Test(kernel_btf, objects_that_read_kernel_structs_carry_core_relocations)
{
	size_t size;
	const void *elf;

	/* exit_state of task_struct, the tp_btf programs' task fields */
	elf = sample_tasks_bpf__elf_bytes(&size);
	cr_assert_gt(core_relos(elf, size), 0);
	elf = functions_bpf__elf_bytes(&size);
	cr_assert_gt(core_relos(elf, size), 10);
}

/* A copy of sample_tasks' object and the file offset of its .BTF.ext. */
static uint8_t *tasks_copy(size_t *size, size_t *ext_offset)
{
	const void *elf = sample_tasks_bpf__elf_bytes(size);
	uint8_t *copy = malloc(*size);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	cr_assert(copy);
	memcpy(copy, elf, *size);
	*ext_offset = 0;
	elf_version(EV_CURRENT);
	e = elf_memory((char *)elf, *size);
	cr_assert(e && !elf_getshdrstrndx(e, &shstrndx));
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr shdr;

		cr_assert(gelf_getshdr(scn, &shdr));
		if (!strcmp(elf_strptr(e, shstrndx, shdr.sh_name), ".BTF.ext"))
			*ext_offset = shdr.sh_offset;
	}
	elf_end(e);
	cr_assert_gt(*ext_offset, 0, "sample_tasks has no .BTF.ext");
	return copy;
}

static void put32(uint8_t *p, uint32_t value)
{
	memcpy(p, &value, sizeof(value));
}

static void assert_malformed(const uint8_t *elf, size_t size, const char *what)
{
	struct rv_error err = { 0 };
	size_t count = 0;

	cr_assert_lt(rv_bpf_core_relo_count(elf, size, &count, &err), 0, "%s: accepted", what);
	cr_assert(strstr(err.message, ".BTF.ext") || strstr(err.message, "ELF"), "%s: %s", what,
		  err.message);
}

Test(kernel_btf, malformed_btf_ext_is_an_error)
{
	size_t size, ext;
	uint8_t *copy = tasks_copy(&size, &ext);
	uint8_t saved[32];

	memcpy(saved, copy + ext, sizeof(saved));
	/* btf_ext_header: magic, version, flags, hdr_len, func_info off/len,
	 * line_info off/len, core_relo off (24) and len (28) */
	put32(copy + ext + 28, 0xfffffff0);
	assert_malformed(copy, size, "a CO-RE part longer than the section");
	memcpy(copy + ext, saved, sizeof(saved));
	put32(copy + ext + 24, 0x7ffffff0);
	assert_malformed(copy, size, "a CO-RE part past the section");
	memcpy(copy + ext, saved, sizeof(saved));
	put32(copy + ext + 4, 0x10000);
	assert_malformed(copy, size, "a header longer than the section");
	memcpy(copy + ext, saved, sizeof(saved));
	copy[ext] ^= 0xff;
	assert_malformed(copy, size, "a wrong magic");
	memcpy(copy + ext, saved, sizeof(saved));
	cr_assert_gt(core_relos(copy, size), 0, "the restored copy");
	assert_malformed((const uint8_t *)"not an object at all", 20, "text");
	free(copy);
}

Test(kernel_btf, each_object_gets_what_it_needs)
{
	struct rv_kernel_btf none = { .kernel = false }, custom = { .custom_path = "/x.btf" },
			     kernel = { .kernel = true };
	struct rv_error err = { 0 };
	size_t gate_size, tasks_size;
	const void *gate = gate_bpf__elf_bytes(&gate_size);
	const void *tasks = sample_tasks_bpf__elf_bytes(&tasks_size);
	LIBBPF_OPTS(bpf_object_open_opts, opts);

	cr_assert_eq(rv_kernel_btf_open_opts(&none, "the gate", gate, gate_size, &opts, &err), 0,
		     "%s", err.message);
	cr_assert_null(opts.btf_custom_path);
	cr_assert_eq(rv_kernel_btf_open_opts(&custom, "the gate", gate, gate_size, &opts, &err), 0);
	cr_assert_null(opts.btf_custom_path, "the gate has nothing to relocate");
	cr_assert_eq(rv_kernel_btf_open_opts(&kernel, "tasks", tasks, tasks_size, &opts, &err), 0);
	cr_assert_null(opts.btf_custom_path, "the kernel's own BTF is libbpf's default");
	cr_assert_eq(rv_kernel_btf_open_opts(&custom, "tasks", tasks, tasks_size, &opts, &err), 0);
	cr_assert_str_eq(opts.btf_custom_path, "/x.btf");

	opts.btf_custom_path = NULL;
	cr_assert_eq(
		rv_kernel_btf_open_opts(&none, "the task programs", tasks, tasks_size, &opts, &err),
		-ENOENT);
	cr_assert(strstr(err.message, "the task programs needs the kernel's BTF"), "%s",
		  err.message);
	cr_assert(strstr(err.message, "CONFIG_DEBUG_INFO_BTF"), "%s", err.message);
	cr_assert(strstr(err.message, "--btf FILE"), "%s", err.message);
	cr_assert_null(strchr(err.message, '\n'), "not one line: %s", err.message);
}

static void require_root(void)
{
	if (geteuid() == 0)
		return;
	cr_assert(!under_ci(), "under CI=true the BPF loading tests must run as root");
	cr_skip_test("loading BPF programs needs root");
}

/* libbpf reads btf_custom_path only for CO-RE relocations: the gate loads
 * with one that does not exist, the task programs do not. */
Test(kernel_btf, gate_loads_with_a_btf_path_that_does_not_exist)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = "/nonexistent/vmlinux.btf");
	struct gate_bpf *gate;
	struct sample_tasks_bpf *tasks;

	require_root();
	rv_bpf_log_setup(); /* libbpf's complaints to the debug log, unseen */
	gate = gate_bpf__open_opts(&opts);
	cr_assert(gate, "%s", strerror(errno));
	cr_assert_eq(gate_bpf__load(gate), 0, "the gate did not load without BTF");
	gate_bpf__destroy(gate);

	tasks = sample_tasks_bpf__open_opts(&opts);
	cr_assert(tasks, "%s", strerror(errno));
	bpf_program__set_autoload(tasks->progs.follow_fork, false);
	bpf_program__set_autoload(tasks->progs.follow_exit, false);
	cr_assert_neq(sample_tasks_bpf__load(tasks), 0,
		      "switch_state loaded without the BTF its CO-RE read needs");
	sample_tasks_bpf__destroy(tasks);
}

Test(kernel_btf, btf_option_must_name_a_kernels_btf)
{
	char path[] = "/tmp/rv-btf-XXXXXX";
	struct rv_kernel_btf kb;
	struct rv_error err = { 0 };
	struct stat st;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "not BTF\n", 8), 8);
	close(fd);
	cr_assert_lt(rv_kernel_btf_probe(&kb, path, &err), 0);
	cr_assert(strstr(err.message, "--btf"), "%s", err.message);
	unlink(path);

	/* BTF, but not a kernel's: the gate's own object */
	{
		size_t size;
		const void *elf = gate_bpf__elf_bytes(&size);
		FILE *f;

		snprintf(path, sizeof(path), "/tmp/rv-btf-XXXXXX");
		fd = mkstemp(path);
		cr_assert_geq(fd, 0);
		f = fdopen(fd, "w");
		cr_assert_eq(fwrite(elf, 1, size, f), size);
		fclose(f);
		cr_assert_lt(rv_kernel_btf_probe(&kb, path, &err), 0);
		cr_assert(strstr(err.message, "does not describe a kernel"), "%s", err.message);
		unlink(path);
	}

	cr_assert_eq(rv_kernel_btf_probe(&kb, NULL, &err), 0, "%s", err.message);
	cr_assert_null(kb.custom_path);
	cr_assert_eq(kb.kernel, !stat(RV_KERNEL_BTF_PATH, &st) && st.st_size > 0);
	if (kb.kernel) {
		cr_assert_eq(rv_kernel_btf_probe(&kb, RV_KERNEL_BTF_PATH, &err), 0, "%s",
			     err.message);
		cr_assert_str_eq(kb.custom_path, RV_KERNEL_BTF_PATH);
	}
}

Test(kernel_btf, btf_option_is_for_run_and_attach)
{
	const char *run[] = {
		"rearview", "run", "--btf", "/x.btf", "-btf", "/y.btf", "true", NULL
	};
	const char *attach[] = { "rearview", "attach", "--btf", "/x.btf", "-p", "1", NULL };
	const char *decode[] = { "rearview", "decode", "--btf", "/x.btf", "perf.data", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_options_parse(&o, 7, (char **)run, &err), 0, "%s", err.message);
	cr_assert_str_eq(o.btf, "/y.btf", "the last one given counts");
	rv_options_destroy(&o);
	cr_assert_eq(rv_options_parse(&o, 6, (char **)attach, &err), 0, "%s", err.message);
	cr_assert_str_eq(o.btf, "/x.btf");
	rv_options_destroy(&o);
	cr_assert_lt(rv_options_parse(&o, 5, (char **)decode, &err), 0);
	cr_assert(strstr(err.message, "--btf is for 'rearview run' and 'rearview attach'"), "%s",
		  err.message);
	rv_options_destroy(&o);
}
