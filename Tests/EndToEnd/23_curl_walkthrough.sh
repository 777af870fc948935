#!/usr/bin/env bash
# The native-flow walkthrough with curl of docs/API.md, run exactly as printed there, twice in a row
# against this stack (its URLs and admin secret given through the variables the walkthrough reads):
# sign-in, me, refresh, sync, sessions, logout and deletion each answer as docs/API.md says.
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
