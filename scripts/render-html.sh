#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# linerate plot's HTML page, drawn by headless Chromium (Debian's
# chromium package, installed here: it is too big for every CI run): a
# bench run saved over loopback, the page made, a screenshot taken with
# the network off, and its pixels checked where the run's line must be.
# Usage: bash scripts/render-html.sh [build/linerate]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/linerate}
bash scripts/deps.sh --browser
work=$(mktemp -d)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
"$bin" token >"$work/token"
"$bin" serve -B 127.0.0.1 -p 0 --no-iperf3 --token-file "$work/token" \
	>"$work/serve.log" 2>&1 &
srv=$!
port=
for _ in $(seq 50); do
	port=$(sed -n 's/.*listening on .* port \([0-9][0-9]*\).*/\1/p' \
		"$work/serve.log" | head -1)
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log"; exit 1; }
for label in one four; do
	p=1
	[ $label = four ] && p=4
	"$bin" bench -B 127.0.0.1 -p "$port" --token-file "$work/token" -t 1 \
		-P $p --save $label --results "$work/runs.jsonl" 127.0.0.1 >/dev/null
done
"$bin" plot one four -o "$work/page.html" --results "$work/runs.jsonl"
# --no-proxy-server and a blackholed host resolver: nothing leaves
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--no-proxy-server --host-resolver-rules='MAP * ~NOTFOUND' \
	--window-size=1000,1100 --screenshot="$work/page.png" \
	"file://$work/page.html" >/dev/null 2>&1
PYTHONPATH=tests/integration /usr/bin/python3 - "$work/page.png" <<'PY'
import sys
from pngread import hex_rgb, read_png
w, h, rows = read_png(sys.argv[1])
for colour, what in (("#0072b2", "the first run's line and bar"),
                     ("#d55e00", "the second's")):
    c = hex_rgb(colour)
    n = sum(row.count(c) for row in rows)
    assert n > 500, f"{what}: {n} pixels of {colour}"
    print(f"render-html: {what}: {n} pixels of {colour}")
print("render-html: the page is drawn")
PY
