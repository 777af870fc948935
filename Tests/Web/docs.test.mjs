// The sync example of the docs (the fenced block of docs/WEB.md that starts "// Example: sync") runs
// as written, against a stand-in of POST /sync and /collections.json.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

function example() {
  for (const file of ["docs/WEB.md"]) {
    const match = /```js\n(\/\/ Example: sync[^\n]*\n[\s\S]*?)```/.exec(readFileSync(root + file, "utf8"));
    if (match) return { file, code: match[1] };
  }
  return null;
}

test("the docs' sync example runs", async () => {
  const found = example();
  assert.ok(found, "a ```js block starting with // Example: sync in docs/WEB.md");
  const declaration = readFileSync(root + "examples/sync/collections.json", "utf8");
  const sent = [];
  globalThis.fetch = async (path) => {
    assert.equal(path, "/collections.json");
    return new Response(declaration);
  };
  const client = {
    subscribe: () => () => {},
    async fetch(path, init) {
      sent.push(JSON.parse(init.body));
      return new Response(JSON.stringify({ cursor: "1", profile: null, progress: [], achievements: [], collections: { workouts: [], favourites: [] } }));
    },
  };
  const rendered = [];
  const code = found.code.replace('from "/siwa.js"', `from ${JSON.stringify(pathToFileURL(root + "public/siwa.js").href)}`);
  // The example as a module of its own, given `client` and `render` as the page would.
  globalThis.__example = { client, render: (workouts) => rendered.push(workouts.length) };
  const source = `const { client, render } = globalThis.__example;\n${code}\nglobalThis.__example.sync = sync;`;
  const directory = mkdtempSync(join(tmpdir(), "siwa-docs-"));
  writeFileSync(join(directory, "example.mjs"), source);
  try {
    await import(pathToFileURL(join(directory, "example.mjs")).href);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  const { sync } = globalThis.__example;
  try {
    await sync.sync();
    const workouts = sync.records("workouts");
    assert.deepEqual(workouts.map((w) => [w.workoutId, w.laps]), [["w1", 1]]);
    assert.ok(rendered.length >= 3, "the subscriber saw the changes");
    assert.ok(sent.some((body) => body.collections.workouts.some((w) => w.workoutId === "w0" && w.deleted.value === true)));
    assert.ok(sent.some((body) => body.progress.some((l) => l.lessonId === "l1")));
  } finally {
    sync.close();
  }
});
