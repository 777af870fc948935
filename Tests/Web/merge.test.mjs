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
