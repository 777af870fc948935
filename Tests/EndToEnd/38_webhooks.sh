#!/usr/bin/env bash
# Lifecycle webhooks end to end: siwa restarted with two endpoints, a receiver holding the right
# secret that answers 500 for 5 s from the first delivery (an outage, which the first retry, 10 s later, outlasts) and one holding a wrong secret. A
# scripted sequence (a new user, a session revoked, Apple's consent-revoked, Apple's account-delete;
# a second user whose relay forwarding Apple turns off and who signs out; a third deleted by an operator) is delivered by `siwa jobs`: after the
# outage every event arrives at the right receiver exactly once, in order per user, signed; the wrong
# receiver rejects every delivery. Then the operator's commands (status, log, redeliver) and the
# verification snippets of docs/WEBHOOKS.md in Python, Node and PHP. siwa is restarted as it was.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

DIR=$E2E_TMP/webhooks
OUTAGE=5
mkdir -p "$DIR"
rm -f "$DIR"/*.jsonl
(umask 077; openssl rand -hex 32 >"$DIR/secret"; openssl rand -hex 32 >"$DIR/wrong_secret")
remember "$(cat "$DIR/secret")" "$(cat "$DIR/wrong_secret")"

start_receiver() { # start_receiver NAME SECRET_FILE FAIL_SECONDS: sets PORT
    PORT=$(free_port)
    python3 "$(dirname "$0")/webhook_receiver.py" "$PORT" "$2" "$3" "$DIR/$1.jsonl" &
    echo $! >"$DIR/$1.pid"
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0; sleep 0.1; done
    fail "the $1 receiver did not start"
}
start_receiver good "$DIR/secret" "$OUTAGE"
GOOD=http://127.0.0.1:$PORT/siwa-events
start_receiver wrong "$DIR/wrong_secret" 0
WRONG=http://127.0.0.1:$PORT/siwa-events

cp "$E2E_ENV" "$DIR/siwa.env"
cat >>"$DIR/siwa.env" <<ENV
SIWA_WEBHOOK_URLS=$GOOD,$WRONG
SIWA_WEBHOOK_SECRET_FILE=$DIR/secret
ENV
restart_siwa() { # restart_siwa ENV_FILE
    stop_pidfile "$E2E_TMP/siwa.pid" 30
    start_siwa "$E2E_BIN" "$1" "$E2E_TMP/siwa.log" "$E2E_TMP/siwa.pid"
    wait_for_health 100
    expect_status 200 "siwa restarted"
}
cleanup() {
    stop_pidfile "$DIR/jobs.pid" 10
    stop_pidfile "$DIR/good.pid" 5
    stop_pidfile "$DIR/wrong.pid" 5
}
trap cleanup EXIT
restart_siwa "$DIR/siwa.env"
webhooks() { siwa_with_env "$E2E_BIN" "$DIR/siwa.env" webhooks "$@"; }

# --- The scripted sequence.
signed_in_user WebhookA
A_USER=$USER_ID A_APPLE=$APPLE_USER
FIRST_SESSION=$(json sessionId <<<"$BODY")
apple_sign_in "$A_APPLE" com.example.siwa nonce-webhook-a2
sign_in '{"identityToken":"'"$TOKEN"'","nonce":"nonce-webhook-a2"}'
expect_status 200 "a second sign-in of A"
request DELETE "/auth/sessions/$FIRST_SESSION" -H "$(bearer "$ACCESS")"
expect_status 204 "A revokes the first session"
notify consent-revoked "$A_APPLE"
notify account-delete "$A_APPLE"
signed_in_user WebhookB '"hideEmail":true'
B_USER=$USER_ID
notify email-disabled "$APPLE_USER"
request POST /auth/logout -H "$(bearer "$ACCESS")"
expect_status 204 "B signs out"
signed_in_user WebhookC
C_USER=$USER_ID
siwa_with_env "$E2E_BIN" "$DIR/siwa.env" admin delete "$C_USER" | grep -q "deleted user $C_USER" || fail "siwa admin delete"
siwa_with_env "$E2E_BIN" "$DIR/siwa.env" admin delete "$C_USER" 2>/dev/null && fail "deleting a deleted user succeeded"
request GET /auth/me -H "$(bearer "$ACCESS")"
expect_status 401 "C's access token after the operator deleted C"

recorded() { sql "SELECT user_id, event_type FROM webhook_events WHERE user_id = $1 ORDER BY id" | awk '{print $2}' | tr '\n' ' '; }
[ "$(recorded "$A_USER")" = "user.created session.revoked apple.consent_revoked session.revoked user.deleted " ] \
    || fail "A's events: $(recorded "$A_USER")"
[ "$(recorded "$B_USER")" = "user.created email.forwarding_changed session.revoked " ] || fail "B's events: $(recorded "$B_USER")"
[ "$(recorded "$C_USER")" = "user.created user.deleted " ] || fail "C's events: $(recorded "$C_USER")"
[ "$(sql "SELECT JSON_VALUE(body, '$.data.source') FROM webhook_events WHERE event_type = 'user.deleted' ORDER BY id" | tr '\n' ' ')" \
    = "apple_account_delete operator " ] || fail "the sources of user.deleted"
sql "SELECT public_id, user_id FROM webhook_events ORDER BY id" >"$DIR/expected.tsv"
EVENTS=$(wc -l <"$DIR/expected.tsv")
[ "$EVENTS" = 10 ] && [ "$(sql "SELECT COUNT(*) FROM webhook_deliveries")" = 20 ] || fail "not one delivery per event and endpoint"
pass "the sequence recorded 10 events with the changes: A created, a session revoked, consent revoked and its session, deleted by Apple; B created, relay forwarding off, signed out; C created, deleted by an operator"

# --- Delivery through the outage.
# The background job becomes siwa (exec), so that the pid file names it.
(clear_siwa_variables; set -a; . "$DIR/siwa.env"; set +a; exec "$E2E_BIN" jobs --interval 1) >>"$DIR/jobs.log" 2>&1 &
echo $! >"$DIR/jobs.pid"
delivered() { python3 - "$DIR/good.jsonl" <<'PY'
import json, sys
try: lines = [json.loads(l) for l in open(sys.argv[1])]
except FileNotFoundError: lines = []
print(len({l["id"] for l in lines if l["status"] == 200}))
PY
}
started=$(date +%s)
until [ "$(delivered)" = "$EVENTS" ]; do
    [ $(($(date +%s) - started)) -lt 180 ] || fail "after 180 s, $(delivered) of $EVENTS events delivered; jobs log: $(tail -5 "$DIR/jobs.log")"
    sleep 1
done
took=$(($(date +%s) - started))
python3 - "$DIR/good.jsonl" "$DIR/wrong.jsonl" "$DIR/expected.tsv" <<'PY'
import collections, json, sys
good = [json.loads(l) for l in open(sys.argv[1])]
wrong = [json.loads(l) for l in open(sys.argv[2])]
expected = [line.split("\t") for line in open(sys.argv[3]).read().split("\n") if line]
def fail(text):
    print("FAIL: " + text, file=sys.stderr)
    sys.exit(1)
if not all(l["verified"] for l in good): fail("a delivery to the right receiver did not verify")
if not any(l["status"] == 500 for l in good): fail("no delivery met the outage")
accepted = [l for l in good if l["status"] == 200]
counts = collections.Counter(l["id"] for l in accepted)
if any(n != 1 for n in counts.values()): fail(f"an event was accepted twice: {counts}")
if sorted(counts) != sorted(i for i, _ in expected): fail(f"accepted {sorted(counts)}, expected {expected}")
if any(l["headerId"] != l["id"] for l in good): fail("Siwa-Event-Id differs from the body's id")
for user in {u for _, u in expected}:
    order = [l["id"] for l in accepted if l["user"] == user]
    if order != [i for i, u in expected if u == user]: fail(f"user {user}: received {order}")
if not wrong: fail("the wrong receiver got nothing")
if any(l["verified"] or l["status"] != 400 for l in wrong): fail("the wrong receiver accepted a delivery")
print(f"  ok: after a {len([l for l in good if l['status'] == 500])}-attempt outage every event arrived once, in order per user, "
      f"each signature verified; the wrong secret's receiver rejected all {len(wrong)} deliveries it got")
PY
pass "the $EVENTS events were delivered $took s after the jobs started (the receiver was down for $OUTAGE s from the first delivery)"

# --- The operator's view: status, the log, a redelivery.
status=$(webhooks status)
grep -A3 "^$GOOD" <<<"$status" | grep -q "delivered: $EVENTS" || fail "status: $status"
grep -A1 "^$WRONG" <<<"$status" | grep -q "pending: $EVENTS" || fail "status: $status"
first=$(head -1 "$DIR/expected.tsv" | cut -f1)
log=$(webhooks log --event "$first")
grep -q "$GOOD HTTP 500" <<<"$log" && grep -q "$GOOD HTTP 200" <<<"$log" && grep -q "$WRONG HTTP 400" <<<"$log" \
    || fail "the log of $first: $log"
stop_pidfile "$DIR/jobs.pid" 10
webhooks redeliver "$first" --endpoint "$GOOD" | grep -q "queued 1 deliveries" || fail "redeliver"
webhooks redeliver evt_unknown >/dev/null 2>&1 && fail "redelivering an unknown event succeeded"
siwa_with_env "$E2E_BIN" "$DIR/siwa.env" jobs --once >/dev/null
[ "$(grep -c "\"id\": \"$first\", .*\"status\": 200" "$DIR/good.jsonl")" = 2 ] || fail "the redelivery did not arrive"
pass "siwa webhooks status counts delivered and pending per endpoint; log shows each attempt's answer; redeliver sends an event again"

# --- The verification snippets of docs/WEBHOOKS.md, run against a real delivery.
python3 "$(dirname "$0")/webhook_snippets.py" "$(dirname "$0")/../../docs/WEBHOOKS.md" "$DIR/good.jsonl.sample.json" "$DIR/secret" "$DIR" \
    || fail "a snippet of docs/WEBHOOKS.md"

trap - EXIT
cleanup
restart_siwa "$E2E_ENV"
pass "siwa restarted without webhooks"
