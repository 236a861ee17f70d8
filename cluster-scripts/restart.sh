#!/usr/bin/env bash
# Starts one stopped or killed node again from its data dir, with the flags
# start.sh gave it, and waits until its client port answers `cluster status`.
set -euo pipefail
USAGE="restart.sh -d DIR -i ID   (RAFTLOCK_BIN=path overrides the recorded binary)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "d: i:" "$@"
need_python
open_cluster
need_id
if pid=$(node_pid "$ID"); then
    die "node $ID is already running (pid $pid); stop it first with kill.sh -d $DIR -i $ID -s TERM"
fi
for addr in "$(node_client "$ID")" "$(node_peer "$ID")"; do
    check_port_free "${addr%:*}" "${addr##*:}"
done
launch_node "$ID"
pid=$LAUNCHED_PID
deadline=$((SECONDS + CLUSTER_WAIT_SECS))
until status_json "$(node_client "$ID")" >/dev/null; do
    if ! node_pid "$ID" >/dev/null; then
        tail -n 20 -- "$(node_dir "$ID")/log" | sed 's/^/    /' >&2
        die "node $ID exited after restart (log: $(node_dir "$ID")/log)"
    fi
    ((SECONDS < deadline)) || die "node $ID (pid $pid) did not answer on $(node_client "$ID") within ${CLUSTER_WAIT_SECS}s"
    sleep 0.5
done
note "node $ID restarted (pid $pid), answering on $(node_client "$ID")"
