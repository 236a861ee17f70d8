#!/usr/bin/env bash
# Types the README's first command as a newcomer does, in the repository's
# top directory: `cargo run --release -- serve`, then checks that it is a
# ready one-node cluster on 127.0.0.1:7379 (`raftlock endpoint health`
# with no flags) and stops it with Ctrl-C (SIGINT). Run by .ci/run after
# the release build. Its data goes to ./raftlock-data, as the README says;
# an existing ./raftlock-data (someone's own node) is moved aside and put
# back.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "readme_first_command: $*" >&2; exit 1; }

aside=""
if [ -e raftlock-data ]; then
  aside=$(mktemp -d "$PWD/raftlock-data.aside.XXXXXX")
  mv raftlock-data "$aside/"
fi
log=$(mktemp)
cleanup() {
  [ -n "${pid:-}" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf raftlock-data
  if [ -n "$aside" ]; then mv "$aside/raftlock-data" . && rmdir "$aside"; fi
  rm -f "$log"
}
trap cleanup EXIT

cargo build --release --bin raftlock -q
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/raftlock

cargo run --release -q -- serve >"$log" 2>&1 &
pid=$!
healthy=""
for _ in $(seq 1 120); do
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "cargo run --release -- serve exited"; }
  if "$bin" endpoint health >/dev/null 2>&1; then healthy=yes; break; fi
  sleep 0.5
done
[ -n "$healthy" ] || { cat "$log" >&2; fail "no healthy node on 127.0.0.1:7379 after 60 s"; }
"$bin" endpoint health
[ -d raftlock-data ] || fail "no ./raftlock-data"
kill -INT "$pid"
wait "$pid" || fail "serve exited non-zero after Ctrl-C: $(tail -3 "$log")"
pid=""
echo "readme_first_command: ok (a ready one-node cluster on 127.0.0.1:7379, stopped by Ctrl-C)"
