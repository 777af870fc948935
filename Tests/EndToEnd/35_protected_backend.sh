#!/usr/bin/env bash
# The app's own backend behind nginx/siwa-protect.conf (auth_request to siwa's GET /auth/check),
# with the local stack's example location /example/whoami, whose upstream answers with the ids it
# received: no token, a valid one, forged id headers, a revoked session. The session cookie and
# the Origin rule are checked in 24_web_sign_in.sh, which has a cookie.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

request GET /example/whoami
expect_status 401 "no token"
[ "$(json error <<<"$BODY")" = invalid_token ] || fail "no token: $BODY"
expect_header 'www-authenticate: Bearer' "no token"
expect_header 'content-type: application/json' "no token"
expect_header 'strict-transport-security' "no token"
request GET /example/whoami -H 'X-Siwa-User-Id: 1' -H 'X-Siwa-Session-Id: 1'
expect_status 401 "forged id headers without a token"
request GET /example/whoami -H 'Authorization: Bearer not-a-token'
expect_status 401 "a malformed token"
pass "no token, forged id headers alone, or a malformed token: 401 JSON invalid_token with WWW-Authenticate: Bearer"

new_apple_user "gateway.e2e@example.com" Gate Way
apple_sign_in "$APPLE_USER" com.example.siwa nonce-gateway-1
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-gateway-1\",\"device\":\"gateway\"}"
expect_status 200 "the sign-in"
user=$(json user.id <<<"$BODY") session=$(json sessionId <<<"$BODY")
request GET /example/whoami -H "$(bearer "$ACCESS")"
expect_status 200 "a valid token"
expect_body "{\"userId\":\"$user\",\"sessionId\":\"$session\",\"method\":\"GET\"}" "a valid token"
request GET /example/whoami -H "$(bearer "$ACCESS")" -H 'X-Siwa-User-Id: 1' -H 'X-Siwa-Session-Id: 1'
expect_body "{\"userId\":\"$user\",\"sessionId\":\"$session\",\"method\":\"GET\"}" "a valid token with forged id headers"
request POST /example/whoami -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' -d '{"x":1}'
expect_status 200 "a write with a valid token"
[ "$(json method <<<"$BODY")" = POST ] && [ "$(json userId <<<"$BODY")" = "$user" ] || fail "a write with a valid token: $BODY"
pass "a valid token: 200 with the user and session ids from siwa, also when the client sent its own id headers, for GET and POST"

request POST /auth/logout -H "$(bearer "$ACCESS")"
expect_status 204 "sign-out"
request GET /example/whoami -H "$(bearer "$ACCESS")"
expect_status 401 "the token of an ended session"
pass "the token of a session that ended: 401 at once, though the token has not expired"
