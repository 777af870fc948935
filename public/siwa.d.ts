// Types of siwa.js (the app's half of siwa for the web). Guide: docs/WEB.md.

// ===== Sign-in and session =====

/** An error code of the server: the `error` of its JSON error answers (docs/openapi.yaml). */
export type ServerErrorCode =
  | "invalid_request" | "invalid_grant" | "invalid_redirect_uri" | "invalid_client" | "unsupported_grant_type"
  | "invalid_token" | "token_reused" | "nonce_reused" | "user_mismatch" | "code_mismatch" | "origin_mismatch"
  | "not_found" | "method_not_allowed" | "already_completed" | "payload_too_large" | "unsupported_media_type"
  | "rate_limited" | "apple_error" | "apple_unavailable" | "not_configured" | "unavailable" | "internal_error"
  | "user_disabled" | "export_limited" | "identity_in_use" | "external_user_linked" | "guest_linked"
  | "invalid_link_token" | "link_token_expired" | "link_token_used" | "guests_disabled" | "invalid_link_secret"
  | "not_for_browsers" | "bad_request" | "forbidden" | "uri_too_long";

/** Errors of the app flow's redirect (`GET /auth/app/start`, RFC 6749 §4.1.2.1). */
export type AppFlowErrorCode = "access_denied" | "temporarily_unavailable" | "server_error";

/** Errors of Sign in with Apple JS's popup, as Apple's script rejects with them (another code of
 * Apple's reads as `invalid_response`, with Apple's code in the message). */
export type AppleJSErrorCode =
  | "user_cancelled_authorize" | "popup_closed_by_user" | "popup_blocked_by_browser" | "user_trigger_new_signin_flow";

/** The client's own errors. */
export type ClientErrorCode =
  /** The network failed: nothing was answered; the session is kept. */
  | "offline"
  /** Nobody is signed in, or the session just ended (see the `signedOut` event's reason). */
  | "signed_out"
  /** The answer of Apple or of the browser is not for this sign-in: nothing was sent or exchanged. */
  | "state_mismatch"
  /** The server's answer is not what the API promises. */
  | "invalid_response"
  /** The session could not be read or written in the chosen storage. */
  | "storage"
  /** `fetch` of an address whose origin is neither the server's nor one of `apiOrigins`: nothing sent. */
  | "untrusted_host"
  /** Sync: a record the declaration does not allow (the message names the member); nothing recorded. */
  | "invalid_change";

/** Every code a `SiwaError` can carry: a closed set. An answer whose `error` is none of these (your
 * own API's codes behind `client.json`, a proxy's page) reads as `invalid_response`, with its status,
 * and its `error` and `message` in the error's message. */
export type SiwaErrorCode = ServerErrorCode | AppFlowErrorCode | AppleJSErrorCode | ClientErrorCode;

/** What a call of siwa.js fails with. */
export declare class SiwaError extends Error {
  /** An error of `code` (for your own code paths and tests; siwa.js makes its own). */
  constructor(code: SiwaErrorCode, message: string, details?: { status?: number; retryAfter?: number | null; cause?: unknown });
  /** Always `"SiwaError"`. */
  readonly name: "SiwaError";
  /** What went wrong, as a code to act on. */
  readonly code: SiwaErrorCode;
  /** The HTTP status of the server's answer; 0 when there was none. */
  readonly status: number;
  /** `Retry-After` in seconds, on 429 and 503. */
  readonly retryAfter: number | null;
  /** Worth trying again later with the same input: offline, 429 or 5xx. */
  readonly isTemporary: boolean;
  /** Whether `code` is one of the server's codes rather than the client's own. */
  static isServerCode(code: string): code is ServerErrorCode;
  /** The error of an answer that is not 2xx: its JSON `error` and `message` when `error` is one of
   * siwa's codes, else `invalid_response` with the status. */
  static from(response: Response): Promise<SiwaError>;
}

/** An email address of the user, as Apple's identity token gave it. */
export interface UserEmail {
  /** The address (a private relay address when the person chose to hide theirs). */
  address: string;
  /** An address of Apple's private relay (`@privaterelay.appleid.com`). */
  isPrivateRelay: boolean;
  /** Whether Apple forwards mail sent to the relay address (false once the person turned it off). */
  forwardingEnabled: boolean;
  /** Whether Apple says the address is verified. */
  verified: boolean;
}

/** The signed-in person, as `GET /auth/me` gives it. */
export interface User {
  /** The server's id of the user (a string of digits). */
  id: string;
  /** The given name, as Apple gave it at the first sign-in (Apple gives it once only). */
  firstName?: string;
  /** The family name, as Apple gave it at the first sign-in. */
  lastName?: string;
  /** When the account was made, in Unix seconds. */
  createdAt: number;
  /** The addresses Apple's identity tokens gave; empty for a guest. */
  emails: UserEmail[];
  /** A guest account: no Apple ID yet. */
  guest?: boolean;
  /** The user's id in the app's older backend, set by a link token. */
  externalId?: string;
}

/** One of the user's sessions, as `GET /auth/sessions` lists it (times in Unix seconds). */
export interface DeviceSession {
  /** The session's id: pass it to `revokeSession`. */
  id: string;
  /** The label the device gave (`createClient`'s `device`, SIWAKit's device name), if any. */
  device?: string;
  /** `"native"`: tokens (an app, siwa.js with `session: "token"`); `"web"`: the cookie session. */
  kind: "native" | "web";
  /** The session this client is using. */
  current: boolean;
  /** When it signed in. */
  createdAt: number;
  /** When it last refreshed or was last used. */
  lastUsedAt: number;
  /** When it ends unless it is used again. */
  expiresAt: number;
}

/** Why the session ended in this browser (SIWAKit's `SignOutReason`). */
export type SignOutReason =
  /** Someone signed out, here or in another tab, or ended this session from the sessions list. */
  | "signedOut"
  /** The server ended the session: revoked from another device, expired, or the account is gone. */
  | "sessionEnded"
  /** A refresh token was presented twice: the server ended the session as possibly stolen. */
  | "refreshTokenReused"
  /** The account was deleted, here or in another tab. */
  | "accountDeleted";

/** A change of the session, as `subscribe` tells it: each once, when it happens (in every tab). */
export type AuthEvent =
  /** Signed in; `restored` when the session was found at start (kept tokens, the cookie). */
  | { type: "signedIn"; user: User; restored?: boolean }
  /** A new access token replaced the old one (in this tab or another): the session goes on. */
  | { type: "refreshed"; user: User }
  /** `me()` answered a user that differs from the one kept. */
  | { type: "userUpdated"; user: User }
  /** The session ended here, and why. */
  | { type: "signedOut"; reason: SignOutReason };

/** Where tokens are kept: an object with these three (each may return a promise) for a store of the app's own. */
export interface SessionStore {
  /** The text kept under `key`, or null. A throw or a rejection reads as SiwaError `storage`. */
  get(key: string): string | null | Promise<string | null>;
  /** Keeps `value` (the session as JSON: its tokens included) under `key`. */
  set(key: string, value: string): void | Promise<void>;
  /** Forgets `key` (at sign-out, and when the server ends the session). */
  remove(key: string): void | Promise<void>;
}

/** The options of `createClient`. */
export interface ClientOptions {
  /**
   * The siwa server's origin; the page's own by default. Another origin answers this page only when
   * its `SIWA_CORS_ORIGINS` lists the page's origin, and only with the token session and the app flow
   * (docs/WEB.md, "An app on another origin").
   */
  server?: string;
  /**
   * `"token"` (default): access and refresh tokens, kept in `storage`, sent as Bearer.
   * `"cookie"`: the account pages' `__Host-siwa_session` cookie, for a page of the server's own site.
   */
  session?: "token" | "cookie";
  /** Sign in with Apple JS (popup): the Services ID and the page's registered redirect URI. */
  apple?: {
    /** The Services ID (at Apple, and in SIWA_APPLE_REDIRECT_URIS). */
    clientId: string;
    /** The redirect URI registered for it; the page's address without query by default. */
    redirectURI?: string;
    /** `"name email"` by default. */
    scope?: string;
    /** Apple's script, loaded at the first sign-in when `AppleID` is not there yet (load it ahead
     * with a `<script>` tag instead where a popup must open at once: a browser may block one opened
     * after the script's download). */
    scriptURL?: string;
  };
  /** The app flow with PKCE (`GET /auth/app/start`, `POST /auth/token`): a client of SIWA_APP_CLIENTS. */
  pkce?: {
    /** The client id (SIWA_APP_CLIENTS). */
    clientId: string;
    /** One of its registered redirect URIs: a page of the app (popup and redirect), or an app's URL. */
    redirectUri: string;
  };
  /**
   * Where the tokens are kept: `"memory"` (default; this tab only, gone at a reload),
   * `"localStorage"` or `"indexedDB"` (shared by the origin's tabs, kept across reloads, readable by
   * any script of the origin), or a store of the app's own (treated as shared).
   */
  storage?: "memory" | "localStorage" | "indexedDB" | SessionStore;
  /** The key of the session in the storage, and the name of the tabs' channel and lock; `"siwa"`. */
  storageKey?: string;
  /** A label for the sessions list (token sessions; the cookie's session is named after the browser). */
  device?: string;
  /** Seconds before its expiry an access token is refreshed before use; 60. */
  refreshMargin?: number;
  /** Other origins of the app's own backend that verify the access tokens themselves. */
  apiOrigins?: string[];
  /** Coordination with the origin's other tabs (one refresh at a time, shared sign-in and sign-out); true. */
  crossTab?: boolean;
  /** The `fetch` requests are sent with; the global one by default. */
  fetch?: typeof globalThis.fetch;
}

/** How `signIn` signs in. */
export interface SignInOptions {
  /** `"popup"` (default) or `"redirect"` (the page leaves; `handleRedirect` completes it). */
  mode?: "popup" | "redirect";
  /** `"apple"`: Sign in with Apple JS (default when `apple` is given); `"pkce"`: the app flow. */
  flow?: "apple" | "pkce";
  /** Cookie session, redirect: the path to come back to; the page's by default. */
  returnTo?: string;
}

/** A client of a siwa server, made by `createClient`. */
export interface Client {
  /** The signed-in user, or null. */
  readonly user: User | null;
  /** The server's id of this session (token sessions), or null. */
  readonly sessionId: string | null;
  /** Whether someone is signed in. */
  readonly signedIn: boolean;
  /** Settles when the session kept from before (or the cookie's) is known. */
  readonly ready: Promise<void>;
  /** Signs in; resolves with the user. Call it from a click (a popup needs one). */
  signIn(options?: SignInOptions): Promise<User>;
  /** On the page a redirect sign-in comes back to: completes it; null when the address is not a sign-in's. */
  handleRedirect(url?: string): Promise<User | null>;
  /**
   * `fetch` of a path of the server (or a URL of `apiOrigins`) with the session: the Bearer token
   * (refreshed ahead of its expiry), or the cookie. After a 401 the token is refreshed once and the
   * request sent once more. Rejects with SiwaError `offline` when the network fails, `signed_out`.
   */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** `fetch` with a JSON body (`body` is serialized; the method POST unless given) and the 2xx answer's JSON; SiwaError otherwise. */
  json<T = unknown>(path: string, init?: Omit<RequestInit, "body"> & { body?: unknown }): Promise<T>;
  /** A valid access token (token sessions), refreshed first if needed. */
  accessToken(): Promise<string>;
  /** Refreshes the access token now, unless another tab already replaced this tab's one. */
  refresh(): Promise<void>;
  /** The user, fresh from the server (`GET /auth/me`). */
  me(): Promise<User>;
  /** The user's sessions, this one marked `current` (`GET /auth/sessions`). */
  sessions(): Promise<DeviceSession[]>;
  /** Ends one session (`DELETE /auth/sessions/{id}`); this one signs out. */
  revokeSession(id: string): Promise<void>;
  /** Signs out (`POST /auth/logout`, best effort) here and in the origin's other tabs. */
  signOut(): Promise<void>;
  /** Deletes the account (`DELETE /auth/account`), then signs out everywhere it is open. */
  deleteAccount(): Promise<void>;
  /** Calls `listener` with each change from now on; returns the function that stops it. */
  subscribe(listener: (event: AuthEvent) => void): () => void;
  /** Closes the tabs' channel and drops the listeners. */
  close(): void;
}

/** A client of a siwa server: nothing is sent until a call needs it (a cookie session is asked of
 * `GET /auth/me` at once). Throws a TypeError for a `server` or `apiOrigins` entry that is not a URL. */
export declare function createClient(options?: ClientOptions): Client;

// ===== End of sign-in and session =====



// ===== Sync =====

/** A record of a declared collection as the app sees it: its key fields and fields, "latest wins"
 * values plain, a counter its total, a set an array; no value is `null`. */
export type SyncRecord = Record<string, string | number | boolean | string[] | null>;

/** A lesson's progress (`progress` of the built-in model). */
export interface LessonProgress {
  /** The course (an id: 1 to 128 of A-Z a-z 0-9 . _ : -). */
  beliefSystemId: string;
  /** The lesson (an id). */
  lessonId: string;
  /** Merged forward: a lesson never goes back from completed. */
  status: "not_started" | "in_progress" | "completed";
  /** 0 to 1,000,000; the highest wins (0 by default). */
  score?: number;
  /** 0 to 1,000,000; the highest wins (0 by default). */
  earnedXp?: number;
  /** When it was first completed, in Unix milliseconds, or null; the earliest wins. */
  completedAt?: number | null;
}

/** An achievement's state (`achievements` of the built-in model). */
export interface AchievementProgress {
  /** The achievement (an id). */
  achievementId: string;
  /** 0 to 1,000,000; the highest wins (0 by default). */
  progress?: number;
  /** Once true, true for good (false by default). */
  completed?: boolean;
  /** Unix milliseconds, or null; the earliest wins. */
  completedAt?: number | null;
}

/** The profile (`profile` of the built-in model). */
export interface SyncProfile {
  /** 0 to 10^12; the highest wins (0 by default). */
  totalXp?: number;
  /** 0 to 100,000; the highest wins (0 by default). */
  currentLevel?: number;
  /** 0 to 100,000: the value of the device whose `lastActiveDate` is the latest (0 by default). */
  streakDays?: number;
  /** `YYYY-MM-DD`, or null. */
  lastActiveDate?: string | null;
}

/** The local view: the server's state as last seen, merged with this device's changes. */
export interface SyncView {
  /** The profile, or null before any device recorded one. */
  profile: Required<SyncProfile> | null;
  /** The lessons' progress, in order of key. */
  lessons: Required<LessonProgress>[];
  /** The achievements, in order of key. */
  achievements: Required<AchievementProgress>[];
  /** Each declared collection's records, deleted ones left out, in order of key. */
  collections: Record<string, SyncRecord[]>;
}

/** Where the state is kept: IndexedDB (the default in a browser), memory only, or your own. `write`
 * applies a change's operations in order, in one transaction, merging records with `mergeText` into
 * what is stored, and resolves to the stored text of every record it touched. */
export interface SyncStorage {
  /** Everything stored: the `meta` values (`deviceId`, `cursor`) and every slot. */
  load(): Promise<{ meta: Record<string, unknown>; slots: { part: string; collection: string; key: string; text: string }[] }>;
  /** Applies `ops` in order in one transaction (see above); rejects when nothing was stored. */
  write(
    ops: object[],
    mergeText: (collection: string, stored: string, change: string) => string,
  ): Promise<{ slots: { part: string; collection: string; key: string; text: string | null }[]; meta: Record<string, unknown> }>;
  /** Called when another tab changed the stored state. */
  onChange?(listener: () => void): void;
  /** Lets the storage go (the database closed). */
  close(): void;
}

/** A storage in memory only (tests, Node, a page that must store nothing); several syncs given the
 * same one share it as tabs share IndexedDB. */
export function createMemoryStorage(): SyncStorage;

/** The options of `createSync`. */
export interface SyncOptions {
  /** The app's declaration: the JSON of the server's SIWA_SYNC_COLLECTIONS file (object or text). */
  declaration?: object | string;
  /** "indexedDB" (default in a browser), "memory", or a SyncStorage. */
  storage?: "indexedDB" | "memory" | SyncStorage;
  /** The IndexedDB database's name (default "siwa-sync"); one per signed-in person if the page switches accounts. */
  name?: string;
  /** The most bytes of a request's body (default 1 MiB, the server's limit; at least 1,024). */
  maximumRequestBytes?: number;
}

/** A sync made by `createSync`. Every call that changes a record waits for `ready`, changes the
 * view at once and stores the change in one IndexedDB transaction before it resolves; it rejects
 * with SiwaError `invalid_change` (a record the declaration does not allow, or a collection it does
 * not declare: nothing recorded) or `storage` (not stored: the view is what is stored). */
export interface Sync {
  /** Resolves once the stored state is read; rejects with SiwaError `storage` when it cannot be. */
  readonly ready: Promise<void>;
  /** This device's id in "latest wins" stamps and counters (`d-` and 16 hex digits), made once and
   * kept; null until `ready`. */
  readonly deviceId: string | null;
  /** The collections of the declaration, as parsed (internal shapes). */
  readonly collections: object[];
  /** Whether local changes wait for the server. */
  readonly hasPendingChanges: boolean;
  /** Whether changes the server refused for good are set aside (see `requeueRefusedChanges`). */
  readonly hasRefusedChanges: boolean;
  /** The whole local view, made anew at each call. */
  view(): SyncView;
  /** A declared collection's records, deleted ones left out, in order of key. */
  records(collection: string): SyncRecord[];
  /** One record of a declared collection by its key fields; null when unknown or deleted. */
  record(collection: string, keys: SyncRecord): SyncRecord | null;
  /** Saves the whole record: a "latest wins" field that changed is stamped now by this device (one
   * left out or null is set to no value), a counter given as a larger total counts the difference as
   * this device's, a deleted record is restored. */
  save(collection: string, record: SyncRecord): Promise<void>;
  /** As `save`, for the fields given only; the others stay as they are. */
  update(collection: string, record: SyncRecord): Promise<void>;
  /** Deletes a record (only its key fields count); `invalid_change` when the collection's
   * declaration has no `deletion`. */
  delete(collection: string, record: SyncRecord): Promise<void>;
  /** Adds `amount` (an integer, 1 by default, at least 1) to this device's count in the counter
   * `field`; `invalid_change` when `field` is not a counter or `amount` is below 1. */
  increment(collection: string, record: SyncRecord, field: string, amount?: number): Promise<void>;
  /** Records a lesson's progress (the built-in model). */
  recordLesson(lesson: LessonProgress): Promise<void>;
  /** Records an achievement's state (the built-in model). */
  recordAchievement(achievement: AchievementProgress): Promise<void>;
  /** Records the profile (the built-in model). */
  recordProfile(profile: SyncProfile): Promise<void>;
  /** Calls `listener(view)` after every change of the view, local, from the server or from another
   * tab; returns the function that unsubscribes. */
  subscribe(listener: (view: SyncView) => void): () => void;
  /** Sends the queue and fetches what changed, in as many requests as needed (one at a time: a call
   * while one runs gets the same promise). Rejects with SiwaError `offline` (everything stays
   * queued), `signed_out`, the server's code and status, or, after the rest was sent, the refusal of
   * a change set aside (400 `invalid_request`, or 413 `payload_too_large` for a record too large to
   * go alone; after a 413 of several records the sync sends smaller requests instead). */
  sync(): Promise<void>;
  /** Queues the changes the server refused again, for the next sync. */
  requeueRefusedChanges(): Promise<void>;
  /** Starts the loop: a sync now, after each local change, on the browser's `online` event and every
   * `interval` ms (60,000); after a failure it waits `initialDelay` ms (1,000), doubling up to
   * `maximumDelay` (300,000), each with 20 % jitter. Stops at `stop()`, on a sign-out of the client,
   * or when the server answers 401. A second call while it runs does nothing. */
  start(options?: { interval?: number; initialDelay?: number; maximumDelay?: number }): void;
  /** Stops the loop (a sync in flight finishes). */
  stop(): void;
  /** Forgets the view, the queue, the changes set aside and the cursor (another person signs in on
   * this browser); the device keeps its id. */
  reset(): Promise<void>;
  /** Stops the loop and closes the storage. */
  close(): void;
}

/** What createSync needs of the client: its authorized fetch, and its events (to stop on sign-out). */
export interface SyncTransport {
  /** Sends `POST /sync` with the session (a `Client`'s `fetch`). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The client's events: a `signedOut` stops `start`'s loop. */
  subscribe?(listener: (event: { type: string }) => void): () => void;
}

/** A sync of the built-in model and the declared collections through `client.fetch`, its state in
 * IndexedDB. Throws an Error whose `problems` list every problem of a declaration the server would
 * refuse too. */
export function createSync(client: SyncTransport, options?: SyncOptions): Sync;

/** The merge rules and codec as pure functions (Node too). Values and records are internal shapes. */
export const syncRules: {
  /** Orders two strings by their Unicode scalars, as Swift does: negative, 0 or positive. */
  compareStrings(a: string, b: string): number;
  /** Whether value `a` comes before `b` in the total order of values (`SyncValue.precedes`). */
  precedes(a: unknown, b: unknown): boolean;
  /** Two values of one field merged by `rule`; `order` is an enum's cases, for `forward`. */
  mergeValues(a: unknown, b: unknown, rule: string, order?: string[]): unknown;
  /** Two states of one record of `collection` merged field by field; throws for different keys. */
  mergeRecords(collection: object, a: object, b: object): object;
  /** Whether the latest change to a record deleted it. */
  isDeleted(record: object): boolean;
  /** A declaration checked as the server checks it; throws an Error whose `problems` list them all. */
  parseDeclaration(declaration: object | string): { collections: object[]; limits: object };
  /** The built-in model's collections: `progress`, `achievements`, `profile`. */
  builtInCollections(): object[];
  /** A record from its JSON, within the declaration's bounds when `checked` (true by default), by
   * type only otherwise; throws an Error whose `path` names the member. */
  readRecord(collection: object, json: object | string, options?: { checked?: boolean; path?: string }): object;
  /** A record as JSON text, byte for byte as the server writes it. */
  writeRecord(collection: object, record: object): string;
  /** The body of `POST /sync` of these records' texts, by collection name. */
  writeRequest(declaredCollections: object[], cursor: string | null, records: Record<string, string[]>): string;
  /** An answer of `POST /sync` read as SIWAKit reads it (collections not declared are skipped). */
  readAnswer(
    declaredCollections: object[],
    answer: object | string,
  ): { cursor: string; more: boolean; resync: boolean; items: { collection: string; record: object }[] };
  /** The key of a record (its key fields' values) as one string. */
  key(values: unknown[]): string;
};

// ===== End of sync =====
