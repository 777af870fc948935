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
result=$(python3 "$(dirname "$0")/apple_frozen_load.py" "$bodies" "$SYNC_ACCESS" 6 5)
kill -CONT "$emulator_pid"
trap - EXIT
echo "    $result"
field() { json "$1" <<<"$result"; }
[ "$(field signIns.503)" -ge 25 ] && [ -z "$(field signIns.200)" ] && [ -z "$(field signIns.500)" ] \
    || fail "sign-ins with Apple frozen: $(field signIns)"
for route in health sync; do
    [ "$(field "$route.statuses")" = "{\"200\": $(field "$route.count")}" ] || fail "$route with Apple frozen: $(field "$route.statuses")"
    awk -v p="$(field "$route.p99_ms")" 'BEGIN { exit !(p < 100) }' || fail "$route p99 with Apple frozen: $(field "$route.p99_ms") ms"
done
grep -q 'Apple token endpoint unavailable' "$E2E_TMP/siwa.log" || fail "siwa did not log Apple's failure"
pass "Apple frozen, 5 sign-ins with codes a second: all 503 ($(field signIns)); /health p99 $(field health.p99_ms) ms and /sync p99 $(field sync.p99_ms) ms over $(field health.count) and $(field sync.count) requests"

# Thawed: after the cooldown (5 s by default) a new sign-in with a code goes through.
for attempt in $(seq 20); do
    apple_sign_in "$FROZEN" com.example.siwa "nonce-thawed-$attempt"
    sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-thawed-$attempt\"}"
    [ "$STATUS" = 200 ] && break
    [ "$STATUS" = 503 ] || fail "a sign-in after Apple was thawed: $STATUS $BODY"
    sleep 1
done
expect_status 200 "a sign-in with a code after Apple was thawed"
pass "Apple thawed: a sign-in with a code goes through again (attempt $attempt)"
