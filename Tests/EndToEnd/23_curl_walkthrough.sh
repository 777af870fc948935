#!/usr/bin/env bash
# The native-flow walkthrough with curl of docs/API.md, run exactly as printed there, twice in a row
# against this stack (its URLs and admin secret given through the variables the walkthrough reads):
# sign-in, me, refresh, sync, sessions, logout and deletion each answer as docs/API.md says. Then
# with a client id the emulator does not know (CLIENT_ID, as for a host set up otherwise): the
# emulator's own refusal is printed as text, never a Python traceback.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

curl_walkthrough "$E2E_TMP/walkthrough.sh"
for run in 1 2; do
    out=$(cd "$E2E_TMP" && SIWA=$E2E_URL APPLE=$E2E_APPLE_URL APPLE_ADMIN_SECRET_FILE=$E2E_APPLE_ADMIN_SECRET_FILE \
        bash "$E2E_TMP/walkthrough.sh" 2>&1) || fail "run $run exited with an error: $out"
    lines=()
    while IFS= read -r line; do lines+=("$line"); done <<<"$out"
    [ "${#lines[@]}" = 7 ] || fail "run $run printed ${#lines[@]} lines, not 7: $out"
    python3 - "${lines[@]}" <<'PY' || fail "run $run: $out"
import json, sys
signed_in, me, synced, sessions = (json.loads(line) for line in sys.argv[1:5])
assert signed_in["isNewUser"] is True and signed_in["expiresIn"] == 900 and signed_in["user"]["firstName"] == "Ada", signed_in
assert me["user"]["id"] == signed_in["user"]["id"], me
assert synced["cursor"] and synced["progress"][0]["lessonId"] == "l1", synced
assert [s["device"] for s in sessions["sessions"]] == ["curl"], sessions
PY
    [ "${lines[4]}" = "logout: 204" ] && [ "${lines[5]}" = "me after logout: 401" ] && [ "${lines[6]}" = "delete: 204" ] \
        || fail "run $run: ${lines[*]:4}"
done
pass "the curl walkthrough of docs/API.md, pasted twice: sign-in (a new user each time), me, refresh, sync, sessions, logout 204 then 401, deletion 204"

out=$(cd "$E2E_TMP" && SIWA=$E2E_URL APPLE=$E2E_APPLE_URL APPLE_ADMIN_SECRET_FILE=$E2E_APPLE_ADMIN_SECRET_FILE CLIENT_ID=com.example.unknown \
    bash "$E2E_TMP/walkthrough.sh" 2>&1) || true
grep -q 'no identityToken in the answer: {"error":"invalid_request","message":"unknown clientId com.example.unknown"}' <<<"$out" \
    || fail "the walkthrough with an unknown client id does not show the emulator's answer: $out"
grep -q "Traceback\|KeyError" <<<"$out" && fail "the walkthrough with an unknown client id printed a traceback: $out"
pass "the walkthrough with CLIENT_ID the emulator does not know prints the emulator's answer (unknown clientId), no traceback"

