#!/usr/bin/env bash
# Apple's server-to-server notifications through nginx: the emulator sends each of the four types,
# with `events` as a string and as an object, and the effects show through the API; duplicates,
# replays and forged payloads change nothing in the database; 1,000 notifications sent concurrently
# (duplicates included) are each processed exactly once.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

outcome() { sql "SELECT outcome FROM apple_notifications WHERE jti = '$1' AND processed_at IS NOT NULL"; }
# A checksum of every table but the notification ledger and the audit log.
state() { sql "CHECKSUM TABLE users, apple_identities, apple_tokens, user_emails, sessions, refresh_tokens, apple_revocations, apple_notifications" | awk '{print $2}' | tr '\n' ' '; }

# --- email-disabled (events as a string) and email-enabled (as an object): the relay forwarding flag.
signed_in_user Relay '"hideEmail":true'
RELAY_ACCESS=$ACCESS
notify email-disabled "$APPLE_USER"
[ "$(outcome "$JTI")" = processed ] || fail "email-disabled: $(outcome "$JTI")"
request GET /auth/me -H "$(bearer "$RELAY_ACCESS")"
[ "$(json user.emails.0.isPrivateRelay <<<"$BODY")" = true ] && [ "$(json user.emails.0.forwardingEnabled <<<"$BODY")" = false ] \
    || fail "forwarding after email-disabled: $BODY"
notify email-enabled "$APPLE_USER" '"eventsAsObject":true,"eventTimeInSeconds":true'
request GET /auth/me -H "$(bearer "$RELAY_ACCESS")"
[ "$(json user.emails.0.forwardingEnabled <<<"$BODY")" = true ] || fail "forwarding after email-enabled: $BODY"
pass "email-disabled (events a string, event_time ms) turns forwarding off in /auth/me; email-enabled (events an object, event_time s) on"

# --- consent-revoked, both forms: sessions end; the same sub signs in to the same account.
for form in string object; do
    signed_in_user "Consent$form"
    extra=$([ $form = object ] && echo '"eventsAsObject":true' || true)
    notify consent-revoked "$APPLE_USER" "$extra"
    [ "$(outcome "$JTI")" = processed ] || fail "consent-revoked ($form): $(outcome "$JTI")"
    request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$REFRESH\"}"
    expect_status 401 "a refresh after consent-revoked ($form)"
    request GET /auth/me -H "$(bearer "$ACCESS")"
    expect_status 401 "an access token after consent-revoked ($form)"
done
[ "$(sql "SELECT consent_state FROM apple_identities WHERE user_id = $USER_ID")" = revoked ] || fail "the identity is not marked revoked"
apple_sign_in "$APPLE_USER" com.example.siwa nonce-consent-again
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-consent-again\"}"
[ "$STATUS" = 200 ] && [ "$(json user.id <<<"$BODY")" = "$USER_ID" ] && [ "$(json isNewUser <<<"$BODY")" = false ] \
    || fail "signing in again after consent-revoked: $STATUS $BODY"
[ "$(sql "SELECT consent_state FROM apple_identities WHERE user_id = $USER_ID")" = active ] || fail "consent not active again"
pass "consent-revoked (string and object): the refresh token and access token get 401; signing in again lands on the same account"

# --- account-delete (string) and account-deleted (object): the user is gone.
for type in account-delete account-deleted; do
    signed_in_user "Delete${type//-/}"
    extra=$([ $type = account-deleted ] && echo '"eventsAsObject":true' || true)
    notify "$type" "$APPLE_USER" "$extra"
    [ "$(outcome "$JTI")" = processed ] || fail "$type: $(outcome "$JTI")"
    request GET /auth/me -H "$(bearer "$ACCESS")"
    expect_status 401 "an access token after $type"
    [ "$(sql "SELECT COUNT(*) FROM users WHERE id = $USER_ID")" = 0 ] || fail "$type left the user"
done
new_apple_user "nobody.notify@example.com" No Body
notify consent-revoked "$APPLE_USER"
[ "$(outcome "$JTI")" = unknown_user ] || fail "an unknown user: $(outcome "$JTI")"
notify some-future-type "$APPLE_USER"
[ "$(sql "SELECT event_type, outcome FROM apple_notifications WHERE jti = '$JTI'")" = "$(printf 'some-future-type\tunknown_user')" ] \
    || fail "an unknown type was not recorded"
[ "$(sql "SELECT COUNT(*) FROM audit_events WHERE event_type = 'apple_notification'")" -ge 8 ] || fail "no audit event per notification"
pass "account-delete and account-deleted delete the user; an unknown user and an unknown type get 200 and are recorded; each is audited"

# --- Duplicates and forged payloads change nothing.
signed_in_user Target
apple POST /admin/notifications -H "$ADMIN" -d "{\"type\":\"account-delete\",\"userId\":\"$APPLE_USER\",\"deliver\":false}"
PAYLOAD=$(json payload <<<"$APPLE_BODY")
post_payload() { request POST /webhook/apple -H 'Content-Type: application/json' -d "{\"payload\":\"$1\"}"; }
before=$(state)
IFS=. read -r header claims signature <<<"$PAYLOAD"
tampered=$(python3 -c 'import sys,json,base64
c=sys.argv[1]; d=json.loads(base64.urlsafe_b64decode(c+"="*(-len(c)%4)))
d["jti"]=d["jti"]+"x"
print(base64.urlsafe_b64encode(json.dumps(d,separators=(",",":")).encode()).decode().rstrip("="))' "$claims")
post_payload "$header.$tampered.$signature"
expect_status 401 "tampered claims"
none_header=$(printf '{"alg":"none","kid":"x"}' | base64 -w0 | tr '+/' '-_' | tr -d '=')
post_payload "$none_header.$claims."
expect_status 401 "alg none"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$E2E_TMP/forger.pem" 2>/dev/null
forged_signature=$(printf '%s' "$header.$claims" | openssl dgst -sha256 -sign "$E2E_TMP/forger.pem" -binary | base64 -w0 | tr '+/' '-_' | tr -d '=')
post_payload "$header.$claims.$forged_signature"
expect_status 401 "another key, same kid"
apple POST /admin/notifications -H "$ADMIN" -d "{\"type\":\"account-delete\",\"userId\":\"$APPLE_USER\",\"clientId\":\"com.example.other\",\"deliver\":false}"
post_payload "$(json payload <<<"$APPLE_BODY")"
expect_status 401 "another audience"
grep -q audienceMismatch <<<"$BODY" || fail "another audience: $BODY"
request POST /webhook/apple -H 'Content-Type: application/json' -d '{"payload": 42}'
expect_status 400 "a malformed body"
request POST /webhook/apple -H 'Content-Type: application/json' -d 'not json'
expect_status 400 "not JSON"
[ "$(state)" = "$before" ] || fail "a refused notification changed the database"
post_payload "$PAYLOAD"
expect_status 200 "the genuine payload"
[ "$(json status <<<"$BODY")" = processed ] || fail "the genuine payload: $BODY"
after=$(state)
post_payload "$PAYLOAD"
[ "$STATUS" = 200 ] && [ "$(json status <<<"$BODY")" = duplicate ] || fail "a replay: $STATUS $BODY"
[ "$(state)" = "$after" ] || fail "a replay changed the database"
pass "tampered claims, alg none, another key, another audience: 401; malformed bodies: 400; none changed the database; a replay: 200 duplicate, no change"

# --- 1,000 notifications at once, 200 of them duplicates: each jti processed exactly once.
# The payloads are made first (100 signed-in users, mostly forwarding and consent events, a few
# deletions and unknown types); curl then sends them 32 at a time over kept-alive connections.
python3 - "$E2E_URL" "$E2E_APPLE_URL" "$(cat "$E2E_APPLE_ADMIN_SECRET_FILE")" "$E2E_TMP" <<'PY'
import json, random, ssl, sys, time, urllib.request
siwa, apple, secret, tmp = sys.argv[1:]
tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE
def call(url, body, headers={}):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(request, context=tls, timeout=30) as response:
        return json.loads(response.read() or b"{}")
admin = {"Authorization": f"Bearer {secret}"}
random.seed(7)
users = []
for i in range(100):
    user = call(apple + "/admin/users", {"email": f"load{i}.notify@example.com"}, admin)
    grant = call(apple + "/admin/sign-in", {"userId": user["id"], "clientId": "com.example.siwa", "nonce": f"load-{i}", "hideEmail": True}, admin)
    call(siwa + "/auth/apple", {"identityToken": grant["identityToken"], "nonce": f"load-{i}"})
    users.append(user["id"])
    time.sleep(0.03)  # under nginx's rate limit on /auth/
types = ["email-disabled"] * 35 + ["email-enabled"] * 35 + ["consent-revoked"] * 24 + ["account-delete"] * 3 + ["new-type"] * 3
payloads = []
for i in range(800):
    order = {"type": random.choice(types), "userId": random.choice(users), "deliver": False, "eventsAsObject": i % 2 == 0}
    made = call(apple + "/admin/notifications", order, admin)
    payloads.append((made["jti"], made["payload"]))
sends = payloads + random.sample(payloads, 200)
random.shuffle(sends)
# One transfer per entry (options do not carry over `next`); "Expect:" keeps curl from waiting a
# second for 100-continue.
entries = [f'url = "{siwa}/webhook/apple"\ninsecure\nsilent\nheader = "Content-Type: application/json"\nheader = "Expect:"\n'
           f'data = "{{\\"payload\\":\\"{payload}\\"}}"\noutput = "/dev/null"\nwrite-out = "%{{http_code}}\\n"\n'
           for jti, payload in sends]
open(f"{tmp}/load.curl", "w").write("next\n".join(entries))
open(f"{tmp}/load_jtis", "w").write("\n".join(jti for jti, _ in payloads) + "\n")
PY
start=$(date +%s%N)
curl -ks --no-progress-meter --parallel --parallel-max 32 -K "$E2E_TMP/load.curl" >"$E2E_TMP/load_statuses"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$(grep -c '^200$' "$E2E_TMP/load_statuses")" = 1000 ] || fail "not every notification got 200: $(sort "$E2E_TMP/load_statuses" | uniq -c)"
echo "  1000 notifications (800 distinct, 200 duplicates), curl --parallel-max 32: ${elapsed_ms} ms, $(( 1000000 / elapsed_ms ))/s"
jtis=$(sed "s/.*/'&'/" "$E2E_TMP/load_jtis" | paste -sd,)
sql "SELECT (SELECT COUNT(*) FROM apple_notifications WHERE jti IN ($jtis) AND processed_at IS NOT NULL),
            (SELECT COUNT(*) FROM audit_events WHERE event_type = 'apple_notification' AND JSON_VALUE(detail, '$.jti') IN ($jtis)),
            (SELECT COUNT(DISTINCT JSON_VALUE(detail, '$.jti')) FROM audit_events WHERE event_type = 'apple_notification' AND JSON_VALUE(detail, '$.jti') IN ($jtis))" \
    >"$E2E_TMP/load_counts" 2>&1 || fail "the load check query: $(cat "$E2E_TMP/load_counts")"
[ "$(wc -l <"$E2E_TMP/load_jtis")" = 800 ] && [ "$(cat "$E2E_TMP/load_counts")" = "$(printf '800\t800\t800')" ] \
    || fail "processed, audit events, distinct audited jtis: $(cat "$E2E_TMP/load_counts") (expected 800 each)"
outcomes=$(sql "SELECT outcome, COUNT(*) FROM apple_notifications WHERE jti IN ($jtis) GROUP BY outcome ORDER BY outcome" | tr '\t\n' '= ')
pass "under load every jti was processed exactly once: 800 ledger rows processed ($outcomes), 800 audit events for 800 distinct jtis, 200 duplicates answered 200"
