#!/usr/bin/env bash
# CPU and thread wake-ups per lock+unlock pair of one system under one
# workload, without perf: runs raftlock-bench for that workload alone (one
# round) and, over 6 s of its measured window, reads the CPU time (utime +
# stime, /proc/PID/stat) of the three node processes and of the benchmark's
# own client, how busy the whole machine was (/proc/stat), and how often the
# nodes' threads were switched out (voluntary: a thread went to sleep to
# wait, so something had to wake it; involuntary: preempted), summed over
# every thread of the three nodes (/proc/PID/task/*/status).
#
#   bench/cpu.sh W2 raftlock [more raftlock-bench flags]
#
# BIN=DIR takes raftlock and raftlock-bench from DIR instead of building
# them (an A/B of two builds copied aside). Prints one line: CPU ms per
# second and per pair, nodes and client apart, and the nodes' context
# switches per pair; a second line splits the voluntary ones by thread name
# (numbers dropped, so `sled-io-3` counts as `sled-io-`).
set -euo pipefail
cd "$(dirname "$0")/.."
workload=${1:?usage: bench/cpu.sh W1..W4 raftlock|etcd [raftlock-bench flags]}
system=${2:?usage: bench/cpu.sh W1..W4 raftlock|etcd [raftlock-bench flags]}
shift 2
target_dir=${CARGO_TARGET_DIR:-target}
bin=${BIN:-}
if [ -z "$bin" ]; then
    cargo build --quiet --release -p raftlock-cli -p raftlock-bench
    bin="$target_dir/release"
fi
out="$target_dir/raftlock-bench/cpu-$workload-$system"
work="$target_dir/raftlock-bench/cpu-work"
mkdir -p "$(dirname "$out")"
"$bin/raftlock-bench" --full --only "$workload" --rounds 1 --systems "$system" \
    --raftlock-bin "$bin/raftlock" --work-dir "$work" --out "$out" "$@" \
    >"$out.log" 2>&1 &
bench=$!
# The workload's title line comes once both clusters run; the measured
# window opens after the clients connect and warm up.
for _ in $(seq 1 600); do
    grep -q "^$workload:" "$out.log" 2>/dev/null && break
    sleep 0.2
done
sleep 3
mapfile -t nodes < <(pgrep -f -- "$work/$system/")
ticks() { # utime + stime of the given pids, in clock ticks
    local sum=0 p
    for p in "$@"; do
        sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo "$sum"
}
switches() { # voluntary and involuntary context switches of every thread of the given pids
    local p
    for p in "$@"; do cat "/proc/$p/task/"*/status 2>/dev/null; done |
        awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2}
             END {print v + 0, n + 0}'
}
by_thread() { # "name voluntary" per thread of the given pids, digits dropped from names
    local p t
    for p in "$@"; do
        for t in /proc/"$p"/task/*; do
            printf '%s %s\n' "$(tr -d '0-9 ' <"$t/comm" 2>/dev/null)" \
                "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null)"
        done
    done | awk 'NF == 2 {s[$1] += $2} END {for (k in s) print k, s[k]}' | sort
}
machine() { # busy and total jiffies of all CPUs
    awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat
}
hz=$(getconf CLK_TCK)
n0=$(ticks "${nodes[@]}"); c0=$(ticks "$bench"); read -r busy0 total0 < <(machine)
read -r vol0 invol0 < <(switches "${nodes[@]}")
threads0=$(by_thread "${nodes[@]}")
sleep 6
n1=$(ticks "${nodes[@]}"); c1=$(ticks "$bench"); read -r busy1 total1 < <(machine)
read -r vol1 invol1 < <(switches "${nodes[@]}")
threads1=$(by_thread "${nodes[@]}")
wait "$bench"
pairs=$(awk -F'|' '/lock\+unlock pairs\/s/ {gsub(/ /, "", $4); gsub(/ /, "", $5);
    print ($4 != "–" ? $4 : $5); exit}' "$out/results.md")
awk -v n=$((n1 - n0)) -v c=$((c1 - c0)) -v hz="$hz" -v pairs="$pairs" \
    -v busy=$((busy1 - busy0)) -v total=$((total1 - total0)) \
    -v vol=$((vol1 - vol0)) -v invol=$((invol1 - invol0)) \
    -v w="$workload" -v s="$system" 'BEGIN {
    nodes = n * 1000 / hz / 6; client = c * 1000 / hz / 6
    printf "%s %s: %s pairs/s; CPU ms/s: nodes %.0f, client %.0f; per pair: nodes %.3f ms, client %.3f ms, node context switches %.1f voluntary + %.1f involuntary; machine %.0f%% busy\n",
        w, s, pairs, nodes, client, nodes / pairs, client / pairs, vol / 6 / pairs, invol / 6 / pairs, 100 * busy / total }'
join -a 2 -e 0 -o 0,1.2,2.2 <(echo "$threads0") <(echo "$threads1") |
    awk -v pairs="$pairs" '{d = $3 - $2; if (d > 0) printf "%s %.1f\n", $1, d / 6 / pairs}' |
    sort -k2 -rn | awk 'BEGIN {printf "  voluntary context switches per pair, by thread:"}
        {printf " %s %s;", $1, $2} END {print ""}'
