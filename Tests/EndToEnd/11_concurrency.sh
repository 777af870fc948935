#!/usr/bin/env bash
# nginx's connections never starve the worker pool: 256 concurrent clients for 10 s, no request
# takes a second (no fastcgi_keep_conn; see docs/ARCHITECTURE.md, "Sizing the pool").
set -euo pipefail
. "$(dirname "$0")/assert.sh"

wrk -t2 -c256 -d10s --latency --timeout 5s "$E2E_URL/health" >"$E2E_TMP/wrk256.txt" 2>&1
cat "$E2E_TMP/wrk256.txt" | grep -E 'Latency|requests in|Non-2xx|Socket errors' | sed 's/^/    /'
max=$(awk '/^    Latency/ {print $4}' "$E2E_TMP/wrk256.txt")
if grep -q 'Non-2xx' "$E2E_TMP/wrk256.txt"; then fail "non-2xx answers under load"; fi
if grep -q 'Socket errors' "$E2E_TMP/wrk256.txt"; then fail "socket errors under load"; fi
case "$max" in
    *us|*ms) ;;
    *) fail "a request took $max (>= 1 s) with 256 concurrent clients" ;;
esac
pass "256 concurrent clients for 10 s: every answer 200, max latency $max"
