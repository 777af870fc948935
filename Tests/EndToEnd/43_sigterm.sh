#!/usr/bin/env bash
# SIGTERM during load: the requests siwa accepted complete (nginx logs no connection cut by
# siwa), the process exits 0, and every MariaDB connection it opened was closed by siwa itself
# (none left, none aborted). Runs last of the checks on the stack's siwa: it stops it (44_backup_restore runs a siwa of its own).
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

# Run siwa as this shell's child, so its exit status can be read with `wait`.
stop_pidfile "$E2E_TMP/siwa.pid" 30
# siwa's connections (its database user's sessions), and the server's count of clients that went
# away without closing their connection (a thread left running at exit, a handle never closed).
siwa_connections() { mariadb_root "$E2E_TMP/db" "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'siwa'" | tail -1; }
aborted_clients() { mariadb_root "$E2E_TMP/db" "SHOW GLOBAL STATUS LIKE 'Aborted_clients'" | awk 'END {print $2}'; }
# The server ends a session's thread shortly after its client went: wait up to 10 s for none.
no_siwa_connections() {
    local deadline=$((SECONDS + 10))
    until [ "$(siwa_connections)" = 0 ]; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.1; done
}
no_siwa_connections || fail "siwa's connections are still open after the previous siwa stopped"
aborted_before=$(aborted_clients)
(set -a; . "$E2E_TMP/siwa.env"; set +a; exec "$E2E_BIN" serve) >>"$E2E_TMP/siwa.log" 2>&1 &
pid=$!
wait_for_health 100
expect_status 200 "siwa restarted for the SIGTERM check"
# A sign-in, a sync that writes and an authenticated read: the workers, the sync committers and
# the session cache's poller each open their connections.
signed_in_user sigterm
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' \
    -d '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"in_progress","score":1}]}'
expect_status 200 "a sync before the stop"
request GET /auth/me -H "$(bearer "$ACCESS")"
expect_status 200 "an authenticated read before the stop"

: >"$E2E_TMP/nginx/error.log"
wrk -t2 -c64 -d4s "$E2E_URL/health" >"$E2E_TMP/wrk_term.txt" 2>&1 &
wrk_pid=$!
sleep 1.5
open_connections=$(siwa_connections)
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
wait "$wrk_pid" || true
[ "$status" -eq 0 ] || fail "siwa exited with status $status after SIGTERM"
if grep -E 'prematurely closed|reset by peer|upstream timed out' "$E2E_TMP/nginx/error.log"; then
    fail "a request accepted by siwa was cut off"
fi
no_siwa_connections || true
left=$(siwa_connections)
aborted=$(($(aborted_clients) - aborted_before))
[ "$left" = 0 ] && [ "$aborted" = 0 ] ||
    fail "siwa left connections behind at exit: $left still open, $aborted closed by the server instead of by siwa (of $open_connections open before the stop)"
served=$(awk '/requests in/ {print $1}' "$E2E_TMP/wrk_term.txt")
refused=$(grep -c 'Connection refused\|No such file' "$E2E_TMP/nginx/error.log" || true)
pass "SIGTERM under load: exit status 0, no accepted request cut off ($served requests; $refused refused after the stop)"
pass "SIGTERM: siwa closed each of its $open_connections database connections itself before it exited"
