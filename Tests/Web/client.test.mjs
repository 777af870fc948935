// createSync (public/siwa.js) in Node, its state in memory, against a small stand-in of POST /sync
// that merges with siwa.js's own rules (the rules themselves are checked against SyncRules by
// merge.test.mjs; the real server by Tests/EndToEnd/28_web_sync.sh): offline changes stay queued,
// pages within the request limits, `more` followed, `resync` drops the synced view but keeps the
// queue, a 400 sets the batch aside and the rest syncs, two devices converge.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createMemoryStorage, createSync, syncRules } from "../../public/siwa.js";

const declaration = {
  collections: {
    workouts: {
      key: ["workoutId"],
      fields: {
        workoutId: { type: "id" },
        note: { type: "string", maxLength: 500, merge: "latestWins" },
        distance: { type: "integer", min: 0, max: 1000000, merge: "maximum" },
        laps: { type: "integer", min: 0, max: 10000, merge: "counter" },
        tags: { type: "set", maxCount: 20, maxLength: 32, merge: "union" },
      },
      deletion: { tombstoneDays: 30 },
      limits: { itemsPerRequest: 3 },
    },
  },
};

/** A server of one user: each record with the version that last changed it. */
function server({ pageSize = 1000 } = {}) {
  const { collections } = syncRules.parseDeclaration(declaration);
  const byName = new Map([...syncRules.builtInCollections(), ...collections].map((c) => [c.name, c]));
  const stored = new Map(); // "collection key" -> {collection, record, version}
  const state = { version: 0, requests: [], offline: false, refuse: null, forgetBefore: 0 };
  const take = (name, json) => {
    const collection = byName.get(name);
    const record = syncRules.readRecord(collection, json);
    const id = name + " " + record.key;
    const current = stored.get(id);
    const merged = current ? syncRules.mergeRecords(collection, current.record, record) : record;
    if (!current || syncRules.writeRecord(collection, merged) !== syncRules.writeRecord(collection, current.record)) {
      stored.set(id, { collection, record: merged, version: ++state.version });
    }
  };
  const fetch = async (path, init) => {
    if (state.offline) {
      state.onOffline?.();
      throw Object.assign(new Error("offline"), { code: "offline" });
    }
    const body = JSON.parse(init.body);
    state.requests.push({ bytes: init.body.length, body });
    if (init.body.length > (state.maxBytes ?? Infinity)) {
      return new Response(JSON.stringify({ error: "payload_too_large", message: "too large" }), { status: 413 });
    }
    const refused = (body.collections?.workouts ?? []).some((w) => w.note?.value === state.refuse);
    if (refused) return new Response(JSON.stringify({ error: "invalid_request", message: "refused" }), { status: 400 });
    if (body.profile) take("profile", body.profile);
    for (const name of ["progress", "achievements"]) for (const json of body[name] ?? []) take(name, json);
    for (const [name, list] of Object.entries(body.collections ?? {})) for (const json of list) take(name, json);
    let since = body.cursor === null ? 0 : Number(body.cursor);
    const resync = since < state.forgetBefore;
    if (resync) since = 0;
    const changed = [...stored.values()].filter((s) => s.version > since).sort((a, b) => a.version - b.version);
    const page = changed.slice(0, pageSize);
    const more = changed.length > pageSize;
    const answer = { cursor: String(more ? page[page.length - 1].version : state.version), profile: null, progress: [], achievements: [], collections: { workouts: [] } };
    for (const s of page) {
      const json = JSON.parse(syncRules.writeRecord(s.collection, s.record));
      if (s.collection.name === "profile") answer.profile = json;
      else if (s.collection.name === "workouts") answer.collections.workouts.push(json);
      else answer[s.collection.name].push(json);
    }
    if (more) answer.more = true;
    if (resync) answer.resync = true;
    return new Response(JSON.stringify(answer), { status: 200 });
  };
  return { state, client: { fetch, subscribe: () => () => {} }, stored };
}

test("offline changes stay queued; they sync in pages within itemsPerRequest; two devices converge", async () => {
  const { state, client } = server({ pageSize: 2 });
  const phone = createSync(client, { declaration, storage: "memory" });
  const laptop = createSync(client, { declaration, storage: "memory" });
  await Promise.all([phone.ready, laptop.ready]);
  assert.notEqual(phone.deviceId, laptop.deviceId);
  state.offline = true;
  for (let i = 1; i <= 7; i++) await phone.save("workouts", { workoutId: `w${i}`, note: `phone ${i}`, distance: i * 100, tags: ["run"] });
  await phone.increment("workouts", { workoutId: "w1" }, "laps", 2);
  await phone.recordLesson({ beliefSystemId: "stoicism", lessonId: "l1", status: "in_progress", score: 10 });
  await phone.recordProfile({ totalXp: 50, streakDays: 2, lastActiveDate: "2026-11-20" });
  await laptop.save("workouts", { workoutId: "w1", note: "laptop", distance: 50, tags: ["tempo"] });
  await laptop.increment("workouts", { workoutId: "w1" }, "laps", 3);
  await laptop.delete("workouts", { workoutId: "w2" });
  await assert.rejects(phone.sync(), (error) => error.code === "offline");
  assert.ok(phone.hasPendingChanges, "still queued after an offline failure");
  state.offline = false;
  await phone.sync();
  const sent = state.requests.map((r) => r.body.collections.workouts.length);
  assert.ok(sent.every((n) => n <= 3), `at most itemsPerRequest (3) workouts a request: ${sent}`);
  await laptop.sync();
  await phone.sync();
  assert.equal(phone.hasPendingChanges, false);
  assert.deepEqual(phone.view(), laptop.view());
  const w1 = phone.record("workouts", { workoutId: "w1" });
  assert.equal(w1.note, "laptop", "the later note wins");
  assert.equal(w1.distance, 100, "the larger distance");
  assert.equal(w1.laps, 5, "each device's count adds up");
  assert.deepEqual(w1.tags, ["run", "tempo"]);
  assert.equal(phone.record("workouts", { workoutId: "w2" }), null, "deleted after its edit");
  assert.equal(phone.view().lessons[0].status, "in_progress");
  assert.equal(phone.view().profile.totalXp, 50);
});

test("a request stays within maximumRequestBytes", async () => {
  const { state, client } = server();
  const sync = createSync(client, { declaration, storage: "memory", maximumRequestBytes: 2048 });
  for (let i = 0; i < 12; i++) await sync.save("workouts", { workoutId: `big${i}`, note: "x".repeat(400) });
  await sync.sync();
  assert.ok(state.requests.length >= 3, `${state.requests.length} requests`);
  assert.ok(state.requests.every((r) => r.bytes <= 2048), state.requests.map((r) => r.bytes).join(" "));
  assert.equal(sync.records("workouts").length, 12);
});

test("resync drops the synced view and keeps the queue", async () => {
  const { state, client, stored } = server();
  const sync = createSync(client, { declaration, storage: "memory" });
  await sync.save("workouts", { workoutId: "gone", distance: 1 });
  await sync.save("workouts", { workoutId: "kept", distance: 2 });
  await sync.sync();
  // The server purged "gone"'s tombstone (this device missed its deletion): its next answer resyncs.
  stored.delete("workouts gone");
  state.forgetBefore = state.version + 1;
  state.offline = true;
  await sync.save("workouts", { workoutId: "new", distance: 3 });
  state.offline = false;
  // The queued change goes out with the stale cursor: the server's whole state, with resync.
  await sync.sync();
  assert.deepEqual(sync.records("workouts").map((w) => w.workoutId), ["kept", "new"]);
});

test("a batch refused with 400 is set aside and the rest syncs; requeued, it goes again", async () => {
  const { state, client } = server();
  const sync = createSync(client, { declaration, storage: "memory" });
  state.refuse = "bad";
  await sync.save("workouts", { workoutId: "a", note: "bad" });
  await assert.rejects(sync.sync(), (error) => error.status === 400 && error.code === "invalid_request");
  assert.ok(sync.hasRefusedChanges);
  assert.equal(sync.hasPendingChanges, false);
  await sync.save("workouts", { workoutId: "b", note: "good" });
  await sync.sync();
  assert.equal(sync.records("workouts").length, 2, "the refused change stays in the view");
  state.refuse = null;
  await sync.requeueRefusedChanges();
  await sync.sync();
  assert.equal(sync.hasRefusedChanges, false);
  assert.deepEqual([...new Set(state.requests.flatMap((r) => r.body.collections.workouts.map((w) => w.workoutId)))].sort(), ["a", "b"]);
});

test("subscribe hears every change of the view; a bad record is refused before it is queued", async () => {
  const { client } = server();
  const sync = createSync(client, { declaration, storage: "memory" });
  const seen = [];
  const unsubscribe = sync.subscribe((view) => seen.push(view.collections.workouts.length));
  await sync.save("workouts", { workoutId: "a" });
  await sync.save("workouts", { workoutId: "b" });
  unsubscribe();
  await sync.save("workouts", { workoutId: "c" });
  assert.deepEqual(seen, [1, 2]);
  await assert.rejects(sync.save("workouts", { workoutId: "d", distance: -1 }), (e) => e.code === "invalid_change" && /distance/.test(e.message));
  await assert.rejects(sync.save("workouts", { workoutId: "not an id" }), (e) => e.code === "invalid_change");
  assert.equal(sync.records("workouts").length, 3);
});

test("two tabs over one stored state: each change merges into what is stored, none is lost", async () => {
  const { client, stored } = server();
  // One storage for both, as two tabs open one IndexedDB database.
  const storage = createMemoryStorage();
  const tabA = createSync(client, { declaration, storage });
  const tabB = createSync(client, { declaration, storage });
  await Promise.all([tabA.ready, tabB.ready]);
  assert.equal(tabA.deviceId, tabB.deviceId, "one device id for the browser");
  await tabA.save("workouts", { workoutId: "w1", note: "from A", tags: ["a"] });
  await tabB.save("workouts", { workoutId: "w1", distance: 42, tags: ["b"] });
  const tabC = createSync(client, { declaration, storage });
  await tabC.ready;
  assert.deepEqual(tabC.record("workouts", { workoutId: "w1" }), { workoutId: "w1", note: "from A", distance: 42, laps: 0, tags: ["a", "b"] });
  await tabA.sync();
  const onServer = [...stored.values()].find((s) => s.collection.name === "workouts");
  const json = JSON.parse(syncRules.writeRecord(onServer.collection, onServer.record));
  assert.deepEqual([json.note.value, json.distance, json.tags], ["from A", 42, ["a", "b"]], "the server got both tabs' changes");
  assert.equal(tabA.record("workouts", { workoutId: "w1" }).distance, 42, "tab A's view took what tab B stored");
});

test("start(): syncs after a local change, tries again after a failure, stops on sign-out", async () => {
  const { state, client } = server();
  let seen = null;
  const reached = (id) => new Promise((resolve) => (seen = { id, resolve }));
  const fetch = client.fetch;
  let signOut = null;
  const watched = {
    subscribe: (listener) => ((signOut = () => listener({ type: "signedOut" })), () => (signOut = null)),
    async fetch(path, init) {
      const answer = await fetch(path, init);
      if (seen && JSON.parse(init.body).collections.workouts.some((w) => w.workoutId === seen.id)) seen.resolve();
      return answer;
    },
  };
  const sync = createSync(watched, { declaration, storage: "memory" });
  sync.start({ interval: 60000, initialDelay: 5, maximumDelay: 20 });
  let arrived = reached("a");
  await sync.save("workouts", { workoutId: "a" });
  await arrived;
  // Offline: the loop fails, waits, and sends the change once the server is back.
  state.offline = true;
  const refused = new Promise((resolve) => (state.onOffline = resolve));
  arrived = reached("b");
  await sync.save("workouts", { workoutId: "b" });
  await refused;
  state.offline = false;
  await arrived;
  assert.ok(signOut, "the loop listens to the client's events");
  signOut();
  assert.equal(signOut, null, "a sign-out stops the loop (it no longer listens)");
  sync.close();
});

test("save sets the whole record (a latestWins field left out is cleared, as SIWAKit's save); update only what it names", async () => {
  const { client } = server();
  const storage = createMemoryStorage();
  const sync = createSync(client, { declaration, storage });
  await sync.save("workouts", { workoutId: "w1", note: "first", distance: 10, tags: ["a"] });
  await sync.update("workouts", { workoutId: "w1", distance: 20 });
  assert.deepEqual(sync.record("workouts", { workoutId: "w1" }), { workoutId: "w1", note: "first", distance: 20, laps: 0, tags: ["a"] });
  await sync.increment("workouts", { workoutId: "w1" }, "laps", 3);
  await sync.update("workouts", { workoutId: "w1", tags: ["b"] });
  assert.deepEqual(sync.record("workouts", { workoutId: "w1" }), { workoutId: "w1", note: "first", distance: 20, laps: 3, tags: ["a", "b"] });
  await sync.save("workouts", { workoutId: "w1", distance: 5 });
  assert.deepEqual(sync.record("workouts", { workoutId: "w1" }), { workoutId: "w1", note: null, distance: 20, laps: 3, tags: ["a", "b"] });
  // A change that changes nothing keeps the deletion stamp (it must not undo a later deletion made elsewhere).
  const deletion = async () => JSON.parse((await storage.load()).slots.find((s) => s.part === "view" && s.key === "w1").text).deleted;
  const before = await deletion();
  await sync.update("workouts", { workoutId: "w1", distance: 20 });
  await sync.save("workouts", { workoutId: "w1", distance: 20, laps: 3, tags: ["a", "b"] });
  assert.deepEqual(await deletion(), before);
});

test("a change that cannot be stored rejects with code storage, and the sync holds what is stored", async () => {
  const { client } = server();
  const storage = createMemoryStorage();
  const sync = createSync(client, { declaration, storage });
  await sync.save("workouts", { workoutId: "kept" });
  const write = storage.write;
  storage.write = async () => {
    throw new Error("the disk is full");
  };
  await assert.rejects(sync.save("workouts", { workoutId: "lost" }), (error) => error.code === "storage");
  storage.write = write;
  assert.deepEqual(sync.records("workouts").map((w) => w.workoutId), ["kept"]);
  assert.equal(sync.hasPendingChanges, true);
});

test("a server whose body limit is lower (413): smaller requests, nothing lost; a record too large alone is set aside", async () => {
  const { state, client, stored } = server();
  state.maxBytes = 1200;
  const sync = createSync(client, { declaration, storage: "memory" });
  for (let i = 0; i < 6; i++) await sync.save("workouts", { workoutId: `big${i}`, note: "x".repeat(450) });
  await sync.sync();
  assert.equal(sync.hasPendingChanges, false);
  assert.equal(sync.hasRefusedChanges, false, "nothing set aside");
  assert.equal([...stored.keys()].filter((id) => id.startsWith("workouts big")).length, 6, "every change reached the server");
  state.maxBytes = 300;
  await sync.save("workouts", { workoutId: "huge", note: "x".repeat(450) });
  await assert.rejects(sync.sync(), (error) => error.status === 413 && error.code === "payload_too_large");
  assert.equal(sync.hasPendingChanges, false, "the queue is not held up");
  assert.equal(sync.hasRefusedChanges, true);
  assert.equal(sync.record("workouts", { workoutId: "huge" }).note.length, 450, "kept in the view");
});
