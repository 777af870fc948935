#!/usr/bin/env bash
# The Debian package (scripts/package): lintian reports no error; the packaged binary links no Swift
# library and runs with the toolchain out of PATH and LD_LIBRARY_PATH; installing it with dpkg -i
# creates the siwa user, /etc/siwa (root:siwa 0750) and /var/lib/siwa, the units, the nginx files and
# an example configuration naming every key, which `siwa config` accepts once the required keys
# are set; the installed binary, run as the siwa user the way the unit runs it, reads a
# configuration in /etc/siwa and reaches the database; siwa setup writes /etc/siwa and the database
# (twice: the second run changes nothing); the installed binary, run as the unit runs it, serves
# the curl walkthrough of docs/API.md behind the packaged nginx site; siwa doctor; purging removes what the
# package made. Needs root (dpkg -i).
set -euo pipefail
. "$(dirname "$0")/assert.sh"

[ "$(id -u)" -eq 0 ] || { echo "  skipped: installing a package needs root"; exit 0; }
if dpkg-query -W -f='${Status}' siwa 2>/dev/null | grep -q 'install ok installed' || [ -e /etc/siwa ]; then
    fail "a siwa package or /etc/siwa is already on this machine; not touching it"
fi
if [ -n "${E2E_PACKAGE:-}" ]; then
    # scripts/test builds it in the background from the start of the checks: wait for it (30 min at most).
    deadline=$((SECONDS + 1800))
    until [ -s "$E2E_PACKAGE/result" ]; do
        [ $SECONDS -lt $deadline ] || fail "the package build did not finish: $(tail -5 "$E2E_PACKAGE/log")"
        sleep 1
    done
    cp "$E2E_PACKAGE/log" "$E2E_TMP/package.log"
    [ "$(cat "$E2E_PACKAGE/result")" = ok ] || fail "scripts/package: $(tail -20 "$E2E_TMP/package.log")"
    DEB=$(cat "$E2E_PACKAGE/deb")
else
    DEB=$(bash "$(dirname "$0")/../../scripts/package" "$E2E_TMP/package" 2>"$E2E_TMP/package.log" | tail -1) \
        || fail "scripts/package: $(tail -20 "$E2E_TMP/package.log")"
fi
[ -f "$DEB" ] || fail "no package was built: $(tail -5 "$E2E_TMP/package.log")"
pass "scripts/package built $(basename "$DEB") ($(du -h "$DEB" | cut -f1)); lintian: no error ($(grep -c '^W: ' "$E2E_TMP/package.log" || true) warnings)"

# What setup writes, then the package: a failed run leaves the machine as it found it.
SETUP_FILES="/etc/siwa/siwa.env /etc/siwa/db_password /etc/siwa/data_keys /etc/siwa/access_keys /etc/siwa/apple.p8"
# The installed siwa and the packaged nginx site in front of it, on their own port.
PACKAGE_PID=$E2E_TMP/siwa-package.pid SITE=$E2E_TMP/package-site SITE_PORT=$(free_port)
SITE_URL=https://localhost:$SITE_PORT
cleanup() {
    stop_nginx "$SITE"
    stop_pidfile "$PACKAGE_PID" 10
    rm -rf $SETUP_FILES
    dpkg --purge siwa >/dev/null 2>&1 || true
}
trap cleanup EXIT
dpkg -i "$DEB" >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg -i: $(cat "$E2E_TMP/dpkg.log")"
ldd /usr/bin/siwa | grep -i swift && fail "the packaged binary links a Swift library"
version=$(env -i PATH=/usr/bin:/bin /usr/bin/siwa --version) || fail "the installed siwa does not run without the toolchain"
[ "$(stat -c '%U:%G %a' /etc/siwa)" = "root:siwa 750" ] || fail "/etc/siwa is $(stat -c '%U:%G %a' /etc/siwa)"
[ "$(stat -c '%U:%G %a' /var/lib/siwa)" = "siwa:siwa 750" ] || fail "/var/lib/siwa is $(stat -c '%U:%G %a' /var/lib/siwa)"
for file in /lib/systemd/system/siwa.service /lib/systemd/system/siwa-jobs.service /usr/share/siwa/nginx/siwa-locations.conf \
    /usr/share/siwa/nginx/siwa-protect.conf /usr/share/siwa/sql/0001_audit_events.sql /usr/share/siwa/public/app.css; do
    [ -f "$file" ] || fail "the package lacks $file"
done
grep -q '^ExecStart=/usr/bin/siwa serve$' /lib/systemd/system/siwa.service || fail "siwa.service does not run /usr/bin/siwa serve"
for key in $(python3 - "$E2E_BIN" <<'PY'
import subprocess, sys
print(" ".join(l.split("=")[0].lstrip("#") for l in subprocess.run([sys.argv[1], "config", "--example"], capture_output=True, text=True).stdout.splitlines() if l.startswith("#SIWA_")))
PY
); do
    grep -q "^#$key=" /etc/siwa/siwa.env.example || fail "siwa.env.example lacks $key"
done
pass "dpkg -i: siwa $version runs with no Swift library (ldd) and no toolchain; the siwa user, /etc/siwa root:siwa 0750, /var/lib/siwa, units, nginx files, every key in siwa.env.example"

# siwa setup, non-interactive, with the emulator's values and the test MariaDB (as its root), then
# again: the second run keeps every file as it is.
env_value() { sed -n "s/^$1=//p" "$E2E_ENV"; }
# The siwa user reaches the test's sockets and the emulator's CA certificate, as it would /run/mysqld.
chmod o+x "$E2E_TMP" "$E2E_TMP/db" "$(dirname "$(env_value SIWA_APPLE_CA_FILE)")"
chmod o+r "$(env_value SIWA_APPLE_CA_FILE)"
# The socket in a directory of the siwa user (the unit's RuntimeDirectory), where nginx looks for it.
install -d -o siwa -g siwa -m 0755 "$E2E_TMP/run"
setup() {
    siwa_with_env /usr/bin/siwa /dev/null setup --public-url "$SITE_URL" --team-id "$(env_value SIWA_APPLE_TEAM_ID)" \
        --key-id "$(env_value SIWA_APPLE_KEY_ID)" --p8 "$(env_value SIWA_APPLE_PRIVATE_KEY_FILE)" \
        --bundle-ids "$(env_value SIWA_APPLE_BUNDLE_IDS)" --services-id "$(env_value SIWA_APPLE_SERVICES_ID)" \
        --db-socket "$E2E_TMP/db/mysql.sock" --db-name siwa_package --db-user siwa_package --db-admin-socket "$E2E_TMP/db/mysql.sock" \
        --apple-base-url "$(env_value SIWA_APPLE_BASE_URL)" --apple-ca-file "$(env_value SIWA_APPLE_CA_FILE)" \
        --socket-path "$E2E_TMP/run/siwa.sock" </dev/null
}
first=$(setup 2>&1) || fail "siwa setup: $first"
snapshot() { find /etc/siwa -type f -printf '%p %U:%G %m ' -exec md5sum {} \; | sort; }
before=$(snapshot)
second=$(setup 2>&1) || fail "siwa setup again: $second"
[ "$(snapshot)" = "$before" ] || fail "the second siwa setup changed files: $second"
grep -q ": kept" <<<"$second" && ! grep -q ": written\|: copied\|key .* written" <<<"$second" || fail "the second siwa setup wrote: $second"
grep -q "return URL $SITE_URL/auth/callback" <<<"$first" || fail "siwa setup did not print the values for Apple: $first"
[ "$(stat -c '%U:%G %a' /etc/siwa/access_keys)" = "siwa:siwa 700" ] && [ "$(stat -c '%U:%G %a' /etc/siwa/data_keys)" = "root:siwa 640" ] \
    || fail "key owners: $(ls -la /etc/siwa)"
bad=$(siwa_with_env /usr/bin/siwa /dev/null setup --public-url http://x --team-id short --key-id KEYID00001 \
    --p8 /etc/hostname --bundle-ids com.example.siwa </dev/null 2>&1) && fail "siwa setup accepted bad values"
grep -q -- "--team-id" <<<"$bad" && grep -q -- "--p8" <<<"$bad" && grep -q -- "--public-url" <<<"$bad" || fail "the refusal: $bad"
pass "siwa setup wrote /etc/siwa (keys owned right), created the database and its user, migrated, printed Apple's values; a second run kept everything; bad values are named and nothing written"

# The installed binary as the unit runs it (as siwa, /etc/siwa/siwa.env, in /usr/share/siwa) behind
# the packaged nginx site (its template with the substitutions of docs/DEPLOYING.md, on a loopback
# port): the curl walkthrough of docs/API.md signs in against the emulator through it.
curl_walkthrough "$E2E_TMP/walkthrough.sh"
(cd /usr/share/siwa && exec runuser -u siwa -- env -i PATH=/usr/bin:/bin sh -c 'set -a; . /etc/siwa/siwa.env; set +a; exec /usr/bin/siwa serve') \
    >>"$E2E_TMP/siwa-package.log" 2>&1 &
echo $! >"$PACKAGE_PID"
mkdir -p "$SITE/temp"
sed -e 's/@SERVER_NAME@/localhost/' -e "s|@SOCKET@|$E2E_TMP/run/siwa.sock|" -e "s|@CERT@|$E2E_TMP/tls/cert.pem|" \
    -e "s|@KEY@|$E2E_TMP/tls/key.pem|" -e "s|listen 443 ssl http2;|listen 127.0.0.1:$SITE_PORT ssl http2;|" \
    -e "s|listen 80;|listen 127.0.0.1:$(free_port);|" -e '/listen \[::\]/d' \
    /usr/share/siwa/nginx/siwa-site.conf.template >"$SITE/siwa.conf"
grep -q "include /usr/share/siwa/nginx/siwa-locations.conf;" "$SITE/siwa.conf" || fail "the site template does not include the packaged snippet"
cat >"$SITE/nginx.conf" <<CONF
user root;
pid $SITE/nginx.pid;
error_log $SITE/error.log warn;
events {}
http {
    include /etc/nginx/mime.types;
    access_log $SITE/access.log;
    client_body_temp_path $SITE/temp/body;
    fastcgi_temp_path $SITE/temp/fastcgi;
    proxy_temp_path $SITE/temp/proxy;
    uwsgi_temp_path $SITE/temp/uwsgi;
    scgi_temp_path $SITE/temp/scgi;
    include $SITE/siwa.conf;
}
CONF
nginx -t -q -p "$SITE" -c "$SITE/nginx.conf" -e "$SITE/error.log" || fail "nginx -t of the packaged site: $(cat "$SITE/error.log")"
start_nginx "$SITE"
for _ in $(seq 100); do
    [ "$(curl -ks -o /dev/null -w '%{http_code}' "$SITE_URL/health")" = 200 ] && break
    sleep 0.1
done
[ "$(curl -ks -o /dev/null -w '%{http_code}' "$SITE_URL/health")" = 200 ] || fail "the installed siwa through the packaged site: $(tail -5 "$SITE/error.log")"
[ "$(curl -ks -H 'Accept: text/html' -o /dev/null -w '%{http_code} %{content_type}' "$SITE_URL/no-such-page")" = "404 text/html" ] \
    || fail "the packaged site's 404 is not the styled page"
out=$(cd "$E2E_TMP" && SIWA=$SITE_URL APPLE=$E2E_APPLE_URL APPLE_ADMIN_SECRET_FILE=$E2E_APPLE_ADMIN_SECRET_FILE \
    bash "$E2E_TMP/walkthrough.sh" 2>&1) || fail "the walkthrough against the installed siwa: $out"
grep -q '"isNewUser":true' <<<"$out" && grep -q "delete: 204" <<<"$out" || fail "the walkthrough against the installed siwa: $out"
[ "$(mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B siwa_package -e 'SELECT COUNT(*) FROM audit_events')" -gt 0 ] \
    || fail "the installed siwa wrote nothing to its database"
pass "the installed siwa, run as the unit runs it, behind the packaged nginx site and snippets, serves the native sign-in flow (the curl walkthrough of docs/API.md) and the styled 404"

# siwa doctor, as the siwa user with the unit's configuration: the placeholder domain-association
# file fails with its fix; with a real one every check passes (Apple being the emulator).
doctor() {
    (cd /usr/share/siwa && runuser -u siwa -- env -i PATH=/usr/bin:/bin sh -c 'set -a; . /etc/siwa/siwa.env; set +a
        exec /usr/bin/siwa doctor --nginx-user root --public-ca-file "$0"' "$(env_value SIWA_APPLE_CA_FILE)")
}
placeholder=$(doctor 2>&1) && fail "siwa doctor passed with the placeholder domain-association file: $placeholder"
grep -q "^FAIL  domain association: .* placeholder" <<<"$placeholder" && grep -q "fix: replace it" <<<"$placeholder" \
    || fail "siwa doctor on the placeholder: $placeholder"
echo "a-domain-association-file-from-apple" >/usr/share/siwa/public/.well-known/apple-developer-domain-association.txt
report=$(doctor 2>&1) || fail "siwa doctor: $report"
for check in configuration database socket keys "apple keys" clock "client secret" "domain association" "public URL"; do
    grep -q "^ok    $check:" <<<"$report" || fail "siwa doctor has no passing $check line: $report"
done
[ "$(grep -c '^ok    client secret:' <<<"$report")" = 2 ] || fail "not one client-secret line per client id: $report"
# SIGTERM to siwa itself, as systemd sends it: stopping runuser instead would have it kill siwa
# after a moment, before siwa removed its socket.
siwa_pid=$(pgrep -P "$(cat "$PACKAGE_PID")" || true)
[ -n "$siwa_pid" ] && kill -TERM "$siwa_pid"
for _ in $(seq 300); do pidfile_alive "$PACKAGE_PID" || break; sleep 0.1; done
stop_pidfile "$PACKAGE_PID" 30
down=$(doctor 2>&1) && fail "siwa doctor passed with siwa stopped"
grep -q "^FAIL  socket:" <<<"$down" || fail "siwa doctor with siwa stopped: $down"
pass "siwa doctor: $(grep -c '^ok' <<<"$report") checks pass (configuration, database, socket, keys, Apple's keys, clock, the client secret per client id, domain association, TLS); the placeholder and a stopped siwa fail with their fix"

stop_nginx "$SITE"
rm -rf $SETUP_FILES
dpkg --purge siwa >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg --purge: $(cat "$E2E_TMP/dpkg.log")"
trap - EXIT
[ ! -e /etc/siwa ] && [ ! -e /var/lib/siwa ] && [ ! -e /usr/bin/siwa ] || fail "purging left /etc/siwa, /var/lib/siwa or /usr/bin/siwa"
getent passwd siwa >/dev/null && fail "purging left the siwa user"
[ "$(mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B siwa_package -e 'SELECT COUNT(*) FROM schema_migrations')" -ge 10 ] \
    || fail "the purge touched the database"
pass "dpkg --purge removes the files, /etc/siwa, /var/lib/siwa and the siwa user; the database stays"
