#!/usr/bin/env bash
# Shows `raftlock cluster status` for the cluster in DIR.
set -euo pipefail
USAGE="status.sh -d DIR [--json]"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_opts "d: json" "$@"
open_cluster
if [[ -n ${OPT_json:-} ]]; then
    run_status "$ENDPOINTS" --output json
else
    run_status "$ENDPOINTS"
fi
