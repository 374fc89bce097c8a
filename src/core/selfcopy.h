/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SELFCOPY_H
#define LINERATE_SELFCOPY_H

/*
 * --copy-self (docs/PROTOCOL.md §11): when the far machine has no
 * linerate, its shell says what it runs (ssh.h, LINERATE-SELF), this side
 * picks a linerate built for that, and the far shell keeps it in a private
 * temporary directory for the run, then removes it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "ssh.h"

#define SELFCOPY_PATH_MAX 4096
#define SELFCOPY_NAME_MAX 16
/* the largest program it sends (a static build is about 2.6 MB) */
#define SELFCOPY_SIZE_MAX (64u << 20)

/* What an ELF program runs on: its machine (EM_*), class (1: 32-bit, 2:
 * 64-bit) and byte order (1: little, 2: big); and whether it needs a
 * dynamic loader (a PT_INTERP header). */
struct selfcopy_elf {
	unsigned machine, elf_class, elf_data;
	bool dynamic;
};

/* The far machine's: from its `uname -s` (Linux only) and `uname -m`
 * and, where that does not say the byte order (MIPS), /bin/sh's; name
 * is the build's name ("x86_64", "aarch64", "mipsel", ...;
 * build-static-NAME). 0, or -ENOTSUP with err set for a machine without
 * a known build. */
int selfcopy_want(const struct ssh_self *s, struct selfcopy_elf *want,
		  char name[SELFCOPY_NAME_MAX], struct lr_err *err);

/* The ELF header and program headers of the file open on fd (every
 * count bounded before use). 0 or LR_EBADMSG / -errno with err set. */
int selfcopy_read_elf(int fd, struct selfcopy_elf *e, struct lr_err *err);

/* Whether a program of have runs where want says. */
bool selfcopy_runs_on(const struct selfcopy_elf *have,
		      const struct selfcopy_elf *want);

/* The program chosen, open for reading. */
struct selfcopy_pick {
	char path[SELFCOPY_PATH_MAX];
	int fd;
	uint64_t size;
	bool dynamic; /* it needs the far machine's libraries */
	/* when none fits: a line for each place tried, and why not */
	char tried[3 * (SELFCOPY_PATH_MAX + 96)];
};

/*
 * The linerate to copy for the far machine: given (--copy-self=FILE;
 * NULL: none) when it fits; else exe (this program, its path resolved)
 * when it is static and fits; else DIR/../build-static-NAME/linerate, then
 * DIR/../libexec/linerate/NAME/linerate (DIR: exe's directory); else exe
 * when it fits but is dynamic. 0 with pick->fd open, or an error in err
 * (and pick->tried says what was tried).
 */
int selfcopy_find(const char *exe, const char *given,
		  const struct ssh_self *far, struct selfcopy_pick *pick,
		  struct lr_err *err);

/*
 * The far shell's script (a POSIX sh program) into out: run PROG ARGS
 * when PROG is a command there; else say LINERATE-SELF, read a decimal
 * size and that many bytes into a mktemp -d directory, run the copy with
 * ARGS, remove the directory when it ends (or on HUP, INT, TERM). args:
 * words already quoted for the far shell. 0 or -E2BIG.
 */
int selfcopy_far_script(const char *prog, const char *args, char *out,
			size_t cap);

#endif
