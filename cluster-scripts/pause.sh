#!/usr/bin/env bash
# Freezes one node with SIGSTOP (it keeps its sockets but answers nothing).
set -euo pipefail
USAGE="pause.sh -d DIR -i ID"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

signal_script STOP paused "$@"
