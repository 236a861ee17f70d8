#!/usr/bin/env bash
# Resumes a node paused with pause.sh (SIGCONT).
set -euo pipefail
USAGE="resume.sh -d DIR -i ID"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "d: i:" "$@"
open_cluster
need_id
pid=$(signal_node "$ID" CONT)
note "resumed node $ID (pid $pid)"
