// Types of siwa.js (the app's half of siwa for the web). Guide: docs/WEB.md.

// ===== Sign-in and session =====

// ===== End of sign-in and session =====



// ===== Sync =====

/** A record of a declared collection as the app sees it: its key fields and fields, "latest wins"
 * values plain, a counter its total, a set an array; no value is `null`. */
export type SyncRecord = Record<string, string | number | boolean | string[] | null>;

/** A lesson's progress (`progress` of the built-in model). */
export interface LessonProgress {
  beliefSystemId: string;
  lessonId: string;
  status: "not_started" | "in_progress" | "completed";
  score?: number;
  earnedXp?: number;
  /** Unix milliseconds, or null. */
  completedAt?: number | null;
}

/** An achievement's state (`achievements` of the built-in model). */
export interface AchievementProgress {
  achievementId: string;
  progress?: number;
  completed?: boolean;
  completedAt?: number | null;
}

/** The profile (`profile` of the built-in model). */
export interface SyncProfile {
  totalXp?: number;
  currentLevel?: number;
  streakDays?: number;
  /** `YYYY-MM-DD`, or null. */
  lastActiveDate?: string | null;
}

/** The local view: the server's state as last seen, merged with this device's changes. */
export interface SyncView {
  profile: Required<SyncProfile> | null;
  lessons: Required<LessonProgress>[];
  achievements: Required<AchievementProgress>[];
  /** Each declared collection's records, deleted ones left out, in order of key. */
  collections: Record<string, SyncRecord[]>;
}

/** Where the state is kept: IndexedDB (the default in a browser), memory only, or your own. `write`
 * applies a change's operations in order, in one transaction, merging records with `mergeText` into
 * what is stored, and resolves to the stored text of every record it touched. */
export interface SyncStorage {
  load(): Promise<{ meta: Record<string, unknown>; slots: { part: string; collection: string; key: string; text: string }[] }>;
  write(
    ops: object[],
    mergeText: (collection: string, stored: string, change: string) => string,
  ): Promise<{ slots: { part: string; collection: string; key: string; text: string | null }[]; meta: Record<string, unknown> }>;
  /** Called when another tab changed the stored state. */
  onChange?(listener: () => void): void;
  close(): void;
}

/** A storage in memory only (tests, Node, a page that must store nothing); several syncs given the
 * same one share it as tabs share IndexedDB. */
export function createMemoryStorage(): SyncStorage;

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

export interface Sync {
  /** Resolves once the stored state is read. */
  readonly ready: Promise<void>;
  /** This device's id in "latest wins" stamps and counters, made once and kept. */
  readonly deviceId: string | null;
  readonly hasPendingChanges: boolean;
  readonly hasRefusedChanges: boolean;
  view(): SyncView;
  records(collection: string): SyncRecord[];
  record(collection: string, keys: SyncRecord): SyncRecord | null;
  /** Saves the whole record: a "latest wins" field left out or null is set to no value. */
  save(collection: string, record: SyncRecord): Promise<void>;
  /** Saves the fields given only; the others stay as they are. */
  update(collection: string, record: SyncRecord): Promise<void>;
  delete(collection: string, record: SyncRecord): Promise<void>;
  increment(collection: string, record: SyncRecord, field: string, amount?: number): Promise<void>;
  recordLesson(lesson: LessonProgress): Promise<void>;
  recordAchievement(achievement: AchievementProgress): Promise<void>;
  recordProfile(profile: SyncProfile): Promise<void>;
  subscribe(listener: (view: SyncView) => void): () => void;
  sync(): Promise<void>;
  requeueRefusedChanges(): Promise<void>;
  start(options?: { interval?: number; initialDelay?: number; maximumDelay?: number }): void;
  stop(): void;
  reset(): Promise<void>;
  close(): void;
}

/** What createSync needs of the client: its authorized fetch, and its events (to stop on sign-out). */
export interface SyncTransport {
  fetch(path: string, init?: RequestInit): Promise<Response>;
  subscribe?(listener: (event: { type: string }) => void): () => void;
}

/** A sync of the built-in model and the declared collections through `client.fetch`. */
export function createSync(client: SyncTransport, options?: SyncOptions): Sync;

/** The merge rules and codec as pure functions (Node too). Values and records are internal shapes. */
export const syncRules: {
  compareStrings(a: string, b: string): number;
  precedes(a: unknown, b: unknown): boolean;
  mergeValues(a: unknown, b: unknown, rule: string, order?: string[]): unknown;
  mergeRecords(collection: object, a: object, b: object): object;
  isDeleted(record: object): boolean;
  parseDeclaration(declaration: object | string): { collections: object[]; limits: object };
  builtInCollections(): object[];
  readRecord(collection: object, json: object | string, options?: { checked?: boolean; path?: string }): object;
  writeRecord(collection: object, record: object): string;
  writeRequest(declaredCollections: object[], cursor: string | null, records: Record<string, string[]>): string;
  readAnswer(
    declaredCollections: object[],
    answer: object | string,
  ): { cursor: string; more: boolean; resync: boolean; items: { collection: string; record: object }[] };
  key(values: unknown[]): string;
};

// ===== End of sync =====
