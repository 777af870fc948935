#!/usr/bin/env bash
# siwa.js's sync (createSync over createClient) in Chromium (web_sync.py) with the example
# declaration: changes made offline survive a reload in IndexedDB and sync once back; a second tab's
# change reaches the first; a resync makes the view again and keeps the unsent change; then the
# browser and a SIWAKit device edit the same records offline (a "latest wins" note, a maximum, a
# counter, a set, a deletion against an edit each way) and both converge to the server's state.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"
. "$(dirname "$0")/siwakit.sh"
command -v chromium >/dev/null || fail "chromium is not installed (scripts/lib.sh installs it)"
KIT_DIR=$E2E_TMP/web_sync/kit
mkdir -p "$KIT_DIR"

new_apple_user "web.sync.e2e@example.com" Web Sync
kit "$KIT_DIR" sign-in "$APPLE_USER" "kit-phone" >/dev/null
apple_sign_in "$APPLE_USER" com.example.siwa nonce-web-sync
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-web-sync\",\"device\":\"browser\"}"
expect_status 200 "the browser's session"
python3 "$(dirname "$0")/web_sync.py" "$BODY" "$KIT_DIR" || fail "siwa.js's sync in the browser"
