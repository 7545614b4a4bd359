#!/usr/bin/env bash
# Installs everything the build and the tests need, idempotently:
#   scripts/setup.sh build   Debian packages and the Python venv with pyarrow
#   scripts/setup.sh test    the above plus the peers the tests compare against
# Safe to run again: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-build}"
say() { printf 'setup: %s\n' "$*" >&2; }

# --- Debian packages ---------------------------------------------------------
apt_packages=(
  build-essential cmake ninja-build pkg-config ccache git
  nlohmann-json3-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev
  libbenchmark-dev zlib1g-dev libzstd-dev libreadline-dev clang-format
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${missing[@]}"
fi

# --- Rust toolchain -----------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
  [[ -x "$HOME/.cargo/bin/cargo" ]] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || { say "cargo (Rust >= 1.94) is required: install it with rustup"; exit 1; }

# --- Python virtual environment (pyarrow provides Arrow C++) -------------------
python="${PYTHON:-python3}"
req=python/requirements-dev.txt
stamp=.venv/.timelake-requirements
if [[ ! -x .venv/bin/python ]] || ! cmp -s "$req" "$stamp"; then
  say "creating .venv with $(grep -v '^#' "$req" | tr '\n' ' ')"
  [[ -x .venv/bin/python ]] || "$python" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r "$req"
  cp "$req" "$stamp"
fi

if [[ "$what" == test ]]; then
  # Timelake 0.7, the compatibility oracle, in its own environment.
  if [[ ! -x .venv-tl07/bin/python ]] || ! .venv-tl07/bin/python -c 'import timelake' 2>/dev/null; then
    say "creating .venv-tl07 with timelake==0.7.0"
    "$python" -m venv .venv-tl07
    .venv-tl07/bin/python -m pip install -q --upgrade pip
    .venv-tl07/bin/python -m pip install -q timelake==0.7.0 pyarrow==26.0.1
  fi
fi
