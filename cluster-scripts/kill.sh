#!/usr/bin/env bash
# Sends a signal (default KILL) to one node. After SIGKILL it waits for the
# process to be gone and removes its pid file.
set -euo pipefail
USAGE="kill.sh -d DIR -i ID [-s SIGNAL]   (SIGNAL name or number, default KILL)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "d: i: s:" "$@"
sig=${OPT_s:-KILL}
sig=${sig#SIG}
kill -l "$sig" >/dev/null 2>&1 || bad_usage "unknown signal '$sig'"
# As a name: `kill -l 9` prints KILL, `kill -l KILL` prints 9.
if is_uint "$sig"; then sig=$(kill -l "$sig"); fi
sig=${sig^^}
open_cluster
need_id
pid=$(signal_node "$ID" "$sig")
if [[ $sig == KILL ]]; then
    wait_exit "$pid" "$CLUSTER_WAIT_SECS" || die "node $ID (pid $pid) still running after SIGKILL"
    rm -f -- "$(node_dir "$ID")/pid"
fi
note "sent SIG$sig to node $ID (pid $pid)"
