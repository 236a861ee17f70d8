# Sourced by selftest.sh: clients get past a hung node, as the README and
# docs/operations.md ("Clients: endpoints and failover") say, typed as
# written against real processes:
#  - node 2 paused with pause.sh (SIGSTOP: its port still accepts) and
#    listed first: `raftlock lock NAME --endpoints n2,n1,n3 -- true`
#    succeeds, again and again;
#  - `--dial-timeout` and `RAFTLOCK_DIAL_TIMEOUT` are taken, a value that
#    is no duration is refused.
# Uses selftest.sh's check/fails_with, pick_base, BIN and ROOT.

fo_dir=$ROOT/failover
fo_base=$(pick_base)
[[ -n $fo_base ]] || fail "found no free base port for the failover cluster"
fo_out=$("$here/start.sh" -n 3 -d "$fo_dir" -b "$fo_base" --no-build) || fail "start.sh for the failover cluster failed"
fo_endpoints=${fo_out##*$'\n'}
fo_endpoints=${fo_endpoints#ENDPOINTS=}
IFS=, read -r fo_n1 fo_n2 fo_n3 <<<"$fo_endpoints"
fo_list="$fo_n2,$fo_n1,$fo_n3"

check "pause.sh pauses node 2 (SIGSTOP)" "$here/pause.sh" -d "$fo_dir" -i 2
for fo_try in 1 2 3; do
    check "raftlock lock gets past paused node 2 listed first (call $fo_try)" \
        "$BIN" lock failover/e --endpoints "$fo_list" -- true
done
check "raftlock lock --dial-timeout 300ms gets past it too" \
    "$BIN" lock failover/e --dial-timeout 300ms --endpoints "$fo_list" -- true
check "RAFTLOCK_DIAL_TIMEOUT=2s is taken" \
    env RAFTLOCK_DIAL_TIMEOUT=2s "$BIN" lock failover/e --endpoints "$fo_list" -- true
check "a --dial-timeout that is no duration is refused" \
    fails_with "dial-timeout" "$BIN" lock failover/e --dial-timeout soon --endpoints "$fo_list" -- true
check "resume.sh resumes node 2" "$here/resume.sh" -d "$fo_dir" -i 2
check "stop.sh stops the failover cluster" "$here/stop.sh" -d "$fo_dir"
