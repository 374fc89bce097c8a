// SPDX-License-Identifier: MIT
/* The shells' completion scripts and the option list, written from the
 * option tables the parsers read. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd_list.h"
#include "opts_common.h"
#include "report.h"
#include "banned.h"

#define MAX_ENTRIES (OPTS_MAX_LONG + 32)

/* What an option's value is, for the shells: a file, a directory, a
 * cipher's name, a command, or anything (no completion). */
enum value_kind { VAL_ANY, VAL_FILE, VAL_DIR, VAL_CIPHER, VAL_COMMAND };

static const struct {
	const char *name;
	enum value_kind kind;
} value_kinds[] = {
	{ "token-file", VAL_FILE },   { "exclude-from", VAL_FILE },
	{ "include-from", VAL_FILE }, { "files-from", VAL_FILE },
	{ "logfile", VAL_FILE },      { "pidfile", VAL_FILE },
	{ "root", VAL_DIR },	      { "cipher", VAL_CIPHER },
	{ "rsh", VAL_COMMAND },	      { "results", VAL_FILE },
	{ "output", VAL_FILE },
};

#define CIPHER_NAMES "auto aes-256-gcm chacha20-poly1305 none"

static enum value_kind kind_of(const struct opts_entry *e)
{
	size_t i;

	for (i = 0; e->name && i < sizeof(value_kinds) / sizeof(value_kinds[0]);
	     i++)
		if (!strcmp(e->name, value_kinds[i].name))
			return value_kinds[i].kind;
	return VAL_ANY;
}

/* The options of c into e (MAX_ENTRIES); how many. */
static size_t entries_of(const struct cmd *c, struct opts_entry *e)
{
	size_t n;

	if (!c->opts)
		return 0;
	n = opts_entries(c->opts, e, MAX_ENTRIES);
	return n > MAX_ENTRIES ? MAX_ENTRIES : n;
}

/* The option's words: "-x" (or "") and "--name" (or ""). */
static void words_of(const struct opts_entry *e, char shrt[3], char lng[64])
{
	shrt[0] = '\0';
	if (e->letter)
		snprintf(shrt, 3, "-%c", (char)e->letter);
	lng[0] = '\0';
	if (e->name)
		snprintf(lng, 64, "--%s", e->name);
}

void report_completion_list(FILE *out)
{
	static const char *const args[] = { "none", "value", "optional" };
	struct opts_entry e[MAX_ENTRIES];
	const struct cmd *cmds;
	char shrt[3], lng[64];
	size_t i, j, n, ne;

	cmds = cmd_list(&n);
	for (i = 0; i < n; i++) {
		ne = entries_of(&cmds[i], e);
		for (j = 0; j < ne; j++) {
			words_of(&e[j], shrt, lng);
			fprintf(out, "%s\t%s\t%s\t%s\n", cmds[i].name, shrt,
				lng, args[e[j].has_arg]);
		}
	}
}

/* bash: the words of c's options whose value kind is k (all options when
 * k < 0; those taking a separate value when k is VAL_ANY), spaced. */
static void bash_words(FILE *out, const struct cmd *c, int k)
{
	struct opts_entry e[MAX_ENTRIES];
	char shrt[3], lng[64];
	size_t j, ne = entries_of(c, e);

	for (j = 0; j < ne; j++) {
		if (k >= 0 && (e[j].has_arg != required_argument ||
			       (k != VAL_ANY && (int)kind_of(&e[j]) != k)))
			continue;
		words_of(&e[j], shrt, lng);
		fprintf(out, "%s%s%s ", shrt, *shrt && *lng ? " " : "", lng);
	}
}

/* bash: one command's branch of the case: its options and what their
 * values are. */
static void bash_command(FILE *out, const struct cmd *c)
{
	static const struct {
		const char *var;
		int kind;
	} vars[] = {
		{ "opts", -1 },
		{ "vals", VAL_ANY },
		{ "files", VAL_FILE },
		{ "dirs", VAL_DIR },
		{ "ciphers", VAL_CIPHER },
		{ "cmds", VAL_COMMAND },
	};
	size_t i;

	fprintf(out, "\t%s)\n", c->name);
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		fprintf(out, "\t\t%s=' ", vars[i].var);
		bash_words(out, c, vars[i].kind);
		fprintf(out, "'\n");
	}
	fprintf(out, "\t\t;;\n");
}

void report_completion_bash(FILE *out)
{
	const struct cmd *cmds;
	size_t i, n;

	cmds = cmd_list(&n);
	fprintf(out,
		"# bash completion for linerate "
		"(written by `linerate completion bash`)\n"
		"_linerate()\n{\n"
		"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev= names\n"
		"\tlocal opts= vals= files= dirs= ciphers= cmds=\n"
		"\t((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		/* --opt=value: bash splits it at the '=' */
		"\tif [[ $cur == = ]]; then\n\t\tcur=\n"
		"\telif [[ $prev == = ]] && ((COMP_CWORD > 1)); then\n"
		"\t\tprev=${COMP_WORDS[COMP_CWORD-2]}\n\tfi\n"
		"\tnames='");
	for (i = 0; i < n; i++)
		fprintf(out, "%s ", cmds[i].name);
	fprintf(out, "help version'\n"
		     "\tif ((COMP_CWORD == 1)); then\n"
		     "\t\tCOMPREPLY=($(compgen -W \"$names\" -- \"$cur\"))\n"
		     "\t\treturn\n\tfi\n"
		     "\tcase ${COMP_WORDS[1]} in\n"
		     "\thelp)\n"
		     "\t\tCOMPREPLY=($(compgen -W \"$names\" -- \"$cur\"))\n"
		     "\t\treturn ;;\n"
		     "\tcompletion)\n"
		     "\t\tCOMPREPLY=($(compgen -W 'bash zsh list' -- "
		     "\"$cur\"))\n"
		     "\t\treturn ;;\n");
	for (i = 0; i < n; i++)
		if (cmds[i].opts)
			bash_command(out, &cmds[i]);
	fprintf(out,
		"\tesac\n"
		"\tcase \"$files\" in *\" $prev \"*)\n"
		"\t\tlocal IFS=$'\\n'\n"
		"\t\tCOMPREPLY=($(compgen -f -- \"$cur\")); return ;; esac\n"
		"\tcase \"$dirs\" in *\" $prev \"*)\n"
		"\t\tlocal IFS=$'\\n'\n"
		"\t\tCOMPREPLY=($(compgen -d -- \"$cur\")); return ;; esac\n"
		"\tcase \"$ciphers\" in *\" $prev \"*)\n"
		"\t\tCOMPREPLY=($(compgen -W '" CIPHER_NAMES "' -- "
		"\"$cur\")); return ;; esac\n"
		"\tcase \"$cmds\" in *\" $prev \"*)\n"
		"\t\tlocal IFS=$'\\n'\n"
		"\t\tCOMPREPLY=($(compgen -c -- \"$cur\")); return ;; esac\n"
		"\tcase \"$vals\" in *\" $prev \"*) return ;; esac\n"
		"\tif [[ $cur == -* ]]; then\n"
		"\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
		"\t\treturn\n\tfi\n"
		"\tlocal IFS=$'\\n'\n"
		"\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		"}\n"
		"complete -o filenames -F _linerate linerate\n");
}

/* zsh: s for inside single quotes, with ' and (when colon) ':' escaped. */
static void zsh_escaped(FILE *out, const char *s, bool colon)
{
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", out);
		else if (*s == ':' && colon)
			fputs("\\:", out);
		else
			fputc(*s, out);
	}
}

/* Options given more than once add up (rsync's filter rules). */
static bool repeatable(const struct opts_entry *e)
{
	static const char *const names[] = { "exclude", "include",
					     "exclude-from", "include-from" };
	size_t i;

	for (i = 0; e->name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(e->name, names[i]))
			return true;
	return false;
}

/* zsh: _arguments' spec of one option, one quoted word (or a quoted
 * exclusion list and a brace pair for the letter and the name). */
static void zsh_option(FILE *out, const struct opts_entry *e)
{
	static const char *const action[] = {
		[VAL_ANY] = ":value: ",
		[VAL_FILE] = ":file:_files",
		[VAL_DIR] = ":dir:_files -/",
		[VAL_CIPHER] = ":cipher:(" CIPHER_NAMES ")",
		[VAL_COMMAND] = ":command:_command_names -e",
	};
	static const char *const shrt_arg[] = { "", "+", "-" };
	static const char *const long_arg[] = { "", "=", "=-" };
	const char *opt = e->has_arg == optional_argument ? ":" : "";
	const char *act = e->has_arg == no_argument ? "" : action[kind_of(e)];
	char shrt[3], lng[64];

	words_of(e, shrt, lng);
	if (repeatable(e))
		fprintf(out, "\t\t\t'*%s%s%s%s' \\\n", *lng ? lng : shrt,
			*lng ? long_arg[e->has_arg] : shrt_arg[e->has_arg], opt,
			act);
	else if (*shrt && *lng)
		fprintf(out, "\t\t\t'(%s %s)'{%s%s,%s%s}'%s%s' \\\n", shrt, lng,
			shrt, shrt_arg[e->has_arg], lng, long_arg[e->has_arg],
			opt, act);
	else if (*shrt)
		fprintf(out, "\t\t\t'%s%s%s%s' \\\n", shrt,
			shrt_arg[e->has_arg], opt, act);
	else
		fprintf(out, "\t\t\t'%s%s%s%s' \\\n", lng, long_arg[e->has_arg],
			opt, act);
}

/* zsh: one command's branch: its options, then its operands. */
static void zsh_command(FILE *out, const struct cmd *c)
{
	struct opts_entry e[MAX_ENTRIES];
	size_t j, ne = entries_of(c, e);
	bool host = !strcmp(c->name, "bench") || !strcmp(c->name, "doctor");

	fprintf(out, "\t%s)\n\t\t_arguments -s -S \\\n", c->name);
	for (j = 0; j < ne; j++)
		zsh_option(out, &e[j]);
	fprintf(out, "\t\t\t'*:%s' ;;\n", host ? "host:_hosts" : "file:_files");
}

void report_completion_zsh(FILE *out)
{
	const struct cmd *cmds;
	size_t i, n;

	cmds = cmd_list(&n);
	fprintf(out, "#compdef linerate\n"
		     "# zsh completion for linerate "
		     "(written by `linerate completion zsh`)\n"
		     "_linerate() {\n\tlocal -a names\n\tnames=(\n");
	for (i = 0; i < n; i++) {
		fprintf(out, "\t\t'%s:", cmds[i].name);
		zsh_escaped(out, cmds[i].summary, true);
		fputs("'\n", out);
	}
	fprintf(out,
		"\t\t'help:show a command'\\''s options'\n"
		"\t\t'version:print the version'\n\t)\n"
		"\tif ((CURRENT == 2)); then\n"
		"\t\t_describe -t commands 'linerate command' names\n"
		"\t\treturn\n\tfi\n"
		"\tlocal cmd=$words[2]\n"
		"\tshift words\n\t((CURRENT--))\n"
		"\tcase $cmd in\n"
		"\thelp) _describe -t commands 'linerate command' names ;;\n"
		"\tcompletion) _values shell bash zsh list ;;\n");
	for (i = 0; i < n; i++)
		if (cmds[i].opts)
			zsh_command(out, &cmds[i]);
	fprintf(out, "\tesac\n}\n_linerate \"$@\"\n");
}
