#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
# The main job replaces its earlier run in runs/bert_pretrain; given --out or --resume, the
# program's own rule holds (a non-empty --out is refused without --overwrite).
case " $* " in
  *" --out"* | *" --resume"* | *" --overwrite"*) exec build/bin/bert_pretrain "$@" ;;
  *) exec build/bin/bert_pretrain --overwrite "$@" ;;
esac
