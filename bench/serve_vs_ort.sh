#!/usr/bin/env bash
# bert_serve against ONNX Runtime behind uvicorn + Starlette (bench/ort_server.py), serving the same
# model's POST /embed (mean pooling, unit length) on loopback, driven by wrk with the first 200
# sentences of the bundled corpus, one per request, at 1, 8 and 64 connections: requests/s and
# p50/p99 latency side by side, in one run on one machine. Also bert_serve with dynamic batching
# off (--max-batch-tokens 1: every request runs alone), its gain from batching.
#   bench/serve_vs_ort.sh [MODELS] [SECONDS] [PRECISION]     e.g. bench/serve_vs_ort.sh "mini base" 10 fp32
# mini: all-MiniLM-L6-v2 (XGRAD_MINILM_DIR, else tools/get_minilm.sh fetches it into build/minilm);
# base: BERT-base with random weights (transformers' BertModel, saved once into build/bench-base)
# and the bundled BERT vocabulary. PRECISION fp32 (default) or int8: both servers at it (ORT:
# quantize_dynamic per channel). bert_serve and ORT run on every core (2 threads); wrk on one
# thread. The peer's Python is $PEER_PYTHON, else build/venv-ort as bench/infer_vs_ort.sh makes it,
# plus uvicorn and starlette.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"mini base"}
seconds=${2:-10}
precision=${3:-fp32}
[[ $precision == fp32 || $precision == int8 ]] || { echo "serve_vs_ort: PRECISION is fp32 or int8" >&2; exit 2; }
command -v wrk > /dev/null || { echo "serve_vs_ort: needs wrk (apt-get install wrk)" >&2; exit 1; }
python=${PEER_PYTHON:-build/venv-ort/bin/python}
"$python" -c "import onnxruntime, transformers, uvicorn, starlette" 2>/dev/null ||
  "$python" -m pip install --quiet "uvicorn==0.55.0" "starlette==1.10.0"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# wrk's script: the sentences as JSON bodies, each connection walking them from its own offset.
awk 'NF && n++ < 200' data/pretrain_corpus_small.txt | python3 -c '
import json, sys
bodies = [json.dumps(json.dumps({"inputs": line.rstrip("\n"), "pooling": "mean", "normalize": True, "truncate": True}))
          for line in sys.stdin]
print("local bodies = {" + ",\n".join(bodies) + "}")
print("""local n = 0
local headers = {["Content-Type"] = "application/json"}
init = function(args) n = math.random(#bodies) end
request = function()
  n = n % #bodies + 1
  return wrk.format("POST", "/embed", headers, bodies[n])
end""")' > "$work/embed.lua"

checkpoint() {  # the model directory of MODEL
  case $1 in
    mini)
      local dir=${XGRAD_MINILM_DIR:-build/minilm}
      [[ -f $dir/model.safetensors ]] || tools/get_minilm.sh "$dir" >&2
      echo "$dir" ;;
    base)
      if [[ ! -f build/bench-base/config.json ]]; then
        "$python" -c 'import transformers; transformers.BertModel(transformers.BertConfig()).save_pretrained("build/bench-base")'
        cp data/bert-base-uncased-vocab.txt build/bench-base/vocab.txt
      fi
      echo build/bench-base ;;
    *) echo "serve_vs_ort: MODELS are mini and base" >&2; exit 2 ;;
  esac
}

wait_up() {  # PORT PID LOG
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$1/health" > /dev/null && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3" >&2; echo "serve_vs_ort: the server on port $1 died" >&2; exit 1; }
    sleep 0.2
  done
  echo "serve_vs_ort: the server on port $1 did not start" >&2; exit 1
}

# "requests/s p50_ms p99_ms" of CONNECTIONS on PORT (after a 2-second warm-up)
load() {
  wrk -t1 -c"$1" -d2s -s "$work/embed.lua" "http://127.0.0.1:$2/embed" > /dev/null
  wrk -t1 -c"$1" -d"${seconds}s" --timeout 30s --latency -s "$work/embed.lua" "http://127.0.0.1:$2/embed" > "$work/wrk.txt"
  # errors under load, or an output this parser does not know: "nan" in the table, wrk's output on stderr
  python3 - "$work/wrk.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def ms(s):
    v, unit = re.match(r"([\d.]+)(us|ms|s|m)$", s).groups()
    return float(v) * {"us": 1e-3, "ms": 1, "s": 1e3, "m": 6e4}[unit]
try:
    if "Non-2xx" in text or "Socket errors" in text:
        raise ValueError("errors under load")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    # the Latency Distribution lines (a "+/- Stdev" column may also end in 50%)
    p50 = ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
    p99 = ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
    print(f"{rps:.1f} {p50:.2f} {p99:.2f}")
except (AttributeError, ValueError) as e:
    sys.stderr.write(f"serve_vs_ort: {e}; wrk said:\n{text}\n")
    print("nan nan nan")
PY
}

div() { python3 -c "import math, sys; a, b = map(float, sys.argv[1:]); print(a / b if b else math.nan)" "$1" "$2"; }
printf "%-5s %5s | %-22s | %-22s | %-22s | %7s %7s %7s\n" model conns "bert_serve rps p50 p99" "batch-1 rps p50 p99" \
  "ORT+uvicorn rps p50 p99" "x/ORT" "p99 x/O" "batching"
for m in $models; do
  dir=$(checkpoint "$m")
  ort_flags=()
  [[ $precision == int8 ]] && ort_flags=(--int8)
  "$python" bench/ort_server.py --model "$dir" --port 18081 --threads 2 "${ort_flags[@]}" > "$work/ort.log" 2>&1 &
  pids+=($!); ort_pid=$!
  build/bin/bert_serve --model "$dir" --port 18082 --precision "$precision" > "$work/xg.log" 2>&1 &
  pids+=($!); xg_pid=$!
  build/bin/bert_serve --model "$dir" --port 18083 --precision "$precision" --max-batch-tokens 1 > "$work/xg1.log" 2>&1 &
  pids+=($!); xg1_pid=$!
  wait_up 18082 $xg_pid "$work/xg.log"; wait_up 18083 $xg1_pid "$work/xg1.log"; wait_up 18081 $ort_pid "$work/ort.log"
  for c in 1 8 64; do
    read -r x50 x50p x99 <<< "$(load "$c" 18082)"
    read -r b50 b50p b99 <<< "$(load "$c" 18083)"
    read -r o50 o50p o99 <<< "$(load "$c" 18081)"
    printf "%-5s %5d | %8.1f %6.1f %6.1f | %8.1f %6.1f %6.1f | %8.1f %6.1f %6.1f | %6.2fx %6.2fx %6.2fx\n" "$m" "$c" \
      "$x50" "$x50p" "$x99" "$b50" "$b50p" "$b99" "$o50" "$o50p" "$o99" \
      "$(div "$x50" "$o50")" "$(div "$o99" "$x99")" "$(div "$x50" "$b50")"
  done
  kill $ort_pid $xg_pid $xg1_pid; wait $ort_pid $xg_pid $xg1_pid 2>/dev/null || true
done
echo "x/ORT: bert_serve's requests/s over ORT's; p99 x/O: ORT's p99 over bert_serve's (above 1: bert_serve's is lower);"
echo "batching: bert_serve over itself with every request alone. CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; precision $precision."
