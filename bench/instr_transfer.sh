#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# instr_transfer.sh - the instructions two linerate builds spend on the same
# push, both ends counted by valgrind's callgrind (Ir): a figure that stays
# put on a machine whose timings swing, for telling whether a change of the
# code costs CPU. Not a speed: valgrind runs the threads one at a time.
#
# usage: bench/instr_transfer.sh [--size SIZE] [--files N] [--repeat N]
#                                OLD_BIN NEW_BIN
#
#   --size SIZE   the file pushed (K, M: 1024-based; default 64M)
#   --files N     the tree pushed: N files of 4 KiB (default 2000)
#   --repeat N    runs of each build per workload, alternated (default 3)
#
# Each run: `linerate serve --once --root DEST` and `linerate send` over
# loopback, both under callgrind, the token from `linerate token`; the
# received copy is compared with the source. Printed: the median Ir of
# each end, per workload and build, and new ÷ old of both ends summed.
# Needs valgrind. Traffic stays on 127.0.0.1.
set -euo pipefail

size=64M files=2000 repeat=3
while [ $# -gt 2 ]; do
	case $1 in
	--size) size=$2; shift 2 ;;
	--files) files=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	-h | --help)
		sed -n '/^# usage:/,/^# Needs valgrind/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*) echo "instr_transfer: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ $# -eq 2 ] || { echo "usage: $0 [options] OLD_BIN NEW_BIN" >&2; exit 2; }
old=$1 new=$2
[[ $repeat =~ ^[1-9][0-9]?$ ]] || { echo "--repeat wants 1-99" >&2; exit 2; }
[[ $files =~ ^[1-9][0-9]{0,5}$ ]] || { echo "--files wants 1-999999" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "instr_transfer: needs valgrind" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/instr_transfer.XXXXXX")
srv_pid=
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/src/tree/d"
"$new" gen "$work/src/file.bin" "$size" 2>/dev/null
"$new" gen "$work/tree.bin" $((files * 4096)) 2>/dev/null
split -b 4096 -a 6 -d "$work/tree.bin" "$work/src/tree/d/f"
rm "$work/tree.bin"
(umask 077 && "$new" token >"$work/token")
port=$((30000 + $$ % 20000))

# ir FILE: the total Ir callgrind wrote.
ir() {
	awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

# one BIN WHAT TAG: a push of WHAT (file or tree); prints "srv_ir cli_ir".
one() {
	local bin=$1 what=$2 tag=$3 i
	local dest=$work/dest-$tag
	mkdir -p "$dest"
	valgrind -q --tool=callgrind --callgrind-out-file="$work/$tag.srv" \
		"$bin" serve --once --no-iperf3 --root "$dest" \
		--token-file "$work/token" -p "$port" -B 127.0.0.1 \
		>"$work/$tag.srv.log" 2>&1 &
	srv_pid=$!
	for ((i = 0; i < 300; i++)); do
		grep -q listening "$work/$tag.srv.log" 2>/dev/null && break
		sleep 0.1
	done
	local src=$work/src/file.bin
	[ "$what" = tree ] && src=$work/src/tree
	valgrind -q --tool=callgrind --callgrind-out-file="$work/$tag.cli" \
		"$bin" send -q --token-file "$work/token" -p "$port" \
		"$src" 127.0.0.1: >"$work/$tag.cli.log" 2>&1 ||
		{ echo "instr_transfer: $tag: send failed" >&2; cat "$work/$tag.cli.log" >&2; exit 1; }
	wait "$srv_pid" || { echo "instr_transfer: $tag: serve failed" >&2; exit 1; }
	srv_pid=
	if [ "$what" = tree ]; then
		diff -r -q "$src" "$dest/tree" >/dev/null
	else
		cmp -s "$src" "$dest/file.bin"
	fi || { echo "instr_transfer: $tag: the copy differs" >&2; exit 1; }
	rm -rf "$dest"
	echo "$(ir "$work/$tag.srv") $(ir "$work/$tag.cli")"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "| workload | build | receiving end Ir | sending end Ir | both | new ÷ old |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for what in file tree; do
	declare -A S=() C=() T=()
	for ((r = 0; r < repeat; r++)); do
		for b in old new; do
			bin=$old
			[ $b = new ] && bin=$new
			read -r s c < <(one "$bin" "$what" "$what-$b-$r")
			S[$b]+="$s "
			C[$b]+="$c "
			T[$b]+="$((s + c)) "
			echo "instr_transfer: $what $b run $((r + 1)): receiving $s, sending $c" >&2
		done
	done
	for b in old new; do
		ms=$(tr ' ' '\n' <<<"${S[$b]}" | grep . | median)
		mc=$(tr ' ' '\n' <<<"${C[$b]}" | grep . | median)
		mt=$(tr ' ' '\n' <<<"${T[$b]}" | grep . | median)
		[ $b = old ] && told=$mt
		ratio=-
		[ $b = new ] && ratio=$(awk -v a="$mt" -v b="$told" 'BEGIN { printf "%.4f", a / b }')
		label="$what ($([ "$what" = file ] && echo "$size" || echo "$files x 4 KiB"))"
		printf '| %s | %s | %.0f | %.0f | %.0f | %s |\n' "$label" "$b" "$ms" "$mc" "$mt" "$ratio"
	done
	unset S C T
done
