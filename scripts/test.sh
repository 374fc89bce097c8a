#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build linerate and run every test: the style and include checks, unit
# tests under ASan+UBSan (gcc), a clang build with -Werror, the fuzz corpus
# as a regression test, the pytest integration tests (loopback and network
# namespaces; namespace tests skip with a printed reason when not root),
# a ThreadSanitizer build running the threaded engine's unit tests and
# the integration tests that exercise every thread, and the cross builds
# for aarch64 and s390x with their tests under qemu-user.
#
# Environment: FUZZ_SECONDS=N adds a time-bounded fuzz run per target.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh

step() { printf '\n==== %s\n' "$*"; }

step "style: clang-format"
bash scripts/check-format.sh

step "who includes whom (docs/ARCHITECTURE.md)"
bash scripts/check-includes.sh --self-test

step "sizes: files over 1,000 lines, functions over 100"
# The script's defaults: no such file, at most two such functions, each
# named with its reason in docs/ARCHITECTURE.md.
bash scripts/check-size.sh

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
# (test_cross.py runs in the cross step below, against each target;
# test_static.py with scripts/cross.sh static-TARGET, on demand)
LINERATE_BIN="$PWD/build/linerate" /usr/bin/python3 -m pytest -rs -q tests/integration \
	--ignore=tests/integration/test_cross.py --ignore=tests/integration/test_static.py

step "the README's main job (scripts/demo.sh), a 64 MiB file, 2 s tests"
# as a user runs it: bench, gen, send with the copy compared, doctor; its
# hosts removed at the end (it exits non-zero on any failure)
DEMO_SIZE=64M bash scripts/demo.sh -t 2 >/dev/null

step "plot's HTML page in headless Chromium (scripts/render-html.sh)"
# the pixels where the data must be drawn, as the SVG's test checks them
bash scripts/render-html.sh

step "ThreadSanitizer (clang): the engine's threads, in a chosen set of tests"
# push and pull of a file and a tree with -P 4, a pipe in and out, a
# resume after a kill, the one-shot receiver, bench with -P and --bidir,
# two tests at once, iperf3 clients against serve and bench --iperf3, the
# sweeper of partial files, a source read again, both listeners full, a
# push over ssh and one whose client is killed (the lifeline), -X and -A
# through a resume and a delta
tsan_tests=(
	"tests/integration/test_transfer.py::test_single_file_push"
	"tests/integration/test_transfer.py::test_tree_push"
	"tests/integration/test_transfer.py::test_pull_tree"
	"tests/integration/test_transfer.py::test_pull_single_file"
	"tests/integration/test_transfer.py::test_pipe_in"
	"tests/integration/test_transfer.py::test_get_to_stdout"
	"tests/integration/test_transfer.py::test_recv_one_shot"
	"tests/integration/test_transfer.py::test_resume_after_sender_killed"
	"tests/integration/test_integrity.py::test_partial_files_listed_cleaned_and_swept"
	"tests/integration/test_integrity.py::test_file_changed_while_read_is_read_again"
	"tests/integration/test_bench.py::test_parallel_streams_have_sum_rows"
	"tests/integration/test_bench.py::test_bidir_parallel_sums_per_direction"
	"tests/integration/test_bench.py::test_overlapping_tests_both_succeed_and_say_so"
	"tests/integration/test_iperf3.py::test_iperf3_client_against_linerate_serve"
	"tests/integration/test_iperf3.py::test_two_iperf3_clients_at_once"
	"tests/integration/test_iperf3.py::test_linerate_client_against_iperf3_server"
	"tests/integration/test_badinput.py::test_many_idle_connections"
	"tests/integration/test_iperf3_dos.py::test_many_idle_connections_from_one_host"
	"tests/integration/test_ssh.py::test_push_a_file_with_user_at_host"
	"tests/integration/test_ssh.py::test_client_killed_the_far_end_exits_and_resume"
	"tests/integration/test_ssh.py::test_a_firewall_sends_the_data_through_ssh"
	"tests/integration/test_outopts.py::test_timestamps_on_every_line_but_not_in_json"
	"tests/integration/test_outopts.py::test_timestamps_keep_output_and_errors_in_order"
	"tests/integration/test_xattrs.py::test_resume_and_delta_keep_them"
	"tests/integration/test_delta.py::test_held_chunks_are_cloned_where_extents_are_shared"
)
[ -f build-tsan/build.ninja ] ||
	CC=clang meson setup build-tsan --buildtype=debug -Db_sanitize=thread \
		-Db_lundef=false >/dev/null
ninja -C build-tsan
tsan_dir=$(mktemp -d)
trap 'rm -rf "$tsan_dir"' EXIT
tsan_opts="halt_on_error=0 history_size=4 second_deadlock_stack=1"
tsan_opts+=" log_path=$tsan_dir/report"
tsan_t0=$(date +%s)
tsan_report() {
	cat "$tsan_dir"/report.* 2>/dev/null || true
	echo "ThreadSanitizer: the runs above failed" >&2
	exit 1
}
TSAN_OPTIONS=$tsan_opts meson test -C build-tsan --print-errorlogs xfer fsio server relay ||
	tsan_report
TSAN_OPTIONS=$tsan_opts LINERATE_BIN="$PWD/build-tsan/linerate" \
	/usr/bin/python3 -m pytest -rs -q "${tsan_tests[@]}" || tsan_report
if compgen -G "$tsan_dir/report.*" >/dev/null; then
	cat "$tsan_dir"/report.*
	echo "ThreadSanitizer reported the races above" >&2
	exit 1
fi
echo "ThreadSanitizer: no report ($(($(date +%s) - tsan_t0)) s)"

step "cross builds under qemu-user: aarch64 and s390x (big-endian)"
# the unit tests and tests/integration/test_cross.py, each target's
# linerate against this machine's; armhf, mipsel and i386 on demand
# (scripts/cross.sh all; docs/PORTING.md)
if [ "$(id -u)" -ne 0 ]; then
	echo "note: not root: cross builds skipped (they add Debian architectures and packages)"
else
	cross_t0=$(date +%s)
	bash scripts/cross.sh aarch64
	bash scripts/cross.sh s390x
	echo "cross: $(($(date +%s) - cross_t0)) s"
fi
