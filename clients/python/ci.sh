#!/usr/bin/env bash
# The Python package's checks, on the wheel a user installs:
#   1. builds it once, as a user would: `pip wheel ./clients/python` (maturin,
#      cargo and zig: one abi3 manylinux2014 wheel), and checks its platform
#      tag with auditwheel;
#   2. with no Rust toolchain on PATH from here on: a source build stops
#      with a message naming the wheel (no toolchain download); the wheel
#      installs with `pip install --no-index`; ruff, mypy and pytest run
#      against the installed package, the test clusters served by the
#      wheel's own `raftlock` command;
#   3. the same wheel on every other CPython 3.10+ that pyenv (or PATH)
#      has: install, import, the `raftlock` command's tests, the embedded
#      node's (raftlock.Node) and its logging's.
# Needs the Rust toolchain, CPython >= 3.10 and PyPI; the venv lives in
# clients/python/.venv, the wheel in $CARGO_TARGET_DIR/python-wheel.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$here"
target=${CARGO_TARGET_DIR:-$repo/target}

python=${PYTHON:-python3}
# The machines come with CPython; install Debian's if one does not.
if ! command -v "$python" >/dev/null || ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-dev >/dev/null
  python=python3
fi
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# Pinned: the versions these checks were written against (README.md,
# "Versions"; cryptography makes an expired client certificate for a test,
# kubernetes-validate checks examples/python's StatefulSet offline, redis
# is redis-py, whose exceptions raftlock.redis's subclass).
test_tools=('pytest==9.2.0' 'pytest-asyncio==1.5.0' 'pytest-timeout==2.4.0')
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet "${test_tools[@]}" \
  'maturin==1.16.0' 'ruff==0.17.6' 'mypy==2.4.1' 'cryptography==48.0.0' 'auditwheel==6.8.2' \
  'kubernetes-validate==1.37.0' 'redis==8.1.0'

# PATH without any directory that holds cargo or rustc: a machine with no
# Rust toolchain, as the wheel's users have.
no_rust_path=
IFS=: read -ra path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
  if [ -n "$dir" ] && [ ! -x "$dir/cargo" ] && [ ! -x "$dir/rustc" ]; then
    no_rust_path=${no_rust_path:+$no_rust_path:}$dir
  fi
done
without_rust() { env PATH="$no_rust_path" "$@"; }

# The requirements of the wheel's extra $3 (from its METADATA) that apply
# to the Python of venv $1 (their markers evaluated there, by pip's own
# `packaging`), so they can come from PyPI while the wheel itself installs
# with --no-index.
extra_requirements() {
  "$1/bin/python" - "$2" "$3" <<'EOF'
import sys, zipfile
from email.parser import Parser

from pip._vendor.packaging.requirements import Requirement

wheel, extra = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    headers = Parser().parsestr(z.read(meta).decode())
for line in headers.get_all("Requires-Dist") or []:
    requirement = Requirement(line)
    if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
        print(f"{requirement.name}{requirement.specifier}")
EOF
}

echo "== [+$SECONDS s] pip wheel ./clients/python (maturin, cargo, zig)"
started=$SECONDS
dist="$target/python-wheel"
rm -rf "$dist"
CARGO_TARGET_DIR=$target .venv/bin/pip wheel --quiet --no-deps --wheel-dir "$dist" "$here"
wheels=("$dist"/raftlock-*.whl)
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "expected one wheel in $dist, found: ${wheels[*]}" >&2
  exit 1
fi
wheel=${wheels[0]}
echo "   $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, built in $((SECONDS - started)) s"

echo "== [+$SECONDS s] auditwheel show"
shown=$(.venv/bin/auditwheel show "$wheel")
echo "$shown" | sed 's/^/   /'
# The platform tag auditwheel finds the wheel consistent with is one of
# those in its file name.
accepted=$(tr -d '\n' <<<"$shown" | sed -n 's/.*consistent with the following platform tag: *"\([^"]*\)".*/\1/p')
tags=$(basename "$wheel" .whl | rev | cut -d- -f1 | rev)
if [ -z "$accepted" ] || [[ ".$tags." != *".$accepted."* ]]; then
  echo "auditwheel accepts ${accepted:-no tag}, the wheel is tagged $tags" >&2
  exit 1
fi

echo "== [+$SECONDS s] no Rust toolchain on PATH from here on"
if without_rust sh -c 'command -v cargo || command -v rustc'; then
  echo "cargo or rustc is still on PATH" >&2
  exit 1
fi

echo "== [+$SECONDS s] a source build without Rust stops and names the wheel"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if without_rust .venv/bin/pip wheel --no-deps --wheel-dir "$scratch" "$here" >"$scratch/log" 2>&1; then
  echo "pip wheel built without cargo" >&2
  exit 1
fi
if ! grep -q "pip install raftlock-.*-abi3-manylinux.*\.whl" "$scratch/log" \
  || grep -qi "installing into a temporary directory\|puccinialin" "$scratch/log"; then
  cat "$scratch/log" >&2
  echo "the failed source build did not name the wheel, or fetched Rust" >&2
  exit 1
fi
grep "needs the Rust toolchain" "$scratch/log" | sed 's/^ */   /'

# Installs the wheel into the venv $1 with --no-index, with its [grelmicro]
# extra where grelmicro's pinned versions install on that Python (their
# requirements from PyPI first); sets `imports` to the modules to import and
# `skip_grelmicro` to pytest's arguments for leaving grelmicro's tests out.
install_wheel() {
  local venv=$1 grelmicro
  mapfile -t grelmicro < <(extra_requirements "$venv" "$wheel" grelmicro)
  if "$venv/bin/pip" show --quiet raftlock 2>/dev/null; then
    "$venv/bin/pip" uninstall --quiet --yes raftlock
  fi
  imports='import raftlock, raftlock.asyncio, raftlock.redis'
  if "$venv/bin/pip" install --quiet "${grelmicro[@]}" >/dev/null 2>&1; then
    echo "   pip install --no-index $(basename "$wheel")[grelmicro]"
    without_rust "$venv/bin/pip" install --quiet --no-index "$wheel[grelmicro]"
    imports="$imports, raftlock.grelmicro"
    skip_grelmicro=()
  else
    echo "   pip install --no-index $(basename "$wheel") (${grelmicro[*]} does not install on this Python)"
    without_rust "$venv/bin/pip" install --quiet --no-index "$wheel"
    skip_grelmicro=(--ignore "$here/tests/test_grelmicro.py" --ignore "$here/tests/test_grelmicro_coordination.py"
      --ignore "$here/tests/test_grelmicro_provider.py")
  fi
  (cd /tmp && without_rust "$venv/bin/python" -c "$imports")
  without_rust "$venv/bin/raftlock" --version
}

echo "== [+$SECONDS s] install the wheel"
install_wheel "$here/.venv"

echo "== [+$SECONDS s] ruff (and examples/python, the app that embeds a node)"
without_rust .venv/bin/ruff format --check python tests build_backend "$repo/examples/python"
without_rust .venv/bin/ruff check python tests build_backend "$repo/examples/python"

echo "== [+$SECONDS s] mypy --strict"
without_rust .venv/bin/mypy python build_backend
(cd "$repo/examples/python" && without_rust "$here/.venv/bin/mypy" --strict --config-file "$here/pyproject.toml" .)

main_version=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "== [+$SECONDS s] pytest on CPython $main_version, clusters of the wheel's raftlock"
# Against the installed package, not the source tree.
without_rust env RAFTLOCK_BIN="$here/.venv/bin/raftlock" \
  .venv/bin/pytest -q -p no:cacheprovider --rootdir "$here" "${skip_grelmicro[@]}" "$here/tests" "$@"

# Each other CPython 3.10+: pyenv's newest of each minor version, else
# python3.N on PATH.
interpreter() {
  local minor=$1 found=
  if command -v pyenv >/dev/null; then
    found=$(find "$(pyenv root)/versions" -maxdepth 3 -path "*/versions/3.$minor.*/bin/python3.$minor" \
      2>/dev/null | sort -V | tail -n 1)
  fi
  [ -n "$found" ] || found=$(command -v "python3.$minor" || true)
  echo "$found"
}
for minor in 10 11 12 13; do
  [ "3.$minor" != "$main_version" ] || continue
  py=$(interpreter "$minor")
  if [ -z "$py" ]; then
    echo "== [+$SECONDS s] CPython 3.$minor: not on this machine, skipped"
    continue
  fi
  echo "== [+$SECONDS s] CPython 3.$minor ($py): install the wheel, import, the command's, the node's, logging's, the conventions' and grelmicro's tests"
  venv="$scratch/venv-3.$minor"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet "${test_tools[@]}" 'mypy==2.4.1' 'redis==8.1.0'
  install_wheel "$venv"
  # The command, the embedded node, its logging, and Python's conventions
  # (typed options, timeout=0, seconds in errors, reprs, redis-py's
  # exceptions, the pytest plugin) on every version.
  tests=("$here/tests/test_cli.py" "$here/tests/test_node.py" "$here/tests/test_logging.py"
    "$here/tests/test_grelmicro_import.py" "$here/tests/test_node_options.py"
    "$here/tests/test_conventions.py" "$here/tests/test_redis_exceptions.py"
    "$here/tests/test_testing_plugin.py")
  if [ "${#skip_grelmicro[@]}" -eq 0 ]; then
    tests+=("$here/tests/test_grelmicro.py" "$here/tests/test_grelmicro_coordination.py"
      "$here/tests/test_grelmicro_provider.py")
    if "$venv/bin/python" -c 'import grelmicro.coordination' 2>/dev/null; then
      echo "   mypy --strict raftlock/_grelmicro_{coordination,provider}.py against $("$venv/bin/pip" show grelmicro | sed -n 's/^Version: /grelmicro /p')"
      (cd "$here" && without_rust "$venv/bin/mypy" --python-version "3.$minor" \
        --follow-imports silent python/raftlock/_grelmicro_coordination.py \
        python/raftlock/_grelmicro_provider.py)
    fi
  fi
  without_rust env RAFTLOCK_BIN="$venv/bin/raftlock" \
    "$venv/bin/pytest" -q -p no:cacheprovider --rootdir "$here" "${tests[@]}"
  rm -rf "$venv"
done
