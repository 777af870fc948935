#!/usr/bin/env bash
# siwa.js, the web client (public/siwa.js), in a real headless Chromium (web_client.py): served at
# /siwa.js as JavaScript; the popup sign-in, two tabs that refresh at once sending one
# POST /auth/refresh (counted in nginx's access log), sign-out and account deletion reaching the
# other tab, and the app flow with PKCE; the page on another origin (listed in SIWA_CORS_ORIGINS)
# signing in with the app flow and refreshing across origins, and one on an origin not listed, blocked.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

command -v chromium >/dev/null || fail "chromium is not installed (scripts/lib.sh installs it)"
request GET /siwa.js
expect_status 200 "GET /siwa.js"
expect_header "content-type: application/javascript" "siwa.js's type"
grep -q 'export function createClient' <<<"$BODY" || fail "siwa.js without createClient"
request GET /siwa.d.ts
expect_status 200 "GET /siwa.d.ts"
expect_header "content-type: text/plain; charset=utf-8" "siwa.d.ts's type"
pass "the stack serves /siwa.js (application/javascript) and /siwa.d.ts (text)"

# The server's error codes, once in docs/openapi.yaml (the contract, checked against the handlers):
# siwa.d.ts's ServerErrorCode union and siwa.js's list are the same codes, in the same order.
python3 - "$(dirname "$0")/../.." <<'PY' || fail "siwa.js's error codes and the contract's"
import re, sys
root = sys.argv[1]
spec = open(f"{root}/docs/openapi.yaml").read().split("\n    Error:\n", 1)[1].split("message:", 1)[0]
contract = re.findall(r"^ +- ([a-z_]+)$", spec, re.M)
types = open(f"{root}/public/siwa.d.ts").read().split("export type ServerErrorCode =", 1)[1].split(";", 1)[0]
script = open(f"{root}/public/siwa.js").read().split("const serverErrorCodes = Object.freeze([", 1)[1].split("]);", 1)[0]
for name, codes in (("siwa.d.ts ServerErrorCode", re.findall(r'"([a-z_]+)"', types)),
                    ("siwa.js serverErrorCodes", re.findall(r'"([a-z_]+)"', script))):
    if len(contract) < 30 or codes != contract:
        sys.exit(f"{name} is not docs/openapi.yaml's list of error codes: missing {sorted(set(contract) - set(codes))}, "
                 f"extra {sorted(set(codes) - set(contract))}")
PY
pass "siwa.d.ts's ServerErrorCode and siwa.js's list are the error codes of docs/openapi.yaml"

# Other origins through nginx (SIWA_CORS_ORIGINS lists E2E_OTHER_ORIGIN, not E2E_UNLISTED_ORIGIN):
# the preflight reaches siwa, which names the listed origin and refuses the other; nginx's own
# JSON error (a 413 here, as its 429 and 503) is readable by any page.
request OPTIONS /auth/refresh -H "Origin: $E2E_OTHER_ORIGIN" -H "Access-Control-Request-Method: POST" \
    -H "Access-Control-Request-Headers: content-type"
expect_status 204 "a listed origin's preflight"
expect_header "access-control-allow-origin: $E2E_OTHER_ORIGIN" "the preflight's origin"
expect_header "access-control-allow-methods: POST" "the preflight's methods"
expect_header "access-control-allow-headers: Authorization, Content-Type" "the preflight's headers"
expect_header "access-control-max-age: 600" "the preflight's max age"
! grep -qi "^access-control-allow-credentials" <<<"$HEADERS" || fail "a preflight allows credentials: $HEADERS"
request OPTIONS /auth/me -H "Origin: $E2E_UNLISTED_ORIGIN" -H "Access-Control-Request-Method: GET"
expect_error 403 origin_mismatch "an unlisted origin's preflight"
! grep -qi "^access-control-allow-origin" <<<"$HEADERS" || fail "an unlisted origin's preflight is allowed: $HEADERS"
request OPTIONS /auth/web/apple -H "Origin: $E2E_OTHER_ORIGIN" -H "Access-Control-Request-Method: POST"
expect_status 405 "a preflight of the cookie sign-in"
! grep -qi "^access-control-allow-origin" <<<"$HEADERS" || fail "the cookie sign-in is open to other origins: $HEADERS"
head -c 40000 /dev/zero | tr '\0' a >"$E2E_TMP/cors_large_body"
request POST /auth/refresh -H "Origin: $E2E_UNLISTED_ORIGIN" -H "Content-Type: application/json" --data-binary "@$E2E_TMP/cors_large_body"
expect_error 413 payload_too_large "nginx's 413 of /auth/"
expect_header "access-control-allow-origin: \*" "nginx's 413 for any origin"
expect_header "access-control-expose-headers: Retry-After" "nginx's error exposing Retry-After"
pass "other origins: a listed one's preflight 204 (methods, headers, max age, no credentials); an unlisted one's 403; the cookie sign-in closed (405); nginx's own 413 readable by any page (*)"

python3 "$(dirname "$0")/web_client.py" || fail "siwa.js in the browser"
