// The JavaScript merge rules (public/siwa.js) against the Swift ones (SyncRules), on the vectors
// Tests/SyncVectors generates: each vector's changes, read by siwa.js's codec and merged in each of
// the vector's orders, must give the record Swift merged, byte for byte as the codec writes it.
//
//   SIWA_SYNC_VECTORS=vectors.json node --test Tests/Web/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { syncRules } from "../../public/siwa.js";

const path = process.env.SIWA_SYNC_VECTORS;

test("the vectors' file is given", () => {
  assert.ok(path, "SIWA_SYNC_VECTORS names the file Tests/SyncVectors wrote");
});

test("siwa.js merges every vector as SyncRules does", { skip: !path }, () => {
  const vectors = JSON.parse(readFileSync(path, "utf8"));
  const declared = syncRules.parseDeclaration(vectors.declaration);
  const collections = new Map([...syncRules.builtInCollections(), ...declared.collections].map((c) => [c.name, c]));
  const seen = new Set();
  let failures = [];
  for (const [index, vector] of vectors.vectors.entries()) {
    const collection = collections.get(vector.collection);
    assert.ok(collection, `vector ${index}: the collection ${vector.collection} is declared`);
    seen.add(vector.collection);
    const records = vector.changes.map((change) => syncRules.readRecord(collection, change));
    for (const order of vector.orders) {
      let merged = records[order[0]];
      for (const i of order.slice(1)) merged = syncRules.mergeRecords(collection, merged, records[i]);
      const text = syncRules.writeRecord(collection, merged);
      if (text !== vector.result) failures.push({ index, collection: vector.collection, order, changes: vector.changes, swift: vector.result, js: text });
    }
  }
  assert.deepEqual([...seen].sort(), [...collections.keys()].sort(), "every collection has vectors");
  if (failures.length > 0) {
    const first = failures[0];
    assert.fail(
      `${failures.length} merges differ from Swift's; the first, vector ${first.index} (${first.collection}), order ${JSON.stringify(first.order)}:\n` +
        `changes: ${first.changes.join("\n         ")}\nswift:   ${first.swift}\njs:      ${first.js}`,
    );
  }
  console.log(`${vectors.vectors.length} vectors, ${vectors.vectors.reduce((n, v) => n + v.orders.length, 0)} orders merged as Swift did`);
});

test("siwa.js writes requests and reads answers of POST /sync as SyncWire does", { skip: !path }, () => {
  const vectors = JSON.parse(readFileSync(path, "utf8"));
  const declared = syncRules.parseDeclaration(vectors.declaration);
  const collections = new Map([...syncRules.builtInCollections(), ...declared.collections].map((c) => [c.name, c]));
  assert.ok(vectors.bodies.length > 0);
  for (const [index, body] of vectors.bodies.entries()) {
    // A request's records in order of key, as siwa.js orders them (the keys as SyncRecordCodec makes them).
    for (const [name, texts] of Object.entries(body.records)) {
      const keys = texts.map((text) => syncRules.readRecord(collections.get(name), text, { checked: false }).key);
      assert.deepEqual([...keys].sort(syncRules.compareStrings), keys, `body ${index}: ${name}'s records in Swift's order of key`);
    }
    assert.equal(syncRules.writeRequest(declared.collections, body.cursor, body.records), body.request, `body ${index}: the request`);
    const answer = syncRules.readAnswer(declared.collections, body.answer);
    assert.deepEqual([answer.cursor, answer.more, answer.resync], [body.cursor ?? "1", body.more, body.resync], `body ${index}`);
    const read = {};
    for (const name of Object.keys(body.records)) read[name] = [];
    for (const { collection, record } of answer.items) read[collection].push(syncRules.writeRecord(collections.get(collection), record));
    assert.deepEqual(read, body.records, `body ${index}: the answer's records`);
  }
});
