# shellcheck shell=bash
# Sourced by selftest.sh: health tells the truth, against real processes.
#  - `raftlock cluster status` and `raftlock endpoint health` (with
#    --cluster) pass on a healthy 3-node cluster, and so does the docker
#    compose healthcheck's command, as compose.yaml types it (its endpoint
#    pointed at a node here).
#  - With 2 of the 3 nodes paused (SIGSTOP: they keep their sockets and
#    answer nothing), each of them exits non-zero within a bound and says
#    what is wrong (no quorum; the node cannot serve a linearizable read).
#  - Resumed, all pass again.
# Uses selftest.sh's check/eventually/fails_with, BIN, ROOT and pick_base.

health_dir=$ROOT/health
# A failed check leaves paused nodes behind: stop them (stop.sh resumes
# them first) before selftest.sh's own clean-up.
trap 'health_rc=$?; "$here/stop.sh" -d "$health_dir" -t 3 >/dev/null 2>&1 || true; (exit "$health_rc"); finish' EXIT

health_base=$(pick_base) || fail "found no free base port for the health cluster"
DIR=$health_dir
"$here/start.sh" -n 3 -d "$DIR" -b "$health_base" --no-build >/dev/null || fail "start.sh of the health cluster failed"
load_env

# The healthcheck of cluster-scripts/docker/compose.yaml, with its
# endpoint (127.0.0.1:7379 inside the container) pointed at node $1.
compose_healthcheck() {
    local cmd
    cmd=$(python3 - "$here/docker/compose.yaml" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
test = json.loads(re.search(r'^\s*test:\s*(\[.*\])\s*$', text, re.M).group(1))
assert test[0] == "CMD" and test[1] == "raftlock", test
print("\n".join(test[2:]))
EOF
    ) || return 1
    local args=()
    mapfile -t args <<<"$cmd"
    args=("${args[@]/127.0.0.1:7379/$(node_client "$1")}")
    timeout 20 "$BIN" "${args[@]}"
}

healthy_status() { timeout 20 "$BIN" cluster status --endpoints "$ENDPOINTS" >/dev/null 2>&1; }
eventually "cluster status exits 0 on a healthy cluster" healthy_status
check "endpoint health --cluster exits 0 and prints one healthy line per member" \
    eval '[ "$(timeout 20 "$BIN" endpoint health --cluster --endpoints "$ENDPOINTS" | grep -c " is healthy: ")" = 3 ]'
check "the compose healthcheck's command passes on a healthy node" eval 'compose_healthcheck 1 >/dev/null'

health_leader=$(current_leader "$ENDPOINTS") || fail "no leader in the health cluster"
paused=()
for ((i = 1; i <= 3 && ${#paused[@]} < 2; i++)); do
    [[ $i == "$health_leader" ]] || paused+=("$i")
done
for i in "${paused[@]}"; do
    "$here/pause.sh" -d "$DIR" -i "$i" >/dev/null 2>&1 || fail "pause.sh -i $i failed"
done
# Bounded: a paused node accepts connections and never answers.
check "with 2 of 3 nodes paused, cluster status exits non-zero saying no quorum" \
    fails_with "no quorum: 1 of 3 voters answer" timeout 20 "$BIN" cluster status --endpoints "$ENDPOINTS"
check "with 2 of 3 nodes paused, endpoint health exits non-zero with an unhealthy line per endpoint" \
    fails_with "unhealthy cluster: 3 of 3 endpoints" timeout 20 "$BIN" endpoint health --endpoints "$ENDPOINTS" --command-timeout 3s
check "with 2 of 3 nodes paused, the compose healthcheck fails on the node still running" \
    fails_with "is unhealthy" compose_healthcheck "$health_leader"
for i in "${paused[@]}"; do
    "$here/resume.sh" -d "$DIR" -i "$i" >/dev/null 2>&1 || fail "resume.sh -i $i failed"
done
eventually "resumed, cluster status exits 0 again" healthy_status
eventually "resumed, the compose healthcheck passes on every node" \
    eval 'compose_healthcheck 1 >/dev/null 2>&1 && compose_healthcheck 2 >/dev/null 2>&1 && compose_healthcheck 3 >/dev/null 2>&1'
check "stop.sh stops the health cluster" "$here/stop.sh" -d "$DIR" -t 5

DIR=$ROOT
trap finish EXIT
