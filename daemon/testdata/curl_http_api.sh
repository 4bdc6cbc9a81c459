#!/usr/bin/env bash
# The HTTP API through curl --unix-socket, as a user would call it:
#   curl_http_api.sh SOCKET MODEL_ID
# Exits non-zero at the first answer that is not what the API promises.
# The model is random and sampled at temperature 1: requests whose checks
# need every token set ignore_eos, or an early EOS would fail them.
set -euo pipefail
sock=$1 model=$2
api() { curl -sS --unix-socket "$sock" -w '\n%{http_code}' "$@"; }
expect() { # expect WHAT STATUS PATTERN OUTPUT
    local status=${4##*$'\n'} body=${4%$'\n'*}
    [[ $status == "$2" ]] || { echo "FAIL $1: status $status, want $2: $body"; exit 1; }
    [[ $body == *"$3"* ]] || { echo "FAIL $1: body lacks $3: $body"; exit 1; }
    echo "ok   $1"
}
expect health 200 '"status":"ok"' "$(api http://batchd/health)"
expect models 200 "\"id\":\"$model\"" "$(api http://batchd/v1/models)"
expect chat 200 '"object":"chat.completion"' "$(api http://batchd/v1/chat/completions \
    -H 'Content-Type: application/json' \
    -d '{"model": "'"$model"'", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4, "temperature": 0}')"
out=$(api -N http://batchd/v1/chat/completions \
    -d '{"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 3, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}')
expect "streamed chat" 200 'data: [DONE]' "$out"
[[ $(grep -c '^data: ' <<<"$out") -ge 4 ]] || { echo "FAIL streamed chat: too few events"; exit 1; }
grep -q '"usage":{"prompt_tokens"' <<<"$out" || { echo "FAIL streamed chat: no usage chunk"; exit 1; }
expect completion 200 '"finish_reason":"length"' "$(api http://batchd/v1/completions -d '{"prompt": "Once", "max_tokens": 2, "ignore_eos": true}')"
expect "unknown model" 404 '"code":"model_not_found"' "$(api http://batchd/v1/chat/completions -d '{"model": "gpt-4o", "messages": []}')"
expect "n = 2" 400 '"param":"n"' "$(api http://batchd/v1/completions -d '{"prompt": "a", "n": 2}')"
expect "bad json" 400 '"type":"invalid_request_error"' "$(api http://batchd/v1/completions -d '{"prompt": ')"
expect "no route" 404 '"error"' "$(api http://batchd/v1/nothing -d '{}')"
