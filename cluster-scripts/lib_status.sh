# shellcheck shell=bash
# Reading `raftlock cluster status` for cluster-scripts/*.sh: which node
# answers, which is leader. Sourced by lib.sh (which it relies on), never
# run.

# Endpoints $1 (comma-separated) ordered healthy first: nodes of this
# cluster running normally (or not ours to know), then paused ones, then ones
# not running. Prints "RANK ENDPOINT" lines.
rank_endpoints() {
    local ep i pid rank eps=()
    IFS=, read -r -a eps <<<"$1"
    for ep in "${eps[@]}"; do
        rank=0
        for ((i = 1; i <= N; i++)); do
            [[ $ep == "$(node_client "$i")" ]] || continue
            if ! pid=$(node_pid "$i"); then
                rank=2
            elif [[ $(proc_state "$pid") == T ]]; then
                rank=1
            fi
        done
        printf '%s %s\n' "$rank" "$ep"
    done | sort -s -n -k1,1
}

# `raftlock cluster status` against endpoints $1 (default: the whole
# cluster), with extra arguments after it, each call bounded by a timeout.
# The client moves past an endpoint it cannot connect to, but a paused node
# accepts the connection and never answers, which fails the whole call after
# seconds. So healthy endpoints go first, and if a call still fails, each
# other healthy endpoint is tried first in turn. The last error is shown only
# if every try failed. A call that printed the status but exited 1 (the
# cluster answered and is unhealthy: no quorum, no ready leader) is final:
# its output and error are shown and its exit code returned.
run_status() {
    local where=${1:-$ENDPOINTS} err rc=1 rank ep first list out
    shift || true
    local ordered=() healthy=()
    while read -r rank ep; do
        ordered+=("$ep")
        if ((rank == 0)); then healthy+=("$ep"); fi
    done < <(rank_endpoints "$where")
    ((${#healthy[@]})) || healthy=("${ordered[0]}")
    err=$(mktemp) || die "cannot create a temp file"
    for first in "${healthy[@]}"; do
        list=$first
        for ep in "${ordered[@]}"; do
            if [[ $ep != "$first" ]]; then list+=",$ep"; fi
        done
        rc=0
        out=$(timeout "$CLUSTER_STATUS_TIMEOUT" "$BIN" cluster --endpoints "$list" ${CLI_TLS[@]+"${CLI_TLS[@]}"} "$@" status 2>"$err") || rc=$?
        if ((rc == 0)) || [[ -n $out ]]; then
            [[ -z $out ]] || printf '%s\n' "$out"
            break
        fi
    done
    ((rc == 0)) || cat -- "$err" >&2
    rm -f -- "$err"
    return "$rc"
}

# The status JSON, or nothing (and failure) if no node answered.
status_json() {
    run_status "${1:-$ENDPOINTS}" --output json 2>/dev/null
}

# Runs a query on the status JSON read from stdin. Queries:
#   leader          the leader's id, only if that node itself says "leader"
#   settled         the same, and only if every member answers, none is a
#                   candidate, and all are in the leader's term
#   count           number of members
#   role ID         that member's role
#   applied ID      that member's applied index ("" if unreachable)
#   max_applied     the highest applied index of any member
#   summary         one line per member: id role term last_log applied
status_query() {
    python3 -c '
import json, sys
v = json.load(sys.stdin)
nodes = {n["id"]: n for n in v.get("nodes", [])}
q = sys.argv[1]
show = lambda x: "" if x is None else str(x)
if q == "leader":
    l = v.get("leader")
    if l is not None and nodes.get(l, {}).get("role") == "leader":
        print(l)
elif q == "settled":
    l = v.get("leader")
    lt = nodes.get(l, {}).get("term")
    if (l is not None and nodes.get(l, {}).get("role") == "leader"
            and all(n.get("role") in ("leader", "follower", "learner") and n.get("term") == lt
                    for n in nodes.values())):
        print(l)
elif q == "count":
    print(len(nodes))
elif q in ("role", "applied"):
    n = nodes.get(int(sys.argv[2]), {})
    print(show(n.get("role" if q == "role" else "applied_index")))
elif q == "max_applied":
    print(max([n.get("applied_index") or 0 for n in nodes.values()] + [0]))
elif q == "summary":
    for i, n in sorted(nodes.items()):
        print(i, n.get("role"), show(n.get("term")), show(n.get("last_log_index")), show(n.get("applied_index")))
' "$@"
}

# The current leader's id (asking endpoints $1), or failure if there is none.
# With $2 = settled, only once every member follows it (see status_query).
current_leader() {
    local json id
    json=$(status_json "$1") || return 1
    id=$(status_query "${2:-leader}" <<<"$json") || return 1
    [[ -n $id ]] || return 1
    printf '%s' "$id"
}
