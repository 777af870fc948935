// siwa.d.ts is what web developers read: every exported declaration, and every member of an exported
// interface, class or object type (nested object types written over several lines too), has a
// `/** */` comment right before it; and siwa.d.ts declares exactly the values siwa.js exports.
//
//   node --test Tests/Web/declarations.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const root = new URL("../../", import.meta.url);
const declarations = readFileSync(new URL("public/siwa.d.ts", root), "utf8");
const script = readFileSync(new URL("public/siwa.js", root), "utf8");

/** The text with strings and comments blanked (lengths kept), so that brackets can be counted. */
function code(text) {
  return text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, (match) => match.replace(/[^\n]/g, " "));
}

/** Each exported declaration and member of siwa.d.ts that has no doc comment right before it. */
export function undocumented(text) {
  const lines = text.split("\n");
  const bare = code(text).split("\n");
  const missing = [];
  let braces = 0;
  let parens = 0;
  let documented = false;     // the last non-blank line before this one ends a /** */ comment
  let inDoc = false;
  let exported = [];          // the brace depths of the exported bodies we are in, with their names
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    const atStart = braces;
    const parensAtStart = parens;
    for (const c of bare[i]) {
      if (c === "{") braces++;
      else if (c === "}") braces--;
      else if (c === "(" || c === "[") parens++;
      else if (c === ")" || c === "]") parens--;
    }
    if (inDoc || line.startsWith("/**")) {
      inDoc = !line.includes("*/");
      if (!inDoc) documented = true;
      continue;
    }
    if (line === "") continue;
    const top = /^export\s+(?:declare\s+)?(?:function|class|interface|type|const)\s+([A-Za-z_$][\w$]*)/.exec(line);
    if (atStart === 0 && parensAtStart === 0 && top) {
      if (!documented) missing.push(top[1]);
      if (braces > atStart) exported.push({ depth: atStart + 1, name: top[1] });
    } else if (exported.length > 0 && parensAtStart === 0 && atStart >= exported[0].depth) {
      const member = /^(?:readonly\s+|static\s+|get\s+)*([A-Za-z_$][\w$]*)\??\s*[(:<]/.exec(line);
      if (member) {
        if (!documented) missing.push(`${exported[0].name}.${member[1]}`);
      }
    }
    while (exported.length > 0 && braces < exported[exported.length - 1].depth) exported.pop();
    documented = false;
  }
  return missing;
}

test("every exported declaration and member of siwa.d.ts has a doc comment", () => {
  const missing = undocumented(declarations);
  assert.deepEqual(missing, [], `siwa.d.ts: no /** */ comment before ${missing.join(", ")}`);
});

test("the check finds a member and a declaration without a comment", () => {
  const text = "/** A. */\nexport interface A {\n  /** x. */\n  x: number;\n  y(): void;\n  nested?: {\n    z: string;\n  };\n}\nexport type B = string;\n";
  assert.deepEqual(undocumented(text), ["A.y", "A.nested", "A.z", "B"]);
});

test("siwa.d.ts declares exactly the values siwa.js exports", () => {
  const values = (text, pattern) => [...text.matchAll(pattern)].map((m) => m[1]).sort();
  const exportedByScript = values(script, /^export\s+(?:async\s+)?(?:function\*?|class|const|let|var)\s+([A-Za-z_$][\w$]*)/gm);
  const declared = values(declarations, /^export\s+(?:declare\s+)?(?:function|class|const|let|var)\s+([A-Za-z_$][\w$]*)/gm);
  assert.ok(!/^export\s*\{/m.test(script), "siwa.js exports with `export {…}`, which this check does not read");
  assert.ok(exportedByScript.length >= 5, `siwa.js's exports: ${exportedByScript}`);
  assert.deepEqual(declared, exportedByScript, "siwa.d.ts's exported values and siwa.js's exports");
});

test("siwa.d.ts's codes besides the server's are siwa.js's (what an unknown code is checked against)", () => {
  const union = (name) => {
    const body = declarations.replace(/\/\*[\s\S]*?\*\//g, "").split(`export type ${name} =`)[1].split(";")[0];
    return [...body.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
  };
  const declared = ["AppFlowErrorCode", "AppleJSErrorCode", "ClientErrorCode"].flatMap(union).sort();
  const list = script.split("const otherErrorCodes = Object.freeze([")[1].split("]);")[0];
  const known = [...list.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]).sort();
  assert.ok(declared.length >= 10, `${declared}`);
  assert.deepEqual(known, declared);
});
