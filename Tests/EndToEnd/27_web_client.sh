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

python3 "$(dirname "$0")/web_client.py" || fail "siwa.js in the browser"
