#!/usr/bin/env bash
# CI smoke run of the benchmark: builds the release raftlock and
# raftlock-bench binaries, then runs every workload against a 3-node etcd
# (installed with apt-get when missing) and a 3-node raftlock cluster with
# tiny counts (under 2 minutes once built). It proves the benchmark still
# works; it asserts nothing about speed. Results: target/raftlock-bench/smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p raftlock-cli -p raftlock-bench
target_dir=${CARGO_TARGET_DIR:-target}
exec "$target_dir/release/raftlock-bench" --smoke \
    --raftlock-bin "$target_dir/release/raftlock" \
    --work-dir "$target_dir/raftlock-bench/smoke-work" \
    --out "$target_dir/raftlock-bench/smoke" "$@"
