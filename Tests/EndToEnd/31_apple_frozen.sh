#!/usr/bin/env bash
# Apple frozen (the emulator stopped with SIGSTOP: connections open, nothing answers) while sign-ins
# with codes arrive at 5 a second: the calls to Apple in flight are bounded, the sign-ins get 503
# apple_unavailable, and GET /health and POST /sync keep a p99 under 100 ms. Thawed, sign-ins with
# codes go through again once the cooldown has passed.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

new_apple_user "frozen.e2e@example.com" Frozen Apple
FROZEN=$APPLE_USER
apple_sign_in "$FROZEN" com.example.siwa nonce-frozen-sync
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-frozen-sync\",\"device\":\"sync\"}"
expect_status 200 "the syncing device's sign-in"
SYNC_ACCESS=$ACCESS
bodies=$E2E_TMP/frozen_sign_ins
: >"$bodies"
for i in $(seq 30); do
    apple_sign_in "$FROZEN" com.example.siwa "nonce-frozen-$i"
    echo "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-frozen-$i\"}" >>"$bodies"
done

emulator_pid=$(cat "$E2E_TMP/emulator.pid")
kill -STOP "$emulator_pid"
trap 'kill -CONT "$emulator_pid" 2>/dev/null || true' EXIT
result=$(python3 "$(dirname "$0")/../../bench/apple_load.py" "$E2E_URL" "$bodies" "$SYNC_ACCESS" 6 5 8)
kill -CONT "$emulator_pid"
trap - EXIT
echo "    $result"
field() { json "$1" <<<"$result"; }
[ "$(field signIns.statuses.503)" -ge 25 ] && [ -z "$(field signIns.statuses.200)" ] && [ -z "$(field signIns.statuses.500)" ] \
    || fail "sign-ins with Apple frozen: $(field signIns.statuses)"
for route in health sync; do
    [ "$(field "$route.statuses")" = "{\"200\": $(field "$route.count")}" ] || fail "$route with Apple frozen: $(field "$route.statuses")"
    awk -v p="$(field "$route.p99_ms")" 'BEGIN { exit !(p < 100) }' || fail "$route p99 with Apple frozen: $(field "$route.p99_ms") ms"
done
grep -q 'Apple token endpoint unavailable' "$E2E_TMP/siwa.log" || fail "siwa did not log Apple's failure"
pass "Apple frozen, 5 sign-ins with codes a second: all 503 ($(field signIns.statuses)); /health p99 $(field health.p99_ms) ms and /sync p99 $(field sync.p99_ms) ms over $(field health.count) and $(field sync.count) requests"

# Thawed: after the cooldown (SIWA_APPLE_UNREACHABLE_COOLDOWN, 2 s here) a new sign-in with a code
# goes through.
for attempt in $(seq 50); do
    apple_sign_in "$FROZEN" com.example.siwa "nonce-thawed-$attempt"
    sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-thawed-$attempt\"}"
    [ "$STATUS" = 200 ] && break
    [ "$STATUS" = 503 ] || fail "a sign-in after Apple was thawed: $STATUS $BODY"
    sleep 0.2
done
expect_status 200 "a sign-in with a code after Apple was thawed"
pass "Apple thawed: a sign-in with a code goes through again (attempt $attempt)"

# Apple answering 500, then Apple hanging, to a sign-in with a code: 503, and the nonce is not spent,
# so the app's retry of the same request signs in once Apple answers again; a replay after that is
# nonce_reused.
behave() {
    apple POST /admin/behaviour -H "$ADMIN" -d "$1"
    [ "$APPLE_STATUS" = 200 ] || fail "the emulator's behaviour: $APPLE_STATUS $APPLE_BODY"
}
for outage in '{"failureRate":1}' '{"hang":true}'; do
    apple_sign_in "$FROZEN" com.example.siwa "nonce-outage-${#outage}"
    request_body="{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-outage-${#outage}\"}"
    behave "$outage"
    sign_in "$request_body"
    [ "$STATUS" = 503 ] && grep -q '"error":"apple_unavailable"' <<<"$BODY" || fail "a sign-in while Apple is $outage: $STATUS $BODY"
    behave '{}'
    # After a hang (a timeout), siwa waits out its cooldown before it calls Apple again: 503 until then.
    for attempt in $(seq 50); do
        sign_in "$request_body"
        [ "$STATUS" = 503 ] || break
        sleep 0.2
    done
    expect_status 200 "the same sign-in once Apple answers again (after $outage)"
    sign_in "$request_body"
    [ "$STATUS" = 401 ] && grep -q '"error":"nonce_reused"' <<<"$BODY" || fail "a replay after the retry signed in: $STATUS $BODY"
done
pass "Apple answering 500, then hanging: 503; the same request after Apple recovered signs in; a replay of it is nonce_reused"

# A code of another person's sign-in: refused (code_mismatch), and the refresh token siwa got for it
# is revoked at Apple by the next jobs pass, since no account here holds that person.
new_apple_user "mismatch.other@example.com" Other Person
OTHER=$APPLE_USER
apple_sign_in "$OTHER" com.example.siwa nonce-mismatch-other
other_code=$CODE
# A token without c_hash (some of Apple's native ones): only the exchange tells whose code it is.
apple_sign_in "$FROZEN" com.example.siwa nonce-mismatch '"withoutCodeHash":true'
queued() { sql "SELECT COUNT(*) FROM apple_revocations WHERE done_at IS NULL"; }
queued_before=$(queued)
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$other_code\",\"nonce\":\"nonce-mismatch\"}"
[ "$STATUS" = 401 ] && grep -q '"error":"code_mismatch"' <<<"$BODY" || fail "a code of another sign-in: $STATUS $BODY"
live_tokens() { apple GET "/admin/users/$OTHER" -H "$ADMIN"; json clients.0.refreshTokens <<<"$APPLE_BODY"; }
[ "$(live_tokens)" = 1 ] || fail "the exchange of the other person's code left no token at Apple: $APPLE_BODY"
[ "$(queued)" = $((queued_before + 1)) ] || fail "no revocation queued ($queued_before before, $(queued) after)"
out=$(siwa jobs --once)
[ "$(live_tokens)" = 0 ] || fail "the orphaned token is still live at Apple after siwa jobs ($out): $APPLE_BODY"
pass "a code of another sign-in: 401 code_mismatch, and the token its exchange got is revoked at Apple by siwa jobs"
