#!/usr/bin/env bash
# Runs every fuzz target of a build for SECONDS each, NPROC at a time, over its committed corpus
# (seeds and regression inputs, replayed first) plus a scratch corpus of what it finds.
#   fuzz/run.sh [BUILD_DIR [SECONDS [TARGET...]]]     defaults: build-asan, 15, every fuzz_* there
# New inputs go to fuzz/work/<target>/corpus (ignored by git; reused by the next run), crashes to
# fuzz/work/<target>/crash-*. Exits non-zero when a target crashed, leaked, timed out or ran out of
# memory, naming the input: fix the bug, then copy the input to fuzz/corpus/<target>/regress-<what>.
# Prints each target's executions and coverage (libFuzzer's cov: edges, ft: features).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
seconds=${2:-15}
shift $(($# < 2 ? $# : 2))
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for t in "$build"/bin/fuzz_*; do targets+=("$(basename "$t")"); done
fi

run_one() {  # target seconds build
  local t=$1 s=$2 b=$3 work=fuzz/work/$1
  mkdir -p "$work/corpus"
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: the fuzzer's own memory ceiling.
  if "$b/bin/$t" "$work/corpus" "fuzz/corpus/$t" -max_total_time="$s" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/" > "$work/log.txt" 2>&1; then
    local execs cov
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" | grep -o '[0-9]*$')
    cov=$(grep -E '^#[0-9]+' "$work/log.txt" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]*' || true)
    echo "fuzz: $t ok: $execs executions in ${s}s, $cov"
  else
    echo "fuzz: $t FAILED; its log: $work/log.txt"
    grep -E 'ERROR: |SUMMARY: |Test unit written to' "$work/log.txt" | head -5 | sed 's/^/  /'
    return 1
  fi
}
export -f run_one

printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$build"
