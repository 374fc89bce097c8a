#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Who may include whom (docs/ARCHITECTURE.md). Fails, naming the file and
# the include, when
#   1. a file of the command line (src/ outside src/core: src/*.[ch] and
#      the formatter, src/report/) includes an engine header that is not
#      public, or one by another path than "core/NAME.h";
#   2. a folder's internal header (NAME_int.h) is included from outside
#      that folder (the folder's own unit test, tests/unit/test_NAME.c,
#      may include src/core/NAME/NAME_int.h as "NAME/NAME_int.h"; the
#      files of src/core/server/ may include "bench/bench_int.h", the run
#      their tests drive: the one exception of docs/ARCHITECTURE.md);
#   3. a closed public header includes a header that is not public.
# `scripts/check-includes.sh --self-test` first shows that it finds each
# of these in a planted tree, and passes a clean one.
set -euo pipefail
cd "$(dirname "$0")/.."

# The engine's public headers: what src/*.c may include, as core/NAME.h.
public=(xfer.h bench.h server.h doctor.h disk.h gen.h cryptobench.h relay.h
	err.h units.h token.h cipher.h remote.h ssh.h selfcopy.h filter.h
	filelist.h)
# Public headers whose own includes are public too. bench.h, server.h and
# doctor.h show some of the wire's types (the test request a client sends,
# the probe's result, an address), so they include proto.h and net.h.
closed=(xfer.h token.h cipher.h err.h units.h gen.h disk.h cryptobench.h
	remote.h ssh.h relay.h selfcopy.h filter.h filelist.h)

in_list() {
	local x=$1 y
	shift
	for y in "$@"; do [ "$x" = "$y" ] && return 0; done
	return 1
}

# The quoted includes of a file, one a line.
includes() {
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}

# Check the tree rooted at $1 (its src/); print each fault, fail on any.
check_tree() {
	local root=$1 bad=0 f inc name
	local -a cli all

	mapfile -t cli < <(cd "$root" && find src -path src/core -prune -o -name '*.[ch]' -print | sort)
	mapfile -t all < <(cd "$root" && find src tests -name '*.[ch]' 2>/dev/null | sort)
	# 1. the command line sees the engine's public headers only
	for f in "${cli[@]}"; do
		while IFS= read -r inc; do
			case "$inc" in
			core/*)
				name=${inc#core/}
				if [[ "$name" == */* ]] || ! in_list "$name" "${public[@]}"; then
					echo "$f: includes \"$inc\": not a public engine header"
					bad=1
				fi
				;;
			config.h) ;;
			*)
				if [[ "$inc" == */* ]] || { [ ! -f "$root/src/$inc" ] &&
					[ ! -f "$root/$(dirname "$f")/$inc" ]; }; then
					echo "$f: includes \"$inc\": the engine is seen as core/NAME.h, its public headers only"
					bad=1
				fi
				;;
			esac
		done < <(includes "$root/$f")
	done
	# 2. an internal header stays in its folder
	for f in "${all[@]}"; do
		while IFS= read -r inc; do
			case "$inc" in
			*_int.h)
				if [ "$f" = "tests/unit/test_${inc%%/*}.c" ] &&
					[ "$inc" = "${inc%%/*}/${inc%%/*}_int.h" ] &&
					[ -f "$root/src/core/$inc" ]; then
					:
				elif [[ "$f" == src/core/server/* ]] &&
					[ "$inc" = "bench/bench_int.h" ] &&
					[ -f "$root/src/core/$inc" ]; then
					:
				elif [[ "$inc" == */* ]] || [ ! -f "$root/$(dirname "$f")/$inc" ]; then
					echo "$f: includes \"$inc\": an internal header of another folder"
					bad=1
				fi
				;;
			esac
		done < <(includes "$root/$f")
	done
	# 3. a closed public header shows public headers only
	for name in "${closed[@]}"; do
		f=src/core/$name
		[ -f "$root/$f" ] || continue
		while IFS= read -r inc; do
			if ! in_list "$inc" "${public[@]}"; then
				echo "$f: includes \"$inc\": a closed public header shows public headers only"
				bad=1
			fi
		done < <(includes "$root/$f")
	done
	return $bad
}

# A tree with one fault of each kind, and the same tree mended.
self_test() {
	local t
	t=$(mktemp -d)
	trap 'rm -rf "$t"' RETURN
	mkdir -p "$t/src/core/xfer"
	printf '#include "err.h"\n' >"$t/src/core/xfer.h"
	: >"$t/src/core/err.h" >"$t/src/core/proto.h" >"$t/src/opts.h"
	printf '#include "../xfer.h"\n' >"$t/src/core/xfer/xfer_int.h"
	printf '#include "xfer_int.h"\n' >"$t/src/core/xfer/send.c"
	printf '#include "core/xfer.h"\n#include "opts.h"\n#include "config.h"\n' >"$t/src/cmd_send.c"
	mkdir -p "$t/src/report"
	printf '#include "report_int.h"\n#include "core/err.h"\n' >"$t/src/report/bench.c"
	: >"$t/src/report/report_int.h"
	mkdir -p "$t/tests/unit" "$t/src/core/bench" "$t/src/core/server"
	printf '#include "xfer/xfer_int.h"\n' >"$t/tests/unit/test_xfer.c"
	: >"$t/src/core/bench/bench_int.h"
	printf '#include "bench/bench_int.h"\n' >"$t/src/core/server/server_int.h"
	check_tree "$t" >/dev/null || { echo "self-test: a clean tree failed"; check_tree "$t"; return 1; }
	local -a cases=(
		'src/cmd_send.c|#include "core/proto.h"|not a public engine header'
		'src/cmd_send.c|#include "proto.h"|its public headers only'
		'src/cmd_send.c|#include "core/xfer/xfer_int.h"|not a public engine header'
		'src/core/send.c|#include "xfer/xfer_int.h"|internal header of another folder'
		'tests/unit/test_proto.c|#include "xfer/xfer_int.h"|internal header of another folder'
		'src/core/xfer/send.c|#include "bench/bench_int.h"|internal header of another folder'
		'src/core/server/server_int.h|#include "xfer/xfer_int.h"|internal header of another folder'
		'src/report/bench.c|#include "core/proto.h"|not a public engine header'
		'src/core/xfer.h|#include "proto.h"|closed public header'
	)
	local c file line want out
	for c in "${cases[@]}"; do
		IFS='|' read -r file line want <<<"$c"
		cp "$t/$file" "$t/$file.keep" 2>/dev/null || : >"$t/$file.keep"
		printf '%s\n' "$line" >>"$t/$file"
		if out=$(check_tree "$t"); then
			echo "self-test: '$line' in $file was not found"
			return 1
		fi
		grep -q "$want" <<<"$out" || { echo "self-test: '$line' in $file: said '$out'"; return 1; }
		mv "$t/$file.keep" "$t/$file"
		[ -s "$t/$file" ] || rm -f "$t/$file"
	done
	echo "includes: the check finds each of ${#cases[@]} planted faults"
}

if [ "${1:-}" = "--self-test" ]; then
	self_test
	shift
fi
check_tree .
echo "includes: src/*.[ch] see public engine headers only (${#public[@]}); internal headers stay in their folders; ${#closed[@]} closed faces"
