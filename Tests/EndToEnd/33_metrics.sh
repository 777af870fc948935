#!/usr/bin/env bash
# GET /metrics through nginx: refused to anyone but loopback (127.0.0.1); after a scripted sequence
# (sign-ins, a refused token, refreshes with a retry within the reuse interval and a reuse, a sync,
# a notification, an account deletion with Apple down) every counter moved by exactly what the
# sequence did; the revocation outbox's oldest entry ages while the emulator is stopped and the
# outbox empties (age 0) once it is back and siwa jobs ran; an accepted revocation past its retention
# shows as the table's oldest age until siwa jobs purges it. Process metrics are present.
# Debian's Prometheus scrapes the stack every second from the start (its own data directory, a
# loopback port, bounded in time); after the sequence and a little more (a 5xx, a refused sync, a
# sync from the cache), every query of the shipped Grafana dashboard (deploy/monitoring), with its
# variables substituted, returns data through Prometheus' HTTP API: a metric renamed on either side
# fails it; and the shipped alert rules, loaded by that Prometheus, evaluate without error, every
# siwa metric they name having a series.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

DIR=$E2E_TMP/metrics
mkdir -p "$DIR"
DELTA="python3 $(dirname "$0")/metrics_delta.py"
scrape() { # scrape FILE
    curl -ks -o "$1" -w '%{http_code}' "$E2E_URL/metrics" >"$DIR/status"
    [ "$(cat "$DIR/status")" = 200 ] || fail "GET /metrics: $(cat "$DIR/status")"
}
value() { $DELTA value "$1" "$2"; }
restart_emulator() {
    start_emulator "$(dirname "$E2E_BIN")/appleid-emulator" "$E2E_TMP/apple/emulator.json" "$E2E_TMP/emulator.log" "$E2E_TMP/emulator.pid"
}
# Prometheus, started first so that it scrapes the whole sequence: the job of docs/OPERATIONS.md,
# through nginx over TLS (the stack's certificate as the CA), every second.
PROM=$DIR/prometheus
PROM_URL=http://127.0.0.1:$(free_port)
rm -rf "$PROM" && mkdir -p "$PROM/data"
cat >"$PROM/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $SIWA_ROOT/deploy/monitoring/siwa-alerts.yml
scrape_configs:
  - job_name: siwa
    scheme: https
    tls_config:
      ca_file: $E2E_TMP/tls/cert.pem
      server_name: localhost
    static_configs:
      - targets: ["127.0.0.1:${E2E_URL##*:}"]
YAML
timeout 300 prometheus --config.file="$PROM/prometheus.yml" --storage.tsdb.path="$PROM/data" \
    --web.listen-address="${PROM_URL#http://}" --log.level=warn >"$PROM/log" 2>&1 &
PROM_PID=$!
stop_prometheus() { kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null || true; }
trap 'stop_prometheus; [ -s "$E2E_TMP/emulator.pid" ] && kill -0 "$(cat "$E2E_TMP/emulator.pid")" 2>/dev/null || restart_emulator' EXIT

# --- Reachable from loopback only, as Prometheus' text format. (The first scrape makes sure a
# request was answered before the second.)
request GET /metrics
request GET /metrics
expect_status 200 "GET /metrics from 127.0.0.1"
expect_header "Content-Type: text/plain; version=0.0.4" "the exposition's media type"
for family in process_resident_memory_bytes process_cpu_seconds_total process_open_fds process_max_fds siwa_workers \
    siwa_workers_busy siwa_http_request_duration_seconds_bucket siwa_outbox_depth siwa_apple_keys_age_seconds \
    siwa_apple_validation_overdue_seconds siwa_apple_validations_due; do
    grep -q "^$family" <<<"$BODY" || fail "no $family in the scrape"
done
status=$(curl -ks --interface 127.0.0.2 -o "$DIR/denied" -w '%{http_code}' "$E2E_URL/metrics")
[ "$status" = 403 ] || fail "GET /metrics from 127.0.0.2: expected 403, got $status"
grep -q '"error"' "$DIR/denied" || fail "the refusal is not JSON: $(cat "$DIR/denied")"
pass "GET /metrics: 200 with process and siwa metrics from 127.0.0.1, 403 JSON from 127.0.0.2"

# Revocations left by earlier checks are sent first, so that the outbox starts empty.
sql "UPDATE apple_revocations SET next_attempt_at = UTC_TIMESTAMP(3) WHERE done_at IS NULL"
siwa jobs --once >/dev/null
[ "$(sql "SELECT COUNT(*) FROM apple_revocations WHERE done_at IS NULL")" = 0 ] || fail "the revocation outbox did not empty"

# --- The scripted sequence, between two scrapes.
scrape "$DIR/before"
signed_in_user MetricsA
A_APPLE=$APPLE_USER FIRST_REFRESH=$REFRESH
apple_sign_in "$A_APPLE" com.example.siwa nonce-metrics-a2
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-metrics-a2\"}"
expect_status 200 "A's second sign-in, with a code"
A_ACCESS=$ACCESS
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-metrics-a2\"}"
expect_status 401 "the same token again"
sign_in '{"identityToken":"not.a.token","nonce":"n"}'
expect_status 401 "a malformed token"

request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$FIRST_REFRESH\"}"
expect_status 200 "a refresh"
SECOND_REFRESH=$(json refreshToken <<<"$BODY")
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$FIRST_REFRESH\"}"
expect_status 200 "the same refresh token again within the reuse interval"
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$SECOND_REFRESH\"}"
expect_status 401 "the refresh token the retry retired: reuse"

request POST /sync -H "$(bearer "$A_ACCESS")" -H 'Content-Type: application/json' \
    -d '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"m1","status":"completed","score":3,"earnedXp":5,"completedAt":1000}],"achievements":[]}'
expect_status 200 "a sync"

signed_in_user MetricsB
notify consent-revoked "$APPLE_USER"

new_apple_user "metrics.c@example.com" Metrics C
apple_sign_in "$APPLE_USER" com.example.siwa nonce-metrics-c
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-metrics-c\"}"
expect_status 200 "C signs in with a code"
stop_pidfile "$E2E_TMP/emulator.pid" 10
request DELETE /auth/account -H "$(bearer "$ACCESS")"
expect_status 204 "C deletes the account while Apple is down"
siwa jobs --once >/dev/null
scrape "$DIR/after"

$DELTA "$DIR/before" "$DIR/after" \
    'siwa_sign_ins_total{flow="native",result="success"}=4' \
    'siwa_sign_ins_total{flow="native",result="nonce_reused"}=1' \
    'siwa_sign_ins_total{flow="native",result="malformed_token"}=1' \
    'siwa_http_requests_total{route="/auth/apple",status="200"}=4' \
    'siwa_http_requests_total{route="/auth/apple",status="401"}=2' \
    'siwa_refreshes_total{result="rotated"}=1' \
    'siwa_refreshes_total{result="reuse_interval"}=1' \
    'siwa_refreshes_total{result="reuse_detected"}=1' \
    'siwa_http_requests_total{route="/auth/refresh",status="200"}=2' \
    'siwa_http_requests_total{route="/auth/refresh",status="401"}=1' \
    'siwa_apple_requests_total{endpoint="token",result="ok"}=2' \
    'siwa_sync_requests_total{result="ok"}=1' \
    'siwa_sync_rows_written_total=1' \
    'siwa_sync_batch_changes_count=1' \
    'siwa_sync_cache_lookups_total{result="miss"}=1' \
    'siwa_http_requests_total{route="/sync",status="200"}=1' \
    'siwa_notifications_total{type="consent-revoked",outcome="processed"}=1' \
    'siwa_http_requests_total{route="/webhook/apple",status="200"}=1' \
    'siwa_http_requests_total{route="/auth/account",status="204"}=1' \
    'siwa_http_request_duration_seconds_count{route="/auth/apple"}=6' \
    'siwa_outbox_depth{outbox="revocations"}=1' \
    'siwa_database_reconnects_total=0' \
    || fail "the counters after the sequence (above)"
pass "after the sequence every counter moved by what it did: 4 sign-ins, 2 refusals, 3 refreshes, 2 code exchanges, a sync, a notification, a deletion"

# --- The revocation outbox with Apple down, then back.
first=$(value "$DIR/after" 'siwa_outbox_oldest_age_seconds{outbox="revocations"}')
sleep 2.2
siwa jobs --once >/dev/null
scrape "$DIR/later"
later=$(value "$DIR/later" 'siwa_outbox_oldest_age_seconds{outbox="revocations"}')
python3 -c "import sys; sys.exit(0 if float('$later') >= float('$first') + 2 else 1)" \
    || fail "the oldest revocation's age did not grow while Apple was down: $first, then $later"
restart_emulator
sql "UPDATE apple_revocations SET next_attempt_at = UTC_TIMESTAMP(3) WHERE done_at IS NULL"
siwa jobs --once | grep -q "revoked=1 " || fail "the revocation was not sent once Apple was back"
scrape "$DIR/back"
$DELTA "$DIR/before" "$DIR/back" 'siwa_outbox_depth{outbox="revocations"}=0' 'siwa_outbox_oldest_age_seconds{outbox="revocations"}=0' \
    || fail "the revocation outbox after Apple came back (above)"
pass "the revocation outbox: depth 1, oldest entry ${first}s then ${later}s old with Apple down; 0 and 0 once it was back"

# --- Retention: the accepted revocation, 31 days old, is past SIWA_APPLE_RECORD_RETENTION_DAYS (30):
# the scrape shows its age until a pass of `siwa jobs` purges it.
sql "UPDATE apple_revocations SET done_at = UTC_TIMESTAMP(3) - INTERVAL 31 DAY WHERE done_at IS NOT NULL"
scrape "$DIR/stale"
stale=$(value "$DIR/stale" 'siwa_retention_oldest_age_seconds{table="apple_revocations"}')
python3 -c "import sys; sys.exit(0 if float('$stale') >= 31 * 86400 else 1)" \
    || fail "the accepted revocation 31 days old shows as ${stale:-nothing} s on /metrics"
siwa jobs --once | grep -q "purged=[1-9]" || fail "siwa jobs purged nothing"
[ "$(sql "SELECT COUNT(*) FROM apple_revocations WHERE done_at IS NOT NULL")" = 0 ] || fail "the accepted revocation past its retention is still stored"
scrape "$DIR/purged"
after=$(value "$DIR/purged" 'siwa_retention_oldest_age_seconds{table="apple_revocations"}')
[ "$after" = 0.0 ] || fail "the table's oldest age after the purge: $after"
pass "retention: an accepted revocation 31 days old shows as ${stale} s on /metrics, a pass of siwa jobs purges it, then 0"

# --- The shipped dashboard's queries through Debian's Prometheus. A little more than the sequence
# did, so that every panel has something to show: a 5xx (a sign-in with a code while Apple is down
# is answered 503 apple_unavailable), a second sync of A (from the process's sync cache), and a
# sync refused (A's session ended by a logout).
DASHBOARD_START=$SECONDS
new_apple_user "metrics.d@example.com" Metrics D
apple_sign_in "$APPLE_USER" com.example.siwa nonce-metrics-d
stop_pidfile "$E2E_TMP/emulator.pid" 10
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-metrics-d\"}"
expect_status 503 "a sign-in with a code while Apple is down"
restart_emulator
request POST /sync -H "$(bearer "$A_ACCESS")" -H 'Content-Type: application/json' \
    -d '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"m2","status":"completed","score":2,"earnedXp":3,"completedAt":2000}],"achievements":[]}'
expect_status 200 "A's second sync"
request POST /auth/logout -H "$(bearer "$A_ACCESS")"
expect_status 204 "A signs out"
request POST /sync -H "$(bearer "$A_ACCESS")" -H 'Content-Type: application/json' -d '{"cursor":null,"progress":[],"achievements":[]}'
expect_status 401 "a sync of the ended session"
scrape "$DIR/dashboard"
# Two successful scrapes in a row after the traffic (polling Prometheus' API, up to 60 s): every
# series it made has two samples to rate. The queries run at the last one's time.
QUERIES="python3 $(dirname "$0")/monitoring_check.py"
AT=$($QUERIES wait "$PROM_URL" "$(date +%s.%N)" siwa) || { cat "$PROM/log" >&2; fail "Prometheus did not scrape the stack (above)"; }
DASHBOARD=${E2E_DASHBOARD:-$SIWA_ROOT/deploy/monitoring/siwa-dashboard.json}
$QUERIES check "$PROM_URL" "$DASHBOARD" siwa "$AT" >"$DIR/dashboard-queries" || { cat "$DIR/dashboard-queries" >&2; fail "a query of the dashboard returned nothing or an error (above)"; }
$QUERIES rules "$PROM_URL" "$SIWA_ROOT/deploy/monitoring/siwa-alerts.yml" siwa "$AT" >"$DIR/rules-check" || { cat "$DIR/rules-check" >&2; fail "the alert rules in Prometheus (above)"; }
pass "the dashboard through Debian's Prometheus scraping every second: $(tail -1 "$DIR/dashboard-queries"); the alert rules: $(tail -1 "$DIR/rules-check") ($((SECONDS - DASHBOARD_START)) s for this part)"
stop_prometheus
