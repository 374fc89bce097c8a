// SPDX-License-Identifier: MIT
/* --copy-self: which linerate runs on the far machine (selfcopy.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "selfcopy.h"
#include "banned.h"

/* uname -m's words (on Linux) and what they run; data 0: /bin/sh says
 * it */
struct machine {
	const char *uname;
	unsigned em, elf_class, elf_data;
	const char *name, *name_be; /* the build's name, little and big */
};

static const struct machine machines[] = {
	{ "x86_64", EM_X86_64, 2, 1, "x86_64", NULL },
	{ "i386", EM_386, 1, 1, "i386", NULL },
	{ "i486", EM_386, 1, 1, "i386", NULL },
	{ "i586", EM_386, 1, 1, "i386", NULL },
	{ "i686", EM_386, 1, 1, "i386", NULL },
	{ "aarch64", EM_AARCH64, 2, 1, "aarch64", NULL },
	{ "aarch64_be", EM_AARCH64, 2, 2, "aarch64_be", NULL },
	{ "armv7l", EM_ARM, 1, 1, "armhf", NULL },
	{ "armv8l", EM_ARM, 1, 1, "armhf", NULL },
	{ "mips", EM_MIPS, 1, 0, "mipsel", "mips" },
	{ "mips64", EM_MIPS, 2, 0, "mips64el", "mips64" },
	{ "s390x", EM_S390, 2, 2, "s390x", NULL },
	{ "ppc64le", EM_PPC64, 2, 1, "ppc64el", NULL },
	{ "riscv64", EM_RISCV, 2, 1, "riscv64", NULL },
};

int selfcopy_want(const struct ssh_self *s, struct selfcopy_elf *want,
		  char name[SELFCOPY_NAME_MAX], struct lr_err *err)
{
	const struct machine *m = NULL;
	size_t i;

	if (strcmp(s->os, "Linux"))
		return lr_err_set(err, -ENOTSUP,
				  "the far machine runs %s: linerate's builds "
				  "are Linux programs",
				  s->os);
	for (i = 0; i < sizeof(machines) / sizeof(machines[0]); i++)
		if (!strcmp(s->machine, machines[i].uname))
			m = &machines[i];
	if (!m)
		return lr_err_set(err, -ENOTSUP,
				  "the far machine is a %s, for which no "
				  "build of linerate is known",
				  s->machine);
	memset(want, 0, sizeof(*want));
	want->machine = m->em;
	want->elf_class = m->elf_class;
	want->elf_data = m->elf_data ? m->elf_data : s->order;
	if (!want->elf_data)
		return lr_err_set(err, -ENOTSUP,
				  "the far machine is a %s and its byte order "
				  "could not be read (/bin/sh's ELF header)",
				  s->machine);
	snprintf(name, SELFCOPY_NAME_MAX, "%s",
		 want->elf_data == 2 && m->name_be ? m->name_be : m->name);
	return 0;
}

static uint64_t get(const unsigned char *p, unsigned n, bool big)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

#define SELFCOPY_PHNUM_MAX 256

static int bad_elf(struct lr_err *err, const char *what)
{
	return lr_err_set(err, LR_EBADMSG, "not a program of linerate's: %s",
			  what);
}

int selfcopy_read_elf(int fd, struct selfcopy_elf *e, struct lr_err *err)
{
	unsigned char h[64], ph[64];
	uint64_t phoff, i;
	unsigned phentsize, phnum;
	bool wide, big;
	ssize_t k;

	memset(e, 0, sizeof(*e));
	k = pread(fd, h, sizeof(h), 0);
	if (k < 0)
		return lr_err_setc(err, -errno, "reading the ELF header");
	if (k < 52 || memcmp(h, ELFMAG, SELFMAG))
		return bad_elf(err, "no ELF header");
	if ((h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64) ||
	    (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB))
		return bad_elf(err, "an ELF class or byte order unknown");
	wide = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
	if (wide && k < 64)
		return bad_elf(err, "a short ELF header");
	if (get(h + 16, 2, big) != ET_EXEC && get(h + 16, 2, big) != ET_DYN)
		return bad_elf(err, "not an executable");
	e->machine = (unsigned)get(h + 18, 2, big);
	e->elf_class = h[EI_CLASS];
	e->elf_data = h[EI_DATA];
	phoff = wide ? get(h + 32, 8, big) : get(h + 28, 4, big);
	phentsize = (unsigned)get(h + (wide ? 54 : 42), 2, big);
	phnum = (unsigned)get(h + (wide ? 56 : 44), 2, big);
	if (phentsize != (wide ? 56u : 32u) || phnum > SELFCOPY_PHNUM_MAX ||
	    phoff > (1u << 20))
		return bad_elf(err, "program headers out of bounds");
	for (i = 0; i < phnum; i++) {
		k = pread(fd, ph, phentsize, (off_t)(phoff + i * phentsize));
		if (k != (ssize_t)phentsize)
			return bad_elf(err, "a short program header");
		if (get(ph, 4, big) == PT_INTERP)
			e->dynamic = true;
	}
	return 0;
}

bool selfcopy_runs_on(const struct selfcopy_elf *have,
		      const struct selfcopy_elf *want)
{
	return have->machine == want->machine &&
	       have->elf_class == want->elf_class &&
	       have->elf_data == want->elf_data;
}

/* path open and checked: 1 when it fits (static or not as asked), 0
 * when it does not or is not there; what it is goes to why */
static int try_one(const char *path, const struct selfcopy_elf *want,
		   bool dynamic_ok, struct selfcopy_pick *pick, char *why,
		   size_t cap)
{
	struct selfcopy_elf have;
	struct lr_err e = { 0 };
	struct stat st;
	char real[SELFCOPY_PATH_MAX];
	int fd;

	if (realpath(path, real)) /* for the message */
		path = real;
	fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(why, cap, "%s: %s", path, lr_strerror(-errno));
		return 0;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > SELFCOPY_SIZE_MAX) {
		snprintf(why, cap, "%s: not a regular file of 1 byte to %u MiB",
			 path, SELFCOPY_SIZE_MAX >> 20);
		close(fd);
		return 0;
	}
	if (selfcopy_read_elf(fd, &have, &e)) {
		snprintf(why, cap, "%s: %s", path, e.msg);
		close(fd);
		return 0;
	}
	if (!selfcopy_runs_on(&have, want)) {
		snprintf(why, cap,
			 "%s: a program for another machine (ELF machine %u, "
			 "%u-bit, %s-endian)",
			 path, have.machine, have.elf_class == 2 ? 64 : 32,
			 have.elf_data == 2 ? "big" : "little");
		close(fd);
		return 0;
	}
	if (have.dynamic && !dynamic_ok) {
		snprintf(why, cap, "%s: dynamically linked", path);
		close(fd);
		return 0;
	}
	snprintf(pick->path, sizeof(pick->path), "%s", path);
	pick->fd = fd;
	pick->size = (uint64_t)st.st_size;
	pick->dynamic = have.dynamic;
	return 1;
}

int selfcopy_find(const char *exe, const char *given,
		  const struct ssh_self *far, struct selfcopy_pick *pick,
		  struct lr_err *err)
{
	struct selfcopy_elf want;
	char name[SELFCOPY_NAME_MAX], dir[SELFCOPY_PATH_MAX];
	char cand[2][SELFCOPY_PATH_MAX], why[4][SELFCOPY_PATH_MAX + 96];
	const char *slash;
	int r;

	memset(pick, 0, sizeof(*pick));
	pick->fd = -1;
	r = selfcopy_want(far, &want, name, err);
	if (r)
		return r;
	if (given) {
		if (try_one(given, &want, true, pick, why[0], sizeof(why[0])))
			return 0;
		return lr_err_set(err, -ENOEXEC,
				  "--copy-self: the far machine is a %s (%s); "
				  "%s",
				  far->machine, name, why[0]);
	}
	if (try_one(exe, &want, false, pick, why[0], sizeof(why[0])))
		return 0;
	slash = strrchr(exe, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - exe) : 1,
		 slash ? exe : ".");
	snprintf(cand[0], sizeof(cand[0]), "%s/../build-static-%s/linerate",
		 dir, name);
	snprintf(cand[1], sizeof(cand[1]), "%s/../libexec/linerate/%s/linerate",
		 dir, name);
	if (try_one(cand[0], &want, false, pick, why[1], sizeof(why[1])) ||
	    try_one(cand[1], &want, false, pick, why[2], sizeof(why[2])) ||
	    try_one(exe, &want, true, pick, why[3], sizeof(why[3])))
		return 0;
	snprintf(pick->tried, sizeof(pick->tried), "%s\n%s\n%s\n", why[0],
		 why[1], why[2]);
	if (!strcmp(name, "x86_64") || !strcmp(name, "aarch64") ||
	    !strcmp(name, "mipsel"))
		return lr_err_set(err, -ENOENT,
				  "no linerate here runs on the far machine, "
				  "a %s (%s): build one with scripts/cross.sh "
				  "static-%s, or give --copy-self=FILE",
				  far->machine, name, name);
	return lr_err_set(err, -ENOENT,
			  "no linerate here runs on the far machine, a %s "
			  "(%s), and scripts/cross.sh has no static build for "
			  "it: give --copy-self=FILE, a static linerate built "
			  "for it",
			  far->machine, name);
}

/* The far shell's steps (docs/PROTOCOL.md §11), one line (a csh login
 * shell refuses a newline inside quotes): ARGS, then PROG twice. The
 * byte order is /bin/sh's ELF byte 5, read with dd alone (OpenWrt's
 * busybox has no od). The copy's size is one line of digits; head -c
 * reads that many bytes (dd one byte at a time where head has no -c). */
#define FAR_SCRIPT                                                              \
	"set -- %s; "                                                           \
	"if command -v %s >/dev/null 2>&1; then exec %s \"$@\"; fi; "           \
	"[ -t 0 ] && { echo 'linerate --copy-self: standard input is a "        \
	"terminal (ssh -t): no copy through it' >&2; exit 1; }; "               \
	"d=$(mktemp -d \"${TMPDIR:-/tmp}/linerate.XXXXXX\") || { echo "         \
	"'linerate --copy-self: mktemp -d failed' >&2; exit 126; }; "           \
	"trap 'rm -rf \"$d\"' EXIT; trap 'exit 129' HUP; "                      \
	"trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM; "     \
	"b=$(dd if=/bin/sh bs=1 skip=5 count=1 2>/dev/null); "                  \
	"case $b in \"$(printf '\\001')\") o=little ;; "                        \
	"\"$(printf '\\002')\") o=big ;; *) o=unknown ;; esac; "                \
	"echo \"" SSH_SELF_WORD " 1 $(uname -s) $(uname -m) $o\"; "             \
	"read n || exit 1; "                                                    \
	"case $n in '' | *[!0-9]*) echo 'linerate --copy-self: no size' "       \
	">&2; exit 1 ;; esac; "                                                 \
	"{ head -c \"$n\" 2>/dev/null || dd bs=1 count=\"$n\" 2>/dev/null; "    \
	"} >\"$d/linerate\"; "                                                  \
	"[ \"$(($(wc -c <\"$d/linerate\")))\" = \"$n\" ] || { echo "            \
	"\"linerate --copy-self: the copy in $d is cut short (a full disk?)\" " \
	">&2; exit 1; }; "                                                      \
	"chmod 700 \"$d/linerate\"; \"$d/linerate\" \"$@\""

int selfcopy_far_script(const char *prog, const char *args, char *out,
			size_t cap)
{
	int n = snprintf(out, cap, FAR_SCRIPT, args, prog, prog);

	return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}
