#!/usr/bin/env bash
# Freezes one node with SIGSTOP (it keeps its sockets but answers nothing).
set -euo pipefail
USAGE="pause.sh -d DIR -i ID"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "d: i:" "$@"
open_cluster
need_id
pid=$(signal_node "$ID" STOP)
note "paused node $ID (pid $pid)"
