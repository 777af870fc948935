#!/usr/bin/env bash
# The operator's `siwa admin` against the stack's database, each command as an operator runs it:
# find a user by email, id and sub; show them (Apple's real-user signal, sessions, synced items);
# disable (their access token gets 401 at /auth/me and /sync at once, a new sign-in 403
# user_disabled) and enable (sign-in works again); end one session; the user's own export and the
# operator's, holding none of the test's tokens, codes or nonces; the audit log naming the
# operator for every read and change (find, show, export among them), also from a root shell
# without sudo or a login session; a user named by id, Apple sub or email; delete.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

ADMIN="Authorization: Bearer $(cat "$E2E_APPLE_ADMIN_SECRET_FILE")"
# The tokens, codes and nonces this check makes are those remembered from here on.
first_secret=$(($(wc -l <"$SECRETS" 2>/dev/null || echo 0) + 1))
signed_in_user admin "\"realUserStatus\":2"
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' \
    -d '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"l1","status":"completed","score":80,"earnedXp":50,"completedAt":1700000000000}]}'
expect_status 200 "a sync"
email=admin.notify@example.com

for query in "$email" "$USER_ID" "$SUB"; do
    found=$(siwa admin find "$query" --json)
    [ "$(json 0.id <<<"$found")" = "$USER_ID" ] || fail "siwa admin find $query: $found"
done
siwa admin find nobody@example.com | grep -q "no user matches" || fail "siwa admin find of nobody"
out=$(siwa admin show nobody@example.com 2>&1) && fail "siwa admin show of nobody succeeded: $out"
grep -q "no user nobody@example.com" <<<"$out" || fail "siwa admin show of nobody: $out"
shown=$(siwa admin show "$SUB")
grep -q "real user: likely real" <<<"$shown" && grep -q "synced: 1 lesson(s)" <<<"$shown" && grep -q "sessions: 1 active" <<<"$shown" \
    || fail "siwa admin show: $shown"
pass "siwa admin find by email, id and sub; show (by sub; nobody: exit 1) has Apple's real-user signal (likely real), the session and the synced lesson"

siwa admin disable "$email" --reason "e2e check" | grep -q "disabled user $USER_ID; 1 session(s) ended" || fail "siwa admin disable"
request GET /auth/me -H "$(bearer "$ACCESS")"
expect_status 401 "a disabled user's access token at /auth/me"
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' -d '{"cursor":null}'
expect_status 401 "a disabled user's access token at /sync"
nonce="nonce-admin-$RANDOM$RANDOM"
apple_sign_in "$APPLE_USER" com.example.siwa "$nonce"
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"$nonce\"}"
expect_status 403 "a disabled user's sign-in"
[ "$(json error <<<"$BODY")" = user_disabled ] || fail "a disabled user's sign-in: $BODY"
siwa admin show "$USER_ID" | grep -q "^DISABLED since .*: e2e check" || fail "siwa admin show of a disabled user"
siwa admin enable "$USER_ID" | grep -q "enabled user $USER_ID" || fail "siwa admin enable"
nonce="nonce-admin-$RANDOM$RANDOM"
apple_sign_in "$APPLE_USER" com.example.siwa "$nonce"
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"$nonce\"}"
expect_status 200 "an enabled user's sign-in"
pass "siwa admin disable: the access token gets 401 at /auth/me and /sync at once, sign-in 403 user_disabled; enable: sign-in works"

request GET /auth/account/export -H "$(bearer "$ACCESS")"
expect_status 200 "the user's export"
expect_header 'content-disposition: attachment; filename="account-' "the export's download name"
[ "$(json user.id <<<"$BODY")" = "$USER_ID" ] && [ "$(json sync.progress.0.lessonId <<<"$BODY")" = l1 ] || fail "the export: $BODY"
own=$BODY
# From a root shell (or whoever runs the check) with neither sudo's SUDO_USER nor a login session
# of another user: the operator is the account itself.
operator=$(id -un)
login=$(cat /proc/self/loginuid 2>/dev/null || echo 4294967295)
if [ "$login" != 4294967295 ] && [ "$(id -nu "$login")" != "$operator" ]; then operator="$(id -nu "$login") (as $operator)"; fi
(unset SUDO_USER && siwa admin export "$SUB" -o "$E2E_TMP/admin_export.json" >/dev/null) || fail "siwa admin export by sub"
siwa admin audit --user "$email" --limit 5 | grep "admin_export" | grep -qF "{\"operator\":\"$operator\"}" \
    || fail "siwa admin audit --user after the export does not show it naming $operator: $(siwa admin audit --user "$USER_ID" --limit 5)"
[ "$(stat -c %a "$E2E_TMP/admin_export.json")" = 600 ] || fail "the operator's export file is not 0600"
tail -n "+$first_secret" "$SECRETS" | grep -v -e '@' -e '^$' >"$E2E_TMP/admin_secrets"
for export in "$own" "$(cat "$E2E_TMP/admin_export.json")"; do
    found=$(grep -F -o -f "$E2E_TMP/admin_secrets" <<<"$export" | head -1 || true)
    [ -z "$found" ] || fail "an export holds a token, code or nonce: ${found:0:16}…"
done
pass "GET /auth/account/export and siwa admin export (0600) hold the user and the synced lesson, and none of the $(wc -l <"$E2E_TMP/admin_secrets") tokens, codes and nonces"

session=$(siwa admin show "$USER_ID" --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin)["sessions"] if "revokedAt" not in s][0])')
siwa admin revoke-session "$session" | grep -q "revoked session $session" || fail "siwa admin revoke-session"
request GET /auth/me -H "$(bearer "$ACCESS")"
expect_status 401 "the access token of a session an operator ended"
audit=$(siwa admin audit --user "$USER_ID" --limit 20 --json)
for action in admin_find admin_show admin_disable admin_enable admin_export admin_revoke_session; do
    grep "\"type\":\"$action\"" <<<"$audit" | grep -q "\"operator\": *\"$operator" || fail "no $action naming $operator: $audit"
done
siwa admin delete "$USER_ID" | grep -q "deleted user $USER_ID" || fail "siwa admin delete"
siwa admin show "$USER_ID" 2>/dev/null && fail "siwa admin show of a deleted user succeeded"
siwa admin audit --limit 50 --json | grep "\"type\":\"admin_delete\"" | grep -q "\"userId\":\"$USER_ID\"" || fail "no admin_delete in the log"
pass "siwa admin revoke-session ends it at once; audit shows find, show, disable, enable, export (by sub, without SUDO_USER) and revoke-session naming $operator; delete, then show exits 1"

# `sudo siwa admin` as on an installed host, without installing anything: as root with nothing of
# siwa's in the environment, siwa reads /etc/siwa/siwa.env and gives up root for the siwa user's
# rights (OperatorEnvironment), here in a mount namespace of its own whose /etc is a copy holding a
# siwa user and the /etc/siwa that `siwa setup` writes (a database of its own on the stack's MariaDB).
# The audit events name the operator as the command was started (the sudo user; root from a root
# shell without sudo), never the siwa user it then runs as.
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
    NS=$E2E_TMP/admin-ns
    rm -rf "$NS" && mkdir -p "$NS" && cp -a /etc "$NS/etc" && rm -rf "$NS/etc/siwa"
    grep -q '^siwa:' "$NS/etc/passwd" || {
        echo 'siwa:x:64998:64998:siwa:/nonexistent:/usr/sbin/nologin' >>"$NS/etc/passwd"
        echo 'siwa:x:64998:' >>"$NS/etc/group"
    }
    install -d -o root -g "$(awk -F: '$1 == "siwa" { print $4 }' "$NS/etc/passwd")" -m 0750 "$NS/etc/siwa"
    chmod o+x "$E2E_TMP/db"
    in_ns() { unshare -m bash -c 'mount --bind "$0" /etc && exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"' "$NS/etc" "$@"; }
    out=$(in_ns "$E2E_BIN" setup --public-url https://localhost:9 --team-id "$(sed -n 's/^SIWA_APPLE_TEAM_ID=//p' "$E2E_ENV")" \
        --key-id "$(sed -n 's/^SIWA_APPLE_KEY_ID=//p' "$E2E_ENV")" --p8 "$(sed -n 's/^SIWA_APPLE_PRIVATE_KEY_FILE=//p' "$E2E_ENV")" \
        --bundle-ids com.example.siwa --db-socket "$E2E_TMP/db/mysql.sock" --db-name siwa_admin_ns --db-user siwa_admin_ns \
        --db-admin-socket "$E2E_TMP/db/mysql.sock" --migrations-dir "$(dirname "$0")/../../sql" --socket-path "$NS/siwa.sock" </dev/null 2>&1) \
        || fail "siwa setup in the namespace: $out"
    mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot siwa_admin_ns -e "INSERT INTO users (id) VALUES (7);
        INSERT INTO user_emails (user_id, address, is_private_relay, verified) VALUES (7, 'root.shell@example.com', 0, 1)"
    root_operator=root
    if [ "$login" != 4294967295 ] && [ "$(id -nu "$login")" != root ]; then root_operator="$(id -nu "$login") (as root)"; fi
    in_ns "$E2E_BIN" admin export root.shell@example.com >/dev/null || fail "siwa admin export from a root shell"
    in_ns SUDO_USER=alice "$E2E_BIN" admin show 7 >/dev/null || fail "sudo siwa admin show"
    # SUDO_USER is only an environment variable: one that is not a user name is passed over.
    in_ns SUDO_USER="$(printf 'mallory\033[2K%0100d' 0)" "$E2E_BIN" admin show 7 >/dev/null || fail "siwa admin show, odd SUDO_USER"
    audit=$(in_ns "$E2E_BIN" admin audit --user root.shell@example.com --limit 5 2>&1) || fail "siwa admin audit from a root shell: $audit"
    grep "admin_export" <<<"$audit" | grep -qF "{\"operator\":\"$root_operator\"}" \
        && grep "admin_show" <<<"$audit" | grep -qF '{"operator":"alice (as root)"}' \
        && [ "$(grep -c "admin_show.*{\"operator\":\"$root_operator\"}" <<<"$audit")" = 1 ] && ! grep -q mallory <<<"$audit" \
        || fail "the audit events of a root shell's export, sudo's show and a show with an odd SUDO_USER: $audit"
    pass "siwa admin run as root reads /etc/siwa/siwa.env and runs as siwa (in a mount namespace with a copy of /etc): the export from a root shell without sudo is recorded naming $root_operator, sudo's show naming alice (as root), never siwa; a SUDO_USER that is no user name is passed over"
else
    echo "  skipped: siwa admin as root on an installed host needs root and unshare"
fi

# One fact, one time: 50 new people's creation times, and their sessions', are the same value in
# every answer that gives them (the export in milliseconds, the others in seconds rounded down).
out=$(python3 "$(dirname "$0")/one_time.py" 50 2>&1) || fail "times that differ: $out"
pass "$out"
