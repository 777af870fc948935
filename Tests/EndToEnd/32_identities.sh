#!/usr/bin/env bash
# Identities over time, through nginx against the Apple ID emulator:
# - a guest syncs progress, signs in with Apple and keeps it (one user); a second guest signing in
#   with the same Apple ID gets 409 identity_in_use and both users stay as they were; guest
#   creation is rate-limited per address;
# - the older backend mints link tokens (server to server only); a sign-in with one attaches the
#   Apple ID to that external user; a token used twice, expired or unknown, and an external user
#   with another Apple ID, are refused and change nothing;
# - a team transfer with `siwa transfer` on its own siwa instance and database: users of team A
#   with progress, one refused by usermigrationinfo (reported, the others done, done on the next
#   run), the app moved to team B, each user signing in with team-B tokens (with transfer_sub,
#   and after 60 days without) on the same user id with the same progress; second runs change
#   nothing.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

LINK_SECRET=$(cat "$(sed -n 's/^SIWA_LINK_SECRET_FILE=//p' "$E2E_ENV")")
sync() { request POST /sync -H "$(bearer "$1")" -H 'Content-Type: application/json' -d "$2"; }
# The lessons of a full sync, sorted, as one line.
lessons() { sync "$1" '{"cursor":null}'; expect_status 200 "a full sync"; python3 -c 'import json,sys
print(sorted((p["lessonId"], p["status"], p.get("score")) for p in json.load(sys.stdin)["progress"]))' <<<"$BODY"; }
me() { request GET /auth/me -H "$(bearer "$1")"; expect_status 200 "GET /auth/me"; }
new_guest() { # sets GUEST_ACCESS GUEST_ID
    request POST /auth/guest -H 'Content-Type: application/json' -d '{"device":"e2e guest"}'
    expect_status 200 "a guest account"
    GUEST_ACCESS=$(json accessToken <<<"$BODY")
    GUEST_ID=$(json user.id <<<"$BODY")
    remember "$GUEST_ACCESS" "$(json refreshToken <<<"$BODY")"
    [ "$(json user.guest <<<"$BODY")" = true ] && [ "$(json isNewUser <<<"$BODY")" = true ] || fail "the guest's answer: $BODY"
}

# --- Guests.
new_guest
GUEST=$GUEST_ACCESS GUEST_USER=$GUEST_ID
sync "$GUEST" '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"g1","status":"completed","score":9,"earnedXp":30,"completedAt":1000}]}'
expect_status 200 "the guest's sync"
guest_lessons=$(lessons "$GUEST")
new_apple_user guest.upgrade@example.com Gina Guest
UPGRADED_APPLE=$APPLE_USER
apple_sign_in "$UPGRADED_APPLE" com.example.siwa nonce-guest-1
request POST /auth/apple -H 'Content-Type: application/json' -H "$(bearer "$GUEST")" \
    -d "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-guest-1\",\"fullName\":{\"givenName\":\"Gina\"}}"
expect_status 200 "signing in with Apple holding the guest session"
UPGRADED=$(json accessToken <<<"$BODY")
remember "$UPGRADED"
[ "$(json user.id <<<"$BODY")" = "$GUEST_USER" ] || fail "the sign-in landed on user $(json user.id <<<"$BODY"), not the guest $GUEST_USER"
[ "$(json isNewUser <<<"$BODY")" = false ] && [ "$(json user.guest <<<"$BODY")" = false ] || fail "the upgraded user: $BODY"
me "$UPGRADED"
[ "$(json user.id <<<"$BODY")" = "$GUEST_USER" ] && [ "$(json user.firstName <<<"$BODY")" = Gina ] || fail "/auth/me after the upgrade: $BODY"
[ "$(lessons "$UPGRADED")" = "$guest_lessons" ] || fail "the upgraded user's progress: $(lessons "$UPGRADED"), expected $guest_lessons"
[ "$(sql "SELECT COUNT(*) FROM users WHERE id = $GUEST_USER AND guest_since IS NULL")" = 1 ] || fail "the user is still a guest"
pass "a guest synced, signed in with Apple and is one user with the guest's progress ($guest_lessons)"

# The same Apple ID again, holding another guest's session: 409, nothing merged.
new_guest
OTHER_GUEST=$GUEST_ACCESS OTHER_USER=$GUEST_ID
sync "$OTHER_GUEST" '{"cursor":null,"progress":[{"beliefSystemId":"taoism","lessonId":"o1","status":"in_progress","score":2}]}'
expect_status 200 "the second guest's sync"
other_lessons=$(lessons "$OTHER_GUEST")
apple_sign_in "$UPGRADED_APPLE" com.example.siwa nonce-guest-2
request POST /auth/apple -H 'Content-Type: application/json' -H "$(bearer "$OTHER_GUEST")" \
    -d "{\"identityToken\":\"$TOKEN\",\"nonce\":\"nonce-guest-2\"}"
expect_status 409 "an Apple ID of another user, holding a guest session"
[ "$(json error <<<"$BODY")" = identity_in_use ] || fail "the 409's code: $BODY"
me "$OTHER_GUEST"
[ "$(json user.guest <<<"$BODY")" = true ] && [ "$(json user.id <<<"$BODY")" = "$OTHER_USER" ] || fail "the second guest after the 409: $BODY"
[ "$(lessons "$OTHER_GUEST")" = "$other_lessons" ] && [ "$(lessons "$UPGRADED")" = "$guest_lessons" ] || fail "progress moved in the 409"
[ "$(sql "SELECT COUNT(*) FROM apple_identities WHERE user_id IN ($GUEST_USER, $OTHER_USER)")" = 1 ] || fail "identities after the 409"
pass "the same Apple ID with another guest's session: 409 identity_in_use, both users as they were"

# Guest creation is limited per client address (nginx): a burst gets 429 with Retry-After.
limited=""
for _ in $(seq 30); do
    request POST /auth/guest
    [ "$STATUS" = 429 ] && { limited=1; break; }
    expect_status 200 "a guest in the burst"
done
[ -n "$limited" ] || fail "30 guests in a row were never limited"
[ "$(json error <<<"$BODY")" = rate_limited ] && expect_header "Retry-After: 5" "the 429"
pass "guest creation from one address is rate-limited (429 rate_limited, Retry-After: 5)"

# --- Link tokens from the older backend.
mint() { request POST /internal/link-tokens -H "$(bearer "$LINK_SECRET")" -H 'Content-Type: application/json' -d "{\"externalId\":\"$1\"}"; }
mint legacy-42
expect_status 201 "a link token"
LINK=$(json linkToken <<<"$BODY")
remember "$LINK" "$LINK_SECRET"
request POST /internal/link-tokens -H "$(bearer "${LINK_SECRET}x")" -H 'Content-Type: application/json' -d '{"externalId":"legacy-42"}'
expect_status 401 "a wrong link secret"
request POST /internal/link-tokens -H "$(bearer "$LINK_SECRET")" -H "Origin: $E2E_URL" -H 'Content-Type: application/json' -d '{"externalId":"x"}'
expect_status 403 "a link token asked for by a browser"
[ "$(json error <<<"$BODY")" = not_for_browsers ] || fail "the browser's 403: $BODY"
link_sign_in() { # link_sign_in APPLE_USER NONCE LINK
    apple_sign_in "$1" com.example.siwa "$2"
    sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"$2\",\"linkToken\":\"$3\"}"
}
new_apple_user linked.user@example.com Lena Legacy
LINKED_APPLE=$APPLE_USER
link_sign_in "$LINKED_APPLE" nonce-link-1 "$LINK"
expect_status 200 "a sign-in with a link token"
LINKED_USER=$(json user.id <<<"$BODY")
[ "$(json user.externalId <<<"$BODY")" = legacy-42 ] || fail "the linked user: $BODY"
me "$ACCESS"
[ "$(json user.externalId <<<"$BODY")" = legacy-42 ] || fail "/auth/me of the linked user: $BODY"
pass "a link token attaches the Apple ID to the older backend's user legacy-42 (user $LINKED_USER, externalId in /auth/me)"

snapshot() { sql "SELECT id, COALESCE(external_id, '-'), guest_since IS NULL FROM users ORDER BY id; SELECT user_id, sub FROM apple_identities ORDER BY id" | md5sum; }
refused() { # refused STATUS CODE WHAT
    expect_status "$1" "$3"
    [ "$(json error <<<"$BODY")" = "$2" ] || fail "$3: expected $2, got $BODY"
}
before=$(snapshot)
link_sign_in "$LINKED_APPLE" nonce-link-2 "$LINK"
refused 409 link_token_used "the link token used twice"
mint legacy-43
EXPIRED=$(json linkToken <<<"$BODY")
sql "UPDATE link_tokens SET expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE external_id = 'legacy-43'"
new_apple_user late.user@example.com Lars Late
link_sign_in "$APPLE_USER" nonce-link-3 "$EXPIRED"
refused 401 link_token_expired "an expired link token"
link_sign_in "$APPLE_USER" nonce-link-4 "$(openssl rand 32 | base64 | tr '+/' '-_' | tr -d '=')"
refused 401 invalid_link_token "an unknown link token"
mint legacy-42
link_sign_in "$APPLE_USER" nonce-link-5 "$(json linkToken <<<"$BODY")"
refused 409 external_user_linked "an external user who has another Apple ID"
mint legacy-77
link_sign_in "$LINKED_APPLE" nonce-link-6 "$(json linkToken <<<"$BODY")"
refused 409 identity_in_use "an Apple ID of another user, with a link token"
[ "$(snapshot)" = "$before" ] || fail "a refused link changed users or identities"
[ "$(sql "SELECT COUNT(*) FROM link_tokens WHERE external_id IN ('legacy-77') AND used_at IS NULL")" = 1 ] || fail "a refused sign-in used up its link token"
pass "link tokens used twice, expired, unknown, for an external user with another Apple ID, or with another user's Apple ID: 409 or 401 each, nothing changed"

# --- Team transfer, on a siwa of its own (team A, then team B) with its own database.
DIR=$E2E_TMP/transfer
mkdir -p "$DIR"
cleanup() {
    stop_pidfile "$DIR/siwa.pid" 30
    stop_nginx "$DIR/nginx" 2>/dev/null || true
}
trap cleanup EXIT
create_database "$E2E_TMP/db" siwa_transfer siwa "$E2E_TMP/db_password"
APPLE_DIR=$(dirname "$(sed -n 's/^SIWA_APPLE_PRIVATE_KEY_FILE=//p' "$E2E_ENV")")
team_env() { # team_env NAME TEAM KEY_ID KEY_FILE
    grep -vE '^SIWA_(SOCKET_PATH|DB_NAME|APPLE_TEAM_ID|APPLE_KEY_ID|APPLE_PRIVATE_KEY_FILE|APPLE_BUNDLE_IDS|APPLE_SERVICES_ID|APPLE_REDIRECT_URIS|APPLE_APP_CALLBACKS|APP_CLIENTS)=' "$E2E_ENV" >"$DIR/$1.env"
    cat >>"$DIR/$1.env" <<ENV
SIWA_SOCKET_PATH=$DIR/siwa.sock
SIWA_DB_NAME=siwa_transfer
SIWA_APPLE_TEAM_ID=$2
SIWA_APPLE_KEY_ID=$3
SIWA_APPLE_PRIVATE_KEY_FILE=$4
SIWA_APPLE_BUNDLE_IDS=com.example.moving
ENV
}
team_env a TEAMID0001 KEYID00001 "$APPLE_DIR/apple_key.p8"
team_env b TEAMID0002 KEYID00002 "$APPLE_DIR/apple_key_b.p8"
siwa_with_env "$E2E_BIN" "$DIR/a.env" migrate >/dev/null
start_siwa "$E2E_BIN" "$DIR/a.env" "$DIR/siwa.log" "$DIR/siwa.pid"
PORT=$(free_port)
render_nginx "$DIR/nginx" "$PORT" "$DIR/siwa.sock" "$E2E_TMP/tls" "1000r/s"
start_nginx "$DIR/nginx"
export E2E_URL=https://localhost:$PORT
wait_for_health
expect_status 200 "the transfer site's health"
tsql() { mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B siwa_transfer -e "$1"; }
transfer() { # transfer ENV ARGS...: sets OUT and CODE
    CODE=0
    OUT=$(siwa_with_env "$E2E_BIN" "$DIR/$1.env" transfer "${@:2}" --pace-ms 5 2>&1) || CODE=$?
}
moving_sign_in() { # moving_sign_in N: signs in mover N; sets ACCESS, USER_ID, TOKEN_TRANSFER_SUB
    local nonce="nonce-move-$1-$RANDOM$RANDOM"
    apple_sign_in "${MOVERS[$1]}" com.example.moving "$nonce"
    TOKEN_TRANSFER_SUB=$(python3 -c 'import base64,json,sys; p=sys.argv[1].split(".")[1]; print(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))).get("transfer_sub", ""))' "$TOKEN")
    sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"$nonce\"}"
    expect_status 200 "mover $1 signing in"
    USER_ID=$(json user.id <<<"$BODY")
}
MOVERS=() IDS=() PROGRESS=()
for n in 0 1 2; do
    new_apple_user "mover$n@example.com" "Mover$n" Tester
    MOVERS[n]=$APPLE_USER
    moving_sign_in "$n"
    IDS[n]=$USER_ID
    sync "$ACCESS" "{\"cursor\":null,\"progress\":[{\"beliefSystemId\":\"stoicism\",\"lessonId\":\"m$n\",\"status\":\"completed\",\"score\":$((n + 3))}]}"
    expect_status 200 "mover $n's sync"
    PROGRESS[n]=$(lessons "$ACCESS")
done

# The sending team mints transfer_subs; usermigrationinfo refuses mover 1 the first time.
apple POST "/admin/users/${MOVERS[1]}/migration" -H "$ADMIN" -d '{"fail":true}'
transfer a prepare --to-team TEAMID0002
[ "$CODE" = 1 ] && grep -q "done=2 failed=1" <<<"$OUT" && grep -q "failed: identity .* of user ${IDS[1]}: AppleAPIError.invalid_request" <<<"$OUT" \
    || fail "prepare with one refusal (status $CODE): $OUT"
apple POST "/admin/users/${MOVERS[1]}/migration" -H "$ADMIN" -d '{"fail":false}'
transfer a prepare --to-team TEAMID0002
[ "$CODE" = 0 ] && grep -q "done=1 failed=0" <<<"$OUT" && grep -q "minted=3" <<<"$OUT" || fail "prepare again (status $CODE): $OUT"
before=$(tsql "SELECT * FROM apple_transfers ORDER BY identity_id; SELECT * FROM apple_identities ORDER BY id" | md5sum)
transfer a prepare --to-team TEAMID0002
[ "$CODE" = 0 ] && grep -q "done=0 failed=0" <<<"$OUT" || fail "prepare a third time (status $CODE): $OUT"
[ "$(tsql "SELECT * FROM apple_transfers ORDER BY identity_id; SELECT * FROM apple_identities ORDER BY id" | md5sum)" = "$before" ] \
    || fail "a third prepare changed the records"
pass "prepare: mover 1 refused by usermigrationinfo and reported, the others minted; the next run minted it; a third run changed nothing"

# The app moves to team B; siwa now runs with team B's key. Mover 2 is refused by the exchange.
apple POST /admin/transfers -H "$ADMIN" -d '{"clientIds":["com.example.moving"],"toTeam":"TEAMID0002"}'
[ "$APPLE_STATUS" = 200 ] || fail "the emulator's transfer: $APPLE_STATUS $APPLE_BODY"
stop_pidfile "$DIR/siwa.pid" 30
start_siwa "$E2E_BIN" "$DIR/b.env" "$DIR/siwa.log" "$DIR/siwa.pid"
apple POST "/admin/users/${MOVERS[2]}/migration" -H "$ADMIN" -d '{"fail":true}'
transfer b complete
[ "$CODE" = 1 ] && grep -q "done=2 failed=1" <<<"$OUT" && grep -q "of user ${IDS[2]}" <<<"$OUT" || fail "complete with one refusal (status $CODE): $OUT"
apple POST "/admin/users/${MOVERS[2]}/migration" -H "$ADMIN" -d '{"fail":false}'
[ "$(tsql "SELECT COUNT(*) FROM apple_identities WHERE team_id = 'TEAMID0002'")" = 2 ] || fail "team-B identities after complete"

# Each mover signs in with a team-B token carrying transfer_sub: the same user, the same progress
# (mover 2, whom the exchange refused, is matched by the token's transfer_sub).
for n in 0 1 2; do
    moving_sign_in "$n"
    [ -n "$TOKEN_TRANSFER_SUB" ] || fail "mover $n's team-B token has no transfer_sub"
    [ "$USER_ID" = "${IDS[n]}" ] || fail "mover $n landed on user $USER_ID, not ${IDS[n]}"
    [ "$(lessons "$ACCESS")" = "${PROGRESS[n]}" ] || fail "mover $n's progress: $(lessons "$ACCESS")"
done
[ "$(tsql "SELECT COUNT(*) FROM apple_identities WHERE team_id = 'TEAMID0002'")" = 3 ] \
    && [ "$(tsql "SELECT COUNT(*) FROM users")" = 3 ] || fail "users and team-B identities after the sign-ins"
pass "after the transfer each mover signs in with a team-B token (transfer_sub) on the same user with the same progress"

before=$(tsql "SELECT * FROM apple_transfers ORDER BY identity_id; SELECT id, user_id, team_id, sub FROM apple_identities ORDER BY id; SELECT id FROM users" | md5sum)
transfer b complete
[ "$CODE" = 0 ] && grep -q "done=0 failed=0" <<<"$OUT" && grep -q "resolved=3" <<<"$OUT" || fail "complete again (status $CODE): $OUT"
[ "$(tsql "SELECT * FROM apple_transfers ORDER BY identity_id; SELECT id, user_id, team_id, sub FROM apple_identities ORDER BY id; SELECT id FROM users" | md5sum)" = "$before" ] \
    || fail "a second complete changed the records"
OUT=$(siwa_with_env "$E2E_BIN" "$DIR/b.env" transfer status 2>&1) || fail "transfer status: $OUT"
grep -q "TEAMID0001 -> TEAMID0002: identities=3 minted=3 resolved=3 failing=0" <<<"$OUT" || fail "transfer status: $OUT"
pass "a second complete changed nothing; status: $OUT"

# Sixty days later tokens carry no transfer_sub: the movers still land on their users.
apple POST /admin/transfers/age -H "$ADMIN" -d '{"days":61}'
for n in 0 1 2; do
    moving_sign_in "$n"
    [ -z "$TOKEN_TRANSFER_SUB" ] || fail "mover $n's token still carries transfer_sub after 61 days"
    [ "$USER_ID" = "${IDS[n]}" ] && [ "$(lessons "$ACCESS")" = "${PROGRESS[n]}" ] || fail "mover $n after 61 days: user $USER_ID"
done
pass "61 days after the transfer, tokens without transfer_sub land on the same users with the same progress"
