// SPDX-License-Identifier: MIT
/* The help texts of linerate send and linerate get (cmd_send.c). */
#include "cmds.h"
#include "banned.h"

#define COMMON_HELP                                                                  \
	"  -p, --port PORT       server port (default 7350)\n"                       \
	"  -P, --parallel N      parallel TCP streams (default: 4, or 2 for many\n"  \
	"                        small files)\n"                                     \
	"  -4, --ipv4 / -6, --ipv6  only that address family\n"                      \
	"  -B, --bind ADDR       local address to connect from\n"                    \
	"      --token-file FILE the server's token (else LINERATE_TOKEN,\n"         \
	"                        else a prompt); never on the command line\n"        \
	"      --cipher NAME     auto (default), aes-256-gcm,\n"                     \
	"                        chacha20-poly1305, or none (data in clear on\n"     \
	"                        a trusted cable; the server must allow it)\n"       \
	"      --limit RATE      cap the rate: 50M is 50 MiB/s (a bare number is\n"  \
	"                        bytes/s), 400mbit is bits/s\n"                      \
	"      --chunk SIZE      chunk size, 64K-8M (default 1M)\n"                  \
	"      --size SIZE       send -: the size standard input will have, for\n"   \
	"                        the progress line's % and ETA (pv's -s)\n"          \
	"      --force-tty       get HOST:FILE -: write to a terminal even a\n"      \
	"                        binary file\n"                                      \
	"  -w, --window SIZE     socket buffer size (default: the kernel's)\n"       \
	"      --connect-timeout MS  give up connecting after MS milliseconds\n"     \
	"                        (as bench and iperf3; 5s, 1m too; default 10s)\n"   \
	"      --timeout SEC     end when the other end is silent for SEC\n"         \
	"                        seconds (rsync's; also 2m, 15000ms; at least 10,\n" \
	"                        0 none; default 30)\n"                              \
	"      --overwrite       replace existing files\n"                           \
	"      --update          replace existing files whose size or mtime\n"       \
	"                        differ, except those newer at the destination\n"    \
	"                        (rsync's -u)\n"                                     \
	"  -c, --checksum        a file of the same size is up to date when its\n"   \
	"                        content is (both ends digest it), whatever its\n"   \
	"                        mtime (rsync's -c)\n"                               \
	"  -W, --whole-file      send a replaced file whole (by default only the\n"  \
	"                        chunks that differ from the old copy travel)\n"     \
	"  -H, --hard-links      keep hard links: names of one file in the\n"        \
	"                        transfer arrive as links to it, its data once\n"    \
	"                        (the default where the far end knows them, as\n"    \
	"                        tar's; a name there as another file goes as a\n"    \
	"                        file; -H asks: -H --update makes copies links)\n"   \
	"      --no-hard-links   send each name as a file of its own (rsync's\n"     \
	"                        default; the last of -H and this counts)\n"         \
	"  -o, --owner           keep owners (a receiver running as root), by\n"     \
	"                        name: each machine's id of the name\n"              \
	"  -g, --group           keep groups (root, or the receiver's own)\n"        \
	"  -a, --archive         rsync's -a: -o and -g (linerate keeps modes,\n"     \
	"                        times and symlinks always; -D apart)\n"             \
	"      --specials        send FIFOs and sockets of a tree (made by a\n"      \
	"                        receiver running as root)\n"                        \
	"      --devices         send device nodes of a tree (made by a root\n"      \
	"                        receiver that allows them: serve\n"                 \
	"                        --allow-devices)\n"                                 \
	"  -D                    --specials and --devices\n"                         \
	"  -X, --xattrs          keep extended attributes (user.; trusted. and\n"    \
	"                        security. too with --keep-setid, as root)\n"        \
	"  -A, --acls            keep POSIX ACLs, their users and groups by name\n"  \
	"      --numeric-ids     with -o/-g/-A: ids as they are, no names\n"         \
	"      --no-fsync        do not wait for the destination disk before\n"      \
	"                        renaming (faster; a crash or power loss of\n"       \
	"                        the receiver can then lose the newest files)\n"     \
	"      --keep-setid      keep setuid/setgid bits (dropped by default)\n"     \
	"      --exclude PATTERN leave out what matches (rsync's rules: *, **,\n"    \
	"                        ?, [..]; a leading / anchors at the root, a\n"      \
	"                        trailing / matches directories only)\n"             \
	"      --include PATTERN keep what matches (the first rule that\n"           \
	"                        matches decides, as in rsync)\n"                    \
	"      --exclude-from FILE, --include-from FILE  rules, one a line\n"        \
	"      --files-from FILE send only the paths FILE lists (one a line; -:\n"   \
	"                        standard input), relative to the one source\n"      \
	"                        directory, with their parent directories;\n"        \
	"                        with -r also what is below a listed directory\n"    \
	"      --from0           FILE's paths end with a NUL byte, not a newline\n"  \
	"      --delete          remove at the destination what the source\n"        \
	"                        does not have, in the directories sent (not\n"      \
	"                        what the rules leave out); each is named\n"         \
	"      --delete-excluded remove what the rules leave out as well\n"          \
	"  -n, --dry-run         say what would be sent, replaced, skipped and\n"    \
	"                        deleted; write nothing, move no file data\n"        \
	"  -v, --verbose         name each file as it is done\n"                     \
	"      --progress        a progress line also when standard error is not\n"  \
	"                        a terminal (one every 5 s); --no-progress: none\n"  \
	"      --stats           end with the counts: files considered, sent,\n"     \
	"                        up to date, failed, deleted; file data sent and\n"  \
	"                        already there (also with -q)\n"                     \
	"      --link-speed RATE speed of the link for the % of its ceiling\n"       \
	"      --json            one JSON object per event on standard output\n"     \
	"      --save LABEL      keep the run (its events, both ends' facts) in\n"   \
	"                        the results file (linerate results)\n"              \
	"      --results FILE    that file, not ~/.local/share/linerate/...\n"       \
	"  -e, --rsh CMD         start the far end with CMD (default ssh), as\n"     \
	"                        rsync's -e: -e 'ssh -p 2222 -i key'\n"              \
	"      --remote-path P   the far end's linerate (default: linerate on\n"     \
	"                        its PATH)\n"                                        \
	"      --no-ssh          never start the far end over ssh\n"                 \
	"      --via-ssh         the data through the ssh session too (for a\n"      \
	"                        firewall; said when a direct connection fails)\n"   \
	"      --copy-self[=F]   no linerate on the far end: copy one there for\n"   \
	"                        the run (F, or a static build for its machine)\n"   \
	"  -r                    accepted, as scp's: trees are always recursive\n"   \
	"                        (with --files-from: rsync's -r)\n"                  \
	"  -q, --quiet           no progress, only errors\n"                         \
	"  -h, --help            this text\n"

const char cmd_send_usage[] =
	"usage: linerate send [options] PATH... [USER@]HOST:[DIR]\n"
	"\n"
	"Push files and directory trees. With USER@ or -e, linerate starts its\n"
	"far end over ssh (DIR as scp reads it: below the login's home, or\n"
	"absolute, ~ expanded there) and moves the data straight over TCP;\n"
	"else to `linerate recv` or `linerate serve --root` on HOST, DIR below\n"
	"its root. DIR is made when missing. One PATH that is one file, sent\n"
	"to a DIR that is not a directory there and has no trailing slash, is\n"
	"named DIR, as with scp: `send a.iso host:b.iso`. `-` as PATH sends\n"
	"standard input, as the file named by HOST:NAME. IPv6 goes in brackets:\n"
	"[2001:db8::1]:dir; the port only with -p.\n"
	"\n" COMMON_HELP "\n"
	"Files appear under their final names only when complete and verified;\n"
	"run the same command again after an interruption to resume.\n"
	"Exit status: 0 every file written and verified, 1 failure, 2 usage,\n"
	"23 some sources could not be read (everything else arrived).\n";

const char cmd_get_usage[] =
	"usage: linerate get [options] HOST:PATH... [DEST]\n"
	"\n"
	"Pull files and directory trees from `linerate serve --root` into\n"
	"DEST (default: the current directory; `-` writes the one file to\n"
	"standard output; to a terminal only text, as curl, unless\n"
	"--force-tty is given). One HOST:PATH that is one file, pulled into\n"
	"a DEST that is not a directory and has no trailing slash, is named\n"
	"DEST, as with scp: `get host:a.iso b.iso`.\n"
	"\n" COMMON_HELP "\n"
	"Exit status: 0 every file written and verified, 1 failure, 2 usage,\n"
	"23 some sources could not be read (everything else arrived).\n";
