#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# -Z: plain copy against sendfile and MSG_ZEROCOPY, on loopback and between
# two namespace test hosts (veth, unshaped). Usage: bench/zerocopy.sh [-t SEC]
# [--repeat N]. Prints one line per run: path, method, Gbit/s, CPU s/GB.
set -euo pipefail
cd "$(dirname "$0")/.."
t=4 repeat=3
while [ $# -gt 0 ]; do
	case $1 in
	-t) t=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	*) echo "usage: bench/zerocopy.sh [-t SEC] [--repeat N]" >&2; exit 2 ;;
	esac
done
bin=${LINERATE:-$PWD/build/linerate}
source scripts/testhosts.sh
testhosts_require_root || exit 1
tmp=$(mktemp -d)
cleanup() { pkill -f "$bin serve" 2>/dev/null || true; testhosts_down; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
testhosts_up >/dev/null

wait_listen() { # netns-or-empty addr port
	local i
	for i in $(seq 1 100); do
		if ${1:+ip netns exec "$1"} ss -ltnH "( sport = :$3 )" | grep -q .; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

one() { # path label bench-args...
	local path=$1 label=$2 ns= addr=127.0.0.1 port=7411
	shift 2
	if [ "$path" = ns ]; then ns=$TH_B addr=$TH_ADDR_B port=7350; fi
	${ns:+ip netns exec "$ns"} "$bin" serve -B "$addr" -p "$port" --once \
		>/dev/null 2>&1 &
	wait_listen "$ns" "$addr" "$port"
	${ns:+ip netns exec "$TH_A"} "$bin" bench -t "$t" -J "$@" \
		"$addr:$port" >"$tmp/r.json"
	wait
	/usr/bin/python3 - "$tmp/r.json" "$path" "$label" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r, l = d["end"]["sum_received"], d["end"]["linerate"]
cpu = l["local_cpu_seconds"] + l["remote_cpu_seconds"]
print(f"{sys.argv[2]:3} {sys.argv[3]:9} {r['bits_per_second'] / 1e9:6.2f} Gbit/s"
      f"  {cpu / (r['bytes'] / 1e9):.3f} CPU s/GB")
PY
}

for i in $(seq 1 "$repeat"); do
	for path in lo ns; do
		one "$path" copy
		one "$path" sendfile -Z=sendfile
		one "$path" msg -Z=msg
	done
done
