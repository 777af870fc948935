"""The concurrency checks of 50_galera.sh, through one nginx in front of two siwa hosts.

    galera_checks.py SIWA_URL APPLE_URL ADMIN_SECRET_FILE OUT_DIR CHECK [ARGS]

Checks: syncs, replays, refreshes, notifications, load STOP_FILE EVENTS_FILE. Each prints one line of results
and exits 1 when a check fails (the shell script then reads the database for the rest).
"""
import concurrent.futures
import json
import random
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

siwa, apple, secret_file, out, check = sys.argv[1:6]
args = sys.argv[6:]
admin = {"Authorization": "Bearer " + open(secret_file).read().strip()}
tls = ssl.create_default_context()
tls.check_hostname = False
tls.verify_mode = ssl.CERT_NONE


def call(url, body=None, headers=None, method=None):
    """(status, parsed JSON body or {})."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, context=tls, timeout=60) as response:
            text = response.read()
            return response.status, json.loads(text or b"{}")
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text or b"{}")
        except ValueError:
            return error.code, {}
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return 0, {"error": str(error)}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def apple_token(name, nonce):
    status, user = call(apple + "/admin/users", {"email": f"{name}@example.com"}, admin)
    if status != 201:
        fail(f"emulator user: {status} {user}")
    status, grant = call(apple + "/admin/sign-in", {"userId": user["id"], "clientId": "com.example.siwa", "nonce": nonce}, admin)
    if status != 200:
        fail(f"emulator sign-in: {status} {grant}")
    return user["id"], grant["identityToken"]


def signed_in(name):
    """A new person signed in to siwa: (apple user id, access token, refresh token, user id)."""
    nonce = f"nonce-{name}-{random.getrandbits(40)}"
    apple_user, token = apple_token(name, nonce)
    status, body = call(siwa + "/auth/apple", {"identityToken": token, "nonce": nonce})
    if status != 200:
        fail(f"sign-in of {name}: {status} {body}")
    return apple_user, body["accessToken"], body["refreshToken"], body["user"]["id"]


def lesson(lesson_id):
    return {"beliefSystemId": "galera", "lessonId": lesson_id, "status": "completed", "score": 1, "earnedXp": 1,
            "completedAt": 1000}


def version(cursor):
    """The version of a cursor's text: what comes before its tag (`~`) and its page position (`.`)."""
    return int(cursor.split("~")[0].split(".")[0])


def sync(access, lessons, cursor=None):
    return call(siwa + "/sync", {"cursor": cursor, "progress": lessons, "achievements": []},
                {"Authorization": "Bearer " + access})


def stored_lessons(access, patience=0):
    """The lessons stored for the person; a 503 (a node still rejoining the cluster) is asked
    again, as siwa's answer says, for up to `patience` seconds."""
    deadline = time.monotonic() + patience
    while True:
        status, body = sync(access, [])
        if status == 200:
            return {item["lessonId"] for item in body["progress"]}
        if status != 503 or time.monotonic() > deadline:
            fail(f"reading the synced state: {status} {body}")
        time.sleep(0.5)


def parallel(count, task):
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(task, range(count)))


if check == "syncs":
    # 50 concurrent syncs of one person, each adding its own lesson: nginx spreads them over both
    # hosts, which write through different nodes. Every one must be answered 200 and kept.
    _, access, _, user_id = signed_in("galera-syncs")
    def sync_retrying(i):
        # As the app does: a 503 (the database unavailable to that worker for a moment) is retried.
        for _ in range(3):
            status, body = sync(access, [lesson(f"s{i}")])
            if status != 503:
                break
            retried.append(i)
            time.sleep(0.2)
        return status, body
    retried = []
    results = parallel(50, sync_retrying)
    statuses = [status for status, _ in results]
    # Each sync that changed something moved the user's version on by one, so the state at version
    # v holds v lessons. An answer holds the whole state at its cursor (none was sent), its own
    # lesson among them. A sync whose lesson was stored already (by an earlier try of it, whose
    # outcome was lost on its way back) changes nothing and answers the version it found: two
    # answers may share a cursor.
    # Answers that share a cursor hold the same state: two writes that both moved the version to
    # v + 1 (an increment lost) would each hold v + 1 lessons, but not the same ones. In the end the
    # version is 50, with 50 lessons.
    lessons_of = {i: {item["lessonId"] for item in body["progress"]} for i, (status, body) in enumerate(results) if status == 200}
    wrong = [(i, results[i][1]["cursor"], len(held)) for i, held in lessons_of.items()
             if f"s{i}" not in held or len(held) != version(results[i][1]["cursor"])]
    by_cursor = {}
    for i, held in lessons_of.items():
        by_cursor.setdefault(version(results[i][1]["cursor"]), set()).add(frozenset(held))
    differing = sorted(cursor for cursor, states in by_cursor.items() if len(states) > 1)
    final_status, final = sync(access, [])
    kept = {item["lessonId"] for item in final.get("progress", [])}
    missing = [f"s{i}" for i in range(50) if f"s{i}" not in kept]
    print(f"  50 concurrent syncs: statuses {sorted(set(statuses))} ({len(retried)} retried after a 503), "
          f"{50 - len(missing)} of 50 lessons kept, {len(by_cursor)} distinct versions, version {final.get('cursor')} in the end")
    open(f"{out}/syncs_user", "w").write(str(user_id))
    if statuses.count(200) != 50 or missing or wrong or differing or final_status != 200 or version(final.get("cursor", "0")) != 50 \
            or len(kept) != 50:
        time.sleep(1)
        later = stored_lessons(access)
        fail(f"statuses {statuses}, missing {missing}; a second later still missing: {[m for m in missing if m not in later]}; "
             f"answers without their lesson or not holding as many lessons as their version (sync, cursor, lessons): {wrong}; "
             f"cursors answered with different states: {differing}; in the end {final_status}, version {final.get('cursor')}, "
             f"{len(kept)} lessons")

elif check == "replays":
    # One identity token and nonce presented 20 times at once: exactly one sign-in.
    nonce = f"nonce-replay-{random.getrandbits(40)}"
    _, token = apple_token("galera-replays", nonce)
    results = parallel(20, lambda i: call(siwa + "/auth/apple", {"identityToken": token, "nonce": nonce}))
    statuses = [status for status, _ in results]
    codes = sorted({body.get("error", "-") for status, body in results if status != 200})
    print(f"  20 concurrent replays of one token: {statuses.count(200)} signed in, the others {codes}")
    # A 503 is a worker whose node closed its connection at COMMIT (the outcome unknown to it).
    if statuses.count(200) != 1 or any(status not in (200, 401, 503) for status in statuses) \
            or not set(codes) <= {"nonce_reused", "unavailable"}:
        fail(f"statuses {statuses}, codes {codes}")
    open(f"{out}/replay_user", "w").write(next(body["user"]["id"] for status, body in results if status == 200))

elif check == "refreshes":
    # One refresh token presented 20 times at once: the answers may be new pairs (a retry within
    # the reuse interval) or refusals, never a 500, and the session ends with one live token.
    _, _, refresh, user_id = signed_in("galera-refreshes")
    results = parallel(20, lambda i: call(siwa + "/auth/refresh", {"refreshToken": refresh}))
    statuses = [status for status, _ in results]
    print(f"  20 concurrent refreshes of one token: statuses {sorted(statuses)}")
    if any(status not in (200, 401, 503) for status in statuses) or 200 not in statuses:
        fail(f"statuses {statuses}")
    open(f"{out}/refresh_user", "w").write(str(user_id))

elif check == "notifications":
    # 1,000 notifications, 200 of them duplicates, 32 at a time through both hosts.
    random.seed(11)
    users = [signed_in(f"galera-notify{i}")[0] for i in range(20)]
    types = ["email-disabled"] * 4 + ["email-enabled"] * 4 + ["consent-revoked"] * 2
    payloads = []
    for i in range(800):
        order = {"type": random.choice(types), "userId": random.choice(users), "deliver": False}
        status, made = call(apple + "/admin/notifications", order, admin)
        if status != 200:
            fail(f"emulator notification: {status} {made}")
        payloads.append((made["jti"], made["payload"]))
    sends = payloads + random.sample(payloads, 200)
    random.shuffle(sends)
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        # Apple delivers a notification again until it gets 200; a 503 is retried here the same way.
        def deliver(sent):
            for _ in range(3):
                status = call(siwa + "/webhook/apple", {"payload": sent[1]})[0]
                if status != 503:
                    return status
                time.sleep(0.2)
            return status
        statuses = list(pool.map(deliver, sends))
    print(f"  1,000 notifications (800 distinct) through both hosts: statuses {sorted(set(statuses))}")
    if statuses.count(200) != 1000:
        fail(f"statuses {sorted(set(statuses))}")
    open(f"{out}/notification_jtis", "w").write("\n".join(jti for jti, _ in payloads) + "\n")

elif check == "load":
    # Syncs from 8 people until the file STOP exists (at most 120 s), each adding a new lesson per
    # request; every answer is recorded with its wall-clock times, so that the shell script can kill
    # or restart nodes and hosts meanwhile, and then check that no lesson answered 200 is missing.
    # The events the script wrote to EVENTS ("<unix time> <what>" lines) split the failures by the
    # time they were answered: each event's window runs from the sending of its first failure (or
    # the event, if that was sent before) to the answer of its last.
    stop, events_file = args[0], args[1]
    people = [signed_in(f"galera-load{i}-{random.getrandbits(20)}") for i in range(8)]
    records = []
    lock = threading.Lock()
    started = time.time()
    open(stop + ".started", "w").write(f"{started}\n")

    def person(index):
        access = people[index][1]
        number = 0
        while time.time() - started < 120:
            try:
                open(stop).close()
                return
            except FileNotFoundError:
                pass
            number += 1
            lesson_id = f"p{index}-{number}"
            sent = time.time()
            status, body = sync(access, [lesson(lesson_id)])
            with lock:
                records.append((sent, time.time(), index, lesson_id, status, body.get("error", "")))

    parallel(8, person)
    acknowledged = [(index, lesson_id) for _, _, index, lesson_id, status, _ in records if status == 200]
    failed = [record for record in records if record[4] != 200]
    missing = []
    for index, (_, access, _, _) in enumerate(people):
        # The load may end while a node still rejoins.
        kept = stored_lessons(access, patience=60)
        missing += [lesson_id for i, lesson_id in acknowledged if i == index and lesson_id not in kept]
    events = [(float(line.split(" ", 1)[0]), line.split(" ", 1)[1].strip()) for line in open(events_file) if line.strip()]
    windows = []
    for number, (at, what) in enumerate(events):
        until = events[number + 1][0] if number + 1 < len(events) else float("inf")
        mine = [r for r in failed if at <= r[1] < until]
        first, last = (max(at, min(r[0] for r in mine)), max(r[1] for r in mine)) if mine else (at, at)
        slowest = max((r[1] - r[0] for r in records if at <= r[0] < until), default=0)
        windows.append({"event": what, "failed": len(mine), "failureWindowSeconds": round(last - first, 2),
                        "failuresFrom": round(first - at, 2), "slowestSeconds": round(slowest, 2),
                        "failureReasons": sorted({f"{r[4]} {r[5]}" for r in mine})})
    before = [r for r in failed if not events or r[1] < events[0][0]]
    summary = {"requests": len(records), "seconds": round(max((r[1] for r in records), default=started) - started, 1),
               "answered200": len(acknowledged), "failed": len(failed), "failedBeforeAnyEvent": len(before),
               "acknowledgedMissing": len(missing), "events": windows}
    json.dump(summary, open(f"{out}/load_summary.json", "w"))
    # Every failure, for the record: its send and answer times after the first event, and why.
    zero = events[0][0] if events else started
    with open(f"{out}/load_failures", "a") as failures:
        for sent, answered, index, lesson_id, status, error in sorted(failed):
            failures.write(f"{sent - zero:8.3f} {answered - zero:8.3f} {status} {error} {lesson_id}\n")
    for window in windows:
        print("  " + json.dumps(window))
    print(f"  {len(records)} syncs in {summary['seconds']} s, {len(acknowledged)} answered 200, {len(failed)} failed "
          f"({len(before)} before the first event), {len(missing)} acknowledged missing")
    if missing:
        fail(f"acknowledged lessons missing: {missing[:10]}")

else:
    fail(f"unknown check {check}")
