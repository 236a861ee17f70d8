#!/usr/bin/env bash
# The Python package's checks: builds and installs it with pip as a user
# would (`pip install ./clients/python[grelmicro]`, which runs maturin and
# cargo), then ruff, mypy and pytest against real 3-node clusters of the
# workspace's `raftlock` binary. Needs only the Rust toolchain, CPython >= 3.10
# and PyPI; the venv lives in clients/python/.venv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$here"

python=${PYTHON:-python3}
# The machines come with CPython; install Debian's if one does not.
if ! command -v "$python" >/dev/null || ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-dev >/dev/null
  python=python3
fi
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# Pinned: the versions these checks were written against (cryptography
# makes an expired client certificate for a test).
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet \
  'maturin==1.16.0' 'pytest==9.2.0' 'pytest-asyncio==1.5.0' 'pytest-timeout==2.4.0' \
  'ruff==0.17.6' 'mypy==2.4.1' 'cryptography==48.0.0'

echo "== pip install ./clients/python[grelmicro]"
# The workspace's target dir, so cargo reuses what the Rust build made.
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target} \
  .venv/bin/pip install --quiet --force-reinstall "$here[grelmicro]"
(cd /tmp && "$here/.venv/bin/python" -c 'import raftlock, raftlock.asyncio, raftlock.redis, raftlock.grelmicro')

echo "== ruff"
.venv/bin/ruff format --check python tests
.venv/bin/ruff check python tests

echo "== mypy --strict"
.venv/bin/mypy python

echo "== pytest"
cargo build --quiet --bin raftlock --manifest-path "$repo/Cargo.toml"
export RAFTLOCK_BIN=${RAFTLOCK_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/raftlock}
# Against the installed package, not the source tree.
.venv/bin/pytest -q -p no:cacheprovider --rootdir "$here" "$here/tests" "$@"
