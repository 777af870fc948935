#!/usr/bin/env bash
# siwa.js, the web client (public/siwa.js), in a real headless Chromium (web_client.py): served at
# /siwa.js as JavaScript; the popup sign-in, two tabs that refresh at once sending one
# POST /auth/refresh (counted in nginx's access log), sign-out and account deletion reaching the
# other tab, and the app flow with PKCE.
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

python3 "$(dirname "$0")/web_client.py" || fail "siwa.js in the browser"
