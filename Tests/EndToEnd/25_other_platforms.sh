#!/usr/bin/env bash
# Apps on other platforms than iOS (Android, Flutter, Sign in with Apple JS) get a credential for a
# Services ID through Apple's web authorization, and post it to POST /auth/apple with the
# redirect_uri of that authorization: its code is exchanged with that URI, which must be one the
# configuration registers for the Services ID (SIWA_APPLE_REDIRECT_URIS), checked before Apple is
# called. An Android or Flutter app's Return URL is siwa's /auth/app-callback/NAME, which sends
# Apple's form post on to the app's configured target only (SIWA_APPLE_APP_CALLBACKS).
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

APP=com.example.siwa.app
SPA=$E2E_URL/example/spa/
# authorize USER RAW_NONCE [REDIRECT_URI]: Apple's web authorization for the apps' Services ID, the
# person consenting at the emulator; sets TOKEN CODE STATE and USER_JSON from Apple's form_post, and
# FORM, the form as Apple posts it.
authorize() {
    local hashed query form
    hashed=$(printf '%s' "$2" | sha256sum | cut -d' ' -f1)
    query="response_type=code%20id_token&response_mode=form_post&scope=name%20email&client_id=$APP&redirect_uri=$(urlq "${3:-$SPA}")&state=st-$2&nonce=$hashed"
    form=$(curl -ks -X POST --data "$query&user_id=$1&email_choice=share&action=continue" "$E2E_APPLE_URL/auth/authorize")
    eval "$(python3 -c 'import html,re,shlex,sys,urllib.parse
pairs=[(n, html.unescape(v)) for n, v in re.findall(r"name=\"([^\"]+)\" value=\"([^\"]*)\"", sys.stdin.read())]
fields=dict(pairs)
for name, var in [("id_token","TOKEN"),("code","CODE"),("state","STATE"),("user","USER_JSON")]:
    print(var + "=" + shlex.quote(fields.get(name, "")))
print("FORM=" + shlex.quote(urllib.parse.urlencode(pairs)))' <<<"$form")"
    [ -n "$TOKEN" ] && [ -n "$CODE" ] || fail "the emulator's form_post: $form"
    remember "$TOKEN" "$CODE" "$2"
}
body() { # body RAW_NONCE [REDIRECT_URI]: the app's POST /auth/apple
    printf '{"identityToken":"%s","authorizationCode":"%s","nonce":"%s"%s}' "$TOKEN" "$CODE" "$1" "${2:+,\"redirectUri\":\"$2\"}"
}

# --- A Services ID's credential with its code and a registered redirect URI signs in.
new_apple_user "android.e2e@example.com" Andy Droid
ANDY=$APPLE_USER
authorize "$ANDY" nonce-andy-1
[ "$STATE" = st-nonce-andy-1 ] || fail "the state did not come back: $STATE"
[ "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["name"]["firstName"])' "$USER_JSON")" = Andy ] \
    || fail "the first authorization's user JSON: $USER_JSON"
# Refused before Apple is called: an unregistered URI, none with a code, one for the bundle id.
for bad in "https://evil.example/cb" "${SPA}x" "${SPA%/}" "$E2E_URL/auth/callback"; do
    sign_in "$(body nonce-andy-1 "$bad")"
    expect_status 400 "redirectUri $bad"
    [ "$(json error <<<"$BODY")" = invalid_redirect_uri ] || fail "the error code for $bad: $BODY"
done
sign_in "$(body nonce-andy-1)"
expect_status 400 "a Services ID's code without redirectUri"
grep -q 'send it as redirectUri' <<<"$BODY" || fail "the message does not say what to send: $BODY"
# A redirect URI registered for the Services ID but not the authorization's: Apple refuses the code
# without using it, and the nonce is not spent either.
sign_in "$(body nonce-andy-1 "$E2E_URL/auth/app-callback/flutter")"
expect_error 400 invalid_grant "a registered redirectUri that is not the authorization's"
# The same code then works: Apple never used it (codes are single use), and the nonce was not spent.
sign_in "$(body nonce-andy-1 "$SPA")"
expect_status 200 "the Services ID's credential with its registered redirectUri"
andy_id=$(json user.id <<<"$BODY")
[ "$(sql "SELECT t.client_id FROM apple_tokens t JOIN apple_identities i ON i.id = t.identity_id WHERE i.user_id = $andy_id")" = "$APP" ] \
    || fail "no Apple token stored for $APP: $(sql 'SELECT identity_id, client_id FROM apple_tokens')"
[ "$(sql "SELECT apple_client_id FROM sessions WHERE user_id = $andy_id")" = "$APP" ] || fail "the session's client id"
pass "a Services ID's credential: refused (400 invalid_redirect_uri) for 4 unregistered URIs and without one, before Apple is called; refused by Apple (invalid_grant) with a registered redirectUri that is not the authorization's, the nonce not spent; with its registered redirectUri signed in, Apple's token stored for $APP"

sign_in "$(body nonce-andy-1 "$SPA")"
expect_error 401 nonce_reused "the same credential again"
apple_sign_in "$ANDY" com.example.siwa nonce-andy-native
sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"nonce-andy-native\",\"redirectUri\":\"$SPA\"}"
expect_error 400 invalid_redirect_uri "a bundle id's credential with a redirectUri"
pass "a replay is refused (nonce_reused); a bundle id's credential with a redirectUri is refused (400)"

# --- Account deletion revokes the Services ID's token at Apple, with its own client id.
authorize "$ANDY" nonce-andy-2
sign_in "$(body nonce-andy-2 "$SPA")"
expect_status 200 "a second sign-in with the Services ID"
apple GET "/admin/users/$ANDY" -H "$ADMIN"
python3 -c 'import json,sys; c={x["clientId"]:x for x in json.loads(sys.argv[1])["clients"]}; assert c[sys.argv[2]]["authorized"], c' "$APPLE_BODY" "$APP" \
    || fail "not authorized for $APP at the emulator: $APPLE_BODY"
request DELETE /auth/account -H "$(bearer "$ACCESS")"
expect_status 204 "account deletion"
out=$(siwa jobs --once)
grep -q "revocationsFailed=0" <<<"$out" || fail "the revocation job: $out"
apple GET "/admin/users/$ANDY" -H "$ADMIN"
python3 -c 'import json,sys; c={x["clientId"]:x for x in json.loads(sys.argv[1])["clients"]}; assert not c[sys.argv[2]]["authorized"] and c[sys.argv[2]]["refreshTokens"] == 0, c' "$APPLE_BODY" "$APP" \
    || fail "the emulator did not see $APP's token revoked: $APPLE_BODY"
pass "deleting the account revokes the Services ID's Apple token with its client id (the emulator saw it)"

# --- The Android / Flutter relay: Apple's form post to /auth/app-callback/flutter is sent on to the
# exact intent the sign_in_with_apple plugin waits for, in the configured package only.
RELAY=$E2E_URL/auth/app-callback/flutter
new_apple_user "flutter.e2e@example.com" Flutter Dash
FLUTTER=$APPLE_USER
authorize "$FLUTTER" nonce-flutter-1 "$RELAY"
location=$(curl -ks -o "$E2E_TMP/relay.html" -w '%{http_code} %header{location}' -X POST --data "$FORM" "$RELAY")
expected=$(python3 -c 'import sys,urllib.parse
pairs=[(n, v) for n, v in urllib.parse.parse_qsl(sys.argv[1], keep_blank_values=True) if n in ("code","id_token","state","user","error")]
print("303 intent://callback?" + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote, safe="*") + "#Intent;package=com.example.siwa.flutter;scheme=signinwithapple;end")' "$FORM")
[ "$location" = "$expected" ] || fail "the relay's redirect:
$location
expected
$expected"
eval "$(python3 -c 'import shlex,sys,urllib.parse
query=urllib.parse.urlsplit(sys.argv[1].split(" ", 1)[1]).query
fields=dict(urllib.parse.parse_qsl(query))
for name, var in [("id_token","TOKEN"),("code","CODE"),("state","STATE"),("user","RELAYED_USER")]:
    print(var + "=" + shlex.quote(fields.get(name, "")))' "$location")"
[ "$STATE" = st-nonce-flutter-1 ] && [ "$RELAYED_USER" = "$USER_JSON" ] || fail "state or user changed on the way: $STATE $RELAYED_USER"
sign_in "$(body nonce-flutter-1 "$RELAY")"
expect_status 200 "the Flutter app's sign-in with the relayed credential"
pass "Apple's form post to /auth/app-callback/flutter: 303 to exactly intent://callback?...#Intent;package=com.example.siwa.flutter;scheme=signinwithapple;end, state and user unchanged; the app then signs in with it"

# Other targets: an App Link keeps its own query; the form's extra fields are dropped.
location=$(curl -ks -o /dev/null -w '%header{location}' -X POST --data 'state=s1&code=c1&id_token=t1&redirect_uri=https://evil.example/&package=evil.pkg' "$E2E_URL/auth/app-callback/links")
[ "$location" = "https://app.example.com/apple?from=siwa&state=s1&code=c1&id_token=t1" ] || fail "the App Link target: $location"
# Nothing in the form reaches past the query: a state that tries to end it and name another package.
location=$(curl -ks -o /dev/null -w '%header{location}' -X POST --data-urlencode 'state=x#Intent;package=evil.pkg;scheme=https;end' --data 'code=c&id_token=t' "$RELAY")
[ "${location#*#}" = "Intent;package=com.example.siwa.flutter;scheme=signinwithapple;end" ] && [ "$(grep -o '#' <<<"$location" | wc -l)" = 1 ] \
    || fail "a state that names another package: $location"
pass "an App Link target keeps its query and gets only Apple's fields; a state naming another package stays inside the query"

# The relay's 303 has no body, so no Content-Type, and each of nginx's security headers once.
curl -ks -D "$E2E_TMP/relay.headers" -o /dev/null -X POST --data "$FORM" "$RELAY"
headers=$(tr -d '\r' <"$E2E_TMP/relay.headers")
for name in referrer-policy x-content-type-options x-frame-options strict-transport-security content-security-policy cache-control; do
    [ "$(grep -ci "^$name:" <<<"$headers")" = 1 ] || fail "the relay's $name headers: $headers"
done
! grep -qi '^content-type:' <<<"$headers" || fail "a content type on the relay's 303: $headers"
# relay_page STATUS DESCRIPTION CURL_ARGS...: the relay answers with the styled page, never a redirect.
relay_page() {
    local expected=$1 what=$2 out
    shift 2
    # nginx answers a body over its limit before reading it all, and curl may then fail to send the rest.
    out=$(curl -ks -o "$E2E_TMP/relay.html" -w '%{http_code} %header{location}' -H 'Accept: text/html' -X POST "$@" "$RELAY" || true)
    [ "$out" = "$expected " ] || fail "the relay with $what: $out"
    grep -q '<link rel="stylesheet" href="/app.css">' "$E2E_TMP/relay.html" || fail "not a styled page for $what"
}
relay_page 415 "a JSON body" -H 'Content-Type: application/json' --data '{"code":"c"}'
relay_page 415 "no Content-Type" -H 'Content-Type:' --data 'code=c&id_token=t'
relay_page 400 "an empty form" --data ''
relay_page 400 "a repeated state" --data 'state=a&state=b&code=c&id_token=t'
relay_page 400 "a code without an id_token" --data 'state=s&code=c'
pass "the relay refuses a JSON body, no Content-Type (415), an empty form, a repeated state, a code alone (400) with its page; its 303 has one of each security header and no Content-Type"

# Every value siwa sends back in a Location, at 4 KB and 64 KB: a page (400; nginx's 413 for a
# body), never a redirect, never nginx's 503 for a header too large. A URL over nginx's 8 KB
# (large_client_header_buffers) never reaches siwa: nginx answers 414 over HTTP/1.1 and closes the
# connection over HTTP/2 (curl: 000).
for name in code id_token state user error; do
    for size in 4096 65536; do
        python3 -c 'import sys,urllib.parse
fields=[(n, "c" if n == "code" else "t") for n in ("code", "id_token") if n != sys.argv[1]] + [(sys.argv[1], "A" * int(sys.argv[2]))]
sys.stdout.write(urllib.parse.urlencode(fields))' "$name" "$size" >"$E2E_TMP/relay.form"
        relay_page "$([ "$size" = 4096 ] && echo 400 || echo 413)" "$name of $size bytes" --data-binary "@$E2E_TMP/relay.form"
    done
done
for size in 4096 65536; do
    out=$(curl -ks -o "$E2E_TMP/start.html" -w '%{http_code} %header{location}' -H 'Accept: text/html' \
        "$E2E_URL/auth/app/start?client_id=desktop&redirect_uri=$(urlq http://127.0.0.1:53682/callback)&code_challenge=$(printf 'A%.0s' $(seq 43))&code_challenge_method=S256&state=$(head -c "$size" /dev/zero | tr '\0' s)" || true)
    case "$size $out" in
    "4096 400 ") grep -q '<link rel="stylesheet" href="/app.css">' "$E2E_TMP/start.html" || fail "not a styled page for a state of 4 KB" ;;
    "65536 414 " | "65536 000 ") ;;
    *) fail "the PKCE start with a state of $size bytes: $out" ;;
    esac
done
! grep -q 'too big header' "$E2E_TMP/nginx/error.log" || fail "nginx: $(grep 'too big header' "$E2E_TMP/nginx/error.log" | tail -1)"
pass "code, id_token, state, user and error of the relay and the PKCE start's state at 4 KB and 64 KB: 400 pages (at 64 KB nginx's 413 page, and for the URL its 414 or a closed connection), never a redirect or a 5xx"

# Unknown apps and the 17 open-redirect forms return_to is tested with, as the app's name: a page,
# never a redirect.
for name in unknown evil.example %2F%2Fevil.example %2F%5Cevil.example https%3A%2F%2Fevil.example%2F account%0Ab a%20b \
    a%E3%80%80b a%E2%80%A8b a%C2%A0b a%EF%BB%BFb a%E1%9A%80b a%E2%80%AFb a%09b FLUTTER flutter%00 \
    "intent:%2F%2Fcallback%23Intent%3Bpackage%3Devil.pkg%3Bend" "$(printf 'a%.0s' $(seq 1 300))"; do
    out=$(curl -ks -o "$E2E_TMP/relay.html" -w '%{http_code} %header{location}' -H 'Accept: text/html' -X POST --data "state=s&code=c" "$E2E_URL/auth/app-callback/$name")
    # nginx itself refuses a NUL in the path (400, before any location).
    [ "$out" = "404 " ] || { [ "$name" = flutter%00 ] && [ "$out" = "400 " ]; } || fail "the app name $name: $out"
    [ "$name" = flutter%00 ] || grep -q '<link rel="stylesheet" href="/app.css">' "$E2E_TMP/relay.html" || fail "not a styled page for $name"
done
request GET /auth/app-callback/flutter -H 'Accept: text/html'
expect_status 405 "GET of the relay"
expect_header "allow: POST" "the relay's Allow"
pass "18 unknown or open-redirect app names get a styled 404 (400 for a NUL) page, never a redirect; GET gets 405 (Allow: POST)"

# --- Any native app: the system browser and PKCE (RFC 8252, RFC 7636), a loopback redirect.
challenge_of() { python3 -c 'import base64,hashlib,sys; print(base64.urlsafe_b64encode(hashlib.sha256(sys.argv[1].encode()).digest()).rstrip(b"=").decode())' "$1"; }
ADMIN="Authorization: Bearer $(cat "$E2E_APPLE_ADMIN_SECRET_FILE")"
new_apple_user "desktop.e2e@example.com" Desk Top
DESK=$APPLE_USER
# app_code CLIENT REDIRECT_URI VERIFIER STATE [PERSON]: the browser's part (as Desk unless PERSON
# says); sets APP_LOCATION (where the browser was sent back to the app) and APP_CODE.
app_code() {
    browser_sign_in \
        "$E2E_URL/auth/app/start?client_id=$1&redirect_uri=$(urlq "$2")&code_challenge=$(challenge_of "$3")&code_challenge_method=S256&state=$4" \
        "${5:-$DESK}"
    APP_LOCATION=$BROWSER_LOCATION
    APP_CODE=$(python3 -c 'import sys,urllib.parse; print(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(sys.argv[1]).query)).get("code", ""))' "$APP_LOCATION")
    remember "$APP_CODE" "$3"
}
token() { # token FORM: POST /auth/token
    request POST /auth/token -H 'Content-Type: application/x-www-form-urlencoded' --data "$1"
}
VERIFIER=$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')
LOOPBACK=http://127.0.0.1:53682/callback
app_code desktop "$LOOPBACK" "$VERIFIER" st-desk-1
[[ "$APP_LOCATION" == "$LOOPBACK?code="*"&state=st-desk-1" ]] && [ -n "$APP_CODE" ] || fail "back to the app: $APP_LOCATION"
token "grant_type=authorization_code&client_id=desktop&code=$APP_CODE&code_verifier=$VERIFIER&redirect_uri=$(urlq "$LOOPBACK")"
expect_status 200 "the app's code with its verifier"
# RFC 6749 §5.1: the token endpoint's answers are never cached.
expect_header "cache-control: no-store" "the token answer"
expect_header "pragma: no-cache" "the token answer"
ACCESS=$(json accessToken <<<"$BODY")
DESK_REFRESH=$(json refreshToken <<<"$BODY")
remember "$ACCESS" "$DESK_REFRESH"
request GET /auth/me -H "$(bearer "$ACCESS")"
expect_status 200 "/auth/me with the app's token"
[ "$(json user.firstName <<<"$BODY")" = Desk ] || fail "the app's user: $BODY"
token "grant_type=authorization_code&client_id=desktop&code=$APP_CODE&code_verifier=$VERIFIER&redirect_uri=$(urlq "$LOOPBACK")"
expect_error 400 invalid_grant "the code again"
# RFC 6749 §5.2: error_description (message kept for this API's clients), and never cached.
python3 -c 'import json,sys; b=json.loads(sys.argv[1]); assert b["error_description"] and b["error_description"] == b["message"], b' "$BODY" \
    || fail "the token error's error_description: $BODY"
expect_header "cache-control: no-store" "the token error"
expect_header "pragma: no-cache" "the token error"
# RFC 6749 §4.1.2: the session the code opened is revoked, its access and refresh tokens with it.
request GET /auth/me -H "$(bearer "$ACCESS")"
expect_error 401 invalid_token "/auth/me with the token of a code presented twice"
request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$DESK_REFRESH\"}"
expect_status 401 "the refresh token of a code presented twice"
pass "the PKCE flow with a loopback redirect (any port): the browser comes back to http://127.0.0.1:53682/callback with a code and the state; the code and its verifier give a session; the code again is invalid_grant with error_description and revokes that session; both answers Cache-Control: no-store and Pragma: no-cache"

# Each refusal spends its code; each is the RFC's error.
refuse() { # refuse DESCRIPTION FORM_SUFFIX: a fresh code, refused with invalid_grant
    app_code desktop "$LOOPBACK" "$VERIFIER" st-desk-2
    token "grant_type=authorization_code&code=$APP_CODE&$2"
    expect_error 400 invalid_grant "$1"
    token "grant_type=authorization_code&code=$APP_CODE&client_id=desktop&code_verifier=$VERIFIER&redirect_uri=$(urlq "$LOOPBACK")"
    [ "$STATUS" = 400 ] || fail "$1: the code was not spent by the refused attempt ($STATUS)"
}
refuse "a wrong verifier" "client_id=desktop&code_verifier=$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')&redirect_uri=$(urlq "$LOOPBACK")"
refuse "another client's code" "client_id=cli&code_verifier=$VERIFIER&redirect_uri=$(urlq "$LOOPBACK")"
refuse "a changed redirect_uri (another port)" "client_id=desktop&code_verifier=$VERIFIER&redirect_uri=$(urlq http://127.0.0.1:53683/callback)"
app_code desktop "$LOOPBACK" "$VERIFIER" st-desk-3
sql "UPDATE web_sign_ins SET code_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE code_hash = UNHEX(SHA2('$APP_CODE', 256))"
token "grant_type=authorization_code&code=$APP_CODE&client_id=desktop&code_verifier=$VERIFIER&redirect_uri=$(urlq "$LOOPBACK")"
expect_status 400 "a code after its 60 s"
grep -q 'expired' <<<"$BODY" && [ "$(json error <<<"$BODY")" = invalid_grant ] || fail "an expired code: $BODY"
token "grant_type=password&username=x"
expect_error 400 unsupported_grant_type "another grant type"
token "grant_type=authorization_code&code=x&client_id=nobody&code_verifier=$VERIFIER&redirect_uri=$(urlq "$LOOPBACK")"
expect_error 401 invalid_client "an unregistered client"
token "grant_type=authorization_code&code=x&client_id=desktop"
expect_error 400 invalid_request "no verifier"
pass "a wrong verifier, another client's code, a changed redirect_uri and a code past its 60 s are invalid_grant (each spends the code); grant_type=password is unsupported_grant_type, an unregistered client invalid_client, a missing verifier invalid_request"

# A user made by the browser step and disabled before the app exchanges its code gets no session:
# the session is opened only for a user who is not disabled, even one this very sign-in made.
new_apple_user "lapse.e2e@example.com" Lapse User
app_code desktop "$LOOPBACK" "$VERIFIER" st-lapse "$APPLE_USER"
sql "UPDATE users SET disabled_at = UTC_TIMESTAMP(3) WHERE id = (SELECT user_id FROM web_sign_ins WHERE code_hash = UNHEX(SHA2('$APP_CODE', 256)))"
token "grant_type=authorization_code&code=$APP_CODE&client_id=desktop&code_verifier=$VERIFIER&redirect_uri=$(urlq "$LOOPBACK")"
[ "$STATUS" != 200 ] && [ "$(json error <<<"$BODY")" = user_disabled ] || fail "a new user disabled before the exchange: $STATUS $BODY"
pass "a user the browser step made, disabled before the exchange: $STATUS $(json error <<<"$BODY"), no session"

# Apple failing the code exchange during the browser step: the browser goes back to the app with
# error=temporarily_unavailable and the app's state (RFC 6749 §4.1.2.1), not to a page of ours.
apple POST /admin/behaviour -H "$ADMIN" -d '{"failureRate":1}'
[ "$APPLE_STATUS" = 200 ] || fail "the emulator's behaviour: $APPLE_STATUS $APPLE_BODY"
browser_sign_in "$E2E_URL/auth/app/start?client_id=desktop&redirect_uri=$(urlq "$LOOPBACK")&code_challenge=$(challenge_of "$VERIFIER")&code_challenge_method=S256&state=st-desk-down" "$DESK"
apple POST /admin/behaviour -H "$ADMIN" -d '{}'
[[ "$BROWSER_LOCATION" == "$LOOPBACK?error=temporarily_unavailable&error_description="*"&state=st-desk-down" ]] \
    || fail "Apple failing during the browser step: $BROWSER_LOCATION"
pass "Apple failing the exchange during the browser step: back to the app with error=temporarily_unavailable and its state"

# The start refuses an unregistered client or redirect URI with a page, never a redirect: the 17
# open-redirect forms return_to is tested with, and look-alikes of the registered URIs.
start_status() { curl -ks -o "$E2E_TMP/start.html" -w '%{http_code} %header{location}' -H 'Accept: text/html' \
    "$E2E_URL/auth/app/start?client_id=$1&redirect_uri=$(urlq "$2")&code_challenge=$(challenge_of "$VERIFIER")&code_challenge_method=S256&state=s"; }
for bad in "" account //evil.example '/\evil.example' https://evil.example/ $'/a\nb' '/a b' "/$(printf 'a%.0s' $(seq 1 512))" \
    $'//\u0301evil.example' $'/\\\u0301evil.example' $'/a\u3000b' $'/a\u2028b' $'/a\u00a0b' $'/a\ufeffb' $'/a\u1680b' $'/a\u202fb' $'/a\tb' \
    http://127.0.0.1:80@evil.example/callback http://127.0.0.1.evil.example/callback http://localhost:53682/callback \
    http://127.0.0.1:53682/callback/../evil http://127.0.0.1:53682/callbackx "http://127.0.0.1:53682/callback#x" \
    https://127.0.0.1:53682/callback com.example.siwa.desktop:/apple/x com.example.siwa.desktop://evil.example/apple \
    "intent://callback#Intent;package=evil.pkg;end"; do
    refused=$((${refused:-0} + 1))
    out=$(start_status desktop "$bad")
    [ "$out" = "400 " ] || fail "the start with redirect_uri $bad: $out"
    grep -q '<link rel="stylesheet" href="/app.css">' "$E2E_TMP/start.html" || fail "not a styled page for $bad"
done
[ "$(start_status nobody "$LOOPBACK")" = "400 " ] || fail "an unregistered client"
out=$(start_status desktop com.example.siwa.desktop:/apple)
[[ "$out" == "302 $E2E_APPLE_URL/auth/authorize?"* ]] || fail "the private-use scheme: $out"
out=$(curl -ks -o /dev/null -w '%header{location}' "$E2E_URL/auth/app/start?client_id=desktop&redirect_uri=$(urlq "$LOOPBACK")&code_challenge=$(challenge_of "$VERIFIER")&code_challenge_method=plain&state=s9")
[[ "$out" == "$LOOPBACK?error=invalid_request&"*"&state=s9" ]] || fail "code_challenge_method=plain: $out"
pass "the start: $refused unregistered redirect URIs (the 17 open-redirect forms, loopback look-alikes, another package's intent) and an unregistered client get a styled 400 page, never a redirect; plain PKCE goes back to the app with invalid_request"

# --- The cookie variant of Sign in with Apple JS is a cookie write: it must come from this site.
for origin in "" "Origin: https://evil.example" "Origin: null"; do
    request POST /auth/web/apple -H 'Content-Type: application/json' ${origin:+-H "$origin"} -d '{"identityToken":"x"}'
    expect_error 403 origin_mismatch "POST /auth/web/apple with ${origin:-no Origin}"
done
request POST /auth/web/apple -H 'Content-Type: application/json' -H "Origin: $E2E_URL" -H "Origin: $E2E_URL" -d '{"identityToken":"x"}'
expect_error 400 invalid_request "POST /auth/web/apple with two Origin headers (refused as every repeated Origin is)"
request POST /auth/web/apple -H 'Content-Type: application/json' -H "Origin: $E2E_URL" -d '{"identityToken":"x","linkToken":"y"}'
expect_error 400 invalid_request "POST /auth/web/apple with a linkToken"
pass "POST /auth/web/apple without our Origin (none, another, null) is 403 origin_mismatch; with two Origins or a linkToken 400"

# --- Sign in with Apple JS in a single-page app, in headless Chromium (spa_sign_in.py).
python3 "$(dirname "$0")/spa_sign_in.py" || fail "the single-page app"
