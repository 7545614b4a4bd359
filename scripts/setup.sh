#!/usr/bin/env bash
# Installs everything the build and the tests need, idempotently:
#   scripts/setup.sh build   Debian packages and the Python venv with pyarrow
#   scripts/setup.sh test    the above plus the peers the tests compare against
#   scripts/setup.sh fuzz    the build's plus clang and its libFuzzer/sanitizer runtime
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
  libcpp-httplib-dev
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

# --- versitygw: the S3-compatible server of the tests (scripts/s3server.py) -------
# Built from its Go module into ~/.cache/timelake/go/bin; a stamp records the version.
versitygw_version=v1.8.0
install_versitygw() {
  local gohome="$HOME/.cache/timelake/go"
  local stamp="$gohome/bin/.versitygw-version"
  if [[ -x "$gohome/bin/versitygw" ]] && [[ "$(cat "$stamp" 2>/dev/null)" == "$versitygw_version" ]]; then
    return
  fi
  local go_cmd
  go_cmd="$(command -v go || echo /usr/local/go/bin/go)"
  [[ -x "$go_cmd" ]] || { say "go (>= 1.25) is required to build versitygw"; exit 1; }
  say "building versitygw $versitygw_version into $gohome/bin"
  GOBIN="$gohome/bin" GOPATH="$gohome/path" GOMODCACHE="$gohome/mod" GOCACHE="$gohome/cache" \
    GOFLAGS="-modcacherw -buildvcs=false" \
    "$go_cmd" install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
  echo "$versitygw_version" >"$stamp"
}

if [[ "$what" == test ]]; then
  install_versitygw

  # Timelake 0.7, the compatibility oracle, in its own environment.
  if [[ ! -x .venv-tl07/bin/python ]] || ! .venv-tl07/bin/python -c 'import timelake' 2>/dev/null; then
    say "creating .venv-tl07 with timelake==0.7.0"
    "$python" -m venv .venv-tl07
    .venv-tl07/bin/python -m pip install -q --upgrade pip
    .venv-tl07/bin/python -m pip install -q timelake==0.7.0 pyarrow==26.0.1
  fi

  # Spark for tests/engines: PySpark in .venv, Java 17 and Maven from Debian,
  # and Iceberg's Spark runtime jar from Maven Central into
  # ~/.cache/timelake/jars (the tests load it from there, no other network).
  pyspark_version=3.5.9
  iceberg_spark_version=1.10.2
  installed_deb() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
  spark_debs=()
  for p in openjdk-17-jre-headless maven; do installed_deb "$p" || spark_debs+=("$p"); done
  if ((${#spark_debs[@]})); then
    say "installing Debian packages: ${spark_debs[*]}"
    sudo_cmd=""
    [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${spark_debs[@]}"
  fi
  if ! .venv/bin/python -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$pyspark_version')" \
      2>/dev/null; then
    say "installing pyspark==$pyspark_version into .venv"
    .venv/bin/python -m pip install -q "pyspark==$pyspark_version"
  fi
  jars="$HOME/.cache/timelake/jars"
  jar="iceberg-spark-runtime-3.5_2.12-$iceberg_spark_version.jar"
  if [[ ! -s "$jars/$jar" ]]; then
    say "fetching org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:$iceberg_spark_version into $jars"
    mkdir -p "$jars"
    mvn -B -q dependency:copy \
      -Dartifact="org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:$iceberg_spark_version" \
      -DoutputDirectory="$jars"
    [[ -s "$jars/$jar" ]] || { say "maven did not fetch $jar"; exit 1; }
  fi
fi

if [[ "$what" == fuzz ]]; then
  # `make fuzz` builds the fuzz targets with clang's -fsanitize=fuzzer, which
  # needs the compiler-rt of exactly the installed clang's version.
  installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  fuzz_updated=""
  fuzz_install() {
    say "installing Debian packages: $*"
    if [[ -z "$fuzz_updated" ]]; then
      $sudo_cmd apt-get update -q
      fuzz_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "$@"
  }
  installed clang || fuzz_install clang
  clang_major="$(clang --version | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n1)"
  [[ -n "$clang_major" ]] || { say "cannot tell the version of clang"; exit 1; }
  installed "libclang-rt-$clang_major-dev" || fuzz_install "libclang-rt-$clang_major-dev"
fi
