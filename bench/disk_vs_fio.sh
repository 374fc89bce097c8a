#!/bin/sh
# SPDX-License-Identifier: MIT
# `linerate disk` against fio and dd with the same settings, side by side on
# one machine: sequential write then read of SIZE bytes in BS blocks, one
# synchronous call at a time, O_DIRECT, the write timed up to and including
# fdatasync. ROUNDS rounds; the order of the three tools rotates from round
# to round (whoever goes first meets a colder cache); medians printed, in
# MB/s (10^6 bytes), with linerate's ratio to each peer. fio is shown twice:
# its own bandwidth figure, and its wall time around the job (which holds
# the end fsync for certain, plus fio's start-up).
#
# Then "read, same file": in each round fio lays out one file (its write
# job, untimed here) and the three tools read that very file, O_DIRECT, in
# an order that rotates too: `linerate disk FILE` (read only), fio's read
# job and dd iflag=direct. Extra rows give those medians and linerate's
# ratios. Not part of any test; apt install fio first.
#
#   LINERATE_BIN=build/linerate bench/disk_vs_fio.sh [DIR] [SIZE_MiB] [BS_KiB] [ROUNDS]
set -eu

BIN=${LINERATE_BIN:-build/linerate}
DIR=${1:-.}
MIB=${2:-256}
BSK=${3:-1024}
ROUNDS=${4:-3}
F="$DIR/linerate-disk-bench.$$"
SIZE=$((MIB * 1048576))
OUT=$(mktemp)
trap 'rm -f "$F" "$OUT"' EXIT INT TERM

[ -x "$BIN" ] || { echo "no linerate binary at $BIN" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio not installed" >&2; exit 1; }
case $ROUNDS in '' | *[!0-9]*) echo "ROUNDS: a number" >&2; exit 2 ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || { echo "ROUNDS: 1-20" >&2; exit 2; }

now() { date +%s%N; }
mbs_of() { awk -v b=$SIZE -v ns="$1" 'BEGIN { printf "%.0f", b / (ns / 1e9) / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
median() { grep "^$1 " "$OUT" | awk '{ print $2 }' | sort -n |
	awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run_linerate() {
	json=$("$BIN" disk "$DIR" --size "${MIB}M" --bs "${BSK}K" --json)
	printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("lr_w %.0f" % (d["write"]["bytes_per_second"] / 1e6)); print("lr_r %.0f" % (d["read"]["bytes_per_second"] / 1e6))' >>"$OUT"
	LR_MODE=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["write"]["mode"], "/", d["read"]["mode"], "on", d["device"]["kind"])')
}

# fio: psync engine, direct=1, the write job ends with fsync;
# fio_job RW TAG records "fio_TAG" (fio's bw) and "fiowall_TAG"
fio_job() {
	t0=$(now)
	bw=$(fio --name=lr --filename="$F" --rw="$1" --bs="${BSK}k" \
		--size="${MIB}m" --ioengine=psync --direct=1 --iodepth=1 \
		--end_fsync=1 --output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; k=sys.argv[1]; print("%.0f" % (j[k]["bw_bytes"] / 1e6))' "$1")
	t1=$(now)
	echo "fio_$2 $bw" >>"$OUT"
	echo "fiowall_$2 $(mbs_of $((t1 - t0)))" >>"$OUT"
}

run_fio() {
	rm -f "$F"
	fio_job write w
	fio_job read r
	rm -f "$F"
}

# dd_read TAG: read all of $F with iflag=direct, record "TAG MB/s"
dd_read() {
	t0=$(now)
	dd if="$F" of=/dev/null bs="${BSK}K" iflag=direct 2>/dev/null
	t1=$(now)
	echo "$1 $(mbs_of $((t1 - t0)))" >>"$OUT"
}

# dd: oflag=direct + conv=fdatasync, then iflag=direct
run_dd() {
	t0=$(now)
	dd if=/dev/zero of="$F" bs="${BSK}K" count=$((MIB * 1024 / BSK)) \
		oflag=direct conv=fdatasync 2>/dev/null
	t1=$(now)
	echo "dd_w $(mbs_of $((t1 - t0)))" >>"$OUT"
	dd_read dd_r
	rm -f "$F"
}

# same file: fio lays it out, then each tool reads it
layout_file() {
	rm -f "$F"
	fio --name=lr --filename="$F" --rw=write --bs="${BSK}k" \
		--size="${MIB}m" --ioengine=psync --direct=1 --iodepth=1 \
		--end_fsync=1 >/dev/null 2>&1
}

sf_linerate() {
	json=$("$BIN" disk "$F" --bs "${BSK}K" --json)
	printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["read"]["bytes"] == int(sys.argv[1]), d; print("sf_lr %.0f" % (d["read"]["bytes_per_second"] / 1e6))' "$SIZE" >>"$OUT"
	SF_MODE=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["read"]["mode"], "on", d["device"]["kind"])')
}

sf_fio() { fio_job read sf; }
sf_dd() { dd_read sf_dd; }

LR_MODE=? SF_MODE=?
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	case $((i % 3)) in
	0) run_linerate; run_fio; run_dd ;;
	1) run_fio; run_dd; run_linerate ;;
	2) run_dd; run_linerate; run_fio ;;
	esac
	layout_file
	case $((i % 3)) in
	0) sf_linerate; sf_fio; sf_dd ;;
	1) sf_fio; sf_dd; sf_linerate ;;
	2) sf_dd; sf_linerate; sf_fio ;;
	esac
	rm -f "$F"
	i=$((i + 1))
done

lr_w=$(median lr_w) lr_r=$(median lr_r)
fio_w=$(median fio_w) fio_r=$(median fio_r)
fw_w=$(median fiowall_w) fw_r=$(median fiowall_r)
dd_w=$(median dd_w) dd_r=$(median dd_r)
echo "$MIB MiB in ${BSK} KiB blocks, O_DIRECT, in $DIR (linerate: $LR_MODE);"
echo "medians of $ROUNDS rounds, order rotated:"
printf '  %-12s %10s %10s\n' "" "write MB/s" "read MB/s"
printf '  %-12s %10s %10s\n' linerate "$lr_w" "$lr_r"
printf '  %-12s %10s %10s\n' "fio (bw)" "$fio_w" "$fio_r"
printf '  %-12s %10s %10s\n' "fio (wall)" "$fw_w" "$fw_r"
printf '  %-12s %10s %10s\n' dd "$dd_w" "$dd_r"
echo "linerate/fio (bw):   write $(ratio "$lr_w" "$fio_w"), read $(ratio "$lr_r" "$fio_r")"
echo "linerate/fio (wall): write $(ratio "$lr_w" "$fw_w"), read $(ratio "$lr_r" "$fw_r")"
echo "linerate/dd:         write $(ratio "$lr_w" "$dd_w"), read $(ratio "$lr_r" "$dd_r")"

sf_lr=$(median sf_lr) sf_fio=$(median fio_sf) sf_fw=$(median fiowall_sf)
sf_dd=$(median sf_dd)
echo "read, same file (laid out by fio each round; linerate: $SF_MODE):"
printf '  %-12s %10s\n' "" "read MB/s"
printf '  %-12s %10s\n' linerate "$sf_lr"
printf '  %-12s %10s\n' "fio (bw)" "$sf_fio"
printf '  %-12s %10s\n' "fio (wall)" "$sf_fw"
printf '  %-12s %10s\n' dd "$sf_dd"
echo "read, same file: linerate/fio (bw) $(ratio "$sf_lr" "$sf_fio"), linerate/fio (wall) $(ratio "$sf_lr" "$sf_fw"), linerate/dd $(ratio "$sf_lr" "$sf_dd")"
