#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench_transfer.sh - moving real files from host A to host B: linerate
# send/serve against nc, tar | nc, scp and rsync -e ssh, in one run, on the
# same two namespace test hosts, printed as a Markdown table.
#
# usage: bench/bench_transfer.sh [-t SEC] [--repeat N]
#                                [--rows unshaped,shaped,quota,tree]
#                                [--size SIZE] [--files N] [--dest-disk DIR]
#                                [--peers-only] [--against BIN]
#                                [--against-label TEXT] [--tools LIST]
#                                [--warmup N] [--no-prefault] [--out FILE]
#
#   -t SEC          seconds of the `linerate bench` reference run (default 5)
#   --repeat N      runs per cell; with N > 1 every cell is the median (default 1)
#   --rows LIST     groups to measure, comma separated (default all eleven
#                   below but tree-1g, resync-1g and resync1-1g):
#                     unshaped  the file, veth unshaped
#                     shaped    the file, veth tbf-shaped to 1 Gbit/s (both ends)
#                     quota     the file, veth unshaped, the receiving end and
#                               the sending end each held to 20% of one core
#                               (cgroup v1 cpu.cfs_quota_us 20000 / period 100000)
#                     tree      the tree of small files, veth unshaped
#                     resync    the tree again onto an identical copy (made
#                               with cp -a before each run): linerate send
#                               --update against rsync -a, tar | nc for a
#                               full copy
#                     resync1   the same, 1% of the destination's files
#                               (every 100th) different in content and older
#                     links     a tree of N names of which 20% are second
#                               names (hard links) of other files of the
#                               tree: linerate send -H against rsync -aH
#                               and tar | nc (which keeps links by default);
#                               every copy is checked to hold the links
#                     delta     the file again onto a copy in which ten 1 MiB
#                               blocks at unaligned offsets differ and whose
#                               last 1 MiB is missing (the source's "ten
#                               blocks overwritten and 1 MiB appended"),
#                               older: linerate send --update against
#                               rsync -a, nc for a full copy
#                     insert    the same against a copy that lacks 1 MiB in
#                               the middle (the source's "1 MiB inserted"):
#                               fixed-offset chunks against rsync's rolling
#                               checksum
#                     delta-1g, insert-1g  the same two, veth tbf-shaped
#                               to 1 Gbit/s
#                     tree-1g, resync-1g, resync1-1g  tree, resync and
#                               resync1, veth tbf-shaped to 1 Gbit/s
#   --size SIZE     the random file (bytes, or K, M, G: 1024-based; default
#                   1G)
#   --files N       files of 4 KiB in the tree, 1000 per directory (default 10000)
#   --dest-disk DIR receive into a fresh directory under DIR (a disk; not
#                   fsynced, but `sync`ed before each run) instead of a tmpfs
#   --peers-only    leave out the linerate rows (send, send --cipher none and
#                   the bench reference): only nc, tar | nc, scp, rsync
#   --against BIN   another linerate build (an earlier commit's): its send
#                   row "linerate send (BIN)" runs with BIN at both ends, in
#                   the same rotation, so each ratio column of that row is
#                   this build ÷ BIN
#   --against-label TEXT  how the table names BIN (default "--against")
#   --warmup N      N runs of each row before the counted ones, per group,
#                   not in the table (the first runs on a fresh tmpfs pay
#                   for its pages; default 0)
#   --tools LIST    only these rows, comma separated: lr, lrssh, lrvia, lrold
#                   (needs --against), lrchacha, lraes, lrnone, nc, tarnc, scp,
#                   rsync, ref, dd (default: all that apply)
#   --no-prefault   leave out the first step, which writes the machine's
#                   free memory once (MemAvailable less 2 GiB, into a tmpfs
#                   removed at once) so that no run pays for pages the
#                   virtual machine's host backs on first touch
#   --out FILE      also write the header and table to FILE
#   -h, --help      this text
#
# Tools, host A (198.18.0.1) sending to host B (198.18.0.2):
#
#   linerate        B: linerate serve --root DEST --token-file TF -p 7350
#                      --max-tests 4 --allow-plaintext -B 198.18.0.2
#                   A: linerate send --token-file TF -q SRC 198.18.0.2:SUBDIR
#   linerate ssh    the sshd of the scp row below; A: linerate send -q
#                   -e "ssh -i KEY ..." --remote-path BIN SRC root@B:DIR:
#                   the far end started over ssh for the run (its start,
#                   ssh's login included, is in the wall time)
#   linerate via ssh the same with --via-ssh: the data through the ssh
#                   session too (what a firewall in front of B leaves)
#   linerate none   the same, send --cipher none (authenticated, data in clear)
#   linerate chacha the same, send --cipher chacha20-poly1305 (the default
#                   row uses auto: AES-256-GCM on CPUs with AES instructions)
#   linerate aes    the same, send --cipher aes-256-gcm
#   nc              B: nc -l -s ADDR -p PORT -d > FILE     A: nc -N ADDR PORT < SRC
#   tar | nc        B: nc -l ... | tar xf - -C DIR         A: tar cf - -C PARENT NAME | nc -N ...
#   scp             an sshd started in B for the run (throw-away host key and
#                   authorized key, own config, port 22), the login a user
#                   the run makes (lrbench, /bin/sh: no shell start-up
#                   files), removed at the end; A: scp [-r] -i KEY ...
#                   (OpenSSH defaults: SFTP protocol, default cipher)
#   rsync           rsync -a -e "ssh -i KEY ..." against the same sshd
#   linerate bench  reference: memory to memory, -t SEC, against the same
#                   kind of server (file groups only)
#   dd              with --dest-disk (file groups): the destination disk
#                   alone, no network: in B, dd if=SRC of=DEST/FILE bs=1M
#                   conv=fsync (linerate send fsyncs too; nc and the others
#                   do not)
#
# The tree (group "tree") has no plain nc row.  The source data is made once
# with `linerate gen` (the tree: one gen file cut by `split -b 4096`) and is
# page-cached.  Every run gets its own destination directory and is checked:
# cmp for the file, diff -r for the tree; a run whose data is wrong counts as
# failed and its cells say "FAILED".  The destination is removed after each run.
#
# Every receiving end and every sending end runs under `/usr/bin/time -f
# '%e %U %S %M'` (one receiving server is started per run, so its CPU is that
# run's; it is stopped with SIGTERM after the client is done):
#
#   wall s       client start to both ends finished (for the servers that
#                stay up, the client's end: scp, rsync and send wait for B)
#   MB/s         payload bytes / wall / 1e6 (the tree: 4096 * N bytes)
#   files/s      the tree: N / wall
#   CPU s/GB     user+sys of both ends summed, per 1e9 payload bytes
#   machine CPU s/GB  the whole machine's busy time (/proc/stat: every CPU's
#                time less idle and iowait, softirq included) from before
#                the receiving end starts to after both ends ended, per
#                1e9 payload bytes: what two real machines would spend
#   RSS MiB      peak RSS of the largest process of the receiving (B) and of
#                the sending (A) end
#   wire MB      bytes that crossed host B's veth, both ways, from its
#                counters (rx_bytes + tx_bytes, headers included), / 1e6:
#                not from either tool's own report
#   ratios       linerate MB/s / this MB/s and linerate CPU/GB / this CPU/GB,
#                linerate being the default-cipher send row of the same group
#
# Within a group the tools go in a rotating order (shifted by one per group
# and per repeat).  Each run is bounded by `timeout` (60 s + 1 s per 10 MB).
# Cleaned up on exit, also on failure or SIGINT: servers, namespaces
# (testhosts_down), the tmpfs mount, cgroups, the sshd directory, the login
# user lrbench (when the run made it), the token,
# the temporary directories.
#
# Needs root (namespaces, mount, cgroups); the groups are skipped, with the
# reason, otherwise.  Traffic goes only to the 198.18.0.x test hosts.
# Environment: LINERATE_BIN (default: build/linerate of this tree; LINERATE
# is accepted too), CGROOT (default: /sys/fs/cgroup/cpu), ACCTROOT (default:
# /sys/fs/cgroup/cpuacct: each end of every run is put in a group there, and
# its CPU time, its children's included (sshd's sessions), is read from
# cpuacct.usage; without it the per-end columns say "-").
#
# This is a benchmark: it never fails on a speed.  Exit status: 0 every run
# succeeded, 2 usage error,
# 1 some run failed (its cells say "FAILED").

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
readonly HERE TOP
readonly TIME_BIN=/usr/bin/time
readonly TIME_FMT='%e %U %S %M'
readonly CG_PERIOD=100000 CG_QUOTA=20000
readonly LR_PORT=7350 SSH_PORT=22
readonly SSHD_BIN=/usr/sbin/sshd
readonly TREE_FILE=4096 TREE_PER_DIR=1000

CMDLINE=
for _a in "$0" "$@"; do
    if [[ $_a =~ ^[A-Za-z0-9_./,:=+@%-]+$ ]]; then
        CMDLINE+="${CMDLINE:+ }$_a"
    else
        CMDLINE+="${CMDLINE:+ }$(printf '%q' "$_a")"
    fi
done

LINERATE_BIN=${LINERATE_BIN:-${LINERATE:-$TOP/build/linerate}}
CGROOT=${CGROOT:-/sys/fs/cgroup/cpu}
ACCTROOT=${ACCTROOT:-/sys/fs/cgroup/cpuacct}
unset LINERATE_TOKEN

opt_time=5
opt_repeat=1
opt_rows=unshaped,shaped,quota,tree,resync,resync1,links,delta,insert,delta-1g,insert-1g
opt_out=
opt_size=1G
opt_files=10000
opt_dest_disk=
opt_peers_only=0
opt_against=
opt_against_desc=--against
opt_tools=
opt_warmup=0
opt_prefault=1

BENCH_NAME=bench_transfer
BENCH_SCRIPT=${BASH_SOURCE[0]}
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"

# This script's own options first; the rest goes to bench_parse_options.
_rest=()
while [ $# -gt 0 ]; do
    case $1 in
    --size)
        [ $# -ge 2 ] || die_usage "$1 needs a value"
        opt_size=$2
        shift 2
        ;;
    --size=*) opt_size=${1#*=}; shift ;;
    --files)
        [ $# -ge 2 ] || die_usage "$1 needs a value"
        opt_files=$2
        shift 2
        ;;
    --files=*) opt_files=${1#*=}; shift ;;
    --dest-disk)
        [ $# -ge 2 ] || die_usage "$1 needs a value"
        opt_dest_disk=$2
        shift 2
        ;;
    --dest-disk=*) opt_dest_disk=${1#*=}; shift ;;
    --peers-only) opt_peers_only=1; shift ;;
    --against)
        [ $# -ge 2 ] || die_usage "$1 needs a value"
        opt_against=$2
        shift 2
        ;;
    --against=*) opt_against=${1#*=}; shift ;;
    --against-label)
        [ $# -ge 2 ] || die_usage "$1 needs a value"
        opt_against_desc=$2
        shift 2
        ;;
    --against-label=*) opt_against_desc=${1#*=}; shift ;;
    --warmup)
        [ $# -ge 2 ] || die_usage "$1 needs a value"
        opt_warmup=$2
        shift 2
        ;;
    --warmup=*) opt_warmup=${1#*=}; shift ;;
    --no-prefault) opt_prefault=0; shift ;;
    *) _rest+=("$1"); shift ;;
    esac
done
bench_parse_options ${_rest[@]+"${_rest[@]}"}

if [[ $opt_size =~ ^([0-9]{1,7})([KkMmGg]?)$ ]]; then
    SIZE_BYTES=${BASH_REMATCH[1]}
    case ${BASH_REMATCH[2]} in
    K | k) SIZE_BYTES=$((SIZE_BYTES * 1024)) ;;
    M | m) SIZE_BYTES=$((SIZE_BYTES * 1024 * 1024)) ;;
    G | g) SIZE_BYTES=$((SIZE_BYTES * 1024 * 1024 * 1024)) ;;
    esac
else
    die_usage "--size wants a size such as 256M or 1G, not '$opt_size'"
fi
if [ "$SIZE_BYTES" -lt 1 ] || [ "$SIZE_BYTES" -gt $((64 * 1024 * 1024 * 1024)) ]; then
    die_usage "--size wants 1 byte to 64G, not '$opt_size'"
fi
if ! [[ $opt_files =~ ^[0-9]{1,7}$ ]] || [ "$opt_files" -lt 1 ] || [ "$opt_files" -gt 1000000 ]; then
    die_usage "--files wants 1-1000000, not '$opt_files'"
fi
if [ -n "$opt_dest_disk" ] && [ ! -d "$opt_dest_disk" ]; then
    die_usage "--dest-disk: '$opt_dest_disk' is not a directory"
fi
TREE_BYTES=$((opt_files * TREE_FILE))
# the links tree: of every TREE_PER_DIR names, the last fifth are second
# names of files of the directory before (its first fifth)
LINKS_PER_DIR=$((TREE_PER_DIR / 5))
[[ $opt_warmup =~ ^[0-9]{1,2}$ ]] || die_usage "--warmup wants 0-99, not '$opt_warmup'"
if [ -n "$opt_against" ]; then
    [ -x "$opt_against" ] || die_usage "--against: '$opt_against' is not an executable"
    opt_against=$(cd "$(dirname "$opt_against")" && pwd)/$(basename "$opt_against")
    opt_against_ver=$("$opt_against" version 2>&1 | head -n 1) || opt_against_ver=
fi
declare -A TOOL_OK=()
if [ -n "$opt_tools" ]; then
    IFS=, read -r -a _tl <<<"$opt_tools"
    for _t in "${_tl[@]}"; do
        case $_t in
        lr | lrssh | lrvia | lrchacha | lraes | lrnone | nc | tarnc | scp | rsync | ref | dd) TOOL_OK[$_t]=1 ;;
        lrold)
            [ -n "$opt_against" ] || die_usage "--tools lrold needs --against BIN"
            TOOL_OK[$_t]=1
            ;;
        *) die_usage "--tools: unknown row '$_t'" ;;
        esac
    done
fi

GROUPS_ALL=(unshaped shaped quota tree resync resync1 links delta insert delta-1g insert-1g tree-1g resync-1g resync1-1g)
declare -A WANT=()
IFS=, read -r -a _rows <<<"$opt_rows"
[ ${#_rows[@]} -gt 0 ] || die_usage "--rows is empty"
for _r in "${_rows[@]}"; do
    case $_r in
    unshaped | shaped | quota | tree | resync | resync1 | links | delta | insert | delta-1g | insert-1g | tree-1g | resync-1g | resync1-1g) WANT[$_r]=1 ;;
    *) die_usage "--rows: unknown group '$_r' (unshaped, shaped, quota, tree, resync, resync1, links, delta, insert, delta-1g, insert-1g, tree-1g, resync-1g, resync1-1g)" ;;
    esac
done
want_file=0
for _g in unshaped shaped quota delta insert delta-1g insert-1g; do
    [ -n "${WANT[$_g]:-}" ] && want_file=1
done
want_tree=0
for _g in tree resync resync1 tree-1g resync-1g resync1-1g; do
    [ -n "${WANT[$_g]:-}" ] && want_tree=1
done
if { [ -n "${WANT[delta]:-}${WANT[insert]:-}${WANT[delta-1g]:-}${WANT[insert-1g]:-}" ]; } &&
    [ "$SIZE_BYTES" -lt $((32 * 1024 * 1024)) ]; then
    die_usage "--rows delta and insert need --size of at least 32M"
fi

# ---------------------------------------------------------------- tools

[ -x "$LINERATE_BIN" ] || { log "$LINERATE_BIN not found; build it: ninja -C build"; exit 1; }
for _tool in ss timeout awk sort ps nc tar scp ssh ssh-keygen rsync split cmp diff mount umount; do
    command -v "$_tool" >/dev/null 2>&1 ||
        { log "'$_tool' not found (scripts/deps.sh --bench installs the tools)"; exit 1; }
done
[ -x "$SSHD_BIN" ] || { log "$SSHD_BIN not found (apt-get install openssh-server)"; exit 1; }
[ -x "$TIME_BIN" ] || { log "$TIME_BIN not found (apt-get install time)"; exit 1; }
[ -x /bin/sh ] || { log "/bin/sh not found"; exit 1; }
if [ "$opt_peers_only" = 0 ]; then
    command -v jq >/dev/null 2>&1 || [ -x /usr/bin/python3 ] ||
        { log "need jq or /usr/bin/python3 to read linerate bench's JSON"; exit 1; }
fi
if [ "$(id -u)" != 0 ]; then
    log "not root: namespaces, the tmpfs and the cgroups need root"
    exit 1
fi

# ---------------------------------------------------------------- cleanup

# shellcheck disable=SC1091  # scripts/testhosts.sh, a bash library
source "$TOP/scripts/testhosts.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench_transfer.XXXXXX")
DEST=
DEST_MOUNTED=0
DEST_MADE=
RUN_SSHD_DIR_MADE=0
BENCH_USER=lrbench
BENCH_USER_MADE=0
SERVER_PIDS=()
CGROUPS=()
ACCT_GROUPS=()

kill_tree() {
    local pid=$1 sig=${2:-TERM} child
    for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
        kill_tree "$child" "$sig"
    done
    kill "-$sig" "$pid" 2>/dev/null || true
}

wait_gone() {
    local pid=$1 n=$2 i
    for ((i = 0; i < n; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    ! kill -0 "$pid" 2>/dev/null
}

kill_servers() {
    local pid
    for pid in ${SERVER_PIDS[@]+"${SERVER_PIDS[@]}"}; do
        kill_tree "$pid" TERM
    done
    for pid in ${SERVER_PIDS[@]+"${SERVER_PIDS[@]}"}; do
        wait_gone "$pid" 20 || kill_tree "$pid" KILL
        wait "$pid" 2>/dev/null || true
    done
    SERVER_PIDS=()
}

remove_cgroups() {
    local cg i pids
    for cg in ${CGROUPS[@]+"${CGROUPS[@]}"}; do
        for ((i = 0; i < 50; i++)); do
            [ -d "$cg" ] || break
            pids=$(cat "$cg/cgroup.procs" 2>/dev/null) || pids=
            if [ -n "$pids" ]; then
                # shellcheck disable=SC2086  # one pid per word
                kill -KILL $pids 2>/dev/null || true
            elif rmdir "$cg" 2>/dev/null; then
                break
            fi
            sleep 0.1
        done
        [ -d "$cg" ] && log "could not remove cgroup $cg (remove it with: rmdir $cg)"
    done
    CGROUPS=()
}

# shellcheck disable=SC2317  # reached through the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    kill_servers
    testhosts_down
    remove_cgroups
    CGROUPS=(${ACCT_GROUPS[@]+"${ACCT_GROUPS[@]}"})
    remove_cgroups
    if [ "$DEST_MOUNTED" = 1 ]; then
        umount "$DEST" 2>/dev/null || umount -l "$DEST" 2>/dev/null ||
            log "could not unmount $DEST"
    fi
    [ -n "$DEST_MADE" ] && rm -rf "$DEST_MADE"
    mountpoint -q "$WORK/prefault" 2>/dev/null && umount -l "$WORK/prefault"
    [ "$RUN_SSHD_DIR_MADE" = 1 ] && rmdir /run/sshd 2>/dev/null
    [ "$BENCH_USER_MADE" = 1 ] && userdel "$BENCH_USER" 2>/dev/null
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- data

SRC=$WORK/src
mkdir -p "$SRC"
FILE_NAME=random.bin
TREE_NAME=tree
LINKS_NAME=ltree

if [ "$want_file" = 1 ]; then
    log "generating the $opt_size file"
    "$LINERATE_BIN" gen "$SRC/$FILE_NAME" "$SIZE_BYTES" 2>"$WORK/gen.err" ||
        { log "linerate gen failed: $(cat "$WORK/gen.err")"; exit 1; }
fi
if [ "$want_tree" = 1 ]; then
    log "generating the tree: $opt_files files of $TREE_FILE bytes"
    "$LINERATE_BIN" gen "$WORK/tree.bin" "$TREE_BYTES" 2>"$WORK/gen.err" ||
        { log "linerate gen failed: $(cat "$WORK/gen.err")"; exit 1; }
    ndirs=$(((opt_files + TREE_PER_DIR - 1) / TREE_PER_DIR))
    for ((d = 0; d < ndirs; d++)); do
        n=$((opt_files - d * TREE_PER_DIR))
        [ "$n" -gt "$TREE_PER_DIR" ] && n=$TREE_PER_DIR
        dir=$SRC/$TREE_NAME/$(printf 'd%04d' "$d")
        mkdir -p "$dir"
        dd if="$WORK/tree.bin" bs="$TREE_FILE" skip=$((d * TREE_PER_DIR)) count="$n" status=none |
            split -b "$TREE_FILE" -a 3 -d - "$dir/f"
    done
    rm -f "$WORK/tree.bin"
    got=$(find "$SRC/$TREE_NAME" -type f | wc -l)
    [ "$got" = "$opt_files" ] || { log "tree generation made $got files, not $opt_files"; exit 1; }
fi
if [ -n "${WANT[links]:-}" ]; then
    # the tree's names, each directory's last fifth replaced by links to
    # the first fifth of the directory before (the last links to d0000)
    log "generating the links tree: $opt_files names, $((opt_files / 5)) of them hard links"
    if [ $((opt_files % TREE_PER_DIR)) != 0 ] || [ "$opt_files" -lt $((2 * TREE_PER_DIR)) ]; then
        die_usage "--rows links needs --files a multiple of $TREE_PER_DIR, at least $((2 * TREE_PER_DIR))"
    fi
    ndirs=$((opt_files / TREE_PER_DIR))
    "$LINERATE_BIN" gen "$WORK/ltree.bin" $((opt_files * TREE_FILE)) 2>"$WORK/gen.err" ||
        { log "linerate gen failed: $(cat "$WORK/gen.err")"; exit 1; }
    for ((d = 0; d < ndirs; d++)); do
        dir=$SRC/$LINKS_NAME/$(printf 'd%04d' "$d")
        mkdir -p "$dir"
        dd if="$WORK/ltree.bin" bs="$TREE_FILE" skip=$((d * TREE_PER_DIR)) \
            count=$((TREE_PER_DIR - LINKS_PER_DIR)) status=none |
            split -b "$TREE_FILE" -a 3 -d - "$dir/f"
    done
    rm -f "$WORK/ltree.bin"
    for ((d = 0; d < ndirs; d++)); do
        dir=$SRC/$LINKS_NAME/$(printf 'd%04d' "$d")
        prev=$SRC/$LINKS_NAME/$(printf 'd%04d' $(((d + ndirs - 1) % ndirs)))
        for ((i = 0; i < LINKS_PER_DIR; i++)); do
            ln "$prev/$(printf 'f%03d' "$i")" "$dir/$(printf 'f%03d' $((TREE_PER_DIR - LINKS_PER_DIR + i)))"
        done
    done
    LINKS_BYTES=$(((opt_files - opt_files / 5) * TREE_FILE))
    got=$(find "$SRC/$LINKS_NAME" -type f -links 2 | wc -l)
    [ "$got" = $((2 * opt_files / 5)) ] || { log "the links tree has $got names of linked files, not $((2 * opt_files / 5))"; exit 1; }
fi

# Every free page of the machine touched once before the runs (not with
# --no-prefault): on a virtual machine whose memory the host backs lazily,
# the first write to a guest page never used before traps to the host, and
# writing 1 GiB into a fresh tmpfs took 0.28 s to 2.84 s here depending on
# how many of the pages it got were new (0.21 s every time after this
# step). That cost lands on whichever tool receives into new pages.
prefault() {
    local avail_kib mib t0 t1 dir=$WORK/prefault
    avail_kib=$(awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo)
    mib=$((avail_kib / 1024 - 2048))
    [ "$mib" -gt 256 ] || { log "prefault: too little memory; skipped"; return 0; }
    mkdir -p "$dir"
    mount -t tmpfs -o "size=$((mib + 16))m" tmpfs "$dir" ||
        { log "prefault: cannot mount a tmpfs; skipped"; return 0; }
    t0=$(date +%s.%N)
    dd if=/dev/zero of="$dir/fill" bs=1M count="$mib" status=none || true
    t1=$(date +%s.%N)
    rm -f "$dir/fill"
    umount "$dir" || umount -l "$dir" || true
    rmdir "$dir" 2>/dev/null || true
    log "prefault: $mib MiB of free memory touched once in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
}
if [ "$opt_prefault" = 1 ] && [ "$(id -u)" = 0 ]; then
    prefault
fi

# The destination: a tmpfs big enough for one received copy of everything
# plus room for a tool's temporary copy, or a directory on a disk.
if [ -n "$opt_dest_disk" ]; then
    DEST=$(mktemp -d "$opt_dest_disk/bench_transfer.XXXXXX")
    DEST_MADE=$DEST
    DEST_DESC="disk directory $opt_dest_disk (sync before each run; linerate send fsyncs by default, the peers do not)"
else
    DEST=$WORK/dest
    mkdir -p "$DEST"
    tmpfs_mib=$(((2 * SIZE_BYTES + 2 * TREE_BYTES) / 1048576 + 256))
    mount -t tmpfs -o "size=${tmpfs_mib}m,mode=0755" tmpfs "$DEST" ||
        { log "cannot mount a tmpfs on $DEST"; exit 1; }
    DEST_MOUNTED=1
    DEST_DESC="tmpfs of $tmpfs_mib MiB"
fi

# ---------------------------------------------------------------- token, sshd

TOKEN_FILE=$WORK/token
if [ "$opt_peers_only" = 0 ]; then
    if ! (umask 077 && "$LINERATE_BIN" token >"$TOKEN_FILE") 2>"$WORK/token.err" ||
        [ ! -s "$TOKEN_FILE" ]; then
        log "'linerate token' failed: $(cat "$WORK/token.err")"
        exit 1
    fi
fi

SSHD_DIR=$WORK/sshd
# readable by the login of the ssh rows (its authorized key, the far
# linerate): the private keys stay 0600
mkdir -m 755 "$SSHD_DIR"
chmod 755 "$WORK"
ssh-keygen -q -t ed25519 -N '' -C bench-host -f "$SSHD_DIR/host_key" >/dev/null
ssh-keygen -q -t ed25519 -N '' -C bench-client -f "$SSHD_DIR/client_key" >/dev/null
cp "$SSHD_DIR/client_key.pub" "$SSHD_DIR/authorized_keys"
chmod 644 "$SSHD_DIR/authorized_keys"
# The login of the ssh rows: a user of the run's own with /bin/sh, so
# that each row pays ssh's login and nothing of root's shell start-up
# files (bash sources ~/.bashrc for every command ssh runs; this
# machine's runs `pyenv init`: 0.6 s a login)
if ! id "$BENCH_USER" >/dev/null 2>&1; then
    useradd -M -d "$WORK/home" -s /bin/sh -p '*' "$BENCH_USER"
    BENCH_USER_MADE=1
fi
mkdir -p "$WORK/home"
chown "$BENCH_USER" "$WORK/home"
FAR_BIN=$SSHD_DIR/linerate
cp "$LINERATE_BIN" "$FAR_BIN"
chmod 755 "$FAR_BIN"
SFTP_SERVER=/usr/lib/openssh/sftp-server
[ -x "$SFTP_SERVER" ] || SFTP_SERVER=internal-sftp
cat >"$SSHD_DIR/sshd_config" <<EOF
ListenAddress $TH_ADDR_B:$SSH_PORT
HostKey $SSHD_DIR/host_key
PidFile $SSHD_DIR/sshd.pid
AuthorizedKeysFile $SSHD_DIR/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
PrintMotd no
PrintLastLog no
Subsystem sftp $SFTP_SERVER
EOF
if [ ! -d /run/sshd ]; then
    # sshd's privilege separation directory (normally made by its service)
    mkdir -m 755 /run/sshd
    RUN_SSHD_DIR_MADE=1
fi
"$SSHD_BIN" -t -f "$SSHD_DIR/sshd_config" 2>"$WORK/sshd-t.err" ||
    { log "sshd rejects its config: $(cat "$WORK/sshd-t.err")"; exit 1; }
SSH_OPTS=(-i "$SSHD_DIR/client_key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
    -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=10)

# ---------------------------------------------------------------- one run

NS_CLIENT=()
NS_SERVER=()
# The wrapper joins each cgroup named before "--", then runs the rest.
# shellcheck disable=SC2016  # $$ and $1 are for the wrapper's shell
readonly CG_SCRIPT='while [ "$1" != -- ]; do echo $$ >"$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"'
WRAP_SERVER=()
WRAP_CLIENT=()

# Per-end CPU accounting (cpuacct): one group for each end, made once.
ACCT_SRV=
ACCT_CLI=
if [ "$(id -u)" = 0 ] && [ -f "$ACCTROOT/cpuacct.usage" ]; then
    ACCT_SRV=$ACCTROOT/lr-xfer-$$-recv
    ACCT_CLI=$ACCTROOT/lr-xfer-$$-send
    for _d in "$ACCT_SRV" "$ACCT_CLI"; do
        if mkdir "$_d" 2>/dev/null; then
            ACCT_GROUPS+=("$_d")
        else
            log "cannot create $_d: no per-end CPU columns"
            ACCT_SRV= ACCT_CLI=
            break
        fi
    done
fi

# The CPU time of an accounting group so far, in ns (0 without one).
acct_ns() {
    if [ -n "$1" ]; then cat "$1/cpuacct.usage" 2>/dev/null || echo 0; else echo 0; fi
}

# The wrapper for one end: the quota's group (if any), then its
# accounting group.
wrap_for() {
    local quota=$1 acct=$2
    local -a groups=()
    [ -n "$quota" ] && groups+=("$quota")
    [ -n "$acct" ] && groups+=("$acct")
    [ ${#groups[@]} -gt 0 ] || return 0
    printf '%s\n' /bin/sh -c "$CG_SCRIPT" lr-cgroup "${groups[@]}" --
}
RUN_NO=0

wait_listen() {
    bench_wait_listen "$TH_ADDR_B" "$1" "$2" 400
}

now() {
    date +%s.%N
}

# Every CPU's busy time so far, in clock ticks: /proc/stat's cpu line less
# idle and iowait (user nice system irq softirq steal).
CLK_TCK=$(getconf CLK_TCK)
busy_jiffies() {
    awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# From linerate bench's -J document: "bits_per_second bytes".
json_result() {
    if command -v jq >/dev/null 2>&1; then
        jq -er '[.end.sum_received.bits_per_second, .end.sum_received.bytes]
                | if .[0] == null or .[1] == null then error("no sum_received")
                  else map(tostring) | join(" ") end' "$1" 2>/dev/null
    else
        /usr/bin/python3 - "$1" <<'EOF' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))["end"]["sum_received"]
print(r["bits_per_second"], r["bytes"])
EOF
    fi
}

# The received copy of NAME in RUNDIR: RUNDIR/NAME, or RUNDIR itself when
# the tool took RUNDIR as the name of the copy.
received() {
    local rundir=$1 name=$2 kind=$3
    if [ -e "$rundir/$name" ]; then
        echo "$rundir/$name"
    elif [ "$kind" = file ] && [ -f "$rundir" ]; then
        echo "$rundir"
    elif [ "$kind" = tree ] && [ -d "$rundir/d0000" ]; then
        echo "$rundir"
    else
        echo "$rundir/$name"
    fi
}

# Stop a server that stays up (sshd, linerate serve): wait (bounded, ~5 s)
# until it has no children left (sessions ended and reaped, so their CPU is
# in its rusage), then TERM it, then wait for /usr/bin/time to write.
stop_server() {
    local tpid=$1 p i kids
    for p in $(ps -o pid= --ppid "$tpid" 2>/dev/null); do
        for ((i = 0; i < 50; i++)); do
            kids=$(ps -o pid= --ppid "$p" 2>/dev/null) || kids=
            [ -z "$kids" ] && break
            sleep 0.1
        done
        kill -TERM "$p" 2>/dev/null || true
    done
    if ! wait_gone "$tpid" 50; then
        # KILL the server, not /usr/bin/time, so the rusage is still written
        for p in $(ps -o pid= --ppid "$tpid" 2>/dev/null); do
            kill_tree "$p" KILL
        done
        wait_gone "$tpid" 20 || kill_tree "$tpid" KILL
    fi
    wait "$tpid" 2>/dev/null || true
    SERVER_PIDS=()
}

# run_one TOOL KIND TAG: one receiving end in B, one sending end in A.
# On success sets R_WALL R_MBPS R_FPS R_CPUGB R_RSS_RECV R_RSS_SEND and
# returns 0; returns 1 when the run failed or its data is wrong.
# shellcheck disable=SC2016  # the sh -c snippets take their arguments as $1...
# The groups: what each sends (file or tree), and whether the destination
# holds a copy already (the sync groups: "same", "changed", "delta").
group_kind() {
    case $1 in
    tree | resync | resync1 | links | tree-1g | resync-1g | resync1-1g) echo tree ;;
    *) echo file ;;
    esac
}
group_sync() {
    case $1 in
    resync | resync-1g) echo same ;;
    resync1 | resync1-1g) echo changed ;;
    delta | delta-1g) echo delta ;;
    insert | insert-1g) echo insert ;;
    *) echo ;;
    esac
}

# Bytes that crossed host B's veth so far, both ways.
wire_bytes() {
    ip netns exec "$TH_B" cat "/sys/class/net/$TH_IF_B/statistics/rx_bytes" \
        "/sys/class/net/$TH_IF_B/statistics/tx_bytes" 2>/dev/null |
        awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# The destination copy a sync group starts from, made before the run
# (outside its time): identical, 1% changed, or the file with ten 1 MiB
# blocks changed and its last 1 MiB missing. Changed files are a day older
# than the source's, as a copy made yesterday would be.
prepare_dest() {
    local src=$1 rundir=$2 name=$3 i off size f n=0
    cp -a "$src" "$rundir/"
    case $SYNC in
    changed)
        while IFS= read -r f; do
            n=$((n + 1))
            [ $((n % 100)) = 0 ] || continue
            head -c "$(stat -c %s "$f")" /dev/urandom >"$f"
            touch -d '-1 day' "$f"
        done < <(find "$rundir/$name" -type f | sort)
        ;;
    delta)
        size=$(stat -c %s "$rundir/$name")
        for ((i = 0; i < 10; i++)); do
            off=$(((i + 1) * size / 12 + 4097 * i))
            head -c 1048576 /dev/urandom |
                dd of="$rundir/$name" bs=1M seek="$off" oflag=seek_bytes conv=notrunc status=none
        done
        truncate -s $((size - 1048576)) "$rundir/$name"
        touch -d '-1 day' "$rundir/$name"
        ;;
    insert)
        size=$(stat -c %s "$src")
        off=$((size / 2))
        { head -c "$off" "$src" && tail -c +$((off + 1048576 + 1)) "$src"; } >"$rundir/$name"
        touch -d '-1 day' "$rundir/$name"
        ;;
    esac
}

run_one() {
    local tool=$1 kind=$2 tag=$3
    local sf=$WORK/$tag.recv.time cf=$WORK/$tag.send.time
    local slog=$WORK/$tag.recv.log clog=$WORK/$tag.send.log
    local rundir=$DEST/$tag name src bytes limit port oneshot=0 persist=1 local_only=0
    local -a srv cli
    local spid crc=0 src_rc t0 t1 st ct got

    RUN_NO=$((RUN_NO + 1))
    if [ "$kind" = tree ] && [ -n "$LINKS" ]; then
        name=$LINKS_NAME bytes=$LINKS_BYTES
    elif [ "$kind" = tree ]; then
        name=$TREE_NAME bytes=$TREE_BYTES
    else
        name=$FILE_NAME bytes=$SIZE_BYTES
    fi
    src=$SRC/$name
    limit=$((60 + bytes / 10000000))
    port=$((20000 + RUN_NO))
    mkdir -p "$rundir"
    [ -n "$SYNC" ] && prepare_dest "$src" "$rundir" "$name"
    chown -R "$BENCH_USER" "$rundir" 2>/dev/null || true
    rm -f "$sf" "$cf"
    [ -n "$opt_dest_disk" ] && sync

    case $tool in
    lr | lrnone | lrchacha | lraes | lrold)
        port=$LR_PORT
        local lrbin=$LINERATE_BIN
        [ "$tool" = lrold ] && lrbin=$opt_against
        srv=("$lrbin" serve --root "$DEST" --token-file "$TOKEN_FILE" -p "$port"
            --max-tests 4 --allow-plaintext -B "$TH_ADDR_B")
        cli=("$lrbin" send --token-file "$TOKEN_FILE" -q --json)
        [ -n "$SYNC" ] && cli+=(--update)
        [ -n "$LINKS" ] && cli+=(-H)
        [ "$tool" = lrnone ] && cli+=(--cipher none)
        [ "$tool" = lrchacha ] && cli+=(--cipher chacha20-poly1305)
        [ "$tool" = lraes ] && cli+=(--cipher aes-256-gcm)
        cli+=("$src" "$TH_ADDR_B:$tag/")
        ;;
    ref)
        # no --root: memory to memory needs none (and works with older builds)
        port=$LR_PORT
        srv=("$LINERATE_BIN" serve --token-file "$TOKEN_FILE" -p "$port"
            --max-tests 4 --allow-plaintext -B "$TH_ADDR_B")
        cli=("$LINERATE_BIN" bench -t "$opt_time" -J -i 0 --token-file "$TOKEN_FILE" "$TH_ADDR_B:$port")
        limit=$((opt_time + 60))
        ;;
    nc)
        oneshot=1 persist=0
        srv=(timeout "$limit" /bin/sh -c 'exec nc -l -s "$1" -p "$2" -d >"$3"' nc-recv
            "$TH_ADDR_B" "$port" "$rundir/$name")
        cli=(/bin/sh -c 'exec nc -N "$1" "$2" <"$3"' nc-send "$TH_ADDR_B" "$port" "$src")
        ;;
    tarnc)
        oneshot=1 persist=0
        srv=(timeout "$limit" /bin/sh -c 'nc -l -s "$1" -p "$2" -d | tar xf - -C "$3"' tar-recv
            "$TH_ADDR_B" "$port" "$rundir")
        cli=(/bin/sh -c 'tar cf - -C "$1" "$2" | nc -N "$3" "$4"' tar-send
            "$SRC" "$name" "$TH_ADDR_B" "$port")
        ;;
    dd)
        # no server: one process in B writes the file onto the disk
        local_only=1 persist=0
        cli=(dd if="$src" of="$rundir/$name" bs=1M conv=fsync status=none)
        ;;
    lrssh)
        port=$SSH_PORT
        rm -f "$SSHD_DIR/sshd.pid"
        srv=("$SSHD_BIN" -D -e -f "$SSHD_DIR/sshd_config")
        cli=("$LINERATE_BIN" send -q --json -e "ssh ${SSH_OPTS[*]}"
            --remote-path "$FAR_BIN" "$src" "$BENCH_USER@$TH_ADDR_B:$rundir/")
        ;;
    lrvia)
        port=$SSH_PORT
        rm -f "$SSHD_DIR/sshd.pid"
        srv=("$SSHD_BIN" -D -e -f "$SSHD_DIR/sshd_config")
        cli=("$LINERATE_BIN" send -q --json --via-ssh -e "ssh ${SSH_OPTS[*]}"
            --remote-path "$FAR_BIN" "$src" "$BENCH_USER@$TH_ADDR_B:$rundir/")
        ;;
    scp | rsync)
        port=$SSH_PORT
        rm -f "$SSHD_DIR/sshd.pid"
        srv=("$SSHD_BIN" -D -e -f "$SSHD_DIR/sshd_config")
        if [ "$tool" = scp ]; then
            cli=(scp -q "${SSH_OPTS[@]}")
            [ "$kind" = tree ] && cli+=(-r)
            cli+=("$src" "$BENCH_USER@$TH_ADDR_B:$rundir/")
        else
            cli=(rsync "-a${LINKS:+H}" -e "ssh ${SSH_OPTS[*]}" "$src" "$BENCH_USER@$TH_ADDR_B:$rundir/")
        fi
        ;;
    esac

    local -a ns_cli=("${NS_CLIENT[@]}")
    local busy0 busy1 as0 as1 ac0 ac1 wire0 wire1
    wire0=$(wire_bytes)
    busy0=$(busy_jiffies)
    as0=$(acct_ns "$ACCT_SRV") ac0=$(acct_ns "$ACCT_CLI")
    if [ "$local_only" = 1 ]; then
        # the one process runs where the data lands; no receiving end
        ns_cli=("${NS_SERVER[@]}")
        echo "0.00 0.00 0.00 0" >"$sf"
    else
        "${WRAP_SERVER[@]}" "${NS_SERVER[@]}" "$TIME_BIN" -f "$TIME_FMT" -o "$sf" \
            "${srv[@]}" </dev/null >"$slog" 2>&1 &
        spid=$!
        SERVER_PIDS=("$spid")
        if ! wait_listen "$port" "$spid"; then
            log "$tag: the receiving end did not start listening on port $port:"
            sed 's/^/    /' "$slog" >&2 || true
            kill_servers
            rm -rf "$rundir"
            return 1
        fi
    fi

    t0=$(now)
    timeout "$limit" "${WRAP_CLIENT[@]}" "${ns_cli[@]}" "$TIME_BIN" -f "$TIME_FMT" -o "$cf" \
        "${cli[@]}" </dev/null >"$clog" 2>&1 || crc=$?
    src_rc=0
    if [ "$oneshot" = 1 ]; then
        # bounded by the timeout inside the receiving end
        wait "$spid" || src_rc=$?
        SERVER_PIDS=()
    fi
    t1=$(now)
    [ "$persist" = 1 ] && stop_server "$spid"
    busy1=$(busy_jiffies)
    wire1=$(wire_bytes)
    as1=$(acct_ns "$ACCT_SRV") ac1=$(acct_ns "$ACCT_CLI")
    R_WIRE=$(awk -v a="$wire0" -v b="$wire1" 'BEGIN { printf "%.2f\n", (b - a) / 1e6 }')

    if [ "$crc" != 0 ] || [ "$src_rc" != 0 ]; then
        log "$tag: FAILED (sending end exit $crc, receiving end exit $src_rc)"
        [ -s "$clog" ] && sed 's/^/    send: /' "$clog" | tail -n 5 >&2
        [ -s "$slog" ] && sed 's/^/    recv: /' "$slog" | tail -n 5 >&2
        rm -rf "$rundir"
        return 1
    fi
    if ! ct=$(time_line "$cf") || ! st=$(time_line "$sf"); then
        log "$tag: FAILED (no /usr/bin/time output)"
        rm -rf "$rundir"
        return 1
    fi

    if [ "$tool" = ref ]; then
        local doc
        if ! doc=$(json_result "$clog"); then
            log "$tag: FAILED (no sum_received in linerate bench's JSON)"
            rm -rf "$rundir"
            return 1
        fi
        read -r R_BPS bytes <<<"$doc"
        t0=0 t1=$opt_time
    else
        got=$(received "$rundir" "$name" "$kind")
        if [ "$kind" = tree ]; then
            if ! diff -r -q "$src" "$got" >"$WORK/$tag.diff" 2>&1; then
                log "$tag: FAILED: the received tree differs ($(wc -l <"$WORK/$tag.diff") lines of diff -r -q):"
                head -n 3 "$WORK/$tag.diff" | sed 's/^/    /' >&2
                rm -rf "$rundir"
                return 1
            fi
            if [ -n "$LINKS" ] &&
                [ "$(find "$got" -type f -links 2 | wc -l)" != $((2 * opt_files / 5)) ]; then
                log "$tag: FAILED: the received tree does not keep the hard links"
                rm -rf "$rundir"
                return 1
            fi
        elif ! cmp -s "$src" "$got"; then
            log "$tag: FAILED: $got is not a copy of the source"
            rm -rf "$rundir"
            return 1
        fi
    fi
    rm -rf "$rundir"

    read -r R_WALL R_MBPS R_FPS R_CPUGB R_RSS_RECV R_RSS_SEND R_CPU R_MCPUGB R_RCPUGB R_SCPUGB < <(
        awk -v t0="$t0" -v t1="$t1" -v bytes="$bytes" -v files="$opt_files" -v kind="$kind" \
            -v ct="$ct" -v st="$st" -v tool="$tool" -v bps="${R_BPS:-0}" \
            -v busy=$((busy1 - busy0)) -v hz="$CLK_TCK" -v acct="${ACCT_SRV:+1}" \
            -v ar=$((as1 - as0)) -v as=$((ac1 - ac0)) -v local_only="$local_only" 'BEGIN {
            split(ct, c, " "); split(st, s, " ")
            wall = t1 - t0
            cpu = c[2] + c[3] + s[2] + s[3]
            mbps = (tool == "ref") ? bps / 8e6 : (wall > 0 ? bytes / wall / 1e6 : 0)
            fps = (kind == "tree" && wall > 0) ? files / wall : 0
            # one process only (dd): it ran in the sending group
            if (local_only) { ar = as; as = 0 }
            rg = acct ? sprintf("%.3f", ar / 1e9 / (bytes / 1e9)) : "-"
            sg = acct ? sprintf("%.3f", as / 1e9 / (bytes / 1e9)) : "-"
            printf "%.3f %.3f %.1f %.3f %.1f %.1f %.2f %.3f %s %s\n", wall, mbps, fps,
                cpu / (bytes / 1e9), s[4] / 1024, c[4] / 1024, cpu,
                busy / hz / (bytes / 1e9), rg, sg
        }')
    # linerate's own rate of the transfer phase (its end event), connected
    # to done: the start-up (ssh's login, for lrssh) left out
    R_XFER=-
    case $tool in
    lr | lrssh | lrvia | lrnone | lrchacha | lraes | lrold)
        R_XFER=$(sed -n 's/.*"event":"end".*"bytes_per_second":\([0-9.e+-]*\).*/\1/p' "$clog" |
            awk 'NR == 1 { printf "%.3f\n", $1 / 1e6 }')
        [ -n "$R_XFER" ] || R_XFER=-
        ;;
    esac
    log "$tag: $R_WALL s, $R_MBPS MB/s$([ "$kind" = tree ] && echo ", $R_FPS files/s"), wire $R_WIRE MB, CPU ${R_CPU}s" \
        "($R_CPUGB s/GB, machine $R_MCPUGB s/GB, recv end $R_RCPUGB s/GB, send end $R_SCPUGB s/GB; send $ct | recv $st)"
    return 0
}

# ---------------------------------------------------------------- results

declare -A RES    # "group|tool|metric" -> values, one per successful repeat
declare -A RAN    # "group|tool" -> 1 when the cell was attempted
declare -A NOTE   # "group" -> extra header text
FAILED=0
SKIPPED=()
DONE_GROUPS=()

add_res() {
    RES[$1]="${RES[$1]:-} $2"
}

median() {
    local fmt=$1 vals=${RES[$2]:-}
    [ -n "${vals// /}" ] || { echo FAILED; return; }
    # shellcheck disable=SC2086  # split the list on purpose
    printf '%s\n' $vals | sort -g | awk -v fmt="$fmt" '
        { v[NR] = $1 }
        END {
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf fmt "\n", m
        }'
}

ratio() {
    case "$1$2" in
    *FAILED* | *-*) echo "-" ;;
    *) awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f\n", a / b; else print "-" }' ;;
    esac
}

tools_for() {
    local kind=$1 sync=${2:-} x
    local -a t=() u=()
    if [ -n "$LINKS" ]; then
        # the tools that keep hard links
        [ "$opt_peers_only" = 0 ] && t+=(lr)
        [ "$opt_peers_only" = 0 ] && [ -n "$opt_against" ] && t+=(lrold)
        t+=(rsync tarnc)
        for x in "${t[@]}"; do
            [ -z "$opt_tools" ] || [ -n "${TOOL_OK[$x]:-}" ] && u+=("$x")
        done
        echo "${u[@]}"
        return
    fi
    if [ -n "$sync" ]; then
        # linerate against rsync, and a full copy for scale
        [ "$opt_peers_only" = 0 ] && t+=(lr)
        [ "$opt_peers_only" = 0 ] && [ -n "$opt_against" ] && t+=(lrold)
        t+=(rsync)
        if [ "$kind" = tree ]; then t+=(tarnc); else t+=(nc); fi
        for x in "${t[@]}"; do
            [ -z "$opt_tools" ] || [ -n "${TOOL_OK[$x]:-}" ] && u+=("$x")
        done
        echo "${u[@]}"
        return
    fi
    [ "$opt_peers_only" = 0 ] && t+=(lr lrssh lrvia)
    [ "$opt_peers_only" = 0 ] && [ -n "$opt_against" ] && t+=(lrold)
    [ "$opt_peers_only" = 0 ] && t+=(lrchacha lraes lrnone)
    [ "$kind" = file ] && t+=(nc)
    t+=(tarnc scp rsync)
    [ "$opt_peers_only" = 0 ] && [ "$kind" = file ] && t+=(ref)
    [ -n "$opt_dest_disk" ] && [ "$kind" = file ] && t+=(dd)
    for x in "${t[@]}"; do
        [ -z "$opt_tools" ] || [ -n "${TOOL_OK[$x]:-}" ] && u+=("$x")
    done
    echo "${u[@]}"
}

ROW_INDEX=0
SYNC=
LINKS=
run_group() {
    local group=$1 kind=$2 r i off tool
    local -a tools
    read -r -a tools <<<"$(tools_for "$kind" "$SYNC")"
    local n=${#tools[@]}
    for ((r = 0; r < opt_warmup; r++)); do
        for tool in "${tools[@]}"; do
            R_BPS=
            run_one "$tool" "$kind" "$group-$tool-warmup$((r + 1))" || true
        done
    done
    for ((r = 0; r < opt_repeat; r++)); do
        off=$(((ROW_INDEX + r) % n))
        for ((i = 0; i < n; i++)); do
            tool=${tools[(off + i) % n]}
            RAN[$group|$tool]=1
            R_BPS=
            if run_one "$tool" "$kind" "$group-$tool-$((r + 1))"; then
                add_res "$group|$tool|wall" "$R_WALL"
                add_res "$group|$tool|mbps" "$R_MBPS"
                add_res "$group|$tool|fps" "$R_FPS"
                add_res "$group|$tool|wire" "$R_WIRE"
                add_res "$group|$tool|cpugb" "$R_CPUGB"
                add_res "$group|$tool|mcpugb" "$R_MCPUGB"
                if [ "$R_RCPUGB" != - ]; then
                    add_res "$group|$tool|rcpugb" "$R_RCPUGB"
                    add_res "$group|$tool|scpugb" "$R_SCPUGB"
                    add_res "$group|$tool|bcpugb" "$(awk -v a="$R_RCPUGB" -v b="$R_SCPUGB" 'BEGIN { printf "%.3f\n", (a > b ? a : b) }')"
                fi
                add_res "$group|$tool|rssr" "$R_RSS_RECV"
                add_res "$group|$tool|rsss" "$R_RSS_SEND"
                [ "$R_XFER" = - ] || add_res "$group|$tool|xfer" "$R_XFER"
            else
                FAILED=1
            fi
        done
    done
    ROW_INDEX=$((ROW_INDEX + 1))
}

CG_SRV=
CG_CLI=
CG_WHY=
setup_cgroups() {
    local d fstype
    CG_WHY=
    if [ ! -d "$CGROOT" ]; then
        CG_WHY="cgroup v1 cpu controller not mounted ($CGROOT missing)"
        return 1
    fi
    fstype=$(stat -f -c %T "$CGROOT/" 2>/dev/null) || fstype=
    if [ "$fstype" != cgroupfs ] || [ ! -f "$CGROOT/cpu.cfs_quota_us" ]; then
        CG_WHY="$CGROOT is not a cgroup v1 hierarchy with the cpu controller"
        return 1
    fi
    CG_SRV=$CGROOT/lr-xfer-$$-recv
    CG_CLI=$CGROOT/lr-xfer-$$-send
    for d in "$CG_SRV" "$CG_CLI"; do
        if [ -e "$d" ]; then
            CG_WHY="$d already exists (stale? remove it with: rmdir $d)"
        elif ! mkdir "$d" 2>/dev/null; then
            CG_WHY="cannot create $d"
        else
            CGROUPS+=("$d")
            if ! echo "$CG_PERIOD" >"$d/cpu.cfs_period_us" 2>/dev/null ||
                ! echo "$CG_QUOTA" >"$d/cpu.cfs_quota_us" 2>/dev/null ||
                [ "$(cat "$d/cpu.cfs_quota_us")" != "$CG_QUOTA" ]; then
                CG_WHY="cannot set the quota $CG_QUOTA/$CG_PERIOD in $d"
            fi
        fi
        if [ -n "$CG_WHY" ]; then
            remove_cgroups
            return 1
        fi
    done
    return 0
}

cg_stat() {
    awk '$1 == "nr_periods" { p = $2 } $1 == "nr_throttled" { n = $2 }
         $1 == "throttled_time" { t = $2 }
         END { printf "%d %d %d\n", p, n, t }' "$1/cpu.stat" 2>/dev/null || echo "0 0 0"
}

if ! why=$(testhosts_require_root 2>&1); then
    why=${why//$'\n'/; }
    log "skipping every group: ${why//testhosts: /}"
    SKIPPED+=("every group: ${why//testhosts: /}")
    WANT=()
fi

for group in "${GROUPS_ALL[@]}"; do
    [ -n "${WANT[$group]:-}" ] || continue
    rate=''
    kind='file'
    case $group in shaped | *-1g) rate=1gbit ;; esac
    kind=$(group_kind "$group")
    SYNC=$(group_sync "$group")
    LINKS=
    [ "$group" = links ] && LINKS=1
    qs= qc=
    if [ "$group" = quota ]; then
        if ! setup_cgroups; then
            log "skipping the quota group: $CG_WHY"
            SKIPPED+=("quota: $CG_WHY")
            continue
        fi
        qs=$CG_SRV qc=$CG_CLI
    fi
    mapfile -t WRAP_SERVER < <(wrap_for "$qs" "$ACCT_SRV")
    mapfile -t WRAP_CLIENT < <(wrap_for "$qc" "$ACCT_CLI")
    log "group $group: namespaces, veth${rate:+, tbf $rate}$([ "$group" = quota ] &&
        echo ", each end in a cgroup with cpu.cfs_quota_us $CG_QUOTA / cpu.cfs_period_us $CG_PERIOD")"
    # Not in $(...): the namespaces must be owned by this shell for the trap.
    if ! testhosts_up $rate 2>"$WORK/testhosts.err"; then
        why=$(cat "$WORK/testhosts.err")
        printf '%s\n' "$why" >&2
        why=${why//$'\n'/; }
        SKIPPED+=("$group: testhosts_up failed: ${why//testhosts: /}")
        FAILED=1
        remove_cgroups
        continue
    fi
    NS_CLIENT=(ip netns exec "$TH_A") NS_SERVER=(ip netns exec "$TH_B")
    if [ "$group" = quota ]; then
        read -r sp0 sn0 st0 < <(cg_stat "$CG_SRV")
        read -r cp0 cn0 ct0 < <(cg_stat "$CG_CLI")
    fi
    run_group "$group" "$kind"
    if [ "$group" = quota ]; then
        read -r sp1 sn1 st1 < <(cg_stat "$CG_SRV")
        read -r cp1 cn1 ct1 < <(cg_stat "$CG_CLI")
        NOTE[quota]=$(printf 'receiving cgroup throttled in %d of %d periods (%.1f s), sending cgroup in %d of %d (%.1f s)' \
            $((sn1 - sn0)) $((sp1 - sp0)) "$(awk -v t=$((st1 - st0)) 'BEGIN { print t / 1e9 }')" \
            $((cn1 - cn0)) $((cp1 - cp0)) "$(awk -v t=$((ct1 - ct0)) 'BEGIN { print t / 1e9 }')")
        log "quota: ${NOTE[quota]}"
    fi
    testhosts_down
    [ "$group" = quota ] && remove_cgroups
    DONE_GROUPS+=("$group")
done

# ---------------------------------------------------------------- report

group_label() {
    case $1 in
    unshaped) echo "file, veth unshaped" ;;
    shaped) echo "file, veth tbf 1 Gbit/s" ;;
    quota) echo "file, each end 20% of a core" ;;
    tree) echo "tree, veth unshaped" ;;
    resync) echo "tree again, unchanged (veth unshaped)" ;;
    resync1) echo "tree again, 1% of the files changed" ;;
    links) echo "tree, 20% of the names hard links, veth unshaped" ;;
    delta) echo "file again, ten 1 MiB blocks changed, 1 MiB appended" ;;
    insert) echo "file again, 1 MiB inserted in the middle" ;;
    delta-1g) echo "file again, ten 1 MiB blocks changed, 1 MiB appended, tbf 1 Gbit/s" ;;
    insert-1g) echo "file again, 1 MiB inserted in the middle, tbf 1 Gbit/s" ;;
    tree-1g) echo "tree, veth tbf 1 Gbit/s" ;;
    resync-1g) echo "tree again, unchanged, tbf 1 Gbit/s" ;;
    resync1-1g) echo "tree again, 1% of the files changed, tbf 1 Gbit/s" ;;
    esac
}

tool_label() {
    case $1 in
    lr) echo "linerate send${3:+ --update}$([ "$4" = links ] && echo ' -H')" ;;
    lrssh) echo "linerate send USER@HOST: (far end over ssh)" ;;
    lrvia) echo "linerate send --via-ssh USER@HOST: (the data through ssh)" ;;
    lrold) echo "linerate send ($opt_against_desc)" ;;
    lrnone) echo "linerate send --cipher none" ;;
    lrchacha) echo "linerate send --cipher chacha20-poly1305" ;;
    lraes) echo "linerate send --cipher aes-256-gcm" ;;
    nc) echo "nc" ;;
    tarnc) echo "tar \\| nc" ;;
    scp) echo "scp$([ "$2" = tree ] && echo ' -r')" ;;
    rsync) echo "rsync -a$([ "$4" = links ] && echo H) -e ssh" ;;
    ref) echo "(reference) linerate bench, memory to memory" ;;
    dd) echo "(reference) dd onto the destination disk, conv=fsync, no network" ;;
    esac
}

report() {
    local cpu lr_ver k g tool kind wire wall mbps xfer fps cpugb mcpugb rcpugb scpugb rssr rsss lr_mbps lr_cpugb lr_mcpugb lr_bcpugb rl rc rm rb
    cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
    lr_ver=$("$LINERATE_BIN" version 2>&1 | head -n 1) || true
    if command -v git >/dev/null 2>&1 &&
        k=$(git -C "$TOP" describe --always --dirty 2>/dev/null); then
        lr_ver="$lr_ver (git $k)"
    fi

    echo "# linerate send against nc, tar | nc, scp and rsync: host A to host B"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- kernel: $(uname -srm)"
    echo "- CPU: ${cpu:-unknown}; nproc: $(nproc)"
    echo "- linerate: $lr_ver"
    [ -n "$opt_against" ] && echo "- against: $opt_against_desc: $opt_against_ver"
    echo "- peers: $(ssh -V 2>&1 | head -n 1); $(rsync --version 2>&1 | head -n 1 | sed 's/  */ /g'); netcat-openbsd; $(tar --version 2>&1 | head -n 1)"
    echo "- command: \`$CMDLINE\`"
    k=
    [ "$want_file" = 1 ] && k="a $opt_size random file ($SIZE_BYTES bytes, \`linerate gen\`)"
    [ -n "${WANT[delta]:-}${WANT[delta-1g]:-}" ] && k="${k:+$k; }delta: the file's destination copy made with cp, then ten 1 MiB blocks at offsets (i + 1) * SIZE / 12 + 4097 * i overwritten from /dev/urandom and the last 1 MiB cut off, mtime set one day back"
    [ -n "${WANT[insert]:-}${WANT[insert-1g]:-}" ] && k="${k:+$k; }insert: the destination copy is the file without the 1 MiB at SIZE / 2, mtime one day back"
    [ -n "${WANT[resync1]:-}${WANT[resync1-1g]:-}" ] && k="${k:+$k; }resync1: every 100th file of the destination copy (cp -a) rewritten with other bytes of the same size, mtime one day back"
    [ "$want_tree" = 1 ] && k="${k:+$k; }a tree of $opt_files files of $TREE_FILE bytes in directories of $TREE_PER_DIR"
    [ -n "${WANT[links]:-}" ] && k="${k:+$k; }the links tree: $opt_files names of $TREE_FILE bytes in directories of $TREE_PER_DIR, the last $LINKS_PER_DIR names of each a hard link to one of the first $LINKS_PER_DIR of the directory before (MB/s counts each file's bytes once)"
    echo "- data: $k; source page-cached; destination: $DEST_DESC; every run verified (cmp / diff -r)"
    echo "- runs per cell: $opt_repeat$([ "$opt_repeat" -gt 1 ] && echo ' (median)'); order rotates per group and repeat$([ "$opt_warmup" -gt 0 ] && echo "; $opt_warmup uncounted warm-up run(s) of each row first")"
    echo "- prefault: $([ "$opt_prefault" = 1 ] && echo "the free memory written once before the runs" || echo "off (--no-prefault)")"
    echo "- wall s: client start to both ends finished; MB/s: payload bytes / wall / 1e6;" \
        "CPU s/GB: user+sys of both ends (/usr/bin/time) per 1e9 payload bytes;" \
        "machine CPU s/GB: the machine's busy time (/proc/stat, softirq included) across the run;" \
        "recv/send end CPU s/GB: CPU time of each end's processes and their children (sshd's sessions too; cgroup cpuacct), per 1e9 payload bytes; the busier end's figure is what decides the rate of two real machines at their CPU limit;" \
        "RSS: peak of the largest process of each end; ratios: linerate send ÷ this row, same group"
    echo "- ssh: OpenSSH defaults (scp uses SFTP), sshd started in host B for each run, key auth"
    [ "$opt_peers_only" = 0 ] && echo "- reference: \`linerate bench -t $opt_time\` memory to memory (MB/s from end.sum_received.bits_per_second)"
    [ -n "${NOTE[quota]:-}" ] && echo "- quota: ${NOTE[quota]}"
    for k in ${SKIPPED[@]+"${SKIPPED[@]}"}; do
        echo "- skipped $k"
    done
    echo
    echo "- transfer MB/s: linerate's own rate of the transfer phase (bytes_per_second of its --json end event: connected to done, the start-up left out)"
    echo
    echo "| group | tool | wall s | MB/s | transfer MB/s | files/s | wire MB | CPU s/GB | machine CPU s/GB | recv end CPU s/GB | send end CPU s/GB | recv RSS MiB | send RSS MiB | MB/s: linerate ÷ this | CPU/GB: linerate ÷ this | machine CPU/GB: linerate ÷ this | busier end's CPU/GB: linerate ÷ this |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for g in ${DONE_GROUPS[@]+"${DONE_GROUPS[@]}"}; do
        kind=$(group_kind "$g")
        lr_mbps=- lr_cpugb=- lr_mcpugb=- lr_bcpugb=-
        if [ -n "${RAN[$g|lr]:-}" ]; then
            lr_mbps=$(median '%.3f' "$g|lr|mbps")
            lr_cpugb=$(median '%.3f' "$g|lr|cpugb")
            lr_mcpugb=$(median '%.3f' "$g|lr|mcpugb")
            [ -n "${RES[$g|lr|bcpugb]:-}" ] && lr_bcpugb=$(median '%.3f' "$g|lr|bcpugb")
        fi
        for tool in $(tools_for "$kind" "$(group_sync "$g")"); do
            [ -n "${RAN[$g|$tool]:-}" ] || continue
            wall=$(median '%.2f' "$g|$tool|wall")
            mbps=$(median '%.1f' "$g|$tool|mbps")
            xfer=-
            [ -n "${RES[$g|$tool|xfer]:-}" ] && xfer=$(median '%.1f' "$g|$tool|xfer")
            fps=-
            [ "$kind" = tree ] && fps=$(median '%.0f' "$g|$tool|fps")
            cpugb=$(median '%.3f' "$g|$tool|cpugb")
            mcpugb=$(median '%.3f' "$g|$tool|mcpugb")
            rcpugb=- scpugb=-
            if [ -n "${RES[$g|$tool|rcpugb]:-}" ]; then
                rcpugb=$(median '%.3f' "$g|$tool|rcpugb")
                scpugb=$(median '%.3f' "$g|$tool|scpugb")
            fi
            wire=$(median '%.2f' "$g|$tool|wire")
            rssr=$(median '%.1f' "$g|$tool|rssr")
            rsss=$(median '%.1f' "$g|$tool|rsss")
            [ "$tool" = ref ] && wall="($wall)"
            if [ "$tool" = lr ] || [ "$tool" = ref ]; then
                rl=- rc=- rm=- rb=-
            else
                rl=$(ratio "$lr_mbps" "$(median '%.3f' "$g|$tool|mbps")")
                rc=$(ratio "$lr_cpugb" "$(median '%.3f' "$g|$tool|cpugb")")
                rm=$(ratio "$lr_mcpugb" "$(median '%.3f' "$g|$tool|mcpugb")")
                rb=-
                [ -n "${RES[$g|$tool|bcpugb]:-}" ] &&
                    rb=$(ratio "$lr_bcpugb" "$(median '%.3f' "$g|$tool|bcpugb")")
            fi
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
                "$(group_label "$g")" "$(tool_label "$tool" "$kind" "$(group_sync "$g")" "$g")" "$wall" "$mbps" "$xfer" "$fps" "$wire" \
                "$cpugb" "$mcpugb" "$rcpugb" "$scpugb" "$rssr" "$rsss" "$rl" "$rc" "$rm" "$rb"
        done
    done
}

if [ -n "$opt_out" ]; then
    report | tee "$opt_out"
else
    report
fi
exit "$FAILED"
