// createClient (public/siwa.js) in Node against a stand-in of the server's routes and of Apple's
// script: error codes stay in the closed set of siwa.d.ts, two sign-ins at once never share a nonce,
// a call refused after the session ended sends no refresh, and the session never goes to another
// origin. (In a real browser against the real stack: Tests/EndToEnd/27_web_client.sh.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { createClient, SiwaError } from "../../public/siwa.js";

const server = "https://siwa.test";

/** A stand-in of the server: each request logged; `routes["METHOD /path"]` answers it. */
function stack(routes = {}) {
  const sent = [];
  let tokens = 0;
  const grant = () => ({
    accessToken: `access-${++tokens}`, refreshToken: `refresh-${tokens}`, sessionId: "7", expiresIn: 900,
    user: { id: "1", createdAt: 0, emails: [] },
  });
  const fetch = async (input, init = {}) => {
    const url = new URL(String(input));
    const name = `${init.method ?? "GET"} ${url.origin === server ? url.pathname : url.href}`;
    sent.push({ name, init });
    const route = routes[name];
    if (route) return route(init);
    if (name === "POST /auth/apple" || name === "POST /auth/refresh") return Response.json(grant());
    if (name === "POST /auth/logout") return new Response(null, { status: 204 });
    return Response.json({ error: "not_found", message: "no such route" }, { status: 404 });
  };
  return { sent, fetch };
}

/** Apple's script: `init` keeps the configuration, `signIn` answers with its state (or `refuse`). */
function appleScript(refuse = null) {
  const inits = [];
  globalThis.AppleID = {
    auth: {
      init: (config) => inits.push(config),
      signIn: async () => {
        if (refuse) throw { error: refuse };
        const config = inits[inits.length - 1];
        return { authorization: { id_token: "id-token", code: "code", state: config.state } };
      },
    },
  };
  return inits;
}

const apple = { clientId: "com.example.app", redirectURI: "https://app.test/" };

test("an error code from outside (the app's API, Apple's script, an address) stays in the closed set", async () => {
  const known = await SiwaError.from(Response.json({ error: "token_reused", message: "spent" }, { status: 401 }));
  assert.deepEqual([known.code, known.status, known.message], ["token_reused", 401, "spent"]);
  const foreign = await SiwaError.from(Response.json({ error: "out_of_stock", message: "none left" }, { status: 409 }));
  assert.deepEqual([foreign.code, foreign.status], ["invalid_response", 409]);
  assert.match(foreign.message, /out_of_stock: none left/);
  const page = await SiwaError.from(new Response("<html>Bad gateway</html>", { status: 502 }));
  assert.deepEqual([page.code, page.isTemporary], ["invalid_response", true]);

  appleScript("some_new_code_of_apple");
  const client = createClient({ server, apple, fetch: stack().fetch, crossTab: false });
  await assert.rejects(client.signIn(), (e) => e.code === "invalid_response" && /some_new_code_of_apple/.test(e.message));
  appleScript("user_cancelled_authorize");
  await assert.rejects(client.signIn(), (e) => e.code === "user_cancelled_authorize");
  client.close();
});

test("two sign-ins at once never share a nonce or a state", async () => {
  const inits = appleScript();
  const { sent, fetch } = stack();
  const client = createClient({ server, apple, fetch, crossTab: false });
  await client.ready;
  await Promise.allSettled([client.signIn(), client.signIn()]);
  assert.equal(inits.length, 2);
  assert.notEqual(inits[0].nonce, inits[1].nonce, "the nonce Apple gets");
  assert.notEqual(inits[0].state, inits[1].state, "the state");
  const nonces = sent.filter((r) => r.name === "POST /auth/apple").map((r) => JSON.parse(r.init.body).nonce);
  assert.equal(new Set(nonces).size, nonces.length, `the raw nonces sent: ${nonces}`);
  client.close();
});

test("a call refused after the session ended meanwhile sends no refresh (its refresh token is never presented again)", async () => {
  appleScript();
  let answer = null;
  const called = new Promise((resolve) => {
    answer = resolve;
  });
  let refuse = null;
  const { sent, fetch } = stack({
    "GET /api/items": () => {
      answer();
      return new Promise((resolve) => (refuse = () => resolve(Response.json({ error: "invalid_token", message: "ended" }, { status: 401 }))));
    },
  });
  const client = createClient({ server, apple, fetch, crossTab: false });
  await client.signIn();
  const call = client.fetch("/api/items");
  await called;
  await client.signOut();
  refuse();
  await assert.rejects(call, (e) => e.code === "signed_out");
  assert.deepEqual(sent.map((r) => r.name), ["POST /auth/apple", "GET /api/items", "POST /auth/logout"]);
  client.close();
});

test("a 401 gets one refresh and one more try; the session never goes to another origin", async () => {
  appleScript();
  let refused = 0;
  const { sent, fetch } = stack({
    "GET /api/items": (init) => {
      const token = new Headers(init.headers).get("Authorization");
      if (token === "Bearer access-1") {
        refused += 1;
        return Response.json({ error: "invalid_token", message: "expired" }, { status: 401 });
      }
      return Response.json({ items: [token] });
    },
  });
  const client = createClient({ server, apple, fetch, crossTab: false, apiOrigins: ["https://api.test"] });
  await client.signIn();
  assert.deepEqual(await client.json("/api/items"), { items: ["Bearer access-2"] });
  assert.equal(refused, 1);
  assert.deepEqual(sent.map((r) => r.name), ["POST /auth/apple", "GET /api/items", "POST /auth/refresh", "GET /api/items"]);
  const before = sent.length;
  for (const address of ["https://evil.test/x", "//evil.test/x", "/\\evil.test/x", "http://siwa.test/x"]) {
    await assert.rejects(client.fetch(address), (e) => e.code === "untrusted_host", address);
  }
  assert.equal(sent.length, before, "nothing sent to another origin");
  await client.fetch("https://api.test/items").catch(() => {});
  assert.equal(new Headers(sent[sent.length - 1].init.headers).get("Authorization"), "Bearer access-2", "an apiOrigins backend gets it");
  client.close();
});

test("sign-out ends the session at the server even when the access token ran out (refreshed first)", async () => {
  appleScript();
  const logouts = [];
  const { sent, fetch } = stack({
    "POST /auth/apple": () => Response.json({ accessToken: "access-old", refreshToken: "refresh-old", sessionId: "7", expiresIn: 0, user: { id: "1", createdAt: 0, emails: [] } }),
    "POST /auth/logout": (init) => {
      const token = new Headers(init.headers).get("Authorization");
      logouts.push(token);
      return token === "Bearer access-old" ? Response.json({ error: "invalid_token", message: "expired" }, { status: 401 }) : new Response(null, { status: 204 });
    },
  });
  const client = createClient({ server, apple, fetch, crossTab: false });
  await client.signIn();
  await client.signOut();
  assert.equal(client.signedIn, false);
  assert.deepEqual(sent.map((r) => r.name), ["POST /auth/apple", "POST /auth/refresh", "POST /auth/logout"]);
  assert.deepEqual(logouts, ["Bearer access-1"], "the server took the sign-out");
  client.close();
});

// (The timeout only stops a broken build from hanging the run: the other tab's event never comes.)
test("a refresh refused as reuse signs out every tab that shares the session, with the reason", { timeout: 20000 }, async (t) => {
  appleScript();
  const kept = new Map();
  const storage = { get: (key) => kept.get(key) ?? null, set: (key, value) => void kept.set(key, value), remove: (key) => void kept.delete(key) };
  const { sent, fetch } = stack({
    "POST /auth/refresh": () => Response.json({ error: "token_reused", message: "presented twice" }, { status: 401 }),
  });
  const storageKey = `reuse-${process.pid}`;
  const tabA = createClient({ server, apple, fetch, storage, storageKey });
  await tabA.signIn();
  const tabB = createClient({ server, apple, fetch, storage, storageKey });
  t.after(() => {
    tabA.close();
    tabB.close();
  });
  await tabB.ready;
  assert.equal(tabB.user?.id, "1", "the other tab finds the session");
  const endedInB = new Promise((resolve) => tabB.subscribe((event) => event.type === "signedOut" && resolve(event.reason)));
  const events = [];
  tabA.subscribe((event) => events.push(event));
  await assert.rejects(tabA.refresh(), (e) => e.code === "signed_out" && e.cause?.code === "token_reused");
  assert.deepEqual(events, [{ type: "signedOut", reason: "refreshTokenReused" }]);
  assert.equal(await endedInB, "refreshTokenReused");
  assert.equal(tabB.signedIn, false);
  assert.equal(kept.size, 0, "nothing kept after the sign-out");
  assert.equal(sent.filter((r) => r.name === "POST /auth/refresh").length, 1);
});
