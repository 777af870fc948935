#!/usr/bin/env bash
# The web sign-in: a real headless Chromium (web_sign_in.py) through the page, the emulator's consent
# and Apple's form post, every page and error page at two screen sizes (siwa stopped for the 503s); then, with curl, the binding of the one-time handle to the browser that
# started the sign-in, and `return_to` limited to our own paths.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

command -v chromium >/dev/null || fail "chromium is not installed (scripts/lib.sh installs it)"
python3 "$(dirname "$0")/web_sign_in.py" || fail "the browser sign-in"

# siwa down: nginx's styled 503 pages in the browser; then siwa again for the checks below.
stop_pidfile "$E2E_TMP/siwa.pid" 30
python3 "$(dirname "$0")/web_sign_in.py" --unavailable || fail "the pages with siwa down"
start_siwa "$E2E_BIN" "$E2E_ENV" "$E2E_TMP/siwa.log" "$E2E_TMP/siwa.pid"
wait_for_health 100
expect_status 200 "siwa started again"

# The same flow by hand: the handle works only in the browser that holds the binding cookie, once.
jar=$E2E_TMP/web_jar
ADMIN="Authorization: Bearer $(cat "$E2E_APPLE_ADMIN_SECRET_FILE")"
user=$(curl -ks -X POST -H "$ADMIN" -d '{"email":"curl.e2e@example.com"}' "$E2E_APPLE_URL/admin/users" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
web_handle() { # start, consent at the emulator as $user, post Apple's answer to the callback: sets COMPLETE
    browser_callback "$E2E_URL/auth/web/start?return_to=/account" "$user" "$jar"
    grep -q '__Host-siwa_signin' "$jar" || fail "no binding cookie"
    ! grep -qE 'code=|id_token=|state=' <<<"$COMPLETE" || fail "a token in the redirect URL: $COMPLETE"
}
web_handle
request GET "${COMPLETE#"$E2E_URL"}"
expect_status 403 "the handle in another browser"
request GET "${COMPLETE#"$E2E_URL"}" -b "$jar"
expect_status 400 "the handle again, even with the right cookie"
pass "the one-time handle is refused without the binding cookie (403) and cannot be used twice (400); no token in the redirect URL"

web_handle
request GET "${COMPLETE#"$E2E_URL"}" -b "$jar"
expect_status 303 "the handle with the binding cookie"
expect_header "location: /account" "the redirect to return_to"
expect_header "set-cookie: __Host-siwa_session=" "the session cookie"
pass "with the binding cookie the handle sets the session cookie and returns to return_to (/account)"

for bad in '//evil.example/' 'https://evil.example/' '/\evil.example' 'account'; do
    request GET "/auth/web/start?return_to=$(urlq "$bad")"
    expect_status 400 "return_to $bad"
done
pass "return_to other than a path on this site (//host, https://host, /\\host, relative) gets 400"

# return_to beyond ASCII goes back percent-encoded, never as raw UTF-8.
browser_callback "$E2E_URL/auth/web/start?return_to=$(urlq '/café?x=ü')" "$user" "$jar"
request GET "${COMPLETE#"$E2E_URL"}" -b "$jar"
expect_status 303 "the handle of a sign-in with return_to /café?x=ü"
expect_header "location: /caf%C3%A9?x=%C3%BC$" "the percent-encoded return_to"
# Invisible characters and slashes in disguise are refused with the page, and so are 4 KB; 64 KB
# never reaches siwa (nginx's 414 over HTTP/1.1, a closed connection over HTTP/2, curl's 000).
for bad in $'/a\u200bb' $'/a\u034fb' $'/a\u180eb' $'/\u202etxt.exe' $'/\uff0fevil.example' $'/\uff3cevil.example' $'/a\u2215b'; do
    request GET "/auth/web/start?return_to=$(urlq "$bad")" -H 'Accept: text/html'
    expect_status 400 "return_to $bad"
    grep -q '<link rel="stylesheet" href="/app.css">' <<<"$BODY" || fail "not a styled page for return_to $bad"
done
for size in 4096 65536; do
    request GET "/auth/web/start?return_to=/$(head -c "$size" /dev/zero | tr '\0' a)" -H 'Accept: text/html'
    [[ "$size $STATUS" =~ ^(4096\ 400|65536\ (414|000))$ ]] && ! grep -qi '^location:' <<<"$HEADERS" \
        || fail "return_to of $size bytes: $STATUS $HEADERS"
done
# Apple's error goes back to return_to as it is when it is a code, as invalid_request otherwise.
for error in user_cancelled_authorize 'user_cancelled_authorize<b>x' "$(printf 'e%.0s' $(seq 65))"; do
    location=$(curl -ks -c "$jar" -o /dev/null -w '%header{location}' "$E2E_URL/auth/web/start?return_to=/account")
    state=$(python3 -c 'import sys,urllib.parse; print(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(sys.argv[1]).query))["state"])' "$location")
    COMPLETE=$(curl -ks -o /dev/null -w '%header{location}' -X POST --data "state=$state&error=$(urlq "$error")" "$E2E_URL/auth/callback")
    request GET "${COMPLETE#"$E2E_URL"}" -b "$jar"
    expected=$([ "$error" = user_cancelled_authorize ] && echo "$error" || echo invalid_request)
    expect_header "location: /account?sign_in_error=$expected$" "Apple's error ${error:0:30}"
done
pass "return_to /café?x=ü goes back as /caf%C3%A9?x=%C3%BC; U+200B, U+034F, U+180E, U+202E, fullwidth and division slashes get the 400 page; 4 KB 400, 64 KB refused by nginx; Apple's error goes back as it is only when it is a code of letters and _ (64 at most)"

# The session cookie at a protected location of the app's own backend (35_protected_backend.sh has
# the Bearer cases): reads pass; a write needs our Origin.
web_handle
curl -ks -o /dev/null -b "$jar" -c "$jar" "$COMPLETE"
request GET /example/whoami -b "$jar"
expect_status 200 "the session cookie at a protected location"
[ -n "$(json userId <<<"$BODY")" ] && [ "$(json method <<<"$BODY")" = GET ] || fail "the cookie's ids: $BODY"
request POST /example/whoami -b "$jar" -H 'Origin: https://evil.example' -d 'x=1'
expect_status 403 "a cookie write from another origin"
[ "$(json error <<<"$BODY")" = origin_mismatch ] || fail "a cookie write from another origin: $BODY"
request POST /example/whoami -b "$jar" -H "Origin: $E2E_URL" -d 'x=1'
expect_status 200 "a cookie write from our origin"
pass "a protected location takes the session cookie: GET 200; a write 403 origin_mismatch from another origin, 200 from ours"
