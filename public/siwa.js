// siwa.js: the app's half of siwa for the web, one ES module with no dependencies.
// Types: siwa.d.ts next to this file. Guide: docs/WEB.md.
//
// The module has two parts. "Sign-in and session" makes a client (`createClient`): Sign in with
// Apple JS in a popup or by redirect, the cookie session or the PKCE app flow, tokens kept where the
// app chooses, one refresh at a time across tabs, sign-out, account deletion, sessions, typed calls.
// "Sync" keeps the declared collections and the built-in model in IndexedDB and merges them with
// the same rules as the server and SIWAKit (`createSync(client, options)`); it reaches the server
// only through the client's `fetch`, which authorizes a request and refreshes the session once when
// it is refused.

// ===== Sign-in and session =====

// The server's error codes (docs/openapi.yaml, the `error` of every error answer), in its order.
const serverErrorCodes = Object.freeze([
  "invalid_request", "invalid_grant", "invalid_redirect_uri", "invalid_client", "unsupported_grant_type",
  "invalid_token", "token_reused", "nonce_reused", "user_mismatch", "code_mismatch", "origin_mismatch",
  "not_found", "method_not_allowed", "already_completed", "payload_too_large", "unsupported_media_type",
  "rate_limited", "apple_error", "apple_unavailable", "not_configured", "unavailable", "internal_error",
  "user_disabled", "export_limited", "identity_in_use", "external_user_linked", "guest_linked",
  "invalid_link_token", "link_token_expired", "link_token_used", "guests_disabled", "invalid_link_secret",
  "not_for_browsers", "bad_request", "forbidden", "uri_too_long",
]);

/**
 * What a call of siwa.js fails with: the server's error code and status (`code` one of the server's
 * codes), or one of the client's own codes (`offline`, `signed_out`, `state_mismatch`, ...).
 */
export class SiwaError extends Error {
  /**
   * @param {string} code what went wrong, as a code to act on.
   * @param {string} message what went wrong, for people.
   * @param {{status?: number, retryAfter?: number|null, cause?: unknown}} [details]
   */
  constructor(code, message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "SiwaError";
    this.code = code;
    this.status = details.status ?? 0;
    this.retryAfter = details.retryAfter ?? null;
  }

  /** Worth trying again later with the same input: offline, busy, or the server's database or Apple away. */
  get isTemporary() {
    return this.code === "offline" || this.status === 429 || this.status >= 500;
  }

  /** Whether `code` is one of the server's error codes (rather than one of the client's own). */
  static isServerCode(code) {
    return serverErrorCodes.includes(code);
  }

  /**
   * The error of a server's answer that is not 2xx: its JSON `error` and `message` when the body is
   * the contract's error, else the status.
   * @param {Response} response
   * @returns {Promise<SiwaError>}
   */
  static async from(response) {
    let body = null;
    try { body = await response.clone().json(); } catch { body = null; }
    const retry = Number.parseInt(response.headers.get("Retry-After") ?? "", 10);
    const details = { status: response.status, retryAfter: Number.isFinite(retry) ? retry : null };
    if (body && typeof body.error === "string") {
      return new SiwaError(body.error, String(body.message ?? body.error_description ?? body.error), details);
    }
    return new SiwaError("invalid_response", `HTTP ${response.status} without the API's JSON error`, details);
  }
}

/** Tokens kept in this tab's memory only: gone at a reload, never shared with another tab. */
function memoryStore() {
  const values = new Map();
  return {
    shared: false,
    get: (key) => values.get(key) ?? null,
    set: (key, value) => { values.set(key, value); },
    remove: (key) => { values.delete(key); },
  };
}

/** Tokens in `localStorage`: shared by the origin's tabs and kept across reloads. */
function localStore() {
  return {
    shared: true,
    get: (key) => localStorage.getItem(key),
    set: (key, value) => localStorage.setItem(key, value),
    remove: (key) => localStorage.removeItem(key),
  };
}

/** Tokens in IndexedDB (database `siwa`, store `session`): shared, kept, and read in a transaction. */
function indexedDBStore() {
  let opened = null;
  function database() {
    opened ??= new Promise((resolve, reject) => {
      const request = indexedDB.open("siwa", 1);
      request.onupgradeneeded = () => request.result.createObjectStore("session");
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    return opened;
  }
  async function run(mode, act) {
    const db = await database();
    return new Promise((resolve, reject) => {
      const transaction = db.transaction("session", mode);
      const request = act(transaction.objectStore("session"));
      // A write is done when its transaction commits: only then may another tab read it.
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error);
    });
  }
  return {
    shared: true,
    get: async (key) => (await run("readonly", (store) => store.get(key))) ?? null,
    set: (key, value) => run("readwrite", (store) => store.put(value, key)),
    remove: (key) => run("readwrite", (store) => store.delete(key)),
  };
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** 32 random bytes, base64url: a nonce, a state, a PKCE verifier (SIWAKit's SignInNonce). */
function randomValue() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function sha256(text) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** The nonce of one Apple JS sign-in: Apple gets `hashed` (hex SHA-256), the server the raw `value`. */
async function signInNonce() {
  const value = randomValue();
  const hashed = Array.from(await sha256(value), (byte) => byte.toString(16).padStart(2, "0")).join("");
  return { value, hashed, state: randomValue() };
}

/** `fields` as `application/x-www-form-urlencoded`. */
function formEncoded(fields) {
  return new URLSearchParams(fields).toString();
}

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = () => resolve();
    script.onerror = () => reject(new SiwaError("offline", `Apple's script could not be loaded from ${src}`));
    document.head.appendChild(script);
  });
}

/**
 * A client of a siwa server: signs in (Sign in with Apple JS, or the app flow with PKCE), keeps the
 * session, sends the app's calls with it, and tells the app what happens to the session.
 * @param {import("./siwa").ClientOptions} [options]
 * @returns {import("./siwa").Client}
 */
export function createClient(options = {}) {
  const server = new URL(options.server ?? location.origin).origin;
  const cookieSession = (options.session ?? "token") === "cookie";
  const apple = options.apple ?? null;
  const pkce = options.pkce ?? null;
  const storageKey = options.storageKey ?? "siwa";
  const device = options.device;
  const refreshMargin = (options.refreshMargin ?? 60) * 1000;
  const send = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const apiOrigins = new Set([server, ...(options.apiOrigins ?? []).map((origin) => new URL(origin).origin)]);
  const store = typeof options.storage === "object" && options.storage !== null
    ? { shared: true, ...options.storage }
    : options.storage === "localStorage" ? localStore()
    : options.storage === "indexedDB" ? indexedDBStore()
    : memoryStore();
  // Other tabs of the origin: they share the session when it is kept where they all read it (or is
  // the cookie), refresh it one at a time, and tell each other of every change.
  const crossTab = options.crossTab !== false && (store.shared || cookieSession);
  const channel = crossTab && typeof BroadcastChannel === "function" ? new BroadcastChannel(`siwa:${storageKey}`) : null;
  const lockName = `siwa:${storageKey}:refresh`;
  const pendingKey = `${storageKey}:pending`;

  let session = null;             // {accessToken, refreshToken, expiresAt (ms), sessionId, user}; cookie: {user}
  let refreshing = null;          // the refresh in flight in this tab
  let nextNonce = null;           // the next Apple JS sign-in's nonce and state, made ahead (see signIn)
  const listeners = new Set();

  function emit(event) {
    for (const listener of [...listeners]) {
      try { listener(event); } catch (error) { setTimeout(() => { throw error; }); }
    }
  }

  async function readStored() {
    try {
      const text = await store.get(storageKey);
      return text ? JSON.parse(text) : null;
    } catch (error) {
      throw new SiwaError("storage", "The session could not be read from the storage", { cause: error });
    }
  }

  async function writeStored(value) {
    if (cookieSession) { return; }
    try {
      if (value) { await store.set(storageKey, JSON.stringify(value)); } else { await store.remove(storageKey); }
    } catch (error) {
      throw new SiwaError("storage", "The session could not be written to the storage", { cause: error });
    }
  }

  /** Keeps `next` as the session, tells the other tabs, and the app (`event`). */
  async function keep(next, event) {
    await writeStored(next);
    session = next;
    channel?.postMessage({ type: "session", session: cookieSession ? { user: next.user } : next, event: event.type });
    emit(event);
  }

  /** Ends the session here (and in the other tabs): the server's side is the caller's business. */
  async function end(reason) {
    refreshing = null;
    const had = session !== null;
    session = null;
    try { await writeStored(null); } catch { /* signed out in this tab anyway */ }
    channel?.postMessage({ type: "signedOut", reason });
    if (had) { emit({ type: "signedOut", reason }); }
  }

  if (channel) {
    channel.onmessage = ({ data }) => {
      if (data?.type === "session" && data.session) {
        // Already adopted from the storage under the refresh lock.
        if (!cookieSession && data.event === "refreshed" && session?.refreshToken === data.session.refreshToken) { return; }
        const isNew = session === null || session.user?.id !== data.session.user?.id;
        session = data.session;
        emit(isNew ? { type: "signedIn", user: session.user } : { type: data.event === "userUpdated" ? "userUpdated" : "refreshed", user: session.user });
      } else if (data?.type === "signedOut" && session !== null) {
        session = null;
        refreshing = null;
        emit({ type: "signedOut", reason: data.reason ?? "sessionEnded" });
      }
    };
  }

  function grantSession(grant, user) {
    if (!grant || typeof grant.accessToken !== "string" || typeof grant.refreshToken !== "string") {
      throw new SiwaError("invalid_response", "The server's grant has no tokens");
    }
    return {
      accessToken: grant.accessToken, refreshToken: grant.refreshToken, sessionId: String(grant.sessionId),
      expiresAt: Date.now() + Number(grant.expiresIn ?? 900) * 1000, user: grant.user ?? user,
    };
  }

  /** `fetch`, with a network failure as SiwaError `offline` (an abort stays an AbortError). */
  async function request(url, init) {
    try {
      return await send(url, init);
    } catch (error) {
      if (error?.name === "AbortError") { throw error; }
      throw new SiwaError("offline", `The server could not be reached: ${error?.message ?? error}`, { cause: error });
    }
  }

  async function postJSON(path, body, init = {}) {
    return request(server + path, {
      method: "POST", credentials: cookieSession ? "include" : "omit", ...init,
      headers: { "Content-Type": "application/json", ...(init.headers ?? {}) }, body: JSON.stringify(body),
    });
  }

  async function checked(response) {
    if (!response.ok) { throw await SiwaError.from(response); }
    if (response.status === 204) { return undefined; }
    try {
      return await response.json();
    } catch (error) {
      throw new SiwaError("invalid_response", "The server's answer is not JSON", { status: response.status, cause: error });
    }
  }

  // ----- The session's access token, refreshed one at a time across tabs -----

  /**
   * A new access token in place of `held` (the session this tab had when its token was refused or
   * ran out): another tab's refresh when it has already replaced it, else one refresh of ours, in a
   * lock the origin's tabs share, so that a refresh token is presented once.
   */
  function refresh(held = session) {
    if (cookieSession) { return Promise.reject(new SiwaError("invalid_request", "A cookie session is not refreshed by the page")); }
    if (!held) { return Promise.reject(new SiwaError("signed_out", "Nobody is signed in")); }
    if (refreshing) { return refreshing; }
    const run = async () => {
      if (crossTab) {
        // Under the lock, the storage holds what the last refresh of any tab left.
        const stored = await readStored();
        if (!stored) {
          if (session) { session = null; emit({ type: "signedOut", reason: "signedOut" }); }
          throw new SiwaError("signed_out", "The session ended in another tab");
        }
        if (stored.refreshToken !== held.refreshToken) {
          const adopted = session === null || session.refreshToken !== stored.refreshToken;
          session = stored;
          if (adopted) { emit({ type: "refreshed", user: stored.user }); }
          return stored;
        }
      } else if (session && session.refreshToken !== held.refreshToken) {
        return session;
      }
      const response = await postJSON("/auth/refresh", { refreshToken: held.refreshToken }, { credentials: "omit" });
      if (response.status === 401) {
        const error = await SiwaError.from(response);
        await end(error.code === "token_reused" ? "refreshTokenReused" : "sessionEnded");
        throw new SiwaError("signed_out", `The server ended the session (${error.code})`, { status: 401, cause: error });
      }
      const grant = await checked(response);
      if (session?.sessionId !== held.sessionId) { throw new SiwaError("signed_out", "Signed out during the refresh"); }
      const renewed = grantSession(grant, held.user);
      await keep(renewed, { type: "refreshed", user: renewed.user });
      return renewed;
    };
    const locked = crossTab && globalThis.navigator?.locks
      ? () => navigator.locks.request(lockName, run)
      : run;
    refreshing = locked().finally(() => { refreshing = null; });
    return refreshing;
  }

  async function accessToken() {
    await ready;
    if (!session || cookieSession) { throw new SiwaError("signed_out", "Nobody is signed in with tokens"); }
    if (session.expiresAt - Date.now() > refreshMargin && !refreshing) { return session.accessToken; }
    return (await refresh(session)).accessToken;
  }

  function destination(path) {
    const url = new URL(path, server + "/");
    if (!apiOrigins.has(url.origin)) {
      throw new SiwaError("untrusted_host", `The session is not sent to ${url.origin}`);
    }
    return url.href;
  }

  /** A request to the server (or an `apiOrigins` backend) with the session; refreshed and sent again once after a 401. */
  async function authorizedFetch(path, init = {}) {
    const url = destination(path);
    await ready;
    if (cookieSession) {
      const response = await request(url, { credentials: "include", ...init });
      // The cookie's session ended (signed out elsewhere, revoked, expired, the account gone).
      if (response.status === 401 && session && new URL(url).origin === server) { await end("sessionEnded"); }
      return response;
    }
    if (!session) { throw new SiwaError("signed_out", "Nobody is signed in"); }
    const held = session;
    const token = await accessToken();
    const withToken = (value) => {
      const headers = new Headers(init.headers ?? {});
      headers.set("Authorization", `Bearer ${value}`);
      return { ...init, headers, credentials: "omit" };
    };
    const response = await request(url, withToken(token));
    if (response.status !== 401) { return response; }
    // Refused: a new token (another tab's, or one refresh), and the request once more.
    const renewed = session && session.accessToken !== token ? session : await refresh(session ?? held);
    return request(url, withToken(renewed.accessToken));
  }

  async function json(path, init = {}) {
    const { body, headers, ...rest } = init;
    const sent = { ...rest, headers: new Headers(headers ?? {}) };
    if (body !== undefined) {
      sent.body = JSON.stringify(body);
      if (!sent.headers.has("Content-Type")) { sent.headers.set("Content-Type", "application/json"); }
      sent.method ??= "POST";
    }
    return checked(await authorizedFetch(path, sent));
  }

  // ----- Sign-in -----

  function prepareNonce() {
    const made = signInNonce();
    made.then((value) => { if (nextNonce === made) { nextNonce = value; } }, () => {});
    nextNonce = made;
  }

  /** The credential of Apple's JS popup, posted to POST /auth/apple (tokens) or /auth/web/apple (cookie). */
  async function signInWithAppleJS() {
    if (!apple?.clientId) { throw new SiwaError("invalid_request", "createClient's `apple.clientId` is needed for Sign in with Apple JS"); }
    if (!globalThis.AppleID?.auth) {
      if (!apple.scriptURL) { throw new SiwaError("invalid_request", "Apple's script is not loaded (give `apple.scriptURL`)"); }
      await loadScript(apple.scriptURL);
    }
    // The nonce was made ahead, so that the popup opens within the click (a browser blocks a popup
    // opened after a wait); a new one for the next sign-in, whatever this one's outcome.
    const nonce = await nextNonce;
    prepareNonce();
    const redirectURI = apple.redirectURI ?? location.origin + location.pathname;
    AppleID.auth.init({
      clientId: apple.clientId, scope: apple.scope ?? "name email", redirectURI, state: nonce.state,
      nonce: nonce.hashed, usePopup: true,
    });
    let answer;
    try {
      answer = await AppleID.auth.signIn();
    } catch (error) {
      const code = typeof error?.error === "string" ? error.error : "popup_closed_by_user";
      throw new SiwaError(code, `Sign in with Apple did not complete (${code})`, { cause: error });
    }
    const authorization = answer?.authorization ?? {};
    if (authorization.state !== nonce.state) {
      throw new SiwaError("state_mismatch", "Apple's answer is not for this sign-in (another state); nothing was sent");
    }
    const name = answer.user?.name;
    const body = {
      identityToken: authorization.id_token, authorizationCode: authorization.code, nonce: nonce.value, redirectUri: redirectURI,
      device, fullName: name ? { givenName: name.firstName, familyName: name.lastName } : undefined,
    };
    // Never sent twice: the nonce and the code are spent by the first arrival.
    const grant = await checked(await postJSON(cookieSession ? "/auth/web/apple" : "/auth/apple", body));
    return cookieSession ? { user: grant.user } : grantSession(grant);
  }

  async function appStartURL(redirectUri) {
    const verifier = randomValue();
    const state = randomValue();
    const challenge = base64url(await sha256(verifier));
    const query = formEncoded({
      client_id: pkce.clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: "S256", state,
    });
    return { url: `${server}/auth/app/start?${query}`, verifier, state, redirectUri };
  }

  /** The code the browser came back with, exchanged at POST /auth/token with the verifier. */
  async function exchange(pending, callback) {
    const url = new URL(callback);
    const fields = url.searchParams;
    if (fields.get("state") !== pending.state) {
      throw new SiwaError("state_mismatch", "The browser came back with another sign-in's state; nothing was exchanged");
    }
    if (fields.has("error")) {
      const code = fields.get("error");
      throw new SiwaError(code, fields.get("error_description") ?? code, { status: 400 });
    }
    const code = fields.get("code");
    if (!code) { throw new SiwaError("invalid_response", "The browser came back without a code"); }
    const response = await request(`${server}/auth/token`, {
      method: "POST", credentials: "omit", headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: formEncoded({
        grant_type: "authorization_code", code, code_verifier: pending.verifier, redirect_uri: pending.redirectUri,
        client_id: pkce.clientId,
      }),
    });
    return grantSession(await checked(response));
  }

  function callbackOf(popup, redirectUri) {
    return new Promise((resolve, reject) => {
      const timer = setInterval(() => {
        let href = null;
        try { href = popup.location.href; } catch { href = null; }  // another origin (Apple's, siwa's) meanwhile
        if (href && href.split(/[?#]/)[0] === redirectUri.split(/[?#]/)[0]) {
          clearInterval(timer);
          popup.close();
          resolve(href);
        } else if (popup.closed) {
          clearInterval(timer);
          reject(new SiwaError("popup_closed_by_user", "The sign-in window was closed"));
        }
      }, 100);
    });
  }

  /** The app flow (GET /auth/app/start, POST /auth/token) in a popup that comes back to `pkce.redirectUri`. */
  async function signInWithAppFlow(popupMode) {
    if (!pkce?.clientId || !pkce.redirectUri) {
      throw new SiwaError("invalid_request", "createClient's `pkce.clientId` and `pkce.redirectUri` are needed for the app flow");
    }
    if (!popupMode) {
      const pending = await appStartURL(pkce.redirectUri);
      sessionStorage.setItem(pendingKey, JSON.stringify({ verifier: pending.verifier, state: pending.state, redirectUri: pending.redirectUri }));
      location.assign(pending.url);
      return new Promise(() => {});
    }
    // Opened at once, within the click; its address once the challenge is made.
    const popup = window.open("about:blank", `siwa-${Date.now()}`, "width=700,height=700");
    if (!popup) { throw new SiwaError("popup_blocked_by_browser", "The browser blocked the sign-in window"); }
    let pending;
    try {
      pending = await appStartURL(pkce.redirectUri);
    } catch (error) {
      popup.close();
      throw error;
    }
    popup.location.href = pending.url;
    return exchange(pending, await callbackOf(popup, pkce.redirectUri));
  }

  async function signIn(how = {}) {
    await ready;
    const mode = how.mode ?? "popup";
    const flow = how.flow ?? (apple ? "apple" : pkce ? "pkce" : "apple");
    let next;
    if (cookieSession && mode === "redirect") {
      // The server's own web sign-in; the page comes back to `returnTo` with the session cookie.
      const returnTo = how.returnTo ?? location.pathname + location.search;
      location.assign(`${server}/auth/web/start?return_to=${encodeURIComponent(returnTo)}`);
      return new Promise(() => {});
    } else if (flow === "pkce") {
      if (cookieSession) { throw new SiwaError("invalid_request", "The app flow gives tokens: use session \"token\""); }
      next = await signInWithAppFlow(mode === "popup");
    } else if (mode === "redirect") {
      throw new SiwaError("invalid_request", "Sign in with Apple JS's redirect posts to a server: use the app flow (`pkce`) or the cookie session");
    } else {
      next = await signInWithAppleJS();
    }
    await keep(next, { type: "signedIn", user: next.user });
    return next.user;
  }

  /**
   * After a redirect sign-in: completes the app flow when `url` (the page's address by default) is
   * its redirect URI with the code, and removes the sign-in's fields from the address bar.
   */
  async function handleRedirect(url = location.href) {
    await ready;
    const here = new URL(url);
    if (cookieSession) {
      const error = here.searchParams.get("sign_in_error");
      if (!error) { return session?.user ?? null; }
      if (url === location.href) {
        here.searchParams.delete("sign_in_error");
        history.replaceState(history.state, "", here.href);
      }
      throw new SiwaError(error, `Sign in with Apple did not complete (${error})`);
    }
    if (!here.searchParams.has("state") || !(here.searchParams.has("code") || here.searchParams.has("error"))) { return null; }
    const text = globalThis.sessionStorage?.getItem(pendingKey);
    // A popup of the app flow: its opener reads the address and closes it.
    if (!text) { return null; }
    sessionStorage.removeItem(pendingKey);
    if (url === location.href) {
      for (const name of ["code", "state", "error", "error_description"]) { here.searchParams.delete(name); }
      history.replaceState(history.state, "", here.href);
    }
    const next = await exchange(JSON.parse(text), url);
    await keep(next, { type: "signedIn", user: next.user });
    return next.user;
  }

  // ----- The account -----

  async function me() {
    const answer = await json("/auth/me");
    if (session && JSON.stringify(session.user) !== JSON.stringify(answer.user)) {
      await keep({ ...session, user: answer.user }, { type: "userUpdated", user: answer.user });
    }
    return answer.user;
  }

  async function sessions() {
    return (await json("/auth/sessions")).sessions;
  }

  async function revokeSession(id) {
    await checked(await authorizedFetch(`/auth/sessions/${encodeURIComponent(id)}`, { method: "DELETE" }));
    if (session?.sessionId === String(id)) { await end("signedOut"); }
  }

  async function signOut() {
    await ready;
    if (session) {
      // Best effort: the session ends in this browser whatever the answer.
      try {
        if (cookieSession) {
          await request(`${server}/auth/logout`, { method: "POST", credentials: "include" });
        } else {
          await request(`${server}/auth/logout`, {
            method: "POST", credentials: "omit", headers: { Authorization: `Bearer ${session.accessToken}` },
          });
        }
      } catch { /* offline: forgotten here; the server ends it at its lifetime */ }
    }
    await end("signedOut");
  }

  async function deleteAccount() {
    await checked(await authorizedFetch("/auth/account", { method: "DELETE" }));
    await end("accountDeleted");
  }

  function subscribe(listener) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  // ----- Start: the session kept from before (tokens), or the cookie's (asked of the server) -----

  if (apple) { prepareNonce(); }
  const ready = (async () => {
    if (cookieSession) {
      try {
        const response = await request(`${server}/auth/me`, { credentials: "include" });
        if (response.ok) { session = { user: (await response.json()).user }; }
      } catch { /* offline: signed out until a call says otherwise */ }
    } else {
      session = await readStored().catch(() => null);
    }
    if (session) { emit({ type: "signedIn", user: session.user, restored: true }); }
  })();

  return {
    get user() { return session?.user ?? null; },
    get sessionId() { return cookieSession ? null : session?.sessionId ?? null; },
    get signedIn() { return session !== null; },
    ready,
    signIn,
    handleRedirect,
    fetch: authorizedFetch,
    json,
    accessToken,
    refresh: () => ready.then(() => refresh(session)).then(() => undefined),
    me,
    sessions,
    revokeSession,
    signOut,
    deleteAccount,
    subscribe,
    close() { channel?.close(); listeners.clear(); },
  };
}

// ===== End of sign-in and session =====



// ===== Sync =====

// ===== End of sync =====
