# shellcheck shell=bash
# Sourced by selftest.sh: the status page of a TLS cluster, against real
# processes. Each node asks the other members for their own status with
# the generated `Cluster` stub over TLS (its node certificate presented,
# the member's name checked); with client certificates required, every
# member's page must still show all three members with their own term
# (README, "Watching it"; docs/decisions.md, "Crates").
# Uses selftest.sh's check/eventually, BIN, ROOT, pick_base and load_env.

api_dir=$ROOT/api
trap 'api_rc=$?; "$here/stop.sh" -d "$api_dir" -t 3 >/dev/null 2>&1 || true; (exit "$api_rc"); finish' EXIT

api_base=$(pick_base) || fail "found no free base port for the status page cluster"
DIR=$api_dir
"$here/start.sh" -n 3 -d "$DIR" -b "$api_base" --tls --no-build >/dev/null || fail "start.sh --tls of the status page cluster failed"
load_env

# every_member_answers ID: node ID's /api/status lists 3 members, each
# with a role other than "unreachable" and a term.
every_member_answers() {
    local addr
    addr=$(node_client "$1")
    curl -sf --max-time 5 "http://${addr%:*}:$((${addr##*:} + 2))/api/status" | python3 -c '
import json, sys
members = json.load(sys.stdin)["members"]
ok = len(members) == 3 and all(m["role"] != "unreachable" and isinstance(m["term"], int) for m in members)
sys.exit(0 if ok else 1)'
}
for id in 1 2 3; do
    eventually "node $id's status page of the TLS cluster shows every member's own status" every_member_answers "$id"
done
check "stop.sh stops the status page cluster" "$here/stop.sh" -d "$api_dir"
