#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# linerate plot's HTML pages drawn by headless Chromium (Debian's
# chromium package, installed here when missing: too big for every CI
# run), and their pixels checked where the data must be drawn, with the
# checks tests/integration/test_plot.py makes of the SVG drawn by
# rsvg-convert (tests/integration/pngread.py):
#  - a bench run (-P 2 over loopback, its JSON): the sum a line of its
#    colour across the plot area, above its two streams' lines;
#  - two labels' saved bench runs compared: the runs over time in their
#    label's colour, and one bar per label, filled, in its colour, the
#    heights in the ratio of `linerate results --compare`'s medians
#    (within 2 px or 3%). The labels are paced 2:1 (-b) to tell them apart.
# The screenshots are taken with the network off. What this makes (the
# server, the runs, Chromium's profile) is removed on exit, failure too.
# Usage (as root, from the repository's root):
#   bash scripts/render-html.sh [BINARY]
#   bash scripts/render-html.sh --check bench PAGE.html [BINARY]
#   bash scripts/render-html.sh --check compare PAGE.html RESULTS [BINARY]
# --check: only the checks, of a page made elsewhere (compare: labels
# "one" and "four" of the results file RESULTS).
# Exit status: 0 drawn where it must be, 1 a check failed (it says which).
set -euo pipefail

fail() {
	echo "render-html: FAIL: $*" >&2
	exit 1
}

kind='' page='' results=''
if [ "${1:-}" = --check ]; then
	kind=${2:-}
	[ "$kind" = bench ] || [ "$kind" = compare ] ||
		fail "usage: --check bench PAGE.html | --check compare PAGE.html RESULTS"
	[ -f "${3:-}" ] || fail "no page ${3:-} to check"
	page=$(realpath "$3")
	shift 3
	if [ "$kind" = compare ]; then
		[ -f "${1:-}" ] || fail "no results file ${1:-} for the medians"
		results=$(realpath "$1")
		shift
	fi
fi
cd "$(dirname "$0")/.."
bin=${1:-build/linerate}
[ -x "$bin" ] || fail "no linerate binary at $bin"
bash scripts/deps.sh

work=$(mktemp -d /tmp/render-html.XXXXXX)
srv=
cleanup() {
	if [ -n "$srv" ]; then
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shoot PAGE PNG: the page as Chromium draws it, nothing from the network
# (no proxy, every host name blackholed), its own profile in $work
shoot() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu \
		--hide-scrollbars --force-device-scale-factor=1 --no-first-run \
		--no-proxy-server --host-resolver-rules='MAP * ~NOTFOUND' \
		--user-data-dir="$work/chromium" --window-size=1000,1200 \
		--screenshot="$2" "file://$1" >"$work/chromium.log" 2>&1 || true
	[ -s "$2" ] || {
		tail -20 "$work/chromium.log" >&2
		fail "Chromium drew no screenshot of $1"
	}
}

# check KIND PNG [COMPARE.json]: the pixels where the data must be
check() {
	PYTHONPATH=tests/integration /usr/bin/python3 - "$@" <<'PY'
import json
import sys

from pngread import (across, bars_of, check_bar_heights,
                     check_run_over_time, columns_with, panels, read_png)

# the sum and the streams of one run; the first and second label
SUM, STREAM1, STREAM2 = "#0072b2", "#d55e00", "#009e73"
kind, png = sys.argv[1:3]


def say(text):
    print(f"render-html: {kind}: {text}")


try:
    w, h, rows = read_png(png)
    areas = panels(w, h, rows)
    if kind == "bench":
        assert len(areas) == 1, \
            f"{len(areas)} plot areas, want 1 (the run over time)"
        check_run_over_time(rows, areas[0], SUM, (STREAM1, STREAM2))
        say(f"plot area {areas[0]}: the sum ({SUM}) a line across it, "
            f"above its streams' lines ({STREAM1}, {STREAM2})")
    else:
        assert len(areas) == 2, \
            f"{len(areas)} plot areas, want 2 (runs over time, bars)"
        times, bars = areas
        cmp = json.load(open(sys.argv[3]))
        groups = {(g["command"], g["direction"]): g for g in cmp["groups"]}
        assert list(groups) == [("bench", "send")], \
            f"results --compare groups {list(groups)}, want bench send"
        medians = [groups[("bench", "send")][k]["median_bytes_per_second"]
                   for k in ("a", "b")]
        got = []
        for label, colour in (("one", SUM), ("four", STREAM1)):
            across(rows, times, colour, 0.5, f"{label}'s run over time")
            b = bars_of(rows, bars, colour)
            assert len(b) == 1, \
                f"{len(b)} bars of {label}'s colour {colour}, want one"
            got.append(b[0])
        assert not columns_with(rows, times, STREAM2), \
            f"a third colour ({STREAM2}) over time, for two runs"
        assert got[0][0] < got[1][0], "one's bar not left of four's"
        check_bar_heights([("one", got[0][1], medians[0]),
                           ("four", got[1][1], medians[1])])
        say(f"runs over time in {SUM} and {STREAM1} across {times}")
        for (label, colour), (x, px), m in zip(
                (("one", SUM), ("four", STREAM1)), got, medians):
            say(f"{label}: one bar of {colour} at x={x}, {px} px high, "
                f"median {m / 1e6:.1f} MB/s")
        say(f"bar heights {got[0][1] / got[1][1]:.3f} : 1, medians "
            f"{medians[0] / medians[1]:.3f} : 1")
except (AssertionError, KeyError, ValueError) as e:
    print(f"render-html: FAIL: the {kind} page drawn by Chromium: {e}",
          file=sys.stderr)
    sys.exit(1)
PY
}

# check_page KIND PAGE.html [RESULTS]
check_page() {
	local png="$work/$1.png"
	shoot "$2" "$png"
	if [ "$1" = compare ]; then
		"$bin" results --results "$3" --compare one four --json \
			>"$work/compare.json" ||
			fail "linerate results --compare one four (of $3)"
		check compare "$png" "$work/compare.json"
	else
		check bench "$png"
	fi
}

if [ -n "$kind" ]; then
	check_page "$kind" "$page" "$results"
	echo "render-html: the $kind page is drawn where its data must be"
	exit 0
fi

# a server on loopback, the runs made as test_plot.py makes them
"$bin" token >"$work/token"
mkdir "$work/root"
# its first lines read as it prints them, up to "listening on ... port N"
# (5 s at most for each), then the rest kept in serve.log
coproc SERVE { exec "$bin" serve -B 127.0.0.1 -p 0 --no-iperf3 \
	--root "$work/root" --token-file "$work/token" 2>&1; }
srv=$SERVE_PID
port=
while IFS= read -r -t 5 -u "${SERVE[0]}" line; do
	echo "$line" >>"$work/serve.log"
	port=$(sed -n 's/.*listening on .* port \([0-9][0-9]*\).*/\1/p' \
		<<<"$line")
	[ -n "$port" ] && break
done
[ -n "$port" ] || {
	cat "$work/serve.log" >&2
	fail "linerate serve did not start"
}
# the rest of its output, read so that it never waits on a full pipe (a
# background job does not inherit the coproc's own descriptor: a copy)
exec {serve_out}<&"${SERVE[0]}"
cat <&"$serve_out" >>"$work/serve.log" &
exec {serve_out}<&-
lr() { "$bin" "$1" -B 127.0.0.1 -p "$port" --token-file "$work/token" "${@:2}"; }
lr bench -t 2 -i 0.25 -P 2 -J 127.0.0.1 >"$work/two.json" ||
	fail "bench -P 2 over loopback"
# "one" a stream at 2 Gbit/s, "four" four at 1 Gbit/s each: medians 1:2
lr bench -t 1 -P 1 -b 2g --save one --results "$work/runs.jsonl" \
	127.0.0.1 >/dev/null || fail "bench --save one"
lr bench -t 1 -P 4 -b 1g --save four --results "$work/runs.jsonl" \
	127.0.0.1 >/dev/null || fail "bench --save four"
"$bin" plot "$work/two.json" -o "$work/bench.html" \
	--results "$work/none.jsonl" || fail "plot of the bench run"
"$bin" plot one four -o "$work/compare.html" \
	--results "$work/runs.jsonl" || fail "plot of labels one and four"

check_page bench "$work/bench.html"
check_page compare "$work/compare.html" "$work/runs.jsonl"
echo "render-html: both pages are drawn where their data must be"
