#!/usr/bin/env bash
# Runs every libFuzzer target of a `make fuzz` build for a bounded time:
#   fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
# Each target starts from its committed seeds (fuzz/corpus/<name>, only read)
# and a working corpus in BUILD_DIR/corpus/<name> (where libFuzzer adds the
# inputs it finds; kept between runs). Crashes, leaks, timeouts and
# out-of-memory inputs land in BUILD_DIR/artifacts/. Prints one line per
# target (executions, corpus size, outcome) and exits 1 if any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."

build="${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}"
seconds="${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}"
shift 2
targets=("$@")
if ((${#targets[@]} == 0)); then
  for dir in fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

mkdir -p "$build/logs" "$build/artifacts"
failed=0
printf '%-16s %12s %10s %8s  %s\n' target executions exec/s corpus outcome
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  log="$build/logs/$t.log"
  # -timeout: one input running longer than 10 s is a hang; -rss_limit_mb:
  # the decoders bound their memory by the input size, so 2 GiB is a failure.
  "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
    "$build/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)"
  units="$(find "$build/corpus/$t" -type f | wc -l)"
  if ((rc == 0)); then
    outcome=ok
  else
    failed=1
    outcome="FAILED (exit $rc): $(grep -m1 -E '^==[0-9]+==ERROR|fuzz check failed|^SUMMARY|deadly signal|timeout|out-of-memory' "$log" | head -c 200); see $log"
  fi
  printf '%-16s %12s %10s %8s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "$units" "$outcome"
done
exit "$failed"
