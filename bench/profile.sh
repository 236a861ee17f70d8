#!/usr/bin/env bash
# Profiles one workload on one system: runs raftlock-bench for that
# workload alone (one round), and while it runs records, per node process,
# CPU time and syscall counts (`perf stat`, software counters and syscall
# tracepoints, which work where hardware counters do not) and a flat CPU
# profile of every node (`perf record -e cpu-clock`).
#
#   bench/profile.sh W2 raftlock [more raftlock-bench flags]
#
# Builds the `profiling` profile (release with line tables, which the
# shipped release binary does not carry) and needs perf (Debian:
# linux-perf). Output: target/raftlock-bench/profile-<W>-<system>/
#   stat-node<i>.txt   perf stat of node i
#   perf.data, report.txt  the profile and `perf report` by process and symbol
#   results.*          the benchmark's own results of that round
set -euo pipefail
cd "$(dirname "$0")/.."
workload=${1:?usage: bench/profile.sh W1..W7 raftlock|etcd [raftlock-bench flags]}
system=${2:?usage: bench/profile.sh W1..W7 raftlock|etcd [raftlock-bench flags]}
shift 2
command -v perf >/dev/null || { echo "error: perf not found (apt-get install linux-perf)" >&2; exit 1; }
target_dir=${CARGO_TARGET_DIR:-target}
cargo build --profile profiling -p raftlock-cli -p raftlock-bench
out="$target_dir/raftlock-bench/profile-$workload-$system"
work="$target_dir/raftlock-bench/profile-work"
rm -rf "$out"
mkdir -p "$out"
events=task-clock,context-switches,syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync,syscalls:sys_enter_sync_file_range,syscalls:sys_enter_pwrite64,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait

# The profiling build of raftlock, unless the caller names another binary.
bin_flag=(--raftlock-bin "$target_dir/profiling/raftlock")
[[ " $* " == *" --raftlock-bin "* ]] && bin_flag=()
"$target_dir/profiling/raftlock-bench" --full --only "$workload" --rounds 1 --systems "$system" \
    "${bin_flag[@]}" --work-dir "$work" --out "$out" "$@" &
bench=$!

# The node processes are the ones whose command line names the work dir.
pattern="$work/$system"
pids=()
for _ in $(seq 1 300); do
    mapfile -t pids < <(pgrep -f -- "$pattern" || true)
    if ((${#pids[@]} >= 3)); then break; fi
    sleep 0.1
done
((${#pids[@]} >= 3)) || { echo "error: $system nodes did not start" >&2; wait "$bench"; exit 1; }
sleep 2 # let the cluster settle before recording
perfs=()
i=0
for pid in "${pids[@]}"; do
    i=$((i + 1))
    perf stat -e "$events" -p "$pid" -o "$out/stat-node$i.txt" &
    perfs+=($!)
done
perf record -q -F 499 -e cpu-clock -p "$(IFS=,; echo "${pids[*]}")" -o "$out/perf.data" 2>/dev/null &
perfs+=($!)
status=0
wait "$bench" || status=$?
for p in "${perfs[@]}"; do kill -INT "$p" 2>/dev/null || true; done
for p in "${perfs[@]}"; do wait "$p" 2>/dev/null || true; done
perf report -i "$out/perf.data" --no-children --sort comm,dso,symbol -F overhead,comm,dso,sym --stdio 2>/dev/null |
    grep -v '^$' | head -150 >"$out/report.txt" || true
echo "profile of $workload on $system in $out" >&2
exit "$status"
