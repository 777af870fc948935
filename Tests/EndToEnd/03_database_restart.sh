#!/usr/bin/env bash
# MariaDB stops while siwa runs: /health answers 503 within a second; MariaDB starts again:
# /health is 200 again without restarting siwa.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

siwa_pid=$(cat "$E2E_TMP/siwa.pid")
stop_pidfile "$E2E_TMP/db/mariadb.pid" 60
request GET /health --max-time 1
expect_status 503 "health with the database stopped"
expect_body '{"appleKeys":"ok","database":"down","status":"degraded"}' "health with the database stopped"
time=$(curl -ks -o /dev/null -w '%{time_total}' --max-time 1 "$E2E_URL/health")
pass "database stopped: /health is 503 degraded (answered in ${time}s)"

start_mariadb "$E2E_TMP/db"
for _ in $(seq 50); do
    request GET /health
    [ "$STATUS" = 200 ] && break
    sleep 0.1
done
expect_status 200 "health after the database restarted"
expect_body '{"appleKeys":"ok","database":"ok","status":"ok"}' "health after the database restarted"
[ "$(cat "$E2E_TMP/siwa.pid")" = "$siwa_pid" ] && kill -0 "$siwa_pid" || fail "siwa was restarted"
pass "database back: /health is 200 again, same siwa process ($siwa_pid)"
