#!/usr/bin/env bash
# The long fuzzing run (outside scripts/test.sh): an hour of fuzzing in all, shared evenly by the
# targets and run NPROC at a time (about 30 minutes on two cores), each starting from what earlier
# runs found (fuzz/work/<target>/corpus). Builds the targets first.
#   fuzz/run_long.sh [TOTAL_SECONDS]      default 3600
# After a run, fuzz/work/<target>/log.txt holds each target's figures; see fuzz/run.sh for what to
# do with a crash. `-merge=1` minimises a grown corpus before adding any of it to fuzz/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
total=${1:-3600}
build=build-asan
scripts/asan_build.sh fuzz_targets
targets=("$build"/bin/fuzz_*)
fuzz/run.sh "$build" $((total / ${#targets[@]}))
