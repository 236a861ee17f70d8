#!/usr/bin/env bash
# Prints the id of the current leader (one that itself reports "leader").
# Fails if there is none right now.
set -euo pipefail
USAGE="leader.sh -d DIR"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "d:" "$@"
need_python
open_cluster
leader=$(current_leader "$ENDPOINTS") || die "no leader right now (see status.sh -d $DIR)"
printf '%s\n' "$leader"
