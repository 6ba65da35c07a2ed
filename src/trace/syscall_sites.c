/* syscall_sites.c: the names of untraced system calls, "[syscall read]", by
 * the address of the `syscall` instruction that made them, read once per
 * site (and again when other code is there: an exec) from the code of the
 * function around it (builder_internal.h).
 *
 * Not here: the decoding of that code (decode/syscall_number.h), the names
 * of the numbers (decode/syscall_names.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "decode/syscall_names.h"
#include "decode/syscall_number.h"
#include "trace/builder_internal.h"

/* The span's name when the number is not known. */
static const char NAME_SYSCALL[] = "[syscall]";

/* A function whose `syscall` lies further than this from its start, or
 * larger than this, is read only this far: wrappers are short. */
#define MAX_CODE_BYTES (16 * 1024)

static size_t slot_of(uint32_t pid, uint64_t ip, size_t cap)
{
	return (size_t)((ip ^ (uint64_t)pid << 47) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

/* Reads the number from the code of the function sym, which holds ip. */
static const char *read_name(struct rv_builder *b, uint32_t pid, uint64_t ip,
			     const struct rv_symbol *symbol)
{
	struct rv_symbol copy = *symbol, *sym = &copy;
	uint64_t size, nr;
	uint8_t *code;
	size_t got;
	const char *syscall = NULL;
	char name[64];

	if (!sym->known || sym->start > ip || ip - sym->start >= MAX_CODE_BYTES - 2)
		return NAME_SYSCALL;
	/* the whole function, for the jumps into the stretch before the
	 * syscall; without its size, up to the syscall's end */
	size = sym->size > ip - sym->start ? sym->size : ip - sym->start + 2;
	if (size > MAX_CODE_BYTES)
		size = MAX_CODE_BYTES;
	code = malloc(size);
	if (!code)
		return NULL;
	got = rv_symbolizer_read_code(b->symbolizer, pid, sym->start, code, size);
	if (rv_syscall_number(code, got, sym->start, ip, &nr))
		syscall = rv_syscall_name(nr);
	free(code);
	if (!syscall)
		return NAME_SYSCALL;
	snprintf(name, sizeof(name), "[syscall %s]", syscall);
	return rv_intern(&b->names, name);
}

static int grow(struct rv_builder *b)
{
	size_t cap = b->cap_sites ? b->cap_sites * 2 : 64;
	struct syscall_site *sites = calloc(cap, sizeof(*sites));

	if (!sites)
		return -1;
	for (size_t i = 0; i < b->cap_sites; i++) {
		const struct syscall_site *old = &b->sites[i];
		size_t j;

		if (!old->ip)
			continue;
		for (j = slot_of(old->pid, old->ip, cap); sites[j].ip; j = (j + 1) & (cap - 1))
			;
		sites[j] = *old;
	}
	free(b->sites);
	b->sites = sites;
	b->cap_sites = cap;
	return 0;
}

const char *builder_syscall_name(struct rv_builder *b, uint32_t pid, uint64_t ip)
{
	struct syscall_site *site;
	struct rv_symbol sym;
	const char *name;
	size_t i;

	if (!ip)
		return NAME_SYSCALL;
	if ((b->nr_sites + 1) * 2 > b->cap_sites && grow(b))
		return NULL;
	/* The symbolizer's name of the function (cached by address; the same
	 * pointer for the same function) tells the site's code is still the
	 * one read: an exec may have put other code at the address. */
	rv_symbolizer_lookup(b->symbolizer, pid, ip, &sym);
	for (i = slot_of(pid, ip, b->cap_sites); b->sites[i].ip; i = (i + 1) & (b->cap_sites - 1))
		if (b->sites[i].ip == ip && b->sites[i].pid == pid)
			break;
	site = &b->sites[i];
	if (site->ip && site->function == sym.name)
		return site->name;
	name = read_name(b, pid, ip, &sym);
	if (!name)
		return NULL;
	b->nr_sites += !site->ip;
	site->ip = ip;
	site->pid = pid;
	site->function = sym.name;
	site->name = name;
	return name;
}

void builder_free_syscall_sites(struct rv_builder *b)
{
	free(b->sites);
	b->sites = NULL;
	b->nr_sites = b->cap_sites = 0;
}
