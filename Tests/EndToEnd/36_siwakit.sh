#!/usr/bin/env bash
# SIWAKit, the app's half, through nginx and TLS against the Apple ID emulator: two devices of
# one person (each run of siwakit-e2e is one launch of the app, its session and sync state in its
# own directory) sign in; both change progress while siwa is stopped, and converge to the server's
# merged state once it is back; revoking one device's session from the other signs it out at its
# next call; deleting the account from one signs the other out. And an app that trusts the stack's
# certificate through DevelopmentTransport, in one launch without any namespace: sign-in, a typed
# call to the app's backend, a sync, a refresh and sign-out.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"
. "$(dirname "$0")/siwakit.sh"
PHONE=$E2E_TMP/siwakit/phone IPAD=$E2E_TMP/siwakit/ipad

# --- Both devices sign in; the phone gets Apple's first authorization with the name.
new_apple_user "kit.e2e@example.com" Kit Appleseed
phone_user=$(kit "$PHONE" sign-in "$APPLE_USER" "Kit's iPhone")
ipad_user=$(kit "$IPAD" sign-in "$APPLE_USER" "Kit's iPad")
[ "$phone_user" = "$ipad_user" ] || fail "two devices of one person got two users: $phone_user $ipad_user"
[ "$(sql "SELECT first_name FROM users WHERE id = $phone_user")" = Kit ] || fail "the first authorization's name was not stored"
[ "$(stat -c %a "$PHONE/session")" = 600 ] || fail "the session file is not 0600"
[ "$(kit "$PHONE" me)" = "$phone_user" ] && [ "$(kit "$IPAD" me)" = "$phone_user" ] || fail "me after sign-in"
pass "two SIWAKit devices sign in as one user (the name stored, the session kept in a 0600 file across launches)"

# --- Changes on both while siwa is stopped; both converge once it is back.
kit "$PHONE" lesson stoicism l1 in_progress 10 5 >/dev/null
[ "$(kit "$PHONE" sync)" = synced ] || fail "the first sync"
stop_pidfile "$E2E_TMP/siwa.pid" 30
kit "$PHONE" lesson stoicism l1 completed 60 20 1795000000000 >/dev/null
kit "$PHONE" achievement first-steps 3 false >/dev/null
kit "$PHONE" profile 100 2 3 2026-11-20 >/dev/null
kit "$IPAD" lesson stoicism l1 in_progress 80 10 >/dev/null
kit "$IPAD" lesson zen l2 completed 40 40 1795000500000 >/dev/null
kit "$IPAD" achievement first-steps 5 true >/dev/null
kit "$IPAD" profile 90 3 1 2026-11-21 >/dev/null
[ "$(kit "$PHONE" sync)" = offline ] && [ "$(kit "$IPAD" sync)" = offline ] || fail "a sync while siwa is stopped did not fail as offline"
start_siwa "$E2E_BIN" "$E2E_ENV" "$E2E_TMP/siwa.log" "$E2E_TMP/siwa.pid"
for device in "$PHONE" "$IPAD" "$PHONE"; do [ "$(kit "$device" sync)" = synced ] || fail "a sync after siwa is back"; done
phone=$(kit "$PHONE" snapshot) ipad=$(kit "$IPAD" snapshot) server=$(kit "$PHONE" server-state)
[ "$phone" = "$ipad" ] || fail "the devices did not converge: phone $phone, iPad $ipad"
[ "$phone" = "$server" ] || fail "the devices differ from the server: devices $phone, server $server"
python3 - "$server" <<'PY' || fail "the merged state is not the merge of both devices' changes: $server"
import json, sys
state = json.loads(sys.argv[1])
lessons = {(l["beliefSystemID"], l["lessonID"]): l for l in state["lessons"]}
l1, l2 = lessons[("stoicism", "l1")], lessons[("zen", "l2")]
assert (l1["status"], l1["score"], l1["earnedXP"], l1["completedAt"]) == (2, 80, 20, 1795000000000), l1
assert l2["status"] == 2 and l2["score"] == 40, l2
[a] = state["achievements"]
assert (a["progress"], a["completed"]) == (5, True), a
p = state["profile"]
assert (p["totalXP"], p["currentLevel"], p["streakDays"], p["lastActiveDate"]) == (100, 3, 1, "2026-11-21"), p
PY
pass "changes made on both devices while siwa was stopped converge after it is back: both devices equal the server's merged state"

# --- nginx reloaded 8 times while both devices sync, refresh and call /auth/me in a loop (each one
# launch, its connections kept alive): no error reaches either. nginx closes its kept-alive
# connections on a reload, and a request sent on one as it closes gets no answer: SIWAKit sends
# such a request once more when a second arrival means the same (sync, refresh, GET).
STOP=$E2E_TMP/siwakit/stop
rounds() { local n; n=$(grep -c '^ok' "$E2E_TMP/siwakit/loop.$1.out" 2>/dev/null) || true; echo "${n:-0}"; }
# Waits (at most 30 s) until both devices have done 40 more rounds than they had.
progress() {
    local phone=$(($(rounds phone) + 40)) ipad=$(($(rounds ipad) + 40)) deadline=$((SECONDS + 30))
    until [ "$(rounds phone)" -ge $phone ] && [ "$(rounds ipad)" -ge $ipad ]; do
        [ $SECONDS -lt $deadline ] || fail "the devices stopped making progress: $(cat "$E2E_TMP"/siwakit/loop.*.err)"
        sleep 0.05
    done
}
rm -f "$STOP"
for device in phone ipad; do
    # Both over HTTP/2, as apps reach nginx (one connection each, which a reload ends with GOAWAY).
    # Over HTTP/1.1 a fresh clone's run once saw a request hang for 30 s and more after a reload,
    # unexplained so far: not checked here until it is.
    dir=$PHONE
    [ $device = ipad ] && dir=$IPAD
    launch "$dir" loop "$STOP" >"$E2E_TMP/siwakit/loop.$device.out" 2>"$E2E_TMP/siwakit/loop.$device.err" &
    eval "${device}_loop=$!"
done
progress
for reload in 1 2 3 4 5 6 7 8; do
    start_nginx "$E2E_TMP/nginx"
    progress
done
touch "$STOP"
wait "$phone_loop" && wait "$ipad_loop" || fail "an error reached a device through nginx's reloads: $(cat "$E2E_TMP"/siwakit/loop.*.err)"
total=$(($(rounds phone) + $(rounds ipad)))
pass "nginx reloaded 8 times while two devices ran $total syncs, with a refresh and a /auth/me every 200 ms: no error reached either"

# --- Revoking the phone's session from the iPad signs the phone out at its next call.
phone_session=$(kit "$IPAD" sessions | awk '$2 == "other" && $3 == "Kit'"'"'s" && $4 == "iPhone" {print $1}')
[ -n "$phone_session" ] || fail "the iPad does not list the phone's session: $(kit "$IPAD" sessions)"
kit "$IPAD" revoke "$phone_session"
[ "$(kit "$PHONE" me)" = "signed-out sessionEnded" ] || fail "the revoked phone is not signed out"
[ ! -e "$PHONE/session" ] || fail "the revoked phone kept its session file"
[ "$(kit "$IPAD" me)" = "$phone_user" ] || fail "the iPad lost its session"
pass "revoking the phone's session from the iPad signs the phone out at its next call; the iPad stays signed in"

# --- Deleting the account from the phone signs the iPad out.
[ "$(kit "$PHONE" sign-in "$APPLE_USER" "Kit's iPhone")" = "$phone_user" ] || fail "signing the phone in again"
[ "$(kit "$PHONE" delete-account)" = "signed-out accountDeleted" ] || fail "delete-account"
[ "$(kit "$IPAD" me)" = "signed-out sessionEnded" ] || fail "the iPad is still signed in after the account was deleted"
[ "$(sql "SELECT COUNT(*) FROM users WHERE id = $phone_user")" = 0 ] || fail "the user is still stored"
pass "deleting the account from the phone signs the iPad out at its next call; the user is gone"

# --- DevelopmentTransport: the documented way to trust the stack's certificate, no namespace. One
# launch signs in, calls the example backend with the typed call, syncs, refreshes and signs out.
new_apple_user "kit.walk@example.com" Walk Through
out=$(E2E_TRUST_CERTIFICATE=$E2E_TMP/tls/cert.pem "$KIT" "$E2E_TMP/siwakit/walk" walkthrough "$APPLE_USER" "Walk's iPhone" 2>"$E2E_TMP/siwakit.err") \
    || fail "the walkthrough through DevelopmentTransport failed: $(cat "$E2E_TMP/siwakit.err")"
walk_user=$(sed -n 's/^signed-in //p' <<<"$out")
expected="signed-in $walk_user
whoami $walk_user this-session
synced 1 lesson(s)
after-refresh $walk_user
events signedIn tokenRefreshed signedOut(signedOut)"
[ -n "$walk_user" ] && [ "$out" = "$expected" ] || fail "the walkthrough printed
$out
instead of
$expected"
[ "$(sql "SELECT COUNT(*) FROM sessions WHERE user_id = $walk_user AND revoked_at IS NULL")" = 0 ] \
    || fail "the walkthrough's session is still valid after sign-out"
pass "DevelopmentTransport trusts the stack's certificate: sign-in, GET /example/whoami decoded, a sync, a refresh and sign-out in one launch, the events exactly signedIn, tokenRefreshed, signedOut"

# --- Without it, URLSession refuses the self-signed certificate: the trust came from the option.
# (The first request is the emulator's sign-in, on the same certificate.)
if out=$("$KIT" "$E2E_TMP/siwakit/untrusted" sign-in "$APPLE_USER" "Untrusted" 2>&1); then
    fail "a sign-in through URLSession trusted the self-signed certificate: $out"
fi
grep -qiE "certificate|SSL|-1202" <<<"$out" || fail "the refusal is not the certificate's: $out"
pass "without DevelopmentTransport (and outside the namespace), URLSession refuses the self-signed certificate"

# --- BrowserSignIn: an app that signs in through the browser with PKCE (the browser played by
# curl), its session kept as a native sign-in's.
coproc BROWSER_APP { E2E_TRUST_CERTIFICATE=$E2E_TMP/tls/cert.pem "$KIT" "$E2E_TMP/siwakit/desktop" browser-sign-in desktop \
    http://127.0.0.1:53690/callback 2>"$E2E_TMP/siwakit.err"; }
read -r -t 30 start <&"${BROWSER_APP[0]}" || fail "siwakit-e2e printed no start URL: $(cat "$E2E_TMP/siwakit.err")"
[[ "$start" == "$E2E_URL/auth/app/start?client_id=desktop&"*"code_challenge_method=S256"* ]] || fail "the start URL: $start"
new_apple_user "browser.kit@example.com" Browser Kit
browser_sign_in "$start" "$APPLE_USER"
[[ "$BROWSER_LOCATION" == "http://127.0.0.1:53690/callback?code="* ]] || fail "the browser's way back: $BROWSER_LOCATION"
echo "$BROWSER_LOCATION" >&"${BROWSER_APP[1]}"
read -r -t 30 desktop_user <&"${BROWSER_APP[0]}" || fail "BrowserSignIn did not complete: $(cat "$E2E_TMP/siwakit.err")"
wait "$BROWSER_APP_PID" || fail "siwakit-e2e browser-sign-in: $(cat "$E2E_TMP/siwakit.err")"
[ "$(sql "SELECT first_name FROM users WHERE id = $desktop_user")" = Browser ] || fail "the browser sign-in's user: $desktop_user"
[ "$(E2E_TRUST_CERTIFICATE=$E2E_TMP/tls/cert.pem "$KIT" "$E2E_TMP/siwakit/desktop" me)" = "$desktop_user" ] \
    || fail "the browser sign-in's session was not kept"
pass "BrowserSignIn: the start URL opened in the browser (curl), the code it came back with exchanged with the verifier, the session kept for the next launch"

