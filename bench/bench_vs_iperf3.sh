#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench_vs_iperf3.sh - linerate and stock iperf3 side by side, in one run, on
# the same hosts, printed as a Markdown table.
#
# usage: bench/bench_vs_iperf3.sh [-t SEC] [--repeat N]
#                                 [--rows loopback,ns,shaped] [--tools LIST]
#                                 [--out FILE]
#
#   -t SEC         seconds per test (default 10)
#   --repeat N     runs per cell; with N > 1 every cell is the median (default 1)
#   --rows LIST    paths to measure, comma separated (default all three):
#                    loopback  127.0.0.1 in this network namespace
#                    ns        two namespaces joined by veth, unshaped
#                    shaped    the same, tbf-shaped to 1 Gbit/s on both ends
#   --tools LIST   client -> server pairs to run, comma separated (default
#                  iperf3,linerate):
#                    iperf3    iperf3 -c -> iperf3 -s
#                    linerate  linerate bench -> linerate serve
#                    lr2ip3    linerate bench --iperf3 -> iperf3 -s
#                    ip32lr    iperf3 -c -> linerate serve (its iperf3 port)
#                    lrold     $LINERATE_OLD bench -> $LINERATE_OLD serve (an
#                              earlier build, for a before/after table)
#                  the last two make a second table, next to iperf3 -> iperf3;
#                  lrold a third, next to linerate
#   --out FILE     also write the header and table to FILE
#   -h, --help     this text
#
# Every path is measured in three modes: -P 1, -P 2 and -R.  For each row the
# two tools alternate which one goes first (and again per repeat), to spread
# noise.  Servers run in the server's place (127.0.0.1, or namespace $TH_B at
# 198.18.0.2 with the client in $TH_A), both ends under
# `/usr/bin/time -f '%e %U %S %M'`:
#
#   Gbit/s     end.sum_received.bits_per_second of the tool's own -J document
#   CPU s/GB   (user+sys of client + user+sys of server) / (end.sum_received.bytes / 1e9)
#   peak RSS   %M of each end, in MB (1 MB = 1024 KB of %M)
#
# The namespace rows need root (they are skipped, with the reason, otherwise).
# Traffic goes only to 127.0.0.1 and the 198.18.0.x test hosts.  This is a
# benchmark: it never fails on a speed.  Exit status: 0 every run succeeded,
# 1 some run failed (its cell says "fail"), 2 usage error.
#
# Environment: LINERATE (default: build/linerate of this tree), IPERF3
# (default: iperf3 from PATH), LINERATE_OLD (the build the lrold pair
# runs, e.g. an earlier commit's build/linerate; LINERATE_OLD_LABEL names
# it in the table).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
readonly HERE TOP
readonly TIME_BIN=/usr/bin/time
readonly TIME_FMT='%e %U %S %M'

# The command line as typed, quoted only where the shell needs it.
CMDLINE=
for _a in "$0" "$@"; do
    if [[ $_a =~ ^[A-Za-z0-9_./,:=+@%-]+$ ]]; then
        CMDLINE+="${CMDLINE:+ }$_a"
    else
        CMDLINE+="${CMDLINE:+ }$(printf '%q' "$_a")"
    fi
done

LINERATE=${LINERATE:-$TOP/build/linerate}
IPERF3=${IPERF3:-iperf3}

opt_time=10
opt_repeat=1
opt_rows=loopback,ns,shaped
opt_tools=iperf3,linerate
opt_out=

BENCH_NAME=bench_vs_iperf3
BENCH_SCRIPT=${BASH_SOURCE[0]}
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
bench_parse_options "$@"
want_loopback=0 want_ns=0 want_shaped=0
IFS=, read -r -a _rows <<<"$opt_rows"
[ ${#_rows[@]} -gt 0 ] || die_usage "--rows is empty"
for _r in "${_rows[@]}"; do
    case $_r in
    loopback) want_loopback=1 ;;
    ns) want_ns=1 ;;
    shaped) want_shaped=1 ;;
    *) die_usage "--rows: unknown path '$_r' (loopback, ns, shaped)" ;;
    esac
done

IFS=, read -r -a TOOLS <<<"$opt_tools"
[ ${#TOOLS[@]} -gt 0 ] || die_usage "--tools is empty"
for _t in "${TOOLS[@]}"; do
    case $_t in
    iperf3 | linerate | lr2ip3 | ip32lr) ;;
    lrold) [ -x "${LINERATE_OLD:-}" ] || die_usage "--tools lrold: set LINERATE_OLD to an earlier build" ;;
    *) die_usage "--tools: unknown pair '$_t' (iperf3, linerate, lr2ip3, ip32lr, lrold)" ;;
    esac
done
has_tool() {
    local t
    for t in "${TOOLS[@]}"; do [ "$t" = "$1" ] && return 0; done
    return 1
}

# ---------------------------------------------------------------- tools

[ -x "$LINERATE" ] || { log "$LINERATE not found; build it: ninja -C $TOP/build"; exit 1; }
command -v "$IPERF3" >/dev/null 2>&1 || { log "iperf3 not found (apt-get install iperf3)"; exit 1; }
for _tool in ss timeout awk sort; do
    command -v "$_tool" >/dev/null 2>&1 || { log "'$_tool' not found"; exit 1; }
done
if [ ! -x "$TIME_BIN" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        log "$TIME_BIN missing; installing package 'time' with apt-get"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >&2 ||
            { log "apt-get install time failed"; exit 1; }
    fi
    [ -x "$TIME_BIN" ] || { log "$TIME_BIN missing (apt-get install time)"; exit 1; }
fi
if command -v jq >/dev/null 2>&1; then
    JSON=jq
elif [ -x /usr/bin/python3 ]; then
    JSON=python3
else
    log "need jq or /usr/bin/python3 to read the JSON documents"
    exit 1
fi

# ---------------------------------------------------------------- cleanup

# shellcheck disable=SC1091  # scripts/testhosts.sh, a bash library
source "$TOP/scripts/testhosts.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench_vs_iperf3.XXXXXX")
SERVER_PIDS=()  # /usr/bin/time processes wrapping servers still running

# Send SIG (default TERM) to PID and everything below it, children before
# their parents so no one is orphaned before it is found.
kill_tree() {
    local pid=$1 sig=${2:-TERM} child
    for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
        kill_tree "$child" "$sig"
    done
    kill "-$sig" "$pid" 2>/dev/null || true
}

kill_servers() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        kill_tree "$pid" TERM
    done
    for pid in "${SERVER_PIDS[@]}"; do
        wait_gone "$pid" 20 || kill_tree "$pid" KILL
    done
    SERVER_PIDS=()
}

# shellcheck disable=SC2317  # reached through the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    kill_servers
    testhosts_down
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Wait (bounded: N polls of 0.1 s) for PID to exit; 0 if it did.
wait_gone() {
    local pid=$1 n=$2 i
    for ((i = 0; i < n; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    ! kill -0 "$pid" 2>/dev/null
}

# ---------------------------------------------------------------- one run

# Network namespace prefix for a command: empty for this namespace.
NS_CLIENT=()
NS_SERVER=()
SERVER_ADDR=

# A TCP port with no socket at all (any state) in the server's namespace.
# BASE (the tool's default) only inside the test namespaces; on loopback,
# where other programs may use the defaults, and as the fallback, a pid-derived
# port in 10000-29999, below the kernel's ephemeral range (bounded: 64 tries).
pick_port() {
    local base=$1 i port
    for ((i = 0; i < 64; i++)); do
        if [ "$i" -eq 0 ] && [ ${#NS_SERVER[@]} -gt 0 ]; then
            port=$base
        else
            port=$((10000 + ($$ * 61 + base + i * 7919) % 20000))
        fi
        if [ -z "$("${NS_SERVER[@]}" ss -tanH "( sport = :$port )" 2>/dev/null)" ]; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

# PID and its descendants, one per line (depth bounded by the process tree).
wait_listen() {
    bench_wait_listen "$SERVER_ADDR" "$1" "$2" 200
}

# end.sum_received as "bits_per_second bytes" from a -J document.
json_received() {
    local f=$1
    if [ "$JSON" = jq ]; then
        jq -er '.end.sum_received | "\(.bits_per_second) \(.bytes)"' "$f" 2>/dev/null
    else
        /usr/bin/python3 - "$f" <<'EOF' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))["end"]["sum_received"]
print(r["bits_per_second"], r["bytes"])
EOF
    fi
}

# The "error" member of a -J document, if any.
json_error() {
    if [ "$JSON" = jq ]; then
        jq -r '.error // empty' "$1" 2>/dev/null || true
    else
        /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("error",""))' \
            "$1" 2>/dev/null || true
    fi
}

# run_one TOOL MODE TAG: one server + one client.  On success sets
# R_GBPS R_CPUGB R_RSS_C R_RSS_S (MB) and returns 0.
run_one() {
    local tool=$1 mode=$2 tag=$3 port lport base spid rc=0 stays=0
    local sf=$WORK/$tag.server.time cf=$WORK/$tag.client.time
    local slog=$WORK/$tag.server.log cjson=$WORK/$tag.client.json clog=$WORK/$tag.client.err
    local -a flags srv cli
    local limit=$((opt_time + 60))

    case $mode in
    P1) flags=(-P 1) ;;
    P2) flags=(-P 2) ;;
    R) flags=(-R) ;;
    esac
    case $tool in linerate | lrold) base=7350 ;; *) base=5201 ;; esac
    port=$(pick_port "$base") || { log "$tag: no free port"; return 1; }
    case $tool in
    iperf3)
        srv=("$IPERF3" -s -1 -p "$port" -B "$SERVER_ADDR")
        cli=("$IPERF3" -c "$SERVER_ADDR" -p "$port" -t "$opt_time" -J "${flags[@]}")
        ;;
    linerate)
        srv=("$LINERATE" serve --once -p "$port" -B "$SERVER_ADDR")
        cli=("$LINERATE" bench -t "$opt_time" -J -p "$port" "${flags[@]}" "$SERVER_ADDR")
        ;;
    lrold)
        srv=("$LINERATE_OLD" serve --once -p "$port" -B "$SERVER_ADDR")
        cli=("$LINERATE_OLD" bench -t "$opt_time" -J -p "$port" "${flags[@]}" "$SERVER_ADDR")
        ;;
    lr2ip3)
        srv=("$IPERF3" -s -1 -p "$port" -B "$SERVER_ADDR")
        cli=("$LINERATE" bench --iperf3 -t "$opt_time" -J -p "$port" "${flags[@]}" "$SERVER_ADDR")
        ;;
    ip32lr)
        # linerate serve keeps serving: it is stopped after the client
        lport=$(pick_port 7350) || { log "$tag: no free port"; return 1; }
        [ "$lport" != "$port" ] || lport=$((port + 1))
        srv=("$LINERATE" serve -p "$lport" --iperf3-port "$port" -B "$SERVER_ADDR")
        cli=("$IPERF3" -c "$SERVER_ADDR" -p "$port" -t "$opt_time" -J "${flags[@]}")
        stays=1
        ;;
    esac
    rm -f "$sf" "$cf"

    # Server: time -> timeout (own process group, a last-resort bound) -> server.
    "${NS_SERVER[@]}" "$TIME_BIN" -f "$TIME_FMT" -o "$sf" \
        timeout -k 5 "$limit" "${srv[@]}" >"$slog" 2>&1 </dev/null &
    spid=$!
    SERVER_PIDS+=("$spid")
    if ! wait_listen "$port" "$spid"; then
        log "$tag: server did not listen on port $port; its output:"
        sed 's/^/    /' "$slog" >&2 || true
        kill_servers
        wait "$spid" 2>/dev/null || true
        return 1
    fi

    # Client in the foreground (--foreground: Ctrl-C still reaches it).
    "${NS_CLIENT[@]}" "$TIME_BIN" -f "$TIME_FMT" -o "$cf" \
        timeout --foreground -k 5 "$limit" "${cli[@]}" >"$cjson" 2>"$clog" </dev/null || rc=$?

    # A server that keeps serving is stopped through timeout (which passes
    # the signal on), so that time(1) above it still writes its record.
    if [ "$stays" = 1 ]; then
        local tpid
        for tpid in $(ps -o pid= --ppid "$spid" 2>/dev/null); do
            kill -TERM "$tpid" 2>/dev/null || true
        done
    fi
    # One-test servers exit after it; give them 10 s, then stop them.
    if ! wait_gone "$spid" 100; then
        log "$tag: server still running 10 s after the client; stopping it"
        [ "$rc" -ne 0 ] || rc=1
    fi
    kill_servers
    wait "$spid" 2>/dev/null || true

    if [ "$rc" -ne 0 ]; then
        local err
        err=$(json_error "$cjson")
        log "$tag: client exited with status $rc${err:+: $err}"
        [ -s "$clog" ] && sed 's/^/    /' "$clog" >&2
        return 1
    fi

    local recv ct st
    recv=$(json_received "$cjson") || { log "$tag: no end.sum_received in $tool's JSON"; return 1; }
    ct=$(time_line "$cf") || { log "$tag: no client time record"; return 1; }
    st=$(time_line "$sf") || { log "$tag: no server time record"; return 1; }

    read -r R_GBPS R_CPUGB R_RSS_C R_RSS_S R_CPU < <(
        awk -v recv="$recv" -v ct="$ct" -v st="$st" 'BEGIN {
            split(recv, r, " "); split(ct, c, " "); split(st, s, " ")
            cpu = c[2] + c[3] + s[2] + s[3]
            gb = r[2] / 1e9
            printf "%.6f %s %.3f %.3f %.3f\n", r[1] / 1e9,
                (gb > 0 ? sprintf("%.6f", cpu / gb) : "nan"), c[4] / 1024, s[4] / 1024, cpu
        }')
    [ "$R_CPUGB" != nan ] || { log "$tag: received 0 bytes"; return 1; }
    log "$tag: $(printf '%.3f' "$R_GBPS") Gbit/s, CPU ${R_CPU}s (client $ct | server $st)"
    return 0
}

# ---------------------------------------------------------------- results

declare -A RES   # "path|mode|tool|metric" -> values, one per successful repeat
FAILED=0
SKIPPED=()

add_res() {
    local key=$1 val=$2
    RES[$key]="${RES[$key]:-} $val"
}

# Median of the values under KEY, printed with FMT; "fail" if there are none.
median() {
    local fmt=$1 vals=${RES[$2]:-}
    [ -n "${vals// /}" ] || { echo fail; return; }
    # shellcheck disable=SC2086  # split the list on purpose
    printf '%s\n' $vals | sort -g | awk -v fmt="$fmt" '
        { v[NR] = $1 }
        END {
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf fmt "\n", m
        }'
}

ratio() {
    case "$1$2" in
    *fail*) echo "-" ;;
    *) awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f\n", a / b; else print "-" }' ;;
    esac
}

gbps_fmt() {
    [ "$1" = fail ] && { echo fail; return; }
    awk -v v="$1" 'BEGIN { printf (v >= 10 ? "%.2f\n" : "%.3f\n"), v }'
}

ROW_INDEX=0

# Measure every mode on the current path.
run_path() {
    local path=$1 mode r t k n=${#TOOLS[@]}
    for mode in P1 P2 R; do
        for ((r = 0; r < opt_repeat; r++)); do
            # the pair that goes first rotates per row and repeat
            for ((k = 0; k < n; k++)); do
                t=${TOOLS[$(((ROW_INDEX + r + k) % n))]}
                if run_one "$t" "$mode" "$path-$mode-$t-$((r + 1))"; then
                    add_res "$path|$mode|$t|gbps" "$R_GBPS"
                    add_res "$path|$mode|$t|cpugb" "$R_CPUGB"
                    add_res "$path|$mode|$t|rssc" "$R_RSS_C"
                    add_res "$path|$mode|$t|rsss" "$R_RSS_S"
                else
                    FAILED=1
                fi
            done
        done
        ROW_INDEX=$((ROW_INDEX + 1))
    done
}

PATHS=()

if [ "$want_loopback" = 1 ]; then
    log "path loopback: 127.0.0.1"
    NS_CLIENT=() NS_SERVER=() SERVER_ADDR=127.0.0.1
    run_path loopback
    PATHS+=(loopback)
fi

if [ "$want_ns" = 1 ] || [ "$want_shaped" = 1 ]; then
    if ! why=$(testhosts_require_root 2>&1); then
        why=${why//$'\n'/; }
        why=${why//testhosts: /}
        [ "$want_ns" = 1 ] && SKIPPED+=("ns: $why")
        [ "$want_shaped" = 1 ] && SKIPPED+=("shaped: $why")
        log "skipping the namespace rows: $why"
        want_ns=0 want_shaped=0
    fi
fi

for path in ns shaped; do
    [ "$path" = ns ] && [ "$want_ns" = 0 ] && continue
    [ "$path" = shaped ] && [ "$want_shaped" = 0 ] && continue
    rate=
    [ "$path" = shaped ] && rate=1gbit
    log "path $path: namespaces, veth${rate:+, tbf $rate}"
    # Not in $(...): the namespaces must be owned by this shell for the trap.
    if ! testhosts_up $rate 2>"$WORK/testhosts.err"; then
        why=$(cat "$WORK/testhosts.err")
        printf '%s\n' "$why" >&2
        why=${why//$'\n'/; }
        SKIPPED+=("$path: testhosts_up failed: ${why//testhosts: /}")
        FAILED=1
        continue
    fi
    NS_CLIENT=(ip netns exec "$TH_A") NS_SERVER=(ip netns exec "$TH_B") SERVER_ADDR=$TH_ADDR_B
    run_path "$path"
    testhosts_down
    PATHS+=("$path")
done

# ---------------------------------------------------------------- report

path_label() {
    case $1 in
    loopback) echo "loopback 127.0.0.1" ;;
    ns) echo "namespaces, veth unshaped" ;;
    shaped) echo "namespaces, veth tbf 1 Gbit/s" ;;
    esac
}

mode_label() {
    case $1 in
    P1) echo "-P 1" ;;
    P2) echo "-P 2" ;;
    R) echo "-R" ;;
    esac
}

report() {
    local cpu lr_ver ip_ver p m k ig lg ic lc
    cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
    lr_ver=$("$LINERATE" version 2>&1 | head -n 1) || true
    if command -v git >/dev/null 2>&1 &&
        k=$(git -C "$TOP" describe --always --dirty 2>/dev/null); then
        lr_ver="$lr_ver (git $k)"
    fi
    ip_ver=$("$IPERF3" --version 2>&1 | head -n 1) || true

    echo "# linerate vs iperf3"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- kernel: $(uname -srm)"
    echo "- CPU: ${cpu:-unknown}; nproc: $(nproc)"
    echo "- linerate: $lr_ver"
    echo "- iperf3: $ip_ver"
    echo "- command: \`$CMDLINE\`"
    echo "- each test: -t $opt_time s; repeats per cell: $opt_repeat$([ "$opt_repeat" -gt 1 ] && echo ' (median)'); the tool that goes first alternates per row and repeat"
    echo "- Gbit/s: end.sum_received.bits_per_second; CPU s/GB: user+sys of client and server" \
        "(/usr/bin/time) per 1e9 bytes of end.sum_received.bytes; RSS: max resident of each end (MB = 1024 KB)"
    for k in "${SKIPPED[@]}"; do
        echo "- skipped $k"
    done
    if has_tool lr2ip3 || has_tool ip32lr; then
        report_interop
    fi
    if has_tool linerate && has_tool lrold; then
        report_old
    fi
    has_tool iperf3 && has_tool linerate || return 0
    echo
    echo "| path | mode | iperf3 Gbit/s | linerate Gbit/s | ratio (linerate/iperf3) | iperf3 CPU s/GB | linerate CPU s/GB | ratio | iperf3 peak RSS MB (client/server) | linerate peak RSS MB (client/server) |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for p in "${PATHS[@]}"; do
        for m in P1 P2 R; do
            ig=$(median '%.6f' "$p|$m|iperf3|gbps")
            lg=$(median '%.6f' "$p|$m|linerate|gbps")
            ic=$(median '%.3f' "$p|$m|iperf3|cpugb")
            lc=$(median '%.3f' "$p|$m|linerate|cpugb")
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n' \
                "$(path_label "$p")" "$(mode_label "$m")" \
                "$(gbps_fmt "$ig")" "$(gbps_fmt "$lg")" "$(ratio "$lg" "$ig")" \
                "$ic" "$lc" "$(ratio "$lc" "$ic")" \
                "$(median '%.1f' "$p|$m|iperf3|rssc")" "$(median '%.1f' "$p|$m|iperf3|rsss")" \
                "$(median '%.1f' "$p|$m|linerate|rssc")" "$(median '%.1f' "$p|$m|linerate|rsss")"
        done
    done
}

# The interop table: each pair with linerate on one end next to iperf3 on
# both ends.
report_interop() {
    local p m t ig ic g c
    echo
    printf '| path | mode | iperf3 -> iperf3 Gbit/s | CPU s/GB |'
    for t in lr2ip3 ip32lr; do
        has_tool "$t" || continue
        printf ' %s Gbit/s | ratio | CPU s/GB | ratio |' "$(tool_label "$t")"
    done
    echo
    printf '| --- | --- | ---: | ---: |'
    for t in lr2ip3 ip32lr; do
        has_tool "$t" && printf ' ---: | ---: | ---: | ---: |'
    done
    echo
    for p in "${PATHS[@]}"; do
        for m in P1 P2 R; do
            ig=$(median '%.6f' "$p|$m|iperf3|gbps")
            ic=$(median '%.3f' "$p|$m|iperf3|cpugb")
            printf '| %s | %s | %s | %s |' "$(path_label "$p")" "$(mode_label "$m")" \
                "$(gbps_fmt "$ig")" "$ic"
            for t in lr2ip3 ip32lr; do
                has_tool "$t" || continue
                g=$(median '%.6f' "$p|$m|$t|gbps")
                c=$(median '%.3f' "$p|$m|$t|cpugb")
                printf ' %s | %s | %s | %s |' "$(gbps_fmt "$g")" "$(ratio "$g" "$ig")" \
                    "$c" "$(ratio "$c" "$ic")"
            done
            echo
        done
    done
}

# This build against LINERATE_OLD, both ends each.
report_old() {
    local p m ng og nc oc
    echo
    echo "| path | mode | linerate Gbit/s | ${LINERATE_OLD_LABEL:-LINERATE_OLD} Gbit/s | ratio (new/old) | linerate CPU s/GB | ${LINERATE_OLD_LABEL:-LINERATE_OLD} CPU s/GB | ratio (new/old) |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    for p in "${PATHS[@]}"; do
        for m in P1 P2 R; do
            ng=$(median '%.6f' "$p|$m|linerate|gbps")
            og=$(median '%.6f' "$p|$m|lrold|gbps")
            nc=$(median '%.3f' "$p|$m|linerate|cpugb")
            oc=$(median '%.3f' "$p|$m|lrold|cpugb")
            printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' \
                "$(path_label "$p")" "$(mode_label "$m")" \
                "$(gbps_fmt "$ng")" "$(gbps_fmt "$og")" "$(ratio "$ng" "$og")" \
                "$nc" "$oc" "$(ratio "$nc" "$oc")"
        done
    done
}

tool_label() {
    case $1 in
    lr2ip3) echo "linerate bench --iperf3 -> iperf3 -s" ;;
    ip32lr) echo "iperf3 -c -> linerate serve" ;;
    esac
}

if [ -n "$opt_out" ]; then
    report | tee "$opt_out"
else
    report
fi
exit "$FAILED"
