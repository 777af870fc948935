#!/usr/bin/env bash
# The foundation through nginx: health, routing, JSON errors, limits, headers, static file.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

# siwa fetches Apple's keys as it starts, in the background: allow it a moment.
for _ in $(seq 50); do
    request GET /health
    [ "$BODY" = '{"appleKeys":"ok","database":"ok","status":"ok"}' ] && break
    sleep 0.1
done
expect_status 200 "health"
expect_body '{"appleKeys":"ok","database":"ok","status":"ok"}' "health"
for header in "strict-transport-security: max-age=" "x-content-type-options: nosniff" \
    "x-frame-options: DENY" "referrer-policy: no-referrer" "content-security-policy: default-src 'self'" \
    "content-type: application/json" "cache-control: no-store"; do
    expect_header "$header" "health headers"
done
pass "GET /health is 200 with the database and Apple's keys ok, and the security headers"

request GET /auth/nothing-here
expect_status 404 "unknown route"
expect_body '{"error":"not_found","message":"No such resource"}' "unknown route"
request POST /health
expect_status 405 "wrong method"
expect_header "allow: GET" "wrong method"
# TRACE is refused by nginx itself, before any location: its 405 names the route's methods too.
for route in "/health:GET, HEAD" "/sync:POST" "/auth/sessions/12:DELETE" "/account.html:GET, HEAD"; do
    request TRACE "${route%%:*}"
    expect_status 405 "TRACE ${route%%:*}"
    grep -qix "allow: ${route#*:}" <<<"$HEADERS" || fail "TRACE ${route%%:*}: Allow is not ${route#*:}: $HEADERS"
done
! grep -qi "^allow:" < <(curl -ksI "$E2E_URL/health") || fail "a 200 carries an Allow header"
pass "unknown routes get a JSON 404, wrong methods a JSON 405 with Allow (also nginx's own 405 for TRACE)"

# HEAD, as load balancers check health: GET's status and headers, no body.
head_status=$(curl -ks --head -o "$E2E_TMP/head_headers" -w '%{http_code} %{size_download}' "$E2E_URL/health")
[ "$head_status" = "200 0" ] || fail "HEAD /health: $head_status"
grep -qi '^content-type: application/json' "$E2E_TMP/head_headers" || fail "HEAD /health headers: $(cat "$E2E_TMP/head_headers")"
pass "HEAD /health is 200 with GET's headers and no body"

# nginx's own errors: JSON on API paths (also for a request it cannot parse), a styled page elsewhere.
# Over HTTP/1.1, where 10 KB of request line or header exceed nginx's 8 KB buffers (HTTP/2 counts
# them HPACK-compressed).
long=$(head -c 10240 /dev/zero | tr '\0' a)
request GET "/auth/$long" --http1.1
[ "$STATUS" = 414 ] && grep -q '"error":"uri_too_long"' <<<"$BODY" || fail "a 10 KB URL: $STATUS $BODY"
expect_header "content-type: application/json" "a 10 KB URL"
request GET /auth/me -H "X-Big: $long" --http1.1
[ "$STATUS" = 400 ] && grep -q '"error":"bad_request"' <<<"$BODY" || fail "a 10 KB header: $STATUS $BODY"
expect_header "x-content-type-options: nosniff" "a 10 KB header"
request GET /no-such-page -H 'Accept: text/html,*/*;q=0.8'
expect_status 404 "a page that does not exist"
grep -q '<link rel="stylesheet" href="/app.css">' <<<"$BODY" && grep -q 'There is no page at this address' <<<"$BODY" \
    || fail "/no-such-page is not the styled page: $BODY"
expect_header "content-type: text/html" "a page that does not exist"
expect_header "content-security-policy: default-src 'self'" "a page that does not exist"
request POST /index.html -H 'Accept: text/html'
expect_status 405 "POST to a static file"
grep -q '<title>Method not allowed</title>' <<<"$BODY" || fail "POST to a static file: $BODY"
# A client that does not ask for HTML (an API's) reads JSON on any path: the app's own API behind
# siwa-protect.conf, a missing path, and siwa's /auth/web/settings, which the page fetches as JSON.
request GET /no-such-page
[ "$STATUS" = 404 ] && grep -q '"error":"not_found"' <<<"$BODY" || fail "/no-such-page for an API client: $STATUS $BODY"
request GET /example/whoami -H "Authorization: Bearer $long" --http1.1
[ "$STATUS" = 400 ] && grep -q '"error":"bad_request"' <<<"$BODY" || fail "a 10 KB Authorization on the app's API: $STATUS $BODY"
request GET /example/whoami -H "Authorization: Bearer a" -H "Authorization: Bearer b" --http1.1
[ "$STATUS" = 400 ] && grep -q '"error":"bad_request"' <<<"$BODY" || fail "two Authorization lines on the app's API: $STATUS $BODY"
request POST /auth/web/settings -H 'Accept: text/html'
[ "$STATUS" = 405 ] && grep -q '"error":"method_not_allowed"' <<<"$BODY" || fail "POST /auth/web/settings: $STATUS $BODY"
# Path variants of an API path are that path (nginx normalises them), also for a browser.
for variant in /./metrics //metrics /auth/../metrics; do
    request GET "$variant" --interface 127.0.0.2 --path-as-is -H 'Accept: text/html'
    [ "$STATUS" = 403 ] && grep -q '"error":"forbidden"' <<<"$BODY" || fail "$variant from outside, from a browser: $STATUS $BODY"
done
request GET /./metrics --interface 127.0.0.2 --path-as-is
[ "$STATUS" = 403 ] && grep -q '"error":"forbidden"' <<<"$BODY" || fail "/./metrics from outside: $STATUS $BODY"
pass "a 10 KB URL (414) and a 10 KB header (400) get JSON errors; /no-such-page and a POST to a page get styled HTML for a browser, JSON for anyone else, the app's API, /auth/web/settings and path variants of /metrics included"

head -c 2000000 /dev/zero >"$E2E_TMP/big"
request POST /sync --data-binary @"$E2E_TMP/big" -H 'Content-Type: application/json'
expect_status 413 "body over nginx's limit"
expect_body '{"error":"payload_too_large","message":"The request body is too large"}' "body over nginx's limit"
head -c 100000 /dev/zero >"$E2E_TMP/medium"
request POST /webhook/apple --data-binary @"$E2E_TMP/medium"
expect_status 413 "webhook body over its 64k limit"
pass "bodies over the limits get a JSON 413"

# No domain-association file is configured (Apple's current registration needs none): no
# placeholder is served. 51_package.sh serves one that setup placed.
request GET /.well-known/apple-developer-domain-association.txt
expect_status 404 "the domain-association file when none is configured"
grep -q "\"error\":\"not_found\"" <<<"$BODY" || fail "the domain-association 404: $BODY"
pass "without a configured domain-association file its path is a JSON 404, not a placeholder"

# limit_req on /auth: 50 r/s with a burst of 20, so 200 requests on one kept-alive connection,
# a millisecond or so each, exceed it however busy the machine is. Each body goes to its own file.
mkdir -p "$E2E_TMP/rates.d"
curl -ks "$E2E_URL/auth/x?n=[1-200]" -o "$E2E_TMP/rates.d/#1" -w '%{url_effective} %{http_code}\n' \
    | sed 's/.*n=\([0-9]*\) /\1 /' >"$E2E_TMP/rates"
limited=$(grep -c ' 429$' "$E2E_TMP/rates" || true)
[ "$limited" -gt 0 ] || fail "no request was rate limited: $(awk '{print $NF}' "$E2E_TMP/rates" | sort | uniq -c)"
BODY=$(cat "$E2E_TMP/rates.d/$(grep -m1 ' 429$' "$E2E_TMP/rates" | cut -d' ' -f1)")
expect_body '{"error":"rate_limited","message":"Too many requests; retry shortly"}' "rate limit"
grep -q ' 404$' "$E2E_TMP/rates" || fail "no request got through to siwa within the burst"
sleep 1
request GET /health
expect_status 200 "health is not rate limited"
pass "/auth is rate limited with a JSON 429 ($limited of 200 requests in a row limited); /health is not"

# Between releases the version is the next one's X.Y.Z~dev, never a released number (scripts/release).
tree_version=$(bash "$SIWA_ROOT/scripts/release" --check 2>&1) || fail "the tree's version: $tree_version"
[ "$("$E2E_BIN" --version)" = "$tree_version" ] || fail "siwa --version: $("$E2E_BIN" --version 2>&1), the tree's version $tree_version"
pass "siwa --version prints $tree_version (scripts/release --check: the release's own commit, or a development version after the latest release)"
