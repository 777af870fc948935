#!/usr/bin/env bash
# siwa backup and siwa restore, on a siwa of its own (its database user and databases, keys,
# socket and nginx; the stack's MariaDB and Apple ID emulator): three people signed in through the
# emulator with authorization codes (Apple tokens), a second session, a sync, the webhook deliveries
# of their sign-ins pending; backed up while siwa runs; the database dropped and the key directory
# deleted; a restore with the data key withheld and one with a wrong data key refused, naming the
# key, with nothing written; restored into a new database and key directory; every table as it was;
# siwa started on them: the access and refresh tokens issued before the backup work, the sync state
# is back, an account deletion revokes its Apple token at the emulator (the restored data key opens
# it); a restore over the restored database refused.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

DIR=$E2E_TMP/backup_restore
rm -rf "$DIR"
mkdir -p "$DIR"
PORT=$(free_port)
E2E_URL=https://localhost:$PORT
# The databases of this check, as root (the sql helper's is the stack's).
bsql() { mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B "$1" -e "$2"; }
create_database "$E2E_TMP/db" siwa_bk_a siwa_bk "$DIR/db_password"
mariadb_root "$E2E_TMP/db" "DROP DATABASE IF EXISTS siwa_bk_b; DROP DATABASE IF EXISTS siwa_bk_c;
    GRANT ALL PRIVILEGES ON \`siwa_bk_b\`.* TO 'siwa_bk'@'localhost'; GRANT ALL PRIVILEGES ON \`siwa_bk_c\`.* TO 'siwa_bk'@'localhost'"
cleanup() {
    stop_pidfile "$DIR/siwa.pid" 10
    stop_nginx "$DIR/nginx"
    mariadb_root "$E2E_TMP/db" "DROP DATABASE IF EXISTS siwa_bk_a; DROP DATABASE IF EXISTS siwa_bk_b; DROP DATABASE IF EXISTS siwa_bk_c" || true
}
trap cleanup EXIT

# env_file DATABASE KEY_DIRECTORY: the configuration of this siwa, on DATABASE with its keys in KEY_DIRECTORY.
env_file() {
    cat <<ENV
SIWA_SOCKET_PATH=$DIR/siwa.sock
SIWA_WORKER_THREADS=4
SIWA_DB_SOCKET=$E2E_TMP/db/mysql.sock
SIWA_DB_NAME=$1
SIWA_DB_USER=siwa_bk
SIWA_DB_PASSWORD_FILE=$DIR/db_password
SIWA_MIGRATIONS_DIR=$SIWA_ROOT/sql
SIWA_PUBLIC_URL=$E2E_URL
SIWA_ACCESS_KEYS_DIR=$2/access_keys
SIWA_DATA_KEYS_FILE=$2/data_keys
SIWA_LINK_SECRET_FILE=$2/link_secret
SIWA_WEBHOOK_URLS=http://127.0.0.1:$(free_port)/hooks
SIWA_WEBHOOK_SECRET_FILE=$2/webhook_secret
$(grep '^SIWA_APPLE_' "$E2E_ENV")
ENV
}
KEYS=$DIR/keys
mkdir -m 700 -p "$KEYS/access_keys"
(umask 077
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$KEYS/access_keys/20260101T000000Z.pem" 2>/dev/null
    echo "k1 $(openssl rand -base64 32)" >"$KEYS/data_keys"
    openssl rand -hex 32 >"$KEYS/link_secret"
    openssl rand -hex 32 >"$KEYS/webhook_secret"
    openssl rand -hex 16 >"$DIR/passphrase")
env_file siwa_bk_a "$KEYS" >"$DIR/a.env"
run() { local env=$1; shift; siwa_with_env "$E2E_BIN" "$env" "$@"; }
run "$DIR/a.env" migrate >/dev/null
start_siwa "$E2E_BIN" "$DIR/a.env" "$DIR/siwa.log" "$DIR/siwa.pid"
render_nginx "$DIR/nginx" "$PORT" "$DIR/siwa.sock" "$E2E_TMP/tls" "50r/s"
start_nginx "$DIR/nginx"

# Three people with Apple tokens; the first also on a second device, and synced.
declare -a APPLE_USERS ACCESS_TOKENS REFRESH_TOKENS
for n in 1 2 3; do
    new_apple_user "backup$n.$RANDOM@example.com" Backup "Tester$n"
    nonce="nonce-backup-$n-$RANDOM$RANDOM"
    apple_sign_in "$APPLE_USER" com.example.siwa "$nonce"
    sign_in "{\"identityToken\":\"$TOKEN\",\"authorizationCode\":\"$CODE\",\"nonce\":\"$nonce\"}"
    expect_status 200 "signing in person $n"
    APPLE_USERS[n]=$APPLE_USER ACCESS_TOKENS[n]=$ACCESS REFRESH_TOKENS[n]=$REFRESH
done
nonce="nonce-backup-ipad-$RANDOM$RANDOM"
apple_sign_in "${APPLE_USERS[1]}" com.example.siwa "$nonce"
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"$nonce\"}"
expect_status 200 "a second session"
request POST /sync -H "$(bearer "${ACCESS_TOKENS[1]}")" -H 'Content-Type: application/json' \
    -d '{"cursor":null,"progress":[{"beliefSystemId":"stoicism","lessonId":"backup-l1","status":"completed","score":90,"earnedXp":40,"completedAt":1700000000000}]}'
expect_status 200 "a sync"
TABLES="users apple_identities apple_tokens user_emails sessions refresh_tokens sync_records webhook_events webhook_deliveries audit_events"
counts() { bsql "$1" "SELECT CONCAT_WS(' ', $(for t in $TABLES; do printf "(SELECT COUNT(*) FROM %s)," "$t"; done | sed 's/,$//'))"; }
checksums() { bsql "$1" "CHECKSUM TABLE $(tr ' ' ',' <<<"$TABLES")" | awk '{print $2}' | tr '\n' ' '; }
before_counts=$(counts siwa_bk_a)
before_sums=$(checksums siwa_bk_a)
read -r users identities tokens _ sessions _ records _ deliveries _ <<<"$before_counts"
[ "$users" = 3 ] && [ "$tokens" = 3 ] && [ "$sessions" = 4 ] && [ "$records" -ge 1 ] && [ "$deliveries" -ge 3 ] \
    || fail "the stack before the backup: $TABLES = $before_counts"
[ "$(bsql siwa_bk_a "SELECT COUNT(*) FROM webhook_deliveries WHERE delivered_at IS NULL")" = "$deliveries" ] \
    || fail "the webhook deliveries are not all pending"

# The backup, with siwa running.
out=$(run "$DIR/a.env" backup "$DIR/backup" --passphrase-file "$DIR/passphrase") || fail "siwa backup: $out"
grep -q "keys.siwa: .*1 data-keys.*sealed with the passphrase" <<<"$out" || fail "siwa backup's output: $out"
[ "$(stat -c %a "$DIR/backup")" = 700 ] && [ "$(stat -c %a "$DIR/backup/keys.siwa" "$DIR/backup/database.sql" "$DIR/backup/manifest.json" | sort -u)" = 600 ] \
    || fail "the backup's modes: $(ls -la "$DIR/backup")"
data_key=$(awk '{print $2}' "$KEYS/data_keys")
! grep -rqF "$data_key" "$DIR/backup" || fail "the data key is in the backup in the clear"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["sealedTokens"]=={"k1":3} and m["schemaVersion"]>0 and len(m["files"])==2, m' \
    "$DIR/backup/manifest.json" || fail "the manifest"
pass "siwa backup while siwa runs: $(head -1 <<<"$out"); the key material sealed (no key in the clear), mode 0700/0600"

# Destroyed: the database dropped, the key directory deleted.
stop_pidfile "$DIR/siwa.pid" 10
cp "$KEYS/data_keys" "$DIR/data_keys.original"
mariadb_root "$E2E_TMP/db" "DROP DATABASE siwa_bk_a"
rm -rf "$KEYS"

# The data key withheld (the key bundle kept apart and not given), then a wrong one: refused
# before anything is written.
mv "$DIR/backup/keys.siwa" "$DIR/keys.siwa.apart"
env_file siwa_bk_c "$DIR/keys_c" >"$DIR/c.env"
status=0
out=$(run "$DIR/c.env" restore "$DIR/backup" 2>&1) || status=$?
[ "$status" = 66 ] && grep -q "no data key: the backup's Apple refresh tokens are sealed with data key k1 (3 token(s))" <<<"$out" \
    || fail "a restore without the data key: exit $status: $out"
echo "    the data key withheld (exit $status): $(grep error: <<<"$out")"
mkdir -p "$DIR/keys_c" && (umask 077; echo "k1 $(openssl rand -base64 32)" >"$DIR/keys_c/data_keys")
status=0
out=$(run "$DIR/c.env" restore "$DIR/backup" 2>&1) || status=$?
[ "$status" = 65 ] && grep -q "data key k1 of SIWA_DATA_KEYS_FILE .* does not open the Apple refresh tokens sealed under k1" <<<"$out" \
    || fail "a restore with a wrong data key: exit $status: $out"
echo "    a wrong data key (exit $status): $(grep error: <<<"$out")"
[ -z "$(bsql mysql "SELECT 1 FROM information_schema.schemata WHERE schema_name = 'siwa_bk_c'")" ] || fail "a refused restore created its database"
mv "$DIR/keys.siwa.apart" "$DIR/backup/keys.siwa"
pass "siwa restore refuses a withheld data key (66) and a wrong one (65), naming k1, before writing anything"

# Restored into a new database and key directory.
env_file siwa_bk_b "$DIR/keys_b" >"$DIR/b.env"
out=$(run "$DIR/b.env" restore "$DIR/backup" --passphrase-file "$DIR/passphrase") || fail "siwa restore: $out"
grep -q "open the sampled Apple tokens" <<<"$out" || fail "siwa restore's output: $out"
[ "$(counts siwa_bk_b)" = "$before_counts" ] && [ "$(checksums siwa_bk_b)" = "$before_sums" ] \
    || fail "the restored tables differ: $TABLES = $(counts siwa_bk_b), before $before_counts"
cmp -s "$DIR/data_keys.original" "$DIR/keys_b/data_keys" && [ "$(stat -c %a "$DIR/keys_b/data_keys")" = 600 ] \
    && [ -s "$DIR/keys_b/access_keys/20260101T000000Z.pem" ] && [ -s "$DIR/keys_b/link_secret" ] && [ -s "$DIR/keys_b/webhook_secret" ] \
    || fail "the restored key files: $(ls -lR "$DIR/keys_b")"
pass "siwa restore into a new database and key directory: every table as it was (row counts and CHECKSUM TABLE of $TABLES), the key files back"

start_siwa "$E2E_BIN" "$DIR/b.env" "$DIR/siwa.log" "$DIR/siwa.pid"
for n in 1 2 3; do
    request GET /auth/me -H "$(bearer "${ACCESS_TOKENS[n]}")"
    expect_status 200 "person $n's access token from before the backup"
    request POST /auth/refresh -H 'Content-Type: application/json' -d "{\"refreshToken\":\"${REFRESH_TOKENS[n]}\"}"
    expect_status 200 "person $n's refresh token from before the backup"
    ACCESS_TOKENS[n]=$(json accessToken <<<"$BODY")
done
request POST /sync -H "$(bearer "${ACCESS_TOKENS[1]}")" -H 'Content-Type: application/json' -d '{"cursor":null}'
expect_status 200 "a sync after the restore"
grep -q '"lessonId":"backup-l1"' <<<"$BODY" || fail "the synced lesson is not back: $BODY"
request DELETE /auth/account -H "$(bearer "${ACCESS_TOKENS[2]}")"
expect_status 204 "deleting person 2"
out=$(run "$DIR/b.env" jobs --once 2>"$DIR/jobs.log")
grep -q "revoked=1 revocationsFailed=0" <<<"$out" || fail "the revocation after the restore: $out"
apple GET "/admin/users/${APPLE_USERS[2]}" -H "$ADMIN"
[ "$(json clients.0.authorized <<<"$APPLE_BODY")" = false ] || fail "the emulator did not see the revocation: $APPLE_BODY"
pass "siwa on the restored database: the 3 access and refresh tokens from before work, the sync state is back, a deletion's Apple token (opened with the restored data key) revoked at the emulator"

status=0
out=$(run "$DIR/b.env" restore "$DIR/backup" --passphrase-file "$DIR/passphrase" 2>&1) || status=$?
[ "$status" = 73 ] && grep -q "the database siwa_bk_b has .* table(s): restore into an empty one, or pass --replace-database" <<<"$out" \
    || fail "a restore over a database with tables: exit $status: $out"
pass "siwa restore over a database with tables: exit 73 without --replace-database"
