#!/bin/sh
# SPDX-License-Identifier: MIT
# `linerate disk` against fio and dd with the same settings, in one run on
# one machine: sequential write then read of SIZE bytes in BS blocks, one
# synchronous call at a time, O_DIRECT, the write timed up to and including
# fdatasync. Prints MB/s (10^6 bytes) and linerate's ratio to each peer.
# Not part of any test; apt install fio first.
#
#   LINERATE_BIN=build/linerate bench/disk_vs_fio.sh [DIR] [SIZE_MiB] [BS_KiB]
set -eu

BIN=${LINERATE_BIN:-build/linerate}
DIR=${1:-.}
MIB=${2:-256}
BSK=${3:-1024}
F="$DIR/linerate-disk-bench.$$"
SIZE=$((MIB * 1048576))
trap 'rm -f "$F"' EXIT INT TERM

[ -x "$BIN" ] || { echo "no linerate binary at $BIN" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio not installed" >&2; exit 1; }

now() { date +%s%N; }
mbs_of() { awk -v b=$SIZE -v ns="$1" 'BEGIN { printf "%.0f", b / (ns / 1e9) / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# linerate: its JSON carries both phases
json=$("$BIN" disk "$DIR" --size "${MIB}M" --bs "${BSK}K" --json)
lr_w=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.0f" % (d["write"]["bytes_per_second"] / 1e6))')
lr_r=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.0f" % (d["read"]["bytes_per_second"] / 1e6))')
lr_mode=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["write"]["mode"], "/", d["read"]["mode"], "on", d["device"]["kind"])')

# fio: psync engine, direct=1, write ends with fsync inside the job
# fio_job RW: print fio's MB/s for a job of kind RW (write or read)
fio_job() {
	fio --name=lr --filename="$F" --rw="$1" --bs="${BSK}k" \
		--size="${MIB}m" --ioengine=psync --direct=1 --iodepth=1 \
		--end_fsync=1 --output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; k=sys.argv[1]; print("%.0f" % (j[k]["bw_bytes"] / 1e6))' "$1"
}
rm -f "$F"
fio_w=$(fio_job write)
fio_r=$(fio_job read)
rm -f "$F"

# dd: oflag=direct + conv=fdatasync, then iflag=direct
t0=$(now)
dd if=/dev/zero of="$F" bs="${BSK}K" count=$((MIB * 1024 / BSK)) \
	oflag=direct conv=fdatasync 2>/dev/null
t1=$(now)
dd_w=$(mbs_of $((t1 - t0)))
t0=$(now)
dd if="$F" of=/dev/null bs="${BSK}K" iflag=direct 2>/dev/null
t1=$(now)
dd_r=$(mbs_of $((t1 - t0)))
rm -f "$F"

echo "$MIB MiB in ${BSK} KiB blocks, O_DIRECT, in $DIR (linerate: $lr_mode):"
printf '  %-10s %10s %10s\n' "" "write MB/s" "read MB/s"
printf '  %-10s %10s %10s\n' linerate "$lr_w" "$lr_r"
printf '  %-10s %10s %10s\n' fio "$fio_w" "$fio_r"
printf '  %-10s %10s %10s\n' dd "$dd_w" "$dd_r"
echo "linerate/fio: write $(ratio "$lr_w" "$fio_w"), read $(ratio "$lr_r" "$fio_r")"
echo "linerate/dd:  write $(ratio "$lr_w" "$dd_w"), read $(ratio "$lr_r" "$dd_r")"
