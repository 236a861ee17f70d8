#!/usr/bin/env bash
# Resumes a node paused with pause.sh (SIGCONT).
set -euo pipefail
USAGE="resume.sh -d DIR -i ID"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

signal_script CONT resumed "$@"
