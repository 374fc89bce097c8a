#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prints every file under src/ of more than 1,000 lines and every function
# of more than 100 (Universal Ctags finds where each begins and ends), and
# fails when there are more such files or functions than allowed:
#
#   scripts/check-size.sh [--files N] [--functions N]
#
# The defaults are the layout's rule (docs/ARCHITECTURE.md): no file over
# 1,000 lines and at most two functions over 100, each of them named with
# its reason in the section "Long functions" of docs/ARCHITECTURE.md. With
# those limits a long function that is not named there fails too.
set -euo pipefail
cd "$(dirname "$0")/.."

max_files=0
max_funcs=2
while [ $# -gt 0 ]; do
	case "$1" in
	--files) max_files=$2; shift 2 ;;
	--functions) max_funcs=$2; shift 2 ;;
	*) echo "usage: $0 [--files N] [--functions N]" >&2; exit 2 ;;
	esac
done
if ! ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
	echo "size: Universal Ctags is needed (Debian: universal-ctags)" >&2
	exit 1
fi

mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h')
big=0
for f in "${files[@]}"; do
	n=$(wc -l < "$f")
	if [ "$n" -gt 1000 ]; then
		echo "size: $f: $n lines"
		big=$((big + 1))
	fi
done

# name<TAB>file<TAB>lines, for each function definition of over 100 lines
long=$(ctags --languages=C --kinds-C=f --fields=+ne -o - "${files[@]}" |
	awk -F'\t' '{
		l = 0; e = 0
		for (i = 4; i <= NF; i++) {
			if ($i ~ /^line:/) l = substr($i, 6)
			if ($i ~ /^end:/) e = substr($i, 5)
		}
		if (e && e - l + 1 > 100) printf "%s\t%s\t%d\n", $1, $2, e - l + 1
	}' | sort -t$'\t' -k3,3nr)
named=$(sed -n '/^## Long functions/,/^## /p' docs/ARCHITECTURE.md)
nlong=0
unnamed=0
while IFS=$'\t' read -r name file lines; do
	[ -n "$name" ] || continue
	nlong=$((nlong + 1))
	if grep -q "\`$name\`" <<< "$named"; then
		echo "size: $file: $name: $lines lines (named in docs/ARCHITECTURE.md)"
	else
		echo "size: $file: $name: $lines lines"
		unnamed=$((unnamed + 1))
	fi
done <<< "$long"

echo "size: ${#files[@]} files; $big over 1,000 lines (at most $max_files), $nlong functions over 100 lines (at most $max_funcs)"
fail=0
if [ "$big" -gt "$max_files" ]; then
	echo "size: FAIL: $big files over 1,000 lines" >&2
	fail=1
fi
if [ "$nlong" -gt "$max_funcs" ]; then
	echo "size: FAIL: $nlong functions over 100 lines" >&2
	fail=1
fi
if [ "$max_funcs" -le 2 ] && [ "$unnamed" -gt 0 ]; then
	echo "size: FAIL: $unnamed long functions not named in docs/ARCHITECTURE.md" >&2
	fail=1
fi
exit $fail
