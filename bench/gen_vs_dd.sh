#!/bin/sh
# SPDX-License-Identifier: MIT
# `linerate gen` against `dd if=/dev/urandom` (and `openssl rand` when
# installed), in one run on one machine: 1 GiB into a new file on tmpfs,
# and 1 GiB into /dev/null (the generator alone, without the file system).
# Prints MB/s (10^6 bytes) and gen's ratio to dd. Not part of any test.
#
#   LINERATE_BIN=build/linerate bench/gen_vs_dd.sh [DIR]
set -eu

BIN=${LINERATE_BIN:-build/linerate}
DIR=${1:-/dev/shm}
F="$DIR/linerate-gen-bench.$$"
SIZE=1073741824
trap 'rm -f "$F"' EXIT INT TERM

[ -x "$BIN" ] || { echo "no linerate binary at $BIN" >&2; exit 1; }

now() { date +%s%N; }

# time_cmd NAME CMD...: run CMD, print NAME's MB/s and set $mbs
time_cmd() {
	name=$1
	shift
	rm -f "$F"
	t0=$(now)
	"$@" >/dev/null 2>&1
	t1=$(now)
	rm -f "$F"
	mbs=$(awk -v b=$SIZE -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", b / (ns / 1e9) / 1e6 }')
	printf '  %-40s %8s MB/s\n' "$name" "$mbs"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }

echo "1 GiB into a new file in $DIR:"
time_cmd "dd if=/dev/zero (file system ceiling)" \
	dd if=/dev/zero of="$F" bs=1M count=1024
time_cmd "dd if=/dev/urandom" dd if=/dev/urandom of="$F" bs=1M count=1024
dd_file=$mbs
time_cmd "linerate gen" "$BIN" gen -q "$F" 1G
gen_file=$mbs
if command -v openssl >/dev/null 2>&1; then
	time_cmd "openssl rand" openssl rand -out "$F" $SIZE
fi

echo "1 GiB into /dev/null (generator only):"
time_cmd "dd if=/dev/urandom" dd if=/dev/urandom of=/dev/null bs=1M count=1024
dd_null=$mbs
time_cmd "linerate gen -" sh -c "'$BIN' gen -q - 1G >/dev/null"
gen_null=$mbs
if command -v openssl >/dev/null 2>&1; then
	time_cmd "openssl rand" openssl rand -out /dev/null $SIZE
fi

echo "ratio gen/dd: file $(ratio "$gen_file" "$dd_file"), generator $(ratio "$gen_null" "$dd_null")"
