#!/usr/bin/env bash
# Native sign-in through nginx over TLS against the Apple ID emulator: new and returning users,
# hidden email, the name only the first time; refused tokens (replayed nonce, another audience,
# `user` not the subject); refresh rotation and reuse detection; logout; the session list and
# revoking one; our JWKS; account deletion with the revocation retried while "Apple" is down;
# consent withdrawn at Apple and caught by the daily validation, Apple unreachable during it; key rotation.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

. "$(dirname "$0")/apple_helpers.sh"

# --- New user, with the name of the first authorization and a code exchange.
new_apple_user "jane.e2e@example.com" Jane Appleseed
JANE=$APPLE_USER
apple_sign_in "$JANE" com.example.siwa nonce-jane-1
[ -n "$USER_JSON" ] || fail "the emulator sent no user JSON on a first authorization"
FIRST_TOKEN=$TOKEN
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-jane-1\",\"user\":\"$SUB\",\"fullName\":{\"givenName\":\" Jane \",\"familyName\":\"Appleseed\"},\"device\":\"Jane's iPhone\"}"
expect_status 200 "a first sign-in"
[ "$(json isNewUser <<<"$BODY")" = true ] || fail "isNewUser: $BODY"
[ "$(json tokenType <<<"$BODY")" = Bearer ] && [ "$(json expiresIn <<<"$BODY")" = 900 ] || fail "token shape: $BODY"
[ "$(json user.firstName <<<"$BODY")" = Jane ] || fail "the name was not stored trimmed: $BODY"
[ "$(json user.emails.0.address <<<"$BODY")" = jane.e2e@example.com ] && [ "$(json user.emails.0.isPrivateRelay <<<"$BODY")" = false ] \
    || fail "the email: $BODY"
JANE_ID=$(json user.id <<<"$BODY")
JANE_ACCESS=$ACCESS JANE_REFRESH=$REFRESH
apple GET "/admin/users/$JANE" -H "$ADMIN"
[ "$(json clients.0.refreshTokens <<<"$APPLE_BODY")" = 1 ] || fail "the code was not exchanged at the emulator: $APPLE_BODY"
sealed=$(sql "SELECT t.client_id, t.token_key_id, LENGTH(t.token) > 28 FROM apple_tokens t JOIN apple_identities i ON i.id = t.identity_id WHERE i.user_id = $JANE_ID")
[ "$sealed" = "$(printf 'com.example.siwa\tk1\t1')" ] || fail "Apple's refresh token is not stored sealed with its client id: $sealed"
pass "a new user: 200 with isNewUser, Bearer 900 s, the name trimmed, the email; the code exchanged and Apple's token sealed (key k1, client id)"

# --- The same token and nonce again.
sign_in "{\"identityToken\":\"$FIRST_TOKEN\",\"nonce\":\"nonce-jane-1\"}"
expect_status 401 "a replayed nonce"
[ "$(json error <<<"$BODY")" = nonce_reused ] || fail "a replayed nonce: $BODY"
pass "a replayed identity token with the same nonce: 401 nonce_reused"

# --- Returning user: no name from Apple, an empty one from the app; nothing is overwritten.
apple_sign_in "$JANE" com.example.siwa nonce-jane-2
[ -z "$USER_JSON" ] || fail "the emulator sent the user JSON again: $USER_JSON"
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-jane-2\",\"fullName\":{\"givenName\":\"\",\"familyName\":null},\"device\":\"Jane's iPad\"}"
expect_status 200 "a returning sign-in"
[ "$(json isNewUser <<<"$BODY")" = false ] && [ "$(json user.id <<<"$BODY")" = "$JANE_ID" ] || fail "not the same user: $BODY"
[ "$(json user.firstName <<<"$BODY")" = Jane ] && [ "$(json user.lastName <<<"$BODY")" = Appleseed ] || fail "the name was lost: $BODY"
[ "$(json user.emails.0.address <<<"$BODY")" = jane.e2e@example.com ] || fail "the email was lost: $BODY"
IPAD_ACCESS=$ACCESS IPAD_REFRESH=$REFRESH
pass "a returning user: the same user, isNewUser false, name and email kept"

# --- Refused tokens, each with its own error.
apple_sign_in "$JANE" com.example.siwa nonce-jane-3
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-jane-3\",\"user\":\"001234.00000000000000000000000000000000.0000\"}"
expect_status 401 "user is not sub"
[ "$(json error <<<"$BODY")" = user_mismatch ] || fail "user is not sub: $BODY"
apple_sign_in "$JANE" com.example.other nonce-jane-4
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-jane-4\"}"
expect_status 401 "another audience"
[ "$(json error <<<"$BODY")" = invalid_token ] && grep -q audienceMismatch <<<"$BODY" || fail "another audience: $BODY"
apple_sign_in "$JANE" com.example.siwa nonce-jane-5
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"another-nonce\"}"
grep -q nonceMismatch <<<"$BODY" && [ "$STATUS" = 401 ] || fail "a wrong nonce: $STATUS $BODY"
sign_in "{\"identityToken\":\"$TOKEN\"}"
grep -q nonceMissing <<<"$BODY" && [ "$STATUS" = 401 ] || fail "no nonce: $STATUS $BODY"
request POST /auth/apple -H 'Content-Type: application/json' -d '{"nonce":"x"}'
expect_status 400 "no identity token"
request POST /auth/apple -H 'Content-Type: text/plain' -d '{}'
expect_status 415 "a text body"
pass "refused: user not sub (user_mismatch), another audience (audienceMismatch), wrong or missing nonce; 400 and 415 for bad bodies"

# --- Names and device labels longer than their columns in code points, not in characters: e + U+0301
# is one character and two code points, a flag one character and two code points.
new_apple_user "long.e2e@example.com" Long Name
apple_sign_in "$APPLE_USER" com.example.siwa nonce-long-1
combining=$(python3 -c 'print("e\u0301" * 100, end="")')
flags=$(python3 -c 'print("\U0001F1EB\U0001F1F7" * 100, end="")')
device=$(python3 -c 'print("e\u0301" * 128, end="")')
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-long-1\",\"fullName\":{\"givenName\":\"$combining\",\"familyName\":\"$flags\"},\"device\":\"$device\"}"
expect_status 200 "a sign-in with names and a device longer than their columns"
LONG_ID=$(json user.id <<<"$BODY")
stored=$(sql "SELECT CHAR_LENGTH(first_name), CHAR_LENGTH(last_name) FROM users WHERE id = $LONG_ID")
[ "$stored" = "$(printf '100\t100')" ] || fail "the names were not stored cut to 100 code points: $stored"
device=$(sql "SELECT CHAR_LENGTH(device) FROM sessions WHERE user_id = $LONG_ID")
[ "$device" = 128 ] || fail "the device was not stored cut to 128 code points: $device"
pass "names of 100 combining characters or flags and a device of 128 combining characters: 200, stored cut by code points (100, 128)"

# --- Hidden email: a relay address, flagged.
new_apple_user "hidden.e2e@example.com" Hidden Person
apple_sign_in "$APPLE_USER" com.example.siwa nonce-hidden-1 '"hideEmail":true'
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-hidden-1\"}"
expect_status 200 "a hidden-email sign-in"
relay=$(json user.emails.0.address <<<"$BODY")
remember "$relay"
[[ "$relay" == *@privaterelay.appleid.com ]] && [ "$(json user.emails.0.isPrivateRelay <<<"$BODY")" = true ] \
    && [ "$(json user.emails.0.forwardingEnabled <<<"$BODY")" = true ] || fail "a hidden email: $BODY"
pass "a hidden email is stored as the relay address, flagged isPrivateRelay, forwarding on"

# --- /auth/me, the JWKS.
request GET /auth/me -H "$(bearer "$JANE_ACCESS")"
expect_status 200 "/auth/me"
[ "$(json user.id <<<"$BODY")" = "$JANE_ID" ] || fail "/auth/me: $BODY"
request GET /auth/me
expect_status 401 "/auth/me without a token"
request GET /auth/me -H "$(bearer "$FIRST_TOKEN")"
expect_status 401 "/auth/me with Apple's identity token"
request GET /auth/jwks.json
expect_status 200 "/auth/jwks.json"
kid=$(python3 -c 'import sys,json,base64; h=sys.argv[1].split(".")[0]; print(json.loads(base64.urlsafe_b64decode(h+"="*(-len(h)%4)))["kid"])' "$JANE_ACCESS")
grep -q "\"kid\":\"$kid\"" <<<"$BODY" || fail "the access token's kid $kid is not in the JWKS: $BODY"
pass "/auth/me with the access token (401 without one, or with Apple's token); the JWKS publishes the kid"

# --- Refresh rotation and reuse detection.
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$JANE_REFRESH\"}"
expect_status 200 "a refresh"
ROTATED=$(json refreshToken <<<"$BODY")
remember "$ROTATED" "$(json accessToken <<<"$BODY")"
[ "$ROTATED" != "$JANE_REFRESH" ] || fail "the refresh token did not rotate"
request GET /auth/me -H "$(bearer "$(json accessToken <<<"$BODY")")"
expect_status 200 "the refreshed access token"
# The answer was lost: the same token again within SIWA_REFRESH_REUSE_INTERVAL (3 s here).
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$JANE_REFRESH\"}"
expect_status 200 "a retry of the refresh within the reuse interval"
RETRIED=$(json refreshToken <<<"$BODY")
remember "$RETRIED" "$(json accessToken <<<"$BODY")"
[ "$(json sessionId <<<"$BODY")" = "$(sql "SELECT id FROM sessions WHERE user_id = $JANE_ID AND device = 'Jane''s iPhone'")" ] \
    || fail "the retry did not keep the session: $BODY"
[ "$(sql "SELECT COUNT(*) FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE s.user_id = $JANE_ID AND s.device = 'Jane''s iPhone' AND t.spent_at IS NULL")" = 1 ] \
    || fail "the retry forked the session into two live tokens"
sleep 4
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$JANE_REFRESH\"}"
expect_status 401 "a spent refresh token after the reuse interval"
[ "$(json error <<<"$BODY")" = token_reused ] || fail "reuse: $BODY"
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$RETRIED\"}"
expect_status 401 "the family after reuse"
request GET /auth/me -H "$(bearer "$JANE_ACCESS")"
expect_status 401 "an access token of the revoked session"
[ "$(sql "SELECT COUNT(*) FROM audit_events WHERE event_type = 'refresh_token_reuse' AND user_id = $JANE_ID")" = 1 ] \
    || fail "no audit event for the reuse"
request POST /auth/refresh -H 'Content-Type: application/json' -d '{"refreshToken":"not-a-token"}'
expect_status 401 "an unknown refresh token"
pass "refresh rotates; a retry within the reuse interval keeps the session with one live token; after it: 401 token_reused, the whole family and its access tokens revoked, an audit event"

# --- Sessions: list, revoke one, logout.
apple_sign_in "$JANE" com.example.siwa nonce-jane-6
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-jane-6\",\"device\":\"Jane's Mac\"}"
MAC_ACCESS=$ACCESS
request GET /auth/sessions -H "$(bearer "$MAC_ACCESS")"
expect_status 200 "the session list"
[ "$(python3 -c 'import sys,json; print(sorted(s["device"] for s in json.load(sys.stdin)["sessions"]))' <<<"$BODY")" = "[\"Jane's Mac\", \"Jane's iPad\"]" ] \
    || fail "the session list: $BODY"
IPAD_SESSION=$(python3 -c 'import sys,json; print([s["id"] for s in json.load(sys.stdin)["sessions"] if not s["current"]][0])' <<<"$BODY")
request DELETE "/auth/sessions/$IPAD_SESSION" -H "$(bearer "$MAC_ACCESS")"
expect_status 204 "revoking the iPad"
request GET /auth/me -H "$(bearer "$IPAD_ACCESS")"
expect_status 401 "the revoked iPad"
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$IPAD_REFRESH\"}"
expect_status 401 "the revoked iPad's refresh token"
request DELETE "/auth/sessions/$IPAD_SESSION" -H "$(bearer "$MAC_ACCESS")"
expect_status 404 "revoking it again"
request POST /auth/logout -H "$(bearer "$MAC_ACCESS")"
expect_status 204 "logout"
request GET /auth/me -H "$(bearer "$MAC_ACCESS")"
expect_status 401 "after logout"
pass "the session list names both devices; revoking one ends it (access and refresh); logout ends the caller's"

# --- Account deletion while "Apple" is down: 204 at once, the revocation retried until it lands.
apple_sign_in "$JANE" com.example.siwa nonce-jane-7
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-jane-7\"}"
expect_status 200 "a sign-in before deletion"
apple GET "/admin/users/$JANE" -H "$ADMIN"
[ "$(json clients.0.authorized <<<"$APPLE_BODY")" = true ] || fail "not authorized at the emulator: $APPLE_BODY"
stop_pidfile "$E2E_TMP/emulator.pid" 10
start=$(date +%s%N)
request DELETE /auth/account -H "$(bearer "$ACCESS")"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_status 204 "account deletion"
request GET /auth/me -H "$(bearer "$ACCESS")"
expect_status 401 "the deleted account's token"
[ "$(sql "SELECT (SELECT COUNT(*) FROM users WHERE id = $JANE_ID) + (SELECT COUNT(*) FROM sessions WHERE user_id = $JANE_ID) + (SELECT COUNT(*) FROM user_emails WHERE user_id = $JANE_ID) + (SELECT COUNT(*) FROM apple_identities WHERE user_id = $JANE_ID)")" = 0 ] \
    || fail "rows of the deleted user remain"
out=$(siwa jobs --once)
grep -q "revoked=0 revocationsFailed=1" <<<"$out" || fail "the job with the emulator down: $out"
[ "$(sql "SELECT attempts, last_error IS NOT NULL, done_at IS NULL FROM apple_revocations")" = "$(printf '1\t1\t1')" ] \
    || fail "the outbox after a failed attempt: $(sql 'SELECT * FROM apple_revocations')"
start_emulator "$(dirname "$E2E_BIN")/appleid-emulator" "$E2E_TMP/apple/emulator.json" "$E2E_TMP/emulator.log" "$E2E_TMP/emulator.pid"
out=$(siwa jobs --once)
grep -q "revoked=0 revocationsFailed=0" <<<"$out" || fail "the retry ran before its time: $out"
sql "UPDATE apple_revocations SET next_attempt_at = UTC_TIMESTAMP(3)"
out=$(siwa jobs --once)
grep -q "revoked=1 revocationsFailed=0" <<<"$out" || fail "the retry: $out"
apple GET "/admin/users/$JANE" -H "$ADMIN"
[ "$(json clients.0.authorized <<<"$APPLE_BODY")" = false ] && [ "$(json clients.0.refreshTokens <<<"$APPLE_BODY")" = 0 ] \
    || fail "the emulator did not see the revocation: $APPLE_BODY"
pass "DELETE /auth/account: 204 in ${elapsed_ms} ms with Apple down, every row gone; the outbox retried (attempt 1 failed) and the emulator saw the revoke"

# --- Consent withdrawn at Apple, caught by the daily validation.
new_apple_user "withdrawn.e2e@example.com" With Drawn
WITHDRAWN=$APPLE_USER
apple_sign_in "$WITHDRAWN" com.example.siwa nonce-withdrawn-1
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-withdrawn-1\"}"
expect_status 200 "a sign-in"
W_ID=$(json user.id <<<"$BODY")
W_ACCESS=$ACCESS W_REFRESH=$REFRESH
due=$(sql "SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), t.next_validation_at) BETWEEN 86000 AND 90001 FROM apple_tokens t JOIN apple_identities i ON i.id = t.identity_id WHERE i.user_id = $W_ID")
[ "$due" = 1 ] || fail "the next validation is not about a day away: $due"
sql "UPDATE apple_tokens t JOIN apple_identities i ON i.id = t.identity_id SET t.next_validation_at = UTC_TIMESTAMP(3) WHERE i.user_id = $W_ID"
out=$(siwa jobs --once)
grep -q "validated=1 consentRevoked=0" <<<"$out" || fail "a still-valid token: $out"
apple POST "/admin/users/$WITHDRAWN/revoke" -H "$ADMIN" -d '{"clientId":"com.example.siwa"}'
[ "$APPLE_STATUS" = 200 ] || fail "revoke at the emulator: $APPLE_STATUS"
sql "UPDATE apple_tokens t JOIN apple_identities i ON i.id = t.identity_id SET t.next_validation_at = UTC_TIMESTAMP(3) WHERE i.user_id = $W_ID"
out=$(siwa jobs --once)
grep -q "consentRevoked=1" <<<"$out" || fail "the validation after consent was withdrawn: $out"
request GET /auth/me -H "$(bearer "$W_ACCESS")"
expect_status 401 "a session after consent was withdrawn"
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$W_REFRESH\"}"
expect_status 401 "a refresh after consent was withdrawn"
pass "the daily validation: a valid token moves its next check a day on; after consent is withdrawn at Apple, invalid_grant ends every session"

# --- Apple unreachable during the daily validation: the sessions stay, the check is retried later.
new_apple_user "unreachable.e2e@example.com" Un Reachable
apple_sign_in "$APPLE_USER" com.example.siwa nonce-unreachable-1
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-unreachable-1\"}"
expect_status 200 "a sign-in"
U_ID=$(json user.id <<<"$BODY")
U_ACCESS=$ACCESS
stop_pidfile "$E2E_TMP/emulator.pid" 10
sql "UPDATE apple_tokens t JOIN apple_identities i ON i.id = t.identity_id SET t.next_validation_at = UTC_TIMESTAMP(3) WHERE i.user_id = $U_ID"
out=$(siwa jobs --once 2>/dev/null)
start_emulator "$(dirname "$E2E_BIN")/appleid-emulator" "$E2E_TMP/apple/emulator.json" "$E2E_TMP/emulator.log" "$E2E_TMP/emulator.pid"
grep -q "validationsFailed=1" <<<"$out" || fail "the validation with Apple down: $out"
request GET /auth/me -H "$(bearer "$U_ACCESS")"
expect_status 200 "a session while Apple was unreachable"
retry=$(sql "SELECT i.consent_state, TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), t.next_validation_at) BETWEEN 800 AND 901 FROM apple_tokens t JOIN apple_identities i ON i.id = t.identity_id WHERE i.user_id = $U_ID")
[ "$retry" = "$(printf 'active\t1')" ] || fail "the identity after a failed validation: $retry"
pass "Apple unreachable during the daily validation: the session stays, consent stays active, the check is retried in 15 minutes"

# --- siwa keys rotate: the running server signs with the new key within its rescan time
# (SIWA_ACCESS_KEYS_RESCAN, 1 s in these tests); a token signed before stays valid, and both keys are
# published.
new_apple_user "rotate.e2e@example.com" Ro Tate
apple_sign_in "$APPLE_USER" com.example.siwa nonce-rotate-1
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-rotate-1\"}"
BEFORE_ACCESS=$ACCESS BEFORE_REFRESH=$REFRESH
kid_of() { python3 -c 'import sys,json,base64; h=sys.argv[1].split(".")[0]; print(json.loads(base64.urlsafe_b64decode(h+"="*(-len(h)%4)))["kid"])' "$1"; }
old_kid=$(kid_of "$BEFORE_ACCESS")
out=$(siwa keys rotate)
new_kid=$(sed -n 's/^added \([^;]*\).*/\1/p' <<<"$out")
[ -n "$new_kid" ] && [ "$new_kid" != "$old_kid" ] || fail "siwa keys rotate: $out"
# Until the new key is published (at most 10 s): the ring that publishes it also signs.
for _ in $(seq 100); do
    request GET /auth/jwks.json
    grep -q "\"kid\":\"$new_kid\"" <<<"$BODY" && break
    sleep 0.1
done
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$BEFORE_REFRESH\"}"
expect_status 200 "a refresh after the rotation"
[ "$(kid_of "$(json accessToken <<<"$BODY")")" = "$new_kid" ] || fail "the new key does not sign: $BODY"
request GET /auth/me -H "$(bearer "$BEFORE_ACCESS")"
expect_status 200 "a token signed with the previous key"
request GET /auth/jwks.json
grep -q "\"kid\":\"$old_kid\"" <<<"$BODY" && grep -q "\"kid\":\"$new_kid\"" <<<"$BODY" || fail "the JWKS after rotation: $BODY"
pass "siwa keys rotate: new tokens carry the new kid within the rescan time, tokens of the previous key stay valid, both keys in the JWKS"
