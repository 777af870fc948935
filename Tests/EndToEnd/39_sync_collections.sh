#!/usr/bin/env bash
# Collections the app declares (examples/sync/collections.json: a workout log with a "latest wins"
# note, a maximum, a counter and a set, and favourites), through nginx with SIWAKit: two devices
# record changes while siwa is stopped, one deletes what the other edits, and both end with the
# same records as the server once it is back. A user with 20,000 records gets them all, each once,
# in pages of at most 500. Requests past a declared limit get 400 naming the path and write nothing.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"
. "$(dirname "$0")/siwakit.sh"
PHONE=$E2E_TMP/collections/phone IPAD=$E2E_TMP/collections/ipad

new_apple_user "collections.e2e@example.com" Col Lections
kit "$PHONE" sign-in "$APPLE_USER" "phone" >/dev/null
kit "$IPAD" sign-in "$APPLE_USER" "ipad" >/dev/null
kit "$PHONE" workout w1 "easy run" 5000 3 run >/dev/null
kit "$PHONE" workout w2 "intervals" 2000 1 >/dev/null
kit "$PHONE" workout w3 "hills" 3000 1 >/dev/null
kit "$PHONE" favourite trail-7 "Ridge loop" >/dev/null
[ "$(kit "$PHONE" sync)" = synced ] && [ "$(kit "$IPAD" sync)" = synced ] || fail "the first syncs"

# --- Both offline: the phone deletes w2 and the iPad edits it later; the iPad edits w3 and the
# phone deletes it later; both change w1 (the note is the iPad's, the later one; the distance the
# larger; the laps add up; the tags join).
stop_pidfile "$E2E_TMP/siwa.pid" 30
kit "$PHONE" delete-workout w2 >/dev/null
kit "$IPAD" workout w3 "hill repeats" 3200 2 >/dev/null
kit "$PHONE" workout w1 "easy run, windy" 5200 5 run >/dev/null
kit "$IPAD" workout w1 "tempo" 4000 4 run tempo >/dev/null
kit "$IPAD" workout w2 "intervals x8" 2400 2 >/dev/null
kit "$PHONE" delete-workout w3 >/dev/null
kit "$IPAD" favourite trail-9 "Coast path" >/dev/null
kit "$PHONE" lap w1 3 >/dev/null  # SyncClient.increment: each device's own count grows
kit "$IPAD" lap w1 4 >/dev/null
[ "$(kit "$PHONE" sync)" = offline ] && [ "$(kit "$IPAD" sync)" = offline ] || fail "a sync while siwa is stopped did not fail as offline"
start_siwa "$E2E_BIN" "$E2E_ENV" "$E2E_TMP/siwa.log" "$E2E_TMP/siwa.pid"
for device in "$PHONE" "$IPAD" "$PHONE"; do [ "$(kit "$device" sync)" = synced ] || fail "a sync after siwa is back"; done
phone=$(kit "$PHONE" records) ipad=$(kit "$IPAD" records) server=$(kit "$PHONE" server-records)
[ "$phone" = "$ipad" ] || fail "the devices did not converge: phone $phone, iPad $ipad"
[ "$phone" = "$server" ] || fail "the devices differ from the server: devices $phone, server $server"
python3 - "$server" <<'PY' || fail "the merged records are not the merge of both devices' changes: $server"
import json, sys
state = json.loads(sys.argv[1])
workouts = {w["workoutId"]: w for w in state["workouts"]}
assert sorted(workouts) == ["w1", "w2"], sorted(workouts)  # w3 deleted after its edit, w2 edited after its deletion
w1, w2 = workouts["w1"], workouts["w2"]
# The iPad's note came later; the larger distance; laps: 3 at first, the phone added 2 by a save
# and 3 by an increment, the iPad 1 and 4.
assert (w1["note"], w1["distance"], w1["laps"], w1["tags"]) == ("tempo", 5200, 13, ["run", "tempo"]), w1
assert (w2["note"], w2["distance"]) == ("intervals x8", 2400), w2
assert sorted(f["itemId"] for f in state["favourites"]) == ["trail-7", "trail-9"], state["favourites"]
PY
[ "$(sql "SELECT COUNT(*) FROM sync_records r JOIN users u ON u.id = r.user_id WHERE r.deleted = 1")" -ge 1 ] \
    || fail "the deletion is not kept as a tombstone"
pass "two SIWAKit devices changing records offline, one deleting what the other edited, converge with the server: the later of deletion and edit wins, the note latest, the distance largest, the laps summed per device, the tags joined"

# --- 20,000 records, a first sync in pages of at most 500: each record once. They are stored as
# an import would leave them (writing them through POST /sync, 500 at a time, is checked in process
# by DeclaredSyncTests); one changes through POST /sync between two pages.
new_apple_user "collections.many@example.com" Many Records
apple_sign_in "$APPLE_USER" com.example.siwa nonce-many
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-many\",\"device\":\"bulk\"}"
SIGNED_IN_USER=$(json user.id <<<"$BODY")
sql "INSERT INTO sync_records (user_id, collection, item_key, body, version)
     SELECT $SIGNED_IN_USER, 'workouts', CONCAT('w', seq), CONCAT('{\"workoutId\":\"w', seq, '\",\"distance\":', seq, '}'), 1 + seq DIV 1000
     FROM seq_0_to_19999;
     UPDATE users SET sync_version = 21 WHERE id = $SIGNED_IN_USER"
python3 - "$E2E_URL" "$ACCESS" <<'PY' || fail "the paged first sync of 20,000 records"
import json, ssl, sys, urllib.request
url, token = sys.argv[1:]
tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE
def sync(body):
    request = urllib.request.Request(url + "/sync", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, context=tls, timeout=60) as response:
        return json.load(response)
seen, cursor, pages, largest = {}, None, 0, 0
while True:
    answer = sync({"cursor": cursor, "limit": 500})
    records = answer["collections"]["workouts"]
    largest = max(largest, len(records))
    for record in records:
        seen[record["workoutId"]] = seen.get(record["workoutId"], 0) + 1
    pages += 1
    if pages == 10:
        # w0 was sent in the first page, w19999 is not sent yet: both change; w0 comes again, later.
        sync({"collections": {"workouts": [{"workoutId": "w0", "distance": 99999}, {"workoutId": "w19999", "distance": 99999}]}})
    cursor = answer["cursor"]
    if not answer.get("more"):
        break
    assert pages < 100, "pages do not end"
assert len(seen) == 20000, len(seen)
assert [k for k, n in seen.items() if n > 1] == ["w0"] and seen["w19999"] == 1, [k for k, n in seen.items() if n > 1]
assert largest <= 500 and pages == 41, (largest, pages)
print(f"20000 records in {pages} pages of at most {largest}")
PY
pass "a first sync of 20,000 records comes in 41 pages of at most 500: every record, once, and one changed after its page again"

# --- Another user's paging cursor (an app that switched accounts and kept its cursor): the whole
# state with resync, not the part of it after the other user's position.
request POST /auth/guest -H 'Content-Type: application/json' -d '{"device":"switched"}'
expect_status 200 "a guest for the cursor check"
GUEST_ACCESS=$(json accessToken <<<"$BODY")
request POST /sync -H "$(bearer "$GUEST_ACCESS")" -H 'Content-Type: application/json' \
    -d '{"collections":{"workouts":[{"workoutId":"g1","distance":1},{"workoutId":"g2","distance":2},{"workoutId":"g3","distance":3}]}}'
expect_status 200 "the guest's workouts"
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' -d '{"cursor":null,"limit":2}'
OTHER_CURSOR=$(json cursor <<<"$BODY")
for cursor in "$OTHER_CURSOR" "${OTHER_CURSOR%%~*}"; do
    request POST /sync -H "$(bearer "$GUEST_ACCESS")" -H 'Content-Type: application/json' -d "{\"cursor\":\"$cursor\",\"limit\":1000}"
    expect_status 200 "another user's cursor"
    python3 -c 'import json, sys; a = json.loads(sys.argv[1]); ids = sorted(r["workoutId"] for r in a["collections"]["workouts"])
assert a.get("resync") is True and ids == ["g1", "g2", "g3"] and "more" not in a, (a.get("resync"), ids)' "$BODY" \
        || fail "another user's cursor $cursor: $BODY"
done
pass "another user's paging cursor, tagged or not, gets the guest's whole state (3 of 3 workouts) with resync"

# --- The amplification shape of a free account: workouts whose counters count 255 devices with
# 128-byte ids (about 35 KB a record): refused, naming the limit, nothing written.
before=$(sql "SELECT COUNT(*) FROM sync_records")
python3 -c 'import json
laps = {("d" * 125) + f"{i:03d}": 10000 for i in range(255)}
print(json.dumps({"collections": {"workouts": [{"workoutId": f"amp{w}", "laps": laps} for w in range(20)]}}))' >"$E2E_TMP/amplified.json"
request POST /sync -H "$(bearer "$GUEST_ACCESS")" -H 'Content-Type: application/json' --data-binary "@$E2E_TMP/amplified.json"
expect_error 400 invalid_request "the amplification shape"
grep -q 'counts more than 64 devices' <<<"$BODY" || fail "the amplification shape's refusal does not name the limit: $BODY"
[ "$(sql "SELECT COUNT(*) FROM sync_records")" = "$before" ] || fail "the refused amplification shape wrote records"
pass "20 workouts with counters of 255 devices: 400 naming the 64-device limit, nothing written (byte limits: docs/SYNC.md)"

# --- Declared limits: 400 naming the path, nothing written.
before=$(sql "SELECT COUNT(*) FROM sync_records")
too_many=$(python3 -c 'import json; print(json.dumps({"collections": {"favourites": [{"itemId": f"f{i}"} for i in range(101)]}}))')
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' -d "$too_many"
expect_error 400 invalid_request "101 favourites"
[ "$(json message <<<"$BODY")" = '`collections.favourites` has more than 100 items' ] || fail "the limit's message: $BODY"
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' \
    -d '{"collections":{"workouts":[{"workoutId":"ok"},{"workoutId":"bad","laps":{"phone":10001}}]}}'
expect_error 400 invalid_request "a counter past its maximum"
[ "$(json message <<<"$BODY")" = '`collections.workouts[1].laps.phone` must be an integer from 0 to 10000' ] || fail "the field's message: $BODY"
[ "$(sql "SELECT COUNT(*) FROM sync_records")" = "$before" ] || fail "a refused request wrote records"
pass "past a declared limit, or a field out of its bounds: 400 naming the path, and nothing written"

# --- A declaration with an unknown rule, a key field missing and a limit out of range: siwa refuses
# to start, naming each problem.
cat >"$E2E_TMP/collections/bad.json" <<'JSON'
{"collections": {"notes": {"key": ["noteId"], "fields": {"text": {"type": "string", "merge": "newest"}},
                           "limits": {"itemsPerUser": 0}}}}
JSON
sed -e "s|^SIWA_SYNC_COLLECTIONS=.*|SIWA_SYNC_COLLECTIONS=$E2E_TMP/collections/bad.json|" \
    -e "s|^SIWA_SOCKET_PATH=.*|SIWA_SOCKET_PATH=$E2E_TMP/collections/refused.sock|" "$E2E_ENV" >"$E2E_TMP/collections/bad.env"
if timeout 30 bash -c '. "$1"; siwa_with_env "$2" "$3" serve' _ "$SIWA_ROOT/scripts/lib.sh" "$E2E_BIN" "$E2E_TMP/collections/bad.env" \
    >"$E2E_TMP/collections/refused.out" 2>&1; then
    fail "siwa started with a bad declaration"
fi
for problem in 'collections.notes.key: names "noteId", which is not one of its fields' \
    'collections.notes.fields.text.merge: "newest" is not a merge rule' \
    'collections.notes.limits.itemsPerUser: must be an integer from 1 to 1000000'; do
    grep -qF "$problem" "$E2E_TMP/collections/refused.out" || fail "the refusal does not name: $problem ($(cat "$E2E_TMP/collections/refused.out"))"
done
[ ! -e "$E2E_TMP/collections/refused.sock" ] || fail "siwa listened before refusing"
pass "siwa serve refuses a declaration with an unknown rule, a missing key field and a limit out of range, naming each"
