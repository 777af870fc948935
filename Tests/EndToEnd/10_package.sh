#!/usr/bin/env bash
# The Debian package (scripts/package): lintian reports no error; the packaged binary links no Swift
# library and runs with the toolchain out of PATH and LD_LIBRARY_PATH; installing it with dpkg -i
# creates the siwa user, /etc/siwa (root:siwa 0750) and /var/lib/siwa, the units, the nginx files and
# an example configuration naming every key, which `siwa config` accepts once the required keys
# are set; the installed binary, run as the siwa user the way the unit runs it, reads a
# configuration in /etc/siwa and reaches the database; purging removes what the package made.
# Needs root (dpkg -i); runs after 09_sigterm, on no server of the stack.
set -euo pipefail
. "$(dirname "$0")/assert.sh"

[ "$(id -u)" -eq 0 ] || { echo "  skipped: installing a package needs root"; exit 0; }
if dpkg-query -W -f='${Status}' siwa 2>/dev/null | grep -q 'install ok installed'; then
    fail "a siwa package is already installed on this machine; not touching it"
fi
DEB=$(bash "$(dirname "$0")/../../scripts/package" "$E2E_TMP/package" 2>"$E2E_TMP/package.log" | tail -1) \
    || fail "scripts/package: $(tail -20 "$E2E_TMP/package.log")"
[ -f "$DEB" ] || fail "no package was built: $(tail -5 "$E2E_TMP/package.log")"
pass "scripts/package built $(basename "$DEB") ($(du -h "$DEB" | cut -f1)); lintian: no error ($(grep -c '^W: ' "$E2E_TMP/package.log" || true) warnings)"

cleanup() { dpkg --purge siwa >/dev/null 2>&1 || true; }
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

# The way the unit runs it: as siwa, with the configuration of /etc/siwa, from /usr/share/siwa.
. "$(dirname "$0")/apple_helpers.sh"
install -o root -g siwa -m 0640 "$E2E_TMP/db_password" /etc/siwa/db_password
{
    grep -E '^SIWA_DB_(SOCKET|NAME|USER)=' "$E2E_ENV"
    echo "SIWA_DB_PASSWORD_FILE=/etc/siwa/db_password"
} >/etc/siwa/siwa.env
chmod 0640 /etc/siwa/siwa.env
chgrp siwa /etc/siwa/siwa.env
chmod o+x "$E2E_TMP" "$E2E_TMP/db" 2>/dev/null || true
status=$(cd /usr/share/siwa && runuser -u siwa -- env -i PATH=/usr/bin:/bin sh -c 'set -a; . /etc/siwa/siwa.env; set +a; exec /usr/bin/siwa migrate --status' 2>&1) \
    || fail "siwa migrate --status as the siwa user: $status"
grep -q "0010_session_revocations.sql" <<<"$status" || fail "siwa migrate --status: $status"
pass "run as the siwa user from /etc/siwa/siwa.env in /usr/share/siwa (as the unit does): it reads its configuration and reaches MariaDB"

rm -f /etc/siwa/siwa.env /etc/siwa/db_password
dpkg --purge siwa >"$E2E_TMP/dpkg.log" 2>&1 || fail "dpkg --purge: $(cat "$E2E_TMP/dpkg.log")"
trap - EXIT
[ ! -e /etc/siwa ] && [ ! -e /var/lib/siwa ] && [ ! -e /usr/bin/siwa ] || fail "purging left /etc/siwa, /var/lib/siwa or /usr/bin/siwa"
getent passwd siwa >/dev/null && fail "purging left the siwa user"
[ "$(sql "SELECT COUNT(*) FROM schema_migrations")" -ge 10 ] || fail "the database was touched by the purge"
pass "dpkg --purge removes the files, /etc/siwa, /var/lib/siwa and the siwa user; the database stays"
