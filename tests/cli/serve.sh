#!/usr/bin/env bash
# bert_serve as a program, on loopback only: it starts on a free port, holds a short load from
# wrk with every answer a 200, and on SIGTERM stops accepting, answers the request in flight and
# exits 0.
#   serve.sh BIN_DIR TEST_DATA_DIR
set -euo pipefail
bin=$1 heads=$2/heads
work=$(mktemp -d)
server=
cleanup() { [[ -n $server ]] && kill -9 "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $work/log ]] && cat "$work/log" >&2; exit 1; }
command -v wrk > /dev/null || fail "wrk is not installed (Debian package wrk)"

"$bin/bert_serve" --model "$heads/seq_single" --tokenizer "$heads/classify_vocab.txt" --port 0 --timeout-s 3 > "$work/log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$work/log" && break; sleep 0.1; done
port=$(grep -o 'listening on http://127\.0\.0\.1:[0-9]*' "$work/log" | grep -o '[0-9]*$') || fail "no 'listening on' line"

# A short load: 16 connections, 2 seconds, texts of several lengths; every answer a 200.
cat > "$work/post.lua" <<'LUA'
local texts = {"the cat sat", "a dog ran on the mat", "fun", "the cat sat on the mat and the dog ran"}
local n = 0
request = function()
  n = n + 1
  local body = '{"inputs": "' .. texts[n % #texts + 1] .. '", "truncate": true}'
  return wrk.format("POST", "/classify", {["Content-Type"] = "application/json"}, body)
end
LUA
out=$(wrk -t2 -c16 -d2s -s "$work/post.lua" "http://127.0.0.1:$port/classify") || fail "wrk: $out"
grep -q "Non-2xx\|Socket errors" <<< "$out" && fail "errors under load: $out"
requests=$(grep -o '^ *[0-9]* requests in' <<< "$out" | grep -o '[0-9]*')
(( requests > 100 )) || fail "only $requests requests: $out"
metrics=$(curl -sf "http://127.0.0.1:$port/metrics")
counted=$(grep -o 'xgrad_requests_total{endpoint="/classify",code="200"} [0-9]*' <<< "$metrics" | grep -o '[0-9]*$')
# wrk counts the answers it read before its time was up; the server may have answered a few more
(( counted >= requests && counted <= requests + 16 )) || fail "metrics count $counted answers, wrk $requests"
grep -q 'code="[45]' <<< "$metrics" && fail "errors in the metrics: $metrics"

# SIGTERM with a request half sent: it is answered, new connections are refused, exit 0.
body='{"inputs": "the cat sat on the mat"}'
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /classify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s' \
  "${#body}" "${body:0:10}" >&3
sleep 0.2
kill -TERM "$server"
sleep 0.3
curl -s "http://127.0.0.1:$port/health" > /dev/null && fail "still accepting connections after SIGTERM"
printf '%s' "${body:10}" >&3
answer=$(cat <&3)
exec 3<&-
grep -q "HTTP/1.1 200" <<< "$answer" || fail "the request in flight was not answered: $answer"
grep -q '"label"' <<< "$answer" || fail "the request in flight got: $answer"
status=0
wait "$server" || status=$?
server=
(( status == 0 )) || fail "exit status $status after SIGTERM"
grep -q "stopped" "$work/log" || fail "no 'stopped' line"
echo "bert_serve: $requests requests under load, SIGTERM drained, exit 0"
