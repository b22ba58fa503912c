#!/usr/bin/env bash
# Where a training step's time goes: `perf record` over bert_pretrain --benchmark, samples summed
# by what the function does. Categories: GEMM (gemm::, packing included), attention (the attention
# kernels and op, attention_softmax), element-wise (vec:: kernels: GELU, LayerNorm, softmax, dropout
# masks, adds), optimizer (optim::, vec::adam, vec::lamb_direction), allocation (page faults and zeroing in the kernel, malloc/free,
# memset; kernel symbols need perf_event_paranoid <= 1, else they land in "other"), the thread
# pool's idle wait, other. Start-up (model init, warm-up) is left out. Needs `perf` (Debian: linux-perf).
#   bench/profile_step.sh [MODEL] [BATCH] [SEQ_LEN] [STEPS] [-- more bert_pretrain flags]
#   e.g. bench/profile_step.sh base 8 128 3;  XGRAD_FLASH_ATTENTION=0 bench/profile_step.sh base 8 128 3
# PROFILE_SYMBOLS=FILE also keeps the per-symbol report the categories are summed from.
set -euo pipefail
cd "$(dirname "$0")/.."
positional=()
while [[ $# -gt 0 && "$1" != -- ]]; do positional+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift  # what is left goes to bert_pretrain
model=${positional[0]:-base}; batch=${positional[1]:-8}; seq=${positional[2]:-128}; steps=${positional[3]:-3}
(( steps >= 2 )) || { echo "profile_step: STEPS must be at least 2 (the first is left out with start-up)" >&2; exit 2; }
command -v perf >/dev/null || { echo "profile_step: needs perf (apt-get install linux-perf)" >&2; exit 1; }
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
# Steady state only: samples start after the time a run of one step takes (model init, the
# warm-up steps, the first faults of activation memory, that one step), measured first; so
# STEPS - 1 steps are sampled.
run=(build/bin/bert_pretrain --benchmark --model "$model" --batch "$batch" --seq-len "$seq")
start=$(date +%s%N)
"${run[@]}" --steps 1 "$@" > /dev/null
delay_ms=$(( ($(date +%s%N) - start) / 1000000 ))
perf record -q -D "$delay_ms" -o "$data/perf.data" "${run[@]}" --steps "$steps" "$@" 2>&1 | tail -1
perf report -i "$data/perf.data" --no-children --sort symbol --stdio 2>/dev/null | tee "${PROFILE_SYMBOLS:-/dev/null}" | awk '
  /^#/ || NF < 3 { next }
  {
    pct = $1; sub(/%/, "", pct); sym = ""; for (i = 3; i <= NF; ++i) sym = sym " " $i
    if (sym ~ /gemm::|sgemm|micro_kernel|pack_[ab]|transpose_into_panel|compute_block/) c = "GEMM"
    else if (sym ~ /attn::|attention|softmax_backward|vec::softmax/) c = "attention"
    else if (sym ~ /optim::|Adam|Lamb|vec::adam|vec::lamb/) c = "optimizer"
    else if (sym ~ /Pool::start_workers|parallel_for|futex|sched_yield|_raw_spin/) c = "thread pool wait"
    else if (sym ~ /page_fault|clear_page|alloc|folio|memset|malloc|free|mmap|munmap|_int_|memcg|lruvec|unmap|handle_mm|do_anonymous|rmqueue|zap_|pte/) c = "allocation"
    else if (sym ~ /vec::|gelu|Gelu|layer_norm|dropout|map2|unary|binary|axpy|exp|log|sincos/) c = "element-wise"
    else c = "other"
    share[c] += pct
  }
  END {
    printf "%-18s %8s\n", "where", "share"
    split("GEMM|attention|element-wise|optimizer|allocation|thread pool wait|other", names, "|")
    for (i = 1; i <= 7; ++i) printf "%-18s %7.1f%%\n", names[i], share[names[i]]
  }'
