#!/usr/bin/env bash
# POST /sync through nginx: two devices with interleaved offline changes converge; 50 concurrent
# syncs of one user lose nothing (checked against the merged state computed here); invalid payloads
# get 400 naming the field and change nothing; a signed-out device syncs nothing.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

new_apple_user "sync.e2e@example.com" Sync Tester
apple_sign_in "$APPLE_USER" com.example.siwa nonce-sync-phone
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-sync-phone\",\"device\":\"phone\"}"
PHONE=$ACCESS
apple_sign_in "$APPLE_USER" com.example.siwa nonce-sync-tablet
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-sync-tablet\",\"device\":\"tablet\"}"
TABLET=$ACCESS
sync() { request POST /sync -H "$(bearer "$1")" -H 'Content-Type: application/json' -d "$2"; }
# The stored state as one canonical JSON text (a full sync: null cursor).
state() { sync "$PHONE" '{"cursor":null}'; python3 -c 'import json,sys
d=json.load(sys.stdin); d.pop("cursor")
d["progress"].sort(key=lambda p: (p["beliefSystemId"], p["lessonId"])); d["achievements"].sort(key=lambda a: a["achievementId"])
print(json.dumps(d, sort_keys=True))' <<<"$BODY"; }

request POST /sync -H 'Content-Type: application/json' -d '{}'
expect_status 401 "sync without a token"

# --- Two devices, offline changes to the same lesson, achievement and profile.
sync "$PHONE" '{"cursor":null,"profile":{"totalXp":100,"currentLevel":3,"streakDays":4,"lastActiveDate":"2026-11-20"},
  "progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"in_progress","score":5,"earnedXp":10},
              {"beliefSystemId":"stoicism","lessonId":"l2","status":"completed","score":7,"earnedXp":20,"completedAt":2000}],
  "achievements":[{"achievementId":"first-steps","progress":3}]}'
expect_status 200 "the phone's first sync"
PHONE_CURSOR=$(json cursor <<<"$BODY")
sync "$TABLET" '{"cursor":null,"profile":{"totalXp":80,"currentLevel":2,"streakDays":1,"lastActiveDate":"2026-11-21"},
  "progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"completed","score":3,"earnedXp":12,"completedAt":1500},
              {"beliefSystemId":"taoism","lessonId":"t1","status":"not_started"}],
  "achievements":[{"achievementId":"first-steps","progress":5,"completed":true,"completedAt":1800}]}'
expect_status 200 "the tablet's first sync"
l1=$(python3 -c 'import json,sys; print(json.dumps([p for p in json.load(sys.stdin)["progress"] if p["lessonId"]=="l1"][0], sort_keys=True))' <<<"$BODY")
[ "$l1" = '{"beliefSystemId": "stoicism", "completedAt": 1500, "earnedXp": 12, "lessonId": "l1", "score": 5, "status": "completed"}' ] \
    || fail "the merged lesson: $l1"
[ "$(json profile <<<"$BODY")" = '{"totalXp": 100, "currentLevel": 3, "streakDays": 1, "lastActiveDate": "2026-11-21"}' ] \
    || fail "the merged profile: $(json profile <<<"$BODY")"
sync "$PHONE" "{\"cursor\":\"$PHONE_CURSOR\"}"
expect_status 200 "the phone's next sync"
[ "$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted(p["lessonId"] for p in d["progress"]), d["achievements"][0]["completed"])' <<<"$BODY")" = "['l1', 't1'] True" ] \
    || fail "the phone did not get the tablet's changes: $BODY"
PHONE_CURSOR=$(json cursor <<<"$BODY")
sync "$PHONE" "{\"cursor\":\"$PHONE_CURSOR\"}"
[ "$(json progress <<<"$BODY")" = "[]" ] && [ "$(json profile <<<"$BODY")" = "" ] || fail "nothing changed, yet: $BODY"
pass "two devices' offline changes merge (status forward, max score, earliest completion, streak of the latest day) and each device gets the other's changes"

# --- Re-sending the same sync, in the other order: the state does not move.
before=$(state)
sync "$TABLET" '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"in_progress","score":1}]}'
sync "$PHONE" '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"l2","status":"completed","score":7,"earnedXp":20,"completedAt":2000}]}'
[ "$(state)" = "$before" ] || fail "a repeated or older change moved the state"
pass "repeated and older changes leave the state as it was"

# --- Invalid payloads: 400 naming the field; nothing written.
expect_invalid() { # expect_invalid BODY PATH
    sync "$PHONE" "$1"
    [ "$STATUS" = 400 ] && grep -qF "\`$2\`" <<<"$BODY" || fail "expected 400 naming $2: $STATUS $BODY"
}
expect_invalid '{"progress":[{"beliefSystemId":"b","lessonId":"x","status":"completed","score":99},{"beliefSystemId":"b","lessonId":"y","status":"done"}]}' 'progress[1].status'
expect_invalid '{"progress":[{"beliefSystemId":"b","lessonId":"has space","status":"completed"}]}' 'progress[0].lessonId'
expect_invalid '{"progress":[{"beliefSystemId":"b","lessonId":"x","status":"completed","score":-1}]}' 'progress[0].score'
expect_invalid '{"progress":[{"beliefSystemId":"b","lessonId":"x","status":"completed","score":"10"}]}' 'progress[0].score'
expect_invalid '{"progress":[{"lessonId":"x","status":"completed"}]}' 'progress[0].beliefSystemId'
expect_invalid '{"achievements":[{"achievementId":"ok","progress":1},{"achievementId":"","progress":1}]}' 'achievements[1].achievementId'
expect_invalid '{"profile":{"lastActiveDate":"2026-02-30"}}' 'profile.lastActiveDate'
expect_invalid '{"cursor":"abc"}' 'cursor'
expect_invalid "{\"progress\":[$(python3 -c 'print(",".join("{\"beliefSystemId\":\"b\",\"lessonId\":\"l%d\",\"status\":\"completed\"}" % i for i in range(501)))')]}" 'progress'
python3 -c 'import json; print(json.dumps({"progress":[{"beliefSystemId":"b","lessonId":"l%d" % i,"status":"completed","score":1} for i in range(500)],"pad":"x"*1100000}))' >"$E2E_TMP/big_sync.json"
request POST /sync -H "$(bearer "$PHONE")" -H 'Content-Type: application/json' --data-binary "@$E2E_TMP/big_sync.json"
expect_status 413 "a body over 1 MiB"
[ "$(state)" = "$before" ] || fail "an invalid sync changed the state"
pass "invalid items (status, id, range, type, missing field, date, cursor, 501 items) get 400 naming the path; over 1 MiB gets 413; nothing written"

# --- 50 concurrent syncs of one user: nothing lost.
python3 - "$E2E_URL" "$PHONE" "$E2E_TMP" <<'PY'
import json, random, sys
url, token, tmp = sys.argv[1:]
random.seed(50)
statuses = ["not_started", "in_progress", "completed"]
bodies = []
for i in range(50):
    progress = [{"beliefSystemId": "load", "lessonId": f"own{i}", "status": random.choice(statuses), "score": random.randint(0, 100)}]
    progress += [{"beliefSystemId": "load", "lessonId": f"shared{random.randint(0, 4)}", "status": random.choice(statuses),
                  "score": random.randint(0, 100), "earnedXp": random.randint(0, 50),
                  "completedAt": random.choice([None, random.randint(1000, 2000)])} for _ in range(3)]
    achievements = [{"achievementId": f"load{random.randint(0, 2)}", "progress": random.randint(0, 10), "completed": random.random() < 0.2}]
    profile = {"totalXp": random.randint(0, 1000), "currentLevel": random.randint(0, 20), "streakDays": random.randint(0, 30),
               "lastActiveDate": f"2026-12-{random.randint(1, 9):02d}"}
    bodies.append({"cursor": None, "profile": profile, "progress": progress, "achievements": achievements})
entries = [f'url = "{url}/sync"\ninsecure\nsilent\nheader = "Authorization: Bearer {token}"\nheader = "Content-Type: application/json"\n'
           f'header = "Expect:"\ndata = {json.dumps(json.dumps(body))}\noutput = "/dev/null"\nwrite-out = "%{{http_code}}\\n"\n' for body in bodies]
open(f"{tmp}/sync.curl", "w").write("next\n".join(entries))
json.dump(bodies, open(f"{tmp}/sync_bodies.json", "w"))
PY
curl --no-progress-meter --parallel --parallel-max 50 -K "$E2E_TMP/sync.curl" >"$E2E_TMP/sync_statuses"
[ "$(grep -c '^200$' "$E2E_TMP/sync_statuses")" = 50 ] || fail "not every concurrent sync got 200: $(sort "$E2E_TMP/sync_statuses" | uniq -c)"
sync "$PHONE" '{"cursor":null}'
printf '%s' "$BODY" >"$E2E_TMP/sync_state.json"
python3 - "$E2E_TMP/sync_bodies.json" "$E2E_TMP/sync_state.json" <<'PY' || fail "the state after 50 concurrent syncs is not the merge of all of them"
import json, sys
bodies = json.load(open(sys.argv[1]))
stored = json.load(open(sys.argv[2]))
rank = {"not_started": 0, "in_progress": 1, "completed": 2}
expected = {}
for body in bodies:
    for p in body["progress"]:
        key = p["lessonId"]
        e = expected.setdefault(key, {"status": "not_started", "score": 0, "earnedXp": 0, "completedAt": None})
        e["status"] = max(e["status"], p["status"], key=rank.get)
        e["score"] = max(e["score"], p.get("score", 0)); e["earnedXp"] = max(e["earnedXp"], p.get("earnedXp", 0))
        times = [t for t in (e["completedAt"], p.get("completedAt")) if t is not None]
        e["completedAt"] = min(times) if times else None
got = {p["lessonId"]: {k: p[k] for k in ("status", "score", "earnedXp", "completedAt")} for p in stored["progress"] if p["beliefSystemId"] == "load"}
assert got == expected, (got, expected)
achievements = {}
for body in bodies:
    for a in body["achievements"]:
        e = achievements.setdefault(a["achievementId"], {"progress": 0, "completed": False})
        e["progress"] = max(e["progress"], a["progress"]); e["completed"] = e["completed"] or a["completed"]
got = {a["achievementId"]: {"progress": a["progress"], "completed": a["completed"]} for a in stored["achievements"] if a["achievementId"].startswith("load")}
assert got == achievements, (got, achievements)
latest = max(b["profile"]["lastActiveDate"] for b in bodies)
streak = max(b["profile"]["streakDays"] for b in bodies if b["profile"]["lastActiveDate"] == latest)
profile = stored["profile"]
assert profile["totalXp"] == max(b["profile"]["totalXp"] for b in bodies), profile
assert profile["lastActiveDate"] == latest and profile["streakDays"] == streak, profile
PY
pass "50 concurrent syncs of one user: every lesson, achievement and the profile equal the merge of all 50 (nothing lost)"

# --- A revoked session syncs nothing, also when the server holds the user's state in memory.
sync "$TABLET" '{"cursor":null}'
expect_status 200 "the tablet syncs before its session is revoked"
request POST /auth/logout -H "$(bearer "$TABLET")"
expect_status 204 "the tablet signs out"
before=$(state)
sync "$TABLET" '{"cursor":null}'
expect_status 401 "an unchanged sync after sign-out"
sync "$TABLET" '{"cursor":null,"progress":[{"beliefSystemId":"revoked","lessonId":"r1","status":"completed","score":1}]}'
expect_status 401 "a changing sync after sign-out"
[ "$(state)" = "$before" ] || fail "a signed-out device changed the state"
pass "after sign-out the device's access token syncs nothing (401, changing or not); the other device still syncs"
