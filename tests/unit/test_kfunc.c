/* test_kfunc.c: --kernel-functions against fake kernels: which method
 * the capability check picks (fentry, else kprobes, else a one-line refusal)
 * and which /proc/kallsyms functions the plan traces. The attach itself needs
 * a kernel that permits fentry or kprobes, which the test machines do not. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/fn_engine.h"

struct fake_kernel {
	bool fentry, kprobe;
	int fentry_calls, kprobe_calls;
};

static int fake_fentry(void *ctx, char *why, size_t size)
{
	struct fake_kernel *k = ctx;

	k->fentry_calls++;
	if (k->fentry)
		return 0;
	snprintf(why, size, "loading one fails: Operation not permitted");
	return -EPERM;
}

static int fake_kprobe(void *ctx, char *why, size_t size)
{
	struct fake_kernel *k = ctx;

	k->kprobe_calls++;
	if (k->kprobe)
		return 0;
	snprintf(why, size, "no kprobe PMU");
	return -ENOENT;
}

static char kallsyms_path[64];

static const char kallsyms_text[] = "ffffffff81000000 T _text\n"
				    "ffffffff81234000 T vfs_read\n"
				    "ffffffff81234100 T vfs_write\n"
				    "ffffffff81233ff0 T __pfx_vfs_read\n"
				    "ffffffff81235000 t vfs_readv.isra.0\n"
				    "ffffffff81236000 t do_thing\n"
				    "ffffffff81237000 t do_thing\n"
				    "ffffffff81238000 D vfs_data_not_text\n"
				    "ffffffffc0001000 t ext4_readdir\t[ext4]\n"
				    "ffffffff81239000 W weak_func\n";

static void write_kallsyms(const char *text)
{
	FILE *f;

	snprintf(kallsyms_path, sizeof(kallsyms_path), "/tmp/rv-kallsyms-XXXXXX");
	cr_assert_geq(mkstemp(kallsyms_path), 0);
	f = fopen(kallsyms_path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static struct rv_kfunc_ops fake_ops(struct fake_kernel *k)
{
	return (struct rv_kfunc_ops){ .try_fentry = fake_fentry,
				      .try_kprobe = fake_kprobe,
				      .kallsyms_path = kallsyms_path,
				      .ctx = k };
}

static const struct rv_kfunc *find(const struct rv_kfunc_plan *p, const char *name)
{
	for (size_t i = 0; i < p->count; i++)
		if (!strcmp(p->funcs[i].name, name))
			return &p->funcs[i];
	return NULL;
}

static bool skipped(const struct rv_kfunc_plan *p, const char *name)
{
	for (size_t i = 0; i < p->nr_skipped; i++)
		if (!strcmp(p->skipped[i].name, name))
			return true;
	return false;
}

Test(kfunc, fentry_first)
{
	struct fake_kernel k = { .fentry = true, .kprobe = true };
	struct rv_kfunc_ops ops = fake_ops(&k);
	enum rv_kfunc_method m;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_kfunc_choose(&ops, &m, &err), 0);
	cr_assert_eq(m, RV_KFUNC_FENTRY);
	cr_assert_eq(k.kprobe_calls, 0, "kprobes are not tried when fentry works");
}

Test(kfunc, kprobes_when_fentry_is_refused)
{
	struct fake_kernel k = { .fentry = false, .kprobe = true };
	struct rv_kfunc_ops ops = fake_ops(&k);
	enum rv_kfunc_method m;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_kfunc_choose(&ops, &m, &err), 0);
	cr_assert_eq(m, RV_KFUNC_KPROBE);
	cr_assert_str_eq(rv_kfunc_method_name(m), "kprobes");
}

Test(kfunc, neither_is_refused_in_one_line)
{
	struct fake_kernel k = { 0 };
	struct rv_kfunc_ops ops = fake_ops(&k);
	enum rv_kfunc_method m;
	struct rv_error err = { 0 };

	cr_assert_lt(rv_kfunc_choose(&ops, &m, &err), 0);
	cr_assert_eq(m, RV_KFUNC_NONE);
	cr_assert(strstr(err.message, "fentry"), "%s", err.message);
	cr_assert(strstr(err.message, "kprobe"), "%s", err.message);
	cr_assert(strstr(err.message, "Operation not permitted"), "says why: %s", err.message);
	cr_assert_null(strchr(err.message, '\n'), "one line: %s", err.message);
}

Test(kfunc, plan_with_fentry)
{
	struct fake_kernel k = { .fentry = true };
	struct rv_kfunc_ops ops;
	const char *patterns[] = { "vfs_*", "do_thing", "ext4_readdir", "weak_func" };
	struct rv_kfunc_plan p;
	struct rv_error err = { 0 };

	write_kallsyms(kallsyms_text);
	ops = fake_ops(&k);
	cr_assert_eq(rv_kfunc_plan_build(&p, patterns, 4, &ops, &err), 0, "%s", err.message);
	cr_assert_eq(p.method, RV_KFUNC_FENTRY);
	cr_assert_eq(p.count, 4, "vfs_read, vfs_write, ext4_readdir, weak_func");
	cr_assert_eq(find(&p, "vfs_read")->addr, 0xffffffff81234000ull);
	cr_assert_not_null(find(&p, "vfs_write"));
	cr_assert_eq(find(&p, "ext4_readdir")->addr, 0xffffffffc0001000ull,
		     "module functions by their own name");
	cr_assert_not_null(find(&p, "weak_func"));
	cr_assert_null(find(&p, "vfs_data_not_text"), "data is not traced");
	cr_assert_null(find(&p, "__pfx_vfs_read"));
	cr_assert(skipped(&p, "vfs_readv.isra.0"), "a clone has no BTF for fentry");
	cr_assert(skipped(&p, "do_thing"), "two functions share the name");
	rv_kfunc_plan_destroy(&p);
	unlink(kallsyms_path);
}

Test(kfunc, plan_with_kprobes_keeps_clones)
{
	struct fake_kernel k = { .kprobe = true };
	struct rv_kfunc_ops ops;
	const char *patterns[] = { "vfs_read*" };
	struct rv_kfunc_plan p;
	struct rv_error err = { 0 };

	write_kallsyms(kallsyms_text);
	ops = fake_ops(&k);
	cr_assert_eq(rv_kfunc_plan_build(&p, patterns, 1, &ops, &err), 0, "%s", err.message);
	cr_assert_eq(p.method, RV_KFUNC_KPROBE);
	cr_assert_eq(p.count, 2);
	cr_assert_not_null(find(&p, "vfs_readv.isra.0"), "kprobes take clones by name");
	rv_kfunc_plan_destroy(&p);
	unlink(kallsyms_path);
}

Test(kfunc, plan_errors)
{
	struct fake_kernel k = { .kprobe = true }, none = { 0 };
	struct rv_kfunc_ops ops;
	const char *nomatch[] = { "vfs_read", "no_such_kernel_function" };
	const char *dup[] = { "do_thing" };
	struct rv_kfunc_plan p;
	struct rv_error err = { 0 };

	write_kallsyms(kallsyms_text);
	ops = fake_ops(&k);
	cr_assert_eq(rv_kfunc_plan_build(&p, nomatch, 2, &ops, &err), -ENOENT);
	cr_assert(strstr(err.message, "no_such_kernel_function"), "%s", err.message);
	cr_assert_eq(p.count, 0);
	cr_assert_lt(rv_kfunc_plan_build(&p, dup, 1, &ops, &err), 0,
		     "everything that matched was skipped");
	ops = fake_ops(&none);
	cr_assert_lt(rv_kfunc_plan_build(&p, nomatch, 1, &ops, &err), 0);
	cr_assert(strstr(err.message, "neither"), "%s", err.message);
	cr_assert_eq(none.fentry_calls, 1);
	unlink(kallsyms_path);

	write_kallsyms("0000000000000000 T vfs_read\n0000000000000000 T vfs_write\n");
	ops = fake_ops(&k);
	cr_assert_eq(rv_kfunc_plan_build(&p, nomatch, 1, &ops, &err), -EPERM);
	cr_assert(strstr(err.message, "kptr_restrict"), "%s", err.message);
	unlink(kallsyms_path);
}
