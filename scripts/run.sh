#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
exec build/bin/bert_pretrain "$@"
