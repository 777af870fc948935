"""siwa.js's sync in a real headless Chromium against the local stack, with the example declaration
(examples/sync/collections.json), converging with a SIWAKit device (the Linux test app siwakit-e2e).

    web_sync.py SIGN_IN_ANSWER KIT_DIR

The page is the stack's own (same origin as /sync); it imports /siwa.js and makes a sync with
createClient's client of the session POST /auth/apple gave, kept where createClient reads it (its own
storage object, holding the session as createClient writes it). Offline is the DevTools
protocol's Network.emulateNetworkConditions; the state lives in the page's IndexedDB."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from browser import Browser, BrowserError  # noqa: E402
from web_sign_in import BASE, fail, ok  # noqa: E402

SIGNED_IN, KIT_DIR = json.loads(sys.argv[1]), sys.argv[2]
DECLARATION = open(os.environ["E2E_SYNC_COLLECTIONS"]).read()
SYSTEM_CA = "/etc/ssl/certs/ca-certificates.crt"


def kit(*arguments):
    """One launch of the SIWAKit test app (as siwakit.sh's `kit`), its output."""
    ca = os.path.join(os.environ["E2E_TMP"], "siwakit", "ca.pem")
    command = ["unshare", "-rm", "sh", "-c", 'mount --bind "$0" "$1" && shift && exec "$@"', ca, SYSTEM_CA,
               os.environ["E2E_KIT"], KIT_DIR, *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        fail(f"siwakit-e2e {' '.join(arguments)}: {done.stderr.strip()}")
    return done.stdout.strip()


SETUP = """
(async () => {
  const siwa = await import("/siwa.js");
  const grant = %s;
  const stored = JSON.stringify({accessToken: grant.accessToken, refreshToken: grant.refreshToken, sessionId: String(grant.sessionId),
                                 expiresAt: Date.now() + grant.expiresIn * 1000, user: grant.user});
  const client = siwa.createClient({storage: {get: () => stored, set: () => {}, remove: () => {}}, crossTab: false});
  await client.ready;
  window.sync = siwa.createSync(client, { declaration: %s, name: "siwa-sync-e2e" });
  await window.sync.ready;
  return window.sync.deviceId;
})()
""" % (json.dumps(SIGNED_IN), DECLARATION)


def open_page(browser):
    """Opens the stack's page and makes its sync; this device's id."""
    browser.navigate(BASE + "/")
    browser.wait_for("document.readyState === 'complete'", "the stack's page")
    return browser.evaluate(SETUP)


def offline(browser, on):
    browser.send("Network.emulateNetworkConditions",
                 {"offline": on, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}, session=True)


def sync_outcome(browser):
    return browser.evaluate("window.sync.sync().then(() => 'synced', (e) => e.code === 'offline' ? 'offline' : 'error ' + e.code + ' ' + e.message)")


def browser_records(browser):
    """The browser's records in the shape siwakit-e2e prints them (absent optionals left out)."""
    view = browser.evaluate("window.sync.view()")
    workouts = [{k: w[k] for k in ("workoutId", "note", "distance", "laps", "tags") if w[k] is not None}
                for w in view["collections"]["workouts"]]
    favourites = [{k: f[k] for k in ("itemId", "label") if f[k] is not None} for f in view["collections"]["favourites"]]
    return {"workouts": workouts, "favourites": favourites}


def main():
    started = time.monotonic()
    with Browser() as browser:
        browser.send("Network.enable", session=True)
        device = open_page(browser)
        if open_page(browser) != device:
            fail("the device id changed across a reload")
        if sync_outcome(browser) != "synced":
            fail("the browser's first sync")

        # --- Offline in the browser: save, delete, a lesson; reload; the queue survives; back online, sync.
        offline(browser, True)
        browser.evaluate("""(async () => {
            await sync.save("workouts", {workoutId: "b1", note: "browser only", distance: 700, tags: ["walk"]});
            await sync.save("workouts", {workoutId: "b2", note: "short-lived", distance: 10});
            await sync.save("favourites", {itemId: "f-b", label: "Park"});
            await sync.delete("workouts", {workoutId: "b2"});
            await sync.increment("workouts", {workoutId: "b1"}, "laps", 2);
            await sync.recordLesson({beliefSystemId: "stoicism", lessonId: "web-1", status: "completed", score: 80, earnedXp: 20, completedAt: 1795000000000});
        })()""")
        if sync_outcome(browser) != "offline":
            fail("a sync while the page is offline did not fail as offline")
        offline(browser, False)
        if open_page(browser) != device:
            fail("the device id changed across a reload")
        state = browser.evaluate("({pending: sync.hasPendingChanges, ids: sync.records('workouts').map(w => w.workoutId), "
                                 "laps: sync.record('workouts', {workoutId: 'b1'}).laps, lessons: sync.view().lessons.length})")
        if state != {"pending": True, "ids": ["b1"], "laps": 2, "lessons": 1}:
            fail(f"the offline changes after a reload (IndexedDB): {state}")
        ok("offline in Chromium (Network.emulateNetworkConditions): two saves, a delete, an increment and a lesson are kept in "
           "IndexedDB across a reload, with the device id; a sync fails as offline and keeps them queued")
        if sync_outcome(browser) != "synced" or browser.evaluate("sync.hasPendingChanges"):
            fail("the sync once back online")
        server = json.loads(kit("server-records"))
        if server != browser_records(browser):
            fail(f"the browser's records differ from the server's: {browser_records(browser)} against {server}")
        lessons = json.loads(kit("server-state"))["lessons"]
        if not any(lesson["lessonID"] == "web-1" for lesson in lessons):
            fail(f"the browser's lesson is not on the server: {lessons}")
        ok("back online, one sync sends them: the server holds b1 (laps 2) and not b2, the favourite and the lesson")

        # --- A second tab of the same page: its change is merged into the stored state, and the first
        # tab hears of it (BroadcastChannel) and shows it.
        first = browser.session
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        browser.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.send("Runtime.enable", session=True)
        if open_page(browser) != device:
            fail("the second tab's device id")
        browser.evaluate("sync.save('workouts', {workoutId: 't2', note: 'second tab', distance: 1})")
        browser.session = first
        browser.wait_for("sync.record('workouts', {workoutId: 't2'})?.note === 'second tab'", "the second tab's record in the first tab")
        if sync_outcome(browser) != "synced" or "t2" not in [w["workoutId"] for w in json.loads(kit("server-records"))["workouts"]]:
            fail("the second tab's record, synced by the first")
        ok("a second tab's save reaches the first tab (BroadcastChannel, the state read again) and its sync")

        # --- Resync: a cursor the server never gave (as after a restored backup) and a record in the
        # view the server does not hold (a deletion whose tombstone it purged): the answer is the whole
        # state with resync, the view is made of it again, and a change not yet sent is kept.
        browser.evaluate("""(async () => {
            const db = await new Promise((resolve, reject) => {
                const request = indexedDB.open("siwa-sync-e2e", 1);
                request.onsuccess = () => resolve(request.result);
                request.onerror = () => reject(request.error);
            });
            const transaction = db.transaction(["slots", "meta"], "readwrite");
            transaction.objectStore("slots").put({part: "view", collection: "workouts", key: "ghost",
                text: '{"workoutId":"ghost","note":null,"distance":1,"laps":{},"startedAt":null,"effort":null,"tags":[],"shared":false,"deleted":null}'});
            transaction.objectStore("meta").put("1~00000000", "cursor");
            await new Promise((resolve) => (transaction.oncomplete = resolve));
            db.close();
        })()""")
        open_page(browser)
        browser.evaluate("sync.save('workouts', {workoutId: 'r1', note: 'not sent yet', distance: 3})")
        if browser.evaluate("sync.records('workouts').map(w => w.workoutId).join()") != "b1,ghost,r1,t2":
            fail("the view before the resync")
        if sync_outcome(browser) != "synced":
            fail("the resync")
        server = json.loads(kit("server-records"))
        if browser_records(browser) != server or "ghost" in [w["workoutId"] for w in server["workouts"]] \
                or "r1" not in [w["workoutId"] for w in server["workouts"]]:
            fail(f"after the resync: browser {browser_records(browser)}, server {server}")
        ok("a cursor the server never gave gets the whole state with resync: the browser's view is made of it again (a record "
           "only the view held is gone) and its unsent change is kept and sent")

        # --- The same records edited offline on both sides: the SIWAKit device first, the browser later.
        kit("workout", "w1", "start", "1000", "1", "run")
        kit("workout", "w2", "two", "2000", "0")
        kit("workout", "w3", "three", "3000", "0")
        if kit("sync") != "synced" or sync_outcome(browser) != "synced":
            fail("the shared records' first syncs")
        offline(browser, True)
        kit("workout", "w1", "kit note", "5000", "3", "run")  # laps 1 -> 3: the device's own count grows by 2
        kit("delete-workout", "w2")
        kit("workout", "w3", "kit edit", "3500", "0")
        kit("favourite", "f-k", "Hill")
        browser.evaluate("""(async () => {
            await sync.save("workouts", {workoutId: "w1", note: "browser note", distance: 4000, tags: ["run", "evening"]});
            await sync.increment("workouts", {workoutId: "w1"}, "laps", 4);
            await sync.save("workouts", {workoutId: "w2", note: "browser edit", distance: 2500});
            await sync.delete("workouts", {workoutId: "w3"});
        })()""")
        if sync_outcome(browser) != "offline":
            fail("the browser's sync while offline")
        offline(browser, False)
        for step in ("kit", "browser", "kit"):
            outcome = kit("sync") if step == "kit" else sync_outcome(browser)
            if outcome != "synced":
                fail(f"the {step}'s sync: {outcome}")
        mine, theirs, server = browser_records(browser), json.loads(kit("records")), json.loads(kit("server-records"))
        if not (mine == theirs == server):
            fail(f"no convergence: browser {mine}, SIWAKit {theirs}, server {server}")
        workouts = {w["workoutId"]: w for w in server["workouts"]}
        w1 = workouts.get("w1")
        expected = {"workoutId": "w1", "note": "browser note", "distance": 5000, "laps": 7, "tags": ["evening", "run"]}
        if w1 != expected or sorted(workouts) != ["b1", "r1", "t2", "w1", "w2"] or workouts["w2"].get("note") != "browser edit":
            fail(f"the merged records: {server['workouts']}")
        if sorted(f["itemId"] for f in server["favourites"]) != ["f-b", "f-k"]:
            fail(f"the favourites: {server['favourites']}")
        ok("a SIWAKit device and the browser edit w1, w2, w3 offline: all three (browser, SIWAKit, server) hold the same records; "
           "w1's note is the later (the browser's), its distance the larger (5000), its laps each device's count summed "
           "(1 + 2 + 4 = 7), its tags joined; w2 deleted on SIWAKit and edited later in the browser is back; w3 edited on "
           "SIWAKit and deleted later in the browser is gone")
    print(f"  ({time.monotonic() - started:.1f} s in the browser's part)")


if __name__ == "__main__":
    try:
        main()
    except BrowserError as error:
        fail(str(error))
