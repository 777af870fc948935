#!/usr/bin/env bash
# The Apple ID emulator through nginx (its own TLS port): siwa reads its keys, verifies the identity
# tokens it mints and refuses tampered ones; its token endpoint accepts siwa's client secrets and
# refuses ones for another client id, expired ones and ones signed by another key; a notification
# is delivered to siwa's nginx.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

. "$(dirname "$0")/apple_helpers.sh"

apple GET /auth/keys
keys=$APPLE_BODY
[ "$APPLE_STATUS" = 200 ] || fail "GET /auth/keys: $APPLE_STATUS"
python3 -c 'import json,sys; k=json.load(sys.stdin)["keys"][0]; assert list(k)==["kty","kid","use","alg","n","e"], list(k)' <<<"$keys" \
    || fail "the key set is not shaped like Apple's: $keys"
request GET /health
grep -q '"appleKeys":"ok"' <<<"$BODY" || fail "siwa did not get the emulator's keys: $BODY"
pass "the emulator serves an Apple-shaped key set over TLS, and siwa has fetched it (/health appleKeys ok)"

apple POST /admin/users
[ "$APPLE_STATUS" = 401 ] || fail "admin without the secret: $APPLE_STATUS"
apple POST /admin/users -H "$ADMIN" -d '{"email":"e2e@example.com","firstName":"E","lastName":"Two"}'
[ "$APPLE_STATUS" = 201 ] || fail "create user: $APPLE_STATUS $APPLE_BODY"
USER_ID=$(json id <<<"$APPLE_BODY")
apple POST /admin/sign-in -H "$ADMIN" -d "{\"userId\":\"$USER_ID\",\"clientId\":\"com.example.siwa\",\"nonce\":\"e2e-raw-nonce\"}"
TOKEN=$(json identityToken <<<"$APPLE_BODY")
CODE=$(json authorizationCode <<<"$APPLE_BODY")
out=$(siwa verify-token "$TOKEN" --nonce e2e-raw-nonce --code "$CODE") || fail "an emulator token did not verify: $out"
grep -q "result: valid" <<<"$out" || fail "not valid: $out"
IFS=. read -r h p s <<<"$TOKEN"
tampered_payload=$(printf '%s' "$p" | tr 'A-Za-z' 'B-ZAb-za')
set +e
out=$(siwa verify-token "$h.$tampered_payload.$s" --nonce e2e-raw-nonce); status=$?
set -e
[ $status -eq 1 ] && grep -q "^FAIL  signature" <<<"$out" || fail "a tampered token: status $status, $out"
pass "siwa verify-token accepts an identity token minted by the emulator (nonce, c_hash) and refuses a tampered one"

token_call() { # token_call SECRET CLIENT_ID CODE
    apple POST /auth/token --data-urlencode "client_id=$2" --data-urlencode "client_secret=$1" \
        --data-urlencode "code=$3" --data-urlencode "grant_type=authorization_code"
}
new_code() { # sets NEW_CODE
    apple POST /admin/sign-in -H "$ADMIN" -d "{\"userId\":\"$USER_ID\",\"clientId\":\"com.example.siwa\"}"
    NEW_CODE=$(json authorizationCode <<<"$APPLE_BODY")
}
refused() { # refused SECRET WHAT: the secret gets 400 invalid_client for a fresh code
    new_code
    token_call "$1" com.example.siwa "$NEW_CODE"
    [ "$APPLE_STATUS" = 400 ] && [ "$APPLE_BODY" = '{"error":"invalid_client"}' ] || fail "$2: $APPLE_STATUS $APPLE_BODY"
}

token_call "$(siwa client-secret --client-id com.example.siwa)" com.example.siwa "$CODE"
[ "$APPLE_STATUS" = 200 ] || fail "a good client secret: $APPLE_STATUS $APPLE_BODY"
python3 -c 'import json,sys; b=json.load(sys.stdin); assert list(b)==["access_token","token_type","expires_in","refresh_token","id_token"], list(b)' <<<"$APPLE_BODY" \
    || fail "token response shape: $APPLE_BODY"
refused "$(siwa client-secret --client-id com.example.siwa.web)" "a secret for another client id (sub)"
grep -q "^SIWA_APPLE_CLIENT_SECRET_LIFETIME=" "$E2E_ENV" && fail "the lifetime below must not be overridden by the env file"
refused "$(SIWA_APPLE_CLIENT_SECRET_LIFETIME=60 siwa client-secret --client-id com.example.siwa --issued-at $(( $(date +%s) - 120 )))" "an expired secret"
(umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$E2E_TMP/other_key.p8" 2>/dev/null)
sed "s|^SIWA_APPLE_PRIVATE_KEY_FILE=.*|SIWA_APPLE_PRIVATE_KEY_FILE=$E2E_TMP/other_key.p8|" "$E2E_ENV" >"$E2E_TMP/other_key.env"
refused "$(siwa_with_env "$E2E_BIN" "$E2E_TMP/other_key.env" client-secret --client-id com.example.siwa)" "a secret signed by another key"
pass "the token endpoint accepts siwa client-secret, and answers invalid_client for another sub, an expired secret, another key"

apple POST /admin/notifications -H "$ADMIN" -d "{\"type\":\"consent-revoked\",\"userId\":\"$USER_ID\"}"
[ "$APPLE_STATUS" = 200 ] || fail "notification: $APPLE_STATUS $APPLE_BODY"
delivered=$(json deliveredStatus <<<"$APPLE_BODY")
[ -n "$delivered" ] || fail "the notification was not delivered: $APPLE_BODY"
grep -q "POST /webhook/apple" "$E2E_TMP/nginx/access.log" || fail "no POST /webhook/apple in nginx's log"
pass "a signed notification is delivered through nginx to /webhook/apple (answered $delivered)"

# --- The emulator outside scripts/run, as docs/EMULATOR.md ("Running it outside scripts/run") says:
# its three blocks, run as written with this check's values for the five variables, in a clean
# environment with only siwa and appleid-emulator on PATH; the documented nginx site in an nginx of
# its own; siwa set up by the documented options (and this check's database options) passes
# doctor's Apple checks against it.
ANY=$E2E_TMP/anywhere
mkdir -p "$ANY/bin" "$ANY/nginx/temp"
chmod 755 "$ANY"
ln -sf "$E2E_BIN" "$ANY/bin/siwa"
ln -sf "$(dirname "$E2E_BIN")/appleid-emulator" "$ANY/bin/appleid-emulator"
ANY_PORT=$(free_port) ANY_SITE_PORT=$(free_port)
python3 - "$(dirname "$0")/../../docs/EMULATOR.md" "$ANY" "$ANY_PORT" <<'PY' || fail "docs/EMULATOR.md lacks its three blocks"
import re, sys
doc, out, port = sys.argv[1:]
section = open(doc).read().split("## Running it outside scripts/run", 1)[1].split("**Using the real Apple instead**", 1)[0]
blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
assert len(blocks) == 3, len(blocks)
values = {"EMULATOR": f"{out}/emulator", "HOST": "localhost", "PORT": port,
          "SIWA_URL": "https://localhost:8443", "NGINX_SITE": f"{out}/emulator-site.conf"}
lines = blocks[0].splitlines()
for name in values:
    index = next(i for i, line in enumerate(lines) if line.startswith(name + "="))
    lines[index] = f"{name}={values[name]}"
prelude = "".join(f"{name}={value}\n" for name, value in values.items())
open(f"{out}/prepare.sh", "w").write("\n".join(lines) + "\n")
open(f"{out}/start.sh", "w").write(prelude + "exec " + blocks[1].strip() + "\n")
open(f"{out}/setup.sh", "w").write(prelude + blocks[2].rstrip() + ' "$@"\n')
PY
clean_env() { env -i PATH="$ANY/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$@"; }
out=$(clean_env bash -euo pipefail "$ANY/prepare.sh" 2>&1) || fail "EMULATOR.md's preparing block: $out"
[ "$(stat -c '%a' "$ANY/emulator/AuthKey_KEYID00001.p8")" = 600 ] && head -1 "$ANY/emulator/AuthKey_KEYID00001.p8" | grep -q "BEGIN PRIVATE KEY" \
    || fail "make-key did not write Apple's .p8 shape"
cat >"$ANY/nginx/nginx.conf" <<CONF
user root;
pid $ANY/nginx/nginx.pid;
error_log $ANY/nginx/error.log warn;
events {}
http {
    access_log $ANY/nginx/access.log;
    client_body_temp_path $ANY/nginx/temp/body;
    fastcgi_temp_path $ANY/nginx/temp/fastcgi;
    proxy_temp_path $ANY/nginx/temp/proxy;
    uwsgi_temp_path $ANY/nginx/temp/uwsgi;
    scgi_temp_path $ANY/nginx/temp/scgi;
    include $ANY/emulator-site.conf;
    # siwa as set up below, for the domain-association file it serves.
    server {
        listen 127.0.0.1:$ANY_SITE_PORT;
        location / {
            include /etc/nginx/fastcgi_params;
            fastcgi_pass unix:$ANY/siwa.sock;
        }
    }
}
CONF
clean_env bash "$ANY/start.sh" >>"$ANY/emulator.log" 2>&1 &
echo $! >"$ANY/emulator.pid"
trap 'stop_nginx "$ANY/nginx"; stop_pidfile "$ANY/siwa.pid" 30; stop_pidfile "$ANY/emulator.pid" 10' EXIT
wait_for_socket "$ANY/emulator/emulator.sock" "$ANY/emulator.pid" "$ANY/emulator.log" appleid-emulator
[ "$(stat -c '%U' "$ANY/emulator/emulator.sock")" = www-data ] || fail "the emulator does not run as www-data"
nginx -t -q -p "$ANY/nginx" -c "$ANY/nginx/nginx.conf" -e "$ANY/nginx/error.log" || fail "the documented site: $(cat "$ANY/nginx/error.log")"
start_nginx "$ANY/nginx"
ANY_URL=https://localhost:$ANY_PORT
for _ in $(seq 50); do
    [ "$(curl -s --cacert "$ANY/emulator/tls-cert.pem" -o /dev/null -w '%{http_code}' "$ANY_URL/auth/keys")" = 200 ] && break
    sleep 0.1
done
[ "$(curl -s --cacert "$ANY/emulator/tls-cert.pem" -o /dev/null -w '%{http_code}' "$ANY_URL/auth/keys")" = 200 ] \
    || fail "the documented emulator over TLS verified with its own certificate: $(tail -3 "$ANY/nginx/error.log")"
[ "$(curl -s --cacert "$ANY/emulator/tls-cert.pem" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$ANY/emulator/admin_secret")" \
    -d '{"email":"anywhere@example.com"}' "$ANY_URL/admin/users")" = 201 ] || fail "the documented emulator's admin API"
out=$(clean_env bash -euo pipefail "$ANY/setup.sh" --config-dir "$ANY/etc" --service-user root --socket-path "$ANY/siwa.sock" \
    --db-socket "$E2E_TMP/db/mysql.sock" --db-admin-socket "$E2E_TMP/db/mysql.sock" --db-name siwa_anywhere --db-user siwa_anywhere \
    --migrations-dir "$(dirname "$0")/../../sql" </dev/null 2>&1) || fail "EMULATOR.md's siwa setup: $out"
grep -q "^SIWA_APPLE_BASE_URL=$ANY_URL$" "$ANY/etc/siwa.env" && grep -q "^SIWA_APPLE_CA_FILE=$ANY/emulator/tls-cert.pem$" "$ANY/etc/siwa.env" \
    || fail "siwa setup did not point siwa at the emulator: $(cat "$ANY/etc/siwa.env")"
report=$(clean_env bash -c 'set -a; . "$0"; set +a; exec siwa doctor' "$ANY/etc/siwa.env" 2>&1 || true)
for line in "^ok    apple keys:" "^ok    client secret: com.example.app: accepted" "^ok    client secret: com.example.app.web: accepted" "^ok    clock:"; do
    grep -q "$line" <<<"$report" || fail "siwa doctor against the documented emulator lacks '$line': $report"
done
# Nothing answers at the public URL here: the fix names certbot, and --public-ca-file for a private CA.
grep -A1 "^FAIL  public URL:" <<<"$report" | grep -q "fix: .*certbot.*private or self-signed CA, siwa doctor --public-ca-file CA.pem" \
    || fail "siwa doctor's public URL fix does not name --public-ca-file: $report"
grep -q "^ok    database connections: siwa serve 13[0-9], siwa jobs [0-9]*, commands 2: 1[0-9][0-9] of MariaDB's max_connections" <<<"$report" \
    || fail "siwa doctor's connections at the default 64 threads: $report"
# 300 threads on one host, or the default on four, need more than the test server's max_connections (500).
for run in "SIWA_WORKER_THREADS=300 siwa doctor" "siwa doctor --hosts 4"; do
    report=$(clean_env bash -c 'set -a; . "$0"; set +a; exec env '"$run" "$ANY/etc/siwa.env" 2>&1) \
        && fail "siwa doctor passed with more connections than max_connections ($run): $report"
    grep -q "^FAIL  database connections: .*max_connections" <<<"$report" && grep -q "fix: raise max_connections in MariaDB's configuration to at least" <<<"$report" \
        || fail "siwa doctor's failed connections check ($run) with its fix: $report"
done
# Apple's domain-association file added to the host set up above, by --domain-association alone:
# nothing else is asked for or changed, and the closing line says what to restart; siwa, started
# with that configuration, serves it through nginx; again with a new file it is replaced, and served
# after the restart; with the same file nothing changes, and a bad one is refused.
domain_served() { # domain_served FILE: what siwa serves at Apple's path is FILE
    local status
    status=$(curl -s -o "$ANY/served.txt" -w '%{http_code}' "http://127.0.0.1:$ANY_SITE_PORT/.well-known/apple-developer-domain-association.txt")
    [ "$status" = 200 ] && cmp -s "$1" "$ANY/served.txt" || fail "siwa does not serve $1: $status $(cat "$ANY/served.txt")"
}
restart_any_siwa() {
    stop_pidfile "$ANY/siwa.pid" 30
    rm -f "$ANY/siwa.sock"
    SIWA_WORKER_THREADS=2 start_siwa "$E2E_BIN" "$ANY/etc/siwa.env" "$ANY/siwa.log" "$ANY/siwa.pid"
}
setup_files() { find "$ANY/etc" -type f ! -name siwa.env ! -name apple-developer-domain-association.txt -exec md5sum {} + | sort; }
FILES_BEFORE=$(setup_files) ENV_BEFORE=$(cat "$ANY/etc/siwa.env")
domain_setup() { clean_env siwa setup --config-dir "$ANY/etc" --service-user root --domain-association "$1" </dev/null 2>&1; }
# Files of the same size, so that a replacement within the file system's timestamp tick is seen
# only by its contents.
printf 'domain-association-1 %05d\n' "$RANDOM" >"$ANY/domain-1.txt"
printf 'domain-association-2 %05d\n' "$RANDOM" >"$ANY/domain-2.txt"
out=$(domain_setup "$ANY/domain-1.txt") || fail "siwa setup --domain-association alone: $out"
grep -q "apple-developer-domain-association.txt: copied from $ANY/domain-1.txt" <<<"$out" \
    && grep -q "SIWA_DOMAIN_ASSOCIATION_FILE added" <<<"$out" && grep -q "^Then: systemctl restart siwa " <<<"$out" \
    || fail "siwa setup --domain-association alone said: $out"
cmp -s "$ANY/domain-1.txt" "$ANY/etc/apple-developer-domain-association.txt" || fail "the domain file was not copied"
[ "$(cat "$ANY/etc/siwa.env")" = "$ENV_BEFORE"$'\n'"SIWA_DOMAIN_ASSOCIATION_FILE=$ANY/etc/apple-developer-domain-association.txt" ] \
    || fail "siwa.env after --domain-association: $(cat "$ANY/etc/siwa.env")"
restart_any_siwa
domain_served "$ANY/domain-1.txt"
out=$(domain_setup "$ANY/domain-2.txt") || fail "siwa setup --domain-association with a new file: $out"
cmp -s "$ANY/domain-2.txt" "$ANY/etc/apple-developer-domain-association.txt" && grep -q "^Then: systemctl restart siwa " <<<"$out" \
    || fail "the new domain file did not replace the old: $out"
restart_any_siwa
domain_served "$ANY/domain-2.txt"
out=$(domain_setup "$ANY/domain-2.txt") || fail "siwa setup --domain-association again: $out"
grep -q "^Nothing changed" <<<"$out" || fail "the same domain file again: $out"
: >"$ANY/domain-empty.txt"
out=$(domain_setup "$ANY/domain-empty.txt") && fail "an empty domain file was accepted: $out"
grep -q "refused, nothing written" <<<"$out" && cmp -s "$ANY/domain-2.txt" "$ANY/etc/apple-developer-domain-association.txt" \
    || fail "the empty domain file's refusal: $out"
[ "$(setup_files)" = "$FILES_BEFORE" ] && [ "$(grep -c . "$ANY/etc/siwa.env")" = "$(($(grep -c . <<<"$ENV_BEFORE") + 1))" ] \
    || fail "siwa setup --domain-association changed other files"
pass "siwa setup --domain-association alone on a set-up host: adds the file and its key (then: restart siwa; served through nginx), replaces it with a new one (served after the restart), keeps it when the same, refuses an empty one; nothing else changes; doctor's public URL fix names --public-ca-file"

pass "docs/EMULATOR.md outside scripts/run, as written: make-key wrote AuthKey_KEYID00001.p8, the documented site serves the emulator (as www-data) over TLS verified by its certificate, siwa setup's documented options point siwa at it and doctor's Apple checks pass; doctor fails the database connections past max_connections (300 threads, or four hosts) and says the fix"
