#!/usr/bin/env bash
# SIGTERM during load: the requests siwa accepted complete (nginx logs no connection cut by
# siwa), the process exits 0. Runs last: it stops siwa.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

# Run siwa as this shell's child, so its exit status can be read with `wait`.
stop_pidfile "$E2E_TMP/siwa.pid" 30
(set -a; . "$E2E_TMP/siwa.env"; set +a; exec "$E2E_BIN" serve) >>"$E2E_TMP/siwa.log" 2>&1 &
pid=$!
wait_for_health 100
expect_status 200 "siwa restarted for the SIGTERM check"

: >"$E2E_TMP/nginx/error.log"
wrk -t2 -c64 -d4s "$E2E_URL/health" >"$E2E_TMP/wrk_term.txt" 2>&1 &
wrk_pid=$!
sleep 1.5
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
wait "$wrk_pid" || true
[ "$status" -eq 0 ] || fail "siwa exited with status $status after SIGTERM"
if grep -E 'prematurely closed|reset by peer|upstream timed out' "$E2E_TMP/nginx/error.log"; then
    fail "a request accepted by siwa was cut off"
fi
served=$(awk '/requests in/ {print $1}' "$E2E_TMP/wrk_term.txt")
refused=$(grep -c 'Connection refused\|No such file' "$E2E_TMP/nginx/error.log" || true)
pass "SIGTERM under load: exit status 0, no accepted request cut off ($served requests; $refused refused after the stop)"
