#!/usr/bin/env bash
# Training throughput and peak memory as the sequence grows: bert_pretrain --benchmark at 8 x 128
# and 8 x 512 (or the lengths given) with multi_head_attention (the default: memory linear in T)
# and with the unfused attention it replaced (XGRAD_FLASH_ATTENTION=0: (B, heads, T, T) weights
# kept per layer), alternating the two so machine noise hits both alike. Prints tokens/s, peak
# RSS, and each length's tokens/s as a share of the shortest length's.
#   bench/long_sequences.sh [MODEL] [BATCH] [SEQ_LENS] [STEPS]    e.g. bench/long_sequences.sh base 8 "128 512" 3
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-base}
batch=${2:-8}
lens=${3:-"128 512"}
steps=${4:-3}
bin=build/bin/bert_pretrain
[[ -x $bin ]] || { echo "long_sequences: build first ($bin missing)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "long_sequences: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
read -ra lengths <<<"$lens"
declare -A tps mem
for T in "${lengths[@]}"; do
  for flash in 1 0; do
    if ! out=$( { XGRAD_FLASH_ATTENTION=$flash /usr/bin/time -f "peak_kb %M" "$bin" --benchmark --model "$model" \
                  --batch "$batch" --seq-len "$T" --steps "$steps" | tail -1; } 2>&1 ); then
      printf 'long_sequences: T=%s XGRAD_FLASH_ATTENTION=%s failed:\n%s\n' "$T" "$flash" "$out" >&2
      exit 1
    fi
    tps[$T,$flash]=$(sed -n 's/^tokens\/s: //p' <<<"$out")
    kb=$(sed -n 's/^peak_kb //p' <<<"$out")
    mem[$T,$flash]=$(( ${kb:-0} / 1024 ))
  done
done
first=${lengths[0]}
printf "%-7s %-22s %12s %10s %14s\n" "T" "attention" "tokens/s" "peak MB" "vs T=$first"
for T in "${lengths[@]}"; do
  for flash in 1 0; do
    name=$([[ $flash == 1 ]] && echo "multi_head_attention" || echo "unfused")
    printf "%-7s %-22s %12s %10s %14s\n" "$T" "$name" "${tps[$T,$flash]}" "${mem[$T,$flash]}" \
      "$(awk -v a="${tps[$T,$flash]}" -v b="${tps[$first,$flash]}" 'BEGIN{if (b > 0) printf "%.2f", a/b; else print "-"}')"
  done
done
