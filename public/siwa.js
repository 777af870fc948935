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

// ===== End of sign-in and session =====



// ===== Sync =====

// ===== End of sync =====
