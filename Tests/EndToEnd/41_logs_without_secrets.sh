#!/usr/bin/env bash
# docs/SECURITY.md rule 8: after every sign-in, refresh, web flow and job of the checks before this one, no
# token, code, nonce or full email appears in siwa's log or in nginx's logs. siwa is then restarted
# with SIWA_LOG_FORMAT=json for a sequence of its own (sign-ins, refreshes with a reuse, a sync, a
# notification, a deletion): every line of that log is one JSON object, every request has its line
# with nginx's request id, route, status and duration, and the same search covers it.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

DIR=$E2E_TMP/json_logs
mkdir -p "$DIR"
cp "$E2E_ENV" "$DIR/siwa.env"
echo "SIWA_LOG_FORMAT=json" >>"$DIR/siwa.env"
restart_siwa() { # restart_siwa ENV_FILE LOG
    stop_pidfile "$E2E_TMP/siwa.pid" 30
    start_siwa "$E2E_BIN" "$1" "$2" "$E2E_TMP/siwa.pid"
    wait_for_health 100
    expect_status 200 "siwa restarted"
}
trap 'restart_siwa "$E2E_ENV" "$E2E_TMP/siwa.log"' EXIT
restart_siwa "$DIR/siwa.env" "$DIR/siwa.json.log"
signed_in_user JsonLogs
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$REFRESH\"}"
expect_status 200 "a refresh"
remember "$(json accessToken <<<"$BODY")" "$(json refreshToken <<<"$BODY")"
sleep 3.2 # past the reuse interval: the spent token again is a reuse
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$REFRESH\"}"
expect_status 401 "the spent refresh token"
signed_in_user JsonLogsB
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' \
    -d '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"j1","status":"completed","score":1,"earnedXp":1,"completedAt":1}],"achievements":[]}'
expect_status 200 "a sync"
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"replayed\"}"
expect_status 401 "a replayed token with another nonce"
request GET /auth/me -H "Authorization: Bearer forged.$REFRESH"
expect_status 401 "a forged access token"
notify consent-revoked "$APPLE_USER"
signed_in_user JsonLogsC
request DELETE /auth/account -H "$(bearer "$ACCESS")"
expect_status 204 "a deletion"
python3 - "$DIR/siwa.json.log" <<'PY' || fail "the JSON log (above)"
import json, sys
requests = 0
for number, line in enumerate(open(sys.argv[1]), 1):
    try:
        entry = json.loads(line)
    except ValueError:
        sys.exit(f"line {number} is not JSON: {line[:120]}")
    if not all(key in entry for key in ("time", "level", "logger", "message")):
        sys.exit(f"line {number} lacks time, level, logger or message: {line[:120]}")
    if entry["message"] == "request":
        requests += 1
        if entry["level"] != "info" or any(not entry.get(key) for key in ("request.id", "route", "status", "duration_ms")):
            sys.exit(f"request line {number} lacks its id, route, status or duration: {line[:200]}")
        if entry["request.id"] == "-":
            sys.exit(f"request line {number} has no request id from nginx")
if requests < 10:
    sys.exit(f"only {requests} request lines")
print(f"  {requests} request lines")
PY
restart_siwa "$E2E_ENV" "$E2E_TMP/siwa.log"
trap - EXIT
pass "SIWA_LOG_FORMAT=json: every line is a JSON object; each request has its id, route, status and duration"

logs=("$E2E_TMP/siwa.log" "$DIR/siwa.json.log" "$E2E_TMP/nginx/error.log" "$E2E_TMP/nginx/access.log")
for log_file in "${logs[@]}"; do [ -s "$log_file" ] || fail "$log_file is missing or empty"; done
# The team transfer's own siwa and nginx (32_identities), when that check ran.
for log_file in "$E2E_TMP/transfer/siwa.log" "$E2E_TMP/transfer/nginx/error.log" "$E2E_TMP/transfer/nginx/access.log"; do
    if [ -s "$log_file" ]; then logs+=("$log_file"); fi
done
[ -s "$E2E_TMP/secrets_seen" ] || fail "the checks recorded no secrets to look for"
grep -q 'refresh token reused' "$E2E_TMP/siwa.log" || fail "the log does not have the events this check expects"

checked=0
while IFS= read -r secret; do
    [ ${#secret} -ge 8 ] || continue
    checked=$((checked + 1))
    for log_file in "${logs[@]}"; do
        ! grep -qF -- "$secret" "$log_file" || fail "a secret (${secret:0:12}…) appears in $log_file"
    done
done <"$E2E_TMP/secrets_seen"
# Whatever the checks did not record: anything shaped like a JWT, or a whole email address.
! grep -qE 'eyJ[A-Za-z0-9_-]{10,}\.' "${logs[@]}" || fail "a JWT in the logs: $(grep -ohE 'eyJ[A-Za-z0-9_-]{10,}' "${logs[@]}" | head -1)"
! grep -qiE '[a-z0-9._%+-]+@(example\.com|privaterelay\.appleid\.com)' "$E2E_TMP/siwa.log" "$DIR/siwa.json.log" \
    || fail "an email address in siwa's logs"
pass "none of the $checked tokens, codes, nonces and emails of the checks is in siwa's logs (text and JSON) or nginx's; no JWT, no email address"
