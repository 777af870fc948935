#!/usr/bin/env bash
# The Apple ID emulator through nginx (its own TLS port): siwa reads its keys, verifies the identity
# tokens it mints and refuses tampered ones; its token endpoint accepts siwa's client secrets and
# refuses ones for another client id, expired ones and ones signed by another key; a notification
# is delivered to siwa's nginx.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

. "$(dirname "$0")/apple_helpers.sh"

apple GET /auth/keys
keys=$APPLE_BODY
[ "$APPLE_STATUS" = 200 ] || fail "GET /auth/keys: $APPLE_STATUS"
python3 -c 'import json,sys; k=json.load(sys.stdin)["keys"][0]; assert list(k)==["kty","kid","use","alg","n","e"], list(k)' <<<"$keys" \
    || fail "the key set is not shaped like Apple's: $keys"
request GET /health
grep -q '"appleKeys":"ok"' <<<"$BODY" || fail "siwa did not get the emulator's keys: $BODY"
pass "the emulator serves an Apple-shaped key set over TLS, and siwa has fetched it (/health appleKeys ok)"

apple POST /admin/users
[ "$APPLE_STATUS" = 401 ] || fail "admin without the secret: $APPLE_STATUS"
apple POST /admin/users -H "$ADMIN" -d '{"email":"e2e@example.com","firstName":"E","lastName":"Two"}'
[ "$APPLE_STATUS" = 201 ] || fail "create user: $APPLE_STATUS $APPLE_BODY"
USER_ID=$(json id <<<"$APPLE_BODY")
apple POST /admin/sign-in -H "$ADMIN" -d "{\"userId\":\"$USER_ID\",\"clientId\":\"com.example.siwa\",\"nonce\":\"e2e-raw-nonce\"}"
TOKEN=$(json identityToken <<<"$APPLE_BODY")
CODE=$(json authorizationCode <<<"$APPLE_BODY")
out=$(siwa verify-token "$TOKEN" --nonce e2e-raw-nonce --code "$CODE") || fail "an emulator token did not verify: $out"
grep -q "result: valid" <<<"$out" || fail "not valid: $out"
IFS=. read -r h p s <<<"$TOKEN"
tampered_payload=$(printf '%s' "$p" | tr 'A-Za-z' 'B-ZAb-za')
set +e
out=$(siwa verify-token "$h.$tampered_payload.$s" --nonce e2e-raw-nonce); status=$?
set -e
[ $status -eq 1 ] && grep -q "^FAIL  signature" <<<"$out" || fail "a tampered token: status $status, $out"
pass "siwa verify-token accepts an identity token minted by the emulator (nonce, c_hash) and refuses a tampered one"

token_call() { # token_call SECRET CLIENT_ID CODE
    apple POST /auth/token --data-urlencode "client_id=$2" --data-urlencode "client_secret=$1" \
        --data-urlencode "code=$3" --data-urlencode "grant_type=authorization_code"
}
new_code() { # sets NEW_CODE
    apple POST /admin/sign-in -H "$ADMIN" -d "{\"userId\":\"$USER_ID\",\"clientId\":\"com.example.siwa\"}"
    NEW_CODE=$(json authorizationCode <<<"$APPLE_BODY")
}
refused() { # refused SECRET WHAT: the secret gets 400 invalid_client for a fresh code
    new_code
    token_call "$1" com.example.siwa "$NEW_CODE"
    [ "$APPLE_STATUS" = 400 ] && [ "$APPLE_BODY" = '{"error":"invalid_client"}' ] || fail "$2: $APPLE_STATUS $APPLE_BODY"
}

token_call "$(siwa client-secret --client-id com.example.siwa)" com.example.siwa "$CODE"
[ "$APPLE_STATUS" = 200 ] || fail "a good client secret: $APPLE_STATUS $APPLE_BODY"
python3 -c 'import json,sys; b=json.load(sys.stdin); assert list(b)==["access_token","token_type","expires_in","refresh_token","id_token"], list(b)' <<<"$APPLE_BODY" \
    || fail "token response shape: $APPLE_BODY"
refused "$(siwa client-secret --client-id com.example.siwa.web)" "a secret for another client id (sub)"
grep -q "^SIWA_APPLE_CLIENT_SECRET_LIFETIME=" "$E2E_ENV" && fail "the lifetime below must not be overridden by the env file"
refused "$(SIWA_APPLE_CLIENT_SECRET_LIFETIME=60 siwa client-secret --client-id com.example.siwa --issued-at $(( $(date +%s) - 120 )))" "an expired secret"
(umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$E2E_TMP/other_key.p8" 2>/dev/null)
sed "s|^SIWA_APPLE_PRIVATE_KEY_FILE=.*|SIWA_APPLE_PRIVATE_KEY_FILE=$E2E_TMP/other_key.p8|" "$E2E_ENV" >"$E2E_TMP/other_key.env"
refused "$(siwa_with_env "$E2E_BIN" "$E2E_TMP/other_key.env" client-secret --client-id com.example.siwa)" "a secret signed by another key"
pass "the token endpoint accepts siwa client-secret, and answers invalid_client for another sub, an expired secret, another key"

apple POST /admin/notifications -H "$ADMIN" -d "{\"type\":\"consent-revoked\",\"userId\":\"$USER_ID\"}"
[ "$APPLE_STATUS" = 200 ] || fail "notification: $APPLE_STATUS $APPLE_BODY"
delivered=$(json deliveredStatus <<<"$APPLE_BODY")
[ -n "$delivered" ] || fail "the notification was not delivered: $APPLE_BODY"
grep -q "POST /webhook/apple" "$E2E_TMP/nginx/access.log" || fail "no POST /webhook/apple in nginx's log"
pass "a signed notification is delivered through nginx to /webhook/apple (answered $delivered)"
