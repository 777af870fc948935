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
// The codes of the app flow's redirect, of Apple's script, and the client's own (siwa.d.ts's
// SiwaErrorCode is these and the server's: a closed set).
const otherErrorCodes = Object.freeze([
  "access_denied", "temporarily_unavailable", "server_error",
  "user_cancelled_authorize", "popup_closed_by_user", "popup_blocked_by_browser", "user_trigger_new_signin_flow",
  "offline", "signed_out", "state_mismatch", "invalid_response", "storage", "untrusted_host", "invalid_change",
]);

/** `code` when it is one of SiwaErrorCode's, else null: a code from elsewhere (an answer, Apple's
 * script, an address) never reaches the app outside the closed set. */
function knownErrorCode(code) {
  return typeof code === "string" && (serverErrorCodes.includes(code) || otherErrorCodes.includes(code)) ? code : null;
}

/** An error of `code` from elsewhere: itself when it is known, else `invalid_response` naming it. */
function foreignError(code, message, details) {
  const known = knownErrorCode(code);
  return known ? new SiwaError(known, message, details) : new SiwaError("invalid_response", `${String(code)}: ${message}`, details);
}

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
      // Only siwa's codes: another's (the app's own API, a proxy) is `invalid_response` naming it.
      return foreignError(body.error, String(body.message ?? body.error_description ?? body.error), details);
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
      // Another tab's refresh, heard on the channel: localStorage reaches another tab's process
      // later than the lock does, so the read below may still show the spent token.
      if (session && session.refreshToken !== held.refreshToken) { return session; }
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
      }
      // Bounded: the other tabs wait for this lock; a stalled answer reads as offline after 30 s.
      const signal = typeof AbortSignal.timeout === "function" ? AbortSignal.timeout(30000) : undefined;
      const response = await postJSON("/auth/refresh", { refreshToken: held.refreshToken }, { credentials: "omit", signal });
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
    const token = await accessToken();
    const withToken = (value) => {
      const headers = new Headers(init.headers ?? {});
      headers.set("Authorization", `Bearer ${value}`);
      return { ...init, headers, credentials: "omit" };
    };
    const response = await request(url, withToken(token));
    if (response.status !== 401) { return response; }
    // Refused: a new token (another tab's, or one refresh), and the request once more; none when
    // the session ended meanwhile (its refresh token is spent or revoked: never sent again).
    if (!session) { throw new SiwaError("signed_out", "The session ended during the call", { status: 401 }); }
    const renewed = session.accessToken !== token ? session : await refresh(session);
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
    // Taken, and the next one begun, before any wait: two sign-ins at once never share a nonce.
    const made = nextNonce ?? signInNonce();
    prepareNonce();
    if (!globalThis.AppleID?.auth) {
      if (!apple.scriptURL) { throw new SiwaError("invalid_request", "Apple's script is not loaded (give `apple.scriptURL`)"); }
      await loadScript(apple.scriptURL);
    }
    // The nonce was made ahead, so that the popup opens within the click (a browser blocks a popup
    // opened after a wait); a new one for the next sign-in, whatever this one's outcome.
    const nonce = await made;
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
      throw foreignError(code, `Sign in with Apple did not complete (${code})`, { cause: error });
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
      throw foreignError(code, fields.get("error_description") ?? code, { status: 400 });
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
    // A redirect sign-in left unfinished is over: a popup starts with a copy of this tab's
    // sessionStorage, and its page must not take the code for that one (and clear its address).
    globalThis.sessionStorage?.removeItem(pendingKey);
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
      throw foreignError(error, `Sign in with Apple did not complete (${error})`);
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
          // With a token the server takes (refreshed first when it ran out, once more after a 401):
          // an expired one would leave the session, and its refresh token, alive at the server.
          await authorizedFetch("/auth/logout", { method: "POST" });
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

// The merge rules of docs/SYNC.md, the same as the server's and SIWAKit's (`SyncRules`), as pure
// functions: usable from Node, no browser globals touched at import. A record's field values are
//   null                                   no value
//   {t: "integer", v}                      an integer, a time, a count
//   {t: "string", v}                       a string, an id, a date, an enum's case
//   {t: "boolean", v}
//   {t: "strings", v: [..]}                a set: sorted, each once
//   {t: "counts", v: [[device, count]..]}  a counter: sorted by device
//   {t: "stamped", v: value, at, device}   a "latest wins" value with its stamp
// and a record is {key, keys: [values of the key fields], values: [values of the other fields],
// deleted: null or a stamped boolean}. The codec reads and writes records as the server does.

/** The largest integer a field may hold (2^53 - 1). */
const SYNC_LARGEST_INTEGER = 9007199254740991;
/** Unix milliseconds of 2100-01-01, the latest time. */
const SYNC_LATEST_TIME = 4102444800000;
/** The most devices one counter counts. */
const SYNC_MAXIMUM_COUNTER_DEVICES = 64;
const SYNC_RULES = ["maximum", "minimum", "earliest", "latest", "forward", "union", "latestWins", "counter", "stickyTrue", "withLatest"];
const SYNC_TYPE_RULES = {
  integer: ["maximum", "minimum", "latestWins", "counter", "withLatest"],
  string: ["maximum", "minimum", "latestWins"],
  id: ["maximum", "minimum", "latestWins"],
  boolean: ["stickyTrue", "latestWins"],
  time: ["maximum", "minimum", "earliest", "latest", "latestWins"],
  date: ["maximum", "minimum", "earliest", "latest", "latestWins"],
  enum: ["forward", "latestWins"],
  set: ["union"],
};
const SYNC_RESERVED_NAMES = ["profile", "progress", "achievements", "cursor", "limit", "collections"];

/** Strings ordered by their Unicode scalars, as Swift orders them (JavaScript's `<` orders UTF-16
 * code units, which puts U+10000 and above before U+E000..U+FFFF). */
function syncCompareStrings(a, b) {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x < y ? -1 : 1;
    }
  }
  return a.length < b.length ? -1 : 1;
}

function syncIsIdentifier(value) {
  return typeof value === "string" && /^[A-Za-z0-9._:-]{1,128}$/.test(value);
}

function syncIsDate(value) {
  const match = typeof value === "string" && /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 2000 || year > 2099 || month < 1 || month > 12) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return day >= 1 && day <= days;
}

function syncUtf8Length(text) {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

const SYNC_RANK = { boolean: 1, integer: 2, string: 3, strings: 4, counts: 5, stamped: 6 };

function syncLexicographic(a, b, precedes) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (precedes(a[i], b[i])) return true;
    if (precedes(b[i], a[i])) return false;
  }
  return a.length < b.length;
}

function syncCountPrecedes(a, b) {
  const order = syncCompareStrings(a[0], b[0]);
  return order !== 0 ? order < 0 : a[1] < b[1];
}

function syncStampPrecedes(a, b) {
  if (a.at !== b.at) return a.at < b.at;
  return syncCompareStrings(a.device, b.device) < 0;
}

/** The total order of values (`SyncValue.precedes`): whether `a` comes before `b`. */
function syncPrecedes(a, b) {
  if (a !== null && b !== null && a.t === b.t) {
    switch (a.t) {
      case "boolean": return !a.v && b.v;
      case "integer": return a.v < b.v;
      case "string": return syncCompareStrings(a.v, b.v) < 0;
      case "strings": return syncLexicographic(a.v, b.v, (x, y) => syncCompareStrings(x, y) < 0);
      case "counts": return syncLexicographic(a.v, b.v, syncCountPrecedes);
      case "stamped":
        if (a.at !== b.at || a.device !== b.device) return syncStampPrecedes(a, b);
        return syncPrecedes(a.v, b.v);
    }
  }
  return (a === null ? 0 : SYNC_RANK[a.t]) < (b === null ? 0 : SYNC_RANK[b.t]);
}

/** Whether two values are the same. */
function syncEqual(a, b) {
  if (a === b) return true;
  if (a === null || b === null || a.t !== b.t) return false;
  switch (a.t) {
    case "strings":
      return a.v.length === b.v.length && a.v.every((x, i) => x === b.v[i]);
    case "counts":
      return a.v.length === b.v.length && a.v.every((x, i) => x[0] === b.v[i][0] && x[1] === b.v[i][1]);
    case "stamped":
      return a.at === b.at && a.device === b.device && syncEqual(a.v, b.v);
    default:
      return a.v === b.v;
  }
}

function syncMergedCounts(a, b) {
  const counts = new Map();
  for (const [device, count] of a.concat(b)) counts.set(device, Math.max(counts.get(device) ?? count, count));
  return [...counts].sort(syncCompareCounts);
}

function syncCompareCounts(a, b) {
  return syncCompareStrings(a[0], b[0]) || a[1] - b[1];
}

/** Two values of one field merged by `rule` (`SyncValue.merged`); `order` is an enum's cases. */
function syncMergeValues(a, b, rule, order = []) {
  if (syncEqual(a, b)) return a;
  if (a === null) return b;
  if (b === null) return a;
  switch (rule) {
    case "minimum":
    case "earliest":
      return syncPrecedes(b, a) ? b : a;
    case "forward":
      if (a.t === "string" && b.t === "string") {
        const rankA = order.indexOf(a.v);
        const rankB = order.indexOf(b.v);
        if (rankA !== rankB) return rankA > rankB ? a : b;
        return syncCompareStrings(a.v, b.v) > 0 ? a : b;
      }
      break;
    case "union":
      if (a.t === "strings" && b.t === "strings") return { t: "strings", v: [...new Set(a.v.concat(b.v))].sort(syncCompareStrings) };
      break;
    case "counter":
      if (a.t === "counts" && b.t === "counts") return { t: "counts", v: syncMergedCounts(a.v, b.v) };
      break;
  }
  return syncPrecedes(a, b) ? b : a;
}

/** A counter's value: the sum of its devices' counts. */
function syncTotal(value) {
  return value !== null && value.t === "counts" ? value.v.reduce((sum, [, count]) => sum + count, 0) : 0;
}

function syncRecordsEqual(a, b) {
  return (
    a.key === b.key &&
    syncEqual(a.deleted, b.deleted) &&
    a.values.every((value, i) => syncEqual(value, b.values[i])) &&
    a.keys.every((value, i) => syncEqual(value, b.keys[i]))
  );
}

/** Two states of one record of `collection` merged field by field (`SyncCollection.merged`). */
function syncMergeRecords(collection, a, b) {
  if (a.key !== b.key) throw new Error("merging different records");
  if (syncRecordsEqual(a, b)) return a;
  const values = collection.fields.map((field, index) => {
    const rule = field.rule ?? "latestWins";
    if (rule === "withLatest" && field.companion !== null && !syncEqual(a.values[field.companion], b.values[field.companion])) {
      return syncPrecedes(a.values[field.companion], b.values[field.companion]) ? b.values[index] : a.values[index];
    }
    return syncMergeValues(a.values[index], b.values[index], rule, field.type.values ?? []);
  });
  return { key: a.key, keys: a.keys, values, deleted: syncMergeValues(a.deleted, b.deleted, "latestWins") };
}

/** Whether the latest change to a record deleted it. */
function syncIsDeleted(record) {
  return record.deleted !== null && record.deleted.t === "stamped" && record.deleted.v !== null && record.deleted.v.v === true;
}

// ----- The declaration -----

class SyncDeclarationError extends Error {
  constructor(problems) {
    super(problems.join("\n"));
    this.name = "SyncDeclarationError";
    this.problems = problems;
  }
}

function syncField(name, type, rule, extra = {}) {
  return { name, type, rule, companion: extra.companion ?? null, defaultValue: extra.defaultValue ?? null, isRequired: extra.isRequired ?? false };
}

/** The value a field shows when no device set it (`SyncField.emptyValue`). */
function syncEmptyValue(field) {
  if (field.defaultValue !== null) return field.defaultValue;
  switch (field.rule) {
    case "union": return { t: "strings", v: [] };
    case "counter": return { t: "counts", v: [] };
    case "stickyTrue": return { t: "boolean", v: false };
    default: return null;
  }
}

function syncIntegerType(minimum, maximum) {
  return { name: "integer", minimum, maximum };
}

/** The built-in model (`SyncSchema.builtIn`): lessons, achievements, the profile. */
function syncBuiltInCollections() {
  const count = syncIntegerType(0, 1000000);
  const zero = { defaultValue: { t: "integer", v: 0 } };
  const limits = (itemsPerRequest, itemsPerUser) => ({ itemsPerRequest, itemsPerUser, bytesPerRecord: 16384 });
  return [
    {
      name: "progress",
      keys: [syncField("beliefSystemId", { name: "id" }, null), syncField("lessonId", { name: "id" }, null)],
      fields: [
        syncField("status", { name: "enum", values: ["not_started", "in_progress", "completed"] }, "forward", { isRequired: true }),
        syncField("score", count, "maximum", zero),
        syncField("earnedXp", count, "maximum", zero),
        syncField("completedAt", { name: "time" }, "earliest"),
      ],
      tombstoneDays: null,
      limits: limits(500, 1000000),
    },
    {
      name: "achievements",
      keys: [syncField("achievementId", { name: "id" }, null)],
      fields: [
        syncField("progress", count, "maximum", zero),
        syncField("completed", { name: "boolean" }, "stickyTrue"),
        syncField("completedAt", { name: "time" }, "earliest"),
      ],
      tombstoneDays: null,
      limits: limits(500, 1000000),
    },
    {
      name: "profile",
      keys: [],
      fields: [
        syncField("totalXp", syncIntegerType(0, 1000000000000), "maximum", zero),
        syncField("currentLevel", syncIntegerType(0, 100000), "maximum", zero),
        syncField("streakDays", syncIntegerType(0, 100000), "withLatest", { companion: 3, defaultValue: { t: "integer", v: 0 } }),
        syncField("lastActiveDate", { name: "date" }, "latest"),
      ],
      tombstoneDays: null,
      limits: limits(1, 1),
    },
  ];
}

/** The collections of a declaration (the JSON of the server's SIWA_SYNC_COLLECTIONS file, as an
 * object or as text), checked as the server checks it; every problem named. */
function parseSyncDeclaration(declaration) {
  const root = typeof declaration === "string" ? JSON.parse(declaration) : declaration;
  const problems = [];
  const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
  const integer = (object, name, path, low, high, fallback) => {
    if (!(name in object)) return fallback;
    const value = object[name];
    if (!Number.isSafeInteger(value) || value < low || value > high) {
      problems.push(`${path}.${name}: must be an integer from ${low} to ${high}`);
      return fallback;
    }
    return value;
  };
  const isName = (name, extra) => new RegExp(`^[A-Za-z][A-Za-z0-9_${extra}]{0,63}$`).test(name);
  if (!isObject(root)) throw new SyncDeclarationError(["the declaration is not a JSON object"]);
  const limits = { bytesPerUser: 67108864, guestBytesPerUser: 4194304, bytesPerRequest: 1048576 };
  if (isObject(root.limits)) {
    limits.bytesPerUser = integer(root.limits, "bytesPerUser", "limits", 1024, 1073741824, limits.bytesPerUser);
    limits.guestBytesPerUser = integer(root.limits, "guestBytesPerUser", "limits", 1024, limits.bytesPerUser, Math.min(limits.guestBytesPerUser, limits.bytesPerUser));
    limits.bytesPerRequest = integer(root.limits, "bytesPerRequest", "limits", 1024, 1048576, limits.bytesPerRequest);
  }
  const collections = [];
  if (!isObject(root.collections)) problems.push("collections: is required (an object)");
  for (const [name, object] of Object.entries(isObject(root.collections) ? root.collections : {})) {
    const path = `collections.${name}`;
    if (SYNC_RESERVED_NAMES.includes(name)) problems.push(`${path}: is a name the built-in sync uses; choose another`);
    else if (!isName(name, "-")) problems.push(`${path}: must be 1 to 64 characters of A-Z a-z 0-9 _ -, starting with a letter`);
    if (!isObject(object) || !isObject(object.fields) || !Array.isArray(object.key)) {
      problems.push(`${path}: must be an object with "key" (an array) and "fields" (an object)`);
      continue;
    }
    const type = (declared, fieldPath) => {
      switch (declared.type) {
        case "integer": {
          const minimum = integer(declared, "min", fieldPath, -SYNC_LARGEST_INTEGER, SYNC_LARGEST_INTEGER, 0);
          const maximum = integer(declared, "max", fieldPath, -SYNC_LARGEST_INTEGER, SYNC_LARGEST_INTEGER, SYNC_LARGEST_INTEGER);
          if (minimum > maximum) problems.push(`${fieldPath}.min: is larger than max`);
          return syncIntegerType(minimum, maximum);
        }
        case "string": return { name: "string", maxLength: integer(declared, "maxLength", fieldPath, 1, 8192, 256) };
        case "id": case "boolean": case "time": case "date": return { name: declared.type };
        case "enum": {
          const values = declared.values;
          if (!Array.isArray(values) || values.length < 1 || values.length > 64 || new Set(values).size !== values.length ||
              !values.every((v) => syncIsIdentifier(v) && v.length <= 64)) {
            problems.push(`${fieldPath}.values: must list 1 to 64 different names in order, each 1 to 64 characters of A-Z a-z 0-9 . _ : -`);
          }
          return { name: "enum", values: Array.isArray(values) ? values : [] };
        }
        case "set":
          return { name: "set", maxCount: integer(declared, "maxCount", fieldPath, 1, 500, 100), maxLength: integer(declared, "maxLength", fieldPath, 1, 1024, 128) };
        default:
          problems.push(`${fieldPath}.type: ${JSON.stringify(declared.type)} is not a type (one of integer, string, id, boolean, time, date, enum, set)`);
          return null;
      }
    };
    const entries = Object.entries(object.fields);
    const keyNames = object.key;
    const keys = [];
    for (const keyName of keyNames) {
      const declared = object.fields[keyName];
      const fieldPath = `${path}.fields.${keyName}`;
      if (!isObject(declared)) {
        problems.push(`${path}.key: names "${keyName}", which is not one of its fields`);
        continue;
      }
      const keyType = type(declared, fieldPath);
      if (keyType && !["id", "integer", "string", "date"].includes(keyType.name)) problems.push(`${fieldPath}.type: a key field must be an id, an integer, a string or a date`);
      keys.push(syncField(keyName, keyType, null));
    }
    const others = entries.filter(([fieldName]) => !keyNames.includes(fieldName));
    const fields = [];
    others.forEach(([fieldName, declared], index) => {
      const fieldPath = `${path}.fields.${fieldName}`;
      if (!isName(fieldName, "") || fieldName === "deleted") problems.push(`${fieldPath}: is not a field name (1 to 64 of A-Z a-z 0-9 _, starting with a letter, not "deleted")`);
      if (!isObject(declared)) return problems.push(`${fieldPath}: must be an object`);
      const fieldType = type(declared, fieldPath);
      const rule = declared.merge;
      if (!SYNC_RULES.includes(rule)) return problems.push(`${fieldPath}.merge: ${JSON.stringify(rule)} is not a merge rule (one of ${SYNC_RULES.join(", ")})`);
      if (fieldType && !SYNC_TYPE_RULES[fieldType.name].includes(rule)) problems.push(`${fieldPath}.merge: ${rule} does not apply to a field of type ${fieldType.name}`);
      let companion = null;
      if (rule === "withLatest") {
        companion = others.findIndex(([other]) => other === declared.of);
        if (companion < 0 || !["latest", "maximum", "latestWins"].includes(others[companion][1]?.merge)) {
          problems.push(`${fieldPath}.of: must name another field of the collection whose rule is latest, maximum or latestWins`);
        }
      }
      fields.push(syncField(fieldName, fieldType, rule, { companion }));
    });
    let tombstoneDays = null;
    if (isObject(object.deletion)) tombstoneDays = integer(object.deletion, "tombstoneDays", `${path}.deletion`, 1, 3650, 30);
    const declaredLimits = isObject(object.limits) ? object.limits : {};
    const collectionLimits = {
      itemsPerRequest: integer(declaredLimits, "itemsPerRequest", `${path}.limits`, 1, 500, 500),
      itemsPerUser: keys.length === 0 ? 1 : integer(declaredLimits, "itemsPerUser", `${path}.limits`, 1, 1000000, 10000),
      bytesPerRecord: integer(declaredLimits, "bytesPerRecord", `${path}.limits`, 256, 1048576, 16384),
    };
    collections.push({ name, keys, fields, tombstoneDays, limits: collectionLimits });
  }
  if (problems.length > 0) throw new SyncDeclarationError(problems);
  return { collections, limits };
}

// ----- The codec: records as JSON, as the server and SIWAKit read and write them -----

class SyncRecordProblem extends Error {
  constructor(path, problem) {
    super(`\`${path}\` ${problem}`);
    this.name = "SyncRecordProblem";
    this.path = path;
    this.problem = problem;
  }
}

/** The key of a record as one string (`SyncRecordCodec.key`). */
function syncKey(values) {
  if (values.length === 1) {
    const value = values[0];
    if (value !== null && value.t === "string") return value.v;
    if (value !== null && value.t === "integer") return String(value.v);
  }
  const parts = [];
  for (const value of values) {
    if (value !== null && value.t === "integer") parts.push(String(value.v));
    else if (value !== null && value.t === "string" && syncIsIdentifier(value.v)) parts.push(value.v);
    else return "[" + values.map(syncWriteValue).join(",") + "]";
  }
  return parts.join("\u001f");
}

/** A string as JSON, escaped as the server escapes it. */
function syncQuote(text) {
  let out = '"';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
    out += text.slice(start, i);
    start = i + 1;
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else out += "\\u00" + c.toString(16).padStart(2, "0");
  }
  return out + text.slice(start) + '"';
}

/** A value as JSON text. */
function syncWriteValue(value) {
  if (value === null) return "null";
  switch (value.t) {
    case "integer": return String(value.v);
    case "string": return syncQuote(value.v);
    case "boolean": return value.v ? "true" : "false";
    case "strings": return "[" + value.v.map(syncQuote).join(",") + "]";
    case "counts": return "{" + value.v.map(([device, count]) => syncQuote(device) + ":" + count).join(",") + "}";
    case "stamped": return '{"value":' + syncWriteValue(value.v) + ',"at":' + value.at + ',"device":' + syncQuote(value.device) + "}";
  }
  throw new Error("not a sync value");
}

/** A record as JSON text: its keys, every field, and `deleted` where records can be deleted. */
function syncWriteRecord(collection, record) {
  const members = [];
  collection.keys.forEach((field, i) => members.push(syncQuote(field.name) + ":" + syncWriteValue(record.keys[i])));
  collection.fields.forEach((field, i) => members.push(syncQuote(field.name) + ":" + syncWriteValue(record.values[i])));
  if (collection.tombstoneDays !== null) members.push('"deleted":' + syncWriteValue(record.deleted));
  return "{" + members.join(",") + "}";
}

/** A plain value of `type`; null for null. */
function syncReadPlain(raw, type, path, checked) {
  if (raw === null || raw === undefined) return null;
  const wrongType = () => new SyncRecordProblem(path, `has the wrong type (${type.name})`);
  if (typeof raw === "number") {
    if (!Number.isSafeInteger(raw)) {
      if (type.name === "integer") throw new SyncRecordProblem(path, "must be an integer");
      throw wrongType();
    }
    if (type.name === "integer") {
      if (checked && (raw < type.minimum || raw > type.maximum)) throw new SyncRecordProblem(path, `must be an integer from ${type.minimum} to ${type.maximum}`);
      return { t: "integer", v: raw };
    }
    if (type.name === "time") {
      if (checked && (raw < 0 || raw > SYNC_LATEST_TIME)) throw new SyncRecordProblem(path, "must be Unix milliseconds before 2100");
      return { t: "integer", v: raw };
    }
    throw wrongType();
  }
  if (typeof raw === "string") {
    switch (type.name) {
      case "string":
        if (checked && syncUtf8Length(raw) > type.maxLength) throw new SyncRecordProblem(path, `must be at most ${type.maxLength} bytes of UTF-8`);
        return { t: "string", v: raw };
      case "id":
        if (!syncIsIdentifier(raw)) throw new SyncRecordProblem(path, "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -");
        return { t: "string", v: raw };
      case "date":
        if (!syncIsDate(raw)) throw new SyncRecordProblem(path, "must be a date YYYY-MM-DD");
        return { t: "string", v: raw };
      case "enum":
        if (checked && !type.values.includes(raw)) throw new SyncRecordProblem(path, `must be one of ${type.values.join(", ")}`);
        return { t: "string", v: raw };
    }
    throw wrongType();
  }
  if (typeof raw === "boolean") {
    if (type.name === "boolean") return { t: "boolean", v: raw };
    throw wrongType();
  }
  if (Array.isArray(raw) && type.name === "set") {
    raw.forEach((element, index) => {
      if (typeof element !== "string" || (checked && syncUtf8Length(element) > type.maxLength)) {
        throw new SyncRecordProblem(`${path}[${index}]`, `must be a string of at most ${type.maxLength} bytes of UTF-8`);
      }
    });
    const set = [...new Set(raw)].sort(syncCompareStrings);
    if (checked && set.length > type.maxCount) throw new SyncRecordProblem(path, `must hold at most ${type.maxCount} strings`);
    return { t: "strings", v: set };
  }
  throw wrongType();
}

const SYNC_STAMP_SHAPE = 'must be {"value": …, "at": Unix milliseconds, "device": an id}';

/** A "latest wins" value: `{"value": …, "at": …, "device": …}` or null. */
function syncReadStamped(raw, type, path, checked) {
  if (raw === null || raw === undefined) return null;
  if (typeof raw !== "object" || Array.isArray(raw)) throw new SyncRecordProblem(path, SYNC_STAMP_SHAPE);
  for (const name of ["at", "device"]) {
    if (!(name in raw)) continue;
    const ok = name === "at" ? Number.isSafeInteger(raw.at) && raw.at >= 0 && raw.at <= SYNC_LATEST_TIME : syncIsIdentifier(raw.device);
    if (!ok) throw new SyncRecordProblem(`${path}.${name}`, SYNC_STAMP_SHAPE);
  }
  if (!("at" in raw) || !("device" in raw)) throw new SyncRecordProblem(path, SYNC_STAMP_SHAPE);
  let value;
  try {
    value = syncReadPlain(raw.value, type, path, checked);
  } catch (error) {
    throw new SyncRecordProblem(`${path}.value`, error.problem);
  }
  return { t: "stamped", v: value, at: raw.at, device: raw.device };
}

function syncReadField(raw, field, path, checked) {
  switch (field.rule) {
    case "latestWins":
      return syncReadStamped(raw, field.type, path, checked);
    case "counter": {
      if (raw === null || raw === undefined) return { t: "counts", v: [] };
      if (typeof raw !== "object" || Array.isArray(raw)) throw new SyncRecordProblem(path, "must be an object of each device's count");
      const members = Object.entries(raw);
      if (members.length > SYNC_MAXIMUM_COUNTER_DEVICES) throw new SyncRecordProblem(path, `counts more than ${SYNC_MAXIMUM_COUNTER_DEVICES} devices`);
      const counts = members.map(([device, count]) => {
        if (!syncIsIdentifier(device)) throw new SyncRecordProblem(`${path}.${device}`, "must be a device id: 1 to 128 characters of A-Z a-z 0-9 . _ : -");
        let value;
        try {
          value = syncReadPlain(count, field.type, path, checked);
        } catch (error) {
          throw new SyncRecordProblem(`${path}.${device}`, error.problem);
        }
        if (value === null || value.t !== "integer") throw new SyncRecordProblem(`${path}.${device}`, "must be an integer");
        return [device, value.v];
      });
      counts.sort(syncCompareCounts);
      const counter = { t: "counts", v: counts };
      if (checked && syncTotal(counter) > field.type.maximum) {
        throw new SyncRecordProblem(path, `counts ${syncTotal(counter)} in all, more than its max ${field.type.maximum}`);
      }
      return counter;
    }
    default: {
      const value = syncReadPlain(raw, field.type, path, checked);
      return value === null ? syncEmptyValue(field) : value;
    }
  }
}

/** A record of `collection` from its JSON (an object, or text), checked against the declaration's
 * bounds when `checked` (what a device sends), by type only otherwise (the server's answers).
 * Throws a SyncRecordProblem naming the member. */
function syncReadRecord(collection, json, { checked = true, path = collection.name } = {}) {
  const object = typeof json === "string" ? JSON.parse(json) : json;
  if (object === null || typeof object !== "object" || Array.isArray(object)) throw new SyncRecordProblem(path, "must be an object");
  const at = (member) => `${path}.${member}`;
  const keys = collection.keys.map((field) => {
    const value = syncReadPlain(object[field.name], field.type, at(field.name), true);
    if (value === null) throw new SyncRecordProblem(at(field.name), "is required");
    return value;
  });
  const values = [];
  for (const field of collection.fields) {
    let value;
    try {
      value = syncReadField(object[field.name], field, at(field.name), checked);
    } catch (error) {
      // A stored field whose declared type changed since reads as no value.
      if (!checked && error instanceof SyncRecordProblem) value = syncEmptyValue(field);
      else throw error;
    }
    if (field.isRequired && value === null) throw new SyncRecordProblem(at(field.name), "is required");
    values.push(value);
  }
  let deleted = null;
  const rawDeleted = object.deleted;
  if (rawDeleted !== null && rawDeleted !== undefined) {
    try {
      if (collection.tombstoneDays === null) {
        throw new SyncRecordProblem(at("deleted"), `is not allowed: records of ${collection.name} cannot be deleted`);
      }
      deleted = syncReadStamped(rawDeleted, { name: "boolean" }, at("deleted"), true);
    } catch (error) {
      // As a stored field that is not what it should be: no value, when not checked.
      if (checked || !(error instanceof SyncRecordProblem)) throw error;
    }
  }
  const key = syncKey(keys);
  if (syncUtf8Length(key) > 1024) throw new SyncRecordProblem(at(collection.keys[0].name), "and the other key fields make a key of more than 1024 bytes");
  return { key, keys, values, deleted };
}

/** The body of a `POST /sync` request, as `SyncWire` writes it: `records` holds each collection's
 * records as the codec writes them, by collection name (`profile`: at most one, `progress`,
 * `achievements`, and each declared collection's), each list in the order to send. */
function syncWriteRequest(declaredCollections, cursor, records) {
  const texts = (name) => records[name] ?? [];
  let body = '{"cursor":' + (cursor === null || cursor === undefined ? "null" : syncQuote(cursor));
  const profile = texts("profile");
  if (profile.length > 0) body += ',"profile":' + profile[profile.length - 1];
  body += ',"progress":[' + texts("progress").join(",") + "]";
  body += ',"achievements":[' + texts("achievements").join(",") + "]";
  if (declaredCollections.length > 0) {
    body += ',"collections":{' + declaredCollections.map((c) => syncQuote(c.name) + ":[" + texts(c.name).join(",") + "]").join(",") + "}";
  }
  return body + "}";
}

/** An answer of `POST /sync` (JSON text or parsed), read as SIWAKit reads it: every record by type
 * only, the collections the app does not declare skipped. Returns its cursor, `more`, `resync` and
 * its records ({collection: name, record}), the profile first, then lessons, achievements and the
 * declared collections'. Throws a SyncRecordProblem naming what does not read. */
function syncReadAnswer(declaredCollections, answer) {
  const json = typeof answer === "string" ? JSON.parse(answer) : answer;
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw new SyncRecordProblem("answer", "must be an object");
  if (typeof json.cursor !== "string") throw new SyncRecordProblem("cursor", "must be a string");
  const [progress, achievements, profile] = syncBuiltInCollections();
  const items = [];
  const list = (collection, value, path) => {
    if (value === null || value === undefined) return;
    if (!Array.isArray(value)) throw new SyncRecordProblem(path, "must be an array of records");
    value.forEach((element, index) => {
      items.push({ collection: collection.name, record: syncReadRecord(collection, element, { checked: false, path: `${path}[${index}]` }) });
    });
  };
  if (json.profile !== null && json.profile !== undefined) {
    items.push({ collection: "profile", record: syncReadRecord(profile, json.profile, { checked: false, path: "profile" }) });
  }
  list(progress, json.progress, "progress");
  list(achievements, json.achievements, "achievements");
  if (json.collections !== null && json.collections !== undefined && typeof json.collections !== "object") {
    throw new SyncRecordProblem("collections", "must be an object of each collection's records");
  }
  for (const collection of declaredCollections) list(collection, json.collections?.[collection.name], `collections.${collection.name}`);
  return { cursor: json.cursor, more: json.more === true, resync: json.resync === true, items };
}

// ----- The client: createSync -----

/** The pure parts of sync, for tests and tools (Node included): the merge rules, the codec, the
 * declaration. */
export const syncRules = Object.freeze({
  compareStrings: syncCompareStrings,
  precedes: syncPrecedes,
  mergeValues: syncMergeValues,
  mergeRecords: syncMergeRecords,
  isDeleted: syncIsDeleted,
  parseDeclaration: parseSyncDeclaration,
  builtInCollections: syncBuiltInCollections,
  readRecord: syncReadRecord,
  writeRecord: syncWriteRecord,
  writeRequest: syncWriteRequest,
  readAnswer: syncReadAnswer,
  key: syncKey,
});

/** The most bytes of a sync request's body (the server's and nginx's limit). */
const SYNC_DEFAULT_MAXIMUM_REQUEST_BYTES = 1048576;
/** The most lessons, and achievements, in one request. */
const SYNC_BATCH_LIMIT = 500;
const SYNC_PARTS = ["view", "pending", "refused"];

/** The module's one error type, SiwaError (of the sign-in part): `code`, `message`, `status`. */
function syncError(code, status, message) {
  if (typeof SiwaError === "function") return new SiwaError(code, message, { status });
  return Object.assign(new Error(message), { name: "SiwaError", code, status });
}

function syncNewDeviceId() {
  const bytes = new Uint8Array(8);
  if (globalThis.crypto?.getRandomValues) globalThis.crypto.getRandomValues(bytes);
  else for (let i = 0; i < 8; i++) bytes[i] = Math.floor(Math.random() * 256);
  return "d-" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The id of a slot: a record of one part (view, pending, refused) of one collection. */
function syncSlotId(part, collection, key) {
  return JSON.stringify([part, collection, key]);
}

/** Applies `ops` to `get`/`put`/`remove` of slots, in order: a record merged into a slot (with
 * `mergeText`, so that what another tab wrote meanwhile is kept), removed when the slot still holds
 * what was sent, a part cleared, a member of `meta` set. Returns the final text of every slot it
 * touched and the final meta values. */
async function syncApplyOps(ops, mergeText, store) {
  const slots = new Map();
  const meta = {};
  for (const op of ops) {
    if (op.op === "meta") {
      const current = await store.getMeta(op.name);
      const value = op.ifAbsent && current !== undefined ? current : op.value;
      if (value !== current) await store.putMeta(op.name, value);
      meta[op.name] = value;
    } else if (op.op === "clear") {
      await store.clear(op.part);
      for (const [id, slot] of slots) if (slot.part === op.part) slot.text = null;
    } else {
      const current = (await store.get(op.part, op.collection, op.key)) ?? null;
      let next = current;
      if (op.op === "merge") next = current === null ? op.text : mergeText(op.collection, current, op.text);
      else if (op.op === "remove" && current === op.text) next = null;
      if (next !== current) await (next === null ? store.remove(op.part, op.collection, op.key) : store.put(op.part, op.collection, op.key, next));
      slots.set(syncSlotId(op.part, op.collection, op.key), { part: op.part, collection: op.collection, key: op.key, text: next });
    }
  }
  return { slots: [...slots.values()], meta };
}

/** A storage in memory only (tests, Node, or a page that must not store anything): pass it as
 * `storage` to several syncs to have them share it as tabs share IndexedDB. */
export function createMemoryStorage() {
  return syncMemoryStorage();
}

function syncMemoryStorage() {
  const slots = new Map();
  const meta = new Map();
  const store = {
    getMeta: (name) => meta.get(name),
    putMeta: (name, value) => meta.set(name, value),
    clear: (part) => {
      for (const [id, slot] of slots) if (slot.part === part) slots.delete(id);
    },
    get: (part, collection, key) => slots.get(syncSlotId(part, collection, key))?.text,
    put: (part, collection, key, text) => slots.set(syncSlotId(part, collection, key), { part, collection, key, text }),
    remove: (part, collection, key) => slots.delete(syncSlotId(part, collection, key)),
  };
  let queue = Promise.resolve();
  return {
    async load() {
      return { meta: Object.fromEntries(meta), slots: [...slots.values()] };
    },
    write(ops, mergeText) {
      // One write at a time, as IndexedDB's transactions of one store run.
      const done = queue.then(() => syncApplyOps(ops, mergeText, store));
      queue = done.catch(() => {});
      return done;
    },
    close() {},
  };
}

function syncRequest(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** The state in IndexedDB: the database `name`, a store of slots (each record of the view, the
 * queue and the set-aside changes, keyed by part, collection and key) and one of the device's id and
 * the cursor. A change is one transaction that reads and writes only the slots it changes, merging
 * into what is stored (another tab's changes are kept). Other tabs hear of it on a BroadcastChannel
 * of the same name and read the state again. */
function syncIndexedDBStorage(name) {
  let opened = null;
  const open = () => {
    opened ??= new Promise((resolve, reject) => {
      const request = globalThis.indexedDB.open(name, 1);
      request.onupgradeneeded = () => {
        request.result.createObjectStore("slots", { keyPath: ["part", "collection", "key"] });
        request.result.createObjectStore("meta");
      };
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    return opened;
  };
  const channel = typeof globalThis.BroadcastChannel === "function" ? new globalThis.BroadcastChannel("siwa-sync:" + name) : null;
  return {
    async load() {
      const db = await open();
      const transaction = db.transaction(["slots", "meta"], "readonly");
      const [slots, keys, values] = await Promise.all([
        syncRequest(transaction.objectStore("slots").getAll()),
        syncRequest(transaction.objectStore("meta").getAllKeys()),
        syncRequest(transaction.objectStore("meta").getAll()),
      ]);
      return { meta: Object.fromEntries(keys.map((key, i) => [key, values[i]])), slots };
    },
    async write(ops, mergeText) {
      const db = await open();
      const transaction = db.transaction(["slots", "meta"], "readwrite");
      const slots = transaction.objectStore("slots");
      const meta = transaction.objectStore("meta");
      const committed = new Promise((resolve, reject) => {
        transaction.oncomplete = resolve;
        transaction.onerror = () => reject(transaction.error);
        transaction.onabort = () => reject(transaction.error ?? new Error("the transaction was aborted"));
      });
      let result;
      try {
        // Each request is made as the one before it succeeds: the transaction stays active.
        result = await syncApplyOps(ops, mergeText, {
          getMeta: (key) => syncRequest(meta.get(key)),
          putMeta: (key, value) => syncRequest(meta.put(value, key)),
          clear: (part) => syncRequest(slots.delete(IDBKeyRange.bound([part], [part, []]))),
          get: async (part, collection, key) => (await syncRequest(slots.get([part, collection, key])))?.text,
          put: (part, collection, key, text) => syncRequest(slots.put({ part, collection, key, text })),
          remove: (part, collection, key) => syncRequest(slots.delete([part, collection, key])),
        });
      } catch (error) {
        try {
          transaction.abort();
        } catch {
          // Already finished.
        }
        throw error;
      }
      await committed;
      channel?.postMessage("changed");
      return result;
    },
    onChange(listener) {
      if (channel) channel.onmessage = () => listener();
    },
    close() {
      channel?.close();
      opened?.then((db) => db.close());
    },
  };
}

/** A record as the app sees it: "latest wins" values plain, counters their totals, no `deleted`. */
function syncPlainValue(value) {
  if (value === null) return null;
  switch (value.t) {
    case "strings": return [...value.v];
    case "counts": return syncTotal(value);
    case "stamped": return syncPlainValue(value.v);
    default: return value.v;
  }
}

function syncPlainRecord(collection, record) {
  const plain = {};
  collection.keys.forEach((field, i) => (plain[field.name] = syncPlainValue(record.keys[i])));
  collection.fields.forEach((field, i) => (plain[field.name] = syncPlainValue(record.values[i])));
  return plain;
}

function syncJSONValue(value) {
  if (value === null) return null;
  switch (value.t) {
    case "strings": return [...value.v];
    case "counts": return Object.fromEntries(value.v);
    case "stamped": return { value: syncJSONValue(value.v), at: value.at, device: value.device };
    default: return value.v;
  }
}

function syncSameJSON(a, b) {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * A sync of the built-in model (lessons, achievements, the profile) and the collections the app
 * declares, through `client.fetch` (`POST /sync`), with the state kept in IndexedDB. See
 * docs/WEB.md, "Sync".
 */
export function createSync(client, options = {}) {
  const declared = options.declaration ? parseSyncDeclaration(options.declaration) : { collections: [], limits: { bytesPerRequest: 1048576 } };
  const builtIn = syncBuiltInCollections();
  const byName = new Map([...builtIn, ...declared.collections].map((c) => [c.name, c]));
  const maximumRequestBytes = Math.max(1024, options.maximumRequestBytes ?? SYNC_DEFAULT_MAXIMUM_REQUEST_BYTES);
  // Lowered for good after a 413 (the server's SIWA_MAX_BODY_BYTES below `maximumRequestBytes`).
  let requestBytes = maximumRequestBytes;
  const storage =
    typeof options.storage === "object" && options.storage !== null
      ? options.storage
      : options.storage === "memory" || !globalThis.indexedDB
        ? syncMemoryStorage()
        : syncIndexedDBStorage(options.name ?? "siwa-sync");
  // parts[part].get(collection).get(key) = the record as the codec writes it.
  const parts = Object.fromEntries(SYNC_PARTS.map((part) => [part, new Map()]));
  let cursor = null;
  let deviceId = null;
  let lastStamp = 0;
  let journal = [];
  const listeners = new Set();
  let writes = Promise.resolve();
  let wake = null;
  let running = null;

  const slot = (part, collection) => {
    let map = parts[part].get(collection);
    if (!map) parts[part].set(collection, (map = new Map()));
    return map;
  };
  const recordOf = (collection, text) => syncReadRecord(collection, text, { checked: false });
  // Each change is made in memory at once and queued in `journal` as an operation for the storage,
  // which applies it to what is stored: a merge (so what another tab stored meanwhile is kept), a
  // removal of what was sent (unless it changed since), a part cleared, the cursor.
  const merge = (record, part, collection) => {
    const map = slot(part, collection.name);
    const current = map.get(record.key);
    const text = syncWriteRecord(collection, record);
    const merged = current === undefined ? text : syncWriteRecord(collection, syncMergeRecords(collection, recordOf(collection, current), record));
    if (merged === current) return;
    map.set(record.key, merged);
    journal.push({ op: "merge", part, collection: collection.name, key: record.key, text });
  };
  const remove = (part, collection, key, text) => {
    const map = slot(part, collection);
    if (map.get(key) !== text) return;
    map.delete(key);
    journal.push({ op: "remove", part, collection, key, text });
  };
  const clear = (part) => {
    for (const map of parts[part].values()) map.clear();
    journal.push({ op: "clear", part });
  };
  const mergeText = (name, stored, change) => {
    const collection = byName.get(name);
    if (!collection) return change;
    return syncWriteRecord(collection, syncMergeRecords(collection, recordOf(collection, stored), recordOf(collection, change)));
  };
  const replaceState = (stored) => {
    for (const part of SYNC_PARTS) parts[part].clear();
    for (const { part, collection, key, text } of stored.slots) if (parts[part]) slot(part, collection).set(key, text);
    cursor = stored.meta.cursor ?? null;
  };
  const notify = () => {
    if (listeners.size === 0) return;
    const snapshot = view();
    for (const listener of listeners) {
      try {
        listener(snapshot);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  };

  const ready = (async () => {
    let stored;
    try {
      stored = await storage.load();
    } catch (error) {
      throw syncError("storage", 0, `the sync state could not be read: ${error?.message ?? error}`);
    }
    replaceState(stored);
    deviceId = stored.meta.deviceId;
    if (!deviceId) {
      // Made once: a tab that made one at the same time keeps the one stored first.
      const written = await storage.write([{ op: "meta", name: "deviceId", value: syncNewDeviceId(), ifAbsent: true }], mergeText);
      deviceId = written.meta.deviceId;
    }
    // Another tab changed the stored state: read it again (one read at a time, the last one after
    // the last change).
    let reading = null;
    let again = false;
    storage.onChange?.(() => {
      if (reading) return void (again = true);
      reading = (async () => {
        do {
          again = false;
          replaceState(await storage.load());
          notify();
        } while (again);
      })().finally(() => (reading = null));
    });
  })();

  /** Writes what changed since the last call, in one transaction, and tells the listeners. Memory
   * then takes what is stored (with another tab's changes merged in). */
  const persist = async () => {
    const ops = journal;
    journal = [];
    if (ops.length === 0) return;
    if (ops.some((op) => op.part === "view")) notify();
    const written = writes.catch(() => {}).then(() => storage.write(ops, mergeText));
    writes = written;
    let result;
    try {
      result = await written;
    } catch (error) {
      // Not stored: what this sync holds is what is stored again (the change is lost, and said so).
      try {
        replaceState(await storage.load());
        notify();
      } catch {
        // The storage cannot be read either: memory keeps the change until the page closes.
      }
      throw syncError("storage", 0, `the sync state could not be stored: ${error?.message ?? error}`);
    }
    let viewChanged = false;
    for (const stored of result.slots) {
      const map = slot(stored.part, stored.collection);
      if ((map.get(stored.key) ?? null) === stored.text) continue;
      if (stored.text === null) map.delete(stored.key);
      else map.set(stored.key, stored.text);
      viewChanged ||= stored.part === "view";
    }
    if (viewChanged) notify();
  };

  const collectionNamed = (name) => {
    const collection = declared.collections.find((c) => c.name === name);
    if (!collection) throw syncError("invalid_change", 0, `${name} is not a collection of this sync's declaration`);
    return collection;
  };
  const stamp = () => {
    lastStamp = Math.max(Date.now(), lastStamp + 1);
    return { at: lastStamp, device: deviceId };
  };
  const checked = (collection, json) => {
    try {
      return syncReadRecord(collection, json);
    } catch (error) {
      if (error instanceof SyncRecordProblem) throw syncError("invalid_change", 0, error.message);
      throw error;
    }
  };
  const change = async (collection, record) => {
    merge(record, "view", collection);
    merge(record, "pending", collection);
    await persist();
    wake?.();
  };

  /** The app's record as a change of the view's (`RecordConverter.change`). */
  const changeOf = (collection, plain, current, now, partial = false) => {
    const members = { ...plain };
    delete members.deleted;
    collection.fields.forEach((field, index) => {
      const value = members[field.name] ?? null;
      const old = current ? current.values[index] : syncEmptyValue(field);
      // An update leaves a field it does not name as it is: its "latest wins" value and stamp sent
      // again, any other left out (no value, which every rule's merge leaves to the other side).
      if (partial && !(field.name in plain)) return void (members[field.name] = field.rule === "latestWins" ? syncJSONValue(old) : null);
      if (field.rule === "latestWins") {
        if (old !== null && old.t === "stamped" && syncSameJSON(syncJSONValue(old.v), value)) members[field.name] = { value, at: old.at, device: old.device };
        else if (value === null && old === null) members[field.name] = null;
        else members[field.name] = { value, at: now.at, device: now.device };
      } else if (field.rule === "counter") {
        const counts = old !== null && old.t === "counts" ? Object.fromEntries(old.v) : {};
        if (Number.isSafeInteger(value) && value > syncTotal(old)) counts[now.device] = (counts[now.device] ?? 0) + value - syncTotal(old);
        members[field.name] = counts;
      }
    });
    if (collection.tombstoneDays === null) return checked(collection, members);
    members.deleted = { value: false, at: now.at, device: now.device };
    const record = checked(collection, members);
    // A save that changes nothing keeps the record's deletion stamp: a no-op made offline must not
    // undo another device's later deletion.
    const after = partial && current ? syncMergeRecords(collection, current, { ...record, deleted: current.deleted }) : record;
    if (current && !syncIsDeleted(current) && after.values.every((value, i) => syncEqual(value, current.values[i]))) {
      return { ...record, deleted: current.deleted };
    }
    return record;
  };
  const keyOf = (collection, plain) => {
    const keys = {};
    for (const field of collection.keys) keys[field.name] = plain?.[field.name] ?? null;
    return keys;
  };
  const viewRecord = (collection, key) => {
    const text = slot("view", collection.name).get(key);
    return text === undefined ? null : recordOf(collection, text);
  };
  const sortedKeys = (map) => [...map.keys()].sort(syncCompareStrings);
  const plainRecords = (collection) => {
    const map = slot("view", collection.name);
    return sortedKeys(map)
      .map((key) => recordOf(collection, map.get(key)))
      .filter((record) => !syncIsDeleted(record))
      .map((record) => syncPlainRecord(collection, record));
  };
  const view = () => {
    const profile = slot("view", "profile").get("");
    const collections = {};
    for (const collection of declared.collections) collections[collection.name] = plainRecords(collection);
    return {
      profile: profile === undefined ? null : syncPlainRecord(byName.get("profile"), recordOf(byName.get("profile"), profile)),
      lessons: plainRecords(byName.get("progress")),
      achievements: plainRecords(byName.get("achievements")),
      collections,
    };
  };
  const hasAny = (part, names) => names.some((name) => slot(part, name).size > 0);
  const allNames = () => [...byName.keys()];

  // ----- Syncing -----

  /** The next request: within each collection's items per request, the server's 500 lessons and
   * achievements, and `maximumRequestBytes` (of which declared records at most half of the
   * declaration's bytesPerRequest), at least one change (`SyncState.batch`). */
  const batch = () => {
    const empty = requestBody(cursor, new Map()).length + 64;
    let total = requestBytes - empty;
    let recordsBudget = Math.floor(declared.limits.bytesPerRequest / 2);
    const sent = new Map();
    let hasChanges = false;
    const take = (bytes, first, record) => {
      if (!(first || (bytes <= total && (!record || bytes <= recordsBudget)))) return false;
      total -= bytes;
      if (record) recordsBudget -= bytes;
      return true;
    };
    const order = ["profile", "progress", "achievements", ...declared.collections.map((c) => c.name)];
    for (const name of order) {
      const pending = slot("pending", name);
      if (pending.size === 0) continue;
      const isDeclared = !["profile", "progress", "achievements"].includes(name);
      const limit = isDeclared ? byName.get(name).limits.itemsPerRequest : SYNC_BATCH_LIMIT;
      const taken = new Map();
      for (const key of sortedKeys(pending).slice(0, limit)) {
        const text = pending.get(key);
        if (!take(syncUtf8Length(text) + 1, !hasChanges && taken.size === 0, isDeclared)) break;
        taken.set(key, text);
        hasChanges = true;
      }
      if (taken.size > 0) sent.set(name, taken);
    }
    const count = [...sent.values()].reduce((sum, taken) => sum + taken.size, 0);
    return { cursor, sent, hasChanges, count, bytes: requestBytes - total };
  };

  /** The body of `POST /sync`, as the server's codec writes it. */
  const requestBody = (requestCursor, sent) => {
    const records = {};
    for (const [name, taken] of sent) records[name] = [...taken.values()];
    return syncWriteRequest(declared.collections, requestCursor, records);
  };

  const push = async (request) => {
    const response = await client.fetch("/sync", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: requestBody(request.cursor, request.sent),
    });
    const text = await response.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    if (!response.ok) {
      const code = knownErrorCode(json?.error) ?? "invalid_response";
      throw syncError(code, response.status, json?.message ?? `POST /sync: ${response.status}`);
    }
    try {
      return syncReadAnswer(declared.collections, json);
    } catch (error) {
      throw syncError("invalid_response", response.status, `sync: ${error.message}`);
    }
  };

  /** Applies an answer (`SyncState.apply`): what the server accepted leaves the queue unless changed
   * again meanwhile, the view takes what changed on the server, and the cursor moves. With
   * `resync`, the view is dropped and made again of this answer, the pages after it and the
   * changes not yet sent. */
  const apply = (answer, request) => {
    for (const [name, taken] of request.sent) {
      for (const [key, text] of taken) remove("pending", name, key, text);
    }
    if (answer.resync === true) {
      clear("view");
      for (const [name, pending] of parts.pending) {
        const collection = byName.get(name);
        if (collection) for (const text of pending.values()) merge(recordOf(collection, text), "view", collection);
      }
    }
    for (const { collection, record } of answer.items) merge(record, "view", byName.get(collection));
    if (answer.cursor !== cursor) {
      cursor = answer.cursor;
      journal.push({ op: "meta", name: "cursor", value: cursor });
    }
  };

  /** Sets aside what the server refused for good (`SyncState.setAside`). */
  const setAside = (request) => {
    for (const [name, taken] of request.sent) {
      const collection = byName.get(name);
      for (const [key, text] of taken) {
        if (slot("pending", name).get(key) !== text) continue;
        remove("pending", name, key, text);
        merge(recordOf(collection, text), "refused", collection);
      }
    }
  };

  let syncing = null;
  const syncOnce = async () => {
    await ready;
    let more = false;
    let refusal = null;
    do {
      const request = batch();
      let answer;
      try {
        answer = await push(request);
      } catch (error) {
        if (error?.status === 413 && request.count > 1 && requestBytes > 1024) {
          // Too large for this server: smaller requests from now on, nothing set aside.
          requestBytes = Math.max(1024, Math.floor(request.bytes / 2));
          continue;
        }
        if ((error?.status === 400 && error.code === "invalid_request") || (error?.status === 413 && request.hasChanges)) {
          setAside(request);
          await persist();
          refusal = error;
          continue;
        }
        throw error;
      }
      apply(answer, request);
      await persist();
      more = answer.more;
    } while (hasAny("pending", allNames()) || more);
    if (refusal) throw refusal;
  };

  const sync = {
    /** Resolves once the stored state is read. */
    ready,
    /** This device's id in stamps and counters: made once and kept. */
    get deviceId() {
      return deviceId;
    },
    /** The collections of the declaration, as parsed. */
    collections: declared.collections,
    /** Whether local changes wait for the server. */
    get hasPendingChanges() {
      return hasAny("pending", allNames());
    },
    /** Whether changes the server refused for good are set aside. */
    get hasRefusedChanges() {
      return hasAny("refused", allNames());
    },
    /** The local view: the profile, lessons, achievements and each declared collection's records. */
    view,
    /** The records of a declared collection in the view, deleted ones left out, in order of key. */
    records(name) {
      return plainRecords(collectionNamed(name));
    },
    /** One record of a declared collection by its key fields, or null (deleted or unknown). */
    record(name, keys) {
      const collection = collectionNamed(name);
      const record = viewRecord(collection, checked(collection, keyOf(collection, keys)).key);
      return record === null || syncIsDeleted(record) ? null : syncPlainRecord(collection, record);
    },
    /** Saves a record of a declared collection: its "latest wins" fields that changed are stamped
     * now by this device, a counter's growth is counted as this device's, and a deleted record is
     * restored. Rejects with `code` "invalid_change" for a record the server would refuse. */
    async save(name, plain) {
      await ready;
      const collection = collectionNamed(name);
      const key = checked(collection, { ...keyOf(collection, plain) }).key;
      await change(collection, changeOf(collection, plain, viewRecord(collection, key), stamp()));
    },
    /** As `save`, for the fields `plain` names only: the others stay as they are (a "latest wins"
     * field left out of a `save` is set to no value, as SIWAKit's save of a struct whose member is
     * nil). */
    async update(name, plain) {
      await ready;
      const collection = collectionNamed(name);
      const key = checked(collection, { ...keyOf(collection, plain) }).key;
      await change(collection, changeOf(collection, plain, viewRecord(collection, key), stamp(), true));
    },
    /** Deletes a record of a declared collection whose declaration allows deletion (only its key
     * fields count). */
    async delete(name, plain) {
      await ready;
      const collection = collectionNamed(name);
      if (collection.tombstoneDays === null) throw syncError("invalid_change", 0, `records of ${name} cannot be deleted: its declaration has no deletion`);
      const now = stamp();
      await change(collection, checked(collection, { ...keyOf(collection, plain), deleted: { value: true, at: now.at, device: now.device } }));
    },
    /** Adds `amount` (1 or more) to this device's count in a counter field of a record. */
    async increment(name, plain, field, amount = 1) {
      await ready;
      const collection = collectionNamed(name);
      const index = collection.fields.findIndex((f) => f.name === field && f.rule === "counter");
      if (index < 0) throw syncError("invalid_change", 0, `${name}.${field} is not a counter of the collection's declaration`);
      if (!Number.isSafeInteger(amount) || amount < 1) throw syncError("invalid_change", 0, `${name}.${field}: an increment must be 1 or more, not ${amount}`);
      const keys = keyOf(collection, plain);
      const current = viewRecord(collection, checked(collection, keys).key);
      const mine = current?.values[index]?.v.find(([device]) => device === deviceId)?.[1] ?? 0;
      const base = current ?? checked(collection, keys);
      const values = [...base.values];
      values[index] = { t: "counts", v: [[deviceId, mine + amount]] };
      await change(collection, checked(collection, JSON.parse(syncWriteRecord(collection, { ...base, values }))));
    },
    /** Records a lesson's progress ({beliefSystemId, lessonId, status, score, earnedXp, completedAt}). */
    async recordLesson(lesson) {
      await ready;
      const collection = byName.get("progress");
      await change(collection, checked(collection, lesson));
    },
    /** Records an achievement's state ({achievementId, progress, completed, completedAt}). */
    async recordAchievement(achievement) {
      await ready;
      const collection = byName.get("achievements");
      await change(collection, checked(collection, achievement));
    },
    /** Records the profile ({totalXp, currentLevel, streakDays, lastActiveDate}). */
    async recordProfile(profile) {
      await ready;
      const collection = byName.get("profile");
      await change(collection, checked(collection, profile));
    },
    /** Calls `listener(view)` after every change of the view, local or from the server; returns a
     * function that unsubscribes. */
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** Pushes every queued change and pulls what changed on the server, in as many requests as
     * needed. Rejects with `code` "offline" (the queue is kept), the server's error, or, after the
     * rest was sent, the refusal of a change set aside (400 invalid_request, or the 413 of a record
     * too large to go alone; after a 413 of several records, smaller requests follow). */
    sync() {
      syncing ??= syncOnce().finally(() => (syncing = null));
      return syncing;
    },
    /** Queues the changes the server refused again, for the next sync. */
    async requeueRefusedChanges() {
      await ready;
      for (const [name, refused] of parts.refused) {
        const collection = byName.get(name);
        if (!collection) continue;
        for (const [key, text] of [...refused]) {
          merge(recordOf(collection, text), "pending", collection);
          remove("refused", name, key, text);
        }
      }
      await persist();
      wake?.();
    },
    /** Syncs now, after every local change (and when the browser comes back online), or every
     * `interval` ms; after a failure waits `initialDelay` ms, then twice that, up to `maximumDelay`
     * (each with 20 % jitter). Stops with `stop()` or when the client signs out. */
    start({ interval = 60000, initialDelay = 1000, maximumDelay = 300000 } = {}) {
      if (running) return;
      const state = { stopped: false, timer: null, resolve: null };
      running = state;
      // A wake-up while the loop syncs is kept for its next wait, which then ends at once.
      let woken = false;
      const sleep = (ms) =>
        new Promise((resolve) => {
          if (woken) {
            woken = false;
            return resolve();
          }
          state.resolve = () => {
            state.resolve = null;
            clearTimeout(state.timer);
            resolve();
          };
          state.timer = setTimeout(state.resolve, ms);
        });
      wake = () => {
        if (state.resolve) state.resolve();
        else woken = true;
      };
      const online = () => wake?.();
      globalThis.addEventListener?.("online", online);
      const unsubscribe = client.subscribe?.((event) => {
        if (event?.type === "signedOut") sync.stop();
      });
      state.cleanup = () => {
        globalThis.removeEventListener?.("online", online);
        unsubscribe?.();
      };
      (async () => {
        let failures = 0;
        while (!state.stopped) {
          try {
            await sync.sync();
            failures = 0;
            if (!state.stopped) await sleep(interval);
          } catch (error) {
            if (error?.code === "signed_out" || error?.status === 401) return sync.stop();
            failures += 1;
            const delay = Math.min(maximumDelay, initialDelay * 2 ** Math.min(failures - 1, 30));
            if (!state.stopped) await sleep(delay * (0.8 + Math.random() * 0.4));
          }
        }
      })();
    },
    /** Stops the loop `start` began. */
    stop() {
      const state = running;
      if (!state) return;
      running = null;
      wake = null;
      state.stopped = true;
      clearTimeout(state.timer);
      state.resolve?.();
      state.cleanup();
    },
    /** Forgets the local state and queue (another person signing in on this device); the device
     * keeps its id. */
    async reset() {
      await ready;
      for (const part of SYNC_PARTS) clear(part);
      cursor = null;
      journal.push({ op: "meta", name: "cursor", value: null });
      await persist();
    },
    /** Stops the loop and closes the storage. */
    close() {
      sync.stop();
      storage.close();
    },
  };
  return sync;
}

// ===== End of sync =====
