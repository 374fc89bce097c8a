/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SSH_H
#define LINERATE_SSH_H

/*
 * The far end started over ssh (docs/PROTOCOL.md §11): ssh runs linerate
 * there in its ssh mode, which listens on the address the ssh connection
 * came in on and writes one line to its standard output, carried back by
 * ssh:
 *
 *   LINERATE-SSH 1 ADDRESS PORT TOKEN
 *
 * The near end connects to ADDRESS:PORT with TOKEN. ssh's standard input
 * is the lifeline: when the near end closes it (or dies), the far end
 * exits.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "token.h"

#define SSH_BOOT_MAX	 200 /* the line's bound, newline included */
#define SSH_BOOT_WORD	 "LINERATE-SSH"
#define SSH_BOOT_VERSION 1
#define SSH_ADDR_MAX	 46   /* INET6_ADDRSTRLEN */
#define SSH_MAX_ARGS	 64   /* words of a -e command, and the rest */
#define SSH_TAIL_MAX	 2048 /* what is kept of ssh's standard error */

/* With --copy-self the far shell, when it finds no linerate there, says
 * what it runs instead of the line above, and waits for one:
 *
 *   LINERATE-SELF 1 OS MACHINE ORDER
 *
 * OS is `uname -s`, MACHINE `uname -m`, ORDER the byte order of /bin/sh's
 * ELF header: little, big or unknown (MIPS's uname -m says "mips" for
 * both). */
#define SSH_SELF_WORD	 "LINERATE-SELF"
#define SSH_SELF_VERSION 1
#define SSH_MACHINE_MAX	 32

struct ssh_self {
	char os[SSH_MACHINE_MAX + 1];	   /* letters, digits, _ . - + */
	char machine[SSH_MACHINE_MAX + 1]; /* the same */
	unsigned order;			   /* 1 little, 2 big, 0 unknown */
};

/* That line (newline dropped or not). 0 or LR_EBADMSG/LR_EVERSION with
 * err set. */
int ssh_self_parse(const char *line, size_t len, struct ssh_self *s,
		   struct lr_err *err);

struct ssh_boot {
	char addr[SSH_ADDR_MAX]; /* numeric IPv4 or IPv6 */
	uint16_t port;
	char token[SESSION_TOKEN_CHARS];
};

/* The far end: this side's address of $SSH_CONNECTION ("client port
 * server port"), its third word, checked to be a numeric address. */
int ssh_conn_local_addr(const char *ssh_connection, char *addr, size_t cap,
			struct lr_err *err);

/* The line (newline included) into out. 0 or -ENAMETOOLONG. */
int ssh_boot_format(const struct ssh_boot *b, char *out, size_t cap);

/* One line as the far end sent it (len bytes, its newline dropped or
 * not): every word checked. 0 or LR_EBADMSG with err set. */
int ssh_boot_parse(const char *line, size_t len, struct ssh_boot *b,
		   struct lr_err *err);

/* s as one word for a POSIX shell, in single quotes; with tilde, a
 * leading ~ or ~user (and the '/' after it) left outside them for the far
 * shell to expand, as scp leaves it. 0 or -ENAMETOOLONG. */
int ssh_shell_quote(const char *s, bool tilde, char *out, size_t cap);

/* A -e/--rsh command split into words as rsync does: on spaces and tabs,
 * with single and double quotes and backslashes; the words point into buf
 * (cap bytes). The count, or -EINVAL / -E2BIG with err set. */
int ssh_split_command(const char *cmd, char **words, unsigned max, char *buf,
		      size_t cap, struct lr_err *err);

/* ssh, running. */
struct ssh_far {
	pid_t pid;    /* 0 = none */
	int lifeline; /* its standard input */
	int out;      /* its standard output: the line */
	int errfd;    /* its standard error */
	int relay_to; /* where ssh's standard error goes once the far end is
			 ready (-1: nowhere); kept until then */
	pthread_t relay;
	bool relaying;
	pthread_mutex_t lock; /* guards tail, tail_len, live, stop,
				relay_done */
	char tail[SSH_TAIL_MAX];
	size_t tail_len;
	bool live;	 /* copying to relay_to as it comes */
	bool stop;	 /* the relay thread: end now */
	bool relay_done; /* it has seen the end of ssh's standard error */
	int status;	 /* its exit status once reaped; -1 before */
};

/* Start argv (argv[0] found on PATH) with its three standard streams on
 * pipes, in this environment less LINERATE_TOKEN. 0 or -errno; on 0,
 * ssh_far_finish and ssh_far_free end it. */
int ssh_far_start(struct ssh_far *f, char *const argv[], int relay_to,
		  struct lr_err *err);

/* Wait up to timeout_ms for the line. When ssh ends first, err tells why:
 * exit 127 (the far shell found no linerate), 255 (ssh itself failed:
 * what ssh said is in the tail) or another. 0 or an error; with self
 * (else NULL), 1 when the far end asked for a copy of linerate instead
 * (LINERATE-SELF, in *self). */
int ssh_far_boot(struct ssh_far *f, int timeout_ms, const char *host,
		 struct ssh_boot *b, struct ssh_self *self, struct lr_err *err);

/* What ssh wrote to its standard error so far (the last SSH_TAIL_MAX
 * bytes) into out, as text for a terminal. */
void ssh_far_tail(struct ssh_far *f, char *out, size_t cap);

/* The last line of that, for a message. */
void ssh_far_last_line(struct ssh_far *f, char *out, size_t cap);

/* Copy what was kept to relay_to, and what comes from now on. */
void ssh_far_go_live(struct ssh_far *f);

/* Whether ssh has ended (reaped, status set). */
bool ssh_far_ended(struct ssh_far *f);

/* Whether host refuses a TCP connection on port within timeout_ms:
 * nothing listens there (a connection that works, or any other failure,
 * is not that). */
bool ssh_nothing_listens(const char *host, uint16_t port, int family,
			 int timeout_ms);

/* Open and close one TCP connection to host:port within timeout_ms: 0,
 * or how it failed (LR_ETIMEOUT, -ECONNREFUSED, -EHOSTUNREACH, ...)
 * with err set. */
int ssh_try_connect(const char *host, uint16_t port, int family, int timeout_ms,
		    struct lr_err *err);

/* After ssh_far_finish, once nothing reads f any more. */
void ssh_far_free(struct ssh_far *f);

/* Wait up to linger_ms for ssh to end by itself (0: not at all), close
 * the lifeline, wait up to timeout_ms more (then SIGTERM, then SIGKILL);
 * free everything. Its exit status (0-255), 128+N for a signal, or
 * -errno. The tail stays readable until ssh_far_free. */
int ssh_far_finish(struct ssh_far *f, int linger_ms, int timeout_ms);

#endif
