#!/usr/bin/env bash
# An app's launch: 80 people sign in with an authorization code at the same moment, each from an
# address of their own, while Apple answers in 200 ms. More exchanges are asked for than may be in
# flight (three quarters of the 16 threads): the rest wait a moment for a slot, and every sign-in
# succeeds.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

trap 'apple POST /admin/behaviour -H "$ADMIN" -d "{}"' EXIT
python3 - "$E2E_URL" "$E2E_APPLE_URL" "$E2E_APPLE_ADMIN_SECRET_FILE" <<'PY' || fail "a burst of 80 sign-ins with codes"
import concurrent.futures, http.client, json, ssl, sys, time, urllib.parse
siwa, apple, secret_file = sys.argv[1:]
admin = {"Authorization": "Bearer " + open(secret_file).read().strip(), "Content-Type": "application/json"}
tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE

def call(base, path, body, headers, source=None):
    url = urllib.parse.urlsplit(base)
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=tls, timeout=60,
                                             source_address=(source, 0) if source else None)
    try:
        connection.request("POST", path, json.dumps(body), headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()

sign_ins = []
for n in range(80):
    status, body = call(apple, "/admin/users", {"email": f"burst{n}.{time.time_ns()}@example.com"}, admin)
    assert status == 201, (status, body)
    user = json.loads(body)["id"]
    nonce = f"burst-nonce-{n}-{time.time_ns()}"
    status, body = call(apple, "/admin/sign-in", {"userId": user, "clientId": "com.example.siwa", "nonce": nonce}, admin)
    assert status == 200, (status, body)
    answer = json.loads(body)
    sign_ins.append({"identityToken": answer["identityToken"], "authorizationCode": answer["authorizationCode"], "nonce": nonce})
status, body = call(apple, "/admin/behaviour", {"latencyMs": 200}, admin)
assert status == 200, (status, body)

def sign_in(n):
    started = time.monotonic()
    # Each from its own loopback address, as people are: nginx limits requests per address.
    status, body = call(siwa, "/auth/apple", sign_ins[n], {"Content-Type": "application/json"}, source=f"127.0.1.{n + 1}")
    return status, time.monotonic() - started, body[:200]

started = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(80) as pool:
    results = list(pool.map(sign_in, range(80)))
wall = time.monotonic() - started
statuses = [status for status, _, _ in results]
slowest = max(seconds for _, seconds, _ in results)
print(f"80 sign-ins with codes at once, Apple answering in 200 ms: {statuses.count(200)} answered 200 in {wall:.2f} s, "
      f"the slowest in {slowest:.2f} s")
failed = [(status, body) for status, _, body in results if status != 200]
assert not failed, f"{len(failed)} failed: {failed[:3]}"
PY
pass "80 sign-ins with codes at once against an Apple answering in 200 ms: all 200"
