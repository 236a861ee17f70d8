# Sourced by selftest.sh: the README's operator commands, typed as written,
# against real processes.
#  - Membership: 3 -> 5 -> 3 voters with `serve --join`, `cluster
#    add-learner`, `cluster promote` and `cluster remove`, while a client
#    takes a lock over and over; the refusals of wrong addresses and of a
#    learner that is down.
#  - Backup and restore: `snapshot save`, `snapshot restore` per member,
#    and each node started with exactly the command restore printed.
#  - A node started on an older copy of its data dir is refused and says
#    how to recover; put back, its newest dir starts.
# Uses selftest.sh's check/eventually/fails_with, BIN and ROOT.

# A `raftlock` on PATH, as a user who installed it has.
mkdir -p "$ROOT/bin"
ln -sf "$BIN" "$ROOT/bin/raftlock"
export PATH="$ROOT/bin:$PATH"

hand_dir=$ROOT/hand
mkdir -p "$hand_dir"

voters_are() { [[ $(json | status_voters) == "$1" ]]; }
status_voters() {
    python3 -c '
import json, sys
v = json.load(sys.stdin)
print(",".join(str(n["id"]) for n in v["nodes"] if n["voter"]))'
}

# serve_by_hand ID ARGS...: `raftlock serve --id ID ARGS...` in the
# background, logging to hand/ID.log; its pid in hand_pid.
serve_by_hand() {
    local id=$1
    shift
    (cd "$hand_dir" && exec raftlock serve --id "$id" "$@" </dev/null >>"$hand_dir/$id.log" 2>&1) &
    hand_pid=$!
    hand_pids+=("$hand_pid")
    # As a user would: add it once it says it serves.
    local t
    for ((t = 0; t < 100; t++)); do
        grep -q "serving clients" "$hand_dir/$id.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "node $id did not start (see $hand_dir/$id.log)"
}

# The fence of every `raftlock lock` a loop takes until $2 exists, one per
# line in $1 ("FAIL rc" for a call that failed).
lock_loop() {
    local out=$1 stop=$2 fence rc
    while [[ ! -e $stop ]]; do
        if fence=$(raftlock lock members/load --ttl 5s -- sh -c 'echo "$RAFTLOCK_FENCE"' 2>>"$out.err"); then
            printf '%s\n' "$fence" >>"$out"
        else
            rc=$?
            printf 'FAIL %s\n' "$rc" >>"$out"
        fi
    done
}

fences_ok() {
    # Every call succeeded, at least $2 of them, each fence above the last.
    python3 - "$1" "$2" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
fails = [l for l in lines if not l.isdigit()]
fences = [int(l) for l in lines if l.isdigit()]
if fails:
    # What the failed calls said, for the log.
    try:
        print(open(sys.argv[1] + ".err").read()[-4000:], file=sys.stderr)
    except OSError:
        pass
ok = not fails and len(fences) >= int(sys.argv[2]) and all(a < b for a, b in zip(fences, fences[1:]))
print(f"{len(fences)} locks, {len(fails)} failed, increasing: {all(a < b for a, b in zip(fences, fences[1:]))}")
sys.exit(0 if ok else 1)
EOF
}

# ---- membership: 3 -> 5 -> 3 through the README's commands, under load
m_base=$(pick_base 7)
[[ -n $m_base ]] || die "found no free base port for the membership cluster"
"$here/start.sh" -n 3 -d "$ROOT/members" -b "$m_base" --no-build >/dev/null || fail "start.sh for the membership cluster failed"
DIR=$ROOT/members
load_env
export RAFTLOCK_ENDPOINTS=$ENDPOINTS
# Operator calls send the cluster's admin credential, derived from its join
# token (docs/security.md, "Operator calls"): as an operator on a member's
# host gives it.
admin=(--join-token-file "$DIR/join-token")
client_of() { printf '127.0.0.1:%s' $((m_base + 10 * $1 + 1)); }
peer_of() { printf '127.0.0.1:%s' $((m_base + 10 * $1 + 2)); }

rm -f "$hand_dir/stop-load"
lock_loop "$hand_dir/fences" "$hand_dir/stop-load" &
load_pid=$!

# Node 4 as the README starts it: --join with the cluster's token file.
serve_by_hand 4 --data-dir n4 --client-addr "$(client_of 4)" --peer-addr "$(peer_of 4)" --join \
    --join-token-file "$DIR/join-token"
pid_4=$hand_pid
check "cluster add-learner 4 (a node started with --join)" raftlock cluster add-learner 4 "$(peer_of 4)" "$(client_of 4)" "${admin[@]}"
check "an operator call without the admin credential is refused" \
    fails_with "permission denied.*--data-dir" raftlock cluster promote 4
check "cluster promote 4" raftlock cluster promote 4 "${admin[@]}"
# Node 5 without knowing the token: refused at start; add-learner prints
# the command that starts it, naming a token file (never the token), and
# that command works with the cluster's token file.
check "serve --join without a join token refuses to start" \
    fails_with "authenticates its peers" timeout 20 raftlock serve --id 5 --data-dir "$hand_dir/n5" \
    --client-addr "$(client_of 5)" --peer-addr "$(peer_of 5)" --join
check "the refused node wrote nothing" test ! -e "$hand_dir/n5"
if printed=$(raftlock cluster add-learner 5 "$(peer_of 5)" "$(client_of 5)" "${admin[@]}" 2>&1); then
    fail "add-learner of a node that is not running succeeded"
fi
start5=$(sed -n 's/.*start node 5 first (`\(raftlock serve [^`]*\)`.*/\1/p' <<<"$printed")
check "add-learner prints the command that starts node 5 with a token file" grep -q -- "--join-token-file FILE" <<<"$start5"
no_token_in() { ! grep -q -- "rlj1-\|$(sed 's/^rlj1-//' "$DIR/join-token")" <<<"$1"; }
check "add-learner's answer carries no secret" no_token_in "$printed"
start5=${start5/FILE/$DIR/join-token}
read -r -a start5_argv <<<"${start5#raftlock serve --id 5 }"
serve_by_hand 5 --data-dir n5 "${start5_argv[@]}"
pid_5=$hand_pid
check "cluster add-learner 5 (started with the printed command)" raftlock cluster add-learner 5 "$(peer_of 5)" "$(client_of 5)" "${admin[@]}"
check "cluster promote 5" raftlock cluster promote 5 "${admin[@]}"
eventually "status shows 5 voters" voters_are 1,2,3,4,5
check "joined node 4 still runs" kill -0 "$pid_4"
check "joined node 4 never thought itself removed" eval "! grep -q 'removed from the cluster' '$hand_dir/4.log'"

# Refusals: what answers at the addresses given must be that node.
serve_by_hand 6 --data-dir n6 --client-addr "$(client_of 6)" --peer-addr "$(peer_of 6)" --join \
    --join-token-file "$DIR/join-token"
pid_6=$hand_pid
check "add-learner with the two addresses swapped is refused" \
    fails_with "is it a client port" raftlock cluster add-learner 6 "$(client_of 6)" "$(peer_of 6)" "${admin[@]}"
check "add-learner of an address where nothing runs is refused" \
    fails_with "no raftlock node answers at peer address $(peer_of 7)" raftlock cluster add-learner 7 "$(peer_of 7)" "$(client_of 7)" "${admin[@]}"
check "add-learner under another node's id is refused" \
    fails_with "is node 6, not node 7" raftlock cluster add-learner 7 "$(peer_of 6)" "$(client_of 6)" "${admin[@]}"
check "add-learner with another client address is refused" \
    fails_with "serves clients at $(client_of 6)" raftlock cluster add-learner 6 "$(peer_of 6)" "$(client_of 7)" "${admin[@]}"
check "cluster add-learner 6" raftlock cluster add-learner 6 "$(peer_of 6)" "$(client_of 6)" "${admin[@]}"
{ kill -9 "$pid_6" && wait "$pid_6"; } 2>/dev/null || true
sleep 4 # past the 3 s a learner may go without answering the leader
check "promote of a learner that is down is refused" \
    fails_with "looks down\|has not answered the leader" raftlock cluster promote 6 "${admin[@]}"
check "cluster remove 6 (the dead learner)" raftlock cluster remove 6 "${admin[@]}"
check "promote of a node that is not a member is refused" fails_with "not a member" raftlock cluster promote 6 "${admin[@]}"

# Back to 3: remove a joined node and an original one.
check "cluster remove 4" raftlock cluster remove 4 "${admin[@]}"
check "cluster remove 1" raftlock cluster remove 1 "${admin[@]}"
eventually "status shows voters 2, 3, 5" voters_are 2,3,5
check "removed node 4 exits 0" wait "$pid_4"
check "node 4 says it was removed" grep -q "removed from the cluster" "$hand_dir/4.log"
eventually "removed node 1 exits" eval "! node_pid 1 >/dev/null"
check "node 1 says it was removed" grep -q "removed from the cluster" "$(node_dir 1)/log"
touch "$hand_dir/stop-load"
wait "$load_pid"
load_pid=''
check "every lock taken during the changes succeeded, fences increasing ($(fences_ok "$hand_dir/fences" 10))" \
    fences_ok "$hand_dir/fences" 10

# ---- backup and restore: run what `snapshot restore` prints
lease=$(raftlock lease grant 300s --output json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') ||
    fail "lease grant on the membership cluster failed"
# A lock held while the backup is taken.
raftlock lock backup/held --ttl 300s -- sh -c 'echo "$RAFTLOCK_FENCE" >"$0"; exec sleep 600' "$hand_dir/held-fence" &
holder_pid=$!
hand_pids+=("$holder_pid")
eventually "a lock is held for the backup" test -s "$hand_dir/held-fence"
check "snapshot save" raftlock snapshot save "$hand_dir/cluster.backup" "${admin[@]}"
kill "$holder_pid"
wait "$holder_pid" 2>/dev/null || true
check "snapshot status names the backup's index" grep -q "backup at index" <(raftlock snapshot status "$hand_dir/cluster.backup")
highest=$(raftlock snapshot status "$hand_dir/cluster.backup" --output json | python3 -c 'import json,sys; print(json.load(sys.stdin)["highest_fence"])')
# The old cluster goes on granting after the backup, as one that is later
# lost does; nobody reads how far it got (no --bump-index below).
after_backup=0
for i in $(seq 1 20); do
    f=$(raftlock lock "after-backup/$((i % 4))" --ttl 5s -- sh -c 'echo "$RAFTLOCK_FENCE"') ||
        fail "lock after the backup failed"
    if ((f > after_backup)); then after_backup=$f; fi
done
check "the old cluster granted fences after the backup ($after_backup > $highest)" test "$after_backup" -gt "$highest"
"$here/stop.sh" -d "$DIR" -t 5 >/dev/null || fail "stop.sh of the membership cluster failed"
kill "$pid_5" 2>/dev/null || true
wait "$pid_5" 2>/dev/null || true

r_base=$(pick_base 3)
[[ -n $r_base ]] || die "found no free base port for the restored cluster"
r_cluster=""
for id in 1 2 3; do
    r_cluster+="${r_cluster:+,}$id=127.0.0.1:$((r_base + 10 * id + 2))/127.0.0.1:$((r_base + 10 * id + 1))"
done
r_endpoints=127.0.0.1:$((r_base + 11)),127.0.0.1:$((r_base + 21)),127.0.0.1:$((r_base + 31))
raftlock certs create-join-token --out "$hand_dir/restored-token" >/dev/null
for id in 1 2 3; do
    printed=$(cd "$hand_dir" && raftlock snapshot restore cluster.backup --id "$id" --data-dir "restored/n$id" \
        --initial-cluster "$r_cluster" --join-token-file restored-token) ||
        fail "snapshot restore of node $id failed"
    cmd=$(sed -n 's/.*start it with `\(raftlock serve [^`]*\)`.*/\1/p' <<<"$printed")
    check "snapshot restore of node $id prints a serve command with its own addresses" \
        grep -q -- "--client-addr 127.0.0.1:$((r_base + 10 * id + 1)) --peer-addr 127.0.0.1:$((r_base + 10 * id + 2))" <<<"$cmd"
    restored_cmd[$id]=$cmd
    (cd "$hand_dir" && eval "exec $cmd" </dev/null >>"$hand_dir/restored-$id.log" 2>&1) &
    restored_pid[$id]=$!
    hand_pids+=("$!")
done
export RAFTLOCK_ENDPOINTS=$r_endpoints
restored_leader() { [[ -n $(raftlock cluster status --output json 2>/dev/null | status_query leader) ]]; }
eventually "the cluster started with the printed commands elects a leader" restored_leader
check "the restored cluster has the backup's lease $lease" grep -q "$lease" <(raftlock lease list)
held_fence=$(cat "$hand_dir/held-fence")
check "the lock held at the backup is held again, with its fence $held_fence" \
    grep -q "$held_fence" <(raftlock locks describe backup/held)
check "the backup's highest fence is that lock's" test "$highest" = "$held_fence"
new_fence=$(raftlock lock restored/check --ttl 5s -- sh -c 'echo "$RAFTLOCK_FENCE"') || fail "lock on the restored cluster failed"
check "a fence of the restored cluster ($new_fence) is above the backup's highest ($highest)" test "$new_fence" -gt "$highest"
for i in 0 1 2 3; do
    f=$(raftlock lock "after-backup/$i" --ttl 5s -- sh -c 'echo "$RAFTLOCK_FENCE"') || fail "lock after-backup/$i on the restored cluster failed"
    check "after-backup/$i's next fence ($f) is above every fence the old cluster granted after the backup ($after_backup)" \
        test "$f" -gt "$after_backup"
done

# ---- an older copy of a node's data dir is refused at start
# Node 3 stopped, its dir copied, run on, stopped again, and the copy put
# back: the other members saw a later start of node 3 than the copy has.
start_restored() { # start_restored ID: the command restore printed, logged to restored-ID.log
    (cd "$hand_dir" && eval "exec ${restored_cmd[$1]}" </dev/null >>"$hand_dir/restored-$1.log" 2>&1) &
    restored_pid[$1]=$!
    hand_pids+=("$!")
}
stop_restored() {
    kill -KILL "${restored_pid[$1]}" 2>/dev/null || true
    wait "${restored_pid[$1]}" 2>/dev/null || true
}
n3=$hand_dir/restored/n3
stop_restored 3
cp -a "$n3" "$n3.old"
start_restored 3
for i in 1 2 3 4 5; do
    raftlock lock "rollback/$i" --ttl 5s -- true || fail "lock rollback/$i failed"
done
node3_applied() { # node 3 answers and applied what any member applied
    local s a
    s=$(raftlock cluster status --output json 2>/dev/null) || return 1
    a=$(status_query applied 3 <<<"$s")
    [[ -n $a && $a -ge $(status_query max_applied <<<"$s") ]]
}
eventually "node 3 caught up after its restart" node3_applied
stop_restored 3
mv "$n3" "$n3.newer"
mv "$n3.old" "$n3"
: >"$hand_dir/restored-3.log"
start_restored 3
rc=0
wait "${restored_pid[3]}" || rc=$?
check "node 3 started on the older copy of its dir exits non-zero (rc $rc)" test "$rc" -ne 0
check "and says its dir is older than what the cluster saw, naming the recovery" \
    grep -q "is older than what the cluster saw from node 3.*raftlock cluster remove 3" "$hand_dir/restored-3.log"
rm -rf "$n3"
mv "$n3.newer" "$n3"
start_restored 3
eventually "node 3 started on its newest dir serves again" node3_applied

DIR=$ROOT
unset RAFTLOCK_ENDPOINTS
for pid in "${hand_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
for pid in "${hand_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
hand_pids=()
