#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fail when any C source differs from what .clang-format asks for.
# `scripts/check-format.sh --fix` rewrites the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--fix" ]; then
	clang-format -i "${files[@]}"
	exit 0
fi
clang-format --dry-run --Werror "${files[@]}"
echo "format: ${#files[@]} files match .clang-format"
