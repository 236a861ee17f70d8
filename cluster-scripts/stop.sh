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

ids=()
for ((i = 1; i <= N; i++)); do ids+=("$i"); done
stop_nodes "$grace" "${ids[@]}"
