// A single-page app on siwa.js: Sign in with Apple JS in a popup (or the app flow with PKCE), the
// session kept by the client, the account's devices, sign-out and account deletion. The page's own
// origin hosts it; its path (with the trailing slash) is the redirect URI registered for the
// Services ID at Apple and in SIWA_APPLE_REDIRECT_URIS (and for the app flow's client in
// SIWA_APP_CLIENTS). `?forge=state` or `?forge=nonce` make it misbehave on purpose, for the tests:
// it must then be refused.
import { createClient } from "/siwa.js";

const config = window.SPA_CONFIG;
const query = new URLSearchParams(location.search);
const forge = query.get("forge");
const status = document.getElementById("status");
const say = (text) => { status.textContent = text; };

// Apple's script, loaded once; siwa.js would load it at the first sign-in (`apple.scriptURL`).
const appleScript = new Promise((resolve, reject) => {
  const script = document.createElement("script");
  script.src = config.appleScript;
  script.onload = resolve;
  script.onerror = () => reject(new Error("Apple's script could not be loaded"));
  document.head.append(script);
}).then(() => {
  // For the tests: an answer of another sign-in (state).
  if (forge !== "state") { return; }
  const signIn = window.AppleID.auth.signIn;
  window.AppleID.auth.signIn = async (...args) => {
    const answer = await signIn(...args);
    return { ...answer, authorization: { ...answer.authorization, state: "another sign-in's state" } };
  };
});
// For the tests: a nonce Apple never saw.
const forgedFetch = (input, init) => {
  if (String(input).endsWith("/auth/apple") || String(input).endsWith("/auth/web/apple")) {
    init = { ...init, body: JSON.stringify({ ...JSON.parse(init.body), nonce: "a nonce Apple never saw" }) };
  }
  return fetch(input, init);
};

const client = createClient({
  // siwa's origin when the page is on another one (a web app on another site, a webview), listed in
  // the server's SIWA_CORS_ORIGINS; by default the page's own.
  server: config.server,
  session: query.get("session") === "cookie" ? "cookie" : "token",
  apple: { clientId: config.clientId, scriptURL: config.appleScript, redirectURI: location.origin + location.pathname },
  pkce: { clientId: config.appClientId, redirectUri: location.origin + location.pathname },
  storage: query.get("storage") ?? "memory",
  crossTab: query.get("crossTab") !== "off",
  device: "Single-page app",
  fetch: forge === "nonce" ? forgedFetch : undefined,
});
window.siwaClient = client;  // to try it from the console

async function showAccount() {
  const user = client.user;
  document.getElementById("sign-in").hidden = user !== null;
  document.getElementById("account").hidden = user === null;
  if (!user) { document.getElementById("user").textContent = ""; return; }
  document.getElementById("user").textContent = `Signed in as ${user.firstName || "you"} (user ${user.id})`;
  const list = document.getElementById("sessions");
  list.replaceChildren();
  for (const session of await client.sessions()) {
    const item = document.createElement("li");
    item.textContent = `${session.device ?? "A device"}${session.current ? " (this one)" : ""}`;
    const end = document.createElement("button");
    end.textContent = "End";
    end.addEventListener("click", () => client.revokeSession(session.id).then(showAccount, (error) => say(`refused: ${error.code}`)));
    item.append(" ", end);
    list.append(item);
  }
}

client.subscribe((event) => {
  document.getElementById("event").textContent = event.type === "signedOut" ? `signedOut: ${event.reason}` : event.type;
  if (event.type === "signedOut") { say("signed-out"); }
  showAccount().catch((error) => say(`refused: ${error.code}`));
});

document.getElementById("sign-in").addEventListener("click", async () => {
  say("Signing in…");
  try {
    await client.signIn({ flow: query.get("flow") === "pkce" ? "pkce" : "apple", mode: query.get("mode") === "redirect" ? "redirect" : "popup" });
    await client.me();
    say("signed-in");
  } catch (error) {
    say(`refused: ${error.code ?? error.message}`);
  }
});
document.getElementById("sign-out").addEventListener("click", () => client.signOut());
document.getElementById("delete-account").addEventListener("click", () => {
  if (confirm("Delete your account and everything in it?")) {
    client.deleteAccount().catch((error) => say(`refused: ${error.code}`));
  }
});

// The page a redirect sign-in comes back to is this one; then the session kept from before.
client.handleRedirect()
  .then(() => Promise.all([client.ready, appleScript]))
  .then(() => { say(client.user ? "signed-in" : "ready"); return showAccount(); })
  .catch((error) => say(`refused: ${error.code ?? error.message}`));
