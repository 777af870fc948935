// Types of siwa.js (the app's half of siwa for the web). Guide: docs/WEB.md.

// ===== Sign-in and session =====

// ===== End of sign-in and session =====



// ===== Sync =====

// ===== End of sync =====
