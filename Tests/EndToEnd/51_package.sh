#!/usr/bin/env bash
# The whole life of an installation, with the Debian packages scripts/test builds: the package of
# the last 0.9 layout (E2E_PACKAGE_OLD) and this tree's (E2E_PACKAGE, lintian clean: scripts/package
# refuses any error or warning).
#
# 1. Install 0.9 the way its README said: dpkg -i, siwa setup, Apple's domain-association file copied
#    into /usr/share/siwa/public/.well-known/, the site template in sites-available and linked into
#    sites-enabled, both units started as systemd would start them (units.sh), a user signed in
#    through the site who syncs a lesson.
# 2. Upgrade with dpkg -i while the units run, units.sh standing in for deb-systemd-invoke: the
#    configuration, the keys and the data are unchanged; the domain file moved to /etc/siwa and is
#    served from there; both units were restarted on the new binary (no deleted exe); the
#    migrations are current; the user's sync state is the same.
# 3. The new package itself: no Swift library linked, no toolchain needed, its directories, units,
#    manual pages and example configuration; siwa setup run again changes nothing and names bad
#    values; the curl walkthrough of docs/API.md and the styled 404 through the site; `sudo siwa
#    doctor` and `sudo siwa admin export` read /etc/siwa/siwa.env themselves, run as siwa, and the
#    audit log names the person who ran sudo (or root, from a root shell without sudo); `siwa setup
#    --domain-association` alone replaces Apple's file, served after a restart; sslyze finds the site's TLS compliant with Mozilla's
#    "intermediate" configuration.
# 4. dpkg -r, then dpkg -P: nginx -t passes after each (the site is disabled, not left broken), the
#    database is untouched, purging removes what the package made.
# Needs root (dpkg -i) and the packages of scripts/test.
set -euo pipefail
. "$(dirname "$0")/assert.sh"
. "$(dirname "$0")/apple_helpers.sh"

[ "$(id -u)" -eq 0 ] || { echo "  skipped: installing a package needs root"; exit 0; }
if dpkg-query -W -f='${Status}' siwa 2>/dev/null | grep -q 'install ok installed' || [ -e /etc/siwa ] \
    || [ -e /etc/nginx/sites-available/siwa.conf ]; then
    fail "a siwa package, /etc/siwa or an nginx site siwa.conf is already on this machine; not touching it"
fi
[ -n "${E2E_PACKAGE:-}" ] && [ -n "${E2E_PACKAGE_OLD:-}" ] || fail "run through scripts/test, which builds the packages"

# wait_for_package DIR: the .deb scripts/test builds in the background into DIR (30 min at most).
wait_for_package() {
    local deadline=$((SECONDS + 1800))
    until [ -s "$1/result" ]; do
        [ $SECONDS -lt $deadline ] || fail "the package build did not finish: $(tail -5 "$1/log")"
        sleep 1
    done
    [ "$(cat "$1/result")" = ok ] || fail "scripts/package: $(tail -20 "$1/log")"
    cat "$1/deb"
}
# The package upgraded from first: its part runs while this tree's package may still be building.
OLD_DEB=$(wait_for_package "$E2E_PACKAGE_OLD")
[ -f "$OLD_DEB" ] || fail "no package to upgrade from was built"

SETUP_FILES="/etc/siwa/siwa.env /etc/siwa/db_password /etc/siwa/data_keys /etc/siwa/access_keys /etc/siwa/apple.p8
    /etc/siwa/apple-developer-domain-association.txt"
SITE=$E2E_TMP/package-site SITE_PORT=$(free_port)
SITE_URL=https://localhost:$SITE_PORT
export UNITS_STATE=$E2E_TMP/units UNITS_NGINX_PREFIX=$SITE
UNITS=$(cd "$(dirname "$0")" && pwd)/units.sh
# Where units.sh stands in for deb-systemd-invoke while dpkg runs the maintainer scripts, which call
# it only when /run/systemd/system exists.
SHIM=$E2E_TMP/shim
mkdir -p "$SHIM"
ln -sf "$UNITS" "$SHIM/deb-systemd-invoke"
MADE_SYSTEMD_DIR=""
with_units() { # with_units COMMAND...: runs it as if systemd ran the units
    if [ ! -d /run/systemd/system ]; then mkdir -p /run/systemd/system && MADE_SYSTEMD_DIR=yes; fi
    local status=0
    PATH=$SHIM:$PATH "$@" || status=$?
    if [ -n "$MADE_SYSTEMD_DIR" ]; then rmdir /run/systemd/system && MADE_SYSTEMD_DIR=""; fi
    return $status
}
cleanup() {
    "$UNITS" stop siwa siwa-jobs || true
    stop_nginx "$SITE"
    rm -f /etc/nginx/sites-enabled/siwa.conf /etc/nginx/sites-available/siwa.conf /etc/nginx/sites-available/siwa.conf.siwa-disabled
    if [ -n "$MADE_SYSTEMD_DIR" ]; then rmdir /run/systemd/system || true; fi
    rm -rf $SETUP_FILES
    dpkg --purge siwa siwa-appleid-emulator >/dev/null 2>&1 || true
}
trap cleanup EXIT
db() { mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B siwa_package -e "$1"; }
env_value() { sed -n "s/^$1=//p" "$E2E_ENV"; }

# --- 1. Version 0.9, installed and run as its README said.
dpkg -i "$OLD_DEB" >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg -i of the old package: $(cat "$E2E_TMP/dpkg.log")"
OLD_VERSION=$(/usr/bin/siwa --version)
# The siwa user reaches the test's sockets and the emulator's CA certificate, as it would /run/mysqld.
chmod o+x "$E2E_TMP" "$E2E_TMP/db" "$(dirname "$(env_value SIWA_APPLE_CA_FILE)")"
chmod o+r "$(env_value SIWA_APPLE_CA_FILE)"
# The socket in a directory of the siwa user (the unit's RuntimeDirectory), where nginx looks for it.
install -d -o siwa -g siwa -m 0755 "$E2E_TMP/run"
DOMAIN_FILE=$E2E_TMP/apple-developer-domain-association.txt
echo "a-domain-association-file-from-apple $RANDOM" >"$DOMAIN_FILE"
setup() { # setup [OPTION...]: siwa setup with the emulator's values and the test MariaDB (as its root)
    siwa_with_env /usr/bin/siwa /dev/null setup --public-url "$SITE_URL" --team-id "$(env_value SIWA_APPLE_TEAM_ID)" \
        --key-id "$(env_value SIWA_APPLE_KEY_ID)" --p8 "$(env_value SIWA_APPLE_PRIVATE_KEY_FILE)" \
        --bundle-ids "$(env_value SIWA_APPLE_BUNDLE_IDS)" --services-id "$(env_value SIWA_APPLE_SERVICES_ID)" \
        --db-socket "$E2E_TMP/db/mysql.sock" --db-name siwa_package --db-user siwa_package --db-admin-socket "$E2E_TMP/db/mysql.sock" \
        --apple-base-url "$(env_value SIWA_APPLE_BASE_URL)" --apple-ca-file "$(env_value SIWA_APPLE_CA_FILE)" \
        --socket-path "$E2E_TMP/run/siwa.sock" "$@" </dev/null
}
first=$(setup 2>&1) || fail "siwa setup of $OLD_VERSION: $first"
grep -q "return URL $SITE_URL/auth/callback" <<<"$first" || fail "siwa setup did not print the values for Apple: $first"
cp "$DOMAIN_FILE" /usr/share/siwa/public/.well-known/apple-developer-domain-association.txt
# The site's certificate as a CA would issue it (certbot's stand-in): a leaf for localhost, ECDSA
# P-256, 90 days, signed by a CA of the test's own that doctor and sslyze are told to trust.
SITE_TLS=$E2E_TMP/site-tls
mkdir -p "$SITE_TLS"
(
    cd "$SITE_TLS"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj "/CN=siwa e2e CA" -set_serial 1 \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -keyout ca-key.pem -out ca.pem
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" -keyout key.pem -out leaf.csr
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost\n' >leaf.ext
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca-key.pem -set_serial 2 -days 90 -sha256 -extfile leaf.ext -out cert.pem
) >"$E2E_TMP/site-tls.log" 2>&1 || fail "the site's certificate: $(cat "$E2E_TMP/site-tls.log")"
chmod o+x "$SITE_TLS" && chmod o+r "$SITE_TLS/ca.pem"
# The site: the packaged template with docs/DEPLOYING.md's substitutions (on loopback ports),
# enabled as a site of the host's nginx; the test's own nginx serves the enabled file.
site_from_template() {
    sed -e 's/@SERVER_NAME@/localhost/' -e "s|@SOCKET@|$E2E_TMP/run/siwa.sock|" -e "s|@CERT@|$SITE_TLS/cert.pem|" \
        -e "s|@KEY@|$SITE_TLS/key.pem|" -e "s|listen 443 ssl http2;|listen 127.0.0.1:$SITE_PORT ssl http2;|" \
        -e "s|listen 80;|listen 127.0.0.1:$(free_port);|" -e '/listen \[::\]/d' \
        /usr/share/siwa/nginx/siwa-site.conf.template >/etc/nginx/sites-available/siwa.conf
    ln -sf /etc/nginx/sites-available/siwa.conf /etc/nginx/sites-enabled/siwa.conf
}
site_from_template
mkdir -p "$SITE/temp"
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
    include /etc/nginx/sites-enabled/siwa.conf;
}
CONF
nginx -t -q 2>"$E2E_TMP/nginx-t.log" || fail "the host's nginx -t with the site enabled: $(cat "$E2E_TMP/nginx-t.log")"
"$UNITS" start siwa siwa-jobs || fail "starting the units: $(tail -5 "$UNITS_STATE"/*.log)"
start_nginx "$SITE"
E2E_URL=$SITE_URL
wait_for_health 100
expect_status 200 "siwa $OLD_VERSION through the site"
new_apple_user "upgrade.e2e@example.com" Up Grade
nonce="nonce-upgrade-$RANDOM$RANDOM"
apple_sign_in "$APPLE_USER" com.example.siwa "$nonce"
sign_in "{\"identityToken\":\"$TOKEN\",\"nonce\":\"$nonce\"}"
expect_status 200 "signing in to $OLD_VERSION"
USER_ID=$(json user.id <<<"$BODY")
request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' -d \
    '{"cursor":null,"profile":{"totalXp":40,"currentLevel":1,"streakDays":2,"lastActiveDate":"2026-11-25"},"progress":[{"beliefSystemId":"stoicism","lessonId":"l-upgrade","status":"completed","score":90,"earnedXp":40,"completedAt":1795600000000}]}'
expect_status 200 "a sync on $OLD_VERSION"
sync_state() { # the user's whole synced state, as a new device gets it
    request POST /sync -H "$(bearer "$ACCESS")" -H 'Content-Type: application/json' -d '{"cursor":null}'
    expect_status 200 "reading the sync state"
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps([d["profile"], d["progress"]], sort_keys=True))' <<<"$BODY"
}
STATE=$(sync_state)
grep -q l-upgrade <<<"$STATE" || fail "the synced lesson: $STATE"
pass "siwa $OLD_VERSION installed as its README said: setup, the domain file in /usr/share/siwa/public, the site enabled, both units running; user $USER_ID signed in and synced"

DEB=$(wait_for_package "$E2E_PACKAGE")
[ -f "$DEB" ] || fail "no package was built"
grep -q '^[EW]: ' "$E2E_PACKAGE/log" && fail "lintian: $(grep '^[EW]: ' "$E2E_PACKAGE/log")"
pass "scripts/package built $(basename "$DEB") ($(du -h "$DEB" | cut -f1)), lintian: no error, no warning"

# --- 2. The upgrade, with the units running. The keys are compared whole; siwa.env.example is the
# package's (a conffile the upgrade replaces, unless edited).
snapshot() { find /etc/siwa -type f ! -name 'siwa.env*' ! -name apple-developer-domain-association.txt -printf '%p %U:%G %m ' -exec md5sum {} \; | sort; }
KEYS_BEFORE=$(snapshot)
ENV_BEFORE=$(cat /etc/siwa/siwa.env)
USERS_BEFORE=$(db "SELECT COUNT(*) FROM users")
OLD_PIDS="$(cat "$UNITS_STATE/siwa.pid") $(cat "$UNITS_STATE/siwa-jobs.pid")"
: >"$UNITS_STATE/calls"
with_units dpkg -i "$DEB" >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg -i of the new package over the old: $(cat "$E2E_TMP/dpkg.log")"
VERSION=$(env -i PATH=/usr/bin:/bin /usr/bin/siwa --version) || fail "the installed siwa does not run without the toolchain"
dpkg --compare-versions "$VERSION" gt "$OLD_VERSION" || fail "the upgrade installed $VERSION, which dpkg does not order after $OLD_VERSION"
[ "$(cat "$UNITS_STATE/calls")" = "$(printf 'try-restart siwa\ntry-restart siwa-jobs\ntry-reload-or-restart nginx')" ] \
    || fail "the maintainer scripts' calls: $(cat "$UNITS_STATE/calls")"
for unit in siwa siwa-jobs; do
    pid=$(cat "$UNITS_STATE/$unit.pid")
    grep -qw "$pid" <<<"$OLD_PIDS" && fail "$unit was not restarted"
    exe=$(readlink "/proc/$pid/exe") || fail "$unit is not running after the upgrade: $(tail -5 "$UNITS_STATE/$unit.log")"
    [ "$exe" = /usr/bin/siwa ] || fail "$unit runs $exe"
done
[ "$(snapshot)" = "$KEYS_BEFORE" ] || fail "the upgrade changed keys: $(diff <(echo "$KEYS_BEFORE") <(snapshot))"
[ "$(head -c ${#ENV_BEFORE} /etc/siwa/siwa.env)" = "$ENV_BEFORE" ] || fail "the upgrade changed siwa.env: $(cat /etc/siwa/siwa.env)"
[ "$(tail -n 1 /etc/siwa/siwa.env)" = "SIWA_DOMAIN_ASSOCIATION_FILE=/etc/siwa/apple-developer-domain-association.txt" ] \
    || fail "siwa.env does not name the moved domain file: $(tail -3 /etc/siwa/siwa.env)"
grep -q "domain-association file moved to /etc/siwa" "$E2E_TMP/dpkg.log" || fail "the upgrade did not say it moved the file: $(cat "$E2E_TMP/dpkg.log")"
cmp -s "$DOMAIN_FILE" /etc/siwa/apple-developer-domain-association.txt || fail "the moved domain file differs"
[ "$(stat -c '%U:%G %a' /etc/siwa/apple-developer-domain-association.txt)" = "root:siwa 640" ] || fail "the moved domain file's owner"
[ ! -e /usr/share/siwa/public/.well-known ] || fail "the new package still ships /usr/share/siwa/public/.well-known"
[ "$(db 'SELECT COUNT(*) FROM schema_migrations')" = "$(find /usr/share/siwa/sql -name '*.sql' | wc -l)" ] || fail "migrations not current"
[ "$(db 'SELECT COUNT(*) FROM users')" = "$USERS_BEFORE" ] || fail "the upgrade changed the users"
wait_for_health 100
expect_status 200 "siwa $VERSION after the upgrade"
[ "$(sync_state)" = "$STATE" ] || fail "the sync state after the upgrade: $(sync_state) (was $STATE)"
# nginx was reloaded with the new snippets: its new workers take over within moments.
for _ in $(seq 50); do
    request GET /.well-known/apple-developer-domain-association.txt
    [ "$STATUS" = 200 ] && break
    sleep 0.1
done
expect_status 200 "the domain file after the upgrade"
[ "$BODY" = "$(cat "$DOMAIN_FILE")" ] || fail "the served domain file: $BODY"
pass "upgrade $OLD_VERSION to $VERSION with the units running: nginx reloaded, both units try-restarted onto /usr/bin/siwa $VERSION, migrations current, keys and siwa.env unchanged but for the line naming the domain file, which moved to /etc/siwa and is served; the user's sync state unchanged"

# --- 3. The new package itself, with the site rendered again from its template (an existing site is
# the operator's file: an upgrade does not change it, DEPLOYING.md says what a new template brings).
site_from_template
nginx -t -q 2>"$E2E_TMP/nginx-t.log" || fail "the host's nginx -t with the new template: $(cat "$E2E_TMP/nginx-t.log")"
start_nginx "$SITE"
ldd /usr/bin/siwa | grep -i swift && fail "the packaged binary links a Swift library"
[ "$(stat -c '%U:%G %a' /etc/siwa)" = "root:siwa 750" ] || fail "/etc/siwa is $(stat -c '%U:%G %a' /etc/siwa)"
[ "$(stat -c '%U:%G %a' /var/lib/siwa)" = "siwa:siwa 750" ] || fail "/var/lib/siwa is $(stat -c '%U:%G %a' /var/lib/siwa)"
for file in /lib/systemd/system/siwa.service /lib/systemd/system/siwa-jobs.service /usr/share/siwa/nginx/siwa-locations.conf \
    /usr/share/siwa/nginx/siwa-protect.conf /usr/share/siwa/sql/0001_audit_events.sql /usr/share/siwa/public/app.css \
    /usr/share/man/man1/siwa.1.gz /usr/share/siwa/monitoring/siwa-dashboard.json /usr/share/siwa/monitoring/siwa-alerts.yml; do
    [ -f "$file" ] || fail "the package lacks $file"
done
# (grep -c reads it all: grep -q would stop zcat with SIGPIPE, which pipefail counts as a failure.)
[ "$(zcat /usr/share/man/man1/siwa.1.gz | grep -cF -- 'domain\-association')" -gt 0 ] || fail "siwa(1) lacks setup's --domain-association"
# `man siwa` as an operator reads it: every section, no formatting warning, --version said once (not
# once per command), and every key of docs/CONFIGURATION.md's table under ENVIRONMENT.
MANUAL=$(MANWIDTH=100 LC_ALL=C.UTF-8 man --warnings -P cat siwa 2>"$E2E_TMP/man.log") || fail "man siwa: $(cat "$E2E_TMP/man.log")"
[ ! -s "$E2E_TMP/man.log" ] || fail "man siwa warns: $(cat "$E2E_TMP/man.log")"
for section in NAME SYNOPSIS DESCRIPTION OPTIONS COMMANDS EXAMPLES ENVIRONMENT FILES "EXIT STATUS" "SEE ALSO"; do
    grep -qx "$section" <<<"$MANUAL" || fail "man siwa has no $section section"
done
[ "$(grep -c -- '--version' <<<"$MANUAL")" -le 2 ] || fail "man siwa repeats --version: $(grep -c -- '--version' <<<"$MANUAL") times"
grep -q "^   siwa admin export$" <<<"$MANUAL" && grep -q "^           siwa admin export 42 -o user-42.json$" <<<"$MANUAL" \
    || fail "man siwa lacks the command siwa admin export or its example"
MANUAL_ENVIRONMENT=$(sed -n '/^ENVIRONMENT$/,/^FILES$/p' <<<"$MANUAL")
keys=0
for key in $(sed -n 's/^| `\(SIWA_[A-Z0-9_]*\)` |.*/\1/p' "$SIWA_ROOT/docs/CONFIGURATION.md"); do
    grep -qx "       $key" <<<"$MANUAL_ENVIRONMENT" || fail "man siwa's ENVIRONMENT lacks $key of docs/CONFIGURATION.md"
    keys=$((keys + 1))
done
[ "$keys" -gt 50 ] && [ "$(grep -c '^       SIWA_' <<<"$MANUAL_ENVIRONMENT")" = "$keys" ] \
    || fail "man siwa's ENVIRONMENT has $(grep -c '^       SIWA_' <<<"$MANUAL_ENVIRONMENT") keys, docs/CONFIGURATION.md $keys"
grep -q '^ExecStart=/usr/bin/siwa serve$' /lib/systemd/system/siwa.service || fail "siwa.service does not run /usr/bin/siwa serve"
for key in $(python3 - "$E2E_BIN" <<'PY'
import subprocess, sys
print(" ".join(l.split("=")[0].lstrip("#") for l in subprocess.run([sys.argv[1], "config", "--example"], capture_output=True, text=True).stdout.splitlines() if l.startswith("#SIWA_")))
PY
); do
    grep -q "^#$key=" /etc/siwa/siwa.env.example || fail "siwa.env.example lacks $key"
done
again=$(setup --domain-association "$DOMAIN_FILE" 2>&1) || fail "siwa setup again: $again"
[ "$(snapshot)" = "$KEYS_BEFORE" ] || fail "siwa setup again changed files: $again"
grep -q ": kept" <<<"$again" && ! grep -q ": written\|: copied\|key .* written\|added" <<<"$again" || fail "siwa setup again wrote: $again"
bad=$(siwa_with_env /usr/bin/siwa /dev/null setup --public-url http://x --team-id short --key-id KEYID00001 \
    --p8 /etc/hostname --bundle-ids com.example.siwa --domain-association /nonexistent </dev/null 2>&1) && fail "siwa setup accepted bad values"
for option in --team-id --p8 --public-url --domain-association; do grep -q -- "$option" <<<"$bad" || fail "the refusal lacks $option: $bad"; done
pass "siwa $VERSION: no Swift library (ldd), runs without the toolchain, /etc/siwa root:siwa 0750, units, man siwa with its sections and the $keys keys of CONFIGURATION.md, every key in siwa.env.example; setup again keeps everything, bad values are named"

curl_walkthrough "$E2E_TMP/walkthrough.sh"
[ "$(curl -ks -H 'Accept: text/html' -o /dev/null -w '%{http_code} %{content_type}' "$SITE_URL/no-such-page")" = "404 text/html" ] \
    || fail "the packaged site's 404 is not the styled page"
out=$(cd "$E2E_TMP" && SIWA=$SITE_URL APPLE=$E2E_APPLE_URL APPLE_ADMIN_SECRET_FILE=$E2E_APPLE_ADMIN_SECRET_FILE \
    bash "$E2E_TMP/walkthrough.sh" 2>&1) || fail "the walkthrough against the installed siwa: $out"
grep -q '"isNewUser":true' <<<"$out" && grep -q "delete: 204" <<<"$out" || fail "the walkthrough against the installed siwa: $out"
pass "the installed siwa behind the packaged site serves the curl walkthrough of docs/API.md and the styled 404"

# `sudo siwa …` as an operator types it: root, an environment with nothing of siwa's (sudo's own
# variables set as sudo sets them, for a person with no account here), in a directory only root can
# write. Doctor passes every check; the export is written where asked and given to that person.
as_sudo() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SUDO_USER=e2e-operator SUDO_UID=4242 SUDO_GID=4242 /usr/bin/siwa "$@"; }
report=$(as_sudo doctor --nginx-user root --public-ca-file "$SITE_TLS/ca.pem" 2>&1) || fail "sudo siwa doctor: $report"
for check in configuration database socket keys "apple keys" clock "client secret" "public URL" "domain association"; do
    grep -q "^ok    $check:" <<<"$report" || fail "sudo siwa doctor has no passing $check line: $report"
done
grep -q "^ok    domain association: .*serves /etc/siwa/apple-developer-domain-association.txt" <<<"$report" || fail "doctor's domain check: $report"
install -d -m 0700 "$E2E_TMP/operator"
out=$(cd "$E2E_TMP/operator" && as_sudo admin export "$USER_ID" -o user.json 2>&1) || fail "sudo siwa admin export: $out"
[ "$(stat -c '%u:%g %a' "$E2E_TMP/operator/user.json")" = "4242:4242 600" ] || fail "the export file: $(stat -c '%u:%g %a' "$E2E_TMP/operator/user.json")"
grep -q l-upgrade "$E2E_TMP/operator/user.json" || fail "the export lacks the user's lesson"
out=$(as_sudo admin export "$USER_ID" -o /nonexistent/user.json 2>&1) && fail "an export to a missing directory succeeded"
grep -q "cannot write /nonexistent/user.json: No such file or directory" <<<"$out" || fail "the failed export: $out"
out=$(as_sudo admin disable "$USER_ID" --reason "e2e package" 2>&1) || fail "sudo siwa admin disable: $out"
audit=$(as_sudo admin audit --user "$USER_ID" --json)
for action in admin_export admin_disable; do
    grep "\"type\":\"$action\"" <<<"$audit" | grep -q '"operator": *"e2e-operator (as root)"' \
        || fail "the audit event $action does not name the sudo user: $audit"
done
# A root shell without sudo and (here) without a login session: the export, by the user's email, is
# recorded naming root, not the siwa user the command switched to.
operator=root
login=$(cat /proc/self/loginuid 2>/dev/null || echo 4294967295)
if [ "$login" != 4294967295 ] && [ "$(id -nu "$login")" != root ]; then operator="$(id -nu "$login") (as root)"; fi
as_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/siwa "$@"; }
as_root admin export upgrade.e2e@example.com >/dev/null || fail "siwa admin export by email as root"
as_root admin audit --user upgrade.e2e@example.com --limit 1 | grep "admin_export" | grep -qF "{\"operator\":\"$operator\"}" \
    || fail "the export as root is not recorded naming $operator: $(as_root admin audit --user "$USER_ID" --limit 3)"
pass "sudo siwa doctor: $(grep -c '^ok' <<<"$report") checks pass, the domain file among them; sudo siwa admin export writes where asked (4242:4242, 0600) or names the path and cause; the audit log names the sudo user for the export and the disabling, and $operator for an export from a root shell without sudo"

# Apple's domain-association file replaced on this configured host by `siwa setup
# --domain-association` alone, as DEPLOYING.md shows it; after the restart its last line names, the
# site serves the new file.
NEW_DOMAIN_FILE=$E2E_TMP/new-domain-association.txt
echo "a-new-domain-association-file-from-apple $RANDOM" >"$NEW_DOMAIN_FILE"
out=$(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/siwa setup --domain-association "$NEW_DOMAIN_FILE" </dev/null 2>&1) \
    || fail "siwa setup --domain-association alone on the installed host: $out"
grep -q "apple-developer-domain-association.txt: copied from $NEW_DOMAIN_FILE" <<<"$out" && grep -q "^Then: systemctl restart siwa " <<<"$out" \
    || fail "siwa setup --domain-association alone said: $out"
[ "$(snapshot)" = "$KEYS_BEFORE" ] && [ "$(stat -c '%U:%G %a' /etc/siwa/apple-developer-domain-association.txt)" = "root:siwa 640" ] \
    || fail "siwa setup --domain-association alone changed other files, or the file's owner: $(snapshot)"
"$UNITS" restart siwa || fail "restarting siwa: $(tail -5 "$UNITS_STATE/siwa.log")"
wait_for_health 100
expect_status 200 "siwa after its restart"
request GET /.well-known/apple-developer-domain-association.txt
expect_status 200 "the new domain file"
[ "$BODY" = "$(cat "$NEW_DOMAIN_FILE")" ] || fail "the site serves $BODY, not the new domain file"
pass "siwa setup --domain-association alone on the installed host replaced the file (nothing else asked for or changed; then: restart siwa); after the restart nginx serves the new file"

TOOLS=$(python_tools sslyze)
scan=$("$TOOLS/sslyze" --mozilla_config=intermediate --certinfo_ca_file "$SITE_TLS/ca.pem" "localhost:$SITE_PORT" 2>&1) \
    || fail "sslyze against the site: $(tail -25 <<<"$scan")"
grep -q "localhost:$SITE_PORT: OK - Compliant" <<<"$scan" || fail "sslyze: $(grep -A20 'COMPLIANCE AGAINST MOZILLA' <<<"$scan")"
pass "sslyze 6.3.1: the packaged site's TLS is compliant with Mozilla's intermediate configuration"

# --- 4. Removal.
USERS_BEFORE=$(db "SELECT COUNT(*) FROM users")
: >"$UNITS_STATE/calls"
with_units dpkg -r siwa >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg -r: $(cat "$E2E_TMP/dpkg.log")"
grep -q "stop siwa-jobs" "$UNITS_STATE/calls" && grep -q "stop siwa$" "$UNITS_STATE/calls" || fail "dpkg -r did not stop the units"
nginx -t -q 2>"$E2E_TMP/nginx-t.log" || fail "nginx -t after dpkg -r: $(cat "$E2E_TMP/nginx-t.log")"
[ ! -e /etc/nginx/sites-enabled/siwa.conf ] && [ -f /etc/nginx/sites-available/siwa.conf ] || fail "the site after dpkg -r"
grep -q "disabled the nginx configuration .*sites-enabled/siwa.conf" "$E2E_TMP/dpkg.log" || fail "dpkg -r did not say it disabled the site"
[ "$(db 'SELECT COUNT(*) FROM users')" = "$USERS_BEFORE" ] || fail "dpkg -r changed the database"
[ -f /etc/siwa/siwa.env ] && [ -f /etc/siwa/apple-developer-domain-association.txt ] || fail "dpkg -r removed the configuration"
# It says what stays of the database, and how to drop it (run at the end, as printed).
DROP_DATABASE=$(sed -n "s/^siwa: the database siwa_package and its MariaDB account 'siwa_package'@'localhost' stay; to drop them: //p" "$E2E_TMP/dpkg.log")
[ -n "$DROP_DATABASE" ] || fail "dpkg -r did not say that the database and its account stay: $(cat "$E2E_TMP/dpkg.log")"
rm -rf $SETUP_FILES
dpkg --purge siwa >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg --purge: $(cat "$E2E_TMP/dpkg.log")"
nginx -t -q 2>"$E2E_TMP/nginx-t.log" || fail "nginx -t after dpkg --purge: $(cat "$E2E_TMP/nginx-t.log")"
[ ! -e /etc/siwa ] && [ ! -e /var/lib/siwa ] && [ ! -e /usr/bin/siwa ] || fail "purging left /etc/siwa, /var/lib/siwa or /usr/bin/siwa"
getent passwd siwa >/dev/null && fail "purging left the siwa user"
[ "$(db 'SELECT COUNT(*) FROM users')" = "$USERS_BEFORE" ] || fail "the purge touched the database"
grep -q "^siwa: the database .* stay; to drop them: mariadb -e" "$E2E_TMP/dpkg.log" || fail "dpkg --purge did not say what stays: $(cat "$E2E_TMP/dpkg.log")"
# The statements dpkg -r printed, run as printed (mariadb as root, on the test's server).
out=$(bash -c "mariadb() { command mariadb --no-defaults --socket='$E2E_TMP/db/mysql.sock' -uroot \"\$@\"; }; $DROP_DATABASE" 2>&1) \
    || fail "the statements dpkg -r printed: $DROP_DATABASE: $out"
[ -z "$(mariadb --no-defaults --socket="$E2E_TMP/db/mysql.sock" -uroot -N -B -e "SHOW DATABASES LIKE 'siwa\_package'; SELECT user FROM mysql.user WHERE user = 'siwa_package'")" ] \
    || fail "the database or its account is left after the printed statements"
pass "dpkg -r stops the units and disables the site (nginx -t passes, the database and /etc/siwa stay, and it says how to drop the database and its account); dpkg --purge removes the rest (nginx -t passes, the database stays); the printed statements drop both"

# A fresh install of this package on a host without siwa: its home exists before the user, so adduser
# warns of nothing; it says what to run next; purging it leaves nothing.
dpkg -i "$DEB" >"$E2E_TMP/dpkg.log" 2>&1 || fail "a fresh dpkg -i: $(cat "$E2E_TMP/dpkg.log")"
grep -qi "warn\|can't be accessed" "$E2E_TMP/dpkg.log" && fail "a fresh install warns: $(cat "$E2E_TMP/dpkg.log")"
grep -q "next, run 'siwa setup'" "$E2E_TMP/dpkg.log" || fail "a fresh install did not say what to run next: $(cat "$E2E_TMP/dpkg.log")"
[ "$(stat -c '%U:%G %a' /var/lib/siwa)" = "siwa:siwa 750" ] && [ "$(getent passwd siwa | cut -d: -f6)" = /var/lib/siwa ] \
    || fail "a fresh install's home: $(stat -c '%U:%G %a' /var/lib/siwa), $(getent passwd siwa)"
dpkg --purge siwa >"$E2E_TMP/dpkg.log" 2>&1 || fail "purging the fresh install: $(cat "$E2E_TMP/dpkg.log")"
[ ! -e /etc/siwa ] && [ ! -e /var/lib/siwa ] && ! getent passwd siwa >/dev/null || fail "purging the fresh install left something"
pass "a fresh dpkg -i of $VERSION: no warning (the home /var/lib/siwa before the user), the next step said; purging it leaves nothing"

# The Apple ID emulator's package, as docs/EMULATOR.md ("Getting it") installs it: its binary runs
# without the toolchain, its unit runs the command of "Starting it" for EMULATOR=/var/lib/appleid-emulator
# as www-data (21_apple_emulator runs that page's steps themselves), its manual page; purging it
# leaves nothing.
EMULATOR_DEB=$(dirname "$DEB")/siwa-appleid-emulator_${VERSION}_amd64.deb
[ -f "$EMULATOR_DEB" ] || fail "scripts/package built no $(basename "$EMULATOR_DEB") next to $(basename "$DEB")"
grep -qF "apt install ./$(basename "$EMULATOR_DEB")" "$SIWA_ROOT/docs/EMULATOR.md" || fail "docs/EMULATOR.md does not install $(basename "$EMULATOR_DEB")"
dpkg -i "$EMULATOR_DEB" >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg -i of the emulator's package: $(cat "$E2E_TMP/dpkg.log")"
ldd /usr/bin/appleid-emulator | grep -i swift && fail "the packaged emulator links a Swift library"
install -d -m 0700 "$E2E_TMP/emulator-key"
out=$(env -i PATH=/usr/bin:/bin appleid-emulator make-key --key-id KEYID00001 --dir "$E2E_TMP/emulator-key" 2>&1) \
    && head -1 "$E2E_TMP/emulator-key/AuthKey_KEYID00001.p8" | grep -q "BEGIN PRIVATE KEY" || fail "the packaged appleid-emulator make-key: $out"
documented=$(python3 - "$SIWA_ROOT/docs/EMULATOR.md" <<'PY'
import re, sys
section = open(sys.argv[1]).read().split("## Running it outside scripts/run", 1)[1]
blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
directory = re.search(r'^EMULATOR=(\S+)', blocks[0], re.M).group(1)
command = blocks[1].strip().replace('"$EMULATOR', directory).replace('"', "")
print(command.split(" -- ", 1)[1])
PY
)
unit=/lib/systemd/system/appleid-emulator.service
[ "ExecStart=/usr/bin/$documented" = "$(grep '^ExecStart=' "$unit")" ] && grep -qx 'User=www-data' "$unit" \
    || fail "the emulator's unit does not run the documented command ($documented) as www-data: $(grep '^ExecStart=\|^User=' "$unit")"
EMULATOR_MANUAL=$(MANWIDTH=100 man --warnings -P cat appleid-emulator 2>&1) || fail "man appleid-emulator: $EMULATOR_MANUAL"
grep -qx COMMANDS <<<"$EMULATOR_MANUAL" && grep -q "^   appleid-emulator make-key$" <<<"$EMULATOR_MANUAL" && ! grep -q warning <<<"$EMULATOR_MANUAL" \
    || fail "man appleid-emulator: $EMULATOR_MANUAL"
dpkg --purge siwa-appleid-emulator >"$E2E_TMP/dpkg.log" 2>&1 || fail "purging the emulator's package: $(cat "$E2E_TMP/dpkg.log")"
[ ! -e /usr/bin/appleid-emulator ] && [ ! -e "$unit" ] || fail "purging the emulator's package left its files"
pass "$(basename "$EMULATOR_DEB"): appleid-emulator runs without the toolchain (make-key), its unit runs EMULATOR.md's command ($documented) as www-data, man appleid-emulator; purged, nothing is left"
