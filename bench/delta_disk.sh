#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# delta_disk.sh - the delta of a changed file where reading the disks is
# what costs (an SD card, a USB disk): linerate send --update against
# rsync (its daemon, no ssh in the way), and optionally an earlier
# linerate build, in one run. Both copies sit on one image on a loop
# device (ext4, or with --fs a file system that shares extents, where
# linerate clones the chunks it holds instead of writing them); the
# sending end and the receiving end each run in a cgroup v1
# blkio group that may read that device at RATE bytes/s, and the page
# cache is dropped before each run, so each end reads its copy from the
# "disk". The destination copy is the source with ten 1 MiB blocks
# overwritten at unaligned offsets and its last 1 MiB cut off, a day
# older (bench_transfer.sh's delta group). Traffic: loopback only.
# Prints the median wall time of each tool, the ratios, and the MB each
# run wrote to the device (the loop device's own count, with the sync
# after the run). Needs root.
#
# usage: bench/delta_disk.sh [--size SIZE_MIB] [--rate MB_PER_S]
#                            [--repeat N] [--against BIN]
#                            [--fs ext4|btrfs|xfs]
#
#   --size MIB    the file (default 256)
#   --rate MB/s   each end's read rate, 10^6 bytes/s (default 50)
#   --repeat N    alternated runs of each tool, medians (default 5)
#   --against BIN another linerate build, run in the same rotation
#   --fs FS       the image's file system (default ext4; btrfs and xfs
#                 share extents: packages btrfs-progs, xfsprogs)
#
# Exit status: 0 done, 1 some run failed or its copy differed, 2 usage
set -euo pipefail

BIN=${LINERATE_BIN:-build/linerate}
size_mib=256 rate_mbs=50 repeat=5 against= fs=ext4
while [ $# -gt 0 ]; do
    case $1 in
    --size) size_mib=$2; shift 2 ;;
    --rate) rate_mbs=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --against) against=$2; shift 2 ;;
    --fs) fs=$2; shift 2 ;;
    -h | --help) sed -n '/^# usage:/,/^# Exit/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "delta_disk: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[[ $size_mib =~ ^[0-9]+$ && $size_mib -ge 32 && $size_mib -le 4096 ]] ||
    { echo "delta_disk: --size: 32 to 4096 (MiB)" >&2; exit 2; }
[[ $rate_mbs =~ ^[0-9]+$ && $rate_mbs -ge 1 ]] ||
    { echo "delta_disk: --rate: a whole number of MB/s" >&2; exit 2; }
[[ $repeat =~ ^[0-9]+$ && $repeat -ge 1 && $repeat -le 50 ]] ||
    { echo "delta_disk: --repeat: 1 to 50" >&2; exit 2; }
case $fs in ext4 | btrfs | xfs) ;; *) echo "delta_disk: --fs: ext4, btrfs or xfs" >&2; exit 2 ;; esac
command -v "mkfs.$fs" >/dev/null || { echo "delta_disk: mkfs.$fs not installed" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "delta_disk: needs root (loop device, cgroups)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "delta_disk: no linerate binary at $BIN" >&2; exit 2; }
[ -z "$against" ] || [ -x "$against" ] || { echo "delta_disk: no binary at $against" >&2; exit 2; }
command -v rsync >/dev/null || { echo "delta_disk: rsync not installed" >&2; exit 2; }
CG=/sys/fs/cgroup/blkio
[ -w "$CG" ] || { echo "delta_disk: no cgroup v1 blkio hierarchy at $CG" >&2; exit 2; }
BIN=$(realpath "$BIN")
[ -z "$against" ] || against=$(realpath "$against")

W=$(mktemp -d "${TMPDIR:-/tmp}/delta_disk.XXXXXX")
M=$W/mnt
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    mountpoint -q "$M" && { umount "$M" || { sleep 1; umount -l "$M"; }; }
    rmdir "$CG/ldd_send_$$" "$CG/ldd_recv_$$" 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# the image, its files, the two groups
truncate -s $(((size_mib * 5 + 512) * 1048576)) "$W/img"
case $fs in
ext4) mkfs.ext4 -q -F "$W/img" ;;
btrfs) mkfs.btrfs -q -f "$W/img" >/dev/null ;;
xfs) mkfs.xfs -q -f "$W/img" ;;
esac
mkdir "$M"
mount -o loop "$W/img" "$M"
loopdev=$(basename "$(findmnt -n -o SOURCE "$M")")
dev=$(cat "/sys/block/$loopdev/dev")
# sectors (512 bytes) written to the image's device so far
written() { awk '{ print $7 }' "/sys/block/$loopdev/stat"; }
mkdir "$M/src" "$M/dst" "$M/old"
head -c $((size_mib * 1048576)) /dev/urandom >"$M/src/big"
cp "$M/src/big" "$M/old/big"
size=$((size_mib * 1048576))
for ((i = 0; i < 10; i++)); do
    head -c 1048576 /dev/urandom |
        dd of="$M/old/big" bs=1M seek=$(((i + 1) * size / 12 + 4097 * i)) \
            oflag=seek_bytes conv=notrunc status=none
done
truncate -s $((size - 1048576)) "$M/old/big"
touch -d '-1 day' "$M/old/big"
for g in send recv; do
    mkdir "$CG/ldd_${g}_$$"
    echo "$dev $((rate_mbs * 1000000))" >"$CG/ldd_${g}_$$/blkio.throttle.read_bps_device"
done
in_group() { # in_group send|recv CMD...: CMD in that group
    local g=$1
    shift
    sh -c 'echo $$ >"$0"; exec "$@"' "$CG/ldd_${g}_$$/cgroup.procs" "$@"
}
bg_in_group() { # the same in the background, its pid in PIDS
    local g=$1
    shift
    (exec sh -c 'echo $$ >"$0"; exec "$@"' "$CG/ldd_${g}_$$/cgroup.procs" "$@") &
    PIDS+=($!)
}

# the receiving ends, each on its own port
"$BIN" token >"$W/tok" 2>/dev/null
bg_in_group recv env -u LINERATE_TOKEN "$BIN" serve --token-file "$W/tok" -B 127.0.0.1 \
    -p 7431 --root "$M/dst" >"$W/serve1.log" 2>&1
if [ -n "$against" ]; then
    bg_in_group recv env -u LINERATE_TOKEN "$against" serve --token-file "$W/tok" -B 127.0.0.1 \
        -p 7432 --root "$M/dst" >"$W/serve2.log" 2>&1
fi
printf 'use chroot = no\nuid = root\ngid = root\n[m]\npath = %s\nread only = no\n' \
    "$M/dst" >"$W/rsyncd.conf"
bg_in_group recv rsync --daemon --no-detach --address 127.0.0.1 --port 7433 \
    --config "$W/rsyncd.conf" >"$W/rsyncd.log" 2>&1
sleep 1

# one_run TOOL: seconds of one delta and the MB it wrote to the device,
# the copy compared after
one_run() {
    local t0 t1 w0
    rm -f "$M/dst/big" "$M/dst/.big."*
    cp -p "$M/old/big" "$M/dst/big"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    w0=$(written)
    t0=$(date +%s%N)
    case $1 in
    lr) in_group send timeout 600 "$BIN" send -q --token-file "$W/tok" -p 7431 --update "$M/src/big" 127.0.0.1: ;;
    lrold) in_group send timeout 600 "$against" send -q --token-file "$W/tok" -p 7432 --update "$M/src/big" 127.0.0.1: ;;
    rsync) in_group send timeout 600 rsync -a "$M/src/big" rsync://127.0.0.1:7433/m/ ;;
    esac
    t1=$(date +%s%N)
    sync
    cmp -s "$M/src/big" "$M/dst/big" || { echo "delta_disk: $1: the copy differs" >&2; return 1; }
    awk -v ns=$((t1 - t0)) -v w=$(($(written) - w0)) \
        'BEGIN { printf "%.2f %.1f\n", ns / 1e9, w * 512 / 1e6 }'
}

tools=(lr)
[ -n "$against" ] && tools+=(lrold)
tools+=(rsync)
declare -A runs wrote
for ((r = 0; r < repeat; r++)); do
    for t in "${tools[@]}"; do
        out=$(one_run "$t") || exit 1
        s=${out% *}
        echo "delta_disk: $t run $((r + 1)): $s s, ${out#* } MB written" >&2
        runs[$t]+="$s "
        wrote[$t]+="${out#* } "
    done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "# delta of a ${size_mib} MiB file (ten 1 MiB blocks changed, 1 MiB appended) on $fs, each end reading its disk at ${rate_mbs} MB/s; medians of $repeat alternated runs"
echo "| tool | wall s | MB written | linerate ÷ this (time) |"
echo "| --- | ---: | ---: | ---: |"
lr_med=$(echo "${runs[lr]}" | median)
for t in "${tools[@]}"; do
    m=$(echo "${runs[$t]}" | median)
    w=$(echo "${wrote[$t]}" | median)
    case $t in
    lr) name="linerate send --update" ;;
    lrold) name="linerate send --update (the --against build)" ;;
    rsync) name="rsync -a (daemon)" ;;
    esac
    if [ "$t" = lr ]; then ratio=-; else ratio=$(awk -v a="$m" -v b="$lr_med" 'BEGIN { printf "%.2fx faster", a / b }'); fi
    echo "| $name | $m | $w | $ratio |"
done
