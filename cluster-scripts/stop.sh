#!/usr/bin/env bash
# Stops the nodes start.sh / restart.sh started in DIR: SIGTERM, then SIGKILL
# after a grace period. Only pids whose argv is the recorded node command are
# signalled, so a reused pid is never touched.
set -euo pipefail
USAGE="stop.sh -d DIR [-t GRACE_SECONDS]   (grace before SIGKILL, default 10)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "d: t:" "$@"
grace=${OPT_t:-10}
is_uint "$grace" || bad_usage "-t must be a whole number of seconds, not '$grace'"
[[ -n ${OPT_d:-} ]] || bad_usage "-d DIR is required"
[[ -d $OPT_d ]] || die "$OPT_d is not a directory"
DIR=$(cd -- "$OPT_d" && pwd)
read_env

declare -A pids=()
for ((i = 1; i <= N; i++)); do
    d=$(node_dir "$i")
    [[ -f $d/pid ]] || continue
    if pid=$(node_pid "$i"); then
        kill -s TERM "$pid" 2>/dev/null || true
        # A paused node only acts on SIGTERM once it runs again.
        kill -s CONT "$pid" 2>/dev/null || true
        pids[$i]=$pid
    else
        note "node $i: pid file is stale (process gone or not ours); removing it"
        rm -f -- "$d/pid"
    fi
done

deadline=$((SECONDS + grace))
for i in "${!pids[@]}"; do
    pid=${pids[$i]}
    left=$((deadline - SECONDS))
    if wait_exit "$pid" $((left > 0 ? left : 0)); then
        note "node $i (pid $pid) stopped"
    elif pid_matches "$pid" "$(node_dir "$i")/cmdline"; then
        note "node $i (pid $pid) still running after ${grace}s; sending SIGKILL"
        kill -s KILL "$pid" 2>/dev/null || true
        wait_exit "$pid" 5 || die "node $i (pid $pid) survived SIGKILL"
    fi
    rm -f -- "$(node_dir "$i")/pid"
done
((${#pids[@]})) || note "no running nodes in $DIR"
