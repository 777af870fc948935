# Assertions for the end-to-end checks. Sourced. Each failure prints what differed and exits 1.
# E2E_URL (https://localhost:PORT), E2E_TMP (the test directory) and E2E_BIN come from scripts/test.
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "  ok: $*"; }

# request METHOD PATH [curl args...]: sets STATUS, BODY and HEADERS.
request() {
    local method=$1 path=$2
    shift 2
    local out
    out=$(curl -ks -X "$method" -D "$E2E_TMP/headers" -o "$E2E_TMP/body" -w '%{http_code}' "$@" "$E2E_URL$path") || true
    STATUS=$out
    BODY=$(cat "$E2E_TMP/body")
    HEADERS=$(tr -d '\r' <"$E2E_TMP/headers")
}

# wait_for_health [TRIES]: polls GET /health every 0.1 s until it answers 200 (TRIES times at most,
# 50 by default); STATUS and BODY are those of the last answer.
wait_for_health() {
    local tries=${1:-50}
    for _ in $(seq "$tries"); do
        request GET /health
        [ "$STATUS" = 200 ] && return 0
        sleep 0.1
    done
}

expect_status() { [ "$STATUS" = "$1" ] || fail "$2: expected status $1, got $STATUS ($BODY)"; }
# urlq VALUE: VALUE percent-encoded for a query string (every reserved character encoded).
urlq() { python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
# expect_error STATUS CODE DESCRIPTION: the last answer is STATUS with the JSON error CODE.
expect_error() {
    expect_status "$1" "$3"
    [ "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("error", ""))' "$BODY" 2>/dev/null)" = "$2" ] \
        || fail "$3: expected the error $2, got $BODY"
}
expect_body() { [ "$BODY" = "$1" ] || fail "$2: expected body $1, got $BODY"; }
expect_header() { grep -qi "^$1" <<<"$HEADERS" || fail "$2: missing header $1 in: $HEADERS"; }

# curl_walkthrough FILE: writes the curl walkthrough of docs/API.md ("The native flow with curl"), as
# printed there, to FILE.
curl_walkthrough() {
    python3 - "$(dirname "${BASH_SOURCE[0]}")/../../docs/API.md" >"$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read().split("**The native flow with curl.**", 1)[1]
print(re.search(r"```sh\n(.*?)```", text, re.S).group(1))
PY
}
