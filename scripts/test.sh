#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build linerate and run every test: unit tests under ASan+UBSan (gcc),
# a clang build with -Werror, the fuzz corpus as a regression test, and the
# pytest integration tests (loopback and network namespaces; namespace tests
# skip with a printed reason when not root).
#
# Environment: FUZZ_SECONDS=N adds a time-bounded fuzz run per target.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh

step() { printf '\n==== %s\n' "$*"; }

step "style: clang-format"
bash scripts/check-format.sh

step "release build (gcc): build/linerate"
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build

step "unit tests under ASan+UBSan (gcc)"
[ -f build-asan/build.ninja ] ||
	meson setup build-asan --buildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false >/dev/null
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C build-asan --print-errorlogs

step "clang build with fuzz targets; corpus regression"
[ -f build-fuzz/build.ninja ] ||
	CC=clang meson setup build-fuzz --buildtype=debug -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
ninja -C build-fuzz
meson test -C build-fuzz --print-errorlogs
if [ -n "${FUZZ_SECONDS:-}" ]; then
	for f in build-fuzz/tests/fuzz/fuzz_*; do
		[ -x "$f" ] || continue
		name=$(basename "$f")
		mkdir -p "build-fuzz/corpus-$name"
		"$f" -max_total_time="$FUZZ_SECONDS" "build-fuzz/corpus-$name" \
			"tests/fuzz/corpus/${name#fuzz_}"
	done
fi

step "integration tests (pytest)"
if [ "$(id -u)" -ne 0 ]; then
	echo "note: not root: the network-namespace tests will be skipped"
fi
LINERATE_BIN="$PWD/build/linerate" /usr/bin/python3 -m pytest -rs -q tests/integration
