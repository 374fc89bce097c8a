#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench_cipher.sh - linerate bench with each security setting side by side,
# and iperf3 as the reference, in one run, on the same hosts, printed as a
# Markdown table.
#
# usage: bench/bench_cipher.sh [-t SEC] [--repeat N]
#                              [--rows ns,shaped,board] [--out FILE]
#
#   -t SEC         seconds per test (default 10)
#   --repeat N     runs per cell; with N > 1 every cell is the median (default 1)
#   --rows LIST    paths to measure, comma separated (default all three):
#                    ns      two namespaces joined by veth, unshaped
#                    shaped  the same, tbf-shaped to 1 Gbit/s on both ends
#                    board   unshaped, but the server process and the client
#                            process are each held to 20% of one core by a
#                            cgroup v1 CPU quota (a small board)
#   --out FILE     also write the header and table to FILE
#   -h, --help     this text
#
# The variants, all `linerate bench` memory to memory except the reference:
#
#   plain    no token: neither authenticated nor encrypted
#   none     token on both ends, --cipher none (server --allow-plaintext):
#            authenticated handshake and control, data in clear
#   aes      token, --cipher aes-256-gcm
#   chacha   token, --cipher chacha20-poly1305
#   iperf3   stock iperf3 -c / -s -1
#
# Every path is measured in two modes, -P 1 and -P 2.  Within a row the five
# variants go in a rotating order (shifted by one per row and per repeat), to
# spread noise.  The server runs in namespace $TH_B (198.18.0.2), the client
# in $TH_A, both under `/usr/bin/time -f '%e %U %S %M'`:
#
#   Gbit/s     end.sum_received.bits_per_second of the tool's own -J document
#   CPU s/GB   (user+sys of client + user+sys of server) / (end.sum_received.bytes / 1e9)
#
# Each linerate document must say the expected security (end.linerate.
# authenticated and end.linerate.cipher: false/none, true/none,
# true/aes-256-gcm, true/chacha20-poly1305); a run that does not is counted
# as failed and its cells say "wrong-cipher".  The token comes from
# `linerate token`, in a mode-600 temporary file removed on exit; it is given
# with --token-file only (LINERATE_TOKEN is unset for the whole run).
#
# The board row creates cgroups $CGROOT/lr-bench-PID-srv and -cli
# (cpu.cfs_period_us 100000, cpu.cfs_quota_us 20000); each end is started by
# a small sh wrapper that writes its own pid to cgroup.procs and then execs
# `ip netns exec ... /usr/bin/time ... TOOL` (the wrapper goes first because
# `ip netns exec` mounts a fresh /sys without the cgroup hierarchies).  The
# cgroups are removed on exit, also on failure.  Without cgroup v1 "cpu" the
# row is skipped with the reason.
#
# Needs root (namespaces; the rows are skipped, with the reason, otherwise).
# Traffic goes only to the 198.18.0.x test hosts.  This is a benchmark: it
# never fails on a speed.  Exit status: 0 every run succeeded,
# 1 some run failed (its cell says "fail" or "wrong-cipher"), 2 usage error.
#
# Environment: LINERATE (default: build/linerate of this tree), IPERF3
# (default: iperf3 from PATH), CGROOT (default: /sys/fs/cgroup/cpu).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
readonly HERE TOP
readonly TIME_BIN=/usr/bin/time
readonly TIME_FMT='%e %U %S %M'
readonly CG_PERIOD=100000 CG_QUOTA=20000

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
CGROOT=${CGROOT:-/sys/fs/cgroup/cpu}
# A token in the environment would turn the "plain" variant into an
# authenticated one; every token here is given with --token-file.
unset LINERATE_TOKEN

opt_time=10
opt_repeat=1
opt_rows=ns,shaped,board
opt_out=

BENCH_NAME=bench_cipher
BENCH_SCRIPT=${BASH_SOURCE[0]}
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"
bench_parse_options "$@"
want_ns=0 want_shaped=0 want_board=0
IFS=, read -r -a _rows <<<"$opt_rows"
[ ${#_rows[@]} -gt 0 ] || die_usage "--rows is empty"
for _r in "${_rows[@]}"; do
    case $_r in
    ns) want_ns=1 ;;
    shaped) want_shaped=1 ;;
    board) want_board=1 ;;
    *) die_usage "--rows: unknown path '$_r' (ns, shaped, board)" ;;
    esac
done

# ---------------------------------------------------------------- tools

[ -x "$LINERATE" ] || { log "$LINERATE not found; build it: ninja -C $TOP/build"; exit 1; }
command -v "$IPERF3" >/dev/null 2>&1 || { log "iperf3 not found (apt-get install iperf3)"; exit 1; }
for _tool in ss timeout awk sort; do
    command -v "$_tool" >/dev/null 2>&1 || { log "'$_tool' not found"; exit 1; }
done
[ -x /bin/sh ] || { log "/bin/sh not found"; exit 1; }
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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench_cipher.XXXXXX")
TOKEN_FILE=
SERVER_PIDS=()  # wrappers of servers still running
CGROUPS=()      # cgroup directories this run created

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

# Remove the cgroups this run created.  Whatever is still inside one was
# started by this script (only it writes to these cgroups): KILL it, then
# rmdir (bounded: 50 tries, ~5 s per cgroup).
remove_cgroups() {
    local cg i pids
    for cg in "${CGROUPS[@]}"; do
        for ((i = 0; i < 50; i++)); do
            [ -d "$cg" ] || break
            pids=$(cat "$cg/cgroup.procs" 2>/dev/null) || pids=
            if [ -n "$pids" ]; then
                # shellcheck disable=SC2086  # one pid per word
                kill -KILL $pids 2>/dev/null || true
            elif rmdir "$cg" 2>/dev/null; then
                break
            fi
            sleep 0.1
        done
        [ -d "$cg" ] && log "could not remove cgroup $cg (remove it with: rmdir $cg)"
    done
    CGROUPS=()
}

# shellcheck disable=SC2317  # reached through the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    kill_servers
    testhosts_down
    remove_cgroups
    [ -n "$TOKEN_FILE" ] && rm -f "$TOKEN_FILE"
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

# ---------------------------------------------------------------- token

TOKEN_FILE=$(mktemp "${TMPDIR:-/tmp}/bench_cipher.token.XXXXXX")
chmod 600 "$TOKEN_FILE"
if ! "$LINERATE" token >"$TOKEN_FILE" 2>"$WORK/token.err" || [ ! -s "$TOKEN_FILE" ]; then
    log "'linerate token' failed:"
    sed 's/^/    /' "$WORK/token.err" >&2 || true
    exit 1
fi

# ---------------------------------------------------------------- one run

# Network namespace prefix for a command.
NS_CLIENT=()
NS_SERVER=()
SERVER_ADDR=
# Cgroup wrappers (board row only): "sh -c ... CGDIR" puts itself into CGDIR
# and execs the rest of the command line; everything it starts stays there.
# shellcheck disable=SC2016  # $$ and $1 are for the wrapper's shell
readonly CG_SCRIPT='echo $$ >"$1/cgroup.procs" || exit 125; shift; exec "$@"'
WRAP_SERVER=()
WRAP_CLIENT=()

# A TCP port with no socket at all (any state) in the server's namespace:
# BASE (the tool's default) first, else a pid-derived port in 10000-29999,
# below the kernel's ephemeral range (bounded: 64 tries).
pick_port() {
    local base=$1 i port
    for ((i = 0; i < 64; i++)); do
        if [ "$i" -eq 0 ]; then
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
    bench_wait_listen "$SERVER_ADDR" "$1" "$2" 400
}

# From a -J document: "bits_per_second bytes authenticated cipher" (the last
# two "null" when there is no end.linerate, as with iperf3).
json_result() {
    local f=$1
    if [ "$JSON" = jq ]; then
        jq -er '[.end.sum_received.bits_per_second, .end.sum_received.bytes,
                 .end.linerate.authenticated, .end.linerate.cipher]
                | if .[0] == null or .[1] == null then error("no sum_received")
                  else map(tostring) | join(" ") end' "$f" 2>/dev/null
    else
        /usr/bin/python3 - "$f" <<'EOF' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["end"]
r = e["sum_received"]
lr = e.get("linerate") or {}
def s(v):
    return "null" if v is None else ("true" if v is True else "false" if v is False else str(v))
print(r["bits_per_second"], r["bytes"], s(lr.get("authenticated")), s(lr.get("cipher")))
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

# What end.linerate must say for each variant: "authenticated cipher".
expected_security() {
    case $1 in
    plain) echo "false none" ;;
    none) echo "true none" ;;
    aes) echo "true aes-256-gcm" ;;
    chacha) echo "true chacha20-poly1305" ;;
    iperf3) echo "null null" ;;
    esac
}

# Throttling counters of a cgroup: "nr_periods nr_throttled throttled_ns".
cg_stat() {
    awk '$1 == "nr_periods" { p = $2 } $1 == "nr_throttled" { n = $2 }
         $1 == "throttled_time" { t = $2 }
         END { printf "%d %d %d\n", p, n, t }' "$1/cpu.stat" 2>/dev/null || echo "0 0 0"
}

# run_one VARIANT MODE TAG: one server + one client.  On success sets
# R_GBPS R_CPUGB and returns 0; returns 1 on failure, 3 when the run worked
# but the document does not show the expected security.
run_one() {
    local var=$1 mode=$2 tag=$3 port base spid rc=0
    local sf=$WORK/$tag.server.time cf=$WORK/$tag.client.time
    local slog=$WORK/$tag.server.log cjson=$WORK/$tag.client.json clog=$WORK/$tag.client.err
    local -a flags srv cli
    local limit=$((opt_time + 60))

    case $mode in
    P1) flags=(-P 1) ;;
    P2) flags=(-P 2) ;;
    esac
    if [ "$var" = iperf3 ]; then base=5201; else base=7350; fi
    port=$(pick_port "$base") || { log "$tag: no free port"; return 1; }
    if [ "$var" = iperf3 ]; then
        srv=("$IPERF3" -s -1 -p "$port" -B "$SERVER_ADDR")
        cli=("$IPERF3" -c "$SERVER_ADDR" -p "$port" -t "$opt_time" -J "${flags[@]}")
    else
        srv=("$LINERATE" serve --once -p "$port" -B "$SERVER_ADDR")
        cli=("$LINERATE" bench -t "$opt_time" -J -p "$port" "${flags[@]}")
        case $var in
        plain) ;;
        none)
            srv+=(--token-file "$TOKEN_FILE" --allow-plaintext)
            cli+=(--token-file "$TOKEN_FILE" --cipher none)
            ;;
        aes)
            srv+=(--token-file "$TOKEN_FILE")
            cli+=(--token-file "$TOKEN_FILE" --cipher aes-256-gcm)
            ;;
        chacha)
            srv+=(--token-file "$TOKEN_FILE")
            cli+=(--token-file "$TOKEN_FILE" --cipher chacha20-poly1305)
            ;;
        esac
        cli+=("$SERVER_ADDR")
    fi
    rm -f "$sf" "$cf"

    # Server: [cgroup wrapper ->] netns -> time -> timeout (own process
    # group, a last-resort bound) -> server.
    "${WRAP_SERVER[@]}" "${NS_SERVER[@]}" "$TIME_BIN" -f "$TIME_FMT" -o "$sf" \
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
    "${WRAP_CLIENT[@]}" "${NS_CLIENT[@]}" "$TIME_BIN" -f "$TIME_FMT" -o "$cf" \
        timeout --foreground -k 5 "$limit" "${cli[@]}" >"$cjson" 2>"$clog" </dev/null || rc=$?

    # Servers exit after their one test; give them 10 s, then stop them.
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
        [ -s "$slog" ] && { log "$tag: server output:"; sed 's/^/    /' "$slog" >&2; }
        return 1
    fi

    local res ct st bps bytes auth cipher want
    res=$(json_result "$cjson") || { log "$tag: no end.sum_received in the JSON"; return 1; }
    ct=$(time_line "$cf") || { log "$tag: no client time record"; return 1; }
    st=$(time_line "$sf") || { log "$tag: no server time record"; return 1; }
    read -r bps bytes auth cipher <<<"$res"
    want=$(expected_security "$var")

    read -r R_GBPS R_CPUGB R_CPU < <(
        awk -v bps="$bps" -v bytes="$bytes" -v ct="$ct" -v st="$st" 'BEGIN {
            split(ct, c, " "); split(st, s, " ")
            cpu = c[2] + c[3] + s[2] + s[3]
            gb = bytes / 1e9
            printf "%.6f %s %.3f\n", bps / 1e9,
                (gb > 0 ? sprintf("%.6f", cpu / gb) : "nan"), cpu
        }')
    [ "$R_CPUGB" != nan ] || { log "$tag: received 0 bytes"; return 1; }
    log "$tag: $(printf '%.3f' "$R_GBPS") Gbit/s, CPU ${R_CPU}s, security '$auth $cipher'" \
        "(client $ct | server $st)"
    if [ "$auth $cipher" != "$want" ]; then
        log "$tag: WRONG CIPHER: the JSON says authenticated=$auth cipher=$cipher," \
            "expected '$want'"
        return 3
    fi
    return 0
}

# ---------------------------------------------------------------- results

readonly VARIANTS=(iperf3 plain none aes chacha)
declare -A RES    # "path|mode|variant|metric" -> values, one per successful repeat
declare -A WRONG  # "path|mode|variant" -> 1 when some run had the wrong security
declare -A NOTE   # "path" -> extra header text (cgroup throttling)
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
    *fail* | *wrong*) echo "-" ;;
    *) awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f\n", a / b; else print "-" }' ;;
    esac
}

gbps_fmt() {
    case $1 in fail | wrong-cipher) echo "$1"; return ;; esac
    awk -v v="$1" 'BEGIN { printf (v >= 10 ? "%.2f\n" : "%.3f\n"), v }'
}

# Cell value (raw median) for PATH MODE VARIANT METRIC FMT.
cell() {
    if [ -n "${WRONG[$1|$2|$3]:-}" ]; then
        echo wrong-cipher
    else
        median "$5" "$1|$2|$3|$4"
    fi
}

ROW_INDEX=0

# Measure every mode on the current path.
run_path() {
    local path=$1 mode r i off v st
    local n=${#VARIANTS[@]}
    for mode in P1 P2; do
        for ((r = 0; r < opt_repeat; r++)); do
            off=$(((ROW_INDEX + r) % n))
            for ((i = 0; i < n; i++)); do
                v=${VARIANTS[(off + i) % n]}
                st=0
                run_one "$v" "$mode" "$path-$mode-$v-$((r + 1))" || st=$?
                case $st in
                0)
                    add_res "$path|$mode|$v|gbps" "$R_GBPS"
                    add_res "$path|$mode|$v|cpugb" "$R_CPUGB"
                    ;;
                3) WRONG[$path|$mode|$v]=1; FAILED=1 ;;
                *) FAILED=1 ;;
                esac
            done
        done
        ROW_INDEX=$((ROW_INDEX + 1))
    done
}

# Create this run's two cgroups under CGROOT, with the quota.  On failure
# sets CG_WHY to the reason, removes what was made and returns 1.
CG_SRV=
CG_CLI=
CG_WHY=
setup_cgroups() {
    local d fstype
    CG_WHY=
    if [ ! -d "$CGROOT" ]; then
        CG_WHY="cgroup v1 cpu controller not mounted ($CGROOT missing)"
        return 1
    fi
    fstype=$(stat -f -c %T "$CGROOT/" 2>/dev/null) || fstype=
    if [ "$fstype" != cgroupfs ] || [ ! -f "$CGROOT/cpu.cfs_quota_us" ] ||
        [ ! -f "$CGROOT/cpu.cfs_period_us" ]; then
        CG_WHY="$CGROOT is not a cgroup v1 hierarchy with the cpu controller (fs '${fstype:-?}' or no cpu.cfs_quota_us)"
        return 1
    fi
    CG_SRV=$CGROOT/lr-bench-$$-srv
    CG_CLI=$CGROOT/lr-bench-$$-cli
    for d in "$CG_SRV" "$CG_CLI"; do
        if [ -e "$d" ]; then
            CG_WHY="$d already exists (stale? remove it with: rmdir $d)"
        elif ! mkdir "$d" 2>/dev/null; then
            CG_WHY="cannot create $d"
        else
            CGROUPS+=("$d")
            if ! echo "$CG_PERIOD" >"$d/cpu.cfs_period_us" 2>/dev/null ||
                ! echo "$CG_QUOTA" >"$d/cpu.cfs_quota_us" 2>/dev/null; then
                CG_WHY="cannot set cpu.cfs_period_us/cpu.cfs_quota_us in $d"
            elif [ "$(cat "$d/cpu.cfs_quota_us")" != "$CG_QUOTA" ] ||
                [ "$(cat "$d/cpu.cfs_period_us")" != "$CG_PERIOD" ]; then
                CG_WHY="$d does not keep the quota $CG_QUOTA/$CG_PERIOD"
            fi
        fi
        if [ -n "$CG_WHY" ]; then
            remove_cgroups
            return 1
        fi
    done
    return 0
}

PATHS=()

if [ "$want_ns" = 1 ] || [ "$want_shaped" = 1 ] || [ "$want_board" = 1 ]; then
    if ! why=$(testhosts_require_root 2>&1); then
        why=${why//$'\n'/; }
        why=${why//testhosts: /}
        [ "$want_ns" = 1 ] && SKIPPED+=("ns: $why")
        [ "$want_shaped" = 1 ] && SKIPPED+=("shaped: $why")
        [ "$want_board" = 1 ] && SKIPPED+=("board: $why")
        log "skipping every row: $why"
        want_ns=0 want_shaped=0 want_board=0
    fi
fi

for path in ns shaped board; do
    [ "$path" = ns ] && [ "$want_ns" = 0 ] && continue
    [ "$path" = shaped ] && [ "$want_shaped" = 0 ] && continue
    [ "$path" = board ] && [ "$want_board" = 0 ] && continue
    rate=
    [ "$path" = shaped ] && rate=1gbit
    WRAP_SERVER=() WRAP_CLIENT=()
    if [ "$path" = board ]; then
        if ! setup_cgroups; then
            log "skipping the board row: $CG_WHY"
            SKIPPED+=("board: $CG_WHY")
            continue
        fi
        WRAP_SERVER=(/bin/sh -c "$CG_SCRIPT" lr-cgroup "$CG_SRV")
        WRAP_CLIENT=(/bin/sh -c "$CG_SCRIPT" lr-cgroup "$CG_CLI")
    fi
    log "path $path: namespaces, veth${rate:+, tbf $rate}$([ "$path" = board ] &&
        echo ", each end in a cgroup with cpu.cfs_quota_us $CG_QUOTA / cpu.cfs_period_us $CG_PERIOD")"
    # Not in $(...): the namespaces must be owned by this shell for the trap.
    if ! testhosts_up $rate 2>"$WORK/testhosts.err"; then
        why=$(cat "$WORK/testhosts.err")
        printf '%s\n' "$why" >&2
        why=${why//$'\n'/; }
        SKIPPED+=("$path: testhosts_up failed: ${why//testhosts: /}")
        FAILED=1
        remove_cgroups
        continue
    fi
    NS_CLIENT=(ip netns exec "$TH_A") NS_SERVER=(ip netns exec "$TH_B") SERVER_ADDR=$TH_ADDR_B
    if [ "$path" = board ]; then
        read -r sp0 sn0 st0 < <(cg_stat "$CG_SRV")
        read -r cp0 cn0 ct0 < <(cg_stat "$CG_CLI")
    fi
    run_path "$path"
    if [ "$path" = board ]; then
        read -r sp1 sn1 st1 < <(cg_stat "$CG_SRV")
        read -r cp1 cn1 ct1 < <(cg_stat "$CG_CLI")
        NOTE[board]=$(printf 'server cgroup throttled in %d of %d periods (%.1f s), client cgroup in %d of %d (%.1f s)' \
            $((sn1 - sn0)) $((sp1 - sp0)) "$(awk -v t=$((st1 - st0)) 'BEGIN { print t / 1e9 }')" \
            $((cn1 - cn0)) $((cp1 - cp0)) "$(awk -v t=$((ct1 - ct0)) 'BEGIN { print t / 1e9 }')")
        log "board: ${NOTE[board]}"
    fi
    testhosts_down
    [ "$path" = board ] && remove_cgroups
    PATHS+=("$path")
done

# ---------------------------------------------------------------- report

path_label() {
    case $1 in
    ns) echo "namespaces, veth unshaped" ;;
    shaped) echo "namespaces, veth tbf 1 Gbit/s" ;;
    board) echo "small board: veth unshaped, each end 20% of a core" ;;
    esac
}

mode_label() {
    case $1 in
    P1) echo "-P 1" ;;
    P2) echo "-P 2" ;;
    esac
}

report() {
    local cpu lr_ver ip_ver p m k v
    local -A g c
    cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
    lr_ver=$("$LINERATE" version 2>&1 | head -n 1) || true
    if command -v git >/dev/null 2>&1 &&
        k=$(git -C "$TOP" describe --always --dirty 2>/dev/null); then
        lr_ver="$lr_ver (git $k)"
    fi
    ip_ver=$("$IPERF3" --version 2>&1 | head -n 1) || true

    echo "# linerate bench: security settings side by side, iperf3 as the reference"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- kernel: $(uname -srm)"
    echo "- CPU: ${cpu:-unknown}; nproc: $(nproc)"
    echo "- linerate: $lr_ver"
    echo "- iperf3: $ip_ver"
    echo "- command: \`$CMDLINE\`"
    echo "- each test: -t $opt_time s; repeats per cell: $opt_repeat$([ "$opt_repeat" -gt 1 ] && echo ' (median)'); the order of the five variants rotates per row and repeat"
    echo "- variants: plain = no token (not authenticated, not encrypted); none = token, --cipher none" \
        "(server --allow-plaintext; data in clear); aes-256-gcm / chacha20-poly1305 = token and that cipher;" \
        "each checked against end.linerate.authenticated and end.linerate.cipher"
    echo "- Gbit/s: end.sum_received.bits_per_second; CPU s/GB: user+sys of client and server" \
        "(/usr/bin/time) per 1e9 bytes of end.sum_received.bytes"
    echo "- small board: server and client each in its own cgroup v1 cpu group," \
        "cpu.cfs_quota_us $CG_QUOTA / cpu.cfs_period_us $CG_PERIOD (20% of one core)"
    [ -n "${NOTE[board]:-}" ] && echo "- small board: ${NOTE[board]}"
    for k in "${SKIPPED[@]}"; do
        echo "- skipped $k"
    done
    echo
    echo "| path | mode | iperf3 Gbit/s | plain Gbit/s | none Gbit/s | aes-256-gcm Gbit/s | chacha20-poly1305 Gbit/s | plain CPU s/GB | none CPU s/GB | aes-256-gcm CPU s/GB | chacha20-poly1305 CPU s/GB | iperf3 CPU s/GB | aes/plain | chacha/plain |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for p in "${PATHS[@]}"; do
        for m in P1 P2; do
            for v in "${VARIANTS[@]}"; do
                g[$v]=$(cell "$p" "$m" "$v" gbps '%.6f')
                c[$v]=$(cell "$p" "$m" "$v" cpugb '%.3f')
            done
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
                "$(path_label "$p")" "$(mode_label "$m")" \
                "$(gbps_fmt "${g[iperf3]}")" "$(gbps_fmt "${g[plain]}")" "$(gbps_fmt "${g[none]}")" \
                "$(gbps_fmt "${g[aes]}")" "$(gbps_fmt "${g[chacha]}")" \
                "${c[plain]}" "${c[none]}" "${c[aes]}" "${c[chacha]}" "${c[iperf3]}" \
                "$(ratio "${g[aes]}" "${g[plain]}")" "$(ratio "${g[chacha]}" "${g[plain]}")"
        done
    done
}

if [ -n "$opt_out" ]; then
    report | tee "$opt_out"
else
    report
fi
exit "$FAILED"
